/* SPDX-License-Identifier: MIT */
/*
 * test_mblk_spare.c -- hand-back slots (src/core/mblk.c "Hand-back";
 * ust_allocb_spare, ust_freeb_spare, ust_spare_drain in strcore.h):
 *
 *   S.1  a block whose data dies with it goes into a slot, counted free;
 *        the next allocation of its class takes that very unit, fresh
 *        (pointers at the base, db_ref 1, M_DATA, no band, flags or tag).
 *   S.2  an allocation of another class leaves a slot's unit to the
 *        thread's cache and returns another block; the slots end empty.
 *   S.3  blocks that may not go there are freed as freeb does, the slots
 *        left empty: shared (dupb) blocks, esballoc, allocb(0), 16 KiB.
 *   S.4  four slots: a fifth free goes to the cache; drain empties them.
 *   S.5  an injected failure: NULL, counted, the slot's unit not lost.
 *   S.6  caches switched off: the slots stay unused, blocks still right.
 *   S.7  two threads: a writer allocating 1-8 KiB blocks from the slots and
 *        filling them, a reader checking and freeing them into the slots,
 *        XS_ROUNDS blocks: every byte as written, every block counted.
 * Every case ends with no block outstanding.  In builds without the block
 * cache (the sanitizer builds) only S.3, S.6 and S.7 have something to
 * check: the slots are never used there.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "strcore.h"

static int cache; /* this build has the block cache */

static int slots_used(struct ust_spare *sp)
{
    int n = 0;
    for (int i = 0; i < UST_SPARE_SLOTS; i++)
        n += atomic_load(&sp->slot[i]) != NULL;
    return n;
}

static void check_fresh(mblk_t *mp, size_t size)
{
    CHECK(mp->b_rptr == mp->b_datap->db_base && mp->b_wptr == mp->b_rptr);
    CHECK(mp->b_datap->db_lim - mp->b_datap->db_base >= (ptrdiff_t)size);
    CHECK_EQ(mp->b_datap->db_ref, 1);
    CHECK_EQ(mp->b_datap->db_type, M_DATA);
    CHECK(mp->b_datap->db_frtnp == NULL);
    CHECK_EQ(mp->b_band, 0);
    CHECK_EQ(mp->b_flag, 0);
    CHECK_EQ(mp->b_tag, 0);
    CHECK(mp->b_cont == NULL && mp->b_next == NULL && mp->b_prev == NULL);
}

static void test_s1_reuse(void)
{
    struct ust_spare sp = {0};
    mblk_t *mp = allocb(4096, BPRI_MED);
    if (!CHECK(mp != NULL))
        return;
    memset(mp->b_wptr, 0xab, 4096);
    mp->b_wptr += 4096;
    mp->b_band = 3;
    mp->b_flag = MSGMARK;
    ust_freeb_spare(mp, &sp);
    CHECK_NO_BLOCKS(); /* a unit in a slot is free */
    CHECK_EQ(slots_used(&sp), cache);
    struct ustreams_blockstats st0;
    ustreams_blockstats(&st0);
    mblk_t *again = ust_allocb_spare(3000, &sp); /* the same class (4 KiB) */
    if (!CHECK(again != NULL))
        return;
    if (cache)
        CHECK(again == mp);
    check_fresh(again, 3000);
    CHECK_EQ(again->b_datap->db_size, 3000);
    CHECK_EQ(slots_used(&sp), 0);
    struct ustreams_blockstats st1;
    ustreams_blockstats(&st1);
    CHECK_EQ(st1.mblks, 1);
    CHECK_EQ(st1.dblks, 1);
    CHECK_EQ(st1.bytes, 3000);
    CHECK_EQ(st1.allocs, st0.allocs + 1);
    freeb(again);
    CHECK_NO_BLOCKS();
}

static void test_s2_other_class(void)
{
    struct ust_spare sp = {0};
    mblk_t *mp = allocb(2048, BPRI_MED);
    if (!CHECK(mp != NULL))
        return;
    ust_freeb_spare(mp, &sp);
    CHECK_EQ(slots_used(&sp), cache);
    mblk_t *big = ust_allocb_spare(8192, &sp);
    if (!CHECK(big != NULL))
        return;
    CHECK(big != mp || !cache);
    check_fresh(big, 8192);
    CHECK_EQ(slots_used(&sp), 0); /* the 2 KiB unit went to the cache */
    freeb(big);
    mblk_t *small = ust_allocb_spare(100, &sp); /* nothing there: allocb */
    if (CHECK(small != NULL))
        check_fresh(small, 100);
    freeb(small);
    CHECK_NO_BLOCKS();
}

static atomic_int ext_frees;
static void ext_free(caddr_t arg)
{
    (void)arg;
    atomic_fetch_add(&ext_frees, 1);
}

static void test_s3_not_handed_back(void)
{
    struct ust_spare sp = {0};
    /* shared: neither the original nor the dup hands the unit back */
    mblk_t *mp = allocb(4096, BPRI_MED), *dup = mp ? dupb(mp) : NULL;
    if (!CHECK(mp != NULL && dup != NULL))
        return;
    ust_freeb_spare(mp, &sp);
    CHECK_EQ(slots_used(&sp), 0);
    CHECK_EQ(dup->b_datap->db_ref, 1);
    ust_freeb_spare(dup, &sp); /* a standalone msgb: freeb's way */
    CHECK_EQ(slots_used(&sp), 0);
    /* esballoc: its free routine runs, once, and nothing is kept */
    static unsigned char ext[4096];
    frtn_t fr = {ext_free, (caddr_t)ext};
    atomic_store(&ext_frees, 0);
    mblk_t *e = esballoc(ext, sizeof(ext), BPRI_MED, &fr);
    if (CHECK(e != NULL))
        ust_freeb_spare(e, &sp);
    CHECK_EQ(atomic_load(&ext_frees), 1);
    CHECK_EQ(slots_used(&sp), 0);
    /* allocb(0) and a class above the slots' */
    mblk_t *z = allocb(0, BPRI_MED), *h = allocb(16384, BPRI_MED);
    if (CHECK(z != NULL && h != NULL)) {
        ust_freeb_spare(z, &sp);
        ust_freeb_spare(h, &sp);
    }
    CHECK_EQ(slots_used(&sp), 0);
    ust_freeb_spare(NULL, &sp); /* nothing */
    CHECK_NO_BLOCKS();
}

static void test_s4_full_and_drain(void)
{
    struct ust_spare sp = {0};
    mblk_t *mp[UST_SPARE_SLOTS + 1];
    for (int i = 0; i <= UST_SPARE_SLOTS; i++)
        mp[i] = allocb(1500, BPRI_MED);
    for (int i = 0; i <= UST_SPARE_SLOTS; i++)
        if (CHECK(mp[i] != NULL))
            ust_freeb_spare(mp[i], &sp);
    CHECK_EQ(slots_used(&sp), cache ? UST_SPARE_SLOTS : 0);
    CHECK_NO_BLOCKS();
    ust_spare_drain(&sp);
    CHECK_EQ(slots_used(&sp), 0);
    ust_spare_drain(&sp); /* empty: nothing */
    CHECK_NO_BLOCKS();
}

static void test_s5_injected_failure(void)
{
    struct ust_spare sp = {0};
    mblk_t *mp = allocb(4096, BPRI_MED);
    if (!CHECK(mp != NULL))
        return;
    ust_freeb_spare(mp, &sp);
    struct ustreams_blockstats st0, st1;
    ustreams_blockstats(&st0);
    ustreams_fail_allocs(1);
    CHECK(ust_allocb_spare(4096, &sp) == NULL);
    ustreams_fail_allocs(0);
    ustreams_blockstats(&st1);
    CHECK_EQ(st1.failures, st0.failures + 1);
    CHECK_EQ(slots_used(&sp), 0); /* the unit went to the cache, not lost */
    mblk_t *again = ust_allocb_spare(4096, &sp);
    CHECK(again != NULL);
    freeb(again);
    ust_spare_drain(&sp);
    CHECK_NO_BLOCKS();
}

static void test_s6_cache_off(void)
{
    struct ust_spare sp = {0};
    int was = ustreams_set_block_cache(0);
    mblk_t *mp = allocb(4096, BPRI_MED);
    if (CHECK(mp != NULL)) {
        memset(mp->b_wptr, 1, 4096);
        ust_freeb_spare(mp, &sp);
    }
    CHECK_EQ(slots_used(&sp), 0);
    mblk_t *again = ust_allocb_spare(4096, &sp);
    if (CHECK(again != NULL))
        check_fresh(again, 4096);
    freeb(again);
    ustreams_set_block_cache(was);
    CHECK_NO_BLOCKS();
}

/* ---- S.7: a writer and a reader passing blocks through a ring ---------- */
#define XS_ROUNDS 200000
#define XS_RING 8

struct xs_ring {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mblk_t *ring[XS_RING];
    unsigned head, tail;
    struct ust_spare sp;
    long bad;
};

static void *xs_writer(void *arg)
{
    struct xs_ring *r = arg;
    for (unsigned i = 0; i < XS_ROUNDS; i++) {
        size_t n = 1025 + (i * 2654435761u) % 7168; /* 1025..8192 */
        mblk_t *mp = ust_allocb_spare(n, &r->sp);
        if (mp == NULL) {
            r->bad++;
            continue;
        }
        memset(mp->b_wptr, (int)(i & 0xff), n);
        mp->b_wptr += n;
        pthread_mutex_lock(&r->mu);
        while (r->tail - r->head == XS_RING)
            pthread_cond_wait(&r->cv, &r->mu);
        r->ring[r->tail++ % XS_RING] = mp;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

static void *xs_reader(void *arg)
{
    struct xs_ring *r = arg;
    long bad = 0;
    for (unsigned i = 0; i < XS_ROUNDS - (unsigned)r->bad; i++) {
        pthread_mutex_lock(&r->mu);
        while (r->tail == r->head)
            pthread_cond_wait(&r->cv, &r->mu);
        mblk_t *mp = r->ring[r->head++ % XS_RING];
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        size_t n = (size_t)(mp->b_wptr - mp->b_rptr);
        unsigned char want = mp->b_rptr[0];
        bad += n < 1025 || n > 8192;
        for (size_t k = 0; k < n; k++)
            bad += mp->b_rptr[k] != want;
        ust_freeb_spare(mp, &r->sp);
    }
    r->bad += bad;
    return NULL;
}

static void test_s7_threads(void)
{
    static struct xs_ring r = {.mu = PTHREAD_MUTEX_INITIALIZER,
                               .cv = PTHREAD_COND_INITIALIZER};
    struct ustreams_blockstats st0, st1;
    ustreams_blockstats(&st0);
    pthread_t w, rd;
    CHECK_EQ(pthread_create(&w, NULL, xs_writer, &r), 0);
    CHECK_EQ(pthread_create(&rd, NULL, xs_reader, &r), 0);
    pthread_join(w, NULL);
    pthread_join(rd, NULL);
    CHECK_EQ(r.bad, 0);
    ustreams_blockstats(&st1);
    CHECK_EQ(st1.allocs - st0.allocs, XS_ROUNDS);
    ust_spare_drain(&r.sp);
    CHECK_EQ(slots_used(&r.sp), 0);
    CHECK_NO_BLOCKS();
}

int main(void)
{
    cache = ustreams_set_block_cache(1); /* 0: a build without the cache */
    test_s1_reuse();
    test_s2_other_class();
    test_s3_not_handed_back();
    test_s4_full_and_drain();
    test_s5_injected_failure();
    test_s6_cache_off();
    test_s7_threads();
    return CHECK_RESULT();
}
