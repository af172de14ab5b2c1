/* SPDX-License-Identifier: MIT */
/*
 * inet_opt.c -- the form of a scalar option value, shared by the option
 * management of the providers over kernel sockets (udp_opt.c, tcp_opt.c):
 * XNS gives 1 byte (unsigned char) or 4 (t_uscalar_t), and XTI programs in
 * the field (netperf among them) write a long; and whether the kernel's
 * SO_SNDLOWAT is read-only.
 * Contracts in inet_io.h.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/tihdr.h>
#include <unistd.h>
#include <xti.h>

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

static int inet_sndlowat_ro;
static pthread_once_t inet_sndlowat_once = PTHREAD_ONCE_INIT;

/* Try to set SO_SNDLOWAT to the value it has: refused means read-only. */
static void inet_sndlowat_probe(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int v = 1;
    socklen_t len = sizeof(v);

    if (fd < 0)
        return;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDLOWAT, &v, &len) == 0 &&
        setsockopt(fd, SOL_SOCKET, SO_SNDLOWAT, &v, sizeof(v)) < 0 && errno == ENOPROTOOPT)
        inet_sndlowat_ro = 1;
    close(fd);
}

int inet_sndlowat_readonly(void)
{
    pthread_once(&inet_sndlowat_once, inet_sndlowat_probe);
    return inet_sndlowat_ro;
}
