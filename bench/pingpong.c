/* SPDX-License-Identifier: MIT */
/*
 * pingpong.c -- round-trip latency of two pipes between two threads: one
 * thread writes SIZE bytes into the first pipe and waits for them back on
 * the second; the other echoes.  What a request/response program sees, and
 * what a reader that gathers batches (sd_wait.c) must not slow down.
 *
 *   build/bench_pingpong [-s SIZE] [-n ROUNDS] [-p NMODS] [-k pipe|ustreams]
 *
 * Prints "KIND,SIZE,NMODS,median_ns,p90_ns" over 21 runs of ROUNDS round
 * trips each (the first run is a warm-up, not counted).  -p pushes NMODS
 * nullmods on both ends of both pipes (ustreams only); -k pipe measures
 * pipe(2) in the same way.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <time.h>
#include <unistd.h>

#include "ustreams.h"

#define RUNS 21

static int use_strm = 1;
static size_t size = 64;
static long rounds = 20000;

static ssize_t do_read(int fd, void *b, size_t n)
{
    return use_strm ? strm_read(fd, b, n) : read(fd, b, n);
}

static ssize_t do_write(int fd, const void *b, size_t n)
{
    return use_strm ? strm_write(fd, b, n) : write(fd, b, n);
}

/* Read exactly n bytes (a byte-stream read may return less). */
static int read_all(int fd, unsigned char *b, size_t n)
{
    while (n > 0) {
        ssize_t r = do_read(fd, b, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

struct echo_arg {
    int in, out;
    long total;
};

static void *echo_thread(void *p)
{
    struct echo_arg *a = p;
    unsigned char *buf = malloc(size);
    for (long i = 0; buf && i < a->total; i++) {
        if (read_all(a->in, buf, size) != 0 || do_write(a->out, buf, size) != (ssize_t)size)
            break;
    }
    free(buf);
    return NULL;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int make_pipe(int fds[2], int nmods)
{
    if (!use_strm)
        return pipe(fds);
    if (strm_pipe(fds) != 0)
        return -1;
    for (int i = 0; i < nmods; i++)
        for (int e = 0; e < 2; e++)
            if (strm_ioctl(fds[e], I_PUSH, "nullmod") != 0)
                return -1;
    return 0;
}

int main(int argc, char **argv)
{
    int nmods = 0, c;
    while ((c = getopt(argc, argv, "s:n:p:k:")) != -1) {
        switch (c) {
        case 's': size = strtoul(optarg, NULL, 0); break;
        case 'n': rounds = strtol(optarg, NULL, 0); break;
        case 'p': nmods = atoi(optarg); break;
        case 'k': use_strm = strcmp(optarg, "pipe") != 0; break;
        default:
            fprintf(stderr, "usage: %s [-s SIZE] [-n ROUNDS] [-p NMODS] [-k pipe|ustreams]\n", argv[0]);
            return 2;
        }
    }
    if (size == 0 || rounds <= 0 || (!use_strm && nmods > 0)) {
        fprintf(stderr, "pingpong: bad arguments\n");
        return 2;
    }
    int ping[2], pong[2];
    if (make_pipe(ping, nmods) != 0 || make_pipe(pong, nmods) != 0) {
        perror("pingpong: pipe");
        return 1;
    }
    struct echo_arg ea = {.in = ping[0], .out = pong[1], .total = rounds * (RUNS + 1)};
    pthread_t t;
    if (pthread_create(&t, NULL, echo_thread, &ea) != 0)
        return 1;
    unsigned char *buf = calloc(1, size);
    long long per[RUNS];
    for (int run = 0; run <= RUNS && buf; run++) {
        long long t0 = now_ns();
        for (long i = 0; i < rounds; i++) {
            if (do_write(ping[1], buf, size) != (ssize_t)size || read_all(pong[0], buf, size) != 0) {
                perror("pingpong: round trip");
                return 1;
            }
        }
        if (run > 0)
            per[run - 1] = (now_ns() - t0) / rounds;
    }
    pthread_join(t, NULL);
    free(buf);
    qsort(per, RUNS, sizeof(per[0]), cmp_ll);
    printf("%s,%zu,%d,%lld,%lld\n", use_strm ? "ustreams" : "pipe", size, nmods, per[RUNS / 2],
           per[RUNS * 9 / 10]);
    return 0;
}
