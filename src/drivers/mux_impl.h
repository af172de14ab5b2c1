/* SPDX-License-Identifier: MIT */
/*
 * mux_impl.h -- private to the mux driver, mux.c and mux_ioctl.c: the
 * records of upper and lower streams, the one lock and the tables it guards,
 * the table lookups, and the fan-out up to routed upper streams (struct
 * mux_ulist) that both the data path (mux.c: what comes up a lower stream)
 * and the unlink (mux_ioctl.c: M_HANGUP to the routed streams) use.
 *
 * The locking rules, busy holds and flow control are described at the top
 * of mux.c ("MT level"); the ioctls at the top of mux_ioctl.c.  The shared
 * variables and functions are hidden (local to the library, as when they
 * were static in one file), so the compiler reaches them directly.
 */
#ifndef UST_MUX_IMPL_H
#define UST_MUX_IMPL_H

#include <pthread.h>
#include <sys/stream.h>

#define MUX_HIDDEN __attribute__((visibility("hidden")))

struct mux_lower {
    struct mux_lower *next; /* mux_lock */
    int muxid;              /* l_index (constant) */
    queue_t *wq;            /* l_qbot, the lower write queue (constant); RD(wq) reads */
    int persistent;         /* linked with I_PLINK (constant) */
    int rblocked;           /* mux_lock: the read side waits for an upper stream to drain */
    int hungup;             /* mux_lock: an M_HANGUP came up */
    timeout_id_t retry;     /* mux_lock: a retry after a failed dupmsg, or 0 */
};

struct mux_upper {
    struct mux_upper *next;  /* mux_lock */
    minor_t minor;           /* constant */
    queue_t *rq;             /* the upper read queue (constant) */
    struct mux_lower *route; /* mux_lock: where writes go, or NULL */
    int wblocked;            /* mux_lock: the write side waits for the lower stream */
    int busy;                /* mux_lock: threads sending up into rq (mux.c, MT level) */
};

/* Defined in mux.c, with the rules of "MT level" there. */
extern pthread_mutex_t mux_lock MUX_HIDDEN;   /* guards the lists and the fields marked above */
extern pthread_cond_t mux_cv MUX_HIDDEN;      /* with mux_lock: a busy count drained */
extern struct mux_upper *mux_uppers MUX_HIDDEN; /* mux_lock: every upper stream */
extern struct mux_lower *mux_lowers MUX_HIDDEN; /* mux_lock: every linked lower stream */

/* The lower stream with write queue wq, or NULL.  mux_lock held. */
static inline struct mux_lower *lower_by_wq(queue_t *wq)
{
    for (struct mux_lower *l = mux_lowers; l != NULL; l = l->next)
        if (l->wq == wq)
            return l;
    return NULL;
}

/* The lower stream with multiplexer id muxid, or NULL.  mux_lock held. */
static inline struct mux_lower *lower_by_id(int muxid)
{
    for (struct mux_lower *l = mux_lowers; l != NULL; l = l->next)
        if (l->muxid == muxid)
            return l;
    return NULL;
}

/* Number of upper streams routed to l.  mux_lock held. */
static inline int nrouted(const struct mux_lower *l)
{
    int n = 0;
    for (struct mux_upper *u = mux_uppers; u != NULL; u = u->next)
        n += u->route == l;
    return n;
}

#define MUX_FANOUT 16 /* routed upper streams handled without an allocation */

/* The upper streams routed to one lower stream, each held busy, with the
 * message (or copy) each is to receive. */
struct mux_ulist {
    int n, cap;
    struct mux_upper **u;
    mblk_t **m;
    struct mux_upper *ubuf[MUX_FANOUT];
    mblk_t *mbuf[MUX_FANOUT];
};

/*
 * mux_ulist_get -- hold (busy) every upper stream routed to l; with unroute,
 *   also remove their routes.  Context: mux_lock held.  Returns 0, or ENOMEM
 *   (nobody held; the routes are removed all the same when unroute).
 */
int mux_ulist_get(struct mux_ulist *ul, struct mux_lower *l, int unroute) MUX_HIDDEN;

/*
 * mux_ulist_put -- drop the busy holds of ul and free its arrays.
 *   Context: no lock held; takes mux_lock.
 */
void mux_ulist_put(struct mux_ulist *ul) MUX_HIDDEN;

/*
 * mux_ulist_copies -- give each held upper stream mp or a copy of it
 *   (dupmsg; the last one gets mp itself).  Context: any; no lock needed.
 *   Returns 0, or ENOMEM: no copies are made then and mp is still the
 *   caller's.
 */
int mux_ulist_copies(struct mux_ulist *ul, mblk_t *mp) MUX_HIDDEN;

/*
 * mux_ulist_send -- send each held upper stream its message (putnext up its
 *   read queue); with flushw, flush its write side afterwards (it hung up).
 *   Context: a procedure of the driver; no lock held.
 */
void mux_ulist_send(struct mux_ulist *ul, int flushw) MUX_HIDDEN;

/*
 * mux_ioctl -- the M_IOCTL that came down upper write queue q: I_LINK,
 *   I_PLINK, I_UNLINK, I_PUNLINK (from the stream head), MUX_ROUTE; anything
 *   else is refused with EINVAL.  Acks or naks mp (consumes it).
 *   Context: the upper write put procedure, no lock held; takes mux_lock.
 *   (mux_ioctl.c)
 */
void mux_ioctl(queue_t *q, mblk_t *mp) MUX_HIDDEN;

#endif /* UST_MUX_IMPL_H */
