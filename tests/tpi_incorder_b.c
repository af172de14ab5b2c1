/* SPDX-License-Identifier: MIT */
/*
 * tpi_incorder_b.c -- the C library's socket headers first, then the
 * transport headers, in the other order among themselves too.  Built with
 * -Werror: a redefinition fails the build of test_tpi_headers.  See
 * tpi_incorder.h.
 */
#ifdef TPI_STRICT
#undef _GNU_SOURCE
#define _XOPEN_SOURCE 500
#endif

#include <sys/socket.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <sys/timod.h>
#include <sys/tiuser.h>
#include <xti_inet.h>
#include <xti.h>
#include <sys/tihdr.h>

#include "tpi_incorder.h"

void TPI_CAT(tpi_seen_b, TPI_MODE)(struct tpi_seen *s)
{
    TPI_SEEN_BODY(s);
}
