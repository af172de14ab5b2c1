/* SPDX-License-Identifier: MIT */
/*
 * perftest_peers.c -- the kernel's pipes as perftest peers (tools/perftest.h):
 * pipe(2), and AF_UNIX SOCK_STREAM and SOCK_SEQPACKET socketpairs, moved with
 * the ordinary read(2)/write(2).  --hiwat sets the pipe size (F_SETPIPE_SZ) or
 * the socket buffers (SO_RCVBUF on the reader's end, SO_SNDBUF on the
 * writer's).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <sys/socket.h>

#include "perftest.h"

static int mk_pipe(int *wfd, int *rfd)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    *rfd = fds[0];
    *wfd = fds[1];
    return 0;
}

static int pipe_buffers(int wfd, int rfd, int bytes)
{
    (void)rfd;
    return fcntl(wfd, F_SETPIPE_SZ, bytes) < 0 ? errno : 0;
}

static int mk_socketpair(int type, int *wfd, int *rfd)
{
    int fds[2];
    if (socketpair(AF_UNIX, type, 0, fds) < 0)
        return -1;
    *wfd = fds[0];
    *rfd = fds[1];
    return 0;
}

static int mk_unix_stream(int *wfd, int *rfd)
{
    return mk_socketpair(SOCK_STREAM, wfd, rfd);
}

static int mk_unix_seqpacket(int *wfd, int *rfd)
{
    return mk_socketpair(SOCK_SEQPACKET, wfd, rfd);
}

static int socket_buffers(int wfd, int rfd, int bytes)
{
    if (setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) < 0 ||
        setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) < 0)
        return errno;
    return 0;
}

const struct ust_perftest_impl ust_perftest_pipe = {
    "pipe", 0, mk_pipe, pipe_buffers, read, write, close, poll, fcntl, 0,
};

const struct ust_perftest_impl ust_perftest_unix_stream = {
    "unix-stream", 0, mk_unix_stream, socket_buffers, read, write, close, poll, fcntl, 0,
};

const struct ust_perftest_impl ust_perftest_unix_seqpacket = {
    "unix-seqpacket", 0, mk_unix_seqpacket, socket_buffers, read, write, close, poll, fcntl, 0,
};
