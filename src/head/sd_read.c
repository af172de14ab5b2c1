/* SPDX-License-Identifier: MIT */
/*
 * sd_read.c -- reading from a stream as a byte stream: read(2)/readv(2) and
 * M_READ.  getmsg(2)/getpmsg(2), I_PEEK, I_NREAD and FIONREAD are in
 * sd_getmsg.c; the helpers both files use are in sd_readq.h.
 *
 * Principles of operation
 *   Messages wait on the head read queue in STREAMS order (high priority
 *   first, then band 255 down to band 0, FIFO within a band).  A read takes
 *   sd_lock once (with ust_sd_lockq, so that the back-enables its getq causes
 *   never nest two heads' locks) and keeps it while it takes messages off with
 *   getq, copies them out and puts back what is left of the last one with
 *   putbq; only a wait drops it.  So reads are atomic with respect to each
 *   other, a message is never reordered, and on EFAULT the part not copied is
 *   back at the front.  Messages read to the end are freed after sd_lock is
 *   dropped.  A small read that changes no readiness may be served without
 *   sd_lock while nobody has taken it since the last read checked the
 *   stream ("The read snapshot" below).  The only system call of a read that finds data is none; one
 *   that empties the queue withdraws the readable token (an edge).
 *
 *   Read modes (streamio(7) I_SRDOPT, read(2)):
 *     RNORM  byte stream: reads across message boundaries until the count is
 *            satisfied or the queue is empty; the rest of a partly read
 *            message stays at the front.  A read stops before a marked
 *            message (MSGMARK) when it has data, and after reading one, so it
 *            never crosses a mark; with SO_DELIM it stops after a delimited
 *            message (MSGDELIM).  A zero-length message ends the read: it is
 *            consumed and read returns 0 if nothing was read yet, otherwise
 *            it stays for the next read.
 *     RMSGD  at most one message; what does not fit is discarded.
 *     RMSGN  at most one message; what does not fit stays at the front.
 *     RFILL  (with RNORM; Linux Fast-STREAMS) wait until the whole count can
 *            be returned, or a zero-length or delimited message, a mark, an
 *            error or a hang-up ends the read early.  While it waits with
 *            part of its count it keeps the readable token (so a pipe's
 *            writer keeps depositing), and while it lacks more than
 *            FILL_SPIN_MAX bytes it sleeps without spinning.
 *   Protocol options for M_PROTO/M_PCPROTO at the front: RPROTNORM fails the
 *   read with EBADMSG (the message stays), RPROTDAT reads the control part as
 *   data, RPROTDIS discards the control part (a message that has nothing
 *   else disappears and the read goes on).  An M_PASSFP at the front (a file
 *   waiting for I_RECVFD) fails read and getmsg with EBADMSG.
 *   Data held at the head for SNDHOLD is sent before a read or getmsg looks
 *   for data (the answer a reader waits for may depend on it).
 *   O_NDELAY and O_NONBLOCK are the same flag on Linux, so an empty
 *   non-blocking read always fails with EAGAIN (SVR4 returned 0 for O_NDELAY).
 *   The access mode of the open is not checked: it belongs to the stream
 *   (sd_oflag, from the first open), not to each descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "sd_readq.h"
#include "sthead.h"

/* What sd_take tells the read loop. */
enum { TAKE_MORE, TAKE_STOP };

/* A position in the caller's iovec array. */
struct rcur {
    const struct iovec *iov;
    int cnt;
    int i;      /* current element */
    size_t off; /* bytes used of iov[i] */
};

static void mem_wake(void *arg)
{
    struct stdata *sd = arg;
    ust_sd_wake(&sd->sd_rwait);
}

/* ust_sd_wait_mem -- see sd_readq.h.  sd_lock held, dropped while waiting. */
int ust_sd_wait_mem(struct stdata *sd)
{
    if (ust_sd_settle(sd))
        return 0;
    unsigned seq = ust_sd_wait_seq(&sd->sd_rwait);
    bufcall_id_t id = bufcall(sizeof(mblk_t), BPRI_HI, mem_wake, sd);
    int e = ust_sd_wait_from(sd, &sd->sd_rwait, seq, ust_now_ns() + 1000000000LL / HZ);
    unbufcall(id); /* waits for a callback in progress: sd stays valid */
    return e == ETIME ? 0 : e;
}

/* Drop the leading blocks of mp that are empty, carrying band and flags to the
 * new first block; returns the new first block (NULL if nothing is left, the
 * dropped blocks then all went to *dead). */
static mblk_t *trim_front(mblk_t *mp, mblk_t **dead)
{
    while (mp && blen(mp) == 0 && mp->b_cont) {
        mblk_t *next = mp->b_cont;
        next->b_band = mp->b_band;
        next->b_flag = mp->b_flag;
        mp->b_cont = NULL;
        dead_add(dead, mp);
        mp = next;
    }
    return mp;
}

/* ------------------------------------------------------------------------ */
/* Copying out                                                              */
/* ------------------------------------------------------------------------ */

/* Copy len bytes to the caller's buffers at the cursor.  *done counts what
 * was copied; returns 0 or EFAULT. */
static int cur_put(struct rcur *c, const unsigned char *src, size_t len, size_t *done)
{
    *done = 0;
    while (len > 0) {
        while (c->i < c->cnt && c->off == c->iov[c->i].iov_len) {
            c->i++;
            c->off = 0;
        }
        if (c->i == c->cnt)
            return 0;
        size_t k = c->iov[c->i].iov_len - c->off;
        if (k > len)
            k = len;
        if (ust_copyout(src, (char *)c->iov[c->i].iov_base + c->off, k) != 0)
            return EFAULT;
        c->off += k;
        src += k;
        len -= k;
        *done += k;
    }
    return 0;
}

/* Copy up to want bytes of the blocks of mp (all of them, whatever their
 * type) to the cursor, advancing b_rptr over what was copied.  *got counts the
 * bytes; returns 0 or EFAULT. */
static int copy_msg(mblk_t *mp, struct rcur *c, size_t want, size_t *got)
{
    *got = 0;
    for (mblk_t *b = mp; b && *got < want; b = b->b_cont) {
        size_t k = blen(b);
        if (k > want - *got)
            k = want - *got;
        size_t done;
        int e = cur_put(c, b->b_rptr, k, &done);
        b->b_rptr += done;
        *got += done;
        if (e)
            return e;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* read(2)                                                                  */
/* ------------------------------------------------------------------------ */

/* Does this stream want M_READ before a read blocks (SO_MREADON, RMREAD)?
 * sd_lock held. */
static int sd_wants_mread(struct stdata *sd)
{
    return (sd->sd_flag & STRMREAD) || (sd->sd_rdopt & RMREAD);
}

/*
 * sd_take -- read message mp (just taken off the queue with getq) into the
 *   caller's buffers.  *np counts the bytes the read has so far; total is its
 *   count.  Consumed messages go to *dead; what is not consumed goes back to
 *   the front.  Sets *errp (EBADMSG, EFAULT) only when the read has nothing.
 *   Returns TAKE_MORE if the read may go on with the next message.
 *   sd_lock held (ust_sd_lockq).
 */
static int sd_take(struct stdata *sd, queue_t *q, mblk_t *mp, struct rcur *cur, int mode, int rdopt,
                   size_t total, size_t *np, mblk_t **dead, int *errp)
{
    size_t n = *np;
    unsigned char type = mp->b_datap->db_type;

    if (type == M_PASSFP) {
        put_back(q, mp);
        if (n == 0)
            *errp = EBADMSG;
        return TAKE_STOP;
    }
    if (type != M_DATA) {
        int prot = rdopt & RPROTMASK;
        if (prot == RPROTDIS) {
            mblk_t *d = data_part(mp);
            if (!d) { /* nothing but control: as if it never came */
                dead_add(dead, mp);
                return TAKE_MORE;
            }
            mblk_t *c = mp;
            while (c->b_cont != d)
                c = c->b_cont;
            c->b_cont = NULL;
            d->b_band = mp->b_band;
            d->b_flag = mp->b_flag;
            dead_add(dead, mp);
            mp = d;
        } else if (prot != RPROTDAT) { /* RPROTNORM */
            put_back(q, mp);
            if (n == 0)
                *errp = EBADMSG;
            return TAKE_STOP;
        }
    }
    int mark = (mp->b_flag & MSGMARK) != 0;
    if (mode == RNORM && n > 0 && mark) { /* the mark starts the next read */
        put_back(q, mp);
        return TAKE_STOP;
    }
    size_t size = chain_bytes(mp, NULL);
    if (size == 0) { /* a zero-length message ends the read */
        if (mode == RNORM && n > 0)
            put_back(q, mp);
        else
            dead_add(dead, mp);
        return TAKE_STOP;
    }
    size_t got;
    int e = copy_msg(mp, cur, total - n, &got);
    *np = n + got;
    if (e) {
        put_back(q, trim_front(mp, dead));
        if (*np == 0)
            *errp = e;
        return TAKE_STOP;
    }
    if (got == size) { /* read to the end */
        int delim = (mp->b_flag & MSGDELIM) && (sd->sd_flag & STRDELIM);
        dead_add(dead, mp);
        return (mode != RNORM || mark || delim) ? TAKE_STOP : TAKE_MORE;
    }
    /* The count is satisfied inside this message. */
    if (mode == RMSGD)
        dead_add(dead, mp);
    else
        put_back(q, trim_front(mp, dead));
    return TAKE_STOP;
}

/* Largest read served in place (front_read): the copy runs under the read
 * queue's lock, which writers take too.  On pipe ends split across
 * processes since 2026-11 (perftest --procs -r: 1.05-1.3x); in a process
 * too since the dry reader gathers batches (sd_wait.c): 1-64 B 1.23-1.39x,
 * larger reads unchanged.  Before that, the cheaper reader ran dry sooner
 * and took the writer's arrivals in smaller pieces: 0.5-0.8x at 64-256 B
 * (bench/README.md "In-place reads with gathering"). */
#define FRONT_READ_MAX 1024

/* A read-fill read lacking more than this many bytes sleeps without the
 * spin (ust_sd_wait_data_nospin): its writer needs longer than a spin to
 * write that much in small writes. */
#define FILL_SPIN_MAX 4096

/* The in-place read of front_read and snap_read, at one hold of q's lock:
 * want bytes of a plain band-0 first message whose first block holds them,
 * b_rptr advanced or, when that was all of a one-block message, the
 * message taken off to *dead.  With lk (snap_read), only while lk's taking
 * count still reads t and the queue keeps a message afterwards.  *got:
 * bytes copied (0: not served).  Returns 0 or EFAULT. */
static int serve_front(queue_t *q, struct rcur *cur, size_t want, size_t *got, mblk_t **dead,
                       const ust_lock_t *lk, unsigned long t)
{
    int e = 0, all = 0;
    *got = 0;
    mblk_t *mp = ust_q_front_hold(q);
    if (mp && (!lk || ust_lock_takes(lk) == t) && mp->b_datap->db_type == M_DATA &&
        mp->b_band == 0 && !(mp->b_flag & (MSGMARK | MSGDELIM | MSGNOGET)) &&
        blen(mp) >= want &&
        (blen(mp) > want || (mp->b_cont == NULL && (!lk || mp->b_next != NULL)))) {
        e = cur_put(cur, mp->b_rptr, want, got);
        all = *got == blen(mp);
        if (!all)
            mp->b_rptr += *got;
    }
    ust_q_front_release(q, *got, all);
    if (all)
        dead_add(dead, mp);
    return e;
}

/* A byte-stream read of `want` bytes (RNORM, nothing read yet) served in
 * place when the first message is plain band-0 data whose first block holds
 * at least that: copied out, then its b_rptr advanced (the message stays at
 * the front) or, when that was all of a one-block message, the message
 * taken off to *dead -- what getq, copy_msg and putbq do, at one hold of the
 * queue lock.  *got: bytes copied (0: not served here).  Returns 0 or
 * EFAULT.  sd_lock held. */
static int front_read(queue_t *q, struct rcur *cur, size_t want, size_t *got, mblk_t **dead)
{
    return serve_front(q, cur, want, got, dead, NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* The read snapshot                                                        */
/* ------------------------------------------------------------------------ */

/* A read that ends under sd_lock records, when nothing it checked would
 * stop a small byte-stream read (RNORM without read-fill, no M_READ, no
 * error, not a FIFO), the count of sd_lock's takings.  Everything those
 * checks read changes only under sd_lock, so while the count stands they
 * still pass (as for the write snapshot, sd_write.c).  sd_lock held. */
static void rsnap_take(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    int rdopt = sd->sd_rdopt;
    int mode = (rdopt & RMODEMASK) == RMODEMASK ? RNORM : (rdopt & RMODEMASK);
    if (mode != RNORM || (rdopt & RFILL) || sd_wants_mread(sd) || (sd->sd_flag & STRFIFO) ||
        ust_sd_state_error(sd, UST_RULE_READ, 0) != 0)
        return; /* an older count never comes back: no snapshot */
    __atomic_store_n(&sd->sd_rsnap_takes, __atomic_load_n(&sd->sd_lock.takes, __ATOMIC_RELAXED),
                     __ATOMIC_RELEASE);
}

/* A byte-stream read of `want` bytes (at most FRONT_READ_MAX) served in
 * place without sd_lock, as front_read does under it, when the snapshot
 * holds and the read changes no readiness: the readable token is shown, the
 * priority token is not, and the queue still holds a message afterwards (so
 * ust_sd_rready_after_read would do nothing).  Other readers: a read under
 * sd_lock takes messages with several holds of the queue lock; the count is
 * checked again under the queue lock, so this read runs before such a
 * read's first hold or sees its taking and steps aside -- reads stay atomic
 * with respect to each other.  *got: bytes copied (0: take the locked way).
 * Returns 0 or EFAULT.  No lock held. */
static int snap_read(struct stdata *sd, struct rcur *cur, size_t want, size_t *got, mblk_t **dead)
{
    *got = 0;
    unsigned long t = ust_lock_takes(&sd->sd_lock);
    if (t != __atomic_load_n(&sd->sd_rsnap_takes, __ATOMIC_ACQUIRE) ||
        !__atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED) ||
        __atomic_load_n(&sd->sd_ptoken, __ATOMIC_RELAXED) ||
        __atomic_load_n(&sd->sd_xend, __ATOMIC_RELAXED) != NULL)
        return 0;
    return serve_front(sd->sd_rq, cur, want, got, dead, &sd->sd_lock, t);
}

/*
 * ust_sd_read -- read(2)/readv(2) on a stream (see the principles above).
 *   Context: a system call; may block (futex wait, sd_lock dropped).  No lock
 *   held on entry.  iov is a kernel copy; its buffers are user addresses.
 *   Returns the bytes read (0: hang-up, zero-length message, empty vector),
 *   or -errno: EINVAL (STPLEX, total > SSIZE_MAX), EBADF (closing), EFAULT,
 *   EAGAIN, EINTR, EBADMSG, or the M_ERROR read error.  A read that has data
 *   returns it and leaves an error for the next read.
 */
ssize_t ust_sd_read(struct stdata *sd, const struct iovec *iov, int iovcnt)
{
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
            return -EINVAL;
        if (iov[i].iov_len && !iov[i].iov_base)
            return -EFAULT;
        total += iov[i].iov_len;
    }
    if (total == 0)
        return 0;
    ust_sd_flush_hold(sd); /* a reader may wait for the answer to held data */

    struct rcur cur = {iov, iovcnt, 0, 0};
    queue_t *q = sd->sd_rq;
    mblk_t *dead = NULL;
    size_t n = 0;
    if (total <= FRONT_READ_MAX) {
        int e = snap_read(sd, &cur, total, &n, &dead);
        if (e || n > 0) {
            dead_free(sd, dead);
            return n > 0 ? (ssize_t)n : -e;
        }
    }
    int err = 0, mread_sent = 0, unwoken = 0;
    unsigned slept = 0; /* the sequence of the last wait */

    ust_sd_lockq(sd); /* sd_lock: the whole read (dropped only to wait or send M_READ) */
    for (;;) {
        int rdopt = sd->sd_rdopt;
        int mode = (rdopt & RMODEMASK) == RMODEMASK ? RNORM : (rdopt & RMODEMASK);
        int fill = mode == RNORM && (rdopt & RFILL);
        int e = sd_read_error(sd, n == 0);
        if (e) {
            if (n == 0)
                err = e;
            break;
        }
        if (n == total)
            break;
        /* Before testing the queue: sd_data queues and wakes without sd_lock. */
        unsigned rseq = ust_sd_wait_seq(&sd->sd_rwait);
        /* A split pipe end: plain data copied straight out of the ring
         * when the head holds nothing (sd_xpipe_direct.c): one copy. */
        if (mode == RNORM && n == 0 && !fill && !sd_wants_mread(sd) &&
            __atomic_load_n(&sd->sd_xend, __ATOMIC_RELAXED) != NULL) {
            ssize_t d = ust_sd_procs()->xpipe_read(sd, iov, iovcnt, total);
            if (d != 0) {
                if (d < 0)
                    err = (int)-d;
                else
                    n = (size_t)d;
                break;
            }
        }
        if (mode == RNORM && n == 0 && total <= FRONT_READ_MAX) {
            size_t got;
            e = front_read(q, &cur, total, &got, &dead);
            n = got;
            if (e || got > 0) {
                if (n == 0)
                    err = e;
                break;
            }
        }
        mblk_t *mp = getq(q);
        if (!mp && ust_sd_absorb_some(sd)) { /* a pipe's arrivals (sd_arrive.c) */
            if (unwoken)
                ust_sd_note_lost_wakeup(&sd->sd_rwait, slept);
            unwoken = 0;
            continue;
        }
        if (mp && unwoken)
            ust_sd_note_lost_wakeup(&sd->sd_rwait, slept);
        unwoken = 0;
        if (mp && mode != RNORM && first_write(q, mp) != 0) {
            put_back(q, mp);
            if (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) {
                if (n == 0)
                    err = EAGAIN;
                break;
            }
            e = ust_sd_wait_mem(sd);
            if (e) {
                if (n == 0)
                    err = e;
                break;
            }
            continue;
        }
        if (!mp) {
            if (n > 0 && !fill)
                break;
            if ((sd->sd_flag & STRHUP) || ust_fifo_eof(sd)) /* a FIFO without writer too */
                break;
            if (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) {
                if (n == 0) {
                    err = EAGAIN;
                    ust_sd_ready_read(sd, 0); /* an event loop will poll next */
                }
                break;
            }
            /* A read-fill read that holds part of its count keeps the
             * readable token while it waits for the rest (docs/STREAMHEAD.md
             * "Hold and read-fill, one copy"): withdrawn, it would turn every
             * write that follows away from the arrivals onto the normal
             * path, one token record sent and drained per write -- the
             * fill reader, faster than its writer, stayed in that mode (the
             * 256 B - 1 KiB cliff).  rready_after_read sets it right when
             * the read returns. */
            if (!(fill && n > 0))
                ust_sd_rready_dry(sd); /* exact, or the lazy token (sd_tokpay.c) */
            if (ust_sd_settle(sd))
                continue;
            if (!mread_sent && sd_wants_mread(sd)) {
                mread_sent = 1;
                ust_sd_unlockq(sd);
                ust_sd_mread(sd, total - n);
                ust_sd_lockq(sd);
                continue;
            }
            /* A read-fill read that lacks more than a spin would see come
             * sleeps at once: spinning, it took the CPU its writer needed
             * to fill it (docs/STREAMHEAD.md "Hold and read-fill, one copy"). */
            if (fill && total - n > FILL_SPIN_MAX)
                e = ust_sd_wait_data_nospin(sd, rseq, &unwoken);
            else
                e = ust_sd_wait_data(sd, rseq, &unwoken);
            slept = rseq;
            if (e) {
                if (n == 0)
                    err = e;
                break;
            }
            continue;
        }
        if (sd_take(sd, q, mp, &cur, mode, rdopt, total, &n, &dead, &err) == TAKE_STOP)
            break;
    }
    if (!err)
        rsnap_take(sd);
    ust_sd_rready_after_read(sd);
    ust_sd_unlockq(sd);
    dead_free(sd, dead);
    return err ? -err : (ssize_t)n;
}

/*
 * ust_sd_mread -- tell the stream a reader is about to block: M_READ, its
 *   data a long with the count wanted, sent down if SO_MREADON or RMREAD.
 *   Context: no lock held (takes sd_lock briefly; sends with a claim on
 *   sd_wq).  Out of memory: nothing is sent.
 */
void ust_sd_mread(struct stdata *sd, size_t count)
{
    ust_lock(&sd->sd_lock); /* sd_lock: options, sd_mread_sent */
    int want = sd_wants_mread(sd);
    if (want)
        __atomic_store_n(&sd->sd_mread_sent, 1, __ATOMIC_RELAXED);
    ust_unlock(&sd->sd_lock);
    if (!want)
        return;
    mblk_t *mp = ust_allocb_type(sizeof(long), M_READ);
    if (!mp)
        return; /* the read blocks anyway; the module just is not told */
    long c = count > (size_t)LONG_MAX ? LONG_MAX : (long)count;
    memcpy(mp->b_wptr, &c, sizeof(c));
    mp->b_wptr += sizeof(c);
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1); /* claim the head write queue */
    putnext(wq, mp);
    ust_qrelease(wq);
}
