/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe_direct.c -- one copy on the reading side of a pipe end split
 * across processes: read(2) copies plain data records straight out of the
 * ring into the caller's buffers (docs/STREAMHEAD.md "One copy per side
 * between processes").
 *
 * Principles of operation
 *   The ordinary way up is the read service procedure: it takes records
 *   into message blocks (or the head's arrivals) and sends them up, and the
 *   read copies them out again: two copies.  A byte-stream read of at
 *   least XD_MIN_READ bytes (1 KiB: a smaller one would take a record per
 *   hold of the ring's lock, slower than the procedure's batches; see
 *   ust_xpipe_read) of a module-free split end instead takes the plain
 *   band-0 data records at
 *   the front of the ring itself (xring_take_copy), each copied once, from
 *   the mapping into the user's buffer -- but only when nothing is queued
 *   at the head before them (the head's read queue and its arrivals are
 *   empty) and the read service procedure is not running: whatever it took
 *   from the ring goes up before anything behind it can be read here.  The
 *   two exclude each other with the end's claim word (xe->rown): each takes
 *   it with a compare-and-swap and neither waits for it; the service
 *   procedure that finds it held notes `ragain` and leaves, and the reader
 *   that releases it enables the procedure when it did (a Dekker pair:
 *   ragain stored then rown tried again / rown stored then ragain loaded,
 *   all seq_cst, so a run is never lost).  A reader that finds the claim
 *   held sets `dwant`: the service procedure, which would otherwise stream
 *   what comes up for as long as the writer writes, stops before its next
 *   record (and looks again in a tick, in case the reader went away), so
 *   the reader's next look finds the claim free.
 *
 *   The reader's thread never sleeps on the ring's consumer lock here (the
 *   try form: a peer holding it sends the read the ordinary way), and every
 *   length comes from the record header copied once and checked
 *   (xring_take_copy); the bytes are the peer's to scribble on while they
 *   are copied, as a kernel pipe's writer may rewrite its buffer.  A ring
 *   found broken hangs the end up, as the service procedure does.
 *
 * Locking: the caller holds sd_lock (the whole read, sd_read.c); the
 *   claim word as above; the ring's consumer lock inside xring_take_copy.
 */
#include <errno.h>
#include <stddef.h>

#include <ustreams.h>

#include "sd_ucopy.h"
#include "sd_xpipe.h"

enum { XD_MAX_RECS = 64 }; /* records at one hold of the consumer lock, at most */

/* This thread's last direct read found the ring of this head empty: the
 * wait that follows ends when the ring has data instead of running the read
 * service procedure (ust_xpipe_reader ENTER reads and clears it). */
static __thread struct stdata *direct_sd;
/* This thread's last direct read on this head met the claim held: its wait
 * sleeps on the head, which the service procedure wakes when it lets go. */
static __thread struct stdata *blocked_sd;
/* The head's wait sequence when either was noted: a note is for the wait
 * that follows in the same read, and a later one sees the sequence moved
 * (a stale note must not send a getmsg to sleep unarmed). */
static __thread unsigned noted_seq;

int xp_rsrv_claim(struct ust_xend *xe)
{
    int free_ = 0;
    if (atomic_compare_exchange_strong(&xe->rown, &free_, 1))
        return 1;
    atomic_store(&xe->ragain, 1); /* seq_cst: then look at rown again */
    free_ = 0;
    return atomic_compare_exchange_strong(&xe->rown, &free_, 1);
}

void xp_rsrv_unclaim(queue_t *q, struct ust_xend *xe)
{
    atomic_store(&xe->rown, 0); /* seq_cst: then look at dwant */
    if (atomic_load(&xe->dwant) && atomic_exchange(&xe->dwant, 0))
        xp_direct_wake(q, xe, 1); /* a direct reader met our claim: look again */
}

/* The direct reader's claim: tried once, never waited for. */
static int reader_claim(struct ust_xend *xe)
{
    int free_ = 0;
    return atomic_compare_exchange_strong(&xe->rown, &free_, 2);
}

static void reader_unclaim(struct ust_xend *xe)
{
    atomic_store(&xe->rown, 0); /* seq_cst: then look at ragain */
    if (atomic_load(&xe->ragain) && atomic_exchange(&xe->ragain, 0))
        qenable(xe->rq); /* a run of the service procedure met our claim */
}

/* The split end right below sd's head that this process reads, procedures
 * on, peer side not gone; NULL otherwise (a module pushed, not live...). */
static struct ust_xend *xend_direct(struct stdata *sd)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (xe == NULL || !atomic_load_explicit(&xe->live, memory_order_relaxed) ||
        atomic_load_explicit(&xe->gone, memory_order_relaxed))
        return NULL;
    queue_t *wq = WR(xe->rq);
    if (ust_qnext(sd->sd_wq) != wq || (ust_qflags(wq) & QPROCSOFF))
        return NULL;
    return xe;
}

/* The read's cursor over the user's buffers (xring_take_copy's arg). */
struct dcur {
    const struct iovec *iov;
    int iovcnt, idx;
    size_t off;  /* into iov[idx] */
    size_t room; /* bytes the buffers can still take */
    size_t took; /* bytes of the records copied whole */
    size_t pend; /* bytes of the record being copied */
    int fault;
};

/* Plain band-0 data that fits what is left of the buffers (a record larger
 * goes the ordinary way: the read takes part of it, the rest stays at the
 * head).  Called before each record: the one before it was copied whole. */
static int d_accept(const struct xring_msg *m, void *arg)
{
    struct dcur *c = arg;
    c->took += c->pend;
    c->pend = 0;
    if (m->type != M_DATA || m->band != 0 || m->ctl_len != 0 || m->flags != XF_DATA ||
        m->data_len == 0 || m->data_len > c->room)
        return 0;
    c->pend = m->data_len;
    return 1;
}

static int d_copy(void *arg, const void *src, size_t n)
{
    struct dcur *c = arg;
    const unsigned char *s = src;
    while (n > 0) {
        if (c->idx >= c->iovcnt)
            return EFAULT; /* cannot happen: d_accept checked the room */
        size_t seg = c->iov[c->idx].iov_len - c->off;
        if (seg == 0) {
            c->idx++;
            c->off = 0;
            continue;
        }
        size_t k = n < seg ? n : seg;
        if (ust_copyout(s, (unsigned char *)c->iov[c->idx].iov_base + c->off, k) != 0) {
            c->fault = 1;
            return EFAULT;
        }
        c->off += k;
        c->room -= k;
        s += k;
        n -= k;
    }
    return 0;
}

/* This thread's direct reads that took data (ust_xpipe_direct_reads). */
static __thread unsigned long direct_reads;

unsigned long ust_xpipe_direct_reads(void)
{
    return direct_reads;
}

int ust_xpipe_read(struct stdata *sd, const struct iovec *iov, int iovcnt, size_t total)
{
    /* A small read takes one record per hold of the ring's consumer lock and
     * per store of head, with the reader's claim around it: about five
     * locked instructions and the ring's head line handed to the writer's
     * CPU per record.  The read service procedure takes up to a batch of
     * them at one hold into the head's arrivals, where the reads that follow
     * find them in this process's memory: 1.14-1.26x at 1-64 B, 1.12x at
     * 512 B, even at 1 KiB, direct ahead from 2 KiB (bench/README.md
     * "Small reads between processes go the batched way"). */
    if (total < XD_MIN_READ)
        return 0;
    struct ust_xend *xe = xend_direct(sd);
    if (xe == NULL)
        return 0;
    if (!reader_claim(xe)) {
        /* The service procedure runs (the epoll thread's, streaming what
         * comes up): it yields at its next record or its end (dwant) and
         * wakes this head's readers, which come back here.  Meanwhile this
         * read sleeps on its head (the holder may be preempted: no busy
         * loop on data it cannot take).  Dekker with the procedure's
         * release: dwant stored, then the claim tried again. */
        atomic_store(&xe->dwant, 1);
        if (!reader_claim(xe)) {
            blocked_sd = sd;
            noted_seq = ust_sd_wait_seq(&sd->sd_rwait);
            return 0;
        }
    }
    if (atomic_load_explicit(&xe->dwant, memory_order_relaxed))
        atomic_store(&xe->dwant, 0);
    /* Under the claim nothing is on its way up: what the head holds is
     * older than the ring's front, and is read first. */
    int r = 0;
    if (__atomic_load_n(&sd->sd_rq->q_first, __ATOMIC_ACQUIRE) != NULL ||
        __atomic_load_n(&sd->sd_ar.first, __ATOMIC_ACQUIRE) != NULL)
        goto out;
    struct dcur c = {.iov = iov, .iovcnt = iovcnt, .room = total};
    int wake = 0;
    int n = xring_take_copy_try(xe->xc->ch, !xe->side, XD_MAX_RECS, d_accept, d_copy, &c,
                                &wake);
    if (n > 0 && !c.fault)
        c.took += c.pend;
    if (wake)
        xp_bell_ring(xe);
    if (n > 0) {
        r = (int)c.took;
        direct_reads++;
    } else if (n == -EFAULT) {
        r = -EFAULT;
    } else if (n == -EIO) { /* broken: the end hangs up (the service procedure) */
        atomic_store(&xe->gone, 1);
        qenable(xe->rq);
    } else if (n == 0 && xring_queued(xe->xc->ch, !xe->side) == 0) {
        direct_sd = sd; /* empty: the wait ends when data comes (see above) */
        noted_seq = ust_sd_wait_seq(&sd->sd_rwait);
    }
out:
    reader_unclaim(xe);
    return r;
}

/* This thread's wait is a direct reader's (set at ENTER, for SLEEP). */
static __thread int direct_wait;

int xp_direct_enter(struct stdata *sd)
{
    int fresh = ust_sd_wait_seq(&sd->sd_rwait) == noted_seq;
    int blocked = fresh && blocked_sd == sd;
    direct_wait = fresh && !blocked && direct_sd == sd;
    direct_sd = NULL;
    blocked_sd = NULL;
    return blocked ? 2 : direct_wait;
}

int xp_direct_sleeping(void)
{
    return direct_wait;
}

int xp_direct_wake(queue_t *q, struct ust_xend *xe, int always)
{
    if (!always && atomic_load(&xe->dsleep) <= 0)
        return 0;
    queue_t *hq = ust_qnext(q);
    if (hq == NULL || (ust_qflags(hq) & (QHEAD | QREADR)) != (QHEAD | QREADR) || hq->q_ptr == NULL)
        return 0;
    struct stdata *sd = hq->q_ptr;
    ust_sd_wake(&sd->sd_rwait);
    return 1;
}
