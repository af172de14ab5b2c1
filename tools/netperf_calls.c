/* SPDX-License-Identifier: MIT */
/*
 * netperf_calls.c -- counting the system calls of a process for
 * `ustreams netperf` (tools/netperf_run.h): the tracepoint
 * raw_syscalls:sys_enter through perf_event_open(2), as `perf stat -e
 * raw_syscalls:sys_enter` counts it, without perf(1).
 *
 * Principles of operation
 *   - The tracepoint's id is read from tracefs (/sys/kernel/tracing, or
 *     /sys/kernel/debug/tracing): readable by root, or as the kernel's
 *     tracefs permissions allow.
 *   - One counter per task of the process (/proc/PID/task), each with
 *     inherit set: a thread the task creates later is counted in it, and a
 *     read of an inherited counter adds its live children's counts (the
 *     kernel's perf_event_read_value).  So a process's library threads are
 *     counted whether they were made before or after the counter.
 *   - Counting another process needs the permission to trace it (root, or
 *     the same user with kernel.perf_event_paranoid low enough); a refusal
 *     is reported in why, never guessed around.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "netperf_run.h"

#define EVENT "raw_syscalls/sys_enter"

/* The tracepoint's id, or -1 with why. */
static long tracepoint_id(char *why)
{
    static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
    int first_errno = 0;
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/events/%s/id", roots[i], EVENT);
        FILE *f = fopen(path, "r");
        if (!f) {
            if (!first_errno)
                first_errno = errno;
            continue;
        }
        long id = -1;
        if (fscanf(f, "%ld", &id) != 1)
            id = -1;
        fclose(f);
        if (id >= 0)
            return id;
    }
    snprintf(why, NP_ERRLEN, "no tracepoint raw_syscalls:sys_enter in tracefs: %s",
             strerror(first_errno ? first_errno : ENOENT));
    return -1;
}

static int paranoid(void)
{
    int v = -99;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -99;
        fclose(f);
    }
    return v;
}

int np_calls_open(struct np_calls *c, pid_t pid)
{
    char path[64];
    struct perf_event_attr attr;
    long id;

    c->n = 0;
    c->why[0] = '\0';
    if ((id = tracepoint_id(c->why)) < 0)
        return -1;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = (unsigned long long)id;
    attr.inherit = 1;
    attr.exclude_kernel = 0;
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) {
        snprintf(c->why, NP_ERRLEN, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(de->d_name, &end, 10);
        if (*end || end == de->d_name)
            continue;
        if (c->n == NP_CALLS_TASKS) {
            snprintf(c->why, NP_ERRLEN, "more than %d threads in process %d", NP_CALLS_TASKS,
                     (int)pid);
            break;
        }
        int fd = (int)syscall(SYS_perf_event_open, &attr, (pid_t)tid, -1, -1,
                              PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (errno == ESRCH)
                continue; /* the thread ended meanwhile */
            snprintf(c->why, NP_ERRLEN,
                     "perf_event_open raw_syscalls:sys_enter (process %d): %s (uid %d, "
                     "kernel.perf_event_paranoid %d)", (int)pid, strerror(errno),
                     (int)getuid(), paranoid());
            break;
        }
        c->fd[c->n++] = fd;
    }
    closedir(d);
    if (c->why[0] || c->n == 0) {
        if (!c->why[0])
            snprintf(c->why, NP_ERRLEN, "process %d has no threads to count", (int)pid);
        np_calls_close(c);
        return -1;
    }
    return 0;
}

long long np_calls_read(const struct np_calls *c)
{
    long long sum = 0;
    if (c->n == 0)
        return -1;
    for (int i = 0; i < c->n; i++) {
        unsigned long long v;
        if (read(c->fd[i], &v, sizeof(v)) != (ssize_t)sizeof(v))
            return -1;
        sum += (long long)v;
    }
    return sum;
}

void np_calls_close(struct np_calls *c)
{
    for (int i = 0; i < c->n; i++)
        close(c->fd[i]);
    c->n = 0;
}
