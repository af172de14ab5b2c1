/* SPDX-License-Identifier: MIT */
/*
 * test_log.c -- conformance of the log driver (src/drivers/log.c), strlog
 * (src/core/strlog.c), ust_log_format and the strace/strerr tools.
 *
 * References: log(7) (SVR4 / Solaris log(7D)), strlog(9F), strace(1M),
 * strerr(1M).  Cases are numbered by the reference page they check:
 *   L.1  log(7): every open of /dev/streams/log is a new stream with its own
 *        minor (seen as the sid of what a process logs through it)
 *   L.2  log(7) I_ERRLOG + strlog(9F) SL_ERROR: the error logger reads an
 *        M_PROTO log_ctl (mid, sid, level, flags, ltime, ttime, seq_no, pri)
 *        and an M_DATA with the NUL-terminated text; strlog returns 1, and 0
 *        once no logger wants the message
 *   L.3  log(7) I_ERRLOG errors: EBUSY while another stream is the error
 *        logger; repeating it on the same stream succeeds; closing the
 *        logger releases the role
 *   L.4  log(7) I_TRCLOG filters: ti_mid and ti_sid (-1 any), level <=
 *        ti_level; several filters per logger; a new I_TRCLOG replaces the
 *        filters; one trace logger at a time ("at most one trace logger and
 *        one error logger"): another stream EBUSY (of 40, only the first),
 *        free again once the logger closes
 *   L.5  log(7) sequence numbers: separate increasing numbers for error and
 *        trace messages; log_ctl.pid is this process
 *   L.6  log(7) I_TRCLOG errors: EINVAL for an ic_len of 0 or not a
 *        multiple of struct trace_ids, or less data than ic_len; unknown
 *        commands and transparent ioctls EINVAL
 *   L.7  log(7) putmsg by a process: mid LOG_MID, sid the stream's minor,
 *        times and sequence filled in by the driver; anything but a log_ctl
 *        control part is counted bad and dropped (putmsg still succeeds)
 *   L.8  flow control: copies for a full logger are dropped and counted,
 *        strlog never blocks; the sequence shows the gap; after the reader
 *        drains, delivery resumes
 *   L.9  I_CONSLOG and SL_CONSOLE: one console logger (EBUSY), delivery;
 *        none: stderr with USTREAMS_VERBOSE
 *   L.10 strlog(9F) formatting: printf conversions, text cut at LOGMSGSZ-1
 *   L.11 ust_log_format: a one-line text form of a message (every flag
 *        letter); truncation, NULL, flags
 *   L.12 strace(1M): the tool's real output (--demo), filters, usage errors
 *        (exit 1); more in tests/test_log_tools.c
 *   L.13 M_FLUSH at the log driver (I_FLUSH) is answered
 *   and, at the end, no message block is outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strlog.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "harness.h"
#include "log_util.h"

#define LOGDEV "/dev/streams/log"

/* One message read from a logger. */
struct logmsg {
    struct log_ctl lc;
    int ctllen;
    int datalen;
    char text[LOGMSGSZ + 8];
};

static int log_open(void)
{
    return strm_open(LOGDEV, O_RDWR | O_NONBLOCK);
}

static int ioc(int fd, int cmd, void *data, int len)
{
    struct strioctl sio = {cmd, 0, len, data};
    return strm_ioctl(fd, I_STR, &sio);
}

static int trclog(int fd, const struct trace_ids *t, int n)
{
    return ioc(fd, I_TRCLOG, (void *)t, n * (int)sizeof(*t));
}

/* Read one message waiting up to ms; returns 1, or 0 if none came. */
static int readlog(int fd, struct logmsg *m, int ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    struct strbuf ctl = {sizeof(m->lc), 0, (char *)&m->lc};
    struct strbuf data = {LOGMSGSZ + 4, 0, m->text};
    int flags = 0;

    memset(m, 0, sizeof(*m));
    if (ms > 0 && strm_poll(&pfd, 1, ms) <= 0)
        return 0;
    if (getmsg(fd, &ctl, &data, &flags) < 0)
        return 0;
    m->ctllen = ctl.len;
    m->datalen = data.len;
    return 1;
}

/* Nothing waiting (after a short grace for stray deliveries). */
static int nothing(int fd)
{
    struct logmsg m;
    return !readlog(fd, &m, 20);
}

/* Send a log_ctl + text with putmsg. */
static int putlog(int fd, short flags, char level, const char *text)
{
    struct log_ctl lc;
    memset(&lc, 0, sizeof(lc));
    lc.flags = flags;
    lc.level = level;
    struct strbuf ctl = {0, sizeof(lc), (char *)&lc};
    struct strbuf data = {0, (int)strlen(text), (char *)text};
    return putmsg(fd, &ctl, &data, 0);
}

/* The sid (minor) of stream fd: log a trace message through it and read it
 * at the trace logger tfd. */
static int minor_of(int fd, int tfd)
{
    struct logmsg m;
    if (putlog(fd, SL_TRACE, 0, "who") != 0 || !readlog(tfd, &m, 1000))
        return -1;
    return m.lc.sid;
}

static const struct trace_ids T_ALL = {-1, -1, (char)-1};

static void test_open_minors(void)
{
    int t = log_open(), a = log_open(), b = log_open();
    CHECK(t >= 0 && a >= 0 && b >= 0);
    CHECK_EQ(trclog(t, &T_ALL, 1), 0);
    int ma = minor_of(a, t), mb = minor_of(b, t), mt = minor_of(t, t);
    CHECK(ma > 0 && mb > 0 && mt > 0);
    CHECK(ma != mb && ma != mt && mb != mt);
    struct logmsg m;
    CHECK_EQ(putlog(a, SL_TRACE, 3, "x"), 0);
    CHECK(readlog(t, &m, 1000));
    CHECK_EQ(m.lc.mid, LOG_MID);
    strm_close(a);
    strm_close(b);
    strm_close(t);
}

static void test_errlog(void)
{
    struct ust_log_stats st0, st1;
    struct logmsg m;
    long before, after;
    time_t now = time(NULL);
    int e = log_open();

    CHECK(e >= 0);
    CHECK_EQ(ioc(e, I_ERRLOG, NULL, 0), 0);
    ust_log_getstats(&st0);
    drv_getparm(LBOLT, &before);
    CHECK_EQ(strlog(7, 3, 5, SL_ERROR | SL_NOTIFY, "error %d in %s", 12, "xyz"), 1);
    drv_getparm(LBOLT, &after);
    CHECK(readlog(e, &m, 1000));
    CHECK_EQ(m.ctllen, sizeof(struct log_ctl));
    CHECK_EQ(m.lc.mid, 7);
    CHECK_EQ(m.lc.sid, 3);
    CHECK_EQ(m.lc.level, 5);
    CHECK_EQ(m.lc.flags, SL_ERROR | SL_NOTIFY);
    CHECK(m.lc.ltime >= before && m.lc.ltime <= after);
    CHECK(m.lc.ttime >= now && m.lc.ttime <= time(NULL));
    CHECK_EQ(m.lc.pri, LOG_KERN | LOG_ERR);
    CHECK_EQ(m.datalen, strlen("error 12 in xyz") + 1);
    CHECK(strcmp(m.text, "error 12 in xyz") == 0);
    ust_log_getstats(&st1);
    CHECK_EQ(st1.ls_logged - st0.ls_logged, 1);
    CHECK_EQ(st1.ls_delivered - st0.ls_delivered, 1);

    /* pri follows the severity flags */
    CHECK_EQ(strlog(1, 1, 0, SL_ERROR | SL_FATAL, "f"), 1);
    CHECK(readlog(e, &m, 1000));
    CHECK_EQ(m.lc.pri, LOG_KERN | LOG_CRIT);
    /* a trace-only message does not reach the error logger */
    CHECK_EQ(strlog(1, 1, 0, SL_TRACE, "t"), 0);
    CHECK(nothing(e));
    strm_close(e);
    /* no logger: 0, counted as unrouted */
    ust_log_getstats(&st0);
    CHECK_EQ(strlog(7, 3, 5, SL_ERROR, "nobody"), 0);
    ust_log_getstats(&st1);
    CHECK_EQ(st1.ls_unrouted - st0.ls_unrouted, 1);
}

static void test_errlog_busy(void)
{
    int a = log_open(), b = log_open();
    struct logmsg m;

    CHECK_EQ(ioc(a, I_ERRLOG, NULL, 0), 0);
    CHECK_EQ(ioc(a, I_ERRLOG, NULL, 0), 0); /* same stream again */
    errno = 0;
    CHECK_EQ(ioc(b, I_ERRLOG, NULL, 0), -1);
    CHECK_EQ(errno, EBUSY);
    CHECK_EQ(strlog(2, 2, 0, SL_ERROR, "to a"), 1);
    CHECK(readlog(a, &m, 1000));
    CHECK(nothing(b));
    strm_close(a);
    CHECK_EQ(ioc(b, I_ERRLOG, NULL, 0), 0);
    CHECK_EQ(strlog(2, 2, 0, SL_ERROR, "to b"), 1);
    CHECK(readlog(b, &m, 1000) && strcmp(m.text, "to b") == 0);
    strm_close(b);
}

static void test_trace_filters(void)
{
    int a = log_open(), b = log_open();
    struct logmsg m;
    struct trace_ids fa[2] = {{10, 1, 3}, {20, -1, 0}};
    struct trace_ids fb[1] = {{-1, 5, (char)200}};

    CHECK_EQ(trclog(a, fa, 2), 0);
    /* one trace logger at a time: b is refused while a is it */
    errno = 0;
    CHECK_EQ(trclog(b, fb, 1), -1);
    CHECK_EQ(errno, EBUSY);
    /* mid 10 sid 1: level <= 3 passes at a */
    CHECK_EQ(strlog(10, 1, 3, SL_TRACE, "a3"), 1);
    CHECK(readlog(a, &m, 1000) && strcmp(m.text, "a3") == 0);
    CHECK(nothing(b));
    CHECK_EQ(strlog(10, 1, 4, SL_TRACE, "a4"), 0);  /* level too high */
    CHECK_EQ(strlog(10, 2, 0, SL_TRACE, "sid"), 0); /* wrong sid */
    CHECK_EQ(strlog(11, 1, 0, SL_TRACE, "mid"), 0); /* wrong mid */
    CHECK(nothing(a));
    /* mid 20, any sid, level 0 only */
    CHECK_EQ(strlog(20, 99, 0, SL_TRACE, "a20"), 1);
    CHECK(readlog(a, &m, 1000) && m.lc.sid == 99);
    CHECK_EQ(strlog(20, 99, 1, SL_TRACE, "no"), 0);
    /* without SL_TRACE nothing is traced */
    CHECK_EQ(strlog(20, 5, 0, SL_ERROR, "err only"), 0);
    CHECK(nothing(a));
    /* a new I_TRCLOG replaces a's filters: any mid, sid 5, levels to 200 */
    CHECK_EQ(trclog(a, fb, 1), 0);
    CHECK_EQ(strlog(1234, 5, (char)200, SL_TRACE, "b200"), 1);
    CHECK(readlog(a, &m, 1000) && strcmp(m.text, "b200") == 0);
    CHECK_EQ((unsigned char)m.lc.level, 200);
    CHECK_EQ(strlog(1234, 5, (char)201, SL_TRACE, "b201"), 0);
    CHECK_EQ(strlog(10, 1, 3, SL_TRACE, "old filter"), 0);
    CHECK_EQ(trclog(a, &T_ALL, 1), 0);
    CHECK_EQ(strlog(11, 1, (char)255, SL_TRACE, "any"), 1);
    CHECK(readlog(a, &m, 1000) && strcmp(m.text, "any") == 0);
    CHECK(nothing(b));
    strm_close(a);
    CHECK_EQ(strlog(11, 1, 0, SL_TRACE, "gone"), 0);
    /* the slot is free: b may now be the trace logger */
    CHECK_EQ(trclog(b, fb, 1), 0);
    CHECK_EQ(strlog(1, 5, 0, SL_TRACE, "to b"), 1);
    CHECK(readlog(b, &m, 1000) && strcmp(m.text, "to b") == 0);
    strm_close(b);
}

/* Many streams ask to be the trace logger: the first is, every other one is
 * refused EBUSY, and only the first gets the message. */
static void test_many_loggers(void)
{
    enum { N = 40 };
    int fd[N];
    struct logmsg m;

    for (int i = 0; i < N; i++) {
        fd[i] = log_open();
        errno = 0;
        CHECK_EQ(trclog(fd[i], &T_ALL, 1), i == 0 ? 0 : -1);
        if (i > 0)
            CHECK_EQ(errno, EBUSY);
    }
    CHECK_EQ(strlog(8, 8, 0, SL_TRACE, "to one logger"), 1);
    CHECK(readlog(fd[0], &m, 1000) && strcmp(m.text, "to one logger") == 0);
    for (int i = 0; i < N; i++) {
        if (i > 0)
            CHECK(nothing(fd[i]));
        strm_close(fd[i]);
    }
}

static void test_sequences(void)
{
    int e = log_open(), t = log_open();
    struct logmsg m;
    int eseq[4], tseq[4];

    CHECK_EQ(ioc(e, I_ERRLOG, NULL, 0), 0);
    CHECK_EQ(trclog(t, &T_ALL, 1), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(strlog(3, 3, 0, SL_ERROR | SL_TRACE, "m%d", i), 1);
        CHECK(readlog(e, &m, 1000));
        eseq[i] = m.lc.seq_no;
        CHECK_EQ(m.lc.flags, SL_ERROR | SL_TRACE);
        CHECK_EQ(m.lc.pid, getpid());
        CHECK(readlog(t, &m, 1000));
        tseq[i] = m.lc.seq_no;
        if (i > 0) {
            CHECK_EQ(eseq[i], eseq[i - 1] + 1);
            CHECK_EQ(tseq[i], tseq[i - 1] + 1);
        }
    }
    /* trace messages do not advance the error sequence and vice versa */
    CHECK_EQ(strlog(3, 3, 0, SL_TRACE, "t"), 1);
    CHECK(readlog(t, &m, 1000) && m.lc.seq_no == tseq[3] + 1);
    CHECK_EQ(strlog(3, 3, 0, SL_ERROR, "e"), 1);
    CHECK(readlog(e, &m, 1000) && m.lc.seq_no == eseq[3] + 1);
    CHECK(nothing(t));
    strm_close(e);
    strm_close(t);
}

static void test_trclog_errors(void)
{
    int t = log_open();
    struct trace_ids two[2] = {{1, 1, 1}, {2, 2, 2}};
    char raw[64] = {0};

    errno = 0;
    CHECK_EQ(ioc(t, I_TRCLOG, NULL, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ioc(t, I_TRCLOG, raw, (int)sizeof(struct trace_ids) - 1), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ioc(t, I_TRCLOG, raw, (int)sizeof(struct trace_ids) + 1), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ioc(t, I_TRCLOG, raw, (int)(2 * sizeof(two[0])) + 3), -1);
    CHECK_EQ(errno, EINVAL);
    /* a failed I_TRCLOG leaves the stream no trace logger */
    CHECK_EQ(strlog(1, 1, 0, SL_TRACE, "x"), 0);
    errno = 0;
    CHECK_EQ(ioc(t, LOGCTL | 99, NULL, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(t, I_ERRLOG, 0), -1); /* transparent */
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strlog(1, 1, 0, SL_ERROR, "x"), 0);
    CHECK_EQ(trclog(t, two, 2), 0);
    CHECK_EQ(strlog(2, 2, 2, SL_TRACE, "ok"), 1);
    CHECK(!nothing(t));
    strm_close(t);

    /* below the stream head (tests/harness.c): an M_IOCTL whose data is
     * shorter than its ioc_count, and one too short for an iocblk */
    struct th_stream *s = th_open("log", 0);
    struct ust_log_stats st0, st1;
    CHECK(s != NULL);
    th_write(s, th_ioctl_msg(I_TRCLOG, 2 * sizeof(two[0]), two, sizeof(two[0])));
    mblk_t *r = th_read(s, 1000);
    CHECK(r != NULL && th_msgtype(r) == M_IOCNAK);
    CHECK(r && ((struct iocblk *)(void *)r->b_rptr)->ioc_error == EINVAL);
    freemsg(r);
    ust_log_getstats(&st0);
    th_write(s, th_msg(M_IOCTL, 0, NULL, 4));
    th_write(s, th_msg(M_PCPROTO, 0, NULL, sizeof(struct log_ctl)));
    CHECK(th_read(s, 50) == NULL);
    ust_log_getstats(&st1);
    CHECK_EQ(st1.ls_badmsg - st0.ls_badmsg, 2);
    th_close(s);
}

static void test_putmsg(void)
{
    int e = log_open(), t = log_open(), w = log_open();
    struct ust_log_stats st0, st1;
    struct logmsg m;
    time_t now = time(NULL);

    CHECK_EQ(ioc(e, I_ERRLOG, NULL, 0), 0);
    CHECK_EQ(trclog(t, &T_ALL, 1), 0);
    int wminor = minor_of(w, t);
    CHECK(wminor > 0);
    CHECK_EQ(putlog(w, SL_ERROR | SL_TRACE, 4, "from a process"), 0);
    CHECK(readlog(e, &m, 1000));
    CHECK_EQ(m.lc.mid, LOG_MID);
    CHECK_EQ(m.lc.sid, wminor);
    CHECK_EQ(m.lc.level, 4);
    CHECK_EQ(m.lc.flags, SL_ERROR | SL_TRACE);
    CHECK_EQ(m.lc.pri, LOG_KERN | LOG_ERR);
    CHECK(m.lc.ttime >= now);
    CHECK(strcmp(m.text, "from a process") == 0);
    int seq = m.lc.seq_no;
    CHECK(readlog(t, &m, 1000) && strcmp(m.text, "from a process") == 0);
    CHECK_EQ(putlog(w, SL_ERROR, 0, "next"), 0);
    CHECK(readlog(e, &m, 1000) && m.lc.seq_no == seq + 1);

    /* bad messages: counted and dropped; putmsg itself succeeds */
    ust_log_getstats(&st0);
    char shortctl[4] = {0};
    struct strbuf ctl = {0, sizeof(shortctl), shortctl};
    struct strbuf data = {0, 3, "abc"};
    CHECK_EQ(putmsg(w, &ctl, &data, 0), 0);
    CHECK_EQ(strm_write(w, "plain", 5), 5);
    struct log_ctl lc = {.flags = SL_ERROR};
    struct strbuf hctl = {0, sizeof(lc), (char *)&lc};
    CHECK_EQ(putmsg(w, &hctl, &data, RS_HIPRI), 0);
    CHECK(nothing(e));
    ust_log_getstats(&st1);
    CHECK_EQ(st1.ls_badmsg - st0.ls_badmsg, 3);
    /* no text: an empty message */
    CHECK_EQ(putmsg(w, &hctl, NULL, 0), 0);
    CHECK(readlog(e, &m, 1000) && m.datalen == 1 && m.text[0] == '\0');
    /* a long text is cut at LOGMSGSZ - 1 */
    char *big = malloc(3000);
    memset(big, 'q', 2999);
    big[2999] = '\0';
    CHECK_EQ(putlog(w, SL_ERROR, 0, big), 0);
    CHECK(readlog(e, &m, 1000));
    CHECK_EQ(m.datalen, LOGMSGSZ);
    CHECK_EQ(strlen(m.text), LOGMSGSZ - 1);
    free(big);
    strm_close(w);
    strm_close(t);
    strm_close(e);
}

static void test_flow_drop(void)
{
    int e = log_open();
    struct ust_log_stats st0, st1;
    struct logmsg m;
    char text[900];
    int sent = 0, dropped = 0, i;

    memset(text, 'd', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    CHECK_EQ(ioc(e, I_ERRLOG, NULL, 0), 0);
    ust_log_getstats(&st0);
    for (i = 0; i < 10000 && dropped < 5; i++) {
        if (strlog(9, 9, 0, SL_ERROR, "%s", text))
            sent++;
        else
            dropped++;
    }
    ust_log_getstats(&st1);
    CHECK_EQ(dropped, 5);
    CHECK(sent > 10);
    CHECK_EQ(st1.ls_dropped - st0.ls_dropped, 5);
    CHECK_EQ(st1.ls_delivered - st0.ls_delivered, sent);
    /* the reader gets every delivered one in order, then sees the gap */
    int first = -1, last = -1, got = 0;
    while (readlog(e, &m, 100)) {
        if (first < 0)
            first = m.lc.seq_no;
        else
            CHECK_EQ(m.lc.seq_no, last + 1);
        last = m.lc.seq_no;
        got++;
    }
    CHECK_EQ(got, sent);
    CHECK_EQ(strlog(9, 9, 0, SL_ERROR, "after"), 1);
    CHECK(readlog(e, &m, 1000) && strcmp(m.text, "after") == 0);
    CHECK_EQ(m.lc.seq_no, last + 1 + 5);
    strm_close(e);
}

static void test_console(void)
{
    int c = log_open(), d = log_open();
    struct logmsg m;
    int p[2], saved;
    char buf[256] = {0};
    ssize_t n;

    CHECK_EQ(ioc(c, I_CONSLOG, NULL, 0), 0);
    errno = 0;
    CHECK_EQ(ioc(d, I_CONSLOG, NULL, 0), -1);
    CHECK_EQ(errno, EBUSY);
    CHECK_EQ(strlog(5, 6, 1, SL_CONSOLE | SL_WARN, "console %s", "hi"), 1);
    CHECK(readlog(c, &m, 1000) && strcmp(m.text, "console hi") == 0);
    CHECK_EQ(m.lc.pri, LOG_KERN | LOG_WARNING);
    CHECK(nothing(d));
    strm_close(c);
    CHECK_EQ(ioc(d, I_CONSLOG, NULL, 0), 0);
    strm_close(d);

    /* no console logger: stderr, only with USTREAMS_VERBOSE */
    CHECK_EQ(pipe(p), 0);
    fflush(stderr);
    saved = dup(2);
    dup2(p[1], 2);
    unsetenv("USTREAMS_VERBOSE");
    CHECK_EQ(strlog(5, 6, 1, SL_CONSOLE, "quiet"), 0);
    setenv("USTREAMS_VERBOSE", "1", 1);
    CHECK_EQ(strlog(5, 6, 1, SL_CONSOLE, "loud %d", 42), 0);
    unsetenv("USTREAMS_VERBOSE");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(p[1]);
    n = read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    CHECK(n > 0);
    CHECK(strstr(buf, "loud 42") != NULL);
    CHECK(strstr(buf, "quiet") == NULL);
}

static void test_strlog_format(void)
{
    int e = log_open();
    struct logmsg m;
    char big[LOGMSGSZ * 2];

    CHECK_EQ(ioc(e, I_ERRLOG, NULL, 0), 0);
    CHECK_EQ(strlog(1, 2, 3, SL_ERROR, "%d %u %x %s %c %ld %%", -5, 7u, 255u, "str", 'z', 1L << 40),
             1);
    CHECK(readlog(e, &m, 1000));
    CHECK(strcmp(m.text, "-5 7 ff str z 1099511627776 %") == 0);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_EQ(strlog(1, 2, 3, SL_ERROR, "%s", big), 1);
    CHECK(readlog(e, &m, 1000));
    CHECK_EQ(strlen(m.text), LOGMSGSZ - 1);
    CHECK_EQ(strlog(1, 2, 3, SL_ERROR, NULL), 1);
    CHECK(readlog(e, &m, 1000) && m.text[0] == '\0' && m.datalen == 1);
    strm_close(e);
}

static void test_log_format(void)
{
    struct log_ctl lc = {.mid = 42,
                         .sid = 7,
                         .level = 3,
                         .flags = SL_ERROR | SL_FATAL | SL_NOTIFY,
                         .ltime = 1234,
                         .ttime = 86400 + 3600,
                         .seq_no = 17};
    char buf[256], when[16], want[256];
    struct tm tm;
    time_t t = lc.ttime;

    localtime_r(&t, &tm);
    strftime(when, sizeof(when), "%H:%M:%S", &tm);
    snprintf(want, sizeof(want), "000017 %s 1234 3 EFN 42 7 hello", when);
    int n = ust_log_format(&lc, "hello", buf, sizeof(buf));
    CHECK_EQ(n, strlen(want));
    CHECK(strcmp(buf, want) == 0);
    /* truncation: the full length is returned, buf is cut and terminated */
    char small[10];
    CHECK_EQ(ust_log_format(&lc, "hello", small, sizeof(small)), strlen(want));
    CHECK_EQ(strlen(small), 9);
    CHECK(strncmp(small, want, 9) == 0);
    CHECK_EQ(ust_log_format(&lc, "hello", NULL, 0), strlen(want));
    CHECK_EQ(ust_log_format(NULL, "x", buf, sizeof(buf)), -1);
    CHECK_EQ(ust_log_format(&lc, NULL, buf, sizeof(buf)), -1);
    /* flags letters and non-printable text */
    lc.flags = 0;
    lc.level = (char)255;
    ust_log_format(&lc, "a\nb\x01", buf, sizeof(buf));
    CHECK(strstr(buf, " 255 - 42 7 a?b?") != NULL);
    lc.flags = SL_TRACE | SL_CONSOLE | SL_WARN | SL_NOTE;
    ust_log_format(&lc, "", buf, sizeof(buf));
    CHECK(strstr(buf, " TCWI ") != NULL);
}

/* Run a subcommand of the ustreams command (built beside this test); collect its
 * stdout lines; returns the exit status or -1. */
static int run_tool(const char *cmdline, char lines[][LOGMSGSZ + 128], int maxlines, int *nlines)
{
    char self[PATH_MAX], cmd[PATH_MAX + 256];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    FILE *f;
    int st;

    *nlines = 0;
    if (n <= 0)
        return -1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(cmd, sizeof(cmd), "%s/ustreams %s 2>/dev/null", self, cmdline);
    f = popen(cmd, "r");
    if (f == NULL)
        return -1;
    while (*nlines < maxlines && fgets(lines[*nlines], LOGMSGSZ + 128, f))
        (*nlines)++;
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_tools(void)
{
    static char lines[8][LOGMSGSZ + 128];
    int n, seq, ticks, level, mid, sid, num, hh, mm, ss;
    char flags[16];

    CHECK_EQ(run_tool("strace --demo -n 3", lines, 8, &n), 0);
    CHECK_EQ(n, 3);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(sscanf(lines[i], "%d %d:%d:%d %x %d %15s %d %d demo message %d", &seq, &hh, &mm,
                        &ss, (unsigned *)&ticks, &level, flags, &mid, &sid, &num),
                 10);
        CHECK_EQ(seq, i);
        CHECK_EQ(num, i);
        CHECK_EQ(level, i % 4);
        CHECK_EQ(mid, 42);
        CHECK_EQ(sid, i % 2);
        CHECK(strcmp(flags, "...") == 0); /* F, N, E unset (strace(1M)) */
    }
    /* a filter: mid 42, sid 1, levels <= 1 selects demo messages 1, 5, 9 */
    CHECK_EQ(run_tool("strace --demo -n 3 42 1 1", lines, 8, &n), 0);
    CHECK_EQ(n, 3);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(sscanf(lines[i], "%d %*s %*s %d %*s %d %d demo message %d", &seq, &level, &mid,
                        &sid, &num),
                 5);
        CHECK_EQ(seq, i);
        CHECK_EQ(num, 1 + 4 * i);
        CHECK_EQ(sid, 1);
    }
    /* "all" fields */
    CHECK_EQ(run_tool("strace --demo -n 2 all all 0", lines, 8, &n), 0);
    CHECK_EQ(n, 2);
    CHECK(strstr(lines[0], "demo message 0") && strstr(lines[1], "demo message 4"));
    /* -t ends a run without messages */
    CHECK_EQ(run_tool("strace -t 0.2", lines, 8, &n), 0);
    CHECK_EQ(n, 0);
    /* strerr writes to its file: tests/test_log_tools.c T.3 */
    /* usage errors: exit 1 (their messages: tests/test_log_tools.c T.5) */
    CHECK_EQ(run_tool("strace 1 2", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strace 1 2 256", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strace x 2 3", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strace -n", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strace -n 0", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strace -q", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strerr -t -1", lines, 8, &n), 1);
    CHECK_EQ(run_tool("strerr extra", lines, 8, &n), 1);
}

static void test_flush(void)
{
    int e = log_open();
    struct logmsg m;

    CHECK_EQ(ioc(e, I_ERRLOG, NULL, 0), 0);
    CHECK_EQ(strlog(1, 1, 0, SL_ERROR, "flushed"), 1);
    CHECK_EQ(strm_ioctl(e, I_FLUSH, FLUSHRW), 0);
    CHECK(nothing(e));
    CHECK_EQ(strlog(1, 1, 0, SL_ERROR, "kept"), 1);
    CHECK(readlog(e, &m, 1000) && strcmp(m.text, "kept") == 0);
    strm_close(e);
}

int main(void)
{
    log_private_rundir(); /* this test's loggers meet no other test's */
    test_open_minors();
    test_errlog();
    test_errlog_busy();
    test_trace_filters();
    test_many_loggers();
    test_sequences();
    test_trclog_errors();
    test_putmsg();
    test_flow_drop();
    test_console();
    test_strlog_format();
    test_log_format();
    test_tools();
    test_flush();
    ustreams_quiesce(5000);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
