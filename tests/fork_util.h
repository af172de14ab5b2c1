/* SPDX-License-Identifier: MIT */
/*
 * fork_util.h -- running a function in a fork() child, with a deadline.
 *
 *   fk_run(fn, arg, ms)   fork; the child runs fn(arg) and _exits with its
 *                         result (0 good); the parent waits at most ms
 *                         milliseconds, then kills the child.  Returns the
 *                         child's exit status, FK_HUNG if it had to be
 *                         killed, FK_DIED if it died of a signal, -1 if fork
 *                         failed.  A deadlocked child thus fails the test
 *                         instead of hanging it.
 *                         With USTREAMS_FORK_GDB set, gdb prints a hung
 *                         child's thread stacks first.
 *   fk_start(fn, arg)     fork; the child (killed if this process dies:
 *                         PR_SET_PDEATHSIG) runs fn(arg) and _exits with
 *                         its result; returns the child's pid (-1: fork
 *                         failed).  The parent goes on at once.
 *   fk_wait(pid, ms)      wait at most ms for a child of fk_start: its exit
 *                         status, FK_DIED, or FK_HUNG (killed, its stacks
 *                         printed as fk_run does).
 *   FK_CHILD_FAILED()     in the child: nonzero if a CHECK failed in the
 *                         child (the counters are copies of the parent's,
 *                         so fk_run snapshots them at the fork).
 *
 * The child always leaves with _exit: no atexit handler or leak check of the
 * parent's state runs there.  Under ThreadSanitizer the child of a threaded
 * process may start threads only with die_after_fork=0, which the test
 * executables set (fk_tsan_options below).
 */
#ifndef UST_TEST_FORK_UTIL_H
#define UST_TEST_FORK_UTIL_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define FK_HUNG 200
#define FK_DIED 201

static long fk_failed_at_fork;

/* ThreadSanitizer reads this hook at start-up: let fork() children start
 * threads (the library's scheduler, timer and bufcall threads). */
__attribute__((used)) const char *__tsan_default_options(void);
__attribute__((used)) const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}

#define FK_CHILD_FAILED() (atomic_load(&check_nfailed) != fk_failed_at_fork)

static inline void fk_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A hung child: its threads' stacks on stderr when USTREAMS_FORK_GDB is set
 * (gdb attaches and prints them), so that a deadlock says where it is. */
static inline void fk_stacks(pid_t pid)
{
    char cmd[128];
    if (!getenv("USTREAMS_FORK_GDB"))
        return;
    snprintf(cmd, sizeof(cmd), "gdb -p %d -batch -ex 'thread apply all bt' >&2 2>/dev/null",
             (int)pid);
    if (system(cmd) != 0)
        fprintf(stderr, "fork_util: could not run gdb on the hung child %d\n", (int)pid);
}

static inline pid_t fk_start(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    fk_failed_at_fork = atomic_load(&check_nfailed);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a parent that failed */
        _exit(fn(arg) != 0 || FK_CHILD_FAILED() ? 1 : 0);
    }
    return pid;
}

static inline int fk_wait(pid_t pid, long ms)
{
    int status = 0;
    for (long waited = 0; waited <= ms; waited++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            if (WIFSIGNALED(status)) /* which signal, for the log */
                fprintf(stderr, "child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
            return WIFEXITED(status) ? WEXITSTATUS(status) : FK_DIED;
        }
        fk_sleep_ms(1);
    }
    fk_stacks(pid);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return FK_HUNG;
}

static inline int fk_run(int (*fn)(void *), void *arg, long ms)
{
    fflush(NULL);
    fk_failed_at_fork = atomic_load(&check_nfailed);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        _exit(fn(arg) != 0 || FK_CHILD_FAILED() ? 1 : 0);
    int status = 0;
    for (long waited = 0;; waited++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (waited >= ms) {
            fk_stacks(pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return FK_HUNG;
        }
        fk_sleep_ms(1);
    }
    if (WIFSIGNALED(status))
        return FK_DIED;
    return WEXITSTATUS(status);
}

/* 1 if name is one of the comma-separated names of list (a test's
 * environment variable picking its variants). */
static inline int fk_name_in(const char *name, const char *list)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        const char *c = strchr(p, ',');
        size_t l = c != NULL ? (size_t)(c - p) : strlen(p);
        if (l == n && strncmp(p, name, n) == 0)
            return 1;
        p += l + (c != NULL);
    }
    return 0;
}

#endif /* UST_TEST_FORK_UTIL_H */
