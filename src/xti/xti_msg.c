/* SPDX-License-Identifier: MIT */
/*
 * xti_msg.c -- how libxnet talks to the stream: timod's I_STR requests,
 * acknowledgements read from the stream head, primitives read with getpmsg,
 * and the copying of variable parts into user netbufs.  Every function here
 * runs with the entry's e_lock held.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "xti_impl.h"

/*
 * getpmsg and putpmsg of ustreams, whatever the program's link order.
 * The C library exports getmsg/putmsg/getpmsg/putpmsg too (stubs failing
 * with ENOSYS).  A program that links libxnet.so but calls nothing of
 * libustreams itself has, with --as-needed, libxnet.so and the C library
 * as its own dependencies and libustreams.so only as libxnet's, so the C
 * library comes first in the lookup scope and libxnet's unversioned
 * references bind to its stubs.  So, once: if getpmsg does not live in the
 * object that defines strm_open, take ustreams' from that object with
 * dlsym.  In a static program both are the library's and nothing changes.
 */
typedef int (*xti_getpmsg_t)(int, struct strbuf *, struct strbuf *, int *, int *);
typedef int (*xti_putpmsg_t)(int, const struct strbuf *, const struct strbuf *, int, int);
static xti_getpmsg_t xti_getpmsg_fn = getpmsg;
static xti_putpmsg_t xti_putpmsg_fn = putpmsg;
static pthread_once_t xti_sym_once = PTHREAD_ONCE_INIT;

static void xti_sym_init(void)
{
    Dl_info lib, got;
    void *h, *g, *p;

    if (!dladdr((void *)(uintptr_t)strm_open, &lib) ||
        !dladdr((void *)(uintptr_t)getpmsg, &got) || lib.dli_fbase == got.dli_fbase)
        return;
    h = dlopen(lib.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return;
    g = dlsym(h, "getpmsg");
    p = dlsym(h, "putpmsg");
    if (g && p) {
        xti_getpmsg_fn = (xti_getpmsg_t)(uintptr_t)g;
        xti_putpmsg_fn = (xti_putpmsg_t)(uintptr_t)p;
    }
    dlclose(h); /* still loaded: libxnet depends on it */
}

int xti_sys_getpmsg(int fd, struct strbuf *ctl, struct strbuf *data, int *bandp, int *flagsp)
{
    pthread_once(&xti_sym_once, xti_sym_init);
    return xti_getpmsg_fn(fd, ctl, data, bandp, flagsp);
}

int xti_sys_putpmsg(int fd, const struct strbuf *ctl, const struct strbuf *data, int band,
                    int flags)
{
    pthread_once(&xti_sym_once, xti_sym_init);
    return xti_putpmsg_fn(fd, ctl, data, band, flags);
}

int xti_nonblock(struct xti_ep *ep)
{
    int fl = strm_fcntl(ep->e_fd, F_GETFL);

    return fl >= 0 && (fl & O_NONBLOCK);
}

int xti_ti_ioctl(struct xti_ep *ep, int cmd, void *buf, int len, int size)
{
    struct strioctl ic;
    int rc;

    (void)size;
    ic.ic_cmd = cmd;
    ic.ic_timout = -1;
    ic.ic_len = len;
    ic.ic_dp = buf;
    rc = strm_ioctl(ep->e_fd, I_STR, &ic);
    if (rc < 0)
        return xti_syserr(errno);
    if (rc > 0)
        return xti_ackerr(rc);
    return ic.ic_len;
}

/* Wait until a high-priority message (an acknowledgement) can be read. */
static int xti_wait_pri(struct xti_ep *ep)
{
    struct pollfd p = {.fd = ep->e_fd, .events = POLLPRI};

    for (;;) {
        int n = strm_poll(&p, 1, -1);
        if (n > 0) {
            if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
                return p.revents & POLLPRI ? 0 : xti_syserr(EPROTO);
            return 0;
        }
        if (n < 0)
            return xti_syserr(errno);
    }
}

int xti_get_ack(struct xti_ep *ep, t_scalar_t prim)
{
    struct strbuf ctl = {.maxlen = (int)ep->e_ctlsize, .buf = ep->e_ctl};
    union T_primitives *p = (union T_primitives *)(void *)ep->e_ctl;
    int flags, rc;

    for (;;) {
        int band = 0;
        flags = MSG_HIPRI;
        rc = xti_sys_getpmsg(ep->e_fd, &ctl, NULL, &band, &flags);
        if (rc >= 0)
            break;
        if (errno != EAGAIN)
            return xti_syserr(errno);
        if (xti_wait_pri(ep) < 0)
            return -1;
    }
    if (ctl.len < (int)sizeof(t_scalar_t))
        return xti_err(TPROTO);
    if (p->type == T_OK_ACK && ctl.len >= (int)sizeof(struct T_ok_ack) &&
        p->ok_ack.CORRECT_prim == prim)
        return 0;
    if (p->type == T_ERROR_ACK && ctl.len >= (int)sizeof(struct T_error_ack)) {
        if (p->error_ack.TLI_error == TSYSERR)
            return xti_syserr(p->error_ack.UNIX_error);
        if (p->error_ack.TLI_error <= 0 || p->error_ack.TLI_error >= t_nerr)
            return xti_err(TPROTO);
        return xti_err(p->error_ack.TLI_error);
    }
    return xti_err(TPROTO);
}

int xti_getprim(struct xti_ep *ep, struct strbuf *ctl, struct strbuf *data, int *bandp,
                int *flagsp)
{
    int band = 0, rc;

    if (!ctl->buf) {
        ctl->maxlen = (int)ep->e_ctlsize;
        ctl->buf = ep->e_ctl;
    }
    rc = xti_sys_getpmsg(ep->e_fd, ctl, data, bandp ? bandp : &band, flagsp);
    if (rc < 0) {
        if (errno == EAGAIN)
            return xti_err(TNODATA);
        return xti_syserr(errno);
    }
    if (rc & MORECTL)
        return xti_err(TPROTO);
    return rc;
}

int xti_copyout(struct netbuf *nb, const void *src, size_t len, struct xti_uvec *v)
{
    if (!nb)
        return 0;
    if (nb->maxlen == 0) {
        nb->len = 0;
        return 0;
    }
    if (len > nb->maxlen)
        return -1;
    xti_uv_add(v, (void *)(uintptr_t)src, nb->buf, len);
    nb->len = (unsigned)len;
    return 0;
}

int xti_inside(t_scalar_t off, t_scalar_t len, size_t clen)
{
    if (len == 0)
        return 1;
    return off >= 0 && len > 0 && (size_t)off <= clen && (size_t)len <= clen - (size_t)off;
}

size_t xti_datacap(t_scalar_t v)
{
    if (v == T_INFINITE || v > XTI_DATA_CAP)
        return XTI_DATA_CAP;
    if (v < 0)
        return 0;
    return (size_t)v;
}
