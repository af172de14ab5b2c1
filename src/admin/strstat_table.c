/* SPDX-License-Identifier: MIT */
/*
 * strstat_table.c -- the registry table scls prints (ustreams_print_modules,
 * ustreams_print_modinfo), from the entries ustreams_modinfo copies
 * (strstat.c).
 *
 * Layer: administration (src/admin/).  Locking: none; it prints copies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ustreams_exec.h>

#include "strcore.h"

#include "strstat.h"

/* ------------------------------------------------------------------------ */
/* The table scls prints                                                    */
/* ------------------------------------------------------------------------ */

/* Columns: NAME KIND, then -l's, -c's and -r's, and -l's FLAGS last (the
 * only one of varying width). */
static void print_header(FILE *out, int flags, int w)
{
    fprintf(out, "%-*s %-6s", w, "NAME", "KIND");
    if (flags & USTREAMS_LS_LONG)
        fprintf(out, " %5s %6s %6s %6s %6s", "ID", "MINPSZ", "MAXPSZ", "HIWAT", "LOWAT");
    if (flags & USTREAMS_LS_COUNTS)
        fprintf(out, " %6s %6s %6s %9s %9s", "OPENS", "CLOSES", "QUEUES", "PUTS", "SRVS");
    if (flags & USTREAMS_LS_REG)
        fprintf(out, " %5s %-7s %4s", "MAJOR", "LINKAGE", "REFS");
    if (flags & USTREAMS_LS_LONG)
        fprintf(out, " %s", "FLAGS");
    fputc('\n', out);
}

static void print_entry(FILE *out, int flags, const struct ustreams_modinfo *mi, int w)
{
    char fl[256];
    if (flags == 0) {
        fprintf(out, "%s\n", mi->name);
        return;
    }
    fprintf(out, "%-*s %-6s", w, mi->name, mi->kind == USTREAMS_DRIVER ? "driver" : "module");
    if (flags & USTREAMS_LS_LONG) {
        fprintf(out, " %5u %6ld", mi->idnum, mi->minpsz);
        if (mi->maxpsz == INFPSZ)
            fprintf(out, " %6s", "INF");
        else
            fprintf(out, " %6ld", mi->maxpsz);
        fprintf(out, " %6lu %6lu", mi->hiwat, mi->lowat);
    }
    if (flags & USTREAMS_LS_COUNTS)
        fprintf(out, " %6ld %6ld %6ld %9ld %9ld", mi->nopen, mi->nclose, mi->nqueues, mi->nput,
                mi->nsrv);
    if (flags & USTREAMS_LS_REG) {
        if (mi->major >= 0)
            fprintf(out, " %5d", mi->major);
        else
            fprintf(out, " %5s", "-");
        fprintf(out, " %-7s %4ld", mi->dynamic ? "dynamic" : "static", mi->refs);
    }
    if (flags & USTREAMS_LS_LONG) {
        ust_dflags_str(fl, sizeof(fl), mi->flag);
        fprintf(out, " %s", fl);
    }
    fputc('\n', out);
}

/*
 * ustreams_print_modules -- print the registry as scls does.
 *   Context and locking: as ustreams_modinfo; may block writing to out.
 *   Returns the number of entries printed, or -1 with errno (EINVAL out
 *   NULL, unknown flags or names NULL with nnames > 0; ENOMEM; a write
 *   error).
 */
int ustreams_print_modules(FILE *out, int flags, const char *const *names, int nnames)
{
    struct ustreams_modinfo *v = NULL;
    int n, printed = 0;

    if (!out || (flags & ~(USTREAMS_LS_LONG | USTREAMS_LS_COUNTS | USTREAMS_LS_REG)) ||
        nnames < 0 || (!names && nnames > 0)) {
        errno = EINVAL;
        return -1;
    }
    /* The registry may grow between the two calls: retry until it fits. */
    for (int cap = 32;; cap *= 2) {
        struct ustreams_modinfo *nv = realloc(v, (size_t)cap * sizeof(*v));
        if (!nv) {
            free(v);
            errno = ENOMEM;
            return -1;
        }
        v = nv;
        n = ustreams_modinfo(v, cap);
        if (n < 0) {
            free(v);
            return -1;
        }
        if (n <= cap)
            break;
    }
    printed = ustreams_print_modinfo(out, flags, v, n, names, nnames);
    free(v);
    return printed;
}

/* Is v[i] printed (names NULL: all)?  The position of its name in names
 * otherwise, -1 if not there. */
static int wanted(const struct ustreams_modinfo *mi, const char *const *names, int nnames)
{
    if (!names)
        return 0;
    for (int k = 0; k < nnames; k++)
        if (names[k] && strcmp(names[k], mi->name) == 0)
            return k;
    return -1;
}

/*
 * ustreams_print_modinfo -- print n entries (as ustreams_modinfo fills
 *   them, from wherever they came: scls gets them from the sc module) as
 *   ustreams_print_modules does; the NAME column is as wide as the longest
 *   name printed.
 *   Context: any thread; no lock.  Returns the number of entries printed,
 *   or -1 with errno (EINVAL; a write error).
 */
int ustreams_print_modinfo(FILE *out, int flags, const struct ustreams_modinfo *v, int n,
                           const char *const *names, int nnames)
{
    int printed = 0, w = 8;

    if (!out || (flags & ~(USTREAMS_LS_LONG | USTREAMS_LS_COUNTS | USTREAMS_LS_REG)) ||
        n < 0 || (!v && n > 0) || nnames < 0 || (!names && nnames > 0)) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (wanted(&v[i], names, nnames) >= 0 && (int)strlen(v[i].name) > w)
            w = (int)strlen(v[i].name);
    errno = 0;
    if (flags)
        print_header(out, flags, w);
    if (!names) {
        for (int i = 0; i < n; i++, printed++)
            print_entry(out, flags, &v[i], w);
    } else {
        for (int k = 0; k < nnames; k++)
            for (int i = 0; i < n; i++)
                if (names[k] && strcmp(names[k], v[i].name) == 0) {
                    print_entry(out, flags, &v[i], w);
                    printed++;
                }
    }
    return ust_out_result(out, printed);
}
