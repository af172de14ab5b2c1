/* SPDX-License-Identifier: MIT */
/*
 * perftest_procs.c -- `ustreams perftest --procs`: the reader of each pair is
 * a child process, the writer a thread of the parent (tools/perftest_run.h).
 *
 * Principles of operation
 *   - The pair is made in the parent (strm_pipe, pipe(2), socketpair(2)), then
 *     fork() once per pair.  The child closes every inherited end but its own
 *     reader end, sets that end up (-M, -w, --hiwat/--lowat, -n), says "ready"
 *     on a pipe(2) made before the fork and runs the ordinary reader loop.
 *     The parent closes the reader ends, waits for every "ready", then sets up
 *     the writer ends and starts the writer threads: no byte is written
 *     before the reader's options are in place, as in the threaded mode.
 *   - The counters need no report channel: struct ust_perftest_pair lives in
 *     a MAP_SHARED anonymous mapping, so the child's reader loop publishes
 *     into the very counters the parent samples.  Before it exits, a ustreams
 *     reader writes its own block counters there too (the `child` field).
 *   - Child exit status: 0, UST_PERFTEST_EXIT_FAIL, or
 *     UST_PERFTEST_EXIT_NOTAVAIL when its first call on the inherited ustreams
 *     end fails with EIO (a build whose pipes do not cross fork()).
 *   - Nothing waits forever: "ready" within READY_S, the writers' joins and
 *     the readers' ends within HANG_S of the stop (under bench/sweep.py's own
 *     15 s, so perftest reports the hang itself).  A writer still blocked
 *     then is released by killing the readers (a kernel pipe's writer gets
 *     EPIPE); one that stays blocked ends the program.  A child never
 *     outlives the parent (PR_SET_PDEATHSIG), and every error path kills and
 *     reaps the children it made.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/wait.h>

#include <ustreams_exec.h>

#include "sthead.h"
#include "perftest_run.h"

#define READY_S 10.0 /* a reader process sets up its end within this */
#define HANG_S 8.0   /* writers joined and readers ended this long after the stop */

struct reader_proc {
    pid_t pid;    /* 0 once reaped */
    int ready_fd; /* the parent's end of the readiness pipe, -1 once closed */
    int status;   /* wait status, once reaped */
    int killed;   /* killed by us (hung or on an error path) */
};

struct ust_perftest_procs {
    const struct ust_perftest_opts *o;
    int npairs;
    struct reader_proc rp[UST_PERFTEST_MAX_PAIRS];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* The child                                                                */
/* ------------------------------------------------------------------------ */

/* The reader process of pair `me`.  Context: a child just forked, one
 * thread; never returns. */
static _Noreturn void reader_child(const struct ust_perftest_opts *o, struct ust_perftest_pair *ps,
                                   int npairs, const int *wfd, const int *rfd, int me, int ready,
                                   pid_t parent)
{
    const struct ust_perftest_impl *im = o->impl;
    struct ust_perftest_pair *mine = &ps[me];

    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before the prctl */
        _exit(UST_PERFTEST_EXIT_FAIL);
    for (int p = 0; p < npairs; p++) {
        (void)im->close(wfd[p]);
        if (p != me)
            (void)im->close(rfd[p]);
    }
    struct ustreams_blockstats st0 = {0};
    if (im->streams)
        ustreams_blockstats(&st0);

    const char *what = "";
    int err = ust_perftest_setup_end(o, rfd[me], 0, &what);
    if (err) {
        if (im->streams && err == EIO)
            _exit(UST_PERFTEST_EXIT_NOTAVAIL);
        fprintf(stderr, "perftest: %s: reader process: %s: %s\n", im->name, what,
                ust_perftest_strerror(o, what, err));
        _exit(UST_PERFTEST_EXIT_FAIL);
    }
    if (write(ready, "R", 1) != 1)
        _exit(UST_PERFTEST_EXIT_FAIL);
    close(ready);

    ust_perftest_reader_loop(o, rfd[me], mine);
    err = atomic_load(&mine->r.err);
    if (im->streams && err == EIO && atomic_load(&mine->r.ops) == 0)
        _exit(UST_PERFTEST_EXIT_NOTAVAIL); /* the first read failed */
    if (im->streams) { /* this process's share of the leak check */
        struct ustreams_blockstats st;
        mine->child.quiesce_timeout = ustreams_quiesce(5000) != 0;
        ustreams_blockstats(&st);
        mine->child.mblks = st.mblks - st0.mblks;
        mine->child.dblks = st.dblks - st0.dblks;
        mine->child.bytes = st.bytes - st0.bytes;
        mine->child.allocs = st.allocs - st0.allocs;
        mine->child.failures = st.failures - st0.failures;
        mine->child.lost_wakeups = ust_sd_lost_wakeups();
        mine->child.valid = 1;
    }
    _exit(err ? UST_PERFTEST_EXIT_FAIL : 0);
}

/* ------------------------------------------------------------------------ */
/* Waiting for children                                                     */
/* ------------------------------------------------------------------------ */

/* Reap r if it has ended; 1 if it is (now) reaped. */
static int try_reap(struct reader_proc *r)
{
    if (r->pid <= 0)
        return 1;
    int st;
    pid_t w = waitpid(r->pid, &st, WNOHANG);
    if (w == r->pid || (w < 0 && errno == ECHILD)) {
        r->status = w == r->pid ? st : 0;
        r->pid = 0;
        return 1;
    }
    return 0;
}

static void kill_reap(struct reader_proc *r)
{
    if (r->pid <= 0)
        return;
    r->killed = 1;
    (void)kill(r->pid, SIGKILL);
    while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
        ;
    r->pid = 0;
}

/* Reap r by `deadline` (now_s() clock), polling every 5 ms; 1 reaped, 0 not. */
static int reap_by(struct reader_proc *r, double deadline)
{
    for (;;) {
        if (try_reap(r))
            return 1;
        if (now_s() >= deadline)
            return 0;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

static void kill_all(struct ust_perftest_procs *pp)
{
    for (int p = 0; p < pp->npairs; p++)
        kill_reap(&pp->rp[p]);
}

static void free_procs(struct ust_perftest_procs *pp)
{
    for (int p = 0; p < pp->npairs; p++)
        if (pp->rp[p].ready_fd >= 0)
            close(pp->rp[p].ready_fd);
    free(pp);
}

static int exited_with(const struct reader_proc *r, int code)
{
    return r->pid == 0 && !r->killed && WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
}

static void say_notavail(void)
{
    fprintf(stderr, "perftest: ustreams: pipes do not cross fork() in this build (the reader "
                    "process's first call on its inherited end failed with EIO)\n");
}

/* Wait for r's "ready": 1 ready; 0 it ended first (reaped); -1 timed out
 * (killed). */
static int await_ready(struct reader_proc *r, double deadline)
{
    for (;;) {
        int ms = (int)((deadline - now_s()) * 1000);
        struct pollfd pf = {.fd = r->ready_fd, .events = POLLIN};
        int n = ms > 0 ? poll(&pf, 1, ms) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            kill_reap(r);
            return -1;
        }
        char c = 0;
        ssize_t k = read(r->ready_fd, &c, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 1 && c == 'R')
            return 1;
        if (!reap_by(r, now_s() + HANG_S)) /* it closed the pipe: it is ending */
            kill_reap(r);
        return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* The driver                                                               */
/* ------------------------------------------------------------------------ */

int ust_perftest_procs_start(const struct ust_perftest_opts *o, struct ust_perftest_pair *ps,
                             int npairs, const int *wfd, const int *rfd,
                             struct ust_perftest_procs **out)
{
    const struct ust_perftest_impl *im = o->impl;
    struct ust_perftest_procs *pp = calloc(1, sizeof(*pp));
    int status = UST_PERFTEST_EXIT_FAIL;
    if (!pp) {
        perror("perftest: --procs");
        return status;
    }
    pp->o = o;
    for (int p = 0; p < UST_PERFTEST_MAX_PAIRS; p++)
        pp->rp[p].ready_fd = -1;

    fflush(NULL); /* nothing buffered is written twice */
    pid_t self = getpid();
    for (int me = 0; me < npairs; me++) {
        int rdy[2];
        if (pipe2(rdy, O_CLOEXEC) < 0) {
            perror("perftest: --procs: pipe");
            goto fail;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("perftest: --procs: fork");
            close(rdy[0]);
            close(rdy[1]);
            goto fail;
        }
        if (pid == 0) {
            close(rdy[0]);
            for (int p = 0; p < me; p++)
                close(pp->rp[p].ready_fd);
            reader_child(o, ps, npairs, wfd, rfd, me, rdy[1], self);
        }
        close(rdy[1]);
        pp->rp[me] = (struct reader_proc){.pid = pid, .ready_fd = rdy[0]};
        pp->npairs = me + 1;
    }
    for (int p = 0; p < npairs; p++)
        (void)im->close(rfd[p]);

    double deadline = now_s() + READY_S;
    for (int p = 0; p < npairs; p++) {
        struct reader_proc *r = &pp->rp[p];
        int k = await_ready(r, deadline);
        if (k == 1)
            continue;
        if (k < 0)
            fprintf(stderr, "perftest: pair %d: the reader process did not set up its end in "
                            "%g s (hung run); killed\n", p, READY_S);
        else if (exited_with(r, UST_PERFTEST_EXIT_NOTAVAIL)) {
            say_notavail();
            status = UST_PERFTEST_EXIT_NOTAVAIL;
        } else if (!exited_with(r, UST_PERFTEST_EXIT_FAIL)) /* else it said why */
            fprintf(stderr, "perftest: pair %d: the reader process ended before it was ready "
                            "(wait status %#x)\n", p, (unsigned)r->status);
        goto fail;
    }
    *out = pp;
    return 0;

fail:
    kill_all(pp);
    free_procs(pp);
    return status;
}

int ust_perftest_procs_notavail(struct ust_perftest_procs *pp)
{
    for (int p = 0; p < pp->npairs; p++)
        if (try_reap(&pp->rp[p]) && exited_with(&pp->rp[p], UST_PERFTEST_EXIT_NOTAVAIL))
            return 1;
    return 0;
}

/* Join wt within `secs`: 1 joined, 0 still running. */
static int join_within(pthread_t wt, double secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + (secs > 0 ? secs : 0);
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    int e;
    while ((e = pthread_timedjoin_np(wt, NULL, &ts)) == EINTR)
        ;
    return e == 0;
}

int ust_perftest_procs_finish(struct ust_perftest_procs *pp, pthread_t *wt, int nwriters)
{
    int status = 0;
    double deadline = now_s() + HANG_S;
    for (int p = 0; p < nwriters; p++) {
        if (join_within(wt[p], deadline - now_s()))
            continue;
        fprintf(stderr, "perftest: pair %d: the writer still blocked %g s after the stop (hung "
                        "run); killing the reader processes\n", p, HANG_S);
        status = UST_PERFTEST_EXIT_FAIL;
        kill_all(pp);
        if (!join_within(wt[p], 2.0)) {
            fprintf(stderr, "perftest: pair %d: the writer stays blocked; giving up\n", p);
            fflush(NULL);
            _exit(UST_PERFTEST_EXIT_FAIL);
        }
    }
    int notavail = 0;
    for (int p = 0; p < pp->npairs; p++) {
        struct reader_proc *r = &pp->rp[p];
        int was_killed = r->killed;
        if (!reap_by(r, deadline)) {
            fprintf(stderr, "perftest: pair %d: the reader process did not end %g s after the "
                            "stop (hung run: no end of file?); killed\n", p, HANG_S);
            kill_reap(r);
            status = UST_PERFTEST_EXIT_FAIL;
            continue;
        }
        if (was_killed || r->killed)
            continue; /* said above */
        if (WIFSIGNALED(r->status)) {
            fprintf(stderr, "perftest: pair %d: the reader process was killed by signal %d (%s)\n",
                    p, WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
            status = UST_PERFTEST_EXIT_FAIL;
        } else if (exited_with(r, UST_PERFTEST_EXIT_NOTAVAIL)) {
            notavail = 1;
        } else if (!exited_with(r, 0)) {
            status = UST_PERFTEST_EXIT_FAIL; /* the reader's errno is reported by the caller */
        }
    }
    free_procs(pp);
    if (notavail) {
        say_notavail();
        return UST_PERFTEST_EXIT_NOTAVAIL;
    }
    return status;
}
