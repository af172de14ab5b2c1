/* SPDX-License-Identifier: MIT */
/*
 * test_xring_copy_hostile.c -- xring_take_copy (src/procs/xring_take.c), the
 * take that hands each record's body straight from the shared mapping to
 * the caller's copy (a split pipe's read(2): sd_xpipe_direct.c), against
 * its contract and against a peer that scribbles on the mapping while it
 * copies (docs/SECURITY.md: the ring is shared with a hostile peer).
 *
 *   C.1  records of every size 0..600 and a few large ones, across the
 *        wrap (bodies in two pieces): each body reaches copy whole, in
 *        order, control then data; accept sees each description before
 *        anything of it is copied and stops the take (the record stays);
 *        max bounds the records of one take; one store of head per take
 *        (the writer's lowat report once).
 *   C.2  copy failing (EFAULT) on the first record: -EFAULT, nothing taken;
 *        on a later one: the records before it taken, it stays.
 *   C.3  a scribbled mapping (tail ahead, misaligned, a bogus record
 *        length, a huge control length): -EIO, nothing handed to copy
 *        beyond the ring, the ring broken.
 *   C.4  a hostile thread rewrites head, tail and record headers at random
 *        while the main thread takes: every call returns within a bound,
 *        every piece handed to copy lies inside the ring's data area and
 *        the pieces of one record add up to its validated length; the
 *        ring ends broken or consistent, never a crash (ASan checks the
 *        reads) or a spin.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "xring.h"
#include "xring_layout.h"
#include "xring_view.h"

static unsigned char pat(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 131u + i * 7u + (i >> 8));
}

static int put_pat(struct xring_chan *ch, uint32_t seq, uint32_t ctl_len, uint32_t data_len)
{
    static unsigned char buf[70000];
    for (size_t i = 0; i < (size_t)ctl_len + data_len; i++)
        buf[i] = pat(seq, i);
    struct xring_msg m = {.type = 1, .ctl_len = ctl_len, .data_len = data_len, .aux = seq};
    struct iovec iov = {buf, (size_t)ctl_len + data_len};
    return xring_put(ch, 0, &m, &iov, 1);
}

/* The copy side: a buffer, what it holds, and checks. */
struct sink {
    unsigned char buf[1 << 17];
    size_t used;
    uint32_t expect_seq; /* C.1: the next record's seq */
    size_t rec_left;     /* bytes of the current record still to come */
    uint32_t rec_seq;
    size_t rec_off;
    long bad;
    int fail_at;  /* C.2: fail the copy of the record with this seq (-1 none) */
    int stop_seq; /* accept refuses this seq (-1 none) */
    const unsigned char *lo, *hi; /* C.4: the ring's data area */
    const unsigned char *first_src; /* the first piece handed over */
};

static int s_accept(const struct xring_msg *m, void *arg)
{
    struct sink *s = arg;
    if (s->rec_left != 0)
        s->bad++; /* the record before was not handed over whole */
    if ((int)m->aux == s->stop_seq)
        return 0;
    s->rec_left = (size_t)m->ctl_len + m->data_len;
    s->rec_seq = m->aux;
    s->rec_off = 0;
    if (s->lo == NULL && m->aux != s->expect_seq)
        s->bad++;
    s->expect_seq = m->aux + 1;
    return 1;
}

static int s_copy(void *arg, const void *src, size_t n)
{
    struct sink *s = arg;
    const unsigned char *p = src;
    if (s->first_src == NULL)
        s->first_src = p;
    if (n == 0 || n > s->rec_left)
        s->bad++;
    if (s->lo != NULL) { /* C.4: inside the data area, nothing else */
        if (p < s->lo || p + n > s->hi)
            s->bad++;
        s->rec_left -= n < s->rec_left ? n : s->rec_left;
        return 0;
    }
    if ((int)s->rec_seq == s->fail_at)
        return EFAULT;
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(s->rec_seq, s->rec_off + i))
            s->bad++;
    s->rec_off += n;
    s->rec_left -= n < s->rec_left ? n : s->rec_left;
    return 0;
}

static struct sink sink; /* large: not on the stack */

static void sink_reset(void)
{
    memset(&sink, 0, sizeof(sink));
    sink.fail_at = -1;
    sink.stop_seq = -1;
}

/* ---- C.1 ---------------------------------------------------------------- */
static void test_c1(void)
{
    struct xring_chan *ch;
    int wake;
    CHECK_EQ(xring_create(8192, 8192, 0, &ch), 0);
    sink_reset();
    uint32_t seq = 0, taken = 0;
    for (uint32_t size = 0; size <= 600 || seq < 640; size++) {
        uint32_t n = size <= 600 ? size : 3000 + size;
        uint32_t ctl = size % 3 == 0 ? (n < 7 ? n : 7) : 0;
        if (put_pat(ch, seq, ctl, n - ctl) != 0) {
            int k = xring_take_copy(ch, 0, 1 + (int)(seq % 5), s_accept, s_copy, &sink, &wake);
            CHECK(k > 0 && k <= 1 + (int)(seq % 5));
            taken += k > 0 ? (uint32_t)k : 0;
            size--;
            continue;
        }
        seq++;
    }
    while (taken < seq) {
        int k = xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake);
        CHECK(k > 0);
        if (k <= 0)
            break;
        taken += (uint32_t)k;
    }
    CHECK_EQ(taken, seq);
    CHECK_EQ(sink.bad, 0);
    CHECK_EQ(sink.rec_left, 0);
    CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), 0);
    CHECK_EQ(xring_take_copy(ch, 2, 64, s_accept, s_copy, &sink, &wake), -EINVAL);
    CHECK_EQ(xring_take_copy(ch, 0, 64, NULL, s_copy, &sink, &wake), -EINVAL);
    /* accept stops: the record stays and is the next one */
    for (uint32_t i = 0; i < 4; i++)
        CHECK_EQ(put_pat(ch, 1000 + i, 0, 10), 0);
    sink.expect_seq = 1000;
    sink.stop_seq = 1002;
    CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), 2);
    sink.rec_left = 0; /* 1002 was refused, not started */
    sink.stop_seq = -1;
    CHECK_EQ(xring_take_copy(ch, 0, 1, s_accept, s_copy, &sink, &wake), 1);
    CHECK_EQ(sink.rec_seq, 1002);
    CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), 1);
    CHECK_EQ(sink.bad, 0);
    xring_destroy(ch);

    /* The writer's report on the lowat edge, once per arming. */
    CHECK_EQ(xring_create(4096, 2048, 512, &ch), 0);
    sink_reset();
    seq = 0;
    while (put_pat(ch, seq, 0, 100) == 0)
        seq++;
    CHECK_EQ(xring_arm_writer(ch, 0), 0);
    int wakes = 0;
    while (xring_queued(ch, 0) > 0) {
        CHECK(xring_take_copy(ch, 0, 3, s_accept, s_copy, &sink, &wake) > 0);
        if (wake == XRING_WAKE_WRITER) {
            wakes++;
            CHECK(xring_queued(ch, 0) <= 512);
        }
    }
    CHECK_EQ(wakes, 1);
    CHECK_EQ(sink.bad, 0);
    xring_destroy(ch);
}

/* ---- C.2 ---------------------------------------------------------------- */
static void test_c2(void)
{
    struct xring_chan *ch;
    int wake;
    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    sink_reset();
    for (uint32_t i = 0; i < 5; i++)
        CHECK_EQ(put_pat(ch, i, 0, 200), 0);
    sink.fail_at = 0;
    CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), -EFAULT);
    CHECK_EQ(xring_queued(ch, 0), 5u * (24 + 200));
    sink_reset();
    sink.fail_at = 3;
    CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), 3);
    CHECK_EQ(xring_queued(ch, 0), 2u * (24 + 200));
    sink_reset();
    sink.expect_seq = 3;
    CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), 2);
    CHECK_EQ(sink.bad, 0);
    CHECK_EQ(xring_broken(ch, 0), 0);
    xring_destroy(ch);
}

/* ---- the mapping, seen as the peer sees it (xring_view.h) --------------- */
static struct xring_rec *first_rec(struct view *v)
{
    return (struct xring_rec *)(v->base + XRING_HDR_BYTES +
                                (v->h->h_ring[0].x_head & (v->h->h_ring_bytes - 1)));
}

/* ---- C.3 ---------------------------------------------------------------- */
static void test_c3(void)
{
    for (int how = 0; how < 4; how++) {
        struct xring_chan *ch;
        int wake;
        CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
        for (uint32_t i = 0; i < 3; i++)
            CHECK_EQ(put_pat(ch, i, 0, 100), 0);
        struct view v = xr_view(ch);
        CHECK(v.base != NULL);
        if (v.base == NULL)
            return;
        switch (how) {
        case 0:
            v.h->h_ring[0].x_tail = v.h->h_ring[0].x_head + 8 * 100000;
            break;
        case 1:
            v.h->h_ring[0].x_tail += 3;
            break;
        case 2:
            first_rec(&v)->r_len = 999;
            break;
        default:
            first_rec(&v)->r_ctl_len = 0xfffffff0u;
            first_rec(&v)->r_len = (uint32_t)xring_reclen(0xfffffff0ull + 100);
            break;
        }
        sink_reset();
        CHECK_EQ(xring_take_copy(ch, 0, 64, s_accept, s_copy, &sink, &wake), -EIO);
        CHECK_EQ(sink.rec_off, 0); /* nothing handed to copy */
        CHECK_EQ(xring_broken(ch, 0), 1);
        CHECK_EQ(xring_take_copy_try(ch, 0, 64, s_accept, s_copy, &sink, &wake), -EIO);
        munmap(v.base, v.len);
        xring_destroy(ch);
    }
}

/* ---- C.4 ---------------------------------------------------------------- */
static atomic_int stop_scribbling;
/* Takes made in this round: the scribbler starts after SCRIBBLE_AFTER, so
 * every round copies some records whatever the scheduling (TSan slows the
 * taker enough that a scribbler starting at once broke every ring first). */
static atomic_int takes_done;
#define SCRIBBLE_AFTER 64

static void *scribbler(void *arg)
{
    struct view *v = arg;
    uint32_t r = 12345;
    while (atomic_load(&takes_done) < SCRIBBLE_AFTER && !atomic_load(&stop_scribbling))
        sched_yield();
    while (!atomic_load(&stop_scribbling)) {
        r = r * 1103515245u + 12345u;
        switch (r >> 29) {
        case 0:
            __atomic_store_n(&v->h->h_ring[0].x_tail, __atomic_load_n(&v->h->h_ring[0].x_tail,
                                                                      __ATOMIC_RELAXED) +
                                                          ((r >> 8) & 0x3ff),
                             __ATOMIC_RELAXED);
            break;
        case 1:
            __atomic_store_n(&v->h->h_ring[0].x_head, r & ~7u, __ATOMIC_RELAXED);
            break;
        case 2: { /* a record header anywhere in the data area */
            uint32_t off = (r >> 3) % (v->h->h_ring_bytes - 24) & ~7u;
            uint32_t *w = (uint32_t *)(v->base + XRING_HDR_BYTES + off);
            __atomic_store_n(&w[(r >> 16) % 6], r * 2654435761u, __ATOMIC_RELAXED);
            break;
        }
        default:
            break; /* let the taker get on */
        }
    }
    return NULL;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void test_c4(void)
{
    long taken = 0, broke = 0; /* over the rounds: the copies ran, and the damage was seen */
    for (int round = 0; round < 20; round++) {
        struct xring_chan *ch, *peer;
        int wake;
        CHECK_EQ(xring_create(8192, 8192, 0, &ch), 0);
        CHECK_EQ(xring_attach(xring_fd(ch), &peer), 0); /* the writer's handle */
        struct view v = xr_view(ch);
        CHECK(v.base != NULL);
        if (v.base == NULL)
            return;
        /* Where this handle maps the data area: a fresh ring's first record
         * starts at its beginning, its body 24 bytes (a header) in. */
        sink_reset();
        CHECK_EQ(put_pat(peer, 0, 0, 8), 0);
        CHECK_EQ(xring_take_copy(ch, 0, 8, s_accept, s_copy, &sink, &wake), 1);
        CHECK(sink.first_src != NULL);
        if (sink.first_src == NULL)
            return;
        const unsigned char *lo = sink.first_src - sizeof(struct xring_rec);
        sink_reset();
        sink.lo = lo;
        sink.hi = lo + v.h->h_ring_bytes;
        atomic_store(&stop_scribbling, 0);
        atomic_store(&takes_done, 0);
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, scribbler, &v), 0);
        long long t0 = now_ms(), worst = 0;
        int broken = 0;
        for (uint32_t i = 0; i < 20000 && !broken; i++) {
            if (i % 2 == 0)
                (void)put_pat(peer, i, i % 3, i % 200);
            long long a = now_ms();
            int k = xring_take_copy(ch, 0, 8, s_accept, s_copy, &sink, &wake);
            atomic_fetch_add(&takes_done, 1);
            if (now_ms() - a > worst)
                worst = now_ms() - a;
            if (k > 0)
                taken += k;
            if (k == -EIO)
                broken = 1;
            else if (k < 0)
                sink.bad++;
            sink.rec_left = 0; /* a record refused mid-way by nothing: reset */
        }
        atomic_store(&stop_scribbling, 1);
        pthread_join(t, NULL);
        CHECK_EQ(sink.bad, 0);
        CHECK(worst < 1000);
        CHECK(now_ms() - t0 < 20000);
        /* Once broken, it stays so, and no call hands anything over. */
        if (broken)
            CHECK_EQ(xring_take_copy(ch, 0, 8, s_accept, s_copy, &sink, &wake), -EIO);
        broke += broken;
        munmap(v.base, v.len);
        xring_destroy(peer);
        xring_destroy(ch);
    }
    fprintf(stderr,
            "C.4: %ld records copied (the scribbler joins after %d takes), %ld of 20 rings "
            "broken\n",
            taken, SCRIBBLE_AFTER, broke);
    CHECK(taken > 0);
    CHECK(broke > 0);
}

int main(void)
{
    test_c1();
    test_c2();
    test_c3();
    test_c4();
    return CHECK_RESULT();
}
