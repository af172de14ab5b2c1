/* SPDX-License-Identifier: MIT */
/*
 * perftest_run.h -- the pieces of one `ustreams perftest` run that its two
 * drivers share: the threaded one (tools/perftest.c: a writer thread and a
 * reader thread per pair) and the process one (tools/perftest_procs.c,
 * --procs: the reader of each pair in a child process, the writer a thread of
 * the parent).  The loops, the setting up of one end and the counters live in
 * perftest.c; the drivers differ only in where the reader runs and how its
 * end of the run is waited for.
 */
#ifndef UST_TOOLS_PERFTEST_RUN_H
#define UST_TOOLS_PERFTEST_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "perftest.h"

#define UST_PERFTEST_MAX_PAIRS 2

/* Exit statuses of perftest: 0 measured; 2 a failure (bad options, a loop or
 * a process failed, totals disagree, blocks outstanding, a hung run); 3 not
 * available: with --procs, ustreams pipes do not cross fork() in this build
 * (the reader process's first call on its inherited end failed with EIO). */
#define UST_PERFTEST_EXIT_FAIL 2
#define UST_PERFTEST_EXIT_NOTAVAIL 3

/* The options of a run (tools/perftest.c parses them). */
struct ust_perftest_opts {
    const struct ust_perftest_impl *impl;
    size_t size;        /* bytes per write */
    double ttime;       /* seconds per interval */
    int iters;          /* intervals */
    double warmup;      /* seconds before the first interval */
    int hold;           /* -H */
    int mread;          /* -M */
    int rfill;          /* -w */
    int full;           /* -F */
    int npush;          /* -p */
    const char *module; /* -m */
    int rw;             /* -r */
    int nonblock;       /* -n */
    long hiwat, lowat;  /* --hiwat/--lowat, -1 unset */
    int quiet;          /* -q */
    int csv;            /* --csv */
    int scale;          /* --scale: two pairs */
    int procs;          /* --procs: the readers are child processes */
};

/* Running totals of one side, published by that side alone. */
struct ust_perftest_count {
    _Alignas(64) atomic_llong ops; /* writes or reads done */
    atomic_llong bytes;            /* bytes moved */
    atomic_int err;                /* errno that ended the loop, 0 none */
};

/* What a reader process found of its own ustreams state once its end was
 * closed (ustreams_quiesce, ustreams_blockstats, ust_sd_lost_wakeups);
 * written by the child before it exits, read by the parent after waitpid. */
struct ust_perftest_child_stats {
    int valid; /* 1 once written */
    int quiesce_timeout;
    long mblks, dblks, bytes, allocs, failures, lost_wakeups;
};

/* Everything one writer/reader pair shares: in a MAP_SHARED anonymous
 * mapping made before any thread or process starts, so that the reader may be
 * a thread or a child process alike.  Lock legend: none; each counter has one
 * writer (its side), `stop` is written by the parent's main thread, `child`
 * by the reader process alone. */
struct ust_perftest_pair {
    struct ust_perftest_count w, r;
    _Alignas(64) atomic_int stop; /* raised by main: the writer stops */
    struct ust_perftest_child_stats child;
};

/* The loops (tools/perftest.c).  The writer makes SIZE-byte writes until
 * ps->stop, then closes fd; the reader reads until end of file, then closes
 * fd.  Each publishes its totals in its side of ps and, if a call fails, the
 * errno in its err.  Context: their own thread or process; blocking. */
void ust_perftest_writer_loop(const struct ust_perftest_opts *o, int fd,
                              struct ust_perftest_pair *ps);
void ust_perftest_reader_loop(const struct ust_perftest_opts *o, int fd,
                              struct ust_perftest_pair *ps);

/* What to print for err, the errno of the call *what of
 * ust_perftest_setup_end: for an I_PUSH that failed with EINVAL, the module
 * is not registered nor loadable, so "MODULE: no such STREAMS module" (the
 * name given to -m, which a bare "Invalid argument" would hide); otherwise
 * strerror(err).  Context: any; the string is static or strerror's. */
const char *ust_perftest_strerror(const struct ust_perftest_opts *o, const char *what, int err);

/* The command line into *o (perftest_opts.c): impls[0..nimpls) are the
 * --peer choices, the first the default.  Exits 0 after --help, 2 with a
 * message naming a bad argument. */
void ust_perftest_parse_args(int argc, char **argv, struct ust_perftest_opts *o,
                             const struct ust_perftest_impl *const *impls, size_t nimpls);

/* Set up one end as the options ask, in the process that will use it: the
 * writer end (writer 1: -p modules, -H) or the reader end (writer 0: -M, -w,
 * --hiwat/--lowat for ustreams); both: -n.  Returns 0, or the errno of the
 * failed call with *what naming it.  Does not print. */
int ust_perftest_setup_end(const struct ust_perftest_opts *o, int fd, int writer,
                           const char **what);

/* The --procs driver (tools/perftest_procs.c). */
struct ust_perftest_procs;

/* Fork one reader process per pair and wait until each has set up its end.
 * In the parent the reader ends rfd[] are closed; in each child every
 * inherited end but its own reader end.  On success *out is the driver and
 * the parent goes on to set up the writer ends and start the writer threads.
 * Returns 0, or an exit status (UST_PERFTEST_EXIT_*) after printing why, with
 * no child left.  Context: the main thread, before any thread is started. */
int ust_perftest_procs_start(const struct ust_perftest_opts *o, struct ust_perftest_pair *ps,
                             int npairs, const int *wfd, const int *rfd,
                             struct ust_perftest_procs **out);

/* 1 if a reader process has already ended because ustreams pipes do not
 * cross fork() (the intervals are then cut short), else 0.  Parent, main
 * thread; does not block. */
int ust_perftest_procs_notavail(struct ust_perftest_procs *pp);

/* After ps[].stop was raised (or, for pairs whose writer thread was never
 * started, their writer end closed): join the nwriters writer threads wt[]
 * and reap the readers, each within a deadline (a stuck one is reported as a hung run and
 * the readers are killed); print what went wrong.  Returns 0, or an exit
 * status (UST_PERFTEST_EXIT_*): NOTAVAIL after printing "ustreams: pipes do
 * not cross fork() in this build".  If a writer thread cannot be joined it
 * does not return: it exits the program with UST_PERFTEST_EXIT_FAIL.  Frees
 * pp.  Parent, main thread; blocks up to the deadlines. */
int ust_perftest_procs_finish(struct ust_perftest_procs *pp, pthread_t *wt, int nwriters);

#endif /* UST_TOOLS_PERFTEST_RUN_H */
