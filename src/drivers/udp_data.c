/* SPDX-License-Identifier: MIT */
/*
 * udp_data.c -- unit data of the udp provider (udp.h, docs/TPI.md "udp"):
 * T_UNITDATA_REQ checked and queued, the write service procedure sending
 * the queue with sendmmsg, the read service procedure receiving with
 * recvmmsg and turning ICMP errors into T_UDERROR_IND.  The principles
 * (batching, flow control both ways) are at the top of udp.c.
 */
#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which uses struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <unistd.h>

#include "strcore.h"
#include "tl.h"
#include "udp.h"

#define UDP_BATCH 32  /* units per sendmmsg, datagrams per recvmmsg */
#define UDP_IOVMAX 16 /* data blocks of a unit sent as they are (more: pulled up) */
#define UDP_ROUNDS 16 /* recvmmsg calls per read service run */
#define UDP_SLOT 65536 /* receive buffer per datagram */

/* Per-thread receive buffers of the read service procedure. */
static pthread_key_t udp_bufkey;
static pthread_once_t udp_bufonce = PTHREAD_ONCE_INIT;

static void udp_buf_free(void *p)
{
    free(p);
}

static void udp_buf_key(void)
{
    pthread_key_create(&udp_bufkey, udp_buf_free);
}

/* This thread's UDP_BATCH receive slots; NULL when out of memory. */
static unsigned char *udp_rbuf(void)
{
    unsigned char *p;

    pthread_once(&udp_bufonce, udp_buf_key);
    p = pthread_getspecific(udp_bufkey);
    if (p == NULL) {
        p = malloc((size_t)UDP_BATCH * UDP_SLOT);
        if (p != NULL && pthread_setspecific(udp_bufkey, p) != 0) {
            free(p);
            p = NULL;
        }
    }
    return p;
}

/* ------------------------------------------------------------------------ */
/* Unit data                                                                 */
/* ------------------------------------------------------------------------ */

/* T_UDERROR_IND for the unit mp (DEST taken from it when in range) with
 * error, up the read side; mp is consumed. */
static void udp_uderror(queue_t *q, mblk_t *mp, t_scalar_t error)
{
    struct T_unitdata_req ur;
    struct T_uderror_ind *ue;
    unsigned char dest[sizeof(struct sockaddr_in6)];
    size_t dlen = 0;
    mblk_t *bp;

    memcpy(&ur, mp->b_rptr, sizeof(ur));
    if (ur.DEST_length > 0 && (size_t)ur.DEST_length <= sizeof(dest) &&
        tl_range_ok(mp, ur.DEST_offset, ur.DEST_length)) {
        dlen = (size_t)ur.DEST_length;
        memcpy(dest, mp->b_rptr + ur.DEST_offset, dlen);
    }
    bp = tl_prim(mp, M_PROTO, sizeof(*ue), sizeof(dest));
    if (bp == NULL)
        return;
    ue = (struct T_uderror_ind *)(void *)bp->b_rptr;
    ue->PRIM_type = T_UDERROR_IND;
    ue->ERROR_type = error;
    if (dlen > 0) {
        ue->DEST_length = (t_scalar_t)dlen;
        ue->DEST_offset = tl_append(bp, dest, dlen);
    }
    qreply(q, bp);
}

/* The non-empty data blocks of unit mp into iov (UDP_IOVMAX at most: the
 * put procedure pulled up longer chains); returns how many. */
static int udp_unit_iov(mblk_t *mp, struct iovec *iov)
{
    int k = 0;
    for (mblk_t *b = mp->b_cont; b != NULL; b = b->b_cont) {
        if (b->b_wptr > b->b_rptr) {
            iov[k].iov_base = b->b_rptr;
            iov[k].iov_len = (size_t)(b->b_wptr - b->b_rptr);
            k++;
        }
    }
    return k;
}

/* h for unit mp (T_UNITDATA_REQ + data blocks), its nk blocks in iov. */
static void udp_msghdr(mblk_t *mp, struct msghdr *h, struct iovec *iov, int nk)
{
    struct T_unitdata_req ur;
    memcpy(&ur, mp->b_rptr, sizeof(ur));
    memset(h, 0, sizeof(*h));
    h->msg_name = mp->b_rptr + ur.DEST_offset;
    h->msg_namelen = (socklen_t)ur.DEST_length;
    h->msg_iov = iov;
    h->msg_iovlen = (size_t)nk;
}

/*
 * The channel's send path (seed 003; issue 23): a unit goes from the put
 * procedure straight to the kernel on the caller's thread while nothing is
 * queued and no batch is on its way (the sender's claim, ep->tx).  Returns
 * 1 when mp was consumed (sent, or refused with T_UDERROR_IND), 0 when the
 * caller must queue it (something queued, a batch under way, the socket
 * full: then EPOLLOUT is armed and the service procedure sends the queue).
 */
static int udp_send_now(queue_t *q, struct udp_ep *ep, mblk_t *mp)
{
    int idle = 0;
    if (ust_q_nonempty_hint(q) || !atomic_compare_exchange_strong(&ep->tx, &idle, 1))
        return 0;
    int fd = udp_io_get(ep), done = 0;
    if (fd >= 0 && !ust_q_nonempty_hint(q)) { /* checked again under the claim */
        struct msghdr h;
        struct iovec iov[UDP_IOVMAX];
        udp_msghdr(mp, &h, iov, udp_unit_iov(mp, iov));
        for (int retried = 0;;) {
            if (sendmsg(fd, &h, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
                freemsg(mp);
                done = 1;
            } else if (errno == EINTR) {
                continue;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                ust_iow_want_out(&ep->io);
            } else if (!retried && (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
                                    errno == ENETUNREACH || errno == EHOSTDOWN)) {
                retried = 1; /* an earlier datagram's error, now consumed */
                continue;
            } else {
                udp_uderror(q, mp, errno);
                done = 1;
            }
            break;
        }
    }
    if (fd >= 0)
        udp_io_put(ep);
    atomic_store(&ep->tx, 0);
    return done;
}

/*
 * T_UNITDATA_REQ in the put procedure: not bound is M_ERROR(EPROTO) (as
 * ticlts); DEST not a sockaddr of the bound family, or options malformed,
 * T_UDERROR_IND(EINVAL); data beyond TSDU_size T_UDERROR_IND(EMSGSIZE).
 * A good unit is queued for the service procedure.
 */
void udp_unitdata_req(queue_t *q, mblk_t *mp)
{
    struct udp_ep *ep = q->q_ptr;
    struct T_unitdata_req ur;
    int state, family, n = 0;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(ur)) {
        tl_merror(q, mp);
        return;
    }
    memcpy(&ur, mp->b_rptr, sizeof(ur));
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    family = ep->family;
    pthread_mutex_unlock(&ep->lk);
    if (state != TS_IDLE) {
        tl_merror(q, mp);
        return;
    }
    if (ur.DEST_length <= 0 || !tl_range_ok(mp, ur.DEST_offset, ur.DEST_length) ||
        inet_addr_family(mp->b_rptr + ur.DEST_offset, (size_t)ur.DEST_length) != family ||
        !tl_range_ok(mp, ur.OPT_offset, ur.OPT_length) ||
        !tl_opts_ok(mp->b_rptr + ur.OPT_offset, (size_t)ur.OPT_length)) {
        udp_uderror(q, mp, EINVAL);
        return;
    }
    if (msgdsize(mp) > (size_t)udp_tsdu(ep, family)) {
        udp_uderror(q, mp, EMSGSIZE);
        return;
    }
    for (mblk_t *b = mp->b_cont; b != NULL; b = b->b_cont)
        n++;
    if (n > UDP_IOVMAX && !pullupmsg(mp->b_cont, -1)) {
        udp_uderror(q, mp, ENOSR);
        return;
    }
    if (!udp_send_now(q, ep, mp))
        putq(q, mp);
}

/*
 * The drain's batch (docs/TPI.md "GSO and GRO"): up to UDP_TXUNITS units
 * off the write queue, as entries of one sendmmsg.  Consecutive units of
 * one destination, the same options and the same size (the last of a run
 * may be shorter) share one entry, sent as one UDP_SEGMENT datagram that
 * the kernel cuts back into the units: up to UDP_GSO_MAX of them and no
 * more bytes than one datagram may carry.  Entry e holds the units
 * first[e] .. first[e] + cnt[e] - 1 of v, their blocks consecutive in iov.
 */
#define UDP_TXUNITS 64 /* units per sendmmsg */
#define UDP_GSO_MAX 64 /* segments per UDP_SEGMENT send (the kernel's UDP_MAX_SEGMENTS) */
#define UDP_TXIOV 256  /* data blocks per batch (the batch lives on the stack of
                        * whichever thread runs the service procedure) */
struct udp_txbatch {
    mblk_t *v[UDP_TXUNITS];
    struct mmsghdr mh[UDP_TXUNITS];
    int first[UDP_TXUNITS], cnt[UDP_TXUNITS];
    size_t seg[UDP_TXUNITS], total[UDP_TXUNITS];
    struct iovec iov[UDP_TXIOV];
    union {
        struct cmsghdr h;
        unsigned char b[CMSG_SPACE(sizeof(uint16_t))];
    } ctl[UDP_TXUNITS];
};

/* Whether unit mp (len data bytes) may join entry e of b as its next
 * segment: same DEST and options bytes as the entry's first unit, len not
 * above the entry's segment size (a shorter one ends the entry), room left
 * in the entry (UDP_GSO_MAX, tsdu bytes). */
static int udp_gso_joins(const struct udp_txbatch *b, int e, const mblk_t *mp, size_t len,
                         size_t tsdu)
{
    const mblk_t *f = b->v[b->first[e]];
    struct T_unitdata_req a, u;

    if (len == 0 || b->cnt[e] >= UDP_GSO_MAX || b->total[e] + len > tsdu ||
        b->total[e] != (size_t)b->cnt[e] * b->seg[e] || len > b->seg[e])
        return 0; /* the entry's last segment was already a shorter one */
    memcpy(&a, f->b_rptr, sizeof(a));
    memcpy(&u, mp->b_rptr, sizeof(u));
    return a.DEST_length == u.DEST_length && a.OPT_length == u.OPT_length &&
           memcmp(f->b_rptr + a.DEST_offset, mp->b_rptr + u.DEST_offset,
                  (size_t)u.DEST_length) == 0 &&
           (u.OPT_length == 0 || memcmp(f->b_rptr + a.OPT_offset, mp->b_rptr + u.OPT_offset,
                                        (size_t)u.OPT_length) == 0);
}

/* Take units off q into b (UDP_TXUNITS at most, fewer when their data
 * blocks would overflow UDP_TXIOV); gso: whether runs may share an entry;
 * *single: how many of the first units must still go one per entry (a
 * refused run being sent again unit by unit), counted down.  Returns the
 * entries. */
static int udp_gather(queue_t *q, struct udp_txbatch *b, int gso, size_t tsdu, int *single)
{
    int n = 0, ne = 0, k = 0;
    mblk_t *mp;

    while (n < UDP_TXUNITS && k + UDP_IOVMAX <= UDP_TXIOV && (mp = getq(q)) != NULL) {
        if (mp->b_datap->db_type != M_PROTO) { /* only units are queued */
            freemsg(mp);
            continue;
        }
        int nk = udp_unit_iov(mp, b->iov + k);
        size_t len = 0;
        for (int i = 0; i < nk; i++)
            len += b->iov[k + i].iov_len;
        b->v[n] = mp;
        if (gso && *single == 0 && ne > 0 && udp_gso_joins(b, ne - 1, mp, len, tsdu)) {
            b->mh[ne - 1].msg_hdr.msg_iovlen += (size_t)nk;
            b->cnt[ne - 1]++;
            b->total[ne - 1] += len;
        } else {
            memset(&b->mh[ne], 0, sizeof(b->mh[ne]));
            udp_msghdr(mp, &b->mh[ne].msg_hdr, b->iov + k, nk);
            b->first[ne] = n;
            b->cnt[ne] = 1;
            b->seg[ne] = b->total[ne] = len;
            if (*single > 0) { /* alone, and nothing joins it */
                (*single)--;
                b->seg[ne] = 0;
            }
            ne++;
        }
        k += nk;
        n++;
    }
    for (int e = 0; e < ne; e++) {
        if (b->cnt[e] < 2)
            continue;
        struct msghdr *h = &b->mh[e].msg_hdr;
        uint16_t gs = (uint16_t)b->seg[e];
        h->msg_control = b->ctl[e].b;
        h->msg_controllen = sizeof(b->ctl[e].b);
        struct cmsghdr *c = CMSG_FIRSTHDR(h);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(gs));
        memcpy(CMSG_DATA(c), &gs, sizeof(gs));
    }
    return ne;
}

/* Put the units of entries from.. of b back on q, in order. */
static void udp_putback(queue_t *q, struct udp_txbatch *b, int from, int ne)
{
    for (int e = ne - 1; e >= from; e--)
        for (int i = b->first[e] + b->cnt[e] - 1; i >= b->first[e]; i--)
            putbq(q, b->v[i]);
}

/*
 * The write service procedure: send the queued units, UDP_TXUNITS per
 * sendmmsg, runs of one destination and size as UDP_SEGMENT entries (above).
 * EAGAIN (send buffer full): put the rest back, arm EPOLLOUT, return.  A
 * unit the kernel refuses gets T_UDERROR_IND with the errno; an error left
 * pending by an earlier ICMP message (ECONNREFUSED and the like, reported
 * already from the error queue) is skipped once.  A UDP_SEGMENT entry the
 * kernel refuses is sent again unit by unit, so that each unit meets its
 * own verdict; EINVAL, EIO or EMSGSIZE (the kernel cannot segment: a
 * segment above the path MTU, checksums off, a tunnel) turn GSO off for
 * the endpoint.
 */
int udp_wsrv(queue_t *q)
{
    struct udp_ep *ep = q->q_ptr;
    struct udp_txbatch b;
    int fd = udp_io_get(ep), single = 0, family;

    if (fd < 0) {
        flushq(q, FLUSHDATA); /* unbound while queued */
        return 0;
    }
    /* The sender's claim for the batches: a put that finds it taken queues
     * (and putq enables this procedure again if it ran out meanwhile). */
    int idle = 0;
    if (!atomic_compare_exchange_strong(&ep->tx, &idle, 1)) {
        qenable(q); /* a direct send is on its way: look again after it */
        udp_io_put(ep);
        return 0;
    }
    pthread_mutex_lock(&ep->lk);
    family = ep->family;
    pthread_mutex_unlock(&ep->lk);
    size_t tsdu = (size_t)udp_tsdu(ep, family);
    for (;;) {
        int gso = ep->kind->type == SOCK_DGRAM && !ep->gso_off;
        int ne = udp_gather(q, &b, gso, tsdu, &single), sent = 0, retried = 0;
        if (ne == 0)
            break;
        while (sent < ne) {
            int r = sendmmsg(fd, b.mh + sent, (unsigned)(ne - sent), MSG_DONTWAIT);
            if (r > 0) {
                for (int e = sent; e < sent + r; e++)
                    for (int i = 0; i < b.cnt[e]; i++)
                        freemsg(b.v[b.first[e] + i]);
                sent += r;
                retried = 0;
                continue;
            }
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                udp_putback(q, &b, sent, ne);
                ust_iow_want_out(&ep->io);
                goto out;
            }
            if (!retried && (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
                             errno == ENETUNREACH || errno == EHOSTDOWN)) {
                retried = 1; /* an earlier datagram's error, now consumed */
                continue;
            }
            if (b.cnt[sent] > 1) { /* a run refused: again unit by unit */
                if (errno == EINVAL || errno == EIO || errno == EMSGSIZE)
                    ep->gso_off = 1;
                single = b.cnt[sent];
                udp_putback(q, &b, sent, ne);
                break;
            }
            udp_uderror(q, b.v[b.first[sent]], errno);
            sent++;
            retried = 0;
            if (!udp_io_valid(ep, fd)) { /* unbound inside the qreply */
                for (; sent < ne; sent++)
                    for (int i = 0; i < b.cnt[sent]; i++)
                        freemsg(b.v[b.first[sent] + i]);
                goto out;
            }
        }
    }
out:
    atomic_store(&ep->tx, 0);
    udp_io_put(ep);
    return 0;
}

/* The read side's T_UDERROR_IND for an ICMP error on the error queue:
 * DEST the original destination, ERROR_type the errno (ECONNREFUSED for an
 * unreachable port).  Reads until the error queue is empty.  Returns 0 if
 * the socket was taken away inside a putnext (udp_io_valid), else 1. */
static int udp_errqueue(queue_t *q, struct udp_ep *ep, int fd)
{
    for (;;) {
        struct sockaddr_in6 dest;
        unsigned char data[64];
        union {
            struct cmsghdr h;
            unsigned char b[512];
        } ctl;
        struct iovec iov = {.iov_base = data, .iov_len = sizeof(data)};
        struct msghdr m = {.msg_name = &dest,
                           .msg_namelen = sizeof(dest),
                           .msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = ctl.b,
                           .msg_controllen = sizeof(ctl.b)};
        struct sock_extended_err ee;
        struct T_uderror_ind *ue;
        int found = 0;
        mblk_t *bp;

        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return 1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
            if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                memcpy(&ee, CMSG_DATA(c), sizeof(ee));
                found = 1;
            }
        }
        if (!found)
            continue;
        bp = tl_prim(NULL, M_PROTO, sizeof(*ue), sizeof(dest));
        if (bp == NULL)
            continue; /* out of memory: the indication is lost */
        ue = (struct T_uderror_ind *)(void *)bp->b_rptr;
        ue->PRIM_type = T_UDERROR_IND;
        ue->ERROR_type = (t_scalar_t)ee.ee_errno;
        if (m.msg_namelen > 0 && m.msg_namelen <= sizeof(dest)) {
            ue->DEST_length = (t_scalar_t)m.msg_namelen;
            ue->DEST_offset = tl_append(bp, &dest, m.msg_namelen);
        }
        putnext(q, bp);
        if (!udp_io_valid(ep, fd))
            return 0;
    }
}

/* A T_UNITDATA_IND for a datagram of len bytes at p from src; NULL when out
 * of memory (the datagram is dropped, as the kernel would). */
static mblk_t *udp_unitdata_ind(const void *src, socklen_t slen, const unsigned char *p,
                                size_t len)
{
    struct T_unitdata_ind *ui;
    mblk_t *bp = tl_prim(NULL, M_PROTO, sizeof(*ui), sizeof(struct sockaddr_in6));
    mblk_t *dp;

    if (bp == NULL)
        return NULL;
    ui = (struct T_unitdata_ind *)(void *)bp->b_rptr;
    ui->PRIM_type = T_UNITDATA_IND;
    ui->SRC_length = (t_scalar_t)slen;
    ui->SRC_offset = tl_append(bp, src, slen);
    if (len > 0) {
        dp = allocb(len, BPRI_MED);
        if (dp == NULL) {
            freemsg(bp);
            return NULL;
        }
        memcpy(dp->b_wptr, p, len);
        dp->b_wptr += len;
        bp->b_cont = dp;
    }
    return bp;
}

/* The segment size of a coalesced datagram (the UDP_GRO control message
 * on a socket with UDP_GRO on, docs/TPI.md "GSO and GRO"); 0 when h has none. */
static size_t udp_gro_seg(struct msghdr *h)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
            c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int g;
            memcpy(&g, CMSG_DATA(c), sizeof(g));
            return g > 0 ? (size_t)g : 0;
        }
    }
    return 0;
}

/*
 * The read service procedure: enabled by the epoll thread (readable, error)
 * and by back-enabling.  Reads the error queue (when the epoll thread saw
 * EPOLLERR, or a receive failed with a pending error), then datagrams, UDP_BATCH
 * per recvmmsg, while the stream above accepts them; stops at EAGAIN (the
 * next arrival is a new edge) or when flow controlled (back-enabling runs it
 * again).  After UDP_ROUNDS it re-enables itself, to let others run.  A run
 * that took two datagrams or more tells the channel reader (io.more) that
 * the socket likely holds more by the time it comes back: its next pull
 * reads at once, without a poll (one system call wasted when it is empty).
 */
int udp_rsrv(queue_t *q)
{
    struct udp_ep *ep = q->q_ptr;
    struct mmsghdr mh[UDP_BATCH];
    struct iovec iov[UDP_BATCH];
    struct sockaddr_in6 src[UDP_BATCH];
    union {
        struct cmsghdr h;
        unsigned char b[CMSG_SPACE(sizeof(int))];
    } ctl[UDP_BATCH];
    unsigned char *buf;
    int fd = udp_io_get(ep), round, strip4, got = 0;

    if (fd < 0)
        return 0;
    pthread_mutex_lock(&ep->lk);
    strip4 = ep->kind->type == SOCK_RAW && ep->family == AF_INET;
    pthread_mutex_unlock(&ep->lk);
    buf = udp_rbuf();
    if (atomic_exchange(&ep->io.err, 0) && !udp_errqueue(q, ep, fd))
        goto out;
    for (round = 0; buf != NULL && round < UDP_ROUNDS; round++) {
        int n;
        if (!canputnext(q))
            break;
        for (int i = 0; i < UDP_BATCH; i++) {
            iov[i].iov_base = buf + (size_t)i * UDP_SLOT;
            iov[i].iov_len = UDP_SLOT;
            memset(&mh[i], 0, sizeof(mh[i]));
            mh[i].msg_hdr.msg_name = &src[i];
            mh[i].msg_hdr.msg_namelen = sizeof(src[i]);
            mh[i].msg_hdr.msg_iov = &iov[i];
            mh[i].msg_hdr.msg_iovlen = 1;
            mh[i].msg_hdr.msg_control = ctl[i].b;
            mh[i].msg_hdr.msg_controllen = sizeof(ctl[i].b);
        }
        n = recvmmsg(fd, mh, UDP_BATCH, MSG_DONTWAIT, NULL);
        got += n > 0 ? n : 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            if (!udp_errqueue(q, ep, fd)) /* a pending ICMP error, now consumed */
                goto out;
            continue;
        }
        for (int i = 0; i < n; i++) {
            unsigned char *p = buf + (size_t)i * UDP_SLOT;
            size_t len = mh[i].msg_len;
            if (strip4) { /* rawip over IPv4: the kernel gives the IP header too */
                size_t hl = len > 0 ? (size_t)(p[0] & 0x0f) * 4 : 0;
                if (hl < 20 || hl > len)
                    continue; /* not an IPv4 datagram: dropped */
                p += hl;
                len -= hl;
            }
            /* A coalesced buffer (UDP_GRO) is seg-byte datagrams, the last
             * maybe shorter: one T_UNITDATA_IND each. */
            size_t seg = udp_gro_seg(&mh[i].msg_hdr);
            if (seg == 0 || seg >= len)
                seg = len;
            size_t off = 0;
            do {
                size_t l = len - off < seg ? len - off : seg;
                mblk_t *bp = udp_unitdata_ind(&src[i], mh[i].msg_hdr.msg_namelen, p + off, l);
                off += l;
                if (bp == NULL)
                    continue;
                putnext(q, bp);
                if (!udp_io_valid(ep, fd))
                    goto out; /* unbound inside the putnext: the rest is dropped */
            } while (off < len);
        }
        if (n < UDP_BATCH)
            break;
    }
    if (round == UDP_ROUNDS)
        qenable(q);
    /* Datagrams come faster than one per run: the next channel pull reads
     * without polling first (sd_chan.c). */
    atomic_store_explicit(&ep->io.more, got >= 2, memory_order_relaxed);
out:
    udp_io_put(ep);
    return 0;
}

