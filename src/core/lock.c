/* SPDX-License-Identifier: MIT */
/*
 * lock.c -- condition variables and the monotonic clock behind lock.h.
 *
 * Every condition variable waits on CLOCK_MONOTONIC so that timed waits (I_STR
 * timeouts, quiesce, timers) are immune to wall-clock steps.  In debug builds
 * the owner bookkeeping of ust_lock_t is dropped while pthread_cond_wait has
 * released the mutex and restored when it has taken it back, so that
 * UST_ASSERT_HELD stays truthful across waits.
 */
#include <errno.h>
#include <time.h>

#include "lock.h"

#define NS_PER_SEC 1000000000LL

static void lock_mark_released(ust_lock_t *l)
{
#ifdef USTREAMS_DEBUG
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
#else
    (void)l;
#endif
}

/*
 * ust_cond_init -- initialize a condition variable that times out on
 * CLOCK_MONOTONIC.
 *   Context: any thread, before the variable is shared.
 */
void ust_cond_init(ust_cond_t *c)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &attr);
    pthread_condattr_destroy(&attr);
}

/*
 * ust_cond_wait -- wait for c to be signalled.
 *   Context: blocks.  Locking: l held on entry and on return (released while
 *   waiting).  Spurious wake-ups happen: callers loop on their condition.
 */
void ust_cond_wait(ust_cond_t *c, ust_lock_t *l)
{
    UST_ASSERT_HELD(l);
    lock_mark_released(l);
    pthread_cond_wait(&c->cv, &l->mu);
    ust_lock_taken(l);
}

/*
 * ust_cond_timedwait -- wait for c until the absolute CLOCK_MONOTONIC time
 * abs_ns (nanoseconds, as ust_now_ns).
 *   Context: blocks.  Locking: as ust_cond_wait.
 *   Returns: 0 when woken (possibly spuriously), ETIMEDOUT when the deadline
 *   has passed.
 */
int ust_cond_timedwait(ust_cond_t *c, ust_lock_t *l, long long abs_ns)
{
    struct timespec ts;
    int rc;

    UST_ASSERT_HELD(l);
    if (abs_ns < 0)
        abs_ns = 0;
    ts.tv_sec = (time_t)(abs_ns / NS_PER_SEC);
    ts.tv_nsec = (long)(abs_ns % NS_PER_SEC);
    lock_mark_released(l);
    rc = pthread_cond_timedwait(&c->cv, &l->mu, &ts);
    ust_lock_taken(l);
    return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

/*
 * ust_now_ns -- the monotonic clock in nanoseconds.
 *   Context: any thread; never blocks.
 */
long long ust_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}
