/* SPDX-License-Identifier: MIT */
/*
 * modutil.h -- what the built-in modules share: the open and close of a
 * module that only needs its procedures turned on and off, and the flushing
 * of a module's own queues for an M_FLUSH passing through.
 */
#ifndef UST_MODUTIL_H
#define UST_MODUTIL_H

#include <sys/stream.h>

/* qi_qopen of a module: push only (sflag MODOPEN, else ENXIO); turns the
 * procedures on.  Context: the stream head's open, inside the perimeter. */
int ust_mod_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);

/* qi_qclose of a module: turns the procedures off. Returns 0. */
int ust_mod_close(queue_t *q, int oflag, cred_t *crp);

/* Flush the queues of q's pair that the M_FLUSH mp names (FLUSHR/FLUSHW,
 * FLUSHBAND with the band in the second byte); data messages only, as a module
 * does before passing the M_FLUSH on.  mp is not consumed. */
void ust_mod_flush(queue_t *q, const mblk_t *mp);

#endif /* UST_MODUTIL_H */
