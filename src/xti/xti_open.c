/* SPDX-License-Identifier: MIT */
/*
 * xti_open.c -- t_open, t_close, t_getinfo, t_getstate, t_sync, t_sysconf,
 * t_alloc, t_free (XNS Issue 5).
 *
 * t_open costs one strm_open, one I_FIND (plus an I_PUSH when timod is not
 * autopushed) and one TI_CAPABILITY, which returns both the T_info_ack and
 * the ACCEPTOR_id t_accept needs: the fewest round trips TPI allows.  The
 * open, I_FIND and I_PUSH are one library call (ustreams_open_module: the
 * descriptor is t_open's own until it returns, so neither the close-behind
 * check nor a second read of the credentials is made for them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "xti_impl.h"

/* The XTI state of a TPI state; -1 for a state still waiting for an ack. */
static int xti_tpi_state(t_scalar_t s)
{
    switch (s) {
    case TS_UNBND:
        return T_UNBND;
    case TS_IDLE:
        return T_IDLE;
    case TS_WCON_CREQ:
        return T_OUTCON;
    case TS_WRES_CIND:
        return T_INCON;
    case TS_DATA_XFER:
        return T_DATAXFER;
    case TS_WIND_ORDREL:
        return T_OUTREL;
    case TS_WREQ_ORDREL:
        return T_INREL;
    default:
        return -1;
    }
}

static void xti_info_from_ack(struct xti_ep *ep, const struct T_info_ack *a)
{
    ep->e_info.addr = a->ADDR_size;
    ep->e_info.options = a->OPT_size;
    ep->e_info.tsdu = a->TSDU_size;
    ep->e_info.etsdu = a->ETSDU_size;
    ep->e_info.connect = a->CDATA_size;
    ep->e_info.discon = a->DDATA_size;
    ep->e_info.servtype = a->SERV_type;
    ep->e_info.flags = (a->PROVIDER_flag & SENDZERO) ? T_SENDZERO : 0;
    ep->e_provflag = a->PROVIDER_flag;
}

static size_t xti_cap(t_scalar_t v, size_t cap)
{
    if (v == T_INFINITE || (v > 0 && (size_t)v > cap))
        return cap;
    return v > 0 ? (size_t)v : 0;
}

/*
 * Ask the provider for its characteristics: TI_CAPABILITY (info and
 * ACCEPTOR_id in one round trip), else TI_GETINFO.  Sets e_info, e_state.
 */
static int xti_query(struct xti_ep *ep)
{
    union {
        struct T_capability_req req;
        struct T_capability_ack ack;
        struct T_info_req ireq;
        struct T_info_ack iack;
    } u;
    const struct T_info_ack *ia;
    int n, st;

    memset(&u, 0, sizeof(u));
    u.req.PRIM_type = T_CAPABILITY_REQ;
    u.req.CAP_bits1 = TC1_INFO | TC1_ACCEPTOR_ID;
    n = xti_ti_ioctl(ep, TI_CAPABILITY, &u, sizeof(u.req), sizeof(u));
    if (n < 0 && t_errno == TSYSERR && errno == ENOTTY)
        return -1; /* timod: no TPI provider below (xti_not_transport) */
    if (n >= (int)sizeof(u.ack) && u.ack.PRIM_type == T_CAPABILITY_ACK &&
        (u.ack.CAP_bits1 & TC1_INFO)) {
        ia = &u.ack.INFO_ack;
        if (u.ack.CAP_bits1 & TC1_ACCEPTOR_ID) {
            ep->e_acceptor = u.ack.ACCEPTOR_id;
            ep->e_have_acceptor = 1;
        }
    } else {
        memset(&u, 0, sizeof(u));
        u.ireq.PRIM_type = T_INFO_REQ;
        n = xti_ti_ioctl(ep, TI_GETINFO, &u, sizeof(u.ireq), sizeof(u));
        if (n < 0)
            return -1;
        if (n < (int)sizeof(u.iack) || u.iack.PRIM_type != T_INFO_ACK)
            return xti_err(TPROTO);
        ia = &u.iack;
    }
    if (ia->SERV_type != T_COTS && ia->SERV_type != T_COTS_ORD && ia->SERV_type != T_CLTS)
        return xti_err(TPROTO);
    xti_info_from_ack(ep, ia);
    st = xti_tpi_state(ia->CURRENT_state);
    ep->e_state = st < 0 ? T_UNBND : st;
    return 0;
}

/* A new entry for stream fd: the provider queried, scratch allocated. */
static struct xti_ep *xti_ep_new(int fd, const char *name)
{
    struct xti_ep *ep = calloc(1, sizeof(*ep));
    const char *base;

    if (!ep) {
        xti_syserr(ENOMEM);
        return NULL;
    }
    pthread_mutex_init(&ep->e_lock, NULL);
    pthread_mutex_init(&ep->e_rlock, NULL);
    pthread_mutex_init(&ep->e_wlock, NULL);
    ep->e_fd = fd;
    base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : (name ? name : "");
    strncpy(ep->e_provider, base, sizeof(ep->e_provider) - 1);
    ep->e_ctlsize = 256;
    ep->e_ctl = malloc(ep->e_ctlsize);
    if (!ep->e_ctl) {
        xti_ep_free(ep);
        xti_syserr(ENOMEM);
        return NULL;
    }
    if (xti_query(ep) < 0) {
        xti_ep_free(ep);
        return NULL;
    }
    /* Room for any primitive: fixed part, two addresses, options. */
    size_t need = sizeof(union T_primitives) + 2 * xti_cap(ep->e_info.addr, XTI_ADDR_CAP) +
                  xti_cap(ep->e_info.options, XTI_OPT_CAP) + 64;
    if (need > ep->e_ctlsize) {
        char *c = realloc(ep->e_ctl, need);
        if (!c) {
            xti_ep_free(ep);
            xti_syserr(ENOMEM);
            return NULL;
        }
        ep->e_ctl = c;
        ep->e_ctlsize = need;
    }
    ep->e_iosize = ep->e_wctlsize = ep->e_ctlsize;
    ep->e_rctl = malloc(ep->e_iosize);
    ep->e_wctl = malloc(ep->e_wctlsize);
    if (!ep->e_rctl || !ep->e_wctl) {
        xti_ep_free(ep);
        xti_syserr(ENOMEM);
        return NULL;
    }
    return ep;
}

/*
 * Did the last call fail because the stream is no transport?  timod fails
 * the query ENOTTY when the request came back up (echo, FIFO) or an
 * unproven stream left TI_CAPABILITY unanswered (nuls, sad): docs/XTI.md,
 * "t_open and t_sync of a stream that is not a transport".
 */
static int xti_not_transport(void)
{
    return t_errno == TSYSERR && errno == ENOTTY;
}

/* Push timod unless it is there already; *pushed says whether we did
 * (t_sync of a stream opened elsewhere; t_open: ustreams_open_module). */
static int xti_timod(int fd, int *pushed)
{
    int rc = strm_ioctl(fd, I_FIND, "timod");

    *pushed = 0;
    if (rc < 0)
        return xti_syserr(errno);
    if (rc == 0) {
        if (strm_ioctl(fd, I_PUSH, "timod") < 0)
            return xti_syserr(errno);
        *pushed = 1;
    }
    return 0;
}

int t_open(const char *name, int oflag, struct t_info *info)
{
    struct xti_ep *ep;
    int fd, e, te, pushed = 0;

    if (!name)
        return xti_err(TBADNAME);
    if ((oflag & O_ACCMODE) != O_RDWR || (oflag & ~(O_ACCMODE | O_NONBLOCK)))
        return xti_err(TBADFLAG);
    fd = ustreams_open_module(name, oflag, "timod", &pushed);
    if (fd < 0 && pushed < 0) { /* the open failed */
        if (errno == ENOENT || errno == ENXIO || errno == ENODEV || errno == ENOSTR)
            return xti_err(TBADNAME);
        return xti_syserr(errno);
    }
    if (fd < 0) /* I_FIND or I_PUSH failed; the stream is closed */
        return xti_syserr(errno);
    if (!(ep = xti_ep_new(fd, name))) {
        if (xti_not_transport())
            t_errno = TBADNAME; /* the name is no transport provider; errno ENOTTY */
        goto fail;
    }
    /* info before the entry exists: a bad one leaves no endpoint behind. */
    if ((info && xti_uwrite(info, &ep->e_info, sizeof(*info)) < 0) || xti_ep_insert(ep) < 0) {
        xti_ep_free(ep);
        goto fail;
    }
    return fd;
fail:
    /* Leave the stream as found: it may be shared (a FIFO, an fattached name). */
    e = errno;
    te = t_errno;
    if (pushed)
        (void)strm_ioctl(fd, I_POP, 0);
    strm_close(fd);
    errno = e;
    t_errno = te;
    return -1;
}

int t_close(int fd)
{
    struct xti_ep *ep;

    xti_more_close(fd); /* bytes held by T_MORE go first, as a t_snd's */
    ep = xti_ep_get(fd);

    if (!ep)
        return -1;
    xti_ep_remove(ep);
    xti_ep_put(ep);
    strm_close(fd);
    return 0;
}

int t_getinfo(int fd, struct t_info *info)
{
    struct xti_ep *ep = xti_ep_get(fd);
    struct {
        union {
            struct T_info_req req;
            struct T_info_ack ack;
        } u;
    } b;
    int n;

    if (!ep)
        return -1;
    memset(&b, 0, sizeof(b));
    b.u.req.PRIM_type = T_INFO_REQ;
    n = xti_ti_ioctl(ep, TI_GETINFO, &b, sizeof(b.u.req), sizeof(b));
    if (n >= (int)sizeof(b.u.ack) && b.u.ack.PRIM_type == T_INFO_ACK) {
        t_scalar_t flags = ep->e_info.flags;
        xti_info_from_ack(ep, &b.u.ack);
        ep->e_info.flags |= flags & T_ORDRELDATA;
    } else if (n >= 0) {
        xti_ep_put(ep);
        return xti_err(TPROTO);
    } else {
        xti_ep_put(ep);
        return -1;
    }
    n = info ? xti_uwrite(info, &ep->e_info, sizeof(*info)) : 0;
    xti_ep_put(ep);
    return n < 0 ? -1 : 0;
}

int t_getstate(int fd)
{
    struct xti_ep *ep = xti_ep_get(fd);
    int st;

    if (!ep)
        return -1;
    st = ep->e_state;
    xti_ep_put(ep);
    return st;
}

/* Bring ep's state up to date from the provider (TI_SYNC, else TI_GETINFO). */
static int xti_resync(struct xti_ep *ep)
{
    union {
        struct ti_sync_req req;
        struct ti_sync_ack ack;
        struct T_info_req ireq;
        struct T_info_ack iack;
    } u;
    t_scalar_t tpi;
    int n, st;

    memset(&u, 0, sizeof(u));
    u.req.tsr_flags = TSRF_INFO_REQ | TSRF_QLEN_REQ;
    n = xti_ti_ioctl(ep, TI_SYNC, &u, sizeof(u.req), sizeof(u));
    if (n >= (int)sizeof(u.ack) && u.ack.PRIM_type == T_INFO_ACK) {
        tpi = u.ack.CURRENT_state;
        ep->e_qlen = u.ack.tsa_qlen;
    } else {
        memset(&u, 0, sizeof(u));
        u.ireq.PRIM_type = T_INFO_REQ;
        n = xti_ti_ioctl(ep, TI_GETINFO, &u, sizeof(u.ireq), sizeof(u));
        if (n < 0)
            return -1;
        if (n < (int)sizeof(u.iack) || u.iack.PRIM_type != T_INFO_ACK)
            return xti_err(TPROTO);
        tpi = u.iack.CURRENT_state;
    }
    st = xti_tpi_state(tpi);
    if (st < 0)
        return xti_err(TSTATECHNG);
    if (st != T_INCON)
        ep->e_ocnt = 0;
    else if (ep->e_state != T_INCON && ep->e_ocnt == 0)
        ep->e_ocnt = 1;
    ep->e_state = st;
    return st;
}

/*
 * A descriptor libxnet has no entry for (inherited across exec, opened with
 * strm_open, dup'ed): make it an endpoint, as XNS 5 t_sync says ("a
 * transport endpoint ... not yet ... used by t_open"; Solaris' libnsl does
 * the same for XTI).  timod is pushed when I_FIND shows it absent and the
 * provider asked for its state; a stream that is no transport (timod fails
 * the query ENOTTY: docs/TIMOD.md) fails TBADF and gets back the modules it
 * had.  A descriptor that is no stream fails TBADF.  Returns the new entry,
 * held (xti_ep_get), or NULL with t_errno set.
 */
static struct xti_ep *xti_adopt(int fd)
{
    struct xti_ep *ep;
    int pushed, e, te;

    if (strm_ioctl(fd, I_FIND, "timod") < 0) {
        xti_err(TBADF); /* not a stream: no transport endpoint */
        return NULL;
    }
    if (xti_timod(fd, &pushed) < 0)
        return NULL;
    ep = xti_ep_new(fd, "");
    if (ep && xti_ep_insert(ep) < 0) {
        xti_ep_free(ep);
        ep = NULL;
    }
    if (!ep) {
        if (xti_not_transport())
            t_errno = TBADF; /* "does not refer to a transport endpoint" */
        e = errno;
        te = t_errno;
        if (pushed)
            (void)strm_ioctl(fd, I_POP, 0); /* leave the stream as found */
        errno = e;
        t_errno = te;
        return NULL;
    }
    return xti_ep_get(fd);
}

int t_sync(int fd)
{
    struct xti_ep *ep = xti_ep_get(fd);
    int st;

    if (!ep && !(ep = xti_adopt(fd)))
        return -1;
    st = xti_resync(ep);
    xti_ep_put(ep);
    return st;
}

/* XNS 5 t_sysconf: the one name is _SC_T_IOV_MAX; any other is TBADFLAG. */
int t_sysconf(int name)
{
    if (name == _SC_T_IOV_MAX)
        return T_IOV_MAX;
    return xti_err(TBADFLAG);
}

/*
 * One netbuf of t_alloc: size from the t_info value v.  T_INFINITE gets
 * cap bytes; T_INVALID fails (TSYSERR/EINVAL) when the field was named
 * explicitly and leaves an empty netbuf under T_ALL; 0 an empty netbuf.
 */
static int xti_alloc_nb(struct netbuf *nb, t_scalar_t v, size_t cap, int explicit_field)
{
    size_t n;

    if (v == T_INVALID) {
        if (explicit_field)
            return xti_syserr(EINVAL);
        return 0;
    }
    n = v == T_INFINITE ? cap : (v > 0 ? (size_t)v : 0);
    if (n == 0)
        return 0;
    nb->buf = calloc(1, n);
    if (!nb->buf)
        return xti_syserr(ENOMEM);
    nb->maxlen = (unsigned)n;
    return 0;
}

static void xti_free_nb(struct netbuf *nb)
{
    free(nb->buf);
    nb->buf = NULL;
}

/* The size of a t_alloc structure, 0 for an unknown type. */
static size_t xti_struct_size(int struct_type)
{
    switch (struct_type) {
    case T_BIND:
        return sizeof(struct t_bind);
    case T_OPTMGMT:
        return sizeof(struct t_optmgmt);
    case T_CALL:
        return sizeof(struct t_call);
    case T_DIS:
        return sizeof(struct t_discon);
    case T_UNITDATA:
        return sizeof(struct t_unitdata);
    case T_UDERROR:
        return sizeof(struct t_uderr);
    case T_INFO:
        return sizeof(struct t_info);
    default:
        return 0;
    }
}

int t_free(void *ptr, int struct_type)
{
    union {
        struct t_bind b;
        struct t_optmgmt o;
        struct t_call c;
        struct t_discon d;
        struct t_unitdata u;
        struct t_uderr e;
        struct t_info i;
    } s;
    size_t sz = xti_struct_size(struct_type);

    if (!ptr)
        return 0;
    if (sz == 0)
        return xti_err(TNOSTRUCTYPE);
    /* The buffer pointers are read through a protected copy: a bad ptr is EFAULT. */
    if (xti_uread(&s, ptr, sz) < 0)
        return -1;
    switch (struct_type) {
    case T_BIND:
        xti_free_nb(&s.b.addr);
        break;
    case T_OPTMGMT:
        xti_free_nb(&s.o.opt);
        break;
    case T_CALL:
        xti_free_nb(&s.c.addr);
        xti_free_nb(&s.c.opt);
        xti_free_nb(&s.c.udata);
        break;
    case T_DIS:
        xti_free_nb(&s.d.udata);
        break;
    case T_UNITDATA:
        xti_free_nb(&s.u.addr);
        xti_free_nb(&s.u.opt);
        xti_free_nb(&s.u.udata);
        break;
    case T_UDERROR:
        xti_free_nb(&s.e.addr);
        xti_free_nb(&s.e.opt);
        break;
    }
    free(ptr);
    return 0;
}

/*
 * XNS 5 t_alloc.  The buffer sizes come from fd's t_info, so fd must be an
 * endpoint, except for T_INFO (no buffer): "fd may be set to any value".
 */
void *t_alloc(int fd, int struct_type, int fields)
{
    struct xti_ep *ep;
    struct t_info in;
    size_t sz;
    void *p;
    int all = (fields & T_ALL) == T_ALL, rc = 0;
    struct netbuf *addr = NULL, *opt = NULL, *udata = NULL;
    t_scalar_t uv = 0;

    if (struct_type == T_INFO) {
        p = calloc(1, sizeof(struct t_info));
        if (!p)
            xti_syserr(ENOMEM);
        return p;
    }
    ep = xti_ep_get(fd);
    if (!ep)
        return NULL;
    in = ep->e_info;
    xti_ep_put(ep);
    sz = xti_struct_size(struct_type);
    if (sz == 0) {
        xti_err(TNOSTRUCTYPE);
        return NULL;
    }
    if (struct_type == T_UNITDATA || struct_type == T_UDERROR) {
        if (in.servtype != T_CLTS) {
            xti_err(TNOSTRUCTYPE);
            return NULL;
        }
    } else if (struct_type == T_CALL || struct_type == T_DIS) {
        if (in.servtype == T_CLTS) {
            xti_err(TNOSTRUCTYPE);
            return NULL;
        }
    }
    p = calloc(1, sz);
    if (!p) {
        xti_syserr(ENOMEM);
        return NULL;
    }
    switch (struct_type) {
    case T_BIND:
        addr = &((struct t_bind *)p)->addr;
        break;
    case T_OPTMGMT:
        opt = &((struct t_optmgmt *)p)->opt;
        break;
    case T_CALL:
        addr = &((struct t_call *)p)->addr;
        opt = &((struct t_call *)p)->opt;
        udata = &((struct t_call *)p)->udata;
        uv = in.connect;
        break;
    case T_DIS:
        udata = &((struct t_discon *)p)->udata;
        uv = in.discon;
        break;
    case T_UNITDATA:
        addr = &((struct t_unitdata *)p)->addr;
        opt = &((struct t_unitdata *)p)->opt;
        udata = &((struct t_unitdata *)p)->udata;
        uv = in.tsdu;
        break;
    case T_UDERROR:
        addr = &((struct t_uderr *)p)->addr;
        opt = &((struct t_uderr *)p)->opt;
        break;
    }
    if (addr && (fields & T_ADDR))
        rc = xti_alloc_nb(addr, in.addr, XTI_ADDR_CAP, !all);
    if (rc == 0 && opt && (fields & T_OPT))
        rc = xti_alloc_nb(opt, in.options, XTI_OPT_CAP, !all);
    if (rc == 0 && udata && (fields & T_UDATA))
        rc = xti_alloc_nb(udata, uv, XTI_DATA_CAP, !all);
    if (rc < 0) {
        int e = errno, te = t_errno;
        t_free(p, struct_type);
        errno = e;
        t_errno = te;
        return NULL;
    }
    return p;
}
