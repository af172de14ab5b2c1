/* SPDX-License-Identifier: MIT */
/*
 * udp_opt.c -- T_OPTMGMT_REQ of the udp provider: XTI options mapped onto
 * the endpoint's socket options (XNS 5, Internet appendix).
 *
 *   level        name          value                  socket option
 *   XTI_GENERIC  XTI_SNDBUF    t_uscalar_t bytes      SO_SNDBUF
 *   XTI_GENERIC  XTI_RCVBUF    t_uscalar_t bytes      SO_RCVBUF
 *   INET_IP      IP_TOS        unsigned char          IP_TOS / IPV6_TCLASS
 *   INET_IP      IP_TTL        unsigned char          IP_TTL / IPV6_UNICAST_HOPS
 *   INET_IP      IP_REUSEADDR  unsigned int T_YES/NO  SO_REUSEADDR
 *   INET_IP      IP_BROADCAST  unsigned int T_YES/NO  SO_BROADCAST
 *   INET_IP      IP_DONTROUTE  unsigned int T_YES/NO  SO_DONTROUTE
 *   INET_UDP     UDP_CHECKSUM  t_uscalar_t T_YES/NO   !SO_NO_CHECK (IPv4 only)
 *
 * A value may be given as 1, 4 or sizeof(long) bytes (programs in the field
 * write a long); T_NEGOTIATE and T_CHECK answer in the size given,
 * T_CURRENT and T_DEFAULT in the XNS size (unsigned char for IP_TOS and
 * IP_TTL, 4 bytes otherwise).  Buffer sizes are reported as Linux grants
 * them, halved (the kernel doubles what it is given for its bookkeeping):
 * less than asked is T_PARTSUCCESS.  A value out of range, or refused by
 * setsockopt, is T_FAILURE; UDP_CHECKSUM on IPv6 is T_NOTSUPPORT.  Before
 * T_BIND_REQ there is no socket: negotiated values are stored and set on the
 * socket at bind (before bind(2), so IP_REUSEADDR works), T_CURRENT reports
 * them.  T_ALLOPT: all options of its level (T_DEFAULT, T_CURRENT), reset to
 * defaults (T_NEGOTIATE), TBADOPT (T_CHECK); an empty list with T_DEFAULT or
 * T_CURRENT is every option.  Other options: T_NOTSUPPORT.  Errors and
 * MGMT_flags of the ack as tl_opt.c (TBADFLAG, TBADOPT, worst status).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <unistd.h>
#include <xti.h>

#include "tl.h"
#include "udp.h"

enum { K_BUF, K_UCHAR, K_BOOL, K_CSUM };

static const struct udp_optdef {
    t_uscalar_t level, name;
    int kind;
    int lvl4, opt4, lvl6, opt6; /* socket option for AF_INET, AF_INET6 (lvl6 -1: none) */
} udp_opts[UDP_NOPTS] = {
    {XTI_GENERIC, XTI_SNDBUF, K_BUF, SOL_SOCKET, SO_SNDBUF, SOL_SOCKET, SO_SNDBUF},
    {XTI_GENERIC, XTI_RCVBUF, K_BUF, SOL_SOCKET, SO_RCVBUF, SOL_SOCKET, SO_RCVBUF},
    {INET_IP, IP_TOS, K_UCHAR, SOL_IP, IP_TOS, SOL_IPV6, IPV6_TCLASS},
    {INET_IP, IP_TTL, K_UCHAR, SOL_IP, IP_TTL, SOL_IPV6, IPV6_UNICAST_HOPS},
    {INET_IP, IP_REUSEADDR, K_BOOL, SOL_SOCKET, SO_REUSEADDR, SOL_SOCKET, SO_REUSEADDR},
    {INET_IP, IP_BROADCAST, K_BOOL, SOL_SOCKET, SO_BROADCAST, SOL_SOCKET, SO_BROADCAST},
    {INET_IP, IP_DONTROUTE, K_BOOL, SOL_SOCKET, SO_DONTROUTE, SOL_SOCKET, SO_DONTROUTE},
    {INET_UDP, UDP_CHECKSUM, K_CSUM, SOL_SOCKET, SO_NO_CHECK, -1, 0},
};

static int udp_defval[UDP_NOPTS]; /* XTI values of a fresh IPv4 socket */
static pthread_once_t udp_defonce = PTHREAD_ONCE_INIT;

/* The XTI value of option i on fd (family); -1 if it cannot be read. */
static int udp_sockget(int i, int fd, int family)
{
    const struct udp_optdef *d = &udp_opts[i];
    int v = 0;
    socklen_t len = sizeof(v);

    if (family == AF_INET6 && d->lvl6 < 0)
        return -1;
    if (getsockopt(fd, family == AF_INET6 ? d->lvl6 : d->lvl4,
                   family == AF_INET6 ? d->opt6 : d->opt4, &v, &len) < 0)
        return -1;
    if (d->kind == K_BUF)
        return v / 2;
    if (d->kind == K_CSUM)
        return v ? T_NO : T_YES;
    if (d->kind == K_BOOL)
        return v ? T_YES : T_NO;
    return v;
}

/* Set option i on fd to the XTI value v; 0 or errno. */
static int udp_sockset(int i, int fd, int family, int v)
{
    const struct udp_optdef *d = &udp_opts[i];
    int sv = d->kind == K_CSUM ? (v == T_NO) : d->kind == K_BOOL ? (v == T_YES) : v;

    if (family == AF_INET6 && d->lvl6 < 0)
        return EOPNOTSUPP;
    if (setsockopt(fd, family == AF_INET6 ? d->lvl6 : d->lvl4,
                   family == AF_INET6 ? d->opt6 : d->opt4, &sv, sizeof(sv)) < 0)
        return errno;
    return 0;
}

static void udp_defaults(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    for (int i = 0; i < UDP_NOPTS; i++)
        udp_defval[i] = fd >= 0 ? udp_sockget(i, fd, AF_INET) : 0;
    if (udp_defval[3] <= 0)
        udp_defval[3] = 64;
    if (fd >= 0)
        close(fd);
}

static int udp_default(int i)
{
    pthread_once(&udp_defonce, udp_defaults);
    return udp_defval[i];
}

/* Whether v is a value option i may take. */
static int udp_valid(int i, long v)
{
    switch (udp_opts[i].kind) {
    case K_BUF:
        return v > 0 && v <= 0x7fffffff;
    case K_UCHAR:
        return v >= (udp_opts[i].name == IP_TTL ? 1 : 0) && v <= 255;
    default:
        return v == T_YES || v == T_NO;
    }
}

void udp_opt_apply(struct udp_ep *ep, int fd, int family)
{
    for (int i = 0; i < UDP_NOPTS; i++)
        if (ep->opt[i].set)
            udp_sockset(i, fd, family, ep->opt[i].val);
}

static int udp_optfind(t_uscalar_t level, t_uscalar_t name)
{
    for (int i = 0; i < UDP_NOPTS; i++)
        if (udp_opts[i].level == level && udp_opts[i].name == name)
            return i;
    return -1;
}

/* Append option i with value v in vlen bytes (0: the XNS size). */
static void udp_optout(mblk_t *bp, int i, t_uscalar_t status, long v, size_t vlen,
                       t_uscalar_t *worst)
{
    unsigned char val[sizeof(long)];

    if (vlen == 0)
        vlen = udp_opts[i].kind == K_UCHAR ? 1 : sizeof(t_uscalar_t);
    inet_optval_put(val, v, vlen);
    tl_optput(bp, udp_opts[i].level, udp_opts[i].name, status, val, vlen, worst);
}

/* The current value of option i: the socket's, the stored one, the default. */
static long udp_current(struct udp_ep *ep, int i, int fd, int family)
{
    long v = -1;

    if (fd >= 0)
        v = udp_sockget(i, fd, family);
    if (v < 0) {
        pthread_mutex_lock(&ep->lk);
        v = ep->opt[i].set ? ep->opt[i].val : -1;
        pthread_mutex_unlock(&ep->lk);
    }
    return v < 0 ? udp_default(i) : v;
}

/* Negotiate option i to v; the status, *got the value in effect. */
static t_uscalar_t udp_negotiate(struct udp_ep *ep, int i, long v, int fd, int family, long *got)
{
    *got = v;
    if (!udp_valid(i, v)) {
        *got = udp_current(ep, i, fd, family);
        return T_FAILURE;
    }
    if (fd < 0) {
        pthread_mutex_lock(&ep->lk);
        ep->opt[i].set = 1;
        ep->opt[i].val = (int)v;
        pthread_mutex_unlock(&ep->lk);
        return T_SUCCESS;
    }
    int err = udp_sockset(i, fd, family, (int)v);
    if (err == EOPNOTSUPP)
        return T_NOTSUPPORT;
    *got = udp_current(ep, i, fd, family);
    if (err != 0)
        return T_FAILURE;
    return *got == v ? T_SUCCESS : T_PARTSUCCESS;
}

/* Whether UDP_CHECKSUM does not apply: IPv6 (always checksummed), rawip. */
static int udp_nocsum(const struct udp_ep *ep, int family, int fd)
{
    return ep->kind->type == SOCK_RAW || (family == AF_INET6 && fd >= 0);
}

/* Every option of level (T_ALLOPT) or all (level ~0): current, default or
 * reset to the default. */
static void udp_optall(struct udp_ep *ep, t_uscalar_t level, t_scalar_t flags, int fd, int family,
                       mblk_t *bp, t_uscalar_t *worst)
{
    for (int i = 0; i < UDP_NOPTS; i++) {
        long v, got;
        t_uscalar_t st = T_SUCCESS;
        if (level != (t_uscalar_t)~0u && udp_opts[i].level != level)
            continue;
        if (flags == T_DEFAULT) {
            v = udp_default(i);
        } else if (flags == T_CURRENT) {
            v = udp_current(ep, i, fd, family);
        } else {
            st = udp_negotiate(ep, i, udp_default(i), fd, family, &got);
            v = got;
        }
        if (udp_opts[i].kind == K_CSUM && udp_nocsum(ep, family, fd))
            st = T_NOTSUPPORT;
        udp_optout(bp, i, st, v, 0, worst);
    }
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
            /* a header alone: is the option supported (no value returned) */
            tl_optput(bp, oh.level, oh.name, T_SUCCESS, NULL, 0, worst);
        } else if (vlen == 0 && flags == T_NEGOTIATE) {
            /* T_NEGOTIATE of a header alone: the default value */
            long got;
            t_uscalar_t st = udp_negotiate(ep, i, udp_default(i), fd, family, &got);
            udp_optout(bp, i, st, got, 0, worst);
        } else if (flags == T_DEFAULT) {
            udp_optout(bp, i, T_SUCCESS, udp_default(i), 0, worst);
        } else if (flags == T_CURRENT) {
            udp_optout(bp, i, T_SUCCESS, udp_current(ep, i, fd, family), 0, worst);
        } else {
            long v, got;
            t_uscalar_t st;
            if (inet_optval_get(p + at + sizeof(oh), vlen, &v) != 0)
                return TBADOPT;
            if (udp_opts[i].kind == K_CSUM && udp_nocsum(ep, family, fd)) {
                st = T_NOTSUPPORT;
                got = T_YES;
            } else if (flags == T_CHECK) {
                st = udp_valid(i, v) ? T_SUCCESS : T_FAILURE;
                got = v;
            } else {
                st = udp_negotiate(ep, i, v, fd, family, &got);
            }
            udp_optout(bp, i, st, got, vlen, worst);
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
           (sizeof(struct T_opthdr) + sizeof(long));
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
