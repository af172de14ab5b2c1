/* SPDX-License-Identifier: MIT */
/*
 * test_stress_exec.c -- the executive under load: many writers, priority
 * bands, small water marks, a chain of service procedures.
 *
 * Stream: test head -> srvmod -> srvmod -> srvmod -> echo (harness.h), every
 * queue (both directions, bands 0, 1 and 5, and the head's read queue) with
 * hiwat 512 and lowat 128, so that flow control engages every few messages.
 * P producer threads write messages of 16 bytes (producer, band, sequence
 * number) over bands 0, 1 and 5, asking th_canwrite (bcanputnext of the head
 * write queue) before each write and waiting while it says no, as the stream
 * head does.  One consumer reads everything back with th_read.
 *
 * Checks (putq(9F)/getq(9F) order, canput(9F) flow control, qenable(9F)
 * back-enabling, allocb(9F)/freemsg(9F) accounting):
 *   1 no message lost, none duplicated, none corrupted; b_band kept
 *   2 order kept per (producer, band)
 *   3 writers were blocked by flow control and woken again (back-enabling is
 *     the only way a blocked srvmod resumes); QBACK is set where it happened
 *   4 the head's read queue never held more than hiwat plus one message
 *   5 after close, no message block is outstanding
 * Counts are scaled down under TSan (built with -fsanitize=thread, or
 * USTREAMS_TSAN set) to keep the run within seconds.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ustreams_exec.h>

#include "check.h"
#include "harness.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define NPROD 4
#define NMODS 3
#define NBANDS 3
#define HIWAT 512
#define LOWAT 128
#define MAGIC 0x53545245u /* "STRE" */

static const unsigned char bands[NBANDS] = {0, 1, 5};

struct rec {
    uint32_t magic;
    uint32_t prod;
    uint32_t band;
    uint32_t seq;
};

static struct th_stream *s;
static int per_prod; /* messages per producer */
static atomic_int abort_run;
static atomic_long canput_fails, wakeups;

/* Consumer's bookkeeping (consumer thread only, read after join). */
static uint32_t next_seq[NPROD][NBANDS];
static unsigned char *seen[NPROD][NBANDS];
static long received, lost_order, dups, corrupt, bad_header;

static int band_index(uint32_t band)
{
    for (int i = 0; i < NBANDS; i++)
        if (bands[i] == band)
            return i;
    return -1;
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void *producer_main(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    uint32_t seq[NBANDS] = {0};
    for (int i = 0; i < per_prod && !atomic_load(&abort_run); i++) {
        int bi = (int)((i + id) % NBANDS);
        unsigned char band = bands[bi];
        struct rec r = {MAGIC, id, band, seq[bi]++};
        mblk_t *mp = th_msg(i % 7 == 0 ? M_PROTO : M_DATA, band, &r, sizeof(r));
        if (mp == NULL) {
            fprintf(stderr, "test_stress_exec: allocb failed\n");
            atomic_store(&abort_run, 1);
            break;
        }
        if (!th_canwrite(s, band)) {
            atomic_fetch_add(&canput_fails, 1);
            int spins = 0;
            while (!th_canwrite(s, band) && !atomic_load(&abort_run)) {
                if (++spins < 50)
                    sched_yield();
                else
                    sleep_us(50);
            }
            atomic_fetch_add(&wakeups, 1);
        }
        th_write(s, mp);
    }
    return NULL;
}

static void *consumer_main(void *arg)
{
    long total = (long)(intptr_t)arg;
    while (received < total) {
        mblk_t *mp = th_read(s, 20000);
        if (mp == NULL) {
            fprintf(stderr, "test_stress_exec: stalled after %ld of %ld messages\n", received,
                    total);
            atomic_store(&abort_run, 1);
            break;
        }
        struct rec r;
        if (mp->b_cont != NULL || mp->b_wptr - mp->b_rptr != (long)sizeof(r)) {
            corrupt++;
            freemsg(mp);
            continue;
        }
        memcpy(&r, mp->b_rptr, sizeof(r));
        int bi = band_index(r.band);
        if (r.magic != MAGIC || r.prod >= NPROD || bi < 0 || r.seq >= (uint32_t)per_prod) {
            corrupt++;
            freemsg(mp);
            continue;
        }
        unsigned char type = mp->b_datap->db_type;
        if (mp->b_band != r.band || (type != M_DATA && type != M_PROTO))
            bad_header++;
        if (seen[r.prod][bi][r.seq])
            dups++;
        seen[r.prod][bi][r.seq] = 1;
        if (r.seq != next_seq[r.prod][bi])
            lost_order++;
        next_seq[r.prod][bi] = r.seq + 1;
        received++;
        freemsg(mp);
        /* an occasionally slow reader lets the stream fill up */
        if ((received & 1023) == 0)
            sleep_us(200);
    }
    return NULL;
}

/* hiwat/lowat on band 0 and the test bands of q. */
static void set_marks(queue_t *q)
{
    for (int i = 0; i < NBANDS; i++) {
        CHECK_EQ(strqset(q, QLOWAT, bands[i], 0), 0);
        CHECK_EQ(strqset(q, QHIWAT, bands[i], HIWAT), 0);
        CHECK_EQ(strqset(q, QLOWAT, bands[i], LOWAT), 0);
    }
}

int main(void)
{
    int slow = UNDER_TSAN || getenv("USTREAMS_TSAN") != NULL;
    per_prod = slow ? 6000 : 20000;
    long total = (long)NPROD * per_prod;

    s = th_open("echo", 0);
    CHECK(s != NULL);
    if (s == NULL)
        return CHECK_RESULT();
    for (int i = 0; i < NMODS; i++)
        CHECK_EQ(th_push(s, "srvmod"), 0);
    CHECK_EQ(s->nmods, NMODS);
    CHECK_EQ(th_set_hiwat(s, HIWAT, LOWAT), 0);
    set_marks(s->hq);
    for (int i = 0; i < NMODS; i++) {
        set_marks(s->mods[i]);
        set_marks(WR(s->mods[i]));
    }
    set_marks(s->drv);
    set_marks(WR(s->drv));
    for (int p = 0; p < NPROD; p++)
        for (int b = 0; b < NBANDS; b++)
            seen[p][b] = calloc((size_t)per_prod, 1);

    pthread_t prod[NPROD], cons;
    CHECK_EQ(pthread_create(&cons, NULL, consumer_main, (void *)(intptr_t)total), 0);
    for (int p = 0; p < NPROD; p++)
        CHECK_EQ(pthread_create(&prod[p], NULL, producer_main, (void *)(uintptr_t)p), 0);
    for (int p = 0; p < NPROD; p++)
        pthread_join(prod[p], NULL);
    pthread_join(cons, NULL);

    /* 1, 2: everything arrived, once, intact, in order per (producer, band) */
    CHECK_EQ(atomic_load(&abort_run), 0);
    CHECK_EQ(received, total);
    CHECK_EQ(corrupt, 0);
    CHECK_EQ(dups, 0);
    CHECK_EQ(lost_order, 0);
    CHECK_EQ(bad_header, 0);
    for (int p = 0; p < NPROD; p++) {
        long sum = 0;
        for (int b = 0; b < NBANDS; b++) {
            long n = 0;
            for (int i = 0; i < per_prod; i++)
                n += seen[p][b][i];
            CHECK_EQ(n, next_seq[p][b]); /* seqs 0..n-1 all seen */
            sum += n;
        }
        CHECK_EQ(sum, per_prod);
    }

    /* 3: flow control engaged, and blocked writers were let go again */
    long fails = atomic_load(&canput_fails), wakes = atomic_load(&wakeups);
    printf("messages %ld, canput failures %ld, wake-ups %ld, head max %zu bytes\n", received,
           fails, wakes, s->max_bytes);
    CHECK(fails >= 1);
    CHECK_EQ(wakes, fails);
    queue_t *top = s->mods[NMODS - 1];
    CHECK(ust_qflags(top) & QBACK);     /* read side: back-enabled by the reader */
    CHECK(ust_qflags(WR(top)) & QBACK); /* write side: by the module below */
    long srv_runs = 0;
    for (int i = 0; i < NMODS; i++)
        srv_runs += atomic_load(&ust_qpv(s->mods[i])->nsrv) +
                    atomic_load(&ust_qpv(WR(s->mods[i]))->nsrv);
    CHECK(srv_runs > 0);

    /* 4: the head's read queue respected its high-water mark (band 0): only
     * one service procedure feeds it, and it asks before each message */
    CHECK(s->max_bytes > 0);
    CHECK(s->max_bytes <= HIWAT + sizeof(struct rec));

    /* 5 */
    th_close(s);
    for (int p = 0; p < NPROD; p++)
        for (int b = 0; b < NBANDS; b++)
            free(seen[p][b]);
    th_assert_no_blocks();
    ustreams_shutdown();
    return CHECK_RESULT();
}
