/* SPDX-License-Identifier: MIT */
/*
 * sd_preload.h -- what the preload library (src/preload/,
 * libustreams-preload.so) asks of libustreams.  Private: exported by the
 * shared library only because the preload object is another one; no
 * program should call these.
 */
#ifndef UST_SD_PRELOAD_H
#define UST_SD_PRELOAD_H

/*
 * ust_fd_is_stream -- 1 if the descriptor table of this process has a
 *   stream at fd, else 0.
 *   Context: any thread, and signal handlers: a few atomic loads, no lock,
 *   no system call, no allocation.
 *   A 1 may be stale (the number was closed behind the library's back and
 *   reused: sd_fd.c, "close(2)"): the strm_* call it leads to checks the
 *   number (fstat) and fails ENOSTR for a file that is not the stream, which
 *   the caller then hands to the C library.  A 0 is exact for the streams of
 *   this process (every descriptor of a stream is in the table before its
 *   number is returned).
 */
int ust_fd_is_stream(int fd);

/*
 * ust_fd_dup_stream_into -- dup2/dup3 of a stream descriptor: newfd becomes
 *   a descriptor of the stream of oldfd (same access mode), close-on-exec
 *   when flags has O_CLOEXEC.  Whatever newfd was is replaced by the kernel
 *   atomically (dup3); if it was a stream of the table, that stream loses
 *   the descriptor as after a close behind the library's back (released by
 *   the next strm_* call's check), so callers close a stream at newfd with
 *   strm_close first.
 *   Context: any thread, may block briefly on the stream's sd_lock.
 *   Returns newfd, or -1 with errno EBADF (oldfd not open, newfd negative),
 *   ENOSTR (oldfd is not a stream), EINVAL (flags other than O_CLOEXEC),
 *   ENOMEM, or dup3(2)'s errors.
 */
int ust_fd_dup_stream_into(int oldfd, int newfd, int flags);

/*
 * ust_name_is_stream -- 1 if strm_open of path (relative to dirfd, as
 *   openat(2)) would open a stream rather than the file itself, so that the
 *   preload hands it to strm_open; 0 if the C library should open it.
 *   A stream name is: /dev/streams/..., /dev/<driver> of a registered
 *   driver (or a FIFO driver), a FIFO node (mkfifo), a file attached with
 *   fattach(3) in this process, or a file with a listener at its
 *   rendezvous name (attached in another process; strm_open verifies the
 *   owner).  *path_out receives the name strm_open must be given (path, or
 *   /proc/self/fd/<dirfd>/path for a relative path under a directory
 *   descriptor), pathsz bytes.
 *   Context: any thread; system calls: none for /dev/ names, an fstatat,
 *   and for a non-FIFO a socket, a connect and a close (the rendezvous
 *   probe).  Not async-signal-safe (open is not either in the preload).
 */
int ust_name_is_stream(int dirfd, const char *path, char *path_out, unsigned long pathsz);

#endif /* UST_SD_PRELOAD_H */
