/* SPDX-License-Identifier: MIT */
/*
 * test_tirdwr_close.c -- closing a tirdwr endpoint of the loopback transport
 * /dev/ticotsord (issue 21 item 3).  tirdwr's close sends T_ORDREL_REQ (after
 * a T_ORDREL_IND) or T_DISCON_REQ down; the driver queues it for its service
 * procedure, and the close-time drain used to wait the whole close time
 * (15 s) for a service procedure parked on the closing thread's own run list
 * (src/head/sd_close.c, drain_wait).  Each close here is timed:
 *   C.1  release both ways: cli t_snd + t_sndrel; acc (tirdwr) reads the
 *        data, then end of file, writes a reply, closes (its tirdwr sends
 *        T_ORDREL_REQ): the close is prompt, cli gets the reply, then the
 *        release (t_rcvrel), then t_close
 *   C.2  tirdwr on both sides: cli released before its push; acc closes
 *        after end of file, cli reads end of file and closes
 *   C.3  one side released: acc (tirdwr, not released by cli) writes and
 *        closes (T_DISCON_REQ): prompt; cli gets the data, then the
 *        disconnect
 *   C.4  a close that must wait (data queued that the peer does not read)
 *        ends when a signal is caught, and the stream is gone
 *   C.5  the same over many rounds, one signal each, sent at a random
 *        moment once the close has begun (before its drain waits, or
 *        during): every close returns within the limit (a signal caught
 *        between two naps of the drain, or during a module's close, used
 *        to be lost and the close waited the whole close time)
 *   C.6  two queues hold data (two srvmods between tirdwr and the
 *        driver): one signal ends the drain of both (it used to end only
 *        the first)
 * The driver hands data straight to the peer's head, so the data a close
 * must wait for is held by srvmod (C.4-C.6) under tirdwr.
 * The limit is 1 s per close (a hang waited 15 s); the prompt cases take a
 * few ms.  A deadline (alarm) turns a hang into a failure.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/timod.h>
#include <time.h>
#include <unistd.h>

#include "xti_util.h"

#define PROV "/dev/streams/ticotsord"
#define CLOSE_LIMIT_MS 1000L

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* t_close(fd) (the endpoints come from t_open; with tirdwr pushed it is the
 * stream's close), CHECKed to succeed within the limit. */
static void timed_close(int fd, const char *what)
{
    long t0 = now_ms();
    CHECK_EQ(t_close(fd), 0);
    long dt = now_ms() - t0;
    if (!CHECK(dt < CLOSE_LIMIT_MS))
        fprintf(stderr, "  close of %s took %ld ms\n", what, dt);
}

/* Replace timod by tirdwr on an XTI endpoint (only t_close is used on it
 * afterwards). */
static void to_tirdwr(int fd)
{
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "tirdwr"), 0);
}

static void expect_read(int fd, const char *want)
{
    char b[64];
    ssize_t n = strm_read(fd, b, sizeof(b));
    if (!CHECK_EQ(n, (long)strlen(want)) || !CHECK(memcmp(b, want, strlen(want)) == 0))
        fprintf(stderr, "  read %zd, want \"%s\"\n", n, want);
}

static void test_both_released(void)
{
    int cli, lis, acc, flags = 0;
    char b[64];

    /* C.1 */
    CHECK_EQ(xti_pair(PROV, &cli, &lis, &acc), 0);
    t_close(lis);
    to_tirdwr(acc);
    CHECK_EQ(t_snd(cli, "hello", 5, 0), 5);
    CHECK_EQ(t_sndrel(cli), 0);
    expect_read(acc, "hello");
    CHECK_EQ(strm_read(acc, b, sizeof(b)), 0); /* T_ORDREL_IND: end of file */
    CHECK_EQ(strm_write(acc, "bye", 3), 3);
    timed_close(acc, "acc after T_ORDREL_IND");
    CHECK_EQ(t_rcv(cli, b, sizeof(b), &flags), 3);
    CHECK(memcmp(b, "bye", 3) == 0);
    XCHECK_OK(t_rcvrel(cli)); /* tirdwr's T_ORDREL_REQ arrived */
    CHECK_EQ(t_getstate(cli), T_IDLE);
    long t0 = now_ms();
    CHECK_EQ(t_close(cli), 0);
    CHECK(now_ms() - t0 < CLOSE_LIMIT_MS);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

static void test_both_tirdwr(void)
{
    int cli, lis, acc;
    char b[64];

    /* C.2 */
    CHECK_EQ(xti_pair(PROV, &cli, &lis, &acc), 0);
    t_close(lis);
    to_tirdwr(acc);
    CHECK_EQ(t_snd(cli, "data", 4, 0), 4);
    CHECK_EQ(t_sndrel(cli), 0);
    to_tirdwr(cli);
    expect_read(acc, "data");
    CHECK_EQ(strm_read(acc, b, sizeof(b)), 0);
    CHECK_EQ(strm_write(acc, "reply", 5), 5);
    timed_close(acc, "acc (both tirdwr)");
    expect_read(cli, "reply");
    CHECK_EQ(strm_read(cli, b, sizeof(b)), 0); /* acc's T_ORDREL_REQ */
    timed_close(cli, "cli (both tirdwr)");
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

static void test_one_released(void)
{
    int cli, lis, acc, flags = 0;
    char b[64];

    /* C.3 acc closes with the connection up: T_DISCON_REQ */
    CHECK_EQ(xti_pair(PROV, &cli, &lis, &acc), 0);
    t_close(lis);
    to_tirdwr(acc);
    CHECK_EQ(t_snd(cli, "ping", 4, 0), 4);
    expect_read(acc, "ping");
    CHECK_EQ(strm_write(acc, "pong", 4), 4);
    timed_close(acc, "acc (connection up)");
    CHECK_EQ(t_rcv(cli, b, sizeof(b), &flags), 4);
    CHECK(memcmp(b, "pong", 4) == 0);
    XCHECK_ERR(t_rcv(cli, b, sizeof(b), &flags), TLOOK);
    CHECK_EQ(t_look(cli), T_DISCONNECT);
    XCHECK_OK(t_rcvdis(cli, NULL));
    CHECK_EQ(t_close(cli), 0);

    /* the other way: cli released, acc reads end of file and closes */
    CHECK_EQ(xti_pair(PROV, &cli, &lis, &acc), 0);
    t_close(lis);
    to_tirdwr(acc);
    CHECK_EQ(t_sndrel(cli), 0);
    CHECK_EQ(strm_read(acc, b, sizeof(b)), 0);
    timed_close(acc, "acc (only cli released)");
    XCHECK_OK(t_rcvrel(cli));
    CHECK_EQ(t_close(cli), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

static atomic_int caught;

static void on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&caught, 1);
}

struct closer {
    int fd;
    atomic_int tid; /* the closing thread, once it runs */
    atomic_int done;
    long ms;
    int rc;
};

static void *close_thread(void *arg)
{
    struct closer *c = arg;
    atomic_store(&c->tid, (int)syscall(SYS_gettid));
    long t0 = now_ms();
    c->rc = t_close(c->fd);
    c->ms = now_ms() - t0;
    atomic_store(&c->done, 1);
    return NULL;
}

/* A connected pair whose accepting end (tirdwr above nsrv srvmods) has its
 * queues full: cli does not read.  The driver passes data straight to the
 * peer's head, so what the close must wait for is in srvmod's queues.
 * Returns acc, blocking again, so that its close waits; *clip gets cli. */
static int filled_pair(int *clip, int nsrv, int cltime_ms)
{
    int cli, lis, acc;
    char chunk[4096];

    if (!CHECK_EQ(xti_pair(PROV, &cli, &lis, &acc), 0))
        return -1;
    t_close(lis);
    CHECK_EQ(strm_ioctl(acc, I_POP, 0), 0);
    for (int i = 0; i < nsrv; i++)
        CHECK_EQ(strm_ioctl(acc, I_PUSH, "srvmod"), 0);
    CHECK_EQ(strm_ioctl(acc, I_PUSH, "tirdwr"), 0);
    if (cltime_ms >= 0)
        CHECK_EQ(strm_ioctl(acc, I_SETCLTIME, &cltime_ms), 0);
    memset(chunk, 'x', sizeof(chunk));
    xti_set_nb(acc, 1);
    int n = 0;
    while (n < 100000 && strm_write(acc, chunk, sizeof(chunk)) == (ssize_t)sizeof(chunk))
        n++;
    CHECK_EQ(errno, EAGAIN);
    xti_set_nb(acc, 0); /* the close drains: O_NONBLOCK clear, data queued */
    *clip = cli;
    return acc;
}

static void catch_usr1(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
}

static void test_interrupted(void)
{
    int cli;

    /* C.4 acc fills the connection while cli does not read */
    catch_usr1();
    int acc = filled_pair(&cli, 1, -1);
    if (acc < 0)
        return;
    struct closer c = {.fd = acc};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, close_thread, &c), 0);
    long t0 = now_ms();
    while (!atomic_load(&c.done) && now_ms() - t0 < 20000) {
        usleep(50000);
        if (!atomic_load(&c.done))
            pthread_kill(th, SIGUSR1);
    }
    pthread_join(th, NULL);
    CHECK_EQ(c.rc, 0);
    if (!CHECK(c.ms < CLOSE_LIMIT_MS))
        fprintf(stderr, "  interrupted close took %ld ms\n", c.ms);
    CHECK_EQ(t_close(cli), 0);
    signal(SIGUSR1, SIG_DFL);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* Has thread tid SIGUSR1 blocked (/proc: SigBlk)?  The close blocks the
 * catchable signals from the start of its teardown. */
static int usr1_blocked(int tid)
{
    char path[64], line[128];
    int r = 0;
    snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "SigBlk:", 7) == 0) {
            unsigned long long m = strtoull(line + 7, NULL, 16);
            r = (m >> (SIGUSR1 - 1)) & 1;
            break;
        }
    fclose(f);
    return r;
}

/* Close acc on a thread and send it one SIGUSR1 delay_us after its close
 * began (blocked SIGUSR1, or 200 ms at most); returns the close's time. */
static long close_signalled_once(int acc, long delay_us)
{
    struct closer c = {.fd = acc};
    pthread_t th;
    int before = atomic_load(&caught);

    if (!CHECK_EQ(pthread_create(&th, NULL, close_thread, &c), 0))
        return -1;
    while (atomic_load(&c.tid) == 0)
        sched_yield();
    long t0 = now_ms();
    while (!usr1_blocked(atomic_load(&c.tid)) && now_ms() - t0 < 200 && !atomic_load(&c.done))
        ;
    if (delay_us > 0)
        usleep((useconds_t)delay_us);
    pthread_kill(th, SIGUSR1);
    pthread_join(th, NULL);
    CHECK_EQ(c.rc, 0);
    CHECK_EQ(atomic_load(&caught), before + 1); /* delivered, once */
    return c.ms;
}

static void test_interrupted_rounds(void)
{
    int rounds = 60, slow = 0;
    const char *e = getenv("TRC_ROUNDS");

    /* C.5 */
    if (e && *e)
        rounds = atoi(e);
    catch_usr1();
    /* control: with no signal the close does wait its close time (300 ms) */
    int cli0, acc0 = filled_pair(&cli0, 1, 300);
    if (acc0 >= 0) {
        long t0 = now_ms();
        CHECK_EQ(t_close(acc0), 0);
        long dt = now_ms() - t0;
        if (!CHECK(dt >= 250 && dt < CLOSE_LIMIT_MS))
            fprintf(stderr, "  unsignalled close took %ld ms (close time 300)\n", dt);
        CHECK_EQ(t_close(cli0), 0);
    }
    srand((unsigned)time(NULL));
    for (int i = 0; i < rounds && slow < 2; i++) {
        int cli;
        int acc = filled_pair(&cli, 1, 5000);
        if (acc < 0)
            break;
        long delay = (i % 4 == 0) ? 0 : rand() % 3000; /* µs after the close began */
        long ms = close_signalled_once(acc, delay);
        if (!CHECK(ms >= 0 && ms < CLOSE_LIMIT_MS)) {
            fprintf(stderr, "  round %d: signal %ld us in, close took %ld ms\n", i, delay, ms);
            slow++;
        }
        CHECK_EQ(t_close(cli), 0);
    }
    signal(SIGUSR1, SIG_DFL);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

static void test_interrupted_twice_queued(void)
{
    int cli;

    /* C.6 two srvmods' queues full: one signal, 20 ms in */
    catch_usr1();
    int acc = filled_pair(&cli, 2, 3000);
    if (acc < 0)
        return;
    long ms = close_signalled_once(acc, 20000);
    if (!CHECK(ms >= 0 && ms < CLOSE_LIMIT_MS))
        fprintf(stderr, "  close with two queues full took %ld ms\n", ms);
    CHECK_EQ(t_close(cli), 0);
    signal(SIGUSR1, SIG_DFL);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

int main(void)
{
    alarm(90); /* deadline: a hang is a failure (SIGALRM kills the test) */
    xti_require(PROV);
    test_both_released();
    test_both_tirdwr();
    test_one_released();
    test_interrupted();
    test_interrupted_rounds();
    test_interrupted_twice_queued();
    return xti_finish();
}
