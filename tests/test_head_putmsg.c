/* SPDX-License-Identifier: MIT */
/*
 * test_head_putmsg.c -- conformance of the stream head's write side:
 * putmsg(2)/putpmsg(2) on STREAMS files and write holding (SNDHOLD), against
 * the "cdrv" test driver (head_cdrv.h).  write(2)/writev(2) are in
 * test_head_write.c; shared helpers in head_write_util.h.
 *
 * Cases are numbered by the reference page they check:
 *   W9  SNDHOLD: coalescing and every way the hold is sent
 *   W10 putmsg(2)/putpmsg(2): every part, flag and band case, every error
 * Every case closes its streams; the last checks that no block is left.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "harness.h"
#include "head_cdrv.h"
#include "sthead.h"
#include "head_write_util.h"

/* W9: holding */
static void test_hold(void)
{
    static unsigned char buf[UST_HOLDSZ + 600];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 13 + 1);
    int fd = open_dev();
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD), 0);
    int opt = 0;
    CHECK_EQ(strm_ioctl(fd, I_GWROPT, &opt), 0);
    CHECK_EQ(opt, SNDHOLD);

    /* several small writes arrive as one message, sent by the hold timer */
    long long t0 = cdrv_now();
    for (int i = 0; i < 5; i++)
        CHECK_EQ(strm_write(fd, buf + 10 * i, 10), 10);
    long long t1 = cdrv_now();
    int n = expect_data(buf, 50, UST_HOLDSZ, 1000);
    if (t1 - t0 < 5000000LL) /* all within half a tick: certainly one hold */
        CHECK_EQ(n, 1);
    CHECK(n < 5);

    /* a hold that fills up (UST_HOLDSZ bytes) goes, the next write starts a
     * new one: no message is larger than the hold */
    int nfill = UST_HOLDSZ / 10 + 13;
    for (int i = 0; i < nfill; i++)
        CHECK_EQ(strm_write(fd, buf + 10 * i, 10), 10);
    n = expect_data(buf, (size_t)nfill * 10, UST_HOLDSZ, 1000);
    CHECK(n >= 2 && n <= 3);

    /* a write that is not held sends the hold first: order kept */
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    CHECK_EQ(strm_write(fd, buf + 10, 500), 500);
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp && cdrv_len(mp) == 10 && memcmp(mp->b_rptr, buf, 10) == 0);
    freemsg(mp);
    CHECK_EQ(expect_data(buf + 10, 500, 500, 1000), 1);

    /* sent by an ioctl, before the ioctl returns */
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    int nr = -1;
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &nr), 0);
    mp = cdrv_down(0);
    CHECK(mp && cdrv_len(mp) == 10);
    freemsg(mp);

    /* sent by putmsg, before its own message */
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    struct strbuf c = {.len = 4, .buf = "ctl!"};
    CHECK_EQ(putmsg(fd, &c, NULL, 0), 0);
    mp = cdrv_down(0);
    CHECK(mp && mp->b_datap->db_type == M_DATA && cdrv_len(mp) == 10);
    freemsg(mp);
    mp = cdrv_down(0);
    CHECK(mp && mp->b_datap->db_type == M_PROTO);
    freemsg(mp);

    /* sent by a read (non-blocking: nothing to read) */
    set_nonblock(fd, 1);
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    char rb[8];
    errno = 0;
    CHECK_EQ(strm_read(fd, rb, sizeof(rb)), -1);
    CHECK_EQ(errno, EAGAIN);
    mp = cdrv_down(0);
    CHECK(mp && cdrv_len(mp) == 10);
    freemsg(mp);
    set_nonblock(fd, 0);
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &nr), 0); /* whatever the read left held */
    cdrv_clear();

    /* sent when SNDHOLD is turned off */
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, 0), 0);
    mp = cdrv_down(0);
    CHECK(mp && cdrv_len(mp) == 10);
    freemsg(mp);

    /* sent by the close: never lost */
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD), 0);
    CHECK_EQ(strm_write(fd, buf, 7), 7);
    CHECK_EQ(strm_close(fd), 0);
    mp = cdrv_down(0);
    CHECK(mp && cdrv_len(mp) == 7 && memcmp(mp->b_rptr, buf, 7) == 0);
    freemsg(mp);
    cdrv_clear();

    /* SO_STRHOLD from a module enables holding too */
    fd = open_dev();
    struct stroptions so;
    memset(&so, 0, sizeof(so));
    so.so_flags = SO_STRHOLD;
    cdrv_setopts(&so);
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    CHECK_EQ(strm_write(fd, buf + 10, 10), 10);
    CHECK(expect_data(buf, 20, UST_HOLDSZ, 1000) <= 2);
    close_dev(fd);
}

/* W9: two threads writing numbered records with holding on: each thread's
 * records arrive in its order, whoever sends the hold. */
struct seqjob {
    int fd;
    unsigned char id;
    int count;
};

static void *seq_writer(void *arg)
{
    struct seqjob *j = arg;
    for (int i = 0; i < j->count; i++) {
        unsigned char rec[10];
        memset(rec, 0, sizeof(rec));
        rec[0] = j->id;
        memcpy(rec + 1, &i, sizeof(i));
        if (strm_write(j->fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
            break;
        if (i % 97 == 0)
            sleep_ms(1);
    }
    return NULL;
}

static void test_hold_order(void)
{
    enum { N = 2000 };
    int fd = open_dev();
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD), 0);
    struct seqjob a = {fd, 1, N}, b = {fd, 2, N};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, seq_writer, &a);
    pthread_create(&tb, NULL, seq_writer, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    int next[3] = {0, 0, 0}, bad = 0, recs = 0;
    mblk_t *mp;
    while (recs < 2 * N && (mp = cdrv_down(1000)) != NULL) {
        mblk_t *flat = msgpullup(mp, -1);
        freemsg(mp);
        if (!flat)
            break;
        size_t len = cdrv_len(flat);
        bad += len % 10 != 0;
        for (size_t off = 0; off + 10 <= len; off += 10) {
            unsigned char id = flat->b_rptr[off];
            int seq;
            memcpy(&seq, flat->b_rptr + off + 1, sizeof(seq));
            if (id < 1 || id > 2 || seq != next[id])
                bad++;
            else
                next[id]++;
            recs++;
        }
        freemsg(flat);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(next[1], N);
    CHECK_EQ(next[2], N);
    close_dev(fd);
}

/* W10 */
static mblk_t *down1(void)
{
    return cdrv_down(1000);
}

static void test_putmsg(void)
{
    char cb[5000], db[300];
    memset(cb, 'c', sizeof(cb));
    memset(db, 'd', sizeof(db));
    struct strbuf c = {.len = 4, .buf = cb}, d = {.len = 6, .buf = db};
    int fd = open_dev();
    mblk_t *mp;

    /* control and data: M_PROTO + M_DATA */
    CHECK_EQ(putmsg(fd, &c, &d, 0), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PROTO && mp->b_wptr - mp->b_rptr == 4 && mp->b_cont &&
          mp->b_cont->b_datap->db_type == M_DATA && cdrv_len(mp->b_cont) == 6);
    freemsg(mp);
    /* control only */
    CHECK_EQ(putmsg(fd, &c, NULL, 0), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PROTO && !mp->b_cont);
    freemsg(mp);
    /* data only: M_DATA */
    CHECK_EQ(putmsg(fd, NULL, &d, 0), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_DATA && cdrv_len(mp) == 6);
    freemsg(mp);
    /* len -1 is "no part", both absent: nothing sent, 0 returned */
    struct strbuf none = {.len = -1, .buf = cb};
    CHECK_EQ(putmsg(fd, &none, &none, 0), 0);
    CHECK_EQ(putmsg(fd, NULL, NULL, 0), 0);
    CHECK(cdrv_down(20) == NULL);
    /* zero-length data part alone: a zero-length M_DATA */
    struct strbuf zero = {.len = 0, .buf = cb};
    CHECK_EQ(putmsg(fd, NULL, &zero, 0), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_DATA && cdrv_len(mp) == 0);
    freemsg(mp);
    /* zero-length control part with data */
    CHECK_EQ(putmsg(fd, &zero, &d, 0), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PROTO && mp->b_wptr == mp->b_rptr && mp->b_cont);
    freemsg(mp);
    /* RS_HIPRI: M_PCPROTO; needs a control part */
    CHECK_EQ(putmsg(fd, &c, &d, RS_HIPRI), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PCPROTO && mp->b_cont);
    freemsg(mp);
    CHECK_EQ(putmsg(fd, &zero, NULL, RS_HIPRI), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PCPROTO && cdrv_len(mp) == 0);
    freemsg(mp);
    errno = 0;
    CHECK_EQ(putmsg(fd, NULL, &d, RS_HIPRI), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(putmsg(fd, &c, &d, MSG_BAND), -1); /* putmsg: only 0 and RS_HIPRI */
    CHECK_EQ(errno, EINVAL);

    /* putpmsg bands */
    CHECK_EQ(putpmsg(fd, &c, &d, 5, MSG_BAND), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PROTO && mp->b_band == 5);
    freemsg(mp);
    CHECK_EQ(putpmsg(fd, NULL, &d, 255, MSG_BAND), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_DATA && mp->b_band == 255);
    freemsg(mp);
    CHECK_EQ(putpmsg(fd, &c, NULL, 0, MSG_HIPRI), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PCPROTO && mp->b_band == 0);
    freemsg(mp);
    int bad_cases[][2] = {{256, MSG_BAND}, {-1, MSG_BAND}, {1, MSG_HIPRI},
                          {0, 0},          {0, MSG_ANY},   {0, MSG_BAND | MSG_HIPRI}};
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        errno = 0;
        CHECK_EQ(putpmsg(fd, &c, &d, bad_cases[i][0], bad_cases[i][1]), -1);
        CHECK_EQ(errno, EINVAL);
    }
    errno = 0;
    CHECK_EQ(putpmsg(fd, NULL, &d, 0, MSG_HIPRI), -1);
    CHECK_EQ(errno, EINVAL);

    /* ERANGE */
    struct strbuf big = {.len = UST_STRCTLSZ + 1, .buf = cb};
    errno = 0;
    CHECK_EQ(putmsg(fd, &big, NULL, 0), -1);
    CHECK_EQ(errno, ERANGE);
    struct strbuf neg = {.len = -2, .buf = cb};
    errno = 0;
    CHECK_EQ(putmsg(fd, NULL, &neg, 0), -1);
    CHECK_EQ(errno, ERANGE);
    queue_t *wq = cdrv_wq();
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, 100), 0);
    struct strbuf d101 = {.len = 101, .buf = db}, d100 = {.len = 100, .buf = db};
    errno = 0;
    CHECK_EQ(putmsg(fd, &c, &d101, 0), -1); /* putmsg never splits */
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(putmsg(fd, &c, &d100, 0), 0);
    CHECK_EQ(strqset(wq, QMINPSZ, 0, 10), 0);
    errno = 0;
    CHECK_EQ(putmsg(fd, NULL, &d, 0), -1);
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(putmsg(fd, &c, NULL, 0), 0); /* no data part: no minimum to meet */
    CHECK_EQ(strqset(wq, QMINPSZ, 0, 0), 0);
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, INFPSZ), 0);
    CHECK_EQ(cdrv_clear(), 2);

    /* EFAULT */
    struct strbuf badbuf = {.len = 4, .buf = (char *)-1};
    errno = 0;
    CHECK_EQ(putmsg(fd, &badbuf, NULL, 0), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(putmsg(fd, &c, &badbuf, 0), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(putmsg(fd, (struct strbuf *)-1, NULL, 0), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(putpmsg(fd, NULL, (struct strbuf *)-1, 0, MSG_BAND), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK(cdrv_down(20) == NULL);

    /* flow control by band; high priority is never flow controlled */
    CHECK_EQ(strqset(wq, QHIWAT, 1, 10), 0);
    CHECK_EQ(strqset(wq, QLOWAT, 1, 5), 0);
    CHECK_EQ(strqset(wq, QHIWAT, 0, 10), 0);
    cdrv_gate_close();
    set_nonblock(fd, 1);
    struct strbuf d20 = {.len = 20, .buf = db};
    CHECK_EQ(putpmsg(fd, NULL, &d20, 1, MSG_BAND), 0);
    errno = 0;
    CHECK_EQ(putpmsg(fd, NULL, &d20, 1, MSG_BAND), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(putpmsg(fd, NULL, &d20, 0, MSG_BAND), 0); /* band 0 has its own room */
    errno = 0;
    CHECK_EQ(putmsg(fd, &c, &d20, 0), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(putmsg(fd, &c, &d20, RS_HIPRI), 0);
    mp = down1();
    CHECK(mp && mp->b_datap->db_type == M_PCPROTO);
    freemsg(mp);
    set_nonblock(fd, 0);
    cdrv_gate_open();
    for (int i = 0; i < 200 && cdrv_wcount() > 0; i++)
        sleep_ms(5);
    mp = down1(); /* band 1 goes first */
    CHECK(mp && mp->b_band == 1);
    freemsg(mp);
    mp = down1();
    CHECK(mp && mp->b_band == 0);
    freemsg(mp);
    close_dev(fd);
}

int main(void)
{
    set_handler(SIGPIPE, on_sigpipe, 1);
    CHECK(cdrv_register() > 0);
    test_hold();
    test_hold_order();
    test_putmsg();
    CHECK_EQ(atomic_load(&cdrv_nopen), 0);
    th_assert_no_blocks();
    return CHECK_RESULT();
}
