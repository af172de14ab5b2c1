/* SPDX-License-Identifier: MIT */
/*
 * scls.c -- list the STREAMS drivers and modules (scls(8)).
 *
 *   ustreams scls [-l] [-c] [-r] [-a] [-P] [NAME...]
 *
 * Without options: the name of every registered driver and module, one a
 * line, in registration order.  With options: a header line, then one line
 * per entry, "NAME KIND" followed by the columns of each option given:
 *   -l  long:   ID (mi_idnum) MINPSZ MAXPSZ (INF: no limit) HIWAT LOWAT FLAGS
 *               (the MT level and driver flags decoded: D_MP, D_MTPERMOD,
 *               D_MTQPAIR, D_MTPERQ, D_MTOCEXCL, D_MTPUTSHARED, D_MTOUTPERIM,
 *               D_MTSVCSHARED, D_CLONE; D_LEGACY when none)
 *   -c  counts: OPENS CLOSES (open and close routine calls) QUEUES PUTS SRVS
 *               (its queues in the open streams and their put and service
 *               procedure calls)
 *   -r  registration: MAJOR (drivers; "-" for modules) LINKAGE ("static":
 *               linked into the program, "dynamic": loaded from a shared
 *               object) REFS (queue pairs using it)
 *   -a  all of -l, -c and -r.
 *   -P  processes: instead of this program's own registry, the table of
 *       every ustreams process of the user that published itself (every
 *       process that made a stream; src/admin/publish.c), each after a line
 *       "process PID COMMAND", in the order of their pids.  NAMEs a process
 *       does not know are skipped there silently.
 * NAMEs restrict the listing to those entries, in the order given.
 *
 * ustreams runs inside the process that uses it: without -P this program
 * shows its own process's registry (the built-ins and what was loaded), so
 * its counters are those of streams it opened, none.  A program sees its
 * own live counters with ustreams_print_modules() or ustreams_modinfo(),
 * which is what this tool calls, here or (-P) in each process asked.
 *
 * Exit status: 0; 1 when a NAME is not registered (reported on stderr;
 * without -P), output failed, or (-P) the runtime directory was refused;
 * 2 for a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ustreams_exec.h>
#include "commands.h"
#include "procs.h"
#include "publish.h"

void ust_usage_scls(FILE *f)
{
    fprintf(f, "usage: ustreams scls [-l] [-c] [-r] [-a] [-P] [NAME...]\n");
}

/* 1 if name is a registered module or driver (v: n entries). */
static int known(const struct ustreams_modinfo *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return 1;
    return 0;
}

/* -P: the table of every published process ("modules FLAGS NAME...",
 * publish.h).  The exit status. */
static int scls_procs(int flags, const char *const *names, int nnames)
{
    char req[UST_PUBLISH_LINE_MAX];
    size_t len = (size_t)snprintf(req, sizeof(req), "modules %d", flags);
    for (int i = 0; i < nnames; i++) {
        if (strpbrk(names[i], " \t\n;") != NULL || strlen(names[i]) > 31) {
            fprintf(stderr, "scls: %s: not a module or driver name\n", names[i]);
            return 1;
        }
        len += (size_t)snprintf(req + len, len < sizeof(req) ? sizeof(req) - len : 0, " %s",
                                names[i]);
        if (len >= sizeof(req)) {
            fprintf(stderr, "scls: too many names\n");
            return 2;
        }
    }
    if (ust_procs_query("scls", req, stdout) < 0)
        return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}

int ust_cmd_scls(int argc, char **argv)
{
    int flags = 0, c, rc = 0, n, procs = 0;
    struct ustreams_modinfo *v;

    while ((c = getopt(argc, argv, "lcrahP")) != -1) {
        switch (c) {
        case 'l':
            flags |= USTREAMS_LS_LONG;
            break;
        case 'c':
            flags |= USTREAMS_LS_COUNTS;
            break;
        case 'r':
            flags |= USTREAMS_LS_REG;
            break;
        case 'a':
            flags |= USTREAMS_LS_LONG | USTREAMS_LS_COUNTS | USTREAMS_LS_REG;
            break;
        case 'P':
            procs = 1;
            break;
        case 'h':
            ust_usage_scls(stdout);
            return 0;
        default:
            ust_usage_scls(stderr);
            return 2;
        }
    }
    int nnames = argc - optind;
    const char *const *names = nnames > 0 ? (const char *const *)&argv[optind] : NULL;

    if (procs)
        return scls_procs(flags, names, nnames);
    if (names) { /* report the names that match nothing */
        int cap = ustreams_modinfo(NULL, 0);
        v = cap > 0 ? calloc((size_t)cap, sizeof(*v)) : NULL;
        n = cap < 0 || (cap > 0 && !v) ? -1 : v ? ustreams_modinfo(v, cap) : 0;
        if (n < 0) {
            fprintf(stderr, "scls: %s\n", strerror(errno ? errno : ENOMEM));
            free(v);
            return 1;
        }
        if (n > cap) /* registered meanwhile: look at what was copied */
            n = cap;
        for (int i = 0; i < nnames; i++)
            if (!known(v, n, names[i])) {
                fprintf(stderr, "scls: %s: no such module or driver\n", names[i]);
                rc = 1;
            }
        free(v);
    }
    if (ustreams_print_modules(stdout, flags, names, nnames) < 0) {
        fprintf(stderr, "scls: %s\n", strerror(errno));
        return 1;
    }
    return rc;
}
