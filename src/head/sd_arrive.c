/* SPDX-License-Identifier: MIT */
/*
 * sd_arrive.c -- arrivals: how a writer of a module-free pipe puts its data
 * straight at the reading head, small writes coalesced with their
 * boundaries kept, and how the reader takes it without the writer's lock.
 *
 * Principles of operation
 *   The path.  With nothing pushed on either end, a pipe's write side runs
 *   head wq -> pipe wq -> peer pipe rq -> peer head rq, the middle two passed
 *   through (procedures off).  A write that needs nothing of the stream but
 *   to land there (no SNDHOLD, no write offset or block limit, one packet) is
 *   deposited: the writer claims the peer head's read queue, checks that the
 *   links still lead there and that the head takes deposits (its readable
 *   token shown, no M_READ outstanding, no signal registered, procedures on),
 *   and adds the data to the head's arrivals.  No put procedure runs and no
 *   queue lock is taken.  Anything else -- a module pushed, a pop holding
 *   messages, a special option, no room -- takes the normal path, so pushing
 *   a module or setting an option switches paths without any flag to keep in
 *   step: every deposit checks the links again.
 *
 *   The chain (docs/STREAMHEAD.md "Arrivals without a shared lock").  The
 *   arrivals are a chain of messages (b_next), oldest first, that producers
 *   append to and consumers take from, with no lock in common:
 *   - producers (the writers' deposits, ust_sd_arrive) serialize among
 *     themselves on plock, on a line of their own that no reader writes:
 *     with one writer it stays in that writer's cache.  They append to the
 *     newest message when it is an open coalescing block (sd_coal.h), else
 *     link a new one (b_next of the old, or pfirst for the very first, by a
 *     release store after the old one's last byte), then publish how far
 *     they got: pcommit, the count of bytes ever added, a release store on
 *     a line written once per deposit;
 *   - consumers (the reader; and anyone who must see the arrivals as queued:
 *     the normal path's put procedure, I_SENDFD, flush, I_NREAD, I_PEEK,
 *     getmsg, poll, a writer whose room ran out) serialize on clock, on a
 *     line of their own (the reader's takes are uncontended).  A consumer
 *     reads pcommit (acquire) and takes the bytes from its own cursor
 *     (cblk, cpos) up to it: the reader of a byte stream copies them
 *     straight into the user's buffer (ust_sd_arrivals_read: one copy per
 *     side, as pipe(2)); everyone else moves them onto the read queue
 *     (absorb), a message a producer is done with (its b_next set) as it
 *     is, the committed part of the newest one as a view (dupb) --
 *     the newest is never given away, as its producer may still append to
 *     it or link after it.  A block passed is freed by the consumer.
 *   Boundaries: a view of a coalescing block keeps UST_TAG_COAL and the
 *   buffer's write lengths, so ust_sd_msg_writes / first_len / cut /
 *   each_write (sd_coal.c) see every write.  Zero-length writes, marks and
 *   bands never take this path.  Nothing is held back: a deposit is
 *   readable at once.
 *
 *   Order.  Arrivals are newer than every band-0 message on the read queue.
 *   Whoever queues there first moves the arrivals onto the queue (absorb),
 *   holding clock until they are queued, so a thread that then finds nothing
 *   pending knows they are on the queue before anything it adds.  The
 *   reader copies from the arrivals only when the read queue is empty,
 *   looked at under clock after pcommit: what a producer queued before its
 *   deposit is seen there.
 *
 *   Flow control.  The room is produced - consumed: producers may go up to
 *   climit, which a consumer sets to cbytes + the read queue's room
 *   (high-water mark less its count) when it takes; a producer caches it
 *   (plimit) and reads climit only when its cache runs out, as the
 *   cross-process ring does.  When climit too is used up the producer
 *   absorbs (the queue's count and QFULL are then exact) and tries again,
 *   else takes the normal path, where canput sees the full queue, marks it
 *   wanted and sleeps until the reader's getq drains it to low water and
 *   back-enables.  As with canput and putq, two writers may overshoot by a
 *   message each.  The deposit that uses the room up absorbs at once, so
 *   the queue's QFULL (what I_CANPUT, poll and the writer's POLLOUT look at)
 *   shows a full pipe as soon as it is full.
 *
 *   Wake-ups on edges only.  A reader that runs dry sets `sleepy` (a line of
 *   its own), orders that store before its next load, and looks at pcommit
 *   again before it sleeps; a producer, after its pcommit store, looks at
 *   `sleepy`, and if set clears it and wakes sd_rwait.  One of the two sees
 *   the other's store.  A full fence per deposit would drain the writer's
 *   store buffer at every write, so the order is asymmetric: the producer
 *   has a compiler barrier only, and the sleeper calls
 *   membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full barrier
 *   on every CPU running a thread of this process before it returns: a
 *   producer whose `sleepy` load came before that barrier had its pcommit
 *   store (earlier in its program) visible after it, so the sleeper's load
 *   sees it; one whose load came after sees `sleepy`.  Where the kernel
 *   refuses membarrier, producers use a seq_cst fence.  Under
 *   ThreadSanitizer (which does not model membarrier) both sides use
 *   seq_cst accesses.  A non-blocking reader withdraws the readable token
 *   under plock when nothing is pending (ust_sd_arrivals_withdraw), and
 *   producers look at the token under plock, so data never waits behind a
 *   withdrawn token.
 *
 *   Through modules.  A message that comes up through pushed modules (or
 *   from a driver) reaches the head's read put procedure, which links a
 *   plain band-0 M_DATA message into the same chain under the same rules
 *   (ust_sd_arrive), as it is, never coalesced.  Anything else (a band, a
 *   mark, high priority, control parts, no room) is queued with putq after
 *   the arrivals are absorbed, so it never overtakes them (docs/STREAMHEAD.md
 *   "Through modules without queues").
 *
 *   Lifetime.  The claim on the peer head's read queue keeps the head from
 *   being freed under the deposit: ust_sd_free turns its procedures off and
 *   waits out the claims before it discards the arrivals.
 *
 * Locking
 *   sd_ar.plock: the producers' fields (ptail, pbytes, plimit) and the
 *   writes of pcommit and pfirst.  sd_ar.clock: the consumers' fields
 *   (cblk, cpos) and the writes of cbytes and climit.  Order: sd_lock >
 *   plock > clock > queue locks.  A deposit holds no other lock.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sd_coal.h"

#define AR_COAL_MAX 1024 /* writes of at most this many bytes are coalesced */
#define AR_COAL_BLK 4096 /* buffer of a coalescing block */
#define AR_HOPS 4        /* queues passed through on the way to a head */

#if defined(__SANITIZE_THREAD__)
#define AR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AR_TSAN 1
#endif
#endif

/* ------------------------------------------------------------------------ */
/* The store-load order of a deposit and a sleeper ("Wake-ups")             */
/* ------------------------------------------------------------------------ */

static pthread_once_t mb_once = PTHREAD_ONCE_INIT;

#ifdef AR_TSAN
/* ThreadSanitizer does not model membarrier: seq_cst on both sides. */
static void mb_register(void)
{
}
#else
/* 1: the sleepers order with membarrier; producers need a compiler barrier
 * only.  Set once, before the first head exists (ust_sd_arrivals_init);
 * cleared if the kernel refuses a sleeper later. */
static int mb_ok;

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

static void mb_register(void)
{
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        __atomic_store_n(&mb_ok, 1, __ATOMIC_RELAXED);
}

/* The sleeper's side: its `sleepy` store is ordered before its next load,
 * and every producer's earlier stores are visible to it. */
static void sleeper_barrier(void)
{
    if (__atomic_load_n(&mb_ok, __ATOMIC_RELAXED)) {
        if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
            return;
        /* Not registered (a child after fork on a kernel that does not
         * carry it over): register and try again. */
        if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
            membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
            return;
        /* Refused: producers fence from now on.  One in flight may still
         * miss this sleep; the watch's safety net (sd_watch.c) ends it. */
        __atomic_store_n(&mb_ok, 0, __ATOMIC_RELAXED);
    }
    atomic_thread_fence(memory_order_seq_cst);
}
#endif

/* Publish pbytes (plock held), then look at the sleep mark: 1 if a reader
 * sleeps or is about to (the mark is then cleared): wake sd_rwait. */
static int publish(struct ust_arrivals *ar)
{
#ifdef AR_TSAN
    __atomic_store_n(&ar->pcommit, ar->pbytes, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&ar->sleepy, __ATOMIC_SEQ_CST))
        return 0;
#else
    __atomic_store_n(&ar->pcommit, ar->pbytes, __ATOMIC_RELEASE);
    if (__atomic_load_n(&mb_ok, __ATOMIC_RELAXED))
        atomic_signal_fence(memory_order_seq_cst); /* the sleeper's membarrier does the rest */
    else
        atomic_thread_fence(memory_order_seq_cst);
    if (!__atomic_load_n(&ar->sleepy, __ATOMIC_RELAXED))
        return 0;
#endif
    __atomic_store_n(&ar->sleepy, 0, __ATOMIC_RELAXED);
    return 1;
}

void ust_sd_arrivals_init(struct ust_arrivals *ar)
{
    pthread_once(&mb_once, mb_register);
    ust_lock_init(&ar->plock);
    ust_lock_init(&ar->clock);
}

/* ------------------------------------------------------------------------ */
/* Consuming                                                                */
/* ------------------------------------------------------------------------ */

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

/* The consumers' current message (clock held; some bytes pending, so the
 * chain has begun). */
static mblk_t *cur_msg(struct ust_arrivals *ar)
{
    if (!ar->cblk) {
        ar->cblk = __atomic_load_n(&ar->pfirst, __ATOMIC_ACQUIRE);
        ar->cpos = ar->cblk->b_rptr;
    }
    return ar->cblk;
}

/* The consumers are done with cblk and its producer with it (next is its
 * b_next): free it (what was given away holds its own references) and
 * move on.  clock held. */
static void cur_next(struct ust_arrivals *ar, mblk_t *next, int free_it)
{
    mblk_t *b = ar->cblk;
    if (free_it) {
        b->b_next = NULL;
        freemsg(b);
    }
    ar->cblk = next;
    ar->cpos = next->b_rptr;
}

/* The end of one-block message b, the consumers' current one, whose
 * b_next was read (acquire) as next after pcommit gave avail bytes pending.
 * A message with a successor is done: its end is final (a coalescing
 * block's in its trailer, sd_coal.h; another's is its b_wptr).  The newest
 * may be an open coalescing block, whose b_wptr its producer does not move
 * (pwptr is its end): every pending byte is in it.  clock held. */
static unsigned char *msg_end(const struct ust_arrivals *ar, const mblk_t *b, const mblk_t *next,
                              uint64_t avail)
{
    if (!next)
        return ar->cpos + avail;
    if (b->b_tag == UST_TAG_COAL) /* closed by its producer: the trailer has the end */
        return b->b_datap->db_base +
               __atomic_load_n(ust_coal_endp(b->b_datap), __ATOMIC_RELAXED);
    return b->b_wptr;
}

/* Record that `took` bytes were taken and that producers may go `room`
 * bytes past what is taken.  clock held. */
static void consumed(struct ust_arrivals *ar, size_t took, size_t room)
{
    uint64_t c = ar->cbytes + took;
    __atomic_store_n(&ar->cbytes, c, __ATOMIC_RELEASE);
    __atomic_store_n(&ar->climit, c + room, __ATOMIC_RELEASE);
}

/* Move the pending arrivals onto read queue q (oldest first) and set the
 * room.  clock held.  Returns 1 if the caller must wake sd_rwait after
 * unlocking: something was queued and either a reader marked the arrivals
 * sleepy (a second reader may sleep while the one that absorbs reads only
 * part), or the caller is not a reader -- a reader spinning in
 * ust_sd_wait_data watches the pending count, which this empties, and the
 * wait sequence, which only the wake moves.  *gotp: something was queued. */
static int absorb_locked(struct ust_arrivals *ar, queue_t *q, int by_reader, int *gotp)
{
    uint64_t avail = __atomic_load_n(&ar->pcommit, __ATOMIC_ACQUIRE) - ar->cbytes;
    size_t took = 0;
    mblk_t *head = NULL, **tp = &head;
    while (avail > 0) {
        mblk_t *b = cur_msg(ar);
        mblk_t *next = __atomic_load_n(&b->b_next, __ATOMIC_ACQUIRE);
        mblk_t *give;
        size_t n;
        if (b->b_cont == NULL) { /* one block: taken by the byte, from cpos */
            unsigned char *end = msg_end(ar, b, next, avail);
            n = (size_t)(end - ar->cpos);
            if (n == 0) { /* all taken: its successor holds the rest */
                cur_next(ar, next, 1);
                continue;
            }
            if (n > avail)
                n = (size_t)avail;
            if (next && ar->cpos + n == end) { /* its producer is done: itself */
                give = b;
                give->b_rptr = ar->cpos;
                give->b_wptr = end;
                cur_next(ar, next, 0);
            } else { /* the newest (or a part): a view of what is committed */
                give = dupb(b);
                if (!give)
                    break; /* no memory: the rest stays pending */
                give->b_tag = b->b_tag;
                give->b_rptr = ar->cpos;
                give->b_wptr = ar->cpos + n;
                ar->cpos += n;
            }
        } else { /* several blocks (from a module): taken whole */
            if (ar->cpos == NULL) { /* taken already, as a view */
                cur_next(ar, next, 1);
                continue;
            }
            n = msgdsize(b);
            if (next) {
                give = b;
                cur_next(ar, next, 0);
            } else {
                give = dupmsg(b);
                if (!give)
                    break;
                ar->cpos = NULL;
            }
        }
        give->b_next = NULL;
        *tp = give;
        tp = &give->b_next;
        avail -= n;
        took += n;
    }
    size_t room;
    /* One hold of the queue lock for all.  Its qenable would only wake the
     * readers, which the caller does (or is). */
    (void)ust_putq_list(q, head, &room);
    consumed(ar, took, room);
    *gotp = took > 0;
    if (!took)
        return 0;
    int sleepy = __atomic_load_n(&ar->sleepy, __ATOMIC_RELAXED);
    if (sleepy)
        __atomic_store_n(&ar->sleepy, 0, __ATOMIC_RELAXED);
    return sleepy || !by_reader;
}

/* Absorb into rq as a consumer other than the reader. */
static void absorb_other(struct stdata *sd, queue_t *rq)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!ust_sd_arrivals_pending(ar))
        return;
    int got;
    ust_lock(&ar->clock);
    int wake = absorb_locked(ar, rq, 0, &got);
    ust_unlock(&ar->clock);
    if (wake)
        ust_sd_wake(&sd->sd_rwait);
}

void ust_sd_absorb_to(struct stdata *sd, queue_t *rq)
{
    absorb_other(sd, rq);
}

void ust_sd_absorb(struct stdata *sd)
{
    absorb_other(sd, sd->sd_rq);
}

int ust_sd_absorb_some(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!ust_sd_arrivals_pending(ar))
        return 0;
    int got;
    ust_lock(&ar->clock);
    int wake = absorb_locked(ar, sd->sd_rq, 1, &got);
    ust_unlock(&ar->clock);
    if (wake)
        ust_sd_wake(&sd->sd_rwait);
    return got;
}

size_t ust_sd_arrivals_read(struct stdata *sd, ust_sd_arr_copy_fn fn, void *arg, size_t want,
                            int *errp)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    queue_t *q = sd->sd_rq;
    *errp = 0;
    if (!ust_sd_arrivals_pending(ar))
        return 0;
    size_t got = 0;
    ust_lock(&ar->clock);
    uint64_t avail = __atomic_load_n(&ar->pcommit, __ATOMIC_ACQUIRE) - ar->cbytes;
    /* After pcommit: what was queued before the deposits we take shows. */
    if (__atomic_load_n(&q->q_first, __ATOMIC_ACQUIRE) != NULL)
        avail = 0; /* older messages wait on the queue: read those first */
    while (avail > 0 && got < want) {
        mblk_t *b = cur_msg(ar);
        if (b->b_cont != NULL)
            break; /* several blocks (from a module): the queue's way */
        mblk_t *next = __atomic_load_n(&b->b_next, __ATOMIC_ACQUIRE);
        unsigned char *end = msg_end(ar, b, next, avail);
        size_t n = (size_t)(end - ar->cpos);
        if (n == 0) {
            cur_next(ar, next, 1);
            continue;
        }
        if (n > avail)
            n = (size_t)avail;
        if (n > want - got)
            n = want - got;
        size_t k = fn(ar->cpos, n, arg, errp);
        ar->cpos += k;
        got += k;
        avail -= k;
        if (k < n)
            break; /* the buffer is full, or a fault */
    }
    if (got > 0) {
        size_t hiwat = __atomic_load_n(&q->q_hiwat, __ATOMIC_RELAXED);
        consumed(ar, got, hiwat);
    }
    ust_unlock(&ar->clock);
    return got;
}

int ust_sd_arrivals_sleep(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
#ifdef AR_TSAN
    __atomic_store_n(&ar->sleepy, 1, __ATOMIC_SEQ_CST);
    uint64_t c = __atomic_load_n(&ar->cbytes, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&ar->pcommit, __ATOMIC_SEQ_CST) == c;
#else
    __atomic_store_n(&ar->sleepy, 1, __ATOMIC_RELAXED);
    sleeper_barrier();
    return ust_sd_arrivals_pending(ar) == 0;
#endif
}

int ust_sd_arrivals_withdraw(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    if (ust_sd_arrivals_pending(ar))
        return 0; /* pending stays pending or goes onto the queue: the token is due */
    ust_lock(&ar->plock); /* producers look at the token under it */
    /* Nor messages a producer's absorb queued (it absorbs under plock: the
     * deposit that fills the pipe) since the caller found the queue empty:
     * withdrawn, the token would leave them unseen and the writer blocked
     * on the full queue. */
    queue_t *rq = sd->sd_rq;
    int quiet = ust_sd_arrivals_pending(ar) == 0 &&
                (rq == NULL || __atomic_load_n(&rq->q_first, __ATOMIC_RELAXED) == NULL);
    if (quiet)
        __atomic_store_n(&sd->sd_rtoken, 0, __ATOMIC_RELAXED);
    ust_unlock(&ar->plock);
    return quiet;
}

void ust_sd_arrivals_untoken(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    ust_lock(&ar->plock);
    __atomic_store_n(&sd->sd_rtoken, 0, __ATOMIC_RELAXED);
    ust_unlock(&ar->plock);
}

void ust_sd_arrivals_discard(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    ust_lock(&ar->plock);
    ust_lock(&ar->clock);
    mblk_t *mp = ar->cblk ? ar->cblk : ar->pfirst;
    ar->cblk = ar->ptail = NULL;
    ar->cpos = ar->pwptr = NULL;
    __atomic_store_n(&ar->pfirst, NULL, __ATOMIC_RELAXED);
    ar->pbytes = ar->plimit = 0;
    __atomic_store_n(&ar->pcommit, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ar->cbytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ar->climit, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ar->sleepy, 0, __ATOMIC_RELAXED);
    ust_unlock(&ar->clock);
    ust_unlock(&ar->plock);
    while (mp) {
        mblk_t *next = mp->b_next;
        mp->b_next = NULL;
        freemsg(mp);
        mp = next;
    }
}

/* ------------------------------------------------------------------------ */
/* Producing                                                                */
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

/* Does head rsd take deposits now?  Fields that change on edges only; the
 * token is cleared under plock (ust_sd_arrivals_withdraw), so a producer
 * holding plock that sees it shown may add. */
static int takes_deposits(const struct stdata *rsd)
{
    return __atomic_load_n(&rsd->sd_rtoken, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&rsd->sd_mread_sent, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&rsd->sd_sigflags, __ATOMIC_RELAXED);
}

/* May the producers add n bytes?  plock held.  First the cached limit,
 * then the consumers' climit, then an absorb onto rq (which makes the
 * queue's count exact and the room with it); *wake is or-ed with the
 * absorb's wake. */
static int room_for(struct ust_arrivals *ar, queue_t *rq, size_t n, int *wake)
{
    if (ar->pbytes + n <= ar->plimit)
        return 1;
    ar->plimit = __atomic_load_n(&ar->climit, __ATOMIC_ACQUIRE);
    if (ar->pbytes + n <= ar->plimit)
        return 1;
    int got;
    ust_lock(&ar->clock);
    *wake |= absorb_locked(ar, rq, 0, &got); /* the room was stale: the reader may have drained */
    ust_unlock(&ar->clock);
    ar->plimit = __atomic_load_n(&ar->climit, __ATOMIC_RELAXED);
    return ar->pbytes + n <= ar->plimit;
}

/* After a deposit: if it used the room up, absorb now so that the queue's
 * QFULL shows it ("Flow control").  plock held. */
static void if_filled(struct ust_arrivals *ar, queue_t *rq, int *wake)
{
    if (ar->pbytes < ar->plimit)
        return;
    ar->plimit = __atomic_load_n(&ar->climit, __ATOMIC_ACQUIRE);
    if (ar->pbytes < ar->plimit)
        return;
    int got;
    ust_lock(&ar->clock);
    *wake |= absorb_locked(ar, rq, 0, &got);
    ust_unlock(&ar->clock);
    ar->plimit = __atomic_load_n(&ar->climit, __ATOMIC_RELAXED);
    tls_filled = 1;
}

/* Append n bytes of u to the newest message if it is a coalescing block
 * with space.  plock held.  1 done (not yet published), 0 no space,
 * -EFAULT (nothing added). */
static int append(struct ust_arrivals *ar, struct ust_sd_uio *u, size_t n)
{
    mblk_t *last = ar->ptail;
    if (n > AR_COAL_MAX || !last || last->b_tag != UST_TAG_COAL)
        return 0;
    dblk_t *db = last->b_datap;
    unsigned count = db->db_pad; /* only producers write it */
    if (count >= 0xffff ||
        (size_t)(db->db_lim - ar->pwptr) < n + 2 * ((size_t)count + 1) + AR_CURSOR)
        return 0;
    if (ust_sd_uio_copy(u, ar->pwptr, n) != 0)
        return -EFAULT;
    ust_coal_rec_put(db, count, n);
    /* Data and length before the count: see sd_coal.h. */
    __atomic_store_n(&db->db_pad, (unsigned short)(count + 1), __ATOMIC_RELAXED);
    ar->pwptr += n;
    ar->pbytes += n;
    return 1;
}

/* Link mp (n data bytes) after the newest message.  plock held; published
 * with the next pcommit. */
static void link_msg(struct ust_arrivals *ar, mblk_t *mp, size_t n)
{
    mp->b_next = NULL;
    mblk_t *old = ar->ptail;
    if (old) {
        if (old->b_tag == UST_TAG_COAL) /* closed: its end is final (msg_end) */
            __atomic_store_n(ust_coal_endp(old->b_datap),
                             (uint32_t)(ar->pwptr - old->b_datap->db_base), __ATOMIC_RELAXED);
        __atomic_store_n(&old->b_next, mp, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&ar->pfirst, mp, __ATOMIC_RELEASE);
    }
    ar->ptail = mp;
    ar->pwptr = mp->b_wptr;
    ar->pbytes += n;
}

/* A new message of n bytes from u: a coalescing block for a small write.
 * NULL with *errp (ENOMEM, EFAULT). */
static mblk_t *build(struct ust_sd_uio *u, size_t n, int *errp)
{
    int coal = n <= AR_COAL_MAX;
    mblk_t *mp = allocb(coal ? AR_COAL_BLK : n, BPRI_MED);
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
    if (coal) {
        mp->b_tag = UST_TAG_COAL;
        mp->b_datap->db_pad = 1;
        __atomic_store_n(ust_coal_cursor(mp->b_datap), 0, __ATOMIC_RELAXED);
        __atomic_store_n(ust_coal_endp(mp->b_datap), 0, __ATOMIC_RELAXED);
        ust_coal_rec_put(mp->b_datap, 0, n);
    }
    return mp;
}

int ust_sd_deposit_path(struct stdata *sd, struct ust_sd_dpath *dp)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    struct ust_sd_dpath *c = &sd->sd_dpath;
    unsigned long gen = ust_plumb_gen_now();
    if (!c->valid || c->gen != gen) {
        /* Walked after reading gen: a change during the walk moves gen, and
         * the deposit's recheck then refuses the path. */
        queue_t *t = head_below(sd->sd_wq);
        c->q = t;
        c->pv = t ? ust_qpv(t) : NULL;
        c->rsd = t ? t->q_ptr : NULL;
        c->gen = gen;
        c->valid = 1;
    }
    *dp = *c;
    return dp->q != NULL && dp->rsd != NULL;
}

/* Claim the path's head queue and check the generation (strcore.h): the
 * head stays while we deposit, and the path is the one the plumbing has
 * now.  The queue's own lines (written by its reader at every read) are not
 * touched.  1 claimed, 0 not (nothing held). */
static int claim(const struct ust_sd_dpath *dp)
{
    atomic_fetch_add(&dp->pv->active, 1);
    if (ust_plumb_gen_now() == dp->gen)
        return 1;
    atomic_fetch_sub_explicit(&dp->pv->active, 1, memory_order_release);
    return 0;
}

/* Release the claim on the path's head queue (ust_qrelease without reading
 * the queue's flags, which share a line with what its reader writes). */
static void unclaim(const struct ust_sd_dpath *dp)
{
    int was = atomic_fetch_sub_explicit(&dp->pv->active, 1, memory_order_release);
#ifdef USTREAMS_DEBUG
    if (was <= 0)
        ust_claim_underflow(dp->q, was);
#else
    (void)was;
#endif
}

int ust_sd_deposit(const struct ust_sd_dpath *dp, struct ust_sd_uio *u, size_t n, mblk_t **built)
{
    *built = NULL;
    if (n == 0 || !claim(dp))
        return 0;
    struct stdata *rsd = dp->rsd;
    struct ust_arrivals *ar = &rsd->sd_ar;
    int r = 0, wake = 0, err = 0;

    ust_lock(&ar->plock);
    if (takes_deposits(rsd) && room_for(ar, dp->q, n, &wake)) {
        r = append(ar, u, n);
        if (r == 0) {
            /* A new block (made under plock: only producers wait for it). */
            mblk_t *mp = build(u, n, &err);
            if (mp) {
                link_msg(ar, mp, n);
                r = 1;
            } else if (err == EFAULT) {
                r = -EFAULT; /* ENOMEM: 0, the normal path waits */
            }
        }
        if (r == 1) {
            wake |= publish(ar);
            if_filled(ar, dp->q, &wake);
        }
    }
    ust_unlock(&ar->plock);
    if (wake) /* under the claim: rsd is still this pipe's */
        ust_sd_wake(&rsd->sd_rwait);
    unclaim(dp);
    return r;
}

int ust_sd_deposit_many(const struct ust_sd_dpath *dp, const struct iovec *w, int n)
{
    if (n <= 0 || !claim(dp))
        return 0;
    struct stdata *rsd = dp->rsd;
    struct ust_arrivals *ar = &rsd->sd_ar;
    int done = 0, wake = 0;

    ust_lock(&ar->plock);
    if (takes_deposits(rsd)) {
        for (; done < n; done++) {
            size_t len = w[done].iov_len;
            if (len == 0 || !room_for(ar, dp->q, len, &wake))
                break;
            struct ust_sd_uio u = {.iov = &w[done], .iovcnt = 1, .idx = 1, .cur = w[done]};
            if (append(ar, &u, len) != 1)
                break; /* no coalescing block with space (or a bad buffer) */
        }
    }
    if (done > 0) { /* published once for all */
        wake |= publish(ar);
        if_filled(ar, dp->q, &wake);
    }
    ust_unlock(&ar->plock);
    if (wake) /* under the claim: rsd is still this pipe's */
        ust_sd_wake(&rsd->sd_rwait);
    unclaim(dp);
    return done;
}

/* ------------------------------------------------------------------------ */
/* Messages that came through modules                                       */
/* ------------------------------------------------------------------------ */

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
    int r = 0, wake = 0;

    ust_lock(&ar->plock);
    if (takes_deposits(sd) && room_for(ar, rq, n, &wake)) {
        /* As it is, not coalesced: what a module sent is what a reader or
         * strinfo sees (measured: copying small ones into a coalescing
         * block gained nothing clear, bench/README.md). */
        mp->b_tag = 0; /* from below: never taken for a coalesced one */
        link_msg(ar, mp, n);
        r = 1;
        wake |= publish(ar);
        if_filled(ar, rq, &wake);
    }
    ust_unlock(&ar->plock);
    if (wake)
        ust_sd_wake(&sd->sd_rwait);
    return r;
}
