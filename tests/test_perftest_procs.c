/* SPDX-License-Identifier: MIT */
/*
 * test_perftest_procs.c -- `ustreams perftest --procs` (tools/perftest_procs.c):
 * the reader of each pair is a child process.  Whether it runs and what it
 * says; its speed is never checked (timings are a report).
 *   1. each kernel peer (pipe, unix-stream, unix-seqpacket), with --csv: exit
 *      0, one line per interval of 7 fields (impl, size, writes/s, reads/s,
 *      bytes/s, options, mode) naming the peer and the size, positive rates,
 *      mode "procs"; on stderr "totals:" with positive counts, and as many
 *      reads as writes for unix-seqpacket (each read one message); also
 *      with -n, --scale, -F, --hiwat, 1 B and 4 KiB writes; the plain
 *      report says "writer and reader processes"
 *   2. without --procs the mode column says "threads"
 *   3. ustreams with --procs: either it runs (as 1) or it exits 3 saying
 *      "pipes do not cross fork() in this build" with nothing on stdout (a
 *      build whose pipes do not survive fork(): the other result is not an
 *      error of perftest's)
 *   4. --peer zmq-inproc with --procs: refused, exit 2, nothing measured
 *      (inproc:// exists within one process); in a build without the peer,
 *      "unknown --peer"
 *   5. options that need a ustreams pipe (-H) with --procs --peer pipe: exit 2
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tool_run.h"

/* Run "ustreams perftest ARGS", stdout in out, stderr in err; the exit
 * status (-1 if it did not exit). */
static int perftest(const char *args, char *out, size_t n, char *err, size_t en)
{
    return tool_run_split("perftest", args, out, n, err, en);
}

/* Check the --csv output of a run of `impl` at `size` over `lines`
 * intervals in `mode`; 1 if every check held. */
static int csv_ok(char *out, const char *impl, long size, int lines, const char *mode)
{
    int seen = 0, ok = 1;
    for (char *save = NULL, *ln = strtok_r(out, "\n", &save); ln;
         ln = strtok_r(NULL, "\n", &save)) {
        char *f[8];
        int k = 0;
        for (char *s2 = NULL, *t = strtok_r(ln, ",", &s2); t && k < 8;
             t = strtok_r(NULL, ",", &s2))
            f[k++] = t;
        seen++;
        ok = ok && k == 7 && strcmp(f[0], impl) == 0 && strtol(f[1], NULL, 10) == size &&
             strtod(f[2], NULL) > 0 && strtod(f[3], NULL) > 0 && strtod(f[4], NULL) > 0 &&
             strcmp(f[6], mode) == 0;
    }
    return ok && seen == lines;
}

/* "totals: writes=W reads=R bytes=B" in err: 1 if all are positive and, for
 * a peer that keeps message boundaries (each read one write), R == W. */
static int totals_ok(const char *err, int boundaries)
{
    long long w = 0, r = 0, b = 0;
    const char *t = strstr(err, "totals: ");
    if (!t || sscanf(t, "totals: writes=%lld reads=%lld bytes=%lld", &w, &r, &b) != 3)
        return 0;
    return w > 0 && r > 0 && b > 0 && (!boundaries || w == r);
}

static void test_peers(void)
{
    static const struct {
        const char *args, *impl;
        long size;
        int lines, boundaries;
    } runs[] = {
        {"--peer pipe", "pipe", 64, 2, 0},
        {"--peer unix-stream", "unix-stream", 64, 2, 0},
        {"--peer unix-seqpacket", "unix-seqpacket", 64, 2, 1},
        {"--peer pipe -n --scale", "pipe", 64, 2, 0},
        {"--peer unix-seqpacket -s 4096 -F -n", "unix-seqpacket", 4096, 2, 1},
        {"--peer unix-stream -s 1 --hiwat 65536", "unix-stream", 1, 2, 0},
    };
    static char out[8192], err[8192];
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        char args[256];
        snprintf(args, sizeof(args), "--procs --csv -q -t 0.05 -i %d --warmup 0.01 -s %ld %s",
                 runs[i].lines, runs[i].size, runs[i].args);
        int st = perftest(args, out, sizeof(out), err, sizeof(err));
        CHECK_EQ(st, 0);
        if (st != 0)
            fprintf(stderr, "perftest %s: %s", args, err);
        char copy[sizeof(out)];
        memcpy(copy, out, sizeof(copy));
        int csv = csv_ok(out, runs[i].impl, runs[i].size, runs[i].lines, "procs");
        CHECK(csv);
        if (!csv)
            fprintf(stderr, "perftest %s: csv:\n%s", args, copy);
        CHECK(totals_ok(err, runs[i].boundaries));
    }
    /* The plain report says processes. */
    CHECK_EQ(perftest("--procs --peer pipe -t 0.05", out, sizeof(out), err, sizeof(err)), 0);
    CHECK(strstr(out, "writer and reader processes") != NULL);
    CHECK(strstr(out, "interval 1:") != NULL);
}

static void test_threads(void)
{
    static char out[8192], err[8192];
    /* 0.2 s: on a loaded 2-CPU machine under ASan a 50 ms interval could
     * pass with one of the two threads never scheduled (0 reads). */
    CHECK_EQ(perftest("--csv -q -t 0.2 --peer pipe", out, sizeof(out), err, sizeof(err)), 0);
    CHECK(csv_ok(out, "pipe", 64, 1, "threads"));
}

static void test_ustreams(void)
{
    static char out[8192], err[8192];
    /* 0.2 s, as test_threads: under load a 50 ms interval could end with the
     * reader process never scheduled (a zero in the CSV). */
    int st = perftest("--procs --csv -q -t 0.2 -r", out, sizeof(out), err, sizeof(err));
    CHECK(st == 0 || st == 3);
    if (st == 3) {
        CHECK(strstr(err, "ustreams: pipes do not cross fork() in this build") != NULL);
        CHECK_EQ(out[0], '\0');
    } else {
        CHECK(csv_ok(out, "ustreams", 64, 1, "procs"));
        CHECK(totals_ok(err, 1));
        CHECK(strstr(err, "blockstats: mblks=0 dblks=0 bytes=0") != NULL);
    }
}

static void test_refused(void)
{
    static char out[8192], err[8192];
    int threaded = perftest("--csv -q -t 0.02 --peer zmq-inproc", out, sizeof(out), err,
                            sizeof(err)) == 0;
    CHECK_EQ(perftest("--procs --csv -q -t 0.02 --peer zmq-inproc", out, sizeof(out), err,
                      sizeof(err)),
             2);
    CHECK_EQ(out[0], '\0');
    if (threaded)
        CHECK(strstr(err, "--peer zmq-inproc cannot cross processes") != NULL);
    else
        CHECK(strstr(err, "unknown --peer 'zmq-inproc'") != NULL);
    CHECK_EQ(perftest("--procs --peer pipe -H -t 0.02", out, sizeof(out), err, sizeof(err)), 2);
    CHECK(strstr(err, "need a ustreams pipe") != NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);
    test_peers();
    test_threads();
    test_ustreams();
    test_refused();
    return CHECK_RESULT();
}
