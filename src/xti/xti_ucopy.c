/* SPDX-License-Identifier: MIT */
/*
 * xti_ucopy.c -- libxnet's fault-safe copies between its own memory and the
 * caller's (the t_* functions' pointer arguments): a bad pointer makes the
 * call fail with t_errno TSYSERR and errno EFAULT instead of SIGSEGV.
 *
 * Principles of operation.  libxnet uses only libustreams' public API
 * (tests/layering.cmake), which offers the stream head's own protected copy
 * as ustreams_copyin / ustreams_copyout (ustreams.h, src/head/sd_ucopy.c):
 * a thread-local frame, the copy, and on a fault in the caller's range a
 * jump back from the library's SIGSEGV/SIGBUS handler.  No system call on
 * success, so a t_* call pays a few nanoseconds per struct instead of a
 * process_vm_readv (which is what libxnet used before, with a pipe as the
 * fallback where seccomp refused it; both are gone).  Only the caller's
 * side of a copy may fault: a fault in libxnet's own memory is a bug and
 * still kills the process.
 *
 * A batch (struct xti_uvec: a struct and the buffers its netbufs point to,
 * or every element of an iovec array) is run element by element and stops
 * at the first fault.  Before that, a range that can never be a user
 * address (the NULL page, the kernel half, a wrap-around) marks the batch
 * bad when it is added, so such a batch copies nothing, and a length of 0
 * copies nothing.  NULL pointers that XTI allows as "no argument" are tested
 * by the callers and never reach these functions.
 *
 * The hot path does not come here for data: t_snd / t_rcv hand the user's
 * data buffer to putpmsg / getpmsg, whose own protected copy fails with
 * EFAULT before sending or consuming anything.
 *
 * Locking: none; everything is on the caller's stack.  No process state, so
 * fork and raw clone(2) children need nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <ustreams.h>

#include "xti_impl.h"

#define UC_USER_TOP 0x800000000000ULL /* end of the x86-64/AArch64 user half */

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

/* Run a batch in one direction: 0, or -1 with t_errno TSYSERR (EFAULT).
 * Stops at the first element that faults. */
static int uc_run(const struct xti_uvec *v, int to_user)
{
    if (v->bad)
        return xti_syserr(EFAULT);
    for (int i = 0; i < v->n; i++) {
        int e = to_user ? ustreams_copyout(v->loc[i].iov_base, v->rem[i].iov_base,
                                           v->loc[i].iov_len)
                        : ustreams_copyin(v->rem[i].iov_base, v->loc[i].iov_base,
                                          v->loc[i].iov_len);
        if (e != 0)
            return xti_syserr(e);
    }
    return 0;
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
