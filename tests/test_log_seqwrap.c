/* SPDX-License-Identifier: MIT */
/*
 * test_log_seqwrap.c -- the log driver's sequence numbers stay in 0 ..
 * INT_MAX and wrap to 0, however large the gaps far senders report.
 *
 * A record received from another process carries the count of records the
 * sender lost (up to 2^24, src/procs/xlog_wire.h); the driver skips that
 * many numbers so the logger sees the gap.  fuzz_xlog found the sum
 * overflowing int (signed overflow) after a few hundred such records from
 * a hostile sender.  Here: 300 records delivered as the receiving thread
 * delivers them (ust_strlog_far), each with a gap of 2^24, to an error
 * logger; every number must be the previous one + 2^24 + 1, modulo 2^31,
 * never negative.  Then ordinary strlog calls go on from there.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <stropts.h>
#include <sys/strlog.h>
#include <ustreams.h>

#include "check.h"
#include "log_util.h"
#include "strcore.h"

#define NREC 300
#define GAP  (1 << 24)

int main(void)
{
    log_private_rundir();
    int e = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
    CHECK(e >= 0);
    CHECK_EQ(log_errlog(e), 0);

    long long prev = -1;
    int wrapped = 0;
    for (int k = 0; k < NREC; k++) {
        struct log_ctl lc, back;
        char text[LOGMSGSZ];
        memset(&lc, 0, sizeof(lc));
        lc.mid = 9;
        lc.flags = SL_ERROR;
        lc.seq_no = GAP;
        lc.pid = 1;
        (void)ust_strlog_far(&lc, "far", 3, UST_LOGC_ERR);
        if (!CHECK(log_read(e, &back, text, 1000)))
            break;
        CHECK(back.seq_no >= 0);
        if (prev >= 0) {
            long long want = (prev + GAP + 1) & INT_MAX;
            if (!CHECK_EQ(back.seq_no, want))
                break;
            wrapped |= back.seq_no < prev;
        }
        prev = back.seq_no;
    }
    CHECK(wrapped); /* 300 gaps of 2^24 pass 2^31 */

    /* Local messages continue the sequence, one apart. */
    struct log_ctl back;
    char text[LOGMSGSZ];
    CHECK_EQ(strlog(9, 0, 0, SL_ERROR, "here"), 1);
    CHECK(log_read(e, &back, text, 1000) && strcmp(text, "here") == 0);
    CHECK_EQ(back.seq_no, (prev + 1) & INT_MAX);
    CHECK_EQ(strm_close(e), 0);
    return CHECK_RESULT();
}
