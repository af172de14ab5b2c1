/* SPDX-License-Identifier: MIT */
/*
 * copy_ceiling.c -- the fastest two-copy hand-off this machine allows: what
 * a pipe of any kind (pipe(2), ustreams) could reach at a given write size
 * with one writer thread and one reader thread, nothing but the copies and
 * the hand-off.
 *
 *   bench_copy_ceiling [-s SIZE] [-t SECONDS] [-n BLOCKS[,BLOCKS...]]
 *
 * The writer copies SIZE bytes from its buffer into the next of BLOCKS
 * blocks of a ring, publishes it (a release store of a counter on its own
 * cache line), and waits only when BLOCKS are unread; the reader waits for
 * a block, copies it into its own buffer and publishes the count read.  Both
 * spin: no system call, no lock, no allocation.  Prints, per BLOCKS, the
 * writes per second and bytes per second.  BLOCKS is how far the writer may
 * run ahead: the working set the two CPUs pass between them (a pipe's
 * high-water mark over the write size).  Used for the 4 KiB target of
 * issue 24 (bench/README.md "The two-copy ceiling at 4 KiB").
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ring {
    _Alignas(64) atomic_ulong written; /* blocks published by the writer */
    _Alignas(64) atomic_ulong taken;   /* blocks copied out by the reader */
    _Alignas(64) atomic_int stop;
    unsigned char *blocks;
    size_t size;
    unsigned long nblocks;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *reader(void *arg)
{
    struct ring *r = arg;
    unsigned char *buf = aligned_alloc(64, r->size);
    if (!buf)
        abort();
    for (unsigned long i = 0;; i++) {
        while (atomic_load_explicit(&r->written, memory_order_acquire) == i)
            if (atomic_load_explicit(&r->stop, memory_order_relaxed))
                goto out;
        memcpy(buf, r->blocks + (i % r->nblocks) * r->size, r->size);
        atomic_store_explicit(&r->taken, i + 1, memory_order_release);
    }
out:
    free(buf);
    return NULL;
}

/* Writes per second through a ring of nblocks blocks for secs seconds. */
static double run(size_t size, unsigned long nblocks, double secs)
{
    struct ring r = {.size = size, .nblocks = nblocks};
    r.blocks = aligned_alloc(64, size * nblocks);
    unsigned char *src = aligned_alloc(64, size);
    if (!r.blocks || !src)
        abort();
    memset(src, 0x5a, size);
    memset(r.blocks, 0, size * nblocks);
    pthread_t t;
    if (pthread_create(&t, NULL, reader, &r) != 0)
        abort();
    unsigned long i = 0;
    double t0 = now(), t1 = t0;
    while (t1 - t0 < secs) {
        for (int k = 0; k < 1024; k++, i++) {
            while (i - atomic_load_explicit(&r.taken, memory_order_acquire) >= nblocks)
                ;
            memcpy(r.blocks + (i % nblocks) * size, src, size);
            atomic_store_explicit(&r.written, i + 1, memory_order_release);
        }
        t1 = now();
    }
    while (atomic_load_explicit(&r.taken, memory_order_acquire) != i)
        ;
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    double rate = (double)i / (now() - t0);
    free(r.blocks);
    free(src);
    return rate;
}

int main(int argc, char **argv)
{
    size_t size = 4096;
    double secs = 0.3;
    char list[256] = "1,2,4,8,16,32";
    int c;
    while ((c = getopt(argc, argv, "s:t:n:")) != -1) {
        switch (c) {
        case 's':
            size = strtoul(optarg, NULL, 0);
            break;
        case 't':
            secs = strtod(optarg, NULL);
            break;
        case 'n':
            snprintf(list, sizeof(list), "%s", optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-s SIZE] [-t SECONDS] [-n BLOCKS[,BLOCKS...]]\n",
                    argv[0]);
            return 2;
        }
    }
    if (size == 0 || secs <= 0) {
        fprintf(stderr, "%s: SIZE and SECONDS must be positive\n", argv[0]);
        return 2;
    }
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned long n = strtoul(tok, NULL, 0);
        if (n == 0)
            continue;
        double w = run(size, n, secs);
        printf("size %zu blocks %lu: %.0f writes/s %.2f GB/s\n", size, n, w,
               w * (double)size / 1e9);
    }
    return 0;
}
