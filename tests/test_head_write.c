/* SPDX-License-Identifier: MIT */
/*
 * test_head_write.c -- conformance of the stream head's write side:
 * write(2)/writev(2) on STREAMS files, write options (streamio(7) I_SWROPT),
 * SO_WROFF/SO_MAXBLK (M_SETOPTS), against the "cdrv" test driver
 * (head_cdrv.h).  Write holding (SNDHOLD) and putmsg(2)/putpmsg(2) are in
 * test_head_putmsg.c; shared helpers in head_write_util.h.
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
#include "head_write_util.h"

static atomic_int sigusr1s;

static void on_sigusr1(int s)
{
    (void)s;
    atomic_fetch_add(&sigusr1s, 1);
}

static int pollout(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
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
    test_args();
    test_nomem();
    CHECK_EQ(atomic_load(&cdrv_nopen), 0);
    th_assert_no_blocks();
    return CHECK_RESULT();
}
