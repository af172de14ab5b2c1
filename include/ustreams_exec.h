/* SPDX-License-Identifier: MIT */
/*
 * ustreams_exec.h -- ustreams' own controls over the STREAMS executive:
 * block accounting, the scheduler, shutdown, and fault injection for tests.
 */
#ifndef _USTREAMS_EXEC_H
#define _USTREAMS_EXEC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Outstanding message blocks, summed over every thread. */
struct ustreams_blockstats {
    long mblks;       /* msgb allocated and not freed */
    long dblks;       /* datab allocated and not freed */
    long bytes;       /* data bytes in outstanding datab */
    long allocs;      /* allocb/esballoc/dupb calls that succeeded */
    long failures;    /* allocations that failed (no memory, or injected) */
};
void ustreams_blockstats(struct ustreams_blockstats *st);

/* Set the number of scheduler threads (1..256); takes effect for threads not yet
 * started (call before the first stream).  The environment variable
 * USTREAMS_SCHED_THREADS does the same.  Returns 0 or EINVAL. */
int ustreams_set_sched_threads(int n);
int ustreams_sched_threads(void);

/* Wait until no service procedure is scheduled or running and no timeout or
 * bufcall callback is due within the next tick.  Returns 0, or ETIMEDOUT after
 * timeout_ms milliseconds. */
int ustreams_quiesce(long timeout_ms);

/* Stop and join every executive thread (scheduler, timer, bufcall).  Service
 * procedures already on the run lists run first; timeouts not yet due are
 * cancelled (they never fire); pending bufcalls wait until the executive
 * restarts, which it does on demand. */
void ustreams_shutdown(void);

/* Make the next n block allocations fail as if memory were exhausted (0 turns
 * the injection off).  For tests of the out-of-memory paths. */
void ustreams_fail_allocs(long n);

/* Switches for the performance mechanisms, so that their share can be measured.
 * Returns the previous value. */
int ustreams_set_block_cache(int on); /* per-thread block caches (default on) */

#ifdef __cplusplus
}
#endif

#endif /* _USTREAMS_EXEC_H */
