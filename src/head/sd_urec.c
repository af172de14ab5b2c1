/* SPDX-License-Identifier: MIT */
/*
 * sd_urec.c -- what a program writes on a stream's descriptor with plain
 * write(2), without the library: delivered into the stream, never lost.
 *
 * Principles of operation
 *   A stream's descriptor is U, one end of an AF_UNIX SOCK_SEQPACKET pair
 *   whose other end L the library keeps (sd_fd.c).  A write(2) on U is one
 *   record in L's receive queue; the kernel charges it to U's send buffer,
 *   which the library keeps tiny (so that POLLOUT can be withdrawn), so a
 *   record larger than that buffer fails EMSGSIZE at once and a writer finds
 *   U full (EAGAIN, or it blocks) while L holds about 4 KiB.  The library
 *   takes the records out of L and writes each into the stream as one
 *   message, as strm_write would write that many bytes (packet sizes,
 *   SNDZERO, holding, flow control): boundaries are kept.
 *
 *   Telling the library's own records from the program's.  To withdraw
 *   POLLOUT the library sends a fill record U -> L (ust_sd_ready_write):
 *   UST_FILL_LEN bytes starting with a random tag drawn once per process.
 *   A record with that length and tag is a fill and is dropped; anything
 *   else is the program's.  A fork child has the same tag, but its library
 *   never sends on an inherited U (the parent's L: ust_lend_forget), and
 *   exec forgets it; a process that copied the tag out of memory can only
 *   get its own records dropped.
 *
 *   When.  L's watch (sd_lend.c) reports a record (POLLIN).  Reports are
 *   read at the start of every library call that takes a descriptor (the
 *   ring's shared memory: no system call) and by the watch thread at each
 *   interval (sd_watch.c); the stream goes on the pending list and
 *   ust_sd_urec_run delivers.  Records are taken from L one at a time and
 *   only while band 0 below the head can take a message (bcanputnext, which
 *   marks the queue wanted): when it is full they stay in L, whose limit
 *   holds the writer back, and the relief (sd_ready.c) puts the stream on
 *   the list again.  While POLLOUT is withdrawn (a fill may sit in L) no
 *   record is taken here; the restore (ust_sd_urec_pull) takes all of L at
 *   once, drops the fills and keeps the program's records on sd_urec, which
 *   are delivered first.  So the library never holds more than one L-full
 *   of records per stream: a peer writing as fast as it can is held back by
 *   the kernel, not buffered.
 *
 * Locking
 *   urec_lock guards the pending list and sd_urec_queued/sd_urec_next: a
 *   leaf, taken under sd_lock or ring_lock (ust_sd_urec_note).  A head
 *   leaves the list before it is freed, and waits for its deliverers
 *   (ust_sd_urec_detach), and is not listed again until its next life is
 *   set up (ust_sd_urec_attach: a stale report of the watch's names the
 *   pooled head), so no thread of this file reaches a free head.  sd_urec and
 *   sd_urec_flags are guarded by sd_lock.  Delivery holds a call on the
 *   stream (sd_calls), and gives up once the stream is closing (STRCLOSE is
 *   set under sd_lock before teardown waits for the calls).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "sthead.h"

enum {
    URUN_MAX = 64,            /* records delivered per stream per run */
    URUN_ZEROS = 8,           /* zero-length reads per pull (EOF looks the same) */
    UREC_MAX = 1 << 20,       /* a larger record (U's buffer raised) is dropped */
    TAG_LEN = 16
};

/* sd_urec_queued: Q_LISTED while on the list, plus Q_RUNNING for each
 * thread delivering it (ust_sd_urec_detach waits for those). */
#define Q_LISTED 1
#define Q_RUNNING 2
/* In the pool (from ust_sd_urec_detach to ust_sd_urec_attach): never listed.
 * The watch's reports are hints that may name a head's last life
 * (sd_lend.c ring_note); listed in the pool, the head would be delivered
 * to while ust_sd_alloc sets up its next life. */
#define Q_POOLED (1 << 30)

static ust_lock_t urec_lock = UST_LOCK_INIT; /* leaf: the pending list */
static struct stdata *pending;               /* urec_lock; linked by sd_urec_next */
static int npending;                         /* urec_lock; read unlocked (pending) */

static unsigned char fill[UST_FILL_LEN];
static int fill_made; /* atomic: fill's tag drawn (once per process) */

const void *ust_sd_urec_fill(void)
{
    if (!__atomic_load_n(&fill_made, __ATOMIC_ACQUIRE)) {
        unsigned char tag[TAG_LEN];
        if (getrandom(tag, sizeof(tag), GRND_NONBLOCK) != (ssize_t)sizeof(tag)) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts); /* no entropy yet: still not a program's */
            unsigned long long x = (unsigned long long)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^
                                   (unsigned long long)(uintptr_t)&ts;
            for (int i = 0; i < TAG_LEN; i++)
                tag[i] = (unsigned char)(x >> ((i % 8) * 8)) ^ (unsigned char)(i * 37);
        }
        ust_lock(&urec_lock);
        if (!fill_made) {
            memcpy(fill, tag, sizeof(tag));
            __atomic_store_n(&fill_made, 1, __ATOMIC_RELEASE);
        }
        ust_unlock(&urec_lock);
    }
    return fill;
}

int ust_sd_urec_is_fill(const void *buf, size_t n)
{
    return n == UST_FILL_LEN && __atomic_load_n(&fill_made, __ATOMIC_ACQUIRE) &&
           memcmp(buf, fill, TAG_LEN) == 0;
}

/* One record out of L as a message, sd_lock held.  Returns it, or NULL
 * with *more 0 when L has none left (or only what cannot be told from an
 * end: zero-length reads), *more 1 when the record was a fill or was
 * dropped (look again). */
static mblk_t *pull_one(struct stdata *sd, int *zeros, int *more)
{
    unsigned char c;
    *more = 0;
    int len = ust_lend_recv(sd, &c, 1, MSG_PEEK | MSG_TRUNC);
    if (len < 0)
        return NULL;
    if (len == 0 && ++*zeros > URUN_ZEROS)
        return NULL;
    if (len == 0 || len > UREC_MAX) {
        /* A zero-length write sends nothing (as strm_write without
         * SNDZERO; L's end of file reads the same); a record above
         * UREC_MAX is dropped (docs/PROGRAMS.md). */
        *more = ust_lend_recv(sd, &c, 1, 0) >= 0;
        return NULL;
    }
    mblk_t *mp = allocb((size_t)len, BPRI_MED);
    if (mp == NULL)
        return NULL; /* stays in L: the next run tries again */
    int n = ust_lend_recv(sd, mp->b_wptr, (size_t)len, 0);
    if (n < 0 || n != len || ust_sd_urec_is_fill(mp->b_rptr, (size_t)n)) {
        freemsg(mp);
        *more = n >= 0;
        return NULL;
    }
    mp->b_wptr += n;
    return mp;
}

void ust_sd_urec_pull(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    mblk_t **tail = &sd->sd_urec;
    int zeros = 0, more = 1;
    while (*tail != NULL)
        tail = &(*tail)->b_next;
    while (ust_lend_held(sd) && more) {
        mblk_t *mp = pull_one(sd, &zeros, &more);
        if (mp != NULL) {
            *tail = mp;
            tail = &mp->b_next;
            more = 1;
        }
    }
    if (sd->sd_urec != NULL)
        ust_sd_urec_note(sd);
}

void ust_sd_urec_note(struct stdata *sd)
{
    ust_lock(&urec_lock);
    if (!(sd->sd_urec_queued & (Q_LISTED | Q_POOLED))) {
        sd->sd_urec_queued |= Q_LISTED;
        sd->sd_urec_next = pending;
        pending = sd;
        __atomic_store_n(&npending, npending + 1, __ATOMIC_RELAXED);
    }
    ust_unlock(&urec_lock);
}

int ust_sd_urec_pending(void)
{
    return __atomic_load_n(&npending, __ATOMIC_RELAXED) != 0;
}

/* bcanputnext(sd_wq, 0) under a claim, as a write asks (marks the queue
 * wanted when full: its drain back-enables the head). */
static int can_take(struct stdata *sd)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    int ok = bcanputnext(wq, 0);
    ust_qrelease(wq);
    return ok;
}

/* Deliver sd's records; no lock held.  The head is not freed meanwhile
 * (ust_sd_urec_detach waits for Q_RUNNING); it may have been closed since
 * it was noted (then nothing is done).  One thread at a time delivers a stream's records
 * (UST_UREC_BUSY), so that they go down in the order written; another
 * that comes meanwhile leaves UST_UREC_AGAIN for it and returns. */
static void deliver(struct stdata *sd)
{
    atomic_fetch_add(&sd->sd_calls, 1);
    int n = 0, zeros = 0, renote = 0;
    ust_lock(&sd->sd_lock);
    if (sd->sd_urec_flags & UST_UREC_BUSY) {
        sd->sd_urec_flags |= UST_UREC_AGAIN;
        ust_unlock(&sd->sd_lock);
        ust_sd_put(sd);
        return;
    }
    sd->sd_urec_flags = (sd->sd_urec_flags | UST_UREC_BUSY) & ~UST_UREC_AGAIN;
    for (;;) { /* sd_lock held at the top */
        if ((sd->sd_flag & (STRCLOSE | STPLEX)) || sd->sd_wq == NULL || ust_sd_forked(sd))
            break;
        if (n == URUN_MAX) {
            renote = 1; /* the rest at the next run: others have their turn */
            break;
        }
        mblk_t *mp = sd->sd_urec;
        int more = 0;
        if (mp != NULL)
            sd->sd_urec = mp->b_next;
        else if (!sd->sd_wblock && !sd->sd_hupset && ust_lend_held(sd))
            mp = pull_one(sd, &zeros, &more); /* wblock: the restore takes L; hupset: L shut */
        if (mp == NULL) {
            if (more)
                continue;
            if (sd->sd_urec_flags & UST_UREC_AGAIN) {
                sd->sd_urec_flags &= ~UST_UREC_AGAIN;
                zeros = 0;
                continue;
            }
            break;
        }
        mp->b_next = NULL;
        if (ust_sd_state_error(sd, UST_RULE_WRITE, 0) != 0) {
            /* Hung up, or a write error: what a write would fail with.  The
             * record is discarded, as what was queued at M_ERROR or
             * M_HANGUP is (no SIGPIPE on the library's thread). */
            freemsg(mp);
            continue;
        }
        if (!can_take(sd)) {
            /* Full below: kept first in line; the relief notes the stream
             * again (sd_ready.c).  The rest stays in L. */
            mp->b_next = sd->sd_urec;
            sd->sd_urec = mp;
            sd->sd_urec_flags |= UST_UREC_STALLED;
            break;
        }
        ust_unlock(&sd->sd_lock);
        struct iovec one = {mp->b_rptr, (size_t)(mp->b_wptr - mp->b_rptr)};
        ssize_t r = ust_sd_write(sd, &one, 1);
        if (ust_sd_wsent_take() | ust_sd_deposit_filled())
            ust_sd_wready_after_write(sd);
        ust_lock(&sd->sd_lock);
        size_t len = one.iov_len;
        if (r >= 0 && (size_t)r < len && len > 0) {
            mp->b_rptr += r; /* cut in packets, part sent: the rest goes next */
            r = -EAGAIN;
        }
        if (r == -EAGAIN || r == -EINTR || r == -ENOMEM || r == -ENOSR) {
            /* Full meanwhile (another writer), a signal, no memory: the
             * record is not lost, it goes first at the next run. */
            mp->b_next = sd->sd_urec;
            sd->sd_urec = mp;
            sd->sd_urec_flags |= UST_UREC_STALLED;
            if (can_take(sd)) /* wanted now; relieved already: go on later */
                renote = 1;
            break;
        }
        freemsg(mp); /* sent, or refused as such a write would be (docs/PROGRAMS.md) */
        n++;
    }
    sd->sd_urec_flags &= ~(UST_UREC_BUSY | UST_UREC_AGAIN);
    ust_unlock(&sd->sd_lock);
    if (renote)
        ust_sd_urec_note(sd);
    ust_sd_put(sd);
}

void ust_sd_urec_run(void)
{
    if (!ust_sd_urec_pending())
        return;
    ust_lock(&urec_lock);
    int budget = npending; /* a stream noted again meanwhile waits for the next run */
    ust_unlock(&urec_lock);
    while (budget-- > 0) {
        ust_lock(&urec_lock);
        struct stdata *sd = pending;
        if (sd != NULL) {
            pending = sd->sd_urec_next;
            sd->sd_urec_next = NULL;
            sd->sd_urec_queued = (sd->sd_urec_queued & ~Q_LISTED) + Q_RUNNING;
            __atomic_store_n(&npending, npending - 1, __ATOMIC_RELAXED);
        }
        ust_unlock(&urec_lock);
        if (sd == NULL)
            break;
        deliver(sd);
        ust_lock(&urec_lock);
        sd->sd_urec_queued -= Q_RUNNING;
        ust_unlock(&urec_lock);
    }
}

void ust_sd_urec_forget(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock); /* a late deliver() may still look at the head */
    mblk_t *mp = sd->sd_urec;
    sd->sd_urec = NULL;
    sd->sd_urec_flags &= UST_UREC_BUSY; /* a deliverer in ust_sd_write clears it */
    while (mp != NULL) {
        mblk_t *n = mp->b_next;
        mp->b_next = NULL;
        freemsg(mp);
        mp = n;
    }
}

void ust_sd_urec_detach(struct stdata *sd)
{
    ust_lock(&urec_lock);
    for (;;) {
        /* Unlisted again after each wait: a deliverer that stopped at its
         * run's limit notes the stream once more on its way out, and the
         * head would then go to the pool still on the list (a later run
         * delivered to its next life: TSan, deliver against headinit). */
        if (sd->sd_urec_queued & Q_LISTED) {
            struct stdata **pp = &pending;
            while (*pp != NULL && *pp != sd)
                pp = &(*pp)->sd_urec_next;
            if (*pp == sd) {
                *pp = sd->sd_urec_next;
                __atomic_store_n(&npending, npending - 1, __ATOMIC_RELAXED);
            }
            sd->sd_urec_next = NULL;
            sd->sd_urec_queued &= ~Q_LISTED;
        }
        if (sd->sd_urec_queued < Q_RUNNING)
            break;
        ust_unlock(&urec_lock); /* it sees the stream closed: soon */
        sched_yield();
        ust_lock(&urec_lock);
    }
    sd->sd_urec_queued |= Q_POOLED; /* a late report's note is dropped */
    ust_unlock(&urec_lock);
}

void ust_sd_urec_attach(struct stdata *sd)
{
    ust_lock(&urec_lock);
    sd->sd_urec_queued &= ~Q_POOLED;
    ust_unlock(&urec_lock);
}

/* fork(): the list names the parent's streams, detached in the child. */
void ust_sd_urec_fork_prepare(void)
{
    ust_lock(&urec_lock);
}

void ust_sd_urec_fork_parent(void)
{
    ust_unlock(&urec_lock);
}

void ust_sd_urec_fork_child(void)
{
    for (struct stdata *sd = pending; sd != NULL; sd = sd->sd_urec_next)
        sd->sd_urec_queued &= ~Q_LISTED; /* Q_RUNNING: the parent's threads, gone */
    pending = NULL;
    npending = 0;
    ust_lock_init(&urec_lock);
}
