/* SPDX-License-Identifier: MIT */
/*
 * tpi_incorder.h -- what test_tpi_headers' include-order translation units
 * (tpi_incorder_a.c, tpi_incorder_b.c) report: the values of the names that
 * <xti.h>, <sys/tihdr.h> and the C library's <netinet/in.h>,
 * <netinet/tcp.h> share, as each unit saw them after its own include order.
 *
 * CMakeLists.txt compiles both units twice with -Wall -Wextra
 * -Wsystem-headers -Werror: once as the tests are (_GNU_SOURCE), once with
 * TPI_STRICT (an XNS Issue 5 program: _XOPEN_SOURCE 500 only).  TPI_MODE
 * names the build (gnu, xns5) and so the functions.  -Wsystem-headers makes
 * the compiler report a macro of ours that the C library redefines after us.
 */
#ifndef TPI_INCORDER_H
#define TPI_INCORDER_H

struct tpi_seen {
    long ip_options, ip_tos, ip_ttl, ip_reuseaddr, tcp_nodelay, tcp_maxseg, tcp_keepalive;
    long t_more, t_expedited, t_negotiate, t_success, t_notsupport, t_infinite, t_invalid;
    long t_cots_ord, tbadaddr, tsyserr, tproto, t_data, t_unbnd, t_opthdr_size;
    long ti_getinfo, t_info_ack_size;
};

#define TPI_CAT2(a, b) a##_##b
#define TPI_CAT(a, b) TPI_CAT2(a, b)

/* tpi_seen_{a,b}_{gnu,xns5} */
void tpi_seen_a_gnu(struct tpi_seen *s);
void tpi_seen_b_gnu(struct tpi_seen *s);
void tpi_seen_a_xns5(struct tpi_seen *s);
void tpi_seen_b_xns5(struct tpi_seen *s);

/* The body both units share, expanded after their includes. */
#define TPI_SEEN_BODY(s)                                                                           \
    do {                                                                                           \
        (s)->ip_options = IP_OPTIONS;                                                              \
        (s)->ip_tos = IP_TOS;                                                                      \
        (s)->ip_ttl = IP_TTL;                                                                      \
        (s)->ip_reuseaddr = IP_REUSEADDR;                                                          \
        (s)->tcp_nodelay = TCP_NODELAY;                                                            \
        (s)->tcp_maxseg = TCP_MAXSEG;                                                              \
        (s)->tcp_keepalive = TCP_KEEPALIVE;                                                        \
        (s)->t_more = T_MORE;                                                                      \
        (s)->t_expedited = T_EXPEDITED;                                                            \
        (s)->t_negotiate = T_NEGOTIATE;                                                            \
        (s)->t_success = T_SUCCESS;                                                                \
        (s)->t_notsupport = T_NOTSUPPORT;                                                          \
        (s)->t_infinite = T_INFINITE;                                                              \
        (s)->t_invalid = T_INVALID;                                                                \
        (s)->t_cots_ord = T_COTS_ORD;                                                              \
        (s)->tbadaddr = TBADADDR;                                                                  \
        (s)->tsyserr = TSYSERR;                                                                    \
        (s)->tproto = TPROTO;                                                                      \
        (s)->t_data = T_DATA;                                                                      \
        (s)->t_unbnd = T_UNBND;                                                                    \
        (s)->t_opthdr_size = (long)sizeof(struct t_opthdr);                                        \
        (s)->ti_getinfo = TI_GETINFO;                                                              \
        (s)->t_info_ack_size = (long)sizeof(struct T_info_ack);                                    \
    } while (0)

#endif /* TPI_INCORDER_H */
