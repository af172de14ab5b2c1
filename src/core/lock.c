/* SPDX-License-Identifier: MIT */
/*
 * lock.c -- the contended ends of lock.h's locks, condition variables, and
 * the monotonic clock.
 *
 * Unlocking without a locked instruction.  ust_unlock stores 0 to the lock
 * word with a plain release store and then reads `sleepers`; the CPU may
 * read `sleepers` before its store is visible to others (x86 lets a load
 * pass an older store).  A thread that found the lock held through its spin
 * adds itself to `sleepers` and then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which returns only after
 * every other running thread of the process has passed a full barrier.  So
 * for any unlock racing the registration, either the unlocker's read of
 * `sleepers` comes after that barrier (it sees the sleeper and wakes it), or
 * its store of 0 was made visible by it (the sleeper's next look at the word
 * finds the lock free, and its futex wait, which sleeps only while the word
 * is still 1, returns at once).  The registration made at load
 * (MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) is kept across fork.  Where
 * membarrier is missing, or USTREAMS_LOCK_FENCED is set, ust_lock_asym stays
 * 0 and the unlock is an exchange (a full barrier before its read of
 * `sleepers`), the classic Dekker.
 *
 * Condition variables.  A waiter registers in `waiters` and reads `seq`
 * with the lock held, unlocks, and sleeps on `seq` while it still reads the
 * same; a signal bumps `seq` (a locked instruction: a full barrier) and wakes
 * only when `waiters` says someone may sleep.  Timed waits use
 * FUTEX_WAIT_BITSET, whose absolute timeout is on CLOCK_MONOTONIC, so they are
 * immune to wall-clock steps.  In debug builds the owner bookkeeping of
 * ust_lock_t is dropped while a wait has released the lock and restored when
 * it has taken it back, so that UST_ASSERT_HELD stays truthful across waits.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

#define NS_PER_SEC 1000000000LL

int ust_lock_asym; /* written once, by lock_setup, before other threads exist */

static long futex(void *addr, int op, unsigned val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static int membarrier(int cmd)
{
    return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

/* At load: plain-store unlocks if membarrier can back them. */
__attribute__((constructor)) static void lock_setup(void)
{
    const char *e = getenv("USTREAMS_LOCK_FENCED");
    if (e && *e && *e != '0')
        return;
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        ust_lock_asym = 1;
}

/*
 * ust_lock_sleep -- take l, sleeping in the kernel while it is held.
 *   Context: ust_lock after its spin; blocks.  Returns with l held (the
 *   caller counts the taking).
 */
void ust_lock_sleep(ust_lock_t *l)
{
    __atomic_fetch_add(&l->sleepers, 1, __ATOMIC_SEQ_CST);
    /* Should membarrier fail (it cannot once registered), a wake-up may be
     * missed: the sleep is then bounded instead. */
    const struct timespec bound = {0, 1000000};
    const struct timespec *tmo = NULL;
    if (ust_lock_asym && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
        tmo = &bound;
    while (!ust_lock_cas(l))
        (void)futex(&l->word, FUTEX_WAIT_PRIVATE, 1, tmo);
    __atomic_fetch_sub(&l->sleepers, 1, __ATOMIC_RELAXED);
}

/* ust_lock_wake -- wake one sleeper of l.  Context: ust_unlock. */
void ust_lock_wake(ust_lock_t *l)
{
    (void)futex(&l->word, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void lock_mark_released(ust_lock_t *l)
{
#ifdef USTREAMS_DEBUG
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
#else
    (void)l;
#endif
}

/*
 * ust_cond_init -- initialize a condition variable.
 *   Context: any thread, before the variable is shared (a fork child may
 *   re-initialize one another thread had waited on).
 */
void ust_cond_init(ust_cond_t *c)
{
    __atomic_store_n(&c->seq, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->waiters, 0, __ATOMIC_RELAXED);
}

/* Wait on c with l held; abs: absolute CLOCK_MONOTONIC deadline or NULL.
 * Returns 0 or ETIMEDOUT. */
static int cond_wait(ust_cond_t *c, ust_lock_t *l, const struct timespec *abs)
{
    UST_ASSERT_HELD(l);
    __atomic_fetch_add(&c->waiters, 1, __ATOMIC_SEQ_CST);
    unsigned seq = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
    lock_mark_released(l);
    ust_unlock(l);
    long r = futex(&c->seq, FUTEX_WAIT_BITSET_PRIVATE, seq, abs);
    int e = r != 0 ? errno : 0;
    __atomic_fetch_sub(&c->waiters, 1, __ATOMIC_RELAXED);
    ust_lock(l);
    return e == ETIMEDOUT ? ETIMEDOUT : 0;
}

/*
 * ust_cond_wait -- wait for c to be signalled.
 *   Context: blocks.  Locking: l held on entry and on return (released while
 *   waiting).  Spurious wake-ups happen: callers loop on their condition.
 */
void ust_cond_wait(ust_cond_t *c, ust_lock_t *l)
{
    (void)cond_wait(c, l, NULL);
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
    if (abs_ns < 0)
        abs_ns = 0;
    ts.tv_sec = (time_t)(abs_ns / NS_PER_SEC);
    ts.tv_nsec = (long)(abs_ns % NS_PER_SEC);
    return cond_wait(c, l, &ts);
}

/* ust_cond_signal / ust_cond_broadcast -- wake one / every waiter of c.
 *   Context: any thread, with or without the lock. */
void ust_cond_signal(ust_cond_t *c)
{
    __atomic_fetch_add(&c->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST) != 0)
        (void)futex(&c->seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void ust_cond_broadcast(ust_cond_t *c)
{
    __atomic_fetch_add(&c->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST) != 0)
        (void)futex(&c->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
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
