/* SPDX-License-Identifier: MIT */
/*
 * test_scls.c -- the registry's live view: ustreams_modinfo,
 * ustreams_print_modules (src/admin/strstat.c) and the scls tool
 * (tools/scls.c), run as a separate program.
 *
 * Reference: scls(8) (Linux Fast-STREAMS): list drivers and modules; -l long
 * listing with ids and water marks; -c counts; -r registration details.
 * Cases:
 *   M.1  ustreams_modinfo: errors (EINVAL); the count alone; the built-ins
 *        with their module_info values, kind, MT flags, major
 *   M.2  ustreams_modinfo counters: an open stream with a module pushed and
 *        messages written counts one open, the pair's queues and their put
 *        and service calls; after the close, one close and no queue
 *   M.3  ustreams_print_modules: the names alone, the -l/-c/-r columns, a
 *        name filter in the given order (unknown names skipped), errors
 *   S.1  scls: names; -l echo nullmod shows their ids and water marks; -r
 *        the drivers' majors; -a every column; an unknown name is reported
 *        (exit 1); a bad option is a usage error (exit 2)
 *   S.2  the table after work done in the same process (strinfo -s): the
 *        opens and put counts are not zero
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stropts.h>
#include <ustreams.h>
#include <ustreams_exec.h>
#include <sys/strconf.h>

#include "check.h"
#include "tool_run.h"

static int find_info(const struct ustreams_modinfo *v, int n, const char *name, int kind)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0 && v[i].kind == kind)
            return i;
    return -1;
}

/* M.1 */
static void test_modinfo_basic(void)
{
    struct ustreams_modinfo v[64];
    errno = 0;
    CHECK_EQ(ustreams_modinfo(v, -1), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ustreams_modinfo(NULL, 3), -1);
    CHECK_EQ(errno, EINVAL);
    int total = ustreams_modinfo(NULL, 0);
    CHECK(total >= 4);
    CHECK_EQ(ustreams_modinfo(v, 1), total); /* the total, one copied */
    int n = ustreams_modinfo(v, 64);
    CHECK_EQ(n, total);
    if (n > 64)
        n = 64;

    int e = find_info(v, n, "echo", USTREAMS_DRIVER);
    CHECK(e >= 0);
    if (e >= 0) {
        CHECK_EQ(v[e].idnum, 5003);
        CHECK_EQ(v[e].hiwat, 5120);
        CHECK_EQ(v[e].lowat, 1024);
        CHECK_EQ(v[e].minpsz, 0);
        CHECK_EQ(v[e].maxpsz, INFPSZ);
        CHECK_EQ(v[e].flag & D_MP, D_MP);
        CHECK(v[e].major > 0);
        CHECK_EQ(v[e].dynamic, 0);
    }
    int m = find_info(v, n, "nullmod", USTREAMS_MODULE);
    CHECK(m >= 0);
    if (m >= 0) {
        CHECK_EQ(v[m].idnum, 5001);
        CHECK_EQ(v[m].major, -1);
        CHECK_EQ(v[m].hiwat, 5120);
        CHECK_EQ(v[m].nqueues, 0); /* nothing open */
    }
    CHECK(find_info(v, n, "srvmod", USTREAMS_MODULE) >= 0);
    CHECK(find_info(v, n, "nuls", USTREAMS_DRIVER) >= 0);
}

/* M.2 */
static void test_modinfo_counts(void)
{
    struct ustreams_modinfo a[64], b[64], c[64];
    int na = ustreams_modinfo(a, 64);
    int fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(strm_write(fd, "hello", 5), 5);
    CHECK_EQ(ustreams_quiesce(2000), 0);
    int nb = ustreams_modinfo(b, 64);
    CHECK_EQ(na, nb);
    int m = find_info(b, nb, "nullmod", USTREAMS_MODULE);
    int e = find_info(b, nb, "echo", USTREAMS_DRIVER);
    CHECK(m >= 0 && e >= 0);
    if (m >= 0 && e >= 0) {
        CHECK_EQ(b[m].nopen - a[m].nopen, 1);
        CHECK_EQ(b[m].nqueues, 2);
        CHECK_EQ(b[m].nput, 6); /* three down its write queue, three echoed up */
        CHECK_EQ(b[m].nsrv, 0);
        CHECK(b[m].refs >= 1);
        CHECK_EQ(b[e].nopen - a[e].nopen, 1);
        CHECK_EQ(b[e].nqueues, 2);
        CHECK_EQ(b[e].nput, 3);
        CHECK(b[e].nsrv >= 1); /* echo replies from its service procedure */
    }
    char buf[32];
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 15); /* byte-stream mode: all three */
    CHECK_EQ(strm_close(fd), 0);
    int nc = ustreams_modinfo(c, 64);
    CHECK_EQ(nc, na);
    if (m >= 0 && e >= 0) {
        CHECK_EQ(c[m].nclose - a[m].nclose, 1);
        CHECK_EQ(c[e].nclose - a[e].nclose, 1);
        CHECK_EQ(c[m].nqueues, 0);
        CHECK_EQ(c[m].nput, 0); /* the counts went with the queues */
        CHECK_EQ(c[m].refs, 0);
    }
}

/* Print into a string. */
static char *print_str(int flags, const char *const *names, int nnames, int *ret)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    *ret = ustreams_print_modules(f, flags, names, nnames);
    int e = errno; /* fclose may change it */
    fclose(f);
    errno = e;
    return s;
}

/* M.3 */
static void test_print_modules(void)
{
    int r, total = ustreams_modinfo(NULL, 0);
    char line[512];

    char *s = print_str(0, NULL, 0, &r);
    CHECK(s != NULL);
    CHECK_EQ(r, total);
    CHECK(s && find_line(s, "echo", line, sizeof(line)) && strcmp(line, "echo") == 0);
    CHECK(s && find_line(s, "nullmod", line, sizeof(line)) && strcmp(line, "nullmod") == 0);
    free(s);

    const char *names[] = {"nullmod", "bogus", "echo"};
    s = print_str(USTREAMS_LS_LONG, names, 3, &r);
    CHECK_EQ(r, 2);
    if (s) {
        CHECK(strncmp(s, "NAME", 4) == 0);
        const char *nl = strchr(s, '\n');
        CHECK(nl && strncmp(nl + 1, "nullmod", 7) == 0); /* the order asked */
        char name[16], kind[16], maxpsz[16], fl[64];
        int id, minpsz, hi, lo;
        CHECK(find_line(s, "echo ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %d %d %15s %d %d %63s", name, kind, &id, &minpsz, maxpsz,
                        &hi, &lo, fl),
                 8);
        CHECK(strcmp(kind, "driver") == 0);
        CHECK_EQ(id, 5003);
        CHECK(strcmp(maxpsz, "INF") == 0);
        CHECK_EQ(hi, 5120);
        CHECK_EQ(lo, 1024);
        CHECK(strcmp(fl, "D_MP") == 0);
        CHECK(strstr(s, "bogus") == NULL);
    }
    free(s);

    s = print_str(USTREAMS_LS_COUNTS | USTREAMS_LS_REG, names + 2, 1, &r);
    CHECK_EQ(r, 1);
    if (s) {
        CHECK(strstr(s, "OPENS") && strstr(s, "PUTS") && strstr(s, "MAJOR") && strstr(s, "LINKAGE"));
        CHECK(find_line(s, "echo ", line, sizeof(line)));
        CHECK(strstr(line, " static ") != NULL);
    }
    free(s);

    errno = 0;
    CHECK_EQ(ustreams_print_modules(NULL, 0, NULL, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ustreams_print_modules(stdout, 0x100, NULL, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ustreams_print_modules(stdout, 0, NULL, 2), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ustreams_print_modules(stdout, 0, names, -1), -1);
    CHECK_EQ(errno, EINVAL);
}

/* S.1 */
static void test_scls_tool(void)
{
    int st;
    char line[512];
    struct ustreams_modinfo v[64];
    int n = ustreams_modinfo(v, 64);

    char *out = tool_run("scls", "", &st);
    CHECK(out != NULL);
    CHECK_EQ(st, 0);
    CHECK(out && find_line(out, "echo", line, sizeof(line)) && strcmp(line, "echo") == 0);
    CHECK(out && find_line(out, "srvmod", line, sizeof(line)) && strcmp(line, "srvmod") == 0);
    free(out);

    out = tool_run("scls", "-l echo nullmod", &st);
    CHECK_EQ(st, 0);
    if (out) {
        char name[16], kind[16], maxpsz[16], fl[64];
        int id, minpsz, hi, lo, lines = 0;
        for (const char *p = out; (p = strchr(p, '\n')) != NULL; p++)
            lines++;
        CHECK_EQ(lines, 3); /* header, echo, nullmod */
        CHECK(find_line(out, "echo ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %d %d %15s %d %d %63s", name, kind, &id, &minpsz, maxpsz,
                        &hi, &lo, fl),
                 8);
        CHECK(strcmp(kind, "driver") == 0 && id == 5003 && hi == 5120 && lo == 1024);
        CHECK(strcmp(fl, "D_MP") == 0);
        CHECK(find_line(out, "nullmod ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %d %d %15s %d %d %63s", name, kind, &id, &minpsz, maxpsz,
                        &hi, &lo, fl),
                 8);
        CHECK(strcmp(kind, "module") == 0 && id == 5001 && hi == 5120 && lo == 1024);
    }
    free(out);

    out = tool_run("scls", "-r echo nullmod", &st);
    CHECK_EQ(st, 0);
    int e = find_info(v, n, "echo", USTREAMS_DRIVER);
    if (out && e >= 0) {
        char name[16], kind[16], major[16], link[16];
        long refs;
        CHECK(find_line(out, "echo ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %15s %15s %ld", name, kind, major, link, &refs), 5);
        CHECK_EQ(atoi(major), v[e].major); /* the same built-ins, registered alike */
        CHECK(strcmp(link, "static") == 0);
        CHECK_EQ(refs, 0);
        CHECK(find_line(out, "nullmod ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %15s", name, kind, major), 3);
        CHECK(strcmp(major, "-") == 0);
    }
    free(out);

    out = tool_run("scls", "-a", &st);
    CHECK_EQ(st, 0);
    if (out) {
        CHECK(find_line(out, "NAME", line, sizeof(line)));
        CHECK(strstr(line, "HIWAT") && strstr(line, "OPENS") && strstr(line, "MAJOR") &&
              strstr(line, "FLAGS"));
        CHECK(find_line(out, "nuls ", line, sizeof(line)));
    }
    free(out);

    out = tool_run("scls", "-l echo bogus", &st);
    CHECK_EQ(st, 1);
    CHECK(out && strstr(out, "scls: bogus: no such module or driver") != NULL);
    CHECK(out && find_line(out, "echo ", line, sizeof(line)));
    free(out);

    out = tool_run("scls", "-x", &st);
    CHECK_EQ(st, 2);
    CHECK(out && strstr(out, "usage: ustreams scls") != NULL);
    free(out);
}

/* S.2 */
static void test_table_after_work(void)
{
    int st;
    char line[512];
    char *out = tool_run("strinfo", "-s -p nullmod /dev/streams/echo", &st);
    CHECK_EQ(st, 0);
    if (out) {
        char name[16], kind[16], maxpsz[16];
        int id, minpsz, hi, lo;
        long opens, closes, queues, puts, srvs;
        CHECK(find_line(out, "nullmod ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %d %d %15s %d %d %ld %ld %ld %ld %ld", name, kind, &id,
                        &minpsz, maxpsz, &hi, &lo, &opens, &closes, &queues, &puts, &srvs),
                 12);
        CHECK_EQ(opens, 1);
        CHECK_EQ(closes, 0);
        CHECK_EQ(queues, 2);
        CHECK_EQ(puts, 6);
        CHECK(find_line(out, "echo ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %d %d %15s %d %d %ld %ld %ld %ld %ld", name, kind, &id,
                        &minpsz, maxpsz, &hi, &lo, &opens, &closes, &queues, &puts, &srvs),
                 12);
        CHECK_EQ(opens, 1);
        CHECK_EQ(puts, 3);
        CHECK(srvs >= 1);
    }
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);

    test_modinfo_basic();
    test_modinfo_counts();
    test_print_modules();
    test_scls_tool();
    test_table_after_work();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
