/* SPDX-License-Identifier: MIT */
/*
 * test_claims.c -- claims across incarnations of a queue pair, and messages
 * held by a queue whose procedures went off (src/core/putnext.c, queue.c).
 *
 * Cases:
 *   1  a stale claim (taken on a pair after it was freed) released after the
 *      pair was reused leaves the new incarnation's count at 0, not -1, so
 *      qprocsoff of the new incarnation returns (issue 9, defect 1);
 *   2  after qprocsoff a queue that still holds messages keeps what passes
 *      it behind them; ust_qpass_held passes everything on in order, then
 *      messages pass straight on again (issue 9, defect 2);
 *   3  qprocsoff on an empty queue does not hold: messages pass through;
 *   4  putnext past queues whose procedures are off (a pipe's twist) claims
 *      only the queue that runs (putnext.c "Passed through without claims"):
 *      the queues passed hold no claim while it runs, its own holds one;
 *      a queue on the way holding messages still keeps what passes behind
 *      them; a run longer than the walk's bound and the end of the stream
 *      take the claimed way (delivered, or freed).
 * Every case ends with no block outstanding.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

/* ---- the upper module: queues everything, its service procedure idle ---- */
static int up_put(queue_t *q, mblk_t *mp)
{
    if (!putq(q, mp))
        freemsg(mp);
    return 0;
}

static int up_srv(queue_t *q)
{
    (void)q; /* leave the messages queued */
    return 0;
}

static struct module_info up_minfo = {
    .mi_idnum = 7101, .mi_idname = "up", .mi_maxpsz = INFPSZ, .mi_hiwat = 1 << 20, .mi_lowat = 0};
static struct qinit up_rinit = {.qi_putp = up_put, .qi_srvp = up_srv, .qi_minfo = &up_minfo};
static struct qinit up_winit = {.qi_putp = up_put, .qi_srvp = up_srv, .qi_minfo = &up_minfo};
static struct streamtab up_info = {.st_rdinit = &up_rinit, .st_wrinit = &up_winit};

/* ---- the lower module: records the order of what it receives ---- */
static int got[16];
static atomic_int ngot;

static int low_put(queue_t *q, mblk_t *mp)
{
    (void)q;
    int n = atomic_fetch_add(&ngot, 1);
    if (n < 16)
        got[n] = mp->b_rptr[0];
    freemsg(mp);
    return 0;
}

static struct module_info low_minfo = {.mi_idnum = 7102, .mi_idname = "low", .mi_maxpsz = INFPSZ};
static struct qinit low_rinit = {.qi_putp = low_put, .qi_minfo = &low_minfo};
static struct qinit low_winit = {.qi_putp = low_put, .qi_minfo = &low_minfo};
static struct streamtab low_info = {.st_rdinit = &low_rinit, .st_wrinit = &low_winit};

/* ---- case 4: a module that passes everything on, queues passed through
 * (procedures never on), and a bottom that records the claims it sees ---- */
static int pass_put(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}
static struct module_info pass_minfo = {.mi_idnum = 7103, .mi_idname = "pass", .mi_maxpsz = INFPSZ};
static struct qinit pass_init = {.qi_putp = pass_put, .qi_minfo = &pass_minfo};
static struct streamtab pass_info = {.st_rdinit = &pass_init, .st_wrinit = &pass_init};

#define NMID 6
static queue_t *mids[NMID]; /* write queues passed through, top first */
static int nmids;           /* how many of them are in the stream */
static int mid_claims;      /* claims on them seen by the bottom's last call */
static int own_claims;      /* claims on the bottom's own queue then */

static int seen_put(queue_t *q, mblk_t *mp)
{
    mid_claims = 0;
    for (int i = 0; i < nmids; i++)
        mid_claims += atomic_load(&ust_qpv(mids[i])->active);
    own_claims = atomic_load(&ust_qpv(q)->active);
    return low_put(q, mp);
}
static struct module_info seen_minfo = {.mi_idnum = 7104, .mi_idname = "seen", .mi_maxpsz = INFPSZ};
static struct qinit seen_init = {.qi_putp = seen_put, .qi_minfo = &seen_minfo};
static struct streamtab seen_info = {.st_rdinit = &seen_init, .st_wrinit = &seen_init};

static mblk_t *seqmsg(int seq)
{
    mblk_t *mp = allocb(1, BPRI_MED);
    CHECK(mp != NULL);
    *mp->b_wptr++ = (unsigned char)seq;
    return mp;
}

static void case_stale_claim(void)
{
    queue_t *rq = ust_qalloc(&up_info, D_MP, NULL);
    CHECK(rq != NULL);
    ust_qfree(rq);
    /* A claimer that loaded a link to rq before it was freed claims it now. */
    atomic_fetch_add(&ust_qpv(rq)->active, 1);
    queue_t *rq2 = ust_qalloc(&up_info, D_MP, NULL);
    CHECK(rq2 == rq); /* the pool gives the same pair back: a new incarnation */
    /* Its check of the link fails: it releases the claim again. */
    ust_qrelease(rq);
    CHECK_EQ(atomic_load(&ust_qpv(rq2)->active), 0);
    qprocson(rq2);
    if (atomic_load(&ust_qpv(rq2)->active) == 0)
        qprocsoff(rq2); /* would wait forever at -1 */
    ust_qfree(rq2);
    CHECK_NO_BLOCKS();
}

static void case_hold(void)
{
    queue_t *up = ust_qalloc(&up_info, D_MP, NULL);
    queue_t *low = ust_qalloc(&low_info, D_MP, NULL);
    CHECK(up != NULL && low != NULL);
    ust_qinsert(up, low); /* up's write queue -> low's write queue */
    qprocson(up);
    qprocson(low);
    atomic_store(&ngot, 0);

    put(WR(up), seqmsg(0));
    put(WR(up), seqmsg(1));
    CHECK_EQ(qsize(WR(up)), 2);
    qprocsoff(up);
    put(WR(up), seqmsg(2)); /* must not overtake 0 and 1 */
    CHECK_EQ(atomic_load(&ngot), 0);
    CHECK_EQ(qsize(WR(up)), 3);
    ust_qpass_held(WR(up));
    CHECK_EQ(qsize(WR(up)), 0);
    put(WR(up), seqmsg(3)); /* nothing held: straight on */
    CHECK_EQ(atomic_load(&ngot), 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(got[i], i);

    ust_qunlink(low);
    qprocsoff(low);
    ust_qfree(low);
    ust_qfree(up);
    CHECK_NO_BLOCKS();
}

static void case_empty_no_hold(void)
{
    queue_t *up = ust_qalloc(&up_info, D_MP, NULL);
    queue_t *low = ust_qalloc(&low_info, D_MP, NULL);
    CHECK(up != NULL && low != NULL);
    ust_qinsert(up, low);
    qprocson(up);
    qprocson(low);
    atomic_store(&ngot, 0);
    qprocsoff(up);
    put(WR(up), seqmsg(7));
    CHECK_EQ(atomic_load(&ngot), 1);
    CHECK_EQ(qsize(WR(up)), 0);
    ust_qunlink(low);
    qprocsoff(low);
    ust_qfree(low);
    ust_qfree(up);
    CHECK_NO_BLOCKS();
}

/* pass -> n queues procedures-off -> seen (write side); returns pass. */
static queue_t *through_stream(int n, queue_t **bottom)
{
    queue_t *up = ust_qalloc(&pass_info, D_MP, NULL);
    queue_t *low = ust_qalloc(&seen_info, D_MP, NULL);
    CHECK(up != NULL && low != NULL);
    ust_qinsert(up, low);
    for (int i = n - 1; i >= 0; i--) {
        queue_t *m = ust_qalloc(&up_info, D_MP, NULL); /* never turned on */
        CHECK(m != NULL);
        ust_qinsert(up, m);
        mids[i] = WR(m);
    }
    nmids = n;
    qprocson(up);
    qprocson(low);
    *bottom = low;
    return up;
}

static void through_free(queue_t *up, queue_t *low)
{
    ust_qunlink(up);
    qprocsoff(up);
    ust_qfree(up);
    for (int i = 0; i < nmids; i++) {
        ust_qunlink(RD(mids[i]));
        ust_qfree(RD(mids[i]));
    }
    if (low) {
        qprocsoff(low);
        ust_qfree(low);
    }
    nmids = 0;
}

static void case_pass_unclaimed(void)
{
    /* Two queues passed through (a pipe's twist): no claim on them. */
    queue_t *low, *up = through_stream(2, &low);
    atomic_store(&ngot, 0);
    put(WR(up), seqmsg(0));
    CHECK_EQ(atomic_load(&ngot), 1);
    CHECK_EQ(mid_claims, 0);
    CHECK_EQ(own_claims, 1);
    CHECK_EQ(atomic_load(&ust_qpv(WR(low))->active), 0); /* released after */

    /* The second one holds messages (procedures went off with a message in
     * it): what passes queues behind them, and goes on in order after. */
    mblk_t *held = seqmsg(1);
    __atomic_store_n(&ust_qpv(mids[1])->held, 1, __ATOMIC_RELAXED);
    CHECK(ust_qhold(mids[1], held));
    put(WR(up), seqmsg(2));
    CHECK_EQ(atomic_load(&ngot), 1);
    CHECK_EQ(qsize(mids[1]), 2);
    ust_qpass_held(mids[1]);
    CHECK_EQ(atomic_load(&ngot), 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(got[i], i);
    put(WR(up), seqmsg(3)); /* held cleared: unclaimed again */
    CHECK_EQ(atomic_load(&ngot), 4);
    CHECK_EQ(mid_claims, 0);
    through_free(up, low);
    CHECK_NO_BLOCKS();

    /* More than the walk's bound: the claimed way, delivered all the same. */
    up = through_stream(NMID, &low);
    atomic_store(&ngot, 0);
    put(WR(up), seqmsg(4));
    CHECK_EQ(atomic_load(&ngot), 1);
    CHECK_EQ(got[0], 4);
    CHECK_EQ(own_claims, 1);

    /* The end of the stream after queues passed through: freed. */
    ust_qunlink(low);
    qprocsoff(low);
    ust_qfree(low);
    put(WR(up), seqmsg(5));
    CHECK_EQ(atomic_load(&ngot), 1);
    for (int i = 0; i < NMID; i++)
        CHECK_EQ(atomic_load(&ust_qpv(mids[i])->active), 0);
    through_free(up, NULL);
    CHECK_NO_BLOCKS();
}

int main(void)
{
    case_stale_claim();
    case_hold();
    case_empty_no_hold();
    case_pass_unclaimed();
    return CHECK_RESULT();
}
