/* SPDX-License-Identifier: MIT */
/*
 * test_xti_gso.c -- UDP GSO on udp's drain and UDP GRO on its receive path
 * (src/drivers/udp_data.c, docs/TPI.md "GSO and GRO", issue 23).
 *
 * The drain runs when units queued on udp's write queue: the socket pushed
 * back, or another send held the endpoint's sender claim.  Loopback never
 * pushes back (the kernel frees a datagram's send memory as it passes lo),
 * so the tests hold the claim (white box: udp_ep.tx) while t_sndudata
 * queues, as a concurrent sender would, then let the drain run.
 *
 *   GS.1 192 units of 1000 B to one kernel socket with UDP_GRO on: all
 *        arrive once, in order, exact; they came as UDP_SEGMENT runs (the
 *        receiver sees coalesced buffers of up to 64 segments); a second
 *        receiver without UDP_GRO gets them one by one, same bytes.
 *   GS.2 mixed: runs of one size to two destinations interleaved, shorter
 *        last units, zero-length units, sizes 1 .. 9000: each receiver
 *        gets its units once, in order, with exact length and the XTI
 *        endpoint as source.
 *   GS.3 fallback: checksums off on the provider's socket (SO_NO_CHECK), so
 *        the kernel refuses UDP_SEGMENT (EINVAL): the refused run goes again
 *        unit by unit, GSO is off for the endpoint (udp_ep.gso_off), every
 *        unit arrives once, in order, none coalesced.
 *   GS.4 GRO: a kernel socket sends UDP_SEGMENT runs (10 x 100 B + 37 B,
 *        64 x 1000 B) to an XTI endpoint whose socket has UDP_GRO on:
 *        t_rcvudata returns each datagram alone, exact length, the sender's
 *        address; a 60-byte buffer takes a 100-byte one as 60 + T_MORE, 40.
 *   GS.5 IPv6: 101 units to ::1 leave as two runs (64 + 37), each unit
 *        once, in order, exact, from the endpoint's address.
 *   GS.6 a run to a closed port between runs to an open one: the open
 *        port's units all arrive in order; T_UDERROR_IND(ECONNREFUSED)
 *        names the closed port; the endpoint sends on.
 *   GS.7 the GRO keeper: after the first endpoint one UDP_GRO socket stays
 *        open with every endpoint closed, and only one is made.
 *   End: no message block outstanding.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "drivers/udp.h"
#include "sd_chan.h"
#include "sthead.h"
#include "udp_gso_send.h"
#include "xti_util.h"

/* A kernel UDP socket on 127.0.0.1 (UDP_GRO on if gro), 8 MiB receive
 * buffer; its address in *a. */
static int ksock(struct sockaddr_in *a, int gro)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), big = 8 << 20;
    socklen_t l = sizeof(*a);
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)a, sizeof(*a)) == 0);
    CHECK(getsockname(s, (struct sockaddr *)a, &l) == 0);
    if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
        setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    if (gro)
        CHECK(setsockopt(s, SOL_UDP, UDP_GRO, &gro, sizeof(gro)) == 0);
    return s;
}

/* An XTI udp endpoint on 127.0.0.1; its address in *a. */
static int xudp(struct sockaddr_in *a)
{
    struct sockaddr_in req = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct xti_addr b;
    int fd = xti_bound("/dev/udp", 0, &req, sizeof(req), &b);
    CHECK(fd >= 0);
    if (fd >= 0)
        memcpy(a, b.buf, sizeof(*a));
    return fd;
}

/* The udp endpoint under XTI descriptor fd (white box). */
static struct udp_ep *ep_of(int fd)
{
    struct stdata *sd = ust_sd_peek(fd);
    queue_t *rq = NULL;
    CHECK(sd != NULL);
    ust_lock(&sd->sd_lock);
    CHECK(ust_sd_chan_of(sd, &rq) != NULL);
    ust_unlock(&sd->sd_lock);
    CHECK(rq != NULL);
    return rq != NULL ? rq->q_ptr : NULL;
}

/* Take / give back ep's sender claim: while it is held, t_sndudata queues. */
static void hold(struct udp_ep *ep)
{
    for (int idle = 0; !atomic_compare_exchange_strong(&ep->tx, &idle, 1); idle = 0)
        sched_yield();
}

static void release(struct udp_ep *ep)
{
    atomic_store(&ep->tx, 0);
}

/* Unit number seq of len bytes: seq in the first 4 (when there is room),
 * then (seq + i) & 0xff. */
static void fill(unsigned char *p, size_t len, uint32_t seq)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(seq + i);
    if (len >= 4)
        memcpy(p, &seq, 4);
}

static unsigned char obuf[65536], ibuf[65536];

static void snd(int fd, const struct sockaddr_in *to, size_t len, uint32_t seq)
{
    struct t_unitdata ud;
    memset(&ud, 0, sizeof(ud));
    fill(obuf, len, seq);
    ud.addr.buf = (char *)to;
    ud.addr.len = sizeof(*to);
    ud.udata.buf = (char *)obuf;
    ud.udata.len = (unsigned)len;
    XCHECK_OK(t_sndudata(fd, &ud));
}

/* Whether a and b (sockaddr_in or sockaddr_in6) name one address and port. */
static int same_addr(const void *a, const void *b)
{
    sa_family_t fa, fb;
    memcpy(&fa, a, sizeof(fa));
    memcpy(&fb, b, sizeof(fb));
    if (fa != fb)
        return 0;
    if (fa == AF_INET) {
        struct sockaddr_in x, y;
        memcpy(&x, a, sizeof(x));
        memcpy(&y, b, sizeof(y));
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    struct sockaddr_in6 x, y;
    memcpy(&x, a, sizeof(x));
    memcpy(&y, b, sizeof(y));
    return x.sin6_port == y.sin6_port && memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
}

struct expect {
    size_t len;
    uint32_t seq;
};

/* Receive on kernel socket s until the n units of e came (3 s without one
 * fails): each once, in order, with its length and bytes, from src.
 * Returns how many buffers held more than one datagram (UDP_GRO). */
static int krecv(int s, const struct expect *e, int n, const void *src)
{
    int got = 0, coalesced = 0;
    unsigned char want[65536];
    while (got < n) {
        struct pollfd p = {.fd = s, .events = POLLIN};
        if (!CHECK(poll(&p, 1, 3000) == 1)) {
            fprintf(stderr, "  krecv: %d of %d came\n", got, n);
            return coalesced;
        }
        struct sockaddr_in6 from;
        union {
            struct cmsghdr h;
            unsigned char b[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec iov = {.iov_base = ibuf, .iov_len = sizeof(ibuf)};
        struct msghdr m = {.msg_name = &from,
                           .msg_namelen = sizeof(from),
                           .msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = ctl.b,
                           .msg_controllen = sizeof(ctl.b)};
        ssize_t r = recvmsg(s, &m, MSG_DONTWAIT);
        if (r < 0)
            continue;
        CHECK(!(m.msg_flags & MSG_TRUNC));
        CHECK(same_addr(&from, src));
        size_t seg = (size_t)r;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                int g;
                memcpy(&g, CMSG_DATA(c), sizeof(g));
                if (g > 0 && (size_t)g < seg)
                    seg = (size_t)g;
            }
        }
        if (seg < (size_t)r)
            coalesced++;
        size_t off = 0;
        do {
            size_t l = (size_t)r - off < seg ? (size_t)r - off : seg;
            if (!CHECK(got < n))
                return coalesced;
            fill(want, e[got].len, e[got].seq);
            if (!CHECK_EQ(l, e[got].len) || !CHECK(memcmp(ibuf + off, want, l) == 0)) {
                fprintf(stderr, "  krecv: unit %d (seq %u)\n", got, e[got].seq);
                return coalesced;
            }
            got++;
            off += l;
        } while (off < (size_t)r);
    }
    return coalesced;
}

/* GS.1 */
static void gs1_equal(void)
{
    struct sockaddr_in xa, ga, pa;
    int fd = xudp(&xa), g = ksock(&ga, 1), p = ksock(&pa, 0);
    struct udp_ep *ep = ep_of(fd);
    static struct expect e[192];
    for (int round = 0; round < 2; round++) {
        const struct sockaddr_in *to = round == 0 ? &ga : &pa;
        hold(ep);
        for (int i = 0; i < 192; i++) {
            e[i] = (struct expect){1000, (uint32_t)(round * 1000 + i)};
            snd(fd, to, e[i].len, e[i].seq);
        }
        release(ep);
        int co = krecv(round == 0 ? g : p, e, 192, &xa);
        if (round == 0)
            CHECK(co >= 3); /* 192 units: at least 3 runs of up to 64 */
        else
            CHECK_EQ(co, 0);
    }
    CHECK_EQ(ep->gso_off, 0);
    t_close(fd);
    close(g);
    close(p);
}

/* GS.2 */
static void gs2_mixed(void)
{
    struct sockaddr_in xa, aa, ba;
    int fd = xudp(&xa), a = ksock(&aa, 1), b = ksock(&ba, 0);
    struct udp_ep *ep = ep_of(fd);
    static const struct {
        int n, to;
        size_t len, last;
    } runs[] = {{5, 0, 700, 700}, {3, 1, 700, 700},  {4, 0, 300, 120},  {1, 0, 100, 100},
                {6, 0, 1200, 1000}, {2, 0, 0, 0},    {70, 1, 512, 511}, {3, 0, 1, 1},
                {9, 0, 9000, 9000}, {2, 1, 4, 1500}, {40, 0, 64, 64},   {1, 1, 0, 0}};
    static struct expect ea[400], eb[400];
    int na = 0, nb = 0;
    uint32_t seq = 0;
    hold(ep);
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        for (int i = 0; i < runs[r].n; i++) {
            size_t len = i == runs[r].n - 1 ? runs[r].last : runs[r].len;
            struct expect x = {len, seq++};
            if (runs[r].to == 0)
                ea[na++] = x;
            else
                eb[nb++] = x;
            snd(fd, runs[r].to == 0 ? &aa : &ba, len, x.seq);
        }
        if (r == 6) { /* the queue near its high-water mark: let it drain */
            release(ep);
            krecv(b, eb, nb, &xa);
            nb = 0;
            hold(ep);
        }
    }
    release(ep);
    krecv(a, ea, na, &xa);
    krecv(b, eb, nb, &xa);
    CHECK_EQ(ep->gso_off, 0);
    t_close(fd);
    close(a);
    close(b);
}

/* GS.3 */
static void gs3_fallback(void)
{
    struct sockaddr_in xa, ga;
    int fd = xudp(&xa), g = ksock(&ga, 1), one = 1;
    struct udp_ep *ep = ep_of(fd);
    static struct expect e[300];
    pthread_mutex_lock(&ep->lk);
    int s = ep->fd;
    pthread_mutex_unlock(&ep->lk);
    CHECK(setsockopt(s, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)) == 0);
    for (int round = 0; round < 2; round++) {
        hold(ep);
        for (int i = 0; i < 150; i++) {
            e[i] = (struct expect){i % 50 == 49 ? 17 : 800, (uint32_t)(round * 150 + i)};
            snd(fd, &ga, e[i].len, e[i].seq);
        }
        release(ep);
        CHECK_EQ(krecv(g, e, 150, &xa), 0);
        CHECK_EQ(ep->gso_off, 1);
    }
    t_close(fd);
    close(g);
}

/* Send one UDP_SEGMENT datagram of n segments of seg bytes and a last of
 * last bytes from kernel socket s to to; seq of the first in *seq. */
static void ksend_gso(int s, const struct sockaddr_in *to, int n, size_t seg, size_t last,
                      uint32_t *seq, struct expect *e)
{
    size_t off = 0;
    for (int i = 0; i <= n; i++) {
        size_t l = i < n ? seg : last;
        if (l == 0)
            break;
        e[i] = (struct expect){l, (*seq)++};
        fill(obuf + off, l, e[i].seq);
        off += l;
    }
    CHECK_EQ(udp_gso_send(s, to, obuf, off, (uint16_t)seg), (long)off);
}

/* t_rcvudata of one whole unit e from src (blocking). */
static void xrecv(int fd, const struct expect *e, const struct sockaddr_in *src)
{
    struct sockaddr_in from;
    struct t_unitdata ud;
    int flags = 0;
    unsigned char want[65536];
    memset(&ud, 0, sizeof(ud));
    ud.addr.buf = (char *)&from;
    ud.addr.maxlen = sizeof(from);
    ud.udata.buf = (char *)ibuf;
    ud.udata.maxlen = sizeof(ibuf);
    XCHECK_OK(t_rcvudata(fd, &ud, &flags));
    CHECK_EQ(flags, 0);
    CHECK_EQ(ud.udata.len, e->len);
    CHECK_EQ(ud.addr.len, sizeof(from));
    CHECK(from.sin_port == src->sin_port && from.sin_addr.s_addr == src->sin_addr.s_addr);
    fill(want, e->len, e->seq);
    if (!CHECK(memcmp(ibuf, want, e->len) == 0))
        fprintf(stderr, "  xrecv: seq %u\n", e->seq);
}

/* GS.4 */
static void gs4_gro(void)
{
    struct sockaddr_in xa, ka;
    int fd = xudp(&xa), k = ksock(&ka, 0), on = 0;
    struct udp_ep *ep = ep_of(fd);
    socklen_t ol = sizeof(on);
    static struct expect e[70];
    uint32_t seq = 0;

    pthread_mutex_lock(&ep->lk);
    int s = ep->fd;
    pthread_mutex_unlock(&ep->lk);
    CHECK(getsockopt(s, SOL_UDP, UDP_GRO, &on, &ol) == 0 && on == 1);
    ksend_gso(k, &xa, 10, 100, 37, &seq, e);
    for (int i = 0; i < 11; i++)
        xrecv(fd, &e[i], &ka);
    ksend_gso(k, &xa, 63, 1000, 1000, &seq, e);
    for (int i = 0; i < 64; i++)
        xrecv(fd, &e[i], &ka);
    /* truncation: a 100-byte datagram into 60 bytes is 60 + T_MORE, then 40 */
    ksend_gso(k, &xa, 2, 100, 0, &seq, e);
    for (int i = 0; i < 2; i++) {
        struct t_unitdata ud;
        unsigned char want[100];
        int flags = 0;
        memset(&ud, 0, sizeof(ud));
        ud.udata.buf = (char *)ibuf;
        ud.udata.maxlen = 60;
        fill(want, 100, e[i].seq);
        XCHECK_OK(t_rcvudata(fd, &ud, &flags));
        CHECK_EQ(ud.udata.len, 60);
        CHECK_EQ(flags, T_MORE);
        CHECK(memcmp(ibuf, want, 60) == 0);
        XCHECK_OK(t_rcvudata(fd, &ud, &flags));
        CHECK_EQ(ud.udata.len, 40);
        CHECK_EQ(flags, 0);
        CHECK(memcmp(ibuf, want + 60, 40) == 0);
    }
    t_close(fd);
    close(k);
}

/* GS.5: IPv6, a run of 100 units of 500 B and a shorter last to ::1 with
 * UDP_GRO on; each once, in order, from the endpoint's address. */
static void gs5_v6(void)
{
    struct sockaddr_in6 req = {.sin6_family = AF_INET6, .sin6_addr = in6addr_loopback}, xa, ga;
    struct xti_addr b;
    int g = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), on = 1, big = 8 << 20;
    socklen_t l = sizeof(ga);
    if (g < 0 || bind(g, (struct sockaddr *)&req, sizeof(req)) != 0) {
        fprintf(stderr, "  GS.5: no IPv6 loopback here: skipped\n");
        if (g >= 0)
            close(g);
        return;
    }
    CHECK(getsockname(g, (struct sockaddr *)&ga, &l) == 0);
    CHECK(setsockopt(g, SOL_UDP, UDP_GRO, &on, sizeof(on)) == 0);
    if (setsockopt(g, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
        setsockopt(g, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    int fd = xti_bound("/dev/udp", 0, &req, sizeof(req), &b);
    CHECK(fd >= 0);
    if (fd < 0) {
        close(g);
        return;
    }
    memcpy(&xa, b.buf, sizeof(xa));
    struct udp_ep *ep = ep_of(fd);
    static struct expect e[101];
    hold(ep);
    for (int i = 0; i < 101; i++) {
        e[i] = (struct expect){i == 100 ? 33 : 500, (uint32_t)(7000 + i)};
        struct t_unitdata ud;
        memset(&ud, 0, sizeof(ud));
        fill(obuf, e[i].len, e[i].seq);
        ud.addr.buf = (char *)&ga;
        ud.addr.len = sizeof(ga);
        ud.udata.buf = (char *)obuf;
        ud.udata.len = (unsigned)e[i].len;
        XCHECK_OK(t_sndudata(fd, &ud));
    }
    release(ep);
    CHECK(krecv(g, e, 101, &xa) >= 2); /* 64 + 37: two runs */
    CHECK_EQ(ep->gso_off, 0);
    t_close(fd);
    close(g);
}

/* GS.6: a run to a closed port between runs to an open one: the open
 * port gets its units, once, in order; the endpoint gets T_UDERROR_IND
 * (ECONNREFUSED) naming the closed port, and no other error. */
static void gs6_refused(void)
{
    struct sockaddr_in xa, ga, closed;
    int fd = xudp(&xa), g = ksock(&ga, 1), c = ksock(&closed, 0);
    struct udp_ep *ep = ep_of(fd);
    static struct expect e[40];
    close(c); /* a port nobody listens on */
    hold(ep);
    for (int i = 0; i < 20; i++) {
        e[i] = (struct expect){300, (uint32_t)(9000 + i)};
        snd(fd, &ga, 300, e[i].seq);
    }
    for (int i = 0; i < 10; i++)
        snd(fd, &closed, 300, 0);
    for (int i = 20; i < 40; i++) {
        e[i] = (struct expect){300, (uint32_t)(9000 + i)};
        snd(fd, &ga, 300, e[i].seq);
    }
    release(ep);
    krecv(g, e, 40, &xa);
    int errs = 0;
    for (int t = 0; t < 300 && errs == 0; t++) { /* the ICMP error comes up the read side */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, 10);
        while (t_look(fd) == T_UDERR) {
            struct sockaddr_in dest;
            struct t_uderr ue;
            memset(&ue, 0, sizeof(ue));
            ue.addr.buf = (char *)&dest;
            ue.addr.maxlen = sizeof(dest);
            XCHECK_OK(t_rcvuderr(fd, &ue));
            CHECK_EQ(ue.error, ECONNREFUSED);
            CHECK(ue.addr.len == sizeof(dest) && same_addr(&dest, &closed));
            errs++;
        }
    }
    CHECK(errs >= 1);
    /* the endpoint sends on: one more run to the open port */
    hold(ep);
    for (int i = 0; i < 8; i++) {
        e[i] = (struct expect){300, (uint32_t)(9100 + i)};
        snd(fd, &ga, 300, e[i].seq);
    }
    release(ep);
    krecv(g, e, 8, &xa);
    CHECK_EQ(ep->gso_off, 0);
    t_close(fd);
    close(g);
}

/* Descriptors of this process that are UDP sockets with UDP_GRO on. */
static int gro_sockets(void)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) {
        int on = 0, type = 0;
        socklen_t l = sizeof(on), tl = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM)
            continue;
        if (getsockopt(fd, SOL_UDP, UDP_GRO, &on, &l) == 0 && on)
            n++;
    }
    return n;
}

/* GS.7 the GRO keeper (udp_opt.c): once a /dev/udp endpoint has been made,
 * one UDP socket with UDP_GRO on stays open when every endpoint is closed,
 * so the kernel's static key is not lowered and raised again (a text patch
 * on every CPU) at each t_open + t_close; and only one is made. */
static void gs7_keeper(void)
{
    for (int round = 0; round < 3; round++) {
        int fd = t_open("/dev/udp", O_RDWR, NULL);
        if (!CHECK(fd >= 0))
            return;
        XCHECK_OK(t_bind(fd, NULL, NULL));
        CHECK_EQ(gro_sockets(), 2); /* the endpoint's and the keeper */
        CHECK_EQ(t_close(fd), 0);
        CHECK_EQ(ustreams_quiesce(5000), 0);
        CHECK_EQ(gro_sockets(), 1); /* the keeper, alone */
    }
}

int main(void)
{
    xti_require("/dev/udp");
    alarm(120); /* a lost drain hangs: fail loudly */
    gs1_equal();
    gs2_mixed();
    gs3_fallback();
    gs4_gro();
    gs5_v6();
    gs6_refused();
    gs7_keeper();
    return xti_finish();
}
