/* SPDX-License-Identifier: MIT */
/*
 * fuzz_xlog.c -- fuzz target: a log record arriving from another process
 * (src/procs/xlog.c; docs/SECURITY.md, the log sockets) -- hostile input.
 *
 * The first byte of the input picks the socket it came in on (class index
 * 0 error, 1 trace, 2 console); the rest is the datagram, any bytes, any
 * length.  ust_xlog_check must refuse it or accept it with results the wire
 * format allows: the text inside the datagram right after the header, its
 * length the text's up to the first NUL and below LOGMSGSZ, the datagram
 * exactly header + textlen, flags SL_* only and including the class's, the
 * priority and times in range, the lost count bounded.  An accepted record is
 * then delivered as the receiving thread does (ust_strlog_far) to this
 * process's logger of that class, and read back from it: the same text and
 * ids.  The loggers live in a private runtime directory, so records of other
 * processes of the user never reach them.  No message block may be
 * outstanding after each input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/strlog.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "log_util.h"
#include "strcore.h"
#include "xlog_wire.h"

static int fz_logger[XLOG_NCLASS]; /* error, trace, console loggers */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const struct trace_ids all = {-1, -1, (char)-1};
    struct strioctl sio[XLOG_NCLASS] = {
        {I_ERRLOG, 0, 0, NULL},
        {I_TRCLOG, 0, sizeof(all), (char *)&all},
        {I_CONSLOG, 0, 0, NULL},
    };
    (void)argc;
    (void)argv;
    log_private_rundir();
    for (int i = 0; i < XLOG_NCLASS; i++) {
        fz_logger[i] = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
        if (fz_logger[i] < 0 || strm_ioctl(fz_logger[i], I_STR, &sio[i]) != 0)
            abort();
    }
    return 0;
}

/* Take every message waiting at logger i; the last one's control part and
 * text into *lc and text (NUL-terminated).  Returns how many were read. */
static int drain(int i, struct log_ctl *lc, char *text)
{
    int got = 0;
    for (;;) {
        struct log_ctl c;
        char t[LOGMSGSZ + 1];
        struct strbuf ctl = {sizeof(c), 0, (char *)&c};
        struct strbuf data = {LOGMSGSZ, 0, t};
        int flags = 0;
        if (getmsg(fz_logger[i], &ctl, &data, &flags) < 0) {
            if (errno != EAGAIN)
                abort();
            return got;
        }
        if (ctl.len != (int)sizeof(c) || data.len < 0 || data.len > LOGMSGSZ)
            abort();
        t[data.len] = '\0';
        *lc = c;
        memcpy(text, t, (size_t)data.len + 1);
        got++;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const short cls_flag[XLOG_NCLASS] = {SL_ERROR, SL_TRACE, SL_CONSOLE};
    struct log_ctl lc, back;
    const char *text = NULL;
    size_t len = 0;
    char readback[LOGMSGSZ + 1];

    if (size < 1)
        return 0;
    int i = data[0] % XLOG_NCLASS;
    const unsigned char *buf = data + 1;
    size_t n = size - 1;
    struct xlog_rec r;

    if (ust_xlog_check(i, buf, n, &lc, &text, &len) != 0)
        return 0;
    /* Accepted: everything the wire format promises. */
    memcpy(&r, buf, sizeof(r)); /* n >= sizeof(r), or it would be refused */
    if (n != sizeof(r) + r.textlen || r.textlen >= LOGMSGSZ)
        abort();
    if (text != (const char *)buf + sizeof(r) || len > r.textlen || len != strnlen(text, r.textlen))
        abort();
    if ((lc.flags & ~XLOG_FLAGS) != 0 || !(lc.flags & cls_flag[i]) || lc.pid != 0)
        abort();
    if (lc.pri < 0 || lc.pri > 0x3ff || lc.ltime < 0 || lc.ttime < 0 || lc.seq_no < 0 ||
        (unsigned)lc.seq_no > XLOG_MAXLOST)
        abort();

    /* Delivered as the receiving thread does, and read back. */
    char copy[LOGMSGSZ];
    memcpy(copy, text, len);
    copy[len] = '\0';
    lc.pid = 1;
    (void)ust_strlog_far(&lc, copy, len, 1 << i);
    int got = drain(i, &back, readback);
    for (int k = 0; k < XLOG_NCLASS; k++) { /* other loggers: drained, unchecked */
        struct log_ctl o;
        char ot[LOGMSGSZ + 1];
        if (k != i)
            (void)drain(k, &o, ot);
    }
    if (got != 1 || strcmp(readback, copy) != 0 || back.mid != lc.mid || back.sid != lc.sid ||
        back.level != lc.level)
        abort();

    struct ustreams_blockstats bs;
    ustreams_blockstats(&bs);
    if (bs.mblks != 0)
        abort();
    return 0;
}
