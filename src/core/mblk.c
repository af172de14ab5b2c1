/* SPDX-License-Identifier: MIT */
/*
 * mblk.c -- the message block allocator: allocb, esballoc, dupb, freeb,
 * freemsg, testb, and the block accounting.
 *
 * Principles of operation
 * -----------------------
 * Data units.  allocb makes one allocation, a struct ust_dunit, that holds the
 * datab, the msgb handed out with it (its "own" msgb) and the buffer itself.
 * Buffers up to 64 KiB come in power-of-two size classes (128 B, the fast
 * buffer, up to 64 KiB); esballoc and allocb(0) use a unit without buffer
 * (UST_CLS_ESB); anything larger is a unit malloc'd to measure and never
 * cached.  dupb takes a standalone msgb (struct ust_mblk, own == 0).
 *
 * Lifetime.  db_ref counts the msgbs that reference a datab.  When it drops
 * to zero the data is released: the esballoc free routine runs (exactly once,
 * since only one thread sees zero) and the datab is no longer counted.  The
 * unit's memory holds two things, though: the data, and its own msgb, which
 * may outlive the data (pullupmsg points it at a new datab) or die before it
 * (freed while dups remain).  own_free carries two bits, OWN_GONE and
 * DATA_GONE; each party sets its bit with one atomic fetch-or and whoever sees
 * the other bit already set returns the memory.  The common case -- the own
 * msgb of an unshared datab (db_ref == 1) -- is recognised with one acquire
 * load and freed with no atomic read-modify-write at all: no other thread can
 * hold a reference it could use.
 *
 * Caches.  Units and standalone msgbs come from, and go back to, the calling
 * thread's cache: a free list per size class (and one of msgbs), popped and
 * pushed inline here (tc_pop, tc_push) with the owner's fork mark around each
 * change.  An empty list refills from, and a full one spills half to, a
 * global depot per class; those, the caches' life from first block to thread
 * exit, and fork are in mblk_cache.c ("Principles of operation" there).
 * Without a cache (switched off, or out of memory for it) units are malloc'd
 * and freed directly.
 *
 * Accounting.  Each thread counts what it allocates and frees in its own
 * counters (relaxed atomics written only by that thread, read by anyone);
 * ustreams_blockstats (mblk_cache.c) sums the registered threads plus the
 * accumulator into which exiting threads fold theirs.  A block freed on
 * another thread than the one that allocated it drives one counter up and
 * another down; the sum is right.
 *
 * Hand-back.  A pipe's writer allocates a block per large write (or per
 * coalescing block of small ones) and its reader frees it on another CPU:
 * through the caches, the unit goes to the reader's list, to the depot half
 * a list at a time, and back to the writer a chain at a time, so the two
 * pass a few hundred units round (64 per list at 4 KiB) and every write
 * lands on lines that left both CPUs' first-level caches.  A two-copy
 * hand-off through 2-4 blocks of 4 KiB runs at twice the rate of one
 * through 8 or more on the machines measured (bench/copy_ceiling.c,
 * bench/README.md "The two-copy ceiling at 4 KiB").  So a stream may keep
 * a few hand-back slots (struct ust_spare, strcore.h): its reader frees
 * into them (ust_freeb_spare), its writer allocates from them
 * (ust_allocb_spare), each slot taken or given whole with one atomic
 * operation, the unit's contents handed over with it (release/acquire).
 * A unit in a slot is free: counted as in a cache (not outstanding),
 * poisoned in debug builds, and given back by ust_spare_drain when the
 * stream goes.  Without caching (switched off, the sanitizer builds) the
 * slots are never used.
 *
 * Locks: none of its own.  The pop and push of a list take none; a refill or
 * a spill takes one depot lock (a leaf, mblk_cache.c).
 */
#include <string.h>

#include "mblk_impl.h"

#define OWN_GONE 0x01  /* own_free: the unit's own msgb has been freed */
#define DATA_GONE 0x02 /* own_free: db_ref reached zero, the data is released */
#define POISON 0x6b    /* debug builds: freed data and msgbs are filled with this */

#define MAX_SIZE ((size_t)PTRDIFF_MAX - sizeof(struct ust_dunit))

/* Read-mostly switches, read on every allocation (the depots, written under
 * their locks, are in mblk_cache.c, on cache lines of their own). */
static atomic_long fail_budget;   /* ustreams_fail_allocs: failures still to inject */
static atomic_long fail_skip;     /* ust_fail_allocs_after: successes before them */
#ifdef USTREAMS_NO_BLOCK_CACHE
static atomic_int cache_on = 0;
#else
static atomic_int cache_on = 1;
#endif

/* The calling thread's cache (mblk_impl.h): set by ust_tc_create, cleared
 * at thread exit (mblk_cache.c). */
_Thread_local struct ust_tcache *ust_tc_self;

/* ---------------------------------------------------------------- helpers */

static inline int size_cls(size_t size)
{
    if (size == 0)
        return UST_CLS_ESB;
    if (size <= UST_FASTBUF)
        return UST_CLS_128;
    if (size > ((size_t)UST_FASTBUF << (UST_CLS_64K - UST_CLS_128)))
        return UST_CLS_BIG;
    /* bit length of size - 1, minus 6: 129..256 -> 2, ..., 65536 -> 10 */
    return (int)(64 - __builtin_clzll((unsigned long long)(size - 1))) - 6;
}

/* Add v to counter i of tc (owner thread only), or of the global accumulator. */
static inline void st_add(struct ust_tcache *tc, int i, long v)
{
    if (likely(tc != NULL))
        atomic_store_explicit(&tc->st[i],
                              atomic_load_explicit(&tc->st[i], memory_order_relaxed) + v,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&ust_blk_st_global[i], v, memory_order_relaxed);
}

/* Consume one injected failure, if any are armed.  One relaxed load normally. */
static inline int inject_fail(void)
{
    long n = atomic_load_explicit(&fail_budget, memory_order_relaxed);
    if (likely(n <= 0))
        return 0;
    long k = atomic_load_explicit(&fail_skip, memory_order_relaxed);
    while (k > 0) {
        if (atomic_compare_exchange_weak_explicit(&fail_skip, &k, k - 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return 0;
    }
    while (n > 0) {
        if (atomic_compare_exchange_weak_explicit(&fail_budget, &n, n - 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return 1;
    }
    return 0;
}

/* ------------------------------------------- the thread cache, hot half */

/* The calling thread's cache, made on first use; NULL if out of memory. */
static inline struct ust_tcache *tc_get(void)
{
    struct ust_tcache *tc = ust_tc_self;
    if (likely(tc != NULL))
        return tc;
    return ust_tc_create();
}

static inline int caching(const struct ust_tcache *tc)
{
    return tc != NULL && atomic_load_explicit(&cache_on, memory_order_relaxed);
}

/* Pop a node of slot from the thread cache (refilling from the depot). */
static inline void *tc_pop(struct ust_tcache *tc, int slot)
{
    struct tc_list *l = &tc->list[slot];
    void *p = l->head;
    if (unlikely(p == NULL))
        return ust_tc_refill(tc, slot);
    tc_busy(tc, slot);
    l->head = node_next(slot, p);
    l->count--;
    tc_settled(tc);
    return p;
}

/* Push a free node onto the thread cache. */
static inline void tc_push(struct ust_tcache *tc, int slot, void *p)
{
    struct tc_list *l = &tc->list[slot];
    if (unlikely(l->count >= tc_cap[slot]))
        ust_tc_spill(tc, slot);
    tc_busy(tc, slot);
    node_set_next(slot, p, l->head);
    l->head = p;
    l->count++;
    tc_settled(tc);
}

/* ------------------------------------------------------------ data units */

/* A new unit from malloc for class cls (size bytes if UST_CLS_BIG). */
static struct ust_dunit *unit_new(int cls, size_t size)
{
    size_t cap = cls == UST_CLS_BIG ? size : cls_bytes(cls);
    struct ust_dunit *u;
    if (size > MAX_SIZE || (u = malloc(sizeof(*u) + cap)) == NULL)
        return NULL;
    memset(u, 0, sizeof(*u));
    u->cls = (uint16_t)cls;
    u->own.own = 1;
    u->state = UST_MB_FREE;
    return u;
}

/* A unit able to hold size bytes, uninitialised except cls and own.own. */
static inline struct ust_dunit *unit_get(struct ust_tcache *tc, size_t size)
{
    int cls = size_cls(size);
    struct ust_dunit *u = NULL;
    if (likely(cls != UST_CLS_BIG) && caching(tc))
        u = tc_pop(tc, cls);
    if (u == NULL)
        return unit_new(cls, size);
    if (UST_DEBUG_ON && u->state != UST_MB_FREE)
        die("block cache corrupted: a cached data unit is not free", u);
    return u;
}

static inline void unit_put(struct ust_tcache *tc, struct ust_dunit *u)
{
    if (likely(u->cls != UST_CLS_BIG) && caching(tc))
        tc_push(tc, u->cls, u);
    else
        free(u);
}

/* Initialise u as a fresh data block of size bytes at base, own msgb live. */
static inline mblk_t *unit_init(struct ust_dunit *u, unsigned char *base, size_t size,
                                unsigned char type)
{
    dblk_t *db = &u->d;
    db->db_frtnp = NULL;
    db->db_base = base;
    db->db_lim = base + size;
    db->db_ref = 1;
    db->db_type = type;
    db->db_flag = 0;
    db->db_pad = 0;
    db->db_size = size;
    mblk_t *mp = &u->own.m;
    mp->b_next = NULL;
    mp->b_prev = NULL;
    mp->b_cont = NULL;
    mp->b_rptr = base;
    mp->b_wptr = base;
    mp->b_datap = db;
    mp->b_band = 0;
    mp->b_tag = 0;
    mp->b_flag = 0;
    mp->b_queue = NULL;
    u->own_free = 0;
    if (UST_DEBUG_ON) {
        u->state = UST_MB_LIVE;
        u->own.state = UST_MB_LIVE;
    }
    return mp;
}

/* A msgb dies: debug builds mark and poison it (state and own survive). */
static inline void mblk_kill(struct ust_mblk *mb)
{
    if (UST_DEBUG_ON) {
        memset(&mb->m, POISON, sizeof(mb->m));
        mb->state = UST_MB_FREE;
    }
}

static inline void bufcall_check(void)
{
    if (unlikely(atomic_load_explicit(&ust_bufcall_pending, memory_order_relaxed) > 0))
        ust_bufcall_kick();
}

/* The data of u is gone (db_ref reached zero): the esballoc routine run,
 * the data counted gone, poisoned in debug builds. */
static inline void data_gone(struct ust_tcache *tc, struct ust_dunit *u)
{
    dblk_t *db = &u->d;
    frtn_t *fr = db->db_frtnp;
    if (fr != NULL)
        fr->free_func(fr->free_arg);
    st_add(tc, ST_DBLKS, -1);
    st_add(tc, ST_BYTES, -(long)db->db_size);
    if (UST_DEBUG_ON) {
        if (fr == NULL)
            memset(db->db_base, POISON, db->db_size);
        u->state = UST_MB_FREE;
    }
}

/* db_ref of u reached zero: release the data, and the unit if its own msgb is
 * gone too.  Does not touch u afterwards unless it returns it. */
static void data_release(struct ust_tcache *tc, struct ust_dunit *u)
{
    data_gone(tc, u);
    if (__atomic_fetch_or(&u->own_free, DATA_GONE, __ATOMIC_ACQ_REL) & OWN_GONE)
        unit_put(tc, u);
    bufcall_check();
}

/* Drop one reference to db. */
static void data_unref(struct ust_tcache *tc, dblk_t *db)
{
    /* db_ref == 1 with a reference in hand: no one else can reach db. */
    if (__atomic_load_n(&db->db_ref, __ATOMIC_ACQUIRE) == 1 ||
        __atomic_sub_fetch(&db->db_ref, 1, __ATOMIC_ACQ_REL) == 0)
        data_release(tc, ust_du(db));
}

static void check_live(mblk_t *bp)
{
    struct ust_mblk *mb = ust_mb(bp);
    if (mb->state != UST_MB_LIVE)
        die(mb->state == UST_MB_FREE ? "freeb: message block freed twice"
                                     : "freeb: not a message block (garbage pointer)",
            bp);
    if (ust_du(bp->b_datap)->state != UST_MB_LIVE)
        die("freeb: message block refers to a freed data block", bp);
}

/* ---------------------------------------------------------------- the API */

/* Free unit u handed out as a block of size bytes of type: counted, made. */
static inline mblk_t *unit_hand_out(struct ust_tcache *tc, struct ust_dunit *u, size_t size,
                                    unsigned char type)
{
    st_add(tc, ST_MBLKS, 1);
    st_add(tc, ST_DBLKS, 1);
    st_add(tc, ST_BYTES, (long)size);
    st_add(tc, ST_ALLOCS, 1);
    return unit_init(u, u->data, size, type);
}

/* The own msgb mb of unit u dies with its data (db_ref 1): killed, then
 * the data gone.  The msgb's count and where the unit goes are the
 * caller's. */
static inline void unit_retire(struct ust_tcache *tc, struct ust_mblk *mb, struct ust_dunit *u)
{
    mblk_kill(mb);
    data_gone(tc, u);
}

/* The body of allocb and ust_allocb_type, inlined into both. */
static inline mblk_t *alloc_type(size_t size, unsigned char type)
{
    struct ust_tcache *tc = tc_get();
    struct ust_dunit *u;
    if (unlikely(inject_fail()) || (u = unit_get(tc, size)) == NULL) {
        st_add(tc, ST_FAILURES, 1);
        return NULL;
    }
    return unit_hand_out(tc, u, size, type);
}

/*
 * ust_allocb_type -- see strcore.h.
 *   Context: any thread; never blocks (the depot lock is a leaf held briefly).
 *   Returns the message block, or NULL (no memory, size too large, injected
 *   failure); a failure is counted.
 */
mblk_t *ust_allocb_type(size_t size, unsigned char type)
{
    return alloc_type(size, type);
}

/*
 * allocb -- allocate a message block with a buffer of size bytes (allocb(9F)).
 *   Context: any thread, any context; never blocks.  pri is advisory.
 *   Returns an M_DATA block with b_rptr == b_wptr == db_base, db_ref 1, band
 *   and flags 0; size 0 is valid.  NULL when out of memory (then bufcall).
 */
mblk_t *allocb(size_t size, uint_t pri)
{
    (void)pri;
    return alloc_type(size, M_DATA);
}

/*
 * esballoc -- wrap a caller-supplied buffer in a message block (esballoc(9F)).
 *   Context: any thread; never blocks.  fr_rtnp->free_func(free_arg) is called
 *   exactly once, when the last msgb referring to the buffer is freed, on the
 *   thread of that freeb, with no executive lock held; fr_rtnp must stay valid
 *   until then.  Returns NULL if base or fr_rtnp is NULL or out of memory (the
 *   free routine is then not called).
 */
mblk_t *esballoc(unsigned char *base, size_t size, uint_t pri, frtn_t *fr_rtnp)
{
    (void)pri;
    if (base == NULL || fr_rtnp == NULL)
        return NULL;
    struct ust_tcache *tc = tc_get();
    struct ust_dunit *u;
    if (unlikely(inject_fail()) || (u = unit_get(tc, 0)) == NULL) {
        st_add(tc, ST_FAILURES, 1);
        return NULL;
    }
    mblk_t *mp = unit_init(u, base, size, M_DATA);
    u->d.db_frtnp = fr_rtnp;
    st_add(tc, ST_MBLKS, 1);
    st_add(tc, ST_DBLKS, 1);
    st_add(tc, ST_BYTES, (long)size);
    st_add(tc, ST_ALLOCS, 1);
    return mp;
}

/*
 * desballoc -- as esballoc (desballoc(9F)); in user space there is no
 *   interrupt context to distinguish.
 */
mblk_t *desballoc(unsigned char *base, size_t size, uint_t pri, frtn_t *fr_rtnp)
{
    return esballoc(base, size, pri, fr_rtnp);
}

/*
 * ust_datab_alloc -- see strcore.h.  Context: any thread; never blocks.
 */
dblk_t *ust_datab_alloc(size_t size)
{
    mblk_t *mp = ust_allocb_type(size, M_DATA);
    if (mp == NULL)
        return NULL;
    struct ust_dunit *u = ust_du(mp->b_datap);
    mblk_kill(&u->own);
    u->own_free = OWN_GONE; /* not yet shared: a plain store is enough */
    st_add(ust_tc_self, ST_MBLKS, -1);
    return &u->d;
}

/*
 * ust_datab_rele -- see strcore.h.  Context: any thread; no lock held.
 */
void ust_datab_rele(dblk_t *db)
{
    data_unref(tc_get(), db);
}

/*
 * testb -- would allocb(size, pri) succeed now? (testb(9F))
 *   Context: any thread; never blocks.  For a cached class a unit is made
 *   ready in the calling thread's cache, so the next allocb there is served
 *   from it.  Returns 1 or 0.
 */
int testb(size_t size, uint_t pri)
{
    (void)pri;
    struct ust_tcache *tc = tc_get();
    if (atomic_load_explicit(&fail_budget, memory_order_relaxed) > 0 || size > MAX_SIZE)
        return 0;
    int cls = size_cls(size);
    if (cls != UST_CLS_BIG && caching(tc)) {
        struct ust_dunit *u = tc_pop(tc, cls);
        if (u == NULL && (u = unit_new(cls, size)) == NULL)
            return 0;
        tc_push(tc, cls, u);
        return 1;
    }
    void *p = malloc(sizeof(struct ust_dunit) + (cls == UST_CLS_BIG ? size : cls_bytes(cls)));
    free(p);
    return p != NULL;
}

/*
 * freeb -- free one message block (freeb(9F)).
 *   Context: any thread; never blocks; callable with locks held (bufcall
 *   callbacks are handed to the bufcall thread, never run here).  The data is
 *   released when its last msgb goes; an esballoc free routine then runs on
 *   this thread.  b_cont is not followed.  freeb(NULL) does nothing.
 *   Errors: debug builds abort on a double free or a garbage pointer.
 */
void freeb(mblk_t *bp)
{
    if (bp == NULL)
        return;
    if (UST_DEBUG_ON)
        check_live(bp);
    struct ust_tcache *tc = tc_get();
    struct ust_mblk *mb = ust_mb(bp);
    dblk_t *db = bp->b_datap;
    st_add(tc, ST_MBLKS, -1);
    if (!mb->own) {
        /* a standalone msgb from dupb */
        mblk_kill(mb);
        data_unref(tc, db);
        if (caching(tc))
            tc_push(tc, TC_MBLK, mb);
        else
            free(mb);
        return;
    }
    struct ust_dunit *u = UST_CONTAINER(mb, struct ust_dunit, own);
    if (likely(db == &u->d)) {
        if (likely(__atomic_load_n(&db->db_ref, __ATOMIC_ACQUIRE) == 1)) {
            /* The common case: nothing else refers to the unit. */
            unit_retire(tc, mb, u);
            unit_put(tc, u);
            bufcall_check();
            return;
        }
        /* Dups remain.  Mark the msgb gone before dropping its reference, so
         * that whoever drops the last one sees OWN_GONE. */
        mblk_kill(mb);
        __atomic_fetch_or(&u->own_free, OWN_GONE, __ATOMIC_ACQ_REL);
        if (__atomic_sub_fetch(&db->db_ref, 1, __ATOMIC_ACQ_REL) == 0)
            data_release(tc, u);
        return;
    }
    /* The own msgb was given another data block (pullupmsg). */
    data_unref(tc, db);
    mblk_kill(mb);
    if (__atomic_fetch_or(&u->own_free, OWN_GONE, __ATOMIC_ACQ_REL) & DATA_GONE)
        unit_put(tc, u);
}

/*
 * freemsg -- free every block of a message (freemsg(9F)).
 *   Context: as freeb.  freemsg(NULL) does nothing.
 */
void freemsg(mblk_t *mp)
{
    while (mp != NULL) {
        mblk_t *next = mp->b_cont;
        freeb(mp);
        mp = next;
    }
}

/*
 * dupb -- a new msgb sharing bp's data block (dupb(9F)).
 *   Context: any thread; never blocks.  db_ref is incremented; b_rptr,
 *   b_wptr, b_band and b_flag are copied; b_next, b_prev, b_cont are NULL.
 *   Returns NULL if bp is NULL or out of memory.
 */
mblk_t *dupb(mblk_t *bp)
{
    if (bp == NULL)
        return NULL;
    struct ust_tcache *tc = tc_get();
    struct ust_mblk *mb = NULL;
    if (unlikely(inject_fail()))
        goto fail;
    if (caching(tc))
        mb = tc_pop(tc, TC_MBLK);
    if (mb == NULL) {
        if ((mb = malloc(sizeof(*mb))) == NULL)
            goto fail;
        memset(mb, 0, sizeof(*mb));
    }
    __atomic_add_fetch(&bp->b_datap->db_ref, 1, __ATOMIC_RELAXED);
    mb->m = *bp;
    mb->m.b_next = NULL;
    mb->m.b_prev = NULL;
    mb->m.b_cont = NULL;
    mb->m.b_queue = NULL;
    mb->own = 0;
    if (UST_DEBUG_ON)
        mb->state = UST_MB_LIVE;
    st_add(tc, ST_MBLKS, 1);
    st_add(tc, ST_ALLOCS, 1);
    return &mb->m;
fail:
    st_add(tc, ST_FAILURES, 1);
    return NULL;
}

/* ------------------------------------------------------------- hand-back */

/* Take slot i of sp: its unit, or NULL if it was empty. */
static inline struct ust_dunit *spare_take(struct ust_spare *sp, int i)
{
    if (atomic_load_explicit(&sp->slot[i], memory_order_relaxed) == NULL)
        return NULL; /* a look first: the exchange would take the line */
    struct ust_dunit *u = atomic_exchange_explicit(&sp->slot[i], NULL, memory_order_acquire);
    if (UST_DEBUG_ON && u != NULL && u->state != UST_MB_FREE)
        die("hand-back slot corrupted: a data unit there is not free", u);
    return u;
}

mblk_t *ust_allocb_spare(size_t size, struct ust_spare *sp)
{
    struct ust_tcache *tc = tc_get();
    int cls = size_cls(size);
    if (cls == UST_CLS_BIG || cls == UST_CLS_ESB || !caching(tc))
        return alloc_type(size, M_DATA);
    for (int i = 0; i < UST_SPARE_SLOTS; i++) {
        struct ust_dunit *u = spare_take(sp, i);
        if (u == NULL)
            continue;
        if (u->cls != cls) { /* another size's: keep it, in this thread's cache */
            unit_put(tc, u);
            continue;
        }
        if (unlikely(inject_fail())) {
            unit_put(tc, u);
            st_add(tc, ST_FAILURES, 1);
            return NULL;
        }
        return unit_hand_out(tc, u, size, M_DATA);
    }
    return alloc_type(size, M_DATA);
}

void ust_freeb_spare(mblk_t *bp, struct ust_spare *sp)
{
    if (bp == NULL)
        return;
    struct ust_mblk *mb = ust_mb(bp);
    dblk_t *db = bp->b_datap;
    struct ust_tcache *tc = tc_get();
    struct ust_dunit *u = mb->own ? UST_CONTAINER(mb, struct ust_dunit, own) : NULL;
    if (u == NULL || db != &u->d || u->cls > UST_SPARE_CLS_MAX || u->cls == UST_CLS_ESB ||
        db->db_frtnp != NULL || !caching(tc) ||
        __atomic_load_n(&db->db_ref, __ATOMIC_ACQUIRE) != 1) {
        freeb(bp);
        return;
    }
    /* freeb's common case, with the unit kept for sp. */
    if (UST_DEBUG_ON)
        check_live(bp);
    st_add(tc, ST_MBLKS, -1);
    unit_retire(tc, mb, u); /* no esballoc routine: checked above */
    int kept = 0;
    for (int i = 0; i < UST_SPARE_SLOTS && !kept; i++) {
        struct ust_dunit *none = NULL;
        kept = atomic_load_explicit(&sp->slot[i], memory_order_relaxed) == NULL &&
               atomic_compare_exchange_strong_explicit(&sp->slot[i], &none, u,
                                                       memory_order_release,
                                                       memory_order_relaxed);
    }
    if (!kept)
        unit_put(tc, u);
    bufcall_check();
}

void ust_spare_drain(struct ust_spare *sp)
{
    struct ust_tcache *tc = NULL;
    for (int i = 0; i < UST_SPARE_SLOTS; i++) {
        struct ust_dunit *u = spare_take(sp, i);
        if (u == NULL)
            continue;
        if (tc == NULL)
            tc = tc_get();
        unit_put(tc, u);
    }
}

/*
 * ustreams_fail_allocs -- make the next n block allocations (allocb, esballoc,
 *   dupb, and those inside copyb, copymsg, pullupmsg, ...) fail; 0 disarms.
 *   Context: any thread.  testb reports failure while any are armed.
 */
void ustreams_fail_allocs(long n)
{
    ust_fail_allocs_after(0, n);
}

/*
 * ust_fail_allocs_after -- see strcore.h.  Context: any thread.
 */
void ust_fail_allocs_after(long skip, long n)
{
    atomic_store_explicit(&fail_budget, 0, memory_order_relaxed);
    atomic_store_explicit(&fail_skip, skip > 0 ? skip : 0, memory_order_relaxed);
    atomic_store_explicit(&fail_budget, n > 0 ? n : 0, memory_order_relaxed);
}

/*
 * ustreams_set_block_cache -- turn the per-thread caches on or off at run
 *   time; off, every block is malloc'd and freed directly.  Blocks already
 *   cached stay where they are.  Builds with USTREAMS_NO_BLOCK_CACHE cannot
 *   turn them on.  Context: any thread.  Returns the previous setting.
 */
int ustreams_set_block_cache(int on)
{
#ifdef USTREAMS_NO_BLOCK_CACHE
    (void)on;
    return 0;
#else
    return atomic_exchange_explicit(&cache_on, on != 0, memory_order_relaxed);
#endif
}
