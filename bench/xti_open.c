/* SPDX-License-Identifier: MIT */
/*
 * xti_open.c -- bench_xti_open: the cost of making a bound transport
 * endpoint, t_open + t_bind (+ t_close) through libxnet on the loopback
 * transports, against socket() + bind() (+ close()) of the kernel, side by
 * side in one run (DESIGN.md "Measuring": timings are a report, never a
 * test).  Prints ns per endpoint and the ratio; --csv FILE also writes them.
 *
 * The Internet providers too: "/dev/udp" and, when it opens (the tcp
 * provider is in the build), "/dev/tcp", each bound to 127.0.0.1 port 0,
 * against socket(AF_INET) + bind to the same address (SOCK_DGRAM,
 * SOCK_STREAM); their endpoint is a stream plus a kernel socket.  A provider
 * that cannot be opened is printed as "not available" and left out of the
 * CSV (a missing row, not a number).
 *
 * Wall time per endpoint and, for the Internet providers and their sockets,
 * the process's CPU time per endpoint (every thread), which a loaded
 * machine does not inflate with the wait for a CPU.
 *
 * --held N first opens and binds N endpoints of /dev/udp and of /dev/tcp and
 * N UDP and N TCP sockets, and keeps them open through the runs: the cost of
 * an endpoint in a process that has many (no table the open or close walks
 * may grow with N; issue 23 item 4).
 *
 *   bench_xti_open [-n ITER] [--held N] [--csv FILE]
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <xti.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's CPU time (every thread: the library's work on its own
 * threads counts), s.  On a loaded machine wall time mostly measures the
 * wait for a CPU; CPU time per operation does not. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_t0, cpu_last; /* cpu_last: CPU ns per operation of the last run */

static void cpu_start(void)
{
    cpu_t0 = cpu_now();
}

static double cpu_stop(double wall_ns, int iter)
{
    cpu_last = (cpu_now() - cpu_t0) * 1e9 / iter;
    return wall_ns;
}

/* ns per t_open + t_bind + t_close on provider, or -1 if it cannot be opened. */
static double run_xti(const char *prov, int iter)
{
    double t0 = now();
    cpu_start();
    for (int i = 0; i < iter; i++) {
        int fd = t_open(prov, O_RDWR, NULL);
        if (fd < 0 || t_bind(fd, NULL, NULL) < 0) {
            t_error(prov);
            return -1;
        }
        t_close(fd);
    }
    return cpu_stop((now() - t0) * 1e9 / iter, iter);
}

/* ns per t_open + t_bind to 127.0.0.1 port 0 + t_close on an Internet
 * provider, or -1 if it cannot be opened (quiet: the caller says so) or
 * fails (said here). */
static double run_xti_inet(const char *prov, int iter)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct t_bind req = {.addr = {.len = sizeof(a), .buf = (char *)&a}};
    double t0 = now();
    cpu_start();
    for (int i = 0; i < iter; i++) {
        int fd = t_open(prov, O_RDWR, NULL);
        if (fd < 0) {
            if (i > 0)
                t_error(prov);
            return -1;
        }
        if (t_bind(fd, &req, NULL) < 0) {
            t_error(prov);
            t_close(fd);
            return -1;
        }
        t_close(fd);
    }
    return cpu_stop((now() - t0) * 1e9 / iter, iter);
}

/* ns per strm_open + strm_close of provider: the stream's own cost, below libxnet. */
static double run_raw(const char *prov, int iter)
{
    double t0 = now();
    cpu_start();
    for (int i = 0; i < iter; i++) {
        int fd = strm_open(prov, O_RDWR);
        if (fd < 0) {
            perror(prov);
            return -1;
        }
        strm_close(fd);
    }
    return cpu_stop((now() - t0) * 1e9 / iter, iter);
}

/* ns per socket + bind + close for family/type (AF_INET: 127.0.0.1 port 0; AF_UNIX: autobind). */
static double run_sock(int family, int type, int iter)
{
    double t0 = now();
    cpu_start();
    for (int i = 0; i < iter; i++) {
        int s = socket(family, type, 0);
        int rc;
        if (family == AF_INET) {
            struct sockaddr_in a;
            memset(&a, 0, sizeof(a));
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            rc = bind(s, (struct sockaddr *)&a, sizeof(a));
        } else {
            struct sockaddr_un a;
            memset(&a, 0, sizeof(a));
            a.sun_family = AF_UNIX;
            rc = bind(s, (struct sockaddr *)&a, sizeof(sa_family_t)); /* autobind */
        }
        if (s < 0 || rc < 0) {
            perror("socket/bind");
            return -1;
        }
        close(s);
    }
    return cpu_stop((now() - t0) * 1e9 / iter, iter);
}

/* Open and bind n endpoints of prov (an Internet provider) and keep them;
 * those that cannot be made are left out (a provider missing from the build). */
static void hold_xti(const char *prov, int n)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct t_bind req = {.addr = {.len = sizeof(a), .buf = (char *)&a}};
    for (int i = 0; i < n; i++) {
        int fd = t_open(prov, O_RDWR, NULL);
        if (fd < 0)
            return;
        if (t_bind(fd, &req, NULL) < 0) {
            t_close(fd);
            return;
        }
    }
}

/* Open and bind n sockets of type to 127.0.0.1 and keep them. */
static void hold_sock(int type, int n)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n; i++) {
        int s = socket(AF_INET, type, 0);
        if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0)
            return;
    }
}

int main(int argc, char **argv)
{
    int held = 0;
    int iter = 20000;
    const char *csv = NULL;
    static const char *provs[] = {"/dev/ticlts", "/dev/ticots", "/dev/ticotsord"};
    double x[3], udp, tcp, unx, raw, iudp, itcp, cudp, ctcp, ciudp = -1, citcp = -1;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iter = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--held") && i + 1 < argc)
            held = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv = argv[++i];
        else {
            fprintf(stderr, "usage: %s [-n ITER] [--held N] [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    if (held > 0) {
        hold_xti("/dev/udp", held);
        hold_xti("/dev/tcp", held);
        hold_sock(SOCK_DGRAM, held);
        hold_sock(SOCK_STREAM, held);
        printf("with %d endpoints of /dev/udp and /dev/tcp and %d UDP and TCP sockets open\n",
               held, held);
    }
    /* warm up both sides (caches, the library's threads) */
    run_xti(provs[0], iter / 10 + 1);
    run_sock(AF_INET, SOCK_DGRAM, iter / 10 + 1);
    udp = run_sock(AF_INET, SOCK_DGRAM, iter);
    cudp = cpu_last;
    tcp = run_sock(AF_INET, SOCK_STREAM, iter);
    ctcp = cpu_last;
    unx = run_sock(AF_UNIX, SOCK_DGRAM, iter);
    raw = run_raw(provs[0], iter);
    for (int i = 0; i < 3; i++)
        x[i] = run_xti(provs[i], iter);
    run_xti_inet("/dev/udp", iter / 10 + 1); /* its epoll thread starts on the first bind */
    iudp = run_xti_inet("/dev/udp", iter);
    if (iudp >= 0)
        ciudp = cpu_last;
    itcp = run_xti_inet("/dev/tcp", iter);
    if (itcp >= 0)
        citcp = cpu_last;
    printf("%-36s %10s %8s\n", "endpoint (open + bind + close)", "ns/op", "ratio");
    printf("%-36s %10.0f %8s\n", "socket+bind AF_INET SOCK_DGRAM", udp, "1.00");
    printf("%-36s %10.0f %8.2f\n", "socket+bind AF_INET SOCK_STREAM", tcp, tcp / udp);
    printf("%-36s %10.0f %8.2f\n", "socket+bind AF_UNIX (autobind)", unx, unx / udp);
    printf("%-36s %10.0f %8.2f\n", "strm_open+strm_close /dev/ticlts", raw, raw / udp);
    for (int i = 0; i < 3; i++)
        printf("t_open+t_bind %-22s %10.0f %8.2f\n", provs[i], x[i], x[i] / udp);
    printf("libxnet's own share (t_open+t_bind ticlts - strm_open+strm_close): %.0f ns = %.2f x "
           "socket+bind udp\n",
           x[0] - raw, (x[0] - raw) / udp);
    printf("t_open+t_bind ticlts / socket+bind udp: %.2f; ticotsord / tcp: %.2f\n", x[0] / udp,
           x[2] / tcp);
    const char *inet[2] = {"/dev/udp", "/dev/tcp"};
    double iv[2] = {iudp, itcp}, sv[2] = {udp, tcp};
    for (int i = 0; i < 2; i++) {
        if (iv[i] < 0)
            printf("t_open+t_bind %-8s 127.0.0.1   not available\n", inet[i]);
        else
            printf("t_open+t_bind %-8s 127.0.0.1 %10.0f ns = %.2f x socket+bind %s\n", inet[i],
                   iv[i], iv[i] / sv[i], i ? "SOCK_STREAM" : "SOCK_DGRAM");
    }
    double cv[2] = {ciudp, citcp}, cs[2] = {cudp, ctcp};
    for (int i = 0; i < 2; i++)
        if (cv[i] >= 0)
            printf("CPU time, every thread: t_open+t_bind %-8s %10.0f ns = %.2f x socket+bind "
                   "%10.0f ns\n",
                   inet[i], cv[i], cv[i] / cs[i], cs[i]);
    if (csv) {
        FILE *f = fopen(csv, "w");
        if (f) {
            fprintf(f, "what,ns_per_op\nsock_udp,%.1f\nsock_tcp,%.1f\nsock_unix,%.1f\nstrm_open_close,%.1f\n",
                    udp, tcp, unx, raw);
            for (int i = 0; i < 3; i++)
                fprintf(f, "xti_%s,%.1f\n", provs[i] + 5, x[i]);
            if (iudp >= 0)
                fprintf(f, "xti_udp,%.1f\n", iudp);
            if (itcp >= 0)
                fprintf(f, "xti_tcp,%.1f\n", itcp);
            fprintf(f, "cpu_sock_udp,%.1f\ncpu_sock_tcp,%.1f\n", cudp, ctcp);
            if (ciudp >= 0)
                fprintf(f, "cpu_xti_udp,%.1f\n", ciudp);
            if (citcp >= 0)
                fprintf(f, "cpu_xti_tcp,%.1f\n", citcp);
            fclose(f);
        }
    }
    return 0;
}
