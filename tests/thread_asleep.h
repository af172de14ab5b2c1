/* SPDX-License-Identifier: MIT */
/*
 * thread_asleep.h -- for tests that signal or wake a thread blocked in the
 * library: is it asleep in futex(2) yet?  A signal sent before the thread
 * reaches its sleep (while it starts, or spins) runs the handler without
 * interrupting anything, and the call it then makes sleeps on.
 */
#ifndef UST_TEST_THREAD_ASLEEP_H
#define UST_TEST_THREAD_ASLEEP_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Is thread tid (of this process) inside futex(2) now? */
static inline int thread_in_futex(int tid)
{
    char path[64], line[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(line, sizeof(line), f) != NULL && atol(line) == SYS_futex;
    fclose(f);
    return ok;
}

/* Wait up to timeout_ms until the thread whose id *tid holds (0 until the
 * thread stored it) has been inside futex(2) at two looks 20 ms apart (past
 * its spin, settled in its sleep), or *done turns non-zero (done may be
 * NULL).  1 if asleep, 0 if not. */
static inline int thread_wait_asleep(const atomic_int *tid, const atomic_int *done, long timeout_ms)
{
    struct timespec pause = {0, 2 * 1000 * 1000}, settle = {0, 20 * 1000 * 1000};
    for (long waited = 0; waited < timeout_ms; waited += 2) {
        if (done && atomic_load(done))
            return 0;
        int t = atomic_load(tid);
        if (t && thread_in_futex(t)) {
            nanosleep(&settle, NULL);
            waited += 20;
            if (thread_in_futex(t))
                return 1;
        }
        nanosleep(&pause, NULL);
    }
    return 0;
}

#endif /* UST_TEST_THREAD_ASLEEP_H */
