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
/* USTREAMS_VERSION ("0.1.0"), USTREAMS_VERSION_MAJOR, _MINOR, _PATCH and
 * USTREAMS_VERSION_NUMBER (major * 10000 + minor * 100 + patch): generated
 * from the build's project version, installed beside this header. */
#include <ustreams_version.h>

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

/*
 * ustreams_copyin / ustreams_copyout -- the library's fault-safe copy, for
 * libraries layered on ustreams (libxnet) whose calls take pointers from
 * their own callers and must fail with EFAULT on a bad one, as a system call
 * does, instead of dying of SIGSEGV.
 *   ustreams_copyin copies len bytes from the caller's address usrc into
 *   dst; ustreams_copyout copies len bytes from src to the caller's address
 *   udst.  Only the caller's side (usrc, udst) may fault: a fault on the
 *   other side (the library's own memory) is a bug and still kills the
 *   process, as do faults anywhere else.
 *   Context: any thread; no system call on success (a thread-local frame
 *   and a jump back from the library's SIGSEGV/SIGBUS handler, which the
 *   first copy installs if no stream was opened yet).  Not async-signal-
 *   safe with respect to the library.
 *   Returns 0, or EFAULT (returned, errno is not set) when the caller's
 *   range cannot be read (written): NULL page, outside user space, not
 *   mapped, or not writable.  After EFAULT the destination may hold any
 *   prefix of the bytes.  len 0 copies nothing and never faults.
 */
int ustreams_copyin(const void *usrc, void *dst, size_t len);
int ustreams_copyout(const void *src, void *udst, size_t len);

/*
 * ustreams_open_module -- strm_open(path, oflag), then push module unless the
 * stream has it already (I_FIND, I_PUSH), in one call: XTI's t_open with
 * timod.  The descriptor is the call's own until it returns: the push takes
 * it without another close-behind check and the module's open gets the
 * credentials read at the open (one read of the ids, not two).
 *   Returns the descriptor and *pushed 1 (pushed by this call) or 0 (the
 *   stream had it), or -1 with errno and *pushed -1 (the open failed, its
 *   errors) or 0 (I_FIND or I_PUSH failed, their errors; nothing is left
 *   open).  A pushed that cannot be written: -1, EFAULT, nothing left open.
 */
int ustreams_open_module(const char *path, int oflag, const char *module, int *pushed);

#ifdef __cplusplus
}
#endif

#endif /* _USTREAMS_H */
