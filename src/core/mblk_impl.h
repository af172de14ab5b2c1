/* SPDX-License-Identifier: MIT */
/*
 * mblk_impl.h -- private to the block allocator, mblk.c and mblk_cache.c:
 * the per-thread block cache, its lists and fork marks, the size-class
 * arithmetic, and the few variables and functions the two files share.
 *
 * mblk.c holds the hot path (allocb, freeb, dupb and the inline pop and push
 * of the thread cache); mblk_cache.c the cold machinery behind it (the global
 * depots, cache creation and thread exit, spill and refill, the sum of the
 * counters, fork).  What both need on every list change (node links, the busy
 * mark, the caps) is static inline here, so the hot path keeps it inline.
 * The shared variables and functions are hidden (not only left out of the
 * export list, cmake/ustreams.map, but known as local to the compiler): it
 * then reaches them as it reached the statics they were, with no GOT load and
 * no PLT call, and tc_self stays a module-local thread variable.
 * "Principles of operation" at the top of mblk.c and of mblk_cache.c.
 */
#ifndef UST_MBLK_IMPL_H
#define UST_MBLK_IMPL_H

#include <stdio.h>
#include <stdlib.h>

#include "strcore.h"

#define UST_MBLK_HIDDEN __attribute__((visibility("hidden")))

#ifdef USTREAMS_DEBUG
#define UST_DEBUG_ON 1
#else
#define UST_DEBUG_ON 0
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The BIG class is never cached, so its slot holds the standalone msgbs. */
#define TC_MBLK UST_CLS_BIG
#define TC_NSLOT (UST_CLS_BIG + 1)
#define TC_ALL (TC_NSLOT + 1) /* busy: every list (the thread is exiting) */

/* Per-thread list cap by slot (batch = cap / 2): at most ~1 MiB per thread. */
static const uint32_t tc_cap[TC_NSLOT] = {
    [UST_CLS_ESB] = 64, [UST_CLS_128] = 64, [UST_CLS_256] = 64, [UST_CLS_512] = 64,
    [UST_CLS_1K] = 64,  [UST_CLS_2K] = 64,  [UST_CLS_4K] = 64,  [UST_CLS_8K] = 16,
    [UST_CLS_16K] = 8,  [UST_CLS_32K] = 4,  [UST_CLS_64K] = 2,  [TC_MBLK] = 64,
};

enum { ST_MBLKS, ST_DBLKS, ST_BYTES, ST_ALLOCS, ST_FAILURES, ST_N };

struct tc_list {
    void *head;     /* first free node, linked through cache_next / b_next */
    uint32_t count; /* nodes on the list */
};

/* A thread's cache.  lists: owner thread only.  st: written by the owner only
 * (relaxed), read by ustreams_blockstats.  next/prev: block stats lock.
 * busy: written by the owner only; read by a fork() child (see "Fork" in
 * mblk_cache.c). */
struct ust_tcache {
    struct tc_list list[TC_NSLOT];
    atomic_long st[ST_N];
    atomic_int busy; /* slot + 1 while that list is being changed, TC_ALL at exit, else 0 */
    struct ust_tcache *next, *prev;
};

/* The calling thread's cache, or NULL before its first block (mblk.c).
 * Default TLS model (dlopen()-able library: see UCOPY_TLS, sd_ucopy.c). */
extern _Thread_local struct ust_tcache *ust_tc_self UST_MBLK_HIDDEN;

/* Counters of exited threads, and of threads without a cache (mblk_cache.c;
 * relaxed atomics, added to by anyone). */
extern atomic_long ust_blk_st_global[ST_N] UST_MBLK_HIDDEN;

/*
 * ust_tc_create -- the calling thread's cache, made on its first block (or
 *   again during thread exit, after the key destructor: it then runs once
 *   more).  Sets ust_tc_self.  Context: any thread; takes the block stats
 *   lock.  Returns NULL if out of memory: the caller then works uncached and
 *   counts in ust_blk_st_global.  (mblk_cache.c)
 */
struct ust_tcache *ust_tc_create(void) UST_MBLK_HIDDEN;

/*
 * ust_tc_refill -- the list of slot of tc (the caller's own cache) is empty:
 *   take a chain from the depot and pop one node of it.  Context: owner
 *   thread; takes the depot lock of slot.  Returns the node, or NULL if the
 *   depot is empty too (the caller mallocs).  (mblk_cache.c)
 */
void *ust_tc_refill(struct ust_tcache *tc, int slot) UST_MBLK_HIDDEN;

/*
 * ust_tc_spill -- the list of slot of tc (the caller's own cache) is at its
 *   cap: hand its older half to the depot, as one chain (freed if the depot
 *   is full).  Context: owner thread; takes the depot lock of slot.
 *   (mblk_cache.c)
 */
void ust_tc_spill(struct ust_tcache *tc, int slot) UST_MBLK_HIDDEN;

/* Bytes of buffer of a unit of class cls. */
static inline size_t cls_bytes(int cls)
{
    return cls == UST_CLS_ESB ? 0 : (size_t)UST_FASTBUF << (cls - UST_CLS_128);
}

/* Bytes of one cached node of slot (a unit, or a standalone msgb). */
static inline size_t slot_node_bytes(int slot)
{
    return slot == TC_MBLK ? sizeof(struct ust_mblk) : sizeof(struct ust_dunit) + cls_bytes(slot);
}

static inline void *node_next(int slot, void *p)
{
    if (slot == TC_MBLK)
        return ((struct ust_mblk *)p)->m.b_next;
    return ((struct ust_dunit *)p)->cache_next;
}

static inline void node_set_next(int slot, void *p, void *next)
{
    if (slot == TC_MBLK)
        ((struct ust_mblk *)p)->m.b_next = next;
    else
        ((struct ust_dunit *)p)->cache_next = next;
}

/* Report a broken invariant and abort. */
static inline void die(const char *what, const void *p)
{
    fprintf(stderr, "ustreams: %s (block %p)\n", what, p);
    abort();
}

/* Mark list slot of tc as being changed (fork safety, see "Fork" in
 * mblk_cache.c).  The mark must reach memory before the list changes: x86
 * keeps stores in program order, so a compiler barrier does; weakly ordered
 * machines need a fence. */
static inline void tc_busy(struct ust_tcache *tc, int slot)
{
    atomic_store_explicit(&tc->busy, slot + 1, memory_order_relaxed);
#if defined(__x86_64__) || defined(__i386__)
    atomic_signal_fence(memory_order_seq_cst);
#else
    atomic_thread_fence(memory_order_release);
#endif
}

static inline void tc_settled(struct ust_tcache *tc)
{
    atomic_store_explicit(&tc->busy, 0, memory_order_release);
}

#endif /* UST_MBLK_IMPL_H */
