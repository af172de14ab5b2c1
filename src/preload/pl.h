/* SPDX-License-Identifier: MIT */
/*
 * pl.h -- the preload library's internals (libustreams-preload.so, issue 22
 * item 1; docs/PROGRAMS.md, "Unmodified programs: ustreams run").
 *
 * Every wrapper has the same shape:
 *   1. the cheap check: is the descriptor (or one of the set) a stream of
 *      this process (ust_fd_is_stream: atomic loads, no system call)?  No:
 *      straight to the C library's function (pl_real, found once with
 *      dlsym(RTLD_NEXT)).
 *   2. is the caller the library itself (pl_from_lib)?  Yes: the C library,
 *      since libustreams and libxnet call read/close/poll/... on the
 *      readiness descriptors of the streams they implement.
 *   3. the strm_* call, inside PL_ENTER/PL_LEAVE (which mark the thread as
 *      inside the library for step 2); a strm_* answer ENOSTR means the
 *      table's slot was stale (the number closed behind the library's back
 *      and reused): the call goes to the C library after all.
 */
#ifndef UST_PRELOAD_PL_H
#define UST_PRELOAD_PL_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "sd_preload.h"

/* The C library's functions (the next definition after this object). */
struct pl_real {
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*read_chk)(int, void *, size_t, size_t);
    int (*close)(int);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
    int (*ioctl)(int, unsigned long, ...);
    int (*open)(const char *, int, ...);
    int (*open64)(const char *, int, ...);
    int (*openat)(int, const char *, int, ...);
    int (*openat64)(int, const char *, int, ...);
    int (*open_2)(const char *, int);
    int (*open64_2)(const char *, int);
    int (*openat_2)(int, const char *, int);
    int (*openat64_2)(int, const char *, int);
    int (*creat)(const char *, mode_t);
    int (*creat64)(const char *, mode_t);
    int (*poll)(struct pollfd *, nfds_t, int);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
    int (*poll_chk)(struct pollfd *, nfds_t, int, size_t);
    int (*ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
    int (*epoll_ctl)(int, int, int, struct epoll_event *);
    int (*pipe)(int[2]);
    int (*pipe2)(int[2], int);
};
extern struct pl_real pl_real;

/* Resolve pl_real (idempotent; the constructor runs it, and a wrapper
 * called before it, from libustreams' own constructor, too). */
void pl_init(void);

/* The C library's `name`, resolved on first use. */
#define PL_REAL(name) (__builtin_expect(pl_real.name != NULL, 1) ? pl_real.name : (pl_init(), pl_real.name))

/* Depth of strm_* calls made by a wrapper on this thread (initial-exec TLS:
 * no allocation, safe in a signal handler). */
extern __thread int pl_depth __attribute__((tls_model("initial-exec")));
/* ppoll/pselect's signal mask, for the poll(2) strm_poll makes on this
 * thread while the wrapper is inside it (pl_poll.c); NULL otherwise. */
extern __thread const sigset_t *pl_sigmask __attribute__((tls_model("initial-exec")));

#define PL_ENTER() (pl_depth++)
#define PL_LEAVE() (pl_depth--)

/* 1 if a call whose return address is ret comes from libustreams or
 * libxnet (their text), or from inside a strm_* call a wrapper made on this
 * thread: such a call goes to the C library. */
int pl_from_lib(const void *ret);
/* Look for the libraries' text again (a libxnet dlopen()ed since). */
void pl_ranges_refresh(void);

#define PL_CALLER() __builtin_return_address(0)

/* USTREAMS_PRELOAD_PIPES=1 at start: pipe(2) makes STREAMS pipes. */
extern int pl_pipes;
/* The program exports a strm_open of its own (pl_core.c): open and pipe
 * are not wrapped. */
extern int pl_own_copy;

/* 1 if fd is a stream and the caller (ret) is the program's. */
static inline int pl_take(int fd, const void *ret)
{
    return __builtin_expect(ust_fd_is_stream(fd), 0) && !pl_from_lib(ret);
}

/* The open rule (pl_open.c), shared by every open variant: -2 when the C
 * library must open it (the caller calls its real function), else the
 * strm_open result. */
int pl_open_stream(int dirfd, const char *path, int flags);

#endif /* UST_PRELOAD_PL_H */
