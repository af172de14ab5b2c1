/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_lazytok.c -- the lazy readable token (src/head/sd_tokpay.c,
 * docs/STREAMHEAD.md "The lazy readable token"): once a blocking reader of a
 * pipe has run dry, writes join the arrivals without showing POLLIN on the
 * descriptor; what is left unread is shown within a few milliseconds (late),
 * and the descriptor never shows POLLIN for an empty stream (never early).
 * A stream that anybody may watch -- strm_poll, O_NONBLOCK, I_SETSIG -- is
 * exact again at once, paying what was owed.
 *
 *   L.1 after a blocking reader's dry read, a write is not shown at once
 *       (in at least one of several tries: the lazy path is taken), and
 *       every such write is shown within the bound, read back intact
 *   L.2 never early: a drained stream with its reader asleep never shows
 *       POLLIN to poll(2) on the descriptor, across many payer ticks
 *   L.3 strm_poll makes the stream exact for ever: every later write shows
 *       POLLIN at once, even after a blocking reader's dry read
 *   L.4 F_SETFL O_NONBLOCK pays the debt at once
 *   L.5 I_SETSIG pays the debt at once
 *   L.6 threaded, with a nullmod pushed: 2 writers x N numbered messages,
 *       one blocking reader (RMSGN): none lost, duplicated or reordered per
 *       writer; a raw poller runs throughout; no POLLIN once drained; no
 *       block outstanding
 *   L.7 a debt owed at fork() is paid in the parent
 *   L.8 a stream closed while it owes: nothing leaks, the pooled head is
 *       clean for the next pipe
 *   L.9 across fork: the child reads (its own payer, started in the child),
 *       the parent writes while the child is not reading: the child's
 *       descriptor shows it within the bound, and the data is intact
 *   L.10 strinfo's view (ustreams_dump_stream): rtoken=down watched=0 on a
 *       new pipe, lazy after a dry read, owed (or shown, once paid) with
 *       data unread, shown once paid, watched=1 after strm_poll
 *   L.11 the payer's tick could not be armed (timeouts out of memory) when
 *       the reader ran dry: a read that then leaves data arms it, and the
 *       data is shown within the bound
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "check.h"
#include "fork_util.h"
#include "strcore.h"
#include "thread_asleep.h"

#define LATE_MAX_MS 100 /* shown within this (the rule: 1-2 ms; slack for load) */
#define TRIES 20

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* poll(2) on the descriptor itself (the kernel's view): POLLIN now? */
static int raw_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);
    return r > 0 && (p.revents & POLLIN);
}

/* Microseconds until the descriptor shows POLLIN, or -1 past LATE_MAX_MS. */
static long long until_readable(int fd)
{
    long long t0 = now_us();
    if (!raw_readable(fd, LATE_MAX_MS))
        return -1;
    return now_us() - t0;
}

/* A thread blocked in a one-byte read of fd. */
struct dryer {
    int fd;
    atomic_int tid;
    atomic_int done;
    ssize_t got;
    char c;
};

static void *dryer_main(void *arg)
{
    struct dryer *d = arg;
    atomic_store(&d->tid, (int)syscall(SYS_gettid));
    d->got = strm_read(d->fd, &d->c, 1);
    atomic_store(&d->done, 1);
    return NULL;
}

/* Make the reading end rfd lazy the way a program does: a blocking reader
 * runs dry and sleeps, a write wakes it.  Returns 1 when the reader was
 * seen asleep (the dry read happened). */
static int engage(int rfd, int wfd)
{
    struct dryer d = {.fd = rfd};
    pthread_t t;
    if (!CHECK_EQ(pthread_create(&t, NULL, dryer_main, &d), 0))
        return 0;
    int asleep = 0;
    for (int i = 0; i < 2000 && !asleep; i++) {
        int tid = atomic_load(&d.tid);
        asleep = tid != 0 && thread_in_futex(tid);
        if (!asleep)
            usleep(1000);
    }
    CHECK_EQ(strm_write(wfd, "e", 1), 1);
    pthread_join(t, NULL);
    CHECK_EQ(d.got, 1);
    CHECK_EQ(d.c, 'e');
    return asleep;
}

/* Read one message of n bytes with the expected first byte. */
static void read_back(int fd, char first, size_t n)
{
    char buf[256];
    ssize_t r = strm_read(fd, buf, sizeof(buf));
    CHECK_EQ(r, (long)n);
    if (r > 0)
        CHECK_EQ(buf[0], first);
}

static void test_late_not_early(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    int lazy_seen = 0;
    for (int i = 0; i < TRIES; i++) {
        engage(fds[0], fds[1]);
        char msg[32];
        memset(msg, 'a' + i % 26, sizeof(msg));
        CHECK_EQ(strm_write(fds[1], msg, sizeof(msg)), (long)sizeof(msg));
        if (!raw_readable(fds[0], 0))
            lazy_seen++;
        long long late = until_readable(fds[0]);
        CHECK(late >= 0); /* shown, late at most */
        read_back(fds[0], msg[0], sizeof(msg));
        CHECK(!raw_readable(fds[0], 0)); /* drained: not shown */
    }
    CHECK(lazy_seen > 0); /* the lazy path was taken */
    printf("L.1: %d of %d writes not shown at once, all shown within %d ms\n", lazy_seen, TRIES,
           LATE_MAX_MS);
    strm_close(fds[0]);
    strm_close(fds[1]);
}

static void test_never_early(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    for (int round = 0; round < 3; round++) {
        engage(fds[0], fds[1]);
        struct dryer s = {.fd = fds[0]};
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, dryer_main, &s), 0);
        CHECK(thread_wait_asleep(&s.tid, &s.done, 5000));
        int shown = 0;
        for (int i = 0; i < 40; i++) /* 40 ms: many payer ticks, and its linger */
            shown += raw_readable(fds[0], 1);
        CHECK_EQ(shown, 0);
        CHECK_EQ(strm_write(fds[1], "x", 1), 1);
        pthread_join(t, NULL);
        CHECK_EQ(s.got, 1);
        CHECK(!raw_readable(fds[0], 5));
    }
    strm_close(fds[0]);
    strm_close(fds[1]);
}

static void test_poll_exact(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    engage(fds[0], fds[1]);
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    CHECK_EQ(strm_poll(&p, 1, 0), 0);
    for (int i = 0; i < 5; i++) {
        engage(fds[0], fds[1]); /* a dry read no longer makes it lazy */
        CHECK_EQ(strm_write(fds[1], "pq", 2), 2);
        CHECK(raw_readable(fds[0], 0)); /* at once */
        read_back(fds[0], 'p', 2);
        CHECK(!raw_readable(fds[0], 0));
    }
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* A write owed lazily, then `pay` must show it at once. */
static void owed_then(int fds[2], void (*pay)(int fd))
{
    int lazy_seen = 0;
    for (int i = 0; i < TRIES && !lazy_seen; i++) {
        engage(fds[0], fds[1]);
        CHECK_EQ(strm_write(fds[1], "o", 1), 1);
        if (!raw_readable(fds[0], 0)) {
            lazy_seen = 1;
            break;
        }
        read_back(fds[0], 'o', 1);
    }
    CHECK(lazy_seen);
    pay(fds[0]);
    CHECK(raw_readable(fds[0], 0)); /* paid at once, not by the payer */
    read_back(fds[0], 'o', 1);
}

static void pay_nonblock(int fd)
{
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
}

static void pay_setsig(int fd)
{
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_RDNORM), 0);
}

static void test_pay_on_exact(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    owed_then(fds, pay_nonblock);
    char c;
    CHECK_EQ(strm_read(fds[0], &c, 1), -1);
    CHECK_EQ(errno, EAGAIN);
    strm_close(fds[0]);
    strm_close(fds[1]);

    signal(SIGPOLL, SIG_IGN);
    CHECK_EQ(strm_pipe(fds), 0);
    owed_then(fds, pay_setsig);
    strm_close(fds[0]);
    strm_close(fds[1]);
    signal(SIGPOLL, SIG_DFL);
}

/* ---- L.6: counting through a nullmod ---- */

#define NWRITERS 2
#define NMSG 20000

struct wr {
    int fd;
    int id;
};

static void *writer_main(void *arg)
{
    struct wr *w = arg;
    unsigned char buf[64];
    for (int i = 0; i < NMSG; i++) {
        size_t len = 8 + (size_t)(i % 57);
        memset(buf, 0, sizeof(buf));
        buf[0] = (unsigned char)w->id;
        memcpy(buf + 1, &i, sizeof(i));
        if (strm_write(w->fd, buf, len) != (ssize_t)len) {
            CHECK(!"write failed");
            break;
        }
    }
    return NULL;
}

static atomic_int poller_stop;

static void *poller_main(void *arg)
{
    int fd = *(int *)arg;
    while (!atomic_load(&poller_stop))
        (void)raw_readable(fd, 1);
    return NULL;
}

static void test_count_through_module(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_SRDOPT, RMSGN), 0);
    pthread_t wt[NWRITERS], pt;
    struct wr w[NWRITERS];
    atomic_store(&poller_stop, 0);
    CHECK_EQ(pthread_create(&pt, NULL, poller_main, &fds[0]), 0);
    for (int i = 0; i < NWRITERS; i++) {
        w[i].fd = fds[1];
        w[i].id = i + 1;
        CHECK_EQ(pthread_create(&wt[i], NULL, writer_main, &w[i]), 0);
    }
    int next[NWRITERS] = {0};
    long bad = 0, total = 0;
    unsigned char buf[128];
    while (total < (long)NWRITERS * NMSG) {
        ssize_t r = strm_read(fds[0], buf, sizeof(buf));
        if (r <= 0) { /* the writers hold their end open: never */
            bad++;
            break;
        }
        total++; /* a bad message is counted too: the writers never wait for ever */
        int id = r >= 5 ? buf[0] - 1 : -1, seq = -1;
        if (r >= 5)
            memcpy(&seq, buf + 1, sizeof(seq));
        if (id < 0 || id >= NWRITERS || seq != next[id] || r != 8 + seq % 57) {
            bad++;
            continue;
        }
        next[id]++;
    }
    for (int i = 0; i < NWRITERS; i++)
        pthread_join(wt[i], NULL);
    CHECK_EQ(bad, 0);
    CHECK_EQ(total, (long)NWRITERS * NMSG);
    for (int i = 0; i < NWRITERS; i++)
        CHECK_EQ(next[i], NMSG);
    /* Drained, reader gone: not shown, over many ticks. */
    int shown = 0;
    for (int i = 0; i < 20; i++)
        shown += raw_readable(fds[0], 1);
    CHECK_EQ(shown, 0);
    atomic_store(&poller_stop, 1);
    pthread_join(pt, NULL);
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* ---- L.7, L.8 ---- */

static int child_nothing(void *arg)
{
    (void)arg;
    return 0;
}

static void test_fork_pays_in_parent(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    engage(fds[0], fds[1]);
    CHECK_EQ(strm_write(fds[1], "f", 1), 1);
    CHECK_EQ(fk_run(child_nothing, NULL, 10000), 0);
    CHECK(until_readable(fds[0]) >= 0);
    read_back(fds[0], 'f', 1);
    strm_close(fds[0]);
    strm_close(fds[1]);
}

static void test_close_while_owed(void)
{
    for (int round = 0; round < 5; round++) {
        int fds[2];
        CHECK_EQ(strm_pipe(fds), 0);
        engage(fds[0], fds[1]);
        for (int i = 0; i < 10; i++)
            CHECK_EQ(strm_write(fds[1], "cccc", 4), 4);
        CHECK_EQ(strm_close(fds[1]), 0);
        CHECK_EQ(strm_close(fds[0]), 0);
    }
    /* The pooled heads come back clean: exact until a dry read. */
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_write(fds[1], "n", 1), 1);
    CHECK(raw_readable(fds[0], 0));
    read_back(fds[0], 'n', 1);
    strm_close(fds[0]);
    strm_close(fds[1]);
    usleep(50 * 1000); /* the payer's linger passes over freed heads */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* ---- L.9 ---- */

static int l9_fds[2];

static int l9_child(void *arg)
{
    (void)arg;
    int fd = l9_fds[0];
    strm_close(l9_fds[1]);
    char c = 0;
    CHECK_EQ(strm_read(fd, &c, 1), 1); /* blocks: the parent writes after a pause */
    CHECK_EQ(c, 'e');
    CHECK_EQ(strm_write(fd, "r", 1), 1); /* ready: not reading now */
    CHECK(until_readable(fd) >= 0);
    char buf[16];
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 3);
    CHECK(memcmp(buf, "xyz", 3) == 0);
    CHECK(!raw_readable(fd, 5));
    strm_close(fd);
    return FK_CHILD_FAILED() ? 1 : 0;
}

static void test_fork_child_reader(void)
{
    CHECK_EQ(strm_pipe(l9_fds), 0);
    pid_t pid = fk_start(l9_child, NULL);
    CHECK(pid > 0);
    strm_close(l9_fds[0]);
    usleep(50 * 1000); /* the child's read runs dry and sleeps */
    CHECK_EQ(strm_write(l9_fds[1], "e", 1), 1);
    char c = 0;
    CHECK_EQ(strm_read(l9_fds[1], &c, 1), 1);
    CHECK_EQ(c, 'r');
    CHECK_EQ(strm_write(l9_fds[1], "xyz", 3), 3);
    CHECK_EQ(fk_wait(pid, 20000), 0);
    strm_close(l9_fds[1]);
}

/* ---- L.10 ---- */

/* The "stream ..." line strinfo prints for fd (static buffer). */
static const char *stream_line(int fd)
{
    static char line[512];
    char *s = NULL;
    size_t len = 0;
    line[0] = 0;
    FILE *f = open_memstream(&s, &len);
    if (!CHECK(f != NULL))
        return line;
    CHECK_EQ(ustreams_dump_stream(fd, f), 0);
    fclose(f);
    if (s) {
        size_t n = strcspn(s, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)n, s);
        free(s);
    }
    return line;
}

static void test_strinfo_view(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK(strstr(stream_line(fds[0]), " rtoken=down watched=0") != NULL);
    int lazy = 0, owed = 0;
    for (int i = 0; i < TRIES && !(lazy && owed); i++) {
        engage(fds[0], fds[1]);
        lazy += strstr(stream_line(fds[0]), " rtoken=lazy ") != NULL;
        CHECK_EQ(strm_write(fds[1], "v", 1), 1);
        const char *l = stream_line(fds[0]);
        owed += strstr(l, " rtoken=owed ") != NULL;
        CHECK(strstr(l, " rtoken=owed ") || strstr(l, " rtoken=shown ")); /* never down */
        CHECK(until_readable(fds[0]) >= 0);
        CHECK(strstr(stream_line(fds[0]), " rtoken=shown ") != NULL);
        read_back(fds[0], 'v', 1);
    }
    CHECK(lazy > 0);
    CHECK(owed > 0);
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    CHECK_EQ(strm_poll(&p, 1, 0), 0);
    CHECK(strstr(stream_line(fds[0]), " watched=1") != NULL);
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* ---- L.11 ---- */

static void test_payer_arm_fails(void)
{
    usleep(100 * 1000); /* earlier tests' heads leave the payer's list: no tick pending */
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    ust_timeout_fail_next(1); /* the arm at the dry look fails */
    CHECK(engage(fds[0], fds[1]));
    ust_timeout_fail_next(0);
    CHECK_EQ(strm_write(fds[1], "x", 1), 1);
    CHECK_EQ(strm_write(fds[1], "y", 1), 1);
    char c = 0;
    CHECK_EQ(strm_read(fds[0], &c, 1), 1); /* leaves "y": owed */
    CHECK_EQ(c, 'x');
    CHECK(until_readable(fds[0]) >= 0); /* paid within the bound */
    CHECK_EQ(strm_read(fds[0], &c, 1), 1);
    CHECK_EQ(c, 'y');
    strm_close(fds[0]);
    strm_close(fds[1]);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_late_not_early();
    test_never_early();
    test_poll_exact();
    test_pay_on_exact();
    test_count_through_module();
    test_fork_pays_in_parent();
    test_fork_child_reader();
    test_strinfo_view();
    test_close_while_owed();
    test_payer_arm_fails();
    return CHECK_RESULT();
}
