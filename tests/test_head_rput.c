/* SPDX-License-Identifier: MIT */
/*
 * test_head_rput.c -- conformance of the stream head's queue pair and of its
 * read put procedure: what every message type does when it reaches the head
 * (src/head/sd_rput.c).
 *
 * The stream is "/dev/streams/hdrv" (tests/head_tdrv.h): the test sends
 * messages up with hdrv_up() and sees what comes down with hdrv_down().
 * References: streamio(7) (SVR4.2 / Solaris), the STREAMS Programming Guide
 * ("Stream Head", "Message Types", appendix "Message Types": M_SETOPTS,
 * M_ERROR, M_HANGUP, M_FLUSH, M_SIG, M_PCSIG, M_IOCACK, M_COPYIN, ...),
 * stroptions(9S), poll(2).  Cases:
 *   H.1  stream head queue pair: QHEAD on both queues, q_ptr the stdata,
 *        ust_sd_of, module name "strhead", water marks STRHIGH/STRLOW,
 *        INFPSZ, procedures on
 *   H.2  data messages (M_DATA, M_PROTO, M_PCPROTO, M_PASSFP) are queued in
 *        STREAMS order; POLLIN/POLLRDNORM for normal, POLLPRI for high
 *        priority (poll(2) on the descriptor); a second high-priority message
 *        at the head is discarded
 *   H.3  M_SETOPTS, every SO_* option of stroptions(9S), SO_BAND water marks;
 *        a short M_SETOPTS is ignored
 *   H.4  M_ERROR: one byte sets both errors, two bytes read then write error;
 *        0 clears, 0xff leaves unchanged; M_FLUSH goes down for the sides in
 *        error; read fails with the error; POLLIN|POLLOUT; RERRNONPERSIST
 *   H.5  M_HANGUP: reads drain then return 0, POLLHUP, writers/readers woken;
 *        M_UNHANGUP clears the hang-up
 *   H.6  M_FLUSH: FLUSHR empties the head (FLUSHBAND one band); FLUSHW goes
 *        back down with FLUSHR cleared and MSGNOLOOP; with MSGNOLOOP it is
 *        freed; FLUSHW discards data held at the head (SNDHOLD)
 *   H.7  M_SIG/M_PCSIG: the signal is raised (handler runs); SIGPOLL only for
 *        S_MSG registrations; bad signal numbers ignored
 *   H.8  I_SETSIG events on arrival: S_INPUT|S_RDNORM when a message becomes
 *        the first, S_RDBAND, S_BANDURG (SIGURG), S_HIPRI, S_ERROR, S_HANGUP
 *   H.9  M_IOCACK/M_IOCNAK/M_COPYIN/M_COPYOUT go to the ioctl in progress
 *        only with its id and only once; stale, short or unexpected replies
 *        are freed; the waiter is woken; I_STR completes through it; an
 *        M_IOCTL reaching the head is
 *        refused with M_IOCNAK EINVAL; M_READ, M_IOCDATA, M_CTL are freed
 *   H.10 back-enable of the write queue: writers woken, POLLOUT back,
 *        S_OUTPUT; inside another head's ust_sd_lockq the locked part is owed
 *        and done at ust_sd_unlockq (two heads' locks never nest)
 *   H.11 flow control at the head read queue: full at SO_HIWAT, canputnext
 *        from below fails; reading drains it and back-enables the driver
 *   H.12 nothing leaks: ustreams_blockstats shows no block outstanding
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "head_tdrv.h"
#include "sthead.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Signal counts: lock-free atomics, safe in a handler and across threads. */
static atomic_int n_poll, n_urg, n_usr1, n_usr2;

static void on_signal(int sig)
{
    if (sig == SIGPOLL)
        atomic_fetch_add(&n_poll, 1);
    else if (sig == SIGURG)
        atomic_fetch_add(&n_urg, 1);
    else if (sig == SIGUSR1)
        atomic_fetch_add(&n_usr1, 1);
    else if (sig == SIGUSR2)
        atomic_fetch_add(&n_usr2, 1);
}

/* Wait up to 2 s for a signal counter to reach want. */
static int wait_count(atomic_int *c, int want)
{
    for (int i = 0; i < 2000 && atomic_load(c) < want; i++)
        sleep_ms(1);
    return atomic_load(c);
}

static short pollev(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI | POLLOUT | POLLRDNORM};
    return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static int open_hdrv(void)
{
    int fd = strm_open("/dev/streams/hdrv", O_RDWR);
    CHECK(fd >= 0);
    CHECK(atomic_load(&hdrv_rq) != NULL);
    return fd;
}

static struct stdata *sdof(int fd)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (sd)
        ust_sd_put(sd);
    return sd;
}

static void set_nonblock(int fd)
{
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
}

static void setopts(struct stroptions *so)
{
    hdrv_up(hmsg2(M_SETOPTS, 0, so, sizeof(*so), NULL, 0));
}

/* Read one message's worth into buf (NUL-terminated); returns read's value. */
static ssize_t rd(int fd, char *buf, size_t len)
{
    ssize_t n = strm_read(fd, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

/* ------------------------------------------------------------------------ */
/* H.1 the queue pair                                                       */
/* ------------------------------------------------------------------------ */
static void test_headinit(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    CHECK(sd != NULL);
    queue_t *rq = sd->sd_rq, *wq = sd->sd_wq;
    CHECK(rq != NULL && wq == WR(rq));
    CHECK(ust_qflags(rq) & QHEAD);
    CHECK(ust_qflags(wq) & QHEAD);
    CHECK(!(ust_qflags(rq) & QPROCSOFF));
    CHECK(rq->q_ptr == sd && wq->q_ptr == sd);
    CHECK(ust_sd_of(rq) == sd && ust_sd_of(wq) == sd);
    CHECK(ust_sd_of(atomic_load(&hdrv_rq)) == NULL);
    CHECK(ust_sd_of(NULL) == NULL);
    CHECK(strcmp(rq->q_qinfo->qi_minfo->mi_idname, "strhead") == 0);
    CHECK(rq->q_qinfo->qi_srvp != NULL && wq->q_qinfo->qi_srvp != NULL);
    CHECK_EQ(rq->q_hiwat, UST_STRHIGH);
    CHECK_EQ(rq->q_lowat, UST_STRLOW);
    CHECK_EQ(rq->q_maxpsz, INFPSZ);
    CHECK_EQ(rq->q_minpsz, 0);
    CHECK(ust_qpv(rq)->head_enable != NULL && ust_qpv(wq)->head_enable != NULL);
    CHECK_EQ(strm_close(fd), 0);

    /* a head on its own, without a stream below */
    struct stdata *h = ust_sd_alloc();
    CHECK(h != NULL);
    CHECK(ust_sd_of(h->sd_rq) == h);
    ust_sd_free(h);
}

/* ------------------------------------------------------------------------ */
/* H.2 data messages                                                        */
/* ------------------------------------------------------------------------ */
static void test_data(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    int bytes = -1;

    CHECK(!(pollev(fd) & (POLLIN | POLLPRI)));
    hdrv_up_str(0, "n0");
    CHECK((pollev(fd) & (POLLIN | POLLRDNORM)) == (POLLIN | POLLRDNORM));
    CHECK(!(pollev(fd) & POLLPRI));
    hdrv_up(hmsg2(M_PROTO, 2, "c", 1, "d", 1));
    hdrv_up(hmsg(M_PCPROTO, 0, "p1"));
    CHECK(pollev(fd) & POLLPRI);
    hdrv_up(hmsg(M_PCPROTO, 0, "p2")); /* a second one is discarded */
    hdrv_up(hmsg(M_PASSFP, 0, "f"));
    CHECK_EQ(ust_sd_nread(sd, &bytes), 4);
    CHECK_EQ(bytes, 0); /* the M_PCPROTO first: no M_DATA block */

    /* order: high priority, band 2, band 0 FIFO */
    queue_t *q = sd->sd_rq;
    mblk_t *m = q->q_first;
    CHECK(m && m->b_datap->db_type == M_PCPROTO && m->b_rptr[1] == '1');
    m = m ? m->b_next : NULL;
    CHECK(m && m->b_datap->db_type == M_PROTO && m->b_band == 2);
    m = m ? m->b_next : NULL;
    CHECK(m && m->b_datap->db_type == M_DATA);
    m = m ? m->b_next : NULL;
    CHECK(m && m->b_datap->db_type == M_PASSFP);

    /* a zero-length M_DATA is a message too */
    hdrv_up(hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
    CHECK_EQ(ust_sd_nread(sd, NULL), 5);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.3 M_SETOPTS                                                            */
/* ------------------------------------------------------------------------ */
static void test_setopts(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    struct stroptions so;
    size_t v;
    ssize_t sv;

    memset(&so, 0, sizeof(so));
    so.so_flags = SO_READOPT | SO_WROFF | SO_MINPSZ | SO_MAXPSZ | SO_HIWAT | SO_LOWAT | SO_MREADON |
                  SO_NDELON | SO_ISTTY | SO_TOSTOP | SO_DELIM | SO_STRHOLD | SO_ERROPT | SO_MAXBLK;
    so.so_readopt = RMSGD | RPROTDIS;
    so.so_wroff = 12;
    so.so_minpsz = 3;
    so.so_maxpsz = 999;
    so.so_hiwat = 7000;
    so.so_lowat = 700;
    so.so_erropt = RERRNONPERSIST | WERRNONPERSIST;
    so.so_maxblk = 512;
    setopts(&so);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rdopt & (RMODEMASK | RPROTMASK), RMSGD | RPROTDIS);
    CHECK_EQ(sd->sd_wroff, 12);
    CHECK((sd->sd_flag & (STRMREAD | STRNDELON | STRISTTY | STRTOSTOP | STRDELIM | STRHOLD)) ==
          (STRMREAD | STRNDELON | STRISTTY | STRTOSTOP | STRDELIM | STRHOLD));
    CHECK_EQ(sd->sd_erropt, RERRNONPERSIST | WERRNONPERSIST);
    CHECK_EQ(sd->sd_maxblk, 512);
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(strqget(sd->sd_rq, QMINPSZ, 0, &sv), 0);
    CHECK_EQ(sv, 3);
    CHECK_EQ(strqget(sd->sd_rq, QMAXPSZ, 0, &sv), 0);
    CHECK_EQ(sv, 999);
    CHECK_EQ(strqget(sd->sd_rq, QHIWAT, 0, &v), 0);
    CHECK_EQ(v, 7000);
    CHECK_EQ(strqget(sd->sd_rq, QLOWAT, 0, &v), 0);
    CHECK_EQ(v, 700);

    /* the "off" options; protocol option kept when none given; RFILL */
    memset(&so, 0, sizeof(so));
    so.so_flags = SO_READOPT | SO_MREADOFF | SO_NDELOFF | SO_ISNTTY | SO_TONSTOP | SO_NODELIM |
                  SO_ERROPT | SO_MAXBLK;
    so.so_readopt = RNORM | RFILL;
    so.so_erropt = RERRNORM; /* write part not given: unchanged */
    so.so_maxblk = INFPSZ;
    setopts(&so);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rdopt & (RMODEMASK | RPROTMASK | RFILL), RNORM | RPROTDIS | RFILL);
    CHECK_EQ(sd->sd_flag & (STRMREAD | STRNDELON | STRISTTY | STRTOSTOP | STRDELIM), 0);
    CHECK(sd->sd_flag & STRHOLD);
    CHECK_EQ(sd->sd_erropt, RERRNORM | WERRNONPERSIST);
    CHECK_EQ(sd->sd_maxblk, INFPSZ);
    ust_unlock(&sd->sd_lock);

    /* SO_BAND: the marks of one band; invalid values are ignored */
    memset(&so, 0, sizeof(so));
    so.so_flags = SO_BAND | SO_HIWAT | SO_LOWAT | SO_READOPT | SO_MAXBLK | SO_MINPSZ;
    so.so_band = 3;
    so.so_hiwat = 300;
    so.so_lowat = 30;
    so.so_readopt = RMODEMASK | RPROTDAT | RPROTDIS; /* invalid mode and protocol */
    so.so_maxblk = 0;
    so.so_minpsz = -5;
    setopts(&so);
    CHECK_EQ(strqget(sd->sd_rq, QHIWAT, 3, &v), 0);
    CHECK_EQ(v, 300);
    CHECK_EQ(strqget(sd->sd_rq, QLOWAT, 3, &v), 0);
    CHECK_EQ(v, 30);
    CHECK_EQ(strqget(sd->sd_rq, QHIWAT, 0, &v), 0);
    CHECK_EQ(v, 7000);
    CHECK_EQ(strqget(sd->sd_rq, QMINPSZ, 0, &sv), 0);
    CHECK_EQ(sv, 3);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rdopt & (RMODEMASK | RPROTMASK), RNORM | RPROTDIS);
    CHECK_EQ(sd->sd_maxblk, INFPSZ);
    ust_unlock(&sd->sd_lock);

    /* a short M_SETOPTS does nothing */
    hdrv_up(hmsg2(M_SETOPTS, 0, &so, 4, NULL, 0));
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rdopt & (RMODEMASK | RPROTMASK), RNORM | RPROTDIS);
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.4 M_ERROR                                                              */
/* ------------------------------------------------------------------------ */
/* The next M_FLUSH that came down; returns its flag byte, or -1. */
static int next_flush(void)
{
    mblk_t *mp;
    while ((mp = hdrv_down(1000)) != NULL) {
        int t = mp->b_datap->db_type, f = mp->b_rptr[0];
        freemsg(mp);
        if (t == M_FLUSH)
            return f;
    }
    return -1;
}

static void test_error(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    char buf[32];
    hdrv_down_clear();

    hdrv_up_str(0, "lost");
    hdrv_up_bytes(M_ERROR, (unsigned char[]){EIO}, 1);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rerror, EIO);
    CHECK_EQ(sd->sd_werror, EIO);
    CHECK((sd->sd_flag & (STRDERR | STWRERR)) == (STRDERR | STWRERR));
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(next_flush(), FLUSHRW);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0); /* the driver turned FLUSHR back up */
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EIO);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1); /* persistent */
    CHECK_EQ(errno, EIO);
    CHECK((pollev(fd) & (POLLIN | POLLOUT)) == (POLLIN | POLLOUT));

    /* two bytes: clear both */
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0, 0}, 2);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rerror, 0);
    CHECK_EQ(sd->sd_werror, 0);
    CHECK_EQ(sd->sd_flag & (STRDERR | STWRERR), 0);
    ust_unlock(&sd->sd_lock);
    CHECK(hdrv_down(50) == NULL); /* clearing flushes nothing */

    /* read error only, write side unchanged */
    hdrv_up_bytes(M_ERROR, (unsigned char[]){EPROTO, 0xff}, 2);
    CHECK_EQ(next_flush(), FLUSHR);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rerror, EPROTO);
    CHECK_EQ(sd->sd_werror, 0);
    ust_unlock(&sd->sd_lock);
    /* write error only, read side unchanged */
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0xff, ENXIO}, 2);
    CHECK_EQ(next_flush(), FLUSHW);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rerror, EPROTO);
    CHECK_EQ(sd->sd_werror, ENXIO);
    ust_unlock(&sd->sd_lock);
    /* 0xff alone leaves both; clear the read side only */
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0xff}, 1);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0, 0xff}, 2);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_rerror, 0);
    CHECK_EQ(sd->sd_werror, ENXIO);
    ust_unlock(&sd->sd_lock);
    /* an empty M_ERROR is ignored */
    hdrv_up_bytes(M_ERROR, NULL, 0);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_werror, ENXIO);
    ust_unlock(&sd->sd_lock);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0}, 1);

    /* RERRNONPERSIST: the error is reported once, then data reads */
    struct stroptions so = {.so_flags = SO_ERROPT, .so_erropt = RERRNONPERSIST};
    setopts(&so);
    set_nonblock(fd);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){ECONNRESET, 0xff}, 2);
    hdrv_up_str(0, "after");
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, ECONNRESET);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 5);
    CHECK(strcmp(buf, "after") == 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);
    hdrv_down_clear();
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.5 M_HANGUP                                                             */
/* ------------------------------------------------------------------------ */
static atomic_int hup_reader_ret = -2;

static void *hup_reader(void *arg)
{
    char buf[8];
    atomic_store(&hup_reader_ret, (int)strm_read(*(int *)arg, buf, sizeof(buf)));
    return NULL;
}

static void test_hangup(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    char buf[32];
    pthread_t t;

    /* a blocked reader returns 0 */
    atomic_store(&hup_reader_ret, -2);
    CHECK_EQ(pthread_create(&t, NULL, hup_reader, &fd), 0);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&hup_reader_ret), -2);
    hdrv_up_bytes(M_HANGUP, NULL, 0);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&hup_reader_ret), 0);
    CHECK(pollev(fd) & POLLHUP);
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_flag & STRHUP);
    ust_unlock(&sd->sd_lock);

    /* M_UNHANGUP clears it: an empty non-blocking read fails again */
    hdrv_up_bytes(M_UNHANGUP, NULL, 0);
    ust_lock(&sd->sd_lock);
    CHECK(!(sd->sd_flag & STRHUP));
    ust_unlock(&sd->sd_lock);
    set_nonblock(fd);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);

    /* data queued before the hang-up is still read, then 0 */
    hdrv_up_str(0, "last");
    hdrv_up_bytes(M_HANGUP, NULL, 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 4);
    CHECK(strcmp(buf, "last") == 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.6 M_FLUSH                                                              */
/* ------------------------------------------------------------------------ */
static void test_flush(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    char buf[32];
    hdrv_down_clear();

    hdrv_up_str(0, "a");
    hdrv_up_str(1, "b");
    hdrv_up(hmsg(M_PCPROTO, 0, "p"));
    hdrv_up(hmsg(M_PASSFP, 0, "f"));
    CHECK_EQ(ust_sd_nread(sd, NULL), 4);
    CHECK(pollev(fd) & (POLLIN | POLLPRI));
    hdrv_up_bytes(M_FLUSH, (unsigned char[]){FLUSHR}, 1);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    /* A blocking stream withdraws its readable token lazily (sd_rput.c):
     * strm_poll, which clears stale tokens, sees nothing readable. */
    {
        struct pollfd sp = {.fd = fd, .events = POLLIN | POLLPRI};
        CHECK_EQ(strm_poll(&sp, 1, 0), 0);
        CHECK(!(pollev(fd) & POLLPRI));
    }
    CHECK(hdrv_down(50) == NULL); /* FLUSHR alone is not sent back */

    /* FLUSHBAND: one band only */
    hdrv_up_str(0, "a");
    hdrv_up_str(1, "b");
    hdrv_up_str(2, "c");
    hdrv_up_bytes(M_FLUSH, (unsigned char[]){FLUSHR | FLUSHBAND, 1}, 2);
    CHECK_EQ(ust_sd_nread(sd, NULL), 2);
    set_nonblock(fd);
    struct stroptions so = {.so_flags = SO_READOPT, .so_readopt = RMSGN};
    setopts(&so);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 1);
    CHECK(strcmp(buf, "c") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 1);
    CHECK(strcmp(buf, "a") == 0);

    /* FLUSHRW from below: the read side is flushed, FLUSHW goes back down
     * with FLUSHR cleared and marked MSGNOLOOP */
    hdrv_up_str(0, "x");
    hdrv_up_bytes(M_FLUSH, (unsigned char[]){FLUSHRW}, 1);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    mblk_t *mp = hdrv_down(1000);
    CHECK(mp != NULL);
    if (mp) {
        CHECK_EQ(mp->b_datap->db_type, M_FLUSH);
        CHECK_EQ(mp->b_rptr[0], FLUSHW);
        CHECK(mp->b_flag & MSGNOLOOP);
        freemsg(mp);
    }
    /* already looped once: freed */
    mblk_t *f = hmsg2(M_FLUSH, 0, (unsigned char[]){FLUSHW}, 1, NULL, 0);
    f->b_flag |= MSGNOLOOP;
    hdrv_up(f);
    CHECK(hdrv_down(50) == NULL);
    /* FLUSHW discards what the head holds for SNDHOLD */
    ust_lock(&sd->sd_lock);
    sd->sd_hold = hmsg(M_DATA, 0, "held");
    ust_unlock(&sd->sd_lock);
    hdrv_up_bytes(M_FLUSH, (unsigned char[]){FLUSHW}, 1);
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_hold == NULL);
    ust_unlock(&sd->sd_lock);
    mp = hdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_FLUSH && mp->b_rptr[0] == FLUSHW);
    freemsg(mp);
    /* an empty M_FLUSH is ignored */
    hdrv_up_str(0, "y");
    hdrv_up_bytes(M_FLUSH, NULL, 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 1);
    CHECK(hdrv_down(50) == NULL);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.7 M_SIG, M_PCSIG                                                       */
/* ------------------------------------------------------------------------ */
static void test_sig(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    atomic_store(&n_poll, 0);
    atomic_store(&n_usr1, 0);
    atomic_store(&n_usr2, 0);

    hdrv_up_bytes(M_SIG, (unsigned char[]){SIGUSR1}, 1);
    CHECK_EQ(wait_count(&n_usr1, 1), 1);
    hdrv_up_bytes(M_PCSIG, (unsigned char[]){SIGUSR2}, 1);
    CHECK_EQ(wait_count(&n_usr2, 1), 1);
    /* SIGPOLL goes only to S_MSG registrations */
    hdrv_up_bytes(M_SIG, (unsigned char[]){SIGPOLL}, 1);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&n_poll), 0);
    CHECK_EQ(ust_sd_setsig(sd, S_MSG), 0);
    hdrv_up_bytes(M_PCSIG, (unsigned char[]){SIGPOLL}, 1);
    CHECK_EQ(wait_count(&n_poll, 1), 1);
    hdrv_up_bytes(M_SIG, (unsigned char[]){SIGPOLL}, 1);
    CHECK_EQ(wait_count(&n_poll, 2), 2);
    /* nonsense signal numbers and empty messages do nothing */
    hdrv_up_bytes(M_SIG, (unsigned char[]){0}, 1);
    hdrv_up_bytes(M_SIG, (unsigned char[]){200}, 1);
    hdrv_up_bytes(M_PCSIG, NULL, 0);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&n_usr1), 1);
    CHECK_EQ(atomic_load(&n_usr2), 1);
    CHECK_EQ(atomic_load(&n_poll), 2);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0); /* never queued */
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.8 I_SETSIG events on arrival                                           */
/* ------------------------------------------------------------------------ */
static void test_events(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    char buf[64];
    atomic_store(&n_poll, 0);
    atomic_store(&n_urg, 0);
    set_nonblock(fd);

    CHECK_EQ(ust_sd_setsig(sd, S_INPUT | S_RDNORM), 0);
    hdrv_up_str(0, "one");
    CHECK_EQ(wait_count(&n_poll, 1), 1);
    hdrv_up_str(0, "two"); /* not the first: no signal */
    sleep_ms(50);
    CHECK_EQ(atomic_load(&n_poll), 1);
    while (strm_read(fd, buf, sizeof(buf)) > 0)
        ;
    hdrv_up_str(0, "three");
    CHECK_EQ(wait_count(&n_poll, 2), 2);
    hdrv_up_str(1, "band"); /* band 1 only: S_RDNORM not asked, S_INPUT is */
    CHECK_EQ(wait_count(&n_poll, 3), 3);
    while (strm_read(fd, buf, sizeof(buf)) > 0)
        ;

    /* S_RDBAND with S_BANDURG: SIGURG instead of SIGPOLL */
    CHECK_EQ(ust_sd_setsig(sd, S_RDBAND | S_BANDURG), 0);
    hdrv_up_str(0, "norm");
    sleep_ms(50);
    CHECK_EQ(atomic_load(&n_poll), 3);
    hdrv_up_str(4, "urgent");
    CHECK_EQ(wait_count(&n_urg, 1), 1);
    CHECK_EQ(atomic_load(&n_poll), 3);
    while (strm_read(fd, buf, sizeof(buf)) > 0)
        ;

    /* S_HIPRI, S_ERROR, S_HANGUP */
    CHECK_EQ(ust_sd_setsig(sd, S_HIPRI | S_ERROR | S_HANGUP), 0);
    hdrv_up(hmsg(M_PCPROTO, 0, "pc"));
    CHECK_EQ(wait_count(&n_poll, 4), 4);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){EIO}, 1);
    CHECK_EQ(wait_count(&n_poll, 5), 5);
    hdrv_up_bytes(M_HANGUP, NULL, 0);
    CHECK_EQ(wait_count(&n_poll, 6), 6);
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);
    hdrv_down_clear();
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.9 ioctl replies and other types                                        */
/* ------------------------------------------------------------------------ */
static mblk_t *ioc_msg(unsigned char type, uint_t id)
{
    union ioctypes u;
    memset(&u, 0, sizeof(u));
    if (type == M_COPYIN || type == M_COPYOUT)
        u.copyreq.cq_id = id;
    else
        u.iocblk.ioc_id = id;
    return hmsg2(type, 0, &u, sizeof(u), NULL, 0);
}

static atomic_int ioc_woken;

/* An I_STR on another thread. */
struct istr_call {
    int fd, ret;
    atomic_int done;
};

static void *istr_thread(void *arg)
{
    struct istr_call *c = arg;
    struct strioctl ic = {.ic_cmd = 4321, .ic_timout = 5};
    c->ret = strm_ioctl(c->fd, I_STR, &ic);
    atomic_store(&c->done, 1);
    return NULL;
}

static void *ioc_waiter(void *arg)
{
    struct stdata *sd = arg;
    ust_lock(&sd->sd_lock);
    while (!sd->sd_iocblk)
        ust_sd_wait(sd, &sd->sd_iwait, 0);
    ust_unlock(&sd->sd_lock);
    atomic_store(&ioc_woken, 1);
    return NULL;
}

static void test_ioc_replies(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    pthread_t t;
    hdrv_down_clear();

    /* no ioctl in progress: freed */
    hdrv_up(ioc_msg(M_IOCACK, 5));
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_iocblk == NULL);
    sd->sd_iocbusy = 1;
    sd->sd_iocid = 77;
    ust_unlock(&sd->sd_lock);

    atomic_store(&ioc_woken, 0);
    CHECK_EQ(pthread_create(&t, NULL, ioc_waiter, sd), 0);
    hdrv_up(ioc_msg(M_IOCNAK, 76));                   /* wrong id */
    hdrv_up(hmsg2(M_IOCACK, 0, "short", 5, NULL, 0)); /* too short */
    sleep_ms(30);
    CHECK_EQ(atomic_load(&ioc_woken), 0);
    mblk_t *ack = ioc_msg(M_IOCACK, 77);
    hdrv_up(ack);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&ioc_woken), 1);
    hdrv_up(ioc_msg(M_IOCNAK, 77)); /* a second reply: freed */
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_iocblk == ack);
    mblk_t *got = sd->sd_iocblk;
    sd->sd_iocblk = NULL;
    ust_unlock(&sd->sd_lock);
    freemsg(got);

    /* M_COPYIN / M_COPYOUT carry the id in cq_id */
    hdrv_up(ioc_msg(M_COPYOUT, 77));
    ust_lock(&sd->sd_lock);
    got = sd->sd_iocblk;
    sd->sd_iocblk = NULL;
    ust_unlock(&sd->sd_lock);
    CHECK(got && got->b_datap->db_type == M_COPYOUT);
    freemsg(got);
    hdrv_up(ioc_msg(M_COPYIN, 78));
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_iocblk == NULL);
    sd->sd_iocbusy = 0;
    ust_unlock(&sd->sd_lock);

    /* through I_STR: the driver's M_IOCACK completes strm_ioctl */
    atomic_store(&hdrv_ioc_rval, 7);
    struct strioctl ic = {.ic_cmd = 1234, .ic_timout = 5};
    CHECK_EQ(strm_ioctl(fd, I_STR, &ic), 7);
    /* the driver holds it: a reply with another id is stale, the right one
     * completes the call */
    atomic_store(&hdrv_ioc_hold, 1);
    struct istr_call c = {.fd = fd};
    CHECK_EQ(pthread_create(&t, NULL, istr_thread, &c), 0);
    mblk_t *req = hdrv_down(2000);
    CHECK(req && req->b_datap->db_type == M_IOCTL);
    if (req) {
        struct iocblk ib;
        memcpy(&ib, req->b_rptr, sizeof(ib));
        hdrv_up(ioc_msg(M_IOCACK, ib.ioc_id + 1));
        sleep_ms(30);
        CHECK_EQ(atomic_load(&c.done), 0);
        ib.ioc_rval = 3;
        ib.ioc_count = 0;
        memcpy(req->b_rptr, &ib, sizeof(ib));
        req->b_datap->db_type = M_IOCACK;
        hdrv_up(req);
    }
    pthread_join(t, NULL);
    CHECK_EQ(c.ret, 3);
    atomic_store(&hdrv_ioc_hold, 0);

    /* an M_IOCTL that reaches the head is refused back down */
    mblk_t *ioc = ioc_msg(M_IOCTL, 99);
    ioc->b_cont = hmsg(M_DATA, 0, "payload");
    hdrv_up(ioc);
    mblk_t *nak = hdrv_down(1000);
    CHECK(nak != NULL);
    if (nak) {
        struct iocblk ib;
        memcpy(&ib, nak->b_rptr, sizeof(ib));
        CHECK_EQ(nak->b_datap->db_type, M_IOCNAK);
        CHECK_EQ(ib.ioc_id, 99);
        CHECK_EQ(ib.ioc_error, EINVAL);
        CHECK_EQ(ib.ioc_count, 0);
        CHECK(nak->b_cont == NULL);
        freemsg(nak);
    }
    hdrv_up(hmsg2(M_IOCTL, 0, "x", 1, NULL, 0)); /* too short even to refuse */

    /* types with no business at the head are freed */
    hdrv_up_bytes(M_READ, (unsigned char[8]){0}, 8);
    hdrv_up(ioc_msg(M_IOCDATA, 1));
    hdrv_up_bytes(M_CTL, "ctl", 3);
    hdrv_up_bytes(M_DELAY, "d", 1);
    hdrv_up_bytes(M_START, NULL, 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    CHECK(hdrv_down(50) == NULL);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.10 back-enable of the write queue                                      */
/* ------------------------------------------------------------------------ */
struct wwaiter {
    struct stdata *sd;
    struct ust_waitq *wq; /* NULL: sd_wwait */
    atomic_int ready, woken;
};

/* Wait on w->wq until something wakes it. */
static void *write_waiter(void *arg)
{
    struct wwaiter *w = arg;
    struct ust_waitq *wq = w->wq ? w->wq : &w->sd->sd_wwait;
    ust_lock(&w->sd->sd_lock);
    unsigned seq = ust_sd_wait_seq(wq);
    atomic_store(&w->ready, 1);
    while (ust_sd_wait_seq(wq) == seq)
        ust_sd_wait_from(w->sd, wq, seq, 0);
    ust_unlock(&w->sd->sd_lock);
    atomic_store(&w->woken, 1);
    return NULL;
}

static void test_write_enable(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    atomic_store(&n_poll, 0);

    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    CHECK(!(pollev(fd) & POLLOUT));
    CHECK_EQ(ust_sd_setsig(sd, S_OUTPUT), 0);
    struct wwaiter w = {.sd = sd};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, write_waiter, &w), 0);
    while (!atomic_load(&w.ready))
        sleep_ms(1);
    qenable(sd->sd_wq); /* what back-enabling from below does */
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&w.woken), 1);
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(wait_count(&n_poll, 1), 1);
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);

    /* Inside another head's locked section the locked part is owed: the
     * writers are woken at once, readiness and S_OUTPUT come at unlock. */
    struct stdata *other = ust_sd_alloc();
    CHECK(other != NULL);
    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(ust_sd_setsig(sd, S_WRNORM), 0);
    struct wwaiter w2 = {.sd = sd};
    CHECK_EQ(pthread_create(&t, NULL, write_waiter, &w2), 0);
    while (!atomic_load(&w2.ready))
        sleep_ms(1);
    ust_sd_lockq(other);
    qenable(sd->sd_wq);
    pthread_join(t, NULL); /* woken while `other` is still held */
    CHECK_EQ(atomic_load(&w2.woken), 1);
    CHECK(!(pollev(fd) & POLLOUT));
    sleep_ms(30);
    CHECK_EQ(atomic_load(&n_poll), 1);
    CHECK_EQ(ust_sd_settle(other), 1); /* settle does the owed work now */
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(wait_count(&n_poll, 2), 2);
    CHECK_EQ(ust_sd_settle(other), 0); /* nothing owed any more */
    ust_sd_unlockq(other);
    /* the same through unlock */
    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    ust_sd_lockq(other);
    qenable(sd->sd_wq);
    qenable(sd->sd_wq); /* owed once */
    CHECK(!(pollev(fd) & POLLOUT));
    ust_sd_unlockq(other);
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(wait_count(&n_poll, 3), 3);
    sleep_ms(30);
    CHECK_EQ(atomic_load(&n_poll), 3);
    /* a head's own write queue inside its own locked section: done at once */
    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    ust_sd_lockq(sd);
    qenable(sd->sd_wq);
    ust_sd_unlockq(sd);
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);
    ust_sd_free(other);

    /* the read queue's hook wakes readers */
    struct wwaiter w3 = {.sd = sd, .wq = &sd->sd_rwait};
    CHECK_EQ(pthread_create(&t, NULL, write_waiter, &w3), 0);
    while (!atomic_load(&w3.ready))
        sleep_ms(1);
    qenable(sd->sd_rq);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&w3.woken), 1);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.11 flow control at the head read queue                                 */
/* ------------------------------------------------------------------------ */
static void test_flow(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    char buf[256];
    struct stroptions so = {.so_flags = SO_HIWAT | SO_LOWAT, .so_hiwat = 100, .so_lowat = 20};
    setopts(&so);
    queue_t *drq = atomic_load(&hdrv_rq);
    atomic_store(&hdrv_backenabled, 0);

    char chunk[40];
    memset(chunk, 'z', sizeof(chunk));
    CHECK(canputnext(drq));
    for (int i = 0; i < 3; i++)
        hdrv_up(hmsg2(M_DATA, 0, chunk, sizeof(chunk), NULL, 0));
    CHECK(!canputnext(drq)); /* 120 >= 100: full, and now wanted */
    CHECK(ust_qflags(sd->sd_rq) & QWANTW);
    CHECK_EQ(strm_read(fd, buf, 40), 40); /* 80 left: still full */
    sleep_ms(30);
    CHECK_EQ(atomic_load(&hdrv_backenabled), 0);
    CHECK_EQ(strm_read(fd, buf, 70), 70); /* 10 left <= 20: back-enable */
    for (int i = 0; i < 2000 && atomic_load(&hdrv_backenabled) == 0; i++)
        sleep_ms(1);
    CHECK_EQ(atomic_load(&hdrv_backenabled), 1);
    CHECK(canputnext(drq));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 10);
    CHECK_EQ(strm_close(fd), 0);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPOLL, &sa, NULL);
    sigaction(SIGURG, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);

    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_headinit();
    test_data();
    test_setopts();
    test_error();
    test_hangup();
    test_flush();
    test_sig();
    test_events();
    test_ioc_replies();
    test_write_enable();
    test_flow();

    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
