/* SPDX-License-Identifier: MIT */
/*
 * test_head_write.c -- conformance of the stream head's write side:
 * write(2)/writev(2) and putmsg(2)/putpmsg(2) on STREAMS files, write
 * options (streamio(7) I_SWROPT), SO_WROFF/SO_MAXBLK (M_SETOPTS), and write
 * holding (SNDHOLD), against the "cdrv" test driver (head_cdrv.h).
 *
 * Cases are numbered by the reference page they check:
 *   W1  write(2) STREAMS: one message, data intact
 *   W2  write(2): "If nbyte does not fall within the range and the minimum
 *       packet size value is 0, write() breaks the buffer into maximum packet
 *       size segments"; writev(2) gathers
 *   W3  write(2) ERANGE: outside the range with a non-zero minimum
 *   W4  write(2) zero length / streamio I_SWROPT SNDZERO
 *   W5  M_SETOPTS SO_WROFF, SO_MAXBLK
 *   W6  write(2) EAGAIN and partial counts (O_NONBLOCK, flow control)
 *   W7  write(2) blocking until the back-enable; EINTR; SA_RESTART
 *   W8  write(2) ENXIO (hang-up), M_ERROR write errors, WERRNONPERSIST,
 *       SNDPIPE / EPIPE on a pipe
 *   W9  SNDHOLD: coalescing and every way the hold is sent
 *   W10 putmsg(2)/putpmsg(2): every part, flag and band case, every error
 *   W11 argument errors: EBADF, ENOSTR, EFAULT, EINVAL
 *   W12 allocation failure: blocking writers wait, non-blocking get EAGAIN
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

#define DEV "/dev/streams/cdrv"

static atomic_int sigpipes, sigusr1s;

static void on_sigpipe(int s)
{
    (void)s;
    atomic_fetch_add(&sigpipes, 1);
}

static void on_sigusr1(int s)
{
    (void)s;
    atomic_fetch_add(&sigusr1s, 1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void set_handler(int sig, void (*fn)(int), int restart)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* A fresh stream on cdrv, the driver's gate open and its log empty. */
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

static void set_nonblock(int fd, int on)
{
    int fl = strm_fcntl(fd, F_GETFL);
    strm_fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static int pollout(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
}

/* Read back count messages from the driver and check they hold `data` in
 * order, each at most `most` bytes.  Returns the number of messages. */
static int expect_data(const unsigned char *data, size_t len, size_t most, long wait_ms)
{
    size_t got = 0;
    int n = 0;
    while (got < len) {
        mblk_t *mp = cdrv_down(wait_ms);
        if (!CHECK(mp != NULL))
            break;
        CHECK_EQ(mp->b_datap->db_type, M_DATA);
        size_t l = cdrv_len(mp);
        CHECK(l <= most);
        for (mblk_t *b = mp; b; b = b->b_cont) {
            size_t k = (size_t)(b->b_wptr - b->b_rptr);
            CHECK(got + k <= len && memcmp(b->b_rptr, data + got, k) == 0);
            got += k;
        }
        freemsg(mp);
        n++;
    }
    return n;
}

/* W1 */
static void test_basic(void)
{
    unsigned char buf[300];
    int fd = open_dev();
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)i;
    CHECK_EQ(strm_write(fd, buf, 100), 100);
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_DATA && cdrv_len(mp) == 100 &&
          memcmp(mp->b_rptr, buf, 100) == 0 && mp->b_cont == NULL && mp->b_band == 0);
    freemsg(mp);
    CHECK(cdrv_down(20) == NULL);
    close_dev(fd);
}

/* W2 */
static void test_packetize(void)
{
    unsigned char buf[1100];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 7);
    int fd = open_dev();
    CHECK_EQ(strqset(cdrv_wq(), QMAXPSZ, 0, 100), 0);
    CHECK_EQ(strm_write(fd, buf, 1000), 1000);
    CHECK_EQ(expect_data(buf, 1000, 100, 1000), 10);
    CHECK_EQ(strm_write(fd, buf, 1050), 1050);
    CHECK_EQ(expect_data(buf, 1050, 100, 1000), 11);
    CHECK_EQ(strm_write(fd, buf, 100), 100); /* exactly maxpsz: one */
    CHECK_EQ(expect_data(buf, 100, 100, 1000), 1);
    struct iovec iov[3] = {{buf, 30}, {buf + 30, 170}, {buf + 200, 50}};
    CHECK_EQ(strm_writev(fd, iov, 3), 250);
    CHECK_EQ(expect_data(buf, 250, 100, 1000), 3);
    /* a module above the driver decides: its maxpsz (INFPSZ) allows one */
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_write(fd, buf, 1000), 1000);
    CHECK_EQ(expect_data(buf, 1000, 1000, 1000), 1);
    close_dev(fd);
}

/* W3 */
static void test_erange(void)
{
    unsigned char buf[200] = {0};
    int fd = open_dev();
    queue_t *wq = cdrv_wq();
    CHECK_EQ(strqset(wq, QMINPSZ, 0, 10), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1);
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(strm_write(fd, buf, 0), 0); /* nothing to send: no error */
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, 100), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 150), -1); /* cannot be split and keep the minimum */
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(strm_write(fd, buf, 100), 100);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDZERO), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 0), -1); /* a zero-length message is below the minimum */
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(strqset(wq, QMINPSZ, 0, 0), 0);
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, 0), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 1), -1); /* maxpsz 0 takes no data */
    CHECK_EQ(errno, ERANGE);
    CHECK_EQ(cdrv_clear(), 2);
    close_dev(fd);
}

/* W4 */
static void test_zero(void)
{
    char c = 'x';
    int fd = open_dev();
    CHECK_EQ(strm_write(fd, &c, 0), 0);
    CHECK(cdrv_down(30) == NULL); /* without SNDZERO nothing is sent */
    CHECK_EQ(strm_writev(fd, NULL, 0), 0);
    CHECK(cdrv_down(10) == NULL);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDZERO), 0);
    CHECK_EQ(strm_write(fd, &c, 0), 0);
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_DATA && cdrv_len(mp) == 0);
    freemsg(mp);
    close_dev(fd);
}

/* W5 */
static void test_wroff_maxblk(void)
{
    unsigned char buf[100];
    memset(buf, 'a', sizeof(buf));
    int fd = open_dev();
    struct stroptions so;
    memset(&so, 0, sizeof(so));
    so.so_flags = SO_WROFF;
    so.so_wroff = 16;
    cdrv_setopts(&so);
    CHECK_EQ(strm_write(fd, buf, 10), 10);
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp && mp->b_rptr - mp->b_datap->db_base == 16 && cdrv_len(mp) == 10);
    freemsg(mp);
    so.so_flags = SO_MAXBLK | SO_WROFF;
    so.so_wroff = 0;
    so.so_maxblk = 32;
    cdrv_setopts(&so);
    CHECK_EQ(strm_write(fd, buf, 100), 100);
    mp = cdrv_down(1000);
    int nblk = 0, ok = 1;
    for (mblk_t *b = mp; b; b = b->b_cont, nblk++)
        ok &= b->b_wptr - b->b_rptr <= 32;
    CHECK(mp && cdrv_len(mp) == 100 && ok);
    CHECK_EQ(nblk, 4);
    freemsg(mp);
    /* putmsg data follows SO_MAXBLK too */
    struct strbuf d = {.len = 70, .buf = (char *)buf};
    CHECK_EQ(putmsg(fd, NULL, &d, 0), 0);
    mp = cdrv_down(1000);
    nblk = 0;
    for (mblk_t *b = mp; b; b = b->b_cont)
        nblk++;
    CHECK(mp && cdrv_len(mp) == 70);
    CHECK_EQ(nblk, 3);
    freemsg(mp);
    close_dev(fd);
}

/* W6 */
static void test_nonblock(void)
{
    unsigned char buf[200];
    memset(buf, 'q', sizeof(buf));
    int fd = open_dev();
    queue_t *wq = cdrv_wq();
    CHECK_EQ(strqset(wq, QHIWAT, 0, 100), 0);
    CHECK_EQ(strqset(wq, QLOWAT, 0, 50), 0);
    cdrv_gate_close();
    set_nonblock(fd, 1);
    CHECK(pollout(fd));
    CHECK_EQ(strm_write(fd, buf, 60), 60);
    CHECK_EQ(strm_write(fd, buf, 60), 60); /* 120 >= hiwat: full now */
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 60), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK(!pollout(fd)); /* a writer found it full: not writable */
    CHECK_EQ(cdrv_wcount(), 120);
    cdrv_gate_open(); /* drains: the back-enable makes it writable again */
    for (int i = 0; i < 200 && !pollout(fd); i++)
        sleep_ms(5);
    CHECK(pollout(fd));
    CHECK_EQ(cdrv_clear(), 2);
    /* a partial count: maxpsz 50, the third message finds the queue full */
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, 50), 0);
    cdrv_gate_close();
    CHECK_EQ(strm_write(fd, buf, 200), 100);
    CHECK_EQ(cdrv_wcount(), 100);
    /* SO_NDELON: old TTY semantics, a flow-controlled write returns 0 */
    struct stroptions so;
    memset(&so, 0, sizeof(so));
    so.so_flags = SO_NDELON;
    cdrv_setopts(&so);
    CHECK_EQ(strm_write(fd, buf, 10), 0);
    so.so_flags = SO_NDELOFF;
    cdrv_setopts(&so);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 10), -1);
    CHECK_EQ(errno, EAGAIN);
    cdrv_gate_open();
    for (int i = 0; i < 200 && cdrv_wcount() > 0; i++)
        sleep_ms(5);
    CHECK_EQ(cdrv_clear(), 2);
    close_dev(fd);
}

/* W7: a writer thread */
struct wjob {
    int fd;
    size_t len;
    ssize_t ret;
    int err;
    atomic_int done;
};

static void *writer(void *arg)
{
    static unsigned char buf[4096];
    struct wjob *j = arg;
    errno = 0;
    j->ret = strm_write(j->fd, buf, j->len);
    j->err = errno;
    atomic_store(&j->done, 1);
    return NULL;
}

static int wait_done(struct wjob *j, long ms)
{
    for (long i = 0; i < ms / 5 && !atomic_load(&j->done); i++)
        sleep_ms(5);
    return atomic_load(&j->done);
}

static void test_blocking(void)
{
    unsigned char buf[100] = {0};
    pthread_t t;
    int fd = open_dev();
    queue_t *wq = cdrv_wq();
    CHECK_EQ(strqset(wq, QHIWAT, 0, 100), 0);
    CHECK_EQ(strqset(wq, QLOWAT, 0, 50), 0);
    cdrv_gate_close();
    CHECK_EQ(strm_write(fd, buf, 100), 100); /* full */

    /* woken by the back-enable */
    struct wjob j = {.fd = fd, .len = 60};
    pthread_create(&t, NULL, writer, &j);
    sleep_ms(50);
    CHECK(!atomic_load(&j.done));
    cdrv_gate_open();
    CHECK(wait_done(&j, 5000));
    pthread_join(t, NULL);
    CHECK_EQ(j.ret, 60);
    for (int i = 0; i < 200 && cdrv_wcount() > 0; i++)
        sleep_ms(5);
    CHECK_EQ(cdrv_clear(), 2);

    /* EINTR: a handler without SA_RESTART interrupts; nothing written */
    set_handler(SIGUSR1, on_sigusr1, 0);
    cdrv_gate_close();
    CHECK_EQ(strm_write(fd, buf, 100), 100);
    struct wjob k = {.fd = fd, .len = 60};
    pthread_create(&t, NULL, writer, &k);
    sleep_ms(30);
    for (int i = 0; i < 200 && !atomic_load(&k.done); i++) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(10);
    }
    pthread_join(t, NULL);
    CHECK_EQ(k.ret, -1);
    CHECK_EQ(k.err, EINTR);
    CHECK(atomic_load(&sigusr1s) > 0);
    CHECK_EQ(cdrv_wcount(), 100);

    /* EINTR after a partial write returns the partial count */
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, 50), 0);
    cdrv_gate_open();
    for (int i = 0; i < 200 && cdrv_wcount() > 0; i++)
        sleep_ms(5);
    cdrv_clear();
    cdrv_gate_close();
    struct wjob m = {.fd = fd, .len = 300};
    pthread_create(&t, NULL, writer, &m);
    for (int i = 0; i < 200 && cdrv_wcount() < 100; i++)
        sleep_ms(5);
    sleep_ms(20);
    for (int i = 0; i < 200 && !atomic_load(&m.done); i++) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(10);
    }
    pthread_join(t, NULL);
    CHECK_EQ(m.ret, 100);

    /* SA_RESTART: the signal does not end the write */
    set_handler(SIGUSR1, on_sigusr1, 1);
    CHECK_EQ(strqset(wq, QMAXPSZ, 0, INFPSZ), 0);
    struct wjob r = {.fd = fd, .len = 60};
    pthread_create(&t, NULL, writer, &r);
    sleep_ms(30);
    for (int i = 0; i < 5; i++) { /* (TSan may hold the handler back until the write ends) */
        pthread_kill(t, SIGUSR1);
        sleep_ms(10);
    }
    CHECK(!atomic_load(&r.done));
    cdrv_gate_open();
    CHECK(wait_done(&r, 5000));
    pthread_join(t, NULL);
    CHECK_EQ(r.ret, 60);

    /* a blocked writer is woken by a hang-up: ENXIO */
    for (int i = 0; i < 200 && cdrv_wcount() > 0; i++)
        sleep_ms(5);
    cdrv_gate_close();
    CHECK_EQ(strm_write(fd, buf, 100), 100);
    struct wjob h = {.fd = fd, .len = 60};
    pthread_create(&t, NULL, writer, &h);
    sleep_ms(30);
    cdrv_up(cdrv_msg(M_HANGUP, 0, NULL, 0, NULL, 0));
    CHECK(wait_done(&h, 5000));
    pthread_join(t, NULL);
    CHECK_EQ(h.ret, -1);
    CHECK_EQ(h.err, ENXIO);
    set_handler(SIGUSR1, SIG_DFL, 0);
    close_dev(fd);
}

/* W8 */
static void test_errors(void)
{
    char buf[10] = "0123456789";
    int fd = open_dev();
    int before = atomic_load(&sigpipes);

    /* M_ERROR: two bytes, read error unchanged (0xff), write error EIO */
    unsigned char e[2] = {0xff, EIO};
    cdrv_up(cdrv_msg(M_ERROR, 0, e, 2, NULL, 0));
    cdrv_clear();
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1);
    CHECK_EQ(errno, EIO);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1); /* persistent */
    CHECK_EQ(errno, EIO);
    struct strbuf d = {.len = 3, .buf = buf};
    errno = 0;
    CHECK_EQ(putmsg(fd, NULL, &d, 0), -1);
    CHECK_EQ(errno, EIO);
    CHECK_EQ(atomic_load(&sigpipes), before); /* no SNDPIPE: no signal */

    /* SNDPIPE: a write error raises SIGPIPE */
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDPIPE), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1);
    CHECK_EQ(errno, EIO);
    CHECK_EQ(atomic_load(&sigpipes), before + 1);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, 0), 0);

    /* WERRNONPERSIST: reported once */
    CHECK_EQ(strm_ioctl(fd, I_SERROPT, RERRNORM | WERRNONPERSIST), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1);
    CHECK_EQ(errno, EIO);
    CHECK_EQ(strm_write(fd, buf, 5), 5);
    CHECK_EQ(cdrv_clear(), 1);

    /* M_ERROR with 0 clears */
    CHECK_EQ(strm_ioctl(fd, I_SERROPT, 0), 0);
    e[1] = EPROTO;
    cdrv_up(cdrv_msg(M_ERROR, 0, e, 2, NULL, 0));
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1);
    CHECK_EQ(errno, EPROTO);
    e[1] = 0;
    cdrv_up(cdrv_msg(M_ERROR, 0, e, 2, NULL, 0));
    cdrv_clear();
    CHECK_EQ(strm_write(fd, buf, 5), 5);
    CHECK_EQ(cdrv_clear(), 1);

    /* hang-up: ENXIO, no SIGPIPE even with SNDPIPE */
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDPIPE), 0);
    cdrv_up(cdrv_msg(M_HANGUP, 0, NULL, 0, NULL, 0));
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 5), -1);
    CHECK_EQ(errno, ENXIO);
    errno = 0;
    CHECK_EQ(putmsg(fd, NULL, &d, 0), -1);
    CHECK_EQ(errno, ENXIO);
    CHECK_EQ(atomic_load(&sigpipes), before + 1);
    close_dev(fd);

    /* a pipe whose other end is closed: EPIPE, SIGPIPE (SNDPIPE by default) */
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    int opt = -1;
    CHECK_EQ(strm_ioctl(p[0], I_GWROPT, &opt), 0);
    CHECK(opt & SNDPIPE);
    CHECK_EQ(strm_close(p[1]), 0);
    errno = 0;
    CHECK_EQ(strm_write(p[0], buf, 5), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(atomic_load(&sigpipes), before + 2);
    CHECK_EQ(strm_ioctl(p[0], I_SWROPT, 0), 0);
    errno = 0;
    CHECK_EQ(strm_write(p[0], buf, 5), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(atomic_load(&sigpipes), before + 2);
    CHECK_EQ(strm_close(p[0]), 0);
}

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

/* W11 */
static void test_args(void)
{
    char buf[16] = "abc";
    int ufd[2];
    CHECK_EQ(pipe(ufd), 0);
    struct strbuf d = {.len = 3, .buf = buf};
    errno = 0;
    CHECK_EQ(strm_write(-1, buf, 3), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_write(ufd[1], buf, 3), -1);
    CHECK_EQ(errno, ENOSTR);
    errno = 0;
    CHECK_EQ(putmsg(-1, NULL, &d, 0), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(putmsg(ufd[1], NULL, &d, 0), -1);
    CHECK_EQ(errno, ENOSTR);
    errno = 0;
    CHECK_EQ(putpmsg(ufd[1], NULL, &d, 0, MSG_BAND), -1);
    CHECK_EQ(errno, ENOSTR);
    errno = 0;
    CHECK_EQ(strm_writev(ufd[1], NULL, 0), -1);
    CHECK_EQ(errno, ENOSTR);
    close(ufd[0]);
    close(ufd[1]);

    int fd = open_dev();
    errno = 0;
    CHECK_EQ(strm_write(fd, NULL, 3), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(strm_write(fd, (void *)-1, 3), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, (size_t)SSIZE_MAX + 1), -1);
    CHECK_EQ(errno, EINVAL);
    struct iovec iov[2] = {{buf, 3}, {(void *)-1, 4}};
    errno = 0;
    CHECK_EQ(strm_writev(fd, iov, -1), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_writev(fd, iov, IOV_MAX + 1), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_writev(fd, (struct iovec *)-1, 1), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(strm_writev(fd, iov, 2), -1); /* the second buffer is bad */
    CHECK_EQ(errno, EFAULT);
    struct iovec huge[2] = {{buf, (size_t)SSIZE_MAX}, {buf, 2}};
    errno = 0;
    CHECK_EQ(strm_writev(fd, huge, 2), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK(cdrv_down(20) == NULL); /* nothing half-sent */
    /* EFAULT in a later message returns what was sent */
    CHECK_EQ(strqset(cdrv_wq(), QMAXPSZ, 0, 3), 0);
    CHECK_EQ(strm_writev(fd, iov, 2), 3);
    CHECK_EQ(cdrv_clear(), 1);
    close_dev(fd);
}

/* W12 */
static void test_nomem(void)
{
    char buf[64] = "memory";
    int fd = open_dev();
    long save = ust_bufcall_set_retry(5);
    ustreams_fail_allocs(3);
    CHECK_EQ(strm_write(fd, buf, 6), 6); /* waits for memory, then goes */
    ustreams_fail_allocs(0);
    mblk_t *mp = cdrv_down(1000);
    CHECK(mp && cdrv_len(mp) == 6);
    freemsg(mp);
    set_nonblock(fd, 1);
    ustreams_fail_allocs(1);
    errno = 0;
    CHECK_EQ(strm_write(fd, buf, 6), -1);
    CHECK_EQ(errno, EAGAIN);
    ustreams_fail_allocs(0);
    CHECK(cdrv_down(20) == NULL);
    ust_bufcall_set_retry(save);
    close_dev(fd);
}

int main(void)
{
    set_handler(SIGPIPE, on_sigpipe, 1);
    CHECK(cdrv_register() > 0);
    test_basic();
    test_packetize();
    test_erange();
    test_zero();
    test_wroff_maxblk();
    test_nonblock();
    test_blocking();
    test_errors();
    test_hold();
    test_hold_order();
    test_putmsg();
    test_args();
    test_nomem();
    CHECK_EQ(atomic_load(&cdrv_nopen), 0);
    th_assert_no_blocks();
    return CHECK_RESULT();
}
