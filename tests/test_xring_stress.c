/* SPDX-License-Identifier: MIT */
/*
 * test_xring_stress.c -- the shared-memory message rings (src/procs/xring.c)
 * under concurrency: threads, fork(), and a lock holder that dies.
 *
 * Every sleeper here follows xring.h's protocol: seen = xring_bell_value;
 * arm; if the arm says it may sleep, xring_wait(seen) with a long timeout
 * (WAIT_MS).  A wait that runs into that timeout with the bell unchanged
 * while the awaited condition holds (data queued for a reader, room below
 * hiwat for a writer) is a lost wake-up: the arming guaranteed a report, and
 * the reporter rings.  Such a case is counted and fails the test (the
 * timeout only keeps it from hanging).  A wait that returns early with the
 * bell unchanged is not one: a ring's FUTEX_WAKE may arrive after a sleeper
 * read the bell that ring had already bumped (a spurious wake-up, which the
 * caller absorbs by trying again).
 *
 * Cases:
 *   1 2 producers x 2 consumers in threads, 200k messages of 8..308 bytes in
 *     a 16 KiB ring: every message taken once, every byte checked, each
 *     producer's order kept as seen by each consumer, no lost wake-up, both
 *     kinds of sleep happened
 *   2 across fork(): the parent produces 100k sequence-numbered messages of
 *     random sizes 0..2000 bytes into an 8 KiB ring (hiwat 4 KiB, so the
 *     writer sleeps often); the child attaches to the memfd, consumes and
 *     checks every byte and the order, sleeping when empty, then sends its
 *     counts back on the other ring and exits 0 only if all was right
 *   3 a lock holder that died (its pid written into the producer or the
 *     consumer lock word by a child that then exits): the put or take
 *     returns -EIO after >= 50 ms and well within 2 s, the ring is broken,
 *     the other ring works; a holder that is slow but alive is waited for
 *     (the ring is not broken); a free word with the waiters bit is taken
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fork_util.h"
#include "xring.h"
#include "xring_layout.h"

#define WAIT_MS 2000 /* a sleeper's timeout: only a lost wake-up reaches it */

static unsigned char pat(uint32_t a, uint32_t seq, size_t i)
{
    return (unsigned char)(a * 71u + seq * 131u + i * 7u + (i >> 8));
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A wait of ms that ran into its timeout. */
static int lost_wakeup(long ms)
{
    return ms >= WAIT_MS - 100;
}

/* No put_wait sleeps past this (now_ms), nor once stop_all is set (a lost
 * wake-up or a bad message seen anywhere): a broken ring or a peer gone for
 * good fails the test quickly instead of hanging it. */
static long put_deadline;
static atomic_int stop_all;
static pid_t peer_child; /* test_fork: the consumer; put_wait stops if it exited */

static int peer_gone(void)
{
    siginfo_t si = {0};
    return peer_child > 0 &&
           waitid(P_PID, (id_t)peer_child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == peer_child;
}

/* Put m (iov) into ring d (high-water mark hiwat), sleeping while refused.
 * Returns 0, or the error (-ETIMEDOUT past put_deadline).  *sleeps counts
 * the sleeps, *lost the lost wake-ups. */
static int put_wait(struct xring_chan *ch, int d, uint32_t hiwat, const struct xring_msg *m,
                    struct iovec *iov, int n, long *sleeps, long *lost)
{
    for (;;) {
        int rc = xring_put(ch, d, m, iov, n);
        if (rc >= 0) {
            if (rc & XRING_WAKE_READER)
                xring_ring(ch, d);
            return 0;
        }
        if (rc != -EAGAIN)
            return rc;
        if (now_ms() > put_deadline || atomic_load(&stop_all) || peer_gone())
            return -ETIMEDOUT;
        uint32_t seen = xring_bell_value(ch, d);
        rc = xring_arm_writer(ch, d);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            ++*sleeps;
            long t0 = now_ms();
            int wrc = xring_wait(ch, d, seen, WAIT_MS);
            if (lost_wakeup(now_ms() - t0) && xring_bell_value(ch, d) == seen &&
                xring_queued(ch, d) < hiwat) {
                fprintf(stderr, "writer: lost wake-up? wait %d after %ld ms, %u queued\n", wrc,
                        now_ms() - t0, xring_queued(ch, d));
                ++*lost;
                atomic_store(&stop_all, 1);
            }
        }
    }
}

/* ------------------------------------------------------------ 1: threads */

#define T_NPROD 2
#define T_NCONS 2
#define T_NMSG  200000
#define T_PER   (T_NMSG / T_NPROD)

struct tctx {
    struct xring_chan *ch;
    atomic_long taken;
    atomic_long bad, lost, wsleeps, rsleeps;
    atomic_uchar seen[T_NPROD][T_PER];
};

struct targ {
    struct tctx *t;
    uint32_t id;
};

static uint32_t t_len(uint32_t p, uint32_t s)
{
    return (s * 13u + p * 7u) % 301u;
}

static void *t_producer(void *arg)
{
    struct targ *a = arg;
    struct tctx *t = a->t;
    unsigned char data[301];
    long sleeps = 0, lost = 0;

    for (uint32_t s = 0; s < T_PER; s++) {
        uint32_t hdr[2] = {a->id, s}, n = t_len(a->id, s);
        for (uint32_t i = 0; i < n; i++)
            data[i] = pat(a->id, s, i);
        struct xring_msg m = {.type = 0, .band = (uint8_t)a->id, .ctl_len = 8, .data_len = n};
        struct iovec iov[2] = {{hdr, 8}, {data, n}};
        if (put_wait(t->ch, 0, 8192, &m, iov, 2, &sleeps, &lost) != 0) {
            atomic_fetch_add(&t->bad, 1);
            break;
        }
    }
    atomic_fetch_add(&t->wsleeps, sleeps);
    atomic_fetch_add(&t->lost, lost);
    return NULL;
}

static void *t_consumer(void *arg)
{
    struct tctx *t = ((struct targ *)arg)->t;
    int64_t last[T_NPROD] = {-1, -1};
    unsigned char data[512];
    uint32_t hdr[2];
    long bad = 0, lost = 0, sleeps = 0;

    while (atomic_load(&t->taken) < T_NMSG) {
        struct xring_msg m;
        int rc = xring_take(t->ch, 0, &m, hdr, sizeof(hdr), data, sizeof(data));
        if (rc >= 0) {
            if (rc & XRING_WAKE_WRITER)
                xring_ring(t->ch, 0);
            uint32_t p = hdr[0], s = hdr[1];
            if (m.ctl_len != 8 || p >= T_NPROD || s >= T_PER || m.band != p ||
                m.data_len != t_len(p, s) || (int64_t)s <= last[p] ||
                atomic_exchange(&t->seen[p][s], 1) != 0) {
                bad++;
            } else {
                last[p] = s;
                for (uint32_t i = 0; i < m.data_len; i++)
                    bad += data[i] != pat(p, s, i);
            }
            if (atomic_fetch_add(&t->taken, 1) + 1 == T_NMSG)
                xring_ring(t->ch, 0); /* the other consumers may sleep */
            continue;
        }
        if (rc != -ENODATA) {
            bad++;
            break;
        }
        uint32_t seen = xring_bell_value(t->ch, 0);
        if (atomic_load(&t->taken) >= T_NMSG)
            break;
        rc = xring_arm_reader(t->ch, 0);
        if (rc < 0) {
            bad++;
            break;
        }
        if (rc == 0) {
            sleeps++;
            long t0 = now_ms();
            int wrc = xring_wait(t->ch, 0, seen, WAIT_MS);
            if (lost_wakeup(now_ms() - t0) && xring_bell_value(t->ch, 0) == seen &&
                xring_queued(t->ch, 0) > 0) {
                fprintf(stderr, "reader: lost wake-up? wait %d after %ld ms, %u queued\n", wrc,
                        now_ms() - t0, xring_queued(t->ch, 0));
                lost++;
            }
        }
        if (lost || bad) {
            atomic_store(&stop_all, 1);
            xring_ring(t->ch, 0);
        }
        if (atomic_load(&stop_all))
            break;
    }
    atomic_fetch_add(&t->bad, bad);
    atomic_fetch_add(&t->lost, lost);
    atomic_fetch_add(&t->rsleeps, sleeps);
    return NULL;
}

static void test_threads(void)
{
    static struct tctx t;
    pthread_t th[T_NPROD + T_NCONS];
    struct targ a[T_NPROD + T_NCONS];

    CHECK_EQ(xring_create(16384, 8192, 2048, &t.ch), 0);
    put_deadline = now_ms() + 120000;
    for (int i = 0; i < T_NPROD + T_NCONS; i++) {
        a[i].t = &t;
        a[i].id = (uint32_t)(i < T_NPROD ? i : i - T_NPROD);
        pthread_create(&th[i], NULL, i < T_NPROD ? t_producer : t_consumer, &a[i]);
    }
    for (int i = 0; i < T_NPROD + T_NCONS; i++)
        pthread_join(th[i], NULL);
    long missing = 0;
    for (int p = 0; p < T_NPROD; p++)
        for (int s = 0; s < T_PER; s++)
            missing += atomic_load(&t.seen[p][s]) != 1;
    CHECK_EQ(atomic_load(&t.taken), T_NMSG);
    CHECK_EQ(missing, 0);
    CHECK_EQ(atomic_load(&t.bad), 0);
    CHECK_EQ(atomic_load(&t.lost), 0);
    CHECK_EQ(xring_queued(t.ch, 0), 0);
    CHECK_EQ(xring_broken(t.ch, 0), 0);
    printf("threads: %ld writer sleeps, %ld reader sleeps\n", atomic_load(&t.wsleeps),
           atomic_load(&t.rsleeps));
    CHECK(atomic_load(&t.wsleeps) > 0);
    xring_destroy(t.ch);
}

/* ------------------------------------------------------------- 2: fork() */

#define F_NMSG 100000

static uint32_t f_len(uint32_t seq)
{
    uint32_t x = seq * 2654435761u + 12345u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return x % 2001u;
}

/* The child: consume F_NMSG messages of ring 0, report on ring 1. */
static int f_child(int fd)
{
    struct xring_chan *ch;
    unsigned char data[2001];
    uint32_t seq;
    long sleeps = 0, lost = 0, bad = 0, wakes = 0;

    if (xring_attach(fd, &ch) != 0)
        return 2;
    for (uint32_t want = 0; want < F_NMSG;) {
        struct xring_msg m;
        int rc = xring_take(ch, 0, &m, &seq, sizeof(seq), data, sizeof(data));
        if (rc >= 0) {
            if (rc & XRING_WAKE_WRITER) {
                wakes++;
                xring_ring(ch, 0);
            }
            if (seq != want || m.ctl_len != 4 || m.data_len != f_len(seq) || m.aux != ~seq) {
                bad++;
                break;
            }
            for (uint32_t i = 0; i < m.data_len; i++)
                bad += data[i] != pat(0, seq, i);
            want++;
            continue;
        }
        if (rc != -ENODATA || xring_is_shut(ch, 0)) { /* shut: the parent gave up */
            bad++;
            break;
        }
        uint32_t seen = xring_bell_value(ch, 0);
        rc = xring_arm_reader(ch, 0);
        if (rc < 0) {
            bad++;
            break;
        }
        if (rc == 0) {
            sleeps++;
            long t0 = now_ms();
            xring_wait(ch, 0, seen, WAIT_MS);
            if (lost_wakeup(now_ms() - t0) && xring_bell_value(ch, 0) == seen &&
                xring_queued(ch, 0) > 0) {
                lost++;
                break;
            }
        }
    }
    long report[4] = {bad, lost, sleeps, wakes};
    struct xring_msg m = {.data_len = sizeof(report)};
    struct iovec iov = {report, sizeof(report)};
    long dummy_sleeps = 0, dummy_lost = 0;
    put_deadline = now_ms() + 10000;
    put_wait(ch, 1, 4096, &m, &iov, 1, &dummy_sleeps, &dummy_lost);
    xring_destroy(ch);
    return bad || lost ? 1 : 0;
}

static void test_fork(void)
{
    struct xring_chan *ch;
    unsigned char data[2001];
    long sleeps = 0, lost = 0;
    int err = 0;

    CHECK_EQ(xring_create(8192, 4096, 1024, &ch), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(f_child(xring_fd(ch)));
    CHECK(pid > 0);
    peer_child = pid;
    atomic_store(&stop_all, 0);
    long t0 = now_ms();
    put_deadline = t0 + 120000;
    for (uint32_t seq = 0; seq < F_NMSG && !err; seq++) {
        uint32_t n = f_len(seq);
        for (uint32_t i = 0; i < n; i++)
            data[i] = pat(0, seq, i);
        struct xring_msg m = {.type = 1, .ctl_len = 4, .data_len = n, .aux = ~seq};
        struct iovec iov[2] = {{&seq, 4}, {data, n}};
        err = put_wait(ch, 0, 4096, &m, iov, 2, &sleeps, &lost);
        if (lost) /* the child may be gone: stop */
            break;
    }
    CHECK_EQ(err, 0);
    CHECK_EQ(lost, 0);
    if (err != 0)
        xring_shut(ch, 0); /* the child stops waiting */
    /* The child's report, on ring 1 (taken once more after it exited). */
    long report[4] = {-1, -1, -1, -1};
    int got = 0, status = -1, exited = 0;
    while (now_ms() - t0 < 120000) {
        uint32_t seen = xring_bell_value(ch, 1);
        int rc = xring_take(ch, 1, NULL, NULL, 0, report, sizeof(report));
        if (rc >= 0 || rc != -ENODATA || exited) {
            got = rc >= 0;
            break;
        }
        if (xring_arm_reader(ch, 1) == 0)
            xring_wait(ch, 1, seen, 100);
        exited = waitpid(pid, &status, WNOHANG) == pid;
    }
    peer_child = 0;
    CHECK(got);
    if (!exited) {
        if (!got)
            kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("fork: %ld ms, writer sleeps %ld; child: bad %ld lost %ld reader sleeps %ld "
           "writer wakes %ld\n",
           now_ms() - t0, sleeps, report[0], report[1], report[2], report[3]);
    CHECK_EQ(report[0], 0);
    CHECK_EQ(report[1], 0);
    CHECK(sleeps > 0);     /* the writer slept ... */
    CHECK(report[3] > 0);  /* ... and was woken by the reader's takes */
    CHECK(report[2] >= 0); /* the reader sleeps when the parent is slower (not always) */
    xring_destroy(ch);
}

/* -------------------------------------------------- 3: a dead lock holder */

static struct xring_ctl *ctl_of(struct xring_chan *ch, int d, void **map, size_t *len)
{
    struct stat st;
    fstat(xring_fd(ch), &st);
    *len = (size_t)st.st_size;
    *map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, xring_fd(ch), 0);
    return &((struct xring_hdr *)*map)->h_ring[d];
}

static void test_dead_holder(int consumer)
{
    struct xring_chan *ch;
    void *map;
    size_t len;
    char b[64];

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    struct xring_msg m = {.data_len = 3};
    struct iovec iov = {"abc", 3};
    CHECK_EQ(xring_put(ch, 0, &m, &iov, 1), 0);
    struct xring_ctl *c = ctl_of(ch, 0, &map, &len);
    uint32_t *w = consumer ? &c->x_clock : &c->x_plock;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* take the lock as xr_lock would, then die holding it */
        uint32_t free_word = 0;
        __atomic_compare_exchange_n(w, &free_word, (uint32_t)getpid(), 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    CHECK_EQ(__atomic_load_n(w, __ATOMIC_RELAXED), (uint32_t)pid);
    long t0 = now_ms();
    int rc = consumer ? xring_take(ch, 0, NULL, NULL, 0, b, sizeof(b))
                      : xring_put(ch, 0, &m, &iov, 1);
    long ms = now_ms() - t0;
    CHECK_EQ(rc, -EIO);
    CHECK(ms >= 45);
    CHECK(ms < 2000);
    CHECK_EQ(xring_broken(ch, 0), 1);
    CHECK_EQ(xring_peek(ch, 0, &m), -EIO);
    CHECK_EQ(xring_put(ch, 1, &m, &iov, 1), 0); /* the other ring works */
    CHECK_EQ(xring_take(ch, 1, NULL, NULL, 0, b, sizeof(b)), 0);
    munmap(map, len);
    xring_destroy(ch);
}

static void test_slow_holder(void)
{
    struct xring_chan *ch;
    void *map;
    size_t len;

    CHECK_EQ(xring_create(4096, 4096, 0, &ch), 0);
    struct xring_ctl *c = ctl_of(ch, 0, &map, &len);
    struct xring_msg m = {.data_len = 3};
    struct iovec iov = {"abc", 3};
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* hold the lock 200 ms (alive), then release it */
        __atomic_store_n(&c->x_plock, (uint32_t)getpid(), __ATOMIC_RELEASE);
        fk_sleep_ms(200);
        __atomic_store_n(&c->x_plock, 0, __ATOMIC_RELEASE);
        fk_sleep_ms(200);
        _exit(0);
    }
    while (__atomic_load_n(&c->x_plock, __ATOMIC_ACQUIRE) == 0)
        fk_sleep_ms(1);
    long t0 = now_ms();
    CHECK_EQ(xring_put(ch, 0, &m, &iov, 1), 0);
    long ms = now_ms() - t0;
    CHECK(ms >= 100);
    CHECK_EQ(xring_broken(ch, 0), 0);
    waitpid(pid, NULL, 0);
    /* A free word with only the waiters bit: taken at once. */
    __atomic_store_n(&c->x_clock, XRING_LOCK_WAITERS, __ATOMIC_RELEASE);
    CHECK_EQ(xring_take(ch, 0, NULL, NULL, 0, (char[8]){0}, 8), 0);
    CHECK_EQ(__atomic_load_n(&c->x_clock, __ATOMIC_RELAXED), 0);
    munmap(map, len);
    xring_destroy(ch);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_threads();
    test_fork();
    test_dead_holder(0);
    test_dead_holder(1);
    test_slow_holder();
    return CHECK_RESULT();
}
