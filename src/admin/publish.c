/* SPDX-License-Identifier: MIT */
/*
 * publish.c -- every process that uses ustreams publishes its registry and
 * its streams for the tools of its user (issue 13): `ustreams scls -P` and
 * `ustreams strinfo -P` ask each process for what ustreams_print_modules,
 * ustreams_dump_all and ustreams_blockstats give there (protocol in
 * publish.h, what the tools print in docs/ADMIN.md).
 *
 * Layer: administration.  The stream head calls up through its publish hook
 * (ust_sd_set_publish, sthead.h), installed by ust_publish_init from
 * start.c; the runtime directory is the executive's (src/core/rundir.h).
 *
 * Principles of operation
 *   Where.  A listening UNIX stream socket "<rundir>/proc.<pid>" in the
 *   user's runtime directory (0700, checked by ust_rundir).  The socket is
 *   SOCK_CLOEXEC: an exec'ed program does not inherit it; if that program
 *   uses ustreams it publishes under the same pid, and the bind first
 *   removes the name (a name with our pid can only be ours, or stale).
 *
 *   When.  Lazily: strm_open and strm_pipe run the hook first; the first
 *   call of a process binds the socket and starts the thread, every later
 *   one loads one flag (pub_done).  A process that never makes a stream
 *   publishes nothing (the tools themselves, with -P).  USTREAMS_PUBLISH=0
 *   in the environment at that first call turns it off.  Every failure is
 *   silent and leaves the process unpublished: publishing never makes an
 *   open fail.
 *
 *   Serving.  A thread of its own (ust_thread_create: every signal
 *   blocked) polls the socket and serves one connection at a time: it
 *   checks the peer's credentials (SO_PEERCRED: the same effective uid,
 *   else the connection is closed unanswered), reads one request line
 *   (PUB_READ_MS at most), writes the whole answer into memory
 *   (open_memstream), then sends it with non-blocking sends and poll, for
 *   PUB_WRITE_MS at most, and closes.  So a stuck or slow client costs this
 *   thread a few seconds and nothing else: the text is made before any of
 *   it is sent, with the locks the tools' calls always take, and none is
 *   held while sending.  The executive's epoll thread (io_watch.h) is not
 *   used: it turns readiness into qenable for queues, and a service
 *   procedure would block that thread (every udp/tcp endpoint and split
 *   pipe behind it) for as long as a client dawdles.
 *
 *   Descriptors.  A program may close descriptors it did not open
 *   (closefrom, a loop over /proc/self/fd) and reuse their numbers.  The
 *   thread checks, before each accept and every PUB_CHECK_MS while idle
 *   (a close does not wake a poll already waiting on the descriptor), that
 *   its descriptor is still the socket it made (fstat: device and inode);
 *   if not, it stops without touching the number, removes the name, and
 *   the next strm_open or strm_pipe publishes again.  The fork child hook closes the numbers only if they still are our
 *   sockets, for the same reason.
 *
 *   Ending.  An atexit handler removes the name (only in the process that
 *   bound it).  A process that dies otherwise leaves it behind: the tools
 *   remove a name whose connect is refused (nobody listens any more).
 *
 *   fork.  The child must not answer on its parent's socket, nor keep it
 *   listening after the parent is gone (a tool would then wait for an
 *   answer instead of finding it stale): the child hook closes the
 *   listening socket and the connection being served, and clears pub_done,
 *   so the child publishes itself at its first strm_open or strm_pipe.
 *   The atexit registration is inherited and stays registered once.
 *
 * Locking
 *   pub_lock guards the fields below it (pub_done is also read without it,
 *   the fast path).  It is a leaf: taken with no other lock of the library
 *   held (by the first opener, by the thread around accept and close, by
 *   atexit) and held only across non-blocking system calls and
 *   pthread_create; nothing is taken under it.  fork: quiesced (rank
 *   UST_FORK_PUBLISH), so that the child knows every descriptor of ours it
 *   inherited.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <ustreams_exec.h>

#include "procs.h"
#include "publish.h"
#include "rundir.h"
#include "sd_names.h"
#include "sthead.h"
#include "strcore.h"

#define PUB_BACKLOG 16
#define PUB_READ_MS 1000  /* for the request line */
#define PUB_WRITE_MS 5000 /* for the whole answer */
#define PUB_MAXNAMES 64   /* names of one "modules" command */
#define PUB_CHECK_MS 500  /* the idle thread looks whether its socket is still its own */

static ust_lock_t pub_lock = UST_LOCK_INIT; /* leaf; guards the fields below */
static atomic_int pub_done;    /* pub_lock to write: this process has tried to publish */
static int pub_lfd = -1;       /* pub_lock: the listening socket, -1 none */
static dev_t pub_dev;          /* pub_lock: its device and inode (fstat; see "Descriptors") */
static ino_t pub_ino;
static int pub_cfd = -1;       /* pub_lock: the connection being served, -1 none */
static dev_t pub_cdev;         /* pub_lock: its device and inode */
static ino_t pub_cino;
static char pub_path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* pub_lock: "" none */
static pid_t pub_pid;          /* pub_lock: the process that bound pub_path */
static int pub_atexit;         /* pub_lock: pub_exit registered (inherited by children) */

/* ------------------------------------------------------------------------ */
/* Answering                                                                */
/* ------------------------------------------------------------------------ */

/* Run one command (words separated by blanks, NUL-terminated) into f. */
static void answer_one(char *cmd, FILE *f)
{
    char *save = NULL, *word = strtok_r(cmd, " \t", &save);
    if (word == NULL)
        return;
    if (strcmp(word, "modules") == 0) {
        const char *names[PUB_MAXNAMES];
        int nnames = 0, flags = 0;
        char *fl = strtok_r(NULL, " \t", &save), *end = NULL;
        if (fl != NULL)
            flags = (int)strtol(fl, &end, 10);
        if (fl == NULL || *end != '\0') {
            fprintf(f, "error: modules: no FLAGS\n");
            return;
        }
        for (char *n; nnames < PUB_MAXNAMES && (n = strtok_r(NULL, " \t", &save)) != NULL;)
            names[nnames++] = n;
        if (ustreams_print_modules(f, flags, nnames ? names : NULL, nnames) < 0)
            fprintf(f, "error: modules: %s\n", strerror(errno));
    } else if (strcmp(word, "streams") == 0) {
        if (ustreams_dump_all(f) < 0)
            fprintf(f, "error: streams: %s\n", strerror(errno));
        long nsf = ust_pipe_split_failures(); /* shown when it happened only */
        if (nsf > 0)
            fprintf(f, "pipes split_failed=%ld (at fork: those pipes are EIO in the child)\n",
                    nsf);
        long nbr = ust_pipe_bell_rescued(); /* shown when it happened only */
        if (nbr > 0)
            fprintf(f, "pipes bell_rescued=%ld (doorbells lost, writers found by the look again)\n",
                    nbr);
        long xc[3];
        ust_xcross_counts(xc);
        fprintf(f, "cross refused: signals=%ld messages=%ld setopts_filtered=%ld\n", xc[0], xc[1],
                xc[2]);
    } else if (strcmp(word, "blocks") == 0) {
        struct ustreams_blockstats st;
        ustreams_blockstats(&st);
        fprintf(f, "blocks mblks=%ld dblks=%ld bytes=%ld allocs=%ld failures=%ld\n", st.mblks,
                st.dblks, st.bytes, st.allocs, st.failures);
        struct ust_rdv_stats rs; /* the names' rendezvous (sd_rdv.c): its budgets at work */
        ust_rdv_stats(&rs);
        fprintf(f, "rendezvous refused=%ld dropped=%ld denied=%ld pending=%d fifo_waiting=%d workers=%d\n",
                rs.refused, rs.dropped, rs.denied, rs.pending, rs.fifo_waiting, rs.workers);
    } else {
        fprintf(f, "error: unknown request: %.32s\n", word);
    }
}

/* The answer to a request line, in memory: *text (malloc'ed) and *len.
 * 0, or -1 (no memory). */
static int answer(char *line, char **text, size_t *len)
{
    char *save = NULL;
    FILE *f = open_memstream(text, len);
    if (f == NULL)
        return -1;
    for (char *cmd = strtok_r(line, ";", &save); cmd; cmd = strtok_r(NULL, ";", &save))
        answer_one(cmd, f);
    if (fclose(f) != 0) {
        free(*text);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The connection                                                           */
/* ------------------------------------------------------------------------ */

static void deadline_set(struct timespec *end, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, end);
    end->tv_sec += ms / 1000;
    end->tv_nsec += (ms % 1000) * 1000000L;
    if (end->tv_nsec >= 1000000000L) {
        end->tv_sec++;
        end->tv_nsec -= 1000000000L;
    }
}

/* Milliseconds left until end, 0 if past. */
static int ms_left(const struct timespec *end)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)(end->tv_sec - now.tv_sec) * 1000 +
                   (end->tv_nsec - now.tv_nsec) / 1000000L;
    return ms <= 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Wait (poll) for events on fd until end: 0 ready, ETIMEDOUT, or poll's error. */
static int wait_fd(int fd, short events, const struct timespec *end)
{
    for (;;) {
        int left = ms_left(end);
        if (left == 0)
            return ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return errno;
    }
}

/* Read the request line (without its newline) into buf (size n): 0 or an
 * errno (ETIMEDOUT, EMSGSIZE, EPIPE: closed before a whole line).  *rfd
 * receives the first descriptor passed with it (SCM_RIGHTS; "share"), -1
 * if none; any other is closed. */
static int read_line(int fd, char *buf, size_t n, int *rfd)
{
    struct timespec end;
    size_t len = 0;
    *rfd = -1;
    deadline_set(&end, PUB_READ_MS);
    while (len < n - 1) {
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(4 * sizeof(int))];
        } cm;
        struct iovec iov = {buf + len, n - 1 - len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                            .msg_controllen = sizeof(cm.b)};
        ssize_t k = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        for (struct cmsghdr *c = k >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL;
             c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (*rfd < 0)
                    *rfd = f;
                else
                    close(f);
            }
        }
        if (k > 0) {
            char *nl = memchr(buf + len, '\n', (size_t)k);
            len += (size_t)k;
            if (nl != NULL) {
                *nl = '\0';
                return 0;
            }
            continue;
        }
        if (k == 0)
            return EPIPE;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno;
        int err = wait_fd(fd, POLLIN, &end);
        if (err != 0)
            return err;
    }
    return EMSGSIZE;
}

/* "share" (sd_xexec_share.c): the far side of a relay to the stream whose
 * readiness socket the asker passed, or "error <errno>". */
static void serve_share(int cfd, int rfd)
{
    int mfd = -1, bfd = -1, acc = 0;
    int err = rfd < 0 ? EPERM : ust_exec_share_serve(rfd, &mfd, &bfd, &acc);
    char line[32];
    int len = err == 0 ? snprintf(line, sizeof(line), "ok %d\n", acc)
                       : snprintf(line, sizeof(line), "error %d\n", err);
    struct iovec iov = {line, (size_t)len};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(2 * sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (err == 0) {
        int fds[2] = {mfd, bfd};
        mh.msg_control = cm.b;
        mh.msg_controllen = sizeof(cm.b);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(c), fds, sizeof(fds));
    }
    struct timespec end;
    deadline_set(&end, PUB_WRITE_MS);
    while (sendmsg(cfd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
           (errno == EINTR || ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(cfd, POLLOUT, &end) == 0)))
        ;
    if (err == 0) { /* the asker has its copies, or the relay's end hangs up */
        close(mfd);
        close(bfd);
    }
}

/* Send text[0..len) on fd, all of it within PUB_WRITE_MS: 0 or an errno. */
static int write_all(int fd, const char *text, size_t len)
{
    struct timespec end;
    deadline_set(&end, PUB_WRITE_MS);
    while (len > 0) {
        ssize_t k = send(fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            text += k;
            len -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return errno;
        int err = wait_fd(fd, POLLOUT, &end);
        if (err != 0)
            return err;
    }
    return 0;
}

/* Serve one accepted connection (not closed here). */
static void serve(int cfd)
{
    struct ucred uc;
    socklen_t ulen = sizeof(uc);
    char line[UST_PUBLISH_LINE_MAX];
    char *text = NULL;
    size_t len = 0;

    if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &uc, &ulen) != 0 || ulen != sizeof(uc) ||
        uc.uid != geteuid())
        return; /* not our user: closed unanswered */
    int rfd;
    if (read_line(cfd, line, sizeof(line), &rfd) != 0) {
        if (rfd >= 0)
            close(rfd);
        return;
    }
    if (strcmp(line, "share") == 0) {
        serve_share(cfd, rfd);
        if (rfd >= 0)
            close(rfd);
        return;
    }
    if (rfd >= 0)
        close(rfd);
    if (answer(line, &text, &len) != 0)
        return;
    write_all(cfd, text, len);
    free(text);
}

/* ------------------------------------------------------------------------ */
/* The thread                                                               */
/* ------------------------------------------------------------------------ */

/* pub_lock held: stop publishing on lfd (not closed: see "Descriptors"). */
static void stop_locked(void)
{
    /* "Publish again" before the name goes: a stream opened by someone who
     * saw the name gone must find pub_done clear (then waits for pub_lock
     * and publishes anew), never the stale 1. */
    atomic_store_explicit(&pub_done, 0, memory_order_release);
    if (pub_path[0] != '\0' && pub_pid == getpid())
        unlink(pub_path);
    pub_path[0] = '\0';
    pub_lfd = -1;
}

static void *pub_thread(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        /* Not for ever: a close(2) of lfd by the program (closefrom) need
         * not wake a poll already waiting on it (the file stays referenced
         * while polled), so look again every PUB_CHECK_MS. */
        if (poll(&p, 1, PUB_CHECK_MS) < 0 && errno != EINTR) {
            struct timespec ts = {0, 100000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        struct stat st;
        ust_lock(&pub_lock);
        if (pub_lfd != lfd) { /* not ours any more (cannot happen in this process) */
            ust_unlock(&pub_lock);
            break;
        }
        if (fstat(lfd, &st) != 0 || st.st_dev != pub_dev || st.st_ino != pub_ino) {
            stop_locked(); /* closed behind our back, maybe reused */
            ust_unlock(&pub_lock);
            break;
        }
        if (p.revents == 0) { /* the periodic look: nothing to accept */
            ust_unlock(&pub_lock);
            continue;
        }
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd >= 0 && fstat(cfd, &st) != 0) {
            close(cfd);
            cfd = -1;
        }
        pub_cfd = cfd;
        pub_cdev = st.st_dev;
        pub_cino = st.st_ino;
        ust_unlock(&pub_lock);
        if (cfd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                struct timespec ts = {0, 100000000L}; /* not a busy loop */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        serve(cfd);
        ust_lock(&pub_lock);
        close(cfd);
        pub_cfd = -1;
        ust_unlock(&pub_lock);
    }
    return NULL;
}

/* atexit: take our name out of the directory. */
static void pub_exit(void)
{
    ust_lock(&pub_lock);
    if (pub_path[0] != '\0' && pub_pid == getpid())
        unlink(pub_path);
    pub_path[0] = '\0';
    ust_unlock(&pub_lock);
}

/* pub_lock held: bind the socket and start the thread; silent on failure. */
static void start_locked(void)
{
    const char *env = getenv("USTREAMS_PUBLISH");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char dir[sizeof(sa.sun_path)];
    pthread_attr_t attr;
    pthread_t t;
    struct stat st;
    pid_t pid = getpid();
    int fd, len;

    if (env != NULL && strcmp(env, "0") == 0)
        return;
    if (ust_rundir(dir, sizeof(dir)) != 0)
        return;
    len = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" UST_PUBLISH_PREFIX "%ld", dir,
                   (long)pid);
    if (len < 0 || (size_t)len >= sizeof(sa.sun_path))
        return;
    fd = ust_fd_park(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (fd < 0)
        return;
    unlink(sa.sun_path); /* ours from before an exec, or stale */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        goto fail;
    if (listen(fd, PUB_BACKLOG) != 0 || fstat(fd, &st) != 0)
        goto fail_unlink;
    if (pthread_attr_init(&attr) != 0)
        goto fail_unlink;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pub_lfd = fd; /* before the thread looks */
    pub_dev = st.st_dev;
    pub_ino = st.st_ino;
    int err = ust_thread_create(&t, &attr, pub_thread, (void *)(intptr_t)fd);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        pub_lfd = -1;
        goto fail_unlink;
    }
    memcpy(pub_path, sa.sun_path, (size_t)len + 1);
    pub_pid = pid;
    if (!pub_atexit && atexit(pub_exit) == 0)
        pub_atexit = 1;
    return;
fail_unlink:
    unlink(sa.sun_path);
fail:
    close(fd);
}

/* The stream head's publish hook: one load once it has run. */
static void pub_hook(void)
{
    if (atomic_load_explicit(&pub_done, memory_order_acquire))
        return;
    ust_lock(&pub_lock);
    if (!atomic_load_explicit(&pub_done, memory_order_relaxed)) {
        atomic_store_explicit(&pub_done, 1, memory_order_release);
        start_locked();
    }
    ust_unlock(&pub_lock);
}

/* ------------------------------------------------------------------------ */
/* fork() and start                                                         */
/* ------------------------------------------------------------------------ */

static void pub_fork_prepare(void)
{
    ust_lock(&pub_lock);
}

static void pub_fork_parent(void)
{
    ust_unlock(&pub_lock);
}

/* Close fd if it is still the socket (dev, ino): the program may have
 * closed the number and reused it before the thread noticed. */
static void close_ours(int fd, dev_t dev, ino_t ino)
{
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        close(fd);
}

/* The thread is not in the child: close what it listened and answered on,
 * forget the name (the parent's), publish again at the first stream. */
static void pub_fork_child(void)
{
    close_ours(pub_cfd, pub_cdev, pub_cino);
    close_ours(pub_lfd, pub_dev, pub_ino);
    pub_cfd = pub_lfd = -1;
    pub_path[0] = '\0';
    pub_pid = 0;
    atomic_store_explicit(&pub_done, 0, memory_order_relaxed);
    ust_unlock(&pub_lock);
}

void ust_publish_init(void)
{
    ust_fork_register(UST_FORK_PUBLISH, pub_fork_prepare, pub_fork_parent, pub_fork_child);
    ust_sd_set_publish(pub_hook);
}
