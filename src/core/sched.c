/* SPDX-License-Identifier: MIT */
/*
 * sched.c -- the STREAMS scheduler: running service procedures.
 *
 * Principles of operation
 *   qenable puts a queue on a run list; scheduler threads take queues off the
 *   lists and run their service procedures.  There is one list per scheduler
 *   thread, and thread i prefers CPU i (it is pinned there when there are no
 *   more threads than CPUs): qenable picks the list of the CPU it runs on, so
 *   a service procedure tends to run where its messages are warm.  A thread
 *   whose list is empty steals from the others before it sleeps.
 *
 *   Invariants, all under the queue lock:
 *   - QENAB set  <=>  the queue is on a run list, or it was enabled while its
 *     service procedure ran (QINSERVICE) and will be put back when it ends.
 *   - QINSERVICE set from when a scheduler thread takes the queue until its
 *     service procedure has returned (possibly later, on another thread, if a
 *     perimeter deferred it).  So a queue never runs concurrently with
 *     itself, and is on at most one list at a time.
 *   The scheduler claims a queue (putnext.c) while it is taken off a list, so
 *   qprocsoff waits for a service procedure about to run or running.
 *
 *   The stream head's queues are never scheduled: qenable calls their
 *   head_enable hook, which wakes the sleeping reader or writer directly.
 *
 *   Queues enabled during a library call run on the calling thread.  The
 *   head's entry points bracket each call with ust_call_begin/ust_call_end;
 *   an enable made while a call is in progress goes on the thread's own run
 *   list, and the outermost ust_call_end runs that list (at most
 *   LOCAL_BUDGET service procedures; what is left goes to the scheduler
 *   threads).  So, as in Linux Fast-STREAMS, a service procedure runs on the
 *   CPU whose call fed it, with no context switch, and a reply made by one
 *   (echo, loop) is at the head when write() returns.  A call that is about
 *   to sleep hands its list to the scheduler threads first
 *   (ust_sched_handoff), so nothing it waits for can be stuck behind it.
 *   Enables made outside any call (scheduler, timer and bufcall threads, a
 *   module's own threads) go to the scheduler threads, which are started
 *   only when such work first comes.  A thread's list is a struct runlist
 *   like the others (its lock taken by ust_sched_cancel from any thread);
 *   lists are never freed (a pool recycles those of exited threads), so a
 *   cancel may lock a list whose thread has gone.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/cmn_err.h>

#include "strcore.h"

void ust_timer_shutdown(void);
void ust_bufcall_shutdown(void);
int ust_timer_idle_within(long long ns);

#define UST_MAXSCHED 256

struct runlist {
    ust_lock_t lock;     /* guards head, tail, sleeping, free_next; after queue locks */
    ust_cond_t wake;     /* the list's thread sleeps here */
    queue_t *head, *tail; /* LOCK: enabled queues, linked by q_link */
    int sleeping;        /* LOCK: the thread waits on `wake` */
    pthread_t thread;
    int index;           /* global lists: 0..running-1; a thread's own list: -1 */
    struct runlist *free_next; /* local_pool_lock: the pool of thread lists */
};

enum { LOCAL_BUDGET = 64 }; /* service procedures one call end runs itself */

/* Scheduler control.  ctl_lock guards nthreads_cfg, running, stop, lists;
 * taken before any run-list lock, never from the data path once running. */
static ust_lock_t ctl_lock = UST_LOCK_INIT;
static int nthreads_cfg;         /* 0: not yet decided */
static atomic_int running;        /* threads started (0 when stopped) */
static atomic_int stop;
static struct runlist *lists;     /* array of `running` lists */
static atomic_long work;           /* queues on lists + service procedures in progress */
static _Thread_local unsigned tls_cpu_calls;
static _Thread_local int tls_cpu = -1;

/* The calling thread's run list and call depth. */
static _Thread_local struct runlist *tls_local; /* NULL until its first enable in a call */
static _Thread_local int tls_depth;             /* library calls in progress (nesting) */
static _Thread_local int tls_pending;           /* pushes on tls_local since it was last
                                                 * run (only this thread pushes there;
                                                 * a cancel may have taken some off) */
/* local_pool_lock guards local_free (lists of exited threads); a leaf. */
static ust_lock_t local_pool_lock = UST_LOCK_INIT;
static struct runlist *local_free;
static pthread_key_t local_key;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static int default_threads(void)
{
    const char *e = getenv("USTREAMS_SCHED_THREADS");
    if (e && *e) {
        long n = strtol(e, NULL, 10);
        if (n >= 1 && n <= UST_MAXSCHED)
            return (int)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > UST_MAXSCHED)
        n = UST_MAXSCHED;
    return (int)n;
}

int ustreams_set_sched_threads(int n)
{
    if (n < 1 || n > UST_MAXSCHED)
        return EINVAL;
    ust_lock(&ctl_lock);
    nthreads_cfg = n;
    ust_unlock(&ctl_lock);
    return 0;
}

int ustreams_sched_threads(void)
{
    ust_lock(&ctl_lock);
    int n = atomic_load(&running);
    if (!n)
        n = nthreads_cfg ? nthreads_cfg : default_threads();
    ust_unlock(&ctl_lock);
    return n;
}

static void list_append(struct runlist *rl, queue_t *q)
{
    UST_ASSERT_HELD(&rl->lock);
    q->q_link = NULL;
    if (rl->tail)
        rl->tail->q_link = q;
    else
        rl->head = q;
    rl->tail = q;
}

static queue_t *list_pop(struct runlist *rl)
{
    UST_ASSERT_HELD(&rl->lock);
    queue_t *q = rl->head;
    if (q) {
        rl->head = q->q_link;
        if (!rl->head)
            rl->tail = NULL;
        q->q_link = NULL;
        /* claim while the list lock keeps the pair from being cancelled */
        atomic_fetch_add(&ust_qpv(q)->active, 1);
    }
    return q;
}

static void run_queue(queue_t *q)
{
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    uint_t fl = ust_qflags(q);
    ust_qflag_clr(q, QENAB);
    if ((fl & QPROCSOFF) || !(fl & QUSE)) {
        ust_unlock(&pv->lock);
        atomic_fetch_sub(&work, 1);
        ust_qrelease(q);
        return;
    }
    ust_qflag_set(q, QINSERVICE);
    ust_unlock(&pv->lock);
    ust_call_srv(q); /* ust_srv_done runs when the procedure has returned */
}

/* Take a queue from another thread's list, or NULL. */
static queue_t *steal(struct runlist *rl, int n)
{
    queue_t *q = NULL;
    for (int k = 1; k < n && !q; k++) {
        struct runlist *o = &lists[(rl->index + k) % n];
        ust_lock(&o->lock);
        q = list_pop(o);
        ust_unlock(&o->lock);
    }
    return q;
}

/*
 * A scheduler thread.  Going to sleep is two-phase so that no wake-up is
 * lost: the thread first says it is sleeping (under its own lock), then looks
 * at the other lists once more, and waits only if nobody has cleared the flag
 * meanwhile.  A push appends under the target list's lock and then reads the
 * flags under each list's lock, so either the second look sees the queue or
 * the push sees the flag (list_push_global).
 */
static void *sched_main(void *arg)
{
    struct runlist *rl = arg;
    int n = atomic_load(&running);
    for (;;) {
        ust_lock(&rl->lock);
        queue_t *q = list_pop(rl);
        ust_unlock(&rl->lock);
        if (!q)
            q = steal(rl, n);
        if (q) {
            run_queue(q);
            continue;
        }
        ust_lock(&rl->lock);
        if (atomic_load(&stop) && !rl->head) {
            ust_unlock(&rl->lock);
            break;
        }
        if (rl->head) {
            ust_unlock(&rl->lock);
            continue;
        }
        rl->sleeping = 1;
        ust_unlock(&rl->lock);
        q = steal(rl, n);
        ust_lock(&rl->lock);
        if (q) {
            rl->sleeping = 0;
            ust_unlock(&rl->lock);
            run_queue(q);
            continue;
        }
        /* a waker clears the flag before it signals: wait only if not cleared */
        if (rl->sleeping && !rl->head && !atomic_load(&stop))
            ust_cond_wait(&rl->wake, &rl->lock);
        rl->sleeping = 0;
        ust_unlock(&rl->lock);
    }
    return NULL;
}

void ust_sched_start(void)
{
    if (atomic_load_explicit(&running, memory_order_acquire))
        return;
    ust_lock(&ctl_lock);
    if (atomic_load(&running)) {
        ust_unlock(&ctl_lock);
        return;
    }
    int n = nthreads_cfg ? nthreads_cfg : default_threads();
    struct runlist *rls = calloc((size_t)n, sizeof(*rls));
    if (!rls) {
        ust_unlock(&ctl_lock);
        return;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const char *pin_env = getenv("USTREAMS_SCHED_PIN");
    int pin = n <= ncpu && !(pin_env && *pin_env == '0');
    atomic_store(&stop, 0);
    for (int i = 0; i < n; i++) {
        ust_lock_init(&rls[i].lock);
        ust_cond_init(&rls[i].wake);
        rls[i].index = i;
    }
    lists = rls;
    atomic_store_explicit(&running, n, memory_order_release);
    int started = 0;
    for (int i = 0; i < n; i++) {
        if (ust_thread_create(&rls[i].thread, NULL, sched_main, &rls[i]) != 0)
            break;
        started++;
        if (pin) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(i, &set);
            pthread_setaffinity_np(rls[i].thread, sizeof(set), &set);
        }
    }
    if (started < n) { /* could not start them all: keep what runs */
        atomic_store(&stop, 1);
        for (int i = 0; i < started; i++) {
            ust_lock(&rls[i].lock);
            ust_cond_signal(&rls[i].wake);
            ust_unlock(&rls[i].lock);
            pthread_join(rls[i].thread, NULL);
        }
        atomic_store(&running, 0);
        lists = NULL;
        free(rls);
        cmn_err(CE_WARN, "ustreams: cannot start scheduler threads");
    }
    ust_unlock(&ctl_lock);
}

static int pick_list(int n)
{
    if (tls_cpu < 0 || (++tls_cpu_calls & 63) == 0) {
        int c = sched_getcpu();
        tls_cpu = c < 0 ? 0 : c;
    }
    return tls_cpu % n;
}

static void list_push_global(queue_t *q)
{
    ust_sched_start();
    int n = atomic_load_explicit(&running, memory_order_acquire);
    if (!n) { /* no scheduler could be started: run it here */
        atomic_fetch_add(&ust_qpv(q)->active, 1);
        run_queue(q);
        return;
    }
    int i = pick_list(n);
    struct runlist *rl = &lists[i];
    __atomic_store_n(&ust_qpv(q)->runlist, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&ust_qpv(q)->cpu, i, __ATOMIC_RELAXED);
    ust_lock(&rl->lock);
    list_append(rl, q);
    int wake = rl->sleeping;
    if (wake) {
        rl->sleeping = 0;
        ust_cond_signal(&rl->wake);
    }
    ust_unlock(&rl->lock);
    if (!wake) {
        /* Our CPU's thread is busy: wake a sleeping one to steal it. */
        for (int k = 1; k < n; k++) {
            struct runlist *o = &lists[(i + k) % n];
            ust_lock(&o->lock);
            int s = o->sleeping;
            if (s) {
                o->sleeping = 0;
                ust_cond_signal(&o->wake);
            }
            ust_unlock(&o->lock);
            if (s)
                break;
        }
    }
}

/* ---- the calling thread's run list ---- */

static void local_hand_over(struct runlist *rl);

/* pthread key destructor: a thread ends; its list goes back to the pool
 * (empty: a thread cannot end inside a library call, but a list that is not
 * is handed to the scheduler threads first). */
static void local_release(void *p)
{
    struct runlist *rl = p;
    local_hand_over(rl);
    ust_lock(&local_pool_lock);
    rl->free_next = local_free;
    local_free = rl;
    ust_unlock(&local_pool_lock);
}

static void local_key_make(void)
{
    if (pthread_key_create(&local_key, local_release) != 0)
        local_key = (pthread_key_t)-1;
}

/* This thread's list, made on first need; NULL if none can be had (the
 * enable then goes to the scheduler threads). */
static struct runlist *local_list(void)
{
    if (tls_local)
        return tls_local;
    pthread_once(&local_once, local_key_make);
    if (local_key == (pthread_key_t)-1)
        return NULL;
    ust_lock(&local_pool_lock);
    struct runlist *rl = local_free;
    if (rl)
        local_free = rl->free_next;
    ust_unlock(&local_pool_lock);
    if (!rl) {
        rl = calloc(1, sizeof(*rl));
        if (!rl)
            return NULL;
        ust_lock_init(&rl->lock);
        ust_cond_init(&rl->wake);
        rl->index = -1;
    }
    if (pthread_setspecific(local_key, rl) != 0) {
        ust_lock(&local_pool_lock);
        rl->free_next = local_free;
        local_free = rl;
        ust_unlock(&local_pool_lock);
        return NULL;
    }
    tls_local = rl;
    return rl;
}

static void list_push(queue_t *q)
{
    struct runlist *rl = tls_depth > 0 ? local_list() : NULL;
    if (!rl) {
        list_push_global(q);
        return;
    }
    __atomic_store_n(&ust_qpv(q)->cpu, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&ust_qpv(q)->runlist, (void *)rl, __ATOMIC_RELEASE);
    ust_lock(&rl->lock);
    list_append(rl, q);
    ust_unlock(&rl->lock);
    tls_pending++;
}

/* Move what is on rl to the scheduler threads.  Each queue is claimed while
 * it is between lists, as an enable claims it (so qprocsoff waits for the
 * move instead of missing it). */
static void local_hand_over(struct runlist *rl)
{
    for (;;) {
        ust_lock(&rl->lock);
        queue_t *q = list_pop(rl);
        ust_unlock(&rl->lock);
        if (!q)
            return;
        list_push_global(q);
        ust_qrelease(q);
    }
}

void ust_sched_handoff(void)
{
    if (tls_pending) {
        tls_pending = 0;
        local_hand_over(tls_local);
    }
}

void ust_call_begin(void)
{
    tls_depth++;
}

/* Run this thread's list (at most the budget; the rest to the scheduler
 * threads).  tls_depth > 0: what the procedures enable joins the list. */
static void run_local(void)
{
    struct runlist *rl = tls_local;
    int saved = errno;
    tls_pending = 0;
    for (int n = 0; n < LOCAL_BUDGET; n++) {
        ust_lock(&rl->lock);
        queue_t *q = list_pop(rl);
        ust_unlock(&rl->lock);
        if (!q)
            break;
        run_queue(q);
    }
    local_hand_over(rl); /* beyond the budget: the scheduler threads' */
    tls_pending = 0;     /* what those procedures pushed has been run or handed over */
    errno = saved;
}

int ust_sched_in_call(void)
{
    return tls_depth > 0;
}

void ust_call_end(void)
{
    if (--tls_depth > 0 || tls_pending == 0) /* no lock taken by a call that enabled nothing */
        return;
    tls_depth++;
    run_local();
    tls_depth--;
}

void ust_call_run_now(void)
{
    if (tls_depth > 0 && tls_pending)
        run_local();
}

void ust_sched_enable(queue_t *q)
{
    /* q_qinfo atomically: a back-enable may reach a pair being reused. */
    struct qinit *qi = __atomic_load_n(&q->q_qinfo, __ATOMIC_RELAXED);
    if (!qi || !qi->qi_srvp)
        return;
    struct ust_qpriv *pv = ust_qpv(q);
    /* Claim q while enabling it: back-enables reach queues nobody else has
     * claimed, and without the claim qprocsoff could miss an enable that
     * checked QPROCSOFF before it was set and pushes q on a run list after
     * its cancel; q could then be freed and reused while listed. */
    atomic_fetch_add(&pv->active, 1);
    ust_lock(&pv->lock);
    uint_t fl = ust_qflags(q);
    if ((fl & (QENAB | QPROCSOFF)) || !(fl & QUSE)) {
        ust_unlock(&pv->lock);
        ust_qrelease(q);
        return;
    }
    ust_qflag_set(q, QENAB);
    ust_unlock(&pv->lock);
    if (!(fl & QINSERVICE)) { /* else ust_srv_done puts it back */
        atomic_fetch_add(&work, 1);
        list_push(q);
    }
    ust_qrelease(q);
}

/* Called once the service procedure of d->q has returned (or was dropped). */
void ust_srv_done(struct ust_defer *d)
{
    queue_t *q = d->q;
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    uint_t fl = ust_qflags(q);
    ust_qflag_clr(q, QINSERVICE);
    int again = (fl & QENAB) && !(fl & QPROCSOFF);
    if ((fl & QENAB) && !again)
        ust_qflag_clr(q, QENAB);
    ust_unlock(&pv->lock);
    if (again)
        list_push(q); /* `work` carries over to the new run */
    else
        atomic_fetch_sub(&work, 1);
}

void ust_sched_cancel(queue_t *q)
{
    struct runlist *rl = __atomic_load_n(&ust_qpv(q)->runlist, __ATOMIC_ACQUIRE);
    if (!rl) { /* a scheduler list: by index (the array changes with a restart) */
        int n = atomic_load(&running);
        int i = __atomic_load_n(&ust_qpv(q)->cpu, __ATOMIC_RELAXED);
        if (!n || i < 0 || i >= n)
            return;
        rl = &lists[i];
    }
    int removed = 0;
    ust_lock(&rl->lock);
    for (queue_t **pp = &rl->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->q_link) {
        if (*pp == q) {
            *pp = q->q_link;
            if (rl->tail == q)
                rl->tail = prev;
            q->q_link = NULL;
            removed = 1;
            break;
        }
    }
    ust_unlock(&rl->lock);
    if (removed) {
        struct ust_qpriv *pv = ust_qpv(q);
        ust_lock(&pv->lock);
        ust_qflag_clr(q, QENAB);
        ust_unlock(&pv->lock);
        atomic_fetch_sub(&work, 1);
    }
}

void qenable(queue_t *q)
{
    if (!q)
        return;
    struct ust_qpriv *pv = ust_qpv(q);
    /* Atomic: a back-enable may reach a pair that is being reused (the
     * pool is type-stable), whose hook is being reset. */
    void (*hook)(queue_t *) = __atomic_load_n(&pv->head_enable, __ATOMIC_RELAXED);
    if (hook) {
        hook(q);
        return;
    }
    ust_sched_enable(q);
}

void noenable(queue_t *q)
{
    if (!q)
        return;
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    ust_qflag_set(q, QNOENB);
    ust_unlock(&pv->lock);
}

void enableok(queue_t *q)
{
    if (!q)
        return;
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock);
    ust_qflag_clr(q, QNOENB);
    ust_unlock(&pv->lock);
}

void ust_work_begin(void)
{
    atomic_fetch_add(&work, 1);
}

void ust_work_end(void)
{
    atomic_fetch_sub(&work, 1);
}

int ustreams_quiesce(long timeout_ms)
{
    long long deadline = ust_now_ns() + timeout_ms * 1000000LL;
    int calm = 0;
    while (calm < 3) {
        if (atomic_load(&work) == 0 && ust_timer_idle_within(20000000LL) &&
            atomic_load(&ust_bufcall_pending) == 0)
            calm++;
        else
            calm = 0;
        if (ust_now_ns() > deadline)
            return ETIMEDOUT;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

void ustreams_shutdown(void)
{
    ust_lock(&ctl_lock);
    int n = atomic_load(&running);
    if (n) {
        atomic_store(&stop, 1);
        for (int i = 0; i < n; i++) {
            ust_lock(&lists[i].lock);
            ust_cond_signal(&lists[i].wake);
            ust_unlock(&lists[i].lock);
        }
        for (int i = 0; i < n; i++)
            pthread_join(lists[i].thread, NULL);
        atomic_store(&running, 0);
        free(lists);
        lists = NULL;
        atomic_store(&stop, 0);
    }
    ust_unlock(&ctl_lock);
    ust_timer_shutdown();
    ust_bufcall_shutdown();
}

/*
 * ust_sched_fork_child -- fork() child hook (forksafe.c): nothing is taken in
 * prepare.  The run lists hold only the parent's queues and their locks may
 * be held by threads the child does not have, so the child drops them whole
 * (memory and all) with the lock that guards them; ctl_lock is re-initialised
 * rather than quiesced because ust_sched_start holds it across pthread_create
 * and may be reached with stream head locks held.  The next qenable starts
 * new scheduler threads (ust_sched_start), as at first use.
 */
void ust_sched_fork_child(void)
{
    ust_lock_init(&ctl_lock);
    free(lists);
    lists = NULL;
    atomic_store(&running, 0);
    atomic_store(&stop, 0);
    atomic_store(&work, 0);
    /* This thread's list held the parent's queues; other threads' lists are
     * lost with their threads (never reused). */
    ust_lock_init(&local_pool_lock);
    if (tls_local) {
        ust_lock_init(&tls_local->lock);
        tls_local->head = tls_local->tail = NULL;
    }
    tls_pending = 0;
}
