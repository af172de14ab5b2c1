/* SPDX-License-Identifier: MIT */
/*
 * flow.c -- flow control with hysteresis, and the queue fields.
 *
 * Principles of operation
 *   A queue (or a band of it) becomes full when its count reaches the
 *   high-water mark and stays full until the count drains to the low-water
 *   mark.  canput/bcanput look at the nearest queue, from the one given
 *   onwards, that has a service procedure; finding it full they record that a
 *   writer waits (QWANTW / QB_WANTW).  When the count of a wanted queue falls
 *   to the low-water mark, the want is cleared and the nearest queue behind
 *   with a service procedure is enabled (back-enabling).  So a writer is woken
 *   once per drain from high to low water, not once per message: this is the
 *   batching that the performance of STREAMS rests on.  High-priority
 *   messages are counted but never checked against the marks.
 *
 *   A want is cleared only where a back-enable follows it (a removal,
 *   strqset), never by an addition: a queue marked wanted below its
 *   high-water mark (a read side that stops taking messages marks it so,
 *   sd_xpipe_read.c) keeps the mark until its reader removes a message, so
 *   a put in between cannot swallow the back-enable (ust_flow_fill).
 *
 *   Flags and counts are changed under the queue lock.  The fast path of
 *   canput reads QFULL without the lock, from its mirror full_m (and the
 *   flow target from srv_m) on the queue's claim line (strcore.h, putnext.c):
 *   a writer that races with the queue filling may put one more message,
 *   never fewer.
 */
#include <errno.h>
#include <sys/types.h>

#include "strcore.h"

int ust_flow_update(queue_t *q, qband_t *qb)
{
    UST_ASSERT_HELD(&ust_qpv(q)->lock);
    if (qb) {
        if (qb->qb_count > 0 && qb->qb_count >= qb->qb_hiwat) {
            if (!(qb->qb_flag & QB_FULL))
                ust_tls_fills++;
            qb->qb_flag |= QB_FULL;
        } else if (qb->qb_count <= qb->qb_lowat || qb->qb_count == 0) {
            qb->qb_flag &= ~QB_FULL;
            if (qb->qb_flag & QB_WANTW) {
                qb->qb_flag &= ~QB_WANTW;
                return 1;
            }
        }
        return 0;
    }
    uint_t fl = ust_qflags(q);
    if (q->q_count > 0 && q->q_count >= q->q_hiwat) {
        if (!(fl & QFULL)) {
            ust_qflag_set(q, QFULL);
            __atomic_store_n(&ust_qpv(q)->full_m, 1, __ATOMIC_RELAXED);
            ust_tls_fills++;
        }
    } else if (q->q_count <= q->q_lowat || q->q_count == 0) {
        if (fl & (QFULL | QWANTW))
            ust_qflag_clr(q, QFULL | QWANTW);
        if (fl & QFULL)
            __atomic_store_n(&ust_qpv(q)->full_m, 0, __ATOMIC_RELAXED);
        if (fl & QWANTW)
            return 1;
    }
    return 0;
}

void ust_flow_fill(queue_t *q, qband_t *qb)
{
    UST_ASSERT_HELD(&ust_qpv(q)->lock);
    if (qb) {
        if (qb->qb_count > 0 && qb->qb_count >= qb->qb_hiwat && !(qb->qb_flag & QB_FULL)) {
            qb->qb_flag |= QB_FULL;
            ust_tls_fills++;
        }
    } else if (q->q_count > 0 && q->q_count >= q->q_hiwat && !(ust_qflags(q) & QFULL)) {
        ust_qflag_set(q, QFULL);
        __atomic_store_n(&ust_qpv(q)->full_m, 1, __ATOMIC_RELAXED);
        ust_tls_fills++;
    }
}

/* Does q have a service procedure?  q_qinfo is read atomically: walking
 * q_next without claims may meet a pair being reused (queue.c). */
static int has_srv(queue_t *q)
{
    struct qinit *qi = __atomic_load_n(&q->q_qinfo, __ATOMIC_RELAXED);
    return qi && qi->qi_srvp;
}

/* The nearest queue, from q onwards, whose service procedure can run (the one
 * whose fullness governs a writer into q). */
static queue_t *flow_target(queue_t *q)
{
    while (q) {
        /* has_srv and procedures on, from the mirror on the claim line
         * (strcore.h): the queue's own first line is its reader's. */
        if (__atomic_load_n(&ust_qpv(q)->srv_m, __ATOMIC_RELAXED))
            return q;
        queue_t *n = ust_qnext(q);
        if (!n)
            return q;
        q = n;
    }
    return NULL;
}

/* The nearest queue behind q whose service procedure can run, or NULL. */
static queue_t *back_target(queue_t *q)
{
    queue_t *b = backq(q);
    while (b && !(has_srv(b) && !(ust_qflags(b) & QPROCSOFF)))
        b = backq(b);
    return b;
}

void ust_relink_enable(queue_t *q)
{
    queue_t *b = q ? back_target(q) : NULL;
    if (b)
        qenable(b);
}

void ust_backenable_now(queue_t *q)
{
    queue_t *b = back_target(q);
    if (b) {
        struct ust_qpriv *pv = ust_qpv(b);
        ust_lock(&pv->lock);
        ust_qflag_set(b, QBACK);
        ust_unlock(&pv->lock);
        qenable(b);
    }
}

void ust_backenable(queue_t *q, unsigned char band)
{
    (void)band;
    ust_backenable_now(q);
}

_Thread_local unsigned ust_tls_fills; /* strcore.h */

static int target_canput(queue_t *q, unsigned char pri);

int bcanput(queue_t *q, unsigned char pri)
{
    return target_canput(flow_target(q), pri);
}

int canput(queue_t *q)
{
    return bcanput(q, 0);
}

/* This thread's last flow targets: the queue a writer into q->q_next is
 * governed by, found under plumbing generation gen.  Per thread, so no
 * entry is ever read half written; two entries, for a writer's head write
 * queue and one more (a service procedure's queue). */
#define FLOW_CACHE 2
static _Thread_local struct {
    queue_t *from;
    queue_t *to;
    unsigned long gen;
} tls_flow[FLOW_CACHE];
static _Thread_local unsigned tls_flow_next;

/*
 * flow_target_next -- flow_target(q->q_next), or NULL at the end of the
 *   stream, remembered per thread for the plumbing generation it was found
 *   under (strcore.h).  Every change that could move the target -- a link,
 *   procedures on or off (srv_m), a multiplexer's q_qinfo (changed only
 *   while procedures are off, then qprocson) -- bumps the generation, and a
 *   pair is freed only after it was unlinked (a bump), so an entry whose
 *   generation still reads is the walk's answer now.  A walk during which
 *   the generation moved is used once and not remembered.  As the walk
 *   itself (no claims), a target found just before a change may be looked
 *   at once more; the relink back-enables that follow every change
 *   (putnext.c) wake a writer that marked the wrong queue wanted.
 *   Saves the walk through put-only modules at every write (twice: the
 *   head's check before it sends and its POLLOUT check after).
 *   Context: any thread, no lock.
 */
static queue_t *flow_target_next(queue_t *q)
{
    unsigned long g = ust_plumb_gen_now();
    for (unsigned i = 0; i < FLOW_CACHE; i++)
        if (tls_flow[i].from == q && tls_flow[i].gen == g)
            return tls_flow[i].to;
    queue_t *n = ust_qnext(q);
    queue_t *t = n ? flow_target(n) : NULL;
    if (ust_plumb_gen_now() == g) {
        unsigned i = tls_flow_next++ % FLOW_CACHE;
        tls_flow[i].from = q;
        tls_flow[i].to = t;
        tls_flow[i].gen = g;
    }
    return t;
}

/* bcanput on a flow target t already found (bcanput's body). */
static int target_canput(queue_t *q, unsigned char pri)
{
    if (!q)
        return 1;
    if (pri == 0) {
        struct ust_qpriv *pv = ust_qpv(q);
        if (!__atomic_load_n(&pv->full_m, __ATOMIC_RELAXED)) /* QFULL's mirror */
            return 1;
        ust_lock(&pv->lock);
        int full = (ust_qflags(q) & QFULL) != 0;
        if (full)
            ust_qflag_set(q, QWANTW);
        ust_unlock(&pv->lock);
        return !full;
    }
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    qband_t *qb = ust_qband(q, pri, 0);
    int full = qb && (qb->qb_flag & QB_FULL);
    if (full)
        qb->qb_flag |= QB_WANTW;
    ust_unlock(&pv->lock);
    return !full;
}

int canputnext(queue_t *q)
{
    return q ? target_canput(flow_target_next(q), 0) : 1;
}

int bcanputnext(queue_t *q, unsigned char pri)
{
    return q ? target_canput(flow_target_next(q), pri) : 1;
}

/* ---- strqget / strqset ---- */

int strqget(queue_t *q, qfields_t what, unsigned char pri, void *valp)
{
    if (!q || !valp)
        return EINVAL;
    if ((unsigned)what >= QBAD || what == QSTRUIOT)
        return EINVAL;
    if (pri && (what == QMAXPSZ || what == QMINPSZ))
        return EINVAL;
    struct ust_qpriv *pv = ust_qpv(q);
    int err = 0;
    ust_lock(&pv->lock);
    qband_t *qb = NULL;
    if (pri) {
        qb = ust_qband(q, pri, 1);
        if (!qb) {
            ust_unlock(&pv->lock);
            return EAGAIN;
        }
    }
    switch (what) {
    case QHIWAT:
        *(size_t *)valp = qb ? qb->qb_hiwat : q->q_hiwat;
        break;
    case QLOWAT:
        *(size_t *)valp = qb ? qb->qb_lowat : q->q_lowat;
        break;
    case QMAXPSZ:
        *(ssize_t *)valp = q->q_maxpsz;
        break;
    case QMINPSZ:
        *(ssize_t *)valp = q->q_minpsz;
        break;
    case QCOUNT:
        *(size_t *)valp = qb ? qb->qb_count : q->q_count;
        break;
    case QFIRST:
        *(mblk_t **)valp = qb ? qb->qb_first : q->q_first;
        break;
    case QLAST:
        *(mblk_t **)valp = qb ? qb->qb_last : q->q_last;
        break;
    case QFLAG:
        *(uint_t *)valp = qb ? qb->qb_flag : ust_qflags(q);
        break;
    default:
        err = EINVAL;
    }
    ust_unlock(&pv->lock);
    return err;
}

int strqset(queue_t *q, qfields_t what, unsigned char pri, intptr_t val)
{
    if (!q)
        return EINVAL;
    switch (what) {
    case QHIWAT:
    case QLOWAT:
        if (val < 0)
            return EINVAL;
        break;
    case QMAXPSZ:
    case QMINPSZ:
        if (pri)
            return EINVAL;
        if (val < 0 && val != INFPSZ)
            return EINVAL;
        break;
    case QCOUNT:
    case QFIRST:
    case QLAST:
    case QFLAG:
        return EPERM;
    default:
        return EINVAL;
    }
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    qband_t *qb = NULL;
    if (pri) {
        qb = ust_qband(q, pri, 1);
        if (!qb) {
            ust_unlock(&pv->lock);
            return EAGAIN;
        }
    }
    switch (what) {
    case QHIWAT:
        if (qb)
            qb->qb_hiwat = (size_t)val;
        else
            q->q_hiwat = (size_t)val;
        break;
    case QLOWAT:
        if (qb)
            qb->qb_lowat = (size_t)val;
        else
            q->q_lowat = (size_t)val;
        break;
    case QMAXPSZ:
        q->q_maxpsz = (ssize_t)val;
        break;
    case QMINPSZ:
        q->q_minpsz = (ssize_t)val;
        break;
    default:
        break;
    }
    /* New marks may make the queue full, or drained. */
    int back = ust_flow_update(q, qb);
    ust_unlock(&pv->lock);
    if (back)
        ust_backenable_now(q);
    return 0;
}
