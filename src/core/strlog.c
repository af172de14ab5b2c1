/* SPDX-License-Identifier: MIT */
/*
 * strlog.c -- strlog(9F) and the text form of log messages.
 *
 * strlog formats its arguments (vsnprintf into LOGMSGSZ bytes; the reference
 * pages' limit of NLOGARGS arguments is not needed by this implementation
 * and not enforced) and hands the message to its route, which passes a copy
 * up to every logger that wants it.  The route is a hook: the log driver
 * (src/drivers/log.c, ust_log_route) sits above the executive, so the
 * administration layer installs it at library start (ust_strlog_set_route,
 * src/admin/start.c); with no route installed no message reaches a logger.
 * A console message nobody logs goes to stderr when the environment
 * variable USTREAMS_VERBOSE is set (and not "0").  ust_log_format is a
 * one-line text form of a message (the tools print Solaris' formats).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/strlog.h>
#include <syslog.h>
#include <time.h>

#include "strcore.h"

/* The route of strlog (strcore.h); NULL: none installed.  Written by the
 * layer above at start-up (release), read by every strlog (acquire). */
static _Atomic(ust_strlog_route_fn) strlog_route;

void ust_strlog_set_route(ust_strlog_route_fn fn)
{
    atomic_store_explicit(&strlog_route, fn, memory_order_release);
}

/* The cross-process layer's hooks (strcore.h); NULL: loggers are local. */
static _Atomic(const struct ust_xlog_ops *) xlog_ops;
static atomic_ulong xlog_counters[UST_XLOG_NCOUNTERS];

void ust_xlog_set_ops(const struct ust_xlog_ops *ops)
{
    atomic_store_explicit(&xlog_ops, ops, memory_order_release);
}

const struct ust_xlog_ops *ust_xlog_get_ops(void)
{
    return atomic_load_explicit(&xlog_ops, memory_order_acquire);
}

void ust_xlog_count(enum ust_xlog_counter which)
{
    if ((unsigned)which < UST_XLOG_NCOUNTERS)
        atomic_fetch_add_explicit(&xlog_counters[which], 1, memory_order_relaxed);
}

unsigned long ust_xlog_counter(enum ust_xlog_counter which)
{
    if ((unsigned)which >= UST_XLOG_NCOUNTERS)
        return 0;
    return atomic_load_explicit(&xlog_counters[which], memory_order_relaxed);
}

int ust_strlog_far(struct log_ctl *lc, const char *text, size_t len, int cls)
{
    ust_strlog_route_fn route = atomic_load_explicit(&strlog_route, memory_order_acquire);
    if (route == NULL || cls == 0)
        return 0;
    return route(lc, text, len, NULL, cls);
}

int ust_log_pri(unsigned short flags)
{
    if (flags & SL_FATAL)
        return LOG_KERN | LOG_CRIT;
    if (flags & SL_ERROR)
        return LOG_KERN | LOG_ERR;
    if (flags & SL_WARN)
        return LOG_KERN | LOG_WARNING;
    if (flags & SL_NOTE)
        return LOG_KERN | LOG_NOTICE;
    if (flags & SL_TRACE)
        return LOG_KERN | LOG_DEBUG;
    return LOG_KERN | LOG_INFO;
}

/* Is USTREAMS_VERBOSE set (and not "0")? */
static int strlog_verbose(void)
{
    const char *v = getenv("USTREAMS_VERBOSE");
    return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

/*
 * strlog(9F) -- see sys/strlog.h.
 *   Context: any thread, module procedures included; never blocks.
 *   Returns 1 if a copy reached a logger, else 0 (no logger wanted it, or
 *   every copy was dropped for flow control or memory).
 */
int strlog(short mid, short sid, char level, unsigned short flags, char *fmt, ...)
{
    char text[LOGMSGSZ];
    struct log_ctl lc;
    ust_strlog_route_fn route;
    int had_console = 0;
    int n = 0, rc;
    va_list ap;

    if (fmt != NULL) {
        va_start(ap, fmt);
        n = vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
    }
    if (n < 0)
        n = 0; /* an encoding error: log an empty text */
    if ((size_t)n >= sizeof(text))
        n = (int)sizeof(text) - 1;
    text[n] = '\0';

    memset(&lc, 0, sizeof(lc));
    lc.mid = mid;
    lc.sid = sid;
    lc.level = level;
    lc.flags = (short)flags;
    lc.pri = ust_log_pri(flags);
    route = atomic_load_explicit(&strlog_route, memory_order_acquire);
    rc = route != NULL ? route(&lc, text, (size_t)n, &had_console, 0) : 0;
    if ((flags & SL_CONSOLE) && !had_console && strlog_verbose())
        fprintf(stderr, "strlog: mid %d sid %d level %d: %s\n", mid, sid, (unsigned char)level,
                text);
    return rc;
}

/* Letters of the flags, in the order E T F N C W I; "-" for none. */
static void strlog_flagstr(short flags, char out[8])
{
    static const struct {
        short bit;
        char c;
    } letters[] = {{SL_ERROR, 'E'},   {SL_TRACE, 'T'}, {SL_FATAL, 'F'}, {SL_NOTIFY, 'N'},
                   {SL_CONSOLE, 'C'}, {SL_WARN, 'W'},  {SL_NOTE, 'I'}};
    int k = 0;

    for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++)
        if (flags & letters[i].bit)
            out[k++] = letters[i].c;
    if (k == 0)
        out[k++] = '-';
    out[k] = '\0';
}

/*
 * ust_log_format -- see sys/strlog.h.
 *   Context: any thread (localtime_r).
 */
int ust_log_format(const struct log_ctl *lc, const char *text, char *buf, size_t len)
{
    char when[16], flags[8], clean[LOGMSGSZ];
    time_t t;
    struct tm tm;
    size_t i;

    if (lc == NULL || text == NULL)
        return -1;
    t = (time_t)lc->ttime;
    if (localtime_r(&t, &tm) == NULL || strftime(when, sizeof(when), "%H:%M:%S", &tm) == 0)
        snprintf(when, sizeof(when), "??:??:??");
    strlog_flagstr(lc->flags, flags);
    for (i = 0; i < sizeof(clean) - 1 && text[i] != '\0'; i++) {
        unsigned char c = (unsigned char)text[i];
        clean[i] = (c >= 0x20 && c < 0x7f) || c == '\t' ? (char)c : '?';
    }
    clean[i] = '\0';
    return snprintf(buf, len, "%06d %s %ld %u %s %d %d %s", lc->seq_no, when, lc->ltime,
                    (unsigned char)lc->level, flags, lc->mid, lc->sid, clean);
}
