/* SPDX-License-Identifier: MIT */
/*
 * test_rawip.c -- the rawip TPI provider over raw IP sockets (src/drivers/
 * rawip.c, the udp code; docs/TPI.md "rawip"), raw TPI on 127.0.0.1 and ::1.
 * Skipped (exit 77, with a message) where the process may not make raw
 * sockets.
 *   1. Without CAP_NET_RAW (dropped in a fork child): open fails with EPERM.
 *   2. T_INFO_ACK; bind with the port field naming the protocol (0: ICMP),
 *      the bound address reports it; a protocol above 255 TBADADDR;
 *      connection primitives TNOTSUPPORT.
 *   3. An ICMP echo request to 127.0.0.1: the kernel's echo reply comes up
 *      as T_UNITDATA_IND, the IP header taken off, SRC 127.0.0.1.
 *   4. Two endpoints of an unassigned protocol (253), IPv4 and IPv6:
 *      unit data from one reaches the other intact; oversized
 *      T_UDERROR_IND(EMSGSIZE); UDP_CHECKSUM T_NOTSUPPORT.
 */
#include <linux/capability.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/tihdr.h>
#include <unistd.h>
#include <xti.h>

#include "fork_util.h"
#include "tl_util.h"
#include "udp_util.h"

#define RAW_DEV "/dev/rawip"
#define PROTO_TEST 253 /* RFC 3692: for experimentation */

static int bind_to(int fd, const void *a, int len, struct sockaddr_in6 *out)
{
    int olen = 0;
    struct sockaddr_in6 tmp;
    return tlu_bind(fd, a, len, 0, out ? out : &tmp, &olen, NULL);
}

/* Drop CAP_NET_RAW from this process's effective set; 0 on success. */
static int drop_net_raw(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];

    if (syscall(SYS_capget, &h, d) != 0)
        return -1;
    d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
    return (int)syscall(SYS_capset, &h, d);
}

static int child_noraw(void *p)
{
    (void)p;
    CHECK_EQ(drop_net_raw(), 0);
    CHECK_EQ(strm_open(RAW_DEV, O_RDWR), -1);
    CHECK_EQ(errno, EPERM);
    return FK_CHILD_FAILED();
}

static unsigned short csum(const unsigned char *p, size_t len)
{
    unsigned long s = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (unsigned long)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        s += (unsigned long)p[len - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (unsigned short)~s;
}

static void t_basics(void)
{
    int fd = tlu_open(RAW_DEV);
    struct T_info_ack ia;
    struct sockaddr_in6 ba;
    struct sockaddr_in a4 = udpu_v4(300);

    CHECK(tlu_info(fd, &ia));
    CHECK_EQ(ia.SERV_type, T_CLTS);
    CHECK_EQ(ia.TSDU_size, 65515);
    CHECK_EQ(ia.ADDR_size, sizeof(struct sockaddr_in6));
    CHECK_EQ(bind_to(fd, &a4, sizeof(a4), NULL), TBADADDR); /* protocol 300 */
    a4 = udpu_v4(IPPROTO_RAW);
    CHECK_EQ(bind_to(fd, &a4, sizeof(a4), NULL), TBADADDR);
    CHECK_EQ(bind_to(fd, NULL, 0, &ba), 0); /* ICMP */
    CHECK_EQ(ba.sin6_family, AF_INET);
    CHECK_EQ(ntohs(((struct sockaddr_in *)(void *)&ba)->sin_port), IPPROTO_ICMP);
    CHECK_EQ(tlu_conn_req(fd, &a4, sizeof(a4)), 0);
    CHECK(tlu_err(fd, T_CONN_REQ, TNOTSUPPORT, 0));
    CHECK_EQ(strm_close(fd), 0);
}

static void t_echo(void)
{
    int fd = tlu_open(RAW_DEV), found = 0;
    struct sockaddr_in lo = udpu_v4(IPPROTO_ICMP), dst = udpu_v4(0);
    unsigned char req[8 + 16];
    unsigned short id = (unsigned short)getpid(), ck;
    struct tlu_msg m;

    CHECK_EQ(bind_to(fd, &lo, sizeof(lo), NULL), 0);
    memset(req, 0, sizeof(req));
    req[0] = 8; /* echo request */
    req[4] = (unsigned char)(id >> 8);
    req[5] = (unsigned char)id;
    req[7] = 1;
    memcpy(req + 8, "ustreams-rawip!!", 16);
    ck = csum(req, sizeof(req));
    req[2] = (unsigned char)(ck >> 8);
    req[3] = (unsigned char)ck;
    CHECK_EQ(tlu_unitdata(fd, &dst, sizeof(dst), req, sizeof(req)), 0);
    /* a raw ICMP socket sees our request too; look for the reply */
    for (int i = 0; i < 10 && !found; i++) {
        if (!CHECK_EQ(tlu_get(fd, &m), T_UNITDATA_IND))
            break;
        if (m.dlen == (int)sizeof(req) && m.d[0] == 0 && m.d[4] == req[4] && m.d[5] == req[5]) {
            struct sockaddr_in src;
            memcpy(&src, m.c.b + m.c.p.unitdata_ind.SRC_offset, sizeof(src));
            CHECK_EQ(m.c.p.unitdata_ind.SRC_length, sizeof(src));
            CHECK_EQ(src.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
            CHECK(memcmp(m.d + 8, req + 8, 16) == 0);
            found = 1;
        }
    }
    CHECK(found);
    CHECK_EQ(strm_close(fd), 0);
}

static void t_proto(int family)
{
    int a = tlu_open(RAW_DEV), b = tlu_open(RAW_DEV), len;
    struct sockaddr_in6 addr, dst;
    static char big[70000];
    struct tlu_msg m;

    if (family == AF_INET) {
        struct sockaddr_in a4 = udpu_v4(PROTO_TEST);
        memcpy(&addr, &a4, sizeof(a4));
        len = sizeof(a4);
    } else {
        addr = udpu_v6(PROTO_TEST);
        len = sizeof(addr);
    }
    CHECK_EQ(bind_to(a, &addr, len, NULL), 0);
    CHECK_EQ(bind_to(b, &addr, len, NULL), 0);
    memcpy(&dst, &addr, sizeof(dst));
    dst.sin6_port = 0; /* the protocol is the endpoint's */
    CHECK_EQ(tlu_unitdata(a, &dst, len, "raw payload", 11), 0);
    /* both endpoints of the protocol get a copy: check b's */
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 11);
    CHECK(memcmp(m.d, "raw payload", 11) == 0);
    CHECK_EQ(m.c.p.unitdata_ind.SRC_length, len);
    /* oversized */
    CHECK_EQ(tlu_unitdata(a, &dst, len, big, 65536), 0);
    do
        CHECK(tlu_get(a, &m) >= 0);
    while (m.c.prim == T_UNITDATA_IND); /* its own copy of the first */
    CHECK_EQ(m.c.prim, T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EMSGSIZE);
    /* UDP_CHECKSUM does not apply */
    {
        struct {
            struct T_optmgmt_req r;
            struct t_opthdr h;
            t_uscalar_t v;
        } o = {.r = {.PRIM_type = T_OPTMGMT_REQ, .OPT_length = sizeof(struct t_opthdr) + 4,
                     .OPT_offset = sizeof(struct T_optmgmt_req), .MGMT_flags = T_NEGOTIATE},
               .h = {.len = sizeof(struct t_opthdr) + 4, .level = INET_UDP, .name = UDP_CHECKSUM},
               .v = T_YES};
        CHECK_EQ(tlu_put(a, &o, sizeof(o), NULL, -1, 0), 0);
        CHECK_EQ(tlu_get(a, &m), T_OPTMGMT_ACK);
        CHECK_EQ(m.c.p.optmgmt_ack.MGMT_flags, T_NOTSUPPORT);
    }
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);
}

int main(void)
{
    int fd = strm_open(RAW_DEV, O_RDWR), fds;

    if (fd < 0) {
        printf("SKIP: %s: %s (raw sockets need CAP_NET_RAW)\n", RAW_DEV, strerror(errno));
        return 77;
    }
    strm_close(fd);
    CHECK_EQ(fk_run(child_noraw, NULL, 10000), 0);
    t_basics(); /* the epoll thread starts: its descriptors stay */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    fds = udpu_nfds();
    t_echo();
    t_proto(AF_INET);
    if (udpu_have_v6())
        t_proto(AF_INET6);
    else
        printf("no ::1 here: IPv6 case not run\n");
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(udpu_nfds(), fds);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
