/* SPDX-License-Identifier: MIT */
/*
 * test_log_slots.c -- one logger of each class (issue 21 item 13).
 *
 * References: log(7) (SVR4: "at most one trace logger and one error logger
 * can be active at a time"; Solaris log(7D), the console logger likewise).
 * The errno is EBUSY (as illumos' log driver; SVR4 and Linux Fast-STREAMS
 * say ENXIO), the choice written in docs/ADMIN.md.
 *   S.1 per class (I_ERRLOG, I_TRCLOG, I_CONSLOG): a second stream is
 *       refused EBUSY; the same stream again succeeds; one stream may hold
 *       every class; closing it frees them all
 *   S.2 across processes: while a child holds each class, the parent's
 *       ioctls fail EBUSY; once the child closes its logger (and once a
 *       child that held them dies without closing) the parent takes them
 *   S.3 a fork child inherits no logger slot: the parent keeps its classes
 *       when the child exits, and the child cannot take them
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/strlog.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "log_util.h"

#define LOGDEV "/dev/streams/log"

static const struct trace_ids T_ALL = {-1, -1, (char)-1};
static const int cmds[3] = {I_ERRLOG, I_TRCLOG, I_CONSLOG};

static int take(int fd, int cmd)
{
    struct strioctl sio = {cmd, 0, 0, NULL};
    if (cmd == I_TRCLOG) {
        sio.ic_len = sizeof(T_ALL);
        sio.ic_dp = (char *)&T_ALL;
    }
    return strm_ioctl(fd, I_STR, &sio);
}

/* S.1 */
static void test_per_class(void)
{
    for (int k = 0; k < 3; k++) {
        int a = strm_open(LOGDEV, O_RDWR), b = strm_open(LOGDEV, O_RDWR);
        CHECK_EQ(take(a, cmds[k]), 0);
        CHECK_EQ(take(a, cmds[k]), 0); /* same stream again */
        errno = 0;
        CHECK_EQ(take(b, cmds[k]), -1);
        CHECK_EQ(errno, EBUSY);
        strm_close(a);
        CHECK_EQ(take(b, cmds[k]), 0); /* freed by the close */
        strm_close(b);
    }
    int a = strm_open(LOGDEV, O_RDWR), b = strm_open(LOGDEV, O_RDWR);
    for (int k = 0; k < 3; k++)
        CHECK_EQ(take(a, cmds[k]), 0);
    for (int k = 0; k < 3; k++) {
        errno = 0;
        CHECK_EQ(take(b, cmds[k]), -1);
        CHECK_EQ(errno, EBUSY);
    }
    strm_close(a);
    for (int k = 0; k < 3; k++)
        CHECK_EQ(take(b, cmds[k]), 0);
    strm_close(b);
}

/* S.2: the child takes every class, says so on a pipe, waits for a byte,
 * closes (or, with arg set, dies holding them). */
struct holder {
    int ready[2], go[2];
    int die;
};

static int child_holder(void *arg)
{
    struct holder *h = arg;
    char c = 0;
    int fd = strm_open(LOGDEV, O_RDWR);
    for (int k = 0; k < 3; k++)
        CHECK_EQ(take(fd, cmds[k]), 0);
    CHECK_EQ(write(h->ready[1], "r", 1), 1);
    CHECK_EQ(read(h->go[0], &c, 1), 1);
    if (h->die)
        kill(getpid(), SIGKILL); /* the kernel frees the slots */
    strm_close(fd);
    return 0;
}

static void across(int die)
{
    struct holder h = {.die = die};
    char c;
    int fd = strm_open(LOGDEV, O_RDWR);

    CHECK_EQ(pipe(h.ready), 0);
    CHECK_EQ(pipe(h.go), 0);
    pid_t pid = fk_start(child_holder, &h);
    CHECK_EQ(read(h.ready[0], &c, 1), 1);
    for (int k = 0; k < 3; k++) {
        errno = 0;
        CHECK_EQ(take(fd, cmds[k]), -1);
        CHECK_EQ(errno, EBUSY);
    }
    CHECK_EQ(write(h.go[1], "g", 1), 1);
    int rc = fk_wait(pid, 10000);
    CHECK_EQ(rc, die ? FK_DIED : 0);
    for (int k = 0; k < 3; k++)
        CHECK_EQ(take(fd, cmds[k]), 0);
    strm_close(fd);
    close(h.ready[0]);
    close(h.ready[1]);
    close(h.go[0]);
    close(h.go[1]);
}

/* S.3 */
static int child_cannot(void *arg)
{
    (void)arg;
    int fd = strm_open(LOGDEV, O_RDWR);
    for (int k = 0; k < 3; k++) {
        errno = 0;
        CHECK_EQ(take(fd, cmds[k]), -1);
        CHECK_EQ(errno, EBUSY);
    }
    strm_close(fd);
    return 0;
}

static void test_fork_keeps(void)
{
    int fd = strm_open(LOGDEV, O_RDWR), other = strm_open(LOGDEV, O_RDWR);
    for (int k = 0; k < 3; k++)
        CHECK_EQ(take(fd, cmds[k]), 0);
    CHECK_EQ(fk_wait(fk_start(child_cannot, NULL), 10000), 0);
    for (int k = 0; k < 3; k++) {
        errno = 0;
        CHECK_EQ(take(other, cmds[k]), -1); /* still this stream's */
        CHECK_EQ(errno, EBUSY);
    }
    strm_close(fd);
    strm_close(other);
}

int main(void)
{
    log_private_rundir();
    test_per_class();
    across(0);
    across(1);
    test_fork_keeps();
    ustreams_quiesce(5000);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
