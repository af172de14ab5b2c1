/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_hold_stress.c -- write holding (SNDHOLD) under load: writer
 * threads writing 1..2048-byte writes (half of them small enough to be
 * held) into pipes whose readers read in every way the head offers, each
 * byte checked against its position in the stream and every byte counted.
 * docs/STREAMHEAD.md "Hold and read-fill, one copy"; the conformance cases
 * are test_pipe_hold.c.
 *
 *   S.1 four pipes at once, each one writer thread and one reader thread:
 *       (a) RFILL | RMREAD, 64 KiB reads; (b) RNORM | RMREAD, reads of
 *       random sizes; (c) RNORM, no M_READ (the timer and full holds only),
 *       getmsg with a 3000-byte buffer (MOREDATA leaves the rest);
 *       (d) RFILL without M_READ, 5000-byte reads.  Writers pause now and
 *       then so the timer sends holds too, and mix in putmsg.  Every reader
 *       sees exactly the bytes written, in order, then end of file.
 *   S.2 no message block outstanding afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

#ifndef STRESS_BYTES
#define STRESS_BYTES (3u << 20) /* per pipe */
#endif

static unsigned char pat(size_t i)
{
    return (unsigned char)(i * 131 + i / 251 + 7);
}

struct pair {
    int fds[2];
    int kind; /* 'a'..'d' as above */
    size_t written, read;
    int bad;  /* first bad offset + 1 */
    unsigned seed;
};

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void *writer(void *arg)
{
    struct pair *p = arg;
    unsigned char *buf = malloc(2048);
    size_t off = 0;
    unsigned n = 0;
    while (buf && off < STRESS_BYTES) {
        unsigned r = rnd(&p->seed);
        size_t k = (r & 1) ? 1 + (r >> 1) % 128 : 1 + (r >> 1) % 2048;
        if (k > STRESS_BYTES - off)
            k = STRESS_BYTES - off;
        for (size_t i = 0; i < k; i++)
            buf[i] = pat(off + i);
        if ((r >> 4) % 17 == 0) { /* putmsg: one message, never held */
            struct strbuf d = {.len = (int)k, .buf = (char *)buf};
            if (!CHECK_EQ(putmsg(p->fds[1], NULL, &d, 0), 0))
                break;
        } else if (!CHECK_EQ(strm_write(p->fds[1], buf, k), (long)k)) {
            break;
        }
        off += k;
        if (++n % 700 == 0)
            usleep(3000); /* idle: the hold timer sends what is held */
    }
    p->written = off;
    free(buf);
    CHECK_EQ(strm_close(p->fds[1]), 0);
    return NULL;
}

static int check_bytes(struct pair *p, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(p->read + i)) {
            if (!p->bad)
                p->bad = (int)(p->read + i + 1);
            return -1;
        }
    p->read += n;
    return 0;
}

static void *reader(void *arg)
{
    struct pair *p = arg;
    static const size_t bufsz = 65536;
    unsigned char *buf = malloc(bufsz);
    unsigned seed = 0x5a5au + (unsigned)p->kind; /* p->seed is the writer's */
    int fd = p->fds[0];
    if (!buf)
        return NULL;
    switch (p->kind) {
    case 'a':
        CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RNORM | RFILL | RMREAD), 0);
        break;
    case 'b':
        CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RNORM | RMREAD), 0);
        break;
    case 'd':
        CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RNORM | RFILL), 0);
        break;
    default:
        break;
    }
    for (;;) {
        ssize_t r;
        if (p->kind == 'c') {
            struct strbuf d = {.maxlen = 3000, .buf = (char *)buf};
            int fl = 0;
            int g = getmsg(fd, NULL, &d, &fl);
            if (g < 0) {
                CHECK_EQ(errno, 0);
                break;
            }
            r = d.len > 0 ? d.len : 0;
            if (r == 0 && g == 0)
                break; /* hang-up: both lengths 0 */
        } else {
            size_t want = p->kind == 'a' ? bufsz : p->kind == 'd' ? 5000 : 1 + rnd(&seed) % 6000;
            r = strm_read(fd, buf, want);
            if (r < 0) {
                CHECK_EQ(errno, 0);
                break;
            }
            if (r == 0)
                break;
            /* a fill read returns its whole count unless the end came */
            if (p->kind == 'a' || p->kind == 'd')
                CHECK((size_t)r == want || p->read + (size_t)r == STRESS_BYTES);
        }
        if (check_bytes(p, buf, (size_t)r) != 0)
            break;
    }
    free(buf);
    CHECK_EQ(strm_close(fd), 0);
    return NULL;
}

int main(void)
{
    alarm(300); /* a hang fails the test */
    struct pair pairs[4];
    pthread_t wt[4], rt[4];
    memset(pairs, 0, sizeof(pairs));
    for (int i = 0; i < 4; i++) {
        pairs[i].kind = 'a' + i;
        pairs[i].seed = 12345u + 777u * (unsigned)i;
        CHECK_EQ(strm_pipe(pairs[i].fds), 0);
        CHECK_EQ(strm_ioctl(pairs[i].fds[1], I_SWROPT, SNDHOLD | SNDPIPE), 0);
    }
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(pthread_create(&rt[i], NULL, reader, &pairs[i]), 0);
        CHECK_EQ(pthread_create(&wt[i], NULL, writer, &pairs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(wt[i], NULL);
        pthread_join(rt[i], NULL);
        CHECK_EQ(pairs[i].bad, 0);
        CHECK_EQ(pairs[i].written, STRESS_BYTES);
        CHECK_EQ(pairs[i].read, pairs[i].written);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
