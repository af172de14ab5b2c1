/* SPDX-License-Identifier: MIT */
/*
 * test_head_close.c -- conformance of strm_close, the close-time drain and
 * I_PUSH/I_POP (ust_sd_push/ust_sd_pop) (src/head/sd_open.c).  Opens,
 * strm_fcntl and isastream are in test_head_open.c; the test driver, module
 * and shared helpers in head_open_util.h.
 *
 * References: open(2) and close(2) (POSIX.1-2008, STREAMS sections),
 * streamio(7) (I_PUSH, I_POP, I_SETCLTIME, I_ANCHOR), fcntl(2), isastream(3C).
 * Cases are numbered by the reference page they check:
 *   P.1  streamio I_PUSH / I_POP: order of modules, ust_sd_top; messages a
 *        popped module still holds are passed on, in order, not lost
 *   P.2  I_PUSH errors: EINVAL (NULL, empty, too long, unknown, a driver's
 *        name, past NSTRPUSH), the module open's error; I_POP: EINVAL with
 *        nothing pushed, EPERM at the anchor
 *   P.3  I_PUSH/I_POP after M_HANGUP: ENXIO; after M_ERROR: the error
 *   P.4  the same through strm_ioctl: I_PUSH, I_LOOK, I_POP and their errors
 *   C.1  close(2): closing the last descriptor closes every module and the
 *        driver, and frees every block
 *   C.2  streamio I_SETCLTIME: close waits up to the close time for a write
 *        queue to drain, then discards; close time 0 and O_NONBLOCK do not
 *        wait; a queue that drains ends the wait early (nothing is lost);
 *        I_SETCLTIME/I_GETCLTIME through strm_ioctl
 *   C.3  close(2): closing the last descriptor while another thread waits in
 *        the stream (in the head's wait, in read(2), in getmsg(2)) makes that
 *        thread return
 *   C.5  close(2) with a write held by SNDHOLD (streamio I_SWROPT): the held
 *        message is sent before the driver is closed
 *   C.4  close(2) errors: EBADF (not open, closed twice); a descriptor that is
 *        not a stream is closed by close(2)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"
#include "head_open_util.h"

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

/* The driver's read queue (bottom of the stream). */
static queue_t *driver_rq(struct stdata *sd)
{
    queue_t *q = sd->sd_wq;
    while (ust_qnext(q) != NULL)
        q = ust_qnext(q);
    return RD(q);
}

static long modent_count(const char *name, int kind, int closes)
{
    struct ust_modent *e = ust_reg_find(name, kind);
    long n;
    if (e == NULL)
        return -1;
    n = closes ? atomic_load(&e->nclose) : atomic_load(&e->nopen);
    ust_reg_rele(e);
    return n;
}

/* ------------------------------------------------------------------------ */
/* P: push and pop                                                          */
/* ------------------------------------------------------------------------ */
static void test_push_pop(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
    CHECK_EQ(ust_sd_push(sd, "srvmod", &cr), 0);
    CHECK_EQ(sd->sd_pushcnt, 2);
    CHECK(strcmp(top_name(sd), "srvmod") == 0);
    CHECK(strcmp(ust_qnext(ust_sd_top(sd))->q_qinfo->qi_minfo->mi_idname, "nullmod") == 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK(strcmp(top_name(sd), "nullmod") == 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK(strcmp(top_name(sd), "echo") == 0);
    CHECK_EQ(sd->sd_pushcnt, 0);
    CHECK_EQ(strm_close(fd), 0);

    /* tslow holds 3 messages (its service procedure never runs); the pop
     * sends them on to the driver */
    atomic_store(&tslow_release_ms, 0);
    fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_push(sd, "tslow", &cr), 0);
    int data0 = atomic_load(&tdrv_data);
    for (int i = 0; i < 3; i++)
        head_send(sd, data_msg(16));
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 3);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_push_errors(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(ust_sd_push(sd, NULL, &cr), EINVAL);
    CHECK_EQ(ust_sd_push(sd, "", &cr), EINVAL);
    CHECK_EQ(ust_sd_push(sd, "nullmodxx", &cr), EINVAL); /* FMNAMESZ + 1 */
    CHECK_EQ(ust_sd_push(sd, "nosuch", &cr), EINVAL);
    CHECK_EQ(ust_sd_push(sd, "echo", &cr), EINVAL); /* a driver, not a module */
    CHECK_EQ(sd->sd_pushcnt, 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), EINVAL); /* nothing to pop */

    /* the module's open fails: its error, nothing pushed */
    atomic_store(&tslow_fail, EPROTO);
    CHECK_EQ(ust_sd_push(sd, "tslow", &cr), EPROTO);
    atomic_store(&tslow_fail, 0);
    CHECK_EQ(sd->sd_pushcnt, 0);
    CHECK(strcmp(top_name(sd), "echo") == 0);

    /* NSTRPUSH */
    int n = 0;
    while (n < UST_NSTRPUSH && ust_sd_push(sd, "nullmod", &cr) == 0)
        n++;
    CHECK_EQ(n, UST_NSTRPUSH);
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), EINVAL);
    CHECK_EQ(sd->sd_pushcnt, UST_NSTRPUSH);

    /* anchor (I_ANCHOR) at 2 modules: pops stop there with EPERM */
    ust_lock(&sd->sd_plumb);
    sd->sd_anchor = 2;
    ust_unlock(&sd->sd_plumb);
    while (sd->sd_pushcnt > 2)
        CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), EPERM);
    CHECK_EQ(sd->sd_pushcnt, 2);
    /* close still pops everything (C.1 checks the count) */
    long closes = modent_count("nullmod", UST_MODULE, 1);
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(modent_count("nullmod", UST_MODULE, 1) - closes, 2);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_push_hangup_error(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    for (int kind = 0; kind < 2; kind++) {
        int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
        struct stdata *sd = ust_sd_peek(fd);
        if (!CHECK(sd != NULL))
            return;
        CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
        if (kind == 0)
            CHECK(putnextctl(driver_rq(sd), M_HANGUP));
        else
            CHECK(putnextctl1(driver_rq(sd), M_ERROR, EPROTO));
        int want = kind == 0 ? ENXIO : EPROTO;
        CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), want);
        CHECK_EQ(ust_sd_pop(sd, &cr), want);
        CHECK_EQ(sd->sd_pushcnt, 1);
        /* a reopen of a hung-up or failed stream is EIO (POSIX open(2)) */
        CHECK_EQ(strm_close(fd), 0);
    }
    int a = strm_open("/dev/streams/tdrv", O_RDWR);
    CHECK(a >= 0);
    CHECK(putnextctl(driver_rq(ust_sd_peek(a)), M_HANGUP));
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/tdrv", O_RDWR), -1);
    CHECK_EQ(errno, EIO);
    CHECK_EQ(strm_close(a), 0);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_push_ioctl(void)
{
    char name[FMNAMESZ + 1];
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), -1); /* streamio: EINVAL, no module */
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), 0);
    CHECK(strcmp(name, "srvmod") == 0);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), 0);
    CHECK(strcmp(name, "nullmod") == 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "echo"), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nosuchmod"), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, NULL), -1);
    CHECK(errno == EFAULT || errno == EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* C: close                                                                 */
/* ------------------------------------------------------------------------ */
static void test_close_pops(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    long nm = modent_count("nullmod", UST_MODULE, 1);
    long sm = modent_count("srvmod", UST_MODULE, 1);
    long ec = modent_count("echo", UST_DRIVER, 1);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
    CHECK_EQ(ust_sd_push(sd, "srvmod", &cr), 0);
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
    for (int i = 0; i < 5; i++)
        head_send(sd, data_msg(100)); /* echoed back up to the head */
    settle();
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(modent_count("nullmod", UST_MODULE, 1) - nm, 2);
    CHECK_EQ(modent_count("srvmod", UST_MODULE, 1) - sm, 1);
    CHECK_EQ(modent_count("echo", UST_DRIVER, 1) - ec, 1);
    settle();
    CHECK_NO_BLOCKS();
}

/* Open tdrv with tslow pushed, queue n messages in tslow, then close with
 * close time ms (and oflag); returns how long the close took. */
static long close_with_stuck(int n, long ms, int oflag)
{
    cred_t cr;
    ust_sd_cred(&cr);
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR | oflag);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return -1;
    CHECK_EQ(ust_sd_push(sd, "tslow", &cr), 0);
    for (int i = 0; i < n; i++)
        head_send(sd, data_msg(64));
    ust_lock(&sd->sd_lock);
    sd->sd_closetime = ms;
    ust_unlock(&sd->sd_lock);
    long long t0 = now_ms();
    CHECK_EQ(strm_close(fd), 0);
    return (long)(now_ms() - t0);
}

static void test_close_drain(void)
{
    int data0;
    long took;

    /* stuck: close waits the close time, then discards */
    atomic_store(&tslow_release_ms, 0);
    data0 = atomic_load(&tdrv_data);
    took = close_with_stuck(3, 300, 0);
    CHECK(took >= 290);
    CHECK(took < 5000);
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 0);
    settle();
    CHECK_NO_BLOCKS();

    /* close time 0: no wait */
    took = close_with_stuck(3, 0, 0);
    CHECK(took < 250);
    /* O_NONBLOCK: no wait */
    took = close_with_stuck(3, 10000, O_NONBLOCK);
    CHECK(took < 250);
    /* nothing queued: no wait */
    took = close_with_stuck(0, 10000, 0);
    CHECK(took < 250);
    settle();
    CHECK_NO_BLOCKS();

    /* the queue drains after ~150 ms: close returns then, nothing lost */
    atomic_store(&tslow_release_ms, 150);
    data0 = atomic_load(&tdrv_data);
    took = close_with_stuck(4, 10000, 0);
    atomic_store(&tslow_release_ms, 0);
    CHECK(took >= 100);
    CHECK(took < 5000);
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 4);
    settle();
    CHECK_NO_BLOCKS();
}

/* I_SETCLTIME through strm_ioctl. */
static void test_close_cltime_ioctl(void)
{
    int ms = -1;
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK_EQ(strm_ioctl(fd, I_GETCLTIME, &ms), 0);
    CHECK_EQ(ms, UST_CLTIME_MS);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "tslow"), 0);
    struct stdata *sd = ust_sd_peek(fd);
    for (int i = 0; i < 2; i++)
        head_send(sd, data_msg(32));
    ms = 200;
    CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
    ms = -1;
    CHECK_EQ(strm_ioctl(fd, I_GETCLTIME, &ms), 0);
    CHECK_EQ(ms, 200);
    long long t0 = now_ms();
    CHECK_EQ(strm_close(fd), 0);
    CHECK(now_ms() - t0 >= 190);
    CHECK(now_ms() - t0 < 5000);

    fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "tslow"), 0);
    sd = ust_sd_peek(fd);
    head_send(sd, data_msg(32));
    ms = 0;
    CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
    t0 = now_ms();
    CHECK_EQ(strm_close(fd), 0);
    CHECK(now_ms() - t0 < 250);
    settle();
    CHECK_NO_BLOCKS();
}

/* A thread inside a call on the stream, waiting as a blocked read does. */
struct waiter {
    int fd;
    atomic_int state; /* 0 starting, 1 waiting, 2 returned */
    int err;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    int err;
    struct stdata *sd = ust_sd_get(w->fd, &err);
    if (sd == NULL) {
        w->err = err;
        atomic_store(&w->state, 2);
        return NULL;
    }
    ust_lock(&sd->sd_lock);
    atomic_store(&w->state, 1);
    err = 0;
    while (!(sd->sd_flag & STRCLOSE) && err == 0)
        err = ust_sd_wait(sd, &sd->sd_rwait, 0);
    w->err = (sd->sd_flag & STRCLOSE) ? EBADF : err;
    ust_unlock(&sd->sd_lock);
    ust_sd_put(sd);
    atomic_store(&w->state, 2);
    return NULL;
}

static void test_close_wakes(void)
{
    struct waiter w = {.fd = strm_open("/dev/streams/clone/echo", O_RDWR)};
    pthread_t t;
    CHECK(w.fd >= 0);
    pthread_create(&t, NULL, wait_thread, &w);
    while (atomic_load(&w.state) == 0)
        sleep_ms(1);
    sleep_ms(20);
    long long t0 = now_ms();
    CHECK_EQ(strm_close(w.fd), 0);
    CHECK(now_ms() - t0 < 5000);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&w.state), 2);
    CHECK_EQ(w.err, EBADF);
}

struct blocked_call {
    int fd;
    int getmsg; /* 1: getmsg(2), 0: read(2) */
    atomic_int started;
    long ret;
    int err;
};

static void *blocked_thread(void *arg)
{
    struct blocked_call *b = arg;
    char buf[16];
    atomic_store(&b->started, 1);
    errno = 0;
    if (b->getmsg) {
        struct strbuf data = {.maxlen = sizeof(buf), .buf = buf};
        int flags = 0;
        b->ret = getmsg(b->fd, NULL, &data, &flags);
    } else {
        b->ret = strm_read(b->fd, buf, sizeof(buf));
    }
    b->err = errno;
    return NULL;
}

static void test_close_wakes_read(void)
{
    for (int g = 0; g < 2; g++) {
        struct blocked_call b = {.fd = strm_open("/dev/streams/clone/echo", O_RDWR), .getmsg = g};
        pthread_t t;
        CHECK(b.fd >= 0);
        pthread_create(&t, NULL, blocked_thread, &b);
        while (!atomic_load(&b.started))
            sleep_ms(1);
        sleep_ms(50);
        long long t0 = now_ms();
        CHECK_EQ(strm_close(b.fd), 0);
        pthread_join(t, NULL);
        CHECK(now_ms() - t0 < 5000);
        /* the call returns: EBADF, or end of file */
        CHECK(b.ret == 0 || (b.ret == -1 && b.err == EBADF));
    }
    settle();
    CHECK_NO_BLOCKS();
}

static void test_close_hold(void)
{
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD), 0);
    int data0 = atomic_load(&tdrv_data);
    CHECK_EQ(strm_write(fd, "ab", 2), 2);
    CHECK_EQ(strm_write(fd, "cd", 2), 2);
    int held = atomic_load(&tdrv_data) - data0; /* the first may go at once */
    CHECK(held <= 1);
    CHECK_EQ(strm_close(fd), 0);
    CHECK(atomic_load(&tdrv_data) - data0 > held);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_close_errors(void)
{
    int p[2];
    errno = 0;
    CHECK_EQ(strm_close(-1), -1);
    CHECK_EQ(errno, EBADF);
    int fd = strm_open("/dev/streams/clone/nuls", O_RDWR);
    CHECK_EQ(strm_close(fd), 0);
    errno = 0;
    CHECK_EQ(strm_close(fd), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(strm_close(p[0]), 0); /* not a stream: close(2) */
    CHECK_EQ(fcntl(p[0], F_GETFD), -1);
    close(p[1]);
}

int main(void)
{
    CHECK(register_strdev(&tdrv_cdev, 0) > 0);
    CHECK_EQ(register_strmod(&tslow_fmod), 0);

    test_push_pop();
    test_push_errors();
    test_push_hangup_error();
    test_push_ioctl();
    test_close_pops();
    test_close_drain();
    test_close_cltime_ioctl();
    test_close_wakes();
    test_close_wakes_read();
    test_close_hold();
    test_close_errors();

    /* every reference to the test driver and module was given back */
    CHECK_EQ(unregister_strmod(&tslow_fmod), 0);
    CHECK_EQ(unregister_strdev(&tdrv_cdev, 0), 0);
    settle();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
