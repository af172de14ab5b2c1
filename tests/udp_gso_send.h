/* SPDX-License-Identifier: MIT */
/*
 * udp_gso_send.h -- one UDP_SEGMENT (GSO) send from a kernel socket, shared
 * by tests/test_xti_gso.c and bench/xti_gro.c: `len` bytes of `buf` to `to`,
 * cut by the kernel into datagrams of `seg` bytes (the last may be shorter).
 * Returns sendmsg's result.
 */
#ifndef USTREAMS_TESTS_UDP_GSO_SEND_H
#define USTREAMS_TESTS_UDP_GSO_SEND_H

#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static inline ssize_t udp_gso_send(int s, const struct sockaddr_in *to, void *buf, size_t len,
                                   uint16_t seg)
{
    union {
        struct cmsghdr h;
        unsigned char b[CMSG_SPACE(sizeof(uint16_t))];
    } ctl;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr m = {.msg_name = (void *)to,
                       .msg_namelen = sizeof(*to),
                       .msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.b,
                       .msg_controllen = sizeof(ctl.b)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(seg));
    memcpy(CMSG_DATA(c), &seg, sizeof(seg));
    return sendmsg(s, &m, 0);
}

#endif
