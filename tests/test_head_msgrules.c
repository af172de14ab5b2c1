/* SPDX-License-Identifier: MIT */
/*
 * test_head_msgrules.c -- the message calls rule by rule: getmsg(2) /
 * getpmsg(2), putmsg(2) / putpmsg(2), and the SIGPOLL events of flow-control
 * relief (S_OUTPUT, S_WRBAND of streamio(7) I_SETSIG).  One case per rule,
 * numbered; each cites its page.  (More cases of the same calls are in
 * test_head_getmsg.c and test_head_putmsg.c.)
 *
 * getmsg(2)/getpmsg(2), "DESCRIPTION" and "ERRORS":
 *   G.1  ctlptr/dataptr NULL: that part is not processed (it stays queued,
 *        MORECTL/MOREDATA says so)
 *   G.2  maxlen -1: the same as NULL; len is -1 on return
 *   G.3  len -1 on return for a part the message does not have
 *   G.4  len 0 for a zero-length part (and the part is consumed)
 *   G.5  maxlen 0 with a non-empty part: len 0, MORECTL/MOREDATA, the part
 *        stays
 *   G.6  MORECTL|MOREDATA when neither part fits; the rest keeps its type and
 *        band and is returned by the next call
 *   G.7  getmsg flags 0: the first message; RS_HIPRI returned for a
 *        high-priority one, 0 for the others
 *   G.8  getmsg RS_HIPRI: only a high-priority message (none: EAGAIN, the
 *        normal message stays)
 *   G.9  getmsg flags other than 0/RS_HIPRI: EINVAL
 *   G.10 getpmsg MSG_ANY: the first message; *flagsp MSG_HIPRI or MSG_BAND,
 *        *bandp its band (0 for high priority)
 *   G.11 getpmsg MSG_BAND: the first message if its band >= *bandp (a
 *        high-priority message qualifies)
 *   G.12 getpmsg MSG_BAND with *bandp above every queued band: EAGAIN,
 *        nothing taken
 *   G.13 getpmsg MSG_HIPRI with *bandp not 0: EINVAL
 *   G.14 getpmsg MSG_HIPRI: only a high-priority message; *bandp 0
 *   G.15 getpmsg flags not exactly one of MSG_ANY, MSG_BAND, MSG_HIPRI:
 *        EINVAL; MSG_BAND with a band outside 0..255: EINVAL
 *   G.16 flagsp / bandp unaddressable: EFAULT, nothing taken
 * putmsg(2)/putpmsg(2):
 *   U.1  neither part, flags 0 (putpmsg MSG_BAND): nothing sent, 0
 *   U.2  RS_HIPRI / MSG_HIPRI without a control part: EINVAL (also with
 *        neither part)
 *   U.3  putmsg flags other than 0/RS_HIPRI: EINVAL
 *   U.4  putpmsg MSG_HIPRI with a band not 0: EINVAL
 *   U.5  putpmsg flags other than MSG_HIPRI/MSG_BAND (MSG_ANY, 0, both):
 *        EINVAL; a band outside 0..255: EINVAL
 *   U.6  control and data: M_PROTO (M_PCPROTO for RS_HIPRI) then M_DATA; the
 *        band of MSG_BAND on the message
 *   U.7  data only: M_DATA with the band
 *   U.8  a control part longer than the largest (4096): ERANGE
 *   U.9  len -1 means no part; a zero-length control part is a part
 *   U.10 a band full: EAGAIN (O_NONBLOCK); high priority goes regardless
 * streamio(7) I_SETSIG:
 *   S.1  S_OUTPUT is raised when band 0 is no longer full: I_FLUSH FLUSHRW
 *        relieving band 1 alone raises no S_OUTPUT
 *   S.2  ... and raises S_WRBAND (band 1 was full, now writable)
 *   S.3  band 0 full, then relieved: S_OUTPUT
 *   S.4  relief of a stream nothing was found full on raises neither
 * And nothing leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <ustreams.h>

#include "check.h"
#include "head_cdrv.h"
#include "head_tdrv.h"
#include "sthead.h"

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int open_h(void)
{
    int fd = strm_open("/dev/streams/hdrv", O_RDWR | O_NONBLOCK);
    CHECK(fd >= 0);
    return fd;
}

static int nread(int fd)
{
    int b;
    return strm_ioctl(fd, I_NREAD, &b);
}

/* getmsg with strbufs of the given maxlens (-2: NULL pointer) */
struct gm {
    char c[16], d[16];
    struct strbuf cb, db;
    int r, e, flags, band;
};

static void gm_call(int fd, struct gm *g, int cmax, int dmax, int pmsg)
{
    g->cb = (struct strbuf){.maxlen = cmax, .len = 77, .buf = g->c};
    g->db = (struct strbuf){.maxlen = dmax, .len = 77, .buf = g->d};
    errno = 0;
    if (pmsg)
        g->r = getpmsg(fd, cmax == -2 ? NULL : &g->cb, dmax == -2 ? NULL : &g->db, &g->band,
                       &g->flags);
    else
        g->r = getmsg(fd, cmax == -2 ? NULL : &g->cb, dmax == -2 ? NULL : &g->db, &g->flags);
    g->e = g->r < 0 ? errno : 0;
}

static void up_proto(unsigned char type, unsigned char band, const char *c, const char *d)
{
    hdrv_up(hmsg2(type, band, c, strlen(c), d, d ? strlen(d) : 0));
}

static void test_getmsg(void)
{
    struct gm g;
    int fd = open_h();

    /* G.1 */
    up_proto(M_PROTO, 0, "ctl", "data");
    g.flags = 0;
    gm_call(fd, &g, -2, 16, 0);
    CHECK_EQ(g.r, MORECTL);
    CHECK_EQ(g.db.len, 4);
    CHECK_EQ(nread(fd), 1); /* the control part stays */
    g.flags = 0;
    gm_call(fd, &g, 16, -2, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.cb.len, 3);
    CHECK_EQ(nread(fd), 0);

    /* G.2 */
    up_proto(M_PROTO, 0, "ctl", "data");
    g.flags = 0;
    gm_call(fd, &g, -1, 16, 0);
    CHECK_EQ(g.r, MORECTL);
    CHECK_EQ(g.cb.len, -1);
    CHECK_EQ(g.db.len, 4);
    g.flags = 0;
    gm_call(fd, &g, 16, -1, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.cb.len, 3);
    CHECK_EQ(g.db.len, -1);

    /* G.3 */
    hdrv_up_str(0, "data");
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.cb.len, -1);
    CHECK_EQ(g.db.len, 4);
    up_proto(M_PROTO, 0, "ctl", NULL);
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.cb.len, 3);
    CHECK_EQ(g.db.len, -1);

    /* G.4 */
    up_proto(M_PROTO, 0, "", "");
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.cb.len, 0);
    CHECK_EQ(g.db.len, 0);
    CHECK_EQ(nread(fd), 0);

    /* G.5 */
    up_proto(M_PROTO, 0, "ctl", "data");
    g.flags = 0;
    gm_call(fd, &g, 0, 0, 0);
    CHECK_EQ(g.r, MORECTL | MOREDATA);
    CHECK_EQ(g.cb.len, 0);
    CHECK_EQ(g.db.len, 0);
    CHECK_EQ(nread(fd), 1);
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.cb.len, 3);
    CHECK_EQ(g.db.len, 4);

    /* G.6 */
    up_proto(M_PROTO, 5, "control", "payload");
    g.flags = MSG_ANY;
    g.band = 0;
    gm_call(fd, &g, 3, 2, 1);
    CHECK_EQ(g.r, MORECTL | MOREDATA);
    CHECK_EQ(g.band, 5);
    CHECK_EQ(memcmp(g.c, "con", 3), 0);
    g.flags = MSG_ANY;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.flags, MSG_BAND);
    CHECK_EQ(g.band, 5);
    CHECK_EQ(g.cb.len, 4);
    CHECK_EQ(memcmp(g.c, "trol", 4), 0);
    CHECK_EQ(g.db.len, 5);
    CHECK_EQ(memcmp(g.d, "yload", 5), 0);

    /* G.7 */
    hdrv_up_str(0, "n");
    up_proto(M_PCPROTO, 0, "pc", NULL);
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.flags, RS_HIPRI);
    CHECK_EQ(g.cb.len, 2);
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.flags, 0);
    CHECK_EQ(g.db.len, 1);

    /* G.8 */
    hdrv_up_str(0, "n");
    g.flags = RS_HIPRI;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.e, EAGAIN);
    CHECK_EQ(nread(fd), 1);
    up_proto(M_PCPROTO, 0, "pc", NULL);
    g.flags = RS_HIPRI;
    gm_call(fd, &g, 16, 16, 0);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.flags, RS_HIPRI);
    CHECK_EQ(nread(fd), 1);

    /* G.9 */
    for (int f = 1; f <= 8; f <<= 1) {
        if (f == RS_HIPRI)
            continue;
        g.flags = f;
        gm_call(fd, &g, 16, 16, 0);
        CHECK_EQ(g.e, EINVAL);
    }
    CHECK_EQ(nread(fd), 1);
    g.flags = 0;
    gm_call(fd, &g, 16, 16, 0); /* take the "n" */

    /* G.10 */
    hdrv_up_str(3, "b3");
    g.flags = MSG_ANY;
    g.band = 200; /* ignored */
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.flags, MSG_BAND);
    CHECK_EQ(g.band, 3);
    up_proto(M_PCPROTO, 0, "pc", NULL);
    g.flags = MSG_ANY;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.flags, MSG_HIPRI);
    CHECK_EQ(g.band, 0);

    /* G.11, G.12 */
    hdrv_up_str(1, "b1");
    hdrv_up_str(4, "b4");
    g.flags = MSG_BAND;
    g.band = 5;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.e, EAGAIN); /* G.12 */
    CHECK_EQ(nread(fd), 2);
    g.flags = MSG_BAND;
    g.band = 2;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.band, 4); /* G.11 */
    g.flags = MSG_BAND;
    g.band = 2;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.e, EAGAIN); /* band 1 left: below 2 */
    up_proto(M_PCPROTO, 0, "pc", NULL);
    g.flags = MSG_BAND;
    g.band = 9;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.flags, MSG_HIPRI); /* high priority qualifies */
    g.flags = MSG_BAND;
    g.band = 0;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.band, 1);

    /* G.13, G.14 */
    up_proto(M_PCPROTO, 0, "pc", NULL);
    g.flags = MSG_HIPRI;
    g.band = 1;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.e, EINVAL);
    CHECK_EQ(nread(fd), 1);
    hdrv_up_str(2, "b2");
    g.flags = MSG_HIPRI;
    g.band = 0;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.r, 0);
    CHECK_EQ(g.flags, MSG_HIPRI);
    CHECK_EQ(g.band, 0);
    g.flags = MSG_HIPRI;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.e, EAGAIN);

    /* G.15 */
    static const int badflags[] = {0, MSG_HIPRI | MSG_BAND, MSG_ANY | MSG_BAND, 0x10, -1};
    for (size_t i = 0; i < sizeof(badflags) / sizeof(badflags[0]); i++) {
        g.flags = badflags[i];
        g.band = 0;
        gm_call(fd, &g, 16, 16, 1);
        CHECK_EQ(g.e, EINVAL);
    }
    g.flags = MSG_BAND;
    g.band = 256;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.e, EINVAL);
    g.flags = MSG_BAND;
    g.band = -1;
    gm_call(fd, &g, 16, 16, 1);
    CHECK_EQ(g.e, EINVAL);
    CHECK_EQ(nread(fd), 1);

    /* G.16 */
    errno = 0;
    CHECK_EQ(getmsg(fd, NULL, NULL, (int *)8), -1);
    CHECK_EQ(errno, EFAULT);
    int fl = MSG_ANY;
    errno = 0;
    CHECK_EQ(getpmsg(fd, NULL, NULL, (int *)8, &fl), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(nread(fd), 1);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */

static int open_c(void)
{
    atomic_store(&cdrv_gate, 0);
    cdrv_clear();
    int fd = strm_open("/dev/streams/cdrv", O_RDWR | O_NONBLOCK);
    CHECK(fd >= 0);
    return fd;
}

static void close_c(int fd)
{
    cdrv_gate_open();
    CHECK_EQ(strm_close(fd), 0);
    cdrv_clear();
}

static int pm(int fd, int clen, int dlen, int band, int flags, int pmsg)
{
    static char buf[8192];
    struct strbuf c = {.len = clen, .buf = buf}, d = {.len = dlen, .buf = buf};
    errno = 0;
    if (pmsg)
        return putpmsg(fd, clen == -2 ? NULL : &c, dlen == -2 ? NULL : &d, band, flags);
    return putmsg(fd, clen == -2 ? NULL : &c, dlen == -2 ? NULL : &d, flags);
}

static void expect_down(unsigned char type, unsigned char band, size_t clen, long dlen)
{
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp != NULL);
    if (!mp)
        return;
    CHECK_EQ(mp->b_datap->db_type, type);
    CHECK_EQ(mp->b_band, band);
    if (type != M_DATA) {
        CHECK_EQ(mp->b_wptr - mp->b_rptr, clen);
        if (dlen < 0)
            CHECK(mp->b_cont == NULL);
        else
            CHECK(mp->b_cont && msgdsize(mp->b_cont) == (size_t)dlen);
    } else {
        CHECK_EQ(msgdsize(mp), dlen);
    }
    freemsg(mp);
}

static void test_putmsg(void)
{
    int fd = open_c();

    /* U.1 */
    CHECK_EQ(pm(fd, -2, -2, 0, 0, 0), 0);
    CHECK_EQ(pm(fd, -1, -1, 0, 0, 0), 0);
    CHECK_EQ(pm(fd, -1, -2, 3, MSG_BAND, 1), 0);
    CHECK(cdrv_down(50) == NULL);

    /* U.2 */
    CHECK_EQ(pm(fd, -2, 4, 0, RS_HIPRI, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(pm(fd, -1, -1, 0, RS_HIPRI, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(pm(fd, -1, 4, 0, MSG_HIPRI, 1), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(pm(fd, -2, -2, 0, MSG_HIPRI, 1), -1);
    CHECK_EQ(errno, EINVAL);

    /* U.3 */
    CHECK_EQ(pm(fd, 2, 2, 0, MSG_BAND, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(pm(fd, 2, 2, 0, -1, 0), -1);
    CHECK_EQ(errno, EINVAL);

    /* U.4 */
    CHECK_EQ(pm(fd, 2, 2, 1, MSG_HIPRI, 1), -1);
    CHECK_EQ(errno, EINVAL);

    /* U.5 */
    static const int badflags[] = {MSG_ANY, 0, MSG_HIPRI | MSG_BAND, 0x10};
    for (size_t i = 0; i < sizeof(badflags) / sizeof(badflags[0]); i++) {
        CHECK_EQ(pm(fd, 2, 2, 0, badflags[i], 1), -1);
        CHECK_EQ(errno, EINVAL);
    }
    CHECK_EQ(pm(fd, 2, 2, 256, MSG_BAND, 1), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(pm(fd, 2, 2, -1, MSG_BAND, 1), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK(cdrv_down(50) == NULL); /* none of U.2-U.5 sent anything */

    /* U.6 */
    CHECK_EQ(pm(fd, 3, 4, 0, 0, 0), 0);
    expect_down(M_PROTO, 0, 3, 4);
    CHECK_EQ(pm(fd, 3, 4, 0, RS_HIPRI, 0), 0);
    expect_down(M_PCPROTO, 0, 3, 4);
    CHECK_EQ(pm(fd, 3, 4, 7, MSG_BAND, 1), 0);
    expect_down(M_PROTO, 7, 3, 4);
    CHECK_EQ(pm(fd, 3, -1, 0, MSG_HIPRI, 1), 0);
    expect_down(M_PCPROTO, 0, 3, -1);

    /* U.7 */
    CHECK_EQ(pm(fd, -1, 5, 2, MSG_BAND, 1), 0);
    expect_down(M_DATA, 2, 0, 5);

    /* U.8 */
    CHECK_EQ(pm(fd, UST_STRCTLSZ + 1, 1, 0, 0, 0), -1);
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(pm(fd, UST_STRCTLSZ, -1, 0, 0, 0), 0);
    expect_down(M_PROTO, 0, UST_STRCTLSZ, -1);

    /* U.9 */
    CHECK_EQ(pm(fd, 0, -1, 0, 0, 0), 0);
    expect_down(M_PROTO, 0, 0, -1);
    CHECK_EQ(pm(fd, 0, -1, 0, RS_HIPRI, 0), 0); /* an empty control part is a control part */
    expect_down(M_PCPROTO, 0, 0, -1);

    /* U.10 */
    cdrv_gate_close();
    int n = 0;
    while (pm(fd, -1, 512, 1, MSG_BAND, 1) == 0 && n < 1000)
        n++;
    CHECK_EQ(errno, EAGAIN);
    CHECK(n > 0 && n < 1000);
    CHECK_EQ(pm(fd, 2, -1, 0, MSG_HIPRI, 1), 0); /* not flow controlled */
    expect_down(M_PCPROTO, 0, 2, -1);
    close_c(fd);
}

/* ------------------------------------------------------------------------ */

static atomic_int n_sigpoll;

static void on_sigpoll(int s)
{
    (void)s;
    atomic_fetch_add(&n_sigpoll, 1);
}

/* SIGPOLLs that arrive within ms (kill(2) delivery is asynchronous). */
static int sigs_within(int before, long ms)
{
    for (long t = 0; t < ms && atomic_load(&n_sigpoll) == before; t += 5)
        nap(5);
    nap(20);
    return atomic_load(&n_sigpoll) - before;
}

/* Fill band `band` of cdrv's write queue (gate closed) until EAGAIN. */
static void fill_band(int fd, int band)
{
    int n = 0;
    cdrv_gate_close();
    while (pm(fd, -1, 512, band, MSG_BAND, 1) == 0 && n < 1000)
        n++;
    CHECK_EQ(errno, EAGAIN);
}

static void test_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigpoll;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPOLL, &sa, NULL);

    /* S.1: only band 1 was full; I_FLUSH FLUSHRW relieves it */
    int fd = open_c();
    fill_band(fd, 1);
    CHECK_EQ(strm_ioctl(fd, I_CANPUT, 0), 1); /* band 0 never full */
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_OUTPUT), 0);
    int before = atomic_load(&n_sigpoll);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, FLUSHRW), 0);
    CHECK_EQ(strm_ioctl(fd, I_CANPUT, 1), 1);
    CHECK_EQ(sigs_within(before, 200), 0);
    close_c(fd);

    /* S.2: the same relief raises S_WRBAND */
    fd = open_c();
    fill_band(fd, 1);
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_WRBAND), 0);
    before = atomic_load(&n_sigpoll);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, FLUSHRW), 0);
    CHECK_EQ(sigs_within(before, 2000), 1);
    close_c(fd);

    /* S.3: band 0 full, then relieved: S_OUTPUT */
    fd = open_c();
    fill_band(fd, 0);
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_OUTPUT), 0);
    before = atomic_load(&n_sigpoll);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, FLUSHW), 0);
    CHECK_EQ(sigs_within(before, 2000), 1);
    close_c(fd);

    /* S.4: nothing was found full: a relief raises nothing */
    fd = open_c();
    cdrv_gate_close();
    CHECK_EQ(pm(fd, -1, 512, 0, MSG_BAND, 1), 0);
    CHECK_EQ(pm(fd, -1, 512, 1, MSG_BAND, 1), 0);
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_OUTPUT | S_WRBAND), 0);
    before = atomic_load(&n_sigpoll);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, FLUSHRW), 0);
    cdrv_gate_open();
    CHECK_EQ(sigs_within(before, 200), 0);
    close_c(fd);
}

int main(void)
{
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    CHECK(cdrv_register() > 0);
    test_getmsg();
    test_putmsg();
    test_signals();
    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(unregister_strdev(&cdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
