/* SPDX-License-Identifier: MIT */
/*
 * sd_fattach.c -- fattach(3C) and fdetach(3C): names in the file system for
 * streams, reachable from every process.
 *
 * Principles of operation
 *   fattach(fd, path) covers an existing file: path must exist, and the
 *   caller must own it (or be the superuser) and, as its owner, have write
 *   permission on it.  The name is the file's identity (st_dev, st_ino), so
 *   every spelling of the path reaches it; the table below keeps it with the
 *   path as given, and one reference (sd_refs) on the stream until fdetach.
 *
 *   In this process strm_open(path) finds the entry (ust_fattach_lookup)
 *   and opens the stream itself.  For other processes the name is also a
 *   rendezvous (sd_rdv.c): a listening socket named after the file's
 *   identity, through which another process's strm_open reaches the stream
 *   (ust_rdv_serve_name).  The rendezvous belongs to this process: when it
 *   exits or dies the kernel removes it, so a name is never handed out by a
 *   process that is gone.  Another process may also fdetach the name (the
 *   file's owner or the superuser: `ustreams fdetach PATH`).
 *
 *   The file itself is not touched: stat(2) still describes it, and after
 *   fdetach the path opens as the file again.
 *
 * Locking
 *   fattach_lock guards the table; it is taken before rdv_lock (sd_rdv.c,
 *   a leaf) when a name's rendezvous is made or removed, and nothing else is
 *   taken under it.  Quiesced at fork (rank UST_FORK_HEAD_FATTACH).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sthead.h"

struct fattach_ent {
    struct fattach_ent *next;
    struct stdata *sd; /* holds one sd_refs reference */
    dev_t dev;         /* the covered file's identity */
    ino_t ino;
    int lfd;           /* its rendezvous (sd_rdv.c), or -1 */
    char path[];
};

static ust_lock_t fattach_lock = UST_LOCK_INIT; /* guards fattach_tab; before rdv_lock */
static struct fattach_ent *fattach_tab;         /* fattach_lock */

/* Copy in and validate a name for fattach/fdetach (upath, a user address,
 * into path): 0, EFAULT (NULL or not readable), ENOENT (empty), ENAMETOOLONG
 * (PATH_MAX or more, or a component longer than NAME_MAX). */
static int name_check(const char *upath, char path[PATH_MAX])
{
    size_t n, comp = 0;
    int err = ust_strncpy_in(upath, path, PATH_MAX, &n);

    if (err != 0)
        return err;
    if (n == 0)
        return ENOENT;
    for (size_t i = 0; i < n; i++) {
        comp = path[i] == '/' ? 0 : comp + 1;
        if (comp > NAME_MAX)
            return ENAMETOOLONG;
    }
    return 0;
}

/* The entry of the file (dev, ino), or of the path as given when path is not
 * NULL (a file removed since it was covered). */
static struct fattach_ent **fattach_find(dev_t dev, ino_t ino, const char *path)
{
    UST_ASSERT_HELD(&fattach_lock);
    struct fattach_ent **pp = &fattach_tab;
    while (*pp != NULL && !(path != NULL ? strcmp((*pp)->path, path) == 0
                                         : (*pp)->dev == dev && (*pp)->ino == ino))
        pp = &(*pp)->next;
    return pp;
}

/* May the caller cover st?  0, EPERM (not the owner), EACCES (the owner
 * without write permission). */
static int cover_check(const struct stat *st)
{
    uid_t uid = geteuid();
    if (uid == 0)
        return 0;
    if (st->st_uid != uid)
        return EPERM;
    return (st->st_mode & S_IWUSR) ? 0 : EACCES;
}

/*
 * fattach -- fattach(3C): attach the stream fd to the existing file path.
 *   Context: any thread.  The attachment holds the stream open until
 *   fdetach; a stream may carry several names.
 *   Returns 0, or -1 with errno: EBADF (fd not open), EINVAL (fd is not a
 *   stream), EFAULT (path NULL or not readable), ENOENT (path empty or no
 *   such file), ENOTDIR, ELOOP, EACCES (search permission denied on a
 *   directory of path, or the caller owns path without write permission),
 *   EPERM (the caller does not own path), ENAMETOOLONG, EBUSY (a stream is
 *   already attached to path, here or in another process), ENOMEM, EMFILE.
 */
static int fattach_call(int fd, const char *upath)
{
    struct fattach_ent *e = NULL, **pp;
    const struct ust_procs_ops *procs = ust_sd_procs(); /* NULL: no rendezvous */
    struct stdata *sd;
    struct stat st, ns;
    char path[PATH_MAX];
    size_t len;
    int err, node = -1;

    err = name_check(upath, path);
    if (err != 0)
        goto out;
    sd = ust_sd_get(fd, &err);
    if (sd == NULL) {
        err = err == ENOSTR ? EINVAL : EBADF;
        goto out;
    }
    if (stat(path, &st) != 0) {
        err = errno;
        goto put;
    }
    err = cover_check(&st);
    if (err != 0)
        goto put;
    len = strlen(path);
    e = malloc(sizeof(*e) + len + 1);
    if (e == NULL) {
        err = ENOMEM;
        goto put;
    }
    memcpy(e->path, path, len + 1);
    e->sd = sd;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->lfd = -1;
    /* The node by the path, as the rendezvous' proof that we own the name:
     * clients check that our reply carries a descriptor of it. */
    node = open(path, O_PATH | O_CLOEXEC);
    if (node < 0) {
        err = errno;
        goto put;
    }
    if (fstat(node, &ns) != 0 || ns.st_dev != st.st_dev || ns.st_ino != st.st_ino) {
        err = ENOENT; /* replaced meanwhile */
        goto put;
    }
    ust_lock(&fattach_lock);
    pp = fattach_find(st.st_dev, st.st_ino, NULL);
    if (*pp != NULL)
        err = EBUSY;
    else
        err = procs ? procs->name_listen(node, &e->lfd) /* EBUSY: elsewhere */ : ENOSYS;
    if (err == 0 && !ust_sd_hold_live(sd))
        err = EBADF; /* closed meanwhile by another thread */
    if (err == 0) {
        e->next = NULL;
        *pp = e;
        e = NULL;
    }
    ust_unlock(&fattach_lock);
    if (err == 0) {
        ust_lock(&sd->sd_lock);
        sd->sd_flag |= STRATTACH;
        ust_unlock(&sd->sd_lock);
    }
put:
    if (node >= 0)
        close(node); /* the rendezvous keeps its own */
    ust_sd_put(sd);
out:
    if (e != NULL) {
        if (e->lfd >= 0)
            ust_sd_procs()->name_unlisten(e->lfd);
        free(e);
    }
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

int fattach(int fd, const char *upath)
{
    ust_call_begin();
    int r = fattach_call(fd, upath);
    ust_call_end();
    return r;
}

/* Remove the entry of (dev, ino) -- or of path, when path is not NULL -- and
 * drop its reference: 0, or EINVAL when there is none. */
static int detach_local(dev_t dev, ino_t ino, const char *path)
{
    struct fattach_ent *e, **pp;
    int others = 0;

    ust_lock(&fattach_lock);
    pp = fattach_find(dev, ino, path);
    e = *pp;
    if (e != NULL) {
        *pp = e->next;
        for (struct fattach_ent *o = fattach_tab; o != NULL; o = o->next)
            others += o->sd == e->sd;
        if (e->lfd >= 0)
            ust_sd_procs()->name_unlisten(e->lfd); /* no process reaches it from now on */
    }
    ust_unlock(&fattach_lock);
    if (e == NULL)
        return EINVAL;
    struct stdata *sd = e->sd;
    free(e);
    if (others == 0) {
        ust_lock(&sd->sd_lock);
        sd->sd_flag &= ~STRATTACH;
        ust_unlock(&sd->sd_lock);
    }
    if (atomic_fetch_sub(&sd->sd_refs, 1) == 1)
        ust_sd_teardown(sd);
    return 0;
}

/*
 * fdetach -- fdetach(3C): remove the name path from its stream, whichever
 *   process attached it.
 *   Context: blocking when it drops the stream's last reference (the stream
 *   is then closed as by the last close).  Descriptors already opened
 *   through the name stay valid.
 *   Returns 0, or -1 with errno: EFAULT, ENOENT, ENAMETOOLONG, ENOTDIR,
 *   EACCES (as fattach), EPERM (attached by another process, and the caller
 *   neither owns path nor is the superuser), EINVAL (nothing attached to
 *   path).
 */
static int fdetach_call(const char *upath)
{
    struct stat st;
    char path[PATH_MAX];
    int err;

    err = name_check(upath, path);
    if (err == 0) {
        if (stat(path, &st) != 0) { /* the file may have gone since: the name as given */
            err = errno;
            if (detach_local(0, 0, path) == 0)
                err = 0;
        } else {
            err = detach_local(st.st_dev, st.st_ino, NULL);
            if (err == EINVAL) /* not ours: its owner may be another process */
                err = ust_sd_procs() ? ust_sd_procs()->name_detach(path, &st) : EINVAL;
        }
    }
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

int fdetach(const char *upath)
{
    ust_call_begin();
    int r = fdetach_call(upath);
    ust_call_end();
    return r;
}

int ust_fattach_detach_key(dev_t dev, ino_t ino)
{
    return detach_local(dev, ino, NULL);
}

struct stdata *ust_fattach_lookup(dev_t dev, ino_t ino, char *path, size_t pathsz)
{
    struct stdata *sd = NULL;

    ust_lock(&fattach_lock);
    struct fattach_ent *e = *fattach_find(dev, ino, NULL);
    if (e != NULL) {
        sd = e->sd;
        atomic_fetch_add(&sd->sd_refs, 1); /* the entry's own keeps it above 0 */
        if (path != NULL)
            snprintf(path, pathsz, "%s", e->path);
    }
    ust_unlock(&fattach_lock);
    return sd;
}

/* ------------------------------------------------------------------------ */
/* fork() (sd_fork.c)                                                       */
/* ------------------------------------------------------------------------ */
/* fattach_lock is quiesced.  In the child every attached name names a
 * parent's stream, so the table starts empty; the references the entries
 * held are the parent's and are not dropped.  The rendezvous sockets are
 * the parent's to serve: sd_rdv.c's child hook closes the child's copies. */
void ust_fattach_fork_prepare(void)
{
    ust_lock(&fattach_lock);
}

void ust_fattach_fork_parent(void)
{
    ust_unlock(&fattach_lock);
}

void ust_fattach_fork_child(void)
{
    for (struct fattach_ent *e = fattach_tab, *n; e != NULL; e = n) {
        n = e->next;
        free(e); /* its rendezvous socket is closed by sd_rdv.c's child hook */
    }
    fattach_tab = NULL;
    ust_unlock(&fattach_lock);
}
