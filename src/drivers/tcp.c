/* SPDX-License-Identifier: MIT */
/*
 * tcp.c -- the "tcp" TPI provider (T_COTS_ORD) over kernel TCP sockets:
 * "/dev/tcp", "/dev/streams/tcp", "/dev/streams/clone/tcp".  Open, close,
 * the write-side dispatch, T_INFO_REQ, T_ADDR_REQ, T_CAPABILITY_REQ,
 * T_BIND_REQ, T_UNBIND_REQ, the socket helpers and fork.  Connections are
 * in tcp_conn.c, data both ways in tcp_data.c, options in tcp_opt.c, the
 * epoll thread in src/core/io_watch.c; docs/TPI.md "tcp" is the user's description.
 *
 * MT level: D_MP | D_CLONE; each open is an endpoint with its own lock
 * (tcp.h has the legend, the I/O claims and the upward-order rule).
 * Acknowledged primitives are answered in the put procedure.  Data
 * primitives are checked in the put procedure and queued as M_DATA (the
 * T_DATA_REQ header dropped: a byte stream has no records), T_EXDATA_REQ
 * and T_ORDREL_REQ as they are; the write service procedure sends many
 * queued blocks per sendmsg.  The epoll thread (edge-triggered) qenables the
 * read queue on readability, urgent data or error, and the write queue when
 * a blocked send may go on; the read service procedure does every upward
 * indication.  Flow control both ways is described in tcp_data.c.
 * Errors: as tl.c: T_ERROR_ACK for acknowledged primitives, M_ERROR(EPROTO)
 * for a bad unacknowledged one.
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

#include "forksafe.h"
#include "tcp.h"
#include "tl.h"

#define TCP_ID 5420
#define TCP_HIWAT (256 * 1024) /* write queue water marks */
#define TCP_LOWAT (64 * 1024)

static int tcp_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int tcp_close(queue_t *q, int oflag, cred_t *crp);
static int tcp_rput(queue_t *q, mblk_t *mp);
static int tcp_wput(queue_t *q, mblk_t *mp);

static struct module_info tcp_minfo = {
    .mi_idnum = TCP_ID,
    .mi_idname = "tcp",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = TCP_HIWAT,
    .mi_lowat = TCP_LOWAT,
};
static struct qinit tcp_rinit = {
    .qi_putp = tcp_rput,
    .qi_srvp = tcp_rsrv,
    .qi_qopen = tcp_open,
    .qi_qclose = tcp_close,
    .qi_minfo = &tcp_minfo,
};
static struct qinit tcp_winit = {
    .qi_putp = tcp_wput,
    .qi_srvp = tcp_wsrv,
    .qi_minfo = &tcp_minfo,
};
static struct streamtab tcp_info = {.st_rdinit = &tcp_rinit, .st_wrinit = &tcp_winit};
static struct cdevsw tcp_cdev = {.d_name = "tcp", .d_str = &tcp_info, .d_flag = D_MP | D_CLONE};

/* tcp_glock: the list of endpoints, their refs and closing flags, the last
 * ACCEPTOR_id.  Above every ep->lk (tcp.h). */
static pthread_mutex_t tcp_glock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcp_gcv = PTHREAD_COND_INITIALIZER; /* with tcp_glock: refs fell to 0 */
static struct tcp_ep *tcp_eps;                           /* tcp_glock */
static t_uscalar_t tcp_lastid;                            /* tcp_glock */

void ust_tcp_register(void);

/* fork(): tcp_glock and every endpoint's lk are leaves (sw is not taken:
 * it is held only across socket calls, never under another library lock) held briefly; the
 * child closes what io_watch.c does not know of (set-aside listening sockets,
 * pending indications: the registered sockets are closed by io_watch.c) and
 * starts with no endpoints (its streams are detached, sd_fork.c). */
static void tcp_fork_prepare(void)
{
    pthread_mutex_lock(&tcp_glock);
    for (struct tcp_ep *ep = tcp_eps; ep != NULL; ep = ep->next)
        pthread_mutex_lock(&ep->lk);
}

static void tcp_fork_parent(void)
{
    for (struct tcp_ep *ep = tcp_eps; ep != NULL; ep = ep->next)
        pthread_mutex_unlock(&ep->lk);
    pthread_mutex_unlock(&tcp_glock);
}

static void tcp_fork_child(void)
{
    for (struct tcp_ep *ep = tcp_eps; ep != NULL; ep = ep->next) {
        if (ep->lfd >= 0)
            close(ep->lfd);
        for (struct tcp_conind *ci = ep->ind; ci != NULL; ci = ci->next)
            close(ci->fd);
        ep->prevp = NULL; /* on no list in the child */
        pthread_mutex_unlock(&ep->lk);
    }
    tcp_eps = NULL;
    pthread_cond_init(&tcp_gcv, NULL);
    pthread_mutex_unlock(&tcp_glock);
}

/*
 * ust_tcp_register -- register "tcp".
 *   Context: ust_builtin_register, once.
 */
void ust_tcp_register(void)
{
    int rc;

    ust_iow_init();
    ust_fork_register(UST_FORK_DRIVER, tcp_fork_prepare, tcp_fork_parent, tcp_fork_child);
    rc = register_strdev(&tcp_cdev, 0);
    if (rc < 0)
        cmn_err(CE_WARN, "tcp: register_strdev failed (%d)", rc);
}

/* ------------------------------------------------------------------------ */
/* Endpoints, I/O claims, sockets                                            */
/* ------------------------------------------------------------------------ */

struct tcp_ep *tcp_ep_find(t_uscalar_t id)
{
    struct tcp_ep *ep;

    pthread_mutex_lock(&tcp_glock);
    for (ep = tcp_eps; ep != NULL; ep = ep->next)
        if (ep->id == id && !ep->closing)
            break;
    if (ep != NULL)
        ep->refs++;
    pthread_mutex_unlock(&tcp_glock);
    return ep;
}

void tcp_ep_rele(struct tcp_ep *ep)
{
    pthread_mutex_lock(&tcp_glock);
    if (--ep->refs == 0)
        pthread_cond_broadcast(&tcp_gcv);
    pthread_mutex_unlock(&tcp_glock);
}

/* The claims this thread holds, innermost last, with the socket generation
 * each was taken in.  A service procedure holds its claim across putnext,
 * inside which the perimeter above may run another thread's deferred put
 * procedure on this thread -- a T_CONN_RES, T_DISCON_REQ or T_UNBIND_REQ of
 * the same endpoint included -- whose tcp_sock_take must not wait for the
 * claim below it on its own stack. */
#define TCP_MINE_MAX 8
static _Thread_local struct {
    struct tcp_ep *ep;
    unsigned gen;
} tcp_mine[TCP_MINE_MAX];
static _Thread_local int tcp_nmine;

int tcp_io_get(struct tcp_ep *ep)
{
    int fd;
    unsigned gen;

    if (tcp_nmine == TCP_MINE_MAX)
        return -1; /* deeper than any stack of modules: as if there were no socket */
    pthread_mutex_lock(&ep->lk);
    fd = ep->fd;
    gen = ep->sock_gen;
    if (fd >= 0)
        ep->io_users++;
    pthread_mutex_unlock(&ep->lk);
    if (fd >= 0) {
        tcp_mine[tcp_nmine].ep = ep;
        tcp_mine[tcp_nmine++].gen = gen;
    }
    return fd;
}

void tcp_io_put(struct tcp_ep *ep)
{
    for (int i = tcp_nmine - 1; i >= 0; i--)
        if (tcp_mine[i].ep == ep) {
            for (int j = i; j + 1 < tcp_nmine; j++)
                tcp_mine[j] = tcp_mine[j + 1];
            tcp_nmine--;
            break;
        }
    pthread_mutex_lock(&ep->lk);
    if (--ep->io_users == 0)
        pthread_cond_broadcast(&ep->cv);
    pthread_mutex_unlock(&ep->lk);
}

int tcp_io_valid(struct tcp_ep *ep)
{
    unsigned gen = 0;
    int found = 0;

    for (int i = tcp_nmine - 1; i >= 0 && !found; i--)
        if (tcp_mine[i].ep == ep) {
            gen = tcp_mine[i].gen;
            found = 1;
        }
    pthread_mutex_lock(&ep->lk);
    int ok = found && ep->sock_gen == gen && ep->fd >= 0;
    pthread_mutex_unlock(&ep->lk);
    return ok;
}

int tcp_sock_take(struct tcp_ep *ep)
{
    int fd, own = 0;

    for (int i = 0; i < tcp_nmine; i++)
        own += tcp_mine[i].ep == ep;
    pthread_mutex_lock(&ep->lk);
    fd = ep->fd;
    ep->fd = -1;
    ep->sock_gen++;
    /* This thread's own claims are below it on the stack: the procedure
     * holding them sees tcp_io_valid fail after its putnext and stops. */
    while (ep->io_users > own)
        pthread_cond_wait(&ep->cv, &ep->lk);
    pthread_mutex_unlock(&ep->lk);
    if (fd >= 0)
        ust_iow_del(&ep->io);
    return fd;
}

int tcp_sock_give(struct tcp_ep *ep, int fd)
{
    ep->io.chan = 1; /* a channel: readers may poll the socket (sd_chan.c) */
    int rc = ust_iow_add(&ep->io, fd, ep->rq);

    if (rc != 0)
        return rc;
    pthread_mutex_lock(&ep->lk);
    ep->fd = fd;
    pthread_mutex_unlock(&ep->lk);
    qenable(ep->rq); /* what arrived before the registration */
    return 0;
}

void tcp_sock_close(int fd, int rst)
{
    if (fd < 0)
        return;
    if (rst) {
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    close(fd);
}

int tcp_sock_new(struct tcp_ep *ep, int family, const void *a, socklen_t alen, t_scalar_t *tli,
                 int *uerr)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0) {
        *tli = TSYSERR;
        *uerr = errno;
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)); /* tcp_data.c */
    tcp_opt_apply(ep, fd, family);
    if (bind(fd, a, alen) < 0) {
        *uerr = errno;
        *tli = (t_scalar_t)inet_bind_error(*uerr);
        close(fd);
        return -1;
    }
    return fd;
}

/* The port of the sockaddr_in or sockaddr_in6 at p (checked before). */
static unsigned short tcp_port_of(const unsigned char *p)
{
    struct sockaddr_in6 a;

    memcpy(&a, p, sizeof(struct sockaddr_in));
    return ntohs(a.sin6_family == AF_INET ? ((struct sockaddr_in *)(void *)&a)->sin_port
                                          : a.sin6_port);
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */
/* ------------------------------------------------------------------------ */

static int tcp_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    struct tcp_ep *ep;

    (void)oflag;
    (void)crp;
    if (q->q_ptr != NULL)
        return 0;
    if (sflag != CLONEOPEN && sflag != DRVOPEN)
        return ENXIO;
    ep = kmem_zalloc(sizeof(*ep), KM_SLEEP);
    ep->rq = q;
    ep->state = TS_UNBND;
    ep->fd = -1;
    ep->lfd = -1;
    pthread_mutex_init(&ep->sw, NULL);
    pthread_mutex_init(&ep->lk, NULL);
    pthread_cond_init(&ep->cv, NULL);
    pthread_mutex_lock(&tcp_glock);
    if (++tcp_lastid == 0)
        tcp_lastid = 1;
    ep->id = tcp_lastid;
    ep->next = tcp_eps;
    if (tcp_eps != NULL)
        tcp_eps->prevp = &ep->next;
    ep->prevp = &tcp_eps;
    tcp_eps = ep;
    pthread_mutex_unlock(&tcp_glock);
    *devp = makedevice(getmajor(*devp), (minor_t)(ep->id & 0x3ffff));
    q->q_ptr = ep;
    WR(q)->q_ptr = ep;
    qprocson(q);
    return 0;
}

/*
 * Close: no listener may use us as acceptor any more (closing, refs
 * drained); what the write queue still holds is sent as far as the socket
 * takes it without blocking (tcp_close_out: the stream head waited for the
 * queue to drain first, unless non-blocking, up to its close time); then
 * the socket is closed -- gracefully, or with RST when
 * XTI_LINGER set l_onoff with l_linger 0 (SO_LINGER, the kernel's) or the
 * connection was never accepted (pending indications are reset).
 */
static int tcp_close(queue_t *q, int oflag, cred_t *crp)
{
    struct tcp_ep *ep = q->q_ptr;
    int fd, lfd;

    (void)oflag;
    (void)crp;
    pthread_mutex_lock(&tcp_glock);
    ep->closing = 1;
    while (ep->refs > 0)
        pthread_cond_wait(&tcp_gcv, &tcp_glock);
    if (ep->prevp != NULL) { /* O(1) with 1000 endpoints open too */
        *ep->prevp = ep->next;
        if (ep->next != NULL)
            ep->next->prevp = ep->prevp;
        ep->prevp = NULL;
    }
    pthread_mutex_unlock(&tcp_glock);
    pthread_mutex_lock(&ep->sw);
    fd = tcp_sock_take(ep); /* the service procedures leave the queues alone now */
    tcp_close_out(WR(q), ep, fd);
    pthread_mutex_lock(&ep->lk);
    lfd = ep->lfd;
    ep->lfd = -1;
    tcp_ind_free(ep);
    ep->state = TS_UNBND;
    pthread_mutex_unlock(&ep->lk);
    pthread_mutex_unlock(&ep->sw);
    tcp_sock_close(fd, 0);
    tcp_sock_close(lfd, 0);
    tcp_accept_cancel(ep);
    qprocsoff(q);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    pthread_cond_destroy(&ep->cv);
    pthread_mutex_destroy(&ep->lk);
    pthread_mutex_destroy(&ep->sw);
    kmem_free(ep, sizeof(*ep));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Information, addresses, binding                                           */
/* ------------------------------------------------------------------------ */

/* Under ep->lk. */
static void tcp_info_fill(const struct tcp_ep *ep, struct T_info_ack *ia)
{
    ia->PRIM_type = T_INFO_ACK;
    ia->TSDU_size = 0; /* a byte stream: no TSDU boundaries */
    ia->ETSDU_size = TCP_ETSDU;
    ia->CDATA_size = T_INVALID;
    ia->DDATA_size = T_INVALID;
    ia->ADDR_size = (t_scalar_t)sizeof(struct sockaddr_in6);
    ia->OPT_size = TCP_OPT_MAX;
    ia->TIDU_size = 65536;
    ia->SERV_type = T_COTS_ORD;
    ia->CURRENT_state = ep->state;
    ia->PROVIDER_flag = XPG4_1;
}

/* T_INFO_REQ and T_CAPABILITY_REQ: the ack from a snapshot (tl.c). */
static void tcp_info_snapshot(queue_t *q, struct T_info_ack *ia)
{
    struct tcp_ep *ep = q->q_ptr;

    pthread_mutex_lock(&ep->lk);
    tcp_info_fill(ep, ia);
    pthread_mutex_unlock(&ep->lk);
}

static void tcp_info_req(queue_t *q, mblk_t *mp)
{
    struct T_info_ack ia;

    tcp_info_snapshot(q, &ia);
    tl_info_reply(q, mp, &ia);
}

static void tcp_capability_req(queue_t *q, mblk_t *mp)
{
    const struct tcp_ep *ep = q->q_ptr;
    struct T_info_ack ia;

    tcp_info_snapshot(q, &ia);
    tl_capability_reply(q, mp, &ia, ep->id);
}

/* T_ADDR_ACK: the local address while bound, the remote one while connected. */
static void tcp_addr_req(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr;
    struct T_addr_ack *aa;
    mblk_t *bp = tl_prim(mp, M_PCPROTO, sizeof(*aa), 2 * sizeof(struct sockaddr_in6));

    if (bp == NULL)
        return;
    aa = (struct T_addr_ack *)(void *)bp->b_rptr;
    aa->PRIM_type = T_ADDR_ACK;
    pthread_mutex_lock(&ep->lk);
    if (ep->state != TS_UNBND && ep->alen > 0) {
        aa->LOCADDR_length = (t_scalar_t)ep->alen;
        aa->LOCADDR_offset = tl_append(bp, &ep->addr, ep->alen);
    }
    if ((ep->state == TS_DATA_XFER || ep->state == TS_WIND_ORDREL ||
         ep->state == TS_WREQ_ORDREL) &&
        ep->ralen > 0) {
        aa->REMADDR_length = (t_scalar_t)ep->ralen;
        aa->REMADDR_offset = tl_append(bp, &ep->raddr, ep->ralen);
    }
    pthread_mutex_unlock(&ep->lk);
    qreply(q, bp);
}

/*
 * T_BIND_REQ (TS_UNBND only): ADDR_length 0 binds INADDR_ANY port 0 (the
 * kernel chooses a unique port); otherwise a struct sockaddr_in or
 * sockaddr_in6 of exactly its size (else TBADADDR), port 0 meaning "any".
 * CONIND_number > 0 makes a listener: listen(2) with the number granted
 * (at most TCP_QLEN_MAX).  The ack holds the bound address (getsockname).
 * Errors: TBADADDR, TADDRBUSY (EADDRINUSE), TNOADDR (no port left when
 * the kernel chooses), TACCES, TSYSERR.
 */
static void tcp_bind_req(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr;
    struct T_bind_req br;
    struct T_bind_ack *ba;
    struct sockaddr_in6 sa;
    struct sockaddr_in any = {.sin_family = AF_INET};
    socklen_t salen;
    int family, fd = -1, uerr = 0, state;
    t_scalar_t err = 0;
    t_uscalar_t qlen;
    mblk_t *bp;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(br)) {
        tl_error_ack(q, mp, T_BIND_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&br, mp->b_rptr, sizeof(br));
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    if (state == TS_UNBND)
        ep->state = TS_WACK_BREQ; /* the socket is made without the lock */
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
    qlen = br.CONIND_number > TCP_QLEN_MAX ? TCP_QLEN_MAX : br.CONIND_number;
    fd = tcp_sock_new(ep, family, &sa, salen, &err, &uerr);
    if (fd < 0 && uerr == EADDRINUSE &&
        (br.ADDR_length == 0 || tcp_port_of(mp->b_rptr + br.ADDR_offset) == 0))
        err = TNOADDR; /* no port left to choose */
    if (fd < 0)
        goto fail;
    if (qlen > 0 && listen(fd, (int)qlen) < 0) {
        uerr = errno;
        err = uerr == EADDRINUSE ? TADDRBUSY : TSYSERR;
        goto fail;
    }
    salen = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        err = TSYSERR;
        uerr = errno;
        goto fail;
    }
    bp = tl_prim(NULL, M_PCPROTO, sizeof(*ba), sizeof(sa));
    if (bp == NULL) {
        err = TSYSERR;
        uerr = ENOSR;
        goto fail;
    }
    pthread_mutex_lock(&ep->lk);
    ep->family = family;
    ep->anon = br.ADDR_length == 0;
    ep->anyport = br.ADDR_length == 0 || tcp_port_of(mp->b_rptr + br.ADDR_offset) == 0;
    memcpy(&ep->addr, &sa, salen);
    ep->alen = salen;
    ep->qlen = qlen;
    ep->state = TS_IDLE;
    ep->dead = ep->eof = ep->werr = ep->used = 0;
    pthread_mutex_unlock(&ep->lk);
    uerr = tcp_sock_give(ep, fd);
    if (uerr != 0) {
        freemsg(bp);
        err = TSYSERR;
        goto fail;
    }
    freemsg(mp);
    ba = (struct T_bind_ack *)(void *)bp->b_rptr;
    ba->PRIM_type = T_BIND_ACK;
    ba->CONIND_number = qlen;
    ba->ADDR_length = (t_scalar_t)salen;
    ba->ADDR_offset = tl_append(bp, &sa, salen);
    qreply(q, bp);
    return;
fail:
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&ep->lk);
    ep->state = TS_UNBND;
    ep->alen = 0;
    ep->qlen = 0;
    pthread_mutex_unlock(&ep->lk);
    tl_error_ack(q, mp, T_BIND_REQ, err, uerr);
}

/* T_UNBIND_REQ (TS_IDLE only): the socket (and a listener's set-aside one)
 * is closed; M_FLUSH(FLUSHRW) goes up first, as TPI asks. */
static void tcp_unbind_req(queue_t *q, mblk_t *mp)
{
    struct tcp_ep *ep = q->q_ptr;
    int state, fd, lfd = -1;

    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    if (state == TS_IDLE)
        ep->state = TS_WACK_UREQ;
    pthread_mutex_unlock(&ep->lk);
    if (state != TS_IDLE) {
        tl_error_ack(q, mp, T_UNBIND_REQ, TOUTSTATE, 0);
        return;
    }
    pthread_mutex_lock(&ep->sw);
    fd = tcp_sock_take(ep);
    pthread_mutex_lock(&ep->lk);
    lfd = ep->lfd;
    ep->lfd = -1;
    tcp_ind_free(ep);
    ep->state = TS_UNBND;
    ep->alen = 0;
    ep->ralen = 0;
    ep->qlen = 0;
    pthread_mutex_unlock(&ep->lk);
    pthread_mutex_unlock(&ep->sw);
    tcp_sock_close(fd, 0);
    tcp_sock_close(lfd, 0);
    flushq(q, FLUSHDATA);
    putnextctl1(RD(q), M_FLUSH, FLUSHRW);
    tl_ok_ack(q, mp, T_UNBIND_REQ);
}

/* Nothing is put here from below; pass along whatever is. */
static int tcp_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Write side                                                                */
/* ------------------------------------------------------------------------ */

static void tcp_flushq(queue_t *q, const mblk_t *mp)
{
    if ((*mp->b_rptr & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2)
        flushband(q, mp->b_rptr[1], FLUSHDATA);
    else
        flushq(q, FLUSHDATA);
}

static void tcp_wproto(queue_t *q, mblk_t *mp)
{
    t_scalar_t prim;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(prim)) {
        tl_merror(q, mp);
        return;
    }
    memcpy(&prim, mp->b_rptr, sizeof(prim));
    switch (prim) {
    case T_INFO_REQ:
        tcp_info_req(q, mp);
        break;
    case T_ADDR_REQ:
        tcp_addr_req(q, mp);
        break;
    case T_CAPABILITY_REQ:
        tcp_capability_req(q, mp);
        break;
    case T_BIND_REQ:
        tcp_bind_req(q, mp);
        break;
    case T_UNBIND_REQ:
        tcp_unbind_req(q, mp);
        break;
    case T_OPTMGMT_REQ:
        tcp_optmgmt_req(q, mp);
        break;
    case T_CONN_REQ:
        tcp_conn_req(q, mp);
        break;
    case T_CONN_RES:
        tcp_conn_res(q, mp);
        break;
    case T_DISCON_REQ:
        tcp_discon_req(q, mp);
        break;
    case T_DATA_REQ:
    case T_EXDATA_REQ:
    case T_OPTDATA_REQ:
    case T_ORDREL_REQ:
        if (mp->b_datap->db_type == M_PROTO)
            tcp_data_req(q, mp, prim);
        else
            tl_merror(q, mp);
        break;
    case T_UNITDATA_REQ:
    default:
        tl_merror(q, mp);
        break;
    }
}

static int tcp_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_PROTO:
    case M_PCPROTO:
        tcp_wproto(q, mp);
        break;
    case M_DATA:
        tcp_data_req(q, mp, -1);
        break;
    case M_FLUSH:
        if (mp->b_wptr <= mp->b_rptr) {
            freemsg(mp);
            break;
        }
        if (*mp->b_rptr & FLUSHW)
            tcp_flushq(q, mp);
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
    default:
        freemsg(mp);
        break;
    }
    return 0;
}
