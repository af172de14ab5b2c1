/* SPDX-License-Identifier: MIT */
/*
 * sd_uio.c -- the cursor over a caller's iovec array (struct ust_sd_uio,
 * sthead.h) from which writes and putmsg copy their data: the array and its
 * buffers are user addresses, read only through ust_copyin (sd_ucopy.h), so
 * a bad one fails the call with EFAULT.
 *
 * Locking: none (the cursor is the caller's).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/uio.h>

#include "sthead.h"

/* Check the array and total its lengths.  0, EFAULT or EINVAL (more than
 * IOV_MAX elements, a negative count, or more than SSIZE_MAX bytes). */
int ust_sd_uio_init(struct ust_sd_uio *u, const struct iovec *iov, int iovcnt, size_t *total)
{
    size_t sum = 0;
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return EINVAL;
    for (int i = 0; i < iovcnt; i++) {
        struct iovec v;
        if (ust_copyin(&iov[i], &v, sizeof(v)) != 0)
            return EFAULT;
        if (v.iov_len > (size_t)SSIZE_MAX - sum)
            return EINVAL;
        sum += v.iov_len;
    }
    u->iov = iov;
    u->iovcnt = iovcnt;
    u->idx = 0;
    u->cur.iov_base = NULL;
    u->cur.iov_len = 0;
    *total = sum;
    return 0;
}

/*
 * ust_sd_uio_copy -- copy the next n bytes of the caller's iovecs into dst.
 *   Context: any thread; any lock may be held (it does not block).
 *   Returns 0 or EFAULT (a bad buffer, or the array changed under us and
 *   holds fewer bytes than it did).
 */
int ust_sd_uio_copy(struct ust_sd_uio *u, unsigned char *dst, size_t n)
{
    while (n > 0) {
        while (u->cur.iov_len == 0) {
            if (u->idx >= u->iovcnt || ust_copyin(&u->iov[u->idx], &u->cur, sizeof(u->cur)) != 0)
                return EFAULT;
            u->idx++;
        }
        size_t k = n < u->cur.iov_len ? n : u->cur.iov_len;
        if (ust_copyin(u->cur.iov_base, dst, k) != 0)
            return EFAULT;
        dst += k;
        n -= k;
        u->cur.iov_base = (char *)u->cur.iov_base + k;
        u->cur.iov_len -= k;
    }
    return 0;
}

/* A plain buffer as a one-element cursor source. */
void ust_sd_uio_single(struct ust_sd_uio *u, struct iovec *one, const void *buf, size_t len)
{
    one->iov_base = (void *)(uintptr_t)buf;
    one->iov_len = len;
    u->iov = one;
    u->iovcnt = 1;
    u->idx = 0;
    u->cur.iov_base = NULL;
    u->cur.iov_len = 0;
}
