/* SPDX-License-Identifier: MIT */
/*
 * test_udp.c -- the udp TPI provider over kernel sockets (src/drivers/udp.c,
 * udp_opt.c, src/core/io_watch.c; docs/TPI.md "udp"), raw TPI over putmsg/getmsg on
 * 127.0.0.1 and ::1 only.
 *   1.  T_INFO_ACK, T_ADDR_ACK, T_CAPABILITY_ACK; bind to port 0 (kernel
 *       chooses) and to an explicit port; in use -> TADDRBUSY; bad address
 *       -> TBADADDR; state errors TOUTSTATE; unbind; connection primitives
 *       TNOTSUPPORT.
 *   2.  Unit data between two endpoints, both families: SRC is the sender's
 *       bound address, zero-length datagrams, the largest datagram;
 *       oversized -> T_UDERROR_IND(EMSGSIZE); bad DEST -> EINVAL.
 *   3.  Interoperability with plain kernel UDP sockets, both directions.
 *   4.  A closed port -> T_UDERROR_IND(ECONNREFUSED) with DEST (IP_RECVERR).
 *   5.  T_OPTMGMT_REQ: T_DEFAULT/T_CURRENT/T_NEGOTIATE/T_CHECK, before and
 *       after bind, T_NOTSUPPORT, TBADFLAG, TBADOPT.
 *   6.  A burst from a socket to a slow reader: delivered in order, and
 *       every datagram is either delivered or counted as dropped by the
 *       kernel (flow control stops our reading; we never lose one).
 *   7.  fork(): the child's inherited endpoint is detached (close runs no
 *       close procedure, the child holds none of its sockets); the child
 *       opens, binds and sends on a new endpoint (a new epoll thread); the
 *       parent's endpoint keeps working.
 *   Each case ends with everything closed; no blocks, no extra descriptors.
 */
#include <stdio.h>
#include <sys/tihdr.h>
#include <unistd.h>
#include <xti.h>

#include "fork_util.h"
#include "tl_util.h"
#include "udp_util.h"

/* Bind fd to a (len bytes); 0 or the TLI error; the bound address in *out. */
static int bind_to(int fd, const void *a, int len, struct sockaddr_in6 *out)
{
    int olen = 0;
    struct sockaddr_in6 tmp;
    return tlu_bind(fd, a, len, 0, out ? out : &tmp, &olen, NULL);
}

static unsigned short port_of(const struct sockaddr_in6 *a)
{
    return ntohs(a->sin6_family == AF_INET ? ((const struct sockaddr_in *)(const void *)a)->sin_port
                                           : a->sin6_port);
}

static void t_bindcases(void)
{
    int a = tlu_open(UDPU_DEV), b = tlu_open("/dev/streams/udp");
    struct T_info_ack ia;
    struct sockaddr_in6 ba;
    struct sockaddr_in s4;
    struct tlu_msg m;

    CHECK(tlu_info(a, &ia));
    CHECK_EQ(ia.SERV_type, T_CLTS);
    CHECK_EQ(ia.TSDU_size, 65507);
    CHECK_EQ(ia.ETSDU_size, T_INVALID);
    CHECK_EQ(ia.ADDR_size, sizeof(struct sockaddr_in6));
    CHECK(ia.OPT_size > 0);
    CHECK_EQ(ia.CURRENT_state, TS_UNBND);
    /* not bound: no local address */
    CHECK_EQ(tlu_req(a, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(a, &m), T_ADDR_ACK);
    CHECK_EQ(m.c.p.addr_ack.LOCADDR_length, 0);

    /* ADDR_length 0: INADDR_ANY, a port of the kernel's */
    CHECK_EQ(bind_to(a, NULL, 0, &ba), 0);
    CHECK_EQ(ba.sin6_family, AF_INET);
    CHECK(port_of(&ba) != 0);
    CHECK_EQ(tlu_state(a), TS_IDLE);
    CHECK_EQ(tlu_req(a, T_ADDR_REQ), 0);
    CHECK_EQ(tlu_get(a, &m), T_ADDR_ACK);
    CHECK_EQ(m.c.p.addr_ack.LOCADDR_length, sizeof(struct sockaddr_in));
    CHECK(memcmp(m.c.b + m.c.p.addr_ack.LOCADDR_offset, &ba, sizeof(struct sockaddr_in)) == 0);
    CHECK_EQ(bind_to(a, NULL, 0, NULL), TOUTSTATE);
    /* the same port: TADDRBUSY */
    s4 = udpu_v4(port_of(&ba));
    s4.sin_addr.s_addr = htonl(INADDR_ANY);
    CHECK_EQ(bind_to(b, &s4, sizeof(s4), NULL), TADDRBUSY);
    /* bad addresses */
    CHECK_EQ(bind_to(b, &s4, 6, NULL), TBADADDR);
    s4.sin_family = AF_UNIX;
    CHECK_EQ(bind_to(b, &s4, sizeof(s4), NULL), TBADADDR);
    CHECK_EQ(tlu_state(b), TS_UNBND);
    /* unbind frees the port; an explicit port then binds */
    CHECK_EQ(tlu_req(a, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(a, T_UNBIND_REQ));
    CHECK_EQ(tlu_state(a), TS_UNBND);
    CHECK_EQ(tlu_req(a, T_UNBIND_REQ), 0);
    CHECK(tlu_err(a, T_UNBIND_REQ, TOUTSTATE, 0));
    s4 = udpu_v4(port_of(&ba));
    CHECK_EQ(bind_to(b, &s4, sizeof(s4), &ba), 0);
    CHECK_EQ(port_of(&ba), ntohs(s4.sin_port));
    CHECK(memcmp(&ba, &s4, sizeof(s4)) == 0);
    /* connection primitives */
    CHECK_EQ(tlu_conn_req(b, &s4, sizeof(s4)), 0);
    CHECK(tlu_err(b, T_CONN_REQ, TNOTSUPPORT, 0));
    /* capability */
    {
        struct T_capability_req r = {.PRIM_type = T_CAPABILITY_REQ, .CAP_bits1 = TC1_INFO};
        CHECK_EQ(tlu_put(b, &r, sizeof(r), NULL, -1, 0), 0);
        CHECK_EQ(tlu_get(b, &m), T_CAPABILITY_ACK);
        CHECK_EQ(m.c.p.capability_ack.CAP_bits1, TC1_INFO);
        CHECK_EQ(m.c.p.capability_ack.INFO_ack.SERV_type, T_CLTS);
        CHECK_EQ(m.c.p.capability_ack.INFO_ack.CURRENT_state, TS_IDLE);
    }
    /* unit data while unbound: EPROTO */
    CHECK_EQ(tlu_unitdata(a, &s4, sizeof(s4), "x", 1), 0);
    CHECK(tlu_merror(a));
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);
}

/* Expect a T_UNITDATA_IND of len bytes (data) from src (slen). */
static void expect_unit(int fd, const void *src, int slen, const void *data, int len)
{
    struct tlu_msg m;
    if (!CHECK_EQ(tlu_get(fd, &m), T_UNITDATA_IND))
        return;
    CHECK_EQ(m.c.p.unitdata_ind.SRC_length, slen);
    CHECK(memcmp(m.c.b + m.c.p.unitdata_ind.SRC_offset, src, (size_t)slen) == 0);
    CHECK_EQ(m.dlen < 0 ? 0 : m.dlen, len);
    if (len > 0)
        CHECK(memcmp(m.d, data, (size_t)len) == 0);
}

static void expect_uderror(int fd, int err, const void *dest, int dlen)
{
    struct tlu_msg m;
    if (!CHECK_EQ(tlu_get(fd, &m), T_UDERROR_IND))
        return;
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, err);
    if (dest != NULL) {
        CHECK_EQ(m.c.p.uderror_ind.DEST_length, dlen);
        CHECK(memcmp(m.c.b + m.c.p.uderror_ind.DEST_offset, dest, (size_t)dlen) == 0);
    }
}

static void t_data(int family)
{
    int a = tlu_open(UDPU_DEV), b = tlu_open(UDPU_DEV);
    struct sockaddr_in6 aa, ba, la = udpu_v6(0);
    struct sockaddr_in l4 = udpu_v4(0);
    int alen = family == AF_INET ? (int)sizeof(struct sockaddr_in) : (int)sizeof(la);
    int max = family == AF_INET ? 65507 : 65527;
    static char big[65600];
    const void *lo = family == AF_INET ? (const void *)&l4 : (const void *)&la;
    struct T_info_ack ia;

    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    CHECK_EQ(bind_to(a, lo, alen, &aa), 0);
    CHECK_EQ(bind_to(b, lo, alen, &ba), 0);
    CHECK(tlu_info(a, &ia));
    CHECK_EQ(ia.TSDU_size, max);
    CHECK_EQ(tlu_unitdata(a, &ba, alen, "hello", 5), 0);
    CHECK_EQ(tlu_unitdata(a, &ba, alen, "", 0), 0);
    CHECK_EQ(tlu_unitdata(a, &ba, alen, big, max), 0);
    expect_unit(b, &aa, alen, "hello", 5);
    expect_unit(b, &aa, alen, "", 0);
    expect_unit(b, &aa, alen, big, max);
    /* and back, and to itself */
    CHECK_EQ(tlu_unitdata(b, &aa, alen, "back", 4), 0);
    expect_unit(a, &ba, alen, "back", 4);
    CHECK_EQ(tlu_unitdata(b, &ba, alen, "me", 2), 0);
    expect_unit(b, &ba, alen, "me", 2);
    /* too big, bad destinations */
    CHECK_EQ(tlu_unitdata(a, &ba, alen, big, max + 1), 0);
    expect_uderror(a, EMSGSIZE, &ba, alen);
    CHECK_EQ(tlu_unitdata(a, &ba, alen - 1, "x", 1), 0);
    expect_uderror(a, EINVAL, NULL, 0);
    if (family == AF_INET) {
        CHECK_EQ(tlu_unitdata(a, &la, sizeof(la), "x", 1), 0); /* v6 on a v4 endpoint */
        expect_uderror(a, EINVAL, &la, sizeof(la));
    }
    CHECK(tlu_quiet(a, 50));
    CHECK(tlu_quiet(b, 0));
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);
}

static void t_interop(int family)
{
    unsigned short sp;
    int s = udpu_sock(family, &sp), e = tlu_open(UDPU_DEV);
    struct sockaddr_in6 ea, from, sa = udpu_v6(sp), la = udpu_v6(0);
    struct sockaddr_in s4 = udpu_v4(sp), l4 = udpu_v4(0);
    int alen = family == AF_INET ? (int)sizeof(s4) : (int)sizeof(sa);
    const void *saddr = family == AF_INET ? (const void *)&s4 : (const void *)&sa;
    socklen_t flen = sizeof(from);
    char buf[64];

    CHECK(s >= 0);
    CHECK_EQ(bind_to(e, family == AF_INET ? (const void *)&l4 : (const void *)&la, alen, &ea), 0);
    /* endpoint -> socket */
    CHECK_EQ(tlu_unitdata(e, saddr, alen, "to socket", 9), 0);
    CHECK_EQ(udpu_recv(s, buf, sizeof(buf), &from, &flen), 9);
    CHECK(memcmp(buf, "to socket", 9) == 0);
    CHECK_EQ(flen, alen);
    CHECK(memcmp(&from, &ea, (size_t)alen) == 0);
    CHECK_EQ(tlu_unitdata(e, saddr, alen, "", 0), 0);
    CHECK_EQ(udpu_recv(s, buf, sizeof(buf), NULL, NULL), 0);
    /* socket -> endpoint */
    CHECK_EQ(sendto(s, "to endpoint", 11, 0, (struct sockaddr *)&ea, (socklen_t)alen), 11);
    expect_unit(e, saddr, alen, "to endpoint", 11);
    CHECK_EQ(sendto(s, "", 0, 0, (struct sockaddr *)&ea, (socklen_t)alen), 0);
    expect_unit(e, saddr, alen, "", 0);
    close(s);
    CHECK_EQ(strm_close(e), 0);
}

static void t_refused(int family)
{
    unsigned short dead;
    int s = udpu_sock(family, &dead), e = tlu_open(UDPU_DEV);
    struct sockaddr_in6 d6 = udpu_v6(dead), l6 = udpu_v6(0);
    struct sockaddr_in d4 = udpu_v4(dead), l4 = udpu_v4(0);
    int alen = family == AF_INET ? (int)sizeof(d4) : (int)sizeof(d6);
    const void *dest = family == AF_INET ? (const void *)&d4 : (const void *)&d6;

    close(s); /* nobody there now */
    CHECK_EQ(bind_to(e, family == AF_INET ? (const void *)&l4 : (const void *)&l6, alen, NULL), 0);
    CHECK_EQ(tlu_unitdata(e, dest, alen, "anyone?", 7), 0);
    expect_uderror(e, ECONNREFUSED, dest, alen);
    /* the endpoint still works afterwards */
    CHECK_EQ(tlu_unitdata(e, dest, alen, "again", 5), 0);
    expect_uderror(e, ECONNREFUSED, dest, alen);
    CHECK(tlu_quiet(e, 50));
    CHECK_EQ(strm_close(e), 0);
}

/* One option request; the ack's MGMT_flags (or -TLI_error), the first
 * option's header in *oh and value (up to 8 bytes) in *val. */
static int optreq(int fd, t_scalar_t flags, t_uscalar_t level, t_uscalar_t name, const void *v,
                  size_t vlen, struct T_opthdr *oh, long *val, int *count)
{
    struct {
        struct T_optmgmt_req r;
        unsigned char o[64];
    } req;
    struct T_opthdr h = {.len = (t_uscalar_t)(sizeof(h) + vlen), .level = level, .name = name};
    struct tlu_msg m;
    int r, olen = name == (t_uscalar_t)-1 ? 0 : (int)_TPI_ALIGN_TOPT(h.len);

    memset(&req, 0, sizeof(req));
    req.r.PRIM_type = T_OPTMGMT_REQ;
    req.r.MGMT_flags = flags;
    req.r.OPT_length = olen;
    req.r.OPT_offset = olen ? (t_scalar_t)sizeof(req.r) : 0;
    memcpy(req.o, &h, sizeof(h));
    if (vlen)
        memcpy(req.o + sizeof(h), v, vlen);
    if (tlu_put(fd, &req, (int)sizeof(req.r) + olen, NULL, -1, 0) != 0)
        return -1000;
    r = tlu_get(fd, &m);
    if (r == T_ERROR_ACK)
        return -m.c.p.error_ack.TLI_error;
    if (!CHECK_EQ(r, T_OPTMGMT_ACK))
        return -1000;
    *val = 0;
    *count = 0;
    for (int at = 0; at < m.c.p.optmgmt_ack.OPT_length;) {
        struct T_opthdr x;
        memcpy(&x, m.c.b + m.c.p.optmgmt_ack.OPT_offset + at, sizeof(x));
        if (*count == 0) {
            size_t n = x.len - sizeof(x);
            *oh = x;
            if (n == 1)
                *val = m.c.b[m.c.p.optmgmt_ack.OPT_offset + at + sizeof(x)];
            else if (n == 4) {
                t_uscalar_t u;
                memcpy(&u, m.c.b + m.c.p.optmgmt_ack.OPT_offset + at + sizeof(x), 4);
                *val = (long)u;
            } else if (n == 8)
                memcpy(val, m.c.b + m.c.p.optmgmt_ack.OPT_offset + at + sizeof(x), 8);
        }
        (*count)++;
        at += (int)_TPI_ALIGN_TOPT(x.len);
    }
    return m.c.p.optmgmt_ack.MGMT_flags;
}

static void t_optcases(void)
{
    int e = tlu_open(UDPU_DEV), f = tlu_open(UDPU_DEV);
    struct T_opthdr oh;
    long v;
    int n;
    t_uscalar_t u;
    unsigned char c;
    struct sockaddr_in6 ba;
    struct sockaddr_in l4;

    /* everything: T_DEFAULT and T_CURRENT with an empty list */
    /* (T_READONLY: XTI_SNDLOWAT, read-only on Linux) */
    CHECK_EQ(optreq(e, T_DEFAULT, 0, (t_uscalar_t)-1, NULL, 0, &oh, &v, &n), T_READONLY);
    CHECK_EQ(n, 12);
    CHECK_EQ(optreq(e, T_CURRENT, 0, (t_uscalar_t)-1, NULL, 0, &oh, &v, &n), T_READONLY);
    CHECK_EQ(n, 12);
    /* T_ALLOPT of a level */
    CHECK_EQ(optreq(e, T_CURRENT, INET_IP, T_ALLOPT, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(n, 5);
    CHECK_EQ(optreq(e, T_DEFAULT, INET_IP, IP_TTL, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(oh.len, sizeof(oh) + 1); /* unsigned char */
    CHECK(v > 0);
    /* before bind: stored, applied at bind */
    c = 33;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_TTL, &c, 1, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, 33);
    u = T_YES;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_REUSEADDR, &u, 4, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(optreq(f, T_NEGOTIATE, INET_IP, IP_REUSEADDR, &u, 4, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(optreq(e, T_CURRENT, INET_IP, IP_TTL, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, 33);
    l4 = udpu_v4(0);
    CHECK_EQ(bind_to(e, &l4, sizeof(l4), &ba), 0);
    CHECK_EQ(optreq(e, T_CURRENT, INET_IP, IP_TTL, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, 33); /* read from the socket now */
    CHECK_EQ(optreq(e, T_CURRENT, INET_IP, IP_REUSEADDR, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, T_YES);
    /* both set SO_REUSEADDR: the second may bind the same port */
    CHECK_EQ(bind_to(f, &ba, sizeof(struct sockaddr_in), NULL), 0);
    /* after bind, values written as a long */
    v = 7;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_TTL, &v, sizeof(long), &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(oh.len, sizeof(oh) + sizeof(long));
    CHECK_EQ(v, 7);
    {
        int ttl = 0;
        (void)ttl;
    }
    u = 0x10;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_TOS, &u, 4, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, 0x10);
    u = 65536;
    CHECK_EQ(optreq(e, T_NEGOTIATE, XTI_GENERIC, XTI_SNDBUF, &u, 4, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, 65536);
    u = T_NO;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_UDP, UDP_CHECKSUM, &u, 4, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(optreq(e, T_CURRENT, INET_UDP, UDP_CHECKSUM, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, T_NO);
    /* bad values, unknown options, T_CHECK */
    c = 0;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_TTL, &c, 1, &oh, &v, &n), T_FAILURE);
    CHECK_EQ(optreq(e, T_CHECK, INET_IP, IP_TTL, &c, 1, &oh, &v, &n), T_FAILURE);
    c = 9;
    CHECK_EQ(optreq(e, T_CHECK, INET_IP, IP_TTL, &c, 1, &oh, &v, &n), T_SUCCESS);
    u = 5;
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_BROADCAST, &u, 4, &oh, &v, &n), T_FAILURE);
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_TCP, TCP_NODELAY, &u, 4, &oh, &v, &n), T_NOTSUPPORT);
    CHECK_EQ(optreq(e, T_CURRENT, XTI_GENERIC, 0x7777, NULL, 0, &oh, &v, &n), T_NOTSUPPORT);
    CHECK_EQ(optreq(e, T_CHECK, INET_IP, T_ALLOPT, NULL, 0, &oh, &v, &n), -TBADOPT);
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, IP_TTL, &u, 2, &oh, &v, &n), -TBADOPT);
    CHECK_EQ(optreq(e, 0x999, INET_IP, IP_TTL, NULL, 0, &oh, &v, &n), -TBADFLAG);
    /* T_ALLOPT negotiate: back to the defaults */
    CHECK_EQ(optreq(e, T_NEGOTIATE, INET_IP, T_ALLOPT, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(optreq(e, T_CURRENT, INET_IP, IP_TOS, NULL, 0, &oh, &v, &n), T_SUCCESS);
    CHECK_EQ(v, 0);
    CHECK_EQ(strm_close(e), 0);
    CHECK_EQ(strm_close(f), 0);
}

#define BURST 3000

/* A socket sends BURST numbered datagrams to an endpoint that does not read
 * for a while.  Afterwards: what arrived is in order, and delivered + the
 * kernel's drops of the endpoint's socket == BURST: flow control stopped our
 * reading, it did not lose anything. */
static void t_burst(void)
{
    unsigned short sp;
    int s = udpu_sock(AF_INET, &sp), e = tlu_open(UDPU_DEV);
    struct sockaddr_in l4 = udpu_v4(0);
    struct sockaddr_in6 ea;
    struct tlu_msg m;
    unsigned last = 0, got = 0, inorder = 1;
    long drops;

    CHECK(s >= 0);
    CHECK_EQ(bind_to(e, &l4, sizeof(l4), &ea), 0);
    for (unsigned i = 1; i <= BURST; i++) {
        char buf[200];
        memset(buf, 'b', sizeof(buf));
        memcpy(buf, &i, sizeof(i));
        if (sendto(s, buf, sizeof(buf), 0, (struct sockaddr *)&ea, sizeof(struct sockaddr_in)) < 0)
            CHECK(0);
    }
    usleep(100 * 1000); /* the stream head is full, reading has stopped */
    while (tlu_ready(e, 300)) {
        unsigned n;
        if (!CHECK_EQ(tlu_get(e, &m), T_UNITDATA_IND))
            break;
        CHECK_EQ(m.dlen, 200);
        memcpy(&n, m.d, sizeof(n));
        if (n <= last)
            inorder = 0;
        last = n;
        got++;
    }
    drops = udpu_drops(AF_INET, port_of(&ea));
    CHECK(inorder);
    CHECK(got > 0);
    CHECK(drops >= 0);
    CHECK_EQ(got + (unsigned long)drops, BURST);
    printf("burst: %u of %d delivered, %ld dropped by the kernel\n", got, BURST, drops);
    close(s);
    CHECK_EQ(strm_close(e), 0);
}

struct fork_arg {
    int e;
    struct sockaddr_in peer;
};

static int fork_child(void *p)
{
    struct fork_arg *fa = p;
    struct sockaddr_in l4 = udpu_v4(0);
    int e;

    CHECK_EQ(strm_close(fa->e), 0); /* detached: no close procedure */
    e = tlu_open(UDPU_DEV);
    CHECK_EQ(bind_to(e, &l4, sizeof(l4), NULL), 0);
    CHECK_EQ(tlu_unitdata(e, &fa->peer, sizeof(fa->peer), "child", 5), 0);
    CHECK(tlu_quiet(e, 50));
    CHECK_EQ(strm_close(e), 0);
    return FK_CHILD_FAILED();
}

static void t_fork(void)
{
    unsigned short sp = 0;
    int s = udpu_sock(AF_INET, &sp);
    struct fork_arg fa = {.e = tlu_open(UDPU_DEV), .peer = udpu_v4(sp)};
    struct sockaddr_in l4 = udpu_v4(0);
    char buf[16];

    CHECK(s >= 0);
    CHECK_EQ(bind_to(fa.e, &l4, sizeof(l4), NULL), 0);
    CHECK_EQ(fk_run(fork_child, &fa, 10000), 0);
    CHECK_EQ(udpu_recv(s, buf, sizeof(buf), NULL, NULL), 5);
    CHECK(memcmp(buf, "child", 5) == 0);
    CHECK_EQ(tlu_unitdata(fa.e, &fa.peer, sizeof(fa.peer), "parent", 6), 0);
    CHECK_EQ(udpu_recv(s, buf, sizeof(buf), NULL, NULL), 6);
    close(s);
    CHECK_EQ(strm_close(fa.e), 0);
}

int main(void)
{
    int fds, v6 = udpu_have_v6();

    /* the epoll thread's two descriptors stay: start it before counting */
    t_interop(AF_INET);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    fds = udpu_nfds();

    t_bindcases();
    t_data(AF_INET);
    t_interop(AF_INET);
    t_refused(AF_INET);
    if (v6) {
        t_data(AF_INET6);
        t_interop(AF_INET6);
        t_refused(AF_INET6);
    } else {
        printf("::1 not available: IPv6 cases skipped\n");
    }
    t_optcases();
    t_burst();
    t_fork();

    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(udpu_nfds(), fds);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
