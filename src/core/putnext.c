/* SPDX-License-Identifier: MIT */
/*
 * putnext.c -- passing messages along a stream, and changing its plumbing.
 *
 * Principles of operation
 *   putnext(q, mp) is the hot path: it must not take a lock.  It loads
 *   q->q_next, claims that queue (an atomic increment of its `active` count),
 *   then checks that q->q_next still names it; if not, the plumbing changed
 *   under it and it retries.  Plumbing (ust_qinsert, ust_qunlink, qprocsoff)
 *   rewrites q_next and then waits for the claims of the queues taken out to
 *   drain.  Because both sides use sequentially consistent operations, either
 *   the claimer sees the new q_next, or the plumber sees the claim and waits.
 *   A claimer may briefly increment the count of a pair that was just freed,
 *   or freed and reused: pairs are type-stable (queue.c) and the count is
 *   never reset on reuse, so the stale claimer's increment and decrement
 *   cancel out on the same counter whatever incarnation it belongs to; a
 *   plumber may only wait a little longer for it.  (Resetting the count at
 *   reuse would drop such an increment and let its decrement drive the new
 *   incarnation's count to -1, so that qprocsoff waited forever.)  The ABA
 *   case, the same pair popped and pushed again at the same place while a
 *   claimer was between its load and its check, is harmless too: the check
 *   then succeeds against the new incarnation, which the claim does count.
 *   Debug builds abort when a count would go negative.
 *
 *   What a putter needs of the queue it enters -- its side, whether its
 *   procedures are on, its put procedure, and for flow control whether it
 *   has a service procedure and is full -- it reads from the queue's claim
 *   line (struct ust_qpriv's mirrors, strcore.h), never from queue_t, whose
 *   first line the queue's reader writes at every getq: a writer through
 *   pushed modules into a stream head then takes no line from the reading
 *   CPU but the arrivals' (docs/STREAMHEAD.md "Through modules without
 *   queues").  The mirrors change with the queue, under its lock: off_m with
 *   QPROCSOFF (seq_cst, for the claim protocol above), putp_m and srv_m from
 *   q_qinfo at qprocson (q_qinfo changes only while procedures are off),
 *   full_m with QFULL (flow.c).
 *
 *   A queue whose procedures are off (QPROCSOFF: before qprocson, after
 *   qprocsoff) is passed through: the message goes to the queue after it --
 *   unless the queue still holds messages (ust_qhold, queue.c): then the
 *   message queues behind them, so that it cannot overtake them, and the
 *   plumber passes them all on in order (ust_qpass_held).
 *
 *   Every change of the flow-control topology (a pair linked or unlinked,
 *   procedures turned on) is followed by back-enables from the queues
 *   changed, both ways: a back-enable that raced with the change may have
 *   walked a half-rewritten chain (backq found nothing) or woken a queue that
 *   no longer governs the writer (a service queue now sits between), and the
 *   writer's want flag was cleared, so the writer would sleep for good with
 *   every queue empty.  A spurious back-enable only makes a writer or a
 *   service procedure look again.

 *   Covered entries.  A claim per queue entered costs two locked
 *   instructions per hop (the claim and its release); a put-only module
 *   (nullmod) costs little else.  So a thread that runs q's put procedure
 *   with a claim on q (ust_call_put) enters the queue after q without a
 *   claim of its own when that queue's `cover` is q -- the queue before
 *   it in its stream, kept by ust_qinsert and ust_qunlink -- its
 *   procedures are on and it has no perimeter; inside it, the same holds
 *   for the queue after it, and so on down the stream.  Every wait for
 *   q's claims (ust_qdrain_claims: qprocsoff, ust_qunlink, a pipe's
 *   split) waits out those of every queue on its cover chain too, so
 *   that a thread inside q by a covered entry, which holds a claim on a
 *   queue up that chain, is waited for: both sides sequentially
 *   consistent, either the thread sees QPROCSOFF (and passes q through)
 *   or qprocsoff sees its claim.  While a thread is inside, no queue of
 *   its chain is unlinked (that needs qprocsoff of it first, which waits
 *   for the thread), so the covers it followed are the ones qprocsoff
 *   walks.  Covers never cross a pipe's twist and never lead into a
 *   stream head's queues; anything else (a queue passed through, a
 *   perimeter, a driver calling putnext on its own queue, a service
 *   procedure) takes a claim as before.
 *
 *   Passed through without claims.  A pipe's own pairs are passed through
 *   for good, so a message from a pushed module to the far stream head
 *   crossed two queues whose claims (two locked instructions each) bought
 *   nothing but the right to read their q_next.  putnext instead walks the
 *   queues after q whose procedures are off to the first one that runs,
 *   claims that one alone and calls it if the plumbing generation still
 *   reads what it read before the walk (strcore.h): every change of a link
 *   or of procedures on or off bumps it before the plumber waits out the
 *   claims, so either the walk's answer is still the stream's and the
 *   plumber waits for this claim, or the claim is dropped and the claimed
 *   way (ust_pass_on) taken.  A queue on the way that holds messages
 *   (ust_qhold) sends the message the claimed way too, to queue behind them.
 *
 *   The caller of putnext must keep q itself alive: it runs inside q's
 *   procedures, or holds a claim on q (the stream head on its own queues), or
 *   otherwise knows q outlives the call (a driver on its own queues).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/cmn_err.h>
#include <time.h>

#include "strcore.h"

void ust_perim_flush_pair(queue_t *q);

unsigned long ust_plumb_gen; /* atomic (strcore.h) */

_Thread_local queue_t *ust_tls_in; /* strcore.h, "Covered entries" above */

/* Bound of a cover chain walked by qprocsoff (a stream's modules and its
 * driver: UST_NSTRPUSH and a few). */
#define COVER_MAX 128

static queue_t *cover_of(queue_t *q)
{
    return __atomic_load_n(&ust_qpv(q)->cover, __ATOMIC_RELAXED);
}

static void cover_set(queue_t *q, queue_t *c)
{
    __atomic_store_n(&ust_qpv(q)->cover, c, __ATOMIC_RELAXED);
}

static void drain_one(queue_t *q);

/* Wait out the claims of the queues on q's cover chain (see "Covered
 * entries"). */
static void drain_cover_chain(queue_t *q)
{
    queue_t *c = cover_of(q);
    for (int i = 0; c != NULL && i < COVER_MAX; i++) {
        drain_one(c);
        c = cover_of(c);
    }
}

queue_t *ust_qclaim_link(queue_t *q)
{
    for (;;) {
        queue_t *nq = ust_qnext(q);
        if (!nq)
            return NULL;
        atomic_fetch_add(&ust_qpv(nq)->active, 1);
        if (ust_qnext(q) == nq)
            return nq;
        ust_qrelease(nq);
    }
}

queue_t *ust_qclaim_next(queue_t *q)
{
    queue_t *nq = ust_qclaim_link(q);
    while (nq && ust_qoff(nq)) {
        queue_t *nn = ust_qclaim_link(nq);
        ust_qrelease(nq);
        nq = nn;
    }
    return nq;
}

void ust_claim_underflow(queue_t *q, int was)
{
    cmn_err(CE_PANIC, "ustreams: claim count of queue %p released below zero (was %d)",
            (void *)q, was);
    abort();
}

void ust_pass_on(queue_t *q, mblk_t *mp)
{
    queue_t *cur = q, *claimed = NULL; /* q: the caller's claim; claimed: ours */
    for (;;) {
        if (ust_qhold(cur, mp))
            break;
        queue_t *nq = ust_qclaim_link(cur);
        if (claimed)
            ust_qrelease(claimed);
        claimed = nq;
        if (!nq) {
            freemsg(mp); /* end of the stream: nowhere to go */
            return;
        }
        if (!ust_qoff(nq)) {
            ust_call_put(nq, mp); /* our claim goes with the call */
            return;
        }
        cur = nq;
    }
    if (claimed)
        ust_qrelease(claimed);
}


/* Every waiter for q's claims (qprocsoff, ust_qunlink, a pipe's split)
 * waits for the threads inside q by a covered entry as well: they hold a
 * claim on a queue of q's cover chain ("Covered entries"). */
void ust_qdrain_claims(queue_t *q)
{
    drain_one(q);
    drain_cover_chain(q);
}

static void drain_one(queue_t *q)
{
    struct ust_qpriv *pv = ust_qpv(q);
    for (int spins = 0;; spins++) {
        int n = atomic_load(&pv->active);
#ifdef USTREAMS_DEBUG
        if (n < 0)
            ust_claim_underflow(q, n);
#endif
        if (n == 0)
            return;
        if (spins < 100) {
            sched_yield();
        } else {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
}

/*
 * covered_next -- the queue after q if this thread may enter it covered
 *   (see "Covered entries"): it runs q's put procedure (entered with a claim
 *   or covered), the next queue's cover is q, its procedures are on and it
 *   has no perimeter.  Else NULL.  Context: inside q's put procedure.
 */
static queue_t *covered_next(queue_t *q)
{
    if (ust_tls_in != q)
        return NULL;
    queue_t *nq = ust_qnext(q);
    if (nq == NULL || cover_of(nq) != q || ust_qoff(nq))
        return NULL;
    struct ust_qpriv *pv = ust_qpv(nq);
    if (pv->inner || ust_qp(nq)->outer)
        return NULL;
    return nq;
}

/* Queues passed through without claims at most (a pipe's twist crosses two;
 * a longer run of queues procedures-off takes the claimed way). */
#define PASS_HOPS 4

/*
 * put_through -- deliver mp past the queues after q whose procedures are off
 *   with one claim, on the first queue that runs (see "Passed through without
 *   claims").  Returns 1 if delivered, 0 if nothing was done: the queue after
 *   q runs (the claimed way costs the same), the end of the stream, a queue
 *   holding messages, more than PASS_HOPS, or the plumbing changed.
 *   Context: as putnext (q kept alive by the caller).
 */
static int put_through(queue_t *q, mblk_t *mp)
{
    unsigned long g = ust_plumb_gen_now(); /* before any link is read */
    queue_t *t = ust_qnext(q);
    if (t == NULL || !ust_qoff(t))
        return 0;
    for (int hops = 0;; hops++) {
        /* held set before QPROCSOFF (qprocsoff): seen, as ust_qhold's callers see it */
        if (hops == PASS_HOPS || __atomic_load_n(&ust_qpv(t)->held, __ATOMIC_RELAXED))
            return 0;
        t = ust_qnext(t);
        if (t == NULL)
            return 0;
        if (!ust_qoff(t))
            break;
    }
    atomic_fetch_add(&ust_qpv(t)->active, 1);
    if (ust_qoff(t) || ust_plumb_gen_now() != g) {
        ust_qrelease(t);
        return 0;
    }
    ust_call_put(t, mp); /* our claim goes with the call */
    return 1;
}

int putnext(queue_t *q, mblk_t *mp)
{
    if (!q || !mp)
        return 0;
    queue_t *cq = covered_next(q);
    if (cq) {
        struct ust_qpriv *pv = ust_qpv(cq);
        ust_stat_inc(&pv->nput);
        ust_tls_in = cq;
        __atomic_load_n(&pv->putp_m, __ATOMIC_RELAXED)(cq, mp);
        ust_tls_in = q;
        return 1;
    }
    if (put_through(q, mp))
        return 1;
    queue_t *nq = ust_qclaim_link(q);
    if (!nq) {
        freemsg(mp); /* end of the stream: nowhere to go */
        return 0;
    }
    if (ust_qoff(nq)) {
        ust_pass_on(nq, mp);
        ust_qrelease(nq);
        return 1;
    }
    ust_call_put(nq, mp);
    return 1;
}

void put(queue_t *q, mblk_t *mp)
{
    if (!q || !mp)
        return;
    atomic_fetch_add(&ust_qpv(q)->active, 1);
    if (ust_qoff(q)) {
        ust_pass_on(q, mp);
        ust_qrelease(q);
        return;
    }
    ust_call_put(q, mp);
}

void qreply(queue_t *q, mblk_t *mp)
{
    if (!q || !mp) {
        freemsg(mp);
        return;
    }
    putnext(OTHERQ(q), mp);
}

/* A control message of `type` carrying n parameter bytes; NULL for data
 * types (which putctl may not send) or when out of memory. */
static mblk_t *ctlmsg(int type, int n, int p1, int p2)
{
    if (type == M_DATA || type == M_PROTO || type == M_PCPROTO || type < 0 || type > 0xff)
        return NULL;
    mblk_t *mp = ust_allocb_type((size_t)n, (unsigned char)type);
    if (!mp)
        return NULL;
    if (n >= 1)
        *mp->b_wptr++ = (unsigned char)p1;
    if (n >= 2)
        *mp->b_wptr++ = (unsigned char)p2;
    return mp;
}

static int putctl_n(queue_t *q, int type, int n, int p1, int p2, int next)
{
    if (!q)
        return 0;
    mblk_t *mp = ctlmsg(type, n, p1, p2);
    if (!mp)
        return 0;
    if (next)
        putnext(q, mp);
    else
        put(q, mp);
    return 1;
}

int putctl(queue_t *q, int type)
{
    return putctl_n(q, type, 0, 0, 0, 0);
}
int putctl1(queue_t *q, int type, int param)
{
    return putctl_n(q, type, 1, param, 0, 0);
}
int putctl2(queue_t *q, int type, int p1, int p2)
{
    return putctl_n(q, type, 2, p1, p2, 0);
}
int putnextctl(queue_t *q, int type)
{
    return putctl_n(q, type, 0, 0, 0, 1);
}
int putnextctl1(queue_t *q, int type, int param)
{
    return putctl_n(q, type, 1, param, 0, 1);
}
int putnextctl2(queue_t *q, int type, int p1, int p2)
{
    return putctl_n(q, type, 2, p1, p2, 1);
}

/* ---- procedures on and off ---- */

/* After a change of the flow-control topology around q: enable the nearest
 * service queue (or head) behind q, whatever q's want flags say (see the
 * principles above).  No lock held. */
static void relink_backenable(queue_t *q)
{
    ust_relink_enable(q);
}

void qprocson(queue_t *q)
{
    if (!q)
        return;
    queue_t *pair[2] = {RD(q), WR(q)};
    for (int i = 0; i < 2; i++) {
        struct ust_qpriv *pv = ust_qpv(pair[i]);
        ust_lock(&pv->lock);
        ust_qflag_clr(pair[i], QPROCSOFF);
        ust_qflag_set(pair[i], QWANTR);
        /* The mirrors (strcore.h), from q_qinfo as it is now (a multiplexer's
         * link changes it while procedures are off); off_m last, so that a
         * putter that sees it clear sees the rest. */
        struct qinit *qi = pair[i]->q_qinfo;
        __atomic_store_n(&pv->putp_m, qi->qi_putp, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->srv_m, qi->qi_srvp != NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->off_m, 0, __ATOMIC_SEQ_CST);
        /* what it holds is its service procedure's again */
        __atomic_store_n(&pv->held, 0, __ATOMIC_RELAXED);
        int pending = pair[i]->q_first != NULL;
        ust_unlock(&pv->lock);
        if (pending)
            qenable(pair[i]);
    }
    ust_plumb_changed(); /* cached paths passed through the pair */
    /* A service queue came into the flow: writers behind it that wait on a
     * queue beyond it would be back-enabled only as far as this pair. */
    for (int i = 0; i < 2; i++)
        relink_backenable(pair[i]);
}

void qprocsoff(queue_t *q)
{
    if (!q)
        return;
    queue_t *pair[2] = {RD(q), WR(q)};
    for (int i = 0; i < 2; i++) {
        struct ust_qpriv *pv = ust_qpv(pair[i]);
        ust_lock(&pv->lock);
        /* Hold while a procedure may still run: one may have a message in
         * hand, or queue one, that what passes from now on must not overtake.
         * Set before QPROCSOFF: ust_qhold reads it without the lock.  The
         * seq_cst read-modify-write publishes held to whoever reads
         * QPROCSOFF or off_m seq_cst (ust_qoff), and orders the flag before the
         * claim counts ust_qdrain_claims reads (no fences: TSan models
         * orderings on accesses, not fences). */
        __atomic_store_n(&pv->held, 1, __ATOMIC_RELAXED);
        __atomic_fetch_or(&pair[i]->q_flag, QPROCSOFF, __ATOMIC_SEQ_CST);
        __atomic_store_n(&pv->srv_m, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->off_m, 1, __ATOMIC_SEQ_CST); /* what putters look at */
        ust_unlock(&pv->lock);
    }
    ust_plumb_changed(); /* before the claims are waited out (strcore.h) */
    for (int i = 0; i < 2; i++)
        ust_sched_cancel(pair[i]);
    /* Operations waiting at the perimeters for these queues (the caller may
     * hold the perimeter, in close) are passed on or dropped. */
    ust_perim_flush_pair(pair[0]);
    for (int i = 0; i < 2; i++)
        ust_qdrain_claims(pair[i]); /* and those inside by a covered entry */
    /* An enable that began before QPROCSOFF was set has finished now (it
     * holds a claim, sched.c): take the queue off the run list it put it on. */
    for (int i = 0; i < 2; i++)
        ust_sched_cancel(pair[i]);
    /* No procedure runs any more: an empty queue has nothing to protect. */
    for (int i = 0; i < 2; i++) {
        struct ust_qpriv *pv = ust_qpv(pair[i]);
        ust_lock(&pv->lock);
        if (pair[i]->q_first == NULL)
            __atomic_store_n(&pv->held, 0, __ATOMIC_RELAXED);
        ust_unlock(&pv->lock);
    }
}

/* ---- plumbing ---- */

void ust_qinsert(queue_t *above_rq, queue_t *new_rq)
{
    queue_t *aw = WR(above_rq);
    queue_t *nr = RD(new_rq), *nw = WR(new_rq);
    queue_t *below_w = ust_qnext(aw);
    queue_t *below_r = below_w ? OTHERQ(below_w) : NULL;
    if (below_r && ust_qnext(below_r) != RD(above_rq))
        below_r = NULL; /* not a pair pointing back up (should not happen) */
    __atomic_store_n(&nw->q_next, below_w, __ATOMIC_SEQ_CST);
    __atomic_store_n(&nr->q_next, RD(above_rq), __ATOMIC_SEQ_CST);
    if (below_r)
        __atomic_store_n(&below_r->q_next, nr, __ATOMIC_SEQ_CST);
    __atomic_store_n(&aw->q_next, nw, __ATOMIC_SEQ_CST);
    /* Covers (see "Covered entries"): each queue is covered by the one
     * before it, never a head's queue.  The new pair's procedures are off,
     * so nothing enters it covered before qprocson. */
    cover_set(nw, aw);
    cover_set(nr, below_r);
    if (below_w && !(ust_qflags(below_w) & QHEAD))
        cover_set(below_w, nw);
    if (!(ust_qflags(RD(above_rq)) & QHEAD))
        cover_set(RD(above_rq), nr);
    ust_plumb_changed();
    relink_backenable(nw);              /* writers above */
    relink_backenable(RD(above_rq));    /* senders below (upstream) */
}

void ust_qunlink(queue_t *rq)
{
    queue_t *r = RD(rq), *w = WR(rq);
    queue_t *above_r = ust_qnext(r);
    queue_t *below_w = ust_qnext(w);
    queue_t *aw = above_r ? OTHERQ(above_r) : NULL;
    queue_t *below_r = below_w ? OTHERQ(below_w) : NULL;
    if (aw && ust_qnext(aw) == w)
        __atomic_store_n(&aw->q_next, below_w, __ATOMIC_SEQ_CST);
    if (below_r && ust_qnext(below_r) == r)
        __atomic_store_n(&below_r->q_next, above_r, __ATOMIC_SEQ_CST);
    /* The queues after the pair are covered by the ones before it now.  The
     * pair's procedures are off (qprocsoff waited out whoever was inside by
     * a covered entry), so nobody is inside it. */
    if (below_w && cover_of(below_w) == w)
        cover_set(below_w, cover_of(w));
    if (above_r && cover_of(above_r) == r)
        cover_set(above_r, cover_of(r));
    ust_plumb_changed();
    /* Threads that loaded the old links either revalidate and retry, or hold
     * a claim on r/w that we wait out; passing through still works meanwhile
     * because r and w keep their own q_next until then. */
    ust_qdrain_claims(r);
    ust_qdrain_claims(w);
    __atomic_store_n(&r->q_next, NULL, __ATOMIC_SEQ_CST);
    __atomic_store_n(&w->q_next, NULL, __ATOMIC_SEQ_CST);
    cover_set(r, NULL);
    cover_set(w, NULL);
    if (aw && ust_qnext(aw) == below_w)
        relink_backenable(below_w);     /* writers above */
    if (below_r && ust_qnext(below_r) == above_r)
        relink_backenable(above_r);     /* senders below (upstream) */
}
