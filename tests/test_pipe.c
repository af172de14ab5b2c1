/* SPDX-License-Identifier: MIT */
/*
 * test_pipe.c -- STREAMS-based pipes, fattach/fdetach, pipemod and the loop
 * driver, through the public interface (ustreams.h, stropts.h).
 *
 * Cases cite the reference page whose rule they check:
 *   1  pipe(2) (SVR4 STREAMS pipe): two stream descriptors, EFAULT; EMFILE
 *      when the descriptors run out at any point, with nothing left open
 *   2  pipe(2): full duplex, both directions, write(2)/read(2)
 *   3  putmsg(2)/getmsg(2): record boundaries, control and data parts kept
 *      apart; streamio(7) RMSGN reads one message at a time
 *   4  putpmsg(2)/getpmsg(2): priority bands across the pipe, MSG_BAND
 *   5  streamio(7) I_PUSH/I_LOOK/I_POP: modules on either end (nullmod,
 *      srvmod, pipemod); data still flows both ways, bands kept
 *   6  pipemod(7): I_FLUSH FLUSHW on one end empties the other end's read
 *      queue only with pipemod pushed (it swaps FLUSHR/FLUSHW at the twist)
 *   7  pipe(2)/poll(2)/write(2): closing one end -- the other sees POLLHUP
 *      through poll(2) on its descriptor, reads what was queued then 0,
 *      writes fail with EPIPE and raise SIGPIPE (SNDPIPE); I_SWROPT without
 *      SNDPIPE: EPIPE but no signal
 *   8  close with modules pushed on both ends and data queued both ways
 *   9  fattach(3C)/fdetach(3C): every error, open(2) of the name reaches the
 *      stream, the name keeps the stream open, fdetach releases it
 *   10 loop driver (Linux Fast-STREAMS loop): LOOP_GET_DEV, LOOP_SET errors,
 *      data both ways, flow control (EAGAIN then relief), M_FLUSH across,
 *      close hangs up the other side
 *   11 nothing leaks: ustreams_blockstats shows no block outstanding
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/loop.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
    (void)sig;
    sigpipes++;
}

/* I_STR with an int argument; returns the ioctl's value or -1 (errno). */
static int istr(int fd, int cmd, int *arg)
{
    struct strioctl ic = {
        .ic_cmd = cmd, .ic_timout = 5, .ic_len = sizeof(int), .ic_dp = (char *)arg};
    return strm_ioctl(fd, I_STR, &ic);
}

/* Write string s (without its NUL) and check the count. */
static void put_str(int fd, const char *s)
{
    CHECK_EQ(strm_write(fd, s, strlen(s)), (long)strlen(s));
}

/* Read expecting exactly string s. */
static void get_str(int fd, const char *s)
{
    char buf[256];
    ssize_t n = strm_read(fd, buf, sizeof(buf));
    CHECK_EQ(n, (long)strlen(s));
    if (n >= 0 && (size_t)n == strlen(s))
        CHECK(memcmp(buf, s, (size_t)n) == 0);
}

/* poll(2) on one descriptor; returns revents (0 on timeout). */
static short poll1(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    return p.revents;
}

static int nread(int fd)
{
    int bytes = -1;
    int n = strm_ioctl(fd, I_NREAD, &bytes);
    return n;
}

/* Wait (up to 2 s) until n messages wait at fd's head: with a service
 * procedure on the way, messages arrive asynchronously. */
static int wait_nread(int fd, int n)
{
    int have = nread(fd);
    for (int i = 0; i < 400 && have < n; i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        have = nread(fd);
    }
    return have;
}

/* 1 */
static void test_create(void)
{
    int fds[2] = {-1, -1};

    CHECK_EQ(strm_pipe(fds), 0);
    CHECK(fds[0] >= 0 && fds[1] >= 0 && fds[0] != fds[1]);
    CHECK_EQ(isastream(fds[0]), 1);
    CHECK_EQ(isastream(fds[1]), 1);
    CHECK_EQ(strm_fcntl(fds[0], F_GETFL) & O_ACCMODE, O_RDWR);
    CHECK_EQ(strm_fcntl(fds[0], F_GETFD) & FD_CLOEXEC, 0);
    int wopt = -1;
    CHECK_EQ(strm_ioctl(fds[0], I_GWROPT, &wopt), 0);
    CHECK(wopt & SNDPIPE);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);

    errno = 0;
    CHECK_EQ(strm_pipe(NULL), -1);
    CHECK_EQ(errno, EFAULT);
    int *volatile bad = (int *)8; /* an address no program can own */
    errno = 0;
    CHECK_EQ(strm_pipe(bad), -1);
    CHECK_EQ(errno, EFAULT);
}

/* Open descriptors of this process. */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* The lowest RLIMIT_NOFILE under which exactly k descriptor numbers are free. */
static int limit_with_free(int k)
{
    int lim = 0, nfree = 0;
    while (nfree < k)
        nfree += fcntl(lim++, F_GETFD) < 0;
    return lim;
}

/* 1: run out of descriptors at every step of strm_pipe */
static void test_emfile(void)
{
    struct rlimit old, lim;
    int base, fds[2], failed = 0, succeeded = 0;

    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    base = count_fds();
    /* Descriptor numbers are allocated lowest first, below the limit: the
     * lowest limit under which exactly k numbers are free leaves k (the
     * process may have inherited holes, such as 3 and 4 free but 10 open). */
    for (int k = 0; k < 12 && succeeded == 0; k++) {
        lim = old;
        lim.rlim_cur = (rlim_t)limit_with_free(k);
        CHECK_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
        errno = 0;
        int r = strm_pipe(fds);
        int e = errno;
        CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
        if (r == 0) {
            succeeded = 1;
            CHECK_EQ(strm_close(fds[0]), 0);
            CHECK_EQ(strm_close(fds[1]), 0);
        } else {
            failed++;
            CHECK(e == EMFILE || e == ENFILE);
        }
        CHECK_EQ(count_fds(), base);
    }
    CHECK(failed >= 2); /* at least the first and the second end */
    CHECK_EQ(succeeded, 1);
}

/* 2 */
static void test_duplex(void)
{
    int fds[2];
    char big[5000];

    CHECK_EQ(strm_pipe(fds), 0);
    put_str(fds[0], "ping");
    put_str(fds[1], "pong");
    get_str(fds[1], "ping");
    get_str(fds[0], "pong");
    /* byte stream (RNORM): two writes may be read as one */
    put_str(fds[1], "ab");
    put_str(fds[1], "cd");
    char buf[8];
    CHECK_EQ(strm_read(fds[0], buf, 1), 1);
    CHECK_EQ(buf[0], 'a');
    CHECK_EQ(strm_read(fds[0], buf, sizeof(buf)), 3);
    CHECK(memcmp(buf, "bcd", 3) == 0);
    /* larger than a fast buffer, in both directions */
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    CHECK_EQ(strm_write(fds[0], big, sizeof(big)), (long)sizeof(big));
    CHECK_EQ(strm_write(fds[1], big, sizeof(big)), (long)sizeof(big));
    for (int end = 1; end >= 0; end--) {
        char in[6000];
        size_t got = 0;
        while (got < sizeof(big)) {
            ssize_t n = strm_read(fds[end], in + got, sizeof(in) - got);
            CHECK(n > 0);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        CHECK_EQ(got, sizeof(big));
        CHECK(memcmp(in, big, sizeof(big)) == 0);
    }
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* 3 */
static void test_records(void)
{
    int fds[2], flags;
    char cbuf[64], dbuf[64];
    struct strbuf ctl = {.maxlen = sizeof(cbuf), .buf = cbuf};
    struct strbuf dat = {.maxlen = sizeof(dbuf), .buf = dbuf};
    struct strbuf c1 = {.len = 3, .buf = "hdr"}, d1 = {.len = 5, .buf = "data1"};
    struct strbuf d2 = {.len = 6, .buf = "data22"};

    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(putmsg(fds[0], &c1, &d1, 0), 0);
    CHECK_EQ(putmsg(fds[0], NULL, &d2, 0), 0);
    flags = 0;
    CHECK_EQ(getmsg(fds[1], &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, 3);
    CHECK(memcmp(cbuf, "hdr", 3) == 0);
    CHECK_EQ(dat.len, 5);
    CHECK(memcmp(dbuf, "data1", 5) == 0);
    flags = 0;
    CHECK_EQ(getmsg(fds[1], &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, -1);
    CHECK_EQ(dat.len, 6);
    CHECK(memcmp(dbuf, "data22", 6) == 0);

    /* high priority: RS_HIPRI goes first and getmsg reports it */
    struct strbuf cp = {.len = 2, .buf = "pc"};
    CHECK_EQ(putmsg(fds[1], NULL, &d1, 0), 0);
    CHECK_EQ(putmsg(fds[1], &cp, NULL, RS_HIPRI), 0);
    flags = 0;
    CHECK_EQ(getmsg(fds[0], &ctl, &dat, &flags), 0);
    CHECK_EQ(flags, RS_HIPRI);
    CHECK_EQ(ctl.len, 2);
    flags = 0;
    CHECK_EQ(getmsg(fds[0], &ctl, &dat, &flags), 0);
    CHECK_EQ(dat.len, 5);

    /* RMSGN: one message per read, the rest stays for the next read */
    CHECK_EQ(strm_ioctl(fds[1], I_SRDOPT, RMSGN), 0);
    put_str(fds[0], "one");
    put_str(fds[0], "twotwo");
    char buf[64];
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 3);
    CHECK_EQ(strm_read(fds[1], buf, 2), 2);
    CHECK(memcmp(buf, "tw", 2) == 0);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 4);
    CHECK(memcmp(buf, "otwo", 4) == 0);
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* 4 */
static void test_bands(void)
{
    int fds[2], band, flags;
    char dbuf[16];
    struct strbuf dat = {.maxlen = sizeof(dbuf), .buf = dbuf};
    struct strbuf b0 = {.len = 2, .buf = "b0"}, b1 = {.len = 2, .buf = "b1"};
    struct strbuf b2 = {.len = 2, .buf = "b2"};

    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(putpmsg(fds[0], NULL, &b0, 0, MSG_BAND), 0);
    CHECK_EQ(putpmsg(fds[0], NULL, &b1, 1, MSG_BAND), 0);
    CHECK_EQ(putpmsg(fds[0], NULL, &b2, 2, MSG_BAND), 0);
    /* the highest band first */
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fds[1], NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 2);
    CHECK_EQ(flags, MSG_BAND);
    CHECK(dat.len == 2 && memcmp(dbuf, "b2", 2) == 0);
    /* MSG_BAND 1: the band-1 message */
    band = 1;
    flags = MSG_BAND;
    CHECK_EQ(getpmsg(fds[1], NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 1);
    CHECK(dat.len == 2 && memcmp(dbuf, "b1", 2) == 0);
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fds[1], NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 0);
    CHECK(dat.len == 2 && memcmp(dbuf, "b0", 2) == 0);
    /* and the other way */
    CHECK_EQ(putpmsg(fds[1], NULL, &b0, 0, MSG_BAND), 0);
    CHECK_EQ(putpmsg(fds[1], NULL, &b1, 7, MSG_BAND), 0);
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fds[0], NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 7);
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* Exchange a message each way and a band-1 message, checking arrival. */
static void exchange(int fds[2], const char *tag)
{
    char a[32], b[32];
    snprintf(a, sizeof(a), "%s-0to1", tag);
    snprintf(b, sizeof(b), "%s-1to0", tag);
    put_str(fds[0], a);
    put_str(fds[1], b);
    get_str(fds[1], a);
    get_str(fds[0], b);

    char dbuf[16];
    struct strbuf dat = {.maxlen = sizeof(dbuf), .buf = dbuf};
    struct strbuf d0 = {.len = 3, .buf = "zer"}, d1 = {.len = 3, .buf = "one"};
    int band = 0, flags = MSG_ANY;
    CHECK_EQ(putpmsg(fds[0], NULL, &d0, 0, MSG_BAND), 0);
    CHECK_EQ(putpmsg(fds[0], NULL, &d1, 1, MSG_BAND), 0);
    CHECK_EQ(wait_nread(fds[1], 2), 2); /* both at the head: band 1 first */
    CHECK_EQ(getpmsg(fds[1], NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 1);
    CHECK(dat.len == 3 && memcmp(dbuf, "one", 3) == 0);
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fds[1], NULL, &dat, &band, &flags), 0);
    CHECK_EQ(band, 0);
    CHECK(dat.len == 3 && memcmp(dbuf, "zer", 3) == 0);
}

/* 5 */
static void test_modules(void)
{
    int fds[2];
    char name[FMNAMESZ + 1];

    CHECK_EQ(strm_pipe(fds), 0);
    exchange(fds, "plain");
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "nullmod"), 0);
    exchange(fds, "null0");
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "srvmod"), 0);
    exchange(fds, "null0-srv1");
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "pipemod"), 0);
    exchange(fds, "pipemod0");
    CHECK_EQ(strm_ioctl(fds[0], I_LOOK, name), 0);
    CHECK(strcmp(name, "pipemod") == 0);
    CHECK_EQ(strm_ioctl(fds[1], I_LOOK, name), 0);
    CHECK(strcmp(name, "srvmod") == 0);
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "srvmod"), 0);
    exchange(fds, "srv-srv");
    /* pop while data is queued at the far head: it stays readable (data
     * still inside a module's queue would go with the module, so wait until
     * it has arrived) */
    put_str(fds[1], "queued");
    CHECK_EQ(wait_nread(fds[0], 1), 1);
    CHECK_EQ(strm_ioctl(fds[0], I_POP, 0), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), 0);
    get_str(fds[0], "queued");
    exchange(fds, "after-pop");
    CHECK_EQ(strm_ioctl(fds[0], I_POP, 0), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), -1);
    CHECK_EQ(errno, EINVAL);
    exchange(fds, "bare");
    strm_close(fds[0]);
    strm_close(fds[1]);
}

/* 6: data written 1 -> 0 waits at end 0; end 1 then flushes its write side.
 * Return what is left queued at end 0. */
static int flush_leftover(const char *mod, int modend)
{
    int fds[2], left;

    CHECK_EQ(strm_pipe(fds), 0);
    if (mod != NULL)
        CHECK_EQ(strm_ioctl(fds[modend], I_PUSH, mod), 0);
    put_str(fds[1], "stale1");
    put_str(fds[1], "stale2");
    CHECK_EQ(nread(fds[0]), 2);
    CHECK_EQ(strm_ioctl(fds[1], I_FLUSH, FLUSHW), 0);
    left = nread(fds[0]);
    /* the pipe still works afterwards */
    put_str(fds[1], "fresh");
    if (left == 0)
        get_str(fds[0], "fresh");
    strm_close(fds[0]);
    strm_close(fds[1]);
    return left;
}

static void test_pipemod_flush(void)
{
    /* Without pipemod the FLUSHW arrives at end 0 as FLUSHW: its head turns
     * it around (FLUSHR cleared) and its read queue is untouched. */
    CHECK_EQ(flush_leftover(NULL, 0), 2);
    CHECK_EQ(flush_leftover("nullmod", 1), 2);
    /* With pipemod on either end it arrives as FLUSHR and empties it. */
    CHECK_EQ(flush_leftover("pipemod", 0), 0);
    CHECK_EQ(flush_leftover("pipemod", 1), 0);
}

/* 7 */
static void test_close_hangup(void)
{
    int fds[2];
    char buf[16];
    struct sigaction sa, old;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigpipe;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &old);

    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(poll1(fds[1], POLLIN, 0) & POLLHUP, 0);
    put_str(fds[0], "last words");
    put_str(fds[1], "never read"); /* queued at end 0: freed by its close */
    CHECK_EQ(strm_close(fds[0]), 0);
    short re = poll1(fds[1], POLLIN, 2000);
    CHECK(re & POLLHUP);
    CHECK(re & POLLIN);
    CHECK_EQ(strm_read(fds[1], buf, 4), 4); /* drained first ... */
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 6);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 0); /* ... then end of file */
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 0);
    sigpipes = 0;
    errno = 0;
    CHECK_EQ(strm_write(fds[1], "x", 1), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(sigpipes, 1);
    struct strbuf d = {.len = 1, .buf = "y"};
    errno = 0;
    CHECK_EQ(putmsg(fds[1], NULL, &d, 0), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(sigpipes, 2);
    /* without SNDPIPE: the error but no signal */
    CHECK_EQ(strm_ioctl(fds[1], I_SWROPT, 0), 0);
    errno = 0;
    CHECK_EQ(strm_write(fds[1], "x", 1), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(sigpipes, 2);
    CHECK_EQ(strm_close(fds[1]), 0);

    /* the other end closing first, blocking reader woken by the hang-up is
     * covered by poll above; now close the reading end and write the other */
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
    CHECK(poll1(fds[0], POLLOUT, 2000) & POLLHUP);
    errno = 0;
    CHECK_EQ(strm_write(fds[0], "x", 1), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(strm_close(fds[0]), 0);
    sigaction(SIGPIPE, &old, NULL);
}

/* 8 */
static void test_close_with_modules(void)
{
    int fds[2];

    for (int round = 0; round < 4; round++) {
        CHECK_EQ(strm_pipe(fds), 0);
        CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "srvmod"), 0);
        CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "pipemod"), 0);
        CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "nullmod"), 0);
        CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "srvmod"), 0);
        for (int i = 0; i < 20; i++) {
            put_str(fds[0], "to one");
            put_str(fds[1], "to zero");
        }
        /* all at the heads: the hang-up is high priority and would overtake
         * data still queued in a service module on the way */
        CHECK_EQ(wait_nread(fds[0], 20), 20);
        CHECK_EQ(wait_nread(fds[1], 20), 20);
        /* close in either order, data still queued both ways */
        CHECK_EQ(strm_close(fds[round & 1]), 0);
        if (round < 2) {
            char buf[64];
            ssize_t n, total = 0;
            while ((n = strm_read(fds[!(round & 1)], buf, sizeof(buf))) > 0)
                total += n;
            CHECK_EQ(n, 0);
            CHECK_EQ(total, (round & 1) ? 20 * 7 : 20 * 6);
        }
        CHECK_EQ(strm_close(fds[!(round & 1)]), 0);
    }
}

/* 9 */
static void test_fattach(void)
{
    int fds[2], fd, nul;
    char longname[PATH_MAX + 16], longcomp[NAME_MAX + 8];
    char name[] = "/tmp/ustreams-test-fattachXXXXXX", name2[] = "/tmp/ustreams-test-fattachXXXXXX";
    int tf = mkstemp(name), tf2 = mkstemp(name2); /* fattach covers existing files */
    CHECK(tf >= 0 && tf2 >= 0);
    close(tf);
    close(tf2);

    CHECK_EQ(strm_pipe(fds), 0);
    nul = open("/dev/null", O_RDWR);
    CHECK(nul >= 0);

    errno = 0;
    CHECK_EQ(fattach(-1, name), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(fattach(nul, name), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(fattach(fds[0], NULL), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(fattach(fds[0], ""), -1);
    CHECK_EQ(errno, ENOENT);
    memset(longname, 'a', sizeof(longname));
    longname[0] = '/';
    for (int i = 100; i < (int)sizeof(longname); i += 100)
        longname[i] = '/';
    longname[sizeof(longname) - 1] = '\0';
    errno = 0;
    CHECK_EQ(fattach(fds[0], longname), -1);
    CHECK_EQ(errno, ENAMETOOLONG);
    memset(longcomp, 'b', sizeof(longcomp));
    longcomp[0] = '/';
    longcomp[sizeof(longcomp) - 1] = '\0';
    errno = 0;
    CHECK_EQ(fattach(fds[0], longcomp), -1);
    CHECK_EQ(errno, ENAMETOOLONG);
    errno = 0;
    CHECK_EQ(fdetach(name), -1); /* nothing attached yet */
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(fdetach(NULL), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(fdetach(""), -1);
    CHECK_EQ(errno, ENOENT);
    errno = 0;
    fd = strm_open(name, O_RDWR); /* the plain file */
    CHECK(fd >= 0);
    CHECK_EQ(isastream(fd), 0);
    close(fd);
    errno = 0;
    CHECK_EQ(fattach(fds[0], "/nonexistent/ust-fattach"), -1);
    CHECK_EQ(errno, ENOENT);

    CHECK_EQ(fattach(fds[0], name), 0);
    errno = 0;
    CHECK_EQ(fattach(fds[1], name), -1);
    CHECK_EQ(errno, EBUSY);
    CHECK_EQ(fattach(fds[0], name2), 0); /* a second name */

    /* open(2) of the name reaches the attached end */
    fd = strm_open(name, O_RDWR);
    CHECK(fd >= 0);
    CHECK(fd != fds[0]);
    CHECK_EQ(isastream(fd), 1);
    put_str(fd, "via name");
    get_str(fds[1], "via name");
    put_str(fds[1], "to name");
    get_str(fd, "to name");

    /* the names keep the end open after its descriptors are closed */
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(poll1(fds[1], POLLIN, 50) & POLLHUP, 0);
    put_str(fds[1], "kept");
    fd = strm_open(name2, O_RDWR);
    CHECK(fd >= 0);
    get_str(fd, "kept");
    CHECK_EQ(strm_close(fd), 0);

    CHECK_EQ(fdetach(name), 0);
    errno = 0;
    CHECK_EQ(fdetach(name), -1);
    CHECK_EQ(errno, EINVAL);
    fd = strm_open(name, O_RDWR); /* the file again */
    CHECK(fd >= 0);
    CHECK_EQ(isastream(fd), 0);
    close(fd);
    CHECK_EQ(poll1(fds[1], POLLIN, 50) & POLLHUP, 0); /* the second name holds it */
    CHECK_EQ(fdetach(name2), 0);
    /* last reference gone: end 0 is closed, end 1 hung up */
    CHECK(poll1(fds[1], POLLIN, 2000) & POLLHUP);
    char buf[8];
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 0);
    CHECK_EQ(strm_close(fds[1]), 0);

    /* a name on a stream whose descriptor is still open: fdetach only drops
     * the name */
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(fattach(fds[1], name), 0);
    CHECK_EQ(fdetach(name), 0);
    put_str(fds[1], "still");
    get_str(fds[0], "still");
    strm_close(fds[0]);
    strm_close(fds[1]);
    close(nul);
    unlink(name);
    unlink(name2);
}

/* 10 */
static int loop_open(int *minor)
{
    int fd = strm_open("/dev/streams/clone/loop", O_RDWR);
    CHECK(fd >= 0);
    *minor = -1;
    if (fd >= 0) {
        int r = istr(fd, LOOP_GET_DEV, minor);
        CHECK_EQ(r, *minor);
    }
    CHECK(*minor >= 1);
    return fd;
}

static void test_loop(void)
{
    int a, b, c, ma, mb, mc, arg;
    char buf[256];

    a = loop_open(&ma);
    b = loop_open(&mb);
    c = loop_open(&mc);
    CHECK(ma != mb && mb != mc && ma != mc);

    arg = ma;
    errno = 0;
    CHECK_EQ(istr(a, LOOP_SET, &arg), -1); /* itself */
    CHECK_EQ(errno, EINVAL);
    arg = 999;
    errno = 0;
    CHECK_EQ(istr(a, LOOP_SET, &arg), -1); /* not open */
    CHECK_EQ(errno, ENXIO);
    arg = -3;
    errno = 0;
    CHECK_EQ(istr(a, LOOP_SET, &arg), -1);
    CHECK_EQ(errno, ENXIO);
    errno = 0;
    CHECK_EQ(strm_ioctl(a, I_STR, &(struct strioctl){.ic_cmd = LOOP_SET, .ic_len = 0}), -1);
    CHECK_EQ(errno, EINVAL); /* no argument */
    errno = 0;
    CHECK_EQ(istr(a, ('l' << 8) | 99, &arg), -1); /* unknown command */
    CHECK_EQ(errno, EINVAL);

    put_str(a, "early"); /* kept until connected */
    arg = mb;
    CHECK_EQ(istr(a, LOOP_SET, &arg), 0);
    arg = mc;
    errno = 0;
    CHECK_EQ(istr(a, LOOP_SET, &arg), -1);
    CHECK_EQ(errno, EBUSY);
    arg = ma;
    errno = 0;
    CHECK_EQ(istr(c, LOOP_SET, &arg), -1);
    CHECK_EQ(errno, EBUSY);

    get_str(b, "early");
    put_str(a, "a->b");
    put_str(b, "b->a");
    get_str(b, "a->b");
    get_str(a, "b->a");
    struct strbuf c1 = {.len = 4, .buf = "ctrl"}, d1 = {.len = 4, .buf = "data"};
    char cb[16], dbuf[16];
    struct strbuf ctl = {.maxlen = sizeof(cb), .buf = cb},
                  dat = {.maxlen = sizeof(dbuf), .buf = dbuf};
    int flags = 0;
    CHECK_EQ(putmsg(b, &c1, &d1, 0), 0);
    CHECK_EQ(getmsg(a, &ctl, &dat, &flags), 0);
    CHECK(ctl.len == 4 && memcmp(cb, "ctrl", 4) == 0);
    CHECK(dat.len == 4 && memcmp(dbuf, "data", 4) == 0);

    /* flow control: a non-blocking writer is stopped, then relieved */
    CHECK_EQ(strm_fcntl(a, F_SETFL, O_NONBLOCK), 0);
    memset(buf, 'x', sizeof(buf));
    long written = 0;
    int eagain = 0;
    for (int i = 0; i < 100000; i++) {
        ssize_t n = strm_write(a, buf, sizeof(buf));
        if (n < 0) {
            eagain = errno == EAGAIN;
            break;
        }
        written += n;
    }
    CHECK(eagain);
    CHECK(written > 0);
    CHECK((poll1(a, POLLOUT, 0) & POLLOUT) == 0);
    long got = 0;
    CHECK_EQ(strm_fcntl(b, F_SETFL, O_NONBLOCK), 0);
    for (int idle = 0; got < written && idle < 2000;) {
        ssize_t n = strm_read(b, buf, sizeof(buf));
        if (n > 0) {
            got += n;
            idle = 0;
        } else {
            CHECK_EQ(errno, EAGAIN);
            poll1(b, POLLIN, 5);
            idle++;
        }
    }
    CHECK_EQ(got, written);
    CHECK(poll1(a, POLLOUT, 2000) & POLLOUT);
    CHECK_EQ(strm_write(a, "more", 4), 4);
    CHECK(poll1(b, POLLIN, 2000) & POLLIN);
    CHECK_EQ(strm_read(b, buf, sizeof(buf)), 4);
    CHECK_EQ(strm_fcntl(a, F_SETFL, 0), 0);
    CHECK_EQ(strm_fcntl(b, F_SETFL, 0), 0);

    /* M_FLUSH: FLUSHW on a flushes what a sent and b has not read */
    put_str(a, "stale");
    CHECK(poll1(b, POLLIN, 2000) & POLLIN);
    CHECK_EQ(nread(b), 1);
    CHECK_EQ(strm_ioctl(a, I_FLUSH, FLUSHW), 0);
    CHECK_EQ(nread(b), 0);
    put_str(a, "fresh");
    get_str(b, "fresh");

    /* close: the other side is hung up */
    CHECK_EQ(strm_close(a), 0);
    CHECK(poll1(b, POLLIN, 2000) & POLLHUP);
    CHECK_EQ(strm_read(b, buf, sizeof(buf)), 0);
    errno = 0;
    CHECK_EQ(strm_write(b, "x", 1), -1);
    CHECK_EQ(errno, ENXIO);
    CHECK_EQ(strm_close(b), 0);
    /* c can be connected to a new minor */
    int d, md;
    d = loop_open(&md);
    arg = md;
    CHECK_EQ(istr(c, LOOP_SET, &arg), 0);
    put_str(d, "c and d");
    get_str(c, "c and d");
    CHECK_EQ(strm_close(d), 0);
    CHECK_EQ(strm_close(c), 0);
}

int main(void)
{
    test_create();
    test_emfile();
    test_duplex();
    test_records();
    test_bands();
    test_modules();
    test_pipemod_flush();
    test_close_hangup();
    test_close_with_modules();
    test_fattach();
    test_loop();
    /* 11 */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
