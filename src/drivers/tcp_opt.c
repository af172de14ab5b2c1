/* SPDX-License-Identifier: MIT */
/*
 * tcp_opt.c -- T_OPTMGMT_REQ of the tcp provider: XTI options mapped onto
 * the endpoint's socket options (XNS 5, Internet appendix).
 *
 *   level        name           value                  socket option
 *   XTI_GENERIC  XTI_DEBUG      t_uscalar_t flags      none: kept per endpoint (no effect)
 *   XTI_GENERIC  XTI_LINGER     struct t_linger        SO_LINGER
 *   XTI_GENERIC  XTI_RCVBUF     t_uscalar_t bytes      SO_RCVBUF
 *   XTI_GENERIC  XTI_RCVLOWAT   t_uscalar_t bytes      SO_RCVLOWAT
 *   XTI_GENERIC  XTI_SNDBUF     t_uscalar_t bytes      SO_SNDBUF
 *   XTI_GENERIC  XTI_SNDLOWAT   t_uscalar_t bytes      SO_SNDLOWAT (read-only on Linux)
 *   INET_IP      IP_TOS         unsigned char          IP_TOS / IPV6_TCLASS
 *   INET_IP      IP_TTL         unsigned char          IP_TTL / IPV6_UNICAST_HOPS
 *   INET_IP      IP_REUSEADDR   unsigned int T_YES/NO  SO_REUSEADDR
 *   INET_IP      IP_DONTROUTE   unsigned int T_YES/NO  SO_DONTROUTE
 *   INET_TCP     TCP_NODELAY    t_uscalar_t T_YES/NO   TCP_NODELAY
 *   INET_TCP     TCP_MAXSEG     t_uscalar_t (read-only) TCP_MAXSEG
 *   INET_TCP     TCP_KEEPALIVE  struct t_kpalive       SO_KEEPALIVE, TCP_KEEPIDLE (minutes)
 *
 * Scalar values may be given as 1, 4 or sizeof(long) bytes (programs in
 * the field write a long); T_NEGOTIATE and T_CHECK answer in the size
 * given, T_CURRENT and T_DEFAULT in the XNS size.  The two structures are
 * exactly their size.  Buffer sizes are reported halved, as udp_opt.c does
 * (Linux doubles what it is given); the low-water marks as the kernel has
 * them (it caps SO_RCVLOWAT at half the receive buffer: T_PARTSUCCESS).
 * XTI_DEBUG takes any value (header alone: 0, off).  Read-only options
 * (TCP_MAXSEG; XTI_SNDLOWAT when the kernel refuses SO_SNDLOWAT) follow
 * udp_opt.c: T_READONLY for T_CHECK of a header alone, T_CURRENT,
 * T_DEFAULT, and a value other than the one they have; T_FAILURE and
 * T_READONLY return the value as given.
 * XTI_LINGER: l_onoff T_YES with l_linger 0 makes close reset the
 * connection; T_UNSPEC is TCP_LINGER_DEF seconds; T_INFINITE the kernel's
 * longest.  TCP_KEEPALIVE: kp_onoff T_GARBAGE is taken as T_YES
 * (T_PARTSUCCESS: Linux sends no garbage byte); kp_timeout T_UNSPEC leaves
 * the idle time.  While there is no socket (unbound, or between
 * connections) negotiated values are stored and set on the next socket
 * before bind(2).  T_ALLOPT, empty lists, errors and the ack's MGMT_flags
 * as udp_opt.c.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <unistd.h>
#include <xti.h>

#include "tcp.h"
#include "tl.h"

#define TCP_LINGER_DEF 120 /* seconds of XTI_LINGER's T_UNSPEC */

/* K_DEBUG is kept here; K_RDONLY is always read-only, K_SNDLOWAT when the
 * kernel refuses it (inet_sndlowat_readonly). */
enum { K_BUF, K_LOWAT, K_SNDLOWAT, K_UCHAR, K_BOOL, K_RDONLY, K_LINGER, K_KPALIVE, K_DEBUG };

static const struct tcp_optdef {
    t_uscalar_t level, name;
    int kind;
    int lvl4, opt4, lvl6, opt6; /* socket option for AF_INET, AF_INET6 */
} tcp_opts[TCP_NOPTS] = {
    {XTI_GENERIC, XTI_DEBUG, K_DEBUG, -1, 0, -1, 0},
    {XTI_GENERIC, XTI_LINGER, K_LINGER, SOL_SOCKET, SO_LINGER, SOL_SOCKET, SO_LINGER},
    {XTI_GENERIC, XTI_RCVBUF, K_BUF, SOL_SOCKET, SO_RCVBUF, SOL_SOCKET, SO_RCVBUF},
    {XTI_GENERIC, XTI_RCVLOWAT, K_LOWAT, SOL_SOCKET, SO_RCVLOWAT, SOL_SOCKET, SO_RCVLOWAT},
    {XTI_GENERIC, XTI_SNDBUF, K_BUF, SOL_SOCKET, SO_SNDBUF, SOL_SOCKET, SO_SNDBUF},
    {XTI_GENERIC, XTI_SNDLOWAT, K_SNDLOWAT, SOL_SOCKET, SO_SNDLOWAT, SOL_SOCKET, SO_SNDLOWAT},
    {INET_IP, IP_TOS, K_UCHAR, SOL_IP, IP_TOS, SOL_IPV6, IPV6_TCLASS},
    {INET_IP, IP_TTL, K_UCHAR, SOL_IP, IP_TTL, SOL_IPV6, IPV6_UNICAST_HOPS},
    {INET_IP, IP_REUSEADDR, K_BOOL, SOL_SOCKET, SO_REUSEADDR, SOL_SOCKET, SO_REUSEADDR},
    {INET_IP, IP_DONTROUTE, K_BOOL, SOL_SOCKET, SO_DONTROUTE, SOL_SOCKET, SO_DONTROUTE},
    {INET_TCP, TCP_NODELAY, K_BOOL, SOL_TCP, TCP_NODELAY, SOL_TCP, TCP_NODELAY},
    {INET_TCP, TCP_MAXSEG, K_RDONLY, SOL_TCP, TCP_MAXSEG, SOL_TCP, TCP_MAXSEG},
    {INET_TCP, TCP_KEEPALIVE, K_KPALIVE, SOL_SOCKET, SO_KEEPALIVE, SOL_SOCKET, SO_KEEPALIVE},
};
#define TCP_TTL 7 /* index of IP_TTL */

/* An option value: scalars in a; the structures' two fields in a, b. */
struct tcp_val {
    long a, b;
};

static struct tcp_val tcp_defval[TCP_NOPTS]; /* XTI values of a fresh IPv4 socket */
static pthread_once_t tcp_defonce = PTHREAD_ONCE_INIT;

static int tcp_isstruct(int i)
{
    return tcp_opts[i].kind == K_LINGER || tcp_opts[i].kind == K_KPALIVE;
}

/* Whether option i is read-only here. */
static int tcp_readonly(int i)
{
    return tcp_opts[i].kind == K_RDONLY ||
           (tcp_opts[i].kind == K_SNDLOWAT && inet_sndlowat_readonly());
}

/* The XTI value of option i on fd (family) into *v; 0, or -1 if unreadable. */
static int tcp_sockget(int i, int fd, int family, struct tcp_val *v)
{
    const struct tcp_optdef *d = &tcp_opts[i];
    int lvl = family == AF_INET6 ? d->lvl6 : d->lvl4;
    int opt = family == AF_INET6 ? d->opt6 : d->opt4;
    int x = 0;
    socklen_t len = sizeof(x);

    v->a = v->b = 0;
    if (d->kind == K_DEBUG)
        return -1; /* kept here, not a socket option */
    if (d->kind == K_LINGER) {
        struct linger l;
        len = sizeof(l);
        if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) < 0)
            return -1;
        v->a = l.l_onoff ? T_YES : T_NO;
        v->b = l.l_linger;
        return 0;
    }
    if (getsockopt(fd, lvl, opt, &x, &len) < 0)
        return -1;
    if (d->kind == K_KPALIVE) {
        int idle = 0;
        len = sizeof(idle);
        v->a = x ? T_YES : T_NO;
        if (getsockopt(fd, SOL_TCP, TCP_KEEPIDLE, &idle, &len) < 0)
            return -1;
        v->b = (idle + 59) / 60;
        return 0;
    }
    v->a = d->kind == K_BUF ? x / 2 : d->kind == K_BOOL ? (x ? T_YES : T_NO) : x;
    return 0;
}

/* Set option i on fd to *v; 0 or errno. */
static int tcp_sockset(int i, int fd, int family, const struct tcp_val *v)
{
    const struct tcp_optdef *d = &tcp_opts[i];
    int lvl = family == AF_INET6 ? d->lvl6 : d->lvl4;
    int opt = family == AF_INET6 ? d->opt6 : d->opt4;
    int x;

    if (d->kind == K_LINGER) {
        struct linger l = {.l_onoff = v->a == T_YES, .l_linger = 0};
        if (v->a == T_YES)
            l.l_linger = v->b == T_UNSPEC     ? TCP_LINGER_DEF
                         : v->b == T_INFINITE ? INT_MAX
                                              : (int)v->b;
        return setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0 ? errno : 0;
    }
    if (d->kind == K_KPALIVE) {
        x = v->a != T_NO;
        if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &x, sizeof(x)) < 0)
            return errno;
        if (v->b != T_UNSPEC) {
            x = (int)v->b * 60;
            if (setsockopt(fd, SOL_TCP, TCP_KEEPIDLE, &x, sizeof(x)) < 0)
                return errno;
        }
        return 0;
    }
    if (d->kind == K_RDONLY)
        return EPERM;
    if (d->kind == K_DEBUG)
        return 0; /* kept here */
    x = d->kind == K_BOOL ? (v->a == T_YES) : (int)v->a;
    return setsockopt(fd, lvl, opt, &x, sizeof(x)) < 0 ? errno : 0;
}

static void tcp_defaults(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    for (int i = 0; i < TCP_NOPTS; i++)
        if (fd < 0 || tcp_sockget(i, fd, AF_INET, &tcp_defval[i]) < 0)
            tcp_defval[i].a = tcp_defval[i].b = 0;
    if (tcp_defval[TCP_TTL].a <= 0)
        tcp_defval[TCP_TTL].a = 64;
    if (fd >= 0)
        close(fd);
}

static struct tcp_val tcp_default(int i)
{
    pthread_once(&tcp_defonce, tcp_defaults);
    return tcp_defval[i];
}

/* The status of negotiating v for option i before trying it: T_SUCCESS,
 * T_PARTSUCCESS (taken in a reduced form), T_FAILURE, T_READONLY. */
static t_uscalar_t tcp_check(int i, const struct tcp_val *v)
{
    switch (tcp_opts[i].kind) {
    case K_BUF:
    case K_LOWAT:
    case K_SNDLOWAT:
        return v->a > 0 && v->a <= INT_MAX ? T_SUCCESS : T_FAILURE;
    case K_DEBUG:
        return v->a >= 0 && v->a <= (long)UINT32_MAX ? T_SUCCESS : T_FAILURE;
    case K_UCHAR:
        return v->a >= (tcp_opts[i].name == IP_TTL ? 1 : 0) && v->a <= 255 ? T_SUCCESS
                                                                           : T_FAILURE;
    case K_BOOL:
        return v->a == T_YES || v->a == T_NO ? T_SUCCESS : T_FAILURE;
    case K_RDONLY:
        return T_READONLY;
    case K_LINGER:
        return tl_linger_check(v->a, v->b);
    default: /* K_KPALIVE */
        if (v->a != T_YES && v->a != T_NO && v->a != T_GARBAGE)
            return T_FAILURE;
        if (v->b != T_UNSPEC && (v->b <= 0 || v->b > INT_MAX / 60))
            return T_FAILURE;
        return v->a == T_GARBAGE ? T_PARTSUCCESS : T_SUCCESS;
    }
}

void tcp_opt_apply(struct tcp_ep *ep, int fd, int family)
{
    struct tcp_optv o[TCP_NOPTS];

    pthread_mutex_lock(&ep->lk);
    memcpy(o, ep->opt, sizeof(o));
    pthread_mutex_unlock(&ep->lk);
    for (int i = 0; i < TCP_NOPTS; i++) {
        struct tcp_val v = {o[i].a, o[i].b};
        if (o[i].set)
            tcp_sockset(i, fd, family, &v);
    }
}

static int tcp_optfind(t_uscalar_t level, t_uscalar_t name)
{
    for (int i = 0; i < TCP_NOPTS; i++)
        if (tcp_opts[i].level == level && tcp_opts[i].name == name)
            return i;
    return -1;
}

/* Append option i with value v; vlen the size of a scalar (0: XNS size). */
static void tcp_optout(mblk_t *bp, int i, t_uscalar_t status, const struct tcp_val *v, size_t vlen,
                       t_uscalar_t *worst)
{
    unsigned char val[2 * sizeof(long)];

    if (tcp_isstruct(i)) {
        t_scalar_t s[2] = {(t_scalar_t)v->a, (t_scalar_t)v->b};
        memcpy(val, s, sizeof(s));
        vlen = sizeof(s);
    } else {
        if (vlen == 0)
            vlen = tcp_opts[i].kind == K_UCHAR ? 1 : sizeof(t_uscalar_t);
        inet_optval_put(val, v->a, vlen);
    }
    tl_optput(bp, tcp_opts[i].level, tcp_opts[i].name, status, val, vlen, worst);
}

/* The current value of option i: the socket's, the stored one, the default. */
static struct tcp_val tcp_current(struct tcp_ep *ep, int i, int fd, int family)
{
    struct tcp_val v;

    if (fd >= 0 && tcp_sockget(i, fd, family, &v) == 0)
        return v;
    pthread_mutex_lock(&ep->lk);
    v.a = ep->opt[i].a;
    v.b = ep->opt[i].b;
    if (!ep->opt[i].set)
        v = tcp_default(i);
    pthread_mutex_unlock(&ep->lk);
    return v;
}

/* What the kernel grants for size option i asked *v (status st) while
 * there is no socket: tried on a scratch socket (the limits are the same).
 * The status, *got the value granted. */
static t_uscalar_t tcp_probe(int i, const struct tcp_val *v, t_uscalar_t st, struct tcp_val *got)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return st; /* cannot tell: taken as asked, set on the socket */
    if (tcp_sockset(i, fd, AF_INET, v) == 0 && tcp_sockget(i, fd, AF_INET, got) == 0 &&
        got->a != v->a)
        st = T_PARTSUCCESS;
    else
        *got = *v;
    close(fd);
    return st;
}

/* Negotiate option i to v (checked legal: status st, T_SUCCESS or
 * T_PARTSUCCESS); the status, *got the value in effect (as given when
 * T_FAILURE). */
static t_uscalar_t tcp_negotiate(struct tcp_ep *ep, int i, struct tcp_val v, t_uscalar_t st,
                                 int fd, int family, struct tcp_val *got)
{
    int err;

    *got = v;
    if (tcp_opts[i].kind == K_KPALIVE && v.a == T_GARBAGE)
        got->a = v.a = T_YES;
    if (fd < 0 && (tcp_opts[i].kind == K_BUF || tcp_opts[i].kind == K_LOWAT))
        st = tcp_probe(i, &v, st, got); /* the value granted is the one kept */
    pthread_mutex_lock(&ep->lk); /* kept for the next socket too */
    ep->opt[i].set = 1;
    ep->opt[i].a = st == T_PARTSUCCESS && fd < 0 ? got->a : v.a;
    ep->opt[i].b = v.b;
    pthread_mutex_unlock(&ep->lk);
    if (fd < 0)
        return st;
    err = tcp_sockset(i, fd, family, &v);
    if (err != 0)
        return T_FAILURE;
    switch (tcp_opts[i].kind) {
    case K_BUF: /* the kernel may grant less or more (or round) */
    case K_LOWAT:
    case K_SNDLOWAT:
        *got = tcp_current(ep, i, fd, family);
        return got->a == v.a ? st : T_PARTSUCCESS;
    default:
        return st;
    }
}

/*
 * T_NEGOTIATE (check 0) or T_CHECK (check 1) of value v for option i; the
 * status, *got the value to return.  A read-only option set to the value
 * it has is T_SUCCESS, to another T_READONLY (value as given).
 */
static t_uscalar_t tcp_setval(struct tcp_ep *ep, int i, const struct tcp_val *v, int check,
                              int fd, int family, struct tcp_val *got)
{
    t_uscalar_t st;

    *got = *v;
    if (tcp_readonly(i))
        return tcp_current(ep, i, fd, family).a == v->a ? T_SUCCESS : T_READONLY;
    st = tcp_check(i, v);
    if (st == T_FAILURE || check)
        return st;
    return tcp_negotiate(ep, i, *v, st, fd, family, got);
}

/* T_NEGOTIATE of option i to its default (header alone, T_ALLOPT). */
static t_uscalar_t tcp_reset(struct tcp_ep *ep, int i, int fd, int family, struct tcp_val *got)
{
    struct tcp_val d = tcp_default(i);

    if (tcp_readonly(i)) {
        *got = tcp_current(ep, i, fd, family);
        return got->a == d.a ? T_SUCCESS : T_READONLY;
    }
    return tcp_setval(ep, i, &d, 0, fd, family, got);
}

/* The status of option i for T_CHECK of a header alone, T_CURRENT, T_DEFAULT. */
static t_uscalar_t tcp_support(int i)
{
    return tcp_readonly(i) ? T_READONLY : T_SUCCESS;
}

/* Every option of level (T_ALLOPT) or all (level ~0): current, default, or
 * reset to the default. */
static void tcp_optall(struct tcp_ep *ep, t_uscalar_t level, t_scalar_t flags, int fd, int family,
                       mblk_t *bp, t_uscalar_t *worst)
{
    for (int i = 0; i < TCP_NOPTS; i++) {
        struct tcp_val v;
        t_uscalar_t st = tcp_support(i);
        if (level != (t_uscalar_t)~0u && tcp_opts[i].level != level)
            continue;
        if (flags == T_DEFAULT)
            v = tcp_default(i);
        else if (flags == T_CURRENT)
            v = tcp_current(ep, i, fd, family);
        else
            st = tcp_reset(ep, i, fd, family, &v);
        tcp_optout(bp, i, st, &v, 0, worst);
    }
}

/* The value of a request's option i (vlen bytes at vp); 0 or TBADOPT. */
static int tcp_optval(int i, const unsigned char *vp, size_t vlen, struct tcp_val *v)
{
    v->a = v->b = 0;
    if (tcp_isstruct(i)) {
        t_scalar_t s[2];
        if (vlen != sizeof(s))
            return TBADOPT;
        memcpy(s, vp, sizeof(s));
        v->a = s[0];
        v->b = s[1];
    } else if (inet_optval_get(vp, vlen, &v->a) != 0) {
        return TBADOPT;
    }
    return 0;
}

/* Walk the request's list (checked well formed) into bp; 0 or TBADOPT. */
static int tcp_optwalk(struct tcp_ep *ep, const unsigned char *p, size_t len, t_scalar_t flags,
                       int fd, int family, mblk_t *bp, t_uscalar_t *worst)
{
    size_t at = 0;

    if (len == 0 && (flags == T_DEFAULT || flags == T_CURRENT)) {
        tcp_optall(ep, ~0u, flags, fd, family, bp, worst);
        return 0;
    }
    while (at < len) {
        struct T_opthdr oh;
        size_t vlen;
        int i;
        memcpy(&oh, p + at, sizeof(oh));
        vlen = oh.len - sizeof(oh);
        i = tcp_optfind(oh.level, oh.name);
        int echo = flags == T_NEGOTIATE || flags == T_CHECK;
        if (oh.name == T_ALLOPT && flags == T_CHECK) {
            return TBADOPT; /* T_ALLOPT: T_NEGOTIATE, T_DEFAULT, T_CURRENT only */
        } else if (oh.name == T_ALLOPT &&
                   (oh.level == XTI_GENERIC || oh.level == INET_IP || oh.level == INET_TCP)) {
            tcp_optall(ep, oh.level, flags, fd, family, bp, worst);
        } else if (i < 0) {
            /* unknown level or name: T_NEGOTIATE/T_CHECK echo the value given */
            tl_optput(bp, oh.level, oh.name, T_NOTSUPPORT, echo ? p + at + sizeof(oh) : NULL,
                      echo ? vlen : 0, worst);
        } else if (vlen == 0 && flags == T_CHECK) {
            /* a header alone: is the option supported, read-only (no value) */
            tl_optput(bp, oh.level, oh.name, tcp_support(i), NULL, 0, worst);
        } else if (vlen == 0 && flags == T_NEGOTIATE) {
            /* T_NEGOTIATE of a header alone: the default value */
            struct tcp_val got;
            t_uscalar_t st = tcp_reset(ep, i, fd, family, &got);
            tcp_optout(bp, i, st, &got, 0, worst);
        } else if (flags == T_DEFAULT || flags == T_CURRENT) {
            struct tcp_val v =
                flags == T_DEFAULT ? tcp_default(i) : tcp_current(ep, i, fd, family);
            tcp_optout(bp, i, tcp_support(i), &v, 0, worst);
        } else {
            struct tcp_val v, got;
            if (tcp_optval(i, p + at + sizeof(oh), vlen, &v) != 0)
                return TBADOPT;
            t_uscalar_t st = tcp_setval(ep, i, &v, flags == T_CHECK, fd, family, &got);
            tcp_optout(bp, i, st, &got, vlen, worst);
        }
        at += _TPI_ALIGN_TOPT(oh.len);
    }
    return 0;
}

/* T_OPTMGMT_REQ, any state: see the top of the file. */
void tcp_optmgmt_req(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr;
    struct T_optmgmt_req r;
    struct T_optmgmt_ack *oa;
    t_uscalar_t worst = T_SUCCESS;
    size_t room;
    int fd, family, err;
    mblk_t *bp;

    if (tl_optmgmt_check(q, mp, TCP_OPT_MAX, &r) != 0)
        return;
    room = ((size_t)r.OPT_length / sizeof(struct T_opthdr) + 1) * TCP_NOPTS *
           (sizeof(struct T_opthdr) + 2 * sizeof(long));
    bp = tl_prim(NULL, M_PCPROTO, sizeof(*oa), room);
    if (bp == NULL) {
        tl_error_ack(q, mp, T_OPTMGMT_REQ, TSYSERR, ENOSR);
        return;
    }
    fd = tcp_io_get(ep);
    pthread_mutex_lock(&ep->lk);
    family = ep->family != 0 ? ep->family : AF_INET;
    pthread_mutex_unlock(&ep->lk);
    err = tcp_optwalk(ep, mp->b_rptr + r.OPT_offset, (size_t)r.OPT_length, r.MGMT_flags, fd,
                      family, bp, &worst);
    if (fd >= 0)
        tcp_io_put(ep);
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
    qreply(q, bp);
}
