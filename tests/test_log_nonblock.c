/* SPDX-License-Identifier: MIT */
/*
 * test_log_nonblock.c -- logging never blocks the caller (issue 21 item 6).
 *
 * References: log(7) (SVR4; Solaris log(7D)): a logger that does not keep up
 * loses messages, "the sequence numbers show the gap"; strlog(9F) may be
 * called from any context and must not sleep.
 *   NB.1 a logger in this process that never reads: 100,000 strlog calls
 *        and 100,000 putmsg calls on a blocking log stream return within a
 *        bound; the drops are counted (ls_dropped); the logger then reads
 *        increasing sequence numbers and one gap, and delivery resumes
 *   NB.2 a logger in another process (the parent) that never reads: a child
 *        makes 100,000 strlog and 100,000 putmsg calls within a bound
 *        (the far logger's socket fills: ls_xdropped counts, never a wait);
 *        the parent then reads the records with increasing sequence numbers
 *        and the child's pid; the dropped ones show as gaps (each record
 *        carries its sender's drop count), the last number is where every
 *        call would have ended; later records arrive again
 *   and, at the end, no message block is outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/strlog.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "log_util.h"

#define LOGDEV   "/dev/streams/log"
#define NCALLS   100000
#define BOUND_MS 20000 /* 200,000 calls: generous for a sanitizer build */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int errlog(int fd)
{
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    return strm_ioctl(fd, I_STR, &sio);
}

/* Read one message, waiting up to ms; 1 or 0. */
static int readlog(int fd, struct log_ctl *lc, char *text, int ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    struct strbuf ctl = {sizeof(*lc), 0, (char *)lc};
    struct strbuf data = {LOGMSGSZ, 0, text};
    int flags = 0;

    if (strm_poll(&pfd, 1, ms) <= 0)
        return 0;
    return getmsg(fd, &ctl, &data, &flags) >= 0;
}

/* 100,000 strlog then 100,000 putmsg on a blocking log stream (w).
 * Returns the milliseconds taken. */
static long flood(int w)
{
    struct log_ctl lc;
    long t0 = now_ms();
    char text[64];

    for (int i = 0; i < NCALLS; i++)
        (void)strlog(7, 7, 0, SL_ERROR, "strlog %d", i);
    for (int i = 0; i < NCALLS; i++) {
        memset(&lc, 0, sizeof(lc));
        lc.flags = SL_ERROR;
        int n = snprintf(text, sizeof(text), "putmsg %d", i);
        struct strbuf ctl = {0, sizeof(lc), (char *)&lc};
        struct strbuf data = {0, n, text};
        if (putmsg(w, &ctl, &data, 0) != 0) {
            CHECK(!"putmsg to the log failed");
            break;
        }
    }
    return now_ms() - t0;
}

/* Read everything waiting: sequence numbers increase; returns the count,
 * *gaps the number of jumps, *last the last number. */
static int drain(int fd, int *gaps, int *last, pid_t want_pid)
{
    struct log_ctl lc;
    char text[LOGMSGSZ];
    int got = 0, prev = -1;

    *gaps = 0;
    while (readlog(fd, &lc, text, 200)) {
        if (prev >= 0) {
            CHECK(lc.seq_no > prev);
            if (lc.seq_no != prev + 1)
                (*gaps)++;
        }
        CHECK_EQ(lc.pid, want_pid);
        prev = lc.seq_no;
        got++;
    }
    *last = prev;
    return got;
}

/* NB.1 */
static void test_local_logger(void)
{
    int e = strm_open(LOGDEV, O_RDWR), w = strm_open(LOGDEV, O_RDWR);
    struct ust_log_stats st0, st1;
    struct log_ctl lc;
    char text[LOGMSGSZ];
    int gaps, last;

    CHECK(e >= 0 && w >= 0);
    CHECK_EQ(errlog(e), 0);
    ust_log_getstats(&st0);
    long ms = flood(w);
    ust_log_getstats(&st1);
    printf("NB.1: %d strlog + %d putmsg with a stopped logger: %ld ms\n", NCALLS, NCALLS, ms);
    CHECK(ms < BOUND_MS);
    CHECK(st1.ls_dropped - st0.ls_dropped > 0);
    CHECK_EQ(st1.ls_dropped - st0.ls_dropped + st1.ls_delivered - st0.ls_delivered,
             2 * NCALLS);
    int got = drain(e, &gaps, &last, getpid());
    CHECK_EQ(got, (long)(st1.ls_delivered - st0.ls_delivered));
    CHECK_EQ(gaps, 0); /* the first messages filled the queue: the gap is after */
    CHECK_EQ(strlog(7, 7, 0, SL_ERROR, "after"), 1);
    CHECK(readlog(e, &lc, text, 1000) && strcmp(text, "after") == 0);
    CHECK_EQ(lc.seq_no, 2 * NCALLS); /* every drop took its number: the gap */
    CHECK(lc.seq_no > last + 1);
    strm_close(w);
    strm_close(e);
}

/* NB.2: the child floods; the parent's logger does not read meanwhile. */
static int child_flood(void *arg)
{
    struct ust_log_stats st;
    int w = strm_open(LOGDEV, O_RDWR);
    (void)arg;

    CHECK(w >= 0);
    long ms = flood(w);
    ust_log_getstats(&st);
    printf("NB.2: child: %d strlog + %d putmsg to a stopped logger in another process: %ld ms, "
           "%lu sent, %lu dropped\n",
           NCALLS, NCALLS, ms, st.ls_xsent, st.ls_xdropped);
    CHECK(ms < BOUND_MS);
    CHECK(st.ls_xsent > 0);
    CHECK(st.ls_xdropped > 0);
    CHECK_EQ(st.ls_xsent + st.ls_xdropped, 2 * NCALLS);
    strm_close(w);
    fflush(stdout);
    return 0;
}

static int child_after(void *arg)
{
    (void)arg;
    CHECK_EQ(strlog(7, 7, 0, SL_ERROR, "after"), 1);
    return 0;
}

static void test_far_logger(void)
{
    int e = strm_open(LOGDEV, O_RDWR);
    struct log_ctl lc;
    char text[LOGMSGSZ];
    int gaps, last;

    CHECK(e >= 0);
    CHECK_EQ(errlog(e), 0);
    CHECK_EQ(strlog(7, 7, 0, SL_ERROR, "first"), 1);
    CHECK(readlog(e, &lc, text, 1000));
    int first_seq = lc.seq_no + 1;
    pid_t pid = fk_start(child_flood, NULL);
    CHECK(pid > 0);
    CHECK_EQ(fk_wait(pid, BOUND_MS + 10000), 0);
    int got = drain(e, &gaps, &last, pid);
    printf("NB.2: parent read %d records, last seq %d, %d gaps\n", got, last, gaps);
    CHECK(got > 0);
    CHECK(last >= first_seq && last <= first_seq + 2 * NCALLS - 1);
    pid = fk_start(child_after, NULL);
    CHECK_EQ(fk_wait(pid, 10000), 0);
    CHECK(readlog(e, &lc, text, 2000) && strcmp(text, "after") == 0);
    CHECK_EQ(lc.pid, pid);
    CHECK(lc.seq_no > last);
    /* the records lost (at the child's full socket, carried as its drop
     * count, or at this full stream) took numbers: the logger sees the gap;
     * those the child dropped after its last record sent are counted in its
     * ls_xdropped only */
    CHECK(lc.seq_no - first_seq > got + NCALLS / 10);
    strm_close(e);
}

int main(void)
{
    log_private_rundir();
    test_local_logger();
    test_far_logger();
    ustreams_quiesce(5000);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
