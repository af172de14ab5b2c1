/* SPDX-License-Identifier: MIT */
/*
 * test_head_read.c -- conformance of reading from a stream with read(2) and
 * readv(2): read modes, protocol options, blocking, signals, M_READ, RFILL,
 * marks (src/head/sd_read.c).  getmsg(2)/getpmsg(2), I_PEEK, I_NREAD and
 * M_PASSFP are in test_head_getmsg.c; shared helpers in head_read_util.h.
 *
 * The stream is "/dev/streams/hdrv" (tests/head_tdrv.h): the test puts the
 * messages to be read up the stream with hdrv_up() and sets read options with
 * M_SETOPTS SO_READOPT, as a module would.
 * References: read(2) and readv(2) (POSIX.1-2008 / SVID, the STREAMS
 * paragraphs), streamio(7) (I_SRDOPT modes and protocol options, I_PEEK,
 * I_NREAD, SO_MREADON), getmsg(2)/getpmsg(2), Linux Fast-STREAMS read-fill
 * (RFILL).  Cases:
 *   R.1  read(2) RNORM: byte stream across messages, the rest of a partly
 *        read message stays; readv(2) scatters; poll(2) POLLIN goes when the
 *        queue is found empty
 *   R.2  read(2) RMSGD / RMSGN: one message per read, the rest discarded /
 *        kept
 *   R.3  read(2): zero-length messages return 0 (consumed), and end an RNORM
 *        read that has data (kept for the next read)
 *   R.4  read(2) protocol options: RPROTNORM EBADMSG (message kept),
 *        RPROTDAT control read as data, RPROTDIS control discarded (a
 *        control-only message vanishes and the read goes on)
 *   R.6  read(2): O_NONBLOCK EAGAIN; a blocked read woken by data from
 *        another thread; hang-up returns 0; STPLEX EINVAL; EBADF while the
 *        stream is being closed (STRCLOSE)
 *   R.7  read(2) and signals: EINTR without SA_RESTART, restarted and
 *        completed with SA_RESTART; an RFILL read interrupted returns what it
 *        has
 *   R.8  streamio SO_MREADON / RMREAD: M_READ with the count goes down once
 *        before a read blocks, never when data is waiting; data held at the
 *        head (SNDHOLD) goes down before a read or getmsg
 *   R.9  read-fill (RFILL): waits for the whole count; a zero-length
 *        message, hang-up or error ends it early
 *   R.10 marks and delimiters: an RNORM read stops before and after a
 *        MSGMARK message; with SO_DELIM after a MSGDELIM message
 *   R.11 read(2)/readv(2) errors: EBADF, ENOSTR, EFAULT (NULL buffer, bad
 *        address: nothing lost), EINVAL (iovcnt <= 0 or > IOV_MAX, total >
 *        SSIZE_MAX), count 0 returns 0 and leaves the queue
 *   R.16 a writer and a reader thread: 20000 messages of varying size read
 *        with varying counts arrive complete and in order, under flow
 *        control of the head read queue
 *   R.17 a pipe: reading one end relieves the writer flow-controlled at the
 *        other (the back-enable crosses two stream heads)
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
#include "thread_asleep.h"
#include "head_tdrv.h"
#include "sthead.h"
#include "head_read_util.h"

static void rdopt(int opt)
{
    struct stroptions so = {.so_flags = SO_READOPT, .so_readopt = (short)opt};
    hdrv_up(hmsg2(M_SETOPTS, 0, &so, sizeof(so), NULL, 0));
}

/* Send up M_DATA with band and flags. */
static void up_flag(const char *s, unsigned short flag)
{
    mblk_t *mp = hmsg(M_DATA, 0, s);
    mp->b_flag |= flag;
    hdrv_up(mp);
}

/* A blocking reader on another thread. */
struct reader {
    int fd;
    size_t count;
    char buf[256];
    pthread_t thread;
    atomic_int tid;
    atomic_int done;
    ssize_t ret;
    int err;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    atomic_store(&r->tid, (int)syscall(SYS_gettid));
    r->ret = strm_read(r->fd, r->buf, r->count);
    r->err = errno;
    if (r->ret >= 0)
        r->buf[r->ret] = '\0';
    atomic_store(&r->done, 1);
    return NULL;
}

static void reader_start(struct reader *r, int fd, size_t count)
{
    memset(r, 0, sizeof(*r));
    r->fd = fd;
    r->count = count;
    CHECK_EQ(pthread_create(&r->thread, NULL, reader_main, r), 0);
    /* Until it sleeps: a signal sent earlier would interrupt nothing. */
    (void)thread_wait_asleep(&r->tid, &r->done, 10000);
}

static void reader_join(struct reader *r)
{
    pthread_join(r->thread, NULL);
}

/* ------------------------------------------------------------------------ */
/* R.1 RNORM                                                                */
/* ------------------------------------------------------------------------ */
static void test_rnorm(void)
{
    int fd = open_hdrv(1);
    char buf[64];

    hdrv_up_str(0, "abc");
    hdrv_up_str(0, "defg");
    hdrv_up_str(0, "hi");
    CHECK(pollev(fd) & POLLIN);
    CHECK_EQ(rd(fd, buf, 5), 5);
    CHECK(strcmp(buf, "abcde") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 4);
    CHECK(strcmp(buf, "fghi") == 0);
    CHECK(!(pollev(fd) & POLLIN));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);

    /* bands come first, then band 0; the rest of a band message stays */
    hdrv_up_str(0, "zero");
    hdrv_up_str(5, "five");
    CHECK_EQ(rd(fd, buf, 2), 2);
    CHECK(strcmp(buf, "fi") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 6);
    CHECK(strcmp(buf, "vezero") == 0);

    /* readv scatters over the vector, across messages and blocks */
    char a[2], b[3], c[10];
    struct iovec v[3] = {{a, 2}, {b, 3}, {c, 10}};
    hdrv_up(hmsg2(M_DATA, 0, "12", 2, NULL, 0));
    mblk_t *mp = hmsg(M_DATA, 0, "345");
    linkb(mp, hmsg(M_DATA, 0, "6789"));
    hdrv_up(mp);
    CHECK_EQ(strm_readv(fd, v, 3), 9);
    CHECK(memcmp(a, "12", 2) == 0 && memcmp(b, "345", 3) == 0 && memcmp(c, "6789", 4) == 0);
    /* zero-length elements are skipped */
    struct iovec v2[3] = {{a, 0}, {b, 2}, {c, 0}};
    hdrv_up_str(0, "xyz");
    CHECK_EQ(strm_readv(fd, v2, 3), 2);
    CHECK(memcmp(b, "xy", 2) == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 1);
    CHECK(strcmp(buf, "z") == 0);

    /* many messages in one read */
    for (int i = 0; i < 100; i++)
        hdrv_up_str(0, "0123456789");
    char big[2000];
    CHECK_EQ(strm_read(fd, big, sizeof(big)), 1000);
    CHECK(memcmp(big + 990, "0123456789", 10) == 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.2 RMSGD, RMSGN                                                         */
/* ------------------------------------------------------------------------ */
static void test_rmsg(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char buf[64];

    rdopt(RMSGD);
    hdrv_up_str(0, "first");
    hdrv_up_str(0, "second");
    CHECK_EQ(rd(fd, buf, 3), 3);
    CHECK(strcmp(buf, "fir") == 0); /* "st" discarded */
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 6);
    CHECK(strcmp(buf, "second") == 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);

    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RMSGN), 0); /* the same by I_SRDOPT */
    hdrv_up_str(0, "first");
    hdrv_up_str(0, "second");
    CHECK_EQ(rd(fd, buf, 3), 3);
    CHECK(strcmp(buf, "fir") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2); /* the rest of the first only */
    CHECK(strcmp(buf, "st") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 6);
    CHECK(strcmp(buf, "second") == 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.3 zero-length messages                                                 */
/* ------------------------------------------------------------------------ */
static void test_zero_length(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char buf[64];
    int modes[3] = {RNORM, RMSGD, RMSGN};

    for (int m = 0; m < 3; m++) {
        rdopt(modes[m]);
        hdrv_up(hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
        hdrv_up_str(0, "after");
        CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0); /* consumed */
        CHECK_EQ(ust_sd_nread(sd, NULL), 1);
        CHECK_EQ(rd(fd, buf, sizeof(buf)), 5);
    }
    /* RNORM: a zero-length message ends a read that has data, and stays */
    rdopt(RNORM);
    hdrv_up_str(0, "ab");
    hdrv_up(hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
    hdrv_up_str(0, "cd");
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK(strcmp(buf, "ab") == 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK(strcmp(buf, "cd") == 0);
    /* a message of empty blocks is zero-length too */
    mblk_t *mp = hmsg2(M_DATA, 0, NULL, 0, NULL, 0);
    linkb(mp, hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
    hdrv_up(mp);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.4 protocol options                                                     */
/* ------------------------------------------------------------------------ */
static void test_protopts(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char buf[64];

    /* RPROTNORM (the default): EBADMSG, the message stays */
    hdrv_up(hmsg2(M_PROTO, 0, "CTL", 3, "data", 4));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADMSG);
    CHECK_EQ(ust_sd_nread(sd, NULL), 1);
    /* a high-priority one goes in front of it: EBADMSG too */
    hdrv_up(hmsg(M_PCPROTO, 0, "PC"));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADMSG);

    /* RPROTDAT: control read as data, then the data part */
    rdopt(RNORM | RPROTDAT);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 9);
    CHECK(strcmp(buf, "PCCTLdata") == 0);
    CHECK(!(pollev(fd) & (POLLIN | POLLPRI)));
    /* partly: the rest stays and is read on */
    hdrv_up(hmsg2(M_PROTO, 0, "CTL", 3, "data", 4));
    CHECK_EQ(rd(fd, buf, 2), 2);
    CHECK(strcmp(buf, "CT") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 5);
    CHECK(strcmp(buf, "Ldata") == 0);

    /* RPROTDIS: control discarded; a control-only message vanishes */
    rdopt(RNORM | RPROTDIS);
    hdrv_up(hmsg2(M_PROTO, 0, "CTL", 3, "one", 3));
    hdrv_up(hmsg(M_PROTO, 0, "only"));
    hdrv_up(hmsg2(M_PROTO, 0, "CTL", 3, "two", 3));
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 6);
    CHECK(strcmp(buf, "onetwo") == 0);
    rdopt(RMSGN | RPROTDIS);
    hdrv_up(hmsg(M_PCPROTO, 0, "only"));
    hdrv_up(hmsg2(M_PROTO, 3, "CTL", 3, "banded", 6));
    CHECK_EQ(rd(fd, buf, 3), 3); /* the control-only one skipped */
    CHECK(strcmp(buf, "ban") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 3);
    CHECK(strcmp(buf, "ded") == 0);
    hdrv_up(hmsg(M_PROTO, 0, "only"));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1); /* nothing left to read */
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    CHECK_EQ(strm_close(fd), 0);
}
/* ------------------------------------------------------------------------ */
/* R.6 blocking, non-blocking, hang-up, STPLEX                              */
/* ------------------------------------------------------------------------ */
static void test_blocking(void)
{
    int fd = open_hdrv(0);
    struct stdata *sd = sdof(fd);
    struct reader r;
    char buf[16];

    reader_start(&r, fd, 100);
    CHECK_EQ(atomic_load(&r.done), 0);
    hdrv_up_str(0, "wake");
    reader_join(&r);
    CHECK_EQ(r.ret, 4);
    CHECK(strcmp(r.buf, "wake") == 0);

    /* O_NONBLOCK set later by fcntl */
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0);

    /* STPLEX: linked under a multiplexer, no I/O */
    ust_lock(&sd->sd_lock);
    sd->sd_flag |= STPLEX;
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EINVAL);
    ust_lock(&sd->sd_lock);
    sd->sd_flag &= ~STPLEX;
    /* STRCLOSE: the stream is being closed under the caller */
    sd->sd_flag |= STRCLOSE;
    ust_unlock(&sd->sd_lock);
    hdrv_up_str(0, "x");
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADF);
    int flags = 0;
    struct strbuf dat = {.maxlen = sizeof(buf), .buf = buf};
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EBADF);
    ust_lock(&sd->sd_lock);
    sd->sd_flag &= ~STRCLOSE;
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 1);

    /* hang-up: a blocked reader returns 0, later reads do not block */
    reader_start(&r, fd, 100);
    hdrv_up_bytes(M_HANGUP, NULL, 0);
    reader_join(&r);
    CHECK_EQ(r.ret, 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    CHECK_EQ(strm_close(fd), 0);

    /* a read error wakes a blocked reader */
    fd = open_hdrv(0);
    reader_start(&r, fd, 100);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){EPIPE}, 1);
    reader_join(&r);
    CHECK_EQ(r.ret, -1);
    CHECK_EQ(r.err, EPIPE);
    hdrv_down_clear();
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.7 signals                                                              */
/* ------------------------------------------------------------------------ */
static atomic_int n_usr1; /* lock-free: safe in a handler, and across threads */

static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add(&n_usr1, 1);
}

static void usr1_handler(int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

static void test_signals(void)
{
    int fd = open_hdrv(0);
    struct reader r;
    atomic_store(&n_usr1, 0);

    usr1_handler(0);
    reader_start(&r, fd, 100);
    pthread_kill(r.thread, SIGUSR1);
    reader_join(&r);
    CHECK_EQ(r.ret, -1);
    CHECK_EQ(r.err, EINTR);
    CHECK_EQ(atomic_load(&n_usr1), 1);

    usr1_handler(SA_RESTART);
    reader_start(&r, fd, 100);
    pthread_kill(r.thread, SIGUSR1);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&r.done), 0); /* restarted: still waiting */
    hdrv_up_str(0, "data");
    reader_join(&r);
    CHECK_EQ(r.ret, 4);
    CHECK(strcmp(r.buf, "data") == 0);
    /* (TSan runs a handler only when the interrupted call returns, so the
     * count is checked here rather than while the read waits) */
    CHECK_EQ(atomic_load(&n_usr1), 2);

    /* an interrupted read-fill returns what it has */
    usr1_handler(0);
    rdopt(RNORM | RFILL);
    hdrv_up_str(0, "part");
    reader_start(&r, fd, 10);
    CHECK_EQ(atomic_load(&r.done), 0);
    pthread_kill(r.thread, SIGUSR1);
    reader_join(&r);
    CHECK_EQ(r.ret, 4);
    CHECK(strcmp(r.buf, "part") == 0);
    signal(SIGUSR1, SIG_DFL);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.8 M_READ                                                               */
/* ------------------------------------------------------------------------ */
/* The next M_READ that came down: its count, or -1. */
static long next_mread(long ms)
{
    mblk_t *mp;
    while ((mp = hdrv_down(ms)) != NULL) {
        long c = -1;
        if (mp->b_datap->db_type == M_READ && mp->b_wptr - mp->b_rptr >= (long)sizeof(long))
            memcpy(&c, mp->b_rptr, sizeof(c));
        int t = mp->b_datap->db_type;
        freemsg(mp);
        if (t == M_READ)
            return c;
    }
    return -1;
}

static void test_mread(void)
{
    int fd = open_hdrv(0);
    struct stdata *sd = sdof(fd);
    struct reader r;
    char buf[64];
    hdrv_down_clear();

    /* off by default */
    reader_start(&r, fd, 100);
    hdrv_up_str(0, "x");
    reader_join(&r);
    CHECK_EQ(next_mread(50), -1);

    struct stroptions so = {.so_flags = SO_MREADON};
    hdrv_up(hmsg2(M_SETOPTS, 0, &so, sizeof(so), NULL, 0));
    /* data waiting: no M_READ */
    hdrv_up_str(0, "ready");
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 5);
    CHECK_EQ(next_mread(50), -1);
    /* about to block: one M_READ with the count */
    reader_start(&r, fd, 77);
    CHECK_EQ(next_mread(1000), 77);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_mread_sent, 1);
    ust_unlock(&sd->sd_lock);
    ust_sd_wake(&sd->sd_rwait); /* a wake with nothing to read: no second M_READ */
    sleep_ms(30);
    CHECK_EQ(next_mread(30), -1);
    hdrv_up_str(0, "y");
    reader_join(&r);
    CHECK_EQ(r.ret, 1);
    ust_lock(&sd->sd_lock);
    CHECK_EQ(sd->sd_mread_sent, 0); /* data arrived */
    ust_unlock(&sd->sd_lock);
    /* a non-blocking read does not send it */
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(next_mread(30), -1);
    CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0);
    /* SO_MREADOFF; RMREAD in the read options does the same */
    so.so_flags = SO_MREADOFF;
    hdrv_up(hmsg2(M_SETOPTS, 0, &so, sizeof(so), NULL, 0));
    reader_start(&r, fd, 5);
    CHECK_EQ(next_mread(30), -1);
    hdrv_up_str(0, "z");
    reader_join(&r);
    rdopt(RNORM | RMREAD);
    reader_start(&r, fd, 9);
    CHECK_EQ(next_mread(1000), 9);
    hdrv_up_str(0, "z");
    reader_join(&r);
    CHECK_EQ(strm_close(fd), 0);
}

/* R.8 (cont.) data held for SNDHOLD goes down before a read or getmsg */
static void test_hold_flush(void)
{
    int fd = open_hdrv(1);
    char buf[16];
    int flags = 0;
    struct strbuf dat = {.maxlen = sizeof(buf), .buf = buf};
    hdrv_down_clear();

    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD), 0);
    CHECK_EQ(strm_write(fd, "held", 4), 4);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);
    mblk_t *mp = hdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_DATA && msgdsize(mp) == 4);
    freemsg(mp);
    CHECK_EQ(strm_write(fd, "more", 4), 4);
    CHECK_EQ(getmsg(fd, NULL, &dat, &flags), -1);
    CHECK_EQ(errno, EAGAIN);
    mp = hdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_DATA && msgdsize(mp) == 4);
    freemsg(mp);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.9 read-fill                                                            */
/* ------------------------------------------------------------------------ */
static void test_rfill(void)
{
    int fd = open_hdrv(0);
    struct reader r;

    rdopt(RNORM | RFILL);
    hdrv_up_str(0, "ab");
    reader_start(&r, fd, 8);
    CHECK_EQ(atomic_load(&r.done), 0);
    hdrv_up_str(0, "cde");
    sleep_ms(30);
    CHECK_EQ(atomic_load(&r.done), 0);
    hdrv_up_str(0, "fghij"); /* fills it; "ij" stays */
    reader_join(&r);
    CHECK_EQ(r.ret, 8);
    CHECK(strcmp(r.buf, "abcdefgh") == 0);
    char buf[16];
    CHECK_EQ(rd(fd, buf, 2), 2);
    CHECK(strcmp(buf, "ij") == 0);

    /* a zero-length message ends it early, and is read next */
    reader_start(&r, fd, 8);
    hdrv_up_str(0, "12");
    hdrv_up(hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
    reader_join(&r);
    CHECK_EQ(r.ret, 2);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    /* an error ends it with the data; the error comes next */
    reader_start(&r, fd, 8);
    hdrv_up_str(0, "34");
    sleep_ms(50);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){EIO, 0xff}, 2);
    reader_join(&r);
    CHECK_EQ(r.ret, 2);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EIO);
    hdrv_up_bytes(M_ERROR, (unsigned char[]){0, 0xff}, 2);
    /* hang-up ends it with what it has */
    reader_start(&r, fd, 8);
    hdrv_up_str(0, "56");
    sleep_ms(50);
    hdrv_up_bytes(M_HANGUP, NULL, 0);
    reader_join(&r);
    CHECK_EQ(r.ret, 2);
    CHECK(strcmp(r.buf, "56") == 0);
    hdrv_down_clear();
    CHECK_EQ(strm_close(fd), 0);

    /* RFILL only applies to RNORM */
    fd = open_hdrv(0);
    rdopt(RMSGN | RFILL);
    hdrv_up_str(0, "ab");
    reader_start(&r, fd, 8);
    reader_join(&r);
    CHECK_EQ(r.ret, 2);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.10 marks and delimiters                                                */
/* ------------------------------------------------------------------------ */
static void test_marks(void)
{
    int fd = open_hdrv(1);
    char buf[64];

    hdrv_up_str(0, "aa");
    up_flag("MM", MSGMARK);
    hdrv_up_str(0, "bb");
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2); /* stops before the mark */
    CHECK(strcmp(buf, "aa") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2); /* the marked one, and stops */
    CHECK(strcmp(buf, "MM") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK(strcmp(buf, "bb") == 0);
    /* a partly read marked message stays marked */
    up_flag("MARK", MSGMARK);
    hdrv_up_str(0, "cc");
    CHECK_EQ(rd(fd, buf, 1), 1);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 3);
    CHECK(strcmp(buf, "ARK") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);

    /* delimiters count only with SO_DELIM */
    up_flag("d1", MSGDELIM);
    hdrv_up_str(0, "d2");
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 4);
    struct stroptions so = {.so_flags = SO_DELIM};
    hdrv_up(hmsg2(M_SETOPTS, 0, &so, sizeof(so), NULL, 0));
    up_flag("d1", MSGDELIM);
    hdrv_up_str(0, "d2");
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK(strcmp(buf, "d1") == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.11 errors                                                              */
/* ------------------------------------------------------------------------ */
static void test_read_errors(void)
{
    int fd = open_hdrv(1);
    struct stdata *sd = sdof(fd);
    char buf[16];
    int p[2];

    CHECK_EQ(strm_read(-1, buf, 1), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_read(1 << 22, buf, 1), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(strm_read(p[0], buf, 1), -1);
    CHECK_EQ(errno, ENOSTR);
    struct iovec v1 = {buf, 1};
    CHECK_EQ(strm_readv(p[0], &v1, 1), -1);
    CHECK_EQ(errno, ENOSTR);
    close(p[0]);
    close(p[1]);

    hdrv_up_str(0, "keep");
    CHECK_EQ(strm_read(fd, NULL, 4), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(strm_read(fd, (void *)16, 4), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(strm_read(fd, (void *)0xffff800000000000ULL, 4), -1);
    CHECK_EQ(errno, EFAULT);
    /* a bad second element: the first gets its bytes, nothing is lost */
    struct iovec bad[2] = {{buf, 2}, {(void *)8, 2}};
    CHECK_EQ(strm_readv(fd, bad, 2), 2);
    CHECK(memcmp(buf, "ke", 2) == 0);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK(strcmp(buf, "ep") == 0);
    /* EFAULT on the second message of a read: the first is returned */
    hdrv_up_str(0, "ab");
    hdrv_up_str(0, "cd");
    struct iovec bad2[2] = {{buf, 2}, {(void *)8, 2}};
    CHECK_EQ(strm_readv(fd, bad2, 2), 2);
    CHECK_EQ(rd(fd, buf, sizeof(buf)), 2);
    CHECK(strcmp(buf, "cd") == 0);

    struct iovec v = {buf, 1};
    CHECK_EQ(strm_readv(fd, &v, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_readv(fd, &v, -1), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_readv(fd, &v, IOV_MAX + 1), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_readv(fd, NULL, 1), -1);
    CHECK_EQ(errno, EFAULT);
    struct iovec huge[2] = {{buf, (size_t)SSIZE_MAX}, {buf, 2}};
    CHECK_EQ(strm_readv(fd, huge, 2), -1);
    CHECK_EQ(errno, EINVAL);

    /* count 0 reads nothing and leaves the queue */
    hdrv_up_str(0, "zz");
    CHECK_EQ(strm_read(fd, buf, 0), 0);
    CHECK_EQ(strm_read(fd, NULL, 0), 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 1);
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(strm_read(fd, buf, 1), -1);
    CHECK(errno == EBADF || errno == ENOSTR);
}
/* ------------------------------------------------------------------------ */
/* R.16 a writer and a reader                                               */
/* ------------------------------------------------------------------------ */
#define STREAM_MSGS 20000

static void *stream_writer(void *arg)
{
    (void)arg;
    queue_t *drq = atomic_load(&hdrv_rq);
    unsigned char buf[300];
    unsigned seq = 0;
    for (int i = 0; i < STREAM_MSGS; i++) {
        size_t len = 1 + (size_t)(i * 7919) % 299;
        for (size_t k = 0; k < len; k++)
            buf[k] = (unsigned char)(seq++ & 0xff);
        while (!canputnext(drq))
            sleep_ms(1);
        mblk_t *mp;
        while ((mp = hmsg2(M_DATA, 0, buf, len, NULL, 0)) == NULL)
            sleep_ms(1);
        putnext(drq, mp);
    }
    return NULL;
}

static void test_writer_reader(void)
{
    int fd = open_hdrv(0);
    struct stroptions so = {.so_flags = SO_HIWAT | SO_LOWAT, .so_hiwat = 4096, .so_lowat = 512};
    hdrv_up(hmsg2(M_SETOPTS, 0, &so, sizeof(so), NULL, 0));
    size_t total = 0;
    for (int i = 0; i < STREAM_MSGS; i++)
        total += 1 + (size_t)(i * 7919) % 299;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, stream_writer, NULL), 0);
    unsigned char buf[1500];
    unsigned seq = 0;
    size_t got = 0;
    int bad = 0, r = 0;
    while (got < total && !bad) {
        size_t want = 1 + (size_t)(r++ * 104729) % sizeof(buf);
        ssize_t n = strm_read(fd, buf, want);
        if (n <= 0) {
            bad = 1;
            break;
        }
        for (ssize_t k = 0; k < n; k++)
            if (buf[k] != (unsigned char)(seq++ & 0xff))
                bad = 1;
        got += (size_t)n;
    }
    pthread_join(t, NULL);
    CHECK_EQ(bad, 0);
    CHECK_EQ(got, total);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* R.17 a pipe                                                              */
/* ------------------------------------------------------------------------ */
static void test_pipe_relief(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    char chunk[1024];
    memset(chunk, 'p', sizeof(chunk));
    long written = 0;
    ssize_t n;
    while ((n = strm_write(fds[0], chunk, sizeof(chunk))) > 0 && written < (1L << 24))
        written += n;
    CHECK_EQ(n, -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK(!(pollev(fds[0]) & POLLOUT));
    /* drain the other end: the writer's end becomes writable again */
    char buf[4096];
    long readn = 0;
    CHECK_EQ(strm_fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
    while ((n = strm_read(fds[1], buf, sizeof(buf))) > 0)
        readn += n;
    CHECK_EQ(readn, written);
    CHECK(pollev(fds[0]) & POLLOUT);
    CHECK_EQ(strm_write(fds[0], chunk, 10), 10);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 10);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

int main(void)
{
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_rnorm();
    test_rmsg();
    test_zero_length();
    test_protopts();
    test_blocking();
    test_signals();
    test_mread();
    test_hold_flush();
    test_rfill();
    test_marks();
    test_read_errors();
    test_writer_reader();
    test_pipe_relief();

    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
