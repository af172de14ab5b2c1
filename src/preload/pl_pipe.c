/* SPDX-License-Identifier: MIT */
/*
 * pl_pipe.c -- pipe and pipe2 as STREAMS pipes (strm_pipe), as SVR4's pipes
 * are, when USTREAMS_PRELOAD_PIPES=1 was set at start (`ustreams run
 * --pipes`); otherwise, and for the library's own pipes, the kernel's.
 * pipe2's O_CLOEXEC and O_NONBLOCK apply to both ends; O_DIRECT (the
 * kernel's packet mode) keeps the kernel pipe: a STREAMS pipe keeps message
 * boundaries anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <ustreams.h>

#include "pl.h"

static int stream_pipe(int fds[2], int flags)
{
    if ((flags & ~(O_CLOEXEC | O_NONBLOCK)) != 0) {
        errno = EINVAL;
        return -1;
    }
    PL_ENTER();
    int r = strm_pipe(fds);
    for (int i = 0; r == 0 && i < 2; i++) {
        if (flags & O_CLOEXEC)
            PL_REAL(fcntl)(fds[i], F_SETFD, FD_CLOEXEC);
        if (flags & O_NONBLOCK)
            strm_fcntl(fds[i], F_SETFL, O_NONBLOCK);
    }
    PL_LEAVE();
    return r;
}

/* The program's pipe, with STREAMS pipes asked for. */
static int wanted(const void *ret)
{
    if (!pl_pipes || pl_own_copy)
        return 0;
    pl_ranges_refresh(); /* a libxnet dlopen()ed since: its pipes are its own */
    return !pl_from_lib(ret);
}

int pipe(int fds[2])
{
    if (!wanted(PL_CALLER()))
        return PL_REAL(pipe)(fds);
    return stream_pipe(fds, 0);
}

int pipe2(int fds[2], int flags)
{
    if (!wanted(PL_CALLER()) || (flags & O_DIRECT))
        return PL_REAL(pipe2)(fds, flags);
    return stream_pipe(fds, flags);
}
