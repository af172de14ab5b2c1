/* SPDX-License-Identifier: MIT */
/* modutil.c -- open, close and M_FLUSH handling shared by the built-in modules. */
#include <errno.h>
#include <sys/ddi.h>
#include <sys/stream.h>

#include "modutil.h"

int ust_mod_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    qprocson(q);
    return 0;
}

int ust_mod_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    return 0;
}

void ust_mod_flush(queue_t *q, const mblk_t *mp)
{
    if (mp->b_wptr - mp->b_rptr < 1)
        return;
    unsigned char flag = *mp->b_rptr;
    if ((flag & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2) {
        unsigned char band = mp->b_rptr[1];
        if (flag & FLUSHW)
            flushband(WR(q), band, FLUSHDATA);
        if (flag & FLUSHR)
            flushband(RD(q), band, FLUSHDATA);
    } else {
        if (flag & FLUSHW)
            flushq(WR(q), FLUSHDATA);
        if (flag & FLUSHR)
            flushq(RD(q), FLUSHDATA);
    }
}
