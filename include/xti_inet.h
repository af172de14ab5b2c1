/* SPDX-License-Identifier: MIT */
/*
 * xti_inet.h -- XTI options of the Internet protocols (XNS Issue 5): the
 * levels INET_IP, INET_TCP and INET_UDP and the names of their options, used
 * in struct t_opthdr with t_optmgmt and the option buffers of the other t_*
 * calls.  <xti.h> includes this header.
 *
 * Names shared with the C library.  IP_OPTIONS, IP_TOS, IP_TTL (from
 * <netinet/in.h>) and TCP_NODELAY, TCP_MAXSEG (from <netinet/tcp.h>) are
 * also socket option names, and programs commonly include those headers
 * together with <xti.h>.  The C library defines them without a guard, and
 * its IP_* values differ from XNS's, so a definition here would clash with
 * it whichever header came second.  This header therefore includes both C
 * library headers first and defines the shared names only where the C
 * library did not: with glibc (and musl) the five names ALWAYS have the
 * Linux values (IP_TOS 1, IP_TTL 2, IP_OPTIONS 4, TCP_NODELAY 1,
 * TCP_MAXSEG 2), whatever the include order, and a level/name pair always
 * means one option.  The fallbacks below are those same Linux values.
 *
 * XTI-only names take values that are not Linux option names at their level,
 * so a provider can tell them apart from native socket options:
 * IP_REUSEADDR, IP_DONTROUTE, IP_BROADCAST use Solaris' 0x104..0x106 (XNS's
 * 0x4 is Linux's IP_OPTIONS).  TCP_KEEPALIVE keeps the XNS and Solaris
 * value 0x8, which is Linux's TCP_LINGER2: at INET_TCP a provider reads 0x8
 * as TCP_KEEPALIVE.  The udp and tcp providers map these level/name pairs
 * onto setsockopt.
 */
#ifndef _XTI_INET_H
#define _XTI_INET_H

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/tpicommon.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- protocol levels (t_opthdr.level): the IP protocol numbers ---- */
#define INET_IP 0x0   /* IP */
#define INET_TCP 0x6  /* TCP */
#define INET_UDP 0x11 /* UDP */

/* ---- INET_TCP options ---- */
#ifndef TCP_NODELAY
#define TCP_NODELAY 1 /* send without waiting to coalesce: t_uscalar_t T_YES/T_NO */
#endif
#ifndef TCP_MAXSEG
#define TCP_MAXSEG 2 /* largest segment (read-only): t_uscalar_t */
#endif
#define TCP_KEEPALIVE 0x8 /* probe idle connections: struct t_kpalive */

/* The value of TCP_KEEPALIVE. */
struct t_kpalive {
    t_scalar_t kp_onoff;   /* T_YES, T_NO, or T_GARBAGE */
    t_scalar_t kp_timeout; /* minutes between probes, or T_UNSPEC */
};

#define T_GARBAGE 0x02 /* kp_onoff: probes carry a garbage byte */

/* ---- INET_UDP options ---- */
#define UDP_CHECKSUM 0x0600 /* compute and check checksums: t_uscalar_t T_YES/T_NO */

/* ---- INET_IP options ---- */
#ifndef IP_OPTIONS
#define IP_OPTIONS 4 /* IP header options: bytes */
#endif
#ifndef IP_TOS
#define IP_TOS 1 /* type of service: unsigned char, see SET_TOS */
#endif
#ifndef IP_TTL
#define IP_TTL 2 /* time to live: unsigned char */
#endif
#define IP_REUSEADDR 0x104 /* allow local address reuse: unsigned int T_YES/T_NO */
#define IP_DONTROUTE 0x105 /* bypass routing, use the interface: unsigned int T_YES/T_NO */
#define IP_BROADCAST 0x106 /* permit broadcast datagrams: unsigned int T_YES/T_NO */

/* IP_TOS precedence (the top three bits) */
#define T_ROUTINE 0
#define T_PRIORITY 1
#define T_IMMEDIATE 2
#define T_FLASH 3
#define T_OVERRIDEFLASH 4
#define T_CRITIC_ECP 5
#define T_INETCONTROL 6
#define T_NETCONTROL 7

/* IP_TOS type-of-service bits */
#define T_NOTOS 0x00
#define T_LDELAY (1 << 4)  /* low delay */
#define T_HITHRPT (1 << 3) /* high throughput */
#define T_HIREL (1 << 2)   /* high reliability */
#define T_LOCOST (1 << 1)  /* low cost */

/* The IP_TOS value of precedence prec with type-of-service bits tos. */
#define SET_TOS(prec, tos) ((0x7 & (prec)) << 5 | (0x1e & (tos)))

#ifdef __cplusplus
}
#endif

#endif /* _XTI_INET_H */
