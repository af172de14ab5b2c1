/* SPDX-License-Identifier: MIT */
/*
 * xlog.c -- loggers across processes: the log driver's classes (error,
 * trace, console) are one per user, and a logger receives what the other
 * processes of its user log (docs/ADMIN.md "Logging", docs/SECURITY.md).
 *
 * Principles of operation
 *   - The slot of a class is the lock file "<rundir>/log-<class>.lock"
 *     (flock LOCK_EX | LOCK_NB, held while the logger lives; the kernel frees
 *     it when the process dies, so a crashed logger never keeps the slot).
 *     Its holder binds the datagram socket "<rundir>/log-<class>" (unlinking
 *     a stale one first: only the lock's holder touches the name).  Claim
 *     fails EBUSY when another open file holds the lock -- another process,
 *     or another stream of this one.
 *   - A process logging a message of a class it has no logger for sends one
 *     record to that socket with sendto(MSG_DONTWAIT) from one unbound
 *     socket: never a wait.  A full socket (EAGAIN) drops the record and
 *     counts it (UST_XLOG_SENDDROP), and the next record sent carries the
 *     number lost, which the receiving driver skips in its sequence: the
 *     logger sees the gap (log(7)).  No socket there (ENOENT, ECONNREFUSED)
 *     means no logger, remembered for XLOG_ABSENT_MS so that a process
 *     without loggers makes at most one such system call per class per
 *     period.
 *   - The holder's receiving thread (one per process, started by the first
 *     claim, gone when no slot is held) polls the bound sockets and hands
 *     each record, once checked (ust_xlog_check), to the log driver through
 *     ust_strlog_far: the local logger of that class numbers it and passes
 *     it up, with the sender's pid (from the kernel's SCM_CREDENTIALS) in
 *     log_ctl.pid.  A full logger stream drops it there (ls_dropped).
 *   - Trust boundary: a datagram is hostile input.  Refused and counted
 *     (UST_XLOG_REJECTED): no credentials, a uid other than ours or root,
 *     a truncated datagram or control part, descriptors (closed), a length
 *     that is not the header plus its text, a bad magic, version, class,
 *     flag bit or priority, a negative time, a non-zero pad.
 * Locking: xlog_lock guards the slot table and the thread's state.  claim,
 *   release and the fork hooks run under the log driver's slot lock (one at
 *   a time) and take xlog_lock briefly; the thread takes it to copy its
 *   descriptors.  A released socket is closed by the thread (it may be in its
 *   poll set), never under it.  send takes no lock (atomics only).
 * fork: the child forgets the slots without releasing them (they are the
 *   parent's): it closes its copies of the descriptors; it has no thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/strlog.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "procs.h"
#include "rundir.h"
#include "strcore.h"
#include "xlog_wire.h"

#define XLOG_ABSENT_MS 100 /* how long "no logger of the class" is believed */
#define XLOG_POLL_MS   100 /* the thread looks at its table this often */
#define XLOG_DEAD      8   /* room for released sockets kept without malloc */

static const char *const xlog_names[XLOG_NCLASS] = {"log-error", "log-trace", "log-console"};
static const short xlog_flag[XLOG_NCLASS] = {SL_ERROR, SL_TRACE, SL_CONSOLE};

/* xlog_lock: the slots, the dead list and the thread's state. */
static pthread_mutex_t xlog_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int lockfd; /* xlog_lock: the flock-ed lock file, or -1 */
    int sockfd; /* xlog_lock: the bound socket, or -1 */
} xlog_slot[XLOG_NCLASS] = {{-1, -1}, {-1, -1}, {-1, -1}};
/* Released sockets waiting for the thread to close them (xlog_lock).  A
 * socket the thread may be polling or draining is never closed by anyone
 * else: its number could be reused at once (a new claim's socket) and the
 * thread would read from that.  The list grows past XLOG_DEAD while the
 * thread is busy (a program that takes and drops loggers quickly). */
static int xlog_dead_fixed[XLOG_DEAD];
static int *xlog_dead = xlog_dead_fixed;
static int xlog_ndead, xlog_capdead = XLOG_DEAD;
static int xlog_running;         /* xlog_lock: the thread exists */

/* Sending side: no lock. */
static atomic_int xlog_sendfd = -1;             /* the unbound sending socket */
static atomic_llong xlog_absent[XLOG_NCLASS];   /* ms: no logger believed until then */
static atomic_uint xlog_lost[XLOG_NCLASS];      /* dropped since the last record sent */
static char xlog_dir[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* set once */
static pthread_once_t xlog_dir_once = PTHREAD_ONCE_INIT;

static int xlog_index(int cls)
{
    return cls == UST_LOGC_ERR ? 0 : cls == UST_LOGC_TRC ? 1 : cls == UST_LOGC_CONS ? 2 : -1;
}

static long long xlog_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The runtime directory, resolved once per process (ust_rundir checks it). */
static void xlog_dir_init(void)
{
    if (ust_rundir(xlog_dir, sizeof(xlog_dir)) != 0)
        xlog_dir[0] = '\0';
}

/* The address of class index i's socket; 0, or -1 (no runtime directory). */
static int xlog_addr(int i, struct sockaddr_un *sa, const char *suffix)
{
    pthread_once(&xlog_dir_once, xlog_dir_init);
    if (xlog_dir[0] == '\0')
        return -1;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s%s", xlog_dir, xlog_names[i],
                     suffix);
    return n > 0 && (size_t)n < sizeof(sa->sun_path) ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Receiving                                                                 */
/* ------------------------------------------------------------------------ */

int ust_xlog_check(int i, const unsigned char *buf, size_t n, struct log_ctl *lc,
                   const char **text, size_t *len)
{
    if (i < 0 || i >= XLOG_NCLASS)
        return -1;
    struct xlog_rec r;
    const char *t;

    if (n < sizeof(r))
        return -1;
    memcpy(&r, buf, sizeof(r));
    if (r.magic != XLOG_MAGIC || r.version != XLOG_VERSION || r.pad != 0 ||
        r.lost > XLOG_MAXLOST)
        return -1;
    if (xlog_index(r.cls) != i || r.textlen >= LOGMSGSZ || n != sizeof(r) + r.textlen)
        return -1;
    if ((r.flags & ~XLOG_FLAGS) != 0 || !(r.flags & xlog_flag[i]))
        return -1;
    if (r.pri < 0 || r.pri > 0x3ff || r.ltime < 0 || r.ttime < 0)
        return -1;
    t = (const char *)buf + sizeof(r);
    memset(lc, 0, sizeof(*lc));
    lc->mid = r.mid;
    lc->sid = r.sid;
    lc->level = (char)r.level;
    lc->flags = r.flags;
    lc->pri = r.pri;
    lc->ltime = (long)r.ltime;
    lc->ttime = (long)r.ttime;
    lc->seq_no = (int)r.lost; /* ust_strlog_far: numbers to skip (the gap) */
    *text = t;
    *len = strnlen(t, r.textlen); /* cut at a NUL */
    return 0;
}

/* Read the datagrams waiting on fd (class index i, at most 256 a call) and
 * deliver the good ones.  The thread only. */
static void xlog_drain(int i, int fd)
{
    unsigned char buf[sizeof(struct xlog_rec) + LOGMSGSZ];
    union {
        char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } c;
    uid_t me = geteuid();

    for (int k = 0; k < 256; k++) { /* bounded: the thread serves every class */
        struct iovec iov = {buf, sizeof(buf)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                            .msg_controllen = sizeof(c.buf)};
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        struct ucred cr = {0, (uid_t)-1, (gid_t)-1};
        int have_cred = 0, bad = 0;

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL; h = CMSG_NXTHDR(&mh, h)) {
            if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
                size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t j = 0; j < nfd; j++) {
                    int rfd;
                    memcpy(&rfd, CMSG_DATA(h) + j * sizeof(int), sizeof(int));
                    close(rfd);
                }
                bad = 1; /* nothing is passed with a log record */
            } else if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS &&
                       h->cmsg_len >= CMSG_LEN(sizeof(cr))) {
                memcpy(&cr, CMSG_DATA(h), sizeof(cr));
                have_cred = 1;
            }
        }
        if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
            bad = 1;
        if (!have_cred || (cr.uid != me && cr.uid != 0) || cr.pid <= 0)
            bad = 1;

        struct log_ctl lc;
        const char *text;
        size_t len;
        if (bad || ust_xlog_check(i, buf, (size_t)n, &lc, &text, &len) != 0) {
            ust_xlog_count(UST_XLOG_REJECTED);
            continue;
        }
        char copy[LOGMSGSZ];
        memcpy(copy, text, len);
        copy[len] = '\0';
        lc.pid = cr.pid; /* the kernel's word, not the record's */
        ust_xlog_count(UST_XLOG_RECEIVED);
        (void)ust_strlog_far(&lc, copy, len, 1 << i);
    }
}

/* The receiving thread: polls the bound sockets until no slot is held. */
static void *xlog_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[XLOG_NCLASS];
        int cls[XLOG_NCLASS], np = 0;

        pthread_mutex_lock(&xlog_lock);
        for (int k = 0; k < xlog_ndead; k++)
            close(xlog_dead[k]);
        xlog_ndead = 0;
        for (int i = 0; i < XLOG_NCLASS; i++) {
            if (xlog_slot[i].sockfd >= 0) {
                p[np] = (struct pollfd){xlog_slot[i].sockfd, POLLIN, 0};
                cls[np++] = i;
            }
        }
        if (np == 0) {
            xlog_running = 0;
            pthread_mutex_unlock(&xlog_lock);
            return NULL;
        }
        pthread_mutex_unlock(&xlog_lock);
        /* The descriptors in p stay open until this thread closes them. */
        if (poll(p, (nfds_t)np, XLOG_POLL_MS) <= 0)
            continue;
        for (int k = 0; k < np; k++)
            if (p[k].revents)
                xlog_drain(cls[k], p[k].fd);
    }
}

/* ------------------------------------------------------------------------ */
/* The hooks (strcore.h, struct ust_xlog_ops)                                */
/* ------------------------------------------------------------------------ */

static int xlog_claim(int c)
{
    struct sockaddr_un sa, la;
    int i = xlog_index(c), lockfd, sfd, on = 1, err = 0;

    if (i < 0)
        return EINVAL;
    if (xlog_addr(i, &sa, "") != 0 || xlog_addr(i, &la, ".lock") != 0)
        return ENOENT;
    lockfd = open(la.sun_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lockfd < 0)
        return errno;
    if (flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        err = errno == EWOULDBLOCK ? EBUSY : errno;
        close(lockfd);
        return err;
    }
    /* Ours: a socket file there is a dead holder's. */
    (void)unlink(sa.sun_path);
    sfd = ust_fd_park(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (sfd < 0 || setsockopt(sfd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0 ||
        bind(sfd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        err = errno;
        if (sfd >= 0)
            close(sfd);
        close(lockfd); /* the lock goes with it */
        return err;
    }
    pthread_mutex_lock(&xlog_lock);
    xlog_slot[i].lockfd = lockfd;
    xlog_slot[i].sockfd = sfd;
    if (!xlog_running) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, xlog_thread, NULL) == 0)
            xlog_running = 1;
        pthread_attr_destroy(&at);
    }
    pthread_mutex_unlock(&xlog_lock);
    atomic_store(&xlog_absent[i], 0);
    return 0;
}

/* Hand fd to the thread to close.  xlog_lock held, the thread running.
 * Without memory for a longer list the socket is kept open for good (its
 * name is gone already): a descriptor lost, never one the thread misreads. */
static void xlog_defer_close(int fd)
{
    if (xlog_ndead == xlog_capdead) {
        int cap = xlog_capdead * 2;
        int *v = malloc((size_t)cap * sizeof(*v));
        if (v == NULL)
            return;
        memcpy(v, xlog_dead, (size_t)xlog_ndead * sizeof(*v));
        if (xlog_dead != xlog_dead_fixed)
            free(xlog_dead);
        xlog_dead = v;
        xlog_capdead = cap;
    }
    xlog_dead[xlog_ndead++] = fd;
}

static void xlog_release(int c)
{
    struct sockaddr_un sa;
    int i = xlog_index(c);

    if (i < 0)
        return;
    pthread_mutex_lock(&xlog_lock);
    if (xlog_slot[i].sockfd >= 0) {
        if (xlog_addr(i, &sa, "") == 0)
            (void)unlink(sa.sun_path); /* before the lock goes: still ours */
        if (xlog_running)
            xlog_defer_close(xlog_slot[i].sockfd); /* the thread closes it */
        else
            close(xlog_slot[i].sockfd);
        close(xlog_slot[i].lockfd); /* the slot is free */
        xlog_slot[i].sockfd = xlog_slot[i].lockfd = -1;
    }
    pthread_mutex_unlock(&xlog_lock);
}

/* The sending socket, made on first use (a race makes two: one is closed). */
static int xlog_sender(void)
{
    int fd = atomic_load(&xlog_sendfd), expect = -1;

    if (fd >= 0)
        return fd;
    fd = ust_fd_park(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return -1;
    if (!atomic_compare_exchange_strong(&xlog_sendfd, &expect, fd)) {
        close(fd);
        return expect;
    }
    return fd;
}

static int xlog_send(int c, const struct log_ctl *lc, const char *text, size_t len)
{
    unsigned char buf[sizeof(struct xlog_rec) + LOGMSGSZ];
    struct xlog_rec r;
    struct sockaddr_un sa;
    int i = xlog_index(c), fd;
    long long now = xlog_now_ms();

    if (i < 0 || now < atomic_load_explicit(&xlog_absent[i], memory_order_relaxed))
        return 0;
    if (xlog_addr(i, &sa, "") != 0 || (fd = xlog_sender()) < 0)
        return 0;
    if (len > LOGMSGSZ - 1)
        len = LOGMSGSZ - 1;
    memset(&r, 0, sizeof(r));
    r.magic = XLOG_MAGIC;
    r.version = XLOG_VERSION;
    r.cls = (uint8_t)c;
    r.textlen = (uint16_t)len;
    r.mid = lc->mid;
    r.sid = lc->sid;
    r.flags = (int16_t)(lc->flags & XLOG_FLAGS);
    r.level = (int8_t)lc->level;
    r.pri = lc->pri & 0x3ff;
    r.ltime = lc->ltime < 0 ? 0 : lc->ltime;
    r.ttime = lc->ttime < 0 ? 0 : lc->ttime;
    r.lost = atomic_exchange_explicit(&xlog_lost[i], 0, memory_order_relaxed);
    if (r.lost > XLOG_MAXLOST)
        r.lost = XLOG_MAXLOST;
    memcpy(buf, &r, sizeof(r));
    memcpy(buf + sizeof(r), text, len);
    if (sendto(fd, buf, sizeof(r) + len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&sa,
               sizeof(sa)) >= 0) {
        ust_xlog_count(UST_XLOG_SENT);
        return 1;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
        ust_xlog_count(UST_XLOG_SENDDROP); /* the logger is slow: drop, never wait */
        atomic_fetch_add_explicit(&xlog_lost[i], r.lost + 1, memory_order_relaxed);
        return -1;
    }
    atomic_store_explicit(&xlog_absent[i], now + XLOG_ABSENT_MS, memory_order_relaxed);
    return 0;
}

static void xlog_fork_prepare(void)
{
    pthread_mutex_lock(&xlog_lock);
}

static void xlog_fork_parent(void)
{
    pthread_mutex_unlock(&xlog_lock);
}

/* The slots are the parent's: close the child's copies only (the flock is
 * the parent's open file, kept by its descriptor; nothing is unlinked). */
static void xlog_fork_child(void)
{
    for (int i = 0; i < XLOG_NCLASS; i++) {
        if (xlog_slot[i].sockfd >= 0)
            close(xlog_slot[i].sockfd);
        if (xlog_slot[i].lockfd >= 0)
            close(xlog_slot[i].lockfd);
        xlog_slot[i].sockfd = xlog_slot[i].lockfd = -1;
    }
    for (int k = 0; k < xlog_ndead; k++)
        close(xlog_dead[k]);
    xlog_ndead = 0;
    xlog_running = 0;
    pthread_mutex_unlock(&xlog_lock);
}

static const struct ust_xlog_ops xlog_ops = {
    .claim = xlog_claim,
    .release = xlog_release,
    .send = xlog_send,
    .fork_prepare = xlog_fork_prepare,
    .fork_parent = xlog_fork_parent,
    .fork_child = xlog_fork_child,
};

void ust_xlog_init(void)
{
    ust_xlog_set_ops(&xlog_ops);
}
