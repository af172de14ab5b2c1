/* SPDX-License-Identifier: MIT */
/*
 * test_fork_stress.c -- fork() while other threads use streams (issue 9,
 * defect 3 (a)).
 *
 * Worker threads hammer the library without pause: pipes with srvmod and
 * nullmod pushed and popped under traffic, writes and reads, timeout(9F) and
 * untimeout(9F), bufcall(9F), opens and closes, so that at any instant some
 * of them hold library locks (the registry, the open-stream table, queue
 * locks, pools, block depots, the timer and bufcall locks...).  Meanwhile
 * the main thread forks NFORK times.  Each child opens a new pipe, pushes
 * srvmod, writes and reads messages through it in order, waits for a
 * timeout, and exits 0 with no block outstanding.  A child that has not
 * exited within CHILD_MS is deadlocked on a lock a parent thread held at the
 * fork (pthread_atfork(3): only the forking thread exists in the child):
 * the test fails.  The workers check their own traffic too, and at the end
 * no block may be outstanding in the parent.
 *
 * Under AddressSanitizer the workers are paused between two rounds for each
 * fork: GCC 12's ASan allocator installs no fork handler, so a child forked
 * while another thread is inside its malloc can deadlock in malloc (seen:
 * the child blocked in SizeClassAllocator64::GetFromAllocator, called from
 * calloc), a defect of the sanitizer, not of the library.  That run checks
 * the child's side (threads restarted, caches and counters, new streams)
 * under ASan.  TSan locks its user allocator at fork but not its internal
 * one: a child whose atfork handler starts a thread (a split pipe's watch,
 * sd_xpipe.c) blocked in TSan's ProcCreate on internal_allocator_cache_mu,
 * held in the parent by another thread at the fork (seen 2026-11-28, 1
 * child in about 3000), so TSan runs pause the workers too.  The plain run
 * forks into busy workers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stropts.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"

#if defined(__SANITIZE_THREAD__)
#define NFORK 40
#elif defined(__SANITIZE_ADDRESS__)
#define NFORK 100
#else
#define NFORK 200
#endif
#define NWORKERS 4
#define NMSG     20
#define CHILD_MS 10000

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PAUSE_FOR_FORK 1
#else
#define PAUSE_FOR_FORK 0
#endif

void ust_xpipe_dump(FILE *f); /* src/procs/sd_xpipe.c: split pipe ends */

static atomic_int stop;
static atomic_int pausing; /* PAUSE_FOR_FORK: workers wait between rounds */
static atomic_int inside;  /* workers inside a round */
static atomic_long worker_rounds;
static atomic_int fired;

static void on_timeout(void *arg)
{
    atomic_fetch_add(&fired, (int)(long)arg);
}

/* Read exactly len bytes equal to want within 5 s (byte-stream mode). */
static int read_is(int fd, const char *want, size_t len)
{
    struct pollfd p = {fd, POLLIN, 0};
    char buf[64];
    int r = strm_poll(&p, 1, 5000);
    if (r != 1) {
        fprintf(stderr, "read_is(%.*s): strm_poll %d (revents %#x)\n", (int)len, want, r, p.revents);
        ust_xpipe_dump(stderr);
        int nread = -1, nq = strm_ioctl(fd, I_NREAD, &nread);
        char name[FMNAMESZ + 1] = "";
        strm_ioctl(fd, I_LOOK, name);
        r = strm_poll(&p, 1, 5000);
        fprintf(stderr, "  I_NREAD %d (%d bytes), top module %s; poll again: %d\n", nq, nread, name, r);
        return 0;
    }
    ssize_t n = strm_read(fd, buf, len);
    if (n == (ssize_t)len && memcmp(buf, want, len) == 0)
        return 1;
    fprintf(stderr, "read_is(%.*s): read %zd '%.*s'\n", (int)len, want, n, (int)(n > 0 ? n : 0), buf);
    return 0;
}

/* One pipe's life: push, traffic, pop under traffic, close. */
static void pipe_round(int id)
{
    int fds[2];
    char msg[16];
    if (!CHECK_EQ(strm_pipe(fds), 0))
        return;
    if (!CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "srvmod"), 0))
        fprintf(stderr, "I_PUSH: %s (isastream %d, F_GETFD %d)\n", strerror(errno),
                isastream(fds[0]), fcntl(fds[0], F_GETFD));
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, id & 1 ? "nullmod" : "srvmod"), 0);
    for (int i = 0; i < NMSG; i++) {
        int len = snprintf(msg, sizeof(msg), "w%02d", i);
        if (!CHECK_EQ(strm_write(fds[i & 1], msg, (size_t)len), len))
            fprintf(stderr, "write: %s (isastream %d, F_GETFD %d)\n", strerror(errno),
                    isastream(fds[i & 1]), fcntl(fds[i & 1], F_GETFD));
        CHECK(read_is(fds[!(i & 1)], msg, (size_t)len));
        if (i == NMSG / 2)
            CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), 0);
    }
    toid_t t = timeout(on_timeout, (void *)0L, 1000); /* never fires: cancelled */
    CHECK(t != 0);
    CHECK(untimeout(t) >= 0);
    bufcall_id_t b = bufcall(32, BPRI_MED, on_timeout, (void *)0L);
    if (id & 1)
        unbufcall(b);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* Tight loops on the locks taken most briefly, so that some are held at the
 * instant of fork: opens and closes (open-stream table, registry, driver,
 * pools, descriptor table), pushes and pops, timeouts and bufcalls (timer
 * and bufcall locks), bursts of blocks past the thread cache (depots). */
static void lock_round(int id)
{
    if (id == 1) {
        int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
        if (!CHECK(fd >= 0))
            return;
        CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
        CHECK_EQ(strm_write(fd, "e", 1), 1);
        CHECK(read_is(fd, "e", 1));
        CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
        CHECK_EQ(strm_close(fd), 0);
        return;
    }
    mblk_t *burst[200];
    for (int i = 0; i < 200; i++)
        burst[i] = allocb((size_t)(64 + (i & 3) * 300), BPRI_MED);
    for (int i = 0; i < 200; i++) {
        CHECK(burst[i] != NULL);
        freemsg(burst[i]);
    }
    for (int i = 0; i < 20; i++) {
        toid_t t = timeout(on_timeout, (void *)0L, 1000);
        CHECK(t != 0);
        CHECK(untimeout(t) >= 0);
        unbufcall(bufcall(32, BPRI_MED, on_timeout, (void *)0L));
    }
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&inside, 1);
        while (atomic_load(&pausing)) { /* only with PAUSE_FOR_FORK */
            atomic_fetch_sub(&inside, 1);
            fk_sleep_ms(1);
            atomic_fetch_add(&inside, 1);
        }
        if (id == 0 || id == 3)
            pipe_round(id);
        else
            lock_round(id);
        atomic_fetch_sub(&inside, 1);
        atomic_fetch_add(&worker_rounds, 1);
    }
    return NULL;
}

/* The child: a new pipe with srvmod, messages through it in order, a timeout. */
static int child(void *arg)
{
    int fds[2];
    char msg[16];
    (void)arg;
    atomic_store(&fired, 0);
    if (!CHECK_EQ(strm_pipe(fds), 0))
        return 1;
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "srvmod"), 0);
    for (int i = 0; i < 8; i++) {
        int len = snprintf(msg, sizeof(msg), "c%d", i);
        CHECK_EQ(strm_write(fds[0], msg, (size_t)len), len);
    }
    for (int i = 0; i < 8; i++) {
        int len = snprintf(msg, sizeof(msg), "c%d", i);
        CHECK(read_is(fds[1], msg, (size_t)len));
    }
    CHECK(timeout(on_timeout, (void *)1L, 1) != 0);
    for (int i = 0; i < 5000 && atomic_load(&fired) == 0; i++)
        fk_sleep_ms(1);
    CHECK_EQ(atomic_load(&fired), 1);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return FK_CHILD_FAILED();
}

int main(void)
{
    pthread_t t[NWORKERS];
    int hung = 0, died = 0, bad = 0;

    for (long i = 0; i < NWORKERS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    while (atomic_load(&worker_rounds) < NWORKERS)
        fk_sleep_ms(1);
    for (int i = 0; i < NFORK; i++) {
        if (PAUSE_FOR_FORK) {
            atomic_store(&pausing, 1);
            while (atomic_load(&inside) > 0)
                fk_sleep_ms(1);
        }
        int r = fk_run(child, NULL, CHILD_MS);
        atomic_store(&pausing, 0);
        hung += r == FK_HUNG;
        died += r == FK_DIED;
        bad += r != 0 && r != FK_HUNG && r != FK_DIED;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(t[i], NULL);
    if (hung || died || bad)
        fprintf(stderr, "%d forks: %d children hung, %d died, %d failed\n", NFORK, hung, died,
                bad);
    CHECK_EQ(hung, 0);
    CHECK_EQ(died, 0);
    CHECK_EQ(bad, 0);
    CHECK(atomic_load(&worker_rounds) > NWORKERS);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
