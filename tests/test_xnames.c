/* SPDX-License-Identifier: MIT */
/*
 * test_xnames.c -- names that reach streams from other processes: fattach
 * and fdetach by path, connld, the rendezvous' security (issue 13, items 3,
 * 4 and 7; src/head/sd_fattach.c, sd_names.c, sd_rdv.c, sd_relay.c;
 * docs/STREAMHEAD.md "fattach and fdetach", "connld").
 *
 * "Unrelated" processes are this program re-executed (/proc/self/exe peer
 * ...): they inherit no stream and find the name by its path alone.
 *
 *   X.1  fattach errors as fattach(3C): ENOENT (no such file), EPERM (the
 *        caller does not own the file), EACCES (the owner has no write
 *        permission); EBUSY for a name another process attached.
 *   X.2  in this process: the name opens the stream under any spelling of
 *        the path (a symbolic link), isastream 1; EBUSY twice; after
 *        fdetach the path opens as the plain file again.
 *   X.3  an unrelated process opens the name: putmsg/getmsg both ways with
 *        control and data parts kept; after fdetach it opens the plain file.
 *   X.4  connld: each open of the name (two other processes, one of them as
 *        another user, and one in this process) makes a new pipe; the server
 *        takes each with I_RECVFD, with the client's uid and gid, and talks
 *        to each client on its own pipe; also after a fork() of the server
 *        (a client started with fork and exec).
 *   X.5  security: a user the file's mode does not admit gets EACCES from
 *        strm_open, and the owner's rendezvous refuses it too when asked
 *        directly (its kernel credentials are checked, not its word).
 *   X.6  fdetach from another process: refused (EPERM) for a user who does
 *        not own the file, done for its owner; `ustreams fdetach PATH`.
 *   X.7  a name whose process died is never handed out: the path opens as
 *        the plain file, and another process may attach it.
 *   X.8  the process holding the named stream dies: a client blocked in
 *        read gets end of file within a second.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "peer_spawn.h"
#include "tool_run.h"

#define NOBODY 65534

static char dir[] = "/tmp/ust_xnamesXXXXXX";

static void path_of(char *buf, const char *leaf)
{
    snprintf(buf, PATH_MAX, "%s/%s", dir, leaf);
}

static void make_file(const char *path, mode_t mode, const char *text)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ(write(fd, text, strlen(text)), (long)strlen(text));
        close(fd);
    }
    CHECK_EQ(chmod(path, mode), 0);
}

static int become_nobody(void)
{
    return setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY, NOBODY) == 0 &&
                   setresuid(NOBODY, NOBODY, NOBODY) == 0
               ? 0
               : -1;
}


/* ------------------------------------------------------------------------ */
/* The peer                                                                 */
/* ------------------------------------------------------------------------ */
/* "open PATH": a message with control "C" and data "hello", then the reply
 * "C2"/"reply" must come back; isastream must say 1. */
static int peer_open(const char *path)
{
    int fd = strm_open(path, O_RDWR);
    if (fd < 0)
        return 10;
    if (isastream(fd) != 1)
        return 11;
    struct strbuf ctl = {.len = 1, .buf = "C"}, dat = {.len = 5, .buf = "hello"};
    if (putmsg(fd, &ctl, &dat, 0) != 0)
        return 12;
    char cb[16], db[16];
    struct strbuf rc = {.maxlen = sizeof(cb), .buf = cb}, rd = {.maxlen = sizeof(db), .buf = db};
    int flags = 0;
    if (getmsg(fd, &rc, &rd, &flags) != 0 || rc.len != 2 || memcmp(cb, "C2", 2) != 0 ||
        rd.len != 5 || memcmp(db, "reply", 5) != 0)
        return 13;
    return strm_close(fd) == 0 ? 0 : 14;
}

/* "plain PATH": the plain file, not a stream. */
static int peer_plain(const char *path)
{
    char buf[32] = {0};
    int fd = strm_open(path, O_RDONLY);
    if (fd < 0)
        return 20;
    if (isastream(fd) != 0)
        return 21;
    if (read(fd, buf, sizeof(buf) - 1) != 9 || strcmp(buf, "plainfile") != 0)
        return 22; /* a plain file: read(2) (strm_read says ENOSTR, as for any file) */
    return strm_close(fd) == 0 ? 0 : 23;
}

/* "connld PATH TAG [nobody]": write TAG, read "ack:TAG". */
static int peer_connld(const char *path, const char *tag, const char *who)
{
    char buf[64] = {0}, want[64];
    if (who != NULL && become_nobody() != 0)
        return 30;
    int fd = strm_open(path, O_RDWR);
    if (fd < 0)
        return 31;
    if (strm_write(fd, tag, strlen(tag)) != (ssize_t)strlen(tag))
        return 32;
    snprintf(want, sizeof(want), "ack:%s", tag);
    if (strm_read(fd, buf, sizeof(buf) - 1) != (ssize_t)strlen(want) || strcmp(buf, want) != 0)
        return 33;
    return strm_close(fd) == 0 ? 0 : 34;
}

/* "eacces PATH": as nobody, strm_open must fail with EACCES. */
static int peer_eacces(const char *path)
{
    if (become_nobody() != 0)
        return 40;
    int fd = strm_open(path, O_RDWR);
    return fd < 0 && errno == EACCES ? 0 : 41;
}

/* "fdetach PATH ERRNO [nobody]": fdetach's result must be ERRNO (0: done). */
static int peer_fdetach(const char *path, const char *err, const char *who)
{
    if (who != NULL && become_nobody() != 0)
        return 50;
    int r = fdetach(path);
    int want = atoi(err);
    return (want == 0 ? r == 0 : r == -1 && errno == want) ? 0 : 51;
}

/* "attach PATH": attach a pipe end to PATH, say so on stdout, wait to die. */
static int peer_attach(const char *path)
{
    int p[2];
    if (strm_pipe(p) != 0 || fattach(p[1], path) != 0)
        return 60;
    printf("attached\n");
    fflush(stdout);
    for (;;)
        pause();
}

/* "perm ROOTFILE MINE", as nobody: fattach of a file it does not own is
 * EPERM; of its own file without write permission EACCES, with it 0. */
static int peer_perm(const char *rootfile, const char *mine)
{
    int q[2];
    if (become_nobody() != 0 || strm_pipe(q) != 0)
        return 70;
    if (fattach(q[0], rootfile) != -1 || errno != EPERM)
        return 71;
    int fd = open(mine, O_CREAT | O_WRONLY, 0444);
    if (fd < 0)
        return 72;
    close(fd);
    if (fattach(q[0], mine) != -1 || errno != EACCES)
        return 73;
    if (chmod(mine, 0644) != 0 || fattach(q[0], mine) != 0 || fdetach(mine) != 0)
        return 74;
    return 0;
}

/* The rendezvous protocol as sd_rdv.c speaks it (only what X.5 needs). */
struct raw_req {
    uint32_t magic;
    uint16_t version, op;
    int32_t oflag, pad;
};
struct raw_rep {
    uint32_t magic;
    int32_t err, side, pad;
};

/* "raw PATH", as nobody: ask the owner of PATH's name straight, with a
 * request of our own making; the owner must refuse it with EACCES. */
static int peer_raw(const char *path)
{
    struct stat st;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (stat(path, &st) != 0)
        return 80;
    int n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "ustreams/n/%llx:%llx",
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    if (become_nobody() != 0)
        return 81;
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (connect(s, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path) + 1 + n) != 0)
        return 82;
    struct raw_req rq = {0x55535452, 1, 1, O_RDWR, 0};
    struct raw_rep rp;
    if (send(s, &rq, sizeof(rq), 0) != sizeof(rq) || recv(s, &rp, sizeof(rp), 0) != sizeof(rp))
        return 83;
    return rp.err == EACCES ? 0 : 84;
}

static int peer_main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char *op = argv[2], *a = argc > 3 ? argv[3] : "", *b = argc > 4 ? argv[4] : NULL,
               *c = argc > 5 ? argv[5] : NULL;
    if (strcmp(op, "open") == 0)
        return peer_open(a);
    if (strcmp(op, "plain") == 0)
        return peer_plain(a);
    if (strcmp(op, "connld") == 0)
        return peer_connld(a, b, c);
    if (strcmp(op, "eacces") == 0)
        return peer_eacces(a);
    if (strcmp(op, "fdetach") == 0)
        return peer_fdetach(a, b, c);
    if (strcmp(op, "attach") == 0)
        return peer_attach(a);
    if (strcmp(op, "perm") == 0)
        return peer_perm(a, b);
    if (strcmp(op, "raw") == 0)
        return peer_raw(a);
    return 99;
}

/* A peer that attached a pipe end to path and waits to be killed (its
 * "attached" line read first); -1 if it failed. */
static pid_t peer_attached(const char *path)
{
    int out[2];
    pid_t pid;
    char line[16] = {0};
    char *argv[] = {"test_xnames", "peer", "attach", (char *)path, NULL};
    posix_spawn_file_actions_t fa;

    if (pipe(out) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    fflush(NULL);
    int r = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (r != 0 || read(out[0], line, sizeof(line) - 1) <= 0 || strncmp(line, "attached", 8) != 0) {
        close(out[0]);
        if (r == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    close(out[0]);
    return pid;
}

/* ------------------------------------------------------------------------ */
/* The cases                                                                */
/* ------------------------------------------------------------------------ */
static void test_x1_errors(void)
{
    char f[PATH_MAX], mine[PATH_MAX];
    int p[2];

    path_of(f, "x1");
    make_file(f, 0644, "plainfile");
    CHECK_EQ(strm_pipe(p), 0);
    char missing[PATH_MAX];
    path_of(missing, "x1-missing");
    CHECK_EQ(fattach(p[0], missing), -1);
    CHECK_EQ(errno, ENOENT);
    /* As another user: not the owner (EPERM); the owner without write
     * permission (EACCES). */
    path_of(mine, "x1-nobody");
    int st;
    CHECK_EQ(peer_wait(peer_spawn("perm", f, mine)), 0);
    unlink(mine);
    /* EBUSY: attached by another process. */
    pid_t pid = peer_attached(f);
    CHECK(pid > 0);
    CHECK_EQ(fattach(p[0], f), -1);
    CHECK_EQ(errno, EBUSY);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

static void test_x2_local(void)
{
    char f[PATH_MAX], link[PATH_MAX], buf[16];
    int p[2];

    path_of(f, "x2");
    path_of(link, "x2-link");
    make_file(f, 0644, "plainfile");
    CHECK_EQ(symlink(f, link), 0);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(fattach(p[1], f), 0);
    CHECK_EQ(fattach(p[0], link), -1); /* the same file */
    CHECK_EQ(errno, EBUSY);
    int fd = strm_open(link, O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(isastream(fd), 1);
    CHECK_EQ(strm_write(fd, "abc", 3), 3);
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 3);
    CHECK_EQ(fdetach(f), 0);
    CHECK_EQ(fdetach(f), -1);
    CHECK_EQ(errno, EINVAL);
    strm_close(fd);
    fd = strm_open(f, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(isastream(fd), 0);
    CHECK_EQ(read(fd, buf, sizeof(buf)), 9);
    strm_close(fd);
    strm_close(p[0]);
    strm_close(p[1]);
    unlink(link);
}

static void test_x3_unrelated(void)
{
    char f[PATH_MAX], cb[16], db[16];
    int p[2], flags = 0;

    path_of(f, "x3");
    make_file(f, 0644, "plainfile");
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(fattach(p[1], f), 0);
    pid_t pid = peer_spawn("open", f, NULL);
    CHECK(pid > 0);
    struct strbuf ctl = {.maxlen = sizeof(cb), .buf = cb}, dat = {.maxlen = sizeof(db), .buf = db};
    CHECK_EQ(getmsg(p[0], &ctl, &dat, &flags), 0);
    CHECK(ctl.len == 1 && cb[0] == 'C' && dat.len == 5 && memcmp(db, "hello", 5) == 0);
    struct strbuf rc = {.len = 2, .buf = "C2"}, rd = {.len = 5, .buf = "reply"};
    CHECK_EQ(putmsg(p[0], &rc, &rd, 0), 0);
    CHECK_EQ(peer_wait(pid), 0);
    CHECK_EQ(fdetach(f), 0);
    CHECK_EQ(peer_wait(peer_spawn("plain", f, NULL)), 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* Serve one connld connection received on p0: "ack:" + what it says. */
static void serve_one(int p0, uid_t *uid)
{
    struct strrecvfd r;
    char buf[64], out[80];
    CHECK_EQ(strm_ioctl(p0, I_RECVFD, &r), 0);
    *uid = r.uid;
    ssize_t n = strm_read(r.fd, buf, sizeof(buf) - 1);
    CHECK(n > 0);
    if (n > 0) {
        buf[n] = '\0';
        snprintf(out, sizeof(out), "ack:%s", buf);
        CHECK_EQ(strm_write(r.fd, out, strlen(out)), (long)strlen(out));
    }
    strm_close(r.fd);
}

static void test_x4_connld(void)
{
    char f[PATH_MAX];
    int p[2];
    uid_t uid[3];

    path_of(f, "x4");
    make_file(f, 0666, "plainfile");
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "connld"), 0);
    CHECK_EQ(fattach(p[1], f), 0);
    pid_t a = peer_spawn("connld", f, "one");
    serve_one(p[0], &uid[0]);
    pid_t b = peer_spawn("connld", f, "two");
    CHECK_EQ(peer_wait(a), 0);
    serve_one(p[0], &uid[1]);
    CHECK_EQ(peer_wait(b), 0);
    char *argv[] = {"test_xnames", "peer", "connld", f, "three", "nobody", NULL};
    pid_t c;
    CHECK_EQ(posix_spawn(&c, "/proc/self/exe", NULL, NULL, argv, environ), 0);
    serve_one(p[0], &uid[2]);
    CHECK_EQ(peer_wait(c), 0);
    CHECK_EQ(uid[0], 0);
    CHECK_EQ(uid[1], 0);
    CHECK_EQ(uid[2], NOBODY);
    /* A client started with fork() and exec: the fork leaves the attached
     * pipe whole in this process, and connld goes on working. */
    char *argv4[] = {"test_xnames", "peer", "connld", f, "four", NULL};
    fflush(NULL);
    pid_t d = fork();
    if (d == 0) {
        execv("/proc/self/exe", argv4);
        _exit(127);
    }
    serve_one(p[0], &uid[0]);
    CHECK_EQ(peer_wait(d), 0);
    /* In this process: a new pipe too. */
    int fd = strm_open(f, O_RDWR), fd2 = strm_open(f, O_RDWR);
    CHECK(fd >= 0 && fd2 >= 0);
    struct strrecvfd r1, r2;
    CHECK_EQ(strm_ioctl(p[0], I_RECVFD, &r1), 0);
    CHECK_EQ(strm_ioctl(p[0], I_RECVFD, &r2), 0);
    CHECK_EQ(strm_write(fd, "x", 1), 1);
    CHECK_EQ(strm_write(fd2, "yy", 2), 2);
    char buf[8];
    CHECK_EQ(strm_read(r1.fd, buf, sizeof(buf)), 1);
    CHECK_EQ(strm_read(r2.fd, buf, sizeof(buf)), 2);
    strm_close(fd);
    strm_close(fd2);
    strm_close(r1.fd);
    strm_close(r2.fd);
    CHECK_EQ(fdetach(f), 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

static void test_x5_security(void)
{
    char f[PATH_MAX];
    int p[2];

    path_of(f, "x5");
    make_file(f, 0600, "plainfile");
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(fattach(p[1], f), 0);
    CHECK_EQ(peer_wait(peer_spawn("eacces", f, NULL)), 0);
    /* Straight at the rendezvous, as nobody: refused by the owner. */
    CHECK_EQ(peer_wait(peer_spawn("raw", f, NULL)), 0);
    CHECK_EQ(fdetach(f), 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

static void test_x6_fdetach_elsewhere(void)
{
    char f[PATH_MAX], eperm[16], cmd[PATH_MAX + 64];
    int st;

    path_of(f, "x6");
    make_file(f, 0666, "plainfile");
    pid_t holder = peer_attached(f);
    CHECK(holder > 0);
    snprintf(eperm, sizeof(eperm), "%d", EPERM);
    char *argv[] = {"test_xnames", "peer", "fdetach", f, eperm, "nobody", NULL};
    pid_t pid;
    CHECK_EQ(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ), 0);
    CHECK_EQ(peer_wait(pid), 0);
    CHECK_EQ(peer_wait(peer_spawn("fdetach", f, "0")), 0); /* the owner (root) may */
    CHECK_EQ(peer_wait(peer_spawn("plain", f, NULL)), 0);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    /* The tool. */
    holder = peer_attached(f);
    CHECK(holder > 0);
    snprintf(cmd, sizeof(cmd), "fdetach %s", f);
    char *out = tool_run("fdetach", f, &st);
    CHECK_EQ(st, 0);
    free(out);
    CHECK_EQ(peer_wait(peer_spawn("plain", f, NULL)), 0);
    out = tool_run("fdetach", f, &st);
    CHECK_EQ(st, 1); /* nothing attached any more */
    free(out);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
}

static void test_x7_stale(void)
{
    char f[PATH_MAX];
    int p[2];

    path_of(f, "x7");
    make_file(f, 0644, "plainfile");
    pid_t holder = peer_attached(f);
    CHECK(holder > 0);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    CHECK_EQ(peer_wait(peer_spawn("plain", f, NULL)), 0);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(fattach(p[1], f), 0);
    CHECK_EQ(fdetach(f), 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

static void test_x8_owner_dies(void)
{
    char f[PATH_MAX], buf[8];
    struct timespec t0, t1;

    path_of(f, "x8");
    make_file(f, 0644, "plainfile");
    pid_t holder = peer_attached(f);
    CHECK(holder > 0);
    int fd = strm_open(f, O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(isastream(fd), 1);
    CHECK_EQ(strm_write(fd, "x", 1), 1); /* to the holder's other end: nobody reads */
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
    strm_close(fd);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "peer") == 0)
        return peer_main(argc, argv);
    if (geteuid() != 0) {
        printf("test_xnames: needs root (it switches users to test permissions): skipped\n");
        return 77;
    }
    tool_run_init(argv[0]);
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0777), 0); /* nobody makes files here too */
    signal(SIGPIPE, SIG_IGN);
    peer_deadline(120);
    test_x1_errors();
    test_x2_local();
    test_x3_unrelated();
    test_x4_connld();
    test_x5_security();
    test_x6_fdetach_elsewhere();
    test_x7_stale();
    test_x8_owner_dies();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
