/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_frontread.c -- byte-stream reads served in place at the front of
 * the head's read queue (src/head/sd_read.c front_read; since 2026-11-28 on
 * every stream head, not only on pipe ends split across processes).
 *
 * References: read(2) on a stream in byte-stream mode (RNORM: data of
 * several messages and parts of messages may be returned, what is left
 * stays at the front); streamio(7) I_NREAD, I_SRDOPT; the SVR4 STREAMS
 * Programmer's Guide, "Flow control" (a queue drained below its low-water
 * mark back-enables the writer).
 *
 *   R.1 partial reads of messages (30 of 100 bytes at a time): the bytes in
 *       order; I_NREAD then shows the messages left and the rest of the
 *       first; switched to RMSGN a read returns only the rest of the current
 *       message; a zero-length message still ends a read
 *   R.2 flow control: a pipe filled until EAGAIN takes no more until reads
 *       of 16 bytes at a time drain it, then POLLOUT shows and the writer
 *       goes on; with a blocked writer thread and a reader of 1-64 byte
 *       pieces every byte arrives once, in order (nullmod pushed or not)
 *   R.3 a bad buffer: EFAULT, nothing consumed
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

#define STREAM_BYTES (4L << 20)

static unsigned char pat(long i)
{
    return (unsigned char)(i * 131 + (i >> 8) + 7);
}

static void partial_reads(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    unsigned char msg[100], buf[100];
    for (int m = 0; m < 3; m++) {
        for (int i = 0; i < 100; i++)
            msg[i] = pat(m * 100 + i);
        CHECK_EQ(strm_write(p[0], msg, 100), 100);
    }
    long off = 0, bad = 0;
    for (int r = 0; r < 4; r++) { /* 120 bytes: all of the first, 20 of the second */
        CHECK_EQ(strm_read(p[1], buf, 30), 30);
        for (int i = 0; i < 30; i++)
            bad += buf[i] != pat(off + i);
        off += 30;
    }
    CHECK_EQ(bad, 0);
    int first = -1;
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &first), 2);
    CHECK_EQ(first, 80);
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 80); /* the rest of message 2 only */
    CHECK_EQ(buf[0], pat(120));
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RNORM), 0);
    CHECK_EQ(strm_read(p[1], buf, 10), 10);
    CHECK_EQ(buf[0], pat(200));
    CHECK_EQ(strm_ioctl(p[0], I_SWROPT, SNDZERO | SNDPIPE), 0);
    CHECK_EQ(strm_write(p[0], msg, 0), 0); /* a zero-length message after the rest */
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 90);
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 0);
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &first), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

static void fill_and_drain(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    unsigned char buf[512];
    long sent = 0;
    for (;;) {
        for (int i = 0; i < (int)sizeof(buf); i++)
            buf[i] = pat(sent + i);
        ssize_t w = strm_write(p[0], buf, sizeof(buf));
        if (w < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        sent += w;
    }
    CHECK(sent > 0);
    struct pollfd pf = {.fd = p[0], .events = POLLOUT};
    CHECK_EQ(strm_poll(&pf, 1, 0), 0); /* full */
    long got = 0, bad = 0;
    unsigned char r[16];
    while (got < sent) {
        ssize_t n = strm_read(p[1], r, sizeof(r));
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            bad += r[i] != pat(got + i);
        got += n;
        if (got == sent / 8 * 7) /* below the low-water mark (a quarter of the high) */
            CHECK_EQ(strm_poll(&pf, 1, 0), 1);
    }
    CHECK_EQ(got, sent);
    CHECK_EQ(bad, 0);
    CHECK_EQ(strm_write(p[0], buf, 100), 100); /* the writer goes on */
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

static void *stream_writer(void *arg)
{
    int fd = *(int *)arg;
    unsigned char buf[3000];
    long off = 0;
    unsigned x = 99;
    while (off < STREAM_BYTES) {
        x = x * 1103515245u + 12345u;
        long n = 1 + (long)((x >> 16) % sizeof(buf));
        if (n > STREAM_BYTES - off)
            n = STREAM_BYTES - off;
        for (long i = 0; i < n; i++)
            buf[i] = pat(off + i);
        if (strm_write(fd, buf, (size_t)n) != n)
            break;
        off += n;
    }
    strm_close(fd);
    return NULL;
}

static void blocked_writer(int mods)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    for (int i = 0; i < mods; i++)
        CHECK_EQ(strm_ioctl(p[0], I_PUSH, "nullmod"), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, stream_writer, &p[0]), 0);
    unsigned char r[64];
    long got = 0, bad = 0;
    unsigned x = 7;
    for (;;) {
        x = x * 1103515245u + 12345u;
        ssize_t n = strm_read(p[1], r, 1 + (x >> 16) % sizeof(r));
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            bad += r[i] != pat(got + i);
        got += n;
    }
    pthread_join(t, NULL);
    CHECK_EQ(got, STREAM_BYTES);
    CHECK_EQ(bad, 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

static void bad_buffer(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_write(p[0], "abcdef", 6), 6);
    errno = 0;
    CHECK_EQ(strm_read(p[1], (void *)16, 3), -1);
    CHECK_EQ(errno, EFAULT);
    char b[8] = {0};
    CHECK_EQ(strm_read(p[1], b, sizeof(b)), 6);
    CHECK(memcmp(b, "abcdef", 6) == 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

int main(void)
{
    alarm(120); /* a hang fails */
    partial_reads();   /* R.1 */
    fill_and_drain();  /* R.2 */
    blocked_writer(0); /* R.2 */
    blocked_writer(1);
    bad_buffer();      /* R.3 */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
