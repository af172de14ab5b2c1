/* SPDX-License-Identifier: MIT */
/*
 * xti_data.c -- data transfer (XNS Issue 5): t_snd, t_rcv, t_sndv, t_rcvv,
 * t_sndudata, t_rcvudata, t_sndvudata, t_rcvvudata, t_rcvuderr.
 *
 * Connection-mode data goes down as T_DATA_REQ (band 0) and T_EXDATA_REQ
 * (band 1, or band 0 with EXPINLINE), cut at TIDU boundaries with
 * MORE_flag set on every piece but the last of a TSDU.  It comes up as
 * T_DATA_IND / T_EXDATA_IND / T_OPTDATA_IND read straight into the user's
 * buffer; when the buffer is smaller than the data, getmsg leaves the rest
 * at the stream head as a message without control part, and e_more_norm /
 * e_more_exp remember the MORE_flag of the primitive it came from so that
 * the last piece reports T_MORE exactly as the sender set it.  Any other
 * primitive met on the way (T_DISCON_IND, T_ORDREL_IND, T_UDERROR_IND) is
 * parked in the look buffer and the call fails with TLOOK.
 *
 * Bad pointers (xti_ucopy.c).  Data buffers go straight to putpmsg /
 * getpmsg, whose own protected copies fail with EFAULT before anything is
 * sent or consumed: the hot path pays no extra system call.  The int *flags
 * of t_rcv / t_rcvudata is handed to getpmsg as its band argument, which the
 * head checks readable and writable (and fills) in the same call, and is
 * then read and set by plain accesses: only the caller's own thread
 * unmapping it at that very moment could still fault.  The structs
 * (t_unitdata, t_uderr), the iovec arrays and the addresses and options
 * they point to are copied in before anything is sent or read; outputs go
 * back in one batch after.  When that faults, the datagram (t_rcvudata,
 * t_rcvvudata), the data (t_rcvv with more than one iovec) or the error
 * indication (t_rcvuderr) has been consumed and the call reports EFAULT, as
 * recvmsg(2) of a datagram socket does.  A t_snd of more than one TIDU whose
 * buffer faults part-way returns the bytes sent before the bad page.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xti_impl.h"

/* Park a non-data primitive read into the user's buffer; TLOOK. */
static int xti_park(struct xti_ep *ep, const struct strbuf *ctl, const struct strbuf *data, int rc)
{
    char *buf = NULL;
    size_t dlen = data->len > 0 ? (size_t)data->len : 0;
    int r;

    if (dlen) {
        buf = malloc(dlen);
        if (!buf)
            return xti_syserr(ENOMEM);
        if (xti_uread(buf, data->buf, dlen) < 0) { /* the caller's buffer */
            free(buf);
            return -1;
        }
    }
    while (rc & MOREDATA) { /* the rest of the primitive's data */
        char tmp[1024];
        struct strbuf d = {.maxlen = (int)sizeof(tmp), .buf = tmp};
        int fl = MSG_ANY, band = 0;
        rc = xti_sys_getpmsg(ep->e_fd, NULL, &d, &band, &fl);
        if (rc < 0) {
            free(buf);
            return xti_syserr(errno);
        }
        if (d.len > 0) {
            char *nb = realloc(buf, dlen + (size_t)d.len);
            if (!nb) {
                free(buf);
                return xti_syserr(ENOMEM);
            }
            memcpy(nb + dlen, tmp, (size_t)d.len);
            buf = nb;
            dlen += (size_t)d.len;
        }
    }
    r = xti_look_push(ep, ctl->buf, (size_t)ctl->len, buf, dlen);
    free(buf);
    return r < 0 ? -1 : xti_err(TLOOK);
}

/* ------------------------------------------------------------------ send */

int xti_snd_pieces(struct xti_ep *ep, const char *buf, size_t nbytes, int more, int exp,
                   size_t *sentp)
{
    int band = (exp && !(ep->e_provflag & EXPINLINE)) ? 1 : 0;
    size_t sent = 0;

    *sentp = 0;
    do {
        size_t n = nbytes - sent > XTI_TIDU ? XTI_TIDU : nbytes - sent;
        int m = (sent + n < nbytes) || more;
        struct T_data_req dr = {.PRIM_type = exp ? T_EXDATA_REQ : T_DATA_REQ, .MORE_flag = m};
        struct strbuf c = {.len = (int)sizeof(dr), .buf = (char *)&dr};
        struct strbuf d = {.len = (int)n, .buf = (char *)(uintptr_t)(buf + sent)};
        int prc, perr;

        pthread_mutex_unlock(&ep->e_lock); /* may block on flow control */
        prc = xti_sys_putpmsg(ep->e_fd, &c, &d, band, MSG_BAND);
        perr = errno;
        if (xti_io_relock(ep) < 0)
            return -1;
        errno = perr;
        if (prc < 0) {
            if (errno == EAGAIN) {
                if (exp)
                    ep->e_eflow = 1;
                else
                    ep->e_flow = 1;
                return xti_err(TFLOW);
            }
            int e = errno;
            if (!sent && xti_look_event(ep) == T_DISCONNECT)
                return xti_err(TLOOK);
            return xti_syserr(e);
        }
        sent += n;
        *sentp = sent;
    } while (sent < nbytes);
    return 0;
}

static int xti_snd(struct xti_ep *ep, const char *buf, size_t nbytes, int flags)
{
    int exp = flags & T_EXPEDITED;
    t_scalar_t lim = exp ? ep->e_info.etsdu : ep->e_info.tsdu;
    size_t sent = 0;

    if (ep->e_info.servtype == T_CLTS)
        return xti_err(TNOTSUPPORT);
    if (flags & ~(T_MORE | T_EXPEDITED | T_PUSH))
        return xti_err(TBADFLAG);
    if (ep->e_state != T_DATAXFER && ep->e_state != T_INREL)
        return xti_err(TOUTSTATE);
    if (lim == T_INVALID)
        return xti_err(exp ? TBADFLAG : TNOTSUPPORT);
    if ((nbytes == 0 && !(flags & T_MORE) && !(ep->e_info.flags & T_SENDZERO)) ||
        (lim > 0 && nbytes > (size_t)lim))
        return xti_err(TBADDATA);
    if (ep->e_look && ep->e_look->l_event == T_DISCONNECT)
        return xti_err(TLOOK);
    if (xti_more_check(ep) < 0)
        return -1;
    if (!exp && XTI_MORE_USED(ep))
        return xti_more_snd(ep, buf, nbytes, flags);
    /* Expedited data never overtakes normal data held in the library. */
    if (ep->e_mlen && xti_more_flush(ep) < 0)
        return -1;
    if (xti_snd_pieces(ep, buf, nbytes, flags & T_MORE, exp, &sent) < 0 && !sent)
        return -1;
    return (int)sent;
}

int t_snd(int fd, void *buf, unsigned int nbytes, int flags)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_WR);
    int rc;

    if (!ep)
        return -1;
    rc = xti_snd(ep, buf, nbytes, flags);
    xti_ep_put_io(ep, XTI_WR);
    return rc;
}

/*
 * Copy the caller's iovec array uiov in to iov (T_IOV_MAX elements), and
 * the caller's struct t_unitdata uud (when not NULL) to ud, in one batch.
 * 0, -1 with TBADDATA (no array, a bad count) or TSYSERR/EFAULT.
 */
static int xti_iovin(struct t_iovec *iov, const struct t_iovec *uiov, unsigned int iovcount,
                     struct t_unitdata *ud, const struct t_unitdata *uud)
{
    struct xti_uvec v;

    if (!uiov || iovcount == 0 || iovcount > T_IOV_MAX)
        return xti_err(TBADDATA);
    xti_uv_init(&v);
    xti_uv_add(&v, iov, uiov, iovcount * sizeof(*iov));
    if (uud)
        xti_uv_add(&v, ud, uud, sizeof(*ud));
    return xti_uv_read(&v);
}

/* Total length of an iovec array (copied in), or -1 (TBADDATA) when it cannot be used. */
static long xti_iovlen(const struct t_iovec *iov, unsigned int iovcount)
{
    size_t total = 0;

    for (unsigned i = 0; i < iovcount; i++) {
        total += iov[i].iov_len;
        if (total > 0x7fffffff)
            return xti_err(TBADDATA);
    }
    return (long)total;
}

/* The caller's buffers of iov (copied in) gathered into a new buffer: one
 * protected batch.  NULL with t_errno set (ENOMEM, EFAULT). */
static char *xti_gather(const struct t_iovec *iov, unsigned int iovcount, size_t total)
{
    char *b = malloc(total ? total : 1);
    struct xti_uvec v;
    size_t at = 0;

    if (!b) {
        xti_syserr(ENOMEM);
        return NULL;
    }
    xti_uv_init(&v);
    for (unsigned i = 0; i < iovcount; i++) {
        xti_uv_add(&v, b + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    if (xti_uv_read(&v) < 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* n bytes of b to the caller's buffers of iov (copied in): one protected batch. */
static int xti_scatter(const struct t_iovec *iov, unsigned int iovcount, char *b, size_t n)
{
    struct xti_uvec v;

    xti_uv_init(&v);
    for (unsigned i = 0; i < iovcount && n; i++) {
        size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;
        xti_uv_add(&v, b, iov[i].iov_base, k);
        b += k;
        n -= k;
    }
    return xti_uv_write(&v);
}

int t_sndv(int fd, const struct t_iovec *uiov, unsigned int iovcount, int flags)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_WR);
    struct t_iovec iov[T_IOV_MAX];
    long total = -1;
    char *b;
    int rc = -1;

    if (!ep)
        return -1;
    if (xti_iovin(iov, uiov, iovcount, NULL, NULL) == 0)
        total = xti_iovlen(iov, iovcount);
    if (total >= 0 && (b = xti_gather(iov, iovcount, (size_t)total))) {
        rc = xti_snd(ep, b, (size_t)total, flags);
        free(b);
    }
    xti_ep_put_io(ep, XTI_WR);
    return rc;
}

/* ------------------------------------------------------------------ receive */

static int xti_rcv(struct xti_ep *ep, char *buf, size_t nbytes, int *flags)
{
    struct strbuf ctl, data;
    int band = 0, fl, rc, out = 0, more;
    /* The caller's flags word doubles as getpmsg's band: the head checks it. */
    int *bandp = flags ? flags : &band;
    union T_primitives *p;

    /* A reader may be waiting for the answer to what is held: send it. */
    xti_more_try(ep);
    if (ep->e_info.servtype == T_CLTS)
        return xti_err(TNOTSUPPORT);
    if (ep->e_state != T_DATAXFER && ep->e_state != T_OUTREL)
        return xti_err(TOUTSTATE);
    if (ep->e_look)
        return xti_err(TLOOK);
    for (;;) {
        data.maxlen = (int)(nbytes > 0x7fffffff ? 0x7fffffff : nbytes);
        data.len = 0;
        data.buf = buf;
        ctl.buf = ep->e_rctl;
        ctl.maxlen = (int)ep->e_iosize;
        fl = MSG_ANY;
        pthread_mutex_unlock(&ep->e_lock); /* may block until data arrives */
        rc = xti_getprim(ep, &ctl, &data, bandp, &fl);
        if (xti_io_relock(ep) < 0 || rc < 0)
            return -1;
        band = *bandp; /* checked readable and writable by getpmsg just now */
        more = (rc & MOREDATA) != 0;
        if (ctl.len < (int)sizeof(t_scalar_t)) {
            /* No control part: plain data, or the rest of a primitive's data. */
            if (band > 0) {
                out = T_EXPEDITED | ((more || ep->e_more_exp) ? T_MORE : 0);
                if (!more)
                    ep->e_more_exp = 0;
            } else {
                out = (more || ep->e_more_norm) ? T_MORE : 0;
                if (!more)
                    ep->e_more_norm = 0;
            }
            break;
        }
        p = (union T_primitives *)(void *)ctl.buf;
        if (p->type == T_DATA_IND && ctl.len >= (int)sizeof(struct T_data_ind)) {
            out = (more || p->data_ind.MORE_flag) ? T_MORE : 0;
            ep->e_more_norm = more ? (p->data_ind.MORE_flag != 0) : 0;
            break;
        }
        if (p->type == T_EXDATA_IND && ctl.len >= (int)sizeof(struct T_exdata_ind)) {
            out = T_EXPEDITED | ((more || p->exdata_ind.MORE_flag) ? T_MORE : 0);
            ep->e_more_exp = more ? (p->exdata_ind.MORE_flag != 0) : 0;
            break;
        }
        if (p->type == T_OPTDATA_IND && ctl.len >= (int)sizeof(struct T_optdata_ind)) {
            int m = (p->optdata_ind.DATA_flag & T_ODF_MORE) != 0;
            if (p->optdata_ind.DATA_flag & T_ODF_EX) {
                out = T_EXPEDITED | ((more || m) ? T_MORE : 0);
                ep->e_more_exp = more ? m : 0;
            } else {
                out = (more || m) ? T_MORE : 0;
                ep->e_more_norm = more ? m : 0;
            }
            break;
        }
        if (xti_prim_event(p->type))
            return xti_park(ep, &ctl, &data, rc);
        /* A stray acknowledgement: skip it (and any data it carried). */
    }
    if (flags)
        *flags = out;
    return data.len > 0 ? data.len : 0;
}

int t_rcv(int fd, void *buf, unsigned int nbytes, int *flags)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_RD);
    int rc;

    if (!ep)
        return -1;
    rc = xti_rcv(ep, buf, nbytes, flags);
    xti_ep_put_io(ep, XTI_RD);
    return rc;
}

int t_rcvv(int fd, struct t_iovec *uiov, unsigned int iovcount, int *flags)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_RD);
    struct t_iovec iov[T_IOV_MAX];
    long total = -1;
    char *b;
    int rc = -1;

    if (!ep)
        return -1;
    if (xti_iovin(iov, uiov, iovcount, NULL, NULL) == 0)
        total = xti_iovlen(iov, iovcount);
    if (total >= 0 && iovcount == 1) {
        /* One buffer: straight from the stream head, which checks it. */
        rc = xti_rcv(ep, iov[0].iov_base, (size_t)total, flags);
    } else if (total >= 0 && (b = malloc(total ? (size_t)total : 1)) != NULL) {
        rc = xti_rcv(ep, b, (size_t)total, flags);
        if (rc > 0 && xti_scatter(iov, iovcount, b, (size_t)rc) < 0)
            rc = -1; /* the data is consumed: EFAULT, as recvmsg(2) */
        free(b);
    } else if (total >= 0) {
        xti_syserr(ENOMEM);
    }
    xti_ep_put_io(ep, XTI_RD);
    return rc;
}

/* ------------------------------------------------------------------ unit data */

static int xti_sndudata(struct xti_ep *ep, const struct t_unitdata *ud, const char *buf,
                        size_t len)
{
    struct T_unitdata_req *ur;
    size_t alen, olen, ooff, need;

    if (ep->e_info.servtype != T_CLTS)
        return xti_err(TNOTSUPPORT);
    if (ep->e_state != T_IDLE)
        return xti_err(TOUTSTATE);
    if (!ud)
        return xti_err(TBADADDR);
    alen = ud->addr.len;
    olen = ud->opt.len;
    if ((alen && !ud->addr.buf) || alen == 0 ||
        (ep->e_info.addr >= 0 && alen > (size_t)ep->e_info.addr))
        return xti_err(TBADADDR);
    if ((olen && !ud->opt.buf) || (olen && ep->e_info.options == T_INVALID) ||
        (ep->e_info.options >= 0 && olen > (size_t)ep->e_info.options))
        return xti_err(TBADOPT);
    if ((len == 0 && !(ep->e_info.flags & T_SENDZERO)) ||
        (ep->e_info.tsdu > 0 && len > (size_t)ep->e_info.tsdu) || ep->e_info.tsdu == T_INVALID)
        return xti_err(TBADDATA);
    ooff = _T_ALIGN(sizeof(*ur) + alen);
    need = ooff + olen;
    if (need > ep->e_wctlsize) {
        char *c = realloc(ep->e_wctl, need);
        if (!c)
            return xti_syserr(ENOMEM);
        ep->e_wctl = c;
        ep->e_wctlsize = need;
    }
    ur = (struct T_unitdata_req *)(void *)ep->e_wctl;
    ur->PRIM_type = T_UNITDATA_REQ;
    ur->DEST_length = (t_scalar_t)alen;
    ur->DEST_offset = (t_scalar_t)sizeof(*ur);
    ur->OPT_length = (t_scalar_t)olen;
    ur->OPT_offset = olen ? (t_scalar_t)ooff : 0;
    struct xti_uvec v;
    xti_uv_init(&v);
    xti_uv_add(&v, ep->e_wctl + sizeof(*ur), ud->addr.buf, alen);
    xti_uv_add(&v, ep->e_wctl + ooff, olen ? ud->opt.buf : NULL, olen);
    if (xti_uv_read(&v) < 0)
        return -1;
    struct strbuf c = {.len = (int)need, .buf = ep->e_wctl};
    struct strbuf d = {.len = (int)len, .buf = (char *)(uintptr_t)buf};
    int prc, perr;
    pthread_mutex_unlock(&ep->e_lock); /* may block on flow control */
    prc = xti_sys_putpmsg(ep->e_fd, &c, &d, 0, MSG_BAND);
    perr = errno;
    if (xti_io_relock(ep) < 0)
        return -1;
    errno = perr;
    if (prc < 0) {
        if (errno == EAGAIN) {
            ep->e_flow = 1;
            return xti_err(TFLOW);
        }
        return xti_syserr(errno);
    }
    return 0;
}

int t_sndudata(int fd, const struct t_unitdata *uud)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_WR);
    struct t_unitdata ud;
    int rc = -1;

    if (!ep)
        return -1;
    if (!uud || xti_uread(&ud, uud, sizeof(ud)) == 0)
        rc = xti_sndudata(ep, uud ? &ud : NULL, uud ? ud.udata.buf : NULL,
                          uud ? ud.udata.len : 0);
    xti_ep_put_io(ep, XTI_WR);
    return rc;
}

int t_sndvudata(int fd, struct t_unitdata *uud, struct t_iovec *uiov, unsigned int iovcount)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_WR);
    struct t_iovec iov[T_IOV_MAX];
    struct t_unitdata ud;
    long total = -1;
    char *b;
    int rc = -1;

    if (!ep)
        return -1;
    if (xti_iovin(iov, uiov, iovcount, &ud, uud) == 0)
        total = xti_iovlen(iov, iovcount);
    if (total >= 0 && (b = xti_gather(iov, iovcount, (size_t)total))) {
        rc = xti_sndudata(ep, uud ? &ud : NULL, b, (size_t)total);
        free(b);
    }
    xti_ep_put_io(ep, XTI_WR);
    return rc;
}

/* Discard the rest of a message whose data did not fit. */
static void xti_discard_rest(struct xti_ep *ep, int rc)
{
    while (rc >= 0 && (rc & MOREDATA)) {
        char tmp[1024];
        struct strbuf d = {.maxlen = (int)sizeof(tmp), .buf = tmp};
        int fl = MSG_ANY, band = 0;
        rc = xti_sys_getpmsg(ep->e_fd, NULL, &d, &band, &fl);
    }
}

/*
 * One unit data into buf (len bytes; the caller's, or a library buffer for
 * t_rcvvudata); ud is the library's copy of the caller's uud (both NULL or
 * both not), written back with the address and options in one batch.
 */
static int xti_rcvudata(struct xti_ep *ep, struct t_unitdata *ud, struct t_unitdata *uud,
                        char *buf, size_t len, int *flags)
{
    struct strbuf ctl, data;
    union T_primitives *p;
    struct xti_uvec v;
    int rc, fl, more, band = 0, ovf = 0;
    /* The caller's flags word doubles as getpmsg's band: the head checks it. */
    int *bandp = flags ? flags : &band;

    xti_uv_init(&v);

    if (ep->e_info.servtype != T_CLTS)
        return xti_err(TNOTSUPPORT);
    if (ep->e_state != T_IDLE)
        return xti_err(TOUTSTATE);
    if (ep->e_look)
        return xti_err(TLOOK);
    for (;;) {
        data.maxlen = (int)(len > 0x7fffffff ? 0x7fffffff : len);
        data.len = 0;
        data.buf = buf;
        ctl.buf = ep->e_rctl;
        ctl.maxlen = (int)ep->e_iosize;
        fl = MSG_ANY;
        pthread_mutex_unlock(&ep->e_lock); /* may block until a datagram arrives */
        rc = xti_getprim(ep, &ctl, &data, bandp, &fl);
        if (xti_io_relock(ep) < 0 || rc < 0)
            return -1;
        more = (rc & MOREDATA) != 0;
        xti_uv_init(&v);
        if (ud)
            xti_uv_add(&v, ud, uud, sizeof(*ud));
        if (ctl.len < (int)sizeof(t_scalar_t)) {
            /* The rest of a unit data whose buffer was too small. */
            if (ud) {
                ud->addr.len = 0;
                ud->opt.len = 0;
            }
            if (!more)
                ep->e_more_norm = 0;
            break;
        }
        p = (union T_primitives *)(void *)ctl.buf;
        if (p->type == T_UNITDATA_IND && ctl.len >= (int)sizeof(struct T_unitdata_ind)) {
            const struct T_unitdata_ind *ui = &p->unitdata_ind;
            if (!xti_inside(ui->SRC_offset, ui->SRC_length, (size_t)ctl.len) ||
                !xti_inside(ui->OPT_offset, ui->OPT_length, (size_t)ctl.len)) {
                xti_discard_rest(ep, rc);
                return xti_err(TPROTO);
            }
            if (ud && (xti_copyout(&ud->addr, ctl.buf + ui->SRC_offset,
                                   (size_t)ui->SRC_length, &v) < 0 ||
                       xti_copyout(&ud->opt, ctl.buf + ui->OPT_offset,
                                   (size_t)ui->OPT_length, &v) < 0))
                ovf = 1;
            if (ovf) {
                xti_discard_rest(ep, rc);
                xti_uv_write(&v); /* what fitted, as before */
                return xti_err(TBUFOVFLW);
            }
            ep->e_more_norm = more;
            break;
        }
        if (xti_prim_event(p->type))
            return xti_park(ep, &ctl, &data, rc);
    }
    if (ud)
        ud->udata.len = data.len > 0 ? (unsigned)data.len : 0;
    if (xti_uv_write(&v) < 0)
        return -1; /* the unit data is consumed: EFAULT, as recvmsg(2) */
    if (flags)
        *flags = more ? T_MORE : 0; /* checked by getpmsg just now */
    return data.len > 0 ? data.len : 0;
}

int t_rcvudata(int fd, struct t_unitdata *uud, int *flags)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_RD);
    struct t_unitdata ud;
    int rc = -1;

    if (!ep)
        return -1;
    if (!uud) {
        xti_ep_put_io(ep, XTI_RD);
        return xti_syserr(EINVAL);
    }
    if (xti_uread(&ud, uud, sizeof(ud)) == 0)
        rc = xti_rcvudata(ep, &ud, uud, ud.udata.buf, ud.udata.maxlen, flags);
    xti_ep_put_io(ep, XTI_RD);
    return rc < 0 ? -1 : 0;
}

int t_rcvvudata(int fd, struct t_unitdata *uud, struct t_iovec *uiov, unsigned int iovcount,
                int *flags)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_RD);
    struct t_iovec iov[T_IOV_MAX];
    struct t_unitdata ud;
    long total = -1;
    char *b;
    int rc = -1;

    if (!ep)
        return -1;
    if (xti_iovin(iov, uiov, iovcount, &ud, uud) == 0)
        total = xti_iovlen(iov, iovcount);
    if (total >= 0 && (b = malloc(total ? (size_t)total : 1)) != NULL) {
        rc = xti_rcvudata(ep, uud ? &ud : NULL, uud, b, (size_t)total, flags);
        if (rc > 0 && xti_scatter(iov, iovcount, b, (size_t)rc) < 0)
            rc = -1; /* the unit data is consumed: EFAULT, as recvmsg(2) */
        free(b);
    } else if (total >= 0) {
        xti_syserr(ENOMEM);
    }
    xti_ep_put_io(ep, XTI_RD);
    return rc;
}

int t_rcvuderr(int fd, struct t_uderr *uuderr)
{
    struct xti_ep *ep = xti_ep_get(fd);
    const struct T_uderror_ind *ui;
    struct t_uderr ue, *uderr = uuderr ? &ue : NULL;
    struct xti_uvec v;
    struct xti_msg m;
    int p, rc = -1;

    if (!ep)
        return -1;
    if (uuderr && xti_uread(&ue, uuderr, sizeof(ue)) < 0)
        goto out;
    if (ep->e_info.servtype != T_CLTS) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (ep->e_state != T_IDLE) {
        xti_err(TOUTSTATE);
        goto out;
    }
    p = xti_peek_prim(ep);
    if (p == -1)
        goto out;
    if (p != T_UDERROR_IND) {
        xti_err(TNOUDERR);
        goto out;
    }
    if (xti_next_msg(ep, T_UDERROR_IND, -1, 0, 0, &m) < 0)
        goto out;
    ui = (const struct T_uderror_ind *)(const void *)m.m_ctl;
    if (m.m_clen < sizeof(*ui) || !xti_inside(ui->DEST_offset, ui->DEST_length, m.m_clen) ||
        !xti_inside(ui->OPT_offset, ui->OPT_length, m.m_clen)) {
        xti_err(TPROTO);
    } else if (uderr) {
        uderr->error = ui->ERROR_type;
        xti_uv_init(&v);
        xti_uv_add(&v, uderr, uuderr, sizeof(*uderr));
        int ovf = xti_copyout(&uderr->addr, m.m_ctl + ui->DEST_offset, (size_t)ui->DEST_length,
                              &v) < 0 ||
                  xti_copyout(&uderr->opt, m.m_ctl + ui->OPT_offset, (size_t)ui->OPT_length,
                              &v) < 0;
        if (xti_uv_write(&v) == 0) /* else EFAULT: the indication is consumed */
            rc = ovf ? xti_err(TBUFOVFLW) : 0;
    } else {
        rc = 0;
    }
    free(m.m_own);
out:
    xti_ep_put(ep);
    return rc;
}
