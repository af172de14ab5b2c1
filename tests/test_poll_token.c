/* SPDX-License-Identifier: MIT */
/*
 * test_poll_token.c -- the readiness of a stream descriptor, as poll(2) and
 * epoll(7) see it with no library call (docs/STREAMHEAD.md, "Readiness";
 * src/head/sd_rput.c ust_sd_rready, src/head/sd_poll.c
 * ust_sd_wready_after_write).  For each of /dev/udp, /dev/ticlts,
 * /dev/ticots, /dev/tcp (through libxnet: t_sndudata/t_rcvudata,
 * t_snd/t_rcv) and a strm_pipe, with blocking descriptors:
 *   T.1  poll(2) with timeout 0 reports POLLIN exactly while something is
 *        queued: after each of N messages is read, not after the last;
 *   T.2  the same after I_FLUSH FLUSHR of N queued messages;
 *   T.3  a level-triggered epoll set on the descriptor agrees with T.1;
 *   T.4  an edge-triggered epoll loop that reads what it is woken for is
 *        woken once per burst and then sleeps (counted), and a
 *        level-triggered one does not spin after the last read;
 *   T.5  POLLOUT follows flow control (pipe, ticots): blocking writes until
 *        I_CANPUT says band 0 is full -> no POLLOUT; the reader drains it ->
 *        POLLOUT again.
 * Every wait has a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <xti.h>

#include "check.h"

#define N 4

enum kind { K_DGRAM, K_CONN, K_PIPE };

struct pair {
    const char *name;
    enum kind kind;
    int snd, rcv;
    char addr[128]; /* rcv's address (datagrams) */
    unsigned alen;
};

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* The kernel's events on fd now (no library call). */
static short kpoll(int fd)
{
    struct pollfd p = {fd, POLLIN | POLLOUT, 0};
    return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* Bytes (conn: data bytes; others: messages) queued at rcv's head. */
static int queued(struct pair *p)
{
    int n = 0;
    if (p->kind == K_CONN)
        return strm_ioctl(p->rcv, FIONREAD, &n) == 0 ? n : -1;
    return strm_ioctl(p->rcv, I_NREAD, &n);
}

/* Wait (2 s at most) until want is queued at rcv; 1 if it was. */
static int wait_queued(struct pair *p, int want)
{
    long long end = now_ms() + 2000;
    while (queued(p) < want && now_ms() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return CHECK_EQ(queued(p), want);
}

static int bind_any(int fd, int inet, char *abuf, unsigned *alen)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct t_bind req, ret;
    memset(&req, 0, sizeof(req));
    memset(&ret, 0, sizeof(ret));
    if (inet) {
        req.addr.buf = (char *)&a;
        req.addr.len = sizeof(a);
    }
    req.qlen = 0;
    ret.addr.buf = abuf;
    ret.addr.maxlen = 128;
    int r = t_bind(fd, &req, &ret);
    *alen = ret.addr.len;
    return r;
}

/* Open the pair; 0, or -1 (the provider is not there: skipped). */
static int pair_open(struct pair *p)
{
    if (p->kind == K_PIPE) {
        int fd[2];
        if (!CHECK_EQ(strm_pipe(fd), 0))
            return -1;
        p->snd = fd[0];
        p->rcv = fd[1];
        return 0;
    }
    int inet = strcmp(p->name, "/dev/udp") == 0 || strcmp(p->name, "/dev/tcp") == 0;
    char sa[128];
    unsigned sl;
    if (p->kind == K_DGRAM) {
        p->rcv = t_open(p->name, O_RDWR, NULL);
        p->snd = t_open(p->name, O_RDWR, NULL);
        if (p->rcv < 0 || p->snd < 0) {
            printf("SKIP %s: t_open t_errno %d\n", p->name, t_errno);
            return -1;
        }
        CHECK_EQ(bind_any(p->rcv, inet, p->addr, &p->alen), 0);
        CHECK_EQ(bind_any(p->snd, inet, sa, &sl), 0);
        return 0;
    }
    /* connection: listener, client (non-blocking connect), accepted rcv */
    int lis = t_open(p->name, O_RDWR, NULL);
    p->snd = t_open(p->name, O_RDWR, NULL);
    p->rcv = t_open(p->name, O_RDWR, NULL);
    if (lis < 0 || p->snd < 0 || p->rcv < 0) {
        printf("SKIP %s: t_open t_errno %d\n", p->name, t_errno);
        return -1;
    }
    struct t_bind req, ret;
    memset(&req, 0, sizeof(req));
    memset(&ret, 0, sizeof(ret));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (inet) {
        req.addr.buf = (char *)&a;
        req.addr.len = sizeof(a);
    }
    req.qlen = 2;
    ret.addr.buf = p->addr;
    ret.addr.maxlen = sizeof(p->addr);
    CHECK_EQ(t_bind(lis, &req, &ret), 0);
    CHECK_EQ(bind_any(p->snd, inet, sa, &sl), 0);
    struct t_call call;
    memset(&call, 0, sizeof(call));
    call.addr.buf = p->addr;
    call.addr.len = ret.addr.len;
    int fl = strm_fcntl(p->snd, F_GETFL);
    strm_fcntl(p->snd, F_SETFL, fl | O_NONBLOCK);
    CHECK(t_connect(p->snd, &call, NULL) == 0 || t_errno == TNODATA);
    struct t_call in;
    memset(&in, 0, sizeof(in));
    CHECK_EQ(t_listen(lis, &in), 0);
    CHECK_EQ(t_accept(lis, p->rcv, &in), 0);
    strm_fcntl(p->snd, F_SETFL, fl);
    CHECK(t_rcvconnect(p->snd, NULL) == 0 || t_errno == TOUTSTATE);
    t_close(lis);
    return 0;
}

static void pair_close(struct pair *p)
{
    if (p->kind == K_PIPE) {
        strm_close(p->snd);
        strm_close(p->rcv);
    } else {
        t_close(p->snd);
        t_close(p->rcv);
    }
}

/* Send message i (8 bytes). */
static void send_one(struct pair *p, int i)
{
    char b[8];
    snprintf(b, sizeof(b), "msg%04d", i);
    if (p->kind == K_PIPE) {
        CHECK_EQ(strm_write(p->snd, b, 8), 8);
    } else if (p->kind == K_DGRAM) {
        struct t_unitdata ud;
        memset(&ud, 0, sizeof(ud));
        ud.addr.buf = p->addr;
        ud.addr.len = p->alen;
        ud.udata.buf = b;
        ud.udata.len = 8;
        CHECK_EQ(t_sndudata(p->snd, &ud), 0);
    } else {
        CHECK_EQ(t_snd(p->snd, b, 8, 0), 8);
    }
}

/* Receive message i (blocking descriptor; it is queued). */
static void recv_one(struct pair *p, int i)
{
    char b[16], want[8], ab[128];
    int flags = 0, n = -1;
    snprintf(want, sizeof(want), "msg%04d", i);
    if (p->kind == K_PIPE) {
        n = (int)strm_read(p->rcv, b, 8);
    } else if (p->kind == K_DGRAM) {
        struct t_unitdata ud;
        memset(&ud, 0, sizeof(ud));
        ud.addr.buf = ab;
        ud.addr.maxlen = sizeof(ab);
        ud.udata.buf = b;
        ud.udata.maxlen = sizeof(b);
        if (t_rcvudata(p->rcv, &ud, &flags) == 0)
            n = (int)ud.udata.len;
    } else {
        n = 0;
        while (n < 8) { /* tcp keeps no boundaries */
            int r = t_rcv(p->rcv, b + n, (unsigned)(8 - n), &flags);
            if (r <= 0)
                break;
            n += r;
        }
    }
    CHECK_EQ(n, 8);
    CHECK(memcmp(b, want, 8) == 0);
}

/* Everything sent so far has arrived: N messages (tcp: 8 * N bytes). */
static int arrive(struct pair *p, int nmsg)
{
    return wait_queued(p, p->kind == K_CONN ? 8 * nmsg : nmsg);
}

/* T.1, T.3 */
static void t_read_follows(struct pair *p)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN}, out;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p->rcv, &ev), 0);
    CHECK_EQ(kpoll(p->rcv) & POLLIN, 0);
    CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
    for (int i = 0; i < N; i++)
        send_one(p, i);
    if (arrive(p, N)) {
        for (int i = 0; i < N; i++) {
            CHECK_EQ(kpoll(p->rcv) & POLLIN, POLLIN);
            CHECK_EQ(epoll_wait(ep, &out, 1, 0), 1);
            recv_one(p, i);
        }
        if (!CHECK_EQ(kpoll(p->rcv) & POLLIN, 0))
            fprintf(stderr, "  %s: POLLIN after the last message was read\n", p->name);
        CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
    }
    close(ep);
}

/* T.2 */
static void t_flush(struct pair *p)
{
    for (int i = 0; i < N; i++)
        send_one(p, i);
    if (arrive(p, N)) {
        CHECK_EQ(kpoll(p->rcv) & POLLIN, POLLIN);
        CHECK_EQ(strm_ioctl(p->rcv, I_FLUSH, FLUSHR), 0);
        CHECK_EQ(queued(p), 0);
        CHECK_EQ(kpoll(p->rcv) & POLLIN, 0);
    }
}

/* T.4: wake-ups of an event loop over 3 bursts, 150 ms of quiet after each. */
static void t_loop(struct pair *p, int et)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN | (et ? EPOLLET : 0)}, out;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p->rcv, &ev), 0);
    int wakes = 0, got = 0;
    for (int burst = 0; burst < 3; burst++) {
        for (int i = 0; i < N; i++)
            send_one(p, got + i);
        long long end = now_ms() + 150;
        for (long long left; (left = end - now_ms()) > 0;) {
            if (epoll_wait(ep, &out, 1, (int)left) != 1)
                continue;
            wakes++;
            /* Level-triggered: take what is queued now; the next wait reports
             * the rest.  Edge-triggered: take until nothing is left, as
             * epoll(7) requires of any edge-triggered descriptor; a message
             * that arrives after the queue ran dry is a new edge. */
            do {
                int q = queued(p);
                int n = p->kind == K_CONN ? q / 8 : q;
                if (n <= 0)
                    break;
                while (n-- > 0)
                    recv_one(p, got++);
            } while (et);
        }
    }
    CHECK_EQ(got, 3 * N);
    /* once per burst, a few more if a burst arrived in parts; a spinning
     * loop wakes thousands of times in 450 ms */
    if (!CHECK(wakes >= 3 && wakes <= 3 * N))
        fprintf(stderr, "  %s %s: %d wake-ups\n", p->name, et ? "ET" : "LT", wakes);
    close(ep);
}

/* T.5 */
static void t_pollout(struct pair *p)
{
    int sent = 0;
    CHECK_EQ(kpoll(p->snd) & POLLOUT, POLLOUT);
    while (strm_ioctl(p->snd, I_CANPUT, 0) == 1 && sent < 100000)
        send_one(p, sent++);
    CHECK(sent < 100000);
    if (!CHECK_EQ(kpoll(p->snd) & POLLOUT, 0))
        fprintf(stderr, "  %s: POLLOUT with band 0 full after %d writes\n", p->name, sent);
    long long end = now_ms() + 2000;
    for (int i = 0; i < sent && now_ms() < end; i++)
        recv_one(p, i);
    end = now_ms() + 2000;
    while (!(kpoll(p->snd) & POLLOUT) && now_ms() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ(kpoll(p->snd) & POLLOUT, POLLOUT);
}

int main(void)
{
    struct pair pairs[] = {
        {"/dev/udp", K_DGRAM, -1, -1, {0}, 0},   {"/dev/ticlts", K_DGRAM, -1, -1, {0}, 0},
        {"/dev/ticots", K_CONN, -1, -1, {0}, 0}, {"/dev/tcp", K_CONN, -1, -1, {0}, 0},
        {"pipe", K_PIPE, -1, -1, {0}, 0},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        struct pair *p = &pairs[i];
        if (pair_open(p) != 0)
            continue;
        t_read_follows(p);
        t_flush(p);
        t_loop(p, 0);
        t_loop(p, 1);
        if (p->kind != K_DGRAM && strcmp(p->name, "/dev/tcp") != 0)
            t_pollout(p);
        pair_close(p);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
