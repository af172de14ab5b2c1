/* SPDX-License-Identifier: MIT */
/*
 * sd_writecalls.c -- the write side's system calls: strm_write, strm_writev,
 * putmsg and putpmsg.  Each looks the descriptor up (its access mode
 * included), checks the caller's arguments, and hands the work to
 * ust_sd_write / ust_sd_putpmsg (sd_write.c); on the way out it withdraws
 * POLLOUT if the call may have filled the queue below (sd_ret), and maps
 * -errno to errno.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/uio.h>

#include "sthead.h"

/* ------------------------------------------------------------------------ */
/* The system calls                                                         */
/* ------------------------------------------------------------------------ */

/* Finish a public call: release the stream, map -errno to errno/-1.  A call
 * that may have filled band 0 below the head (it sent the normal way, or its
 * deposit used the pipe's room up) withdraws POLLOUT if it did (sd_poll.c);
 * a deposit that left room cannot have, and skips the flow peek, whose cache
 * line the reader writes at every read. */
static ssize_t sd_ret(struct stdata *sd, ssize_t r)
{
    int sent = ust_sd_wsent_take(), filled = ust_sd_deposit_filled();
    if (r >= 0 && (sent || filled))
        ust_sd_wready_after_write(sd);
    ust_sd_put(sd);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

/*
 * strm_write -- write(2) for streams.  See ust_sd_write; also EBADF (not
 * open), ENOSTR (not a stream), EINVAL (count above SSIZE_MAX).
 */
static ssize_t strm_write_call(int fd, const void *buf, size_t count)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOWRITE, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    if (count > SSIZE_MAX)
        return sd_ret(sd, -EINVAL);
    if (!buf && count > 0)
        return sd_ret(sd, -EFAULT);
    return sd_ret(sd, ust_sd_write_buf(sd, buf, count));
}

ssize_t strm_write(int fd, const void *buf, size_t count)
{
    ust_call_begin();
    ssize_t r = strm_write_call(fd, buf, count);
    ust_call_end();
    return r;
}

/*
 * strm_writev -- writev(2) for streams: the iovecs' bytes as if one write.
 * EINVAL for iovcnt below 0 or above IOV_MAX or a total above SSIZE_MAX;
 * EFAULT for a bad array or buffer.
 */
static ssize_t strm_writev_call(int fd, const struct iovec *iov, int iovcnt)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOWRITE, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    return sd_ret(sd, ust_sd_write(sd, iov, iovcnt));
}

ssize_t strm_writev(int fd, const struct iovec *iov, int iovcnt)
{
    ust_call_begin();
    ssize_t r = strm_writev_call(fd, iov, iovcnt);
    ust_call_end();
    return r;
}

/*
 * putmsg -- putmsg(2): flags 0 (a normal message, band 0) or RS_HIPRI;
 * anything else is EINVAL.  Errors otherwise as ust_sd_putpmsg.
 */
static int putmsg_call(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int flags)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOWRITE, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    if (flags != 0 && flags != RS_HIPRI)
        return (int)sd_ret(sd, -EINVAL);
    return (int)sd_ret(
        sd, ust_sd_putpmsg(sd, ctlptr, dataptr, 0, flags == RS_HIPRI ? MSG_HIPRI : MSG_BAND));
}

int putmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int flags)
{
    ust_call_begin();
    int r = putmsg_call(fd, ctlptr, dataptr, flags);
    ust_call_end();
    return r;
}

/*
 * putpmsg -- putpmsg(2): flags MSG_HIPRI (band 0) or MSG_BAND (band 0..255);
 * anything else is EINVAL.  Errors otherwise as ust_sd_putpmsg.
 */
static int putpmsg_call(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int band, int flags)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOWRITE, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    return (int)sd_ret(sd, ust_sd_putpmsg(sd, ctlptr, dataptr, band, flags));
}

int putpmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int band, int flags)
{
    ust_call_begin();
    int r = putpmsg_call(fd, ctlptr, dataptr, band, flags);
    ust_call_end();
    return r;
}
