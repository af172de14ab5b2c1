/* SPDX-License-Identifier: MIT */
/*
 * test_xpipe_direct.c -- one copy per side on a pipe split across processes
 * (issue 24 item 5; src/procs/sd_xpipe_direct.c, sd_xpipe_write.c
 * ust_xpipe_write; docs/STREAMHEAD.md "One copy per side between
 * processes").  The reader is a forked child; the parent writes.
 *
 *   D.1  a byte stream of every size 1..4200 (across a 4 KiB page), then
 *        sizes up to 128 KiB in steps of 997, 64 KiB exactly and around
 *        it, and writes the head cuts (300 000 bytes); every fifth message
 *        a putmsg with a control part (M_PROTO) between the plain writes.
 *        The child reads with read(2) in RPROTDAT mode with buffers of
 *        rotating sizes (1 byte .. 70 000): every byte arrives once, in
 *        order (control parts inline, where they were written).
 *   D.2  boundaries and bands with getmsg: plain writes, M_PROTO, band-1
 *        data and zero-length messages, 20 000 of them; the child takes
 *        each whole with getpmsg(MSG_ANY) and checks each band's sequence
 *        (nothing lost, duplicated or reordered per band), then reads a
 *        last run of plain writes with read(2).
 *   D.3  a read into a bad buffer fails EFAULT and takes nothing, a small
 *        one (the batched way) and one of 4 KiB (the direct way): the next
 *        read gets the message whole.
 *   D.4  O_NONBLOCK: a read of the empty ring fails EAGAIN; once data is
 *        written, strm_poll reports POLLIN and the read gets it.
 *   D.5  bursts with pauses (the reader falls asleep between them and is
 *        woken by the doorbell): 3000 bursts of 1..40 messages, 0..2 ms
 *        apart; every message counted, in order; once with reads of 64
 *        bytes (the batched way), once of 4 KiB (the direct way).
 *   D.6  one thread alternating read(2) and getmsg on the end while the
 *        writer pauses: 4000 messages, each whole, in order, none stuck.
 *   D.7  descriptors far ahead of their reader: while the child waits, the
 *        parent fills its head (70 000 bytes), then writes D7_NFD (100) rounds of
 *        plain data, an I_SENDFD of a memfd holding the round, an M_PROTO
 *        every third and a band-1 M_PROTO every fifth, then plain writes
 *        until the ring is full (EAGAIN).  The child then reads with
 *        read(2) (the direct way), getpmsg at EBADMSG and I_RECVFD at an
 *        M_PASSFP: every byte, descriptor and message once, in order, each
 *        step within 10 s.  Before the fix the bell's drain kept 64
 *        descriptors and closed the rest: the record of the 65th waited at
 *        the ring's front for ever (sd_xbell.c ust_xbell_drain).
 *   D.8  a reader that does not read while the writer sends D8_MAX
 *        descriptors: each I_SENDFD succeeds or, once the bell is full,
 *        fails EAGAIN having sent nothing (the writer stops at the first);
 *        the reader then gets every descriptor sent, in order, and the
 *        plain data behind them.  Before, the record went into the ring
 *        first: a descriptor refused by the full bell left a record with
 *        neither descriptor nor cancel, at which the reader stopped.
 *   D.9  which way a read goes (XD_MIN_READ): 300 records of 8 bytes read
 *        with 8-byte reads take none the direct way (the read service
 *        procedure brings them up in batches); 300 more, written one by
 *        one, 0.2 ms apart, while the reader waits in 4 KiB reads, come the
 *        direct way (some at least: a record the service procedure brought
 *        up meanwhile is read from the head, as it must); every record
 *        once, in order.
 *   Every child ends with no block outstanding and no doorbell rescued.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "sd_xpipe.h"
#include "sthead.h"

#define CHILD_MS 60000

static int fds[2];
static int sync_pipe[2]; /* a socket pair: the two processes' steps in D.3-D.4 */

static int child_end(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(ust_pipe_bell_rescued(), 0);
    CHECK_NO_BLOCKS();
    return FK_CHILD_FAILED();
}

/* Byte i of message k. */
static unsigned char pat(uint32_t k, size_t i)
{
    return (unsigned char)(k * 131u + i * 7u + (i >> 9));
}

/* ---- D.1 ---------------------------------------------------------------- */
#define D1_SMALL 4200
static size_t d1_size(uint32_t k, uint32_t *count)
{
    static const size_t extra[] = {65535, 65536, 65537, 131071, 131072, 300000};
    uint32_t big = (131072 - D1_SMALL) / 997 + 1;
    *count = D1_SMALL + big + (uint32_t)(sizeof(extra) / sizeof(extra[0]));
    if (k < D1_SMALL)
        return k + 1;
    if (k < D1_SMALL + big)
        return D1_SMALL + (size_t)(k - D1_SMALL) * 997;
    return extra[k - D1_SMALL - big];
}

static unsigned char *d1_stream(size_t *len)
{
    uint32_t count;
    size_t total = 0;
    d1_size(0, &count);
    for (uint32_t k = 0; k < count; k++)
        total += d1_size(k, &count) + (k % 5 == 0 ? 4 : 0);
    unsigned char *s = malloc(total), *p = s;
    if (s == NULL)
        return NULL;
    for (uint32_t k = 0; k < count; k++) {
        if (k % 5 == 0) {
            memcpy(p, &k, 4);
            p += 4;
        }
        size_t n = d1_size(k, &count);
        for (size_t i = 0; i < n; i++)
            *p++ = pat(k, i);
    }
    *len = total;
    return s;
}

static int d1_child(void *arg)
{
    (void)arg;
    static const size_t bufs[] = {1, 100, 4096, 70000, 7, 65536, 333};
    size_t len = 0, got = 0;
    unsigned char *want = d1_stream(&len), *buf = malloc(70000);
    strm_close(fds[0]);
    CHECK(want != NULL && buf != NULL);
    CHECK_EQ(strm_ioctl(fds[1], I_SRDOPT, (void *)(long)(RNORM | RPROTDAT)), 0);
    long bad = 0;
    for (int i = 0; want != NULL && buf != NULL; i++) {
        ssize_t n = strm_read(fds[1], buf, bufs[i % 7]);
        if (n <= 0) {
            CHECK_EQ(n, 0);
            break;
        }
        if (got + (size_t)n > len || memcmp(buf, want + got, (size_t)n) != 0)
            bad++;
        got += (size_t)n;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(got, len);
    free(want);
    free(buf);
    strm_close(fds[1]);
    return child_end();
}

static void test_d1(void)
{
    uint32_t count;
    unsigned char *buf = malloc(300000);
    CHECK(buf != NULL);
    CHECK_EQ(strm_pipe(fds), 0);
    pid_t pid = fk_start(d1_child, NULL);
    strm_close(fds[1]);
    d1_size(0, &count);
    for (uint32_t k = 0; k < count && buf != NULL; k++) {
        size_t n = d1_size(k, &count);
        for (size_t i = 0; i < n; i++)
            buf[i] = pat(k, i);
        if (k % 5 == 0) {
            struct strbuf c = {0, 4, (char *)&k}, d = {0, (int)n, (char *)buf};
            CHECK_EQ(putmsg(fds[0], &c, &d, 0), 0);
        } else {
            CHECK_EQ(strm_write(fds[0], buf, n), (ssize_t)n);
        }
    }
    strm_close(fds[0]);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    free(buf);
}

/* ---- D.2 ---------------------------------------------------------------- */
#define D2_N 20000
/* Message k: kind k % 4: 0 plain write, 1 M_PROTO (putmsg), 2 band 1 data,
 * 3 zero-length data.  Its data: 4 bytes k then k % 300 pattern bytes. */
/* The band-0 message after k (kinds 0, 1, 3). */
static uint32_t d2_next0(uint32_t k)
{
    k++;
    return k % 4 == 2 ? k + 1 : k;
}

static int d2_child(void *arg)
{
    (void)arg;
    char cb[16], db[512];
    uint32_t e0 = 0, e1 = 2; /* the next expected of band 0 and band 1 */
    long bad = 0, zero = 0;
    strm_close(fds[0]);
    for (int i = 0; i < D2_N; i++) {
        struct strbuf c = {sizeof(cb), 0, cb}, d = {sizeof(db), 0, db};
        int band = 0, flags = MSG_ANY;
        if (getpmsg(fds[1], &c, &d, &band, &flags) != 0) {
            bad++;
            break;
        }
        if (d.len == 0) { /* zero-length: kind 3, band 0, no control part */
            zero++;
            if (e0 % 4 != 3 || band != 0 || c.len != -1)
                bad++;
            e0 = d2_next0(e0);
            continue;
        }
        uint32_t k;
        memcpy(&k, db, 4);
        if (band == 1) {
            if (k != e1)
                bad++;
            e1 = k + 4;
        } else {
            if (k != e0 || (k % 4 == 1) != (c.len == 4) || k % 4 == 3)
                bad++;
            e0 = d2_next0(k);
        }
        if (d.len != 4 + (int)(k % 300))
            bad++;
        for (int j = 4; j < d.len; j++)
            if ((unsigned char)db[j] != pat(k, (size_t)j))
                bad++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(zero, D2_N / 4);
    /* then plain writes with read(2) */
    uint32_t v, want = 0;
    while (want < 5000 && strm_read(fds[1], &v, 4) == 4) {
        if (v != want)
            bad++;
        want++;
    }
    CHECK_EQ(want, 5000);
    CHECK_EQ(bad, 0);
    strm_close(fds[1]);
    return child_end();
}

static void test_d2(void)
{
    char buf[512];
    CHECK_EQ(strm_pipe(fds), 0);
    pid_t pid = fk_start(d2_child, NULL);
    strm_close(fds[1]);
    for (uint32_t k = 0; k < D2_N; k++) {
        size_t n = 4 + k % 300;
        memcpy(buf, &k, 4);
        for (size_t j = 4; j < n; j++)
            buf[j] = (char)pat(k, j);
        struct strbuf c = {0, 4, "prot"}, d = {0, (int)n, buf}, z = {0, 0, buf};
        switch (k % 4) {
        case 0:
            CHECK_EQ(strm_write(fds[0], buf, n), (ssize_t)n);
            break;
        case 1:
            CHECK_EQ(putmsg(fds[0], &c, &d, 0), 0);
            break;
        case 2:
            CHECK_EQ(putpmsg(fds[0], NULL, &d, 1, MSG_BAND), 0);
            break;
        default:
            CHECK_EQ(putmsg(fds[0], NULL, &z, 0), 0);
            break;
        }
    }
    for (uint32_t v = 0; v < 5000; v++)
        CHECK_EQ(strm_write(fds[0], &v, 4), 4);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);
}

/* ---- D.3, D.4 ----------------------------------------------------------- */
static int d34_child(void *arg)
{
    (void)arg;
    char buf[64], c;
    strm_close(fds[0]);
    /* D.4: empty, non-blocking */
    int fl = strm_fcntl(fds[1], F_GETFL);
    CHECK_EQ(strm_fcntl(fds[1], F_SETFL, fl | O_NONBLOCK), 0);
    errno = 0;
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(write(sync_pipe[1], "r", 1), 1); /* ready: write "first" */
    struct pollfd p = {fds[1], POLLIN, 0};
    CHECK_EQ(strm_poll(&p, 1, 10000), 1);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "first", 5) == 0);
    CHECK_EQ(strm_fcntl(fds[1], F_SETFL, fl), 0);
    /* D.3: a bad buffer takes nothing */
    CHECK_EQ(write(sync_pipe[1], "r", 1), 1); /* write "second" */
    CHECK_EQ(read(sync_pipe[1], &c, 1), 1);  /* written */
    errno = 0;
    CHECK_EQ(strm_read(fds[1], (void *)16, 6), -1); /* below XD_MIN_READ */
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(strm_read(fds[1], (void *)16, 4096), -1); /* the direct way */
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 6);
    CHECK(memcmp(buf, "second", 6) == 0);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 0); /* the parent closed */
    strm_close(fds[1]);
    return child_end();
}

static void test_d34(void)
{
    char c;
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sync_pipe), 0);
    pid_t pid = fk_start(d34_child, NULL);
    strm_close(fds[1]);
    CHECK_EQ(read(sync_pipe[0], &c, 1), 1);
    CHECK_EQ(strm_write(fds[0], "first", 5), 5);
    CHECK_EQ(read(sync_pipe[0], &c, 1), 1);
    CHECK_EQ(strm_write(fds[0], "second", 6), 6);
    CHECK_EQ(write(sync_pipe[0], "w", 1), 1);
    strm_close(fds[0]);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    close(sync_pipe[0]);
    close(sync_pipe[1]);
}

/* ---- D.5 ---------------------------------------------------------------- */
#define D5_BURSTS 3000
static int d5_child(void *arg)
{
    size_t rsize = *(const size_t *)arg; /* bytes per read */
    uint32_t v[1024], want = 0;
    long bad = 0;
    strm_close(fds[0]);
    for (;;) {
        ssize_t n = strm_read(fds[1], v, rsize);
        if (n <= 0)
            break;
        if (n % 4 != 0)
            bad++;
        for (ssize_t i = 0; i < n / 4; i++)
            if (v[i] != want++)
                bad++;
    }
    CHECK_EQ(bad, 0);
    uint32_t total = 0;
    for (uint32_t b = 0; b < D5_BURSTS; b++)
        total += 1 + b % 40;
    CHECK_EQ(want, total);
    strm_close(fds[1]);
    return child_end();
}

static void test_d5(size_t rsize)
{
    uint32_t seq = 0;
    CHECK_EQ(strm_pipe(fds), 0);
    pid_t pid = fk_start(d5_child, &rsize);
    strm_close(fds[1]);
    for (uint32_t b = 0; b < D5_BURSTS; b++) {
        for (uint32_t i = 0; i < 1 + b % 40; i++, seq++)
            CHECK_EQ(strm_write(fds[0], &seq, 4), 4);
        if (b % 3)
            fk_sleep_ms(b % 3 == 1 ? 0 : 1);
    }
    strm_close(fds[0]);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
}

/* ---- D.6 ---------------------------------------------------------------- */
/* One thread alternating read(2) and getmsg on one end while the writer
 * pauses now and then: a read's note for its wait (sd_xpipe_direct.c) must
 * never send the getmsg after it to sleep with data in the ring. */
#define D6_N 4000
static int d6_child(void *arg)
{
    (void)arg;
    uint32_t v, want = 0;
    long bad = 0;
    strm_close(fds[0]);
    while (want < D6_N) {
        if (want % 2 == 0) {
            if (strm_read(fds[1], &v, 4) != 4)
                break;
        } else {
            struct strbuf d = {4, 0, (char *)&v};
            int flags = 0;
            if (getmsg(fds[1], NULL, &d, &flags) != 0 || d.len != 4)
                break;
        }
        if (v != want)
            bad++;
        want++;
    }
    CHECK_EQ(want, D6_N);
    CHECK_EQ(bad, 0);
    strm_close(fds[1]);
    return child_end();
}

static void test_d6(void)
{
    CHECK_EQ(strm_pipe(fds), 0);
    pid_t pid = fk_start(d6_child, NULL);
    strm_close(fds[1]);
    for (uint32_t k = 0; k < D6_N; k++) {
        CHECK_EQ(strm_write(fds[0], &k, 4), 4);
        if (k % 7 == 0)
            fk_sleep_ms(k % 3 == 0); /* 0 or 1 ms: the reader runs dry */
    }
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);
}

/* ---- D.7 ---------------------------------------------------------------- */
#define D7_NFD 100   /* descriptors in flight: more than the bell's queue (64) */
#define D7_HEAD 70000 /* fills the child's head (64 KiB high-water mark) */
#define D7_STEP_MS 10000

/* Plain band-0 data of round k (phase 1: k < D7_NFD; phase 2 after). */
static size_t d7_len(uint32_t k)
{
    return k < D7_NFD ? 100 + k % 50 : 1000;
}

/* The byte stream of plain data: the head's fill, then the rounds. */
static unsigned char d7_byte(uint64_t off)
{
    return (unsigned char)(off * 2654435761u >> 13);
}

static int d7_child(void *arg)
{
    (void)arg;
    char c, ctl[8], buf[4096];
    uint32_t n2 = 0, proto = 0, band = 0, fdk = 0;
    uint64_t off = 0, total = D7_HEAD;
    long bad = 0;
    strm_close(fds[0]);
    /* A look makes the end live: its head takes what it can meanwhile. */
    struct pollfd p0 = {fds[1], POLLIN, 0};
    CHECK(strm_poll(&p0, 1, 0) >= 0);
    /* Wait until the parent has filled everything: nothing read before. */
    CHECK_EQ(read(sync_pipe[1], &c, 1), 1);
    CHECK_EQ(read(sync_pipe[1], &n2, sizeof(n2)), (ssize_t)sizeof(n2));
    for (uint32_t k = 0; k < D7_NFD + n2; k++)
        total += d7_len(k);
    /* The writer stays until everything is read: the direct way is the
     * reader's only while the peer side is there. */
    while (off < total || fdk < D7_NFD || proto < (D7_NFD + 2) / 3 || band < (D7_NFD + 4) / 5) {
        struct pollfd p = {fds[1], POLLIN, 0};
        if (!CHECK_EQ(strm_poll(&p, 1, D7_STEP_MS), 1)) {
            fprintf(stderr, "D.7: stuck at byte %llu of %llu, descriptor %u, proto %u\n",
                    (unsigned long long)off, (unsigned long long)total, fdk, proto);
            break;
        }
        ssize_t n = strm_read(fds[1], buf, sizeof(buf));
        if (!CHECK(n != 0)) /* no end of file yet */
            break;
        if (n > 0) {
            for (ssize_t i = 0; i < n; i++)
                bad += (unsigned char)buf[i] != d7_byte(off + (uint64_t)i);
            off += (uint64_t)n;
            continue;
        }
        if (!CHECK_EQ(errno, EBADMSG))
            break;
        struct strbuf cb = {(int)sizeof(ctl), 0, ctl}, db = {(int)sizeof(buf), 0, buf};
        int band_ = 0, flags = MSG_ANY;
        if (getpmsg(fds[1], &cb, &db, &band_, &flags) < 0) {
            struct strrecvfd rf;
            if (!CHECK_EQ(errno, EBADMSG) || !CHECK_EQ(strm_ioctl(fds[1], I_RECVFD, &rf), 0))
                break;
            uint32_t k = UINT32_MAX;
            CHECK_EQ(pread(rf.fd, &k, sizeof(k), 0), (ssize_t)sizeof(k));
            bad += k != fdk++;
            close(rf.fd);
            continue;
        }
        uint32_t k = UINT32_MAX;
        if (!CHECK_EQ(cb.len, 4) || !CHECK_EQ(db.len, 8))
            break;
        memcpy(&k, ctl, 4);
        if (band_ == 1)
            bad += k != band++ * 5;
        else
            bad += k != proto++ * 3;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(off, total);
    CHECK_EQ(fdk, D7_NFD);
    CHECK_EQ(proto, (D7_NFD + 2) / 3);
    CHECK_EQ(band, (D7_NFD + 4) / 5);
    CHECK_EQ(write(sync_pipe[1], "d", 1), 1);
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 0); /* then end of file */
    strm_close(fds[1]);
    return child_end();
}

/* One message of the writer's, non-blocking; while the ring is full, wait
 * for room up to 500 ms (the child's head takes what it can before its
 * reader starts).  kind: 0 plain data of length len at stream offset *off,
 * 1 an I_SENDFD of a memfd holding k, 2 an M_PROTO (control k) in band
 * len.  0 sent, 1 no room came (nothing sent), -1 failed. */
static int d7_op(int kind, uint32_t k, size_t len, uint64_t *off)
{
    static unsigned char b[D7_HEAD / 2];
    int m = -1, r;
    if (kind == 0) {
        for (size_t i = 0; i < len; i++)
            b[i] = d7_byte(*off + i);
    } else if (kind == 1) {
        m = memfd_create("d7", MFD_CLOEXEC);
        if (!CHECK(m >= 0) || !CHECK_EQ(pwrite(m, &k, sizeof(k), 0), (ssize_t)sizeof(k)))
            return -1;
    }
    for (int tries = 0;; tries++) {
        struct strbuf cb = {4, 4, (char *)&k}, db = {8, 8, "12345678"};
        if (kind == 0)
            r = strm_write(fds[0], b, len) == (ssize_t)len ? 0 : -1;
        else if (kind == 1)
            r = strm_ioctl(fds[0], I_SENDFD, m);
        else
            r = putpmsg(fds[0], &cb, &db, (int)len, MSG_BAND);
        if (r == 0 || errno != EAGAIN)
            break;
        struct pollfd p = {fds[0], POLLOUT, 0};
        if (tries == 5 || strm_poll(&p, 1, 500) != 1) {
            r = 1;
            break;
        }
    }
    if (m >= 0)
        close(m);
    if (r == 0 && kind == 0)
        *off += len;
    return r;
}

static void test_d7(void)
{
    uint64_t off = 0;
    uint32_t k, n2 = 0;
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sync_pipe), 0);
    pid_t pid = fk_start(d7_child, NULL);
    strm_close(fds[1]);
    close(sync_pipe[1]); /* the child's: a child that died reads as end of file */
    CHECK_EQ(strm_fcntl(fds[0], F_SETFL, strm_fcntl(fds[0], F_GETFL) | O_NONBLOCK), 0);
    CHECK_EQ(d7_op(0, 0, D7_HEAD / 2, &off), 0);
    CHECK_EQ(d7_op(0, 0, D7_HEAD / 2, &off), 0);
    for (k = 0; k < D7_NFD && check_nfailed == 0; k++) {
        CHECK_EQ(d7_op(0, k, d7_len(k), &off), 0);
        CHECK_EQ(d7_op(1, k, 0, &off), 0);
        if (k % 3 == 0)
            CHECK_EQ(d7_op(2, k, 0, &off), 0);
        if (k % 5 == 0)
            CHECK_EQ(d7_op(2, k, 1, &off), 0);
    }
    /* Then plain data until the ring is full. */
    int r = 0;
    while (check_nfailed == 0 && n2 < 100000 &&
           (r = d7_op(0, 0, d7_len(D7_NFD + n2), &off)) == 0)
        n2++;
    CHECK_EQ(r, 1);
    CHECK_EQ(write(sync_pipe[0], "g", 1), 1);
    CHECK_EQ(write(sync_pipe[0], &n2, sizeof(n2)), (ssize_t)sizeof(n2));
    char c = 0;
    CHECK_EQ(read(sync_pipe[0], &c, 1), 1); /* the child has read everything */
    strm_close(fds[0]);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    close(sync_pipe[0]);
}

/* ---- D.8 ---------------------------------------------------------------- */
#define D8_MAX 2000

static int d8_child(void *arg)
{
    (void)arg;
    char c, buf[16];
    uint32_t sent = 0, got = 0;
    long bad = 0;
    strm_close(fds[0]);
    struct pollfd p0 = {fds[1], POLLIN, 0};
    CHECK(strm_poll(&p0, 1, 0) >= 0); /* live: its service procedure runs */
    CHECK_EQ(read(sync_pipe[1], &c, 1), 1);
    CHECK_EQ(read(sync_pipe[1], &sent, sizeof(sent)), (ssize_t)sizeof(sent));
    for (;;) {
        struct pollfd p = {fds[1], POLLIN, 0};
        if (!CHECK_EQ(strm_poll(&p, 1, D7_STEP_MS), 1)) {
            fprintf(stderr, "D.8: stuck at descriptor %u of %u\n", got, sent);
            break;
        }
        ssize_t n = strm_read(fds[1], buf, sizeof(buf));
        if (n > 0) { /* the plain data behind the descriptors */
            CHECK_EQ(n, 3);
            CHECK(memcmp(buf, "end", 3) == 0);
            break;
        }
        struct strrecvfd rf;
        if (!CHECK_EQ(n, -1) || !CHECK_EQ(errno, EBADMSG) ||
            !CHECK_EQ(strm_ioctl(fds[1], I_RECVFD, &rf), 0))
            break;
        uint32_t k = UINT32_MAX;
        CHECK_EQ(pread(rf.fd, &k, sizeof(k), 0), (ssize_t)sizeof(k));
        bad += k != got++;
        close(rf.fd);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(got, sent);
    CHECK_EQ(write(sync_pipe[1], "d", 1), 1);
    strm_close(fds[1]);
    return child_end();
}

static void test_d8(void)
{
    uint32_t k;
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sync_pipe), 0);
    pid_t pid = fk_start(d8_child, NULL);
    strm_close(fds[1]);
    close(sync_pipe[1]);
    for (k = 0; k < D8_MAX; k++) {
        int m = memfd_create("d8", MFD_CLOEXEC);
        CHECK(m >= 0);
        CHECK_EQ(pwrite(m, &k, sizeof(k), 0), (ssize_t)sizeof(k));
        int r = strm_ioctl(fds[0], I_SENDFD, m);
        int e = errno;
        close(m);
        if (r != 0) {
            CHECK_EQ(e, EAGAIN); /* the bell is full: nothing sent */
            break;
        }
    }
    CHECK(k > 64); /* more than the reader's bell queue holds */
    fprintf(stderr, "D.8: %u descriptors in flight, then EAGAIN\n", k);
    CHECK_EQ(strm_write(fds[0], "end", 3), 3);
    CHECK_EQ(write(sync_pipe[0], "g", 1), 1);
    CHECK_EQ(write(sync_pipe[0], &k, sizeof(k)), (ssize_t)sizeof(k));
    char c = 0;
    CHECK_EQ(read(sync_pipe[0], &c, 1), 1);
    strm_close(fds[0]);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    close(sync_pipe[0]);
}

/* ---- D.9 ---------------------------------------------------------------- */
#define D9_N 300
/* Read D9_N 8-byte records (sequence numbers from *want) with reads of
 * rsize bytes; returns the records out of order or short. */
static long d9_read(size_t rsize, uint64_t *want)
{
    uint64_t v[512];
    long bad = 0;
    for (int got = 0; got < D9_N;) {
        ssize_t n = strm_read(fds[1], v, rsize);
        if (n <= 0 || n % 8 != 0)
            return bad + 1;
        for (ssize_t i = 0; i < n / 8; i++, got++)
            if (v[i] != (*want)++)
                bad++;
    }
    return bad;
}

static int d9_child(void *arg)
{
    (void)arg;
    char c;
    uint64_t want = 0;
    strm_close(fds[0]);
    CHECK_EQ(read(sync_pipe[1], &c, 1), 1); /* the first records are written */
    unsigned long before = ust_xpipe_direct_reads();
    CHECK_EQ(d9_read(8, &want), 0);
    CHECK_EQ(ust_xpipe_direct_reads(), before); /* small reads: the batched way */
    CHECK_EQ(write(sync_pipe[1], "r", 1), 1); /* then waits in a read */
    CHECK_EQ(d9_read(4096, &want), 0);
    CHECK(ust_xpipe_direct_reads() > before); /* 4 KiB reads: the direct way */
    CHECK_EQ(strm_read(fds[1], &c, 1), 0);
    strm_close(fds[1]);
    return child_end();
}

static void test_d9(void)
{
    char c;
    uint64_t seq = 0;
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sync_pipe), 0);
    pid_t pid = fk_start(d9_child, NULL);
    strm_close(fds[1]);
    for (int i = 0; i < D9_N; i++, seq++)
        CHECK_EQ(strm_write(fds[0], &seq, 8), 8);
    CHECK_EQ(write(sync_pipe[0], "w", 1), 1);
    CHECK_EQ(read(sync_pipe[0], &c, 1), 1); /* the first are read */
    fk_sleep_ms(20);                        /* the reader waits in its read */
    for (int i = 0; i < D9_N; i++, seq++) {
        CHECK_EQ(strm_write(fds[0], &seq, 8), 8);
        nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    strm_close(fds[0]);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    close(sync_pipe[0]);
    close(sync_pipe[1]);
}

int main(void)
{
    test_d1();
    test_d2();
    test_d34();
    test_d5(64);
    test_d5(4096);
    test_d6();
    test_d7();
    test_d8();
    test_d9();
    CHECK_EQ(ust_pipe_bell_rescued(), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
