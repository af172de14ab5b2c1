/* SPDX-License-Identifier: MIT */
/*
 * test_flow.c -- flow control (src/core/flow.c): water marks with hysteresis,
 * canput/bcanput and their *next forms, back-enabling.
 *
 * Queue pairs come from ust_qalloc (D_MP, no perimeter) and are plumbed with
 * ust_qinsert; only their write sides carry traffic.  Each pair plays one
 * role, chosen through q_ptr:
 *   HOLD     put = putq, service procedure does nothing: a queue that only
 *            the test drains (with getq), so its count is exactly controlled;
 *   FORWARD  put = putq, service procedure moves messages on while
 *            bcanputnext() allows their band (high priority always), else
 *            putbq and return -- the canonical flow-controlled module;
 *   PASS     no service procedure, put = putnext (a module flow control
 *            looks through).
 * Service procedure runs are counted per pair.
 *
 * Cases:
 *   1 canput(9F), queue(9S) QFULL/QWANTW: full at hiwat, full while draining
 *     above lowat, clear at <= lowat; canput fails when full and records the
 *     waiting writer
 *   2 strqset(9F): new water marks re-evaluate QFULL and back-enable
 *   3 canputnext(9F), back-enabling: A's service procedure runs exactly when
 *     B drains to its low-water mark after a canput failed, once per drain
 *   4 bcanput(9F)/bcanputnext(9F): each band is flow controlled on its own,
 *     band back-enabling
 *   5 putq(9F)/canput(9F): high-priority messages are never blocked
 *   6 canputnext(9F)/bcanputnext(9F): queues without a service procedure are
 *     looked through, to the nearest one that has one; back-enabling skips them
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

enum role { HOLD = 1, FORWARD, PASS };

struct fq {
    enum role role;
    atomic_int srv_runs;
};

static int fq_put(queue_t *q, mblk_t *mp)
{
    if (!putq(q, mp))
        freemsg(mp);
    return 0;
}

static int fq_srv(queue_t *q)
{
    struct fq *f = q->q_ptr;
    mblk_t *mp;

    atomic_fetch_add(&f->srv_runs, 1);
    if (f->role != FORWARD)
        return 0;
    while ((mp = getq(q)) != NULL) {
        if (mp->b_datap->db_type >= QPCTL || bcanputnext(q, mp->b_band)) {
            putnext(q, mp);
        } else {
            putbq(q, mp);
            break;
        }
    }
    return 0;
}

static int pass_put(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info fq_minfo = {
    .mi_idnum = 7002,
    .mi_idname = "fq",
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 1000,
    .mi_lowat = 200,
};

static struct qinit fq_init = {.qi_putp = fq_put, .qi_srvp = fq_srv, .qi_minfo = &fq_minfo};
static struct streamtab fq_info = {.st_rdinit = &fq_init, .st_wrinit = &fq_init};
static struct qinit pass_init = {.qi_putp = pass_put, .qi_minfo = &fq_minfo};
static struct streamtab pass_info = {.st_rdinit = &pass_init, .st_wrinit = &pass_init};

/* A pair in the given role, water marks hiwat/lowat on both sides, procedures
 * on.  Returns its write queue. */
static queue_t *mkq(enum role role, size_t hiwat, size_t lowat)
{
    queue_t *rq = ust_qalloc(role == PASS ? &pass_info : &fq_info, D_MP, NULL);
    struct fq *f = calloc(1, sizeof(*f));
    CHECK(rq != NULL && f != NULL);
    f->role = role;
    for (int i = 0; i < 2; i++) {
        queue_t *q = i ? WR(rq) : rq;
        q->q_ptr = f;
        CHECK_EQ(strqset(q, QLOWAT, 0, 0), 0);
        CHECK_EQ(strqset(q, QHIWAT, 0, (intptr_t)hiwat), 0);
        CHECK_EQ(strqset(q, QLOWAT, 0, (intptr_t)lowat), 0);
    }
    qprocson(rq);
    return WR(rq);
}

static int runs(queue_t *q)
{
    return atomic_load(&((struct fq *)q->q_ptr)->srv_runs);
}

/* Stack pairs: qs[0] on top, qs[n-1] at the bottom (write sides go down). */
static void chain(queue_t **qs, int n)
{
    for (int i = n - 1; i > 0; i--) /* each goes directly below the top */
        ust_qinsert(RD(qs[0]), RD(qs[i]));
}

static void unchain_free(queue_t **qs, int n)
{
    for (int i = 0; i < n; i++)
        qprocsoff(qs[i]);
    for (int i = n - 1; i > 0; i--)
        ust_qunlink(RD(qs[i]));
    for (int i = 0; i < n; i++) {
        struct fq *f = qs[i]->q_ptr;
        ust_qfree(RD(qs[i]));
        free(f);
    }
}

static mblk_t *msg(unsigned char type, unsigned char band, size_t len)
{
    mblk_t *mp = th_msg(type, band, NULL, len);
    CHECK(mp != NULL);
    return mp;
}

static int full(queue_t *q)
{
    return (ust_qflags(q) & QFULL) != 0;
}

static uint_t bflag(queue_t *q, unsigned char band)
{
    uint_t fl = 0;
    CHECK_EQ(strqget(q, QFLAG, band, &fl), 0);
    return fl;
}

static size_t count(queue_t *q, unsigned char band)
{
    size_t n = 0;
    CHECK_EQ(strqget(q, QCOUNT, band, &n), 0);
    return n;
}

static void quiesce(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
}

static int wait_runs(queue_t *q, int want)
{
    for (int i = 0; i < 5000 && runs(q) < want; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return runs(q) >= want;
}

/* Take one message off q (the test playing the reader) and free it. */
static void drain1(queue_t *q)
{
    mblk_t *mp = getq(q);
    CHECK(mp != NULL);
    freemsg(mp);
}

/* 1. canput(9F), queue(9S): hysteresis of QFULL; QWANTW set by a failed canput
 *    and cleared when the queue drains to its low-water mark. */
static void case_hysteresis(void)
{
    queue_t *q = mkq(HOLD, 1000, 200);
    for (int i = 1; i <= 10; i++) {
        CHECK_EQ(canput(q), 1);
        putq(q, msg(M_DATA, 0, 100));
        CHECK_EQ(full(q), i == 10); /* full exactly at count 1000 == hiwat */
    }
    CHECK((ust_qflags(q) & QWANTW) == 0); /* successful canputs do not want */
    CHECK_EQ(canput(q), 0);
    CHECK(ust_qflags(q) & QWANTW);
    for (int i = 9; i >= 3; i--) { /* 900 .. 300 (> lowat): still full */
        drain1(q);
        CHECK_EQ(count(q, 0), (size_t)i * 100);
        CHECK(full(q));
        CHECK_EQ(canput(q), 0);
    }
    drain1(q); /* 200 == lowat: clear */
    CHECK_EQ(count(q, 0), 200);
    CHECK(!full(q));
    CHECK((ust_qflags(q) & QWANTW) == 0);
    CHECK_EQ(canput(q), 1);
    /* filling again: not full until hiwat again (no flapping at lowat) */
    for (int i = 0; i < 7; i++)
        putq(q, msg(M_DATA, 0, 100));
    CHECK_EQ(count(q, 0), 900);
    CHECK(!full(q));
    putq(q, msg(M_DATA, 0, 150));
    CHECK(full(q)); /* past hiwat counts as well */
    flushq(q, FLUSHALL);
    CHECK(!full(q));
    CHECK_EQ(canput(q), 1);
    unchain_free(&q, 1);
}

/* 2. strqset(9F): lowering hiwat under the count makes the queue full; raising
 *    it again keeps it full above lowat (hysteresis); raising lowat to the
 *    count clears it and back-enables the waiting writer. */
static void case_strqset_marks(void)
{
    queue_t *qs[2] = {mkq(FORWARD, 100000, 10), mkq(HOLD, 1000, 200)};
    chain(qs, 2);
    queue_t *b = qs[1];
    for (int i = 0; i < 5; i++)
        putq(b, msg(M_DATA, 0, 100));
    CHECK(!full(b));
    CHECK_EQ(strqset(b, QHIWAT, 0, 400), 0);
    CHECK(full(b));
    CHECK_EQ(canputnext(qs[0]), 0);
    CHECK(ust_qflags(b) & QWANTW);
    CHECK_EQ(strqset(b, QHIWAT, 0, 2000), 0);
    CHECK(full(b)); /* 500 > lowat 200: stays full */
    quiesce();
    int r = runs(qs[0]);
    CHECK_EQ(strqset(b, QLOWAT, 0, 500), 0);
    CHECK(!full(b));
    CHECK((ust_qflags(b) & QWANTW) == 0);
    CHECK(wait_runs(qs[0], r + 1)); /* back-enabled */
    quiesce();
    CHECK_EQ(runs(qs[0]), r + 1);
    unchain_free(qs, 2);
}

/* 3. canputnext(9F), back-enabling: A -> B, both with service procedures.  A
 *    forwards until B is full, then waits; A runs again exactly when B has
 *    drained to its low-water mark, once per drain -- and not at all if no
 *    writer found B full. */
static void case_backenable(void)
{
    queue_t *qs[2] = {mkq(FORWARD, 100000, 10), mkq(HOLD, 1000, 200)};
    chain(qs, 2);
    queue_t *a = qs[0], *b = qs[1];
    for (int i = 0; i < 50; i++)
        putq(a, msg(M_DATA, 0, 100));
    quiesce();
    CHECK_EQ(count(b, 0), 1000);
    CHECK(full(b));
    CHECK(ust_qflags(b) & QWANTW);
    CHECK_EQ(qsize(a), 40);
    for (int cycle = 0; cycle < 3; cycle++) {
        int r = runs(a);
        for (int i = 0; i < 7; i++) /* 1000 -> 300 */
            drain1(b);
        quiesce();
        CHECK_EQ(runs(a), r); /* still above lowat: A not enabled */
        CHECK(ust_qflags(b) & QWANTW);
        drain1(b); /* 200 == lowat */
        CHECK(wait_runs(a, r + 1));
        quiesce();
        CHECK_EQ(runs(a), r + 1); /* exactly once */
        CHECK(ust_qflags(a) & QBACK);
        CHECK_EQ(count(b, 0), 1000); /* A refilled B ... */
        CHECK_EQ(qsize(a), 40 - 8 * (cycle + 1)); /* ... with 8 messages */
        CHECK(ust_qflags(b) & QWANTW);            /* and waits again */
    }
    /* A has nothing left: the back-enable still comes, A finds nothing */
    flushq(a, FLUSHALL);
    int r = runs(a);
    for (int i = 0; i < 8; i++)
        drain1(b);
    CHECK(wait_runs(a, r + 1));
    quiesce();
    CHECK_EQ(runs(a), r + 1);
    CHECK((ust_qflags(b) & QWANTW) == 0);
    /* B full without any writer having asked: no back-enable on draining */
    flushq(b, FLUSHALL);
    for (int i = 0; i < 12; i++)
        putq(b, msg(M_DATA, 0, 100));
    CHECK(full(b));
    r = runs(a);
    while (qsize(b) > 0)
        drain1(b);
    quiesce();
    CHECK_EQ(runs(a), r);
    unchain_free(qs, 2);
}

/* 4. bcanput(9F)/bcanputnext(9F), qband(9S): bands are flow controlled
 *    independently of band 0 and of each other; band back-enabling. */
static void case_bands(void)
{
    queue_t *q = mkq(HOLD, 1000, 200);
    CHECK_EQ(bcanput(q, 1), 1); /* a band not yet allocated is not full */
    for (int i = 0; i < 10; i++)
        putq(q, msg(M_DATA, 0, 100));
    CHECK_EQ(canput(q), 0);
    CHECK_EQ(bcanput(q, 0), 0);
    CHECK_EQ(bcanput(q, 1), 1);
    CHECK_EQ(bcanput(q, 7), 1);
    for (int i = 0; i < 10; i++)
        putq(q, msg(M_DATA, 1, 100));
    CHECK(bflag(q, 1) & QB_FULL);
    CHECK_EQ(bcanput(q, 1), 0);
    CHECK(bflag(q, 1) & QB_WANTW);
    CHECK_EQ(bcanput(q, 2), 1);
    CHECK((bflag(q, 2) & (QB_FULL | QB_WANTW)) == 0);
    /* band 0 drains completely: band 1 stays full */
    flushband(q, 0, FLUSHALL);
    CHECK(!full(q));
    CHECK_EQ(canput(q), 1);
    CHECK_EQ(bcanput(q, 1), 0);
    for (int i = 9; i >= 3; i--) { /* band 1: 900 .. 300 */
        drain1(q);
        CHECK_EQ(count(q, 1), (size_t)i * 100);
        CHECK(bflag(q, 1) & QB_FULL);
    }
    drain1(q);
    CHECK_EQ(count(q, 1), 200);
    CHECK((bflag(q, 1) & (QB_FULL | QB_WANTW)) == 0);
    CHECK_EQ(bcanput(q, 1), 1);
    /* per-band water marks */
    CHECK_EQ(strqset(q, QHIWAT, 3, 50), 0);
    CHECK_EQ(strqset(q, QLOWAT, 3, 0), 0);
    putq(q, msg(M_DATA, 3, 60));
    CHECK_EQ(bcanput(q, 3), 0);
    CHECK_EQ(bcanput(q, 1), 1);
    CHECK_EQ(canput(q), 1);
    flushq(q, FLUSHALL);
    CHECK_EQ(bcanput(q, 3), 1);
    unchain_free(&q, 1);

    /* band back-enabling through a chain A -> B */
    queue_t *qs[2] = {mkq(FORWARD, 100000, 10), mkq(HOLD, 1000, 200)};
    chain(qs, 2);
    queue_t *a = qs[0], *b = qs[1];
    for (int i = 0; i < 20; i++)
        putq(a, msg(M_DATA, 1, 100));
    quiesce();
    CHECK_EQ(count(b, 1), 1000);
    CHECK_EQ(bcanputnext(a, 1), 0);
    CHECK_EQ(bcanputnext(a, 0), 1);
    CHECK_EQ(canputnext(a), 1);
    CHECK_EQ(bcanputnext(a, 2), 1);
    CHECK_EQ(qsize(a), 10);
    int r = runs(a);
    for (int i = 0; i < 7; i++)
        drain1(b);
    quiesce();
    CHECK_EQ(runs(a), r);
    drain1(b);
    CHECK(wait_runs(a, r + 1));
    quiesce();
    CHECK_EQ(runs(a), r + 1);
    CHECK_EQ(count(b, 1), 1000);
    CHECK_EQ(qsize(a), 2);
    unchain_free(qs, 2);
}

/* 5. putq(9F), canput(9F): high-priority messages are not flow controlled: one
 *    put into a blocked module is scheduled at once (even though the reader is
 *    not waiting), taken first, passed into a full queue, and lands in front. */
static void case_high_priority(void)
{
    queue_t *qs[2] = {mkq(FORWARD, 100000, 10), mkq(HOLD, 1000, 200)};
    chain(qs, 2);
    queue_t *a = qs[0], *b = qs[1];
    for (int i = 0; i < 15; i++)
        putq(a, msg(M_DATA, 0, 100));
    quiesce();
    CHECK(full(b));
    CHECK_EQ(qsize(a), 5);
    CHECK((ust_qflags(a) & QWANTR) == 0);
    int r = runs(a);
    mblk_t *pc = msg(M_PCPROTO, 0, 100);
    CHECK_EQ(putq(a, pc), 1);
    CHECK(wait_runs(a, r + 1));
    quiesce();
    CHECK(b->q_first == pc); /* passed into the full queue, at its front */
    CHECK_EQ(qsize(a), 5);   /* the ordinary messages still wait */
    CHECK_EQ(qsize(b), 11);
    /* putq of high-priority messages into a full queue always succeeds */
    for (int i = 0; i < 5; i++)
        CHECK_EQ(putq(b, msg(M_PCPROTO, 0, 100)), 1);
    CHECK_EQ(qsize(b), 16);
    unchain_free(qs, 2);
}

/* 6. canputnext(9F)/bcanputnext(9F): A -> N (no service procedure) -> C.
 *    Flow control is decided by C, the nearest queue with a service
 *    procedure; the waiting writer is recorded on C, and C's back-enable
 *    skips N to reach A.  At the end of a stream with no service procedure at
 *    all, canputnext is always true. */
static void case_skip(void)
{
    queue_t *qs[3] = {mkq(FORWARD, 100000, 10), mkq(PASS, 100, 10), mkq(HOLD, 1000, 200)};
    chain(qs, 3);
    queue_t *a = qs[0], *n = qs[1], *c = qs[2];
    CHECK_EQ(canputnext(a), 1);
    for (int i = 0; i < 10; i++)
        putq(c, msg(M_DATA, 0, 100));
    CHECK(full(c));
    CHECK_EQ(canputnext(a), 0);
    CHECK_EQ(canputnext(n), 0);
    CHECK_EQ(canput(n), 0);
    CHECK(ust_qflags(c) & QWANTW);
    CHECK((ust_qflags(n) & (QWANTW | QFULL)) == 0);
    /* bands through N */
    CHECK_EQ(strqset(c, QHIWAT, 2, 100), 0);
    putq(c, msg(M_DATA, 2, 100));
    CHECK_EQ(bcanputnext(a, 2), 0);
    CHECK_EQ(bcanputnext(a, 1), 1);
    CHECK(bflag(c, 2) & QB_WANTW);
    flushband(c, 2, FLUSHALL);
    /* A blocks on C; draining C to lowat back-enables A past N */
    for (int i = 0; i < 5; i++)
        putq(a, msg(M_DATA, 0, 100));
    quiesce();
    CHECK_EQ(qsize(a), 5);
    int r = runs(a);
    for (int i = 0; i < 8; i++)
        drain1(c);
    CHECK(wait_runs(a, r + 1));
    quiesce();
    CHECK_EQ(qsize(a), 0);
    CHECK_EQ(qsize(c), 7);
    unchain_free(qs, 3);

    /* A -> N, nothing below N with a service procedure */
    queue_t *q2[2] = {mkq(FORWARD, 100000, 10), mkq(PASS, 100, 10)};
    chain(q2, 2);
    CHECK_EQ(canputnext(q2[0]), 1);
    CHECK_EQ(bcanputnext(q2[0], 3), 1);
    unchain_free(q2, 2);
}

int main(void)
{
    case_hysteresis();
    case_strqset_marks();
    case_backenable();
    case_bands();
    case_high_priority();
    case_skip();
    th_assert_no_blocks();
    return CHECK_RESULT();
}
