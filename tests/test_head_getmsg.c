/* SPDX-License-Identifier: MIT */
/*
 * test_head_getmsg.c -- conformance of reading messages from a stream:
 * getmsg(2), getpmsg(2), I_PEEK, I_NREAD, and M_PASSFP at the front
 * (src/head/sd_getmsg.c).  read(2)/readv(2) are in test_head_read.c; shared
 * helpers in head_read_util.h.
 *
 * The stream is "/dev/streams/hdrv" (tests/head_tdrv.h): the test puts the
 * messages to be read up the stream with hdrv_up() and sets read options with
 * M_SETOPTS SO_READOPT, as a module would.
 * References: read(2) and readv(2) (POSIX.1-2008 / SVID, the STREAMS
 * paragraphs), streamio(7) (I_SRDOPT modes and protocol options, I_PEEK,
 * I_NREAD, SO_MREADON), getmsg(2)/getpmsg(2), Linux Fast-STREAMS read-fill
 * (RFILL).  Cases:
 *   R.5  read(2)/getmsg(2)/I_PEEK: an M_PASSFP at the front fails with EBADMSG
 *   R.12 getmsg(2): control and data parts, len -1 for an absent part or one
 *        not asked for, 0 for a zero-length one; MORECTL/MOREDATA with the
 *        rest kept at the front as the same type and band; maxlen -1, NULL,
 *        0; RS_HIPRI only
 *   R.13 getpmsg(2): MSG_ANY, MSG_BAND (band >= *bandp, high priority
 *        qualifies), MSG_HIPRI; returned flags and band; EINVAL for bad flags,
 *        MSG_HIPRI with a band, a band out of range
 *   R.14 getmsg(2) blocking, EAGAIN, hang-up (0 with both lengths 0), the
 *        read error, EFAULT (nothing lost), EBADF/ENOSTR
 *   R.15 I_PEEK (ust_sd_peek_msg) and I_NREAD (ust_sd_nread)
 *   R.18 nothing leaks
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "head_tdrv.h"
#include "sthead.h"
#include "head_read_util.h"

/* ------------------------------------------------------------------------ */
/* R.5 M_PASSFP                                                             */
/* ------------------------------------------------------------------------ */
static void test_passfp(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char buf[64];
    int flags = 0;
    struct strbuf ctl = {.maxlen = sizeof(buf), .buf = buf};

    hdrv_up(hmsg(M_PASSFP, 0, "fp"));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADMSG);
    CHECK_EQ(getmsg(fd, &ctl, NULL, &flags), -1);
    CHECK_EQ(errno, EBADMSG);
    struct strpeek pk = {.ctlbuf = {.maxlen = 8, .buf = buf}};
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), -EBADMSG);
    CHECK_EQ(ust_sd_nread(sd, NULL), 1);
    /* a read that has data stops before it */
    hdrv_up(hmsg2(M_FLUSH, 0, (unsigned char[]){FLUSHR}, 1, NULL, 0));
    hdrv_up_str(0, "d");
    hdrv_up(hmsg(M_PASSFP, 0, "fp"));
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 1);
    CHECK_EQ(ust_sd_nread(sd, NULL), 1);
    CHECK_EQ(strm_close(fd), 0);
}


/* ------------------------------------------------------------------------ */
/* R.12 getmsg parts                                                        */
/* ------------------------------------------------------------------------ */
static void test_getmsg_parts(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char cb[32], db[32];
    struct strbuf ctl = {.maxlen = sizeof(cb), .buf = cb};
    struct strbuf dat = {.maxlen = sizeof(db), .buf = db};
    int flags;

    /* M_PROTO with both parts */
    hdrv_up(hmsg2(M_PROTO, 0, "ctl", 3, "data", 4));
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, 3);
    CHECK_EQ(dat.len, 4);
    CHECK(memcmp(cb, "ctl", 3) == 0 && memcmp(db, "data", 4) == 0);
    CHECK_EQ(flags, 0);
    /* M_DATA: no control part */
    hdrv_up_str(0, "just");
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, -1);
    CHECK_EQ(dat.len, 4);
    /* control only: no data part */
    hdrv_up(hmsg(M_PROTO, 0, "only"));
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, 4);
    CHECK_EQ(dat.len, -1);
    /* zero-length parts are 0, and consumed even with maxlen 0 */
    hdrv_up(hmsg2(M_PROTO, 0, NULL, 0, "", 0));
    struct strbuf c0 = {.maxlen = 0, .buf = cb}, d0 = {.maxlen = 0, .buf = db};
    CHECK_EQ(getmsg(fd, &c0, &d0, &flags), 0);
    CHECK_EQ(c0.len, 0);
    CHECK_EQ(d0.len, 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);

    /* MORECTL|MOREDATA: the rest stays as the same type and band */
    hdrv_up(hmsg2(M_PCPROTO, 0, "abcdef", 6, "xyz", 3));
    struct strbuf c2 = {.maxlen = 2, .buf = cb}, d1 = {.maxlen = 1, .buf = db};
    CHECK_EQ(getmsg(fd, &c2, &d1, &flags), MORECTL | MOREDATA);
    CHECK_EQ(flags, RS_HIPRI);
    CHECK(c2.len == 2 && memcmp(cb, "ab", 2) == 0);
    CHECK(d1.len == 1 && db[0] == 'x');
    flags = RS_HIPRI;
    CHECK_EQ(getmsg(fd, &c2, &dat, &flags), MORECTL); /* still high priority */
    CHECK(c2.len == 2 && memcmp(cb, "cd", 2) == 0);
    CHECK(dat.len == 2 && memcmp(db, "yz", 2) == 0);
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK(ctl.len == 2 && memcmp(cb, "ef", 2) == 0);
    CHECK_EQ(dat.len, -1); /* the data part was read to the end */
    CHECK_EQ(flags, RS_HIPRI);
    CHECK(!(pollev(fd) & POLLPRI));

    /* control read to the end, data left: an empty control part remains */
    hdrv_up(hmsg2(M_PROTO, 3, "cc", 2, "dddd", 4));
    int band = 3;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fd, &ctl, &d1, &band, &flags), MOREDATA);
    CHECK_EQ(ctl.len, 2);
    CHECK_EQ(d1.len, 1);
    band = 3;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fd, &ctl, &dat, &band, &flags), 0);
    CHECK_EQ(ctl.len, 0);
    CHECK(dat.len == 3 && memcmp(db, "ddd", 3) == 0);
    CHECK_EQ(band, 3);
    CHECK_EQ(flags, MSG_BAND);

    /* maxlen -1 and NULL: that part is not processed, it stays */
    hdrv_up(hmsg2(M_PROTO, 0, "CC", 2, "DD", 2));
    struct strbuf cm = {.maxlen = -1, .buf = cb};
    flags = 0;
    CHECK_EQ(getmsg(fd, &cm, &dat, &flags), MORECTL);
    CHECK_EQ(cm.len, -1);
    CHECK(dat.len == 2 && memcmp(db, "DD", 2) == 0);
    CHECK_EQ(getmsg(fd, &ctl, NULL, &flags), 0);
    CHECK(ctl.len == 2 && memcmp(cb, "CC", 2) == 0);
    hdrv_up(hmsg2(M_PROTO, 0, "CC", 2, "DD", 2));
    CHECK_EQ(getmsg(fd, NULL, NULL, &flags), MORECTL | MOREDATA);
    CHECK_EQ(ust_sd_nread(sd, NULL), 1);
    /* maxlen 0 with bytes waiting: len 0, the bytes stay */
    CHECK_EQ(getmsg(fd, &c0, &d0, &flags), MORECTL | MOREDATA);
    CHECK_EQ(c0.len, 0);
    CHECK_EQ(d0.len, 0);
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK(ctl.len == 2 && dat.len == 2);
    /* getmsg(fd, NULL, NULL) on a zero-length message consumes it */
    hdrv_up(hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
    CHECK_EQ(getmsg(fd, NULL, NULL, &flags), 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);

    /* RS_HIPRI takes only a high-priority message */
    hdrv_up_str(0, "norm");
    flags = RS_HIPRI;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), -1);
    CHECK_EQ(errno, EAGAIN);
    hdrv_up(hmsg(M_PCPROTO, 0, "hi"));
    flags = RS_HIPRI;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK(ctl.len == 2 && memcmp(cb, "hi", 2) == 0);
    CHECK_EQ(flags, RS_HIPRI);
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(dat.len, 4);
    CHECK_EQ(flags, 0);
    CHECK(!(pollev(fd) & POLLIN));
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.13 getpmsg flags and bands                                             */
/* ------------------------------------------------------------------------ */
static void test_getpmsg_bands(void)
{
    int fd = open_hdrv(1);
    char db[32];
    struct strbuf dat = {.maxlen = sizeof(db), .buf = db};
    int band, flags;

    hdrv_up_str(0, "b0");
    hdrv_up_str(2, "b2");
    hdrv_up_str(5, "b5");
    band = 6;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), -1); /* nothing >= 6 */
    CHECK_EQ(errno, EAGAIN);
    band = 3;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), 0);
    CHECK(dat.len == 2 && memcmp(db, "b5", 2) == 0);
    CHECK_EQ(band, 5);
    CHECK_EQ(flags, MSG_BAND);
    band = 3;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), -1); /* b2 < 3 at the front */
    CHECK_EQ(errno, EAGAIN);
    hdrv_up(hmsg(M_PCPROTO, 0, "pc")); /* high priority satisfies MSG_BAND */
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), MORECTL);
    CHECK_EQ(flags, MSG_HIPRI);
    CHECK_EQ(band, 0);
    struct strbuf ctl = {.maxlen = sizeof(db), .buf = db};
    band = 0;
    flags = MSG_HIPRI;
    CHECK_EQ(getpmsg(fd, &ctl, NULL, &band, &flags), 0);
    CHECK_EQ(flags, MSG_HIPRI);
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 2);
    CHECK_EQ(flags, MSG_BAND);
    band = 99; /* ignored with MSG_ANY */
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 0);
    CHECK_EQ(flags, MSG_BAND);

    /* EINVAL: nothing consumed */
    hdrv_up_str(0, "stay");
    int bad[][2] = {{MSG_HIPRI, 1},          {MSG_BAND, -1},           {MSG_BAND, 256}, {0, 0},
                    {MSG_ANY | MSG_BAND, 0}, {MSG_HIPRI | MSG_ANY, 0}, {8, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        flags = bad[i][0];
        band = bad[i][1];
        CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), -1);
        CHECK_EQ(errno, EINVAL);
    }
    flags = MSG_BAND; /* getmsg's flags are RS_HIPRI or 0 */
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EINVAL);
    band = 255;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fd, NULL, &dat, &band, &flags), -1);
    CHECK_EQ(errno, EAGAIN);
    flags = 0;
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), 0);
    CHECK(dat.len == 4 && memcmp(db, "stay", 4) == 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.14 getmsg blocking and errors                                          */
/* ------------------------------------------------------------------------ */
struct greader {
    int fd, flags, ret, err;
    char cb[16], db[16];
    struct strbuf ctl, dat;
    pthread_t thread;
};

static void *greader_main(void *arg)
{
    struct greader *g = arg;
    g->ctl = (struct strbuf){.maxlen = sizeof(g->cb), .buf = g->cb};
    g->dat = (struct strbuf){.maxlen = sizeof(g->db), .buf = g->db};
    g->ret = getmsg(g->fd, &g->ctl, &g->dat, &g->flags);
    g->err = errno;
    return NULL;
}

static void test_getmsg_errors(void)
{
    int fd = open_hdrv(0);
    char db[16];
    struct strbuf dat = {.maxlen = sizeof(db), .buf = db};
    int flags = 0, band = 0;
    struct greader g;

    /* blocks until a message comes; RS_HIPRI waits past normal ones */
    memset(&g, 0, sizeof(g));
    g.fd = fd;
    g.flags = RS_HIPRI;
    CHECK_EQ(pthread_create(&g.thread, NULL, greader_main, &g), 0);
    sleep_ms(30);
    hdrv_up_str(0, "norm");
    sleep_ms(30);
    hdrv_up(hmsg(M_PCPROTO, 0, "HP"));
    pthread_join(g.thread, NULL);
    CHECK_EQ(g.ret, 0);
    CHECK(g.ctl.len == 2 && memcmp(g.cb, "HP", 2) == 0);
    CHECK_EQ(g.flags, RS_HIPRI);

    /* EFAULT: nothing lost */
    struct strbuf badd = {.maxlen = 4, .buf = (char *)8};
    CHECK_EQ(getmsg(fd, NULL, &badd, &flags), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(getmsg(fd, NULL, &dat, NULL), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(getpmsg(fd, NULL, &dat, NULL, &flags), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(getmsg(fd, (struct strbuf *)8, &dat, &flags), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), 0);
    CHECK(dat.len == 4 && memcmp(db, "norm", 4) == 0);

    /* EBADF, ENOSTR */
    CHECK_EQ(getmsg(-1, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(getmsg(-1, NULL, &dat, NULL), -1); /* the descriptor first */
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(getpmsg(0x7fffff, NULL, &dat, &band, &flags), -1);
    CHECK_EQ(errno, EBADF);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(getmsg(p[0], NULL, &dat, &flags), -1);
    CHECK_EQ(errno, ENOSTR);
    close(p[0]);
    close(p[1]);

    /* EAGAIN, the read error, STPLEX */
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){EPROTO, 0xff}, 2);
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EPROTO);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0, 0xff}, 2);
    struct stdata *sd = sdof(fd);
    ust_lock(&sd->sd_lock);
    sd->sd_flag |= STPLEX;
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EINVAL);
    ust_lock(&sd->sd_lock);
    sd->sd_flag &= ~STPLEX;
    ust_unlock(&sd->sd_lock);

    /* hang-up: a waiting getmsg returns 0 with both lengths 0 */
    memset(&g, 0, sizeof(g));
    g.fd = fd;
    CHECK_EQ(pthread_create(&g.thread, NULL, greader_main, &g), 0);
    sleep_ms(30);
    hdrv_up_bytes(M_HANGUP, NULL, 0);
    pthread_join(g.thread, NULL);
    CHECK_EQ(g.ret, 0);
    CHECK_EQ(g.ctl.len, 0);
    CHECK_EQ(g.dat.len, 0);
    hdrv_down_clear();
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.15 I_PEEK, I_NREAD                                                     */
/* ------------------------------------------------------------------------ */
static void test_peek_nread(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char cb[16], db[16];
    int bytes = -1;

    struct strpeek pk = {.ctlbuf = {.maxlen = sizeof(cb), .buf = cb},
                         .databuf = {.maxlen = sizeof(db), .buf = db}};
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 0);
    CHECK_EQ(ust_sd_nread(sd, &bytes), 0);
    CHECK_EQ(bytes, 0);

    hdrv_up(hmsg2(M_PROTO, 0, "CTL", 3, "data", 4));
    hdrv_up_str(0, "more");
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 1);
    CHECK(pk.ctlbuf.len == 3 && memcmp(cb, "CTL", 3) == 0);
    CHECK(pk.databuf.len == 4 && memcmp(db, "data", 4) == 0);
    CHECK_EQ(pk.flags, 0);
    CHECK_EQ(ust_sd_nread(sd, &bytes), 2);
    CHECK_EQ(bytes, 4);
    /* maxlen smaller: truncated copy, nothing removed */
    pk.ctlbuf.maxlen = 1;
    pk.databuf.maxlen = 0;
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 1);
    CHECK_EQ(pk.ctlbuf.len, 1);
    CHECK_EQ(pk.databuf.len, 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 2);
    /* RS_HIPRI: only a high-priority message */
    pk.flags = RS_HIPRI;
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 0);
    hdrv_up(hmsg(M_PCPROTO, 0, "PC"));
    pk.ctlbuf.maxlen = sizeof(cb);
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 1);
    CHECK(pk.ctlbuf.len == 2 && memcmp(cb, "PC", 2) == 0);
    CHECK_EQ(pk.databuf.len, -1);
    CHECK_EQ(pk.flags, RS_HIPRI);
    CHECK_EQ(ust_sd_nread(sd, &bytes), 3);
    CHECK_EQ(bytes, 0);
    /* what getmsg leaves of a message: its control part read, the data not */
    char buf[64];
    struct strbuf ctl = {.maxlen = sizeof(buf), .buf = buf};
    int flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, NULL, &flags), 0); /* the M_PCPROTO */
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, NULL, &flags), MOREDATA);
    pk.flags = 0;
    pk.databuf.maxlen = sizeof(db);
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 1);
    CHECK_EQ(pk.ctlbuf.len, 0); /* an empty control part keeps it M_PROTO */
    CHECK(pk.databuf.len == 4 && memcmp(db, "data", 4) == 0);
    CHECK_EQ(getmsg(fd, &ctl, NULL, &flags), MOREDATA);
    struct strbuf dat = {.maxlen = sizeof(buf), .buf = buf};
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), 0);
    /* M_DATA: no control part */
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), 1);
    CHECK_EQ(pk.ctlbuf.len, -1);
    CHECK(pk.databuf.len == 4 && memcmp(db, "more", 4) == 0);
    /* the same through strm_ioctl */
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &bytes), 1);
    CHECK_EQ(bytes, 4);
    pk.ctlbuf.len = pk.databuf.len = 99;
    CHECK_EQ(strm_ioctl(fd, I_PEEK, &pk), 1);
    CHECK_EQ(pk.databuf.len, 4);
    /* errors */
    pk.flags = 2;
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), -EINVAL);
    pk.flags = 0;
    pk.databuf.buf = (char *)8;
    CHECK_EQ(ust_sd_peek_msg(sd, &pk), -EFAULT);
    CHECK_EQ(ust_sd_nread(sd, &bytes), 1);
    CHECK_EQ(bytes, 4);
    CHECK_EQ(strm_close(fd), 0);
}

int main(void)
{
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_passfp();
    test_getmsg_parts();
    test_getpmsg_bands();
    test_getmsg_errors();
    test_peek_nread();

    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
