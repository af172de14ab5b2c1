/* SPDX-License-Identifier: MIT */
/*
 * loop.c -- the loop driver: two minors cross-connected, like a pipe.
 *
 * Each open of "/dev/streams/clone/loop" gets a new minor.  LOOP_SET (an I_STR
 * carrying another open minor's number, <sys/loop.h>) connects the two: what
 * is written on one comes up the read side of the other.  LOOP_GET_DEV tells a
 * stream its own minor.  Closing one side sends M_HANGUP up the other, which
 * stays open but disconnected.
 *
 * MT level: D_MP.  The driver locks for itself:
 *   loop_lock guards the minor table loop_tab and, in every struct loop_minor,
 *   the fields other, busy and closing.  It is taken only briefly and never
 *   held across putnext or anything that can call a module procedure
 *   (qenable is fine: it only schedules).  loop_cv (with loop_lock) is
 *   signalled when a minor's busy count drops to zero.
 *   A thread that sends into the other side's queues first takes a "busy"
 *   reference on the other minor under loop_lock (loop_hold_other), uses its
 *   read queue without the lock, then drops it (loop_rele).  Close unhooks the
 *   pair under loop_lock and waits for its own busy count to drain before it
 *   turns its procedures off and frees its state, so no thread of the other
 *   side is still inside its queues when they go away.
 * Flow control: the write side queues M_DATA and M_PROTO (putq); its service
 *   procedure forwards them with putnext on the other minor's read queue only
 *   while bcanputnext allows the message's band, otherwise it puts the message
 *   back and returns.  When the other reader drains, back-enabling reaches the
 *   other minor's read queue (the first queue with a service procedure), whose
 *   service procedure enables this minor's write queue again.  An unconnected
 *   minor keeps what is written until LOOP_SET connects it (its queue fills
 *   and pushes back on the writer).  M_PCPROTO goes across at once (freed when
 *   unconnected).
 * M_FLUSH (downstream on side A, connected to B): FLUSHW flushes A's write
 *   queue, FLUSHR A's read queue.  Unless the message carries MSGNOLOOP (it
 *   was already turned around by a stream head), a copy with FLUSHR and FLUSHW
 *   swapped goes up B's read side -- A's write path continues into B's read
 *   path and vice versa -- after flushing the B queue on that path.  Then, as
 *   every driver does, FLUSHR turns the message around up A's read side.
 * M_IOCTL: LOOP_SET and LOOP_GET_DEV (I_STR form only); anything else is
 *   refused with EINVAL.  Other messages are freed.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/loop.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "forksafe.h"

#define LOOP_ID     5304
#define LOOP_NMINOR 1024 /* minors 0 .. LOOP_NMINOR-1; clone opens take >= 1 */

struct loop_minor {
    minor_t minor;
    queue_t *rq;              /* this minor's read queue (WR(rq) its write queue) */
    struct loop_minor *other; /* loop_lock: the connected minor, or NULL */
    int busy;                 /* loop_lock: threads of the other side using rq */
    int closing;              /* loop_lock: close has started: no new connection */
};

static int loop_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int loop_close(queue_t *q, int oflag, cred_t *crp);
static int loop_rput(queue_t *q, mblk_t *mp);
static int loop_rsrv(queue_t *q);
static int loop_wput(queue_t *q, mblk_t *mp);
static int loop_wsrv(queue_t *q);

static struct module_info loop_minfo = {
    .mi_idnum = LOOP_ID,
    .mi_idname = "loop",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit loop_rinit = {
    .qi_putp = loop_rput,
    .qi_srvp = loop_rsrv,
    .qi_qopen = loop_open,
    .qi_qclose = loop_close,
    .qi_minfo = &loop_minfo,
};

static struct qinit loop_winit = {
    .qi_putp = loop_wput,
    .qi_srvp = loop_wsrv,
    .qi_minfo = &loop_minfo,
};

static struct streamtab loop_info = {
    .st_rdinit = &loop_rinit,
    .st_wrinit = &loop_winit,
};

static struct cdevsw loop_cdev = {
    .d_name = "loop",
    .d_str = &loop_info,
    .d_flag = D_MP,
};

/* See the lock legend above: loop_lock guards loop_tab and the LOCK fields of
 * every loop_minor; loop_cv is signalled when a busy count falls to zero. */
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t loop_cv = PTHREAD_COND_INITIALIZER;
static struct loop_minor *loop_tab[LOOP_NMINOR]; /* loop_lock: open minors */

/* Registration from ust_builtin_register. */
void ust_loop_register(void);

/*
 * ust_loop_register -- register the "loop" driver.
 *   Context: ust_builtin_register, once.  Failure is reported with cmn_err.
 */
/* fork() (src/core/forksafe.h): loop_lock is held briefly and nothing ranked before
 * UST_FORK_DRIVER is taken under it, so it is quiesced.  In the child, loop_tab holds the parent's
 * minors, whose queues are the parent's: it starts empty (the records stay with the parent's
 * streams). */
static void loop_fork_prepare(void)
{
    pthread_mutex_lock(&loop_lock);
}

static void loop_fork_parent(void)
{
    pthread_mutex_unlock(&loop_lock);
}

static void loop_fork_child(void)
{
    memset(loop_tab, 0, sizeof(loop_tab));
    pthread_cond_init(&loop_cv, NULL);
    pthread_mutex_unlock(&loop_lock);
}

void ust_loop_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, loop_fork_prepare, loop_fork_parent,
                      loop_fork_child);
    int rc = register_strdev(&loop_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "loop: register_strdev failed (%d)", rc);
}

/*
 * loop_hold_other / loop_rele -- take and drop a busy reference on the minor
 *   connected to lm.  loop_hold_other returns it (its queues stay valid until
 *   loop_rele), or NULL when lm is not connected.  Takes loop_lock briefly.
 */
static struct loop_minor *loop_hold_other(struct loop_minor *lm)
{
    struct loop_minor *o;

    pthread_mutex_lock(&loop_lock);
    o = lm->other;
    if (o != NULL)
        o->busy++;
    pthread_mutex_unlock(&loop_lock);
    return o;
}

static void loop_rele(struct loop_minor *o)
{
    pthread_mutex_lock(&loop_lock);
    if (--o->busy == 0 && o->closing)
        pthread_cond_broadcast(&loop_cv);
    pthread_mutex_unlock(&loop_lock);
}

/*
 * loop_open -- DRVOPEN opens the minor asked for; CLONEOPEN the lowest free
 *   minor >= 1 (rewriting *devp).  Reopen of an open stream succeeds.
 *   Errors: ENXIO (module open, minor out of range, no free minor), EBUSY
 *   (the minor is still being closed).
 */
static int loop_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    struct loop_minor *lm;
    minor_t minor = getminor(*devp);

    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0;
    if (sflag != DRVOPEN && sflag != CLONEOPEN)
        return ENXIO;
    lm = kmem_zalloc(sizeof(*lm), KM_SLEEP);

    pthread_mutex_lock(&loop_lock);
    if (sflag == CLONEOPEN) {
        for (minor = 1; minor < LOOP_NMINOR && loop_tab[minor] != NULL; minor++)
            ;
    }
    if (minor >= LOOP_NMINOR || loop_tab[minor] != NULL) {
        int err = minor >= LOOP_NMINOR ? ENXIO : EBUSY;
        pthread_mutex_unlock(&loop_lock);
        kmem_free(lm, sizeof(*lm));
        return err;
    }
    lm->minor = minor;
    lm->rq = q;
    loop_tab[minor] = lm;
    pthread_mutex_unlock(&loop_lock);

    *devp = makedevice(getmajor(*devp), minor);
    q->q_ptr = lm;
    WR(q)->q_ptr = lm;
    qprocson(q);
    return 0;
}

/*
 * loop_close -- disconnect, hang up the other side, wait until no thread of
 *   the other side is inside our queues, turn procedures off, free.
 *   What the other side had queued for us can no longer be delivered and is
 *   freed.
 */
static int loop_close(queue_t *q, int oflag, cred_t *crp)
{
    struct loop_minor *lm = q->q_ptr;
    struct loop_minor *o;

    (void)oflag;
    (void)crp;
    pthread_mutex_lock(&loop_lock);
    lm->closing = 1;
    o = lm->other;
    if (o != NULL) {
        o->other = NULL;
        lm->other = NULL;
        o->busy++; /* for the hang-up below */
    }
    while (lm->busy > 0)
        pthread_cond_wait(&loop_cv, &loop_lock);
    loop_tab[lm->minor] = NULL;
    pthread_mutex_unlock(&loop_lock);

    if (o != NULL) {
        flushq(WR(o->rq), FLUSHALL);
        putnextctl(o->rq, M_HANGUP);
        loop_rele(o);
    }
    qprocsoff(q);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    kmem_free(lm, sizeof(*lm));
    return 0;
}

/* Nothing is below the driver; pass up anything that arrives here. */
static int loop_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Back-enabled when our reader drained: let the other side's writer go on. */
static int loop_rsrv(queue_t *q)
{
    struct loop_minor *lm = q->q_ptr;

    pthread_mutex_lock(&loop_lock);
    if (lm->other != NULL)
        qenable(WR(lm->other->rq));
    pthread_mutex_unlock(&loop_lock);
    return 0;
}

/* Swap FLUSHR and FLUSHW in a flush flag byte. */
static unsigned char loop_swap(unsigned char flag)
{
    unsigned char rw = flag & FLUSHRW;

    if (rw == FLUSHR || rw == FLUSHW)
        flag = (unsigned char)((flag & ~FLUSHRW) | (rw ^ FLUSHRW));
    return flag;
}

/* Flush q by band or whole, per the M_FLUSH in mp. */
static void loop_flushq(queue_t *q, const mblk_t *mp)
{
    if ((*mp->b_rptr & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2)
        flushband(q, mp->b_rptr[1], FLUSHDATA);
    else
        flushq(q, FLUSHDATA);
}

/* M_FLUSH arriving on our write queue q (see the file comment). */
static void loop_flush(queue_t *q, mblk_t *mp)
{
    struct loop_minor *lm = q->q_ptr;
    unsigned char flag = *mp->b_rptr;
    struct loop_minor *o;

    if (flag & FLUSHW)
        loop_flushq(q, mp);
    if (flag & FLUSHR)
        loop_flushq(RD(q), mp);
    if (!(mp->b_flag & MSGNOLOOP) && (o = loop_hold_other(lm)) != NULL) {
        mblk_t *cp = copymsg(mp);
        if (cp != NULL) {
            *cp->b_rptr = loop_swap(flag);
            if (*cp->b_rptr & FLUSHR)
                loop_flushq(o->rq, cp);
            if (*cp->b_rptr & FLUSHW)
                loop_flushq(WR(o->rq), cp);
            putnext(o->rq, cp);
        }
        loop_rele(o);
    }
    if (flag & FLUSHR) {
        *mp->b_rptr &= ~FLUSHW;
        qreply(q, mp);
        return;
    }
    freemsg(mp);
}

/* Copy the int argument of an I_STR ioctl out of mp's data; 0 or EINVAL. */
static int loop_int_arg(mblk_t *mp, int *valp)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    unsigned char buf[sizeof(int)];
    size_t got = 0;

    if (iocp->ioc_count != sizeof(int))
        return EINVAL;
    for (mblk_t *bp = mp->b_cont; bp != NULL && got < sizeof(buf); bp = bp->b_cont) {
        size_t n = (size_t)(bp->b_wptr - bp->b_rptr);
        if (n > sizeof(buf) - got)
            n = sizeof(buf) - got;
        memcpy(buf + got, bp->b_rptr, n);
        got += n;
    }
    if (got != sizeof(buf))
        return EINVAL;
    memcpy(valp, buf, sizeof(buf));
    return 0;
}

/* LOOP_SET: connect lm to the minor named in the ioctl. 0 or errno. */
static int loop_set(struct loop_minor *lm, mblk_t *mp)
{
    struct loop_minor *o;
    int n, err;

    err = loop_int_arg(mp, &n);
    if (err != 0)
        return err;
    if (n < 0 || n >= LOOP_NMINOR)
        return ENXIO;
    pthread_mutex_lock(&loop_lock);
    o = loop_tab[n];
    if (o == NULL || o->closing)
        err = ENXIO;
    else if (o == lm)
        err = EINVAL;
    else if (lm->other != NULL || o->other != NULL)
        err = EBUSY;
    if (err == 0) {
        lm->other = o;
        o->other = lm;
        /* Either side may have written before the connection. */
        qenable(WR(lm->rq));
        qenable(WR(o->rq));
    }
    pthread_mutex_unlock(&loop_lock);
    return err;
}

/* LOOP_GET_DEV: our minor into the ioctl's data (and the return value). */
static void loop_get_dev(queue_t *q, struct loop_minor *lm, mblk_t *mp)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    int minor = (int)lm->minor;
    mblk_t *dp = mp->b_cont;

    if (iocp->ioc_count == TRANSPARENT) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    if (dp == NULL || dp->b_datap->db_lim - dp->b_rptr < (long)sizeof(int) ||
        dp->b_datap->db_ref > 1) {
        dp = allocb(sizeof(int), BPRI_MED);
        if (dp == NULL) {
            miocnak(q, mp, 0, ENOSR);
            return;
        }
        freemsg(mp->b_cont);
        mp->b_cont = dp;
    } else if (dp->b_cont != NULL) {
        freemsg(dp->b_cont);
        dp->b_cont = NULL;
    }
    memcpy(dp->b_rptr, &minor, sizeof(int));
    dp->b_wptr = dp->b_rptr + sizeof(int);
    miocack(q, mp, sizeof(int), minor);
}

static void loop_ioctl(queue_t *q, mblk_t *mp)
{
    struct loop_minor *lm = q->q_ptr;
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    int err;

    if (mp->b_wptr - mp->b_rptr < (long)sizeof(struct iocblk)) {
        freemsg(mp);
        return;
    }
    switch (iocp->ioc_cmd) {
    case LOOP_SET:
        err = loop_set(lm, mp);
        if (err != 0)
            miocnak(q, mp, 0, err);
        else
            miocack(q, mp, 0, 0);
        break;
    case LOOP_GET_DEV:
        loop_get_dev(q, lm, mp);
        break;
    default:
        miocnak(q, mp, 0, EINVAL);
        break;
    }
}

static int loop_wput(queue_t *q, mblk_t *mp)
{
    struct loop_minor *o;

    switch (mp->b_datap->db_type) {
    case M_DATA:
    case M_PROTO:
        if (!putq(q, mp))
            freemsg(mp);
        break;
    case M_PCPROTO:
        o = loop_hold_other(q->q_ptr);
        if (o != NULL) {
            putnext(o->rq, mp);
            loop_rele(o);
        } else {
            freemsg(mp);
        }
        break;
    case M_FLUSH:
        if (mp->b_wptr > mp->b_rptr)
            loop_flush(q, mp);
        else
            freemsg(mp);
        break;
    case M_IOCTL:
        loop_ioctl(q, mp);
        break;
    default:
        freemsg(mp);
        break;
    }
    return 0;
}

/* Forward queued messages to the other side while its band has room. */
static int loop_wsrv(queue_t *q)
{
    struct loop_minor *o = loop_hold_other(q->q_ptr);
    mblk_t *mp;

    if (o == NULL)
        return 0; /* kept until LOOP_SET enables us */
    while ((mp = getq(q)) != NULL) {
        if (pcmsg(mp->b_datap->db_type) || bcanputnext(o->rq, mp->b_band)) {
            putnext(o->rq, mp);
        } else {
            putbq(q, mp);
            break;
        }
    }
    loop_rele(o);
    return 0;
}
