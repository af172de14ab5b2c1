/* SPDX-License-Identifier: MIT */
/*
 * sd_close.c -- closing streams: strm_close and ust_sd_teardown, the
 * close-time drain and the wait for calls still inside the stream.  Opening,
 * the table of streams and the share table are in sd_open.c.
 *
 * Principles of operation
 *   Closing.  Descriptors hold references (sd_refs).  A reference is only
 *   ever added to a stream that still has one (a reopen that finds the count
 *   at zero waits for the close under way), so whoever drops the last one
 *   owns the stream alone and calls ust_sd_teardown: it marks the stream STRCLOSE, wakes every
 *   waiter, waits for the calls still inside the stream to leave, sends the
 *   held (SNDHOLD) message, then from the top closes each module and finally
 *   the driver (or, for a pipe end, hands over to sd_pipe.c), each after
 *   waiting up to the close time (I_SETCLTIME) for its write queue to drain,
 *   unless the stream is non-blocking or hung up.  What is still queued then
 *   is discarded by ust_qfree.
 *
 * Locking
 *   tab_lock (sd_open.c; taken here with ust_sd_tab_lock) guards the list of
 *   streams, the share table and its entries' states.  Order: tab_lock is
 *   taken with no stream head lock held and is above sd_plumb, sd_lock and
 *   the descriptor table lock of sd_fd.c (strm_close holds it across
 *   ust_sd_detach_fd, so that two closes of one descriptor cannot both
 *   detach it).  sd_plumb serializes the plumbing of one stream: push, pop,
 *   reopen and teardown; module open and close routines run under it and may
 *   sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "sthead.h"

/*
 * The close-time drain and signals.  SVR4 (Solaris strclose) waits for each
 * queue to drain only while no signal is posted to the closing thread: a
 * signal caught at any moment of the close ends that wait and every wait
 * after it; the close goes on and returns 0, what is still queued is
 * discarded.  In user space a handler that runs between two looks at the
 * queue leaves no trace, so the close blocks the catchable signals from the
 * start of the teardown (close_block) and naps in ppoll with the caller's
 * own mask: a signal that came while blocked is delivered the moment the
 * nap starts and ends it with EINTR, one that comes during the nap ends it
 * too.  The mask is the caller's again when the teardown ends
 * (close_unblock), and signals still pending are delivered then.  Nothing
 * of this is done when the drain cannot wait (close time 0, O_NONBLOCK,
 * hung up), so those closes make no extra system call.
 *   Signals that report a fault of the thread (SIGSEGV, SIGBUS, SIGFPE,
 *   SIGILL, SIGTRAP, SIGSYS) are never blocked: the protected copy
 *   (sd_ucopy.c) and the sanitizers need them, and a blocked fault kills.
 *   Module and driver close routines run with the rest blocked (none here
 *   waits for a signal; a signal during one ends the drain that follows).
 */
struct close_sig {
    sigset_t old; /* the caller's mask */
    int blocked;  /* signals are blocked: the drain may wait */
    int caught;   /* a handler ran during a drain: no more draining */
};

/* Block the catchable signals if the drain of sd may wait. */
static void close_block(struct stdata *sd, struct close_sig *cs)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    sigset_t all;
    int drain;

    cs->blocked = cs->caught = 0;
    ust_lock(&sd->sd_lock);
    drain = sd->sd_closetime > 0 && !(sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) &&
            !(sd->sd_flag & STRHUP);
    ust_unlock(&sd->sd_lock);
    if (!drain)
        return;
    sigfillset(&all);
    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
        sigdelset(&all, faults[i]);
    int e = errno;
    cs->blocked = pthread_sigmask(SIG_BLOCK, &all, &cs->old) == 0;
    errno = e;
}

/* The caller's mask back; what came meanwhile is delivered now. */
static void close_unblock(struct close_sig *cs)
{
    if (cs->blocked) {
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &cs->old, NULL);
        errno = e;
        cs->blocked = 0;
    }
}

/* Nap up to ns (at most a millisecond) with the caller's mask.  Returns
 * EINTR if a signal handler ran (now or pending since close_block), else 0;
 * errno is kept. */
static int close_nap(struct close_sig *cs, long long ns)
{
    struct timespec ts = {0, ns < 1000000 ? (long)ns : 1000000};
    int e = errno;
    int r = ppoll(NULL, 0, &ts, &cs->old);
    int intr = r < 0 && errno == EINTR;
    errno = e;
    return intr ? EINTR : 0;
}

/*
 * Wait up to the close time for write queue wq to drain (streamio(7),
 * I_SETCLTIME: "before closing each module and driver"), unless the stream is
 * non-blocking, hung up, the close time is 0 (close_block did not block:
 * cs->blocked 0), or a signal was caught in an earlier drain.
 *   What drains wq is usually a service procedure this very close enabled (a
 *   module's close routine sends its last message down: tirdwr's
 *   T_ORDREL_REQ, queued by the driver).  An enable made inside a library
 *   call waits on the calling thread's own run list until the call ends
 *   (sched.c), so each round hands that list to the scheduler threads first
 *   (ust_sched_handoff), as every other wait of the head does; without it
 *   the close waited the whole close time for itself.
 *   A signal caught at any moment since close_block ends this wait and the
 *   ones after (cs->caught; see above).
 */
static void drain_wait(struct stdata *sd, queue_t *wq, struct close_sig *cs)
{
    long long deadline, left;
    long ms;

    if (!cs->blocked || cs->caught)
        return;
    ust_lock(&sd->sd_lock);
    ms = sd->sd_closetime;
    ust_unlock(&sd->sd_lock);
    deadline = ust_now_ns() + ms * 1000000LL;
    for (;;) {
        struct ust_qpriv *pv = ust_qpv(wq);
        int empty, hup;

        ust_lock(&pv->lock);
        empty = wq->q_first == NULL;
        ust_unlock(&pv->lock);
        ust_lock(&sd->sd_lock);
        hup = (sd->sd_flag & STRHUP) != 0;
        ust_unlock(&sd->sd_lock);
        left = deadline - ust_now_ns();
        if (empty || hup || left <= 0)
            return;
        ust_sched_handoff();
        if (close_nap(cs, left)) {
            cs->caught = 1;
            return;
        }
    }
}

/* Sleep about a millisecond (errno kept). */
static void nap_1ms(void)
{
    struct timespec ts = {0, 1000000};
    int e = errno;
    (void)nanosleep(&ts, NULL);
    errno = e;
}

/* Wait until no system call is inside the stream; keep waking the waits, so
 * that a thread that went to sleep just before STRCLOSE was set leaves.
 * A wait that does not look at STRCLOSE is made to return by a hang-up
 * (every blocking call of the head honours STRHUP); the flag is taken back
 * once nobody is inside, so that the close-time drain still happens.  Each
 * round hands this thread's run list to the scheduler threads first, so
 * that a call inside waiting on something this close enabled is not stuck
 * behind it (ust_sched_handoff, as drain_wait). */
static void wait_calls(struct stdata *sd)
{
    long long hup_at = ust_now_ns() + 50 * 1000000LL;
    int forced = 0;

    ust_sd_calls_fence(); /* the table names sd no more: see the slots (sd_calls.c) */
    for (int spins = 0; ust_sd_calls_in(sd) > 0; spins++) {
        ust_sd_wake(&sd->sd_rwait);
        ust_sd_wake(&sd->sd_wwait);
        ust_sd_wake(&sd->sd_iwait);
        if (!forced && ust_now_ns() >= hup_at) {
            ust_lock(&sd->sd_lock);
            if (!(sd->sd_flag & STRHUP)) {
                sd->sd_flag |= STRHUP;
                forced = 1;
            }
            ust_unlock(&sd->sd_lock);
        }
        ust_sched_handoff();
        if (spins < 50)
            sched_yield();
        else
            nap_1ms();
    }
    if (forced) {
        ust_lock(&sd->sd_lock);
        sd->sd_flag &= ~STRHUP;
        ust_unlock(&sd->sd_lock);
    }
}

/*
 * ust_sd_teardown -- the last reference to sd is gone: dismantle and free it.
 *   Context: blocking (close-time drain, close routines); no stream lock held.
 *   The caller dropped the last reference (sd_refs 0), so it owns the
 *   stream; a stream that has references, or is being torn down already, is
 *   left alone (a defensive check: neither happens).  Threads still
 *   inside the stream are woken (they see STRCLOSE and return) and waited
 *   for, the held write is sent, each module is drained, closed, unlinked and
 *   freed from the top, then the driver (a pipe end goes to
 *   ust_pipe_teardown instead), and the head is freed.
 */
void ust_sd_teardown(struct stdata *sd)
{
    struct share_ent *se;
    queue_t *q;
    cred_t cr;
    struct close_sig cs;
    int oflag, pipe_end, claimed;

    /* Claim the teardown (see the contract above). */
    ust_sd_tab_lock();
    ust_lock(&sd->sd_lock);
    claimed = atomic_load(&sd->sd_refs) == 0 && !(sd->sd_flag & STRCLOSE);
    if (claimed)
        sd->sd_flag |= STRCLOSE;
    oflag = sd->sd_oflag;
    pipe_end = (sd->sd_flag & (STRPIPE | STRFIFO)) != 0; /* a FIFO is a looped pipe end */
    ust_unlock(&sd->sd_lock);
    se = claimed ? ust_sd_share_closing(sd) : NULL;
    ust_sd_tab_unlock();
    if (!claimed)
        return;
    close_block(sd, &cs); /* from here a signal ends the drain (see above) */
    wait_calls(sd);
    ust_sd_flush_hold(sd);
    ust_sd_unlink_all(sd); /* its ordinary links under a multiplexer (sd_link.c) */
    ust_sd_cred(&cr);

    ust_lock(&sd->sd_plumb);
    while (sd->sd_pushcnt > 0) {
        q = ust_sd_top(sd);
        drain_wait(sd, q, &cs);
        ust_qclose(RD(q), oflag, &cr);
        ust_sd_pair_remove(RD(q));
        sd->sd_pushcnt--;
    }
    sd->sd_anchor = 0;
    if (pipe_end) {
        if (ust_sd_isfifo(sd))
            ust_fifo_teardown(sd); /* its key goes (sd_fifo.c) */
        ust_pipe_teardown(sd);
    } else if ((q = ust_sd_top(sd)) != NULL) {
        drain_wait(sd, q, &cs);
        ust_qclose(RD(q), oflag, &cr);
        ust_sd_pair_remove(RD(q));
    }
    if (sd->sd_driver != NULL) {
        ust_reg_rele(sd->sd_driver);
        sd->sd_driver = NULL;
    }
    ust_unlock(&sd->sd_plumb);
    close_unblock(&cs);

    ust_sd_tab_lock();
    ust_sd_unregister_locked(sd);
    if (se != NULL)
        ust_sd_share_remove(se);
    ust_sd_tab_unlock();
    ust_sd_free(sd);
}

/*
 * strm_close -- close(2) for streams.
 *   Context: blocking (the last close drains and closes the stream).
 *   Returns 0, or -1 with errno EBADF (not open, or closed concurrently by
 *   another thread).  A descriptor that is open but not a stream is handed to
 *   close(2).  Threads blocked on the stream through this descriptor return
 *   (EBADF) when it was the last one.  In the child of a fork(), a stream
 *   inherited from the parent is only released (ust_sd_fork_close): its
 *   close procedures are the parent's.
 */
void ust_sd_release_orphan(struct stdata *sd)
{
    ust_lock(&sd->sd_lock);
    sd->sd_oflag |= O_NONBLOCK;
    ust_unlock(&sd->sd_lock);
    ust_sd_teardown(sd);
}

void ust_sd_drop_stale(int fd, struct stdata *sd)
{
    int left;

    /* A call counted before the slot is taken keeps sd from being torn down
     * by whoever drops the other references meanwhile (wait_calls). */
    atomic_fetch_add(&sd->sd_calls, 1);
    ust_sd_tab_lock();
    left = ust_sd_forget_stale_fd(fd, sd);
    ust_sd_tab_unlock();
    if (left > 0)
        ust_sd_passfp_cycle(sd, left); /* ends the call */
    else
        ust_sd_put(sd);
    if (left == 0)
        ust_sd_release_orphan(sd);
}

static int strm_close_call(int fd)
{
    struct stdata *sd;
    int err, left;

    sd = ust_sd_peek(fd);
    if (sd != NULL && ust_sd_forked(sd))
        return ust_sd_fork_close(fd, sd);
    sd = ust_sd_get_checked(fd, &err);
    if (sd == NULL) {
        if (err == ENOSTR)
            return close(fd);
        errno = err;
        return -1;
    }
    ust_sd_tab_lock();
    if (ust_sd_peek(fd) != sd) { /* another thread closed it first */
        ust_sd_tab_unlock();
        ust_sd_put(sd);
        errno = EBADF;
        return -1;
    }
    left = ust_sd_detach_fd(fd, sd);
    ust_sd_tab_unlock();
    if (left > 0) /* our call keeps sd alive while it looks; it ends it */
        ust_sd_passfp_cycle(sd, left);
    else
        ust_sd_put(sd);
    if (left == 0)
        ust_sd_teardown(sd);
    return 0;
}

int strm_close(int fd)
{
    ust_call_begin();
    int r = strm_close_call(fd);
    ust_call_end();
    return r;
}
