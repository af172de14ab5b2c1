/* SPDX-License-Identifier: MIT */
/*
 * peer_spawn.h -- run this test program again as an unrelated process
 * ("/proc/self/exe peer ARGS..."), for the tests of streams reached by name
 * from other processes (test_xnames.c, test_xfifo.c).  The peer inherits no
 * stream; it finds what it uses by its path.
 */
#ifndef UST_TEST_PEER_SPAWN_H
#define UST_TEST_PEER_SPAWN_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

extern char **environ;

/* Start "/proc/self/exe peer a1 a2 a3" (NULLs end the list early): its pid,
 * or -1. */
static inline pid_t peer_spawn(const char *a1, const char *a2, const char *a3)
{
    char *argv[] = {"peer-of-test", "peer", (char *)a1, (char *)a2, (char *)a3, NULL};
    pid_t pid;
    fflush(NULL);
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0)
        return -1;
    return pid;
}

/* The peer's exit status; 255 when it was killed, or still ran after 30 s
 * (it is killed then). */
static inline int peer_wait(pid_t pid)
{
    int st;
    for (int i = 0; i < 3000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return 255;
}

/* A peer's "read PATH TEXT": strm_open O_RDONLY, TEXT must come.  0, or
 * 10 (the open failed), 11 (not the text), 12 (the close failed). */
static inline int peer_read_text(const char *path, const char *text)
{
    char buf[64] = {0};
    int fd = strm_open(path, O_RDONLY);
    if (fd < 0)
        return 10;
    ssize_t n = strm_read(fd, buf, sizeof(buf) - 1);
    if (n != (ssize_t)strlen(text) || strcmp(buf, text) != 0)
        return 11;
    return strm_close(fd) == 0 ? 0 : 12;
}

/* A peer's "write PATH TEXT": strm_open O_WRONLY, write TEXT ("-": nothing).
 * 0, or 20 (the open failed; 21: EAGAIN), 22 (the write), 23 (the close). */
static inline int peer_write_text(const char *path, const char *text)
{
    int fd = strm_open(path, O_WRONLY);
    if (fd < 0)
        return 20 + (errno == EAGAIN);
    if (strcmp(text, "-") != 0 && strm_write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        return 22;
    return strm_close(fd) == 0 ? 0 : 23;
}

static inline void peer_deadline_hit(int sig)
{
    (void)sig;
    static const char m[] = "timed out (a peer failed?)\n";
    (void)!write(2, m, sizeof(m) - 1);
    _exit(1);
}

/* A peer that fails can leave a blocking open waiting for ever: end the
 * test after s seconds with a report instead of ctest's timeout. */
static inline void peer_deadline(unsigned s)
{
    signal(SIGALRM, peer_deadline_hit);
    alarm(s);
}

#endif /* UST_TEST_PEER_SPAWN_H */
