/* SPDX-License-Identifier: MIT */
/*
 * xti_ucopy.c -- libxnet's fault-safe copies between its own memory and the
 * caller's (the t_* functions' pointer arguments): a bad pointer makes the
 * call fail with t_errno TSYSERR and errno EFAULT instead of SIGSEGV.
 *
 * Principles of operation.  The stream head has its own protected copy
 * (src/head/sd_ucopy.c, a SIGSEGV handler and a jump back), but it is not
 * part of libustreams' public API, and libxnet uses only that
 * (tests/layering.cmake).  So libxnet asks the kernel to do the copy, which
 * checks the addresses as for any system call:
 *
 *   1. process_vm_readv / process_vm_writev on the process's own pid: the
 *      kernel copies between the two ranges and fails (or stops short) on
 *      an address that is not mapped readable (writable, for a write).  One
 *      system call copies a whole batch (struct xti_uvec): a struct and the
 *      buffers its netbufs point to, or every element of an iovec array.
 *   2. When those are refused (ENOSYS, EPERM: a seccomp filter, a container
 *      that forbids them), a pipe: write(2) from the source into the pipe,
 *      read(2) from it into the destination, in pieces of PIPE_BUF; the
 *      kernel reports EFAULT for the bad side, and whatever went into the
 *      pipe is drained.  Two system calls per piece, one pipe per process,
 *      used under uc_pipe_lock.
 *
 * Before either, a range that can never be a user address (the NULL page,
 * the kernel half, a wrap-around) fails without a system call, and a length
 * of 0 copies nothing.  NULL pointers that XTI allows as "no argument" are
 * tested by the callers and never reach these functions.
 *
 * The hot path does not come here for data: t_snd / t_rcv hand the user's
 * data buffer to putpmsg / getpmsg, whose own protected copy fails with
 * EFAULT before sending or consuming anything.
 *
 * fork.  The pid is cached (getpid is a system call); the child handler of
 * pthread_atfork forgets it and the pipe, which parent and child would
 * otherwise share.  Limit: a child made by a raw clone(2) that skips the
 * fork handlers would copy from its parent's memory; no such child calls
 * libxnet (posix_spawn children exec at once).
 *
 * Locking: uc_pipe_lock (a leaf) guards the pipe and its use; the pid and
 * the mode are atomics.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "xti_impl.h"

#define UC_USER_TOP 0x800000000000ULL /* end of the x86-64/AArch64 user half */

enum { UC_PVM = 0, UC_PIPE = 1 };

static int uc_mode = UC_PVM; /* atomic: process_vm_* work, else the pipe */
static pid_t uc_pid;         /* atomic: getpid() cached, 0 unknown */
static pthread_once_t uc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t uc_pipe_lock = PTHREAD_MUTEX_INITIALIZER; /* uc_pipe; leaf */
static int uc_pipe[2] = {-1, -1};                                /* uc_pipe_lock */

static void uc_fork_prepare(void)
{
    pthread_mutex_lock(&uc_pipe_lock);
}

static void uc_fork_parent(void)
{
    pthread_mutex_unlock(&uc_pipe_lock);
}

static void uc_fork_child(void)
{
    __atomic_store_n(&uc_pid, 0, __ATOMIC_RELAXED);
    if (uc_pipe[0] >= 0) { /* the parent's pipe: never share it */
        close(uc_pipe[0]);
        close(uc_pipe[1]);
        uc_pipe[0] = uc_pipe[1] = -1;
    }
    pthread_mutex_unlock(&uc_pipe_lock);
}

static void uc_init(void)
{
    pthread_atfork(uc_fork_prepare, uc_fork_parent, uc_fork_child);
}

static pid_t uc_self(void)
{
    pid_t p = __atomic_load_n(&uc_pid, __ATOMIC_RELAXED);

    if (p == 0) {
        pthread_once(&uc_once, uc_init);
        p = getpid();
        __atomic_store_n(&uc_pid, p, __ATOMIC_RELAXED);
    }
    return p;
}

/* Never a user address: the NULL page, the kernel half, a wrap-around. */
static int uc_bad(const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p;

    return a < 4096 || a >= UC_USER_TOP || a + len < a || a + len > UC_USER_TOP;
}

void xti_uv_init(struct xti_uvec *v)
{
    v->n = 0;
    v->bad = 0;
    v->total = 0;
}

void xti_uv_add(struct xti_uvec *v, void *lib, const void *user, size_t len)
{
    if (len == 0)
        return;
    if (uc_bad(user, len) || v->n >= XTI_UV_MAX) {
        v->bad = 1;
        return;
    }
    v->loc[v->n].iov_base = lib;
    v->loc[v->n].iov_len = len;
    v->rem[v->n].iov_base = (void *)(uintptr_t)user;
    v->rem[v->n].iov_len = len;
    v->n++;
    v->total += len;
}

/* Drain the pipe after a failed piece (uc_pipe_lock held). */
static void uc_pipe_drain(void)
{
    char junk[512];

    while (read(uc_pipe[0], junk, sizeof(junk)) > 0)
        ;
}

/* Copy len bytes from src to dst through the pipe (uc_pipe_lock held). */
static int uc_pipe_one(void *dst, const void *src, size_t len)
{
    const char *s = src;
    char *d = dst;

    while (len) {
        size_t n = len < PIPE_BUF ? len : PIPE_BUF;
        ssize_t w = write(uc_pipe[1], s, n);
        if (w != (ssize_t)n) {
            uc_pipe_drain();
            return EFAULT;
        }
        ssize_t r = read(uc_pipe[0], d, n);
        if (r != (ssize_t)n) {
            uc_pipe_drain();
            return EFAULT;
        }
        s += n;
        d += n;
        len -= n;
    }
    return 0;
}

/* The batch through the pipe. 0 or an errno. */
static int uc_pipe_run(const struct xti_uvec *v, int to_user)
{
    int e = 0;

    pthread_mutex_lock(&uc_pipe_lock); /* the pipe: one copy at a time */
    if (uc_pipe[0] < 0 && pipe2(uc_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        e = errno;
    for (int i = 0; e == 0 && i < v->n; i++) {
        if (to_user)
            e = uc_pipe_one(v->rem[i].iov_base, v->loc[i].iov_base, v->loc[i].iov_len);
        else
            e = uc_pipe_one(v->loc[i].iov_base, v->rem[i].iov_base, v->loc[i].iov_len);
    }
    pthread_mutex_unlock(&uc_pipe_lock);
    return e;
}

/* Run a batch in one direction: 0, or -1 with t_errno TSYSERR (EFAULT). */
static int uc_run(const struct xti_uvec *v, int to_user)
{
    if (v->bad)
        return xti_syserr(EFAULT);
    if (v->n == 0)
        return 0;
    if (__atomic_load_n(&uc_mode, __ATOMIC_RELAXED) == UC_PVM) {
        for (int tries = 0; tries < 2; tries++) {
            pid_t self = uc_self();
            ssize_t n = to_user ? process_vm_writev(self, v->loc, (unsigned long)v->n, v->rem,
                                                    (unsigned long)v->n, 0)
                                : process_vm_readv(self, v->loc, (unsigned long)v->n, v->rem,
                                                   (unsigned long)v->n, 0);
            if (n >= 0)
                return (size_t)n == v->total ? 0 : xti_syserr(EFAULT);
            if (errno == EFAULT || errno == ENOMEM)
                return xti_syserr(EFAULT);
            if (errno == ESRCH && self != getpid()) { /* a stale pid (clone) */
                __atomic_store_n(&uc_pid, 0, __ATOMIC_RELAXED);
                continue;
            }
            if (errno != ENOSYS && errno != EPERM && errno != EACCES)
                return xti_syserr(errno);
            __atomic_store_n(&uc_mode, UC_PIPE, __ATOMIC_RELAXED);
            break;
        }
    }
    int e = uc_pipe_run(v, to_user);
    return e ? xti_syserr(e) : 0;
}

int xti_uv_read(const struct xti_uvec *v)
{
    return uc_run(v, 0);
}

int xti_uv_write(const struct xti_uvec *v)
{
    return uc_run(v, 1);
}

int xti_uread(void *dst, const void *usrc, size_t len)
{
    struct xti_uvec v;

    xti_uv_init(&v);
    xti_uv_add(&v, dst, usrc, len);
    return xti_uv_read(&v);
}

int xti_uwrite(void *udst, const void *src, size_t len)
{
    struct xti_uvec v;

    xti_uv_init(&v);
    xti_uv_add(&v, (void *)(uintptr_t)src, udst, len);
    return xti_uv_write(&v);
}

int xti_ustr(char *dst, const char *usrc, size_t size)
{
    size_t at = 0;
    const size_t pg = 4096;

    if (size == 0)
        return xti_syserr(EFAULT);
    while (at < size - 1) {
        /* One page at a time: the string may end just before a bad page. */
        uintptr_t a = (uintptr_t)(usrc + at);
        size_t n = pg - (a & (pg - 1));
        if (n > size - 1 - at)
            n = size - 1 - at;
        if (xti_uread(dst + at, usrc + at, n) < 0)
            return -1;
        void *z = memchr(dst + at, '\0', n);
        if (z)
            return 0;
        at += n;
    }
    dst[size - 1] = '\0'; /* cut: the caller prints a prefix */
    return 0;
}
