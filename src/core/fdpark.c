/* SPDX-License-Identifier: MIT */
/*
 * fdpark.c -- the library's own long-lived descriptors kept out of the way
 *   of the numbers programs name themselves.
 *
 * A shell runs `exec 3<>file` as open() then dup2() onto 3, and programs
 * dup2 onto 0, 1, 2 and other small numbers they pick; a descriptor of the
 * library sitting there (its io_uring, its epoll set, the published
 * socket, the loggers' sockets) would be closed under it.  So those are
 * moved to UST_FD_PARK_MIN or above when they are made, as shells do with
 * their own (POSIX leaves 0-9 to the user in the shell language).  The
 * descriptors a program gets (a stream's U) stay the lowest free number, as
 * open(2) gives.
 *
 * Locking: none.
 */
#include <fcntl.h>
#include <unistd.h>

#include "strcore.h"

int ust_fd_park(int fd)
{
    if (fd < 0 || fd >= UST_FD_PARK_MIN)
        return fd;
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, UST_FD_PARK_MIN);
    if (nfd < 0)
        return fd; /* no room up there: it stays where it is */
    close(fd);
    return nfd;
}
