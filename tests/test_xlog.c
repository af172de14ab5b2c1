/* SPDX-License-Identifier: MIT */
/*
 * test_xlog.c -- loggers see what other processes log (issue 21 item 13),
 * and the log sockets are a trust boundary (docs/SECURITY.md).
 *
 * References: log(7) (SVR4 / Solaris log(7D)): the error and trace loggers
 * receive the messages of every module and process; sequence numbers per
 * class.  docs/ADMIN.md "Logging" for the per-user rule.
 *   X.1 a child process logs with strlog (SL_TRACE, SL_ERROR, both) and by
 *       putmsg on the log device; the parent's trace and error loggers
 *       receive every one, in order, with the child's pid, consecutive
 *       sequence numbers, the child's mid/sid/level/text
 *   X.2 hostile input from the same uid: garbage datagrams (short, bad
 *       magic, bad class, bad flags, length mismatch, oversized, with a
 *       descriptor) are refused and counted (ls_xrejected), the descriptor
 *       closed, the logger alive: the next good message arrives
 *   X.3 another uid (hostile_become): a well-formed record from uid 65534
 *       is refused and counted; the logger stays alive
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/strlog.h>
#include <sys/un.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "hostile_util.h"
#include "log_util.h"
#include "rundir.h"
#include "xlog_wire.h"

#define LOGDEV "/dev/streams/log"
#define NMSG   200

static const struct trace_ids T_ALL = {-1, -1, (char)-1};

static int take(int fd, int cmd)
{
    struct strioctl sio = {cmd, 0, 0, NULL};
    if (cmd == I_TRCLOG) {
        sio.ic_len = sizeof(T_ALL);
        sio.ic_dp = (char *)&T_ALL;
    }
    return strm_ioctl(fd, I_STR, &sio);
}

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

/* X.1: the child's messages, in batches of BATCH: after each it waits for
 * the parent's byte on go[0] (the parent has read the batch), so that no
 * record is dropped at the parent's stream for flow control. */
#define BATCH 10
static int go[2];

static int child_logs(void *arg)
{
    (void)arg;
    int w = strm_open(LOGDEV, O_RDWR);
    char c;
    for (int i = 0; i < NMSG; i++) {
        int fl = i % 3 == 0 ? SL_TRACE : i % 3 == 1 ? SL_ERROR : SL_TRACE | SL_ERROR;
        CHECK_EQ(strlog(300, (short)i, 2, (unsigned short)fl, "child %d", i), 1);
        if (i % BATCH == BATCH - 1)
            CHECK_EQ(read(go[0], &c, 1), 1);
    }
    struct log_ctl lc;
    memset(&lc, 0, sizeof(lc));
    lc.flags = SL_ERROR;
    lc.level = 4;
    struct strbuf ctl = {0, sizeof(lc), (char *)&lc};
    struct strbuf data = {0, 9, "by putmsg"};
    CHECK_EQ(putmsg(w, &ctl, &data, 0), 0);
    strm_close(w);
    return 0;
}

static void test_child_to_parent(int e, int t)
{
    struct log_ctl lc;
    char text[LOGMSGSZ], want[64];
    int eprev = -1, tprev = -1, ne = 0, nt = 0;

    CHECK_EQ(pipe(go), 0);
    pid_t pid = fk_start(child_logs, NULL);
    for (int i = 0; i < NMSG; i++) {
        int fl = i % 3 == 0 ? SL_TRACE : i % 3 == 1 ? SL_ERROR : SL_TRACE | SL_ERROR;
        snprintf(want, sizeof(want), "child %d", i);
        if (fl & SL_ERROR) {
            CHECK(readlog(e, &lc, text, 2000) && strcmp(text, want) == 0);
            CHECK_EQ(lc.pid, pid);
            CHECK_EQ(lc.mid, 300);
            CHECK_EQ(lc.sid, i);
            CHECK_EQ(lc.level, 2);
            CHECK_EQ(lc.flags, fl);
            if (eprev >= 0)
                CHECK_EQ(lc.seq_no, eprev + 1);
            eprev = lc.seq_no;
            ne++;
        }
        if (fl & SL_TRACE) {
            CHECK(readlog(t, &lc, text, 2000) && strcmp(text, want) == 0);
            CHECK_EQ(lc.pid, pid);
            if (tprev >= 0)
                CHECK_EQ(lc.seq_no, tprev + 1);
            tprev = lc.seq_no;
            nt++;
        }
        if (i % BATCH == BATCH - 1)
            CHECK_EQ(write(go[1], "g", 1), 1);
    }
    CHECK_EQ(fk_wait(pid, 20000), 0);
    close(go[0]);
    close(go[1]);
    CHECK(readlog(e, &lc, text, 2000) && strcmp(text, "by putmsg") == 0);
    CHECK_EQ(lc.pid, pid);
    CHECK_EQ(lc.mid, LOG_MID);
    CHECK_EQ(lc.level, 4);
    CHECK_EQ(lc.seq_no, eprev + 1);
    printf("X.1: %d error and %d trace records from child %d\n", ne + 1, nt, (int)pid);
}

/* A socket connected to class index i's log socket ("log-error", ...). */
static int connect_log(const char *name)
{
    char dir[64];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    CHECK_EQ(ust_rundir(dir, sizeof(dir)), 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
    CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static size_t good_rec(unsigned char *buf, const char *text)
{
    struct xlog_rec r;
    size_t n = strlen(text);
    memset(&r, 0, sizeof(r));
    r.magic = XLOG_MAGIC;
    r.version = XLOG_VERSION;
    r.cls = 0x1; /* UST_LOGC_ERR */
    r.textlen = (uint16_t)n;
    r.flags = SL_ERROR;
    r.pri = 3;
    memcpy(buf, &r, sizeof(r));
    memcpy(buf + sizeof(r), text, n);
    return sizeof(r) + n;
}

/* X.2: send each kind of garbage; returns how many were sent. */
static int send_garbage(int s)
{
    unsigned char buf[sizeof(struct xlog_rec) + 2 * LOGMSGSZ];
    struct xlog_rec *r = (struct xlog_rec *)(void *)buf;
    size_t n;
    int sent = 0;

    CHECK_EQ(send(s, "x", 1, 0), 1), sent++; /* short */
    n = good_rec(buf, "bad magic");
    r->magic ^= 1;
    CHECK_EQ(send(s, buf, n, 0), (long)n), sent++;
    n = good_rec(buf, "bad class");
    r->cls = 0x2;
    CHECK_EQ(send(s, buf, n, 0), (long)n), sent++;
    n = good_rec(buf, "bad flags");
    r->flags = SL_ERROR | 0x100;
    CHECK_EQ(send(s, buf, n, 0), (long)n), sent++;
    n = good_rec(buf, "no class flag");
    r->flags = SL_TRACE;
    CHECK_EQ(send(s, buf, n, 0), (long)n), sent++;
    n = good_rec(buf, "length");
    r->textlen += 5;
    CHECK_EQ(send(s, buf, n, 0), (long)n), sent++;
    n = good_rec(buf, "pri");
    r->pri = -1;
    CHECK_EQ(send(s, buf, n, 0), (long)n), sent++;
    memset(buf, 'z', sizeof(buf)); /* oversized */
    n = good_rec(buf, "");
    r->textlen = LOGMSGSZ + 100;
    CHECK_EQ(send(s, buf, sizeof(r[0]) + LOGMSGSZ + 100, 0), (long)(sizeof(r[0]) + LOGMSGSZ + 100)),
        sent++;
    /* a good record with a descriptor attached */
    n = good_rec(buf, "with fd");
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr a;
    } c;
    struct iovec iov = {buf, n};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b,
                        .msg_controllen = sizeof(c.b)};
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &pfd[0], sizeof(int));
    CHECK_EQ(sendmsg(s, &mh, 0), (long)n), sent++;
    close(pfd[0]);
    close(pfd[1]);
    return sent;
}

static void test_garbage(int e)
{
    struct ust_log_stats st0, st1;
    struct log_ctl lc;
    char text[LOGMSGSZ];
    long fds0 = hostile_nfds();
    int s = connect_log("log-error");

    ust_log_getstats(&st0);
    int sent = send_garbage(s);
    /* then a good one from the same socket: it arrives, and nothing before */
    unsigned char buf[sizeof(struct xlog_rec) + 16];
    size_t n = good_rec(buf, "good");
    CHECK_EQ(send(s, buf, n, 0), (long)n);
    CHECK(readlog(e, &lc, text, 2000) && strcmp(text, "good") == 0);
    CHECK_EQ(lc.pid, getpid());
    ust_log_getstats(&st1);
    CHECK_EQ(st1.ls_xrejected - st0.ls_xrejected, sent);
    CHECK_EQ(st1.ls_xreceived - st0.ls_xreceived, 1);
    close(s);
    CHECK_EQ(hostile_nfds(), fds0); /* the passed descriptor was closed */
}

/* X.3: connect as root, become uid 65534, send a well-formed record. */
static int child_other_uid(void *arg)
{
    int s = *(int *)arg;
    unsigned char buf[sizeof(struct xlog_rec) + 16];
    if (hostile_become() != 0)
        return 1;
    size_t n = good_rec(buf, "from nobody");
    CHECK_EQ(send(s, buf, n, 0), (long)n);
    return 0;
}

static void test_other_uid(int e)
{
    struct ust_log_stats st0, st1;
    struct log_ctl lc;
    char text[LOGMSGSZ];

    if (!hostile_can_switch()) {
        hostile_skip("X.3 another uid");
        return;
    }
    int s = connect_log("log-error");
    ust_log_getstats(&st0);
    CHECK_EQ(fk_wait(fk_start(child_other_uid, &s), 10000), 0);
    CHECK_EQ(strlog(1, 1, 0, SL_ERROR, "still here"), 1);
    CHECK(readlog(e, &lc, text, 2000) && strcmp(text, "still here") == 0);
    ust_log_getstats(&st1);
    for (int i = 0; i < 50 && st1.ls_xrejected == st0.ls_xrejected; i++) {
        fk_sleep_ms(10);
        ust_log_getstats(&st1);
    }
    CHECK_EQ(st1.ls_xrejected - st0.ls_xrejected, 1);
    CHECK_EQ(st1.ls_xreceived, st0.ls_xreceived);
    close(s);
}

int main(void)
{
    log_private_rundir();
    int e = strm_open(LOGDEV, O_RDWR), t = strm_open(LOGDEV, O_RDWR);
    CHECK_EQ(take(e, I_ERRLOG), 0);
    CHECK_EQ(take(t, I_TRCLOG), 0);
    test_child_to_parent(e, t);
    test_garbage(e);
    test_other_uid(e);
    strm_close(t);
    strm_close(e);
    ustreams_quiesce(5000);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
