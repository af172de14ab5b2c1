/* SPDX-License-Identifier: MIT */
/*
 * xti_more.c -- bench_xti_more: TCP_STREAM-like sends of small messages
 * through libxnet on /dev/tcp with T_MORE (coalesced in the library,
 * src/xti/xti_more.c), with T_MORE and coalescing off (each send crosses:
 * the behaviour before it), without T_MORE (each send a push), against a
 * kernel TCP socket sending the same sizes (Nagle on, as netperf's
 * TCP_STREAM).  DESIGN.md "Measuring": timings are a report, never a test.
 *
 * The receiver is a plain TCP socket server in a child process forked
 * before the library is used: it reads each connection to EOF into a
 * 256 KiB buffer and reports bytes and the time from first byte to EOF.
 * The sender sends for SECONDS, then releases (t_sndrel / shutdown) and
 * closes.  Modes and sizes run interleaved, REPS rounds; medians printed
 * (MB/s at the receiver, and millions of sends per second).
 *
 *   bench_xti_more [-s SECONDS] [-r REPS] [-m SIZE]... [-M MODE] [--csv FILE]
 *   (-M 0..3: only that mode -- T_MORE, T_MORE off, push, socket -- for perf)
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <xti.h>

enum { M_MORE, M_MORE_OFF, M_PUSH, M_SOCK, M_N };
static const char *mode_name[M_N] = {"xti T_MORE", "xti T_MORE (coalescing off)", "xti no T_MORE",
                                     "socket send"};

struct result {
    long long bytes;
    long long ns;
};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The receiver: accept, read to EOF, report {bytes, ns} on res; for ever. */
static void receiver(int ls, int res)
{
    static char buf[256 * 1024];
    for (;;) {
        int s = accept(ls, NULL, NULL);
        struct result r = {0, 0};
        long long t0 = 0;
        ssize_t n;

        if (s < 0)
            _exit(1);
        while ((n = read(s, buf, sizeof(buf))) > 0) {
            if (!t0)
                t0 = now_ns();
            r.bytes += n;
        }
        r.ns = now_ns() - t0;
        close(s);
        if (write(res, &r, sizeof(r)) != (ssize_t)sizeof(r))
            _exit(1);
    }
}

static struct sockaddr_in srv;

/* One run: mode, size, seconds.  Fills *r from the receiver; sends in *sends. */
static int run(int mode, int size, double secs, int res, struct result *r, long long *sends)
{
    static char buf[65536];
    long long end, n = 0;
    int fd;

    memset(buf, 'x', sizeof(buf));
    if (mode == M_SOCK) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&srv, sizeof(srv)) < 0) {
            perror("connect");
            return -1;
        }
        end = now_ns() + (long long)(secs * 1e9);
        while (now_ns() < end)
            for (int i = 0; i < 64; i++, n++)
                if (send(fd, buf, (size_t)size, 0) != size) {
                    perror("send");
                    return -1;
                }
        shutdown(fd, SHUT_WR);
        close(fd);
    } else {
        struct t_call call;
        int flags = mode == M_PUSH ? 0 : T_MORE;

        fd = t_open("/dev/tcp", O_RDWR, NULL);
        if (fd < 0 || t_bind(fd, NULL, NULL) < 0) {
            t_error("t_open/t_bind /dev/tcp");
            return -1;
        }
        memset(&call, 0, sizeof(call));
        call.addr.buf = (char *)&srv;
        call.addr.len = sizeof(srv);
        if (t_connect(fd, &call, NULL) < 0) {
            t_error("t_connect");
            return -1;
        }
        if (mode == M_MORE_OFF)
            t_coalesce(fd, 0);
        else
            t_coalesce(fd, 1);
        end = now_ns() + (long long)(secs * 1e9);
        while (now_ns() < end)
            for (int i = 0; i < 64; i++, n++)
                if (t_snd(fd, buf, (unsigned)size, flags) != size) {
                    t_error("t_snd");
                    return -1;
                }
        if (t_sndrel(fd) < 0)
            t_error("t_sndrel");
        t_close(fd);
    }
    if (read(res, r, sizeof(*r)) != (ssize_t)sizeof(*r))
        return -1;
    *sends = n;
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int sizes[16], nsizes = 0, reps = 5, p[2], ls, only = -1;
    double secs = 0.5;
    const char *csv = NULL;
    socklen_t al = sizeof(srv);
    pid_t pid;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc && nsizes < 16)
            sizes[nsizes++] = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-M") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv = argv[++i];
        else {
            fprintf(stderr, "usage: %s [-s SECONDS] [-r REPS] [-m SIZE]... [-M MODE] [--csv FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!nsizes) {
        static const int def[] = {1, 64, 256, 1024};
        for (int i = 0; i < 4; i++)
            sizes[nsizes++] = def[i];
    }
    if (reps < 1 || reps > 64)
        reps = 5;
    memset(&srv, 0, sizeof(srv));
    srv.sin_family = AF_INET;
    srv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *)&srv, sizeof(srv)) < 0 || listen(ls, 8) < 0 ||
        getsockname(ls, (struct sockaddr *)&srv, &al) < 0 || pipe(p) < 0) {
        perror("listener");
        return 1;
    }
    pid = fork(); /* before the library starts any thread */
    if (pid == 0) {
        close(p[0]);
        receiver(ls, p[1]);
    }
    close(p[1]);
    close(ls);

    static double mbs[16][M_N][64], mps[16][M_N][64];
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < nsizes; s++)
            for (int m = 0; m < M_N; m++) {
                struct result res;
                long long sends;
                if (only >= 0 && m != only) {
                    mbs[s][m][r] = mps[s][m][r] = 0;
                    continue;
                }
                if (run(m, sizes[s], secs, p[0], &res, &sends) < 0) {
                    kill(pid, SIGKILL);
                    return 1;
                }
                mbs[s][m][r] = res.ns ? (double)res.bytes * 1e3 / (double)res.ns : 0;
                mps[s][m][r] = res.ns ? (double)sends * 1e3 / (double)res.ns : 0;
            }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);

    FILE *cf = csv ? fopen(csv, "w") : NULL;
    if (cf)
        fprintf(cf, "size,mode,MBps,Msends_per_s\n");
    printf("TCP_STREAM-like sends on 127.0.0.1, %.2f s a run, median of %d interleaved runs\n",
           secs, reps);
    printf("%6s  %-28s %10s %12s %10s\n", "size", "mode", "MB/s", "Msends/s", "x socket");
    for (int s = 0; s < nsizes; s++) {
        double sock = median(mbs[s][M_SOCK], reps);
        for (int m = 0; m < M_N; m++) {
            double b = median(mbs[s][m], reps), q = median(mps[s][m], reps);
            printf("%6d  %-28s %10.1f %12.3f %10.2f\n", sizes[s], mode_name[m], b, q,
                   sock > 0 ? b / sock : 0);
            if (cf)
                fprintf(cf, "%d,%s,%.2f,%.4f\n", sizes[s], mode_name[m], b, q);
        }
    }
    if (cf)
        fclose(cf);
    return 0;
}
