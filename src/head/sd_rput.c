/* SPDX-License-Identifier: MIT */
/*
 * sd_rput.c -- the stream head's queue pair: what arrives at the head.
 *
 * MT level: D_MP (no perimeter).  The head's put procedures run on whatever
 * thread called putnext below; everything they change in struct stdata is
 * changed under sd_lock, and sd_lock is never held while a message is sent on
 * (putnext, qreply) or a signal is raised with kill().
 * Flow control: the head read queue has a service procedure, so canputnext
 * from below stops at it and its water marks (UST_STRHIGH/UST_STRLOW, or
 * SO_HIWAT/SO_LOWAT) throttle the stream; readers take messages off with
 * getq, which back-enables the queues below when it drains to low water.
 * The write queue has a service procedure too, so that back-enabling from
 * below reaches it.  Neither is ever scheduled: qenable of a head queue calls
 * its head_enable hook instead (read side: wake readers; write side: wake
 * writers, set writable readiness, raise S_OUTPUT/S_WRNORM/S_WRBAND).
 *
 * Principles of operation
 *   Data messages (M_DATA, M_PROTO, M_PCPROTO, M_PASSFP) are queued on the
 *   head read queue under sd_lock, so a reader holding sd_lock sees a front
 *   that changes only by its own hand (high-priority messages go to the front,
 *   but they are queued under sd_lock too).  At most one high-priority message
 *   waits at the head: a second one is freed, as SVR4 does.  Every other type
 *   is acted upon at once and never queued; in particular M_SIG is delivered
 *   when it arrives rather than when it reaches the front of the queue (a
 *   documented simplification of SVR4, which queues it in line with data).
 *
 *   Readiness, the write side's relief and the locking with owed
 *   back-enables (ust_sd_lockq) are in sd_ready.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sthead.h"

#define SD_NOERROR  0xff /* M_ERROR byte that leaves that side's error unchanged */

static int sd_rput(queue_t *q, mblk_t *mp);
static int sd_rsrv(queue_t *q);
static int sd_wput(queue_t *q, mblk_t *mp);
static int sd_wsrv(queue_t *q);

static struct module_info sd_minfo = {
    .mi_idnum = 0,
    .mi_idname = "strhead",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = UST_STRHIGH,
    .mi_lowat = UST_STRLOW,
};

static struct qinit sd_rinit = {
    .qi_putp = sd_rput,
    .qi_srvp = sd_rsrv,
    .qi_minfo = &sd_minfo,
};

static struct qinit sd_winit = {
    .qi_putp = sd_wput,
    .qi_srvp = sd_wsrv,
    .qi_minfo = &sd_minfo,
};

static struct streamtab sd_headinfo = {
    .st_rdinit = &sd_rinit,
    .st_wrinit = &sd_winit,
};

/* The head whose read queue this thread's sd_data is queuing on (its putq
 * may qenable the queue; sd_data wakes the readers itself afterwards). */
static _Thread_local struct stdata *tls_queuing;

static size_t blen(const mblk_t *mp)
{
    return mp->b_wptr > mp->b_rptr ? (size_t)(mp->b_wptr - mp->b_rptr) : 0;
}

/* ------------------------------------------------------------------------ */
/* The head queue pair                                                      */
/* ------------------------------------------------------------------------ */

/*
 * sd_read_enable -- head_enable hook of the read queue: a message was queued
 *   where a reader wanted one, or procedures came on with messages waiting.
 *   Context: any thread; no lock needed (ust_sd_wake is lock-free).  Inside
 *   sd_data it does nothing: sd_data wakes the readers once it has unlocked.
 */
static void sd_read_enable(queue_t *q)
{
    struct stdata *sd = q->q_ptr;
    if (sd && tls_queuing != sd)
        ust_sd_wake(&sd->sd_rwait);
}


/*
 * ust_sd_headinit -- build the head queue pair of sd (sd_rq, sd_wq).
 *   Context: the stream head is being allocated (ust_sd_alloc); nobody else
 *   sees sd yet.  Procedures are turned on.
 *   Returns 0, or ENOMEM.
 */
int ust_sd_headinit(struct stdata *sd)
{
    queue_t *rq = ust_qalloc(&sd_headinfo, D_MP, NULL);
    if (!rq)
        return ENOMEM;
    queue_t *wq = WR(rq);
    queue_t *pair[2] = {rq, wq};
    for (int i = 0; i < 4; i++) /* a head from the pool starts with no band full */
        __atomic_store_n(&sd->sd_wfull[i], 0, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++) {
        struct ust_qpriv *pv = ust_qpv(pair[i]);
        ust_lock(&pv->lock); /* queue lock: q_flag writes */
        pair[i]->q_ptr = sd;
        __atomic_store_n(&pv->head_enable, i == 0 ? sd_read_enable : ust_sd_write_enable,
                         __ATOMIC_RELAXED);
        ust_qflag_set(pair[i], QHEAD);
        ust_unlock(&pv->lock);
    }
    ust_qp(rq)->stream = sd;
    sd->sd_rq = rq;
    sd->sd_wq = wq;
    qprocson(rq);
    return 0;
}

/* ust_sd_of -- the stream head of a head queue (QHEAD), else NULL.  Any
 * thread, no lock. */
struct stdata *ust_sd_of(queue_t *q)
{
    if (!q || !(ust_qflags(q) & QHEAD))
        return NULL;
    return q->q_ptr;
}

/* Never runs (head queues are not scheduled); its presence makes flow control
 * stop at the head read queue. */
static int sd_rsrv(queue_t *q)
{
    (void)q;
    return 0;
}

/* Never runs; its presence makes back-enabling reach the head write queue. */
static int sd_wsrv(queue_t *q)
{
    (void)q;
    return 0;
}

/* Nothing is expected to put into the head write queue itself (the head sends
 * with putnext from it); if something does, pass it on down. */
static int sd_wput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Send mp down the stream from the head, holding a claim on the write queue.
 * No lock held. */
static void sd_send_down(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
    ust_qrelease(wq);
}

/* ------------------------------------------------------------------------ */
/* Data                                                                     */
/* ------------------------------------------------------------------------ */


/* M_DATA, M_PROTO, M_PCPROTO, M_PASSFP: queue for the readers (a second
 * high-priority message is dropped), set the tokens, wake readers, signal
 * S_INPUT/S_RDNORM/S_RDBAND when the message is the first, S_HIPRI.  No lock
 * held; takes sd_lock. */
static void sd_data(struct stdata *sd, queue_t *q, mblk_t *mp)
{
    int pc = mp->b_datap->db_type >= QPCTL;
    unsigned char band = pc ? 0 : mp->b_band;
    struct ust_qpriv *pv = ust_qpv(q);

    /* A plain message joins the arrivals, as a module-free pipe's writes do
     * (sd_arrive.c; docs/STREAMHEAD.md "Through modules without queues"):
     * no queue lock, wake-ups on edges only, read in batches. */
    if (ust_sd_arrive(sd, q, mp))
        return;

    /* Data deposited straight at this head (a pipe's arrivals, sd_arrive.c)
     * is older than mp: queued first. */
    ust_sd_absorb_to(sd, q);

    /* Fast path, the common case of a busy stream: a normal message, the
     * readable token already shown, no M_READ outstanding, no signals wanted.
     * Nothing of sd_lock's is changed, so it is not taken: readers capture
     * the wait sequence before they test the queue (sd_read.c), and the wake
     * below comes after putq. */
    if (!pc && __atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&sd->sd_mread_sent, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&sd->sd_sigflags, __ATOMIC_RELAXED)) {
        tls_queuing = sd;
        int ok = putq(q, mp);
        tls_queuing = NULL;
        if (!ok) {
            freemsg(mp);
            return;
        }
        ust_sd_wake(&sd->sd_rwait);
        /* A reader that emptied the queue may have withdrawn the token
         * between our look and putq: look again (ust_sd_rready). */
        if (!__atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED)) {
            ust_lock(&sd->sd_lock);
            ust_sd_rready(sd);
            ust_unlock(&sd->sd_lock);
        }
        return;
    }

    ust_lock(&sd->sd_lock); /* sd_lock: the front of the read queue, readiness */
    if (pc) {
        ust_lock(&pv->lock); /* queue lock: q_first */
        int busy = q->q_first && q->q_first->b_datap->db_type >= QPCTL;
        ust_unlock(&pv->lock);
        if (busy) { /* one high-priority message at a time */
            ust_unlock(&sd->sd_lock);
            freemsg(mp);
            return;
        }
    }
    tls_queuing = sd; /* putq's qenable: the wake comes below */
    int ok = putq(q, mp);
    tls_queuing = NULL;
    if (!ok) { /* no memory for the band */
        ust_unlock(&sd->sd_lock);
        freemsg(mp);
        return;
    }
    __atomic_store_n(&sd->sd_mread_sent, 0, __ATOMIC_RELAXED);
    if (pc)
        ust_sd_ready_pri(sd, 1);
    else
        ust_sd_ready_read(sd, 1);
    int sf = sd->sd_sigflags;
    if (sf) {
        if (pc) {
            if (sf & S_HIPRI)
                ust_sd_sendsig(sd, S_HIPRI, 0, SIGPOLL);
        } else {
            ust_lock(&pv->lock); /* queue lock: q_first */
            int first = q->q_first == mp;
            ust_unlock(&pv->lock);
            int ev = S_INPUT | (band ? S_RDBAND : S_RDNORM);
            if (first && (sf & ev))
                ust_sd_sendsig(sd, ev, band, SIGPOLL);
        }
    }
    ust_unlock(&sd->sd_lock);
    /* Woken after unlocking, so the reader does not wake into a held lock.
     * No wake-up is lost: a reader tests the queue and reads the wait
     * sequence under sd_lock, before this wake bumps it. */
    ust_sd_wake(&sd->sd_rwait);
}

/* ------------------------------------------------------------------------ */
/* M_SETOPTS                                                                */
/* ------------------------------------------------------------------------ */

/* New read options from so_readopt: the mode and the protocol option are
 * each replaced when given validly, RFILL and RMREAD follow the message. */
static int sd_new_rdopt(int old, int ro)
{
    int mode = old & RMODEMASK;
    int prot = old & RPROTMASK;
    if ((ro & RMODEMASK) != RMODEMASK)
        mode = ro & RMODEMASK;
    switch (ro & RPROTMASK) {
    case RPROTNORM:
    case RPROTDAT:
    case RPROTDIS:
        prot = ro & RPROTMASK;
        break;
    default: /* none or several: keep */
        break;
    }
    return mode | prot | (ro & (RFILL | RMREAD));
}

/* M_SETOPTS (stroptions(9S)): apply every option flagged in so_flags; a
 * message shorter than struct stroptions is ignored.  No lock held. */
static void sd_setopts(struct stdata *sd, queue_t *q, mblk_t *mp)
{
    struct stroptions so;
    if (blen(mp) < sizeof(so)) {
        freemsg(mp);
        return;
    }
    memcpy(&so, mp->b_rptr, sizeof(so));
    freemsg(mp);
    uint_t f = so.so_flags;

    /* Queue fields: strqset takes the queue lock and may back-enable, so no
     * sd_lock here. */
    unsigned char band = (f & SO_BAND) ? so.so_band : 0;
    if ((f & SO_MINPSZ) && (so.so_minpsz >= 0 || so.so_minpsz == INFPSZ))
        strqset(q, QMINPSZ, 0, (intptr_t)so.so_minpsz);
    if ((f & SO_MAXPSZ) && (so.so_maxpsz >= 0 || so.so_maxpsz == INFPSZ))
        strqset(q, QMAXPSZ, 0, (intptr_t)so.so_maxpsz);
    if (f & SO_HIWAT)
        strqset(q, QHIWAT, band, (intptr_t)so.so_hiwat);
    if (f & SO_LOWAT)
        strqset(q, QLOWAT, band, (intptr_t)so.so_lowat);

    ust_lock(&sd->sd_lock); /* sd_lock: options */
    if (f & SO_READOPT)
        sd->sd_rdopt = sd_new_rdopt(sd->sd_rdopt, so.so_readopt);
    if (f & SO_WROFF)
        sd->sd_wroff = so.so_wroff;
    if (f & SO_MREADON)
        sd->sd_flag |= STRMREAD;
    if (f & SO_MREADOFF)
        sd->sd_flag &= ~STRMREAD;
    if (f & SO_NDELON)
        sd->sd_flag |= STRNDELON;
    if (f & SO_NDELOFF)
        sd->sd_flag &= ~STRNDELON;
    if (f & SO_ISTTY)
        sd->sd_flag |= STRISTTY;
    if (f & SO_ISNTTY)
        sd->sd_flag &= ~STRISTTY;
    if (f & SO_TOSTOP)
        sd->sd_flag |= STRTOSTOP;
    if (f & SO_TONSTOP)
        sd->sd_flag &= ~STRTOSTOP;
    if (f & SO_DELIM)
        sd->sd_flag |= STRDELIM;
    if (f & SO_NODELIM)
        sd->sd_flag &= ~STRDELIM;
    if (f & SO_STRHOLD)
        sd->sd_flag |= STRHOLD;
    if (f & SO_ERROPT) {
        int eo = sd->sd_erropt;
        if (so.so_erropt & RERRMASK)
            eo = (eo & ~RERRMASK) | ((so.so_erropt & RERRNONPERSIST) ? RERRNONPERSIST : RERRNORM);
        if (so.so_erropt & WERRMASK)
            eo = (eo & ~WERRMASK) | ((so.so_erropt & WERRNONPERSIST) ? WERRNONPERSIST : WERRNORM);
        sd->sd_erropt = eo;
    }
    if ((f & SO_MAXBLK) && (so.so_maxblk > 0 || so.so_maxblk == INFPSZ))
        sd->sd_maxblk = so.so_maxblk;
    ust_unlock(&sd->sd_lock);
}

/* ------------------------------------------------------------------------ */
/* M_ERROR, M_HANGUP, M_UNHANGUP                                            */
/* ------------------------------------------------------------------------ */

/* Wake readers, writers and the ioctl waiter.  Any context. */
static void sd_wake_all(struct stdata *sd)
{
    ust_sd_wake(&sd->sd_rwait);
    ust_sd_wake(&sd->sd_wwait);
    ust_sd_wake(&sd->sd_iwait);
}

/*
 * sd_error -- M_ERROR: one byte sets both errors, two bytes the read then the
 *   write error.  0 clears that side, 0xff leaves it unchanged, anything else
 *   sets it.  A side that gets an error is flushed: M_FLUSH with FLUSHR and/or
 *   FLUSHW goes down (the driver turns FLUSHR back up, emptying the head).
 */
static void sd_error(struct stdata *sd, mblk_t *mp)
{
    size_t n = blen(mp);
    if (n < 1) {
        freemsg(mp);
        return;
    }
    int rerr = mp->b_rptr[0];
    int werr = n >= 2 ? mp->b_rptr[1] : rerr;
    freemsg(mp);
    int flush = 0;

    ust_lock(&sd->sd_lock); /* sd_lock: errors, readiness, signals */
    if (rerr != SD_NOERROR) {
        if (rerr == 0) {
            sd->sd_rerror = 0;
            sd->sd_flag &= ~STRDERR;
        } else {
            sd->sd_rerror = rerr;
            sd->sd_flag |= STRDERR;
            flush |= FLUSHR;
        }
    }
    if (werr != SD_NOERROR) {
        if (werr == 0) {
            sd->sd_werror = 0;
            sd->sd_flag &= ~STWRERR;
        } else {
            sd->sd_werror = werr;
            sd->sd_flag |= STWRERR;
            flush |= FLUSHW;
        }
    }
    /* Readiness follows the errors both ways: a read error makes the stream
     * readable (a read fails at once), a write error writable; clearing one
     * withdraws what it alone gave (ust_sd_rready: readable while a message
     * waits; POLLOUT: flow control again, below). */
    if (rerr != SD_NOERROR)
        ust_sd_rready(sd);
    if (werr != SD_NOERROR && werr != 0)
        ust_sd_ready_write(sd, 1);
    if (flush && (sd->sd_sigflags & S_ERROR))
        ust_sd_sendsig(sd, S_ERROR, 0, SIGPOLL);
    sd_wake_all(sd);
    ust_unlock(&sd->sd_lock);
    if (werr == 0)
        ust_sd_wready_after_write(sd); /* band 0 full: no POLLOUT */

    if (flush) {
        mblk_t *fm = ust_allocb_type(1, M_FLUSH);
        if (fm) {
            *fm->b_wptr++ = (unsigned char)flush;
            sd_send_down(sd, fm);
        }
    }
}

/* M_HANGUP (on) / M_UNHANGUP (off).  Hang-up readiness cannot be taken
 * back from the descriptor (sd_fd.c), so M_UNHANGUP only clears STRHUP.  No
 * lock held. */
static void sd_hangup(struct stdata *sd, int on)
{
    ust_lock(&sd->sd_lock); /* sd_lock: sd_flag, readiness, signals */
    if (on) {
        sd->sd_flag |= STRHUP;
        ust_sd_ready_hup(sd);
        if (sd->sd_sigflags & S_HANGUP)
            ust_sd_sendsig(sd, S_HANGUP, 0, SIGPOLL);
        sd_wake_all(sd);
    } else {
        sd->sd_flag &= ~STRHUP;
    }
    ust_unlock(&sd->sd_lock);
}

/* ------------------------------------------------------------------------ */
/* M_FLUSH                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * sd_flush -- FLUSHR empties the head read queue (one band with FLUSHBAND);
 *   FLUSHW discards write data held at the head (SNDHOLD) and sends the
 *   message back down with FLUSHR cleared, marked MSGNOLOOP so that a pipe
 *   does not bounce it forever.  Otherwise the message is freed.
 */
static void sd_flush(struct stdata *sd, queue_t *q, mblk_t *mp)
{
    size_t n = blen(mp);
    if (n < 1) {
        freemsg(mp);
        return;
    }
    unsigned char fl = mp->b_rptr[0];
    int byband = (fl & FLUSHBAND) && n >= 2;
    unsigned char band = byband ? mp->b_rptr[1] : 0;
    /* A FIFO's FLUSHW came down its write side and looped: what was written
     * and not yet read waits on this read side (sd_fifo.c, "M_FLUSH"). */
    int fifo = (fl & FLUSHW) && !(mp->b_flag & MSGNOLOOP) && ust_sd_isfifo(sd);

    if ((fl & FLUSHR) || fifo) {
        ust_sd_lockq(sd); /* sd_lock: the read queue's front, readiness */
        ust_sd_absorb_to(sd, q); /* what arrived before the flush goes with it */
        if (byband)
            flushband(q, band, FLUSHALL);
        else
            flushq(q, FLUSHALL);
        ust_sd_rready(sd);
        ust_sd_unlockq(sd);
    }
    if ((fl & FLUSHW) && !(mp->b_flag & MSGNOLOOP)) {
        mblk_t *held = NULL;
        ust_lock(&sd->sd_lock); /* sd_lock: sd_hold */
        if (!byband || band == 0) {
            held = sd->sd_hold;
            sd->sd_hold = NULL;
        }
        ust_unlock(&sd->sd_lock);
        freemsg(held);
        /* down again as FLUSHR on a FIFO: it flushes the modules' read
         * queues on its second way up */
        mp->b_rptr[0] = fifo ? (unsigned char)((fl & ~FLUSHW) | FLUSHR) : fl & ~FLUSHR;
        mp->b_flag |= MSGNOLOOP;
        sd_send_down(sd, mp);
        return;
    }
    freemsg(mp);
}

/* ------------------------------------------------------------------------ */
/* M_SIG, M_PCSIG                                                           */
/* ------------------------------------------------------------------------ */

/* Deliver the signal named by the first byte now: SIGPOLL to the processes
 * registered for S_MSG, any other signal to this process. */
static void sd_signal(struct stdata *sd, mblk_t *mp)
{
    int sig = blen(mp) >= 1 ? mp->b_rptr[0] : 0;
    freemsg(mp);
    if (sig <= 0 || sig >= NSIG)
        return;
    if (sig == SIGPOLL) {
        ust_lock(&sd->sd_lock); /* sd_lock: the registrations */
        if (sd->sd_sigflags & S_MSG)
            ust_sd_sendsig(sd, S_MSG, 0, SIGPOLL);
        ust_unlock(&sd->sd_lock);
        return;
    }
    kill(getpid(), sig); /* no lock held: the handler may run right here */
}

/* ------------------------------------------------------------------------ */
/* ioctl replies                                                            */
/* ------------------------------------------------------------------------ */

/*
 * ust_sd_ioc_reply -- route an ioctl reply (M_IOCACK, M_IOCNAK, M_COPYIN,
 *   M_COPYOUT) to the ioctl in progress: stored in sd_iocblk (sd_iwait woken)
 *   only if an ioctl holds the slot, the id matches and no reply waits yet;
 *   otherwise freed.  Context: any thread, no lock held; takes sd_lock.
 */
void ust_sd_ioc_reply(struct stdata *sd, mblk_t *mp)
{
    unsigned char type = mp->b_datap->db_type;
    int copy = type == M_COPYIN || type == M_COPYOUT;
    size_t need = copy ? sizeof(struct copyreq) : sizeof(struct iocblk);
    if (blen(mp) < need) {
        freemsg(mp);
        return;
    }
    uint_t id;
    if (copy)
        memcpy(&id, mp->b_rptr + offsetof(struct copyreq, cq_id), sizeof(id));
    else
        memcpy(&id, mp->b_rptr + offsetof(struct iocblk, ioc_id), sizeof(id));

    ust_lock(&sd->sd_lock); /* sd_lock: the ioctl slot */
    if (sd->sd_iocbusy && sd->sd_iocid == id && !sd->sd_iocblk) {
        sd->sd_iocblk = mp;
        mp = NULL;
        ust_sd_wake(&sd->sd_iwait);
    }
    ust_unlock(&sd->sd_lock);
    freemsg(mp); /* a stale or duplicate reply */
}

/* An M_IOCTL reached the head (across a pipe, or from a confused module): the
 * head is nobody's ioctl target, so refuse it back down with EINVAL. */
static void sd_ioctl_nak(struct stdata *sd, mblk_t *mp)
{
    if (blen(mp) < sizeof(struct iocblk)) {
        freemsg(mp);
        return;
    }
    struct iocblk ioc;
    memcpy(&ioc, mp->b_rptr, sizeof(ioc));
    ioc.ioc_count = 0;
    ioc.ioc_error = EINVAL;
    ioc.ioc_rval = -1;
    memcpy(mp->b_rptr, &ioc, sizeof(ioc));
    freemsg(mp->b_cont);
    mp->b_cont = NULL;
    mp->b_datap->db_type = M_IOCNAK;
    sd_send_down(sd, mp);
}

/* ------------------------------------------------------------------------ */
/* The read put procedure                                                   */
/* ------------------------------------------------------------------------ */

/*
 * sd_rput -- every message arriving at the stream head.
 *   Context: the thread that called putnext below (a driver, a module's
 *   service procedure on a scheduler thread, a pipe peer's writer); a claim on
 *   q is held by the caller.  No lock held on entry or return.
 */
static int sd_rput(queue_t *q, mblk_t *mp)
{
    /* The pair's stream, not q_ptr: queue_t's first line is the reader's
     * (strcore.h, "Mirrors").  The same head: q_ptr differs only while a
     * multiplexer holds the pair, and then this is not its put procedure. */
    struct stdata *sd = ust_qp(q)->stream;
    if (!sd || !mp) {
        freemsg(mp);
        return 0;
    }
    switch (mp->b_datap->db_type) {
    case M_DATA:
    case M_PROTO:
    case M_PCPROTO:
    case M_PASSFP:
        sd_data(sd, q, mp);
        break;
    case M_SETOPTS:
        sd_setopts(sd, q, mp);
        break;
    case M_ERROR:
        sd_error(sd, mp);
        break;
    case M_HANGUP:
        freemsg(mp);
        sd_hangup(sd, 1);
        break;
    case M_UNHANGUP:
        freemsg(mp);
        sd_hangup(sd, 0);
        break;
    case M_FLUSH:
        sd_flush(sd, q, mp);
        break;
    case M_SIG:
    case M_PCSIG:
        sd_signal(sd, mp);
        break;
    case M_IOCACK:
    case M_IOCNAK:
    case M_COPYIN:
    case M_COPYOUT:
        ust_sd_ioc_reply(sd, mp);
        break;
    case M_IOCTL:
        sd_ioctl_nak(sd, mp);
        break;
    case M_READ:
        /* The far end of a pipe is about to block reading: what this head
         * holds (SNDHOLD) is what it waits for. */
        freemsg(mp);
        ust_sd_hold_release(sd);
        break;
    default: /* M_IOCDATA and anything else has no business here */
        freemsg(mp);
        break;
    }
    return 0;
}
