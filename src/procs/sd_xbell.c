/* SPDX-License-Identifier: MIT */
/*
 * sd_xbell.c -- the bell of a pipe split across processes (sd_xpipe.c): the
 * socket pair whose end s every holder of pipe end s keeps, and what travels
 * on it.
 *
 * Principles of operation
 *   On the bell go bytes, read as a stream:
 *     'b'             a doorbell: the other side has something for us (data
 *                     in its ring, or room in ours);
 *     'F' + 4 bytes   a descriptor passed with I_SENDFD: the bytes are the
 *                     token of the M_PASSFP record the sender put in the ring
 *                     just before; the descriptor itself rides along as
 *                     SCM_RIGHTS, and the sender's credentials as
 *                     SCM_CREDENTIALS (SO_PASSCRED is on: the kernel fills
 *                     them in, the sender cannot choose them).
 *   Any byte wakes the other side's epoll thread.  A receiver drains the
 *   bell, keeping each descriptor with its token and credentials until the
 *   read service procedure meets the record that names it (ust_xbell_take).
 *   The kernel returns a message carrying descriptors in a read of its own
 *   or at the end of one (unix_stream_read_generic stops after it), so the
 *   descriptors of a read belong to the 'F' begun in that read.  Anything
 *   else -- descriptors without an 'F', an unknown byte -- is closed and
 *   forgotten: a peer that scribbles on the bell can lose its own
 *   descriptors, nothing more.  A drain reads no more tokens than the
 *   queue (XBELL_FDS less XBELL_SPARE) has room for: the rest wait in the
 *   socket, in the kernel's keeping and within its bounds (the sender's
 *   socket buffer, the descriptors a user may have in flight), until the
 *   records before theirs are taken.  A writer may run that far ahead of
 *   its reader: every M_PASSFP record within the ring's high-water mark.
 *   End of file (or a reset) on the bell: every process holding the other
 *   end has closed it or died.
 *
 * Doorbells (the wake pair)
 *   A doorbell read by one process is not seen by another: the kernel tells
 *   every epoll instance watching a socket of each byte, but reports the
 *   edge only if the byte is still unread when that epoll_wait collects it.
 *   So a byte on the bell, read by whichever holder of the end ran first,
 *   could miss the holder it was for (a reader in one process and a writer
 *   in another on the same end; two writing processes).  Doorbells of a
 *   channel split at fork therefore go on its *wake pair*, a socket pair
 *   both of whose ends every holder of the pipe keeps: holders of pipe end
 *   s watch wake[s] (edge-triggered) and never read it; whoever wakes side s
 *   sends a byte on wake[!s] (ust_xbell_knock).  Every send is an edge that
 *   every watcher's epoll collects with the socket readable (nothing reads
 *   it but a knock that found the pair full, which drains it and sends at
 *   once), so every holder of end s is woken by every doorbell, whatever
 *   role it waits in; it then looks whether it has a use for it (its
 *   reader, its writers: sd_xpipe_read.c), at the cost of a run of a
 *   service procedure in a process that had none.  A holder that reads the
 *   pair (hostile, or a knock racing) costs a doorbell at most, as a peer
 *   that never rings does: the writers' counted look again
 *   (sd_xpipe_write.c, wsrv_again) stays the bound.  Channels made for
 *   another process (sd_xpipe_far.c) have no wake pair: their doorbells are
 *   'b' bytes on the bell, and an end consumes them only when it has a use
 *   for them (sd_xpipe_read.c, rsrv_idle).
 *
 * Locking: a bell's receive state is used only by its end's read service
 * procedure (one at a time) and by the close after qprocsoff; sends need no
 * lock (each is one sendmsg).
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sd_xbell.h"
#include "sthead.h"

enum {
    XBELL_TOKEN = 4,
    XBELL_CMSG_FDS = 8,
    XBELL_READS = 256, /* reads per drain, at most */
    XBELL_SPARE = 2,   /* queue slots a drain leaves free: what a take between two
                        * drains puts back (sd_xpipe_read.c passfp_take: two) */
};

int ust_xbell_ring(struct ust_xbell *b)
{
    if (send(b->fd, "b", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != EINTR)
        return -1;
    return 0;
}

void ust_xbell_knock(int tx, int rx)
{
    char junk[256];
    if (send(tx, "b", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
        return;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
        return;
    /* Full: a legitimate side leaves hundreds of bytes there (every knock
     * adds one, no watcher reads); a bounded drain, then the byte. */
    for (int i = 0; i < XBELL_READS; i++)
        if (recv(rx, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
            break;
    (void)send(tx, "b", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Send 'F' + token on the bell with one control message (type, len bytes
 * of data; type 0: none), waiting for room up to tries x 10 ms: a bell full
 * of doorbell bytes drains as soon as the other side runs.  0 or an errno. */
static int send_token(int fd, uint32_t token, int type, const void *data, size_t len, int tries)
{
    unsigned char msg[1 + XBELL_TOKEN] = {'F'};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(struct ucred))]; /* the larger of int, ucred */
    } c;
    struct iovec iov = {msg, sizeof(msg)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    memcpy(msg + 1, &token, sizeof(token));
    memset(&c, 0, sizeof(c));
    if (type != 0) {
        c.h.cmsg_level = SOL_SOCKET;
        c.h.cmsg_type = type;
        c.h.cmsg_len = CMSG_LEN(len);
        memcpy(CMSG_DATA(&c.h), data, len);
        mh.msg_control = c.buf;
        mh.msg_controllen = CMSG_SPACE(len);
    }
    for (int i = 0; i < tries; i++) {
        ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == (ssize_t)sizeof(msg))
            return 0;
        if (n >= 0 || (errno != EAGAIN && errno != EINTR))
            return n >= 0 ? EIO : errno;
        struct pollfd p = {fd, POLLOUT, 0};
        poll(&p, 1, 10);
    }
    return EAGAIN;
}

int ust_xbell_room(struct ust_xbell *b)
{
    /* POLLOUT on a stream socket: at most half of this end's send buffer is
     * in flight (the kernel's unix_writable), room for a hundred tokens or
     * more, so the token and its cancel that follow the record find room
     * unless many threads send at once. */
    for (int i = 0; i < 100; i++) {
        struct pollfd p = {b->fd, POLLOUT, 0};
        int n = poll(&p, 1, i == 0 ? 0 : 10);
        if (n > 0 && (p.revents & POLLOUT))
            return 0;
        if (n > 0) /* POLLERR / POLLHUP: the send says what */
            return 0;
        if (n < 0 && errno != EINTR)
            return 0;
    }
    return EAGAIN;
}

int ust_xbell_sendfd(struct ust_xbell *b, int fd, uint32_t token)
{
    /* fd < 0: a cancel, the token alone.  Waits as a blocking I_SENDFD. */
    return fd < 0 ? send_token(b->fd, token, 0, NULL, 0, 100)
                  : send_token(b->fd, token, SCM_RIGHTS, &fd, sizeof(fd), 100);
}

int ust_xbell_sendcred(int bellfd, uint32_t token)
{
    /* Named explicitly (effective uid when it is 0, else real): the kernel
     * refuses ids this process does not hold. */
    struct ucred uc = {.pid = getpid(), .uid = geteuid() == 0 ? 0 : getuid(), .gid = getgid()};
    return send_token(bellfd, token, SCM_CREDENTIALS, &uc, sizeof(uc), 10);
}

/* Keep descriptor fd (-1: the sender's cancel) received with token tok;
 * closed if there is no room. */
static void keep(struct ust_xbell *b, int fd, uint32_t tok, uid_t uid, gid_t gid)
{
    if (b->nq == XBELL_FDS) {
        if (fd >= 0)
            close(fd);
        return;
    }
    b->q[b->nq++] = (struct ust_xbell_fd){tok, fd, uid, gid};
}

/* Bytes n of buf from one read, whose descriptors (if any) are rfd[0..nfd). */
static void parse(struct ust_xbell *b, const unsigned char *buf, size_t n, const int *rfd, int nfd,
                  uid_t uid, gid_t gid)
{
    int used = 0;
    for (size_t i = 0; i < n; i++) {
        if (b->npart == 0) {
            if (buf[i] != 'F')
                continue; /* 'b' (or junk): a doorbell */
            b->npart = 1;
            b->cur_fd = used < nfd ? rfd[used++] : -1;
            b->cur_uid = uid;
            b->cur_gid = gid;
            continue;
        }
        /* A token whose bytes came from senders of other ids (a peer that
         * sent half an 'F' to borrow the next sender's credentials): no
         * credentials (the kernel never joins them in one read). */
        if (uid != b->cur_uid || gid != b->cur_gid) {
            b->cur_uid = (uid_t)-1;
            b->cur_gid = (gid_t)-1;
        }
        b->part[b->npart++ - 1] = buf[i];
        if (b->npart == 1 + XBELL_TOKEN) {
            uint32_t tok;
            memcpy(&tok, b->part, sizeof(tok));
            keep(b, b->cur_fd, tok, b->cur_uid, b->cur_gid); /* -1: a cancel */
            b->cur_fd = -1;
            b->npart = 0;
        }
    }
    while (used < nfd) /* descriptors no 'F' claims */
        close(rfd[used++]);
}

int ust_xbell_drain(struct ust_xbell *b)
{
    unsigned char buf[256];
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(XBELL_CMSG_FDS * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
    } c;

    /* Bounded: a peer that keeps writing cannot hold the caller here.  What
     * is left is read at the next run (the peer's next byte wakes the epoll
     * thread again); a legitimate side never has this much unread. */
    for (int reads = 0; reads < XBELL_READS; reads++) {
        /* Never more tokens than the queue has room for (a token is 'F' and
         * four bytes; at most four of one are already in b->part): what does
         * not fit stays in the socket, descriptors with it, until the
         * records before it are taken (docs/STREAMHEAD.md "Descriptors wait
         * in the bell").  Closing it instead lost a descriptor whose record
         * then waited at the ring's front for ever. */
        int room = XBELL_FDS - XBELL_SPARE - b->nq;
        if (room <= 0) /* full: only whether the other side is gone */
            return recv(b->fd, buf, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
        size_t len = (size_t)room * (1 + XBELL_TOKEN);
        struct iovec iov = {buf, len < sizeof(buf) ? len : sizeof(buf)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                            .msg_controllen = sizeof(c.buf)};
        ssize_t n = recvmsg(b->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n == 0)
            return 1;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN ? 0 : 1;
        }
        int rfd[XBELL_CMSG_FDS], nfd = 0;
        uid_t uid = (uid_t)-1;
        gid_t gid = (gid_t)-1;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL; h = CMSG_NXTHDR(&mh, h)) {
            if (h->cmsg_level != SOL_SOCKET)
                continue;
            if (h->cmsg_type == SCM_RIGHTS) {
                size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t j = 0; j < k; j++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(h) + j * sizeof(int), sizeof(int));
                    if (nfd < XBELL_CMSG_FDS)
                        rfd[nfd++] = fd;
                    else
                        close(fd);
                }
            } else if (h->cmsg_type == SCM_CREDENTIALS &&
                       h->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
                struct ucred cr;
                memcpy(&cr, CMSG_DATA(h), sizeof(cr));
                uid = cr.uid;
                gid = cr.gid;
            }
        }
        parse(b, buf, (size_t)n, rfd, nfd, uid, gid);
    }
    return 0;
}

int ust_xbell_take(struct ust_xbell *b, uint32_t token, int *fd, uid_t *uid, gid_t *gid)
{
    for (int i = 0; i < b->nq; i++) {
        if (b->q[i].token != token)
            continue;
        *fd = b->q[i].fd;
        *uid = b->q[i].uid;
        *gid = b->q[i].gid;
        memmove(&b->q[i], &b->q[i + 1], (size_t)(b->nq - i - 1) * sizeof(b->q[0]));
        b->nq--;
        return 1;
    }
    return 0;
}

void ust_xbell_unget(struct ust_xbell *b, uint32_t token, int fd, uid_t uid, gid_t gid)
{
    if (b->nq == XBELL_FDS) {
        if (fd >= 0)
            close(fd);
        return;
    }
    memmove(&b->q[1], &b->q[0], (size_t)b->nq * sizeof(b->q[0]));
    b->q[0] = (struct ust_xbell_fd){token, fd, uid, gid};
    b->nq++;
}

void ust_xbell_forget_fds(struct ust_xbell *b)
{
    for (int i = 0; i < b->nq; i++)
        if (b->q[i].fd >= 0)
            close(b->q[i].fd);
    b->nq = 0;
    if (b->cur_fd >= 0)
        close(b->cur_fd);
    b->cur_fd = -1;
    b->npart = 0;
}

void ust_xbell_init(struct ust_xbell *b, int fd)
{
    memset(b, 0, sizeof(*b));
    b->fd = fd;
    b->cur_fd = -1;
}

void ust_xbell_close(struct ust_xbell *b)
{
    ust_xbell_forget_fds(b);
    if (b->fd >= 0)
        close(b->fd);
    b->fd = -1;
}
