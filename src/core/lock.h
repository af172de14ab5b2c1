/* SPDX-License-Identifier: MIT */
/*
 * lock.h -- the one lock abstraction of the executive.
 *
 * ust_lock_t is a mutex on a futex word; debug builds (USTREAMS_DEBUG)
 * remember the owner so that functions which assume a lock can assert it
 * with UST_ASSERT_HELD.  Locks are never held across a call into a module
 * procedure.
 *
 * An unlock is a plain release store (lock.c "Unlocking without a locked
 * instruction"): a locked instruction waits until every store before it has
 * reached the cache, so each unlock of a lock taken at every message paid
 * for the lines its critical section had just written (the copy of a
 * write, the message's headers), 10-27 % of a small write or read.  A thread
 * about to sleep on a held lock registers in `sleepers` and runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) before it looks at the word
 * again, so an unlocker either sees the registration and wakes it, or its
 * store is seen and nobody sleeps (an asymmetric Dekker).  Without
 * membarrier (or with USTREAMS_LOCK_FENCED set) the unlock is an exchange.
 *
 * Every lock counts its takings (`takes`: ust_lock, ust_lock_backoff,
 * ust_trylock, the return from a condition wait).  A thread that looked at
 * the state a lock guards, while holding it, may remember the count; while
 * ust_lock_takes still reads the same, nobody has held the lock since, so
 * nothing the lock guards has changed (sd_write.c's write snapshot).  A
 * field read that way is written with release stores, so that it never
 * shows before the count of the taking that wrote it.
 */
#ifndef UST_LOCK_H
#define UST_LOCK_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef UST_LOCK_SPINS
#define UST_LOCK_SPINS 64 /* trylock rounds before sleeping (ust_lock) */
#endif

typedef struct ust_lock {
    int word;            /* atomic: 0 free, 1 held */
    int sleepers;        /* atomic: threads asleep on word, or on their way */
    unsigned long takes; /* atomic: times taken; written only by the holder */
#ifdef USTREAMS_DEBUG
    pthread_t owner;
    int held;
#endif
} ust_lock_t;

#ifdef USTREAMS_DEBUG
#define UST_LOCK_INIT {0, 0, 0, 0, 0}
#else
#define UST_LOCK_INIT {0, 0, 0}
#endif

/* 1 when an unlock may be a plain store (membarrier registered at load;
 * lock.c).  Set once, before any lock is contended. */
extern int ust_lock_asym;

void ust_lock_sleep(ust_lock_t *l); /* lock.c: the contended end of ust_lock */
void ust_lock_wake(ust_lock_t *l);  /* lock.c: wake one sleeper */

/* One more taking of l (l held, or being made ready for use: see
 * ust_lock_init's callers that reuse memory). */
static inline void ust_lock_count_take(ust_lock_t *l)
{
    __atomic_store_n(&l->takes, __atomic_load_n(&l->takes, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

/* The takings of l so far, read without it (acquire: what the holder that
 * made this count wrote is visible). */
static inline unsigned long ust_lock_takes(const ust_lock_t *l)
{
    return __atomic_load_n(&l->takes, __ATOMIC_ACQUIRE);
}

/* l was just taken by this thread: count it, and remember the owner in
 * debug builds. */
static inline void ust_lock_taken(ust_lock_t *l)
{
    ust_lock_count_take(l);
#ifdef USTREAMS_DEBUG
    l->owner = pthread_self();
    __atomic_store_n(&l->held, 1, __ATOMIC_RELAXED);
#endif
}

/* Initialize l; its taking count is left as it is (memory reused for the
 * same lock keeps counting: a count remembered earlier never matches again
 * once the caller counts a taking, ust_lock_count_take). */
static inline void ust_lock_init(ust_lock_t *l)
{
    __atomic_store_n(&l->word, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->sleepers, 0, __ATOMIC_RELAXED);
#ifdef USTREAMS_DEBUG
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
#endif
}

static inline void ust_lock_destroy(ust_lock_t *l)
{
    (void)l;
}

/* Is the lock taken?  Spinning with reads keeps the line shared, where a
 * compare-and-swap would take it from the holder at every round. */
static inline int ust_lock_busy(ust_lock_t *l)
{
    return __atomic_load_n(&l->word, __ATOMIC_RELAXED) != 0;
}

/* The compare-and-swap that takes l: 1 taken, 0 held by someone. */
static inline int ust_lock_cas(ust_lock_t *l)
{
    int free_word = 0;
    return __atomic_compare_exchange_n(&l->word, &free_word, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* Lock l: a few tries in user space first.  The executive's critical
 * sections are a handful of pointer updates, so a lock found held is
 * usually free again within a few hundred cycles; blocking at once in the
 * kernel (futex wait, then a futex wake by the holder) costs two system
 * calls and microseconds for both threads.  The spin reads the lock word and
 * tries again only when it looks free. */
static inline void ust_lock(ust_lock_t *l)
{
    if (!ust_lock_cas(l)) {
        int got = 0;
        for (int i = 0; i < UST_LOCK_SPINS && !got; i++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            if (!ust_lock_busy(l))
                got = ust_lock_cas(l);
        }
        if (!got)
            ust_lock_sleep(l);
    }
    ust_lock_taken(l);
}

/* Lock l, backing off between tries without touching its line: for a
 * consumer that finds a producer holding a lock it takes at every message
 * (the arrivals of a pipe head).  Spinning on the lock word, as ust_lock
 * does, would pull the line from the producer at each of its deposits; a
 * pause of about a microsecond lets it deposit a few more, which the
 * consumer then takes in one go.  Falls back to ust_lock after a while. */
static inline void ust_lock_backoff(ust_lock_t *l)
{
    for (int i = 0; !ust_lock_cas(l); i++) {
        if (i == UST_LOCK_SPINS) {
            ust_lock(l);
            return;
        }
#if defined(__x86_64__) || defined(__i386__)
        for (int j = 0; j < 32; j++)
            __builtin_ia32_pause();
#endif
    }
    ust_lock_taken(l);
}

/* Take l if it is free: 1 taken, 0 not. */
static inline int ust_trylock(ust_lock_t *l)
{
    if (!ust_lock_cas(l))
        return 0;
    ust_lock_taken(l);
    return 1;
}

static inline void ust_unlock(ust_lock_t *l)
{
#ifdef USTREAMS_DEBUG
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
#endif
    if (__builtin_expect(ust_lock_asym, 1)) {
        __atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
        /* The sleepers' load stays after the store in program order; the
         * CPU may still take it early: a sleeper's membarrier covers that. */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } else {
        (void)__atomic_exchange_n(&l->word, 0, __ATOMIC_SEQ_CST);
    }
    if (__atomic_load_n(&l->sleepers, __ATOMIC_RELAXED) != 0)
        ust_lock_wake(l);
}

#ifdef USTREAMS_DEBUG
#define UST_ASSERT_HELD(l)                                                                         \
    do {                                                                                           \
        if (!__atomic_load_n(&(l)->held, __ATOMIC_RELAXED) ||                                      \
            !pthread_equal((l)->owner, pthread_self())) {                                          \
            fprintf(stderr, "ustreams: %s:%d: lock %s not held\n", __FILE__, __LINE__, #l);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
#else
#define UST_ASSERT_HELD(l) ((void)(l))
#endif

/* Condition variable paired with ust_lock_t (CLOCK_MONOTONIC): a futex
 * sequence bumped by every signal, and the count of its waiters, so that a
 * signal nobody waits for makes no system call. */
typedef struct ust_cond {
    unsigned seq; /* atomic: bumped by each signal and broadcast */
    int waiters;  /* atomic: threads between registering and waking */
} ust_cond_t;

#define UST_COND_INIT {0, 0}

void ust_cond_init(ust_cond_t *c);
void ust_cond_wait(ust_cond_t *c, ust_lock_t *l);
/* Wait until the absolute CLOCK_MONOTONIC time abs_ns; returns 0 or ETIMEDOUT. */
int ust_cond_timedwait(ust_cond_t *c, ust_lock_t *l, long long abs_ns);
void ust_cond_signal(ust_cond_t *c);
void ust_cond_broadcast(ust_cond_t *c);

/* Monotonic clock in nanoseconds. */
long long ust_now_ns(void);

#endif /* UST_LOCK_H */
