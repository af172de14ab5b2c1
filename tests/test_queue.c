/* SPDX-License-Identifier: MIT */
/*
 * test_queue.c -- the messages on a queue (src/core/queue.c) and the queue
 * fields (strqget/strqset in src/core/flow.c), on bare queue pairs.
 *
 * Queue pairs come from ust_qalloc with a streamtab of this file; no stream
 * head or driver is involved, so every call is direct and every effect can be
 * inspected at once.  After each operation q_check() verifies the invariants
 * of queue(9S)/qband(9S): the doubly linked list, the class order
 * (high priority, then bands high to low, then band 0), qb_first/qb_last of
 * every band, q_count and qb_count.
 *
 * Cases (numbered; each cites the reference page it checks):
 *   1  putq(9F)/getq(9F): delivery order, FIFO within a class
 *   2  putq(9F): band creation on demand, q_nband, band water marks
 *   3  queue(9S)/qband(9S): q_count and qb_count bookkeeping
 *   4  putbq(9F): back to the head of its band; high priority to the front
 *   5  insq(9F): valid positions succeed, out-of-order insertion fails
 *   6  rmvq(9F): first, middle, last, only message of a band
 *   7  flushq(9F): FLUSHDATA keeps M_IOCTL/M_SETOPTS/M_CTL, FLUSHALL empties
 *   8  flushband(9F): band 0 (ordinary messages only) and band n
 *   9  qsize(9F)
 *   10 strqget(9F)/strqset(9F): every field, band 0 and band n
 *   11 strqget(9F)/strqset(9F): errors EINVAL and EPERM
 *   12 RD(9F), WR(9F), OTHERQ(9F), SAMESTR(9F), backq(9F) on a plumbed chain
 *   13 noenable(9F)/enableok(9F)/qenable(9F): effect on putq enabling
 *   14 getq(9F) sets QWANTR on an empty queue; MSGNOGET is skipped
 *   15 NULL arguments are refused without crashing
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

/* ---- the test module: a queue pair whose service procedure drains ---- */
static atomic_int srv_runs;    /* service procedure calls, either side */
static atomic_int srv_drained; /* messages taken off by the service procedure */
static atomic_int srv_drain;   /* 1: the service procedure empties its queue */

static int tq_put(queue_t *q, mblk_t *mp)
{
    if (!putq(q, mp))
        freemsg(mp);
    return 0;
}

static int tq_srv(queue_t *q)
{
    atomic_fetch_add(&srv_runs, 1);
    if (!atomic_load(&srv_drain))
        return 0;
    mblk_t *mp;
    while ((mp = getq(q)) != NULL) {
        atomic_fetch_add(&srv_drained, 1);
        freemsg(mp);
    }
    return 0;
}

static struct module_info tq_minfo = {
    .mi_idnum = 7001,
    .mi_idname = "tq",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 1000,
    .mi_lowat = 100,
};

static struct qinit tq_rinit = {.qi_putp = tq_put, .qi_srvp = tq_srv, .qi_minfo = &tq_minfo};
static struct qinit tq_winit = {.qi_putp = tq_put, .qi_srvp = tq_srv, .qi_minfo = &tq_minfo};
static struct streamtab tq_info = {.st_rdinit = &tq_rinit, .st_wrinit = &tq_winit};

/* A fresh write queue of a new pair (procedures off: never scheduled). */
static queue_t *new_q(void)
{
    queue_t *rq = ust_qalloc(&tq_info, D_MP, NULL);
    CHECK(rq != NULL);
    return rq ? WR(rq) : NULL;
}

static void free_q(queue_t *q)
{
    if (!(ust_qflags(q) & QPROCSOFF))
        qprocsoff(q);
    ust_qfree(RD(q));
}

static mblk_t *msg(unsigned char type, unsigned char band, size_t len)
{
    mblk_t *mp = th_msg(type, band, NULL, len);
    CHECK(mp != NULL);
    return mp;
}

static size_t mbytes(const mblk_t *mp)
{
    size_t n = 0;
    for (; mp; mp = mp->b_cont)
        n += (size_t)(mp->b_wptr - mp->b_rptr);
    return n;
}

static int is_pc(const mblk_t *mp)
{
    return mp->b_datap->db_type >= QPCTL;
}

/* Class rank in delivery order: high priority 256, band n n. */
static int rank(const mblk_t *mp)
{
    return is_pc(mp) ? 256 : mp->b_band;
}

static qband_t *band_of(queue_t *q, unsigned char b)
{
    qband_t *qb = q->q_bandp;
    for (int i = 1; qb && i < b; i++)
        qb = qb->qb_next;
    return qb;
}

/* The invariants of queue(9S) and qband(9S).  Returns 1 if they hold. */
static int q_check(queue_t *q)
{
    int ok = 1;
    size_t count0 = 0, countb[256] = {0};
    mblk_t *firstb[256] = {0}, *lastb[256] = {0};
    mblk_t *prev = NULL;
    int last_rank = 257;
    for (mblk_t *mp = q->q_first; mp; prev = mp, mp = mp->b_next) {
        if (mp->b_prev != prev)
            ok = 0;
        if (rank(mp) > last_rank)
            ok = 0;
        last_rank = rank(mp);
        if (is_pc(mp) || mp->b_band == 0) {
            count0 += mbytes(mp);
        } else {
            countb[mp->b_band] += mbytes(mp);
            if (!firstb[mp->b_band])
                firstb[mp->b_band] = mp;
            lastb[mp->b_band] = mp;
            if (mp->b_band > q->q_nband)
                ok = 0;
        }
    }
    if (q->q_last != prev)
        ok = 0;
    if (q->q_count != count0)
        ok = 0;
    int n = 0;
    for (qband_t *qb = q->q_bandp; qb; qb = qb->qb_next) {
        n++;
        if (qb->qb_count != countb[n] || qb->qb_first != firstb[n] || qb->qb_last != lastb[n])
            ok = 0;
    }
    if (n != q->q_nband)
        ok = 0;
    if (!ok)
        fprintf(stderr, "q_check: queue %p inconsistent\n", (void *)q);
    return ok;
}

/* Does the list of q hold exactly the n messages of want, in order? */
static int q_is(queue_t *q, mblk_t **want, int n)
{
    mblk_t *mp = q->q_first;
    for (int i = 0; i < n; i++, mp = mp->b_next)
        if (mp != want[i])
            return 0;
    return mp == NULL;
}

static long outstanding_mblks(void)
{
    struct ustreams_blockstats st;
    ustreams_blockstats(&st);
    return st.mblks;
}

/* Wait up to ms for *v to reach want. */
static int wait_for(atomic_int *v, int want, long ms)
{
    for (long i = 0; i < ms; i++) {
        if (atomic_load(v) >= want)
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(v) >= want;
}

/* 1. putq(9F), getq(9F): high priority first, then bands high to low, FIFO
 *    within each class; a high-priority message's b_band does not matter. */
static void case_order(void)
{
    queue_t *q = new_q();
    mblk_t *d0a = msg(M_DATA, 0, 10), *b1a = msg(M_DATA, 1, 11), *pc1 = msg(M_PCPROTO, 0, 12);
    mblk_t *b5a = msg(M_PROTO, 5, 13), *d0b = msg(M_PROTO, 0, 14), *b1b = msg(M_DATA, 1, 15);
    mblk_t *pc2 = msg(M_PCPROTO, 3, 16), *b5b = msg(M_DATA, 5, 17), *d0c = msg(M_DATA, 0, 18);
    mblk_t *in[] = {d0a, b1a, pc1, b5a, d0b, b1b, pc2, b5b, d0c};
    mblk_t *out[] = {pc1, pc2, b5a, b5b, b1a, b1b, d0a, d0b, d0c};
    for (int i = 0; i < 9; i++) {
        CHECK_EQ(putq(q, in[i]), 1);
        CHECK(q_check(q));
    }
    CHECK(q_is(q, out, 9));
    for (int i = 0; i < 9; i++) {
        mblk_t *mp = getq(q);
        CHECK(mp == out[i]);
        CHECK(q_check(q));
        if (mp) {
            CHECK(mp->b_next == NULL && mp->b_prev == NULL);
            freemsg(mp);
        }
    }
    CHECK(getq(q) == NULL);
    CHECK(q->q_first == NULL && q->q_last == NULL);
    free_q(q);
}

/* 2. putq(9F), qband(9S): bands exist only once used; using band n creates
 *    bands 1..n, each with the queue's water marks; a high-priority message
 *    creates none. */
static void case_bands(void)
{
    queue_t *q = new_q();
    CHECK_EQ(q->q_nband, 0);
    CHECK(q->q_bandp == NULL);
    CHECK_EQ(putq(q, msg(M_PCPROTO, 9, 4)), 1);
    CHECK_EQ(q->q_nband, 0);
    CHECK_EQ(putq(q, msg(M_DATA, 0, 4)), 1);
    CHECK_EQ(q->q_nband, 0);
    CHECK_EQ(putq(q, msg(M_DATA, 3, 4)), 1);
    CHECK_EQ(q->q_nband, 3);
    int n = 0;
    for (qband_t *qb = q->q_bandp; qb; qb = qb->qb_next) {
        n++;
        CHECK_EQ(qb->qb_hiwat, q->q_hiwat);
        CHECK_EQ(qb->qb_lowat, q->q_lowat);
        CHECK_EQ(qb->qb_count, n == 3 ? 4 : 0);
        CHECK((qb->qb_flag & QB_FULL) == 0);
    }
    CHECK_EQ(n, 3);
    CHECK_EQ(putq(q, msg(M_DATA, 2, 4)), 1); /* an existing band: no new one */
    CHECK_EQ(q->q_nband, 3);
    CHECK_EQ(putq(q, msg(M_DATA, 255, 4)), 1);
    CHECK_EQ(q->q_nband, 255);
    CHECK(q_check(q));
    mblk_t *mp = getq(q);
    CHECK(mp && is_pc(mp));
    freemsg(mp);
    mp = getq(q);
    CHECK(mp && mp->b_band == 255);
    freemsg(mp);
    CHECK_EQ(q->q_nband, 255); /* bands stay once allocated */
    CHECK(q_check(q));
    flushq(q, FLUSHALL);
    CHECK(q_check(q));
    free_q(q);
}

/* 3. queue(9S)/qband(9S): q_count counts the bytes of band 0 and of
 *    high-priority messages, qb_count those of band n, over every block of a
 *    message; both fall back to zero as messages leave. */
static void case_counts(void)
{
    queue_t *q = new_q();
    mblk_t *m = msg(M_DATA, 0, 30);
    linkb(m, msg(M_DATA, 0, 20)); /* a two-block message: 50 bytes */
    CHECK_EQ(putq(q, m), 1);
    CHECK_EQ(q->q_count, 50);
    CHECK_EQ(putq(q, msg(M_PCPROTO, 0, 7)), 1);
    CHECK_EQ(q->q_count, 57);
    CHECK_EQ(putq(q, msg(M_DATA, 2, 100)), 1);
    CHECK_EQ(putq(q, msg(M_DATA, 2, 1)), 1);
    CHECK_EQ(putq(q, msg(M_DATA, 1, 5)), 1);
    CHECK_EQ(q->q_count, 57);
    CHECK_EQ(band_of(q, 1)->qb_count, 5);
    CHECK_EQ(band_of(q, 2)->qb_count, 101);
    CHECK(q_check(q));
    mblk_t *mp;
    while ((mp = getq(q)) != NULL) {
        CHECK(q_check(q));
        freemsg(mp);
    }
    CHECK_EQ(q->q_count, 0);
    CHECK_EQ(band_of(q, 1)->qb_count, 0);
    CHECK_EQ(band_of(q, 2)->qb_count, 0);
    free_q(q);
}

/* 4. putbq(9F): a message goes back to the head of its band (before the
 *    messages of its band, after those of higher bands); a high-priority
 *    message to the very front. */
static void case_putbq(void)
{
    queue_t *q = new_q();
    mblk_t *d0a = msg(M_DATA, 0, 10), *d0b = msg(M_DATA, 0, 10);
    mblk_t *b1a = msg(M_DATA, 1, 10), *b1b = msg(M_DATA, 1, 10);
    mblk_t *b3a = msg(M_DATA, 3, 10), *pc1 = msg(M_PCPROTO, 0, 10);
    putq(q, d0a);
    putq(q, d0b);
    putq(q, b1a);
    putq(q, b1b);
    mblk_t *mp = getq(q);
    CHECK(mp == b1a);
    CHECK_EQ(putbq(q, mp), 1); /* back to the head of band 1 */
    CHECK(q_check(q));
    {
        mblk_t *want[] = {b1a, b1b, d0a, d0b};
        CHECK(q_is(q, want, 4));
    }
    CHECK(band_of(q, 1)->qb_first == b1a);
    /* band 0 message back: after band 1, before d0b */
    mblk_t *x = getq(q), *y = getq(q), *z = getq(q);
    CHECK(x == b1a && y == b1b && z == d0a);
    CHECK_EQ(putbq(q, z), 1);
    {
        mblk_t *want[] = {d0a, d0b};
        CHECK(q_is(q, want, 2));
    }
    CHECK_EQ(putbq(q, y), 1);
    CHECK_EQ(putbq(q, x), 1);
    CHECK(q_check(q));
    {
        mblk_t *want[] = {b1a, b1b, d0a, d0b};
        CHECK(q_is(q, want, 4));
    }
    /* an empty higher band: putbq puts it in front of band 1 */
    CHECK_EQ(putbq(q, b3a), 1);
    CHECK(q_check(q));
    CHECK(q->q_first == b3a);
    /* a high-priority message, putq first then putbq of another: very front */
    CHECK_EQ(putq(q, msg(M_PCPROTO, 0, 3)), 1);
    CHECK(q_check(q));
    CHECK(is_pc(q->q_first));
    CHECK_EQ(putbq(q, pc1), 1);
    CHECK(q->q_first == pc1);
    CHECK(is_pc(pc1->b_next));
    CHECK(q_check(q));
    CHECK_EQ(q->q_count, 20 + 3 + 10);
    CHECK_EQ(band_of(q, 1)->qb_count, 20);
    CHECK_EQ(band_of(q, 3)->qb_count, 10);
    flushq(q, FLUSHALL);
    free_q(q);
}

/* 5. insq(9F): insertion before emp (NULL: at the end) succeeds when it keeps
 *    the class order; otherwise insq returns 0 and the queue is unchanged. */
static void case_insq(void)
{
    queue_t *q = new_q();
    mblk_t *pc1 = msg(M_PCPROTO, 0, 1), *b5a = msg(M_DATA, 5, 2), *b1a = msg(M_DATA, 1, 3);
    mblk_t *d0a = msg(M_DATA, 0, 4);
    putq(q, d0a);
    putq(q, b1a);
    putq(q, b5a);
    putq(q, pc1);
    CHECK_EQ(q->q_nband, 5);
    /* valid: band 3 between band 5 and band 1 (band 3 empty) */
    mblk_t *b3 = msg(M_DATA, 3, 5);
    CHECK_EQ(insq(q, b1a, b3), 1);
    CHECK(q_check(q));
    CHECK(band_of(q, 3)->qb_first == b3 && band_of(q, 3)->qb_last == b3);
    /* valid: band 1 before b1a (becomes first of band 1) */
    mblk_t *b1new = msg(M_DATA, 1, 6);
    CHECK_EQ(insq(q, b1a, b1new), 1);
    CHECK(band_of(q, 1)->qb_first == b1new);
    /* valid: band 1 after b1a (before d0a; becomes last of band 1) */
    mblk_t *b1end = msg(M_DATA, 1, 7);
    CHECK_EQ(insq(q, d0a, b1end), 1);
    CHECK(band_of(q, 1)->qb_last == b1end);
    /* valid: band 0 at the end; high priority before pc1 */
    mblk_t *d0end = msg(M_DATA, 0, 8), *pc0 = msg(M_PCPROTO, 0, 9);
    CHECK_EQ(insq(q, NULL, d0end), 1);
    CHECK_EQ(insq(q, pc1, pc0), 1);
    /* valid: high priority right after the last high-priority message */
    mblk_t *pc2 = msg(M_PCPROTO, 0, 10);
    CHECK_EQ(insq(q, b5a, pc2), 1);
    CHECK(q_check(q));
    mblk_t *want[] = {pc0, pc1, pc2, b5a, b3, b1new, b1a, b1end, d0a, d0end};
    CHECK(q_is(q, want, 10));
    size_t count0 = q->q_count, c1 = band_of(q, 1)->qb_count, c5 = band_of(q, 5)->qb_count;
    CHECK_EQ(count0, 1 + 4 + 8 + 9 + 10);

    /* out of order: each returns 0 and changes nothing */
    mblk_t *bad[6] = {msg(M_DATA, 1, 1), msg(M_DATA, 2, 1), msg(M_DATA, 0, 1),
                      msg(M_PCPROTO, 0, 1), msg(M_DATA, 7, 1), msg(M_PCPROTO, 0, 1)};
    mblk_t *where[6] = {b5a, NULL, pc1, b1a, b3, NULL};
    /* band 1 before band 5; band 2 at the end (after band 0); band 0 before a
     * high-priority message; high priority after band 5/3; band 7 after band
     * 5; high priority at the end */
    unsigned char nband = q->q_nband;
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(insq(q, where[i], bad[i]), 0);
        CHECK(q_is(q, want, 10));
        CHECK(q_check(q));
        CHECK_EQ(q->q_count, count0);
        CHECK_EQ(band_of(q, 1)->qb_count, c1);
        CHECK_EQ(band_of(q, 5)->qb_count, c5);
        CHECK(bad[i]->b_next == NULL && bad[i]->b_prev == NULL);
        freemsg(bad[i]);
    }
    CHECK_EQ(q->q_nband, nband); /* a refused band 7 was not created */
    flushq(q, FLUSHALL);
    free_q(q);
}

/* 6. rmvq(9F): the message leaves wherever it is, its band's first/last and
 *    count follow; removing the only message of a band empties the band. */
static void case_rmvq(void)
{
    queue_t *q = new_q();
    mblk_t *b2a = msg(M_DATA, 2, 10), *b2b = msg(M_DATA, 2, 20), *b2c = msg(M_DATA, 2, 30);
    mblk_t *b1 = msg(M_DATA, 1, 5), *d0 = msg(M_DATA, 0, 7), *pc = msg(M_PCPROTO, 0, 3);
    putq(q, b2a);
    putq(q, b2b);
    putq(q, b2c);
    putq(q, b1);
    putq(q, d0);
    putq(q, pc);
    rmvq(q, b2b); /* middle of a band */
    CHECK(q_check(q));
    CHECK(b2b->b_next == NULL && b2b->b_prev == NULL);
    CHECK_EQ(band_of(q, 2)->qb_count, 40);
    rmvq(q, b2a); /* first of a band */
    CHECK(band_of(q, 2)->qb_first == b2c);
    rmvq(q, pc); /* first of the queue */
    CHECK(q->q_first == b2c);
    rmvq(q, d0); /* last of the queue */
    CHECK(q->q_last == b1);
    CHECK_EQ(q->q_count, 0);
    rmvq(q, b1); /* only message of band 1 */
    CHECK(band_of(q, 1)->qb_first == NULL && band_of(q, 1)->qb_last == NULL);
    CHECK_EQ(band_of(q, 1)->qb_count, 0);
    CHECK(q_check(q));
    rmvq(q, b2c);
    CHECK(q->q_first == NULL && q->q_last == NULL);
    CHECK(q_check(q));
    mblk_t *all[] = {b2a, b2b, b2c, b1, d0, pc};
    for (int i = 0; i < 6; i++)
        freemsg(all[i]);
    free_q(q);
}

/* 7. flushq(9F): FLUSHDATA frees the data messages (M_DATA, M_PROTO,
 *    M_PCPROTO, M_DELAY) of every band and keeps the others (M_IOCTL,
 *    M_SETOPTS, M_CTL ...); FLUSHALL frees everything. */
static void case_flushq(void)
{
    queue_t *q = new_q();
    long base = outstanding_mblks();
    mblk_t *ioc = msg(M_IOCTL, 0, 8), *so = msg(M_SETOPTS, 0, 8), *ctl = msg(M_CTL, 2, 8);
    putq(q, msg(M_DATA, 0, 10));
    putq(q, ioc);
    putq(q, msg(M_PROTO, 2, 10));
    putq(q, so);
    putq(q, msg(M_PCPROTO, 0, 10));
    putq(q, ctl);
    putq(q, msg(M_DELAY, 0, 1));
    putq(q, msg(M_DATA, 2, 10));
    CHECK_EQ(outstanding_mblks(), base + 8);
    flushq(q, FLUSHDATA);
    CHECK(q_check(q));
    CHECK_EQ(qsize(q), 3);
    mblk_t *want[] = {ctl, ioc, so};
    CHECK(q_is(q, want, 3));
    CHECK_EQ(q->q_count, 16);
    CHECK_EQ(band_of(q, 2)->qb_count, 8);
    CHECK_EQ(outstanding_mblks(), base + 3);
    flushq(q, FLUSHALL);
    CHECK(q_check(q));
    CHECK_EQ(qsize(q), 0);
    CHECK_EQ(q->q_count, 0);
    CHECK_EQ(band_of(q, 2)->qb_count, 0);
    CHECK_EQ(outstanding_mblks(), base);
    free_q(q);
}

/* 8. flushband(9F): band 0 flushes only ordinary messages of band 0 (not high
 *    priority, not other bands); band n only band n; FLUSHDATA keeps non-data
 *    messages of the band; a band never allocated is a no-op. */
static void case_flushband(void)
{
    queue_t *q = new_q();
    mblk_t *pc = msg(M_PCPROTO, 0, 1), *b1d = msg(M_DATA, 1, 2), *b1c = msg(M_CTL, 1, 3);
    mblk_t *b3 = msg(M_DATA, 3, 4), *d0c = msg(M_IOCTL, 0, 5);
    putq(q, msg(M_DATA, 0, 10));
    putq(q, pc);
    putq(q, b1d);
    putq(q, b1c);
    putq(q, d0c);
    putq(q, b3);
    putq(q, msg(M_PROTO, 0, 10));
    flushband(q, 0, FLUSHDATA);
    CHECK(q_check(q));
    {
        mblk_t *want[] = {pc, b3, b1d, b1c, d0c};
        CHECK(q_is(q, want, 5));
    }
    CHECK_EQ(q->q_count, 6);
    flushband(q, 1, FLUSHDATA);
    CHECK(q_check(q));
    {
        mblk_t *want[] = {pc, b3, b1c, d0c};
        CHECK(q_is(q, want, 4));
    }
    CHECK_EQ(band_of(q, 1)->qb_count, 3);
    flushband(q, 1, FLUSHALL);
    CHECK(q_check(q));
    CHECK(band_of(q, 1)->qb_first == NULL);
    CHECK_EQ(band_of(q, 3)->qb_count, 4);
    flushband(q, 200, FLUSHALL); /* never allocated */
    CHECK(q_check(q));
    CHECK_EQ(q->q_nband, 3);
    CHECK_EQ(qsize(q), 3);
    flushband(q, 0, FLUSHALL); /* pc stays: not an ordinary message */
    {
        mblk_t *want[] = {pc, b3};
        CHECK(q_is(q, want, 2));
    }
    flushband(q, 3, FLUSHALL);
    CHECK(q_is(q, &pc, 1));
    CHECK(q_check(q));
    flushq(q, FLUSHALL);
    free_q(q);
}

/* 9. qsize(9F): the number of messages on the queue. */
static void case_qsize(void)
{
    queue_t *q = new_q();
    CHECK_EQ(qsize(q), 0);
    for (int i = 0; i < 20; i++)
        putq(q, msg(i % 3 ? M_DATA : M_PCPROTO, (unsigned char)(i % 4), 1));
    CHECK_EQ(qsize(q), 20);
    freemsg(getq(q));
    CHECK_EQ(qsize(q), 19);
    flushq(q, FLUSHALL);
    CHECK_EQ(qsize(q), 0);
    free_q(q);
}

/* 10. strqget(9F)/strqset(9F): every field of the queue and of a band. */
static void case_strq_fields(void)
{
    queue_t *q = new_q();
    size_t sz = 0;
    ssize_t ssz = 0;
    mblk_t *mp = NULL;
    uint_t fl = 0;

    /* band 0: initial values from module_info */
    CHECK_EQ(strqget(q, QHIWAT, 0, &sz), 0);
    CHECK_EQ(sz, 1000);
    CHECK_EQ(strqget(q, QLOWAT, 0, &sz), 0);
    CHECK_EQ(sz, 100);
    CHECK_EQ(strqget(q, QMAXPSZ, 0, &ssz), 0);
    CHECK_EQ(ssz, INFPSZ);
    CHECK_EQ(strqget(q, QMINPSZ, 0, &ssz), 0);
    CHECK_EQ(ssz, 0);
    /* set and get back */
    CHECK_EQ(strqset(q, QHIWAT, 0, 4096), 0);
    CHECK_EQ(strqget(q, QHIWAT, 0, &sz), 0);
    CHECK_EQ(sz, 4096);
    CHECK_EQ(q->q_hiwat, 4096);
    CHECK_EQ(strqset(q, QLOWAT, 0, 512), 0);
    CHECK_EQ(strqget(q, QLOWAT, 0, &sz), 0);
    CHECK_EQ(sz, 512);
    CHECK_EQ(strqset(q, QMAXPSZ, 0, 2048), 0);
    CHECK_EQ(strqget(q, QMAXPSZ, 0, &ssz), 0);
    CHECK_EQ(ssz, 2048);
    CHECK_EQ(q->q_maxpsz, 2048);
    CHECK_EQ(strqset(q, QMAXPSZ, 0, INFPSZ), 0);
    CHECK_EQ(strqget(q, QMAXPSZ, 0, &ssz), 0);
    CHECK_EQ(ssz, INFPSZ);
    CHECK_EQ(strqset(q, QMINPSZ, 0, 16), 0);
    CHECK_EQ(strqget(q, QMINPSZ, 0, &ssz), 0);
    CHECK_EQ(ssz, 16);
    /* read-only fields */
    mblk_t *a = msg(M_DATA, 0, 33), *b = msg(M_DATA, 0, 44);
    putq(q, a);
    putq(q, b);
    CHECK_EQ(strqget(q, QCOUNT, 0, &sz), 0);
    CHECK_EQ(sz, 77);
    CHECK_EQ(strqget(q, QFIRST, 0, &mp), 0);
    CHECK(mp == a);
    CHECK_EQ(strqget(q, QLAST, 0, &mp), 0);
    CHECK(mp == b);
    CHECK_EQ(strqget(q, QFLAG, 0, &fl), 0);
    CHECK(fl & QUSE);
    CHECK((fl & QREADR) == 0);
    CHECK_EQ(fl, ust_qflags(q));
    CHECK_EQ(strqget(RD(q), QFLAG, 0, &fl), 0);
    CHECK(fl & QREADR);

    /* band 4: strqget/strqset create the band (and those below it) */
    CHECK_EQ(q->q_nband, 0);
    CHECK_EQ(strqget(q, QHIWAT, 4, &sz), 0);
    CHECK_EQ(q->q_nband, 4);
    CHECK_EQ(sz, 4096); /* a new band takes the queue's marks */
    CHECK_EQ(strqset(q, QHIWAT, 4, 300), 0);
    CHECK_EQ(strqset(q, QLOWAT, 4, 30), 0);
    CHECK_EQ(strqget(q, QHIWAT, 4, &sz), 0);
    CHECK_EQ(sz, 300);
    CHECK_EQ(band_of(q, 4)->qb_hiwat, 300);
    CHECK_EQ(strqget(q, QLOWAT, 4, &sz), 0);
    CHECK_EQ(sz, 30);
    CHECK_EQ(q->q_hiwat, 4096); /* band 0 untouched */
    CHECK_EQ(strqset(q, QHIWAT, 6, 123), 0);
    CHECK_EQ(q->q_nband, 6);
    CHECK_EQ(band_of(q, 6)->qb_hiwat, 123);
    mblk_t *c = msg(M_DATA, 4, 10), *d = msg(M_DATA, 4, 20);
    putq(q, c);
    putq(q, d);
    CHECK_EQ(strqget(q, QCOUNT, 4, &sz), 0);
    CHECK_EQ(sz, 30);
    CHECK_EQ(strqget(q, QFIRST, 4, &mp), 0);
    CHECK(mp == c);
    CHECK_EQ(strqget(q, QLAST, 4, &mp), 0);
    CHECK(mp == d);
    CHECK_EQ(strqget(q, QFLAG, 4, &fl), 0);
    CHECK_EQ(fl, 0); /* 30 bytes: below the band's high-water mark */
    putq(q, msg(M_DATA, 4, 270));
    CHECK_EQ(strqget(q, QFLAG, 4, &fl), 0);
    CHECK_EQ(fl, QB_FULL); /* 300 bytes: at it */
    CHECK_EQ(strqget(q, QFLAG, 0, &fl), 0);
    CHECK((fl & QFULL) == 0); /* band 0 is not affected */
    flushq(q, FLUSHALL);
    free_q(q);
}

/* 11. strqget(9F)/strqset(9F) errors: EINVAL for QBAD, an unknown field, a NULL
 *     valp, a negative mark, a packet size on a band; EPERM for setting the
 *     read-only fields QCOUNT, QFIRST, QLAST, QFLAG. */
static void case_strq_errors(void)
{
    queue_t *q = new_q();
    size_t sz = 0;
    CHECK_EQ(strqget(q, QBAD, 0, &sz), EINVAL);
    CHECK_EQ(strqget(q, (qfields_t)42, 0, &sz), EINVAL);
    CHECK_EQ(strqget(q, (qfields_t)-1, 0, &sz), EINVAL);
    CHECK_EQ(strqget(q, QHIWAT, 0, NULL), EINVAL);
    CHECK_EQ(strqget(q, QMAXPSZ, 1, &sz), EINVAL);
    CHECK_EQ(strqget(q, QMINPSZ, 2, &sz), EINVAL);
    CHECK_EQ(strqset(q, QBAD, 0, 1), EINVAL);
    CHECK_EQ(strqset(q, (qfields_t)42, 0, 1), EINVAL);
    CHECK_EQ(strqset(q, QHIWAT, 0, -1), EINVAL);
    CHECK_EQ(strqset(q, QLOWAT, 0, -5), EINVAL);
    CHECK_EQ(strqset(q, QHIWAT, 3, -1), EINVAL);
    CHECK_EQ(strqset(q, QMAXPSZ, 1, 100), EINVAL);
    CHECK_EQ(strqset(q, QMINPSZ, 1, 100), EINVAL);
    CHECK_EQ(strqset(q, QMINPSZ, 0, -7), EINVAL);
    CHECK_EQ(strqset(q, QCOUNT, 0, 1), EPERM);
    CHECK_EQ(strqset(q, QFIRST, 0, 0), EPERM);
    CHECK_EQ(strqset(q, QLAST, 0, 0), EPERM);
    CHECK_EQ(strqset(q, QFLAG, 0, 0), EPERM);
    CHECK_EQ(strqset(q, QCOUNT, 2, 1), EPERM);
    /* nothing changed */
    CHECK_EQ(q->q_hiwat, 1000);
    CHECK_EQ(q->q_lowat, 100);
    CHECK_EQ(q->q_maxpsz, INFPSZ);
    CHECK_EQ(q->q_minpsz, 0);
    free_q(q);
}

/* 12. RD(9F), WR(9F), OTHERQ(9F), SAMESTR(9F), backq(9F) on a chain
 *     A -> B -> C built with ust_qinsert, and across the twist of a pipe. */
static void case_plumbing(void)
{
    queue_t *a = RD(new_q()), *b = RD(new_q()), *c = RD(new_q());
    CHECK(RD(a) == a && WR(a) == a + 1 && RD(WR(a)) == a && WR(WR(a)) == WR(a));
    CHECK(OTHERQ(a) == WR(a) && OTHERQ(WR(a)) == a);
    ust_qinsert(a, c); /* A over C */
    ust_qinsert(a, b); /* A over B over C */
    CHECK(WR(a)->q_next == WR(b));
    CHECK(WR(b)->q_next == WR(c));
    CHECK(WR(c)->q_next == NULL);
    CHECK(c->q_next == b);
    CHECK(b->q_next == a);
    CHECK(a->q_next == NULL);
    CHECK_EQ(SAMESTR(WR(a)), 1);
    CHECK_EQ(SAMESTR(WR(b)), 1);
    CHECK_EQ(SAMESTR(WR(c)), 0); /* end of the stream */
    CHECK_EQ(SAMESTR(c), 1);
    CHECK_EQ(SAMESTR(a), 0);
    CHECK(backq(WR(b)) == WR(a));
    CHECK(backq(WR(c)) == WR(b));
    CHECK(backq(WR(a)) == NULL);
    CHECK(backq(b) == c);
    CHECK(backq(a) == b);
    CHECK(backq(c) == NULL);
    /* take B out again: A -> C */
    ust_qunlink(b);
    CHECK(WR(a)->q_next == WR(c));
    CHECK(c->q_next == a);
    CHECK(WR(b)->q_next == NULL && b->q_next == NULL);
    CHECK(backq(WR(c)) == WR(a));
    ust_qunlink(c);
    CHECK(WR(a)->q_next == NULL && a->q_next == NULL);

    /* a pipe: the write side of each end leads into the read side of the other */
    __atomic_store_n(&WR(a)->q_next, c, __ATOMIC_SEQ_CST);
    __atomic_store_n(&WR(c)->q_next, a, __ATOMIC_SEQ_CST);
    CHECK_EQ(SAMESTR(WR(a)), 0);
    CHECK_EQ(SAMESTR(WR(c)), 0);
    CHECK(backq(c) == WR(a));
    CHECK(backq(a) == WR(c));
    __atomic_store_n(&WR(a)->q_next, NULL, __ATOMIC_SEQ_CST);
    __atomic_store_n(&WR(c)->q_next, NULL, __ATOMIC_SEQ_CST);
    free_q(a);
    free_q(b);
    free_q(c);
}

/* 13. putq(9F), noenable(9F), enableok(9F), qenable(9F): putq schedules the
 *     service procedure when the queue was waited on (QWANTR), unless
 *     noenable is in force; a high-priority message always schedules it;
 *     qenable always does; enableok restores the normal behaviour. */
static void case_noenable(void)
{
    queue_t *q = new_q();
    atomic_store(&srv_drain, 1);
    qprocson(q);
    CHECK(ust_qflags(q) & QWANTR);
    int runs = atomic_load(&srv_runs);

    /* normal: putq into a waited-on queue runs the service procedure */
    putq(q, msg(M_DATA, 0, 10));
    CHECK(wait_for(&srv_runs, runs + 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(qsize(q), 0);

    noenable(q);
    CHECK(ust_qflags(q) & QNOENB);
    runs = atomic_load(&srv_runs);
    putq(q, msg(M_DATA, 0, 10));
    putq(q, msg(M_DATA, 2, 10)); /* a band message is not enabling either */
    CHECK((ust_qflags(q) & QENAB) == 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ(atomic_load(&srv_runs), runs); /* not scheduled */
    CHECK_EQ(qsize(q), 2);
    putbq(q, msg(M_DATA, 0, 10));
    CHECK((ust_qflags(q) & QENAB) == 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&srv_runs), runs);

    /* a high-priority message schedules it regardless */
    putq(q, msg(M_PCPROTO, 0, 10));
    CHECK(wait_for(&srv_runs, runs + 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(qsize(q), 0);

    /* qenable schedules it regardless */
    runs = atomic_load(&srv_runs);
    qenable(q);
    CHECK(wait_for(&srv_runs, runs + 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);

    /* enableok: putq schedules again */
    enableok(q);
    CHECK((ust_qflags(q) & QNOENB) == 0);
    runs = atomic_load(&srv_runs);
    putq(q, msg(M_DATA, 0, 10));
    CHECK(wait_for(&srv_runs, runs + 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(qsize(q), 0);

    /* without a reader waiting (QWANTR clear), a band-0 putq does not
     * schedule; a band > 0 putq does */
    atomic_store(&srv_drain, 0);
    putq(q, msg(M_DATA, 0, 10)); /* QWANTR set: runs, leaves it queued */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK((ust_qflags(q) & QWANTR) == 0);
    runs = atomic_load(&srv_runs);
    putq(q, msg(M_DATA, 0, 10));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&srv_runs), runs);
    putq(q, msg(M_DATA, 1, 10));
    CHECK(wait_for(&srv_runs, runs + 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(qsize(q), 3);
    free_q(q); /* frees what is queued */
}

/* 14. getq(9F): an empty queue gets QWANTR; a message marked MSGNOGET is
 *     passed over. */
static void case_getq_flags(void)
{
    queue_t *q = new_q();
    putq(q, msg(M_DATA, 0, 1));
    freemsg(getq(q));
    ust_qflag_clr(q, QWANTR);
    CHECK(getq(q) == NULL);
    CHECK(ust_qflags(q) & QWANTR);
    mblk_t *a = msg(M_DATA, 0, 1), *b = msg(M_DATA, 0, 2);
    a->b_flag |= MSGNOGET;
    putq(q, a);
    putq(q, b);
    CHECK(getq(q) == b);
    CHECK(q_is(q, &a, 1));
    CHECK(getq(q) == NULL);
    freemsg(b);
    flushq(q, FLUSHALL);
    free_q(q);
}

/* 15. NULL arguments: refused (0 / NULL / EINVAL) without crashing; the caller
 *     keeps the message. */
static void case_null(void)
{
    queue_t *q = new_q();
    mblk_t *mp = msg(M_DATA, 0, 1);
    CHECK_EQ(putq(NULL, mp), 0);
    CHECK_EQ(putq(q, NULL), 0);
    CHECK_EQ(putbq(NULL, mp), 0);
    CHECK_EQ(putbq(q, NULL), 0);
    CHECK_EQ(insq(NULL, NULL, mp), 0);
    CHECK_EQ(insq(q, NULL, NULL), 0);
    CHECK(getq(NULL) == NULL);
    rmvq(NULL, mp);
    rmvq(q, NULL);
    flushq(NULL, FLUSHALL);
    flushband(NULL, 1, FLUSHALL);
    CHECK_EQ(qsize(NULL), 0);
    qenable(NULL);
    noenable(NULL);
    enableok(NULL);
    CHECK_EQ(strqget(NULL, QHIWAT, 0, &(size_t){0}), EINVAL);
    CHECK_EQ(strqset(NULL, QHIWAT, 0, 1), EINVAL);
    CHECK(backq(NULL) == NULL);
    CHECK_EQ(SAMESTR(NULL), 0);
    CHECK_EQ(qsize(q), 0);
    CHECK(mp->b_next == NULL && mp->b_prev == NULL);
    freemsg(mp);
    free_q(q);
}

int main(void)
{
    case_order();
    case_bands();
    case_counts();
    case_putbq();
    case_insq();
    case_rmvq();
    case_flushq();
    case_flushband();
    case_qsize();
    case_strq_fields();
    case_strq_errors();
    case_plumbing();
    case_noenable();
    case_getq_flags();
    case_null();
    th_assert_no_blocks();
    return CHECK_RESULT();
}
