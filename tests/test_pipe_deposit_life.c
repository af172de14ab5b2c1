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
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROUNDS 200
#else
#define ROUNDS 2000
#endif

struct rec {
    uint32_t tag, seq;
    uint64_t fill;
};

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
    struct rec r = {w->tag, 0, 0};
    for (;; r.seq++) {
        r.fill = (uint64_t)r.tag * 1000003u + r.seq;
        ssize_t n = strm_write(w->fd, &r, sizeof(r));
        if (n != (ssize_t)sizeof(r)) {
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
    struct rec r;
    for (int i = 0; i < want; i++) {
        ssize_t n = strm_read(fd, &r, sizeof(r));
        if (!CHECK_EQ(n, (long)sizeof(r)))
            return bad + 1;
        if (r.tag != tag || r.seq != (uint32_t)i || r.fill != (uint64_t)tag * 1000003u + r.seq) {
            if (bad == 0)
                printf("round %u: record %d has tag %u seq %u\n", tag, i, r.tag, r.seq);
            bad++;
        }
    }
    return bad;
}

static void test_close_under_writer(void)
{
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

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    test_close_under_writer();
    return CHECK_RESULT();
}
