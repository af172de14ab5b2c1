/* SPDX-License-Identifier: MIT */
/*
 * head_write_util.h -- helpers shared by test_head_write.c and test_head_putmsg.c.
 */
#ifndef HEAD_WRITE_UTIL_H
#define HEAD_WRITE_UTIL_H

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

static atomic_int sigpipes;

static inline void on_sigpipe(int s)
{
    (void)s;
    atomic_fetch_add(&sigpipes, 1);
}

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline void set_handler(int sig, void (*fn)(int), int restart)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* A fresh stream on cdrv, the driver's gate open and its log empty. */
static inline int open_dev(void)
{
    atomic_store(&cdrv_gate, 0);
    cdrv_clear();
    int fd = strm_open(DEV, O_RDWR);
    CHECK(fd >= 0);
    return fd;
}

static inline void close_dev(int fd)
{
    cdrv_gate_open();
    CHECK_EQ(strm_close(fd), 0);
    cdrv_clear();
}

static inline void set_nonblock(int fd, int on)
{
    int fl = strm_fcntl(fd, F_GETFL);
    strm_fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* Read back count messages from the driver and check they hold `data` in
 * order, each at most `most` bytes.  Returns the number of messages. */
static inline int expect_data(const unsigned char *data, size_t len, size_t most, long wait_ms)
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

#endif /* HEAD_WRITE_UTIL_H */
