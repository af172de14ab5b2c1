/* SPDX-License-Identifier: MIT */
/*
 * xlog_wire.h -- one log record sent to the logger of another process
 * (xlog.c; docs/SECURITY.md "log sockets").  A datagram: this header, then
 * textlen bytes of text (no NUL needed).  The receiver checks every field
 * (xlog_check) and takes the sender's pid and uid from SCM_CREDENTIALS.
 */
#ifndef UST_XLOG_WIRE_H
#define UST_XLOG_WIRE_H

#include <stdint.h>

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

#endif /* UST_XLOG_WIRE_H */
