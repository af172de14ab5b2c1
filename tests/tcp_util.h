/* SPDX-License-Identifier: MIT */
/*
 * tcp_util.h -- helpers of the tcp provider tests (test_tcp.c,
 * test_tcp_data.c, test_xti_tcp.c, test_xti_tcp_stress.c): plain kernel TCP sockets as peers on
 * 127.0.0.1 / ::1, a checksum, raw TPI connection set-up.  Loopback
 * addresses and the descriptor count come from udp_util.h.
 */
#ifndef UST_TEST_TCP_UTIL_H
#define UST_TEST_TCP_UTIL_H

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tl_util.h"
#include "udp_util.h"

#define TCPU_DEV "/dev/tcp"

/* A sockaddr of family for the loopback address and port, its length in *len. */
static inline struct sockaddr_in6 tcpu_addr(int family, unsigned short port, int *len)
{
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof(a));
    if (family == AF_INET) {
        struct sockaddr_in a4 = udpu_v4(port);
        memcpy(&a, &a4, sizeof(a4));
        *len = sizeof(a4);
    } else {
        a = udpu_v6(port);
        *len = sizeof(a);
    }
    return a;
}

static inline unsigned short tcpu_port(const void *a)
{
    const struct sockaddr_in6 *s = a;
    return ntohs(s->sin6_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port
                                           : s->sin6_port);
}

/* Receive and send time-outs of 10 s on a plain socket (hang guards). */
static inline void tcpu_guard(int s)
{
    struct timeval tv = {.tv_sec = 10};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A plain listening socket on the loopback address of family; its port in
 * *port.  -1 on failure. */
static inline int tcpu_listener(int family, unsigned short *port)
{
    int len, s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a = tcpu_addr(family, 0, &len);
    socklen_t sl = sizeof(a);

    if (s < 0)
        return -1;
    if (bind(s, (struct sockaddr *)&a, (socklen_t)len) < 0 || listen(s, 16) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &sl) < 0) {
        close(s);
        return -1;
    }
    *port = tcpu_port(&a);
    tcpu_guard(s);
    return s;
}

/* A plain socket connected to the address a (len bytes); -1 on failure. */
static inline int tcpu_connect(const void *a, int len)
{
    const struct sockaddr_in6 *s6 = a;
    int s = socket(s6->sin6_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (s < 0)
        return -1;
    tcpu_guard(s);
    if (connect(s, a, (socklen_t)len) < 0) {
        close(s);
        return -1;
    }
    return s;
}

/* accept with the 10 s guard (poll first). */
static inline int tcpu_accept(int ls)
{
    struct pollfd p = {.fd = ls, .events = POLLIN};
    int s;
    if (poll(&p, 1, 10000) != 1)
        return -1;
    s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (s >= 0)
        tcpu_guard(s);
    return s;
}

/* Read exactly len bytes from a plain socket; the count read. */
static inline size_t tcpu_read_full(int s, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = recv(s, (char *)buf + got, len - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* The byte of the test pattern at offset i of stream seed. */
static inline unsigned char tcpu_pat(uint64_t i, unsigned seed)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    return (unsigned char)(x >> 29 ^ x >> 47);
}

/* A running checksum (Fletcher-like, order sensitive). */
struct tcpu_sum {
    uint64_t a, b, n;
};

static inline void tcpu_sum_add(struct tcpu_sum *s, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        s->a = (s->a + p[i]) % 4294967291u;
        s->b = (s->b + s->a) % 4294967291u;
    }
    s->n += len;
}

/* The checksum of the first len bytes of pattern seed. */
static inline struct tcpu_sum tcpu_pat_sum(uint64_t len, unsigned seed)
{
    struct tcpu_sum s = {0, 0, 0};
    unsigned char buf[4096];
    for (uint64_t at = 0; at < len;) {
        size_t n = len - at > sizeof(buf) ? sizeof(buf) : (size_t)(len - at);
        for (size_t i = 0; i < n; i++)
            buf[i] = tcpu_pat(at + i, seed);
        tcpu_sum_add(&s, buf, n);
        at += n;
    }
    return s;
}

/* A TPI endpoint bound to the loopback address of family (port 0) with
 * qlen; its address in *a (*alen).  -1 on failure. */
static inline int tcpu_bound(int family, unsigned qlen, struct sockaddr_in6 *a, int *alen)
{
    int len, fd = tlu_open(TCPU_DEV);
    struct sockaddr_in6 want = tcpu_addr(family, 0, &len);
    if (fd < 0)
        return -1;
    if (!CHECK_EQ(tlu_bind(fd, &want, len, qlen, a, alen, NULL), 0)) {
        strm_close(fd);
        return -1;
    }
    return fd;
}

/* T_CONN_REQ from fd to a; expects T_OK_ACK and T_CONN_CON.  1 if so. */
static inline int tcpu_tpi_connect(int fd, const void *a, int alen)
{
    struct tlu_msg m;
    if (tlu_conn_req(fd, a, alen) != 0 || !tlu_ok(fd, T_CONN_REQ))
        return 0;
    return CHECK_EQ(tlu_get(fd, &m), T_CONN_CON);
}

/* Expect M_DATA (as getmsg data with no control part) totalling len bytes
 * equal to want; 1 if so. */
static inline int tcpu_tpi_expect(int fd, const void *want, int len)
{
    static struct tlu_msg m;
    int got = 0;
    while (got < len) {
        int r = tlu_get(fd, &m);
        if (!CHECK_EQ(r, -2))
            return 0;
        if (!CHECK(m.dlen > 0 && m.dlen <= len - got))
            return 0;
        if (!CHECK(memcmp(m.d, (const char *)want + got, (size_t)m.dlen) == 0))
            return 0;
        got += m.dlen;
    }
    return 1;
}

/* A TPI endpoint connected to a plain socket (*s); the TPI fd. */
static inline int tcpu_sock_pair(int family, int *s)
{
    unsigned short lport = 0;
    int ls = tcpu_listener(family, &lport), len, blen, fd;
    struct sockaddr_in6 dest = tcpu_addr(family, lport, &len), ba;

    *s = -1;
    if (!CHECK(ls >= 0))
        return -1;
    fd = tcpu_bound(family, 0, &ba, &blen);
    CHECK(tcpu_tpi_connect(fd, &dest, len));
    *s = tcpu_accept(ls);
    CHECK(*s >= 0);
    close(ls);
    return fd;
}

/* One option request; the ack's MGMT_flags (or -TLI_error), the first
 * returned value (4 bytes, or the struct) into *out. */
static inline int tcpu_optreq(int fd, t_scalar_t flags, t_uscalar_t level, t_uscalar_t name, const void *v,
                              int vlen, void *out, int outlen, t_uscalar_t *status)
{
    struct {
        struct T_optmgmt_req r;
        struct t_opthdr h;
        unsigned char v[32];
    } b;
    struct tlu_msg m;
    int r;

    memset(&b, 0, sizeof(b));
    b.r.PRIM_type = T_OPTMGMT_REQ;
    b.r.MGMT_flags = flags;
    b.r.OPT_offset = sizeof(b.r);
    b.r.OPT_length = (t_scalar_t)(sizeof(b.h) + (size_t)vlen);
    b.h.len = sizeof(b.h) + (t_uscalar_t)vlen;
    b.h.level = level;
    b.h.name = name;
    if (vlen > 0)
        memcpy(b.v, v, (size_t)vlen);
    if (tlu_put(fd, &b, (int)(sizeof(b.r) + sizeof(b.h)) + vlen, NULL, -1, 0) != 0)
        return -1000;
    r = tlu_get(fd, &m);
    if (r == T_ERROR_ACK)
        return -m.c.p.error_ack.TLI_error;
    if (!CHECK_EQ(r, T_OPTMGMT_ACK))
        return -1000;
    if (m.c.p.optmgmt_ack.OPT_length >= (t_scalar_t)sizeof(struct t_opthdr)) {
        struct t_opthdr h;
        memcpy(&h, m.c.b + m.c.p.optmgmt_ack.OPT_offset, sizeof(h));
        if (status)
            *status = h.status;
        if (out)
            memcpy(out, m.c.b + m.c.p.optmgmt_ack.OPT_offset + sizeof(h),
                   (size_t)outlen < h.len - sizeof(h) ? (size_t)outlen : h.len - sizeof(h));
    }
    return m.c.p.optmgmt_ack.MGMT_flags;
}

#endif /* UST_TEST_TCP_UTIL_H */
