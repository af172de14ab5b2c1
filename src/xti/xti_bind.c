/* SPDX-License-Identifier: MIT */
/*
 * xti_bind.c -- t_bind, t_unbind, t_getprotaddr, t_optmgmt (XNS Issue 5):
 * the requests timod answers through I_STR (TI_BIND, TI_UNBIND,
 * TI_GETADDRS, TI_OPTMGMT; <sys/timod.h>).
 *
 * The caller's structs and the buffers their netbufs point to are copied
 * in (xti_ucopy.c) before the request goes down, so a bad pointer among the
 * inputs fails with TSYSERR/EFAULT and changes nothing; the outputs go back
 * in one batch after the acknowledgement: if that faults, the request has
 * been done (t_bind: the endpoint is bound, T_IDLE) and the call reports
 * EFAULT, as a system call that faults on its way out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xti_impl.h"

/* Make sure ep's scratch holds need bytes. */
static int xti_scratch(struct xti_ep *ep, size_t need)
{
    char *c;

    if (need <= ep->e_ctlsize)
        return 0;
    c = realloc(ep->e_ctl, need);
    if (!c)
        return xti_syserr(ENOMEM);
    ep->e_ctl = c;
    ep->e_ctlsize = need;
    return 0;
}

int t_bind(int fd, const struct t_bind *ureq, struct t_bind *uret)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct T_bind_req *br;
    struct T_bind_ack *ba;
    struct t_bind rq, rt, *req = ureq ? &rq : NULL, *ret = uret ? &rt : NULL;
    struct xti_uvec v;
    size_t alen = 0;
    int n, rc = -1;

    if (!ep)
        return -1;
    xti_uv_init(&v);
    if (ureq)
        xti_uv_add(&v, &rq, ureq, sizeof(rq));
    if (uret)
        xti_uv_add(&v, &rt, uret, sizeof(rt));
    if (xti_uv_read(&v) < 0)
        goto out;
    if (ep->e_state != T_UNBND) {
        xti_err(TOUTSTATE);
        goto out;
    }
    if (req) {
        alen = req->addr.len;
        if (alen && !req->addr.buf) {
            xti_err(TBADADDR);
            goto out;
        }
        if (ep->e_info.addr >= 0 && alen > (size_t)ep->e_info.addr) {
            xti_err(TBADADDR);
            goto out;
        }
    }
    if (xti_scratch(ep, sizeof(*ba) + alen + XTI_ADDR_CAP) < 0)
        goto out;
    br = (struct T_bind_req *)(void *)ep->e_ctl;
    br->PRIM_type = T_BIND_REQ;
    br->ADDR_length = (t_scalar_t)alen;
    br->ADDR_offset = alen ? (t_scalar_t)sizeof(*br) : 0;
    br->CONIND_number = (req && ep->e_info.servtype != T_CLTS) ? req->qlen : 0;
    if (alen && xti_uread(ep->e_ctl + sizeof(*br), req->addr.buf, alen) < 0)
        goto out;
    n = xti_ti_ioctl(ep, TI_BIND, ep->e_ctl, (int)(sizeof(*br) + alen), (int)ep->e_ctlsize);
    if (n < 0)
        goto out;
    ba = (struct T_bind_ack *)(void *)ep->e_ctl;
    if (n < (int)sizeof(*ba) || ba->PRIM_type != T_BIND_ACK ||
        !xti_inside(ba->ADDR_offset, ba->ADDR_length, (size_t)n)) {
        xti_err(TPROTO);
        goto out;
    }
    ep->e_state = T_IDLE;
    ep->e_qlen = ba->CONIND_number;
    ep->e_ocnt = 0;
    if (ret) {
        ret->qlen = ba->CONIND_number;
        xti_uv_init(&v);
        xti_uv_add(&v, ret, uret, sizeof(*ret));
        if (xti_copyout(&ret->addr, ep->e_ctl + ba->ADDR_offset, (size_t)ba->ADDR_length, &v) <
            0) {
            xti_err(TBUFOVFLW);
            goto out;
        }
        if (xti_uv_write(&v) < 0)
            goto out;
    }
    rc = 0;
out:
    xti_ep_put(ep);
    return rc;
}

int t_unbind(int fd)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct T_unbind_req *ur;
    int ev, rc = -1;

    if (!ep)
        return -1;
    if (ep->e_state != T_IDLE) {
        xti_err(TOUTSTATE);
        goto out;
    }
    ev = xti_look_event(ep);
    if (ev < 0)
        goto out;
    if (ev > 0 && ev != T_GODATA && ev != T_GOEXDATA) {
        xti_err(TLOOK);
        goto out;
    }
    ur = (struct T_unbind_req *)(void *)ep->e_ctl;
    ur->PRIM_type = T_UNBIND_REQ;
    if (xti_ti_ioctl(ep, TI_UNBIND, ep->e_ctl, sizeof(*ur), (int)ep->e_ctlsize) < 0)
        goto out;
    xti_look_flush(ep);
    ep->e_state = T_UNBND;
    ep->e_qlen = 0;
    ep->e_ocnt = 0;
    ep->e_flow = ep->e_eflow = 0;
    rc = 0;
out:
    xti_ep_put(ep);
    return rc;
}

int t_getprotaddr(int fd, struct t_bind *ubound, struct t_bind *upeer)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct T_addr_ack *aa;
    struct t_bind bb, pb, *boundaddr = ubound ? &bb : NULL, *peeraddr = upeer ? &pb : NULL;
    struct xti_uvec v;
    int n, rc = -1;

    if (!ep)
        return -1;
    xti_uv_init(&v);
    if (ubound)
        xti_uv_add(&v, &bb, ubound, sizeof(bb));
    if (upeer)
        xti_uv_add(&v, &pb, upeer, sizeof(pb));
    if (xti_uv_read(&v) < 0)
        goto out;
    xti_uv_init(&v);
    if (xti_scratch(ep, sizeof(*aa) + 2 * XTI_ADDR_CAP) < 0)
        goto out;
    aa = (struct T_addr_ack *)(void *)ep->e_ctl;
    memset(aa, 0, sizeof(*aa));
    aa->PRIM_type = T_ADDR_REQ;
    n = xti_ti_ioctl(ep, TI_GETADDRS, ep->e_ctl, sizeof(struct T_addr_req), (int)ep->e_ctlsize);
    if (n < 0)
        goto out;
    if (n < (int)sizeof(*aa) || aa->PRIM_type != T_ADDR_ACK ||
        !xti_inside(aa->LOCADDR_offset, aa->LOCADDR_length, (size_t)n) ||
        !xti_inside(aa->REMADDR_offset, aa->REMADDR_length, (size_t)n)) {
        xti_err(TPROTO);
        goto out;
    }
    if (boundaddr) {
        size_t l = ep->e_state == T_UNBND ? 0 : (size_t)aa->LOCADDR_length;
        xti_uv_add(&v, boundaddr, ubound, sizeof(*boundaddr));
        if (xti_copyout(&boundaddr->addr, ep->e_ctl + aa->LOCADDR_offset, l, &v) < 0) {
            xti_err(TBUFOVFLW);
            goto out;
        }
    }
    if (peeraddr) {
        int conn = ep->e_state == T_DATAXFER || ep->e_state == T_OUTREL || ep->e_state == T_INREL;
        size_t l = conn ? (size_t)aa->REMADDR_length : 0;
        xti_uv_add(&v, peeraddr, upeer, sizeof(*peeraddr));
        if (xti_copyout(&peeraddr->addr, ep->e_ctl + aa->REMADDR_offset, l, &v) < 0) {
            xti_err(TBUFOVFLW);
            goto out;
        }
    }
    if (xti_uv_write(&v) < 0)
        goto out;
    rc = 0;
out:
    xti_ep_put(ep);
    return rc;
}

/* The XTI option list of len bytes at buf is well formed. */
static int xti_opts_valid(const char *buf, size_t len)
{
    size_t at = 0;

    while (at < len) {
        struct t_opthdr h;
        if (len - at < sizeof(h))
            return 0;
        memcpy(&h, buf + at, sizeof(h));
        if (h.len < sizeof(h) || h.len > len - at)
            return 0;
        at += _T_ALIGN(h.len);
    }
    return 1;
}

int t_optmgmt(int fd, const struct t_optmgmt *ureq, struct t_optmgmt *uret)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct T_optmgmt_req *or;
    struct T_optmgmt_ack *oa;
    struct t_optmgmt rq, rt, *req = &rq, *ret = &rt;
    struct xti_uvec v;
    size_t olen;
    int n, rc = -1;

    if (!ep)
        return -1;
    if (!ureq || !uret) {
        xti_syserr(EINVAL);
        goto out;
    }
    xti_uv_init(&v);
    xti_uv_add(&v, &rq, ureq, sizeof(rq));
    xti_uv_add(&v, &rt, uret, sizeof(rt));
    if (xti_uv_read(&v) < 0)
        goto out;
    if (req->flags != T_NEGOTIATE && req->flags != T_CHECK && req->flags != T_DEFAULT &&
        req->flags != T_CURRENT) {
        xti_err(TBADFLAG);
        goto out;
    }
    olen = req->opt.len;
    if ((olen && !req->opt.buf) || (ep->e_info.options >= 0 && olen > (size_t)ep->e_info.options) ||
        (ep->e_info.options == T_INVALID) ||
        ((req->flags == T_NEGOTIATE || req->flags == T_CHECK) && olen == 0)) {
        xti_err(TBADOPT);
        goto out;
    }
    if (xti_scratch(ep, sizeof(*oa) + olen + XTI_OPT_CAP) < 0)
        goto out;
    /* The options are copied in, then checked in the copy. */
    if (olen && xti_uread(ep->e_ctl + sizeof(*or), req->opt.buf, olen) < 0)
        goto out;
    if (!xti_opts_valid(ep->e_ctl + sizeof(*or), olen)) {
        xti_err(TBADOPT);
        goto out;
    }
    or = (struct T_optmgmt_req *)(void *)ep->e_ctl;
    or->PRIM_type = T_OPTMGMT_REQ;
    or->OPT_length = (t_scalar_t)olen;
    or->OPT_offset = olen ? (t_scalar_t)sizeof(*or) : 0;
    or->MGMT_flags = req->flags;
    n = xti_ti_ioctl(ep, TI_OPTMGMT, ep->e_ctl, (int)(sizeof(*or) + olen), (int)ep->e_ctlsize);
    if (n < 0)
        goto out;
    oa = (struct T_optmgmt_ack *)(void *)ep->e_ctl;
    if (n < (int)sizeof(*oa) || oa->PRIM_type != T_OPTMGMT_ACK ||
        !xti_inside(oa->OPT_offset, oa->OPT_length, (size_t)n)) {
        xti_err(TPROTO);
        goto out;
    }
    ret->flags = oa->MGMT_flags;
    xti_uv_init(&v);
    xti_uv_add(&v, ret, uret, sizeof(*ret));
    if (xti_copyout(&ret->opt, ep->e_ctl + oa->OPT_offset, (size_t)oa->OPT_length, &v) < 0) {
        xti_err(TBUFOVFLW);
        goto out;
    }
    if (xti_uv_write(&v) < 0)
        goto out;
    rc = 0;
out:
    xti_ep_put(ep);
    return rc;
}
