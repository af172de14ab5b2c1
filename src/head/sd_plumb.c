/* SPDX-License-Identifier: MIT */
/*
 * sd_plumb.c -- pushing and popping modules (I_PUSH, I_POP) and taking a
 * module's queue pair out of a stream.  Opening is sd_open.c, closing and
 * teardown sd_close.c.
 *
 * Locking
 *   sd_plumb serializes the plumbing of one stream: push, pop, reopen and
 *   teardown; module open and close routines run under it and may sleep.
 *   sd_lock is taken inside it, briefly, for the stream's state; no stream
 *   head lock is held while a module's open or close routine runs.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>

#include "sthead.h"

/* Take rq's pair out of the stream after its close (teardown) and free it;
 * what its queues still hold is discarded with it. */
void ust_sd_pair_remove(queue_t *rq)
{
    qprocsoff(rq);
    ust_qunlink(rq);
    ust_qfree(rq);
}

/* The same for a pair popped (I_POP) or whose push failed, with the stream
 * in use: what its queues still hold is passed on first, in order, while
 * later messages queue behind (ust_qpass_held): down from the write queue,
 * up from the read queue.  Nothing is lost or reordered. */
static void pair_pop(queue_t *rq)
{
    qprocsoff(rq);
    ust_qpass_held(WR(rq));
    ust_qpass_held(RD(rq));
    ust_qunlink(rq);
    ust_qfree(rq);
}

/* The stream's error for plumbing (I_PUSH, I_POP): the M_ERROR error, ENXIO
 * after a hang-up, as streamio(7) lists them; 0 if neither.  sd_lock held. */
static int plumb_error(struct stdata *sd)
{
    return ust_sd_ioc_error(sd); /* the table of sd_state.c */
}

/*
 * ust_sd_top -- the queue just below the head on the write side: the
 * topmost module's write queue, the driver's, or (pipe) the other end's.
 *   Context: sd_plumb held, so that it stays what it is.  NULL if none.
 */
queue_t *ust_sd_top(struct stdata *sd)
{
    return ust_qnext(sd->sd_wq);
}

/*
 * ust_sd_push -- I_PUSH: open module `name` directly below the stream head.
 *   Context: blocking (the module's open may sleep); takes sd_plumb, then
 *   briefly sd_lock; no lock held while the module's open runs except
 *   sd_plumb.
 *   Returns 0, or EINVAL (name NULL, empty, longer than FMNAMESZ, not a
 *   registered module -- a driver's name is not one -- UST_NSTRPUSH modules
 *   already pushed, or the stream is linked under a multiplexer), ENXIO
 *   (hung up), the M_ERROR error of a stream in error, ENOSR (no memory
 *   for the queues), or the error the module's open returned (the module is
 *   then taken out again).
 */
int ust_sd_push(struct stdata *sd, const char *name, cred_t *cr)
{
    struct ust_modent *ent;
    queue_t *rq;
    dev_t dev;
    int err, oflag;

    if (name == NULL || name[0] == '\0' || strnlen(name, FMNAMESZ + 1) > FMNAMESZ)
        return EINVAL;
    ust_lock(&sd->sd_plumb);
    ust_lock(&sd->sd_lock);
    err = (sd->sd_flag & STPLEX) ? EINVAL : plumb_error(sd);
    if (err == 0 && (sd->sd_flag & STRCLOSE))
        err = ENXIO;
    dev = sd->sd_dev;
    oflag = sd->sd_oflag;
    ust_unlock(&sd->sd_lock);
    if (err == 0 && sd->sd_pushcnt >= UST_NSTRPUSH)
        err = EINVAL;
    if (err != 0)
        goto out;
    ent = ust_reg_find(name, UST_MODULE);
    if (ent == NULL) {
        err = EINVAL;
        goto out;
    }
    rq = ust_qalloc(ent->str, ent->flag, ent); /* holds ent while allocated */
    ust_reg_rele(ent);
    if (rq == NULL) {
        err = ENOSR;
        goto out;
    }
    ust_qinsert(sd->sd_rq, rq);
    err = ust_qopen(rq, &dev, oflag, MODOPEN, cr);
    if (err != 0) {
        pair_pop(rq);
        goto out;
    }
    sd->sd_pushcnt++;
out:
    ust_unlock(&sd->sd_plumb);
    return err;
}

/*
 * ust_sd_pop -- I_POP: close and remove the topmost module.  Messages still
 *   on its queues after its close routine ran are passed on (down from the
 *   write queue, up from the read queue), not discarded, and ahead of every
 *   message that reaches the module's place after its procedures went off.
 *   Context: blocking (the module's close may sleep); takes sd_plumb.
 *   Returns 0, or EINVAL (no module, or linked under a multiplexer), EPERM
 *   (the module is at or below the I_ANCHOR, as in Linux Fast-STREAMS),
 *   ENXIO (hung up), the M_ERROR error of a stream in error.
 */
int ust_sd_pop(struct stdata *sd, cred_t *cr)
{
    int err, oflag;

    ust_lock(&sd->sd_plumb);
    ust_lock(&sd->sd_lock);
    err = (sd->sd_flag & STPLEX) ? EINVAL : plumb_error(sd);
    if (err == 0 && (sd->sd_flag & STRCLOSE))
        err = ENXIO;
    oflag = sd->sd_oflag;
    ust_unlock(&sd->sd_lock);
    if (err == 0 && sd->sd_pushcnt <= 0)
        err = EINVAL;
    else if (err == 0 && sd->sd_pushcnt <= sd->sd_anchor)
        err = EPERM;
    if (err == 0) {
        queue_t *rq = RD(ust_sd_top(sd));
        ust_qclose(rq, oflag, cr);
        pair_pop(rq);
        sd->sd_pushcnt--;
    }
    ust_unlock(&sd->sd_plumb);
    return err;
}
