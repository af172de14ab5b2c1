/* SPDX-License-Identifier: MIT */
/*
 * test_xfifo.c -- named FIFOs between processes (issue 13, item 5;
 * src/procs/sd_fifo_name.c over sd_fifo.c, sd_rdv.c, sd_relay.c;
 * docs/STREAMHEAD.md "Named FIFOs").  The other processes are this program
 * re-executed (/proc/self/exe peer ...), unrelated to the test but for the
 * path.
 *
 *   F.1  a writer process opens first (and waits, O_WRONLY, for a reader);
 *        this process opens O_RDONLY: message boundaries, control and data
 *        parts and a zero-length message arrive as written, then end of file
 *        when the writer closes; isastream is 1 on both sides.
 *   F.2  modules: the reader pushes srvmod on its descriptor, the writer
 *        nullmod on its own; traffic passes.  (The writer starts when the
 *        reader's module is in: PATH.go.  srvmod holds data, so the hang-up
 *        may be read before the last of it: read on to the writer's
 *        zero-length message.)
 *   F.3  open rules: O_WRONLY | O_NONBLOCK with no reader anywhere fails
 *        ENXIO (here and in another process); O_RDONLY | O_NONBLOCK opens at
 *        once.
 *   F.4  two writer processes and this reader: every message of each
 *        arrives once, in order per writer; end of file after both close.
 *   F.5  security: a FIFO of mode 0600 refuses another user (EACCES), and
 *        keeps its mode (stat).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "peer_spawn.h"

int ust_fifo_counts(int fd, int *readers, int *writers); /* src/head/sd_fifo.h */

#define NOBODY 65534
#define NMSG 2000

static char dir[] = "/tmp/ust_xfifoXXXXXX";


/* The reader's go: the file PATH.go exists (made once the reader has set
 * its stream up, so that the writer cannot be done and gone before). */
static void go_path(char *buf, size_t n, const char *path)
{
    if (snprintf(buf, n, "%s.go", path) >= (int)n)
        buf[0] = '\0'; /* cannot be: the paths are short */
}

static void unlink_go(const char *path)
{
    char g[PATH_MAX];
    go_path(g, sizeof(g), path);
    unlink(g);
}

static void say_go(const char *path)
{
    char g[PATH_MAX];
    go_path(g, sizeof(g), path);
    int fd = open(g, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
}

/* "write PATH TAG": open O_WRONLY (waits for a reader), push nullmod, wait
 * for the reader's go, then NMSG messages: control "TAG", data "TAG:<i>";
 * then a zero-length one. */
static int peer_write(const char *path, const char *tag)
{
    int fd = strm_open(path, O_WRONLY);
    if (fd < 0) {
        fprintf(stderr, "peer write %s: strm_open: %s\n", tag, strerror(errno));
        return 10;
    }
    if (isastream(fd) != 1 || strm_ioctl(fd, I_PUSH, "nullmod") != 0)
        return 11;
    char g[PATH_MAX];
    go_path(g, sizeof(g), path);
    for (int i = 0; access(g, F_OK) != 0; i++) {
        if (i == 2000)
            return 15;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < NMSG; i++) {
        char d[32];
        struct strbuf ctl = {.len = (int)strlen(tag), .buf = (char *)tag};
        struct strbuf dat = {.len = snprintf(d, sizeof(d), "%s:%d", tag, i), .buf = d};
        if (putmsg(fd, &ctl, &dat, 0) != 0)
            return 12;
    }
    struct strbuf z = {.len = 0, .buf = ""};
    if (putmsg(fd, NULL, &z, 0) != 0)
        return 13;
    return strm_close(fd) == 0 ? 0 : 14;
}

/* "enxio PATH": O_WRONLY | O_NONBLOCK must fail with ENXIO. */
static int peer_enxio(const char *path)
{
    int fd = strm_open(path, O_WRONLY | O_NONBLOCK);
    return fd < 0 && errno == ENXIO ? 0 : 20;
}

/* "eacces PATH": as nobody, any open fails with EACCES. */
static int peer_eacces(const char *path)
{
    if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
        setresuid(NOBODY, NOBODY, NOBODY) != 0)
        return 30;
    int fd = strm_open(path, O_WRONLY | O_NONBLOCK);
    return fd < 0 && errno == EACCES ? 0 : 31;
}

static int peer_main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char *op = argv[2], *a = argc > 3 ? argv[3] : "", *b = argc > 4 ? argv[4] : "w";
    if (strcmp(op, "write") == 0)
        return peer_write(a, b);
    if (strcmp(op, "enxio") == 0)
        return peer_enxio(a);
    if (strcmp(op, "eacces") == 0)
        return peer_eacces(a);
    return 99;
}

/* Read what `nw` writers (tags "a", "b"...) sent: every message once, in
 * order per writer, with its control part, up to each writer's zero-length
 * message; then end of file.  `early_eof`: a module with a service
 * procedure holds data on the reader's side, so the hang-up (high priority)
 * may reach the head before the last of it: end of file may be read before
 * the data that follows it (STREAMS, not lost). */
static void read_writers(int fd, int nw, int early_eof)
{
    int next[4] = {0}, zeros = 0, eofs = 0;
    for (;;) {
        char cb[16], db[64];
        struct strbuf ctl = {.maxlen = sizeof(cb), .buf = cb};
        struct strbuf dat = {.maxlen = sizeof(db) - 1, .buf = db};
        int flags = 0;
        int r = getmsg(fd, &ctl, &dat, &flags);
        if (r != 0) {
            CHECK_EQ(r, 0);
            break;
        }
        if (ctl.len == 0 && dat.len == 0) { /* end of file */
            if (zeros == nw || !early_eof || ++eofs == 1000)
                break;
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (ctl.len <= 0 && dat.len == 0) {
            zeros++; /* a writer's zero-length message */
            continue;
        }
        db[dat.len > 0 ? dat.len : 0] = '\0';
        int w = cb[0] - 'a', i = -1;
        CHECK(ctl.len == 1 && w >= 0 && w < nw);
        if (ctl.len != 1 || w < 0 || w >= nw)
            break;
        CHECK(sscanf(db, "%*c:%d", &i) == 1);
        CHECK_EQ(i, next[w]);
        next[w] = i + 1;
    }
    for (int w = 0; w < nw; w++)
        CHECK_EQ(next[w], NMSG);
    CHECK_EQ(zeros, nw);
}

static void test_f1_f2(void)
{
    char f[PATH_MAX];
    snprintf(f, sizeof(f), "%s/f1", dir);
    CHECK_EQ(mkfifo(f, 0644), 0);
    pid_t w = peer_spawn("write", f, "a"); /* opens first: it waits for us */
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    int fd = strm_open(f, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(isastream(fd), 1);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    say_go(f);
    read_writers(fd, 1, 1);
    CHECK_EQ(peer_wait(w), 0);
    CHECK_EQ(strm_close(fd), 0);
    unlink(f);
    unlink_go(f);
}

static void test_f3_rules(void)
{
    char f[PATH_MAX];
    snprintf(f, sizeof(f), "%s/f3", dir);
    CHECK_EQ(mkfifo(f, 0666), 0);
    errno = 0;
    CHECK_EQ(strm_open(f, O_WRONLY | O_NONBLOCK), -1);
    CHECK_EQ(errno, ENXIO);
    CHECK_EQ(peer_wait(peer_spawn("enxio", f, NULL)), 0);
    int fd = strm_open(f, O_RDONLY | O_NONBLOCK);
    CHECK(fd >= 0);
    int wfd = strm_open(f, O_WRONLY | O_NONBLOCK); /* now there is a reader */
    CHECK(wfd >= 0);
    CHECK_EQ(strm_write(wfd, "x", 1), 1);
    char c;
    CHECK_EQ(strm_read(fd, &c, 1), 1);
    strm_close(wfd);
    strm_close(fd);
    unlink(f);
}

static void test_f4_two_writers(void)
{
    char f[PATH_MAX];
    snprintf(f, sizeof(f), "%s/f4", dir);
    CHECK_EQ(mkfifo(f, 0644), 0);
    int fd = strm_open(f, O_RDONLY | O_NONBLOCK); /* this process owns it */
    CHECK(fd >= 0);
    CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0); /* blocking reads from now on */
    /* Hold a writer of our own until both peers are in, so that end of
     * file comes only after all of them. */
    int hold = strm_open(f, O_WRONLY);
    CHECK(hold >= 0);
    say_go(f);
    pid_t a = peer_spawn("write", f, "a"), b = peer_spawn("write", f, "b");
    for (int i = 0; i < 300; i++) {
        int r = 0, w = 0;
        ust_fifo_counts(fd, &r, &w);
        if (w >= 3)
            break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    strm_close(hold);
    read_writers(fd, 2, 0);
    CHECK_EQ(peer_wait(a), 0);
    CHECK_EQ(peer_wait(b), 0);
    strm_close(fd);
    unlink(f);
    unlink_go(f);
}

static void test_f5_security(void)
{
    char f[PATH_MAX];
    struct stat st;
    snprintf(f, sizeof(f), "%s/f5", dir);
    CHECK_EQ(mkfifo(f, 0600), 0);
    int fd = strm_open(f, O_RDONLY | O_NONBLOCK);
    CHECK(fd >= 0);
    CHECK_EQ(peer_wait(peer_spawn("eacces", f, NULL)), 0);
    CHECK_EQ(stat(f, &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0600);
    CHECK(S_ISFIFO(st.st_mode));
    strm_close(fd);
    unlink(f);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "peer") == 0)
        return peer_main(argc, argv);
    if (geteuid() != 0) {
        printf("test_xfifo: needs root (it switches users to test permissions): skipped\n");
        return 77;
    }
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0755), 0);
    signal(SIGPIPE, SIG_IGN);
    peer_deadline(120);
    test_f1_f2();
    test_f3_rules();
    test_f4_two_writers();
    test_f5_security();
    CHECK_EQ(rmdir(dir), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
