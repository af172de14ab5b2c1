/* SPDX-License-Identifier: MIT */
/*
 * nuls.c -- the null stream driver: a sink.  Writes are accepted and
 * discarded; nothing is ever sent up, so reads find no data.
 *
 * MT level: D_MP.  No state at all besides the minors of clone opens, kept in
 * a table guarded by nuls_lock (open and close only).
 * Flow control: none needed; the write put procedure frees what it gets, so
 * the write side never fills and never holds back a writer.
 * M_FLUSH: FLUSHW is done (nothing is queued) and cleared; if FLUSHR is set
 * the message goes back up, as a driver must do.  M_IOCTL is refused
 * (M_IOCNAK, EINVAL).  Everything else is freed.
 * Opens: a normal open uses the minor asked for; a clone open (CLONEOPEN)
 * gets the lowest minor >= 1 not open.
 */
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "forksafe.h"

#define NULS_ID 5004
#define NULS_NMINOR 256 /* minors 0 .. 255: a DRVOPEN of another fails ENXIO */

static int nuls_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int nuls_close(queue_t *q, int oflag, cred_t *crp);
static int nuls_rput(queue_t *q, mblk_t *mp);
static int nuls_wput(queue_t *q, mblk_t *mp);

static struct module_info nuls_minfo = {
    .mi_idnum = NULS_ID,
    .mi_idname = "nuls",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit nuls_rinit = {
    .qi_putp = nuls_rput,
    .qi_qopen = nuls_open,
    .qi_qclose = nuls_close,
    .qi_minfo = &nuls_minfo,
};

static struct qinit nuls_winit = {
    .qi_putp = nuls_wput,
    .qi_minfo = &nuls_minfo,
};

static struct streamtab nuls_info = {
    .st_rdinit = &nuls_rinit,
    .st_wrinit = &nuls_winit,
};

static struct cdevsw nuls_cdev = {
    .d_name = "nuls",
    .d_str = &nuls_info,
    .d_flag = D_MP,
};

static pthread_mutex_t nuls_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int nuls_opens[NULS_NMINOR]; /* nuls_lock: open streams per minor */

/* Registration from ust_builtin_register. */
void ust_nuls_register(void);

/* fork() (src/core/forksafe.h): nuls_lock is held briefly and nothing ranked before
 * UST_FORK_DRIVER is taken under it, so it is quiesced.  In the child, nuls_opens counts the
 * parent's streams: it starts at zero. */
static void nuls_fork_prepare(void)
{
    pthread_mutex_lock(&nuls_lock);
}

static void nuls_fork_parent(void)
{
    pthread_mutex_unlock(&nuls_lock);
}

static void nuls_fork_child(void)
{
    memset(nuls_opens, 0, sizeof(nuls_opens));
    pthread_mutex_unlock(&nuls_lock);
}

void ust_nuls_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, nuls_fork_prepare, nuls_fork_parent,
                      nuls_fork_child);
    int rc = register_strdev(&nuls_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "nuls: register_strdev failed (%d)", rc);
}

/* q_ptr holds minor + 1, so that it is non-NULL while open. */
static int nuls_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    minor_t minor = getminor(*devp);

    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0; /* reopen */
    if (sflag != DRVOPEN && sflag != CLONEOPEN)
        return ENXIO;
    if (sflag == DRVOPEN && minor >= NULS_NMINOR)
        return ENXIO; /* minors 0 .. NULS_NMINOR-1 (docs/ADMIN.md, "Device names") */
    pthread_mutex_lock(&nuls_lock);
    if (sflag == CLONEOPEN) {
        for (minor = 1; minor < NULS_NMINOR && nuls_opens[minor] != 0; minor++)
            ;
        if (minor == NULS_NMINOR) {
            pthread_mutex_unlock(&nuls_lock);
            return ENXIO;
        }
        *devp = makedevice(getmajor(*devp), minor);
    }
    if (minor < NULS_NMINOR)
        nuls_opens[minor]++;
    pthread_mutex_unlock(&nuls_lock);
    q->q_ptr = (void *)((uintptr_t)minor + 1);
    WR(q)->q_ptr = q->q_ptr;
    qprocson(q);
    return 0;
}

static int nuls_close(queue_t *q, int oflag, cred_t *crp)
{
    minor_t minor = (minor_t)((uintptr_t)q->q_ptr - 1);

    (void)oflag;
    (void)crp;
    qprocsoff(q);
    pthread_mutex_lock(&nuls_lock);
    if (minor < NULS_NMINOR)
        nuls_opens[minor]--;
    pthread_mutex_unlock(&nuls_lock);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    return 0;
}

/* Nothing is below the driver, so nothing arrives here; pass it up if it
 * does. */
static int nuls_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static int nuls_wput(queue_t *q, mblk_t *mp)
{
    unsigned char *flagp;

    switch (mp->b_datap->db_type) {
    case M_FLUSH:
        if (mp->b_wptr - mp->b_rptr < 1)
            break;
        flagp = mp->b_rptr;
        *flagp &= ~FLUSHW; /* the write side holds nothing */
        if (*flagp & FLUSHR) {
            flushq(RD(q), FLUSHDATA);
            qreply(q, mp);
            return 0;
        }
        break;
    case M_IOCTL:
        miocnak(q, mp, 0, EINVAL);
        return 0;
    default:
        break;
    }
    freemsg(mp);
    return 0;
}
