/* SPDX-License-Identifier: MIT */
/*
 * test_pushpop_stress.c -- I_PUSH and I_POP of every built-in module while
 * messages flow through a STREAMS pipe in both directions.
 *
 * On each end of a pipe one writer sends 64-byte messages (every third in
 * band 1, the others in band 0), each carrying its band and a sequence number
 * counted per band; one reader on the other end takes them with getpmsg and
 * checks that every band's numbers arrive as 0, 1, 2, ... exactly: nothing
 * lost, nothing duplicated, nothing reordered within a band (putmsg(2):
 * FIFO within a band).  Meanwhile one plumber thread per end pushes and pops
 * a module on its end (push, push, pop, pop), for each built-in module
 * (nullmod, srvmod, pipemod) in turn.  When the plumbers have done their
 * rounds the writers stop with a "stop" message in band 0 carrying their
 * totals, which the reader compares with what it received.  At the end both
 * ends are closed and no block may be outstanding.
 *
 * Regression for issue 9, defects 1 and 2:
 *   - a queue pair reused from the pool had its claim count reset under a
 *     stale claim, which later went to -1 so that I_POP waited forever;
 *   - a writer could sleep for good on flow control while every queue of the
 *     stream was empty (a back-enable lost in a plumbing change);
 *   - popping srvmod let later writes overtake what it still held.
 * Hangs are turned into failures by a watchdog (WATCHDOG_S seconds per
 * round), so the test never blocks ctest.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "check.h"
#include "sthead.h"

#define ROUND_MS   1500 /* push/pop time per module (nullmod: twice that) */
#define MSGSZ      64
#define WATCHDOG_S 30
#define MAGIC      0x50555348u /* "PUSH" */

enum kind { K_DATA = 1, K_STOP };

struct msg {
    uint32_t magic;
    uint32_t kind;
    uint32_t band;
    uint32_t seq;      /* K_DATA: number within its band */
    uint32_t total[2]; /* K_STOP: messages sent per band */
    unsigned char pad[MSGSZ - 24];
};

/* One direction: the writer on end `from`, the reader on the other end. */
struct dir {
    int from;
    atomic_int stop;       /* set by main: send the stop message and return */
    uint32_t sent[2];      /* writer only */
    uint32_t got[2];       /* reader only */
    uint32_t total[2];     /* reader: totals of the stop message */
    atomic_long bad;       /* lost, duplicated or reordered */
    atomic_long errors;    /* failed calls */
    atomic_long progress;  /* messages received, for the watchdog's report */
};

struct plumber {
    int end;
    const char *mod;
    long ms; /* how long to push and pop */
    atomic_long pushes, pops, errors;
};

static int fds[2];
static atomic_int round_done; /* the watchdog's deadline is cancelled */
static const char *round_name;
static struct dir dirs[2];

static void *writer_thread(void *arg)
{
    struct dir *d = arg;
    struct msg m;

    memset(&m, 0, sizeof(m));
    m.magic = MAGIC;
    m.kind = K_DATA;
    for (uint32_t i = 0; !atomic_load(&d->stop); i++) {
        int band = i % 3 == 0;
        m.band = (uint32_t)band;
        m.seq = d->sent[band];
        struct strbuf dat = {.len = sizeof(m), .buf = (char *)&m};
        if (putpmsg(fds[d->from], NULL, &dat, band, MSG_BAND) != 0) {
            fprintf(stderr, "writer %d: putpmsg: %s\n", d->from, strerror(errno));
            atomic_fetch_add(&d->errors, 1);
            return NULL;
        }
        d->sent[band]++;
    }
    m.kind = K_STOP;
    m.band = 0;
    m.total[0] = d->sent[0];
    m.total[1] = d->sent[1];
    struct strbuf dat = {.len = sizeof(m), .buf = (char *)&m};
    if (putpmsg(fds[d->from], NULL, &dat, 0, MSG_BAND) != 0) {
        fprintf(stderr, "writer %d: stop: %s\n", d->from, strerror(errno));
        atomic_fetch_add(&d->errors, 1);
    }
    return NULL;
}

static void *reader_thread(void *arg)
{
    struct dir *d = arg;
    int fd = fds[!d->from];
    struct msg m;

    for (;;) {
        struct strbuf dat = {.maxlen = sizeof(m), .buf = (char *)&m};
        int band = 0, flags = MSG_ANY;
        if (getpmsg(fd, NULL, &dat, &band, &flags) != 0) {
            fprintf(stderr, "reader %d: getpmsg: %s\n", !d->from, strerror(errno));
            atomic_fetch_add(&d->errors, 1);
            return NULL;
        }
        if (dat.len != (int)sizeof(m) || m.magic != MAGIC || m.band > 1 ||
            (int)m.band != band) {
            atomic_fetch_add(&d->bad, 1);
            continue;
        }
        if (m.kind == K_STOP) {
            d->total[0] = m.total[0];
            d->total[1] = m.total[1];
            return NULL;
        }
        if (m.seq != d->got[m.band]) {
            if (atomic_fetch_add(&d->bad, 1) < 5)
                fprintf(stderr, "%s: end %d band %u: got seq %u, expected %u\n", round_name,
                        !d->from, m.band, m.seq, d->got[m.band]);
            if (m.seq < d->got[m.band])
                continue; /* duplicate or late: do not go backwards */
        }
        d->got[m.band] = m.seq + 1;
        atomic_fetch_add(&d->progress, 1);
    }
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Push mod once or twice and pop as often, for p->ms milliseconds.  Neither
 * may fail. */
static void *plumber_thread(void *arg)
{
    struct plumber *p = arg;
    int fd = fds[p->end];
    long end = now_ms() + p->ms;

    for (int i = 0; now_ms() < end; i++) {
        int depth = 1 + (i % 2); /* alternate one and two modules */
        for (int k = 0; k < depth; k++) {
            if (strm_ioctl(fd, I_PUSH, p->mod) != 0) {
                fprintf(stderr, "end %d: I_PUSH %s: %s\n", p->end, p->mod, strerror(errno));
                atomic_fetch_add(&p->errors, 1);
            } else {
                atomic_fetch_add(&p->pushes, 1);
            }
        }
        for (int k = 0; k < depth; k++) {
            if (strm_ioctl(fd, I_POP, 0) != 0) {
                fprintf(stderr, "end %d: I_POP %s: %s\n", p->end, p->mod, strerror(errno));
                atomic_fetch_add(&p->errors, 1);
            } else {
                atomic_fetch_add(&p->pops, 1);
            }
        }
    }
    return NULL;
}

/* Fail the test, rather than hang ctest, when a round does not finish. */
static void *watchdog_thread(void *arg)
{
    (void)arg;
    for (int t = 0; t < WATCHDOG_S * 10; t++) {
        if (atomic_load(&round_done))
            return NULL;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr,
            "%s: HANG: round not finished after %d s (received %ld / %ld, "
            "writers told to stop: %d %d)\n",
            round_name, WATCHDOG_S, atomic_load(&dirs[0].progress),
            atomic_load(&dirs[1].progress), atomic_load(&dirs[0].stop),
            atomic_load(&dirs[1].stop));
    ustreams_dump_all(stderr); /* where it stopped */
    fflush(stderr);
    _exit(1);
}

static void run_round(const char *mod)
{
    pthread_t wt[2], rt[2], pt[2], wd;
    struct plumber pl[2];

    round_name = mod;
    atomic_store(&round_done, 0);
    CHECK_EQ(pthread_create(&wd, NULL, watchdog_thread, NULL), 0);
    CHECK_EQ(strm_pipe(fds), 0);
    for (int i = 0; i < 2; i++) {
        memset(&dirs[i], 0, sizeof(dirs[i]));
        dirs[i].from = i;
        memset(&pl[i], 0, sizeof(pl[i]));
        pl[i].end = i;
        pl[i].mod = mod;
        pl[i].ms = strcmp(mod, "nullmod") == 0 ? 2 * ROUND_MS : ROUND_MS;
    }
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pthread_create(&rt[i], NULL, reader_thread, &dirs[i]), 0);
        CHECK_EQ(pthread_create(&wt[i], NULL, writer_thread, &dirs[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&pt[i], NULL, plumber_thread, &pl[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(pt[i], NULL);
    for (int i = 0; i < 2; i++)
        atomic_store(&dirs[i].stop, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(wt[i], NULL);
        pthread_join(rt[i], NULL);
    }
    atomic_store(&round_done, 1);
    pthread_join(wd, NULL);

    for (int i = 0; i < 2; i++) {
        struct dir *d = &dirs[i];
        CHECK_EQ(pl[i].errors, 0);
        CHECK_EQ(pl[i].pushes, pl[i].pops);
        CHECK_EQ(d->errors, 0);
        CHECK_EQ(d->bad, 0);
        CHECK_EQ(d->got[0], d->total[0]);
        CHECK_EQ(d->got[1], d->total[1]);
        CHECK_EQ(d->total[0], d->sent[0]);
        CHECK_EQ(d->total[1], d->sent[1]);
        CHECK(d->sent[0] > 0 && d->sent[1] > 0);
        printf("%s: end %d -> end %d: %u + %u messages (bands 0, 1), %ld push/pop\n", mod,
               d->from, !d->from, d->got[0], d->got[1], atomic_load(&pl[d->from].pushes));
    }
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
    /* A writer or reader whose wait only the safety net ended (sd_watch.c)
     * although its condition had come: a lost wake-up across a push or pop.
     * Seen about once in a dozen runs under ASan on a loaded machine and not
     * yet explained (issue 10's closing note); reported, not failed, until
     * it is: the net bounds it to 400 ms, and the watchdog above still
     * fails a real hang. */
    long lost = ust_sd_lost_wakeups();
    if (lost)
        printf("test_pushpop_stress: %ld lost wake-up(s) rescued by the safety net\n", lost);
    CHECK_NO_BLOCKS();
}

int main(void)
{
    /* Every module registered by src/admin/builtins.c (the rest are drivers). */
    static const char *const mods[] = {"nullmod", "srvmod", "pipemod"};

    for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
        run_round(mods[i]);
    fflush(stdout);
    return CHECK_RESULT();
}
