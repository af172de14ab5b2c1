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

/* Every read-direction call on fd: each fails EBADF (want_ok 0) or the
 * first reads "x" (want_ok 1; the caller queued it). */
static void read_calls(int fd, int want_ok)
{
    char buf[16];
    struct iovec v = {buf, sizeof(buf)};
    struct strbuf d = {.maxlen = sizeof(buf), .buf = buf};
    struct strpmsg sp = {.databuf = {.maxlen = sizeof(buf), .buf = buf}, .flags = MSG_ANY};
    int flags = 0, band = 0;

    if (want_ok) {
        CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 1);
        return;
    }
    errno = 0;
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_readv(fd, &v, 1), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(getmsg(fd, NULL, &d, &flags), -1);
    CHECK_EQ(errno, EBADF);
    flags = MSG_ANY;
    errno = 0;
    CHECK_EQ(getpmsg(fd, NULL, &d, &band, &flags), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_GETPMSG, &sp), -1);
    CHECK_EQ(errno, EBADF);
    sp.flags = 0;
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_GETMSG, &sp), -1);
    CHECK_EQ(errno, EBADF);
}

/* Every write-direction call on fd: each fails EBADF and sends nothing
 * (want_ok 0), or a write goes down (want_ok 1). */
static void write_calls(int fd, int want_ok)
{
    char b[1] = {'w'};
    struct iovec v = {b, 1};
    struct strbuf d = {.len = 1, .buf = b};
    struct strpmsg sp = {.databuf = {.len = 1, .buf = b}, .flags = MSG_BAND};
    char ctl[sizeof(queue_t *)];
    struct strfdinsert fi = {.ctlbuf = {.len = sizeof(ctl), .buf = ctl},
                             .databuf = {.len = -1},
                             .fildes = fd};

    hdrv_down_clear();
    if (want_ok) {
        CHECK_EQ(strm_write(fd, b, 1), 1);
        mblk_t *mp = hdrv_down(1000);
        CHECK(mp != NULL);
        freemsg(mp);
        return;
    }
    errno = 0;
    CHECK_EQ(strm_write(fd, b, 1), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_writev(fd, &v, 1), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(putmsg(fd, NULL, &d, 0), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(putpmsg(fd, NULL, &d, 1, MSG_BAND), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUTPMSG, &sp), -1);
    CHECK_EQ(errno, EBADF);
    sp.flags = 0;
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUTMSG, &sp), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_FDINSERT, &fi), -1);
    CHECK_EQ(errno, EBADF);
    CHECK(hdrv_down(50) == NULL); /* nothing went down */
}

/* M.1 - M.4, M.7 */
static void test_modes(void)
{
    int fr = openm(O_RDONLY), fw = openm(O_WRONLY), frw = openm(O_RDWR);
    CHECK_EQ(sdof(fr), sdof(fw)); /* one shared stream */

    hdrv_up_str(0, "x");
    read_calls(fw, 0);              /* M.1 */
    CHECK_EQ(ust_sd_nread(sdof(fr), NULL), 1); /* nothing was taken */
    /* M.7: poll shows the stream, not the descriptor's mode */
    struct pollfd p[2] = {{.fd = fw, .events = POLLIN}, {.fd = fr, .events = POLLOUT}};
    CHECK_EQ(strm_poll(p, 2, 0), 2);
    CHECK(p[0].revents & POLLIN);
    CHECK(p[1].revents & POLLOUT);
    read_calls(fr, 1);
    write_calls(fr, 0);             /* M.2 */
    write_calls(fw, 1);
    hdrv_up_str(0, "x");
    read_calls(frw, 1);             /* M.3 */
    write_calls(frw, 1);

    /* M.4 */
    CHECK_EQ(strm_fcntl(fr, F_GETFL) & O_ACCMODE, O_RDONLY);
    CHECK_EQ(strm_fcntl(fw, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(strm_fcntl(frw, F_GETFL) & O_ACCMODE, O_RDWR);
    int dw = strm_fcntl(fw, F_DUPFD, 0), dr = strm_fcntl(fr, F_DUPFD_CLOEXEC, 0);
    CHECK(dw >= 0 && dr >= 0);
    CHECK_EQ(strm_fcntl(dw, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(strm_fcntl(dr, F_GETFL) & O_ACCMODE, O_RDONLY);
    hdrv_up_str(0, "x");
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
    const char *name = "/tmp/ustreams-openmode-test";
    CHECK_EQ(strm_pipe(p), 0);
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
