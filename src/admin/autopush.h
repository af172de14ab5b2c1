/* SPDX-License-Identifier: MIT */
/*
 * autopush.h -- the autopush table (private; src/admin/autopush.c).
 *
 * The table is the user's, shared by every ustreams process of the user
 * through <rundir>/autopush (src/procs/xautopush.h; the rule at the top of
 * autopush.c), or the process's own without a runtime directory.
 * The sad driver (src/admin/sad.c) and the autopush tool use these; the
 * stream head applies the table when an open builds a new stream, through
 * its autopush hook (ust_sd_set_autopush, src/head/sthead.h), which
 * src/admin/start.c sets to ust_autopush_apply.  Errors are positive errno
 * values, as sad(7) lists them.
 */
#ifndef UST_AUTOPUSH_H
#define UST_AUTOPUSH_H

#include <stropts.h>
#include <sys/sad.h>

/*
 * ust_autopush_set -- SAD_SAP: configure (SAP_ONE, SAP_RANGE, SAP_ALL) or
 * remove (SAP_CLEAR) an entry.
 *   Context: any thread; takes the table lock and, to check names, the
 *   registry (which may load a module, see loader.c).  Never called with a
 *   stream head lock held.
 *   Returns 0, or EINVAL (sap NULL, bad sap_cmd, major 0 or above L_MAXMAJ,
 *   minor above L_MAXMIN, sap_npush 0 or above MAXAPUSH, a name that is
 *   unterminated or not a module), ENOSTR (no driver owns the major), EEXIST
 *   (a configured minor overlaps), ERANGE (SAP_RANGE with sap_lastminor <=
 *   sap_minor; SAP_CLEAR of a minor inside a range but not its first),
 *   ENODEV (SAP_CLEAR of a device that is not configured), ENOSR (no memory,
 *   or the user's file could not be locked within 2 s or written: the
 *   table is then unchanged).  Blocking: file system calls on the user's
 *   file, under its flock.
 */
int ust_autopush_set(const struct strapush *sap);

/*
 * ust_autopush_get -- SAD_GAP: fill *sap with the entry covering
 * (sap->sap_major, sap->sap_minor): sap_cmd the entry's kind, sap_minor its
 * first minor (0 for SAP_ALL), sap_lastminor its last (0 for SAP_ONE and
 * SAP_ALL), sap_npush and sap_list (unused slots zeroed).
 *   Context: any thread; takes the table lock.
 *   Returns 0, or EINVAL (NULL, major 0 or above L_MAXMAJ), ENOSTR (no such
 *   driver), ENODEV (not configured).
 */
int ust_autopush_get(struct strapush *sap);
/* (ust_autopush_get and ust_autopush_lookup read the user's file first when
 * lstat shows it changed: a few system calls.) */

/*
 * ust_autopush_vml -- SAD_VML: are all n names modules (registered, or
 * loadable on demand)?
 *   Context: any thread; may load modules (loader.c).
 *   Returns 0 (all valid), 1 (at least one is not), or -EINVAL (n < 1 or
 *   list NULL).
 */
int ust_autopush_vml(const struct str_mlist *list, int n);

/*
 * ust_autopush_foreach -- call fn(entry, driver name, arg) with a copy of
 * every entry of the user's table, in order of driver name then first minor
 * (as SAD_GAP would return it; sap_major is the driver's major in this
 * process, 0 if the driver is not registered here).
 *   Context: any thread; reads the user's file if it changed.  fn runs
 *   without the table lock, on copies taken under it, so it may call back
 *   into the table.
 *   Returns the number of entries visited, or -ENOMEM.
 */
int ust_autopush_foreach(void (*fn)(const struct strapush *sap, const char *drv, void *arg),
                         void *arg);

/* ust_autopush_lookup -- the modules for device (major, minor): copies the
 * list into list (MAXAPUSH slots) and returns the count, 0 if none.
 * Context: any thread; takes the table lock. */
int ust_autopush_lookup(major_t major, minor_t minor, char list[MAXAPUSH][FMNAMESZ + 1]);

struct stdata;

/*
 * ust_autopush_apply -- push the modules configured for (major, minor) on
 * the new stream sd, in order; the stream head's autopush hook
 * (ust_sd_autopush_fn, installed by src/admin/start.c).
 *   Context: blocking (module opens); called by the open that built sd,
 *   after the driver's open succeeded, with no lock held (each push takes
 *   sd_plumb itself); nobody else can reach sd yet.
 *   Returns 0 (also when nothing is configured), or the error of the push
 *   that failed (EINVAL for a module no longer registered, ENOSR, or the
 *   module open's error), after popping the modules pushed before it.
 */
int ust_autopush_apply(struct stdata *sd, major_t major, minor_t minor, cred_t *cr);

/* fork() (src/core/forksafe.h, rank UST_FORK_AUTOPUSH, registered by
 * src/admin/start.c): the table lock is a leaf, quiesced so that the
 * child's opens find the table consistent; parent and child release it
 * alike. */
void ust_autopush_fork_prepare(void);
void ust_autopush_fork_release(void);

#endif /* UST_AUTOPUSH_H */
