/* SPDX-License-Identifier: MIT */
/*
 * logpriv.h -- between the log driver (src/drivers/log.c) and strlog
 * (src/core/strlog.c): the one routing entry point.
 */
#ifndef UST_LOGPRIV_H
#define UST_LOGPRIV_H

#include <stddef.h>
#include <sys/strlog.h>

/*
 * ust_log_route -- send one log message to the loggers that want it.
 *   lc: mid, sid, level, flags and pri filled in by the caller; ltime, ttime
 *   and seq_no are filled in here (seq_no per copy: the error, trace and
 *   console loggers each have their own sequence).  text: len bytes (no NUL
 *   needed; the copies get one).  *had_console is set to whether a console
 *   logger existed (strlog falls back to stderr when not).
 *   Context: any thread, put and service procedures included; never blocks:
 *   takes the logger table lock briefly (never across putnext) and drops a
 *   copy for a logger whose stream is full.
 *   Returns 1 if at least one copy was passed up to a logger, else 0.
 */
int ust_log_route(struct log_ctl *lc, const char *text, size_t len, int *had_console);

/* Severity of a message for log_ctl.pri: LOG_KERN | LOG_CRIT (SL_FATAL),
 * LOG_ERR (SL_ERROR), LOG_WARNING (SL_WARN), LOG_NOTICE (SL_NOTE), LOG_DEBUG
 * (SL_TRACE only) or LOG_INFO. */
int ust_log_pri(unsigned short flags);

#endif /* UST_LOGPRIV_H */
