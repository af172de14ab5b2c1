/* SPDX-License-Identifier: MIT */
/*
 * xlog_wire.h -- one log record sent to the logger of another process
 * (xlog.c; docs/SECURITY.md "log sockets").  A datagram: this header, then
 * textlen bytes of text (no NUL needed).  The receiver checks every field
 * (xlog_check) and takes the sender's pid and uid from SCM_CREDENTIALS.
 */
#ifndef UST_XLOG_WIRE_H
#define UST_XLOG_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/strlog.h>

#define XLOG_MAGIC   0x55534c47u /* "USLG" */
#define XLOG_VERSION 1

struct xlog_rec {
    uint32_t magic;   /* XLOG_MAGIC */
    uint8_t version;  /* XLOG_VERSION */
    uint8_t cls;      /* UST_LOGC_*: the class (socket) it was sent to */
    uint16_t textlen; /* < LOGMSGSZ, and the datagram is exactly header + text */
    int16_t mid, sid;
    int16_t flags; /* SL_* only, including the class's flag */
    int8_t level;
    uint8_t pad;          /* 0 */
    int32_t pri;          /* 0 .. 0x3ff (facility | severity) */
    uint32_t lost;        /* records of this class the sender dropped since its last one */
    int64_t ltime, ttime; /* >= 0 */
};

#define XLOG_NCLASS  3          /* error, trace, console: the socket's index */
#define XLOG_MAXLOST (1u << 24) /* a larger "lost" count is refused */
#define XLOG_FLAGS   (SL_FATAL | SL_NOTIFY | SL_ERROR | SL_TRACE | SL_CONSOLE | SL_WARN | SL_NOTE)

/*
 * ust_xlog_check -- validate one datagram of n bytes received on class index
 *   i's socket (0 error, 1 trace, 2 console), hostile input: the magic and
 *   version, the class, the exact length (header + textlen, textlen <
 *   LOGMSGSZ), flags (SL_* only, the class's among them), priority, times,
 *   the lost count.  On success fills lc (pid left 0: the receiver takes it
 *   from the kernel's credentials; seq_no = the sender's lost count), *text
 *   (inside buf, right after the header) and *len (the text up to its first
 *   NUL).  Returns 0, or -1 (refuse it).  Any thread; no state.
 *   Fuzzed by tests/fuzz/fuzz_xlog.c.
 */
int ust_xlog_check(int i, const unsigned char *buf, size_t n, struct log_ctl *lc,
                   const char **text, size_t *len);

#endif /* UST_XLOG_WIRE_H */
