/* SPDX-License-Identifier: MIT */
/*
 * poll_token_util.h -- the endpoints of the readiness tests
 * (test_poll_token.c, test_poll_token2.c): a sender and a receiver over a
 * transport (through libxnet), a strm_pipe, or a FIFO (both descriptors of
 * one FIFO stream), and what poll(2) on the raw descriptor reports.
 */
#ifndef UST_TEST_POLL_TOKEN_UTIL_H
#define UST_TEST_POLL_TOKEN_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <xti.h>

#include "check.h"

#define PT_RAWPROTO 254 /* RFC 3692, experimental (test_rawip.c uses 253) */

enum pt_kind { K_DGRAM, K_CONN, K_PIPE, K_FIFO };

struct pair {
    const char *name; /* device, "pipe", or a FIFO's name */
    enum pt_kind kind;
    int snd, rcv;
    char addr[128]; /* rcv's address (datagrams, listener) */
    unsigned alen;
};

#define PAIR(n, k) {(n), (k), -1, -1, {0}, 0}

static inline long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The kernel's events on fd now (no library call): exactly what an event
 * loop polling the raw descriptor sees. */
static inline short kpoll(int fd)
{
    struct pollfd p = {fd, POLLIN | POLLOUT | POLLPRI | POLLRDBAND, 0};
    return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static inline int pt_inet(const struct pair *p)
{
    return strcmp(p->name, "/dev/udp") == 0 || strcmp(p->name, "/dev/tcp") == 0 ||
           strcmp(p->name, "/dev/rawip") == 0;
}

/* Bytes (tcp: data bytes; others: messages) queued at rcv's head. */
static inline int queued(struct pair *p)
{
    int n = 0;
    if (strcmp(p->name, "/dev/tcp") == 0)
        return strm_ioctl(p->rcv, FIONREAD, &n) == 0 ? n : -1;
    return strm_ioctl(p->rcv, I_NREAD, &n);
}

/* Wait (2 s at most) until want is queued at rcv; 1 if it was. */
static inline int wait_queued(struct pair *p, int want)
{
    long long end = now_ms() + 2000;
    while (queued(p) < want && now_ms() < end)
        sleep_ms(1);
    return CHECK_EQ(queued(p), want);
}

static inline int pt_bind(struct pair *p, int fd, unsigned qlen, char *abuf, unsigned *alen)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (strcmp(p->name, "/dev/rawip") == 0) {
        a.sin_port = htons(PT_RAWPROTO); /* the port names the protocol */
        if (fd == p->snd) /* a raw socket gets what is sent to its address */
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1);
    }
    struct t_bind req, ret;
    memset(&req, 0, sizeof(req));
    memset(&ret, 0, sizeof(ret));
    if (pt_inet(p)) {
        req.addr.buf = (char *)&a;
        req.addr.len = sizeof(a);
    }
    req.qlen = qlen;
    ret.addr.buf = abuf;
    ret.addr.maxlen = 128;
    int r = t_bind(fd, &req, &ret);
    *alen = ret.addr.len;
    return r;
}

/* A raw socket of protocol PT_RAWPROTO receives every such packet sent to
 * its address, whichever process sent it: two tests (test_poll_token,
 * test_poll_token2, their _no_uring runs) would see each other's.  A rawip
 * pair is therefore held under an exclusive lock on a file shared by every
 * test process of the machine (flock; released by pair_close or exit). */
static int pt_rawlock = -1;

static inline void pt_raw_unlock(void);

static inline void pt_raw_lock(struct pair *p)
{
    pt_raw_unlock(); /* a pair whose open failed (skipped) left it held */
    if (strcmp(p->name, "/dev/rawip") != 0)
        return;
    pt_rawlock = open("/tmp/ustreams-test-rawip.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (pt_rawlock >= 0)
        flock(pt_rawlock, LOCK_EX);
}

static inline void pt_raw_unlock(void)
{
    if (pt_rawlock >= 0)
        close(pt_rawlock);
    pt_rawlock = -1;
}

/* Open the pair; 0, or -1 (the provider is not there: skipped, said). */
static inline int pair_open(struct pair *p)
{
    pt_raw_lock(p);
    char sa[128];
    unsigned sl;
    if (p->kind == K_PIPE) {
        int fd[2];
        if (!CHECK_EQ(strm_pipe(fd), 0))
            return -1;
        p->snd = fd[0];
        p->rcv = fd[1];
        return 0;
    }
    if (p->kind == K_FIFO) { /* two descriptors of one FIFO stream */
        p->rcv = strm_open(p->name, O_RDWR);
        p->snd = strm_open(p->name, O_RDWR);
        return CHECK(p->rcv >= 0 && p->snd >= 0) ? 0 : -1;
    }
    if (p->kind == K_DGRAM) {
        p->rcv = t_open(p->name, O_RDWR, NULL);
        p->snd = t_open(p->name, O_RDWR, NULL);
        if (p->rcv < 0 || p->snd < 0) {
            printf("SKIP %s: t_open t_errno %d errno %d\n", p->name, t_errno, errno);
            return -1;
        }
        CHECK_EQ(pt_bind(p, p->rcv, 0, p->addr, &p->alen), 0);
        CHECK_EQ(pt_bind(p, p->snd, 0, sa, &sl), 0);
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
    CHECK_EQ(pt_bind(p, lis, 2, p->addr, &p->alen), 0);
    CHECK_EQ(pt_bind(p, p->snd, 0, sa, &sl), 0);
    struct t_call call;
    memset(&call, 0, sizeof(call));
    call.addr.buf = p->addr;
    call.addr.len = p->alen;
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

static inline void pair_close(struct pair *p)
{
    if (p->kind == K_PIPE || p->kind == K_FIFO) {
        strm_close(p->snd);
        strm_close(p->rcv);
    } else {
        t_close(p->snd);
        t_close(p->rcv);
    }
    pt_raw_unlock();
}

/* Send len bytes of message i (len >= 8): 0, or -1 with t_errno/errno
 * (TFLOW / EAGAIN on a non-blocking descriptor). */
static inline int send_len(struct pair *p, int i, const char *buf, unsigned len)
{
    char b[8];
    snprintf(b, sizeof(b), "msg%04u", (unsigned)i % 10000u);
    memcpy((char *)buf, b, 8);
    if (p->kind == K_PIPE || p->kind == K_FIFO)
        return strm_write(p->snd, buf, len) == (ssize_t)len ? 0 : -1;
    if (p->kind == K_DGRAM) {
        struct t_unitdata ud;
        memset(&ud, 0, sizeof(ud));
        ud.addr.buf = p->addr;
        ud.addr.len = p->alen;
        ud.udata.buf = (char *)buf;
        ud.udata.len = len;
        return t_sndudata(p->snd, &ud);
    }
    return t_snd(p->snd, (char *)buf, len, 0) == (int)len ? 0 : -1;
}

/* Send message i (8 bytes). */
static inline void send_one(struct pair *p, int i)
{
    char b[8];
    CHECK_EQ(send_len(p, i, b, 8), 0);
}

/* Receive message i of len bytes (blocking descriptor; it is queued). */
static inline void recv_len(struct pair *p, int i, char *b, unsigned len)
{
    char want[8], ab[128];
    int flags = 0, n = -1;
    snprintf(want, sizeof(want), "msg%04u", (unsigned)i % 10000u);
    if (p->kind == K_PIPE || p->kind == K_FIFO) {
        n = (int)strm_read(p->rcv, b, len);
    } else if (p->kind == K_DGRAM) {
        struct t_unitdata ud;
        memset(&ud, 0, sizeof(ud));
        ud.addr.buf = ab;
        ud.addr.maxlen = sizeof(ab);
        ud.udata.buf = b;
        ud.udata.maxlen = len;
        if (t_rcvudata(p->rcv, &ud, &flags) == 0)
            n = (int)ud.udata.len;
    } else {
        n = 0;
        while (n < (int)len) { /* tcp keeps no boundaries */
            int r = t_rcv(p->rcv, b + n, len - (unsigned)n, &flags);
            if (r <= 0)
                break;
            n += r;
        }
    }
    CHECK_EQ(n, (int)len);
    CHECK(memcmp(b, want, 8) == 0);
}

static inline void recv_one(struct pair *p, int i)
{
    char b[8];
    recv_len(p, i, b, 8);
}

/* Everything sent so far has arrived: nmsg messages (tcp: 8 * nmsg bytes). */
static inline int arrive(struct pair *p, int nmsg)
{
    return wait_queued(p, strcmp(p->name, "/dev/tcp") == 0 ? 8 * nmsg : nmsg);
}

#endif
