/* SPDX-License-Identifier: MIT */
/*
 * xti_look.c -- t_look and the look buffer.
 *
 * An event is pending when a primitive that a t_* call must consume waits
 * either in the look buffer (read earlier by a call looking for something
 * else) or at the head of the stream.  The look buffer is always older than
 * anything still at the stream head, so it is consulted first.  T_GODATA and
 * T_GOEXDATA are synthesised: once t_snd met flow control (TFLOW), t_look
 * polls for writability and reports the lifting once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xti_impl.h"

int xti_prim_event(t_scalar_t prim)
{
    switch (prim) {
    case T_CONN_IND:
        return T_LISTEN;
    case T_CONN_CON:
        return T_CONNECT;
    case T_DATA_IND:
    case T_UNITDATA_IND:
    case T_OPTDATA_IND:
        return T_DATA;
    case T_EXDATA_IND:
        return T_EXDATA;
    case T_DISCON_IND:
        return T_DISCONNECT;
    case T_UDERROR_IND:
        return T_UDERR;
    case T_ORDREL_IND:
        return T_ORDREL;
    default:
        return 0;
    }
}

int xti_look_push(struct xti_ep *ep, const void *ctl, size_t clen, const void *data, size_t dlen)
{
    struct xti_look *l = malloc(sizeof(*l) + clen + dlen), **pp;
    t_scalar_t prim;

    if (!l)
        return xti_syserr(ENOMEM);
    memcpy(&prim, ctl, sizeof(prim));
    l->l_next = NULL;
    l->l_prim = prim;
    l->l_event = xti_prim_event(prim);
    l->l_clen = clen;
    l->l_dlen = dlen;
    memcpy(l->l_buf, ctl, clen);
    if (dlen)
        memcpy(l->l_buf + clen, data, dlen);
    for (pp = &ep->e_look; *pp; pp = &(*pp)->l_next)
        ;
    *pp = l;
    return 0;
}

struct xti_look *xti_look_take(struct xti_ep *ep, t_scalar_t prim)
{
    for (struct xti_look **pp = &ep->e_look; *pp; pp = &(*pp)->l_next) {
        if ((*pp)->l_prim == prim) {
            struct xti_look *l = *pp;
            *pp = l->l_next;
            return l;
        }
    }
    return NULL;
}

void xti_look_flush(struct xti_ep *ep)
{
    while (ep->e_look) {
        struct xti_look *l = ep->e_look;
        ep->e_look = l->l_next;
        free(l);
    }
}

int xti_look_event(struct xti_ep *ep)
{
    struct strpeek pk;
    union T_primitives prim;
    char dummy;
    int rc;

    if (ep->e_look)
        return ep->e_look->l_event;
    memset(&pk, 0, sizeof(pk));
    pk.ctlbuf.buf = (char *)&prim;
    pk.ctlbuf.maxlen = (int)sizeof(prim);
    pk.databuf.buf = &dummy;
    pk.databuf.maxlen = 0;
    pk.flags = 0;
    rc = strm_ioctl(ep->e_fd, I_PEEK, &pk);
    if (rc < 0)
        return xti_syserr(errno);
    if (rc > 0) {
        if (pk.ctlbuf.len < (int)sizeof(t_scalar_t))
            return T_DATA; /* M_DATA: the rest of a TSDU, or plain data */
        rc = xti_prim_event(prim.type);
        if (rc)
            return rc;
    }
    if (ep->e_flow || ep->e_eflow) {
        struct pollfd p = {.fd = ep->e_fd, .events = POLLWRNORM | POLLWRBAND};
        if (strm_poll(&p, 1, 0) > 0) {
            if (ep->e_flow && (p.revents & POLLWRNORM)) {
                ep->e_flow = 0;
                return T_GODATA;
            }
            if (ep->e_eflow && (p.revents & POLLWRBAND)) {
                ep->e_eflow = 0;
                return T_GOEXDATA;
            }
        }
    }
    return 0;
}

int t_look(int fd)
{
    struct xti_ep *ep = xti_ep_get(fd);
    int ev;

    if (!ep)
        return -1;
    xti_more_try(ep); /* an event loop looks before it waits: what is held goes */
    ev = xti_look_event(ep);
    xti_ep_put(ep);
    return ev;
}

int xti_peek_prim(struct xti_ep *ep)
{
    struct strpeek pk;
    union T_primitives prim;
    char dummy;
    int rc;

    if (ep->e_look)
        return ep->e_look->l_prim;
    memset(&pk, 0, sizeof(pk));
    pk.ctlbuf.buf = (char *)&prim;
    pk.ctlbuf.maxlen = (int)sizeof(prim);
    pk.databuf.buf = &dummy;
    pk.databuf.maxlen = 0;
    rc = strm_ioctl(ep->e_fd, I_PEEK, &pk);
    if (rc < 0)
        return xti_syserr(errno);
    if (rc == 0)
        return XTI_PEEK_NONE;
    if (pk.ctlbuf.len < (int)sizeof(t_scalar_t))
        return XTI_PEEK_DATA;
    return prim.type;
}

/* Read the rest of a message whose data did not fit (MOREDATA), appending up to cap. */
static int xti_drain_rest(struct xti_ep *ep, char **bufp, size_t *lenp)
{
    char tmp[1024];

    for (;;) {
        struct strbuf d = {.maxlen = (int)sizeof(tmp), .buf = tmp};
        int flags = MSG_ANY, band = 0;
        int rc = xti_sys_getpmsg(ep->e_fd, NULL, &d, &band, &flags);
        (void)band;
        if (rc < 0)
            return xti_syserr(errno);
        if (d.len > 0) {
            char *nb = realloc(*bufp, *lenp + (size_t)d.len);
            if (!nb)
                return xti_syserr(ENOMEM);
            memcpy(nb + *lenp, tmp, (size_t)d.len);
            *bufp = nb;
            *lenp += (size_t)d.len;
        }
        if (!(rc & MOREDATA))
            return 0;
    }
}

int xti_next_msg(struct xti_ep *ep, t_scalar_t want, t_scalar_t want2, int block, size_t dcap,
                 struct xti_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (ep->e_look) {
        struct xti_look *l = ep->e_look;
        if (l->l_prim != want && l->l_prim != want2)
            return xti_err(TLOOK);
        ep->e_look = l->l_next;
        m->m_own = l;
        m->m_ctl = l->l_buf;
        m->m_clen = l->l_clen;
        m->m_data = l->l_buf + l->l_clen;
        m->m_dlen = l->l_dlen;
        return 0;
    }
    if (!block || xti_nonblock(ep)) {
        int p = xti_peek_prim(ep);
        if (p == -1)
            return -1;
        if (p == XTI_PEEK_NONE)
            return xti_err(TNODATA);
    }
    for (;;) {
        char *dbuf = malloc(dcap ? dcap : 1);
        struct strbuf ctl = {.buf = NULL}, data = {.maxlen = (int)dcap, .buf = dbuf};
        int flags = MSG_ANY, rc;
        size_t dlen;
        t_scalar_t prim;

        if (!dbuf)
            return xti_syserr(ENOMEM);
        rc = xti_getprim(ep, &ctl, &data, NULL, &flags);
        if (rc < 0) {
            free(dbuf);
            return -1;
        }
        dlen = data.len > 0 ? (size_t)data.len : 0;
        if ((rc & MOREDATA) && xti_drain_rest(ep, &dbuf, &dlen) < 0) {
            free(dbuf);
            return -1;
        }
        if (ctl.len < (int)sizeof(t_scalar_t)) {
            free(dbuf); /* stray data: not what a connection call waits for */
            return xti_err(TPROTO);
        }
        memcpy(&prim, ctl.buf, sizeof(prim));
        if (prim == want || prim == want2) {
            /* Keep control and data together in one block the caller frees. */
            char *own = malloc((size_t)ctl.len + dlen + 1);
            if (!own) {
                free(dbuf);
                return xti_syserr(ENOMEM);
            }
            memcpy(own, ctl.buf, (size_t)ctl.len);
            memcpy(own + ctl.len, dbuf, dlen);
            free(dbuf);
            m->m_own = own;
            m->m_ctl = own;
            m->m_clen = (size_t)ctl.len;
            m->m_data = own + ctl.len;
            m->m_dlen = dlen;
            return 0;
        }
        if (xti_prim_event(prim)) {
            int r = xti_look_push(ep, ctl.buf, (size_t)ctl.len, dbuf, dlen);
            free(dbuf);
            return r < 0 ? -1 : xti_err(TLOOK);
        }
        free(dbuf); /* a stray acknowledgement: skip it */
    }
}
