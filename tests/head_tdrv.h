/* SPDX-License-Identifier: MIT */
/*
 * head_tdrv.h -- "hdrv", the driver under the stream head tests
 * (test_head_rput.c, test_head_rput_ctl.c, test_head_read.c,
 * test_head_getmsg.c), and message builders for them.
 * Each test is its own executable, so each gets its own copy of these statics.
 *
 * MT level D_MP.  The test puts arbitrary messages up the stream with
 * hdrv_up() -- putnext on the driver's read queue, as a driver does from its
 * interrupt side -- and sees what came down the stream with hdrv_down().
 *   write side: every message is logged (M_FLUSH as a copy, before it is
 *     handled).  M_FLUSH is handled as a driver must: FLUSHW flushes the
 *     write queue, FLUSHR flushes the read queue and goes back up with FLUSHW
 *     cleared (unless hdrv_noturn).  M_IOCTL is acknowledged (rval
 *     hdrv_ioc_rval) unless hdrv_ioc_hold, when it is only logged.
 *   read side: the put procedure passes messages up; the service procedure
 *     only counts back-enables (hdrv_backenabled), so flow control from the
 *     head read queue can be observed.
 * One stream at a time (minor 0, opened by "/dev/streams/hdrv").
 */
#ifndef HEAD_TDRV_H
#define HEAD_TDRV_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/strconf.h>
#include <time.h>

#include "strcore.h"

static _Atomic(queue_t *) hdrv_rq;  /* read queue of the open stream */
static atomic_int hdrv_backenabled; /* read service procedure runs */
static atomic_int hdrv_noturn;      /* do not turn M_FLUSH FLUSHR around */
static atomic_int hdrv_ioc_hold;    /* log M_IOCTL instead of acking it */
static atomic_int hdrv_ioc_rval;    /* rval of the M_IOCACK */
/* If set, sees every message that comes down first; returns 1 when it took
 * the message (the fuzz target tests/fuzz/fuzz_head_from_below.c answers
 * ioctls with it). */
static int (*hdrv_wput_hook)(queue_t *q, mblk_t *mp);

/* Messages that came down, oldest first (b_next); hdrv_lock guards them. */
static pthread_mutex_t hdrv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hdrv_cv = PTHREAD_COND_INITIALIZER;
static mblk_t *hdrv_first, *hdrv_last;

static void hdrv_log(mblk_t *mp)
{
    pthread_mutex_lock(&hdrv_lock);
    mp->b_next = NULL;
    if (hdrv_last)
        hdrv_last->b_next = mp;
    else
        hdrv_first = mp;
    hdrv_last = mp;
    pthread_cond_broadcast(&hdrv_cv);
    pthread_mutex_unlock(&hdrv_lock);
}

/* The next message that came down, waiting up to ms milliseconds; NULL if
 * none.  The caller frees it. */
static inline mblk_t *hdrv_down(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&hdrv_lock);
    while (!hdrv_first && ms > 0)
        if (pthread_cond_timedwait(&hdrv_cv, &hdrv_lock, &ts) != 0)
            break;
    mblk_t *mp = hdrv_first;
    if (mp) {
        hdrv_first = mp->b_next;
        if (!hdrv_first)
            hdrv_last = NULL;
        mp->b_next = NULL;
    }
    pthread_mutex_unlock(&hdrv_lock);
    return mp;
}

/* Free everything logged so far. */
static inline void hdrv_down_clear(void)
{
    mblk_t *mp;
    while ((mp = hdrv_down(0)) != NULL)
        freemsg(mp);
}

static int hdrv_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)sflag;
    (void)crp;
    if (q->q_ptr)
        return 0;
    q->q_ptr = WR(q)->q_ptr = (void *)&hdrv_rq;
    atomic_store(&hdrv_rq, q);
    qprocson(q);
    return 0;
}

static int hdrv_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    atomic_store(&hdrv_rq, NULL);
    q->q_ptr = WR(q)->q_ptr = NULL;
    return 0;
}

static int hdrv_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static int hdrv_rsrv(queue_t *q)
{
    (void)q;
    atomic_fetch_add(&hdrv_backenabled, 1);
    return 0;
}

static int hdrv_wput(queue_t *q, mblk_t *mp)
{
    if (hdrv_wput_hook && hdrv_wput_hook(q, mp))
        return 0;
    switch (mp->b_datap->db_type) {
    case M_FLUSH: {
        mblk_t *cp = copymsg(mp);
        if (cp) {
            cp->b_flag = mp->b_flag;
            hdrv_log(cp);
        }
        unsigned char *fl = mp->b_rptr;
        if (*fl & FLUSHW)
            flushq(q, FLUSHDATA);
        if ((*fl & FLUSHR) && !atomic_load(&hdrv_noturn)) {
            flushq(RD(q), FLUSHDATA);
            *fl &= ~FLUSHW;
            qreply(q, mp);
        } else {
            freemsg(mp);
        }
        break;
    }
    case M_IOCTL:
        if (atomic_load(&hdrv_ioc_hold))
            hdrv_log(mp);
        else
            miocack(q, mp, 0, atomic_load(&hdrv_ioc_rval));
        break;
    default:
        hdrv_log(mp);
        break;
    }
    return 0;
}

static struct module_info hdrv_minfo = {
    .mi_idname = "hdrv", .mi_maxpsz = INFPSZ, .mi_hiwat = 4096, .mi_lowat = 1024};
static struct qinit hdrv_rinit = {.qi_putp = hdrv_rput,
                                  .qi_srvp = hdrv_rsrv,
                                  .qi_qopen = hdrv_open,
                                  .qi_qclose = hdrv_close,
                                  .qi_minfo = &hdrv_minfo};
static struct qinit hdrv_winit = {.qi_putp = hdrv_wput, .qi_minfo = &hdrv_minfo};
static struct streamtab hdrv_info = {.st_rdinit = &hdrv_rinit, .st_wrinit = &hdrv_winit};
static struct cdevsw hdrv_cdev = {.d_name = "hdrv", .d_str = &hdrv_info, .d_flag = D_MP};

/* Send mp up the open stream, as the driver. */
static inline void hdrv_up(mblk_t *mp)
{
    queue_t *q = atomic_load(&hdrv_rq);
    if (q)
        putnext(q, mp);
    else
        freemsg(mp);
}

/* A message of the given type and band: a leading block of that type with
 * clen bytes of ctl, followed (for non-M_DATA types) by an M_DATA block with
 * dlen bytes of data when data is not NULL.  For M_DATA pass the bytes as
 * ctl.  NULL when out of memory. */
static inline mblk_t *hmsg2(unsigned char type, unsigned char band, const void *ctl, size_t clen,
                            const void *data, size_t dlen)
{
    mblk_t *mp = allocb(clen, BPRI_MED);
    if (!mp)
        return NULL;
    mp->b_datap->db_type = type;
    mp->b_band = band;
    if (clen) {
        if (ctl)
            memcpy(mp->b_wptr, ctl, clen);
        else
            memset(mp->b_wptr, 0, clen);
        mp->b_wptr += clen;
    }
    if (data) {
        mblk_t *dp = allocb(dlen, BPRI_MED);
        if (!dp) {
            freemsg(mp);
            return NULL;
        }
        memcpy(dp->b_wptr, data, dlen);
        dp->b_wptr += dlen;
        mp->b_cont = dp;
    }
    return mp;
}

/* A one-block message holding the string s (without its NUL). */
static inline mblk_t *hmsg(unsigned char type, unsigned char band, const char *s)
{
    return hmsg2(type, band, s, strlen(s), NULL, 0);
}

/* Send up a one-block message of type with the given bytes. */
static inline void hdrv_up_bytes(unsigned char type, const void *bytes, size_t len)
{
    hdrv_up(hmsg2(type, 0, bytes, len, NULL, 0));
}

/* Send up a string as M_DATA of band `band`. */
static inline void hdrv_up_str(unsigned char band, const char *s)
{
    hdrv_up(hmsg(M_DATA, band, s));
}

#endif /* HEAD_TDRV_H */
