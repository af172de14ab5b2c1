/* SPDX-License-Identifier: MIT */
/*
 * test_sad_user.c -- the autopush table is the user's, across processes
 * (issue 22 item 6; src/admin/autopush.c, src/procs/xautopush.c,
 * docs/ADMIN.md "The sad driver and autopush").
 *
 * Reference: sad(7) / autopush(1M): a configuration made through the sad
 * driver applies to every later open of the device, whoever opens it.  Here
 * "whoever" is every ustreams process of the user.  Each case uses separate
 * processes (fork children) for the one that configures and the one that
 * opens.
 *   U.1 process A: SAD_SAP SAP_ALL echo nullmod; process B opens echo: I_LOOK
 *       says nullmod, SAD_GAP shows the entry; this process too
 *   U.2 process A: SAP_CLEAR; process B opens echo: nothing pushed
 *   U.3 two processes configure two devices at once: both entries kept
 *   U.4 `ustreams autopush -f FILE` (the tool, its own process), then a child
 *       opens: the module; `-r` removes it
 *   U.5 a hostile file in the runtime directory -- garbage, a bad line after
 *       a good header, overlapping entries, huge, another owner (chown),
 *       group/other mode, a symbolic link, a directory -- is refused with the
 *       reason on stderr (cmn_err), the open succeeds with nothing pushed,
 *       no crash; a hand-written good file is then used
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sad.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ustreams.h>

#include "autopush.h"
#include "check.h"
#include "fork_util.h"
#include "log_util.h"
#include "rundir.h"
#include "strcore.h"
#include "tool_run.h"

static char rundir[256], table[300];
static major_t echo_major, nuls_major;

static major_t major_of(const char *drv)
{
    struct ust_modent *e = ust_reg_find(drv, UST_DRIVER);
    major_t m = e ? (major_t)e->major : 0;
    if (e)
        ust_reg_rele(e);
    return m;
}

/* SAD_SAP in this process; returns the errno or 0. */
static int sap(int cmd, major_t major, minor_t minor, const char *mod)
{
    int sad = strm_open("/dev/streams/sad", O_RDWR);
    struct strapush s;
    memset(&s, 0, sizeof(s));
    s.sap_cmd = cmd;
    s.sap_major = major;
    s.sap_minor = minor;
    s.sap_npush = mod ? 1 : 0;
    if (mod)
        snprintf(s.sap_list[0], sizeof(s.sap_list[0]), "%s", mod);
    int rc = strm_ioctl(sad, SAD_SAP, &s) < 0 ? errno : 0;
    strm_close(sad);
    return rc;
}

/* The module on top of a new stream of dev ("" when none). */
static void top_of(const char *dev, char out[FMNAMESZ + 1])
{
    int fd = strm_open(dev, O_RDWR);
    out[0] = '\0';
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    if (strm_ioctl(fd, I_LOOK, out) < 0) {
        CHECK_EQ(errno, EINVAL);
        out[0] = '\0';
    }
    strm_close(fd);
}

/* Children. */
static int a_set_echo(void *arg)
{
    return sap(SAP_ALL, echo_major, 0, arg) != 0;
}

static int a_clear_echo(void *arg)
{
    (void)arg;
    return sap(SAP_CLEAR, echo_major, 0, NULL) != 0;
}

static int a_set_nuls(void *arg)
{
    (void)arg;
    return sap(SAP_ALL, nuls_major, 0, "srvmod") != 0;
}

static int a_set_echo1(void *arg)
{
    (void)arg;
    return sap(SAP_ONE, echo_major, 1, "nullmod") != 0;
}

/* B: echo's top module must be arg ("" none). */
static int b_expect(void *arg)
{
    char top[FMNAMESZ + 1];
    top_of("/dev/streams/echo", top);
    if (strcmp(top, arg) != 0)
        printf("  B: top of echo '%s', want '%s'\n", top, (const char *)arg);
    return strcmp(top, arg) != 0;
}

/* B with its stderr in the file arg2 (for U.5). */
static const char *b_want;
static int b_logged(void *arg)
{
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    return b_expect((void *)b_want);
}

/* B: SAD_GAP of (echo 1) and (nuls 0) both configured. */
static int b_gap_both(void *arg)
{
    (void)arg;
    int sad = strm_open("/dev/streams/sad", O_RDONLY), bad = 0;
    struct strapush s;
    memset(&s, 0, sizeof(s));
    s.sap_major = echo_major;
    s.sap_minor = 1;
    bad |= strm_ioctl(sad, SAD_GAP, &s) != 0 || s.sap_cmd != SAP_ONE ||
           strcmp(s.sap_list[0], "nullmod") != 0;
    memset(&s, 0, sizeof(s));
    s.sap_major = nuls_major;
    s.sap_minor = 77;
    bad |= strm_ioctl(sad, SAD_GAP, &s) != 0 || s.sap_cmd != SAP_ALL ||
           strcmp(s.sap_list[0], "srvmod") != 0;
    strm_close(sad);
    return bad;
}

static void test_set_clear(void)
{
    char top[FMNAMESZ + 1];
    CHECK_EQ(fk_run(a_set_echo, "nullmod", 10000), 0);
    CHECK_EQ(fk_run(b_expect, "nullmod", 10000), 0);
    top_of("/dev/streams/echo", top); /* this process too */
    CHECK(strcmp(top, "nullmod") == 0);
    struct strapush s = {.sap_major = echo_major, .sap_minor = 5};
    CHECK_EQ(ust_autopush_get(&s), 0);
    CHECK_EQ(s.sap_cmd, SAP_ALL);
    printf("U.1: set in one process, pushed in another\n");
    CHECK_EQ(fk_run(a_clear_echo, NULL, 10000), 0);
    CHECK_EQ(fk_run(b_expect, "", 10000), 0);
    top_of("/dev/streams/echo", top);
    CHECK_EQ(top[0], '\0');
    printf("U.2: cleared in one process, gone in another\n");
}

static void test_concurrent(void)
{
    pid_t a = fk_start(a_set_echo1, NULL), b = fk_start(a_set_nuls, NULL);
    CHECK_EQ(fk_wait(a, 10000), 0);
    CHECK_EQ(fk_wait(b, 10000), 0);
    CHECK_EQ(fk_run(b_gap_both, NULL, 10000), 0);
    CHECK_EQ(sap(SAP_CLEAR, echo_major, 1, NULL), 0);
    CHECK_EQ(sap(SAP_CLEAR, nuls_major, 0, NULL), 0);
    CHECK_EQ(access(table, F_OK), -1); /* the empty table is no file */
    printf("U.3: two writers at once, both entries kept\n");
}

static void test_tool(void)
{
    char path[400], args[500];
    int st;
    snprintf(path, sizeof(path), "%s/my.ap", rundir);
    FILE *f = fopen(path, "w");
    fputs("echo -1 0 srvmod\n", f);
    fclose(f);
    snprintf(args, sizeof(args), "-f %s", path);
    free(tool_run("autopush", args, &st));
    CHECK_EQ(st, 0);
    CHECK_EQ(fk_run(b_expect, "srvmod", 10000), 0);
    free(tool_run("autopush", "-r -M echo -m 0", &st));
    CHECK_EQ(st, 0);
    CHECK_EQ(fk_run(b_expect, "", 10000), 0);
    unlink(path);
    printf("U.4: ustreams autopush -f and -r reach other processes\n");
}

static void write_table(const char *text, size_t n, mode_t mode)
{
    unlink(table);
    rmdir(table);
    int fd = open(table, O_WRONLY | O_CREAT | O_TRUNC, mode);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, text, n), (long)n);
    fchmod(fd, mode);
    close(fd);
}

static void write_str(const char *text, mode_t mode)
{
    write_table(text, strlen(text), mode);
}

/* Run B with stderr captured; it must see nothing pushed and log why. */
static void expect_refused(const char *what, const char *why)
{
    char log[400], buf[2048];
    snprintf(log, sizeof(log), "%s/b.err", rundir);
    b_want = "";
    CHECK_EQ(fk_run(b_logged, log, 10000), 0);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    unlink(log);
    int ok = strstr(buf, "autopush: ") && strstr(buf, "refused (") && strstr(buf, why);
    if (!ok)
        printf("  %s: stderr was '%s', want '%s'\n", what, buf, why);
    CHECK(ok);
}

static void test_hostile(void)
{
    static const char hdr[] = "# ustreams autopush 1\n";
    char *big;

    write_str("hello world\n", 0600);
    expect_refused("garbage", "line 1: not the header");
    write_str("# ustreams autopush 1\necho -1 0 nullmod\necho 0 0 nullmod\n", 0600);
    expect_refused("overlap", "line 3: overlaps an earlier entry");
    write_str("# ustreams autopush 1\necho -1 0 ../evil\n", 0600);
    expect_refused("bad name", "line 2: bad module name");
    write_str("# ustreams autopush 1\necho -1 0 nullmod", 0600);
    expect_refused("no newline", "line 2: no newline");
    big = malloc(70000);
    memcpy(big, hdr, sizeof(hdr) - 1);
    memset(big + sizeof(hdr) - 1, '#', 70000 - sizeof(hdr) + 1);
    write_table(big, 70000, 0600);
    free(big);
    expect_refused("huge", "larger than 65536 bytes");
    write_str("# ustreams autopush 1\necho -1 0 nullmod\n", 0600);
    CHECK_EQ(chown(table, 65534, 65534), 0);
    expect_refused("chown", "owned by uid 65534");
    write_str("# ustreams autopush 1\necho -1 0 nullmod\n", 0644);
    expect_refused("mode", "mode 644");
    char target[400];
    snprintf(target, sizeof(target), "%s/elsewhere", rundir);
    write_str("# ustreams autopush 1\necho -1 0 nullmod\n", 0600);
    CHECK_EQ(rename(table, target), 0);
    CHECK_EQ(symlink(target, table), 0);
    expect_refused("symlink", "a symbolic link");
    unlink(target);
    unlink(table);
    CHECK_EQ(mkdir(table, 0700), 0);
    expect_refused("directory", "not a regular file");
    rmdir(table);
    /* a good file written by hand is used */
    write_str("# ustreams autopush 1\necho -1 0 nullmod\n", 0600);
    CHECK_EQ(fk_run(b_expect, "nullmod", 10000), 0);
    unlink(table);
    CHECK_EQ(fk_run(b_expect, "", 10000), 0);
    printf("U.5: hostile files refused with their reason; a good one used\n");
}

int main(int argc, char **argv)
{
    (void)argc;
    log_private_rundir(); /* the user's table of this test only */
    tool_run_init(argv[0]);
    CHECK_EQ(ust_rundir(rundir, sizeof(rundir)), 0);
    snprintf(table, sizeof(table), "%s/autopush", rundir);
    echo_major = major_of("echo");
    nuls_major = major_of("nuls");
    CHECK(echo_major != 0 && nuls_major != 0);
    test_set_clear();
    test_concurrent();
    test_tool();
    test_hostile();
    return CHECK_RESULT();
}
