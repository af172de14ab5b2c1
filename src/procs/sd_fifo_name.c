/* SPDX-License-Identifier: MIT */
/*
 * sd_fifo_name.c -- named FIFOs: a node made with mkfifo(3), opened with
 * strm_open by any process, is one STREAMS FIFO.
 *
 * Principles of operation
 *   The FIFO stream lives in one process, its *owner*: the first process
 *   that opens the name.  It makes the rendezvous of the node's identity
 *   (sd_rdv.c, kind UST_RDV_FIFO) and keeps it while it lives; opens in the
 *   owner reach the FIFO of its own table directly (ust_fifo_open_key,
 *   sd_fifo.c), which follows the FIFO open rules (an O_RDONLY open waits
 *   for a writer, O_WRONLY for a reader, O_WRONLY | O_NONBLOCK without a
 *   reader fails ENXIO).  An open in another process connects to the owner;
 *   the owner opens its FIFO on the client's behalf with the client's flags
 *   (in the connection's own thread, so waiting there holds up nothing
 *   else), and joins that descriptor to a new pipe between the processes
 *   with a relay (sd_relay.c) that carries only what the client's mode
 *   allows.  The relay's descriptor counts as the client's reader or
 *   writer, so the open rules, end of file and EPIPE see every process.
 *
 *   Programs that do not run the library open the node's kernel FIFO; the
 *   owner's bridge (sd_fifo_bridge.c) joins it to the STREAMS FIFO.
 *
 *   When every descriptor of the FIFO is closed the owner's FIFO goes with
 *   its data (as a kernel FIFO's data does), and the next open makes a new
 *   one, in the owner still.  When the owner exits, the others' descriptors
 *   see a hang-up, and the next open makes a new owner.
 *
 * Locking
 *   fifo_lock guards the table of names this process owns; taken before
 *   rdv_lock (the rendezvous is made under it, so that a client accepted
 *   finds the entry), quiesced at fork (rank UST_FORK_HEAD_FATTACH, before
 *   rdv_lock's).  In a fork child the table starts empty: the names are
 *   the parent's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sd_fifo.h"
#include "sd_names.h"
#include "sd_rdv.h"
#include "sthead.h"

#define OWN_TRIES 8        /* races with other processes becoming the owner */
#define OWN_TRIES_BLOCK 80 /* a blocking open's: about 5 s of 64 ms waits (a loaded machine) */

struct owned {
    struct owned *next;
    dev_t dev;
    ino_t ino;
    int lfd;
    int node; /* O_PATH descriptor of the node: its owner and mode now */
    struct ust_fifo_bridge *bridge; /* fifo_lock; to the kernel FIFO (NULL: none) */
};

static ust_lock_t fifo_lock = UST_LOCK_INIT; /* guards `owned`; leaf */
static struct owned *owned;                  /* fifo_lock; entries live until exit */

static struct owned *owned_find(dev_t dev, ino_t ino)
{
    UST_ASSERT_HELD(&fifo_lock);
    struct owned *o = owned;
    while (o != NULL && !(o->dev == dev && o->ino == ino))
        o = o->next;
    return o;
}

/* An O_WRONLY | O_NONBLOCK open fails ENXIO without a reader: a program
 * reading the kernel FIFO is one (sd_fifo_bridge.c looks for it now). */
static void probe(struct owned *o, int oflag)
{
    if ((oflag & O_ACCMODE) != O_WRONLY || !(oflag & (O_NONBLOCK | O_NDELAY)))
        return;
    ust_lock(&fifo_lock);
    struct ust_fifo_bridge *b = o->bridge;
    ust_unlock(&fifo_lock);
    ust_fifo_bridge_probe(b);
}

/* This process's FIFO of the node: its descriptor or -errno. */
static int open_key(struct owned *o, const struct stat *st, int oflag, cred_t *cr)
{
    probe(o, oflag);
    int fd = ust_fifo_open_key(st->st_dev, st->st_ino, oflag, cr);
    return fd >= 0 ? fd : -errno;
}

/* May this process own the FIFO st (read and write it by its mode, as the
 * clients check it: sd_rdv_client.c ust_rdv_entitled)? */
static int may_own(const struct stat *st)
{
    gid_t g[RDV_MAXGROUPS + 1];
    int ng = getgroups(RDV_MAXGROUPS, g);
    if (ng < 0)
        ng = 0;
    g[ng++] = getegid();
    return ust_rdv_entitled(UST_RDV_FIFO, st, geteuid(), g, ng);
}

int ust_fifo_open_node(const char *path, const struct stat *st, int oflag, cred_t *cr)
{
    int tries = (oflag & (O_NONBLOCK | O_NDELAY)) ? OWN_TRIES : OWN_TRIES_BLOCK;
    for (int i = 0; i < tries; i++) {
        ust_lock(&fifo_lock);
        struct owned *o = owned_find(st->st_dev, st->st_ino);
        ust_unlock(&fifo_lock);
        if (o != NULL)
            return open_key(o, st, oflag, cr);
        int fd = ust_rdv_open(UST_RDV_FIFO, path, st, oflag, cr);
        if (fd != -ENOENT)
            return fd;
        if (!may_own(st)) {
            /* Nobody owns it, and we may not: a process that can read and
             * write it will.  Until then there is no other side: a
             * non-blocking open fails, a blocking one waits for an owner. */
            if (oflag & (O_NONBLOCK | O_NDELAY))
                return (oflag & O_ACCMODE) == O_WRONLY ? -ENXIO : -EAGAIN;
            struct timespec ts = {0, 20000000};
            if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
                return -EINTR; /* a signal ends the wait, as it ends a FIFO's open(2) */
            i = -1; /* the wait of a FIFO open: as long as it takes */
            continue;
        }
        /* Nobody owns it: this process becomes the owner.  The entry is in
         * the table before the rendezvous listens (both under fifo_lock),
         * so that every client it accepts finds the FIFO. */
        o = calloc(1, sizeof(*o));
        if (o == NULL)
            return -ENOMEM;
        o->dev = st->st_dev;
        o->ino = st->st_ino;
        o->node = open(path, O_PATH | O_CLOEXEC);
        struct stat ns;
        int err = o->node < 0 ? errno : 0;
        if (err == 0 && (fstat(o->node, &ns) != 0 || ns.st_dev != st->st_dev ||
                         ns.st_ino != st->st_ino))
            err = ENOENT; /* the path names another node now */
        ust_lock(&fifo_lock);
        if (err == 0 && owned_find(st->st_dev, st->st_ino) != NULL)
            err = EEXIST; /* another thread of ours was quicker */
        if (err == 0)
            err = ust_rdv_listen(UST_RDV_FIFO, o->node, &o->lfd);
        if (err == 0) {
            o->next = owned;
            owned = o;
        }
        ust_unlock(&fifo_lock);
        if (err == 0) {
            /* The bridge to the kernel FIFO (programs without the library):
             * without one (no memory, no thread) the FIFO still works
             * between ustreams processes. */
            struct ust_fifo_bridge *b = ust_fifo_bridge_start(o->node, o->dev, o->ino);
            ust_lock(&fifo_lock);
            o->bridge = b;
            ust_unlock(&fifo_lock);
            return open_key(o, st, oflag, cr);
        }
        if (o->node >= 0)
            close(o->node);
        free(o);
        if (err != EEXIST && err != EBUSY)
            return -err;
        /* EBUSY: another process became the owner meanwhile (or two of us
         * gave way to each other); it may not have its table entry yet: ask
         * again after a moment, jittered so that racers part. */
        unsigned jitter = 0;
        (void)!getrandom(&jitter, sizeof(jitter), 0);
        struct timespec ts = {0, (1000000L << (i < 6 ? i : 6)) + (long)(jitter % 1000000u)};
        if (nanosleep(&ts, NULL) != 0 && errno == EINTR && !(oflag & (O_NONBLOCK | O_NDELAY)))
            return -EINTR; /* a signal ends a blocking open's wait, as open(2)'s */
    }
    return -EAGAIN;
}

int ust_fifo_serve(int conn, int node, dev_t dev, ino_t ino, int oflag)
{
    ust_lock(&fifo_lock);
    struct owned *o = owned_find(dev, ino);
    ust_unlock(&fifo_lock);
    if (o == NULL)
        return ENOENT;
    cred_t cr;
    ust_sd_cred(&cr);
    probe(o, oflag);
    /* A blocking open waits here; it ends when the client hangs up. */
    int sfd = ust_fifo_open_key_for(dev, ino, oflag & (O_ACCMODE | O_NONBLOCK | O_NDELAY), &cr,
                                    conn);
    if (sfd < 0)
        return errno;
    return ust_rdv_serve_relay(conn, node, sfd, oflag);
}

/* fork: fifo_lock is quiesced; the child forgets the parent's names (their
 * rendezvous sockets are closed by sd_rdv.c's child hook). */
void ust_fifo_name_fork_prepare(void)
{
    ust_lock(&fifo_lock);
    ust_fifo_bridge_fork_prepare();
}

void ust_fifo_name_fork_parent(void)
{
    ust_fifo_bridge_fork_parent();
    ust_unlock(&fifo_lock);
}

void ust_fifo_name_fork_child(void)
{
    ust_fifo_bridge_fork_child(); /* its kernel ends and descriptors go */
    for (struct owned *o = owned, *n; o != NULL; o = n) {
        n = o->next;
        close(o->node);
        free(o);
    }
    owned = NULL;
    ust_lock_init(&fifo_lock);
}
