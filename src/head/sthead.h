/* SPDX-License-Identifier: MIT */
/*
 * sthead.h -- the stream head: private structure and internal contracts.
 *
 * The stream head is the queue pair at the top of every stream plus struct
 * stdata, which holds what the system-call interface needs: options, errors,
 * the waiters, the signal registrations, the ioctl in progress, and the
 * descriptor.  Files of src/head/ each own one concern:
 *   sd_fd.c     descriptor table, readiness socket, lookup/reference
 *   sd_calls.c  calls in progress: per-thread slots, membarrier at teardown
 *   sd_wait.c   waiting on a wait point (futex), spinning first
 *   sd_open.c   strm_open, name resolution, sharing, the table of streams
 *   sd_plumb.c  I_PUSH/I_POP: pushing and popping modules
 *   sd_close.c  strm_close, teardown: close-time drain, waiting for calls
 *   sd_rput.c   the head's queue pair and read put procedure (what arrives)
 *   sd_ready.c  readiness tokens, the write side's relief, ust_sd_lockq
 *   sd_read.c   reading a byte stream: read/readv, M_READ (helpers: sd_readq.h)
 *   sd_getmsg.c reading whole messages: getmsg/getpmsg, I_PEEK, I_NREAD, FIONREAD
 *   sd_readcalls.c  strm_read/readv, getmsg/getpmsg: the system-call entry points
 *   sd_write.c  writing: packetization, flow control, the split pipe's ring
 *   sd_writecalls.c  strm_write/writev, putmsg/putpmsg: the system-call entry points
 *   sd_hold.c   write holding (SNDHOLD): the held block and its timer
 *   sd_ioctl.c  strm_ioctl: the dispatcher and the I_* done at the head
 *   sd_iocproto.c  the M_IOCTL/M_COPY* protocol: I_STR, transparent ioctls
 *   sd_poll.c   strm_poll, I_SETSIG registrations and signal delivery
 *   sd_pipe.c   strm_pipe, the close of a pipe end, I_SENDFD's delivery
 *   sd_passfd.c I_SENDFD/I_RECVFD
 *   sd_fattach.c  fattach/fdetach in this process (the rendezvous that
 *               serves a name to other processes is src/procs/)
 *   sd_procs_hook.c  the table of hooks through which the head reaches the
 *               cross-process layer, src/procs/ (sd_procs.h)
 *   sd_access.c the access mode (O_RDONLY/O_WRONLY/O_RDWR) of each descriptor
 *   sd_state.c  the hang-up and M_ERROR rules of every call, in one table
 *   sd_arrive.c arrivals: a module-free pipe's writer puts data straight at the
 *               reading head, small writes coalesced with their boundaries kept
 *   sd_fifo.c   FIFOs: a pipe end looped onto itself, the open rules, the keyed
 *               table (mkfifo nodes); private header sd_fifo.h
 *
 * Lock order: sd_plumb (plumbing, may sleep) > sd_lock > the arrival lock
 * (sd_ar.lock) > queue locks.  sd_lock
 * is never held across putnext or a module procedure, and never while
 * waiting (ust_sd_wait drops it).  Two stream heads' sd_locks are never held
 * together (a pipe end takes its peer's lock only after dropping its own).
 */
#ifndef UST_STHEAD_H
#define UST_STHEAD_H

#include <stdint.h>
#include <stropts.h>
#include <sys/ioctl.h> /* FIONREAD */
#include <sys/uio.h>
#include <ustreams.h>

#include "sd_ucopy.h"
#include "strcore.h"

/* sd_flag bits (guarded by sd_lock) */
#define STRHUP 0x0001     /* M_HANGUP arrived: reads return 0, writes ENXIO */
#define STRDERR 0x0002    /* read error set by M_ERROR (sd_rerror) */
#define STWRERR 0x0004    /* write error set by M_ERROR (sd_werror) */
#define STRCLOSE 0x0008   /* the stream is being closed */
#define STPLEX 0x0010     /* linked under a multiplexer: no I/O */
#define STRMREAD 0x0020   /* SO_MREADON: send M_READ before blocking a read */
#define STRNDELON 0x0040  /* SO_NDELON: non-blocking writes ignore flow control (TTY) */
#define STRISTTY 0x0080   /* SO_ISTTY */
#define STRDELIM 0x0100   /* SO_DELIM: messages are delimited */
#define STRTOSTOP 0x0200  /* SO_TOSTOP */
#define STRHOLD 0x0400    /* SO_STRHOLD: the module allows write holding */
#define STRPIPE 0x0800    /* one end of a pipe */
#define STRFIFO 0x1000    /* a FIFO */
#define STWOPEN 0x2000    /* an open is in progress */
#define STRATTACH 0x4000  /* fattach-ed to a name */
#define STRMPRI 0x8000    /* reserved */

/* Default limits (streamio(7) and Linux Fast-STREAMS defaults). */
#define UST_STRHIGH 65536     /* head read queue high-water mark */
#define UST_STRLOW 16384      /* head read queue low-water mark */
/* A pipe end's head read queue in one process (strm_pipe, FIFOs): larger,
 * chosen by measurement (bench/README.md "Pipe water marks", 2026-11-28:
 * 4 KiB writes 1.3x, 64 KiB 2.4x against 64/16 KiB, small writes
 * unchanged).  An end split across processes goes back to UST_STRHIGH/LOW
 * (sd_xpipe.c xp_end_attach). */
#define UST_PIPE_HIWAT 262144
#define UST_PIPE_LOWAT 65536
#define UST_STRMSGSZ 262144   /* largest data part of a write/putmsg */
#define UST_STRCTLSZ 4096     /* largest control part of putmsg */
#define UST_NSTRPUSH 64       /* most modules on one stream */
#define UST_CLTIME_MS 15000   /* default close-time drain (I_SETCLTIME) */
#define UST_IOCTIME_S 15      /* default I_STR timeout */
#define UST_HOLDSZ 32768       /* SNDHOLD: writes of at most UST_FASTBUF bytes gather in a block this big */

struct ust_sigreg {
    struct ust_sigreg *next;
    pid_t pid;        /* process to signal */
    int events;       /* S_* */
};

/* A futex-based wait point: waits are interrupted by signals the way blocking
 * system calls are (EINTR unless the handler has SA_RESTART). */
struct ust_waitq {
    atomic_uint seq;      /* bumped by every wake */
    atomic_int waiters;   /* threads registered to sleep and not yet woken (sd_fd.c,
                           * ust_sd_wake): a wake makes no system call at 0 */
    atomic_int poller;    /* a channel reader's eventfd + 1, or 0 (sd_chan.c) */
};

/* A FIFO's descriptors (sd_fifo.c, sd_access.c).  ff_isfifo is set before
 * the stream has its first descriptor and stays while it lives.  The counts
 * are written under sd_access.c's count lock (each descriptor counted once,
 * by the mode it was opened with) and read anywhere; a change is announced
 * under sd_lock (ust_fifo_announce), so a waiter testing them under sd_lock
 * never misses it.  All atomics. */
struct ust_fifo_state {
    int ff_isfifo;       /* 1: this stream is a FIFO */
    int ff_readers;      /* descriptors open for reading (O_RDONLY, O_RDWR) */
    int ff_writers;      /* descriptors open for writing (O_WRONLY, O_RDWR) */
    unsigned ff_ropens;  /* readers ever counted: a blocked writer's open ends when it moves */
    unsigned ff_wopens;  /* writers ever counted (also: a writer has been, for POLLHUP) */
    struct ust_waitq ff_owait; /* opens waiting for the other side (sd_fifo.c) */
};

/* Arrivals (sd_arrive.c): data a writer of a module-free pipe put straight
 * at this (the reading) head, not yet on the head read queue.  Everything in
 * it is newer than every band-0 message on the read queue. */
#define UST_CACHELINE 64 /* see "Layout" above struct stdata */

struct ust_arrivals {
    ust_lock_t lock; /* guards the fields below; below sd_lock, above queue locks */
    mblk_t *last;    /* LOCK: newest arrival (NULL: none) */
    size_t bytes;    /* LOCK: data bytes in the list */
    size_t room;          /* LOCK: bytes deposits may add before the next absorb
                           * (the head read queue's high-water mark less its count,
                           * at the last absorb) */
    int sleepy;           /* LOCK: a reader found nothing and may sleep: the next
                           * deposit wakes sd_rwait */
    int lazy;             /* LOCK (read without it, relaxed, by depositors): the
                           * readable token may be owed -- deposits need not find it
                           * shown (sd_tokpay.c) */
    /* LOCK: band-0 M_DATA messages, oldest first (b_next).  Also read without
     * the lock (acquire) as a hint, by a dry reader in a spin: on a line of
     * its own, which a writer appending to `last` does not touch. */
    _Alignas(UST_CACHELINE) mblk_t *first;
    /* The lazy token's debt (sd_tokpay.c), relaxed atomics, on the line of
     * `first`, which a depositor writes when it makes `first` (the moment it
     * owes) and the reader when it absorbs: data may be readable while the
     * token is not shown.  Set by a depositor linking into an empty list
     * without the token, and by a read that leaves data; cleared when the
     * reader runs dry or the token is paid. */
    int owed;
    unsigned dry_gen;     /* bumped by a dry reader that cleared `owed` */
};

/* Where this head's writes may be deposited (sd_arrive.c): the read queue
 * of a pipe peer's head, its private part and its head, as found under
 * plumbing generation gen (q NULL: no such path under gen). */
struct ust_sd_dpath {
    queue_t *q;
    struct stdata *rsd;
    unsigned long gen;
    int valid;            /* the fields above were filled in */
};

/* Layout: what the threads on the two sides of a stream write sits on cache
 * lines of its own (UST_CACHELINE), so that a writer feeding this head and
 * the reader draining it do not pull each other's lines: sd_lock (the reader,
 * and callers on this stream), sd_ar (a pipe's writers), sd_rwait (bumped by every writer's wake-up),
 * sd_wwait (by the reader's back-enables), sd_calls (every call on this
 * descriptor).  The fields the writers' fast path only reads (sd_rtoken,
 * sd_mread_sent, sd_sigflags) change on edges only.  Heads are allocated
 * aligned (ust_sd_alloc). */

struct stdata {
    queue_t *sd_rq;              /* head read queue (q_ptr == this) */
    queue_t *sd_wq;              /* head write queue */
    ust_lock_t sd_plumb;         /* serializes open/close/push/pop/link of this stream */
    _Alignas(UST_CACHELINE) ust_lock_t sd_lock; /* guards every field tagged LOCK */
    /* The write snapshot (sd_write.c, "The write snapshot"): a write that
     * took the deposit path found every check passed at sd_lock's taking
     * sd_wsnap_takes, for writes of at most sd_wsnap_max bytes.  LOCK
     * (atomic): read without it by the writes that follow. */
    unsigned long sd_wsnap_takes;
    size_t sd_wsnap_max;
    int sd_wsnap_how; /* UST_WSNAP_*: the path the snapshot allows */
    /* The read snapshot (sd_read.c, "The read snapshot"): a read under
     * sd_lock found, at its taking sd_rsnap_takes, every check a small
     * byte-stream read makes passed.  LOCK (atomic): read without it. */
    unsigned long sd_rsnap_takes;
    _Alignas(UST_CACHELINE) struct ust_waitq sd_rwait; /* readers: data, M_ERROR, M_HANGUP, close */
    _Alignas(UST_CACHELINE) struct ust_waitq sd_wwait; /* writers: back-enable, M_ERROR, M_HANGUP,
                                                         * close */
    struct ust_waitq sd_iwait;   /* ioctls: the one-at-a-time slot and the reply */
    _Alignas(UST_CACHELINE) struct ust_arrivals sd_ar; /* writers of a module-free pipe */
    _Alignas(UST_CACHELINE) atomic_int sd_calls; /* system calls in progress on this stream */
    atomic_int sd_refs;          /* descriptors (fd table entries) + peer + fattach */
    int sd_forked;               /* atomic: inherited through fork(), detached (sd_fork.c) */

    uint_t sd_flag;              /* LOCK: STR* */
    int sd_rerror;               /* LOCK: read error (M_ERROR), 0 none */
    int sd_werror;               /* LOCK: write error (M_ERROR), 0 none */
    int sd_rdopt;                /* LOCK: read mode and protocol options (RNORM...) */
    int sd_wropt;                /* LOCK: SNDZERO/SNDPIPE/SNDHOLD */
    int sd_erropt;               /* LOCK: RERR* and WERR* options */
    int sd_oflag;                /* LOCK: O_NONBLOCK/O_NDELAY of the stream (the access
                                  * mode is each descriptor's: sd_access.c) */
    ushort_t sd_wroff;           /* LOCK: write offset (SO_WROFF) */
    ssize_t sd_maxblk;           /* LOCK: largest block for writes (SO_MAXBLK), INFPSZ */
    long sd_closetime;           /* LOCK: close-time drain, ms */
    int sd_pushcnt;              /* sd_plumb: modules pushed */
    int sd_anchor;               /* sd_plumb: I_ANCHOR position (modules below can't be popped) */

    struct ust_sigreg *sd_siglist; /* LOCK: I_SETSIG registrations */
    int sd_sigflags;             /* LOCK: union of the registered events */

    /* ioctl in progress (one per stream) */
    int sd_iocbusy;              /* LOCK: an ioctl holds the slot */
    uint_t sd_iocid;             /* LOCK: id of the ioctl in progress */
    mblk_t *sd_iocblk;           /* LOCK: the reply (M_IOCACK/NAK/COPYIN/COPYOUT) */

    struct ust_sd_dpath sd_dpath; /* LOCK: deposit path cache (sd_arrive.c) */

    /* write holding (SNDHOLD) */
    mblk_t *sd_hold;             /* LOCK: held M_DATA being coalesced */
    long long sd_holdtime;       /* LOCK (atomic): hold timer state, see sd_hold.c */

    /* flow control seen by the head: bit b set when a write, putpmsg or
     * poll found band b full; cleared (and S_OUTPUT / S_WRBAND raised) when
     * the band is writable again (sd_rput.c).  Atomic, no lock. */
    uint64_t sd_wfull[4];

    /* read state */
    int sd_rmark;                /* LOCK: marks (MSGMARK) seen */
    int sd_mread_sent;           /* LOCK: an M_READ is outstanding */

    /* readiness socket (sd_fd.c) */
    int sd_lfd;                  /* library end as a descriptor, or -1 (sd_lend.c) */
    int sd_lslot;                /* library end as a fixed file of the ring, or -1 */
    unsigned long long sd_lino;  /* inode and device of sd_lfd (sd_lend.c checks them */
    unsigned long long sd_ldev;  /* before each use: a program may have closed it) */
    int sd_ufd;                  /* a user descriptor of the stream (tokens); checked by
                                  * identity before each use (sd_fd.c, "close(2)") */
    unsigned long long sd_uino;  /* inode and device of the user end (identity) */
    unsigned long long sd_udev;
    struct stdata *sd_stale_next; /* sd_fd.c's tab_lock: on the list of orphans to release */
    int sd_rtoken;               /* LOCK: readable token is set */
    int sd_wblock;               /* LOCK: writable is withdrawn */
    int sd_ptoken;               /* LOCK: priority (POLLPRI) token is set */
    int sd_hupset;               /* LOCK: hang-up shown */
    int sd_tlazy;                /* LOCK: sd_ar.lazy as set (always under sd_lock):
                                  * the reader's copy, off the writers' line */
    int sd_tokexact;             /* LOCK: sticky: watched by a library poll (or
                                  * non-blocking, I_SETSIG): never owe the readable
                                  * token (sd_tokpay.c) */
    /* The token payer's (sd_tokpay.c), under its pay_lock. */
    struct stdata *sd_tp_next;   /* on the payer's list */
    int sd_tp_listed;            /* atomic (written under pay_lock): on the list */
    int sd_tp_seen_owed;         /* the debt seen at the last tick ... */
    unsigned sd_tp_seen_gen;     /* ... under this dry generation */
    int sd_tp_idle;              /* ticks since the last debt */
    mblk_t *sd_urec;             /* LOCK: records written on U with write(2), taken
                                  * from L, not yet delivered (b_next; sd_urec.c) */
    int sd_urec_flags;           /* LOCK: UST_UREC_* (sd_urec.c) */
    int sd_urec_queued;          /* urec_lock (sd_urec.c): on the pending list */
    struct stdata *sd_urec_next; /* urec_lock: the pending list */

    /* identity */
    struct ust_modent *sd_driver; /* the driver at the bottom */
    dev_t sd_dev;                /* device number of the open */
    cred_t sd_cred;              /* credentials of the opener */
    struct stdata *sd_peer;      /* other end of a pipe (a reference) */
    queue_t *sd_pipeq;           /* fixed: a pipe end's pipe pair (read queue), else NULL */
    struct ust_xend *sd_xend;    /* pipe_lock: a pipe end split across processes
                                  * (sd_xpipe.c), else NULL */
    int sd_xused;                /* atomic: this process used this pipe end (a data,
                                  * ioctl or poll call): it takes what arrives for it
                                  * once split (sd_xpipe.c "Who takes") */
    struct stdata *sd_xlnext;    /* pipe_lock: list of connected pipe ends (sd_pipe.c) */
    struct stdata **sd_xlprev;   /* pipe_lock: where this end is linked from, or NULL */
    struct stdata *sd_next;      /* free list / registry link */
    struct stdata **sd_regprev;  /* tab_lock: the registry link pointing at it, NULL
                                  * when not registered (sd_open.c) */
    struct share_ent *sd_share;  /* tab_lock: its share-table entry, or NULL (sd_open.c) */
    char sd_name[64];            /* name it was opened by, for I_LOOK-like tools */
    struct ust_fifo_state sd_ff; /* a FIFO's readers and writers (sd_fifo.h) */
    /* Units the reader of this head freed, for its pipe writers' next blocks
     * (mblk.c "Hand-back"; sd_arrive.c "Blocks handed back"): atomic slots,
     * on a line of their own; emptied when the arrivals are discarded.  Last,
     * so that adding it moved no field before it. */
    struct ust_spare sd_spare;
};

/* ---- sd_fd.c: descriptors, lookup, readiness, waiting ---- */

/* Allocate a stream head: zeroed stdata with its locks and waits initialized,
 * and the head queue pair (ust_sd_headinit in sd_rput.c) with procedures on.
 * NULL on ENOMEM. */
struct stdata *ust_sd_alloc(void);
/* Free a stream head (queues must be unlinked; no descriptor left). */
void ust_sd_free(struct stdata *sd);

/* Create the readiness socket pair and enter the user end in the descriptor
 * table.  Returns the descriptor or -errno (EMFILE, ENFILE, ENOMEM). */
int ust_sd_attach_fd(struct stdata *sd);
/* Enter another descriptor for the same stream (dup, I_RECVFD). -errno. */
int ust_sd_dup_fd(struct stdata *sd);
/* The same, with the lowest acceptable number and close-on-exec choice (F_DUPFD). */
int ust_sd_dup_fd_min(struct stdata *sd, int minfd, int cloexec);
/* The same into a descriptor the caller reserved (I_RECVFD): slot or -errno. */
int ust_sd_dup_fd_into(struct stdata *sd, int slot);

/* Inode and device of fd (fstat): 0, or -1 if fd is not open. */
int ust_file_id(int fd, unsigned long long *ino, unsigned long long *dev);
/* The library's end L of the readiness pair (sd_lend.c); sd_lock held,
 * except ust_lend_close of a head being freed and ust_lend_reap. */
void ust_lend_adopt(struct stdata *sd, int lfd); /* take lfd as L and watch it */
int ust_lend_held(const struct stdata *sd);
int ust_lend_send(struct stdata *sd, const void *buf, size_t len, int flags); /* n or -errno */
/* One record from L into buf (MSG_DONTWAIT | flags): its length (with
 * MSG_TRUNC, the record's whole length), 0 (a zero-length record, or U
 * closed), or -errno (-EAGAIN: none). */
int ust_lend_recv(struct stdata *sd, void *buf, size_t len, int flags);
void ust_lend_shutdown(struct stdata *sd);
void ust_lend_close(struct stdata *sd);
/* Call fn for each stream whose L saw its user end close (or hang up);
 * streams whose L received a record are handed to ust_sd_urec_note. */
void ust_lend_reap(void (*fn)(struct stdata *sd));
/* Look at the watches without reaping: records are noted, close reports
 * kept for the next ust_lend_reap.  Any thread, no lock held. */
void ust_lend_poll_records(void);
/* The same after waiting at most ms: for the epoll set's first event where
 * plain L ends exist (a record or a close wakes it), else a sleep.  The
 * watch thread's pause (sd_watch.c). */
void ust_lend_wait_records(int ms);
/* ust_lend_reports_pending -- 1 if a watch may have fired since the last
 *   ust_lend_reap (a completion not yet consumed in the ring's shared
 *   memory, or a report kept), else 0 (also without a ring).  Any thread, no
 *   lock, no system call: three loads. */
int ust_lend_reports_pending(void);
/* 1 if L ends live in the ring (a stream costs one descriptor). */
int ust_lend_ring_on(void);
void ust_lend_fork_prepare(void);
void ust_lend_fork_parent(void);
void ust_lend_fork_child(void);
void ust_lend_forget(struct stdata *sd); /* child: an inherited stream's L */
/* Remove fd from the table and close it; returns the stream's remaining
 * descriptor references (0: the caller tears the stream down), or -EBADF if fd
 * is not a descriptor of sd (nothing is closed then). */
int ust_sd_detach_fd(int fd, struct stdata *sd);

/* Look up fd and count a call in progress (sd_calls).  On failure returns NULL
 * with *err = EBADF (not open), ENOSTR (open but not a stream) or EIO (a
 * stream inherited through fork(), detached: sd_fork.c).
 * Every successful ust_sd_get is paired with ust_sd_put. */
struct stdata *ust_sd_get(int fd, int *err);
void ust_sd_put(struct stdata *sd);
/* Calls in progress (sd_calls.c): ust_sd_call_begin counts one on sd, in
 * the thread's call slot or in sd_calls (the caller then checks that the
 * descriptor table still names sd); ust_sd_call_end ends it.
 * ust_sd_calls_fence, once the table names sd no more, makes every slot
 * store before it visible (membarrier); ust_sd_calls_in is then the number
 * of calls in progress on sd.  ust_sd_calls_fork_child: sd_fd.c's hook. */
void ust_sd_call_begin(struct stdata *sd);
void ust_sd_call_end(struct stdata *sd);
void ust_sd_calls_fence(void);
int ust_sd_calls_in(const struct stdata *sd);
void ust_sd_calls_fork_child(void);
/* The stream of fd without counting a call (for isastream); NULL if none. */
struct stdata *ust_sd_peek(int fd);

/* ---- descriptors closed behind the library's back (sd_fd.c, "close(2)") ---- */
/* 1 if fd still names sd's user end (fstat identity), else 0.  A system call. */
int ust_sd_fd_is(int fd, struct stdata *sd);
/* Remove fd from the table without closing it (the number is no longer the
 * stream's); returns the references left, or -EBADF if fd is not sd's slot. */
int ust_sd_forget_fd(int fd, struct stdata *sd);
/* ust_sd_forget_fd of a slot found stale, if it still is under the table's
 * lock (fstat identity): -EBADF leaves a slot that names sd's U again. */
int ust_sd_forget_stale_fd(int fd, struct stdata *sd);
/* ust_sd_get, then make sure fd still names the stream: a slot left by
 * close(2) is dropped (the stream released if it was its last descriptor) and
 * fd is treated as the descriptor it now is.  For the calls that may already
 * make a system call (ioctl, fcntl, poll, close). */
struct stdata *ust_sd_get_checked(int fd, int *err);
/* The check of ust_sd_get_checked on a stream sd got from fd (NULL passes
 * through); on a stale slot, sd's call is put and NULL returned. */
struct stdata *ust_sd_recheck(int fd, struct stdata *sd, int *err);
/* Drop the stale slot fd of sd (sd_close.c): forget it and, if it was the
 * last descriptor, release the stream without the close-time wait.  Takes
 * tab_lock, under which it checks the slot's identity again (a new stream
 * may have the same head and descriptor by then); call with no lock held. */
void ust_sd_drop_stale(int fd, struct stdata *sd);
/* Release sd, which has no descriptor left (sd_close.c): as a non-blocking
 * last close (no close-time wait: nobody is there to wait). */
void ust_sd_release_orphan(struct stdata *sd);
/* Release every stream whose user descriptors were all closed with close(2)
 * (seen as a hang-up on the library's end); called by strm_open, strm_pipe
 * and isastream.  No lock held. */
void ust_sd_reap_orphans(void);
/* ust_sd_notice_closes -- ust_sd_reap_orphans if the ring says a descriptor
 *   of some stream may have been closed behind the library's back
 *   (ust_lend_reports_pending); otherwise nothing, at the cost of three
 *   loads.  Run at the start of every call that takes a descriptor (no lock
 *   held), so that a close(2) the kernel has reported is seen before the
 *   number is looked up. */
void ust_sd_notice_closes(void);

/* Readiness of the descriptor, sd_lock held.  Each call makes a system call
 * only on an edge. */
void ust_sd_ready_read(struct stdata *sd, int on);
void ust_sd_ready_write(struct stdata *sd, int on);
void ust_sd_ready_pri(struct stdata *sd, int on);
void ust_sd_ready_hup(struct stdata *sd);
void ust_sd_wready_after_write(struct stdata *sd); /* sd_poll.c: POLLOUT follows flow */

#include "sd_urec.h" /* records written on the descriptor with write(2) */

/* Wait on w with sd_lock held (dropped while waiting, retaken after).
 * deadline_ns: absolute CLOCK_MONOTONIC time, or 0 for none.
 * Returns 0 (woken, maybe spuriously: recheck), EINTR (a signal handler ran
 * and the wait is not restarted: always for timed waits, otherwise unless the
 * handler has SA_RESTART), ETIME (deadline passed). */
int ust_sd_wait(struct stdata *sd, struct ust_waitq *w, long long deadline_ns);
void ust_sd_wake(struct ust_waitq *w);
/* Lost wake-ups: a wake made by a thread that does not hold sd_lock (flow
 * control relief: the back-enable hook) can fall between the caller's test and
 * ust_sd_wait.  Such waiters capture the sequence BEFORE testing:
 *     unsigned seq = ust_sd_wait_seq(w);  if (!ready) ust_sd_wait_from(sd, w, seq, dl);
 * ust_sd_wait(sd, w, dl) is ust_sd_wait_from with the sequence read inside. */
/* FUTEX_WAKE the threads asleep on w, if any, leaving its sequence alone. */
void ust_sd_wake_sleepers(struct ust_waitq *w);
unsigned ust_sd_wait_seq(struct ust_waitq *w);
/* The safety net of untimed waits (sd_watch.c): a waiter registers while it
 * sleeps; one still asleep on the same sequence after UST_WAIT_RECHECK_NS is
 * woken (its sequence unchanged) so that its caller looks again.  A caller
 * that then finds its condition true reports a lost wake-up; the stress
 * tests and perftest require that count to be 0. */
#define UST_WAIT_RECHECK_NS 200000000LL
int ust_sd_watch_enter(struct ust_waitq *w, unsigned seq); /* slot or -1 */
void ust_sd_watch_leave(int slot);
/* A caller woken with nothing changed (its sequence still `slept`) that
 * then finds what it waited for: counted as a lost wake-up unless the
 * sequence moves within UST_WAKE_GRACE_NS (a waker preempted between its
 * change and its wake is late, not lost).  May yield the CPU meanwhile. */
#define UST_WAKE_GRACE_NS 20000000LL
void ust_sd_note_lost_wakeup(struct ust_waitq *w, unsigned slept);
long ust_sd_lost_wakeups(void);
void ust_sd_watch_fork_prepare(void);
void ust_sd_watch_fork_parent(void);
void ust_sd_watch_fork_child(void);
int ust_sd_wait_from(struct stdata *sd, struct ust_waitq *w, unsigned seq, long long deadline_ns);
/* ust_sd_wait_from without deadline for a call that has already done part
 * of its work: EINTR whenever a signal handler runs during the sleep, with
 * or without SA_RESTART (docs/STREAMHEAD.md, "Writing": a write that sent
 * some messages returns their count).  Not on the safety net's list: the
 * sleep itself ends every UST_WAIT_RECHECK_NS (0, as a spurious wake-up). */
int ust_sd_wait_intr(struct stdata *sd, struct ust_waitq *w, unsigned seq);
/* ust_sd_wait_from on sd_rwait for a reader that found the read queue and
 * the arrivals empty (untimed): its spin also watches the arrivals, which it
 * marks sleepy only before it sleeps (sd_arrive.c).  *unwoken: the wait
 * ended with nobody's wake-up (the safety net's: sd_watch.c). */
int ust_sd_wait_data(struct stdata *sd, unsigned seq, int *unwoken);
/* The same without the spin: sleeps at once (a read-fill read lacking more
 * than a spin would see come, sd_read.c). */
int ust_sd_wait_data_nospin(struct stdata *sd, unsigned seq, int *unwoken);

/* 1 if fd is a descriptor of a stream of this process. */
int ust_sd_is_stream_fd(int fd);

/* ---- sd_rput.c: the head queue pair ---- */

/* Set up sd->sd_rq/sd_wq (ust_qalloc of the head streamtab, q_ptr = sd,
 * head_enable hooks, water marks UST_STRHIGH/UST_STRLOW). 0 or ENOMEM. */
int ust_sd_headinit(struct stdata *sd);
/* The stream head of a head queue, or NULL if q is not one. */
struct stdata *ust_sd_of(queue_t *q);

/* ---- sd_ready.c ---- */

/* The head write queue's head_enable hook: the stream below drained to its
 * low-water mark (back-enable).  Wakes writers at once; POLLOUT and the
 * S_OUTPUT/S_WRBAND signals under this head's sd_lock now, or owed to the
 * current ust_sd_lockq section.  Any thread. */
void ust_sd_write_enable(queue_t *q);
/* Take / drop sd_lock around work that may back-enable: getq, rmvq, flushq,
 * flushband on the head read queue.  When the queue drains, the executive
 * back-enables the queue behind it, which for a pipe without modules is the
 * peer head's write queue; its hook then only wakes the peer's writers and
 * owes the rest (readiness, S_OUTPUT) to this thread, which does it in
 * ust_sd_unlockq after dropping sd_lock -- so two heads' sd_locks are never
 * held together.  Plain ust_lock(&sd->sd_lock) is fine for everything else.
 * Not recursive; ust_sd_wait may be called in between (it drops and retakes
 * the lock itself). */
void ust_sd_lockq(struct stdata *sd);
void ust_sd_unlockq(struct stdata *sd);
/* A wait drops sd_lock: the section is paused (1 if it was sd's) and resumed. */
int ust_sd_lockq_pause(struct stdata *sd);
void ust_sd_lockq_resume(struct stdata *sd, int paused);
/* Inside ust_sd_lockq: if relief is owed (see above), drop sd_lock, do it,
 * retake sd_lock and return 1 (the caller rechecks what it saw); else 0.
 * Call before blocking, so that a peer's writer is not kept waiting. */
int ust_sd_settle(struct stdata *sd);
/* Note that the head found band `band` flow controlled (a write, putpmsg or
 * poll was refused): its relief raises S_OUTPUT (band 0) or S_WRBAND.  Any
 * lock may be held; atomic. */
void ust_sd_wfull_note(struct stdata *sd, int band);
/* Recompute the read-side readiness tokens from the head read queue: readable
 * while a normal message waits (or a read error / hang-up), priority while a
 * high-priority message is at the front.  sd_lock held.  Call after removing
 * messages from the head read queue (read, getmsg, I_FLUSH, ...). */
void ust_sd_rready_after_read(struct stdata *sd); /* rready unless moot */
/* The lazy readable token (sd_tokpay.c).  ust_sd_rready_dry: a reader found
 * the read queue and the arrivals empty: leave the token owed-able (lazy)
 * where nobody can be watching, else ust_sd_rready.  ust_sd_tok_leave: a
 * read returns under the lazy mark: owe what it leaves; 1 if handled (the
 * token is not to be moved), 0 (use ust_sd_rready).  ust_sd_tok_exact_now:
 * the stream must show its token exactly (sticky: for ever), paying any
 * debt now.  All with sd_lock held.  ust_sd_tok_forget: the head is freed
 * (no lock held). */
void ust_sd_rready_dry(struct stdata *sd);
int ust_sd_tok_leave(struct stdata *sd);
void ust_sd_tok_exact_now(struct stdata *sd, int sticky);
void ust_sd_tok_forget(struct stdata *sd);
/* What strinfo shows of the readable token: "shown" (on the descriptor),
 * "down" (not shown, exact), "lazy" (not shown, may be owed), "owed" (data
 * readable, shown within a tick or two).  sd_lock held. */
const char *ust_sd_rtoken_state(const struct stdata *sd);
void ust_sd_tok_fork_register(void);
void ust_sd_rready(struct stdata *sd);
/* An ioctl reply (M_IOCACK, M_IOCNAK, M_COPYIN, M_COPYOUT) for this head:
 * if the ioctl in progress (sd_iocbusy) has the reply's id and no reply is
 * waiting, store it in sd_iocblk and wake sd_iwait; otherwise free it (a
 * stale reply).  No lock held; takes sd_lock. */
void ust_sd_ioc_reply(struct stdata *sd, mblk_t *mp);

/* ---- sd_open.c ---- */

/* Open a stream by name (see ustreams.h) and return its descriptor, or -1
 * with errno. Resolves fattach-ed names first (sd_pipe.c). */
int ust_sd_open(const char *path, int oflag, cred_t *cr);
/* Call the open routines of every module (and the driver) of sd again, as
 * a shared reopen does: 0 or an errno (EINVAL linked, EIO hung up or in
 * error, an open routine's).  Takes sd_plumb. */
int ust_sd_reopen(struct stdata *sd, int oflag, cred_t *cr);
/* sd_plumb.c: push module `name` below the head (I_PUSH); 0 or errno (EINVAL unknown or
 * a driver name or past UST_NSTRPUSH, ENXIO open failed / hung up, ...). */
int ust_sd_push(struct stdata *sd, const char *name, cred_t *cr);
/* Pop the topmost module (I_POP); 0 or errno (EINVAL none/anchored). */
int ust_sd_pop(struct stdata *sd, cred_t *cr);
/* The queue just below the head on the write side, for I_LOOK/I_FIND/I_LIST
 * (call under sd_plumb). */
queue_t *ust_sd_top(struct stdata *sd);
/* Credentials of the calling process (euid/egid, real ids, pid). */
void ust_sd_cred(cred_t *cr);
/* The table of open streams, for tools.  strm_open registers its streams;
 * strm_pipe must register its ends; teardown unregisters.  Idempotent.
 * Take no stream head lock around these (tab_lock is above sd_plumb). */
void ust_sd_register(struct stdata *sd);
void ust_sd_unregister(struct stdata *sd);
/* Call fn(sd, arg) for every registered stream, under the table lock: fn may
 * take sd_lock or queue locks to look, must not open/close/push/pop. */
void ust_sd_foreach(void (*fn)(struct stdata *sd, void *arg), void *arg);

/* ---- sd_close.c, and what sd_open.c shares with it ---- */
/* Last reference gone: drain the write side for the close time, pop every
 * module, close the driver, flush, free. */
void ust_sd_teardown(struct stdata *sd);
/* tab_lock (sd_open.c), which guards the table of streams and the share
 * table: taken by strm_close across ust_sd_detach_fd and by ust_sd_teardown.
 * Taken with no stream head lock held; above sd_plumb, sd_lock and the
 * descriptor table lock. */
void ust_sd_tab_lock(void);
void ust_sd_tab_unlock(void);
/* A share table entry (sd_open.c): a device opened without cloning. */
struct share_ent;
/* The teardown of sd begins: mark sd's share table entry CLOSING, waking the
 * openers that wait for the device to settle, and return it (NULL if sd was
 * opened by cloning or is a pipe end).  tab_lock held. */
struct share_ent *ust_sd_share_closing(struct stdata *sd);
/* Unlink entry s from the share table, free it and wake the waiting openers.
 * tab_lock held. */
void ust_sd_share_remove(struct share_ent *s);
/* Take sd out of the table of streams (the locked half of
 * ust_sd_unregister; idempotent).  tab_lock held. */
void ust_sd_unregister_locked(struct stdata *sd);
/* Take rq's queue pair out of the stream (procedures off, unlinked) and free
 * it: after a failed open, a pop, or a close routine ran.  sd_plumb held. */
void ust_sd_pair_remove(queue_t *rq);

/* ---- sd_open.c: the autopush hook (sad(7); issue 4) ---- */
/*
 * ust_sd_autopush_fn -- push the modules configured for (major, minor) on
 *   the new stream sd, in order.  Returns 0 (also when none are configured)
 *   or the errno of the push that failed, after popping the ones pushed
 *   before it; the open then fails with it.
 *   Context: blocking; called by the open that built sd, after the driver's
 *   open succeeded, with no lock held (each push takes sd_plumb).
 */
typedef int (*ust_sd_autopush_fn)(struct stdata *sd, major_t major, minor_t minor, cred_t *cr);

/*
 * ust_sd_set_autopush -- install the autopush hook, a hook of the layer
 *   above: the administration layer installs ust_autopush_apply (its table,
 *   src/admin/autopush.c) at library start (src/admin/start.c).  With none
 *   installed (or fn NULL) an open pushes nothing, as with an empty table.
 *   Context: any thread (a release store; open loads it with acquire).
 */
void ust_sd_set_autopush(ust_sd_autopush_fn fn);

/* ---- sd_open.c: the publish hook (issue 13: tools see every process) ---- */
/*
 * ust_sd_publish_fn -- the process's first stream is being made: publish
 *   the process for the tools (src/admin/publish.c starts its socket).
 *   Called at the start of every strm_open and strm_pipe, so it must be a
 *   load and a test once it has run; it never fails the call.
 *   Context: the opening thread, no lock held; may make system calls and
 *   start a thread the first time (per process: again in a fork child).
 */
typedef void (*ust_sd_publish_fn)(void);

/* ust_sd_set_publish -- install the publish hook (src/admin/start.c); NULL
 *   or none: nothing is published.  Any thread (release store). */
void ust_sd_set_publish(ust_sd_publish_fn fn);
/* ust_sd_publish -- run the publish hook, if any (strm_open, strm_pipe). */
void ust_sd_publish(void);

/* ---- sd_read.c ---- */
/* read(2)/readv(2) on the stream.  iov is the caller's (already copied in)
 * array; the buffers are user addresses (ust_copyout).  Blocking; no lock
 * held.  Returns the byte count or -errno: EINVAL (STPLEX, total > SSIZE_MAX),
 * EFAULT, EAGAIN, EINTR, EBADMSG, or the M_ERROR read error. */
ssize_t ust_sd_read(struct stdata *sd, const struct iovec *iov, int iovcnt);
/* Send M_READ (a long: the count wanted) downstream if SO_MREADON or RMREAD
 * asks for it: a reader is about to block.  sd_lock NOT held (taken briefly,
 * then the message is sent with a claim on sd_wq). */
void ust_sd_mread(struct stdata *sd, size_t count);

/* ---- sd_getmsg.c ---- */
/* getpmsg: *flagsp is MSG_HIPRI, MSG_ANY or MSG_BAND (with *bandp), set on
 * return to MSG_HIPRI or MSG_BAND (and *bandp to the band).  ctl/data are the
 * caller's strbufs already copied in (NULL: part not wanted); their buf
 * members are user addresses; len is set on return.  Blocking; no lock held.
 * Returns >= 0 (0, MORECTL|MOREDATA) or -errno (EINVAL, EAGAIN, EINTR,
 * EBADMSG for M_PASSFP, EFAULT, the read error). */
int ust_sd_getpmsg(struct stdata *sd, struct strbuf *ctl, struct strbuf *data, int *bandp,
                   int *flagsp);
/* I_PEEK: pk copied in, its bufs user addresses; flags 0 or RS_HIPRI (else
 * -EINVAL).  Never blocks; takes only the read queue's lock, so sd_lock may
 * or may not be held.  1 found (pk filled in), 0 none, -EBADMSG (M_PASSFP at
 * the front), -EFAULT. */
int ust_sd_peek_msg(struct stdata *sd, struct strpeek *pk);
/* I_NREAD: number of messages; *bytes = data bytes of the first.  Takes only
 * the read queue's lock (sd_lock may or may not be held). */
int ust_sd_nread(struct stdata *sd, int *bytes);
/* FIONREAD: data bytes of all messages at the head.  Locks as I_NREAD. */
size_t ust_sd_fionread(struct stdata *sd);

/* ---- sd_arrive.c: arrivals (sd_arrive.h) ---- */
#include "sd_arrive.h"

/* ---- sd_write.c ---- */
ssize_t ust_sd_write(struct stdata *sd, const struct iovec *iov, int iovcnt);
/* The same for one buffer (write(2)): no iovec to copy in (sd_write.c). */
ssize_t ust_sd_write_buf(struct stdata *sd, const void *buf, size_t count);
/* putpmsg: 0 or -errno.  Also used by I_FDINSERT with the prepared control. */
int ust_sd_putpmsg(struct stdata *sd, const struct strbuf *ctl, const struct strbuf *data,
                   int band, int flags);
/* Wait until the write side can take a message of band `band` (flow control),
 * honouring O_NONBLOCK (EAGAIN), errors and hang-up.  sd_lock held. 0/errno. */
int ust_sd_wait_writable(struct stdata *sd, int band, int nonblock);
/* The write error to report now (M_ERROR, hang-up ENXIO, STPLEX EINVAL), 0 if
 * none; raises SIGPIPE when SNDPIPE asks for it.  sd_lock held. */
int ust_sd_write_error(struct stdata *sd);

/* The write side's pieces that sd_hold.c shares (sd_write.c owns them). */

/* A cursor over the caller's iovecs; each element is copied in (ust_copyin)
 * before use, so a bad array pointer is EFAULT, not a crash. */
struct ust_sd_uio {
    const struct iovec *iov; /* the caller's array */
    int iovcnt;
    int idx;          /* next element to load */
    struct iovec cur; /* what is left of the current element */
};
/* sd_uio.c.  Check the caller's array (iovcnt elements at the user address
 * iov) and total its lengths into *total, u at its start: 0, EFAULT or
 * EINVAL (more than IOV_MAX elements, a negative count, more than SSIZE_MAX
 * bytes). */
int ust_sd_uio_init(struct ust_sd_uio *u, const struct iovec *iov, int iovcnt, size_t *total);
/* Copy the next n bytes of u into dst.  Never blocks; any lock may be held.
 * 0 or EFAULT (a bad buffer, or fewer bytes than the array said). */
int ust_sd_uio_copy(struct ust_sd_uio *u, unsigned char *dst, size_t n);
/* u over the one buffer buf of len bytes (one: the element's storage). */
void ust_sd_uio_single(struct ust_sd_uio *u, struct iovec *one, const void *buf, size_t len);

/* What a write needs of the stream, read under sd_lock (a snapshot). */
struct ust_sd_wparams {
    int nonblock;
    int hold; /* holding enabled: SNDHOLD or SO_STRHOLD */
    int sndzero;
    int ndelon; /* SO_NDELON: a flow-controlled non-blocking write returns 0 */
    size_t wroff;
    size_t maxblk; /* largest data block, SIZE_MAX for no limit */
    ssize_t minpsz, maxpsz;
};
/* The result of a write that stopped with err after `sent` bytes: the
 * partial count if anything went, else -err (0 for SO_NDELON's EAGAIN). */
ssize_t ust_sd_wresult(size_t sent, int err, const struct ust_sd_wparams *p);
/* putnext of mp from sd_wq under a claim.  No lock held. */
void ust_sd_send(struct stdata *sd, mblk_t *mp);

/* ---- sd_hold.c: write holding (SNDHOLD) ---- */
/* sd_holdtime encodes the hold timer's state (see sd_hold.c): 0 no timer
 * armed and nothing held; otherwise the even part is when the timer was last
 * armed, and bit UST_HOLD_BUSY is set while a held message is in transit
 * (taken out of sd_hold, its putnext not yet returned).  Written only by
 * sd_hold.c, always with atomics. */
#define UST_HOLD_BUSY 1LL
/* Is a held message in transit?  Every writer waits (on sd_wwait) while it
 * is, so that its data goes after the held data.  sd_lock held. */
static inline int ust_sd_hold_busy(struct stdata *sd)
{
    return (__atomic_load_n(&sd->sd_holdtime, __ATOMIC_ACQUIRE) & UST_HOLD_BUSY) != 0;
}
/* Outcomes of ust_sd_hold_write. */
enum { UST_HW_DONE = 1, UST_HW_AGAIN, UST_HW_NORMAL };
/* Keep a small write (0 < total < UST_FASTBUF, total <= cap) in the hold,
 * arming the hold timer; cap is the most the held block may gather.  sd_lock
 * held, no hold in transit; may wait for flow control unless p->nonblock.
 * UST_HW_DONE: done, *res is write(2)'s result, sd_lock released.
 * UST_HW_AGAIN: look at the stream again (the held block could not take
 * this write and was sent, or another writer got in), sd_lock held.
 * UST_HW_NORMAL: send it as a normal message (no memory for a hold), sd_lock
 * held, nothing held. */
int ust_sd_hold_write(struct stdata *sd, struct ust_sd_uio *u, size_t total, size_t cap,
                      const struct ust_sd_wparams *p, ssize_t *res);
/* Send mp, just taken out of sd_hold by the caller, marking the hold in
 * transit meanwhile; waiting writers are woken.  sd_lock held on entry and
 * return, dropped across the putnext. */
void ust_sd_hold_send_locked(struct stdata *sd, mblk_t *mp);
/* Send the held message (SNDHOLD) downstream now, if any, and stop the hold
 * timer; waits while another thread's held message is in transit.  No lock
 * held.  After the last close's call no timer refers to sd. */
void ust_sd_flush_hold(struct stdata *sd);
/* M_READ came up sd: send what sd holds now, without waiting for a held
 * message in transit and leaving the hold timer armed (sd_hold.c). */
void ust_sd_hold_release(struct stdata *sd);

/* ---- sd_ioctl.c ---- */
/* Perform ioctl `cmd` with argument `arg` on the stream; returns the ioctl's
 * non-negative return value, or -errno. */
int ust_sd_ioctl(struct stdata *sd, unsigned long cmd, void *arg);

/* ---- sd_iocproto.c: the downstream ioctl protocol ---- */
/* I_STR: the strioctl at user address arg goes down as an M_IOCTL (taking the
 * stream's ioctl slot, waiting ic_timout seconds for each reply); on M_IOCACK
 * the reply data is copied back to ic_dp and ic_len set.  Blocking; no lock
 * held.  Returns ioc_rval (>= 0) or -errno: EINVAL, EFAULT, ETIME, EINTR,
 * ENXIO, the M_ERROR error, the M_IOCNAK's error. */
int ust_sd_i_str(struct stdata *sd, void *arg);
/* A request the head does not know: a TRANSPARENT M_IOCTL carrying arg itself,
 * served with M_COPYIN/M_COPYOUT until acknowledged (UST_IOCTIME_S per
 * reply).  Blocking; no lock held.  Returns ioc_rval (>= 0) or -errno as
 * ust_sd_i_str. */
int ust_sd_ioc_transparent(struct stdata *sd, unsigned long cmd, void *arg);
/* Send mp down from the head under a claim on its write queue (also used for
 * I_FLUSH's M_FLUSH).  No lock held (putnext runs the modules). */
void ust_sd_ioc_send(struct stdata *sd, mblk_t *mp);
/* (sd_state.c) The error that stops an ioctl acting below the head now, 0
 * if none: ust_sd_state_error(sd, UST_RULE_DOWN, 0) -- EBADF closing, EINVAL
 * linked, the M_ERROR errors, ENXIO hung up.  sd_lock held (asserted). */
int ust_sd_ioc_error(struct stdata *sd);

/* ---- sd_link.c: multiplexing ---- */
/* I_LINK (persistent 0) / I_PLINK (1) of the stream of descriptor fd under
 * the multiplexing driver of sd: the multiplexer id or -errno. */
int ust_sd_link(struct stdata *sd, int fd, int persistent);
/* I_UNLINK (persistent 0) / I_PUNLINK (1) of muxid or MUXID_ALL: 0/-errno. */
int ust_sd_unlink(struct stdata *sd, int muxid, int persistent);
/* Teardown of a controlling stream: unlink its ordinary links. */
void ust_sd_unlink_all(struct stdata *sd);
/* -EINVAL for an ioctl other than I_UNLINK/I_PUNLINK on a linked (STPLEX)
 * stream, else 0. */
int ust_sd_plex_ioctl(struct stdata *sd, unsigned long cmd);

/* 1 if the top module of sd is `name` (sd_plumb taken briefly). */
int ust_sd_top_is(struct stdata *sd, const char *name);

/* ---- sd_poll.c ---- */
/* Deliver signals for events (S_*) to the registered processes; band is the
 * band of an arriving message (S_BANDURG).  sd_lock held. */
void ust_sd_sendsig(struct stdata *sd, int events, unsigned char band, int signo);
/* The poll(2) events of the stream now (POLLIN, POLLRDNORM, POLLRDBAND, POLLPRI,
 * POLLOUT, POLLWRNORM, POLLWRBAND, POLLERR, POLLHUP, POLLMSG).  sd_lock held. */
short ust_sd_pollmask(struct stdata *sd, short want);
/* Register or remove I_SETSIG events for the calling process. 0 or errno. */
int ust_sd_setsig(struct stdata *sd, int events);
int ust_sd_getsig(struct stdata *sd, int *events);

/* ---- sd_pipe.c ---- */
/* A pipe end's write side ends in a "pipe" queue pair (procedures off, so
 * messages pass through it) whose write queue is cross-connected to the other
 * end's pipe pair: sd_wq -> [modules] -> pipe wq -> peer's pipe rq -> [peer's
 * modules] -> peer's sd_rq.  The pipe pair is not a module (sd_pushcnt does
 * not count it) nor a driver (sd_driver is NULL); plumbing an end touches only
 * its own queues. */
/* Called by ust_sd_teardown (sd_close.c) for a STRPIPE end instead of closing a
 * driver, after every module of this end was popped, sd_plumb held: unlink
 * this end from its peer (M_HANGUP to the peer, the twist cut, waiting for a
 * concurrent close of the peer to finish with our queues) and free the pipe
 * pair; afterwards sd_wq->q_next is NULL and only the head remains to free. */
void ust_pipe_teardown(struct stdata *sd);
/* I_SENDFD: 0 or errno (EINVAL not a pipe, EBADF, ENXIO, EAGAIN, EMFILE).
 * I_RECVFD: 0 with *rf filled (kernel memory: the caller copies it out), or
 * errno (EBADMSG, EAGAIN, ENXIO, EINTR, EMFILE).  Calls on sd in progress. */
int ust_sd_sendfd(struct stdata *sd, int fd);
/* ust_sd_sendfd_cred -- I_SENDFD with the credentials given (connld: the
 *   client's, from the kernel); cross 0 refuses a pipe split across
 *   processes (ENXIO) instead of passing over it. */
int ust_sd_sendfd_cred(struct stdata *sd, int fd, uid_t uid, gid_t gid, int cross);
int ust_sd_recvfd(struct stdata *sd, struct strrecvfd *rf);
/* A descriptor of sd closed with `left` references remaining: free the
 * M_PASSFPs of sd on its own read queue if they are all that keeps it.  The
 * caller counts a call on sd (sd_calls); this ends it. */
void ust_sd_passfp_cycle(struct stdata *sd, int left);
/* Put mp on the read queue of sd's pipe peer (I_SENDFD): 0, ENXIO, EAGAIN
 * (mp freed on error). */
int ust_pipe_put_peer(struct stdata *sd, mblk_t *mp);
/* ust_pipe_peer_gone -- 1 if pipe end sd is no longer joined to its other
 * end in this process: its peer closed (the pair was broken before the
 * peer's M_HANGUP was sent, so a hang-up seen at sd with this 0 came from a
 * module or driver), or the pipe is split across processes (where the hang-up
 * is the far side's last close).  0 while the peer is connected.
 * Context: any thread; takes pipe_lock (a leaf), so sd_lock may be held. */
int ust_pipe_peer_gone(struct stdata *sd);
/* A stream reference that is not a descriptor: taken unless sd has none
 * left (1 if taken); dropped from any context, the last one tearing the
 * stream down on a thread of its own. */
int ust_sd_hold_live(struct stdata *sd);
void ust_sd_rele_deferred(struct stdata *sd);
/* Drop such a reference, no lock held: the last tears the stream down. */
void ust_sd_rele(struct stdata *sd);

/* ---- across processes: fork, split pipes, passed descriptors ---- */
#include "sd_procs.h"

/* ---- sd_access.c: the access mode of each descriptor ---- */
#define UST_ACC_NOREAD 1  /* opened O_WRONLY: read, getmsg... fail EBADF */
#define UST_ACC_NOWRITE 2 /* opened O_RDONLY: write, putmsg... fail EBADF */
/* The UST_ACC_* bits of open flags (O_ACCMODE part). */
int ust_sd_acc_of_oflag(int oflag);
/* Record the mode of a stream descriptor just made, before its number is
 * returned to the program; a FIFO's descriptor is counted by it (and the
 * change announced: sd_fifo.h).  0 or ENOMEM.  Any thread; no stream head
 * lock held. */
int ust_sd_acc_set(int fd, int acc);
/* The UST_ACC_* bits of fd (0: read and write), and as O_ACCMODE flags. */
int ust_sd_acc_get(int fd);
int ust_sd_acc_oflag(int fd);
/* fork child: re-initialise the lock of the FIFO counts (sd_access.c). */
void ust_sd_acc_fork_child(void);
/* ust_sd_get, failing EBADF also when fd's mode has a bit of `need`
 * (UST_ACC_NOREAD for a read, UST_ACC_NOWRITE for a write). */
struct stdata *ust_sd_get_acc(int fd, int need, int *err);

/* ---- sd_state.c: the stream-state rules (docs/STREAMHEAD.md) ---- */
enum {
    UST_RULE_FREE,  /* never stopped by the state (identification; calls applying their own rule) */
    UST_RULE_OPT,   /* the head's options: only closing (EBADF) and linked (EINVAL) */
    UST_RULE_RDERR, /* read-side ioctls: the read error */
    UST_RULE_ERR,   /* queries and head options: either M_ERROR error */
    UST_RULE_DOWN,  /* requests acting below the head: either error, hang-up ENXIO */
    UST_RULE_READ,  /* read, getmsg: the read error (hang-up: end of file) */
    UST_RULE_WRITE, /* write, putmsg: the write error, hang-up ENXIO (EPIPE: a pipe whose peer closed) */
    UST_RULE_WOPT,  /* I_SWROPT: closing, linked and the hang-up (ENXIO), not M_ERROR */
};
/* The error that stops a call of `rule` on sd now, 0 if none: EBADF (being
 * closed), EINVAL (linked), the read error, the write error, ENXIO/EPIPE
 * (hung up), in that order, each only if the rule says so.  consume: a
 * non-persistent error reported is cleared.  sd_lock held (asserted). */
int ust_sd_state_error(struct stdata *sd, int rule, int consume);
/* The rule of ioctl request cmd, and in *acc (may be NULL) the UST_ACC_*
 * bits that make it fail EBADF on a descriptor opened without them. */
int ust_sd_ioc_rule(unsigned long cmd, int *acc);

#include "sd_fifo.h"
#endif /* UST_STHEAD_H */
