/* SPDX-License-Identifier: MIT */
/*
 * test_xfifo_kernel.c -- a mkfifo node between ustreams programs and
 * ordinary ones (issue 22 item 4; src/procs/sd_fifo_bridge.c;
 * docs/PROGRAMS.md "FIFOs with every program", docs/STREAMHEAD.md "Named
 * FIFOs").  The ordinary programs are /bin/sh, cat and head, and this
 * program re-executed as a plain writer (open(2)/write(2), no library call).
 *
 *   K.1  ustreams reader, `sh -c 'echo hello > F'` started first: "hello\n"
 *        then end of file (read 0); and the reader first (it waits in its
 *        open), then the shell writer.
 *   K.2  ustreams writer, `cat F` started first: cat prints exactly the
 *        10 000 lines written, and exits at end of file after strm_close.
 *        The writer another process that owns the node and exits at once
 *        after strm_close: cat still gets every line.
 *   K.3  `cat < F` started after the ustreams writer's open (which waits
 *        for it): the same.
 *   K.4  O_WRONLY|O_NONBLOCK with only a kernel reader succeeds (in the
 *        owner, and in another ustreams process through the owner); with
 *        nobody it fails ENXIO.
 *   K.5  a ustreams writer whose only reader (`head -n 1 F`) exits: EPIPE
 *        with SIGPIPE ignored; killed by SIGPIPE by default.
 *   K.6  a shell writer and a ustreams writer (another process) at once, a
 *        ustreams reader: every line arrives once, in order per writer,
 *        none torn (each write <= PIPE_BUF).
 *   K.7  two ustreams processes keep message boundaries and modules: see
 *        test_xfifo.c, test_xnames*.c, test_fifo.c (unchanged, green).
 *   K.8  hostile: a kernel writer pours 64 MiB as fast as it can into the
 *        FIFO of a slow ustreams reader: the reader's outstanding message
 *        bytes stay bounded (ustreams_blockstats), every byte arrives in
 *        order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "check.h"
#include "peer_spawn.h"

#define NLINES 10000
#define K6_LINES 2000
#define K8_BYTES (64L << 20)

static char dir[] = "/tmp/ust_xfifokXXXXXX";

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A fresh FIFO node dir/name. */
static void mknode(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    unlink(buf);
    CHECK_EQ(mkfifo(buf, 0600), 0);
}

/* Run `/bin/sh -c cmd`: its pid. */
static pid_t sh_spawn(const char *cmd)
{
    char *argv[] = {"sh", "-c", (char *)cmd, NULL};
    pid_t pid;
    fflush(NULL);
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
        return -1;
    return pid;
}

/* Wait for pid at most ms: its wait status, or -1 (killed: it hung). */
static int wait_ms(pid_t pid, long ms)
{
    int st;
    for (long w = 0; w < ms; w += 5) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        sleep_ms(5);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* Read all of fd until end of file (read 0) into buf: the length. */
static ssize_t read_all(int fd, char *buf, size_t n)
{
    size_t got = 0;
    for (;;) {
        ssize_t r = strm_read(fd, buf + got, n - got);
        if (r <= 0)
            return r < 0 ? -1 : (ssize_t)got;
        got += (size_t)r;
        if (got == n)
            return (ssize_t)got;
    }
}

/* ---- peers (this program re-executed) ---- */

/* "uwrite F N": a ustreams writer of N lines "ust N\n", each one write. */
static int peer_uwrite(const char *path, int n)
{
    int fd = strm_open(path, O_WRONLY);
    if (fd < 0)
        return 2;
    for (int i = 0; i < n; i++) {
        char l[64];
        int len = snprintf(l, sizeof(l), "ust %d ..................................\n", i);
        if (strm_write(fd, l, (size_t)len) != len)
            return 3;
    }
    strm_close(fd);
    return 0;
}

/* "unbw F": O_WRONLY|O_NONBLOCK must succeed (a kernel reader is there). */
static int peer_unbw(const char *path)
{
    int fd = strm_open(path, O_WRONLY | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "unbw: %s\n", strerror(errno));
        return 2;
    }
    if (strm_write(fd, "peer\n", 5) != 5)
        return 3;
    strm_close(fd);
    return 0;
}

/* "kwrite F": a plain program: open(2), K8_BYTES of a counting pattern in
 * 64 KiB writes as fast as it goes. */
static int peer_kwrite(const char *path)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return 2;
    static unsigned char b[65536];
    for (long off = 0; off < K8_BYTES; off += (long)sizeof(b)) {
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)((off + (long)i) % 251);
        for (size_t d = 0; d < sizeof(b);) {
            ssize_t w = write(fd, b + d, sizeof(b) - d);
            if (w <= 0)
                return 3;
            d += (size_t)w;
        }
    }
    close(fd);
    return 0;
}

/* ---- cases ---- */

static void k1_echo_to_reader(void)
{
    char f[PATH_MAX], buf[64];
    /* The shell first: its open waits for us. */
    mknode(f, sizeof(f), "k1a");
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "echo hello > %s", f);
    pid_t sh = sh_spawn(cmd);
    sleep_ms(100);
    int fd = strm_open(f, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(read_all(fd, buf, sizeof(buf)), 6);
    CHECK(memcmp(buf, "hello\n", 6) == 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0); /* end of file stays */
    strm_close(fd);
    int st = wait_ms(sh, 10000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* The reader first: its open waits for the shell. */
    mknode(f, sizeof(f), "k1b");
    snprintf(cmd, sizeof(cmd), "sleep 0.3; echo hello > %s", f);
    sh = sh_spawn(cmd);
    fd = strm_open(f, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(read_all(fd, buf, sizeof(buf)), 6);
    CHECK(memcmp(buf, "hello\n", 6) == 0);
    strm_close(fd);
    st = wait_ms(sh, 10000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Write NLINES numbered lines on fd. */
static void write_lines(int fd)
{
    for (int i = 0; i < NLINES; i++) {
        char l[64];
        int len = snprintf(l, sizeof(l), "line %05d\n", i);
        CHECK_EQ(strm_write(fd, l, (size_t)len), len);
    }
}

/* out holds exactly the NLINES lines write_lines writes. */
static void check_lines(const char *out)
{
    FILE *fp = fopen(out, "r");
    CHECK(fp != NULL);
    if (fp == NULL)
        return;
    char l[64];
    int i = 0, bad = 0;
    while (fgets(l, sizeof(l), fp) != NULL) {
        char want[64];
        snprintf(want, sizeof(want), "line %05d\n", i);
        bad += strcmp(l, want) != 0;
        i++;
    }
    fclose(fp);
    CHECK_EQ(i, NLINES);
    CHECK_EQ(bad, 0);
}

static void k2_writer_to_cat(int cat_first)
{
    char f[PATH_MAX], out[PATH_MAX], cmd[3 * PATH_MAX];
    mknode(f, sizeof(f), cat_first ? "k2" : "k3");
    snprintf(out, sizeof(out), "%s/out%d", dir, cat_first);
    if (cat_first)
        snprintf(cmd, sizeof(cmd), "exec cat %s > %s", f, out);
    else
        snprintf(cmd, sizeof(cmd), "sleep 0.3; exec cat < %s > %s", f, out);
    pid_t cat = sh_spawn(cmd);
    if (cat_first)
        sleep_ms(100);
    int fd = strm_open(f, O_WRONLY); /* K.3: waits for cat's open */
    CHECK(fd >= 0);
    write_lines(fd);
    strm_close(fd);
    int st = wait_ms(cat, 20000); /* cat's end of file */
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    check_lines(out);
}

/* K.2, the writer another process that owns the node and exits right
 * after its strm_close: cat still gets every line (the bridge's exit). */
static void k2_owner_exits(void)
{
    char f[PATH_MAX], out[PATH_MAX], cmd[3 * PATH_MAX], n[16];
    mknode(f, sizeof(f), "k2c");
    snprintf(out, sizeof(out), "%s/out2c", dir);
    snprintf(cmd, sizeof(cmd), "exec cat %s > %s", f, out);
    pid_t cat = sh_spawn(cmd);
    sleep_ms(100);
    snprintf(n, sizeof(n), "%d", NLINES);
    CHECK_EQ(peer_wait(peer_spawn("uwrite", f, n)), 0);
    int st = wait_ms(cat, 20000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *fp = fopen(out, "r");
    CHECK(fp != NULL);
    char l[128];
    int i = 0, bad = 0;
    while (fp != NULL && fgets(l, sizeof(l), fp) != NULL) {
        int k;
        bad += sscanf(l, "ust %d", &k) != 1 || k != i;
        i++;
    }
    if (fp != NULL)
        fclose(fp);
    CHECK_EQ(i, NLINES);
    CHECK_EQ(bad, 0);
}

static void k4_nonblock_writer(void)
{
    char f[PATH_MAX], out[PATH_MAX], cmd[3 * PATH_MAX], buf[16];
    /* Nobody: ENXIO. */
    mknode(f, sizeof(f), "k4a");
    errno = 0;
    CHECK_EQ(strm_open(f, O_WRONLY | O_NONBLOCK), -1);
    CHECK_EQ(errno, ENXIO);
    /* A kernel reader only (cat waiting in its open): this process, the
     * owner, opens at once. */
    snprintf(out, sizeof(out), "%s/out4a", dir);
    snprintf(cmd, sizeof(cmd), "exec cat %s > %s", f, out);
    pid_t cat = sh_spawn(cmd);
    sleep_ms(150);
    int fd = strm_open(f, O_WRONLY | O_NONBLOCK);
    CHECK(fd >= 0);
    CHECK_EQ(strm_write(fd, "owner\n", 6), 6);
    strm_close(fd);
    int st = wait_ms(cat, 10000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int in = open(out, O_RDONLY);
    CHECK_EQ(read(in, buf, sizeof(buf)), 6);
    CHECK(memcmp(buf, "owner\n", 6) == 0);
    close(in);

    /* Another ustreams process, reaching the FIFO through us (the owner,
     * with no descriptor of it now). */
    snprintf(out, sizeof(out), "%s/out4b", dir);
    snprintf(cmd, sizeof(cmd), "exec cat %s > %s", f, out);
    cat = sh_spawn(cmd);
    sleep_ms(150);
    CHECK_EQ(peer_wait(peer_spawn("unbw", f, NULL)), 0);
    st = wait_ms(cat, 10000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    in = open(out, O_RDONLY);
    CHECK_EQ(read(in, buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "peer\n", 5) == 0);
    close(in);
}

/* "epipe F ign|dfl": K.5's writer, the node's owner: writes until a write
 * fails (0: EPIPE), SIGPIPE ignored or not. */
static int peer_epipe(const char *f, const char *how)
{
    signal(SIGPIPE, strcmp(how, "ign") == 0 ? SIG_IGN : SIG_DFL);
    int fd = strm_open(f, O_WRONLY);
    if (fd < 0)
        return 2;
    for (long i = 0; i < 10000000; i++) {
        if (strm_write(fd, "a line for head\n", 16) != 16)
            return errno == EPIPE ? 0 : 3;
    }
    return 4;
}

static void k5_epipe(int ignore)
{
    char f[PATH_MAX], cmd[2 * PATH_MAX];
    mknode(f, sizeof(f), ignore ? "k5a" : "k5b");
    snprintf(cmd, sizeof(cmd), "exec head -n 1 %s > /dev/null", f);
    pid_t head = sh_spawn(cmd);
    pid_t w = peer_spawn("epipe", f, ignore ? "ign" : "dfl");
    int st = wait_ms(head, 20000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = wait_ms(w, 20000);
    CHECK(st != -1);
    if (ignore)
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* EPIPE */
    else
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE);
}

static void k6_two_writers(void)
{
    char f[PATH_MAX], cmd[2 * PATH_MAX];
    mknode(f, sizeof(f), "k6");
    int fd = strm_open(f, O_RDONLY | O_NONBLOCK);
    CHECK(fd >= 0);
    int fl = strm_fcntl(fd, F_GETFL);
    strm_fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* reads wait from now on */
    snprintf(cmd, sizeof(cmd),
             "i=0; while [ $i -lt %d ]; do echo \"sh $i ____________________________\"; "
             "i=$((i+1)); done > %s",
             K6_LINES, f);
    pid_t sh = sh_spawn(cmd);
    char n[16];
    snprintf(n, sizeof(n), "%d", K6_LINES);
    pid_t uw = peer_spawn("uwrite", f, n);
    size_t cap = 1 << 20, len = 0;
    char *all = malloc(cap);
    int nsh = 0, nust = 0, bad = 0;
    long long t0 = time(NULL);
    while ((nsh < K6_LINES || nust < K6_LINES) && time(NULL) - t0 < 60 && len < cap) {
        ssize_t r = strm_read(fd, all + len, cap - len);
        if (r == 0) { /* no writer at the moment (one not in yet, or done) */
            sleep_ms(10);
            continue;
        }
        if (r < 0)
            break;
        len += (size_t)r;
        char *nl, *s = all;
        while ((nl = memchr(s, '\n', (size_t)(all + len - s))) != NULL) {
            *nl = '\0';
            int k;
            if (sscanf(s, "sh %d", &k) == 1 && k == nsh &&
                strcmp(strchr(s, ' ') + strlen(strchr(s, ' ')) - 4, "____") == 0)
                nsh++;
            else if (sscanf(s, "ust %d", &k) == 1 && k == nust &&
                     strcmp(s + strlen(s) - 4, "....") == 0)
                nust++;
            else if (bad++ < 5)
                fprintf(stderr, "K.6: torn or out of order: \"%s\"\n", s);
            s = nl + 1;
        }
        len -= (size_t)(s - all);
        memmove(all, s, len);
    }
    CHECK_EQ(nsh, K6_LINES);
    CHECK_EQ(nust, K6_LINES);
    CHECK_EQ(bad, 0);
    CHECK_EQ(len, 0);
    free(all);
    strm_close(fd);
    CHECK_EQ(peer_wait(uw), 0);
    int st = wait_ms(sh, 10000);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void k8_hostile_flood(void)
{
    char f[PATH_MAX];
    mknode(f, sizeof(f), "k8");
    int fd = strm_open(f, O_RDONLY | O_NONBLOCK);
    CHECK(fd >= 0);
    int fl = strm_fcntl(fd, F_GETFL);
    strm_fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    pid_t w = peer_spawn("kwrite", f, NULL);
    static unsigned char b[16384];
    long got = 0, bad = 0, maxbytes = 0, reads = 0;
    time_t t0 = time(NULL);
    while (got < K8_BYTES && time(NULL) - t0 < 90) {
        ssize_t r = strm_read(fd, b, sizeof(b));
        if (r == 0) {
            sleep_ms(5);
            continue;
        }
        if (r < 0)
            break;
        for (ssize_t i = 0; i < r; i++)
            bad += b[i] != (unsigned char)((got + i) % 251);
        got += r;
        if (++reads % 64 == 0) { /* slow: the writer is held up meanwhile */
            struct ustreams_blockstats st;
            ustreams_blockstats(&st);
            if (st.bytes > maxbytes)
                maxbytes = st.bytes;
            sleep_ms(1);
        }
    }
    CHECK_EQ(got, K8_BYTES);
    CHECK_EQ(bad, 0);
    fprintf(stderr, "K.8: at most %ld bytes outstanding in messages\n", maxbytes);
    CHECK(maxbytes < (2L << 20)); /* the FIFO's high-water mark and a chunk, not 64 MiB */
    CHECK_EQ(peer_wait(w), 0);
    strm_close(fd);
}

static int peer_main(int argc, char **argv)
{
    const char *what = argv[2], *a = argc > 3 ? argv[3] : "", *b = argc > 4 ? argv[4] : "0";
    alarm(60); /* a peer never outlives a failed test for long */
    if (strcmp(what, "uwrite") == 0)
        return peer_uwrite(a, atoi(b));
    if (strcmp(what, "unbw") == 0)
        return peer_unbw(a);
    if (strcmp(what, "epipe") == 0)
        return peer_epipe(a, b);
    if (strcmp(what, "kwrite") == 0)
        return peer_kwrite(a);
    return 9;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "peer") == 0)
        return peer_main(argc, argv);
    CHECK(mkdtemp(dir) != NULL);
    peer_deadline(240);
    k1_echo_to_reader();
    k2_writer_to_cat(1);
    k2_writer_to_cat(0);
    k2_owner_exits();
    k4_nonblock_writer();
    k5_epipe(1);
    k5_epipe(0);
    k6_two_writers();
    k8_hostile_flood();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
    return CHECK_RESULT();
}
