/* SPDX-License-Identifier: MIT */
/*
 * test_xring.c -- the shared-memory message rings (src/procs/xring.c), one
 * thread: the contract of each call in xring.h, and the checks of what is
 * read from the mapping.  Threads, fork() and a dead lock holder are in
 * test_xring_stress.c.
 *
 * The test maps a channel's memfd a second time (xr_view) to look at and
 * scribble on the shared header and records (layout: xring_layout.h), as a
 * buggy or hostile peer would.
 *
 * Cases:
 *   1 xring_create/xring_attach: geometry checks and rounding; attach refuses
 *     a bad fd, a non-memfd, a wrong size, an unsealed file, a bad magic,
 *     version or geometry (-EINVAL); an attached handle shares the rings
 *   2 put/peek/take round trip: ctl and data from several iovecs, type,
 *     band, flags, aux; -EINVAL for a length mismatch, -EAGAIN for a buffer
 *     too small (nothing taken), -ENODATA / 0 when empty
 *   3 zero-length messages, control only, data only
 *   4 wrap-around: records of many sizes (headers split too), every byte
 *     checked, with one and with many records queued
 *   5 flow control: -EAGAIN at hiwat (the record crossing it accepted),
 *     -EAGAIN for want of room below hiwat, -EMSGSIZE
 *   6 arming: XRING_WAKE_READER / XRING_WAKE_WRITER exactly on the edges,
 *     once per arming; the doorbell, xring_wait (changed word, timeout,
 *     -EINTR)
 *   7 xring_shut: -EPIPE for puts, what is queued is still taken, arming a
 *     shut ring says not to sleep
 *   8 a scribbled mapping: tail far ahead, misaligned, head past tail, less
 *     than a header queued, a bogus record length, a length crossing tail,
 *     a huge ctl_len, the shared broken flag: -EIO from every call, no
 *     crash; the other ring still works; an attached handle sees it broken
 *   9 xring_take_batch: records in order across the wrap, control then data
 *     back to back; stops at max, at the buffer's end, at a record the
 *     filter refuses (left in the ring); reports XRING_WAKE_WRITER once on
 *     the lowat edge; -EIO on a scribbled record (nothing taken)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "xring.h"
#include "xring_layout.h"
#include "xring_view.h"

static void xr_unview(struct view *v)
{
    if (v->base)
        munmap(v->base, v->len);
}

/* The byte i of message seq. */
static unsigned char pat(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 131u + i * 7u + (i >> 8));
}

static int put_pat(struct xring_chan *ch, int d, uint32_t seq, uint32_t ctl_len, uint32_t data_len)
{
    static unsigned char buf[70000];
    for (size_t i = 0; i < (size_t)ctl_len + data_len; i++)
        buf[i] = pat(seq, i);
    struct xring_msg m = {.type = 1, .ctl_len = ctl_len, .data_len = data_len, .aux = seq};
    struct iovec iov = {buf, (size_t)ctl_len + data_len};
    return xring_put(ch, d, &m, &iov, 1);
}

/* Take one message and check it was put_pat(seq, ...); 1 if all good. */
static int take_pat(struct xring_chan *ch, int d, uint32_t seq, uint32_t ctl_len, uint32_t data_len)
{
    static unsigned char c[70000], b[70000];
    struct xring_msg m;
    int rc = xring_take(ch, d, &m, c, sizeof(c), b, sizeof(b));
    if (rc < 0 || m.aux != seq || m.ctl_len != ctl_len || m.data_len != data_len) {
        fprintf(stderr, "take_pat: rc %d seq %u/%u ctl %u/%u data %u/%u\n", rc, m.aux, seq,
                m.ctl_len, ctl_len, m.data_len, data_len);
        return 0;
    }
    for (size_t i = 0; i < ctl_len; i++)
        if (c[i] != pat(seq, i))
            return 0;
    for (size_t i = 0; i < data_len; i++)
        if (b[i] != pat(seq, ctl_len + i))
            return 0;
    return 1;
}

/* 1 */
static void test_create_attach(void)
{
    struct xring_chan *ch = NULL, *ch2 = NULL;

    CHECK_EQ(xring_create((64u << 20) + 1, 100, 10, &ch), -EINVAL);
    CHECK_EQ(xring_create(4096, 100, 100, &ch), -EINVAL);
    CHECK_EQ(xring_create(4096, 4097, 10, &ch), -EINVAL);
    CHECK_EQ(xring_create(4096, 100, 10, NULL), -EINVAL);
    CHECK_EQ(xring_create(5000, 8192, 10, &ch), 0); /* rounded up to 8192 */
    struct view v = xr_view(ch);
    CHECK(v.h != NULL);
    CHECK_EQ(v.h->h_ring_bytes, 8192);
    CHECK_EQ(v.len, XRING_HDR_BYTES + 2 * 8192);
    CHECK_EQ(fcntl(xring_fd(ch), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

    /* Bad fds, non-memfds, wrong size, unsealed. */
    CHECK_EQ(xring_attach(-1, &ch2), -EINVAL);
    int fd = memfd_create("t", MFD_CLOEXEC);
    close(fd);
    CHECK_EQ(xring_attach(fd, &ch2), -EINVAL); /* closed */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(xring_attach(p[0], &ch2), -EINVAL);
    close(p[0]);
    close(p[1]);
    fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    CHECK_EQ(ftruncate(fd, XRING_HDR_BYTES + 2 * 8192), 0);
    void *copy = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(copy != MAP_FAILED);
    memcpy(copy, v.h, 4096);
    munmap(copy, 4096);
    CHECK_EQ(xring_attach(fd, &ch2), -EINVAL); /* not sealed */
    CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    CHECK_EQ(xring_attach(fd, &ch2), 0); /* a faithful copy is a channel */
    xring_destroy(ch2);
    close(fd);
    fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    CHECK_EQ(ftruncate(fd, XRING_HDR_BYTES + 2 * 8192 + 8), 0);
    CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    CHECK_EQ(xring_attach(fd, &ch2), -EINVAL); /* wrong size */
    close(fd);

    /* Bad header fields, one at a time. */
    uint32_t *fields[] = {&v.h->h_magic, &v.h->h_version, &v.h->h_hdr_bytes, &v.h->h_ring_bytes,
                          &v.h->h_hiwat, &v.h->h_lowat};
    uint32_t bad[] = {0x12345678, XRING_VERSION + 1, 8192, 4096, 8193, 8192};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint32_t save = *fields[i];
        *fields[i] = bad[i];
        CHECK_EQ(xring_attach(xring_fd(ch), &ch2), -EINVAL);
        *fields[i] = save;
    }
    v.h->h_total += 4096;
    CHECK_EQ(xring_attach(xring_fd(ch), &ch2), -EINVAL);
    v.h->h_total -= 4096;

    /* A good attach shares the rings, in both directions. */
    CHECK_EQ(xring_attach(xring_fd(ch), &ch2), 0);
    CHECK_NE(xring_fd(ch2), xring_fd(ch));
    CHECK(put_pat(ch, 0, 7, 3, 100) >= 0);
    CHECK(put_pat(ch2, 1, 8, 0, 5) >= 0);
    CHECK(take_pat(ch2, 0, 7, 3, 100));
    CHECK(take_pat(ch, 1, 8, 0, 5));
    /* Geometry scribbled after attach changes nothing: the handle has a copy. */
    v.h->h_ring_bytes = 1u << 30;
    v.h->h_hiwat = 1;
    CHECK(put_pat(ch2, 0, 9, 0, 3000) >= 0);
    CHECK(put_pat(ch2, 0, 10, 0, 3000) >= 0);
    CHECK(take_pat(ch, 0, 9, 0, 3000));
    CHECK(take_pat(ch, 0, 10, 0, 3000));
    xring_destroy(ch2);
    xr_unview(&v);
    xring_destroy(ch);
    xring_destroy(NULL);
}

/* 2 */
static void test_roundtrip(void)
{
    struct xring_chan *ch;
    char ctl[5] = "abcd", c[16], d[16];
    struct xring_msg m = {.type = 0x81, .band = 7, .flags = 0xbeef, .ctl_len = 4,
                          .data_len = 11, .aux = 0xdeadbeef};
    struct iovec iov[3] = {{ctl, 2}, {ctl + 2, 2}, {"hello world", 11}};
    struct xring_msg got;

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    CHECK_EQ(xring_peek(ch, 0, &got), 0);
    CHECK_EQ(xring_take(ch, 0, &got, c, sizeof(c), d, sizeof(d)), -ENODATA);
    CHECK_EQ(xring_put(ch, 0, &m, iov, 2), -EINVAL); /* 4 bytes for 15 */
    CHECK_EQ(xring_put(ch, 2, &m, iov, 3), -EINVAL);
    CHECK_EQ(xring_put(ch, 0, &m, iov, -1), -EINVAL);
    CHECK_EQ(xring_put(ch, 0, &m, iov, 3), 0);
    CHECK_EQ(xring_queued(ch, 0), 40); /* 24 + 15 -> 40 */
    CHECK_EQ(xring_queued(ch, 1), 0);
    CHECK_EQ(xring_peek(ch, 1, &got), 0);
    memset(&got, 0, sizeof(got));
    CHECK_EQ(xring_peek(ch, 0, &got), 1);
    CHECK(memcmp(&got, &m, sizeof(m)) == 0);
    memset(&got, 0, sizeof(got));
    CHECK_EQ(xring_take(ch, 0, &got, c, 3, d, sizeof(d)), -EAGAIN); /* ctl too small */
    CHECK_EQ(got.ctl_len, 4); /* ... and says what is needed */
    CHECK_EQ(got.data_len, 11);
    CHECK_EQ(xring_take(ch, 0, &got, c, 4, d, 10), -EAGAIN);         /* data too small */
    CHECK_EQ(xring_take(ch, 0, &got, NULL, 4, d, 10), -EINVAL);
    CHECK_EQ(xring_queued(ch, 0), 40);
    memset(&got, 0, sizeof(got));
    CHECK_EQ(xring_take(ch, 0, &got, c, 4, d, 11), 0);
    CHECK(memcmp(&got, &m, sizeof(m)) == 0);
    CHECK(memcmp(c, "abcd", 4) == 0);
    CHECK(memcmp(d, "hello world", 11) == 0);
    CHECK_EQ(xring_queued(ch, 0), 0);
    CHECK_EQ(xring_take(ch, 0, NULL, c, 4, d, 11), -ENODATA);
    CHECK_EQ(xring_broken(ch, 0), 0);
    xring_destroy(ch);
}

/* 3 */
static void test_zero_length(void)
{
    struct xring_chan *ch;
    struct xring_msg m = {.type = 3, .aux = 1}, got;
    char c[8], d[8];

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    CHECK_EQ(xring_put(ch, 1, &m, NULL, 0), 0);
    CHECK_EQ(xring_queued(ch, 1), 24);
    CHECK(put_pat(ch, 1, 2, 5, 0) >= 0);
    CHECK(put_pat(ch, 1, 3, 0, 5) >= 0);
    CHECK_EQ(xring_peek(ch, 1, &got), 1);
    CHECK_EQ(got.ctl_len + got.data_len, 0);
    CHECK_EQ(xring_take(ch, 1, &got, NULL, 0, NULL, 0), 0);
    CHECK_EQ(got.type, 3);
    CHECK_EQ(got.aux, 1);
    CHECK_EQ(xring_take(ch, 1, &got, c, sizeof(c), NULL, 0), 0);
    CHECK_EQ(got.ctl_len, 5);
    CHECK_EQ(xring_take(ch, 1, &got, NULL, 0, d, sizeof(d)), 0);
    CHECK_EQ(got.data_len, 5);
    CHECK_EQ(xring_queued(ch, 1), 0);
    xring_destroy(ch);
}

/* 4 */
static void test_wrap(void)
{
    struct xring_chan *ch;
    uint32_t seq = 0, tseq = 0, bad = 0;

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    /* One at a time: every size 0..1500, ctl and data split in turn. */
    for (uint32_t n = 0; n <= 1500; n++, seq++, tseq++) {
        uint32_t ctl = n % 3 == 0 ? 0 : n % 37;
        if (put_pat(ch, 0, seq, ctl, n - ctl) < 0 || !take_pat(ch, 0, tseq, ctl, n - ctl))
            bad++;
    }
    CHECK_EQ(bad, 0);
    /* Many queued: fill until refused, drain, with sizes that shift the
     * records' alignment against the end (headers split at every 8). */
    unsigned fills = 0;
    for (int round = 0; round < 400; round++) {
        uint32_t first = seq;
        for (;;) {
            uint32_t n = (seq * 97u) % 700, ctl = seq % 5 == 0 ? n / 2 : 0;
            int rc = put_pat(ch, 0, seq, ctl, n - ctl);
            if (rc == -EAGAIN)
                break;
            if (rc < 0) {
                bad++;
                break;
            }
            seq++;
        }
        fills += seq - first > 1;
        for (; tseq < seq; tseq++) {
            uint32_t n = (tseq * 97u) % 700, ctl = tseq % 5 == 0 ? n / 2 : 0;
            if (!take_pat(ch, 0, tseq, ctl, n - ctl))
                bad++;
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(fills, 400);
    CHECK_EQ(xring_queued(ch, 0), 0);
    CHECK_EQ(xring_broken(ch, 0), 0);
    /* A record as large as the ring, again and again (always wrapping). */
    for (int i = 0; i < 20; i++, seq++)
        if (put_pat(ch, 0, seq, 10, 4096 - 24 - 10) < 0 || !take_pat(ch, 0, seq, 10, 4096 - 34))
            bad++;
    CHECK_EQ(bad, 0);
    xring_destroy(ch);
}

/* 5 */
static void test_flow(void)
{
    struct xring_chan *ch;
    uint32_t seq = 0;
    int rc;

    CHECK_EQ(xring_create(4096, 2048, 512, &ch), 0);
    while ((rc = put_pat(ch, 0, seq, 0, 100)) == 0) /* 128-byte records */
        seq++;
    CHECK_EQ(rc, -EAGAIN);
    CHECK_EQ(seq, 16); /* 16 * 128 = 2048: the 16th reaches hiwat */
    CHECK_EQ(xring_queued(ch, 0), 2048);
    /* Crossing hiwat is allowed when there is room. */
    CHECK(take_pat(ch, 0, 0, 0, 100));
    CHECK_EQ(put_pat(ch, 0, 100, 0, 1000), 0);
    CHECK_EQ(xring_queued(ch, 0), 1920 + 1024);
    xring_destroy(ch);

    /* Below hiwat but no room for this record: -EAGAIN too. */
    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    CHECK_EQ(put_pat(ch, 0, 0, 0, 4000 - 24), 0);
    CHECK_EQ(put_pat(ch, 0, 1, 0, 200), -EAGAIN);
    CHECK_EQ(put_pat(ch, 0, 1, 0, 64), 0);
    /* Too large for the ring, or for XRING_MSG_MAX. */
    CHECK_EQ(put_pat(ch, 1, 2, 0, 4096 - 24 + 1), -EMSGSIZE);
    CHECK_EQ(put_pat(ch, 1, 2, 10, 4096 - 24), -EMSGSIZE);
    size_t big = (size_t)XRING_MSG_MAX + 1;
    void *buf = calloc(1, big);
    struct xring_msg m = {.data_len = (uint32_t)big};
    struct iovec iov = {buf, big};
    CHECK_EQ(xring_put(ch, 1, &m, &iov, 1), -EMSGSIZE);
    free(buf);
    CHECK_EQ(xring_queued(ch, 1), 0);
    xring_destroy(ch);
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void *kick(void *arg)
{
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

static long ms_between(const struct timespec *a, const struct timespec *b)
{
    return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

/* 6 */
static void test_arming(void)
{
    struct xring_chan *ch;
    uint32_t seq = 0;

    CHECK_EQ(xring_create(4096, 2048, 512, &ch), 0);
    /* Reader: armed on an empty ring, the next put reports, once. */
    CHECK_EQ(xring_arm_reader(ch, 0), 0);
    CHECK_EQ(put_pat(ch, 1, 0, 0, 10), 0); /* the other ring: no report */
    CHECK_EQ(put_pat(ch, 0, seq++, 0, 10), XRING_WAKE_READER);
    CHECK_EQ(put_pat(ch, 0, seq++, 0, 10), 0);
    /* Armed with data there: need not sleep, and no report follows. */
    CHECK_EQ(xring_arm_reader(ch, 0), 1);
    CHECK_EQ(put_pat(ch, 0, seq++, 0, 10), 0);
    /* Two sleepers armed: one report for both. */
    for (uint32_t t = 0; t < seq; t++)
        CHECK(take_pat(ch, 0, t, 0, 10));
    CHECK_EQ(xring_arm_reader(ch, 0), 0);
    CHECK_EQ(xring_arm_reader(ch, 0), 0);
    CHECK_EQ(put_pat(ch, 0, seq++, 0, 10), XRING_WAKE_READER);
    CHECK_EQ(put_pat(ch, 0, seq++, 0, 10), 0);

    /* Writer: below hiwat it need not sleep; at hiwat it arms, and the take
     * reaching lowat reports, once. */
    CHECK_EQ(xring_arm_writer(ch, 0), 1);
    while (put_pat(ch, 0, seq, 0, 100) == 0)
        seq++;
    CHECK_EQ(xring_arm_writer(ch, 0), 0);
    int reports = 0, at_edge = 1;
    while (xring_queued(ch, 0) > 0) {
        struct xring_msg m;
        char b[128];
        int rc = xring_take(ch, 0, &m, NULL, 0, b, sizeof(b));
        CHECK(rc >= 0);
        if (rc == XRING_WAKE_WRITER) {
            reports++;
            uint32_t q = xring_queued(ch, 0);
            at_edge = q <= 512 && q + xring_reclen(m.ctl_len + (uint64_t)m.data_len) > 512;
        }
    }
    CHECK_EQ(reports, 1);
    CHECK(at_edge);
    /* The report came when the edge was crossed: re-arming below lowat says
     * "do not sleep", and no take reports it. */
    CHECK_EQ(put_pat(ch, 0, seq++, 0, 100), 0);
    CHECK_EQ(xring_arm_writer(ch, 0), 1);
    CHECK_EQ(xring_take(ch, 0, NULL, NULL, 0, (char[128]){0}, 128), 0);

    /* The doorbell. */
    uint32_t b0 = xring_bell_value(ch, 1);
    xring_ring(ch, 1);
    CHECK_EQ(xring_bell_value(ch, 1), b0 + 1);
    CHECK_EQ(xring_bell_value(ch, 0), xring_bell_value(ch, 0)); /* untouched */
    CHECK_EQ(xring_wait(ch, 1, b0, -1), 0);                    /* changed: at once */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ(xring_wait(ch, 1, b0 + 1, 30), 0); /* times out */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(ms_between(&t0, &t1) >= 25);
    CHECK_EQ(xring_wait(ch, 2, 0, 0), -EINVAL);
    /* A signal interrupts the wait. */
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART */
    pthread_t self = pthread_self(), th;
    pthread_create(&th, NULL, kick, &self);
    CHECK_EQ(xring_wait(ch, 1, b0 + 1, 5000), -EINTR);
    pthread_join(th, NULL);
    xring_destroy(ch);
}

/* 7 */
static void test_shut(void)
{
    struct xring_chan *ch;

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    CHECK_EQ(xring_arm_reader(ch, 0), 0);
    CHECK(put_pat(ch, 0, 0, 2, 20) >= 0);
    CHECK(put_pat(ch, 0, 1, 0, 30) >= 0);
    CHECK_EQ(xring_is_shut(ch, 0), 0);
    uint32_t bell = xring_bell_value(ch, 0);
    xring_shut(ch, 0);
    CHECK_NE(xring_bell_value(ch, 0), bell); /* sleepers are woken */
    CHECK_EQ(xring_is_shut(ch, 0), 1);
    CHECK_EQ(xring_is_shut(ch, 1), 0);
    CHECK_EQ(put_pat(ch, 0, 2, 0, 1), -EPIPE);
    CHECK_EQ(put_pat(ch, 1, 2, 0, 1), 0);
    CHECK(take_pat(ch, 0, 0, 2, 20));
    CHECK(take_pat(ch, 0, 1, 0, 30));
    CHECK_EQ(xring_take(ch, 0, NULL, NULL, 0, NULL, 0), -ENODATA);
    CHECK_EQ(xring_arm_reader(ch, 0), 1); /* empty and shut: do not sleep */
    CHECK_EQ(xring_arm_writer(ch, 0), 1);
    xring_destroy(ch);
}

/* 8: scribble(v) damages ring 0 of a channel holding two records. */
static void scr_tail_ahead(struct view *v)
{
    v->h->h_ring[0].x_tail = v->h->h_ring[0].x_head + 8 * 100000;
}
static void scr_misaligned(struct view *v)
{
    v->h->h_ring[0].x_tail += 3;
}
static void scr_head_past_tail(struct view *v)
{
    v->h->h_ring[0].x_head = v->h->h_ring[0].x_tail + 8;
}
static void scr_short(struct view *v)
{
    v->h->h_ring[0].x_tail = v->h->h_ring[0].x_head + 16;
}
static struct xring_rec *first_rec(struct view *v)
{
    return (struct xring_rec *)(v->base + XRING_HDR_BYTES +
                                (v->h->h_ring[0].x_head & (v->h->h_ring_bytes - 1)));
}
static void scr_bogus_len(struct view *v)
{
    first_rec(v)->r_len = 999;
}
static void scr_crossing_tail(struct view *v)
{
    struct xring_rec *r = first_rec(v);
    r->r_data_len = 3000;
    r->r_len = (uint32_t)xring_reclen(r->r_ctl_len + 3000ull);
}
static void scr_huge_ctl(struct view *v)
{
    struct xring_rec *r = first_rec(v);
    r->r_ctl_len = 0xfffffff0u;
    r->r_len = (uint32_t)xring_reclen(r->r_ctl_len + (uint64_t)r->r_data_len);
}
static void scr_flag(struct view *v)
{
    v->h->h_ring[0].x_broken = 1;
}

static void test_corrupt(void)
{
    void (*scr[])(struct view *) = {scr_tail_ahead,    scr_misaligned, scr_head_past_tail,
                                    scr_short,         scr_bogus_len,  scr_crossing_tail,
                                    scr_huge_ctl,      scr_flag};
    for (unsigned i = 0; i < sizeof(scr) / sizeof(scr[0]); i++) {
        struct xring_chan *ch, *ch2;
        struct xring_msg m;
        char b[4096];

        CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
        CHECK_EQ(xring_attach(xring_fd(ch), &ch2), 0);
        /* Put the records near the end so that some damage also wraps. */
        for (uint32_t s = 0; s < 30; s++) {
            CHECK_EQ(put_pat(ch, 0, s, 0, 100), 0);
            CHECK(take_pat(ch, 0, s, 0, 100));
        }
        CHECK_EQ(put_pat(ch, 0, 100, 4, 100), 0);
        CHECK_EQ(put_pat(ch, 0, 101, 0, 50), 0);
        struct view v = xr_view(ch);
        scr[i](&v);
        int rc = xring_peek(ch, 0, &m);
        if (rc != -EIO) /* damage a put could not see: the take does */
            fprintf(stderr, "test_corrupt %u: peek %d\n", i, rc);
        CHECK_EQ(rc, -EIO);
        CHECK_EQ(xring_take(ch, 0, &m, b, sizeof(b), b, sizeof(b)), -EIO);
        CHECK_EQ(put_pat(ch, 0, 102, 0, 10), -EIO);
        CHECK_EQ(xring_arm_reader(ch, 0), -EIO);
        CHECK_EQ(xring_arm_writer(ch, 0), -EIO);
        CHECK_EQ(xring_queued(ch, 0), 0);
        CHECK_EQ(xring_broken(ch, 0), 1);
        CHECK_EQ(xring_broken(ch2, 0), 1); /* the shared flag */
        CHECK_EQ(xring_take(ch2, 0, &m, b, sizeof(b), b, sizeof(b)), -EIO);
        /* The handle's flag stays even if the peer clears the shared one. */
        v.h->h_ring[0].x_broken = 0;
        CHECK_EQ(xring_peek(ch, 0, &m), -EIO);
        /* The other ring is untouched. */
        CHECK_EQ(xring_broken(ch, 1), 0);
        CHECK_EQ(put_pat(ch, 1, 5, 1, 2), 0);
        CHECK(take_pat(ch2, 1, 5, 1, 2));
        xr_unview(&v);
        xring_destroy(ch2);
        xring_destroy(ch);
    }

    /* A producer meets damage too (head far from tail), and garbage in a
     * well-formed record is delivered as such, not as an error. */
    struct xring_chan *ch;
    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    CHECK_EQ(put_pat(ch, 0, 1, 0, 100), 0);
    struct view v = xr_view(ch);
    first_rec(&v)->r_type = 0xff;
    first_rec(&v)->r_aux = 77;
    struct xring_msg m;
    char b[128];
    CHECK_EQ(xring_take(ch, 0, &m, NULL, 0, b, sizeof(b)), 0);
    CHECK_EQ(m.type, 0xff);
    CHECK_EQ(m.aux, 77);
    v.h->h_ring[0].x_head -= 8 * 1000;
    /* The producer looks at the consumer's head when the one it saw last
     * shows too little room: by then at the latest it finds the damage. */
    int rc = 0;
    for (int i = 0; i < 200 && rc == 0; i++)
        rc = put_pat(ch, 0, 2, 0, 10);
    CHECK_EQ(rc, -EIO);
    CHECK_EQ(xring_broken(ch, 0), 1);
    xr_unview(&v);
    xring_destroy(ch);
}

/* 9 */
static int batch_accept(const struct xring_msg *m, void *arg)
{
    return m->type == 1 && m->aux != *(uint32_t *)arg;
}

static void test_batch(void)
{
    struct xring_chan *ch;
    struct xring_msg ms[16];
    static unsigned char buf[8192];
    uint32_t seq = 0, tseq = 0, bad = 0, stop = UINT32_MAX;
    int wake;

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    CHECK_EQ(xring_take_batch(ch, 0, ms, 16, buf, sizeof(buf), batch_accept, &stop, &wake), 0);
    CHECK_EQ(xring_take_batch(ch, 0, ms, 16, buf, sizeof(buf), NULL, &stop, &wake), -EINVAL);
    CHECK_EQ(xring_take_batch(ch, 2, ms, 16, buf, sizeof(buf), batch_accept, &stop, &wake),
             -EINVAL);
    /* Fill and drain in batches of various limits, records of many sizes so
     * that headers and bodies wrap. */
    for (int round = 0; round < 300; round++) {
        while (put_pat(ch, 0, seq, seq % 3 == 0 ? 5 : 0, (seq * 53u) % 300) == 0)
            seq++;
        int max = 1 + round % 16;
        size_t cap = round % 2 ? sizeof(buf) : 500;
        while (tseq < seq) {
            int n = xring_take_batch(ch, 0, ms, max, buf, cap, batch_accept, &stop, &wake);
            if (n <= 0 || n > max) {
                bad++;
                break;
            }
            size_t off = 0;
            for (int i = 0; i < n; i++, tseq++) {
                uint32_t ctl = tseq % 3 == 0 ? 5 : 0, len = ctl + (tseq * 53u) % 300;
                if (ms[i].aux != tseq || ms[i].ctl_len != ctl || ms[i].ctl_len + ms[i].data_len != len)
                    bad++;
                for (uint32_t k = 0; k < len; k++)
                    if (buf[off + k] != pat(tseq, k))
                        bad++;
                off += len;
            }
            if (off > cap)
                bad++;
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(xring_queued(ch, 0), 0);
    /* The filter stops the batch and leaves the record. */
    for (uint32_t s = 0; s < 5; s++)
        CHECK_EQ(put_pat(ch, 0, 1000 + s, 0, 10), 0);
    stop = 1002;
    CHECK_EQ(xring_take_batch(ch, 0, ms, 16, buf, sizeof(buf), batch_accept, &stop, &wake), 2);
    CHECK_EQ(xring_take_batch(ch, 0, ms, 16, buf, sizeof(buf), batch_accept, &stop, &wake), 0);
    CHECK(take_pat(ch, 0, 1002, 0, 10));
    CHECK_EQ(xring_take_batch(ch, 0, ms, 16, buf, sizeof(buf), batch_accept, &stop, &wake), 2);
    CHECK_EQ(ms[1].aux, 1004);
    xring_destroy(ch);

    /* The writer's wake on the lowat edge, once per arming. */
    CHECK_EQ(xring_create(4096, 2048, 512, &ch), 0);
    while (put_pat(ch, 0, seq, 0, 100) == 0)
        seq++;
    CHECK_EQ(xring_arm_writer(ch, 0), 0);
    int wakes = 0;
    stop = UINT32_MAX;
    while (xring_queued(ch, 0) > 0) {
        CHECK(xring_take_batch(ch, 0, ms, 3, buf, sizeof(buf), batch_accept, &stop, &wake) > 0);
        if (wake == XRING_WAKE_WRITER) {
            wakes++;
            CHECK(xring_queued(ch, 0) <= 512);
        }
    }
    CHECK_EQ(wakes, 1);
    /* A scribbled record: -EIO, the ring broken. */
    CHECK_EQ(put_pat(ch, 0, 1, 0, 100), 0);
    struct view v = xr_view(ch);
    first_rec(&v)->r_len = 8;
    CHECK_EQ(xring_take_batch(ch, 0, ms, 3, buf, sizeof(buf), batch_accept, &stop, &wake), -EIO);
    CHECK_EQ(xring_broken(ch, 0), 1);
    xr_unview(&v);
    xring_destroy(ch);
}

int main(void)
{
    test_create_attach();
    test_roundtrip();
    test_zero_length();
    test_wrap();
    test_flow();
    test_arming();
    test_shut();
    test_corrupt();
    test_batch();
    return CHECK_RESULT();
}
