/* SPDX-License-Identifier: MIT */
/*
 * ustreams.h -- the system-call interface of ustreams.
 *
 * Each strm_* call has the signature and errno conventions of its POSIX
 * namesake and works on the descriptors strm_open and strm_pipe return: real
 * file descriptors, reserved by the library, that poll/epoll/select report
 * ready when the stream is (readable when a message can be read, writable when
 * a write would not block, hang-up).  putmsg, getmsg, putpmsg, getpmsg,
 * isastream, fattach and fdetach are declared in <stropts.h>.
 *
 * Devices: "/dev/streams/<driver>" opens minor 0 of a driver (or a clone, for
 * clone drivers), "/dev/streams/clone/<driver>" a new minor per open.
 */
#ifndef _USTREAMS_H
#define _USTREAMS_H

#include <poll.h>
#include <stropts.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <ustreams_exec.h>

#ifdef __cplusplus
extern "C" {
#endif

int strm_open(const char *path, int oflag, ...);
int strm_close(int fd);
ssize_t strm_read(int fd, void *buf, size_t count);
ssize_t strm_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t strm_write(int fd, const void *buf, size_t count);
ssize_t strm_writev(int fd, const struct iovec *iov, int iovcnt);
int strm_ioctl(int fd, unsigned long request, ...);
int strm_poll(struct pollfd *fds, nfds_t nfds, int timeout);
int strm_pipe(int fds[2]);
int strm_fcntl(int fd, int cmd, ...);

#ifdef __cplusplus
}
#endif

#endif /* _USTREAMS_H */
