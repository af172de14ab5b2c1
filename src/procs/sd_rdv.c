/* SPDX-License-Identifier: MIT */
/*
 * sd_rdv.c -- rendezvous: how a process reaches a stream that another
 * process gave a name (fattach, sd_fattach.c; a named FIFO, sd_fifo*.c).
 *
 * Principles of operation
 *   The name's owner -- the process whose stream it is -- listens on a
 *   UNIX-domain SOCK_SEQPACKET socket in the abstract namespace, named after
 *   the kind and the covered file's identity:
 *       "\0ustreams/n/<st_dev hex>:<st_ino hex>"   fattach name
 *       "\0ustreams/f/<st_dev hex>:<st_ino hex>"   named FIFO
 *   Abstract sockets vanish with the last process holding them, so a name
 *   whose owner died or exited is gone with it: it is never handed out, and
 *   there is nothing to clean up.
 *
 *   An open from another process (ust_rdv_open, from strm_open) connects,
 *   sends one request (struct rdv_req: open with the O_ACCMODE of the open,
 *   or detach) and receives one reply (struct rdv_rep) with, for an open,
 *   the two descriptors of a new pipe's far end (sd_xpipe.c: the channel's
 *   memfd and a bell end).  It builds its end from them (ust_xpipe_adopt):
 *   data then moves directly between the two processes' memory.  On the
 *   owner's side the pipe's near end is either handed to the server (a name
 *   whose stream has connld on top: a new pipe per open, the near end going
 *   up the attached stream as with I_SENDFD) or joined to the named stream
 *   by a relay (sd_relay.c).
 *
 * Security
 *   Credentials come from the kernel, never from a request: the owner takes
 *   the client's uid and gid (SO_PEERCRED) and groups (SO_PEERGROUPS) and
 *   checks them against the permission bits the covered file has now; the
 *   client checks its own access first (faccessat with the effective ids,
 *   which covers the directories of the path too) and fails with EACCES.
 *   The client also checks who answers: an fattach name must be served by
 *   the file's owner or the superuser (only they can cover it), a FIFO by a
 *   user the FIFO's mode lets read it.  Any other listener (a squatter on the
 *   abstract name) is ignored as if nothing were attached.  The memfd a client
 *   receives is checked field by field before use (xring_attach).
 *
 *   Each connection is served by a thread of its own, so a client that
 *   sends nothing (it has 2 s), or an open that waits (a FIFO's open rules),
 *   holds up no other.  At exit the owner lets the opens being served finish
 *   (ust_rdv_settle, from sd_relay.c's exit handler, up to 5 s) before its
 *   relays pass on what they hold: a client that asked is never left
 *   without an answer by an owner that exits at that moment.
 *
 * Locking
 *   rdv_lock guards the epoll set, the list of listening sockets and the
 *   start of the accepting thread; a leaf (taken under fattach_lock),
 *   quiesced at fork (rank UST_FORK_RDV).  The child closes its copies of the
 *   listening sockets: the names are the parent's to serve.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "forksafe.h"
#include "sd_names.h"
#include "sd_xpipe.h"
#include "sthead.h"

enum {
    RDV_MAGIC = 0x55535452, /* "USTR" */
    RDV_VERSION = 1,
    RDV_OPEN = 1,
    RDV_DETACH = 2,
    RDV_REQ_WAIT_MS = 2000, /* a client has this long to send its request */
    RDV_MAXGROUPS = 256,
};

struct rdv_req {
    uint32_t magic;
    uint16_t version;
    uint16_t op;    /* RDV_OPEN, RDV_DETACH */
    int32_t oflag;  /* RDV_OPEN: the open's flags (O_ACCMODE, O_NONBLOCK) */
    int32_t pad;
};

struct rdv_rep {
    uint32_t magic;
    int32_t err;  /* 0 or an errno */
    int32_t side; /* RDV_OPEN: the pipe side the client adopts */
    int32_t pad;
};

struct listener {
    struct listener *next;
    int fd;
    int kind;
    dev_t dev;
    ino_t ino;
};

static ust_lock_t rdv_lock = UST_LOCK_INIT; /* guards the fields below; leaf */
static int rdv_ep = -1;                     /* rdv_lock: epoll set of listeners */
static int rdv_running;                     /* rdv_lock: accepting thread started */
static struct listener *listeners;          /* rdv_lock */
static atomic_int serving;                  /* connections being served (conn_thread) */

static socklen_t rdv_addr(struct sockaddr_un *a, int kind, dev_t dev, ino_t ino)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "ustreams/%c/%llx:%llx", kind,
                     (unsigned long long)dev, (unsigned long long)ino);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Does the file st admit uid (with groups) for `want` (R_OK|W_OK bits)? */
int ust_rdv_admits(const struct stat *st, uid_t uid, const gid_t *gid, int ngid, int want)
{
    int bits;
    if (uid == 0)
        return 1;
    if (uid == st->st_uid) {
        bits = (st->st_mode >> 6) & 7;
    } else {
        bits = st->st_mode & 7;
        for (int i = 0; i < ngid; i++)
            if (gid[i] == st->st_gid) {
                bits = (st->st_mode >> 3) & 7;
                break;
            }
    }
    return (bits & want) == want;
}

static int want_of(int oflag)
{
    switch (oflag & O_ACCMODE) {
    case O_RDONLY:
        return R_OK;
    case O_WRONLY:
        return W_OK;
    default:
        return R_OK | W_OK;
    }
}

/* ------------------------------------------------------------------------ */
/* The owner's side                                                         */
/* ------------------------------------------------------------------------ */
struct peer {
    int fd;         /* the connection */
    int kind;
    dev_t dev;
    ino_t ino;
    struct ucred uc; /* from the kernel */
    gid_t groups[RDV_MAXGROUPS];
    int ngroups;
};

static int reply(int fd, int err, const int *fds, int nfd)
{
    struct rdv_rep rep = {.magic = RDV_MAGIC, .err = err, .side = 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(2 * sizeof(int))];
    } u;
    struct iovec iov = {&rep, sizeof(rep)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfd > 0) {
        memset(&u, 0, sizeof(u));
        mh.msg_control = u.b;
        mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(rep) ? 0 : EPIPE;
}

/* A new pipe for the peer: its near end joined to the stream sfd by a relay
 * (sfd is consumed), its far end's descriptors sent.  The relay carries what
 * the peer may do: up when it reads, down when it writes. */
int ust_rdv_serve_relay(int conn, int sfd, int oflag)
{
    int lfd, mfd, bfd;
    cred_t cr;
    ust_sd_cred(&cr);
    int err = ust_xpipe_new_end(&cr, &lfd, &mfd, &bfd);
    if (err != 0) {
        strm_close(sfd);
        return err;
    }
    int want = want_of(oflag);
    err = ust_relay_start(sfd, lfd, (want & R_OK) != 0, (want & W_OK) != 0);
    if (err == 0) {
        int fds[2] = {mfd, bfd};
        reply(conn, 0, fds, 2);
    }
    close(mfd);
    close(bfd);
    return err == 0 ? -1 : err; /* -1: replied */
}

/* connld: a new pipe whose near end goes to the server up the attached
 * stream sd, with the client's ids; the far end to the client. */
static int serve_connld(struct peer *p, struct stdata *sd)
{
    int lfd, mfd, bfd;
    cred_t cr;
    ust_sd_cred(&cr);
    int err = ust_xpipe_new_end(&cr, &lfd, &mfd, &bfd);
    if (err != 0)
        return err;
    err = ust_sd_sendfd_cred(sd, lfd, p->uc.uid, p->uc.gid, 0);
    strm_close(lfd); /* the message in flight holds it (or it is closed: the peer sees a hang-up) */
    if (err == 0) {
        int fds[2] = {mfd, bfd};
        reply(p->fd, 0, fds, 2);
    }
    close(mfd);
    close(bfd);
    return err == 0 ? -1 : err;
}

/* An open of an fattach name: an errno, or -1 when a reply went. */
static int serve_name_open(struct peer *p, int oflag)
{
    char path[PATH_MAX];
    struct stat st;
    struct stdata *sd = ust_fattach_lookup(p->dev, p->ino, path, sizeof(path));
    int err;

    if (sd == NULL)
        return ENOENT; /* detached meanwhile */
    if (stat(path, &st) != 0 || st.st_dev != p->dev || st.st_ino != p->ino)
        err = ENOENT;
    else if (!ust_rdv_admits(&st, p->uc.uid, p->groups, p->ngroups, want_of(oflag)))
        err = EACCES;
    else if (ust_sd_top_is(sd, "connld"))
        err = serve_connld(p, sd);
    else {
        cred_t cr;
        ust_sd_cred(&cr);
        int sfd = ust_sd_open_attached(sd, O_RDWR, &cr); /* the relay's own descriptor */
        sd = NULL; /* its reference went with the open */
        err = sfd < 0 ? -sfd : ust_rdv_serve_relay(p->fd, sfd, oflag);
    }
    if (sd != NULL)
        ust_sd_rele(sd);
    return err;
}

/* An fdetach from another process: its owner or the superuser. */
static int serve_detach(struct peer *p)
{
    char path[PATH_MAX];
    struct stat st;
    struct stdata *sd = ust_fattach_lookup(p->dev, p->ino, path, sizeof(path));
    if (sd == NULL)
        return EINVAL;
    ust_sd_rele(sd);
    if (p->uc.uid != 0 && (stat(path, &st) != 0 || st.st_uid != p->uc.uid))
        return EPERM;
    return ust_fattach_detach_key(p->dev, p->ino);
}

static void *conn_thread(void *arg)
{
    struct peer *p = arg;
    struct rdv_req req;
    struct pollfd pf = {.fd = p->fd, .events = POLLIN};
    socklen_t l = sizeof(p->uc);
    int err = EPROTO;

    if (poll(&pf, 1, RDV_REQ_WAIT_MS) != 1 ||
        recv(p->fd, &req, sizeof(req), MSG_DONTWAIT) != (ssize_t)sizeof(req) ||
        req.magic != RDV_MAGIC || req.version != RDV_VERSION ||
        getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &p->uc, &l) != 0)
        goto out;
    l = sizeof(p->groups);
    if (getsockopt(p->fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &l) == 0)
        p->ngroups = (int)(l / sizeof(gid_t));
    if (p->ngroups < RDV_MAXGROUPS)
        p->groups[p->ngroups++] = p->uc.gid;
    if (req.op == RDV_OPEN && p->kind == UST_RDV_NAME)
        err = serve_name_open(p, req.oflag);
    else if (req.op == RDV_OPEN && p->kind == UST_RDV_FIFO)
        err = ust_fifo_serve(p->fd, p->dev, p->ino, req.oflag, p->uc.uid, p->groups, p->ngroups);
    else if (req.op == RDV_DETACH && p->kind == UST_RDV_NAME)
        err = serve_detach(p);
    else
        err = EINVAL;
out:
    if (err >= 0)
        reply(p->fd, err, NULL, 0);
    close(p->fd);
    free(p);
    atomic_fetch_sub(&serving, 1);
    return NULL;
}

void ust_rdv_settle(long ms)
{
    for (long waited = 0; atomic_load(&serving) > 0 && waited < ms; waited += 5) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

/* Accept what is pending on listener l (rdv_lock held: l stays open). */
static void accept_all(struct listener *l)
{
    for (;;) {
        int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            return;
        struct peer *p = calloc(1, sizeof(*p));
        pthread_t t;
        if (p == NULL) {
            close(c);
            continue;
        }
        p->fd = c;
        p->kind = l->kind;
        p->dev = l->dev;
        p->ino = l->ino;
        atomic_fetch_add(&serving, 1);
        if (ust_thread_create(&t, NULL, conn_thread, p) != 0) {
            atomic_fetch_sub(&serving, 1);
            close(c);
            free(p);
            continue;
        }
        pthread_detach(t);
    }
}

static void *accept_thread(void *arg)
{
    int ep = (int)(intptr_t)arg;
    for (;;) {
        struct epoll_event ev[8];
        int n = epoll_wait(ep, ev, 8, -1);
        if (n < 0 && errno != EINTR)
            return NULL;
        ust_lock(&rdv_lock);
        for (int i = 0; i < n; i++)
            for (struct listener *l = listeners; l != NULL; l = l->next)
                if (l->fd == ev[i].data.fd)
                    accept_all(l);
        ust_unlock(&rdv_lock);
    }
}

int ust_rdv_listen(int kind, dev_t dev, ino_t ino, int *lfd)
{
    struct sockaddr_un a;
    socklen_t al = rdv_addr(&a, kind, dev, ino);
    struct listener *l = calloc(1, sizeof(*l));
    int fd = -1, err = 0;

    if (l == NULL)
        return ENOMEM;
    ust_relay_exit_register(); /* exit waits for the opens being served */
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        err = errno;
    } else if (bind(fd, (struct sockaddr *)&a, al) != 0) {
        err = errno == EADDRINUSE ? EBUSY : errno; /* another process owns the name */
    } else if (listen(fd, 64) != 0) {
        err = errno;
    }
    ust_lock(&rdv_lock);
    if (err == 0 && rdv_ep < 0) {
        rdv_ep = epoll_create1(EPOLL_CLOEXEC);
        if (rdv_ep < 0)
            err = errno;
    }
    if (err == 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(rdv_ep, EPOLL_CTL_ADD, fd, &ev) != 0)
            err = errno;
    }
    if (err == 0 && !rdv_running) {
        pthread_t t;
        err = ust_thread_create(&t, NULL, accept_thread, (void *)(intptr_t)rdv_ep);
        if (err == 0) {
            pthread_detach(t);
            rdv_running = 1;
        }
    }
    if (err == 0) {
        l->fd = fd;
        l->kind = kind;
        l->dev = dev;
        l->ino = ino;
        l->next = listeners;
        listeners = l;
    }
    ust_unlock(&rdv_lock);
    if (err != 0) {
        if (fd >= 0)
            close(fd);
        free(l);
        return err;
    }
    *lfd = fd;
    return 0;
}

void ust_rdv_unlisten(int lfd)
{
    struct listener *l = NULL;
    ust_lock(&rdv_lock);
    for (struct listener **pp = &listeners; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->fd == lfd) {
            l = *pp;
            *pp = l->next;
            break;
        }
    if (l != NULL) {
        epoll_ctl(rdv_ep, EPOLL_CTL_DEL, lfd, NULL);
        close(lfd); /* under the lock: the thread never accepts on a closed number */
    }
    ust_unlock(&rdv_lock);
    free(l);
}

/* ------------------------------------------------------------------------ */
/* The client's side                                                        */
/* ------------------------------------------------------------------------ */
/* Connect to the owner of (kind, st) and send req: the connection, or
 * -ENOENT when nobody (or nobody entitled) owns the name, or -errno. */
static int rdv_connect(int kind, const struct stat *st, const struct rdv_req *req)
{
    struct sockaddr_un a;
    socklen_t al = rdv_addr(&a, kind, st->st_dev, st->st_ino);
    struct ucred uc;
    socklen_t l = sizeof(uc);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    if (s < 0)
        return -errno;
    if (connect(s, (struct sockaddr *)&a, al) != 0) {
        int e = errno;
        close(s);
        return e == ECONNREFUSED || e == ENOENT || e == EAGAIN ? -ENOENT : -e;
    }
    /* Who answers must be entitled to own the name. */
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &l) != 0 ||
        !(uc.uid == 0 || (kind == UST_RDV_NAME ? uc.uid == st->st_uid
                                               : ust_rdv_admits(st, uc.uid, &uc.gid, 1, R_OK)))) {
        close(s);
        return -ENOENT;
    }
    if (send(s, req, sizeof(*req), MSG_NOSIGNAL) != (ssize_t)sizeof(*req)) {
        close(s);
        return -ENOENT; /* gone meanwhile */
    }
    return s;
}

/* Receive the reply: 0 and, when nwant is 2, fds[0..1]; or an errno. */
static int rdv_reply(int s, int fds[2], int nwant)
{
    struct rdv_rep rep;
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(4 * sizeof(int))];
    } u;
    struct iovec iov = {&rep, sizeof(rep)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                        .msg_controllen = sizeof(u.b)};
    ssize_t n;
    int got[4], ngot = 0;

    do
        n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && ngot < 4; i++)
                memcpy(&got[ngot++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    int err = n != (ssize_t)sizeof(rep) || rep.magic != RDV_MAGIC ? ENOENT /* owner went */
              : rep.err != 0 ? (rep.err > 0 && rep.err < 4096 ? rep.err : EPROTO)
              : ngot != nwant || rep.side != 1 || (mh.msg_flags & MSG_CTRUNC) ? EPROTO
              : 0;
    if (err == 0) {
        for (int i = 0; i < nwant; i++)
            fds[i] = got[i];
        return 0;
    }
    for (int i = 0; i < ngot; i++)
        close(got[i]);
    return err;
}

int ust_rdv_open(int kind, const struct stat *st, int oflag, const cred_t *cr)
{
    struct rdv_req req = {.magic = RDV_MAGIC, .version = RDV_VERSION, .op = RDV_OPEN,
                          .oflag = oflag & (O_ACCMODE | O_NONBLOCK | O_NDELAY)};
    int fds[2];
    int s = rdv_connect(kind, st, &req);
    if (s < 0)
        return s;
    int err = rdv_reply(s, fds, 2);
    close(s);
    if (err != 0)
        return -err;
    int fd = ust_xpipe_adopt(fds[0], fds[1], 1, cr);
    close(fds[0]); /* the channel keeps its own */
    return fd;
}

int ust_rdv_detach(const struct stat *st)
{
    struct rdv_req req = {.magic = RDV_MAGIC, .version = RDV_VERSION, .op = RDV_DETACH};
    int fds[2];
    int s = rdv_connect(UST_RDV_NAME, st, &req);
    if (s < 0)
        return s == -ENOENT ? EINVAL : -s; /* nothing attached */
    int err = rdv_reply(s, fds, 0);
    close(s);
    return err == ENOENT ? EINVAL : err;
}

/* ------------------------------------------------------------------------ */
/* connld in this process                                                   */
/* ------------------------------------------------------------------------ */
int ust_connld_open(struct stdata *sd, const cred_t *cr)
{
    int p[2];
    if (strm_pipe(p) != 0)
        return -errno;
    int err = ust_sd_sendfd_cred(sd, p[0], cr->cr_uid, cr->cr_gid, 0);
    strm_close(p[0]);
    if (err != 0) {
        strm_close(p[1]);
        return -err;
    }
    return p[1];
}

/* ------------------------------------------------------------------------ */
/* fork                                                                     */
/* ------------------------------------------------------------------------ */
void ust_rdv_fork_prepare(void)
{
    ust_lock(&rdv_lock);
}

void ust_rdv_fork_parent(void)
{
    ust_unlock(&rdv_lock);
}

void ust_rdv_fork_child(void)
{
    struct listener *l = listeners;
    listeners = NULL;
    while (l != NULL) {
        struct listener *n = l->next;
        close(l->fd);
        free(l);
        l = n;
    }
    if (rdv_ep >= 0)
        close(rdv_ep);
    rdv_ep = -1;
    rdv_running = 0;
    atomic_store(&serving, 0); /* the parent's connection threads */
    ust_lock_init(&rdv_lock);
}
