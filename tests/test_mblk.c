/* SPDX-License-Identifier: MIT */
/*
 * test_mblk.c -- the message block allocator (src/core/mblk.c): allocb(9F),
 * esballoc(9F), dupb(9F), freeb(9F), freemsg(9F), testb(9F), the block
 * accounting, fault injection, and blocks crossing threads.
 *
 * Every case ends with no block outstanding (CHECK_NO_BLOCKS).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "strcore.h"

static struct ustreams_blockstats stats(void)
{
    struct ustreams_blockstats st;
    ustreams_blockstats(&st);
    return st;
}

static atomic_int fr_calls;
static void *fr_last_arg;
static void fr_count(caddr_t arg)
{
    atomic_fetch_add(&fr_calls, 1);
    fr_last_arg = arg;
}

/* allocb(9F): the fields of a fresh block, for every size class and beyond. */
static void test_allocb_fields(void)
{
    static const size_t sizes[] = {0, 1, 64, 127, 128, 129, 256, 1000, 4096, 4097, 65536, 65537,
                                   200000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t size = sizes[i];
        struct ustreams_blockstats before = stats();
        mblk_t *mp = allocb(size, BPRI_MED);
        if (!CHECK(mp != NULL))
            continue;
        dblk_t *db = mp->b_datap;
        CHECK(db != NULL);
        CHECK(mp->b_next == NULL && mp->b_prev == NULL && mp->b_cont == NULL);
        CHECK(mp->b_rptr == db->db_base);
        CHECK(mp->b_wptr == db->db_base);
        CHECK_EQ(mp->b_band, 0);
        CHECK_EQ(mp->b_flag, 0);
        CHECK_EQ(db->db_type, M_DATA);
        CHECK_EQ(db->db_ref, 1);
        CHECK(db->db_frtnp == NULL);
        CHECK_EQ(db->db_size, size);
        CHECK_EQ(db->db_lim - db->db_base, size);
        CHECK_EQ((uintptr_t)db->db_base % 16, 0);
        /* the whole buffer is usable */
        memset(mp->b_wptr, 0xa5, size);
        mp->b_wptr += size;
        CHECK_EQ(mp->b_wptr - mp->b_rptr, size);
        if (size > 0)
            CHECK_EQ(mp->b_rptr[size - 1], 0xa5);
        struct ustreams_blockstats in = stats();
        CHECK_EQ(in.mblks - before.mblks, 1);
        CHECK_EQ(in.dblks - before.dblks, 1);
        CHECK_EQ(in.bytes - before.bytes, (long)size);
        CHECK_EQ(in.allocs - before.allocs, 1);
        freeb(mp);
        CHECK_NO_BLOCKS();
    }
}

/* Distinct blocks do not overlap, whatever comes out of the caches. */
static void test_many_blocks(void)
{
    enum { N = 600 };
    static mblk_t *mp[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            size_t size = (size_t)((i * 37) % 9000);
            mp[i] = allocb(size, BPRI_LO);
            if (!CHECK(mp[i] != NULL))
                return;
            memset(mp[i]->b_wptr, i & 0xff, size);
            mp[i]->b_wptr += size;
        }
        int bad = 0;
        for (int i = 0; i < N; i++)
            for (unsigned char *p = mp[i]->b_rptr; p < mp[i]->b_wptr; p++)
                bad += *p != (i & 0xff);
        CHECK_EQ(bad, 0);
        CHECK_EQ(stats().mblks, N);
        /* free in a different order than allocated */
        for (int i = 0; i < N; i += 2)
            freeb(mp[i]);
        for (int i = 1; i < N; i += 2)
            freeb(mp[i]);
        CHECK_NO_BLOCKS();
    }
}

/* allocb of sizes that cannot be satisfied: NULL, counted, nothing leaks. */
static void test_allocb_huge(void)
{
    static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4096, (size_t)PTRDIFF_MAX};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct ustreams_blockstats before = stats();
        CHECK(allocb(sizes[i], BPRI_HI) == NULL);
        struct ustreams_blockstats after = stats();
        CHECK_EQ(after.failures - before.failures, 1);
        CHECK_EQ(after.allocs, before.allocs);
        CHECK_EQ(testb(sizes[i], BPRI_HI), 0);
    }
    CHECK_EQ(testb(100, BPRI_LO), 1);
    CHECK_EQ(testb(0, BPRI_LO), 1);
    CHECK_EQ(testb(100000, BPRI_LO), 1);
    CHECK_NO_BLOCKS();
}

/* freeb(NULL), freemsg(NULL), dupb(NULL). */
static void test_null_args(void)
{
    freeb(NULL);
    freemsg(NULL);
    CHECK(dupb(NULL) == NULL);
    frtn_t fr = {fr_count, NULL};
    unsigned char buf[8];
    CHECK(esballoc(NULL, 8, BPRI_MED, &fr) == NULL);
    CHECK(esballoc(buf, 8, BPRI_MED, NULL) == NULL);
    CHECK(desballoc(NULL, 8, BPRI_MED, &fr) == NULL);
    CHECK_EQ(atomic_load(&fr_calls), 0);
    CHECK_NO_BLOCKS();
}

/* esballoc(9F): the free routine runs exactly once, when the last dup goes. */
static void test_esballoc(void)
{
    unsigned char buf[100];
    memcpy(buf, "external", 8);
    frtn_t fr = {fr_count, (caddr_t)buf};
    atomic_store(&fr_calls, 0);

    mblk_t *mp = esballoc(buf, sizeof(buf), BPRI_MED, &fr);
    if (!CHECK(mp != NULL))
        return;
    CHECK(mp->b_datap->db_base == buf);
    CHECK(mp->b_datap->db_lim == buf + sizeof(buf));
    CHECK(mp->b_rptr == buf && mp->b_wptr == buf);
    CHECK(mp->b_datap->db_frtnp == &fr);
    CHECK_EQ(mp->b_datap->db_ref, 1);
    CHECK_EQ(mp->b_datap->db_type, M_DATA);
    CHECK_EQ(stats().bytes, sizeof(buf));
    mp->b_wptr += 8;

    mblk_t *d1 = dupb(mp), *d2 = dupb(mp);
    CHECK(d1 != NULL && d2 != NULL);
    CHECK_EQ(mp->b_datap->db_ref, 3);
    freeb(mp); /* the original goes first */
    CHECK_EQ(atomic_load(&fr_calls), 0);
    CHECK_EQ(memcmp(d1->b_rptr, "external", 8), 0);
    freeb(d2);
    CHECK_EQ(atomic_load(&fr_calls), 0);
    CHECK_EQ(d1->b_datap->db_ref, 1);
    freeb(d1);
    CHECK_EQ(atomic_load(&fr_calls), 1);
    CHECK(fr_last_arg == buf);
    CHECK_NO_BLOCKS();

    /* no dups: the free routine runs at the freeb */
    atomic_store(&fr_calls, 0);
    mp = desballoc(buf, 10, BPRI_LO, &fr);
    CHECK(mp != NULL);
    freemsg(mp);
    CHECK_EQ(atomic_load(&fr_calls), 1);
    CHECK_NO_BLOCKS();
}

/* dupb(9F): shares the data block, copies the pointers, band and flags. */
static void test_dupb(void)
{
    mblk_t *mp = allocb(32, BPRI_MED);
    if (!CHECK(mp != NULL))
        return;
    memcpy(mp->b_wptr, "0123456789", 10);
    mp->b_wptr += 10;
    mp->b_rptr += 2;
    mp->b_band = 7;
    mp->b_flag = MSGMARK;
    mp->b_datap->db_type = M_PROTO;
    mblk_t *tail = allocb(4, BPRI_MED);
    mp->b_cont = tail;

    mblk_t *d = dupb(mp);
    if (!CHECK(d != NULL))
        return;
    CHECK(d != mp);
    CHECK(d->b_datap == mp->b_datap);
    CHECK(d->b_rptr == mp->b_rptr && d->b_wptr == mp->b_wptr);
    CHECK_EQ(d->b_band, 7);
    CHECK_EQ(d->b_flag, MSGMARK);
    CHECK(d->b_cont == NULL && d->b_next == NULL && d->b_prev == NULL);
    CHECK_EQ(d->b_datap->db_ref, 2);
    CHECK_EQ(d->b_datap->db_type, M_PROTO);
    CHECK_EQ(stats().mblks, 3);
    CHECK_EQ(stats().dblks, 2);

    mblk_t *dd = dupb(d); /* a dup of a dup */
    CHECK(dd != NULL && dd->b_datap == mp->b_datap);
    CHECK_EQ(mp->b_datap->db_ref, 3);
    /* the data is shared: a write through one is seen through the others */
    mp->b_rptr[0] = 'X';
    CHECK_EQ(dd->b_rptr[0], 'X');

    freemsg(mp); /* the original and tail; the data lives on in the dups */
    CHECK_EQ(stats().mblks, 2);
    CHECK_EQ(stats().dblks, 1);
    CHECK_EQ(d->b_datap->db_ref, 2);
    CHECK_EQ(memcmp(d->b_rptr, "X3456789", 8), 0);
    freeb(dd);
    CHECK_EQ(d->b_datap->db_ref, 1);
    freeb(d);
    CHECK_NO_BLOCKS();

    /* dups freed before the original */
    mp = allocb(200, BPRI_MED);
    mblk_t *dups[10];
    for (int i = 0; i < 10; i++)
        dups[i] = dupb(mp);
    CHECK_EQ(mp->b_datap->db_ref, 11);
    for (int i = 0; i < 10; i++)
        freeb(dups[i]);
    CHECK_EQ(mp->b_datap->db_ref, 1);
    CHECK_EQ(stats().mblks, 1);
    freeb(mp);
    CHECK_NO_BLOCKS();
}

/* ustreams_fail_allocs: injected failures fail cleanly and are counted. */
static void test_fail_injection(void)
{
    struct ustreams_blockstats before = stats();
    ustreams_fail_allocs(3);
    CHECK_EQ(testb(10, BPRI_LO), 0);
    CHECK(allocb(10, BPRI_LO) == NULL);
    CHECK(allocb(0, BPRI_LO) == NULL);
    CHECK(allocb(100000, BPRI_LO) == NULL);
    mblk_t *mp = allocb(10, BPRI_LO); /* the budget is spent */
    CHECK(mp != NULL);
    CHECK_EQ(stats().failures - before.failures, 3);

    ustreams_fail_allocs(1);
    CHECK(dupb(mp) == NULL);
    CHECK_EQ(mp->b_datap->db_ref, 1);

    unsigned char buf[4];
    frtn_t fr = {fr_count, NULL};
    atomic_store(&fr_calls, 0);
    ustreams_fail_allocs(1);
    CHECK(esballoc(buf, 4, BPRI_LO, &fr) == NULL);
    CHECK_EQ(atomic_load(&fr_calls), 0);

    ustreams_fail_allocs(5);
    ustreams_fail_allocs(0); /* disarmed */
    mblk_t *d = dupb(mp);
    CHECK(d != NULL);

    ust_fail_allocs_after(2, 1); /* two more succeed, then one fails */
    mblk_t *a = allocb(1, BPRI_LO), *b = allocb(1, BPRI_LO), *c = allocb(1, BPRI_LO);
    CHECK(a != NULL && b != NULL && c == NULL);
    c = allocb(1, BPRI_LO);
    CHECK(c != NULL);
    CHECK_EQ(stats().failures - before.failures, 6);
    freeb(a);
    freeb(b);
    freeb(c);
    freeb(d);
    freeb(mp);
    CHECK_NO_BLOCKS();
}

/* ustreams_set_block_cache: blocks work either way; a freed unit is reused
 * from the cache when it is on. */
static void test_cache_switch(void)
{
    int was = ustreams_set_block_cache(1);
    int cached = ustreams_set_block_cache(1); /* 0 in USTREAMS_NO_BLOCK_CACHE builds */
    mblk_t *mp = allocb(100, BPRI_LO);
    void *first = mp;
    freeb(mp);
    mp = allocb(90, BPRI_LO); /* same class */
    if (cached)
        CHECK(mp == first);
    freeb(mp);

    CHECK_EQ(ustreams_set_block_cache(0), cached);
    for (int i = 0; i < 100; i++) {
        mp = allocb((size_t)i * 50, BPRI_LO);
        CHECK(mp != NULL);
        mblk_t *d = dupb(mp);
        CHECK(d != NULL);
        freeb(mp);
        freeb(d);
    }
    CHECK_EQ(ustreams_set_block_cache(was), 0);
    CHECK_NO_BLOCKS();
}

/* ---- blocks crossing threads ---- */

enum { XT_RING = 256, XT_ROUNDS = 20000 };

struct xt_ring {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mblk_t *slot[XT_RING];
    unsigned head, tail; /* MU */
    int done;            /* MU */
    long bad;            /* consumer: blocks with the wrong contents */
};

static void xt_put(struct xt_ring *r, mblk_t *mp)
{
    pthread_mutex_lock(&r->mu);
    while (r->tail - r->head == XT_RING)
        pthread_cond_wait(&r->cv, &r->mu);
    r->slot[r->tail++ % XT_RING] = mp;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void *xt_producer(void *arg)
{
    struct xt_ring *r = arg;
    for (int i = 0; i < XT_ROUNDS; i++) {
        size_t size = (size_t[]){16, 128, 700, 4096, 70000}[i % 5];
        mblk_t *mp = allocb(size, BPRI_MED);
        if (mp == NULL)
            continue;
        memset(mp->b_wptr, i & 0xff, size);
        mp->b_wptr += size;
        if (i % 3 == 0) /* a dup travels with it: the data outlives the original */
            mp->b_cont = dupb(mp);
        xt_put(r, mp);
    }
    pthread_mutex_lock(&r->mu);
    r->done = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void *xt_consumer(void *arg)
{
    struct xt_ring *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (r->head == r->tail && !r->done)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->head == r->tail) {
            pthread_mutex_unlock(&r->mu);
            return NULL;
        }
        mblk_t *mp = r->slot[r->head++ % XT_RING];
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        unsigned char v = mp->b_rptr[0];
        for (mblk_t *bp = mp; bp != NULL; bp = bp->b_cont)
            for (unsigned char *p = bp->b_rptr; p < bp->b_wptr; p++)
                r->bad += *p != v;
        freemsg(mp);
    }
}

/* Allocated on one thread, freed on another, many times over: the sum of the
 * counters comes back to zero, also after both threads have exited. */
static void test_cross_thread(void)
{
    struct xt_ring r = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t p[2], c[2];
    struct xt_ring r2 = r;
    pthread_create(&p[0], NULL, xt_producer, &r);
    pthread_create(&c[0], NULL, xt_consumer, &r);
    pthread_create(&p[1], NULL, xt_producer, &r2);
    pthread_create(&c[1], NULL, xt_consumer, &r2);
    for (int i = 0; i < 2; i++) {
        pthread_join(p[i], NULL);
        pthread_join(c[i], NULL);
    }
    CHECK_EQ(r.bad, 0);
    CHECK_EQ(r2.bad, 0);
    struct ustreams_blockstats st = stats();
    CHECK(st.allocs >= 2L * XT_ROUNDS);
    CHECK_NO_BLOCKS();
}

static void *alloc_and_exit(void *arg)
{
    mblk_t **out = arg;
    for (int i = 0; i < 50; i++) {
        out[i] = allocb((size_t)i * 100, BPRI_LO);
        if (i % 2)
            freeb(allocb(64, BPRI_LO)); /* leaves units in this thread's cache */
    }
    return NULL;
}

static void *free_and_exit(void *arg)
{
    mblk_t **in = arg;
    for (int i = 0; i < 50; i++)
        freeb(in[i]);
    return NULL;
}

/* A thread that exits with blocks outstanding or cached: its counts survive it. */
static void test_thread_exit(void)
{
    mblk_t *mp[50];
    pthread_t t;
    pthread_create(&t, NULL, alloc_and_exit, mp);
    pthread_join(t, NULL);
    CHECK_EQ(stats().mblks, 50);
    CHECK_EQ(stats().dblks, 50);
    CHECK_EQ(stats().bytes, 49 * 50 * 100 / 2);
    pthread_create(&t, NULL, free_and_exit, mp);
    pthread_join(t, NULL);
    CHECK_NO_BLOCKS();
}

struct esb_race {
    mblk_t *mp;
    pthread_barrier_t *bar;
};

static void *esb_free_dup(void *arg)
{
    struct esb_race *e = arg;
    pthread_barrier_wait(e->bar);
    freeb(e->mp);
    return NULL;
}

/* Dups of one esballoc block freed concurrently on many threads (the
 * original among them): the free routine runs exactly once. */
static void test_concurrent_last_free(void)
{
    enum { NT = 4, ROUNDS = 300 };
    unsigned char buf[16];
    frtn_t fr = {fr_count, (caddr_t)buf};
    atomic_store(&fr_calls, 0);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, NT);
    for (int round = 0; round < ROUNDS; round++) {
        struct esb_race e[NT];
        pthread_t t[NT];
        mblk_t *mp = round % 2 ? esballoc(buf, sizeof(buf), BPRI_LO, &fr)
                               : allocb(64, BPRI_LO); /* also the unit's own msgb race */
        e[0].mp = mp;
        for (int i = 1; i < NT; i++)
            e[i].mp = dupb(mp);
        for (int i = 0; i < NT; i++) {
            e[i].bar = &bar;
            pthread_create(&t[i], NULL, esb_free_dup, &e[i]);
        }
        for (int i = 0; i < NT; i++)
            pthread_join(t[i], NULL);
    }
    pthread_barrier_destroy(&bar);
    CHECK_EQ(atomic_load(&fr_calls), ROUNDS / 2);
    CHECK_NO_BLOCKS();
}

#ifdef USTREAMS_DEBUG
/* Debug builds abort on a double free (or the sanitizer catches it first). */
static void test_double_free_aborts(void)
{
    for (int kind = 0; kind < 2; kind++) {
        pid_t pid = fork();
        if (pid == 0) {
            freopen("/dev/null", "w", stderr);
            mblk_t *mp = allocb(10, BPRI_LO);
            mblk_t *d = kind ? dupb(mp) : NULL;
            freeb(kind ? d : mp);
            freeb(kind ? d : mp);
            _exit(0); /* not reached */
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    CHECK_NO_BLOCKS();
}
#endif

int main(void)
{
    test_allocb_fields();
    test_many_blocks();
    test_allocb_huge();
    test_null_args();
    test_esballoc();
    test_dupb();
    test_fail_injection();
    test_cache_switch();
    test_cross_thread();
    test_thread_exit();
    test_concurrent_last_free();
#ifdef USTREAMS_DEBUG
    test_double_free_aborts();
#endif
    return CHECK_RESULT();
}
