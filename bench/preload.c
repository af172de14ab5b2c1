/* SPDX-License-Identifier: MIT */
/*
 * preload.c -- bench_preload: the cost of libustreams-preload.so on calls
 * that are not on streams (issue 22 item 1: within 5 % of without).
 *
 *   bench_preload [-n ITERATIONS] [-r REPEAT] [-l PATH-TO-PRELOAD]
 *
 * Runs itself again REPEAT times without and REPEAT times with the preload
 * in LD_PRELOAD, alternating (so drift hits both alike); each child times
 * ITERATIONS write(2)+read(2) pairs of 1 byte on a kernel pipe and prints
 * ns per pair.  Reported: the median of each side and their ratio.  The
 * library is -l PATH, else libustreams-preload.so beside this program (the
 * build tree).  A report, never a test (bench/README.md).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int child(long n)
{
    int p[2];
    char c = 'x';
    if (pipe(p) != 0)
        return 1;
    for (long i = 0; i < n / 10; i++) /* warm up */
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
            return 1;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
            return 1;
    printf("%.2f\n", (now_ns() - t0) / n);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One child run: its ns per pair, or -1. */
static double run_child(const char *self, long n, const char *preload)
{
    char arg[32], cmd[PATH_MAX * 2 + 64];
    snprintf(arg, sizeof(arg), "%ld", n);
    snprintf(cmd, sizeof(cmd), "%s%s%s '%s' --child %s", preload ? "LD_PRELOAD='" : "",
             preload ? preload : "", preload ? "' " : "", self, arg);
    FILE *f = popen(cmd, "r");
    double v = -1;
    if (f == NULL || fscanf(f, "%lf", &v) != 1)
        v = -1;
    if (f != NULL && pclose(f) != 0)
        v = -1;
    return v;
}

int main(int argc, char **argv)
{
    long n = 1000000;
    int repeat = 7;
    const char *lib = NULL;
    char self[PATH_MAX], deflib[PATH_MAX];

    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(atol(argv[2]));
    for (int o; (o = getopt(argc, argv, "n:r:l:")) != -1;) {
        if (o == 'n')
            n = atol(optarg);
        else if (o == 'r')
            repeat = atoi(optarg);
        else if (o == 'l')
            lib = optarg;
        else {
            fprintf(stderr, "usage: bench_preload [-n ITERATIONS] [-r REPEAT] [-l PRELOAD.so]\n");
            return 2;
        }
    }
    if (n <= 0 || repeat <= 0 || repeat > 99) {
        fprintf(stderr, "bench_preload: -n > 0, 0 < -r < 100\n");
        return 2;
    }
    ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (k <= 0)
        return 1;
    self[k] = '\0';
    if (lib == NULL) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof(tmp), "%s", self);
        snprintf(deflib, sizeof(deflib), "%s/libustreams-preload.so", dirname(tmp));
        lib = deflib;
    }
    if (access(lib, R_OK) != 0) {
        fprintf(stderr, "bench_preload: %s: %s\n", lib, strerror(errno));
        return 1;
    }
    double without[100], with[100];
    for (int i = 0; i < repeat; i++) {
        without[i] = run_child(self, n, NULL);
        with[i] = run_child(self, n, lib);
        if (without[i] < 0 || with[i] < 0) {
            fprintf(stderr, "bench_preload: a child failed\n");
            return 1;
        }
    }
    qsort(without, repeat, sizeof(double), cmp);
    qsort(with, repeat, sizeof(double), cmp);
    double a = without[repeat / 2], b = with[repeat / 2];
    printf("1-byte write+read on a kernel pipe, %ld pairs x %d runs (medians)\n", n, repeat);
    printf("  without preload: %8.1f ns/pair\n", a);
    printf("  with preload:    %8.1f ns/pair\n", b);
    printf("  ratio:           %8.3f  (%+.1f %%)\n", b / a, (b / a - 1) * 100);
    return 0;
}
