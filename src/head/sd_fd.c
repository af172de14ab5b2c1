/* SPDX-License-Identifier: MIT */
/*
 * sd_fd.c -- stream descriptors: the table, readiness and lookup (waiting is
 * sd_wait.c).
 *
 * Principles of operation
 *   A stream's descriptor is one end (U) of an AF_UNIX SOCK_SEQPACKET socket
 *   pair whose other end (L) the library keeps.  The kernel's own
 *   poll/epoll/select then report the stream's readiness, driven by the
 *   library on edges only:
 *     readable   a zero-length record L -> U (POLLIN)
 *     priority   another zero-length record L -> U (POLLIN: no out-of-band
 *                data on a seqpacket socket; strm_poll says POLLPRI)
 *     unwritable a fill record U -> L, filling U's tiny send buffer (no POLLOUT)
 *     hang-up    shutdown of L               (POLLHUP, POLLIN)
 *   Records, not bytes, so that the program's own read(2) and write(2) on U
 *   lose and invent nothing: a read returns 0 for a token record, never
 *   bytes; a write is one record in L, which the library delivers into the
 *   stream (sd_urec.c), or fails in the kernel (EMSGSIZE, EAGAIN, EPIPE).
 *   Tokens are set when the state appears and taken away lazily, when a reader
 *   or writer finds the state gone, so a busy stream makes no system call.
 *   A stream costs one descriptor: U (and whatever dups the program makes of
 *   it); L is kept by sd_lend.c, in an io_uring fixed-file table where the
 *   kernel allows (a descriptor otherwise).  The library keeps no duplicate of U: it reaches U through one
 *   of the stream's own descriptor numbers (sd_ufd), after checking that the
 *   number still names U (below).
 *
 *   close(2).  A program may close a stream's descriptor with close(2) (or
 *   dup2 onto it) instead of strm_close; the kernel may then hand the number
 *   to another file.  The library never acts on a number it has not checked
 *   where that matters: U's inode and device are recorded at creation, and
 *   the number is compared with them (fstat) before every system call the
 *   library makes on U, by isastream, strm_close, strm_ioctl, strm_fcntl and
 *   strm_poll, and whenever the kernel returns a number the table still
 *   holds (the old slot is stale then).  A stale slot is dropped; the stream
 *   loses that reference and, with its last one, is released like a
 *   non-blocking close.  When every descriptor of U is closed, L sees the
 *   peer hang up: a watch on L (sd_lend.c) reports it and ust_sd_reap_orphans
 *   releases the stream.  It runs at strm_open, strm_pipe and isastream, and
 *   at the start of every call that takes a descriptor when the ring's
 *   completion queue (shared memory) shows a report (ust_sd_notice_closes:
 *   three loads, no system call), so a read or write that completes in
 *   memory sees the close of a stream's last descriptor too.  Limits
 *   (docs/STREAMHEAD.md): a number closed while the stream keeps another
 *   descriptor, a report the kernel has not posted yet (a close on another
 *   thread than the stream's maker), and no ring (epoll set: a system call
 *   to read) are seen only by the fstat checks above.
 *
 *   The table maps descriptor numbers to streams: 1024 chunks of 1024 slots,
 *   allocated on demand and never freed, read without a lock.  Stream heads
 *   come from a type-stable pool (never returned to malloc), so ust_sd_get may
 *   count a call on a head that is being closed: it rechecks the slot after
 *   counting, and teardown waits for the calls to drain.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sd_chan.h"
#include "sthead.h"

#define CHUNK_BITS 10
#define CHUNK (1 << CHUNK_BITS)
#define NCHUNKS 1024

/* tab_lock guards chunk allocation and slot writes; reads are atomic loads. */
static ust_lock_t tab_lock = UST_LOCK_INIT;
static struct stdata **chunks[NCHUNKS];

/* pool_lock guards pool (free stream heads); leaf lock. */
static ust_lock_t pool_lock = UST_LOCK_INIT;
static struct stdata *pool;

/* Streams whose last table slot was found stale while a new descriptor took
 * its number (table_enter): released by the next ust_sd_reap_orphans.
 * tab_lock; linked through sd_stale_next. */
static struct stdata *stale_list;

static struct stdata **slot(int fd, int create)
{
    if (fd < 0 || fd >= CHUNK * NCHUNKS)
        return NULL;
    struct stdata **c = __atomic_load_n(&chunks[fd >> CHUNK_BITS], __ATOMIC_ACQUIRE);
    if (!c && create) {
        c = calloc(CHUNK, sizeof(*c));
        if (!c)
            return NULL;
        struct stdata **expected = NULL;
        if (!__atomic_compare_exchange_n(&chunks[fd >> CHUNK_BITS], &expected, c, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            free(c);
            c = expected;
        }
    }
    return c ? &c[fd & (CHUNK - 1)] : NULL;
}

static struct stdata *slot_get(int fd)
{
    struct stdata **s = slot(fd, 0);
    return s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : NULL;
}

struct stdata *ust_sd_alloc(void)
{
    ust_sd_fork_init();
    ust_lock(&pool_lock);
    struct stdata *sd = pool;
    if (sd)
        pool = sd->sd_next;
    ust_unlock(&pool_lock);
    if (!sd) {
        size_t size = (sizeof(*sd) + UST_CACHELINE - 1) / UST_CACHELINE * UST_CACHELINE;
        sd = aligned_alloc(UST_CACHELINE, size); /* the layout wants whole lines */
        if (!sd)
            return NULL;
        memset(sd, 0, size);
        ust_lock_init(&sd->sd_lock);
        ust_lock_init(&sd->sd_plumb);
        ust_lock_init(&sd->sd_ar.lock);
    }
    /* Reset everything but the locks, which stay initialized for the life of
     * the pool, and the wait sequences, which only ever grow. */
    ust_lock(&sd->sd_lock);
    sd->sd_rq = sd->sd_wq = NULL;
    /* sd_calls is not reset: it is 0 (teardown waited for that) except for
     * the passing count of a lookup that found a stale slot (ust_sd_get),
     * which takes its own back (in a fork child, ust_sd_fd_fork_child
     * clears the counts of the threads that are gone). */
    atomic_store(&sd->sd_refs, 0);
    __atomic_store_n(&sd->sd_forked, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sd->sd_xused, 0, __ATOMIC_RELAXED);
    sd->sd_flag = 0;
    sd->sd_rerror = sd->sd_werror = 0;
    sd->sd_rdopt = RNORM | RPROTNORM;
    sd->sd_wropt = 0;
    sd->sd_erropt = RERRNORM | WERRNORM;
    sd->sd_oflag = 0;
    sd->sd_wroff = 0;
    sd->sd_maxblk = INFPSZ;
    sd->sd_closetime = UST_CLTIME_MS;
    sd->sd_pushcnt = 0;
    sd->sd_anchor = 0;
    sd->sd_siglist = NULL;
    __atomic_store_n(&sd->sd_sigflags, 0, __ATOMIC_RELAXED);
    sd->sd_iocbusy = 0;
    sd->sd_iocid = 0;
    sd->sd_iocblk = NULL;
    sd->sd_hold = NULL;
    sd->sd_holdtime = 0;
    __atomic_store_n(&sd->sd_dpath.valid, 0, __ATOMIC_RELAXED);
    /* Counted as a taking: a write snapshot of an earlier life never holds
     * (sd_write.c). */
    ust_lock_count_take(&sd->sd_lock);
    sd->sd_rmark = 0;
    __atomic_store_n(&sd->sd_mread_sent, 0, __ATOMIC_RELAXED);
    sd->sd_lfd = sd->sd_ufd = sd->sd_lslot = -1;
    sd->sd_uino = sd->sd_udev = 0;
    sd->sd_stale_next = NULL;
    __atomic_store_n(&sd->sd_rtoken, 0, __ATOMIC_RELAXED);
    sd->sd_wblock = sd->sd_ptoken = sd->sd_hupset = 0;
    sd->sd_tokexact = sd->sd_tlazy = 0; /* off the payer's list: ust_sd_free */
    __atomic_store_n(&sd->sd_ar.lazy, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sd->sd_ar.owed, 0, __ATOMIC_RELAXED);
    sd->sd_urec = NULL;
    sd->sd_urec_flags = 0; /* sd_urec_queued/next: urec_lock's, left as they are */
    sd->sd_driver = NULL;
    sd->sd_dev = 0;
    memset(&sd->sd_cred, 0, sizeof(sd->sd_cred));
    sd->sd_peer = NULL;
    sd->sd_pipeq = NULL;
    sd->sd_xend = NULL;
    sd->sd_xlnext = NULL;
    sd->sd_xlprev = NULL;
    sd->sd_next = NULL;
    sd->sd_regprev = NULL;
    sd->sd_share = NULL;
    sd->sd_name[0] = '\0';
    __atomic_store_n(&sd->sd_ff.ff_isfifo, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sd->sd_ff.ff_readers, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sd->sd_ff.ff_writers, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sd->sd_ff.ff_ropens, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sd->sd_ff.ff_wopens, 0, __ATOMIC_RELAXED);
    ust_unlock(&sd->sd_lock);
    if (ust_sd_headinit(sd) != 0) {
        ust_lock(&pool_lock);
        sd->sd_next = pool;
        pool = sd;
        ust_unlock(&pool_lock);
        return NULL;
    }
    ust_sd_urec_attach(sd); /* after its set-up: records may be noted from now */
    return sd;
}

void ust_sd_free(struct stdata *sd)
{
    if (!sd)
        return;
    ust_lock(&sd->sd_lock);
    struct ust_sigreg *r = sd->sd_siglist;
    sd->sd_siglist = NULL;
    mblk_t *hold = sd->sd_hold, *ioc = sd->sd_iocblk;
    sd->sd_hold = sd->sd_iocblk = NULL;
    sd->sd_ufd = -1; /* a user descriptor: closed by its owner */
    queue_t *rq = sd->sd_rq;
    sd->sd_rq = sd->sd_wq = NULL;
    ust_unlock(&sd->sd_lock);
    while (r) {
        struct ust_sigreg *n = r->next;
        free(r);
        r = n;
    }
    freemsg(hold);
    freemsg(ioc);
    if (rq) {
        qprocsoff(rq); /* moves the plumbing generation: no deposit from now */
        ust_sd_arrivals_discard(sd); /* under the arrival lock: waits out one in progress */
        ust_qfree(rq);
    }
    ust_sd_tok_forget(sd); /* off the token payer's list (sd_tokpay.c) */
    ust_lend_close(sd); /* sd is nobody else's now: no sd_lock needed */
    ust_lock(&sd->sd_lock); /* but a late deliverer (sd_urec.c) may look */
    ust_sd_urec_forget(sd);
    ust_unlock(&sd->sd_lock);
    ust_sd_urec_detach(sd); /* and none does once the head is in the pool */
    ust_lock(&pool_lock);
    sd->sd_next = pool;
    pool = sd;
    ust_unlock(&pool_lock);
}

/* Enter fd, a number the kernel has just given the library, for sd.  A slot
 * still holding another stream is stale: that stream's descriptor was closed
 * behind the library's back and the number reused.  It loses the reference;
 * if that was its last, it goes on stale_list for ust_sd_reap_orphans (the
 * caller may hold locks a teardown cannot be run under). */
static int table_enter(int fd, struct stdata *sd)
{
    ust_lock(&tab_lock);
    struct stdata **s = slot(fd, 1);
    if (!s) {
        ust_unlock(&tab_lock);
        return -ENOMEM;
    }
    struct stdata *old = __atomic_load_n(s, __ATOMIC_ACQUIRE);
    __atomic_store_n(s, sd, __ATOMIC_RELEASE);
    atomic_fetch_add(&sd->sd_refs, 1);
    /* A FIFO losing a descriptor is told once the lock is dropped, its
     * reference kept until then (sd_fifo.h). */
    int tell = old != NULL && ust_fifo_slot_gone(fd, old);
    if (old != NULL && old != sd && !tell && atomic_fetch_sub(&old->sd_refs, 1) == 1) {
        old->sd_stale_next = stale_list;
        stale_list = old;
    }
    ust_unlock(&tab_lock);
    if (tell) {
        ust_fifo_announce(old);
        if (old != sd && atomic_fetch_sub(&old->sd_refs, 1) == 1) {
            ust_lock(&tab_lock);
            old->sd_stale_next = stale_list;
            stale_list = old;
            ust_unlock(&tab_lock);
        }
    }
    return fd;
}

/* Identity of an open file (also sd_lend.c's, for the library's own). */
int ust_file_id(int fd, unsigned long long *ino, unsigned long long *dev)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    *ino = st.st_ino;
    *dev = st.st_dev;
    return 0;
}

int ust_sd_fd_is(int fd, struct stdata *sd)
{
    unsigned long long ino, dev;
    if (ust_file_id(fd, &ino, &dev) != 0)
        return 0;
    return ino == sd->sd_uino && dev == sd->sd_udev && sd->sd_uino != 0;
}

/* A new readiness socket pair: sv[0] is U (its identity in *ino, *dev),
 * sv[1] is L.  0 or -errno. */
static int make_pair(int sv[2], unsigned long long *ino, unsigned long long *dev)
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    if (ust_file_id(sv[0], ino, dev) != 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return -e;
    }
    int small = 1; /* the kernel rounds up to its minimum */
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    return 0;
}

int ust_sd_attach_fd(struct stdata *sd)
{
    int sv[2], e;
    unsigned long long ino, dev;
    if ((e = make_pair(sv, &ino, &dev)) != 0)
        return e;
    ust_lock(&sd->sd_lock);
    sd->sd_ufd = sv[0];
    ust_lend_adopt(sd, sv[1]); /* sd_lend.c: kept, and watched */
    sd->sd_uino = ino;
    sd->sd_udev = dev;
    ust_unlock(&sd->sd_lock);
    ust_sd_watch_start(); /* records written on U reach the stream (sd_urec.c) */
    int r = table_enter(sv[0], sd);
    if (r < 0) {
        ust_lock(&sd->sd_lock);
        sd->sd_ufd = -1;
        ust_unlock(&sd->sd_lock);
        close(sv[0]);
        return r;
    }
    return sv[0];
}

/* A descriptor number through which the library may reach U, sd_lock held:
 * sd_ufd if it still names U, else another descriptor of the stream in the
 * table (sd_ufd was closed behind the library's back), else -1. */
static int ufd_checked(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (sd->sd_ufd >= 0 && ust_sd_fd_is(sd->sd_ufd, sd))
        return sd->sd_ufd;
    sd->sd_ufd = -1;
    for (int c = 0; c < NCHUNKS; c++) {
        struct stdata **ch = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
        for (int i = 0; ch != NULL && i < CHUNK; i++) {
            int fd = (c << CHUNK_BITS) | i;
            if (__atomic_load_n(&ch[i], __ATOMIC_ACQUIRE) == sd && ust_sd_fd_is(fd, sd))
                return sd->sd_ufd = fd;
        }
    }
    return -1;
}

int ust_sd_dup_fd(struct stdata *sd)
{
    return ust_sd_dup_fd_min(sd, 0, 1);
}

/* sd has no descriptor left (all closed, the stream kept by a name, a link
 * or a reopen under way): give it a new socket pair, sd_lock held.  The old
 * L is closed (which also ends its watch) and the tokens are
 * set again from the stream's state.  Returns the new U or -errno. */
static int reattach(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    int sv[2], e;
    unsigned long long ino, dev;
    if ((e = make_pair(sv, &ino, &dev)) != 0)
        return e;
    ust_lend_close(sd); /* records the old L still held: docs/PROGRAMS.md */
    ust_sd_urec_forget(sd);
    ust_lend_adopt(sd, sv[1]);
    sd->sd_ufd = sv[0];
    sd->sd_uino = ino;
    sd->sd_udev = dev;
    ust_lock(&sd->sd_ar.lock); /* a new pair has no token: deposits stop (sd_arrive.c) */
    __atomic_store_n(&sd->sd_rtoken, 0, __ATOMIC_RELAXED);
    ust_unlock(&sd->sd_ar.lock);
    ust_sd_absorb(sd); /* what was deposited before shows in the test below */
    sd->sd_ptoken = sd->sd_wblock = sd->sd_hupset = 0;
    if (sd->sd_flag & STRHUP)
        ust_sd_ready_hup(sd);
    queue_t *rq = sd->sd_rq;
    if (rq != NULL) {
        struct ust_qpriv *pv = ust_qpv(rq);
        ust_lock(&pv->lock);
        mblk_t *first = rq->q_first;
        int pri = first != NULL && first->b_datap->db_type >= QPCTL;
        ust_unlock(&pv->lock);
        if (first != NULL)
            ust_sd_ready_read(sd, 1);
        if (pri)
            ust_sd_ready_pri(sd, 1);
    }
    return sv[0];
}

/*
 * ust_sd_dup_fd_into -- make `slot`, a descriptor the caller reserved before
 *   it took a lock that must not be held with sd_lock (I_RECVFD holds the
 *   receiving stream's, which may be sd itself), a descriptor of sd, not
 *   close-on-exec.  Takes sd_lock.
 *   Returns slot, or -errno (no socket pair for a stream with no descriptor
 *   left, ENOMEM) with slot still the caller's.
 */
int ust_sd_dup_fd_into(struct stdata *sd, int slot)
{
    int e = 0;
    ust_lock(&sd->sd_lock);
    int from = ufd_checked(sd);
    int fresh = from < 0;
    if (fresh && (from = reattach(sd)) < 0) {
        e = -from;
    } else if (dup3(from, slot, 0) < 0) {
        e = errno;
    } else if (fresh) {
        close(from); /* slot is then U's only descriptor */
        sd->sd_ufd = slot;
    }
    ust_unlock(&sd->sd_lock);
    if (e != 0)
        return -e;
    return table_enter(slot, sd);
}

int ust_sd_dup_fd_min(struct stdata *sd, int minfd, int cloexec)
{
    int fd, e = 0;
    ust_lock(&sd->sd_lock);
    int from = ufd_checked(sd);
    if (from >= 0) {
        fd = fcntl(from, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, minfd);
        e = errno;
    } else if ((from = reattach(sd)) < 0) {
        fd = -1;
        e = -from;
    } else if (from >= minfd) {
        fd = from; /* the new U itself */
        if (!cloexec)
            fcntl(fd, F_SETFD, 0);
    } else {
        fd = fcntl(from, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, minfd);
        e = errno;
        close(from); /* fd is then U's only descriptor */
        sd->sd_ufd = fd;
    }
    ust_unlock(&sd->sd_lock);
    if (fd < 0)
        return -e;
    int r = table_enter(fd, sd);
    if (r < 0)
        close(fd);
    return r;
}

/* Closing a descriptor of sd takes sd_lock, so that ufd_checked never sees a
 * number that a library close is freeing (for another open to reuse). */
int ust_sd_detach_fd(int fd, struct stdata *sd)
{
    int left = ust_sd_forget_fd(fd, sd);
    if (left >= 0) {
        ust_lock(&sd->sd_lock);
        if (sd->sd_ufd == fd)
            sd->sd_ufd = -1;
        close(fd);
        ust_unlock(&sd->sd_lock);
    }
    return left;
}

int ust_sd_forget_fd(int fd, struct stdata *sd)
{
    ust_lock(&tab_lock);
    struct stdata **s = slot(fd, 0);
    if (!s || __atomic_load_n(s, __ATOMIC_ACQUIRE) != sd) {
        ust_unlock(&tab_lock);
        return -EBADF; /* not (any more) a descriptor of this stream */
    }
    __atomic_store_n(s, NULL, __ATOMIC_RELEASE);
    int tell = ust_fifo_slot_gone(fd, sd);
    ust_unlock(&tab_lock);
    if (tell)
        ust_fifo_announce(sd); /* before the slot's reference goes */
    return atomic_fetch_sub(&sd->sd_refs, 1) - 1;
}

int ust_sd_forget_stale_fd(int fd, struct stdata *sd)
{
    /* The caller found the slot stale before taking tab_lock.  Meanwhile the
     * stream may have been closed, its head reused for a new stream and fd
     * reused for the new U, entered in the same slot (table_enter takes
     * tab_lock after sd_uino is set): the same (fd, sd) pair, valid again.
     * Checked again under tab_lock, such a slot stays. */
    ust_lock(&tab_lock);
    struct stdata **s = slot(fd, 0);
    if (!s || __atomic_load_n(s, __ATOMIC_ACQUIRE) != sd || ust_sd_fd_is(fd, sd)) {
        ust_unlock(&tab_lock);
        return -EBADF; /* not sd's slot, or a valid one */
    }
    __atomic_store_n(s, NULL, __ATOMIC_RELEASE);
    int tell = ust_fifo_slot_gone(fd, sd);
    ust_unlock(&tab_lock);
    if (tell)
        ust_fifo_announce(sd); /* before the slot's reference goes */
    return atomic_fetch_sub(&sd->sd_refs, 1) - 1;
}

/* Drop every slot of sd whose number no longer names U. */
static void drop_stale_slots(struct stdata *sd)
{
    /* No reference, no descriptor: the usual report, of a stream closed by
     * the library itself (its L hung up), needs no walk of the table.  A
     * stream reused since has only fresh descriptors, which are not stale. */
    if (atomic_load(&sd->sd_refs) == 0)
        return;
    for (int c = 0; c < NCHUNKS; c++) {
        struct stdata **ch = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
        for (int i = 0; ch != NULL && i < CHUNK; i++) {
            int fd = (c << CHUNK_BITS) | i;
            if (__atomic_load_n(&ch[i], __ATOMIC_ACQUIRE) != sd)
                continue;
            /* under sd_lock, as library closes of sd's descriptors are */
            ust_lock(&sd->sd_lock);
            int stale = !ust_sd_fd_is(fd, sd);
            ust_unlock(&sd->sd_lock);
            if (stale)
                ust_sd_drop_stale(fd, sd);
        }
    }
}

void ust_sd_reap_orphans(void)
{
    ust_lock(&tab_lock);
    struct stdata *list = stale_list;
    stale_list = NULL;
    ust_unlock(&tab_lock);
    while (list != NULL) {
        struct stdata *sd = list;
        list = sd->sd_stale_next;
        sd->sd_stale_next = NULL;
        ust_sd_release_orphan(sd);
    }
    /* A reported stream may have been closed and reused since: its
     * descriptors are checked one by one, so a wrong report costs an fstat
     * per descriptor and nothing else (the hang-up of a stream, which shuts
     * L down, reports too). */
    ust_lend_reap(drop_stale_slots);
}

void ust_sd_notice_closes(void)
{
    if (__builtin_expect(ust_lend_reports_pending(), 0))
        ust_sd_reap_orphans();
    if (__builtin_expect(ust_sd_urec_pending(), 0))
        ust_sd_urec_run(); /* what the program wrote on a descriptor (sd_urec.c) */
}

struct stdata *ust_sd_get_checked(int fd, int *err)
{
    ust_sd_notice_closes();
    return ust_sd_recheck(fd, ust_sd_get(fd, err), err);
}

struct stdata *ust_sd_recheck(int fd, struct stdata *sd, int *err)
{
    if (sd == NULL || ust_sd_fd_is(fd, sd))
        return sd;
    ust_sd_put(sd);
    ust_sd_drop_stale(fd, sd);
    if (err)
        *err = fcntl(fd, F_GETFD) >= 0 ? ENOSTR : EBADF;
    return NULL;
}

struct stdata *ust_sd_get(int fd, int *err)
{
    struct stdata *sd = slot_get(fd);
    if (sd) {
        ust_sd_call_begin(sd); /* then the second look (sd_calls.c) */
        if (slot_get(fd) == sd && !ust_sd_forked(sd))
            return sd;
        ust_sd_put(sd);
        if (ust_sd_forked(sd) && slot_get(fd) == sd) {
            if (err)
                *err = EIO; /* the parent's stream (sd_fork.c) */
            return NULL;
        }
    }
    if (err)
        *err = (fd >= 0 && fcntl(fd, F_GETFD) >= 0) ? ENOSTR : EBADF;
    return NULL;
}

void ust_sd_put(struct stdata *sd)
{
    ust_sd_call_end(sd);
}

struct stdata *ust_sd_peek(int fd)
{
    return slot_get(fd);
}

/* ---- readiness (sd_lock held) ---- */

/* Take one token record (zero-length, L -> U) back out of U.  A plain
 * read(2) of the program may have taken it already: then nothing is there
 * and nothing is lost (docs/STREAMHEAD.md).  One record only: a hung-up U
 * reads 0 for ever (tokens are never withdrawn then). */
static void take_token(struct stdata *sd)
{
    char c;
    int ufd = ufd_checked(sd);
    if (ufd >= 0)
        (void)recv(ufd, &c, 1, MSG_DONTWAIT);
}

/*
 * The readable and priority tokens are each one zero-length record L -> U:
 * POLLIN while at least one is in U.  A plain read(2) of U returns 0 for
 * it, never bytes that are not the stream's data.  SOCK_SEQPACKET has no
 * out-of-band data, so the priority token shows as POLLIN on the
 * descriptor; strm_poll reports POLLPRI from the stream (sd_poll.c).
 */
void ust_sd_ready_read(struct stdata *sd, int on)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (!ust_lend_held(sd) || sd->sd_hupset || on == sd->sd_rtoken)
        return;
    if (on) {
        if (ust_sd_chan_pulling() == sd)
            return; /* the reader pulling it takes it; its read's end sets the token */
        if (ust_lend_send(sd, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL) == 0)
            __atomic_store_n(&sd->sd_rtoken, 1, __ATOMIC_RELAXED);
    } else {
        /* Withdrawn under the arrival lock, unless a pipe's writer deposited
         * meanwhile (sd_arrive.c): then the token stays. */
        if (!ust_sd_arrivals_withdraw(sd))
            return;
        take_token(sd);
    }
}

void ust_sd_ready_pri(struct stdata *sd, int on)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (!ust_lend_held(sd) || sd->sd_hupset || on == sd->sd_ptoken)
        return;
    if (on) {
        if (ust_lend_send(sd, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL) == 0)
            __atomic_store_n(&sd->sd_ptoken, 1, __ATOMIC_RELAXED); /* read by snap_read */
    } else {
        take_token(sd);
        __atomic_store_n(&sd->sd_ptoken, 0, __ATOMIC_RELAXED);
    }
}

/* Unwritable: a fill record U -> L (UST_FILL_LEN bytes, tagged: sd_urec.c)
 * raises U's send buffer use above what POLLOUT allows.  Writable again: L
 * is emptied, fills dropped and the program's records kept for delivery. */
void ust_sd_ready_write(struct stdata *sd, int on)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (!ust_lend_held(sd) || sd->sd_hupset || on == !sd->sd_wblock)
        return;
    if (!on) {
        int ufd = ufd_checked(sd);
        if (ufd >= 0 &&
            send(ufd, ust_sd_urec_fill(), UST_FILL_LEN, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
            sd->sd_wblock = 1;
    } else {
        ust_sd_urec_pull(sd);
        sd->sd_wblock = 0;
    }
}

void ust_sd_ready_hup(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (!ust_lend_held(sd) || sd->sd_hupset)
        return;
    ust_sd_urec_pull(sd); /* a hung-up stream is never blocked for writing */
    sd->sd_wblock = 0;
    ust_lend_shutdown(sd); /* a write(2) on U fails EPIPE from now on */
    sd->sd_hupset = 1;
}

/* ---- fork() (sd_fork.c) ---- */

/* Both locks are leaves: quiesced, so that the child finds the table and the
 * pool whole. */
void ust_sd_fd_fork_prepare(void)
{
    ust_lock(&tab_lock);
    ust_lock(&pool_lock);
}

void ust_sd_fd_fork_parent(void)
{
    ust_unlock(&pool_lock);
    ust_unlock(&tab_lock);
}

/* A free head's locks are not held by its last user any more, but a thread
 * holding a stale pointer (as a late putnext does for a pooled queue pair)
 * could take one; no such thread exists in the child, so the locks of every
 * free head -- the only heads the child will use -- are re-initialised. */
void ust_sd_fd_fork_child(void)
{
    stale_list = NULL; /* the parent's streams: detached, never released here */
    for (struct stdata *sd = pool; sd != NULL; sd = sd->sd_next) {
        ust_lock_init(&sd->sd_lock);
        ust_lock_count_take(&sd->sd_lock); /* no write snapshot survives */
        ust_lock_init(&sd->sd_plumb);
        ust_lock_init(&sd->sd_ar.lock);
        /* A parent thread frozen inside ust_sd_get on a stale slot left its
         * passing count here, and will never take it back: a head the child
         * reuses would wait for it at every close. */
        atomic_store(&sd->sd_calls, 0);
    }
    ust_sd_calls_fork_child(); /* the other threads' call slots */
    ust_unlock(&pool_lock);
    ust_unlock(&tab_lock);
}

/* Assumes the table is chunks[] of slots read without a lock (child: one
 * thread, the table quiesced at the fork). */
void ust_sd_fd_detach_all(void (*detach)(struct stdata *sd))
{
    for (int c = 0; c < NCHUNKS; c++) {
        struct stdata **ch = chunks[c];
        for (int i = 0; ch != NULL && i < CHUNK; i++)
            if (ch[i] != NULL)
                detach(ch[i]);
    }
}

/* ---- fork child: descriptors of split pipe ends (sd_xpipe.c) ---- */

void ust_sd_fd_each(void (*fn)(int fd, struct stdata *sd, void *arg), void *arg)
{
    for (int c = 0; c < NCHUNKS; c++) {
        struct stdata **ch = chunks[c];
        for (int i = 0; ch != NULL && i < CHUNK; i++)
            if (ch[i] != NULL)
                fn(c * CHUNK + i, ch[i], arg);
    }
}

/* The child's descriptor fd named a detached stream (its U, shared with the
 * parent): it gets a readiness pair of its own, U dup'ed onto fd (keeping
 * fd's close-on-exec flag and file status flags), and its slot names sd.
 * *ufd_made: -1 on entry for the first descriptor of sd (a pair is made and
 * its U number returned there), else the U to dup again.  The old stream
 * loses nothing: detached heads are never released in the child. */
int ust_sd_fork_rebind(int fd, struct stdata *sd, int *ufd_made)
{
    int fdfl = fcntl(fd, F_GETFD), flfl = fcntl(fd, F_GETFL);
    if (fdfl < 0 || flfl < 0)
        return -errno;
    if (*ufd_made < 0) {
        int sv[2], e;
        unsigned long long ino, dev;
        if ((e = make_pair(sv, &ino, &dev)) != 0)
            return e;
        ust_lock(&sd->sd_lock);
        ust_lend_adopt(sd, sv[1]);
        sd->sd_uino = ino;
        sd->sd_udev = dev;
        ust_unlock(&sd->sd_lock);
        *ufd_made = sv[0];
    }
    if (dup3(*ufd_made, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
        return -errno;
    fcntl(fd, F_SETFL, flfl & (O_NONBLOCK | O_APPEND | O_ASYNC));
    ust_lock(&sd->sd_lock);
    sd->sd_ufd = fd;
    ust_unlock(&sd->sd_lock);
    ust_lock(&tab_lock);
    struct stdata **s = slot(fd, 1);
    if (s != NULL) {
        __atomic_store_n(s, sd, __ATOMIC_RELEASE);
        atomic_fetch_add(&sd->sd_refs, 1);
    }
    ust_unlock(&tab_lock);
    return s != NULL ? 0 : -ENOMEM;
}

int ust_sd_is_stream_fd(int fd)
{
    return slot_get(fd) != NULL;
}
