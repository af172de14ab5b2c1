/* SPDX-License-Identifier: MIT */
/*
 * test_raw_calls.c -- plain read(2), write(2), poll(2) and epoll on the
 * descriptor of a stream, without the preload (issue 22 item 3; docs/
 * PROGRAMS.md, "The descriptor without the preload"; docs/STREAMHEAD.md,
 * "Descriptors and readiness"; src/head/sd_urec.c).  The rule: a write(2)
 * never reports success for data that goes nowhere, a read(2) never returns
 * bytes that are not the stream's data, and readiness keeps working.
 *   R.1  write(2) on an echo stream: each write comes back as one message
 *        (RMSGN strm_read), in order;
 *   R.2  write(2) on a pipe end reaches the other end; on a FIFO, its
 *        reader (the same descriptor);
 *   R.3  a write above the limit (U's send buffer less 32 bytes): -1
 *        EMSGSIZE, nothing delivered; a write of the limit is delivered;
 *   R.4  read(2) with a message queued returns 0 (or -1 EAGAIN), never
 *        bytes; the message is still there for strm_read;
 *   R.5  a pipe end nobody reads, non-blocking write(2) of numbered
 *        records until EAGAIN (the library stops taking from its end when
 *        the pipe is full); then the reader drains: every record, in
 *        order, none twice, and the count bounded;
 *   R.6  poll(2) and epoll on the raw descriptor after all that: POLLIN
 *        when a message arrives, POLLOUT when writable, POLLHUP when the
 *        other end closes; write(2) after the hang-up: -1 EPIPE;
 *   R.7  a child that inherited the descriptor as 3 execs /bin/sh -c
 *        'printf abc >&3' (no library in it): "abc" reaches the parent's
 *        stream, also while the parent sleeps in strm_poll;
 *   R.8  hostile: a fork child (no library call in it) writes records into
 *        an echo stream as fast as it can for a while; nobody reads: the
 *        library holds a bounded amount (I_NREAD, block statistics), and
 *        all that was accepted is read back, in order.  (A pipe end is
 *        split at fork, the child's descriptor then being its own: issue 22
 *        item 2.)
 *   R.9  a stale report: the watch's note of a closed stream (its head in
 *        the pool, as a completion about its last life can arrive after the
 *        close) lists nothing, also once the head serves a new pipe; a note
 *        of a live stream is a look and no more (TSan had a deliverer
 *        reading a pooled head while ust_sd_alloc set up its next life).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "sthead.h"

/* strm_poll for ev on fd, waiting at most ms. */
static short spoll(int fd, short ev, int ms)
{
    struct pollfd p = {.fd = fd, .events = ev};
    return strm_poll(&p, 1, ms) == 1 ? p.revents : 0;
}

/* poll(2) on the raw descriptor, at most ms. */
static short kpoll(int fd, short ev, int ms)
{
    struct pollfd p = {.fd = fd, .events = ev};
    return poll(&p, 1, ms) == 1 ? p.revents : 0;
}

/* One message (RMSGN) of fd into buf, waiting at most 3 s: its length or -1. */
static ssize_t read_msg(int fd, char *buf, size_t len)
{
    if (!(spoll(fd, POLLIN, 3000) & POLLIN))
        return -1;
    return strm_read(fd, buf, len);
}

static int open_echo(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RMSGN), 0);
    return fd;
}

/* R.1 */
static void t_echo(void)
{
    int fd = open_echo();
    char buf[64];
    CHECK_EQ(write(fd, "abc", 3), 3);
    CHECK_EQ(write(fd, "defgh", 5), 5);
    CHECK_EQ(write(fd, "i", 1), 1);
    CHECK_EQ(read_msg(fd, buf, sizeof(buf)), 3);
    CHECK(memcmp(buf, "abc", 3) == 0);
    CHECK_EQ(read_msg(fd, buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "defgh", 5) == 0);
    CHECK_EQ(read_msg(fd, buf, sizeof(buf)), 1);
    CHECK_EQ(buf[0], 'i');
    CHECK_EQ(strm_close(fd), 0);
}

/* R.2 */
static void t_pipe_fifo(void)
{
    int fds[2];
    char buf[64];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_SRDOPT, RMSGN), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_SRDOPT, RMSGN), 0);
    CHECK_EQ(write(fds[0], "hello", 5), 5);
    CHECK_EQ(write(fds[1], "back", 4), 4);
    CHECK_EQ(read_msg(fds[1], buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    CHECK_EQ(read_msg(fds[0], buf, sizeof(buf)), 4);
    CHECK(memcmp(buf, "back", 4) == 0);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);

    int f = strm_open("/dev/streams/fifo", O_RDWR);
    CHECK(f >= 0);
    CHECK_EQ(write(f, "fifo!", 5), 5);
    CHECK_EQ(read_msg(f, buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "fifo!", 5) == 0);
    CHECK_EQ(strm_close(f), 0);
}

/* R.3 */
static void t_limit(void)
{
    int fd = open_echo();
    int sb = 0;
    socklen_t sl = sizeof(sb);
    CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, &sl), 0);
    size_t limit = (size_t)sb - 32;
    CHECK(limit >= 4096);
    char *big = malloc(limit + 1), *got = malloc(limit + 1);
    for (size_t i = 0; i <= limit; i++)
        big[i] = (char)('a' + i % 26);
    errno = 0;
    CHECK_EQ(write(fd, big, limit + 1), -1);
    CHECK_EQ(errno, EMSGSIZE);
    CHECK_EQ(write(fd, big, limit), (long)limit);
    CHECK_EQ(read_msg(fd, got, limit + 1), (long)limit);
    CHECK(memcmp(got, big, limit) == 0);
    CHECK_EQ(spoll(fd, POLLIN, 100), 0); /* the refused one went nowhere */
    free(big);
    free(got);
    CHECK_EQ(strm_close(fd), 0);
}

/* R.4 */
static void t_read(void)
{
    int fd = open_echo();
    char buf[16];
    CHECK_EQ(strm_write(fd, "xyz", 3), 3);
    CHECK(spoll(fd, POLLIN, 3000) & POLLIN);
    CHECK(kpoll(fd, POLLIN, 3000) & POLLIN);
    memset(buf, 0, sizeof(buf));
    ssize_t r = read(fd, buf, sizeof(buf));
    CHECK(r == 0 || (r == -1 && errno == EAGAIN));
    CHECK_EQ(buf[0], 0);
    r = read(fd, buf, sizeof(buf)); /* again: still nothing that is not data */
    CHECK(r == 0 || (r == -1 && errno == EAGAIN));
    CHECK_EQ(buf[0], 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 3);
    CHECK(memcmp(buf, "xyz", 3) == 0);
    /* The next message shows on the raw descriptor again. */
    CHECK_EQ(kpoll(fd, POLLIN, 0), 0);
    CHECK_EQ(strm_write(fd, "q", 1), 1);
    CHECK(kpoll(fd, POLLIN, 3000) & POLLIN);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 1);
    CHECK_EQ(kpoll(fd, POLLIN, 0), 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* R.5: numbered records until EAGAIN; returns how many went. */
static long fill_until_eagain(int fd, long from)
{
    long n = from;
    int quiet = 0;
    while (quiet < 40) { /* 40 x 10 ms with EAGAIN and nothing taken */
        uint32_t rec[25];
        for (int i = 0; i < 25; i++)
            rec[i] = (uint32_t)n;
        if (write(fd, rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
            n++;
            quiet = 0;
            continue;
        }
        CHECK_EQ(errno, EAGAIN);
        if (errno != EAGAIN)
            break;
        spoll(fd, POLLOUT, 10); /* a library call: records noticed */
        kpoll(fd, POLLOUT, 10); /* as a program without the library waits */
        quiet++;
    }
    return n;
}

static void t_until_eagain(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_SRDOPT, RMSGN), 0);
    long n = fill_until_eagain(fds[0], 0);
    fprintf(stderr, "note R.5: %ld records of 100 bytes until EAGAIN\n", n);
    CHECK(n > 10);
    CHECK(n * 100 < 512 * 1024); /* bounded: the pipe's limit and L's */
    errno = 0;
    CHECK_EQ(write(fds[0], "more", 4), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(kpoll(fds[0], POLLOUT, 0), 0);
    long got = 0, bad = 0;
    uint32_t rec[26];
    while (got < n) {
        ssize_t r = read_msg(fds[1], (char *)rec, sizeof(rec));
        if (r != 100)
            break;
        if (rec[0] != (uint32_t)got || rec[24] != (uint32_t)got)
            bad++;
        got++;
    }
    CHECK_EQ(got, n);
    CHECK_EQ(bad, 0);
    CHECK_EQ(spoll(fds[1], POLLIN, 200), 0); /* none twice */
    CHECK(kpoll(fds[0], POLLOUT, 2000) & POLLOUT);
    CHECK_EQ(write(fds[0], "more", 4), 4);
    char b[8];
    CHECK_EQ(read_msg(fds[1], b, sizeof(b)), 4);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* R.6 */
static void t_readiness(void)
{
    int fd = open_echo();
    char buf[16];
    CHECK_EQ(write(fd, "w", 1), 1);
    CHECK_EQ(read_msg(fd, buf, sizeof(buf)), 1);
    CHECK_EQ(kpoll(fd, POLLIN | POLLOUT, 0), POLLOUT);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, got;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
    CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);
    CHECK_EQ(strm_write(fd, "e", 1), 1);
    CHECK_EQ(epoll_wait(ep, &got, 1, 3000), 1);
    CHECK_EQ(got.data.fd, fd);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 1);
    close(ep);
    CHECK_EQ(strm_close(fd), 0);

    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(write(fds[0], "h", 1), 1);
    CHECK(kpoll(fds[1], POLLIN, 3000) & POLLIN);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK(kpoll(fds[1], POLLIN, 3000) & POLLHUP);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 1);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 0);
    errno = 0;
    CHECK_EQ(write(fds[1], "x", 1), -1); /* SIGPIPE is ignored by main */
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(read(fds[1], buf, sizeof(buf)), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* R.7 */
static void t_exec_child(int delay)
{
    int fd = open_echo();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (dup2(fd, 3) != 3)
            _exit(2);
        execl("/bin/sh", "sh", "-c", delay ? "sleep 0.3; printf abc >&3" : "printf abc >&3",
              (char *)NULL);
        _exit(3);
    }
    CHECK(pid > 0);
    char buf[16];
    if (delay) { /* the parent sleeps in strm_poll meanwhile */
        CHECK(spoll(fd, POLLIN, 5000) & POLLIN);
        CHECK_EQ(fk_wait(pid, 5000), 0);
    } else {
        CHECK_EQ(fk_wait(pid, 5000), 0);
    }
    CHECK_EQ(read_msg(fd, buf, sizeof(buf)), 3);
    CHECK(memcmp(buf, "abc", 3) == 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* R.8 */
static int g_wfd;
static int g_report[2];

static int hostile_writer(void *arg)
{
    (void)arg;
    /* No library call here: a program that only has the descriptor. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t n = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > 800)
            break;
        if (write(g_wfd, &n, sizeof(n)) == (ssize_t)sizeof(n)) {
            n++;
            continue;
        }
        if (errno != EAGAIN)
            break;
        struct pollfd p = {g_wfd, POLLOUT, 0};
        poll(&p, 1, 20);
    }
    if (write(g_report[1], &n, sizeof(n)) != (ssize_t)sizeof(n))
        return 1;
    return 0;
}

static void t_hostile(void)
{
    int fd = open_echo();
    CHECK_EQ(pipe(g_report), 0);
    g_wfd = fd;
    struct ustreams_blockstats st0, st;
    ustreams_blockstats(&st0);
    pid_t pid = fk_start(hostile_writer, NULL);
    long maxq = 0, maxbytes = 0;
    for (int i = 0; i < 500; i++) { /* library calls meanwhile: records noticed */
        fk_sleep_ms(2);
        int nmsg = strm_ioctl(fd, I_NREAD, &(int){0});
        if (nmsg > maxq)
            maxq = nmsg;
        ustreams_blockstats(&st);
        if (st.bytes - st0.bytes > maxbytes)
            maxbytes = st.bytes - st0.bytes;
    }
    CHECK_EQ(fk_wait(pid, 5000), 0);
    uint32_t sent = 0;
    CHECK_EQ(read(g_report[0], &sent, sizeof(sent)), (long)sizeof(sent));
    fprintf(stderr, "note R.8: %u records accepted, at most %ld messages and %ld bytes held\n",
            sent, maxq, maxbytes);
    CHECK(sent > 0);
    CHECK(maxq > 0);
    CHECK(maxq * 4 <= 80 * 1024); /* what the stream accepts, not what the writer tried */
    CHECK(maxbytes < 8 * 1024 * 1024);
    uint32_t got = 0, bad = 0, v[2];
    while (got < sent) {
        if (read_msg(fd, (char *)v, sizeof(v)) != 4)
            break;
        if (v[0] != got)
            bad++;
        got++;
    }
    CHECK_EQ(got, sent);
    CHECK_EQ(bad, 0);
    CHECK_EQ(spoll(fd, POLLIN, 200), 0);
    close(g_report[0]);
    close(g_report[1]);
    CHECK_EQ(strm_close(fd), 0);
}

/* R.9 */
static void t_stale_note(void)
{
    int p[2], err = 0;
    CHECK_EQ(strm_pipe(p), 0);
    struct stdata *old = ust_sd_get(p[0], &err);
    if (!CHECK(old != NULL))
        return;
    ust_sd_put(old);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    ust_sd_urec_run(); /* nothing else pending */
    ust_sd_urec_note(old); /* a report about its last life */
    CHECK(!ust_sd_urec_pending());
    int q[2];
    CHECK_EQ(strm_pipe(q), 0);
    ust_sd_urec_note(old); /* maybe q's head now: a look and no more */
    ust_sd_urec_run();
    CHECK(!ust_sd_urec_pending());
    CHECK_EQ(write(q[1], "fresh", 5), 5); /* plain write(2): the record path */
    char buf[16] = {0};
    CHECK_EQ(read_msg(q[0], buf, sizeof(buf)), 5);
    CHECK_EQ(memcmp(buf, "fresh", 5), 0);
    CHECK_EQ(strm_close(q[0]), 0);
    CHECK_EQ(strm_close(q[1]), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    alarm(120); /* the whole file's deadline */
    t_echo();
    t_pipe_fifo();
    t_limit();
    t_read();
    t_until_eagain();
    t_readiness();
    t_exec_child(0);
    t_exec_child(1);
    t_hostile();
    t_stale_note();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
