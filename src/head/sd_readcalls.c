/* SPDX-License-Identifier: MIT */
/*
 * sd_readcalls.c -- the read side's system calls: strm_read, strm_readv,
 * getmsg and getpmsg.  Each looks the descriptor up (its access mode
 * included), checks and copies the caller's arguments, and hands the work to
 * ust_sd_read / ust_sd_getpmsg (sd_read.c, sd_getmsg.c), mapping -errno to errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "sthead.h"

/* ------------------------------------------------------------------------ */
/* The system calls                                                         */
/* ------------------------------------------------------------------------ */

/*
 * strm_read / strm_readv -- read(2) and readv(2) of a stream descriptor.
 *   Errors (errno): EBADF, ENOSTR (not a stream), EINVAL (iovcnt <= 0 or >
 *   IOV_MAX, ...), EFAULT, and those of ust_sd_read.  A count above
 *   SSIZE_MAX is cut to SSIZE_MAX.
 */
static ssize_t strm_read_call(int fd, void *buf, size_t count)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOREAD, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    if (count > (size_t)SSIZE_MAX)
        count = SSIZE_MAX;
    struct iovec v = {buf, count};
    ssize_t r = ust_sd_read(sd, &v, 1);
    ust_sd_put(sd);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

ssize_t strm_read(int fd, void *buf, size_t count)
{
    ust_call_begin();
    ssize_t r = strm_read_call(fd, buf, count);
    ust_call_end();
    return r;
}

static ssize_t strm_readv_call(int fd, const struct iovec *iov, int iovcnt)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOREAD, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    ssize_t r;
    struct iovec kv[IOV_MAX];
    if (iovcnt <= 0 || iovcnt > IOV_MAX)
        r = -EINVAL;
    else if (ust_copyin(iov, kv, (size_t)iovcnt * sizeof(*kv)) != 0)
        r = -EFAULT;
    else
        r = ust_sd_read(sd, kv, iovcnt);
    ust_sd_put(sd);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

ssize_t strm_readv(int fd, const struct iovec *iov, int iovcnt)
{
    ust_call_begin();
    ssize_t r = strm_readv_call(fd, iov, iovcnt);
    ust_call_end();
    return r;
}

/* Copy in a strbuf the caller passed (NULL stays NULL).  0 or EFAULT. */
static int strbuf_in(const struct strbuf *u, struct strbuf *k, struct strbuf **kp)
{
    *kp = NULL;
    if (!u)
        return 0;
    if (ust_copyin_rw((void *)(uintptr_t)u, k, sizeof(*k)) != 0) /* len is an output */
        return EFAULT;
    *kp = k;
    return 0;
}

/* Copy back the len member of a strbuf.  0 or EFAULT. */
static int strbuf_out(struct strbuf *u, const struct strbuf *k)
{
    if (!u)
        return 0;
    return ust_copyout(&k->len, &u->len, sizeof(k->len));
}

/* getpmsg with flags in getpmsg terms; getmsg adapts its own. */
static int do_getpmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *band, int *flags)
{
    int err;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOREAD, &err);
    if (!sd)
        return -err;
    struct strbuf kc, kd, *pc, *pd;
    int r;
    if (strbuf_in(ctlptr, &kc, &pc) != 0 || strbuf_in(dataptr, &kd, &pd) != 0)
        r = -EFAULT;
    else
        r = ust_sd_getpmsg(sd, pc, pd, band, flags);
    ust_sd_put(sd);
    if (r >= 0 && (strbuf_out(ctlptr, &kc) != 0 || strbuf_out(dataptr, &kd) != 0))
        r = -EFAULT;
    return r;
}

/* Fail a call with err, unless fd is bad (EBADF/ENOSTR come first, and
 * EBADF for a descriptor not open for reading). */
static int fail_after_fd(int fd, int err)
{
    int e;
    struct stdata *sd = ust_sd_get_acc(fd, UST_ACC_NOREAD, &e);
    if (sd)
        ust_sd_put(sd);
    errno = sd ? err : e;
    return -1;
}

/*
 * getpmsg / getmsg -- getpmsg(2) and getmsg(2).  getmsg takes *flagsp 0 (any
 *   message) or RS_HIPRI and returns RS_HIPRI or 0 in it.  Errors (errno):
 *   EBADF, ENOSTR first, then EFAULT (flagsp, bandp, the strbufs), EINVAL,
 *   and those of ust_sd_getpmsg.
 */
static int getpmsg_call(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *bandp, int *flagsp)
{
    int flags, band;
    if (ust_copyin_rw(flagsp, &flags, sizeof(flags)) != 0 || /* outputs too */
        ust_copyin_rw(bandp, &band, sizeof(band)) != 0)
        return fail_after_fd(fd, EFAULT);
    int r = do_getpmsg(fd, ctlptr, dataptr, &band, &flags);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    ust_copyout(&flags, flagsp, sizeof(flags));
    ust_copyout(&band, bandp, sizeof(band));
    return r;
}

int getpmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *bandp, int *flagsp)
{
    ust_call_begin();
    int r = getpmsg_call(fd, ctlptr, dataptr, bandp, flagsp);
    ust_call_end();
    return r;
}

static int getmsg_call(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *flagsp)
{
    int flags, band = 0;
    if (ust_copyin_rw(flagsp, &flags, sizeof(flags)) != 0) /* an output too */
        return fail_after_fd(fd, EFAULT);
    int pflags = flags == 0 ? MSG_ANY : flags == RS_HIPRI ? MSG_HIPRI : -1;
    if (pflags < 0)
        return fail_after_fd(fd, EINVAL);
    int r = do_getpmsg(fd, ctlptr, dataptr, &band, &pflags);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    flags = pflags == MSG_HIPRI ? RS_HIPRI : 0;
    ust_copyout(&flags, flagsp, sizeof(flags));
    return r;
}

int getmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *flagsp)
{
    ust_call_begin();
    int r = getmsg_call(fd, ctlptr, dataptr, flagsp);
    ust_call_end();
    return r;
}
