/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_arrive_stress.c -- the arrivals without a shared lock
 * (src/head/sd_arrive.c, docs/STREAMHEAD.md "Arrivals without a shared
 * lock") under threads: writers append to the chain under their own lock
 * and publish, the reader takes without it, everyone else who must see the
 * arrivals as queued takes the consumer lock.
 *
 *   A. 1, 2 and 4 writers x 1 reader, write sizes mixed 1 byte .. 8 KiB
 *      (coalesced and whole blocks), readers in message mode (RMSGN), byte
 *      stream with random read sizes, and non-blocking byte stream (EAGAIN,
 *      poll: the readable token withdrawn and shown again).  Every message
 *      is counted: none lost, duplicated, cut or reordered per writer.  A
 *      prober thread runs I_NREAD, FIONREAD and (message mode) I_PEEK while
 *      data flows and checks what they see; in message mode a band-1
 *      message goes mid-stream and arrives once.
 *   B. M_FLUSH: writes left unread are flushed (I_FLUSH FLUSHR) with
 *      nothing pending after, the writes that follow all arrive; then a
 *      flush while writers write: what arrives is whole, in order, once.
 *   C. Flow control: a writer with no reader blocks once the pipe holds its
 *      high-water mark, POLLOUT is off, and it resumes when the reader drains.
 * Every part ends with no block outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h> /* FIONREAD */
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define NMSG 1500
#else
#define NMSG 12000
#endif
#define MAXW 4
#define MAXLEN 8192
#define HIWAT 65536 /* the head read queue's (UST_STRHIGH) */

struct hdr {
    uint16_t wid;
    uint16_t band;
    uint32_t seq;
    uint32_t len;
};

static int tp[2];
static int nwriters;
static atomic_long bad;
static atomic_int writing; /* writers still running */

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* Length of writer wid's message seq: mostly small (coalesced), every
 * third up to 8 KiB (a block of its own). */
static size_t msg_len(unsigned wid, unsigned seq)
{
    unsigned h = (seq * 2654435761u) ^ (wid * 40503u);
    size_t n = h % 3 == 0 ? (h >> 4) % MAXLEN : (h >> 4) % 200;
    return n < sizeof(struct hdr) ? sizeof(struct hdr) : n;
}

static unsigned char fill(const struct hdr *h, size_t j)
{
    return (unsigned char)(h->seq * 7 + h->wid * 3 + j);
}

static size_t make_msg(unsigned char *buf, unsigned wid, unsigned seq, int band)
{
    struct hdr h = {.wid = (uint16_t)wid, .band = (uint16_t)band, .seq = seq};
    h.len = (uint32_t)msg_len(wid, seq);
    memcpy(buf, &h, sizeof(h));
    for (size_t j = sizeof(h); j < h.len; j++)
        buf[j] = fill(&h, j);
    return h.len;
}

/* Is buf[0..n) one whole message (any writer)? */
static int msg_ok(const unsigned char *buf, size_t n)
{
    struct hdr h;
    if (n < sizeof(h))
        return 0;
    memcpy(&h, buf, sizeof(h));
    if (h.len != n || (h.wid >= MAXW && h.wid != 0xfffe) || n != msg_len(h.wid, h.seq))
        return 0;
    for (size_t j = sizeof(h); j < n; j++)
        if (buf[j] != fill(&h, j))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* A: writers, a reader, a prober                                           */
/* ------------------------------------------------------------------------ */

enum rmode { R_MSG, R_BYTES, R_NONBLOCK };
static enum rmode mode;
static atomic_int probing;

static void *writer(void *arg)
{
    unsigned wid = (unsigned)(uintptr_t)arg;
    unsigned char *buf = malloc(MAXLEN);
    for (unsigned i = 0; i < NMSG; i++) {
        size_t n = make_msg(buf, wid, i, 0);
        if (strm_write(tp[0], buf, n) != (ssize_t)n) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        if (mode == R_MSG && wid == 0 && i == NMSG / 2) { /* a band-1 message mid-stream */
            struct hdr h = {.wid = 0xfffe, .band = 1, .seq = 0};
            h.len = (uint32_t)msg_len(h.wid, 0);
            unsigned char *b = malloc(MAXLEN);
            memcpy(b, &h, sizeof(h));
            for (size_t j = sizeof(h); j < h.len; j++)
                b[j] = fill(&h, j);
            struct strbuf d = {.len = (int)h.len, .buf = (char *)b};
            if (putpmsg(tp[0], NULL, &d, 1, MSG_BAND) != 0)
                atomic_fetch_add(&bad, 1);
            free(b);
        }
    }
    free(buf);
    atomic_fetch_sub(&writing, 1);
    return NULL;
}

/* I_NREAD, FIONREAD and I_PEEK on the reading end while data flows. */
static void *prober(void *arg)
{
    (void)arg;
    unsigned char *buf = malloc(MAXLEN);
    long looks = 0;
    while (atomic_load(&probing)) {
        int n = -1, c = strm_ioctl(tp[1], I_NREAD, &n);
        if (c < 0 || n < 0 || n > MAXLEN || (c == 0 && n != 0))
            atomic_fetch_add(&bad, 1);
        int fr = -1;
        if (strm_ioctl(tp[1], FIONREAD, &fr) != 0 || fr < 0 || fr > HIWAT + 2 * MAXW * MAXLEN)
            atomic_fetch_add(&bad, 1);
        if (mode == R_MSG) { /* whole messages at the front: a peek sees one */
            struct strpeek pk = {.ctlbuf = {.maxlen = -1},
                                 .databuf = {.maxlen = MAXLEN, .buf = (char *)buf}};
            int r = strm_ioctl(tp[1], I_PEEK, &pk);
            if (r < 0 || (r == 1 && !msg_ok(buf, (size_t)pk.databuf.len)))
                atomic_fetch_add(&bad, 1);
        }
        looks++;
    }
    free(buf);
    CHECK(looks > 0);
    return NULL;
}

struct tally {
    long last[MAXW];
    long count, band1;
};

static void tally_msg(struct tally *t, const unsigned char *buf, size_t n)
{
    struct hdr h;
    if (!msg_ok(buf, n)) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    memcpy(&h, buf, sizeof(h));
    if (h.wid == 0xfffe) {
        t->band1++;
        return;
    }
    if ((long)h.seq != t->last[h.wid] + 1) /* lost, duplicated or reordered */
        atomic_fetch_add(&bad, 1);
    t->last[h.wid] = h.seq;
    t->count++;
}

/* Read until every message of every writer arrived (or a read fails). */
static void reader(struct tally *t)
{
    long want = (long)nwriters * NMSG;
    size_t cap = 4 * MAXLEN, have = 0;
    unsigned char *acc = malloc(cap), *buf = malloc(MAXLEN);
    unsigned seed = 11;
    for (int i = 0; i < MAXW; i++)
        t->last[i] = -1;
    while (t->count < want) {
        size_t ask = mode == R_MSG ? MAXLEN : 1 + (size_t)rand_r(&seed) % MAXLEN;
        ssize_t r = strm_read(tp[1], mode == R_MSG ? buf : acc + have, ask);
        if (r < 0 && errno == EAGAIN && mode == R_NONBLOCK) {
            struct pollfd pf = {.fd = tp[1], .events = POLLIN};
            if (strm_poll(&pf, 1, 5000) != 1) { /* data behind a withdrawn token */
                atomic_fetch_add(&bad, 1);
                break;
            }
            continue;
        }
        if (r <= 0) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        if (mode == R_MSG) {
            tally_msg(t, buf, (size_t)r);
            continue;
        }
        have += (size_t)r; /* a byte stream: cut it at the headers */
        size_t off = 0;
        while (have - off >= sizeof(struct hdr)) {
            struct hdr h;
            memcpy(&h, acc + off, sizeof(h));
            if (h.len < sizeof(h) || h.len > MAXLEN) {
                atomic_fetch_add(&bad, 1);
                goto out;
            }
            if (have - off < h.len)
                break;
            tally_msg(t, acc + off, h.len);
            off += h.len;
        }
        memmove(acc, acc + off, have - off);
        have -= off;
    }
out:
    CHECK_EQ(have, 0);
    free(acc);
    free(buf);
}

static void run_a(int nw, enum rmode m)
{
    CHECK_EQ(strm_pipe(tp), 0);
    mode = m;
    nwriters = nw;
    atomic_store(&bad, 0);
    atomic_store(&writing, nw);
    atomic_store(&probing, 1);
    if (m == R_MSG)
        CHECK_EQ(strm_ioctl(tp[1], I_SRDOPT, RMSGN), 0);
    if (m == R_NONBLOCK)
        CHECK_EQ(strm_fcntl(tp[1], F_SETFL, O_NONBLOCK), 0);
    pthread_t w[MAXW], pr;
    pthread_create(&pr, NULL, prober, NULL);
    for (int i = 0; i < nw; i++)
        pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)i);
    struct tally t = {0};
    reader(&t);
    for (int i = 0; i < nw; i++)
        pthread_join(w[i], NULL);
    atomic_store(&probing, 0);
    pthread_join(pr, NULL);
    CHECK_EQ(t.count, (long)nw * NMSG);
    for (int i = 0; i < nw; i++)
        CHECK_EQ(t.last[i], NMSG - 1);
    if (m == R_MSG && t.band1 == 0) { /* band 1 may come last of all */
        unsigned char *buf = malloc(MAXLEN);
        ssize_t r = strm_read(tp[1], buf, MAXLEN);
        if (r > 0)
            tally_msg(&t, buf, (size_t)r);
        free(buf);
    }
    CHECK_EQ(t.band1, m == R_MSG ? 1 : 0);
    int fr = -1;
    CHECK_EQ(strm_ioctl(tp[1], FIONREAD, &fr), 0);
    CHECK_EQ(fr, 0); /* nothing more: no duplicate */
    CHECK_EQ(atomic_load(&bad), 0);
    CHECK_EQ(strm_close(tp[0]), 0);
    CHECK_EQ(strm_close(tp[1]), 0);
}

/* ------------------------------------------------------------------------ */
/* B: M_FLUSH                                                               */
/* ------------------------------------------------------------------------ */

static unsigned seq_from;

static void *small_writer(void *arg)
{
    unsigned wid = (unsigned)(uintptr_t)arg;
    unsigned char buf[256];
    for (unsigned i = seq_from; i < seq_from + 150; i++) {
        struct hdr h = {.wid = (uint16_t)wid, .seq = i, .len = (uint32_t)msg_len(wid, i)};
        if (h.len > 150) /* small ones: well under the high-water mark */
            h.len = sizeof(h);
        memcpy(buf, &h, sizeof(h));
        memset(buf + sizeof(h), 0x5a, h.len - sizeof(h));
        if (strm_write(tp[0], buf, h.len) != (ssize_t)h.len)
            atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

static void run_small_writers(unsigned from)
{
    pthread_t w[2];
    seq_from = from;
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, small_writer, (void *)(uintptr_t)i);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i], NULL);
}

/* A writer writing until told; the main thread flushes the read side
 * meanwhile. */
static atomic_int flush_stop;

static void *flow_writer(void *arg)
{
    (void)arg;
    unsigned char *buf = malloc(MAXLEN);
    for (unsigned i = 0; !atomic_load(&flush_stop); i++) {
        size_t n = make_msg(buf, 0, i, 0);
        if (strm_write(tp[0], buf, n) != (ssize_t)n) {
            atomic_fetch_add(&bad, 1);
            break;
        }
    }
    struct hdr stop = {.wid = 0xffff, .len = sizeof(stop)};
    if (strm_write(tp[0], &stop, sizeof(stop)) != (ssize_t)sizeof(stop))
        atomic_fetch_add(&bad, 1);
    free(buf);
    return NULL;
}

static void test_flush(void)
{
    CHECK_EQ(strm_pipe(tp), 0);
    CHECK_EQ(strm_ioctl(tp[1], I_SRDOPT, RMSGN), 0);
    atomic_store(&bad, 0);
    run_small_writers(0); /* unread: in the arrivals, some maybe queued */
    int fr = -1, n = -1;
    CHECK_EQ(strm_ioctl(tp[1], FIONREAD, &fr), 0);
    CHECK(fr > 0);
    CHECK_EQ(strm_ioctl(tp[1], I_FLUSH, FLUSHR), 0);
    CHECK_EQ(strm_ioctl(tp[1], FIONREAD, &fr), 0);
    CHECK_EQ(fr, 0);
    CHECK_EQ(strm_ioctl(tp[1], I_NREAD, &n), 0);
    run_small_writers(1000); /* after the flush: every one arrives */
    long last[2] = {999, 999}, got = 0;
    unsigned char buf[256];
    while (got < 300) {
        ssize_t r = strm_read(tp[1], buf, sizeof(buf));
        struct hdr h;
        if (r < (ssize_t)sizeof(h)) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        memcpy(&h, buf, sizeof(h));
        if (h.wid > 1 || h.len != r || (long)h.seq != last[h.wid] + 1)
            atomic_fetch_add(&bad, 1);
        else
            last[h.wid] = h.seq;
        got++;
    }
    CHECK_EQ(last[0], 1149);
    CHECK_EQ(last[1], 1149);
    CHECK_EQ(strm_ioctl(tp[1], I_NREAD, &n), 0);

    /* Flushes while a writer writes: whole, in order, once. */
    atomic_store(&flush_stop, 0);
    pthread_t w;
    pthread_create(&w, NULL, flow_writer, NULL);
    long t0 = now_ms(), prev = -1, count = 0, flushes = 0;
    unsigned char *mb = malloc(MAXLEN);
    for (;;) {
        ssize_t r = strm_read(tp[1], mb, MAXLEN);
        struct hdr h;
        if (r < (ssize_t)sizeof(h)) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        memcpy(&h, mb, sizeof(h));
        if (h.wid == 0xffff)
            break;
        if (!msg_ok(mb, (size_t)r) || (long)h.seq <= prev)
            atomic_fetch_add(&bad, 1);
        prev = h.seq;
        count++;
        if (count % 64 == 0 && strm_ioctl(tp[1], I_FLUSH, FLUSHR) == 0)
            flushes++;
        if (now_ms() - t0 > 300)
            atomic_store(&flush_stop, 1);
    }
    pthread_join(w, NULL);
    free(mb);
    CHECK(count > 0);
    CHECK(flushes > 0);
    CHECK_EQ(atomic_load(&bad), 0);
    CHECK_EQ(strm_close(tp[0]), 0);
    CHECK_EQ(strm_close(tp[1]), 0);
}

/* ------------------------------------------------------------------------ */
/* C: flow control                                                          */
/* ------------------------------------------------------------------------ */

static atomic_long written;
#define FC_LEN 1000
#define FC_TOTAL 400 /* messages: several times the high-water mark */

static void *fc_writer(void *arg)
{
    (void)arg;
    unsigned char buf[FC_LEN];
    for (unsigned i = 0; i < FC_TOTAL; i++) {
        memset(buf, (int)(i & 0xff), sizeof(buf));
        if (strm_write(tp[0], buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        atomic_store(&written, (long)i + 1);
    }
    return NULL;
}

static void test_flow(void)
{
    CHECK_EQ(strm_pipe(tp), 0);
    CHECK_EQ(strm_ioctl(tp[1], I_SRDOPT, RMSGN), 0);
    atomic_store(&bad, 0);
    atomic_store(&written, 0);
    pthread_t w;
    pthread_create(&w, NULL, fc_writer, NULL);
    long t0 = now_ms();
    /* Until the pipe holds its high-water mark (a loaded machine may be
     * slow to get there), then a while more: the writer must be blocked. */
    while (atomic_load(&written) * FC_LEN < HIWAT - FC_LEN && now_ms() - t0 < 10000)
        usleep(10000);
    usleep(200000);
    long held = atomic_load(&written);
    CHECK(held < FC_TOTAL);                          /* it blocked */
    CHECK(held * FC_LEN >= HIWAT - FC_LEN);          /* at the high-water mark */
    CHECK(held * FC_LEN <= HIWAT + 2 * FC_LEN);      /* not much past it */
    struct pollfd pf = {.fd = tp[0], .events = POLLOUT};
    CHECK_EQ(strm_poll(&pf, 1, 0), 0); /* full: no POLLOUT */
    unsigned char buf[FC_LEN + 16];
    for (unsigned i = 0; i < FC_TOTAL; i++) { /* draining lets it finish */
        ssize_t r = strm_read(tp[1], buf, sizeof(buf));
        if (r != FC_LEN || buf[0] != (unsigned char)i || buf[FC_LEN - 1] != (unsigned char)i) {
            atomic_fetch_add(&bad, 1);
            break;
        }
    }
    pthread_join(w, NULL);
    CHECK_EQ(atomic_load(&written), FC_TOTAL);
    CHECK_EQ(strm_poll(&pf, 1, 0), 1); /* empty: POLLOUT */
    CHECK_EQ(atomic_load(&bad), 0);
    CHECK_EQ(strm_close(tp[0]), 0);
    CHECK_EQ(strm_close(tp[1]), 0);
}

static volatile sig_atomic_t phase; /* for the deadline's message */

static void on_alarm(int sig)
{
    (void)sig;
    char msg[] = "test_pipe_arrive_stress: deadline in phase 0\n";
    msg[sizeof(msg) - 3] = (char)('0' + phase % 10);
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(1);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(170); /* a lost wake-up hangs: die loudly rather than at the ctest timeout */
    static const int nws[] = {1, 2, 4};
    for (int m = R_MSG; m <= R_NONBLOCK; m++)
        for (int i = 0; i < 3; i++) {
            phase = m * 3 + i; /* 0-8: part A, mode m, writers nws[i] */
            run_a(nws[i], (enum rmode)m);
        }
    phase = 9; /* B and C */
    test_flush();
    test_flow();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
