/* SPDX-License-Identifier: MIT */
/*
 * test_close_behind.c -- a stream descriptor closed with close(2) (or
 * replaced with dup2) instead of strm_close: the next call on the number
 * never reaches the old stream (README, "Closing a stream descriptor with
 * plain close(2) is noticed at the next call on it"; docs/STREAMHEAD.md,
 * "close(2) instead of strm_close"; src/head/sd_fd.c ust_sd_notice_closes).
 * Each case makes a pipe with a counting module pushed on the end that is
 * closed, leaves a message queued on it, closes it with close(2), and then
 * makes exactly one call on the number:
 *   B.1  strm_read     -1 EBADF
 *   B.2  strm_write    -1 EBADF
 *   B.3  getmsg        -1 EBADF
 *   B.4  putmsg        -1 EBADF
 *   B.5  strm_ioctl    -1 EBADF
 *   B.6  strm_poll     POLLNVAL
 *   B.7  the number reused by open(2), socket(2) and dup2 of another file:
 *        strm_read, strm_write, getmsg, putmsg fail ENOSTR (the new file is
 *        not a stream), nothing is taken from or given to the old stream
 * and after it the old end has been released (its module's close ran, the
 * other end sees the hang-up), with no other library call in between.
 * The cases run on the thread that made the pipe (the ring's watch reports
 * on that thread before close(2) returns) and, B.8, with the pipe made by
 * another thread that has exited since.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/strconf.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

static atomic_int cb_closes;

static int cb_open(queue_t *q, dev_t *dev, int oflag, int sflag, cred_t *cr)
{
    (void)dev, (void)oflag, (void)cr;
    if (sflag != MODOPEN)
        return ENXIO;
    qprocson(q);
    return 0;
}

static int cb_close(queue_t *q, int oflag, cred_t *cr)
{
    (void)oflag, (void)cr;
    qprocsoff(q);
    atomic_fetch_add(&cb_closes, 1);
    return 0;
}

static int cb_put(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info cb_info = {4712, "cbmod", 0, INFPSZ, 65536, 16384};
static struct qinit cb_rinit = {cb_put, NULL, cb_open, cb_close, NULL, &cb_info, NULL};
static struct qinit cb_winit = {cb_put, NULL, NULL, NULL, NULL, &cb_info, NULL};
static struct streamtab cb_tab = {&cb_rinit, &cb_winit, NULL, NULL};
static struct fmodsw cb_fmod = {.f_name = "cbmod", .f_str = &cb_tab, .f_flag = D_MP};

/* A pipe: p[0] with cbmod pushed and "old" queued for it to read. */
static void make_pipe(int p[2])
{
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "cbmod"), 0);
    CHECK_EQ(strm_write(p[1], "old", 3), 3);
}

/* After the one call on the closed number: the old end was released. */
static void check_released(int peer, int base)
{
    CHECK_EQ(atomic_load(&cb_closes) - base, 1);
    struct pollfd pf = {peer, POLLIN, 0};
    poll(&pf, 1, 0); /* the kernel's view of the peer: no library call */
    CHECK(pf.revents & POLLHUP);
    CHECK_EQ(strm_close(peer), 0);
}

enum call { C_READ, C_WRITE, C_GETMSG, C_PUTMSG, C_IOCTL, C_POLL };

/* The call on fd; returns -1 with errno, or its result (poll: revents). */
static int do_call(enum call c, int fd)
{
    char buf[16];
    struct strbuf d = {sizeof(buf), 0, buf};
    int flags = 0;
    errno = 0;
    switch (c) {
    case C_READ:
        return (int)strm_read(fd, buf, sizeof(buf));
    case C_WRITE:
        return (int)strm_write(fd, "new", 3);
    case C_GETMSG:
        return getmsg(fd, NULL, &d, &flags);
    case C_PUTMSG:
        d.len = 3;
        memcpy(buf, "new", 3);
        return putmsg(fd, NULL, &d, 0);
    case C_IOCTL: {
        int n = 0;
        return strm_ioctl(fd, I_NREAD, &n);
    }
    case C_POLL: {
        struct pollfd pf = {fd, POLLIN | POLLOUT, 0};
        int r = strm_poll(&pf, 1, 0);
        return r == 1 ? pf.revents : -1;
    }
    }
    return -2;
}

/* B.1 - B.6 */
static void test_closed(enum call c)
{
    int p[2], base = atomic_load(&cb_closes);
    make_pipe(p);
    CHECK_EQ(close(p[0]), 0);
    int r = do_call(c, p[0]);
    if (c == C_POLL) {
        CHECK_EQ(r, POLLNVAL);
    } else {
        CHECK_EQ(r, -1);
        CHECK_EQ(errno, EBADF);
    }
    check_released(p[1], base);
}

/* A new file on number want: open(2), socket(2), or dup2 of /dev/zero. */
static int reuse(int how, int want)
{
    int fd = -1;
    if (how == 0) {
        fd = open("/dev/null", O_RDWR);
    } else if (how == 1) {
        fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    } else {
        int z = open("/dev/zero", O_RDWR);
        fd = dup2(z, want);
        close(z);
    }
    CHECK_EQ(fd, want); /* the kernel gives the lowest number */
    return fd;
}

/* B.7 */
static void test_reused(int how, enum call c)
{
    int p[2], base = atomic_load(&cb_closes);
    make_pipe(p);
    if (how != 2)
        CHECK_EQ(close(p[0]), 0);
    int fd = reuse(how, p[0]); /* dup2: closes the stream's descriptor itself */
    CHECK_EQ(do_call(c, fd), -1);
    CHECK_EQ(errno, ENOSTR);
    check_released(p[1], base);
    CHECK_EQ(close(fd), 0);
}

/* B.8: the pipe made, and its watch submitted, by a thread gone since. */
static void *maker(void *arg)
{
    make_pipe(arg);
    return NULL;
}

static void test_other_thread(enum call c)
{
    int p[2], base = atomic_load(&cb_closes);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, maker, p), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(close(p[0]), 0);
    /* The completion is posted by the kernel's fallback worker, not before
     * close(2) returns, a scheduler tick later: give it a moment. */
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int r = do_call(c, p[0]);
    CHECK_EQ(r, -1);
    CHECK_EQ(errno, EBADF);
    check_released(p[1], base);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    CHECK_EQ(register_strmod(&cb_fmod), 0);
    for (enum call c = C_READ; c <= C_POLL; c++)
        test_closed(c);
    for (int how = 0; how < 3; how++)
        for (enum call c = C_READ; c <= C_PUTMSG; c++)
            test_reused(how, c);
    test_other_thread(C_READ);
    CHECK_EQ(unregister_strmod(&cb_fmod), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
