/* SPDX-License-Identifier: MIT */
/*
 * tpi_incorder_a.c -- the transport headers first, then the C library's
 * socket headers (which define IP_OPTIONS, IP_TOS, IP_TTL, TCP_NODELAY and
 * TCP_MAXSEG without a guard).  Built with -Werror: a redefinition fails the
 * build of test_tpi_headers.  See tpi_incorder.h.
 */
#ifdef TPI_STRICT
#undef _GNU_SOURCE
#define _XOPEN_SOURCE 500
#endif

#include <sys/tihdr.h>
#include <xti.h>
#include <tiuser.h>
#include <sys/timod.h>
#include <xti_inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "tpi_incorder.h"

void TPI_CAT(tpi_seen_a, TPI_MODE)(struct tpi_seen *s)
{
    TPI_SEEN_BODY(s);
}
