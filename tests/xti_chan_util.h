/* SPDX-License-Identifier: MIT */
/*
 * xti_chan_util.h -- what the channel reader's tests share
 * (tests/test_xti_chan.c, tests/test_xti_chan_token.c): kernel and XTI udp
 * endpoints on 127.0.0.1, whether a reader polls a channel (white box), a
 * kernel poll(2)'s view of POLLIN, and the invariant of every read's end.
 */
#ifndef USTREAMS_TESTS_XTI_CHAN_UTIL_H
#define USTREAMS_TESTS_XTI_CHAN_UTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stropts.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io_watch.h"
#include "sd_chan.h"
#include "sthead.h"
#include "xti_util.h"
static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A kernel UDP socket on 127.0.0.1, port chosen; its address in *a. */
static inline int ksock(struct sockaddr_in *a)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    socklen_t l = sizeof(*a);
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)a, sizeof(*a)) == 0);
    getsockname(s, (struct sockaddr *)a, &l);
    struct timeval tv = {5, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return s;
}

/* An XTI udp endpoint on 127.0.0.1; its address in *a. */
static inline int xudp(struct sockaddr_in *a)
{
    struct sockaddr_in req = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct xti_addr b;
    int fd = xti_bound("/dev/udp", 0, &req, sizeof(req), &b);
    if (fd >= 0)
        memcpy(a, b.buf, sizeof(*a));
    return fd;
}

/* Is the channel of fd polled by a reader right now? (white box) */
static inline int polled(int fd)
{
    struct stdata *sd = ust_sd_peek(fd);
    if (sd == NULL)
        return 0;
    queue_t *rq = NULL;
    ust_lock(&sd->sd_lock);
    struct ust_iow *io = ust_sd_chan_of(sd, &rq);
    ust_unlock(&sd->sd_lock);
    return io != NULL && (atomic_load(&io->poll) & IOW_POLLING);
}

/* Wait up to 3 s until fd's channel is polled. */
static inline int wait_polled(int fd)
{
    for (int i = 0; i < 3000; i++) {
        if (polled(fd))
            return 1;
        sleep_ms(1);
    }
    return 0;
}

/* POLLIN on the descriptor, as the kernel reports it (an event loop's view). */
static inline int kernel_pollin(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* The lazy token's bound is about 2 ms; a shared machine's scheduling adds
 * to it: a poll(2) for leftovers waits this long. */
#define TOK_WAIT_MS 20

/* POLLIN within ms, as a poll(2) from outside the library waits for it. */
static inline int kernel_pollin_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* One datagram from fd into buf (blocking as fd is): its length, or -1. */
static inline int rcvu(int fd, char *buf, unsigned n)
{
    struct t_unitdata u;
    struct sockaddr_in src;
    int flags = 0;
    memset(&u, 0, sizeof(u));
    u.addr.buf = (char *)&src;
    u.addr.maxlen = sizeof(src);
    u.udata.buf = buf;
    u.udata.maxlen = n;
    if (t_rcvudata(fd, &u, &flags) < 0)
        return -1;
    return (int)u.udata.len;
}

static inline int sndu(int fd, const struct sockaddr_in *to, const void *p, unsigned n)
{
    struct t_unitdata u;
    memset(&u, 0, sizeof(u));
    u.addr.buf = (char *)to;
    u.addr.len = sizeof(*to);
    u.udata.buf = (char *)p;
    u.udata.len = n;
    return t_sndudata(fd, &u);
}

/* The invariant of every read's end: POLLIN shown => a non-blocking read
 * succeeds.  Returns the datagrams that read took (0 or 1).  ms: how long a
 * poll(2) waits for POLLIN (0: shown at once; the lazy token's leftovers
 * need up to TOK_WAIT_MS). */
static inline int no_false_pollin_ms(int fd, unsigned *next, int ms)
{
    if (!kernel_pollin_within(fd, ms))
        return 0;
    char buf[64];
    xti_set_nb(fd, 1);
    int n = rcvu(fd, buf, sizeof(buf));
    xti_set_nb(fd, 0);
    if (!CHECK(n > 0))
        return 0;
    unsigned v;
    memcpy(&v, buf, sizeof(v));
    CHECK_EQ(v, *next);
    (*next)++;
    return 1;
}

static inline int no_false_pollin(int fd, unsigned *next)
{
    return no_false_pollin_ms(fd, next, 0);
}

#endif
