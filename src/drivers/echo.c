/* SPDX-License-Identifier: MIT */
/*
 * echo.c -- the echo driver: whatever is written comes back to be read.
 *
 * MT level: D_MP.  Per-stream state is only the minor number; the table of
 * minors in use is guarded by echo_lock, taken only in open and close.
 * Flow control: the write side queues M_DATA and M_PROTO (putq) and its
 * service procedure sends them up the read side (qreply) only while
 * bcanputnext(RD(q), band) allows; otherwise it puts the message back and
 * waits.  When the reader drains, back-enabling reaches the driver's read
 * queue (the first queue with a service procedure below the full one); its
 * service procedure re-enables the write queue.  So a slow reader fills echo's
 * write queue, and that in turn pushes back on the writer.  M_PCPROTO is
 * high priority and goes up at once.
 * M_FLUSH: FLUSHW flushes the write queue; FLUSHR flushes the read queue and
 * the message goes back up (with FLUSHW cleared), as a driver must do.
 * M_IOCTL is refused (M_IOCNAK, EINVAL); other messages are freed.
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

#define ECHO_ID 5003
#define ECHO_NMINOR 256 /* minors 0 .. 255: a DRVOPEN of another fails ENXIO */

struct echo_state {
    minor_t minor;
};

static int echo_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int echo_close(queue_t *q, int oflag, cred_t *crp);
static int echo_rput(queue_t *q, mblk_t *mp);
static int echo_rsrv(queue_t *q);
static int echo_wput(queue_t *q, mblk_t *mp);
static int echo_wsrv(queue_t *q);

static struct module_info echo_minfo = {
    .mi_idnum = ECHO_ID,
    .mi_idname = "echo",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit echo_rinit = {
    .qi_putp = echo_rput,
    .qi_srvp = echo_rsrv,
    .qi_qopen = echo_open,
    .qi_qclose = echo_close,
    .qi_minfo = &echo_minfo,
};

static struct qinit echo_winit = {
    .qi_putp = echo_wput,
    .qi_srvp = echo_wsrv,
    .qi_minfo = &echo_minfo,
};

static struct streamtab echo_info = {
    .st_rdinit = &echo_rinit,
    .st_wrinit = &echo_winit,
};

static struct cdevsw echo_cdev = {
    .d_name = "echo",
    .d_str = &echo_info,
    .d_flag = D_MP,
};

static pthread_mutex_t echo_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int echo_opens[ECHO_NMINOR]; /* echo_lock: open streams per minor */

/* Registration from ust_builtin_register. */
void ust_echo_register(void);

/* fork() (src/core/forksafe.h): echo_lock is held briefly and nothing ranked before
 * UST_FORK_DRIVER is taken under it, so it is quiesced.  In the child, echo_opens counts the
 * parent's streams: it starts at zero. */
static void echo_fork_prepare(void)
{
    pthread_mutex_lock(&echo_lock);
}

static void echo_fork_parent(void)
{
    pthread_mutex_unlock(&echo_lock);
}

static void echo_fork_child(void)
{
    memset(echo_opens, 0, sizeof(echo_opens));
    pthread_mutex_unlock(&echo_lock);
}

void ust_echo_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, echo_fork_prepare, echo_fork_parent,
                      echo_fork_child);
    int rc = register_strdev(&echo_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "echo: register_strdev failed (%d)", rc);
}

static int echo_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    struct echo_state *es;
    minor_t minor = getminor(*devp);

    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0; /* reopen of an open stream */
    if (sflag != DRVOPEN && sflag != CLONEOPEN)
        return ENXIO;
    if (sflag == DRVOPEN && minor >= ECHO_NMINOR)
        return ENXIO; /* minors 0 .. ECHO_NMINOR-1 (docs/ADMIN.md, "Device names") */
    es = kmem_zalloc(sizeof(*es), KM_SLEEP);

    pthread_mutex_lock(&echo_lock);
    if (sflag == CLONEOPEN) {
        for (minor = 1; minor < ECHO_NMINOR && echo_opens[minor] != 0; minor++)
            ;
        if (minor == ECHO_NMINOR) {
            pthread_mutex_unlock(&echo_lock);
            kmem_free(es, sizeof(*es));
            return ENXIO;
        }
        *devp = makedevice(getmajor(*devp), minor);
    }
    if (minor < ECHO_NMINOR)
        echo_opens[minor]++;
    pthread_mutex_unlock(&echo_lock);

    es->minor = minor;
    q->q_ptr = es;
    WR(q)->q_ptr = es;
    qprocson(q);
    return 0;
}

static int echo_close(queue_t *q, int oflag, cred_t *crp)
{
    struct echo_state *es = q->q_ptr;

    (void)oflag;
    (void)crp;
    qprocsoff(q);
    pthread_mutex_lock(&echo_lock);
    if (es->minor < ECHO_NMINOR)
        echo_opens[es->minor]--;
    pthread_mutex_unlock(&echo_lock);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    kmem_free(es, sizeof(*es));
    return 0;
}

/* Nothing is below the driver, so nothing arrives here; pass it up if it
 * does. */
static int echo_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Runs when the reader has drained (back-enable): resume the write side. */
static int echo_rsrv(queue_t *q)
{
    qenable(WR(q));
    return 0;
}

/* Driver M_FLUSH: flush our sides and turn the read half around. */
static void echo_flush(queue_t *q, mblk_t *mp)
{
    unsigned char *flagp = mp->b_rptr;
    int byband = (*flagp & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2;
    unsigned char band = byband ? flagp[1] : 0;

    if (*flagp & FLUSHW) {
        if (byband)
            flushband(q, band, FLUSHDATA);
        else
            flushq(q, FLUSHDATA);
        *flagp &= ~FLUSHW;
    }
    if (*flagp & FLUSHR) {
        if (byband)
            flushband(RD(q), band, FLUSHDATA);
        else
            flushq(RD(q), FLUSHDATA);
        qreply(q, mp);
        return;
    }
    freemsg(mp);
}

static int echo_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_DATA:
    case M_PROTO:
        if (!putq(q, mp))
            freemsg(mp);
        break;
    case M_PCPROTO:
        qreply(q, mp);
        break;
    case M_FLUSH:
        if (mp->b_wptr - mp->b_rptr < 1)
            freemsg(mp);
        else
            echo_flush(q, mp);
        break;
    case M_IOCTL:
        miocnak(q, mp, 0, EINVAL);
        break;
    default:
        freemsg(mp);
        break;
    }
    return 0;
}

/* Send queued data back up while the read side has room in its band. */
static int echo_wsrv(queue_t *q)
{
    mblk_t *mp;

    while ((mp = getq(q)) != NULL) {
        if (pcmsg(mp->b_datap->db_type) || bcanputnext(RD(q), mp->b_band)) {
            qreply(q, mp);
        } else {
            putbq(q, mp);
            return 0;
        }
    }
    return 0;
}
