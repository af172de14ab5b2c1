/* SPDX-License-Identifier: MIT */
/*
 * netperf.c -- `ustreams netperf`: netperf's UDP_STREAM, UDP_RR, TCP_STREAM
 * and TCP_RR tests over XTI (libxnet on "/dev/udp" and "/dev/tcp",
 * tools/netperf_xti.c) or over the kernel's sockets (tools/netperf_sock.c),
 * on the loopback address, sender and receiver two threads of this process.
 *
 *   ustreams netperf [-t TEST] [--api xti|sock] [-m SIZE] [-l SECONDS]
 *            [-i MAX[,MIN]] [-I LEVEL[,WIDTH]] [-s BUFFER] [-4|-6]
 *            [--warmup SECONDS] [--csv] [-v] [--xti-dev DEV]
 *
 * Method (netperf's, as used in seed 002): a point is measured in
 * iterations of -l seconds each, repeated until the LEVEL % confidence
 * interval of their mean (Student t) is within +-WIDTH/2 % of the mean, or
 * MAX iterations were run (at least MIN; default 99 % within +-2.5 %, 3 to
 * 10 iterations of 0.3 s).  Whether the interval was met is reported, not
 * hidden.  Unlike netperf, which starts a new test per iteration, the
 * iterations here are consecutive intervals of one transfer: the endpoints
 * are set up once, which keeps a sweep short.
 *
 *   UDP_STREAM  SIZE-byte datagrams as fast as the sender can send them;
 *               the figure is bytes/s *received* (what the kernel dropped
 *               is not counted), with the sent rate beside it.
 *   UDP_RR      one SIZE-byte request, one SIZE-byte response, one at a
 *               time: transactions/s, and their mean round trip.
 *   TCP_STREAM  SIZE-byte sends on one connection: bytes/s received.
 *   TCP_RR      as UDP_RR over one connection.
 *
 * Both APIs get the same buffer size (-s, default 131072; 0: the system's
 * default): SO_SNDBUF/SO_RCVBUF for sockets, XTI_SNDBUF/XTI_RCVBUF through
 * t_optmgmt for XTI.  Receives use a 64 KiB buffer in the stream tests.
 * --xti-dev DEV runs the XTI side over another provider (T_CLTS for UDP,
 * T_COTS_ORD for TCP) with the addresses it chooses: over /dev/ticlts and
 * /dev/ticotsord, the XTI code runs where the Internet providers do not.
 *
 * Principles of operation
 *   - The two loops share one struct shared: counters each written by one
 *     thread (relaxed atomic stores, each on its own cache line), the stop
 *     flag written by the main thread, and the first error (under a mutex).
 *     The main thread samples the counters at the interval boundaries.
 *   - End: the main thread raises stop.  UDP: the sender sends zero-length
 *     datagrams (every 1 ms: one may be dropped) until the receiver, which
 *     takes a zero-length datagram as the end, says it is done; in UDP_RR
 *     the client sends the server a zero-length request.  TCP: the sender
 *     (client) releases its direction (t_sndrel, shutdown), the peer sees
 *     the release, releases its own and closes, and the sender reads to the
 *     peer's release.
 *   - A loop that fails, an iteration in which nothing moved for 2 s (a
 *     lost UDP_RR datagram stalls the exchange, as in netperf) or an end
 *     that does not come within 5 s: the reason is printed and the process
 *     leaves with _exit(1), without waiting for threads that may be blocked
 *     for good.
 *
 * Exit status: 0 measured; 1 the test failed; 2 bad options; 3 the
 * transport cannot be opened ("not available: ..."; for XTI TCP, a build
 * without the tcp provider): a missing series, not a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "netperf.h"

#define RECV_BUF 65536   /* receive size of the stream tests */
#define END_WAIT 5.0     /* seconds the end may take */
#define STALL_S 2.0      /* seconds without progress that are a stall */

/* What the two loops share.  Each counter is written by one thread. */
struct shared {
    _Alignas(64) atomic_llong rx_msgs; /* receiver: messages (RR: transactions) */
    atomic_llong rx_bytes;             /* receiver: bytes */
    _Alignas(64) atomic_llong tx_msgs; /* sender: messages sent */
    _Alignas(64) atomic_int stop;      /* main: the sender stops */
    atomic_int rx_done;                /* receiver: it saw the end */
    atomic_int failed;                 /* a loop failed: err holds why */
    pthread_mutex_t lk;                /* guards err */
    char err[NP_ERRLEN];
};

/* One loop's arguments: its endpoint, the peer's address (UDP). */
struct loop {
    const struct np_opts *o;
    struct shared *sh;
    int ep;
    struct np_addr peer;
    const char *who;
};

/* Record the first failure (later ones are consequences of it). */
static void fail_msg(struct shared *sh, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&sh->lk);
    if (!atomic_load(&sh->failed)) {
        va_start(ap, fmt);
        vsnprintf(sh->err, sizeof(sh->err), fmt, ap);
        va_end(ap);
    }
    atomic_store(&sh->failed, 1);
    pthread_mutex_unlock(&sh->lk);
}

/* A loop's call failed: the API's reason for it. */
static void loop_fail(struct loop *l, const char *what)
{
    char e[NP_ERRLEN];
    l->o->api->last_error(e);
    fail_msg(l->sh, "%s: %s: %s", l->who, what, e);
}

static int stopping(struct shared *sh)
{
    return atomic_load_explicit(&sh->stop, memory_order_relaxed);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static char *alloc_buf(struct loop *l, size_t n)
{
    char *b = malloc(n ? n : 1);
    if (!b)
        fail_msg(l->sh, "%s: out of memory", l->who);
    else
        memset(b, 'n', n ? n : 1);
    return b;
}

/* ---------------------------------------------------------------- UDP */

/* UDP_STREAM receiver: count datagrams until a zero-length one. */
static void *udp_stream_rx(void *p)
{
    struct loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, RECV_BUF);
    long long n = 0, bytes = 0;
    while (buf) {
        ssize_t r = api->dg_recv(l->ep, buf, RECV_BUF);
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
static void udp_send_end(struct loop *l)
{
    double until = now_s() + END_WAIT;
    while (!atomic_load(&l->sh->rx_done) && now_s() < until) {
        if (l->o->api->dg_send(l->ep, "", 0, &l->peer) < 0) {
            loop_fail(l, "send (end)");
            return;
        }
        sleep_s(0.001);
    }
}

/* UDP_STREAM sender: SIZE-byte datagrams until stop, then the end. */
static void *udp_stream_tx(void *p)
{
    struct loop *l = p;
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
    struct loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, RECV_BUF);
    while (buf) {
        ssize_t r = api->dg_recv(l->ep, buf, RECV_BUF);
        if (r < 0) {
            loop_fail(l, "receive");
            break;
        }
        if (r == 0)
            break;
        if (api->dg_send(l->ep, buf, l->o->size, &l->peer) < 0) {
            loop_fail(l, "send");
            break;
        }
    }
    atomic_store(&l->sh->rx_done, 1);
    free(buf);
    return NULL;
}

/* UDP_RR client: request, response, count; at stop the zero-length request. */
static void *udp_rr_client(void *p)
{
    struct loop *l = p;
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
static int drain_to_release(struct loop *l, char *buf, size_t n)
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
    struct loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, RECV_BUF);
    long long calls = 0, bytes = 0;
    while (buf) {
        ssize_t r = api->st_recv(l->ep, buf, RECV_BUF);
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
    struct loop *l = p;
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
static int recv_all(struct loop *l, char *buf, size_t n)
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
            fail_msg(l->sh, "%s: the peer released in the middle of a message", l->who);
            return -1;
        }
        got += (size_t)r;
    }
    return 1;
}

/* TCP_RR server: echo SIZE-byte requests until the release, release too. */
static void *tcp_rr_server(void *p)
{
    struct loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->size);
    int r = 0;
    while (buf && (r = recv_all(l, buf, l->o->size)) == 1) {
        if (api->st_send(l->ep, buf, l->o->size) < 0) {
            loop_fail(l, "send");
            r = -1;
            break;
        }
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
    struct loop *l = p;
    const struct np_api *api = l->o->api;
    char *buf = alloc_buf(l, l->o->size > RECV_BUF ? l->o->size : RECV_BUF);
    long long n = 0;
    while (buf && !stopping(l->sh)) {
        if (api->st_send(l->ep, buf, l->o->size) < 0) {
            loop_fail(l, "send");
            goto out;
        }
        int r = recv_all(l, buf, l->o->size);
        if (r != 1) {
            if (r == 0)
                fail_msg(l->sh, "%s: the server released the connection", l->who);
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

/* ---------------------------------------------------------------- set-up */

/* The endpoints of a test: a receives (the server in RR), b sends (the client). */
struct endpoints {
    int a, b;
    struct np_addr addr_a, addr_b;
};

struct accept_arg {
    const struct np_opts *o;
    int lep, ep, rc;
    char err[NP_ERRLEN];
};

static void *accept_thread(void *p)
{
    struct accept_arg *x = p;
    x->rc = x->o->api->st_accept(x->lep, x->o->family, x->o->buf, &x->ep, x->err);
    return NULL;
}

/* Make the endpoints.  0; NP_EXIT_UNAVAILABLE or NP_EXIT_FAIL with err.  A
 * failed TCP set-up may leave the accepting thread blocked: the caller
 * leaves with _exit. */
static int setup(const struct np_opts *o, struct endpoints *e, char *err)
{
    const struct np_api *api = o->api;
    int rc;
    if (np_is_udp(o)) {
        if ((rc = api->dg_open(o->family, o->buf, &e->a, &e->addr_a, err)) != 0)
            return rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL;
        if (api->dg_open(o->family, o->buf, &e->b, &e->addr_b, err) != 0)
            return NP_EXIT_FAIL;
        return 0;
    }
    struct np_addr laddr;
    struct accept_arg x = {.o = o, .rc = -1};
    pthread_t t;
    if ((rc = api->st_listen(o->family, o->buf, &x.lep, &laddr, err)) != 0)
        return rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL;
    if (pthread_create(&t, NULL, accept_thread, &x) != 0) {
        snprintf(err, NP_ERRLEN, "cannot start a thread");
        return NP_EXIT_FAIL;
    }
    if (api->st_connect(o->family, o->buf, &laddr, &e->b, err) != 0)
        return NP_EXIT_FAIL;
    pthread_join(t, NULL);
    if (x.rc != 0) {
        snprintf(err, NP_ERRLEN, "%s", x.err);
        return NP_EXIT_FAIL;
    }
    e->a = x.ep;
    api->close(x.lep);
    return 0;
}

/* ---------------------------------------------------------------- measuring */

/* The result of one point. */
struct result {
    double x[NP_MAX_ITER];  /* per iteration: bytes/s (STREAM) or transactions/s (RR) */
    double msgs, sent;      /* means: messages received/s, sent/s */
    struct np_stats st;
};

/* Sample the iterations until the interval holds or MAX; the reason for a
 * failure in err.  0 or NP_EXIT_FAIL. */
static int measure(const struct np_opts *o, struct shared *sh, struct result *res, char *err)
{
    long long m0, b0, s0, m1, b1, s1;
    double t0, t1, msum = 0, ssum = 0;

    sleep_s(o->warmup);
    t0 = now_s();
    m0 = atomic_load(&sh->rx_msgs);
    b0 = atomic_load(&sh->rx_bytes);
    s0 = atomic_load(&sh->tx_msgs);
    for (int it = 0; it < o->max_iter; it++) {
        sleep_s(o->len);
        t1 = now_s();
        /* Nothing yet (a machine too loaded to run us, or a stall): wait
         * up to STALL_S before calling it a stall. */
        while ((m1 = atomic_load(&sh->rx_msgs)) == m0 && t1 - t0 < STALL_S &&
               !atomic_load(&sh->failed)) {
            sleep_s(0.01);
            t1 = now_s();
        }
        b1 = atomic_load(&sh->rx_bytes);
        s1 = atomic_load(&sh->tx_msgs);
        if (atomic_load(&sh->failed)) {
            pthread_mutex_lock(&sh->lk);
            snprintf(err, NP_ERRLEN, "%s", sh->err);
            pthread_mutex_unlock(&sh->lk);
            return NP_EXIT_FAIL;
        }
        if (m1 == m0) {
            snprintf(err, NP_ERRLEN, "nothing %s in iteration %d (%.3g s)%s", np_is_rr(o) ?
                     "exchanged" : "received", it + 1, t1 - t0, o->test == UDP_RR ?
                     ": a datagram was lost, which stalls UDP_RR (as in netperf)" : "");
            return NP_EXIT_FAIL;
        }
        double dt = t1 - t0;
        res->x[it] = (double)(np_is_rr(o) ? m1 - m0 : b1 - b0) / dt;
        msum += (double)(m1 - m0) / dt;
        ssum += (double)(s1 - s0) / dt;
        if (o->verbose)
            fprintf(stderr, "netperf: iteration %d: %.3f s, %.6g %s\n", it + 1, dt, res->x[it],
                    np_is_rr(o) ? "transactions/s" : "bytes/s");
        np_stats(res->x, it + 1, o->level, o->width, &res->st);
        res->msgs = msum / (it + 1);
        res->sent = ssum / (it + 1);
        if (it + 1 >= o->min_iter && res->st.met)
            break;
        t0 = t1, m0 = m1, b0 = b1, s0 = s1;
    }
    return 0;
}

/* Join t by the deadline; 0, or -1 if it has not ended. */
static int join_by(pthread_t t, double deadline)
{
    struct timespec ts;
    double wait = deadline - now_s();
    clock_gettime(CLOCK_REALTIME, &ts);
    if (wait < 0)
        wait = 0;
    ts.tv_sec += (time_t)wait;
    ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return pthread_timedjoin_np(t, NULL, &ts) == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- output */

static void print_result(const struct np_opts *o, const struct result *r)
{
    const struct np_stats *st = &r->st;
    double pct = st->half >= 0 && st->mean > 0 ? st->half / st->mean * 100 : -1;
    const char *fam = o->family == AF_INET6 ? "IPv6" : "IPv4";
    double lat = np_is_rr(o) && st->mean > 0 ? 1e6 / st->mean : -1;

    if (o->csv) {
        printf("test,api,family,size,mean,unit,ci_half,ci_pct,iterations,ci_met,msgs_per_s,"
               "sent_per_s,latency_us,buffer\n");
        printf("%s,%s,%s,%zu,%.1f,%s,", np_test_names[o->test], o->api->name, fam, o->size,
               st->mean, np_is_rr(o) ? "trans/s" : "bytes/s");
        if (st->half >= 0)
            printf("%.1f,%.2f,", st->half, pct);
        else
            printf(",,");
        printf("%d,%s,%.1f,%.1f,", st->n, st->met ? "yes" : "no", r->msgs, r->sent);
        if (lat >= 0)
            printf("%.2f", lat);
        printf(",%d\n", o->buf);
        return;
    }
    if (np_is_rr(o))
        printf("  %.0f transactions/s, mean round trip %.2f us", st->mean, lat);
    else
        printf("  %.2f MB/s received (%.0f messages/s; %.0f sent/s)", st->mean / 1e6, r->msgs,
               r->sent);
    if (st->half >= 0)
        printf(", +-%.2f %% (%d %% CI)\n", pct, o->level);
    else
        printf(", no confidence interval (one iteration)\n");
    if (st->met)
        printf("  confidence interval met after %d iterations\n", st->n);
    else
        printf("  confidence interval NOT met: %d iterations (the limit)\n", st->n);
}

/* ---------------------------------------------------------------- main */

typedef void *(*loop_fn)(void *);

int ust_cmd_netperf(int argc, char **argv)
{
    static const loop_fn rx_fn[] = {udp_stream_rx, udp_rr_server, tcp_stream_rx, tcp_rr_server};
    static const loop_fn tx_fn[] = {udp_stream_tx, udp_rr_client, tcp_stream_tx, tcp_rr_client};
    struct np_opts o;
    struct endpoints e;
    struct result res;
    char err[NP_ERRLEN + 64];
    int rc;

    if (np_parse_args(argc, argv, &o) < 0)
        return NP_EXIT_USAGE;
    signal(SIGPIPE, SIG_IGN);
    memset(&res, 0, sizeof(res));
    if (o.xti_dev && o.api == &np_api_xti)
        np_xti_use(o.xti_dev);
    const char *over = "sockets";
    if (o.api == &np_api_xti)
        over = o.xti_dev ? o.xti_dev : np_is_udp(&o) ? "/dev/udp" : "/dev/tcp";
    if (!o.csv)
        printf("netperf: %s over %s%s, %s, %zu-byte %s, buffers %d, %g s x %d..%d iterations, "
               "%d %% CI +-%g %%\n",
               np_test_names[o.test], o.api == &np_api_xti ? "XTI " : "", over,
               o.xti_dev && o.api == &np_api_xti ? "its own addresses"
               : o.family == AF_INET6               ? "::1"
                                                    : "127.0.0.1",
               o.size,
               np_is_rr(&o) ? "requests and responses" : "messages", o.buf, o.len, o.min_iter,
               o.max_iter, o.level, o.width / 2);
    fflush(stdout);

    rc = setup(&o, &e, err);
    if (rc == NP_EXIT_UNAVAILABLE) {
        fprintf(stderr, "netperf: not available: %s\n", err);
        return rc;
    }
    if (rc != 0) {
        fprintf(stderr, "netperf: %s: set-up: %s\n", np_test_names[o.test], err);
        fflush(NULL);
        _exit(rc); /* a TCP accept may still be waiting */
    }

    struct shared *sh = calloc(1, sizeof(*sh));
    if (!sh) {
        fprintf(stderr, "netperf: out of memory\n");
        return NP_EXIT_FAIL;
    }
    pthread_mutex_init(&sh->lk, NULL);
    struct loop rx = {.o = &o, .sh = sh, .ep = e.a, .peer = e.addr_b,
                      .who = np_is_rr(&o) ? "server" : "receiver"};
    struct loop tx = {.o = &o, .sh = sh, .ep = e.b, .peer = e.addr_a,
                      .who = np_is_rr(&o) ? "client" : "sender"};
    pthread_t rt, tt;
    if (pthread_create(&rt, NULL, rx_fn[o.test], &rx) != 0 ||
        pthread_create(&tt, NULL, tx_fn[o.test], &tx) != 0) {
        fprintf(stderr, "netperf: cannot start threads\n");
        fflush(NULL);
        _exit(NP_EXIT_FAIL);
    }

    rc = measure(&o, sh, &res, err);
    atomic_store(&sh->stop, 1);
    if (rc == 0) {
        double deadline = now_s() + END_WAIT;
        if (join_by(tt, deadline) < 0 || join_by(rt, deadline) < 0) {
            snprintf(err, sizeof(err), "the %s did not end within %g s", np_is_rr(&o) ?
                     "exchange" : "transfer", END_WAIT);
            rc = NP_EXIT_FAIL;
        } else if (atomic_load(&sh->failed)) {
            snprintf(err, sizeof(err), "at the end: %s", sh->err);
            rc = NP_EXIT_FAIL;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "netperf: %s over %s: %s\n", np_test_names[o.test], o.api->name, err);
        fflush(NULL);
        _exit(rc); /* a loop may be blocked for good */
    }
    print_result(&o, &res);
    o.api->close(e.a);
    o.api->close(e.b);
    pthread_mutex_destroy(&sh->lk);
    free(sh);
    return NP_EXIT_OK;
}
