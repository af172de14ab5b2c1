/* SPDX-License-Identifier: MIT */
/*
 * perftest_zmq.c -- ZeroMQ inproc PAIR as a perftest peer (`--peer zmq-inproc`,
 * tools/perftest.h).  Compiled only when the build found libzmq (CMake's
 * pkg-config check defines USTREAMS_HAVE_ZMQ for the `ustreams` command); the
 * library never links libzmq.
 *
 * Principles of operation
 *   - A pair is one ZeroMQ context with two ZMQ_PAIR sockets, the reader's
 *     bound and the writer's connected to "inproc://perftest-N".  A write is
 *     one zmq_send of SIZE bytes, a read one zmq_recv into the reader's buffer:
 *     one message each, as on the other peers one write(2) and one read(2).
 *   - perftest's loops speak descriptors: the sockets are kept in a small table
 *     here and a "descriptor" is an index into it.  Slots are taken by
 *     mkpair on the main thread before the loops start; afterwards each slot
 *     is used by one thread only (a ZeroMQ socket must not be used by two
 *     threads at once; pthread_create orders the hand-over).
 *   - End of file: ZeroMQ has no hang-up on a PAIR, so the writer's close
 *     first sends an empty message, which no write of perftest (SIZE >= 1)
 *     can make, then closes its socket.  The reader's zmq_recv of an empty
 *     message is read's 0.  Messages queued before the close are still
 *     delivered (the reader's pipe waits for the delimiter), so every byte
 *     written is read, as perftest checks.
 *   - The second close of a pair terminates its context.  The context is not
 *     "blocky" (linger 0), so that a reader that failed cannot leave the
 *     writer's close waiting for ever; linger does not drop the messages
 *     already queued to the reader, which reads up to the delimiter.
 *   - Non-blocking mode (-n): F_SETFL O_NONBLOCK makes the calls use
 *     ZMQ_DONTWAIT; poll waits in zmq_poll on the sockets.
 *   - --hiwat is refused: ZeroMQ's high-water marks count messages, not bytes.
 *     The defaults (1000 messages each way) apply.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <zmq.h>

#include "perftest.h"

#define ZSLOTS 8 /* two per pair; perftest makes at most two pairs */

struct zpair {
    void *ctx;
    atomic_int open; /* sockets of the pair not closed yet */
};

struct zslot {
    void *sock;          /* NULL: free */
    struct zpair *pair;
    int writer;          /* the writer's end: close sends the end-of-file message */
    int nonblock;        /* O_NONBLOCK: ZMQ_DONTWAIT */
};

static struct zslot slots[ZSLOTS]; /* taken on the main thread (mkpair) only */
static int npairs_made;

static struct zslot *slot_of(int fd)
{
    if (fd < 0 || fd >= ZSLOTS || !slots[fd].sock) {
        errno = EBADF;
        return NULL;
    }
    return &slots[fd];
}

static int free_slot(void)
{
    for (int i = 0; i < ZSLOTS; i++)
        if (!slots[i].sock)
            return i;
    return -1;
}

/* Make a pair.  Context: the main thread.  0, or -1 with errno. */
static int zp_mkpair(int *wfd, int *rfd)
{
    char ep[64];
    snprintf(ep, sizeof(ep), "inproc://perftest-%d", npairs_made++);
    struct zpair *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return -1;
    atomic_init(&pr->open, 2);
    void *rs = NULL, *ws = NULL;
    int err = EMFILE;
    /* Not blocky: sockets linger 0 and ending the context never waits for a
     * message nobody will read (a reader that failed). */
    if (!(pr->ctx = zmq_ctx_new()) || zmq_ctx_set(pr->ctx, ZMQ_BLOCKY, 0) != 0)
        goto fail_errno;
    if (!(rs = zmq_socket(pr->ctx, ZMQ_PAIR)) || zmq_bind(rs, ep) != 0)
        goto fail_errno;
    if (!(ws = zmq_socket(pr->ctx, ZMQ_PAIR)) || zmq_connect(ws, ep) != 0)
        goto fail_errno;
    int r = free_slot();
    if (r < 0)
        goto fail;
    slots[r] = (struct zslot){.sock = rs, .pair = pr};
    int w = free_slot();
    if (w < 0) {
        slots[r].sock = NULL;
        goto fail;
    }
    slots[w] = (struct zslot){.sock = ws, .pair = pr, .writer = 1};
    *rfd = r;
    *wfd = w;
    return 0;

fail_errno:
    err = zmq_errno();
fail:
    if (ws)
        zmq_close(ws);
    if (rs)
        zmq_close(rs);
    if (pr->ctx)
        zmq_ctx_term(pr->ctx);
    free(pr);
    errno = err;
    return -1;
}

static ssize_t zp_read(int fd, void *buf, size_t n)
{
    struct zslot *s = slot_of(fd);
    if (!s)
        return -1;
    int r = zmq_recv(s->sock, buf, n, s->nonblock ? ZMQ_DONTWAIT : 0);
    if (r < 0) {
        errno = zmq_errno();
        return -1;
    }
    if ((size_t)r > n) { /* the message was cut to the buffer */
        errno = EMSGSIZE;
        return -1;
    }
    return r;
}

static ssize_t zp_write(int fd, const void *buf, size_t n)
{
    struct zslot *s = slot_of(fd);
    if (!s)
        return -1;
    int r = zmq_send(s->sock, buf, n, s->nonblock ? ZMQ_DONTWAIT : 0);
    if (r < 0) {
        errno = zmq_errno();
        return -1;
    }
    return r;
}

/* Close one end; the writer's sends the end-of-file message first (blocking,
 * whatever O_NONBLOCK says).  The second close of a pair ends its context. */
static int zp_close(int fd)
{
    struct zslot *s = slot_of(fd);
    if (!s)
        return -1;
    int err = 0;
    if (s->writer && zmq_send(s->sock, "", 0, 0) < 0)
        err = zmq_errno();
    zmq_close(s->sock);
    struct zpair *pr = s->pair;
    if (atomic_fetch_sub(&pr->open, 1) == 1) {
        zmq_ctx_term(pr->ctx);
        free(pr);
    }
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

static int zp_poll(struct pollfd *fds, nfds_t n, int timeout)
{
    zmq_pollitem_t items[ZSLOTS];
    if (n > ZSLOTS) {
        errno = EINVAL;
        return -1;
    }
    for (nfds_t i = 0; i < n; i++) {
        struct zslot *s = slot_of(fds[i].fd);
        if (!s)
            return -1;
        short ev = (short)(((fds[i].events & POLLIN) ? ZMQ_POLLIN : 0) |
                           ((fds[i].events & POLLOUT) ? ZMQ_POLLOUT : 0));
        items[i] = (zmq_pollitem_t){.socket = s->sock, .events = ev};
    }
    int r = zmq_poll(items, (int)n, timeout);
    if (r < 0) {
        errno = zmq_errno();
        return -1;
    }
    for (nfds_t i = 0; i < n; i++)
        fds[i].revents = (short)(((items[i].revents & ZMQ_POLLIN) ? POLLIN : 0) |
                                 ((items[i].revents & ZMQ_POLLOUT) ? POLLOUT : 0));
    return r;
}

/* F_GETFL and F_SETFL (O_NONBLOCK) only. */
static int zp_fcntl(int fd, int cmd, ...)
{
    struct zslot *s = slot_of(fd);
    if (!s)
        return -1;
    if (cmd == F_GETFL)
        return O_RDWR | (s->nonblock ? O_NONBLOCK : 0);
    if (cmd == F_SETFL) {
        va_list ap;
        va_start(ap, cmd);
        long fl = va_arg(ap, long);
        va_end(ap);
        s->nonblock = (fl & O_NONBLOCK) != 0;
        return 0;
    }
    errno = EINVAL;
    return -1;
}

const struct ust_perftest_impl ust_perftest_zmq_inproc = {
    "zmq-inproc", 0, zp_mkpair, NULL, zp_read, zp_write, zp_close, zp_poll,
    zp_fcntl, 1,
};
