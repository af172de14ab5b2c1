/* SPDX-License-Identifier: MIT */
/*
 * test_tpi_headers.c -- the public transport headers: <sys/tihdr.h> (TPI),
 * <xti.h> and <xti_inet.h> (XNS Issue 5), <tiuser.h> (TLI), <sys/timod.h>.
 *
 *   1. values: primitive numbers, states, errors, flags, events, options,
 *      ioctl commands (compile time);
 *   2. layouts: every TPI primitive is t_scalar_t-sized fields in the
 *      standard order, XTI structures in XNS order (compile time);
 *   3. the option walkers T_OPT_FIRSTHDR/T_OPT_NEXTHDR/T_OPT_DATA and
 *      _TPI_TOPT_NEXTHDR/_TPI_TOPT_DATA/_TPI_TOPT_VALID over buffers of
 *      several options, with truncated and malformed ones;
 *   4. include order: tpi_incorder_a.c and tpi_incorder_b.c include these
 *      headers and the C library's <netinet/in.h>, <netinet/tcp.h> in
 *      opposite orders, each built warning-free under -Werror both with
 *      _GNU_SOURCE and as a strict XNS5 program; here their views must agree
 *      with each other and with this unit's.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sys/tihdr.h>
#include <sys/timod.h>
#include <tiuser.h>
#include <xti.h>

#include "check.h"
#include "tpi_incorder.h"

/* ---- 1. values ---- */

#define SA(cond) _Static_assert(cond, #cond)

SA(sizeof(t_scalar_t) == 4 && sizeof(t_uscalar_t) == 4);
SA((t_scalar_t)-1 < 0 && (t_uscalar_t)-1 > 0);

/* TPI primitives */
SA(T_CONN_REQ == 0 && T_CONN_RES == 1 && T_DISCON_REQ == 2 && T_DATA_REQ == 3);
SA(T_EXDATA_REQ == 4 && T_INFO_REQ == 5 && T_BIND_REQ == 6 && T_UNBIND_REQ == 7);
SA(T_UNITDATA_REQ == 8 && T_OPTMGMT_REQ == 9 && T_ORDREL_REQ == 10);
SA(T_CONN_IND == 11 && T_CONN_CON == 12 && T_DISCON_IND == 13 && T_DATA_IND == 14);
SA(T_EXDATA_IND == 15 && T_INFO_ACK == 16 && T_BIND_ACK == 17 && T_ERROR_ACK == 18);
SA(T_OK_ACK == 19 && T_UNITDATA_IND == 20 && T_UDERROR_IND == 21 && T_OPTMGMT_ACK == 22);
SA(T_ORDREL_IND == 23 && T_OPTDATA_REQ == 24 && T_ADDR_REQ == 25);
SA(T_OPTDATA_IND == 26 && T_ADDR_ACK == 27);
SA(T_CAPABILITY_REQ == 28 && T_CAPABILITY_ACK == 29);

/* TPI states */
SA(TS_UNBND == 0 && TS_WACK_BREQ == 1 && TS_WACK_UREQ == 2 && TS_IDLE == 3);
SA(TS_WACK_OPTREQ == 4 && TS_WACK_CREQ == 5 && TS_WCON_CREQ == 6 && TS_WRES_CIND == 7);
SA(TS_WACK_CRES == 8 && TS_DATA_XFER == 9 && TS_WIND_ORDREL == 10 && TS_WREQ_ORDREL == 11);
SA(TS_WACK_DREQ6 == 12 && TS_WACK_DREQ7 == 13 && TS_WACK_DREQ9 == 14);
SA(TS_WACK_DREQ10 == 15 && TS_WACK_DREQ11 == 16 && TS_NOSTATES == 17);

SA(SENDZERO == 0x001 && EXPINLINE == 0x002 && XPG4_1 == 0x004);
SA(T_ODF_MORE == 0x001 && T_ODF_EX == 0x002);
SA(TC1_INFO == 1u && TC1_ACCEPTOR_ID == 2u && TC1_CAP_BITS2 == 0x80000000u);

/* errors (XNS5 order), shared by TPI, XTI and TLI */
SA(TBADADDR == 1 && TBADOPT == 2 && TACCES == 3 && TBADF == 4 && TNOADDR == 5);
SA(TOUTSTATE == 6 && TBADSEQ == 7 && TSYSERR == 8 && TLOOK == 9 && TBADDATA == 10);
SA(TBUFOVFLW == 11 && TFLOW == 12 && TNODATA == 13 && TNODIS == 14 && TNOUDERR == 15);
SA(TBADFLAG == 16 && TNOREL == 17 && TNOTSUPPORT == 18 && TSTATECHNG == 19);
SA(TNOSTRUCTYPE == 20 && TBADNAME == 21 && TBADQLEN == 22 && TADDRBUSY == 23);
SA(TINDOUT == 24 && TPROVMISMATCH == 25 && TRESQLEN == 26 && TRESADDR == 27);
SA(TQFULL == 28 && TPROTO == 29);

/* service types, sizes, flags */
SA(T_COTS == 1 && T_COTS_ORD == 2 && T_CLTS == 3);
SA(T_INFINITE == -1 && T_INVALID == -2);
SA(T_MORE == 0x001 && T_EXPEDITED == 0x002 && T_PUSH == 0x004);
SA(T_NEGOTIATE == 0x004 && T_CHECK == 0x008 && T_DEFAULT == 0x010 && T_SUCCESS == 0x020);
SA(T_FAILURE == 0x040 && T_CURRENT == 0x080 && T_PARTSUCCESS == 0x100);
SA(T_READONLY == 0x200 && T_NOTSUPPORT == 0x400);

/* XTI events, states, t_alloc, t_info.flags */
SA(T_LISTEN == 0x0001 && T_CONNECT == 0x0002 && T_DATA == 0x0004 && T_EXDATA == 0x0008);
SA(T_DISCONNECT == 0x0010 && T_UDERR == 0x0040 && T_ORDREL == 0x0080);
SA(T_GODATA == 0x0100 && T_GOEXDATA == 0x0200);
SA(T_ERROR == 0x0020 && T_EVENTS == 0x00ff); /* TLI */
SA(T_UNINIT == 0 && T_UNBND == 1 && T_IDLE == 2 && T_OUTCON == 3 && T_INCON == 4);
SA(T_DATAXFER == 5 && T_OUTREL == 6 && T_INREL == 7);
SA(T_BIND == 1 && T_OPTMGMT == 2 && T_CALL == 3 && T_DIS == 4 && T_UNITDATA == 5);
SA(T_UDERROR == 6 && T_INFO == 7);
SA(T_ADDR == 0x01 && T_OPT == 0x02 && T_UDATA == 0x04 && T_ALL == 0xffff);
SA(T_SENDZERO == 0x001 && T_ORDRELDATA == 0x002);

/* XTI options */
SA(T_YES == 1 && T_NO == 0 && T_UNUSED == -1 && T_NULL == 0 && T_ABSREQ == 0x8000);
SA(T_UNSPEC == -3 && T_ALLOPT == 0);
SA(XTI_GENERIC == 0xffff && XTI_DEBUG == 0x0001 && XTI_LINGER == 0x0080);
SA(XTI_SNDBUF == 0x1001 && XTI_RCVBUF == 0x1002 && XTI_SNDLOWAT == 0x1003);
SA(XTI_RCVLOWAT == 0x1004 && T_IOV_MAX == 16);

/* INET: levels are IP protocol numbers; names glibc also defines have its values */
SA(INET_IP == 0 && INET_TCP == 6 && INET_UDP == 17);
SA(INET_IP == IPPROTO_IP && INET_TCP == IPPROTO_TCP && INET_UDP == IPPROTO_UDP);
SA(TCP_NODELAY == 1 && TCP_MAXSEG == 2 && TCP_KEEPALIVE == 0x8 && T_GARBAGE == 0x02);
SA(UDP_CHECKSUM == 0x0600);
SA(IP_TOS == 1 && IP_TTL == 2 && IP_OPTIONS == 4); /* Linux values, whatever the order */
SA(IP_REUSEADDR == 0x104 && IP_DONTROUTE == 0x105 && IP_BROADCAST == 0x106);
/* the XTI-only INET_IP names are no Linux IP option: a provider can tell them apart */
SA(IP_REUSEADDR != IP_OPTIONS && IP_REUSEADDR != IP_TOS && IP_REUSEADDR != IP_TTL);
SA(IP_DONTROUTE != IP_MULTICAST_IF && IP_BROADCAST != IP_MULTICAST_IF);
SA(T_ROUTINE == 0 && T_PRIORITY == 1 && T_IMMEDIATE == 2 && T_FLASH == 3);
SA(T_OVERRIDEFLASH == 4 && T_CRITIC_ECP == 5 && T_INETCONTROL == 6 && T_NETCONTROL == 7);
SA(T_NOTOS == 0 && T_LDELAY == 0x10 && T_HITHRPT == 0x08 && T_HIREL == 0x04);
SA(T_LOCOST == 0x02);
SA(SET_TOS(T_FLASH, T_LDELAY | T_LOCOST) == 0x72);
SA(SET_TOS(T_NETCONTROL, 0xff) == 0xfe); /* no bit outside precedence and TOS */

/* timod */
SA(TIMOD == 0x5400 && TI_GETINFO == (('T' << 8) | 140) && TI_OPTMGMT == (('T' << 8) | 141));
SA(TI_BIND == (('T' << 8) | 142) && TI_UNBIND == (('T' << 8) | 143));
SA(TI_GETMYNAME == (('T' << 8) | 144) && TI_GETPEERNAME == (('T' << 8) | 145));
SA(TI_SETMYNAME == (('T' << 8) | 146) && TI_SETPEERNAME == (('T' << 8) | 147));
SA(TI_SYNC == (('T' << 8) | 148) && TI_GETADDRS == (('T' << 8) | 149));
SA(TI_CAPABILITY == (('T' << 8) | 150));
SA(TSRF_INFO_REQ == 1 && TSRF_IS_EXP_IN_RCVBUF == 2 && TSRF_QLEN_REQ == 4);
SA(TSAF_EXP_QUEUED == 1);

/* ---- 2. layouts ---- */

/* struct s has field f as its i-th 32-bit word (0-based). */
#define AT(s, f, i) _Static_assert(offsetof(struct s, f) == 4 * (i), #s "." #f " at word " #i)
/* struct s is exactly n 32-bit words. */
#define WORDS(s, n) _Static_assert(sizeof(struct s) == 4 * (n), #s " is " #n " words")

AT(T_conn_req, PRIM_type, 0);
AT(T_conn_req, DEST_length, 1);
AT(T_conn_req, DEST_offset, 2);
AT(T_conn_req, OPT_length, 3);
AT(T_conn_req, OPT_offset, 4);
WORDS(T_conn_req, 5);

AT(T_conn_res, ACCEPTOR_id, 1);
AT(T_conn_res, OPT_length, 2);
AT(T_conn_res, OPT_offset, 3);
AT(T_conn_res, SEQ_number, 4);
WORDS(T_conn_res, 5);

AT(T_discon_req, SEQ_number, 1);
WORDS(T_discon_req, 2);
AT(T_data_req, MORE_flag, 1);
WORDS(T_data_req, 2);
AT(T_exdata_req, MORE_flag, 1);
WORDS(T_exdata_req, 2);
WORDS(T_info_req, 1);

AT(T_bind_req, ADDR_length, 1);
AT(T_bind_req, ADDR_offset, 2);
AT(T_bind_req, CONIND_number, 3);
WORDS(T_bind_req, 4);
WORDS(T_unbind_req, 1);

AT(T_unitdata_req, DEST_length, 1);
AT(T_unitdata_req, DEST_offset, 2);
AT(T_unitdata_req, OPT_length, 3);
AT(T_unitdata_req, OPT_offset, 4);
WORDS(T_unitdata_req, 5);

AT(T_optmgmt_req, OPT_length, 1);
AT(T_optmgmt_req, OPT_offset, 2);
AT(T_optmgmt_req, MGMT_flags, 3);
WORDS(T_optmgmt_req, 4);
WORDS(T_ordrel_req, 1);

AT(T_conn_ind, SRC_length, 1);
AT(T_conn_ind, SRC_offset, 2);
AT(T_conn_ind, OPT_length, 3);
AT(T_conn_ind, OPT_offset, 4);
AT(T_conn_ind, SEQ_number, 5);
WORDS(T_conn_ind, 6);

AT(T_conn_con, RES_length, 1);
AT(T_conn_con, RES_offset, 2);
AT(T_conn_con, OPT_length, 3);
AT(T_conn_con, OPT_offset, 4);
WORDS(T_conn_con, 5);

AT(T_discon_ind, DISCON_reason, 1);
AT(T_discon_ind, SEQ_number, 2);
WORDS(T_discon_ind, 3);
AT(T_data_ind, MORE_flag, 1);
WORDS(T_data_ind, 2);
AT(T_exdata_ind, MORE_flag, 1);
WORDS(T_exdata_ind, 2);

AT(T_info_ack, PRIM_type, 0);
AT(T_info_ack, TSDU_size, 1);
AT(T_info_ack, ETSDU_size, 2);
AT(T_info_ack, CDATA_size, 3);
AT(T_info_ack, DDATA_size, 4);
AT(T_info_ack, ADDR_size, 5);
AT(T_info_ack, OPT_size, 6);
AT(T_info_ack, TIDU_size, 7);
AT(T_info_ack, SERV_type, 8);
AT(T_info_ack, CURRENT_state, 9);
AT(T_info_ack, PROVIDER_flag, 10);
WORDS(T_info_ack, 11);

AT(T_bind_ack, ADDR_length, 1);
AT(T_bind_ack, ADDR_offset, 2);
AT(T_bind_ack, CONIND_number, 3);
WORDS(T_bind_ack, 4);

AT(T_error_ack, ERROR_prim, 1);
AT(T_error_ack, TLI_error, 2);
AT(T_error_ack, UNIX_error, 3);
WORDS(T_error_ack, 4);

AT(T_ok_ack, CORRECT_prim, 1);
WORDS(T_ok_ack, 2);

AT(T_unitdata_ind, SRC_length, 1);
AT(T_unitdata_ind, SRC_offset, 2);
AT(T_unitdata_ind, OPT_length, 3);
AT(T_unitdata_ind, OPT_offset, 4);
WORDS(T_unitdata_ind, 5);

AT(T_uderror_ind, DEST_length, 1);
AT(T_uderror_ind, DEST_offset, 2);
AT(T_uderror_ind, OPT_length, 3);
AT(T_uderror_ind, OPT_offset, 4);
AT(T_uderror_ind, ERROR_type, 5);
WORDS(T_uderror_ind, 6);

AT(T_optmgmt_ack, OPT_length, 1);
AT(T_optmgmt_ack, OPT_offset, 2);
AT(T_optmgmt_ack, MGMT_flags, 3);
WORDS(T_optmgmt_ack, 4);
WORDS(T_ordrel_ind, 1);

WORDS(T_addr_req, 1);
AT(T_addr_ack, LOCADDR_length, 1);
AT(T_addr_ack, LOCADDR_offset, 2);
AT(T_addr_ack, REMADDR_length, 3);
AT(T_addr_ack, REMADDR_offset, 4);
WORDS(T_addr_ack, 5);

AT(T_optdata_req, DATA_flag, 1);
AT(T_optdata_req, OPT_length, 2);
AT(T_optdata_req, OPT_offset, 3);
WORDS(T_optdata_req, 4);
AT(T_optdata_ind, DATA_flag, 1);
AT(T_optdata_ind, OPT_length, 2);
AT(T_optdata_ind, OPT_offset, 3);
WORDS(T_optdata_ind, 4);

AT(T_capability_req, CAP_bits1, 1);
WORDS(T_capability_req, 2);
AT(T_capability_ack, CAP_bits1, 1);
AT(T_capability_ack, INFO_ack, 2);
AT(T_capability_ack, ACCEPTOR_id, 13);
WORDS(T_capability_ack, 14);

AT(T_opthdr, len, 0);
AT(T_opthdr, level, 1);
AT(T_opthdr, name, 2);
AT(T_opthdr, status, 3);
WORDS(T_opthdr, 4);

/* the union is as large as the largest primitive, and every member starts with the type */
SA(sizeof(union T_primitives) == sizeof(struct T_capability_ack));
SA(offsetof(union T_primitives, info_ack.PRIM_type) == offsetof(union T_primitives, type));
SA(alignof(union T_primitives) == 4);

/* ti_sync_ack: a T_info_ack, then the queue length and flags */
AT(ti_sync_ack, PRIM_type, 0);
AT(ti_sync_ack, TSDU_size, 1);
AT(ti_sync_ack, ETSDU_size, 2);
AT(ti_sync_ack, CDATA_size, 3);
AT(ti_sync_ack, DDATA_size, 4);
AT(ti_sync_ack, ADDR_size, 5);
AT(ti_sync_ack, OPT_size, 6);
AT(ti_sync_ack, TIDU_size, 7);
AT(ti_sync_ack, SERV_type, 8);
AT(ti_sync_ack, CURRENT_state, 9);
AT(ti_sync_ack, PROVIDER_flag, 10);
AT(ti_sync_ack, tsa_qlen, 11);
AT(ti_sync_ack, tsa_flags, 12);
WORDS(ti_sync_ack, 13);
WORDS(ti_sync_req, 1);

/* XTI: t_opthdr and T_opthdr are one layout; option values are 32-bit words */
AT(t_opthdr, len, 0);
AT(t_opthdr, level, 1);
AT(t_opthdr, name, 2);
AT(t_opthdr, status, 3);
WORDS(t_opthdr, 4);
WORDS(t_linger, 2);
WORDS(t_kpalive, 2);
AT(t_linger, l_linger, 1);
AT(t_kpalive, kp_timeout, 1);

/* XTI user structures in XNS order */
SA(offsetof(struct netbuf, maxlen) == 0 && offsetof(struct netbuf, len) == sizeof(unsigned int));
SA(offsetof(struct netbuf, buf) == 2 * sizeof(unsigned int));
AT(t_info, addr, 0);
AT(t_info, options, 1);
AT(t_info, tsdu, 2);
AT(t_info, etsdu, 3);
AT(t_info, connect, 4);
AT(t_info, discon, 5);
AT(t_info, servtype, 6);
AT(t_info, flags, 7);
WORDS(t_info, 8);
SA(offsetof(struct t_bind, addr) == 0 && offsetof(struct t_bind, qlen) == sizeof(struct netbuf));
SA(offsetof(struct t_optmgmt, flags) == sizeof(struct netbuf));
SA(offsetof(struct t_discon, reason) == sizeof(struct netbuf));
SA(offsetof(struct t_discon, sequence) == sizeof(struct netbuf) + sizeof(int));
SA(offsetof(struct t_call, opt) == sizeof(struct netbuf));
SA(offsetof(struct t_call, udata) == 2 * sizeof(struct netbuf));
SA(offsetof(struct t_call, sequence) == 3 * sizeof(struct netbuf));
SA(offsetof(struct t_unitdata, opt) == sizeof(struct netbuf));
SA(offsetof(struct t_unitdata, udata) == 2 * sizeof(struct netbuf));
SA(offsetof(struct t_uderr, error) == 2 * sizeof(struct netbuf));
SA(offsetof(struct t_iovec, iov_base) == 0 && offsetof(struct t_iovec, iov_len) == sizeof(void *));

/* The prototypes are the XNS5 ones.  _Generic does not evaluate its operand,
 * so nothing refers to the functions (libxnet, which defines them, is not
 * linked here). */
#define PROTO(fn, type) _Static_assert(_Generic(&fn, type: 1, default: 0), #fn " is " #type)

PROTO(t_accept, int (*)(int, int, const struct t_call *));
PROTO(t_alloc, void *(*)(int, int, int));
PROTO(t_bind, int (*)(int, const struct t_bind *, struct t_bind *));
PROTO(t_close, int (*)(int));
PROTO(t_connect, int (*)(int, const struct t_call *, struct t_call *));
PROTO(t_error, int (*)(const char *));
PROTO(t_free, int (*)(void *, int));
PROTO(t_getinfo, int (*)(int, struct t_info *));
PROTO(t_getprotaddr, int (*)(int, struct t_bind *, struct t_bind *));
PROTO(t_getstate, int (*)(int));
PROTO(t_listen, int (*)(int, struct t_call *));
PROTO(t_look, int (*)(int));
PROTO(t_open, int (*)(const char *, int, struct t_info *));
PROTO(t_optmgmt, int (*)(int, const struct t_optmgmt *, struct t_optmgmt *));
PROTO(t_rcv, int (*)(int, void *, unsigned int, int *));
PROTO(t_rcvconnect, int (*)(int, struct t_call *));
PROTO(t_rcvdis, int (*)(int, struct t_discon *));
PROTO(t_rcvrel, int (*)(int));
PROTO(t_rcvreldata, int (*)(int, struct t_discon *));
PROTO(t_rcvudata, int (*)(int, struct t_unitdata *, int *));
PROTO(t_rcvuderr, int (*)(int, struct t_uderr *));
PROTO(t_rcvv, int (*)(int, struct t_iovec *, unsigned int, int *));
PROTO(t_rcvvudata, int (*)(int, struct t_unitdata *, struct t_iovec *, unsigned int, int *));
PROTO(t_snd, int (*)(int, void *, unsigned int, int));
PROTO(t_snddis, int (*)(int, const struct t_call *));
PROTO(t_sndrel, int (*)(int));
PROTO(t_sndreldata, int (*)(int, struct t_discon *));
PROTO(t_sndudata, int (*)(int, const struct t_unitdata *));
PROTO(t_sndv, int (*)(int, const struct t_iovec *, unsigned int, int));
PROTO(t_sndvudata, int (*)(int, struct t_unitdata *, struct t_iovec *, unsigned int));
PROTO(t_strerror, const char *(*)(int));
PROTO(t_sync, int (*)(int));
PROTO(t_sysconf, int (*)(int));
PROTO(t_unbind, int (*)(int));
PROTO(_t_errno, int *(*)(void));
SA(_Generic(&t_nerr, int *: 1, default: 0));
SA(_Generic(&t_errlist[0], char **: 1, default: 0));
/* t_errno is an lvalue of type int */
SA(_Generic(t_errno, int: 1, default: 0) && sizeof(&t_errno) == sizeof(int *));

/* ---- 3. option walkers ---- */

/* Append an option of vlen value bytes (each byte = fill) at *off in buf. */
static struct t_opthdr *put_opt(unsigned char *buf, size_t *off, t_uscalar_t level,
                                t_uscalar_t name, size_t vlen, unsigned char fill)
{
    struct t_opthdr *oh = (struct t_opthdr *)(buf + *off);

    oh->len = (t_uscalar_t)(sizeof(*oh) + vlen);
    oh->level = level;
    oh->name = name;
    oh->status = 0;
    memset(T_OPT_DATA(oh), fill, vlen);
    *off += _T_ALIGN(oh->len);
    return oh;
}

static void test_xti_walk(void)
{
    alignas(t_uscalar_t) unsigned char buf[256];
    size_t off = 0;
    struct netbuf nb = {.maxlen = sizeof(buf), .buf = buf};

    CHECK_EQ(_T_ALIGN(0), 0);
    CHECK_EQ(_T_ALIGN(1), 4);
    CHECK_EQ(_T_ALIGN(4), 4);
    CHECK_EQ(_T_ALIGN(17), 20);
    CHECK_EQ(_T_ALIGN(0xffffffffu), 0x100000000ull); /* no wrap to 0 */

    memset(buf, 0xee, sizeof(buf));
    struct t_opthdr *o1 = put_opt(buf, &off, XTI_GENERIC, XTI_SNDBUF, sizeof(t_uscalar_t), 0x11);
    struct t_opthdr *o2 = put_opt(buf, &off, INET_IP, IP_TOS, 1, 0x22); /* 3 bytes padding */
    struct t_opthdr *o3 = put_opt(buf, &off, INET_TCP, TCP_KEEPALIVE, sizeof(struct t_kpalive),
                                  0x33);
    struct t_opthdr *o4 = put_opt(buf, &off, INET_TCP, TCP_NODELAY, 0, 0); /* no value */
    nb.len = (unsigned int)off;
    CHECK_EQ(off, 20 + 20 + 24 + 16);

    /* the walk visits the four in order, and the data follows each header */
    struct t_opthdr *want[] = {o1, o2, o3, o4};
    int n = 0;
    for (struct t_opthdr *oh = T_OPT_FIRSTHDR(&nb); oh; oh = T_OPT_NEXTHDR(&nb, oh)) {
        if (!CHECK(n < 4))
            break;
        CHECK(oh == want[n]);
        CHECK_EQ((uintptr_t)oh % alignof(t_uscalar_t), 0);
        CHECK(T_OPT_DATA(oh) == (unsigned char *)oh + 16);
        n++;
    }
    CHECK_EQ(n, 4);
    CHECK_EQ(o1->level, XTI_GENERIC);
    CHECK_EQ(*T_OPT_DATA(o2), 0x22);
    CHECK_EQ(T_OPT_DATA(o3)[sizeof(struct t_kpalive) - 1], 0x33);
    CHECK_EQ(o4->name, TCP_NODELAY);

    /* a buffer without the last option's padding still ends at it */
    nb.len = 20 + 17;
    CHECK(T_OPT_NEXTHDR(&nb, o1) == o2);
    CHECK(T_OPT_NEXTHDR(&nb, o2) == NULL);

    /* room for less than a whole next header: no next */
    nb.len = 20 + 20 + 15;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == NULL);
    nb.len = 20 + 20 + 16;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == o3);

    /* a len running past the buffer, a len shorter than a header, a huge len */
    nb.len = (unsigned int)off;
    o2->len = 200;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == NULL);
    o2->len = 0;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == NULL);
    o2->len = 15;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == NULL);
    o2->len = 0xffffffffu;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == NULL);
    o2->len = 17;
    CHECK(T_OPT_NEXTHDR(&nb, o2) == o3);

    /* the last option has no next, however the buffer ends */
    CHECK(T_OPT_NEXTHDR(&nb, o4) == NULL);

    /* empty and too-short buffers have no first option */
    nb.len = 0;
    CHECK(T_OPT_FIRSTHDR(&nb) == NULL);
    nb.len = sizeof(struct t_opthdr) - 1;
    CHECK(T_OPT_FIRSTHDR(&nb) == NULL);
    nb.len = sizeof(struct t_opthdr);
    CHECK(T_OPT_FIRSTHDR(&nb) == o1);
    CHECK(T_OPT_NEXTHDR(&nb, o1) == NULL);
}

static void test_tpi_walk(void)
{
    /* a T_OPTMGMT_REQ with its options after the fixed part, as a provider sees it */
    alignas(t_uscalar_t) unsigned char msg[256];
    struct T_optmgmt_req *req = (struct T_optmgmt_req *)msg;
    size_t off = sizeof(*req);

    memset(msg, 0, sizeof(msg));
    put_opt(msg, &off, XTI_GENERIC, XTI_LINGER, sizeof(struct t_linger), 1);
    put_opt(msg, &off, INET_IP, IP_TTL, 1, 64);
    put_opt(msg, &off, INET_UDP, UDP_CHECKSUM, sizeof(t_uscalar_t), 0);
    req->PRIM_type = T_OPTMGMT_REQ;
    req->OPT_offset = (t_scalar_t)sizeof(*req);
    req->OPT_length = (t_scalar_t)(off - sizeof(*req));
    req->MGMT_flags = T_NEGOTIATE;

    const unsigned char *opts = msg + req->OPT_offset;
    const unsigned char *end = opts + req->OPT_length;
    t_uscalar_t names[4] = {0};
    int n = 0;
    for (struct T_opthdr *oh = (struct T_opthdr *)opts; oh;
         oh = _TPI_TOPT_NEXTHDR(opts, req->OPT_length, oh)) {
        if (!CHECK(n < 4))
            break;
        CHECK(_TPI_TOPT_VALID(oh, opts, end));
        names[n++] = oh->name;
    }
    CHECK_EQ(n, 3);
    CHECK_EQ(names[0], XTI_LINGER);
    CHECK_EQ(names[1], IP_TTL);
    CHECK_EQ(names[2], UDP_CHECKSUM);

    struct T_opthdr *second = (struct T_opthdr *)(opts + 24);
    CHECK_EQ(second->level, INET_IP);
    CHECK_EQ(*_TPI_TOPT_DATA(second), 64);
    CHECK_EQ(_TPI_ALIGN_TOPT(second->len), 20);

    /* _TPI_TOPT_VALID: the whole option within [start, end) */
    CHECK(_TPI_TOPT_VALID(second, opts, opts + 24 + 17));
    CHECK(!_TPI_TOPT_VALID(second, opts, opts + 24 + 16)); /* value cut */
    CHECK(!_TPI_TOPT_VALID(second, opts, opts + 24 + 8));  /* header cut */
    CHECK(!_TPI_TOPT_VALID(second, opts + 28, end));       /* before start */
    second->len = 8;
    CHECK(!_TPI_TOPT_VALID(second, opts, end)); /* shorter than a header */
    CHECK(_TPI_TOPT_NEXTHDR(opts, req->OPT_length, second) == NULL);
}

/* ---- 4. include order ---- */

static void check_seen(const struct tpi_seen *s)
{
    CHECK_EQ(s->ip_options, IP_OPTIONS);
    CHECK_EQ(s->ip_tos, IP_TOS);
    CHECK_EQ(s->ip_ttl, IP_TTL);
    CHECK_EQ(s->ip_reuseaddr, IP_REUSEADDR);
    CHECK_EQ(s->tcp_nodelay, TCP_NODELAY);
    CHECK_EQ(s->tcp_maxseg, TCP_MAXSEG);
    CHECK_EQ(s->tcp_keepalive, TCP_KEEPALIVE);
    CHECK_EQ(s->t_more, T_MORE);
    CHECK_EQ(s->t_expedited, T_EXPEDITED);
    CHECK_EQ(s->t_negotiate, T_NEGOTIATE);
    CHECK_EQ(s->t_success, T_SUCCESS);
    CHECK_EQ(s->t_notsupport, T_NOTSUPPORT);
    CHECK_EQ(s->t_infinite, T_INFINITE);
    CHECK_EQ(s->t_invalid, T_INVALID);
    CHECK_EQ(s->t_cots_ord, T_COTS_ORD);
    CHECK_EQ(s->tbadaddr, TBADADDR);
    CHECK_EQ(s->tsyserr, TSYSERR);
    CHECK_EQ(s->tproto, TPROTO);
    CHECK_EQ(s->t_data, T_DATA);
    CHECK_EQ(s->t_unbnd, T_UNBND);
    CHECK_EQ(s->t_opthdr_size, sizeof(struct t_opthdr));
    CHECK_EQ(s->ti_getinfo, TI_GETINFO);
    CHECK_EQ(s->t_info_ack_size, sizeof(struct T_info_ack));
}

static void test_include_order(void)
{
    void (*units[])(struct tpi_seen *) = {tpi_seen_a_gnu, tpi_seen_b_gnu, tpi_seen_a_xns5,
                                          tpi_seen_b_xns5};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        struct tpi_seen s;
        memset(&s, 0xa5, sizeof(s));
        units[i](&s);
        check_seen(&s);
    }
}

int main(void)
{
    test_xti_walk();
    test_tpi_walk();
    test_include_order();
    return CHECK_RESULT();
}
