/* SPDX-License-Identifier: MIT */
/*
 * test_fdpass.c -- passing descriptors over STREAMS pipes (streamio(7)
 * I_SENDFD and I_RECVFD).
 *
 * Cases (streamio(7) I_SENDFD / I_RECVFD unless noted):
 *   1 an ordinary file: the receiver reads the file through the new
 *     descriptor; uid/gid are the sender's effective ids; the descriptor is
 *     not close-on-exec; the message bypasses modules pushed on the receiver
 *   2 a stream descriptor: the receiver gets a descriptor on the same stream,
 *     which stays open after the sender closes its own
 *   3 EBADMSG: a data message at the front (it stays readable; the M_PASSFP
 *     behind it is received afterwards); read(2)/getmsg(2) with an M_PASSFP
 *     at the front fail with EBADMSG (streamio(7) read rules)
 *   4 EAGAIN: I_RECVFD with O_NONBLOCK and nothing queued; I_SENDFD when the
 *     other end's read queue is full
 *   5 EINVAL (not a pipe), EBADF (bad descriptor to send), ENXIO (the other
 *     end is closed; I_RECVFD on a hung-up end with nothing queued), a
 *     message queued before the hang-up is still received
 *   6 blocking I_RECVFD: woken by the sender; EINTR by a signal handler
 *     installed without SA_RESTART
 *   7 never received: closing the pipe (either end first) closes the
 *     in-flight duplicate of an ordinary file (counted in /proc/self/fd) and
 *     releases a passed stream (its other end is then hung up)
 *   8 nothing leaks: no block outstanding, no descriptor left open
 */
#include <dirent.h>
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

/* Wait up to 2 s for the descriptor count to come back to want. */
static int fds_settle(int want)
{
    int n = count_fds();
    for (int i = 0; i < 400 && n != want; i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        n = count_fds();
    }
    return n;
}

/* A temporary file holding `text`, positioned at its start. */
static int temp_file(const char *text)
{
    char path[] = "/tmp/ustreams-fdpass-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return -1;
    unlink(path);
    CHECK_EQ(write(fd, text, strlen(text)), (long)strlen(text));
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static short poll1(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    return p.revents;
}

/* 1 */
static void test_file(void)
{
    int p[2], tf, before = count_fds();
    struct strrecvfd rf;
    char buf[64];

    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "nullmod"), 0);
    tf = temp_file("the file's contents");
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, tf), 0);
    memset(&rf, 0xff, sizeof(rf));
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    CHECK(rf.fd >= 0);
    CHECK(rf.fd != tf);
    CHECK_EQ(rf.uid, geteuid());
    CHECK_EQ(rf.gid, getegid());
    CHECK_EQ(fcntl(rf.fd, F_GETFD) & FD_CLOEXEC, 0);
    CHECK_EQ(isastream(rf.fd), 0);
    /* the same open file: shares the offset with tf */
    CHECK_EQ(read(rf.fd, buf, 3), 3);
    CHECK(memcmp(buf, "the", 3) == 0);
    CHECK_EQ(read(tf, buf, 5), 5);
    CHECK(memcmp(buf, " file", 5) == 0);
    close(rf.fd);
    close(tf);
    /* and from the other end */
    tf = temp_file("back");
    CHECK_EQ(strm_ioctl(p[1], I_SENDFD, tf), 0);
    close(tf);
    CHECK_EQ(strm_ioctl(p[0], I_RECVFD, &rf), 0);
    CHECK_EQ(read(rf.fd, buf, sizeof(buf)), 4);
    close(rf.fd);
    strm_close(p[0]);
    strm_close(p[1]);
    CHECK_EQ(fds_settle(before), before);
}

/* 2 */
static void test_stream(void)
{
    int a[2], b[2], before = count_fds();
    struct strrecvfd rf;
    char buf[32];

    CHECK_EQ(strm_pipe(a), 0);
    CHECK_EQ(strm_pipe(b), 0);
    CHECK_EQ(strm_ioctl(a[0], I_SENDFD, b[0]), 0);
    CHECK_EQ(strm_close(b[0]), 0); /* the message holds the stream */
    CHECK_EQ(poll1(b[1], POLLIN, 50) & POLLHUP, 0);
    CHECK_EQ(strm_ioctl(a[1], I_RECVFD, &rf), 0);
    CHECK_EQ(isastream(rf.fd), 1);
    CHECK_EQ(strm_write(rf.fd, "through", 7), 7);
    CHECK_EQ(strm_read(b[1], buf, sizeof(buf)), 7);
    CHECK(memcmp(buf, "through", 7) == 0);
    CHECK_EQ(strm_write(b[1], "back", 4), 4);
    CHECK_EQ(strm_read(rf.fd, buf, sizeof(buf)), 4);
    /* the received descriptor was the last one: closing it hangs up b[1] */
    CHECK_EQ(strm_close(rf.fd), 0);
    CHECK(poll1(b[1], POLLIN, 2000) & POLLHUP);
    strm_close(b[1]);
    strm_close(a[0]);
    strm_close(a[1]);
    CHECK_EQ(fds_settle(before), before);
}

/* 3 */
static void test_ebadmsg(void)
{
    int p[2], tf;
    struct strrecvfd rf;
    char buf[32], cbuf[8];
    struct strbuf ctl = {.maxlen = sizeof(cbuf), .buf = cbuf};
    struct strbuf dat = {.maxlen = sizeof(buf), .buf = buf};
    int flags = 0;

    CHECK_EQ(strm_pipe(p), 0);
    tf = temp_file("x");
    CHECK_EQ(strm_write(p[0], "data", 4), 4);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, tf), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), -1);
    CHECK_EQ(errno, EBADMSG);
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 4);
    /* now the M_PASSFP is at the front: read and getmsg refuse it */
    errno = 0;
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EBADMSG);
    errno = 0;
    CHECK_EQ(getmsg(p[1], &ctl, &dat, &flags), -1);
    CHECK_EQ(errno, EBADMSG);
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    CHECK(rf.fd >= 0);
    close(rf.fd);
    close(tf);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* 4 */
static void test_eagain(void)
{
    int p[2], tf;
    struct strrecvfd rf;
    char buf[1024];

    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), -1);
    CHECK_EQ(errno, EAGAIN);

    /* fill p[1]'s read queue: I_SENDFD is flow controlled */
    CHECK_EQ(strm_fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    memset(buf, 'f', sizeof(buf));
    int full = 0;
    for (int i = 0; i < 10000 && !full; i++)
        if (strm_write(p[0], buf, sizeof(buf)) < 0)
            full = errno == EAGAIN;
    CHECK(full);
    tf = temp_file("y");
    errno = 0;
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, tf), -1);
    CHECK_EQ(errno, EAGAIN);
    /* drain, then it goes */
    while (strm_read(p[1], buf, sizeof(buf)) > 0)
        ;
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, tf), 0);
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    close(rf.fd);
    close(tf);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* 5 */
static void test_errors(void)
{
    int p[2], tf, echo, closed;
    struct strrecvfd rf;

    tf = temp_file("z");
    echo = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(echo >= 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(echo, I_SENDFD, tf), -1);
    CHECK_EQ(errno, EINVAL);
    strm_close(echo);

    CHECK_EQ(strm_pipe(p), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, -1), -1);
    CHECK_EQ(errno, EBADF);
    closed = dup(tf);
    close(closed);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, closed), -1);
    CHECK_EQ(errno, EBADF);

    /* queued before the other end closed: still received, then ENXIO */
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, tf), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    close(rf.fd);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), -1);
    CHECK_EQ(errno, ENXIO);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[1], I_SENDFD, tf), -1);
    CHECK_EQ(errno, ENXIO);
    strm_close(p[1]);
    close(tf);
}

/* 6 */
struct receiver {
    int fd;
    int rc;
    int err;
    struct strrecvfd rf;
    atomic_int done;
};

static void *receive_thread(void *arg)
{
    struct receiver *r = arg;
    r->rc = strm_ioctl(r->fd, I_RECVFD, &r->rf);
    r->err = errno;
    atomic_store(&r->done, 1);
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_blocking(void)
{
    int p[2], tf;
    pthread_t t;
    struct receiver r = {0};
    struct sigaction sa, old;

    CHECK_EQ(strm_pipe(p), 0);
    tf = temp_file("w");
    r.fd = p[1];
    pthread_create(&t, NULL, receive_thread, &r);
    nap_ms(50);
    CHECK_EQ(atomic_load(&r.done), 0);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, tf), 0);
    pthread_join(t, NULL);
    CHECK_EQ(r.rc, 0);
    CHECK(r.rf.fd >= 0);
    close(r.rf.fd);

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    memset(&r, 0, sizeof(r));
    r.fd = p[1];
    pthread_create(&t, NULL, receive_thread, &r);
    nap_ms(20);
    for (int i = 0; i < 500 && !atomic_load(&r.done); i++) {
        pthread_kill(t, SIGUSR1);
        nap_ms(10);
    }
    pthread_join(t, NULL);
    CHECK_EQ(r.rc, -1);
    CHECK_EQ(r.err, EINTR);
    sigaction(SIGUSR1, &old, NULL);
    close(tf);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* 7 */
static void test_unreceived(void)
{
    int a[2], b[2], tf, before = count_fds(), mid;

    /* an ordinary file */
    CHECK_EQ(strm_pipe(a), 0);
    tf = temp_file("lost");
    mid = count_fds();
    CHECK_EQ(strm_ioctl(a[0], I_SENDFD, tf), 0);
    CHECK_EQ(count_fds(), mid + 1); /* the duplicate in flight */
    CHECK_EQ(strm_ioctl(a[1], I_SENDFD, tf), 0);
    CHECK_EQ(count_fds(), mid + 2);
    close(tf);
    strm_close(a[0]);
    strm_close(a[1]);
    CHECK_EQ(fds_settle(before), before);

    /* the receiving end closed first, the message still queued there */
    CHECK_EQ(strm_pipe(a), 0);
    tf = temp_file("receiver gone");
    CHECK_EQ(strm_ioctl(a[0], I_SENDFD, tf), 0);
    close(tf);
    CHECK_EQ(strm_close(a[1]), 0);
    strm_close(a[0]);
    CHECK_EQ(fds_settle(before), before);

    /* a stream: held by the message until the pipe carrying it closes */
    CHECK_EQ(strm_pipe(a), 0);
    CHECK_EQ(strm_pipe(b), 0);
    CHECK_EQ(strm_ioctl(a[0], I_SENDFD, b[0]), 0);
    CHECK_EQ(strm_close(b[0]), 0);
    CHECK_EQ(poll1(b[1], POLLIN, 50) & POLLHUP, 0);
    strm_close(a[0]);
    strm_close(a[1]);
    CHECK(poll1(b[1], POLLIN, 2000) & POLLHUP);
    strm_close(b[1]);
    CHECK_EQ(fds_settle(before), before);
}

/* A pipe end sent to itself through its peer, then both ends closed: the
 * M_PASSFP on its own read queue is all that holds it, so closing frees it
 * (found by fuzz_head_calls: the end and its block leaked). */
static void test_self_cycle(void)
{
    int p[2], q[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, p[1]), 0);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, p[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    /* a cycle that a descriptor still reaches is left alone */
    CHECK_EQ(strm_pipe(q), 0);
    CHECK_EQ(strm_ioctl(q[0], I_SENDFD, q[1]), 0);
    int d = strm_fcntl(q[1], F_DUPFD, 0);
    CHECK(d >= 0);
    CHECK_EQ(strm_close(q[1]), 0);
    struct strrecvfd rf;
    CHECK_EQ(strm_ioctl(d, I_RECVFD, &rf), 0);
    CHECK_EQ(isastream(rf.fd), 1);
    CHECK_EQ(strm_close(rf.fd), 0);
    CHECK_EQ(strm_close(d), 0);
    CHECK_EQ(strm_close(q[0]), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* Two streams, each receiving the other's descriptor at the same time: each
 * I_RECVFD enters the other stream, so neither may do it under its own
 * stream's lock (it deadlocked so). */
enum { CROSS_ROUNDS = 3000 };
struct cross_arg {
    int recv_on; /* the end whose head holds the M_PASSFP */
    pthread_barrier_t *bar;
    int errors;
};

static void *cross_receiver(void *p)
{
    struct cross_arg *a = p;
    for (int i = 0; i < CROSS_ROUNDS; i++) {
        pthread_barrier_wait(a->bar);
        struct strrecvfd rf;
        if (strm_ioctl(a->recv_on, I_RECVFD, &rf) != 0 || isastream(rf.fd) != 1 ||
            strm_close(rf.fd) != 0)
            a->errors++;
        pthread_barrier_wait(a->bar);
    }
    return NULL;
}

static void test_cross_receive(void)
{
    int a[2], b[2];
    CHECK_EQ(strm_pipe(a), 0);
    CHECK_EQ(strm_pipe(b), 0);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 3);
    struct cross_arg ca = {a[1], &bar, 0}, cb = {b[1], &bar, 0};
    pthread_t ta, tb;
    CHECK_EQ(pthread_create(&ta, NULL, cross_receiver, &ca), 0);
    CHECK_EQ(pthread_create(&tb, NULL, cross_receiver, &cb), 0);
    int sent = 0;
    for (int i = 0; i < CROSS_ROUNDS; i++) {
        /* a[1] receives b[1]'s stream, b[1] receives a[1]'s */
        sent += strm_ioctl(a[0], I_SENDFD, b[1]) == 0;
        sent += strm_ioctl(b[0], I_SENDFD, a[1]) == 0;
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&bar);
    CHECK_EQ(sent, 2 * CROSS_ROUNDS);
    CHECK_EQ(ca.errors, 0);
    CHECK_EQ(cb.errors, 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(strm_close(a[i]), 0);
        CHECK_EQ(strm_close(b[i]), 0);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

int main(void)
{
    /* The first stream makes the library's one per-process descriptor (the
     * epoll set of close(2) detection, sd_fd.c); count from after it. */
    int warm[2];
    CHECK_EQ(strm_pipe(warm), 0);
    CHECK_EQ(strm_close(warm[0]), 0);
    CHECK_EQ(strm_close(warm[1]), 0);
    int before = count_fds();

    test_file();
    test_stream();
    test_ebadmsg();
    test_eagain();
    test_errors();
    test_blocking();
    test_unreceived();
    test_self_cycle();
    test_cross_receive();
    /* 8 */
    CHECK_EQ(fds_settle(before), before);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
