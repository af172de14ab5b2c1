/* SPDX-License-Identifier: MIT */
/*
 * autopush.c -- the autopush table of sad(7) and its application on open.
 *
 * Principles of operation
 *   An entry names a device set -- one minor (SAP_ONE), the minors
 *   minor..lastminor (SAP_RANGE), or every minor (SAP_ALL) of a driver's
 *   major -- and up to MAXAPUSH modules.  The device sets of one major never
 *   overlap: a new entry that would share a minor with an existing one is
 *   refused (EEXIST), so a device is covered by at most one entry.  Entries
 *   are kept sorted by (major, first minor).
 *
 *   Entries name the driver by major number, as SVR4 does.  A driver that is
 *   unregistered keeps its entries (a driver registered again under the same
 *   major finds them); SAP_CLEAR removes them.
 *
 *   When an open builds a new stream (not a reopen of a shared one, not a
 *   pipe), the stream head calls its autopush hook, which start.c sets to
 *   ust_autopush_apply (the head does not know this layer); it pushes the
 *   modules of the entry covering the device, first in the list first (so
 *   the last one ends up right under the head), exactly as I_PUSH would.  If
 *   a push fails, the modules it pushed are popped again and the open fails
 *   with that push's error; the stream head then closes the driver.
 *
 *   The table is the user's (issue 22 item 6): every ustreams process of
 *   the user shares it through the file <rundir>/autopush (src/procs/
 *   xautopush.c), so a SAD_SAP here -- `ustreams autopush -f` included --
 *   applies to the streams any process of the user opens afterwards.  The
 *   list below is this process's cache of the file: before a lookup, ap_sync
 *   lstat()s the file and reads it again only when it changed; a change
 *   (SAD_SAP) takes the writers' flock, re-reads the file, applies itself to
 *   the list with the checks above and writes the whole list back (renamed
 *   into place).  The file names drivers by name, since a major is one
 *   process's numbering: entries are kept by driver name, and a major given
 *   by a caller is turned into its driver's name (so an entry follows its
 *   driver's name, not the number).  Without a runtime directory the table
 *   is the process's own.
 *
 * Locking
 *   ap_file_lock (a mutex, held across the file's system calls) serialises
 *   the loads and stores of this process; it is taken before ap_lock.
 *   ap_lock guards the list and every entry on it.  It is a leaf: nothing is
 *   called while it is held.  Module and driver names are checked (through
 *   the registry, which may load a module) before either is taken, and the
 *   list of an entry is copied out under ap_lock before the pushes run.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>

#include "autopush.h"
#include "sthead.h"
#include "strcore.h"
#include "xautopush.h"

struct ap_ent {
    struct ap_ent *next;
    struct ust_xap_ent x; /* as configured; lastminor 0 for SAP_ONE and SAP_ALL */
};

static ust_lock_t ap_file_lock = UST_LOCK_INIT; /* before ap_lock: loads and stores */
static struct ust_xap_sig ap_sig;               /* ap_file_lock: the file last read */
static ust_lock_t ap_lock = UST_LOCK_INIT; /* leaf lock; guards ap_head and every entry */
static struct ap_ent *ap_head;             /* ap_lock: entries by (driver, first minor) */
/* Entries on the list; written under ap_lock, read without it by the open
 * path, which skips the lock while the table is empty (a racing SAD_SAP is
 * ordered by the caller anyway: configure first, then open). */
static atomic_int ap_count;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */
/* The last minor an entry covers. */
static minor_t ap_last(const struct ust_xap_ent *e)
{
    switch (e->cmd) {
    case SAP_RANGE:
        return e->lastminor;
    case SAP_ALL:
        return L_MAXMIN;
    default:
        return e->minor;
    }
}

/* The first minor an entry covers. */
static minor_t ap_first(const struct ust_xap_ent *e)
{
    return e->cmd == SAP_ALL ? 0 : e->minor;
}

/* The entry of driver drv covering minor; ap_lock held. */
static struct ap_ent *ap_find_locked(const char *drv, minor_t minor)
{
    UST_ASSERT_HELD(&ap_lock);
    for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
        if (strcmp(e->x.drv, drv) == 0 && ap_first(&e->x) <= minor && minor <= ap_last(&e->x))
            return e;
    return NULL;
}

/* Does an entry of drv share a minor with first..last?  ap_lock held. */
static int ap_overlaps_locked(const char *drv, minor_t first, minor_t last)
{
    UST_ASSERT_HELD(&ap_lock);
    for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
        if (strcmp(e->x.drv, drv) == 0 && ap_first(&e->x) <= last && first <= ap_last(&e->x))
            return 1;
    return 0;
}

/* Insert n into the sorted list *head (ap_lock held if *head is ap_head). */
static void ap_insert(struct ap_ent **head, struct ap_ent *n)
{
    struct ap_ent **pp = head;
    int c;

    while (*pp != NULL && ((c = strcmp((*pp)->x.drv, n->x.drv)) < 0 ||
                           (c == 0 && ap_first(&(*pp)->x) < ap_first(&n->x))))
        pp = &(*pp)->next;
    n->next = *pp;
    *pp = n;
}

static void ap_remove_locked(struct ap_ent *e)
{
    UST_ASSERT_HELD(&ap_lock);
    for (struct ap_ent **pp = &ap_head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            return;
        }
    }
}

static void ap_free_list(struct ap_ent *e)
{
    while (e != NULL) {
        struct ap_ent *next = e->next;
        free(e);
        e = next;
    }
}

/* sad(7) on the major: EINVAL out of range, ENOSTR no driver; else 0 with
 * the driver's name in drv. */
static int ap_check_major(major_t major, char drv[UST_XAP_DRVSZ + 1])
{
    struct cdevsw *c;

    if (major == 0 || major > L_MAXMAJ)
        return EINVAL;
    c = cdev_lookup_major(major);
    if (c == NULL || c->d_name == NULL)
        return ENOSTR;
    if (strlen(c->d_name) > UST_XAP_DRVSZ)
        return EINVAL;
    strcpy(drv, c->d_name);
    return 0;
}

/* The major of driver drv in this process, 0 if it is not registered (never
 * loads one). */
static major_t ap_major_of(const char *drv)
{
    struct ust_modent *e = ust_reg_find_noload(drv, UST_DRIVER);
    major_t m = 0;

    if (e != NULL) {
        m = (major_t)e->major;
        ust_reg_rele(e);
    }
    return m;
}

/* Is name (a buffer of FMNAMESZ + 1 bytes) a NUL-terminated module name?
 * The registry lookup loads the module on demand if it can. */
static int ap_module_ok(const char name[FMNAMESZ + 1])
{
    struct ust_modent *e;

    if (memchr(name, '\0', FMNAMESZ + 1) == NULL)
        return 0;
    e = ust_reg_find(name, UST_MODULE);
    if (e == NULL)
        return 0;
    ust_reg_rele(e);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The user's file                                                          */
/* ------------------------------------------------------------------------ */

/* Bring the list up to date with the file (force: read it even if it looks
 * unchanged).  ap_file_lock held.  Without a runtime directory, or out of
 * memory, the list stays as it is. */
static void ap_sync(int force)
{
    struct ust_xap_ent *v = NULL;
    struct ap_ent *fresh = NULL, *old;
    int n = 0;

    UST_ASSERT_HELD(&ap_file_lock);
    if (ust_xap_load(&ap_sig, force, &v, &n) != 0)
        return;
    for (int i = 0; i < n; i++) {
        struct ap_ent *e = calloc(1, sizeof(*e));
        if (e == NULL) {
            ap_free_list(fresh);
            free(v);
            memset(&ap_sig, 0, sizeof(ap_sig)); /* try again next time */
            ap_sig.present = -1;
            return;
        }
        e->x = v[i];
        ap_insert(&fresh, e);
    }
    free(v);
    ust_lock(&ap_lock);
    old = ap_head;
    ap_head = fresh;
    atomic_store(&ap_count, n);
    ust_unlock(&ap_lock);
    ap_free_list(old);
}

/* Write the list to the file.  ap_file_lock and the writers' flock held.
 * Returns 0 or an errno. */
static int ap_store(void)
{
    struct ust_xap_ent *v;
    int n = 0, err;

    UST_ASSERT_HELD(&ap_file_lock);
    ust_lock(&ap_lock);
    int count = atomic_load(&ap_count);
    v = malloc((size_t)(count > 0 ? count : 1) * sizeof(*v));
    if (v != NULL)
        for (struct ap_ent *e = ap_head; e != NULL && n < count; e = e->next)
            v[n++] = e->x;
    ust_unlock(&ap_lock);
    if (v == NULL)
        return ENOMEM;
    err = n > UST_XAP_MAXENT ? ENOSPC : ust_xap_store(v, n, &ap_sig);
    free(v);
    return err;
}

/* ------------------------------------------------------------------------ */
/* The table (autopush.h)                                                   */
/* ------------------------------------------------------------------------ */

/* SAP_CLEAR of the entry of drv whose first minor is minor (any minor for
 * SAP_ALL, as sad(7) on SVR4 accepts).  ap_file_lock held. */
static int ap_clear(const char *drv, minor_t minor)
{
    struct ap_ent *e;
    int err = 0;

    ust_lock(&ap_lock);
    e = ap_find_locked(drv, minor);
    if (e == NULL)
        err = ENODEV;
    else if (e->x.cmd == SAP_RANGE && e->x.minor != minor)
        err = ERANGE;
    else {
        ap_remove_locked(e);
        atomic_fetch_sub(&ap_count, 1);
    }
    ust_unlock(&ap_lock);
    if (err == 0)
        free(e);
    return err;
}

/* Configure n (taken over).  ap_file_lock held. */
static int ap_add(struct ap_ent *n)
{
    int err;

    ust_lock(&ap_lock);
    err = ap_overlaps_locked(n->x.drv, ap_first(&n->x), ap_last(&n->x)) ? EEXIST : 0;
    if (err == 0) {
        ap_insert(&ap_head, n);
        atomic_fetch_add(&ap_count, 1);
    }
    ust_unlock(&ap_lock);
    if (err != 0)
        free(n);
    return err;
}

int ust_autopush_set(const struct strapush *sap)
{
    char drv[UST_XAP_DRVSZ + 1];
    struct ap_ent *n = NULL;
    int err, lockfd = -1, shared;

    if (sap == NULL)
        return EINVAL;
    if (sap->sap_cmd < SAP_ONE || sap->sap_cmd > SAP_CLEAR)
        return EINVAL;
    if ((err = ap_check_major(sap->sap_major, drv)) != 0)
        return err;
    if (sap->sap_cmd != SAP_ALL && sap->sap_minor > L_MAXMIN)
        return EINVAL;
    if (sap->sap_cmd != SAP_CLEAR) {
        if (sap->sap_npush < 1 || sap->sap_npush > MAXAPUSH)
            return EINVAL;
        if (sap->sap_cmd == SAP_RANGE &&
            (sap->sap_lastminor <= sap->sap_minor || sap->sap_lastminor > L_MAXMIN))
            return sap->sap_lastminor <= sap->sap_minor ? ERANGE : EINVAL;
        for (uint_t i = 0; i < sap->sap_npush; i++)
            if (!ap_module_ok(sap->sap_list[i]))
                return EINVAL;
        n = calloc(1, sizeof(*n));
        if (n == NULL)
            return ENOSR;
        strcpy(n->x.drv, drv);
        n->x.cmd = (unsigned)sap->sap_cmd;
        n->x.minor = sap->sap_cmd == SAP_ALL ? 0 : sap->sap_minor;
        n->x.lastminor = sap->sap_cmd == SAP_RANGE ? sap->sap_lastminor : 0;
        n->x.npush = sap->sap_npush;
        for (uint_t i = 0; i < sap->sap_npush; i++)
            strcpy(n->x.list[i], sap->sap_list[i]); /* terminated: checked above */
    }

    ust_lock(&ap_file_lock);
    shared = ust_xap_available();
    if (shared) {
        lockfd = ust_xap_lock();
        if (lockfd < 0) {
            ust_unlock(&ap_file_lock);
            free(n);
            return ENOSR;
        }
        ap_sync(1); /* what the other processes configured */
    }
    err = n != NULL ? ap_add(n) : ap_clear(drv, sap->sap_minor);
    if (err == 0 && shared && ap_store() != 0) {
        ap_sync(1); /* the change did not reach the file: undo it here */
        err = ENOSR;
    }
    ust_xap_unlock(lockfd);
    ust_unlock(&ap_file_lock);
    return err;
}

/* Bring the list up to date before a lookup (one lstat when unchanged). */
static void ap_refresh(void)
{
    if (!ust_xap_available())
        return;
    ust_lock(&ap_file_lock);
    ap_sync(0);
    ust_unlock(&ap_file_lock);
}

int ust_autopush_get(struct strapush *sap)
{
    char drv[UST_XAP_DRVSZ + 1];
    struct ap_ent *e;
    major_t major;
    int err;

    if (sap == NULL)
        return EINVAL;
    if ((err = ap_check_major(sap->sap_major, drv)) != 0)
        return err;
    major = sap->sap_major;
    ap_refresh();
    ust_lock(&ap_lock);
    e = ap_find_locked(drv, sap->sap_minor);
    if (e != NULL) {
        memset(sap, 0, sizeof(*sap));
        sap->sap_cmd = (int)e->x.cmd;
        sap->sap_major = major;
        sap->sap_minor = e->x.minor;
        sap->sap_lastminor = e->x.lastminor;
        sap->sap_npush = e->x.npush;
        memcpy(sap->sap_list, e->x.list, sizeof(sap->sap_list));
    }
    ust_unlock(&ap_lock);
    return e != NULL ? 0 : ENODEV;
}

int ust_autopush_vml(const struct str_mlist *list, int n)
{
    if (list == NULL || n < 1)
        return -EINVAL;
    for (int i = 0; i < n; i++)
        if (!ap_module_ok(list[i].l_name))
            return 1;
    return 0;
}

int ust_autopush_foreach(void (*fn)(const struct strapush *sap, const char *drv, void *arg),
                         void *arg)
{
    struct ust_xap_ent *copy = NULL;
    int n = 0, i = 0;

    if (fn == NULL)
        return 0;
    ap_refresh();
    ust_lock(&ap_lock);
    for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
        n++;
    if (n > 0 && (copy = malloc((size_t)n * sizeof(*copy))) != NULL)
        for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
            copy[i++] = e->x;
    ust_unlock(&ap_lock);
    if (n > 0 && copy == NULL)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        struct strapush sap;
        memset(&sap, 0, sizeof(sap));
        sap.sap_cmd = (int)copy[i].cmd;
        sap.sap_major = ap_major_of(copy[i].drv);
        sap.sap_minor = copy[i].minor;
        sap.sap_lastminor = copy[i].lastminor;
        sap.sap_npush = copy[i].npush;
        memcpy(sap.sap_list, copy[i].list, sizeof(sap.sap_list));
        fn(&sap, copy[i].drv, arg);
    }
    free(copy);
    return n;
}

int ust_autopush_lookup(major_t major, minor_t minor, char list[MAXAPUSH][FMNAMESZ + 1])
{
    char drv[UST_XAP_DRVSZ + 1];
    struct ap_ent *e;
    int n = 0;

    if (ap_check_major(major, drv) != 0)
        return 0;
    ap_refresh();
    if (atomic_load(&ap_count) == 0)
        return 0;
    ust_lock(&ap_lock);
    e = ap_find_locked(drv, minor);
    if (e != NULL) {
        n = (int)e->x.npush;
        memcpy(list, e->x.list, sizeof(e->x.list));
    }
    ust_unlock(&ap_lock);
    return n;
}

/* ------------------------------------------------------------------------ */
/* On open: the stream head's autopush hook (autopush.h)                   */
/* ------------------------------------------------------------------------ */
int ust_autopush_apply(struct stdata *sd, major_t major, minor_t minor, cred_t *cr)
{
    char list[MAXAPUSH][FMNAMESZ + 1];
    int n, i, err = 0;

    n = ust_autopush_lookup(major, minor, list);
    for (i = 0; i < n; i++) {
        err = ust_sd_push(sd, list[i], cr);
        if (err != 0)
            break;
    }
    if (err != 0)
        while (i-- > 0)
            ust_sd_pop(sd, cr);
    return err;
}

/* fork() (autopush.h): both locks quiesced; parent and child release them. */
void ust_autopush_fork_prepare(void)
{
    ust_lock(&ap_file_lock);
    ust_lock(&ap_lock);
}

void ust_autopush_fork_release(void)
{
    ust_unlock(&ap_lock);
    ust_unlock(&ap_file_lock);
}
