/* SPDX-License-Identifier: MIT */
/*
 * test_head_lend_slots.c -- the library's ends (L) of the readiness pairs in
 * the ring's fixed-file table are let go at close (sd_lend.c
 * ust_lend_close), and the slots come back:
 *   L.1 with RLIMIT_NOFILE at 64 (a table of 64 slots), 3000 pipes (6000
 *       streams) made and closed one after the other: every end's L is in
 *       the ring (sd_lslot >= 0, never the epoll fallback), data and
 *       readiness work on each, and no descriptor is left behind
 *   L.2 a thread polling a stream's descriptor (a dup of it) while the
 *       stream's last library descriptor is closed sees the other end's
 *       hang-up promptly (L is gone when strm_close returns)
 * Where io_uring is not available to the library there is nothing to test:
 * it says so and passes (the epoll fallback closes L with close(2)).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fd_util.h"
#include "sthead.h" /* ust_sd_peek, ust_lend_ring_on */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* L.1 */
static void test_slots_come_back(void)
{
    int p0[2];
    CHECK_EQ(strm_pipe(p0), 0); /* the library's own descriptors made first */
    CHECK_EQ(strm_close(p0[0]), 0);
    CHECK_EQ(strm_close(p0[1]), 0);
    int before = count_fds(), in_ring = 0, worked = 0;
    const int n = 3000;

    for (int i = 0; i < n; i++) {
        int p[2];
        char c = 0;
        if (strm_pipe(p) != 0) {
            CHECK_EQ(errno, 0);
            break;
        }
        struct stdata *a = ust_sd_peek(p[0]), *b = ust_sd_peek(p[1]);
        in_ring += a != NULL && b != NULL && a->sd_lslot >= 0 && b->sd_lslot >= 0;
        struct pollfd pf = {.fd = p[1], .events = POLLIN};
        if (strm_write(p[0], "x", 1) == 1 && poll(&pf, 1, 5000) == 1 &&
            (pf.revents & POLLIN) && strm_read(p[1], &c, 1) == 1 && c == 'x')
            worked++;
        CHECK_EQ(strm_close(p[0]), 0);
        CHECK_EQ(strm_close(p[1]), 0);
    }
    CHECK_EQ(in_ring, n);
    CHECK_EQ(worked, n);
    CHECK_EQ(count_fds(), before);
}

/* L.2 */
struct poller {
    int fd;
    short revents;
    long waited;
};

static void *poll_thread(void *arg)
{
    struct poller *pl = arg;
    struct pollfd pf = {.fd = pl->fd, .events = POLLIN};
    long t0 = now_ms();
    if (poll(&pf, 1, 10000) == 1)
        pl->revents = pf.revents;
    pl->waited = now_ms() - t0;
    return NULL;
}

static void test_hangup_prompt(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    int u = dup(p[1]); /* a plain descriptor of p[1]'s U, not the library's */
    CHECK(u >= 0);
    struct poller pl = {.fd = u};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, poll_thread, &pl), 0);
    struct timespec ms50 = {0, 50000000};
    nanosleep(&ms50, NULL); /* the thread is in poll(2) */
    long t0 = now_ms();
    CHECK_EQ(strm_close(p[0]), 0); /* p[1] hangs up: its L shut down */
    CHECK_EQ(strm_close(p[1]), 0); /* its last library descriptor: L goes */
    pthread_join(t, NULL);
    CHECK(pl.revents != 0);
    CHECK(now_ms() - t0 < 4000);
    close(u);
}

int main(void)
{
    struct rlimit rl;

    alarm(120); /* the deadline: a hang fails */
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = 64; /* before the first stream: the ring's table gets 64 slots */
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    if (!ust_lend_ring_on()) {
        printf("  (no io_uring: nothing to test)\n");
        return 0;
    }
    test_slots_come_back();
    test_hangup_prompt();
    return CHECK_RESULT();
}
