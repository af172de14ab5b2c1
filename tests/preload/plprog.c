/* SPDX-License-Identifier: MIT */
/*
 * plprog.c -- a C program built WITHOUT libustreams (only include/ for the
 * constants), run by tests/test_preload_run.c under `ustreams run` (issue
 * 22 item 1).  putmsg/getmsg/isastream are weak references: the preload's
 * definitions resolve them at run time.  Modes (argv[1]):
 *   echo   open/write/read/ioctl (I_PUSH, I_LOOK, I_NREAD, I_STR)/poll/
 *          select/epoll/dup2/fcntl/close on an echo stream
 *   pipe   pipe(2) under --pipes is a STREAMS pipe: putmsg/getmsg with
 *          bands, message boundaries, every message counted
 *   plain  not a stream: a regular file, a kernel pipe, a socket pair work
 *          unchanged; EBADF on a closed descriptor
 *   many   many streams opened and closed with close(2), between plain
 *          files: the library's own descriptors are never taken for them
 *   stdio  fdopen + fputs/fgets on an echo stream (docs/PROGRAMS.md)
 *   isastream0  prints isastream(0) and what one read of stdin gave
 *   spawn  (--pipes) posix_spawnp of cat with a STREAMS pipe end moved to
 *          its stdin by a file action; 1000 lines through it
 * Exit 0 when every check holds; a failed check prints its line.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma weak putmsg
#pragma weak getmsg
#pragma weak putpmsg
#pragma weak getpmsg
#pragma weak isastream

static int failed;
#define CK(c)                                                                                    \
    do {                                                                                         \
        if (!(c)) {                                                                              \
            fprintf(stderr, "plprog %s:%d: %s (errno %d %s)\n", mode, __LINE__, #c, errno,      \
                    strerror(errno));                                                            \
            failed++;                                                                            \
        }                                                                                        \
    } while (0)

static const char *mode = "";

static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void do_echo(void)
{
    char buf[64];
    int fd = open("/dev/streams/clone/echo", O_RDWR);
    CK(fd >= 0);
    CK(isastream != NULL && isastream(fd) == 1);
    CK(ioctl(fd, I_PUSH, "nullmod") == 0);
    CK(ioctl(fd, I_LOOK, buf) == 0 && strcmp(buf, "nullmod") == 0);
    CK(write(fd, "abcdef", 6) == 6);
    CK(readable(fd, 5000));
    int n = -1;
    CK(ioctl(fd, I_NREAD, &n) == 1 && n == 6); /* one message of 6 bytes */
    CK(read(fd, buf, sizeof(buf)) == 6 && memcmp(buf, "abcdef", 6) == 0);
    CK(!readable(fd, 20));
    /* I_STR: an ioctl the echo driver does not know fails with its error,
     * not the kernel's (it reached the stream). */
    struct strioctl sc = {.ic_cmd = 12345, .ic_timout = 5, .ic_len = 0, .ic_dp = NULL};
    errno = 0;
    CK(ioctl(fd, I_STR, &sc) == -1 && errno != ENOTSOCK && errno != EBADF);
    /* select */
    CK(write(fd, "x", 1) == 1);
    fd_set r, w;
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(fd, &r);
    FD_SET(fd, &w);
    struct timeval tv = {5, 0};
    CK(select(fd + 1, &r, &w, NULL, &tv) == 2 && FD_ISSET(fd, &r) && FD_ISSET(fd, &w));
    CK(read(fd, buf, 1) == 1 && buf[0] == 'x');
    /* epoll: the descriptor's kernel readiness */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, out;
    CK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
    CK(write(fd, "yz", 2) == 2);
    CK(epoll_wait(ep, &out, 1, 5000) == 1 && out.data.fd == fd);
    CK(read(fd, buf, sizeof(buf)) == 2);
    close(ep);
    /* dup2 and fcntl */
    int d = dup2(fd, 40);
    CK(d == 40 && isastream(40) == 1);
    int fl = fcntl(40, F_GETFL);
    CK(fl >= 0 && (fl & O_ACCMODE) == O_RDWR && !(fl & O_NONBLOCK));
    CK(fcntl(40, F_SETFL, fl | O_NONBLOCK) == 0);
    CK(fcntl(fd, F_GETFL) & O_NONBLOCK); /* the stream's flag */
    errno = 0;
    CK(read(40, buf, sizeof(buf)) == -1 && errno == EAGAIN);
    CK(write(40, "dup", 3) == 3);
    CK(readable(fd, 5000) && read(fd, buf, sizeof(buf)) == 3 && memcmp(buf, "dup", 3) == 0);
    int d2 = dup(fd);
    CK(d2 > 0 && isastream(d2) == 1);
    CK(close(d2) == 0 && close(40) == 0);
    CK(close(fd) == 0);
    errno = 0;
    CK(write(fd, "x", 1) == -1 && errno == EBADF);
    errno = 0;
    CK(close(fd) == -1 && errno == EBADF);
}

static void do_pipe(void)
{
    int p[2];
    CK(pipe(p) == 0);
    CK(isastream != NULL && isastream(p[0]) == 1 && isastream(p[1]) == 1);
    CK(putmsg != NULL && getmsg != NULL && putpmsg != NULL && getpmsg != NULL);
    if (failed)
        return;
    enum { N = 200 };
    int sent = 0, got = 0, bands = 0;
    char ctl[32], data[64];
    for (int i = 0; i < N; i++) {
        struct strbuf c = {.len = snprintf(ctl, sizeof(ctl), "c%d", i), .buf = ctl};
        struct strbuf dd = {.len = snprintf(data, sizeof(data), "data-%d", i), .buf = data};
        int band = i % 3 == 0 ? 1 : 0;
        if (band ? putpmsg(p[1], &c, &dd, band, MSG_BAND) == 0 : putmsg(p[1], &c, &dd, 0) == 0)
            sent++;
        struct strbuf rc = {.maxlen = sizeof(ctl), .buf = ctl};
        struct strbuf rd = {.maxlen = sizeof(data), .buf = data};
        int b = 0, fl = MSG_ANY;
        char want[64];
        int wl = snprintf(want, sizeof(want), "data-%d", i);
        if (getpmsg(p[0], &rc, &rd, &b, &fl) == 0 && rd.len == wl && memcmp(data, want, wl) == 0 &&
            rc.len == snprintf(want, sizeof(want), "c%d", i) && memcmp(ctl, want, rc.len) == 0) {
            got++;
            bands += b == band;
        }
    }
    CK(sent == N && got == N && bands == N);
    /* boundaries with write/read: two writes, two reads in message mode */
    CK(ioctl(p[0], I_SRDOPT, RMSGD) == 0);
    CK(write(p[1], "one", 3) == 3 && write(p[1], "three", 5) == 5);
    CK(read(p[0], data, sizeof(data)) == 3 && read(p[0], data, sizeof(data)) == 5);
    /* the other way: a STREAMS pipe is full duplex */
    CK(write(p[0], "back", 4) == 4 && readable(p[1], 5000) && read(p[1], data, 64) == 4);
    CK(close(p[1]) == 0);
    CK(readable(p[0], 5000) && read(p[0], data, sizeof(data)) == 0); /* hang-up: end of file */
    CK(close(p[0]) == 0);
}

static void do_plain(void)
{
    char path[] = "/tmp/plprogXXXXXX", buf[32];
    int f = mkstemp(path);
    CK(f >= 0);
    CK(isastream(f) == 0);
    CK(write(f, "file", 4) == 4 && lseek(f, 0, SEEK_SET) == 0 && read(f, buf, 32) == 4);
    CK(close(f) == 0);
    f = open(path, O_RDONLY);
    CK(f >= 0 && read(f, buf, 32) == 4 && memcmp(buf, "file", 4) == 0 && close(f) == 0);
    f = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    CK(f == -1 && errno == EEXIST);
    unlink(path);
    int p[2];
    CK(pipe(p) == 0 && isastream(p[0]) == 0);
    CK(write(p[1], "kp", 2) == 2 && readable(p[0], 1000) && read(p[0], buf, 32) == 2);
    int fl = fcntl(p[0], F_GETFL);
    CK(fl >= 0 && fcntl(p[0], F_SETFL, fl | O_NONBLOCK) == 0);
    errno = 0;
    CK(read(p[0], buf, 32) == -1 && errno == EAGAIN);
    int nb = -1;
    CK(ioctl(p[0], FIONREAD, &nb) == 0 && nb == 0);
    CK(close(p[0]) == 0 && close(p[1]) == 0);
    int s[2];
    CK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    CK(write(s[0], "sock", 4) == 4 && read(s[1], buf, 32) == 4);
    CK(dup2(s[1], 50) == 50 && write(s[0], "2", 1) == 1 && read(50, buf, 32) == 1);
    CK(close(50) == 0 && close(s[0]) == 0 && close(s[1]) == 0);
    errno = 0;
    CK(read(s[1], buf, 1) == -1 && errno == EBADF);
    errno = 0;
    CK(close(s[1]) == -1 && errno == EBADF);
    errno = 0;
    CK(ioctl(s[1], FIONREAD, &nb) == -1 && errno == EBADF);
    errno = 0;
    CK(open("/nonexistent/x", O_RDONLY) == -1 && errno == ENOENT);
    errno = 0;
    CK(open("/dev/streams/nosuchdriver", O_RDWR) == -1 && errno == ENOENT);
    int dn = open("/dev/null", O_RDWR);
    CK(dn >= 0 && isastream(dn) == 0 && close(dn) == 0);
}

static void do_many(void)
{
    enum { ROUNDS = 20, K = 40 };
    int fds[K], opened = 0, closed = 0, plain = 0;
    char buf[8];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < K; i++) {
            fds[i] = i % 4 == 3 ? open("/dev/null", O_RDONLY) : open("/dev/streams/clone/echo", O_RDWR);
            if (fds[i] >= 0 && i % 4 != 3 && isastream(fds[i]) == 1)
                opened++;
            if (fds[i] >= 0 && i % 4 == 3 && isastream(fds[i]) == 0)
                plain++;
        }
        for (int i = 0; i < K; i += 2) /* close(2), half in order ... */
            closed += close(fds[i]) == 0;
        for (int i = K - 1; i > 0; i -= 2) /* ... half in reverse */
            closed += close(fds[i]) == 0;
    }
    CK(opened == ROUNDS * K / 4 * 3 && plain == ROUNDS * K / 4 && closed == ROUNDS * K);
    /* still works after all that */
    int fd = open("/dev/streams/clone/echo", O_RDWR);
    CK(fd >= 0 && write(fd, "ok", 2) == 2 && readable(fd, 5000) && read(fd, buf, 8) == 2);
    CK(close(fd) == 0);
    /* no stream left behind: the descriptors now open are few */
    int n = 0;
    for (int i = 0; i < 1024; i++)
        n += fcntl(i, F_GETFD) >= 0;
    CK(n < 16);
}

/* posix_spawn of cat on a STREAMS pipe (under --pipes): the read end moved
 * to 0 by a file action; 1000 lines written after the spawn and 10 before
 * it (queued in this process at the spawn: they stay here, the relay... no:
 * the pipe is split, they are in the ring) all come out of cat. */
static void do_spawn(void)
{
    int p[2];
    CK(pipe(p) == 0);
    CK(isastream(p[0]) == 1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[0], 0);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    char *argv[] = {"cat", NULL};
    extern char **environ;
    pid_t pid;
    fflush(stdout);
    CK(posix_spawnp(&pid, "cat", &fa, NULL, argv, environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    close(p[0]);
    char line[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(line, sizeof(line), "spawned %d\n", i);
        CK(write(p[1], line, (size_t)n) == n);
    }
    close(p[1]);
    int st = 0;
    CK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void do_stdio(void)
{
    int fd = open("/dev/streams/clone/echo", O_RDWR);
    CK(fd >= 0);
    FILE *f = fdopen(fd, "r+");
    CK(f != NULL);
    char line[64] = "";
    CK(fputs("through stdio\n", f) >= 0 && fflush(f) == 0);
    CK(fgets(line, sizeof(line), f) != NULL && strcmp(line, "through stdio\n") == 0);
    CK(fclose(f) == 0);
    printf("stdio: fgets read \"%.*s\"\n", (int)strcspn(line, "\n"), line);
}

int main(int argc, char **argv)
{
    mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "echo") == 0)
        do_echo();
    else if (strcmp(mode, "pipe") == 0)
        do_pipe();
    else if (strcmp(mode, "plain") == 0)
        do_plain();
    else if (strcmp(mode, "many") == 0)
        do_many();
    else if (strcmp(mode, "stdio") == 0)
        do_stdio();
    else if (strcmp(mode, "spawn") == 0)
        do_spawn();
    else if (strcmp(mode, "isastream0") == 0) { /* stdin a stream, what it reads */
        char buf[16];
        ssize_t n = read(0, buf, sizeof(buf));
        printf("isastream(0) = %d, read %zd\n", isastream(0), n);
        return 0;
    }
    else {
        fprintf(stderr, "usage: plprog echo|pipe|plain|many|stdio\n");
        return 2;
    }
    if (!failed)
        printf("plprog %s: ok\n", mode);
    return failed ? 1 : 0;
}
