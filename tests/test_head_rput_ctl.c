/* SPDX-License-Identifier: MIT */
/*
 * test_head_rput_ctl.c -- conformance of the stream head's read put
 * procedure for control messages: M_SETOPTS, M_ERROR, M_HANGUP, M_FLUSH,
 * M_SIG/M_PCSIG and I_SETSIG events on arrival (src/head/sd_rput.c).  Data
 * messages, ioctl replies and flow control are in test_head_rput.c; shared
 * helpers in head_rput_util.h.
 *
 * The stream is "/dev/streams/hdrv" (tests/head_tdrv.h): the test sends
 * messages up with hdrv_up() and sees what comes down with hdrv_down().
 * References: streamio(7) (SVR4.2 / Solaris), the STREAMS Programming Guide
 * ("Stream Head", "Message Types", appendix "Message Types": M_SETOPTS,
 * M_ERROR, M_HANGUP, M_FLUSH, M_SIG, M_PCSIG, M_IOCACK, M_COPYIN, ...),
 * stroptions(9S), poll(2).  Cases:
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
#include "head_rput_util.h"

static void set_nonblock(int fd)
{
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
}

/* Read one message's worth into buf (NUL-terminated); returns read's value. */
static ssize_t rd(int fd, char *buf, size_t len)
{
    ssize_t n = strm_read(fd, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    return n;
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
    test_setopts();
    test_error();
    test_hangup();
    test_flush();
    test_sig();
    test_events();

    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
