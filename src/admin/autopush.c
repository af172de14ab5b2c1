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
 * Locking
 *   ap_lock guards the list and every entry on it.  It is a leaf: nothing is
 *   called while it is held.  Module names are checked (through the
 *   registry, which may load a module) before it is taken, and the list of
 *   an entry is copied out under it before the pushes run.
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

struct ap_ent {
    struct ap_ent *next;
    struct strapush sap; /* as configured; sap_lastminor is 0 for SAP_ONE and SAP_ALL */
};

static ust_lock_t ap_lock = UST_LOCK_INIT; /* leaf lock; guards ap_head and every entry */
static struct ap_ent *ap_head;             /* ap_lock: entries by (major, first minor) */
/* Entries on the list; written under ap_lock, read without it by the open
 * path, which skips the lock while the table is empty (a racing SAD_SAP is
 * ordered by the caller anyway: configure first, then open). */
static atomic_int ap_count;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */
/* The last minor an entry covers. */
static minor_t ap_last(const struct strapush *s)
{
    switch (s->sap_cmd) {
    case SAP_RANGE:
        return s->sap_lastminor;
    case SAP_ALL:
        return L_MAXMIN;
    default:
        return s->sap_minor;
    }
}

/* The first minor an entry covers. */
static minor_t ap_first(const struct strapush *s)
{
    return s->sap_cmd == SAP_ALL ? 0 : s->sap_minor;
}

/* The entry of major covering minor; ap_lock held. */
static struct ap_ent *ap_find_locked(major_t major, minor_t minor)
{
    UST_ASSERT_HELD(&ap_lock);
    for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
        if (e->sap.sap_major == major && ap_first(&e->sap) <= minor && minor <= ap_last(&e->sap))
            return e;
    return NULL;
}

/* Does an entry of major share a minor with first..last?  ap_lock held. */
static int ap_overlaps_locked(major_t major, minor_t first, minor_t last)
{
    UST_ASSERT_HELD(&ap_lock);
    for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
        if (e->sap.sap_major == major && ap_first(&e->sap) <= last && first <= ap_last(&e->sap))
            return 1;
    return 0;
}

static void ap_insert_locked(struct ap_ent *n)
{
    struct ap_ent **pp = &ap_head;

    UST_ASSERT_HELD(&ap_lock);
    while (*pp != NULL &&
           ((*pp)->sap.sap_major < n->sap.sap_major || ((*pp)->sap.sap_major == n->sap.sap_major &&
                                                        ap_first(&(*pp)->sap) < ap_first(&n->sap))))
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

/* sad(7) on the major: EINVAL out of range, ENOSTR no driver; else 0. */
static int ap_check_major(major_t major)
{
    if (major == 0 || major > L_MAXMAJ)
        return EINVAL;
    return cdev_lookup_major(major) != NULL ? 0 : ENOSTR;
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

/* SAP_CLEAR: remove the entry whose first minor is sap_minor (any minor for
 * SAP_ALL, as sad(7) on SVR4 accepts). */
static int ap_clear(const struct strapush *sap)
{
    struct ap_ent *e;
    int err = 0;

    ust_lock(&ap_lock);
    e = ap_find_locked(sap->sap_major, sap->sap_minor);
    if (e == NULL)
        err = ENODEV;
    else if (e->sap.sap_cmd == SAP_RANGE && e->sap.sap_minor != sap->sap_minor)
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

/* ------------------------------------------------------------------------ */
/* The table (autopush.h)                                                   */
/* ------------------------------------------------------------------------ */
int ust_autopush_set(const struct strapush *sap)
{
    struct ap_ent *n;
    minor_t first, last;
    int err;

    if (sap == NULL)
        return EINVAL;
    if (sap->sap_cmd < SAP_ONE || sap->sap_cmd > SAP_CLEAR)
        return EINVAL;
    if ((err = ap_check_major(sap->sap_major)) != 0)
        return err;
    if (sap->sap_cmd != SAP_ALL && sap->sap_minor > L_MAXMIN)
        return EINVAL;
    if (sap->sap_cmd == SAP_CLEAR)
        return ap_clear(sap);
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
    n->sap.sap_cmd = sap->sap_cmd;
    n->sap.sap_major = sap->sap_major;
    n->sap.sap_minor = sap->sap_cmd == SAP_ALL ? 0 : sap->sap_minor;
    n->sap.sap_lastminor = sap->sap_cmd == SAP_RANGE ? sap->sap_lastminor : 0;
    n->sap.sap_npush = sap->sap_npush;
    for (uint_t i = 0; i < sap->sap_npush; i++)
        strcpy(n->sap.sap_list[i], sap->sap_list[i]); /* terminated: checked above */
    first = ap_first(&n->sap);
    last = ap_last(&n->sap);

    ust_lock(&ap_lock);
    err = ap_overlaps_locked(n->sap.sap_major, first, last) ? EEXIST : 0;
    if (err == 0) {
        ap_insert_locked(n);
        atomic_fetch_add(&ap_count, 1);
    }
    ust_unlock(&ap_lock);
    if (err != 0)
        free(n);
    return err;
}

int ust_autopush_get(struct strapush *sap)
{
    struct ap_ent *e;
    int err;

    if (sap == NULL)
        return EINVAL;
    if ((err = ap_check_major(sap->sap_major)) != 0)
        return err;
    ust_lock(&ap_lock);
    e = ap_find_locked(sap->sap_major, sap->sap_minor);
    if (e != NULL)
        *sap = e->sap;
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

int ust_autopush_foreach(void (*fn)(const struct strapush *sap, void *arg), void *arg)
{
    struct strapush *copy = NULL;
    int n = 0, i = 0;

    if (fn == NULL)
        return 0;
    ust_lock(&ap_lock);
    for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
        n++;
    if (n > 0 && (copy = malloc((size_t)n * sizeof(*copy))) != NULL)
        for (struct ap_ent *e = ap_head; e != NULL; e = e->next)
            copy[i++] = e->sap;
    ust_unlock(&ap_lock);
    if (n > 0 && copy == NULL)
        return -ENOMEM;
    for (i = 0; i < n; i++)
        fn(&copy[i], arg);
    free(copy);
    return n;
}

int ust_autopush_lookup(major_t major, minor_t minor, char list[MAXAPUSH][FMNAMESZ + 1])
{
    struct ap_ent *e;
    int n = 0;

    if (atomic_load(&ap_count) == 0)
        return 0;
    ust_lock(&ap_lock);
    e = ap_find_locked(major, minor);
    if (e != NULL) {
        n = (int)e->sap.sap_npush;
        memcpy(list, e->sap.sap_list, sizeof(e->sap.sap_list));
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

/* fork() (autopush.h): a leaf, quiesced; parent and child release it. */
void ust_autopush_fork_prepare(void)
{
    ust_lock(&ap_lock);
}

void ust_autopush_fork_release(void)
{
    ust_unlock(&ap_lock);
}
