/* SPDX-License-Identifier: MIT */
/*
 * test_head_openmode.c -- the access mode of stream descriptors
 * (src/head/sd_access.c): each call x each mode.
 *
 * References: read(2), write(2), getmsg(2), putmsg(2) ("EBADF: fildes is not
 * a valid file descriptor open for reading / writing"), fcntl(2) (F_DUPFD
 * shares the open file description, F_GETFL), streamio(7) I_RECVFD,
 * fattach(3C).  Cases:
 *   M.1 on an O_WRONLY descriptor read, readv, getmsg, getpmsg, I_GETMSG,
 *       I_GETPMSG fail EBADF (nothing is taken off the queue); writes work
 *   M.2 on an O_RDONLY descriptor write, writev, putmsg, putpmsg, I_PUTMSG,
 *       I_PUTPMSG, I_FDINSERT fail EBADF (nothing goes down); reads work
 *   M.3 the mode is per descriptor: O_RDONLY and O_WRONLY opens of one
 *       shared device, and an O_RDWR one, are each checked on their own
 *   M.4 F_DUPFD keeps the mode; F_GETFL reports it
 *   M.5 a pipe end opened by its fattach name O_RDONLY / O_WRONLY
 *   M.6 I_RECVFD: the received descriptor has the mode of the one sent
 *   M.7 poll reports the stream's state whatever the mode (POLLIN on an
 *       O_WRONLY descriptor with data queued; POLLOUT on an O_RDONLY one)
 *   M.8 nothing leaks
 */
#include "head_read_util.h"

#include <stropts.h>

static int openm(int mode)
{
    int fd = strm_open("/dev/streams/hdrv", mode | O_NONBLOCK);
    CHECK(fd >= 0);
    return fd;
}

/* The read-direction calls; each reads one message when it may. */
static int r_read(int fd)
{
    char b[16];
    return (int)strm_read(fd, b, sizeof(b));
}

static int r_readv(int fd)
{
    char b[16];
    struct iovec v = {b, sizeof(b)};
    return (int)strm_readv(fd, &v, 1);
}

static int r_getmsg(int fd)
{
    char b[16];
    struct strbuf d = {.maxlen = sizeof(b), .buf = b};
    int flags = 0;
    return getmsg(fd, NULL, &d, &flags);
}

static int r_getpmsg(int fd)
{
    char b[16];
    struct strbuf d = {.maxlen = sizeof(b), .buf = b};
    int flags = MSG_ANY, band = 0;
    return getpmsg(fd, NULL, &d, &band, &flags);
}

static int r_igetmsg(int fd)
{
    char b[16];
    struct strpmsg sp = {.databuf = {.maxlen = sizeof(b), .buf = b}, .ctlbuf = {.maxlen = -1}};
    return strm_ioctl(fd, I_GETMSG, &sp);
}

static int r_igetpmsg(int fd)
{
    char b[16];
    struct strpmsg sp = {.databuf = {.maxlen = sizeof(b), .buf = b},
                         .ctlbuf = {.maxlen = -1},
                         .flags = MSG_ANY};
    return strm_ioctl(fd, I_GETPMSG, &sp);
}

/* The write-direction calls; each sends one message when it may. */
static int w_write(int fd)
{
    return (int)strm_write(fd, "w", 1);
}

static int w_writev(int fd)
{
    struct iovec v = {"w", 1};
    return (int)strm_writev(fd, &v, 1);
}

static int w_putmsg(int fd)
{
    struct strbuf d = {.len = 1, .buf = "w"};
    return putmsg(fd, NULL, &d, 0);
}

static int w_putpmsg(int fd)
{
    struct strbuf d = {.len = 1, .buf = "w"};
    return putpmsg(fd, NULL, &d, 1, MSG_BAND);
}

static int w_iputmsg(int fd)
{
    struct strpmsg sp = {.databuf = {.len = 1, .buf = "w"}, .ctlbuf = {.len = -1}};
    return strm_ioctl(fd, I_PUTMSG, &sp);
}

static int w_iputpmsg(int fd)
{
    struct strpmsg sp = {
        .databuf = {.len = 1, .buf = "w"}, .ctlbuf = {.len = -1}, .band = 2, .flags = MSG_BAND};
    return strm_ioctl(fd, I_PUTPMSG, &sp);
}

static int w_fdinsert(int fd)
{
    char ctl[sizeof(queue_t *)];
    struct strfdinsert fi = {
        .ctlbuf = {.len = sizeof(ctl), .buf = ctl}, .databuf = {.len = -1}, .fildes = fd};
    return strm_ioctl(fd, I_FDINSERT, &fi);
}

static const struct {
    const char *name;
    int (*call)(int fd);
} rcalls[] = {{"read", r_read},     {"readv", r_readv},     {"getmsg", r_getmsg},
              {"getpmsg", r_getpmsg}, {"I_GETMSG", r_igetmsg}, {"I_GETPMSG", r_igetpmsg}},
  wcalls[] = {{"write", w_write},       {"writev", w_writev},       {"putmsg", w_putmsg},
              {"putpmsg", w_putpmsg},   {"I_PUTMSG", w_iputmsg},    {"I_PUTPMSG", w_iputpmsg},
              {"I_FDINSERT", w_fdinsert}};

#define NCALLS(t) (sizeof(t) / sizeof((t)[0]))

/* Every read-direction call on fd: each fails EBADF and takes nothing (ok
 * 0), or each reads the message queued for it (ok 1). */
static void read_calls(int fd, int ok)
{
    for (size_t i = 0; i < NCALLS(rcalls); i++) {
        hdrv_up_str(0, "x");
        errno = 0;
        int r = rcalls[i].call(fd);
        int good = ok ? r >= 0 : r == -1 && errno == EBADF;
        if (!CHECK(good))
            fprintf(stderr, "  %s on fd %d: %d errno %d\n", rcalls[i].name, fd, r, errno);
        CHECK_EQ(ust_sd_nread(sdof(fd), NULL), ok ? 0 : 1);
        if (!ok)
            CHECK_EQ(strm_ioctl(fd, I_FLUSH, FLUSHR), 0);
    }
}

/* Every write-direction call on fd: each fails EBADF and sends nothing (ok
 * 0), or each sends one message down (ok 1). */
static void write_calls(int fd, int ok)
{
    hdrv_down_clear();
    for (size_t i = 0; i < NCALLS(wcalls); i++) {
        errno = 0;
        int r = wcalls[i].call(fd);
        int good = ok ? r >= 0 : r == -1 && errno == EBADF;
        if (!CHECK(good))
            fprintf(stderr, "  %s on fd %d: %d errno %d\n", wcalls[i].name, fd, r, errno);
        mblk_t *mp = hdrv_down(ok ? 1000 : 20);
        CHECK_EQ(mp != NULL, ok);
        freemsg(mp);
    }
}

/* M.1 - M.4, M.7 */
static void test_modes(void)
{
    int fr = openm(O_RDONLY), fw = openm(O_WRONLY), frw = openm(O_RDWR);
    CHECK_EQ(sdof(fr), sdof(fw)); /* one shared stream */

    read_calls(fw, 0); /* M.1 */
    write_calls(fw, 1);
    write_calls(fr, 0); /* M.2 */
    read_calls(fr, 1);
    read_calls(frw, 1); /* M.3 */
    write_calls(frw, 1);

    /* M.7: poll shows the stream, not the descriptor's mode */
    hdrv_up_str(0, "x");
    struct pollfd p[2] = {{.fd = fw, .events = POLLIN}, {.fd = fr, .events = POLLOUT}};
    CHECK_EQ(strm_poll(p, 2, 0), 2);
    CHECK(p[0].revents & POLLIN);
    CHECK(p[1].revents & POLLOUT);
    CHECK_EQ(strm_ioctl(fr, I_FLUSH, FLUSHR), 0);

    /* M.4 */
    CHECK_EQ(strm_fcntl(fr, F_GETFL) & O_ACCMODE, O_RDONLY);
    CHECK_EQ(strm_fcntl(fw, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(strm_fcntl(frw, F_GETFL) & O_ACCMODE, O_RDWR);
    int dw = strm_fcntl(fw, F_DUPFD, 0), dr = strm_fcntl(fr, F_DUPFD_CLOEXEC, 0);
    CHECK(dw >= 0 && dr >= 0);
    CHECK_EQ(strm_fcntl(dw, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(strm_fcntl(dr, F_GETFL) & O_ACCMODE, O_RDONLY);
    read_calls(dw, 0);
    write_calls(dw, 1);
    write_calls(dr, 0);
    read_calls(dr, 1);
    CHECK_EQ(strm_close(dw), 0);
    CHECK_EQ(strm_close(dr), 0);
    CHECK_EQ(strm_close(fr), 0);
    CHECK_EQ(strm_close(fw), 0);
    CHECK_EQ(strm_close(frw), 0);
    hdrv_down_clear();
}

/* M.5, M.6 */
static void test_pipe_modes(void)
{
    int p[2];
    char buf[8];
    char name[] = "/tmp/ustreams-openmode-testXXXXXX";
    int tf = mkstemp(name); /* fattach covers an existing file */
    CHECK(tf >= 0);
    close(tf);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_fcntl(p[0], F_SETFL, O_NONBLOCK), 0); /* a failure is not a hang */
    CHECK_EQ(strm_fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(fattach(p[1], name), 0);
    int fr = strm_open(name, O_RDONLY), fw = strm_open(name, O_WRONLY);
    CHECK(fr >= 0 && fw >= 0);
    CHECK_EQ(strm_fcntl(p[0], F_GETFL) & O_ACCMODE, O_RDWR);

    CHECK_EQ(strm_write(p[0], "a", 1), 1);
    errno = 0;
    CHECK_EQ(strm_read(fw, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_read(fr, buf, sizeof(buf)), 1);
    errno = 0;
    CHECK_EQ(strm_write(fr, "b", 1), -1);
    CHECK_EQ(errno, EBADF);
    struct strbuf d = {.len = 1, .buf = "b"};
    errno = 0;
    CHECK_EQ(putmsg(fr, NULL, &d, 0), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_write(fw, "c", 1), 1);
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 1);
    CHECK_EQ(buf[0], 'c');

    /* M.6: send fw (write only) and fr (read only) from p[1] to p[0] */
    struct strrecvfd rf;
    CHECK_EQ(strm_ioctl(p[1], I_SENDFD, fw), 0);
    CHECK_EQ(strm_ioctl(p[1], I_SENDFD, fr), 0);
    CHECK_EQ(strm_ioctl(p[0], I_RECVFD, &rf), 0);
    int rw = rf.fd;
    CHECK_EQ(strm_ioctl(p[0], I_RECVFD, &rf), 0);
    int rr = rf.fd;
    CHECK_EQ(strm_fcntl(rw, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(strm_fcntl(rr, F_GETFL) & O_ACCMODE, O_RDONLY);
    CHECK_EQ(strm_write(p[0], "d", 1), 1);
    errno = 0;
    CHECK_EQ(strm_read(rw, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_read(rr, buf, sizeof(buf)), 1);
    errno = 0;
    CHECK_EQ(strm_write(rr, "e", 1), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_write(rw, "e", 1), 1);
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 1);

    CHECK_EQ(fdetach(name), 0);
    unlink(name);
    CHECK_EQ(strm_close(rw), 0);
    CHECK_EQ(strm_close(rr), 0);
    CHECK_EQ(strm_close(fr), 0);
    CHECK_EQ(strm_close(fw), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

int main(void)
{
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_modes();
    test_pipe_modes();
    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0); /* M.8 */
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
