/* SPDX-License-Identifier: MIT */
/*
 * sc.c -- the sc module, STREAMS configuration (sc(4) of Linux
 * Fast-STREAMS): SC_IOC_LIST answers with the registered drivers and
 * modules, their major numbers and the module_info and statistics of each
 * of their four qinits.  <sys/sc.h> has the structures; docs/ADMIN.md, "The
 * sc module", the rules.
 *
 * Layer: administration (src/admin/), beside the sad driver it extends and
 * strstat.c: it reads the executive's registry (ust_reg_foreach), which a
 * module of src/modules may not reach.
 * MT level: D_MP.  Per-stream state is the ioctl in progress; the stream
 * head sends one ioctl at a time per stream, so it needs no lock.  The
 * registry is copied under its own lock (ust_reg_foreach), nothing else is
 * taken.
 * Flow control: none of its own; no service procedures, every message but
 * its own ioctl passes straight through (sc does not interpret M_DATA,
 * M_PROTO or M_PCPROTO), so canputnext looks through it.
 * Pushable on any stream (as in Fast-STREAMS, whose sc(4) says it "can be
 * pushed over any stream", the sad driver or nuls typically); the answer
 * does not depend on the stream.
 *
 * SC_IOC_LIST, as I_STR (data: struct sc_list) or transparent (arg: struct
 * sc_list *, fetched with M_COPYIN):
 *   sc_nmods < 0: EINVAL.  Otherwise the registry is copied, the first
 *   min(sc_nmods, registered) entries go to sc_mlist (M_COPYOUT: a bad
 *   address fails the ioctl EFAULT at the head), then sc_nmods is set to the
 *   number registered and the sc_list goes back (in the I_STR reply data, or
 *   M_COPYOUT to arg).  The ioctl returns 0.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/sc.h>
#include <sys/strconf.h>

#include "strcore.h"

#define SC_ID 5011

/* Stages of SC_IOC_LIST, carried in cq_private. */
enum { SC_ST_LISTIN = 1, SC_ST_MLISTOUT, SC_ST_LISTOUT };

struct sc_state {
    int transparent;   /* the ioctl in progress is transparent */
    caddr_t uaddr;     /* its struct sc_list (transparent) */
    struct sc_list l;  /* what the caller gave, sc_nmods updated at the end */
};

static int sc_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int sc_close(queue_t *q, int oflag, cred_t *crp);
static int sc_rput(queue_t *q, mblk_t *mp);
static int sc_wput(queue_t *q, mblk_t *mp);

static struct module_info sc_minfo = {
    .mi_idnum = SC_ID,
    .mi_idname = "sc",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit sc_rinit = {
    .qi_putp = sc_rput,
    .qi_qopen = sc_open,
    .qi_qclose = sc_close,
    .qi_minfo = &sc_minfo,
};

static struct qinit sc_winit = {
    .qi_putp = sc_wput,
    .qi_minfo = &sc_minfo,
};

static struct streamtab sc_info = {
    .st_rdinit = &sc_rinit,
    .st_wrinit = &sc_winit,
};

static struct fmodsw sc_fmod = {
    .f_name = "sc",
    .f_str = &sc_info,
    .f_flag = D_MP,
};

void ust_sc_register(void);

void ust_sc_register(void)
{
    int rc = register_strmod(&sc_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "sc: register_strmod failed (%d)", rc);
}

static int sc_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0; /* reopen */
    if (sflag != MODOPEN)
        return ENXIO;
    struct sc_state *st = kmem_zalloc(sizeof(*st), KM_SLEEP);
    q->q_ptr = st;
    WR(q)->q_ptr = st;
    qprocson(q);
    return 0;
}

static int sc_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    kmem_free(q->q_ptr, sizeof(struct sc_state));
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    return 0;
}

static int sc_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The registry copy                                                        */
/* ------------------------------------------------------------------------ */
struct sc_copy {
    struct sc_mlist *v; /* room for max entries */
    int max, n, total;
};

static void sc_fill_qinit(const struct qinit *qi, int index, struct sc_module_info *mi,
                          struct sc_module_stat *ms)
{
    memset(mi, 0, sizeof(*mi));
    memset(ms, 0, sizeof(*ms));
    mi->index = -1;
    ms->index = -1;
    if (qi == NULL)
        return;
    const struct module_info *inf = qi->qi_minfo;
    if (inf != NULL) {
        mi->index = index;
        mi->mi_idnum = inf->mi_idnum;
        if (inf->mi_idname != NULL)
            snprintf(mi->mi_idname, sizeof(mi->mi_idname), "%s", inf->mi_idname);
        mi->mi_minpsz = inf->mi_minpsz;
        mi->mi_maxpsz = inf->mi_maxpsz;
        mi->mi_hiwat = inf->mi_hiwat;
        mi->mi_lowat = inf->mi_lowat;
    }
    ms->index = index;
    if (qi->qi_mstat != NULL) {
        ms->ms_pcnt = qi->qi_mstat->ms_pcnt;
        ms->ms_scnt = qi->qi_mstat->ms_scnt;
        ms->ms_ocnt = qi->qi_mstat->ms_ocnt;
        ms->ms_ccnt = qi->qi_mstat->ms_ccnt;
        ms->ms_acnt = qi->qi_mstat->ms_acnt;
        ms->ms_flags = qi->qi_mstat->ms_flags;
    }
}

/* ust_reg_foreach callback, registry lock held: copy e if there is room. */
static void sc_copy_ent(struct ust_modent *e, void *arg)
{
    struct sc_copy *c = arg;
    c->total++;
    if (c->n >= c->max)
        return;
    struct sc_mlist *m = &c->v[c->n++];
    const struct streamtab *st = e->str;
    const struct qinit *qi[4] = {st->st_rdinit, st->st_wrinit, st->st_muxrinit, st->st_muxwinit};
    memset(m, 0, sizeof(*m));
    m->major = e->kind == UST_DRIVER ? (long)e->major : 0;
    snprintf(m->name, sizeof(m->name), "%s", e->name);
    for (int i = 0; i < 4; i++)
        sc_fill_qinit(qi[i], i, &m->mi[i], &m->ms[i]);
    /* The executive counts the open and close routine calls (read side). */
    m->ms[0].ms_ocnt = atomic_load(&e->nopen);
    m->ms[0].ms_ccnt = atomic_load(&e->nclose);
}

/* The number of registered entries (a first pass, for the allocation). */
static void sc_count_ent(struct ust_modent *e, void *arg)
{
    (void)e;
    (*(int *)arg)++;
}

/* ------------------------------------------------------------------------ */
/* SC_IOC_LIST                                                              */
/* ------------------------------------------------------------------------ */

/* Gather len bytes of message mp's data into buf: 0, or -1 if short. */
static int sc_gather(const mblk_t *mp, void *buf, size_t len)
{
    unsigned char *p = buf;
    for (; mp != NULL && len > 0; mp = mp->b_cont) {
        size_t n = mp->b_wptr > mp->b_rptr ? (size_t)(mp->b_wptr - mp->b_rptr) : 0;
        if (n > len)
            n = len;
        memcpy(p, mp->b_rptr, n);
        p += n;
        len -= n;
    }
    return len == 0 ? 0 : -1;
}

/* The last step: sc_nmods set to the number registered, the sc_list back
 * to the caller (reply data of an I_STR, M_COPYOUT of a transparent one). */
static void sc_list_done(queue_t *q, mblk_t *mp, struct sc_state *st)
{
    mblk_t *dp = allocb(sizeof(st->l), BPRI_MED);
    if (dp == NULL) {
        miocnak(q, mp, 0, ENOSR);
        return;
    }
    memcpy(dp->b_wptr, &st->l, sizeof(st->l));
    dp->b_wptr += sizeof(st->l);
    if (st->transparent) {
        mcopyout(mp, (void *)(uintptr_t)SC_ST_LISTOUT, sizeof(st->l), st->uaddr, dp);
        qreply(q, mp);
        return;
    }
    freemsg(mp->b_cont);
    mp->b_cont = dp;
    miocack(q, mp, (int)sizeof(st->l), 0);
}

/* st->l holds the caller's sc_list: copy the registry, send the entries
 * out (M_COPYOUT to sc_mlist) or, with none to send, finish at once. */
static void sc_list_start(queue_t *q, mblk_t *mp, struct sc_state *st)
{
    struct sc_copy c = {0};
    mblk_t *dp = NULL;

    if (st->l.sc_nmods < 0) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    ust_reg_foreach(sc_count_ent, &c.max);
    if (c.max > st->l.sc_nmods)
        c.max = st->l.sc_nmods;
    if (c.max > 0) { /* registrations meanwhile: the second pass copies at most c.max */
        dp = allocb((size_t)c.max * sizeof(struct sc_mlist), BPRI_MED);
        if (dp == NULL) {
            miocnak(q, mp, 0, ENOSR);
            return;
        }
        c.v = (struct sc_mlist *)(void *)dp->b_wptr;
    }
    ust_reg_foreach(sc_copy_ent, &c);
    st->l.sc_nmods = c.total;
    if (c.n == 0) {
        freemsg(dp);
        sc_list_done(q, mp, st);
        return;
    }
    dp->b_wptr += (size_t)c.n * sizeof(struct sc_mlist);
    mcopyout(mp, (void *)(uintptr_t)SC_ST_MLISTOUT, (size_t)c.n * sizeof(struct sc_mlist),
             st->l.sc_mlist, dp);
    qreply(q, mp);
}

static void sc_ioctl(queue_t *q, mblk_t *mp, struct sc_state *st)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;

    memset(st, 0, sizeof(*st));
    if (iocp->ioc_count == TRANSPARENT) {
        caddr_t uaddr = NULL;
        if (mp->b_cont == NULL || sc_gather(mp->b_cont, &uaddr, sizeof(uaddr)) != 0) {
            miocnak(q, mp, 0, EINVAL);
            return;
        }
        st->transparent = 1;
        st->uaddr = uaddr;
        mcopyin(mp, (void *)(uintptr_t)SC_ST_LISTIN, sizeof(struct sc_list), uaddr);
        qreply(q, mp);
        return;
    }
    if (iocp->ioc_count < sizeof(struct sc_list) ||
        sc_gather(mp->b_cont, &st->l, sizeof(st->l)) != 0) {
        miocnak(q, mp, 0, EINVAL);
        return;
    }
    sc_list_start(q, mp, st);
}

static void sc_iocdata(queue_t *q, mblk_t *mp, struct sc_state *st)
{
    struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;

    if (cp->cp_rval != 0) { /* the copy failed: the head fails the ioctl EFAULT */
        freemsg(mp);
        return;
    }
    switch ((int)(uintptr_t)cp->cp_private) {
    case SC_ST_LISTIN:
        if (sc_gather(mp->b_cont, &st->l, sizeof(st->l)) != 0) {
            miocnak(q, mp, 0, EINVAL);
            return;
        }
        sc_list_start(q, mp, st);
        return;
    case SC_ST_MLISTOUT:
        sc_list_done(q, mp, st);
        return;
    case SC_ST_LISTOUT:
        miocack(q, mp, 0, 0);
        return;
    default:
        miocnak(q, mp, 0, EINVAL);
        return;
    }
}

/*
 * sc_wput -- SC_IOC_LIST and its M_IOCDATA; everything else passes on.
 *   Context: put procedure (D_MP, any thread).
 */
static int sc_wput(queue_t *q, mblk_t *mp)
{
    struct sc_state *st = q->q_ptr;
    size_t len = mp->b_wptr > mp->b_rptr ? (size_t)(mp->b_wptr - mp->b_rptr) : 0;

    switch (mp->b_datap->db_type) {
    case M_IOCTL:
        if (len >= sizeof(struct iocblk) &&
            ((struct iocblk *)(void *)mp->b_rptr)->ioc_cmd == SC_IOC_LIST) {
            sc_ioctl(q, mp, st);
            return 0;
        }
        break;
    case M_IOCDATA:
        if (len >= sizeof(struct copyresp) &&
            ((struct copyresp *)(void *)mp->b_rptr)->cp_cmd == SC_IOC_LIST) {
            sc_iocdata(q, mp, st);
            return 0;
        }
        break;
    default:
        break;
    }
    putnext(q, mp);
    return 0;
}
