/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe.c -- pipes across processes: the bottom of a pipe end whose peer
 * may live in another process.
 *
 * Principles of operation
 *   A pipe made by strm_pipe is two heads joined by the twist of their pipe
 *   pairs (sd_pipe.c), all in one process's memory.  Just before fork()
 *   (the prepare hook, rank UST_FORK_XPIPE) every connected pipe is *split*:
 *   it gets a channel -- two message rings in a shared mapping (xring.h,
 *   ring d carries what side d writes) -- and a *bell*, a socket pair whose
 *   end s is held by every process that holds pipe end s.  The twist is cut
 *   and the pipe pairs' procedures are switched on:
 *     write side  ust_xpipe_wput/wsrv: each message becomes a record of the
 *                 ring (type, band, control bytes, data bytes).  The head's
 *                 write and putmsg (no module pushed) put their messages in
 *                 the ring themselves or not at all (ust_xpipe_send): a
 *                 full ring makes them wait (hwant: wsrv arms the ring for
 *                 them) or fail EAGAIN, so nothing a call reported written
 *                 is left in process memory for _exit to lose.  Messages
 *                 that come down otherwise (through a module, ioctls) and
 *                 meet the ring at its high water mark wait on the pair's
 *                 write queue, which flow-controls the head as any driver
 *                 does.  A plain write(2) on an end with no module
 *                 pushed and nothing waiting goes straight from the
 *                 caller's buffer into the ring (ust_xpipe_write, from the
 *                 head's write path: no message is built, no put procedure
 *                 runs; the record is the one wput would have written);
 *     read side   ust_xpipe_rsrv: records become messages again and go up,
 *                 as long as the stream above takes them (bcanputnext), so
 *                 a slow reader fills the ring and stops the writer; small
 *                 plain data records are taken in batches (one hold of the
 *                 ring's lock) and appended to the head's arrivals.
 *   Doorbells are rung only on the rings' hysteresis edges (xring.h): a
 *   byte sent on the bell wakes the other side, whose epoll thread (io
 *   watch, src/core/io_watch.h) qenables its pair; both "data for you" and
 *   "room for you" are the same byte.  When every process holding an end has
 *   closed it (or died: the kernel closes their bells), the other side's
 *   bell reads end-of-file: what is left in the ring is delivered, then
 *   M_HANGUP, exactly as when the peer of an in-process pipe closes.
 *
 *   Who takes: every process holding an end could take what arrives for it,
 *   and what one takes, the others never see.  A process often holds ends
 *   it never uses (the parent keeps the child's end, closes it late or
 *   never; a child execs): such an end must not take.  So an end takes in
 *   a process only once that process has used it -- a data, ioctl or poll
 *   call (sd_xused, set by the head; ust_xpipe_touch), before the fork (the
 *   split then makes it live) or after; not strm_close, isastream or
 *   strm_fcntl.  An end not used here (rsrv_idle, sd_xpipe_read.c) takes
 *   nothing and leaves the bell's bytes to the processes they are for
 *   (the bell protocol, sd_xpipe_write.c).  A process that waits for an
 *   end it never used with the kernel's poll or epoll alone must make one
 *   call first (strm_poll with timeout 0 will do).

 *   In the child the inherited heads are never used (another thread of the
 *   parent may have been inside them at the fork, sd_fork.c): each descriptor
 *   of a split end gets a new head with the same pipe pair procedures over
 *   the same channel and bell (ust_xpipe_fork_child), and a readiness pair
 *   of its own dup'ed onto the descriptor's number.  What is not shared:
 *   messages queued at a head before the fork stay with the parent's copy;
 *   modules pushed before the fork stay in the parent (the child's ends
 *   start with none; push them after the fork).  I_SENDFD on a split pipe
 *   passes the descriptor on the bell (sd_xbell.c) beside an M_PASSFP
 *   record in the ring; a stream of this process crosses as a new pipe
 *   joined to it by a relay (sd_xpipe_far.c).
 *   A split pipe stays
 *   split: after the child is gone its two ends in the parent keep talking
 *   through the rings.
 *
 * Files: this one makes and closes split ends, serves the head's reader
 * hooks, and handles fork(); sd_xpipe_write.c writes (and holds the bell
 * protocol for "room", above wsrv_again); sd_xpipe_read.c reads;
 * sd_xpipe_far.c makes ends for another process (rendezvous, streams
 * passed); sd_xbell.c is the bell; sd_xpipe.h their state.
 *
 * Locking
 *   xp_lock guards the list of split ends of this process (`ends`); it is a
 *   leaf, taken with no other library lock held but a caller's sd_plumb.
 *   It is quiesced at fork (taken last in the prepare hook, after the
 *   splits).  An end's fields are fixed from the split to its close except
 *   `gone`, `hup_sent` (read service procedure only) and `backlog` (atomic).
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ustreams.h>

#include "forksafe.h"
#include "sd_xcross.h"
#include "sd_xpipe.h"

static ust_lock_t xp_lock = UST_LOCK_INIT; /* guards `ends`; leaf */
static struct ust_xend *ends;              /* xp_lock */

static void ends_add(struct ust_xend *xe)
{
    ust_lock(&xp_lock);
    xe->next = ends;
    if (ends != NULL)
        ends->prev = &xe->next;
    ends = xe;
    xe->prev = &ends;
    ust_unlock(&xp_lock);
}

static void ends_del(struct ust_xend *xe)
{
    ust_lock(&xp_lock);
    *xe->prev = xe->next;
    if (xe->next != NULL)
        xe->next->prev = xe->prev;
    ust_unlock(&xp_lock);
}

void xp_xchan_rele(struct xchan *xc)
{
    if (atomic_fetch_sub(&xc->refs, 1) == 1) {
        for (int i = 0; i < 2; i++)
            if (xc->wake[i] >= 0)
                close(xc->wake[i]);
        xring_destroy(xc->ch);
        free(xc);
    }
}

/* ------------------------------------------------------------------------ */
/* Split, close                                                             */
/* ------------------------------------------------------------------------ */

/* A split end's state for side `side` of xc, bell end `bell`; NULL when out
 * of memory.  Not yet in use: end_attach switches it on. */
struct ust_xend *xp_end_new(struct xchan *xc, int side, int bell)
{
    struct ust_xend *xe = calloc(1, sizeof(*xe));
    if (xe == NULL)
        return NULL;
    xe->xc = xc;
    xe->side = side;
    ust_xbell_init(&xe->bell, bell);
    atomic_fetch_add(&xc->refs, 1);
    return xe;
}

/* Make sd's pipe pair the bottom of split end xe: procedures on. */
void xp_end_attach(struct stdata *sd, struct ust_xend *xe)
{
    queue_t *rq = sd->sd_pipeq;
    xe->rq = rq;
    xe->hwq = sd->sd_wq;
    __atomic_store_n(&rq->q_ptr, xe, __ATOMIC_RELEASE);
    __atomic_store_n(&WR(rq)->q_ptr, xe, __ATOMIC_RELEASE);
    /* The largest record must fit beside a ring at its high water mark. */
    __atomic_store_n(&WR(rq)->q_maxpsz, XP_MAXPSZ, __ATOMIC_RELAXED);
    /* The ring is the pipe's buffer: a message that finds it full makes the
     * write queue full at once, so writers wait (flow control) rather than
     * pile up messages that each take the slow way into the ring -- tiny
     * writes would otherwise fill a byte-counted queue with thousands.  The
     * back-enable when it is empty again lets them write straight into the
     * ring (ust_xpipe_write) as before. */
    strqset(WR(rq), QHIWAT, 0, 1);
    strqset(WR(rq), QLOWAT, 0, 0);
    /* Across processes the ring buffers the pipe: the head keeps the
     * stream default (a pipe end's larger marks, UST_PIPE_HIWAT, pulled
     * more out of the ring into the head and cost the reader its direct
     * copy from the ring: 0.72-0.84x between processes, bench/README.md
     * "Pipe water marks").  Low first: it stays below high at each step. */
    strqset(sd->sd_rq, QLOWAT, 0, UST_STRLOW);
    strqset(sd->sd_rq, QHIWAT, 0, UST_STRHIGH);
    /* The ring's lock waits of this side end when the bell shows the peer
     * gone (xring.h, xring_set_peer). */
    xring_set_peer(xe->xc->ch, xe->side, xe->bell.fd);
    qprocson(rq);
    __atomic_store_n(&sd->sd_xend, xe, __ATOMIC_SEQ_CST); /* Dekker: ust_xpipe_split */
}

/* Register the bell and the wake pair's end of our side (if the channel
 * has one) with the epoll thread; `watched` set when both are (before
 * anyone can find xe on `ends`).  0 or an errno (nothing left watched). */
static int iow_both(struct ust_xend *xe)
{
    xe->wiow.inherit = 1; /* a fork child decides itself (ust_xpipe_fork_child) */
    int rc = ust_iow_add(&xe->iow, xe->bell.fd, xe->rq);
    if (rc != 0 || !xp_has_wake(xe))
        goto out;
    rc = ust_iow_add(&xe->wiow, xe->xc->wake[xe->side], xe->rq);
    if (rc != 0)
        ust_iow_del(&xe->iow);
out:
    xe->watched = rc == 0;
    return rc;
}

/* Watch the bell (the epoll thread qenables the pair's read queue on it);
 * then look at the ring once (something may be there already).  Just
 * before a fork (kick_now 0) both wait for ust_xpipe_fork_parent: no library
 * thread may be started or put to work while fork() runs (the child would
 * inherit the locks it holds -- AddressSanitizer's allocator has no fork
 * handler). */
int xp_end_watch(struct ust_xend *xe, int kick_now)
{
    xe->iow.inherit = 1; /* a fork child decides itself (ust_xpipe_fork_child) */
    if (!kick_now) {
        xe->kick = 1;
        ends_add(xe);
        return 0;
    }
    int rc = iow_both(xe);
    if (rc == 0) {
        ends_add(xe);
        qenable(xe->rq);
    }
    return rc;
}

/*
 * xp_geometry -- a new channel's rings: the high-water mark XP_HIWAT, or
 *   USTREAMS_XPIPE_HIWAT bytes when the environment sets it within
 *   XP_HIWAT_MIN..XP_HIWAT_MAX (an operator's trade of memory for speed:
 *   docs/STREAMHEAD.md "The ring's size"; tests that need a ring they can
 *   fill quickly set it small); the low-water mark a quarter of it; the
 *   ring the mark plus the largest record, rounded up to a power of two
 *   (xring_create's condition for exact arming).
 */
static void xp_geometry(size_t *ring, uint32_t *hi, uint32_t *lo)
{
    uint32_t h = XP_HIWAT;
    const char *env = getenv("USTREAMS_XPIPE_HIWAT");
    if (env != NULL && *env != '\0') {
        char *end;
        unsigned long v = strtoul(env, &end, 0);
        if (*end == '\0' && v >= XP_HIWAT_MIN && v <= XP_HIWAT_MAX)
            h = (uint32_t)v;
    }
    size_t need = (size_t)h + XP_MAXPSZ + 64, r = 4096;
    while (r < need)
        r <<= 1;
    *ring = r;
    *hi = h;
    *lo = h / 4;
}

struct xchan *xp_xchan_new(int wake)
{
    struct xchan *xc = calloc(1, sizeof(*xc));
    if (xc == NULL)
        return NULL;
    xc->wake[0] = xc->wake[1] = -1;
    if (wake) {
        int e = xp_wake_pair(xc->wake);
        if (e != 0) {
            free(xc);
            errno = e;
            return NULL;
        }
    }
    size_t ring;
    uint32_t hi, lo;
    xp_geometry(&ring, &hi, &lo);
    int r = xring_create(ring, hi, lo, &xc->ch);
    if (r != 0) {
        for (int i = 0; i < 2; i++)
            if (xc->wake[i] >= 0)
                close(xc->wake[i]);
        free(xc);
        errno = -r; /* why, for ust_xpipe_split's caller (EMFILE, ENOMEM...) */
        return NULL;
    }
    atomic_store(&xc->refs, 1); /* the maker's, dropped at the end */
    return xc;
}

/* A bell: a stream socket pair, descriptors passed on it come with the
 * kernel's credentials.  0 or an errno. */
int xp_bell_pair(int b[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, b) < 0)
        return errno;
    int on = 1;
    setsockopt(b[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
    setsockopt(b[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
    return 0;
}

/* A wake pair: a stream socket pair, both ends non-blocking (every send
 * and receive also says MSG_DONTWAIT: another holder may clear O_NONBLOCK
 * on the shared descriptions).  0 or an errno. */
int xp_wake_pair(int w[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, w) < 0)
        return errno;
    return 0;
}

int ust_xpipe_split(struct stdata *sd[2])
{
    struct ust_xend *xe[2] = {NULL, NULL};
    int bell[2];
    struct xchan *xc = xp_xchan_new(1);

    if (xc == NULL)
        return errno != 0 ? errno : ENOMEM;
    int e = xp_bell_pair(bell);
    if (e != 0) {
        xp_xchan_rele(xc);
        return e;
    }
    for (int i = 0; i < 2; i++)
        xe[i] = xp_end_new(xc, i, bell[i]);
    if (xe[0] == NULL || xe[1] == NULL) {
        for (int i = 0; i < 2; i++)
            if (xe[i] != NULL) {
                xp_xchan_rele(xc);
                free(xe[i]);
            }
        xp_xchan_rele(xc);
        close(bell[0]);
        close(bell[1]);
        return ENOMEM;
    }
    /* Both pairs' procedures on before the cut: a message already past the
     * cut point still finds its way (rput passes it up).  This process's
     * ends take at once. */
    for (int i = 0; i < 2; i++) {
        xp_end_attach(sd[i], xe[i]);
        /* An end this process has used takes; one it never used leaves
         * what arrives to the processes that do ("Who takes").  Dekker with
         * the head's first use (sd_access.c): it stores sd_xused then loads
         * sd_xend, we store sd_xend (end_attach, seq_cst) then load
         * sd_xused: one of the two makes the end live. */
        if (__atomic_load_n(&sd[i]->sd_xused, __ATOMIC_SEQ_CST))
            atomic_store(&xe[i]->live, 1);
    }
    /* A writer that found a pair's write queue still off passes through it
     * to q_next with a claim on it (ust_pass_on): wait those out before the
     * twist is cut, or they would find no q_next and drop the message. */
    for (int i = 0; i < 2; i++)
        ust_qdrain_claims(WR(sd[i]->sd_pipeq));
    /* Cut the twist; whoever was crossing it is waited out. */
    for (int i = 0; i < 2; i++)
        ust_pipe_qlink(WR(sd[i]->sd_pipeq), NULL);
    for (int i = 0; i < 2; i++)
        ust_qdrain_claims(sd[i]->sd_pipeq);
    for (int i = 0; i < 2; i++)
        if (xp_end_watch(xe[i], 0) != 0)
            atomic_store(&xe[i]->gone, 1); /* no epoll: the end hangs up */
    xp_xchan_rele(xc);
    return 0;
}


int ust_xpipe_sendfd(struct stdata *sd, int fd)
{
    static atomic_uint seq;
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    struct stdata *fsd;
    int err;

    if (xe == NULL || atomic_load(&xe->gone))
        return ENXIO;
    /* The token tells the receiver which descriptor goes with which record
     * when several processes send on this side. */
    uint32_t token = (((uint32_t)ust_getpid() * 2654435761u) ^ atomic_fetch_add(&seq, 1)) &
                     ~(XP_PASS_BELL | XP_SIG_TOKEN); /* bit 30: signals' (sd_xcross.h) */
    /* Descriptors wait in the bell until their records are read
     * (sd_xbell.c): a reader far behind fills it, and then the descriptor
     * is refused here, before its record is in the ring. */
    if (ust_xbell_room(&xe->bell) != 0)
        return EAGAIN;
    fsd = ust_sd_get(fd, &err);
    if (fsd != NULL) { /* a stream of this process: through a relay */
        ust_sd_put(fsd);
        return xp_sendfd_stream(xe, fd, token);
    }
    if (err != ENOSTR)
        return EBADF;
    struct xring_msg m = {.type = M_PASSFP, .aux = token};
    int r = xring_put(xe->xc->ch, xe->side, &m, NULL, 0);
    if (r == -EAGAIN)
        return EAGAIN;
    if (r < 0)
        return ENXIO;
    err = ust_xbell_sendfd(&xe->bell, fd, token);
    if (err != 0) /* the record is there: tell the receiver to drop it */
        ust_xbell_sendfd(&xe->bell, -1, token);
    return err;
}

void ust_xpipe_touch(struct stdata *sd)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (xe != NULL && !atomic_load_explicit(&xe->live, memory_order_relaxed) &&
        !atomic_exchange(&xe->live, 1))
        qenable(xe->rq);
}

int ust_xpipe_pull(struct stdata *sd)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (xe == NULL || !atomic_load(&xe->live) || xring_queued(xe->xc->ch, !xe->side) == 0)
        return 0;
    qenable(xe->rq);
    ust_call_run_now();
    return 1;
}

int ust_xpipe_reader(struct stdata *sd, int how)
{
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (xe == NULL || !atomic_load(&xe->live))
        return 0;
    switch (how) {
    case UST_XREADER_ENTER:
        atomic_fetch_add(&xe->readers, 1);
        return xp_direct_enter(sd); /* 1: its read copies from the ring itself */
    case UST_XREADER_READY:
        return xring_queued(xe->xc->ch, !xe->side) > 0 || atomic_load(&xe->gone);
    case UST_XREADER_WOKE:
        atomic_fetch_sub(&xe->dsleep, 1);
        return 0;
    default: /* UST_XREADER_LEAVE: about to sleep, or done */
        atomic_fetch_sub(&xe->readers, 1);
        if (how != UST_XREADER_SLEEP)
            return 0;
        /* A direct reader asleep: the doorbell's service procedure wakes it
         * rather than take what came (sd_xpipe_direct.c).  Before the arming:
         * whoever answers the arming sees it. */
        int dsl = xp_direct_sleeping();
        if (dsl)
            atomic_fetch_add(&xe->dsleep, 1);
        int a = xring_arm_reader(xe->xc->ch, !xe->side);
        if (a == 0)
            return 0;
        if (dsl)
            atomic_fetch_sub(&xe->dsleep, 1);
        if (a < 0 || (xring_is_shut(xe->xc->ch, !xe->side) &&
                      xring_queued(xe->xc->ch, !xe->side) == 0)) {
            /* Broken, or shut (by the peer: this library never shuts a ring)
             * and empty: a hang-up, which the read service procedure sends
             * up; sleep until it comes rather than look again for ever. */
            atomic_store(&xe->gone, 1);
            qenable(xe->rq);
            return 0;
        }
        return 1; /* data came: look again instead */
    }
}

void ust_xpipe_end_close(struct stdata *sd)
{
    struct ust_xend *xe = sd->sd_xend;
    queue_t *rq = xe->rq;

    /* What waits for room in the ring was written: it goes, as data in a
     * pipe outlives the writer's close -- unless nobody reads any more, or
     * not within the close time (non-blocking: not at all). */
    long ms = (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) ? 0 : sd->sd_closetime;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&xe->backlog) > 0 && !atomic_load(&xe->gone) &&
           !xring_broken(xe->xc->ch, xe->side)) {
        /* By the clock: wsrv may spend a bounded lock wait on each round. */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
            break;
        struct timespec ts = {0, 1000000};
        qenable(WR(rq));
        ust_sched_handoff(); /* not on this call's own list: it sleeps here */
        nanosleep(&ts, NULL);
    }
    /* Past the close time nothing of ours waits on the peer: a procedure
     * of this end waiting on a ring's lock returns within a slice (10 ms),
     * so qprocsoff below does not wait for the peer either. */
    xring_cancel(xe->xc->ch, xe->side);

    ends_del(xe); /* after a fork's parent hook, if one is running: `watched` is final */
    if (xe->watched) {
        ust_iow_del(&xe->iow);
        if (xp_has_wake(xe))
            ust_iow_del(&xe->wiow);
    }
    qprocsoff(rq); /* no procedure of ours runs any more */
    if (xe->bufc != 0)
        qunbufcall(rq, xe->bufc);
    /* The look: none starts once wclosing is seen; one running is waited
     * out (it may have started another, cancelled in the next round). */
    atomic_store(&xe->wclosing, 1);
    for (;;) {
        timeout_id_t wt = atomic_exchange(&xe->wtid, 0);
        if (wt != 0)
            quntimeout(WR(rq), wt);
        if (wt == 0 && atomic_load(&xe->win) == 0 && atomic_load(&xe->wtid) == 0)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    timeout_id_t rt = atomic_exchange(&xe->rtid, 0);
    if (rt != 0)
        quntimeout(rq, rt);
    flushq(WR(rq), FLUSHALL);
    __atomic_store_n(&rq->q_ptr, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&WR(rq)->q_ptr, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&sd->sd_xend, NULL, __ATOMIC_RELEASE);
    xring_set_peer(xe->xc->ch, xe->side, -1); /* before its descriptor goes */
    ust_xbell_close(&xe->bell); /* the last of side xe->side: the peer hangs up */
    xp_xchan_rele(xe->xc);
    free(xe);
}

/* ------------------------------------------------------------------------ */
/* fork                                                                     */
/* ------------------------------------------------------------------------ */
void ust_xpipe_fork_prepare(void)
{
    ust_pipe_split_all();
    ust_threads_settle(200); /* one the split started is past its start-up */
    ust_lock(&xp_lock);
}

/* The ends split just before the fork are watched, and look at their rings,
 * now (end_watch). */
static void kick_split_locked(void)
{
    UST_ASSERT_HELD(&xp_lock);
    for (struct ust_xend *xe = ends; xe != NULL; xe = xe->next) {
        if (!xe->kick)
            continue;
        xe->kick = 0;
        if (iow_both(xe) != 0)
            atomic_store(&xe->gone, 1); /* no epoll: the end hangs up */
        qenable(xe->rq);
    }
}

void ust_xpipe_fork_parent(void)
{
    kick_split_locked();
    ust_unlock(&xp_lock);
}

void ust_xpipe_split_now(void)
{
    ust_pipe_split_all();
    ust_lock(&xp_lock);
    kick_split_locked();
    ust_unlock(&xp_lock);
}

/* One descriptor of the child's table: if it names a split end inherited
 * from the parent, rebuild that end (once per inherited head; the new head
 * is remembered in the old end's `rq` slot, which the child never uses). */
struct rebuild {
    struct ust_xend *old;
    struct stdata *sd;  /* the child's new head */
    struct ust_xend *xe;
    int ufd;            /* its readiness pair's U (to close at the end) */
};

struct rebuild_set {
    struct rebuild *r;
    int n, cap;
};

static struct rebuild *rebuild_find(struct rebuild_set *set, struct ust_xend *old)
{
    for (int i = 0; i < set->n; i++)
        if (set->r[i].old == old)
            return &set->r[i];
    return NULL;
}

static void rebuild_fd(int fd, struct stdata *old, void *arg)
{
    struct rebuild_set *set = arg;
    struct ust_xend *oxe = old->sd_xend;
    struct rebuild *rb;

    if (oxe == NULL || !ust_sd_forked(old))
        return;
    rb = rebuild_find(set, oxe);
    if (rb == NULL) {
        if (set->n == set->cap) {
            int cap = set->cap ? 2 * set->cap : 16;
            struct rebuild *r = realloc(set->r, cap * sizeof(*r));
            if (r == NULL)
                return; /* stays detached (EIO), as before this existed */
            set->r = r;
            set->cap = cap;
        }
        rb = &set->r[set->n];
        memset(rb, 0, sizeof(*rb));
        rb->old = oxe;
        rb->ufd = -1;
        queue_t *drv;
        struct xchan *xc = NULL;
        for (int i = 0; i < set->n && xc == NULL; i++) /* the other end's, if rebuilt */
            if (set->r[i].old->xc == oxe->xc)
                xc = set->r[i].xe->xc;
        if (xc == NULL) {
            xc = calloc(1, sizeof(*xc));
            if (xc == NULL)
                return;
            xc->ch = oxe->xc->ch; /* the parent's handle, copied: immutable */
            xc->wake[0] = oxe->xc->wake[0]; /* inherited descriptors */
            xc->wake[1] = oxe->xc->wake[1];
            atomic_store(&xc->refs, 0);
        }
        atomic_fetch_add(&xc->refs, 1); /* held while this end is built */
        rb->sd = ust_pipe_end_new(&old->sd_cred, &drv);
        rb->xe = rb->sd != NULL ? xp_end_new(xc, oxe->side, oxe->bell.fd) : NULL;
        if (rb->xe == NULL && atomic_load(&xc->refs) == 1)
            xc->wake[0] = xc->wake[1] = -1; /* the copy goes; its descriptors are
                                             * the old channel's, closed below */
        xp_xchan_rele(xc);
        if (rb->xe == NULL) {
            ust_sd_free(rb->sd); /* never entered anywhere */
            return;
        }
        xp_end_attach(rb->sd, rb->xe);
        /* The same stream in the child: its read and write options too (the
         * old head's words, copied by the fork, are read as they are). */
        rb->sd->sd_rdopt = old->sd_rdopt;
        rb->sd->sd_wropt = old->sd_wropt;
        rb->sd->sd_oflag = old->sd_oflag;
        set->n++;
    }
    if (ust_sd_fork_rebind(fd, rb->sd, &rb->ufd) != 0)
        return; /* stays the detached stream's: EIO */
}

/*
 * ust_xpipe_fork_child -- the child's split ends (sd_fork.c, after the
 *   inherited streams were detached and the tables reset; one thread).
 *   Each inherited split end held by a descriptor gets a new head over the
 *   same channel and bell; the bells of ends the child does not hold are
 *   closed (so that their peers see the child's share of them go).
 */
void ust_xpipe_fork_child(void)
{
    struct rebuild_set set = {NULL, 0, 0};
    struct ust_xend *old = ends;

    ends = NULL;
    ust_lock_init(&xp_lock);
    ust_sd_fd_each(rebuild_fd, &set);
    for (struct ust_xend *xe = old; xe != NULL; xe = xe->next) {
        ust_xbell_forget_fds(&xe->bell); /* the parent's to receive */
        if (rebuild_find(&set, xe) == NULL) {
            xring_set_peer(xe->xc->ch, xe->side, -1); /* the handle is shared */
            close(xe->bell.fd);
        }
    }
    /* The wake pairs of channels the child holds no end of: closed, once
     * (the parent's xchan copies are the child's memory: marked). */
    for (struct ust_xend *xe = old; xe != NULL; xe = xe->next) {
        int held = 0;
        for (int i = 0; i < set.n && !held; i++)
            held = set.r[i].old->xc == xe->xc;
        for (int i = 0; !held && i < 2; i++)
            if (xe->xc->wake[i] >= 0) {
                close(xe->xc->wake[i]);
                xe->xc->wake[i] = -1;
            }
    }
    for (int i = 0; i < set.n; i++) {
        struct rebuild *rb = &set.r[i];
        if (rb->ufd >= 0)
            close(rb->ufd); /* the pair's U, dup'ed onto each descriptor */
        ust_sd_register(rb->sd);
        if (xp_end_watch(rb->xe, 1) != 0)
            atomic_store(&rb->xe->gone, 1);
    }
    free(set.r);
}

/* ust_xpipe_dump -- the split ends of this process, for a test that waited
 * too long (tests/test_fork_stress.c).  Context: any thread. */
void ust_xpipe_dump(FILE *f);
void ust_xpipe_dump(FILE *f)
{
    ust_lock(&xp_lock);
    for (struct ust_xend *xe = ends; xe != NULL; xe = xe->next) {
        queue_t *rq = xe->rq;
        fprintf(f,
                "xpipe end %p side %d: live %d gone %d backlog %d hup %d; ring in %u out %u; "
                "rq flags %#x first %p, wq flags %#x first %p\n",
                (void *)xe, xe->side, atomic_load(&xe->live), atomic_load(&xe->gone),
                atomic_load(&xe->backlog), xe->hup_sent, xring_queued(xe->xc->ch, !xe->side),
                xring_queued(xe->xc->ch, xe->side), (unsigned)rq->q_flag, (void *)rq->q_first,
                (unsigned)WR(rq)->q_flag, (void *)WR(rq)->q_first);
        for (queue_t *q = rq->q_next; q != NULL; q = q->q_next)
            fprintf(f, "  up: %s flags %#x count %zu first %p; its write side flags %#x count %zu\n",
                    q->q_qinfo && q->q_qinfo->qi_minfo ? q->q_qinfo->qi_minfo->mi_idname : "?",
                    (unsigned)q->q_flag, (size_t)q->q_count, (void *)q->q_first,
                    (unsigned)WR(q)->q_flag, (size_t)WR(q)->q_count);
    }
    ust_unlock(&xp_lock);
}
