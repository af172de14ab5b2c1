/* SPDX-License-Identifier: MIT */
/*
 * sad.c -- the STREAMS administrative driver, sad(7): /dev/streams/sad.
 *
 * MT level: D_MP | D_CLONE.  Every open is its own stream (a clone minor),
 * so the per-stream state -- whether the opener may administer, and the
 * ioctl in progress -- belongs to one opener.  The stream head sends one
 * ioctl at a time per stream, so that state needs no lock; the autopush
 * table (autopush.c) has its own.
 * Layer: administration (src/admin/), beside the autopush table it serves,
 * as a driver that used the table from src/drivers would point up.
 * Flow control: none needed; nothing is queued (no service procedures).
 *
 * SVR4 has two devices, /dev/sad/admin (SAD_SAP allowed, root only by file
 * mode) and /dev/sad/user.  Here there is one name; a stream opened for
 * writing (O_WRONLY or O_RDWR) is the admin device, a read-only one the user
 * device, on which SAD_SAP fails EPERM.  There is no privilege check beyond
 * that: the table belongs to the process.
 *
 * ioctls, as transparent ioctls (ioctl(fd, SAD_SAP, &sap)) served with
 * M_COPYIN/M_COPYOUT, or through I_STR with the structure as the data:
 *   SAD_SAP  struct strapush in; 0 or the error of ust_autopush_set.
 *   SAD_GAP  struct strapush in (sap_major, sap_minor) and back out.
 *   SAD_VML  struct str_list in, then its sl_nmods names copied in from
 *            sl_modlist (M_COPYIN, for I_STR too); the ioctl returns 0 if
 *            every name is a module, 1 if one is not; EINVAL if sl_nmods < 1
 *            or above SAD_MAXVML.
 * Any other M_IOCTL is refused with EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/sad.h>
#include <sys/strconf.h>

#include "autopush.h"

#define SAD_ID     5010
#define SAD_MAXVML 1024 /* most names one SAD_VML validates */

/* Stages of a transparent ioctl, carried in cq_private. */
enum { SAD_ST_SAP = 1, SAD_ST_GAP, SAD_ST_GAPOUT, SAD_ST_VML, SAD_ST_VMLNAMES };

struct sad_state {
    int admin;     /* opened for writing: SAD_SAP allowed */
    caddr_t uaddr; /* user address of the ioctl in progress (transparent) */
    int nmods;     /* SAD_VML in progress: names to copy in */
};

static int sad_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int sad_close(queue_t *q, int oflag, cred_t *crp);
static int sad_rput(queue_t *q, mblk_t *mp);
static int sad_wput(queue_t *q, mblk_t *mp);

static struct module_info sad_minfo = {
    .mi_idnum = SAD_ID,
    .mi_idname = "sad",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 4096,
    .mi_lowat = 1024,
};

static struct qinit sad_rinit = {
    .qi_putp = sad_rput,
    .qi_qopen = sad_open,
    .qi_qclose = sad_close,
    .qi_minfo = &sad_minfo,
};

static struct qinit sad_winit = {
    .qi_putp = sad_wput,
    .qi_minfo = &sad_minfo,
};

static struct streamtab sad_info = {
    .st_rdinit = &sad_rinit,
    .st_wrinit = &sad_winit,
};

static struct cdevsw sad_cdev = {
    .d_name = "sad",
    .d_str = &sad_info,
    .d_flag = D_MP | D_CLONE,
};

static atomic_uint sad_nextminor; /* clone minors, handed out in turn */

/* Registration from ust_builtin_register (builtins.c). */
void ust_sad_register(void);

void ust_sad_register(void)
{
    int rc = register_strdev(&sad_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "sad: register_strdev failed (%d)", rc);
}

/*
 * sad_open -- a new clone stream; remembers whether it may administer.
 *   Context: open (blocking allowed).  Returns 0, ENXIO for a module open.
 */
static int sad_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    struct sad_state *st;
    minor_t minor;

    (void)crp;
    if (q->q_ptr != NULL)
        return 0;
    if (sflag == MODOPEN)
        return ENXIO;
    st = kmem_zalloc(sizeof(*st), KM_SLEEP);
    st->admin = (oflag & O_ACCMODE) != O_RDONLY;
    minor = atomic_fetch_add(&sad_nextminor, 1) % L_MAXMIN + 1;
    *devp = makedevice(getmajor(*devp), minor);
    q->q_ptr = st;
    WR(q)->q_ptr = st;
    qprocson(q);
    return 0;
}

static int sad_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    kmem_free(q->q_ptr, sizeof(struct sad_state));
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    return 0;
}

/* Nothing is below the driver; pass up whatever arrives. */
static int sad_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Copy the first len bytes of the data of mp (possibly several blocks) into
 * buf.  Returns 0, or EINVAL if there are fewer. */
static int sad_gather(const mblk_t *mp, void *buf, size_t len)
{
    unsigned char *out = buf;
    size_t got = 0;

    for (; mp != NULL && got < len; mp = mp->b_cont) {
        size_t n = (size_t)(mp->b_wptr - mp->b_rptr);
        if (n > len - got)
            n = len - got;
        memcpy(out + got, mp->b_rptr, n);
        got += n;
    }
    return got == len ? 0 : EINVAL;
}

/* A one-block copy of *sap, or NULL. */
static mblk_t *sad_sapmsg(const struct strapush *sap)
{
    mblk_t *dp = allocb(sizeof(*sap), BPRI_MED);

    if (dp != NULL) {
        memcpy(dp->b_wptr, sap, sizeof(*sap));
        dp->b_wptr += sizeof(*sap);
    }
    return dp;
}

/* SAD_VML with the names in mp's data: acknowledge with the verdict. */
static void sad_vml_names(queue_t *q, mblk_t *mp, int n)
{
    size_t len = (size_t)n * sizeof(struct str_mlist);
    struct str_mlist *names = kmem_alloc(len, KM_NOSLEEP);
    int r;

    if (names == NULL) {
        miocnak(q, mp, 0, ENOSR);
        return;
    }
    r = sad_gather(mp->b_cont, names, len) != 0 ? -EINVAL : ust_autopush_vml(names, n);
    kmem_free(names, len);
    if (r < 0)
        miocnak(q, mp, 0, -r);
    else
        miocack(q, mp, 0, r);
}

/* SAD_VML's str_list: check the count and ask for the names. */
static void sad_vml_list(queue_t *q, mblk_t *mp, struct sad_state *st)
{
    struct str_list sl;

    if (sad_gather(mp->b_cont, &sl, sizeof(sl)) != 0 || sl.sl_nmods < 1 ||
        sl.sl_nmods > SAD_MAXVML) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    st->nmods = sl.sl_nmods;
    mcopyin(mp, (void *)(uintptr_t)SAD_ST_VMLNAMES, (size_t)sl.sl_nmods * sizeof(struct str_mlist),
            sl.sl_modlist);
    qreply(q, mp);
}

/*
 * sad_do -- SAD_SAP or SAD_GAP with the strapush in mp's data.  For SAD_GAP
 * the answer is copied out (transparent) or returned as the reply data
 * (I_STR).
 */
static void sad_do(queue_t *q, mblk_t *mp, struct sad_state *st, int cmd, int transparent)
{
    struct strapush sap;
    mblk_t *dp;
    int err;

    if (sad_gather(mp->b_cont, &sap, sizeof(sap)) != 0) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    if (cmd == SAD_SAP) {
        err = ust_autopush_set(&sap);
        if (err != 0)
            miocnak(q, mp, 0, err);
        else
            miocack(q, mp, 0, 0);
        return;
    }
    err = ust_autopush_get(&sap);
    if (err == 0 && (dp = sad_sapmsg(&sap)) == NULL)
        err = ENOSR;
    if (err != 0) {
        miocnak(q, mp, 0, err);
        return;
    }
    if (transparent) {
        mcopyout(mp, (void *)(uintptr_t)SAD_ST_GAPOUT, sizeof(sap), st->uaddr, dp);
        qreply(q, mp);
        return;
    }
    freemsg(mp->b_cont);
    mp->b_cont = dp;
    miocack(q, mp, (int)sizeof(sap), 0);
}

/* An M_IOCTL: start a transparent ioctl with its first M_COPYIN, or do an
 * I_STR one at once. */
static void sad_ioctl(queue_t *q, mblk_t *mp, struct sad_state *st)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    int cmd = iocp->ioc_cmd;

    if (cmd != SAD_SAP && cmd != SAD_GAP && cmd != SAD_VML) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    if (cmd == SAD_SAP && !st->admin) {
        miocnak(q, mp, 0, EPERM);
        return;
    }
    if (iocp->ioc_count == TRANSPARENT) {
        size_t size = cmd == SAD_VML ? sizeof(struct str_list) : sizeof(struct strapush);
        int stage = cmd == SAD_SAP ? SAD_ST_SAP : cmd == SAD_GAP ? SAD_ST_GAP : SAD_ST_VML;
        caddr_t uaddr = NULL;

        if (mp->b_cont == NULL || sad_gather(mp->b_cont, &uaddr, sizeof(uaddr)) != 0) {
            miocnak(q, mp, 0, EINVAL);
            return;
        }
        st->uaddr = uaddr;
        mcopyin(mp, (void *)(uintptr_t)stage, size, uaddr);
        qreply(q, mp);
        return;
    }
    if (cmd == SAD_VML)
        sad_vml_list(q, mp, st);
    else
        sad_do(q, mp, st, cmd, 0);
}

/* An M_IOCDATA: the answer to one of our copy requests. */
static void sad_iocdata(queue_t *q, mblk_t *mp, struct sad_state *st)
{
    struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;
    int stage = (int)(uintptr_t)cp->cp_private;

    if (cp->cp_rval != 0) { /* the copy failed: the head fails the ioctl EFAULT */
        freemsg(mp);
        return;
    }
    switch (stage) {
    case SAD_ST_SAP:
        sad_do(q, mp, st, SAD_SAP, 1);
        break;
    case SAD_ST_GAP:
        sad_do(q, mp, st, SAD_GAP, 1);
        break;
    case SAD_ST_GAPOUT:
        miocack(q, mp, 0, 0);
        break;
    case SAD_ST_VML:
        sad_vml_list(q, mp, st);
        break;
    case SAD_ST_VMLNAMES:
        sad_vml_names(q, mp, st->nmods);
        break;
    default:
        miocnak(q, mp, 0, EINVAL);
        break;
    }
}

/*
 * sad_wput -- ioctls, M_FLUSH; everything else is discarded.
 *   Context: put procedure (D_MP: any thread, possibly concurrently for
 *   different streams).
 */
static int sad_wput(queue_t *q, mblk_t *mp)
{
    struct sad_state *st = q->q_ptr;
    unsigned char *flagp;

    switch (mp->b_datap->db_type) {
    case M_IOCTL:
        if (mp->b_wptr - mp->b_rptr < (ptrdiff_t)sizeof(struct iocblk)) {
            freemsg(mp);
            return 0;
        }
        sad_ioctl(q, mp, st);
        return 0;
    case M_IOCDATA:
        if (mp->b_wptr - mp->b_rptr < (ptrdiff_t)sizeof(struct copyresp)) {
            freemsg(mp);
            return 0;
        }
        sad_iocdata(q, mp, st);
        return 0;
    case M_FLUSH:
        if (mp->b_wptr - mp->b_rptr < 1)
            break;
        flagp = mp->b_rptr;
        *flagp &= ~FLUSHW;
        if (*flagp & FLUSHR) {
            flushq(RD(q), FLUSHDATA);
            qreply(q, mp);
            return 0;
        }
        break;
    default:
        break;
    }
    freemsg(mp);
    return 0;
}
