/* SPDX-License-Identifier: MIT */
/*
 * tcp_data.c -- data of the tcp provider (tcp.h, docs/TPI.md "tcp"): the
 * data primitives checked and queued, the write service procedure sending
 * the queue, the read service procedure receiving and sending every
 * indication up.
 *
 * Principles of operation
 *   Sending.  T_DATA_REQ and M_DATA are queued as M_DATA (band 0);
 *   T_EXDATA_REQ (one byte, ETSDU_size) in band 1, so it overtakes queued
 *   normal data, as TPI's expedited data does; T_ORDREL_REQ in band 0
 *   behind the data sent before it.  The write service procedure gathers
 *   up to TCP_IOV consecutive data blocks into one sendmsg; what the
 *   socket does not take (its send buffer is full) is trimmed of what went
 *   and put back in order, EPOLLOUT is armed, and the procedure returns:
 *   the write queue fills to its high-water mark and the stream head stops
 *   the writer (a blocking write sleeps, a non-blocking one gets EAGAIN,
 *   t_snd TFLOW).  Expedited data goes with MSG_OOB, T_ORDREL_REQ as
 *   shutdown(SHUT_WR).  A send that fails (reset) discards the queue and
 *   leaves its errno for the read side's T_DISCON_IND.
 *   Receiving.  The read service procedure (enabled by the epoll thread, by
 *   a channel reader polling the socket itself, and by back-enabling) reads
 *   while canputnext allows: blocks (at most TCP_RBLK each, TCP_RMAX a call)
 *   of the size the last reads suggest (twice what filled its buffer, what
 *   a short one got, rounded up; TCP_RFIRST at first) are read with one
 *   readv and sent up as one M_DATA message; a read shorter than asked
 *   emptied the socket, so the run ends there without asking again for
 *   EAGAIN (edge-triggered readiness comes again with the next segment,
 *   and the peer's FIN with EPOLLRDHUP: once seen, reads go on to EOF).
 *   No FIONREAD: two system calls fewer per request of a TCP_RR.  When the
 *   stream above is full it stops, the socket's receive buffer fills and
 *   TCP's window closes the sender; back-enabling resumes it.  EOF becomes
 *   T_ORDREL_IND, an error T_DISCON_IND with the errno (ECONNRESET for a
 *   reset), urgent data T_EXDATA_IND in band 1.
 *   Urgent data.  Sockets are SO_OOBINLINE: the urgent byte stays in the
 *   stream, where the kernel never drops it (out of line, a read that
 *   passes the mark before recv(MSG_OOB) discards it), and a read stops at
 *   the mark.  The first round of each run of the read side, and every
 *   round once EPOLLPRI was seen, first asks SIOCATMARK and reads the byte
 *   at the mark alone as T_EXDATA_IND (the readable event may come first) --
 *   except a run started by a channel reader whose poll saw data and no
 *   POLLPRI (ust_iow_run_calm: its first read starts with that data).  An urgent byte that
 *   arrives at the very start of a read already under way is delivered as
 *   normal data (docs/TPI.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stream.h>
#include <sys/uio.h>
#include <unistd.h>

#include "strcore.h"
#include "tcp.h"
#include "tl.h"

#define TCP_IOV 64             /* blocks per sendmsg */
#define TCP_SMAX (1024 * 1024) /* bytes gathered per sendmsg */
#define TCP_RBLK 65536         /* largest receive block */
#define TCP_RMAX (256 * 1024)  /* bytes per readv */
#define TCP_RIOV (TCP_RMAX / TCP_RBLK)
#define TCP_ROUNDS 16          /* readv calls per read service run */
#define TCP_RFIRST 4096        /* the first read's size */

/* The non-empty blocks of mp. */
static int tcp_nblocks(const mblk_t *mp)
{
    int k = 0;

    for (; mp != NULL; mp = mp->b_cont)
        k += mp->b_wptr > mp->b_rptr;
    return k;
}

static int tcp_sendv(queue_t *q, struct tcp_ep *ep, int fd, mblk_t **v, int n, struct iovec *iov,
                     int niov);

/*
 * The channel's send path (seed 003; issue 23): normal data goes from the
 * put procedure straight to the kernel on the caller's thread while the
 * connection is established, nothing is queued and the service procedure
 * is not sending (the sender's claim, ep->tx).  What the socket does not
 * take is put back on the queue, EPOLLOUT armed (tcp_sendv).  Returns 1
 * when dp was consumed (sent, put back, or failed: T_DISCON_IND follows),
 * 0 when the caller must queue it.
 */
static int tcp_send_now(queue_t *q, struct tcp_ep *ep, mblk_t *dp)
{
    int idle = 0;
    if (ust_q_nonempty_hint(q) || !atomic_compare_exchange_strong(&ep->tx, &idle, 1))
        return 0;
    int fd = tcp_io_get(ep), done = 0;
    if (fd >= 0) {
        pthread_mutex_lock(&ep->lk);
        int ok = !ep->dead && ep->werr == 0 &&
                 (ep->state == TS_DATA_XFER || ep->state == TS_WREQ_ORDREL);
        pthread_mutex_unlock(&ep->lk);
        if (ok && !ust_q_nonempty_hint(q)) { /* checked again under the claim */
            struct iovec iov[TCP_IOV];
            int niov = 0;
            for (mblk_t *b = dp; b != NULL; b = b->b_cont)
                if (b->b_wptr > b->b_rptr)
                    iov[niov++] = (struct iovec){b->b_rptr, (size_t)(b->b_wptr - b->b_rptr)};
            tcp_sendv(q, ep, fd, &dp, 1, iov, niov);
            done = 1;
        }
        tcp_io_put(ep);
    }
    atomic_store(&ep->tx, 0);
    return done;
}

/*
 * Data primitives and M_DATA (prim -1), checked against the state: allowed
 * in TS_DATA_XFER and TS_WREQ_ORDREL (T_ORDREL_REQ: TS_DATA_XFER ->
 * TS_WIND_ORDREL, TS_WREQ_ORDREL -> TS_IDLE); discarded in TS_IDLE (a
 * disconnect may have crossed them, as TPI allows); M_ERROR(EPROTO) in any
 * other state, when shorter than the primitive, with malformed options, or
 * expedited data of other than one byte.
 */
void tcp_data_req(queue_t *q, mblk_t *mp, t_scalar_t prim)
{
    struct tcp_ep *ep = q->q_ptr;
    size_t len = (size_t)(mp->b_wptr - mp->b_rptr);
    int bad = 0, drop = 0, ex = 0;
    mblk_t *dp;

    switch (prim) {
    case T_DATA_REQ:
        bad = len < sizeof(struct T_data_req);
        break;
    case T_EXDATA_REQ:
        bad = len < sizeof(struct T_exdata_req);
        ex = 1;
        break;
    case T_OPTDATA_REQ: {
        struct T_optdata_req od;
        bad = len < sizeof(od);
        if (!bad) {
            memcpy(&od, mp->b_rptr, sizeof(od));
            bad = !tl_range_ok(mp, od.OPT_offset, od.OPT_length) ||
                  !tl_opts_ok(mp->b_rptr + od.OPT_offset, (size_t)od.OPT_length);
            ex = (od.DATA_flag & T_ODF_EX) != 0;
        }
        break;
    }
    case T_ORDREL_REQ:
        bad = len < sizeof(struct T_ordrel_req);
        break;
    default:
        break;
    }
    if (ex && !bad)
        bad = msgdsize(mp->b_cont) != TCP_ETSDU;
    pthread_mutex_lock(&ep->lk);
    if (ep->state == TS_IDLE)
        drop = 1;
    else if (ep->state != TS_DATA_XFER && ep->state != TS_WREQ_ORDREL)
        bad = 1;
    else if (!bad && prim == T_ORDREL_REQ)
        ep->state = ep->state == TS_DATA_XFER ? TS_WIND_ORDREL : TS_IDLE;
    pthread_mutex_unlock(&ep->lk);
    if (drop) {
        freemsg(mp);
        return;
    }
    if (bad) {
        tl_merror(q, mp);
        return;
    }
    if (prim == T_ORDREL_REQ || ex) {
        mp->b_band = ex ? 1 : 0;
        if (ex) { /* one form for the service procedure */
            t_scalar_t p = T_EXDATA_REQ;
            memcpy(mp->b_rptr, &p, sizeof(p));
        }
        if (!putq(q, mp))
            freemsg(mp);
        return;
    }
    if (prim == -1) {
        dp = mp;
    } else {
        dp = mp->b_cont;
        freeb(mp);
    }
    if (dp == NULL || msgdsize(dp) == 0) {
        if (dp != NULL)
            freemsg(dp);
        return;
    }
    dp->b_band = 0;
    if (tcp_nblocks(dp) > TCP_IOV && !pullupmsg(dp, -1)) {
        freemsg(dp); /* out of memory: as a write that could not be made */
        tl_merror(q, NULL);
        return;
    }
    if (!tcp_send_now(q, ep, dp) && !putq(q, dp))
        freemsg(dp);
}

/* A send failed with err: the queue is discarded, the read side reports
 * T_DISCON_IND(err). */
static void tcp_send_failed(queue_t *q, struct tcp_ep *ep, int err)
{
    pthread_mutex_lock(&ep->lk);
    if (ep->werr == 0)
        ep->werr = err;
    pthread_mutex_unlock(&ep->lk);
    flushq(q, FLUSHDATA);
    qenable(RD(q));
}

/* Send the gathered messages v[0..n) (M_DATA, iov built); 0 when all went,
 * 1 when the rest was put back (flow control), -1 on error (freed). */
static int tcp_sendv(queue_t *q, struct tcp_ep *ep, int fd, mblk_t **v, int n, struct iovec *iov,
                     int niov)
{
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    ssize_t r;
    int i;

    do
        r = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        int err = errno;
        for (i = 0; i < n; i++)
            freemsg(v[i]);
        tcp_send_failed(q, ep, err);
        return -1;
    }
    if (r < 0)
        r = 0;
    for (i = 0; i < n; i++) {
        size_t sz = (size_t)msgdsize(v[i]);
        if ((size_t)r < sz)
            break;
        r -= (ssize_t)sz;
        freemsg(v[i]);
    }
    if (i == n)
        return 0;
    if (r > 0) { /* the first message not wholly sent: drop what went */
        mblk_t *b = v[i];
        adjmsg(b, (ssize_t)r);
        while (b->b_wptr == b->b_rptr && b->b_cont != NULL) {
            mblk_t *next = b->b_cont;
            b->b_cont = NULL;
            next->b_band = b->b_band;
            freeb(b);
            b = next;
        }
        v[i] = b;
    }
    for (int k = n - 1; k >= i; k--)
        putbq(q, v[k]);
    ust_iow_want_out(&ep->io);
    return 1;
}

/*
 * The write service procedure: enabled by putq, by the epoll thread
 * (writable again) and by back-enabling.  Sends the queue in order (see
 * the top of the file); in TS_WCON_CREQ it hands the writability of a
 * connect to the read side; after a disconnect it discards the queue.
 */
int tcp_wsrv(queue_t *q)
{
    struct tcp_ep *ep = q->q_ptr;
    int fd = tcp_io_get(ep), state, dead;
    mblk_t *mp;

    if (fd < 0)
        return 0; /* no socket: resumed when one is given, or discarded */
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    dead = ep->dead || ep->werr != 0;
    pthread_mutex_unlock(&ep->lk);
    if (state == TS_WCON_CREQ || state == TS_WACK_CREQ) {
        qenable(RD(q));
        goto out;
    }
    if (dead) {
        flushq(q, FLUSHDATA);
        goto out;
    }
    int idle = 0;
    if (!atomic_compare_exchange_strong(&ep->tx, &idle, 1)) {
        qenable(q); /* a direct send is on its way: look again after it */
        goto out;
    }
    while ((mp = getq(q)) != NULL) {
        mblk_t *v[TCP_IOV];
        struct iovec iov[TCP_IOV];
        int n = 0, niov = 0;
        size_t total = 0;

        if (mp->b_datap->db_type != M_DATA) {
            t_scalar_t prim;
            memcpy(&prim, mp->b_rptr, sizeof(prim));
            if (prim == T_EXDATA_REQ) {
                ssize_t r;
                mblk_t *b = mp->b_cont;
                while (b->b_wptr == b->b_rptr)
                    b = b->b_cont;
                do
                    r = send(fd, b->b_rptr, 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL);
                while (r < 0 && errno == EINTR);
                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    putbq(q, mp);
                    ust_iow_want_out(&ep->io);
                    goto done;
                }
                freemsg(mp);
                if (r < 0) {
                    tcp_send_failed(q, ep, errno);
                    goto done;
                }
            } else { /* T_ORDREL_REQ: everything before it has gone */
                freemsg(mp);
                shutdown(fd, SHUT_WR);
            }
            continue;
        }
        /* whole messages only (each has at most TCP_IOV blocks) */
        for (;;) {
            for (mblk_t *b = mp; b != NULL; b = b->b_cont) {
                if (b->b_wptr > b->b_rptr) {
                    iov[niov].iov_base = b->b_rptr;
                    iov[niov].iov_len = (size_t)(b->b_wptr - b->b_rptr);
                    total += iov[niov].iov_len;
                    niov++;
                }
            }
            v[n++] = mp;
            if (total >= TCP_SMAX || n == TCP_IOV)
                break;
            mp = getq(q);
            if (mp == NULL)
                break;
            if (mp->b_datap->db_type != M_DATA || mp->b_band != 0 ||
                niov + tcp_nblocks(mp) > TCP_IOV) { /* sent on the next turn */
                putbq(q, mp);
                break;
            }
        }
        if (tcp_sendv(q, ep, fd, v, n, iov, niov) != 0)
            break;
    }
done:
    atomic_store(&ep->tx, 0);
out:
    tcp_io_put(ep);
    return 0;
}

void tcp_close_out(queue_t *q, struct tcp_ep *ep, int fd)
{
    struct linger l = {0, 0};
    socklen_t len = sizeof(l);
    int state, dead;
    mblk_t *mp;

    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    dead = ep->dead || ep->werr != 0;
    pthread_mutex_unlock(&ep->lk);
    if (fd < 0 || dead || (state != TS_DATA_XFER && state != TS_WIND_ORDREL &&
                           state != TS_WREQ_ORDREL && state != TS_IDLE))
        return;
    if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff && l.l_linger == 0)
        return; /* an abortive close: nothing more is sent */
    while ((mp = getq(q)) != NULL) {
        ssize_t r = 0;
        if (mp->b_datap->db_type != M_DATA) {
            t_scalar_t prim;
            memcpy(&prim, mp->b_rptr, sizeof(prim));
            if (prim == T_EXDATA_REQ) {
                mblk_t *b = mp->b_cont;
                while (b->b_wptr == b->b_rptr)
                    b = b->b_cont;
                r = send(fd, b->b_rptr, 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL);
            } else {
                shutdown(fd, SHUT_WR);
            }
            freemsg(mp);
            if (r < 0)
                return;
            continue;
        }
        for (mblk_t *b = mp; b != NULL && r >= 0; b = b->b_cont) {
            size_t off = 0, n = (size_t)(b->b_wptr - b->b_rptr);
            while (off < n) {
                r = send(fd, b->b_rptr + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    break;
                off += (size_t)r;
            }
            if (off < n)
                r = -1; /* the socket is full: the rest is discarded */
        }
        freemsg(mp);
        if (r < 0)
            return;
    }
}

/* Under nothing: the connection is broken with err (T_DISCON_IND), if it
 * still is connected. */
static void tcp_broken(queue_t *q, struct tcp_ep *ep, int err)
{
    mblk_t *bp = tl_discon_ind(err, -1);
    int send;

    pthread_mutex_lock(&ep->lk);
    send = ep->state == TS_DATA_XFER || ep->state == TS_WIND_ORDREL ||
           ep->state == TS_WREQ_ORDREL;
    if (send) {
        ep->state = TS_IDLE;
        ep->dead = 1;
    }
    pthread_mutex_unlock(&ep->lk);
    if (!send) {
        freemsg(bp);
        return;
    }
    flushq(WR(q), FLUSHDATA);
    if (bp != NULL)
        putnext(q, bp);
}

/* Whether an end of stream is really a reset whose error a send consumed
 * first (the socket's error is reported once): the connection is closed
 * although we have sent no FIN (TS_DATA_XFER), where a FIN leaves it in
 * CLOSE_WAIT.  A send's own errno (werr) says the same. */
static int tcp_was_reset(struct tcp_ep *ep, int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    int state, werr;

    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    werr = ep->werr;
    pthread_mutex_unlock(&ep->lk);
    if (werr != 0)
        return 1;
    if (state != TS_DATA_XFER || getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len) < 0)
        return 0;
    return ti.tcpi_state == TCP_CLOSE;
}

/* EOF: T_ORDREL_IND (TS_DATA_XFER -> TS_WREQ_ORDREL, TS_WIND_ORDREL ->
 * TS_IDLE).  Returns 0 when out of memory (retried). */
static int tcp_eof(queue_t *q, struct tcp_ep *ep)
{
    mblk_t *bp = tl_prim(NULL, M_PROTO, sizeof(struct T_ordrel_ind), 0);
    int send;

    if (bp == NULL)
        return 0;
    ((struct T_ordrel_ind *)(void *)bp->b_rptr)->PRIM_type = T_ORDREL_IND;
    pthread_mutex_lock(&ep->lk);
    send = ep->state == TS_DATA_XFER || ep->state == TS_WIND_ORDREL;
    if (send) {
        ep->state = ep->state == TS_DATA_XFER ? TS_WREQ_ORDREL : TS_IDLE;
        ep->eof = 1;
    }
    pthread_mutex_unlock(&ep->lk);
    if (send)
        putnext(q, bp);
    else
        freemsg(bp);
    return 1;
}

/*
 * Urgent data (sockets are SO_OOBINLINE, see the top of the file): at the
 * urgent mark, the byte there is read alone and sent up as T_EXDATA_IND in
 * band 1.  Returns 1 when it was (or the byte is gone), 0 when the mark is
 * not reached yet (data before it is read first: a read stops at the
 * mark), -1 when the stream above has no room in band 1 (reading must stop,
 * or the byte would be read as normal data), 2 when the socket is at the
 * mark but the byte is not there to read yet: TCP marks the urgent byte
 * valid and wakes the readers before it queues the segment (and an urgent
 * pointer may come before its byte), so a recv can find nothing at the
 * mark.  Reading must stop then too: a read an instant later would take the
 * byte as normal data.  Its queueing is a new readable edge.
 */
static int tcp_urgent(queue_t *q, int fd)
{
    struct T_exdata_ind *xi;
    unsigned char c;
    mblk_t *bp, *dp;
    int at = 0;
    ssize_t r;

    if (ioctl(fd, SIOCATMARK, &at) < 0 || !at)
        return 0;
    if (!bcanputnext(q, 1))
        return -1;
    bp = tl_prim(NULL, M_PROTO, sizeof(*xi), 0);
    dp = allocb(1, BPRI_MED);
    if (bp == NULL || dp == NULL) {
        freemsg(bp);
        freemsg(dp);
        return -1; /* out of memory: retried (the read side re-enables) */
    }
    do
        r = recv(fd, &c, 1, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r != 1) {
        freemsg(bp);
        freemsg(dp);
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 2 : 1;
    }
    xi = (struct T_exdata_ind *)(void *)bp->b_rptr;
    xi->PRIM_type = T_EXDATA_IND;
    *dp->b_wptr++ = c;
    bp->b_cont = dp;
    bp->b_band = 1;
    putnext(q, bp);
    return 1;
}

/* One readv of what is readable into fresh blocks, sent up as M_DATA.
 * Returns the bytes read, 0 at EOF, -1 with errno on error or EAGAIN. */
static ssize_t tcp_readup(queue_t *q, struct tcp_ep *ep, int fd, size_t *asked)
{
    struct iovec iov[TCP_RIOV];
    mblk_t *b[TCP_RIOV];
    int n = 0;
    size_t want = ep->rsize ? ep->rsize : TCP_RFIRST;
    ssize_t r, left;

    if (want > TCP_RMAX)
        want = TCP_RMAX;
    *asked = want;
    while (want > 0 && n < TCP_RIOV) {
        size_t sz = want > TCP_RBLK ? TCP_RBLK : want;
        b[n] = allocb(sz, BPRI_MED);
        if (b[n] == NULL)
            break;
        iov[n].iov_base = b[n]->b_wptr;
        iov[n].iov_len = sz;
        want -= sz;
        n++;
    }
    if (n == 0) {
        errno = ENOSR;
        return -1;
    }
    do
        r = readv(fd, iov, n);
    while (r < 0 && errno == EINTR);
    left = r > 0 ? r : 0;
    for (int i = 0; i < n; i++) {
        size_t got = (size_t)left < iov[i].iov_len ? (size_t)left : iov[i].iov_len;
        b[i]->b_wptr += got;
        left -= (ssize_t)got;
        if (got == 0) {
            freeb(b[i]);
            b[i] = NULL;
        } else if (i > 0) {
            b[i - 1]->b_cont = b[i];
        }
    }
    if (r > 0) { /* the next size: room to grow while reads fill, else what came */
        size_t got = (size_t)r, next = got == *asked ? 2 * got : (got + 4095) & ~(size_t)4095;
        ep->rsize = next < TCP_RFIRST ? TCP_RFIRST : next > TCP_RMAX ? TCP_RMAX : next;
        putnext(q, b[0]);
    }
    return r;
}

/*
 * The read service procedure: connect outcome (TS_WCON_CREQ), a listener's
 * connection indications, a failed send's T_DISCON_IND, urgent data, then
 * data while the stream above accepts it; EOF and errors as described at
 * the top of the file.  After TCP_ROUNDS reads it re-enables itself.  A
 * listener that accepted on itself and is idle again listens again.
 */
int tcp_rsrv(queue_t *q)
{
    struct tcp_ep *ep = q->q_ptr;
    int fd = tcp_io_get(ep), state, eof, werr, round = 0, relisten, full = 0, counted = 0;
    t_uscalar_t qlen;

    if (fd < 0)
        return 0;
    pthread_mutex_lock(&ep->lk);
    state = ep->state;
    eof = ep->eof;
    werr = ep->werr;
    qlen = ep->qlen;
    pthread_mutex_unlock(&ep->lk);
    if (state == TS_WCON_CREQ) {
        if (!tcp_connect_done(q, ep, fd) || !tcp_io_valid(ep)) /* (its putnext) */
            goto out;
        state = TS_DATA_XFER;
    }
    if (qlen > 0 && (state == TS_IDLE || state == TS_WRES_CIND)) {
        tcp_accept_ind(q, ep, fd);
        goto out;
    }
    if (state != TS_DATA_XFER && state != TS_WIND_ORDREL && state != TS_WREQ_ORDREL)
        goto out;
    if (werr != 0) {
        tcp_broken(q, ep, werr);
        goto out;
    }
    if (eof) { /* nothing more to read: only a reset matters */
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (atomic_exchange(&ep->io.err, 0) &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr != 0)
            tcp_broken(q, ep, soerr);
        goto out;
    }
    /* A channel reader's poll saw data and no urgent byte just before this
     * run: its first read cannot start at the mark (io_watch.h). */
    int calm = ust_iow_run_calm(&ep->io);
    counted = 1;
    for (; round < TCP_ROUNDS; round++) {
        ssize_t r;
        if (round > 0 && !tcp_io_valid(ep))
            break; /* the socket was taken inside the last round's putnext */
        /* Urgent data signalled -- or, at the first round, perhaps not yet:
         * the readable event can come before the urgent one -- is it next? */
        if ((round == 0 && !calm) || atomic_load(&ep->io.pri)) {
            int u = tcp_urgent(q, fd);
            if (u < 0) {
                qenable(q); /* band 1 full or no memory: later */
                break;
            }
            if (u == 2) { /* at the mark, the byte on its way: the next run asks again */
                atomic_store(&ep->io.pri, 1);
                break;
            }
            if (u > 0)
                atomic_store(&ep->io.pri, 0);
            if (u > 0 && !tcp_io_valid(ep))
                break;
        }
        if (!canputnext(q))
            break;
        size_t asked;
        r = tcp_readup(q, ep, fd, &asked);
        full |= r > 0 && (size_t)r == asked;
        if (r > 0 && (size_t)r < asked && !atomic_load(&ep->io.rdhup))
            break; /* the socket is empty: the next segment or FIN is a new edge */
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            if (errno == ENOSR) { /* out of memory: try again later */
                qenable(q);
                break;
            }
            tcp_broken(q, ep, errno);
            break;
        }
        if (r == 0) {
            if (tcp_was_reset(ep, fd))
                tcp_broken(q, ep, ECONNRESET);
            else if (!tcp_eof(q, ep))
                qenable(q);
            break;
        }
    }
    if (round == TCP_ROUNDS)
        qenable(q);
    /* A read filled its buffer: bytes come faster than the reads take them,
     * so the next channel pull reads without polling first (sd_chan.c). */
    atomic_store_explicit(&ep->io.more, full, memory_order_relaxed);
out:
    if (counted)
        ust_iow_run_end(&ep->io);
    tcp_io_put(ep);
    pthread_mutex_lock(&ep->lk);
    relisten = ep->state == TS_IDLE && ep->lfd >= 0;
    pthread_mutex_unlock(&ep->lk);
    if (relisten)
        tcp_relisten(ep);
    return 0;
}
