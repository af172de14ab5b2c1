/* SPDX-License-Identifier: MIT */
/*
 * mux.c -- "mux", the reference multiplexing driver (in the manner of Linux
 * Fast-STREAMS' /dev/streams/clone/mux).
 *
 * Upper streams are opened as "/dev/streams/clone/mux" (the driver is
 * D_CLONE: every open is a new upper stream).  Lower streams are linked under
 * any of them with I_LINK or I_PLINK; the driver records each by its
 * multiplexer id (linkblk l_index) and lower write queue (l_qbot).  The
 * I_STR ioctl MUX_ROUTE (<sys/mux.h>) routes an upper stream to a lower one:
 *   down: what the upper stream writes goes down that lower stream;
 *   up:   what comes up a lower stream goes to EVERY upper stream routed to
 *         it (a copy each, dupmsg), and waits while any of them is full; a
 *         lower stream that no upper stream is routed to keeps what comes up
 *         (it flow-controls its driver) until one is.
 * An upper stream not routed keeps what is written (its writer blocks when
 * the queue is full) until it is routed.  Unlinking a lower stream, or an
 * M_HANGUP coming up it, sends M_HANGUP to the upper streams routed to it and
 * removes their routes; an M_ERROR coming up is passed to them likewise.
 * Closing an upper stream drops its route.
 *
 * MT level: D_MP.  The driver locks for itself with one lock:
 *   mux_lock guards the lists mux_uppers and mux_lowers and every field of
 *   their entries except the constant ones (minor, rq, muxid, wq).  It is
 *   held across getq/putq/putbq/canput/qenable (which take only queue and
 *   scheduler locks, below it), never across putnext or anything that can
 *   run a module procedure.  mux_cv (with mux_lock) is signalled when an
 *   upper stream's busy count drops to zero.  A thread that sends into an
 *   upper stream's read queue from a lower stream's procedures takes a busy
 *   reference on it under mux_lock while it is listed, sends without the
 *   lock, then drops the reference; the upper stream's close unlists it,
 *   waits for its busy count to drain, and only then turns its procedures
 *   off, so no thread is in its queues when they go (as loop.c does).
 *   The lower queues are found by searching mux_lowers under the lock (never
 *   through q_ptr), so a lower procedure that runs after its unlink finds
 *   nothing and leaves its queue to the stream head, which flushes it.
 *
 * Flow control: every queue has a service procedure.
 *   Down: the upper write put procedure queues (putq); its service procedure
 *   moves messages to the lower write queue only while bcanput allows
 *   (under mux_lock, so a message never lands on a queue being unlinked);
 *   otherwise it marks the upper stream wblocked and stops.  The lower write
 *   service procedure sends down with bcanputnext; when it has emptied its
 *   queue it enables every wblocked upper stream routed to it (nothing above
 *   a lower queue can be back-enabled by the executive).
 *   Up: the lower read put procedure queues; its service procedure sends up
 *   only when every routed upper stream canputnext, else marks the lower
 *   stream rblocked and stops.  An upper read queue is back-enabled when its
 *   stream head drains; its service procedure enables its lower stream's
 *   read queue if it is rblocked.  High-priority messages are never held.
 * M_FLUSH: downstream on an upper stream, FLUSHW flushes the upper write
 *   queue and FLUSHR the upper read queue, then the message is turned around
 *   as a driver does (the lower stream, which other upper streams may share,
 *   is not flushed).  Coming up a lower stream, the driver acts as that
 *   stream's head: FLUSHR flushes the lower read queue, FLUSHW flushes the
 *   lower write queue and sends the message back down with FLUSHR cleared.
 * M_IOCTL: I_LINK, I_PLINK, I_UNLINK, I_PUNLINK (from the stream head),
 *   MUX_ROUTE; anything else is refused with EINVAL.  They are handled in
 *   mux_ioctl.c; the records, the lock's tables and the fan-out up to the
 *   routed upper streams, which both files use, are in mux_impl.h.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "forksafe.h"
#include "mux_impl.h"

#define MUX_ID     5310
#define MUX_NMINOR 65536 /* clone minors 1 .. MUX_NMINOR-1 */

static int mux_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int mux_close(queue_t *q, int oflag, cred_t *crp);
static int mux_uwput(queue_t *q, mblk_t *mp);
static int mux_uwsrv(queue_t *q);
static int mux_urput(queue_t *q, mblk_t *mp);
static int mux_ursrv(queue_t *q);
static int mux_lwsrv(queue_t *q);
static int mux_lwput(queue_t *q, mblk_t *mp);
static int mux_lrput(queue_t *q, mblk_t *mp);
static int mux_lrsrv(queue_t *q);

static struct module_info mux_minfo = {
    .mi_idnum = MUX_ID,
    .mi_idname = "mux",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 8192,
    .mi_lowat = 2048,
};

static struct qinit mux_urinit = {
    .qi_putp = mux_urput,
    .qi_srvp = mux_ursrv,
    .qi_qopen = mux_open,
    .qi_qclose = mux_close,
    .qi_minfo = &mux_minfo,
};

static struct qinit mux_uwinit = {
    .qi_putp = mux_uwput,
    .qi_srvp = mux_uwsrv,
    .qi_minfo = &mux_minfo,
};

static struct qinit mux_lrinit = {
    .qi_putp = mux_lrput,
    .qi_srvp = mux_lrsrv,
    .qi_minfo = &mux_minfo,
};

static struct qinit mux_lwinit = {
    .qi_putp = mux_lwput,
    .qi_srvp = mux_lwsrv,
    .qi_minfo = &mux_minfo,
};

static struct streamtab mux_info = {
    .st_rdinit = &mux_urinit,
    .st_wrinit = &mux_uwinit,
    .st_muxrinit = &mux_lrinit,
    .st_muxwinit = &mux_lwinit,
};

static struct cdevsw mux_cdev = {
    .d_name = "mux",
    .d_str = &mux_info,
    .d_flag = D_MP | D_CLONE,
};

/* The tables (declared in mux_impl.h). */
pthread_mutex_t mux_lock = PTHREAD_MUTEX_INITIALIZER; /* see the MT level above */
pthread_cond_t mux_cv = PTHREAD_COND_INITIALIZER;     /* with mux_lock: busy drained */
struct mux_upper *mux_uppers;                         /* mux_lock */
struct mux_lower *mux_lowers;                         /* mux_lock */

/* Registration from ust_builtin_register. */
void ust_mux_register(void);

/* fork() (src/core/forksafe.h): mux_lock is held briefly and nothing ranked before UST_FORK_DRIVER
 * is taken under it, so it is quiesced.  In the child, the routes join the parent's streams: the
 * tables start empty (the records stay with the parent's streams). */
static void mux_fork_prepare(void)
{
    pthread_mutex_lock(&mux_lock);
}

static void mux_fork_parent(void)
{
    pthread_mutex_unlock(&mux_lock);
}

static void mux_fork_child(void)
{
    mux_uppers = NULL;
    mux_lowers = NULL;
    pthread_cond_init(&mux_cv, NULL);
    pthread_mutex_unlock(&mux_lock);
}

void ust_mux_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, mux_fork_prepare, mux_fork_parent,
                      mux_fork_child);
    int rc = register_strdev(&mux_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "mux: register_strdev failed (%d)", rc);
}

/* ------------------------------------------------------------------------ */
/* Sending up into upper streams                                             */
/* ------------------------------------------------------------------------ */

/* mux_ulist_get -- see mux_impl.h. */
int mux_ulist_get(struct mux_ulist *ul, struct mux_lower *l, int unroute)
{
    int want = nrouted(l), n = want;

    ul->n = 0;
    ul->cap = MUX_FANOUT;
    ul->u = ul->ubuf;
    ul->m = ul->mbuf;
    if (n > MUX_FANOUT) {
        ul->u = kmem_alloc((size_t)n * sizeof(*ul->u), KM_NOSLEEP);
        ul->m = kmem_alloc((size_t)n * sizeof(*ul->m), KM_NOSLEEP);
        if (ul->u == NULL || ul->m == NULL) {
            if (ul->u)
                kmem_free(ul->u, (size_t)n * sizeof(*ul->u));
            if (ul->m)
                kmem_free(ul->m, (size_t)n * sizeof(*ul->m));
            ul->u = ul->ubuf;
            ul->m = ul->mbuf;
            n = 0;
        } else {
            ul->cap = n;
        }
    }
    for (struct mux_upper *u = mux_uppers; u != NULL; u = u->next) {
        if (u->route != l)
            continue;
        if (ul->n < n) {
            ul->u[ul->n] = u;
            ul->m[ul->n++] = NULL;
            u->busy++;
        }
        if (unroute) {
            u->route = NULL;
            u->wblocked = 0;
        }
    }
    return want > 0 && ul->n == 0 ? ENOMEM : 0;
}

/* mux_ulist_put -- see mux_impl.h. */
void mux_ulist_put(struct mux_ulist *ul)
{
    pthread_mutex_lock(&mux_lock);
    for (int i = 0; i < ul->n; i++)
        if (--ul->u[i]->busy == 0)
            pthread_cond_broadcast(&mux_cv);
    pthread_mutex_unlock(&mux_lock);
    if (ul->u != ul->ubuf) {
        kmem_free(ul->u, (size_t)ul->cap * sizeof(*ul->u));
        kmem_free(ul->m, (size_t)ul->cap * sizeof(*ul->m));
    }
}

/* mux_ulist_copies -- see mux_impl.h. */
int mux_ulist_copies(struct mux_ulist *ul, mblk_t *mp)
{
    for (int i = 0; i + 1 < ul->n; i++) {
        ul->m[i] = dupmsg(mp);
        if (ul->m[i] == NULL) {
            for (int j = 0; j < i; j++) {
                freemsg(ul->m[j]);
                ul->m[j] = NULL;
            }
            return ENOMEM;
        }
    }
    if (ul->n > 0)
        ul->m[ul->n - 1] = mp;
    return 0;
}

/* mux_ulist_send -- see mux_impl.h. */
void mux_ulist_send(struct mux_ulist *ul, int flushw)
{
    for (int i = 0; i < ul->n; i++) {
        if (ul->m[i] != NULL)
            putnext(ul->u[i]->rq, ul->m[i]);
        ul->m[i] = NULL;
        if (flushw)
            flushq(WR(ul->u[i]->rq), FLUSHDATA);
    }
}

/*
 * tell_routed -- pass the control message mp (M_HANGUP, M_ERROR) that came
 *   up lower read queue q to every upper stream routed to that lower
 *   stream; with hangup, remove their routes and flush what they still had
 *   to write.  Context: a procedure of the driver, no lock held; takes
 *   mux_lock.  Consumes mp.  Out of memory for the copies, the routes are
 *   still removed (the upper streams then keep what they write until routed
 *   again).
 */
static void tell_routed(queue_t *q, mblk_t *mp, int hangup)
{
    struct mux_ulist ul;
    struct mux_lower *l;

    pthread_mutex_lock(&mux_lock);
    l = lower_by_wq(WR(q));
    if (l == NULL) { /* unlinked meanwhile: the head takes the queue back */
        pthread_mutex_unlock(&mux_lock);
        freemsg(mp);
        return;
    }
    if (hangup)
        l->hungup = 1;
    mux_ulist_get(&ul, l, hangup);
    pthread_mutex_unlock(&mux_lock);
    if (ul.n == 0 || mux_ulist_copies(&ul, mp) != 0)
        freemsg(mp);
    mux_ulist_send(&ul, hangup);
    mux_ulist_put(&ul);
}

/* qtimeout callback: retry the read side of a lower stream after a failed
 * copy. */
static void mux_retry(void *arg)
{
    queue_t *q = arg;

    pthread_mutex_lock(&mux_lock);
    struct mux_lower *l = lower_by_wq(WR(q));
    if (l != NULL) {
        l->retry = 0;
        qenable(q);
    }
    pthread_mutex_unlock(&mux_lock);
}

/* ------------------------------------------------------------------------ */
/* Open and close (upper streams)                                            */
/* ------------------------------------------------------------------------ */

static int minor_used(minor_t m)
{
    for (struct mux_upper *u = mux_uppers; u != NULL; u = u->next)
        if (u->minor == m)
            return 1;
    return 0;
}

static int mux_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    static minor_t last_minor; /* mux_lock: the minor given last */
    struct mux_upper *u;
    minor_t minor = getminor(*devp);

    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0; /* reopen */
    if (sflag != DRVOPEN && sflag != CLONEOPEN)
        return ENXIO;
    u = kmem_zalloc(sizeof(*u), KM_NOSLEEP);
    if (u == NULL)
        return ENOMEM;
    pthread_mutex_lock(&mux_lock);
    if (sflag == CLONEOPEN) {
        int tries = 0;
        do {
            last_minor = last_minor + 1 >= MUX_NMINOR ? 1 : last_minor + 1;
        } while (minor_used(last_minor) && ++tries < MUX_NMINOR);
        if (tries >= MUX_NMINOR) {
            pthread_mutex_unlock(&mux_lock);
            kmem_free(u, sizeof(*u));
            return ENXIO;
        }
        minor = last_minor;
        *devp = makedevice(getmajor(*devp), minor);
    }
    u->minor = minor;
    u->rq = q;
    u->next = mux_uppers;
    mux_uppers = u;
    pthread_mutex_unlock(&mux_lock);
    q->q_ptr = u;
    WR(q)->q_ptr = u;
    qprocson(q);
    return 0;
}

/* Unlist the upper stream, let its lower stream's read side go on if it
 * waited for this one, wait until nobody sends into it, then turn its
 * procedures off (see the MT level above). */
static int mux_close(queue_t *q, int oflag, cred_t *crp)
{
    struct mux_upper *u = q->q_ptr;

    (void)oflag;
    (void)crp;
    pthread_mutex_lock(&mux_lock);
    for (struct mux_upper **pp = &mux_uppers; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == u) {
            *pp = u->next;
            break;
        }
    }
    if (u->route != NULL && u->route->rblocked) {
        u->route->rblocked = 0;
        qenable(RD(u->route->wq));
    }
    u->route = NULL;
    while (u->busy > 0)
        pthread_cond_wait(&mux_cv, &mux_lock);
    pthread_mutex_unlock(&mux_lock);
    qprocsoff(q);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    kmem_free(u, sizeof(*u));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Upper streams                                                             */
/* ------------------------------------------------------------------------ */

/* M_FLUSH on a queue pair acting as a driver (upper) or as a stream head
 * (lower, the message came up): flush the queues the flags name and turn
 * the message around.  driver: q is the write queue, FLUSHR goes back up;
 * head: q is the read queue, FLUSHW goes back down. */
static void mux_flush(queue_t *q, mblk_t *mp, int driver)
{
    unsigned char *fp = mp->b_rptr;
    int byband = (*fp & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2;
    unsigned char band = byband ? fp[1] : 0;
    queue_t *wq = WR(q), *rq = RD(q);
    unsigned char back = driver ? FLUSHR : FLUSHW;

    if (*fp & FLUSHW) {
        if (byband)
            flushband(wq, band, FLUSHDATA);
        else
            flushq(wq, FLUSHDATA);
    }
    if (*fp & FLUSHR) {
        if (byband)
            flushband(rq, band, FLUSHDATA);
        else
            flushq(rq, FLUSHDATA);
    }
    if (*fp & back) {
        *fp &= (unsigned char)~(driver ? FLUSHW : FLUSHR);
        qreply(q, mp);
        return;
    }
    freemsg(mp);
}

static int mux_uwput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_DATA:
    case M_PROTO:
    case M_PCPROTO:
        if (!putq(q, mp))
            freemsg(mp);
        break;
    case M_FLUSH:
        if (mp->b_wptr - mp->b_rptr < 1)
            freemsg(mp);
        else
            mux_flush(q, mp, 1);
        break;
    case M_IOCTL:
        mux_ioctl(q, mp);
        break;
    default:
        freemsg(mp);
        break;
    }
    return 0;
}

/* Move what was written down to the routed lower stream while it has room
 * (under mux_lock: the route cannot be unlinked in between). */
static int mux_uwsrv(queue_t *q)
{
    struct mux_upper *u = q->q_ptr;
    struct mux_lower *l;
    mblk_t *mp;

    if (u == NULL)
        return 0;
    pthread_mutex_lock(&mux_lock);
    while ((l = u->route) != NULL && (mp = getq(q)) != NULL) {
        if (!pcmsg(mp->b_datap->db_type) && !bcanput(l->wq, mp->b_band)) {
            putbq(q, mp);
            u->wblocked = 1;
            break;
        }
        if (!putq(l->wq, mp))
            freemsg(mp);
    }
    pthread_mutex_unlock(&mux_lock);
    return 0;
}

/* Nothing is below the upper read queue; pass on what is put into it. */
static int mux_urput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Back-enabled when the upper stream's reader drained: let the lower
 * stream's read side go on if it waited. */
static int mux_ursrv(queue_t *q)
{
    struct mux_upper *u = q->q_ptr;

    if (u == NULL)
        return 0;
    pthread_mutex_lock(&mux_lock);
    if (u->route != NULL && u->route->rblocked) {
        u->route->rblocked = 0;
        qenable(RD(u->route->wq));
    }
    pthread_mutex_unlock(&mux_lock);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Lower streams                                                             */
/* ------------------------------------------------------------------------ */

/* Only mux_uwsrv feeds the lower write queue (putq); anything put into it
 * otherwise is queued the same way. */
static int mux_lwput(queue_t *q, mblk_t *mp)
{
    if (!putq(q, mp))
        freemsg(mp);
    return 0;
}

/* Send down the lower stream while it has room; once empty, let the upper
 * streams that waited for room go on. */
static int mux_lwsrv(queue_t *q)
{
    struct mux_lower *l;
    mblk_t *mp;

    while ((mp = getq(q)) != NULL) {
        if (!pcmsg(mp->b_datap->db_type) && !bcanputnext(q, mp->b_band)) {
            putbq(q, mp);
            return 0;
        }
        putnext(q, mp);
    }
    pthread_mutex_lock(&mux_lock);
    l = lower_by_wq(q);
    for (struct mux_upper *u = mux_uppers; l != NULL && u != NULL; u = u->next) {
        if (u->route == l && u->wblocked) {
            u->wblocked = 0;
            qenable(WR(u->rq));
        }
    }
    pthread_mutex_unlock(&mux_lock);
    return 0;
}

/* What comes up a lower stream: data is queued for mux_lrsrv; the driver is
 * this stream's head for M_FLUSH; M_HANGUP and M_ERROR go to the routed
 * upper streams. */
static int mux_lrput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_DATA:
    case M_PROTO:
    case M_PCPROTO:
        if (!putq(q, mp))
            freemsg(mp);
        break;
    case M_FLUSH:
        if (mp->b_wptr - mp->b_rptr < 1)
            freemsg(mp);
        else
            mux_flush(q, mp, 0);
        break;
    case M_HANGUP:
    case M_ERROR:
        tell_routed(q, mp, mp->b_datap->db_type == M_HANGUP);
        break;
    default:
        freemsg(mp);
        break;
    }
    return 0;
}

/* Send what came up a lower stream to every upper stream routed to it, each
 * message only when all of them have room (high priority: at once). */
static int mux_lrsrv(queue_t *q)
{
    for (;;) {
        struct mux_ulist ul;
        struct mux_lower *l;
        mblk_t *mp;
        int ok;

        pthread_mutex_lock(&mux_lock);
        l = lower_by_wq(WR(q));
        if (l == NULL || (mp = getq(q)) == NULL) {
            pthread_mutex_unlock(&mux_lock);
            return 0;
        }
        ok = nrouted(l) > 0;
        for (struct mux_upper *u = mux_uppers; ok && u != NULL; u = u->next)
            if (u->route == l && !pcmsg(mp->b_datap->db_type) && !bcanputnext(u->rq, mp->b_band))
                ok = 0;
        if (!ok) {
            putbq(q, mp);
            l->rblocked = nrouted(l) > 0; /* else a MUX_ROUTE enables us */
            pthread_mutex_unlock(&mux_lock);
            return 0;
        }
        mux_ulist_get(&ul, l, 0);
        if (ul.n == 0 || mux_ulist_copies(&ul, mp) != 0) {
            putbq(q, mp); /* out of memory: try again shortly */
            if (l->retry == 0)
                l->retry = qtimeout(q, mux_retry, q, 1);
            pthread_mutex_unlock(&mux_lock);
            mux_ulist_put(&ul);
            return 0;
        }
        pthread_mutex_unlock(&mux_lock);
        mux_ulist_send(&ul, 0);
        mux_ulist_put(&ul);
    }
}
