/* SPDX-License-Identifier: MIT */
/*
 * ustreams_exec.h -- ustreams' own controls over the STREAMS executive:
 * block accounting, the scheduler, shutdown, and fault injection for tests.
 */
#ifndef _USTREAMS_EXEC_H
#define _USTREAMS_EXEC_H

#include <stddef.h>
#include <stdio.h>

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

/* ---- ustreams extensions: the admin tools' live view (src/admin/strstat.c) ----
 * What scls(8) and strinfo print, available to any program: the counters are
 * the ones the executive keeps, read at the time of the call. */

#define USTREAMS_MODULE 1
#define USTREAMS_DRIVER 2

/* One registered module or driver. */
struct ustreams_modinfo {
    char name[16];          /* f_name / d_name */
    int kind;               /* USTREAMS_MODULE or USTREAMS_DRIVER */
    unsigned short idnum;   /* mi_idnum of the read side's module_info */
    long minpsz, maxpsz;    /* packet sizes (maxpsz -1: INFPSZ, no limit) */
    unsigned long hiwat, lowat; /* water marks */
    unsigned int flag;      /* D_* (MT level, D_CLONE) */
    int major;              /* major device number of a driver, -1 for a module */
    int dynamic;            /* 1: loaded from a shared object; 0: linked in */
    long refs;              /* queue pairs (and lookups) using it now */
    long nopen, nclose;     /* open and close routine calls since registration */
    long nqueues;           /* its queues in the streams open now */
    long nput, nsrv;        /* put and service calls summed over those queues */
};

/* Fill buf with up to max entries of the registry, in registration order.
 * Context: any thread; takes the registry and stream table locks in turn
 * (call from no module procedure).  Returns the number of registered
 * entries (possibly more than max: call again with a larger buffer), or -1
 * with errno EINVAL (max < 0, or buf NULL with max > 0) or ENOMEM. */
int ustreams_modinfo(struct ustreams_modinfo *buf, int max);

/* Flags for ustreams_print_modules (or'ed; 0 prints the names alone). */
#define USTREAMS_LS_LONG 0x1   /* kind, id, packet sizes, water marks, MT flags */
#define USTREAMS_LS_COUNTS 0x2 /* opens, closes, queues, put and service calls */
#define USTREAMS_LS_REG 0x4    /* major, linked in or dynamic, references */

/* Print the registry as a table (what scls prints): one header line when a
 * flag is given, then one line per entry.  names (nnames of them; NULL for
 * every entry) restricts it to those, in the order given; a name that is
 * not registered is skipped.  Context as ustreams_modinfo.  Returns the
 * number of lines of entries printed, or -1 with errno (EINVAL: out NULL,
 * unknown flags, names NULL with nnames > 0; ENOMEM; a write error). */
int ustreams_print_modules(FILE *out, int flags, const char *const *names, int nnames);

/* The same for n entries the caller has (e.g. built from the sc module's
 * SC_IOC_LIST, as scls does); the NAME column is as wide as the longest
 * name printed.  Context: any thread.  Returns the number of lines of
 * entries printed, or -1 with errno (EINVAL: out NULL, unknown flags, n < 0,
 * v NULL with n > 0, names NULL with nnames > 0; a write error). */
int ustreams_print_modinfo(FILE *out, int flags, const struct ustreams_modinfo *v, int n,
                           const char *const *names, int nnames);

/* Print every queue of the stream open on fd, from the head down (across a
 * pipe's twist to the other end's head): name, kind, id, counts, water
 * marks, packet sizes, decoded flags, bands, the first queued messages and
 * the put/service/open/close counters (the output format is described in
 * src/admin/strstat.c).  Context: any thread but a module procedure; the
 * stream is looked at queue by queue (each under its lock), not frozen.
 * Returns 0, or -1 with errno EBADF (fd not open), ENOSTR (not a stream),
 * EINVAL (out NULL), ENOMEM, or the error of writing to out. */
int ustreams_dump_stream(int fd, FILE *out);

/* The same for every stream this process has open (strm_open, strm_pipe),
 * each introduced by its "stream" line.  Returns the number of streams
 * printed, or -1 with errno (EINVAL, ENOMEM, a write error). */
int ustreams_dump_all(FILE *out);

/*
 * Loadable modules (src/core/loader.c).  A module or driver built as a shared
 * object libust_<name>.so (or <name>.so) exports int ust_module_init(void),
 * which registers it with register_strmod/register_strdev and returns 0 or an
 * errno, and optionally void ust_module_fini(void), called after the loader
 * has unregistered it, before dlclose.
 *
 * ustreams_load -- load the object for name from the module path and pin it
 *   (it stays loaded until ustreams_unload).  Returns 0 (also if it was
 *   loaded already), EINVAL (bad name; the object has no ust_module_init, or
 *   it registered nothing), ENOENT (not found on the path), EACCES (found
 *   only where the trust rule refuses it, or a relative directory on the
 *   path; the reason in ustreams_load_error and the log), ENOEXEC (dlopen
 *   failed), EEXIST (a built-in or registered module or driver has that
 *   name), ENOMEM, or the error ust_module_init returned.
 * ustreams_unload -- unregister what the object registered, call its
 *   ust_module_fini and dlclose it.  Returns 0, EINVAL (bad name), ENOENT
 *   (not loaded), EBUSY (a stream uses it: nothing changes).
 * Objects loaded on demand (I_PUSH or open of a name not registered) are
 * unloaded by themselves when the last stream using them closes.
 * ustreams_set_module_path -- the colon-separated absolute directories
 *   searched (NULL: back to $USTREAMS_MODULE_PATH -- ignored in a set-uid or
 *   set-gid process -- or "<libdir>/ustreams" when that is unset; never the
 *   current directory).  Returns 0, EINVAL (a relative directory),
 *   ENAMETOOLONG or ENOMEM.  Only files that pass the loader's trust rule
 *   are loaded (docs/ADMIN.md "Which files are loaded"); ustreams_load
 *   fails EACCES for the others.
 * ustreams_load_error -- why this thread's last load failed (dlerror() text
 *   and the like); "" if none did.
 */
int ustreams_load(const char *name);
int ustreams_unload(const char *name);
int ustreams_set_module_path(const char *path);
const char *ustreams_load_error(void);

#ifdef __cplusplus
}
#endif

#endif /* _USTREAMS_EXEC_H */
