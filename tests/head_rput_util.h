/* SPDX-License-Identifier: MIT */
/*
 * head_rput_util.h -- helpers shared by test_head_rput.c and test_head_rput_ctl.c.
 */
#ifndef HEAD_RPUT_UTIL_H
#define HEAD_RPUT_UTIL_H

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

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Signal counts: lock-free atomics, safe in a handler and across threads. */
static atomic_int n_poll, n_urg, n_usr1, n_usr2;

static inline void on_signal(int sig)
{
    if (sig == SIGPOLL)
        atomic_fetch_add(&n_poll, 1);
    else if (sig == SIGURG)
        atomic_fetch_add(&n_urg, 1);
    else if (sig == SIGUSR1)
        atomic_fetch_add(&n_usr1, 1);
    else if (sig == SIGUSR2)
        atomic_fetch_add(&n_usr2, 1);
}

/* Wait up to 2 s for a signal counter to reach want. */
static inline int wait_count(atomic_int *c, int want)
{
    for (int i = 0; i < 2000 && atomic_load(c) < want; i++)
        sleep_ms(1);
    return atomic_load(c);
}

static inline short pollev(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI | POLLOUT | POLLRDNORM};
    return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static inline int open_hdrv(void)
{
    int fd = strm_open("/dev/streams/hdrv", O_RDWR);
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

static inline void setopts(struct stroptions *so)
{
    hdrv_up(hmsg2(M_SETOPTS, 0, so, sizeof(*so), NULL, 0));
}

#endif /* HEAD_RPUT_UTIL_H */
