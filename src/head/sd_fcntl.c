/* SPDX-License-Identifier: MIT */
/*
 * sd_fcntl.c -- fcntl(2) and isastream(3C) for stream descriptors.
 *
 * Principles of operation
 *   The status flags a stream acts on (O_NONBLOCK, O_NDELAY) live in the
 *   stream head (sd_oflag), the access mode in the descriptor (sd_access.c);
 *   F_DUPFD makes another library descriptor for the stream (sd_fd.c).
 *   Everything else is fcntl(2) on the descriptor itself.
 *
 * Locking
 *   sd_lock of the stream for sd_oflag; no lock of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/resource.h>

#include "sthead.h"

/* F_DUPFD for a stream: a new descriptor >= minfd on the same stream, unless
 * its last reference is gone (EBADF: it is being closed).  -errno on failure
 * (EINVAL: minfd negative or not below RLIMIT_NOFILE, as fcntl(2) says;
 * EMFILE; ENOMEM). */
static int dup_stream_fd(struct stdata *sd, int minfd, int cloexec)
{
    struct rlimit rl;

    if (minfd < 0 || (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)minfd >= rl.rlim_cur))
        return -EINVAL;
    if (!ust_sd_hold_live(sd))
        return -EBADF;
    int fd = ust_sd_dup_fd_min(sd, minfd, cloexec);
    ust_sd_rele(sd);
    return fd;
}

/*
 * strm_fcntl -- fcntl(2) for streams.
 *   Context: any thread; F_DUPFD may allocate.
 *   F_GETFL reports the descriptor's access mode (sd_access.c) and the
 *   O_NONBLOCK of the stream's open (sd_oflag); F_SETFL changes
 *   O_NONBLOCK/O_NDELAY there (the only status flags a stream acts on;
 *   others are ignored, as Linux ignores flags it cannot change).  The
 *   kernel descriptor itself is always non-blocking (the library never
 *   blocks on it), so its own flag is not touched.  Note that
 *   sd_oflag belongs to the stream, so it is shared by every descriptor of
 *   the stream, including those of a shared reopen.
 *   F_DUPFD/F_DUPFD_CLOEXEC make a new descriptor for the same stream (the
 *   lowest free number >= arg) with the access mode of fd.  Every other
 *   command (F_GETFD, F_SETFD, locks, F_SETOWN...) is done by fcntl(2) on the
 *   descriptor, and a descriptor that is not a stream is handed to fcntl(2)
 *   whole.
 *   Returns as fcntl(2); errors EBADF (not open), EINVAL (bad F_DUPFD
 *   argument), EMFILE, or those of fcntl(2).
 */
static int strm_fcntl_call(int fd, int cmd, void *arg)
{
    struct stdata *sd;
    int err, r;

    sd = ust_sd_get_checked(fd, &err);
    if (sd == NULL) {
        if (err == ENOSTR)
            return fcntl(fd, cmd, arg);
        errno = err;
        return -1;
    }
    switch (cmd) {
    case F_GETFL:
        ust_lock(&sd->sd_lock);
        r = sd->sd_oflag & (O_NONBLOCK | O_NDELAY | O_APPEND);
        ust_unlock(&sd->sd_lock);
        r |= ust_sd_acc_oflag(fd); /* the access mode is the descriptor's */
        break;
    case F_SETFL:
        ust_lock(&sd->sd_lock);
        sd->sd_oflag = (sd->sd_oflag & ~(O_NONBLOCK | O_NDELAY)) |
                       ((int)(intptr_t)arg & (O_NONBLOCK | O_NDELAY));
        if (sd->sd_oflag & (O_NONBLOCK | O_NDELAY))
            ust_sd_tok_exact_now(sd, 1); /* an event loop's: no token owed */
        ust_unlock(&sd->sd_lock);
        r = 0;
        break;
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
        r = dup_stream_fd(sd, (int)(intptr_t)arg, cmd == F_DUPFD_CLOEXEC);
        if (r >= 0)
            ust_sd_acc_set(r, ust_sd_acc_get(fd)); /* the duplicate keeps the mode */
        if (r < 0) {
            errno = -r;
            r = -1;
        }
        break;
    default:
        r = fcntl(fd, cmd, arg);
        break;
    }
    ust_sd_put(sd);
    return r;
}

int strm_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *); /* as the C library's fcntl does: one word, maybe unused */
    va_end(ap);
    ust_call_begin();
    int r = strm_fcntl_call(fd, cmd, arg);
    ust_call_end();
    return r;
}

/*
 * isastream -- isastream(3C): 1 if fd is a stream, 0 if it is an open
 * descriptor of something else, -1 with errno EBADF if it is not open.
 *   Context: any thread; no lock.
 */
int isastream(int fd)
{
    struct stdata *sd;

    ust_sd_reap_orphans();
    sd = ust_sd_peek(fd);
    if (sd != NULL && (ust_sd_forked(sd) || ust_sd_fd_is(fd, sd)))
        return 1;
    if (sd != NULL)
        ust_sd_drop_stale(fd, sd);
    if (fd >= 0 && fcntl(fd, F_GETFD) >= 0)
        return 0;
    errno = EBADF;
    return -1;
}
