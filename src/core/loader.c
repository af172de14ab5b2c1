/* SPDX-License-Identifier: MIT */
/*
 * loader.c -- STREAMS modules and drivers loaded from shared objects.
 *
 * Principles of operation
 *   A loadable module is a shared object called libust_<name>.so or
 *   <name>.so, found in the directories of the module path: the one given
 *   to ustreams_set_module_path, else $USTREAMS_MODULE_PATH (ignored when
 *   the process runs set-uid or set-gid), else "<libdir>/ustreams" -- never
 *   the current directory.  Only absolute directories count, and a file is
 *   loaded only if nobody but the effective user and root could have put
 *   it there (see "Trust" below; a refusal is EACCES, logged).  It exports
 *       int  ust_module_init(void);  registers its module(s) and/or driver(s)
 *                                    with register_strmod/register_strdev and
 *                                    returns 0, or an errno (either sign);
 *       void ust_module_fini(void);  optional: called after the loader has
 *                                    unregistered everything init registered,
 *                                    just before dlclose.
 *   Its references to the library (register_strmod, putnext, ...) are
 *   resolved against the library already in the process (libustreams.so, or
 *   a program linked statically with -rdynamic).
 *
 *   Every module or driver registered while ust_module_init runs belongs to
 *   the object (the registry marks the entry dynamic: ust_loader_current).
 *
 *   Loading happens two ways.  ustreams_load(name) loads and *pins* the
 *   object: it stays until ustreams_unload(name), which fails EBUSY while a
 *   stream uses one of its entries.  A registry lookup that misses (I_PUSH
 *   of a module, open of a driver, SAD_VML, autopush configuration) loads
 *   the object *on demand*: such an object is unloaded automatically as soon
 *   as no stream uses it any more, that is when the reference count of its
 *   last entry in use falls to zero (ust_reg_rele calls ust_loader_idle).
 *   An object loaded on demand that does not register what was looked up is
 *   unloaded at once.
 *
 *   Unloading unregisters every entry of the object (if one turns out to be
 *   in use, those already unregistered are registered again and the unload
 *   fails EBUSY), calls ust_module_fini, and dlcloses it.  No code of the
 *   object can be running then: its entries have no queue pair, so no
 *   procedure of it is on any stream.  (A module that leaves a timeout or
 *   bufcall pending after its close is broken anyway.)
 *
 * Locking
 *   ldr_lock serializes loading and unloading and guards the list of
 *   objects and the module path.  It is taken with no executive lock held
 *   other than, possibly, a stream's sd_plumb (I_PUSH and open look up under
 *   it) or the stream table lock of sd_open.c, and it is held across dlopen,
 *   ust_module_init, the registry calls, ust_module_fini and dlclose: so it
 *   comes after sd_plumb and before the registry lock.  Nothing under it may
 *   release a registry reference (that would re-enter ust_loader_idle): the
 *   loader looks entries up with fmod_lookup/cdev_lookup, which take none.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ddi.h>
#include <sys/stat.h>
#include <sys/strconf.h>
#include <sys/strlog.h>
#include <unistd.h>
#include <ustreams_exec.h>

#include "strcore.h"

#ifndef USTREAMS_MODULE_DIR
#define USTREAMS_MODULE_DIR "/usr/local/lib/ustreams"
#endif
#define LDR_DEFAULT_PATH USTREAMS_MODULE_DIR /* never the current directory */

/* One registration made by an object's ust_module_init. */
struct ldr_ent {
    int kind; /* UST_MODULE or UST_DRIVER */
    char name[UST_DRVNAMESZ + 1];
    struct fmodsw *fmod; /* the object's own records (valid while loaded) */
    struct cdevsw *cdev;
    major_t major;
};

/* A loaded shared object. */
struct ldr_obj {
    struct ldr_obj *next;
    char name[FMNAMESZ + 1]; /* the name it was loaded by */
    void *dl;                /* dlopen handle */
    void (*fini)(void);      /* ust_module_fini or NULL */
    int pinned;              /* loaded by ustreams_load: no automatic unload */
    int nent;
    struct ldr_ent *ent; /* what init registered */
};

static ust_lock_t ldr_lock = UST_LOCK_INIT; /* see Locking; guards the fields below */
static struct ldr_obj *ldr_head;            /* ldr_lock: loaded objects */
static char *ldr_path;                      /* ldr_lock: ustreams_set_module_path, or NULL */

/* The object whose ust_module_init runs on this thread (its registrations
 * are its entries), or NULL.  Also set while the loader re-registers. */
static _Thread_local struct ldr_obj *ldr_loading;
/* This thread holds ldr_lock (ust_loader_idle must then not take it). */
static _Thread_local int ldr_held;
/* The reason of this thread's last failed load, for ustreams_load_error. */
static _Thread_local char ldr_error[PATH_MAX + 256];

/* Take / drop ldr_lock, noting that this thread holds it. */
static void ldr_lock_take(void)
{
    ust_lock(&ldr_lock);
    ldr_held = 1;
}

static void ldr_lock_drop(void)
{
    ldr_held = 0;
    ust_unlock(&ldr_lock);
}

/* A name is 1..FMNAMESZ characters of [A-Za-z0-9_-] (the registry's rule;
 * it also keeps names from reaching outside the module directories). */
static int ldr_name_ok(const char *name)
{
    size_t n;

    if (name == NULL)
        return 0;
    for (n = 0; name[n] != '\0'; n++) {
        unsigned char c = (unsigned char)name[n];
        if (n >= FMNAMESZ || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                               (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return n > 0;
}

/* ust_loader_current -- see strcore.h.  Context: any thread; no lock. */
void *ust_loader_current(void)
{
    return ldr_loading;
}

/* ------------------------------------------------------------------------ */
/* Finding and recording                                                     */
/* ------------------------------------------------------------------------ */
/* The object loaded as name, or owning an entry (name, kind); kind 0 matches
 * either kind.  ldr_lock held. */
static struct ldr_obj *ldr_find_locked(const char *name, int kind)
{
    UST_ASSERT_HELD(&ldr_lock);
    for (struct ldr_obj *o = ldr_head; o != NULL; o = o->next) {
        if (strcmp(o->name, name) == 0)
            return o;
        for (int i = 0; i < o->nent; i++)
            if ((kind == 0 || o->ent[i].kind == kind) && strcmp(o->ent[i].name, name) == 0)
                return o;
    }
    return NULL;
}

/* ust_reg_foreach callback: record the entries marked with the object. */
static void ldr_collect(struct ust_modent *e, void *arg)
{
    struct ldr_obj *o = arg;
    struct ldr_ent *n;

    if (e->dlhandle != o || o->nent < 0)
        return;
    n = realloc(o->ent, (size_t)(o->nent + 1) * sizeof(*n));
    if (n == NULL) {
        o->nent = -1 - o->nent; /* out of memory: flagged, fixed up by the caller */
        return;
    }
    o->ent = n;
    n += o->nent++;
    n->kind = e->kind;
    memcpy(n->name, e->name, sizeof(n->name));
    n->fmod = e->fmod;
    n->cdev = e->cdev;
    n->major = e->major;
}

static int ldr_unregister(const struct ldr_ent *le)
{
    return le->kind == UST_MODULE ? unregister_strmod(le->fmod)
                                  : unregister_strdev(le->cdev, le->major);
}

/* Register again an entry taken out by an unload that failed. */
static void ldr_reregister(struct ldr_obj *o, const struct ldr_ent *le)
{
    int rc;

    ldr_loading = o;
    rc = le->kind == UST_MODULE ? register_strmod(le->fmod) : register_strdev(le->cdev, le->major);
    ldr_loading = NULL;
    if (rc < 0)
        cmn_err(CE_WARN, "ustreams loader: could not register \"%s\" again (%d)", le->name, rc);
}

/*
 * ldr_unload_locked -- unregister every entry of o, run its fini, dlclose it
 * and free it.
 *   Context: ldr_lock held.  Returns 0, or EBUSY (an entry is in use; o is
 *   left loaded and registered as it was).
 */
static int ldr_unload_locked(struct ldr_obj *o)
{
    int i;

    UST_ASSERT_HELD(&ldr_lock);
    for (i = 0; i < o->nent; i++) {
        int rc = ldr_unregister(&o->ent[i]);
        if (rc == -EBUSY)
            break;
    }
    if (i < o->nent) {
        while (i-- > 0)
            ldr_reregister(o, &o->ent[i]);
        return EBUSY;
    }
    for (struct ldr_obj **pp = &ldr_head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    }
    if (o->fini != NULL)
        o->fini();
    dlclose(o->dl);
    free(o->ent);
    free(o);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */
/* ------------------------------------------------------------------------ */
/* Trust: which files may be loaded                                          */
/* ------------------------------------------------------------------------ */
/*
 * The rule (docs/ADMIN.md "Which files are loaded"), the one ld.so follows
 * in spirit for a set-uid program: code is loaded only from a file nobody
 * but this process's effective user and root could have put or changed.
 *   - The path is absolute (a relative entry of the module path is refused).
 *   - Every object met on the way from / -- each directory, each symbolic
 *     link, the file -- is owned by the effective uid or by root.
 *   - The file is a regular file, and it and the directory that holds it
 *     are not writable by others, nor by their group unless the group is
 *     root's (gid 0).
 *   - A directory further up may be writable by others or by its group only
 *     if it is sticky (as /tmp): others may add entries there but can neither
 *     rename nor remove ours, and what they add is theirs, hence refused.
 *     Otherwise the same as the holding directory.
 *   - Symbolic links are followed, at most LDR_MAXLINKS of them, each
 *     target walked by the same rule from where it points.
 * The walk goes one component at a time on O_PATH|O_NOFOLLOW descriptors
 * (openat from the directory checked just before), and the object checked
 * is the one dlopen then loads, through /proc/self/fd/N: nothing can be
 * swapped between the check and the load.
 */
#define LDR_MAXLINKS 40

/* Owned by the effective user or root. */
static int ldr_owner_ok(const struct stat *st)
{
    return st->st_uid == 0 || st->st_uid == geteuid();
}

/* Writable by someone who is not trusted: others, or a group not root's. */
static int ldr_foreign_write(const struct stat *st)
{
    return (st->st_mode & S_IWOTH) != 0 || ((st->st_mode & S_IWGRP) != 0 && st->st_gid != 0);
}

/* Why obj (a walked path, for messages) is refused; 0 if it is not.
 * holder: a directory that directly holds the file to be loaded, or the
 * file itself (no sticky exception).  The reason goes to why. */
static int ldr_refused(const struct stat *st, const char *obj, int holder, char *why, size_t n)
{
    if (!ldr_owner_ok(st)) {
        snprintf(why, n, "%s: owned by uid %u, neither root nor the effective user", obj,
                 (unsigned)st->st_uid);
        return 1;
    }
    /* A link's mode bits mean nothing (always 0777): its owner and the
     * directory that holds it are what count. */
    if (!S_ISLNK(st->st_mode) && ldr_foreign_write(st) && (holder || !S_ISDIR(st->st_mode) || !(st->st_mode & S_ISVTX))) {
        snprintf(why, n, "%s: writable by %s", obj,
                 (st->st_mode & S_IWOTH) ? "others" : "a group other than root's");
        return 1;
    }
    return 0;
}

/*
 * ldr_open_trusted -- open the file at path for loading, following the rule
 * above.
 *   Context: ldr_lock held (uses ldr_error as scratch only through why).
 *   Returns 0 with *fdp an O_PATH descriptor of the regular file (the
 *   caller closes it); ENOENT when there is nothing loadable there (no such
 *   file, a component missing or not searchable, a directory, too many
 *   links); EACCES when something is there but refused (reason in why).
 */
static int ldr_open_trusted(const char *path, int *fdp, char *why, size_t n)
{
    char rest[PATH_MAX], comp[NAME_MAX + 1], walked[PATH_MAX], target[PATH_MAX];
    struct stat dst, st;
    int dfd, fd = -1, links = 0, err = ENOENT;
    size_t off = 0;

    if (path[0] != '/' || strlen(path) >= sizeof(rest))
        return ENOENT;
    snprintf(rest, sizeof(rest), "%s", path);
    dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fstat(dfd, &dst) != 0)
        goto out;
    snprintf(walked, sizeof(walked), "/");
    if (ldr_refused(&dst, walked, 0, why, n)) {
        err = EACCES;
        goto out;
    }
    for (;;) {
        while (rest[off] == '/')
            off++;
        size_t len = strcspn(rest + off, "/");
        if (len == 0 || len > NAME_MAX) /* a path ending in '/' is a directory */
            goto out;
        memcpy(comp, rest + off, len);
        comp[len] = '\0';
        off += len;
        int last = rest[off + strspn(rest + off, "/")] == '\0';
        if (strcmp(comp, ".") == 0) {
            if (last)
                goto out;
            continue;
        }
        size_t wl = strlen(walked);
        snprintf(walked + wl, sizeof(walked) - wl, "%s%s", wl > 1 ? "/" : "", comp);
        fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) != 0) /* missing, not searchable: not here */
            goto out_fd;
        if (S_ISLNK(st.st_mode)) {
            ssize_t tl;
            if (ldr_refused(&st, walked, 0, why, n)) {
                err = EACCES;
                goto out_fd;
            }
            tl = readlinkat(fd, "", target, sizeof(target) - 1);
            if (tl <= 0 || ++links > LDR_MAXLINKS ||
                (size_t)tl + strlen(rest + off) + 2 > sizeof(rest))
                goto out_fd;
            target[tl] = '\0';
            close(fd);
            fd = -1;
            /* rest := target + what was left after the link */
            memmove(rest + tl + 1, rest + off, strlen(rest + off) + 1);
            memcpy(rest, target, (size_t)tl);
            rest[tl] = '/';
            off = 0;
            walked[wl] = '\0'; /* back to the directory that holds the link */
            if (target[0] == '/') { /* absolute: start again at / */
                close(dfd);
                dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0 || fstat(dfd, &dst) != 0)
                    goto out;
                snprintf(walked, sizeof(walked), "/");
            }
            continue;
        }
        if (last) {
            if (S_ISDIR(st.st_mode))
                goto out_fd;
            if (!S_ISREG(st.st_mode)) {
                snprintf(why, n, "%s: not a regular file", walked);
                err = EACCES;
                goto out_fd;
            }
            int bad = ldr_refused(&st, walked, 1, why, n);
            walked[wl] = '\0'; /* the holding directory, for its message */
            if (bad || ldr_refused(&dst, walked, 1, why, n)) {
                err = EACCES;
                goto out_fd;
            }
            close(dfd);
            *fdp = fd;
            return 0;
        }
        if (!S_ISDIR(st.st_mode))
            goto out_fd;
        if (ldr_refused(&st, walked, 0, why, n)) {
            err = EACCES;
            goto out_fd;
        }
        close(dfd);
        dfd = fd;
        dst = st;
    }
out_fd:
    if (fd >= 0)
        close(fd);
out:
    if (dfd >= 0)
        close(dfd);
    return err;
}

/* The loader's messages go to the log (strlog: the log driver's readers;
 * stderr only with USTREAMS_VERBOSE), never straight to stderr. */
#define LDR_LOG_MID 0 /* mid of the library's own messages */

static void ldr_log(const char *what)
{
    strlog(LDR_LOG_MID, 0, 0, SL_ERROR | SL_CONSOLE, "ustreams loader: %s", what);
}

/* The module path in force: ustreams_set_module_path's, else
 * $USTREAMS_MODULE_PATH unless the process runs set-uid or set-gid
 * (AT_SECURE: ignored, as ld.so ignores LD_LIBRARY_PATH), else the
 * installed directory.  ldr_lock held. */
static const char *ldr_list_locked(void)
{
    const char *list = ldr_path;

    if (list == NULL && getauxval(AT_SECURE) == 0) {
        list = getenv("USTREAMS_MODULE_PATH");
        if (list != NULL && list[0] == '\0')
            list = NULL;
    }
    return list != NULL ? list : LDR_DEFAULT_PATH;
}

/*
 * ldr_search_locked -- find name's object on the module path: for each
 * directory in turn libust_<name>.so, then <name>.so, opened by
 * ldr_open_trusted.
 *   Context: ldr_lock held.
 *   Returns 0 with *fdp its O_PATH descriptor and path its name (for
 *   messages); ENOENT (nowhere); EACCES (found only where it is refused, or
 *   a relative directory on the path: every refusal is logged, the first
 *   one is this thread's ustreams_load_error).
 */
static int ldr_search_locked(const char *name, char *path, size_t size, int *fdp)
{
    static const char *const forms[] = {"%.*s/libust_%s.so", "%.*s/%s.so"};
    const char *list = ldr_list_locked(), *p, *end;
    char why[PATH_MAX + 128];
    int refused = 0;

    for (p = list; *p != '\0'; p = *end ? end + 1 : end) {
        end = strchr(p, ':');
        if (end == NULL)
            end = p + strlen(p);
        int dlen = (int)(end - p);
        if (dlen == 0)
            continue;
        if (p[0] != '/') { /* relative to whatever the current directory is */
            snprintf(why, sizeof(why), "%.*s: relative directory in the module path refused",
                     dlen, p);
            ldr_log(why);
            if (!refused++)
                snprintf(ldr_error, sizeof(ldr_error), "%s: %s", name, why);
            continue;
        }
        for (int f = 0; f < 2; f++) {
            int n = snprintf(path, size, forms[f], dlen, p, name);
            if (n <= 0 || (size_t)n >= size)
                continue;
            int err = ldr_open_trusted(path, fdp, why, sizeof(why));
            if (err == 0)
                return 0;
            if (err == EACCES) {
                ldr_log(why);
                if (!refused++)
                    snprintf(ldr_error, sizeof(ldr_error), "%s: refused: %s", name, why);
            }
        }
    }
    if (refused)
        return EACCES;
    snprintf(ldr_error, sizeof(ldr_error), "%s: not found in the module path %s", name, list);
    return ENOENT;
}

/*
 * ldr_load_locked -- find, dlopen and initialize the object for name.
 *   Context: ldr_lock held; blocking (dlopen, ust_module_init).
 *   Returns 0 with *op the new object, or ENOENT (not found on the path),
 *   ENOEXEC (dlopen failed: not a shared object, unresolved symbols...),
 *   EINVAL (no ust_module_init, or it registered nothing), ENOMEM, or the
 *   error ust_module_init returned (what it registered is taken back).
 */
static int ldr_load_locked(const char *name, int pinned, struct ldr_obj **op)
{
    char path[PATH_MAX], self[64];
    struct ldr_obj *o;
    int (*init)(void);
    int err, fd;

    UST_ASSERT_HELD(&ldr_lock);
    if ((err = ldr_search_locked(name, path, sizeof(path), &fd)) != 0)
        return err;
    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        close(fd);
        return ENOMEM;
    }
    strcpy(o->name, name); /* checked by ldr_name_ok */
    o->pinned = pinned;
    /* The file checked is the file loaded: dlopen opens it again through
     * the descriptor of the walk (needs /proc). */
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    o->dl = dlopen(self, RTLD_NOW | RTLD_LOCAL);
    close(fd);
    if (o->dl == NULL) {
        snprintf(ldr_error, sizeof(ldr_error), "%s: %s", path, dlerror());
        free(o);
        return ENOEXEC;
    }
    *(void **)&init = dlsym(o->dl, "ust_module_init");
    *(void **)&o->fini = dlsym(o->dl, "ust_module_fini");
    if (init == NULL) {
        snprintf(ldr_error, sizeof(ldr_error), "%s: no ust_module_init", path);
        err = EINVAL;
        goto fail;
    }
    ldr_loading = o;
    err = init();
    ldr_loading = NULL;
    ust_reg_foreach(ldr_collect, o);
    if (o->nent < 0) { /* could not record every entry: give them all back */
        o->nent = -1 - o->nent;
        err = ENOMEM;
    }
    if (err < 0)
        err = -err;
    if (err == 0 && o->nent == 0) {
        snprintf(ldr_error, sizeof(ldr_error), "%s: ust_module_init registered nothing", path);
        err = EINVAL;
    }
    if (err != 0) {
        for (int i = 0; i < o->nent; i++)
            ldr_unregister(&o->ent[i]); /* nobody can use them yet: they are free */
        snprintf(ldr_error, sizeof(ldr_error), "%s: ust_module_init failed (%d)", path, err);
        goto fail;
    }
    o->next = ldr_head;
    ldr_head = o;
    *op = o;
    return 0;

fail:
    dlclose(o->dl);
    free(o->ent);
    free(o);
    return err;
}

/* ------------------------------------------------------------------------ */
/* The registry's side (strcore.h)                                           */
/* ------------------------------------------------------------------------ */
/*
 * ust_loader_try -- a registry lookup of (name, kind) missed: load the
 * object for name on demand and return its entry, held (as ust_reg_find).
 *   Context: blocking; called by ust_reg_find without the registry lock.
 *   Returns the entry or NULL (nothing loadable, or it does not register
 *   that name as that kind: then it is unloaded again).
 */
struct ust_modent *ust_loader_try(const char *name, int kind)
{
    struct ust_modent *e;
    struct ldr_obj *o;

    if (!ldr_name_ok(name) || (kind != UST_MODULE && kind != UST_DRIVER))
        return NULL;
    if (ldr_loading != NULL || ldr_held) /* a lookup from inside init or the loader */
        return NULL;
    ldr_lock_take();
    e = ust_reg_find_noload(name, kind); /* someone may have loaded it meanwhile */
    if (e == NULL && ldr_find_locked(name, 0) == NULL && ldr_load_locked(name, 0, &o) == 0) {
        e = ust_reg_find_noload(name, kind);
        if (e == NULL)
            ldr_unload_locked(o); /* not what was asked for; cannot be busy */
    }
    ldr_lock_drop();
    return e;
}

/*
 * ust_loader_idle -- the reference count of the loaded entry (name, kind)
 * fell to zero: unload its object if it was loaded on demand and nothing of
 * it is in use.
 *   Context: called by ust_reg_rele with no registry lock; takes ldr_lock.
 */
void ust_loader_idle(const char *name, int kind)
{
    struct ldr_obj *o;

    if (ldr_held || ldr_loading != NULL)
        return;
    ldr_lock_take();
    o = ldr_find_locked(name, kind);
    if (o != NULL && !o->pinned)
        ldr_unload_locked(o); /* EBUSY: in use again; its last release comes back here */
    ldr_lock_drop();
}

/* ------------------------------------------------------------------------ */
/* API (ustreams_exec.h)                                                     */
/* ------------------------------------------------------------------------ */
/* ustreams_load / ustreams_unload / ustreams_set_module_path /
 * ustreams_load_error: contracts in ustreams_exec.h.  Context: any thread,
 * blocking (they take ldr_lock; load and unload run the object's code). */
int ustreams_load(const char *name)
{
    struct ldr_obj *o;
    int err;

    if (!ldr_name_ok(name))
        return EINVAL;
    ust_init();
    ldr_lock_take();
    o = ldr_find_locked(name, 0);
    if (o != NULL) {
        o->pinned = 1;
        err = 0;
    } else if (fmod_lookup(name) != NULL || cdev_lookup(name) != NULL) {
        snprintf(ldr_error, sizeof(ldr_error), "%s: already registered (not loaded)", name);
        err = EEXIST;
    } else {
        err = ldr_load_locked(name, 1, &o);
    }
    ldr_lock_drop();
    return err;
}

int ustreams_unload(const char *name)
{
    struct ldr_obj *o;
    int err;

    if (!ldr_name_ok(name))
        return EINVAL;
    ldr_lock_take();
    o = ldr_find_locked(name, 0);
    err = o != NULL ? ldr_unload_locked(o) : ENOENT;
    ldr_lock_drop();
    return err;
}

int ustreams_set_module_path(const char *path)
{
    char *copy = NULL;

    if (path != NULL) {
        if (strlen(path) >= PATH_MAX * 4)
            return ENAMETOOLONG;
        for (const char *p = path; *p != '\0'; p += strcspn(p, ":"), p += *p == ':')
            if (*p != ':' && *p != '/')
                return EINVAL; /* a relative directory: see ldr_search_locked */
        if ((copy = strdup(path)) == NULL)
            return ENOMEM;
    }
    ldr_lock_take();
    free(ldr_path);
    ldr_path = copy;
    ldr_lock_drop();
    return 0;
}

const char *ustreams_load_error(void)
{
    return ldr_error;
}

/* ------------------------------------------------------------------------ */
/* fork() (forksafe.c)                                                      */
/* ------------------------------------------------------------------------ */
/* Quiesced: the child may load modules.  ldr_lock is held across dlopen and
 * a module's ust_module_init, which take the registry lock (ranked after
 * this one) and glibc's loader lock (taken by fork() after the prepare
 * hooks), never a lock ranked before it. */
void ust_loader_fork_prepare(void)
{
    ust_lock(&ldr_lock);
}

void ust_loader_fork_parent(void)
{
    ust_unlock(&ldr_lock);
}

void ust_loader_fork_child(void)
{
    ust_unlock(&ldr_lock);
}
