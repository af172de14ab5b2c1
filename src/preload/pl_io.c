/* SPDX-License-Identifier: MIT */
/*
 * pl_io.c -- read, readv, write, writev (and fortify's __read_chk), close,
 * dup, dup2, dup3, fcntl (fcntl64), ioctl on streams (the shape: pl.h).
 *
 * Async-signal safety: for a descriptor that is not a stream the wrappers
 * add only memory loads to the C library's call (ust_fd_is_stream, the
 * range table, a thread-local), so read/write/close stay as safe in a
 * signal handler as the C library's.  On a stream they run the library's
 * strm_* code, which takes locks: a handler that writes to a stream while
 * the interrupted thread is inside the library may deadlock, as with any
 * strm_* call from a handler (docs/PROGRAMS.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <ustreams.h>

#include "pl.h"

extern void __chk_fail(void) __attribute__((noreturn));

/* The strm_* answer, or the C library's call again when the slot was stale
 * (ENOSTR: the number is not the stream's any more, sd_fd.c "close(2)"). */
#define PL_STREAM(type, strm_call, libc_call)                                                    \
    do {                                                                                         \
        PL_ENTER();                                                                              \
        type r_ = strm_call;                                                                     \
        PL_LEAVE();                                                                              \
        if (r_ < 0 && errno == ENOSTR)                                                           \
            return libc_call;                                                                    \
        return r_;                                                                               \
    } while (0)

ssize_t read(int fd, void *buf, size_t n)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(read)(fd, buf, n);
    PL_STREAM(ssize_t, strm_read(fd, buf, n), PL_REAL(read)(fd, buf, n));
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(read_chk)(fd, buf, n, buflen);
    if (n > buflen)
        __chk_fail();
    PL_STREAM(ssize_t, strm_read(fd, buf, n), PL_REAL(read)(fd, buf, n));
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(readv)(fd, iov, cnt);
    PL_STREAM(ssize_t, strm_readv(fd, iov, cnt), PL_REAL(readv)(fd, iov, cnt));
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(write)(fd, buf, n);
    PL_STREAM(ssize_t, strm_write(fd, buf, n), PL_REAL(write)(fd, buf, n));
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(writev)(fd, iov, cnt);
    PL_STREAM(ssize_t, strm_writev(fd, iov, cnt), PL_REAL(writev)(fd, iov, cnt));
}

int close(int fd)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(close)(fd);
    PL_ENTER();
    int r = strm_close(fd); /* a stale slot: strm_close closes the file itself */
    PL_LEAVE();
    return r;
}

int dup(int fd)
{
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(dup)(fd);
    PL_STREAM(int, strm_fcntl(fd, F_DUPFD, 0), PL_REAL(dup)(fd));
}

/* dup2/dup3 with a stream at either end: a stream at newfd is closed first
 * as close(2) would (so its close runs: hang-up of a pipe's peer, a FIFO's
 * counts); another thread may take the number in between, which the
 * kernel's dup2 would have prevented (docs/PROGRAMS.md). */
static int dup_into(int oldfd, int newfd, int flags, const void *ret)
{
    int old_is = pl_take(oldfd, ret), new_is = pl_take(newfd, ret);
    if (!old_is && !new_is)
        return -2;
    if (oldfd == newfd) /* dup2: nothing happens; dup3: EINVAL (the caller's) */
        return PL_REAL(fcntl)(oldfd, F_GETFD) < 0 ? -1 : newfd;
    PL_ENTER();
    int oi = old_is ? isastream(oldfd) : 0; /* 0: a stale slot, -1: EBADF */
    if (oi < 0) {
        PL_LEAVE();
        return -1; /* newfd untouched, as dup2(2) */
    }
    if (new_is && isastream(newfd) == 1)
        strm_close(newfd);
    int r = oi == 1 ? ust_fd_dup_stream_into(oldfd, newfd, flags) : -2;
    PL_LEAVE();
    return r;
}

int dup2(int oldfd, int newfd)
{
    int r = dup_into(oldfd, newfd, 0, PL_CALLER());
    return r != -2 ? r : PL_REAL(dup2)(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
    if (oldfd == newfd || (flags & ~O_CLOEXEC) != 0) {
        errno = EINVAL;
        return -1;
    }
    int r = dup_into(oldfd, newfd, flags, PL_CALLER());
    return r != -2 ? r : PL_REAL(dup3)(oldfd, newfd, flags);
}

/* fcntl's third argument is one word or none, as the C library reads it. */
static int fcntl_any(int (*real)(int, int, ...), int fd, int cmd, void *arg, const void *ret)
{
    if (!pl_take(fd, ret))
        return real(fd, cmd, arg);
    PL_STREAM(int, strm_fcntl(fd, cmd, arg), real(fd, cmd, arg));
}

int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_any(PL_REAL(fcntl), fd, cmd, arg, PL_CALLER());
}

int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_any(PL_REAL(fcntl64), fd, cmd, arg, PL_CALLER());
}

/* Every request on a stream goes to strm_ioctl: the streamio requests by
 * their numbers, and the others as the head handles them (FIONREAD,
 * FIONBIO, ...; ENOTTY for what it does not know, as for a terminal
 * request on a Solaris stream). */
int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!pl_take(fd, PL_CALLER()))
        return PL_REAL(ioctl)(fd, req, arg);
    PL_STREAM(int, strm_ioctl(fd, req, arg), PL_REAL(ioctl)(fd, req, arg));
}
