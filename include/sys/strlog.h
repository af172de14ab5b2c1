/* SPDX-License-Identifier: MIT */
/*
 * sys/strlog.h -- the STREAMS log driver (log(7)) and strlog(9F).
 *
 * A module or driver submits a message with strlog(); a process reads the
 * messages from the log driver, /dev/streams/log (every open a new minor),
 * after making its stream a logger with an I_STR ioctl:
 *   I_ERRLOG   the error logger: messages with SL_ERROR
 *   I_TRCLOG   the trace logger: messages with SL_TRACE that one of its
 *              struct trace_ids filters selects (ic_dp holds an array of
 *              them, ic_len a non-zero multiple of its size)
 *   I_CONSLOG  the console logger: messages with SL_CONSOLE
 * One logger of each class at a time among all the processes of a user (a
 * second stream asking fails EBUSY; the same stream asking again succeeds,
 * I_TRCLOG then replacing its filters; closing the stream frees the class).
 * A logger receives what every process of its user logs (docs/ADMIN.md).
 * Each message reaches the logger as an M_PROTO holding a struct log_ctl
 * followed by an M_DATA holding the NUL-terminated text; read it with
 * getmsg(2).  A process may also log: putmsg(2) of a struct log_ctl (flags
 * say where it goes) and the text; the driver fills in mid (LOG_MID), sid
 * (the stream's minor), the times and the sequence number.
 * Values follow Solaris (<sys/strlog.h>, <sys/log.h>).
 */
#ifndef _SYS_STRLOG_H
#define _SYS_STRLOG_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* strlog flags: where a message goes and what it is */
#define SL_FATAL   0x01 /* a fatal error */
#define SL_NOTIFY  0x02 /* the administrator should be told (strerr marks it N) */
#define SL_ERROR   0x04 /* to the error logger */
#define SL_TRACE   0x08 /* to the trace loggers whose filter selects it */
#define SL_CONSOLE 0x10 /* to the console logger (stderr if none and USTREAMS_VERBOSE) */
#define SL_WARN    0x20 /* a warning */
#define SL_NOTE    0x40 /* a notice */

/* ioctl commands (ic_cmd of I_STR) */
#define LOGCTL    ('L' << 8)
#define I_TRCLOG  (LOGCTL | 1)
#define I_ERRLOG  (LOGCTL | 2)
#define I_CONSLOG (LOGCTL | 3)

#define LOGMSGSZ 1024 /* longest formatted text, the NUL included */
#define NLOGARGS 20   /* most arguments strlog formats */
#define LOG_MID  44   /* mid of messages a process putmsg-s to the log */

/* The control part of every log message. */
struct log_ctl {
    short mid;   /* module id of the sender */
    short sid;   /* sub-id (minor number, usually) */
    char level;  /* trace level */
    short flags; /* SL_* */
    long ltime;  /* clock ticks (lbolt) when logged */
    long ttime;  /* seconds since the epoch when logged */
    int seq_no;  /* sequence number, separate for error and trace messages */
    int pri;     /* syslog priority: LOG_KERN | severity from the flags */
    pid_t pid;   /* ustreams: the process that logged it (set by the driver) */
};

/* An I_TRCLOG filter: -1 in ti_mid or ti_sid matches any; a message passes
 * when its level, taken as unsigned, is at most ti_level (so -1 = 255 passes
 * every level). */
struct trace_ids {
    short ti_mid;
    short ti_sid;
    char ti_level;
};

/*
 * strlog(9F) -- submit a message to the log driver.
 *   fmt is printf(3)-style with at most NLOGARGS arguments; the text is cut
 *   at LOGMSGSZ - 1 bytes.
 *   Context: any thread, a put or service procedure, a callback, locks held;
 *   never blocks.  Messages for a logger whose stream is full (or, in
 *   another process, whose socket is full) are dropped and counted
 *   (ust_log_getstats); the logger sees a gap in the sequence numbers.
 *   Returns 1 if the message reached at least one logger, 0 if none.
 */
int strlog(short mid, short sid, char level, unsigned short flags, char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- ustreams extensions ---- */

/*
 * ust_log_format -- format a log message on one line, every flag shown (the
 *   strace and strerr tools print Solaris' formats instead, tools/logtool.h):
 *   "SEQ HH:MM:SS TICKS LEVEL FLAGS MID SID TEXT"
 *   SEQ six digits, the time local (localtime of ttime), FLAGS the letters
 *   E (SL_ERROR) T (SL_TRACE) F (SL_FATAL) N (SL_NOTIFY) C (SL_CONSOLE) W
 *   (SL_WARN) I (SL_NOTE) or "-" for none; non-printable text bytes become '?'.
 *   Context: any thread.
 *   Returns the length of the full line as snprintf does (buf is cut, and
 *   NUL-terminated if len > 0), or -1 for a NULL lc or text.
 */
int ust_log_format(const struct log_ctl *lc, const char *text, char *buf, size_t len);

/* Counters of the log driver since the process started. */
struct ust_log_stats {
    unsigned long ls_logged;    /* messages submitted (strlog and putmsg) */
    unsigned long ls_unrouted;  /* submitted, no logger wanted them */
    unsigned long ls_delivered; /* copies passed up to a logger */
    unsigned long ls_dropped;   /* copies dropped: the logger's stream was full */
    unsigned long ls_nomem;     /* copies dropped: no memory for the message */
    unsigned long ls_badmsg;    /* putmsg/write to the log that was not a log_ctl + text */
    /* across processes (the loggers of another process of the user) */
    unsigned long ls_xsent;     /* messages sent to another process's logger */
    unsigned long ls_xdropped;  /* not sent: that logger's socket was full (never a wait) */
    unsigned long ls_xreceived; /* records of other processes passed to a logger here */
    unsigned long ls_xrejected; /* datagrams refused: credentials, length or fields */
};
void ust_log_getstats(struct ust_log_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* _SYS_STRLOG_H */
