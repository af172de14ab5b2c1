/* SPDX-License-Identifier: MIT */
/*
 * log.c -- the STREAMS log driver, /dev/streams/log (log(7)).
 *
 * MT level: D_MP | D_CLONE.  Every open is a new minor (clone); the streams
 * open on the driver are kept in one table, guarded by log_lock.
 *
 * Principles of operation
 *   - A stream becomes a logger with an I_STR ioctl: I_ERRLOG (the error
 *     logger), I_TRCLOG (the trace logger, with its array of struct
 *     trace_ids filters) or I_CONSLOG (the console logger).  One logger of
 *     each class at a time (SVR4 log(7): "at most one trace logger and one
 *     error logger"; the console logger the same): another stream asking
 *     fails EBUSY, in this process or -- through the cross-process layer's
 *     claim (strcore.h, struct ust_xlog_ops) -- in another process of the
 *     user.  The same stream asking again succeeds (a repeated I_TRCLOG
 *     replaces its filters).  A stream may hold several classes.  Closing
 *     the stream gives its classes up, here and across processes.
 *   - A message of this process for a class with no logger here goes to the
 *     logger of that class in another process, if any (the xlog send hook:
 *     a datagram sent without waiting; dropped and counted when that
 *     logger's socket is full).  Records other processes sent arrive through
 *     ust_strlog_far (far != 0) and are routed to the local loggers of their
 *     class only, never passed on again.
 *   - ust_log_route (strlog's route, which the administration layer
 *     installs at start-up with ust_strlog_set_route, and called by this
 *     driver's write side for a putmsg) decides under log_lock which
 *     loggers get the message, takes a sequence number per logger kind and
 *     claims each chosen logger's read queue (the claim keeps the queue and
 *     its q_next valid: log_close takes the stream off the table under
 *     log_lock, then qprocsoff waits for the claims).  With the lock
 *     dropped it builds each copy (M_PROTO log_ctl + M_DATA text) and passes
 *     it up with putnext from that read queue.
 *   - Never blocking: a copy for a logger whose read side is full
 *     (canputnext fails) is dropped and counted (ls_dropped), as is a copy
 *     that cannot be allocated (ls_nomem).  The sequence number was taken
 *     all the same, so a logger sees a gap where its copies were dropped.
 *   - Sequence numbers start at 0 and count the messages routed to a kind:
 *     every error-logger copy takes the next error number, a trace message
 *     one trace number shared by all trace loggers that select it, a console
 *     copy the next console number.  Copies for different loggers are passed
 *     up by the threads that logged them, so a logger sees each thread's
 *     messages in order; messages of different threads may arrive with their
 *     numbers out of order.
 * Flow control: none on the write side (a putmsg to the log is routed at
 * once); the read side has no service procedure and never waits.
 * Lock order: log_slot_lock (the classes' slots: ioctls, close, fork; held
 * across the xlog claim and release hooks, which make system calls) before
 * log_lock.  log_lock is a leaf.  strlog runs in module procedures, which
 * hold no executive lock; under log_lock nothing runs but the table walk,
 * malloc and claim increments -- never putnext, allocb or a module procedure.
 * Writes that are not a log_ctl + text (write(2), M_PCPROTO, ...) are freed
 * and counted as ls_badmsg.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>
#include <sys/strlog.h>
#include <time.h>
#include <unistd.h>

#include "drivers/logpriv.h"
#include "strcore.h"

#define LOG_ID      LOG_MID /* module id */
#define LOG_TARGETS 16      /* copies routed without a heap array */

/* Roles of a log stream (log_strm.roles): the logger classes. */
#define LR_ERR  UST_LOGC_ERR
#define LR_TRC  UST_LOGC_TRC
#define LR_CONS UST_LOGC_CONS
#define LOG_NCLASS 3

/* One open stream of the driver. */
struct log_strm {
    struct log_strm *next;  /* log_lock: the table */
    queue_t *rq;            /* the driver's read queue (constant) */
    minor_t minor;          /* constant after open */
    int roles;              /* log_lock: LR_* */
    struct trace_ids *tids; /* log_lock: trace filters (LR_TRC) */
    size_t ntids;           /* log_lock */
};

/* log_slot_lock serialises the changes of the loggers (ioctls, close, fork)
 * with the cross-process claims and releases they make.  A sleeping lock held
 * across a few system calls; never taken by a message's route. */
static ust_lock_t log_slot_lock = UST_LOCK_INIT;

/* log_lock guards the table of open streams, the logger pointers and the
 * three sequence counters.  Held only for short bookkeeping: never across
 * putnext, allocb or a module procedure.  A logger pointer changes with both
 * locks held, so either lock is enough to read it. */
static ust_lock_t log_lock = UST_LOCK_INIT;
static struct log_strm *log_streams; /* log_lock: every open stream */
static struct log_strm *log_errq;    /* log_lock + log_slot_lock: the error logger or NULL */
static struct log_strm *log_trcq;    /* log_lock + log_slot_lock: the trace logger or NULL */
static struct log_strm *log_consq;   /* log_lock + log_slot_lock: the console logger or NULL */
/* The next sequence number of each class, 0 .. INT_MAX, wrapping to 0 (a
 * far sender's gap may add up to 2^24 at a time): log_lock. */
static int log_errseq;               /* log_lock: next error sequence number */
static int log_trcseq;               /* log_lock: next trace sequence number */
static int log_conseq;               /* log_lock: next console sequence number */

/* Take the number of a class whose next one is *next, after skipping skip
 * (>= 0) lost by the sender; *next moves past it.  Wraps at INT_MAX, as
 * seq_no is an int.  log_lock held. */
static int log_seq_take(int *next, int skip)
{
    unsigned v = ((unsigned)*next + (unsigned)skip) & (unsigned)INT_MAX;
    *next = (int)((v + 1u) & (unsigned)INT_MAX);
    return (int)v;
}

/* The logger pointer of class c (LR_*). */
static struct log_strm **log_slot_of(int c)
{
    return c == LR_ERR ? &log_errq : c == LR_TRC ? &log_trcq : &log_consq;
}


/* Counters (ust_log_getstats); updated without the lock. */
static atomic_ulong log_nlogged, log_nunrouted, log_ndelivered, log_ndropped, log_nnomem,
    log_nbadmsg;

static int log_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int log_close(queue_t *q, int oflag, cred_t *crp);
static int log_rput(queue_t *q, mblk_t *mp);
static int log_wput(queue_t *q, mblk_t *mp);

static struct module_info log_minfo = {
    .mi_idnum = LOG_ID,
    .mi_idname = "log",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 8192,
    .mi_lowat = 1024,
};

static struct qinit log_rinit = {
    .qi_putp = log_rput,
    .qi_qopen = log_open,
    .qi_qclose = log_close,
    .qi_minfo = &log_minfo,
};

static struct qinit log_winit = {
    .qi_putp = log_wput,
    .qi_minfo = &log_minfo,
};

static struct streamtab log_info = {
    .st_rdinit = &log_rinit,
    .st_wrinit = &log_winit,
};

static struct cdevsw log_cdev = {
    .d_name = "log",
    .d_str = &log_info,
    .d_flag = D_MP | D_CLONE,
};

/* Registration from ust_builtin_register. */
void ust_log_register(void);

/* fork() (src/core/forksafe.h): log_lock is held briefly and nothing ranked before UST_FORK_DRIVER
 * is taken under it, so it is quiesced.  In the child, the loggers are the parent's streams: the
 * table starts empty (strlog finds no logger, as before any open; the records stay with the
 * parent's streams). */
static void log_fork_prepare(void)
{
    const struct ust_xlog_ops *xo = ust_xlog_get_ops();

    ust_lock(&log_slot_lock);
    if (xo && xo->fork_prepare)
        xo->fork_prepare();
    ust_lock(&log_lock);
}

static void log_fork_parent(void)
{
    const struct ust_xlog_ops *xo = ust_xlog_get_ops();

    ust_unlock(&log_lock);
    if (xo && xo->fork_parent)
        xo->fork_parent();
    ust_unlock(&log_slot_lock);
}

/* The child's slots across processes are the parent's too: the xlog child
 * hook forgets them without releasing them. */
static void log_fork_child(void)
{
    const struct ust_xlog_ops *xo = ust_xlog_get_ops();

    log_streams = log_errq = log_trcq = log_consq = NULL;
    ust_unlock(&log_lock);
    if (xo && xo->fork_child)
        xo->fork_child();
    ust_unlock(&log_slot_lock);
}

void ust_log_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, log_fork_prepare, log_fork_parent,
                      log_fork_child);
    int rc = register_strdev(&log_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "log: register_strdev failed (%d)", rc);
}

/*
 * ust_log_getstats -- the driver's counters (see sys/strlog.h).
 *   Context: any thread.  Each counter is read atomically; the set is not a
 *   snapshot.
 */
void ust_log_getstats(struct ust_log_stats *st)
{
    if (st == NULL)
        return;
    st->ls_logged = atomic_load(&log_nlogged);
    st->ls_unrouted = atomic_load(&log_nunrouted);
    st->ls_delivered = atomic_load(&log_ndelivered);
    st->ls_dropped = atomic_load(&log_ndropped);
    st->ls_nomem = atomic_load(&log_nnomem);
    st->ls_badmsg = atomic_load(&log_nbadmsg);
    st->ls_xsent = ust_xlog_counter(UST_XLOG_SENT);
    st->ls_xdropped = ust_xlog_counter(UST_XLOG_SENDDROP);
    st->ls_xreceived = ust_xlog_counter(UST_XLOG_RECEIVED);
    st->ls_xrejected = ust_xlog_counter(UST_XLOG_REJECTED);
}

/* ------------------------------------------------------------------------ */
/* Routing                                                                   */
/* ------------------------------------------------------------------------ */

/* One copy to pass up: the claimed read queue and the copy's number. */
struct log_target {
    queue_t *rq;
    int seq;
};

/* Does one of ls's filters select the message?  log_lock held. */
static int log_trace_match(const struct log_strm *ls, const struct log_ctl *lc)
{
    for (size_t i = 0; i < ls->ntids; i++) {
        const struct trace_ids *t = &ls->tids[i];
        if (t->ti_mid != -1 && t->ti_mid != lc->mid)
            continue;
        if (t->ti_sid != -1 && t->ti_sid != lc->sid)
            continue;
        if ((unsigned char)lc->level <= (unsigned char)t->ti_level)
            return 1;
    }
    return 0;
}

/* Target list with a stack array, grown on the heap for many loggers. */
struct log_targets {
    struct log_target *v;
    size_t n, cap;
    struct log_target local[LOG_TARGETS];
};

/* Append a target and claim its queue.  log_lock held.  Returns 0, or -1
 * (no memory: the copy is counted as ls_nomem and not claimed). */
static int log_add_target(struct log_targets *t, queue_t *rq, int seq)
{
    UST_ASSERT_HELD(&log_lock);
    if (t->n == t->cap) {
        size_t ncap = t->cap * 2;
        struct log_target *nv = malloc(ncap * sizeof(*nv));
        if (nv == NULL) {
            atomic_fetch_add(&log_nnomem, 1);
            return -1;
        }
        memcpy(nv, t->v, t->n * sizeof(*nv));
        if (t->v != t->local)
            free(t->v);
        t->v = nv;
        t->cap = ncap;
    }
    atomic_fetch_add(&ust_qpv(rq)->active, 1); /* released in log_deliver */
    t->v[t->n].rq = rq;
    t->v[t->n].seq = seq;
    t->n++;
    return 0;
}

/* Build one copy: M_PROTO log_ctl + M_DATA text with a NUL.  NULL if out of
 * memory. */
static mblk_t *log_mkmsg(const struct log_ctl *lc, const char *text, size_t len)
{
    mblk_t *mp = allocb(sizeof(*lc), BPRI_HI);
    mblk_t *dp = allocb(len + 1, BPRI_HI);

    if (mp == NULL || dp == NULL) {
        freemsg(mp);
        freemsg(dp);
        return NULL;
    }
    mp->b_datap->db_type = M_PROTO;
    memcpy(mp->b_wptr, lc, sizeof(*lc));
    mp->b_wptr += sizeof(*lc);
    memcpy(dp->b_wptr, text, len);
    dp->b_wptr[len] = '\0';
    dp->b_wptr += len + 1;
    mp->b_cont = dp;
    return mp;
}

/* Pass one copy up from the claimed read queue rq and release the claim.
 * Returns 1 if passed up, 0 if dropped (counted). */
static int log_deliver(queue_t *rq, struct log_ctl *lc, const char *text, size_t len)
{
    int sent = 0;

    if (!canputnext(rq)) {
        atomic_fetch_add(&log_ndropped, 1);
    } else {
        mblk_t *mp = log_mkmsg(lc, text, len);
        if (mp == NULL) {
            atomic_fetch_add(&log_nnomem, 1);
        } else {
            putnext(rq, mp);
            atomic_fetch_add(&log_ndelivered, 1);
            sent = 1;
        }
    }
    ust_qrelease(rq);
    return sent;
}

/* Send a message of this process to the loggers of other processes for the
 * classes in want (those with no logger here).  Never blocks.  Returns 1 if
 * a copy was sent. */
static int log_send_far(const struct log_ctl *lc, const char *text, size_t len, int want)
{
    const struct ust_xlog_ops *xo = ust_xlog_get_ops();
    int sent = 0;

    if (xo == NULL || xo->send == NULL)
        return 0;
    for (int c = UST_LOGC_ERR; c <= UST_LOGC_CONS; c <<= 1)
        if ((want & c) && xo->send(c, lc, text, len) > 0)
            sent = 1;
    return sent;
}

int ust_log_route(struct log_ctl *lc, const char *text, size_t len, int *had_console, int far)
{
    struct log_targets t = {.n = 0, .cap = LOG_TARGETS};
    int err_seq = -1, trc_seq = -1, cons_seq = -1;
    int allow = far ? far : LR_ERR | LR_TRC | LR_CONS;
    int elsewhere = 0; /* classes asked for with no logger here */
    int skip = far && lc->seq_no > 0 ? lc->seq_no : 0; /* the far sender's gap */
    int delivered = 0;

    t.v = t.local;
    if (!far) {
        (void)drv_getparm(LBOLT, &lc->ltime);
        lc->ttime = (long)time(NULL);
        lc->pid = getpid();
    }
    atomic_fetch_add(&log_nlogged, 1);

    ust_lock(&log_lock);
    if (had_console)
        *had_console = log_consq != NULL;
    if ((allow & LR_ERR) && (lc->flags & SL_ERROR)) {
        if (log_errq) {
            err_seq = log_seq_take(&log_errseq, skip);
            (void)log_add_target(&t, log_errq->rq, err_seq);
        } else {
            elsewhere |= LR_ERR;
        }
    }
    if ((allow & LR_TRC) && (lc->flags & SL_TRACE)) {
        if (log_trcq == NULL) {
            elsewhere |= LR_TRC;
        } else if (log_trace_match(log_trcq, lc)) {
            trc_seq = log_seq_take(&log_trcseq, skip);
            (void)log_add_target(&t, log_trcq->rq, trc_seq);
        }
    }
    if ((allow & LR_CONS) && (lc->flags & SL_CONSOLE)) {
        if (log_consq) {
            cons_seq = log_seq_take(&log_conseq, skip);
            (void)log_add_target(&t, log_consq->rq, cons_seq);
        } else {
            elsewhere |= LR_CONS;
        }
    }
    ust_unlock(&log_lock);

    for (size_t i = 0; i < t.n; i++) {
        lc->seq_no = t.v[i].seq;
        delivered |= log_deliver(t.v[i].rq, lc, text, len);
    }
    if (t.v != t.local)
        free(t.v);
    if (!far && elsewhere) {
        lc->seq_no = 0; /* numbered by the far logger's driver */
        if (log_send_far(lc, text, len, elsewhere)) {
            delivered = 1;
            if (had_console && (elsewhere & LR_CONS))
                *had_console = 1;
        }
    }
    if (err_seq < 0 && trc_seq < 0 && cons_seq < 0 && !delivered)
        atomic_fetch_add(&log_nunrouted, 1);
    return delivered;
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */
/* ------------------------------------------------------------------------ */

/* Lowest minor >= 1 no open stream uses.  log_lock held. */
static minor_t log_free_minor(void)
{
    minor_t m = 1;
    for (;;) {
        struct log_strm *ls;
        for (ls = log_streams; ls && ls->minor != m; ls = ls->next)
            ;
        if (ls == NULL)
            return m;
        m++;
    }
}

/*
 * log_open -- open a log stream.
 *   Context: stream head open (may block).  A clone open gets the lowest free
 *   minor >= 1; a reopen of an open stream does nothing.
 *   Returns 0, ENXIO (neither a driver nor a clone open, or no minor left),
 *   ENOMEM is not possible (KM_SLEEP).
 */
static int log_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    struct log_strm *ls;
    minor_t minor;

    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0;
    if (sflag != DRVOPEN && sflag != CLONEOPEN)
        return ENXIO;
    ls = kmem_zalloc(sizeof(*ls), KM_SLEEP);
    ls->rq = q;

    ust_lock(&log_lock);
    minor = sflag == CLONEOPEN ? log_free_minor() : getminor(*devp);
    if (minor > L_MAXMIN) {
        ust_unlock(&log_lock);
        kmem_free(ls, sizeof(*ls));
        return ENXIO;
    }
    ls->minor = minor;
    ls->next = log_streams;
    log_streams = ls;
    ust_unlock(&log_lock);

    if (sflag == CLONEOPEN)
        *devp = makedevice(getmajor(*devp), minor);
    q->q_ptr = ls;
    WR(q)->q_ptr = ls;
    qprocson(q);
    return 0;
}

/*
 * log_close -- close a log stream, giving up its logger roles.
 *   Context: stream head close (may block).  The stream leaves the table
 *   first, so no new copy can be routed to it; qprocsoff then waits for
 *   copies being passed up through it.
 *   Returns 0.
 */
static int log_close(queue_t *q, int oflag, cred_t *crp)
{
    struct log_strm *ls = q->q_ptr;

    (void)oflag;
    (void)crp;
    const struct ust_xlog_ops *xo = ust_xlog_get_ops();
    int held = 0;

    ust_lock(&log_slot_lock);
    ust_lock(&log_lock);
    for (struct log_strm **pp = &log_streams; *pp; pp = &(*pp)->next) {
        if (*pp == ls) {
            *pp = ls->next;
            break;
        }
    }
    for (int c = UST_LOGC_ERR; c <= UST_LOGC_CONS; c <<= 1) {
        struct log_strm **slot = log_slot_of(c);
        if (*slot == ls) {
            *slot = NULL;
            held |= c;
        }
    }
    ust_unlock(&log_lock);
    for (int c = UST_LOGC_ERR; c <= UST_LOGC_CONS; c <<= 1)
        if ((held & c) && xo && xo->release)
            xo->release(c); /* the slot across processes is free again */
    ust_unlock(&log_slot_lock);

    qprocsoff(q);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    free(ls->tids);
    kmem_free(ls, sizeof(*ls));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Read side                                                                 */
/* ------------------------------------------------------------------------ */

/* Nothing is below the driver; pass up whatever arrives. */
static int log_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Write side: ioctls and messages from the process                          */
/* ------------------------------------------------------------------------ */

/* Copy the ioctl's data (count bytes in b_cont) into a new array of
 * trace_ids.  Returns 0 with *tp and *np set, EINVAL (count not a non-zero
 * multiple of the structure, or fewer bytes than it says), ENOMEM. */
static int log_get_tids(mblk_t *mp, struct trace_ids **tp, size_t *np)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    size_t count = iocp->ioc_count;
    struct trace_ids *tids;
    unsigned char *dst;
    size_t got = 0;

    if (count == TRANSPARENT || count == 0 || count % sizeof(struct trace_ids) != 0)
        return EINVAL;
    if (mp->b_cont == NULL || (size_t)msgdsize(mp->b_cont) < count)
        return EINVAL;
    tids = malloc(count);
    if (tids == NULL)
        return ENOMEM;
    dst = (unsigned char *)tids;
    for (mblk_t *bp = mp->b_cont; bp && got < count; bp = bp->b_cont) {
        size_t n = (size_t)(bp->b_wptr - bp->b_rptr);
        if (n > count - got)
            n = count - got;
        memcpy(dst + got, bp->b_rptr, n);
        got += n;
    }
    *tp = tids;
    *np = count / sizeof(struct trace_ids);
    return 0;
}

/*
 * log_take -- make ls the logger of class c (I_ERRLOG, I_TRCLOG, I_CONSLOG).
 *   tids/ntids: the trace filters (LR_TRC; taken over, freed on failure).
 *   Context: the write put procedure of an ioctl; may block briefly (the
 *   claim across processes makes system calls, under log_slot_lock).
 *   Returns 0; EBUSY when another stream is the class's logger, here or in
 *   another process of the user.  The same stream asking again succeeds (the
 *   trace filters replaced).  A claim failing otherwise (no runtime
 *   directory, ...) leaves the logger local to this process.
 */
static int log_take(struct log_strm *ls, int c, struct trace_ids *tids, size_t ntids)
{
    const struct ust_xlog_ops *xo = ust_xlog_get_ops();
    struct log_strm **slot = log_slot_of(c);
    struct trace_ids *old = NULL;
    int err = 0;

    ust_lock(&log_slot_lock);
    if (*slot != NULL && *slot != ls)
        err = EBUSY;
    else if (*slot == NULL && xo && xo->claim && xo->claim(c) == EBUSY)
        err = EBUSY;
    if (err == 0) {
        ust_lock(&log_lock);
        *slot = ls;
        ls->roles |= c;
        if (c == LR_TRC) {
            old = ls->tids;
            ls->tids = tids;
            ls->ntids = ntids;
            tids = NULL;
        }
        ust_unlock(&log_lock);
    }
    ust_unlock(&log_slot_lock);
    free(old);
    free(tids);
    return err;
}

/*
 * log_ioctl -- I_ERRLOG, I_TRCLOG, I_CONSLOG (I_STR only).
 *   Acks with no data, or naks: EBUSY (another stream is the logger of the
 *   class, in this process or another), EINVAL (a transparent ioctl, a bad I_TRCLOG length, an
 *   unknown command), ENOMEM.
 */
static void log_ioctl(queue_t *q, mblk_t *mp)
{
    struct log_strm *ls = q->q_ptr;
    struct iocblk *iocp;
    struct trace_ids *tids = NULL;
    size_t ntids = 0;
    int err = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(struct iocblk)) {
        atomic_fetch_add(&log_nbadmsg, 1);
        freemsg(mp);
        return;
    }
    iocp = (struct iocblk *)(void *)mp->b_rptr;
    if (iocp->ioc_count == TRANSPARENT) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    switch (iocp->ioc_cmd) {
    case I_ERRLOG:
        err = log_take(ls, LR_ERR, NULL, 0);
        break;
    case I_CONSLOG:
        err = log_take(ls, LR_CONS, NULL, 0);
        break;
    case I_TRCLOG:
        err = log_get_tids(mp, &tids, &ntids);
        if (err == 0)
            err = log_take(ls, LR_TRC, tids, ntids); /* owns tids */
        break;
    default:
        err = EINVAL;
        break;
    }
    if (err) {
        miocnak(q, mp, 0, err);
        return;
    }
    freemsg(mp->b_cont);
    mp->b_cont = NULL;
    miocack(q, mp, 0, 0);
}

/*
 * log_putmsg -- a process logs: M_PROTO holding exactly a struct log_ctl,
 *   then the text.  mid becomes LOG_MID, sid the stream's minor; level,
 *   flags and pri (computed from the flags when 0) are the process's; the
 *   text is cut at LOGMSGSZ - 1 bytes and at its first NUL.  Anything else is
 *   counted as ls_badmsg and freed (log(7): the driver cannot fail putmsg).
 */
static void log_putmsg(queue_t *q, mblk_t *mp)
{
    struct log_strm *ls = q->q_ptr;
    struct log_ctl lc;
    char text[LOGMSGSZ];
    size_t len = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) != sizeof(lc)) {
        atomic_fetch_add(&log_nbadmsg, 1);
        freemsg(mp);
        return;
    }
    memcpy(&lc, mp->b_rptr, sizeof(lc));
    for (mblk_t *bp = mp->b_cont; bp && len < sizeof(text) - 1; bp = bp->b_cont) {
        size_t n = (size_t)(bp->b_wptr - bp->b_rptr);
        if (n > sizeof(text) - 1 - len)
            n = sizeof(text) - 1 - len;
        memcpy(text + len, bp->b_rptr, n);
        len += n;
    }
    freemsg(mp);
    text[len] = '\0';
    len = strlen(text);
    lc.mid = LOG_MID;
    lc.sid = (short)ls->minor;
    lc.flags &= SL_FATAL | SL_NOTIFY | SL_ERROR | SL_TRACE | SL_CONSOLE | SL_WARN | SL_NOTE;
    if (lc.pri == 0)
        lc.pri = ust_log_pri((unsigned short)lc.flags);
    (void)ust_log_route(&lc, text, len, NULL, 0);
}

/* M_FLUSH at a driver: nothing is queued here; turn FLUSHR around. */
static void log_flush(queue_t *q, mblk_t *mp)
{
    if (mp->b_wptr > mp->b_rptr && (*mp->b_rptr & FLUSHR)) {
        *mp->b_rptr &= ~FLUSHW;
        flushq(RD(q), FLUSHDATA);
        qreply(q, mp);
        return;
    }
    freemsg(mp);
}

static int log_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_IOCTL:
        log_ioctl(q, mp);
        break;
    case M_PROTO:
        log_putmsg(q, mp);
        break;
    case M_FLUSH:
        log_flush(q, mp);
        break;
    default:
        atomic_fetch_add(&log_nbadmsg, 1);
        freemsg(mp);
        break;
    }
    return 0;
}
