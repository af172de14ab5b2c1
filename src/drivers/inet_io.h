/* SPDX-License-Identifier: MIT */
/*
 * inet_io.h -- private to the providers over kernel sockets (udp.c, tcp.c,
 * rawip.c): their epoll thread is the executive's (src/core/io_watch.h);
 * here, the address and option helpers they share.
 */
#ifndef UST_INET_IO_H
#define UST_INET_IO_H

#include <stddef.h>

#include "io_watch.h"

/* --- inet_addr.c: addresses, shared by the providers over kernel sockets --- */

/* The family of an address of len bytes at p (AF_INET, AF_INET6), or 0 if it
 * is not a struct sockaddr_in / sockaddr_in6 of exactly that length (the XTI
 * Internet appendix's netbuf). */
int inet_addr_family(const unsigned char *p, size_t len);

/* The TPI error of a failed bind(2) with errno err: EADDRINUSE TADDRBUSY,
 * EACCES/EPERM TACCES, EADDRNOTAVAIL/EAFNOSUPPORT/EINVAL TBADADDR, else
 * TSYSERR (the caller passes err as UNIX_error). */
long inet_bind_error(int err);

/* --- inet_opt.c: scalar option values of udp_opt.c and tcp_opt.c --- */

/* The value of vlen bytes at vp -- 1 (unsigned char), 4 (t_uscalar_t) or
 * sizeof(long) -- into *v; 0, or -1 for any other length (TBADOPT). */
int inet_optval_get(const unsigned char *vp, size_t vlen, long *v);
/* v written in vlen bytes (1, 4 or sizeof(long)) at out. */
void inet_optval_put(unsigned char *out, long v, size_t vlen);
/* Whether this kernel's SO_SNDLOWAT is read-only (Linux: setsockopt fails
 * ENOPROTOOPT): probed once on a scratch socket, then cached.  Thread-safe. */
int inet_sndlowat_readonly(void);

#endif /* UST_INET_IO_H */
