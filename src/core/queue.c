/* SPDX-License-Identifier: MIT */
/*
 * queue.c -- queue pairs and the messages on a queue.
 *
 * Principles of operation
 *   A queue holds one doubly linked list of messages (b_next/b_prev) in
 *   delivery order: high-priority messages first, then band 255 down to band 1,
 *   then band 0; FIFO within each class.  q_first/q_last span the whole list;
 *   each qband's qb_first/qb_last span its band inside it.  q_count counts the
 *   bytes of band 0 (and of high-priority messages, which are never flow
 *   controlled), qb_count those of a band.  Everything about the list, the
 *   counts, the bands and q_flag is guarded by the queue's lock
 *   (ust_qpriv.lock); q_flag is also read without it, through atomics.
 *
 *   Queue pairs come from a type-stable pool: a freed pair goes to a free list
 *   and is reused only as a pair, never returned to malloc while the library
 *   runs.  putnext relies on this to claim the queue named by q_next without a
 *   lock (putnext.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strcore.h"

void ust_srv_done(struct ust_defer *d);
void ust_perim_setup(struct ust_qpair *qp, uint_t flags, struct ust_modent *ent);

/* Pool of free pairs.  pool_lock guards pool_free; leaf lock. */
static ust_lock_t pool_lock = UST_LOCK_INIT;
static struct ust_qpair *pool_free;

static size_t msg_bytes(const mblk_t *mp)
{
    size_t n = 0;
    for (; mp; mp = mp->b_cont)
        if (mp->b_wptr > mp->b_rptr)
            n += (size_t)(mp->b_wptr - mp->b_rptr);
    return n;
}

static struct ust_qpair *pair_get(void)
{
    ust_lock(&pool_lock);
    struct ust_qpair *qp = pool_free;
    if (qp)
        pool_free = qp->pool_next;
    ust_unlock(&pool_lock);
    if (qp)
        return qp;
    /* struct ust_qpriv's layout wants lines, ust_isrd two queues */
    size_t size = (sizeof(*qp) + UST_QPAIR_ALIGN - 1) / UST_QPAIR_ALIGN * UST_QPAIR_ALIGN;
    qp = aligned_alloc(UST_QPAIR_ALIGN, size);
    if (qp)
        memset(qp, 0, size);
    if (!qp)
        return NULL;
    for (int i = 0; i < 2; i++)
        ust_lock_init(&qp->p[i].lock);
    return qp;
}

queue_t *ust_qalloc(struct streamtab *st, uint_t flags, struct ust_modent *ent)
{
    if (!st || !st->st_rdinit || !st->st_wrinit)
        return NULL;
    struct ust_qpair *qp = pair_get();
    if (!qp)
        return NULL;
    struct qinit *qi[2] = {st->st_rdinit, st->st_wrinit};
    for (int i = 0; i < 2; i++) {
        queue_t *q = &qp->q[i];
        struct ust_qpriv *pv = &qp->p[i];
        ust_lock(&pv->lock);
        /* Never zero q_flag wholesale: QREADR must stay readable by a racing
         * putnext that still holds a stale pointer to this pair. */
        q->q_first = q->q_last = NULL;
        __atomic_store_n(&q->q_next, NULL, __ATOMIC_SEQ_CST);
        q->q_link = NULL;
        q->q_ptr = NULL;
        q->q_count = 0;
        q->q_bandp = NULL;
        q->q_nband = 0;
        __atomic_store_n(&q->q_qinfo, qi[i], __ATOMIC_RELAXED); /* read by flow.c unclaimed */
        struct module_info *mi = qi[i]->qi_minfo;
        if (mi) {
            q->q_minpsz = mi->mi_minpsz;
            q->q_maxpsz = mi->mi_maxpsz;
            q->q_hiwat = mi->mi_hiwat;
            q->q_lowat = mi->mi_lowat;
        } else {
            q->q_maxpsz = INFPSZ;
        }
        __atomic_store_n(&q->q_flag, QUSE | QWANTR | QPROCSOFF | (i == 0 ? QREADR : 0),
                         __ATOMIC_RELAXED);
        /* pv->active is not reset: stale claimers of the previous incarnation
         * may still be about to decrement it (putnext.c). */
        __atomic_store_n(&pv->held, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->cover, NULL, __ATOMIC_RELAXED); /* linked by ust_qinsert */
        /* The mirrors (strcore.h): procedures off, as q_flag says. */
        __atomic_store_n(&pv->putp_m, qi[i]->qi_putp, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->srv_m, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->full_m, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->off_m, 1, __ATOMIC_SEQ_CST);
        atomic_store(&pv->nput, 0);
        atomic_store(&pv->nsrv, 0);
        memset(&pv->srv_defer, 0, sizeof(pv->srv_defer));
        pv->srv_defer.done = ust_srv_done;
        pv->srv_defer.q = q;
        pv->srv_deferred = 0;
        __atomic_store_n(&pv->cpu, -1, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->runlist, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&pv->head_enable, NULL, __ATOMIC_RELAXED);
        ust_unlock(&pv->lock);
    }
    qp->ent = ent;
    qp->stream = NULL;
    qp->sched_gen = 0;
    ust_perim_setup(qp, flags, ent);
    uint_t mt = (flags & D_MP) ? QMTSAFE : 0;
    if (flags & D_MTQPAIR)
        mt |= QPAIR;
    if (flags & D_MTPERQ)
        mt |= QPERQ;
    if (flags & D_MTPERMOD)
        mt |= QPERMOD;
    if (flags & D_MTOUTPERIM)
        mt |= QMTOUTPERIM;
    for (int i = 0; i < 2; i++) {
        ust_lock(&qp->p[i].lock);
        ust_qflag_set(&qp->q[i], mt);
        ust_unlock(&qp->p[i].lock);
    }
    atomic_store(&qp->in_use, 1);
    if (ent)
        ust_reg_hold(ent);
    return &qp->q[0];
}

void ust_qfree(queue_t *rq)
{
    if (!rq)
        return;
    struct ust_qpair *qp = ust_qp(rq);
    for (int i = 0; i < 2; i++) {
        queue_t *q = &qp->q[i];
        flushq(q, FLUSHALL);
        ust_lock(&qp->p[i].lock);
        qband_t *qb = q->q_bandp;
        q->q_bandp = NULL;
        q->q_nband = 0;
        __atomic_store_n(&q->q_next, NULL, __ATOMIC_SEQ_CST);
        ust_qflag_clr(q, QUSE);
        ust_unlock(&qp->p[i].lock);
        while (qb) {
            qband_t *n = qb->qb_next;
            free(qb);
            qb = n;
        }
    }
    struct ust_modent *ent = qp->ent;
    qp->ent = NULL;
    atomic_store(&qp->in_use, 0);
    if (ent)
        ust_reg_rele(ent);
    ust_lock(&pool_lock);
    qp->pool_next = pool_free;
    pool_free = qp;
    ust_unlock(&pool_lock);
}

/* ---- the pair ---- */

queue_t *RD(queue_t *q)
{
    return ust_isrd(q) ? q : q - 1;
}

queue_t *WR(queue_t *q)
{
    return ust_isrd(q) ? q + 1 : q;
}

queue_t *OTHERQ(queue_t *q)
{
    return ust_isrd(q) ? q + 1 : q - 1;
}

/* Is the next queue of the same kind (read/write) -- i.e. not the twist of a
 * pipe or loop? */
int SAMESTR(queue_t *q)
{
    if (!q)
        return 0;
    queue_t *n = ust_qnext(q);
    return n && ((ust_qflags(n) & QREADR) == (ust_qflags(q) & QREADR));
}

/* The queue whose q_next is q: within a stream, and across the twist of a pipe,
 * it is OTHERQ(OTHERQ(q)->q_next). */
queue_t *backq(queue_t *q)
{
    if (!q)
        return NULL;
    queue_t *n = ust_qnext(OTHERQ(q));
    if (!n)
        return NULL;
    queue_t *b = OTHERQ(n);
    return ust_qnext(b) == q ? b : NULL;
}

/* ---- bands ---- */

qband_t *ust_qband(queue_t *q, unsigned char pri, int create)
{
    UST_ASSERT_HELD(&ust_qpv(q)->lock);
    if (pri == 0)
        return NULL;
    if (pri > q->q_nband) {
        if (!create)
            return NULL;
        qband_t **link = &q->q_bandp;
        while (*link)
            link = &(*link)->qb_next;
        for (int b = q->q_nband + 1; b <= pri; b++) {
            qband_t *qb = calloc(1, sizeof(*qb));
            if (!qb)
                return NULL;
            qb->qb_hiwat = q->q_hiwat;
            qb->qb_lowat = q->q_lowat;
            *link = qb;
            link = &qb->qb_next;
            q->q_nband = (unsigned char)b;
        }
    }
    qband_t *qb = q->q_bandp;
    for (int b = 1; b < pri; b++)
        qb = qb->qb_next;
    return qb;
}

/* ---- list primitives (queue lock held) ---- */

static void list_insert_before(queue_t *q, mblk_t *emp, mblk_t *mp)
{
    if (!emp) { /* at the tail */
        mp->b_next = NULL;
        mp->b_prev = q->q_last;
        if (q->q_last)
            q->q_last->b_next = mp;
        else
            __atomic_store_n(&q->q_first, mp, __ATOMIC_RELAXED); /* ust_q_nonempty_hint */
        q->q_last = mp;
        return;
    }
    mp->b_next = emp;
    mp->b_prev = emp->b_prev;
    if (emp->b_prev)
        emp->b_prev->b_next = mp;
    else
        __atomic_store_n(&q->q_first, mp, __ATOMIC_RELAXED);
    emp->b_prev = mp;
}

static void list_remove(queue_t *q, mblk_t *mp)
{
    if (mp->b_prev)
        mp->b_prev->b_next = mp->b_next;
    else
        __atomic_store_n(&q->q_first, mp->b_next, __ATOMIC_RELAXED);
    if (mp->b_next)
        mp->b_next->b_prev = mp->b_prev;
    else
        q->q_last = mp->b_prev;
    mp->b_next = mp->b_prev = NULL;
}

/* Effective band of a message on a queue: high-priority messages are band 0. */
static unsigned char msg_band(const mblk_t *mp)
{
    return mp->b_datap->db_type >= QPCTL ? 0 : mp->b_band;
}

/* The first message that comes after every message of class (pc, band); the
 * new message goes before it (NULL: at the tail). */
static mblk_t *after_class(queue_t *q, int pc, unsigned char band)
{
    mblk_t *m = q->q_first;
    while (m && m->b_datap->db_type >= QPCTL)
        m = m->b_next;
    if (pc)
        return m;
    if (band == 0)
        return NULL;
    while (m && m->b_datap->db_type < QPCTL && m->b_band >= band)
        m = m->b_next;
    return m;
}

/* The first message of class (pc, band) or the first after it. */
static mblk_t *start_of_class(queue_t *q, int pc, unsigned char band)
{
    if (pc)
        return q->q_first;
    mblk_t *m = q->q_first;
    while (m && (m->b_datap->db_type >= QPCTL || m->b_band > band))
        m = m->b_next;
    return m;
}

/* Account for mp having left q (its band qb or band 0): counts and full
 * flags.  Returns 1 if a back-enable is due. */
static int account_out(queue_t *q, mblk_t *mp, qband_t *qb)
{
    size_t n = msg_bytes(mp);
    if (qb)
        qb->qb_count -= n < qb->qb_count ? n : qb->qb_count;
    else
        q->q_count -= n < q->q_count ? n : q->q_count;
    return ust_flow_update(q, qb);
}

/* Enqueue mp in its place; mode 0 putq (tail of class), 1 putbq (head of
 * class).  Returns 0 if a band could not be allocated, else 1; *enable tells
 * whether to schedule the queue. */
static int enqueue(queue_t *q, mblk_t *mp, int back, int *enable)
{
    int pc = mp->b_datap->db_type >= QPCTL;
    unsigned char band = pc ? 0 : mp->b_band;
    qband_t *qb = NULL;
    if (band) {
        qb = ust_qband(q, band, 1);
        if (!qb)
            return 0;
    }
    mblk_t *emp;
    if (!back) {
        if (!pc && band == 0)
            emp = NULL;
        else if (qb && qb->qb_last)
            emp = qb->qb_last->b_next;
        else
            emp = after_class(q, pc, band);
    } else {
        if (qb && qb->qb_first)
            emp = qb->qb_first;
        else
            emp = start_of_class(q, pc, band);
    }
    list_insert_before(q, emp, mp);
    if (qb) {
        qb->qb_count += msg_bytes(mp);
        if (back) {
            qb->qb_first = mp;
            if (!qb->qb_last)
                qb->qb_last = mp;
        } else {
            if (!qb->qb_first)
                qb->qb_first = mp;
            qb->qb_last = mp;
        }
    } else {
        q->q_count += msg_bytes(mp);
    }
    ust_flow_fill(q, qb); /* a want stays for the next removal */
    uint_t fl = ust_qflags(q);
    if (fl & QPROCSOFF) {
        /* Procedures off (a procedure still finishing, or ust_qhold): what
         * passes from now on queues behind this message. */
        __atomic_store_n(&ust_qpv(q)->held, 1, __ATOMIC_RELAXED);
        *enable = 0;
        return 1;
    }
    int canenable = !(fl & QNOENB);
    if (back)
        *enable = pc || (canenable && (fl & QWANTR));
    else
        *enable = pc || (canenable && ((fl & QWANTR) || band));
    if (*enable)
        ust_qflag_clr(q, QWANTR);
    return 1;
}

/* Unlink mp from q, fixing its band's pointers and counts; returns 1 if a
 * back-enable is due. */
static int dequeue(queue_t *q, mblk_t *mp)
{
    unsigned char band = msg_band(mp);
    qband_t *qb = band ? ust_qband(q, band, 0) : NULL;
    if (qb) {
        mblk_t *prev = mp->b_prev, *next = mp->b_next;
        if (qb->qb_first == mp && qb->qb_last == mp)
            qb->qb_first = qb->qb_last = NULL;
        else if (qb->qb_first == mp)
            qb->qb_first = next;
        else if (qb->qb_last == mp)
            qb->qb_last = prev;
    }
    list_remove(q, mp);
    return account_out(q, mp, qb);
}

int putq(queue_t *q, mblk_t *mp)
{
    if (!q || !mp)
        return 0;
    struct ust_qpriv *pv = ust_qpv(q);
    int enable = 0;
    ust_lock(&pv->lock);
    int ok = enqueue(q, mp, 0, &enable);
    ust_unlock(&pv->lock);
    if (enable)
        qenable(q);
    return ok;
}

int ust_putq_list(queue_t *q, mblk_t *mp, size_t *roomp)
{
    struct ust_qpriv *pv = ust_qpv(q);
    mblk_t *failed = NULL;
    int enable = 0;
    ust_lock(&pv->lock);
    while (mp) {
        mblk_t *next = mp->b_next;
        mp->b_next = NULL;
        int e = 0;
        if (enqueue(q, mp, 0, &e)) {
            enable |= e;
        } else { /* no memory for its band: freed below, without the lock */
            mp->b_next = failed;
            failed = mp;
        }
        mp = next;
    }
    size_t count = q->q_count, hiwat = q->q_hiwat;
    ust_unlock(&pv->lock);
    while (failed) {
        mblk_t *next = failed->b_next;
        failed->b_next = NULL;
        freemsg(failed);
        failed = next;
    }
    *roomp = count < hiwat ? hiwat - count : 0;
    return enable;
}

int putbq(queue_t *q, mblk_t *mp)
{
    if (!q || !mp)
        return 0;
    struct ust_qpriv *pv = ust_qpv(q);
    int enable = 0;
    ust_lock(&pv->lock);
    int ok = enqueue(q, mp, 1, &enable);
    ust_unlock(&pv->lock);
    if (enable)
        qenable(q);
    return ok;
}

int ust_qhold(queue_t *q, mblk_t *mp)
{
    struct ust_qpriv *pv = ust_qpv(q);
    int enable = 0, held = 0;
    /* The usual case, a queue passed through for good (a pipe's own pair)
     * or a pair procedures-off holding nothing: no lock.  held is set before
     * QPROCSOFF (qprocsoff), and callers read QPROCSOFF with ust_qflags_sync
     * (an acquire): whoever saw QPROCSOFF sees that held was set. */
    if (!__atomic_load_n(&pv->held, __ATOMIC_RELAXED))
        return 0;
    ust_lock(&pv->lock);
    if (pv->held && (ust_qflags(q) & QPROCSOFF))
        held = enqueue(q, mp, 0, &enable); /* 0: no band memory, pass it on */
    ust_unlock(&pv->lock);
    return held;
}

void ust_qpass_held(queue_t *q)
{
    struct ust_qpriv *pv = ust_qpv(q);
    for (;;) {
        ust_lock(&pv->lock);
        mblk_t *mp = q->q_first;
        if (mp == NULL) {
            /* caught up: from now on messages pass straight on */
            __atomic_store_n(&pv->held, 0, __ATOMIC_RELAXED);
            ust_unlock(&pv->lock);
            return;
        }
        int back = dequeue(q, mp);
        ust_unlock(&pv->lock);
        if (back)
            ust_backenable_now(q);
        putnext(q, mp); /* holding goes on meanwhile: nothing overtakes mp */
    }
}

mblk_t *getq(queue_t *q)
{
    if (!q)
        return NULL;
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    mblk_t *mp = q->q_first;
    while (mp && (mp->b_flag & MSGNOGET))
        mp = mp->b_next;
    int back = 0;
    if (!mp) {
        ust_qflag_set(q, QWANTR);
    } else {
        ust_qflag_clr(q, QWANTR);
        back = dequeue(q, mp);
    }
    ust_unlock(&pv->lock);
    if (back)
        ust_backenable_now(q);
    return mp;
}

/*
 * ust_q_front_hold / ust_q_front_release -- a reader that consumes bytes of
 *   the first message in place (the stream head's byte-stream read): hold
 *   takes q's lock and returns q_first (NULL: empty); the caller may advance
 *   the b_rptr of a normal band-0 message's first block, never emptying the
 *   message; release then takes the bytes consumed off q_count (QWANTR is
 *   cleared as getq would, when any were), unlocks and back-enables if the
 *   queue fell to its low-water mark.  With `unlink` the first message
 *   (untouched) leaves the queue instead, as getq takes it; the caller frees
 *   it.  One lock hold instead of getq's and putbq's two.
 */
mblk_t *ust_q_front_hold(queue_t *q)
{
    ust_lock(&ust_qpv(q)->lock);
    return q->q_first;
}

void ust_q_front_release(queue_t *q, size_t consumed, int unlink)
{
    struct ust_qpriv *pv = ust_qpv(q);
    int back = 0;
    UST_ASSERT_HELD(&pv->lock);
    if (unlink && q->q_first) {
        ust_qflag_clr(q, QWANTR);
        back = dequeue(q, q->q_first);
    } else if (consumed > 0) {
        ust_qflag_clr(q, QWANTR);
        q->q_count -= consumed < q->q_count ? consumed : q->q_count;
        back = ust_flow_update(q, NULL);
    }
    ust_unlock(&pv->lock);
    if (back)
        ust_backenable_now(q);
}

void rmvq(queue_t *q, mblk_t *mp)
{
    if (!q || !mp)
        return;
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    int back = dequeue(q, mp);
    ust_unlock(&pv->lock);
    if (back)
        ust_backenable_now(q);
}

int insq(queue_t *q, mblk_t *emp, mblk_t *mp)
{
    if (!q || !mp)
        return 0;
    struct ust_qpriv *pv = ust_qpv(q);
    int pc = mp->b_datap->db_type >= QPCTL;
    unsigned char band = pc ? 0 : mp->b_band;
    ust_lock(&pv->lock);
    /* Order check: mp must not precede a message of a higher class, nor
     * follow one of a lower class. */
    mblk_t *prev = emp ? emp->b_prev : q->q_last;
    int bad = 0;
    if (emp && !pc && (emp->b_datap->db_type >= QPCTL || emp->b_band > band))
        bad = 1;
    if (prev && (prev->b_datap->db_type < QPCTL) && (pc || prev->b_band < band))
        bad = 1;
    qband_t *qb = NULL;
    if (!bad && band) {
        qb = ust_qband(q, band, 1);
        if (!qb)
            bad = 1;
    }
    if (bad) {
        ust_unlock(&pv->lock);
        return 0;
    }
    list_insert_before(q, emp, mp);
    if (qb) {
        qb->qb_count += msg_bytes(mp);
        if (!qb->qb_first || qb->qb_first == mp->b_next)
            qb->qb_first = mp;
        if (!qb->qb_last || qb->qb_last == mp->b_prev)
            qb->qb_last = mp;
    } else {
        q->q_count += msg_bytes(mp);
    }
    ust_flow_fill(q, qb); /* a want stays for the next removal */
    uint_t fl = ust_qflags(q);
    if (fl & QPROCSOFF) { /* as in enqueue */
        __atomic_store_n(&pv->held, 1, __ATOMIC_RELAXED);
        ust_unlock(&pv->lock);
        return 1;
    }
    int enable = pc || (!(fl & QNOENB) && ((fl & QWANTR) || band));
    if (enable)
        ust_qflag_clr(q, QWANTR);
    ust_unlock(&pv->lock);
    if (enable)
        qenable(q);
    return 1;
}

int qsize(queue_t *q)
{
    if (!q)
        return 0;
    struct ust_qpriv *pv = ust_qpv(q);
    int n = 0;
    ust_lock(&pv->lock);
    for (mblk_t *m = q->q_first; m; m = m->b_next)
        n++;
    ust_unlock(&pv->lock);
    return n;
}

static int flushable(const mblk_t *mp, int flag)
{
    if (flag == FLUSHALL)
        return 1;
    unsigned char t = mp->b_datap->db_type;
    return t == M_DATA || t == M_PROTO || t == M_PCPROTO || t == M_DELAY;
}

/* Remove from q the messages that match (all bands if band < 0), free them
 * outside the lock, and back-enable. */
static void flush_some(queue_t *q, int band, int flag)
{
    struct ust_qpriv *pv = ust_qpv(q);
    mblk_t *freelist = NULL;
    int back = 0;
    ust_lock(&pv->lock);
    mblk_t *mp = q->q_first;
    while (mp) {
        mblk_t *next = mp->b_next;
        int match = flushable(mp, flag) &&
                    (band < 0 || (mp->b_datap->db_type < QPCTL && mp->b_band == band));
        if (match) {
            back |= dequeue(q, mp);
            mp->b_next = freelist;
            freelist = mp;
        }
        mp = next;
    }
    if (band < 0 && flag == FLUSHALL) { /* everything is gone: wake any waiting writer */
        if (ust_qflags(q) & QWANTW)
            back = 1;
    }
    ust_unlock(&pv->lock);
    while (freelist) {
        mblk_t *n = freelist->b_next;
        freelist->b_next = NULL;
        freemsg(freelist);
        freelist = n;
    }
    if (back)
        ust_backenable_now(q);
}

void flushq(queue_t *q, int flag)
{
    if (!q)
        return;
    flush_some(q, -1, flag);
}

void flushband(queue_t *q, unsigned char pri, int flag)
{
    if (!q)
        return;
    flush_some(q, pri, flag);
}

/* ------------------------------------------------------------------------ */
/* fork() (forksafe.c)                                                      */
/* ------------------------------------------------------------------------ */
/* pool_lock is a leaf: quiesced, so the free list is whole in the child. */
void ust_qpool_fork_prepare(void)
{
    ust_lock(&pool_lock);
}

void ust_qpool_fork_parent(void)
{
    ust_unlock(&pool_lock);
}

/* A free pair's queue locks can still be taken by a putnext holding a stale
 * pointer (see putnext.c); such a thread of the parent does not exist in the
 * child, so the locks of every free pair -- the only pairs the child will
 * use -- are re-initialised (a free pair guards no data).  Pairs in use
 * belong to the parent's streams, which the child never drives. */
void ust_qpool_fork_child(void)
{
    for (struct ust_qpair *qp = pool_free; qp != NULL; qp = qp->pool_next)
        for (int i = 0; i < 2; i++)
            ust_lock_init(&qp->p[i].lock);
    ust_unlock(&pool_lock);
}
