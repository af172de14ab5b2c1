/* SPDX-License-Identifier: MIT */
/*
 * test_lock.c -- the executive's lock and condition variable (src/core/lock.h,
 * lock.c): an unlock is a plain store, backed by membarrier on the side of a
 * thread going to sleep; or an exchange with USTREAMS_LOCK_FENCED.
 *
 *   K.1 trylock, backoff and the taking count
 *   K.2 mutual exclusion: 4 threads increment a plain counter under the lock,
 *       some critical sections long enough that the others sleep; exact total
 *   K.3 no lost wake-up: 3000 rounds of a holder that keeps the lock past
 *       the others' spin (so they sleep) and unlocks at a random moment;
 *       every round ends (an alarm fails the test)
 *   K.4 condition variable: a signal wakes the waiter, a broadcast all four,
 *       a timed wait returns ETIMEDOUT no earlier than its deadline
 *   K.5 the same with USTREAMS_LOCK_FENCED=1 (a re-executed child)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "lock.h"

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* K.1 */
static void test_basics(void)
{
    ust_lock_t l = UST_LOCK_INIT;
    unsigned long t0 = ust_lock_takes(&l);
    CHECK_EQ(ust_trylock(&l), 1);
    CHECK_EQ(ust_trylock(&l), 0);
    CHECK(ust_lock_busy(&l));
    ust_unlock(&l);
    CHECK(!ust_lock_busy(&l));
    ust_lock_backoff(&l);
    ust_unlock(&l);
    ust_lock(&l);
    ust_unlock(&l);
    CHECK_EQ(ust_lock_takes(&l) - t0, 3);
}

/* ---- K.2 ---- */

#define K2_THREADS 4
#define K2_ROUNDS 200000

static ust_lock_t k2_lock = UST_LOCK_INIT;
static long k2_count; /* k2_lock */

static void *k2_main(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < K2_ROUNDS; i++) {
        ust_lock(&k2_lock);
        long c = k2_count;
        if ((i + id) % 4096 == 0)
            sleep_us(200); /* long enough that the others sleep */
        k2_count = c + 1;
        ust_unlock(&k2_lock);
    }
    return NULL;
}

static void test_exclusion(void)
{
    pthread_t t[K2_THREADS];
    k2_count = 0;
    for (long i = 0; i < K2_THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, k2_main, (void *)i), 0);
    for (int i = 0; i < K2_THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(k2_count, (long)K2_THREADS * K2_ROUNDS);
    CHECK_EQ(__atomic_load_n(&k2_lock.sleepers, __ATOMIC_RELAXED), 0);
}

/* ---- K.3 ---- */

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define K3_ROUNDS 500
#else
#define K3_ROUNDS 3000
#endif

static ust_lock_t k3_lock = UST_LOCK_INIT;
static atomic_int k3_round, k3_done;

static void *k3_main(void *arg)
{
    (void)arg;
    for (int r = 1; r <= K3_ROUNDS; r++) {
        while (atomic_load(&k3_round) < r) /* the holder took the lock */
            sched_yield();
        ust_lock(&k3_lock); /* spins out, sleeps, must be woken */
        ust_unlock(&k3_lock);
        atomic_fetch_add(&k3_done, 1);
    }
    return NULL;
}

static void test_no_lost_wakeup(void)
{
    pthread_t t[2];
    unsigned seed = 12345;
    alarm(120);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, k3_main, NULL), 0);
    long slept = 0;
    for (int r = 1; r <= K3_ROUNDS; r++) {
        ust_lock(&k3_lock);
        atomic_store(&k3_round, r);
        /* Unlock anywhere from before the others arrive to after they sleep. */
        long us = rand_r(&seed) % 4 == 0 ? 0 : rand_r(&seed) % 60;
        if (us)
            sleep_us(us);
        slept += __atomic_load_n(&k3_lock.sleepers, __ATOMIC_RELAXED) > 0;
        ust_unlock(&k3_lock);
        while (atomic_load(&k3_done) < 2 * r)
            sched_yield();
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    alarm(0);
    printf("K.3 rounds with a sleeper at the unlock: %ld of %d\n", slept, K3_ROUNDS);
    CHECK(slept > 0);
}

/* ---- K.4 ---- */

static ust_lock_t k4_lock = UST_LOCK_INIT;
static ust_cond_t k4_cv = UST_COND_INIT;
static int k4_go, k4_woken; /* k4_lock */

static void *k4_main(void *arg)
{
    (void)arg;
    ust_lock(&k4_lock);
    while (!k4_go)
        ust_cond_wait(&k4_cv, &k4_lock);
    k4_go--;
    k4_woken++;
    ust_unlock(&k4_lock);
    return NULL;
}

static void test_cond(void)
{
    pthread_t t[4];
    CHECK_EQ(pthread_create(&t[0], NULL, k4_main, NULL), 0);
    sleep_us(20000);
    ust_lock(&k4_lock);
    k4_go = 1;
    ust_cond_signal(&k4_cv);
    ust_unlock(&k4_lock);
    pthread_join(t[0], NULL);
    CHECK_EQ(k4_woken, 1);

    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, k4_main, NULL), 0);
    sleep_us(20000);
    ust_lock(&k4_lock);
    k4_go = 4;
    ust_cond_broadcast(&k4_cv);
    ust_unlock(&k4_lock);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(k4_woken, 5);

    ust_lock(&k4_lock);
    long long start = ust_now_ns(), deadline = start + 30 * 1000000LL;
    int e = 0;
    while (e == 0)
        e = ust_cond_timedwait(&k4_cv, &k4_lock, deadline);
    long long end = ust_now_ns();
    ust_unlock(&k4_lock);
    CHECK_EQ(e, ETIMEDOUT);
    CHECK(end >= deadline);
    CHECK_EQ(__atomic_load_n(&k4_cv.waiters, __ATOMIC_RELAXED), 0);
}

static void run_all(void)
{
    test_basics();
    test_exclusion();
    test_no_lost_wakeup();
    test_cond();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "fenced") == 0) {
        CHECK_EQ(ust_lock_asym, 0);
        run_all();
        return CHECK_RESULT();
    }
    printf("unlock by plain store: %s\n", ust_lock_asym ? "yes" : "no (no membarrier)");
    run_all();
    /* K.5 */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("USTREAMS_LOCK_FENCED", "1", 1);
        execl("/proc/self/exe", argv[0], "fenced", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return CHECK_RESULT();
}
