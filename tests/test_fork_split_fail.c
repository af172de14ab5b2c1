/* SPDX-License-Identifier: MIT */
/*
 * test_fork_split_fail.c -- a pipe that fork() cannot split is never silent
 * (issue 20, row K; src/head/sd_pipe.c ust_pipe_split_all; docs/STREAMHEAD.md
 * "A pipe that cannot be split").
 *
 *   F.1  with RLIMIT_NOFILE lowered so that no descriptor can be made, a
 *        fork of a process holding a STREAMS pipe succeeds; then
 *        - in the child, both inherited ends fail with EIO (read, write,
 *          I_NREAD) and strm_poll reports POLLERR; the child sees the
 *          failure counted too (the counter is inherited);
 *        - in the parent, ust_pipe_split_failures() went up by exactly one,
 *          the error logger (I_ERRLOG, opened before) got one message that
 *          says why, and the pipe still works as an in-process pipe (data
 *          both ways); `ustreams strinfo -P` shows "pipes split_failed=1"
 *          in this process's section.
 *   F.2  the limit restored, the next fork splits the same pipe: the child
 *        writes on its end and the parent reads it; the counter is
 *        unchanged.
 *   The limit is restored in both processes right after the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/resource.h>
#include <sys/strlog.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "log_util.h"
#include "fork_util.h"
#include "sthead.h"
#include "tool_run.h"

#define MAXFILL 4096

static int fds[2];
static long count_before;
static struct rlimit saved;

/* Lower RLIMIT_NOFILE to the highest descriptor in use + 1 and fill every
 * hole below it: no new descriptor can be made.  The fillers in fill[],
 * their number returned. */
static int starve(int fill[MAXFILL])
{
    struct rlimit rl;
    int hi = 0, n = 0;

    CHECK(getrlimit(RLIMIT_NOFILE, &saved) == 0);
    for (int fd = 0; fd < 65536 && fd < (int)saved.rlim_cur; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            hi = fd;
    rl = saved;
    rl.rlim_cur = (rlim_t)hi + 1;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    while (n < MAXFILL) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break;
        fill[n++] = fd;
    }
    CHECK(n < MAXFILL);
    CHECK(open("/dev/null", O_RDONLY) < 0 && errno == EMFILE);
    return n;
}

static void unstarve(int fill[MAXFILL], int n)
{
    CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);
    for (int i = 0; i < n; i++)
        close(fill[i]);
}

/* F.1, in the child: the inherited ends are EIO, and the failure counted. */
static int child_eio(void *arg)
{
    char buf[8];
    int n = 0;
    struct pollfd p = {.fd = fds[0], .events = POLLIN};

    (void)arg;
    CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);
    for (int i = 0; i < 2; i++) {
        errno = 0;
        CHECK_EQ(strm_write(fds[i], "x", 1), -1);
        CHECK_EQ(errno, EIO);
        errno = 0;
        CHECK_EQ(strm_read(fds[i], buf, sizeof(buf)), -1);
        CHECK_EQ(errno, EIO);
        errno = 0;
        CHECK_EQ(strm_ioctl(fds[i], I_NREAD, &n), -1);
        CHECK_EQ(errno, EIO);
    }
    CHECK_EQ(strm_poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLERR);
    CHECK_EQ(ust_pipe_split_failures(), count_before + 1);
    return 0;
}

/* F.2, in the child: the pipe was split this time; write on the child's end. */
static int child_split(void *arg)
{
    (void)arg;
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_write(fds[1], "split", 5), 5);
    CHECK_EQ(strm_close(fds[1]), 0);
    return 0;
}

/* The error logger's next message text in text, waiting up to ms: 1, or 0. */
static int read_log(int lfd, char *text, size_t n, int ms)
{
    struct log_ctl lc;
    char data[LOGMSGSZ + 4];
    struct strbuf ctl = {sizeof(lc), 0, (char *)&lc};
    struct strbuf dat = {sizeof(data), 0, data};
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int flags = 0;

    if (strm_poll(&p, 1, ms) != 1 || getmsg(lfd, &ctl, &dat, &flags) < 0 || dat.len <= 0)
        return 0;
    snprintf(text, n, "%.*s", dat.len, data);
    return 1;
}

int main(int argc, char **argv)
{
    static int fill[MAXFILL];
    char buf[64], line[256] = "", key[64];
    int lfd, nfill, st;

    (void)argc;
    log_private_rundir(); /* its error logger meets no other test's */
    tool_run_init(argv[0]);
    lfd = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
    CHECK(lfd >= 0);
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    CHECK_EQ(strm_ioctl(lfd, I_STR, &sio), 0);
    CHECK_EQ(strm_pipe(fds), 0);
    count_before = ust_pipe_split_failures();

    /* F.1 */
    nfill = starve(fill);
    st = fk_run(child_eio, NULL, 20000);
    unstarve(fill, nfill);
    CHECK_EQ(st, 0);
    CHECK_EQ(ust_pipe_split_failures(), count_before + 1);
    CHECK(read_log(lfd, line, sizeof(line), 2000));
    printf("logged: %s\n", line);
    CHECK(strstr(line, "1 pipe(s) could not be split") != NULL);
    CHECK(strstr(line, "EIO in the child") != NULL);
    /* the parent's pipe: in-process, both ways */
    CHECK_EQ(strm_write(fds[0], "ab", 2), 2);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 2);
    CHECK_EQ(strm_write(fds[1], "cd", 2), 2);
    CHECK_EQ(strm_read(fds[0], buf, sizeof(buf)), 2);
    CHECK(memcmp(buf, "cd", 2) == 0);
    /* visible to the administrator */
    char *out = tool_run("strinfo", "-P", &st);
    CHECK(out != NULL);
    snprintf(key, sizeof(key), "process %ld ", (long)getpid());
    if (out != NULL) {
        char *sec = strstr(out, key);
        CHECK(sec != NULL);
        CHECK(sec != NULL && find_line(sec, "pipes split_failed=1", line, sizeof(line)));
        if (sec == NULL || !find_line(sec, "pipes split_failed=1", line, sizeof(line)))
            fprintf(stderr, "strinfo -P said:\n%s", out);
        free(out);
    }

    /* F.2 */
    st = fk_run(child_split, NULL, 20000);
    CHECK_EQ(st, 0);
    CHECK_EQ(strm_read(fds[0], buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "split", 5) == 0);
    CHECK_EQ(ust_pipe_split_failures(), count_before + 1);

    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
    CHECK_EQ(strm_close(lfd), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
