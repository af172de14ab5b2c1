/* SPDX-License-Identifier: MIT */
/*
 * test_autopush_tool.c -- `ustreams autopush` (tools/autopush.c), run as a
 * program on configuration files; its output and exit status are checked.
 *
 * Reference: autopush(1M).  Cases:
 *   A.1  -f with the classic file format (driver names and numbers, minor -1
 *        for all, lastminor 0 for one, ranges, comments, blank lines), then
 *        -g shows each entry; -r removes one; -a lists the table
 *   A.2  a file with bad lines: each reported as file:line with its reason
 *        (unknown driver, unknown module, ERANGE, EEXIST, too few fields),
 *        the good lines still applied, exit status 1
 *   A.3  -g of an unconfigured device: message, status 1; a missing file;
 *        usage errors: status 2
 *   A.4  the table is the user's: a later run sees what an earlier one
 *        configured (tests/test_sad_user.c for other programs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "log_util.h"
#include "rundir.h"
#include "strcore.h"

static char tool[4096 + 16];
static char dir[] = "/tmp/ust_aptoolXXXXXX";

/* Run the tool with args (stderr merged); output into out, returns the exit
 * status or -1. */
static int run(const char *args, char *out, size_t size)
{
    char cmd[8192];
    size_t got = 0, n;
    FILE *p;
    int st;

    snprintf(cmd, sizeof(cmd), "'%s' autopush %s 2>&1", tool, args);
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    while (got + 1 < size && (n = fread(out + got, 1, size - 1 - got, p)) > 0)
        got += n;
    out[got] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static major_t major_of(const char *driver)
{
    struct ust_modent *e = ust_reg_find_noload(driver, UST_DRIVER);
    major_t m = e != NULL ? e->major : 0;

    if (e != NULL)
        ust_reg_rele(e);
    return m;
}

static void test_good_file(void)
{
    char path[256], text[512], args[1024], out[8192], line[256];
    major_t echo = major_of("echo"), nuls = major_of("nuls");

    snprintf(path, sizeof(path), "%s/good.ap", dir);
    snprintf(text, sizeof(text),
             "# autopush configuration\n"
             "\n"
             "echo 0 0 nullmod srvmod   # one minor\n"
             "%u 2 5 nullmod\n"
             "nuls -1 0 srvmod\n",
             echo);
    write_file(path, text);
    snprintf(args, sizeof(args),
             "-f %s -g -M echo -m 0 -g -M %u -m 3 -g -M nuls -m 99 -r -M echo -m 0 -a", path, echo);
    CHECK_EQ(run(args, out, sizeof(out)), 0);

    snprintf(line, sizeof(line), "%10u %10s %10s %-8s  nullmod srvmod\n", echo, "0", "-", "echo");
    CHECK(strstr(out, line) != NULL);
    snprintf(line, sizeof(line), "%10u %10s %10s %-8s  nullmod\n", echo, "2", "5", "echo");
    CHECK(strstr(out, line) != NULL);
    snprintf(line, sizeof(line), "%10u %10s %10s %-8s  srvmod\n", nuls, "ALL", "-", "nuls");
    CHECK(strstr(out, line) != NULL);
    CHECK(strstr(out, "     Major      Minor  Lastminor Driver    Modules\n") != NULL);

    /* -a after -r: the range and the ALL entry are left, echo 0 is gone */
    const char *all = strrchr(out, 'M'); /* the last header */
    CHECK(all != NULL);
    if (all != NULL) {
        snprintf(line, sizeof(line), "%10u %10s %10s %-8s  nullmod srvmod\n", echo, "0", "-",
                 "echo");
        CHECK(strstr(all, line) == NULL);
        snprintf(line, sizeof(line), "%10u %10s %10s %-8s  nullmod\n", echo, "2", "5", "echo");
        CHECK(strstr(all, line) != NULL);
    }
    if (strstr(out, "nullmod srvmod") == NULL)
        fprintf(stderr, "tool output:\n%s", out);
}

static void test_bad_file(void)
{
    char path[256], args[512], out[8192], want[512];

    snprintf(path, sizeof(path), "%s/bad.ap", dir);
    write_file(path, "nosuchdrv 0 0 nullmod\n"      /* 1: unknown driver */
                     "echo 0 0 nosuchmd\n"          /* 2: not a module */
                     "echo 5 5 nullmod\n"           /* 3: range with last <= first */
                     "echo 1 0 nullmod\n"           /* 4: good */
                     "echo 1 0 srvmod\n"            /* 5: configured already */
                     "echo 1\n"                     /* 6: too few fields */
                     "echo 7 0 a b c d e f g h i\n" /* 7: more than MAXAPUSH */
                     "echo x 0 nullmod\n");         /* 8: bad minor */
    snprintf(args, sizeof(args), "-f %s -g -M echo -m 1", path);
    CHECK_EQ(run(args, out, sizeof(out)), 1);
    const char *why[] = {"unknown driver",
                         "module 'nosuchmd': no such STREAMS module (ustreams scls lists them)",
                         "Numerical result out of range",
                         NULL,
                         "File exists",
                         "expected: major minor lastminor module...",
                         "too many modules",
                         "bad minor or lastminor"};
    for (int i = 0; i < 8; i++) {
        if (why[i] == NULL)
            continue;
        snprintf(want, sizeof(want), "autopush: %s:%d: %s\n", path, i + 1, why[i]);
        CHECK(strstr(out, want) != NULL);
    }
    CHECK(strstr(out, ":4:") == NULL);
    CHECK(strstr(out, "  nullmod\n") != NULL); /* line 4 was applied */
}

static void test_errors(void)
{
    char args[512], out[4096], rd[256], table[300];

    /* The table is the user's: what the runs above configured is still
     * there for this run (A.4); then the file goes and the table is empty. */
    CHECK_EQ(run("-g -M echo -m 3", out, sizeof(out)), 0);
    CHECK(strstr(out, "         2          5 echo      nullmod\n") != NULL);
    CHECK_EQ(ust_rundir(rd, sizeof(rd)), 0);
    snprintf(table, sizeof(table), "%s/autopush", rd);
    CHECK_EQ(unlink(table), 0);
    CHECK_EQ(run("-g -M echo -m 3", out, sizeof(out)), 1);
    CHECK(strstr(out, "autopush: major echo minor 3: no autopush configuration\n") != NULL);
    CHECK_EQ(run("-r -M echo -m 3", out, sizeof(out)), 1);
    CHECK_EQ(run("-g -M nosuchdrv -m 0", out, sizeof(out)), 1);
    CHECK(strstr(out, "bad major or minor") != NULL);
    snprintf(args, sizeof(args), "-f %s/missing.ap", dir);
    CHECK_EQ(run(args, out, sizeof(out)), 1);
    CHECK(strstr(out, "No such file or directory") != NULL);
    CHECK_EQ(run("", out, sizeof(out)), 2);
    CHECK(strstr(out, "usage:") != NULL);
    CHECK_EQ(run("-g -M echo", out, sizeof(out)), 2);
    CHECK_EQ(run("-x", out, sizeof(out)), 2);
    CHECK_EQ(run("-f", out, sizeof(out)), 2);
}

int main(void)
{
    log_private_rundir(); /* the autopush table is the user's: this test's own */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;

    CHECK(n > 0);
    if (n <= 0)
        return CHECK_RESULT();
    self[n] = '\0';
    slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(tool, sizeof(tool), "%s/ustreams", self);
    CHECK(access(tool, X_OK) == 0);
    CHECK(mkdtemp(dir) != NULL);

    test_good_file();
    test_bad_file();
    test_errors();

    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    return CHECK_RESULT();
}
