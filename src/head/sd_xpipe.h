/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe.h -- private to sd_xpipe.c (split, write side, close, fork) and
 * sd_xpipe_read.c (read side): the state of a pipe end split across
 * processes.  The picture is at the top of sd_xpipe.c.
 */
#ifndef UST_SD_XPIPE_H
#define UST_SD_XPIPE_H

#include <stdatomic.h>

#include "io_watch.h"
#include "sd_xbell.h"
#include "sthead.h"
#include "xring.h"

enum {
    XP_RING_BYTES = 256 * 1024,
    XP_HIWAT = 64 * 1024,
    XP_LOWAT = 16 * 1024,
    XP_MAXPSZ = 128 * 1024, /* largest message written (the head splits writes) */
    XP_SMALL = 1024,        /* records of at most this many data bytes: sd_arrive.c's coalescing */
    XP_IOV = 32,          /* blocks of one message written in one record */
    XP_BATCH = 64,        /* small records taken at one hold of the ring's lock */
    XP_BATCH_BYTES = 4096, /* their data bytes at most */
    XF_DATA = 1,          /* the record has a data part (even an empty one) */
    XP_RSRV_ROUNDS = 16,  /* rounds of one read service run that find "data there"
                           * yet take nothing, at most (then a look again in a tick) */
    XP_TAKE_TRIES = 64,   /* peek/take races in one record_take, at most */
    XP_PASS_STREAM = 2,   /* an M_PASSFP record of a stream: two descriptors, the
                           * access mode in flags bits 8-9 (sd_xpipe.c sendfd_stream) */
};

#define XP_PASS_BELL 0x80000000u /* token bit: the bell end of a stream passed */

/* A channel as this process holds it: shared by its local ends. */
struct xchan {
    struct xring_chan *ch;
    atomic_int refs; /* local ends */
};

struct ust_xend {
    struct ust_xend *next, **prev; /* xp_lock: on `ends` */
    struct xchan *xc;
    int side;                      /* this end writes ring `side`, reads ring !side */
    struct ust_xbell bell;         /* this process's bell end `side` (sd_xbell.c) */
    queue_t *rq;                   /* the pipe pair's read queue */
    struct ust_iow iow;            /* bell watched: qenable(rq) */
    atomic_int gone;               /* the peer side's bell read end-of-file */
    atomic_int live;               /* this process takes from the ring (see "Who takes") */
    atomic_int readers;            /* readers of this process spinning on the empty head:
                                    * they arm the ring themselves before sleeping */
    int hup_sent;                  /* read service procedure only */
    atomic_int backlog;            /* messages on the write queue or being written */
    bufcall_id_t bufc;             /* read service procedure (and the close): a qbufcall waits */
    _Atomic timeout_id_t wtid;     /* a look again at the ring's room is pending (wsrv_again):
                                    * set by the write service procedure, cleared by the
                                    * timeout or the close */
    _Atomic timeout_id_t rtid;     /* the read service procedure's look again after a run
                                    * that hit its bound (sd_xpipe_read.c): set by it,
                                    * cleared by the timeout or the close */
    int kick;                      /* xp_lock: split before a fork, not yet looked at */
    int watched;                   /* xp_lock: the bell is registered with the epoll thread */
};

/* Ring the other side's bell (a byte; a full bell already rings). */
static inline void xp_bell_ring(struct ust_xend *xe)
{
    if (ust_xbell_ring(&xe->bell) != 0)
        atomic_store(&xe->gone, 1);
}

/* Take what rang our bell; end of file means the peer side is held by no
 * process any more. */
static inline void xp_bell_drain(struct ust_xend *xe)
{
    if (ust_xbell_drain(&xe->bell))
        atomic_store(&xe->gone, 1);
}

/* The end whose pipe pair q belongs to: set before the procedures are
 * switched on, cleared after they are off (atomically: a writer reaches the
 * procedure through the flag, which TSan does not take for an order). */
static inline struct ust_xend *xp_xend_of(queue_t *q)
{
    return __atomic_load_n(&q->q_ptr, __ATOMIC_ACQUIRE);
}

/* ---- shared by sd_xpipe.c and sd_xpipe_far.c ---- */
/* A channel with new rings (one reference, the maker's); NULL: no memory. */
struct xchan *xp_xchan_new(void);
/* Drop a reference; the last unmaps the channel. */
void xp_xchan_rele(struct xchan *xc);
/* A bell socket pair with SO_PASSCRED: 0 or an errno. */
int xp_bell_pair(int b[2]);
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

#endif /* UST_SD_XPIPE_H */
