/* SPDX-License-Identifier: MIT */
/*
 * sd_ready.c -- readiness of the stream head: the readable and priority
 * tokens of the read side (ust_sd_rready), the write side's relief when the
 * stream below drains (the head write queue's enable hook: writers woken,
 * POLLOUT shown again, S_OUTPUT/S_WRBAND raised), and the locking that lets
 * a reader back-enable another head (ust_sd_lockq).  The head's queue pair
 * and what arrives at it are sd_rput.c; POLLOUT after a write and poll(2)
 * are sd_poll.c; the kernel side of the tokens is sd_fd.c.
 *
 * Principles of operation
 *   Tokens follow the queue in both directions (docs/STREAMHEAD.md,
 *   "Readiness"): set when something readable arrives (sd_rput.c), withdrawn
 *   by whatever takes the last of it, each with a system call only on an
 *   edge.
 *
 *   Back-enabling across stream heads.  A reader calls getq (and M_FLUSH calls
 *   flushq) with sd_lock held; when the queue drains, the executive
 *   back-enables the queue behind it, which for a pipe without modules is the
 *   PEER head's write queue, whose hook needs the PEER's sd_lock.  Two heads'
 *   sd_locks are never held together, so code that may back-enable while
 *   holding sd_lock takes it with ust_sd_lockq: the write-side hook then only
 *   wakes the peer's writers at once (that needs no lock) and leaves the
 *   locked part (readiness, signals) owed to this thread, which performs it
 *   in ust_sd_unlockq after dropping its own sd_lock.  This is what Solaris
 *   does with getq_noenab and a later qbackenable.
 *
 * MT level: any thread; each function's contract says which lock it needs.
 */
#include <signal.h>

#include "sd_chan.h"
#include "sthead.h"

#define SD_OWED_MAX 8 /* distinct heads one locked section can back-enable */

/* The head whose sd_lock this thread took with ust_sd_lockq, and the heads
 * whose write-side relief it owes (see the principles above).  Thread-local,
 * so no lock. */
static _Thread_local struct stdata *tls_held;
static _Thread_local struct stdata *tls_owed[SD_OWED_MAX];
static _Thread_local int tls_nowed;

static void sd_wrelief_locked(struct stdata *sd);

/* ------------------------------------------------------------------------ */
/* Locking with owed back-enables                                           */
/* ------------------------------------------------------------------------ */

/*
 * ust_sd_lockq / ust_sd_unlockq -- take / drop sd_lock around work that may
 *   back-enable (getq, rmvq, flushq on the head read queue).
 *   Context: any thread holding no stream head lock; not recursive.
 *   ust_sd_unlockq performs, after dropping sd_lock, the write-side relief
 *   that back-enables of other heads left owed to this thread.
 */
void ust_sd_lockq(struct stdata *sd)
{
    ust_lock(&sd->sd_lock);
    tls_held = sd;
}


/* A wait inside the section drops sd_lock and may run service procedures
 * on this thread (a pull, a pipe's ring): their back-enables of sd must take
 * sd_lock themselves meanwhile, not assume it held. */
int ust_sd_lockq_pause(struct stdata *sd)
{
    if (tls_held != sd)
        return 0;
    tls_held = NULL;
    return 1;
}

void ust_sd_lockq_resume(struct stdata *sd, int paused)
{
    if (paused)
        tls_held = sd;
}

void ust_sd_unlockq(struct stdata *sd)
{
    tls_held = NULL;
    ust_unlock(&sd->sd_lock);
    while (tls_nowed > 0) {
        struct stdata *o = tls_owed[--tls_nowed];
        ust_lock(&o->sd_lock);
        sd_wrelief_locked(o);
        ust_unlock(&o->sd_lock);
    }
}

/*
 * ust_sd_settle -- inside ust_sd_lockq, before blocking: pay what is owed.
 *   Returns 1 if sd_lock was dropped and retaken (the caller rechecks), else 0.
 */
int ust_sd_settle(struct stdata *sd)
{
    if (tls_nowed == 0)
        return 0;
    ust_sd_unlockq(sd);
    ust_sd_lockq(sd);
    return 1;
}

/* Remember that this thread owes sd its write-side relief. */
static void sd_owe(struct stdata *sd)
{
    for (int i = 0; i < tls_nowed; i++)
        if (tls_owed[i] == sd)
            return;
    if (tls_nowed < SD_OWED_MAX)
        tls_owed[tls_nowed++] = sd;
    /* Otherwise the writers were woken already and find the stream writable
     * themselves; only the readiness token and S_OUTPUT of this edge are
     * lost.  A locked section back-enables one queue (the one behind the
     * head read queue), so this does not happen. */
}

/* ------------------------------------------------------------------------ */
/* Readiness of the read side                                               */
/* ------------------------------------------------------------------------ */

/* What the read queue offers now: *norm a message that is not high
 * priority, *pc a high-priority one at the front.  sd_lock held; takes the
 * queue lock. */
static void rq_state(struct stdata *sd, int *norm, int *pc)
{
    queue_t *q = sd->sd_rq;
    struct ust_qpriv *pv = ust_qpv(q);
    ust_lock(&pv->lock); /* queue lock: q_first/q_last */
    mblk_t *first = q->q_first, *last = q->q_last;
    *pc = first && first->b_datap->db_type >= QPCTL;
    *norm = last && last->b_datap->db_type < QPCTL;
    ust_unlock(&pv->lock);
}

/*
 * ust_sd_rready -- set the readable and priority tokens from the head read
 *   queue, in both directions: readable exactly while a normal message waits
 *   (or a read error / hang-up is pending), priority exactly while a
 *   high-priority message is at the front.  Every call that takes something
 *   off the queue (read, getmsg, I_RECVFD, a flush) ends with it, so poll(2)
 *   and epoll on the descriptor follow the queue whether the stream is
 *   blocking or not (docs/STREAMHEAD.md, "Readiness").
 *   Withdrawing races with the put procedure's fast path, which queues
 *   without sd_lock when it saw the token shown: the token is cleared first,
 *   then the queue looked at again under its lock, and the put procedure
 *   looks at the token again after its putq (sd_data).  Whichever comes
 *   second under the queue lock sees the other: a message never waits
 *   behind a withdrawn token.
 *   Context: sd_lock held; takes the read queue's lock.  A system call only on
 *   an edge (sd_fd.c).
 */
void ust_sd_rready(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    int norm, pc;
    rq_state(sd, &norm, &pc);
    int sticky = sd->sd_rerror || (sd->sd_flag & STRHUP) || ust_fifo_hup(sd);
    if (norm || sticky) {
        ust_sd_ready_read(sd, 1);
    } else if (__atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED)) {
        ust_sd_ready_read(sd, 0);
        rq_state(sd, &norm, &pc); /* queued meanwhile by the fast path? */
        if (norm)
            ust_sd_ready_read(sd, 1);
    }
    ust_sd_ready_pri(sd, pc);
}

/*
 * ust_sd_rready_after_read -- ust_sd_rready at the end of a read, skipped
 *   when it could change nothing: the readable token is shown, the priority
 *   token is not, and the read queue still holds a message.  Exact, without
 *   the queue's lock (which writers take): the reader holds sd_lock, so only
 *   it removes from the queue and a message seen there stays; with no
 *   priority token none is at the front (those are queued under sd_lock,
 *   which sets it), so a normal message waits and the token is due.
 *   The exceptions: a channel reader's read that leaves messages owes
 *   the token instead of showing it (ust_sd_chan_defer, docs/STREAMHEAD.md
 *   "Channel readers": a poll(2) from outside the library sees them at most
 *   about 2 ms late), and so does the read of a stream under the lazy
 *   token (ust_sd_tok_leave, sd_tokpay.c).  When the queue ran dry, rready withdraws the token
 *   (blocking stream or not: an event loop polling the descriptor must not
 *   see POLLIN); a token owed was never shown: nothing to withdraw.
 *   sd_lock held.
 */
void ust_sd_rready_after_read(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (!sd->sd_ptoken && ust_q_nonempty_hint(sd->sd_rq)) {
        if (__atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED))
            return;
        if (ust_sd_chan_defer(sd))
            return;
    }
    ust_sd_chan_settle(sd);
    if (ust_sd_tok_leave(sd)) /* the lazy token: owed, or nothing to move */
        return;
    ust_sd_rready(sd);
}

/* ------------------------------------------------------------------------ */
/* Relief of the write side                                                 */
/* ------------------------------------------------------------------------ */

void ust_sd_wfull_note(struct stdata *sd, int band)
{
    uint64_t bit = 1ULL << (band & 63);
    if (!(__atomic_load_n(&sd->sd_wfull[band >> 6], __ATOMIC_RELAXED) & bit))
        __atomic_fetch_or(&sd->sd_wfull[band >> 6], bit, __ATOMIC_RELAXED);
}

/* Band `band` was found full and is writable now: clear its mark and say
 * so (1), else 0. */
static int sd_wfull_relieved(struct stdata *sd, int band)
{
    uint64_t bit = 1ULL << (band & 63);
    if (!(__atomic_load_n(&sd->sd_wfull[band >> 6], __ATOMIC_RELAXED) & bit) ||
        !bcanputnext(sd->sd_wq, (unsigned char)band))
        return 0;
    return (__atomic_fetch_and(&sd->sd_wfull[band >> 6], ~bit, __ATOMIC_RELAXED) & bit) != 0;
}

/* The locked half of write-side relief: writable readiness and the S_OUTPUT
 * (S_WRNORM) and S_WRBAND signals.  As streamio(7) words them, S_OUTPUT says
 * band 0 "is no longer full" and S_WRBAND that a band > 0 is writable: each
 * is raised only for a band the head found full (ust_sd_wfull_note, or the
 * writable readiness withdrawn for band 0) and that is writable now, as
 * Solaris' strwsrv does with the bands that had a writer waiting.  So
 * relief of band 1 alone raises no S_OUTPUT.  sd_lock held. */
static void sd_wrelief_locked(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (!sd->sd_wq)
        return;
    if (sd->sd_wblock)
        ust_sd_wfull_note(sd, 0); /* band 0 was seen full by a non-blocking caller */
    ust_sd_ready_write(sd, 1);
    if (sd->sd_urec_flags & UST_UREC_STALLED) { /* records written on U wait (sd_urec.c) */
        sd->sd_urec_flags &= ~UST_UREC_STALLED;
        ust_sd_urec_note(sd);
    }
    int sf = sd->sd_sigflags;
    if (sd_wfull_relieved(sd, 0) && (sf & S_WRNORM))
        ust_sd_sendsig(sd, S_WRNORM, 0, SIGPOLL);
    for (int w = 0; w < 4; w++) {
        uint64_t bits = __atomic_load_n(&sd->sd_wfull[w], __ATOMIC_RELAXED);
        for (int i = w == 0 ? 1 : 0; i < 64; i++)
            if ((bits & (1ULL << i)) && sd_wfull_relieved(sd, w * 64 + i) && (sf & S_WRBAND))
                ust_sd_sendsig(sd, S_WRBAND, (unsigned char)(w * 64 + i), SIGPOLL);
    }
}

/*
 * ust_sd_write_enable -- head_enable hook of the write queue: the stream below
 *   drained to its low-water mark (back-enable).
 *   Context: any thread, possibly one holding another head's sd_lock (see the
 *   principles above).  Wakes writers at once; readiness and signals are
 *   done under this head's sd_lock now, or owed to the current locked section.
 */
void ust_sd_write_enable(queue_t *q)
{
    struct stdata *sd = q->q_ptr;
    if (!sd)
        return;
    ust_sd_wake(&sd->sd_wwait);
    if (tls_held == sd) {
        sd_wrelief_locked(sd);
    } else if (tls_held) {
        sd_owe(sd);
    } else {
        ust_lock(&sd->sd_lock);
        sd_wrelief_locked(sd);
        ust_unlock(&sd->sd_lock);
    }
}
