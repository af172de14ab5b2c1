/* SPDX-License-Identifier: MIT */
/*
 * test_xti_more.c -- T_MORE coalescing in libxnet (src/xti/xti_more.c,
 * docs/XTI.md "T_MORE coalescing"; seed 003 §4.2), over /dev/tcp on
 * 127.0.0.1 and /dev/ticotsord:
 *   M.1 tcp: T_MORE sends of 1 B ... 1 KiB, then a push: every byte, in
 *       order, nothing more; the same without the final push (the timer).
 *   M.2 tcp: a lone 1-byte T_MORE send arrives within a bound (the idle
 *       timer), while t_snd itself returned at once.
 *   M.3 ticotsord with t_coalesce on: 200 one-byte T_MORE sends and a push
 *       cross in a few T_DATA_REQ (fewer pieces at the receiver than sends),
 *       while with it off (the default there) every send is one piece with
 *       the sender's MORE flag (today's behaviour).
 *   M.4 ticotsord, coalescing on: TSDUs made of T_MORE sends of 1 B ...
 *       1 KiB arrive whole, each ended (flags without T_MORE) exactly where
 *       the sender ended it, through large and small receive buffers.
 *   M.5 t_sndrel after held bytes: all delivered before the T_ORDREL.
 *       t_close after held bytes: all delivered.
 *   M.6 t_snddis after held bytes, then a new connection on the same
 *       endpoint: the new connection gets none of the old held bytes.
 *   M.7 t_coalesce: previous setting, TNOTSUPPORT (ticlts), TBADFLAG,
 *       TBADF; off sends what is held first.  t_rcv on the sender flushes
 *       a held request (request/response with no wait for the timer).
 *   M.8 two threads sending 8-byte records with T_MORE on one tcp
 *       endpoint: every record whole, each thread's in order, none lost.
 *   M.9 fork: the child never sends the parent's held bytes; its own new
 *       connection's held bytes go by its own timer.
 *   M.10 a bad buffer with T_MORE: TSYSERR/EFAULT, nothing held.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fork_util.h"
#include "tcp_util.h"
#include "xti_util.h"

#define ORD "/dev/ticotsord"

static long long ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A tcp connection on 127.0.0.1: *cli connected to *acc (listener closed). */
static int tcp_pair(int *cli, int *acc)
{
    struct xti_addr la;
    struct t_call call;
    int len, lis;
    struct sockaddr_in6 want = tcpu_addr(AF_INET, 0, &len);

    lis = xti_bound(TCPU_DEV, 2, &want, (unsigned)len, &la);
    *cli = xti_bound(TCPU_DEV, 0, NULL, 0, NULL);
    *acc = t_open(TCPU_DEV, O_RDWR, NULL);
    if (!CHECK(lis >= 0 && *cli >= 0 && *acc >= 0))
        return -1;
    xti_set_nb(*cli, 1);
    if (!CHECK(xti_connect_to(*cli, &la) == -1 && t_errno == TNODATA))
        return -1;
    memset(&call, 0, sizeof(call));
    XCHECK_OK(t_listen(lis, &call));
    XCHECK_OK(t_accept(lis, *acc, &call));
    xti_set_nb(*cli, 0);
    XCHECK_OK(t_rcvconnect(*cli, NULL));
    t_close(lis);
    return 0;
}

/* Read exactly len bytes from fd (blocking) into buf; deadline 10 s. */
static int rcv_all(int fd, char *buf, int len)
{
    long long end = ms_now() + 10000;
    int got = 0, flags;

    xti_set_nb(fd, 1);
    while (got < len && ms_now() < end) {
        int r = t_rcv(fd, buf + got, (unsigned)(len - got), &flags);
        if (r > 0)
            got += r;
        else if (r < 0 && t_errno != TNODATA)
            break;
        else
            usleep(200);
    }
    xti_set_nb(fd, 0);
    return got;
}

/* Nothing more readable on fd within ms (data that should not be there). */
static int quiet(int fd, int ms)
{
    char c;
    int flags, r;

    usleep((useconds_t)ms * 1000);
    xti_set_nb(fd, 1);
    r = t_rcv(fd, &c, 1, &flags);
    xti_set_nb(fd, 0);
    return r < 0 && t_errno == TNODATA;
}

static char pat(size_t i)
{
    return (char)('a' + (i * 7 + i / 251) % 26);
}

/* M.1 */
static void m_tcp_sizes(void)
{
    static char sent[1 << 20], got[1 << 20];
    static const int sizes[] = {1, 2, 3, 7, 64, 100, 255, 256, 511, 1000, 1024};
    int cli, acc;
    size_t n = 0;

    if (tcp_pair(&cli, &acc) < 0)
        return;
    for (int round = 0; round < 2; round++) {
        size_t start = n;
        for (int k = 0; k < 40; k++) {
            int sz = sizes[k % (int)(sizeof(sizes) / sizeof(sizes[0]))];
            for (int j = 0; j < sz; j++)
                sent[n + (size_t)j] = pat(n + (size_t)j);
            if (!CHECK_EQ(t_snd(cli, sent + n, (unsigned)sz, T_MORE), sz))
                break;
            n += (size_t)sz;
        }
        if (round == 0) { /* ended by a push */
            sent[n] = '!';
            CHECK_EQ(t_snd(cli, sent + n, 1, 0), 1);
            n++;
        } /* round 1: nothing pushes; the timer must send it */
        CHECK_EQ(rcv_all(acc, got + start, (int)(n - start)), (int)(n - start));
        CHECK(memcmp(got + start, sent + start, n - start) == 0);
    }
    CHECK(quiet(acc, 20));
    t_close(cli);
    t_close(acc);
}

/* M.2 */
static void m_timer(void)
{
    int cli, acc, flags;
    char c = 0;

    if (tcp_pair(&cli, &acc) < 0)
        return;
    for (int i = 0; i < 5; i++) {
        long long t0 = ms_now(), t1;
        CHECK_EQ(t_snd(cli, "T", 1, T_MORE), 1);
        CHECK(ms_now() - t0 < 100); /* held: returned at once */
        xti_set_nb(acc, 1);
        while (t_rcv(acc, &c, 1, &flags) != 1 && ms_now() - t0 < 2000)
            usleep(100);
        t1 = ms_now();
        xti_set_nb(acc, 0);
        CHECK_EQ(c, 'T');
        /* the timer is XTI_MORE_IDLE_NS (2 ms); 500 ms leaves room for load */
        if (!CHECK(t1 - t0 < 500))
            fprintf(stderr, "  lone T_MORE byte took %lld ms\n", t1 - t0);
        c = 0;
    }
    t_close(cli);
    t_close(acc);
}

/* Count the t_rcv pieces of one TSDU of n bytes (reading with room for all). */
static int pieces_of(int acc, int n, int *lastflags)
{
    char buf[4096];
    int got = 0, pieces = 0, flags = T_MORE;
    long long end = ms_now() + 10000;

    while ((flags & T_MORE) && ms_now() < end) {
        int r = t_rcv(acc, buf, sizeof(buf), &flags);
        if (!CHECK(r >= 0))
            break;
        got += r;
        pieces++;
    }
    CHECK_EQ(got, n);
    *lastflags = flags;
    return pieces;
}

/* M.3 */
static void m_ord_crossings(void)
{
    int cli, lis, acc, fl, p;

    if (xti_pair(ORD, &cli, &lis, &acc) != 0)
        return;
    CHECK_EQ(t_coalesce(cli, -1), 0); /* TSDUs kept: off by default */
    for (int i = 0; i < 200; i++)
        CHECK_EQ(t_snd(cli, "x", 1, T_MORE), 1);
    CHECK_EQ(t_snd(cli, "y", 1, 0), 1);
    CHECK_EQ(pieces_of(acc, 201, &fl), 201); /* off: one piece a send */
    CHECK_EQ(fl, 0);
    CHECK_EQ(t_coalesce(cli, 1), 0);
    CHECK_EQ(t_coalesce(cli, -1), 1);
    for (int i = 0; i < 200; i++)
        CHECK_EQ(t_snd(cli, "x", 1, T_MORE), 1);
    CHECK_EQ(t_snd(cli, "y", 1, 0), 1);
    p = pieces_of(acc, 201, &fl);
    /* one crossing, a few more if the 2 ms timer cut in (a loaded machine) */
    if (!CHECK(p >= 1 && p <= 20))
        fprintf(stderr, "  200 T_MORE sends came as %d pieces\n", p);
    CHECK_EQ(fl, 0);
    t_close(cli);
    t_close(lis);
    t_close(acc);
}

/* M.4: TSDUs of several T_MORE sends, read through a buffer of rsize. */
static void m_ord_records(int rsize)
{
    static char tsdu[8192], got[8192];
    int cli, lis, acc;
    unsigned seed = 12345;

    if (xti_pair(ORD, &cli, &lis, &acc) != 0)
        return;
    CHECK_EQ(t_coalesce(cli, 1), 0);
    for (int r = 0; r < 60; r++) {
        int parts = 1 + r % 7, len = 0, flags = T_MORE, n = 0;
        for (int k = 0; k < parts; k++) {
            seed = seed * 1103515245u + 12345u;
            int sz = 1 + (int)((seed >> 8) % 1024);
            for (int j = 0; j < sz; j++)
                tsdu[len + j] = (char)(r + k + j);
            CHECK_EQ(t_snd(cli, tsdu + len, (unsigned)sz, k < parts - 1 ? T_MORE : 0), sz);
            len += sz;
        }
        while (flags & T_MORE) {
            int room = rsize < (int)sizeof(got) - n ? rsize : (int)sizeof(got) - n;
            int g = t_rcv(acc, got + n, (unsigned)room, &flags);
            if (!CHECK(g >= 0))
                break;
            n += g;
            if (!CHECK(n <= len))
                break;
        }
        /* the TSDU ends where the sender ended it: not before, not after */
        CHECK_EQ(n, len);
        CHECK(memcmp(got, tsdu, (size_t)len) == 0);
    }
    t_close(cli);
    t_close(lis);
    t_close(acc);
}

/* M.5 */
static void m_release_close(void)
{
    char got[4096], want[3000];
    int cli, acc, flags;

    for (int i = 0; i < (int)sizeof(want); i++)
        want[i] = pat((size_t)i);
    /* t_sndrel: everything held goes before the release */
    if (tcp_pair(&cli, &acc) < 0)
        return;
    for (int i = 0; i < 3000; i += 100)
        CHECK_EQ(t_snd(cli, want + i, 100, T_MORE), 100);
    XCHECK_OK(t_sndrel(cli));
    CHECK_EQ(t_getstate(cli), T_OUTREL);
    CHECK_EQ(rcv_all(acc, got, 3000), 3000);
    CHECK(memcmp(got, want, 3000) == 0);
    XCHECK_ERR(t_rcv(acc, got, sizeof(got), &flags), TLOOK);
    CHECK_EQ(t_look(acc), T_ORDREL);
    XCHECK_OK(t_rcvrel(acc));
    XCHECK_OK(t_sndrel(acc));
    for (long long end = ms_now() + 5000; t_look(cli) != T_ORDREL && ms_now() < end;)
        usleep(200); /* t_rcvrel takes only a release already there */
    XCHECK_OK(t_rcvrel(cli));
    CHECK_EQ(t_getstate(cli), T_IDLE);
    t_close(cli);
    t_close(acc);

    /* t_close: what t_snd took is sent, as a socket's close sends its buffer */
    if (tcp_pair(&cli, &acc) < 0)
        return;
    for (int i = 0; i < 3000; i += 30)
        CHECK_EQ(t_snd(cli, want + i, 30, T_MORE), 30);
    CHECK_EQ(t_close(cli), 0);
    CHECK_EQ(rcv_all(acc, got, 3000), 3000);
    CHECK(memcmp(got, want, 3000) == 0);
    t_close(acc);
}

/* M.6 */
static void m_snddis_new_connection(void)
{
    struct xti_addr la;
    struct t_call call;
    int len, lis, cli, acc, acc2, flags;
    struct sockaddr_in6 want = tcpu_addr(AF_INET, 0, &len);
    char got[64];

    lis = xti_bound(TCPU_DEV, 2, &want, (unsigned)len, &la);
    cli = xti_bound(TCPU_DEV, 0, NULL, 0, NULL);
    acc = t_open(TCPU_DEV, O_RDWR, NULL);
    acc2 = t_open(TCPU_DEV, O_RDWR, NULL);
    if (!CHECK(lis >= 0 && cli >= 0 && acc >= 0 && acc2 >= 0))
        return;
    for (int round = 0; round < 2; round++) {
        int a = round ? acc2 : acc;
        xti_set_nb(cli, 1);
        CHECK(xti_connect_to(cli, &la) == -1 && t_errno == TNODATA);
        memset(&call, 0, sizeof(call));
        XCHECK_OK(t_listen(lis, &call));
        XCHECK_OK(t_accept(lis, a, &call));
        xti_set_nb(cli, 0);
        XCHECK_OK(t_rcvconnect(cli, NULL));
        if (round == 0) {
            CHECK_EQ(t_snd(cli, "OLD", 3, T_MORE), 3);
            XCHECK_OK(t_snddis(cli, NULL)); /* abortive: what is held is dropped */
            CHECK_EQ(t_getstate(cli), T_IDLE);
        } else {
            CHECK_EQ(t_snd(cli, "NEW", 3, 0), 3);
            CHECK_EQ(rcv_all(a, got, 3), 3);
            CHECK(memcmp(got, "NEW", 3) == 0); /* never "OLDNEW" */
            CHECK(quiet(a, 20));
        }
    }
    (void)flags;
    t_close(cli);
    t_close(acc);
    t_close(acc2);
    t_close(lis);
}

/* M.7 */
static void m_switch(void)
{
    int cli, acc, u, flags;
    char got[16];

    if (tcp_pair(&cli, &acc) < 0)
        return;
    CHECK_EQ(t_coalesce(cli, -1), 1); /* a byte stream: on by default */
    XCHECK_ERR(t_coalesce(cli, 2), TBADFLAG);
    XCHECK_ERR(t_coalesce(-1, 1), TBADF);
    u = t_open("/dev/ticlts", O_RDWR, NULL);
    if (CHECK(u >= 0)) {
        XCHECK_ERR(t_coalesce(u, 1), TNOTSUPPORT);
        t_close(u);
    }
    /* off: what is held goes first */
    CHECK_EQ(t_snd(cli, "ab", 2, T_MORE), 2);
    CHECK_EQ(t_coalesce(cli, 0), 1);
    CHECK_EQ(rcv_all(acc, got, 2), 2);
    CHECK(memcmp(got, "ab", 2) == 0);
    CHECK_EQ(t_snd(cli, "cd", 2, T_MORE), 2); /* off: goes at once */
    CHECK_EQ(rcv_all(acc, got, 2), 2);
    CHECK(memcmp(got, "cd", 2) == 0);
    CHECK_EQ(t_coalesce(cli, 1), 0);
    /* a request held by T_MORE, then the sender waits for the answer: t_rcv sends it */
    for (int i = 0; i < 20; i++) {
        long long t0 = ms_now();
        CHECK_EQ(t_snd(cli, "?", 1, T_MORE), 1);
        xti_set_nb(cli, 1);
        XCHECK_ERR(t_rcv(cli, got, 1, &flags), TNODATA); /* flushes the hold */
        xti_set_nb(cli, 0);
        CHECK_EQ(rcv_all(acc, got, 1), 1);
        CHECK_EQ(got[0], '?');
        CHECK_EQ(t_snd(acc, "!", 1, 0), 1);
        CHECK_EQ(rcv_all(cli, got, 1), 1);
        CHECK_EQ(got[0], '!');
        CHECK(ms_now() - t0 < 1000);
    }
    t_close(cli);
    t_close(acc);
}

/* M.8 */
#define M8_RECS 3000
struct m8 {
    int fd, id;
};

static void *m8_sender(void *p)
{
    struct m8 *a = p;
    for (int i = 0; i < M8_RECS; i++) {
        char rec[8];
        memcpy(rec, &a->id, 4);
        memcpy(rec + 4, &i, 4);
        if (t_snd(a->fd, rec, 8, (i % 50 == 49) ? 0 : T_MORE) != 8) {
            CHECK(0);
            break;
        }
    }
    return NULL;
}

static void m_threads(void)
{
    static char got[2 * M8_RECS * 8];
    int cli, acc, next[2] = {0, 0};
    pthread_t t[2];
    struct m8 a[2];

    if (tcp_pair(&cli, &acc) < 0)
        return;
    for (int i = 0; i < 2; i++) {
        a[i] = (struct m8){cli, i};
        pthread_create(&t[i], NULL, m8_sender, &a[i]);
    }
    CHECK_EQ(rcv_all(acc, got, (int)sizeof(got)), (int)sizeof(got));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (size_t off = 0; off < sizeof(got); off += 8) {
        int id, seq;
        memcpy(&id, got + off, 4);
        memcpy(&seq, got + off + 4, 4);
        if (!CHECK(id == 0 || id == 1) || !CHECK_EQ(seq, next[id]))
            break;
        next[id]++;
    }
    CHECK_EQ(next[0], M8_RECS);
    CHECK_EQ(next[1], M8_RECS);
    CHECK(quiet(acc, 20));
    t_close(cli);
    t_close(acc);
}

/* M.9 */
struct m9 {
    int cli;
};

static int m9_child(void *p)
{
    struct m9 *a = p;
    int cli, acc;
    char got[4];

    /* the inherited endpoint: closing it sends nothing of the parent's hold */
    t_close(a->cli);
    /* a connection of the child's own: its timer sends a lone held byte */
    if (tcp_pair(&cli, &acc) == 0) {
        CHECK_EQ(t_snd(cli, "K", 1, T_MORE), 1);
        CHECK_EQ(rcv_all(acc, got, 1), 1);
        CHECK_EQ(got[0], 'K');
        t_close(cli);
        t_close(acc);
    }
    return FK_CHILD_FAILED();
}

static void m_fork(void)
{
    int cli, acc;
    char got[8];
    struct m9 a;

    if (tcp_pair(&cli, &acc) < 0)
        return;
    CHECK_EQ(t_snd(cli, "P", 1, T_MORE), 1);
    a.cli = cli;
    CHECK_EQ(fk_run(m9_child, &a, 20000), 0);
    CHECK_EQ(t_snd(cli, "Q", 1, 0), 1);
    CHECK_EQ(rcv_all(acc, got, 2), 2);
    CHECK(memcmp(got, "PQ", 2) == 0); /* "P" once: the child sent none of it */
    CHECK(quiet(acc, 20));
    t_close(cli);
    t_close(acc);
}

/* M.10 */
static void m_efault(void)
{
    int cli, acc;
    char got[4];

    if (tcp_pair(&cli, &acc) < 0)
        return;
    CHECK_EQ(t_snd(cli, "a", 1, T_MORE), 1);
    int r = t_snd(cli, (void *)(uintptr_t)8, 4, T_MORE);
    CHECK(r == -1 && t_errno == TSYSERR && errno == EFAULT);
    r = t_snd(cli, (void *)(uintptr_t)8, 4, 0);
    CHECK(r == -1 && t_errno == TSYSERR && errno == EFAULT);
    CHECK_EQ(t_snd(cli, "b", 1, 0), 1);
    CHECK_EQ(rcv_all(acc, got, 2), 2);
    CHECK(memcmp(got, "ab", 2) == 0);
    CHECK(quiet(acc, 20));
    t_close(cli);
    t_close(acc);
}

int main(void)
{
    alarm(150); /* a hang fails (SIGALRM) before ctest's 180 s */
    xti_require(TCPU_DEV);
    xti_require(ORD);
    m_tcp_sizes();
    m_timer();
    m_ord_crossings();
    m_ord_records(65536);
    m_ord_records(100);
    m_release_close();
    m_snddis_new_connection();
    m_switch();
    m_threads();
    m_fork();
    m_efault();
    return xti_finish();
}
