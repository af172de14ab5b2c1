/* SPDX-License-Identifier: MIT */
/*
 * sd_relay.c -- relays: a stream of this process served to another process.
 *
 * Principles of operation
 *   A stream lives in the process that made it; another process reaches it
 *   through a pipe between the two processes (sd_xpipe.c) whose near end is
 *   joined to the stream here by a relay.  The relay is two library threads,
 *   one per direction, each a reader of one descriptor and a writer of the
 *   other: "down" takes what the far process writes (from the pipe end) and
 *   puts it on the stream, "up" takes what the stream has for its readers
 *   and writes it to the pipe end.  They use the stream interface itself
 *   (getpmsg/putpmsg with control and data parts and bands), so boundaries,
 *   bands and flow control carry over: a put blocks while the other side is
 *   full, which stops the reading of the source in turn.  A relay for a
 *   reader only (a FIFO opened O_RDONLY elsewhere) has just "up", one for a
 *   writer only just "down".
 *
 *   Each thread waits for its source with strm_poll, watching the pipe end
 *   for its hang-up too, and wakes every RELAY_TICK_MS to look at the
 *   relay's `stop`, so that it never sits in a read that nothing would
 *   end.  The first to see the far process gone (the pipe end hung up), the
 *   stream hung up or in error, or a put fail, sets `stop`; the last of the
 *   two to leave closes both descriptors and frees the relay.
 *
 *   Cost and limits: two threads and one more hop per relayed open; a
 *   message the up thread has taken when the far reader vanishes is lost
 *   with it (as what was left in the ring is).  M_PASSFP is not relayed.
 *
 *   exit: the far processes would lose what a relay holds; relay_exit
 *   (atexit) gives the "up" threads up to RELAY_EXIT_MS to pass on what the
 *   stream has for them (a writer that owns a named FIFO and exits right
 *   after its last write loses nothing).
 *
 *   fork: the relays' threads stay in the parent.  The child closes the
 *   relays' descriptors it inherited (ust_relay_fork_child), so that it
 *   holds none of the far process's pipe ends.
 *
 * Locking
 *   relay_lock guards the list of relays (`relays`) and each relay's
 *   `threads`; a leaf, quiesced at fork (rank UST_FORK_RDV).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdlib.h>
#include <stropts.h>
#include <unistd.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "forksafe.h"
#include "sd_names.h"
#include "sd_xpipe.h"
#include "sthead.h"

#define RELAY_TICK_MS 200
#define RELAY_EXIT_MS 5000
#define RELAY_BUF (128 * 1024 + 4096) /* the largest split-pipe message, control included */

struct relay {
    struct relay *next, **prev; /* relay_lock */
    int sfd;                    /* the stream's descriptor */
    int pfd;                    /* the pipe end towards the far process */
    atomic_int stop;
    int threads;                /* relay_lock: running */
    int closing;                /* relay_lock: its descriptors are being closed */
};

static ust_lock_t relay_lock = UST_LOCK_INIT; /* guards `relays`, threads; leaf */
static struct relay *relays;                  /* relay_lock */
static atomic_int exiting;                    /* exit() has begun: relay_exit */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* At exit the far processes would lose what a relay has not passed on yet:
 * up to RELAY_EXIT_MS, the "up" threads finish moving what the stream has
 * for the far readers (then stop at the first moment it has none, closing
 * their pipe end, which waits for its backlog), "down" threads stop at once. */
static void relay_exit(void)
{
    ust_rdv_settle(RELAY_EXIT_MS); /* opens being served become relays first */
    ust_lock(&relay_lock);
    int any = relays != NULL;
    ust_unlock(&relay_lock);
    if (!any)
        return;
    /* What is on its way up the streams (service procedures scheduled,
     * modules' queues) arrives first, so that "nothing to read" means it. */
    ustreams_quiesce(RELAY_EXIT_MS / 5);
    atomic_store(&exiting, 1);
    for (int waited = 0; waited < RELAY_EXIT_MS; waited += 5) {
        ust_lock(&relay_lock);
        int left = relays != NULL;
        ust_unlock(&relay_lock);
        if (!left)
            return;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

static void relay_exit_register(void)
{
    atexit(relay_exit);
}

void ust_relay_exit_register(void)
{
    pthread_once(&exit_once, relay_exit_register);
}

static void relay_leave(struct relay *r)
{
    int last;
    ust_lock(&relay_lock);
    last = --r->threads == 0;
    r->closing = last;
    ust_unlock(&relay_lock);
    if (!last)
        return;
    /* Closed before the relay leaves the list: the pipe end's close waits
     * for what is still on its way to the far process, and relay_exit waits
     * for the list to empty. */
    strm_close(r->pfd);
    strm_close(r->sfd);
    ust_lock(&relay_lock);
    *r->prev = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    ust_unlock(&relay_lock);
    free(r);
}

/* Wait until src has a message; 1: go, 0: stop.  The pipe end's hang-up
 * (the far process gone) stops both directions. */
static int relay_wait(struct relay *r, int src)
{
    while (!atomic_load(&r->stop)) {
        struct pollfd p[2] = {{.fd = src, .events = POLLIN | POLLRDBAND | POLLPRI},
                              {.fd = r->pfd, .events = 0}};
        int ex = atomic_load(&exiting);
        if (ex && src == r->pfd)
            return 0; /* down: nothing more goes into a stream about to vanish */
        int n = strm_poll(p, src == r->pfd ? 1 : 2, ex ? 0 : RELAY_TICK_MS);
        if (n < 0 && errno != EINTR)
            return 0;
        if (n == 0 && ex) {
            /* Up, exiting: nothing at the head now -- but what waits below
             * it (flow-controlled queues, back-enabled service procedures
             * not run yet) comes up once they run: stop only when the head
             * is still empty after they have. */
            if (ustreams_quiesce(RELAY_TICK_MS) == 0 && strm_poll(p, 1, 0) == 0)
                return 0;
            continue;
        }
        if (n <= 0)
            continue;
        if (p[0].revents & (POLLIN | POLLRDBAND | POLLPRI))
            return 1;
        if ((p[0].revents | p[1].revents) & (POLLHUP | POLLERR | POLLNVAL))
            return 0;
    }
    return 0;
}

/* Move messages from src to dst until told to stop or one side fails. */
static void relay_run(struct relay *r, int src, int dst)
{
    char *buf = malloc(RELAY_BUF);
    if (buf == NULL) {
        atomic_store(&r->stop, 1);
        return;
    }
    while (relay_wait(r, src)) {
        struct strbuf ctl = {.maxlen = 4096, .buf = buf};
        struct strbuf dat = {.maxlen = RELAY_BUF - 4096, .buf = buf + 4096};
        int band = 0, flags = MSG_ANY;
        int rc = getpmsg(src, &ctl, &dat, &band, &flags);
        if (rc < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            break;
        }
        if (ctl.len <= 0 && dat.len < 0)
            continue; /* nothing (a message of no parts) */
        if (rc != 0) /* larger than any message a relay passes: cannot be */
            break;
        if (ctl.len == 0 && dat.len == 0) { /* end of file (or an empty message): */
            struct pollfd p = {.fd = src, .events = 0};
            if (strm_poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
                break; /* hung up: the far side learns it from our close */
        }
        int pf = (flags & MSG_HIPRI) ? MSG_HIPRI : MSG_BAND;
        if (putpmsg(dst, ctl.len >= 0 ? &ctl : NULL, dat.len >= 0 ? &dat : NULL,
                    pf == MSG_HIPRI ? 0 : band, pf) != 0)
            break; /* the destination hung up or failed: nothing more goes */
    }
    free(buf);
    atomic_store(&r->stop, 1);
}

struct relay_arg {
    struct relay *r;
    int up; /* 1: stream -> pipe end; 0: pipe end -> stream */
};

static void *relay_thread(void *arg)
{
    struct relay_arg a = *(struct relay_arg *)arg;
    free(arg);
    if (a.up)
        relay_run(a.r, a.r->sfd, a.r->pfd);
    else
        relay_run(a.r, a.r->pfd, a.r->sfd);
    relay_leave(a.r);
    return NULL;
}

int ust_relay_start(int sfd, int pfd, int up, int down)
{
    struct relay *r = calloc(1, sizeof(*r));
    int err = 0;

    if (r == NULL)
        return ENOMEM;
    ust_relay_exit_register();
    r->sfd = sfd;
    r->pfd = pfd;
    ust_lock(&relay_lock);
    r->threads = 1; /* ours, until both are started */
    r->next = relays;
    r->prev = &relays;
    if (relays != NULL)
        relays->prev = &r->next;
    relays = r;
    ust_unlock(&relay_lock);
    for (int i = 0; i < 2 && err == 0; i++) {
        if (!(i == 0 ? up : down))
            continue;
        struct relay_arg *a = malloc(sizeof(*a));
        pthread_t t;
        if (a == NULL) {
            err = ENOMEM;
            break;
        }
        a->r = r;
        a->up = i == 0;
        ust_lock(&relay_lock);
        r->threads++;
        ust_unlock(&relay_lock);
        err = ust_thread_create(&t, NULL, relay_thread, a);
        if (err != 0) {
            free(a);
            ust_lock(&relay_lock);
            r->threads--;
            ust_unlock(&relay_lock);
        } else {
            pthread_detach(t);
        }
    }
    if (err != 0)
        atomic_store(&r->stop, 1);
    relay_leave(r); /* closes both when no thread started */
    return err;
}

void ust_relay_fork_prepare(void)
{
    ust_lock(&relay_lock);
}

void ust_relay_fork_parent(void)
{
    ust_unlock(&relay_lock);
}

/* Runs before the split ends are rebuilt (ust_xpipe_fork_child): the
 * relays' descriptors leave the child's table, so their pipe ends are not
 * rebuilt and their bells are closed with the other unheld ones. */
void ust_relay_fork_child(void)
{
    struct relay *r = relays;
    relays = NULL;
    ust_lock_init(&relay_lock);
    while (r != NULL) {
        struct relay *n = r->next;
        int fds[2] = {r->sfd, r->pfd};
        for (int i = 0; i < 2 && !r->closing; i++) { /* closing: maybe closed, maybe reused */
            struct stdata *sd = ust_sd_peek(fds[i]); /* the inherited head: not entered */
            if (sd != NULL)
                ust_sd_forget_fd(fds[i], sd);
            close(fds[i]);
        }
        free(r);
        r = n;
    }
}
