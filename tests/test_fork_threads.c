/* SPDX-License-Identifier: MIT */
/*
 * test_fork_threads.c -- fork() of a process whose library threads run
 * (issue 9, defect 3 (b) and (c); docs/STREAMHEAD.md "fork").
 *
 *   F.1  Services in the child.  The parent uses echo, srvmod (service
 *        procedures on the scheduler threads), SNDHOLD (the hold timer),
 *        timeout(9F) and bufcall(9F), so their threads exist; then it forks.
 *        The child, which has none of those threads, must get them on first
 *        need: echo answers, srvmod passes every message in order, a held
 *        write is sent by the hold timer, a timeout and a bufcall fire; the
 *        child ends with no block outstanding.  Done twice (the grandchild
 *        of a child too; ust_fork_generation counts 0, 1, 2 down the line,
 *        and ust_getpid, cached per generation, is each process's own).
 *   F.2  Inherited streams other than pipes are detached in the child: with
 *        a message queued on echo, the child's calls on the inherited
 *        descriptor fail with EIO (read, write, readv, writev, getmsg,
 *        putmsg, getpmsg, ioctl, fcntl F_GETFL), strm_poll reports POLLERR,
 *        isastream says 1, strm_close succeeds and runs no close procedure,
 *        after which the number is EBADF; a new pipe works, and no block is
 *        outstanding in the child.  A pipe crosses the fork (sd_xpipe.c;
 *        test_xpipe_fork has the rest): with messages queued both ways and
 *        srvmod pushed before the fork, the child's end shows nothing queued
 *        and no module (both stay the parent's), and what the child writes
 *        reaches the parent after the parent's own queued messages.  The
 *        parent then still finds every message, in order, and its
 *        descriptors still show POLLIN to the kernel's poll (no readiness
 *        token was taken by the child), and its streams close cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stropts.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "strcore.h"

#define CHILD_MS 20000 /* a child that takes longer is hung */

static atomic_int fired;

static void set_fired(void *arg)
{
    atomic_fetch_add(&fired, (int)(long)arg);
}

static int wait_fired(int want)
{
    for (int i = 0; i < 5000 && atomic_load(&fired) < want; i++)
        fk_sleep_ms(1);
    return atomic_load(&fired) >= want;
}

/* Read the next strlen(want) bytes (byte-stream mode) and compare, waiting
 * up to 5 s for them. */
static int read_is(int fd, const char *want)
{
    struct pollfd p = {fd, POLLIN, 0};
    char buf[256];
    if (strm_poll(&p, 1, 5000) != 1)
        return 0;
    ssize_t n = strm_read(fd, buf, strlen(want));
    return n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0;
}

/* Everything F.1 uses, in this process.  Returns 0 when all worked. */
static int use_services(void)
{
    char msg[32];
    int fds[2];
    int echo = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(echo >= 0);
    CHECK_EQ(strm_write(echo, "ping", 4), 4);
    CHECK(read_is(echo, "ping"));
    CHECK_EQ(strm_close(echo), 0);

    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "srvmod"), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "srvmod"), 0);
    for (int i = 0; i < 50; i++) {
        snprintf(msg, sizeof(msg), "m%d", i);
        CHECK_EQ(strm_write(fds[0], msg, strlen(msg)), (ssize_t)strlen(msg));
    }
    for (int i = 0; i < 50; i++) {
        snprintf(msg, sizeof(msg), "m%d", i);
        CHECK(read_is(fds[1], msg));
    }
    /* SNDHOLD: a small write waits for the hold timer (or more data). */
    CHECK_EQ(strm_ioctl(fds[1], I_SWROPT, SNDHOLD), 0);
    CHECK_EQ(strm_write(fds[1], "held", 4), 4);
    CHECK(read_is(fds[0], "held"));
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);

    atomic_store(&fired, 0);
    CHECK(timeout(set_fired, (void *)1L, 1) != 0);
    CHECK(bufcall(64, BPRI_MED, set_fired, (void *)10L) != 0);
    CHECK(wait_fired(11));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return 0;
}

static int child_services(void *arg)
{
    int depth = (int)(long)arg;
    CHECK_EQ(ust_fork_generation(), 2 - depth); /* child 1, grandchild 2 */
    CHECK_EQ(ust_getpid(), getpid());             /* the cached pid is the child's own */
    use_services();
    if (depth > 0) /* and the child's own child */
        CHECK_EQ(fk_run(child_services, (void *)(long)(depth - 1), CHILD_MS), 0);
    return FK_CHILD_FAILED();
}

static void test_services(void)
{
    CHECK_EQ(ust_fork_generation(), 0);
    CHECK_EQ(ust_getpid(), getpid());
    use_services();
    /* A timeout pending at the fork is the parent's: it fires here only. */
    atomic_store(&fired, 0);
    CHECK(timeout(set_fired, (void *)100L, 20) != 0);
    CHECK_EQ(fk_run(child_services, (void *)1L, CHILD_MS), 0);
    CHECK(wait_fired(100));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* ---- F.2 ---- */

struct inherited {
    int pipe[2]; /* srvmod on pipe[0]; "a0".."a2" queued at pipe[1], "b0", "b1" at pipe[0] */
    int echo;    /* "e0" queued */
};

static void expect_eio(const char *what, int r)
{
    int e = errno;
    if (!CHECK(r == -1 && e == EIO))
        fprintf(stderr, "  %s: returned %d, errno %d (%s)\n", what, r, e, strerror(e));
}

static void detached_calls(int fd)
{
    char buf[64] = "x";
    struct iovec iov = {buf, sizeof(buf)};
    struct strbuf data = {sizeof(buf), 1, buf};
    int flags = 0, band = 0, n = -1;
    struct pollfd p = {fd, POLLIN | POLLOUT, 0};

    CHECK_EQ(isastream(fd), 1);
    expect_eio("read", (int)strm_read(fd, buf, sizeof(buf)));
    expect_eio("readv", (int)strm_readv(fd, &iov, 1));
    expect_eio("write", (int)strm_write(fd, buf, 1));
    expect_eio("writev", (int)strm_writev(fd, &iov, 1));
    expect_eio("putmsg", putmsg(fd, NULL, &data, 0));
    expect_eio("getmsg", getmsg(fd, NULL, &data, &flags));
    expect_eio("getpmsg", getpmsg(fd, NULL, &data, &band, &flags));
    expect_eio("I_NREAD", strm_ioctl(fd, I_NREAD, &n));
    expect_eio("I_PUSH", strm_ioctl(fd, I_PUSH, "nullmod"));
    expect_eio("I_FLUSH", strm_ioctl(fd, I_FLUSH, FLUSHRW));
    expect_eio("F_GETFL", strm_fcntl(fd, F_GETFL));
    CHECK_EQ(strm_poll(&p, 1, 0), 1);
    CHECK_EQ(p.revents, POLLERR);
    CHECK_EQ(strm_close(fd), 0);
    errno = 0;
    CHECK_EQ(isastream(fd), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_read(fd, buf, 1), -1);
    CHECK_EQ(errno, EBADF);
}

static int child_inherited(void *arg)
{
    struct inherited *in = arg;
    int fds[2], n = -1;
    char name[FMNAMESZ + 1];
    /* pipe[0] is not touched: an end the child uses takes what arrives for
     * it, and the parent is to read what comes to pipe[0]. */
    CHECK_EQ(strm_ioctl(in->pipe[1], I_NREAD, &n), 0); /* the backlog stays the parent's */
    CHECK_EQ(n, 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(in->pipe[1], I_LOOK, name), -1); /* no module */
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_write(in->pipe[1], "k1", 2), 2);
    CHECK_EQ(strm_close(in->pipe[0]), 0);
    CHECK_EQ(strm_close(in->pipe[1]), 0);
    detached_calls(in->echo);
    /* New streams work, also on the numbers just released. */
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "srvmod"), 0);
    CHECK_EQ(strm_write(fds[0], "new", 3), 3);
    CHECK(read_is(fds[1], "new"));
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return FK_CHILD_FAILED();
}

/* The kernel's view of fd: POLLIN must be there (a token the child did not take). */
static void kernel_sees_pollin(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLIN);
}

static void test_inherited(void)
{
    struct inherited in;
    char msg[16];

    CHECK_EQ(strm_pipe(in.pipe), 0);
    CHECK_EQ(strm_ioctl(in.pipe[0], I_PUSH, "srvmod"), 0);
    for (int i = 0; i < 3; i++) {
        snprintf(msg, sizeof(msg), "a%d", i);
        CHECK_EQ(strm_write(in.pipe[0], msg, 2), 2);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(msg, sizeof(msg), "b%d", i);
        CHECK_EQ(strm_write(in.pipe[1], msg, 2), 2);
    }
    in.echo = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(in.echo >= 0);
    CHECK_EQ(strm_write(in.echo, "e0", 2), 2);
    CHECK_EQ(ustreams_quiesce(5000), 0); /* every message at its head */
    int n = -1;
    CHECK_EQ(strm_ioctl(in.pipe[1], I_NREAD, &n), 3);

    CHECK_EQ(fk_run(child_inherited, &in, CHILD_MS), 0);

    kernel_sees_pollin(in.pipe[1]);
    kernel_sees_pollin(in.pipe[0]);
    kernel_sees_pollin(in.echo);
    for (int i = 0; i < 3; i++) {
        snprintf(msg, sizeof(msg), "a%d", i);
        CHECK(read_is(in.pipe[1], msg));
    }
    for (int i = 0; i < 2; i++) {
        snprintf(msg, sizeof(msg), "b%d", i);
        CHECK(read_is(in.pipe[0], msg));
    }
    CHECK(read_is(in.pipe[0], "k1")); /* the child's, after the parent's own */
    CHECK(read_is(in.echo, "e0"));
    /* and they still carry traffic both ways */
    CHECK_EQ(strm_write(in.pipe[1], "c0", 2), 2);
    CHECK(read_is(in.pipe[0], "c0"));
    CHECK_EQ(strm_close(in.pipe[0]), 0);
    CHECK_EQ(strm_close(in.pipe[1]), 0);
    CHECK_EQ(strm_close(in.echo), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

int main(void)
{
    test_services();
    test_inherited();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
