/* SPDX-License-Identifier: MIT */
/*
 * test_head_watch.c -- the safety net under untimed waits (src/head/sd_watch.c).
 *   1. an untimed wait that nobody wakes returns within two recheck
 *      intervals, its sequence unchanged (its caller looks again)
 *   2. a real wake-up still ends a wait at once
 *   3. a signal handled with SA_RESTART does not end an untimed wait with
 *      EINTR (the futex wait itself is untimed)
 *   4. nothing here counts as a lost wake-up (only callers report those)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* One untimed wait on sd's read queue; returns its result, *ms its length. */
static int wait_once(struct stdata *sd, long long *ms, unsigned *seq_after, unsigned *seq_before)
{
    ust_lock(&sd->sd_lock);
    unsigned seq = ust_sd_wait_seq(&sd->sd_rwait);
    long long t0 = now_ms();
    int r = ust_sd_wait_from(sd, &sd->sd_rwait, seq, 0);
    *ms = now_ms() - t0;
    *seq_before = seq;
    *seq_after = ust_sd_wait_seq(&sd->sd_rwait);
    ust_unlock(&sd->sd_lock);
    return r;
}

static void *waker(void *p)
{
    struct stdata *sd = p;
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    ust_sd_wake(&sd->sd_rwait);
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
}

static pthread_t main_thread;

static void *signaller(void *p)
{
    (void)p;
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    pthread_kill(main_thread, SIGUSR1);
    return NULL;
}

int main(void)
{
    int p[2], err;
    long long ms;
    unsigned after, before;
    long lost0 = ust_sd_lost_wakeups();

    CHECK_EQ(strm_pipe(p), 0);
    struct stdata *sd = ust_sd_get(p[0], &err);
    CHECK(sd != NULL);

    /* 1 */
    CHECK_EQ(wait_once(sd, &ms, &after, &before), 0);
    CHECK_EQ(after, before);
    CHECK(ms < 3 * UST_WAIT_RECHECK_NS / 1000000 + 200);

    /* 2 */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, waker, sd), 0);
    CHECK_EQ(wait_once(sd, &ms, &after, &before), 0);
    pthread_join(t, NULL);
    CHECK(after != before || ms < UST_WAIT_RECHECK_NS / 1000000); /* woken, not the net */

    /* 3 */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    main_thread = pthread_self();
    CHECK_EQ(pthread_create(&t, NULL, signaller, NULL), 0);
    int r = wait_once(sd, &ms, &after, &before);
    pthread_join(t, NULL);
    CHECK_EQ(r, 0); /* not EINTR */

    /* 4 */
    CHECK_EQ(ust_sd_lost_wakeups(), lost0);
    ust_sd_put(sd);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
