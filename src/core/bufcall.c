/* SPDX-License-Identifier: MIT */
/*
 * bufcall.c -- bufcall(9F), esbbcall, unbufcall, qbufcall, qunbufcall.
 *
 * Principles of operation
 * -----------------------
 * A bufcall is a record on one list: func(arg) is to be called once, when
 * memory may have become available.  That is taken to be the case (1) when a
 * data unit is freed -- freeb calls ust_bufcall_kick whenever
 * ust_bufcall_pending is non-zero -- and (2) at the latest when the retry
 * period (10 ms) after registration has passed, since memory is also freed
 * outside STREAMS.  The size is not used to choose: any free may do.
 *
 * The callbacks run on one internal thread, started by the first bufcall and
 * stopped by ust_bufcall_shutdown, never on the thread that freed the block
 * (freeb may be called with any lock held) and never with a lock held.  A
 * kick costs the freeing thread one atomic exchange while a kick is already
 * outstanding, and a lock/signal otherwise.
 *
 * States of a record:
 *   PENDING  on the list, waiting for a kick or its deadline;
 *   RUNNING  func is running on thread runner (bufcall), or inside the
 *            perimeter (qbufcall);
 *   QUEUED   qbufcall only: handed to ust_call_cb, func not yet started
 *            (the perimeter may be busy); cancelled is set by qunbufcall;
 *   RAN      qbufcall only: func returned (or was skipped), done() not yet
 *            called.
 * A bufcall record is freed when func returns; a qbufcall record when the
 * perimeter code calls its done().  unbufcall removes a PENDING record,
 * cancels a QUEUED one (it will not run), and waits for a RUNNING one unless
 * it is called from that very callback.  It does not wait for a QUEUED one:
 * a close routine holding the perimeter exclusively would wait forever.
 *
 * Lock: the bufcall lock (below the timer lock, above the block depot lock)
 * guards the list, every record's state and the thread's control fields.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "strcore.h"

enum { BC_PENDING = 1, BC_QUEUED, BC_RUNNING, BC_RAN };

struct bc_rec {
    struct bc_rec *next, *prev; /* BC: the list of live records */
    bufcall_id_t id;            /* constant */
    size_t size;                /* constant; informational */
    void (*func)(void *);       /* constant */
    void *arg;                  /* constant */
    queue_t *q;                 /* constant: qbufcall's queue, else NULL */
    long long due;              /* BC: run at this time (CLOCK_MONOTONIC ns) if not kicked */
    int state;                  /* BC: BC_* */
    int cancelled;              /* BC: qunbufcall while QUEUED */
    pthread_t runner;           /* BC: thread running func (bufcall, RUNNING) */
    struct ust_defer defer;     /* qbufcall: node handed to ust_call_cb */
};

atomic_long ust_bufcall_pending; /* records PENDING; read on every free */

static atomic_int bc_kicked; /* a kick not yet seen by the thread */

static struct {
    ust_lock_t lock;            /* the bufcall lock: guards everything below */
    ust_cond_t wake;            /* the thread waits here */
    ust_cond_t done;            /* unbufcall and shutdown wait here */
    struct bc_rec *head, *tail; /* live records, in order of registration */
    bufcall_id_t last_id;       /* ids: 64-bit counter, never 0 */
    long long retry_ns;         /* retry period */
    pthread_t thread;           /* the bufcall thread, while running */
    int running;                /* the thread exists (started, not yet joined) */
    int stop;                   /* the thread is asked to exit */
} bc = {.lock = UST_LOCK_INIT, .retry_ns = 10 * 1000000LL};

static pthread_once_t bc_once = PTHREAD_ONCE_INIT;

static void bc_init_conds(void)
{
    ust_cond_init(&bc.wake);
    ust_cond_init(&bc.done);
}

static void bc_link(struct bc_rec *r)
{
    UST_ASSERT_HELD(&bc.lock);
    r->next = NULL;
    r->prev = bc.tail;
    if (bc.tail != NULL)
        bc.tail->next = r;
    else
        bc.head = r;
    bc.tail = r;
}

static void bc_unlink(struct bc_rec *r)
{
    UST_ASSERT_HELD(&bc.lock);
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        bc.head = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    else
        bc.tail = r->prev;
}

static struct bc_rec *bc_find(bufcall_id_t id)
{
    UST_ASSERT_HELD(&bc.lock);
    for (struct bc_rec *r = bc.head; r != NULL; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

/* qbufcall: the perimeter runs this in place of func. */
static void bc_qtramp(void *arg)
{
    struct bc_rec *r = arg;
    ust_lock(&bc.lock);
    if (r->cancelled) {
        r->state = BC_RAN;
        ust_unlock(&bc.lock);
        return;
    }
    r->state = BC_RUNNING;
    r->runner = pthread_self();
    ust_unlock(&bc.lock);
    r->func(r->arg);
    ust_lock(&bc.lock);
    r->state = BC_RAN;
    ust_cond_broadcast(&bc.done);
    ust_unlock(&bc.lock);
}

/* qbufcall: the perimeter is done with the record. */
static void bc_qdone(struct ust_defer *d)
{
    struct bc_rec *r = UST_CONTAINER(d, struct bc_rec, defer);
    ust_lock(&bc.lock);
    bc_unlink(r);
    ust_cond_broadcast(&bc.done);
    ust_unlock(&bc.lock);
    free(r);
}

/* Run one PENDING record; called and returns with the bufcall lock held, but
 * drops it around the callback. */
static void bc_fire(struct bc_rec *r)
{
    UST_ASSERT_HELD(&bc.lock);
    atomic_fetch_sub_explicit(&ust_bufcall_pending, 1, memory_order_relaxed);
    if (r->q == NULL) {
        r->state = BC_RUNNING;
        r->runner = pthread_self();
        ust_unlock(&bc.lock);
        r->func(r->arg);
        ust_lock(&bc.lock);
        bc_unlink(r);
        free(r);
        ust_cond_broadcast(&bc.done);
        return;
    }
    queue_t *q = r->q;
    r->state = BC_QUEUED;
    memset(&r->defer, 0, sizeof(r->defer));
    r->defer.kind = UST_DEFER_CALLBACK;
    r->defer.q = q;
    r->defer.cb = bc_qtramp;
    r->defer.arg = r;
    r->defer.done = bc_qdone;
    ust_unlock(&bc.lock);
    /* r may be freed by bc_qdone from here on. */
    atomic_fetch_add(&ust_qpv(q)->active, 1);
    ust_call_cb(q, &r->defer);
    ust_lock(&bc.lock);
}

static void *bc_main(void *unused)
{
    (void)unused;
    ust_lock(&bc.lock);
    while (!bc.stop) {
        if (atomic_exchange(&bc_kicked, 0)) {
            for (struct bc_rec *r = bc.head; r != NULL; r = r->next)
                if (r->state == BC_PENDING)
                    r->due = 0;
        }
        long long now = ust_now_ns(), next = -1;
        struct bc_rec *due = NULL;
        for (struct bc_rec *r = bc.head; r != NULL; r = r->next) {
            if (r->state != BC_PENDING)
                continue;
            if (r->due <= now) {
                due = r;
                break;
            }
            if (next < 0 || r->due < next)
                next = r->due;
        }
        if (due != NULL)
            bc_fire(due);
        else if (next < 0)
            ust_cond_wait(&bc.wake, &bc.lock);
        else
            ust_cond_timedwait(&bc.wake, &bc.lock, next);
    }
    ust_unlock(&bc.lock);
    return NULL;
}

/* Start the thread if it is not running.  Bufcall lock held.  0 or errno. */
static int bc_start(void)
{
    UST_ASSERT_HELD(&bc.lock);
    if (bc.running)
        return 0;
    int err = ust_thread_create(&bc.thread, NULL, bc_main, NULL);
    if (err == 0)
        bc.running = 1;
    return err;
}

static bufcall_id_t bc_register(queue_t *q, size_t size, void (*func)(void *), void *arg)
{
    if (func == NULL)
        return 0;
    pthread_once(&bc_once, bc_init_conds);
    struct bc_rec *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return 0;
    r->size = size;
    r->func = func;
    r->arg = arg;
    r->q = q;
    r->state = BC_PENDING;
    ust_lock(&bc.lock);
    /* While a shutdown is joining the thread, register without one: the
     * record waits for the next bufcall or kick, which restart it. */
    if (!bc.stop && bc_start() != 0) {
        ust_unlock(&bc.lock);
        free(r);
        return 0;
    }
    r->id = ++bc.last_id;
    r->due = ust_now_ns() + bc.retry_ns;
    bc_link(r);
    atomic_fetch_add_explicit(&ust_bufcall_pending, 1, memory_order_relaxed);
    ust_cond_signal(&bc.wake);
    bufcall_id_t id = r->id;
    ust_unlock(&bc.lock);
    return id;
}

/*
 * bufcall -- call func(arg) once when a buffer of size bytes may be available
 *   (bufcall(9F)).
 *   Context: any thread; never blocks; callable with locks held.  func runs
 *   on the bufcall thread with no lock held, after the next free of a data
 *   block or at the latest after the retry period (10 ms); it should retry
 *   its allocation and bufcall again if that fails.
 *   Returns a non-zero id for unbufcall, or 0 (func NULL, no memory, or the
 *   thread cannot be started).
 */
bufcall_id_t bufcall(size_t size, uint_t pri, void (*func)(void *), void *arg)
{
    (void)pri;
    return bc_register(NULL, size, func, arg);
}

/*
 * esbbcall -- bufcall for a failed esballoc (esbbcall(9F)).  As bufcall.
 */
bufcall_id_t esbbcall(uint_t pri, void (*func)(void *), void *arg)
{
    (void)pri;
    return bc_register(NULL, 0, func, arg);
}

/*
 * qbufcall -- bufcall whose callback runs inside q's perimeter, like q's own
 *   procedures (qbufcall(9F)).
 *   Context: any thread; never blocks.  The module must cancel it with
 *   qunbufcall before q is closed.
 *   Returns a non-zero id, or 0 (q or func NULL, or no memory).
 */
bufcall_id_t qbufcall(queue_t *q, size_t size, uint_t pri, void (*func)(void *), void *arg)
{
    (void)pri;
    if (q == NULL)
        return 0;
    return bc_register(q, size, func, arg);
}

/*
 * unbufcall -- cancel a bufcall (unbufcall(9F)).
 *   Context: any thread; no executive lock held (it may wait).  If the
 *   callback has not started it never will; if it is running on another
 *   thread, unbufcall returns after it has finished; called from the callback
 *   itself it returns at once.  Unknown or finished ids (and 0) are ignored.
 */
void unbufcall(bufcall_id_t id)
{
    if (id == 0)
        return;
    pthread_once(&bc_once, bc_init_conds);
    struct bc_rec *gone = NULL;
    ust_lock(&bc.lock);
    for (;;) {
        struct bc_rec *r = bc_find(id);
        if (r == NULL)
            break;
        if (r->state == BC_PENDING) {
            bc_unlink(r);
            atomic_fetch_sub_explicit(&ust_bufcall_pending, 1, memory_order_relaxed);
            gone = r;
            break;
        }
        if (r->state == BC_QUEUED) {
            r->cancelled = 1;
            break;
        }
        if (r->state != BC_RUNNING || pthread_equal(r->runner, pthread_self()))
            break;
        ust_cond_wait(&bc.done, &bc.lock);
    }
    ust_unlock(&bc.lock);
    free(gone);
}

/*
 * qunbufcall -- cancel a qbufcall (qunbufcall(9F)).  As unbufcall; q is the
 *   queue given to qbufcall.
 */
void qunbufcall(queue_t *q, bufcall_id_t id)
{
    (void)q;
    unbufcall(id);
}

/*
 * ust_bufcall_kick -- see strcore.h.
 *   Context: freeb, any thread, any lock above the bufcall lock may be held.
 *   Only wakes the bufcall thread (restarting it after a shutdown).
 */
void ust_bufcall_kick(void)
{
    /* Already kicked and not yet seen by the thread: nothing to do (a load
     * first, so that concurrent frees do not fight over the line). */
    if (atomic_load_explicit(&bc_kicked, memory_order_relaxed) || atomic_exchange(&bc_kicked, 1))
        return;
    pthread_once(&bc_once, bc_init_conds);
    ust_lock(&bc.lock);
    if (!bc.stop && (bc.running || bc_start() == 0))
        ust_cond_signal(&bc.wake);
    ust_unlock(&bc.lock);
}

/*
 * ust_bufcall_shutdown -- see strcore.h.
 *   Context: any thread but the bufcall thread; no executive lock held.
 */
void ust_bufcall_shutdown(void)
{
    pthread_once(&bc_once, bc_init_conds);
    ust_lock(&bc.lock);
    if (!bc.running || pthread_equal(bc.thread, pthread_self())) {
        ust_unlock(&bc.lock);
        return;
    }
    if (bc.stop) {
        /* another thread is joining it */
        while (bc.running)
            ust_cond_wait(&bc.done, &bc.lock);
        ust_unlock(&bc.lock);
        return;
    }
    bc.stop = 1;
    ust_cond_signal(&bc.wake);
    pthread_t t = bc.thread;
    ust_unlock(&bc.lock);
    pthread_join(t, NULL);
    ust_lock(&bc.lock);
    bc.running = 0;
    bc.stop = 0;
    ust_cond_broadcast(&bc.done);
    ust_unlock(&bc.lock);
}

/*
 * ust_bufcall_set_retry -- see strcore.h.  Context: any thread.
 */
long ust_bufcall_set_retry(long ms)
{
    ust_lock(&bc.lock);
    long old = (long)(bc.retry_ns / 1000000);
    if (ms > 0)
        bc.retry_ns = ms * 1000000LL;
    ust_unlock(&bc.lock);
    return old;
}

/* ------------------------------------------------------------------------ */
/* fork() (forksafe.c)                                                      */
/* ------------------------------------------------------------------------ */
/* Quiesced: the bufcall lock is released around every callback and wait. */
void ust_bufcall_fork_prepare(void)
{
    ust_lock(&bc.lock);
}

void ust_bufcall_fork_parent(void)
{
    ust_unlock(&bc.lock);
}

/* As timeouts (timeout.c): the parent's bufcalls are dropped in the child,
 * which has no bufcall thread; the next bufcall or kick starts one. */
void ust_bufcall_fork_child(void)
{
    for (struct bc_rec *r = bc.head, *n; r != NULL; r = n) {
        n = r->next;
        free(r);
    }
    bc.head = bc.tail = NULL;
    bc.running = bc.stop = 0;
    atomic_store_explicit(&ust_bufcall_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&bc_kicked, 0, memory_order_relaxed);
    ust_cond_init(&bc.wake);
    ust_cond_init(&bc.done);
    ust_unlock(&bc.lock);
}
