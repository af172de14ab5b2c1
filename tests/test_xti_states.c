/* SPDX-License-Identifier: MIT */
/*
 * test_xti_states.c -- the XNS Issue 5 state tables (Appendix "State
 * Tables"; each t_* page's [TOUTSTATE]) as test tables, on ticots,
 * ticotsord and ticlts:
 *   1. every function, called in every state reachable on the provider
 *      where XNS does not allow it, fails with TOUTSTATE (TNOTSUPPORT where
 *      the provider's service type lacks the function) and leaves the
 *      state as it was;
 *   2. every allowed transition (state, action) leads to the state the
 *      table names.
 */
#include "xti_util.h"

#define COTS "/dev/ticots"
#define ORD "/dev/ticotsord"
#define CLTS "/dev/ticlts"

#define S(x) (1u << (x))
#define ALL (S(T_UNBND) | S(T_IDLE) | S(T_OUTCON) | S(T_INCON) | S(T_DATAXFER) | S(T_OUTREL) | S(T_INREL))

/* An endpoint brought to a state, with the helper endpoints that keep it there. */
struct ep {
    int fd;
    int h[3];
    int seq; /* T_INCON: the indication's sequence number */
};

static void ep_close(struct ep *e)
{
    if (e->fd >= 0)
        t_close(e->fd);
    for (int i = 0; i < 3; i++)
        if (e->h[i] >= 0)
            t_close(e->h[i]);
}

static int make_state(const char *prov, int st, struct ep *e)
{
    struct xti_addr la;
    struct t_call call;

    e->fd = e->h[0] = e->h[1] = e->h[2] = -1;
    switch (st) {
    case T_UNBND:
        e->fd = t_open(prov, O_RDWR, NULL);
        break;
    case T_IDLE:
        e->fd = xti_bound(prov, 0, NULL, 0, NULL);
        break;
    case T_OUTCON:
        e->h[0] = xti_bound(prov, 1, NULL, 0, &la);
        e->fd = xti_bound(prov, 0, NULL, 0, NULL);
        xti_set_nb(e->fd, 1);
        xti_connect_to(e->fd, &la);
        xti_set_nb(e->fd, 0);
        break;
    case T_INCON:
        e->fd = xti_bound(prov, 1, NULL, 0, &la);
        e->h[0] = xti_bound(prov, 0, NULL, 0, NULL);
        xti_set_nb(e->h[0], 1);
        xti_connect_to(e->h[0], &la);
        memset(&call, 0, sizeof(call));
        t_listen(e->fd, &call);
        e->seq = call.sequence;
        break;
    case T_DATAXFER:
    case T_OUTREL:
    case T_INREL:
        if (xti_pair(prov, &e->fd, &e->h[0], &e->h[1]) != 0)
            break;
        if (st == T_OUTREL)
            t_sndrel(e->fd);
        if (st == T_INREL) {
            t_sndrel(e->h[1]);
            ustreams_quiesce(5000);
            t_rcvrel(e->fd);
        }
        break;
    }
    return CHECK_EQ(t_getstate(e->fd), st) ? 0 : -1;
}

/* ---- the probes: each calls one function with arguments valid but for the state ---- */
static char pbuf[16];
static struct xti_addr paddr = {.buf = "\1\2\3\4", .len = 4};

static int p_bind(int fd) { return t_bind(fd, NULL, NULL); }
static int p_unbind(int fd) { return t_unbind(fd); }
static int p_connect(int fd) { return xti_connect_to(fd, &paddr); }
static int p_rcvconnect(int fd) { return t_rcvconnect(fd, NULL); }
static int p_listen(int fd) { return t_listen(fd, NULL); }
static int p_accept(int fd)
{
    struct t_call call;
    struct t_info in;
    char name[32];
    int rc, res;

    memset(&call, 0, sizeof(call));
    t_getinfo(fd, &in);
    snprintf(name, sizeof(name), "%s",
             in.servtype == T_COTS ? COTS : in.servtype == T_COTS_ORD ? ORD : CLTS);
    res = t_open(name, O_RDWR, NULL);
    rc = t_accept(fd, res, &call);
    int e = t_errno;
    t_close(res);
    t_errno = e;
    return rc;
}
static int p_snd(int fd) { return t_snd(fd, "x", 1, 0); }
static int p_rcv(int fd)
{
    int fl;
    return t_rcv(fd, pbuf, sizeof(pbuf), &fl);
}
static int p_snddis(int fd) { return t_snddis(fd, NULL); }
static int p_rcvdis(int fd) { return t_rcvdis(fd, NULL); }
static int p_sndrel(int fd) { return t_sndrel(fd); }
static int p_rcvrel(int fd) { return t_rcvrel(fd); }
static int p_sndudata(int fd)
{
    struct t_unitdata ud;
    memset(&ud, 0, sizeof(ud));
    ud.addr.buf = paddr.buf;
    ud.addr.len = paddr.len;
    ud.udata.buf = "x";
    ud.udata.len = 1;
    return t_sndudata(fd, &ud);
}
static int p_rcvudata(int fd)
{
    struct t_unitdata ud;
    int fl;
    memset(&ud, 0, sizeof(ud));
    ud.udata.buf = pbuf;
    ud.udata.maxlen = sizeof(pbuf);
    return t_rcvudata(fd, &ud, &fl);
}
static int p_rcvuderr(int fd) { return t_rcvuderr(fd, NULL); }

/* allowed states per service type: connection mode (COTS, COTS_ORD), connectionless (0 = TNOTSUPPORT) */
static const struct probe {
    const char *name;
    int (*fn)(int);
    unsigned cots, ord, clts; /* allowed states; ~0u: not supported at all */
} probes[] = {
    {"t_bind", p_bind, S(T_UNBND), S(T_UNBND), S(T_UNBND)},
    {"t_unbind", p_unbind, S(T_IDLE), S(T_IDLE), S(T_IDLE)},
    {"t_connect", p_connect, S(T_IDLE), S(T_IDLE), ~0u},
    {"t_rcvconnect", p_rcvconnect, S(T_OUTCON), S(T_OUTCON), ~0u},
    {"t_listen", p_listen, S(T_IDLE) | S(T_INCON), S(T_IDLE) | S(T_INCON), ~0u},
    {"t_accept", p_accept, S(T_INCON), S(T_INCON), ~0u},
    {"t_snd", p_snd, S(T_DATAXFER) | S(T_INREL), S(T_DATAXFER) | S(T_INREL), ~0u},
    {"t_rcv", p_rcv, S(T_DATAXFER) | S(T_OUTREL), S(T_DATAXFER) | S(T_OUTREL), ~0u},
    {"t_snddis", p_snddis, ALL & ~(S(T_UNBND) | S(T_IDLE)), ALL & ~(S(T_UNBND) | S(T_IDLE)), ~0u},
    {"t_rcvdis", p_rcvdis, ALL & ~(S(T_UNBND) | S(T_IDLE)), ALL & ~(S(T_UNBND) | S(T_IDLE)), ~0u},
    {"t_sndrel", p_sndrel, ~0u, S(T_DATAXFER) | S(T_INREL), ~0u},
    {"t_rcvrel", p_rcvrel, ~0u, S(T_DATAXFER) | S(T_OUTREL), ~0u},
    {"t_sndudata", p_sndudata, ~0u, ~0u, S(T_IDLE)},
    {"t_rcvudata", p_rcvudata, ~0u, ~0u, S(T_IDLE)},
    {"t_rcvuderr", p_rcvuderr, ~0u, ~0u, S(T_IDLE)},
};

static void table_disallowed(const char *prov, int servtype)
{
    int nstates = servtype == T_CLTS ? 2 : servtype == T_COTS ? 5 : 7;
    static const int states[] = {T_UNBND, T_IDLE, T_OUTCON, T_INCON, T_DATAXFER, T_OUTREL, T_INREL};

    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        const struct probe *p = &probes[i];
        unsigned allowed = servtype == T_COTS ? p->cots : servtype == T_COTS_ORD ? p->ord : p->clts;
        for (int k = 0; k < nstates; k++) {
            int st = states[k], want, rc;
            struct ep e;
            if (allowed != ~0u && (allowed & S(st)))
                continue; /* allowed: covered by the transitions and the other tests */
            if (make_state(prov, st, &e) == 0) {
                want = allowed == ~0u ? TNOTSUPPORT : TOUTSTATE;
                rc = p->fn(e.fd);
                if (!CHECK(rc == -1 && t_errno == want))
                    fprintf(stderr, "  %s %s in state %d: rc %d t_errno %d, want %d\n", prov,
                            p->name, st, rc, t_errno, want);
                CHECK_EQ(t_getstate(e.fd), st);
            }
            ep_close(&e);
        }
    }
}

/* The allowed transitions of connection mode (and ticlts' bind/unbind). */
static void transitions(const char *prov, int ord)
{
    struct ep e;
    struct t_call call;

    /* T_UNBND --t_bind--> T_IDLE --t_unbind--> T_UNBND */
    make_state(prov, T_UNBND, &e);
    XCHECK_OK(t_bind(e.fd, NULL, NULL));
    CHECK_EQ(t_getstate(e.fd), T_IDLE);
    XCHECK_OK(t_unbind(e.fd));
    CHECK_EQ(t_getstate(e.fd), T_UNBND);
    ep_close(&e);
    if (!strcmp(prov, CLTS))
        return;
    /* T_OUTCON --t_snddis--> T_IDLE */
    if (make_state(prov, T_OUTCON, &e) == 0) {
        XCHECK_OK(t_snddis(e.fd, NULL));
        CHECK_EQ(t_getstate(e.fd), T_IDLE);
    }
    ep_close(&e);
    /* T_INCON --t_snddis(seq)--> T_IDLE; --t_accept(self)--> T_DATAXFER */
    if (make_state(prov, T_INCON, &e) == 0) {
        memset(&call, 0, sizeof(call));
        xti_set_nb(e.fd, 1);
        CHECK_EQ(t_listen(e.fd, &call), -1); /* already listened: TQFULL (qlen 1) */
        xti_set_nb(e.fd, 0);
    }
    ep_close(&e);
    if (make_state(prov, T_INCON, &e) == 0) {
        memset(&call, 0, sizeof(call));
        call.sequence = e.seq;
        XCHECK_OK(t_snddis(e.fd, &call));
        CHECK_EQ(t_getstate(e.fd), T_IDLE);
    }
    ep_close(&e);
    if (make_state(prov, T_INCON, &e) == 0) {
        memset(&call, 0, sizeof(call));
        call.sequence = e.seq;
        XCHECK_OK(t_accept(e.fd, e.fd, &call));
        CHECK_EQ(t_getstate(e.fd), T_DATAXFER);
        XCHECK_OK(t_rcvconnect(e.h[0], NULL));
        CHECK_EQ(t_getstate(e.h[0]), T_DATAXFER);
    }
    ep_close(&e);
    /* T_DATAXFER --t_snddis--> T_IDLE; peer --t_rcvdis--> T_IDLE */
    if (make_state(prov, T_DATAXFER, &e) == 0) {
        XCHECK_OK(t_snddis(e.fd, NULL));
        CHECK_EQ(t_getstate(e.fd), T_IDLE);
        XCHECK_OK(t_rcvdis(e.h[1], NULL));
        CHECK_EQ(t_getstate(e.h[1]), T_IDLE);
    }
    ep_close(&e);
    if (!ord)
        return;
    /* T_OUTREL --t_rcvrel--> T_IDLE; T_INREL --t_sndrel--> T_IDLE */
    if (make_state(prov, T_OUTREL, &e) == 0) {
        XCHECK_OK(t_rcvrel(e.h[1]));
        CHECK_EQ(t_getstate(e.h[1]), T_INREL);
        XCHECK_OK(t_sndrel(e.h[1]));
        CHECK_EQ(t_getstate(e.h[1]), T_IDLE);
        XCHECK_OK(t_rcvrel(e.fd));
        CHECK_EQ(t_getstate(e.fd), T_IDLE);
    }
    ep_close(&e);
    /* T_OUTREL / T_INREL --t_snddis--> T_IDLE */
    if (make_state(prov, T_OUTREL, &e) == 0) {
        XCHECK_OK(t_snddis(e.fd, NULL));
        CHECK_EQ(t_getstate(e.fd), T_IDLE);
    }
    ep_close(&e);
    if (make_state(prov, T_INREL, &e) == 0) {
        XCHECK_OK(t_snddis(e.fd, NULL));
        CHECK_EQ(t_getstate(e.fd), T_IDLE);
    }
    ep_close(&e);
}

int main(void)
{
    xti_require(COTS);
    xti_require(ORD);
    xti_require(CLTS);
    table_disallowed(COTS, T_COTS);
    table_disallowed(ORD, T_COTS_ORD);
    table_disallowed(CLTS, T_CLTS);
    transitions(COTS, 0);
    transitions(ORD, 1);
    transitions(CLTS, 0);
    return xti_finish();
}
