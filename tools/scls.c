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
 * Without -P the table comes from the sc module, as an outside program
 * gets it: open /dev/streams/sad, push "sc", I_STR SC_IOC_LIST (once for
 * the count, once for the entries; <sys/sc.h>): names, kind (major 0: a
 * module), ids, packet sizes, water marks, majors and the open and close
 * counts.  What SC_IOC_LIST does not carry (MT flags, linkage, references,
 * queue and put/service counts) comes from ustreams_modinfo.  The NAME
 * column is as wide as the longest name.
 *
 * ustreams runs inside the process that uses it: without -P this program
 * shows its own process's registry (the built-ins and what was loaded), so
 * its counters are those of streams it opened (its sad stream).  A program sees its
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
#include <fcntl.h>
#include <stropts.h>
#include <sys/sc.h>
#include <ustreams.h>
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

/* SC_IOC_LIST on fd (sc pushed): the entries, malloc'ed, in *out; their
 * number, or -1 with errno. */
static int sc_list(int fd, struct sc_mlist **out)
{
    struct sc_list l = {0, NULL};
    struct strioctl ic = {.ic_cmd = SC_IOC_LIST, .ic_timout = 0, .ic_len = sizeof(l),
                          .ic_dp = (char *)&l};
    *out = NULL;
    for (;;) { /* the registry may grow between the count and the copy */
        int room = l.sc_nmods;
        if (strm_ioctl(fd, I_STR, &ic) < 0)
            return -1;
        if (l.sc_nmods <= room)
            return l.sc_nmods;
        free(*out);
        *out = calloc((size_t)l.sc_nmods, sizeof(**out));
        if (*out == NULL) {
            errno = ENOMEM;
            return -1;
        }
        l.sc_mlist = *out;
        ic.ic_len = sizeof(l);
    }
}

/* The table scls prints: the sc module's answer, completed from
 * ustreams_modinfo (see the top).  The number of entries in *vp, or -1. */
static int scls_table(struct ustreams_modinfo **vp)
{
    struct sc_mlist *ml = NULL;
    struct ustreams_modinfo *v = NULL, *extra = NULL;
    int n = -1, nx = 0;
    int fd = strm_open("/dev/streams/sad", O_RDONLY);
    if (fd < 0)
        return -1;
    if (strm_ioctl(fd, I_PUSH, "sc") < 0 || (n = sc_list(fd, &ml)) < 0)
        goto out;
    int cap = ustreams_modinfo(NULL, 0);
    extra = cap > 0 ? calloc((size_t)cap, sizeof(*extra)) : NULL;
    nx = extra ? ustreams_modinfo(extra, cap) : 0;
    if (nx > cap)
        nx = cap;
    v = calloc((size_t)(n > 0 ? n : 1), sizeof(*v));
    if (v == NULL) {
        errno = ENOMEM;
        n = -1;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const struct sc_mlist *m = &ml[i];
        struct ustreams_modinfo *mi = &v[i];
        /* sc's names are longer than the registry's (which fit modinfo) */
        size_t nl = strnlen(m->name, sizeof(m->name));
        if (nl >= sizeof(mi->name))
            nl = sizeof(mi->name) - 1;
        memcpy(mi->name, m->name, nl);
        mi->name[nl] = '\0';
        mi->kind = m->major > 0 ? USTREAMS_DRIVER : USTREAMS_MODULE;
        mi->major = m->major > 0 ? (int)m->major : -1;
        mi->idnum = m->mi[0].mi_idnum;
        mi->minpsz = (long)m->mi[0].mi_minpsz;
        mi->maxpsz = (long)m->mi[0].mi_maxpsz;
        mi->hiwat = m->mi[0].mi_hiwat;
        mi->lowat = m->mi[0].mi_lowat;
        mi->nopen = m->ms[0].ms_ocnt;
        mi->nclose = m->ms[0].ms_ccnt;
        for (int j = 0; j < nx; j++)
            if (extra[j].kind == mi->kind && strcmp(extra[j].name, mi->name) == 0) {
                mi->flag = extra[j].flag;
                mi->dynamic = extra[j].dynamic;
                mi->refs = extra[j].refs;
                mi->nqueues = extra[j].nqueues;
                mi->nput = extra[j].nput;
                mi->nsrv = extra[j].nsrv;
            }
    }
out:
    free(ml);
    free(extra);
    strm_close(fd);
    *vp = v;
    return n;
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
    n = scls_table(&v);
    if (n < 0) {
        fprintf(stderr, "scls: SC_IOC_LIST: %s\n", strerror(errno));
        free(v);
        return 1;
    }
    for (int i = 0; i < nnames; i++) /* report the names that match nothing */
        if (!known(v, n, names[i])) {
            fprintf(stderr, "scls: %s: no such module or driver\n", names[i]);
            rc = 1;
        }
    if (ustreams_print_modinfo(stdout, flags, v, n, names, nnames) < 0) {
        fprintf(stderr, "scls: %s\n", strerror(errno));
        rc = 1;
    }
    free(v);
    return rc;
}
