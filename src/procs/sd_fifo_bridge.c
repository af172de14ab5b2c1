/* SPDX-License-Identifier: MIT */
/*
 * sd_fifo_bridge.c -- a named FIFO's STREAMS FIFO joined to the node's
 * kernel FIFO, so that ordinary programs (cat, echo, a shell redirection)
 * and ustreams programs meet on one mkfifo node.
 *
 * Principles of operation
 *   The STREAMS FIFO of a node lives in its owner (sd_fifo_name.c); the
 *   other ustreams processes reach it through relays.  Programs that do not
 *   run the library open the kernel FIFO of the same node.  The owner's
 *   bridge (one thread per owned node) stands in the kernel FIFO for the
 *   ustreams parties, and in the STREAMS FIFO for the kernel ones, by
 *   holding ends of each side that mirror the other side's parties:
 *
 *     "in"  (kernel writers -> ustreams readers): while the STREAMS FIFO has
 *           a reader (not the bridge's), the bridge holds a read end of the
 *           kernel FIFO (kr, O_RDONLY|O_NONBLOCK), so kernel writers can
 *           open and write.  When bytes arrive it opens a STREAMS writer
 *           (bw) -- which ends the wait of ustreams O_RDONLY opens -- and
 *           moves them: it reads kr only while bw is writable (the STREAMS
 *           FIFO's flow control), so a fast kernel writer is held up by the
 *           kernel pipe's capacity and the process keeps at most one chunk
 *           (IO_MAX) beyond the FIFO's high-water mark.  It reads all the
 *           pipe holds (up to its default capacity, 64 KiB) in one read and
 *           puts it as one message, so a kernel writer's write of up to
 *           PIPE_BUF bytes (atomic in the kernel pipe) stays whole beside
 *           ustreams writers' messages.  When the kernel writers are all
 *           gone (POLLHUP, read 0) it closes bw: end of file for ustreams
 *           readers once no ustreams writer is left either; the read end is
 *           opened anew (POLLHUP would stay set until another writer came).
 *     "out" (ustreams writers -> kernel readers): while the STREAMS FIFO has
 *           a writer and no reader, the bridge looks for a kernel reader by
 *           opening a write end O_WRONLY|O_NONBLOCK (ENXIO: none); it looks
 *           again after 2, 4, ... up to PROBE_MAX_MS (the kernel tells no
 *           one of a reader's open), and at once for an O_WRONLY|O_NONBLOCK
 *           ustreams open (ust_fifo_bridge_probe, so that it does not fail
 *           ENXIO beside a kernel reader).  With a write end (kw) it opens a
 *           STREAMS reader (br) -- ustreams writers now have a reader --
 *           and moves what they write to kw (data parts; control parts are
 *           dropped, a kernel FIFO carries bytes).  kw's POLLERR (the kernel
 *           readers are gone) closes both: ustreams writers get EPIPE when
 *           no ustreams reader is left.  End of file on br (no ustreams
 *           writer) closes kw once what it holds is written: the kernel
 *           readers' end of file.
 *
 *   The two never run together: the bytes the bridge wrote to the kernel
 *   FIFO would come back through its own read end.  "in" starts only when
 *   "out" is not running and vice versa; while "out" runs, a ustreams
 *   reader that arrives shares the ustreams writers' messages with the
 *   kernel readers, and kernel writers write to the kernel readers only.
 *   While "in" runs, kernel readers get only what kernel writers write.
 *
 *   The counts the bridge looks at are the STREAMS FIFO's minus its own
 *   descriptors; sd_fifo.c tells it of every change through an eventfd
 *   (ust_fifo_key_watch).  Everything that comes through the kernel FIFO
 *   is bytes from any program (docs/SECURITY.md): it is only ever copied
 *   as M_DATA, in bounded chunks, under flow control.
 *
 *   exit: the owner's exit would lose what the bridge has not yet written
 *   to the kernel readers; bridge_exit (atexit) gives "out" up to
 *   BRIDGE_EXIT_MS to pass on what the STREAMS FIFO holds.
 *
 * Locking
 *   mode_lock (one per bridge) serialises the changes of mode between the
 *   thread and ust_fifo_bridge_probe; held across library calls (opens,
 *   closes), so never quiesced at fork (the child re-initialises it).
 *   bridge_lock (a leaf, quiesced at fork with fifo_lock) guards the list
 *   and the descriptor fields, so that the fork child closes exactly the
 *   descriptors the bridge holds.  Order: mode_lock, then bridge_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stropts.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "sd_fifo.h"
#include "sd_names.h"
#include "sthead.h"

#define IO_MAX 65536        /* one chunk: a kernel pipe's default capacity */
#define PROBE_MAX_MS 100    /* longest wait between looks for a kernel reader */
#define BRIDGE_EXIT_MS 5000 /* exit: the longest wait for "out" to finish */

struct ust_fifo_bridge {
    struct ust_fifo_bridge *next; /* bridge_lock */
    dev_t dev;                    /* fixed */
    ino_t ino;                    /* fixed */
    int node;                     /* fixed: the owner's O_PATH descriptor of the node */
    int efd;                      /* fixed: the eventfd sd_fifo.c and probes kick */
    int kr, kw;                   /* bridge_lock (written), kernel ends or -1 */
    int bw, br;                   /* bridge_lock (written), STREAMS descriptors or -1 */
    pthread_mutex_t mode_lock;    /* see Locking */
    atomic_int done;              /* the thread has finished (exit) */
    /* thread only: */
    int kready;                   /* kr has bytes not taken (waiting for bw's room) */
    int probe_ms;                 /* next wait between looks for a kernel reader */
    long long probe_at;           /* when to look next (ust_now_ns) */
    char *buf;                    /* IO_MAX bytes in transit */
    size_t off, len;              /* buf[off, len): not yet passed on */
};

static ust_lock_t bridge_lock = UST_LOCK_INIT; /* see Locking */
static struct ust_fifo_bridge *bridges;        /* bridge_lock */
static atomic_int exiting;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* A new kernel descriptor of the node (O_CLOEXEC, O_NONBLOCK): fd or -1. */
static int kopen(struct ust_fifo_bridge *b, int acc)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/self/fd/%d", b->node);
    return open(p, acc | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

/* Publish fd in *field (bridge_lock: the fork child sees it). */
static void set_fd(int *field, int fd)
{
    ust_lock(&bridge_lock);
    *field = fd;
    ust_unlock(&bridge_lock);
}

/* Close the kernel descriptor in *field, if any. */
static void close_k(int *field)
{
    ust_lock(&bridge_lock);
    int fd = *field;
    *field = -1;
    ust_unlock(&bridge_lock);
    if (fd >= 0)
        close(fd);
}

/* Close the STREAMS descriptor in *field, if any. */
static void close_s(int *field)
{
    ust_lock(&bridge_lock);
    int fd = *field;
    *field = -1;
    ust_unlock(&bridge_lock);
    if (fd >= 0)
        strm_close(fd);
}

/* A STREAMS descriptor of the FIFO, mode acc, never waiting: fd or -1. */
static int sopen(struct ust_fifo_bridge *b, int acc)
{
    return ust_fifo_open_key(b->dev, b->ino, acc | O_NONBLOCK | O_CLOEXEC, NULL);
}

/* The STREAMS FIFO's readers and writers but the bridge's.  mode_lock. */
static void others(struct ust_fifo_bridge *b, int *ur, int *uw)
{
    int r, w;
    ust_fifo_key_counts(b->dev, b->ino, &r, &w);
    *ur = r - (b->br >= 0);
    *uw = w - (b->bw >= 0);
}

/* Start "out" if a kernel reader is there: 1 if it runs.  mode_lock held,
 * "in" not running. */
static int try_out(struct ust_fifo_bridge *b)
{
    if (b->kw >= 0)
        return 1;
    int kw = kopen(b, O_WRONLY);
    if (kw < 0)
        return 0; /* ENXIO: no kernel reader */
    int br = sopen(b, O_RDONLY);
    if (br < 0) {
        close(kw);
        return 0;
    }
    ust_lock(&bridge_lock);
    b->kw = kw;
    b->br = br;
    ust_unlock(&bridge_lock);
    b->off = b->len = 0;
    return 1;
}

void ust_fifo_bridge_probe(struct ust_fifo_bridge *b)
{
    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mode_lock);
    int ur, uw;
    others(b, &ur, &uw);
    if (ur == 0 && b->kr < 0 && !atomic_load(&exiting))
        try_out(b);
    pthread_mutex_unlock(&b->mode_lock);
    (void)!eventfd_write(b->efd, 1);
}

/* End "out": the kernel readers' end of file (or they are gone). */
static void out_stop(struct ust_fifo_bridge *b)
{
    close_k(&b->kw);
    close_s(&b->br);
    b->off = b->len = 0;
    b->probe_ms = 2;
}

/* Drop a SIGPIPE a write to a kernel end without reader raised on this
 * thread (every signal is blocked here: it would stay pending). */
static void eat_sigpipe(void)
{
    sigset_t s;
    struct timespec zero = {0, 0};
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    while (sigtimedwait(&s, NULL, &zero) == SIGPIPE)
        ;
}

/* "out": write what buf holds to kw.  0: go on; -1: the readers are gone. */
static int out_flush(struct ust_fifo_bridge *b)
{
    while (b->off < b->len) {
        ssize_t n = write(b->kw, b->buf + b->off, b->len - b->off);
        if (n > 0) {
            b->off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        eat_sigpipe();
        return -1; /* EPIPE */
    }
    b->off = b->len = 0;
    return 0;
}

/* "out": take the next message from br.  1: bytes in buf; 0: nothing now;
 * -1: end of file (no ustreams writer, nothing left). */
static int out_take(struct ust_fifo_bridge *b)
{
    char ctl[256];
    struct strbuf c = {.maxlen = sizeof(ctl), .buf = ctl};
    struct strbuf d = {.maxlen = IO_MAX, .buf = b->buf};
    int band = 0, flags = MSG_ANY;
    if (getpmsg(b->br, &c, &d, &band, &flags) < 0)
        return errno == EAGAIN || errno == EINTR || errno == EBADMSG ? 0 : -1;
    if (d.len > 0) { /* the rest of a longer part comes with the next call */
        b->off = 0;
        b->len = (size_t)d.len;
        return 1;
    }
    if (c.len <= 0) { /* nothing, or end of file */
        int r, w;
        if (ust_fifo_counts(b->br, &r, &w) != 0 || w == 0)
            return -1;
    }
    return 0;
}

/* "in": move one chunk from kr to the STREAMS FIFO.  bw has room. */
static void in_move(struct ust_fifo_bridge *b)
{
    if (b->len == 0) {
        ssize_t n = read(b->kr, b->buf, IO_MAX);
        if (n < 0) {
            if (errno != EINTR)
                b->kready = 0; /* EAGAIN: empty again */
            return;
        }
        if (n == 0) { /* no kernel writer left, nothing left: the next one needs a new end */
            int kr = kopen(b, O_RDONLY);
            int old = b->kr;
            set_fd(&b->kr, kr);
            if (old >= 0)
                close(old);
            close_s(&b->bw); /* the ustreams readers' end of file (if theirs too) */
            b->kready = 0;
            return;
        }
        b->off = 0;
        b->len = (size_t)n;
    }
    /* strm_write: one message while the FIFO's maximum packet size allows
     * (a module-free FIFO has none), split as any write otherwise. */
    ssize_t n = strm_write(b->bw, b->buf + b->off, b->len - b->off);
    if (n > 0) {
        b->off += (size_t)n;
        if (b->off >= b->len)
            b->off = b->len = 0;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        eat_sigpipe();
        b->off = b->len = 0; /* no reader left: gone as into a FIFO nobody reads */
    }
}

/* "in": kr reported a hang-up with no bytes (writers came and went). */
static void in_hangup(struct ust_fifo_bridge *b)
{
    if (b->bw < 0) { /* a writer that opened and closed: it ends reader opens' wait too */
        int bw = sopen(b, O_WRONLY);
        if (bw >= 0)
            strm_close(bw);
    }
    close_s(&b->bw);
    int kr = kopen(b, O_RDONLY), old = b->kr;
    set_fd(&b->kr, kr);
    if (old >= 0)
        close(old);
    b->kready = 0;
}

/* Bring the modes in line with the counts.  Returns the poll timeout.
 * mode_lock held. */
static int settle(struct ust_fifo_bridge *b)
{
    int ur, uw, timeout = -1;
    others(b, &ur, &uw);
    if (ur > 0 && b->kr < 0 && b->kw < 0) { /* "in" */
        set_fd(&b->kr, kopen(b, O_RDONLY));
        b->kready = 0;
        b->off = b->len = 0;
    }
    if (ur <= 0 && b->kr >= 0) {
        close_k(&b->kr);
        close_s(&b->bw);
        b->kready = 0;
        b->off = b->len = 0;
    }
    if (ur <= 0 && uw > 0 && b->kr < 0 && b->kw < 0) { /* look for a kernel reader */
        long long now = ust_now_ns();
        if (now >= b->probe_at && !try_out(b)) {
            b->probe_at = now + b->probe_ms * 1000000LL;
            if (b->probe_ms < PROBE_MAX_MS)
                b->probe_ms *= 2;
        }
        if (b->kw < 0)
            timeout = (int)((b->probe_at - now) / 1000000LL) + 1;
    } else if (b->kw < 0) {
        b->probe_ms = 2;
        b->probe_at = 0;
    }
    return timeout;
}

/* exit: pass on what the STREAMS FIFO holds for the kernel readers. */
static void out_drain(struct ust_fifo_bridge *b)
{
    long long end = ust_now_ns() + BRIDGE_EXIT_MS * 1000000LL;
    ustreams_quiesce(BRIDGE_EXIT_MS / 5);
    while (b->kw >= 0 && ust_now_ns() < end) {
        if (b->off < b->len) {
            struct pollfd p = {.fd = b->kw, .events = POLLOUT};
            poll(&p, 1, 100);
            if (out_flush(b) < 0)
                break;
            continue;
        }
        struct pollfd p = {.fd = b->br, .events = POLLIN};
        if (strm_poll(&p, 1, 0) != 1 || out_take(b) < 0)
            break;
    }
    close_k(&b->kw);
}

/* The thread: mode_lock held but while it waits in strm_poll. */
static void *bridge_thread(void *arg)
{
    struct ust_fifo_bridge *b = arg;
    pthread_mutex_lock(&b->mode_lock);
    for (;;) {
        if (atomic_load(&exiting)) {
            out_drain(b);
            pthread_mutex_unlock(&b->mode_lock);
            atomic_store(&b->done, 1);
            return NULL;
        }
        int timeout = settle(b);
        struct pollfd p[4] = {{.fd = b->efd, .events = POLLIN}};
        int np = 1, ikr = -1, ibw = -1, ikw = -1, ibr = -1;
        if (b->kr >= 0) {
            if ((b->kready || b->len > 0) && b->bw >= 0)
                p[ibw = np++] = (struct pollfd){.fd = b->bw, .events = POLLOUT};
            else
                p[ikr = np++] = (struct pollfd){.fd = b->kr, .events = POLLIN};
        }
        if (b->kw >= 0) {
            p[ikw = np++] = (struct pollfd){.fd = b->kw, .events = b->off < b->len ? POLLOUT : 0};
            if (b->off >= b->len)
                p[ibr = np++] = (struct pollfd){.fd = b->br, .events = POLLIN};
        }
        /* Only this thread closes what it polls: the descriptors stay. */
        pthread_mutex_unlock(&b->mode_lock);
        int n = strm_poll(p, (nfds_t)np, timeout);
        pthread_mutex_lock(&b->mode_lock);
        if (n <= 0)
            continue; /* EINTR, or the time to look for a kernel reader */
        if (p[0].revents & POLLIN) {
            eventfd_t v;
            (void)!eventfd_read(b->efd, &v);
        }
        if (ikr >= 0 && (p[ikr].revents & POLLIN)) {
            if (b->bw < 0)
                set_fd(&b->bw, sopen(b, O_WRONLY)); /* a writer: reader opens end their wait */
            b->kready = b->bw >= 0;
        } else if (ikr >= 0 && (p[ikr].revents & (POLLHUP | POLLERR))) {
            in_hangup(b);
        }
        if (ibw >= 0 && (p[ibw].revents & (POLLOUT | POLLERR | POLLHUP)))
            in_move(b);
        if (ikw >= 0 && (p[ikw].revents & POLLERR)) {
            out_stop(b); /* the kernel readers are gone: EPIPE for ustreams writers */
            continue;
        }
        if (ikw >= 0 && (p[ikw].revents & POLLOUT) && out_flush(b) < 0) {
            out_stop(b);
            continue;
        }
        if (ibr >= 0 && (p[ibr].revents & (POLLIN | POLLHUP | POLLERR))) {
            int r = out_take(b);
            if (r > 0 && out_flush(b) < 0)
                out_stop(b);
            else if (r < 0)
                out_stop(b); /* no ustreams writer: the kernel readers' end of file */
        }
    }
}

/* At exit, the kernel readers would lose what "out" has not passed on yet:
 * every bridge drains (up to BRIDGE_EXIT_MS), then stops. */
static void bridge_exit(void)
{
    atomic_store(&exiting, 1);
    ust_lock(&bridge_lock);
    for (struct ust_fifo_bridge *b = bridges; b != NULL; b = b->next)
        (void)!eventfd_write(b->efd, 1);
    ust_unlock(&bridge_lock);
    for (int waited = 0; waited < BRIDGE_EXIT_MS + 1000; waited += 5) {
        int left = 0;
        ust_lock(&bridge_lock);
        for (struct ust_fifo_bridge *b = bridges; b != NULL; b = b->next)
            left |= !atomic_load(&b->done);
        ust_unlock(&bridge_lock);
        if (!left)
            return;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

static void bridge_exit_register(void)
{
    atexit(bridge_exit);
}

struct ust_fifo_bridge *ust_fifo_bridge_start(int node, dev_t dev, ino_t ino)
{
    struct ust_fifo_bridge *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->buf = malloc(IO_MAX);
    b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    b->node = node;
    b->dev = dev;
    b->ino = ino;
    b->kr = b->kw = b->bw = b->br = -1;
    b->probe_ms = 2;
    pthread_mutex_init(&b->mode_lock, NULL);
    pthread_t t;
    if (b->buf == NULL || b->efd < 0 || ust_fifo_key_watch(dev, ino, b->efd) != 0)
        goto fail;
    pthread_once(&exit_once, bridge_exit_register);
    ust_lock(&bridge_lock);
    b->next = bridges;
    bridges = b;
    ust_unlock(&bridge_lock);
    if (ust_thread_create(&t, NULL, bridge_thread, b) != 0) {
        /* The watch stays (it names an eventfd no one reads): the FIFO
         * works between ustreams processes only, as without a bridge. */
        atomic_store(&b->done, 1);
        return NULL;
    }
    pthread_detach(t);
    return b;
fail:
    if (b->efd >= 0)
        close(b->efd);
    free(b->buf);
    pthread_mutex_destroy(&b->mode_lock);
    free(b);
    return NULL;
}

void ust_fifo_bridge_fork_prepare(void)
{
    ust_lock(&bridge_lock);
}

void ust_fifo_bridge_fork_parent(void)
{
    ust_unlock(&bridge_lock);
}

/* The child has no bridge thread and owns no node: every descriptor of the
 * parent's bridges goes (a kernel end held here would count as a reader or
 * writer of the node for as long as the child lives). */
void ust_fifo_bridge_fork_child(void)
{
    struct ust_fifo_bridge *b = bridges;
    bridges = NULL;
    ust_lock_init(&bridge_lock);
    while (b != NULL) {
        struct ust_fifo_bridge *n = b->next;
        int kfds[3] = {b->kr, b->kw, b->efd}, sfds[2] = {b->bw, b->br};
        for (int i = 0; i < 3; i++)
            if (kfds[i] >= 0)
                close(kfds[i]);
        for (int i = 0; i < 2; i++) {
            if (sfds[i] < 0)
                continue;
            struct stdata *sd = ust_sd_peek(sfds[i]); /* the inherited head: not entered */
            if (sd != NULL)
                ust_sd_forget_fd(sfds[i], sd);
            close(sfds[i]);
        }
        free(b->buf);
        free(b);
        b = n;
    }
}
