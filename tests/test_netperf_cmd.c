/* SPDX-License-Identifier: MIT */
/*
 * test_netperf_cmd.c -- `ustreams netperf` (tools/netperf.c) runs and says
 * what it measured; its speed is never checked (timings are a report).
 *   1. each test over each API, in both modes (client and server processes,
 *      the default; --one-process), one short iteration with --csv: exit 0,
 *      a header line and one data line of 21 fields naming the test, the
 *      API and the size, a positive mean, iterations 1 and ci_met "no" (one
 *      iteration has no interval); the mode, the two pids (different
 *      processes by default, the same one with --one-process); system
 *      calls per operation counted (or a reason given), and for sockets'
 *      RR tests about 2 per transaction per side (send + receive)
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
 *   6. -l is the test's length (issue 25): without -i one iteration of -l
 *      seconds, and the run takes about that long; with -i MAX,MIN the
 *      iterations; the test options after "--" (-D, -r, -m, -M) as netperf
 */
#include <time.h>
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

/* Check the CSV of a successful run: header, one line, its fields.
 * procs: the mode expected (1 two processes, 0 one). */
static void check_csv_mode(const char *out, const char *test, const char *api, const char *size,
                           int iters, int procs)
{
    char buf[4096], *f[30];
    snprintf(buf, sizeof(buf), "%s", out);
    char *nl = strchr(buf, '\n');
    if (!CHECK(nl != NULL))
        return;
    *nl = '\0';
    CHECK(strcmp(buf, "test,api,family,size,mean,unit,ci_half,ci_pct,iterations,ci_met,"
                      "msgs_per_s,sent_per_s,latency_us,buffer,mode,client_pid,server_pid,"
                      "calls_client,calls_server,calls_total,calls_note") == 0);
    char *line = nl + 1;
    char *end = strchr(line, '\n');
    if (!CHECK(end != NULL))
        return;
    *end = '\0';
    CHECK_EQ(end[1], '\0'); /* one data line */
    if (!CHECK_EQ(fields(line, f, 30), 21))
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
        if (iters == 1) {
            CHECK(strcmp(f[6], "") == 0); /* no interval from one sample */
            CHECK(strcmp(f[9], "no") == 0);
        }
    } else {
        CHECK(n >= 2 && n <= 4);
        CHECK(atof(f[6]) >= 0 && strcmp(f[6], "") != 0);
        CHECK(strcmp(f[9], "yes") == 0 || (strcmp(f[9], "no") == 0 && n == 4));
    }
    if (strstr(test, "RR"))
        CHECK(atof(f[12]) > 0); /* latency */
    /* the mode and its processes */
    long cpid = atol(f[15]), spid = atol(f[16]);
    CHECK(cpid > 0 && spid > 0);
    if (procs) {
        CHECK(strcmp(f[14], "procs") == 0);
        CHECK(cpid != spid); /* the server was another process */
    } else {
        CHECK(strcmp(f[14], "one-process") == 0);
        CHECK_EQ(cpid, spid);
    }
    /* system calls: counted, or a reason why not */
    if (f[20][0] != '\0') {
        fprintf(stderr, "  (system calls not counted: %s)\n", f[20]);
        CHECK(strcmp(f[19], "") == 0);
        return;
    }
    double total = atof(f[19]);
    CHECK(total > 0 && total < 10000);
    if (procs) {
        double c = atof(f[17]), sv = atof(f[18]);
        CHECK(c > 0 && sv >= 0);
        if (strcmp(api, "sock") == 0 && strstr(test, "RR")) {
            /* a socket transaction: one send and one receive per side,
             * plus the measuring thread's few calls */
            CHECK(c >= 1.9 && c < 3);
            CHECK(sv >= 1.9 && sv < 3);
        }
    } else {
        CHECK(strcmp(f[17], "") == 0 && strcmp(f[18], "") == 0);
    }
}

static void check_csv(const char *out, const char *test, const char *api, const char *size,
                      int iters)
{
    check_csv_mode(out, test, api, size, iters, 1);
}

static void test_runs(void)
{
    static const struct {
        const char *test, *size;
    } t[] = {{"UDP_RR", "1"}, {"UDP_STREAM", "256"}, {"TCP_RR", "1"}, {"TCP_STREAM", "4096"}};
    static const char *const apis[] = {"xti", "sock"};
    char out[2048], err[2048], args[256];

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        for (size_t k = 0; k < 4; k++) {
            size_t a = k % 2;
            int procs = k < 2;
            snprintf(args, sizeof(args), "-t %s --api %s -m %s -l 0.1 -i 1 --warmup 0.02 --csv%s",
                     t[i].test, apis[a], t[i].size, procs ? "" : " --one-process");
            int st = netperf(args, out, sizeof(out), err, sizeof(err));
            if (a == 0 && t[i].test[0] == 'T' && st == 3) {
                /* no tcp provider in this build: a missing series, said so */
                CHECK(strstr(err, "not available: /dev/tcp: t_open: ") != NULL);
                CHECK_EQ(out[0], '\0');
                continue;
            }
            if (!CHECK_EQ(st, 0))
                fprintf(stderr, "  netperf %s: %s", args, err);
            check_csv_mode(out, t[i].test, apis[a], t[i].size, 1, procs);
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
        check_csv_mode(out, tests[i], "xti", i ? "1" : "1024", 1, 0); /* -X: one process */
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
                                      "-l 0",     "-s -1",        "extra-arg", "--nosuch",
                                      "-Q",       "-t",           "-l -5",     "-- -Z",
                                      "-r 0,1",   "-M 0",         "-S x",
                                      "--api sock -X /dev/ticotsord",
                                      "--one-process -X /dev/ticotsord,/dev/ticlts",
                                      "-t UDP_RR -r 1,70000"};
    char out[2048], err[2048];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int st = netperf(bad[i], out, sizeof(out), err, sizeof(err));
        if (!CHECK_EQ(st, 2))
            fprintf(stderr, "  netperf %s: status %d\n", bad[i], st);
        CHECK(err[0] != '\0');
        CHECK_EQ(out[0], '\0');
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_length_and_test_options(void)
{
    char out[4096], err[2048];
    /* -l without -i: one iteration of -l seconds, not up to ten */
    double t0 = now_s();
    int st = netperf("-t UDP_RR --api sock -l 0.4 --warmup 0 --csv", out, sizeof(out), err,
                     sizeof(err));
    double dt = now_s() - t0;
    CHECK_EQ(st, 0);
    check_csv(out, "UDP_RR", "sock", "1", 1);
    CHECK(dt >= 0.4 && dt < 3.0);
    /* with -i MAX,MIN: MIN..MAX iterations of -l each */
    st = netperf("-t TCP_RR --api sock -l 0.05 -i 3,3 -I 99,0.001 --warmup 0 --csv", out,
                 sizeof(out), err, sizeof(err));
    CHECK_EQ(st, 0);
    check_csv(out, "TCP_RR", "sock", "1", 3);
    /* netperf's test options after "--": no delay, request/response sizes */
    static const char *const apis[] = {"sock", "xti"};
    for (int a = 0; a < 2; a++) {
        char args[256];
        snprintf(args, sizeof(args), "-t TCP_RR --api %s -l 0.1 --warmup 0 --csv -- -D -r 8,300",
                 apis[a]);
        st = netperf(args, out, sizeof(out), err, sizeof(err));
        if (a == 1 && st == 3)
            continue; /* no tcp provider: as test_runs */
        if (!CHECK_EQ(st, 0))
            fprintf(stderr, "  netperf %s: %s", args, err);
        check_csv(out, "TCP_RR", apis[a], "8", 1);
        snprintf(args, sizeof(args),
                 "-t TCP_STREAM --api %s -l 0.1 --warmup 0 --csv -- -m 3000 -M 100 -D", apis[a]);
        st = netperf(args, out, sizeof(out), err, sizeof(err));
        if (!CHECK_EQ(st, 0))
            fprintf(stderr, "  netperf %s: %s", args, err);
        check_csv(out, "TCP_STREAM", apis[a], "3000", 1);
    }
    /* the plain report names the mode and the system calls */
    st = netperf("-t UDP_RR --api sock -l 0.1 --warmup 0", out, sizeof(out), err, sizeof(err));
    CHECK_EQ(st, 0);
    CHECK(strstr(out, "client and server processes") != NULL);
    CHECK(strstr(out, "system calls per transaction") != NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);
    test_runs();
    test_iterations();
    test_xti_dev();
    test_bad_options();
    test_length_and_test_options();
    return CHECK_RESULT();
}
