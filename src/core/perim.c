/* SPDX-License-Identifier: MIT */
/*
 * perim.c -- synchronization: the perimeters of the SVR4 MP levels.
 *
 * Principles of operation
 *   A module declares its MT level in its registration flags.  The executive
 *   gives each queue up to two perimeters: an inner one (per queue for
 *   D_MTPERQ, per pair for D_MTQPAIR, per module for D_MTPERMOD, one for the
 *   whole process for legacy modules without D_MP) and an outer one spanning
 *   every instance of a D_MTOUTPERIM module.  Put, service and callbacks enter
 *   the outer perimeter shared and the inner exclusive (shared for put with
 *   D_MTPUTSHARED, for service with D_MTSVCSHARED); open and close enter both
 *   exclusive (outer shared without D_MTOCEXCL); qwriter asks for exclusive
 *   access at the level it names.
 *
 *   Nobody waits at a perimeter on the data path.  An operation that cannot
 *   enter is appended to the perimeter's FIFO (the node is embedded in the
 *   message, the queue or the timer, so this never allocates) and the caller
 *   returns.  The thread that leaves the perimeter idle runs the FIFO, in
 *   order.  Hence a put procedure that loops back into its own perimeter
 *   (qreply through an echoing driver) cannot deadlock, and messages entering
 *   one perimeter keep their order.  Only open and close block, on the
 *   perimeter's condition variable, until it is idle.
 *
 *   A deferred operation keeps the claim its caller took on the queue, so
 *   qprocsoff waits for it.  qprocsoff called while the FIFO holds operations
 *   for its queues (typically from close, which holds the perimeter) takes them
 *   out: puts are passed on to the next queue, service requests dropped,
 *   callbacks cancelled.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "strcore.h"

/* Perimeters this thread holds (innermost last), for qwriter and close. */
#define UST_MAXHELD 16
static _Thread_local struct {
    struct ust_perim *p;
    int mode;
} tls_held[UST_MAXHELD];
static _Thread_local int tls_nheld;

struct ust_perim ust_legacy_perim = {
    .lock = UST_LOCK_INIT,
};
static pthread_once_t legacy_once = PTHREAD_ONCE_INIT;

static void legacy_init(void)
{
    ust_cond_init(&ust_legacy_perim.idle);
}

void ust_perim_init(struct ust_perim *p)
{
    memset(p, 0, sizeof(*p));
    ust_lock_init(&p->lock);
    ust_cond_init(&p->idle);
}

void ust_perim_fork_reset(struct ust_perim *p)
{
    int refs = p->refs;
    ust_perim_init(p);
    p->refs = refs;
}

static void held_push(struct ust_perim *p, int mode)
{
    if (tls_nheld < UST_MAXHELD) {
        tls_held[tls_nheld].p = p;
        tls_held[tls_nheld].mode = mode;
    }
    tls_nheld++;
}

static void held_pop(void)
{
    tls_nheld--;
}

/* The mode in which this thread holds p, or 0. */
static int held_mode(const struct ust_perim *p)
{
    int n = tls_nheld < UST_MAXHELD ? tls_nheld : UST_MAXHELD;
    for (int i = n - 1; i >= 0; i--)
        if (tls_held[i].p == p)
            return tls_held[i].mode;
    return 0;
}

/* Perimeter lock held: can an arrival enter now, in FIFO order? */
static bool can_enter(const struct ust_perim *p, int mode)
{
    if (p->head || p->draining || p->excl)
        return false;
    return mode == UST_PERIM_SHARED || p->shared == 0;
}

static void take(struct ust_perim *p, int mode)
{
    if (mode == UST_PERIM_EXCL)
        p->excl = 1;
    else
        p->shared++;
}

static void fifo_append(struct ust_perim *p, struct ust_defer *d)
{
    d->next = NULL;
    if (p->tail)
        p->tail->next = d;
    else
        p->head = d;
    p->tail = d;
}

/* The mode an operation needs at the inner (level 0) or outer (level 1)
 * perimeter of q. */
static int op_mode(queue_t *q, const struct ust_defer *d, int level)
{
    struct ust_qpriv *pv = ust_qpv(q);
    if (level == 1)
        return d->kind == UST_DEFER_WRITER && d->mode == PERIM_OUTER ? UST_PERIM_EXCL
                                                                       : UST_PERIM_SHARED;
    switch (d->kind) {
    case UST_DEFER_PUT:
        return pv->perim_mode_put;
    case UST_DEFER_SRV:
        return pv->perim_mode_srv;
    default:
        return UST_PERIM_EXCL;
    }
}

static void perim_exit(struct ust_perim *p, int mode);
static void run_from(struct ust_defer *d, int level);
static void dispose(struct ust_defer *list, struct ust_perim *from);

/* Run the operation itself (all perimeters held) and account for it. */
static void run_op(struct ust_defer *d)
{
    queue_t *q = d->q;
    struct ust_qpriv *pv = ust_qpv(q);
    int kind = d->kind;
    void (*done)(struct ust_defer *) = d->done;

    switch (kind) {
    case UST_DEFER_PUT:
        ust_stat_inc(&pv->nput);
        q->q_qinfo->qi_putp(q, d->mp);
        break;
    case UST_DEFER_SRV:
        ust_stat_inc(&pv->nsrv);
        q->q_qinfo->qi_srvp(q);
        break;
    case UST_DEFER_WRITER:
        d->wfunc(q, d->mp);
        break;
    case UST_DEFER_CALLBACK:
        d->cb(d->arg);
        break;
    }
    if (done)
        done(d);
}

/* Enter the perimeter at `level` (1 outer, 0 inner) and below, then run d.
 * If a perimeter is busy, d is deferred there and this returns. */
static void run_from(struct ust_defer *d, int level)
{
    queue_t *q = d->q;
    struct ust_qpair *qp = ust_qp(q);
    struct ust_perim *outer = qp->outer;
    struct ust_perim *inner = ust_qpv(q)->inner;
    int omode = 0, imode = 0;

    if (level == 1 && outer) {
        omode = op_mode(q, d, 1);
        ust_lock(&outer->lock);
        if (!can_enter(outer, omode)) {
            d->level = 1;
            if (ust_qflags(q) & QPROCSOFF) { /* qprocsoff took the FIFO already */
                ust_unlock(&outer->lock);
                d->next = NULL;
                dispose(d, outer);
                return;
            }
            fifo_append(outer, d);
            ust_unlock(&outer->lock);
            return;
        }
        take(outer, omode);
        ust_unlock(&outer->lock);
    } else if (level == 0 && outer) {
        omode = op_mode(q, d, 1); /* entered by the drainer that handed it on */
    }
    bool outer_excl_writer = omode == UST_PERIM_EXCL;

    if (inner && !outer_excl_writer) {
        imode = op_mode(q, d, 0);
        ust_lock(&inner->lock);
        if (!can_enter(inner, imode)) {
            d->level = 0;
            if (ust_qflags(q) & QPROCSOFF) {
                ust_unlock(&inner->lock);
                d->next = NULL;
                dispose(d, inner);
                return;
            }
            fifo_append(inner, d);
            ust_unlock(&inner->lock);
            return; /* the outer hold (if any) travels with d */
        }
        take(inner, imode);
        ust_unlock(&inner->lock);
    }

    if (outer)
        held_push(outer, omode);
    if (imode)
        held_push(inner, imode);
    run_op(d); /* d may be gone after this (done callback, freed message) */
    if (imode) {
        held_pop();
        perim_exit(inner, imode);
    }
    if (outer) {
        held_pop();
        perim_exit(outer, omode);
    }
    ust_qrelease(q);
}

/* Leave p; if that leaves it idle with deferred work, run the FIFO. */
static void perim_exit(struct ust_perim *p, int mode)
{
    ust_lock(&p->lock);
    if (mode == UST_PERIM_EXCL)
        p->excl = 0;
    else
        p->shared--;
    if (p->draining || p->excl || p->shared) {
        ust_unlock(&p->lock);
        return;
    }
    if (!p->head) {
        ust_cond_broadcast(&p->idle);
        ust_unlock(&p->lock);
        return;
    }
    p->draining = 1;
    while (p->head && !p->excl && p->shared == 0) {
        struct ust_defer *d = p->head;
        p->head = d->next;
        if (!p->head)
            p->tail = NULL;
        int level = d->level;
        int m = op_mode(d->q, d, level);
        take(p, m);
        ust_unlock(&p->lock);

        queue_t *q = d->q;
        struct ust_perim *outer = ust_qp(q)->outer;
        if (level == 1) {
            /* p is d's outer perimeter, now held on its behalf: run_from
             * enters (or defers at) the inner one and, once d has run, leaves
             * p (a nested exit, which sees us draining) and drops the claim. */
            run_from(d, 0);
        } else {
            /* p is d's inner perimeter; d may also hold its outer one shared. */
            if (outer)
                held_push(outer, UST_PERIM_SHARED);
            held_push(p, m);
            run_op(d); /* d may be gone after this */
            held_pop();
            ust_lock(&p->lock);
            if (m == UST_PERIM_EXCL)
                p->excl = 0;
            else
                p->shared--;
            ust_unlock(&p->lock);
            if (outer) {
                held_pop();
                perim_exit(outer, UST_PERIM_SHARED);
            }
            ust_qrelease(q);
        }
        ust_lock(&p->lock);
    }
    p->draining = 0;
    if (!p->head && !p->excl && p->shared == 0)
        ust_cond_broadcast(&p->idle);
    ust_unlock(&p->lock);
}

void ust_call_put(queue_t *q, mblk_t *mp)
{
    struct ust_qpriv *pv = ust_qpv(q);
    if (!pv->inner && !ust_qp(q)->outer) {
        ust_stat_inc(&pv->nput);
        queue_t *was = ust_tls_in; /* our claim on q covers what q puts next to */
        ust_tls_in = q;
        /* The mirror of q_qinfo->qi_putp: queue_t's line is its reader's. */
        __atomic_load_n(&pv->putp_m, __ATOMIC_RELAXED)(q, mp);
        ust_tls_in = was;
        ust_qrelease(q);
        return;
    }
    struct ust_defer *d = &ust_mb(mp)->defer;
    d->kind = UST_DEFER_PUT;
    d->q = q;
    d->mp = mp;
    d->done = NULL;
    d->mode = 0;
    run_from(d, 1);
}

void ust_call_srv(queue_t *q)
{
    struct ust_qpriv *pv = ust_qpv(q);
    pv->srv_defer.q = q; /* ust_srv_done finds the queue through the node */
    if (!pv->inner && !ust_qp(q)->outer) {
        ust_stat_inc(&pv->nsrv);
        q->q_qinfo->qi_srvp(q);
        if (pv->srv_defer.done)
            pv->srv_defer.done(&pv->srv_defer);
        ust_qrelease(q);
        return;
    }
    struct ust_defer *d = &pv->srv_defer;
    d->kind = UST_DEFER_SRV;
    d->q = q;
    d->mp = NULL;
    d->mode = 0;
    run_from(d, 1);
}

void ust_call_cb(queue_t *q, struct ust_defer *d)
{
    d->kind = UST_DEFER_CALLBACK;
    d->q = q;
    d->mode = 0;
    if (!ust_qpv(q)->inner && !ust_qp(q)->outer) {
        run_op(d);
        ust_qrelease(q);
        return;
    }
    run_from(d, 1);
}

void qwriter(queue_t *q, mblk_t *mp, void (*func)(queue_t *, mblk_t *), int perimeter)
{
    if (!q || !mp || !func)
        return;
    struct ust_qpair *qp = ust_qp(q);
    struct ust_perim *inner = ust_qpv(q)->inner;
    int outer_req = perimeter == PERIM_OUTER && qp->outer;

    /* Already exclusive where asked: run now (the caller is inside q). */
    if ((outer_req && held_mode(qp->outer) == UST_PERIM_EXCL) ||
        (!outer_req && (!inner || held_mode(inner) == UST_PERIM_EXCL))) {
        if (!outer_req || !inner || held_mode(inner) == UST_PERIM_EXCL || !qp->outer) {
            func(q, mp);
            return;
        }
    }
    if (!outer_req && !inner) {
        func(q, mp);
        return;
    }
    struct ust_defer *d = &ust_mb(mp)->defer;
    d->kind = UST_DEFER_WRITER;
    d->q = q;
    d->mp = mp;
    d->wfunc = func;
    d->done = NULL;
    d->mode = outer_req ? PERIM_OUTER : PERIM_INNER;
    atomic_fetch_add(&ust_qpv(q)->active, 1);
    /* The caller holds the perimeter: the operation is deferred to its FIFO
     * and runs when the caller leaves. */
    run_from(d, 1);
}

/* ---- blocking entry for open and close ---- */

static void perim_enter_wait(struct ust_perim *p, int mode)
{
    ust_lock(&p->lock);
    while (!can_enter(p, mode))
        ust_cond_wait(&p->idle, &p->lock);
    take(p, mode);
    ust_unlock(&p->lock);
    held_push(p, mode);
}

static void perim_leave(struct ust_perim *p, int mode)
{
    held_pop();
    perim_exit(p, mode);
}

/* Enter q's perimeters exclusively for open/close; returns a cookie for leave. */
struct oc_hold {
    struct ust_perim *outer, *inner;
    int omode, imode;
};

static struct oc_hold oc_enter(queue_t *rq)
{
    struct ust_qpair *qp = ust_qp(rq);
    struct oc_hold h = {0};
    pthread_once(&legacy_once, legacy_init);
    if (qp->outer) {
        h.outer = qp->outer;
        h.omode = qp->outer_mode_oc ? qp->outer_mode_oc : UST_PERIM_SHARED;
        perim_enter_wait(h.outer, h.omode);
    }
    /* Both inner perimeters (read and write) when they differ. */
    struct ust_perim *ri = qp->p[0].inner;
    if (ri && !(h.omode == UST_PERIM_EXCL)) {
        h.inner = ri;
        h.imode = UST_PERIM_EXCL;
        perim_enter_wait(ri, UST_PERIM_EXCL);
    }
    return h;
}

static void oc_leave(struct oc_hold h)
{
    if (h.inner)
        perim_leave(h.inner, h.imode);
    if (h.outer)
        perim_leave(h.outer, h.omode);
}

/* For D_MTPERQ the write queue has its own inner perimeter; open/close hold
 * only the read queue's (as Solaris does) and rely on procedures being off. */

int ust_qopen(queue_t *rq, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    if (!rq || !rq->q_qinfo || !rq->q_qinfo->qi_qopen)
        return ENXIO;
    struct oc_hold h = oc_enter(rq);
    int err = rq->q_qinfo->qi_qopen(rq, devp, oflag, sflag, crp);
    oc_leave(h);
    if (err == 0 && (ust_qflags(rq) & QPROCSOFF))
        qprocson(rq);
    struct ust_modent *e = ust_qp(rq)->ent;
    if (err == 0 && e)
        atomic_fetch_add(&e->nopen, 1);
    return err;
}

int ust_qclose(queue_t *rq, int oflag, cred_t *crp)
{
    if (!rq)
        return EINVAL;
    int err = 0;
    struct oc_hold h = oc_enter(rq);
    if (rq->q_qinfo && rq->q_qinfo->qi_qclose)
        err = rq->q_qinfo->qi_qclose(rq, oflag, crp);
    if (!(ust_qflags(rq) & QPROCSOFF))
        qprocsoff(rq);
    oc_leave(h);
    struct ust_modent *e = ust_qp(rq)->ent;
    if (e)
        atomic_fetch_add(&e->nclose, 1);
    return err;
}

/* ---- qprocsoff support: take a pair's operations out of a FIFO ---- */

static struct ust_defer *fifo_extract(struct ust_perim *p, struct ust_qpair *qp)
{
    struct ust_defer *out = NULL, **tail = &out;
    ust_lock(&p->lock);
    struct ust_defer **pp = &p->head, *prev = NULL;
    while (*pp) {
        struct ust_defer *d = *pp;
        if (ust_qp(d->q) == qp) {
            *pp = d->next;
            d->next = NULL;
            *tail = d;
            tail = &d->next;
            continue;
        }
        prev = d;
        pp = &d->next;
    }
    p->tail = prev;
    ust_unlock(&p->lock);
    return out;
}

/* Forward or cancel operations taken out of a FIFO.  Each holds a claim on its
 * queue (and possibly a shared hold of the outer perimeter, when it waited at
 * the inner one). */
static void dispose(struct ust_defer *list, struct ust_perim *from)
{
    while (list) {
        struct ust_defer *d = list;
        list = d->next;
        queue_t *q = d->q;
        struct ust_qpair *qp = ust_qp(q);
        bool holds_outer = qp->outer && from != qp->outer && d->level == 0;
        if (d->kind == UST_DEFER_PUT || d->kind == UST_DEFER_WRITER) {
            mblk_t *mp = d->mp;
            if (d->kind == UST_DEFER_PUT) {
                ust_pass_on(q, mp); /* behind what q holds, if anything */
            } else {
                freemsg(mp);
            }
        } else if (d->done) {
            d->done(d); /* service request or callback: dropped */
        }
        if (holds_outer)
            perim_exit(qp->outer, UST_PERIM_SHARED);
        ust_qrelease(q);
    }
}

void ust_perim_flush_pair(queue_t *q)
{
    struct ust_qpair *qp = ust_qp(q);
    struct ust_perim *seen[3] = {qp->outer, qp->p[0].inner, qp->p[1].inner};
    for (int i = 0; i < 3; i++) {
        if (!seen[i] || (i == 2 && seen[2] == seen[1]))
            continue;
        struct ust_defer *l = fifo_extract(seen[i], qp);
        dispose(l, seen[i]);
    }
}

/* Remove d from whichever FIFO of q's perimeters holds it; 1 if removed (the
 * caller then owns the claim and any outer hold it carried). */
int ust_perim_cancel(queue_t *q, struct ust_defer *d)
{
    struct ust_qpair *qp = ust_qp(q);
    struct ust_perim *ps[3] = {qp->outer, qp->p[0].inner, qp->p[1].inner};
    for (int i = 0; i < 3; i++) {
        struct ust_perim *p = ps[i];
        if (!p)
            continue;
        ust_lock(&p->lock);
        struct ust_defer **pp = &p->head, *prev = NULL;
        for (; *pp; prev = *pp, pp = &(*pp)->next) {
            if (*pp == d) {
                *pp = d->next;
                if (p->tail == d)
                    p->tail = prev;
                ust_unlock(&p->lock);
                if (qp->outer && p != qp->outer && d->level == 0)
                    perim_exit(qp->outer, UST_PERIM_SHARED);
                ust_qrelease(q);
                return 1;
            }
        }
        ust_unlock(&p->lock);
    }
    return 0;
}

/* Choose the perimeters of a new pair from its D_* flags. */
void ust_perim_setup(struct ust_qpair *qp, uint_t flags, struct ust_modent *ent)
{
    struct ust_perim *ri = NULL, *wi = NULL;
    int putmode = (flags & D_MTPUTSHARED) ? UST_PERIM_SHARED : UST_PERIM_EXCL;
    int srvmode = (flags & D_MTSVCSHARED) ? UST_PERIM_SHARED : UST_PERIM_EXCL;

    pthread_once(&legacy_once, legacy_init);
    qp->outer = NULL;
    qp->outer_mode_oc = 0;
    if (!(flags & D_MP)) {
        ri = wi = &ust_legacy_perim;
        putmode = srvmode = UST_PERIM_EXCL;
    } else if (flags & D_MTPERQ) {
        ust_perim_init(&qp->own_perim[0]);
        ust_perim_init(&qp->own_perim[1]);
        ri = &qp->own_perim[0];
        wi = &qp->own_perim[1];
    } else if (flags & D_MTQPAIR) {
        ust_perim_init(&qp->own_perim[0]);
        ri = wi = &qp->own_perim[0];
    } else if ((flags & D_MTPERMOD) && ent) {
        ri = wi = &ent->permod;
    }
    if ((flags & D_MP) && (flags & D_MTOUTPERIM) && ent) {
        qp->outer = &ent->outer;
        qp->outer_mode_oc = (flags & D_MTOCEXCL) ? UST_PERIM_EXCL : UST_PERIM_SHARED;
    }
    qp->p[0].inner = ri;
    qp->p[1].inner = wi;
    qp->p[0].perim_mode_put = qp->p[1].perim_mode_put = ri ? putmode : 0;
    qp->p[0].perim_mode_srv = qp->p[1].perim_mode_srv = ri ? srvmode : 0;
}
