/* SPDX-License-Identifier: MIT */
/*
 * test_tcp_data.c -- data over the tcp TPI provider (src/drivers/tcp_data.c,
 * docs/TPI.md "tcp"), raw TPI over putmsg/getmsg with plain kernel sockets
 * as peers, on 127.0.0.1 and ::1 only.
 *   1. Interoperability both ways (TPI client to socket server, socket
 *      client to a TPI listener accepting on a new endpoint), both
 *      families: 8 MiB each way in T_DATA_REQs of varying sizes and
 *      write(2)s, checksummed, in order; orderly release both ways.
 *   2. Expedited data both ways (urgent byte, band 1); more than ETSDU_size
 *      is EPROTO.
 *   3. Orderly release both ways, data allowed in TS_WREQ_ORDREL and not in
 *      TS_WIND_ORDREL; data in TS_IDLE discarded.
 *   4. A peer that resets: T_DISCON_IND(ECONNRESET), received or met by a
 *      send.
 *   5. Close: queued data delivered then EOF (graceful); a non-blocking
 *      stream with a full write queue closes at once, the peer gets a
 *      prefix in order and EOF; XTI_LINGER l_onoff with l_linger 0 resets;
 *      with a positive l_linger (1 s) and a peer that reads nothing, close
 *      waits for the linger time (the kernel's SO_LINGER) and no longer:
 *      between 0.8 and 4 s with a close time of 200 ms at the head.
 *   Each case ends with everything closed; no blocks, no extra descriptors.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/tihdr.h>
#include <unistd.h>
#include <xti.h>

#include "tcp_util.h"

/* ---- bulk data with a plain socket peer ---- */

#define BULK (8u << 20)

struct bulk {
    int s;          /* the plain socket */
    unsigned seed;
    struct tcpu_sum sum; /* what the socket received */
    int ok;
};

static void *sock_sender(void *p)
{
    struct bulk *b = p;
    unsigned char buf[7777];
    uint64_t at = 0;
    b->ok = 1;
    while (at < BULK) {
        size_t n = BULK - at > sizeof(buf) ? sizeof(buf) : (size_t)(BULK - at);
        for (size_t i = 0; i < n; i++)
            buf[i] = tcpu_pat(at + i, b->seed);
        if (send(b->s, buf, n, MSG_NOSIGNAL) != (ssize_t)n) {
            b->ok = 0;
            break;
        }
        at += n;
    }
    shutdown(b->s, SHUT_WR);
    return NULL;
}

static void *sock_receiver(void *p)
{
    struct bulk *b = p;
    unsigned char buf[65536];
    ssize_t r;
    while ((r = recv(b->s, buf, sizeof(buf), 0)) > 0)
        tcpu_sum_add(&b->sum, buf, (size_t)r);
    b->ok = r == 0;
    return NULL;
}

/* Send BULK bytes of pattern seed from TPI endpoint fd (T_DATA_REQ of
 * varying sizes, and write(2)), then T_ORDREL_REQ. */
static void tpi_send_bulk(int fd, unsigned seed)
{
    static unsigned char buf[70000];
    uint64_t at = 0;
    int k = 0;
    while (at < BULK) {
        size_t n = 1 + (size_t)((k * 7919u) % 65536u);
        if (n > BULK - at)
            n = (size_t)(BULK - at);
        for (size_t i = 0; i < n; i++)
            buf[i] = tcpu_pat(at + i, seed);
        if (k % 3 == 0) {
            if (!CHECK_EQ(strm_write(fd, buf, n), (long)n))
                return;
        } else if (!CHECK_EQ(tlu_data(fd, buf, (int)n, k & 1, 0), 0)) {
            return;
        }
        at += n;
        k++;
    }
    CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
}

/* Receive on TPI endpoint fd until T_ORDREL_IND; the checksum. */
static struct tcpu_sum tpi_recv_bulk(int fd)
{
    static struct tlu_msg m;
    struct tcpu_sum s = {0, 0, 0};
    for (;;) {
        int r = tlu_get(fd, &m);
        if (r == -2) {
            tcpu_sum_add(&s, m.d, (size_t)m.dlen);
            continue;
        }
        CHECK_EQ(r, T_ORDREL_IND);
        break;
    }
    return s;
}

static void t_interop(int family)
{
    unsigned short lport = 0;
    int ls = tcpu_listener(family, &lport), len, blen, fd, s;
    struct sockaddr_in6 dest = tcpu_addr(family, lport, &len), ba, la;
    struct bulk b = {.seed = 7};
    pthread_t th;
    struct tcpu_sum want;

    if (!CHECK(ls >= 0))
        return;
    /* TPI client -> socket server: 8 MiB each way */
    fd = tcpu_bound(family, 0, &ba, &blen);
    CHECK(tcpu_tpi_connect(fd, &dest, len));
    b.s = tcpu_accept(ls);
    CHECK(b.s >= 0);
    CHECK_EQ(pthread_create(&th, NULL, sock_receiver, &b), 0);
    tpi_send_bulk(fd, 11);
    pthread_join(th, NULL);
    want = tcpu_pat_sum(BULK, 11);
    CHECK(b.ok);
    CHECK_EQ(b.sum.n, BULK);
    CHECK(b.sum.a == want.a && b.sum.b == want.b);
    CHECK_EQ(tlu_state(fd), TS_WIND_ORDREL);
    b.seed = 13;
    CHECK_EQ(pthread_create(&th, NULL, sock_sender, &b), 0);
    {
        struct tcpu_sum got = tpi_recv_bulk(fd);
        want = tcpu_pat_sum(BULK, 13);
        CHECK_EQ(got.n, BULK);
        CHECK(got.a == want.a && got.b == want.b);
    }
    pthread_join(th, NULL);
    CHECK(b.ok);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    close(b.s);
    CHECK_EQ(strm_close(fd), 0);

    /* socket client -> TPI listener, accepting on a new endpoint */
    {
        int l = tcpu_bound(family, 1, &la, &blen), acc = tlu_open(TCPU_DEV);
        memset(&b, 0, sizeof(b));
        b.seed = 17;
        b.s = tcpu_connect(&la, blen);
        CHECK(b.s >= 0);
        t_scalar_t seq = tlu_conn_ind(l);
        CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(acc), seq), 0);
        CHECK(tlu_ok(l, T_CONN_RES));
        CHECK_EQ(pthread_create(&th, NULL, sock_sender, &b), 0);
        struct tcpu_sum got = tpi_recv_bulk(acc);
        pthread_join(th, NULL);
        want = tcpu_pat_sum(BULK, 17);
        CHECK_EQ(got.n, BULK);
        CHECK(got.a == want.a && got.b == want.b);
        CHECK_EQ(tlu_state(acc), TS_WREQ_ORDREL);
        memset(&b.sum, 0, sizeof(b.sum));
        CHECK_EQ(pthread_create(&th, NULL, sock_receiver, &b), 0);
        tpi_send_bulk(acc, 19);
        pthread_join(th, NULL);
        want = tcpu_pat_sum(BULK, 19);
        CHECK(b.ok);
        CHECK_EQ(b.sum.n, BULK);
        CHECK(b.sum.a == want.a && b.sum.b == want.b);
        CHECK_EQ(tlu_state(acc), TS_IDLE);
        close(b.s);
        CHECK_EQ(strm_close(acc), 0);
        CHECK_EQ(strm_close(l), 0);
    }
    s = -1;
    (void)s;
    close(ls);
}

static void t_expedited(void)
{
    int s, fd = tcpu_sock_pair(AF_INET, &s), mark = 0;
    struct tlu_msg m;
    char c = 0;
    struct pollfd p = {.fd = s, .events = POLLPRI};

    /* TPI -> socket: the urgent byte */
    CHECK_EQ(tlu_data(fd, "nn", 2, 0, 0), 0);
    CHECK_EQ(tlu_data(fd, "U", 1, 0, 1), 0);
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK(p.revents & POLLPRI);
    for (int i = 0; i < 100 && recv(s, &c, 1, MSG_OOB) < 0; i++)
        usleep(10000); /* the byte may trail the urgent pointer */
    CHECK_EQ(c, 'U');
    /* socket -> TPI: T_EXDATA_IND in band 1 */
    CHECK_EQ(send(s, "X", 1, MSG_OOB), 1);
    CHECK_EQ(tlu_get(fd, &m), T_EXDATA_IND);
    CHECK_EQ(m.dlen, 1);
    CHECK_EQ(m.d[0], 'X');
    CHECK_EQ(m.band, 1);
    (void)mark;
    /* more than ETSDU_size: EPROTO */
    CHECK_EQ(tlu_data(fd, "ab", 2, 0, 1), 0);
    CHECK(tlu_merror(fd));
    CHECK_EQ(strm_close(fd), 0);
    close(s);
}

static void t_ordrel(int family)
{
    int s, fd = tcpu_sock_pair(family, &s);
    char buf[16];
    struct tlu_msg m;

    /* socket releases first */
    CHECK_EQ(send(s, "bye", 3, 0), 3);
    CHECK_EQ(shutdown(s, SHUT_WR), 0);
    CHECK(tcpu_tpi_expect(fd, "bye", 3));
    CHECK_EQ(tlu_get(fd, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(fd), TS_WREQ_ORDREL);
    CHECK_EQ(tlu_data(fd, "ok", 2, 0, 0), 0); /* allowed in TS_WREQ_ORDREL */
    CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    CHECK_EQ(tcpu_read_full(s, buf, 2), 2);
    CHECK(memcmp(buf, "ok", 2) == 0);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 0);
    /* data in TS_IDLE is discarded silently */
    CHECK_EQ(tlu_data(fd, "zz", 2, 0, 0), 0);
    CHECK(tlu_quiet(fd, 50));
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    close(s);
    CHECK_EQ(strm_close(fd), 0);

    /* TPI releases first */
    fd = tcpu_sock_pair(family, &s);
    CHECK_EQ(tlu_data(fd, "hi", 2, 0, 0), 0);
    CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
    CHECK_EQ(tlu_state(fd), TS_WIND_ORDREL);
    CHECK_EQ(tcpu_read_full(s, buf, 2), 2);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 0);
    /* (after the peer saw it all: M_ERROR flushes what is still queued) */
    CHECK_EQ(tlu_data(fd, "no", 2, 0, 0), 0); /* not in TS_WIND_ORDREL */
    CHECK(tlu_merror(fd));
    CHECK_EQ(strm_close(fd), 0);
    close(s);

    fd = tcpu_sock_pair(family, &s);
    CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
    CHECK_EQ(recv(s, buf, sizeof(buf), 0), 0);
    CHECK_EQ(send(s, "late", 4, 0), 4);
    CHECK_EQ(shutdown(s, SHUT_WR), 0);
    CHECK(tcpu_tpi_expect(fd, "late", 4));
    CHECK_EQ(tlu_get(fd, &m), T_ORDREL_IND);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    close(s);
    CHECK_EQ(strm_close(fd), 0);
}

static void t_reset(void)
{
    int s, fd = tcpu_sock_pair(AF_INET, &s);
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    static char buf[200000];
    t_scalar_t seq = 0;

    /* the socket sends, then resets before the TPI side read it all */
    memset(buf, 'r', sizeof(buf));
    CHECK_EQ(send(s, buf, 1000, 0), 1000);
    CHECK(tcpu_tpi_expect(fd, buf, 1000));
    CHECK_EQ(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
    close(s);
    CHECK_EQ(tlu_discon_ind(fd, &seq), ECONNRESET);
    CHECK_EQ(seq, -1);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    CHECK_EQ(strm_close(fd), 0);

    /* the TPI side sends into a reset connection */
    fd = tcpu_sock_pair(AF_INET, &s);
    CHECK_EQ(setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
    close(s);
    for (int i = 0; i < 20; i++)
        if (tlu_data(fd, buf, sizeof(buf) / 4, 0, 0) != 0)
            break;
    CHECK_EQ(tlu_discon_ind(fd, NULL), ECONNRESET);
    CHECK_EQ(tlu_state(fd), TS_IDLE);
    CHECK_EQ(strm_close(fd), 0);
}

static void t_close_linger(void)
{
    int s, fd = tcpu_sock_pair(AF_INET, &s);
    static char buf[1 << 20];
    struct t_linger li = {.l_onoff = T_YES, .l_linger = 0};
    size_t got;
    char c;

    /* graceful: 1 MiB queued at close reaches the peer, then EOF */
    memset(buf, 'g', sizeof(buf));
    CHECK_EQ(strm_write(fd, buf, sizeof(buf)), (long)sizeof(buf));
    CHECK_EQ(strm_close(fd), 0);
    got = tcpu_read_full(s, buf, sizeof(buf));
    CHECK_EQ(got, sizeof(buf));
    CHECK_EQ(recv(s, &c, 1, 0), 0);
    close(s);

    /* a non-blocking stream closed with its write queue full: close does
     * not wait; the peer gets a prefix of what was written, in order, then
     * EOF (graceful) */
    fd = tcpu_sock_pair(AF_INET, &s);
    {
        long sent = 0, got = 0;
        unsigned char chunk[16384];
        ssize_t r;
        int bad = 0;
        CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        for (int i = 0; i < 4096; i++) {
            for (size_t k = 0; k < sizeof(chunk); k++)
                chunk[k] = tcpu_pat((uint64_t)sent + k, 5);
            r = strm_write(fd, chunk, sizeof(chunk));
            if (r < 0)
                break;
            sent += r;
        }
        CHECK_EQ(errno, EAGAIN);
        CHECK_EQ(strm_close(fd), 0);
        while ((r = recv(s, chunk, sizeof(chunk), 0)) > 0) {
            for (ssize_t k = 0; k < r && !bad; k++)
                bad = chunk[k] != tcpu_pat((uint64_t)(got + k), 5);
            got += r;
        }
        CHECK_EQ(r, 0);
        CHECK(!bad);
        CHECK(got > 0 && got <= sent);
    }
    close(s);

    /* a positive l_linger and a peer that reads nothing: close lingers */
    fd = tcpu_sock_pair(AF_INET, &s);
    {
        struct t_linger l1 = {.l_onoff = T_YES, .l_linger = 1};
        unsigned char chunk[16384];
        struct timespec t0, t1;
        memset(chunk, 'l', sizeof(chunk));
        CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, XTI_GENERIC, XTI_LINGER, &l1, sizeof(l1), NULL, 0,
                             NULL),
                 T_SUCCESS);
        CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        for (int i = 0; i < 4096 && strm_write(fd, chunk, sizeof(chunk)) > 0; i++)
            ;
        CHECK_EQ(errno, EAGAIN); /* the socket and the stream are full */
        CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0);
        int ms = 200;
        CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK_EQ(strm_close(fd), 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (!CHECK(secs >= 0.8 && secs < 4.0))
            fprintf(stderr, "close with l_linger 1 took %.2f s\n", secs);
    }
    close(s);

    /* l_onoff with l_linger 0: the peer is reset */
    fd = tcpu_sock_pair(AF_INET, &s);
    CHECK_EQ(tcpu_optreq(fd, T_NEGOTIATE, XTI_GENERIC, XTI_LINGER, &li, sizeof(li), NULL, 0, NULL),
             T_SUCCESS);
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(recv(s, &c, 1, 0), -1);
    CHECK_EQ(errno, ECONNRESET);
    close(s);
}

int main(void)
{
    int fds, s, fd;

    /* the epoll thread's descriptors stay: start it before counting */
    fd = tcpu_sock_pair(AF_INET, &s);
    CHECK_EQ(strm_close(fd), 0);
    close(s);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    fds = udpu_nfds();
    t_interop(AF_INET);
    t_expedited();
    t_ordrel(AF_INET);
    t_reset();
    t_close_linger();
    if (udpu_have_v6()) {
        t_interop(AF_INET6);
        t_ordrel(AF_INET6);
    } else {
        printf("no ::1 here: IPv6 cases not run\n");
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(udpu_nfds(), fds);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
