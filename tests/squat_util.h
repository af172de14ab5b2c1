/* SPDX-License-Identifier: MIT */
/*
 * squat_util.h -- the squatter of the rendezvous tests (docs/SECURITY.md,
 * rows B, I, N, R): a fork child that became nobody (hostile_util.h) and
 * holds the base rendezvous name of a name (fattach 'n', named FIFO 'f')
 * before its owner; it accepts and reads whatever connects, and reports
 * what it got when told to end.
 *
 *   base_name(a, kind, path)       the base rendezvous name of path's node
 *                                  ("\0ustreams/<kind>/<dev>:<ino>"), its
 *                                  length (0: no such path)
 *   squat_as(q, kind, path, ndecoy, listens)
 *                                  fork the squatter on that name, listening
 *                                  or only bound; ndecoy more listeners at
 *                                  made-up alternative names, backlogs full
 *   squat(q, kind, path, ndecoy)   the same, listening
 *   squat_end(q, &bytes, &fds)     end it: the bytes it received and the
 *                                  messages that carried descriptors
 */
#ifndef UST_TEST_SQUAT_UTIL_H
#define UST_TEST_SQUAT_UTIL_H

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hostile_util.h"
#include "peer_spawn.h"

/* The base rendezvous name of (kind, path) into a: its length, 0 if no path. */
static inline socklen_t base_name(struct sockaddr_un *a, char kind, const char *path)
{
    struct stat st;
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    if (stat(path, &st) != 0)
        return 0;
    int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "ustreams/%c/%llx:%llx", kind,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

struct squatter {
    pid_t pid;
    int ctl;    /* close it: the squatter reports and exits */
    int report; /* "bytes fds" */
};

/* The squatter's loop: accept on ls, read everything that comes, count it;
 * when ctl is readable, write "bytes fds" to out. */
static inline void squat_loop(int ls, int ctl, int out)
{
    long bytes = 0, fds = 0;
    int conns[256], nc = 0;
    for (;;) {
        struct pollfd pf[2] = {{ls, POLLIN, 0}, {ctl, POLLIN, 0}};
        poll(pf, 2, 10);
        if (pf[1].revents)
            break;
        int c = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
        if (c >= 0 && nc < 256)
            conns[nc++] = c;
        for (int i = 0; i < nc; i++) {
            char buf[256];
            union {
                struct cmsghdr h;
                char b[CMSG_SPACE(8 * sizeof(int))];
            } u;
            struct iovec iov = {buf, sizeof(buf)};
            struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                                .msg_controllen = sizeof(u.b)};
            ssize_t n = recvmsg(conns[i], &mh, MSG_DONTWAIT);
            if (n > 0)
                bytes += n;
            if (n >= 0 && mh.msg_controllen > 0)
                fds++;
        }
    }
    dprintf(out, "%ld %ld\n", bytes, fds);
}

/* Fork a squatter on (kind, path)'s base name, with ndecoy more listeners
 * at made-up alternative names, their backlogs full: 0, or -1. */
static inline int squat_as(struct squatter *q, char kind, const char *path, int ndecoy, int listens)
{
    int ctl[2], rep[2], ready[2];
    struct sockaddr_un a;
    socklen_t al = base_name(&a, kind, path);
    q->pid = -1;
    q->ctl = q->report = -1;
    if (al == 0 || pipe(ctl) != 0 || pipe(rep) != 0 || pipe(ready) != 0)
        return -1;
    q->pid = fork();
    if (q->pid == 0) {
        close(ctl[1]);
        close(rep[0]);
        close(ready[0]);
        if (hostile_become() != 0)
            _exit(1);
        int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
        if (bind(ls, (struct sockaddr *)&a, al) != 0 || (listens && listen(ls, 64) != 0))
            _exit(2);
        for (int i = 0; i < ndecoy; i++) {
            struct sockaddr_un d = a;
            size_t l = strlen(a.sun_path + 1);
            snprintf(d.sun_path + 1 + l, sizeof(d.sun_path) - 1 - l, "/%016x", 0x5eed0000u + i);
            socklen_t dl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l + 17);
            int ds = socket(AF_UNIX, SOCK_SEQPACKET, 0);
            if (ds < 0 || bind(ds, (struct sockaddr *)&d, dl) != 0 || listen(ds, 0) != 0)
                _exit(3);
            for (int k = 0; k < 2; k++) { /* fill its backlog */
                int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
                if (c >= 0 && connect(c, (struct sockaddr *)&d, dl) != 0)
                    close(c);
            }
        }
        (void)!write(ready[1], "r", 1);
        if (listens) {
            squat_loop(ls, ctl[0], rep[1]);
        } else { /* nothing to accept: hold the name until told */
            char c;
            (void)!read(ctl[0], &c, 1);
            dprintf(rep[1], "0 0\n");
        }
        _exit(0);
    }
    close(ctl[0]);
    close(rep[1]);
    close(ready[1]);
    char c;
    int ok = read(ready[0], &c, 1) == 1;
    close(ready[0]);
    q->ctl = ctl[1];
    q->report = rep[0];
    return ok ? 0 : -1;
}

static inline int squat(struct squatter *q, char kind, const char *path, int ndecoy)
{
    return squat_as(q, kind, path, ndecoy, 1);
}

/* End the squatter: what it received (bytes, messages with descriptors). */
static inline void squat_end(struct squatter *q, long *bytes, long *fds)
{
    char buf[64] = {0};
    close(q->ctl);
    *bytes = *fds = -1;
    if (read(q->report, buf, sizeof(buf) - 1) > 0)
        sscanf(buf, "%ld %ld", bytes, fds);
    close(q->report);
    if (q->pid > 0)
        waitpid(q->pid, NULL, 0);
}

/* buf (PATH_MAX) = d/leaf; a path too long aborts the test. */
static inline void path_of(char *buf, const char *d, const char *leaf)
{
    size_t dl = strlen(d), ll = strlen(leaf);
    if (dl + 1 + ll >= PATH_MAX)
        abort();
    memcpy(buf, d, dl);
    buf[dl] = '/';
    memcpy(buf + dl + 1, leaf, ll + 1);
}

/* The start of a hostile test's main, after its peer dispatch: 77 (skip,
 * reported) when this process cannot become another user; else the scratch
 * directory made from the template dir (0755: peers of other users reach
 * it), SIGPIPE ignored, the whole test bounded by peer_deadline, 0. */
static inline int squat_test_start(char *dir, const char *what)
{
    if (!hostile_can_switch()) {
        hostile_skip(what);
        return 77;
    }
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0755), 0);
    signal(SIGPIPE, SIG_IGN);
    peer_deadline(150);
    return 0;
}

/* The end of it: the scratch directory removed; the test's result. */
static inline int squat_test_end(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    return CHECK_RESULT();
}

#endif /* UST_TEST_SQUAT_UTIL_H */
