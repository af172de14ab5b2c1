/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_hold.c -- write holding (SNDHOLD) on a pipe, seen from the
 * reading end, with M_READ (RMREAD) and read-fill (RFILL): what releases a
 * hold, what a reader gets, and that bytes and order are exact.
 * docs/STREAMHEAD.md "Writing" (SNDHOLD) and "Hold and read-fill, one copy";
 * SVR4 STREAMS Programmer's Guide, I_SWROPT / SO_STRHOLD and M_READ; Linux
 * Fast-STREAMS read-fill.  The threaded byte-counting stress is
 * test_pipe_hold_stress.c.
 *
 *   H.1 a burst of small writes is held and sent by the hold timer, as one
 *       message, bytes exact, within a few ticks, with nobody reading
 *   H.2 M_READ from a reader about to block releases the hold at once
 *   H.3 a write that is not held sends the hold first: order and the
 *       boundary between the two kept (RMSGN reader)
 *   H.4 close sends the hold: nothing lost, then end of file
 *   H.5 I_FLUSH on the writer sends the hold before the flush: the flush
 *       reaches it at the reader (nothing written before the flush is read)
 *   H.6 a reader waiting for SIGPOLL (I_SETSIG S_RDNORM) gets its signal
 *       for held data (the timer sends it)
 *   H.7 RFILL + RMREAD: a read returns exactly its count from many held
 *       writes; a hang-up ends it early with what came; POLLIN withdrawn
 *       after a fill read that emptied the queue
 *   H.8 putmsg sends the hold before its own message; getmsg sees both
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "pattern_util.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}


/* A pipe whose fds[1] end holds small writes (SNDHOLD). */
static void hold_pipe(int fds[2])
{
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_SWROPT, SNDHOLD | SNDPIPE), 0);
}



/* H.1 */
static void test_timer(void)
{
    int p[2];
    hold_pipe(p);
    long long t0 = now_ms();
    pat_write(p[1], 0, 30, 10);
    long long t1 = now_ms();
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    CHECK_EQ(strm_poll(&pf, 1, 2000), 1); /* the timer, nobody reading */
    CHECK(now_ms() - t0 < 1000);
    int nb = -1, nm = strm_ioctl(p[0], I_NREAD, &nb);
    if (t1 - t0 < 5) { /* a burst well inside a tick: one hold, one message */
        CHECK_EQ(nm, 1);
        CHECK_EQ(nb, 30);
    }
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RMSGN), 0);
    pat_read(p[0], 0, 30);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* H.2: 50 rounds of (held write, blocking read).  With M_READ each round is
 * one hand-over; by the timer alone a round waits for the next tick. */
static void test_mread(void)
{
    int p[2];
    hold_pipe(p);
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RNORM | RMREAD), 0);
    long long t0 = now_ms();
    for (int i = 0; i < 50; i++) {
        pat_write(p[1], (size_t)i * 10, 10, 10);
        pat_read(p[0], (size_t)i * 10, 10);
    }
    long long with = now_ms() - t0;
    CHECK(with < 250); /* the timer alone: ~5 ms a round, 250 ms */
    /* the same without RMREAD waits for the timer every round */
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RNORM), 0);
    t0 = now_ms();
    for (int i = 0; i < 10; i++) {
        pat_write(p[1], (size_t)i * 10, 10, 10);
        pat_read(p[0], (size_t)i * 10, 10);
    }
    CHECK(now_ms() - t0 >= 10);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* H.3 */
static void test_larger_write(void)
{
    int p[2];
    hold_pipe(p);
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RMSGN), 0);
    pat_write(p[1], 0, 10, 10);   /* held */
    pat_write(p[1], 10, 500, 500); /* not held: sends the hold first */
    int nb = -1;
    CHECK_EQ(strm_ioctl(p[0], I_NREAD, &nb), 2); /* both there at once */
    CHECK_EQ(nb, 10);
    unsigned char buf[1000];
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 10);
    CHECK_EQ(buf[0], pat(0));
    CHECK_EQ(buf[9], pat(9));
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 500);
    CHECK_EQ(buf[0], pat(10));
    CHECK_EQ(buf[499], pat(509));
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* H.4 */
static void test_close(void)
{
    int p[2];
    hold_pipe(p);
    pat_write(p[1], 0, 7, 7);
    CHECK_EQ(strm_close(p[1]), 0);
    pat_read(p[0], 0, 7);
    unsigned char c;
    CHECK_EQ(strm_read(p[0], &c, 1), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* H.5 */
static void test_flush(void)
{
    int p[2];
    hold_pipe(p);
    pat_write(p[1], 0, 20, 10);
    CHECK_EQ(strm_ioctl(p[1], I_FLUSH, FLUSHRW), 0);
    pat_write(p[1], 20, 500, 500);
    int nb = -1;
    CHECK_EQ(strm_ioctl(p[0], I_NREAD, &nb), 1); /* the held 20 were flushed */
    CHECK_EQ(nb, 500);
    pat_read(p[0], 20, 500);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* H.6 */
static atomic_int polls;
static void on_poll(int sig)
{
    (void)sig;
    atomic_fetch_add(&polls, 1);
}

static void test_setsig(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_poll;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGPOLL, &sa, &old), 0);
    int p[2];
    hold_pipe(p);
    CHECK_EQ(strm_ioctl(p[0], I_SETSIG, S_RDNORM), 0);
    atomic_store(&polls, 0);
    pat_write(p[1], 0, 40, 8);
    long long t0 = now_ms();
    while (atomic_load(&polls) == 0 && now_ms() - t0 < 2000)
        usleep(1000);
    CHECK(atomic_load(&polls) >= 1);
    pat_read(p[0], 0, 40);
    CHECK_EQ(strm_ioctl(p[0], I_SETSIG, 0), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    sigaction(SIGPOLL, &old, NULL);
}

/* H.7 */
struct feed {
    int fd;
    size_t off, n, each;
    int close_after;
};

static void *feeder(void *arg)
{
    struct feed *f = arg;
    pat_write(f->fd, f->off, f->n, f->each);
    if (f->close_after)
        CHECK_EQ(strm_close(f->fd), 0);
    return NULL;
}

static void test_fill(void)
{
    int p[2];
    hold_pipe(p);
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RNORM | RFILL | RMREAD), 0);
    static unsigned char buf[20000];
    /* one read, its whole count, from 1000 held writes of 10 bytes and
     * some of 300 (not held) */
    for (int round = 0; round < 3; round++) {
        struct feed f = {p[1], 0, 10000, round == 2 ? 300 : 10, 0};
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, feeder, &f), 0);
        ssize_t r = strm_read(p[0], buf, 10000);
        CHECK_EQ(r, 10000);
        size_t bad = 0;
        for (size_t i = 0; r == 10000 && i < 10000; i++)
            bad += buf[i] != pat(i);
        CHECK_EQ(bad, 0);
        pthread_join(t, NULL);
        /* the read emptied the queue: the descriptor shows no POLLIN */
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        CHECK_EQ(poll(&pf, 1, 0), 0);
    }
    /* a hang-up ends a fill read early with what came */
    struct feed f = {p[1], 0, 777, 7, 1};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, feeder, &f), 0);
    size_t got = 0;
    for (;;) {
        ssize_t r = strm_read(p[0], buf + got, sizeof(buf) - got);
        if (r <= 0) {
            CHECK_EQ(r, 0);
            break;
        }
        got += (size_t)r;
    }
    pthread_join(t, NULL);
    CHECK_EQ(got, 777);
    size_t bad = 0;
    for (size_t i = 0; i < got && i < 777; i++)
        bad += buf[i] != pat(i);
    CHECK_EQ(bad, 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* H.8 */
static void test_putmsg(void)
{
    int p[2];
    hold_pipe(p);
    pat_write(p[1], 0, 12, 12);
    unsigned char d[5] = {pat(12), pat(13), pat(14), pat(15), pat(16)};
    struct strbuf db = {.len = 5, .buf = (char *)d};
    CHECK_EQ(putmsg(p[1], NULL, &db, 0), 0);
    unsigned char buf[64];
    struct strbuf rb = {.maxlen = sizeof(buf), .buf = (char *)buf};
    int fl = 0;
    CHECK_EQ(getmsg(p[0], NULL, &rb, &fl), 0);
    CHECK_EQ(rb.len, 12);
    CHECK_EQ(buf[0], pat(0));
    CHECK_EQ(buf[11], pat(11));
    fl = 0;
    CHECK_EQ(getmsg(p[0], NULL, &rb, &fl), 0);
    CHECK_EQ(rb.len, 5);
    CHECK_EQ(buf[4], pat(16));
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

int main(void)
{
    alarm(120); /* a hang fails the test */
    test_timer();
    test_mread();
    test_larger_write();
    test_close();
    test_flush();
    test_setsig();
    test_fill();
    test_putmsg();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
