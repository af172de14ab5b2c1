/* SPDX-License-Identifier: MIT */
/*
 * inet_addr.c -- helpers shared by the providers over kernel sockets (udp.c,
 * tcp.c): the form of an Internet address in a TPI netbuf, and the TPI error
 * of a failed bind(2).  Contracts in inet_io.h.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/tihdr.h>

#include "inet_io.h"

int inet_addr_family(const unsigned char *p, size_t len)
{
    sa_family_t f;

    if (len < sizeof(f))
        return 0;
    memcpy(&f, p, sizeof(f));
    if (f == AF_INET && len == sizeof(struct sockaddr_in))
        return AF_INET;
    if (f == AF_INET6 && len == sizeof(struct sockaddr_in6))
        return AF_INET6;
    return 0;
}

long inet_bind_error(int err)
{
    switch (err) {
    case EADDRINUSE:
        return TADDRBUSY;
    case EACCES:
    case EPERM:
        return TACCES;
    case EADDRNOTAVAIL:
    case EAFNOSUPPORT:
    case EINVAL:
        return TBADADDR;
    default:
        return TSYSERR;
    }
}
