/* SPDX-License-Identifier: MIT */
/*
 * test_tools_msgs.c -- the tools' messages and defaults (issue 25 item 5),
 * each run as a separate program (the build's `ustreams`), in a runtime
 * directory of its own, with a deadline (alarm: a hung tool fails the test).
 *   T.1 --version: "ustreams X.Y.Z" (USTREAMS_VERSION of <ustreams.h>), exit 0
 *   T.2 scls -l: the columns stay aligned on the longest name (ticotsord):
 *       every row's KIND starts under the header's KIND; the FIFO devices
 *       (fifo, sfx, pipe) are listed as drivers
 *   T.3 perftest: each bad argument is refused (exit 2) by a line naming it
 *       (-s 0, -s too big, -i 0, -i past an int, -t 0, -p past the push
 *       limit, a stray operand), never the bare synopsis
 *   T.4 an unknown module name is named, not "Invalid argument":
 *       perftest -m, strinfo -p, autopush -f
 *   T.5 netperf -l SECONDS is netperf's test length: with the default of
 *       one iteration, -l 1 takes about a second (not 10 x 1 s); a bad -l
 *       is named
 *   T.6 strinfo with no operand makes no stream of its own: it shows the
 *       streams of every published process (none here: a line on stderr
 *       says so, exit 0, nothing on stdout); setup options without a DEVICE
 *       are a usage error saying why
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "tool_run.h"

static char rundir[] = "/tmp/ust_toolmsgXXXXXX";

/* out and err of `ustreams tool args`; the exit status. */
static char out[1 << 16], err[1 << 14];
static int run(const char *tool, const char *args)
{
    return tool_run_split(tool, args, out, sizeof(out), err, sizeof(err));
}

static void t1_version(void)
{
    char want[64];
    snprintf(want, sizeof(want), "ustreams %s\n", USTREAMS_VERSION);
    CHECK_EQ(run("", "--version"), 0);
    CHECK(strcmp(out, want) == 0);
    CHECK_EQ(run("", "-V"), 0);
    CHECK(strcmp(out, want) == 0);
    CHECK(USTREAMS_VERSION_NUMBER ==
          USTREAMS_VERSION_MAJOR * 10000 + USTREAMS_VERSION_MINOR * 100 + USTREAMS_VERSION_PATCH);
}

/* The column where word starts in line, or -1. */
static int column(const char *line, const char *word)
{
    const char *p = strstr(line, word);
    return p ? (int)(p - line) : -1;
}

static void t2_scls(void)
{
    CHECK_EQ(run("scls", "-l"), 0);
    char head[256], line[256];
    CHECK(find_line(out, "NAME", head, sizeof(head)));
    int kind = column(head, "KIND"), id = column(head, "  ID");
    CHECK(kind > (int)strlen("ticotsord"));
    int rows = 0;
    for (const char *p = strchr(out, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        const char *e = strchr(p + 1, '\n');
        snprintf(line, sizeof(line), "%.*s", (int)(e ? e - p - 1 : (long)strlen(p + 1)), p + 1);
        /* KIND is "driver" or "module", starting under the header's KIND */
        CHECK(strncmp(line + kind, "driver", 6) == 0 || strncmp(line + kind, "module", 6) == 0);
        CHECK(line[kind - 1] == ' ');
        CHECK(line[id + 4] == ' '); /* ID right-aligned under "  ID" */
        rows++;
    }
    CHECK(rows >= 20);
    CHECK(find_line(out, "ticotsord driver", line, sizeof(line)));
    /* the FIFO devices of /dev/streams/fifo, sfx/<N> and pipe, by name */
    CHECK_EQ(run("scls", "fifo sfx pipe"), 0);
    CHECK(strcmp(out, "fifo\nsfx\npipe\n") == 0);
    CHECK_EQ(run("scls", "-l fifo"), 0);
    CHECK(find_line(out, "fifo ", line, sizeof(line)) && strstr(line, "driver") != NULL);
}

static void t3_perftest_args(void)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"-s 0", "perftest: -s 0: the size must be 1 to "},
        {"-s 99999999999", "perftest: -s 99999999999: the size must be 1 to "},
        {"-s 12q", "perftest: bad size '12q'"},
        {"-i 0", "perftest: -i 0: at least one iteration"},
        {"-i 99999999999", "perftest: bad iterations '99999999999'"},
        {"-t 0", "perftest: -t 0: the test time must be more than 0 seconds"},
        {"-p 1000", "perftest: bad push count '1000'"},
        {"-b 99", "perftest: unexpected argument '99'"},
        {"--peer nope", "perftest: unknown --peer 'nope'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char args[128];
        snprintf(args, sizeof(args), "-q -t 0.05 %s", cases[i].args);
        int st = run("perftest", args);
        CHECK_EQ(st, 2);
        if (strstr(err, cases[i].want) == NULL) {
            fprintf(stderr, "perftest %s: stderr: %s\n", cases[i].args, err);
            CHECK(0);
        }
        CHECK(strncmp(err, "usage:", 6) != 0); /* the reason comes first */
        CHECK(out[0] == '\0');
    }
}

static void t4_unknown_module(void)
{
    CHECK_EQ(run("perftest", "-q -t 0.05 -p 1 -m nosuchmod"), 2);
    CHECK(strstr(err, "'nosuchmod': no such STREAMS module") != NULL);
    CHECK(strstr(err, "Invalid argument") == NULL);
    CHECK_EQ(run("perftest", "-q -t 0.05 --procs -p 1 -m nosuchmod"), 2);
    CHECK(strstr(err, "'nosuchmod': no such STREAMS module") != NULL);

    CHECK_EQ(run("strinfo", "-p nullmod -p nosuchmod /dev/streams/echo"), 1);
    CHECK(strstr(err, "I_PUSH nosuchmod: no such STREAMS module") != NULL);
    CHECK(strstr(err, "Invalid argument") == NULL);

    char conf[PATH_MAX + 32], args[PATH_MAX + 64];
    snprintf(conf, sizeof(conf), "%s/ap.conf", rundir);
    FILE *f = fopen(conf, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("# a good line, then one with an unknown module\necho 0 0 nullmod\n"
          "nuls 0 0 nullmod bogusmod\n",
          f);
    fclose(f);
    snprintf(args, sizeof(args), "-f %s -a", conf);
    CHECK_EQ(run("autopush", args), 1);
    CHECK(strstr(err, "ap.conf:3: module 'bogusmod': no such STREAMS module") != NULL);
    CHECK(strstr(err, "Invalid argument") == NULL);
    CHECK(strstr(out, "echo") != NULL && strstr(out, "nullmod") != NULL); /* line 2 applied */
    snprintf(args, sizeof(args), "-r -M echo -m 0");
    CHECK_EQ(run("autopush", args), 0);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void t5_netperf_length(void)
{
    double t0 = now();
    int st = run("netperf", "--api sock -t UDP_RR -l 1 --warmup 0");
    double dt = now() - t0;
    CHECK_EQ(st, 0);
    /* one iteration of 1 s (plus start-up), not 10 x 1 s */
    if (!(dt >= 0.9 && dt < 6)) {
        fprintf(stderr, "netperf -l 1 took %.2f s\n%s%s", dt, out, err);
        CHECK(0);
    }
    CHECK_EQ(run("netperf", "-l 0"), 2);
    CHECK(strstr(err, "netperf: bad test length") != NULL && strstr(err, "'0'") != NULL);
    CHECK_EQ(run("netperf", "-i 0"), 2);
    CHECK(strstr(err, "netperf: bad iterations") != NULL);
    CHECK_EQ(run("netperf", "--help"), 0);
    CHECK(strstr(out, "-l SECONDS the length of the test") != NULL);
}

static void t6_strinfo_default(void)
{
    CHECK_EQ(run("strinfo", ""), 0);
    CHECK(out[0] == '\0');
    CHECK(strstr(err, "strinfo: no ustreams process of this user has published") != NULL);
    CHECK_EQ(run("strinfo", "-s"), 0);
    CHECK(out[0] == '\0');
    CHECK_EQ(run("strinfo", "-w 3"), 2);
    CHECK(strstr(err, "-p, -w and -b set up a sample stream: name a DEVICE or --pipe") != NULL);
    CHECK_EQ(run("strinfo", "-P /dev/streams/echo"), 2);
    CHECK(strstr(err, "-P shows the streams that exist") != NULL);
    /* the sample form still works when asked for */
    CHECK_EQ(run("strinfo", "/dev/streams/echo"), 0);
    CHECK(strstr(out, "stream fd=") != NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    alarm(150); /* the deadline: ctest's is 180 s */
    tool_run_init(argv[0]);
    CHECK(mkdtemp(rundir) != NULL);
    chmod(rundir, 0700);
    setenv("XDG_RUNTIME_DIR", rundir, 1); /* no other process published here */
    t1_version();
    t2_scls();
    t3_perftest_args();
    t4_unknown_module();
    t5_netperf_length();
    t6_strinfo_default();
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rundir);
    CHECK(system(cmd) == 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
