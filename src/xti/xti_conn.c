/* SPDX-License-Identifier: MIT */
/*
 * xti_conn.c -- connection establishment and release (XNS Issue 5):
 * t_connect, t_rcvconnect, t_listen, t_accept, t_snddis, t_rcvdis,
 * t_sndrel, t_rcvrel, t_sndreldata, t_rcvreldata.
 *
 * T_CONN_REQ, T_CONN_RES and T_DISCON_REQ are putmsg'ed and their
 * T_OK_ACK / T_ERROR_ACK read back from the stream head (xti_get_ack);
 * indications are read with xti_next_msg, which parks any other event met
 * first in the look buffer and fails with TLOOK.  The XTI state changes
 * only once the provider has acknowledged.
 *
 * Bad pointers (xti_ucopy.c).  The caller's struct t_call / t_discon is
 * copied in, and the addresses and options it points to copied into the
 * primitive, before anything goes down; user data goes to putpmsg, whose
 * own protected copy fails with EFAULT before sending (t_snddis copies it
 * first, since it flushes the stream before sending).  So a bad input
 * pointer fails with TSYSERR/EFAULT and changes nothing.  An output struct
 * is read before the indication is consumed; its buffers are written after:
 * if that faults, the indication has been consumed and the state moved on
 * (t_listen: T_INCON, one more indication outstanding; t_connect and
 * t_rcvconnect: T_DATAXFER; t_rcvdis: the connection gone) and the call
 * reports EFAULT, as a system call that faults on its way out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xti_impl.h"

/* Where xti_build put the variable parts (offsets 0 for empty parts). */
struct xti_parts {
    t_scalar_t la, oa, lb, ob;
    size_t total;
};

/*
 * Build a primitive of hdr bytes followed by a and b (addresses, options;
 * either NULL) in e_ctl, copied from the caller's buffers in one protected
 * batch.  The caller fills the header after.  0 or -1 (ENOMEM, EFAULT).
 */
static int xti_build(struct xti_ep *ep, size_t hdr, const struct netbuf *a,
                     const struct netbuf *b, struct xti_parts *pt)
{
    size_t la = a ? a->len : 0, lb = b ? b->len : 0;
    size_t oa = hdr, ob = _T_ALIGN(oa + la), need = ob + lb;
    struct xti_uvec v;

    if (need > ep->e_ctlsize) {
        char *c = realloc(ep->e_ctl, need);
        if (!c)
            return xti_syserr(ENOMEM);
        ep->e_ctl = c;
        ep->e_ctlsize = need;
    }
    xti_uv_init(&v);
    xti_uv_add(&v, ep->e_ctl + oa, la ? a->buf : NULL, la);
    xti_uv_add(&v, ep->e_ctl + ob, lb ? b->buf : NULL, lb);
    if (xti_uv_read(&v) < 0)
        return -1;
    pt->la = (t_scalar_t)la;
    pt->oa = la ? (t_scalar_t)oa : 0;
    pt->lb = (t_scalar_t)lb;
    pt->ob = lb ? (t_scalar_t)ob : 0;
    pt->total = b ? need : oa + la;
    return 0;
}

/* Data of a connect or disconnect (limit v of t_info) is acceptable. */
static int xti_udata_ok(const struct netbuf *u, t_scalar_t v)
{
    if (!u || u->len == 0)
        return 1;
    if (v == T_INVALID)
        return 0;
    return v == T_INFINITE || u->len <= (unsigned)v;
}

static int xti_opt_ok(struct xti_ep *ep, const struct netbuf *o)
{
    if (!o || o->len == 0)
        return 1;
    if (!o->buf || ep->e_info.options == T_INVALID)
        return 0;
    return ep->e_info.options == T_INFINITE || o->len <= (unsigned)ep->e_info.options;
}

static int xti_putmsg(struct xti_ep *ep, size_t clen, const struct netbuf *u, int band)
{
    struct strbuf c = {.len = (int)clen, .buf = ep->e_ctl};
    struct strbuf d = {.len = u ? (int)u->len : 0, .buf = u ? u->buf : NULL};
    int rc = xti_sys_putpmsg(ep->e_fd, &c, (u && u->len) ? &d : NULL, band, MSG_BAND);

    if (rc < 0) {
        if (errno == EAGAIN)
            return xti_err(TFLOW);
        return xti_syserr(errno);
    }
    return 0;
}

/*
 * Copy the three parts of a T_CONN_CON / T_CONN_IND into call (the
 * library's copy of the caller's ucall), then call back to ucall, in one
 * protected batch.  What fits is written even when a part overflows.
 */
static int xti_fill_call(struct t_call *call, struct t_call *ucall, const struct xti_msg *m,
                         t_scalar_t aoff, t_scalar_t alen, t_scalar_t ooff, t_scalar_t olen)
{
    struct xti_uvec v;
    int ovf;

    if (!call)
        return 0;
    if (!xti_inside(aoff, alen, m->m_clen) || !xti_inside(ooff, olen, m->m_clen))
        return xti_err(TPROTO);
    xti_uv_init(&v);
    xti_uv_add(&v, call, ucall, sizeof(*call));
    ovf = xti_copyout(&call->addr, m->m_ctl + aoff, (size_t)alen, &v) < 0 ||
          xti_copyout(&call->opt, m->m_ctl + ooff, (size_t)olen, &v) < 0 ||
          xti_copyout(&call->udata, m->m_data, m->m_dlen, &v) < 0;
    if (xti_uv_write(&v) < 0)
        return -1;
    return ovf ? xti_err(TBUFOVFLW) : 0;
}

void xti_discon_state(struct xti_ep *ep, t_scalar_t seq)
{
    (void)seq;
    if (ep->e_state == T_INCON) {
        if (ep->e_ocnt > 0)
            ep->e_ocnt--;
        ep->e_state = ep->e_ocnt ? T_INCON : T_IDLE;
    } else {
        ep->e_state = T_IDLE;
        ep->e_ocnt = 0;
    }
    ep->e_more_norm = ep->e_more_exp = 0;
    ep->e_flow = ep->e_eflow = 0;
    ep->e_cepoch++; /* bytes still held for the connection are stale (xti_more.c) */
}

/* Wait for (or poll for) the T_CONN_CON of an outgoing connection; call is
 * the library's copy of the caller's ucall (both NULL for none). */
static int xti_rcvconnect(struct xti_ep *ep, struct t_call *call, struct t_call *ucall, int block)
{
    struct xti_msg m;
    const struct T_conn_con *cc;
    int rc;

    if (xti_next_msg(ep, T_CONN_CON, -1, block, xti_datacap(ep->e_info.connect), &m) < 0)
        return -1;
    cc = (const struct T_conn_con *)(const void *)m.m_ctl;
    if (m.m_clen < sizeof(*cc)) {
        free(m.m_own);
        return xti_err(TPROTO);
    }
    ep->e_state = T_DATAXFER;
    rc = xti_fill_call(call, ucall, &m, cc->RES_offset, cc->RES_length, cc->OPT_offset,
                       cc->OPT_length);
    free(m.m_own);
    return rc;
}

int t_connect(int fd, const struct t_call *usnd, struct t_call *urcv)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct T_conn_req *cr;
    struct t_call sc, rcv, *sndcall = usnd ? &sc : NULL, *rcvcall = urcv ? &rcv : NULL;
    struct xti_parts pt;
    struct xti_uvec v;
    int rc = -1;

    if (!ep)
        return -1;
    xti_uv_init(&v);
    if (usnd)
        xti_uv_add(&v, &sc, usnd, sizeof(sc));
    if (urcv)
        xti_uv_add(&v, &rcv, urcv, sizeof(rcv));
    if (xti_uv_read(&v) < 0)
        goto out;
    if (ep->e_info.servtype == T_CLTS) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (ep->e_state != T_IDLE) {
        xti_err(TOUTSTATE);
        goto out;
    }
    if (!sndcall || (sndcall->addr.len && !sndcall->addr.buf) ||
        (ep->e_info.addr >= 0 && sndcall->addr.len > (unsigned)ep->e_info.addr)) {
        xti_err(TBADADDR);
        goto out;
    }
    if (!xti_opt_ok(ep, &sndcall->opt)) {
        xti_err(TBADOPT);
        goto out;
    }
    if (!xti_udata_ok(&sndcall->udata, ep->e_info.connect)) {
        xti_err(TBADDATA);
        goto out;
    }
    if (ep->e_look) {
        xti_err(TLOOK);
        goto out;
    }
    if (xti_build(ep, sizeof(*cr), &sndcall->addr, &sndcall->opt, &pt) < 0)
        goto out;
    cr = (struct T_conn_req *)(void *)ep->e_ctl;
    cr->PRIM_type = T_CONN_REQ;
    cr->DEST_length = pt.la;
    cr->DEST_offset = pt.oa;
    cr->OPT_length = pt.lb;
    cr->OPT_offset = pt.ob;
    if (xti_putmsg(ep, pt.total, &sndcall->udata, 0) < 0 || xti_get_ack(ep, T_CONN_REQ) < 0)
        goto out;
    ep->e_state = T_OUTCON;
    if (xti_nonblock(ep)) {
        xti_err(TNODATA);
        goto out;
    }
    rc = xti_rcvconnect(ep, rcvcall, urcv, 1);
out:
    xti_ep_put(ep);
    return rc;
}

int t_rcvconnect(int fd, struct t_call *ucall)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct t_call c, *call = ucall ? &c : NULL;
    int rc = -1;

    if (!ep)
        return -1;
    if (ep->e_info.servtype == T_CLTS)
        xti_err(TNOTSUPPORT);
    else if (ep->e_state != T_OUTCON)
        xti_err(TOUTSTATE);
    else if (!ucall || xti_uread(&c, ucall, sizeof(c)) == 0) /* before anything is consumed */
        rc = xti_rcvconnect(ep, call, ucall, 1);
    xti_ep_put(ep);
    return rc;
}

int t_listen(int fd, struct t_call *ucall)
{
    struct xti_ep *ep = xti_ep_get(fd);
    const struct T_conn_ind *ci;
    struct t_call c, *call = ucall ? &c : NULL;
    struct xti_msg m;
    int rc = -1;

    if (!ep)
        return -1;
    if (ucall && xti_uread(&c, ucall, sizeof(c)) < 0)
        goto out;
    if (ep->e_info.servtype == T_CLTS) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (ep->e_state != T_IDLE && ep->e_state != T_INCON) {
        xti_err(TOUTSTATE);
        goto out;
    }
    if (ep->e_qlen == 0) {
        xti_err(TBADQLEN);
        goto out;
    }
    if ((unsigned)ep->e_ocnt >= ep->e_qlen) {
        xti_err(TQFULL);
        goto out;
    }
    if (xti_next_msg(ep, T_CONN_IND, -1, 1, xti_datacap(ep->e_info.connect), &m) < 0)
        goto out;
    ci = (const struct T_conn_ind *)(const void *)m.m_ctl;
    if (m.m_clen < sizeof(*ci)) {
        free(m.m_own);
        xti_err(TPROTO);
        goto out;
    }
    ep->e_ocnt++;
    ep->e_state = T_INCON;
    if (call)
        call->sequence = ci->SEQ_number;
    rc = xti_fill_call(call, ucall, &m, ci->SRC_offset, ci->SRC_length, ci->OPT_offset,
                       ci->OPT_length);
    free(m.m_own);
out:
    xti_ep_put(ep);
    return rc;
}

/* Lock the entries of fd and resfd, lower descriptor first (xti_impl.h). */
static int xti_get_pair(int fd, int resfd, struct xti_ep **ep, struct xti_ep **rp)
{
    if (fd == resfd) {
        *ep = *rp = xti_ep_get(fd);
        return *ep ? 0 : -1;
    }
    if (fd < resfd) {
        if (!(*ep = xti_ep_get(fd)))
            return -1;
        if (!(*rp = xti_ep_get(resfd))) {
            xti_ep_put(*ep);
            return -1;
        }
    } else {
        if (!(*rp = xti_ep_get(resfd)))
            return -1;
        if (!(*ep = xti_ep_get(fd))) {
            xti_ep_put(*rp);
            return -1;
        }
    }
    return 0;
}

int t_accept(int fd, int resfd, const struct t_call *ucall)
{
    struct xti_ep *ep, *rp;
    struct T_conn_res *cr;
    struct t_call c, *call = ucall ? &c : NULL;
    struct xti_parts pt;
    int ev, rc = -1;

    if (xti_get_pair(fd, resfd, &ep, &rp) < 0)
        return -1;
    if (ucall && xti_uread(&c, ucall, sizeof(c)) < 0)
        goto out;
    if (ep->e_info.servtype == T_CLTS) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    /* Names are unknown ("") for endpoints t_sync adopted: then the service type decides. */
    if (ep != rp && ((ep->e_provider[0] && rp->e_provider[0] &&
                      strcmp(ep->e_provider, rp->e_provider) != 0) ||
                     ep->e_info.servtype != rp->e_info.servtype)) {
        xti_err(TPROVMISMATCH);
        goto out;
    }
    if (ep->e_state != T_INCON ||
        (ep != rp && rp->e_state != T_IDLE && rp->e_state != T_UNBND)) {
        xti_err(TOUTSTATE);
        goto out;
    }
    if (ep != rp && rp->e_state == T_IDLE && rp->e_qlen > 0) {
        xti_err(TRESQLEN);
        goto out;
    }
    if (ep == rp && ep->e_ocnt > 1) {
        xti_err(TINDOUT);
        goto out;
    }
    if (!call) {
        xti_err(TBADSEQ);
        goto out;
    }
    if (!xti_opt_ok(ep, &call->opt)) {
        xti_err(TBADOPT);
        goto out;
    }
    if (!xti_udata_ok(&call->udata, ep->e_info.connect)) {
        xti_err(TBADDATA);
        goto out;
    }
    ev = xti_look_event(ep);
    if (ev < 0)
        goto out;
    if (ev == T_DISCONNECT || (ep == rp && ev == T_LISTEN)) {
        xti_err(ev == T_LISTEN ? TINDOUT : TLOOK);
        goto out;
    }
    if (ep != rp && !rp->e_have_acceptor) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (xti_build(ep, sizeof(*cr), NULL, &call->opt, &pt) < 0)
        goto out;
    cr = (struct T_conn_res *)(void *)ep->e_ctl;
    cr->PRIM_type = T_CONN_RES;
    cr->ACCEPTOR_id = rp->e_acceptor;
    cr->SEQ_number = call->sequence;
    cr->OPT_length = pt.lb;
    cr->OPT_offset = pt.ob;
    if (xti_putmsg(ep, pt.total, &call->udata, 0) < 0 || xti_get_ack(ep, T_CONN_RES) < 0)
        goto out;
    if (ep->e_ocnt > 0)
        ep->e_ocnt--;
    if (ep == rp) {
        ep->e_state = T_DATAXFER;
    } else {
        ep->e_state = ep->e_ocnt ? T_INCON : T_IDLE;
        rp->e_state = T_DATAXFER;
    }
    rc = 0;
out:
    xti_ep_put(ep);
    if (rp != ep)
        xti_ep_put(rp);
    return rc;
}

int t_snddis(int fd, const struct t_call *ucall)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct T_discon_req *dr;
    struct t_call c, *call = ucall ? &c : NULL;
    char *ud = NULL;
    int st, ev, rc = -1;

    if (!ep)
        return -1;
    if (ucall && xti_uread(&c, ucall, sizeof(c)) < 0)
        goto out;
    st = ep->e_state;
    if (ep->e_info.servtype == T_CLTS) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (st != T_OUTCON && st != T_INCON && st != T_DATAXFER && st != T_OUTREL && st != T_INREL) {
        xti_err(TOUTSTATE);
        goto out;
    }
    if (st == T_INCON && !call) {
        xti_err(TBADSEQ);
        goto out;
    }
    if (call && !xti_udata_ok(&call->udata, ep->e_info.discon)) {
        xti_err(TBADDATA);
        goto out;
    }
    if (call && call->udata.len) {
        /* Copied now: the stream is flushed below, before the putmsg. */
        if (!(ud = malloc(call->udata.len))) {
            xti_syserr(ENOMEM);
            goto out;
        }
        if (xti_uread(ud, call->udata.buf, call->udata.len) < 0)
            goto out;
        call->udata.buf = ud;
    }
    ev = xti_look_event(ep);
    if (ev < 0)
        goto out;
    if (ev == T_DISCONNECT && st != T_INCON) {
        xti_err(TLOOK);
        goto out;
    }
    if (st != T_INCON) {
        /* Nothing queued on either side is wanted once the connection goes. */
        strm_ioctl(ep->e_fd, I_FLUSH, FLUSHRW);
        xti_look_flush(ep);
    }
    dr = (struct T_discon_req *)(void *)ep->e_ctl;
    dr->PRIM_type = T_DISCON_REQ;
    dr->SEQ_number = (st == T_INCON) ? call->sequence : -1;
    if (xti_putmsg(ep, sizeof(*dr), call ? &call->udata : NULL, 0) < 0 ||
        xti_get_ack(ep, T_DISCON_REQ) < 0) {
        /* The peer's disconnect crossed ours: the connection is gone all the same. */
        if (st == T_INCON || t_errno != TOUTSTATE)
            goto out;
    }
    xti_discon_state(ep, dr->SEQ_number);
    rc = 0;
out:
    free(ud);
    xti_ep_put(ep);
    return rc;
}

/* t_rcvdis and t_rcvreldata's disconnect: only what is already there. */
static int xti_rcvdis(struct xti_ep *ep, struct t_discon *udiscon)
{
    const struct T_discon_ind *di;
    struct t_discon d, *discon = udiscon ? &d : NULL;
    struct xti_uvec v;
    struct xti_msg m;
    int p, rc = 0;

    if (udiscon && xti_uread(&d, udiscon, sizeof(d)) < 0)
        return -1;

    p = xti_peek_prim(ep);
    if (p == -1)
        return -1;
    if (p != T_DISCON_IND) {
        /* The disconnect may wait in the look buffer behind another event. */
        struct xti_look *l = xti_look_take(ep, T_DISCON_IND);
        if (!l)
            return xti_err(TNODIS);
        m.m_own = l;
        m.m_ctl = l->l_buf;
        m.m_clen = l->l_clen;
        m.m_data = l->l_buf + l->l_clen;
        m.m_dlen = l->l_dlen;
    } else if (xti_next_msg(ep, T_DISCON_IND, -1, 0, xti_datacap(ep->e_info.discon), &m) < 0) {
        return -1;
    }
    di = (const struct T_discon_ind *)(const void *)m.m_ctl;
    if (m.m_clen < sizeof(*di)) {
        free(m.m_own);
        return xti_err(TPROTO);
    }
    xti_discon_state(ep, di->SEQ_number);
    if (ep->e_state == T_IDLE)
        xti_look_flush(ep);
    if (discon) {
        discon->reason = di->DISCON_reason;
        discon->sequence = di->SEQ_number;
        xti_uv_init(&v);
        xti_uv_add(&v, discon, udiscon, sizeof(*discon));
        if (xti_copyout(&discon->udata, m.m_data, m.m_dlen, &v) < 0)
            rc = xti_err(TBUFOVFLW);
        if (xti_uv_write(&v) < 0)
            rc = -1;
    }
    free(m.m_own);
    return rc;
}

int t_rcvdis(int fd, struct t_discon *discon)
{
    struct xti_ep *ep = xti_ep_get(fd);
    int st, rc = -1;

    if (!ep)
        return -1;
    st = ep->e_state;
    if (ep->e_info.servtype == T_CLTS)
        xti_err(TNOTSUPPORT);
    else if (st != T_OUTCON && st != T_INCON && st != T_DATAXFER && st != T_OUTREL &&
             st != T_INREL)
        xti_err(TOUTSTATE);
    else
        rc = xti_rcvdis(ep, discon);
    xti_ep_put(ep);
    return rc;
}

static int xti_sndrel(int fd, struct t_discon *udiscon)
{
    /* The send side's lock too: held T_MORE bytes go before the release. */
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_WR);
    struct T_ordrel_req *or;
    struct t_discon d, *discon = udiscon ? &d : NULL;
    int rc = -1;

    if (!ep)
        return -1;
    if (udiscon && xti_uread(&d, udiscon, sizeof(d)) < 0)
        goto out;
    if (ep->e_info.servtype != T_COTS_ORD) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (ep->e_state != T_DATAXFER && ep->e_state != T_INREL) {
        xti_err(TOUTSTATE);
        goto out;
    }
    if (discon && discon->udata.len && !(ep->e_info.flags & T_ORDRELDATA)) {
        xti_err(TBADDATA);
        goto out;
    }
    if (ep->e_look && ep->e_look->l_event == T_DISCONNECT) {
        xti_err(TLOOK);
        goto out;
    }
    /* Orderly release: every byte sent before is delivered, held ones too. */
    if (xti_more_check(ep) < 0 || xti_more_flush(ep) < 0)
        goto out;
    if (ep->e_state != T_DATAXFER && ep->e_state != T_INREL) {
        xti_err(TOUTSTATE); /* another thread ended it while the flush waited */
        goto out;
    }
    or = (struct T_ordrel_req *)(void *)ep->e_ctl;
    or->PRIM_type = T_ORDREL_REQ;
    if (xti_putmsg(ep, sizeof(*or), NULL, 0) < 0) {
        if (t_errno == TSYSERR && xti_look_event(ep) == T_DISCONNECT)
            xti_err(TLOOK);
        goto out;
    }
    ep->e_state = ep->e_state == T_DATAXFER ? T_OUTREL : T_IDLE;
    rc = 0;
out:
    xti_ep_put_io(ep, XTI_WR);
    return rc;
}

int t_sndrel(int fd)
{
    return xti_sndrel(fd, NULL);
}

int t_sndreldata(int fd, struct t_discon *discon)
{
    return xti_sndrel(fd, discon);
}

static int xti_rcvrel(int fd, struct t_discon *udiscon)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct t_discon d, *discon = udiscon ? &d : NULL;
    struct xti_msg m;
    int p, rc = -1;

    if (!ep)
        return -1;
    if (udiscon && xti_uread(&d, udiscon, sizeof(d)) < 0)
        goto out;
    if (ep->e_info.servtype != T_COTS_ORD) {
        xti_err(TNOTSUPPORT);
        goto out;
    }
    if (ep->e_state != T_DATAXFER && ep->e_state != T_OUTREL) {
        xti_err(TOUTSTATE);
        goto out;
    }
    p = xti_peek_prim(ep);
    if (p == -1)
        goto out;
    if (p == T_DISCON_IND) {
        xti_err(TLOOK);
        goto out;
    }
    if (p != T_ORDREL_IND) {
        xti_err(TNOREL);
        goto out;
    }
    if (xti_next_msg(ep, T_ORDREL_IND, -1, 0, 0, &m) < 0)
        goto out;
    free(m.m_own);
    ep->e_state = ep->e_state == T_DATAXFER ? T_INREL : T_IDLE;
    rc = 0;
    if (discon) {
        discon->reason = 0;
        discon->sequence = 0;
        discon->udata.len = 0;
        rc = xti_uwrite(udiscon, discon, sizeof(*discon));
    }
out:
    xti_ep_put(ep);
    return rc;
}

int t_rcvrel(int fd)
{
    return xti_rcvrel(fd, NULL);
}

int t_rcvreldata(int fd, struct t_discon *discon)
{
    return xti_rcvrel(fd, discon);
}
