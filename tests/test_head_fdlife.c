/* SPDX-License-Identifier: MIT */
/*
 * test_head_fdlife.c -- a stream descriptor closed behind the library's back
 * (close(2), dup2 onto it) and the number reused by the kernel; descriptors a
 * stream costs; running out of descriptors.  docs/STREAMHEAD.md,
 * "Descriptors and readiness"; src/head/sd_fd.c, "close(2)".
 *
 *   F.1  close(2) + open(2) reusing the number: isastream 0, strm_ioctl ENOSTR,
 *        strm_fcntl acts on the new file, strm_close closes the new file; the
 *        old stream released (module close ran, the peer hung up)
 *   F.2  close(2) of every descriptor, no reuse: released by the next
 *        strm_open or strm_pipe at the latest
 *   F.3  dup2 onto a stream number
 *   F.4  the kernel gives the library a number it still holds (a stream's
 *        descriptor closed with close(2) while a strm_fcntl dup keeps the
 *        stream): the new stream gets the slot, the old one lives on its dup
 *   F.5  strm_poll on a reused number polls the new file
 *   F.6  descriptors per stream
 *   F.7  RLIMIT_NOFILE: EMFILE comes back cleanly, nothing leaks
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/strconf.h>
#include <unistd.h>
#include <ustreams.h>
#include <dirent.h>

#include "check.h"
#include "fd_util.h"
#include "harness.h"
#include "sthead.h" /* ust_sd_peek, ust_sd_drop_stale: the late drop below */

/* A module that counts its closes (MT level D_MP, no service procedure). */
static atomic_int fdl_closes;

static int fdl_open(queue_t *q, dev_t *dev, int oflag, int sflag, cred_t *cr)
{
    (void)dev, (void)oflag, (void)cr;
    if (sflag != MODOPEN)
        return ENXIO;
    qprocson(q);
    return 0;
}

static int fdl_close(queue_t *q, int oflag, cred_t *cr)
{
    (void)oflag, (void)cr;
    qprocsoff(q);
    atomic_fetch_add(&fdl_closes, 1);
    return 0;
}

static int fdl_put(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info fdl_info = {4711, "fdlmod", 0, INFPSZ, 65536, 16384};
static struct qinit fdl_rinit = {fdl_put, NULL, fdl_open, fdl_close, NULL, &fdl_info, NULL};
static struct qinit fdl_winit = {fdl_put, NULL, NULL, NULL, NULL, &fdl_info, NULL};
static struct streamtab fdl_tab = {&fdl_rinit, &fdl_winit, NULL, NULL};
static struct fmodsw fdl_fmod = {.f_name = "fdlmod", .f_str = &fdl_tab, .f_flag = D_MP};

/* The peer of a released pipe end sees it hung up. */
static int hung_up(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return strm_poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

/* F.1 */
static void test_close_reuse(void)
{
    int p[2], base = atomic_load(&fdl_closes);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "fdlmod"), 0);
    CHECK_EQ(strm_write(p[1], "x", 1), 1); /* a message left in the stream */
    CHECK_EQ(close(p[0]), 0);
    int nul = open("/dev/null", O_RDONLY);
    CHECK_EQ(nul, p[0]); /* the kernel reuses the lowest number */
    CHECK_EQ(isastream(nul), 0);
    /* the old end is released: its module closed, the peer hung up */
    CHECK_EQ(atomic_load(&fdl_closes) - base, 1);
    CHECK(hung_up(p[1]));
    errno = 0;
    CHECK_EQ(strm_ioctl(nul, I_NREAD, &(int){0}), -1);
    CHECK_EQ(errno, ENOSTR);
    CHECK_EQ(strm_fcntl(nul, F_GETFL) & O_ACCMODE, O_RDONLY); /* the new file's */
    CHECK_EQ(strm_close(nul), 0);                               /* closes /dev/null */
    CHECK_EQ(fcntl(nul, F_GETFD), -1);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* F.1 through strm_ioctl alone (no isastream first). */
static void test_close_reuse_ioctl(void)
{
    int p[2], base = atomic_load(&fdl_closes);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "fdlmod"), 0);
    CHECK_EQ(close(p[1]), 0);
    int nul = open("/dev/null", O_WRONLY);
    CHECK_EQ(nul, p[1]);
    errno = 0;
    CHECK_EQ(strm_ioctl(nul, I_PUSH, "nullmod"), -1);
    CHECK_EQ(errno, ENOSTR);
    CHECK_EQ(atomic_load(&fdl_closes) - base, 1);
    CHECK(hung_up(p[0]));
    CHECK_EQ(close(nul), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* F.1, the late drop: a thread found (fd, sd) stale, and before it dropped
 * the slot the stream was closed and a new one made with the same head and
 * descriptor (heads are reused; the kernel gives the lowest number).  The
 * drop must see that the slot names its stream again and leave it. */
static void test_late_drop(void)
{
    int p[2];
    char c;
    CHECK_EQ(strm_pipe(p), 0);
    struct stdata *sd = ust_sd_peek(p[0]);
    CHECK(sd != NULL);
    ust_sd_drop_stale(p[0], sd); /* as if decided before this stream was made */
    CHECK_EQ(ust_sd_peek(p[0]), sd);
    CHECK_EQ(isastream(p[0]), 1);
    CHECK_EQ(strm_write(p[0], "y", 1), 1);
    CHECK_EQ(strm_read(p[1], &c, 1), 1);
    CHECK(c == 'y');
    CHECK(!hung_up(p[1]));
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* F.2 */
static void test_orphan_released(void)
{
    int p[2], q[2], base = atomic_load(&fdl_closes);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "fdlmod"), 0);
    CHECK_EQ(close(p[0]), 0);
    CHECK_EQ(strm_pipe(q), 0); /* at the latest here */
    CHECK_EQ(atomic_load(&fdl_closes) - base, 1);
    CHECK(hung_up(p[1]));
    errno = 0;
    CHECK_EQ(strm_write(p[1], "y", 1), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(q[0]), 0);
    CHECK_EQ(strm_close(q[1]), 0);

    /* the same with strm_open of a device */
    int e = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(e >= 0);
    CHECK_EQ(strm_ioctl(e, I_PUSH, "fdlmod"), 0);
    CHECK_EQ(close(e), 0);
    int e2 = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(e2 >= 0);
    CHECK_EQ(atomic_load(&fdl_closes) - base, 2);
    CHECK_EQ(strm_close(e2), 0);
}

/* F.3 */
static void test_dup2(void)
{
    int p[2], base = atomic_load(&fdl_closes);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "fdlmod"), 0);
    int nul = open("/dev/null", O_RDWR);
    CHECK(nul >= 0);
    CHECK_EQ(dup2(nul, p[0]), p[0]);
    CHECK_EQ(isastream(p[0]), 0);
    CHECK_EQ(atomic_load(&fdl_closes) - base, 1);
    CHECK(hung_up(p[1]));
    CHECK_EQ(close(p[0]), 0);
    CHECK_EQ(close(nul), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* F.4 */
static void test_library_reuse(void)
{
    int p[2], base = atomic_load(&fdl_closes);
    char c;
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "fdlmod"), 0);
    int d = strm_fcntl(p[0], F_DUPFD, p[1] + 1);
    CHECK(d > p[1]);
    CHECK_EQ(close(p[0]), 0);
    int e = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK_EQ(e, p[0]); /* the number the library still held */
    CHECK_EQ(isastream(e), 1);
    CHECK_EQ(atomic_load(&fdl_closes) - base, 0); /* alive through d */
    /* both streams work, each through its own number */
    CHECK_EQ(strm_write(p[1], "a", 1), 1);
    CHECK_EQ(strm_read(d, &c, 1), 1);
    CHECK_EQ(c, 'a');
    CHECK_EQ(strm_write(e, "b", 1), 1);
    CHECK_EQ(strm_read(e, &c, 1), 1);
    CHECK_EQ(c, 'b');
    CHECK_EQ(strm_close(e), 0);
    CHECK_EQ(strm_close(d), 0);
    CHECK_EQ(atomic_load(&fdl_closes) - base, 1);
    CHECK(hung_up(p[1]));
    CHECK_EQ(strm_close(p[1]), 0);
}

/* F.5 */
static void test_poll_reused(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(close(p[0]), 0);
    int pp[2];
    CHECK_EQ(pipe(pp), 0); /* takes p[0]'s number for its read end */
    CHECK_EQ(pp[0], p[0]);
    CHECK_EQ(write(pp[1], "z", 1), 1);
    struct pollfd pf = {pp[0], POLLIN, 0};
    CHECK_EQ(strm_poll(&pf, 1, 0), 1);
    CHECK_EQ(pf.revents, POLLIN); /* the kernel pipe's readiness */
    CHECK(hung_up(p[1]));
    close(pp[0]);
    close(pp[1]);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* 1 when the library's ends live in its io_uring (src/head/sd_lend.c). */
int ust_lend_ring_on(void);

/* Descriptors a stream costs: U alone, or U and the library's end L where
 * io_uring is refused (or USTREAMS_NO_URING is set). */
static int fds_each(void)
{
    return ust_lend_ring_on() ? 1 : 2;
}

/* F.6: U (and L without the ring); no other descriptor per stream. */
static void test_fds_per_stream(void)
{
    enum { NPIPE = 50 };
    int p[NPIPE][2];
    int before = count_fds();
    for (int i = 0; i < NPIPE; i++)
        CHECK_EQ(strm_pipe(p[i]), 0);
    int used = count_fds() - before;
    printf("descriptors per stream: %.2f\n", used / (2.0 * NPIPE));
    CHECK_EQ(used, fds_each() * 2 * NPIPE);
    for (int i = 0; i < NPIPE; i++) {
        CHECK_EQ(strm_close(p[i][0]), 0);
        CHECK_EQ(strm_close(p[i][1]), 0);
    }
    CHECK_EQ(count_fds(), before);
}

/* F.7: as many streams as the limit allows (pipe ends: a clone device has
 * a minor limit of its own), then EMFILE everywhere, nothing leaked. */
static void test_rlimit(void)
{
    enum { LIMIT = 1024 }; /* the usual default soft limit */
    struct rlimit old, rl;
    static int fd[LIMIT];
    int n = 0, e = 0;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    rl = old;
    rl.rlim_cur = LIMIT;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    int before = count_fds();
    while (n + 2 <= LIMIT) {
        if (strm_pipe(&fd[n]) != 0) {
            e = errno;
            break;
        }
        n += 2;
    }
    CHECK_EQ(e, EMFILE);
    /* a pipe needs more room while it is made than a single stream */
    int f;
    while (n < LIMIT && (f = strm_open("/dev/streams/clone/echo", O_RDWR)) >= 0)
        fd[n++] = f;
    CHECK_EQ(errno, EMFILE);
    printf("streams opened under RLIMIT_NOFILE %d: %d\n", LIMIT, n);
    CHECK(n >= (LIMIT - before) / fds_each() - 2);
    int pfd[2];
    errno = 0;
    CHECK_EQ(strm_pipe(pfd), -1);
    CHECK_EQ(errno, EMFILE);
    for (int i = 0; i < n; i++)
        CHECK_EQ(strm_close(fd[i]), 0);
    CHECK_EQ(count_fds(), before);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a write to a hung-up pipe end raises it */
    CHECK_EQ(register_strmod(&fdl_fmod), 0);
    test_close_reuse();
    test_close_reuse_ioctl();
    test_late_drop();
    test_orphan_released();
    test_dup2();
    test_library_reuse();
    test_poll_reused();
    test_fds_per_stream();
    test_rlimit();
    CHECK_EQ(unregister_strmod(&fdl_fmod), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
