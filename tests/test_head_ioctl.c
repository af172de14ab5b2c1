/* SPDX-License-Identifier: MIT */
/*
 * test_head_ioctl.c -- conformance of ioctl(2) on streams: every streamio(7)
 * request and its documented errors, I_STR and the transparent ioctl
 * protocol (M_COPYIN/M_COPYOUT/M_IOCDATA), against the "cdrv" test driver
 * (head_cdrv.h).
 *
 * Cases are numbered by streamio(7) section:
 *   I1  I_PUSH, I_POP, I_LOOK, I_FIND, I_LIST, I_ANCHOR
 *   I2  I_FLUSH, I_FLUSHBAND
 *   I3  I_SETSIG, I_GETSIG
 *   I4  I_PEEK, I_NREAD, I_ATMARK, I_CKBAND, I_GETBAND, I_CANPUT
 *   I5  I_SRDOPT/I_GRDOPT, I_SWROPT/I_GWROPT, I_SERROPT/I_GERROPT,
 *       I_SETCLTIME/I_GETCLTIME
 *   I6  I_STR: ack with data, nak, ack with an error, timeout (ETIME), the
 *       argument errors, hang-up, EINTR, one ioctl at a time
 *   I7  transparent ioctls: M_COPYIN then M_COPYOUT, EFAULT both ways, nak
 *   I8  I_FDINSERT
 *   I9  I_SENDFD/I_RECVFD, I_ISASTREAM, I_PUTMSG/I_GETMSG,
 *       I_PUTPMSG/I_GETPMSG
 *   I10 requests not supported here (EINVAL); EBADF, ENOSTR
 * The last case checks that no message block is left.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "harness.h"
#include "head_cdrv.h"
#include "sthead.h"

#define DEV "/dev/streams/cdrv"
#define BAD ((void *)-1)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int open_dev(void)
{
    atomic_store(&cdrv_gate, 0);
    cdrv_clear();
    int fd = strm_open(DEV, O_RDWR);
    CHECK(fd >= 0);
    return fd;
}

static void close_dev(int fd)
{
    cdrv_gate_open();
    CHECK_EQ(strm_close(fd), 0);
    cdrv_clear();
}

/* ioctl expecting failure with errno e. */
#define CHECK_IOC_ERR(fd, req, arg, e)                \
    do {                                              \
        errno = 0;                                    \
        CHECK_EQ(strm_ioctl((fd), (req), (arg)), -1); \
        CHECK_EQ(errno, (e));                         \
    } while (0)

#define IARG(v) ((void *)(intptr_t)(v))

/* Send a data message of band `band` up, as the driver. */
static void up_data(unsigned char band, const char *s, unsigned short flag)
{
    mblk_t *mp = cdrv_msg(M_DATA, band, s, strlen(s), NULL, 0);
    if (mp)
        mp->b_flag = flag;
    cdrv_up(mp);
}

/* I1 */
static void test_modules(void)
{
    char name[FMNAMESZ + 1];
    int fd = open_dev();

    CHECK_IOC_ERR(fd, I_LOOK, name, EINVAL); /* no module */
    CHECK_IOC_ERR(fd, I_POP, 0, EINVAL);
    CHECK_IOC_ERR(fd, I_ANCHOR, 0, EINVAL);
    CHECK_IOC_ERR(fd, I_PUSH, "nosuchmd", EINVAL);
    CHECK_IOC_ERR(fd, I_PUSH, "cdrv", EINVAL); /* a driver is not a module */
    CHECK_IOC_ERR(fd, I_PUSH, "muchtoolongname", EINVAL);
    CHECK_IOC_ERR(fd, I_PUSH, "", EINVAL);
    CHECK_IOC_ERR(fd, I_PUSH, BAD, EFAULT);
    CHECK_IOC_ERR(fd, I_PUSH, NULL, EFAULT);

    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    memset(name, 0, sizeof(name));
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), 0);
    CHECK(strcmp(name, "srvmod") == 0);
    CHECK_IOC_ERR(fd, I_LOOK, BAD, EFAULT);

    CHECK_EQ(strm_ioctl(fd, I_FIND, "nullmod"), 1);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "srvmod"), 1);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "pipemod"), 0); /* registered, not pushed */
    CHECK_IOC_ERR(fd, I_FIND, "nosuchmd", EINVAL);
    CHECK_IOC_ERR(fd, I_FIND, "cdrv", EINVAL);
    CHECK_IOC_ERR(fd, I_FIND, BAD, EFAULT);

    CHECK_EQ(strm_ioctl(fd, I_LIST, NULL), 3);
    struct str_mlist ml[5];
    memset(ml, 0, sizeof(ml));
    struct str_list sl = {5, ml};
    CHECK_EQ(strm_ioctl(fd, I_LIST, &sl), 0);
    CHECK_EQ(sl.sl_nmods, 3);
    CHECK(strcmp(ml[0].l_name, "srvmod") == 0);
    CHECK(strcmp(ml[1].l_name, "nullmod") == 0);
    CHECK(strcmp(ml[2].l_name, "cdrv") == 0);
    struct str_list sl2 = {2, ml};
    CHECK_EQ(strm_ioctl(fd, I_LIST, &sl2), 0);
    CHECK_EQ(sl2.sl_nmods, 2);
    struct str_list sl0 = {0, ml};
    CHECK_IOC_ERR(fd, I_LIST, &sl0, EINVAL);
    struct str_list slb = {3, BAD};
    CHECK_IOC_ERR(fd, I_LIST, &slb, EFAULT);
    CHECK_IOC_ERR(fd, I_LIST, BAD, EFAULT);

    /* I_ANCHOR: the modules at and below it cannot be popped */
    CHECK_EQ(strm_ioctl(fd, I_ANCHOR, 0), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), -1);
    CHECK(errno == EPERM || errno == EINVAL);
    close_dev(fd);

    fd = open_dev();
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    CHECK_IOC_ERR(fd, I_POP, 0, EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_LIST, NULL), 1);
    cdrv_up(cdrv_msg(M_HANGUP, 0, NULL, 0, NULL, 0));
    CHECK_IOC_ERR(fd, I_PUSH, "nullmod", ENXIO);
    close_dev(fd);
}

/* I2 */
static void test_flush(void)
{
    int fd = open_dev(), nr = -1;
    CHECK_IOC_ERR(fd, I_FLUSH, IARG(0), EINVAL);
    CHECK_IOC_ERR(fd, I_FLUSH, IARG(FLUSHBAND), EINVAL);
    CHECK_IOC_ERR(fd, I_FLUSH, IARG(8), EINVAL);

    up_data(0, "one", 0);
    up_data(0, "two", 0);
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &nr), 2);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, IARG(FLUSHR)), 0);
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &nr), 0);
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_FLUSH && *mp->b_rptr == FLUSHR);
    freemsg(mp);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, IARG(FLUSHW)), 0);
    mp = cdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_FLUSH && *mp->b_rptr == FLUSHW);
    freemsg(mp);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, IARG(FLUSHRW)), 0);
    mp = cdrv_down(1000);
    CHECK(mp && *mp->b_rptr == FLUSHRW);
    freemsg(mp);

    /* I_FLUSHBAND: only that band */
    up_data(1, "b1", 0);
    up_data(0, "b0", 0);
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &nr), 2);
    struct bandinfo bi = {1, FLUSHR};
    CHECK_EQ(strm_ioctl(fd, I_FLUSHBAND, &bi), 0);
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &nr), 1);
    CHECK_EQ(strm_ioctl(fd, I_GETBAND, &nr), 0);
    CHECK_EQ(nr, 0);
    mp = cdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_FLUSH && mp->b_wptr - mp->b_rptr == 2 &&
          mp->b_rptr[0] == (FLUSHR | FLUSHBAND) && mp->b_rptr[1] == 1);
    freemsg(mp);
    struct bandinfo bad = {1, 0};
    CHECK_IOC_ERR(fd, I_FLUSHBAND, &bad, EINVAL);
    bad.bi_flag = FLUSHRW | FLUSHBAND;
    CHECK_IOC_ERR(fd, I_FLUSHBAND, &bad, EINVAL);
    CHECK_IOC_ERR(fd, I_FLUSHBAND, BAD, EFAULT);

    /* errors: hang-up ENXIO */
    cdrv_up(cdrv_msg(M_HANGUP, 0, NULL, 0, NULL, 0));
    CHECK_IOC_ERR(fd, I_FLUSH, IARG(FLUSHRW), ENXIO);
    close_dev(fd);

    /* an M_ERROR read error fails I_FLUSH with it */
    fd = open_dev();
    unsigned char e[2] = {EPROTO, 0xff};
    cdrv_up(cdrv_msg(M_ERROR, 0, e, 2, NULL, 0));
    CHECK_IOC_ERR(fd, I_FLUSH, IARG(FLUSHW), EPROTO);
    close_dev(fd);
}

/* I3 */
static void test_sig(void)
{
    int fd = open_dev(), ev = 0;
    CHECK_IOC_ERR(fd, I_GETSIG, &ev, EINVAL); /* not registered */
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, IARG(S_INPUT | S_HIPRI)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GETSIG, &ev), 0);
    CHECK_EQ(ev, S_INPUT | S_HIPRI);
    CHECK_IOC_ERR(fd, I_GETSIG, BAD, EFAULT);
    CHECK_IOC_ERR(fd, I_SETSIG, IARG(0x10000), EINVAL);
    CHECK_IOC_ERR(fd, I_SETSIG, IARG(S_BANDURG), EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, IARG(0)), 0);
    CHECK_IOC_ERR(fd, I_GETSIG, &ev, EINVAL);
    CHECK_IOC_ERR(fd, I_SETSIG, IARG(0), EINVAL);
    close_dev(fd);
}

/* I4 */
static void test_readq(void)
{
    char cbuf[16], dbuf[16];
    int fd = open_dev(), n = -1;

    /* empty */
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &n), 0);
    CHECK_EQ(n, 0);
    CHECK_IOC_ERR(fd, I_GETBAND, &n, ENODATA);
    struct strpeek pk = {{sizeof(cbuf), 0, cbuf}, {sizeof(dbuf), 0, dbuf}, 0};
    CHECK_EQ(strm_ioctl(fd, I_PEEK, &pk), 0);
    CHECK_EQ(strm_ioctl(fd, I_ATMARK, IARG(ANYMARK)), 0);

    /* an M_PROTO with data, then a band-3 marked message */
    cdrv_up(cdrv_msg(M_PROTO, 0, "ctl", 3, "hello", 5));
    up_data(3, "mark", MSGMARK);
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &n), 2);
    CHECK_EQ(n, 4); /* the band-3 message is first, STREAMS order */
    CHECK_IOC_ERR(fd, I_NREAD, BAD, EFAULT);
    CHECK_EQ(strm_ioctl(fd, I_GETBAND, &n), 0);
    CHECK_EQ(n, 3);
    CHECK_IOC_ERR(fd, I_GETBAND, BAD, EFAULT);
    CHECK_EQ(strm_ioctl(fd, I_CKBAND, IARG(3)), 1);
    CHECK_EQ(strm_ioctl(fd, I_CKBAND, IARG(0)), 1);
    CHECK_EQ(strm_ioctl(fd, I_CKBAND, IARG(2)), 0);
    CHECK_IOC_ERR(fd, I_CKBAND, IARG(256), EINVAL);
    CHECK_IOC_ERR(fd, I_CKBAND, IARG(-1), EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_ATMARK, IARG(ANYMARK)), 1);
    CHECK_EQ(strm_ioctl(fd, I_ATMARK, IARG(LASTMARK)), 1);
    CHECK_IOC_ERR(fd, I_ATMARK, IARG(0), EINVAL);
    CHECK_IOC_ERR(fd, I_ATMARK, IARG(ANYMARK | LASTMARK), EINVAL);
    up_data(3, "mark2", MSGMARK);
    CHECK_EQ(strm_ioctl(fd, I_ATMARK, IARG(LASTMARK)), 0); /* another mark follows */
    CHECK_EQ(strm_ioctl(fd, I_ATMARK, IARG(ANYMARK)), 1);

    pk.flags = 0;
    CHECK_EQ(strm_ioctl(fd, I_PEEK, &pk), 1);
    CHECK_EQ(pk.ctlbuf.len, -1);
    CHECK_EQ(pk.databuf.len, 4);
    CHECK(memcmp(dbuf, "mark", 4) == 0);
    CHECK_EQ(pk.flags, 0);
    pk.flags = RS_HIPRI;
    CHECK_EQ(strm_ioctl(fd, I_PEEK, &pk), 0); /* not high priority */
    pk.flags = 0;
    pk.databuf.buf = BAD;
    CHECK_IOC_ERR(fd, I_PEEK, &pk, EFAULT);
    CHECK_IOC_ERR(fd, I_PEEK, BAD, EFAULT);
    CHECK_EQ(strm_ioctl(fd, I_FLUSHBAND, &(struct bandinfo){3, FLUSHR}), 0);
    pk.databuf.buf = dbuf;
    CHECK_EQ(strm_ioctl(fd, I_PEEK, &pk), 1);
    CHECK_EQ(pk.ctlbuf.len, 3);
    CHECK_EQ(pk.databuf.len, 5);
    CHECK(memcmp(cbuf, "ctl", 3) == 0 && memcmp(dbuf, "hello", 5) == 0);
    CHECK_EQ(strm_ioctl(fd, I_FLUSH, IARG(FLUSHR)), 0);
    cdrv_clear();

    /* I_CANPUT */
    CHECK_EQ(strm_ioctl(fd, I_CANPUT, IARG(0)), 1);
    CHECK_EQ(strm_ioctl(fd, I_CANPUT, IARG(7)), 1);
    CHECK_IOC_ERR(fd, I_CANPUT, IARG(256), EINVAL);
    CHECK_IOC_ERR(fd, I_CANPUT, IARG(-1), EINVAL);
    CHECK_EQ(strqset(cdrv_wq(), QHIWAT, 0, 10), 0);
    cdrv_gate_close();
    CHECK_EQ(strm_write(fd, "0123456789ab", 12), 12);
    CHECK_EQ(strm_ioctl(fd, I_CANPUT, IARG(0)), 0);
    CHECK_EQ(strm_ioctl(fd, I_CANPUT, IARG(2)), 1);
    close_dev(fd);
}

/* I5 */
static void test_options(void)
{
    int fd = open_dev(), v = -1;
    CHECK_EQ(strm_ioctl(fd, I_GRDOPT, &v), 0);
    CHECK_EQ(v, RNORM | RPROTNORM);
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, IARG(RMSGD | RPROTDAT)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GRDOPT, &v), 0);
    CHECK_EQ(v, RMSGD | RPROTDAT);
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, IARG(RMSGN)), 0); /* no protocol option: kept */
    CHECK_EQ(strm_ioctl(fd, I_GRDOPT, &v), 0);
    CHECK_EQ(v, RMSGN | RPROTDAT);
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, IARG(RNORM | RPROTDIS | RFILL)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GRDOPT, &v), 0);
    CHECK_EQ(v, RNORM | RPROTDIS | RFILL);
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, IARG(RMSGD | RMREAD)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GRDOPT, &v), 0);
    CHECK_EQ(v, RMSGD | RPROTDIS | RMREAD);
    CHECK_IOC_ERR(fd, I_SRDOPT, IARG(RMODEMASK), EINVAL);
    CHECK_IOC_ERR(fd, I_SRDOPT, IARG(RPROTDAT | RPROTDIS), EINVAL);
    CHECK_IOC_ERR(fd, I_SRDOPT, IARG(0x100), EINVAL);
    CHECK_IOC_ERR(fd, I_GRDOPT, BAD, EFAULT);

    CHECK_EQ(strm_ioctl(fd, I_GWROPT, &v), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, IARG(SNDZERO | SNDPIPE)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GWROPT, &v), 0);
    CHECK_EQ(v, SNDZERO | SNDPIPE);
    CHECK_IOC_ERR(fd, I_SWROPT, IARG(0x8), EINVAL);
    CHECK_IOC_ERR(fd, I_GWROPT, BAD, EFAULT);

    CHECK_EQ(strm_ioctl(fd, I_GERROPT, &v), 0);
    CHECK_EQ(v, RERRNORM | WERRNORM);
    CHECK_EQ(strm_ioctl(fd, I_SERROPT, IARG(RERRNONPERSIST)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GERROPT, &v), 0);
    CHECK_EQ(v, RERRNONPERSIST | WERRNORM);
    CHECK_EQ(strm_ioctl(fd, I_SERROPT, IARG(RERRNORM | WERRNONPERSIST)), 0);
    CHECK_EQ(strm_ioctl(fd, I_GERROPT, &v), 0);
    CHECK_EQ(v, RERRNORM | WERRNONPERSIST);
    CHECK_IOC_ERR(fd, I_SERROPT, IARG(RERRNORM | RERRNONPERSIST), EINVAL);
    CHECK_IOC_ERR(fd, I_SERROPT, IARG(WERRMASK), EINVAL);
    CHECK_IOC_ERR(fd, I_SERROPT, IARG(0x100), EINVAL);
    CHECK_IOC_ERR(fd, I_GERROPT, BAD, EFAULT);

    CHECK_EQ(strm_ioctl(fd, I_GETCLTIME, &v), 0);
    CHECK_EQ(v, UST_CLTIME_MS);
    int ms = 500;
    CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
    CHECK_EQ(strm_ioctl(fd, I_GETCLTIME, &v), 0);
    CHECK_EQ(v, 500);
    ms = 0;
    CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
    ms = -1;
    CHECK_IOC_ERR(fd, I_SETCLTIME, &ms, EINVAL);
    CHECK_IOC_ERR(fd, I_SETCLTIME, BAD, EFAULT);
    CHECK_IOC_ERR(fd, I_GETCLTIME, BAD, EFAULT);
    close_dev(fd);
}

/* I6: an I_STR on another thread */
struct sjob {
    int fd;
    int cmd;
    int timout;
    int ret;
    int err;
    atomic_int done;
};

static void *str_thread(void *arg)
{
    struct sjob *j = arg;
    char reply[16];
    struct strioctl si = {j->cmd, j->timout, 0, reply};
    errno = 0;
    j->ret = strm_ioctl(j->fd, I_STR, &si);
    j->err = errno;
    atomic_store(&j->done, 1);
    return NULL;
}

static void on_usr1(int s)
{
    (void)s;
}

static void test_i_str(void)
{
    char buf[64];
    int fd = open_dev();

    /* ack with data */
    memcpy(buf, "abcd", 4);
    struct strioctl si = {CDRV_ACK, 0, 4, buf};
    CHECK_EQ(strm_ioctl(fd, I_STR, &si), 7);
    CHECK_EQ(si.ic_len, 6);
    CHECK(memcmp(buf, "dcbaXY", 6) == 0);
    CHECK_EQ(atomic_load(&cdrv_ioc_cmd), CDRV_ACK);
    CHECK_EQ(atomic_load(&cdrv_ioc_count), 4);
    CHECK_EQ(atomic_load(&cdrv_ioc_hascr), 1);
    /* no data */
    struct strioctl s0 = {CDRV_ACK, 0, 0, buf};
    CHECK_EQ(strm_ioctl(fd, I_STR, &s0), 7);
    CHECK_EQ(s0.ic_len, 2);
    CHECK(memcmp(buf, "XY", 2) == 0);

    /* nak */
    struct strioctl sn = {CDRV_NAK, 0, 0, NULL};
    CHECK_IOC_ERR(fd, I_STR, &sn, EPERM);
    sn.ic_cmd = CDRV_NAK0;
    CHECK_IOC_ERR(fd, I_STR, &sn, EINVAL);
    sn.ic_cmd = CDRV_ACKERR;
    CHECK_IOC_ERR(fd, I_STR, &sn, EIO);
    sn.ic_cmd = 0x7777; /* unknown to the driver */
    CHECK_IOC_ERR(fd, I_STR, &sn, EINVAL);

    /* argument errors */
    struct strioctl sb = {CDRV_ACK, 0, -1, buf};
    CHECK_IOC_ERR(fd, I_STR, &sb, EINVAL);
    sb.ic_len = UST_STRMSGSZ + 1;
    CHECK_IOC_ERR(fd, I_STR, &sb, EINVAL);
    sb.ic_len = 4;
    sb.ic_timout = -2;
    CHECK_IOC_ERR(fd, I_STR, &sb, EINVAL);
    sb.ic_timout = 0;
    sb.ic_dp = BAD;
    CHECK_IOC_ERR(fd, I_STR, &sb, EFAULT);
    CHECK_IOC_ERR(fd, I_STR, BAD, EFAULT);
    sb.ic_len = 0; /* the reply's data cannot be stored */
    CHECK_IOC_ERR(fd, I_STR, &sb, EFAULT);

    /* timeout: never answered */
    int seen = atomic_load(&cdrv_ioc_seen);
    struct strioctl st = {CDRV_SILENT, 1, 0, NULL};
    long long t0 = cdrv_now();
    CHECK_IOC_ERR(fd, I_STR, &st, ETIME);
    long long dt = cdrv_now() - t0;
    CHECK(dt >= 900000000LL && dt < 5000000000LL);
    CHECK_EQ(atomic_load(&cdrv_ioc_seen), seen + 1);
    /* the slot is free again, and a late answer to the old one is dropped */
    mblk_t *late = cdrv_take_held();
    CHECK(late != NULL);
    if (late)
        miocack(cdrv_wq(), late, 0, 1);
    CHECK_EQ(strm_ioctl(fd, I_STR, &s0), 7);

    /* EINTR: a signal ends a wait for the answer */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    struct sjob ji = {.fd = fd, .cmd = CDRV_SILENT, .timout = -1};
    pthread_t t;
    pthread_create(&t, NULL, str_thread, &ji);
    for (int i = 0; i < 300 && !atomic_load(&ji.done); i++) {
        if (i > 3)
            pthread_kill(t, SIGUSR1);
        sleep_ms(10);
    }
    pthread_join(t, NULL);
    CHECK_EQ(ji.ret, -1);
    CHECK_EQ(ji.err, EINTR);
    signal(SIGUSR1, SIG_DFL);
    freemsg(cdrv_take_held()); /* the interrupted one stays unanswered */

    /* one at a time: a second I_STR waits until the first is answered */
    atomic_store(&cdrv_busy_max, 0);
    struct sjob ja = {.fd = fd, .cmd = CDRV_SLOW}, jb = {.fd = fd, .cmd = CDRV_ACK};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, str_thread, &ja);
    sleep_ms(30);
    pthread_create(&tb, NULL, str_thread, &jb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_EQ(ja.ret, 3);
    CHECK_EQ(jb.ret, 7);
    CHECK_EQ(atomic_load(&cdrv_busy_max), 1);
    CHECK(atomic_load(&cdrv_last_ioc_ns) >= atomic_load(&cdrv_slow_acked_ns));

    /* a hang-up ends the wait: ENXIO; later ioctls fail ENXIO at once */
    struct sjob jh = {.fd = fd, .cmd = CDRV_SILENT, .timout = -1};
    pthread_create(&t, NULL, str_thread, &jh);
    sleep_ms(50);
    cdrv_up(cdrv_msg(M_HANGUP, 0, NULL, 0, NULL, 0));
    pthread_join(t, NULL);
    CHECK_EQ(jh.ret, -1);
    CHECK_EQ(jh.err, ENXIO);
    CHECK_IOC_ERR(fd, I_STR, &s0, ENXIO);
    close_dev(fd);

    /* an M_ERROR error fails I_STR with it */
    fd = open_dev();
    unsigned char e[2] = {0xff, EIO};
    cdrv_up(cdrv_msg(M_ERROR, 0, e, 2, NULL, 0));
    CHECK_IOC_ERR(fd, I_STR, &s0, EIO);
    close_dev(fd);
}

/* I7 */
static void test_transparent(void)
{
    int fd = open_dev();
    int pair[2] = {21, 0};
    CHECK_EQ(strm_ioctl(fd, CDRV_TRANS, pair), 5);
    CHECK_EQ(pair[1], 42);
    CHECK_EQ(atomic_load(&cdrv_ioc_count), (long)TRANSPARENT);
    CHECK_EQ(atomic_load(&cdrv_iocdata_rval), 0);

    /* the copy-in fails: M_IOCDATA with a non-zero cp_rval, EFAULT */
    int before = atomic_load(&cdrv_iocdata_seen);
    CHECK_IOC_ERR(fd, CDRV_TRANS, BAD, EFAULT);
    CHECK_EQ(atomic_load(&cdrv_iocdata_seen), before + 1);
    CHECK(atomic_load(&cdrv_iocdata_rval) != 0);
    /* the copy-out fails */
    CHECK_IOC_ERR(fd, CDRV_BADOUT, pair, EFAULT);
    CHECK(atomic_load(&cdrv_iocdata_rval) != 0);
    /* the stream still works, one ioctl at a time */
    pair[0] = 5;
    CHECK_EQ(strm_ioctl(fd, CDRV_TRANS, pair), 5);
    CHECK_EQ(pair[1], 10);
    /* unknown to everybody: the driver naks */
    CHECK_IOC_ERR(fd, 0x5a5a, pair, EINVAL);
    /* with a module pushed the request passes through it */
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    pair[0] = 8;
    CHECK_EQ(strm_ioctl(fd, CDRV_TRANS, pair), 5);
    CHECK_EQ(pair[1], 16);
    CHECK_EQ(atomic_load(&cdrv_busy), 0);
    close_dev(fd);
}

/* I8 */
static void test_fdinsert(void)
{
    int fd = open_dev();
    queue_t *drq = atomic_load(&cdrv_rq);
    char ctl[32], data[4] = "dat";
    memset(ctl, 'c', sizeof(ctl));
    struct strfdinsert fi = {{0, 16, ctl}, {0, 3, data}, 0, fd, 8};
    CHECK_EQ(strm_ioctl(fd, I_FDINSERT, &fi), 0);
    mblk_t *mp = cdrv_down(1000);
    queue_t *got = NULL;
    if (CHECK(mp && mp->b_datap->db_type == M_PROTO && mp->b_wptr - mp->b_rptr == 16 &&
              mp->b_cont && cdrv_len(mp->b_cont) == 3)) {
        memcpy(&got, mp->b_rptr + 8, sizeof(got));
        CHECK(got == drq);
        CHECK(mp->b_rptr[0] == 'c' && mp->b_rptr[7] == 'c');
    }
    freemsg(mp);
    fi.flags = RS_HIPRI;
    fi.offset = 0;
    CHECK_EQ(strm_ioctl(fd, I_FDINSERT, &fi), 0);
    mp = cdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_PCPROTO);
    freemsg(mp);

    /* a pipe end: the inserted queue is the other end's read queue */
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    fi.flags = 0;
    fi.fildes = p[0];
    CHECK_EQ(strm_ioctl(fd, I_FDINSERT, &fi), 0);
    mp = cdrv_down(1000);
    if (CHECK(mp != NULL)) {
        memcpy(&got, mp->b_rptr, sizeof(got));
        struct stdata *peer = ust_sd_peek(p[1]);
        CHECK(peer && got == peer->sd_rq);
    }
    freemsg(mp);

    /* errors */
    int ufd[2];
    CHECK_EQ(pipe(ufd), 0);
    struct strfdinsert bad = fi;
    bad.fildes = -1;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad.fildes = ufd[0]; /* not a stream */
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad = fi;
    bad.offset = 3;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad.offset = -8;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad.offset = 16; /* 16 + 8 > 16 */
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad.offset = 0;
    bad.ctlbuf.len = 4;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad.ctlbuf.len = -1;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad = fi;
    bad.flags = 2;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EINVAL);
    bad = fi;
    bad.ctlbuf.len = UST_STRCTLSZ + 8;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, ERANGE);
    bad = fi;
    bad.ctlbuf.buf = BAD;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EFAULT);
    bad = fi;
    bad.databuf.buf = BAD;
    CHECK_IOC_ERR(fd, I_FDINSERT, &bad, EFAULT);
    CHECK_IOC_ERR(fd, I_FDINSERT, BAD, EFAULT);
    CHECK(cdrv_down(20) == NULL);
    /* flow control: EAGAIN when non-blocking */
    CHECK_EQ(strqset(cdrv_wq(), QHIWAT, 0, 10), 0);
    cdrv_gate_close();
    CHECK_EQ(strm_write(fd, "0123456789ab", 12), 12);
    strm_fcntl(fd, F_SETFL, O_NONBLOCK);
    CHECK_IOC_ERR(fd, I_FDINSERT, &fi, EAGAIN);
    strm_fcntl(fd, F_SETFL, 0);
    cdrv_up(cdrv_msg(M_HANGUP, 0, NULL, 0, NULL, 0));
    CHECK_IOC_ERR(fd, I_FDINSERT, &fi, ENXIO);
    close(ufd[0]);
    close(ufd[1]);
    strm_close(p[0]);
    strm_close(p[1]);
    close_dev(fd);
}

/* I9 */
static void test_pipe_ioctls(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    int fd = open_dev();
    CHECK_EQ(strm_ioctl(fd, I_ISASTREAM, 0), I_STR);
    CHECK_EQ(strm_ioctl(p[0], I_ISASTREAM, 0), I_PIPE);

    /* I_SENDFD / I_RECVFD */
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, IARG(fd)), 0);
    struct strrecvfd rf;
    memset(&rf, 0, sizeof(rf));
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    CHECK(rf.fd >= 0 && rf.fd != fd);
    CHECK_EQ(isastream(rf.fd), 1);
    CHECK_EQ(strm_ioctl(rf.fd, I_ISASTREAM, 0), I_STR);
    CHECK_EQ(strm_close(rf.fd), 0);
    CHECK_IOC_ERR(fd, I_SENDFD, IARG(p[0]), EINVAL); /* not a pipe */
    CHECK_IOC_ERR(p[0], I_SENDFD, IARG(-1), EBADF);
    strm_fcntl(p[1], F_SETFL, O_NONBLOCK);
    CHECK_IOC_ERR(p[1], I_RECVFD, &rf, EAGAIN);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, IARG(fd)), 0);
    CHECK_IOC_ERR(p[1], I_RECVFD, BAD, EFAULT);
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0); /* EFAULT did not lose the file */
    CHECK_EQ(strm_close(rf.fd), 0);
    strm_fcntl(p[1], F_SETFL, 0);

    /* I_PUTPMSG / I_GETPMSG */
    char cbuf[16], dbuf[16];
    struct strpmsg sp = {{0, 3, "ctl"}, {0, 4, "data"}, 2, MSG_BAND};
    CHECK_EQ(strm_ioctl(p[0], I_PUTPMSG, &sp), 0);
    struct strpmsg gp = {{sizeof(cbuf), 0, cbuf}, {sizeof(dbuf), 0, dbuf}, 0, MSG_ANY};
    CHECK_EQ(strm_ioctl(p[1], I_GETPMSG, &gp), 0);
    CHECK_EQ(gp.band, 2);
    CHECK_EQ(gp.flags, MSG_BAND);
    CHECK(gp.ctlbuf.len == 3 && memcmp(cbuf, "ctl", 3) == 0);
    CHECK(gp.databuf.len == 4 && memcmp(dbuf, "data", 4) == 0);
    sp.flags = 0;
    CHECK_IOC_ERR(p[0], I_PUTPMSG, &sp, EINVAL);
    sp.flags = MSG_BAND;
    sp.band = 300;
    CHECK_IOC_ERR(p[0], I_PUTPMSG, &sp, EINVAL);
    CHECK_IOC_ERR(p[0], I_PUTPMSG, BAD, EFAULT);
    gp.flags = 0;
    CHECK_IOC_ERR(p[1], I_GETPMSG, &gp, EINVAL);
    CHECK_IOC_ERR(p[1], I_GETPMSG, BAD, EFAULT);

    /* I_PUTMSG / I_GETMSG: flags 0 / RS_HIPRI */
    struct strpmsg pm = {{0, 2, "hi"}, {-1, -1, NULL}, 0, RS_HIPRI};
    CHECK_EQ(strm_ioctl(p[0], I_PUTMSG, &pm), 0);
    struct strpmsg gm = {{sizeof(cbuf), 0, cbuf}, {sizeof(dbuf), 0, dbuf}, 0, 0};
    CHECK_EQ(strm_ioctl(p[1], I_GETMSG, &gm), 0);
    CHECK_EQ(gm.flags, RS_HIPRI);
    CHECK(gm.ctlbuf.len == 2 && memcmp(cbuf, "hi", 2) == 0);
    pm.flags = MSG_BAND;
    CHECK_IOC_ERR(p[0], I_PUTMSG, &pm, EINVAL);
    gm.flags = MSG_ANY;
    CHECK_IOC_ERR(p[1], I_GETMSG, &gm, EINVAL);
    /* a normal one read back with I_GETMSG: flags 0 */
    pm.flags = 0;
    CHECK_EQ(strm_ioctl(p[0], I_PUTMSG, &pm), 0);
    gm.flags = 0;
    CHECK_EQ(strm_ioctl(p[1], I_GETMSG, &gm), 0);
    CHECK_EQ(gm.flags, 0);

    strm_close(p[0]);
    strm_close(p[1]);
    close_dev(fd);
}

/* I10 */
static void test_unsupported(void)
{
    int fd = open_dev();
    unsigned long reqs[] = {I_LINK,  I_UNLINK, I_PLINK,   I_PUNLINK,  I_PIPE, I_FIFO,
                            I_GETTP, I_STATS,  I_BIGPIPE, I_AUTOPUSH, I_HEAP};
    int seen = atomic_load(&cdrv_ioc_seen);
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++)
        CHECK_IOC_ERR(fd, reqs[i], 0, EINVAL);
    CHECK_EQ(atomic_load(&cdrv_ioc_seen), seen); /* none went down */
    int ufd[2];
    CHECK_EQ(pipe(ufd), 0);
    CHECK_IOC_ERR(-1, I_NREAD, &fd, EBADF);
    CHECK_IOC_ERR(ufd[0], I_NREAD, &fd, ENOSTR);
    close(ufd[0]);
    close(ufd[1]);
    close_dev(fd);
}

int main(void)
{
    CHECK(cdrv_register() > 0);
    test_modules();
    test_flush();
    test_sig();
    test_readq();
    test_options();
    test_i_str();
    test_transparent();
    test_fdinsert();
    test_pipe_ioctls();
    test_unsupported();
    CHECK_EQ(atomic_load(&cdrv_nopen), 0);
    th_assert_no_blocks();
    return CHECK_RESULT();
}
