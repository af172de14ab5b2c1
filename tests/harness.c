/* SPDX-License-Identifier: MIT */
/*
 * harness.c -- the test head and the stream plumbing of harness.h.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ddi.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

/* ------------------------------------------------------------------------ */
/* The test head's queue pair                                               */
/* ------------------------------------------------------------------------ */
static int th_head_rput(queue_t *q, mblk_t *mp);
static int th_head_rsrv(queue_t *q);

static struct module_info th_head_minfo = {
    .mi_idnum = 0,
    .mi_idname = "th_head",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120, /* the usual stream head marks (STRHIGH, STRLOW) */
    .mi_lowat = 1024,
};

static struct qinit th_head_rinit = {
    .qi_putp = th_head_rput,
    .qi_srvp = th_head_rsrv,
    .qi_minfo = &th_head_minfo,
};

static struct qinit th_head_winit = {
    .qi_minfo = &th_head_minfo,
};

static struct streamtab th_head_info = {
    .st_rdinit = &th_head_rinit,
    .st_wrinit = &th_head_winit,
};

/* Wake th_read: something arrived, or the queue was enabled. */
static void th_wake(struct th_stream *s)
{
    size_t count = 0;

    strqget(s->hq, QCOUNT, 0, &count);
    ust_lock(&s->lock);
    s->gen++;
    if (count > s->max_bytes)
        s->max_bytes = count;
    ust_cond_broadcast(&s->cv);
    ust_unlock(&s->lock);
}

static int th_head_rput(queue_t *q, mblk_t *mp)
{
    struct th_stream *s = q->q_ptr;

    if (!putq(q, mp))
        freemsg(mp); /* no memory for the band */
    th_wake(s);
    return 0;
}

/* Never runs (the head is not scheduled); present so that flow control looks
 * no further than the head's read queue. */
static int th_head_rsrv(queue_t *q)
{
    (void)q;
    return 0;
}

/* qenable of a head queue lands here instead of the scheduler. */
static void th_head_enable(queue_t *q)
{
    struct th_stream *s = q->q_ptr;

    if (s != NULL && (ust_qflags(q) & QREADR))
        th_wake(s);
}

static queue_t *th_head_alloc(struct th_stream *s)
{
    queue_t *hq = ust_qalloc(&th_head_info, D_MP, NULL);

    if (hq == NULL)
        return NULL;
    for (int i = 0; i < 2; i++) {
        queue_t *q = i == 0 ? hq : WR(hq);
        struct ust_qpriv *pv = ust_qpv(q);
        ust_lock(&pv->lock);
        q->q_ptr = s;
        pv->head_enable = th_head_enable;
        ust_qflag_set(q, QHEAD);
        ust_unlock(&pv->lock);
    }
    return hq;
}

static void th_head_free(queue_t *hq)
{
    qprocsoff(hq);
    ust_qfree(hq);
}

/* Take a module or driver out of the stream and free it. */
static void th_remove(struct th_stream *s, queue_t *rq, int close)
{
    if (close)
        ust_qclose(rq, s->oflag, &s->cred);
    else
        qprocsoff(rq);
    ust_qunlink(rq);
    ust_qfree(rq);
}

/* ------------------------------------------------------------------------ */
/* Open, push, pop, close                                                   */
/* ------------------------------------------------------------------------ */
struct th_stream *th_open(const char *driver, int flags)
{
    struct th_stream *s;
    struct ust_modent *ent;
    int err, sflag;

    ent = ust_reg_find(driver, UST_DRIVER);
    if (ent == NULL) {
        errno = ENXIO;
        return NULL;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        ust_reg_rele(ent);
        errno = ENOMEM;
        return NULL;
    }
    ust_lock_init(&s->lock);
    ust_cond_init(&s->cv);
    s->oflag = flags & ~TH_CLONE;
    s->cred.cr_uid = geteuid();
    s->cred.cr_gid = getegid();
    s->cred.cr_ruid = getuid();
    s->cred.cr_rgid = getgid();
    s->cred.cr_pid = getpid();
    s->dev = makedevice(ent->major, 0);
    sflag = ((ent->flag & D_CLONE) || (flags & TH_CLONE)) ? CLONEOPEN : DRVOPEN;

    s->hq = th_head_alloc(s);
    s->drv = ust_qalloc(ent->str, ent->flag, ent); /* holds ent while allocated */
    ust_reg_rele(ent);
    if (s->hq == NULL || s->drv == NULL) {
        err = ENOMEM;
        goto fail;
    }
    ust_qinsert(s->hq, s->drv);
    qprocson(s->hq);
    err = ust_qopen(s->drv, &s->dev, s->oflag, sflag, &s->cred);
    if (err != 0) {
        th_remove(s, s->drv, 0);
        s->drv = NULL;
        goto fail;
    }
    return s;

fail:
    if (s->drv != NULL)
        ust_qfree(s->drv);
    if (s->hq != NULL)
        th_head_free(s->hq);
    free(s);
    errno = err;
    return NULL;
}

int th_push(struct th_stream *s, const char *module)
{
    struct ust_modent *ent;
    queue_t *rq;
    dev_t dev;
    int err;

    if (s == NULL)
        return EINVAL;
    if (s->nmods == TH_MAXMODS)
        return ERANGE;
    ent = ust_reg_find(module, UST_MODULE);
    if (ent == NULL)
        return EINVAL;
    rq = ust_qalloc(ent->str, ent->flag, ent);
    ust_reg_rele(ent);
    if (rq == NULL)
        return ENOMEM;
    ust_qinsert(s->hq, rq);
    dev = s->dev;
    err = ust_qopen(rq, &dev, s->oflag, MODOPEN, &s->cred);
    if (err != 0) {
        th_remove(s, rq, 0);
        return err;
    }
    s->mods[s->nmods++] = rq;
    return 0;
}

int th_pop(struct th_stream *s)
{
    if (s == NULL || s->nmods == 0)
        return EINVAL;
    th_remove(s, s->mods[--s->nmods], 1);
    return 0;
}

void th_close(struct th_stream *s)
{
    if (s == NULL)
        return;
    while (s->nmods > 0)
        th_pop(s);
    th_remove(s, s->drv, 1);
    th_head_free(s->hq); /* frees what is still queued at the head */
    ust_lock_destroy(&s->lock);
    free(s);
}

/* ------------------------------------------------------------------------ */
/* Data                                                                     */
/* ------------------------------------------------------------------------ */
int th_write(struct th_stream *s, mblk_t *mp)
{
    queue_t *wq;

    if (s == NULL || mp == NULL)
        return EINVAL;
    wq = WR(s->hq);
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
    ust_qrelease(wq);
    return 0;
}

int th_canwrite(struct th_stream *s, unsigned char band)
{
    queue_t *wq = WR(s->hq);
    int ok;

    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    ok = bcanputnext(wq, band);
    ust_qrelease(wq);
    return ok;
}

mblk_t *th_read(struct th_stream *s, long timeout_ms)
{
    long long deadline = timeout_ms > 0 ? ust_now_ns() + timeout_ms * 1000000LL : 0;

    for (;;) {
        unsigned long gen;
        mblk_t *mp;

        ust_lock(&s->lock);
        gen = s->gen;
        ust_unlock(&s->lock);
        /* getq outside our lock: it may back-enable queues below. */
        mp = getq(s->hq);
        if (mp != NULL || timeout_ms == 0)
            return mp;
        ust_lock(&s->lock);
        while (s->gen == gen) {
            if (timeout_ms < 0) {
                ust_cond_wait(&s->cv, &s->lock);
            } else if (ust_cond_timedwait(&s->cv, &s->lock, deadline) == ETIMEDOUT) {
                ust_unlock(&s->lock);
                return getq(s->hq);
            }
        }
        ust_unlock(&s->lock);
    }
}

int th_count(struct th_stream *s)
{
    return qsize(s->hq);
}

int th_set_hiwat(struct th_stream *s, size_t hiwat, size_t lowat)
{
    int err;

    if (lowat > hiwat)
        return EINVAL;
    err = strqset(s->hq, QLOWAT, 0, 0);
    if (err == 0)
        err = strqset(s->hq, QHIWAT, 0, (intptr_t)hiwat);
    if (err == 0)
        err = strqset(s->hq, QLOWAT, 0, (intptr_t)lowat);
    return err;
}

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */
mblk_t *th_msg(unsigned char type, unsigned char band, const void *data, size_t len)
{
    mblk_t *mp = allocb(len, BPRI_MED);

    if (mp == NULL)
        return NULL;
    mp->b_datap->db_type = type;
    mp->b_band = band;
    if (len > 0) {
        if (data != NULL)
            memcpy(mp->b_wptr, data, len);
        else
            memset(mp->b_wptr, 0, len);
        mp->b_wptr += len;
    }
    return mp;
}

static cred_t th_cred;
static pthread_once_t th_cred_once = PTHREAD_ONCE_INIT;

static void th_cred_init(void)
{
    th_cred.cr_uid = geteuid();
    th_cred.cr_gid = getegid();
    th_cred.cr_ruid = getuid();
    th_cred.cr_rgid = getgid();
    th_cred.cr_pid = getpid();
}

mblk_t *th_ioctl_msg(int cmd, size_t count, const void *data, size_t len)
{
    static atomic_uint next_id = 1;
    struct iocblk *iocp;
    mblk_t *mp = allocb(sizeof(union ioctypes), BPRI_HI);

    if (mp == NULL)
        return NULL;
    mp->b_datap->db_type = M_IOCTL;
    memset(mp->b_rptr, 0, sizeof(union ioctypes));
    iocp = (struct iocblk *)(void *)mp->b_rptr;
    iocp->ioc_cmd = cmd;
    pthread_once(&th_cred_once, th_cred_init);
    iocp->ioc_cr = &th_cred;
    iocp->ioc_id = atomic_fetch_add(&next_id, 1);
    iocp->ioc_count = count;
    iocp->ioc_flag = IOC_NATIVE;
    mp->b_wptr += sizeof(struct iocblk);
    if (len > 0) {
        mp->b_cont = th_msg(M_DATA, 0, data, len);
        if (mp->b_cont == NULL) {
            freemsg(mp);
            return NULL;
        }
    }
    return mp;
}

void th_assert_no_blocks(void)
{
    struct ustreams_blockstats st;

    CHECK_EQ(ustreams_quiesce(5000), 0);
    ustreams_blockstats(&st);
    if (st.mblks != 0 || st.dblks != 0 || st.bytes != 0)
        fprintf(stderr, "th_assert_no_blocks: %ld mblks, %ld dblks (%ld bytes) outstanding\n",
                st.mblks, st.dblks, st.bytes);
    CHECK_NO_BLOCKS();
}
