/* SPDX-License-Identifier: MIT */
/*
 * test_write_intr.c -- a writer blocked by flow control on a pipe, hit by a
 * signal: what the call returns and exactly which bytes arrive.
 *
 * References: write(2) (SVR4, Solaris, POSIX: "If write() is interrupted by
 * a signal before it writes any data, it returns -1 with errno set to
 * EINTR; if it is interrupted after it successfully writes some data, it
 * returns the number of bytes written"; a write to a STREAMS file is cut
 * into messages by the packet size of the queue below), putmsg(2) (EINTR:
 * "a signal was caught during the putmsg() function"; one message, all or
 * nothing), sigaction(2) SA_RESTART (a call interrupted with nothing done is
 * restarted; one that did part of its work returns what it did).
 * docs/STREAMHEAD.md, "Writing", states the rule.
 *
 * The pipe's reading head gets small water marks (hiwat 4000, lowat 1000)
 * (strqset on its read queue) and the queue below the writing head a packet
 * size of 1000, so a write of 6000 bytes goes as 1000-byte messages and
 * blocks after about four of them.
 * Cases (each with SA_RESTART off, then on):
 *   I.1 write, some messages sent, then blocked: the signal ends it with the
 *       count sent (a multiple of 1000, > 0, < 6000), SA_RESTART or not;
 *       exactly those bytes arrive, in order
 *   I.2 writev, the same
 *   I.3 write with nothing sent (the pipe already full): EINTR without
 *       SA_RESTART and nothing arrives; with SA_RESTART the call goes on
 *       through the signals and completes once the reader drains
 *   I.4 putmsg (band 0) blocked: as I.3 (all or nothing)
 *   I.5 putpmsg band 1 blocked on band 1: as I.3
 *   I.6 nothing leaks
 * Deadline: every wait is bounded (alarm as the last resort).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "thread_asleep.h"
#include "sthead.h"

#define PKT 1000
#define HIWAT 4000
#define LOWAT 1000
#define BIG 6000

static atomic_int g_sigs;

static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add(&g_sigs, 1);
}

static void set_handler(int restart)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

enum { K_WRITE, K_WRITEV, K_PUTMSG, K_PUTPMSG };

struct writer {
    int fd, kind;
    const unsigned char *buf;
    size_t len;
    atomic_int tid;
    atomic_int done;
    long ret;
    int err;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    errno = 0;
    switch (w->kind) {
    case K_WRITE:
        w->ret = strm_write(w->fd, w->buf, w->len);
        break;
    case K_WRITEV: {
        size_t h = w->len / 3;
        struct iovec v[2] = {{.iov_base = (void *)w->buf, .iov_len = h},
                             {.iov_base = (void *)(w->buf + h), .iov_len = w->len - h}};
        w->ret = strm_writev(w->fd, v, 2);
        break;
    }
    case K_PUTMSG: {
        struct strbuf d = {.len = (int)w->len, .buf = (char *)w->buf};
        w->ret = putmsg(w->fd, NULL, &d, 0);
        break;
    }
    case K_PUTPMSG: {
        struct strbuf d = {.len = (int)w->len, .buf = (char *)w->buf};
        w->ret = putpmsg(w->fd, NULL, &d, 1, MSG_BAND);
        break;
    }
    }
    w->err = errno;
    atomic_store(&w->done, 1);
    return NULL;
}

/* Wait (bounded) until the writer sleeps at its wait point. */
static int wait_asleep(struct writer *w)
{
    return thread_wait_asleep(&w->tid, &w->done, 5000);
}

/* Signal the writer every 20 ms until it returns (bounded): 1 if it did. */
static int signal_until_done(pthread_t t, struct writer *w)
{
    long long end = now_ms() + 5000;
    while (!atomic_load(&w->done) && now_ms() < end) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(20);
    }
    return atomic_load(&w->done);
}

/* Read everything queued at fd (non-blocking) into out; its length. */
static size_t drain(int fd, unsigned char *out, size_t cap)
{
    size_t got = 0;
    for (;;) {
        struct strbuf d = {.maxlen = (int)(cap - got), .buf = (char *)out + got};
        int fl = 0;
        int r = getmsg(fd, NULL, &d, &fl);
        if (r < 0) {
            CHECK_EQ(errno, EAGAIN);
            return got;
        }
        CHECK_EQ(r, 0);
        if (d.len > 0)
            got += (size_t)d.len;
        if (got >= cap)
            return got;
    }
}

/* A pipe whose reading end fds[1] has the small marks and packet size. */
static void make_pipe(int fds[2])
{
    CHECK_EQ(strm_pipe(fds), 0);
    queue_t *rq = ust_sd_peek(fds[1])->sd_rq;
    /* the packet size the writing head reads: its queue below (the pipe's) */
    CHECK_EQ(strqset(ust_qnext(ust_sd_peek(fds[0])->sd_wq), QMAXPSZ, 0, PKT), 0);
    CHECK_EQ(strqset(rq, QHIWAT, 0, HIWAT), 0);
    CHECK_EQ(strqset(rq, QLOWAT, 0, LOWAT), 0);
    CHECK_EQ(strqset(rq, QHIWAT, 1, HIWAT), 0);
    CHECK_EQ(strqset(rq, QLOWAT, 1, LOWAT), 0);
    CHECK_EQ(strm_fcntl(fds[1], F_SETFL, O_NONBLOCK), 0); /* the reader: drain() */
}

/* Fill fds[0]'s flow control for `band` with non-blocking PKT-byte
 * messages of 'F' until EAGAIN; the bytes queued. */
static size_t fill(int fd, int band)
{
    unsigned char f[PKT];
    memset(f, 'F', sizeof(f));
    size_t n = 0;
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    for (int i = 0; i < 100; i++) {
        struct strbuf d = {.len = PKT, .buf = (char *)f};
        if (putpmsg(fd, NULL, &d, band, MSG_BAND) != 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        n += PKT;
    }
    CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0);
    CHECK(n > 0);
    return n;
}

/* I.1, I.2: partial progress, then a signal. */
static void test_partial(int kind, int restart)
{
    static unsigned char buf[BIG], out[4 * BIG];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 7 + 1);
    int fds[2];
    make_pipe(fds);
    set_handler(restart);
    struct writer w = {.fd = fds[0], .kind = kind, .buf = buf, .len = BIG};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, writer_main, &w), 0);
    CHECK(wait_asleep(&w));
    atomic_store(&g_sigs, 0);
    size_t early = 0;
    if (!CHECK(signal_until_done(t, &w))) /* still asleep: release it by reading */
        while (!atomic_load(&w.done) && early < sizeof(out))
            early += drain(fds[1], out + early, sizeof(out) - early);
    pthread_join(t, NULL);
    CHECK(atomic_load(&g_sigs) >= 1);
    if (!CHECK(w.ret > 0 && w.ret < BIG && w.ret % PKT == 0))
        fprintf(stderr, "  partial kind %d restart %d: ret %ld errno %d\n", kind, restart, w.ret,
                w.err);
    size_t got = early + drain(fds[1], out + early, sizeof(out) - early);
    CHECK_EQ(got, w.ret > 0 ? (size_t)w.ret : 0);
    CHECK(w.ret <= 0 || memcmp(out, buf, (size_t)w.ret) == 0);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* I.3-I.5: nothing sent yet, then signals. */
static void test_nothing(int kind, int restart)
{
    static unsigned char buf[PKT / 2], out[4 * BIG];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 3 + 5);
    int fds[2];
    make_pipe(fds);
    int band = kind == K_PUTPMSG ? 1 : 0;
    size_t pre = fill(fds[0], band);
    set_handler(restart);
    struct writer w = {.fd = fds[0], .kind = kind, .buf = buf, .len = sizeof(buf)};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, writer_main, &w), 0);
    CHECK(wait_asleep(&w));
    atomic_store(&g_sigs, 0);
    long want_ok = kind == K_PUTMSG || kind == K_PUTPMSG ? 0 : (long)sizeof(buf);
    if (!restart) {
        if (!CHECK(signal_until_done(t, &w)))
            drain(fds[1], out, sizeof(out)); /* release it */
        pthread_join(t, NULL);
        CHECK_EQ(w.ret, -1);
        CHECK_EQ(w.err, EINTR);
        CHECK_EQ(drain(fds[1], out, sizeof(out)), pre); /* only the fill */
    } else {
        for (int i = 0; i < 5; i++) { /* restarted each time: still waiting */
            pthread_kill(t, SIGUSR1);
            sleep_ms(20);
        }
        CHECK(!atomic_load(&w.done));
        size_t got = drain(fds[1], out, sizeof(out)); /* relief: the writer goes on */
        long long end = now_ms() + 5000;
        while (!atomic_load(&w.done) && now_ms() < end)
            sleep_ms(2);
        CHECK(atomic_load(&w.done));
        pthread_join(t, NULL);
        /* counted here: under TSan a handler runs late, once the call is out
         * of the kernel's (restarted) wait */
        CHECK(atomic_load(&g_sigs) >= 1);
        CHECK_EQ(w.ret, want_ok);
        got += drain(fds[1], out + got, sizeof(out) - got);
        CHECK_EQ(got, pre + sizeof(buf));
        CHECK(got >= pre + sizeof(buf) && memcmp(out + pre, buf, sizeof(buf)) == 0);
    }
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

int main(void)
{
    alarm(150); /* last-resort deadline: every wait above is bounded */
    for (int restart = 0; restart < 2; restart++) {
        test_partial(K_WRITE, restart);   /* I.1 */
        test_partial(K_WRITEV, restart);  /* I.2 */
        test_nothing(K_WRITE, restart);   /* I.3 */
        test_nothing(K_PUTMSG, restart);  /* I.4 */
        test_nothing(K_PUTPMSG, restart); /* I.5 */
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS(); /* I.6 */
    return CHECK_RESULT();
}
