/* SPDX-License-Identifier: MIT */
/*
 * sd_arrive.c -- arrivals: how a writer of a module-free pipe puts its data
 * straight at the reading head, and how small writes are coalesced there
 * with their boundaries kept.
 *
 * Principles of operation
 *   The path.  With nothing pushed on either end, a pipe's write side runs
 *   head wq -> pipe wq -> peer pipe rq -> peer head rq, the middle two passed
 *   through (procedures off).  A write that needs nothing of the stream but
 *   to land there (no SNDHOLD, no write offset or block limit, one packet) is
 *   deposited: the writer checks that the head takes deposits (its readable
 *   token shown, no M_READ outstanding, no signal registered), takes the
 *   arrival lock, checks under it that the links still lead there (the
 *   plumbing generation), and adds the data to the arrivals.  No put
 *   procedure runs, no queue lock is taken, and the reader's locks and lines
 *   are not touched: the arrival lock lives on a line of its own which the
 *   reader takes only when its read queue runs dry.  Anything else -- a module
 *   pushed, a pop holding messages, a special option, no room -- takes the
 *   normal path, so pushing a module or setting an option switches paths
 *   without any flag to keep in step: every deposit checks the links again.
 *
 *   Coalescing.  A write of at most AR_COAL_MAX bytes is appended to the last
 *   arrival if that is a coalescing block with space, else starts one
 *   (AR_COAL_BLK bytes).  The block is one M_DATA message tagged UST_TAG_COAL
 *   whose buffer records the length of each write as a 16-bit number, from
 *   the end of the buffer down (below a 32-bit cursor in its last bytes);
 *   db_pad counts them.  The cursor is a hint: the index and start offset
 *   of a write at or before the place the last lookup found, so that
 *   cutting the writes off one by one costs O(1) each, not a scan from the
 *   first write (which made a reader that fell behind slower still: a full
 *   block of 1-byte writes is ~800 of them).  The data is contiguous
 *   from db_base, so a byte-stream read takes many writes in one copy, while
 *   everything that sees messages (read in RMSGN/RMSGD, getmsg, I_PEEK,
 *   I_NREAD) asks ust_sd_msg_writes / ust_sd_msg_first_len, or cuts the
 *   first write off as a message of its own (ust_sd_msg_cut), so boundaries
 *   are never lost.  Zero-length writes, marks and bands are never coalesced
 *   (they never take this path).  Nothing is held back: a deposit is
 *   readable at once.
 *
 *   Order.  Arrivals are newer than every band-0 message on the read queue.
 *   Whoever queues there -- the normal path's put procedure, I_SENDFD, a
 *   flush, a reader that runs dry -- first moves the arrivals onto the queue
 *   (ust_sd_absorb), under the arrival lock, which it holds until they are
 *   all queued: a thread that then finds the list empty (the hint read of
 *   `first`) knows they are on the queue before anything it adds.
 *
 *   Flow control.  A deposit may add `room` bytes in all: the read queue's
 *   high-water mark less its count at the last absorb.  When it is used up
 *   the writer absorbs (the queue's count and QFULL are then exact) and
 *   tries again, else takes the normal path, where canput sees the full
 *   queue, marks it wanted and sleeps until the reader's getq drains it to
 *   low water and back-enables.  As with canput and putq, two writers may
 *   overshoot by a message each.  The deposit that uses the room up absorbs
 *   at once, so the queue's QFULL (what I_CANPUT, poll and the writer's
 *   POLLOUT look at) shows a full pipe as soon as it is full.
 *
 *   Wake-ups on edges only.  A reader that runs dry marks the arrivals
 *   sleepy under their lock before it waits; the next deposit clears the mark
 *   and wakes sd_rwait.  A reader that keeps finding data is never woken, and
 *   a writer feeding it makes no wake at all.  A non-blocking reader
 *   withdraws the readable token under the arrival lock
 *   (ust_sd_arrivals_withdraw), and deposits need the token, so data never
 *   waits behind a withdrawn token.
 *
 *   Through modules.  A message that comes up through pushed modules (or
 *   from a driver) reaches the head's read put procedure, which adds a
 *   plain band-0 M_DATA message to the same arrivals under the same rules
 *   (ust_sd_arrive: the token, no M_READ, no signals, the room; absorbed at
 *   once when the room is used up) instead of putq: no queue lock, and the
 *   reader finds it at its next dry look or is woken on the sleepy edge only.
 *   Anything else (a band, a mark, high priority, control parts, no room) is
 *   queued with putq after the arrivals are absorbed, so it never overtakes
 *   them (docs/STREAMHEAD.md "Through modules without queues").
 *
 *   Copied at the head.  A message of at most AR_COPY_MAX bytes is copied
 *   into the coalescing block at the end of the arrivals (or a new one), as
 *   one more write with its length recorded, and freed by the thread that
 *   brought it; a larger one is linked as it is.  The blocks of a message
 *   built by a writer and passed up through put procedures then go back to
 *   that writer's own cache, lines its CPU still holds, instead of crossing
 *   to the reader's CPU and back (about four lines per message: the stall
 *   of the module path, bench/README.md "Copied at the head").  What a
 *   reader sees is unchanged: one message per write (RMSGN, getmsg, I_PEEK,
 *   I_NREAD and strinfo look at the recorded lengths).  No memory for a new
 *   block: the message is linked as it is.
 *
 *   Lifetime.  A deposit claims no queue (two locked instructions a write,
 *   about 10 % of a small write): it checks the plumbing generation under
 *   the arrival lock it takes anyway.  ust_sd_free turns the head read
 *   queue's procedures off, which moves the generation, before it discards
 *   the arrivals under that lock and frees the queue pair: a deposit either
 *   holds the lock before the discard (what it added, absorbed onto the
 *   queue or not, is freed with the rest) or finds the generation moved and
 *   takes the normal path.  Heads and queue pairs go back to pools, never
 *   to malloc, and a pooled head's locks stay initialized, so the arrival
 *   lock of a stale path is still a lock; a wake-up after the unlock may
 *   reach the head's next life, whose waiters look again.
 *
 *   Blocks handed back.  The block a deposit makes for one write of more
 *   than AR_COAL_MAX bytes comes from the hand-back slots of the reading
 *   head (sd_spare) when its reader has left a unit of that size there:
 *   the read path of a pipe end frees each one-block message it has read
 *   into those slots (sd_readq.h dead_free), up to four units of at most
 *   8 KiB (other streams' reads, and a split end's, do not: nobody here
 *   would take them).  So a
 *   writer and its reader pass two or three blocks round, whose lines stay
 *   in both CPUs' first-level caches, instead of the hundreds the thread
 *   caches cycle (mblk.c "Hand-back"; bench/README.md "The two-copy
 *   ceiling at 4 KiB").  Coalescing blocks are not taken from the slots:
 *   their writes are spread out in time and measured 0.91-0.96x so.  The
 *   slots need no lock: a unit is taken or given whole with one atomic
 *   operation, and a stale path's head (see "Lifetime") only lends a free
 *   unit.  They are emptied with the arrivals (ust_sd_arrivals_discard).
 *
 * Locking
 *   sd_ar.lock guards the arrival list, its counts and the sleepy mark.  Order:
 *   sd_lock > sd_ar.lock > queue locks (absorbing queues with putq).  A
 *   deposit holds no other lock.
 */
#include <errno.h>
#include <string.h>

#include "sthead.h"

#define AR_COAL_MAX 1024 /* writes of at most this many bytes are coalesced */
#define AR_COAL_BLK 4096 /* buffer of a coalescing block */
#define AR_HOPS 4        /* queues passed through on the way to a head */
#define AR_COPY_MAX 256  /* messages from modules of at most this many bytes are copied */

/* ------------------------------------------------------------------------ */
/* Coalesced messages: the write lengths at the end of the buffer           */
/* ------------------------------------------------------------------------ */

#define AR_CURSOR 4 /* bytes of the cursor at the very end of the buffer */

/* bytes and room change under sd_ar.lock and are read without it, as hints,
 * by a dry reader gathering a batch (ust_sd_arrivals_gathered): relaxed
 * atomic stores, plain reads under the lock. */
static void ar_set(size_t *f, size_t v)
{
    __atomic_store_n(f, v, __ATOMIC_RELAXED);
}

static unsigned rec_get(const dblk_t *db, unsigned i)
{
    uint16_t v;
    memcpy(&v, db->db_lim - AR_CURSOR - 2 * ((size_t)i + 1), sizeof(v));
    return v;
}

static void rec_put(dblk_t *db, unsigned i, size_t len)
{
    uint16_t v = (uint16_t)len;
    memcpy(db->db_lim - AR_CURSOR - 2 * ((size_t)i + 1), &v, sizeof(v));
}

/* The cursor: index << 16 | start offset of one write.  Relaxed atomics:
 * readers of blocks that share the buffer (dupb) may look at once; any
 * value one of them stored is a true (index, start) pair. */
static uint32_t *cursor_of(const dblk_t *db)
{
    return (uint32_t *)(void *)(db->db_lim - AR_CURSOR);
}

/* Room for one more write of n bytes in coalescing block mp. */
static int coal_fits(const mblk_t *mp, size_t n)
{
    const dblk_t *db = mp->b_datap;
    if (db->db_pad >= 0xffff)
        return 0;
    size_t recs = 2 * ((size_t)db->db_pad + 1) + AR_CURSOR;
    return (size_t)(db->db_lim - mp->b_wptr) >= n + recs;
}

/* The write holding byte rptr of a coalesced mp: its index, and its end. */
static unsigned coal_find(const mblk_t *mp, unsigned char **endp)
{
    const dblk_t *db = mp->b_datap;
    unsigned char *p = db->db_base;
    unsigned i = 0;
    uint32_t c = __atomic_load_n(cursor_of(db), __ATOMIC_RELAXED);
    if ((c >> 16) < db->db_pad && db->db_base + (c & 0xffff) <= mp->b_rptr) {
        i = c >> 16; /* start at the write the last lookup found */
        p += c & 0xffff;
    }
    for (; i < db->db_pad; i++) {
        unsigned char *start = p;
        p += rec_get(db, i);
        if (p > mp->b_rptr) {
            __atomic_store_n(cursor_of(db), (uint32_t)i << 16 | (uint32_t)(start - db->db_base),
                             __ATOMIC_RELAXED);
            break;
        }
    }
    *endp = p < mp->b_wptr ? p : mp->b_wptr;
    return i;
}

int ust_sd_msg_writes(const mblk_t *mp)
{
    if (mp->b_tag != UST_TAG_COAL)
        return 1;
    const dblk_t *db = mp->b_datap;
    unsigned char *end, *p;
    unsigned i = coal_find(mp, &end);
    int n = 1;
    for (p = end, i++; i < db->db_pad && p < mp->b_wptr; i++, n++)
        p += rec_get(db, i);
    return n;
}

size_t ust_sd_msg_first_len(const mblk_t *mp)
{
    if (mp->b_tag != UST_TAG_COAL)
        return msgdsize(mp);
    unsigned char *end;
    coal_find(mp, &end);
    return (size_t)(end - mp->b_rptr);
}

mblk_t *ust_sd_msg_cut(mblk_t *mp)
{
    unsigned char *end;
    if (mp->b_tag != UST_TAG_COAL)
        return NULL;
    coal_find(mp, &end);
    if (end >= mp->b_wptr) { /* one write left */
        mp->b_tag = 0;
        return NULL;
    }
    mblk_t *rest = dupb(mp);
    if (!rest)
        return NULL;
    rest->b_tag = UST_TAG_COAL;
    rest->b_rptr = end;
    mp->b_wptr = end;
    mp->b_tag = 0;
    return rest;
}

/* ------------------------------------------------------------------------ */
/* Absorbing                                                                */
/* ------------------------------------------------------------------------ */

/* Queue the arrivals on the read queue (oldest first), then recompute the
 * room.  sd_ar.lock held.  Returns 1 if the caller must wake sd_rwait after
 * unlocking: something was queued and either a reader marked the arrivals
 * sleepy (a second reader may sleep while the one that absorbs reads only
 * part), or the caller is not a reader -- a reader spinning in
 * ust_sd_wait_data watches the arrivals, which this empties, and the wait
 * sequence, which only the wake moves.  A reader's own absorb
 * (ust_sd_absorb_some) wakes whenever it queued anything, for the same
 * reason: another reader may be spinning. */
/* Set by a writer's deposit that used the room up and absorbed (the queue
 * may now be full); read and cleared by ust_sd_deposit_filled.  Per thread:
 * it describes this thread's last deposit only. */
static _Thread_local unsigned char tls_filled;

int ust_sd_deposit_filled(void)
{
    int f = tls_filled;
    tls_filled = 0;
    return f;
}

static int absorb_locked(struct stdata *sd, queue_t *q, int by_reader)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    int wake = ar->first && (ar->sleepy || !by_reader);
    if (ar->first)
        ar->sleepy = 0;
    size_t room;
    /* One hold of the queue lock for all.  Its qenable would only wake the
     * readers, which the caller does (or is). */
    (void)ust_putq_list(q, ar->first, &room);
    /* After the messages are queued: see "Order" above. */
    __atomic_store_n(&ar->first, NULL, __ATOMIC_RELEASE);
    ar->last = NULL;
    ar_set(&ar->bytes, 0);
    ar_set(&ar->room, room);
    return wake;
}

void ust_sd_absorb_to(struct stdata *sd, queue_t *rq)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!__atomic_load_n(&ar->first, __ATOMIC_ACQUIRE))
        return;
    ust_lock(&ar->lock);
    int wake = absorb_locked(sd, rq, 0);
    ust_unlock(&ar->lock);
    if (wake)
        ust_sd_wake(&sd->sd_rwait);
}

void ust_sd_absorb(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!__atomic_load_n(&ar->first, __ATOMIC_ACQUIRE))
        return;
    ust_lock(&ar->lock);
    int wake = absorb_locked(sd, sd->sd_rq, 0);
    ust_unlock(&ar->lock);
    if (wake)
        ust_sd_wake(&sd->sd_rwait);
}

int ust_sd_absorb_some(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!__atomic_load_n(&ar->first, __ATOMIC_ACQUIRE))
        return 0;
    ust_lock_backoff(&ar->lock); /* the writer holds it at every deposit */
    int got = ar->first != NULL;
    if (got)
        (void)absorb_locked(sd, sd->sd_rq, 1);
    ust_unlock(&ar->lock);
    /* Always moved on, not only for a sleepy mark: another reader of this
     * head may be spinning before its sleep, watching the arrivals (which
     * this empties) and the wait sequence.  Without the bump it slept with
     * the messages this reader left on the queue until the safety net (the
     * lost wake-ups of test_pipe_stress, two readers per end).  No system
     * call unless someone sleeps. */
    if (got)
        ust_sd_wake(&sd->sd_rwait);
    return got;
}

int ust_sd_arrivals_sleep(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    ust_lock(&ar->lock);
    int empty = ar->first == NULL;
    if (empty)
        ar->sleepy = 1;
    ust_unlock(&ar->lock);
    return empty;
}

int ust_sd_arrivals_withdraw(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    ust_lock(&ar->lock);
    int quiet = ar->first == NULL;
    if (quiet)
        __atomic_store_n(&sd->sd_rtoken, 0, __ATOMIC_RELAXED);
    ust_unlock(&ar->lock);
    return quiet;
}

void ust_sd_arrivals_discard(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    ust_lock(&ar->lock);
    mblk_t *mp = ar->first;
    __atomic_store_n(&ar->first, NULL, __ATOMIC_RELAXED);
    ar->last = NULL;
    ar_set(&ar->bytes, 0);
    ar_set(&ar->room, 0);
    ar->sleepy = 0;
    ust_unlock(&ar->lock);
    while (mp) {
        mblk_t *next = mp->b_next;
        mp->b_next = NULL;
        freemsg(mp);
        mp = next;
    }
    ust_spare_drain(&sd->sd_spare);
}

/* ------------------------------------------------------------------------ */
/* Depositing                                                               */
/* ------------------------------------------------------------------------ */

/* The head read queue the write side wq leads to through queues passed
 * through (procedures off and holding nothing), or NULL. */
static queue_t *head_below(queue_t *wq)
{
    queue_t *q = ust_qnext(wq);
    for (int i = 0; q && i < AR_HOPS; i++) {
        uint_t fl = ust_qflags_sync(q);
        if (!(fl & QPROCSOFF))
            return (fl & (QHEAD | QREADR)) == (QHEAD | QREADR) ? q : NULL;
        if (__atomic_load_n(&ust_qpv(q)->held, __ATOMIC_RELAXED))
            return NULL; /* messages held there must go first */
        q = ust_qnext(q);
    }
    return NULL;
}

/* Does head rsd take deposits now?  Fields that change on edges only: the
 * readable token shown, or owed-able (the lazy mark, sd_tokpay.c). */
static int takes_deposits(const struct stdata *rsd)
{
    return (__atomic_load_n(&rsd->sd_rtoken, __ATOMIC_RELAXED) ||
            __atomic_load_n(&rsd->sd_ar.lazy, __ATOMIC_RELAXED)) &&
           !__atomic_load_n(&rsd->sd_mread_sent, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&rsd->sd_sigflags, __ATOMIC_RELAXED);
}

/* n bytes were just copied at the end of coalescing block last, the newest
 * arrival: record them as one more write.  sd_ar.lock held. */
static void coal_added(struct ust_arrivals *ar, mblk_t *last, size_t n)
{
    rec_put(last->b_datap, last->b_datap->db_pad++, n);
    last->b_wptr += n;
    ar_set(&ar->bytes, ar->bytes + n);
}

/* Append n bytes of u to the last arrival if it is a coalescing block with
 * space.  sd_ar.lock held.  1 done, 0 no space, -EFAULT (nothing added). */
static int append_locked(struct ust_arrivals *ar, struct ust_sd_uio *u, size_t n)
{
    mblk_t *last = ar->last;
    if (n > AR_COAL_MAX || !last || last->b_tag != UST_TAG_COAL || !coal_fits(last, n))
        return 0;
    if (ust_sd_uio_copy(u, last->b_wptr, n) != 0)
        return -EFAULT;
    coal_added(ar, last, n);
    return 1;
}

/* Link mp (n data bytes) at the end of the arrivals of rsd.  sd_ar.lock
 * held.  Starting the list without the token shown starts a debt (the lazy
 * token, sd_tokpay.c): appends to a list that exists add to the same one. */
static void link_locked(struct stdata *rsd, mblk_t *mp, size_t n)
{
    struct ust_arrivals *ar = &rsd->sd_ar;
    if (ar->last) {
        ar->last->b_next = mp;
    } else {
        __atomic_store_n(&ar->first, mp, __ATOMIC_RELAXED);
        if (!__atomic_load_n(&rsd->sd_rtoken, __ATOMIC_RELAXED))
            __atomic_store_n(&ar->owed, 1, __ATOMIC_RELAXED);
    }
    ar->last = mp;
    ar_set(&ar->bytes, ar->bytes + n);
}

/* Make mp, holding one write of n bytes, a coalescing block. */
static void coal_start(mblk_t *mp, size_t n)
{
    mp->b_tag = UST_TAG_COAL;
    mp->b_datap->db_pad = 1;
    __atomic_store_n(cursor_of(mp->b_datap), 0, __ATOMIC_RELAXED);
    rec_put(mp->b_datap, 0, n);
}

/* A new message of n bytes from u: a coalescing block for a small write;
 * for a larger one, a unit from the reading head's slots sp when its reader
 * handed one back (see "Blocks handed back").  NULL with *errp (ENOMEM,
 * EFAULT). */
static mblk_t *build(struct ust_spare *sp, struct ust_sd_uio *u, size_t n, int *errp)
{
    int coal = n <= AR_COAL_MAX;
    mblk_t *mp = coal ? allocb(AR_COAL_BLK, BPRI_MED) : ust_allocb_spare(n, sp);
    if (!mp) {
        *errp = ENOMEM;
        return NULL;
    }
    if (n && ust_sd_uio_copy(u, mp->b_wptr, n) != 0) {
        freeb(mp);
        *errp = EFAULT;
        return NULL;
    }
    mp->b_wptr += n;
    if (coal)
        coal_start(mp, n);
    return mp;
}

/* The cache's fields are written under sd_lock and read without it by the
 * write snapshot (dpath_peek), hence the atomics: a release
 * store never shows before the lock's taking count (lock.h), an acquire
 * load keeps the snapshot's recheck of the count after it. */
#define DP_SET(f, v) __atomic_store_n(&c->f, (v), __ATOMIC_RELEASE)
#define DP_GET(f) __atomic_load_n(&c->f, __ATOMIC_ACQUIRE)

int ust_sd_deposit_path(struct stdata *sd, struct ust_sd_dpath *dp)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    struct ust_sd_dpath *c = &sd->sd_dpath;
    unsigned long gen = ust_plumb_gen_now();
    if (!c->valid || c->gen != gen) {
        /* Walked after reading gen: a change during the walk moves gen, and
         * the deposit's recheck then refuses the path. */
        queue_t *t = head_below(sd->sd_wq);
        DP_SET(q, t);
        DP_SET(rsd, t ? (struct stdata *)t->q_ptr : NULL);
        DP_SET(gen, gen);
        DP_SET(valid, 1);
    }
    *dp = *c;
    return dp->q != NULL && dp->rsd != NULL;
}

/* The cache read without sd_lock, field by field as the last holder left
 * it (possibly torn: ust_sd_wsnap_path checks sd_lock's takings around the
 * read, and the deposit rechecks the generation); 1 if it names a path. */
static int dpath_peek(struct stdata *sd, struct ust_sd_dpath *dp)
{
    const struct ust_sd_dpath *c = &sd->sd_dpath;
    dp->q = DP_GET(q);
    dp->rsd = DP_GET(rsd);
    dp->gen = DP_GET(gen);
    dp->valid = DP_GET(valid);
    return dp->valid && dp->q != NULL && dp->rsd != NULL;
}

void ust_sd_wsnap_take(struct stdata *sd, size_t max, int how)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    __atomic_store_n(&sd->sd_wsnap_max, max, __ATOMIC_RELEASE);
    __atomic_store_n(&sd->sd_wsnap_how, how, __ATOMIC_RELEASE);
    __atomic_store_n(&sd->sd_wsnap_takes, __atomic_load_n(&sd->sd_lock.takes, __ATOMIC_RELAXED),
                     __ATOMIC_RELEASE);
}

int ust_sd_wsnap_path(struct stdata *sd, size_t n, struct ust_sd_dpath *dp)
{
    unsigned long t = ust_lock_takes(&sd->sd_lock);
    if (t != __atomic_load_n(&sd->sd_wsnap_takes, __ATOMIC_ACQUIRE) ||
        n > __atomic_load_n(&sd->sd_wsnap_max, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&sd->sd_wsnap_how, __ATOMIC_ACQUIRE) != UST_WSNAP_DEPOSIT)
        return 0;
    int ok = dpath_peek(sd, dp); /* acquire loads: before the recheck */
    return ok && __atomic_load_n(&sd->sd_lock.takes, __ATOMIC_RELAXED) == t;
}

int ust_sd_wsnap_send(struct stdata *sd, size_t n)
{
    unsigned long t = ust_lock_takes(&sd->sd_lock);
    if (t != __atomic_load_n(&sd->sd_wsnap_takes, __ATOMIC_ACQUIRE) ||
        n > __atomic_load_n(&sd->sd_wsnap_max, __ATOMIC_ACQUIRE))
        return 0;
    return __atomic_load_n(&sd->sd_wsnap_how, __ATOMIC_ACQUIRE) == UST_WSNAP_SEND &&
           __atomic_load_n(&sd->sd_lock.takes, __ATOMIC_RELAXED) == t;
}

/* Take the arrival lock of the path's head, and keep it if the path is
 * still the plumbing's (see "Lifetime"): 1 held, 0 not (not held). */
static int lock_path(const struct ust_sd_dpath *dp, struct ust_arrivals *ar)
{
    /* Backing off, not sleeping: the reader's absorb holds the lock
     * briefly, but a writer without sd_lock (the write snapshot) met it
     * often enough at 1 KiB that ust_lock's short spin ran out and both
     * sides paid futex calls (0.85x; 0.94-0.96x backing off). */
    ust_lock_backoff(&ar->lock);
    if (ust_plumb_gen_now() == dp->gen)
        return 1;
    ust_unlock(&ar->lock);
    return 0;
}

/* Link mp, one write of n bytes in a block of its own, at the end of the
 * arrivals of rsd (sd_ar.lock held, the room checked) if the head still
 * takes deposits (the token may have been withdrawn since the caller
 * looked): 1 linked, 0 not.  *wake as for any deposit. */
static int link_new_locked(struct stdata *rsd, queue_t *q, mblk_t *mp, size_t n, int *wake)
{
    struct ust_arrivals *ar = &rsd->sd_ar;
    if (!takes_deposits(rsd))
        return 0;
    link_locked(rsd, mp, n);
    *wake |= ar->sleepy;
    ar->sleepy = 0;
    if (ar->bytes >= ar->room) { /* used up: the queue shows it (see "Flow control") */
        *wake |= absorb_locked(rsd, q, 0);
        tls_filled = 1;
    }
    return 1;
}

int ust_sd_deposit(const struct ust_sd_dpath *dp, struct ust_sd_uio *u, size_t n, mblk_t **built)
{
    *built = NULL;
    if (n == 0)
        return 0;
    struct stdata *rsd = dp->rsd; /* a head's memory, whatever its life now ("Lifetime") */
    struct ust_arrivals *ar = &rsd->sd_ar;
    int r = 0, wake = 0, err = 0;
    mblk_t *mp = NULL;
    if (!takes_deposits(rsd))
        return 0;
    if (n > AR_COAL_MAX) {
        /* Never coalesced: its block is made first, then linked at one hold
         * of the lock, room looked at there.  Made, then found no room (or
         * the path gone), it goes the normal way as built.  A first hold
         * only to look at the room moved the lock's line to this CPU and
         * back to the reader's once more per write. */
        mp = build(&rsd->sd_spare, u, n, &err);
        if (!mp)
            return err == EFAULT ? -EFAULT : 0; /* ENOMEM: the normal path waits */
        if (lock_path(dp, ar)) {
            if (ar->bytes + n > ar->room)
                wake = absorb_locked(rsd, dp->q, 0); /* the room is stale */
            if (ar->bytes + n <= ar->room && link_new_locked(rsd, dp->q, mp, n, &wake)) {
                mp = NULL;
                r = 1;
            }
            ust_unlock(&ar->lock);
        }
    } else {
        if (!lock_path(dp, ar))
            return 0;
        if (ar->bytes + n > ar->room)
            wake = absorb_locked(rsd, dp->q, 0); /* the room is stale: the reader may have drained */
        if (ar->bytes + n <= ar->room)
            r = append_locked(ar, u, n);
        if (r == 1) {
            wake |= ar->sleepy;
            ar->sleepy = 0;
            if (ar->bytes >= ar->room) { /* used up: the queue shows it (see "Flow control") */
                wake |= absorb_locked(rsd, dp->q, 0);
                tls_filled = 1;
            }
        }
        int room = ar->bytes + n <= ar->room;
        ust_unlock(&ar->lock);
        if (r == 0 && room) {
            /* A new coalescing block, made without the lock. */
            mp = build(&rsd->sd_spare, u, n, &err);
            if (!mp) {
                if (wake)
                    ust_sd_wake(&rsd->sd_rwait);
                return err == EFAULT ? -EFAULT : 0; /* ENOMEM: the normal path waits */
            }
            if (lock_path(dp, ar)) {
                if (link_new_locked(rsd, dp->q, mp, n, &wake)) {
                    mp = NULL;
                    r = 1;
                }
                ust_unlock(&ar->lock);
            }
        }
    }
    if (wake) /* at worst a spurious wake-up of a head's next life ("Lifetime") */
        ust_sd_wake(&rsd->sd_rwait);
    if (r < 0)
        return r;
    if (mp) {
        mp->b_tag = 0; /* one write: an ordinary message on the normal path */
        *built = mp;
        return 2;
    }
    return r;
}

int ust_sd_deposit_many(const struct ust_sd_dpath *dp, const struct iovec *w, int n)
{
    if (n <= 0)
        return 0;
    struct stdata *rsd = dp->rsd;
    struct ust_arrivals *ar = &rsd->sd_ar;
    int done = 0, wake = 0;
    if (!takes_deposits(rsd) || !lock_path(dp, ar)) /* as ust_sd_deposit */
        return 0;
    for (; done < n; done++) {
        size_t len = w[done].iov_len;
        if (len == 0)
            break;
        if (ar->bytes + len > ar->room)
            wake |= absorb_locked(rsd, dp->q, 0); /* the room is stale: the reader may have drained */
        if (ar->bytes + len > ar->room)
            break;
        struct ust_sd_uio u = {.iov = &w[done], .iovcnt = 1, .idx = 1, .cur = w[done]};
        if (append_locked(ar, &u, len) != 1)
            break; /* no coalescing block with space (or a bad buffer) */
    }
    if (done > 0) {
        wake |= ar->sleepy;
        ar->sleepy = 0;
        if (ar->bytes >= ar->room) { /* used up: the queue shows it */
            wake |= absorb_locked(rsd, dp->q, 0);
            tls_filled = 1;
        }
    }
    ust_unlock(&ar->lock);
    if (wake)
        ust_sd_wake(&rsd->sd_rwait);
    return done;
}

/* ------------------------------------------------------------------------ */
/* Messages that came through modules                                       */
/* ------------------------------------------------------------------------ */

/* Copy the data of message mp (n bytes in all) to p. */
static void msg_copy_out(const mblk_t *mp, unsigned char *p)
{
    for (; mp; mp = mp->b_cont) {
        size_t k = (size_t)(mp->b_wptr - mp->b_rptr);
        if (k)
            memcpy(p, mp->b_rptr, k);
        p += k;
    }
}

/* Add the n bytes of mp as one more write of the coalescing block at the end
 * of the arrivals, or of a new one linked there (see "Copied at the head").
 * sd_ar.lock held, room checked.  1 copied (the caller frees mp after
 * unlocking), 0 not (no memory for a new block: link mp itself). */
static int copy_in_locked(struct stdata *sd, const mblk_t *mp, size_t n)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    mblk_t *last = ar->last;
    if (last && last->b_tag == UST_TAG_COAL && coal_fits(last, n)) {
        msg_copy_out(mp, last->b_wptr);
        coal_added(ar, last, n);
        return 1;
    }
    mblk_t *blk = allocb(AR_COAL_BLK, BPRI_MED); /* never blocks; the depot lock is a leaf */
    if (!blk)
        return 0;
    msg_copy_out(mp, blk->b_wptr);
    blk->b_wptr += n;
    coal_start(blk, n);
    link_locked(sd, blk, n);
    return 1;
}

/* A plain band-0 data message: one that may join the arrivals. */
static int arrival_kind(const mblk_t *mp)
{
    return mp->b_datap->db_type == M_DATA && mp->b_band == 0 &&
           !(mp->b_flag & (MSGMARK | MSGDELIM | MSGMARKNEXT | MSGNOTMARKNEXT));
}

int ust_sd_arrive(struct stdata *sd, queue_t *rq, mblk_t *mp)
{
    if (!arrival_kind(mp) || !takes_deposits(sd))
        return 0;
    size_t n = msgdsize(mp);
    if (n == 0)
        return 0; /* a zero-length message ends a read: queued the normal way */
    struct ust_arrivals *ar = &sd->sd_ar;
    int r = 0, wake = 0, copied = 0;

    ust_lock_backoff(&ar->lock); /* the dry reader's absorb holds it briefly */
    if (ar->bytes + n > ar->room)
        wake = absorb_locked(sd, rq, 0); /* the room is stale: the reader may have drained */
    if (ar->bytes + n <= ar->room && takes_deposits(sd)) {
        copied = n <= AR_COPY_MAX && copy_in_locked(sd, mp, n);
        if (!copied) {
            mp->b_tag = 0; /* from below: never taken for a coalesced one */
            link_locked(sd, mp, n);
        }
        r = 1;
        wake |= ar->sleepy;
        ar->sleepy = 0;
        if (ar->bytes >= ar->room) /* used up: the queue shows it (see "Flow control") */
            wake |= absorb_locked(sd, rq, 0);
    }
    ust_unlock(&ar->lock);
    if (copied)
        freemsg(mp); /* on this thread: its blocks go back to the cache they came from */
    if (wake)
        ust_sd_wake(&sd->sd_rwait);
    return r;
}

size_t ust_sd_arrivals_gathered(const struct stdata *sd, size_t *room)
{
    *room = __atomic_load_n(&sd->sd_ar.room, __ATOMIC_RELAXED);
    return __atomic_load_n(&sd->sd_ar.bytes, __ATOMIC_RELAXED);
}

int ust_sd_msg_each_write(const mblk_t *mp, int (*fn)(const unsigned char *p, size_t n, void *arg),
                          void *arg)
{
    if (mp->b_tag != UST_TAG_COAL || mp->b_cont != NULL)
        return -1;
    const dblk_t *db = mp->b_datap;
    unsigned char *end, *p = mp->b_rptr;
    unsigned i = coal_find(mp, &end);
    for (;;) {
        int r = fn(p, (size_t)(end - p), arg);
        if (r != 0)
            return r;
        if (end >= mp->b_wptr || ++i >= db->db_pad)
            return 0;
        p = end;
        end = p + rec_get(db, i);
        if (end > mp->b_wptr)
            end = mp->b_wptr;
    }
}
