/* SPDX-License-Identifier: MIT */
/*
 * inet_opt.c -- the form of a scalar option value, shared by the option
 * management of the providers over kernel sockets (udp_opt.c, tcp_opt.c):
 * XNS gives 1 byte (unsigned char) or 4 (t_uscalar_t), and XTI programs in
 * the field (netperf among them) write a long.  Contracts in inet_io.h.
 */
#include <string.h>
#include <sys/tihdr.h>

#include "inet_io.h"

int inet_optval_get(const unsigned char *vp, size_t vlen, long *v)
{
    if (vlen == 1) {
        *v = vp[0];
    } else if (vlen == sizeof(t_uscalar_t)) {
        t_uscalar_t u;
        memcpy(&u, vp, sizeof(u));
        *v = (long)u;
    } else if (vlen == sizeof(long)) {
        memcpy(v, vp, sizeof(*v));
    } else {
        return -1;
    }
    return 0;
}

void inet_optval_put(unsigned char *out, long v, size_t vlen)
{
    if (vlen == 1) {
        out[0] = (unsigned char)v;
    } else if (vlen == sizeof(t_uscalar_t)) {
        t_uscalar_t u = (t_uscalar_t)v;
        memcpy(out, &u, sizeof(u));
    } else {
        memcpy(out, &v, sizeof(v));
    }
}
