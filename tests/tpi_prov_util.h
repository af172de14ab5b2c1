/* SPDX-License-Identifier: MIT */
/*
 * tpi_prov_util.h -- a scripted TPI provider for the timod and tirdwr tests,
 * built on hdrv (head_tdrv.h) through its write-side hook.
 *
 * The hook answers the six requests timod sends (T_INFO_REQ, T_BIND_REQ,
 * T_UNBIND_REQ, T_OPTMGMT_REQ, T_ADDR_REQ, T_CAPABILITY_REQ) with their acks
 * at once (qreply), or with a T_ERROR_ACK when tpf_fail_prim names the
 * request, or not at all when tpf_hold is set (the request is then logged
 * like any other message, for hdrv_down).  Every other message falls through
 * to hdrv, which logs it (T_ORDREL_REQ, T_DISCON_REQ, M_DATA, ...) or acks
 * it (M_IOCTL).  The test sends indications up with tpf_up.
 * Each answered request is counted (tpf_nreq) and its message type and
 * PRIM_type remembered (tpf_last_type, tpf_last_prim).
 */
#ifndef TPI_PROV_UTIL_H
#define TPI_PROV_UTIL_H

#include <stdatomic.h>
#include <string.h>
#include <sys/tihdr.h>

#include "head_tdrv.h"

static atomic_int tpf_hold;         /* log requests instead of answering */
static atomic_int tpf_fail_prim;    /* answer this request with T_ERROR_ACK (-1: none) */
static atomic_int tpf_fail_tli;     /* its TLI_error */
static atomic_int tpf_fail_unix;    /* its UNIX_error */
static atomic_int tpf_short;        /* answer with an ack 4 bytes short of its fixed part */
static atomic_int tpf_nreq;         /* requests answered */
static atomic_int tpf_last_type;    /* db_type of the last request answered */
static atomic_int tpf_last_prim;    /* its PRIM_type */
static atomic_int tpf_state = TS_IDLE; /* CURRENT_state reported */

/* The provider's local and remote addresses (set before the request). */
static char tpf_loc[64] = "local-addr";
static char tpf_rem[64] = "remote-peer";

/* The T_INFO_ACK the provider gives. */
static inline struct T_info_ack tpf_info(void)
{
    struct T_info_ack ia = {
        .PRIM_type = T_INFO_ACK,
        .TSDU_size = 4096,
        .ETSDU_size = 64,
        .CDATA_size = T_INVALID,
        .DDATA_size = T_INVALID,
        .ADDR_size = 32,
        .OPT_size = 256,
        .TIDU_size = 4096,
        .SERV_type = T_COTS_ORD,
        .CURRENT_state = atomic_load(&tpf_state),
        .PROVIDER_flag = XPG4_1,
    };
    return ia;
}

/* Answer with the len bytes at p as an M_PCPROTO up (the ack). */
static inline void tpf_reply(queue_t *wq, const void *p, size_t len)
{
    if (atomic_load(&tpf_short))
        len -= 4;
    mblk_t *ap = hmsg2(M_PCPROTO, 0, p, len, NULL, 0);
    if (ap)
        qreply(wq, ap);
}

/* The fixed part of the request mp (flattened into buf, at most cap bytes);
 * returns its length. */
static inline size_t tpf_gather(const mblk_t *mp, unsigned char *buf, size_t cap)
{
    size_t n = 0;
    for (; mp && n < cap; mp = mp->b_cont) {
        size_t b = (size_t)(mp->b_wptr - mp->b_rptr);
        if (b > cap - n)
            b = cap - n;
        memcpy(buf + n, mp->b_rptr, b);
        n += b;
    }
    return n;
}

static int tpf_hook(queue_t *q, mblk_t *mp)
{
    unsigned char type = mp->b_datap->db_type;
    unsigned char req[512];
    unsigned char ack[512];
    t_scalar_t prim;

    if ((type != M_PROTO && type != M_PCPROTO) || mp->b_wptr - mp->b_rptr < 4)
        return 0;
    memcpy(&prim, mp->b_rptr, sizeof(prim));
    if (prim != T_INFO_REQ && prim != T_BIND_REQ && prim != T_UNBIND_REQ &&
        prim != T_OPTMGMT_REQ && prim != T_ADDR_REQ && prim != T_CAPABILITY_REQ)
        return 0;
    if (atomic_load(&tpf_hold))
        return 0;
    size_t rlen = tpf_gather(mp, req, sizeof(req));
    atomic_store(&tpf_last_type, type);
    atomic_store(&tpf_last_prim, prim);
    atomic_fetch_add(&tpf_nreq, 1);
    freemsg(mp);
    memset(ack, 0, sizeof(ack));
    if (atomic_load(&tpf_fail_prim) == prim) {
        struct T_error_ack ea = {T_ERROR_ACK, prim, atomic_load(&tpf_fail_tli),
                                 atomic_load(&tpf_fail_unix)};
        tpf_reply(q, &ea, sizeof(ea));
        return 1;
    }
    switch (prim) {
    case T_INFO_REQ: {
        struct T_info_ack ia = tpf_info();
        tpf_reply(q, &ia, sizeof(ia));
        break;
    }
    case T_BIND_REQ: {
        struct T_bind_req br;
        struct T_bind_ack ba = {.PRIM_type = T_BIND_ACK};
        memcpy(&br, req, sizeof(br));
        size_t alen = (size_t)br.ADDR_length;
        if (alen > 0 && alen < sizeof(tpf_loc) && (size_t)br.ADDR_offset + alen <= rlen) {
            memset(tpf_loc, 0, sizeof(tpf_loc));
            memcpy(tpf_loc, req + br.ADDR_offset, alen);
        }
        ba.ADDR_length = (t_scalar_t)strlen(tpf_loc);
        ba.ADDR_offset = (t_scalar_t)sizeof(ba);
        ba.CONIND_number = br.CONIND_number;
        memcpy(ack, &ba, sizeof(ba));
        memcpy(ack + sizeof(ba), tpf_loc, (size_t)ba.ADDR_length);
        tpf_reply(q, ack, sizeof(ba) + (size_t)ba.ADDR_length);
        break;
    }
    case T_UNBIND_REQ: {
        struct T_ok_ack ok = {T_OK_ACK, T_UNBIND_REQ};
        tpf_reply(q, &ok, sizeof(ok));
        break;
    }
    case T_OPTMGMT_REQ: {
        struct T_optmgmt_req orq;
        struct T_optmgmt_ack oa = {.PRIM_type = T_OPTMGMT_ACK, .MGMT_flags = T_SUCCESS};
        memcpy(&orq, req, sizeof(orq));
        size_t olen = (size_t)orq.OPT_length;
        if ((size_t)orq.OPT_offset + olen > rlen || olen > sizeof(ack) - sizeof(oa))
            olen = 0;
        oa.OPT_length = (t_scalar_t)olen;
        oa.OPT_offset = olen ? (t_scalar_t)sizeof(oa) : 0;
        memcpy(ack, &oa, sizeof(oa));
        memcpy(ack + sizeof(oa), req + orq.OPT_offset, olen);
        tpf_reply(q, ack, sizeof(oa) + olen);
        break;
    }
    case T_ADDR_REQ: {
        struct T_addr_ack aa = {.PRIM_type = T_ADDR_ACK};
        size_t l = strlen(tpf_loc), r = strlen(tpf_rem);
        aa.LOCADDR_length = (t_scalar_t)l;
        aa.LOCADDR_offset = l ? (t_scalar_t)sizeof(aa) : 0;
        aa.REMADDR_length = (t_scalar_t)r;
        aa.REMADDR_offset = r ? (t_scalar_t)(sizeof(aa) + l) : 0;
        memcpy(ack, &aa, sizeof(aa));
        memcpy(ack + sizeof(aa), tpf_loc, l);
        memcpy(ack + sizeof(aa) + l, tpf_rem, r);
        tpf_reply(q, ack, sizeof(aa) + l + r);
        break;
    }
    default: { /* T_CAPABILITY_REQ */
        struct T_capability_ack ca = {.PRIM_type = T_CAPABILITY_ACK,
                                      .CAP_bits1 = TC1_INFO | TC1_ACCEPTOR_ID,
                                      .INFO_ack = tpf_info(),
                                      .ACCEPTOR_id = 0x1234};
        tpf_reply(q, &ca, sizeof(ca));
        break;
    }
    }
    return 1;
}

/* Install the provider (once, before the first open) and reset its script. */
static inline void tpf_reset(void)
{
    hdrv_wput_hook = tpf_hook;
    atomic_store(&tpf_hold, 0);
    atomic_store(&tpf_fail_prim, -1);
    atomic_store(&tpf_fail_tli, 0);
    atomic_store(&tpf_fail_unix, 0);
    atomic_store(&tpf_short, 0);
    atomic_store(&tpf_nreq, 0);
    atomic_store(&tpf_state, TS_IDLE);
    strcpy(tpf_loc, "local-addr");
    strcpy(tpf_rem, "remote-peer");
}

/* Send a TPI primitive up as the provider: clen bytes of ctl as an M_PROTO
 * (or M_PCPROTO), with dlen bytes of data in an M_DATA block if data. */
static inline void tpf_up(unsigned char type, const void *ctl, size_t clen, const void *data,
                          size_t dlen)
{
    hdrv_up(hmsg2(type, 0, ctl, clen, data, dlen));
}

/* The PRIM_type of an M_PROTO/M_PCPROTO logged by hdrv, or -1. */
static inline int tpf_prim_of(const mblk_t *mp)
{
    t_scalar_t p;
    if (mp == NULL || (mp->b_datap->db_type != M_PROTO && mp->b_datap->db_type != M_PCPROTO) ||
        mp->b_wptr - mp->b_rptr < 4)
        return -1;
    memcpy(&p, mp->b_rptr, sizeof(p));
    return p;
}

#endif /* TPI_PROV_UTIL_H */
