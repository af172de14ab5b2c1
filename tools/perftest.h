/* SPDX-License-Identifier: MIT */
/*
 * perftest.h -- what `ustreams perftest` (tools/perftest.c) needs to know of
 * an implementation of a pipe: the ustreams pipe it defines itself, the
 * kernel's peers (tools/perftest_peers.c) and, when the build found libzmq,
 * ZeroMQ's inproc PAIR sockets (tools/perftest_zmq.c, compiled with
 * USTREAMS_HAVE_ZMQ defined).
 *
 * The loops of perftest see an implementation only through these calls, on
 * small integers it hands out as "descriptors": for the kernel's peers they
 * are real descriptors, for ustreams the library's, for ZeroMQ indices into
 * its own table of sockets.
 */
#ifndef UST_TOOLS_PERFTEST_H
#define UST_TOOLS_PERFTEST_H

#include <poll.h>
#include <sys/types.h>

/* One kind of pipe: how to make it and how to move bytes through it. */
struct ust_perftest_impl {
    const char *name; /* the --peer name */
    int streams;      /* a ustreams stream: putmsg/getmsg, ioctls, block counters */
    /* Make a connected pair; *wfd is the writer's end, *rfd the reader's.
     * Context: the main thread, before the loops start.  0, or -1 with errno. */
    int (*mkpair)(int *wfd, int *rfd);
    /* --hiwat for a peer: size its buffers to `bytes`.  0 or an errno.  NULL:
     * the peer has no byte-sized buffer to set (perftest refuses --hiwat). */
    int (*buffers)(int wfd, int rfd, int bytes);
    /* read(2)/write(2)/close(2)/poll(2)/fcntl(2) semantics: a read returns 0
     * at end of file, after the writer's end was closed and everything it
     * wrote was read.  fcntl needs only F_GETFL and F_SETFL with O_NONBLOCK.
     * Each end is used by one thread at a time. */
    ssize_t (*read)(int fd, void *buf, size_t n);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    int (*close)(int fd);
    int (*poll)(struct pollfd *fds, nfds_t n, int timeout);
    int (*fcntl)(int fd, int cmd, ...);
    /* 1: the pair exists within one process only (ZeroMQ inproc), so
     * --procs is refused. */
    int one_process;
};

/* The kernel's peers (tools/perftest_peers.c): pipe(2), and AF_UNIX
 * SOCK_STREAM and SOCK_SEQPACKET socketpairs. */
extern const struct ust_perftest_impl ust_perftest_pipe;
extern const struct ust_perftest_impl ust_perftest_unix_stream;
extern const struct ust_perftest_impl ust_perftest_unix_seqpacket;

/* ZeroMQ inproc PAIR (tools/perftest_zmq.c): defined only in a build with
 * libzmq, which defines USTREAMS_HAVE_ZMQ. */
extern const struct ust_perftest_impl ust_perftest_zmq_inproc;

#endif /* UST_TOOLS_PERFTEST_H */
