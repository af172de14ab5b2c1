/* SPDX-License-Identifier: MIT */
/*
 * xring.c -- channels between processes: two message rings in one shared
 * memfd mapping (interface: xring.h, layout: xring_layout.h).
 *
 * Files: this one holds the lock words (xr_lock), puts and arms;
 * xring_take.c takes (peek, take, take_batch and their _try forms);
 * xring_map.c makes, attaches and destroys channels, and rings, shuts and
 * cancels; xring_priv.h is the handle and the helpers the three share.
 *
 * Principles of operation
 *
 *   Publication.  A producer, holding the ring's producer lock, reads head
 *   (acquire: the consumer has finished copying out what it freed) -- or
 *   goes by the head it read at its own last put, while nobody else has put
 *   since and that shows room: head only moves on, so the room it shows is
 *   never more than there is, and the consumer's line is left alone --
 *   writes the record at tail, then stores the new tail (seq_cst, which includes
 *   release; see "Arming").  xring_put_begin does the first half (lock,
 *   room, header) and hands the caller the record's body in place, one or
 *   two pieces; the caller copies into them (from memory that may fault:
 *   nothing is published until xring_put_end, which stores tail -- or, to
 *   abandon the record, does not -- and unlocks).  A consumer, holding the consumer lock, reads
 *   tail with acquire (the record's bytes are visible), copies the record
 *   out, then stores the new head (seq_cst).  So an uncontended put or take
 *   is one compare-and-swap for the lock, the copies, one store of tail or
 *   head, one load of the arming word and one exchange to unlock: no system
 *   call.  xring_take_batch takes many records at one hold of the consumer
 *   lock: tail is read once, each record is checked and copied out in turn,
 *   head is stored once at the end (the Dekker store for all of them), and
 *   the writers' arming is looked at once, with the queue as the batch left
 *   it.  Storing head once instead of after each record only delays the
 *   freed room: a writer that sees the old head finds less room, arms, and
 *   the batch's head store (seq_cst, then the load of x_wr_armed) is on the
 *   other side of the same Dekker pair as a single take's.
 *
 *   Locks.  A lock word is 0 or the holder's pid, plus XRING_LOCK_WAITERS
 *   when someone may sleep on it (FUTEX_WAIT, shared: the two processes map
 *   the same file, so the futex key is the file page).  Unlocking exchanges
 *   0 in and FUTEX_WAKEs only if the waiters bit was set.  A waiter spins a
 *   little, then sleeps in slices; the word is a hint, never a reason to
 *   wait for ever (the bounds below, "Bounds on waiting for the peer"): a
 *   holder that died in the middle of a put or take leaves the ring in an
 *   unknown state, and one that holds too long may be a peer that wrote a
 *   live pid (1, ours) into the word; either way the ring is marked broken
 *   and every waiter returns -EIO.  A non-blocking caller (the _try forms)
 *   never sleeps: -EBUSY.  A closing side cancels its waiters
 *   (xring_cancel: -ECANCELED).  Pids are compared
 *   as this process sees them: the processes sharing a channel must be in
 *   one pid namespace.  These are not the executive's ust_lock_t: a
 *   process-shared robust pthread mutex would keep glibc's own state (and
 *   the kernel's robust list) in memory the peer may scribble on; a word we
 *   check ourselves cannot hurt us.
 *
 *   Arming, without lost wake-ups.  The two sides of each edge follow the
 *   Dekker (store-buffering) pattern, every access sequentially consistent:
 *     producer: store tail (seq_cst); load x_rd_armed (seq_cst)
 *     reader:   add to x_rd_armed (seq_cst); load tail (seq_cst)
 *   so at least one of them sees the other's store: either the reader sees
 *   the record and does not sleep, or the producer sees the arming and
 *   reports XRING_WAKE_READER.  Likewise take (store head; load x_wr_armed)
 *   against xring_arm_writer (add to x_wr_armed; load head and tail).
 *   seq_cst accesses rather than relaxed ones and fences: the same cost on
 *   x86 (the store is an xchg instead of a mov and an mfence), and
 *   ThreadSanitizer models them, where it does not model fences.  The
 *   report is made by whoever clears the armed count (a compare-and-swap),
 *   so once per arming however many producers race; an arm that finds it
 *   need not sleep takes its own count back (a put racing with that may
 *   still report: a spurious ring, never a lost one).  Only the edges cost
 *   anything more: a put whose reader is not armed reads one word on its
 *   own cache line.
 *
 *   Trust.  The handle keeps its own geometry (size, mask, marks); the
 *   mapping's header is read only at attach.  head and tail are read once
 *   into locals and checked (multiples of 8, tail - head <= size); a record
 *   header is copied out before it is checked (lengths within XRING_MSG_MAX,
 *   r_len exactly the record's size, within what is queued).  Every copy is
 *   masked into the data area and at most the ring's size long.  Any
 *   inconsistency marks the ring broken: a flag in the handle (never
 *   cleared) and one in the mapping (so the peer stops too); every call on a
 *   broken ring returns -EIO.  A hostile peer can thus stop the channel, or
 *   feed it garbage bytes in well-formed records, but not make this process
 *   read or write outside the mapping, loop, or wait for a dead process.
 *   The file is sealed against shrinking and growing (F_SEAL_SHRINK,
 *   F_SEAL_GROW), and attach refuses an unsealed one, so the mapping cannot
 *   be cut under us (SIGBUS).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "forksafe.h"
#include "xring.h"
#include "xring_layout.h"
#include "xring_priv.h"

/*
 * Bounds on waiting for the peer (xring.h "Trust"; docs/SECURITY.md lists
 * them).  A lock word, like every word of the mapping, is a hint: a wait on
 * it ends, and the ring is then broken (-EIO), when
 *   - the word holds no possible pid (above XR_PID_MAX): at once;
 *   - one hold (the word unchanged) lasts hold_ms (500), or the wait as a
 *     whole wait_ms (1000), whoever the holder is (a live pid written by the
 *     peer, a zombie, a stopped process);
 *   - after dead_ms (50), the holder's pid is gone (kill -> ESRCH) or the
 *     peer's descriptor (xring_set_peer: the bell) shows hang-up -- every
 *     process of the other side has exited, zombies included.
 * A legitimate holder holds a lock for a copy of at most XRING_MSG_MAX bytes.
 * Defaults below (xr_bounds); the slice is how often a waiter looks.
 */
#define XR_SPINS    100 /* compare-and-swap rounds before sleeping on a lock */
#define XR_PID_MAX  4194304u /* PID_MAX_LIMIT: no pid is above it */
#define XR_CAS_TRIES 64 /* compare-and-swap rounds on an arming word, at most */

/* The time bounds (ms), changed only by tests (xring_test_bounds). */
static struct xring_bounds xr_bounds = {
    .slice_ms = 10, /* a lock waiter's sleep slice */
    .dead_ms = 50,  /* wait this long before asking whether the holder lives */
    .hold_ms = 500, /* one hold longer than this: the ring is broken */
    .wait_ms = 1000, /* a wait longer than this: the ring is broken */
};

/* Rounds of the loops over shared words, this thread's (xring_test_steps). */
static __thread unsigned long xr_steps;
#define XR_STEP() (xr_steps++)

void xring_test_bounds(const struct xring_bounds *b)
{
    static const struct xring_bounds defaults = {10, 50, 500, 1000};
    xr_bounds = b != NULL ? *b : defaults;
    if (xr_bounds.slice_ms < 1)
        xr_bounds.slice_ms = 1;
}

unsigned long xring_test_steps(void)
{
    return xr_steps;
}

/* ------------------------------------------------------------ small helpers */

static long xr_ms_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Mark ring d broken, here and in the mapping, and wake its sleepers so
 * that they see it.  Returns -EIO. */
int xr_break(struct xring_chan *ch, int d)
{
    __atomic_store_n(&ch->broken[d], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ch->ctl[d]->x_broken, 1, __ATOMIC_RELEASE);
    xring_ring(ch, d);
    return -EIO;
}

/*
 * Arming words (x_rd_armed, x_wr_armed): a generation in the high 16 bits,
 * the number of sleepers armed since the last report in the low 16
 * (XR_ARM_COUNT, xring_priv.h).  An
 * arm adds one; the put (take) that reports clears the count and bumps the
 * generation, and wakes every sleeper (the caller's xring_ring).  An arm
 * that finds it need not sleep takes its one back, but only in its own
 * generation: if a report has cleared the count since, there is nothing of
 * its own left to take back (taking another sleeper's would lose that
 * sleeper's wake-up).
 */
static uint32_t xr_arm_next_gen(uint32_t v)
{
    return ((v >> 16) + 1) << 16;
}

/* A report: 1 if there were sleepers armed (now cleared), 0 if none. */
int xr_arm_fire(uint32_t *w)
{
    uint32_t v = __atomic_load_n(w, __ATOMIC_SEQ_CST); /* the Dekker load */
    for (int i = 0; (v & XR_ARM_COUNT) != 0; i++) {
        XR_STEP();
        if (i == XR_CAS_TRIES)
            return 1; /* the word keeps changing (a peer writing it): report, a
                       * spurious wake-up at worst */
        if (__atomic_compare_exchange_n(w, &v, xr_arm_next_gen(v), 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

/* Take back the arming that returned `mine` (the word before our add). */
static void xr_arm_undo(uint32_t *w, uint32_t mine)
{
    uint32_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    /* Bounded: a count left behind costs one spurious report. */
    for (int i = 0; i < XR_CAS_TRIES && (v >> 16) == (mine >> 16) && (v & XR_ARM_COUNT) != 0;
         i++) {
        XR_STEP();
        if (__atomic_compare_exchange_n(w, &v, v - 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return;
    }
}

#define XR_SNAP_TRIES 64

/*
 * xr_snapshot -- the bytes queued in ring d, read without its locks (by the
 *   arms and xring_queued): head, tail, head again, until head held still.
 *   tail - head is then what was queued when tail was read; with head read
 *   only once, takes and puts between the two loads could make the
 *   difference look larger than the ring, a false inconsistency.  The loads
 *   are seq_cst: the arms' Dekker loads.
 *   Returns the bytes queued, -EIO (inconsistent: now broken), or -EAGAIN
 *   (head kept moving: no answer).
 */
static int64_t xr_snapshot(struct xring_chan *ch, int d)
{
    struct xring_ctl *c = ch->ctl[d];

    for (int i = 0; i < XR_SNAP_TRIES; i++) {
        XR_STEP();
        uint32_t head = __atomic_load_n(&c->x_head, __ATOMIC_SEQ_CST);
        uint32_t tail = __atomic_load_n(&c->x_tail, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&c->x_head, __ATOMIC_SEQ_CST) != head)
            continue;
        int64_t q = xr_queued(ch, head, tail);
        return q < 0 ? xr_break(ch, d) : q;
    }
    return -EAGAIN;
}

/* ------------------------------------------------------------------- locks */

/* 1 if the peer side of `side` is gone as its descriptor shows (hang-up
 * or error on the bell, xring_set_peer), 0 if not or unknown. */
static int xr_peer_gone(struct xring_chan *ch, int side)
{
    int fd = __atomic_load_n(&ch->peer_fd[side], __ATOMIC_RELAXED);
    if (fd < 0)
        return 0;
    struct pollfd p = {fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

/*
 * xr_lock -- take lock word w of ring d, for side `side` of this process
 *   (the producer lock of ring d: side d; the consumer lock: side !d).
 *   Context: any thread.  nowait: spin a little, never sleep (-EBUSY when
 *   the word stays held).  Else may sleep (futex) while the word is held,
 *   within the bounds at the top: every round of the loop either spins
 *   (XR_SPINS at most) or sleeps a slice, and the clock bounds the slices.
 *   Returns 0 (held), -EBUSY (nowait, held by someone), -ECANCELED (side's
 *   waits were cancelled: xring_cancel), or -EIO: the ring is broken, or
 *   became so (corrupt word, holder dead or the peer gone, held too long).
 */
int xr_lock_wait(struct xring_chan *ch, int d, uint32_t *w, int side, int nowait, uint32_t me)
{
    uint32_t v = 0, held = 0;
    struct timespec t0 = {0, 0}, th = {0, 0}; /* set at the first sleep (slept) */
    int slept = 0;

    for (unsigned i = 0;; i++) {
        XR_STEP();
        if (xr_is_broken(ch, d))
            return -EIO;
        v = __atomic_load_n(w, __ATOMIC_RELAXED);
        if ((v & XRING_LOCK_PID) == 0) {
            /* Free.  Having slept, keep the waiters bit: others may sleep too. */
            uint32_t nv = me | (slept ? XRING_LOCK_WAITERS : (v & XRING_LOCK_WAITERS));
            if (__atomic_compare_exchange_n(w, &v, nv, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
                return 0;
            if (i < XR_SPINS)
                continue;
            v = __atomic_load_n(w, __ATOMIC_RELAXED);
        } else if ((v & XRING_LOCK_PID) > XR_PID_MAX) {
            return xr_break(ch, d); /* no process: the peer wrote it */
        }
        if (i < XR_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        if (nowait)
            return -EBUSY;
        if (__atomic_load_n(&ch->cancel[side], __ATOMIC_RELAXED))
            return -ECANCELED;
        if ((v & XRING_LOCK_PID) != 0 && !(v & XRING_LOCK_WAITERS) &&
            __atomic_compare_exchange_n(w, &v, v | XRING_LOCK_WAITERS, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            v |= XRING_LOCK_WAITERS;
        if (!slept || v != held) { /* a new hold: its own clock */
            clock_gettime(CLOCK_MONOTONIC, &th);
            held = v;
        }
        if (!slept)
            t0 = th;
        slept = 1;
        struct timespec slice = {xr_bounds.slice_ms / 1000,
                                 (xr_bounds.slice_ms % 1000) * 1000000L};
        xr_futex(w, FUTEX_WAIT, v, &slice);
        long hold_ms = xr_ms_since(&th), wait_ms = xr_ms_since(&t0);
        if (hold_ms >= xr_bounds.hold_ms || wait_ms >= xr_bounds.wait_ms)
            return xr_break(ch, d);
        if (wait_ms >= xr_bounds.dead_ms) {
            pid_t holder = (pid_t)(__atomic_load_n(w, __ATOMIC_RELAXED) & XRING_LOCK_PID);
            if ((holder != 0 && kill(holder, 0) == -1 && errno == ESRCH) ||
                xr_peer_gone(ch, side))
                return xr_break(ch, d);
        }
    }
}

/* ---------------------------------------------------------------- producing */

/* xring_put_begin, or xring_put_begin_try (nowait: never sleeps on the lock). */
static int xr_put_begin(struct xring_chan *ch, int dir, const struct xring_msg *m,
                        struct xring_wr *w, int nowait)
{
    if (!xr_dir_ok(ch, dir) || !m || !w)
        return -EINVAL;
    uint64_t body = (uint64_t)m->ctl_len + m->data_len;
    if (xr_is_broken(ch, dir))
        return -EIO;
    if (body > XRING_MSG_MAX || xring_reclen(body) > ch->size)
        return -EMSGSIZE;
    struct xring_ctl *c = ch->ctl[dir];
    if (__atomic_load_n(&c->x_shut, __ATOMIC_ACQUIRE))
        return -EPIPE;
    uint32_t len = (uint32_t)xring_reclen(body);
    int err = xr_lock(ch, dir, &c->x_plock, dir, nowait);
    if (err != 0)
        return err;
    uint32_t tail = __atomic_load_n(&c->x_tail, __ATOMIC_RELAXED);
    /* The head this process saw at its last put, if nobody has put since
     * (it was loaded with acquire under this lock); the consumer's own when
     * that shows too little room. */
    uint64_t seen = ch->put_seen[dir];
    uint32_t head = (uint32_t)seen;
    int64_t q = (uint32_t)(seen >> 32) == tail ? xr_queued(ch, head, tail) : -1;
    if (q < 0 || q >= ch->hiwat || len > ch->size - (uint32_t)q) {
        head = __atomic_load_n(&c->x_head, __ATOMIC_ACQUIRE);
        q = xr_queued(ch, head, tail);
    }
    if (q < 0) {
        err = xr_break(ch, dir);
        goto fail;
    }
    if (q >= ch->hiwat || len > ch->size - (uint32_t)q) {
        err = -EAGAIN;
        goto fail;
    }
    struct xring_rec r = {
        .r_len = len,
        .r_type = m->type,
        .r_band = m->band,
        .r_flags = m->flags,
        .r_ctl_len = m->ctl_len,
        .r_data_len = m->data_len,
        .r_aux = m->aux,
        .r_zero = 0,
    };
    xr_copy_in(ch, dir, tail, &r, sizeof(r));
    uint32_t off = (tail + (uint32_t)sizeof(r)) & ch->mask;
    size_t first = body < (uint64_t)(ch->size - off) ? (size_t)body : (size_t)(ch->size - off);
    w->seg[0].iov_base = ch->data[dir] + off;
    w->seg[0].iov_len = first;
    w->seg[1].iov_base = ch->data[dir];
    w->seg[1].iov_len = (size_t)body - first;
    w->dir = dir;
    w->tail = tail + len;
    w->head = head;
    return 0;
fail:
    xr_unlock(&c->x_plock);
    return err;
}

int xring_put_begin(struct xring_chan *ch, int dir, const struct xring_msg *m, struct xring_wr *w)
{
    return xr_put_begin(ch, dir, m, w, 0);
}

int xring_put_begin_try(struct xring_chan *ch, int dir, const struct xring_msg *m,
                        struct xring_wr *w)
{
    return xr_put_begin(ch, dir, m, w, 1);
}

int xring_put_end(struct xring_chan *ch, struct xring_wr *w, int commit)
{
    struct xring_ctl *c = ch->ctl[w->dir];

    if (commit) {
        __atomic_store_n(&c->x_tail, w->tail, __ATOMIC_SEQ_CST); /* the Dekker store */
        ch->put_seen[w->dir] = (uint64_t)w->tail << 32 | w->head;
    }
    xr_unlock(&c->x_plock);
    if (!commit)
        return 0;
    /* Dekker with xring_arm_reader: tail is stored, now look at the arming. */
    return xr_arm_fire(&c->x_rd_armed) ? XRING_WAKE_READER : 0;
}

static int xr_put(struct xring_chan *ch, int dir, const struct xring_msg *m, const struct iovec *iov,
                  int iovcnt, int nowait)
{
    size_t total = 0;
    struct xring_wr w;

    if (!xr_dir_ok(ch, dir) || !m || iovcnt < 0 || (iovcnt > 0 && !iov))
        return -EINVAL;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > SIZE_MAX - total || (iov[i].iov_len > 0 && !iov[i].iov_base))
            return -EINVAL;
        total += iov[i].iov_len;
    }
    if (total != (uint64_t)m->ctl_len + m->data_len)
        return -EINVAL;
    int err = xr_put_begin(ch, dir, m, &w, nowait);
    if (err != 0)
        return err;
    /* The body into the record's one or two pieces. */
    int s = 0;
    size_t at = 0;
    for (int i = 0; i < iovcnt; i++) {
        const unsigned char *src = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left > 0) {
            size_t k = w.seg[s].iov_len - at < left ? w.seg[s].iov_len - at : left;
            memcpy((unsigned char *)w.seg[s].iov_base + at, src, k);
            src += k;
            left -= k;
            at += k;
            if (at == w.seg[s].iov_len && s == 0) {
                s = 1;
                at = 0;
            }
        }
    }
    return xring_put_end(ch, &w, 1);
}

int xring_put(struct xring_chan *ch, int dir, const struct xring_msg *m, const struct iovec *iov,
              int iovcnt)
{
    return xr_put(ch, dir, m, iov, iovcnt, 0);
}

int xring_put_try(struct xring_chan *ch, int dir, const struct xring_msg *m,
                  const struct iovec *iov, int iovcnt)
{
    return xr_put(ch, dir, m, iov, iovcnt, 1);
}

/* ------------------------------------------------------------------ arming */

/*
 * xr_arm -- arm word w of ring d (x_rd_armed or x_wr_armed), then read
 *   head and tail: the second half of the Dekker pairs described at the
 *   top.  `wake` says, from the bytes queued, whether the caller need not
 *   sleep; then the arming is taken back.  A shut ring never makes anyone
 *   sleep (xring_shut rings once, and a later sleeper would miss it).
 *   Returns 1 (need not sleep), 0 (armed: may sleep), -EIO.
 */
static int xr_arm(struct xring_chan *ch, int d, uint32_t *w, int (*wake)(const struct xring_chan *,
                                                                          uint32_t))
{
    struct xring_ctl *c = ch->ctl[d];

    if (xr_is_broken(ch, d))
        return -EIO;
    uint32_t mine = __atomic_fetch_add(w, 1, __ATOMIC_SEQ_CST);
    int64_t q = xr_snapshot(ch, d);
    if (q == -EIO)
        return -EIO;
    /* No answer (head kept moving) means activity: do not sleep, try again. */
    if (q < 0 || wake(ch, (uint32_t)q) || __atomic_load_n(&c->x_shut, __ATOMIC_ACQUIRE)) {
        xr_arm_undo(w, mine);
        return 1;
    }
    return 0;
}

static int xr_reader_need_not_sleep(const struct xring_chan *ch, uint32_t q)
{
    (void)ch;
    return q > 0;
}

static int xr_writer_need_not_sleep(const struct xring_chan *ch, uint32_t q)
{
    return q < ch->hiwat;
}

int xring_arm_reader(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return -EINVAL;
    return xr_arm(ch, dir, &ch->ctl[dir]->x_rd_armed, xr_reader_need_not_sleep);
}

int xring_arm_writer(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return -EINVAL;
    return xr_arm(ch, dir, &ch->ctl[dir]->x_wr_armed, xr_writer_need_not_sleep);
}

/* ------------------------------------------------------- doorbells, state */

uint32_t xring_queued(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir) || xr_is_broken(ch, dir))
        return 0;
    int64_t q = xr_snapshot(ch, dir);
    return q < 0 ? 0 : (uint32_t)q;
}

int xring_broken(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return 0;
    return xr_is_broken(ch, dir);
}
