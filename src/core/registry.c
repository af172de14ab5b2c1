/* SPDX-License-Identifier: MIT */
/*
 * registry.c -- the table of STREAMS modules and drivers.
 *
 * Principles of operation
 *   Modules (fmodsw) and drivers (cdevsw) register by name.  The two kinds
 *   live in separate namespaces: a module and a driver may carry the same name
 *   (I_PUSH looks among modules, open among drivers), but a name appears at
 *   most once within a kind.  Drivers also own a major device number, unique
 *   among drivers, 1..L_MAXMAJ; asking for major 0 allocates the lowest free
 *   one.
 *
 *   Each registration becomes a struct ust_modent carrying the streamtab, the
 *   D_* flags, and the perimeters shared by every instance of the module (the
 *   D_MTPERMOD inner perimeter and the D_MTOUTPERIM outer one).  The entry's
 *   refs counts the queue pairs (and lookups in progress) that use it; while
 *   refs is non-zero the entry cannot be unregistered, so a stream never sees
 *   its module's entry vanish.  ust_reg_find and ust_reg_find_major take a
 *   reference; whoever got one gives it back with ust_reg_rele.  An entry is
 *   unlinked and freed by unregister, which only happens once refs is zero.
 *
 *   fmod_lookup, cdev_lookup and cdev_lookup_major return the caller's own
 *   registration record and take no reference: they answer "is it there".
 *
 * Locking
 *   reg_lock guards the list and every entry's name, kind and major.  It is the
 *   outermost lock of the executive (see the order in strcore.h): nothing else
 *   is held when it is taken, and while it is held only perimeter
 *   initialization runs (which takes no lock).  refs, nopen and nclose are
 *   atomics, written without it; refs is only *raised from zero* under
 *   reg_lock (by the finds), which is what makes the -EBUSY check of
 *   unregister sound.
 *
 * Built-ins register from ust_init(), through the init hook that the
 * administration layer installs (ust_set_init_hook; the executive does not
 * know the built-ins).  Constructors run ust_init at library start and the
 * lookups call it again (cheaply: the hook is a pthread_once) in case a
 * program's own constructor reaches the registry first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>

#include "strcore.h"

static ust_lock_t reg_lock = UST_LOCK_INIT; /* outermost lock; guards the fields below */
static struct ust_modent *reg_head;         /* reg_lock: entries, in registration order */
static struct ust_modent *reg_tail;         /* reg_lock */

/* The init hook (ust_set_init_hook); NULL: none installed.  Written by the
 * layer above at start-up (release), read by every ust_init (acquire). */
static _Atomic(ust_init_hook_fn) reg_init_hook;
/* Set while this thread runs the init hook, so that the registrations it
 * makes (register_* call ust_init) do not run it again. */
static _Thread_local int reg_initializing;

/* ------------------------------------------------------------------------ */
/* Initialization                                                           */
/* ------------------------------------------------------------------------ */
void ust_set_init_hook(ust_init_hook_fn fn)
{
    atomic_store_explicit(&reg_init_hook, fn, memory_order_release);
}

void ust_init(void)
{
    ust_init_hook_fn fn;

    ust_fork_init();
    if (reg_initializing)
        return;
    fn = atomic_load_explicit(&reg_init_hook, memory_order_acquire);
    if (fn != NULL) {
        reg_initializing = 1;
        fn();
        reg_initializing = 0;
    }
}

__attribute__((constructor)) static void reg_constructor(void)
{
    ust_init();
}

/* ------------------------------------------------------------------------ */
/* Validation                                                               */
/* ------------------------------------------------------------------------ */
/* A name is 1..max characters of [A-Za-z0-9_-]: FMNAMESZ for a module,
 * UST_DRVNAMESZ for a driver (device names such as "ticotsord" are not bound
 * by FMNAMESZ, as in Solaris). */
static bool name_ok(const char *name, size_t max)
{
    size_t n;

    if (name == NULL)
        return false;
    for (n = 0; name[n] != '\0'; n++) {
        unsigned char c = (unsigned char)name[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok || n >= max)
            return false;
    }
    return n > 0;
}

/* A streamtab needs both upper qinits, each with its module_info, and an open
 * routine on the read side (the only side whose open is called). */
static bool streamtab_ok(const struct streamtab *st)
{
    if (st == NULL || st->st_rdinit == NULL || st->st_wrinit == NULL)
        return false;
    if (st->st_rdinit->qi_minfo == NULL || st->st_wrinit->qi_minfo == NULL)
        return false;
    return st->st_rdinit->qi_qopen != NULL;
}

/* ------------------------------------------------------------------------ */
/* List helpers (reg_lock held)                                             */
/* ------------------------------------------------------------------------ */
static struct ust_modent *find_name_locked(const char *name, int kind)
{
    UST_ASSERT_HELD(&reg_lock);
    for (struct ust_modent *e = reg_head; e != NULL; e = e->next)
        if (e->kind == kind && strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

static struct ust_modent *find_major_locked(major_t major)
{
    UST_ASSERT_HELD(&reg_lock);
    for (struct ust_modent *e = reg_head; e != NULL; e = e->next)
        if (e->kind == UST_DRIVER && e->major == major)
            return e;
    return NULL;
}

/* Lowest major >= 1 no driver owns, or 0 when all are taken.  The table is
 * small (tens of drivers), so a scan per candidate is fine. */
static major_t free_major_locked(void)
{
    for (major_t m = 1; m <= L_MAXMAJ; m++)
        if (find_major_locked(m) == NULL)
            return m;
    return 0;
}

static void append_locked(struct ust_modent *e)
{
    UST_ASSERT_HELD(&reg_lock);
    e->next = NULL;
    if (reg_tail != NULL)
        reg_tail->next = e;
    else
        reg_head = e;
    reg_tail = e;
}

static void unlink_locked(struct ust_modent *e)
{
    struct ust_modent *prev = NULL;

    UST_ASSERT_HELD(&reg_lock);
    for (struct ust_modent *p = reg_head; p != NULL; prev = p, p = p->next) {
        if (p != e)
            continue;
        if (prev != NULL)
            prev->next = e->next;
        else
            reg_head = e->next;
        if (reg_tail == e)
            reg_tail = prev;
        e->next = NULL;
        return;
    }
}

static struct ust_modent *entry_new(int kind, const char *name, struct streamtab *st, uint_t flag)
{
    struct ust_modent *e = calloc(1, sizeof(*e));

    if (e == NULL)
        return NULL;
    e->kind = kind;
    strcpy(e->name, name); /* length checked by name_ok */
    e->str = st;
    e->flag = flag;
    ust_perim_init(&e->permod);
    ust_perim_init(&e->outer);
    atomic_init(&e->refs, 0);
    atomic_init(&e->nopen, 0);
    atomic_init(&e->nclose, 0);
    e->dlhandle = ust_loader_current(); /* issue 4: registered by a loading shared object? */
    e->dynamic = e->dlhandle != NULL;
    return e;
}

/* Unlink e if nothing uses it.  reg_lock held.  Returns 0 or -EBUSY. */
static int remove_locked(struct ust_modent *e)
{
    if (atomic_load(&e->refs) > 0)
        return -EBUSY;
    unlink_locked(e);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Registration (sys/strconf.h)                                             */
/* ------------------------------------------------------------------------ */
/*
 * register_strmod -- make a module available to I_PUSH under fmod->f_name.
 *   Context: any thread; takes the registry lock; may allocate.
 *   Returns 0, or -EINVAL (NULL, bad or too long name, incomplete streamtab),
 *   -EEXIST (a module of that name exists), -ENOMEM.
 */
int register_strmod(struct fmodsw *fmod)
{
    struct ust_modent *e;

    ust_init();
    if (fmod == NULL || !name_ok(fmod->f_name, FMNAMESZ) || !streamtab_ok(fmod->f_str))
        return -EINVAL;
    e = entry_new(UST_MODULE, fmod->f_name, fmod->f_str, fmod->f_flag);
    if (e == NULL)
        return -ENOMEM;
    e->fmod = fmod;

    ust_lock(&reg_lock);
    if (find_name_locked(e->name, UST_MODULE) != NULL) {
        ust_unlock(&reg_lock);
        free(e);
        return -EEXIST;
    }
    append_locked(e);
    ust_unlock(&reg_lock);
    return 0;
}

/*
 * register_strdev -- make a driver available to open under cdev->d_name.
 *   Context: any thread; takes the registry lock; may allocate.
 *   major 0 asks for the lowest free major >= 1.
 *   Returns the major (> 0), or -EINVAL (NULL, bad name, incomplete streamtab,
 *   major above L_MAXMAJ), -EEXIST (name or major taken), -ENOSPC (major 0
 *   and every major taken), -ENOMEM.
 */
int register_strdev(struct cdevsw *cdev, major_t major)
{
    struct ust_modent *e;
    int rc;

    ust_init();
    if (cdev == NULL || !name_ok(cdev->d_name, UST_DRVNAMESZ) || !streamtab_ok(cdev->d_str) ||
        major > L_MAXMAJ)
        return -EINVAL;
    e = entry_new(UST_DRIVER, cdev->d_name, cdev->d_str, cdev->d_flag);
    if (e == NULL)
        return -ENOMEM;
    e->cdev = cdev;

    ust_lock(&reg_lock);
    if (find_name_locked(e->name, UST_DRIVER) != NULL) {
        rc = -EEXIST;
        goto fail;
    }
    if (major == 0) {
        major = free_major_locked();
        if (major == 0) {
            rc = -ENOSPC;
            goto fail;
        }
    } else if (find_major_locked(major) != NULL) {
        rc = -EEXIST;
        goto fail;
    }
    e->major = major;
    append_locked(e);
    ust_unlock(&reg_lock);
    return (int)major;

fail:
    ust_unlock(&reg_lock);
    free(e);
    return rc;
}

/*
 * unregister_strmod -- remove the module registered under fmod->f_name.
 *   Context: any thread; takes the registry lock.
 *   Returns 0, -EINVAL (NULL or bad name), -ENOENT (no such module), -EBUSY
 *   (a stream uses it).
 */
int unregister_strmod(struct fmodsw *fmod)
{
    struct ust_modent *e;
    int rc;

    if (fmod == NULL || !name_ok(fmod->f_name, FMNAMESZ))
        return -EINVAL;
    ust_init();
    ust_lock(&reg_lock);
    e = find_name_locked(fmod->f_name, UST_MODULE);
    rc = e != NULL ? remove_locked(e) : -ENOENT;
    ust_unlock(&reg_lock);
    if (rc == 0)
        free(e);
    return rc;
}

/*
 * unregister_strdev -- remove a driver, named by cdev->d_name, by major, or
 * both (then they must denote the same driver).
 *   Context: any thread; takes the registry lock.
 *   Returns 0, -EINVAL (neither given, bad name, major above L_MAXMAJ),
 *   -ENOENT (no such driver, or name and major disagree), -EBUSY (in use).
 */
int unregister_strdev(struct cdevsw *cdev, major_t major)
{
    struct ust_modent *e;
    int rc;

    if ((cdev == NULL && major == 0) || major > L_MAXMAJ)
        return -EINVAL;
    if (cdev != NULL && !name_ok(cdev->d_name, UST_DRVNAMESZ))
        return -EINVAL;
    ust_init();
    ust_lock(&reg_lock);
    if (cdev != NULL) {
        e = find_name_locked(cdev->d_name, UST_DRIVER);
        if (e != NULL && major != 0 && e->major != major)
            e = NULL;
    } else {
        e = find_major_locked(major);
    }
    rc = e != NULL ? remove_locked(e) : -ENOENT;
    ust_unlock(&reg_lock);
    if (rc == 0)
        free(e);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Public lookups                                                           */
/* ------------------------------------------------------------------------ */
/*
 * fmod_lookup / cdev_lookup / cdev_lookup_major -- the registration record of
 * a module or driver, or NULL.
 *   Context: any thread; takes the registry lock.  No reference is taken: the
 *   record may be unregistered as soon as the call returns.
 */
struct fmodsw *fmod_lookup(const char *name)
{
    struct ust_modent *e;
    struct fmodsw *f = NULL;

    if (!name_ok(name, FMNAMESZ))
        return NULL;
    ust_init();
    ust_lock(&reg_lock);
    e = find_name_locked(name, UST_MODULE);
    if (e != NULL)
        f = e->fmod;
    ust_unlock(&reg_lock);
    return f;
}

struct cdevsw *cdev_lookup(const char *name)
{
    struct ust_modent *e;
    struct cdevsw *c = NULL;

    if (!name_ok(name, UST_DRVNAMESZ))
        return NULL;
    ust_init();
    ust_lock(&reg_lock);
    e = find_name_locked(name, UST_DRIVER);
    if (e != NULL)
        c = e->cdev;
    ust_unlock(&reg_lock);
    return c;
}

struct cdevsw *cdev_lookup_major(major_t major)
{
    struct ust_modent *e;
    struct cdevsw *c = NULL;

    if (major == 0 || major > L_MAXMAJ)
        return NULL;
    ust_init();
    ust_lock(&reg_lock);
    e = find_major_locked(major);
    if (e != NULL)
        c = e->cdev;
    ust_unlock(&reg_lock);
    return c;
}

/* ------------------------------------------------------------------------ */
/* Executive interface (strcore.h)                                          */
/* ------------------------------------------------------------------------ */
/*
 * ust_reg_find -- the entry of the module (kind UST_MODULE) or driver
 * (UST_DRIVER) called name, with a reference taken; NULL if none.
 *   Context: any thread; takes the registry lock.  The caller gives the
 *   reference back with ust_reg_rele once the pair it made is freed (or at
 *   once if it made none).  On a miss the module loader (loader.c) looks for
 *   a shared object of that name; it may block while one is loaded.
 */
struct ust_modent *ust_reg_find(const char *name, int kind)
{
    struct ust_modent *e = ust_reg_find_noload(name, kind);

    if (e == NULL && name_ok(name, FMNAMESZ)) /* issue 4: a miss tries the module loader */
        e = ust_loader_try(name, kind);
    return e;
}

/* ust_reg_find_noload -- as ust_reg_find, without loading on a miss. */
struct ust_modent *ust_reg_find_noload(const char *name, int kind)
{
    struct ust_modent *e;

    if (!name_ok(name, kind == UST_DRIVER ? UST_DRVNAMESZ : FMNAMESZ) ||
        (kind != UST_MODULE && kind != UST_DRIVER))
        return NULL;
    ust_init();
    ust_lock(&reg_lock);
    e = find_name_locked(name, kind);
    if (e != NULL)
        atomic_fetch_add(&e->refs, 1);
    ust_unlock(&reg_lock);
    return e;
}

/* ust_reg_find_major -- as ust_reg_find, for the driver owning major. */
struct ust_modent *ust_reg_find_major(major_t major)
{
    struct ust_modent *e;

    if (major == 0 || major > L_MAXMAJ)
        return NULL;
    ust_init();
    ust_lock(&reg_lock);
    e = find_major_locked(major);
    if (e != NULL)
        atomic_fetch_add(&e->refs, 1);
    ust_unlock(&reg_lock);
    return e;
}

/*
 * ust_reg_hold / ust_reg_rele -- take another reference on an entry the caller
 * already holds one on, and give one back.
 *   Context: any thread; no lock (atomic).
 */
void ust_reg_hold(struct ust_modent *e)
{
    atomic_fetch_add(&e->refs, 1);
}

void ust_reg_rele(struct ust_modent *e)
{
    char name[UST_DRVNAMESZ + 1];
    int kind = e->kind, dyn = e->dynamic; /* issue 4 loader: read while e surely lives */
    long was;

    if (dyn)
        memcpy(name, e->name, sizeof(name));
    was = atomic_fetch_sub(&e->refs, 1);
    if (was <= 0)
        cmn_err(CE_PANIC, "ustreams: registry reference underflow on \"%s\"", e->name);
    if (was == 1 && dyn) /* the last user of a loaded entry: maybe unload it */
        ust_loader_idle(name, kind);
}

/*
 * ust_reg_foreach -- call fn(e, arg) for every entry, in registration order.
 *   Context: any thread.  Locking: fn runs under the registry lock, so it must
 *   not call into the registry nor take any lock that may be held while the
 *   registry lock is wanted (it can take any other executive lock: the
 *   registry lock is outermost).
 */
void ust_reg_foreach(void (*fn)(struct ust_modent *e, void *arg), void *arg)
{
    if (fn == NULL)
        return;
    ust_init();
    ust_lock(&reg_lock);
    for (struct ust_modent *e = reg_head; e != NULL; e = e->next)
        fn(e, arg);
    ust_unlock(&reg_lock);
}

/* ------------------------------------------------------------------------ */
/* fork() (forksafe.c)                                                      */
/* ------------------------------------------------------------------------ */
/* Quiesced: the child looks drivers and modules up.  Nothing is taken under
 * reg_lock, so prepare may take it after the head, loader and driver locks. */
void ust_reg_fork_prepare(void)
{
    ust_lock(&reg_lock);
}

void ust_reg_fork_parent(void)
{
    ust_unlock(&reg_lock);
}

/* The shared perimeters (D_MTPERMOD, D_MTOUTPERIM, legacy) may have had
 * holders and deferred operations of the parent's threads: in the child
 * nobody is inside them, and what is deferred belongs to the parent's
 * streams, so they restart empty (a new instance in the child would
 * otherwise wait for ever for a holder that does not exist). */
void ust_reg_fork_child(void)
{
    for (struct ust_modent *e = reg_head; e != NULL; e = e->next) {
        ust_perim_fork_reset(&e->permod);
        ust_perim_fork_reset(&e->outer);
    }
    ust_perim_fork_reset(&ust_legacy_perim);
    ust_unlock(&reg_lock);
}
