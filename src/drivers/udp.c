/* SPDX-License-Identifier: MIT */
/*
 * udp.c -- the "udp" TPI provider (T_CLTS) over kernel UDP sockets:
 * "/dev/udp", "/dev/streams/udp".  Open, close, the write-side dispatch,
 * T_INFO_REQ, T_ADDR_REQ, T_CAPABILITY_REQ, T_BIND_REQ, T_UNBIND_REQ.  Unit
 * data both ways is in udp_data.c, options in udp_opt.c, the epoll thread
 * in src/core/io_watch.c; docs/TPI.md "udp" is the user's description.
 *
 * MT level: D_MP | D_CLONE; each open is an endpoint, locked by its own
 * ep->lk (udp.h has the legend).  Acknowledged primitives are answered in
 * the put procedure; T_UNITDATA_REQ is checked in the put procedure and
 * queued (putq).
 * Sending: the write service procedure takes up to UDP_BATCH queued units
 * and sends them with one sendmmsg, again until the queue is empty.  When
 * the socket's send buffer is full (EAGAIN) the rest is put back, EPOLLOUT
 * is armed and the procedure returns: the write queue backs up to its
 * high-water mark, so canput fails above (a blocking writer sleeps, a
 * non-blocking one gets EAGAIN / TFLOW) and nothing is lost.
 * Receiving: readiness (edge-triggered) qenables the read queue; its
 * service procedure reads up to UDP_BATCH datagrams per recvmmsg and sends
 * them up while canputnext allows.  When the stream above is full it stops
 * reading (the kernel queues, then drops, as for a socket) until
 * back-enabling runs it again.  ICMP errors (IP_RECVERR) are read from the
 * error queue and sent up as T_UDERROR_IND.
 * Errors: as tl.c: T_ERROR_ACK for acknowledged primitives, M_ERROR(EPROTO)
 * for a bad unacknowledged one; a bad unit gets T_UDERROR_IND.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/strconf.h>
#include <sys/stream.h>
#include <unistd.h>

#include "tl.h"
#include "udp.h"

#define UDP_ID 5410
#define UDP_HIWAT (256 * 1024) /* write queue water marks */
#define UDP_LOWAT (64 * 1024)

static int udp_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);

const struct udp_kind udp_kind_udp = {.type = SOCK_DGRAM, .tsdu4 = UDP_TSDU4, .tsdu6 = UDP_TSDU6};

static struct module_info udp_minfo = {
    .mi_idnum = UDP_ID,
    .mi_idname = "udp",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = UDP_HIWAT,
    .mi_lowat = UDP_LOWAT,
};
static struct qinit udp_rinit = {
    .qi_putp = udp_rput,
    .qi_srvp = udp_rsrv,
    .qi_qopen = udp_open,
    .qi_qclose = udp_close,
    .qi_minfo = &udp_minfo,
};
static struct qinit udp_winit = {
    .qi_putp = udp_wput,
    .qi_srvp = udp_wsrv,
    .qi_minfo = &udp_minfo,
};
static struct streamtab udp_info = {.st_rdinit = &udp_rinit, .st_wrinit = &udp_winit};
static struct cdevsw udp_cdev = {.d_name = "udp", .d_str = &udp_info, .d_flag = D_MP | D_CLONE};

static pthread_mutex_t udp_idlock = PTHREAD_MUTEX_INITIALIZER; /* leaf: udp_lastid */
static t_uscalar_t udp_lastid;


void ust_udp_register(void);

/*
 * ust_udp_register -- register "udp".
 *   Context: ust_builtin_register, once.
 */
void ust_udp_register(void)
{
    int rc;

    ust_iow_init();
    rc = register_strdev(&udp_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "udp: register_strdev failed (%d)", rc);
}

/* ------------------------------------------------------------------------ */
/* I/O claims                                                                */
/* ------------------------------------------------------------------------ */

/* The claims this thread holds, innermost last.  A thread holds one across
 * the putnext/qreply of a service procedure, and the perimeter above may run
 * another thread's deferred put procedure inside that call -- a
 * T_UNBIND_REQ of the same endpoint included -- which must not wait for the
 * claim below it on its own stack. */
#define UDP_MINE_MAX 8
static _Thread_local struct udp_ep *udp_mine[UDP_MINE_MAX];
static _Thread_local int udp_nmine;

int udp_io_get(struct udp_ep *ep)
{
    int fd;

    if (udp_nmine == UDP_MINE_MAX)
        return -1; /* deeper than any stack of modules: as if unbound */
    pthread_mutex_lock(&ep->lk);
    fd = ep->fd;
    if (fd >= 0)
        ep->io_users++;
    pthread_mutex_unlock(&ep->lk);
    if (fd >= 0)
        udp_mine[udp_nmine++] = ep;
    return fd;
}

int udp_io_valid(struct udp_ep *ep, int fd)
{
    pthread_mutex_lock(&ep->lk);
    int ok = ep->fd == fd;
    pthread_mutex_unlock(&ep->lk);
    return ok;
}

void udp_io_put(struct udp_ep *ep)
{
    int dead = -1;

    for (int i = udp_nmine - 1; i >= 0; i--)
        if (udp_mine[i] == ep) {
            memmove(&udp_mine[i], &udp_mine[i + 1], (size_t)(udp_nmine - 1 - i) * sizeof(ep));
            udp_nmine--;
            break;
        }
    pthread_mutex_lock(&ep->lk);
    if (--ep->io_users == 0) {
        dead = ep->dead_fd;
        ep->dead_fd = -1;
        pthread_cond_broadcast(&ep->cv);
    }
    pthread_mutex_unlock(&ep->lk);
    if (dead >= 0)
        close(dead); /* given up under this claim (udp_sock_close) */
}

/* Claims of ep held by this thread. */
static int udp_io_mine(const struct udp_ep *ep)
{
    int n = 0;
    for (int i = 0; i < udp_nmine; i++)
        n += udp_mine[i] == ep;
    return n;
}

/* Take the socket away from ep (unbind, close): no I/O uses it afterwards,
 * and it is closed -- at once, or, when this thread itself holds claims of
 * ep further down its stack (an unbind run by the perimeter inside the
 * service procedure's putnext), by the last of those claims' udp_io_put;
 * the service procedure sees udp_io_valid fail and stops.  Either way it
 * leaves epoll now, so a new bind may register its own socket.  Caller
 * holds no lock; close never runs under a claim of its own endpoint. */
static void udp_sock_close(struct udp_ep *ep)
{
    int fd, own = udp_io_mine(ep);

    pthread_mutex_lock(&ep->lk);
    fd = ep->fd;
    ep->fd = -1;
    ep->state = TS_UNBND;
    ep->alen = 0;
    while (ep->io_users > own)
        pthread_cond_wait(&ep->cv, &ep->lk);
    if (fd >= 0 && own > 0) {
        ep->dead_fd = fd;
        fd = -2;
    }
    pthread_mutex_unlock(&ep->lk);
    if (fd != -1)
        ust_iow_del(&ep->io);
    if (fd >= 0)
        close(fd);
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */
/* ------------------------------------------------------------------------ */

static int udp_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    return udp_open_kind(q, devp, sflag, &udp_kind_udp);
}

int udp_open_kind(queue_t *q, dev_t *devp, int sflag, const struct udp_kind *k)
{
    struct udp_ep *ep;

    if (q->q_ptr != NULL)
        return 0;
    if (sflag != CLONEOPEN && sflag != DRVOPEN)
        return ENXIO;
    ep = kmem_zalloc(sizeof(*ep), KM_SLEEP);
    ep->rq = q;
    ep->kind = k;
    ep->state = TS_UNBND;
    ep->fd = -1;
    ep->dead_fd = -1;
    pthread_mutex_init(&ep->lk, NULL);
    pthread_cond_init(&ep->cv, NULL);
    pthread_mutex_lock(&udp_idlock);
    if (++udp_lastid == 0)
        udp_lastid = 1;
    ep->id = udp_lastid;
    pthread_mutex_unlock(&udp_idlock);
    *devp = makedevice(getmajor(*devp), (minor_t)(ep->id & 0x3ffff));
    q->q_ptr = ep;
    WR(q)->q_ptr = ep;
    qprocson(q);
    return 0;
}

/* Close: the socket goes first (no more readiness, no I/O), then the
 * procedures; units still queued are freed with the queues. */
int udp_close(queue_t *q, int oflag, cred_t *crp)
{
    struct udp_ep *ep = q->q_ptr;

    (void)oflag;
    (void)crp;
    udp_sock_close(ep);
    qprocsoff(q);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    pthread_cond_destroy(&ep->cv);
    pthread_mutex_destroy(&ep->lk);
    kmem_free(ep, sizeof(*ep));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Information, addresses, binding                                           */
/* ------------------------------------------------------------------------ */

t_scalar_t udp_tsdu(const struct udp_ep *ep, int family)
{
    return family == AF_INET6 ? ep->kind->tsdu6 : ep->kind->tsdu4;
}

/* Under ep->lk. */
static void udp_info_fill(const struct udp_ep *ep, struct T_info_ack *ia)
{
    t_scalar_t tsdu = udp_tsdu(ep, ep->fd >= 0 ? ep->family : AF_INET);

    ia->PRIM_type = T_INFO_ACK;
    ia->TSDU_size = tsdu;
    ia->ETSDU_size = T_INVALID;
    ia->CDATA_size = T_INVALID;
    ia->DDATA_size = T_INVALID;
    ia->ADDR_size = (t_scalar_t)sizeof(struct sockaddr_in6);
    ia->OPT_size = UDP_OPT_MAX;
    ia->TIDU_size = tsdu;
    ia->SERV_type = T_CLTS;
    ia->CURRENT_state = ep->state;
    ia->PROVIDER_flag = SENDZERO | XPG4_1;
}

/* T_INFO_REQ and T_CAPABILITY_REQ: the ack from a snapshot (tl.c). */
static void udp_info_snapshot(queue_t *q, struct T_info_ack *ia)
{
    struct udp_ep *ep = q->q_ptr;

    pthread_mutex_lock(&ep->lk);
    udp_info_fill(ep, ia);
    pthread_mutex_unlock(&ep->lk);
}

static void udp_info_req(queue_t *q, mblk_t *mp)
{
    struct T_info_ack ia;

    udp_info_snapshot(q, &ia);
    tl_info_reply(q, mp, &ia);
}

static void udp_capability_req(queue_t *q, mblk_t *mp)
{
    const struct udp_ep *ep = q->q_ptr;
    struct T_info_ack ia;

    udp_info_snapshot(q, &ia);
    tl_capability_reply(q, mp, &ia, ep->id);
}

static void udp_addr_req(queue_t *q, mblk_t *mp)
{
    struct udp_ep *ep = q->q_ptr;
    struct T_addr_ack *aa;
    mblk_t *bp = tl_prim(mp, M_PCPROTO, sizeof(*aa), sizeof(struct sockaddr_in6));

    if (bp == NULL)
        return;
    aa = (struct T_addr_ack *)(void *)bp->b_rptr;
    aa->PRIM_type = T_ADDR_ACK;
    pthread_mutex_lock(&ep->lk);
    if (ep->state == TS_IDLE && ep->alen > 0) {
        aa->LOCADDR_length = (t_scalar_t)ep->alen;
        aa->LOCADDR_offset = tl_append(bp, &ep->addr, ep->alen);
    }
    pthread_mutex_unlock(&ep->lk);
    qreply(q, bp);
}

/* The port field of a sockaddr_in / sockaddr_in6 (the same offset). */
static unsigned short udp_port_get(const struct sockaddr_in6 *a)
{
    return ntohs(a->sin6_port);
}

static void udp_port_set(struct sockaddr_in6 *a, unsigned short port)
{
    a->sin6_port = htons(port);
}

/*
 * T_BIND_REQ (TS_UNBND only): ADDR_length 0 binds INADDR_ANY port 0 (the
 * kernel chooses); otherwise a struct sockaddr_in or sockaddr_in6 of exactly
 * its size (else TBADADDR).  rawip: the port field is the IP protocol of
 * the raw socket (0: ICMP, ICMPv6; above 255 or IPPROTO_RAW TBADADDR),
 * reported back in the bound address.  The socket is made here, options negotiated
 * before are set on it, and the bound address (getsockname) is returned.
 */
static void udp_bind_req(queue_t *q, mblk_t *mp)
{
    struct udp_ep *ep = q->q_ptr;
    struct T_bind_req br;
    struct T_bind_ack *ba;
    struct sockaddr_in6 sa;
    struct sockaddr_in any = {.sin_family = AF_INET};
    socklen_t salen;
    int family, fd = -1, one = 1, state, proto = 0;
    t_scalar_t err = 0, uerr = 0;
    mblk_t *bp;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(br)) {
        tl_error_ack(q, mp, T_BIND_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&br, mp->b_rptr, sizeof(br));
    /* TS_WACK_BREQ while the socket is made: a concurrent T_BIND_REQ or
     * T_UNITDATA_REQ sees a state it cannot act in */
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    if (state == TS_UNBND)
        ep->state = TS_WACK_BREQ;
    pthread_mutex_unlock(&ep->lk);
    if (state != TS_UNBND) {
        tl_error_ack(q, mp, T_BIND_REQ, TOUTSTATE, 0);
        return;
    }
    memset(&sa, 0, sizeof(sa));
    if (br.ADDR_length == 0) {
        memcpy(&sa, &any, sizeof(any));
        salen = sizeof(any);
        family = AF_INET;
    } else if (br.ADDR_length < 0 || !tl_range_ok(mp, br.ADDR_offset, br.ADDR_length) ||
               (family = inet_addr_family(mp->b_rptr + br.ADDR_offset,
                                         (size_t)br.ADDR_length)) == 0) {
        err = TBADADDR;
        goto fail;
    } else {
        salen = (socklen_t)br.ADDR_length;
        memcpy(&sa, mp->b_rptr + br.ADDR_offset, salen);
    }
    if (ep->kind->type == SOCK_RAW) {
        /* rawip: the port field names the IP protocol (0: ICMP / ICMPv6) */
        proto = udp_port_get(&sa);
        if (proto == 0)
            proto = family == AF_INET6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
        if (proto > 255 || proto == IPPROTO_RAW) {
            err = TBADADDR;
            goto fail;
        }
        udp_port_set(&sa, 0);
    }
    fd = socket(family, ep->kind->type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
    if (fd < 0) {
        err = TSYSERR;
        uerr = errno;
        goto fail;
    }
    if (family == AF_INET)
        setsockopt(fd, SOL_IP, IP_RECVERR, &one, sizeof(one));
    else
        setsockopt(fd, SOL_IPV6, IPV6_RECVERR, &one, sizeof(one));
    udp_opt_apply(ep, fd, family);
    if (bind(fd, (struct sockaddr *)&sa, salen) < 0) {
        uerr = errno;
        err = (t_scalar_t)inet_bind_error(uerr);
        goto fail;
    }
    salen = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        err = TSYSERR;
        uerr = errno;
        goto fail;
    }
    if (proto != 0)
        udp_port_set(&sa, (unsigned short)proto); /* rawip: reported as bound */
    bp = tl_prim(NULL, M_PCPROTO, sizeof(*ba), sizeof(sa));
    if (bp == NULL) {
        err = TSYSERR;
        uerr = ENOSR;
        goto fail;
    }
    ep->io.chan = 1; /* a channel: readers may poll the socket (sd_chan.c) */
    uerr = ust_iow_add(&ep->io, fd, RD(q));
    if (uerr != 0) {
        freemsg(bp);
        err = TSYSERR;
        goto fail;
    }
    pthread_mutex_lock(&ep->lk);
    ep->fd = fd;
    ep->family = family;
    ep->proto = proto;
    memcpy(&ep->addr, &sa, salen);
    ep->alen = salen;
    ep->state = TS_IDLE;
    pthread_mutex_unlock(&ep->lk);
    freemsg(mp);
    ba = (struct T_bind_ack *)(void *)bp->b_rptr;
    ba->PRIM_type = T_BIND_ACK;
    ba->CONIND_number = 0;
    ba->ADDR_length = (t_scalar_t)salen;
    ba->ADDR_offset = tl_append(bp, &sa, salen);
    qreply(q, bp);
    /* datagrams may have arrived before the registration */
    qenable(RD(q));
    return;
fail:
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&ep->lk);
    ep->state = TS_UNBND;
    pthread_mutex_unlock(&ep->lk);
    tl_error_ack(q, mp, T_BIND_REQ, err, uerr);
}

/* T_UNBIND_REQ (TS_IDLE only): the socket is closed; M_FLUSH(FLUSHRW) goes
 * up first, as TPI asks. */
static void udp_unbind_req(queue_t *q, mblk_t *mp)
{
    struct udp_ep *ep = q->q_ptr;
    int state;

    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    if (state == TS_IDLE)
        ep->state = TS_WACK_UREQ; /* udp_sock_close makes it TS_UNBND */
    pthread_mutex_unlock(&ep->lk);
    if (state != TS_IDLE) {
        tl_error_ack(q, mp, T_UNBIND_REQ, TOUTSTATE, 0);
        return;
    }
    udp_sock_close(ep);
    flushq(q, FLUSHDATA);
    putnextctl1(RD(q), M_FLUSH, FLUSHRW);
    tl_ok_ack(q, mp, T_UNBIND_REQ);
}

/* Nothing is put here from below; pass along whatever is. */
int udp_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Write side                                                                */
/* ------------------------------------------------------------------------ */

static void udp_flushq(queue_t *q, const mblk_t *mp)
{
    if ((*mp->b_rptr & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2)
        flushband(q, mp->b_rptr[1], FLUSHDATA);
    else
        flushq(q, FLUSHDATA);
}

static void udp_wproto(queue_t *q, mblk_t *mp)
{
    t_scalar_t prim;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(prim)) {
        tl_merror(q, mp);
        return;
    }
    memcpy(&prim, mp->b_rptr, sizeof(prim));
    switch (prim) {
    case T_INFO_REQ:
        udp_info_req(q, mp);
        break;
    case T_ADDR_REQ:
        udp_addr_req(q, mp);
        break;
    case T_CAPABILITY_REQ:
        udp_capability_req(q, mp);
        break;
    case T_BIND_REQ:
        udp_bind_req(q, mp);
        break;
    case T_UNBIND_REQ:
        udp_unbind_req(q, mp);
        break;
    case T_OPTMGMT_REQ:
        udp_optmgmt_req(q, mp);
        break;
    case T_CONN_REQ:
    case T_CONN_RES:
    case T_DISCON_REQ:
        tl_error_ack(q, mp, prim, TNOTSUPPORT, 0);
        break;
    case T_UNITDATA_REQ:
        if (mp->b_datap->db_type == M_PROTO)
            udp_unitdata_req(q, mp);
        else
            tl_merror(q, mp);
        break;
    default:
        tl_merror(q, mp);
        break;
    }
}

int udp_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_PROTO:
    case M_PCPROTO:
        udp_wproto(q, mp);
        break;
    case M_FLUSH:
        if (mp->b_wptr <= mp->b_rptr) {
            freemsg(mp);
            break;
        }
        if (*mp->b_rptr & FLUSHW)
            udp_flushq(q, mp);
        if (*mp->b_rptr & FLUSHR) {
            *mp->b_rptr &= ~FLUSHW;
            qreply(q, mp);
            break;
        }
        freemsg(mp);
        break;
    case M_IOCTL:
        miocnak(q, mp, 0, EINVAL);
        break;
    case M_DATA:
        tl_merror(q, mp);
        break;
    default:
        freemsg(mp);
        break;
    }
    return 0;
}
