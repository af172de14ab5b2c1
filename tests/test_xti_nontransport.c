/* SPDX-License-Identifier: MIT */
/*
 * test_xti_nontransport.c -- t_open and t_sync of a stream that is not a
 * transport (issue 21 item 2; the rule: docs/XTI.md, "t_open and t_sync of a
 * stream that is not a transport"; XNS 5 t_open, t_sync):
 *   N.1  t_open of echo, nuls, loop, sad, log, fifo fails within 1 s with
 *        t_errno TBADNAME (errno ENOTTY); the drivers that loop the request
 *        back (echo, fifo) at once, well inside timod's probe limit; no
 *        descriptor is left open, no message block outstanding
 *   N.2  a FIFO kept open elsewhere: the failed t_open leaves no timod on it
 *   N.3  t_sync of a pipe end: TBADF at once, without timod (the timod
 *        t_sync pushes is popped again) and with it; nothing reaches the
 *        other end (no stray T_CAPABILITY_REQ at the peer's head, which
 *        still works); t_sync of echo / a FIFO with timod: TBADF
 *   N.4  the transports still open and t_sync as before
 *   N.5  t_sync of a descriptor opened with strm_open and no timod (XNS 5
 *        t_sync; Solaris libnsl _t_checkfd): a transport (ticots, ticlts,
 *        udp) gets timod pushed and its state (T_UNBND), and works with
 *        t_bind / t_close after; echo, nuls without timod: TBADF, nothing
 *        left pushed; a descriptor that is no stream: TBADF
 * A deadline (alarm) turns a hang into a failure.
 */
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "xti_util.h"

#define QUICK_MS 250L /* a looped request: well inside timod's 300 ms probe */
#define BOUND_MS 1000L

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Descriptors open in this process. */
static int nfds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* N.1 t_open of name fails TBADNAME/ENOTTY within limit_ms, leaving nothing. */
static void open_fails(const char *name, long limit_ms)
{
    int before = nfds();
    long t0 = now_ms();
    errno = 0;
    int fd = t_open(name, O_RDWR, NULL);
    long dt = now_ms() - t0;
    int te = t_errno, e = errno;

    if (!CHECK_EQ(fd, -1)) {
        t_close(fd);
        return;
    }
    if (!CHECK_EQ(te, TBADNAME) || !CHECK_EQ(e, ENOTTY) || !CHECK(dt < limit_ms))
        fprintf(stderr, "  t_open(%s): t_errno %d errno %d after %ld ms (limit %ld)\n", name, te,
                e, dt, limit_ms);
    if (!CHECK_EQ(nfds(), before))
        fprintf(stderr, "  t_open(%s) left a descriptor\n", name);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* t_sync(fd) fails TBADF within limit_ms. */
static void sync_fails(int fd, long limit_ms, const char *what)
{
    long t0 = now_ms();
    int r = t_sync(fd);
    long dt = now_ms() - t0;
    if (!CHECK_EQ(r, -1) || !CHECK_EQ(t_errno, TBADF) || !CHECK(dt < limit_ms))
        fprintf(stderr, "  t_sync(%s): %d t_errno %d errno %d after %ld ms\n", what, r, t_errno,
                errno, dt);
}

static void test_open(void)
{
    open_fails("/dev/streams/echo", QUICK_MS);
    open_fails("/dev/streams/clone/echo", QUICK_MS);
    open_fails("/dev/streams/fifo", QUICK_MS);
    open_fails("/dev/streams/nuls", BOUND_MS);
    open_fails("/dev/streams/clone/loop", BOUND_MS);
    open_fails("/dev/streams/sad", BOUND_MS);
    open_fails("/dev/streams/log", BOUND_MS);
}

static void test_shared_fifo(void)
{
    /* N.2 */
    int keep = strm_open("/dev/streams/fifo", O_RDWR);
    if (!CHECK(keep >= 0))
        return;
    open_fails("/dev/streams/fifo", QUICK_MS);
    CHECK_EQ(strm_ioctl(keep, I_FIND, "timod"), 0);
    /* and the FIFO still works */
    CHECK_EQ(strm_write(keep, "ab", 2), 2);
    char b[4];
    CHECK_EQ(strm_read(keep, b, sizeof(b)), 2);
    CHECK_EQ(strm_close(keep), 0);
}

/* The other end of a pipe has nothing to read and still carries data. */
static void peer_untouched(int peer, int end)
{
    int n = -1;
    CHECK_EQ(strm_ioctl(peer, I_NREAD, &n), 0);
    if (!CHECK_EQ(n, 0))
        fprintf(stderr, "  a message reached the pipe's other end (%d bytes)\n", n);
    CHECK_EQ(strm_write(end, "xy", 2), 2);
    char b[4];
    CHECK_EQ(strm_read(peer, b, sizeof(b)), 2);
}

static void test_sync(void)
{
    int p[2];

    /* N.3 a pipe end without timod: not a transport endpoint */
    CHECK_EQ(strm_pipe(p), 0);
    sync_fails(p[0], QUICK_MS, "pipe end");
    CHECK_EQ(strm_ioctl(p[0], I_FIND, "timod"), 0);
    peer_untouched(p[1], p[0]);

    /* with timod: no request goes to the peer's head */
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "timod"), 0);
    sync_fails(p[0], QUICK_MS, "pipe end with timod");
    sync_fails(p[0], QUICK_MS, "pipe end with timod, again");
    CHECK_EQ(strm_ioctl(p[0], I_FIND, "timod"), 1);
    peer_untouched(p[1], p[0]);
    /* and from the other side, timod on both ends */
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "timod"), 0);
    sync_fails(p[1], QUICK_MS, "other pipe end with timod");
    peer_untouched(p[0], p[1]);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);

    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "timod"), 0);
    sync_fails(fd, QUICK_MS, "echo with timod");
    CHECK_EQ(strm_close(fd), 0);

    fd = strm_open("/dev/streams/fifo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "timod"), 0);
    sync_fails(fd, QUICK_MS, "fifo with timod");
    int n = -1;
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &n), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* N.5 a descriptor of name opened with strm_open, no timod: t_sync adopts
 * it (T_UNBND, timod pushed) and the t_* calls work on it after. */
static void sync_adopts(const char *name)
{
    int fd = strm_open(name, O_RDWR);
    if (!CHECK(fd >= 0))
        return;
    long t0 = now_ms();
    int st = t_sync(fd);
    long dt = now_ms() - t0;
    if (!CHECK_EQ(st, T_UNBND) || !CHECK(dt < BOUND_MS))
        fprintf(stderr, "  t_sync(%s without timod): %d t_errno %d errno %d after %ld ms\n", name,
                st, t_errno, errno, dt);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "timod"), 1);
    CHECK_EQ(t_getstate(fd), T_UNBND);
    CHECK_EQ(t_bind(fd, NULL, NULL), 0);
    CHECK_EQ(t_getstate(fd), T_IDLE);
    CHECK_EQ(t_sync(fd), T_IDLE);
    CHECK_EQ(t_close(fd), 0);
}

/* N.5 a stream opened without timod on a driver that is no provider: TBADF,
 * and the timod t_sync pushed is gone again. */
static void sync_refuses(const char *name, long limit_ms)
{
    int fd = strm_open(name, O_RDWR);
    if (!CHECK(fd >= 0))
        return;
    sync_fails(fd, limit_ms, name);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "timod"), 0);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_adopt(void)
{
    sync_adopts("/dev/streams/ticots");
    sync_adopts("/dev/streams/ticlts");
    sync_adopts("/dev/streams/udp");
    sync_refuses("/dev/streams/clone/echo", QUICK_MS);
    sync_refuses("/dev/streams/nuls", BOUND_MS);

    /* no stream at all: a pipe(2) end, a closed number */
    int pp[2];
    CHECK_EQ(pipe(pp), 0);
    sync_fails(pp[0], QUICK_MS, "pipe(2) end");
    close(pp[0]);
    close(pp[1]);
    sync_fails(pp[0], QUICK_MS, "closed descriptor");
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

static void test_transports(void)
{
    /* N.4 */
    static const char *const names[] = {"/dev/streams/ticotsord", "/dev/streams/ticlts",
                                        "/dev/streams/udp", "/dev/streams/tcp"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct t_info info;
        int fd = t_open(names[i], O_RDWR, &info);
        if (!CHECK(fd >= 0)) {
            fprintf(stderr, "  t_open(%s): t_errno %d errno %d\n", names[i], t_errno, errno);
            continue;
        }
        CHECK(info.servtype == T_COTS || info.servtype == T_COTS_ORD || info.servtype == T_CLTS);
        CHECK_EQ(t_close(fd), 0);
    }
    int fd = strm_open("/dev/streams/ticots", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "timod"), 0);
    CHECK_EQ(t_sync(fd), T_UNBND);
    CHECK_EQ(t_close(fd), 0);
}

int main(void)
{
    alarm(60); /* deadline: a hang is a failure (SIGALRM kills the test) */
    test_transports(); /* first: the library's own descriptors are made by now */
    test_open();
    test_shared_fifo();
    test_sync();
    test_adopt();
    return xti_finish();
}
