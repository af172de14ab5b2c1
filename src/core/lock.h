/* SPDX-License-Identifier: MIT */
/*
 * lock.h -- the one lock abstraction of the executive.
 *
 * ust_lock_t is a mutex; debug builds (USTREAMS_DEBUG) remember the owner so
 * that functions which assume a lock can assert it with UST_ASSERT_HELD.
 * Locks are never held across a call into a module procedure.
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
    pthread_mutex_t mu;
    unsigned long takes; /* atomic: times taken; written only by the holder */
#ifdef USTREAMS_DEBUG
    pthread_t owner;
    int held;
#endif
} ust_lock_t;

#ifdef USTREAMS_DEBUG
#define UST_LOCK_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0}
#else
#define UST_LOCK_INIT {PTHREAD_MUTEX_INITIALIZER, 0}
#endif

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
    pthread_mutex_init(&l->mu, NULL);
#ifdef USTREAMS_DEBUG
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
#endif
}

static inline void ust_lock_destroy(ust_lock_t *l)
{
    pthread_mutex_destroy(&l->mu);
}

/* Is the mutex taken?  A plain read of glibc's lock word: spinning with
 * reads keeps the line shared, where trylock's compare-and-swap would take it
 * from the holder at every round (and the holder's unlock would then miss). */
static inline int ust_lock_busy(ust_lock_t *l)
{
#ifdef __GLIBC__
    return __atomic_load_n(&l->mu.__data.__lock, __ATOMIC_RELAXED) != 0;
#else
    (void)l;
    return 0;
#endif
}

/* Lock l: a few tries in user space first.  The executive's critical
 * sections are a handful of pointer updates, so a lock found held is
 * usually free again within a few hundred cycles; blocking at once in the
 * kernel (futex wait, then a futex wake by the holder) costs two system
 * calls and microseconds for both threads.  The spin reads the lock word and
 * tries again only when it looks free. */
static inline void ust_lock(ust_lock_t *l)
{
    if (pthread_mutex_trylock(&l->mu) != 0) {
        int got = 0;
        for (int i = 0; i < UST_LOCK_SPINS && !got; i++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            if (!ust_lock_busy(l))
                got = pthread_mutex_trylock(&l->mu) == 0;
        }
        if (!got)
            pthread_mutex_lock(&l->mu);
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
    for (int i = 0; pthread_mutex_trylock(&l->mu) != 0; i++) {
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
    if (pthread_mutex_trylock(&l->mu) != 0)
        return 0;
    ust_lock_taken(l);
    return 1;
}

static inline void ust_unlock(ust_lock_t *l)
{
#ifdef USTREAMS_DEBUG
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
#endif
    pthread_mutex_unlock(&l->mu);
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

/* Condition variable paired with ust_lock_t (CLOCK_MONOTONIC). */
typedef struct ust_cond {
    pthread_cond_t cv;
} ust_cond_t;

void ust_cond_init(ust_cond_t *c);
void ust_cond_wait(ust_cond_t *c, ust_lock_t *l);
/* Wait until the absolute CLOCK_MONOTONIC time abs_ns; returns 0 or ETIMEDOUT. */
int ust_cond_timedwait(ust_cond_t *c, ust_lock_t *l, long long abs_ns);
static inline void ust_cond_signal(ust_cond_t *c) { pthread_cond_signal(&c->cv); }
static inline void ust_cond_broadcast(ust_cond_t *c) { pthread_cond_broadcast(&c->cv); }

/* Monotonic clock in nanoseconds. */
long long ust_now_ns(void);

#endif /* UST_LOCK_H */
