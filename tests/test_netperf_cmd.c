/* SPDX-License-Identifier: MIT */
/*
 * test_netperf_cmd.c -- `ustreams netperf` (tools/netperf.c) runs and says
 * what it measured; its speed is never checked (timings are a report).
 *   1. each test over each API, one short iteration with --csv: exit 0, a
 *      header line and one data line of 14 fields naming the test, the API
 *      and the size, a positive mean, iterations 1 and ci_met "no" (one
 *      iteration has no interval)
 *   2. XTI TCP where "/dev/tcp" cannot be opened (the tcp provider is not in
 *      the build): exit 3 and "not available: " with t_open's reason, and
 *      nothing on stdout with --csv; where it can, as 1
 *   3. several iterations: iterations between MIN and MAX, the interval
 *      half-width present; the plain report says whether it was met
 *   4. the XTI TCP code (t_listen, t_accept onto an unbound endpoint,
 *      t_connect, t_snd/t_rcv, t_sndrel/t_rcvrel) over /dev/ticotsord with
 *      --xti-dev, whether or not /dev/tcp exists: as 1; --xti-dev of the
 *      wrong service type (/dev/ticots): exit 1 with the reason
 *   5. bad options: exit 2 with a message, nothing on stdout
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "tool_run.h"

/* Run "ustreams netperf ARGS", stdout in out (n bytes), stderr in errout;
 * the exit status (-1 if it did not exit). */
static int netperf(const char *args, char *out, size_t n, char *errout, size_t en)
{
    return tool_run_split("netperf", args, out, n, errout, en);
}

/* Split line at commas into f (at most nf fields); the number of fields. */
static int fields(char *line, char **f, int nf)
{
    int k = 0;
    char *s = line;
    while (k < nf) {
        f[k++] = s;
        char *c = strchr(s, ',');
        if (!c)
            break;
        *c = '\0';
        s = c + 1;
    }
    return k;
}

/* Check the CSV of a successful run: header, one line, its fields. */
static void check_csv(const char *out, const char *test, const char *api, const char *size,
                      int iters)
{
    char buf[2048], *f[20];
    snprintf(buf, sizeof(buf), "%s", out);
    char *nl = strchr(buf, '\n');
    if (!CHECK(nl != NULL))
        return;
    *nl = '\0';
    CHECK(strcmp(buf, "test,api,family,size,mean,unit,ci_half,ci_pct,iterations,ci_met,"
                      "msgs_per_s,sent_per_s,latency_us,buffer") == 0);
    char *line = nl + 1;
    char *end = strchr(line, '\n');
    if (!CHECK(end != NULL))
        return;
    *end = '\0';
    CHECK_EQ(end[1], '\0'); /* one data line */
    if (!CHECK_EQ(fields(line, f, 20), 14))
        return;
    CHECK(strcmp(f[0], test) == 0);
    CHECK(strcmp(f[1], api) == 0);
    CHECK(strcmp(f[2], "IPv4") == 0);
    CHECK(strcmp(f[3], size) == 0);
    CHECK(atof(f[4]) > 0);
    CHECK(strcmp(f[5], strstr(test, "RR") ? "trans/s" : "bytes/s") == 0);
    int n = atoi(f[8]);
    if (iters > 0) {
        CHECK_EQ(n, iters);
        CHECK(strcmp(f[6], "") == 0); /* no interval from one sample */
        CHECK(strcmp(f[9], "no") == 0);
    } else {
        CHECK(n >= 2 && n <= 4);
        CHECK(atof(f[6]) >= 0 && strcmp(f[6], "") != 0);
        CHECK(strcmp(f[9], "yes") == 0 || (strcmp(f[9], "no") == 0 && n == 4));
    }
    if (strstr(test, "RR"))
        CHECK(atof(f[12]) > 0); /* latency */
}

static void test_runs(void)
{
    static const struct {
        const char *test, *size;
    } t[] = {{"UDP_RR", "1"}, {"UDP_STREAM", "256"}, {"TCP_RR", "1"}, {"TCP_STREAM", "4096"}};
    static const char *const apis[] = {"xti", "sock"};
    char out[2048], err[2048], args[256];

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        for (size_t a = 0; a < 2; a++) {
            snprintf(args, sizeof(args), "-t %s --api %s -m %s -l 0.05 -i 1 --warmup 0.02 --csv",
                     t[i].test, apis[a], t[i].size);
            int st = netperf(args, out, sizeof(out), err, sizeof(err));
            if (a == 0 && t[i].test[0] == 'T' && st == 3) {
                /* no tcp provider in this build: a missing series, said so */
                CHECK(strstr(err, "not available: /dev/tcp: t_open: ") != NULL);
                CHECK_EQ(out[0], '\0');
                continue;
            }
            if (!CHECK_EQ(st, 0))
                fprintf(stderr, "  netperf %s: %s", args, err);
            check_csv(out, t[i].test, apis[a], t[i].size, 1);
        }
    }
}

static void test_iterations(void)
{
    char out[2048], err[2048];
    int st = netperf("-t UDP_RR --api sock -l 0.03 -i 4,2 -I 95,50 --warmup 0 --csv", out,
                     sizeof(out), err, sizeof(err));
    CHECK_EQ(st, 0);
    check_csv(out, "UDP_RR", "sock", "1", 0);
    /* the plain report says whether the interval was met */
    st = netperf("-t UDP_RR --api xti -l 0.03 -i 2", out, sizeof(out), err, sizeof(err));
    CHECK_EQ(st, 0);
    CHECK(strstr(out, "transactions/s") != NULL);
    CHECK(strstr(out, "confidence interval") != NULL);
}

static void test_xti_dev(void)
{
    char out[2048], err[2048];
    static const char *const tests[] = {"TCP_STREAM", "TCP_RR"};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof(args),
                 "-t %s --api xti --xti-dev /dev/ticotsord -l 0.05 -i 1 --warmup 0 --csv",
                 tests[i]);
        int st = netperf(args, out, sizeof(out), err, sizeof(err));
        if (!CHECK_EQ(st, 0))
            fprintf(stderr, "  netperf %s: %s", args, err);
        check_csv(out, tests[i], "xti", i ? "1" : "1024", 1);
    }
    int st = netperf("-t TCP_RR --api xti --xti-dev /dev/ticots -l 0.05 -i 1", out, sizeof(out),
                     err, sizeof(err));
    CHECK_EQ(st, 1);
    CHECK(strstr(err, "T_COTS_ORD") != NULL);
}

static void test_bad_options(void)
{
    static const char *const bad[] = {"-t FOO",   "--api nosuch", "-m 70000",  "-m 0",
                                      "-i 0",     "-i 31",        "-i 3,5",    "-I 90",
                                      "-l 0",     "-s -1",        "extra-arg", "--nosuch"};
    char out[2048], err[2048];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int st = netperf(bad[i], out, sizeof(out), err, sizeof(err));
        if (!CHECK_EQ(st, 2))
            fprintf(stderr, "  netperf %s: status %d\n", bad[i], st);
        CHECK(err[0] != '\0');
        CHECK_EQ(out[0], '\0');
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);
    test_runs();
    test_iterations();
    test_xti_dev();
    test_bad_options();
    return CHECK_RESULT();
}
