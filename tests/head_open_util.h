/* SPDX-License-Identifier: MIT */
/*
 * head_open_util.h -- the test driver "tdrv", the test module "tslow" and
 * helpers shared by test_head_open.c and test_head_close.c.
 */
#ifndef HEAD_OPEN_UTIL_H
#define HEAD_OPEN_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

/* ------------------------------------------------------------------------ */
/* Test drivers and modules                                                 */
/* ------------------------------------------------------------------------ */
/* "tdrv": a sink driver that counts first opens, reopens, closes and the
 * M_DATA messages it receives; its open fails with tdrv_fail if set. */
static atomic_int tdrv_first, tdrv_reopen, tdrv_close, tdrv_data;
static atomic_int tdrv_fail;
static int tdrv_state; /* what q_ptr points at */

static inline int tdrv_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    (void)sflag;
    if (atomic_load(&tdrv_fail))
        return atomic_load(&tdrv_fail);
    if (q->q_ptr != NULL) {
        atomic_fetch_add(&tdrv_reopen, 1);
        return 0;
    }
    atomic_fetch_add(&tdrv_first, 1);
    q->q_ptr = WR(q)->q_ptr = &tdrv_state;
    qprocson(q);
    return 0;
}

static inline int tdrv_closef(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    q->q_ptr = WR(q)->q_ptr = NULL;
    atomic_fetch_add(&tdrv_close, 1);
    return 0;
}

static inline int tdrv_wput(queue_t *q, mblk_t *mp)
{
    (void)q;
    if (mp->b_datap->db_type == M_DATA)
        atomic_fetch_add(&tdrv_data, 1);
    freemsg(mp);
    return 0;
}

static inline int tdrv_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info tdrv_minfo = {
    .mi_idname = "tdrv", .mi_maxpsz = INFPSZ, .mi_hiwat = 4096, .mi_lowat = 1024};
static struct qinit tdrv_rinit = {
    .qi_putp = tdrv_rput, .qi_qopen = tdrv_open, .qi_qclose = tdrv_closef, .qi_minfo = &tdrv_minfo};
static struct qinit tdrv_winit = {.qi_putp = tdrv_wput, .qi_minfo = &tdrv_minfo};
static struct streamtab tdrv_info = {.st_rdinit = &tdrv_rinit, .st_wrinit = &tdrv_winit};
static struct cdevsw tdrv_cdev = {.d_name = "tdrv", .d_str = &tdrv_info, .d_flag = D_MP};

/* "tslow": a module whose write side queues M_DATA and passes it on from its
 * service procedure -- which does not run while the queue is noenable'd.
 * tslow_release_ms > 0: a timeout enables it that long after the open. */
static atomic_int tslow_release_ms;
static atomic_int tslow_opens, tslow_closes, tslow_fail;

static inline void tslow_release(void *arg)
{
    queue_t *wq = arg;
    enableok(wq);
    qenable(wq);
}

static inline int tslow_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    if (atomic_load(&tslow_fail))
        return atomic_load(&tslow_fail);
    if (q->q_ptr != NULL)
        return 0;
    noenable(WR(q));
    q->q_ptr = (void *)1;
    int ms = atomic_load(&tslow_release_ms);
    if (ms > 0)
        q->q_ptr =
            (void *)(intptr_t)qtimeout(WR(q), tslow_release, WR(q), drv_usectohz(ms * 1000L));
    atomic_fetch_add(&tslow_opens, 1);
    qprocson(q);
    return 0;
}

static inline int tslow_closef(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    if ((intptr_t)q->q_ptr > 1)
        quntimeout(WR(q), (timeout_id_t)(intptr_t)q->q_ptr);
    qprocsoff(q);
    q->q_ptr = NULL;
    atomic_fetch_add(&tslow_closes, 1);
    return 0;
}

static inline int tslow_put(queue_t *q, mblk_t *mp)
{
    if (!(q->q_flag & QREADR) && mp->b_datap->db_type == M_DATA) {
        putq(q, mp);
        return 0;
    }
    putnext(q, mp);
    return 0;
}

static inline int tslow_srv(queue_t *q)
{
    mblk_t *mp;
    while ((mp = getq(q)) != NULL)
        putnext(q, mp);
    return 0;
}

static struct module_info tslow_minfo = {
    .mi_idname = "tslow", .mi_maxpsz = INFPSZ, .mi_hiwat = 65536, .mi_lowat = 1024};
static struct qinit tslow_rinit = {.qi_putp = tslow_put,
                                   .qi_qopen = tslow_open,
                                   .qi_qclose = tslow_closef,
                                   .qi_minfo = &tslow_minfo};
static struct qinit tslow_winit = {
    .qi_putp = tslow_put, .qi_srvp = tslow_srv, .qi_minfo = &tslow_minfo};
static struct streamtab tslow_info = {.st_rdinit = &tslow_rinit, .st_wrinit = &tslow_winit};
static struct fmodsw tslow_fmod = {.f_name = "tslow", .f_str = &tslow_info, .f_flag = D_MP};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */
/* Send mp down from the head, as the head's write side does. */
static inline void head_send(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
    ust_qrelease(wq);
}

static inline mblk_t *data_msg(size_t len)
{
    mblk_t *mp = allocb(len, BPRI_MED);
    if (mp != NULL) {
        memset(mp->b_wptr, 'x', len);
        mp->b_wptr += len;
    }
    return mp;
}

static inline const char *top_name(struct stdata *sd)
{
    queue_t *q = ust_sd_top(sd);
    return q ? q->q_qinfo->qi_minfo->mi_idname : "";
}

static inline void settle(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
}

#endif /* HEAD_OPEN_UTIL_H */
