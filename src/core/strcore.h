/* SPDX-License-Identifier: MIT */
/*
 * strcore.h -- the executive's private structures and internal contracts.
 *
 * Modules must not include this file; it is shared by src/core, src/head,
 * src/drivers, src/admin and the tests.  Everything internal is prefixed
 * ust_.  It declares nothing of the layers above the executive: where the
 * executive reaches up it calls a hook they install (ust_set_init_hook,
 * ust_strlog_set_route).
 *
 * Lock order (see docs/ARCHITECTURE.md), outermost first:
 *   registry lock > stream head locks (src/head) > perimeter lock >
 *   queue lock (one at a time, never two) > scheduler run-list lock >
 *   timer lock > bufcall lock > block depot lock.
 * No lock is held while a module procedure (put, srv, open, close, callback)
 * runs.
 */
#ifndef UST_STRCORE_H
#define UST_STRCORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stream.h>
#include <sys/strconf.h>
#include <ustreams_exec.h>

#include "forksafe.h"
#include "lock.h"

#define UST_FASTBUF 128   /* data bytes kept inside the data block */
#define UST_MAXBAND 255

#define UST_CONTAINER(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------------ */
/* Deferred work: an operation waiting for a perimeter.                      */
/* ------------------------------------------------------------------------ */
enum ust_defer_kind {
    UST_DEFER_PUT = 1,    /* call q's put procedure with mp */
    UST_DEFER_SRV,        /* call q's service procedure */
    UST_DEFER_WRITER,     /* call wfunc(q, mp) (qwriter) */
    UST_DEFER_CALLBACK,   /* call cb(arg) (qtimeout, qbufcall) */
};

/* A node of a perimeter's FIFO of deferred operations.  It is embedded in what
 * it describes (the message, the queue, the timer), so deferring never
 * allocates.  While deferred, the operation holds a claim on q. */
struct ust_defer {
    struct ust_defer *next;
    int kind;         /* enum ust_defer_kind */
    int mode;         /* UST_PERIM_SHARED or UST_PERIM_EXCL needed at this level */
    int level;        /* next perimeter level to enter (0 inner-only, 1 outer then inner) */
    queue_t *q;
    mblk_t *mp;
    void (*wfunc)(queue_t *, mblk_t *);
    void (*cb)(void *);
    void *arg;
    void (*done)(struct ust_defer *); /* called after the operation ran (may be NULL) */
};

/* ------------------------------------------------------------------------ */
/* Message blocks                                                            */
/* ------------------------------------------------------------------------ */
/* Every msgb comes wrapped: the wrapper holds the deferral node used when the
 * message waits for a perimeter, and the allocation state for debug checks. */
struct ust_mblk {
    mblk_t m;
    struct ust_defer defer;
    uint32_t state; /* UST_MB_LIVE / UST_MB_FREE (debug double-free check) */
    uint8_t own;    /* 1: embedded in its data unit; 0: standalone (dupb) */
};

#define UST_MB_LIVE 0x4d424c4bu /* "MBLK" */
#define UST_MB_FREE 0x46524545u /* "FREE" */

static inline struct ust_mblk *ust_mb(mblk_t *mp)
{
    return UST_CONTAINER(mp, struct ust_mblk, m);
}

/* A data unit: the datab, the msgb allocated with it, and (for allocb) the
 * buffer itself, all in one allocation.  The unit lives until db_ref drops to
 * zero; its own msgb may be freed earlier (it is then only marked free). */
struct ust_dunit {
    dblk_t d;
    struct ust_mblk own;
    uint16_t cls;       /* size class, UST_CLS_* */
    uint8_t own_free;   /* own msgb has been freed */
    uint8_t pad;
    uint32_t state;     /* UST_MB_LIVE while db_ref > 0 */
    struct ust_dunit *cache_next; /* link while in a cache */
    _Alignas(16) unsigned char data[]; /* the buffer (absent for esballoc) */
};

static inline struct ust_dunit *ust_du(dblk_t *db)
{
    return UST_CONTAINER(db, struct ust_dunit, d);
}

/* Allocate a message block of the given type with room for size bytes
 * (b_rptr == b_wptr == db_base).  Any thread; never blocks; NULL when out of
 * memory (or when a failure is injected). */
mblk_t *ust_allocb_type(size_t size, unsigned char type);

/* Hand-back slots (mblk.c "Hand-back"): free data units passed from the
 * thread that frees a stream's blocks straight to the thread that allocates
 * the next ones, so that a writer and its reader pass a few blocks round
 * and round instead of the caches' hundreds.  Each slot holds one free
 * unit or NULL; taken and given with one atomic exchange or
 * compare-and-swap, by any thread.  Zeroed memory is an empty set. */
#define UST_SPARE_SLOTS 4
#define UST_SPARE_CLS_MAX UST_CLS_8K /* larger units are freed as usual: a few
                                      * of them idle in slots would be a lot */
struct ust_spare {
    _Alignas(64) struct ust_dunit *_Atomic slot[UST_SPARE_SLOTS];
};
/* ust_allocb_spare -- allocb(size) of an M_DATA block, from a unit of sp when
 * one of size's class is there (units of another class go to this thread's
 * cache).  As allocb: any thread, never blocks, NULL when out of memory. */
mblk_t *ust_allocb_spare(size_t size, struct ust_spare *sp);
/* ust_freeb_spare -- freeb(bp); when bp's data dies with it (bp is its unit's
 * own msgb, db_ref 1, no esballoc free routine, a cached class) the unit goes
 * into a free slot of sp, if any, rather than this thread's cache.  bp's
 * b_cont is not followed (as freeb).  Any thread. */
void ust_freeb_spare(mblk_t *bp, struct ust_spare *sp);
/* ust_spare_drain -- empty sp: its units go to this thread's cache (or to
 * free()).  Any thread. */
void ust_spare_drain(struct ust_spare *sp);

/* Called by freeb when a data unit is released: runs pending bufcalls. */
void ust_bufcall_kick(void);
/* Number of pending bufcalls (cheap check on the free path). */
extern atomic_long ust_bufcall_pending;

/* Size classes of data units (ust_dunit.cls).  A unit of class UST_CLS_128 ..
 * UST_CLS_64K has room for 128 << (cls - UST_CLS_128) data bytes; UST_CLS_ESB
 * has none (esballoc, allocb(0)); UST_CLS_BIG units (> 64 KiB) are sized
 * exactly and never cached. */
enum ust_cls {
    UST_CLS_ESB = 0,
    UST_CLS_128,
    UST_CLS_256,
    UST_CLS_512,
    UST_CLS_1K,
    UST_CLS_2K,
    UST_CLS_4K,
    UST_CLS_8K,
    UST_CLS_16K,
    UST_CLS_32K,
    UST_CLS_64K,
    UST_CLS_BIG,
    UST_NCLS
};

/*
 * ust_datab_alloc -- a data block of size bytes with no msgb of its own.
 *   Context: any thread; never blocks.  db_ref is 1 (the caller's reference),
 *   db_type M_DATA, db_base .. db_lim the buffer.  Used to give an existing
 *   msgb a new buffer (pullupmsg): point b_datap at it, then drop the old data
 *   block with ust_datab_rele.  Counted as a dblk, not an mblk.
 *   Returns NULL when out of memory (or when a failure is injected).
 */
dblk_t *ust_datab_alloc(size_t size);

/*
 * ust_datab_rele -- drop one reference to a data block (what freeb does for
 *   the data half of a msgb).  The last reference releases the buffer: the
 *   esballoc free routine runs, pending bufcalls are kicked.  No lock held.
 */
void ust_datab_rele(dblk_t *db);

/*
 * ust_bufcall_shutdown -- stop and join the bufcall thread (called by
 *   ustreams_shutdown).  Pending bufcalls stay registered; the thread restarts
 *   on the next bufcall or on the next free while any is pending.  Must not be
 *   called from a bufcall callback (it then returns without joining).
 */
void ust_bufcall_shutdown(void);

/* ust_timeout_ns -- timeout(9F) with a delay in nanoseconds instead of
 *   ticks (HZ is 100: a tick is too coarse for the library's own timers, such
 *   as the stream heads' token payer, sd_tokpay.c).  Cancel with untimeout.
 *   Returns the id, or 0 (no memory, no thread). */
toid_t ust_timeout_ns(void (*func)(void *), void *arg, long long ns);
/* Tests: the next n timeouts (any thread) fail as out of memory (0). */
void ust_timeout_fail_next(int n);

/* ust_fail_allocs_after -- as ustreams_fail_allocs(n), but the next skip
 *   block allocations still succeed first (tests of cleanup after a partial
 *   failure, e.g. copymsg failing on its third block). */
void ust_fail_allocs_after(long skip, long n);

/* ust_bufcall_set_retry -- set the retry period of bufcalls in milliseconds
 *   (default 10, the contract of bufcall(9F) here); for tests.  Affects
 *   bufcalls registered afterwards.  Returns the previous value. */
long ust_bufcall_set_retry(long ms);

/* ------------------------------------------------------------------------ */
/* Perimeters (synchronization levels)                                       */
/* ------------------------------------------------------------------------ */
#define UST_PERIM_SHARED 1
#define UST_PERIM_EXCL 2

/* A perimeter admits either any number of shared holders or one exclusive
 * holder.  A thread that cannot enter does not wait: it appends its operation
 * to the FIFO and returns; the thread that leaves the perimeter idle runs the
 * FIFO.  Blocking entry (open, close) waits on the condition variable. */
struct ust_perim {
    ust_lock_t lock;              /* guards every field below */
    ust_cond_t idle;              /* signalled when the perimeter drains */
    int shared;                   /* LOCK: number of shared holders */
    int excl;                     /* LOCK: 1 while an exclusive holder is inside */
    int draining;                 /* LOCK: a thread is running the FIFO */
    struct ust_defer *head, *tail; /* LOCK: deferred operations, FIFO */
    int refs;                     /* LOCK of the registry: queues using it */
};

void ust_perim_init(struct ust_perim *p);
/* Child of fork(): forget the holders and deferred operations of p (they
 * belong to the parent's threads) and re-initialise its lock and condition
 * variable; refs is kept.  Only from a fork child hook. */
void ust_perim_fork_reset(struct ust_perim *p);

/* ------------------------------------------------------------------------ */
/* Queues                                                                    */
/* ------------------------------------------------------------------------ */
struct ust_modent;
struct ust_qpair;

/* Per-queue private state.  The claim count sits on a cache line of its own:
 * every putnext into the queue changes it (on the putting CPU), while the
 * lock is also taken by the other side (a reader's getq), so the two would
 * otherwise pull one line back and forth.  Pairs are allocated aligned. */
#define UST_QCACHELINE 64
struct ust_qpriv {
    ust_lock_t lock;          /* guards the queue's messages, counts, bands, q_flag writes */
    /* Claims: threads inside or about to enter the procedures.  Never reset:
     * it counts the claims on this memory across incarnations of the pair
     * (a stale claimer increments and decrements it again), see putnext.c. */
    _Alignas(UST_QCACHELINE) atomic_int active;
    int held;                 /* procedures off and messages held here in order
                               * (ust_qhold); written under LOCK (atomics), read
                               * without it first; cleared by qprocson and
                               * ust_qpass_held */
    /* Mirrors of what a putter needs of the queue, on this line (which every
     * putter writes anyway) instead of queue_t's first line, which the
     * queue's reader writes at every getq: a writer through modules then
     * never pulls that line from the reading CPU.  Written under LOCK with
     * atomics, only when the queue changes (procedures on/off, QFULL); read
     * without it. */
    int off_m;                /* QPROCSOFF (qprocson/qprocsoff: seq_cst, as the flag) */
    int srv_m;                /* a service procedure, procedures on (flow.c's target) */
    int full_m;               /* QFULL (flow.c) */
    int (*putp_m)(queue_t *, mblk_t *); /* q_qinfo->qi_putp, set while procedures are
                                         * off (ust_qalloc, qprocson) */
    atomic_long nput;         /* put procedure calls */
    /* The queue whose claim covers entering this one by putnext from it
     * (putnext.c, "Covered entries"): the queue just before it in its stream,
     * set by ust_qinsert and ust_qunlink under the stream's plumbing; NULL
     * for a stream head's queues and the pipe's twist.  Atomic (relaxed). */
    queue_t *cover;
    int perim_mode_put;       /* UST_PERIM_SHARED/EXCL for put at the inner perimeter, 0 none */
    int perim_mode_srv;       /* same for the service procedure */
    struct ust_perim *inner;  /* inner perimeter or NULL (D_MP) */
    atomic_long nsrv;         /* service procedure calls */
    struct ust_defer srv_defer; /* node used when the service procedure is deferred */
    int srv_deferred;         /* LOCK(inner): srv_defer is on the inner FIFO */
    int cpu;                  /* atomic: scheduler list q was last put on, or -1 */
    void *runlist;            /* atomic: or the thread's own run list (sched.c), or NULL */
    /* Stream head hook: a head queue is not scheduled; qenable calls this. */
    void (*head_enable)(queue_t *q); /* atomic (relaxed): read by back-enables at any time */
    /* A driver's read queue over a kernel socket: its io_watch.c registration
     * (struct ust_iow), for the stream head's channel readers (sd_chan.c). */
    void *chan; /* atomic: set by ust_iow_add, cleared by ust_iow_del */
};

/* A queue pair: q[0] the read queue, q[1] the write queue.  Pairs come from a
 * type-stable pool: memory of a freed pair stays a pair (its locks stay
 * initialized), which is what lets putnext load q_next and claim the queue it
 * names without a lock (see putnext.c). */
struct ust_qpair {
    queue_t q[2];
    struct ust_qpriv p[2];
    struct ust_modent *ent;       /* registry entry of the module or driver, or NULL */
    struct ust_perim *outer;      /* outer perimeter (D_MTOUTPERIM) or NULL */
    int outer_mode_oc;            /* mode for open/close at the outer perimeter */
    struct ust_perim own_perim[2]; /* storage for per-queue / per-pair inner perimeters */
    void *stream;                 /* owning stream head (src/head), opaque here */
    struct ust_qpair *pool_next;  /* link in the free pool */
    atomic_int in_use;            /* 1 from ust_qalloc to ust_qfree */
    long sched_gen;               /* scheduler bookkeeping */
};

/* Pairs are allocated aligned to two queues (queue.c), the read queue first:
 * the side of a queue is a bit of its address, so that finding its private
 * part reads nothing of the queue (whose first line its reader writes). */
#define UST_QPAIR_ALIGN (2 * sizeof(queue_t))
_Static_assert((sizeof(queue_t) & (sizeof(queue_t) - 1)) == 0, "queue_t size a power of two");
_Static_assert(offsetof(struct ust_qpair, q) == 0, "the queues open their pair");
static inline int ust_isrd(const queue_t *q)
{
    return ((uintptr_t)q & sizeof(queue_t)) == 0;
}

static inline struct ust_qpair *ust_qp(queue_t *q)
{
    return UST_CONTAINER(q - (ust_isrd(q) ? 0 : 1), struct ust_qpair, q[0]);
}

static inline struct ust_qpriv *ust_qpv(queue_t *q)
{
    struct ust_qpair *qp = ust_qp(q);
    return &qp->p[ust_isrd(q) ? 0 : 1];
}

/* Are q's procedures off?  A putter's look, after its claim (seq_cst, as
 * ust_qflags_sync: it and qprocsoff's drain cannot both miss the other). */
static inline int ust_qoff(queue_t *q)
{
    return __atomic_load_n(&ust_qpv(q)->off_m, __ATOMIC_SEQ_CST);
}

/* Count a procedure call: written by the threads running the queue's
 * procedures, read by tools.  A plain (relaxed) update, not an atomic
 * increment: on the put hot path; concurrent D_MP calls may lose a count. */
static inline void ust_stat_inc(atomic_long *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* q_flag is written under the queue lock and read anywhere: always through
 * these relaxed atomics. */
static inline uint_t ust_qflags(const queue_t *q)
{
    return __atomic_load_n(&q->q_flag, __ATOMIC_RELAXED);
}
/* A flag load ordered like a fence (seq_cst): a claimer that took a claim
 * reads QPROCSOFF this way so that it and qprocsoff's drain cannot both miss
 * the other (a plain load on x86). */
static inline uint_t ust_qflags_sync(const queue_t *q)
{
    return __atomic_load_n(&q->q_flag, __ATOMIC_SEQ_CST);
}
/* Written only when they change: getq sets or clears QWANTR at every call,
 * and a store of the same value would still take the line from readers. */
static inline void ust_qflag_set(queue_t *q, uint_t f)
{
    uint_t fl = ust_qflags(q);
    if ((fl & f) != f)
        __atomic_store_n(&q->q_flag, fl | f, __ATOMIC_RELAXED);
}
static inline void ust_qflag_clr(queue_t *q, uint_t f)
{
    uint_t fl = ust_qflags(q);
    if (fl & f)
        __atomic_store_n(&q->q_flag, fl & ~f, __ATOMIC_RELAXED);
}
static inline queue_t *ust_qnext(queue_t *q)
{
    return __atomic_load_n(&q->q_next, __ATOMIC_SEQ_CST);
}

/*
 * ust_qalloc -- allocate a queue pair for a module or driver.
 *   Context: any thread, may allocate.  The pair is initialized from the
 *   streamtab (qinit, module_info water marks and packet sizes), its perimeters
 *   set up from flags (D_*), procedures off (QPROCSOFF) until qprocson.
 *   ent may be NULL (a test head or the stream head); then flags still apply.
 *   Returns the read queue, or NULL (ENOMEM).
 */
queue_t *ust_qalloc(struct streamtab *st, uint_t flags, struct ust_modent *ent);

/* ust_qfree -- flush both queues (FLUSHALL), free the bands, return the pair to
 * the pool.  The pair must be unlinked and its procedures off. */
void ust_qfree(queue_t *rq);

/* Plumbing.  The caller serializes plumbing of one stream (the stream head's
 * plumbing lock).  ust_qinsert links the pair of new_rq directly below the pair
 * of above_rq (above_rq's write side goes to new, new's read side to above);
 * ust_qunlink removes it again and waits until no thread can still be entering
 * its procedures through the old links. */
void ust_qinsert(queue_t *above_rq, queue_t *new_rq);
void ust_qunlink(queue_t *rq);

/*
 * ust_putq_list -- putq each message of the b_next chain mp (oldest first)
 *   under one hold of q's lock; a message its band has no memory for is
 *   freed.  *roomp: q_hiwat less q_count afterwards (0 when over).
 *   Returns 1 if putq would have enabled q: the caller qenables it (or, for
 *   a stream head that wakes its readers itself, need not).
 *   Context: any thread; no queue lock held.
 */
int ust_putq_list(queue_t *q, mblk_t *mp, size_t *roomp);

/* The plumbing generation: bumped (seq_cst) by every change of a link or of
 * procedures on/off (ust_qinsert, ust_qunlink, qprocson, qprocsoff, a pipe's
 * twist), before the plumber waits out the claims.  A path found under
 * generation g is still the path while the generation reads g; a claimer that
 * claims the end of such a path and then still reads g holds a claim the
 * plumber will wait for (both sides sequentially consistent), as putnext's
 * recheck of q_next does for one link.  Stream heads cache the path of a
 * pipe's deposits this way (src/head/sd_arrive.c). */
extern unsigned long ust_plumb_gen;

/* The queue whose put procedure this thread is running, entered with a claim
 * on it or covered (putnext.c, "Covered entries"); NULL outside.  Set by
 * ust_call_put and putnext's covered call around the put procedure. */
extern _Thread_local queue_t *ust_tls_in;
static inline unsigned long ust_plumb_gen_now(void)
{
    return __atomic_load_n(&ust_plumb_gen, __ATOMIC_SEQ_CST);
}
static inline void ust_plumb_changed(void)
{
    __atomic_fetch_add(&ust_plumb_gen, 1, __ATOMIC_SEQ_CST);
}

/* ust_qclaim / ust_qrelease -- claim a queue so that its procedures may run and
 * its q_next stays valid to follow.  ust_qclaim_next(q) claims the queue that
 * q->q_next names (revalidating the link); it returns NULL at the end of the
 * stream.  Queues with QPROCSOFF are passed through. */
void ust_claim_underflow(queue_t *q, int was);
static inline void ust_qrelease(queue_t *q)
{
    int was = atomic_fetch_sub_explicit(&ust_qpv(q)->active, 1, memory_order_release);
#ifdef USTREAMS_DEBUG
    if (was <= 0)
        ust_claim_underflow(q, was); /* a claim released twice: aborts */
#else
    (void)was;
#endif
}
queue_t *ust_qclaim_next(queue_t *q);

/* ust_qclaim_link -- claim the queue q->q_next names, revalidating the link,
 * whether its procedures are on or off; NULL at the end of the stream. */
queue_t *ust_qclaim_link(queue_t *q);

/*
 * ust_pass_on -- deliver mp past q, whose procedures are off and on which the
 *   caller holds a claim: if q holds messages (ust_qhold) mp is queued behind
 *   them, else it goes to the put procedure of the next queue whose
 *   procedures are on (freed at the end of the stream).  No lock held.
 */
void ust_pass_on(queue_t *q, mblk_t *mp);

/*
 * ust_qhold -- q's procedures are off: if q holds messages (ust_qpriv.held),
 *   queue mp behind them (putq order, no scheduling) and return 1; else
 *   return 0 and the caller passes mp on.  Takes q's lock.
 *   A queue holds from qprocsoff (which holds while procedures may still run,
 *   and keeps holding if messages are left) until qprocson or until
 *   ust_qpass_held has passed everything on: so a message passing a queue
 *   whose procedures went off never overtakes one still queued there.
 */
int ust_qhold(queue_t *q, mblk_t *mp);

/*
 * ust_qpass_held -- pass on, in queue order, every message q holds, with
 *   putnext from q, until q is empty; then stop holding.  Messages that pass
 *   q meanwhile queue behind (ust_qhold), so nothing is reordered.
 *   Context: the plumber of q's stream (q linked, procedures off); may call
 *   put procedures below.  Ends once it has caught up with arrivals, which
 *   flow control below q holds back meanwhile (putnext here ignores it).
 */
void ust_qpass_held(queue_t *q);

/* Wait until no claim is held on q (used by qprocsoff and unlink). */
void ust_qdrain_claims(queue_t *q);

/* Call q's put procedure (claim held by the caller, passed on to the call). The
 * claim is released when the procedure has run, which may be later if the
 * perimeter is busy (the call is then deferred).  Without a perimeter it
 * sets ust_tls_in to q while the procedure runs: the claim covers the
 * queues after q (putnext.c, "Covered entries"). */
void ust_call_put(queue_t *q, mblk_t *mp);

/* Call q's service procedure from the scheduler (claim held, released by it). */
void ust_call_srv(queue_t *q);

/* Run a callback inside q's perimeter (qtimeout/qbufcall).  d is an embedded
 * node whose done() is called after cb ran. Claim handling as ust_call_put. */
void ust_call_cb(queue_t *q, struct ust_defer *d);

/* Open and close a module or driver pair: enter its perimeters exclusively
 * (waiting), call qi_qopen/qi_qclose, leave.  Open turns procedures on if the
 * open routine did not; close turns them off if the close routine did not.
 * Return the routine's result (0 or a positive errno). */
int ust_qopen(queue_t *rq, dev_t *devp, int oflag, int sflag, cred_t *crp);
int ust_qclose(queue_t *rq, int oflag, cred_t *crp);

/* Band lookup: the qband of band pri (1..255), creating it (and every lower
 * band) if create is set.  Queue lock held.  NULL when out of memory or absent. */
qband_t *ust_qband(queue_t *q, unsigned char pri, int create);

/* Back-enable: called after q's count (or band's) fell; if the queue (band) was
 * wanted by a writer and has drained to its low-water mark, clear the want and
 * full flags and enable the nearest queue behind with a service procedure.
 * Queue lock NOT held. */
void ust_backenable(queue_t *q, unsigned char band);

/* Evaluate flow control after the count of q (band) changed, under the queue
 * lock: sets/clears QFULL/QB_FULL; returns 1 if a back-enable is due (caller
 * then calls ust_backenable_now after unlocking). */
int ust_flow_update(queue_t *q, qband_t *qb);
/* Flow-control marks (QFULL, QB_FULL) this thread has set, a count (flow.c):
 * a caller compares it around a call to learn whether a put of its own
 * filled a queue. */
extern _Thread_local unsigned ust_tls_fills;
/* After a message was added to q (band qb), under the queue lock: sets
 * QFULL/QB_FULL at the high-water mark.  Never clears a want (QWANTW /
 * QB_WANTW): only a removal does, and back-enables (flow.c). */
void ust_flow_fill(queue_t *q, qband_t *qb);
void ust_backenable_now(queue_t *q);
mblk_t *ust_q_front_hold(queue_t *q);               /* queue.c: lock q, its q_first */
/* q holds a message, read without q's lock (queue.c stores q_first
 * atomically).  Exact for q's only remover -- the stream head's reader under
 * sd_lock, whose "yes" no one else can make stale; a hint for anyone else. */
static inline int ust_q_nonempty_hint(queue_t *q)
{
    return __atomic_load_n(&q->q_first, __ATOMIC_RELAXED) != NULL;
}
void ust_q_front_release(queue_t *q, size_t consumed, int unlink); /* taken in place; unlock */

/* After a change of the flow-control topology around q (putnext.c): enable
 * the nearest queue behind q with a service procedure (a head: wake its
 * writers) whatever the want flags say; QBACK is left alone, as this is not
 * a drain.  No lock held. */
void ust_relink_enable(queue_t *q);

/* ------------------------------------------------------------------------ */
/* Scheduler                                                                 */
/* ------------------------------------------------------------------------ */
/* Schedule q's service procedure (QENAB set by the caller under the queue
 * lock is NOT required: this is the whole of qenable).  Any thread. */
void ust_sched_enable(queue_t *q);
/* Remove q from the run lists and wait while its service procedure runs. */
void ust_sched_cancel(queue_t *q);
/* Start the scheduler threads if they are not running. */
void ust_sched_start(void);
/* A library call begins / ends on this thread (the stream head's entry
 * points; calls nest).  Queues enabled during a call are run on the calling
 * thread when its outermost call ends (ust_call_end, no lock held), as Linux
 * Fast-STREAMS runs them at system-call exit; errno is kept. */
/* ust_thread_create -- pthread_create for the library's own threads: the new
 * thread starts with every signal blocked (thread.c), so that asynchronous
 * signals go to the application's threads.  Returns pthread_create's. */
int ust_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* fdpark.c: move one of the library's own long-lived descriptors to
 * UST_FD_PARK_MIN or above (close-on-exec), out of the small numbers
 * programs and shells dup2 onto; returns the descriptor to use (fd itself
 * when it is already there or cannot move).  Context: any thread. */
#define UST_FD_PARK_MIN 10
int ust_fd_park(int fd);
/* ust_threads_settle -- wait (at most max_ms) until every library thread
 *   created has started running its function (thread.c).  Context: a fork
 *   prepare hook; no lock held. */
void ust_threads_settle(int max_ms);

void ust_call_begin(void);
void ust_call_end(void);
/* ust_sched_in_call -- 1 when the calling thread is inside a library call
 *   (ust_call_begin .. ust_call_end: an application's call, or the epoll
 *   thread's turn), where a service procedure runs on a caller's behalf and
 *   must not sleep on what another process holds; 0 on a scheduler, timer
 *   or bufcall thread.  Any thread, no lock. */
int ust_sched_in_call(void);
/* ust_call_run_now -- inside a library call, run now what it enabled so
 *   far on this thread (as ust_call_end will), e.g. before the call sleeps
 *   for what those procedures may bring.  No lock of the caller held. */
void ust_call_run_now(void);
/* Work done outside the run lists that ustreams_quiesce must wait for (a
 * stream torn down on a thread of its own): begin before it is handed over,
 * end when it is done.  Any thread, no lock. */
void ust_work_begin(void);
void ust_work_end(void);
/* Hand the queues this thread has enabled to the scheduler threads: before
 * a library call sleeps (they must not wait for its wake-up).  Any locks. */
void ust_sched_handoff(void);

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */
/* ------------------------------------------------------------------------ */
enum ust_modkind { UST_MODULE = 1, UST_DRIVER = 2 };
#define UST_DRVNAMESZ 31 /* longest driver name (a module's: FMNAMESZ) */

struct ust_modent {
    struct ust_modent *next;
    int kind;                 /* UST_MODULE or UST_DRIVER */
    char name[UST_DRVNAMESZ + 1]; /* FMNAMESZ at most for a module */
    struct streamtab *str;
    uint_t flag;              /* D_* */
    major_t major;            /* drivers */
    struct fmodsw *fmod;      /* the registration record */
    struct cdevsw *cdev;
    struct ust_perim permod;  /* inner perimeter for D_MTPERMOD */
    struct ust_perim outer;   /* outer perimeter for D_MTOUTPERIM */
    atomic_long refs;         /* queue pairs in use (opens) */
    atomic_long nopen;        /* opens */
    atomic_long nclose;       /* closes */
    int dynamic;              /* loaded from a shared object */
    void *dlhandle;
};

/* Look up by name or major; takes a reference (refs) when ref is set. */
struct ust_modent *ust_reg_find(const char *name, int kind);
struct ust_modent *ust_reg_find_major(major_t major);
void ust_reg_hold(struct ust_modent *e);
void ust_reg_rele(struct ust_modent *e);

/* Iterate over every entry under the registry lock. */
void ust_reg_foreach(void (*fn)(struct ust_modent *e, void *arg), void *arg);

/* Loadable modules (issue 4; src/core/loader.c).  ust_reg_find falls back on
 * ust_loader_try on a miss; ust_reg_find_noload is the lookup without that.
 * ust_loader_try: load the shared object for name on demand and return the
 * entry held, or NULL.  ust_loader_idle: a loaded entry's refs fell to 0
 * (called by ust_reg_rele, no lock held; unloads if loaded on demand).
 * ust_loader_current: the object whose ust_module_init runs on this thread
 * (entries registered meanwhile are marked dynamic with it), or NULL. */
struct ust_modent *ust_reg_find_noload(const char *name, int kind);
struct ust_modent *ust_loader_try(const char *name, int kind);
void ust_loader_idle(const char *name, int kind);
void *ust_loader_current(void);

/* The process-wide perimeter of legacy (non D_MP) modules. */
extern struct ust_perim ust_legacy_perim;

/*
 * ust_init -- library start: install the fork handlers (ust_fork_init), then
 *   run the init hook, which registers the built-in drivers and modules.
 *   Context: any thread; idempotent and thread-safe.  Runs from constructors
 *   at load time and from the registry entry points.  On the thread that is
 *   running the init hook (whose registrations call ust_init again) it
 *   returns without running it.
 */
void ust_init(void);

/*
 * ust_set_init_hook -- install the init hook, a hook of the layer above:
 *   the administration layer installs ust_builtin_register at library start
 *   (src/admin/start.c), as the executive does not know the built-ins.
 *   ust_init runs it on every call, so it must be idempotent and
 *   thread-safe (a pthread_once); it may register drivers and modules.
 *   With none installed (or fn NULL) the registry holds only what the
 *   program registers itself: no built-in driver or module.
 *   Context: any thread (a release store; ust_init loads it with acquire).
 */
typedef void (*ust_init_hook_fn)(void);
void ust_set_init_hook(ust_init_hook_fn fn);

/* ------------------------------------------------------------------------ */
/* strlog (src/core/strlog.c)                                                */
/* ------------------------------------------------------------------------ */
struct log_ctl;

/* Logger classes, a bit each (the error, trace and console logger). */
#define UST_LOGC_ERR  0x1
#define UST_LOGC_TRC  0x2
#define UST_LOGC_CONS 0x4

/*
 * ust_strlog_route_fn -- where strlog(9F) hands each message it formatted.
 *   lc: mid, sid, level, flags and pri filled in; the route fills in ltime,
 *   ttime, seq_no and pid.  text: len bytes (no NUL needed).  *had_console
 *   is set to whether a console logger existed.  far: 0 for a message of
 *   this process (local loggers, then the loggers of other processes for the
 *   classes with none here); else the UST_LOGC_* classes a record received
 *   from another process may reach (lc's times and pid are the sender's, its
 *   seq_no on entry the count of records the sender lost before it, which
 *   the route skips in the class's sequence; it is never passed on again).  Returns 1 if a copy reached a logger, else 0.
 *   Context: any thread, module procedures included: it must never block.
 */
typedef int (*ust_strlog_route_fn)(struct log_ctl *lc, const char *text, size_t len,
                                   int *had_console, int far);

/*
 * ust_strlog_set_route -- install the route of strlog, a hook of the layer
 *   above: the administration layer installs the log driver's ust_log_route
 *   at library start (src/admin/start.c).  With none installed (or fn NULL)
 *   no message reaches a logger: strlog returns 0, and a SL_CONSOLE message
 *   goes to stderr when USTREAMS_VERBOSE is set, as when no console logger
 *   is open.
 *   Context: any thread (a release store; strlog loads it with acquire).
 */
void ust_strlog_set_route(ust_strlog_route_fn fn);

/* ust_log_pri -- severity of a message for log_ctl.pri: LOG_KERN | LOG_CRIT
 * (SL_FATAL), LOG_ERR (SL_ERROR), LOG_WARNING (SL_WARN), LOG_NOTICE
 * (SL_NOTE), LOG_DEBUG (SL_TRACE only) or LOG_INFO.  Any thread. */
int ust_log_pri(unsigned short flags);

/*
 * ust_strlog_far -- deliver a log record received from another process
 *   (src/procs/xlog.c, after validating it) to this process's loggers of the
 *   classes cls (UST_LOGC_*), through the installed route with far = cls.
 *   lc->seq_no on entry: how many records of the class the sender lost
 *   before this one (>= 0); the route skips that many sequence numbers.
 *   Returns what the route returns (0 with none).  Context: any thread.
 */
int ust_strlog_far(struct log_ctl *lc, const char *text, size_t len, int cls);

/*
 * Loggers across processes (docs/ADMIN.md, "Logging"): the hooks of the
 * cross-process layer (src/procs/xlog.c installs them with ust_xlog_set_ops
 * at library start; the log driver calls them).  With none installed every
 * logger is local to its process.
 *   claim(cls)    take the per-user slot of the class (one logger per class
 *                 among every process of the user) and start receiving the
 *                 records other processes send to it.  0, EBUSY (a logger of
 *                 the class exists in another process -- or in this one), or
 *                 another positive errno (the slot could not be made: the
 *                 logger then stays local).  May block briefly (system calls).
 *   release(cls)  give the slot up.  May block briefly.
 *   send(cls, lc, text, len)  pass a message of this process to the logger
 *                 of the class in another process.  Never blocks.  Returns 1
 *                 (sent), 0 (no such logger), -1 (dropped: its queue full).
 *   fork_prepare / fork_parent / fork_child: quiesce and, in the child,
 *                 forget the slots (they stay the parent's).
 *   claim, release and the fork hooks are called with the log driver's slot
 *   lock held (so one at a time); send from any thread, any context.
 */
struct ust_xlog_ops {
    int (*claim)(int cls);
    void (*release)(int cls);
    int (*send)(int cls, const struct log_ctl *lc, const char *text, size_t len);
    void (*fork_prepare)(void);
    void (*fork_parent)(void);
    void (*fork_child)(void);
};
void ust_xlog_set_ops(const struct ust_xlog_ops *ops);
/* The installed ops, or NULL.  Any thread (acquire load). */
const struct ust_xlog_ops *ust_xlog_get_ops(void);

/* Counters of the cross-process log path (ust_log_stats' ls_x* fields). */
enum ust_xlog_counter {
    UST_XLOG_SENT,     /* records sent to another process's logger */
    UST_XLOG_SENDDROP, /* records not sent: the far logger's socket was full */
    UST_XLOG_RECEIVED, /* records received and delivered to the local route */
    UST_XLOG_REJECTED, /* datagrams refused: bad credentials, length or fields */
    UST_XLOG_NCOUNTERS
};
void ust_xlog_count(enum ust_xlog_counter which);
unsigned long ust_xlog_counter(enum ust_xlog_counter which);

#endif /* UST_STRCORE_H */
