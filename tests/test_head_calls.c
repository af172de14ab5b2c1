/* SPDX-License-Identifier: MIT */
/*
 * test_head_calls.c -- calls in progress counted in the calling thread's
 * slot (src/head/sd_calls.c): a teardown still waits for every call inside
 * the stream, whichever way it was counted.
 *
 *   C.1 a read blocked in one thread is seen (ust_sd_calls_in, after the
 *       fence) and no longer once it returned; the main thread's own call
 *       is counted while it lasts
 *   C.2 close from another thread while a read is blocked: the read ends
 *       (0 or an error), close returns, the stream is gone
 *   C.3 threaded: 4 threads write and read on pipes that a fifth thread
 *       closes under them and makes again, for a while: every call returns
 *       (data, EBADF, EPIPE, or ENOSTR once the number names one of the
 *       library's own descriptors), nothing hangs, no block outstanding
 *   C.4 threads that exit leave their slots to new threads: 200 short-lived
 *       threads, one call each, all counted and ended
 *   C.5 fork while another thread is blocked in a read: the child makes,
 *       uses and closes pipes of its own (no wait for the parent's thread)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "sthead.h"
#include "thread_asleep.h"

struct blocked {
    int fd;
    atomic_int tid, done;
    ssize_t r;
    int err;
};

static void *blocked_read(void *arg)
{
    struct blocked *b = arg;
    char c;
    atomic_store(&b->tid, (int)gettid());
    b->r = strm_read(b->fd, &c, 1);
    b->err = errno;
    atomic_store(&b->done, 1);
    return NULL;
}

/* Wait until b's thread sleeps inside its read. */
static int wait_asleep(struct blocked *b)
{
    for (int i = 0; i < 4000; i++) {
        int tid = atomic_load(&b->tid);
        if (tid != 0 && thread_in_futex(tid))
            return 1;
        usleep(500);
    }
    return 0;
}

/* A thread blocked in a one-byte read of fd, seen asleep. */
static void start_blocked(struct blocked *b, int fd, pthread_t *t)
{
    b->fd = fd;
    CHECK_EQ(pthread_create(t, NULL, blocked_read, b), 0);
    CHECK(wait_asleep(b));
}

static int calls_in(int fd)
{
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return -1;
    ust_sd_calls_fence();
    return ust_sd_calls_in(sd);
}

/* C.1 */
static void test_seen(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(calls_in(p[0]), 0);
    struct blocked b = {0};
    pthread_t t;
    start_blocked(&b, p[0], &t);
    CHECK_EQ(calls_in(p[0]), 1);
    int err = 0;
    struct stdata *sd = ust_sd_get(p[0], &err); /* this thread's call too */
    CHECK(sd != NULL);
    CHECK_EQ(calls_in(p[0]), 2);
    if (sd)
        ust_sd_put(sd);
    CHECK_EQ(strm_write(p[1], "x", 1), 1);
    pthread_join(t, NULL);
    CHECK_EQ(b.r, 1);
    CHECK_EQ(calls_in(p[0]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* C.2 */
static void test_close_under_read(void)
{
    for (int round = 0; round < 20; round++) {
        int p[2];
        CHECK_EQ(strm_pipe(p), 0);
        struct blocked b = {0};
        pthread_t t;
        start_blocked(&b, p[0], &t);
        CHECK_EQ(strm_close(p[0]), 0); /* waits for the read to leave */
        pthread_join(t, NULL);
        CHECK(b.r <= 0);
        CHECK(ust_sd_peek(p[0]) == NULL);
        CHECK_EQ(strm_close(p[1]), 0);
    }
}

/* ---- C.3 ---- */

#define NPIPES 4
static int c3_fds[NPIPES][2];
static atomic_int c3_stop;
static atomic_long c3_calls;

static void *c3_user(void *arg)
{
    int k = (int)(long)arg;
    char buf[64];
    memset(buf, 'a' + k, sizeof(buf));
    while (!atomic_load(&c3_stop)) {
        int i = (int)(atomic_fetch_add(&c3_calls, 1) % NPIPES);
        int w = __atomic_load_n(&c3_fds[i][1], __ATOMIC_RELAXED);
        int r = __atomic_load_n(&c3_fds[i][0], __ATOMIC_RELAXED);
        ssize_t n = strm_write(w, buf, 1 + k * 8);
        if (n < 0)
            CHECK(errno == EBADF || errno == EPIPE || errno == EAGAIN || errno == ENOSTR);
        int nb = 0;
        if (strm_ioctl(r, I_NREAD, &nb) > 0) {
            n = strm_read(r, buf, sizeof(buf)); /* may race another reader: nonblocking end */
            if (n < 0)
                CHECK(errno == EBADF || errno == EAGAIN || errno == ENOSTR);
        }
    }
    return NULL;
}

static void test_close_under_traffic(void)
{
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < NPIPES; i++) {
        CHECK_EQ(strm_pipe(c3_fds[i]), 0);
        CHECK_EQ(strm_fcntl(c3_fds[i][0], F_SETFL, O_NONBLOCK), 0);
        CHECK_EQ(strm_fcntl(c3_fds[i][1], F_SETFL, O_NONBLOCK), 0);
    }
    atomic_store(&c3_stop, 0);
    pthread_t t[4];
    for (long k = 0; k < 4; k++)
        CHECK_EQ(pthread_create(&t[k], NULL, c3_user, (void *)k), 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rounds = 0;
    do {
        int i = rounds % NPIPES, np[2];
        CHECK_EQ(strm_pipe(np), 0);
        CHECK_EQ(strm_fcntl(np[0], F_SETFL, O_NONBLOCK), 0);
        CHECK_EQ(strm_fcntl(np[1], F_SETFL, O_NONBLOCK), 0);
        int o0 = __atomic_exchange_n(&c3_fds[i][0], np[0], __ATOMIC_RELAXED);
        int o1 = __atomic_exchange_n(&c3_fds[i][1], np[1], __ATOMIC_RELAXED);
        CHECK_EQ(strm_close(o0), 0);
        CHECK_EQ(strm_close(o1), 0);
        rounds++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
    atomic_store(&c3_stop, 1);
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    for (int i = 0; i < NPIPES; i++) {
        CHECK_EQ(strm_close(c3_fds[i][0]), 0);
        CHECK_EQ(strm_close(c3_fds[i][1]), 0);
    }
    printf("C.3: %d pipes closed under %ld calls\n", rounds, atomic_load(&c3_calls));
    CHECK(rounds > 10);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* ---- C.4 ---- */

static int c4_fd;

static void *c4_one(void *arg)
{
    (void)arg;
    CHECK_EQ(strm_write(c4_fd, "y", 1), 1);
    return NULL;
}

static void test_thread_turnover(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    c4_fd = p[1];
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, c4_one, NULL), 0);
        pthread_join(t, NULL);
        char c;
        CHECK_EQ(strm_read(p[0], &c, 1), 1);
    }
    CHECK_EQ(calls_in(p[1]), 0);
    CHECK_EQ(calls_in(p[0]), 0);
    CHECK_EQ(strm_close(p[0]), 0); /* nothing waits on a dead thread's slot */
    CHECK_EQ(strm_close(p[1]), 0);
}

/* ---- C.5 ---- */

static int c5_child(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++) {
        int q[2];
        if (strm_pipe(q) != 0)
            return 2;
        char c = 0;
        if (strm_write(q[1], "z", 1) != 1 || strm_read(q[0], &c, 1) != 1 || c != 'z')
            return 3;
        if (strm_close(q[0]) != 0 || strm_close(q[1]) != 0)
            return 4;
    }
    return FK_CHILD_FAILED();
}

static void test_fork_with_blocked_reader(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    struct blocked b = {0};
    pthread_t t;
    start_blocked(&b, p[0], &t);
    CHECK_EQ(fk_run(c5_child, NULL, 20000), 0);
    CHECK_EQ(strm_write(p[1], "w", 1), 1);
    pthread_join(t, NULL);
    CHECK_EQ(b.r, 1);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_seen();
    test_close_under_read();
    test_close_under_traffic();
    test_thread_turnover();
    test_fork_with_blocked_reader();
    return CHECK_RESULT();
}
