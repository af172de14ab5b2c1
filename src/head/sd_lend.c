/* SPDX-License-Identifier: MIT */
/*
 * sd_lend.c -- the library's end (L) of each stream's readiness socket pair
 * (sd_fd.c): where it is kept, the few operations made on it, and the watch
 * that tells when the program has closed every descriptor of the other end.
 *
 * Principles of operation
 *   A descriptor costs the program a slot of its RLIMIT_NOFILE; L must not.
 *   Where the kernel offers io_uring, L lives in the fixed-file table of one
 *   ring per process: the ring holds the file, and the descriptor L came
 *   with is closed, so a stream costs one descriptor (U) and the process one
 *   more (the ring).  The operations on L -- a token record sent, a
 *   record received, shutdown -- are then submitted to the ring and waited
 *   for, one system call each, as they would be on a descriptor.  The close
 *   of U is watched by a multishot poll for POLLRDHUP on L whose
 *   completions name the stream (user_data); the same poll asks for POLLIN,
 *   so that a record the program wrote on U is reported too (the
 *   completion's mask tells the two apart: ring_note; sd_urec.c delivers).
 *   Otherwise (io_uring refused -- kernel, seccomp, sysctl -- its fixed-file
 *   table full, or USTREAMS_NO_URING set) L stays a descriptor (sd_lfd) and
 *   an edge-triggered epoll set of all such L (one descriptor for the
 *   process) does the watching.  Both ways may serve at once.
 *   The library's own descriptors (the ring, the epoll set, a plain L) may be
 *   closed by the program behind its back (a closefrom(3) loop) and their
 *   numbers reused: a plain L and the epoll set are checked by identity
 *   (inode and device recorded at creation, fstat) before every use, and
 *   forgotten, never closed, once they name another file; the ring is given
 *   up when the kernel refuses an operation on it (EBADF, EOPNOTSUPP), and
 *   checked by identity before it is closed.  What is lost then is the
 *   readiness of the streams whose L was there (docs/STREAMHEAD.md).
 *   Reports are consumed by ust_lend_reap (ust_sd_reap_orphans, at
 *   strm_open, strm_pipe and isastream, and at any call once the ring or
 *   the watch thread -- ust_lend_wait_records -- shows one kept); a report may be stale (the stream
 *   reused, or L shut down by a hang-up, which reports too): the caller
 *   checks descriptors before it drops anything.
 *
 * Locking
 *   The caller holds sd_lock of the stream whose L is operated on (that
 *   guards sd_lfd and sd_lslot).  ring_lock guards the ring (submission and
 *   completion queues, one operation in flight at a time), the slot map and
 *   the list of reports; it is taken under sd_lock, and only urec_lock
 *   (sd_urec.c, a leaf) is taken under it.  The epoll set's
 *   descriptor is published with an atomic exchange.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sthead.h"

enum { RING_CQ = 4096, RING_SLOTS_MAX = 1 << 15, REPORTS_MAX = 1024 };
/* user_data: a stream's watch is the (aligned) stdata pointer; a synchronous
 * operation has an odd tag of its own, so a late completion of one that was
 * given up (an enter failed) is never taken for the next one's. */
static uint64_t sync_seq; /* ring_lock */
static uint64_t sync_tag(void)
{
    return (++sync_seq << 1) | 1;
}
#define IS_SYNC(tag) (((tag) & 1) != 0)

static struct {
    int state; /* 0 not tried, 1 on, -1 unavailable; stored atomically (read unlocked) */
    int fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *sq_map, *cq_map, *sqe_map;
    size_t sq_len, cq_len, sqe_len;
    int nslots, hint;
    unsigned char *used; /* slot map */
    struct stdata *reports[REPORTS_MAX];
    int nreports; /* ring_lock; also read unlocked (ust_lend_reports_pending) */
} rg = {.fd = -1};
static ust_lock_t ring_lock = UST_LOCK_INIT; /* rg; a leaf under sd_lock */
static int lend_ep = -1; /* epoll set of plain L ends, made on first need */
/* Identity of lend_ep (atomic, published before it) and of the ring's
 * descriptor (ring_lock). */
static unsigned long long ep_ino, ep_dev, rg_ino, rg_dev;

/* Does fd still name the file whose identity is (ino, dev)? */
static int fd_is(int fd, unsigned long long ino, unsigned long long dev)
{
    unsigned long long i, d;
    return ust_file_id(fd, &i, &d) == 0 && i == ino && d == dev;
}

/* ---- the ring ---- */

static void ring_unmap(void)
{
    if (rg.sqe_map)
        munmap(rg.sqe_map, rg.sqe_len);
    if (rg.cq_map && rg.cq_map != rg.sq_map)
        munmap(rg.cq_map, rg.cq_len);
    if (rg.sq_map)
        munmap(rg.sq_map, rg.sq_len);
    if (rg.fd >= 0 && fd_is(rg.fd, rg_ino, rg_dev))
        close(rg.fd); /* not a number the program closed and reused */
    free(rg.used);
    rg.sq_map = rg.cq_map = rg.sqe_map = NULL;
    rg.used = NULL;
    rg.fd = -1;
    __atomic_store_n(&rg.nreports, 0, __ATOMIC_RELAXED);
}

static int ring_has_ops(void)
{
    size_t sz = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *p = calloc(1, sz);
    int ok = 0;
    if (p && syscall(__NR_io_uring_register, rg.fd, IORING_REGISTER_PROBE, p, 256) == 0) {
        static const unsigned char need[] = {IORING_OP_SEND, IORING_OP_RECV, IORING_OP_SHUTDOWN,
                                             IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE};
        ok = 1;
        for (size_t i = 0; i < sizeof(need); i++)
            if (need[i] > p->last_op || !(p->ops[need[i]].flags & IO_URING_OP_SUPPORTED))
                ok = 0;
    }
    free(p);
    return ok;
}

/* Set the ring up; ring_lock held.  Leaves state 1 or -1. */
static void ring_setup(void)
{
    const char *off = getenv("USTREAMS_NO_URING");
    struct io_uring_params p;
    struct rlimit rl;

    __atomic_store_n(&rg.state, -1, __ATOMIC_RELEASE);
    if (off && *off && strcmp(off, "0") != 0)
        return;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = RING_CQ;
    rg.fd = ust_fd_park((int)syscall(__NR_io_uring_setup, 8, &p));
    if (rg.fd < 0) {
        /* Out of descriptors or memory for now: tried again at the next
         * stream.  Anything else (no io_uring here) is for good. */
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
            __atomic_store_n(&rg.state, 0, __ATOMIC_RELEASE);
        rg.fd = -1;
        return;
    }
    rg.sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    rg.cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP)
        rg.sq_len = rg.cq_len = rg.sq_len > rg.cq_len ? rg.sq_len : rg.cq_len;
    rg.sqe_len = p.sq_entries * sizeof(struct io_uring_sqe);
    rg.sq_map = mmap(NULL, rg.sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rg.fd,
                     IORING_OFF_SQ_RING);
    if (rg.sq_map == MAP_FAILED) {
        rg.sq_map = NULL;
        goto fail;
    }
    rg.cq_map = rg.sq_map;
    if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
        rg.cq_map = mmap(NULL, rg.cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                         rg.fd, IORING_OFF_CQ_RING);
        if (rg.cq_map == MAP_FAILED) {
            rg.cq_map = NULL;
            goto fail;
        }
    }
    rg.sqe_map = mmap(NULL, rg.sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rg.fd,
                      IORING_OFF_SQES);
    if (rg.sqe_map == MAP_FAILED) {
        rg.sqe_map = NULL;
        goto fail;
    }
    char *sq = rg.sq_map, *cq = rg.cq_map;
    rg.sq_head = (unsigned *)(void *)(sq + p.sq_off.head);
    rg.sq_tail = (unsigned *)(void *)(sq + p.sq_off.tail);
    rg.sq_mask = (unsigned *)(void *)(sq + p.sq_off.ring_mask);
    rg.sq_array = (unsigned *)(void *)(sq + p.sq_off.array);
    rg.cq_head = (unsigned *)(void *)(cq + p.cq_off.head);
    rg.cq_tail = (unsigned *)(void *)(cq + p.cq_off.tail);
    rg.cq_mask = (unsigned *)(void *)(cq + p.cq_off.ring_mask);
    rg.cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
    rg.sqes = rg.sqe_map;
    if (!ring_has_ops())
        goto fail;
    /* A sparse fixed-file table as large as the descriptor limit allows. */
    rg.nslots = RING_SLOTS_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)rg.nslots)
        rg.nslots = (int)rl.rlim_cur;
    int *fds = malloc((size_t)rg.nslots * sizeof(int));
    rg.used = calloc((size_t)rg.nslots, 1);
    if (fds == NULL || rg.used == NULL) {
        free(fds);
        goto fail;
    }
    for (int i = 0; i < rg.nslots; i++)
        fds[i] = -1;
    long r = syscall(__NR_io_uring_register, rg.fd, IORING_REGISTER_FILES, fds, rg.nslots);
    free(fds);
    if (r != 0)
        goto fail;
    rg.hint = 0;
    if (ust_file_id(rg.fd, &rg_ino, &rg_dev) != 0)
        goto fail;
    __atomic_store_n(&rg.state, 1, __ATOMIC_RELEASE);
    return;
fail:
    ring_unmap();
    __atomic_store_n(&rg.state, -1, __ATOMIC_RELEASE);
}

/* Keep a completion of a stream's watch.  It fired, or it ended: removed
 * by ust_lend_close (the stream is being freed), or -ECANCELED when the
 * thread that submitted it has exited and the kernel's worker, which runs
 * its completion, may not (the close it saw is then reported this way).
 * Every one is kept: a report is only a hint, checked before anything is
 * dropped (ust_sd_reap_orphans), so a stale one costs a look and no more. */
static void ring_note(const struct io_uring_cqe *c)
{
    if (IS_SYNC(c->user_data))
        return;
    struct stdata *sd = (struct stdata *)(uintptr_t)c->user_data;
    /* A record arrived in L (POLLIN alone): the program wrote on U
     * (sd_urec.c).  Anything else -- U closed, L shut down, the watch
     * ended -- is a close report. */
    if (c->res > 0 && (c->res & POLLIN))
        ust_sd_urec_note(sd);
    if (c->res > 0 && !(c->res & (POLLRDHUP | POLLHUP | POLLERR)))
        return;
    int n = rg.nreports;
    if (n < REPORTS_MAX) {
        rg.reports[n] = sd;
        __atomic_store_n(&rg.nreports, n + 1, __ATOMIC_RELAXED); /* read unlocked: pending */
    }
}

/* Consume the completion queue; returns the result of the synchronous
 * operation tagged want if its completion was among them (*found set). */
static int ring_consume(uint64_t want, int *found)
{
    unsigned head = *rg.cq_head, tail = __atomic_load_n(rg.cq_tail, __ATOMIC_ACQUIRE);
    int res = 0;
    for (; head != tail; head++) {
        const struct io_uring_cqe *c = &rg.cqes[head & *rg.cq_mask];
        if (c->user_data == want) {
            res = c->res;
            *found = 1;
        } else {
            ring_note(c);
        }
    }
    __atomic_store_n(rg.cq_head, head, __ATOMIC_RELEASE);
    return res;
}

/* Queue one submission; ring_lock held. */
static struct io_uring_sqe *ring_sqe(unsigned char op, int slot, uint64_t tag)
{
    unsigned tail = *rg.sq_tail, idx = tail & *rg.sq_mask;
    struct io_uring_sqe *e = &rg.sqes[idx];
    memset(e, 0, sizeof(*e));
    e->opcode = op;
    e->fd = slot;
    e->flags = slot >= 0 ? IOSQE_FIXED_FILE : 0;
    e->user_data = tag;
    rg.sq_array[idx] = idx;
    __atomic_store_n(rg.sq_tail, tail + 1, __ATOMIC_RELEASE);
    return e;
}

/* Entries queued but not yet taken by the kernel (one that an earlier,
 * failed or interrupted enter left behind is submitted with the next). */
static unsigned ring_pending(void)
{
    return *rg.sq_tail - __atomic_load_n(rg.sq_head, __ATOMIC_ACQUIRE);
}

/* Submit what is queued and, if wait, wait for the synchronous operation's
 * completion.  Returns its result (-errno) or 0.  A signal interrupts only
 * the wait (the loop goes on); entries the kernel did not take are submitted
 * again, so the synchronous one cannot be waited for without being in. */
static int ring_enter(uint64_t want)
{
    int found = 0;
    for (;;) {
        unsigned todo = ring_pending();
        long r = syscall(__NR_io_uring_enter, rg.fd, todo, want ? 1 : 0,
                         want ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
        if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EBUSY) {
            int e = errno;
            if (e == EBADF || e == EOPNOTSUPP) /* closed behind our back */
                __atomic_store_n(&rg.state, -1, __ATOMIC_RELEASE);
            return -e;
        }
        if (!want)
            return 0;
        int got = ring_consume(want, &found);
        if (found)
            return got;
    }
}

/* One operation on fixed file slot, waited for; ring_lock held. */
static int ring_sync(unsigned char op, int slot, const void *buf, unsigned len, int flags)
{
    uint64_t tag = sync_tag();
    struct io_uring_sqe *e = ring_sqe(op, slot, tag);
    e->addr = (uint64_t)(uintptr_t)buf;
    e->len = len;
    e->msg_flags = (uint32_t)flags;
    return ring_enter(tag);
}

/* Move lfd into a free slot of the table: the slot, or -1 (lfd kept). */
static int ring_adopt(int lfd)
{
    if (rg.state == 0)
        ring_setup();
    if (rg.state != 1)
        return -1;
    for (int n = 0; n < rg.nslots; n++) {
        int s = (rg.hint + n) % rg.nslots;
        if (rg.used[s])
            continue;
        struct io_uring_files_update up = {.offset = (unsigned)s, .fds = (uint64_t)(uintptr_t)&lfd};
        if (syscall(__NR_io_uring_register, rg.fd, IORING_REGISTER_FILES_UPDATE, &up, 1) != 1) {
            if (errno == EBADF || errno == EOPNOTSUPP) /* closed behind our back */
                __atomic_store_n(&rg.state, -1, __ATOMIC_RELEASE);
            return -1;
        }
        rg.used[s] = 1;
        rg.hint = s + 1;
        return s;
    }
    return -1;
}

/* ---- the plain descriptor's watch ---- */

/* The epoll set, if it is still ours; a set closed behind our back is
 * forgotten (its number belongs to someone else now). */
static int ep_get(void)
{
    int ep = __atomic_load_n(&lend_ep, __ATOMIC_ACQUIRE);
    if (ep >= 0 && !fd_is(ep, __atomic_load_n(&ep_ino, __ATOMIC_RELAXED),
                          __atomic_load_n(&ep_dev, __ATOMIC_RELAXED))) {
        __atomic_compare_exchange_n(&lend_ep, &ep, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        return -1;
    }
    return ep;
}

static void ep_watch(struct stdata *sd, int lfd)
{
    int ep = ep_get();
    if (ep < 0) {
        unsigned long long ino, dev;
        int fresh = ust_fd_park(epoll_create1(EPOLL_CLOEXEC));
        if (fresh < 0 || ust_file_id(fresh, &ino, &dev) != 0) {
            if (fresh >= 0)
                close(fresh);
            return; /* close(2) is then seen by the other checks only */
        }
        __atomic_store_n(&ep_ino, ino, __ATOMIC_RELAXED);
        __atomic_store_n(&ep_dev, dev, __ATOMIC_RELAXED);
        int expected = -1;
        if (__atomic_compare_exchange_n(&lend_ep, &expected, fresh, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            ep = fresh;
        else {
            close(fresh);
            ep = expected;
        }
    }
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLIN | EPOLLET, .data.ptr = sd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
}

/* ---- what sd_fd.c uses (sd_lock held) ---- */

void ust_lend_adopt(struct stdata *sd, int lfd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    ust_lock(&ring_lock);
    int s = ring_adopt(lfd);
    if (s >= 0) {
        struct io_uring_sqe *e = ring_sqe(IORING_OP_POLL_ADD, s, (uint64_t)(uintptr_t)sd);
        e->poll32_events = POLLRDHUP | POLLIN; /* U closed; a record (sd_urec.c) */
        e->len = IORING_POLL_ADD_MULTI;
        ring_enter(0);
    }
    ust_unlock(&ring_lock);
    if (s >= 0) {
        close(lfd); /* the ring holds the file now */
        sd->sd_lslot = s;
        sd->sd_lfd = -1;
    } else {
        sd->sd_lslot = -1;
        sd->sd_lfd = lfd;
        if (ust_file_id(lfd, &sd->sd_lino, &sd->sd_ldev) != 0)
            sd->sd_lino = sd->sd_ldev = 0;
        ep_watch(sd, lfd);
    }
}

/* sd's L is in the ring, and the ring is still usable (not given up after
 * the program closed its descriptor: ring_enter). */
static int slot_live(const struct stdata *sd)
{
    return sd->sd_lslot >= 0 && __atomic_load_n(&rg.state, __ATOMIC_ACQUIRE) == 1;
}

/* sd's plain L, if it still names the file it was made as; else forgotten
 * (never closed: the number is someone else's now) and -1.  sd_lock held
 * (or sd is nobody else's). */
static int lfd_checked(struct stdata *sd)
{
    if (sd->sd_lfd >= 0 && !fd_is(sd->sd_lfd, sd->sd_lino, sd->sd_ldev))
        sd->sd_lfd = -1;
    return sd->sd_lfd;
}

int ust_lend_held(const struct stdata *sd)
{
    return sd->sd_lfd >= 0 || sd->sd_lslot >= 0;
}

int ust_lend_send(struct stdata *sd, const void *buf, size_t len, int flags)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (lfd_checked(sd) >= 0) {
        ssize_t n = send(sd->sd_lfd, buf, len, flags);
        return n >= 0 ? (int)n : -errno;
    }
    if (!slot_live(sd))
        return -EBADF;
    ust_lock(&ring_lock);
    int r = ring_sync(IORING_OP_SEND, sd->sd_lslot, buf, (unsigned)len, flags);
    ust_unlock(&ring_lock);
    return r;
}

int ust_lend_recv(struct stdata *sd, void *buf, size_t len, int flags)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (lfd_checked(sd) >= 0) {
        ssize_t n = recv(sd->sd_lfd, buf, len, flags | MSG_DONTWAIT);
        return n >= 0 ? (int)n : -errno;
    }
    if (!slot_live(sd))
        return -EBADF;
    ust_lock(&ring_lock);
    int r = ring_sync(IORING_OP_RECV, sd->sd_lslot, buf, (unsigned)len, flags | MSG_DONTWAIT);
    ust_unlock(&ring_lock);
    return r;
}

void ust_lend_shutdown(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (lfd_checked(sd) >= 0) {
        shutdown(sd->sd_lfd, SHUT_RDWR);
    } else if (slot_live(sd)) {
        ust_lock(&ring_lock);
        uint64_t tag = sync_tag();
        struct io_uring_sqe *e = ring_sqe(IORING_OP_SHUTDOWN, sd->sd_lslot, tag);
        e->len = SHUT_RDWR;
        ring_enter(tag);
        ust_unlock(&ring_lock);
    }
}

void ust_lend_close(struct stdata *sd)
{
    if (lfd_checked(sd) >= 0) {
        /* Also leaves the epoll set.  Under ring_lock: an event of it that
         * ep_consume has taken is routed (noted) before, never after the
         * head is torn down. */
        ust_lock(&ring_lock);
        close(sd->sd_lfd);
        ust_unlock(&ring_lock);
    } else if (slot_live(sd)) {
        int none = -1, s = sd->sd_lslot;
        ust_lock(&ring_lock);
        /* The watch holds the file too: remove it, then empty the slot. */
        uint64_t tag = sync_tag();
        struct io_uring_sqe *e = ring_sqe(IORING_OP_POLL_REMOVE, -1, tag);
        e->addr = (uint64_t)(uintptr_t)sd;
        ring_enter(tag);
        struct io_uring_files_update up = {.offset = (unsigned)s, .fds = (uint64_t)(uintptr_t)&none};
        syscall(__NR_io_uring_register, rg.fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
        rg.used[s] = 0;
        ust_unlock(&ring_lock);
    }
    sd->sd_lfd = sd->sd_lslot = -1;
}

/* Route events of the epoll set (no ring): records noted, close reports
 * kept with the ring's (REPORTS_MAX; a report lost to a full list leaves
 * the close to the per-call checks, as a lost completion would).
 * ring_lock held. */
static void ep_route_locked(const struct epoll_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        struct stdata *sd = ev[i].data.ptr;
        if (ev[i].events & EPOLLIN)
            ust_sd_urec_note(sd);
        if ((ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && rg.nreports < REPORTS_MAX) {
            rg.reports[rg.nreports] = sd;
            __atomic_store_n(&rg.nreports, rg.nreports + 1, __ATOMIC_RELAXED);
        }
    }
}

/* Consume the epoll set's events, waiting at most ms for the first.  The
 * wait only polls the set (taking nothing); events are taken and routed in
 * one hold of ring_lock, so that a reap (ust_lend_reap), which takes it too,
 * never finds an event taken by the watch thread and not yet in the
 * reports (the orphan was then released one call late). */
static int ep_consume(int ms)
{
    int ep = ep_get();
    if (ep < 0)
        return -1;
    if (ms > 0) {
        struct pollfd p = {.fd = ep, .events = POLLIN};
        (void)poll(&p, 1, ms);
    }
    struct epoll_event ev[32];
    int n;
    ust_lock(&ring_lock);
    do {
        n = epoll_wait(ep, ev, 32, 0);
        if (n > 0)
            ep_route_locked(ev, n);
    } while (n == 32);
    ust_unlock(&ring_lock);
    return 0;
}

void ust_lend_wait_records(int ms)
{
    if (ep_consume(ms) != 0 && ms > 0) { /* no epoll set: the ring needs no wait */
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    ust_lend_poll_records();
}

void ust_lend_poll_records(void)
{
    if (__atomic_load_n(&rg.state, __ATOMIC_ACQUIRE) == 1 &&
        __atomic_load_n(rg.cq_tail, __ATOMIC_ACQUIRE) != __atomic_load_n(rg.cq_head, __ATOMIC_RELAXED)) {
        ust_lock(&ring_lock);
        int found = 0;
        if (rg.state == 1)
            ring_consume(0, &found);
        ust_unlock(&ring_lock);
    }
}

void ust_lend_reap(void (*fn)(struct stdata *sd))
{
    struct stdata *got[REPORTS_MAX];
    int n = 0;

    ep_consume(0);
    ust_lock(&ring_lock);
    if (__atomic_load_n(&rg.state, __ATOMIC_ACQUIRE) == 1) {
        int found = 0;
        ring_consume(0, &found);
    }
    n = rg.nreports;
    memcpy(got, rg.reports, (size_t)n * sizeof(got[0]));
    __atomic_store_n(&rg.nreports, 0, __ATOMIC_RELAXED);
    ust_unlock(&ring_lock);
    for (int i = 0; i < n; i++)
        fn(got[i]);
}

int ust_lend_reports_pending(void)
{
    if (__atomic_load_n(&rg.state, __ATOMIC_ACQUIRE) != 1) /* the maps come before state 1 */
        return __atomic_load_n(&rg.nreports, __ATOMIC_RELAXED) != 0; /* kept by ep_consume */
    /* cq_tail is the kernel's (a completion posted), cq_head ours (advanced
     * under ring_lock by ring_consume, which keeps the watch reports it
     * meets in rg.reports). */
    return __atomic_load_n(rg.cq_tail, __ATOMIC_ACQUIRE) !=
               __atomic_load_n(rg.cq_head, __ATOMIC_RELAXED) ||
           __atomic_load_n(&rg.nreports, __ATOMIC_RELAXED) != 0;
}

int ust_lend_ring_on(void)
{
    ust_lock(&ring_lock);
    if (rg.state == 0)
        ring_setup();
    int on = rg.state == 1;
    ust_unlock(&ring_lock);
    return on;
}

/* ---- fork() (sd_fork.c) ---- */

/* urec_lock (sd_urec.c) is taken under ring_lock (ring_note): quiesced
 * here, in that order. */
void ust_lend_fork_prepare(void)
{
    ust_lock(&ring_lock);
    ust_sd_urec_fork_prepare();
}

void ust_lend_fork_parent(void)
{
    ust_sd_urec_fork_parent();
    ust_unlock(&ring_lock);
}

/* The ring and the epoll set are the parent's (the ring's memory is shared
 * with it): the child lets go of its references and makes its own when it
 * opens a stream.  Inherited streams forget their L (ust_lend_forget). */
void ust_lend_fork_child(void)
{
    ring_unmap();
    __atomic_store_n(&rg.state, 0, __ATOMIC_RELEASE);
    int ep = ep_get();
    __atomic_store_n(&lend_ep, -1, __ATOMIC_RELEASE);
    if (ep >= 0)
        close(ep);
    ust_lock_init(&ring_lock);
    ust_sd_urec_fork_child();
}

void ust_lend_forget(struct stdata *sd)
{
    if (lfd_checked(sd) >= 0)
        close(sd->sd_lfd);
    sd->sd_lfd = sd->sd_lslot = -1;
}
