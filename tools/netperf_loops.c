/* SPDX-License-Identifier: MIT */
/*
 * netperf_loops.c -- the loops of `ustreams netperf`'s tests
 * (tools/netperf_run.h): for each test a server loop (netserver's side: the
 * receiver of a STREAM test, the responder of an RR test) and a client loop
 * (netperf's side), each on one endpoint, publishing its counts in struct
 * np_shared, which may be shared with another process.
 *
 * Principles of operation
 *   - Counters: each written by one loop with relaxed atomic stores; the
 *     measuring thread samples them at the interval boundaries.
 *   - End: the measuring thread raises stop.  UDP: the client sends
 *     zero-length datagrams (every 1 ms: one may be dropped) until the
 *     server, which takes a zero-length datagram as the end, says it is
 *     done (rx_done); in UDP_RR the client sends the server a zero-length
 *     request.  TCP: the client releases its direction (t_sndrel,
 *     shutdown), the server sees the release, releases its own and ends,
 *     and the client reads to the server's release.
 *   - A loop that fails records why (np_fail_msg) and ends; the measuring
 *     thread reports it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netperf_run.h"

#define RECV_BUF 65536 /* receive buffer of the RR clients */

static size_t max3(size_t a, size_t b, size_t c)
{
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

void np_fail_msg(struct np_shared *sh, const char *fmt, ...)
{
    va_list ap;
    if (atomic_exchange(&sh->claimed, 1) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(sh->err, sizeof(sh->err), fmt, ap);
    va_end(ap);
    atomic_store(&sh->failed, 1); /* release: err is complete before failed reads 1 */
}

/* A loop's call failed: the API's reason for it. */
static void loop_fail(struct np_loop *l, const char *what)
{
    char e[NP_ERRLEN];
    l->o->api->last_error(e);
    np_fail_msg(l->sh, "%s: %s: %s", l->who, what, e);
}

static int stopping(struct np_shared *sh)
{
    return atomic_load_explicit(&sh->stop, memory_order_relaxed);
}

double np_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void np_sleep(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static char *alloc_buf(struct np_loop *l, size_t n)
{
    char *b = malloc(n ? n : 1);
    if (!b)
        np_fail_msg(l->sh, "%s: out of memory", l->who);
    else
        memset(b, 'n', n ? n : 1);
    return b;
}

/* ---------------------------------------------------------------- UDP */

/* UDP_STREAM receiver: count datagrams until a zero-length one. */
static void *udp_stream_rx(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->rsize);
    long long n = 0, bytes = 0;
    while (buf) {
        ssize_t r = api->dg_recv(l->ep, buf, l->o->rsize);
        if (r < 0) {
            loop_fail(l, "receive");
            break;
        }
        if (r == 0)
            break;
        n++;
        bytes += r;
        atomic_store_explicit(&l->sh->rx_msgs, n, memory_order_relaxed);
        atomic_store_explicit(&l->sh->rx_bytes, bytes, memory_order_relaxed);
    }
    atomic_store(&l->sh->rx_done, 1);
    free(buf);
    return NULL;
}

/* Send zero-length datagrams to l->peer until the receiver is done. */
static void udp_send_end(struct np_loop *l)
{
    double until = np_now() + NP_END_WAIT;
    while (!atomic_load(&l->sh->rx_done) && np_now() < until) {
        if (l->o->api->dg_send(l->ep, "", 0, &l->peer) < 0) {
            loop_fail(l, "send (end)");
            return;
        }
        np_sleep(0.001);
    }
}

/* UDP_STREAM sender: SIZE-byte datagrams until stop, then the end. */
static void *udp_stream_tx(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->size);
    long long n = 0;
    while (buf && !stopping(l->sh)) {
        if (api->dg_send(l->ep, buf, l->o->size, &l->peer) < 0) {
            loop_fail(l, "send");
            free(buf);
            return NULL;
        }
        atomic_store_explicit(&l->sh->tx_msgs, ++n, memory_order_relaxed);
    }
    free(buf);
    udp_send_end(l);
    return NULL;
}

/* UDP_RR server: answer each request with SIZE bytes, until a zero-length one. */
static void *udp_rr_server(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, RECV_BUF);
    long long n = 0;
    while (buf) {
        ssize_t r = api->dg_recv(l->ep, buf, RECV_BUF);
        if (r < 0) {
            loop_fail(l, "receive");
            break;
        }
        if (r == 0)
            break;
        if (api->dg_send(l->ep, buf, l->o->rsp_size, &l->peer) < 0) {
            loop_fail(l, "send");
            break;
        }
        atomic_store_explicit(&l->sh->srv_msgs, ++n, memory_order_relaxed);
    }
    atomic_store(&l->sh->rx_done, 1);
    free(buf);
    return NULL;
}

/* UDP_RR client: request, response, count; at stop the zero-length request. */
static void *udp_rr_client(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, RECV_BUF);
    long long n = 0;
    while (buf && !stopping(l->sh)) {
        if (api->dg_send(l->ep, buf, l->o->size, &l->peer) < 0) {
            loop_fail(l, "send");
            goto out;
        }
        ssize_t r = api->dg_recv(l->ep, buf, RECV_BUF);
        if (r < 0) {
            loop_fail(l, "receive");
            goto out;
        }
        n++;
        atomic_store_explicit(&l->sh->rx_msgs, n, memory_order_relaxed);
        atomic_store_explicit(&l->sh->rx_bytes, n * (long long)l->o->size, memory_order_relaxed);
        atomic_store_explicit(&l->sh->tx_msgs, n, memory_order_relaxed);
    }
    udp_send_end(l);
out:
    free(buf);
    return NULL;
}

/* ---------------------------------------------------------------- TCP */

/* Read until the peer's orderly release (0); 0, or -1 failed. */
static int drain_to_release(struct np_loop *l, char *buf, size_t n)
{
    for (;;) {
        ssize_t r = l->o->api->st_recv(l->ep, buf, n);
        if (r == 0)
            return 0;
        if (r < 0) {
            loop_fail(l, "receive (end)");
            return -1;
        }
    }
}

/* TCP_STREAM receiver: count bytes until the release, then release too. */
static void *tcp_stream_rx(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->rsize);
    long long calls = 0, bytes = 0;
    while (buf) {
        ssize_t r = api->st_recv(l->ep, buf, l->o->rsize);
        if (r < 0) {
            loop_fail(l, "receive");
            goto out;
        }
        if (r == 0)
            break;
        calls++;
        bytes += r;
        atomic_store_explicit(&l->sh->rx_msgs, calls, memory_order_relaxed);
        atomic_store_explicit(&l->sh->rx_bytes, bytes, memory_order_relaxed);
    }
    if (buf && api->st_release(l->ep) < 0)
        loop_fail(l, "release");
out:
    atomic_store(&l->sh->rx_done, 1);
    free(buf);
    return NULL;
}

/* TCP_STREAM sender: SIZE-byte sends until stop, release, read to the peer's. */
static void *tcp_stream_tx(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->size > RECV_BUF ? l->o->size : RECV_BUF);
    long long n = 0;
    while (buf && !stopping(l->sh)) {
        if (api->st_send(l->ep, buf, l->o->size) < 0) {
            loop_fail(l, "send");
            goto out;
        }
        atomic_store_explicit(&l->sh->tx_msgs, ++n, memory_order_relaxed);
    }
    if (buf && api->st_release(l->ep) < 0)
        loop_fail(l, "release");
    else if (buf)
        (void)drain_to_release(l, buf, RECV_BUF);
out:
    free(buf);
    return NULL;
}

/* Receive exactly n bytes: 1, 0 at the peer's release before any, -1 failed. */
static int recv_all(struct np_loop *l, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = l->o->api->st_recv(l->ep, buf + got, n - got);
        if (r < 0) {
            loop_fail(l, "receive");
            return -1;
        }
        if (r == 0) {
            if (got == 0)
                return 0;
            np_fail_msg(l->sh, "%s: the peer released in the middle of a message", l->who);
            return -1;
        }
        got += (size_t)r;
    }
    return 1;
}

/* TCP_RR server: echo SIZE-byte requests until the release, release too. */
static void *tcp_rr_server(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->size > l->o->rsp_size ? l->o->size : l->o->rsp_size);
    long long n = 0;
    int r = 0;
    while (buf && (r = recv_all(l, buf, l->o->size)) == 1) {
        if (api->st_send(l->ep, buf, l->o->rsp_size) < 0) {
            loop_fail(l, "send");
            r = -1;
            break;
        }
        atomic_store_explicit(&l->sh->srv_msgs, ++n, memory_order_relaxed);
    }
    if (buf && r == 0 && api->st_release(l->ep) < 0)
        loop_fail(l, "release");
    atomic_store(&l->sh->rx_done, 1);
    free(buf);
    return NULL;
}

/* TCP_RR client: request, response, count; at stop release and drain. */
static void *tcp_rr_client(void *p)
{
    struct np_loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, max3(l->o->size, l->o->rsp_size, RECV_BUF));
    long long n = 0;
    while (buf && !stopping(l->sh)) {
        if (api->st_send(l->ep, buf, l->o->size) < 0) {
            loop_fail(l, "send");
            goto out;
        }
        int r = recv_all(l, buf, l->o->rsp_size);
        if (r != 1) {
            if (r == 0)
                np_fail_msg(l->sh, "%s: the server released the connection", l->who);
            goto out;
        }
        n++;
        atomic_store_explicit(&l->sh->rx_msgs, n, memory_order_relaxed);
        atomic_store_explicit(&l->sh->rx_bytes, n * (long long)l->o->size, memory_order_relaxed);
        atomic_store_explicit(&l->sh->tx_msgs, n, memory_order_relaxed);
    }
    if (buf && api->st_release(l->ep) < 0)
        loop_fail(l, "release");
    else if (buf)
        (void)drain_to_release(l, buf, RECV_BUF);
out:
    free(buf);
    return NULL;
}

const np_loop_fn np_server_loop[4] = {udp_stream_rx, udp_rr_server, tcp_stream_rx,
                                      tcp_rr_server};
const np_loop_fn np_client_loop[4] = {udp_stream_tx, udp_rr_client, tcp_stream_tx,
                                      tcp_rr_client};
