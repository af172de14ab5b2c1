/* SPDX-License-Identifier: MIT */
/*
 * netperf.c -- `ustreams netperf`: netperf's UDP_STREAM, UDP_RR, TCP_STREAM
 * and TCP_RR tests over XTI (libxnet on "/dev/udp" and "/dev/tcp",
 * tools/netperf_xti.c) or over the kernel's sockets (tools/netperf_sock.c),
 * on the loopback address, with netperf's options (tools/netperf_opts.c).
 *
 * As netperf runs: the client (netperf's side: the sender of a STREAM test,
 * the client of an RR test) is this process, the server (netserver's: the
 * receiver, the responder) a child process forked before any stream is
 * opened, which makes its own endpoint (tools/netperf_server.c).  With
 * --one-process both are threads of this process, as before.
 *
 * Method (netperf's -l, -i, -I): the test runs -l seconds after a warm-up
 * (--warmup, default 0.1 s) and its rate is reported.  With -i MAX[,MIN]
 * (or -I, which implies -i 10,3) it is measured in iterations of -l seconds
 * each, until the LEVEL % confidence interval of their mean (Student t) is
 * within +-WIDTH/2 % of the mean, or MAX iterations were run (at least MIN;
 * default -I 99,5).  Whether the interval was met is reported, not hidden.
 * Unlike netperf, which starts a new test per iteration, the iterations here
 * are consecutive intervals of one transfer: the endpoints are set up once.
 *
 *   UDP_STREAM  -m-byte datagrams as fast as the sender can send them; the
 *               figure is bytes/s *received* (what the kernel dropped is not
 *               counted), with the sent rate beside it.
 *   UDP_RR      one request, one response (-r REQ,RESP; -m both), one at
 *               a time: transactions/s, and their mean round trip.
 *   TCP_STREAM  -m-byte sends on one connection, -M-byte receives: bytes/s
 *               received.
 *   TCP_RR      as UDP_RR over one connection.
 *
 * System calls: each process's calls (all its threads: the library's own
 * included) are counted over the measured iterations with perf_event_open
 * on raw_syscalls:sys_enter (tools/netperf_calls.c), and reported per
 * transaction (RR) or per message (STREAM: the client's per message sent,
 * the server's per message delivered, that is per -m bytes received, and
 * both together per message delivered); where the kernel refuses, "n/a"
 * and why.  The measuring thread of the client process is counted with it (a
 * few calls per iteration).
 *
 * Principles of operation
 *   - The two loops (tools/netperf_loops.c) share one struct np_shared,
 *     in a MAP_SHARED anonymous mapping made before the fork; the measuring
 *     (main) thread of the client process samples its counters at the
 *     interval boundaries and raises stop at the end.
 *   - A loop that fails, an iteration in which nothing moved for 2 s (a lost
 *     UDP_RR datagram stalls the exchange, as in netperf), a server process
 *     that does not answer or end in time, or an end that does not come
 *     within 5 s: the reason is printed, the server process killed and
 *     reaped, and the process leaves with _exit(1), without waiting for a
 *     thread that may be blocked for good.
 *
 * Exit status: 0 measured; 1 the test failed; 2 bad options; 3 the
 * transport cannot be opened ("not available: ..."; for XTI TCP, a build
 * without the tcp provider): a missing series, not a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "netperf_run.h"

#define STALL_S 2.0   /* seconds without progress that are a stall */
#define CTL_WAIT 10.0 /* seconds the server process may take to answer */

/* The counters of the system calls of the two sides.  One process: the
 * whole process in client, server unused. */
struct sides {
    struct np_calls client, server;
};

/* The result of one point. */
struct result {
    double x[NP_MAX_ITER];  /* per iteration: bytes/s (STREAM) or transactions/s (RR) */
    double msgs, sent;      /* means: messages received/s, sent/s */
    struct np_stats st;
    long long d_rx, d_tx;       /* over the measured iterations: received (RR: transactions), sent */
    long long d_bytes;          /* bytes received in that time */
    long long calls_c, calls_s; /* system calls in that time; -1 not counted */
    pid_t cpid, spid;           /* client and server processes */
    char why[NP_ERRLEN];        /* why the calls were not counted, or "" */
};

/* ---------------------------------------------------------------- one process */

/* The endpoints of a one-process test: a the server's, b the client's. */
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
    x->rc = x->o->api->st_accept(x->lep, x->o->family, x->o->rbuf, &x->ep, x->err);
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
        if ((rc = api->dg_open(o->family, o->rbuf, &e->a, &e->addr_a, err)) != 0)
            return rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL;
        if (api->dg_open(o->family, o->buf, &e->b, &e->addr_b, err) != 0)
            return NP_EXIT_FAIL;
        return 0;
    }
    struct np_addr laddr;
    struct accept_arg x = {.o = o, .rc = -1};
    pthread_t t;
    if ((rc = api->st_listen(o->family, o->rbuf, &x.lep, &laddr, err)) != 0)
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
    if (o->nodelay && (api->st_nodelay(e->a, err) != 0 || api->st_nodelay(e->b, err) != 0))
        return NP_EXIT_FAIL;
    return 0;
}

/* ---------------------------------------------------------------- measuring */

static long long calls_now(const struct np_calls *c)
{
    return c->n ? np_calls_read(c) : -1;
}

/* Sample the iterations until the interval holds or MAX; the system calls
 * of the sides over the same time.  The reason for a failure in err.  0 or
 * NP_EXIT_FAIL. */
static int measure(const struct np_opts *o, struct np_shared *sh, struct sides *sd,
                   struct result *res, char *err)
{
    long long m0, b0, s0, m1, b1, s1, ms, bs, ss, c0, k0;
    double t0, t1, msum = 0, ssum = 0;

    np_sleep(o->warmup);
    t0 = np_now();
    ms = m0 = atomic_load(&sh->rx_msgs);
    bs = b0 = atomic_load(&sh->rx_bytes);
    ss = s0 = atomic_load(&sh->tx_msgs);
    c0 = calls_now(&sd->client);
    k0 = calls_now(&sd->server);
    for (int it = 0; it < o->max_iter; it++) {
        np_sleep(o->len);
        t1 = np_now();
        /* Nothing yet (a machine too loaded to run us, or a stall): wait
         * up to STALL_S before calling it a stall. */
        while ((m1 = atomic_load(&sh->rx_msgs)) == m0 && t1 - t0 < STALL_S &&
               !atomic_load(&sh->failed)) {
            np_sleep(0.01);
            t1 = np_now();
        }
        b1 = atomic_load(&sh->rx_bytes);
        s1 = atomic_load(&sh->tx_msgs);
        long long c1 = calls_now(&sd->client), k1 = calls_now(&sd->server);
        if (atomic_load(&sh->failed)) {
            snprintf(err, NP_ERRLEN, "%s", sh->err);
            return NP_EXIT_FAIL;
        }
        long long srv = atomic_load(&sh->srv_msgs); /* after m1: at least m1 - 1 */
        if (np_is_rr(o) && srv + 1 < m1) {
            snprintf(err, NP_ERRLEN, "the client counted %lld transactions, the server answered "
                     "%lld: the responses did not come from the server", m1, srv);
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
        res->d_rx = m1 - ms;
        res->d_tx = s1 - ss;
        res->d_bytes = b1 - bs;
        res->calls_c = c0 >= 0 && c1 >= 0 ? c1 - c0 : -1;
        res->calls_s = k0 >= 0 && k1 >= 0 ? k1 - k0 : -1;
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
    double wait = deadline - np_now();
    clock_gettime(CLOCK_REALTIME, &ts);
    if (wait < 0)
        wait = 0;
    ts.tv_sec += (time_t)wait;
    ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return pthread_timedjoin_np(t, NULL, &ts) == 0 ? 0 : -1;
}

/* Raise stop, then wait for the client thread (and nothing else) by the
 * end's deadline.  0, or NP_EXIT_FAIL with err. */
static int end_client(const struct np_opts *o, struct np_shared *sh, pthread_t t, char *err,
                      double deadline)
{
    atomic_store(&sh->stop, 1);
    if (join_by(t, deadline) < 0) {
        snprintf(err, NP_ERRLEN, "the %s did not end within %g s",
                 np_is_rr(o) ? "exchange" : "transfer", NP_END_WAIT);
        return NP_EXIT_FAIL;
    }
    return 0;
}

/* The client thread tt runs: measure, then end it.  *deadline: when the
 * rest of the run must have ended.  0, or an exit code with err. */
static int measure_and_end(const struct np_opts *o, struct np_shared *sh, struct sides *sd,
                           struct result *res, pthread_t tt, char *err, double *deadline)
{
    int rc = measure(o, sh, sd, res, err);
    if (rc != 0)
        return rc;
    *deadline = np_now() + NP_END_WAIT;
    return end_client(o, sh, tt, err, *deadline);
}

static int run_one(const struct np_opts *o, struct np_shared *sh, struct result *res, char *err)
{
    struct sides sd = {0};
    struct endpoints e;
    int rc;

    res->cpid = res->spid = getpid();
    /* Every task of this process, before the endpoints exist: the
     * library's threads made later are inherited. */
    if (np_calls_open(&sd.client, getpid()) < 0)
        snprintf(res->why, sizeof(res->why), "%s", sd.client.why);
    if (o->xti_dev && o->api == &np_api_xti)
        np_xti_use(o->xti_dev);
    if ((rc = setup(o, &e, err)) != 0)
        return rc;
    struct np_loop rx = {.o = o, .sh = sh, .ep = e.a, .peer = e.addr_b,
                         .who = np_is_rr(o) ? "server" : "receiver"};
    struct np_loop tx = {.o = o, .sh = sh, .ep = e.b, .peer = e.addr_a,
                         .who = np_is_rr(o) ? "client" : "sender"};
    pthread_t rt, tt;
    if (pthread_create(&rt, NULL, np_server_loop[o->test], &rx) != 0 ||
        pthread_create(&tt, NULL, np_client_loop[o->test], &tx) != 0) {
        snprintf(err, NP_ERRLEN, "cannot start threads");
        return NP_EXIT_FAIL;
    }
    double deadline;
    if ((rc = measure_and_end(o, sh, &sd, res, tt, err, &deadline)) != 0)
        return rc;
    if (join_by(rt, deadline) < 0) {
        snprintf(err, NP_ERRLEN, "the %s did not end within %g s", np_is_rr(o) ? "server" :
                 "receiver", NP_END_WAIT);
        return NP_EXIT_FAIL;
    }
    if (atomic_load(&sh->failed)) {
        snprintf(err, NP_ERRLEN, "at the end: %.180s", sh->err);
        return NP_EXIT_FAIL;
    }
    o->api->close(e.a);
    o->api->close(e.b);
    np_calls_close(&sd.client);
    return 0;
}

/* ---------------------------------------------------------------- two processes */

/* Reap pid by the deadline; its wait status, or -1 if it is still running. */
static int reap_by(pid_t pid, double deadline)
{
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return 0; /* already reaped: nothing more to learn */
        if (np_now() >= deadline)
            return -1;
        np_sleep(0.002);
    }
}

/* "exit N" / "signal N" of a wait status. */
static void status_text(int st, char *buf, size_t n)
{
    if (WIFEXITED(st))
        snprintf(buf, n, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, n, "signal %d", WTERMSIG(st));
    else
        snprintf(buf, n, "status %#x", st);
}

/* The server process failed to answer: why, from its status if it ended. */
static void server_gone(pid_t pid, const char *when, char *err)
{
    char s[32];
    int st = reap_by(pid, np_now() + 0.2);
    if (st < 0)
        snprintf(err, NP_ERRLEN, "the server process did not answer %s within %g s", when,
                 CTL_WAIT);
    else {
        status_text(st, s, sizeof(s));
        snprintf(err, NP_ERRLEN, "the server process ended %s (%s)", when, s);
    }
}

/* The client's side of a two-process run; the server is pid, its control
 * socket ctl.  0, or an exit status with err (the caller kills the server). */
static int client_side(const struct np_opts *o, struct np_shared *sh, struct result *res,
                       pid_t pid, int ctl, char *err)
{
    const struct np_api *api = o->api;
    struct sides sd = {0};
    struct np_ctl m = {0};
    struct np_loop tx = {.o = o, .sh = sh, .who = np_is_rr(o) ? "client" : "sender"};
    pthread_t tt;
    int rc;

    /* Both processes counted before either opens a stream (the child waits
     * for the start message, so it has its one thread). */
    if (np_calls_open(&sd.client, getpid()) < 0)
        snprintf(res->why, sizeof(res->why), "%s", sd.client.why);
    else if (np_calls_open(&sd.server, pid) < 0)
        snprintf(res->why, sizeof(res->why), "%s", sd.server.why);
    if (np_ctl_send(ctl, &m) < 0 || np_ctl_recv(ctl, &m, CTL_WAIT) < 0) {
        server_gone(pid, "at set-up", err);
        return NP_EXIT_FAIL;
    }
    if (m.rc != 0) {
        snprintf(err, NP_ERRLEN, "%s", m.err);
        return m.rc == NP_EXIT_UNAVAILABLE ? m.rc : NP_EXIT_FAIL;
    }
    tx.peer = m.addr;
    if (o->xti_dev && api == &np_api_xti)
        np_xti_use(o->xti_dev);
    memset(&m, 0, sizeof(m));
    if (np_is_udp(o)) {
        if ((rc = api->dg_open(o->family, o->buf, &tx.ep, &m.addr, err)) != 0)
            return rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL;
        if (np_ctl_send(ctl, &m) < 0) {
            server_gone(pid, "at set-up", err);
            return NP_EXIT_FAIL;
        }
    } else {
        if ((rc = api->st_connect(o->family, o->buf, &tx.peer, &tx.ep, err)) != 0)
            return rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL;
        if (o->nodelay && api->st_nodelay(tx.ep, err) != 0)
            return NP_EXIT_FAIL;
    }
    if (np_ctl_recv(ctl, &m, CTL_WAIT) < 0) {
        server_gone(pid, "at set-up", err);
        return NP_EXIT_FAIL;
    }
    if (m.rc != 0) {
        snprintf(err, NP_ERRLEN, "%s", m.err);
        return NP_EXIT_FAIL;
    }
    if (pthread_create(&tt, NULL, np_client_loop[o->test], &tx) != 0) {
        snprintf(err, NP_ERRLEN, "cannot start a thread");
        return NP_EXIT_FAIL;
    }
    double deadline;
    if ((rc = measure_and_end(o, sh, &sd, res, tt, err, &deadline)) != 0)
        return rc;
    int st = reap_by(pid, deadline);
    if (st < 0) {
        snprintf(err, NP_ERRLEN, "the server process did not end within %g s", NP_END_WAIT);
        return NP_EXIT_FAIL;
    }
    if (atomic_load(&sh->failed)) {
        snprintf(err, NP_ERRLEN, "at the end: %.180s", sh->err);
        return NP_EXIT_FAIL;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char s[32];
        status_text(st, s, sizeof(s));
        snprintf(err, NP_ERRLEN, "the server process ended with %s", s);
        return NP_EXIT_FAIL;
    }
    api->close(tx.ep);
    np_calls_close(&sd.client);
    np_calls_close(&sd.server);
    return 0;
}

static int run_procs(const struct np_opts *o, struct np_shared *sh, struct result *res,
                     char *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, NP_ERRLEN, "socketpair: %s", strerror(errno));
        return NP_EXIT_FAIL;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, NP_ERRLEN, "fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return NP_EXIT_FAIL;
    }
    if (pid == 0) {
        close(sv[0]);
        np_server_main(o, sh, sv[1]);
    }
    close(sv[1]);
    res->cpid = getpid();
    res->spid = pid;
    int rc = client_side(o, sh, res, pid, sv[0], err);
    if (rc != 0) {
        /* Any state: the server may be blocked for good.  Its end is ours. */
        kill(pid, SIGKILL);
        (void)reap_by(pid, np_now() + 2);
    }
    close(sv[0]);
    return rc;
}

/* ---------------------------------------------------------------- output */

/* Calls per operation, or -1: n calls over d operations. */
static double per_op(long long n, long long d)
{
    return n >= 0 && d > 0 ? (double)n / (double)d : -1;
}

/* The system calls of a result: per operation of the client, the server,
 * and both together (one process: total only); why not, if not counted. */
struct calls_fig {
    double client, server, total;
    const char *why;
};

static struct calls_fig calls_of(const struct np_opts *o, const struct result *r,
                                 const char *why)
{
    struct calls_fig f = {-1, -1, -1, why};
    /* RR: transactions; STREAM: messages delivered, the bytes received in
     * -m units (a TCP receive may hold many sends or part of one) */
    long long ops = np_is_rr(o) ? r->d_rx : r->d_bytes / (long long)o->size;
    if (o->one_process) {
        f.total = per_op(r->calls_c, ops);
    } else {
        f.client = per_op(r->calls_c, np_is_rr(o) ? ops : r->d_tx);
        f.server = per_op(r->calls_s, ops);
        if (r->calls_c >= 0 && r->calls_s >= 0)
            f.total = per_op(r->calls_c + r->calls_s, ops);
    }
    if (f.total >= 0)
        f.why = "";
    return f;
}

static void csv_num(double v, const char *sep)
{
    if (v >= 0)
        printf("%.3f%s", v, sep);
    else
        printf("%s", sep);
}

static void print_result(const struct np_opts *o, const struct result *r, const char *why)
{
    const struct np_stats *st = &r->st;
    double pct = st->half >= 0 && st->mean > 0 ? st->half / st->mean * 100 : -1;
    const char *fam = o->family == AF_INET6 ? "IPv6" : "IPv4";
    double lat = np_is_rr(o) && st->mean > 0 ? 1e6 / st->mean : -1;
    struct calls_fig cf = calls_of(o, r, why);

    if (o->csv) {
        printf("test,api,family,size,mean,unit,ci_half,ci_pct,iterations,ci_met,msgs_per_s,"
               "sent_per_s,latency_us,buffer,mode,client_pid,server_pid,calls_client,"
               "calls_server,calls_total,calls_note\n");
        printf("%s,%s,%s,%zu,%.1f,%s,", np_test_names[o->test], o->api->name, fam, o->size,
               st->mean, np_is_rr(o) ? "trans/s" : "bytes/s");
        if (st->half >= 0)
            printf("%.1f,%.2f,", st->half, pct);
        else
            printf(",,");
        printf("%d,%s,%.1f,%.1f,", st->n, st->met ? "yes" : "no", r->msgs, r->sent);
        if (lat >= 0)
            printf("%.2f", lat);
        printf(",%d,%s,%d,%d,", o->buf, o->one_process ? "one-process" : "procs", (int)r->cpid,
               (int)r->spid);
        csv_num(cf.client, ",");
        csv_num(cf.server, ",");
        csv_num(cf.total, ",");
        for (const char *p = cf.why; *p; p++) /* the note is one field */
            putchar(*p == ',' || *p == '\n' || *p == '"' ? ';' : *p);
        putchar('\n');
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
    if (o->max_iter > 1) {
        if (st->met)
            printf("  confidence interval met after %d iterations\n", st->n);
        else
            printf("  confidence interval NOT met: %d iterations (the limit)\n", st->n);
    }
    const char *per = np_is_rr(o) ? "transaction" : "message";
    if (cf.total < 0)
        printf("  system calls per %s: n/a: %s\n", per, cf.why);
    else if (o->one_process)
        printf("  system calls per %s: %.2f (one process, both sides)\n", per, cf.total);
    else if (np_is_rr(o))
        printf("  system calls per transaction: client %.2f, server %.2f (processes %d, %d)\n",
               cf.client, cf.server, (int)r->cpid, (int)r->spid);
    else
        printf("  system calls: sender %.2f per message sent, receiver %.2f per message "
               "delivered (processes %d, %d)\n", cf.client, cf.server, (int)r->cpid,
               (int)r->spid);
}

/* ---------------------------------------------------------------- main */

int ust_cmd_netperf(int argc, char **argv)
{
    struct np_opts o;
    struct result res;
    char err[NP_ERRLEN + 64];
    int rc;

    if (np_parse_args(argc, argv, &o) < 0)
        return NP_EXIT_USAGE;
    signal(SIGPIPE, SIG_IGN);
    memset(&res, 0, sizeof(res));
    res.calls_c = res.calls_s = -1;
    const char *over = "sockets";
    if (o.api == &np_api_xti)
        over = o.xti_dev ? o.xti_dev : np_is_udp(&o) ? "/dev/udp" : "/dev/tcp";
    if (!o.csv) {
        printf("netperf: %s over %s%s, %s, ", np_test_names[o.test],
               o.api == &np_api_xti ? "XTI " : "", over,
               o.xti_dev ? "its own addresses" : o.family == AF_INET6 ? "::1" : "127.0.0.1");
        if (np_is_rr(&o))
            printf("%zu-byte requests, %zu-byte responses", o.size, o.rsp_size);
        else
            printf("%zu-byte sends, %zu-byte receives", o.size, o.rsize);
        printf(", buffers %d/%d%s, %s, ", o.buf, o.rbuf, o.nodelay ? ", no delay" : "",
               o.one_process ? "one process" : "client and server processes");
        if (o.max_iter > 1)
            printf("%g s x %d..%d iterations, %d %% CI +-%g %%\n", o.len, o.min_iter,
                   o.max_iter, o.level, o.width / 2);
        else
            printf("%g s\n", o.len);
    }
    fflush(stdout);

    /* Shared with the server process: made before the fork. */
    struct np_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "netperf: mmap: %s\n", strerror(errno));
        return NP_EXIT_FAIL;
    }
    rc = o.one_process ? run_one(&o, sh, &res, err) : run_procs(&o, sh, &res, err);
    if (rc == NP_EXIT_UNAVAILABLE) {
        fprintf(stderr, "netperf: not available: %s\n", err);
        munmap(sh, sizeof(*sh));
        return rc;
    }
    if (rc != 0) {
        fprintf(stderr, "netperf: %s over %s: %s\n", np_test_names[o.test], o.api->name, err);
        fflush(NULL);
        _exit(rc); /* a loop may be blocked for good */
    }
    print_result(&o, &res, res.why[0] ? res.why : "not counted");
    munmap(sh, sizeof(*sh));
    return NP_EXIT_OK;
}
