/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_rsnap.c -- the read snapshot (src/head/sd_read.c, "The read
 * snapshot"): once a read of a stream head ended under sd_lock with every
 * check of a small byte-stream read passed, the small reads that follow are
 * served in place at the front of the read queue without sd_lock, as long
 * as nobody takes it and the read leaves the queue non-empty.
 *
 *   R.1 taken and used: after one read under the lock, 150 small reads of
 *       one coalescing block leave the reader head's sd_lock untaken; the
 *       bytes come in order
 *   R.2 I_SRDOPT RMSGN after snapshot reads: the next read returns the rest
 *       of the current write only, the one after that one whole write
 *   R.3 the writer closes after snapshot reads: the rest reads back, then 0
 *   R.4 a bad buffer during snapshot reads: EFAULT, nothing consumed
 *   R.5 threaded: one writer of 8-byte sequence records, two readers of 8
 *       bytes (served in place) and one of 2048 (always under the lock,
 *       several messages a read): every read returns consecutive records,
 *       every record is read once, no block outstanding
 *   R.6 fork after snapshot reads: the child's writes reach the parent's
 *       reader through the split pipe, in order
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "pattern_util.h"
#include "sd_takes.h"
#include "sthead.h"

/* R.1 */
static void test_taken_and_used(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    /* The first write is a message of its own (checked under the lock),
     * the 49 after it one coalescing block. */
    pat_write(p[1], 0, 64 * 50, 64);
    pat_read_each(p[0], 0, 64, 64);
    pat_read_each(p[0], 64, 16, 16); /* under the lock: the block, the snapshot */
    unsigned long t0 = takes_of(p[0]);
    pat_read_each(p[0], 80, 150 * 16, 16);
    CHECK_EQ(takes_of(p[0]), t0);
    pat_read(p[0], 80 + 150 * 16, 64 * 50 - 80 - 150 * 16);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* R.2 */
static void test_rdopt_ends_it(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    pat_write(p[1], 0, 20 * 10, 20); /* ten writes of 20 bytes */
    pat_read_each(p[0], 0, 5, 5);
    unsigned long t0 = takes_of(p[0]);
    pat_read_each(p[0], 5, 10, 5); /* in place */
    CHECK_EQ(takes_of(p[0]), t0);
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RMSGN), 0);
    unsigned char buf[100];
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 5); /* the rest of write 1 */
    CHECK_EQ(buf[0], pat(15));
    CHECK_EQ(buf[4], pat(19));
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 20); /* write 2 */
    CHECK_EQ(buf[0], pat(20));
    CHECK_EQ(buf[19], pat(39));
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RNORM), 0);
    pat_read(p[0], 40, 160);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* R.3 */
static void test_writer_closes(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    pat_write(p[1], 0, 64 * 20, 64);
    pat_read_each(p[0], 0, 64, 8);
    CHECK_EQ(strm_close(p[1]), 0);
    pat_read_each(p[0], 64, 64 * 19, 8);
    unsigned char b[8];
    CHECK_EQ(strm_read(p[0], b, sizeof(b)), 0);
    CHECK_EQ(strm_close(p[0]), 0);
}

/* R.4 */
static void test_efault(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    pat_write(p[1], 0, 64 * 20, 64);
    pat_read_each(p[0], 0, 32, 16);
    unsigned long t0 = takes_of(p[0]);
    errno = 0;
    CHECK_EQ(strm_read(p[0], (void *)16, 16), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(takes_of(p[0]), t0); /* refused in place, not under the lock */
    pat_read_each(p[0], 32, 64 * 20 - 32, 16);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* ---- R.5 ---- */

#define NREC 200000
#define NREADERS 3

static int r5_fd;
static atomic_uchar r5_seen[NREC];
static atomic_long r5_bad, r5_dup, r5_total;

struct rd {
    size_t each; /* bytes per read, a multiple of 8 */
    long reads;
};

static void *reader_main(void *arg)
{
    struct rd *r = arg;
    uint64_t buf[2048 / 8];
    uint64_t last = 0;
    int first = 1;
    for (;;) {
        ssize_t n = strm_read(r5_fd, buf, r->each);
        if (n == 0)
            break;
        if (n < 0 || n % 8 != 0) {
            atomic_fetch_add(&r5_bad, 1);
            break;
        }
        r->reads++;
        for (ssize_t i = 0; i < n / 8; i++) {
            uint64_t s = buf[i];
            /* Consecutive within a read; increasing across this reader's. */
            if (s >= NREC || (i > 0 && s != buf[i - 1] + 1) || (!first && s <= last))
                atomic_fetch_add(&r5_bad, 1);
            else if (atomic_exchange(&r5_seen[s], 1))
                atomic_fetch_add(&r5_dup, 1);
            last = s;
            first = 0;
        }
        atomic_fetch_add(&r5_total, n / 8);
    }
    return NULL;
}

static void test_threaded(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    r5_fd = p[0];
    pthread_t t[NREADERS];
    struct rd r[NREADERS] = {{8, 0}, {8, 0}, {2048, 0}};
    for (int i = 0; i < NREADERS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, reader_main, &r[i]), 0);
    for (uint64_t s = 0; s < NREC; s++)
        if (!CHECK_EQ(strm_write(p[1], &s, sizeof(s)), (long)sizeof(s)))
            break;
    CHECK_EQ(strm_close(p[1]), 0);
    for (int i = 0; i < NREADERS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&r5_bad), 0);
    CHECK_EQ(atomic_load(&r5_dup), 0);
    CHECK_EQ(atomic_load(&r5_total), NREC);
    long missing = 0;
    for (long s = 0; s < NREC; s++)
        missing += !atomic_load(&r5_seen[s]);
    CHECK_EQ(missing, 0);
    printf("R.5 reads: %ld, %ld (8 B), %ld (2048 B)\n", r[0].reads, r[1].reads, r[2].reads);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* ---- R.6 ---- */

static int r6_fds[2];

static int r6_child(void *arg)
{
    (void)arg;
    pat_write(r6_fds[1], 64 * 20, 64 * 100, 64);
    return FK_CHILD_FAILED();
}

static void test_fork(void)
{
    CHECK_EQ(strm_pipe(r6_fds), 0);
    pat_write(r6_fds[1], 0, 64 * 20, 64);
    pat_read_each(r6_fds[0], 0, 64 * 10, 16); /* the snapshot, in one process */
    CHECK_EQ(fk_run(r6_child, NULL, 20000), 0); /* split at the fork */
    pat_read_each(r6_fds[0], 64 * 10, 64 * 110, 16);
    pat_write(r6_fds[1], 64 * 120, 64 * 10, 64);
    pat_read_each(r6_fds[0], 64 * 120, 64 * 10, 16);
    CHECK_EQ(strm_close(r6_fds[0]), 0);
    CHECK_EQ(strm_close(r6_fds[1]), 0);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    test_taken_and_used();
    test_rdopt_ends_it();
    test_writer_closes();
    test_efault();
    test_threaded();
    test_fork();
    return CHECK_RESULT();
}
