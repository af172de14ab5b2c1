/* SPDX-License-Identifier: MIT */
/*
 * head_cdrv.h -- "cdrv", the driver under the write and ioctl tests of the
 * stream head (test_head_write.c, test_head_ioctl.c).  Each test is its own
 * executable, so each gets its own copy of these statics.
 *
 * MT level D_MP.  Opened as "/dev/streams/cdrv" (minor 0) or through
 * "/dev/streams/clone/cdrv" (a new minor each time); the most recent open is
 * the "current" stream, whose queues cdrv_rq names.
 *   write side: M_DATA, M_PROTO and M_PCPROTO are logged (cdrv_down), unless
 *     the gate is closed (cdrv_gate_close): then normal messages are queued on
 *     the write queue and stay there -- so the queue fills to its high-water
 *     mark and flow control pushes back on the stream head -- until
 *     cdrv_gate_open lets the service procedure log them.  M_FLUSH is logged
 *     as a copy and handled as a driver must (FLUSHW flushes the write queue;
 *     FLUSHR flushes the read queue and goes back up with FLUSHW cleared).
 *     M_IOCTL and M_IOCDATA follow the CDRV_* commands below.
 *   read side: the put procedure passes messages up; cdrv_up sends a message
 *     up the current stream as the driver.
 */
#ifndef HEAD_CDRV_H
#define HEAD_CDRV_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>
#include <time.h>

#include "strcore.h"

/* ioctl commands the driver understands */
#define CDRV_ACK    0x4301 /* ack, rval 7, data = the request's bytes reversed + "XY" */
#define CDRV_NAK    0x4302 /* nak with EPERM */
#define CDRV_SILENT 0x4303 /* never answered (kept until the next one or close) */
#define CDRV_SLOW   0x4304 /* acked 200 ms later, rval 3 */
#define CDRV_TRANS  0x4305 /* transparent: copy in an int x, copy out 2x after it, ack rval 5 */
#define CDRV_BADOUT 0x4306 /* transparent: copy out to an impossible address */
#define CDRV_ACKERR 0x4307 /* M_IOCACK carrying ioc_error EIO */
#define CDRV_NAK0   0x4308 /* nak with ioc_error 0 (the head reports EINVAL) */

static _Atomic(queue_t *) cdrv_rq;      /* read queue of the current stream */
static atomic_int cdrv_gate;            /* 1: normal messages wait on the write queue */
static atomic_int cdrv_nopen;           /* open instances */
static atomic_int cdrv_ioc_seen;        /* M_IOCTLs that arrived */
static atomic_int cdrv_ioc_cmd;         /* ioc_cmd of the last one */
static atomic_long cdrv_ioc_count;      /* ioc_count of the last one */
static atomic_int cdrv_ioc_hascr;       /* the last one had credentials */
static atomic_int cdrv_iocdata_rval;    /* cp_rval of the last M_IOCDATA (as int) */
static atomic_int cdrv_iocdata_seen;    /* M_IOCDATAs that arrived */
static atomic_int cdrv_busy;            /* ioctls between arrival and answer */
static atomic_int cdrv_busy_max;        /* most at once */
static _Atomic(void *) cdrv_uaddr;      /* the address of the last transparent ioctl */
static atomic_llong cdrv_slow_acked_ns; /* when CDRV_SLOW was answered */
static atomic_llong cdrv_last_ioc_ns;   /* when the last M_IOCTL arrived */

static pthread_mutex_t cdrv_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the log and cdrv_held */
static pthread_cond_t cdrv_cv = PTHREAD_COND_INITIALIZER;
static mblk_t *cdrv_first, *cdrv_last; /* cdrv_lock: messages that came down, oldest first */
static mblk_t *cdrv_held;              /* cdrv_lock: the CDRV_SILENT ioctl */

static long long cdrv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void cdrv_log(mblk_t *mp)
{
    pthread_mutex_lock(&cdrv_lock);
    mp->b_next = NULL;
    if (cdrv_last)
        cdrv_last->b_next = mp;
    else
        cdrv_first = mp;
    cdrv_last = mp;
    pthread_cond_broadcast(&cdrv_cv);
    pthread_mutex_unlock(&cdrv_lock);
}

/* The next message that came down, waiting up to ms milliseconds; NULL if
 * none.  The caller frees it. */
static inline mblk_t *cdrv_down(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&cdrv_lock);
    while (!cdrv_first && ms > 0)
        if (pthread_cond_timedwait(&cdrv_cv, &cdrv_lock, &ts) != 0)
            break;
    mblk_t *mp = cdrv_first;
    if (mp) {
        cdrv_first = mp->b_next;
        if (!cdrv_first)
            cdrv_last = NULL;
        mp->b_next = NULL;
    }
    pthread_mutex_unlock(&cdrv_lock);
    return mp;
}

/* Free everything logged so far; returns how many there were. */
static inline int cdrv_clear(void)
{
    int n = 0;
    mblk_t *mp;
    while ((mp = cdrv_down(0)) != NULL) {
        freemsg(mp);
        n++;
    }
    return n;
}

static void cdrv_busy_in(void)
{
    int b = atomic_fetch_add(&cdrv_busy, 1) + 1;
    int m = atomic_load(&cdrv_busy_max);
    while (b > m && !atomic_compare_exchange_weak(&cdrv_busy_max, &m, b))
        ;
}

static void cdrv_busy_out(void)
{
    atomic_fetch_sub(&cdrv_busy, 1);
}

static int cdrv_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    static atomic_int next_minor = 1;
    (void)oflag;
    (void)crp;
    if (q->q_ptr)
        return 0; /* reopen */
    if (sflag == CLONEOPEN)
        *devp = makedevice(getmajor(*devp), (minor_t)atomic_fetch_add(&next_minor, 1));
    q->q_ptr = WR(q)->q_ptr = (void *)&cdrv_rq;
    atomic_store(&cdrv_rq, q);
    atomic_fetch_add(&cdrv_nopen, 1);
    qprocson(q);
    return 0;
}

static int cdrv_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    queue_t *expect = q;
    atomic_compare_exchange_strong(&cdrv_rq, &expect, NULL);
    q->q_ptr = WR(q)->q_ptr = NULL;
    atomic_fetch_sub(&cdrv_nopen, 1);
    pthread_mutex_lock(&cdrv_lock);
    mblk_t *held = cdrv_held;
    cdrv_held = NULL;
    pthread_mutex_unlock(&cdrv_lock);
    if (held)
        cdrv_busy_out();
    freemsg(held);
    return 0;
}

static int cdrv_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* The CDRV_SLOW answer, from a qtimeout. */
static queue_t *cdrv_slow_q;
static mblk_t *cdrv_slow_mp;
static void cdrv_slow_ack(void *arg)
{
    (void)arg;
    atomic_store(&cdrv_slow_acked_ns, cdrv_now());
    cdrv_busy_out();
    miocack(cdrv_slow_q, cdrv_slow_mp, 0, 3);
}

static void cdrv_ioctl(queue_t *q, mblk_t *mp)
{
    struct iocblk *ioc = (struct iocblk *)(void *)mp->b_rptr;
    atomic_store(&cdrv_last_ioc_ns, cdrv_now());
    atomic_fetch_add(&cdrv_ioc_seen, 1);
    atomic_store(&cdrv_ioc_cmd, ioc->ioc_cmd);
    atomic_store(&cdrv_ioc_count, (long)ioc->ioc_count);
    atomic_store(&cdrv_ioc_hascr, ioc->ioc_cr != NULL);
    cdrv_busy_in();
    switch (ioc->ioc_cmd) {
    case CDRV_ACK: {
        size_t n = mp->b_cont ? msgdsize(mp->b_cont) : 0;
        mblk_t *in = mp->b_cont ? msgpullup(mp->b_cont, -1) : NULL;
        mblk_t *out = allocb(n + 2, BPRI_MED);
        if (!out || (n && !in)) {
            freemsg(in);
            freemsg(out);
            cdrv_busy_out();
            miocnak(q, mp, 0, ENOMEM);
            return;
        }
        for (size_t i = 0; i < n; i++)
            out->b_wptr[i] = in->b_rptr[n - 1 - i];
        out->b_wptr[n] = 'X';
        out->b_wptr[n + 1] = 'Y';
        out->b_wptr += n + 2;
        freemsg(in);
        freemsg(mp->b_cont);
        mp->b_cont = out;
        cdrv_busy_out();
        miocack(q, mp, (int)n + 2, 7);
        return;
    }
    case CDRV_NAK:
        cdrv_busy_out();
        miocnak(q, mp, 0, EPERM);
        return;
    case CDRV_NAK0:
        cdrv_busy_out();
        mp->b_datap->db_type = M_IOCNAK;
        ioc->ioc_error = 0;
        ioc->ioc_count = 0;
        qreply(q, mp);
        return;
    case CDRV_ACKERR:
        cdrv_busy_out();
        mp->b_datap->db_type = M_IOCACK;
        ioc->ioc_error = EIO;
        ioc->ioc_count = 0;
        qreply(q, mp);
        return;
    case CDRV_SILENT: {
        pthread_mutex_lock(&cdrv_lock);
        mblk_t *old = cdrv_held;
        cdrv_held = mp;
        pthread_mutex_unlock(&cdrv_lock);
        if (old)
            cdrv_busy_out();
        freemsg(old);
        return;
    }
    case CDRV_SLOW:
        cdrv_slow_q = q;
        cdrv_slow_mp = mp;
        qtimeout(q, cdrv_slow_ack, NULL, drv_usectohz(200000));
        return;
    case CDRV_TRANS:
    case CDRV_BADOUT:
        if (ioc->ioc_count != TRANSPARENT || !mp->b_cont) {
            cdrv_busy_out();
            miocnak(q, mp, 0, EINVAL);
            return;
        }
        {
            void *ua;
            memcpy(&ua, mp->b_cont->b_rptr, sizeof(ua));
            atomic_store(&cdrv_uaddr, ua);
        }
        if (ioc->ioc_cmd == CDRV_TRANS) {
            mcopyin(mp, (void *)1, sizeof(int), NULL);
        } else {
            mblk_t *dp = allocb(sizeof(int), BPRI_MED);
            if (dp) {
                int v = 99;
                memcpy(dp->b_wptr, &v, sizeof(v));
                dp->b_wptr += sizeof(v);
            }
            mcopyout(mp, (void *)9, sizeof(int), (void *)-1, dp);
        }
        qreply(q, mp);
        return;
    default:
        cdrv_busy_out();
        miocnak(q, mp, 0, EINVAL);
        return;
    }
}

static void cdrv_iocdata(queue_t *q, mblk_t *mp)
{
    struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;
    atomic_fetch_add(&cdrv_iocdata_seen, 1);
    atomic_store(&cdrv_iocdata_rval, (int)(intptr_t)cp->cp_rval);
    if (cp->cp_rval) { /* the copy failed: abandon the ioctl without a reply */
        cdrv_busy_out();
        freemsg(mp);
        return;
    }
    switch ((intptr_t)cp->cp_private) {
    case 1: { /* copied in x: copy out 2x after it */
        int x = 0;
        if (mp->b_cont && msgdsize(mp->b_cont) >= sizeof(x))
            memcpy(&x, mp->b_cont->b_rptr, sizeof(x));
        mblk_t *dp = allocb(sizeof(int), BPRI_MED);
        if (!dp) {
            cdrv_busy_out();
            miocnak(q, mp, 0, ENOMEM);
            return;
        }
        x *= 2;
        memcpy(dp->b_wptr, &x, sizeof(x));
        dp->b_wptr += sizeof(x);
        mcopyout(mp, (void *)2, sizeof(int), (char *)atomic_load(&cdrv_uaddr) + sizeof(int), dp);
        qreply(q, mp);
        return;
    }
    case 2:
        cdrv_busy_out();
        miocack(q, mp, 0, 5);
        return;
    default:
        cdrv_busy_out();
        miocnak(q, mp, 0, EINVAL);
        return;
    }
}

static int cdrv_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_DATA:
    case M_PROTO:
        if (atomic_load(&cdrv_gate) || q->q_first) {
            putq(q, mp);
            break;
        }
        cdrv_log(mp);
        break;
    case M_FLUSH: {
        mblk_t *cp = copymsg(mp);
        if (cp)
            cdrv_log(cp);
        unsigned char fl = *mp->b_rptr;
        int byband = (fl & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2;
        unsigned char band = byband ? mp->b_rptr[1] : 0;
        if (fl & FLUSHW) {
            if (byband)
                flushband(q, band, FLUSHDATA);
            else
                flushq(q, FLUSHDATA);
        }
        if (fl & FLUSHR) {
            if (byband)
                flushband(RD(q), band, FLUSHDATA);
            else
                flushq(RD(q), FLUSHDATA);
            *mp->b_rptr &= ~FLUSHW;
            qreply(q, mp);
        } else {
            freemsg(mp);
        }
        break;
    }
    case M_IOCTL:
        cdrv_ioctl(q, mp);
        break;
    case M_IOCDATA:
        cdrv_iocdata(q, mp);
        break;
    default:
        cdrv_log(mp);
        break;
    }
    return 0;
}

static int cdrv_wsrv(queue_t *q)
{
    mblk_t *mp;
    while (!atomic_load(&cdrv_gate) && (mp = getq(q)) != NULL)
        cdrv_log(mp);
    return 0;
}

static struct module_info cdrv_minfo = {.mi_idnum = 7701,
                                        .mi_idname = "cdrv",
                                        .mi_minpsz = 0,
                                        .mi_maxpsz = INFPSZ,
                                        .mi_hiwat = 4096,
                                        .mi_lowat = 1024};
static struct qinit cdrv_rinit = {
    .qi_putp = cdrv_rput, .qi_qopen = cdrv_open, .qi_qclose = cdrv_close, .qi_minfo = &cdrv_minfo};
static struct qinit cdrv_winit = {
    .qi_putp = cdrv_wput, .qi_srvp = cdrv_wsrv, .qi_minfo = &cdrv_minfo};
static struct streamtab cdrv_info = {.st_rdinit = &cdrv_rinit, .st_wrinit = &cdrv_winit};
static struct cdevsw cdrv_cdev = {.d_name = "cdrv", .d_str = &cdrv_info, .d_flag = D_MP};

static inline int cdrv_register(void)
{
    return register_strdev(&cdrv_cdev, 0);
}

/* Take the CDRV_SILENT ioctl the driver keeps (NULL if none); the caller
 * answers or frees it. */
static inline mblk_t *cdrv_take_held(void)
{
    pthread_mutex_lock(&cdrv_lock);
    mblk_t *mp = cdrv_held;
    cdrv_held = NULL;
    pthread_mutex_unlock(&cdrv_lock);
    if (mp)
        cdrv_busy_out();
    return mp;
}

/* The write queue of the current stream's driver. */
static inline queue_t *cdrv_wq(void)
{
    queue_t *q = atomic_load(&cdrv_rq);
    return q ? WR(q) : NULL;
}

/* Close the gate: normal messages stay on the write queue. */
static inline void cdrv_gate_close(void)
{
    atomic_store(&cdrv_gate, 1);
}

/* Open the gate and run the service procedure, which logs what waited (and
 * back-enables the stream head when the queue drains). */
static inline void cdrv_gate_open(void)
{
    atomic_store(&cdrv_gate, 0);
    queue_t *q = cdrv_wq();
    if (q)
        qenable(q);
}

/* Bytes waiting on the driver's write queue (band 0). */
static inline size_t cdrv_wcount(void)
{
    size_t n = 0;
    queue_t *q = cdrv_wq();
    if (q)
        strqget(q, QCOUNT, 0, &n);
    return n;
}

/* Send mp up the current stream, as the driver. */
static inline void cdrv_up(mblk_t *mp)
{
    queue_t *q = atomic_load(&cdrv_rq);
    if (q)
        putnext(q, mp);
    else
        freemsg(mp);
}

/* A one-block message of type and band holding len bytes (zeros if data is
 * NULL), with an M_DATA continuation of dlen bytes when cont is not NULL. */
static inline mblk_t *cdrv_msg(unsigned char type, unsigned char band, const void *data, size_t len,
                               const void *cont, size_t dlen)
{
    mblk_t *mp = allocb(len, BPRI_MED);
    if (!mp)
        return NULL;
    mp->b_datap->db_type = type;
    mp->b_band = band;
    if (len) {
        if (data)
            memcpy(mp->b_wptr, data, len);
        else
            memset(mp->b_wptr, 0, len);
        mp->b_wptr += len;
    }
    if (cont) {
        mblk_t *dp = allocb(dlen, BPRI_MED);
        if (!dp) {
            freemsg(mp);
            return NULL;
        }
        memcpy(dp->b_wptr, cont, dlen);
        dp->b_wptr += dlen;
        mp->b_cont = dp;
    }
    return mp;
}

/* Send up an M_SETOPTS carrying so. */
static inline void cdrv_setopts(const struct stroptions *so)
{
    cdrv_up(cdrv_msg(M_SETOPTS, 0, so, sizeof(*so), NULL, 0));
}

/* Bytes of the message (all blocks). */
static inline size_t cdrv_len(const mblk_t *mp)
{
    size_t n = 0;
    for (; mp; mp = mp->b_cont)
        n += (size_t)(mp->b_wptr - mp->b_rptr);
    return n;
}

#endif /* HEAD_CDRV_H */
