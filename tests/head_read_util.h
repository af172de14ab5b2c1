/* SPDX-License-Identifier: MIT */
/*
 * head_read_util.h -- helpers shared by test_head_read.c and test_head_getmsg.c.
 */
#ifndef HEAD_READ_UTIL_H
#define HEAD_READ_UTIL_H

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
#include "head_tdrv.h"
#include "sthead.h"

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline short pollev(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI | POLLOUT};
    return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static inline int open_hdrv(int nonblock)
{
    int fd = strm_open("/dev/streams/hdrv", O_RDWR | (nonblock ? O_NONBLOCK : 0));
    CHECK(fd >= 0);
    CHECK(atomic_load(&hdrv_rq) != NULL);
    return fd;
}

static inline struct stdata *sdof(int fd)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (sd)
        ust_sd_put(sd);
    return sd;
}

/* read(2) into buf, NUL-terminated; returns read's value. */
static inline ssize_t rd(int fd, char *buf, size_t count)
{
    ssize_t n = strm_read(fd, buf, count);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

#endif /* HEAD_READ_UTIL_H */
