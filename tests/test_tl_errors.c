/* SPDX-License-Identifier: MIT */
/*
 * test_tl_errors.c -- the TPI state table of the tl transports and their
 * answers to malformed primitives (docs/TPI.md).
 *   1.  Every primitive a transport user sends, in every state an endpoint
 *       can be in, on ticots, ticotsord and ticlts, against a table: the ack
 *       expected, T_ERROR_ACK(TOUTSTATE) (the state unchanged), TNOTSUPPORT,
 *       M_ERROR(EPROTO) (non-acknowledged primitives), data sent on, or
 *       data discarded (TS_IDLE: a disconnect may have crossed it).
 *   2.  Malformed primitives: shorter than their structure (TSYSERR/EINVAL,
 *       or M_ERROR when not acknowledged), addresses and options outside the
 *       message or too long (TBADADDR, TBADOPT), connect/disconnect data
 *       (TBADDATA), unknown PRIM_type and provider primitives (M_ERROR).
 */
#include <stdio.h>
#include <unistd.h>

#include "tl_util.h"

enum { S_UNBND, S_IDLE, S_LISTEN, S_WCON, S_WRES, S_XFER, S_WIND, S_WREQ, S_N };
static const char *const sname[S_N] = {"UNBND", "IDLE", "LISTEN", "WCON",
                                       "WRES",  "XFER", "WIND",   "WREQ"};
static const int sstate[S_N] = {TS_UNBND,     TS_IDLE,      TS_IDLE,        TS_WCON_CREQ,
                                TS_WRES_CIND, TS_DATA_XFER, TS_WIND_ORDREL, TS_WREQ_ORDREL};

/* Expected outcomes; a positive value is the PRIM_type of the expected ack. */
enum { OUT = -1, MERR = -2, SENT = -3, DROP = -4, NOTS = -5, NA = -6 };

static const t_scalar_t prims[] = {T_CONN_REQ,  T_CONN_RES,     T_DISCON_REQ,   T_DATA_REQ,
                                   T_EXDATA_REQ, T_INFO_REQ,    T_BIND_REQ,     T_UNBIND_REQ,
                                   T_UNITDATA_REQ, T_OPTMGMT_REQ, T_ORDREL_REQ, T_ADDR_REQ,
                                   T_OPTDATA_REQ, T_CAPABILITY_REQ};
#define NPRIM ((int)(sizeof(prims) / sizeof(prims[0])))

/* ticots / ticotsord: rows in the order of prims, columns S_*.  ORDREL is
 * patched for ticots (always M_ERROR), WIND/WREQ do not exist there. */
static const int cots_table[NPRIM][S_N] = {
    /*               UNBND IDLE LISTEN WCON WRES XFER WIND WREQ */
    /* CONN_REQ   */ {OUT, T_OK_ACK, OUT, OUT, OUT, OUT, OUT, OUT},
    /* CONN_RES   */ {OUT, OUT, OUT, OUT, T_OK_ACK, OUT, OUT, OUT},
    /* DISCON_REQ */ {OUT, OUT, OUT, T_OK_ACK, T_OK_ACK, T_OK_ACK, T_OK_ACK, T_OK_ACK},
    /* DATA_REQ   */ {MERR, DROP, DROP, MERR, MERR, SENT, MERR, SENT},
    /* EXDATA_REQ */ {MERR, DROP, DROP, MERR, MERR, SENT, MERR, SENT},
    /* INFO_REQ   */ {T_INFO_ACK, T_INFO_ACK, T_INFO_ACK, T_INFO_ACK, T_INFO_ACK, T_INFO_ACK,
                      T_INFO_ACK, T_INFO_ACK},
    /* BIND_REQ   */ {T_BIND_ACK, OUT, OUT, OUT, OUT, OUT, OUT, OUT},
    /* UNBIND_REQ */ {OUT, T_OK_ACK, T_OK_ACK, OUT, OUT, OUT, OUT, OUT},
    /* UNITDATA   */ {MERR, MERR, MERR, MERR, MERR, MERR, MERR, MERR},
    /* OPTMGMT    */ {T_OPTMGMT_ACK, T_OPTMGMT_ACK, T_OPTMGMT_ACK, T_OPTMGMT_ACK, T_OPTMGMT_ACK,
                      T_OPTMGMT_ACK, T_OPTMGMT_ACK, T_OPTMGMT_ACK},
    /* ORDREL_REQ */ {MERR, DROP, DROP, MERR, MERR, SENT, MERR, SENT},
    /* ADDR_REQ   */ {T_ADDR_ACK, T_ADDR_ACK, T_ADDR_ACK, T_ADDR_ACK, T_ADDR_ACK, T_ADDR_ACK,
                      T_ADDR_ACK, T_ADDR_ACK},
    /* OPTDATA    */ {MERR, DROP, DROP, MERR, MERR, SENT, MERR, SENT},
    /* CAPABILITY */ {T_CAPABILITY_ACK, T_CAPABILITY_ACK, T_CAPABILITY_ACK, T_CAPABILITY_ACK,
                      T_CAPABILITY_ACK, T_CAPABILITY_ACK, T_CAPABILITY_ACK, T_CAPABILITY_ACK},
};

static const int clts_table[NPRIM][2] = {
    /*               UNBND IDLE */
    /* CONN_REQ   */ {NOTS, NOTS},
    /* CONN_RES   */ {NOTS, NOTS},
    /* DISCON_REQ */ {NOTS, NOTS},
    /* DATA_REQ   */ {MERR, MERR},
    /* EXDATA_REQ */ {MERR, MERR},
    /* INFO_REQ   */ {T_INFO_ACK, T_INFO_ACK},
    /* BIND_REQ   */ {T_BIND_ACK, OUT},
    /* UNBIND_REQ */ {OUT, T_OK_ACK},
    /* UNITDATA   */ {MERR, T_UDERROR_IND}, /* to an address nobody has */
    /* OPTMGMT    */ {T_OPTMGMT_ACK, T_OPTMGMT_ACK},
    /* ORDREL_REQ */ {MERR, MERR},
    /* ADDR_REQ   */ {T_ADDR_ACK, T_ADDR_ACK},
    /* OPTDATA    */ {MERR, MERR},
    /* CAPABILITY */ {T_CAPABILITY_ACK, T_CAPABILITY_ACK},
};

/* The endpoints of one case: ep is tested, the others make its state. */
struct setup {
    int ep, peer, other;
    t_scalar_t seq;
};

static void setup_close(struct setup *s)
{
    if (s->ep >= 0)
        strm_close(s->ep);
    if (s->peer >= 0 && s->peer != s->ep)
        strm_close(s->peer);
    if (s->other >= 0)
        strm_close(s->other);
}

/* Bring a new endpoint of dev into state st; 1 on success. */
static int setup(const char *dev, int st, struct setup *s)
{
    static int n;
    char addr[16];
    int alen = snprintf(addr, sizeof(addr), "st%d", n++);
    struct tlu_msg m;

    s->ep = s->peer = s->other = -1;
    s->seq = -1;
    switch (st) {
    case S_UNBND:
        s->ep = tlu_open(dev);
        return 1;
    case S_IDLE:
    case S_LISTEN:
        s->ep = tlu_open(dev);
        return tlu_bind(s->ep, NULL, 0, st == S_LISTEN ? 2 : 0, NULL, NULL, NULL) == 0;
    case S_WCON:
        s->other = tlu_open(dev);
        s->ep = tlu_open(dev);
        if (tlu_bind(s->other, addr, alen, 2, NULL, NULL, NULL) != 0 ||
            tlu_bind(s->ep, NULL, 0, 0, NULL, NULL, NULL) != 0 ||
            tlu_conn_req(s->ep, addr, alen) != 0 || !tlu_ok(s->ep, T_CONN_REQ))
            return 0;
        return tlu_conn_ind(s->other) >= 0;
    case S_WRES:
        s->ep = tlu_open(dev);
        s->peer = tlu_open(dev);
        if (tlu_bind(s->ep, addr, alen, 2, NULL, NULL, NULL) != 0 ||
            tlu_bind(s->peer, NULL, 0, 0, NULL, NULL, NULL) != 0 ||
            tlu_conn_req(s->peer, addr, alen) != 0 || !tlu_ok(s->peer, T_CONN_REQ))
            return 0;
        s->seq = tlu_conn_ind(s->ep);
        return s->seq >= 0;
    default: /* connected, maybe released half-way */
        if (!tlu_pair(dev, &s->other, &s->ep, &s->peer, 0))
            return 0;
        if (st == S_WIND)
            return tlu_req(s->ep, T_ORDREL_REQ) == 0 && tlu_get(s->peer, &m) == T_ORDREL_IND;
        if (st == S_WREQ)
            return tlu_req(s->peer, T_ORDREL_REQ) == 0 && tlu_get(s->ep, &m) == T_ORDREL_IND;
        return 1;
    }
}

/* Send prim, well formed, as it would be in state st. */
static int send_prim(int fd, t_scalar_t prim, t_scalar_t seq)
{
    switch (prim) {
    case T_CONN_REQ:
        return tlu_conn_req(fd, "nowhere", 7);
    case T_CONN_RES:
        return tlu_conn_res(fd, 0, seq);
    case T_DISCON_REQ:
        return tlu_discon_req(fd, seq);
    case T_DATA_REQ:
    case T_EXDATA_REQ:
        return tlu_data(fd, "d", 1, 0, prim == T_EXDATA_REQ);
    case T_BIND_REQ: {
        struct T_bind_req r = {.PRIM_type = T_BIND_REQ};
        return tlu_put(fd, &r, sizeof(r), NULL, -1, 0);
    }
    case T_UNITDATA_REQ: {
        struct {
            struct T_unitdata_req r;
            char a[8];
        } u = {{T_UNITDATA_REQ, 7, sizeof(struct T_unitdata_req), 0, 0}, "nowhere"};
        return tlu_put(fd, &u, (int)sizeof(u.r) + 7, "u", 1, 0);
    }
    case T_OPTMGMT_REQ: {
        struct T_optmgmt_req r = {.PRIM_type = T_OPTMGMT_REQ, .MGMT_flags = T_CURRENT};
        return tlu_put(fd, &r, sizeof(r), NULL, -1, 0);
    }
    case T_OPTDATA_REQ: {
        struct T_optdata_req r = {.PRIM_type = T_OPTDATA_REQ};
        return tlu_put(fd, &r, sizeof(r), "o", 1, 0);
    }
    case T_CAPABILITY_REQ: {
        struct T_capability_req r = {.PRIM_type = T_CAPABILITY_REQ};
        return tlu_put(fd, &r, sizeof(r), NULL, -1, 0);
    }
    default:
        return tlu_req(fd, prim);
    }
}

static void run_case(const char *dev, int st, int pi, int want)
{
    struct setup s;
    struct tlu_msg m;
    t_scalar_t prim = prims[pi];
    int r, ok = 1;

    if (!CHECK(setup(dev, st, &s))) {
        setup_close(&s);
        return;
    }
    CHECK_EQ(send_prim(s.ep, prim, st == S_WRES ? s.seq : -1), 0);
    switch (want) {
    case OUT:
    case NOTS:
        ok &= tlu_err(s.ep, prim, want == OUT ? TOUTSTATE : TNOTSUPPORT, 0);
        ok &= CHECK_EQ(tlu_state(s.ep), sstate[st]);
        break;
    case MERR:
        ok &= tlu_merror(s.ep);
        break;
    case SENT:
    case DROP:
        ok &= CHECK(tlu_quiet(s.ep, 20));
        if (want == SENT)
            ok &= CHECK(tlu_get(s.peer, &m) != -1);
        else if (s.peer >= 0)
            ok &= CHECK(tlu_quiet(s.peer, 20));
        ok &= CHECK(tlu_state(s.ep) >= 0);
        break;
    default:
        r = tlu_get(s.ep, &m);
        ok &= CHECK_EQ(r, want);
        if (r == T_ERROR_ACK)
            fprintf(stderr, "  TLI_error %d\n", m.c.p.error_ack.TLI_error);
        break;
    }
    if (!ok)
        fprintf(stderr, "  case: %s state %s prim %d\n", dev, sname[st], prim);
    setup_close(&s);
}

static void t_table(void)
{
    for (int pi = 0; pi < NPRIM; pi++) {
        for (int st = 0; st < S_N; st++) {
            int want = cots_table[pi][st];
            if (st < S_WIND)
                run_case(TLU_COTS, st, pi, prims[pi] == T_ORDREL_REQ ? MERR : want);
            run_case(TLU_ORD, st, pi, want);
        }
        for (int st = 0; st < 2; st++)
            run_case(TLU_CLTS, st, pi, clts_table[pi][st]);
    }
}

/* A primitive of len bytes (at most 64) built from words. */
static int put_words(int fd, const t_scalar_t *w, int len, const void *data, int dlen)
{
    return tlu_put(fd, w, len, data, dlen, 0);
}

static void t_malformed(void)
{
    struct setup s;
    int fd;

    /* 2.1 acknowledged primitives shorter than their structure */
    const t_scalar_t shorts[] = {T_CONN_REQ, T_CONN_RES, T_DISCON_REQ, T_BIND_REQ,
                                 T_OPTMGMT_REQ, T_CAPABILITY_REQ};
    for (size_t i = 0; i < sizeof(shorts) / sizeof(shorts[0]); i++) {
        fd = tlu_open(TLU_COTS);
        CHECK_EQ(put_words(fd, &shorts[i], 4, NULL, -1), 0);
        CHECK(tlu_err(fd, shorts[i], TSYSERR, EINVAL));
        CHECK_EQ(tlu_state(fd), TS_UNBND);
        strm_close(fd);
    }

    /* 2.2 T_BIND_REQ addresses: outside the message, too long, negative */
    fd = tlu_open(TLU_COTS);
    t_scalar_t b1[8] = {T_BIND_REQ, 4, 100, 0};
    CHECK_EQ(put_words(fd, b1, 16, NULL, -1), 0);
    CHECK(tlu_err(fd, T_BIND_REQ, TBADADDR, 0));
    t_scalar_t b2[40] = {T_BIND_REQ, 129, 16, 0};
    CHECK_EQ(put_words(fd, b2, 16 + 129, NULL, -1), 0);
    CHECK(tlu_err(fd, T_BIND_REQ, TBADADDR, 0));
    t_scalar_t b3[8] = {T_BIND_REQ, -1, 16, 0};
    CHECK_EQ(put_words(fd, b3, 20, NULL, -1), 0);
    CHECK(tlu_err(fd, T_BIND_REQ, TBADADDR, 0));
    t_scalar_t b4[8] = {T_BIND_REQ, 4, -8, 0};
    CHECK_EQ(put_words(fd, b4, 20, NULL, -1), 0);
    CHECK(tlu_err(fd, T_BIND_REQ, TBADADDR, 0));
    CHECK_EQ(tlu_state(fd), TS_UNBND);
    strm_close(fd);

    /* 2.3 T_CONN_REQ: address, options, data */
    CHECK(setup(TLU_COTS, S_IDLE, &s));
    t_scalar_t c1[8] = {T_CONN_REQ, 4, 64, 0, 0};
    CHECK_EQ(put_words(s.ep, c1, 20, NULL, -1), 0);
    CHECK(tlu_err(s.ep, T_CONN_REQ, TBADADDR, 0));
    t_scalar_t c2[8] = {T_CONN_REQ, 0, 0, 0, 0};
    CHECK_EQ(put_words(s.ep, c2, 20, NULL, -1), 0);
    CHECK(tlu_err(s.ep, T_CONN_REQ, TBADADDR, 0));
    t_scalar_t c3[8] = {T_CONN_REQ, 4, 20, 3, 24, 0x41414141, 0};
    CHECK_EQ(put_words(s.ep, c3, 28, NULL, -1), 0); /* 3 bytes: no whole option header */
    CHECK(tlu_err(s.ep, T_CONN_REQ, TBADOPT, 0));
    t_scalar_t c4[8] = {T_CONN_REQ, 4, 20, 16, 100, 0x41414141};
    CHECK_EQ(put_words(s.ep, c4, 24, NULL, -1), 0);
    CHECK(tlu_err(s.ep, T_CONN_REQ, TBADOPT, 0));
    t_scalar_t c5[8] = {T_CONN_REQ, 4, 20, 0, 0, 0x41414141};
    CHECK_EQ(put_words(s.ep, c5, 24, "data", 4), 0);
    CHECK(tlu_err(s.ep, T_CONN_REQ, TBADDATA, 0));
    CHECK_EQ(tlu_state(s.ep), TS_IDLE);
    setup_close(&s);

    /* 2.4 T_CONN_RES and T_DISCON_REQ: options, data */
    CHECK(setup(TLU_COTS, S_WRES, &s));
    t_scalar_t r1[8] = {T_CONN_RES, 0, 40, 20, s.seq};
    CHECK_EQ(put_words(s.ep, r1, 20, NULL, -1), 0);
    CHECK(tlu_err(s.ep, T_CONN_RES, TBADOPT, 0));
    t_scalar_t r2[8] = {T_CONN_RES, 0, 0, 0, s.seq};
    CHECK_EQ(put_words(s.ep, r2, 20, "x", 1), 0);
    CHECK(tlu_err(s.ep, T_CONN_RES, TBADDATA, 0));
    t_scalar_t d1[4] = {T_DISCON_REQ, s.seq};
    CHECK_EQ(put_words(s.ep, d1, 8, "x", 1), 0);
    CHECK(tlu_err(s.ep, T_DISCON_REQ, TBADDATA, 0));
    CHECK_EQ(tlu_state(s.ep), TS_WRES_CIND);
    setup_close(&s);

    /* 2.5 not acknowledged: M_ERROR(EPROTO) */
    const t_scalar_t unknown[] = {99, -1, T_CONN_IND, T_OK_ACK, T_UNITDATA_IND, 30};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        fd = tlu_open(i % 2 ? TLU_CLTS : TLU_COTS);
        CHECK_EQ(put_words(fd, &unknown[i], 4, NULL, -1), 0);
        CHECK(tlu_merror(fd));
        strm_close(fd);
    }
    fd = tlu_open(TLU_COTS); /* shorter than a PRIM_type */
    CHECK_EQ(tlu_put(fd, "ab", 2, NULL, -1, 0), 0);
    CHECK(tlu_merror(fd));
    strm_close(fd);
    CHECK(setup(TLU_COTS, S_XFER, &s)); /* T_DATA_REQ without MORE_flag */
    t_scalar_t dr = T_DATA_REQ;
    CHECK_EQ(put_words(s.ep, &dr, 4, "x", 1), 0);
    CHECK(tlu_merror(s.ep));
    setup_close(&s);
    CHECK(setup(TLU_COTS, S_XFER, &s)); /* T_OPTDATA_REQ with options outside */
    t_scalar_t o1[4] = {T_OPTDATA_REQ, 0, 16, 64};
    CHECK_EQ(put_words(s.ep, o1, 16, "x", 1), 0);
    CHECK(tlu_merror(s.ep));
    setup_close(&s);
    CHECK(setup(TLU_CLTS, S_IDLE, &s)); /* short T_UNITDATA_REQ */
    t_scalar_t u1[4] = {T_UNITDATA_REQ, 4};
    CHECK_EQ(put_words(s.ep, u1, 8, "x", 1), 0);
    CHECK(tlu_merror(s.ep));
    setup_close(&s);
    CHECK(setup(TLU_CLTS, S_IDLE, &s)); /* T_UNITDATA_REQ, DEST outside */
    t_scalar_t u2[8] = {T_UNITDATA_REQ, 4, 200, 0, 0};
    CHECK_EQ(put_words(s.ep, u2, 20, "x", 1), 0);
    CHECK(tlu_merror(s.ep));
    setup_close(&s);
    fd = tlu_open(TLU_CLTS); /* M_DATA on ticlts */
    CHECK_EQ(strm_write(fd, "x", 1), 1);
    CHECK(tlu_merror(fd));
    strm_close(fd);
    fd = tlu_open(TLU_COTS); /* M_DATA before a connection */
    CHECK_EQ(strm_write(fd, "x", 1), 1);
    CHECK(tlu_merror(fd));
    strm_close(fd);
}

int main(void)
{
    t_table();
    t_malformed();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
