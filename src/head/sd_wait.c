/* SPDX-License-Identifier: MIT */
/*
 * sd_wait.c -- waiting at a stream head: readers, writers and opens sleep
 * on a wait point (struct ust_waitq) until its sequence number moves.
 *
 * Principles of operation
 *   A waiter reads the sequence number, checks its condition, and sleeps
 *   with FUTEX_WAIT on the number it read, so a wake-up between the check
 *   and the sleep is never lost; an untimed FUTEX_WAIT is interrupted by a
 *   signal handler exactly as a blocking system call is (restarted with
 *   SA_RESTART, EINTR without).  A call that has already done part of its
 *   work (a write that sent some of its messages) waits with
 *   ust_sd_wait_intr instead, which a handler always interrupts, so that it
 *   returns what it did, as write(2) does, rather than go on waiting under
 *   SA_RESTART.  Before sleeping a waiter spins a little
 *   (USTREAMS_SPIN_US) on more than one CPU (spin_take), yielding the CPU
 *   now and then (spin_yield_every); a reader of a pipe split across
 *   processes spins on the ring itself and arms it only before it sleeps
 *   (ust_xpipe_reader).  Wakers bump the number and wake only when someone
 *   sleeps (`waiters`).
 *
 * Locking: none of its own (the futex word and counters are atomics); a
 *   waiter holds no library lock while it sleeps.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sd_chan.h"
#include "sthead.h"

static long futex(atomic_uint *addr, int op, unsigned val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/* Environment variable name as a number in [0, max], else def. */
static long env_number(const char *name, long def, long max)
{
    long n = def;
    const char *e = getenv(name);
    if (e && *e)
        n = strtol(e, NULL, 10);
    return n < 0 || n > max ? def : n;
}

/* How long a waiter spins before sleeping: USTREAMS_SPIN_US microseconds
 * (default 20; 0 turns spinning off); never on a single CPU. */
static int spin_ns(void)
{
    static int cached = -1; /* atomic (relaxed): -1 until read */
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v >= 0)
        return v;
    v = sysconf(_SC_NPROCESSORS_ONLN) < 2 ? 0
                                           : (int)env_number("USTREAMS_SPIN_US", 20, 10000) * 1000;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    return v;
}

/* How often a spinning waiter yields its CPU: every USTREAMS_SPIN_YIELD
 * rounds of the spin (default 16, about a microsecond; 0: never).  On a
 * machine with more busy threads than CPUs the thread a reader waits for may
 * be waiting for this very CPU: sched_yield hands it over at once (measured
 * 2026-11-28: two pipes on two CPUs 1.3-1.5x at 4 KiB and 64 KiB, one pipe
 * unchanged; bench/README.md "Spinning that yields").  Where nobody else
 * wants the CPU it returns at once. */
static int spin_yield_every(void)
{
    static int cached = -1; /* atomic (relaxed): -1 until read */
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = (int)env_number("USTREAMS_SPIN_YIELD", 16, 1000000);
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

/*
 * The spin of a wait, in ns (0: sleep at once): spin_ns, every time.  An
 * adaptive budget per thread (halved after a spin that ran out, doubled
 * after one that paid) was tried on 2026-11-27 and is off: in one process a
 * 64 KiB writer's copy outlasts many spins, the budget collapsed, and the
 * reader slept at every message -- 3x slower than with the full spin
 * (bench/README.md, "Between processes, one copy per side").
 */
static int spin_take(void)
{
    return spin_ns();
}

/* Set around a wait that must not spin (ust_sd_wait_data_nospin). */
static _Thread_local unsigned char tls_nospin;

unsigned ust_sd_wait_seq(struct ust_waitq *w)
{
    return atomic_load(&w->seq);
}

/*
 * Gathering a batch.  A dry reader whose spin sees a deposit does not take it
 * at once if more keep coming: a reader faster than its writer would
 * otherwise take every message as it lands, and both threads would pay the
 * arrival lock's and the arrivals' lines crossing CPUs at every message.  It
 * keeps looking, one window of pauses at a time, while the arrivals grow,
 * up to BATCH_BYTES (at most half the room, so that the writer never fills
 * it and stops) or USTREAMS_BATCH_US.  A window in which nothing came ends
 * the gathering: a lone message (a request, a reply) waits one window only.
 * The window is short unless this thread's last gathering saw growth (a
 * stream).  bench/README.md "Batches gathered by the reader".
 */
#define BATCH_BYTES 8192
#define BATCH_WIN_QUIET 8    /* pauses (~13 ns each here) in a probing window */
#define BATCH_WIN_STREAM 128 /* ... in a window after a gathering that saw growth */

#define BATCH_PROBE_EVERY 16 /* without a stream: gather at one dry wait in this many */

static _Thread_local unsigned char tls_streaming, tls_probe;

/* USTREAMS_BATCH_US: the longest gathering, in µs (default 20, the spin's: a
 * steady trickle of small messages waits no longer than that; 0: none). */
static long batch_ns(void)
{
    static long cached = -1; /* atomic (relaxed): -1 until read */
    long v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = env_number("USTREAMS_BATCH_US", 20, 10000) * 1000;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* Let the arrivals of sd grow while they do (see "Gathering a batch"); ends
 * early when w moves on (a wake: hang-up, error, another reader). */
static void batch_gather(struct stdata *sd, struct ust_waitq *w, unsigned seq, int yield)
{
    long max_ns = batch_ns();
    if (max_ns == 0)
        return;
    if (!tls_streaming && (++tls_probe & (BATCH_PROBE_EVERY - 1)) != 0)
        return; /* no stream seen lately: take it now, look again later */
    size_t room, had = ust_sd_arrivals_gathered(sd, &room);
    size_t enough = room / 2 < BATCH_BYTES ? room / 2 : BATCH_BYTES;
    int win = tls_streaming ? BATCH_WIN_STREAM : BATCH_WIN_QUIET;
    long long until = ust_now_ns() + max_ns;
    int grew = 0;
    while (had < enough) {
        for (int k = 0; k < win; k++)
            __builtin_ia32_pause();
        if (atomic_load_explicit(&w->seq, memory_order_acquire) != seq)
            break;
        size_t now = ust_sd_arrivals_gathered(sd, &room);
        if (now <= had) /* nothing came (or the writer absorbed them itself) */
            break;
        grew = 1;
        had = now;
        if (ust_now_ns() > until)
            break;
        if (yield) /* two pairs on two CPUs: the writer may want this one */
            sched_yield();
    }
    tls_streaming = (unsigned char)grew;
}

/* A pipe's arrivals at sd (sd_arrive.c), seen without their lock. */
static int arrivals_seen(struct stdata *sd)
{
    return __atomic_load_n(&sd->sd_ar.first, __ATOMIC_ACQUIRE) != NULL;
}

/* ust_sd_wait_from; with `arrivals` (a reader of sd_rwait whose read queue
 * is empty) the spin also ends when a pipe's writer deposits, and the
 * arrivals are marked sleepy (ust_sd_arrivals_sleep) only when the spin
 * gives up, so that a writer feeding a spinning reader makes no wake-up. */
static int wait_body(struct stdata *sd, struct ust_waitq *w, unsigned seq, long long deadline_ns,
                     int arrivals, int *seen, int intr);

/* The wait, outside the caller's ust_sd_lockq section while sd_lock is
 * dropped (sd_ready.c: what runs here meanwhile must not think it held). */
static int wait_common(struct stdata *sd, struct ust_waitq *w, unsigned seq, long long deadline_ns,
                       int arrivals, int *seen, int intr)
{
    int paused = ust_sd_lockq_pause(sd);
    int e = wait_body(sd, w, seq, deadline_ns, arrivals, seen, intr);
    ust_sd_lockq_resume(sd, paused);
    return e;
}

static int wait_body(struct stdata *sd, struct ust_waitq *w, unsigned seq, long long deadline_ns,
                     int arrivals, int *seen, int intr)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns) {
        long long left = deadline_ns - ust_now_ns();
        if (left <= 0)
            return ETIME;
        ts.tv_sec = left / 1000000000LL;
        ts.tv_nsec = left % 1000000000LL;
        tsp = &ts;
    } else if (intr) {
        /* Interruptible whatever SA_RESTART says: a timed futex wait is
         * never restarted after a handler (EINTR).  Its timeout is the
         * safety net's interval, standing in for the net (sd_watch.c). */
        ts.tv_sec = UST_WAIT_RECHECK_NS / 1000000000LL;
        ts.tv_nsec = UST_WAIT_RECHECK_NS % 1000000000LL;
        tsp = &ts;
    }
    /* A reader of a stream over a kernel socket waits on the socket itself
     * (sd_chan.c): one wake-up, as a socket's reader. */
    queue_t *chrq = NULL;
    struct ust_iow *ch = arrivals && !deadline_ns && !intr && sd->sd_xend == NULL
                             ? ust_sd_chan_of(sd, &chrq)
                             : NULL;
    ust_unlock(&sd->sd_lock);
    /* A reader of a pipe end split across processes takes what comes into
     * the ring itself, on this thread, while it spins (sd_xpipe.c): no
     * doorbell, no hand-over to the epoll thread while data flows. */
    int xr = arrivals && __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) != NULL;
    const struct ust_procs_ops *px = xr ? ust_sd_procs() : NULL; /* set: sd_xend is */
    /* xdirect: the read copies from the ring itself (sd_xpipe_direct.c):
     * data in the ring ends the wait; nothing is pulled up to the head. */
    int xdirect = 0;
    if (xr) {
        xdirect = px->xpipe_reader(sd, UST_XREADER_ENTER);
        if (xdirect == 2) { /* it met the ring claimed: sleep on the head */
            px->xpipe_reader(sd, UST_XREADER_LEAVE);
            xr = 0;
            xdirect = 0;
        }
    }
    if (xr) {
        if (xdirect ? px->xpipe_reader(sd, UST_XREADER_READY)
                    : px->xpipe_pull(sd) && atomic_load(&w->seq) != seq)
            goto xseen;
    }
    /* What this call enabled must not wait for its wake-up (it may be what
     * brings it: an M_IOCACK, a reply, a drain). */
    ust_sched_handoff();
    if (ch != NULL) {
        /* Data a module or driver put at the head on another thread lands in
         * the arrivals (sd_arrive.c ust_sd_arrive), which wake a reader only
         * once it marked them sleepy: mark them before polling, as a futex
         * sleeper does, so that the next arrival kicks the poll. */
        if (!ust_sd_arrivals_sleep(sd)) {
            *seen = 1;
            ust_lock(&sd->sd_lock);
            return 0;
        }
        int e = ust_sd_chan_wait(sd, ch, chrq, w, seq, seen);
        if (e >= 0) {
            ust_lock(&sd->sd_lock);
            return e;
        }
    }
    /* Spin a little first: on another CPU the event is often a microsecond
     * away, and a wake-up through the kernel costs tens of them (for both
     * threads).  Wakers bump seq whether or not anyone sleeps. */
    int spin = tls_nospin ? 0 : spin_take();
    if (spin > 0) {
        long long until = ust_now_ns() + spin;
        /* Not for a split pipe's reader: it pulls the ring as it spins. */
        int yield = xr ? 0 : spin_yield_every();
        for (int i = 0; atomic_load_explicit(&w->seq, memory_order_acquire) == seq; i++) {
            if (arrivals && arrivals_seen(sd)) {
                if (!xr) /* a split pipe's arrivals grow by its reader's pulls */
                    batch_gather(sd, w, seq, yield);
                break;
            }
            if (xr && (i & 15) == 15 && px->xpipe_reader(sd, UST_XREADER_READY)) {
                if (xdirect || (px->xpipe_pull(sd) && atomic_load(&w->seq) != seq))
                    goto xseen;
            }
            if ((i & 15) == 15 && ust_now_ns() > until)
                break;
            if (yield && i % yield == yield - 1)
                sched_yield();
            __builtin_ia32_pause();
        }
        int paid = atomic_load(&w->seq) != seq || (arrivals && arrivals_seen(sd));
        if (paid) {
            if (xr)
                px->xpipe_reader(sd, UST_XREADER_LEAVE);
            *seen = 1;
            ust_lock(&sd->sd_lock);
            return 0;
        }
    }
    if (xr && px->xpipe_reader(sd, UST_XREADER_SLEEP)) { /* armed, unless data came */
        xr = 0;
        if (!xdirect)
            px->xpipe_pull(sd);
        *seen = 1;
        ust_lock(&sd->sd_lock);
        return 0;
    }
    if (arrivals && !ust_sd_arrivals_sleep(sd)) { /* a deposit came after all */
        if (xdirect)
            px->xpipe_reader(sd, UST_XREADER_WOKE);
        *seen = 1;
        ust_lock(&sd->sd_lock);
        return 0;
    }
    atomic_fetch_add(&w->waiters, 1);
    int slot = tsp ? -1 : ust_sd_watch_enter(w, seq); /* sd_watch.c: the safety net */
    long r = futex(&w->seq, FUTEX_WAIT_PRIVATE, seq, tsp);
    int e = r == -1 ? errno : 0;
    if (xdirect) /* no longer asleep for the ring (sd_xpipe_direct.c) */
        px->xpipe_reader(sd, UST_XREADER_WOKE);
    ust_sd_watch_leave(slot);
    if (e != 0) /* not woken (EAGAIN, EINTR, ETIMEDOUT): no waker took us off */
        atomic_fetch_sub(&w->waiters, 1);
    ust_lock(&sd->sd_lock);
    if (e == EINTR)
        return EINTR;
    if (e == ETIMEDOUT)
        return deadline_ns ? ETIME : 0; /* intr: the net's look again */
    return 0;
xseen:
    px->xpipe_reader(sd, UST_XREADER_LEAVE);
    *seen = 1;
    ust_lock(&sd->sd_lock);
    return 0;
}

int ust_sd_wait_from(struct stdata *sd, struct ust_waitq *w, unsigned seq, long long deadline_ns)
{
    int seen = 0;
    return wait_common(sd, w, seq, deadline_ns, 0, &seen, 0);
}

int ust_sd_wait_intr(struct stdata *sd, struct ust_waitq *w, unsigned seq)
{
    int seen = 0;
    return wait_common(sd, w, seq, 0, 0, &seen, 1);
}

int ust_sd_wait_data(struct stdata *sd, unsigned seq, int *unwoken)
{
    int seen = 0;
    int e = wait_common(sd, &sd->sd_rwait, seq, 0, 1, &seen, 0);
    *unwoken = e == 0 && !seen && ust_sd_wait_seq(&sd->sd_rwait) == seq;
    return e;
}

/* ust_sd_wait_data without the spin: for a read-fill read that still lacks
 * much of its count (sd_read.c), which a spin would not see satisfied --
 * spinning, it took the CPU its writer needed (issue 24 item 4). */
int ust_sd_wait_data_nospin(struct stdata *sd, unsigned seq, int *unwoken)
{
    tls_nospin = 1;
    int e = ust_sd_wait_data(sd, seq, unwoken);
    tls_nospin = 0;
    return e;
}

int ust_sd_wait(struct stdata *sd, struct ust_waitq *w, long long deadline_ns)
{
    return ust_sd_wait_from(sd, w, atomic_load(&w->seq), deadline_ns);
}

void ust_sd_wake(struct ust_waitq *w)
{
    atomic_fetch_add(&w->seq, 1);
    ust_sd_chan_kick(w); /* a reader polling its channel's socket (sd_chan.c) */
    /* A system call only while someone sleeps (or is about to), and only
     * once per sleep: the waker takes the threads it woke off `waiters`
     * itself (futex returns how many), so the wakers that follow, before a
     * woken reader has even run, see none.  A woken thread returns 0 from
     * its wait and does not count itself off again; one that was not woken
     * (the sequence had moved, a signal, a timeout) does.  So `waiters`
     * counts exactly the threads registered and not yet woken, and a waker
     * that sees 0 needs no call: a thread registering after that sees the
     * new sequence at its futex wait.  (An earlier "kicked" flag meant to
     * do this lost wake-ups: a waker preempted between reading `waiters`
     * and setting the flag could set it for the sleeper's next sleep.) */
    ust_sd_wake_sleepers(w);
}

void ust_sd_wake_sleepers(struct ust_waitq *w)
{
    if (atomic_load(&w->waiters) > 0) {
        long n = futex(&w->seq, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL);
        if (n > 0)
            atomic_fetch_sub(&w->waiters, (int)n);
    }
}
