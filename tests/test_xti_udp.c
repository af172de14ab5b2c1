/* SPDX-License-Identifier: MIT */
/*
 * test_xti_udp.c -- libxnet over the udp provider (docs/TPI.md "udp",
 * docs/XTI.md): t_open("/dev/udp"), t_bind to a struct sockaddr_in,
 * t_sndudata / t_rcvudata with a plain kernel UDP socket as the peer (both
 * directions, zero-length and the largest datagrams, TBADDATA beyond), t_rcvuderr after a send to a closed
 * port (TLOOK, ECONNREFUSED), t_optmgmt of INET_IP IP_TTL written as a long.
 */
#include <poll.h>
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
    return xti_finish();
}
