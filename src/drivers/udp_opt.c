/* SPDX-License-Identifier: MIT */
/*
 * udp_opt.c -- T_OPTMGMT_REQ of the udp provider (and of rawip, which is
 * the same provider): XTI options mapped onto the endpoint's socket options
 * or kept by the provider (XNS 5 t_optmgmt, "Use of Options", Internet
 * appendix).
 *
 *   level        name          value                  where
 *   XTI_GENERIC  XTI_DEBUG     t_uscalar_t flags      kept per endpoint (no effect)
 *   XTI_GENERIC  XTI_LINGER    struct t_linger        kept per endpoint (no effect)
 *   XTI_GENERIC  XTI_RCVBUF    t_uscalar_t bytes      SO_RCVBUF
 *   XTI_GENERIC  XTI_RCVLOWAT  t_uscalar_t bytes      SO_RCVLOWAT
 *   XTI_GENERIC  XTI_SNDBUF    t_uscalar_t bytes      SO_SNDBUF
 *   XTI_GENERIC  XTI_SNDLOWAT  t_uscalar_t bytes      SO_SNDLOWAT (read-only on Linux)
 *   INET_IP      IP_TOS        unsigned char          IP_TOS / IPV6_TCLASS
 *   INET_IP      IP_TTL        unsigned char          IP_TTL / IPV6_UNICAST_HOPS
 *   INET_IP      IP_REUSEADDR  unsigned int T_YES/NO  SO_REUSEADDR
 *   INET_IP      IP_BROADCAST  unsigned int T_YES/NO  SO_BROADCAST
 *   INET_IP      IP_DONTROUTE  unsigned int T_YES/NO  SO_DONTROUTE
 *   INET_UDP     UDP_CHECKSUM  t_uscalar_t T_YES/NO   !SO_NO_CHECK (IPv4 only)
 *
 * A scalar value may be given as 1, 4 or sizeof(long) bytes (programs in
 * the field write a long); T_NEGOTIATE and T_CHECK answer in the size
 * given, T_CURRENT and T_DEFAULT in the XNS size (unsigned char for IP_TOS
 * and IP_TTL, 4 bytes otherwise).  XTI_LINGER is exactly a struct t_linger.
 * Buffer sizes are reported as Linux grants them, halved (the kernel
 * doubles what it is given for its bookkeeping: the halved value is what
 * was asked for when granted): more or less than asked is T_PARTSUCCESS.
 * The low-water marks are reported as the kernel has them.  XTI_DEBUG
 * takes any value (header alone: 0, debugging off, XNS 5).  XTI_LINGER:
 * l_onoff T_YES/T_NO, l_linger >= 0, T_UNSPEC (taken as 0) or T_INFINITE;
 * a datagram endpoint has nothing to linger for (each datagram is handed
 * to the kernel when sent; those flow control holds at close are dropped,
 * as UDP's close does), so it is kept, not acted on.  Statuses as XNS 5:
 * an illegal value (0 for a size, a linger out of range, a boolean not
 * T_YES/T_NO) is T_FAILURE; T_FAILURE, T_READONLY and T_NOTSUPPORT return
 * the value as given.  A read-only option (XTI_SNDLOWAT when the kernel
 * refuses SO_SNDLOWAT, inet_sndlowat_readonly) is T_READONLY for T_CHECK
 * of a header alone, T_CURRENT and T_DEFAULT (with its value), and for
 * T_NEGOTIATE / T_CHECK of a value other than the one it has (that value
 * is T_SUCCESS: nothing to modify).  UDP_CHECKSUM on IPv6 or rawip is
 * T_NOTSUPPORT.  Before T_BIND_REQ there is no socket: negotiated values
 * are stored and set on the socket at bind (before bind(2), so
 * IP_REUSEADDR works), T_CURRENT reports them.  T_ALLOPT: all options of
 * its level (T_DEFAULT, T_CURRENT), reset to defaults (T_NEGOTIATE),
 * TBADOPT (T_CHECK); an empty list with T_DEFAULT or T_CURRENT is every
 * option.  Other options: T_NOTSUPPORT.  Errors and MGMT_flags of the ack
 * as tl_opt.c (TBADFLAG, TBADOPT, worst status).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <unistd.h>
#include <xti.h>

#include "tl.h"
#include "udp.h"

/* Kinds: K_DEBUG and K_LINGER are kept here, the others are socket options. */
enum { K_BUF, K_LOWAT, K_SNDLOWAT, K_UCHAR, K_BOOL, K_CSUM, K_DEBUG, K_LINGER };

static const struct udp_optdef {
    t_uscalar_t level, name;
    int kind;
    int lvl4, opt4, lvl6, opt6; /* socket option for AF_INET, AF_INET6 (lvl -1: none) */
} udp_opts[UDP_NOPTS] = {
    {XTI_GENERIC, XTI_DEBUG, K_DEBUG, -1, 0, -1, 0},
    {XTI_GENERIC, XTI_LINGER, K_LINGER, -1, 0, -1, 0},
    {XTI_GENERIC, XTI_RCVBUF, K_BUF, SOL_SOCKET, SO_RCVBUF, SOL_SOCKET, SO_RCVBUF},
    {XTI_GENERIC, XTI_RCVLOWAT, K_LOWAT, SOL_SOCKET, SO_RCVLOWAT, SOL_SOCKET, SO_RCVLOWAT},
    {XTI_GENERIC, XTI_SNDBUF, K_BUF, SOL_SOCKET, SO_SNDBUF, SOL_SOCKET, SO_SNDBUF},
    {XTI_GENERIC, XTI_SNDLOWAT, K_SNDLOWAT, SOL_SOCKET, SO_SNDLOWAT, SOL_SOCKET, SO_SNDLOWAT},
    {INET_IP, IP_TOS, K_UCHAR, SOL_IP, IP_TOS, SOL_IPV6, IPV6_TCLASS},
    {INET_IP, IP_TTL, K_UCHAR, SOL_IP, IP_TTL, SOL_IPV6, IPV6_UNICAST_HOPS},
    {INET_IP, IP_REUSEADDR, K_BOOL, SOL_SOCKET, SO_REUSEADDR, SOL_SOCKET, SO_REUSEADDR},
    {INET_IP, IP_BROADCAST, K_BOOL, SOL_SOCKET, SO_BROADCAST, SOL_SOCKET, SO_BROADCAST},
    {INET_IP, IP_DONTROUTE, K_BOOL, SOL_SOCKET, SO_DONTROUTE, SOL_SOCKET, SO_DONTROUTE},
    {INET_UDP, UDP_CHECKSUM, K_CSUM, SOL_SOCKET, SO_NO_CHECK, -1, 0},
};
#define UDP_TTL 7 /* index of IP_TTL */

/* An option value: scalars in a; XTI_LINGER's l_onoff, l_linger in a, b. */
struct udp_val {
    long a, b;
};

static struct udp_val udp_defval[UDP_NOPTS]; /* XTI values of a fresh IPv4 socket */
static pthread_once_t udp_defonce = PTHREAD_ONCE_INIT;

static int udp_kept(int i)
{
    return udp_opts[i].kind == K_DEBUG || udp_opts[i].kind == K_LINGER;
}

/* Whether option i is read-only here. */
static int udp_readonly(int i)
{
    return udp_opts[i].kind == K_SNDLOWAT && inet_sndlowat_readonly();
}

/* The XTI value of socket option i on fd (family) into *v; 0, or -1 if it
 * cannot be read (or is kept here). */
static int udp_sockget(int i, int fd, int family, struct udp_val *v)
{
    const struct udp_optdef *d = &udp_opts[i];
    int lvl = family == AF_INET6 ? d->lvl6 : d->lvl4;
    int x = 0;
    socklen_t len = sizeof(x);

    v->a = v->b = 0;
    if (lvl < 0)
        return -1;
    if (getsockopt(fd, lvl, family == AF_INET6 ? d->opt6 : d->opt4, &x, &len) < 0)
        return -1;
    v->a = d->kind == K_BUF    ? x / 2
           : d->kind == K_CSUM ? (x ? T_NO : T_YES)
           : d->kind == K_BOOL ? (x ? T_YES : T_NO)
                               : x;
    return 0;
}

/* Set socket option i on fd to the XTI value v; 0 or errno. */
static int udp_sockset(int i, int fd, int family, long v)
{
    const struct udp_optdef *d = &udp_opts[i];
    int lvl = family == AF_INET6 ? d->lvl6 : d->lvl4;
    int sv = d->kind == K_CSUM ? (v == T_NO) : d->kind == K_BOOL ? (v == T_YES) : (int)v;

    if (lvl < 0)
        return EOPNOTSUPP;
    if (setsockopt(fd, lvl, family == AF_INET6 ? d->opt6 : d->opt4, &sv, sizeof(sv)) < 0)
        return errno;
    return 0;
}

static void udp_defaults(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    for (int i = 0; i < UDP_NOPTS; i++)
        if (fd < 0 || udp_sockget(i, fd, AF_INET, &udp_defval[i]) < 0)
            udp_defval[i].a = udp_defval[i].b = 0; /* XTI_DEBUG 0, XTI_LINGER {T_NO, 0} */
    if (udp_defval[UDP_TTL].a <= 0)
        udp_defval[UDP_TTL].a = 64;
    if (fd >= 0)
        close(fd);
}

static struct udp_val udp_default(int i)
{
    pthread_once(&udp_defonce, udp_defaults);
    return udp_defval[i];
}

/* Whether v is a value option i may take (XNS 5's legal values). */
static int udp_valid(int i, const struct udp_val *v)
{
    switch (udp_opts[i].kind) {
    case K_BUF:
    case K_LOWAT:
    case K_SNDLOWAT:
        return v->a > 0 && v->a <= INT_MAX;
    case K_UCHAR:
        return v->a >= (udp_opts[i].name == IP_TTL ? 1 : 0) && v->a <= 255;
    case K_DEBUG:
        return v->a >= 0 && v->a <= (long)UINT32_MAX;
    case K_LINGER:
        return tl_linger_check(v->a, v->b) == T_SUCCESS;
    default:
        return v->a == T_YES || v->a == T_NO;
    }
}

/*
 * The GRO keeper: one UDP socket of the process with UDP_GRO on, made before
 * the first endpoint's and never closed.  Turning UDP_GRO on raises a kernel
 * static key (udp_encap_needed_key, and the IPv6 one for an AF_INET6
 * socket) and closing the last such socket lowers it; each change patches
 * the kernel's text with a call on every CPU (~120 us here), which made
 * t_open + t_bind + t_close of /dev/udp cost 145 us instead of 23.  With the
 * keeper holding the key the endpoints' own changes are counter steps.  One
 * descriptor for the process's life (CLOEXEC; a fork child shares it); when
 * it cannot be made (EMFILE, no IPv6) an AF_INET one is tried, then none:
 * only the cost comes back.  Never read, written or closed by the library,
 * so a program that closes it behind our back loses nothing.
 */
static pthread_once_t udp_gro_once = PTHREAD_ONCE_INIT;

static void udp_gro_keeper(void)
{
    static const int families[] = {AF_INET6, AF_INET};
    int on = 1;
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        int s = socket(families[i], SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            continue;
        if (setsockopt(s, SOL_UDP, UDP_GRO, &on, sizeof(on)) == 0)
            return; /* kept */
        close(s);
    }
}

void udp_opt_apply(struct udp_ep *ep, int fd, int family)
{
    for (int i = 0; i < UDP_NOPTS; i++)
        if (ep->opt[i].set && !udp_kept(i))
            udp_sockset(i, fd, family, ep->opt[i].a);
    /* UDP_GRO (docs/TPI.md "GSO and GRO"): the kernel may hand a run of
     * datagrams of one source and size over as one buffer, which udp_rsrv
     * cuts back at the segment size; an older kernel without it refuses
     * the option, and then nothing changes. */
    if (ep->kind->type == SOCK_DGRAM) {
        int on = 1;
        pthread_once(&udp_gro_once, udp_gro_keeper);
        (void)setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on));
    }
}

static int udp_optfind(t_uscalar_t level, t_uscalar_t name)
{
    for (int i = 0; i < UDP_NOPTS; i++)
        if (udp_opts[i].level == level && udp_opts[i].name == name)
            return i;
    return -1;
}

/* Append option i with value v; vlen the size of a scalar (0: the XNS size). */
static void udp_optout(mblk_t *bp, int i, t_uscalar_t status, const struct udp_val *v,
                       size_t vlen, t_uscalar_t *worst)
{
    unsigned char val[sizeof(struct t_linger) > sizeof(long) ? sizeof(struct t_linger)
                                                             : sizeof(long)];

    if (udp_opts[i].kind == K_LINGER) {
        struct t_linger l = {.l_onoff = (t_scalar_t)v->a, .l_linger = (t_scalar_t)v->b};
        memcpy(val, &l, sizeof(l));
        vlen = sizeof(l);
    } else {
        if (vlen == 0)
            vlen = udp_opts[i].kind == K_UCHAR ? 1 : sizeof(t_uscalar_t);
        inet_optval_put(val, v->a, vlen);
    }
    tl_optput(bp, udp_opts[i].level, udp_opts[i].name, status, val, vlen, worst);
}

/* The current value of option i: the socket's, the stored one, the default. */
static struct udp_val udp_current(struct udp_ep *ep, int i, int fd, int family)
{
    struct udp_val v;

    if (fd >= 0 && !udp_kept(i) && udp_sockget(i, fd, family, &v) == 0)
        return v;
    pthread_mutex_lock(&ep->lk);
    v.a = ep->opt[i].a;
    v.b = ep->opt[i].b;
    if (!ep->opt[i].set)
        v = udp_default(i);
    pthread_mutex_unlock(&ep->lk);
    return v;
}

/* What the kernel grants for size option i asked v while there is no
 * socket yet: tried on a scratch socket (the limits are the same).  The
 * status, *got the value granted. */
static t_uscalar_t udp_probe(int i, long v, struct udp_val *got)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    t_uscalar_t st = T_SUCCESS;

    if (fd < 0)
        return T_SUCCESS; /* cannot tell: taken as asked, set at bind */
    if (udp_sockset(i, fd, AF_INET, v) == 0 && udp_sockget(i, fd, AF_INET, got) == 0 &&
        got->a != v)
        st = T_PARTSUCCESS;
    got->b = 0;
    if (st == T_SUCCESS)
        got->a = v;
    close(fd);
    return st;
}

/* Negotiate option i to v (legal, not read-only); the status, *got the
 * value in effect (as given when T_FAILURE). */
static t_uscalar_t udp_negotiate(struct udp_ep *ep, int i, struct udp_val v, int fd, int family,
                                 struct udp_val *got)
{
    int err;

    *got = v; /* T_SUCCESS: the value as given (XNS 5) */
    if (udp_opts[i].kind == K_LINGER && v.b == T_UNSPEC)
        v.b = 0; /* the default linger time */
    if (fd < 0 || udp_kept(i)) {
        t_uscalar_t st = T_SUCCESS;
        if (fd < 0 && (udp_opts[i].kind == K_BUF || udp_opts[i].kind == K_LOWAT))
            st = udp_probe(i, v.a, got); /* the value granted is the one kept */
        pthread_mutex_lock(&ep->lk);
        ep->opt[i].set = 1;
        ep->opt[i].a = st == T_PARTSUCCESS ? got->a : v.a;
        ep->opt[i].b = v.b;
        pthread_mutex_unlock(&ep->lk);
        return st;
    }
    err = udp_sockset(i, fd, family, v.a);
    if (err == EOPNOTSUPP)
        return T_NOTSUPPORT;
    if (err != 0)
        return T_FAILURE;
    *got = udp_current(ep, i, fd, family);
    return got->a == v.a ? T_SUCCESS : T_PARTSUCCESS;
}

/* Whether option i applies here: T_SUCCESS, T_READONLY, or T_NOTSUPPORT
 * (UDP_CHECKSUM on IPv6, always checksummed, and on rawip). */
static t_uscalar_t udp_support(const struct udp_ep *ep, int i, int family, int fd)
{
    if (udp_opts[i].kind == K_CSUM &&
        (ep->kind->type == SOCK_RAW || (family == AF_INET6 && fd >= 0)))
        return T_NOTSUPPORT;
    return udp_readonly(i) ? T_READONLY : T_SUCCESS;
}

/*
 * T_NEGOTIATE (check 0) or T_CHECK (check 1) of value v for option i; the
 * status, *got the value to return.  A read-only option set to the value
 * it has is T_SUCCESS, to another T_READONLY (value as given).
 */
static t_uscalar_t udp_setval(struct udp_ep *ep, int i, const struct udp_val *v, int check,
                              int fd, int family, struct udp_val *got)
{
    t_uscalar_t st = udp_support(ep, i, family, fd);

    *got = *v;
    if (st == T_READONLY)
        return udp_current(ep, i, fd, family).a == v->a ? T_SUCCESS : T_READONLY;
    if (st != T_SUCCESS)
        return st;
    if (!udp_valid(i, v))
        return T_FAILURE;
    if (check)
        return T_SUCCESS;
    return udp_negotiate(ep, i, *v, fd, family, got);
}

/* T_NEGOTIATE of option i to its default (header alone, T_ALLOPT). */
static t_uscalar_t udp_reset(struct udp_ep *ep, int i, int fd, int family, struct udp_val *got)
{
    struct udp_val d = udp_default(i);

    if (udp_readonly(i)) {
        *got = udp_current(ep, i, fd, family);
        return got->a == d.a ? T_SUCCESS : T_READONLY;
    }
    return udp_setval(ep, i, &d, 0, fd, family, got);
}

/* Every option of level (T_ALLOPT) or all (level ~0): current, default or
 * reset to the default. */
static void udp_optall(struct udp_ep *ep, t_uscalar_t level, t_scalar_t flags, int fd, int family,
                       mblk_t *bp, t_uscalar_t *worst)
{
    for (int i = 0; i < UDP_NOPTS; i++) {
        struct udp_val v;
        t_uscalar_t st = udp_support(ep, i, family, fd);
        if (level != (t_uscalar_t)~0u && udp_opts[i].level != level)
            continue;
        if (flags == T_DEFAULT)
            v = udp_default(i);
        else if (flags == T_CURRENT || st == T_NOTSUPPORT)
            v = udp_current(ep, i, fd, family);
        else
            st = udp_reset(ep, i, fd, family, &v);
        udp_optout(bp, i, st, &v, 0, worst);
    }
}

/* The value of a request's option i (vlen bytes at vp); 0 or TBADOPT. */
static int udp_optval(int i, const unsigned char *vp, size_t vlen, struct udp_val *v)
{
    v->a = v->b = 0;
    if (udp_opts[i].kind == K_LINGER) {
        struct t_linger l;
        if (vlen != sizeof(l))
            return TBADOPT;
        memcpy(&l, vp, sizeof(l));
        v->a = l.l_onoff;
        v->b = l.l_linger;
        return 0;
    }
    return inet_optval_get(vp, vlen, &v->a) != 0 ? TBADOPT : 0;
}

/* Walk the request's list (checked well formed) into bp; 0 or TBADOPT. */
static int udp_optwalk(struct udp_ep *ep, const unsigned char *p, size_t len, t_scalar_t flags,
                       int fd, int family, mblk_t *bp, t_uscalar_t *worst)
{
    size_t at = 0;

    if (len == 0 && (flags == T_DEFAULT || flags == T_CURRENT)) {
        udp_optall(ep, ~0u, flags, fd, family, bp, worst);
        return 0;
    }
    while (at < len) {
        struct T_opthdr oh;
        size_t vlen;
        int i;
        memcpy(&oh, p + at, sizeof(oh));
        vlen = oh.len - sizeof(oh);
        i = udp_optfind(oh.level, oh.name);
        int echo = flags == T_NEGOTIATE || flags == T_CHECK;
        if (oh.name == T_ALLOPT && flags == T_CHECK) {
            return TBADOPT; /* T_ALLOPT: T_NEGOTIATE, T_DEFAULT, T_CURRENT only */
        } else if (oh.name == T_ALLOPT &&
                   (oh.level == XTI_GENERIC || oh.level == INET_IP || oh.level == INET_UDP)) {
            udp_optall(ep, oh.level, flags, fd, family, bp, worst);
        } else if (i < 0) {
            /* unknown level or name: T_NEGOTIATE/T_CHECK echo the value given */
            tl_optput(bp, oh.level, oh.name, T_NOTSUPPORT, echo ? p + at + sizeof(oh) : NULL,
                      echo ? vlen : 0, worst);
        } else if (vlen == 0 && flags == T_CHECK) {
            /* a header alone: is the option supported, read-only (no value) */
            tl_optput(bp, oh.level, oh.name, udp_support(ep, i, family, fd), NULL, 0, worst);
        } else if (vlen == 0 && flags == T_NEGOTIATE) {
            /* T_NEGOTIATE of a header alone: the default value */
            struct udp_val got;
            t_uscalar_t st = udp_reset(ep, i, fd, family, &got);
            udp_optout(bp, i, st, &got, 0, worst);
        } else if (flags == T_DEFAULT || flags == T_CURRENT) {
            struct udp_val v =
                flags == T_DEFAULT ? udp_default(i) : udp_current(ep, i, fd, family);
            udp_optout(bp, i, udp_support(ep, i, family, fd), &v, 0, worst);
        } else {
            struct udp_val v, got;
            if (udp_optval(i, p + at + sizeof(oh), vlen, &v) != 0)
                return TBADOPT;
            t_uscalar_t st = udp_setval(ep, i, &v, flags == T_CHECK, fd, family, &got);
            udp_optout(bp, i, st, &got, vlen, worst);
        }
        at += _TPI_ALIGN_TOPT(oh.len);
    }
    return 0;
}

/* T_OPTMGMT_REQ, any state: see the top of the file. */
void udp_optmgmt_req(queue_t *q, mblk_t *mp)
{
    struct udp_ep *ep = q->q_ptr;
    struct T_optmgmt_req r;
    struct T_optmgmt_ack *oa;
    t_uscalar_t worst = T_SUCCESS;
    size_t room;
    int fd, family, err;
    mblk_t *bp;

    if (tl_optmgmt_check(q, mp, UDP_OPT_MAX, &r) != 0)
        return;
    room = ((size_t)r.OPT_length / sizeof(struct T_opthdr) + 1) * UDP_NOPTS *
           (sizeof(struct T_opthdr) + sizeof(struct t_linger) + sizeof(long));
    bp = tl_prim(NULL, M_PCPROTO, sizeof(*oa), room);
    if (bp == NULL) {
        tl_error_ack(q, mp, T_OPTMGMT_REQ, TSYSERR, ENOSR);
        return;
    }
    fd = udp_io_get(ep);
    pthread_mutex_lock(&ep->lk);
    family = ep->family;
    pthread_mutex_unlock(&ep->lk);
    err = udp_optwalk(ep, mp->b_rptr + r.OPT_offset, (size_t)r.OPT_length, r.MGMT_flags, fd,
                      family, bp, &worst);
    if (fd >= 0)
        udp_io_put(ep);
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
