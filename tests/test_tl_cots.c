/* SPDX-License-Identifier: MIT */
/*
 * test_tl_cots.c -- the loopback transports ticots and ticotsord (tl.c,
 * tl_cots.c; docs/TPI.md), through raw TPI with putmsg/getmsg.
 *   1.x  names: "/dev/<driver>" opens a registered driver, ENOENT otherwise.
 *   2.x  T_INFO_ACK, T_CAPABILITY_ACK, T_BIND_REQ (unique addresses,
 *        TADDRBUSY, one namespace per device, qlen reduced), T_ADDR_ACK.
 *   3.x  connection establishment: accept on another endpoint and on the
 *        listener, reject (the other indications stay), withdraw, no
 *        listener, qlen overflow, TINDOUT,
 *        TBADSEQ, TBADF, TPROVMISMATCH, TRESQLEN, TOUTSTATE of the acceptor.
 *   4.x  data: boundaries, MORE_flag, expedited data, M_DATA, T_OPTDATA_REQ,
 *        M_FLUSH.
 *   5.x  release: orderly release in both orders and crossing (ticotsord),
 *        disconnect both ways, close of either side, of a listener with
 *        pending indications, of a connector waiting.
 */
#include <stdio.h>
#include <unistd.h>

#include "tl_util.h"

static void t_names(void)
{
    int fd = strm_open("/dev/ticots", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(tlu_state(fd), TS_UNBND);
    strm_close(fd);
    fd = strm_open("/dev/ticotsord", O_RDWR);
    CHECK(fd >= 0);
    strm_close(fd);
    fd = strm_open("/dev/ticlts", O_RDWR);
    CHECK(fd >= 0);
    strm_close(fd);
    fd = strm_open("/dev/echo", O_RDWR); /* any registered driver */
    CHECK(fd >= 0);
    strm_close(fd);
    errno = 0;
    CHECK_EQ(strm_open("/dev/no-such-driver", O_RDWR), -1);
    CHECK_EQ(errno, ENOENT);
    errno = 0;
    CHECK_EQ(strm_open("/dev/clone/ticots", O_RDWR), -1);
    CHECK_EQ(errno, ENOENT);
    errno = 0;
    CHECK_EQ(strm_open("/dev/", O_RDWR), -1); /* a path: the directory, as open(2) says */
    CHECK_EQ(errno, EISDIR);
}

static void t_info_bind(void)
{
    struct T_info_ack ia;
    unsigned char a1[256], a2[256];
    int l1, l2;
    unsigned qlen;
    int f1 = tlu_open(TLU_COTS), f2 = tlu_open(TLU_COTS), f3 = tlu_open(TLU_ORD);

    CHECK(tlu_info(f1, &ia));
    CHECK_EQ(ia.SERV_type, T_COTS);
    CHECK_EQ(ia.TSDU_size, T_INFINITE);
    CHECK_EQ(ia.ETSDU_size, T_INFINITE);
    CHECK_EQ(ia.CDATA_size, T_INVALID);
    CHECK_EQ(ia.DDATA_size, T_INVALID);
    CHECK_EQ(ia.ADDR_size, 128);
    CHECK_EQ(ia.OPT_size, 1024);
    CHECK_EQ(ia.TIDU_size, 65536);
    CHECK_EQ(ia.CURRENT_state, TS_UNBND);
    CHECK_EQ(ia.PROVIDER_flag, SENDZERO | XPG4_1);
    CHECK(tlu_info(f3, &ia));
    CHECK_EQ(ia.SERV_type, T_COTS_ORD);

    /* capability: both bits, a nonzero unique ACCEPTOR_id */
    struct T_capability_req cr = {.PRIM_type = T_CAPABILITY_REQ,
                                  .CAP_bits1 = TC1_INFO | TC1_ACCEPTOR_ID};
    struct tlu_msg m;
    CHECK_EQ(tlu_put(f1, &cr, sizeof(cr), NULL, -1, 0), 0);
    CHECK_EQ(tlu_get(f1, &m), T_CAPABILITY_ACK);
    CHECK_EQ(m.c.p.capability_ack.CAP_bits1, TC1_INFO | TC1_ACCEPTOR_ID);
    CHECK_EQ(m.c.p.capability_ack.INFO_ack.SERV_type, T_COTS);
    CHECK_NE(m.c.p.capability_ack.ACCEPTOR_id, 0);
    CHECK_NE(tlu_acceptor_id(f1), tlu_acceptor_id(f2));

    /* automatic addresses are unique; T_ADDR_ACK reports them */
    CHECK_EQ(tlu_bind(f1, NULL, 0, 0, a1, &l1, NULL), 0);
    CHECK_EQ(tlu_bind(f2, NULL, 0, 0, a2, &l2, NULL), 0);
    CHECK_EQ(l1, 4);
    CHECK(l1 != l2 || memcmp(a1, a2, (size_t)l1) != 0);
    CHECK_EQ(tlu_req(f1, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(f1, &m), T_ADDR_ACK);
    CHECK_EQ(m.c.p.addr_ack.LOCADDR_length, l1);
    CHECK(memcmp(m.c.b + m.c.p.addr_ack.LOCADDR_offset, a1, (size_t)l1) == 0);
    CHECK_EQ(m.c.p.addr_ack.REMADDR_length, 0);
    CHECK_EQ(tlu_state(f1), TS_IDLE);

    /* an address bound already: TADDRBUSY in the device, fine in another */
    CHECK_EQ(tlu_req(f2, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(f2, T_UNBIND_REQ));
    CHECK_EQ(tlu_bind(f2, a1, l1, 0, NULL, NULL, NULL), TADDRBUSY);
    CHECK_EQ(tlu_bind(f3, a1, l1, 0, NULL, NULL, NULL), 0);
    /* a chosen address; qlen reduced to 128 */
    CHECK_EQ(tlu_bind(f2, "hello", 5, 100000, a2, &l2, &qlen), 0);
    CHECK_EQ(l2, 5);
    CHECK(memcmp(a2, "hello", 5) == 0);
    CHECK_EQ(qlen, 128);
    /* after unbind the address is free again */
    CHECK_EQ(tlu_req(f2, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(f2, T_UNBIND_REQ));
    CHECK_EQ(tlu_state(f2), TS_UNBND);
    CHECK_EQ(tlu_bind(f1, "x", 1, 0, NULL, NULL, NULL), TOUTSTATE);
    CHECK_EQ(tlu_bind(f2, "hello", 5, 3, NULL, NULL, &qlen), 0);
    CHECK_EQ(qlen, 3);
    /* an automatic address never takes one chosen by a user */
    {
        unsigned char next[4];
        int f4 = tlu_open(TLU_COTS), f5 = tlu_open(TLU_COTS), ln;
        unsigned v = ((unsigned)a1[0] << 24 | (unsigned)a1[1] << 16 | (unsigned)a1[2] << 8 |
                      a1[3]) + 2;
        next[0] = (unsigned char)(v >> 24);
        next[1] = (unsigned char)(v >> 16);
        next[2] = (unsigned char)(v >> 8);
        next[3] = (unsigned char)v;
        CHECK_EQ(tlu_bind(f4, next, 4, 0, NULL, NULL, NULL), 0);
        for (int i = 0; i < 4; i++) {
            unsigned char got[8];
            CHECK_EQ(tlu_bind(f5, NULL, 0, 0, got, &ln, NULL), 0);
            CHECK(ln != 4 || memcmp(got, next, 4) != 0);
            CHECK_EQ(tlu_req(f5, T_UNBIND_REQ), 0);
            CHECK(tlu_ok(f5, T_UNBIND_REQ));
        }
        strm_close(f4);
        strm_close(f5);
    }
    strm_close(f1);
    strm_close(f2);
    strm_close(f3);
}

static void t_conn(const char *dev)
{
    int l, c, a;
    struct tlu_msg m;
    unsigned char ca[8];
    int cl;

    /* 3.1 accept on another (unbound) endpoint */
    CHECK(tlu_pair(dev, &l, &c, &a, 0));
    CHECK_EQ(tlu_state(l), TS_IDLE);
    CHECK_EQ(tlu_state(c), TS_DATA_XFER);
    CHECK_EQ(tlu_state(a), TS_DATA_XFER);
    CHECK_EQ(tlu_req(a, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(a, &m), T_ADDR_ACK);
    CHECK(m.c.p.addr_ack.LOCADDR_length > 0);
    CHECK_EQ(m.c.p.addr_ack.REMADDR_length, 4);
    strm_close(c);
    strm_close(a);
    strm_close(l);

    /* 3.2 accept on the listener itself; SRC of T_CONN_IND is the caller */
    l = tlu_open(dev);
    c = tlu_open(dev);
    CHECK_EQ(tlu_bind(l, "self", 4, 1, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(c, NULL, 0, 0, ca, &cl, NULL), 0);
    CHECK_EQ(tlu_conn_req(c, "self", 4), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    CHECK_EQ(tlu_state(c), TS_WCON_CREQ);
    CHECK_EQ(tlu_get(l, &m), T_CONN_IND);
    CHECK_EQ(m.c.p.conn_ind.SRC_length, cl);
    CHECK(memcmp(m.c.b + m.c.p.conn_ind.SRC_offset, ca, (size_t)cl) == 0);
    CHECK_EQ(tlu_state(l), TS_WRES_CIND);
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(l), m.c.p.conn_ind.SEQ_number), 0);
    CHECK(tlu_ok(l, T_CONN_RES));
    CHECK_EQ(tlu_get(c, &m), T_CONN_CON);
    CHECK_EQ(m.c.p.conn_con.RES_length, 4);
    CHECK(memcmp(m.c.b + m.c.p.conn_con.RES_offset, "self", 4) == 0);
    CHECK_EQ(tlu_state(l), TS_DATA_XFER);
    /* a new connection to the busy listener is refused */
    {
        int c2 = tlu_open(dev);
        CHECK_EQ(tlu_bind(c2, NULL, 0, 0, NULL, NULL, NULL), 0);
        CHECK_EQ(tlu_conn_req(c2, "self", 4), 0);
        CHECK(tlu_ok(c2, T_CONN_REQ));
        CHECK_EQ(tlu_discon_ind(c2, NULL), ECONNREFUSED);
        CHECK_EQ(tlu_state(c2), TS_IDLE);
        strm_close(c2);
    }
    strm_close(c);
    CHECK_EQ(tlu_discon_ind(l, NULL), ECONNRESET);
    CHECK_EQ(tlu_state(l), TS_IDLE);
    strm_close(l);

    /* 3.3 reject, 3.4 withdraw, 3.5 no listener, 3.6 qlen overflow */
    l = tlu_open(dev);
    c = tlu_open(dev);
    a = tlu_open(dev);
    CHECK_EQ(tlu_bind(l, "L", 1, 1, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(c, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(a, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_conn_req(c, "L", 1), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    t_scalar_t seq = tlu_conn_ind(l);
    CHECK_EQ(tlu_conn_req(a, "L", 1), 0); /* qlen 1: refused */
    CHECK(tlu_ok(a, T_CONN_REQ));
    CHECK_EQ(tlu_discon_ind(a, NULL), ECONNREFUSED);
    CHECK_EQ(tlu_discon_req(l, seq + 1000), 0);
    CHECK(tlu_err(l, T_DISCON_REQ, TBADSEQ, 0));
    CHECK_EQ(tlu_discon_req(l, seq), 0);
    CHECK(tlu_ok(l, T_DISCON_REQ));
    CHECK_EQ(tlu_discon_ind(c, NULL), ECONNREFUSED);
    CHECK_EQ(tlu_state(c), TS_IDLE);
    CHECK_EQ(tlu_state(l), TS_IDLE);
    /* withdraw */
    CHECK_EQ(tlu_conn_req(c, "L", 1), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    seq = tlu_conn_ind(l);
    CHECK_EQ(tlu_discon_req(c, -1), 0);
    CHECK(tlu_ok(c, T_DISCON_REQ));
    t_scalar_t wseq = 0;
    CHECK_EQ(tlu_discon_ind(l, &wseq), ECONNRESET);
    CHECK_EQ(wseq, seq);
    CHECK_EQ(tlu_state(l), TS_IDLE);
    /* no listener at the address */
    CHECK_EQ(tlu_conn_req(c, "nobody", 6), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    CHECK_EQ(tlu_discon_ind(c, NULL), ECONNREFUSED);
    /* a bound endpoint that does not listen */
    unsigned char aa[8];
    int al;
    CHECK_EQ(tlu_req(a, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(a, &m), T_ADDR_ACK);
    al = m.c.p.addr_ack.LOCADDR_length;
    memcpy(aa, m.c.b + m.c.p.addr_ack.LOCADDR_offset, (size_t)al);
    CHECK_EQ(tlu_conn_req(c, aa, al), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    CHECK_EQ(tlu_discon_ind(c, NULL), ECONNREFUSED);
    strm_close(c);
    strm_close(a);
    strm_close(l);

    /* 3.7 refusing one indication leaves the next, unread, in place */
    l = tlu_open(dev);
    c = tlu_open(dev);
    a = tlu_open(dev);
    CHECK_EQ(tlu_bind(l, "R2", 2, 2, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(c, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(a, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_conn_req(c, "R2", 2), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    seq = tlu_conn_ind(l);
    CHECK_EQ(tlu_conn_req(a, "R2", 2), 0);
    CHECK(tlu_ok(a, T_CONN_REQ));
    CHECK_EQ(tlu_discon_req(l, seq), 0);
    CHECK(tlu_ok(l, T_DISCON_REQ));
    CHECK(tlu_conn_ind(l) > seq);
    CHECK_EQ(tlu_state(l), TS_WRES_CIND);
    strm_close(c);
    strm_close(a);
    strm_close(l);
}

/* 3.8 - 3.12: the errors of T_CONN_RES */
static void t_conn_res_errors(const char *dev, const char *other)
{
    int l = tlu_open(dev), c1 = tlu_open(dev), c2 = tlu_open(dev);
    int x = tlu_open(other), lis = tlu_open(dev), acc = tlu_open(dev);
    t_scalar_t s1, s2;

    CHECK_EQ(tlu_bind(l, "E", 1, 2, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(c1, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(c2, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(lis, NULL, 0, 1, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_conn_req(c1, "E", 1), 0);
    CHECK(tlu_ok(c1, T_CONN_REQ));
    s1 = tlu_conn_ind(l);
    CHECK_EQ(tlu_conn_req(c2, "E", 1), 0);
    CHECK(tlu_ok(c2, T_CONN_REQ));
    s2 = tlu_conn_ind(l);
    CHECK_NE(s1, s2);
    CHECK_EQ(tlu_conn_res(l, 0, s1), 0); /* two outstanding: not on the listener */
    CHECK(tlu_err(l, T_CONN_RES, TINDOUT, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(l), s1), 0);
    CHECK(tlu_err(l, T_CONN_RES, TINDOUT, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(acc), 12345678), 0);
    CHECK(tlu_err(l, T_CONN_RES, TBADSEQ, 0));
    CHECK_EQ(tlu_conn_res(l, 0x7fffff00u, s1), 0);
    CHECK(tlu_err(l, T_CONN_RES, TBADF, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(x), s1), 0);
    CHECK(tlu_err(l, T_CONN_RES, TPROVMISMATCH, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(lis), s1), 0);
    CHECK(tlu_err(l, T_CONN_RES, TRESQLEN, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(c2), s1), 0); /* c2 waits: TS_WCON_CREQ */
    CHECK(tlu_err(l, T_CONN_RES, TOUTSTATE, 0));
    /* accept s1 on acc, then s2 on the listener (now the only one) */
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(acc), s1), 0);
    CHECK(tlu_ok(l, T_CONN_RES));
    struct tlu_msg m;
    CHECK_EQ(tlu_get(c1, &m), T_CONN_CON);
    CHECK_EQ(tlu_state(l), TS_WRES_CIND);
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(acc), s2), 0); /* acc is connected now */
    CHECK(tlu_err(l, T_CONN_RES, TOUTSTATE, 0));
    CHECK_EQ(tlu_conn_res(l, 0, s2), 0);
    CHECK(tlu_ok(l, T_CONN_RES));
    CHECK_EQ(tlu_get(c2, &m), T_CONN_CON);
    CHECK_EQ(tlu_state(l), TS_DATA_XFER);
    strm_close(l);
    CHECK_EQ(tlu_discon_ind(c2, NULL), ECONNRESET);
    strm_close(c1);
    CHECK_EQ(tlu_discon_ind(acc, NULL), ECONNRESET);
    strm_close(c2);
    strm_close(x);
    strm_close(lis);
    strm_close(acc);
}

static void t_data(const char *dev)
{
    int l, c, a;
    struct tlu_msg m;
    char buf[3000];

    CHECK(tlu_pair(dev, &l, &c, &a, 0));
    for (int i = 0; i < (int)sizeof(buf); i++)
        buf[i] = (char)i;
    /* boundaries and MORE_flag kept, both ways */
    CHECK_EQ(tlu_data(c, buf, 10, 1, 0), 0);
    CHECK_EQ(tlu_data(c, buf + 10, 2990, 0, 0), 0);
    CHECK_EQ(tlu_data(c, buf, 0, 0, 0), 0); /* zero-length TSDU */
    CHECK_EQ(tlu_get(a, &m), T_DATA_IND);
    CHECK_EQ(m.c.p.data_ind.MORE_flag, 1);
    CHECK_EQ(m.dlen, 10);
    CHECK_EQ(tlu_get(a, &m), T_DATA_IND);
    CHECK_EQ(m.c.p.data_ind.MORE_flag, 0);
    CHECK_EQ(m.dlen, 2990);
    CHECK(memcmp(m.d, buf + 10, 2990) == 0);
    CHECK_EQ(tlu_get(a, &m), T_DATA_IND);
    CHECK(m.dlen <= 0);
    CHECK_EQ(tlu_data(a, "back", 4, 0, 0), 0);
    CHECK_EQ(tlu_get(c, &m), T_DATA_IND);
    CHECK_EQ(m.dlen, 4);
    /* expedited data: band 1, overtakes normal data not read yet */
    CHECK_EQ(tlu_data(c, "normal", 6, 0, 0), 0);
    CHECK_EQ(tlu_data(c, "ex", 2, 0, 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_EXDATA_IND);
    CHECK_EQ(m.band, 1);
    CHECK_EQ(m.dlen, 2);
    CHECK_EQ(tlu_get(a, &m), T_DATA_IND);
    CHECK_EQ(m.dlen, 6);
    /* M_DATA from write(2) arrives as M_DATA */
    CHECK_EQ(strm_write(c, "raw", 3), 3);
    CHECK_EQ(tlu_get(a, &m), -2);
    CHECK_EQ(m.dlen, 3);
    CHECK(memcmp(m.d, "raw", 3) == 0);
    /* T_OPTDATA_REQ with an option, expedited and not */
    struct {
        struct T_optdata_req r;
        struct T_opthdr oh;
        t_uscalar_t v;
    } od = {{T_OPTDATA_REQ, 0, sizeof(struct T_opthdr) + 4, sizeof(struct T_optdata_req)},
            {sizeof(struct T_opthdr) + 4, XTI_GENERIC, XTI_DEBUG, 0},
            7};
    CHECK_EQ(tlu_put(c, &od, sizeof(od), "opt", 3, 0), 0);
    CHECK_EQ(tlu_get(a, &m), T_OPTDATA_IND);
    CHECK_EQ(m.c.p.optdata_ind.OPT_length, (t_scalar_t)sizeof(struct T_opthdr) + 4);
    CHECK_EQ(m.dlen, 3);
    od.r.DATA_flag = T_ODF_EX;
    CHECK_EQ(tlu_put(c, &od, sizeof(od), "x", 1, 0), 0);
    CHECK_EQ(tlu_get(a, &m), T_OPTDATA_IND);
    CHECK_EQ(m.band, 1);
    CHECK_EQ(m.c.p.optdata_ind.DATA_flag, T_ODF_EX);
    CHECK(tlu_quiet(a, 10));
    /* M_FLUSH (I_FLUSH): what waits at the reader goes, the stream stays usable */
    CHECK_EQ(tlu_data(c, "flushme", 7, 0, 0), 0);
    CHECK(tlu_ready(a, 1000));
    CHECK_EQ(strm_ioctl(a, I_FLUSH, FLUSHRW), 0);
    CHECK(tlu_quiet(a, 10));
    CHECK_EQ(strm_ioctl(c, I_FLUSH, FLUSHRW), 0);
    CHECK_EQ(tlu_state(c), TS_DATA_XFER);
    CHECK_EQ(tlu_data(c, "after", 5, 0, 0), 0);
    CHECK_EQ(tlu_get(a, &m), T_DATA_IND);
    CHECK_EQ(m.dlen, 5);
    strm_close(c);
    CHECK_EQ(tlu_discon_ind(a, NULL), ECONNRESET);
    strm_close(a);
    strm_close(l);
}

static void t_release(void)
{
    int l, c, a;
    struct tlu_msg m;

    /* 5.1 orderly release, connector first, data after it from the other side */
    CHECK(tlu_pair(TLU_ORD, &l, &c, &a, 0));
    CHECK_EQ(tlu_data(c, "d1", 2, 0, 0), 0);
    CHECK_EQ(tlu_req(c, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_state(c), TS_WIND_ORDREL);
    CHECK_EQ(tlu_get(a, &m), T_DATA_IND);
    CHECK_EQ(tlu_get(a, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(a), TS_WREQ_ORDREL);
    CHECK_EQ(tlu_data(a, "late", 4, 0, 0), 0);
    CHECK_EQ(tlu_get(c, &m), T_DATA_IND);
    CHECK_EQ(tlu_req(a, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_state(a), TS_IDLE);
    CHECK_EQ(tlu_get(c, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(c), TS_IDLE);
    /* after release both may connect again: c to the listener again */
    CHECK_EQ(tlu_conn_req(c, "pair-0", 6), 0); /* whichever; refused or not, acked */
    CHECK(tlu_ok(c, T_CONN_REQ));
    strm_close(c);
    strm_close(a);
    strm_close(l);

    /* 5.2 acceptor first */
    CHECK(tlu_pair(TLU_ORD, &l, &c, &a, 0));
    CHECK_EQ(tlu_req(a, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_get(c, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_req(c, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_get(a, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(a), TS_IDLE);
    CHECK_EQ(tlu_state(c), TS_IDLE);
    CHECK_EQ(tlu_req(c, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(c, T_UNBIND_REQ));
    strm_close(c);
    strm_close(a);
    CHECK(tlu_quiet(l, 10));
    strm_close(l);

    /* 5.3 crossing releases */
    CHECK(tlu_pair(TLU_ORD, &l, &c, &a, 0));
    CHECK_EQ(tlu_req(a, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_req(c, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_get(c, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_get(a, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(a), TS_IDLE);
    CHECK_EQ(tlu_state(c), TS_IDLE);
    strm_close(c);
    CHECK(tlu_quiet(a, 10)); /* released: no T_DISCON_IND */
    strm_close(a);
    strm_close(l);

    /* 5.4 disconnect from either side */
    for (int side = 0; side < 2; side++) {
        CHECK(tlu_pair(TLU_COTS, &l, &c, &a, 0));
        int from = side ? a : c, to = side ? c : a;
        CHECK_EQ(tlu_discon_req(from, -1), 0);
        CHECK(tlu_ok(from, T_DISCON_REQ));
        CHECK_EQ(tlu_state(from), TS_IDLE);
        CHECK_EQ(tlu_discon_ind(to, NULL), ECONNRESET);
        CHECK_EQ(tlu_state(to), TS_IDLE);
        strm_close(c);
        strm_close(a);
        strm_close(l);
    }

    /* 5.5 close of a listener with pending indications refuses them */
    l = tlu_open(TLU_COTS);
    c = tlu_open(TLU_COTS);
    CHECK_EQ(tlu_bind(l, "LC", 2, 4, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_bind(c, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_conn_req(c, "LC", 2), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    strm_close(l);
    CHECK_EQ(tlu_discon_ind(c, NULL), ECONNREFUSED);
    CHECK_EQ(tlu_state(c), TS_IDLE);
    /* 5.6 close of a waiting connector withdraws its indication */
    l = tlu_open(TLU_COTS);
    CHECK_EQ(tlu_bind(l, "LC", 2, 4, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_conn_req(c, "LC", 2), 0);
    CHECK(tlu_ok(c, T_CONN_REQ));
    t_scalar_t seq = tlu_conn_ind(l), got = 0;
    strm_close(c);
    CHECK_EQ(tlu_discon_ind(l, &got), ECONNRESET);
    CHECK_EQ(got, seq);
    CHECK_EQ(tlu_state(l), TS_IDLE);
    strm_close(l);
}

int main(void)
{
    t_names();
    t_info_bind();
    t_conn(TLU_COTS);
    t_conn(TLU_ORD);
    t_conn_res_errors(TLU_COTS, TLU_ORD);
    t_conn_res_errors(TLU_ORD, TLU_COTS);
    t_data(TLU_COTS);
    t_data(TLU_ORD);
    t_release();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
