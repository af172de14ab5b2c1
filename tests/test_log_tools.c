/* SPDX-License-Identifier: MIT */
/*
 * test_log_tools.c -- `ustreams strace` and `ustreams strerr` show what
 * another process logs (issue 22 item 6), in Solaris' format and options.
 *
 * References: strace(1M) and strerr(1M) (Solaris / illumos): strace without
 * arguments prints every trace message; arguments are "mid sid level"
 * triplets, "all" for any value; the line is
 *   <seq> <time> <ticks> <level> <flags> <mid> <sid> <text>
 * and strerr appends <seq> <time> <ticks> <flags> <mid> <sid> <text> to
 * error.mm-dd.  docs/ADMIN.md "strace and strerr" for the adaptations.
 * The tool is the `ustreams` command built beside this test, run as a
 * separate process; the messages come from a fork child (a third process)
 * logging with strlog().
 *   T.1 strace with no argument: every SL_TRACE message of the child, in
 *       order, numbered 0.., each line exactly in the format (flags F, N, E)
 *   T.2 strace with triples (numbers and all; several triples): exactly the
 *       selected messages; "all all all" is the same as no argument
 *   T.3 strerr -d DIR: the SL_ERROR messages in DIR/error.MM-DD in its
 *       format (flags F, N, T); without -d, in the runtime directory (where
 *       /var/adm/streams is not writable)
 *   T.4 --help of each says what it shows, for whom, and the line format
 *   T.5 bad arguments: a non-number mid, a level out of range, an odd count
 *       of words, an unknown option, an operand to strerr: the message, exit 1
 *   T.6 a link named strace (made by the user) runs the strace subcommand
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/strlog.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fork_util.h"
#include "log_util.h"
#include "rundir.h"
#include "tool_run.h"

struct msg {
    short mid, sid;
    char level;
    unsigned short flags;
    const char *text;
};

static const struct msg M[] = {
    {100, 1, 0, SL_TRACE, "alpha one"},
    {100, 2, 3, SL_TRACE | SL_ERROR, "beta %two"},
    {200, 1, 1, SL_TRACE | SL_FATAL, "gamma"},
    {200, 5, 7, SL_ERROR | SL_NOTIFY, "delta"},
    {300, 0, 2, SL_TRACE | SL_NOTIFY | SL_ERROR | SL_FATAL, "epsilon"},
    {100, 1, 5, SL_TRACE, "zeta"},
};
#define NM ((int)(sizeof(M) / sizeof(M[0])))

static char rundir[256];

static int child_logs(void *arg)
{
    (void)arg;
    /* strlog returns 0 for a message no logger takes (an error message
     * while only strace runs): not checked */
    for (int i = 0; i < NM; i++)
        (void)strlog(M[i].mid, M[i].sid, M[i].level, M[i].flags, "%s", M[i].text);
    return 0;
}

/* Wait (at most 10 s) for the tool's logger socket <rundir>/name, then a
 * little more: the driver takes the slot right after binding it. */
static int wait_logger(const char *name)
{
    char p[400];
    struct stat st;

    snprintf(p, sizeof(p), "%s/%s", rundir, name);
    for (int i = 0; i < 1000; i++) {
        if (lstat(p, &st) == 0 && S_ISSOCK(st.st_mode)) {
            usleep(200 * 1000);
            return 1;
        }
        usleep(10 * 1000);
    }
    return 0;
}

/* Start "ustreams ARGS" (stdout read back, stderr to /dev/null), wait for
 * its logger socket, let the child log, collect the output (the tool ends
 * by its -t).  Returns the output (malloc'ed) or NULL. */
static char *run_with_child(const char *args, const char *sock)
{
    char cmd[PATH_MAX + 256];
    static char buf[16384];
    size_t got = 0, k;

    snprintf(cmd, sizeof(cmd), "'%s/ustreams' %s 2>/dev/null", tool_dir, args);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (p == NULL)
        return NULL;
    CHECK(wait_logger(sock));
    pid_t pid = fk_start(child_logs, NULL);
    CHECK_EQ(fk_wait(pid, 10000), 0);
    while ((k = fread(buf + got, 1, sizeof(buf) - 1 - got, p)) > 0)
        got += k;
    buf[got] = '\0';
    CHECK_EQ(pclose(p), 0);
    return strdup(buf);
}

/* Is s "HH:MM:SS"? */
static int is_time(const char *s)
{
    regex_t re;
    int ok;
    CHECK_EQ(regcomp(&re, "^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]$", REG_EXTENDED | REG_NOSUB), 0);
    ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* The text M[i] logged (its format applied). */
static void text_of(int i, char *out, size_t n)
{
    snprintf(out, n, "%s", M[i].text);
}

/* Check that out holds exactly the lines of messages want[0..n) in order,
 * numbered from 0, in strace's (trace) or strerr's format. */
static void check_lines(const char *out, const int *want, int n, int trace)
{
    const char *p = out;
    for (int k = 0; k < n; k++) {
        const char *nl = strchr(p, '\n');
        char line[LOGMSGSZ + 128], when[32], expect[2 * LOGMSGSZ + 128], text[LOGMSGSZ];
        unsigned long ticks;
        CHECK(nl != NULL);
        if (nl == NULL) {
            printf("  missing line %d of %d; output:\n%s", k, n, out);
            return;
        }
        snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
        p = nl + 1;
        /* time and ticks vary: read them, then rebuild the whole line */
        CHECK_EQ(sscanf(line, "%*d %31s %lx", when, &ticks), 2);
        CHECK(is_time(when));
        CHECK_EQ(strlen(strchr(strchr(line, ' ') + 1, ' ') + 1) > 9, 1);
        CHECK_EQ(strchr(strchr(line, ' ') + 1, ' ')[9], ' '); /* 8 hex digits */
        const struct msg *m = &M[want[k]];
        char fl[4] = {(m->flags & SL_FATAL) ? 'F' : '.', (m->flags & SL_NOTIFY) ? 'N' : '.',
                      trace ? ((m->flags & SL_ERROR) ? 'E' : '.')
                            : ((m->flags & SL_TRACE) ? 'T' : '.'),
                      '\0'};
        text_of(want[k], text, sizeof(text));
        if (trace)
            snprintf(expect, sizeof(expect), "%06d %s %08lx %2d %s %d %d %s", k, when, ticks,
                     m->level, fl, m->mid, m->sid, text);
        else
            snprintf(expect, sizeof(expect), "%06d %s %08lx %s %d %d %s", k, when, ticks, fl,
                     m->mid, m->sid, text);
        if (strcmp(line, expect) != 0)
            printf("  got    '%s'\n  wanted '%s'\n", line, expect);
        CHECK(strcmp(line, expect) == 0);
    }
    if (*p != '\0')
        printf("  extra output: '%s'\n", p);
    CHECK(*p == '\0');
}

/* T.1, T.2 */
static void test_strace(void)
{
    static const int all[] = {0, 1, 2, 4, 5};
    static const int tri[] = {0, 1, 2};    /* 100 all 3 + 200 1 1 */
    static const int sid1[] = {0, 2, 5};   /* all 1 all */
    static const int lvl[] = {0, 2, 4};    /* all all 2 */
    char *out;

    out = run_with_child("strace -t 2", "log-trace");
    check_lines(out, all, 5, 1);
    printf("T.1: strace with no argument:\n%s", out);
    free(out);
    out = run_with_child("strace -t 2 100 all 3 200 1 1", "log-trace");
    check_lines(out, tri, 3, 1);
    free(out);
    out = run_with_child("strace -t 2 all all all", "log-trace");
    check_lines(out, all, 5, 1);
    free(out);
    out = run_with_child("strace -t 2 all 1 all", "log-trace");
    check_lines(out, sid1, 3, 1);
    free(out);
    out = run_with_child("strace -t 2 all all 2", "log-trace");
    check_lines(out, lvl, 3, 1);
    free(out);
    printf("T.2: triples select exactly\n");
}

/* The contents of dir/error.MM-DD of today (malloc'ed), or NULL. */
static char *read_errfile(const char *dir)
{
    char path[400];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    snprintf(path, sizeof(path), "%s/error.%02d-%02d", dir, tm.tm_mon + 1, tm.tm_mday);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        printf("  %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = calloc(1, 16384);
    size_t n = fread(buf, 1, 16383, f);
    buf[n] = '\0';
    fclose(f);
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    unlink(path);
    return buf;
}

/* T.3 */
static void test_strerr(void)
{
    static const int errs[] = {1, 3, 4};
    char dir[] = "/tmp/ust_strerrXXXXXX", args[128];

    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof(args), "strerr -t 2 -d %s", dir);
    char *out = run_with_child(args, "log-error");
    CHECK_EQ(out[0], '\0'); /* nothing on stdout */
    free(out);
    char *file = read_errfile(dir);
    CHECK(file != NULL);
    if (file) {
        check_lines(file, errs, 3, 0);
        printf("T.3: strerr -d wrote:\n%s", file);
    }
    free(file);
    rmdir(dir);

    struct stat st;
    if (stat("/var/adm/streams", &st) == 0) {
        printf("T.3: /var/adm/streams exists: the default directory is not checked\n");
        return;
    }
    out = run_with_child("strerr -t 2", "log-error");
    free(out);
    file = read_errfile(rundir);
    CHECK(file != NULL);
    if (file)
        check_lines(file, errs, 3, 0);
    free(file);
    printf("T.3: strerr without -d wrote to %s\n", rundir);
}

static int has(const char *out, const char *want)
{
    int ok = out != NULL && strstr(out, want) != NULL;
    if (!ok)
        printf("  '%s' not in:\n%s\n", want, out ? out : "(null)");
    return ok;
}

/* T.4 */
static void test_help(void)
{
    int st;
    char *out = tool_run("strace", "--help", &st);
    CHECK_EQ(st, 0);
    CHECK(has(out, "every ustreams\nprocess of this user"));
    CHECK(has(out, "runtime directory"));
    CHECK(has(out, "mid sid level"));
    CHECK(has(out, "'all' for any value"));
    CHECK(has(out, "No triple: every trace message ('all all all')"));
    CHECK(has(out, "SEQ HH:MM:SS TICKS LEVEL FNE MID SID TEXT"));
    free(out);
    out = tool_run("strerr", "--help", &st);
    CHECK_EQ(st, 0);
    CHECK(has(out, "every ustreams process of this user"));
    CHECK(has(out, "DIR/error.MM-DD"));
    CHECK(has(out, "/var/adm/streams"));
    CHECK(has(out, "No mail is sent"));
    CHECK(has(out, "SEQ HH:MM:SS TICKS FNT MID SID TEXT"));
    free(out);
    out = tool_run("help", "strace", &st);
    CHECK_EQ(st, 0);
    CHECK(has(out, "usage: ustreams strace"));
    free(out);
    printf("T.4: --help explains\n");
}

/* T.5 */
static void test_bad_args(void)
{
    static const struct {
        const char *tool, *args, *msg;
    } cases[] = {
        {"strace", "x 1 1", "strace: bad mid 'x': a number from 0 to 32767, or all"},
        {"strace", "1 y 1", "strace: bad sid 'y': a number from 0 to 32767, or all"},
        {"strace", "1 1 256", "strace: bad level '256': a number from 0 to 255, or all"},
        {"strace", "1 1 -3", "strace: unknown option '-3'"},
        {"strace", "1 2", "strace: the arguments come in triplets 'mid sid level': 2 words given"},
        {"strace", "1 2 3 4", "triplets 'mid sid level': 4 words given"},
        {"strace", "-q", "strace: unknown option '-q'"},
        {"strace", "-n 0", "strace: bad count '0' for -n"},
        {"strace", "-n", "strace: -n needs an argument"},
        {"strerr", "extra", "strerr: takes no operand, got 'extra'"},
        {"strerr", "-d", "strerr: missing directory after '-d'"},
        {"strerr", "-t -1", "strerr: bad time '-1' for -t"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int st;
        char *out = tool_run(cases[i].tool, cases[i].args, &st);
        CHECK_EQ(st, 1);
        CHECK(has(out, cases[i].msg));
        free(out);
    }
    printf("T.5: %zu bad command lines refused with exit 1\n", sizeof(cases) / sizeof(cases[0]));
}

/* T.6 */
static void test_link(void)
{
    char dir[] = "/tmp/ust_stlinkXXXXXX", link[128], target[PATH_MAX + 16], cmd[PATH_MAX];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(link, sizeof(link), "%s/strace", dir);
    snprintf(target, sizeof(target), "%s/ustreams", tool_dir);
    CHECK_EQ(symlink(target, link), 0);
    snprintf(cmd, sizeof(cmd), "'%s' --help", link);
    FILE *p = popen(cmd, "r");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    CHECK_EQ(pclose(p), 0);
    CHECK(has(buf, "usage: ustreams strace"));
    snprintf(cmd, sizeof(cmd), "'%s' x 1 1 2>&1", link);
    p = popen(cmd, "r");
    n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    CHECK_EQ(WEXITSTATUS(pclose(p)), 1);
    CHECK(has(buf, "bad mid 'x'"));
    unlink(link);
    rmdir(dir);
    printf("T.6: a link named strace runs it\n");
}

int main(int argc, char **argv)
{
    (void)argc;
    log_private_rundir(); /* this test's loggers meet no other test's */
    tool_run_init(argv[0]);
    CHECK_EQ(ust_rundir(rundir, sizeof(rundir)), 0);
    test_help();
    test_bad_args();
    test_link();
    test_strace();
    test_strerr();
    return CHECK_RESULT();
}
