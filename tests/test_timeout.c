/* SPDX-License-Identifier: MIT */
/*
 * test_timeout.c -- timeout(9F), untimeout(9F), qtimeout(9F), quntimeout(9F)
 * (src/core/timeout.c).
 *
 * Time is only ever checked from below: a callback must not fire before its
 * ticks have passed (HZ ticks per second).  Upper bounds are never asserted
 * tighter than seconds -- the machines running the tests are shared.
 *
 * Cases:
 *   1 timeout(9F): fires once, with its argument, on another thread, no
 *     earlier than the ticks asked for; ids are distinct and non-zero
 *   2 untimeout(9F) before expiry: the callback never runs; returns >= 0
 *   3 untimeout(9F) of an unknown, zero or already-fired id returns -1
 *   4 untimeout(9F) of a running callback waits until it has returned
 *   5 untimeout(9F) from inside its own callback does not deadlock
 *   6 timeout(9F): many timeouts fire in order of expiry, not of creation
 *   7 timeout(9F) from inside a callback (re-arming) works
 *   8 qtimeout(9F)/quntimeout(9F) on a queue without a perimeter: fires with
 *     its argument; cancelled before expiry it never runs
 *   9 ust_timeout_ns (the library's sub-tick timer): fires once, no earlier
 *     than its nanoseconds; a huge tick count does not wrap into the past;
 *     untimeout cancels it
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

#define TICK_NS (1000000000LL / HZ)

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int wait_ge(atomic_int *v, int want, long ms)
{
    long long end = now_ns() + ms * 1000000LL;
    while (atomic_load(v) < want) {
        if (now_ns() > end)
            return 0;
        sleep_ms(1);
    }
    return 1;
}

/* ---- 1 ---- */
struct fire {
    atomic_int n;
    atomic_llong at;
    pthread_t tid;
    void *arg;
};

static void fire_cb(void *arg)
{
    struct fire *f = arg;
    f->tid = pthread_self();
    f->arg = arg;
    atomic_store(&f->at, now_ns());
    atomic_fetch_add(&f->n, 1);
}

/* 1. timeout(9F): fires once, with its argument, on another thread, not before
 *    `ticks` ticks; returns distinct non-zero ids. */
static void case_fires(void)
{
    struct fire f = {0};
    long long t0 = now_ns();
    toid_t id = timeout(fire_cb, &f, 5);
    CHECK(id != 0);
    CHECK(wait_ge(&f.n, 1, 5000));
    CHECK(atomic_load(&f.at) - t0 >= 5 * TICK_NS);
    CHECK(f.arg == &f);
    CHECK(!pthread_equal(f.tid, pthread_self()));
    sleep_ms(30);
    CHECK_EQ(atomic_load(&f.n), 1); /* once */

    struct fire g = {0};
    t0 = now_ns();
    toid_t id2 = timeout(fire_cb, &g, 0); /* zero ticks: as soon as possible */
    CHECK(id2 != 0 && id2 != id);
    CHECK(wait_ge(&g.n, 1, 5000));
    CHECK(atomic_load(&g.at) >= t0);

    CHECK_EQ(timeout(NULL, NULL, 1), 0); /* no function: refused */
}

/* 2. untimeout(9F) before expiry: returns the ticks left (>= 0), and the
 *    callback never runs. */
static void case_cancel(void)
{
    struct fire f = {0};
    toid_t id = timeout(fire_cb, &f, 30);
    CHECK(id != 0);
    long left = untimeout(id);
    CHECK(left >= 0);
    CHECK(left <= 30);
    sleep_ms(400);
    CHECK_EQ(atomic_load(&f.n), 0);
    CHECK_EQ(untimeout(id), -1); /* gone */
}

/* 3. untimeout(9F) of an id that is not pending returns -1. */
static void case_unknown(void)
{
    CHECK_EQ(untimeout(0), -1);
    CHECK_EQ(untimeout(987654321), -1);
    CHECK_EQ(untimeout(-5), -1);
    struct fire f = {0};
    toid_t id = timeout(fire_cb, &f, 1);
    CHECK(wait_ge(&f.n, 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(untimeout(id), -1); /* already fired */
}

/* ---- 4 ---- */
static atomic_int slow_started, slow_go, slow_finished;

/* Sleeps 50 ms once the test is about to call untimeout. */
static void slow_cb(void *arg)
{
    (void)arg;
    atomic_store(&slow_started, 1);
    wait_ge(&slow_go, 1, 5000);
    sleep_ms(50);
    atomic_store(&slow_finished, 1);
}

/* 4. untimeout(9F) of a callback that is running returns only after it has
 *    returned (so that its argument may then be freed). */
static void case_wait_running(void)
{
    toid_t id = timeout(slow_cb, NULL, 1);
    CHECK(id != 0);
    CHECK(wait_ge(&slow_started, 1, 5000));
    CHECK_EQ(atomic_load(&slow_finished), 0); /* it waits for slow_go */
    atomic_store(&slow_go, 1);
    long r = untimeout(id);
    CHECK_EQ(atomic_load(&slow_finished), 1);
    CHECK_EQ(r, -1); /* no longer pending */
}

/* ---- 5 ---- */
static atomic_long self_id;
static atomic_int self_done;
static atomic_long self_ret;

static void self_cb(void *arg)
{
    (void)arg;
    while (atomic_load(&self_id) == 0)
        sched_yield();
    atomic_store(&self_ret, untimeout((toid_t)atomic_load(&self_id)));
    atomic_store(&self_done, 1);
}

/* 5. untimeout(9F) of its own id from inside the callback returns (-1: it is
 *    no longer pending) instead of waiting for itself. */
static void case_self(void)
{
    atomic_store(&self_ret, 12345);
    toid_t id = timeout(self_cb, NULL, 2);
    CHECK(id != 0);
    atomic_store(&self_id, id);
    CHECK(wait_ge(&self_done, 1, 5000));
    CHECK_EQ(atomic_load(&self_ret), -1);
    CHECK_EQ(ustreams_quiesce(5000), 0);
}

/* ---- 6 ---- */
#define NORDER 40
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static int order_seen[NORDER];
static atomic_int order_n;

static void order_cb(void *arg)
{
    int ticks = (int)(intptr_t)arg;
    pthread_mutex_lock(&order_lock);
    int i = atomic_load(&order_n);
    if (i < NORDER)
        order_seen[i] = ticks;
    atomic_store(&order_n, i + 1);
    pthread_mutex_unlock(&order_lock);
}

/* 6. timeout(9F): timeouts registered in scrambled order fire in order of
 *    expiry. */
static void case_order(void)
{
    toid_t ids[NORDER];
    for (int i = 0; i < NORDER; i++) {
        int ticks = 1 + (i * 17) % NORDER; /* a permutation of 1..NORDER */
        ids[i] = timeout(order_cb, (void *)(intptr_t)ticks, ticks);
        CHECK(ids[i] != 0);
        for (int j = 0; j < i; j++)
            if (ids[j] == ids[i])
                CHECK(!"duplicate timeout id");
    }
    CHECK(wait_ge(&order_n, NORDER, 10000));
    CHECK_EQ(atomic_load(&order_n), NORDER);
    pthread_mutex_lock(&order_lock);
    for (int i = 0; i < NORDER; i++)
        CHECK_EQ(order_seen[i], i + 1);
    pthread_mutex_unlock(&order_lock);
}

/* ---- 7 ---- */
static atomic_int rearm_n;

static void rearm_cb(void *arg)
{
    (void)arg;
    if (atomic_fetch_add(&rearm_n, 1) + 1 < 5)
        CHECK(timeout(rearm_cb, NULL, 1) != 0);
}

/* 7. timeout(9F) called from a callback (a periodic timer re-arming). */
static void case_rearm(void)
{
    long long t0 = now_ns();
    CHECK(timeout(rearm_cb, NULL, 1) != 0);
    CHECK(wait_ge(&rearm_n, 5, 5000));
    CHECK(now_ns() - t0 >= 5 * TICK_NS);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&rearm_n), 5);
}

/* ---- 8 ---- */
static int tq_put(queue_t *q, mblk_t *mp)
{
    (void)q;
    freemsg(mp);
    return 0;
}
static struct module_info tq_minfo = {.mi_idname = "tmo", .mi_maxpsz = INFPSZ, .mi_hiwat = 1024};
static struct qinit tq_init = {.qi_putp = tq_put, .qi_minfo = &tq_minfo};
static struct streamtab tq_info = {.st_rdinit = &tq_init, .st_wrinit = &tq_init};

/* 8. qtimeout(9F)/quntimeout(9F) on a D_MP queue (no perimeter to enter). */
static void case_qtimeout(void)
{
    queue_t *rq = ust_qalloc(&tq_info, D_MP, NULL);
    CHECK(rq != NULL);
    qprocson(rq);
    struct fire f = {0};
    long long t0 = now_ns();
    timeout_id_t id = qtimeout(rq, fire_cb, &f, 3);
    CHECK(id != 0);
    CHECK(wait_ge(&f.n, 1, 5000));
    CHECK(atomic_load(&f.at) - t0 >= 3 * TICK_NS);
    CHECK(f.arg == &f);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(quntimeout(rq, id), -1);

    struct fire g = {0};
    id = qtimeout(rq, fire_cb, &g, 20);
    CHECK(id != 0);
    CHECK(quntimeout(rq, id) >= 0);
    sleep_ms(300);
    CHECK_EQ(atomic_load(&g.n), 0);
    CHECK_EQ(qtimeout(NULL, fire_cb, &g, 1), 0);
    qprocsoff(rq);
    ust_qfree(rq);
}

/* 9. ust_timeout_ns, and timeout(9F) with a tick count near LONG_MAX. */
static void case_ns(void)
{
    struct fire f = {0};
    long long t0 = now_ns();
    toid_t id = ust_timeout_ns(fire_cb, &f, 1500000); /* 1.5 ms: below a tick */
    CHECK(id != 0);
    CHECK(wait_ge(&f.n, 1, 5000));
    CHECK(atomic_load(&f.at) - t0 >= 1500000);
    CHECK(f.arg == &f);
    sleep_ms(20);
    CHECK_EQ(atomic_load(&f.n), 1);

    struct fire g = {0};
    id = ust_timeout_ns(fire_cb, &g, 200000000LL);
    CHECK(id != 0);
    CHECK(untimeout(id) >= 0);
    struct fire h = {0};
    toid_t far = timeout(fire_cb, &h, LONG_MAX); /* must not wrap to "now" */
    CHECK(far != 0);
    sleep_ms(300);
    CHECK_EQ(atomic_load(&g.n), 0);
    CHECK_EQ(atomic_load(&h.n), 0);
    CHECK(untimeout(far) >= 0);
    CHECK_EQ(ust_timeout_ns(NULL, NULL, 1), 0);
}

int main(void)
{
    case_fires();
    case_cancel();
    case_unknown();
    case_wait_running();
    case_self();
    case_order();
    case_rearm();
    case_qtimeout();
    case_ns();
    th_assert_no_blocks();
    ustreams_shutdown();
    return CHECK_RESULT();
}
