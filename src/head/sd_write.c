/* SPDX-License-Identifier: MIT */
/*
 * sd_write.c -- the write side of the stream head: write(2)/writev(2),
 * putmsg(2)/putpmsg(2), flow control for writers, write errors, and which
 * writes are held (SNDHOLD; the holding itself is sd_hold.c).
 *
 * Principles of operation
 *   Packetization.  A write is cut into messages the queue below the head
 *   accepts, using that queue's packet sizes read at write time (POSIX
 *   write(2), STREAMS): a count within [q_minpsz, q_maxpsz] goes as one
 *   message; a larger one is cut into pieces of at most q_maxpsz when
 *   q_minpsz is 0, and fails ERANGE otherwise (the pieces could not all
 *   honour the minimum).  No message carries more than UST_STRMSGSZ bytes.
 *   The first block of every message leaves sd_wroff bytes of headroom
 *   (SO_WROFF) and no block holds more than sd_maxblk bytes (SO_MAXBLK).
 *
 *   Flow control.  Before each normal message the writer asks
 *   bcanputnext(sd_wq, band), which marks the governing queue wanted when it
 *   is full; when it drains to low water it back-enables the head's write
 *   queue, whose hook (sd_rput.c) wakes sd_wwait.  The sequence of sd_wwait is
 *   read before the test, so that relief arriving in between is not lost.
 *   High-priority messages are never flow controlled.
 *
 *   Fast path.  A write that fits one message takes sd_lock once (errors,
 *   options, the hold, writability), drops it, then allocates, copies and
 *   calls putnext with a claim on sd_wq and no lock: no system call unless it
 *   has to wait.  Later messages of a long write recheck flow control without
 *   the lock and take it only to wait.
 *
 *   The write snapshot.  A write that passed every check under sd_lock and
 *   took the deposit path (no error, no hold, default write offset, block
 *   and packet sizes, not a FIFO) records sd_lock's taking count
 *   (ust_sd_wsnap_take).  Everything those checks read is guarded by
 *   sd_lock, so while the count reads the same nobody can have changed it:
 *   the writes that follow deposit without taking sd_lock at all
 *   (ust_sd_wsnap_path; 64 B 1.06-1.21x, bench/README.md).  A write that
 *   went the normal way as one message with no deposit path (modules
 *   pushed, or not a pipe) records the same for that way: the writes that
 *   follow are sent by snap_send, with one claim of the head's write queue
 *   for the flow check, putnext and the look after it.  Any
 *   taking -- a read of this head, an ioctl, a hang-up, close, the token
 *   payer -- ends the snapshot, and the next write checks under the lock
 *   again.  A write that reads the count just before another thread takes
 *   the lock is ordered before that thread's change, as a write that had
 *   dropped sd_lock before depositing always was.
 *
 *   Holding (SNDHOLD, or SO_STRHOLD from a module).  Small writes gather
 *   in one held block instead of going down one by one: sd_hold.c, which
 *   holds its own principles of operation.  ust_sd_write decides which
 *   writes are held (ust_sd_hold_write) and sends the held block before any
 *   write that is not held, waiting while a held block is in transit.
 *
 * Locking
 *   sd_lock guards sd_hold and the options read here, and is never held
 *   across putnext.  The hold timer's own lock is sd_hold.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>

#include "sthead.h"

#define TICK_NS (1000000000LL / HZ)

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

/* putnext from the head's write queue wq, claimed by the caller: the claim
 * covers entering the module below (putnext.c "Covered entries"), as a put
 * procedure's covers the queue after it. */
static void head_putnext(queue_t *wq, mblk_t *mp)
{
    queue_t *was = ust_tls_in;
    ust_tls_in = wq;
    putnext(wq, mp);
    ust_tls_in = was;
}

/*
 * ust_sd_send -- send mp down the stream: putnext from the head's write
 *   queue under a claim.
 *   Context: any thread; no lock held (module procedures run inside).
 */
void ust_sd_send(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    head_putnext(wq, mp);
    ust_qrelease(wq);
}

/* bcanputnext on the head's write queue under a claim.  Any lock may be held
 * (sd_lock is above the queue locks). */
static int sd_canput(struct stdata *sd, unsigned char band)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    int ok = bcanputnext(wq, band);
    ust_qrelease(wq);
    if (!ok)
        ust_sd_wfull_note(sd, band); /* its relief raises S_OUTPUT/S_WRBAND */
    return ok;
}

static int sd_nonblock(const struct stdata *sd)
{
    return (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) != 0;
}

/* The packet limits of the queue below the head (0 / INFPSZ if none). */
static void sd_psz(struct stdata *sd, ssize_t *minp, ssize_t *maxp)
{
    queue_t *nq = ust_qnext(sd->sd_wq);
    *minp = nq ? __atomic_load_n(&nq->q_minpsz, __ATOMIC_RELAXED) : 0;
    *maxp = nq ? __atomic_load_n(&nq->q_maxpsz, __ATOMIC_RELAXED) : INFPSZ;
}

/* Largest data part of one message for a queue whose maximum is maxpsz. */
static size_t sd_pktsize(ssize_t maxpsz)
{
    if (maxpsz == INFPSZ || maxpsz < 0 || (size_t)maxpsz > UST_STRMSGSZ)
        return UST_STRMSGSZ;
    return (size_t)maxpsz;
}

/* ------------------------------------------------------------------------ */
/* Errors and flow control                                                  */
/* ------------------------------------------------------------------------ */

/*
 * ust_sd_write_error -- the error a write-side call must fail with now.
 *   Context: any thread; sd_lock held.
 *   Returns 0, or: EBADF (the stream is being closed under the call),
 *   EINVAL (linked under a multiplexer), the M_ERROR write error (cleared by
 *   this report when WERRNONPERSIST is set), EPIPE (a pipe or FIFO whose
 *   other end is gone), ENXIO (hang-up of any other stream).
 *   SIGPIPE: with SNDPIPE set, a write error or EPIPE also sends SIGPIPE to
 *   the calling thread, as SVR4 does.  It is raised here, with sd_lock
 *   held: a handler must not call back into this stream (no STREAMS call is
 *   async-signal-safe).
 */
int ust_sd_write_error(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    /* SIGPIPE goes with a write error reported, or EPIPE */
    int werr = (sd->sd_flag & STWRERR) && sd->sd_werror && !(sd->sd_flag & (STRCLOSE | STPLEX));
    int err = ust_sd_state_error(sd, UST_RULE_WRITE, 1); /* sd_state.c */
    int pipe = err == EPIPE || werr;

    if (pipe && (sd->sd_wropt & SNDPIPE))
        pthread_kill(pthread_self(), SIGPIPE);
    return err;
}

/* How a write-side wait may end (sd_allocb, wait_writable). */
#define SD_NB 1   /* non-blocking: EAGAIN instead of a wait */
#define SD_INTR 2 /* part of the call is done: every signal handler ends the
                   * wait (EINTR, so the call returns what it did), with or
                   * without SA_RESTART (ust_sd_wait_intr) */

/*
 * wait_writable -- wait until a message of band `band` may be sent.
 *   Context: a system call; may block unless mode has SD_NB.  sd_lock held
 *   on entry and on return (dropped while waiting).
 *   A writer that finds the stream full withdraws writable readiness (band
 *   0) and, unless non-blocking, sleeps on sd_wwait until the back-enable
 *   wakes it; errors are rechecked after every wake.  The sequence of
 *   sd_wwait is read before bcanputnext, which marks the governing queue
 *   wanted (QWANTW / QB_WANTW) under its lock when it finds it full: a drain
 *   to low water after the test back-enables sd_wq, whose hook bumps the
 *   sequence, and the futex wait on the old sequence then returns at once.
 *   Returns 0, EAGAIN (non-blocking and flow controlled), EINTR (a signal
 *   handler ran: without SA_RESTART, or any with SD_INTR), or an error of
 *   ust_sd_write_error.
 */
static int wait_writable(struct stdata *sd, int band, int mode)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    int unwoken = 0;  /* the last wait ended with nobody's wake-up */
    unsigned slept = 0; /* the sequence it slept on */
    for (;;) {
        int err = ust_sd_write_error(sd);
        if (err)
            return err;
        unsigned seq = ust_sd_wait_seq(&sd->sd_wwait);
        if (sd_canput(sd, (unsigned char)band)) {
            if (unwoken)
                ust_sd_note_lost_wakeup(&sd->sd_wwait, slept);
            if (band == 0)
                ust_sd_ready_write(sd, 1); /* no system call unless it was withdrawn */
            return 0;
        }
        if (mode & SD_NB) {
            if (band == 0)
                ust_sd_ready_write(sd, 0); /* only an event loop looks at POLLOUT */
            return EAGAIN;
        }
        if (mode & SD_INTR)
            err = ust_sd_wait_intr(sd, &sd->sd_wwait, seq);
        else
            err = ust_sd_wait_from(sd, &sd->sd_wwait, seq, 0);
        if (err)
            return err;
        unwoken = ust_sd_wait_seq(&sd->sd_wwait) == seq;
        slept = seq;
    }
}

int ust_sd_wait_writable(struct stdata *sd, int band, int nonblock)
{
    return wait_writable(sd, band, nonblock ? SD_NB : 0);
}

/* The ring's EPIPE (the peer gone, its M_HANGUP maybe not up yet) raises
 * SIGPIPE as ust_sd_write_error does for the head's own. */
static void sd_xpipe_sigpipe(struct stdata *sd, int err)
{
    if (err == EPIPE && (__atomic_load_n(&sd->sd_wropt, __ATOMIC_RELAXED) & SNDPIPE))
        pthread_kill(pthread_self(), SIGPIPE);
}

/*
 * sd_xsent_wait -- a message went down split end sd through a module:
 *   wait until nothing of this end is left in this process's memory below
 *   the head (px->xpipe_sent), so that the writer's _exit loses nothing
 *   (docs/STREAMHEAD.md "A write is in the ring when it returns").  The
 *   message was sent: a signal ends the wait with *stop set (the call
 *   returns what it sent; the message stays queued and goes when room
 *   comes), SA_RESTART or not, as any wait once part of a call is done.
 *   Non-blocking (SD_NB): no wait (the message may wait in process memory;
 *   documented).
 *   Context: a system call, no lock held.  Returns 0, EPIPE (SIGPIPE with
 *   SNDPIPE), EIO, or a write error of ust_sd_write_error.
 */
static int sd_xsent_wait(struct stdata *sd, const struct ust_procs_ops *px, int mode, int *stop)
{
    for (;;) {
        unsigned seq = ust_sd_wait_seq(&sd->sd_wwait);
        int r = px->xpipe_sent(sd);
        if (r == 1)
            return 0;
        if (r < 0) {
            sd_xpipe_sigpipe(sd, -r);
            return -r;
        }
        if (mode & SD_NB)
            return 0;
        ust_lock(&sd->sd_lock);
        int err = ust_sd_write_error(sd);
        if (err == 0)
            err = ust_sd_wait_intr(sd, &sd->sd_wwait, seq);
        ust_unlock(&sd->sd_lock);
        if (err == EINTR) {
            *stop = 1;
            return 0;
        }
        if (err != 0)
            return err;
    }
}

/*
 * sd_send_data -- send a data message of write or putmsg (mp) down sd.  On
 *   a pipe end split across processes (no module pushed) it goes into the
 *   ring before this returns 0, or not at all: a message the call reported
 *   written must survive the writer's _exit, as a pipe(2) write is in the
 *   kernel (docs/STREAMHEAD.md "Pipes cross the fork").  No room: EAGAIN
 *   when mode has SD_NB (writable readiness withdrawn; the ring's room
 *   restores it), else a wait on sd_wwait, read before the try: the room
 *   enables the head's write queue (sd_xpipe.c, hwant), whose hook bumps it.
 *   With a module pushed it goes down through it, and a blocking call then
 *   waits until it left this process's memory (sd_xsent_wait).
 *   Context: a system call, no lock held.  Returns 0 (mp consumed; *stop
 *   set when the call must end now, a signal having come once mp went) or
 *   an errno (mp freed, or sent and lost with the other side): EAGAIN,
 *   EINTR (mode SD_INTR: any handler; else one without SA_RESTART), EPIPE
 *   (SIGPIPE with SNDPIPE), EIO, the write errors.
 */
static int sd_send_data(struct stdata *sd, mblk_t *mp, int mode, int *stop)
{
    const struct ust_procs_ops *px = ust_sd_procs();
    *stop = 0;
    if (px == NULL || __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) == NULL) {
        ust_sd_send(sd, mp);
        return 0;
    }
    for (;;) {
        unsigned seq = ust_sd_wait_seq(&sd->sd_wwait);
        int r = px->xpipe_send(sd, mp, (mode & SD_NB) != 0);
        if (r == 1)
            return 0;
        if (r == 0) { /* a module is pushed: through it, then wait (documented) */
            ust_sd_send(sd, mp);
            return sd_xsent_wait(sd, px, mode, stop);
        }
        int err = -r;
        if (r == -EAGAIN) {
            ust_lock(&sd->sd_lock);
            err = ust_sd_write_error(sd);
            if (err == 0 && (mode & SD_NB)) {
                ust_sd_ready_write(sd, 0);
                ust_sd_wfull_note(sd, 0); /* its relief raises S_WRNORM */
                err = EAGAIN;
            } else if (err == 0) {
                err = (mode & SD_INTR) ? ust_sd_wait_intr(sd, &sd->sd_wwait, seq)
                                       : ust_sd_wait_from(sd, &sd->sd_wwait, seq, 0);
            }
            ust_unlock(&sd->sd_lock);
            if (err == 0)
                continue;
        }
        /* ust_sd_write_error raised its own SIGPIPE. */
        if (r == -EPIPE)
            sd_xpipe_sigpipe(sd, EPIPE);
        freemsg(mp);
        return err;
    }
}

/* ------------------------------------------------------------------------ */
/* Allocation                                                               */
/* ------------------------------------------------------------------------ */

static void sd_bufcall_wake(void *arg)
{
    struct stdata *sd = arg;
    ust_sd_wake(&sd->sd_wwait);
}

/* Wait for memory after a failed allocation: a bufcall wakes sd_wwait (its
 * retry period bounds the wait), so do errors and close.  No lock held.
 * Returns 0 (try again), EINTR, or a write error. */
static int sd_waitbuf(struct stdata *sd, size_t size, int mode)
{
    ust_lock(&sd->sd_lock);
    unsigned seq = ust_sd_wait_seq(&sd->sd_wwait);
    int err = ust_sd_write_error(sd);
    bufcall_id_t id = 0;
    if (err == 0) {
        id = bufcall(size, BPRI_MED, sd_bufcall_wake, sd);
        /* Without a bufcall record, poll once a tick. */
        if (id && (mode & SD_INTR))
            err = ust_sd_wait_intr(sd, &sd->sd_wwait, seq);
        else
            err = ust_sd_wait_from(sd, &sd->sd_wwait, seq, id ? 0 : ust_now_ns() + TICK_NS);
        if (err == ETIME)
            err = 0;
    }
    ust_unlock(&sd->sd_lock);
    unbufcall(id); /* waits for a callback in progress: sd stays valid */
    return err;
}

/* allocb for the write side: a blocking caller waits for memory, a
 * non-blocking one (mode SD_NB) fails EAGAIN.  No lock held.  NULL with
 * *errp set. */
static mblk_t *sd_allocb(struct stdata *sd, size_t size, int mode, int *errp)
{
    for (;;) {
        mblk_t *mp = allocb(size, BPRI_MED);
        if (mp)
            return mp;
        if (mode & SD_NB) {
            *errp = EAGAIN;
            return NULL;
        }
        int err = sd_waitbuf(sd, size, mode);
        if (err) {
            *errp = err;
            return NULL;
        }
    }
}

/*
 * sd_build -- an M_DATA message of n bytes copied from u: the first block
 *   with wroff bytes of headroom, no block holding more than maxblk bytes.
 *   n == 0 gives one empty block; mode as sd_allocb.  No lock held.  Returns the message, or
 *   NULL with *errp (EFAULT, EAGAIN, EINTR, a write error).
 */
static mblk_t *sd_build(struct stdata *sd, struct ust_sd_uio *u, size_t n, size_t wroff, size_t maxblk,
                        int mode, int *errp)
{
    mblk_t *head = NULL, **tail = &head;
    size_t off = wroff;
    do {
        size_t k = n < maxblk ? n : maxblk;
        mblk_t *bp = sd_allocb(sd, off + k, mode, errp);
        if (!bp)
            goto fail;
        bp->b_rptr += off;
        bp->b_wptr = bp->b_rptr;
        *tail = bp;
        tail = &bp->b_cont;
        if (k && (*errp = ust_sd_uio_copy(u, bp->b_wptr, k)) != 0)
            goto fail;
        bp->b_wptr += k;
        n -= k;
        off = 0;
    } while (n > 0);
    return head;
fail:
    freemsg(head);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* write(2)                                                                 */
/* ------------------------------------------------------------------------ */

/* Read what a write needs of the stream into *p.  sd_lock held. */
static void wparams_get(struct stdata *sd, struct ust_sd_wparams *p)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    p->nonblock = sd_nonblock(sd);
    p->hold = (sd->sd_wropt & SNDHOLD) || (sd->sd_flag & STRHOLD);
    p->sndzero = (sd->sd_wropt & SNDZERO) != 0;
    p->ndelon = (sd->sd_flag & STRNDELON) != 0;
    p->wroff = sd->sd_wroff;
    p->maxblk = (sd->sd_maxblk == INFPSZ || sd->sd_maxblk <= 0) ? SIZE_MAX : (size_t)sd->sd_maxblk;
    sd_psz(sd, &p->minpsz, &p->maxpsz);
}

/*
 * ust_sd_wresult -- the outcome of a write that stopped with err after
 *   `sent` bytes.  Context: any; no locking.
 *   Returns the partial count if anything went, else -err (0 for SO_NDELON's
 *   EAGAIN).
 */
ssize_t ust_sd_wresult(size_t sent, int err, const struct ust_sd_wparams *p)
{
    if (sent > 0)
        return (ssize_t)sent;
    if (err == EAGAIN && p->ndelon)
        return 0;
    return -err;
}

/*
 * ust_sd_write -- write(2)/writev(2) on a stream.
 *   Context: a system call; blocks on flow control and for memory unless the
 *   stream is non-blocking.  No lock held on entry or return.
 *   Returns the bytes written (a partial count when a later message could not
 *   be sent), or -errno: EINVAL (bad iovcnt, more than SSIZE_MAX bytes,
 *   linked under a multiplexer), EFAULT, ERANGE (outside the packet sizes of
 *   the queue below and not splittable), EAGAIN (non-blocking and flow
 *   controlled or out of memory), EINTR, ENXIO (hang-up), EPIPE (pipe or
 *   FIFO without reader), EBADF (closed under the call), or the M_ERROR
 *   write error.  A zero-length write sends a zero-length message with
 *   SNDZERO and nothing otherwise.
 */
/* This thread's current write, putmsg or putpmsg sent (or tried to send) a
 * message the normal way, below the head: sd_ret then looks at flow control
 * for POLLOUT.  Set on the way down, cleared by sd_ret. */
static _Thread_local unsigned char tls_wsent;

int ust_sd_wsent_take(void)
{
    int w = tls_wsent;
    tls_wsent = 0;
    return w;
}

static ssize_t sd_write_uio(struct stdata *sd, struct ust_sd_uio *up, size_t total);

ssize_t ust_sd_write(struct stdata *sd, const struct iovec *iov, int iovcnt)
{
    struct ust_sd_uio u;
    size_t total;
    int err = ust_sd_uio_init(&u, iov, iovcnt, &total);
    if (err)
        return -err;
    return sd_write_uio(sd, &u, total);
}

/*
 * ust_sd_write_buf -- write(2) of one buffer: ust_sd_write without an iovec
 *   array to copy in.  The cursor starts loaded with (buf, count), so only
 *   the data itself goes through the protected copy (EFAULT as before); a
 *   small held write (SNDHOLD) made two more protected copies of a
 *   16-byte iovec than of its data (issue 24 item 4).
 *   Context and returns: as ust_sd_write.
 */
ssize_t ust_sd_write_buf(struct stdata *sd, const void *buf, size_t count)
{
    struct ust_sd_uio u;
    u.iov = NULL;
    u.iovcnt = 0;
    u.idx = 0;
    u.cur.iov_base = (void *)(uintptr_t)buf;
    u.cur.iov_len = count;
    return sd_write_uio(sd, &u, count);
}

/*
 * snap_send -- a write of total bytes sent down as one message without
 *   sd_lock, while the write snapshot of the normal path holds (see "The
 *   write snapshot" above: modules pushed, or not a pipe).  One claim of the
 *   head's write queue covers the flow check, putnext and the look at flow
 *   control after it, which the locked way make with three.  Returns 1
 *   (sent), -EFAULT (nothing sent), or 0 (nothing done: the queue below is
 *   full, no memory, or the snapshot ended; take the locked way).
 */
static int snap_send(struct stdata *sd, struct ust_sd_uio *u, size_t total)
{
    if (!ust_sd_wsnap_send(sd, total) || __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) != NULL)
        return 0;
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    /* The packet sizes of the queue below are its own (strqset, without
     * sd_lock): looked at again, as the locked way does at every write. */
    ssize_t minpsz, maxpsz;
    sd_psz(sd, &minpsz, &maxpsz);
    int fits = minpsz == 0 && maxpsz != 0 && total <= sd_pktsize(maxpsz);
    mblk_t *mp = fits && bcanputnext(wq, 0) ? allocb(total, BPRI_MED) : NULL;
    if (!mp) {
        ust_qrelease(wq);
        return 0;
    }
    if (ust_sd_uio_copy(u, mp->b_wptr, total) != 0) {
        ust_qrelease(wq);
        freemsg(mp);
        return -EFAULT;
    }
    mp->b_wptr += total;
    unsigned fills = ust_tls_fills;
    head_putnext(wq, mp);
    /* The queue that governs this head's writes fills by the puts of its
     * writers, each of which looks after its own: only a put of this call
     * that set a full mark can have made it full (flow.c counts them). */
    int room = ust_tls_fills == fills || bcanputnext(wq, 0);
    ust_qrelease(wq);
    if (!room) /* full now: POLLOUT withdrawn under sd_lock, as sd_ret does */
        ust_sd_wready_after_write(sd);
    return 1;
}

static ssize_t sd_write_uio(struct stdata *sd, struct ust_sd_uio *up, size_t total)
{
    struct ust_sd_uio *u = up; /* used in place: a copy stalled on the caller's stores */
    struct ust_sd_wparams p;
    size_t pkt = 0, sent = 0;
    ssize_t res;
    int err;

    mblk_t *built = NULL;
    struct ust_sd_dpath dp;
    int dpath = 0; /* a deposit path was found (and tried) */
    if (total > 0 && ust_sd_wsnap_path(sd, total, &dp)) {
        /* 0: nothing of u consumed, tried again below (the reader may have
         * made room meanwhile); 2: built holds all of u. */
        int r = ust_sd_deposit(&dp, u, total, &built);
        if (r == 1)
            return (ssize_t)total;
        if (r < 0)
            return r;
    } else if (total > 0) {
        int r = snap_send(sd, u, total);
        if (r != 0)
            return r > 0 ? (ssize_t)total : r;
    }

    ust_lock(&sd->sd_lock);
    for (;;) {
        err = ust_sd_write_error(sd);
        if (err) {
            ust_unlock(&sd->sd_lock);
            freemsg(built);
            return -err;
        }
        if (built) /* made before the checks, which held then: sent as it is */
            break;
        if (ust_sd_hold_busy(sd)) { /* wait: our data goes after it */
            err = ust_sd_wait(sd, &sd->sd_wwait, 0);
            if (err) {
                ust_unlock(&sd->sd_lock);
                return -err;
            }
            continue;
        }
        wparams_get(sd, &p);
        if (total == 0 && !p.sndzero) {
            ust_unlock(&sd->sd_lock);
            return 0;
        }
        int in_range =
            (ssize_t)total >= p.minpsz && (p.maxpsz == INFPSZ || (ssize_t)total <= p.maxpsz);
        pkt = sd_pktsize(p.maxpsz);
        if ((!in_range && (p.minpsz > 0 || p.maxpsz == 0)) || (p.minpsz > 0 && total > pkt)) {
            ust_unlock(&sd->sd_lock);
            return -ERANGE;
        }
        size_t cap = pkt < UST_HOLDSZ ? pkt : UST_HOLDSZ;
        if (cap > p.maxblk)
            cap = p.maxblk;
        if (p.hold && total > 0 && total <= UST_FASTBUF && total <= cap) {
            int hw = ust_sd_hold_write(sd, u, total, cap, &p, &res);
            if (hw == UST_HW_DONE)
                return res;
            if (hw == UST_HW_AGAIN)
                continue;
            break; /* UST_HW_NORMAL: nothing is held */
        }
        if (sd->sd_hold) { /* a write that is not held goes after the held data */
            mblk_t *h = sd->sd_hold;
            sd->sd_hold = NULL;
            ust_sd_hold_send_locked(sd, h);
            continue;
        }
        break;
    }
    /* sd_lock held.  A write that is one plain message may be deposited
     * straight at the reading head of a module-free pipe (sd_arrive.c). */
    if (built) {
        wparams_get(sd, &p);
        pkt = total; /* built is the whole write */
    } else if (total > 0 && total <= pkt && p.wroff == 0 && p.maxblk == SIZE_MAX &&
               (dpath = ust_sd_deposit_path(sd, &dp))) {
        if (!p.hold && p.minpsz == 0 && p.maxpsz != 0 && !(sd->sd_flag & STRFIFO))
            ust_sd_wsnap_take(sd, pkt, UST_WSNAP_DEPOSIT);
        ust_unlock(&sd->sd_lock);
        int r = ust_sd_deposit(&dp, u, total, &built);
        if (r == 1)
            return (ssize_t)total;
        if (r < 0)
            return r;
        ust_lock(&sd->sd_lock);
    }
    /* Likewise straight into the ring of a pipe end split across processes
     * (sd_xpipe.c). */
    if (total > 0 && total <= pkt && p.wroff == 0 && p.maxblk == SIZE_MAX && !built &&
        __atomic_load_n(&sd->sd_xend, __ATOMIC_RELAXED) != NULL) {
        ust_unlock(&sd->sd_lock);
        int r = ust_sd_procs()->xpipe_write(sd, u, total);
        if (r == 1)
            return (ssize_t)total;
        if (r < 0) { /* EPIPE (peer gone), EIO (ring broken), EAGAIN, EFAULT */
            if (r == -EPIPE && (__atomic_load_n(&sd->sd_wropt, __ATOMIC_RELAXED) & SNDPIPE))
                pthread_kill(pthread_self(), SIGPIPE);
            return ust_sd_wresult(0, -r, &p);
        }
        ust_lock(&sd->sd_lock);
    }
    /* One message sent the normal way, sd_lock held since wparams_get (no
     * deposit path was tried, no split ring): the snapshot of this path.  A
     * wait for flow control below retakes sd_lock, which ends it. */
    if (!built && !dpath && total > 0 && total <= pkt && p.wroff == 0 &&
        p.maxblk == SIZE_MAX && !p.hold && p.minpsz == 0 && p.maxpsz != 0 &&
        !(sd->sd_flag & STRFIFO) && __atomic_load_n(&sd->sd_xend, __ATOMIC_RELAXED) == NULL)
        ust_sd_wsnap_take(sd, pkt, UST_WSNAP_SEND);
    /* The first message's flow control. */
    tls_wsent = 1; /* the normal way: sd_ret looks at flow control */
    err = ust_sd_wait_writable(sd, 0, p.nonblock);
    ust_unlock(&sd->sd_lock);
    if (err) {
        freemsg(built);
        return ust_sd_wresult(0, err, &p);
    }
    /* Once a message went, the call has done part of its work: a signal
     * ends it with the count sent, SA_RESTART or not (write(2)). */
    for (;;) {
        size_t n = total - sent < pkt ? total - sent : pkt;
        int mode = (p.nonblock ? SD_NB : 0) | (sent > 0 ? SD_INTR : 0);
        mblk_t *mp = built ? built : sd_build(sd, u, n, p.wroff, p.maxblk, mode, &err);
        built = NULL;
        if (!mp)
            return ust_sd_wresult(sent, err, &p);
        int stop;
        err = sd_send_data(sd, mp, mode, &stop);
        if (err)
            return ust_sd_wresult(sent, err, &p);
        sent += n;
        if (sent >= total || stop)
            return (ssize_t)sent;
        if (!sd_canput(sd, 0)) {
            ust_lock(&sd->sd_lock);
            err = wait_writable(sd, 0, (p.nonblock ? SD_NB : 0) | SD_INTR);
            ust_unlock(&sd->sd_lock);
            if (err)
                return ust_sd_wresult(sent, err, &p);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* putmsg(2) / putpmsg(2)                                                   */
/* ------------------------------------------------------------------------ */

/* Copy in an optional strbuf: *len -1 when absent (NULL or len -1).
 * 0, EFAULT, or ERANGE (len below -1). */
static int sd_getbuf(const struct strbuf *sb, int *len, char **buf)
{
    struct strbuf b;
    *len = -1;
    *buf = NULL;
    if (!sb)
        return 0;
    if (ust_copyin(sb, &b, sizeof(b)) != 0)
        return EFAULT;
    if (b.len < -1)
        return ERANGE;
    *len = b.len;
    *buf = b.buf;
    return 0;
}

/*
 * ust_sd_putpmsg -- putmsg(2)/putpmsg(2) on a stream.
 *   ctl and data are the caller's strbufs (NULL or len -1: no such part; len
 *   0: a part of zero length).  flags is MSG_HIPRI (band must be 0) or
 *   MSG_BAND (band 0..255); putmsg's 0 and RS_HIPRI are mapped to these by
 *   its wrapper.  A control part makes an M_PROTO (M_PCPROTO for MSG_HIPRI)
 *   with the data as M_DATA continuation; a data part alone an M_DATA.  With
 *   neither part nothing is sent.
 *   Context: a system call; normal messages block on the flow control of
 *   their band (unless non-blocking), high-priority ones never do.  No lock
 *   held on entry or return.  The held write (SNDHOLD) is sent first.
 *   Returns 0 or -errno: EINVAL (bad flags or band, MSG_HIPRI without a
 *   control part, linked under a multiplexer), EFAULT, ERANGE (control part
 *   longer than UST_STRCTLSZ, data part outside the packet sizes of the
 *   queue below or longer than UST_STRMSGSZ, a length below -1), EAGAIN,
 *   EINTR, ENXIO, EPIPE, EBADF, or the M_ERROR write error.
 */
int ust_sd_putpmsg(struct stdata *sd, const struct strbuf *ctl, const struct strbuf *data, int band,
                   int flags)
{
    int clen, dlen, err, nonblock;
    char *cbuf, *dbuf;
    size_t wroff, maxblk;
    ssize_t minpsz, maxpsz;
    mblk_t *mp = NULL, *dp = NULL;

    tls_wsent = 1; /* always the normal way: sd_ret looks at flow control */
    if (flags == MSG_HIPRI) {
        if (band != 0)
            return -EINVAL;
    } else if (flags != MSG_BAND || band < 0 || band > UST_MAXBAND) {
        return -EINVAL;
    }
    if ((err = sd_getbuf(ctl, &clen, &cbuf)) != 0 || (err = sd_getbuf(data, &dlen, &dbuf)) != 0)
        return -err;
    if (flags == MSG_HIPRI && clen < 0)
        return -EINVAL;
    if (clen < 0 && dlen < 0)
        return 0;
    if (clen > UST_STRCTLSZ)
        return -ERANGE;

    ust_sd_flush_hold(sd);
    ust_lock(&sd->sd_lock);
    sd_psz(sd, &minpsz, &maxpsz);
    if (dlen >= 0 && (dlen < minpsz || (size_t)dlen > sd_pktsize(maxpsz))) {
        ust_unlock(&sd->sd_lock);
        return -ERANGE;
    }
    nonblock = sd_nonblock(sd);
    wroff = sd->sd_wroff;
    maxblk = (sd->sd_maxblk == INFPSZ || sd->sd_maxblk <= 0) ? SIZE_MAX : (size_t)sd->sd_maxblk;
    if (flags == MSG_HIPRI)
        err = ust_sd_write_error(sd);
    else
        err = ust_sd_wait_writable(sd, band, nonblock);
    ust_unlock(&sd->sd_lock);
    if (err)
        return -err;

    if (dlen >= 0) {
        struct ust_sd_uio u;
        struct iovec one;
        ust_sd_uio_single(&u, &one, dbuf, (size_t)dlen);
        dp = sd_build(sd, &u, (size_t)dlen, wroff, maxblk, nonblock ? SD_NB : 0, &err);
        if (!dp)
            return -err;
    }
    if (clen >= 0) {
        mp = sd_allocb(sd, (size_t)clen, nonblock ? SD_NB : 0, &err);
        if (!mp) {
            freemsg(dp);
            return -err;
        }
        if (clen > 0 && ust_copyin(cbuf, mp->b_wptr, (size_t)clen) != 0) {
            freemsg(mp);
            freemsg(dp);
            return -EFAULT;
        }
        mp->b_wptr += clen;
        mp->b_datap->db_type = flags == MSG_HIPRI ? M_PCPROTO : M_PROTO;
        mp->b_cont = dp;
    } else {
        mp = dp;
    }
    mp->b_band = flags == MSG_HIPRI ? 0 : (unsigned char)band;
    int stop; /* a signal once it went: putmsg returns 0, it was sent */
    return -sd_send_data(sd, mp, nonblock ? SD_NB : 0, &stop);
}
