/* SPDX-License-Identifier: MIT */
/*
 * sd_hold.c -- write holding (SNDHOLD): small writes gathered in one held
 * block, the hold timer that sends it, and ust_sd_flush_hold.
 *
 * Principles of operation
 *   Holding (SNDHOLD, or SO_STRHOLD from a module).  A write no larger than a
 *   FASTBUF (UST_FASTBUF bytes) is not sent: its data gathers in sd_hold, a
 *   block of UST_HOLDSZ bytes (less if the packet size is smaller), and
 *   the next small writes are appended to it while it has room.  It is sent
 *   when a write does not fit, before any write that is not held, by
 *   ust_sd_flush_hold (which read, getmsg, putmsg, ioctl, poll and close
 *   call), by ust_sd_hold_release when M_READ comes up (the far end's
 *   reader is about to block; it neither waits for a transit nor stops the
 *   timer, so the reader's thread never waits on the writer), and by the
 *   hold timer, which fires every tick (1/HZ s) while
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
 *   sd_lock guards sd_hold and sd_holdtime, and is never held across
 *   putnext.  ht_lock guards the timer table and each entry's id and running
 *   count; order: sd_lock > ht_lock > the timer lock (timeout() is called
 *   under both).  untimeout() is called with neither held, because it waits
 *   for a running callback, which takes both.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "sthead.h"

#define HOLD_TICK_NS    (1000000000LL / HZ)
#define HOLD_OVERDUE_NS (3 * HOLD_TICK_NS) /* the timer is late: the writer sends */
#define HT_NBUCKET      64
#define HOLD_LATE_EVERY 1024 /* bytes appended between two looks at the clock */

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
    long long t = ust_now_ns() & ~UST_HOLD_BUSY;
    return t ? t : 2;
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
static ust_cond_t ht_cv = UST_COND_INIT; /* ht_lock: running fell */
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

/*
 * ust_sd_hold_send_locked -- send the held message, which the caller took
 *   out of sd_hold, marking the hold in transit meanwhile.
 *   Context: any thread; sd_lock held on entry and return (dropped across
 *   the putnext); writers waiting for the transit are woken.
 */
void ust_sd_hold_send_locked(struct stdata *sd, mblk_t *mp)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    holdtime_set(sd, holdtime_get(sd) | UST_HOLD_BUSY);
    ust_unlock(&sd->sd_lock);
    ust_sd_send(sd, mp);
    ust_lock(&sd->sd_lock);
    holdtime_set(sd, holdtime_get(sd) & ~UST_HOLD_BUSY);
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
        if (holdtime_get(sd) & UST_HOLD_BUSY) {
            active = 1; /* someone else is sending it; keep watching */
        } else if (sd->sd_hold) {
            mblk_t *mp = sd->sd_hold;
            sd->sd_hold = NULL;
            ust_sd_hold_send_locked(sd, mp);
            active = 1;
        }
        ust_lock(&ht_lock);
        if (ht_present(ht)) {
            toid_t id = active ? timeout(hold_expire, ht, 1) : 0;
            if (id) {
                ht->id = id;
                holdtime_set(sd, hold_stamp() | (holdtime_get(sd) & UST_HOLD_BUSY));
            } else { /* disarm; a transit by another thread stays marked */
                ht_unlink(ht);
                holdtime_set(sd, holdtime_get(sd) & UST_HOLD_BUSY);
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
    while (holdtime_get(sd) & UST_HOLD_BUSY)
        ust_sd_wait(sd, &sd->sd_wwait, 0); /* EINTR: just look again */
    if (sd->sd_hold) {
        mblk_t *mp = sd->sd_hold;
        sd->sd_hold = NULL;
        ust_sd_hold_send_locked(sd, mp);
    }
    ht = hold_disarm_start(sd, &id);
    ust_unlock(&sd->sd_lock);
    hold_disarm_finish(ht, id);
}

/*
 * ust_sd_hold_release -- M_READ came up this head (on a pipe: the far end's
 *   reader is about to block): send what is held now.
 *   Unlike ust_sd_flush_hold it does not wait for a held message in transit
 *   (that one is on its way to the reader, and no hold is made while it
 *   travels: writers wait for it) and leaves the timer armed (the writer
 *   usually holds again at once; the timer disarms itself when it finds
 *   nothing).  So the reader's thread, which carries the M_READ here, never
 *   waits on the writer.
 *   Context: the head's read put procedure (sd_rput.c), any thread; no lock
 *   held (it calls putnext).  One atomic load when nothing is held.
 */
void ust_sd_hold_release(struct stdata *sd)
{
    if (!sd || holdtime_get(sd) == 0)
        return;
    ust_lock(&sd->sd_lock);
    if (!(holdtime_get(sd) & UST_HOLD_BUSY) && sd->sd_hold) {
        mblk_t *mp = sd->sd_hold;
        sd->sd_hold = NULL;
        ust_sd_hold_send_locked(sd, mp);
    }
    ust_unlock(&sd->sd_lock);
}

/* ------------------------------------------------------------------------ */
/* Holding a write                                                          */
/* ------------------------------------------------------------------------ */

/*
 * ust_sd_hold_write -- try to keep a small write in the hold.
 *   Context: a write(2); may block on flow control unless p->nonblock.
 *   sd_lock held on entry, no hold in transit.
 *   Returns UST_HW_DONE when the write is done (*res is its result; sd_lock
 *   released); UST_HW_AGAIN when the caller must look at the stream again (a
 *   held message that could not take this write has been sent, or another
 *   writer got in while this one waited; sd_lock held); UST_HW_NORMAL when the
 *   write must be sent as a normal message (no memory for a hold; sd_lock
 *   held, nothing held).
 */
int ust_sd_hold_write(struct stdata *sd, struct ust_sd_uio *u, size_t total, size_t cap,
                      const struct ust_sd_wparams *p, ssize_t *res)
{
    mblk_t *h = sd->sd_hold;
    if (h) {
        size_t have = (size_t)(h->b_wptr - h->b_rptr);
        /* Is the timer late (a starved timer thread)?  Looked at once per
         * HOLD_LATE_EVERY bytes appended: the clock costs as much as the
         * rest of a small write. */
        int late = (have / HOLD_LATE_EVERY != (have + total) / HOLD_LATE_EVERY) &&
                   coarse_now_ns() - (holdtime_get(sd) & ~UST_HOLD_BUSY) > HOLD_OVERDUE_NS;
        if (!late && have + total <= cap && (size_t)(h->b_datap->db_lim - h->b_wptr) >= total) {
            unsigned char *w = h->b_wptr;
            int err = ust_sd_uio_copy(u, w, total);
            if (err == 0) {
                h->b_wptr = w + total;
                /* The next write's line, asked for now: its fetch overlaps
                 * this call's return instead of stalling the next one's
                 * unlock (a locked instruction waits for pending stores). */
                if (h->b_datap->db_lim - h->b_wptr > 64)
                    __builtin_prefetch(h->b_wptr + 64, 1);
            }
            ust_unlock(&sd->sd_lock);
            *res = err ? -err : (ssize_t)total;
            return UST_HW_DONE;
        }
        sd->sd_hold = NULL;
        ust_sd_hold_send_locked(sd, h);
        return UST_HW_AGAIN;
    }
    int err = ust_sd_wait_writable(sd, 0, p->nonblock);
    if (err) {
        ust_unlock(&sd->sd_lock);
        *res = ust_sd_wresult(0, err, p);
        return UST_HW_DONE;
    }
    if (sd->sd_hold || (holdtime_get(sd) & UST_HOLD_BUSY))
        return UST_HW_AGAIN;
    mblk_t *mp = allocb(p->wroff + cap, BPRI_MED);
    if (!mp)
        return UST_HW_NORMAL; /* the normal path knows how to wait for memory */
    mp->b_rptr += p->wroff;
    mp->b_wptr = mp->b_rptr;
    err = ust_sd_uio_copy(u, mp->b_wptr, total);
    if (err) {
        ust_unlock(&sd->sd_lock);
        freemsg(mp);
        *res = -err;
        return UST_HW_DONE;
    }
    mp->b_wptr += total;
    if (hold_arm(sd) != 0) { /* no timer: send it now instead */
        ust_unlock(&sd->sd_lock);
        ust_sd_send(sd, mp);
        *res = (ssize_t)total;
        return UST_HW_DONE;
    }
    sd->sd_hold = mp;
    ust_unlock(&sd->sd_lock);
    *res = (ssize_t)total;
    return UST_HW_DONE;
}

/* ------------------------------------------------------------------------ */
/* fork() (sd_fork.c)                                                       */
/* ------------------------------------------------------------------------ */
/* ht_lock is quiesced (order: after the head's tab_lock, before the timer
 * lock, as in "sd_lock > ht_lock > timer lock"; its waits release it). */
void ust_sd_hold_fork_prepare(void)
{
    ust_lock(&ht_lock);
}

void ust_sd_hold_fork_parent(void)
{
    ust_unlock(&ht_lock);
}

/* Every armed hold timer is the parent's (its timeout was dropped by the
 * core's child hook, and its stream is detached): the table starts empty. */
void ust_sd_hold_fork_child(void)
{
    for (int b = 0; b < HT_NBUCKET; b++) {
        for (struct hold_timer *t = ht_tab[b], *n; t != NULL; t = n) {
            n = t->next;
            free(t);
        }
        ht_tab[b] = NULL;
    }
    ust_cond_init(&ht_cv);
    ust_unlock(&ht_lock);
}
