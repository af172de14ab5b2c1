/* SPDX-License-Identifier: MIT */
/*
 * sd_open.c -- opening streams (name resolution, sharing); the table of
 * streams and the share table.  Pushing and popping modules are in
 * sd_plumb.c, close and teardown in sd_close.c, fcntl and isastream in
 * sd_fcntl.c.
 *
 * Principles of operation
 *   Names (the table is in docs/ADMIN.md, "Device names").
 *   "/dev/streams/<driver>" opens minor 0 of a driver (DRVOPEN), or a new
 *   minor when the driver is D_CLONE (CLONEOPEN); "/dev/streams/<driver>/<N>"
 *   (N decimal, as Linux Fast-STREAMS names its minor devices) opens minor N
 *   the same way; "/dev/streams/clone/<driver>" always clone-opens.
 *   "/dev/<driver>" (one component, a registered driver, e.g. "/dev/ticots")
 *   opens as "/dev/streams/<driver>" does.  N above L_MAXMIN fails ENXIO
 *   here; a minor the driver does not serve fails with its open's error
 *   (ENXIO).  The FIFO drivers (fifo, sfx, pipe) are opened by sd_fifo.c.
 *   Any other name is a path in the file system (sd_names.c): a file
 *   covered by fattach, a FIFO, or a plain file.
 *
 *   Sharing.  As in SVR4, a second non-clone open of a device that is already
 *   open does not build a new stream: the open routines of every module and of
 *   the driver are called again on the existing queues ("reopen") and the new
 *   descriptor refers to the same stream.  A clone open enters the device it
 *   made (the minor the driver chose) too, so "/dev/streams/<driver>/<N>"
 *   reaches a stream a clone open made with minor N, as SVR4's open of an
 *   existing minor does.  The share table maps (driver, device) to the
 *   stream; an entry is OPENING while the first open runs,
 *   OPEN afterwards, CLOSING while the last close dismantles the stream.  An
 *   opener that finds an entry OPENING or CLOSING waits for it to settle, so a
 *   device is never opened twice in parallel nor reopened half-closed.
 *
 *   Closing.  Descriptors hold references (sd_refs).  A reference is only
 *   ever added to a stream that still has one (a reopen that finds the count
 *   at zero waits for the close under way), so whoever drops the last one
 *   owns the stream alone and calls ust_sd_teardown (sd_close.c).
 *   The table of streams.  Every stream opened here (and every pipe end that
 *   sd_pipe.c registers) is on one list, for tools (ust_sd_foreach).
 *   Autopush.  A new stream gets the modules sad(7) configured for its
 *   device through the autopush hook (ust_sd_set_autopush), which the
 *   administration layer installs at library start: the head does not know
 *   the table, which sits above it.  No hook, no modules.
 *
 * Locking
 *   tab_lock guards the list of streams, the share table and its entries'
 *   states; share_cv is signalled whenever an entry changes state or goes.
 *   Order: tab_lock is taken with no stream head lock held and is above
 *   sd_plumb, sd_lock and the descriptor table lock of sd_fd.c (strm_close
 *   holds it across ust_sd_detach_fd, so that two closes of one descriptor
 *   cannot both detach it).  sd_plumb serializes the plumbing
 *   of one stream: push, pop, reopen and teardown; module open and close
 *   routines run under it and may sleep.  The autopush hook is an atomic
 *   pointer, written once at start-up; so is the publish hook
 *   (ust_sd_set_publish), which strm_open and strm_pipe call first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sthead.h"

#define DEVPREFIX "/dev/streams/"
#define CLONEDIR  "clone/"
#define DEVDIR    "/dev/"

enum share_state { SHARE_OPENING = 1, SHARE_OPEN, SHARE_CLOSING };

/* One device opened without cloning (or a clone's minor, for "<driver>/<N>"). */
struct share_ent {
    struct share_ent *next;   /* tab_lock: next in its hash chain */
    struct share_ent **prevp; /* tab_lock: the link that points at it */
    struct ust_modent *ent; /* the driver */
    dev_t dev;              /* the device number the open asked for */
    struct stdata *sd;      /* the stream, NULL while OPENING */
    int state;              /* enum share_state */
};

/*
 * The two tables are O(1) per open and close, however many streams are open
 * (issue 23 item 4: a process with 1000 endpoints walked both lists several
 * times per open and per close).  The list of streams is doubly linked
 * (sd_next, sd_regprev: NULL when not registered), so registering and
 * unregistering neither search it nor can enter a stream twice; only
 * ust_sd_foreach and fork walk it.  The share table is a hash of
 * SHARE_BUCKETS chains on (driver, device), and each stream knows its own
 * entry (sd_share), so the teardown finds it without a search.
 */
#define SHARE_BUCKETS_LOG2 12 /* 4096 chains: about one entry each with 4000 streams */
#define SHARE_BUCKETS      (1u << SHARE_BUCKETS_LOG2)

static ust_lock_t tab_lock = UST_LOCK_INIT; /* guards the two tables below (see Locking) */
static struct share_ent *share_tab[SHARE_BUCKETS]; /* tab_lock: the share table */
static struct stdata *sd_head; /* tab_lock: every stream, linked by sd_next/sd_regprev */
/* With tab_lock: signalled when a share table entry changes state or goes. */
static ust_cond_t share_cv = UST_COND_INIT;

/* ------------------------------------------------------------------------ */
/* Credentials, the table of streams                                        */
/* ------------------------------------------------------------------------ */
/*
 * ust_sd_cred -- fill *cr with the credentials of the calling process.
 *   Context: any thread; no lock.
 */
void ust_sd_cred(cred_t *cr)
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    /* Two system calls for the four ids (they cannot fail for the caller). */
    getresuid(&ruid, &euid, &suid);
    getresgid(&rgid, &egid, &sgid);
    cr->cr_uid = euid;
    cr->cr_gid = egid;
    cr->cr_ruid = ruid;
    cr->cr_rgid = rgid;
    cr->cr_pid = ust_getpid(); /* cached per fork generation (forksafe.c) */
}

/*
 * ust_sd_register / ust_sd_unregister -- enter a stream in the table of open
 * streams, take it out again.
 *   Context: any thread; takes tab_lock (no stream head lock may be held).
 *   Both are idempotent.  strm_open registers its streams; ust_sd_teardown
 *   unregisters every stream it frees.
 */
void ust_sd_register(struct stdata *sd)
{
    if (sd == NULL)
        return;
    ust_lock(&tab_lock);
    if (sd->sd_regprev == NULL) {
        sd->sd_next = sd_head;
        if (sd_head != NULL)
            sd_head->sd_regprev = &sd->sd_next;
        sd->sd_regprev = &sd_head;
        sd_head = sd;
    }
    ust_unlock(&tab_lock);
}

void ust_sd_unregister_locked(struct stdata *sd)
{
    UST_ASSERT_HELD(&tab_lock);
    if (sd->sd_regprev == NULL)
        return;
    *sd->sd_regprev = sd->sd_next;
    if (sd->sd_next != NULL)
        sd->sd_next->sd_regprev = sd->sd_regprev;
    sd->sd_next = NULL;
    sd->sd_regprev = NULL;
}

void ust_sd_unregister(struct stdata *sd)
{
    if (sd == NULL)
        return;
    ust_lock(&tab_lock);
    ust_sd_unregister_locked(sd);
    ust_unlock(&tab_lock);
}

/*
 * ust_sd_foreach -- call fn(sd, arg) for every registered stream.
 *   Context: any thread.  Locking: fn runs under tab_lock; it may take the
 *   stream's sd_lock or a queue lock to look at it, but must not open, close,
 *   push or pop anything.
 */
void ust_sd_foreach(void (*fn)(struct stdata *sd, void *arg), void *arg)
{
    if (fn == NULL)
        return;
    ust_lock(&tab_lock);
    for (struct stdata *p = sd_head; p != NULL; p = p->sd_next)
        fn(p, arg);
    ust_unlock(&tab_lock);
}

/* The chain of (ent, dev). */
static struct share_ent **share_bucket(const struct ust_modent *ent, dev_t dev)
{
    unsigned long long h = (unsigned long long)(uintptr_t)ent ^ ((unsigned long long)dev << 7);
    h *= 0x9e3779b97f4a7c15ULL; /* Fibonacci hashing: the top bits mix every input bit */
    return &share_tab[h >> (64 - SHARE_BUCKETS_LOG2)];
}

static struct share_ent *share_find(struct ust_modent *ent, dev_t dev)
{
    UST_ASSERT_HELD(&tab_lock);
    for (struct share_ent *s = *share_bucket(ent, dev); s != NULL; s = s->next)
        if (s->ent == ent && s->dev == dev)
            return s;
    return NULL;
}

/* Enter s (ent and dev set) in the share table; tab_lock held. */
static void share_insert(struct share_ent *s)
{
    struct share_ent **b = share_bucket(s->ent, s->dev);

    UST_ASSERT_HELD(&tab_lock);
    s->next = *b;
    if (*b != NULL)
        (*b)->prevp = &s->next;
    s->prevp = b;
    *b = s;
}

/* Make s the share-table entry of sd (both ways); tab_lock held. */
static void share_bind(struct share_ent *s, struct stdata *sd)
{
    UST_ASSERT_HELD(&tab_lock);
    s->sd = sd;
    sd->sd_share = s;
}

/* Unlink s from the share table and free it; tab_lock held. */
void ust_sd_share_remove(struct share_ent *s)
{
    UST_ASSERT_HELD(&tab_lock);
    *s->prevp = s->next;
    if (s->next != NULL)
        s->next->prevp = s->prevp;
    if (s->sd != NULL && s->sd->sd_share == s)
        s->sd->sd_share = NULL;
    free(s);
    ust_cond_broadcast(&share_cv);
}

/* The teardown of sd begins: mark its share table entry CLOSING (openers of
 * the device wait for it to go) and return it, NULL if sd has none.
 * tab_lock held. */
struct share_ent *ust_sd_share_closing(struct stdata *sd)
{
    struct share_ent *se;

    UST_ASSERT_HELD(&tab_lock);
    se = sd->sd_share;
    if (se != NULL) {
        se->state = SHARE_CLOSING;
        ust_cond_broadcast(&share_cv);
    }
    return se;
}

/* tab_lock for sd_close.c (strm_close, ust_sd_teardown); see Locking. */
void ust_sd_tab_lock(void)
{
    ust_lock(&tab_lock);
}

void ust_sd_tab_unlock(void)
{
    ust_unlock(&tab_lock);
}

/* ------------------------------------------------------------------------ */
/* Open                                                                     */
/* ------------------------------------------------------------------------ */
/* The autopush hook (sthead.h); NULL: none installed, nothing pushed.
 * Written by the layer above at start-up (release), read by opens (acquire). */
static _Atomic(ust_sd_autopush_fn) sd_autopush;

void ust_sd_set_autopush(ust_sd_autopush_fn fn)
{
    atomic_store_explicit(&sd_autopush, fn, memory_order_release);
}

/* The publish hook (sthead.h); NULL: nothing published.  Written by the
 * layer above at start-up (release), read by strm_open/strm_pipe (acquire). */
static _Atomic(ust_sd_publish_fn) sd_publish;

void ust_sd_set_publish(ust_sd_publish_fn fn)
{
    atomic_store_explicit(&sd_publish, fn, memory_order_release);
}

void ust_sd_publish(void)
{
    ust_sd_publish_fn fn = atomic_load_explicit(&sd_publish, memory_order_acquire);
    if (fn != NULL)
        fn();
}

static void drop_fd(int fd, struct stdata *sd); /* below; autopush failure */

/* Build a new stream over driver ent: head, driver pair, the driver's open,
 * the descriptor.  Returns the descriptor and *sdp, or -errno (everything
 * built is taken down again). */
static int stream_create(const char *path, struct ust_modent *ent, dev_t dev, int sflag, int oflag,
                         cred_t *cr, struct stdata **sdp)
{
    struct stdata *sd = ust_sd_alloc();
    ust_sd_autopush_fn autopush;
    queue_t *drv;
    int err, fd;

    if (sd == NULL)
        return -ENOSR;
    drv = ust_qalloc(ent->str, ent->flag, ent);
    if (drv == NULL) {
        ust_sd_free(sd);
        return -ENOSR;
    }
    ust_lock(&sd->sd_lock);
    sd->sd_flag |= STWOPEN;
    sd->sd_oflag = oflag;
    sd->sd_cred = *cr;
    sd->sd_dev = dev;
    strncpy(sd->sd_name, path, sizeof(sd->sd_name) - 1);
    sd->sd_name[sizeof(sd->sd_name) - 1] = '\0';
    ust_unlock(&sd->sd_lock);

    ust_lock(&sd->sd_plumb);
    ust_qinsert(sd->sd_rq, drv);
    err = ust_qopen(drv, &dev, oflag, sflag, cr);
    if (err != 0) {
        ust_sd_pair_remove(drv);
        ust_unlock(&sd->sd_plumb);
        ust_sd_free(sd);
        return -err;
    }
    ust_lock(&sd->sd_lock);
    sd->sd_dev = dev; /* a clone open chose the minor */
    sd->sd_driver = ent;
    ust_unlock(&sd->sd_lock);
    ust_reg_hold(ent); /* released by teardown */
    fd = ust_sd_attach_fd(sd);
    if (fd < 0) {
        ust_qclose(drv, oflag, cr);
        ust_sd_pair_remove(drv);
        ust_unlock(&sd->sd_plumb);
        ust_reg_rele(ent);
        ust_sd_free(sd);
        return fd;
    }
    ust_lock(&sd->sd_lock);
    sd->sd_flag &= ~STWOPEN;
    ust_unlock(&sd->sd_lock);
    ust_unlock(&sd->sd_plumb);
    /* Autopush (sad(7), the hook of src/admin): a failed push fails the open. */
    autopush = atomic_load_explicit(&sd_autopush, memory_order_acquire);
    err = autopush != NULL ? autopush(sd, getmajor(dev), getminor(dev), cr) : 0;
    if (err != 0) {
        drop_fd(fd, sd);
        return -err;
    }
    ust_sd_register(sd);
    *sdp = sd;
    return fd;
}

/* Call the open routines of every module and of the driver of an existing
 * stream again (SVR4 reopen).  Returns 0 or an errno: EINVAL linked under a
 * multiplexer, EIO hung up or in error (POSIX open(2): "a hangup or error
 * occurred"), or what an open routine returned. */
static int stream_reopen(struct stdata *sd, int oflag, cred_t *cr)
{
    queue_t *q;
    dev_t dev;
    int err, pipe_end;

    ust_lock(&sd->sd_plumb);
    ust_lock(&sd->sd_lock);
    if (sd->sd_flag & STPLEX)
        err = EINVAL;
    else if (sd->sd_flag & (STRHUP | STRDERR | STWRERR | STRCLOSE))
        err = EIO;
    else
        err = 0;
    dev = sd->sd_dev;
    pipe_end = (sd->sd_flag & (STRPIPE | STRFIFO)) != 0; /* no driver */
    ust_unlock(&sd->sd_lock);
    q = sd->sd_wq;
    for (int i = 0; err == 0 && i < sd->sd_pushcnt; i++) {
        q = ust_qnext(q);
        err = ust_qopen(RD(q), &dev, oflag, MODOPEN, cr);
    }
    if (err == 0 && !pipe_end && (q = ust_qnext(q)) != NULL)
        err = ust_qopen(RD(q), &dev, oflag, DRVOPEN, cr);
    ust_unlock(&sd->sd_plumb);
    return err;
}

int ust_sd_reopen(struct stdata *sd, int oflag, cred_t *cr)
{
    return stream_reopen(sd, oflag, cr);
}

/* No lock held: the last reference tears the stream down. */
void ust_sd_rele(struct stdata *sd)
{
    if (atomic_fetch_sub(&sd->sd_refs, 1) == 1)
        ust_sd_teardown(sd);
}

/* Give the descriptor its FD_CLOEXEC as the open asked (the descriptor table
 * hands out close-on-exec descriptors). */
static void set_cloexec(int fd, int on)
{
    fcntl(fd, F_SETFD, on ? FD_CLOEXEC : 0);
}

/* Drop a descriptor again after a failed reopen. */
static void drop_fd(int fd, struct stdata *sd)
{
    int left;

    ust_lock(&tab_lock);
    left = ust_sd_detach_fd(fd, sd);
    ust_unlock(&tab_lock);
    if (left == 0)
        ust_sd_teardown(sd);
}

/* Open of a fattach-ed name: a new descriptor on that stream, reopened --
 * or, when connld is its top module, a new pipe (sd_rdv.c).  The reference
 * ust_fattach_lookup took is given back here. */
int ust_sd_open_attached(struct stdata *sd, int oflag, const cred_t *cr)
{
    int fd, err;

    if (ust_sd_top_is(sd, "connld")) {
        fd = ust_sd_procs() ? ust_sd_procs()->connld_open(sd, cr) : -ENOSYS;
        ust_sd_rele(sd);
        return fd;
    }
    fd = ust_sd_dup_fd(sd);
    ust_sd_rele(sd); /* the lookup's reference */
    if (fd < 0)
        return fd;
    cred_t c = *cr;
    err = stream_reopen(sd, oflag, &c);
    if (err != 0) {
        drop_fd(fd, sd);
        return -err;
    }
    return fd;
}

/* Open driver ent on dev without cloning: share the stream if the device is
 * open already, else create it. */
static int open_shared(const char *path, struct ust_modent *ent, dev_t dev, int oflag, cred_t *cr)
{
    struct share_ent *se;
    struct stdata *sd;
    int fd, err;

    /* An OPEN entry whose stream has no reference left is about to close
     * (whoever dropped the last one is on the way to ust_sd_teardown, which
     * will mark it CLOSING): wait for that too. */
    ust_lock(&tab_lock);
    for (;;) {
        se = share_find(ent, dev);
        if (se == NULL || (se->state == SHARE_OPEN && ust_sd_hold_live(se->sd)))
            break;
        ust_cond_wait(&share_cv, &tab_lock);
    }
    if (se != NULL) { /* reopen: a descriptor first, so the stream stays */
        sd = se->sd;
        ust_unlock(&tab_lock);
        fd = ust_sd_dup_fd(sd);
        ust_sd_rele(sd);
        if (fd < 0)
            return fd;
        err = stream_reopen(sd, oflag, cr);
        if (err != 0) {
            drop_fd(fd, sd);
            return -err;
        }
        return fd;
    }
    se = calloc(1, sizeof(*se));
    if (se == NULL) {
        ust_unlock(&tab_lock);
        return -ENOSR;
    }
    se->ent = ent;
    se->dev = dev;
    se->state = SHARE_OPENING;
    share_insert(se);
    ust_unlock(&tab_lock);

    fd = stream_create(path, ent, dev, DRVOPEN, oflag, cr, &sd);

    ust_lock(&tab_lock);
    if (fd < 0) {
        ust_sd_share_remove(se);
    } else {
        share_bind(se, sd);
        se->state = SHARE_OPEN;
        ust_cond_broadcast(&share_cv);
    }
    ust_unlock(&tab_lock);
    return fd;
}

/* Clone-open driver ent: a new stream on the minor the driver chooses,
 * entered in the share table under that device (unless a stream of that
 * device is there already, made by a racing open), so that a later open of
 * "<driver>/<N>" reaches it.  Returns the descriptor or -errno. */
static int open_clone(const char *path, struct ust_modent *ent, int oflag, cred_t *cr)
{
    struct stdata *sd;
    struct share_ent *se = calloc(1, sizeof(*se));
    int fd;

    if (se == NULL)
        return -ENOSR;
    fd = stream_create(path, ent, makedevice(ent->major, 0), CLONEOPEN, oflag, cr, &sd);
    if (fd < 0) {
        free(se);
        return fd;
    }
    ust_lock(&tab_lock);
    ust_lock(&sd->sd_lock);
    dev_t dev = sd->sd_dev;
    ust_unlock(&sd->sd_lock);
    if (share_find(ent, dev) == NULL && sd->sd_share == NULL) {
        se->ent = ent;
        se->dev = dev;
        se->state = SHARE_OPEN;
        share_insert(se);
        share_bind(se, sd);
        se = NULL;
    }
    ust_unlock(&tab_lock);
    free(se);
    return fd;
}

/*
 * parse_devname -- split a device name into its driver name, minor and
 *   clone flag.  The forms: "/dev/streams/<drv>", "/dev/streams/<drv>/<N>",
 *   "/dev/streams/clone/<drv>", "/dev/<drv>"; <drv> is [A-Za-z0-9_-]
 *   (checked by the registry), N is decimal digits without a sign.
 *   Returns 0 (drv filled, *minor set, *sflag CLONEOPEN for the clone form),
 *   -1 when path is none of them (a file system name), or 1 (drv filled)
 *   when N is above L_MAXMIN (no device can have that minor).
 */
static int parse_devname(const char *path, char drv[UST_DRVNAMESZ + 1], minor_t *minor,
                         int *sflag)
{
    const char *name, *slash;
    int streams = 0;
    size_t len;

    if (strncmp(path, DEVPREFIX, strlen(DEVPREFIX)) == 0) {
        name = path + strlen(DEVPREFIX);
        streams = 1;
    } else if (strncmp(path, DEVDIR, strlen(DEVDIR)) == 0) {
        name = path + strlen(DEVDIR); /* "/dev/<driver>", as "/dev/streams/<driver>" */
    } else {
        return -1;
    }
    if (streams && strncmp(name, CLONEDIR, strlen(CLONEDIR)) == 0) {
        name += strlen(CLONEDIR);
        *sflag = CLONEOPEN;
        streams = 0; /* no minor after a clone name */
    }
    slash = strchr(name, '/');
    len = slash ? (size_t)(slash - name) : strlen(name);
    if (len == 0 || len > UST_DRVNAMESZ)
        return -1;
    *minor = 0;
    if (slash != NULL) {
        const char *p = slash + 1;
        unsigned long long n = 0;
        if (!streams || *p == '\0')
            return -1;
        for (; *p != '\0'; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            if (n <= L_MAXMIN) /* saturates above: ENXIO below */
                n = n * 10 + (unsigned)(*p - '0');
        }
        *minor = n > L_MAXMIN ? 0 : (minor_t)n;
        if (n > L_MAXMIN)
            streams = -1;
    }
    memcpy(drv, name, len);
    drv[len] = '\0';
    return streams < 0 ? 1 : 0;
}

/* Open flags that no existing stream name accepts: -EEXIST for O_CREAT with
 * O_EXCL, -ENOTDIR for O_DIRECTORY (open(2)); else 0. */
static int name_flags_error(int oflag)
{
    if (oflag & O_DIRECTORY)
        return -ENOTDIR;
    if ((oflag & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
        return -EEXIST;
    return 0;
}

/*
 * ust_sd_open -- open a stream by name.
 *   Context: blocking (open routines may sleep; a device being opened or
 *   closed by another thread is waited for).  No lock held by the caller.
 *   Returns the descriptor, or -1 with errno: EFAULT (path NULL or not
 *   readable), ENAMETOOLONG, ENXIO ("<driver>/<N>" with N above L_MAXMIN,
 *   or a minor the driver refuses), ENOENT (no such name: not fattach-ed, not under
 *   /dev/streams/ nor /dev/<driver>, or no such driver), EEXIST (O_CREAT|O_EXCL: the name
 *   exists), ENOTDIR (O_DIRECTORY), ENOSR (no memory for a stream), EMFILE /
 *   ENFILE (no descriptor), EINVAL / EIO (reopen of a stream linked under a
 *   multiplexer / hung up or in error), or the error of a driver's or
 *   module's open routine (typically ENXIO).
 */
int ust_sd_open(const char *upath, int oflag, cred_t *cr)
{
    struct ust_modent *ent = NULL;
    const char *name = NULL;
    char path[PATH_MAX], drv[UST_DRVNAMESZ + 1];
    minor_t minor = 0;
    int fd, sflag;

    fd = ust_strncpy_in(upath, path, sizeof(path), NULL);
    if (fd != 0) {
        errno = fd;
        return -1;
    }
    ust_ucopy_check(); /* a SIGSEGV handler installed since goes behind ours */
    sflag = DRVOPEN;
    fd = parse_devname(path, drv, &minor, &sflag);
    if (fd >= 0 && ust_fifo_is_driver(drv)) { /* fifo, sfx, pipe (sd_fifo.c) */
        if (fd == 0)
            return ust_fifo_open_dev(drv, minor, sflag == CLONEOPEN, path, oflag, cr);
        errno = ENXIO; /* a minor no device can have */
        return -1;
    }
    if (fd >= 0)
        name = drv;
    if (name != NULL)
        ent = ust_reg_find(name, UST_DRIVER);
    if (ent != NULL && fd == 1) {
        ust_reg_rele(ent);
        errno = ENXIO; /* a minor no device can have */
        return -1;
    }
    if (ent == NULL) {
        /* Not a device: a name in the file system (sd_names.c) -- an
         * attached stream, a FIFO, or a plain file. */
        int handled = 0;
        const struct ust_procs_ops *procs = ust_sd_procs();
        fd = procs ? procs->open_path(path, oflag, cr, &handled) : 0;
        if (handled)
            goto done;
        errno = ENOENT;
        return -1;
    }
    if (ent->flag & D_CLONE)
        sflag = CLONEOPEN;
    fd = name_flags_error(oflag);
    if (fd == 0 && sflag == CLONEOPEN)
        fd = open_clone(path, ent, oflag, cr);
    else if (fd == 0)
        fd = open_shared(path, ent, makedevice(ent->major, minor), oflag, cr);
    ust_reg_rele(ent);
done:
    if (fd < 0) {
        errno = -fd;
        return -1;
    }
    if (!ust_sd_is_stream_fd(fd))
        return fd; /* a plain file, opened as open(2) does */
    set_cloexec(fd, (oflag & O_CLOEXEC) != 0);
    ust_sd_acc_set(fd, ust_sd_acc_of_oflag(oflag)); /* per descriptor (sd_access.c) */
    return fd;
}

/*
 * strm_open -- open(2) for streams (see ustreams.h); the mode argument is
 * accepted and ignored (the names are not files).
 */
static int strm_open_call(const char *path, int oflag)
{
    cred_t cr;

    ust_sd_reap_orphans();
    ust_sd_publish(); /* the process's first stream: publish it for the tools */
    ust_sd_cred(&cr);
    return ust_sd_open(path, oflag, &cr);
}

int strm_open(const char *path, int oflag, ...)
{
    ust_call_begin();
    int r = strm_open_call(path, oflag);
    ust_call_end();
    return r;
}

/* ------------------------------------------------------------------------ */
/* fork() (sd_fork.c)                                                       */
/* ------------------------------------------------------------------------ */
/* tab_lock is quiesced: held briefly (strm_close's close(2) at most), it is
 * taken first of the head's locks, with no stream lock held, and a holder
 * waits for no lock ranked before it. */
void ust_sd_open_fork_prepare(void)
{
    ust_lock(&tab_lock);
}

void ust_sd_open_fork_parent(void)
{
    ust_unlock(&tab_lock);
}

/* Detach every registered stream, then forget them: the list of streams and
 * the share table describe the parent's streams, so in the child a new open
 * of a device makes a new stream (its driver's open runs in the child). */
void ust_sd_open_fork_child(void (*detach)(struct stdata *sd))
{
    struct stdata *sd = sd_head, *next;
    sd_head = NULL;
    for (; sd != NULL; sd = next) {
        next = sd->sd_next;
        sd->sd_next = NULL;
        sd->sd_regprev = NULL;
        sd->sd_share = NULL;
        detach(sd);
    }
    for (size_t i = 0; i < SHARE_BUCKETS; i++) {
        for (struct share_ent *s = share_tab[i], *n; s != NULL; s = n) {
            n = s->next;
            free(s);
        }
        share_tab[i] = NULL;
    }
    ust_cond_init(&share_cv);
    ust_unlock(&tab_lock);
}
