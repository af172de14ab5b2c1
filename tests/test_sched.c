/* SPDX-License-Identifier: MIT */
/*
 * test_sched.c -- the STREAMS scheduler (src/core/sched.c): where and when
 * service procedures run, and the controls of ustreams_exec.h.
 *
 * Each test queue is a D_MP pair from ust_qalloc whose service procedure calls
 * a per-queue behaviour function (struct sq, in q_ptr).  The scheduler is set
 * to 4 threads before it first starts, so that a missing exclusion would be
 * able to show.
 *
 * Cases:
 *   1 qenable(9F): the service procedure runs later, on a scheduler thread,
 *     not on the caller's; QINSERVICE while it runs
 *   2 qenable(9F), queue(9S): a queue never runs concurrently with itself
 *     (two threads enabling it thousands of times); different queues do run
 *     concurrently
 *   3 qenable(9F): enabling a queue while its service procedure runs (from
 *     another thread, or from the procedure itself) runs it again afterwards,
 *     once per enable-during-run
 *   4 qprocsoff(9F): waits for a running service procedure; a queue with its
 *     procedures off is not scheduled; qprocson(9F) schedules pending work
 *   5 ustreams_set_sched_threads / ustreams_sched_threads: range, effect on a
 *     restarted scheduler; USTREAMS_SCHED_THREADS (in a child process)
 *   6 ustreams_quiesce: waits for service procedures and due timeouts;
 *     ETIMEDOUT when the executive never goes idle
 *   7 ustreams_shutdown: runs what is scheduled, joins the threads; a later
 *     qenable restarts the scheduler
 *   8 no lost wake-up: queues enabled back to back run on both threads of a
 *     just-started 2-thread scheduler
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

extern char **environ;

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

static int slow_build(void)
{
    return UNDER_TSAN || getenv("USTREAMS_TSAN") != NULL;
}

struct sq;
typedef void (*sq_fn)(queue_t *q, struct sq *s);

struct sq {
    sq_fn fn;
    atomic_int runs;     /* service procedure calls */
    atomic_int entered;  /* set on entry */
    atomic_int finished; /* set when fn is done */
    atomic_int release;  /* fn may return */
    atomic_int in_srv;   /* 1 while inside */
    atomic_int overlap;  /* entries that found in_srv already set */
    atomic_int arg;      /* behaviour parameter */
    pthread_t tid;       /* thread of the last run */
};

static int sq_srv(queue_t *q)
{
    struct sq *s = q->q_ptr;
    if (atomic_exchange(&s->in_srv, 1))
        atomic_fetch_add(&s->overlap, 1);
    s->tid = pthread_self();
    atomic_store(&s->entered, 1);
    if (s->fn)
        s->fn(q, s);
    atomic_fetch_add(&s->runs, 1);
    atomic_store(&s->in_srv, 0);
    atomic_store(&s->finished, 1);
    return 0;
}

static int sq_put(queue_t *q, mblk_t *mp)
{
    if (!putq(q, mp))
        freemsg(mp);
    return 0;
}

static struct module_info sq_minfo = {
    .mi_idnum = 7003, .mi_idname = "sq", .mi_maxpsz = INFPSZ, .mi_hiwat = 5120, .mi_lowat = 1024};
static struct qinit sq_init = {.qi_putp = sq_put, .qi_srvp = sq_srv, .qi_minfo = &sq_minfo};
static struct streamtab sq_info = {.st_rdinit = &sq_init, .st_wrinit = &sq_init};

static queue_t *mkq(struct sq *s, sq_fn fn)
{
    memset(s, 0, sizeof(*s));
    s->fn = fn;
    queue_t *rq = ust_qalloc(&sq_info, D_MP, NULL);
    CHECK(rq != NULL);
    rq->q_ptr = WR(rq)->q_ptr = s;
    qprocson(rq);
    return WR(rq);
}

static void freeq(queue_t *q)
{
    qprocsoff(q);
    ust_qfree(RD(q));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait up to ms for *v >= want. */
static int wait_ge(atomic_int *v, int want, long ms)
{
    long long end = now_ms() + ms;
    while (atomic_load(v) < want) {
        if (now_ms() > end)
            return 0;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

/* Behaviour: wait (up to 10 s) until the test releases. */
static void fn_wait_release(queue_t *q, struct sq *s)
{
    (void)q;
    wait_ge(&s->release, 1, 10000);
}

/* 1. qenable(9F): the service procedure runs on a scheduler thread, after
 *    qenable has returned; the queue is QINSERVICE meanwhile. */
static void case_thread(void)
{
    struct sq s;
    queue_t *q = mkq(&s, fn_wait_release);
    qenable(q);
    CHECK_EQ(atomic_load(&s.finished), 0); /* qenable did not run it inline */
    CHECK(wait_ge(&s.entered, 1, 5000));
    CHECK(!pthread_equal(s.tid, pthread_self()));
    CHECK(ust_qflags(q) & QINSERVICE);
    CHECK((ust_qflags(q) & QENAB) == 0); /* taken off the run list */
    atomic_store(&s.release, 1);
    CHECK(wait_ge(&s.finished, 1, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK((ust_qflags(q) & (QINSERVICE | QENAB)) == 0);
    CHECK_EQ(atomic_load(&s.runs), 1);
    CHECK_EQ(atomic_load(&ust_qpv(q)->nsrv), 1);
    freeq(q);
}

/* Behaviour: stay inside briefly, so overlapping runs would be seen. */
static void fn_brief(queue_t *q, struct sq *s)
{
    (void)q;
    (void)s;
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

struct enabler {
    queue_t *q;
    int n;
};

static void *enabler_main(void *arg)
{
    struct enabler *e = arg;
    for (int i = 0; i < e->n; i++) {
        qenable(e->q);
        if ((i & 15) == 0)
            sched_yield();
    }
    return NULL;
}

/* Behaviour: wait (up to 5 s) until the partner queue's procedure is inside
 * too (arg records that it was seen), then until the partner has seen this
 * one, so that both are inside at the same moment. */
static struct sq *partner_of[2];
static void fn_meet(queue_t *q, struct sq *s)
{
    (void)q;
    struct sq *other = partner_of[0] == s ? partner_of[1] : partner_of[0];
    if (wait_ge(&other->entered, 1, 5000))
        atomic_store(&s->arg, 1);
    wait_ge(&other->arg, 1, 5000);
}

/* 2. queue(9S), qenable(9F): never two runs of one queue at once, however many
 *    threads enable it; two different queues may run at the same time. */
static void case_exclusion(void)
{
    struct sq s;
    queue_t *q = mkq(&s, fn_brief);
    int n = slow_build() ? 1500 : 10000;
    struct enabler e = {q, n};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, enabler_main, &e), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(ustreams_quiesce(10000), 0);
    CHECK_EQ(atomic_load(&s.overlap), 0);
    CHECK(atomic_load(&s.runs) >= 1);
    CHECK(atomic_load(&s.runs) <= 2 * n);
    CHECK_EQ(atomic_load(&ust_qpv(q)->nsrv), atomic_load(&s.runs));
    freeq(q);

    struct sq a, b;
    queue_t *qa = mkq(&a, fn_meet), *qb = mkq(&b, fn_meet);
    partner_of[0] = &a;
    partner_of[1] = &b;
    qenable(qa);
    qenable(qb);
    CHECK(wait_ge(&a.finished, 1, 15000));
    CHECK(wait_ge(&b.finished, 1, 15000));
    CHECK_EQ(atomic_load(&a.arg), 1); /* each saw the other inside */
    CHECK_EQ(atomic_load(&b.arg), 1);
    CHECK(!pthread_equal(a.tid, b.tid));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    freeq(qa);
    freeq(qb);
}

/* Behaviour: enable itself while fewer than arg runs happened. */
static void fn_self_enable(queue_t *q, struct sq *s)
{
    if (atomic_load(&s->runs) < atomic_load(&s->arg))
        qenable(q);
    CHECK(ust_qflags(q) & QINSERVICE);
}

/* 3. qenable(9F) during the service procedure: QENAB is set and the procedure
 *    runs again once it has returned -- once, however often it was enabled. */
static void case_reenable(void)
{
    struct sq s;
    queue_t *q = mkq(&s, fn_wait_release);
    qenable(q);
    CHECK(wait_ge(&s.entered, 1, 5000));
    qenable(q);
    qenable(q);
    CHECK(ust_qflags(q) & QENAB);
    CHECK(ust_qflags(q) & QINSERVICE);
    CHECK_EQ(atomic_load(&s.runs), 0);
    atomic_store(&s.release, 1);
    CHECK(wait_ge(&s.runs, 2, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&s.runs), 2);
    CHECK_EQ(atomic_load(&s.overlap), 0);
    freeq(q);

    queue_t *q2 = mkq(&s, fn_self_enable);
    atomic_store(&s.arg, 5);
    qenable(q2);
    CHECK(wait_ge(&s.runs, 6, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&s.runs), 6);
    CHECK_EQ(atomic_load(&s.overlap), 0);
    freeq(q2);
}

/* Behaviour: sleep 200 ms. */
static void fn_sleep200(queue_t *q, struct sq *s)
{
    (void)q;
    (void)s;
    sleep_ms(200);
}

/* 4. qprocsoff(9F) waits until a running service procedure has returned;
 *    afterwards neither qenable nor putq schedules the queue; qprocson(9F)
 *    schedules the messages that wait. */
static void case_qprocsoff(void)
{
    struct sq s;
    queue_t *q = mkq(&s, fn_sleep200);
    qenable(q);
    CHECK(wait_ge(&s.entered, 1, 5000));
    qprocsoff(q);
    CHECK_EQ(atomic_load(&s.finished), 1);
    CHECK(ust_qflags(q) & QPROCSOFF);
    CHECK((ust_qflags(q) & QINSERVICE) == 0);
    qenable(q);
    CHECK((ust_qflags(q) & QENAB) == 0);
    CHECK_EQ(putq(q, th_msg(M_DATA, 0, NULL, 10)), 1);
    CHECK_EQ(putq(q, th_msg(M_PCPROTO, 0, NULL, 10)), 1);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&s.runs), 1);
    s.fn = NULL;
    qprocson(q);
    CHECK(wait_ge(&s.runs, 2, 5000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&s.runs), 2);
    freeq(q); /* frees the two messages */
}

/* Behaviour: count how many of the three queues are inside at once.  Each
 * waits for all three, but gives up 500 ms after it entered once `meet_expect`
 * have met (a busy machine may be slow to start the others), or after 5 s. */
static atomic_int meet_inside, meet_max, meet_expect;

static void note_max(int n)
{
    int m = atomic_load(&meet_max);
    while (n > m && !atomic_compare_exchange_weak(&meet_max, &m, n))
        ;
}

static void fn_count_inside(queue_t *q, struct sq *s)
{
    (void)q;
    (void)s;
    note_max(atomic_fetch_add(&meet_inside, 1) + 1);
    long long start = now_ms();
    while (atomic_load(&meet_inside) < 3 && now_ms() < start + 5000) {
        if (atomic_load(&meet_max) >= atomic_load(&meet_expect) && now_ms() >= start + 500)
            break;
        note_max(atomic_load(&meet_inside));
        sleep_ms(1);
    }
    note_max(atomic_load(&meet_inside));
    atomic_fetch_sub(&meet_inside, 1);
}

/* Run three queues that each wait for the others; the most inside at once
 * (`expect`: how many should meet). */
static int max_parallel(int expect)
{
    struct sq s[3];
    queue_t *q[3];
    atomic_store(&meet_expect, expect);
    atomic_store(&meet_inside, 0);
    atomic_store(&meet_max, 0);
    for (int i = 0; i < 3; i++)
        q[i] = mkq(&s[i], fn_count_inside);
    for (int i = 0; i < 3; i++)
        qenable(q[i]);
    for (int i = 0; i < 3; i++)
        CHECK(wait_ge(&s[i].finished, 1, 10000));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    for (int i = 0; i < 3; i++)
        freeq(q[i]);
    return atomic_load(&meet_max);
}

/* Run `self` with USTREAMS_SCHED_THREADS=val (NULL: unset) and the given mode;
 * returns the child's exit status (0: its checks passed). */
static int run_child(const char *self, const char *val, const char *mode, int expect)
{
    char expect_s[16];
    snprintf(expect_s, sizeof(expect_s), "%d", expect);
    int n = 0;
    while (environ[n])
        n++;
    char **envp = calloc((size_t)n + 2, sizeof(*envp));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(environ[i], "USTREAMS_SCHED_THREADS=", 23) != 0)
            envp[k++] = environ[i];
    char var[64];
    if (val) {
        snprintf(var, sizeof(var), "USTREAMS_SCHED_THREADS=%s", val);
        envp[k++] = var;
    }
    envp[k] = NULL;
    char *argv[] = {(char *)self, (char *)mode, expect_s, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, NULL, NULL, argv, envp);
    free(envp);
    if (rc != 0)
        return -1;
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The child: ustreams_sched_threads() must be `expect` before and after the
 * scheduler starts ("set" mode first overrides the environment with 2). */
static int child_main(const char *mode, int expect)
{
    if (strcmp(mode, "set-child") == 0 && ustreams_set_sched_threads(2) != 0)
        return 3;
    if (ustreams_sched_threads() != expect)
        return 4;
    struct sq s;
    queue_t *q = mkq(&s, NULL);
    qenable(q);
    if (!wait_ge(&s.runs, 1, 5000))
        return 5;
    if (ustreams_sched_threads() != expect)
        return 6;
    if (ustreams_quiesce(5000) != 0)
        return 7;
    freeq(q);
    ustreams_shutdown();
    return 0;
}

/* 5. ustreams_set_sched_threads / ustreams_sched_threads and the environment
 *    variable USTREAMS_SCHED_THREADS (ustreams_exec.h). */
static void case_threads_config(const char *self)
{
    CHECK_EQ(ustreams_set_sched_threads(0), EINVAL);
    CHECK_EQ(ustreams_set_sched_threads(-1), EINVAL);
    CHECK_EQ(ustreams_set_sched_threads(257), EINVAL);
    CHECK_EQ(ustreams_sched_threads(), 4); /* running with the 4 set in main */
    CHECK_EQ(max_parallel(3), 3);           /* 4 threads: all three met */

    ustreams_shutdown();
    CHECK_EQ(ustreams_set_sched_threads(2), 0);
    CHECK_EQ(ustreams_sched_threads(), 2);
    CHECK_EQ(max_parallel(2), 2); /* the restarted scheduler has 2 threads */
    CHECK_EQ(ustreams_sched_threads(), 2);
    CHECK_EQ(ustreams_set_sched_threads(256), 0); /* upper bound accepted ... */
    CHECK_EQ(ustreams_sched_threads(), 2);        /* ... but not while running */
    ustreams_shutdown();
    CHECK_EQ(ustreams_set_sched_threads(4), 0);
    CHECK_EQ(ustreams_sched_threads(), 4);

    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    CHECK_EQ(run_child(self, "3", "env-child", 3), 0);
    CHECK_EQ(run_child(self, "1", "env-child", 1), 0);
    CHECK_EQ(run_child(self, "0", "env-child", (int)ncpu), 0);   /* invalid: default */
    CHECK_EQ(run_child(self, "999", "env-child", (int)ncpu), 0); /* invalid: default */
    CHECK_EQ(run_child(self, NULL, "env-child", (int)ncpu), 0);
    CHECK_EQ(run_child(self, "3", "set-child", 2), 0); /* the call wins */
}

/* Behaviour: enable itself until told to stop. */
static void fn_forever(queue_t *q, struct sq *s)
{
    if (!atomic_load(&s->release))
        qenable(q);
    sleep_ms(1);
}

static atomic_int tmo_fired;
static void tmo_cb(void *arg)
{
    (void)arg;
    atomic_fetch_add(&tmo_fired, 1);
}

/* 6. ustreams_quiesce: returns 0 once no service procedure is scheduled or
 *    running and no timeout is due within a tick; ETIMEDOUT after timeout_ms
 *    if that never happens. */
static void case_quiesce(void)
{
    struct sq s;
    queue_t *q = mkq(&s, fn_sleep200);
    qenable(q);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&s.finished), 1);
    freeq(q);

    atomic_store(&tmo_fired, 0);
    CHECK(timeout(tmo_cb, NULL, 1) != 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(atomic_load(&tmo_fired), 1);

    queue_t *q2 = mkq(&s, fn_forever);
    qenable(q2);
    long long t0 = now_ms();
    CHECK_EQ(ustreams_quiesce(200), ETIMEDOUT);
    CHECK(now_ms() - t0 >= 200);
    atomic_store(&s.release, 1);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    freeq(q2);
}

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Behaviour: sleep 30 ms. */
static void fn_sleep30(queue_t *q, struct sq *s)
{
    (void)q;
    (void)s;
    sleep_ms(30);
}

/* 7. ustreams_shutdown runs the service procedures already scheduled, then
 *    joins the scheduler threads; the next qenable starts them again. */
static void case_shutdown(void)
{
    struct sq s[3];
    queue_t *q[3];
    for (int i = 0; i < 3; i++)
        q[i] = mkq(&s[i], fn_sleep30);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    int before = count_threads();
    for (int i = 0; i < 3; i++)
        qenable(q[i]);
    ustreams_shutdown();
    for (int i = 0; i < 3; i++)
        CHECK_EQ(atomic_load(&s[i].runs), 1);
    /* the 4 scheduler threads are gone (a joined thread may linger in
     * /proc for a moment) */
    int after = count_threads();
    for (int i = 0; i < 1000 && after > before - 4; i++) {
        sleep_ms(1);
        after = count_threads();
    }
    CHECK(before > 0);
    CHECK(after <= before - 4);
    ustreams_shutdown(); /* idempotent */
    CHECK_EQ(count_threads(), after);
    s[0].fn = NULL;
    qenable(q[0]);
    CHECK(wait_ge(&s[0].runs, 2, 5000));
    CHECK(!pthread_equal(s[0].tid, pthread_self()));
    CHECK(count_threads() >= after + 1);
    CHECK_EQ(ustreams_sched_threads(), 4);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    for (int i = 0; i < 3; i++)
        freeq(q[i]);
}

/* Behaviour: wait (up to 2 s) until the pair's other queue is inside too. */
static atomic_int pair_inside;

static void fn_pair(queue_t *q, struct sq *s)
{
    (void)q;
    atomic_fetch_add(&pair_inside, 1);
    long long end = now_ms() + 2000;
    while (atomic_load(&pair_inside) < 2 && now_ms() < end)
        sleep_ms(1);
    if (atomic_load(&pair_inside) >= 2)
        atomic_store(&s->arg, 1);
}

/* 8. No lost wake-up: two queues enabled back to back, just after the
 *    scheduler (re)started with 2 threads, run at the same time: the second
 *    thread, on its way to sleep, must not miss the queue left for it on the
 *    first thread's list.  Many rounds, the window is small. */
static void case_no_lost_wakeup(void)
{
    int rounds = slow_build() ? 40 : 200, met = 0;
    for (int r = 0; r < rounds; r++) {
        ustreams_shutdown();
        CHECK_EQ(ustreams_set_sched_threads(2), 0);
        struct sq s[2];
        queue_t *q[2];
        atomic_store(&pair_inside, 0);
        for (int i = 0; i < 2; i++)
            q[i] = mkq(&s[i], fn_pair);
        for (int i = 0; i < 2; i++)
            qenable(q[i]);
        for (int i = 0; i < 2; i++)
            CHECK(wait_ge(&s[i].finished, 1, 10000));
        CHECK_EQ(ustreams_quiesce(5000), 0);
        met += atomic_load(&s[0].arg) && atomic_load(&s[1].arg);
        for (int i = 0; i < 2; i++)
            freeq(q[i]);
    }
    CHECK_EQ(met, rounds);
    ustreams_shutdown();
    CHECK_EQ(ustreams_set_sched_threads(4), 0);
}

int main(int argc, char **argv)
{
    if (argc == 3)
        return child_main(argv[1], atoi(argv[2]));
    CHECK_EQ(ustreams_set_sched_threads(4), 0);
    case_thread();
    case_exclusion();
    case_reenable();
    case_qprocsoff();
    case_threads_config("/proc/self/exe");
    case_quiesce();
    case_shutdown();
    case_no_lost_wakeup();
    th_assert_no_blocks();
    ustreams_shutdown();
    return CHECK_RESULT();
}
