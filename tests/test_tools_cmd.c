/* SPDX-License-Identifier: MIT */
/*
 * test_tools_cmd.c -- the `ustreams` command (tools/ustreams.c): one program
 * with the tools as subcommands, so that installing does not hide system
 * commands such as strace(1).
 *   1. no subcommand, or an unknown one: the usage on stderr, exit 2
 *   2. `ustreams help` / `--help`: every subcommand listed, exit 0;
 *      `ustreams help NAME` and `ustreams NAME --help`: NAME's synopsis
 *   3. each subcommand runs (a real invocation with its expected output)
 *   4. fattach/fdetach: say they cannot work as commands (names are per
 *      process), exit 1, and do nothing
 *   5. invoked through a link named after a subcommand (as installed for
 *      scls, strerr, strinfo), it runs that subcommand
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tool_run.h"

static const char *const subs[] = {"autopush", "fattach", "fdetach", "netperf", "perftest",
                                   "scls",     "strace",  "strerr",  "strinfo"};

/* The output of command, or NULL; *st its exit status. */
static char *run_cmd(const char *command, int *st)
{
    char *buf = malloc(8192);
    FILE *p = popen(command, "r");
    size_t n = 0;

    if (p && buf)
        n = fread(buf, 1, 8191, p);
    if (buf)
        buf[n] = '\0';
    int s = p ? pclose(p) : -1;
    *st = s != -1 && WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    return buf;
}

/* Run "ustreams ARGS" with stdout and stderr apart: 1 if `stream` (1 or 2)
 * got text containing want and the other stream nothing; *st the exit
 * status. */
static int run_split(const char *args, int stream, const char *want, int *st)
{
    char cmd[PATH_MAX + 256];
    int st2;

    snprintf(cmd, sizeof(cmd), "'%s/ustreams' %s %s", tool_dir, args,
             stream == 1 ? "2>/dev/null" : "2>&1 >/dev/null");
    char *out = run_cmd(cmd, st);
    int ok = out && strstr(out, want) != NULL;
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s/ustreams' %s %s", tool_dir, args,
             stream == 1 ? "2>&1 >/dev/null" : "2>/dev/null");
    out = run_cmd(cmd, &st2);
    ok = ok && out && out[0] == '\0';
    free(out);
    return ok;
}

static void test_usage_errors(void)
{
    int st;
    CHECK(run_split("", 2, "usage: ustreams SUBCOMMAND", &st));
    CHECK_EQ(st, 2);
    CHECK(run_split("nosuch", 2, "unknown subcommand 'nosuch'", &st));
    CHECK_EQ(st, 2);
    CHECK(run_split("help nosuch", 2, "unknown subcommand 'nosuch'", &st));
    CHECK_EQ(st, 2);
}

static void test_help(void)
{
    int st;
    char *out = tool_run("help", "", &st);
    CHECK_EQ(st, 0);
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char want[32];
        snprintf(want, sizeof(want), "\n  %s ", subs[i]);
        CHECK(out && strstr(out, want) != NULL);
    }
    free(out);
    CHECK(run_split("--help", 1, "subcommands:", &st));
    CHECK_EQ(st, 0);
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char args[64], want[64];
        snprintf(args, sizeof(args), "%s --help", subs[i]);
        snprintf(want, sizeof(want), "usage: ustreams %s", subs[i]);
        CHECK(run_split(args, 1, want, &st));
        CHECK_EQ(st, 0);
        snprintf(args, sizeof(args), "help %s", subs[i]);
        CHECK(run_split(args, 1, want, &st));
        CHECK_EQ(st, 0);
    }
}

static void test_run(void)
{
    static const struct {
        const char *tool, *args;
        int status;
        const char *want;
    } runs[] = {
        {"scls", "", 0, "echo"},
        {"strace", "--demo -n 1", 0, NULL},
        {"strerr", "--demo -n 1", 0, NULL},
        {"autopush", "-a", 0, NULL},
        {"strinfo", "/dev/streams/echo", 0, "echo"},
        {"perftest", "-q --csv -t 0.05 -i 1 -r", 0, NULL},
        {"scls", "-x", 2, NULL},
    };
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
        CHECK(tool_expect(runs[i].tool, runs[i].args, runs[i].status, runs[i].want));
}

static void test_fattach(void)
{
    int st;
    CHECK(run_split("fattach /dev/streams/echo /tmp/x", 2, "nothing done", &st));
    CHECK_EQ(st, 1);
    CHECK(run_split("fdetach /nonexistent/ust-x", 2, "No such file", &st));
    CHECK_EQ(st, 1);
    CHECK(run_split("fdetach /", 2, "no STREAMS name attached", &st));
    CHECK_EQ(st, 1);
    CHECK(run_split("fdetach", 2, "usage: ustreams fdetach PATH", &st));
    CHECK_EQ(st, 2);
}

static void test_link(void)
{
    char dir[] = "/tmp/ust_toolsXXXXXX", link[PATH_MAX], target[PATH_MAX + 16], cmd[2 * PATH_MAX];
    int st;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(link, sizeof(link), "%s/scls", dir);
    snprintf(target, sizeof(target), "%s/ustreams", tool_dir);
    CHECK_EQ(symlink(target, link), 0);
    snprintf(cmd, sizeof(cmd), "'%s' -l echo 2>&1", link);
    char *out = run_cmd(cmd, &st);
    CHECK_EQ(st, 0);
    CHECK(out && strstr(out, "echo") != NULL && strstr(out, "usage") == NULL);
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s' --help", link);
    out = run_cmd(cmd, &st);
    CHECK_EQ(st, 0);
    CHECK(out && strstr(out, "usage: ustreams scls") != NULL);
    free(out);
    unlink(link);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);
    test_usage_errors();
    test_help();
    test_run();
    test_fattach();
    test_link();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
