/* SPDX-License-Identifier: MIT */
/*
 * sd_fifo.c -- STREAMS-based FIFOs inside one process: the stream, its open
 * rules, the process's keyed table (mkfifo nodes) and the device names of
 * the FIFO drivers fifo, sfx and pipe (/dev/streams/fifo/<N>...).
 *
 * Principles of operation
 *   The stream.  A FIFO is one stream head whose write side loops back into
 *   its own read side, as a Solaris FIFO: a pipe end (sd_pipe.c,
 *   ust_pipe_end_new) whose pipe pair's write queue is linked to the same
 *   pair's read queue -- the pipe's twist made onto itself:
 *       head wq -> [modules' wq] -> pipe wq -> pipe rq -> [modules' rq] -> head rq
 *   The pipe pair keeps its procedures off, so messages pass straight
 *   through it with their boundaries, bands and types; flow control looks
 *   through it to the head's read queue (or the nearest module with a
 *   service procedure on the way up), and a reader draining the head
 *   back-enables through it to the writers (backq follows the loop).  A
 *   module-free FIFO takes the pipes' short path (sd_arrive.c): a write is
 *   deposited straight at its own head.  Modules pushed sit between the head
 *   and the loop, so they see every message going down, then coming up.
 *   The stream is STRFIFO (not STRPIPE): I_ISASTREAM says I_FIFO; I_LIST and
 *   I_LOOK show the modules only; a write after the readers are gone fails
 *   EPIPE (SNDPIPE set: with SIGPIPE).  Teardown is a pipe end's (the loop is
 *   cut, the pair freed: ust_pipe_teardown).
 *
 *   M_FLUSH.  A FIFO has no driver to turn a flush around.  Flushing its
 *   write side means discarding what was written and not yet read, which in
 *   a FIFO waits on the read side.  So an M_FLUSH reaching the head from
 *   below with FLUSHW (it went down the write side, flushing the modules'
 *   write queues, and looped) flushes the head's read queue as FLUSHR does
 *   and goes down again as FLUSHR, marked MSGNOLOOP, to flush the modules'
 *   read queues on its second way up (sd_rput.c).  I_FLUSH FLUSHR empties
 *   the read side only; FLUSHW and FLUSHRW empty both.
 *
 *   Readers and writers.  Each descriptor of a FIFO is counted by its access
 *   mode (an O_RDWR one as both) in sd_ff, when its mode is set (every
 *   maker of a stream descriptor sets it: open, F_DUPFD, I_RECVFD) and
 *   uncounted when it leaves the descriptor table (strm_close; a descriptor
 *   closed with close(2) behind the library's back once the library notices
 *   it, see sd_fd.c) -- sd_access.c does both.  Each change is announced
 *   under sd_lock (ust_fifo_announce): readers, writers and openers asleep
 *   on this stream are woken to look again, and the readiness tokens move.
 *   What the counts decide: a read of an empty FIFO with no writer returns
 *   0; when a writer opens again reads block again (end of file is not
 *   sticky, unlike a pipe's hang-up).  A write (or putmsg) with no reader
 *   fails EPIPE.  poll: POLLHUP (with POLLIN) once a writer has been and
 *   none is left, POLLERR (with POLLOUT) while no reader has it open.
 *
 *   The keyed table maps (dev, ino) to the FIFO of this process; an entry
 *   is made by the first open and removed by the FIFO's teardown (its last
 *   close).  "/dev/streams/fifo/<N>" (and "sfx/<N>") is the key
 *   (FIFO_DEVKEY, N), a (dev, ino) no file system gives; "/dev/streams/fifo"
 *   and "/dev/fifo" are minor 0; a clone open makes a FIFO no key names.  An open that finds an entry whose stream has no reference left
 *   (its last close is on the way) takes the entry out and makes a new FIFO.
 *
 * Locking
 *   key_lock guards the keyed table and the watches.  Order: below sd_plumb (a teardown
 *   removes its entry under its sd_plumb), above sd_lock and everything
 *   below it: the first open of a key makes the stream and its descriptor
 *   under key_lock, so two first opens cannot make two FIFOs.  No sd_plumb
 *   is taken under it, and no one sleeps holding it.  The counts are
 *   sd_access.c's (its cnt_lock); the open waits sleep on sd_ff.ff_owait
 *   with sd_lock, which ust_sd_wait drops.  ust_fifo_announce takes
 *   key_lock after dropping sd_lock, to tell the watch of the FIFO's key.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "sthead.h"

#define FIFO_DEVKEY UINT64_MAX /* the (dev, ino) of /dev/streams/fifo: (this, 0) */

struct fifo_key {
    struct fifo_key *next;
    uint64_t dev, ino;
    struct stdata *sd; /* the FIFO; no reference (its teardown removes us) */
};

/* A watch: the eventfd to tell of every count change of the FIFO keyed
 * (dev, ino) -- the bridge to the kernel FIFO of a node this process owns
 * (src/procs/sd_fifo_bridge.c). */
struct fifo_watch {
    struct fifo_watch *next;
    uint64_t dev, ino;
    int efd;
};

static ust_lock_t key_lock = UST_LOCK_INIT; /* see Locking */
static struct fifo_key *keys;               /* key_lock */
static struct fifo_watch *watches;          /* key_lock */

int ust_sd_isfifo(const struct stdata *sd)
{
    return __atomic_load_n(&sd->sd_ff.ff_isfifo, __ATOMIC_ACQUIRE);
}

static int readers(const struct stdata *sd)
{
    return __atomic_load_n(&sd->sd_ff.ff_readers, __ATOMIC_SEQ_CST);
}

static int writers(const struct stdata *sd)
{
    return __atomic_load_n(&sd->sd_ff.ff_writers, __ATOMIC_SEQ_CST);
}

int ust_fifo_eof(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    return ust_sd_isfifo(sd) && writers(sd) == 0;
}

int ust_fifo_hup(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    return ust_sd_isfifo(sd) && writers(sd) == 0 &&
           __atomic_load_n(&sd->sd_ff.ff_wopens, __ATOMIC_SEQ_CST) != 0;
}

int ust_fifo_noreader(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    return ust_sd_isfifo(sd) && readers(sd) == 0;
}

void ust_fifo_announce(struct stdata *sd)
{
    if (ust_sd_forked(sd))
        return; /* the parent's stream: nothing to move in the child */
    ust_lock(&sd->sd_lock);
    if (sd->sd_rq != NULL && !(sd->sd_flag & STRCLOSE)) {
        ust_sd_rready(sd); /* readable once a writer has been and gone */
        if (readers(sd) == 0)
            ust_sd_ready_write(sd, 1); /* a write fails at once: not blocked */
    }
    ust_sd_wake(&sd->sd_rwait);
    ust_sd_wake(&sd->sd_wwait);
    ust_sd_wake(&sd->sd_ff.ff_owait);
    ust_unlock(&sd->sd_lock);
    /* The bridge of a node we own looks at the counts again (a leaf write
     * to an eventfd; key_lock is taken with no head lock held). */
    ust_lock(&key_lock);
    for (struct fifo_key *k = keys; watches != NULL && k != NULL; k = k->next) {
        if (k->sd != sd)
            continue;
        for (struct fifo_watch *w = watches; w != NULL; w = w->next)
            if (w->dev == k->dev && w->ino == k->ino)
                (void)!eventfd_write(w->efd, 1);
        break;
    }
    ust_unlock(&key_lock);
}

/* ------------------------------------------------------------------------ */
/* Making a FIFO                                                            */
/* ------------------------------------------------------------------------ */

/* A new FIFO without a descriptor: a pipe end looped onto itself.  The
 * stream's O_NONBLOCK is oflag's.  NULL when out of memory. */
static struct stdata *fifo_new(const cred_t *cr, int oflag, const char *name)
{
    queue_t *drv;
    struct stdata *sd = ust_pipe_end_new(cr, &drv);
    if (sd == NULL)
        return NULL;
    ust_lock(&sd->sd_lock);
    sd->sd_flag = (sd->sd_flag & ~STRPIPE) | STRFIFO;
    sd->sd_oflag = O_RDWR | (oflag & (O_NONBLOCK | O_NDELAY));
    strncpy(sd->sd_name, name, sizeof(sd->sd_name) - 1);
    sd->sd_name[sizeof(sd->sd_name) - 1] = '\0';
    ust_unlock(&sd->sd_lock);
    __atomic_store_n(&sd->sd_ff.ff_isfifo, 1, __ATOMIC_RELEASE);
    ust_pipe_qlink(WR(drv), drv); /* the loop: the twist onto itself */
    return sd;
}

/* Close descriptor fd of sd again (an open that failed after making it). */
static void drop(int fd, struct stdata *sd)
{
    ust_sd_tab_lock();
    int left = ust_sd_detach_fd(fd, sd);
    ust_sd_tab_unlock();
    if (left == 0)
        ust_sd_teardown(sd);
}

/* A new FIFO with its first descriptor in *fdp: the stream, or NULL with
 * *fdp the -errno and in *dead a stream the caller must tear down (with no
 * lock held: it has no reference, the teardown is the caller's). */
static struct stdata *fifo_make(const cred_t *cr, int oflag, const char *name, int *fdp,
                                struct stdata **dead)
{
    struct stdata *sd = fifo_new(cr, oflag, name);
    *dead = NULL;
    if (sd == NULL) {
        *fdp = -ENOSR;
        return NULL;
    }
    *fdp = ust_sd_attach_fd(sd);
    if (*fdp < 0) {
        *dead = sd;
        return NULL;
    }
    return sd;
}

/* Has the other end of the socket watch hung up (an open made on behalf of
 * another process that has gone)?  A poll that does not wait. */
static int watch_gone(int watch)
{
    struct pollfd pf = {.fd = watch, .events = POLLRDHUP};
    return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/*
 * open_wait -- the open rule of a blocking open: a reader (acc
 *   UST_ACC_NOWRITE) waits until a writer has opened since its open began
 *   (ff_wopens moved from w0) or one is open, a writer likewise for readers.
 *   watch: -1, or a connected socket whose peer asked for the open
 *   (sd_rdv.c): looked at every OPEN_WATCH_MS, the wait ends ECONNABORTED
 *   once it has hung up.
 *   Context: no lock held; sleeps on ff_owait.  0, EINTR or ECONNABORTED.
 */
#define OPEN_WATCH_MS 200
static int open_wait(struct stdata *sd, int acc, unsigned r0, unsigned w0, int watch)
{
    struct ust_fifo_state *ff = &sd->sd_ff;
    long long next = watch < 0 ? 0 : ust_now_ns() + OPEN_WATCH_MS * 1000000LL;
    int err = 0;

    ust_lock(&sd->sd_lock);
    for (;;) {
        unsigned seq = ust_sd_wait_seq(&ff->ff_owait); /* before the test */
        if (acc == UST_ACC_NOWRITE &&
            (writers(sd) > 0 || __atomic_load_n(&ff->ff_wopens, __ATOMIC_SEQ_CST) != w0))
            break;
        if (acc == UST_ACC_NOREAD &&
            (readers(sd) > 0 || __atomic_load_n(&ff->ff_ropens, __ATOMIC_SEQ_CST) != r0))
            break;
        err = ust_sd_wait_from(sd, &ff->ff_owait, seq, next);
        if (err == EINTR)
            break;
        if (watch >= 0 && watch_gone(watch)) { /* after every wake-up too */
            err = ECONNABORTED;
            break;
        }
        if (err == ETIME)
            next = ust_now_ns() + OPEN_WATCH_MS * 1000000LL;
        err = 0;
    }
    ust_unlock(&sd->sd_lock);
    return err;
}

/* The rest of every open once fd is a descriptor of sd: close-on-exec as
 * asked, the mode set (which counts it and wakes the other side), the wait
 * of a blocking open.  fd or -errno (fd closed again).
 *
 * A blocking open that finds the other side open as it is counted does not
 * wait (open(2) of a FIFO).  That is looked at just before the count, not
 * in open_wait after it: the count wakes an opener of the other side that
 * was blocked waiting for this one, and that opener may write (or read)
 * and close before open_wait looks -- its own open counted before r0/w0
 * were read, so nothing open_wait tests would have moved, and this open
 * would wait for a partner it has already released (a writer that wrote
 * and left; across processes, an owner that then exits with the data). */
static int open_finish(struct stdata *sd, int fd, int oflag, int block, unsigned r0, unsigned w0,
                       int watch)
{
    int acc = ust_sd_acc_of_oflag(oflag);
    int met = acc == UST_ACC_NOWRITE ? writers(sd) > 0
              : acc == UST_ACC_NOREAD ? readers(sd) > 0
                                      : 1;
    fcntl(fd, F_SETFD, (oflag & O_CLOEXEC) ? FD_CLOEXEC : 0);
    int err = ust_sd_acc_set(fd, acc);
    if (err == 0 && block && !met)
        err = open_wait(sd, acc, r0, w0, watch);
    if (err != 0) {
        drop(fd, sd);
        return -err;
    }
    return fd;
}

static struct fifo_key *key_find(uint64_t dev, uint64_t ino)
{
    UST_ASSERT_HELD(&key_lock);
    for (struct fifo_key *k = keys; k != NULL; k = k->next)
        if (k->dev == dev && k->ino == ino)
            return k;
    return NULL;
}

static void key_remove(struct fifo_key *k)
{
    UST_ASSERT_HELD(&key_lock);
    for (struct fifo_key **kp = &keys; *kp != NULL; kp = &(*kp)->next)
        if (*kp == k) {
            *kp = k->next;
            free(k);
            return;
        }
}

/* Open the FIFO of key (dev, ino), making it on the first open: fd or
 * -errno. */
static int open_key(uint64_t dev, uint64_t ino, int oflag, const cred_t *cr, const char *name,
                    int watch)
{
    int wronly_nb = (oflag & O_ACCMODE) == O_WRONLY && (oflag & (O_NONBLOCK | O_NDELAY));
    int block = !(oflag & (O_NONBLOCK | O_NDELAY));
    struct stdata *sd;
    unsigned r0 = 0, w0 = 0;
    int fd;

    ust_lock(&key_lock);
    struct fifo_key *k = key_find(dev, ino);
    if (k != NULL && !ust_sd_hold_live(k->sd)) {
        key_remove(k); /* its last close is on the way: a new FIFO */
        k = NULL;
    }
    if (k != NULL) {
        sd = k->sd;
        ust_unlock(&key_lock);
        r0 = __atomic_load_n(&sd->sd_ff.ff_ropens, __ATOMIC_SEQ_CST);
        w0 = __atomic_load_n(&sd->sd_ff.ff_wopens, __ATOMIC_SEQ_CST);
        if (wronly_nb && readers(sd) == 0) {
            ust_sd_rele(sd);
            return -ENXIO;
        }
        fd = ust_sd_dup_fd(sd);
        ust_sd_rele(sd); /* the lookup's reference: the descriptor keeps sd */
        if (fd < 0)
            return fd;
        int err = ust_sd_reopen(sd, oflag, (cred_t *)cr);
        if (err != 0) {
            drop(fd, sd);
            return -err;
        }
        return open_finish(sd, fd, oflag, block, r0, w0, watch);
    }
    if (wronly_nb) {
        ust_unlock(&key_lock);
        return -ENXIO; /* a new FIFO has no reader */
    }
    k = calloc(1, sizeof(*k));
    if (k == NULL) {
        ust_unlock(&key_lock);
        return -ENOSR;
    }
    struct stdata *dead;
    sd = fifo_make(cr, oflag, name, &fd, &dead);
    if (sd == NULL) {
        ust_unlock(&key_lock);
        free(k);
        if (dead != NULL)
            ust_sd_teardown(dead);
        return fd;
    }
    k->dev = dev;
    k->ino = ino;
    k->sd = sd;
    k->next = keys;
    keys = k;
    ust_unlock(&key_lock);
    ust_sd_register(sd);
    return open_finish(sd, fd, oflag, block, 0, 0, watch);
}

static int open_common(uint64_t dev, uint64_t ino, int clone, int oflag, const cred_t *cr,
                       const char *name, int watch)
{
    cred_t me;
    if ((oflag & O_ACCMODE) == O_ACCMODE)
        return -EINVAL;
    if (cr == NULL) {
        ust_sd_cred(&me);
        cr = &me;
    }
    ust_ucopy_check(); /* as every open: our SIGSEGV handler in front */
    if (!clone)
        return open_key(dev, ino, oflag, cr, name, watch);
    /* A clone open: nobody else can reach the new FIFO while this open would
     * wait, so it never waits: the rules of O_NONBLOCK. */
    if ((oflag & O_ACCMODE) == O_WRONLY)
        return -ENXIO;
    int fd;
    struct stdata *dead, *sd = fifo_make(cr, oflag, name, &fd, &dead);
    if (sd == NULL) {
        if (dead != NULL)
            ust_sd_teardown(dead);
        return fd;
    }
    ust_sd_register(sd);
    return open_finish(sd, fd, oflag, 0, 0, 0, -1);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                             */
/* ------------------------------------------------------------------------ */

int ust_fifo_open_key(uint64_t dev, uint64_t ino, int oflag, const cred_t *cr)
{
    return ust_fifo_open_key_for(dev, ino, oflag, cr, -1);
}

int ust_fifo_open_key_for(uint64_t dev, uint64_t ino, int oflag, const cred_t *cr, int watch)
{
    char name[64];
    ust_call_begin();
    ust_sd_reap_orphans(); /* as strm_open: streams closed behind our back */
    snprintf(name, sizeof(name), "fifo:%llu:%llu", (unsigned long long)dev,
             (unsigned long long)ino);
    int r = open_common(dev, ino, 0, oflag, cr, name, watch);
    ust_call_end();
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}

/* The FIFO drivers' names (docs/ADMIN.md, "Device names").  "fifo" and
 * "sfx" are two names of one device, as in Linux Fast-STREAMS' sfx(4):
 * minor N (0 .. FIFO_NMINOR-1) is the FIFO keyed (FIFO_DEVKEY, N), shared
 * by every open of fifo/N and sfx/N ("/dev/streams/fifo" is minor 0); a
 * clone open makes a FIFO no key names.  "pipe" (spx(4)) is a clone device:
 * every open is a new stream that loops back onto itself until closed
 * (what is written is read back, as Fast-STREAMS' pipe device when first
 * opened); the minor is not looked at. */
#define FIFO_NMINOR 256

int ust_fifo_is_driver(const char *drv)
{
    return strcmp(drv, "fifo") == 0 || strcmp(drv, "sfx") == 0 || strcmp(drv, "pipe") == 0;
}

int ust_fifo_open_dev(const char *drv, minor_t minor, int clone, const char *path, int oflag,
                      cred_t *cr)
{
    int r;
    if (strcmp(drv, "pipe") == 0)
        clone = 1;
    if (oflag & O_DIRECTORY)
        r = -ENOTDIR;
    else if ((oflag & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
        r = -EEXIST;
    else if (!clone && minor >= FIFO_NMINOR)
        r = -ENXIO;
    else
        r = open_common(FIFO_DEVKEY, clone ? 0 : minor, clone, oflag, cr, path, -1);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}

int ust_fifo_counts(int fd, int *rd, int *wr)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (sd == NULL) {
        errno = err;
        return -1;
    }
    int r = -1;
    if (!ust_sd_isfifo(sd)) {
        errno = EINVAL;
    } else {
        if (rd != NULL)
            *rd = readers(sd);
        if (wr != NULL)
            *wr = writers(sd);
        r = 0;
    }
    ust_sd_put(sd);
    return r;
}

int ust_fifo_key_watch(uint64_t dev, uint64_t ino, int efd)
{
    struct fifo_watch *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return ENOMEM;
    w->dev = dev;
    w->ino = ino;
    w->efd = efd;
    ust_lock(&key_lock);
    w->next = watches;
    watches = w;
    ust_unlock(&key_lock);
    return 0;
}

int ust_fifo_key_counts(uint64_t dev, uint64_t ino, int *rd, int *wr)
{
    int found = 0;
    *rd = *wr = 0;
    ust_lock(&key_lock);
    struct fifo_key *k = key_find(dev, ino);
    if (k != NULL) {
        *rd = readers(k->sd);
        *wr = writers(k->sd);
        found = 1;
    }
    ust_unlock(&key_lock);
    return found;
}

void ust_fifo_teardown(struct stdata *sd)
{
    ust_lock(&key_lock);
    for (struct fifo_key *k = keys; k != NULL; k = k->next)
        if (k->sd == sd) {
            key_remove(k);
            break;
        }
    ust_unlock(&key_lock);
}

void ust_fifo_fork_child(void)
{
    /* The entries name the parent's FIFOs (detached here); a holder of
     * key_lock may have been frozen by the fork. */
    ust_lock_init(&key_lock);
    for (struct fifo_key *k = keys, *n; k != NULL; k = n) {
        n = k->next;
        free(k);
    }
    keys = NULL;
    for (struct fifo_watch *w = watches, *n; w != NULL; w = n) {
        n = w->next; /* its eventfd is the bridge's, closed by its child hook */
        free(w);
    }
    watches = NULL;
    ust_sd_acc_fork_child();
}
