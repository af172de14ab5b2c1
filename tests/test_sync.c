/* SPDX-License-Identifier: MIT */
/*
 * test_sync.c -- perimeters (src/core/perim.c): the exclusion each MT level
 * promises, deferral instead of waiting, qwriter, and timeouts inside the
 * perimeter.
 *
 * One module implementation is registered under several names, one per MT
 * level.  Its put procedure keeps in-procedure counters -- per queue, per
 * queue pair, per module, and for all legacy modules together -- and records
 * the highest value each reached.  A perimeter that works keeps the counter of
 * its scope at 1; a scope with no perimeter is shown to admit two threads at
 * once (a "meet" message waits inside until a second thread has entered),
 * which also proves that the exclusion checks could see an overlap.
 * Pairs are allocated with ust_qalloc from the registry entry (so that
 * D_MTPERMOD and D_MTOUTPERIM find their module-wide perimeters) and driven
 * with put(9F) from several threads.
 *
 * Cases:
 *   1 D_MP: no perimeter; two threads inside one queue's put procedure at once
 *   2 D_MTPERQ: never two threads in one queue; both queues of a pair at once
 *   3 D_MTQPAIR: never two threads in one pair; two pairs at once
 *   4 D_MTPERMOD: never two threads in any instance of the module
 *   5 D_MTOUTPERIM + D_MTQPAIR: inner exclusion per pair, instances at once;
 *     qwriter(PERIM_OUTER) excludes every instance
 *   6 legacy (no D_MP): never two threads in any legacy module
 *   7 deferral: a D_MTQPAIR write put that loops back (through a driver's
 *     qreply) into its own read side does not deadlock; the message arrives
 *   8 order: messages that find the perimeter busy are deferred (the putter
 *     does not wait) and run in order
 *   9 qwriter(9F) PERIM_INNER from a shared (D_MTPUTSHARED) put runs alone
 *   10 qtimeout(9F): the callback runs inside the perimeter (waits for a put
 *      that holds it), without holding up the timer thread
 *   11 quntimeout(9F) from a close routine (which holds the perimeter) does
 *      not deadlock, whether the timeout is pending or waiting for the
 *      perimeter; the callback never runs
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

static int scale(int n)
{
    return (UNDER_TSAN || getenv("USTREAMS_TSAN")) ? n / 4 : n;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int wait_ge(atomic_int *v, int want, long ms)
{
    long long end = now_ms() + ms;
    while (atomic_load(v) < want) {
        if (now_ms() > end)
            return 0;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

static void note_max(atomic_int *max, int v)
{
    int m = atomic_load(max);
    while (v > m && !atomic_compare_exchange_weak(max, &m, v))
        ;
}

/* ------------------------------------------------------------------------ */
/* The module                                                               */
/* ------------------------------------------------------------------------ */
struct mstat {
    atomic_int in_mod, max_mod; /* threads inside any instance */
};

struct pst {
    struct mstat *m;
    int legacy;
    atomic_int in_q[2], max_q[2]; /* [0] read queue, [1] write queue */
    atomic_int in_pair, max_pair;
};

static atomic_int in_legacy, max_legacy; /* every legacy module together */
static atomic_int processed;             /* put procedure calls finished */
static atomic_int violations;            /* exclusion broken, order broken */
static atomic_int writer_in;             /* a qwriter function is running */
static atomic_int writers_run;
static atomic_int hold_release, holding;
static atomic_int loop_arrived;
static atomic_int meet_arrived;
static unsigned last_seq[4]; /* order test: inside the perimeter only */

/* Message kinds (first data byte). */
#define K_NORMAL 'N'
#define K_MEET 'M'   /* wait until the other meet message is inside too */
#define K_HOLD 'H'   /* stay inside until hold_release */
#define K_SEQ 'S'    /* byte 1 producer, bytes 4..7 sequence number */
#define K_WINNER 'W' /* qwriter(PERIM_INNER) */
#define K_WOUTER 'O' /* qwriter(PERIM_OUTER) */
#define K_LOOP 'L'   /* write side: putnext; read side: count arrival */

static void spin(void)
{
    for (volatile int i = 0; i < 200; i++)
        ;
}

static void wfunc(queue_t *q, mblk_t *mp)
{
    struct pst *p = q->q_ptr;
    int outer = mp->b_rptr[0] == K_WOUTER;
    if (atomic_exchange(&writer_in, 1))
        atomic_fetch_add(&violations, 1);
    for (int i = 0; i < 3; i++) {
        if (outer ? atomic_load(&p->m->in_mod) != 0 : atomic_load(&p->in_pair) != 0)
            atomic_fetch_add(&violations, 1);
        spin();
    }
    atomic_store(&writer_in, 0);
    atomic_fetch_add(&writers_run, 1);
    freemsg(mp);
}

static int sy_put(queue_t *q, mblk_t *mp)
{
    struct pst *p = q->q_ptr;
    int side = (ust_qflags(q) & QREADR) ? 0 : 1;
    unsigned char *d = mp->b_rptr;

    note_max(&p->max_q[side], atomic_fetch_add(&p->in_q[side], 1) + 1);
    note_max(&p->max_pair, atomic_fetch_add(&p->in_pair, 1) + 1);
    note_max(&p->m->max_mod, atomic_fetch_add(&p->m->in_mod, 1) + 1);
    if (p->legacy)
        note_max(&max_legacy, atomic_fetch_add(&in_legacy, 1) + 1);
    if (atomic_load(&writer_in))
        atomic_fetch_add(&violations, 1);

    switch (d[0]) {
    case K_MEET: /* both meet messages are inside (and counted) at once */
        atomic_fetch_add(&meet_arrived, 1);
        wait_ge(&meet_arrived, 2, 5000);
        break;
    case K_HOLD:
        atomic_store(&holding, 1);
        wait_ge(&hold_release, 1, 10000);
        atomic_store(&holding, 0);
        break;
    case K_SEQ: {
        unsigned prod = d[1], seq;
        memcpy(&seq, d + 4, sizeof(seq));
        if (prod >= 4 || seq != last_seq[prod] + 1)
            atomic_fetch_add(&violations, 1);
        else
            last_seq[prod] = seq;
        break;
    }
    case K_WINNER:
        qwriter(q, mp, wfunc, PERIM_INNER);
        mp = NULL;
        break;
    case K_WOUTER:
        qwriter(q, mp, wfunc, PERIM_OUTER);
        mp = NULL;
        break;
    case K_LOOP:
        if (side == 1) {
            putnext(q, mp); /* comes back up into our own read side */
            mp = NULL;
        } else {
            atomic_fetch_add(&loop_arrived, 1);
        }
        break;
    default:
        spin();
        break;
    }

    if (p->legacy)
        atomic_fetch_sub(&in_legacy, 1);
    atomic_fetch_sub(&p->m->in_mod, 1);
    atomic_fetch_sub(&p->in_pair, 1);
    atomic_fetch_sub(&p->in_q[side], 1);
    atomic_fetch_add(&processed, 1);
    if (mp)
        freemsg(mp);
    return 0;
}

static int sy_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp, (void)oflag, (void)sflag, (void)crp;
    qprocson(q);
    return 0;
}

static int sy_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag, (void)crp;
    qprocsoff(q);
    return 0;
}

static struct module_info sy_minfo = {
    .mi_idnum = 7004, .mi_idname = "sy", .mi_maxpsz = INFPSZ, .mi_hiwat = 1 << 20, .mi_lowat = 0};
static struct qinit sy_rinit = {
    .qi_putp = sy_put, .qi_qopen = sy_open, .qi_qclose = sy_close, .qi_minfo = &sy_minfo};
static struct qinit sy_winit = {.qi_putp = sy_put, .qi_minfo = &sy_minfo};
static struct streamtab sy_info = {.st_rdinit = &sy_rinit, .st_wrinit = &sy_winit};

enum { M_MP, M_PERQ, M_QPAIR, M_PERMOD, M_OUTP, M_LEG1, M_LEG2, M_SHPUT, M_NMODS };
static struct fmodsw sy_mods[M_NMODS] = {
    [M_MP] = {.f_name = "sy_mp", .f_str = &sy_info, .f_flag = D_MP},
    [M_PERQ] = {.f_name = "sy_perq", .f_str = &sy_info, .f_flag = D_MP | D_MTPERQ},
    [M_QPAIR] = {.f_name = "sy_qpair", .f_str = &sy_info, .f_flag = D_MP | D_MTQPAIR},
    [M_PERMOD] = {.f_name = "sy_pmod", .f_str = &sy_info, .f_flag = D_MP | D_MTPERMOD},
    [M_OUTP] = {.f_name = "sy_outp",
                .f_str = &sy_info,
                .f_flag = D_MP | D_MTOUTPERIM | D_MTQPAIR | D_MTOCEXCL},
    [M_LEG1] = {.f_name = "sy_leg1", .f_str = &sy_info, .f_flag = 0},
    [M_LEG2] = {.f_name = "sy_leg2", .f_str = &sy_info, .f_flag = 0},
    [M_SHPUT] = {.f_name = "sy_shput",
                 .f_str = &sy_info,
                 .f_flag = D_MP | D_MTQPAIR | D_MTPUTSHARED},
};
static struct mstat mstats[M_NMODS];

/* A pair of module `mod`, procedures on; returns the read queue. */
static queue_t *mkpair(int mod)
{
    struct ust_modent *ent = ust_reg_find(sy_mods[mod].f_name, UST_MODULE);
    CHECK(ent != NULL);
    if (!ent)
        exit(1);
    queue_t *rq = ust_qalloc(ent->str, ent->flag, ent);
    ust_reg_rele(ent);
    CHECK(rq != NULL);
    struct pst *p = calloc(1, sizeof(*p));
    p->m = &mstats[mod];
    p->legacy = !(sy_mods[mod].f_flag & D_MP);
    rq->q_ptr = WR(rq)->q_ptr = p;
    qprocson(rq);
    return rq;
}

static void freepair(queue_t *rq)
{
    struct pst *p = rq->q_ptr;
    qprocsoff(rq);
    ust_qfree(rq);
    free(p);
}

static struct pst *pst(queue_t *q)
{
    return q->q_ptr;
}

static mblk_t *kmsg(unsigned char kind, unsigned char arg)
{
    unsigned char d[8] = {kind, arg, 0, 0, 0, 0, 0, 0};
    mblk_t *mp = th_msg(M_DATA, 0, d, sizeof(d));
    if (mp == NULL) {
        fprintf(stderr, "test_sync: allocb failed\n");
        abort();
    }
    return mp;
}

/* ------------------------------------------------------------------------ */
/* Drivers of the procedures                                                */
/* ------------------------------------------------------------------------ */
struct drive {
    queue_t **qs; /* target queues (put procedures) */
    int nq;
    int n;        /* puts */
    unsigned seed;
    int writer_every; /* every n-th message is a qwriter request (0: none) */
    unsigned char writer_kind;
    atomic_int *writers_sent;
};

static void *drive_main(void *arg)
{
    struct drive *dr = arg;
    unsigned seed = dr->seed;
    for (int i = 0; i < dr->n; i++) {
        queue_t *q = dr->qs[rand_r(&seed) % (unsigned)dr->nq];
        unsigned char kind = K_NORMAL;
        if (dr->writer_every && i % dr->writer_every == 0) {
            kind = dr->writer_kind;
            atomic_fetch_add(dr->writers_sent, 1);
        }
        put(q, kmsg(kind, 0));
    }
    return NULL;
}

/* Hammer the queues qs from nthreads threads; wait until every put ran. */
static void hammer(queue_t **qs, int nq, int nthreads, int n, int writer_every,
                   unsigned char writer_kind)
{
    pthread_t t[8];
    struct drive dr[8];
    atomic_int sent = 0;
    atomic_store(&processed, 0);
    atomic_store(&writers_run, 0);
    for (int i = 0; i < nthreads; i++) {
        dr[i] = (struct drive){qs, nq, n, 1234u + (unsigned)i, writer_every, writer_kind, &sent};
        CHECK_EQ(pthread_create(&t[i], NULL, drive_main, &dr[i]), 0);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    CHECK(wait_ge(&processed, nthreads * n, 30000));
    CHECK(wait_ge(&writers_run, atomic_load(&sent), 30000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&processed), nthreads * n);
    CHECK_EQ(atomic_load(&writers_run), atomic_load(&sent));
}

static void *meet_main(void *arg)
{
    put(arg, kmsg(K_MEET, 0));
    return NULL;
}

/* Put a meet message into q1 and q2 from two threads at once: if nothing
 * excludes them, both are inside together. */
static void meet(queue_t *q1, queue_t *q2)
{
    pthread_t t[2];
    queue_t *q[2] = {q1, q2};
    atomic_store(&meet_arrived, 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, meet_main, q[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(ustreams_quiesce(10000), 0);
}

static void reset_max(queue_t **rqs, int n)
{
    for (int i = 0; i < n; i++) {
        struct pst *p = pst(rqs[i]);
        atomic_store(&p->max_q[0], 0);
        atomic_store(&p->max_q[1], 0);
        atomic_store(&p->max_pair, 0);
        atomic_store(&p->m->max_mod, 0);
    }
    atomic_store(&max_legacy, 0);
}

/* Every queue of the pairs rqs, read and write. */
static int all_queues(queue_t **rqs, int n, queue_t **out)
{
    for (int i = 0; i < n; i++) {
        out[2 * i] = rqs[i];
        out[2 * i + 1] = WR(rqs[i]);
    }
    return 2 * n;
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                    */
/* ------------------------------------------------------------------------ */

/* 1. D_MP (mt-streams(9F)): the module is MT safe; no perimeter -- two threads
 *    are inside the same put procedure at once. */
static void case_mp(void)
{
    queue_t *rq = mkpair(M_MP);
    meet(WR(rq), WR(rq));
    CHECK_EQ(atomic_load(&pst(rq)->max_q[1]), 2);
    queue_t *qs[2];
    all_queues(&rq, 1, qs);
    hammer(qs, 2, 3, scale(20000), 0, 0);
    CHECK_EQ(atomic_load(&violations), 0);
    freepair(rq);
}

/* 2. D_MTPERQ: an inner perimeter per queue -- never two threads in one
 *    queue's procedures; the read and write queue of a pair run at once. */
static void case_perq(void)
{
    queue_t *rq[2] = {mkpair(M_PERQ), mkpair(M_PERQ)};
    meet(rq[0], WR(rq[0]));
    CHECK_EQ(atomic_load(&pst(rq[0])->max_pair), 2);
    reset_max(rq, 2);
    queue_t *qs[4];
    all_queues(rq, 2, qs);
    hammer(qs, 4, 3, scale(20000), 0, 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(atomic_load(&pst(rq[i])->max_q[0]), 1);
        CHECK_EQ(atomic_load(&pst(rq[i])->max_q[1]), 1);
    }
    CHECK_EQ(atomic_load(&violations), 0);
    freepair(rq[0]);
    freepair(rq[1]);
}

/* 3. D_MTQPAIR: an inner perimeter per queue pair -- never two threads in the
 *    read and write procedures of one pair; two pairs run at once. */
static void case_qpair(void)
{
    queue_t *rq[2] = {mkpair(M_QPAIR), mkpair(M_QPAIR)};
    meet(WR(rq[0]), WR(rq[1]));
    CHECK_EQ(atomic_load(&mstats[M_QPAIR].max_mod), 2);
    reset_max(rq, 2);
    queue_t *qs[4];
    all_queues(rq, 2, qs);
    hammer(qs, 4, 3, scale(20000), 0, 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(atomic_load(&pst(rq[i])->max_pair), 1);
    CHECK_EQ(atomic_load(&violations), 0);
    freepair(rq[0]);
    freepair(rq[1]);
}

/* 4. D_MTPERMOD: one inner perimeter for every instance of the module -- never
 *    two threads in any of them. */
static void case_permod(void)
{
    queue_t *rq[3] = {mkpair(M_PERMOD), mkpair(M_PERMOD), mkpair(M_PERMOD)};
    queue_t *qs[6];
    all_queues(rq, 3, qs);
    hammer(qs, 6, 3, scale(20000), 0, 0);
    CHECK_EQ(atomic_load(&mstats[M_PERMOD].max_mod), 1);
    CHECK_EQ(atomic_load(&violations), 0);
    for (int i = 0; i < 3; i++)
        freepair(rq[i]);
}

/* 5. D_MTOUTPERIM with a D_MTQPAIR inner perimeter: put procedures enter the
 *    outer perimeter shared -- exclusion per pair, instances at once;
 *    qwriter(9F) PERIM_OUTER runs with nothing else inside any instance. */
static void case_outer(void)
{
    queue_t *rq[2] = {mkpair(M_OUTP), mkpair(M_OUTP)};
    meet(WR(rq[0]), WR(rq[1]));
    CHECK_EQ(atomic_load(&mstats[M_OUTP].max_mod), 2);
    reset_max(rq, 2);
    queue_t *qs[4];
    all_queues(rq, 2, qs);
    hammer(qs, 4, 3, scale(20000), 50, K_WOUTER);
    CHECK(atomic_load(&writers_run) > 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(atomic_load(&pst(rq[i])->max_pair), 1);
    CHECK_EQ(atomic_load(&violations), 0);
    freepair(rq[0]);
    freepair(rq[1]);
}

/* 6. Legacy modules (no D_MP): all of them share one perimeter -- never two
 *    threads in any legacy module, whatever the module or instance. */
static void case_legacy(void)
{
    queue_t *rq[4] = {mkpair(M_LEG1), mkpair(M_LEG1), mkpair(M_LEG2), mkpair(M_LEG2)};
    queue_t *qs[8];
    all_queues(rq, 4, qs);
    hammer(qs, 8, 3, scale(20000), 0, 0);
    CHECK_EQ(atomic_load(&max_legacy), 1);
    CHECK_EQ(atomic_load(&violations), 0);
    for (int i = 0; i < 4; i++)
        freepair(rq[i]);
}

/* ---- 7: a loop-back driver under a D_MTQPAIR module ---- */
static int lb_wput(queue_t *q, mblk_t *mp)
{
    qreply(q, mp);
    return 0;
}
static int lb_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}
static struct qinit lb_rinit = {.qi_putp = lb_rput, .qi_minfo = &sy_minfo};
static struct qinit lb_winit = {.qi_putp = lb_wput, .qi_minfo = &sy_minfo};
static struct streamtab lb_info = {.st_rdinit = &lb_rinit, .st_wrinit = &lb_winit};

/* 7. put(9F)/qreply(9F) with D_MTQPAIR: the write put procedure sends a
 *    message down to a driver that turns it around into the module's own read
 *    side while the write put still holds the pair's perimeter.  The read put
 *    is deferred (not waited for), runs after the write put has left, and the
 *    message arrives. */
static void case_loopback(void)
{
    queue_t *x = mkpair(M_QPAIR);
    queue_t *e = ust_qalloc(&lb_info, D_MP, NULL);
    CHECK(e != NULL);
    qprocson(e);
    ust_qinsert(x, e);
    reset_max(&x, 1);
    atomic_store(&loop_arrived, 0);
    int n = scale(2000);
    for (int i = 0; i < n; i++)
        put(WR(x), kmsg(K_LOOP, 0));
    CHECK(wait_ge(&loop_arrived, n, 10000));
    CHECK_EQ(atomic_load(&loop_arrived), n);
    CHECK_EQ(atomic_load(&pst(x)->max_pair), 1);
    CHECK_EQ(atomic_load(&violations), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    qprocsoff(e);
    ust_qunlink(e);
    ust_qfree(e);
    freepair(x);
}

/* ---- 8 ---- */
static void *hold_main(void *arg)
{
    put(arg, kmsg(K_HOLD, 0));
    return NULL;
}

struct producer {
    queue_t *q;
    unsigned id;
    unsigned n;
};

static void *producer_main(void *arg)
{
    struct producer *pr = arg;
    for (unsigned s = 1; s <= pr->n; s++) {
        mblk_t *mp = kmsg(K_SEQ, (unsigned char)pr->id);
        memcpy(mp->b_rptr + 4, &s, sizeof(s));
        put(pr->q, mp);
    }
    return NULL;
}

/* 8. Perimeters (mt-streams(9F)): messages that find the perimeter busy wait
 *    in it without blocking their sender, and run in the order they came. */
static void case_order(void)
{
    queue_t *rq = mkpair(M_QPAIR);
    pthread_t h, t[2];
    atomic_store(&hold_release, 0);
    atomic_store(&holding, 0);
    CHECK_EQ(pthread_create(&h, NULL, hold_main, WR(rq)), 0);
    CHECK(wait_ge(&holding, 1, 5000));
    atomic_store(&processed, 0);
    memset(last_seq, 0, sizeof(last_seq));
    unsigned n = (unsigned)scale(5000);
    struct producer pr[2] = {{WR(rq), 0, n}, {WR(rq), 1, n}};
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, producer_main, &pr[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL); /* returned while the perimeter is held */
    CHECK_EQ(atomic_load(&processed), 0);
    CHECK_EQ(atomic_load(&holding), 1);
    atomic_store(&hold_release, 1);
    pthread_join(h, NULL);
    CHECK(wait_ge(&processed, (int)(2 * n + 1), 10000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(last_seq[0], n);
    CHECK_EQ(last_seq[1], n);
    CHECK_EQ(atomic_load(&violations), 0);
    freepair(rq);
}

/* 9. qwriter(9F) PERIM_INNER: with D_MTPUTSHARED several threads are inside
 *    the put procedures of one pair at once; a qwriter function asked for from
 *    there runs with no put procedure inside. */
static void case_qwriter_inner(void)
{
    queue_t *rq = mkpair(M_SHPUT);
    meet(WR(rq), WR(rq));
    CHECK_EQ(atomic_load(&pst(rq)->max_q[1]), 2); /* puts are shared */
    queue_t *qs[2];
    all_queues(&rq, 1, qs);
    hammer(qs, 2, 3, scale(20000), 20, K_WINNER);
    CHECK(atomic_load(&writers_run) > 0);
    CHECK_EQ(atomic_load(&violations), 0);
    freepair(rq);
}

/* ---- 10 ---- */
static atomic_int qcb_runs, qcb_bad, plain_runs;

static void qcb(void *arg)
{
    struct pst *p = arg;
    if (atomic_load(&p->in_pair) != 0 || atomic_load(&holding))
        atomic_fetch_add(&qcb_bad, 1);
    atomic_fetch_add(&qcb_runs, 1);
}

static void plain_cb(void *arg)
{
    (void)arg;
    atomic_fetch_add(&plain_runs, 1);
}

/* 10. qtimeout(9F): the callback runs inside the queue's perimeter -- not while
 *     a put procedure holds it -- and waiting for the perimeter does not hold
 *     up other timeouts. */
static void case_qtimeout(void)
{
    queue_t *rq = mkpair(M_QPAIR);
    pthread_t h;
    atomic_store(&hold_release, 0);
    atomic_store(&holding, 0);
    CHECK_EQ(pthread_create(&h, NULL, hold_main, WR(rq)), 0);
    CHECK(wait_ge(&holding, 1, 5000));
    CHECK(qtimeout(WR(rq), qcb, pst(rq), 1) != 0);
    CHECK(timeout(plain_cb, NULL, 3) != 0);
    CHECK(wait_ge(&plain_runs, 1, 5000)); /* the timer thread is not stuck */
    sleep_ms(100);
    CHECK_EQ(atomic_load(&qcb_runs), 0); /* waits for the perimeter */
    atomic_store(&hold_release, 1);
    pthread_join(h, NULL);
    CHECK(wait_ge(&qcb_runs, 1, 5000));
    CHECK_EQ(atomic_load(&qcb_bad), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&qcb_runs), 1);
    freepair(rq);
}

/* ---- 11: a module that arms a qtimeout in open and cancels it in close ---- */
static atomic_int cl_cb_runs;
static atomic_long cl_ret;
static atomic_int cl_wait_ms;
static atomic_int cl_ticks;

struct clst {
    timeout_id_t id;
};

static void cl_cb(void *arg)
{
    (void)arg;
    atomic_fetch_add(&cl_cb_runs, 1);
}

static int cl_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp, (void)oflag, (void)sflag, (void)crp;
    struct clst *c = calloc(1, sizeof(*c));
    q->q_ptr = WR(q)->q_ptr = c;
    c->id = qtimeout(q, cl_cb, c, atomic_load(&cl_ticks));
    qprocson(q);
    return 0;
}

static int cl_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag, (void)crp;
    struct clst *c = q->q_ptr;
    sleep_ms(atomic_load(&cl_wait_ms)); /* let the timeout come due (or not) */
    atomic_store(&cl_ret, quntimeout(q, c->id));
    qprocsoff(q);
    q->q_ptr = WR(q)->q_ptr = NULL;
    free(c);
    return 0;
}

static int cl_put(queue_t *q, mblk_t *mp)
{
    (void)q;
    freemsg(mp);
    return 0;
}

static struct qinit cl_rinit = {
    .qi_putp = cl_put, .qi_qopen = cl_open, .qi_qclose = cl_close, .qi_minfo = &sy_minfo};
static struct qinit cl_winit = {.qi_putp = cl_put, .qi_minfo = &sy_minfo};
static struct streamtab cl_info = {.st_rdinit = &cl_rinit, .st_wrinit = &cl_winit};
static struct fmodsw cl_fmod = {
    .f_name = "sy_close", .f_str = &cl_info, .f_flag = D_MP | D_MTQPAIR};

static atomic_int close_done;
static void *close_main(void *arg)
{
    cred_t cr = {0};
    ust_qclose(arg, 0, &cr);
    atomic_store(&close_done, 1);
    return NULL;
}

/* 11. quntimeout(9F) from close(9E): close holds the perimeter, so a due
 *     callback waits at it; quntimeout must take it out rather than wait for
 *     it.  A 200 ms timeout and close waiting 600 ms: due during close
 *     (returns -1); a 10 s timeout cancelled at once: still pending (returns
 *     >= 0). */
static void close_with(long wait_ms, int expect_pending)
{
    struct ust_modent *ent = ust_reg_find("sy_close", UST_MODULE);
    CHECK(ent != NULL);
    queue_t *rq = ust_qalloc(ent->str, ent->flag, ent);
    ust_reg_rele(ent);
    dev_t dev = 0;
    cred_t cr = {0};
    atomic_store(&cl_cb_runs, 0);
    atomic_store(&cl_wait_ms, (int)wait_ms);
    atomic_store(&close_done, 0);
    /* Due well after close has begun, even on a loaded machine (the close
     * thread must be inside close, holding the perimeter, when it comes due). */
    atomic_store(&cl_ticks, expect_pending ? 10 * HZ : HZ / 5);
    CHECK_EQ(ust_qopen(rq, &dev, 0, MODOPEN, &cr), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, close_main, rq), 0);
    if (!wait_ge(&close_done, 1, 20000)) {
        fprintf(stderr, "test_sync: close with quntimeout deadlocked\n");
        CHECK(!"close deadlocked");
        CHECK_RESULT();
        exit(1);
    }
    pthread_join(t, NULL);
    sleep_ms(100);
    CHECK_EQ(atomic_load(&cl_cb_runs), 0);
    if (expect_pending) {
        CHECK(atomic_load(&cl_ret) >= 0);
    } else {
        CHECK_EQ(atomic_load(&cl_ret), -1);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    ust_qfree(rq);
}

static void case_quntimeout_close(void)
{
    close_with(600, 0); /* due (200 ms) while close holds the perimeter */
    close_with(0, 1);   /* still pending */
}

int main(void)
{
    for (int i = 0; i < M_NMODS; i++)
        CHECK_EQ(register_strmod(&sy_mods[i]), 0);
    CHECK_EQ(register_strmod(&cl_fmod), 0);
    case_mp();
    case_perq();
    case_qpair();
    case_permod();
    case_outer();
    case_legacy();
    case_loopback();
    case_order();
    case_qwriter_inner();
    case_qtimeout();
    case_quntimeout_close();
    th_assert_no_blocks();
    for (int i = 0; i < M_NMODS; i++)
        CHECK_EQ(unregister_strmod(&sy_mods[i]), 0);
    CHECK_EQ(unregister_strmod(&cl_fmod), 0);
    ustreams_shutdown();
    return CHECK_RESULT();
}
