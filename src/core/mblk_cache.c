/* SPDX-License-Identifier: MIT */
/*
 * mblk_cache.c -- the block caches behind the allocator (mblk.c): the global
 * depots, each thread's cache from creation to thread exit, spill and refill,
 * the sum of the block counters, and fork.
 *
 * Principles of operation
 * -----------------------
 * Caches.  Each thread keeps a free list per size class (and one of
 * standalone msgbs) in front of a global depot per class.  A list that grows
 * to its cap hands its older half, as one chain, to the depot, and keeps the
 * blocks freed last (warm in this thread's cache); an empty list takes a
 * chain back before falling through to malloc.  So in a producer/consumer
 * pair the producer reuses blocks that have gone cold in the consumer's
 * cache, rather than lines the consumer has just written.  Caps shrink with the class
 * so that a thread holds about 1 MiB at most; depots are bounded too, and
 * what does not fit goes back to malloc.  A thread's lists go to the depots
 * when it exits (pthread key destructor).  Every unit is still an individual
 * malloc block, so a unit may be freed with free() whatever cache it came
 * from: switching the caches off (ustreams_set_block_cache(0), or building
 * with USTREAMS_NO_BLOCK_CACHE for the sanitizers) is always safe.  The pop
 * and push of a list, on every allocb and freeb, are inline in mblk.c; this
 * file does what happens once per half a list (ust_tc_refill, ust_tc_spill)
 * or once per thread.
 *
 * Accounting.  The counters of each thread (mblk.c, "Accounting") are summed
 * by ustreams_blockstats over the registered caches plus the accumulator
 * ust_blk_st_global, into which exiting threads fold theirs.
 *
 * Fork.  fork() copies only the calling thread, so the child holds the caches
 * of threads it does not have.  Each list change is bracketed by the owner's
 * `busy` mark (plain stores and compiler barriers on x86-64); the child hook
 * (ust_blocks_fork_child) hands every list of those caches that was not being
 * changed at the instant of fork to the depots and frees the caches.  A list
 * marked busy, and a chain a thread was carrying to or from a depot, cannot be
 * trusted and stay unused in the child (memory only: never counted).  The
 * child's counters start at zero: blocks the parent had outstanding stay with
 * the parent's streams, which the child never drives, so the child's
 * ustreams_blockstats counts only its own blocks.
 *
 * Locks (both leaves: nothing else is taken while they are held, and no
 * callback runs under them):
 *   block depot lock (one per depot, never two at once) -- guards its depot.
 *   block stats lock -- guards the list of thread caches.
 */
#include <pthread.h>
#include <stdlib.h>

#include "mblk_impl.h"

#define DEPOT_SLOTS 64            /* chains a depot can hold */
#define DEPOT_BYTES (4L << 20)    /* bound on the memory of one depot */

/* A depot: chains of free nodes handed over by threads. */
struct ust_depot {
    ust_lock_t lock;            /* block depot lock: guards the fields below */
    int nchain;                 /* chains held */
    void *chain[DEPOT_SLOTS];   /* NULL-terminated chains of free nodes */
    uint32_t count[DEPOT_SLOTS]; /* length of each chain */
} __attribute__((aligned(64)));

#define DEPOT_INIT {.lock = UST_LOCK_INIT}
static struct ust_depot depot[TC_NSLOT] = {
    DEPOT_INIT, DEPOT_INIT, DEPOT_INIT, DEPOT_INIT, DEPOT_INIT, DEPOT_INIT,
    DEPOT_INIT, DEPOT_INIT, DEPOT_INIT, DEPOT_INIT, DEPOT_INIT, DEPOT_INIT,
};

static ust_lock_t stats_lock = UST_LOCK_INIT; /* block stats lock: guards tc_all */
static struct ust_tcache *tc_all;              /* STATS: registered thread caches */
atomic_long ust_blk_st_global[ST_N];          /* exited threads, and threads without a cache */

static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

/* ---------------------------------------------------------------- depots */

/* Hand a chain of n nodes to the depot of slot; free it if the depot is full. */
static void depot_put(int slot, void *chain, uint32_t n, size_t node_bytes)
{
    struct ust_depot *d = &depot[slot];
    int max = (int)(DEPOT_BYTES / ((long)n * (long)node_bytes + 1));
    if (max > DEPOT_SLOTS)
        max = DEPOT_SLOTS;
    if (max < 4)
        max = 4;
    ust_lock(&d->lock);
    if (d->nchain < max) {
        d->chain[d->nchain] = chain;
        d->count[d->nchain] = n;
        d->nchain++;
        chain = NULL;
    }
    ust_unlock(&d->lock);
    while (chain != NULL) {
        void *next = node_next(slot, chain);
        free(chain);
        chain = next;
    }
}

/* Take a chain from the depot of slot into the empty list l; 0 if none. */
static int depot_get(int slot, struct tc_list *l)
{
    struct ust_depot *d = &depot[slot];
    int got = 0;
    ust_lock(&d->lock);
    if (d->nchain > 0) {
        d->nchain--;
        l->head = d->chain[d->nchain];
        l->count = d->count[d->nchain];
        got = 1;
    }
    ust_unlock(&d->lock);
    return got;
}

/* --------------------------------------------------------- thread caches */

/* The key destructor: the exiting thread's lists go to the depots, its
 * counters to the accumulator, its cache off the list. */
static void tc_destroy(void *arg)
{
    struct ust_tcache *tc = arg;
    tc_busy(tc, TC_ALL - 1);
    for (int s = 0; s < TC_NSLOT; s++) {
        struct tc_list *l = &tc->list[s];
        if (l->head != NULL)
            depot_put(s, l->head, l->count, slot_node_bytes(s));
        l->head = NULL;
        l->count = 0;
    }
    ust_lock(&stats_lock);
    if (tc->prev != NULL)
        tc->prev->next = tc->next;
    else
        tc_all = tc->next;
    if (tc->next != NULL)
        tc->next->prev = tc->prev;
    for (int i = 0; i < ST_N; i++)
        atomic_fetch_add_explicit(&ust_blk_st_global[i],
                                  atomic_load_explicit(&tc->st[i], memory_order_relaxed),
                                  memory_order_relaxed);
    ust_unlock(&stats_lock);
    ust_tc_self = NULL;
    free(tc);
}

static void tc_key_create(void)
{
    if (pthread_key_create(&tc_key, tc_destroy) != 0)
        die("cannot create the block cache key", NULL);
}

/* ust_tc_create -- see mblk_impl.h.  First use on this thread (or again
 * during thread exit, after tc_destroy: the key destructor then runs once
 * more).  NULL if out of memory: the caller then works uncached and counts in
 * the global accumulator. */
struct ust_tcache *ust_tc_create(void)
{
    pthread_once(&tc_once, tc_key_create);
    struct ust_tcache *tc = calloc(1, sizeof(*tc));
    if (tc == NULL)
        return NULL;
    if (pthread_setspecific(tc_key, tc) != 0) {
        free(tc);
        return NULL;
    }
    ust_lock(&stats_lock);
    tc->next = tc_all;
    if (tc_all != NULL)
        tc_all->prev = tc;
    tc_all = tc;
    ust_unlock(&stats_lock);
    ust_tc_self = tc;
    return tc;
}

/* ust_tc_refill -- see mblk_impl.h.  Refill the empty list of slot from the
 * depot and pop; NULL if the depot is empty too (the caller mallocs). */
void *ust_tc_refill(struct ust_tcache *tc, int slot)
{
    struct tc_list *l = &tc->list[slot];
    void *p = NULL;
    tc_busy(tc, slot);
    if (depot_get(slot, l)) {
        p = l->head;
        l->head = node_next(slot, p);
        l->count--;
    }
    tc_settled(tc);
    return p;
}

/* ust_tc_spill -- see mblk_impl.h.  The list of slot is full: hand half of
 * it to the depot. */
void ust_tc_spill(struct ust_tcache *tc, int slot)
{
    struct tc_list *l = &tc->list[slot];
    uint32_t batch = tc_cap[slot] / 2;
    void *keep = l->head;
    tc_busy(tc, slot);
    for (uint32_t i = 1; i < l->count - batch; i++)
        keep = node_next(slot, keep);
    void *chain = node_next(slot, keep);
    node_set_next(slot, keep, NULL);
    l->count -= batch;
    tc_settled(tc);
    depot_put(slot, chain, batch, slot_node_bytes(slot));
}

/*
 * ustreams_blockstats -- outstanding blocks summed over every thread.
 *   Context: any thread; takes the block stats lock.  Exact when no thread
 *   is allocating or freeing at the time of the call.
 */
void ustreams_blockstats(struct ustreams_blockstats *st)
{
    long sum[ST_N];
    if (st == NULL)
        return;
    for (int i = 0; i < ST_N; i++)
        sum[i] = atomic_load_explicit(&ust_blk_st_global[i], memory_order_relaxed);
    ust_lock(&stats_lock);
    for (struct ust_tcache *tc = tc_all; tc != NULL; tc = tc->next)
        for (int i = 0; i < ST_N; i++)
            sum[i] += atomic_load_explicit(&tc->st[i], memory_order_relaxed);
    ust_unlock(&stats_lock);
    st->mblks = sum[ST_MBLKS];
    st->dblks = sum[ST_DBLKS];
    st->bytes = sum[ST_BYTES];
    st->allocs = sum[ST_ALLOCS];
    st->failures = sum[ST_FAILURES];
}

/* ------------------------------------------------------------------ fork */
/* Quiesced (forksafe.c): depot locks and the stats lock are leaves, never
 * nested, so prepare takes them all. */
void ust_blocks_fork_prepare(void)
{
    for (int s = 0; s < TC_NSLOT; s++)
        ust_lock(&depot[s].lock);
    ust_lock(&stats_lock);
}

void ust_blocks_fork_parent(void)
{
    ust_unlock(&stats_lock);
    for (int s = TC_NSLOT - 1; s >= 0; s--)
        ust_unlock(&depot[s].lock);
}

/* See "Fork" at the top: reclaim the caches of threads the child does not
 * have and start the counters from zero. */
void ust_blocks_fork_child(void)
{
    for (int s = TC_NSLOT - 1; s >= 0; s--)
        ust_unlock(&depot[s].lock);
    struct ust_tcache *tc = tc_all, *next;
    tc_all = NULL;
    for (; tc != NULL; tc = next) {
        next = tc->next;
        for (int i = 0; i < ST_N; i++)
            atomic_store_explicit(&tc->st[i], 0, memory_order_relaxed);
        if (tc == ust_tc_self) { /* the forking thread: keeps its cache */
            tc->prev = NULL;
            tc->next = tc_all;
            if (tc_all != NULL)
                tc_all->prev = tc;
            tc_all = tc;
            continue;
        }
        int busy = atomic_load_explicit(&tc->busy, memory_order_acquire);
        for (int s = 0; busy != TC_ALL && s < TC_NSLOT; s++) {
            void *head = tc->list[s].head;
            uint32_t n = 0;
            if (busy == s + 1 || head == NULL)
                continue;
            for (void *p = head; p != NULL; p = node_next(s, p))
                n++;
            depot_put(s, head, n, slot_node_bytes(s));
        }
        free(tc);
    }
    for (int i = 0; i < ST_N; i++)
        atomic_store_explicit(&ust_blk_st_global[i], 0, memory_order_relaxed);
    ust_unlock(&stats_lock);
}
