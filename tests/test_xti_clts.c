/* SPDX-License-Identifier: MIT */
/*
 * test_xti_clts.c -- libxnet over /dev/ticlts (XNS Issue 5 t_sndudata,
 * t_rcvudata, t_sndvudata, t_rcvvudata, t_rcvuderr): datagrams with their
 * source address, T_MORE for a buffer smaller than the TSDU, TBUFOVFLW for
 * a small address buffer, t_rcvuderr after a send to an unbound address,
 * TLOOK/T_UDERR, TNODATA, the connection functions' TNOTSUPPORT.
 */
#include "xti_util.h"

#define CLTS "/dev/ticlts"

static void test_unitdata(void)
{
    struct xti_addr a1, a2;
    struct t_unitdata ud, in;
    char buf[64], abuf[256], tiny[1];
    int s, r, flags;

    s = xti_bound(CLTS, 0, NULL, 0, &a1);
    r = xti_bound(CLTS, 0, NULL, 0, &a2);
    if (s < 0 || r < 0)
        return;
    CHECK_EQ(t_getstate(s), T_IDLE);
    memset(&ud, 0, sizeof(ud));
    ud.addr.buf = a2.buf;
    ud.addr.len = a2.len;
    ud.udata.buf = "datagram-one";
    ud.udata.len = 12;
    XCHECK_OK(t_sndudata(s, &ud));
    CHECK_EQ(t_look(r), T_DATA);
    memset(&in, 0, sizeof(in));
    in.addr.buf = abuf;
    in.addr.maxlen = sizeof(abuf);
    in.udata.buf = buf;
    in.udata.maxlen = sizeof(buf);
    XCHECK_OK(t_rcvudata(r, &in, &flags));
    CHECK(in.udata.len == 12 && memcmp(buf, "datagram-one", 12) == 0 && flags == 0);
    CHECK(in.addr.len == a1.len && memcmp(abuf, a1.buf, a1.len) == 0);
    /* a buffer smaller than the TSDU: T_MORE, then the rest */
    XCHECK_OK(t_sndudata(s, &ud));
    in.udata.maxlen = 5;
    XCHECK_OK(t_rcvudata(r, &in, &flags));
    CHECK(in.udata.len == 5 && flags == T_MORE);
    in.udata.maxlen = sizeof(buf);
    XCHECK_OK(t_rcvudata(r, &in, &flags));
    CHECK(in.udata.len == 7 && memcmp(buf, "ram-one", 7) == 0 && flags == 0);
    /* an address buffer too small: TBUFOVFLW, the datagram discarded */
    XCHECK_OK(t_sndudata(s, &ud));
    in.addr.buf = tiny;
    in.addr.maxlen = 1;
    XCHECK_ERR(t_rcvudata(r, &in, &flags), TBUFOVFLW);
    xti_set_nb(r, 1);
    in.addr.buf = abuf;
    in.addr.maxlen = sizeof(abuf);
    XCHECK_ERR(t_rcvudata(r, &in, &flags), TNODATA);
    xti_set_nb(r, 0);
    /* scatter / gather */
    struct t_iovec iv[3] = {{"a", 1}, {"bc", 2}, {"def", 3}};
    char o1[2], o2[10];
    struct t_iovec ov[2] = {{o1, 2}, {o2, 10}};
    XCHECK_OK(t_sndvudata(s, &ud, iv, 3));
    CHECK_EQ(t_rcvvudata(r, &in, ov, 2, &flags), 6);
    CHECK(memcmp(o1, "ab", 2) == 0 && memcmp(o2, "cdef", 4) == 0 && flags == 0);
    /* bad input */
    ud.addr.len = 0;
    XCHECK_ERR(t_sndudata(s, &ud), TBADADDR);
    ud.addr.len = a2.len;
    ud.opt.buf = buf;
    ud.opt.len = 100000;
    XCHECK_ERR(t_sndudata(s, &ud), TBADOPT);
    ud.opt.len = 0;
    static char huge[70000];
    ud.udata.buf = huge;
    ud.udata.len = sizeof(huge);
    XCHECK_ERR(t_sndudata(s, &ud), TBADDATA);
    /* connection functions are not supported */
    struct t_call call;
    memset(&call, 0, sizeof(call));
    XCHECK_ERR(t_connect(s, &call, NULL), TNOTSUPPORT);
    XCHECK_ERR(t_listen(s, &call), TNOTSUPPORT);
    XCHECK_ERR(t_snd(s, "x", 1, 0), TNOTSUPPORT);
    XCHECK_ERR(t_rcv(s, buf, 1, &flags), TNOTSUPPORT);
    XCHECK_ERR(t_snddis(s, NULL), TNOTSUPPORT);
    XCHECK_ERR(t_rcvdis(s, NULL), TNOTSUPPORT);
    XCHECK_ERR(t_sndrel(s), TNOTSUPPORT);
    XCHECK_ERR(t_rcvrel(s), TNOTSUPPORT);
    XCHECK_ERR(t_accept(s, s, &call), TNOTSUPPORT);
    CHECK(t_alloc(s, T_CALL, T_ALL) == NULL && t_errno == TNOSTRUCTYPE);
    struct t_unitdata *u = t_alloc(s, T_UNITDATA, T_ALL);
    CHECK(u != NULL && u->addr.maxlen > 0 && u->udata.maxlen > 0);
    t_free(u, T_UNITDATA);
    t_close(s);
    t_close(r);
}

/* A datagram to an address nobody is bound to: T_UDERR, t_rcvuderr. */
static void test_uderr(void)
{
    struct t_unitdata ud, in;
    struct t_uderr ue;
    char buf[16], abuf[256], obuf[64];
    int s, flags;

    s = xti_bound(CLTS, 0, NULL, 0, NULL);
    if (s < 0)
        return;
    XCHECK_ERR(t_rcvuderr(s, NULL), TNOUDERR);
    memset(&ud, 0, sizeof(ud));
    ud.addr.buf = "\x7f\x7e\x7d\x7c-nobody";
    ud.addr.len = 11;
    ud.udata.buf = "lost";
    ud.udata.len = 4;
    XCHECK_OK(t_sndudata(s, &ud));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(t_look(s), T_UDERR);
    memset(&in, 0, sizeof(in));
    in.udata.buf = buf;
    in.udata.maxlen = sizeof(buf);
    XCHECK_ERR(t_rcvudata(s, &in, &flags), TLOOK);
    CHECK_EQ(t_look(s), T_UDERR);
    memset(&ue, 0, sizeof(ue));
    ue.addr.buf = abuf;
    ue.addr.maxlen = sizeof(abuf);
    ue.opt.buf = obuf;
    ue.opt.maxlen = sizeof(obuf);
    XCHECK_OK(t_rcvuderr(s, &ue));
    CHECK(ue.addr.len == 11 && memcmp(abuf, ud.addr.buf, 11) == 0);
    CHECK(ue.error != 0);
    CHECK_EQ(t_look(s), 0);
    XCHECK_ERR(t_rcvuderr(s, &ue), TNOUDERR);
    CHECK_EQ(t_getstate(s), T_IDLE);
    t_close(s);
}

int main(void)
{
    xti_require(CLTS);
    test_unitdata();
    test_uderr();
    return xti_finish();
}
