/* SPDX-License-Identifier: MIT */
/*
 * timeout.c -- timeout(9F), untimeout, qtimeout, quntimeout.
 *
 * Principles of operation
 *   One timer thread keeps the pending timeouts in a list sorted by expiry
 *   and sleeps until the first is due.  A due timeout moves to the in-flight
 *   list and runs on the timer thread -- or, for qtimeout, inside its queue's
 *   perimeters (ust_call_cb), which may defer it to whichever thread leaves
 *   the perimeter.  An entry leaves the in-flight list when its callback has
 *   returned.
 *
 *   A new timeout wakes the thread only when it would otherwise sleep past
 *   the new one's time (timer_wakes_at): a timeout set and cancelled per
 *   request (timod's probe, every TPI round trip) costs no wake-up and no
 *   futex call while the thread's earlier wake-up time still stands.
 *
 *   untimeout/quntimeout of a pending entry removes it; of an in-flight one
 *   waits until the callback has returned -- except from inside that callback
 *   (it would wait for itself), and except when the callback is still
 *   deferred at a perimeter: it is then taken out of the perimeter's FIFO.
 *   That case matters because a module calls quntimeout from its close
 *   routine, which holds the perimeter the callback waits for.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "strcore.h"

int ust_perim_cancel(queue_t *q, struct ust_defer *d);

struct tentry {
    struct tentry *next;
    toid_t id;
    long long when;      /* CLOCK_MONOTONIC ns */
    void (*func)(void *);
    void *arg;
    queue_t *q;          /* qtimeout: run inside q's perimeters */
    struct ust_defer defer;
    pthread_t runner;    /* thread running a plain timeout */
    int done;            /* callback returned */
};

/* timer_lock guards everything below; after perimeter and queue locks. */
static ust_lock_t timer_lock = UST_LOCK_INIT;
static ust_cond_t timer_cv;    /* the timer thread sleeps here */
static ust_cond_t done_cv;     /* untimeout waits here for a callback */
static struct tentry *pending; /* sorted by `when` */
static struct tentry *inflight;
static toid_t next_id = 1;
static int thread_running, thread_stop;
/* When the timer thread next looks at `pending` by itself: the time its
 * timed wait ends, LLONG_MAX when it waits for a signal, or a past time
 * while it runs (it looks again before it sleeps). */
static long long timer_wakes_at;
static pthread_t timer_thread;
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;
static _Thread_local struct tentry *tls_current; /* callback running on this thread */

static void timer_init(void)
{
    ust_cond_init(&timer_cv);
    ust_cond_init(&done_cv);
}

static void unlink_from(struct tentry **list, struct tentry *e)
{
    for (struct tentry **pp = list; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            e->next = NULL;
            return;
        }
}

static void finish(struct tentry *e)
{
    ust_lock(&timer_lock);
    unlink_from(&inflight, e);
    e->done = 1;
    ust_cond_broadcast(&done_cv);
    ust_unlock(&timer_lock);
    free(e);
}

static void qcb_done(struct ust_defer *d)
{
    finish(UST_CONTAINER(d, struct tentry, defer));
}

static void qcb_trampoline(void *arg)
{
    struct tentry *e = arg;
    struct tentry *saved = tls_current;
    tls_current = e;
    e->func(e->arg);
    tls_current = saved;
}

static void *timer_main(void *unused)
{
    (void)unused;
    ust_lock(&timer_lock);
    while (!thread_stop) {
        long long now = ust_now_ns();
        struct tentry *e = pending;
        if (!e) {
            timer_wakes_at = LLONG_MAX;
            ust_cond_wait(&timer_cv, &timer_lock);
            continue;
        }
        if (e->when > now) {
            timer_wakes_at = e->when;
            ust_cond_timedwait(&timer_cv, &timer_lock, e->when);
            continue;
        }
        timer_wakes_at = now; /* running: it looks at the list again */
        pending = e->next;
        e->next = inflight;
        inflight = e;
        e->runner = pthread_self();
        ust_unlock(&timer_lock);
        if (e->q) {
            e->defer.cb = qcb_trampoline;
            e->defer.arg = e;
            e->defer.done = qcb_done;
            atomic_fetch_add(&ust_qpv(e->q)->active, 1);
            ust_call_cb(e->q, &e->defer);
        } else {
            tls_current = e;
            e->func(e->arg);
            tls_current = NULL;
            finish(e);
        }
        ust_lock(&timer_lock);
    }
    ust_unlock(&timer_lock);
    return NULL;
}

/* Timeouts still to fail as if out of memory (ust_timeout_fail_next). */
static int fail_next; /* atomic */

void ust_timeout_fail_next(int n)
{
    __atomic_store_n(&fail_next, n, __ATOMIC_RELAXED);
}

/* 1 if this allocation is to fail (consumes one injected failure). */
static int fail_injected(void)
{
    int n = __atomic_load_n(&fail_next, __ATOMIC_RELAXED);
    while (n > 0)
        if (__atomic_compare_exchange_n(&fail_next, &n, n - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return 1;
    return 0;
}

static toid_t add_timeout(queue_t *q, void (*func)(void *), void *arg, long long ns)
{
    if (!func)
        return 0;
    if (ns < 0)
        ns = 0;
    pthread_once(&timer_once, timer_init);
    struct tentry *e = fail_injected() ? NULL : calloc(1, sizeof(*e));
    if (!e)
        return 0;
    e->func = func;
    e->arg = arg;
    e->q = q;
    e->when = ust_now_ns() + ns;
    ust_lock(&timer_lock);
    if (!thread_running) {
        thread_stop = 0;
        if (ust_thread_create(&timer_thread, NULL, timer_main, NULL) != 0) {
            ust_unlock(&timer_lock);
            free(e);
            return 0;
        }
        thread_running = 1;
        timer_wakes_at = 0; /* the new thread looks before it sleeps */
    }
    e->id = next_id++;
    struct tentry **pp = &pending;
    while (*pp && (*pp)->when <= e->when)
        pp = &(*pp)->next;
    e->next = *pp;
    *pp = e;
    /* Wake the thread only if it would sleep past e's time: after a
     * cancelled timeout it still wakes at that one's time and then looks
     * again, so a request/cancel pattern (timod's probe per round trip)
     * wakes it once per period, not once per request. */
    if (pending == e && e->when < timer_wakes_at)
        ust_cond_signal(&timer_cv);
    toid_t id = e->id;
    ust_unlock(&timer_lock);
    return id;
}

/* Ticks to ns, saturating (a tick count near LONG_MAX must not wrap). */
static long long ticks_ns(long ticks)
{
    const long long per = 1000000000LL / HZ;
    if (ticks <= 0)
        return 0;
    return (long long)ticks > LLONG_MAX / per ? LLONG_MAX / 2 : (long long)ticks * per;
}

toid_t timeout(void (*func)(void *), void *arg, long ticks)
{
    return add_timeout(NULL, func, arg, ticks_ns(ticks));
}

toid_t ust_timeout_ns(void (*func)(void *), void *arg, long long ns)
{
    return add_timeout(NULL, func, arg, ns);
}

timeout_id_t qtimeout(queue_t *q, void (*func)(void *), void *arg, long ticks)
{
    if (!q)
        return 0;
    return add_timeout(q, func, arg, ticks_ns(ticks));
}

static struct tentry *find(struct tentry *list, toid_t id)
{
    for (; list; list = list->next)
        if (list->id == id)
            return list;
    return NULL;
}

static long cancel(toid_t id)
{
    if (id == 0)
        return -1;
    pthread_once(&timer_once, timer_init);
    ust_lock(&timer_lock);
    struct tentry *e = find(pending, id);
    if (e) {
        unlink_from(&pending, e);
        ust_unlock(&timer_lock);
        long long left = e->when - ust_now_ns();
        free(e);
        return left > 0 ? (long)(left / (1000000000LL / HZ)) : 0;
    }
    e = find(inflight, id);
    if (!e || e == tls_current) {
        ust_unlock(&timer_lock);
        return -1;
    }
    /* In flight: wait for it, taking it out of a perimeter FIFO if it is
     * deferred there (retried, as it may be on its way into one). */
    while (find(inflight, id)) {
        if (e->q) {
            ust_unlock(&timer_lock);
            int removed = ust_perim_cancel(e->q, &e->defer);
            ust_lock(&timer_lock);
            if (removed) {
                unlink_from(&inflight, e);
                ust_unlock(&timer_lock);
                free(e);
                return -1;
            }
            if (!find(inflight, id))
                break;
            ust_cond_timedwait(&done_cv, &timer_lock, ust_now_ns() + 1000000LL);
        } else {
            ust_cond_wait(&done_cv, &timer_lock);
        }
    }
    ust_unlock(&timer_lock);
    return -1;
}

long untimeout(toid_t id)
{
    return cancel(id);
}

long quntimeout(queue_t *q, timeout_id_t id)
{
    (void)q;
    return cancel(id);
}

/* For ustreams_quiesce: nothing in flight and nothing due within ns. */
int ust_timer_idle_within(long long ns)
{
    pthread_once(&timer_once, timer_init);
    ust_lock(&timer_lock);
    int idle = !inflight && (!pending || pending->when > ust_now_ns() + ns);
    ust_unlock(&timer_lock);
    return idle;
}

void ust_timer_shutdown(void)
{
    pthread_once(&timer_once, timer_init);
    ust_lock(&timer_lock);
    if (!thread_running) {
        ust_unlock(&timer_lock);
        return;
    }
    thread_stop = 1;
    ust_cond_signal(&timer_cv);
    ust_unlock(&timer_lock);
    pthread_join(timer_thread, NULL);
    ust_lock(&timer_lock);
    thread_running = 0;
    struct tentry *e = pending;
    pending = NULL;
    ust_unlock(&timer_lock);
    while (e) { /* never fired: they are cancelled */
        struct tentry *n = e->next;
        free(e);
        e = n;
    }
}

/* ------------------------------------------------------------------------ */
/* fork() (forksafe.c)                                                      */
/* ------------------------------------------------------------------------ */
/* Quiesced: timer_lock is never held across a callback or a wait for
 * another thread (cancel's wait releases it). */
void ust_timer_fork_prepare(void)
{
    ust_lock(&timer_lock);
}

void ust_timer_fork_parent(void)
{
    ust_unlock(&timer_lock);
}

/* The child has no timer thread, and every timeout pending or running at the
 * fork was set by the parent (by its modules, for its streams, which the
 * child does not drive): they are dropped, their ids stay unknown
 * (untimeout returns -1).  The thread is started again by the next timeout. */
void ust_timer_fork_child(void)
{
    struct tentry *lists[2] = {pending, inflight};
    pending = inflight = NULL;
    for (int i = 0; i < 2; i++) {
        for (struct tentry *e = lists[i], *n; e != NULL; e = n) {
            n = e->next;
            free(e);
        }
    }
    thread_running = thread_stop = 0;
    timer_wakes_at = 0;
    tls_current = NULL;
    ust_cond_init(&timer_cv);
    ust_cond_init(&done_cv);
    ust_unlock(&timer_lock);
}
