/* SPDX-License-Identifier: MIT */
/*
 * test_tcp.c -- the tcp TPI provider over kernel sockets (src/drivers/tcp*.c,
 * docs/TPI.md "tcp"), raw TPI over putmsg/getmsg on 127.0.0.1 and ::1 only.
 *   1.  T_INFO_ACK values; every primitive in the wrong state gets its
 *       T_ERROR_ACK(TOUTSTATE) or M_ERROR(EPROTO) -- in TS_UNBND, TS_IDLE,
 *       TS_WCON_CREQ (a connect held by a full accept queue, then
 *       abandoned), TS_WRES_CIND, TS_WIND_ORDREL, TS_WREQ_ORDREL; short and
 *       malformed primitives (TSYSERR/EINVAL, EPROTO), bad lengths, offsets.
 *   2.  Binding: port 0 (kernel's), explicit port, in use (TADDRBUSY), bad
 *       addresses (TBADADDR), listener's CONIND_number, T_ADDR_ACK, unbind.
 *   3.  Connect to a closed port: T_OK_ACK, T_DISCON_IND(ECONNREFUSED); the
 *       endpoint connects again afterwards.  T_CONN_REQ errors.
 *   4.  A listener with several connectors: T_CONN_IND with SEQ_numbers,
 *       T_CONN_RES onto an unbound endpoint, a bound one, and the listener
 *       itself (TINDOUT while others wait); TBADSEQ, TBADF, TRESQLEN,
 *       TOUTSTATE; T_DISCON_REQ of an indication resets the connector.
 *   5.  Data between TPI endpoints (connector, acceptor, listener accepting
 *       on itself); bulk data with socket peers is in test_tcp_data.c.
 *   6.  Options: TCP_NODELAY, TCP_MAXSEG (read-only), TCP_KEEPALIVE,
 *       XTI_LINGER, XTI_SNDBUF, IP_TTL as a long, IP_TOS as a byte,
 *       T_NOTSUPPORT, TBADFLAG, TBADOPT; negotiated before bind.
 *   7.  fork(): the child's copies are closed, the parent's endpoint works.
 *   8.  A listener out of descriptors (EMFILE, in a child with a lowered
 *       limit): the waiting connection is indicated once descriptors are
 *       free again, with no new connection to wake it.
 *   Each case ends with everything closed; no blocks, no extra descriptors.
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/tihdr.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xti.h>

#include "fork_util.h"
#include "rundir.h"
#include "tcp_util.h"

static int have6;

/* A short raw primitive: just a PRIM_type and len-4 zero bytes. */
static int put_short(int fd, t_scalar_t prim, int len)
{
    unsigned char b[64];
    memset(b, 0, sizeof(b));
    memcpy(b, &prim, sizeof(prim));
    return tlu_put(fd, b, len, NULL, -1, 0);
}

static void t_info_states(void)
{
    int a = tlu_open(TCPU_DEV), b;
    struct T_info_ack ia;
    struct sockaddr_in6 la;
    int alen;

    CHECK(tlu_info(a, &ia));
    CHECK_EQ(ia.SERV_type, T_COTS_ORD);
    CHECK_EQ(ia.TSDU_size, 0);
    CHECK_EQ(ia.ETSDU_size, 1);
    CHECK_EQ(ia.CDATA_size, T_INVALID);
    CHECK_EQ(ia.DDATA_size, T_INVALID);
    CHECK_EQ(ia.ADDR_size, sizeof(struct sockaddr_in6));
    CHECK(ia.OPT_size > 0);
    CHECK_EQ(ia.CURRENT_state, TS_UNBND);
    CHECK_EQ(ia.PROVIDER_flag & SENDZERO, 0);

    /* TS_UNBND: every acknowledged primitive but bind/info/optmgmt is out of state */
    CHECK_EQ(tlu_req(a, T_UNBIND_REQ), 0);
    CHECK(tlu_err(a, T_UNBIND_REQ, TOUTSTATE, 0));
    la = tcpu_addr(AF_INET, 9, &alen);
    CHECK_EQ(tlu_conn_req(a, &la, alen), 0);
    CHECK(tlu_err(a, T_CONN_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_conn_res(a, 0, 1), 0);
    CHECK(tlu_err(a, T_CONN_RES, TOUTSTATE, 0));
    CHECK_EQ(tlu_discon_req(a, -1), 0);
    CHECK(tlu_err(a, T_DISCON_REQ, TOUTSTATE, 0));
    /* short acknowledged primitives: TSYSERR/EINVAL */
    CHECK_EQ(put_short(a, T_BIND_REQ, 8), 0);
    CHECK(tlu_err(a, T_BIND_REQ, TSYSERR, EINVAL));
    CHECK_EQ(put_short(a, T_CONN_REQ, 8), 0);
    CHECK(tlu_err(a, T_CONN_REQ, TSYSERR, EINVAL));
    CHECK_EQ(put_short(a, T_CONN_RES, 8), 0);
    CHECK(tlu_err(a, T_CONN_RES, TSYSERR, EINVAL));
    CHECK_EQ(put_short(a, T_DISCON_REQ, 4), 0);
    CHECK(tlu_err(a, T_DISCON_REQ, TSYSERR, EINVAL));
    CHECK_EQ(put_short(a, T_OPTMGMT_REQ, 8), 0);
    CHECK(tlu_err(a, T_OPTMGMT_REQ, TSYSERR, EINVAL));
    CHECK_EQ(put_short(a, T_CAPABILITY_REQ, 4), 0);
    CHECK(tlu_err(a, T_CAPABILITY_REQ, TSYSERR, EINVAL));
    CHECK_EQ(tlu_state(a), TS_UNBND);
    /* capability */
    {
        struct T_capability_req r = {.PRIM_type = T_CAPABILITY_REQ,
                                     .CAP_bits1 = TC1_INFO | TC1_ACCEPTOR_ID};
        struct tlu_msg m;
        CHECK_EQ(tlu_put(a, &r, sizeof(r), NULL, -1, 0), 0);
        CHECK_EQ(tlu_get(a, &m), T_CAPABILITY_ACK);
        CHECK_EQ(m.c.p.capability_ack.CAP_bits1, TC1_INFO | TC1_ACCEPTOR_ID);
        CHECK_EQ(m.c.p.capability_ack.INFO_ack.SERV_type, T_COTS_ORD);
        CHECK(m.c.p.capability_ack.ACCEPTOR_id != 0);
    }
    /* unacknowledged primitives out of state: M_ERROR(EPROTO), one stream each */
    CHECK_EQ(tlu_data(a, "x", 1, 0, 0), 0);
    CHECK(tlu_merror(a));
    CHECK_EQ(strm_close(a), 0);
    b = tlu_open(TCPU_DEV);
    CHECK_EQ(tlu_req(b, T_ORDREL_REQ), 0);
    CHECK(tlu_merror(b));
    CHECK_EQ(strm_close(b), 0);
    b = tlu_open(TCPU_DEV);
    CHECK_EQ(tlu_unitdata(b, &la, alen, "x", 1), 0);
    CHECK(tlu_merror(b));
    CHECK_EQ(strm_close(b), 0);
    b = tlu_open(TCPU_DEV); /* shorter than a PRIM_type */
    CHECK_EQ(tlu_put(b, "ab", 2, NULL, -1, 0), 0);
    CHECK(tlu_merror(b));
    CHECK_EQ(strm_close(b), 0);
    b = tlu_open(TCPU_DEV); /* unknown primitive */
    CHECK_EQ(put_short(b, 999, 4), 0);
    CHECK(tlu_merror(b));
    CHECK_EQ(strm_close(b), 0);
    b = tlu_open(TCPU_DEV); /* write(2) while unbound */
    CHECK_EQ(strm_write(b, "abc", 3), 3);
    CHECK(tlu_merror(b));
    CHECK_EQ(strm_close(b), 0);
}

static void c_bind(void)
{
    int a = tlu_open(TCPU_DEV), b = tlu_open("/dev/streams/tcp"),
        c = tlu_open("/dev/streams/clone/tcp");
    struct sockaddr_in6 ba, want;
    struct sockaddr_in s4;
    struct tlu_msg m;
    int blen, len;
    unsigned qlen;
    unsigned char big[sizeof(struct sockaddr_in) + 1];

    /* ADDR_length 0: INADDR_ANY, a port of the kernel's */
    CHECK_EQ(tlu_bind(a, NULL, 0, 0, &ba, &blen, NULL), 0);
    CHECK_EQ(blen, sizeof(struct sockaddr_in));
    CHECK_EQ(ba.sin6_family, AF_INET);
    CHECK(tcpu_port(&ba) != 0);
    CHECK_EQ(tlu_state(a), TS_IDLE);
    CHECK_EQ(tlu_bind(a, NULL, 0, 0, NULL, NULL, NULL), TOUTSTATE);
    CHECK_EQ(tlu_req(a, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(a, &m), T_ADDR_ACK);
    CHECK_EQ(m.c.p.addr_ack.LOCADDR_length, sizeof(struct sockaddr_in));
    CHECK_EQ(m.c.p.addr_ack.REMADDR_length, 0);
    /* the same port: TADDRBUSY */
    s4 = udpu_v4(tcpu_port(&ba));
    CHECK_EQ(tlu_bind(b, &s4, sizeof(s4), 0, NULL, NULL, NULL), TADDRBUSY);
    /* bad addresses, offsets */
    CHECK_EQ(tlu_bind(b, &s4, 6, 0, NULL, NULL, NULL), TBADADDR);
    memcpy(big, &s4, sizeof(s4));
    big[sizeof(s4)] = 0;
    CHECK_EQ(tlu_bind(b, big, sizeof(big), 0, NULL, NULL, NULL), TBADADDR);
    s4.sin_family = AF_UNIX;
    CHECK_EQ(tlu_bind(b, &s4, sizeof(s4), 0, NULL, NULL, NULL), TBADADDR);
    {
        struct T_bind_req r = {.PRIM_type = T_BIND_REQ, .ADDR_length = 16, .ADDR_offset = 100};
        CHECK_EQ(tlu_put(b, &r, sizeof(r), NULL, -1, 0), 0);
        CHECK(tlu_err(b, T_BIND_REQ, TBADADDR, 0));
        r.ADDR_length = -1;
        r.ADDR_offset = sizeof(r);
        CHECK_EQ(tlu_put(b, &r, sizeof(r), NULL, -1, 0), 0);
        CHECK(tlu_err(b, T_BIND_REQ, TBADADDR, 0));
    }
    CHECK_EQ(tlu_state(b), TS_UNBND);
    /* a listener: CONIND_number granted (capped) */
    want = tcpu_addr(AF_INET, 0, &len);
    CHECK_EQ(tlu_bind(b, &want, len, 1000, &ba, &blen, &qlen), 0);
    CHECK_EQ(qlen, 128);
    CHECK(tcpu_port(&ba) != 0);
    /* unbind frees the port: an explicit port then binds */
    CHECK_EQ(tlu_req(b, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(b, T_UNBIND_REQ));
    CHECK_EQ(tlu_state(b), TS_UNBND);
    CHECK_EQ(tlu_bind(c, &ba, blen, 0, &want, &len, NULL), 0);
    CHECK_EQ(tcpu_port(&want), tcpu_port(&ba));
    if (have6) {
        struct sockaddr_in6 a6 = udpu_v6(0);
        CHECK_EQ(tlu_bind(b, &a6, sizeof(a6), 0, &ba, &blen, NULL), 0);
        CHECK_EQ(blen, sizeof(a6));
        CHECK_EQ(ba.sin6_family, AF_INET6);
    }
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(strm_close(c), 0);
}

/* A port where nothing listens (bound, not listening, by a plain socket). */
static int closed_port(int family, unsigned short *port)
{
    int len, s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a = tcpu_addr(family, 0, &len);
    socklen_t sl = sizeof(a);
    if (s < 0 || bind(s, (struct sockaddr *)&a, (socklen_t)len) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &sl) < 0)
        return -1;
    *port = tcpu_port(&a);
    return s;
}

static void t_refused(int family)
{
    unsigned short port = 0, lport = 0;
    int hold = closed_port(family, &port), len, blen, ls;
    struct sockaddr_in6 dest = tcpu_addr(family, port, &len), ba;
    int fd = tcpu_bound(family, 0, &ba, &blen);
    struct tlu_msg m;

    if (!CHECK(hold >= 0) || fd < 0)
        return;
    CHECK_EQ(tlu_conn_req(fd, &dest, len), 0);
    CHECK(tlu_ok(fd, T_CONN_REQ));
    CHECK_EQ(tlu_discon_ind(fd, NULL), ECONNREFUSED);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    /* T_CONN_REQ errors */
    CHECK_EQ(tlu_conn_req(fd, &dest, 3), 0);
    CHECK(tlu_err(fd, T_CONN_REQ, TBADADDR, 0));
    {
        struct sockaddr_in6 other = tcpu_addr(family == AF_INET ? AF_INET6 : AF_INET, port, &len);
        CHECK_EQ(tlu_conn_req(fd, &other, len), 0); /* the other family */
        CHECK(tlu_err(fd, T_CONN_REQ, TBADADDR, 0));
        dest = tcpu_addr(family, port, &len);
    }
    {
        struct {
            struct T_conn_req r;
            unsigned char a[64];
        } b;
        memset(&b, 0, sizeof(b));
        b.r.PRIM_type = T_CONN_REQ;
        b.r.DEST_length = len;
        b.r.DEST_offset = sizeof(b.r);
        memcpy(b.a, &dest, (size_t)len);
        CHECK_EQ(tlu_put(fd, &b, (int)sizeof(b.r) + len, "data", 4, 0), 0);
        CHECK(tlu_err(fd, T_CONN_REQ, TBADDATA, 0));
        b.r.OPT_length = 12; /* not a T_opthdr list */
        b.r.OPT_offset = (t_scalar_t)sizeof(b.r);
        CHECK_EQ(tlu_put(fd, &b, (int)sizeof(b.r) + len, NULL, -1, 0), 0);
        CHECK(tlu_err(fd, T_CONN_REQ, TBADOPT, 0));
        b.r.OPT_length = 0;
        b.r.DEST_offset = 4000;
        CHECK_EQ(tlu_put(fd, &b, (int)sizeof(b.r) + len, NULL, -1, 0), 0);
        CHECK(tlu_err(fd, T_CONN_REQ, TBADADDR, 0));
    }
    /* the endpoint connects again, now to a listener */
    close(hold);
    ls = tcpu_listener(family, &lport);
    dest = tcpu_addr(family, lport, &len);
    CHECK(tcpu_tpi_connect(fd, &dest, len));
    CHECK_EQ(tlu_state(fd), TS_DATA_XFER);
    CHECK_EQ(tlu_req(fd, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(fd, &m), T_ADDR_ACK);
    CHECK_EQ(m.c.p.addr_ack.REMADDR_length, len);
    CHECK_EQ(tcpu_port(m.c.b + m.c.p.addr_ack.REMADDR_offset), lport);
    CHECK_EQ(tcpu_port(m.c.b + m.c.p.addr_ack.LOCADDR_offset), tcpu_port(&ba));
    /* out of state while connected */
    CHECK_EQ(tlu_conn_req(fd, &dest, len), 0);
    CHECK(tlu_err(fd, T_CONN_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_req(fd, T_UNBIND_REQ), 0);
    CHECK(tlu_err(fd, T_UNBIND_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_bind(fd, NULL, 0, 0, NULL, NULL, NULL), TOUTSTATE);
    CHECK_EQ(tlu_conn_res(fd, 0, 1), 0);
    CHECK(tlu_err(fd, T_CONN_RES, TOUTSTATE, 0));
    {
        int s = tcpu_accept(ls);
        CHECK(s >= 0);
        CHECK_EQ(tlu_discon_req(fd, -1), 0);
        CHECK(tlu_ok(fd, T_DISCON_REQ));
        CHECK_EQ(tlu_state(fd), TS_IDLE);
        char c;
        CHECK_EQ(recv(s, &c, 1, 0), -1); /* reset */
        CHECK_EQ(errno, ECONNRESET);
        close(s);
    }
    close(ls);
    CHECK_EQ(strm_close(fd), 0);
}

static void c_listen(int family)
{
    struct sockaddr_in6 la, ca;
    int lalen, calen, l = tcpu_bound(family, 3, &la, &lalen);
    int c[4], a1 = tlu_open(TCPU_DEV), a2 = tcpu_bound(family, 0, &ca, &calen), x;
    t_scalar_t seq[4];
    struct tlu_msg m;

    if (l < 0 || a2 < 0)
        return;
    /* three TPI connectors; TCP completes them in the kernel (T_CONN_CON at once) */
    for (int i = 0; i < 3; i++) {
        struct sockaddr_in6 any;
        int alen;
        c[i] = tcpu_bound(family, 0, &any, &alen);
        CHECK(tcpu_tpi_connect(c[i], &la, lalen));
    }
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(tlu_get(l, &m), T_CONN_IND);
        seq[i] = m.c.p.conn_ind.SEQ_number;
        CHECK_EQ(m.c.p.conn_ind.SRC_length, lalen);
        CHECK_EQ(((struct sockaddr_in6 *)(void *)(m.c.b + m.c.p.conn_ind.SRC_offset))->sin6_family,
                 family);
        if (i > 0)
            CHECK(seq[i] != seq[i - 1]);
    }
    CHECK_EQ(tlu_state(l), TS_WRES_CIND);
    /* errors of T_CONN_RES */
    CHECK_EQ(tlu_conn_res(l, 0, seq[0]), 0); /* on itself with others waiting */
    CHECK(tlu_err(l, T_CONN_RES, TINDOUT, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(a1), 12345), 0);
    CHECK(tlu_err(l, T_CONN_RES, TBADSEQ, 0));
    CHECK_EQ(tlu_conn_res(l, 0x7fffffff, seq[0]), 0);
    CHECK(tlu_err(l, T_CONN_RES, TBADF, 0));
    x = tcpu_bound(family, 2, &ca, &calen); /* a listener as acceptor */
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(x), seq[0]), 0);
    CHECK(tlu_err(l, T_CONN_RES, TRESQLEN, 0));
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(c[0]), seq[0]), 0); /* connected */
    CHECK(tlu_err(l, T_CONN_RES, TOUTSTATE, 0));
    {
        struct T_conn_res r = {.PRIM_type = T_CONN_RES, .ACCEPTOR_id = tlu_acceptor_id(a1),
                               .SEQ_number = seq[0]};
        CHECK_EQ(tlu_put(l, &r, sizeof(r), "d", 1, 0), 0);
        CHECK(tlu_err(l, T_CONN_RES, TBADDATA, 0));
    }
    CHECK_EQ(strm_close(x), 0);
    /* accept 0 onto an unbound endpoint, 1 onto a bound one, refuse 2 */
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(a1), seq[0]), 0);
    CHECK(tlu_ok(l, T_CONN_RES));
    CHECK_EQ(tlu_state(a1), TS_DATA_XFER);
    CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(a2), seq[1]), 0);
    CHECK(tlu_ok(l, T_CONN_RES));
    CHECK_EQ(tlu_state(a2), TS_DATA_XFER);
    CHECK_EQ(tlu_discon_req(l, 9999), 0);
    CHECK(tlu_err(l, T_DISCON_REQ, TBADSEQ, 0));
    CHECK_EQ(tlu_discon_req(l, seq[2]), 0);
    CHECK(tlu_ok(l, T_DISCON_REQ));
    CHECK_EQ(tlu_discon_ind(c[2], NULL), ECONNRESET);
    CHECK_EQ(tlu_state(l), TS_IDLE);
    /* data on the accepted connections, both ways */
    CHECK_EQ(tlu_data(c[0], "zero", 4, 0, 0), 0);
    CHECK(tcpu_tpi_expect(a1, "zero", 4));
    CHECK_EQ(tlu_data(a2, "one!", 4, 0, 0), 0);
    CHECK(tcpu_tpi_expect(c[1], "one!", 4));
    CHECK_EQ(tlu_req(a1, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(a1, &m), T_ADDR_ACK);
    CHECK_EQ(tcpu_port(m.c.b + m.c.p.addr_ack.LOCADDR_offset), tcpu_port(&la));
    /* a fourth connector, accepted on the listener itself */
    {
        struct sockaddr_in6 any;
        int alen;
        c[3] = tcpu_bound(family, 0, &any, &alen);
        CHECK(tcpu_tpi_connect(c[3], &la, lalen));
        seq[3] = tlu_conn_ind(l);
        CHECK_EQ(tlu_conn_res(l, 0, seq[3]), 0);
        CHECK(tlu_ok(l, T_CONN_RES));
        CHECK_EQ(tlu_state(l), TS_DATA_XFER);
        CHECK_EQ(tlu_data(l, "self", 4, 0, 0), 0);
        CHECK(tcpu_tpi_expect(c[3], "self", 4));
        CHECK_EQ(tlu_data(c[3], "back", 4, 0, 0), 0);
        CHECK(tcpu_tpi_expect(l, "back", 4));
        /* the connection ends: the listener listens again */
        CHECK_EQ(tlu_discon_req(c[3], -1), 0);
        CHECK(tlu_ok(c[3], T_DISCON_REQ));
        CHECK_EQ(tlu_discon_ind(l, NULL), ECONNRESET);
        CHECK_EQ(tlu_state(l), TS_IDLE);
        CHECK_EQ(strm_close(c[3]), 0);
        c[3] = tcpu_bound(family, 0, &any, &alen);
        CHECK(tcpu_tpi_connect(c[3], &la, lalen));
        seq[3] = tlu_conn_ind(l);
        CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(a1), seq[3]), 0);
        CHECK(tlu_err(l, T_CONN_RES, TOUTSTATE, 0)); /* a1 is connected */
    }
    for (int i = 0; i < 4; i++)
        CHECK_EQ(strm_close(c[i]), 0);
    CHECK_EQ(strm_close(a1), 0);
    CHECK_EQ(strm_close(a2), 0);
    CHECK_EQ(strm_close(l), 0);
}

/* A plain listener whose accept queue is full (listen(0) and one
 * connection waiting in it): a further connect stays in progress. */
static int full_listener(unsigned short *port, int *held)
{
    int len, s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a = tcpu_addr(AF_INET, 0, &len);
    socklen_t sl = sizeof(a);

    if (s < 0 || bind(s, (struct sockaddr *)&a, (socklen_t)len) < 0 || listen(s, 0) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &sl) < 0)
        return -1;
    *port = tcpu_port(&a);
    *held = tcpu_connect(&a, len);
    return s;
}

/* Every acknowledged primitive in the states a connection goes through:
 * TOUTSTATE where TPI forbids it (TS_WCON_CREQ, TS_WRES_CIND,
 * TS_WIND_ORDREL, TS_WREQ_ORDREL, TS_IDLE). */
static void t_state_table(void)
{
    unsigned short port = 0;
    int held = -1, ls = full_listener(&port, &held), len, blen, fd, l, s;
    struct sockaddr_in6 dest = tcpu_addr(AF_INET, port, &len), ba, la;
    struct tlu_msg m;

    if (!CHECK(ls >= 0) || !CHECK(held >= 0))
        return;
    /* TS_IDLE */
    fd = tcpu_bound(AF_INET, 0, &ba, &blen);
    CHECK_EQ(tlu_conn_res(fd, 0, 1), 0);
    CHECK(tlu_err(fd, T_CONN_RES, TOUTSTATE, 0));
    CHECK_EQ(tlu_discon_req(fd, -1), 0);
    CHECK(tlu_err(fd, T_DISCON_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_data(fd, "idle", 4, 0, 0), 0); /* discarded */
    CHECK(tlu_quiet(fd, 20));
    /* TS_WCON_CREQ: the listener's queue is full, the connect waits */
    CHECK_EQ(tlu_conn_req(fd, &dest, len), 0);
    CHECK(tlu_ok(fd, T_CONN_REQ));
    CHECK_EQ(tlu_state(fd), TS_WCON_CREQ);
    CHECK_EQ(tlu_conn_req(fd, &dest, len), 0);
    CHECK(tlu_err(fd, T_CONN_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_bind(fd, NULL, 0, 0, NULL, NULL, NULL), TOUTSTATE);
    CHECK_EQ(tlu_req(fd, T_UNBIND_REQ), 0);
    CHECK(tlu_err(fd, T_UNBIND_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_conn_res(fd, 0, 1), 0);
    CHECK(tlu_err(fd, T_CONN_RES, TOUTSTATE, 0));
    /* the connector abandons: T_DISCON_REQ in TS_WCON_CREQ */
    CHECK_EQ(tlu_discon_req(fd, -1), 0);
    CHECK(tlu_ok(fd, T_DISCON_REQ));
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    CHECK(tlu_quiet(fd, 50)); /* no T_CONN_CON, no T_DISCON_IND after it */
    CHECK_EQ(strm_close(fd), 0);
    close(held);
    close(ls);

    /* TS_WRES_CIND */
    l = tcpu_bound(AF_INET, 2, &la, &blen);
    s = tcpu_connect(&la, blen);
    CHECK(s >= 0);
    CHECK(tlu_conn_ind(l) > 0);
    CHECK_EQ(tlu_state(l), TS_WRES_CIND);
    CHECK_EQ(tlu_conn_req(l, &la, blen), 0);
    CHECK(tlu_err(l, T_CONN_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_req(l, T_UNBIND_REQ), 0);
    CHECK(tlu_err(l, T_UNBIND_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_bind(l, NULL, 0, 0, NULL, NULL, NULL), TOUTSTATE);
    CHECK_EQ(tlu_data(l, "x", 1, 0, 0), 0); /* no data on a listener */
    CHECK(tlu_merror(l));
    CHECK_EQ(strm_close(l), 0);
    {
        char c;
        CHECK_EQ(recv(s, &c, 1, 0), -1); /* the pending connection was reset */
        CHECK_EQ(errno, ECONNRESET);
    }
    close(s);

    /* TS_WIND_ORDREL and TS_WREQ_ORDREL */
    fd = tcpu_sock_pair(AF_INET, &s);
    CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_state(fd), TS_WIND_ORDREL);
    CHECK_EQ(tlu_conn_req(fd, &dest, len), 0);
    CHECK(tlu_err(fd, T_CONN_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_req(fd, T_UNBIND_REQ), 0);
    CHECK(tlu_err(fd, T_UNBIND_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_conn_res(fd, 0, 1), 0);
    CHECK(tlu_err(fd, T_CONN_RES, TOUTSTATE, 0));
    CHECK_EQ(tlu_discon_req(fd, -1), 0); /* allowed: abort */
    CHECK(tlu_ok(fd, T_DISCON_REQ));
    CHECK_EQ(strm_close(fd), 0);
    close(s);
    fd = tcpu_sock_pair(AF_INET, &s);
    CHECK_EQ(shutdown(s, SHUT_WR), 0);
    CHECK_EQ(tlu_get(fd, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(fd), TS_WREQ_ORDREL);
    CHECK_EQ(tlu_conn_req(fd, &dest, len), 0);
    CHECK(tlu_err(fd, T_CONN_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_req(fd, T_UNBIND_REQ), 0);
    CHECK(tlu_err(fd, T_UNBIND_REQ, TOUTSTATE, 0));
    CHECK_EQ(tlu_bind(fd, NULL, 0, 0, NULL, NULL, NULL), TOUTSTATE);
    CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    CHECK_EQ(tlu_req(fd, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(fd, T_UNBIND_REQ));
    CHECK_EQ(tlu_state(fd), TS_UNBND);
    CHECK_EQ(strm_close(fd), 0);
    close(s);
}

static void t_options(void)
{
    int s, fd = tcpu_sock_pair(AF_INET, &s), u = tlu_open(TCPU_DEV);
    t_uscalar_t v = 0, st = 0;
    long lv = 0;
    struct t_kpalive kp = {.kp_onoff = T_YES, .kp_timeout = 3}, kpo;
    struct t_linger li = {.l_onoff = T_YES, .l_linger = 5}, lio;
    int x = 0;
    socklen_t xl = sizeof(x);

    v = T_YES;
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_NODELAY, &v, 4, &v, 4, &st), T_SUCCESS);
    CHECK_EQ(v, T_YES);
    v = 0;
    CHECK_EQ(tcpu_optreq(fd, T_CURRENT, INET_TCP, TCP_NODELAY, NULL, 0, &v, 4, NULL), T_SUCCESS);
    CHECK_EQ(v, T_YES);
    lv = T_NO; /* a long */
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_NODELAY, &lv, sizeof(lv), &lv, sizeof(lv),
                    NULL),
             T_SUCCESS);
    CHECK_EQ(lv, T_NO);
    v = 7;
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_NODELAY, &v, 4, NULL, 0, NULL), T_FAILURE);
    CHECK_EQ(tcpu_optreq(fd, T_CHECK, INET_TCP, TCP_NODELAY, &v, 4, NULL, 0, NULL), T_FAILURE);
    /* TCP_MAXSEG: read-only (XNS 5: T_CURRENT reports T_READONLY too) */
    CHECK_EQ(tcpu_optreq(fd, T_CURRENT, INET_TCP, TCP_MAXSEG, NULL, 0, &v, 4, NULL), T_READONLY);
    CHECK(v > 0);
    v = 500;
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_MAXSEG, &v, 4, NULL, 0, NULL), T_READONLY);
    /* TCP_KEEPALIVE */
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_KEEPALIVE, &kp, sizeof(kp), &kpo, sizeof(kpo),
                    NULL),
             T_SUCCESS);
    CHECK_EQ(tcpu_optreq(fd, T_CURRENT, INET_TCP, TCP_KEEPALIVE, NULL, 0, &kpo, sizeof(kpo), NULL),
             T_SUCCESS);
    CHECK_EQ(kpo.kp_onoff, T_YES);
    CHECK_EQ(kpo.kp_timeout, 3);
    kp.kp_onoff = 9;
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_KEEPALIVE, &kp, sizeof(kp), NULL, 0, NULL),
             T_FAILURE);
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_KEEPALIVE, &kp, 4, NULL, 0, NULL), -TBADOPT);
    /* XTI_LINGER */
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, XTI_GENERIC, XTI_LINGER, &li, sizeof(li), NULL, 0, NULL),
             T_SUCCESS);
    CHECK_EQ(tcpu_optreq(fd, T_CURRENT, XTI_GENERIC, XTI_LINGER, NULL, 0, &lio, sizeof(lio), NULL),
             T_SUCCESS);
    CHECK_EQ(lio.l_onoff, T_YES);
    CHECK_EQ(lio.l_linger, 5);
    li.l_linger = -5;
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, XTI_GENERIC, XTI_LINGER, &li, sizeof(li), NULL, 0, NULL),
             T_FAILURE);
    /* XTI_SNDBUF, IP_TTL as a long, IP_TOS as a byte */
    v = 65536;
    CHECK(tcpu_optreq(fd, T_NEGOTIATE, XTI_GENERIC, XTI_SNDBUF, &v, 4, &v, 4, NULL) >= T_SUCCESS);
    CHECK(v >= 65536);
    lv = 33;
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_IP, IP_TTL, &lv, sizeof(lv), &lv, sizeof(lv), NULL),
             T_SUCCESS);
    CHECK_EQ(lv, 33);
    CHECK_EQ(getsockopt(s, SOL_SOCKET, SO_TYPE, &x, &xl), 0); /* the peer is alive */
    {
        unsigned char tos = 0x10;
        CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_IP, IP_TOS, &tos, 1, NULL, 0, NULL), T_SUCCESS);
    }
    /* unsupported, bad flags, bad lists */
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_UDP, 1, &v, 4, NULL, 0, &st), T_NOTSUPPORT);
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, XTI_GENERIC, 0x7777, &v, 4, NULL, 0, &st), T_NOTSUPPORT);
    CHECK_EQ(tcpu_optreq(fd, 0x4000, INET_TCP, TCP_NODELAY, &v, 4, NULL, 0, NULL), -TBADFLAG);
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, INET_TCP, TCP_NODELAY, &v, 3, NULL, 0, NULL), -TBADOPT);
    CHECK_EQ(tcpu_optreq(fd, T_CHECK, INET_TCP, T_ALLOPT, NULL, 0, NULL, 0, NULL), -TBADOPT);
    CHECK_EQ(tcpu_optreq(fd, T_DEFAULT, INET_TCP, T_ALLOPT, NULL, 0, NULL, 0, NULL), T_READONLY);
    /* before bind: stored, then on the socket */
    v = T_YES;
    CHECK_EQ(tcpu_optreq(u, T_NEGOTIATE, INET_TCP, TCP_NODELAY, &v, 4, NULL, 0, NULL), T_SUCCESS);
    CHECK_EQ(tlu_bind(u, NULL, 0, 0, NULL, NULL, NULL), 0);
    v = 0;
    CHECK_EQ(tcpu_optreq(u, T_CURRENT, INET_TCP, TCP_NODELAY, NULL, 0, &v, 4, NULL), T_SUCCESS);
    CHECK_EQ(v, T_YES);
    CHECK_EQ(strm_close(u), 0);
    CHECK_EQ(strm_close(fd), 0);
    close(s);
}

/* The number of sockets among this process's descriptors. */
static int nsockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], link[64];
        ssize_t r;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        r = readlink(path, link, sizeof(link) - 1);
        if (r > 0) {
            link[r] = 0;
            n += strncmp(link, "socket:", 7) == 0;
        }
    }
    closedir(d);
    return n;
}

/* 1 if this process publishes itself (src/admin/publish.c): its listening
 * socket is one of its sockets, which a fork child closes. */
static int publishing(void)
{
    char dir[108], path[160];
    if (ust_rundir(dir, sizeof(dir)) != 0)
        return 0;
    snprintf(path, sizeof(path), "%s/proc.%ld", dir, (long)getpid());
    return access(path, F_OK) == 0;
}

struct fork_arg {
    int fd, nsock; /* the parent's endpoint; the sockets the child should have */
};

static int fork_child(void *p)
{
    struct fork_arg *fa = p;
    int s2, fd2;
    char buf[8];

    /* the child holds none of the provider's sockets (inherited endpoints
     * are detached): the parent's count less the endpoint's socket and
     * the parent's publishing socket */
    CHECK_EQ(nsockets(), fa->nsock);
    CHECK_EQ(strm_close(fa->fd), 0); /* detached: no close procedure */
    /* a new connection in the child (a new epoll thread) */
    fd2 = tcpu_sock_pair(AF_INET, &s2);
    CHECK_EQ(tlu_data(fd2, "child", 5, 0, 0), 0);
    CHECK_EQ(tcpu_read_full(s2, buf, 5), 5);
    CHECK(memcmp(buf, "child", 5) == 0);
    CHECK_EQ(strm_close(fd2), 0);
    close(s2);
    return FK_CHILD_FAILED();
}

static void t_fork(void)
{
    int s;
    struct fork_arg fa;
    char buf[8];

    fa.fd = tcpu_sock_pair(AF_INET, &s);
    fa.nsock = nsockets() - 1 - publishing(); /* all but the endpoint's and the publisher's */
    CHECK_EQ(fk_run(fork_child, &fa, 20000), 0);
    /* the parent's connection still works */
    CHECK_EQ(tlu_data(fa.fd, "parent", 6, 0, 0), 0);
    CHECK_EQ(tcpu_read_full(s, buf, 6), 6);
    CHECK(memcmp(buf, "parent", 6) == 0);
    CHECK_EQ(send(s, "up", 2, 0), 2);
    CHECK(tcpu_tpi_expect(fa.fd, "up", 2));
    CHECK_EQ(strm_close(fa.fd), 0);
    CHECK_EQ(recv(s, buf, 1, 0), 0); /* no copy left anywhere: EOF */
    close(s);
}

/* A listener out of descriptors: accept4 fails (EMFILE) while connections
 * wait in the kernel; once descriptors are free again they are indicated
 * (the provider retries: no new readiness would come).  In a child, whose
 * descriptor limit is lowered. */
static int child_emfile(void *p)
{
    struct sockaddr_in6 la;
    int lalen, l = tcpu_bound(AF_INET, 4, &la, &lalen), c[2], nfill = 0;
    static int fill[4096];
    struct rlimit old, rl;
    struct tlu_msg m;

    (void)p;
    /* every descriptor taken but one, which the connecting socket takes */
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    rl = old;
    rl.rlim_cur = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            rl.rlim_cur = (rlim_t)fd + 1;
    rl.rlim_cur += 16;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    while (nfill < 4096 && (fill[nfill] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        nfill++;
    CHECK(nfill > 0 && nfill < 4096);
    close(fill[--nfill]);
    c[0] = tcpu_connect(&la, lalen);
    CHECK(c[0] >= 0);
    CHECK(tlu_quiet(l, 300)); /* accept4 fails: EMFILE */
    while (nfill > 0)
        close(fill[--nfill]);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    /* no new connection arrives, yet the waiting one is indicated */
    CHECK_EQ(tlu_get(l, &m), T_CONN_IND);
    c[1] = tcpu_connect(&la, lalen);
    CHECK(c[1] >= 0);
    CHECK_EQ(tlu_get(l, &m), T_CONN_IND);
    close(c[0]);
    close(c[1]);
    CHECK_EQ(strm_close(l), 0);
    return FK_CHILD_FAILED();
}

static void t_emfile(void)
{
    CHECK_EQ(fk_run(child_emfile, NULL, 20000), 0);
}

int main(void)
{
    int fds;

    have6 = udpu_have_v6();
    t_info_states();
    c_bind(); /* the epoll thread starts: its descriptors stay */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    fds = udpu_nfds();
    t_refused(AF_INET);
    c_listen(AF_INET);
    if (have6) {
        t_refused(AF_INET6);
        c_listen(AF_INET6);
    } else {
        printf("no ::1 here: IPv6 cases not run\n");
    }
    t_state_table();
    t_options();
    t_fork();
    t_emfile();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(udpu_nfds(), fds);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
