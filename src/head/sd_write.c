/* SPDX-License-Identifier: MIT */
/*
 * sd_write.c -- the write side of the stream head: write(2)/writev(2),
 * putmsg(2)/putpmsg(2), flow control for writers, write errors, and write
 * holding (SNDHOLD).
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
 *   Holding (SNDHOLD, or SO_STRHOLD from a module).  A write smaller than a
 *   FASTBUF (UST_FASTBUF bytes) is not sent: its data gathers in sd_hold, a
 *   block of UST_HOLDSZ bytes (less if the packet size is smaller), and
 *   the next small writes are appended to it while it has room.  It is sent
 *   when a write does not fit, before any write that is not held, by
 *   ust_sd_flush_hold (which read, getmsg, putmsg, ioctl, poll and close
 *   call), and by the hold timer, which fires every tick (1/HZ s) while
 *   holds are being made, so held data never waits much longer than a tick.
 *   Two rules keep the data in order: whoever takes the held message out to
 *   send it marks the hold "in transit" until its putnext has returned, and
 *   every writer, and every flush, waits while a hold is in transit.  So
 *   what a thread wrote earlier always goes down before what it writes or
 *   sends later, whichever thread happens to send the held part.
 *
 *   The hold timer.  struct stdata has no field for a timeout id, so the
 *   armed timers live in a small table here keyed by stream (ht_*), at most
 *   one per stream.  sd_holdtime, written only by this file (always with
 *   atomics, since ust_sd_flush_hold reads it without the lock), encodes the
 *   rest: 0 means no timer is armed (and then no message is held); otherwise
 *   its even part is when the timer was last armed and bit 0 is set while a
 *   held message is in transit.  The timer re-arms itself while it finds
 *   something to send and disarms when it finds nothing.  The last close
 *   (ust_sd_flush_hold from ust_sd_teardown) cancels it and waits for a
 *   callback in progress, so no callback touches a stream after its close.
 *
 * Locking
 *   sd_lock guards sd_hold, sd_holdtime and the options read here, and is
 *   never held across putnext.  ht_lock guards the timer table and each
 *   entry's id and running count; order: sd_lock > ht_lock > the timer lock
 *   (timeout() is called under both).  untimeout() is called with neither
 *   held, because it waits for a running callback, which takes both.
 */
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "sthead.h"

#define HOLD_TICK_NS    (1000000000LL / HZ)
#define HOLD_OVERDUE_NS (3 * HOLD_TICK_NS) /* the timer is late: the writer sends */
#define HOLD_BUSY       1LL                /* sd_holdtime bit 0: in transit */
#define HT_NBUCKET      64

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static long long holdtime_get(struct stdata *sd)
{
    return __atomic_load_n(&sd->sd_holdtime, __ATOMIC_ACQUIRE);
}

static void holdtime_set(struct stdata *sd, long long v)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    __atomic_store_n(&sd->sd_holdtime, v, __ATOMIC_RELEASE);
}

/* The clock for the per-write lateness test: a few nanoseconds to read,
 * a few milliseconds coarse, which HOLD_OVERDUE_NS (three ticks) tolerates. */
static long long coarse_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* An arm time for sd_holdtime: even and never 0. */
static long long hold_stamp(void)
{
    long long t = ust_now_ns() & ~HOLD_BUSY;
    return t ? t : 2;
}

/* Send mp down the stream: putnext from the head's write queue under a claim.
 * No lock held. */
static void sd_send(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
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
/* Copying from the caller's iovec array                                    */
/* ------------------------------------------------------------------------ */

/* A cursor over the caller's iovecs; each element is copied in (ust_copyin)
 * before use, so a bad array pointer is EFAULT, not a crash. */
struct sd_uio {
    const struct iovec *iov; /* the caller's array */
    int iovcnt;
    int idx;          /* next element to load */
    struct iovec cur; /* what is left of the current element */
};

/* Check the array and total its lengths.  0, EFAULT or EINVAL (more than
 * IOV_MAX elements, a negative count, or more than SSIZE_MAX bytes). */
static int uio_init(struct sd_uio *u, const struct iovec *iov, int iovcnt, size_t *total)
{
    size_t sum = 0;
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return EINVAL;
    for (int i = 0; i < iovcnt; i++) {
        struct iovec v;
        if (ust_copyin(&iov[i], &v, sizeof(v)) != 0)
            return EFAULT;
        if (v.iov_len > (size_t)SSIZE_MAX - sum)
            return EINVAL;
        sum += v.iov_len;
    }
    u->iov = iov;
    u->iovcnt = iovcnt;
    u->idx = 0;
    u->cur.iov_base = NULL;
    u->cur.iov_len = 0;
    *total = sum;
    return 0;
}

/* Copy the next n bytes into dst.  0 or EFAULT (a bad buffer, or the array
 * changed under us and holds fewer bytes than it did). */
static int uio_copy(struct sd_uio *u, unsigned char *dst, size_t n)
{
    while (n > 0) {
        while (u->cur.iov_len == 0) {
            if (u->idx >= u->iovcnt || ust_copyin(&u->iov[u->idx], &u->cur, sizeof(u->cur)) != 0)
                return EFAULT;
            u->idx++;
        }
        size_t k = n < u->cur.iov_len ? n : u->cur.iov_len;
        if (ust_copyin(u->cur.iov_base, dst, k) != 0)
            return EFAULT;
        dst += k;
        n -= k;
        u->cur.iov_base = (char *)u->cur.iov_base + k;
        u->cur.iov_len -= k;
    }
    return 0;
}

/* A plain buffer as a one-element cursor source. */
static void uio_single(struct sd_uio *u, struct iovec *one, const void *buf, size_t len)
{
    one->iov_base = (void *)(uintptr_t)buf;
    one->iov_len = len;
    u->iov = one;
    u->iovcnt = 1;
    u->idx = 0;
    u->cur.iov_base = NULL;
    u->cur.iov_len = 0;
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
    uint_t fl = sd->sd_flag;
    int err = 0, pipe = 0;

    if (fl & STRCLOSE)
        return EBADF;
    if (fl & STPLEX)
        return EINVAL;
    if ((fl & STWRERR) && sd->sd_werror) {
        err = sd->sd_werror;
        pipe = 1;
        if (sd->sd_erropt & WERRNONPERSIST) {
            sd->sd_flag &= ~STWRERR;
            sd->sd_werror = 0;
        }
    } else if (fl & STRHUP) {
        if (fl & (STRPIPE | STRFIFO)) {
            err = EPIPE;
            pipe = 1;
        } else {
            err = ENXIO;
        }
    }
    if (pipe && (sd->sd_wropt & SNDPIPE))
        pthread_kill(pthread_self(), SIGPIPE);
    return err;
}

/*
 * ust_sd_wait_writable -- wait until a message of band `band` may be sent.
 *   Context: a system call; may block unless nonblock.  sd_lock held on entry
 *   and on return (dropped while waiting).
 *   A writer that finds the stream full withdraws writable readiness (band
 *   0) and, unless non-blocking, sleeps on sd_wwait until the back-enable
 *   wakes it; errors are rechecked after every wake.
 *   Returns 0, EAGAIN (non-blocking and flow controlled), EINTR (a signal
 *   handler without SA_RESTART ran), or an error of ust_sd_write_error.
 */
int ust_sd_wait_writable(struct stdata *sd, int band, int nonblock)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    for (;;) {
        int err = ust_sd_write_error(sd);
        if (err)
            return err;
        unsigned seq = ust_sd_wait_seq(&sd->sd_wwait);
        if (sd_canput(sd, (unsigned char)band)) {
            if (band == 0)
                ust_sd_ready_write(sd, 1); /* no system call unless it was withdrawn */
            return 0;
        }
        if (nonblock) {
            if (band == 0)
                ust_sd_ready_write(sd, 0); /* only an event loop looks at POLLOUT */
            return EAGAIN;
        }
        err = ust_sd_wait_from(sd, &sd->sd_wwait, seq, 0);
        if (err)
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
static int sd_waitbuf(struct stdata *sd, size_t size)
{
    ust_lock(&sd->sd_lock);
    unsigned seq = ust_sd_wait_seq(&sd->sd_wwait);
    int err = ust_sd_write_error(sd);
    bufcall_id_t id = 0;
    if (err == 0) {
        id = bufcall(size, BPRI_MED, sd_bufcall_wake, sd);
        /* Without a bufcall record, poll once a tick. */
        err = ust_sd_wait_from(sd, &sd->sd_wwait, seq, id ? 0 : ust_now_ns() + HOLD_TICK_NS);
        if (err == ETIME)
            err = 0;
    }
    ust_unlock(&sd->sd_lock);
    unbufcall(id); /* waits for a callback in progress: sd stays valid */
    return err;
}

/* allocb for the write side: a blocking caller waits for memory, a
 * non-blocking one fails EAGAIN.  No lock held.  NULL with *errp set. */
static mblk_t *sd_allocb(struct stdata *sd, size_t size, int nonblock, int *errp)
{
    for (;;) {
        mblk_t *mp = allocb(size, BPRI_MED);
        if (mp)
            return mp;
        if (nonblock) {
            *errp = EAGAIN;
            return NULL;
        }
        int err = sd_waitbuf(sd, size);
        if (err) {
            *errp = err;
            return NULL;
        }
    }
}

/*
 * sd_build -- an M_DATA message of n bytes copied from u: the first block
 *   with wroff bytes of headroom, no block holding more than maxblk bytes.
 *   n == 0 gives one empty block.  No lock held.  Returns the message, or
 *   NULL with *errp (EFAULT, EAGAIN, EINTR, a write error).
 */
static mblk_t *sd_build(struct stdata *sd, struct sd_uio *u, size_t n, size_t wroff, size_t maxblk,
                        int nonblock, int *errp)
{
    mblk_t *head = NULL, **tail = &head;
    size_t off = wroff;
    do {
        size_t k = n < maxblk ? n : maxblk;
        mblk_t *bp = sd_allocb(sd, off + k, nonblock, errp);
        if (!bp)
            goto fail;
        bp->b_rptr += off;
        bp->b_wptr = bp->b_rptr;
        *tail = bp;
        tail = &bp->b_cont;
        if (k && (*errp = uio_copy(u, bp->b_wptr, k)) != 0)
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
/* The hold timer table                                                     */
/* ------------------------------------------------------------------------ */

struct hold_timer {
    struct hold_timer *next; /* ht_lock: bucket chain */
    struct stdata *sd;       /* constant */
    toid_t id;               /* ht_lock: the pending timeout */
    int running;             /* ht_lock: callbacks inside hold_expire */
};

static ust_lock_t ht_lock = UST_LOCK_INIT;            /* see Locking */
static ust_cond_t ht_cv = {PTHREAD_COND_INITIALIZER}; /* ht_lock: running fell */
static struct hold_timer *ht_tab[HT_NBUCKET];         /* ht_lock */

static struct hold_timer **ht_bucket(const struct stdata *sd)
{
    uintptr_t h = (uintptr_t)sd;
    return &ht_tab[(h >> 6 ^ h >> 12) % HT_NBUCKET];
}

static struct hold_timer *ht_find(const struct stdata *sd)
{
    UST_ASSERT_HELD(&ht_lock);
    for (struct hold_timer *t = *ht_bucket(sd); t; t = t->next)
        if (t->sd == sd)
            return t;
    return NULL;
}

static int ht_present(const struct hold_timer *ht)
{
    UST_ASSERT_HELD(&ht_lock);
    for (struct hold_timer *t = *ht_bucket(ht->sd); t; t = t->next)
        if (t == ht)
            return 1;
    return 0;
}

static void ht_unlink(struct hold_timer *ht)
{
    UST_ASSERT_HELD(&ht_lock);
    for (struct hold_timer **pp = ht_bucket(ht->sd); *pp; pp = &(*pp)->next)
        if (*pp == ht) {
            *pp = ht->next;
            ht->next = NULL;
            return;
        }
}

static void hold_expire(void *arg);

/* Arm the hold timer of sd unless it is armed.  sd_lock held.  0 or ENOMEM
 * (then the caller must not hold). */
static int hold_arm(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (holdtime_get(sd) != 0)
        return 0;
    struct hold_timer *ht = calloc(1, sizeof(*ht));
    if (!ht)
        return ENOMEM;
    ht->sd = sd;
    ust_lock(&ht_lock);
    struct hold_timer **b = ht_bucket(sd);
    ht->next = *b;
    *b = ht;
    ht->id = timeout(hold_expire, ht, 1);
    if (ht->id == 0)
        ht_unlink(ht);
    ust_unlock(&ht_lock);
    if (ht->id == 0) {
        free(ht);
        return ENOMEM;
    }
    holdtime_set(sd, hold_stamp());
    return 0;
}

/* Take sd's timer out of the table (sd_lock held); the caller then calls
 * hold_disarm_finish with no lock held.  NULL if none was armed. */
static struct hold_timer *hold_disarm_start(struct stdata *sd, toid_t *idp)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    struct hold_timer *ht = NULL;
    if (holdtime_get(sd) == 0)
        return NULL;
    ust_lock(&ht_lock);
    ht = ht_find(sd);
    if (ht) {
        ht_unlink(ht);
        *idp = ht->id;
    }
    ust_unlock(&ht_lock);
    holdtime_set(sd, 0);
    return ht;
}

/* Cancel the timeout and wait for any callback still using ht, then free it. */
static void hold_disarm_finish(struct hold_timer *ht, toid_t id)
{
    if (!ht)
        return;
    untimeout(id);
    ust_lock(&ht_lock);
    while (ht->running > 0)
        ust_cond_wait(&ht_cv, &ht_lock);
    ust_unlock(&ht_lock);
    free(ht);
}

/* Send the held message, which the caller took out of sd_hold, marking the
 * hold in transit meanwhile.  sd_lock held on entry and return (dropped
 * across the putnext); writers waiting for the transit are woken. */
static void hold_send_locked(struct stdata *sd, mblk_t *mp)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    holdtime_set(sd, holdtime_get(sd) | HOLD_BUSY);
    ust_unlock(&sd->sd_lock);
    sd_send(sd, mp);
    ust_lock(&sd->sd_lock);
    holdtime_set(sd, holdtime_get(sd) & ~HOLD_BUSY);
    ust_sd_wake(&sd->sd_wwait);
}

/*
 * hold_expire -- the hold timer: send what is held, then re-arm while holds
 *   keep being made, else disarm.
 *   Context: the timer thread; no lock held on entry.
 */
static void hold_expire(void *arg)
{
    struct hold_timer *ht = arg;
    struct stdata *sd;
    int active = 0, drop = 0;

    ust_lock(&ht_lock);
    if (!ht_present(ht)) { /* cancelled: the canceller frees it */
        ust_unlock(&ht_lock);
        return;
    }
    ht->running++;
    sd = ht->sd;
    ust_unlock(&ht_lock);

    ust_lock(&sd->sd_lock);
    ust_lock(&ht_lock);
    int mine = ht_present(ht); /* it cannot leave the table while we hold sd_lock */
    ust_unlock(&ht_lock);
    if (mine) {
        if (holdtime_get(sd) & HOLD_BUSY) {
            active = 1; /* someone else is sending it; keep watching */
        } else if (sd->sd_hold) {
            mblk_t *mp = sd->sd_hold;
            sd->sd_hold = NULL;
            hold_send_locked(sd, mp);
            active = 1;
        }
        ust_lock(&ht_lock);
        if (ht_present(ht)) {
            toid_t id = active ? timeout(hold_expire, ht, 1) : 0;
            if (id) {
                ht->id = id;
                holdtime_set(sd, hold_stamp() | (holdtime_get(sd) & HOLD_BUSY));
            } else { /* disarm; a transit by another thread stays marked */
                ht_unlink(ht);
                holdtime_set(sd, holdtime_get(sd) & HOLD_BUSY);
                drop = 1; /* nothing is held now: writers wait for a transit */
            }
        }
        ust_unlock(&ht_lock);
    }
    ust_unlock(&sd->sd_lock);

    ust_lock(&ht_lock);
    ht->running--;
    ust_cond_broadcast(&ht_cv);
    ust_unlock(&ht_lock);
    if (drop)
        free(ht);
}

/*
 * ust_sd_flush_hold -- send the held (SNDHOLD) message now, and stop the
 *   hold timer.
 *   Context: a system call on the stream (read, getmsg, putmsg, ioctl, poll,
 *   close) or I_SWROPT; no lock held (it calls putnext).  May wait briefly
 *   while another thread has a held message in transit, so that the caller's
 *   next message goes after it.  Costs one atomic load when nothing is held.
 *   On the last close, after it returns no hold timer refers to sd.
 */
void ust_sd_flush_hold(struct stdata *sd)
{
    struct hold_timer *ht;
    toid_t id = 0;

    if (!sd || holdtime_get(sd) == 0)
        return;
    ust_lock(&sd->sd_lock);
    while (holdtime_get(sd) & HOLD_BUSY)
        ust_sd_wait(sd, &sd->sd_wwait, 0); /* EINTR: just look again */
    if (sd->sd_hold) {
        mblk_t *mp = sd->sd_hold;
        sd->sd_hold = NULL;
        hold_send_locked(sd, mp);
    }
    ht = hold_disarm_start(sd, &id);
    ust_unlock(&sd->sd_lock);
    hold_disarm_finish(ht, id);
}

/* ------------------------------------------------------------------------ */
/* write(2)                                                                 */
/* ------------------------------------------------------------------------ */

/* What a write needs of the stream, read under sd_lock. */
struct wparams {
    int nonblock;
    int hold; /* holding enabled: SNDHOLD or SO_STRHOLD */
    int sndzero;
    int ndelon; /* SO_NDELON: a flow-controlled non-blocking write returns 0 */
    size_t wroff;
    size_t maxblk; /* largest data block, SIZE_MAX for no limit */
    ssize_t minpsz, maxpsz;
};

static void wparams_get(struct stdata *sd, struct wparams *p)
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

/* The outcome of a write that stopped with err after `sent` bytes: the
 * partial count if anything went, else -err (0 for SO_NDELON's EAGAIN). */
static ssize_t sd_wresult(size_t sent, int err, const struct wparams *p)
{
    if (sent > 0)
        return (ssize_t)sent;
    if (err == EAGAIN && p->ndelon)
        return 0;
    return -err;
}

/* Outcomes of hold_write. */
enum { HW_DONE = 1, HW_AGAIN, HW_NORMAL };

/*
 * hold_write -- try to keep a small write in the hold.  sd_lock held, no
 *   hold in transit.
 *   Returns HW_DONE when the write is done (*res is its result; sd_lock
 *   released); HW_AGAIN when the caller must look at the stream again (a
 *   held message that could not take this write has been sent, or another
 *   writer got in while this one waited; sd_lock held); HW_NORMAL when the
 *   write must be sent as a normal message (no memory for a hold; sd_lock
 *   held, nothing held).
 */
static int hold_write(struct stdata *sd, struct sd_uio *u, size_t total, size_t cap,
                      const struct wparams *p, ssize_t *res)
{
    mblk_t *h = sd->sd_hold;
    if (h) {
        size_t have = (size_t)(h->b_wptr - h->b_rptr);
        int late = coarse_now_ns() - (holdtime_get(sd) & ~HOLD_BUSY) > HOLD_OVERDUE_NS;
        if (!late && have + total <= cap && (size_t)(h->b_datap->db_lim - h->b_wptr) >= total) {
            unsigned char *w = h->b_wptr;
            int err = uio_copy(u, w, total);
            if (err == 0)
                h->b_wptr = w + total;
            ust_unlock(&sd->sd_lock);
            *res = err ? -err : (ssize_t)total;
            return HW_DONE;
        }
        sd->sd_hold = NULL;
        hold_send_locked(sd, h);
        return HW_AGAIN;
    }
    int err = ust_sd_wait_writable(sd, 0, p->nonblock);
    if (err) {
        ust_unlock(&sd->sd_lock);
        *res = sd_wresult(0, err, p);
        return HW_DONE;
    }
    if (sd->sd_hold || (holdtime_get(sd) & HOLD_BUSY))
        return HW_AGAIN;
    mblk_t *mp = allocb(p->wroff + cap, BPRI_MED);
    if (!mp)
        return HW_NORMAL; /* the normal path knows how to wait for memory */
    mp->b_rptr += p->wroff;
    mp->b_wptr = mp->b_rptr;
    err = uio_copy(u, mp->b_wptr, total);
    if (err) {
        ust_unlock(&sd->sd_lock);
        freemsg(mp);
        *res = -err;
        return HW_DONE;
    }
    mp->b_wptr += total;
    if (hold_arm(sd) != 0) { /* no timer: send it now instead */
        ust_unlock(&sd->sd_lock);
        sd_send(sd, mp);
        *res = (ssize_t)total;
        return HW_DONE;
    }
    sd->sd_hold = mp;
    ust_unlock(&sd->sd_lock);
    *res = (ssize_t)total;
    return HW_DONE;
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
ssize_t ust_sd_write(struct stdata *sd, const struct iovec *iov, int iovcnt)
{
    struct sd_uio u;
    struct wparams p;
    size_t total, pkt, sent = 0;
    ssize_t res;
    int err;

    err = uio_init(&u, iov, iovcnt, &total);
    if (err)
        return -err;

    ust_lock(&sd->sd_lock);
    for (;;) {
        err = ust_sd_write_error(sd);
        if (err) {
            ust_unlock(&sd->sd_lock);
            return -err;
        }
        if (holdtime_get(sd) & HOLD_BUSY) { /* wait: our data goes after it */
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
        if (p.hold && total > 0 && total < UST_FASTBUF && total <= cap) {
            int hw = hold_write(sd, &u, total, cap, &p, &res);
            if (hw == HW_DONE)
                return res;
            if (hw == HW_AGAIN)
                continue;
            break; /* HW_NORMAL: nothing is held */
        }
        if (sd->sd_hold) { /* a write that is not held goes after the held data */
            mblk_t *h = sd->sd_hold;
            sd->sd_hold = NULL;
            hold_send_locked(sd, h);
            continue;
        }
        break;
    }
    /* sd_lock held: the first message's flow control. */
    err = ust_sd_wait_writable(sd, 0, p.nonblock);
    ust_unlock(&sd->sd_lock);
    if (err)
        return sd_wresult(0, err, &p);
    for (;;) {
        size_t n = total - sent < pkt ? total - sent : pkt;
        mblk_t *mp = sd_build(sd, &u, n, p.wroff, p.maxblk, p.nonblock, &err);
        if (!mp)
            return sd_wresult(sent, err, &p);
        sd_send(sd, mp);
        sent += n;
        if (sent >= total)
            return (ssize_t)sent;
        if (!sd_canput(sd, 0)) {
            ust_lock(&sd->sd_lock);
            err = ust_sd_wait_writable(sd, 0, p.nonblock);
            ust_unlock(&sd->sd_lock);
            if (err)
                return sd_wresult(sent, err, &p);
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
        struct sd_uio u;
        struct iovec one;
        uio_single(&u, &one, dbuf, (size_t)dlen);
        dp = sd_build(sd, &u, (size_t)dlen, wroff, maxblk, nonblock, &err);
        if (!dp)
            return -err;
    }
    if (clen >= 0) {
        mp = sd_allocb(sd, (size_t)clen, nonblock, &err);
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
    sd_send(sd, mp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The system calls                                                         */
/* ------------------------------------------------------------------------ */

/* Finish a public call: release the stream, map -errno to errno/-1. */
static ssize_t sd_ret(struct stdata *sd, ssize_t r)
{
    ust_sd_put(sd);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

/*
 * strm_write -- write(2) for streams.  See ust_sd_write; also EBADF (not
 * open), ENOSTR (not a stream), EINVAL (count above SSIZE_MAX).
 */
ssize_t strm_write(int fd, const void *buf, size_t count)
{
    struct iovec one;
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    if (count > SSIZE_MAX)
        return sd_ret(sd, -EINVAL);
    if (!buf && count > 0)
        return sd_ret(sd, -EFAULT);
    one.iov_base = (void *)(uintptr_t)buf;
    one.iov_len = count;
    return sd_ret(sd, ust_sd_write(sd, &one, 1));
}

/*
 * strm_writev -- writev(2) for streams: the iovecs' bytes as if one write.
 * EINVAL for iovcnt below 0 or above IOV_MAX or a total above SSIZE_MAX;
 * EFAULT for a bad array or buffer.
 */
ssize_t strm_writev(int fd, const struct iovec *iov, int iovcnt)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    return sd_ret(sd, ust_sd_write(sd, iov, iovcnt));
}

/*
 * putmsg -- putmsg(2): flags 0 (a normal message, band 0) or RS_HIPRI;
 * anything else is EINVAL.  Errors otherwise as ust_sd_putpmsg.
 */
int putmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int flags)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    if (flags != 0 && flags != RS_HIPRI)
        return (int)sd_ret(sd, -EINVAL);
    return (int)sd_ret(
        sd, ust_sd_putpmsg(sd, ctlptr, dataptr, 0, flags == RS_HIPRI ? MSG_HIPRI : MSG_BAND));
}

/*
 * putpmsg -- putpmsg(2): flags MSG_HIPRI (band 0) or MSG_BAND (band 0..255);
 * anything else is EINVAL.  Errors otherwise as ust_sd_putpmsg.
 */
int putpmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int band, int flags)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    return (int)sd_ret(sd, ust_sd_putpmsg(sd, ctlptr, dataptr, band, flags));
}
