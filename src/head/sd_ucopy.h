/* SPDX-License-Identifier: MIT */
/*
 * sd_ucopy.h -- fault-safe copies between the library and the caller's
 * memory (sd_ucopy.c): what the kernel's copyin/copyout are to a system call.
 *
 * Every pointer a caller hands to a STREAMS call (buffers, iovec arrays,
 * strbufs, ioctl arguments, names, pollfd arrays) is a "user address": the
 * stream head touches it only through these functions, so that a bad one
 * fails the call with EFAULT instead of killing the process, and nothing is
 * sent or consumed by a call that faults.
 */
#ifndef UST_SD_UCOPY_H
#define UST_SD_UCOPY_H

#include <stddef.h>

/*
 * ust_copyin / ust_copyout -- copy len bytes from the user address uaddr into
 *   library memory kaddr / from kaddr to the user address uaddr.
 *   Context: any thread, any lock held (never blocks, no system call on
 *   success).  Not async-signal-safe with respect to the library (no STREAMS
 *   call is).
 *   Returns 0, or EFAULT when uaddr..uaddr+len cannot be read (written): NULL
 *   page, outside user space, unmapped, or (copyout) not writable.  After
 *   EFAULT the destination may hold any prefix of the bytes: callers treat
 *   it as garbage and change no state.  len 0 never faults.
 */
int ust_copyin(const void *uaddr, void *kaddr, size_t len);
int ust_copyout(const void *kaddr, void *uaddr, size_t len);

/*
 * ust_copyin_rw -- ust_copyin of an argument that is also an output (a
 *   flags word, a strbuf whose len comes back): copies it in and writes the
 *   same bytes back, so that a call checks that its outputs are writable
 *   before it consumes anything it could then not report.  One protected
 *   copy instead of a copyin and a probing copyout.
 *   Returns 0, or EFAULT (not readable, or not writable).
 */
int ust_copyin_rw(void *uaddr, void *kaddr, size_t len);

/*
 * ust_strncpy_in -- copy the NUL-terminated string at the user address usrc
 *   into dst (size bytes), stopping at the NUL; *lenp gets its length.
 *   Context: as ust_copyin.  Bytes after the NUL are never read, so a string
 *   that ends just before an unmapped page is fine.
 *   Returns 0, EFAULT (usrc bad before a NUL was found), or ENAMETOOLONG (no
 *   NUL in the first size bytes; dst is then not terminated).
 */
int ust_strncpy_in(const char *usrc, char *dst, size_t size, size_t *lenp);

/*
 * ust_ucopy_check -- install the fault handler if it is not (or no longer)
 *   the process's SIGSEGV/SIGBUS handler, chaining to whatever is there.
 *   The copies install it on first use; stream opens call this again so that
 *   a handler the application installed after the library is chained behind
 *   the library's instead of replacing it.  Once installed it looks at most
 *   once per millisecond (a call within 1 ms of the last look returns at
 *   once, no system call): an open 1 ms or more after the application's
 *   sigaction always chains it.
 *   Context: any thread, no lock held; two sigaction(2) calls when it looks,
 *   four when it installs.  Takes the ucopy install lock (a leaf).
 */
void ust_ucopy_check(void);

/* ust_ucopy_nchecks -- how many times ust_ucopy_check looked (tests). */
unsigned long ust_ucopy_nchecks(void);

/* fork() hooks (sd_fork.c, rank UST_FORK_HEAD_UCOPY): take ucopy_lock before
 * fork, release it in the parent and in the child. */
void ust_ucopy_fork_prepare(void);
void ust_ucopy_fork_release(void);

#endif /* UST_SD_UCOPY_H */
