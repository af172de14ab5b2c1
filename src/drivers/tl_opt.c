/* SPDX-License-Identifier: MIT */
/*
 * tl_opt.c -- T_OPTMGMT_REQ for the tl transports: XNS 5 option management
 * of the XTI_GENERIC options.  Values live per endpoint (tl_ep.opt, under
 * tl_lock).
 *
 *   XTI_DEBUG     t_uscalar_t    any value, stored.
 *   XTI_LINGER    struct t_linger l_onoff T_YES/T_NO, l_linger >= 0,
 *                                T_INFINITE or T_UNSPEC (taken as 0); else
 *                                T_FAILURE (tl_linger_check).
 *                                Stored; close does not linger (nothing is
 *                                lost on close anyway: the head drains).
 *   XTI_RCVBUF    t_uscalar_t    the read side's high-water mark: a
 *                                negotiated value goes up as M_SETOPTS
 *                                (SO_HIWAT = value, SO_LOWAT = value / 4).
 *   XTI_RCVLOWAT  t_uscalar_t    stored.
 *   XTI_SNDBUF    t_uscalar_t    the write queue's high-water mark (strqset).
 *   XTI_SNDLOWAT  t_uscalar_t    the write queue's low-water mark (strqset).
 * Buffer sizes are clamped to [128, 1 MiB] and low-water marks to at most
 * the buffer size (T_PARTSUCCESS); a size or mark of 0 is T_FAILURE (XNS 5:
 * legal values are positive; the value returned as given).  None is
 * read-only.  T_CHECK of a header alone is
 * T_SUCCESS without a value; T_NEGOTIATE of a header alone negotiates the
 * default.  Other levels and names: T_NOTSUPPORT, with the value given for
 * T_NEGOTIATE/T_CHECK, the header alone for T_DEFAULT/T_CURRENT.  T_ALLOPT
 * with T_DEFAULT / T_CURRENT (or an empty list) returns every option, with
 * T_NEGOTIATE resets every option to its default (at a level not known:
 * T_NOTSUPPORT); with T_CHECK, at any level, it is TBADOPT (XNS 5 allows
 * it with the other three only).
 * MGMT_flags of the ack is the worst status (T_NOTSUPPORT, T_READONLY,
 * T_FAILURE, T_PARTSUCCESS, T_SUCCESS, worst first).  Errors (T_ERROR_ACK):
 * TBADFLAG (MGMT_flags not one of the four), TBADOPT (the list outside the
 * message, longer than OPT_size, malformed, or a value of the wrong length
 * for T_NEGOTIATE/T_CHECK), TSYSERR/EINVAL (short).  Any state.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <xti.h>

#include "tl.h"

#define TL_BUF_MIN 128
#define TL_BUF_MAX (1024 * 1024)

static const t_uscalar_t tl_optnames[] = {XTI_DEBUG,  XTI_LINGER, XTI_RCVBUF,
                                          XTI_RCVLOWAT, XTI_SNDBUF, XTI_SNDLOWAT};
#define TL_NOPTS (sizeof(tl_optnames) / sizeof(tl_optnames[0]))

void tl_opts_default(struct tl_opts *o)
{
    o->debug = 0;
    o->linger_onoff = T_NO;
    o->linger_time = 0;
    o->rcvbuf = TL_RCVBUF;
    o->rcvlowat = 1;
    o->sndbuf = TL_HIWAT;
    o->sndlowat = TL_LOWAT;
}

t_uscalar_t tl_linger_check(long onoff, long linger)
{
    if (onoff != T_YES && onoff != T_NO)
        return T_FAILURE;
    if (linger == T_UNSPEC || linger == T_INFINITE || (linger >= 0 && linger <= INT_MAX))
        return T_SUCCESS;
    return T_FAILURE;
}

/* Size of the value of option name, 0 if it is not ours. */
static size_t tl_optsize(t_uscalar_t name)
{
    switch (name) {
    case XTI_LINGER:
        return sizeof(struct t_linger);
    case XTI_DEBUG:
    case XTI_RCVBUF:
    case XTI_RCVLOWAT:
    case XTI_SNDBUF:
    case XTI_SNDLOWAT:
        return sizeof(t_uscalar_t);
    default:
        return 0;
    }
}

static t_uscalar_t *tl_optfield(struct tl_opts *o, t_uscalar_t name)
{
    switch (name) {
    case XTI_DEBUG:
        return &o->debug;
    case XTI_RCVBUF:
        return &o->rcvbuf;
    case XTI_RCVLOWAT:
        return &o->rcvlowat;
    case XTI_SNDBUF:
        return &o->sndbuf;
    default:
        return &o->sndlowat;
    }
}

/* The value of name in o into buf. */
static void tl_optget(struct tl_opts *o, t_uscalar_t name, unsigned char *buf)
{
    if (name == XTI_LINGER) {
        struct t_linger l = {.l_onoff = o->linger_onoff, .l_linger = o->linger_time};
        memcpy(buf, &l, sizeof(l));
    } else {
        memcpy(buf, tl_optfield(o, name), sizeof(t_uscalar_t));
    }
}

/* Set name in o from val; the resulting status. */
static t_uscalar_t tl_optset(struct tl_opts *o, t_uscalar_t name, const unsigned char *val)
{
    t_uscalar_t v, lim;

    if (name == XTI_LINGER) {
        struct t_linger l;
        memcpy(&l, val, sizeof(l));
        if (tl_linger_check(l.l_onoff, l.l_linger) != T_SUCCESS)
            return T_FAILURE;
        o->linger_onoff = l.l_onoff;
        o->linger_time = l.l_linger == (t_scalar_t)T_UNSPEC ? 0 : l.l_linger;
        return T_SUCCESS;
    }
    memcpy(&v, val, sizeof(v));
    switch (name) {
    case XTI_DEBUG:
        o->debug = v;
        return T_SUCCESS;
    case XTI_RCVBUF:
    case XTI_SNDBUF:
        if (v == 0)
            return T_FAILURE;
        *tl_optfield(o, name) = v < TL_BUF_MIN ? TL_BUF_MIN : v > TL_BUF_MAX ? TL_BUF_MAX : v;
        return *tl_optfield(o, name) == v ? T_SUCCESS : T_PARTSUCCESS;
    default: /* the low-water marks */
        if (v == 0)
            return T_FAILURE;
        lim = name == XTI_RCVLOWAT ? o->rcvbuf : o->sndbuf;
        *tl_optfield(o, name) = v > lim ? lim : v;
        return *tl_optfield(o, name) == v ? T_SUCCESS : T_PARTSUCCESS;
    }
}

static int tl_rank(t_uscalar_t status)
{
    switch (status) {
    case T_NOTSUPPORT:
        return 5;
    case T_READONLY:
        return 4;
    case T_FAILURE:
        return 3;
    case T_PARTSUCCESS:
        return 2;
    default:
        return 1;
    }
}

void tl_optput(mblk_t *bp, t_uscalar_t level, t_uscalar_t name, t_uscalar_t status,
                      const unsigned char *val, size_t vlen, t_uscalar_t *worst)
{
    struct T_opthdr oh = {.len = (t_uscalar_t)(sizeof(oh) + vlen),
                          .level = level,
                          .name = name,
                          .status = status};
    size_t pad = _TPI_ALIGN_TOPT(oh.len) - oh.len;

    tl_append(bp, &oh, sizeof(oh));
    tl_append(bp, val, vlen);
    memset(bp->b_wptr, 0, pad);
    bp->b_wptr += pad;
    if (tl_rank(status) > tl_rank(*worst))
        *worst = status;
}

/* Every option of o into bp with status T_SUCCESS. */
static void tl_optall(mblk_t *bp, struct tl_opts *o, t_uscalar_t *worst)
{
    unsigned char val[sizeof(struct t_linger)];

    for (size_t i = 0; i < TL_NOPTS; i++) {
        tl_optget(o, tl_optnames[i], val);
        tl_optput(bp, XTI_GENERIC, tl_optnames[i], T_SUCCESS, val, tl_optsize(tl_optnames[i]),
                  worst);
    }
}

/*
 * Walk the request's options (already checked well formed) and write the
 * results into bp.  work holds the values being negotiated.  Returns 0 or
 * TBADOPT.  Under tl_lock.
 */
static int tl_optwalk(const unsigned char *p, size_t len, t_scalar_t flags, struct tl_opts *cur,
                      struct tl_opts *work, mblk_t *bp, t_uscalar_t *worst)
{
    struct tl_opts def, scratch;
    unsigned char val[sizeof(struct t_linger)];
    size_t at = 0;

    tl_opts_default(&def);
    if (len == 0 && (flags == T_DEFAULT || flags == T_CURRENT)) {
        tl_optall(bp, flags == T_DEFAULT ? &def : cur, worst);
        return 0;
    }
    while (at < len) {
        struct T_opthdr oh;
        size_t vlen, want;
        memcpy(&oh, p + at, sizeof(oh));
        vlen = oh.len - sizeof(oh);
        want = oh.level == XTI_GENERIC ? tl_optsize(oh.name) : 0;
        const unsigned char *in = p + at + sizeof(oh);
        int echo = flags == T_NEGOTIATE || flags == T_CHECK;
        if (oh.name == T_ALLOPT && flags == T_CHECK) {
            return TBADOPT; /* T_ALLOPT: T_NEGOTIATE, T_DEFAULT, T_CURRENT only */
        } else if (oh.level == XTI_GENERIC && oh.name == T_ALLOPT) {
            if (flags == T_NEGOTIATE)
                *work = def;
            tl_optall(bp, flags == T_DEFAULT ? &def : flags == T_CURRENT ? cur : work, worst);
        } else if (want == 0) {
            /* unknown level or name: T_NEGOTIATE/T_CHECK echo the value given */
            tl_optput(bp, oh.level, oh.name, T_NOTSUPPORT, echo ? in : NULL, echo ? vlen : 0,
                      worst);
        } else if (flags == T_DEFAULT || flags == T_CURRENT) {
            tl_optget(flags == T_DEFAULT ? &def : cur, oh.name, val);
            tl_optput(bp, oh.level, oh.name, T_SUCCESS, val, want, worst);
        } else if (vlen == 0 && flags == T_CHECK) {
            /* a header alone: is the option supported (no value returned) */
            tl_optput(bp, oh.level, oh.name, T_SUCCESS, NULL, 0, worst);
        } else if (vlen == 0) {
            /* T_NEGOTIATE of a header alone: the default value */
            tl_optget(&def, oh.name, val);
            tl_optset(work, oh.name, val);
            tl_optget(work, oh.name, val);
            tl_optput(bp, oh.level, oh.name, T_SUCCESS, val, want, worst);
        } else {
            struct tl_opts *o = work;
            t_uscalar_t st;
            if (vlen != want)
                return TBADOPT;
            if (flags == T_CHECK) {
                scratch = *work;
                o = &scratch;
            }
            st = tl_optset(o, oh.name, in);
            if (st == T_FAILURE || st == T_SUCCESS) /* the value as requested (XNS 5) */
                memcpy(val, in, want);
            else
                tl_optget(o, oh.name, val);
            tl_optput(bp, oh.level, oh.name, st, val, want, worst);
        }
        at += _TPI_ALIGN_TOPT(oh.len);
    }
    return 0;
}

/* Send the negotiated water marks where they belong (no lock held). */
static void tl_optapply(queue_t *q, const struct tl_opts *old, const struct tl_opts *o)
{
    if (o->sndbuf != old->sndbuf || o->sndlowat != old->sndlowat) {
        strqset(q, QLOWAT, 0, 0);
        strqset(q, QHIWAT, 0, (intptr_t)o->sndbuf);
        strqset(q, QLOWAT, 0, (intptr_t)(o->sndlowat < o->sndbuf ? o->sndlowat : o->sndbuf));
    }
    if (o->rcvbuf != old->rcvbuf) {
        mblk_t *bp = allocb(sizeof(struct stroptions), BPRI_MED);
        if (bp != NULL) {
            struct stroptions *so = (struct stroptions *)(void *)bp->b_rptr;
            memset(so, 0, sizeof(*so));
            bp->b_datap->db_type = M_SETOPTS;
            so->so_flags = SO_HIWAT | SO_LOWAT;
            so->so_hiwat = o->rcvbuf;
            so->so_lowat = o->rcvbuf / 4;
            bp->b_wptr += sizeof(*so);
            putnext(RD(q), bp);
        }
    }
}

int tl_optmgmt_check(queue_t *q, mblk_t *mp, t_scalar_t opt_max, struct T_optmgmt_req *rp)
{
    struct T_optmgmt_req r;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(r)) {
        tl_error_ack(q, mp, T_OPTMGMT_REQ, TSYSERR, EINVAL);
        return -1;
    }
    memcpy(&r, mp->b_rptr, sizeof(r));
    if (r.MGMT_flags != T_NEGOTIATE && r.MGMT_flags != T_CHECK && r.MGMT_flags != T_DEFAULT &&
        r.MGMT_flags != T_CURRENT) {
        tl_error_ack(q, mp, T_OPTMGMT_REQ, TBADFLAG, 0);
        return -1;
    }
    if (!tl_range_ok(mp, r.OPT_offset, r.OPT_length) || r.OPT_length > opt_max ||
        !tl_opts_ok(mp->b_rptr + r.OPT_offset, (size_t)r.OPT_length)) {
        tl_error_ack(q, mp, T_OPTMGMT_REQ, TBADOPT, 0);
        return -1;
    }
    *rp = r;
    return 0;
}

void tl_optmgmt_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    struct T_optmgmt_req r;
    struct T_optmgmt_ack *oa;
    struct tl_opts old, work;
    t_uscalar_t worst = T_SUCCESS;
    size_t room;
    mblk_t *bp;
    int err = 0;

    if (tl_optmgmt_check(q, mp, TL_OPT_MAX, &r) != 0)
        return;
    /* Each request option yields at most every option (T_ALLOPT). */
    room = ((size_t)r.OPT_length / sizeof(struct T_opthdr) + 1) * TL_NOPTS *
           (sizeof(struct T_opthdr) + sizeof(struct t_linger));
    bp = tl_prim(NULL, M_PCPROTO, sizeof(*oa), room);
    if (bp == NULL) {
        tl_error_ack(q, mp, T_OPTMGMT_REQ, TSYSERR, ENOSR);
        return;
    }
    pthread_mutex_lock(&tl_lock);
    old = ep->opt;
    work = ep->opt;
    err = tl_optwalk(mp->b_rptr + r.OPT_offset, (size_t)r.OPT_length, r.MGMT_flags, &ep->opt,
                     &work, bp, &worst);
    if (err == 0 && r.MGMT_flags == T_NEGOTIATE)
        ep->opt = work;
    pthread_mutex_unlock(&tl_lock);
    if (err != 0) {
        freemsg(bp);
        tl_error_ack(q, mp, T_OPTMGMT_REQ, err, 0);
        return;
    }
    freemsg(mp);
    oa = (struct T_optmgmt_ack *)(void *)bp->b_rptr;
    oa->PRIM_type = T_OPTMGMT_ACK;
    oa->OPT_length = (t_scalar_t)(bp->b_wptr - bp->b_rptr - (t_scalar_t)sizeof(*oa));
    oa->OPT_offset = oa->OPT_length > 0 ? (t_scalar_t)sizeof(*oa) : 0;
    oa->MGMT_flags = (t_scalar_t)worst;
    if (r.MGMT_flags == T_NEGOTIATE)
        tl_optapply(q, &old, &work);
    qreply(q, bp);
}
