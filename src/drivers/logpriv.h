/* SPDX-License-Identifier: MIT */
/*
 * logpriv.h -- the log driver's routing entry point (src/drivers/log.c).
 * The administration layer installs it as strlog's route at library start
 * (ust_strlog_set_route in src/core/strcore.h; src/admin/start.c): the
 * executive's strlog does not know the driver.
 */
#ifndef UST_LOGPRIV_H
#define UST_LOGPRIV_H

#include <stddef.h>
#include <sys/strlog.h>

/*
 * ust_log_route -- send one log message to the loggers that want it.
 *   lc: mid, sid, level, flags and pri filled in by the caller; ltime, ttime,
 *   pid and seq_no are filled in here (seq_no per copy: the error, trace and
 *   console loggers each have their own sequence).  far: 0 for a message of
 *   this process -- the classes with no logger here go to the loggers of
 *   other processes (the xlog send hook, strcore.h); else the UST_LOGC_*
 *   classes a record from another process may reach (ltime, ttime and pid
 *   kept; seq_no on entry the count the sender lost before it, skipped in
 *   the class's sequence so the logger sees the gap; never sent on).  text: len bytes (no NUL
 *   needed; the copies get one).  *had_console is set to whether a console
 *   logger existed (strlog falls back to stderr when not).
 *   Context: any thread, put and service procedures included; never blocks:
 *   takes the logger table lock briefly (never across putnext) and drops a
 *   copy for a logger whose stream is full.
 *   Returns 1 if at least one copy was passed up to a logger, else 0.
 *   Its type is ust_strlog_route_fn; had_console may be NULL.
 */
int ust_log_route(struct log_ctl *lc, const char *text, size_t len, int *had_console, int far);

#endif /* UST_LOGPRIV_H */
