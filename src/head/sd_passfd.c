/* SPDX-License-Identifier: MIT */
/*
 * sd_passfd.c -- passing descriptors over a pipe: I_SENDFD, I_RECVFD.
 *
 * Principles of operation
 *   I_SENDFD puts an M_PASSFP straight on the peer head's read queue (through
 *   the head's put procedure, past any modules, as SVR4 does;
 *   ust_pipe_put_peer).  Its data block is an esballoc buffer (struct passfp)
 *   holding either a close-on-exec duplicate of an ordinary descriptor or a
 *   reference on a stream; I_RECVFD turns it into a new descriptor.  The
 *   buffer's free routine releases what was never received, so flushing or
 *   closing never leaks a descriptor.  On a pipe split across processes
 *   (sd_xpipe.c) the descriptor travels on the pipe's bell instead, and the
 *   receiving process makes the same M_PASSFP (ust_passfp_received) with the
 *   credentials the kernel attached.  A stream whose only references left
 *   are its own M_PASSFPs on its own read queue is released when its last
 *   descriptor closes (ust_sd_passfp_cycle).
 *
 * Locking
 *   I_RECVFD holds the receiving stream's sd_lock (ust_sd_lockq) only while
 *   it looks at and takes the front message; a passed stream is entered
 *   after (its sd_lock is never taken under another stream's).  No lock of
 *   this file's own.
 */
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sthead.h"

/* ------------------------------------------------------------------------ */
/* I_SENDFD / I_RECVFD                                                      */
/* ------------------------------------------------------------------------ */
/* The buffer of an M_PASSFP (esballoc'd: freeing the message runs
 * passfp_free, which releases whatever was not received). */
struct passfp {
    frtn_t frtn;       /* free_func = passfp_free, free_arg = this */
    int fd;            /* close-on-exec duplicate of an ordinary file, or -1 */
    struct stdata *sd; /* a stream passed (one sd_refs reference), or NULL */
    int acc;           /* UST_ACC_* of the stream descriptor passed (sd_access.c) */
    uid_t uid;         /* sender's effective ids */
    gid_t gid;
};

static void passfp_free(caddr_t arg)
{
    struct passfp *pf = (struct passfp *)(void *)arg;

    if (pf->fd >= 0)
        close(pf->fd);
    if (pf->sd != NULL)
        ust_sd_rele_deferred(pf->sd);
    free(pf);
}

#define CYCLE_WAIT_MS 2000 /* ust_sd_passfp_cycle: how long other calls may take to leave */

/* 1 if mp is an M_PASSFP carrying sd itself. */
static int passfp_of(const mblk_t *mp, const struct stdata *sd)
{
    return mp->b_datap->db_type == M_PASSFP &&
           ((const struct passfp *)(const void *)mp->b_rptr)->sd == sd;
}

/*
 * ust_sd_passfp_cycle -- a descriptor of sd was just closed, `left` references
 *   remain.  If every one of them is an M_PASSFP of sd waiting on sd's own
 *   read queue (a pipe end sent to itself through its peer) and no call is
 *   inside the stream (once those that were have left), nothing can ever
 *   receive them: they are taken off and
 *   freed, which drops the last reference and tears the stream down
 *   (ust_sd_rele_deferred).  Cycles through two or more streams are not
 *   found.  Context: no lock held; the caller counts one call on sd
 *   (sd_calls), which keeps it from being torn down while this looks, and
 *   which this ends (ust_sd_put) before freeing anything: the teardown that
 *   the last free may run inline waits for calls to end.
 */
void ust_sd_passfp_cycle(struct stdata *sd, int left)
{
    mblk_t *mp, *drop = NULL;
    int n = 0;
    queue_t *rq = sd->sd_rq;

    if (left <= 0 || rq == NULL) {
        ust_sd_put(sd);
        return;
    }
    struct ust_qpriv *pv = ust_qpv(rq);
    /* Another call may still be inside briefly (one that began before the
     * last descriptor went: a hang-up or close of the peer delivered here,
     * an orphan check): wait for it, up to CYCLE_WAIT_MS, before looking.
     * One that stays (a read blocked since before the close) keeps the
     * stream, as it would keep any stream. */
    for (int waited = 0;; waited++) {
        n = 0;
        ust_lock(&pv->lock);
        for (mp = rq->q_first; mp != NULL; mp = mp->b_next)
            n += passfp_of(mp, sd);
        ust_unlock(&pv->lock);
        if (n != left || atomic_load(&sd->sd_refs) != n || waited >= CYCLE_WAIT_MS) {
            ust_sd_put(sd);
            return;
        }
        ust_sd_calls_fence();
        if (ust_sd_calls_in(sd) == 1)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    /* No descriptor is left and no other call is inside: nothing else
     * takes messages off this queue, so those found are still there.  The
     * last reference dropped tears sd down on another thread, which waits
     * for the caller's call to end (wait_calls). */
    for (;;) {
        ust_lock(&pv->lock);
        for (mp = rq->q_first; mp != NULL && !passfp_of(mp, sd); mp = mp->b_next)
            ;
        ust_unlock(&pv->lock);
        if (mp == NULL)
            break;
        rmvq(rq, mp);
        mp->b_next = drop;
        drop = mp;
    }
    /* The references are in hand now: no one else can drop them. */
    ust_sd_put(sd);
    while (drop != NULL) { /* the last freemsg may free sd: not touched after */
        mp = drop;
        drop = mp->b_next;
        mp->b_next = NULL;
        freemsg(mp);
    }
}

/* Build the M_PASSFP for descriptor fd: 0 and *mpp, or an errno (EBADF,
 * EMFILE for the duplicate, EAGAIN when out of memory). */
static int passfp_make(int fd, uid_t uid, gid_t gid, mblk_t **mpp)
{
    struct passfp *pf;
    struct stdata *fsd;
    mblk_t *mp;
    int err;

    if (fd < 0)
        return EBADF;
    pf = calloc(1, sizeof(*pf));
    if (pf == NULL)
        return EAGAIN;
    pf->frtn.free_func = passfp_free;
    pf->frtn.free_arg = (caddr_t)pf;
    pf->fd = -1;
    pf->uid = uid;
    pf->gid = gid;
    fsd = ust_sd_get(fd, &err);
    if (fsd != NULL) {
        if (ust_sd_hold_live(fsd)) {
            pf->sd = fsd;
            pf->acc = ust_sd_acc_get(fd); /* received with the sender's mode */
        }
        ust_sd_put(fsd);
        if (pf->sd == NULL) {
            free(pf);
            return EBADF; /* closed meanwhile */
        }
    } else if (err == ENOSTR) {
        pf->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (pf->fd < 0) {
            err = errno == EBADF ? EBADF : EMFILE;
            free(pf);
            return err;
        }
    } else {
        free(pf);
        return EBADF;
    }
    mp = esballoc((unsigned char *)pf, sizeof(*pf), BPRI_MED, &pf->frtn);
    if (mp == NULL) {
        passfp_free((caddr_t)pf);
        return EAGAIN;
    }
    mp->b_datap->db_type = M_PASSFP;
    mp->b_wptr += sizeof(*pf);
    *mpp = mp;
    return 0;
}

mblk_t *ust_passfp_received(int fd, uid_t uid, gid_t gid)
{
    struct passfp *pf = calloc(1, sizeof(*pf));
    if (pf == NULL)
        return NULL;
    pf->frtn.free_func = passfp_free;
    pf->frtn.free_arg = (caddr_t)pf;
    pf->fd = fd;
    pf->uid = uid;
    pf->gid = gid;
    mblk_t *mp = esballoc((unsigned char *)pf, sizeof(*pf), BPRI_MED, &pf->frtn);
    if (mp == NULL) {
        free(pf);
        return NULL;
    }
    mp->b_datap->db_type = M_PASSFP;
    mp->b_wptr += sizeof(*pf);
    return mp;
}

mblk_t *ust_passfp_stream(int fd, uid_t uid, gid_t gid)
{
    mblk_t *mp;
    return passfp_make(fd, uid, gid, &mp) == 0 ? mp : NULL;
}

int ust_passfp_release_fd(mblk_t *mp)
{
    struct passfp *pf = (struct passfp *)(void *)mp->b_rptr;
    int fd = pf->fd;
    pf->fd = -1;
    freemsg(mp);
    return fd;
}

/*
 * ust_sd_sendfd -- I_SENDFD: pass descriptor fd to the other end of the pipe
 *   sd.  The message goes straight to the peer head's read queue.
 *   Context: a system call on sd (sd_calls counted); no lock held.
 *   Returns 0 or an errno: EINVAL (sd is not a pipe end), ENXIO (hung up:
 *   the other end is closed), the M_ERROR errors (sd_state.c), EBADF (fd
 *   not open), EAGAIN (the peer's read queue is full, or no memory), EMFILE.
 */
int ust_sd_sendfd(struct stdata *sd, int fd)
{
    return ust_sd_sendfd_cred(sd, fd, geteuid(), getegid(), 1);
}

int ust_sd_sendfd_cred(struct stdata *sd, int fd, uid_t uid, gid_t gid, int cross)
{
    mblk_t *mp;
    int err = 0;

    ust_lock(&sd->sd_lock);
    if (!(sd->sd_flag & STRPIPE))
        err = EINVAL;
    else
        err = ust_sd_ioc_error(sd); /* sd_state.c: errors, hang-up ENXIO */
    ust_unlock(&sd->sd_lock);
    if (err != 0)
        return err;
    if (__atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) != NULL)
        return cross ? ust_sd_procs()->xpipe_sendfd(sd, fd) : ENXIO; /* the peer may be another process */
    err = passfp_make(fd, uid, gid, &mp);
    if (err != 0)
        return err;

    return ust_pipe_put_peer(sd, mp);
}

/* The first message at the head (queue lock taken briefly). */
static mblk_t *head_first(struct stdata *sd)
{
    struct ust_qpriv *pv = ust_qpv(sd->sd_rq);
    mblk_t *mp;

    ust_lock(&pv->lock);
    mp = sd->sd_rq->q_first;
    ust_unlock(&pv->lock);
    return mp;
}

/*
 * ust_sd_recvfd -- I_RECVFD: take the M_PASSFP at the front of the head's read
 *   queue and return a new descriptor for what it carries, with the sender's
 *   effective uid and gid.  The descriptor is not close-on-exec.
 *   Context: a system call on sd; blocks until a message arrives unless the
 *   stream is non-blocking.  Takes sd_lock with ust_sd_lockq (taking the
 *   message off may back-enable the peer's write side); dropped while
 *   waiting.  The front of the head read queue changes only under sd_lock,
 *   so the message seen is the one taken.
 *   The descriptor number is reserved first, before sd_lock: installing a
 *   passed stream takes that stream's sd_lock, which is never taken under
 *   ours (it may be sd itself, or a stream receiving sd's descriptor at the
 *   same time).  So the message comes off before the passed stream is
 *   entered; it goes back to the front only if that fails (a stream with no
 *   descriptor left and no socket pair to be had).
 *   Returns 0 (rf filled) or an errno: EBADMSG (the front message is not an
 *   M_PASSFP; it stays queued), EAGAIN (nothing queued, O_NONBLOCK), ENXIO
 *   (hung up and nothing queued), the read error of an M_ERROR, EINTR,
 *   EMFILE (no descriptor free; the message stays queued).
 */
int ust_sd_recvfd(struct stdata *sd, struct strrecvfd *rf)
{
    struct passfp *pf;
    mblk_t *mp;
    int err = 0;

    /* Any cheap descriptor holds the number until dup3 replaces it. */
    int fd = eventfd(0, EFD_CLOEXEC);
    if (fd < 0)
        return errno;
    ust_sd_lockq(sd);
    for (;;) {
        unsigned seq = ust_sd_wait_seq(&sd->sd_rwait);
        mp = head_first(sd);
        if (mp != NULL)
            break;
        if (ust_sd_absorb_some(sd)) /* data a pipe's writer deposited: EBADMSG */
            continue;
        if ((sd->sd_flag & STRDERR) && sd->sd_rerror)
            err = sd->sd_rerror;
        else if (sd->sd_flag & (STRHUP | STRCLOSE))
            err = ENXIO;
        else if (sd->sd_oflag & (O_NONBLOCK | O_NDELAY))
            err = EAGAIN;
        else {
            int unwoken;
            err = ust_sd_wait_data(sd, seq, &unwoken);
        }
        if (err != 0)
            goto fail_locked;
    }
    pf = (struct passfp *)(void *)mp->b_rptr;
    if (mp->b_datap->db_type != M_PASSFP || (pf->sd == NULL && pf->fd < 0)) {
        err = EBADMSG; /* not a passed file, or one received through a dup */
        goto fail_locked;
    }
    if (pf->sd == NULL && dup3(pf->fd, fd, 0) < 0) {
        err = errno;
        goto fail_locked;
    }
    rmvq(sd->sd_rq, mp);
    ust_sd_rready(sd);
    ust_sd_unlockq(sd);
    if (pf->sd != NULL) {
        int r = ust_sd_dup_fd_into(pf->sd, fd);
        if (r < 0) {
            ust_sd_lockq(sd);
            if (!putbq(sd->sd_rq, mp)) /* its band exists: cannot fail */
                freemsg(mp);
            ust_sd_rready(sd);
            ust_sd_unlockq(sd);
            close(fd);
            return -r;
        }
        ust_sd_acc_set(fd, pf->acc);
    }
    rf->fd = fd;
    rf->uid = pf->uid;
    rf->gid = pf->gid;
    freemsg(mp); /* releases the in-flight duplicate or stream reference */
    return 0;

fail_locked:
    ust_sd_unlockq(sd);
    close(fd);
    return err;
}

int ust_passfp_file(const mblk_t *mp, uid_t *uid, gid_t *gid)
{
    const struct passfp *pf = (const struct passfp *)(const void *)mp->b_rptr;
    *uid = pf->uid;
    *gid = pf->gid;
    return pf->sd == NULL ? pf->fd : -1;
}
