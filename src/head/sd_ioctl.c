/* SPDX-License-Identifier: MIT */
/*
 * sd_ioctl.c -- ioctl(2) on a stream: the dispatcher and every streamio(7)
 * request done at the stream head.  The M_IOCTL protocol (I_STR and the
 * transparent ioctls) is in sd_iocproto.c.
 *
 * Principles of operation
 *   The I_* requests of streamio(7) (and the Linux Fast-STREAMS extensions
 *   I_SERROPT, I_GERROPT, I_ANCHOR, I_ISASTREAM, I_GETMSG, I_PUTMSG,
 *   I_GETPMSG, I_PUTPMSG) are done at the stream head; I_LINK, I_UNLINK,
 *   I_PLINK and I_PUNLINK in sd_link.c.  Not supported here, failing
 *   EINVAL: I_PIPE, I_FIFO, I_GETTP, I_STATS, I_BIGPIPE, I_AUTOPUSH, I_HEAP.
 *   Every other request is a transparent ioctl for the modules and driver
 *   (sd_iocproto.c, as is I_STR).
 *
 *   Integer arguments arrive as the pointer-sized variadic argument and are
 *   truncated to int, as the kernel's ioctl does.  Every request first sends
 *   a held write (SNDHOLD) so that it stays in order with the data.
 *
 * Locking
 *   sd_lock guards the options; sd_plumb is held to look at the modules
 *   (I_LOOK, I_FIND, I_LIST, I_ANCHOR).  No lock is held across putnext or a
 *   wait.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sthead.h"

/* An int argument of the variadic ioctl. */
static int iarg_of(void *arg)
{
    return (int)(intptr_t)arg;
}

/* Copy out one int result.  0 or EFAULT. */
static int put_int(void *arg, int v)
{
    return ust_copyout(&v, arg, sizeof(v));
}

/* Copy in a module name (at most FMNAMESZ characters and the NUL).
 * 0, EFAULT, or EINVAL (longer, or empty). */
static int get_name(const void *arg, char name[FMNAMESZ + 1])
{
    size_t n;
    int err = ust_strncpy_in(arg, name, FMNAMESZ + 1, &n);
    if (err)
        return err == EFAULT ? EFAULT : EINVAL;
    return n == 0 ? EINVAL : 0;
}

/* Check that the user area arg..arg+len (an output) is writable, by writing
 * back what it holds, before a call consumes anything it could then not
 * report.  0 or EFAULT. */
static int probe_out(void *arg, size_t len)
{
    unsigned char tmp[64];
    _Static_assert(sizeof(struct strrecvfd) <= 64, "probe_out");
    return len > sizeof(tmp) ? EFAULT : ust_copyin_rw(arg, tmp, len);
}

/* The name of the module or driver whose queue q is. */
static const char *q_name(queue_t *q)
{
    struct ust_modent *e = ust_qp(q)->ent;
    if (e)
        return e->name;
    if (q->q_qinfo && q->q_qinfo->qi_minfo && q->q_qinfo->qi_minfo->mi_idname)
        return q->q_qinfo->qi_minfo->mi_idname;
    return "";
}

/* ------------------------------------------------------------------------ */
/* Flushing                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * ioc_flush -- I_FLUSH / I_FLUSHBAND: empty the head's own read queue (all of
 *   it, or band `band` when byband) for FLUSHR, then send M_FLUSH down, whose
 *   FLUSHR the driver turns back up through the modules.  Returns 0 or -errno:
 *   EINVAL (flag not FLUSHR, FLUSHW or FLUSHRW, linked), ENXIO (hung up), the
 *   M_ERROR error, ENOSR (no memory for the M_FLUSH).
 */
static int ioc_flush(struct stdata *sd, int flag, int byband, unsigned char band)
{
    if (flag & ~FLUSHRW || !(flag & FLUSHRW))
        return -EINVAL;
    ust_lock(&sd->sd_lock);
    int err = ust_sd_ioc_error(sd);
    ust_unlock(&sd->sd_lock);
    if (err)
        return -err;
    mblk_t *mp = allocb(2, BPRI_HI);
    if (!mp)
        return -ENOSR;
    mp->b_datap->db_type = M_FLUSH;
    *mp->b_wptr++ = (unsigned char)(flag | (byband ? FLUSHBAND : 0));
    if (byband)
        *mp->b_wptr++ = band;
    if (flag & FLUSHR) {
        ust_sd_lockq(sd); /* sd_lock: the read queue's front, readiness */
        ust_sd_absorb(sd); /* a pipe's arrivals go with the queue */
        if (byband)
            flushband(sd->sd_rq, band, FLUSHALL);
        else
            flushq(sd->sd_rq, FLUSHALL);
        ust_sd_rready(sd);
        ust_sd_unlockq(sd);
    }
    ust_sd_ioc_send(sd, mp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Modules: I_LOOK, I_FIND, I_LIST, I_ANCHOR                                */
/* ------------------------------------------------------------------------ */

/* Names of the modules (top down) and the driver (not for a pipe end);
 * sd_plumb held.  Returns the count. */
static int ioc_names(struct stdata *sd, struct str_mlist *out, int max)
{
    UST_ASSERT_HELD(&sd->sd_plumb);
    ust_lock(&sd->sd_lock);
    int pipe = (sd->sd_flag & (STRPIPE | STRFIFO)) != 0;
    ust_unlock(&sd->sd_lock);
    int n = 0;
    queue_t *q = ust_sd_top(sd);
    for (int i = 0; q && i < sd->sd_pushcnt + !pipe; i++, q = ust_qnext(q)) {
        if (ust_qflags(q) & QHEAD)
            break; /* across a pipe's twist */
        if (n < max) {
            const char *nm = q_name(q);
            size_t l = strnlen(nm, FMNAMESZ);
            memcpy(out[n].l_name, nm, l);
            out[n].l_name[l] = '\0';
        }
        n++;
    }
    return n;
}

static int ioc_look(struct stdata *sd, void *arg)
{
    struct str_mlist top;
    ust_lock(&sd->sd_plumb);
    int n = sd->sd_pushcnt > 0 ? ioc_names(sd, &top, 1) : 0;
    ust_unlock(&sd->sd_plumb);
    if (n == 0)
        return -EINVAL;
    return ust_copyout(top.l_name, arg, strlen(top.l_name) + 1) ? -EFAULT : 0;
}

static int ioc_find(struct stdata *sd, void *arg)
{
    char name[FMNAMESZ + 1];
    struct str_mlist l[UST_NSTRPUSH + 1];
    int err = get_name(arg, name);
    if (err)
        return -err;
    if (!fmod_lookup(name))
        return -EINVAL;
    ust_lock(&sd->sd_plumb);
    int n = ioc_names(sd, l, UST_NSTRPUSH + 1), mods = sd->sd_pushcnt;
    ust_unlock(&sd->sd_plumb);
    for (int i = 0; i < n && i < mods; i++)
        if (strcmp(l[i].l_name, name) == 0)
            return 1;
    return 0;
}

/* I_LIST: arg NULL -> the number of modules and driver; else fill the
 * caller's str_list (sl_nmods >= 1 entries) and set sl_nmods. */
static int ioc_list(struct stdata *sd, void *arg)
{
    struct str_mlist l[UST_NSTRPUSH + 1];
    struct str_list sl;
    if (arg && ust_copyin(arg, &sl, sizeof(sl)) != 0)
        return -EFAULT;
    if (arg && sl.sl_nmods < 1)
        return -EINVAL;
    ust_lock(&sd->sd_plumb);
    int n = ioc_names(sd, l, UST_NSTRPUSH + 1);
    ust_unlock(&sd->sd_plumb);
    if (!arg)
        return n;
    if (n > sl.sl_nmods)
        n = sl.sl_nmods;
    if (n > 0 && ust_copyout(l, sl.sl_modlist, (size_t)n * sizeof(l[0])) != 0)
        return -EFAULT;
    sl.sl_nmods = n;
    return ust_copyout(&sl.sl_nmods, &((struct str_list *)arg)->sl_nmods, sizeof(int)) ? -EFAULT
                                                                                       : 0;
}

/* ------------------------------------------------------------------------ */
/* The read queue: I_ATMARK, I_CKBAND, I_GETBAND                            */
/* ------------------------------------------------------------------------ */

/* Look at the head read queue under its lock.  what: 0 ATMARK (arg the
 * mark kind), 1 CKBAND (arg the band), 2 GETBAND.  Returns the answer or -1
 * (GETBAND on an empty queue). */
static int ioc_rq_look(struct stdata *sd, int what, int arg)
{
    queue_t *q = sd->sd_rq;
    struct ust_qpriv *pv = ust_qpv(q);
    int r = 0;
    ust_sd_absorb(sd); /* a pipe's arrivals are messages at the head too */
    ust_lock(&pv->lock); /* queue lock: the message list */
    mblk_t *mp = q->q_first;
    switch (what) {
    case 0:
        if (mp && (mp->b_flag & MSGMARK)) {
            r = 1;
            if (arg == LASTMARK)
                for (mblk_t *m = mp->b_next; m; m = m->b_next)
                    if (m->b_flag & MSGMARK)
                        r = 0;
        }
        break;
    case 1:
        for (; mp && !r; mp = mp->b_next)
            r = mp->b_datap->db_type < QPCTL && mp->b_band == arg;
        break;
    default:
        r = mp ? (mp->b_datap->db_type >= QPCTL ? 0 : mp->b_band) : -1;
        break;
    }
    ust_unlock(&pv->lock);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

/* I_SRDOPT: a read mode and at most one protocol option (none keeps the
 * current one); RFILL (Linux Fast-STREAMS) and RMREAD (ustreams) allowed. */
static int srdopt_bad(int v)
{
    int prot = v & RPROTMASK;
    return (v & ~(RMODEMASK | RPROTMASK | RFILL | RMREAD)) || (v & RMODEMASK) == RMODEMASK ||
           (prot && prot != RPROTNORM && prot != RPROTDAT && prot != RPROTDIS);
}

static int ioc_srdopt(struct stdata *sd, int v)
{
    int prot = v & RPROTMASK;
    if (srdopt_bad(v))
        return -EINVAL;
    ust_lock(&sd->sd_lock);
    if (!prot)
        prot = sd->sd_rdopt & RPROTMASK;
    sd->sd_rdopt = (v & (RMODEMASK | RFILL | RMREAD)) | prot;
    ust_unlock(&sd->sd_lock);
    return 0;
}

/* I_SERROPT: at most one of RERRNORM/RERRNONPERSIST and of WERRNORM/
 * WERRNONPERSIST; a side not named is set to its persistent (NORM) default. */
static int serropt_bad(int v)
{
    return (v & ~(RERRMASK | WERRMASK)) || (v & RERRMASK) == RERRMASK ||
           (v & WERRMASK) == WERRMASK;
}

static int ioc_serropt(struct stdata *sd, int v)
{
    if (serropt_bad(v))
        return -EINVAL;
    if (!(v & RERRMASK))
        v |= RERRNORM;
    if (!(v & WERRMASK))
        v |= WERRNORM;
    ust_lock(&sd->sd_lock);
    sd->sd_erropt = v;
    ust_unlock(&sd->sd_lock);
    return 0;
}

/* I_SWROPT: SNDZERO, SNDPIPE, SNDHOLD; turning SNDHOLD off sends the hold. */
static int ioc_swropt(struct stdata *sd, int v)
{
    if (v & ~(SNDZERO | SNDPIPE | SNDHOLD))
        return -EINVAL;
    ust_lock(&sd->sd_lock);
    sd->sd_wropt = v;
    ust_unlock(&sd->sd_lock);
    if (!(v & SNDHOLD))
        ust_sd_flush_hold(sd);
    return 0;
}

/* Read an int option field under sd_lock and copy it out. */
static int ioc_get(struct stdata *sd, const int *field, void *arg)
{
    ust_lock(&sd->sd_lock);
    int v = *field;
    ust_unlock(&sd->sd_lock);
    return put_int(arg, v) ? -EFAULT : 0;
}

/* ------------------------------------------------------------------------ */
/* I_FDINSERT and the message ioctls                                        */
/* ------------------------------------------------------------------------ */

/* The read queue at the far end of fsd's write side: the driver's, or across
 * a pipe the other end's head read queue.  Walked under claims. */
static queue_t *ioc_bottom(struct stdata *fsd)
{
    queue_t *q = fsd->sd_wq, *nq;
    atomic_fetch_add(&ust_qpv(q)->active, 1);
    while ((nq = ust_qclaim_next(q)) != NULL) {
        ust_qrelease(q);
        q = nq;
    }
    queue_t *rq = RD(q);
    ust_qrelease(q);
    return rq;
}

/*
 * ioc_fdinsert -- I_FDINSERT: putmsg with the read queue pointer of the
 *   bottom of stream `fildes` stored at `offset` in the control part.
 *   Returns 0 or -errno: EINVAL (flags not 0/RS_HIPRI, fildes not a stream,
 *   offset misaligned, control part shorter than offset + a pointer),
 *   ERANGE (control part longer than UST_STRCTLSZ), EFAULT, and the errors of
 *   putmsg.
 */
static int ioc_fdinsert(struct stdata *sd, void *arg)
{
    struct strfdinsert fi;
    static const size_t psz = sizeof(queue_t *);
    if (ust_copyin(arg, &fi, sizeof(fi)) != 0)
        return -EFAULT;
    if ((fi.flags != 0 && fi.flags != RS_HIPRI) || fi.offset < 0 || (size_t)fi.offset % psz != 0 ||
        fi.ctlbuf.len < 0 || (size_t)fi.ctlbuf.len < (size_t)fi.offset + psz)
        return -EINVAL;
    if (fi.ctlbuf.len > UST_STRCTLSZ)
        return -ERANGE;
    int err;
    struct stdata *fsd = ust_sd_get(fi.fildes, &err);
    if (!fsd)
        return -EINVAL;
    char *ctl = malloc((size_t)fi.ctlbuf.len);
    if (!ctl) {
        ust_sd_put(fsd);
        return -EAGAIN;
    }
    if (ust_copyin(fi.ctlbuf.buf, ctl, (size_t)fi.ctlbuf.len) != 0) {
        ust_sd_put(fsd);
        free(ctl);
        return -EFAULT;
    }
    queue_t *rq = ioc_bottom(fsd);
    ust_sd_put(fsd);
    memcpy(ctl + fi.offset, &rq, psz);
    struct strbuf kctl = {fi.ctlbuf.len, fi.ctlbuf.len, ctl};
    int r = ust_sd_putpmsg(sd, &kctl, &fi.databuf, 0, fi.flags ? MSG_HIPRI : MSG_BAND);
    free(ctl);
    return r;
}

/* I_PUTMSG / I_PUTPMSG (struct strpmsg; I_PUTMSG takes flags 0/RS_HIPRI and
 * ignores band). */
static int ioc_putpmsg(struct stdata *sd, void *arg, int pmsg)
{
    struct strpmsg sp;
    if (ust_copyin(arg, &sp, sizeof(sp)) != 0)
        return -EFAULT;
    int flags = (int)sp.flags, band = sp.band;
    if (!pmsg) {
        if (sp.flags != 0 && sp.flags != RS_HIPRI)
            return -EINVAL;
        flags = sp.flags ? MSG_HIPRI : MSG_BAND;
        band = 0;
    } else if (sp.flags != MSG_HIPRI && sp.flags != MSG_BAND) {
        return -EINVAL;
    }
    return ust_sd_putpmsg(sd, &sp.ctlbuf, &sp.databuf, band, flags);
}

/* I_GETMSG / I_GETPMSG (struct strpmsg; I_GETMSG takes and returns flags
 * 0/RS_HIPRI).  Returns getmsg's value (0, MORECTL|MOREDATA) or -errno. */
static int ioc_getpmsg(struct stdata *sd, void *arg, int pmsg)
{
    struct strpmsg sp;
    if (ust_copyin_rw(arg, &sp, sizeof(sp)) != 0) /* an output too: the answer must not be lost */
        return -EFAULT;
    int flags = (int)sp.flags, band = sp.band;
    if (!pmsg) {
        if (sp.flags != 0 && sp.flags != RS_HIPRI)
            return -EINVAL;
        flags = sp.flags ? MSG_HIPRI : MSG_ANY;
        band = 0;
    }
    int r = ust_sd_getpmsg(sd, &sp.ctlbuf, &sp.databuf, &band, &flags);
    if (r < 0)
        return r;
    sp.band = band;
    sp.flags = pmsg ? flags : (flags == MSG_HIPRI ? RS_HIPRI : 0);
    return ust_copyout(&sp, arg, sizeof(sp)) ? -EFAULT : r;
}

/* ------------------------------------------------------------------------ */
/* The dispatcher                                                           */
/* ------------------------------------------------------------------------ */

/*
 * ioc_args -- step 2 of the error order (sd_state.c): the argument checks
 *   that need nothing but the argument, made before the stream's state is
 *   looked at.  Input structures are copied in here to be checked (and again
 *   by the request itself); output pointers are written when the request is
 *   done, as a kernel's copyout is, so their EFAULT comes at the end.
 *   Returns 0, EINVAL, EFAULT or ERANGE.
 */
static int ioc_args(unsigned long cmd, void *arg)
{
    int v = iarg_of(arg);
    char name[FMNAMESZ + 1];

    switch (cmd) {
    case I_PUSH: /* whether it names a module is known when it is loaded */
    case I_FIND:
        return get_name(arg, name);
    case I_LIST: {
        struct str_list sl;
        if (!arg)
            return 0;
        if (ust_copyin(arg, &sl, sizeof(sl)) != 0)
            return EFAULT;
        return sl.sl_nmods < 1 ? EINVAL : 0;
    }
    case I_FLUSH:
        return (v & ~FLUSHRW) || !(v & FLUSHRW) ? EINVAL : 0;
    case I_FLUSHBAND: {
        struct bandinfo bi;
        if (ust_copyin(arg, &bi, sizeof(bi)) != 0)
            return EFAULT;
        return (bi.bi_flag & ~FLUSHRW) || !(bi.bi_flag & FLUSHRW) ? EINVAL : 0;
    }
    case I_SETSIG:
        return (v & ~S_ALL) || ((v & S_BANDURG) && !(v & S_RDBAND)) ? EINVAL : 0;
    case I_PEEK: {
        struct strpeek pk;
        if (ust_copyin(arg, &pk, sizeof(pk)) != 0)
            return EFAULT;
        return pk.flags != 0 && pk.flags != RS_HIPRI ? EINVAL : 0;
    }
    case I_SRDOPT:
        return srdopt_bad(v) ? EINVAL : 0;
    case I_SWROPT:
        return v & ~(SNDZERO | SNDPIPE | SNDHOLD) ? EINVAL : 0;
    case I_SERROPT:
        return serropt_bad(v) ? EINVAL : 0;
    case I_SETCLTIME: {
        int ms;
        if (ust_copyin(arg, &ms, sizeof(ms)) != 0)
            return EFAULT;
        return ms < 0 ? EINVAL : 0;
    }
    case I_ATMARK:
        return v != ANYMARK && v != LASTMARK ? EINVAL : 0;
    case I_CKBAND:
    case I_CANPUT:
        return v < 0 || v > UST_MAXBAND ? EINVAL : 0;
    case I_STR: {
        struct strioctl ic;
        if (ust_copyin(arg, &ic, sizeof(ic)) != 0)
            return EFAULT;
        return ic.ic_len < 0 || ic.ic_len > UST_STRMSGSZ || ic.ic_timout < -1 ? EINVAL : 0;
    }
    case I_FDINSERT: {
        struct strfdinsert fi;
        if (ust_copyin(arg, &fi, sizeof(fi)) != 0)
            return EFAULT;
        if ((fi.flags != 0 && fi.flags != RS_HIPRI) || fi.offset < 0 ||
            (size_t)fi.offset % sizeof(queue_t *) != 0 || fi.ctlbuf.len < 0 ||
            (size_t)fi.ctlbuf.len < (size_t)fi.offset + sizeof(queue_t *))
            return EINVAL;
        return fi.ctlbuf.len > UST_STRCTLSZ ? ERANGE : 0;
    }
    case I_PIPE:
    case I_FIFO:
    case I_GETTP:
    case I_STATS:
    case I_BIGPIPE:
    case I_AUTOPUSH:
    case I_HEAP:
        return EINVAL;
    default:
        return 0;
    }
}

/*
 * ust_sd_ioctl -- perform ioctl `cmd` on the stream.
 *   Context: a system call (sd_calls counted); may block (I_STR, transparent
 *   ioctls, I_PUSH/I_POP, the message ioctls).  No lock held.
 *   Returns the request's non-negative value, or -errno as streamio(7) lists
 *   for each request, in the order of sd_state.c: the arguments (ioc_args),
 *   then the stream's state by the request's rule (ust_sd_ioc_rule,
 *   ust_sd_state_error, which clears a non-persistent error it reports),
 *   then the request's own errors.
 */
int ust_sd_ioctl(struct stdata *sd, unsigned long cmd, void *arg)
{
    int v = iarg_of(arg), err, r;
    char name[FMNAMESZ + 1];
    cred_t cr;

    ust_sd_flush_hold(sd);
    if ((err = ioc_args(cmd, arg)) != 0)
        return -err; /* bad arguments come before the stream's state */
    if ((r = ust_sd_plex_ioctl(sd, cmd)) != 0)
        return r; /* linked under a multiplexer (sd_link.c) */
    ust_lock(&sd->sd_lock);
    err = ust_sd_state_error(sd, ust_sd_ioc_rule(cmd, NULL), 1); /* sd_state.c */
    ust_unlock(&sd->sd_lock);
    if (err != 0)
        return -err;
    switch (cmd) {
    case I_PUSH:
        if ((err = get_name(arg, name)) != 0)
            return -err;
        ust_sd_cred(&cr);
        return -ust_sd_push(sd, name, &cr);
    case I_POP:
        ust_sd_cred(&cr);
        return -ust_sd_pop(sd, &cr);
    case I_LOOK:
        return ioc_look(sd, arg);
    case I_FIND:
        return ioc_find(sd, arg);
    case I_LIST:
        return ioc_list(sd, arg);
    case I_ANCHOR:
        ust_lock(&sd->sd_plumb);
        r = sd->sd_pushcnt > 0 ? 0 : -EINVAL;
        if (r == 0)
            sd->sd_anchor = sd->sd_pushcnt;
        ust_unlock(&sd->sd_plumb);
        return r;
    case I_FLUSH:
        return ioc_flush(sd, v, 0, 0);
    case I_FLUSHBAND: {
        struct bandinfo bi;
        if (ust_copyin(arg, &bi, sizeof(bi)) != 0)
            return -EFAULT;
        return ioc_flush(sd, bi.bi_flag, 1, bi.bi_pri);
    }
    case I_SETSIG:
        return -ust_sd_setsig(sd, v);
    case I_GETSIG:
        if ((err = ust_sd_getsig(sd, &r)) != 0)
            return -err;
        return put_int(arg, r) ? -EFAULT : 0;
    case I_PEEK: {
        struct strpeek pk;
        if (ust_copyin(arg, &pk, sizeof(pk)) != 0)
            return -EFAULT;
        r = ust_sd_peek_msg(sd, &pk);
        if (r == 1 && ust_copyout(&pk, arg, sizeof(pk)) != 0)
            return -EFAULT;
        return r;
    }
    case I_NREAD: {
        int bytes = 0;
        r = ust_sd_nread(sd, &bytes);
        return put_int(arg, bytes) ? -EFAULT : r;
    }
    case FIONREAD: { /* ioctl(2)'s readable bytes: every message's data */
        size_t bytes = ust_sd_fionread(sd);
        return put_int(arg, bytes > INT_MAX ? INT_MAX : (int)bytes) ? -EFAULT : 0;
    }
    case I_SRDOPT:
        return ioc_srdopt(sd, v);
    case I_GRDOPT:
        return ioc_get(sd, &sd->sd_rdopt, arg);
    case I_SWROPT:
        return ioc_swropt(sd, v);
    case I_GWROPT:
        return ioc_get(sd, &sd->sd_wropt, arg);
    case I_SERROPT:
        return ioc_serropt(sd, v);
    case I_GERROPT:
        return ioc_get(sd, &sd->sd_erropt, arg);
    case I_SETCLTIME: {
        int ms;
        if (ust_copyin(arg, &ms, sizeof(ms)) != 0)
            return -EFAULT;
        if (ms < 0)
            return -EINVAL;
        ust_lock(&sd->sd_lock);
        sd->sd_closetime = ms;
        ust_unlock(&sd->sd_lock);
        return 0;
    }
    case I_GETCLTIME:
        ust_lock(&sd->sd_lock);
        r = (int)sd->sd_closetime;
        ust_unlock(&sd->sd_lock);
        return put_int(arg, r) ? -EFAULT : 0;
    case I_ATMARK:
        if (v != ANYMARK && v != LASTMARK)
            return -EINVAL;
        return ioc_rq_look(sd, 0, v);
    case I_CKBAND:
        if (v < 0 || v > UST_MAXBAND)
            return -EINVAL;
        return ioc_rq_look(sd, 1, v);
    case I_GETBAND:
        r = ioc_rq_look(sd, 2, 0);
        if (r < 0)
            return -ENODATA;
        return put_int(arg, r) ? -EFAULT : 0;
    case I_CANPUT: {
        if (v < 0 || v > UST_MAXBAND)
            return -EINVAL;
        queue_t *wq = sd->sd_wq;
        atomic_fetch_add(&ust_qpv(wq)->active, 1);
        r = bcanputnext(wq, (unsigned char)v);
        ust_qrelease(wq);
        return r;
    }
    case I_STR:
        return ust_sd_i_str(sd, arg);
    case I_FDINSERT:
        return ioc_fdinsert(sd, arg);
    case I_SENDFD:
        return -ust_sd_sendfd(sd, v);
    case I_RECVFD:
    case I_E_RECVFD: {
        struct strrecvfd rf;
        memset(&rf, 0, sizeof(rf));
        if (probe_out(arg, sizeof(rf)) != 0) /* the file must not be lost */
            return -EFAULT;
        if ((err = ust_sd_recvfd(sd, &rf)) != 0)
            return -err;
        if (ust_copyout(&rf, arg, sizeof(rf)) != 0) {
            strm_close(rf.fd);
            return -EFAULT;
        }
        return 0;
    }
    case I_ISASTREAM:
        ust_lock(&sd->sd_lock);
        r = (sd->sd_flag & STRFIFO) ? I_FIFO : (sd->sd_flag & STRPIPE) ? I_PIPE : I_STR;
        ust_unlock(&sd->sd_lock);
        return r;
    case I_PUTMSG:
        return ioc_putpmsg(sd, arg, 0);
    case I_PUTPMSG:
        return ioc_putpmsg(sd, arg, 1);
    case I_GETMSG:
        return ioc_getpmsg(sd, arg, 0);
    case I_GETPMSG:
        return ioc_getpmsg(sd, arg, 1);
    case I_LINK: /* multiplexing: sd_link.c */
    case I_PLINK:
        return ust_sd_link(sd, v, cmd == I_PLINK);
    case I_UNLINK:
    case I_PUNLINK:
        return ust_sd_unlink(sd, v, cmd == I_PUNLINK);
    /* I_PIPE, I_FIFO, I_GETTP, I_STATS, I_BIGPIPE, I_AUTOPUSH, I_HEAP: EINVAL
     * already (ioc_args). */
    default:
        return ust_sd_ioc_transparent(sd, cmd, arg);
    }
}

/*
 * strm_ioctl -- ioctl(2) for streams: one optional argument, a pointer or
 * an int as each request defines.  Returns the request's value, or -1 with
 * errno (EBADF not open, ENOSTR not a stream, or the request's error).
 */
static int strm_ioctl_call(int fd, unsigned long request, void *arg)
{
    int err;
    int acc;
    ust_sd_ioc_rule(request, &acc); /* the message ioctls need the descriptor's mode */
    struct stdata *sd = ust_sd_recheck(fd, ust_sd_get_acc(fd, acc, &err), &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    int r = ust_sd_ioctl(sd, request, arg);
    ust_sd_put(sd);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}

int strm_ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    ust_call_begin();
    int r = strm_ioctl_call(fd, request, arg);
    ust_call_end();
    return r;
}

int ust_sd_top_is(struct stdata *sd, const char *name)
{
    struct str_mlist top;
    ust_lock(&sd->sd_plumb);
    int n = sd->sd_pushcnt > 0 ? ioc_names(sd, &top, 1) : 0;
    ust_unlock(&sd->sd_plumb);
    return n > 0 && strcmp(top.l_name, name) == 0;
}
