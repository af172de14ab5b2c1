/* SPDX-License-Identifier: MIT */
/*
 * pl_open.c -- open, open64, openat, openat64, creat, creat64 and fortify's
 * __open_2, __open64_2, __openat_2, __openat64_2.
 *
 * The rule (which names are streams) is ust_name_is_stream
 * (src/procs/sd_name_probe.c): /dev/streams/..., /dev/<driver>, FIFO nodes,
 * fattach'd files; everything else is opened by the C library.  Opens that
 * no stream name can satisfy skip the probe: O_PATH, O_DIRECTORY,
 * O_TMPFILE, and O_CREAT|O_EXCL outside /dev/streams/ (a new file).
 * Not async-signal-safe (neither is strm_open); open(2) of a plain file from
 * a signal handler costs the probe's system calls and takes no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include <ustreams.h>

#include "pl.h"

#ifndef O_TMPFILE
#define O_TMPFILE 0
#endif

int pl_open_stream(int dirfd, const char *path, int flags)
{
    char name[4096];

    if (pl_own_copy || path == NULL || (flags & (O_PATH | O_DIRECTORY)) != 0 ||
        (O_TMPFILE != 0 && (flags & O_TMPFILE) == O_TMPFILE))
        return -2;
    if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) && strncmp(path, "/dev/streams/", 13) != 0)
        return -2;
    if (!ust_name_is_stream(dirfd, path, name, sizeof(name)))
        return -2;
    PL_ENTER();
    int fd = strm_open(name, flags);
    PL_LEAVE();
    return fd;
}

/* The mode argument is there only with O_CREAT or O_TMPFILE. */
#define PL_MODE(flags)                                                                           \
    mode_t mode = 0;                                                                             \
    if ((flags & O_CREAT) || (O_TMPFILE != 0 && (flags & O_TMPFILE) == O_TMPFILE)) {             \
        va_list ap;                                                                              \
        va_start(ap, flags);                                                                     \
        mode = va_arg(ap, mode_t);                                                               \
        va_end(ap);                                                                              \
    }

int open(const char *path, int flags, ...)
{
    PL_MODE(flags);
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(AT_FDCWD, path, flags);
    return r != -2 ? r : PL_REAL(open)(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    PL_MODE(flags);
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(AT_FDCWD, path, flags);
    return r != -2 ? r : PL_REAL(open64)(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    PL_MODE(flags);
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(dirfd, path, flags);
    return r != -2 ? r : PL_REAL(openat)(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    PL_MODE(flags);
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(dirfd, path, flags);
    return r != -2 ? r : PL_REAL(openat64)(dirfd, path, flags, mode);
}

int creat(const char *path, mode_t mode)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(AT_FDCWD, path, flags);
    return r != -2 ? r : PL_REAL(creat)(path, mode);
}

int creat64(const char *path, mode_t mode)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(AT_FDCWD, path, flags);
    return r != -2 ? r : PL_REAL(creat64)(path, mode);
}

/* Fortify's forms (no mode: they abort on O_CREAT without one, which the
 * C library's own __open_2 still does for names that are not streams). */
int __open_2(const char *path, int flags)
{
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(AT_FDCWD, path, flags);
    return r != -2 ? r : PL_REAL(open_2)(path, flags);
}

int __open64_2(const char *path, int flags)
{
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(AT_FDCWD, path, flags);
    return r != -2 ? r : PL_REAL(open64_2)(path, flags);
}

int __openat_2(int dirfd, const char *path, int flags)
{
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(dirfd, path, flags);
    return r != -2 ? r : PL_REAL(openat_2)(dirfd, path, flags);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
    int r = pl_from_lib(PL_CALLER()) ? -2 : pl_open_stream(dirfd, path, flags);
    return r != -2 ? r : PL_REAL(openat64_2)(dirfd, path, flags);
}
