/* SPDX-License-Identifier: MIT */
/*
 * test_xti_udp.c -- libxnet over the udp provider (docs/TPI.md "udp",
 * docs/XTI.md): t_open("/dev/udp"), t_bind to a struct sockaddr_in,
 * t_sndudata / t_rcvudata with a plain kernel UDP socket as the peer (both
 * directions, zero-length and the largest datagrams, TBADDATA beyond), t_rcvuderr after a send to a closed
 * port (TLOOK, ECONNREFUSED), t_optmgmt of INET_IP IP_TTL written as a long.
 * Then t_unbind/t_bind in a loop while a socket keeps sending to the port
 * and the endpoint sends to a closed one: an unbind that timod's perimeter
 * runs inside the read service procedure's putnext, on its thread, must not
 * wait for that procedure's own socket claim (it hung there); every
 * datagram read is one that was sent.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "udp_util.h"
#include "xti_util.h"

/* Wait until fd is readable (2 s). */
static int readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return strm_poll(&p, 1, 2000) == 1;
}

static void t_basic(void)
{
    struct t_info info;
    int fd = t_open(UDPU_DEV, O_RDWR, &info);
    unsigned short sp = 0;
    int s = udpu_sock(AF_INET, &sp);
    struct sockaddr_in me = udpu_v4(0), bound, peer = udpu_v4(sp), from;
    struct t_bind req = {.addr = {.len = sizeof(me), .buf = (char *)&me}};
    struct t_bind ret = {.addr = {.maxlen = sizeof(bound), .buf = (char *)&bound}};
    char buf[128];
    socklen_t flen = sizeof(from);
    int flags = 0;

    if (!CHECK(fd >= 0) || !CHECK(s >= 0))
        return;
    CHECK_EQ(info.servtype, T_CLTS);
    CHECK_EQ(info.tsdu, 65507);
    CHECK_EQ(info.addr, sizeof(struct sockaddr_in6));
    XCHECK_OK(t_bind(fd, &req, &ret));
    CHECK_EQ(ret.addr.len, sizeof(bound));
    CHECK(bound.sin_port != 0);
    CHECK_EQ(t_getstate(fd), T_IDLE);

    /* XTI -> socket */
    struct t_unitdata ud = {.addr = {.len = sizeof(peer), .buf = (char *)&peer},
                            .udata = {.len = 5, .buf = "hello"}};
    XCHECK_OK(t_sndudata(fd, &ud));
    CHECK_EQ(udpu_recv(s, buf, sizeof(buf), &from, &flen), 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    CHECK_EQ(from.sin_port, bound.sin_port);
    ud.udata.len = 0;
    XCHECK_OK(t_sndudata(fd, &ud));
    CHECK_EQ(udpu_recv(s, buf, sizeof(buf), NULL, NULL), 0);

    /* the largest datagram; one more byte is TBADDATA (libxnet, from TSDU_size) */
    static char big[65508];
    static char rbig[65600];
    memset(big, 'u', sizeof(big));
    ud.udata.buf = big;
    ud.udata.len = 65507;
    XCHECK_OK(t_sndudata(fd, &ud));
    CHECK_EQ(udpu_recv(s, rbig, sizeof(rbig), NULL, NULL), 65507);
    ud.udata.len = 65508;
    XCHECK_ERR(t_sndudata(fd, &ud), TBADDATA);

    /* socket -> XTI */
    struct sockaddr_in src;
    struct t_unitdata in = {.addr = {.maxlen = sizeof(src), .buf = (char *)&src},
                            .udata = {.maxlen = sizeof(buf), .buf = buf}};
    CHECK_EQ(sendto(s, "world!", 6, 0, (struct sockaddr *)&bound, sizeof(bound)), 6);
    CHECK(readable(fd));
    XCHECK_OK(t_rcvudata(fd, &in, &flags));
    CHECK_EQ(in.udata.len, 6);
    CHECK(memcmp(buf, "world!", 6) == 0);
    CHECK_EQ(in.addr.len, sizeof(src));
    CHECK_EQ(src.sin_port, htons(sp));
    CHECK_EQ(sendto(s, "", 0, 0, (struct sockaddr *)&bound, sizeof(bound)), 0);
    CHECK(readable(fd));
    XCHECK_OK(t_rcvudata(fd, &in, &flags));
    CHECK_EQ(in.udata.len, 0);

    /* a closed port: T_UDERROR_IND -> TLOOK / T_UDERR, t_rcvuderr */
    close(s);
    ud.udata.len = 1;
    ud.udata.buf = "x";
    XCHECK_OK(t_sndudata(fd, &ud));
    CHECK(readable(fd));
    XCHECK_ERR(t_rcvudata(fd, &in, &flags), TLOOK);
    CHECK_EQ(t_look(fd), T_UDERR);
    struct sockaddr_in eaddr;
    struct t_uderr ue = {.addr = {.maxlen = sizeof(eaddr), .buf = (char *)&eaddr}};
    XCHECK_OK(t_rcvuderr(fd, &ue));
    CHECK_EQ(ue.error, ECONNREFUSED);
    CHECK_EQ(ue.addr.len, sizeof(eaddr));
    CHECK_EQ(eaddr.sin_port, htons(sp));

    /* t_optmgmt: IP_TTL as a long */
    struct {
        struct t_opthdr h;
        long v;
    } o = {.h = {.len = sizeof(o), .level = INET_IP, .name = IP_TTL}, .v = 17}, oret;
    struct t_optmgmt oreq = {.opt = {.len = sizeof(o), .buf = (char *)&o}, .flags = T_NEGOTIATE};
    struct t_optmgmt ores = {.opt = {.maxlen = sizeof(oret), .buf = (char *)&oret}};
    XCHECK_OK(t_optmgmt(fd, &oreq, &ores));
    CHECK_EQ(ores.flags, T_SUCCESS);
    CHECK_EQ(oret.v, 17);

    XCHECK_OK(t_unbind(fd));
    XCHECK_OK(t_close(fd));
}

static atomic_int churn_stop;

/* Send numbered datagrams to port until told to stop. */
static void *churn_sender(void *arg)
{
    unsigned short port = (unsigned short)(long)arg, sp;
    int s = udpu_sock(AF_INET, &sp);
    struct sockaddr_in to = udpu_v4(port);
    unsigned n = 0;

    while (s >= 0 && !atomic_load(&churn_stop)) {
        char b[16];
        int len = snprintf(b, sizeof(b), "d%u", n++);
        sendto(s, b, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to));
        if (n % 8 == 0)
            usleep(200); /* paced: the unbind loop must be able to catch up */
    }
    if (s >= 0)
        close(s);
    return NULL;
}

/* Take one event of fd, if any: a datagram (counted, checked) or an error. */
static void churn_take(int fd, int *got, int *bad)
{
    char buf[32];
    struct t_unitdata in = {.udata = {.maxlen = sizeof(buf), .buf = buf}};
    int flags = 0;

    if (t_rcvudata(fd, &in, &flags) == 0) {
        ++*got;
        *bad += in.udata.len < 2 || buf[0] != 'd';
    } else if (t_errno == TLOOK && t_look(fd) == T_UDERR) {
        struct t_uderr ue = {0};
        XCHECK_OK(t_rcvuderr(fd, &ue));
    } else {
        CHECK_EQ(t_errno, TNODATA);
    }
}

static void t_unbind_churn(void)
{
    unsigned short dead_port = 0;
    int fd = t_open(UDPU_DEV, O_RDWR | O_NONBLOCK, NULL);
    int ds = udpu_sock(AF_INET, &dead_port); /* a port, closed below */
    struct sockaddr_in me = udpu_v4(0), bound, dead;
    struct t_bind req = {.addr = {.len = sizeof(me), .buf = (char *)&me}};
    struct t_bind ret = {.addr = {.maxlen = sizeof(bound), .buf = (char *)&bound}};
    pthread_t th;
    int got = 0, bad = 0;

    if (!CHECK(fd >= 0) || !CHECK(ds >= 0))
        return;
    close(ds);
    dead = udpu_v4(dead_port);
    XCHECK_OK(t_bind(fd, &req, &ret));
    me = bound; /* the same port at every bind */
    XCHECK_OK(t_unbind(fd));
    atomic_store(&churn_stop, 0);
    CHECK_EQ(pthread_create(&th, NULL, churn_sender, (void *)(long)ntohs(bound.sin_port)), 0);
    for (int i = 0; i < 300; i++) {
        ret.addr.maxlen = sizeof(bound);
        if (t_bind(fd, &req, &ret) < 0) {
            CHECK(t_errno == TADDRBUSY); /* another program took the port */
            break;
        }
        struct t_unitdata ud = {.addr = {.len = sizeof(dead), .buf = (char *)&dead},
                                .udata = {.len = 1, .buf = "x"}};
        t_sndudata(fd, &ud); /* an ICMP error for the read side's error queue */
        for (int k = 0; k < 4; k++)
            churn_take(fd, &got, &bad);
        /* t_unbind refuses (TLOOK) while an event waits: take it, again */
        int r, tries = 0;
        while ((r = t_unbind(fd)) < 0 && t_errno == TLOOK && tries++ < 100000)
            churn_take(fd, &got, &bad);
        XCHECK_OK(r);
    }
    /* The churned endpoint still receives: one blocking read while the
     * sender runs (on a loaded machine the loop above may have taken none:
     * its reads do not wait). */
    ret.addr.maxlen = sizeof(bound);
    if (got == 0 && t_bind(fd, &req, &ret) == 0) {
        struct sockaddr_in src;
        char buf[32];
        struct t_unitdata in = {.addr = {.maxlen = sizeof(src), .buf = (char *)&src},
                                .udata = {.maxlen = sizeof(buf), .buf = buf}};
        int flags = 0;
        xti_set_nb(fd, 0);
        while (t_rcvudata(fd, &in, &flags) < 0 && t_errno == TLOOK && t_look(fd) == T_UDERR) {
            struct t_uderr ue = {0};
            XCHECK_OK(t_rcvuderr(fd, &ue));
        }
        got += in.udata.len >= 2 && buf[0] == 'd';
        xti_set_nb(fd, 1);
        int r, tries = 0;
        while ((r = t_unbind(fd)) < 0 && t_errno == TLOOK && tries++ < 100000)
            churn_take(fd, &got, &bad);
        XCHECK_OK(r);
    }
    atomic_store(&churn_stop, 1);
    pthread_join(th, NULL);
    CHECK_EQ(bad, 0);
    CHECK(got > 0); /* bound most of the time: some datagrams came in */
    XCHECK_OK(t_close(fd));
}

int main(void)
{
    int fds;

    xti_require(UDPU_DEV);
    t_basic(); /* starts the epoll thread, whose descriptors stay */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    fds = udpu_nfds();
    t_basic();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(udpu_nfds(), fds);
    t_unbind_churn();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(udpu_nfds(), fds);
    return xti_finish();
}
