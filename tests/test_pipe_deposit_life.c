/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_deposit_life.c -- a deposit claims no queue (src/head/sd_arrive.c,
 * "Lifetime"): it checks the plumbing generation under the reading head's
 * arrival lock, and the head's teardown moves the generation before it
 * discards the arrivals under that lock.  A writer whose reader closes under
 * it must then never put data into the head's next life.
 *
 *   D.1 rounds of: a writer thread writing tagged 16-byte records as fast as
 *       it can; the reader reads a few, closes its end, and at once makes the
 *       next round's pipe (whose heads come from the pool the closed one went
 *       to) while the old writer is still writing.  Every record a reader
 *       gets carries its own round's tag, in sequence; every old writer ends
 *       with EPIPE; no block is outstanding at the end.
 *   D.2 the same with records of 3000 bytes, each a block of its own whose
 *       unit the reader hands back to its head's slots for the writer's
 *       next block (sd_arrive.c "Blocks handed back"): the slots of a
 *       closed head are emptied, a stale writer only borrows free units.
 *   D.3 the hand-back itself: a 4 KiB write read by a blocked reader leaves
 *       its unit in the reading head's slots (builds with the block cache);
 *       the next such write, a deposit, takes it and its read gives it back
 *       (ten pipes: at least one on a loaded machine); every byte right.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROUNDS 200
#else
#define ROUNDS 2000
#endif

struct rec {
    uint32_t tag, seq;
    uint64_t fill;
};

#define BIG_REC 3000
static size_t rec_size = sizeof(struct rec); /* bytes per record: the header, then fill */

/* Record seq of round tag, rec_size bytes, into buf. */
static void rec_make(unsigned char *buf, uint32_t tag, uint32_t seq)
{
    struct rec r = {tag, seq, (uint64_t)tag * 1000003u + seq};
    memcpy(buf, &r, sizeof(r));
    for (size_t i = sizeof(r); i < rec_size; i++)
        buf[i] = (unsigned char)(seq + i);
}

struct writer {
    pthread_t t;
    int fd;
    uint32_t tag;
    int err;      /* errno of the write that failed */
    long written; /* records */
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    unsigned char buf[BIG_REC];
    for (uint32_t seq = 0;; seq++) {
        rec_make(buf, w->tag, seq);
        ssize_t n = strm_write(w->fd, buf, rec_size);
        if (n != (ssize_t)rec_size) {
            w->err = n < 0 ? errno : -1;
            break;
        }
        w->written++;
    }
    return NULL;
}

/* Read `want` records from fd (blocking), all of round tag, in sequence;
 * returns the number of wrong ones. */
static long read_round(int fd, uint32_t tag, int want)
{
    long bad = 0;
    unsigned char buf[BIG_REC], good[BIG_REC];
    for (int i = 0; i < want; i++) {
        ssize_t n = strm_read(fd, buf, rec_size);
        if (!CHECK_EQ(n, (long)rec_size))
            return bad + 1;
        rec_make(good, tag, (uint32_t)i);
        if (memcmp(buf, good, rec_size) != 0) {
            struct rec r;
            memcpy(&r, buf, sizeof(r));
            if (bad == 0)
                printf("round %u: record %d has tag %u seq %u\n", tag, i, r.tag, r.seq);
            bad++;
        }
    }
    return bad;
}

static void test_close_under_writer(size_t size)
{
    rec_size = size;
    struct writer w[2];
    int p[2];
    long bad = 0, epipe = 0;
    CHECK_EQ(strm_pipe(p), 0);
    w[0] = (struct writer){.fd = p[1], .tag = 1};
    CHECK_EQ(pthread_create(&w[0].t, NULL, writer_main, &w[0]), 0);
    int rd = p[0];
    for (uint32_t round = 1; round <= ROUNDS; round++) {
        struct writer *cur = &w[(round - 1) % 2], *next = &w[round % 2];
        bad += read_round(rd, round, 1 + (int)(round % 37));
        CHECK_EQ(strm_close(rd), 0); /* under the writer */
        if (round < ROUNDS) {
            /* The next round's heads: likely the ones just pooled. */
            CHECK_EQ(strm_pipe(p), 0);
            *next = (struct writer){.fd = p[1], .tag = round + 1};
            CHECK_EQ(pthread_create(&next->t, NULL, writer_main, next), 0);
            rd = p[0];
        }
        pthread_join(cur->t, NULL);
        epipe += cur->err == EPIPE;
        CHECK_EQ(strm_close(cur->fd), 0);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(epipe, ROUNDS);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* Units in the hand-back slots of the head of fd. */
static int slots_of(int fd)
{
    int err, n = 0;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!CHECK(sd != NULL))
        return -1;
    for (int i = 0; i < UST_SPARE_SLOTS; i++)
        n += atomic_load(&sd->sd_spare.slot[i]) != NULL;
    ust_sd_put(sd);
    return n;
}

struct blocked_read {
    pthread_t t;
    int fd;
    unsigned char buf[4096];
    ssize_t n;
};

static void *blocked_read_main(void *arg)
{
    struct blocked_read *b = arg;
    b->n = strm_read(b->fd, b->buf, sizeof(b->buf));
    return NULL;
}

/* A 4 KiB write to p[1] read by a reader blocked on p[0] (its wait marks
 * the head lazy, so the write is a deposit).  0, or -1 on wrong data. */
static int blocked_round(int p[2])
{
    static unsigned char out[4096];
    static struct blocked_read b;
    memset(out, 0x3c, sizeof(out));
    b.fd = p[0];
    if (!CHECK_EQ(pthread_create(&b.t, NULL, blocked_read_main, &b), 0))
        return -1;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL); /* the reader blocks */
    CHECK_EQ(strm_write(p[1], out, sizeof(out)), (ssize_t)sizeof(out));
    pthread_join(b.t, NULL);
    return CHECK_EQ(b.n, (ssize_t)sizeof(out)) && memcmp(b.buf, out, sizeof(out)) == 0 ? 0 : -1;
}

/* One round of D.3 on a new pipe: a first blocked round leaves the read's
 * unit in a slot; in a second, the deposit takes it and the read gives it
 * back (one unit still), where a block from elsewhere would have made two.
 * Returns 1 if so, 0 if the write went another way (a loaded machine: the
 * reader not blocked yet, and the head not lazy), -1 on wrong data. */
static int hand_back_round(int cache)
{
    int p[2];
    if (!CHECK_EQ(strm_pipe(p), 0))
        return -1;
    int r = -1, n0 = 0;
    if (CHECK_EQ(slots_of(p[0]), 0) && blocked_round(p) == 0) {
        n0 = slots_of(p[0]);
        CHECK_EQ(n0, cache); /* the read handed its unit back */
        if (blocked_round(p) == 0)
            r = cache && slots_of(p[0]) == n0;
    }
    if (r >= 0) { /* a 16-byte write is coalesced: a block of its own kind */
        char in[16];
        CHECK_EQ(strm_write(p[1], "sixteen bytes..", 16), 16);
        CHECK_EQ(strm_read(p[0], in, 16), 16);
    }
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    return r;
}

static void test_hand_back(void)
{
    int cache = ustreams_set_block_cache(1), took = 0, bad = 0;
    for (int i = 0; i < 10; i++) {
        int r = hand_back_round(cache);
        bad += r < 0;
        took += r > 0;
    }
    CHECK_EQ(bad, 0);
    if (cache)
        CHECK(took > 0); /* all ten but on a loaded machine */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    printf("D.3: %d of 10 deposits took the unit handed back\n", took);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    test_close_under_writer(sizeof(struct rec));
    test_close_under_writer(BIG_REC);
    test_hand_back();
    return CHECK_RESULT();
}
