/* SPDX-License-Identifier: MIT */
/*
 * test_xti_cots.c -- libxnet over the connection-mode loopback transports
 * /dev/ticots and /dev/ticotsord (XNS Issue 5, the t_* reference pages cited
 * per case): connection establishment (accept on a new endpoint and on the
 * listener), data with T_MORE and TSDU boundaries, expedited data, orderly
 * release in both orders, disconnects, TLOOK, non-blocking TNODATA / TFLOW /
 * T_GODATA, asynchronous connect, t_accept's errors, t_optmgmt with
 * XTI_GENERIC options, and bad input.  Skipped (77) without the transports.
 */
#include <unistd.h>

#include "xti_util.h"

#define COTS "/dev/ticots"
#define ORD "/dev/ticotsord"

static void close3(int a, int b, int c)
{
    CHECK_EQ(t_close(a), 0);
    CHECK_EQ(t_close(b), 0);
    CHECK_EQ(t_close(c), 0);
}

/* t_open: t_info of ticots; t_listen/t_accept onto a new endpoint; t_getprotaddr. */
static void test_establish(void)
{
    struct t_info info;
    struct xti_addr la, a1, a2;
    struct t_bind b1, b2;
    int cli, lis, acc, fd;

    fd = t_open(COTS, O_RDWR, &info);
    CHECK(fd >= 0);
    CHECK_EQ(info.servtype, T_COTS);
    CHECK(info.tsdu == T_INFINITE || info.tsdu > 0);
    CHECK_EQ(t_getstate(fd), T_UNBND);
    XCHECK_OK(t_getinfo(fd, &info));
    CHECK_EQ(info.servtype, T_COTS);
    t_close(fd);

    if (!CHECK_EQ(xti_pair(COTS, &cli, &lis, &acc), 0))
        return;
    CHECK_EQ(t_getstate(cli), T_DATAXFER);
    CHECK_EQ(t_getstate(acc), T_DATAXFER);
    CHECK_EQ(t_getstate(lis), T_IDLE);
    /* t_getprotaddr: the client's peer is the acceptor's local address */
    memset(&b1, 0, sizeof(b1));
    memset(&b2, 0, sizeof(b2));
    b1.addr.buf = a1.buf;
    b1.addr.maxlen = sizeof(a1.buf);
    b2.addr.buf = a2.buf;
    b2.addr.maxlen = sizeof(a2.buf);
    XCHECK_OK(t_getprotaddr(cli, NULL, &b2));
    CHECK(b2.addr.len > 0);
    XCHECK_OK(t_getprotaddr(lis, &b1, NULL));
    memcpy(la.buf, a1.buf, b1.addr.len);
    la.len = b1.addr.len;
    CHECK(la.len > 0);
    /* t_sync agrees with the library */
    CHECK_EQ(t_sync(cli), T_DATAXFER);
    CHECK_EQ(t_sync(lis), T_IDLE);
    close3(cli, lis, acc);
}

/* t_accept(fd, fd, call): the listener itself becomes the connection. */
static void test_accept_self(void)
{
    struct xti_addr la;
    struct t_call call;
    char buf[16];
    int flags, lis, cli;

    lis = xti_bound(COTS, 1, NULL, 0, &la);
    cli = xti_bound(COTS, 0, NULL, 0, NULL);
    xti_set_nb(cli, 1);
    XCHECK_ERR(xti_connect_to(cli, &la), TNODATA);
    CHECK_EQ(t_getstate(cli), T_OUTCON);
    XCHECK_ERR(t_rcvconnect(cli, NULL), TNODATA); /* not accepted yet */
    memset(&call, 0, sizeof(call));
    XCHECK_OK(t_listen(lis, &call));
    CHECK_EQ(t_getstate(lis), T_INCON);
    XCHECK_OK(t_accept(lis, lis, &call));
    CHECK_EQ(t_getstate(lis), T_DATAXFER);
    XCHECK_OK(t_rcvconnect(cli, NULL));
    CHECK_EQ(t_getstate(cli), T_DATAXFER);
    xti_set_nb(cli, 0);
    CHECK_EQ(t_snd(cli, "ping", 4, 0), 4);
    CHECK_EQ(t_rcv(lis, buf, sizeof(buf), &flags), 4);
    CHECK(memcmp(buf, "ping", 4) == 0 && flags == 0);
    t_close(cli);
    t_close(lis);
}

/* t_snd/t_rcv: T_MORE marks TSDU fragments; a small buffer splits a TSDU with T_MORE. */
static void test_data_more(void)
{
    char buf[64];
    int cli, lis, acc, flags;

    if (xti_pair(COTS, &cli, &lis, &acc) != 0)
        return;
    CHECK_EQ(t_snd(cli, "abc", 3, T_MORE), 3);
    CHECK_EQ(t_snd(cli, "def", 3, 0), 3);
    CHECK_EQ(t_snd(cli, "0123456789", 10, 0), 10);
    CHECK_EQ(t_look(acc), T_DATA);
    CHECK_EQ(t_rcv(acc, buf, sizeof(buf), &flags), 3);
    CHECK(memcmp(buf, "abc", 3) == 0 && flags == T_MORE);
    CHECK_EQ(t_rcv(acc, buf, sizeof(buf), &flags), 3);
    CHECK(memcmp(buf, "def", 3) == 0 && flags == 0);
    CHECK_EQ(t_rcv(acc, buf, 4, &flags), 4);
    CHECK(memcmp(buf, "0123", 4) == 0 && flags == T_MORE);
    CHECK_EQ(t_rcv(acc, buf, 4, &flags), 4);
    CHECK(memcmp(buf, "4567", 4) == 0 && flags == T_MORE);
    CHECK_EQ(t_rcv(acc, buf, 4, &flags), 2);
    CHECK(memcmp(buf, "89", 2) == 0 && flags == 0);
    /* a fragment cut by a small buffer keeps the sender's T_MORE on its last piece */
    CHECK_EQ(t_snd(cli, "xyzw", 4, T_MORE), 4);
    CHECK_EQ(t_snd(cli, "!", 1, 0), 1);
    CHECK_EQ(t_rcv(acc, buf, 2, &flags), 2);
    CHECK_EQ(flags, T_MORE);
    CHECK_EQ(t_rcv(acc, buf, 2, &flags), 2);
    CHECK_EQ(flags, T_MORE);
    CHECK_EQ(t_rcv(acc, buf, 2, &flags), 1);
    CHECK_EQ(flags, 0);
    /* t_sndv / t_rcvv */
    struct t_iovec iv[2] = {{"he", 2}, {"llo", 3}};
    char r1[3], r2[8];
    struct t_iovec ov[2] = {{r1, 3}, {r2, 8}};
    CHECK_EQ(t_sndv(cli, iv, 2, 0), 5);
    CHECK_EQ(t_rcvv(acc, ov, 2, &flags), 5);
    CHECK(memcmp(r1, "hel", 3) == 0 && memcmp(r2, "lo", 2) == 0 && flags == 0);
    XCHECK_ERR(t_sndv(cli, iv, T_IOV_MAX + 1, 0), TBADDATA);
    /* zero-length TSDU: ticots sets T_SENDZERO */
    struct t_info info;
    t_getinfo(cli, &info);
    if (info.flags & T_SENDZERO) {
        CHECK_EQ(t_snd(cli, buf, 0, 0), 0);
        CHECK_EQ(t_rcv(acc, buf, sizeof(buf), &flags), 0);
        CHECK_EQ(flags, 0);
    }
    /* bad flags */
    XCHECK_ERR(t_snd(cli, "x", 1, 0x400), TBADFLAG);
    close3(cli, lis, acc);
}

/* Expedited data: T_EXPEDITED in t_snd, T_EXDATA from t_look, ahead of normal data. */
static void test_expedited(void)
{
    char buf[16];
    int cli, lis, acc, flags, nexp = 0, nnorm = 0;

    if (xti_pair(COTS, &cli, &lis, &acc) != 0)
        return;
    CHECK_EQ(t_snd(cli, "n", 1, 0), 1);
    CHECK_EQ(t_snd(cli, "EX", 2, T_EXPEDITED), 2);
    CHECK_EQ(t_look(acc), T_EXDATA);
    for (int i = 0; i < 2; i++) {
        int n = t_rcv(acc, buf, sizeof(buf), &flags);
        if (flags & T_EXPEDITED) {
            nexp++;
            CHECK(n == 2 && memcmp(buf, "EX", 2) == 0);
            CHECK_EQ(i, 0); /* expedited first */
        } else {
            nnorm++;
            CHECK(n == 1 && buf[0] == 'n');
        }
    }
    CHECK(nexp == 1 && nnorm == 1);
    /* an ETSDU read through a small buffer: T_EXPEDITED on every piece, T_MORE on all but the last */
    CHECK_EQ(t_snd(cli, "norm", 4, 0), 4);
    CHECK_EQ(t_snd(cli, "EXPED", 5, T_EXPEDITED), 5);
    CHECK_EQ(t_rcv(acc, buf, 2, &flags), 2);
    CHECK_EQ(flags, T_EXPEDITED | T_MORE);
    CHECK_EQ(t_rcv(acc, buf, 2, &flags), 2);
    CHECK_EQ(flags, T_EXPEDITED | T_MORE);
    CHECK_EQ(t_rcv(acc, buf, 2, &flags), 1);
    CHECK_EQ(flags, T_EXPEDITED);
    CHECK_EQ(t_rcv(acc, buf, sizeof(buf), &flags), 4);
    CHECK_EQ(flags, 0);
    close3(cli, lis, acc);
}

/* XNS 5 t_rcvconnect [TBUFOVFLW]: the endpoint is connected all the same (T_DATAXFER). */
static void test_rcvconnect_ovfl(void)
{
    struct xti_addr la;
    struct t_call call, small;
    char tiny[1];
    int lis, cli, acc;

    lis = xti_bound(COTS, 1, NULL, 0, &la);
    cli = xti_bound(COTS, 0, NULL, 0, NULL);
    acc = t_open(COTS, O_RDWR, NULL);
    xti_set_nb(cli, 1);
    XCHECK_ERR(xti_connect_to(cli, &la), TNODATA);
    memset(&call, 0, sizeof(call));
    XCHECK_OK(t_listen(lis, &call));
    XCHECK_OK(t_accept(lis, acc, &call));
    memset(&small, 0, sizeof(small));
    small.addr.buf = tiny;
    small.addr.maxlen = 1;
    XCHECK_ERR(t_rcvconnect(cli, &small), TBUFOVFLW);
    CHECK_EQ(t_getstate(cli), T_DATAXFER);
    close3(cli, lis, acc);
}

/* Orderly release (t_sndrel, t_rcvrel) on ticotsord, both orders, with data in the half-open side. */
static void test_ordrel(int client_first)
{
    char buf[16];
    int cli, lis, acc, flags, a, b;

    if (xti_pair(ORD, &cli, &lis, &acc) != 0)
        return;
    a = client_first ? cli : acc;
    b = client_first ? acc : cli;
    CHECK_EQ(t_snd(a, "last", 4, 0), 4);
    XCHECK_OK(t_sndrel(a));
    CHECK_EQ(t_getstate(a), T_OUTREL);
    XCHECK_ERR(t_snd(a, "x", 1, 0), TOUTSTATE);
    CHECK_EQ(t_look(b), T_DATA);
    CHECK_EQ(t_rcv(b, buf, sizeof(buf), &flags), 4);
    XCHECK_ERR(t_rcv(b, buf, sizeof(buf), &flags), TLOOK);
    CHECK_EQ(t_look(b), T_ORDREL);
    XCHECK_OK(t_rcvrel(b));
    CHECK_EQ(t_getstate(b), T_INREL);
    XCHECK_ERR(t_rcv(b, buf, sizeof(buf), &flags), TOUTSTATE);
    CHECK_EQ(t_snd(b, "reply", 5, 0), 5);
    CHECK_EQ(t_rcv(a, buf, sizeof(buf), &flags), 5);
    XCHECK_ERR(t_rcvrel(a), TNOREL);
    XCHECK_OK(t_sndrel(b));
    CHECK_EQ(t_getstate(b), T_IDLE);
    CHECK_EQ(t_look(a), T_ORDREL);
    XCHECK_OK(t_rcvreldata(a, NULL));
    CHECK_EQ(t_getstate(a), T_IDLE);
    /* ticots has no orderly release */
    close3(cli, lis, acc);
    if (xti_pair(COTS, &cli, &lis, &acc) != 0)
        return;
    XCHECK_ERR(t_sndrel(cli), TNOTSUPPORT);
    XCHECK_ERR(t_rcvrel(cli), TNOTSUPPORT);
    close3(cli, lis, acc);
}

/* t_snddis / t_rcvdis: abortive release; TLOOK and T_DISCONNECT at the peer; refusing an indication. */
static void test_disconnect(void)
{
    struct xti_addr la;
    struct t_call call;
    struct t_discon dis;
    char buf[16];
    int cli, lis, acc, flags;

    if (xti_pair(COTS, &cli, &lis, &acc) != 0)
        return;
    XCHECK_ERR(t_rcvdis(acc, NULL), TNODIS);
    XCHECK_OK(t_snddis(cli, NULL));
    CHECK_EQ(t_getstate(cli), T_IDLE);
    XCHECK_ERR(t_rcv(acc, buf, sizeof(buf), &flags), TLOOK);
    CHECK_EQ(t_look(acc), T_DISCONNECT);
    XCHECK_ERR(t_snd(acc, "x", 1, 0), TLOOK);
    memset(&dis, 0, sizeof(dis));
    XCHECK_OK(t_rcvdis(acc, &dis));
    CHECK_EQ(t_getstate(acc), T_IDLE);
    CHECK(dis.reason != 0);
    CHECK_EQ(t_look(acc), 0);
    close3(cli, lis, acc);

    /* refusing a connection indication: the caller sees T_DISCONNECT in T_OUTCON */
    lis = xti_bound(COTS, 2, NULL, 0, &la);
    cli = xti_bound(COTS, 0, NULL, 0, NULL);
    xti_set_nb(cli, 1);
    XCHECK_ERR(xti_connect_to(cli, &la), TNODATA);
    memset(&call, 0, sizeof(call));
    XCHECK_OK(t_listen(lis, &call));
    XCHECK_ERR(t_snddis(lis, NULL), TBADSEQ);
    XCHECK_OK(t_snddis(lis, &call));
    CHECK_EQ(t_getstate(lis), T_IDLE);
    XCHECK_ERR(t_rcvconnect(cli, NULL), TLOOK);
    CHECK_EQ(t_look(cli), T_DISCONNECT);
    memset(&dis, 0, sizeof(dis));
    XCHECK_OK(t_rcvdis(cli, &dis));
    CHECK_EQ(t_getstate(cli), T_IDLE);
    /* the caller gives up: the listener sees the indication withdrawn */
    XCHECK_ERR(xti_connect_to(cli, &la), TNODATA);
    XCHECK_OK(t_listen(lis, &call));
    XCHECK_OK(t_snddis(cli, NULL));
    CHECK_EQ(t_getstate(cli), T_IDLE);
    CHECK_EQ(t_look(lis), T_DISCONNECT);
    memset(&dis, 0, sizeof(dis));
    XCHECK_OK(t_rcvdis(lis, &dis));
    CHECK_EQ(dis.sequence, call.sequence);
    CHECK_EQ(t_getstate(lis), T_IDLE);
    t_close(cli);
    t_close(lis);
}

/* Non-blocking: TNODATA from t_rcv and t_listen; TFLOW, then T_GODATA once the peer drains. */
static void test_nonblock(void)
{
    static char big[4096];
    char buf[4096];
    int cli, lis, acc, flags, n = 0, rc = 0;

    if (xti_pair(COTS, &cli, &lis, &acc) != 0)
        return;
    xti_set_nb(acc, 1);
    XCHECK_ERR(t_rcv(acc, buf, sizeof(buf), &flags), TNODATA);
    xti_set_nb(lis, 1);
    XCHECK_ERR(t_listen(lis, NULL), TNODATA);
    xti_set_nb(cli, 1);
    for (n = 0; n < 100000; n++) {
        rc = t_snd(cli, big, sizeof(big), 0);
        if (rc < 0)
            break;
    }
    CHECK(rc == -1 && t_errno == TFLOW);
    CHECK(n > 0);
    long got = 0;
    while (t_rcv(acc, buf, sizeof(buf), &flags) > 0)
        got++;
    CHECK_EQ(t_errno, TNODATA);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(t_look(cli), T_GODATA);
    CHECK_EQ(t_snd(cli, big, 10, 0), 10);
    close3(cli, lis, acc);
}

/* t_accept errors: TINDOUT, TRESQLEN, TPROVMISMATCH, TBADSEQ, TOUTSTATE; t_listen TQFULL; TBUFOVFLW. */
static void test_accept_errors(void)
{
    struct xti_addr la;
    struct t_call call, call2, small;
    char tiny[1];
    int lis, c1, c2, res, other, bound;

    lis = xti_bound(COTS, 2, NULL, 0, &la);
    c1 = xti_bound(COTS, 0, NULL, 0, NULL);
    c2 = xti_bound(COTS, 0, NULL, 0, NULL);
    xti_set_nb(c1, 1);
    xti_set_nb(c2, 1);
    XCHECK_ERR(xti_connect_to(c1, &la), TNODATA);
    XCHECK_ERR(xti_connect_to(c2, &la), TNODATA);
    memset(&call, 0, sizeof(call));
    memset(&call2, 0, sizeof(call2));
    XCHECK_OK(t_listen(lis, &call));
    /* t_listen TBUFOVFLW: the endpoint still goes to T_INCON, sequence returned */
    memset(&small, 0, sizeof(small));
    small.addr.buf = tiny;
    small.addr.maxlen = 1;
    XCHECK_ERR(t_listen(lis, &small), TBUFOVFLW);
    CHECK_EQ(t_getstate(lis), T_INCON);
    call2.sequence = small.sequence;
    XCHECK_ERR(t_listen(lis, NULL), TQFULL); /* qlen 2, two outstanding */
    XCHECK_ERR(t_accept(lis, lis, &call), TINDOUT);
    res = t_open(ORD, O_RDWR, NULL);
    XCHECK_ERR(t_accept(lis, res, &call), TPROVMISMATCH);
    t_close(res);
    bound = xti_bound(COTS, 1, NULL, 0, NULL);
    XCHECK_ERR(t_accept(lis, bound, &call), TRESQLEN);
    t_close(bound);
    res = t_open(COTS, O_RDWR, NULL);
    struct t_call bad = call;
    bad.sequence = call.sequence + call2.sequence + 1000;
    XCHECK_ERR(t_accept(lis, res, &bad), TBADSEQ);
    XCHECK_OK(t_accept(lis, res, &call));
    CHECK_EQ(t_getstate(lis), T_INCON);
    CHECK_EQ(t_getstate(res), T_DATAXFER);
    other = t_open(COTS, O_RDWR, NULL);
    XCHECK_ERR(t_accept(lis, res, &call2), TOUTSTATE); /* res is connected */
    XCHECK_OK(t_accept(lis, other, &call2));
    CHECK_EQ(t_getstate(lis), T_IDLE);
    XCHECK_ERR(t_accept(lis, other, &call2), TOUTSTATE);
    XCHECK_OK(t_rcvconnect(c1, NULL));
    XCHECK_OK(t_rcvconnect(c2, NULL));
    t_close(other);
    t_close(res);
    t_close(c1);
    t_close(c2);
    t_close(lis);
}

/* XNS 5 t_optmgmt with XTI_GENERIC: T_DEFAULT, T_NEGOTIATE, T_CURRENT, T_CHECK; TBADOPT, TBADFLAG. */
static void test_optmgmt(void)
{
    struct {
        struct t_opthdr h;
        t_uscalar_t v;
    } req, ret;
    struct t_optmgmt r, o;
    int fd = xti_bound(COTS, 0, NULL, 0, NULL);

    memset(&req, 0, sizeof(req));
    req.h.len = sizeof(req);
    req.h.level = XTI_GENERIC;
    req.h.name = XTI_SNDBUF;
    req.v = 12345;
    memset(&r, 0, sizeof(r));
    memset(&o, 0, sizeof(o));
    r.opt.buf = (char *)&req;
    r.opt.len = sizeof(req);
    o.opt.buf = (char *)&ret;
    o.opt.maxlen = sizeof(ret);

    r.flags = T_DEFAULT;
    XCHECK_OK(t_optmgmt(fd, &r, &o));
    CHECK_EQ(o.opt.len, sizeof(ret));
    CHECK(ret.h.level == XTI_GENERIC && ret.h.name == XTI_SNDBUF);
    t_uscalar_t def = ret.v;

    r.flags = T_NEGOTIATE;
    XCHECK_OK(t_optmgmt(fd, &r, &o));
    CHECK(o.flags == T_SUCCESS || o.flags == T_PARTSUCCESS);
    CHECK(ret.h.status == T_SUCCESS || ret.h.status == T_PARTSUCCESS);
    t_uscalar_t set = ret.v;

    r.flags = T_CURRENT;
    XCHECK_OK(t_optmgmt(fd, &r, &o));
    CHECK_EQ(ret.v, set);
    CHECK(set != def || set == 12345);

    r.flags = T_CHECK;
    XCHECK_OK(t_optmgmt(fd, &r, &o));
    CHECK(o.flags == T_SUCCESS || o.flags == T_PARTSUCCESS);

    r.flags = T_NEGOTIATE | T_CHECK;
    XCHECK_ERR(t_optmgmt(fd, &r, &o), TBADFLAG);
    r.flags = T_NEGOTIATE;
    req.h.len = 3; /* shorter than a header */
    XCHECK_ERR(t_optmgmt(fd, &r, &o), TBADOPT);
    req.h.len = sizeof(req);
    /* the answer does not fit: TBUFOVFLW */
    o.opt.maxlen = 4;
    r.flags = T_CURRENT;
    XCHECK_ERR(t_optmgmt(fd, &r, &o), TBUFOVFLW);
    t_close(fd);
}

/* Bad input: TBADADDR, TBADDATA, TBUFOVFLW in t_bind, TOUTSTATE, t_alloc sizes. */
static void test_bad_input(void)
{
    char big[4096], abuf[1];
    struct t_bind req, ret;
    struct t_call call;
    struct t_info info;
    int fd = t_open(COTS, O_RDWR, &info), fd2;

    memset(big, 'a', sizeof(big));
    memset(&req, 0, sizeof(req));
    req.addr.buf = big;
    req.addr.len = sizeof(big); /* beyond ADDR_size */
    XCHECK_ERR(t_bind(fd, &req, NULL), TBADADDR);
    CHECK_EQ(t_getstate(fd), T_UNBND);
    /* TBUFOVFLW from t_bind: bound all the same */
    memset(&ret, 0, sizeof(ret));
    ret.addr.buf = abuf;
    ret.addr.maxlen = 1;
    XCHECK_ERR(t_bind(fd, NULL, &ret), TBUFOVFLW);
    CHECK_EQ(t_getstate(fd), T_IDLE);
    XCHECK_ERR(t_bind(fd, NULL, NULL), TOUTSTATE);
    memset(&call, 0, sizeof(call));
    call.addr.buf = big;
    call.addr.len = sizeof(big);
    XCHECK_ERR(t_connect(fd, &call, NULL), TBADADDR);
    call.addr.len = 4;
    call.udata.buf = big;
    call.udata.len = 8; /* ticots takes no connect data */
    if (info.connect == T_INVALID)
        XCHECK_ERR(t_connect(fd, &call, NULL), TBADDATA);
    /* an address nobody is bound to: the connection is refused */
    call.udata.len = 0;
    memcpy(big, "\xff\xfe\xfd\xfc", 4);
    fd2 = t_open(COTS, O_RDWR, NULL);
    XCHECK_OK(t_bind(fd2, NULL, NULL));
    int rc = t_connect(fd2, &call, NULL);
    CHECK(rc == -1 && (t_errno == TLOOK || t_errno == TBADADDR));
    if (rc == -1 && t_errno == TLOOK) {
        CHECK_EQ(t_look(fd2), T_DISCONNECT);
        XCHECK_OK(t_rcvdis(fd2, NULL));
    }
    CHECK_EQ(t_getstate(fd2), T_IDLE);
    XCHECK_ERR(t_listen(fd2, NULL), TBADQLEN);
    /* t_alloc: buffers sized from t_info; T_INVALID connect data named explicitly: TSYSERR/EINVAL */
    struct t_call *c = t_alloc(fd, T_CALL, T_ALL);
    CHECK(c != NULL);
    if (c) {
        CHECK(c->addr.buf != NULL && (int)c->addr.maxlen == info.addr);
        CHECK(c->udata.maxlen == 0 || info.connect != T_INVALID);
        t_free(c, T_CALL);
    }
    if (info.connect == T_INVALID) {
        CHECK(t_alloc(fd, T_CALL, T_UDATA) == NULL && t_errno == TSYSERR && errno == EINVAL);
    }
    CHECK(t_alloc(fd, T_UNITDATA, T_ALL) == NULL && t_errno == TNOSTRUCTYPE);
    CHECK(t_alloc(fd, 42, T_ALL) == NULL && t_errno == TNOSTRUCTYPE);
    struct t_info *ip = t_alloc(fd, T_INFO, 0);
    CHECK(ip != NULL);
    t_free(ip, T_INFO);
    XCHECK_OK(t_unbind(fd));
    CHECK_EQ(t_getstate(fd), T_UNBND);
    XCHECK_ERR(t_unbind(fd), TOUTSTATE);
    t_close(fd);
    t_close(fd2);
}

int main(void)
{
    xti_require(COTS);
    xti_require(ORD);
    test_establish();
    test_accept_self();
    test_data_more();
    test_expedited();
    test_rcvconnect_ovfl();
    test_ordrel(1);
    test_ordrel(0);
    test_disconnect();
    test_nonblock();
    test_accept_errors();
    test_optmgmt();
    test_bad_input();
    return xti_finish();
}
