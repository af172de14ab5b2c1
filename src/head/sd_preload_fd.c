/* SPDX-License-Identifier: MIT */
/*
 * sd_preload_fd.c -- the descriptor table as the preload library sees it
 * (sd_preload.h): the "is this a stream" check of every wrapped call, and
 * dup2/dup3 onto a chosen number.
 *
 * The check reads the table of sd_fd.c without a lock (ust_sd_peek: atomic
 * loads of a chunk pointer and a slot), so it costs no system call and is
 * safe in a signal handler.  It does not run ust_sd_notice_closes: that may
 * reap streams (locks, fstat), which a signal handler must not do; the
 * strm_* call a 1 leads to runs it.
 */
#include <errno.h>
#include <fcntl.h>

#include "sd_preload.h"
#include "sthead.h"

int ust_fd_is_stream(int fd)
{
    return ust_sd_peek(fd) != NULL;
}

int ust_fd_dup_stream_into(int oldfd, int newfd, int flags)
{
    struct stdata *sd;
    int err, r;

    if ((flags & ~O_CLOEXEC) != 0) {
        errno = EINVAL;
        return -1;
    }
    if (newfd < 0) {
        errno = EBADF;
        return -1;
    }
    ust_call_begin();
    sd = ust_sd_get_checked(oldfd, &err);
    if (sd == NULL) {
        ust_call_end();
        errno = err;
        return -1;
    }
    int acc = ust_sd_acc_get(oldfd);
    int held = ust_sd_hold_live(sd); /* none left: it is being closed */
    r = held ? ust_sd_dup_fd_into(sd, newfd) : -EBADF;
    if (held)
        ust_sd_rele(sd);
    if (r >= 0) {
        ust_sd_acc_set(r, acc); /* the duplicate keeps the mode */
        if (flags & O_CLOEXEC)
            fcntl(r, F_SETFD, FD_CLOEXEC);
    }
    ust_sd_put(sd);
    ust_call_end();
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}
