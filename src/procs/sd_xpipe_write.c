/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe_write.c -- the write side of a pipe end split across processes
 * (sd_xpipe.c has the picture): messages become records of the ring
 * (ust_xpipe_wput, ust_xpipe_wsrv), the head's writes go straight into the
 * ring or wait for room (ust_xpipe_write, ust_xpipe_send, ust_xpipe_room),
 * and the bell protocol for "room for you" with its counted safety net
 * (wsrv_again).
 *
 * Locking: none of its own.  The write service procedure runs one at a time
 * per end (the scheduler's rule); it alone uses wsuspect.  backlog, hwant,
 * wsleep, wtid, win and wclosing are atomic (sd_xpipe.h has the legend).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <ustreams.h>

#include "sd_xcross.h"
#include "sd_xpipe.h"
/* ------------------------------------------------------------------------ */
/* Write side                                                               */
/* ------------------------------------------------------------------------ */

/* Write mp as one record of ring xe->side: 0 (mp freed), -EAGAIN (kept:
 * full, or with nowait the ring's lock is held), or another -errno (the
 * caller frees mp).  nowait: never sleep on the ring's lock (the writer's
 * own thread, which may be non-blocking); else the wait is bounded
 * (xring.h: a lock held beyond the bounds breaks the ring, -EIO). */
static int record_put(struct ust_xend *xe, mblk_t *mp, int nowait)
{
    struct iovec iov[XP_IOV];
    struct xring_msg m = {.type = mp->b_datap->db_type, .band = mp->b_band};
    int n = 0;
    mblk_t *b = mp;

    for (; b != NULL && b->b_datap->db_type != M_DATA; b = b->b_cont) {
        if (n == XP_IOV)
            return -EMSGSIZE;
        iov[n].iov_base = b->b_rptr;
        iov[n++].iov_len = (size_t)(b->b_wptr - b->b_rptr);
        m.ctl_len += (size_t)(b->b_wptr - b->b_rptr);
    }
    if (b != NULL)
        m.flags |= XF_DATA;
    for (; b != NULL; b = b->b_cont) {
        if (n == XP_IOV)
            return -EMSGSIZE;
        iov[n].iov_base = b->b_rptr;
        iov[n++].iov_len = (size_t)(b->b_wptr - b->b_rptr);
        m.data_len += (size_t)(b->b_wptr - b->b_rptr);
    }
    /* Other types go with what the far side needs to judge them
     * (sd_xcross.c: a signal's credential, a flush's MSGNOLOOP); data
     * pays one test. */
    int r = m.type != M_DATA ? ust_xcross_put(xe, mp, &m, iov, n, nowait)
            : nowait         ? xring_put_try(xe->xc->ch, xe->side, &m, iov, n)
                             : xring_put(xe->xc->ch, xe->side, &m, iov, n);
    if (r == -EBUSY)
        return -EAGAIN; /* the lock is held: wsrv puts it, waiting as long as allowed */
    if (r < 0)
        return r;
    if (r & XRING_WAKE_READER)
        xp_bell_ring(xe);
    freemsg(mp);
    return 0;
}

/* Write mp, pulling it up first if it has too many blocks. */
static int record_put_any(struct ust_xend *xe, mblk_t *mp, int nowait)
{
    int r = record_put(xe, mp, nowait);
    if (r == -EMSGSIZE) {
        mblk_t *flat = msgpullup(mp, -1);
        if (flat == NULL)
            return -EAGAIN; /* memory: the write service procedure retries */
        r = record_put(xe, flat, nowait);
        if (r == 0)
            freemsg(mp);
        else
            freemsg(flat);
    }
    return r;
}

static void ioctl_refuse(queue_t *q, mblk_t *mp)
{
    miocnak(q, mp, 0, EINVAL);
}

/* The data messages waiting on the write queue q (FLUSHW) freed, and
 * uncounted from backlog (flushq would leave the count up: the writers
 * waiting for it to drain, ust_xpipe_sent, and the close would wait for
 * messages that are gone).  Other types stay, in their order.  A message
 * the write service procedure holds meanwhile is its own to count. */
static void backlog_flush(queue_t *q, struct ust_xend *xe)
{
    mblk_t *mp, *keep = NULL;
    while ((mp = getq(q)) != NULL) {
        unsigned char t = mp->b_datap->db_type;
        if (t == M_DATA || t == M_PROTO || t == M_PCPROTO || t == M_DELAY) {
            freemsg(mp);
            atomic_fetch_sub(&xe->backlog, 1);
        } else {
            mp->b_next = keep; /* most recent first: put back in reverse */
            keep = mp;
        }
    }
    while ((mp = keep) != NULL) {
        keep = mp->b_next;
        mp->b_next = NULL;
        putbq(q, mp);
    }
    if (atomic_exchange(&xe->hdrain, 0))
        qenable(xe->hwq); /* its waiters look again */
}

/*
 * ust_xpipe_wput -- the pipe pair's write put procedure (split ends only).
 *   Context: the writer's thread; D_MP, several at once.
 *   A message goes straight into the ring when nothing of this end waits
 *   before it; otherwise (or when the ring is full) it is queued, in order,
 *   for ust_xpipe_wsrv.
 */
int ust_xpipe_wput(queue_t *q, mblk_t *mp)
{
    struct ust_xend *xe = xp_xend_of(q);

    if (xe == NULL) { /* not split: pass (procedures are off then) */
        putnext(q, mp);
        return 0;
    }
    switch (mp->b_datap->db_type) {
    case M_IOCTL:
        ioctl_refuse(q, mp);
        return 0;
    case M_FLUSH:
        if (*mp->b_rptr & FLUSHW)
            backlog_flush(q, xe);
        break;
    default:
        break;
    }
    if (atomic_load(&xe->gone)) {
        freemsg(mp); /* the head has M_HANGUP coming: writes fail there */
        atomic_fetch_add(&xe->drops, 1);
        return 0;
    }
    if (atomic_load(&xe->backlog) == 0) {
        /* The writer's thread: never sleeps on the ring's lock (a peer may
         * hold it); a held lock queues the message for wsrv like a full ring. */
        int r = record_put_any(xe, mp, 1);
        if (r == 0)
            return 0;
        if (r != -EAGAIN) { /* the ring is broken or shut */
            freemsg(mp);
            atomic_fetch_add(&xe->drops, 1);
            atomic_store(&xe->gone, 1);
            qenable(xe->rq);
            return 0;
        }
    }
    atomic_fetch_add(&xe->backlog, 1);
    putq(q, mp);
    return 0;
}

int ust_xpipe_write(struct stdata *sd, struct ust_sd_uio *u, size_t n)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    struct xring_wr w;

    /* Any write of one message (at most the packet size, the caller's
     * test) whose record fits the ring: the caller's bytes are copied once,
     * into the ring (docs/STREAMHEAD.md "One copy per side between
     * processes").  Up to XP_DIRECT_MAX bytes; larger ones go the message
     * way, which waits for room as a record while nothing holds the
     * ring's producer lock. */
    if (xe == NULL || n == 0)
        return 0;
    /* The peer side gone (its M_HANGUP may not be up yet): EPIPE, as the
     * head answers a hung-up pipe, rather than a write reported done and
     * never read. */
    if (atomic_load(&xe->gone))
        return -EPIPE;
    if (n > XP_DIRECT_MAX || atomic_load(&xe->backlog) != 0) {
        /* The message path: a ring the peer broke or shut fails the write
         * here, whatever its size, rather than have wput drop it after the
         * head reported it written.  (Below, the put itself tells.) */
        if (xring_broken(xe->xc->ch, xe->side)) {
            if (!atomic_exchange(&xe->gone, 1))
                qenable(xe->rq); /* this end hangs up */
            return -EIO;
        }
        return xring_is_shut(xe->xc->ch, xe->side) ? -EPIPE : 0;
    }
    /* The path: the pipe pair right below the head, procedures on. */
    unsigned long gen = ust_plumb_gen_now();
    queue_t *wq = WR(xe->rq);
    if (ust_qnext(sd->sd_wq) != wq || (ust_qflags(wq) & QPROCSOFF))
        return 0;
    struct xring_msg m = {.type = M_DATA, .flags = XF_DATA, .data_len = (uint32_t)n};
    /* Non-blocking: never sleep on the ring's lock (EAGAIN when it is held);
     * blocking: as long as xring.h's bounds allow, then EIO (broken). */
    int nb = (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) != 0;
    int b = nb ? xring_put_begin_try(xe->xc->ch, xe->side, &m, &w)
               : xring_put_begin(xe->xc->ch, xe->side, &m, &w);
    if (b == -EBUSY)
        return -EAGAIN;
    if (b == -EIO || b == -EPIPE) {
        /* Broken or shut just now: this end hangs up (the read service
         * procedure sends M_HANGUP once what is queued for us went up). */
        atomic_store(&xe->gone, 1);
        qenable(xe->rq);
        return b;
    }
    if (b != 0)
        return 0; /* full, shut, cancelled: the normal path queues it, or finds out */
    int err = ust_plumb_gen_now() != gen ? EAGAIN : 0; /* plumbed meanwhile */
    if (err == 0)
        err = ust_sd_uio_copy(u, w.seg[0].iov_base, w.seg[0].iov_len);
    if (err == 0)
        err = ust_sd_uio_copy(u, w.seg[1].iov_base, w.seg[1].iov_len);
    int r = xring_put_end(xe->xc->ch, &w, err == 0);
    if (err != 0)
        return err == EAGAIN ? 0 : -err;
    if (r & XRING_WAKE_READER)
        xp_bell_ring(xe);
    return 1;
}

/* The head's writers wait for room: the write service procedure arms the
 * ring for them (ust_xpipe_wsrv), once per wait (the first asker enables
 * it; it clears hwant when it finds room, then enables the head). */
static void head_wants_room(struct ust_xend *xe)
{
    if (!atomic_exchange(&xe->hwant, 1))
        qenable(WR(xe->rq));
}

/* The split end right below sd's head, procedures on; NULL if a module is
 * pushed (or the end is not split). */
static struct ust_xend *xend_below(struct stdata *sd)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (xe == NULL)
        return NULL;
    queue_t *wq = WR(xe->rq);
    if (ust_qnext(sd->sd_wq) != wq || (ust_qflags(wq) & QPROCSOFF))
        return NULL;
    return xe;
}

/* The drop count when this thread's last message went down through a
 * module (ust_xpipe_send returned 0): ust_xpipe_sent compares. */
static __thread long sent_mark;

int ust_xpipe_send(struct stdata *sd, mblk_t *mp, int nonblock)
{
    struct ust_xend *xe = xend_below(sd);
    if (xe == NULL) {
        struct ust_xend *xs = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
        if (xs != NULL) /* a module is pushed: the caller sends, then waits */
            sent_mark = atomic_load(&xs->drops);
        return 0;
    }
    if (atomic_load(&xe->gone))
        return -EPIPE;
    /* Only when nothing of this end waits before it (an M_FLUSH, an ioctl's
     * refusal...): the order of the end's messages is the ring's. */
    if (atomic_load(&xe->backlog) == 0) {
        int r = record_put_any(xe, mp, nonblock);
        if (r == 0)
            return 1;
        if (r != -EAGAIN) { /* broken (EIO) or shut (EPIPE): the end hangs up */
            if (!atomic_exchange(&xe->gone, 1))
                qenable(xe->rq);
            return r == -EPIPE ? -EPIPE : -EIO;
        }
    }
    head_wants_room(xe);
    return -EAGAIN;
}

/* Nothing of end xe waits in this process: 1 if this thread's message
 * reached the ring, else -EPIPE (-EIO: the ring broke). */
static int sent_fate(struct ust_xend *xe)
{
    if (!atomic_load(&xe->gone) || atomic_load(&xe->drops) == sent_mark)
        return 1;
    return xring_broken(xe->xc->ch, xe->side) ? -EIO : -EPIPE;
}

int ust_xpipe_sent(struct stdata *sd)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (xe == NULL)
        return 1;
    /* Gone: the write service procedure drops what still waits, so a
     * backlog of 0 proves only that nothing waits.  What was dropped is
     * counted: no drop since this thread's message went down means it
     * reached the ring before the other side went (as a pipe(2) write that
     * was in the kernel when the reader closed); a drop (its own, or a
     * racing writer's, whichever) fails the write. */
    if (atomic_load(&xe->backlog) == 0)
        return sent_fate(xe);
    /* Dekker with ust_xpipe_wsrv: we store hdrain then load backlog, it
     * lowers backlog then exchanges hdrain (all seq_cst): either we see
     * 0, or it sees us and enables the head's write queue. */
    atomic_store(&xe->hdrain, 1);
    return atomic_load(&xe->backlog) == 0 ? sent_fate(xe) : 0;
}

int ust_xpipe_room(struct stdata *sd)
{
    struct ust_xend *xe = xend_below(sd);
    if (xe == NULL || atomic_load(&xe->gone))
        return 1; /* a write then fails at once: "writable" */
    uint32_t hiwat;
    xring_marks(xe->xc->ch, &hiwat, NULL);
    if (atomic_load(&xe->backlog) == 0 && xring_queued(xe->xc->ch, xe->side) < hiwat)
        return 1;
    head_wants_room(xe);
    return 0;
}

/*
 * The bell protocol (docs/STREAMHEAD.md "The bell"), for "room for you":
 *   writer (wsrv)  1. backlog > 0 (wput counted the message before queueing
 *                     it), the message back on the queue (putbq);
 *                  2. xring_arm_writer: add to x_wr_armed (seq_cst), then
 *                     read head and tail (seq_cst): room below hiwat -> put
 *                     again, else leave, wsleep set;
 *   reader (take)  3. store head (seq_cst), then read x_wr_armed (seq_cst):
 *                     armed and the ring at or below lowat -> clear the
 *                     count (a CAS: one report per arming) and ring the bell;
 *   bell           4. the byte reaches every process holding our pipe end
 *                     (sd_xbell.c "Doorbells": on the wake pair, which no
 *                     waiter reads, so every holder's epoll thread sees
 *                     it); in each, the epoll thread enables the read side,
 *                     whose service procedure takes from the ring (live)
 *                     and, if this process's writers wait (backlog > 0 or
 *                     hwant), enables their write queue: step 5;
 *                  5. backlog > 0 -> qenable(the write queue): step 2 again.
 *   Steps 2 and 3 are the two halves of a Dekker pair: either the writer
 *   sees the room, or the reader sees the arming.  The byte was what could
 *   be lost: before issue 21 every end of the process that split the pipe
 *   consumed its bell's bytes, so a parent that still held the child's end
 *   ate the child's writer's "room" byte (test_xpipe_fork P.4, ~1 in 100);
 *   then an end consumed them only when it had a use, yet two processes
 *   that both had one (a reader of an end in one and a writer of it in the
 *   other, two writing processes) still raced for one byte: an
 *   edge-triggered event is reported only if the byte is still unread when
 *   the epoll thread collects it.  Now nobody consumes a doorbell (the wake
 *   pair), so none is lost between holders.  Writers waiting are messages
 *   on the write queue (backlog) or the head's writers that met the ring
 *   full (hwant): xp_writers_wait.  The safety net below stays, counted
 *   (ust_pipe_bell_rescued, strinfo -P): a hostile holder can still read
 *   the pair, and channels made for another process ring on the bell.
 */

/*
 * wsrv_again -- the write side's safety net, every WSRV_RECHECK ticks while
 *   the write service procedure sleeps armed (wsleep).  A doorbell is due
 *   when the ring is at or below its low-water mark (the reader that took
 *   it there saw our arming, step 3); if two looks in a row find it due and
 *   not come (wsleep still set, neither of our queues enabled, nothing
 *   unread on our bell), it was lost: counted, and the write queue
 *   enabled.  A byte unread on our bell is a doorbell that came and that
 *   our epoll thread has not read yet (a busy machine): late, not lost --
 *   unless it stays unread WSRV_LATE_MAX looks (then counted as lost, and
 *   enabled).  Otherwise (no room yet: a slow reader) it looks again later.
 *   Context: the timer thread.
 */
#define WSRV_RECHECK 2  /* ticks (HZ 100): 20 ms */
#define WSRV_LATE_MAX 50 /* looks (1 s) a doorbell may wait unread on our bell */
static void wsrv_again(void *arg);

/* Start a look (wsrv_again) unless one is pending: only one id is ever
 * stored in wtid (the close cancels that one). */
static void wlook_start(queue_t *q, struct ust_xend *xe)
{
    if (atomic_load(&xe->wtid) != 0 || atomic_load(&xe->wclosing))
        return;
    timeout_id_t id = qtimeout(q, wsrv_again, q, WSRV_RECHECK), none = 0;
    if (id != 0 && !atomic_compare_exchange_strong(&xe->wtid, &none, id))
        quntimeout(q, id);
}

/* Bytes unread on our end of the wake pair (-1 if unknown). */
static int wake_count(struct ust_xend *xe)
{
    int n = 0;
    return ioctl(xe->xc->wake[xe->side], FIONREAD, &n) == 0 ? n : -1;
}

/* Arm the ring for our writers (bell protocol step 2), noting the wake
 * pair's count first (wsrv_again: a change is a doorbell that came). */
static int arm_writer(struct ust_xend *xe)
{
    if (xp_has_wake(xe))
        atomic_store(&xe->warmn, wake_count(xe));
    return xring_arm_writer(xe->xc->ch, xe->side);
}

static void wsrv_again(void *arg)
{
    queue_t *q = arg;
    struct ust_xend *xe = xp_xend_of(q);
    if (xe == NULL)
        return; /* closed meanwhile */
    atomic_fetch_add(&xe->win, 1); /* seq_cst: against the close's wclosing, wait */
    atomic_store(&xe->wtid, 0);
    if (atomic_load(&xe->wclosing) || !atomic_load(&xe->wsleep) || atomic_load(&xe->gone)) {
        xe->wsuspect = 0; /* it ran since: it starts a new look if it sleeps again */
        atomic_fetch_sub(&xe->win, 1);
        return;
    }
    uint32_t lowat;
    xring_marks(xe->xc->ch, NULL, &lowat);
    int due = xring_queued(xe->xc->ch, xe->side) <= lowat &&
              !(ust_qflags(q) & QENAB) && !(ust_qflags(xe->rq) & QENAB);
    /* A doorbell that came and that our epoll thread has not acted on yet
     * (a busy machine) is late, not lost, unless that lasts WSRV_LATE_MAX
     * looks: bytes unread on our bell, or, with a wake pair (never read by
     * a waiter), a count there other than at our arming. */
    int waiting = 0;
    if (due && xp_has_wake(xe)) {
        waiting = wake_count(xe) != atomic_load(&xe->warmn);
    } else if (due && ioctl(xe->bell.fd, FIONREAD, &waiting) != 0) {
        waiting = 0;
    }
    if (due && xe->wsuspect >= (waiting > 0 ? WSRV_LATE_MAX : 1)) {
        xe->wsuspect = 0;
        ust_pipe_bell_rescue_count();
        if (getenv("USTREAMS_VERBOSE"))
            fprintf(stderr, "ustreams: pid %d: split pipe side %d: doorbell %s, writer rescued\n",
                    (int)getpid(), xe->side, waiting > 0 ? "unread for 1 s" : "lost");
        qenable(q);
    } else {
        xe->wsuspect = due ? xe->wsuspect + 1 : 0;
        wlook_start(q, xe);
    }
    atomic_fetch_sub(&xe->win, 1);
}

/*
 * ust_xpipe_wsrv -- move queued messages into the ring until it is full;
 *   then arm the ring, so that the reader's crossing of the low water mark
 *   rings our bell (and our epoll thread enables us again): the bell
 *   protocol above.  While it sleeps armed, wsrv_again looks every
 *   WSRV_RECHECK ticks for a doorbell that did not come (counted).
 */
int ust_xpipe_wsrv(queue_t *q)
{
    struct ust_xend *xe = xp_xend_of(q);
    mblk_t *mp;

    if (xe == NULL)
        return 0;
    atomic_store(&xe->wsleep, 0);
    while ((mp = getq(q)) != NULL) {
        int r = atomic_load(&xe->gone) ? -EPIPE : record_put_any(xe, mp, 0);
        if (r == -EAGAIN) {
            putbq(q, mp);
            int a = arm_writer(xe);
            if (a == 1)
                continue; /* room came meanwhile */
            if (a < 0) {
                atomic_store(&xe->gone, 1);
                qenable(q); /* gone: what waits is dropped, the head hangs up */
                qenable(xe->rq);
                return 0;
            }
            atomic_store(&xe->wsleep, 1);
            wlook_start(q, xe);
            return 0;
        }
        if (r != 0) {
            freemsg(mp);
            atomic_fetch_add(&xe->drops, 1);
            /* Broken (EIO), shut (EPIPE): the end hangs up, and the writer's
             * next call fails (ust_xpipe_write). */
            if ((r == -EIO || r == -EPIPE) && !atomic_exchange(&xe->gone, 1))
                qenable(xe->rq);
        }
        atomic_fetch_sub(&xe->backlog, 1);
    }
    /* The queue is empty: a head's writer that sent through a module and
     * waits for its message to leave this process's memory (hdrain,
     * ust_xpipe_sent) is woken.  After the backlog was lowered (Dekker). */
    if (atomic_load(&xe->hdrain) && atomic_exchange(&xe->hdrain, 0))
        qenable(xe->hwq);
    /* The head's writers wait for room (hwant): the same arming for them;
     * room -> they are woken (their write queue's enabling, sd_rput.c) and
     * try again. */
    if (atomic_load(&xe->hwant)) {
        int a = atomic_load(&xe->gone) ? -1 : arm_writer(xe);
        if (a == 0) {
            atomic_store(&xe->wsleep, 1);
            wlook_start(q, xe);
            return 0;
        }
        if (a < 0 && !atomic_exchange(&xe->gone, 1))
            qenable(xe->rq);
        atomic_store(&xe->hwant, 0);
        qenable(xe->hwq);
    }
    return 0;
}
