/* SPDX-License-Identifier: MIT */
/*
 * netperf_sock.c -- the kernel's sockets as an API of `ustreams netperf`
 * (tools/netperf.h): UDP with socket/bind/sendto/recvfrom, TCP with
 * listen/accept/connect/send/recv and shutdown(SHUT_WR) for the orderly
 * release.  The baseline every XTI figure is divided by.  The buffer size,
 * when given, is set with SO_SNDBUF and SO_RCVBUF before bind (Linux doubles
 * it for its bookkeeping, as it does for the udp and tcp providers' sockets).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "netperf.h"

static int set_buffers(int s, int buf)
{
    if (buf <= 0)
        return 0;
    if (setsockopt(s, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)) < 0 ||
        setsockopt(s, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) < 0)
        return -1;
    return 0;
}

/* A socket of type bound to the loopback address, port 0; -1 with err. */
static int bound_socket(int family, int type, int buf, struct np_addr *bound, char *err)
{
    const char *what = "socket";
    int s = socket(family, type | SOCK_CLOEXEC, 0);

    if (s < 0)
        goto fail;
    what = "SO_SNDBUF/SO_RCVBUF";
    if (set_buffers(s, buf) < 0)
        goto fail;
    np_loopback(family, bound);
    what = "bind";
    if (bind(s, (struct sockaddr *)&bound->ss, bound->len) < 0)
        goto fail;
    what = "getsockname";
    bound->len = sizeof(bound->ss);
    if (getsockname(s, (struct sockaddr *)&bound->ss, &bound->len) < 0)
        goto fail;
    return s;
fail:
    snprintf(err, NP_ERRLEN, "%s: %s", what, strerror(errno));
    if (s >= 0)
        close(s);
    return -1;
}

static int sk_dg_open(int family, int buf, int *ep, struct np_addr *bound, char *err)
{
    *ep = bound_socket(family, SOCK_DGRAM, buf, bound, err);
    return *ep < 0 ? -1 : 0;
}

static int sk_dg_send(int ep, const void *data, size_t len, const struct np_addr *to)
{
    ssize_t n;
    do
        n = sendto(ep, data, len, 0, (const struct sockaddr *)&to->ss, to->len);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : 0;
}

static ssize_t sk_dg_recv(int ep, void *data, size_t len)
{
    struct sockaddr_storage from;
    socklen_t flen;
    ssize_t n;
    for (;;) {
        flen = sizeof(from);
        n = recvfrom(ep, data, len, 0, (struct sockaddr *)&from, &flen);
        /* ECONNREFUSED: an ICMP error of an earlier send, as t_rcvuderr. */
        if (n >= 0 || (errno != EINTR && errno != ECONNREFUSED))
            return n;
    }
}

static int sk_st_listen(int family, int buf, int *ep, struct np_addr *bound, char *err)
{
    int s = bound_socket(family, SOCK_STREAM, buf, bound, err);
    if (s < 0)
        return -1;
    if (listen(s, 8) < 0) {
        snprintf(err, NP_ERRLEN, "listen: %s", strerror(errno));
        close(s);
        return -1;
    }
    *ep = s;
    return 0;
}

static int sk_st_accept(int lep, int family, int buf, int *ep, char *err)
{
    (void)family;
    int s;
    do
        s = accept4(lep, NULL, NULL, SOCK_CLOEXEC);
    while (s < 0 && errno == EINTR);
    if (s < 0) {
        snprintf(err, NP_ERRLEN, "accept: %s", strerror(errno));
        return -1;
    }
    /* Inherited from the listener; set again as the XTI side does. */
    if (set_buffers(s, buf) < 0) {
        snprintf(err, NP_ERRLEN, "SO_SNDBUF/SO_RCVBUF: %s", strerror(errno));
        close(s);
        return -1;
    }
    *ep = s;
    return 0;
}

static int sk_st_connect(int family, int buf, const struct np_addr *to, int *ep, char *err)
{
    struct np_addr me;
    int s = bound_socket(family, SOCK_STREAM, buf, &me, err);
    if (s < 0)
        return -1;
    if (connect(s, (const struct sockaddr *)&to->ss, to->len) < 0) {
        snprintf(err, NP_ERRLEN, "connect: %s", strerror(errno));
        close(s);
        return -1;
    }
    *ep = s;
    return 0;
}

static int sk_st_send(int ep, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(ep, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static ssize_t sk_st_recv(int ep, void *data, size_t len)
{
    ssize_t n;
    do
        n = recv(ep, data, len, 0);
    while (n < 0 && errno == EINTR);
    return n;
}

static int sk_st_release(int ep)
{
    return shutdown(ep, SHUT_WR);
}

static int sk_st_nodelay(int ep, char *err)
{
    int one = 1;
    if (setsockopt(ep, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
        snprintf(err, NP_ERRLEN, "TCP_NODELAY: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static void sk_close(int ep)
{
    close(ep);
}

static void sk_last_error(char *err)
{
    snprintf(err, NP_ERRLEN, "%s", strerror(errno));
}

const struct np_api np_api_sock = {
    .name = "sock",
    .dg_open = sk_dg_open,
    .dg_send = sk_dg_send,
    .dg_recv = sk_dg_recv,
    .st_listen = sk_st_listen,
    .st_accept = sk_st_accept,
    .st_connect = sk_st_connect,
    .st_send = sk_st_send,
    .st_recv = sk_st_recv,
    .st_release = sk_st_release,
    .st_nodelay = sk_st_nodelay,
    .close = sk_close,
    .last_error = sk_last_error,
};
