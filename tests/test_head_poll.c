/* SPDX-License-Identifier: MIT */
/*
 * test_head_poll.c -- conformance of strm_poll, the readiness of stream
 * descriptors seen by poll(2) and epoll, and I_SETSIG/I_GETSIG signals
 * (src/head/sd_poll.c, with the head's put procedure of sd_rput.c).
 *
 * References: poll(2) (POSIX.1-2008 and the STREAMS events of SVR4/Solaris
 * poll(2)), streamio(7) I_SETSIG/I_GETSIG.  Messages are made to arrive at
 * the head as a driver sends them (putnext from the driver's read queue) or by
 * sending them down the echo driver from the head's write queue, so that this
 * file depends on no other system call than the ones it tests.
 *   Q.1  poll(2) POLLOUT/POLLWRNORM on a fresh stream; no read events
 *   Q.2  POLLIN/POLLRDNORM after a band 0 message; a poller blocked in
 *        strm_poll, in poll(2) and in epoll_wait on the raw descriptor is
 *        woken by a message sent from another thread
 *   Q.3  POLLRDBAND for a band > 0 message, POLLWRBAND only for bands written
 *        before (SVR4 poll(2))
 *   Q.4  POLLPRI for a high-priority message at the front (M_PCPROTO), also
 *        on the raw descriptor; POLLIN does not report it
 *   Q.5  POLLOUT after flow control relief: blocked in strm_poll, poll(2) and
 *        epoll_wait; a full stream shows no POLLOUT
 *   Q.6  POLLHUP after M_HANGUP, never with POLLOUT; a blocked poller wakes
 *   Q.7  POLLERR after M_ERROR, reported even when not asked for
 *   Q.8  ordinary descriptors (pipe(2)) and streams in one strm_poll
 *   Q.9  waiting for what is not there does not spin: the CPU time of a
 *        300 ms strm_poll for POLLIN with only a high-priority message
 *        queued, for POLLRDBAND with only band 0 data, for POLLOUT on a full
 *        stream stays small
 *   Q.10 poll(2) arguments: negative descriptors ignored, POLLNVAL for closed
 *        ones, timeout 0 and > 0, nfds 0, EFAULT, EINVAL (nfds above
 *        RLIMIT_NOFILE), EINTR; closing a polled stream wakes the poller
 *   Q.11 pipes (strm_pipe): POLLIN at the other end after a write; POLLOUT
 *        withdrawn when the other end's head is full and back after it
 *        reads (a poller blocked in strm_poll wakes); POLLHUP (never POLLOUT)
 *        once the other end is closed
 *   S.1  I_SETSIG/I_GETSIG: registration, change, removal; EINVAL cases;
 *        also through strm_ioctl
 *   S.2  SIGPOLL for S_INPUT, S_RDNORM, S_HIPRI, S_OUTPUT, S_ERROR,
 *        S_HANGUP, S_MSG; SIGURG for S_RDBAND with S_BANDURG
 *   S.3  a registration of a process that is gone is dropped
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
#include <sys/ddi.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/strconf.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

#define SLOW_MS 4000 /* upper bound for "promptly" on a loaded machine */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------ */
/* "tplug": a driver whose write queue fills up and stays full               */
/* ------------------------------------------------------------------------ */
static int tplug_state;

static int tplug_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)sflag;
    (void)crp;
    if (q->q_ptr == NULL) {
        q->q_ptr = WR(q)->q_ptr = &tplug_state;
        qprocson(q);
    }
    return 0;
}

static int tplug_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    q->q_ptr = WR(q)->q_ptr = NULL;
    return 0;
}

static int tplug_wput(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_DATA || mp->b_datap->db_type == M_PROTO) {
        if (!putq(q, mp))
            freemsg(mp);
        return 0;
    }
    freemsg(mp);
    return 0;
}

/* Holds everything: only the test empties the queue (flushq). */
static int tplug_wsrv(queue_t *q)
{
    (void)q;
    return 0;
}

static int tplug_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info tplug_minfo = {
    .mi_idname = "tplug", .mi_maxpsz = INFPSZ, .mi_hiwat = 1024, .mi_lowat = 256};
static struct qinit tplug_rinit = {.qi_putp = tplug_rput,
                                   .qi_qopen = tplug_open,
                                   .qi_qclose = tplug_close,
                                   .qi_minfo = &tplug_minfo};
static struct qinit tplug_winit = {
    .qi_putp = tplug_wput, .qi_srvp = tplug_wsrv, .qi_minfo = &tplug_minfo};
static struct streamtab tplug_info = {.st_rdinit = &tplug_rinit, .st_wrinit = &tplug_winit};
static struct cdevsw tplug_cdev = {.d_name = "tplug", .d_str = &tplug_info, .d_flag = D_MP};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */
static mblk_t *msg(unsigned char type, unsigned char band, size_t len)
{
    mblk_t *mp = allocb(len, BPRI_MED);
    if (mp != NULL) {
        mp->b_datap->db_type = type;
        mp->b_band = band;
        memset(mp->b_wptr, 'm', len);
        mp->b_wptr += len;
    }
    return mp;
}

/* Send mp down from the head, as the head's write side does. */
static void head_send(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
    ust_qrelease(wq);
}

/* Send mp up from the driver, as a driver does. */
static void drv_send_up(struct stdata *sd, mblk_t *mp)
{
    queue_t *q = sd->sd_wq;
    while (ust_qnext(q) != NULL)
        q = ust_qnext(q);
    putnext(RD(q), mp);
}

static long cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static short pollone(int fd, short events, int timeout)
{
    struct pollfd p = {.fd = fd, .events = events};
    int n = strm_poll(&p, 1, timeout);
    return n < 0 ? -1 : p.revents;
}

/* Open a tplug stream and fill its write queue (1024-byte high water). */
static int open_full(void)
{
    int fd = strm_open("/dev/streams/clone/tplug", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (sd != NULL)
        for (int i = 0; i < 3; i++)
            head_send(sd, msg(M_DATA, 0, 512));
    return fd;
}

/* Relieve the tplug stream: empty its write queue (back-enables the head). */
static void relieve(int fd)
{
    struct stdata *sd = ust_sd_peek(fd);
    if (sd != NULL)
        flushq(ust_qnext(sd->sd_wq), FLUSHALL);
}

/* A thread that waits for events on fd by one of three means. */
enum how { BY_STRM_POLL, BY_POLL, BY_EPOLL };

struct poller {
    int fd;
    short events;
    enum how how;
    atomic_int started;
    short revents;
    int ret;
    long waited;
};

static void *poll_thread(void *arg)
{
    struct poller *p = arg;
    long long t0 = now_ms();
    atomic_store(&p->started, 1);
    if (p->how == BY_STRM_POLL) {
        struct pollfd pf = {.fd = p->fd, .events = p->events};
        p->ret = strm_poll(&pf, 1, SLOW_MS * 2);
        p->revents = pf.revents;
    } else if (p->how == BY_POLL) {
        struct pollfd pf = {.fd = p->fd, .events = p->events};
        p->ret = poll(&pf, 1, SLOW_MS * 2);
        p->revents = pf.revents;
    } else {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = {.events = (uint32_t)p->events}, out;
        epoll_ctl(ep, EPOLL_CTL_ADD, p->fd, &ev);
        p->ret = epoll_wait(ep, &out, 1, SLOW_MS * 2);
        p->revents = p->ret == 1 ? (short)out.events : 0;
        close(ep);
    }
    p->waited = (long)(now_ms() - t0);
    return NULL;
}

static void poller_start(pthread_t *t, struct poller *p)
{
    pthread_create(t, NULL, poll_thread, p);
    while (!atomic_load(&p->started))
        sleep_ms(1);
    sleep_ms(100); /* let it go to sleep */
}

/* ------------------------------------------------------------------------ */
/* Q: poll events                                                           */
/* ------------------------------------------------------------------------ */
static void test_fresh(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK_EQ(pollone(fd, POLLIN | POLLOUT | POLLWRNORM | POLLPRI, 0), POLLOUT | POLLWRNORM);
    CHECK_EQ(pollone(fd, POLLIN | POLLRDNORM | POLLRDBAND | POLLPRI, 0), 0);
    CHECK_EQ(pollone(fd, POLLWRBAND, 0), 0); /* no band written yet */
    CHECK_EQ(strm_close(fd), 0);
}

static void test_input(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    head_send(sd, msg(M_DATA, 0, 10));
    CHECK_EQ(pollone(fd, POLLIN | POLLRDNORM | POLLRDBAND | POLLPRI, 2000), POLLIN | POLLRDNORM);
    CHECK_EQ(strm_close(fd), 0);

    /* a poller asleep in each way is woken by a message from another thread */
    for (int how = BY_STRM_POLL; how <= BY_EPOLL; how++) {
        fd = strm_open("/dev/streams/clone/echo", O_RDWR);
        sd = ust_sd_peek(fd);
        struct poller p = {.fd = fd, .events = POLLIN, .how = how};
        pthread_t t;
        poller_start(&t, &p);
        head_send(sd, msg(M_DATA, 0, 10));
        pthread_join(t, NULL);
        CHECK_EQ(p.ret, 1);
        CHECK(p.revents & POLLIN);
        CHECK(p.waited >= 90);
        CHECK(p.waited < SLOW_MS);
        CHECK_EQ(strm_close(fd), 0);
    }
}

static void test_bands(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    head_send(sd, msg(M_DATA, 2, 10));
    CHECK_EQ(pollone(fd, POLLIN | POLLRDNORM | POLLRDBAND, 2000), POLLIN | POLLRDBAND);
    CHECK_EQ(pollone(fd, POLLRDNORM, 0), 0);
    /* bands 1 and 2 now exist in echo's write queue, and are not full */
    CHECK_EQ(pollone(fd, POLLWRBAND, 0), POLLWRBAND);
    head_send(sd, msg(M_PROTO, 0, 10));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(pollone(fd, POLLIN | POLLRDNORM | POLLRDBAND, 0), POLLIN | POLLRDNORM | POLLRDBAND);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_priority(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    head_send(sd, msg(M_PCPROTO, 0, 4)); /* echo turns it straight round */
    CHECK_EQ(pollone(fd, POLLPRI | POLLIN | POLLRDNORM, 0), POLLPRI);
    CHECK_EQ(pollone(fd, POLLIN, 0), 0); /* POLLIN is for non-priority data */
    /* The descriptor is a seqpacket socket, which has no out-of-band data:
     * poll(2) on it shows the priority message as POLLIN, never POLLPRI
     * (docs/STREAMHEAD.md, "Descriptors and readiness"); strm_poll above
     * says POLLPRI from the stream. */
    struct pollfd raw = {.fd = fd, .events = POLLPRI | POLLIN};
    CHECK_EQ(poll(&raw, 1, 2000), 1);
    CHECK_EQ(raw.revents, POLLIN);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_output(void)
{
    int fd = open_full();
    CHECK_EQ(pollone(fd, POLLOUT | POLLWRNORM, 0), 0);
    CHECK_EQ(pollone(fd, POLLOUT, 50), 0); /* waits, times out, stays armed */
    relieve(fd);
    CHECK_EQ(pollone(fd, POLLOUT, 0), POLLOUT);
    CHECK_EQ(strm_close(fd), 0);

    for (int how = BY_STRM_POLL; how <= BY_EPOLL; how++) {
        fd = open_full();
        if (how != BY_STRM_POLL)
            CHECK_EQ(pollone(fd, POLLOUT, 1), 0); /* arm: the raw descriptor unwritable */
        struct pollfd raw = {.fd = fd, .events = POLLOUT};
        if (how != BY_STRM_POLL)
            CHECK_EQ(poll(&raw, 1, 0), 0);
        struct poller p = {.fd = fd, .events = POLLOUT, .how = how};
        pthread_t t;
        poller_start(&t, &p);
        relieve(fd);
        pthread_join(t, NULL);
        CHECK_EQ(p.ret, 1);
        CHECK(p.revents & POLLOUT);
        CHECK(p.waited >= 90);
        CHECK(p.waited < SLOW_MS);
        CHECK_EQ(strm_close(fd), 0);
    }
}

static void test_hangup(void)
{
    int fd = strm_open("/dev/streams/clone/tplug", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    struct poller p = {.fd = fd, .events = POLLIN, .how = BY_STRM_POLL};
    pthread_t t;
    poller_start(&t, &p);
    CHECK(putnextctl(RD(ust_qnext(sd->sd_wq)), M_HANGUP));
    pthread_join(t, NULL);
    CHECK_EQ(p.ret, 1);
    CHECK(p.revents & POLLHUP);
    CHECK(p.waited < SLOW_MS);
    short ev = pollone(fd, POLLIN | POLLOUT | POLLWRNORM, 0);
    CHECK(ev & POLLHUP);
    CHECK(ev & POLLIN); /* a read returns 0 at once */
    CHECK_EQ(ev & (POLLOUT | POLLWRNORM), 0);
    struct pollfd raw = {.fd = fd, .events = POLLIN};
    CHECK_EQ(poll(&raw, 1, 0), 1);
    CHECK(raw.revents & POLLHUP);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_error(void)
{
    int fd = strm_open("/dev/streams/clone/tplug", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    drv_send_up(sd, msg(M_ERROR, 0, 1));
    short ev = pollone(fd, 0, 0);
    CHECK_EQ(ev, POLLERR);
    ev = pollone(fd, POLLIN | POLLOUT, 0);
    CHECK(ev & POLLERR);
    CHECK(ev & POLLIN);
    CHECK_EQ(strm_close(fd), 0);
}

/* strm_poll(fd, events, 300 ms) times out without burning the CPU. */
static void check_quiet_wait(int fd, short events)
{
    long long t0 = now_ms();
    long c0 = cpu_ms();
    CHECK_EQ(pollone(fd, events, 300), 0);
    long took = (long)(now_ms() - t0), cpu = cpu_ms() - c0;
    CHECK(took >= 290);
    CHECK(cpu < 150);
    if (cpu >= 150)
        fprintf(stderr, "strm_poll(%#x) used %ld ms of CPU in %ld ms\n", events, cpu, took);
}

static void test_no_spin(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    head_send(sd, msg(M_PCPROTO, 0, 4));
    CHECK_EQ(pollone(fd, POLLPRI, 2000), POLLPRI);
    check_quiet_wait(fd, POLLIN | POLLRDNORM);
    CHECK_EQ(strm_close(fd), 0);

    fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    sd = ust_sd_peek(fd);
    head_send(sd, msg(M_DATA, 0, 4));
    CHECK_EQ(pollone(fd, POLLIN, 2000), POLLIN);
    check_quiet_wait(fd, POLLRDBAND);
    check_quiet_wait(fd, POLLPRI);
    CHECK_EQ(strm_close(fd), 0);

    fd = open_full();
    check_quiet_wait(fd, POLLOUT);
    check_quiet_wait(fd, POLLWRNORM | POLLPRI);
    relieve(fd); /* else close waits the close time for tplug to drain */
    CHECK_EQ(strm_close(fd), 0);
}

static void *pipe_writer(void *arg)
{
    sleep_ms(100);
    CHECK_EQ(write(*(int *)arg, "x", 1), 1);
    return NULL;
}

static void test_mixed(void)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    struct pollfd fds[3] = {
        {.fd = p[0], .events = POLLIN}, {.fd = fd, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
    CHECK_EQ(strm_poll(fds, 3, 0), 0);
    /* the ordinary descriptor wakes a sleeping strm_poll */
    pthread_t t;
    long long t0 = now_ms();
    pthread_create(&t, NULL, pipe_writer, &p[1]);
    CHECK_EQ(strm_poll(fds, 3, SLOW_MS * 2), 1);
    pthread_join(t, NULL);
    CHECK(now_ms() - t0 >= 90);
    CHECK(now_ms() - t0 < SLOW_MS);
    CHECK_EQ(fds[0].revents, POLLIN);
    CHECK_EQ(fds[1].revents, 0);
    CHECK_EQ(fds[2].revents, 0);
    /* both ready */
    head_send(sd, msg(M_DATA, 0, 3));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(strm_poll(fds, 3, 1000), 2);
    CHECK_EQ(fds[0].revents, POLLIN);
    CHECK_EQ(fds[1].revents, POLLIN);
    /* only the stream */
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(strm_poll(fds, 3, 1000), 1);
    CHECK_EQ(fds[0].revents, 0);
    CHECK_EQ(fds[1].revents, POLLIN);
    close(p[0]);
    close(p[1]);
    CHECK_EQ(strm_close(fd), 0);
}

static void on_usr1(int sig)
{
    (void)sig;
}

struct killer {
    pthread_t target;
    long ms;
};

static void *kill_thread(void *arg)
{
    struct killer *k = arg;
    sleep_ms(k->ms);
    pthread_kill(k->target, SIGUSR1);
    return NULL;
}

static void *close_thread(void *arg)
{
    sleep_ms(100);
    CHECK_EQ(strm_close(*(int *)arg), 0);
    return NULL;
}

static void test_poll_args(void)
{
    struct rlimit rl;
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    long long t0;

    errno = 0;
    CHECK_EQ(strm_poll(NULL, 1, 0), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(strm_poll((struct pollfd *)(uintptr_t)0x10, 1, 0), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    struct pollfd one = {.fd = fd, .events = POLLOUT};
    errno = 0;
    CHECK_EQ(strm_poll(&one, (nfds_t)rl.rlim_cur + 1, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_poll(NULL, 0, 0), 0);
    t0 = now_ms();
    CHECK_EQ(strm_poll(NULL, 0, 60), 0);
    CHECK(now_ms() - t0 >= 55);

    int closed = strm_open("/dev/streams/clone/nuls", O_RDWR);
    CHECK_EQ(strm_close(closed), 0);
    struct pollfd fds[3] = {{.fd = -7, .events = POLLIN, .revents = 0x55},
                            {.fd = closed, .events = POLLIN},
                            {.fd = fd, .events = POLLIN}};
    CHECK_EQ(strm_poll(fds, 3, 0), 1);
    CHECK_EQ(fds[0].revents, 0);
    CHECK_EQ(fds[1].revents, POLLNVAL);
    CHECK_EQ(fds[2].revents, 0);

    t0 = now_ms();
    CHECK_EQ(pollone(fd, POLLIN, 150), 0);
    CHECK(now_ms() - t0 >= 145);
    CHECK(now_ms() - t0 < SLOW_MS);

    /* EINTR: a signal whose handler does not restart */
    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    struct killer k = {.target = pthread_self(), .ms = 100};
    pthread_t t;
    pthread_create(&t, NULL, kill_thread, &k);
    errno = 0;
    CHECK_EQ(pollone(fd, POLLIN, SLOW_MS * 2), -1);
    CHECK_EQ(errno, EINTR);
    pthread_join(t, NULL);

    /* the stream is closed while we wait: POLLNVAL, promptly */
    pthread_create(&t, NULL, close_thread, &fd);
    t0 = now_ms();
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    CHECK_EQ(strm_poll(&pf, 1, SLOW_MS * 2), 1);
    CHECK_EQ(pf.revents, POLLNVAL);
    CHECK(now_ms() - t0 < SLOW_MS);
    pthread_join(t, NULL);
}

struct drainer {
    int fd;
    long ms;
    long total;
};

static void *drain_thread(void *arg)
{
    struct drainer *d = arg;
    char buf[4096];
    ssize_t r;
    sleep_ms(d->ms);
    while ((r = strm_read(d->fd, buf, sizeof(buf))) > 0)
        d->total += r;
    return NULL;
}

static void test_pipe(void)
{
    int p[2];
    char buf[1024];
    if (!CHECK_EQ(strm_pipe(p), 0))
        return;
    CHECK_EQ(pollone(p[1], POLLIN, 0), 0);
    CHECK_EQ(strm_write(p[0], "hello", 5), 5);
    CHECK_EQ(pollone(p[1], POLLIN | POLLRDNORM, 0), POLLIN | POLLRDNORM);
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 5);
    CHECK_EQ(pollone(p[1], POLLIN, 0), 0);

    /* fill p[1]'s head from p[0] until a write would block */
    CHECK_EQ(strm_fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(strm_fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    memset(buf, 'p', sizeof(buf));
    long written = 0;
    ssize_t w;
    while ((w = strm_write(p[0], buf, sizeof(buf))) > 0)
        written += w;
    CHECK_EQ(errno, EAGAIN);
    CHECK(written > 0);
    CHECK_EQ(pollone(p[0], POLLOUT | POLLWRNORM, 0), 0);
    /* a poller asleep for POLLOUT wakes when the reader drains */
    struct drainer d = {.fd = p[1], .ms = 100};
    pthread_t t;
    /* t0 before the drainer starts its 100 ms: thread creation can take
     * tens of ms under TSan, and the drain must not seem early */
    long long t0 = now_ms();
    pthread_create(&t, NULL, drain_thread, &d);
    CHECK_EQ(pollone(p[0], POLLOUT, SLOW_MS * 2), POLLOUT);
    CHECK(now_ms() - t0 >= 90);
    CHECK(now_ms() - t0 < SLOW_MS);
    pthread_join(t, NULL);
    while ((w = strm_read(p[1], buf, sizeof(buf))) > 0)
        d.total += w;
    CHECK_EQ(d.total, written);

    /* the other end closes: hang-up, never writable */
    CHECK_EQ(strm_close(p[1]), 0);
    short ev = pollone(p[0], POLLIN | POLLOUT | POLLWRNORM, 0);
    CHECK(ev & POLLHUP);
    CHECK_EQ(ev & (POLLOUT | POLLWRNORM), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* ------------------------------------------------------------------------ */
/* S: signals                                                               */
/* ------------------------------------------------------------------------ */
static atomic_int n_sigpoll, n_sigurg, n_sigusr2;

static void on_sig(int sig)
{
    if (sig == SIGPOLL)
        atomic_fetch_add(&n_sigpoll, 1);
    else if (sig == SIGURG)
        atomic_fetch_add(&n_sigurg, 1);
    else if (sig == SIGUSR2)
        atomic_fetch_add(&n_sigusr2, 1);
}

static int wait_count(atomic_int *c, int want)
{
    long long end = now_ms() + SLOW_MS;
    while (atomic_load(c) < want && now_ms() < end)
        sleep_ms(1);
    return atomic_load(c) >= want;
}

static void test_setsig_api(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    int ev = -1;
    CHECK_EQ(ust_sd_getsig(sd, &ev), EINVAL);
    CHECK_EQ(ust_sd_setsig(sd, 0), EINVAL); /* nothing to remove */
    CHECK_EQ(ust_sd_setsig(sd, 0x10000), EINVAL);
    CHECK_EQ(ust_sd_setsig(sd, S_INPUT | 0x4000), EINVAL);
    CHECK_EQ(ust_sd_setsig(sd, S_BANDURG), EINVAL);
    CHECK_EQ(ust_sd_setsig(sd, S_INPUT | S_BANDURG), EINVAL);
    CHECK_EQ(ust_sd_getsig(sd, &ev), EINVAL);
    CHECK_EQ(ust_sd_setsig(sd, S_INPUT | S_HIPRI), 0);
    CHECK_EQ(ust_sd_getsig(sd, &ev), 0);
    CHECK_EQ(ev, S_INPUT | S_HIPRI);
    CHECK_EQ(sd->sd_sigflags, S_INPUT | S_HIPRI);
    CHECK_EQ(ust_sd_setsig(sd, S_RDBAND | S_BANDURG), 0); /* replaces */
    CHECK_EQ(ust_sd_getsig(sd, &ev), 0);
    CHECK_EQ(ev, S_RDBAND | S_BANDURG);
    CHECK_EQ(ust_sd_setsig(sd, S_ALL), 0);
    CHECK_EQ(ust_sd_getsig(sd, &ev), 0);
    CHECK_EQ(ev, S_ALL);
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);
    CHECK_EQ(ust_sd_getsig(sd, &ev), EINVAL);
    CHECK_EQ(sd->sd_sigflags, 0);
    CHECK_EQ(ust_sd_setsig(sd, S_OUTPUT), 0); /* freed by close */
    /* streamio(7): I_SETSIG takes the events as an int, I_GETSIG a pointer */
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_INPUT | S_RDBAND | S_BANDURG), 0);
    ev = 0;
    CHECK_EQ(strm_ioctl(fd, I_GETSIG, &ev), 0);
    CHECK_EQ(ev, S_INPUT | S_RDBAND | S_BANDURG);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_BANDURG), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, 0), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_GETSIG, &ev), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_SETSIG, S_OUTPUT), 0); /* freed by close */
    CHECK_EQ(strm_close(fd), 0);
}

static void test_signals(void)
{
    struct sigaction sa = {.sa_handler = on_sig, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPOLL, &sa, NULL);
    sigaction(SIGURG, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);

    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    int n;

    /* S_INPUT: band 0 data */
    CHECK_EQ(ust_sd_setsig(sd, S_INPUT), 0);
    n = atomic_load(&n_sigpoll);
    head_send(sd, msg(M_DATA, 0, 5));
    CHECK(wait_count(&n_sigpoll, n + 1));
    CHECK_EQ(strm_close(fd), 0);

    /* S_RDNORM */
    fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_setsig(sd, S_RDNORM), 0);
    n = atomic_load(&n_sigpoll);
    head_send(sd, msg(M_DATA, 0, 5));
    CHECK(wait_count(&n_sigpoll, n + 1));
    /* S_HIPRI: M_PCPROTO */
    CHECK_EQ(ust_sd_setsig(sd, S_HIPRI), 0);
    n = atomic_load(&n_sigpoll);
    head_send(sd, msg(M_PCPROTO, 0, 5));
    CHECK(wait_count(&n_sigpoll, n + 1));
    CHECK_EQ(strm_close(fd), 0);

    /* S_RDBAND + S_BANDURG: SIGURG for a band message; without S_BANDURG
     * SIGPOLL */
    fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_setsig(sd, S_RDBAND | S_BANDURG), 0);
    n = atomic_load(&n_sigurg);
    int np = atomic_load(&n_sigpoll);
    head_send(sd, msg(M_DATA, 3, 5));
    CHECK(wait_count(&n_sigurg, n + 1));
    CHECK_EQ(atomic_load(&n_sigpoll), np);
    CHECK_EQ(strm_close(fd), 0);
    fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_setsig(sd, S_RDBAND), 0);
    n = atomic_load(&n_sigpoll);
    head_send(sd, msg(M_DATA, 3, 5));
    CHECK(wait_count(&n_sigpoll, n + 1));
    CHECK_EQ(strm_close(fd), 0);

    /* S_OUTPUT: flow control relieved (a writer, here a poller, waited) */
    fd = open_full();
    sd = ust_sd_peek(fd);
    CHECK_EQ(pollone(fd, POLLOUT, 1), 0);
    CHECK_EQ(ust_sd_setsig(sd, S_OUTPUT), 0);
    n = atomic_load(&n_sigpoll);
    relieve(fd);
    CHECK(wait_count(&n_sigpoll, n + 1));
    CHECK_EQ(strm_close(fd), 0);

    /* S_ERROR, S_HANGUP */
    fd = strm_open("/dev/streams/clone/tplug", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_setsig(sd, S_ERROR | S_HANGUP), 0);
    n = atomic_load(&n_sigpoll);
    drv_send_up(sd, msg(M_ERROR, 0, 1));
    CHECK(wait_count(&n_sigpoll, n + 1));
    n = atomic_load(&n_sigpoll);
    drv_send_up(sd, msg(M_HANGUP, 0, 0));
    CHECK(wait_count(&n_sigpoll, n + 1));
    CHECK_EQ(strm_close(fd), 0);

    /* S_MSG: an M_SIG of SIGPOLL; the signal an M_SIG names (ust_sd_sendsig) */
    fd = strm_open("/dev/streams/clone/tplug", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_setsig(sd, S_MSG), 0);
    n = atomic_load(&n_sigpoll);
    mblk_t *sig = msg(M_SIG, 0, 1);
    sig->b_rptr[0] = SIGPOLL;
    drv_send_up(sd, sig);
    CHECK(wait_count(&n_sigpoll, n + 1));
    n = atomic_load(&n_sigusr2);
    ust_lock(&sd->sd_lock);
    ust_sd_sendsig(sd, S_MSG, 0, SIGUSR2);
    ust_sd_sendsig(sd, S_INPUT, 0, 0); /* not registered: nothing */
    ust_unlock(&sd->sd_lock);
    CHECK(wait_count(&n_sigusr2, n + 1));
    CHECK_EQ(strm_close(fd), 0);
}

static void test_sig_gone(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    CHECK(child > 0);
    CHECK_EQ(waitpid(child, NULL, 0), child);
    struct ust_sigreg *r = calloc(1, sizeof(*r));
    r->pid = child; /* a process that is gone */
    r->events = S_INPUT;
    CHECK_EQ(ust_sd_setsig(sd, S_HIPRI), 0);
    ust_lock(&sd->sd_lock);
    r->next = sd->sd_siglist;
    sd->sd_siglist = r;
    sd->sd_sigflags |= S_INPUT;
    ust_sd_sendsig(sd, S_INPUT, 0, 0);
    CHECK(sd->sd_siglist != NULL && sd->sd_siglist->pid == getpid());
    CHECK(sd->sd_siglist != NULL && sd->sd_siglist->next == NULL);
    CHECK_EQ(sd->sd_sigflags, S_HIPRI);
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(strm_close(fd), 0);
}

int main(void)
{
    CHECK(register_strdev(&tplug_cdev, 0) > 0);
    test_fresh();
    test_input();
    test_bands();
    test_priority();
    test_output();
    test_hangup();
    test_error();
    test_mixed();
    test_no_spin();
    test_poll_args();
    test_pipe();
    test_setsig_api();
    test_signals();
    test_sig_gone();
    CHECK_EQ(unregister_strdev(&tplug_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
