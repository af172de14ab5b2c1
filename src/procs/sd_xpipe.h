/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe.h -- private to sd_xpipe.c (split, close, fork),
 * sd_xpipe_write.c (write side), sd_xpipe_read.c (read side) and
 * sd_xpipe_far.c (ends for another process): the state of a pipe end split
 * across processes.  The picture is at the top of sd_xpipe.c.
 */
#ifndef UST_SD_XPIPE_H
#define UST_SD_XPIPE_H

#include <stdatomic.h>

#include "io_watch.h"
#include "sd_xbell.h"
#include "sthead.h"
#include "xring.h"

enum {
    /* Chosen by measurement (bench/README.md "Between processes, small
     * writes", 2026-11-27): high-water marks of 128, 256, 512 KiB and 1 MiB
     * tried, interleaved, perftest --procs: 4 KiB writes 0.93x / 1.62x /
     * 2.54x pipe(2) (a second round 1.01x / 1.61x / 2.29x for 256 KiB /
     * 512 KiB / 1 MiB), 64 KiB 0.53x / 0.90x / 1.23x (0.56x / 0.85x /
     * 1.38x), no difference at 1-128 B.  A bigger mark means fewer writer
     * sleeps per byte (each costs a doorbell through the peer's epoll
     * thread): at 128 KiB a 64 KiB writer slept every second write.  512 KiB
     * meets the 4 KiB target in every round; 1 MiB would double what a
     * busy pipe keeps resident for some 40 % more at 64 KiB.  The ring holds
     * the high-water mark plus the largest record (XP_MAXPSZ), rounded to a
     * power of two.  Pages are touched only as used (and stay, per ring, up
     * to the mark plus a record).  USTREAMS_XPIPE_HIWAT overrides it. */
    XP_HIWAT = 512 * 1024, /* the ring: 1 MiB, the low-water mark 128 KiB
                            * (sd_xpipe.c xp_geometry) */
    XP_HIWAT_MIN = 16 * 1024,      /* USTREAMS_XPIPE_HIWAT's range */
    XP_HIWAT_MAX = 16 * 1024 * 1024,
    XP_MAXPSZ = 128 * 1024, /* largest message written (the head splits writes) */
    XP_SMALL = 1024,        /* records of at most this many data bytes: sd_arrive.c's coalescing */
    XP_DIRECT_MAX = 64 * 1024, /* largest write copied straight into the ring (ust_xpipe_write) */
    XP_IOV = 32,          /* blocks of one message written in one record */
    XP_BATCH = 64,        /* small records taken at one hold of the ring's lock */
    XP_BATCH_BYTES = 4096, /* their data bytes at most */
    XF_DATA = 1,          /* the record has a data part (even an empty one) */
    XP_RSRV_ROUNDS = 16,  /* rounds of one read service run that find "data there"
                           * yet take nothing, at most (then a look again in a tick) */
    XP_TAKE_TRIES = 64,   /* peek/take races in one record_take, at most */
    /* What the read side holds in this process (docs/SECURITY.md, "What
     * crosses a split pipe"): records other than band-0 small data stop
     * being taken from the ring when the queue above (the head's read
     * queue) holds XP_HOLD_MAX bytes, all bands and high priority together,
     * or XP_HOLD_MSGS messages; taking resumes when it has drained below
     * the low marks (back-enabled: hold_full in sd_xpipe_read.c). */
    XP_HOLD_MAX = 1024 * 1024,
    XP_HOLD_LOW = 512 * 1024,
    XP_HOLD_MSGS = 4096,
    XP_HOLD_MSGS_LOW = 2048,
    XP_PASS_STREAM = 2,   /* an M_PASSFP record of a stream: two descriptors, the
                           * access mode in flags bits 8-9 (sd_xpipe.c sendfd_stream) */
};

#define XP_PASS_BELL 0x80000000u /* token bit: the bell end of a stream passed */

/* A channel as this process holds it: shared by its local ends. */
struct xchan {
    struct xring_chan *ch;
    atomic_int refs; /* local ends */
    int wake[2];     /* fixed: the wake pair (sd_xbell.c "Doorbells"), a socket pair
                      * whose two ends every holder of either pipe end keeps:
                      * holders of end s watch wake[s] and never read it; a byte
                      * sent on wake[s] wakes every holder of end !s.  -1, -1: a
                      * channel made for another process (sd_xpipe_far.c), whose
                      * doorbells go on the bell instead */
};

struct ust_xend {
    struct ust_xend *next, **prev; /* xp_lock: on `ends` */
    struct xchan *xc;
    int side;                      /* this end writes ring `side`, reads ring !side */
    struct ust_xbell bell;         /* this process's bell end `side` (sd_xbell.c) */
    queue_t *rq;                   /* the pipe pair's read queue */
    struct ust_iow iow;            /* bell watched: qenable(rq) */
    struct ust_iow wiow;           /* wake[side] watched: qenable(rq) (none without a
                                    * wake pair) */
    atomic_int warmn;              /* bytes unread on wake[side] when the write service
                                    * procedure last armed the ring (wsrv_again: a change
                                    * is a doorbell that came) */
    atomic_int gone;               /* the peer side's bell read end-of-file */
    atomic_int live;               /* this process takes from the ring (see "Who takes") */
    atomic_int readers;            /* readers of this process spinning on the empty head:
                                    * they arm the ring themselves before sleeping */
    int hup_sent;                  /* read service procedure only */
    int rtry;                      /* read service procedure only: this run is on a caller's
                                    * thread (inside a call): the ring's consumer lock is
                                    * only tried, never waited for (xring_take_try...) */
    int rbusy;                     /* read service procedure only: a try met the lock held
                                    * (nothing taken): look again in a tick */
    size_t up_bytes;               /* read service procedure only: at most XP_HOLD_MAX... */
    unsigned up_msgs;              /* ...: bytes and messages sent up since the queue above
                                    * was last counted (hold_full): a bound on what it holds
                                    * besides band-0 small data */
    atomic_int backlog;            /* messages on the write queue or being written */
    atomic_long drops;             /* write-side messages dropped because the other side
                                    * was gone or the ring broken (a writer waiting in
                                    * ust_xpipe_sent tells from it whether its own went) */
    atomic_int hwant;              /* the head's writers wait for room in the ring (a write
                                    * or putmsg met it full: ust_xpipe_send, ust_xpipe_room);
                                    * the write service procedure arms the ring for them and
                                    * clears it when there is room, enabling hwq */
    atomic_int hdrain;             /* a head's writer that sent through a module waits for
                                    * this end's backlog to reach 0 (ust_xpipe_sent); the
                                    * write service procedure clears it once its queue is
                                    * empty, enabling hwq */
    queue_t *hwq;                  /* the head's write queue (fixed from the attach): its
                                    * enabling wakes the head's writers (sd_write_enable) */
    bufcall_id_t bufc;             /* read service procedure (and the close): a qbufcall waits */
    _Atomic timeout_id_t wtid;     /* a look again at the ring's room is pending (wsrv_again):
                                    * set by the write service procedure or the look, cleared
                                    * by the timeout or the close */
    atomic_int wsleep;             /* the write service procedure armed the ring and left,
                                    * waiting for its doorbell; cleared by its next run */
    int wsuspect;                  /* wsrv_again only: looks in a row that saw the doorbell
                                    * due (room reported) and not come */
    atomic_int wclosing;           /* the close began: wsrv_again sets no new look */
    atomic_int win;                /* wsrv_again runs (the close waits it out) */
    _Atomic timeout_id_t rtid;     /* the read service procedure's look again after a run
                                    * that hit its bound (sd_xpipe_read.c): set by it,
                                    * cleared by the timeout or the close */
    atomic_int rown;               /* who moves records of ring !side up now: 0 nobody, 1 the
                                    * read service procedure, 2 a direct reader
                                    * (sd_xpipe_direct.c); taken by compare-and-swap, never
                                    * waited for */
    atomic_int dsleep;             /* direct readers asleep in their read (sd_xpipe_direct.c):
                                    * the read service procedure wakes them, takes nothing */
    atomic_int dwant;              /* a direct reader met the claim held: the read service
                                    * procedure yields at its next record (and clears it) */
    atomic_int ragain;             /* a run of the read service procedure met a direct
                                    * reader's claim: the reader enables it on release */
    int kick;                      /* xp_lock: split before a fork, not yet looked at */
    int watched;                   /* xp_lock: the bell is registered with the epoll thread */
};

/* A doorbell for the other side (data in our ring, or room in theirs):
 * a byte on the wake pair, which every holder of the other end sees, or,
 * on a channel without one, on the bell (a full bell already rings). */
static inline void xp_bell_ring(struct ust_xend *xe)
{
    if (xe->xc->wake[0] >= 0)
        ust_xbell_knock(xe->xc->wake[xe->side], xe->xc->wake[!xe->side]);
    else if (ust_xbell_ring(&xe->bell) != 0)
        atomic_store(&xe->gone, 1);
}

/* 1 when the channel has a wake pair (doorbells are never consumed by a
 * waiter: no end needs to leave them to another process). */
static inline int xp_has_wake(const struct ust_xend *xe)
{
    return xe->xc->wake[0] >= 0;
}

/* Take what rang our bell; end of file means the peer side is held by no
 * process any more. */
static inline void xp_bell_drain(struct ust_xend *xe)
{
    if (ust_xbell_drain(&xe->bell))
        atomic_store(&xe->gone, 1);
}

/* This process's writers on xe wait for room in the ring: messages on the
 * write queue (backlog) or the head's writers (hwant). */
static inline int xp_writers_wait(struct ust_xend *xe)
{
    return atomic_load(&xe->backlog) > 0 || atomic_load(&xe->hwant);
}

/* The end whose pipe pair q belongs to: set before the procedures are
 * switched on, cleared after they are off (atomically: a writer reaches the
 * procedure through the flag, which TSan does not take for an order). */
static inline struct ust_xend *xp_xend_of(queue_t *q)
{
    return __atomic_load_n(&q->q_ptr, __ATOMIC_ACQUIRE);
}

/* ---- shared by sd_xpipe.c and sd_xpipe_far.c ---- */
/* A channel with new rings (one reference, the maker's), with a wake pair
 * when `wake` (a pipe split at fork; not for one made for another process,
 * which would have no way to get it); NULL with errno set (ENOMEM, EMFILE:
 * no descriptor for the memfd...). */
struct xchan *xp_xchan_new(int wake);
/* Drop a reference; the last unmaps the channel. */
void xp_xchan_rele(struct xchan *xc);
/* A bell socket pair with SO_PASSCRED: 0 or an errno. */
int xp_bell_pair(int b[2]);
/* A wake pair (non-blocking, close-on-exec stream sockets): 0 or an errno. */
int xp_wake_pair(int w[2]);
/* A split end's state for side `side` of xc, bell end `bell` (not yet in
 * use); NULL when out of memory. */
struct ust_xend *xp_end_new(struct xchan *xc, int side, int bell);
/* Make sd's pipe pair the bottom of split end xe: procedures on. */
void xp_end_attach(struct stdata *sd, struct ust_xend *xe);
/* Watch the bell (kick_now 0: just before a fork, deferred to its parent
 * hook); 0 or an errno. */
int xp_end_watch(struct ust_xend *xe, int kick_now);
/* I_SENDFD of stream descriptor fd over split end xe (sd_xpipe_far.c). */
int xp_sendfd_stream(struct ust_xend *xe, int fd, uint32_t token);

/* ---- the entry points of sd_xpipe*.c (also the head's hooks, sd_procs.h) */
/* ---- sd_xpipe.c: the bottom of a pipe end whose peer may be in another
 * process: a ring pair in shared memory (xring.h) and a bell. */
struct ust_xend;
/* I_SENDFD on split end sd: fd passed to the other side's process. */
int ust_xpipe_sendfd(struct stdata *sd, int fd);
/* The pipe pair's procedures (used only once the end is split). */
int ust_xpipe_wput(queue_t *q, mblk_t *mp);
int ust_xpipe_wsrv(queue_t *q);
int ust_xpipe_rput(queue_t *q, mblk_t *mp);
int ust_xpipe_rsrv(queue_t *q);
/* Split the connected pipe (sd[0], sd[1]) (already unlinked from each other
 * by the caller: sd_peer cleared, breaks filed): 0 or a positive errno. */
int ust_xpipe_split(struct stdata *sd[2]);
/* Split every connected pipe of the process now, outside a fork (before an
 * exec: sd_xexec.c), and start watching the new ends at once.  Context: no
 * library lock held; may block (claims drained). */
void ust_xpipe_split_now(void);
/* The first data, ioctl or poll call of this process on split end sd
 * (ust_sd_get_acc, strm_poll, once sd_xused is set): from now on this
 * process takes what arrives for it (see "Who takes" in sd_xpipe.c).
 * strm_close, isastream, fcntl do not count. */
void ust_xpipe_touch(struct stdata *sd);
/* A reader about to sleep on split end sd's empty head (wait_common, no
 * lock held, inside a call): run the read service procedure on this thread
 * now.  1 if it ran (the caller looks at its wait sequence again). */
int ust_xpipe_pull(struct stdata *sd);
/* A reader spinning on split end sd's empty head (wait_common): ENTER
 * before the spin (the read service procedure then leaves the ring unarmed:
 * no doorbell per message while a reader watches); READY tells whether the
 * ring has something (then pull); LEAVE when done, or SLEEP before
 * sleeping: the ring is armed, 1 if something came meanwhile (do not
 * sleep: pull). */
int ust_xpipe_reader(struct stdata *sd, int how);
/*
 * ust_xpipe_write -- a small write(2) of n bytes (at most 1024: one plain
 *   M_DATA message) on
 *   split end sd, copied from u straight into the ring as one record: no
 *   message is built, no put procedure runs.  Taken only when the pipe pair
 *   is right below the head (no module pushed; the plumbing generation is
 *   checked again under the ring's lock, as a deposit does, sd_arrive.c),
 *   nothing of this end waits for room (its write queue is empty) and the
 *   ring has room below its high water mark.
 *   Context: the writer's thread, inside a call, no lock held.
 *   Returns 1 written; 0 not taken, nothing of u consumed (the caller takes
 *   the normal path, which queues, flow-controls and reports errors);
 *   -EFAULT (a bad buffer: nothing written); for a write of any size:
 *   -EIO (the ring is broken), -EPIPE (the peer side is gone, or shut our
 *   ring), -EAGAIN (non-blocking, and the ring's lock is held: xring.h).
 */
int ust_xpipe_write(struct stdata *sd, struct ust_sd_uio *u, size_t n);
/*
 * ust_xpipe_send -- a data message (mp, of write, writev, putmsg, putpmsg)
 *   on split end sd, straight into the ring or not at all: a write on a
 *   split end never returns while its message is only in this process's
 *   memory (docs/STREAMHEAD.md "A write is in the ring when it returns").
 *   Taken when the pipe pair is right below the head (no module pushed).
 *   Context: the writer's thread, inside a call, no lock held; nonblock:
 *   never sleep on the ring's lock.
 *   Returns 1 sent (mp consumed); 0 not taken (a module is pushed, or the
 *   end is not split: the caller sends mp down as usual); -EAGAIN no room
 *   now, or messages of this end wait before it (mp kept: the write service
 *   procedure arms the ring, and its room enables the head's write queue,
 *   which wakes the writers); -EPIPE (the other side is gone), -EIO (the
 *   ring is broken): mp kept, the end hangs up.
 */
int ust_xpipe_send(struct stdata *sd, mblk_t *mp, int nonblock);
/* ust_xpipe_room -- 0 when split end sd (no module pushed) has no room in
 *   its ring for a write now (or messages of this end wait): the head's
 *   write queue is then enabled once it has (as ust_xpipe_send's -EAGAIN);
 *   1 otherwise.  For poll's POLLOUT: it follows the ring. */
int ust_xpipe_room(struct stdata *sd);
/*
 * ust_xpipe_sent -- after a data message of write, writev, putmsg or putpmsg
 *   went down split end sd through a module (ust_xpipe_send said 0): is
 *   anything of this end still in this process's memory below the head
 *   (the pipe pair's write queue: backlog)?  A message held by a module's
 *   own queue or perimeter is the module's and not counted
 *   (docs/STREAMHEAD.md "A write is in the ring when it returns").
 *   Context: the writer's thread, inside a call, no lock held.
 *   Returns 1 nothing waits (or sd is not split); 0 something waits: the
 *   write service procedure enables the head's write queue once the
 *   backlog is 0 (hdrain), which wakes sd_wwait; -EPIPE the other side is
 *   gone (what waits is dropped), -EIO the ring is broken.
 */
int ust_xpipe_sent(struct stdata *sd);
/* A split end's last close (ust_pipe_teardown, sd_plumb held). */
void ust_xpipe_end_close(struct stdata *sd);
/* ust_xpipe_new_end -- a pipe end of this process whose peer end is for
 *   another process: a new channel and bell.  *fd is the end's descriptor
 *   (read and write); *memfd (the channel) and *bell (bell end 1) are what the
 *   other process needs for ust_xpipe_adopt(.., side 1, ..): the caller sends
 *   and closes them.  Returns 0 or an errno (ENOMEM, ENOSR, EMFILE...). */
int ust_xpipe_new_end(const cred_t *cr, int *fd, int *memfd, int *bell);
/* ust_xpipe_adopt -- side `side` of a channel another process made, from its
 *   memfd and bell end as received (every field the mapping holds is checked;
 *   memfd is dup'ed by the channel, bell consumed in all cases): a new pipe
 *   end of this process, opened with cr (NULL: this process's credentials).  Returns its descriptor (read and write), or -errno
 *   (EINVAL: not a channel or not a bell). */
int ust_xpipe_adopt(int memfd, int bell, int side, const cred_t *cr);
/*
 * ust_xpipe_read -- a byte-stream read(2)/readv(2) of up to total bytes on
 *   split end sd that has read nothing yet: the plain band-0 data records at
 *   the front of the ring copied straight into iov (user addresses), one
 *   copy, as many whole records as fit (at most 64).  Taken only for a
 *   read of at least XD_MIN_READ bytes, when this
 *   process reads the end, no module is pushed, the head holds nothing
 *   (its read queue and arrivals empty) and the read service procedure is
 *   not running (the claim, sd_xpipe_direct.c); the ring's lock is only
 *   tried.
 *   Context: the reader's thread, inside a call, sd_lock held.
 *   Returns the bytes read (> 0); 0 nothing this way (the caller reads the
 *   ordinary way: the head, the service procedure, waiting); -EFAULT (a bad
 *   buffer, nothing taken).
 */
int ust_xpipe_read(struct stdata *sd, const struct iovec *iov, int iovcnt, size_t total);
/* The smallest read taken the direct way: a smaller one reads what the read
 * service procedure brought up (docs/STREAMHEAD.md "One copy per side
 * between processes", "Small reads go the batched way"). */
#define XD_MIN_READ 1024
/* ust_xpipe_direct_reads -- how many ust_xpipe_read calls of this thread
 * took data the direct way (tests).  Context: any thread. */
unsigned long ust_xpipe_direct_reads(void);
/* A reader's wait on sd begins (ust_xpipe_reader ENTER): 1 if this thread's
 * last ust_xpipe_read on sd found the ring empty (then cleared), 2 if it
 * met the claim held (the wait then sleeps on the head, which the service
 * procedure wakes as it lets go: xp_rsrv_unclaim), else 0.  With 1 its wait ends when the ring has data, without pulling it up,
 * and while it sleeps (xp_direct_sleeping at SLEEP: counted in xe->dsleep)
 * a doorbell's service procedure wakes it instead of taking the data
 * (xp_direct_wake: 1 woken, the caller takes nothing); a run that yields
 * to a direct reader (dwant) wakes the head's readers with always 1. */
int xp_direct_enter(struct stdata *sd);
int xp_direct_sleeping(void);
int xp_direct_wake(queue_t *q, struct ust_xend *xe, int always); /* always: dsleep or not */
/* The read service procedure's side of the claim (sd_xpipe_direct.c): 1
 * taken; 0 a direct reader holds it (it enables the procedure on release). */
int xp_rsrv_claim(struct ust_xend *xe);
void xp_rsrv_unclaim(queue_t *q, struct ust_xend *xe); /* wakes a reader that met it */
/* fork hooks (rank UST_FORK_XPIPE, registered by sd_fork.c) */
void ust_xpipe_fork_prepare(void);
void ust_xpipe_fork_parent(void);
void ust_xpipe_fork_child(void);
#endif /* UST_SD_XPIPE_H */
