/* SPDX-License-Identifier: MIT */
/*
 * sd_rdv.c -- rendezvous: how a process reaches a stream that another
 * process gave a name (fattach, sd_fattach.c; a named FIFO, sd_fifo*.c).
 * This file is the owner's side (the accepting thread, the pool, the
 * budgets, the names; serving a request: sd_rdv_serve.c); the client's is
 * sd_rdv_client.c.
 *
 * Principles of operation
 *   The name's owner -- the process whose stream it is -- listens on a
 *   UNIX-domain SOCK_SEQPACKET socket in the abstract namespace, named after
 *   the kind and the covered file's identity:
 *       "\0ustreams/n/<st_dev hex>:<st_ino hex>"   fattach name
 *       "\0ustreams/f/<st_dev hex>:<st_ino hex>"   named FIFO
 *   or, when another socket holds that name, at "<that>/<64 random bits>".
 *   Abstract sockets vanish with the last process holding them, so a name
 *   whose owner died or exited is gone with it.
 *
 *   An open from another process (ust_rdv_open) connects, sends one request
 *   (struct rdv_req, with its access proof: a descriptor of the node) and
 *   receives one reply (struct rdv_rep) with the owner's proof and, for an
 *   open, the two descriptors of a new pipe's far end (sd_xpipe.c).  On the
 *   owner's side the near end is handed to the server (connld on top of an
 *   attached stream) or joined to the named stream by a relay (sd_relay.c).
 *
 * Security (issue 20; the threat: any local user, any uid)
 *   Access is the path's, not the node's (row C).  The client opens the node
 *   by the path itself and passes that descriptor; the owner (check_access)
 *   takes it only if it is a descriptor of the node it serves (fstat dev and
 *   ino), then: opened with the access asked -> the kernel did the whole
 *   check (directories, ACLs, groups); an O_PATH descriptor (FIFO nodes:
 *   opening one would count as a reader or writer) -> the kernel checked the
 *   directories, and the node's mode now is checked against the client's
 *   kernel credentials (SO_PEERCRED, SO_PEERGROUPS).  No descriptor, another
 *   node, too little access: EACCES, counted (denied).
 *
 *   Names nobody can squat or steal (rows B, I).  Who may own a name is
 *   fixed by the node: fattach, the file's owner or the superuser (only they
 *   can cover it); a FIFO, a user the mode lets read and write it (or the
 *   superuser) -- a user who may not write a FIFO never owns it, so never
 *   receives what others write nor feeds their readers.  A client sends
 *   nothing to a listener whose kernel credentials are not entitled, and
 *   takes a reply only with the owner's proof (a descriptor of the node).
 *   A squatter on the base name does not stop the owner: it listens at an
 *   unguessable alternative, and clients that find the base name held by
 *   another socket try every listening alternative /proc/net/unix shows; a
 *   squatter's sockets only cost each client one connect apiece (bounded by
 *   the squatter's RLIMIT_NOFILE).  A client that finds the base name free
 *   looks no further (no owner: the common case stays one failed connect),
 *   so an owner at an alternative takes its base name back as soon as it
 *   is free: a timer (rdv_tick, every RDV_RECLAIM_MS, armed only while a
 *   listener waits for its base name) wakes the accepting thread, which
 *   binds it (reclaim) and listens at both names.  In between, at most
 *   RDV_RECLAIM_MS after the squatter left, clients find no owner.  Two owners
 *   at once are prevented after the bind: a new owner asks every other
 *   listener of the name (RDV_PROBE) and gives up (EBUSY) if one proves it
 *   owns it -- two racing owners may both give up, never both stay.
 *
 *   Bounded resources per peer (row G).  One accepting thread holds the
 *   connections whose request has not come (no thread each), and drops one
 *   that sends nothing within RDV_REQ_WAIT_MS (counted: dropped).  A
 *   request is served by a pool of at most RDV_WORKERS threads, at most
 *   RDV_UID_WORKERS of them for one peer uid at a time; an open of
 *   a FIFO that may wait (blocking O_RDONLY or O_WRONLY) gets a thread of
 *   its own, within its own budget.  Budgets, per uid of the peer and for
 *   the whole process: connections pending or being served
 *   (RDV_UID_PENDING, RDV_ALL_PENDING), FIFO opens waiting
 *   (RDV_UID_FIFOWAIT, RDV_ALL_FIFOWAIT).  Over budget the connection gets
 *   EAGAIN at once (counted: refused).  So a flood by one uid exhausts its
 *   own budget, not another uid's (the global bound is the backstop).  A
 *   FIFO open waiting for a client that hangs up ends within 200 ms
 *   (sd_fifo.c, ust_fifo_open_key_for), its thread and budget with it.
 *   At exit the owner lets the opens being served finish (ust_rdv_settle).
 *
 * Locking
 *   rdv_lock guards the epoll set, the tick, the listeners (their fd2
 *   included), the pending connections and the start of the accepting
 *   thread; taken under fattach_lock and
 *   fifo_lock, before pool_lock.  pool_lock guards the job queue, the
 *   worker counts and the budgets; a leaf.  Both quiesced at fork (rank
 *   UST_FORK_RDV); the child closes its copies of everything: the names
 *   are the parent's to serve.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "forksafe.h"
#include "sd_names.h"
#include "sd_rdv.h"
#include "sd_xpipe.h"
#include "sthead.h"

enum {
    RDV_REQ_WAIT_MS = 2000, /* a client has this long to send its request */
    RDV_WORKERS = 16,       /* threads serving requests (besides FIFO waits) */
    RDV_UID_PENDING = 64,   /* connections pending or served, per peer uid */
    RDV_ALL_PENDING = 256,  /* ... in all */
    RDV_UID_FIFOWAIT = 64,  /* FIFO opens waiting, per peer uid */
    RDV_ALL_FIFOWAIT = 256, /* ... in all */
    RDV_UID_WORKERS = 8,    /* workers serving one peer uid at a time */
    RDV_RECLAIM_MS = 200,   /* a listener at an alternative tries its base name */
};
#define RDV_TICK_EV 2 /* epoll data of rdv_tick (listeners: odd; connections: pointers) */
enum { B_PEND, B_FIFO, B_NONE };

struct listener {
    struct listener *next;
    int fd;
    int kind;
    int node; /* O_PATH descriptor of the node: the owner's proof */
    dev_t dev;
    ino_t ino;
    uint64_t id; /* epoll data: (id << 1) | 1, for fd and fd2 */
    struct sockaddr_un addr; /* fd's name */
    int alt;                 /* addr is an alternative name (the base was held) */
    int fd2; /* alt: the base name, taken back once free (reclaim), or -1 */
};

static ust_lock_t rdv_lock = UST_LOCK_INIT; /* guards the fields below; see Locking */
static int rdv_ep = -1;                     /* rdv_lock: epoll set */
static int rdv_running;                     /* rdv_lock: accepting thread started */
static int rdv_tick = -1; /* rdv_lock: timerfd in rdv_ep (from the first listener at an
                           * alternative on), armed while one is there without its base */
static struct listener *listeners;          /* rdv_lock */
static struct rdv_conn *pending;                /* rdv_lock: waiting for their request */
static uint64_t next_id = 1;                /* rdv_lock */

static ust_lock_t pool_lock = UST_LOCK_INIT; /* guards the fields below; a leaf */
static ust_cond_t pool_cv;                   /* a job was queued */
static int pool_cv_ready;                    /* pool_lock: pool_cv initialised */
static struct rdv_conn *jobs, **jobs_tail = &jobs; /* pool_lock: queued requests */
static int nworkers, nidle;                  /* pool_lock */
static struct budget {
    uid_t uid;
    int n[2]; /* B_PEND, B_FIFO held */
    int busy; /* workers serving this uid; a slot with all 0 is free */
} budgets[RDV_ALL_PENDING + RDV_ALL_FIFOWAIT]; /* pool_lock */
static int total[2];                           /* pool_lock */

static atomic_int serving; /* requests being served (settle) */
static atomic_long st_refused, st_dropped, st_denied;

/* ------------------------------------------------------------------------ */
/* Budgets                                                                  */
/* ------------------------------------------------------------------------ */
/* Take one of budget `which` for uid: 1, or 0 when over a bound. */
static int budget_take(uid_t uid, int which)
{
    static const int per_uid[2] = {RDV_UID_PENDING, RDV_UID_FIFOWAIT};
    static const int all[2] = {RDV_ALL_PENDING, RDV_ALL_FIFOWAIT};
    struct budget *b = NULL, *fr = NULL;
    int ok = 0;
    ust_lock(&pool_lock);
    for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]) && b == NULL; i++) {
        struct budget *x = &budgets[i];
        if (x->n[0] + x->n[1] + x->busy == 0) {
            if (fr == NULL)
                fr = x;
        } else if (x->uid == uid) {
            b = x;
        }
    }
    if (b == NULL && fr != NULL) {
        b = fr;
        b->uid = uid;
    }
    if (b != NULL && total[which] < all[which] && b->n[which] < per_uid[which]) {
        b->n[which]++;
        total[which]++;
        ok = 1;
    }
    ust_unlock(&pool_lock);
    return ok;
}

static void budget_give(uid_t uid, int which)
{
    if (which == B_NONE)
        return;
    ust_lock(&pool_lock);
    for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++)
        if (budgets[i].uid == uid && budgets[i].n[which] > 0) {
            budgets[i].n[which]--;
            total[which]--;
            break;
        }
    ust_unlock(&pool_lock);
}

void ust_rdv_stats(struct ust_rdv_stats *s)
{
    s->refused = atomic_load(&st_refused);
    s->dropped = atomic_load(&st_dropped);
    s->denied = atomic_load(&st_denied);
    ust_lock(&pool_lock);
    s->pending = total[B_PEND];
    s->fifo_waiting = total[B_FIFO];
    s->workers = nworkers;
    ust_unlock(&pool_lock);
}

/* ------------------------------------------------------------------------ */
/* Serving a request (the requests themselves: sd_rdv_serve.c)              */
/* ------------------------------------------------------------------------ */
static void conn_free(struct rdv_conn *c)
{
    close(c->fd);
    close(c->node);
    if (c->cfd >= 0)
        close(c->cfd);
    budget_give(c->uc.uid, c->budget);
    free(c);
}

/* Serve c's request, reply, free c. */
static void serve(struct rdv_conn *c)
{
    int op = c->req.op, err;
    int want = op == RDV_OPEN ? ust_rdv_want_of(c->req.oflag) : 0;
    int ok = ust_rdv_check_access(c, want);
    close(c->cfd); /* checked: not held while the request waits */
    c->cfd = -1;
    if (!ok) {
        atomic_fetch_add(&st_denied, 1);
        err = EACCES;
    } else if (op == RDV_PROBE) {
        err = 0;
    } else if (op == RDV_OPEN && c->kind == UST_RDV_NAME) {
        err = ust_rdv_serve_name_open(c, c->req.oflag);
    } else if (op == RDV_OPEN && c->kind == UST_RDV_FIFO) {
        err = ust_fifo_serve(c->fd, c->node, c->dev, c->ino, c->req.oflag);
    } else if (op == RDV_DETACH && c->kind == UST_RDV_NAME) {
        err = ust_rdv_serve_detach(c);
    } else {
        err = EINVAL;
    }
    if (err >= 0)
        ust_rdv_reply(c->fd, err, c->node, NULL, 0);
    conn_free(c);
    atomic_fetch_sub(&serving, 1);
}

/* The slot of uid (pool_lock held), NULL if it has none. */
static struct budget *slot_of(uid_t uid)
{
    UST_ASSERT_HELD(&pool_lock);
    for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++)
        if (budgets[i].uid == uid && budgets[i].n[0] + budgets[i].n[1] + budgets[i].busy > 0)
            return &budgets[i];
    return NULL;
}

/* A pool thread: serves the oldest queued request whose uid has fewer than
 * RDV_UID_WORKERS being served, so that one uid's slow requests (a proof
 * descriptor whose fstat hangs, say) leave workers to the others. */
static void *worker(void *arg)
{
    (void)arg;
    ust_lock(&pool_lock);
    for (;;) {
        struct rdv_conn **pp = &jobs, *c = NULL;
        struct budget *b = NULL;
        for (; *pp != NULL; pp = &(*pp)->next) {
            b = slot_of((*pp)->uc.uid);
            if (b != NULL && b->busy < RDV_UID_WORKERS) {
                c = *pp;
                break;
            }
        }
        if (c == NULL) {
            nidle++;
            ust_cond_wait(&pool_cv, &pool_lock);
            nidle--;
            continue;
        }
        *pp = c->next;
        if (jobs_tail == &c->next)
            jobs_tail = pp;
        b->busy++; /* keeps the slot b while c is served */
        ust_unlock(&pool_lock);
        serve(c);
        ust_lock(&pool_lock);
        b->busy--;
        ust_cond_broadcast(&pool_cv); /* a job of that uid may go now */
    }
    return NULL;
}

static void *fifo_wait_thread(void *arg)
{
    serve(arg);
    return NULL;
}

/* A request came on c (rdv_lock held; c is off `pending`): queue it for the
 * pool, or give it a thread when it is a FIFO open that may wait. */
static void dispatch(struct rdv_conn *c)
{
    pthread_t t;
    int acc = c->req.oflag & O_ACCMODE;
    atomic_fetch_add(&serving, 1);
    if (c->kind == UST_RDV_FIFO && c->req.op == RDV_OPEN && acc != O_RDWR &&
        !(c->req.oflag & (O_NONBLOCK | O_NDELAY))) {
        budget_give(c->uc.uid, B_PEND);
        c->budget = B_NONE;
        if (!budget_take(c->uc.uid, B_FIFO) ||
            (c->budget = B_FIFO, ust_thread_create(&t, NULL, fifo_wait_thread, c) != 0)) {
            atomic_fetch_add(&st_refused, 1);
            ust_rdv_reply(c->fd, EAGAIN, c->node, NULL, 0);
            conn_free(c);
            atomic_fetch_sub(&serving, 1);
            return;
        }
        pthread_detach(t);
        return;
    }
    int spawn = 0;
    ust_lock(&pool_lock);
    c->next = NULL;
    *jobs_tail = c;
    jobs_tail = &c->next;
    if (nidle == 0 && nworkers < RDV_WORKERS) {
        nworkers++;
        spawn = 1;
    } else {
        ust_cond_signal(&pool_cv);
    }
    ust_unlock(&pool_lock);
    if (spawn) {
        if (ust_thread_create(&t, NULL, worker, NULL) == 0) {
            pthread_detach(t);
        } else {
            ust_lock(&pool_lock);
            nworkers--; /* the job waits for the next worker started */
            ust_unlock(&pool_lock);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The accepting thread                                                     */
/* ------------------------------------------------------------------------ */
static void pending_remove(struct rdv_conn *c)
{
    UST_ASSERT_HELD(&rdv_lock);
    for (struct rdv_conn **pp = &pending; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    epoll_ctl(rdv_ep, EPOLL_CTL_DEL, c->fd, NULL);
}

/* c is readable: its request, or its end (rdv_lock held). */
static void conn_ready(struct rdv_conn *c)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(4 * sizeof(int))];
    } u;
    struct iovec iov = {&c->req, sizeof(c->req)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                        .msg_controllen = sizeof(u.b)};
    pending_remove(c);
    ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *h = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; h != NULL; h = CMSG_NXTHDR(&mh, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                if (c->cfd < 0)
                    c->cfd = fd; /* the first is the proof; any more are closed */
                else
                    close(fd);
            }
    if (n <= 0) {
        atomic_fetch_add(&st_dropped, 1); /* gone without asking */
        conn_free(c);
        return;
    }
    if (n != (ssize_t)sizeof(c->req) || c->req.magic != RDV_MAGIC ||
        c->req.version != RDV_VERSION) {
        ust_rdv_reply(c->fd, EPROTO, c->node, NULL, 0);
        conn_free(c);
        return;
    }
    dispatch(c);
}

/* Accept what is pending on listener l, at either of its names (rdv_lock
 * held: l stays open). */
static void accept_all(struct listener *l)
{
    for (int which = 0; which < 2;) {
        int fd = accept4(which == 0 ? l->fd : l->fd2, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            which++;
            if (which == 1 && l->fd2 < 0)
                return;
            continue;
        }
        struct ucred uc;
        socklen_t len = sizeof(uc);
        struct rdv_conn *c = NULL;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) {
            close(fd);
            continue;
        }
        int got = budget_take(uc.uid, B_PEND);
        if (!got || (c = calloc(1, sizeof(*c))) == NULL) {
            if (got)
                budget_give(uc.uid, B_PEND);
            atomic_fetch_add(&st_refused, 1);
            ust_rdv_reply(fd, EAGAIN, l->node, NULL, 0);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->uc = uc;
        c->budget = B_PEND;
        c->cfd = -1;
        c->kind = l->kind;
        c->dev = l->dev;
        c->ino = l->ino;
        c->deadline = ust_now_ns() + RDV_REQ_WAIT_MS * 1000000LL;
        len = sizeof(gid_t) * RDV_MAXGROUPS;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) == 0)
            c->ngroups = (int)(len / sizeof(gid_t));
        c->groups[c->ngroups++] = uc.gid;
        c->node = fcntl(l->node, F_DUPFD_CLOEXEC, 0);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        if (c->node < 0 || epoll_ctl(rdv_ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            if (c->node < 0)
                c->node = open("/", O_PATH | O_CLOEXEC); /* conn_free closes it */
            atomic_fetch_add(&st_refused, 1);
            ust_rdv_reply(fd, EAGAIN, l->node, NULL, 0);
            conn_free(c);
            continue;
        }
        c->next = pending;
        pending = c;
    }
}

/* Drop the connections whose request is overdue (rdv_lock held); the ms
 * until the next deadline, or -1 when none is pending. */
static int expire(void)
{
    long long now = ust_now_ns(), next = -1;
    for (struct rdv_conn **pp = &pending; *pp != NULL;) {
        struct rdv_conn *c = *pp;
        if (c->deadline <= now) {
            *pp = c->next;
            epoll_ctl(rdv_ep, EPOLL_CTL_DEL, c->fd, NULL);
            atomic_fetch_add(&st_dropped, 1);
            conn_free(c);
            continue;
        }
        if (next < 0 || c->deadline < next)
            next = c->deadline;
        pp = &c->next;
    }
    return next < 0 ? -1 : (int)((next - now) / 1000000 + 1);
}

/* A new socket listening at the base name of (kind, dev, ino): the socket,
 * or -1 when another socket holds the name. */
static int base_listener(int kind, dev_t dev, ino_t ino)
{
    struct sockaddr_un a;
    socklen_t al = ust_rdv_addr(&a, kind, dev, ino, 0);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, al) != 0 || listen(fd, SOMAXCONN) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The tick (rdv_lock held): every listener at an alternative name takes its
 * base name back if it is free now (the squatter left), and listens at both
 * -- fd, the identity fattach and the FIFO table hold, stays as it is.
 * Clients find no owner while the base name is free and the owner not
 * there yet (at most RDV_RECLAIM_MS; docs/SECURITY.md).  The tick is
 * disarmed when none is left waiting. */
static void reclaim(void)
{
    int waiting = 0;
    uint64_t n;
    (void)!read(rdv_tick, &n, sizeof(n));
    for (struct listener *l = listeners; l != NULL; l = l->next) {
        if (!l->alt || l->fd2 >= 0)
            continue;
        l->fd2 = base_listener(l->kind, l->dev, l->ino);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (l->id << 1) | 1};
        if (l->fd2 >= 0 && epoll_ctl(rdv_ep, EPOLL_CTL_ADD, l->fd2, &ev) != 0) {
            close(l->fd2);
            l->fd2 = -1;
        }
        waiting |= l->fd2 < 0;
    }
    if (!waiting) {
        struct itimerspec off = {{0, 0}, {0, 0}};
        timerfd_settime(rdv_tick, 0, &off, NULL);
    }
}

static void *accept_thread(void *arg)
{
    int ep = (int)(intptr_t)arg, tmo = -1;
    for (;;) {
        struct epoll_event ev[16];
        int n = epoll_wait(ep, ev, 16, tmo);
        if (n < 0 && errno != EINTR)
            return NULL;
        ust_lock(&rdv_lock);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u64 & 1) { /* a listener, by id: it may be gone */
                for (struct listener *l = listeners; l != NULL; l = l->next)
                    if (l->id == ev[i].data.u64 >> 1)
                        accept_all(l);
            } else if (ev[i].data.u64 == RDV_TICK_EV) {
                reclaim();
            } else { /* a pending connection: only this thread frees it */
                conn_ready(ev[i].data.ptr);
            }
        }
        tmo = expire();
        ust_unlock(&rdv_lock);
    }
}

void ust_rdv_settle(long ms)
{
    for (long waited = 0; atomic_load(&serving) > 0 && waited < ms; waited += 5) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------------------ */
/* Listening                                                                */
/* ------------------------------------------------------------------------ */
/* Bind fd at the base name of (kind, dev, ino), or at an alternative when
 * another socket holds it (*alt set); the name into a.  0 or an errno.
 * The base name is tried three times 1 ms apart: a client holds it for a
 * moment to tell "nobody" from a squatter (sd_rdv_client.c connect_name). */
static int bind_name(int fd, int kind, dev_t dev, ino_t ino, struct sockaddr_un *a, int *alt)
{
    socklen_t al = ust_rdv_addr(a, kind, dev, ino, 0);
    for (int i = 0; i < 3; i++) {
        if (bind(fd, (struct sockaddr *)a, al) == 0)
            return 0;
        struct timespec ts = {0, 1000000};
        if (errno != EADDRINUSE || (i < 2 && nanosleep(&ts, NULL) != 0))
            break;
    }
    *alt = 1;
    for (int i = 0; i < 4 && errno == EADDRINUSE; i++) {
        uint64_t alt = 0;
        if (getrandom(&alt, sizeof(alt), 0) != (ssize_t)sizeof(alt))
            return EAGAIN;
        al = ust_rdv_addr(a, kind, dev, ino, alt | 1);
        if (bind(fd, (struct sockaddr *)a, al) == 0)
            return 0;
    }
    return errno;
}

int ust_rdv_listen(int kind, int node, int *lfd)
{
    struct listener *l = calloc(1, sizeof(*l));
    struct stat st;
    int fd = -1, err = 0;

    if (l == NULL)
        return ENOMEM;
    l->fd2 = -1;
    l->node = fcntl(node, F_DUPFD_CLOEXEC, 0);
    ust_relay_exit_register(); /* exit waits for the opens being served */
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l->node < 0 || fstat(l->node, &st) != 0 || fd < 0)
        err = errno;
    else
        err = bind_name(fd, kind, st.st_dev, st.st_ino, &l->addr, &l->alt);
    if (err == 0 && listen(fd, SOMAXCONN) != 0)
        err = errno;
    ust_lock(&rdv_lock);
    if (err == 0 && rdv_ep < 0) {
        rdv_ep = epoll_create1(EPOLL_CLOEXEC);
        if (rdv_ep < 0)
            err = errno;
        else if (!pool_cv_ready) {
            ust_cond_init(&pool_cv);
            pool_cv_ready = 1;
        }
    }
    if (err == 0 && l->alt && rdv_tick < 0) { /* made the first time it is needed */
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = RDV_TICK_EV};
        rdv_tick = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (rdv_tick < 0 || epoll_ctl(rdv_ep, EPOLL_CTL_ADD, rdv_tick, &ev) != 0) {
            err = errno;
            if (rdv_tick >= 0)
                close(rdv_tick);
            rdv_tick = -1;
        }
    }
    if (err == 0) {
        l->id = next_id++;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (l->id << 1) | 1};
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
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        l->next = listeners;
        listeners = l;
        if (l->alt) { /* the tick, to take the base name back */
            struct itimerspec t = {{0, RDV_RECLAIM_MS * 1000000L}, {0, RDV_RECLAIM_MS * 1000000L}};
            timerfd_settime(rdv_tick, 0, &t, NULL);
        }
    }
    ust_unlock(&rdv_lock);
    if (err != 0) {
        if (fd >= 0)
            close(fd);
        if (l->node >= 0)
            close(l->node);
        free(l);
        return err;
    }
    /* Another owner already (one that raced us to it, or one at an
     * alternative name while ours is the base)?  Then it keeps the name. */
    if (ust_rdv_other_owner(kind, &st, node, &l->addr)) {
        ust_rdv_unlisten(fd);
        return EBUSY;
    }
    if (kind == UST_RDV_NAME)
        ust_name_mark(st.st_dev, st.st_ino, 1); /* for the preload's probe */
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
        if (l->fd2 >= 0) {
            epoll_ctl(rdv_ep, EPOLL_CTL_DEL, l->fd2, NULL);
            close(l->fd2);
        }
        close(l->node);
    }
    ust_unlock(&rdv_lock);
    if (l != NULL && l->kind == UST_RDV_NAME)
        ust_name_mark(l->dev, l->ino, 0);
    free(l);
}

/* ------------------------------------------------------------------------ */
/* fork                                                                     */
/* ------------------------------------------------------------------------ */
void ust_rdv_fork_prepare(void)
{
    ust_lock(&rdv_lock);
    ust_lock(&pool_lock);
}

void ust_rdv_fork_parent(void)
{
    ust_unlock(&pool_lock);
    ust_unlock(&rdv_lock);
}

/* The child serves none of the parent's names: every listener, pending
 * connection and queued request is closed (the parent answers them); the
 * ones the parent's threads were serving are theirs (not freed here). */
void ust_rdv_fork_child(void)
{
    struct listener *l = listeners;
    listeners = NULL;
    while (l != NULL) {
        struct listener *n = l->next;
        close(l->fd);
        if (l->fd2 >= 0)
            close(l->fd2);
        close(l->node);
        free(l);
        l = n;
    }
    struct rdv_conn *lists[2] = {pending, jobs};
    for (int i = 0; i < 2; i++)
        for (struct rdv_conn *c = lists[i], *n; c != NULL; c = n) {
            n = c->next;
            close(c->fd);
            close(c->node);
            if (c->cfd >= 0)
                close(c->cfd);
            free(c);
        }
    pending = NULL;
    jobs = NULL;
    jobs_tail = &jobs;
    nworkers = nidle = 0;
    memset(budgets, 0, sizeof(budgets));
    total[0] = total[1] = 0;
    if (rdv_ep >= 0)
        close(rdv_ep);
    if (rdv_tick >= 0)
        close(rdv_tick);
    rdv_ep = rdv_tick = -1;
    rdv_running = 0;
    atomic_store(&serving, 0); /* the parent's connection threads */
    if (pool_cv_ready)
        ust_cond_init(&pool_cv);
    ust_lock_init(&pool_lock);
    ust_lock_init(&rdv_lock);
}
