/* SPDX-License-Identifier: MIT */
/*
 * test_xpipe_fork_roles.c -- doorbells of a STREAMS pipe split at fork()
 * when several processes hold one end and wait in different roles (issue
 * 21, item 5; src/procs/sd_xbell.c "Doorbells", sd_xpipe_write.c "The bell
 * protocol"; docs/STREAMHEAD.md "The bell").
 *
 * Before the wake pair a doorbell byte on the bell went to whichever holder
 * of the end read it first, so the holder it was for waited until the
 * counted 20 ms look-again rescued it.  Each layout below waits in two roles
 * in two processes holding one end; every message must arrive, in order,
 * and ust_pipe_bell_rescued() must stay 0 in every process.
 *
 *   R.1  a reader and a writer of one end in two processes: the parent
 *        writes N messages on e0 and reads e0 slowly; child A reads e1;
 *        child B writes N messages on e1 (so the ring fills and B waits for
 *        room) and, being a user of e1, takes part of the parent's messages
 *        too (docs: "Who takes": two processes using the end that is read
 *        each take some).  The parent gets B's N in order; A's and B's
 *        shares of the parent's N are each in order and together all of
 *        them, once.
 *   R.2  two writing processes on one end (B and C write e0, N each,
 *        tagged), a slow reader in a third (the parent, e1): each writer's
 *        messages arrive in order, all of them.
 *   R.3  as R.2, the second writer a grandchild (forked by B, which then
 *        writes too).
 *   R.4  readiness follows the ring (item 7): after the last message is
 *        read, strm_poll(0) shows no POLLIN; a ring filled by non-blocking
 *        writes (the reader told to wait) shows no POLLOUT, at once and
 *        20 ms later; once the reader drains, POLLOUT comes.
 *   R.5  a module pushed on the split end (pipemod): blocking writes into a
 *        slow reader's full ring (putmsg, strm_write, strm_writev, putpmsg
 *        in turn), then _exit(0) closing nothing: every message arrives,
 *        then end of file (issue 21 item 1: a blocking write through a
 *        module returns once nothing of it is left in process memory below
 *        the head, docs/STREAMHEAD.md "A write is in the ring when it
 *        returns"; before, 398 of 400 arrived).
 *   R.5n as R.5 with nullmod.
 *   R.5s a signal ends such a wait: the ring full (the reader waits), a
 *        blocking putmsg through pipemod is interrupted by SIGALRM (with
 *        SA_RESTART): it returns 0 (the message was sent), and once the
 *        reader drains, it arrives, after the others.
 *
 * XPR_ONLY=R.1,R.2 picks layouts, XPR_ROUNDS=N rounds (default ROUNDS).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "sthead.h"

#define N 400
#define ROUNDS 20
#define BIG 9000
#define STEP_MS 15000

static int e[2];
static char *buf, *rbuf;

/* Shared with the children (MAP_SHARED before the fork): what R.1's
 * readers got of the parent's messages. */
struct shared {
    int got[2];          /* messages of the parent taken by A, by B */
    unsigned char seen[N]; /* each of the parent's messages: times seen */
};
static struct shared *sh;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static size_t msg_len(unsigned i)
{
    if (i % 23 == 3)
        return BIG;
    return 8 + (i * 7919u) % 600;
}

/* Message i of writer w: its number and writer in the first 8 bytes. */
static void msg_fill(char *b, unsigned w, unsigned i, size_t len)
{
    memcpy(b, &w, 4);
    memcpy(b + 4, &i, 4);
    for (size_t k = 8; k < len; k++)
        b[k] = (char)(i * 13 + k + w);
}

/* Put message i of writer w on fd, blocking (0, or -1). */
static int put_one(int fd, unsigned w, unsigned i)
{
    size_t len = msg_len(i);
    msg_fill(buf, w, i, len);
    struct strbuf d = {0, (int)len, buf};
    return putmsg(fd, NULL, &d, 0);
}

/* The next message on fd within the deadline: its writer and number (and
 * its bytes checked); 1, 0 at end of file, -1 trouble. */
static int get_one(int fd, unsigned *w, unsigned *i, long long until)
{
    struct pollfd p = {fd, POLLIN, 0};
    long left = (long)(until - now_ms());
    if (left <= 0 || strm_poll(&p, 1, (int)left) != 1) {
        fprintf(stderr, "get: nothing within the deadline (pid %d)\n", (int)getpid());
        return -1;
    }
    struct strbuf d = {BIG + 16, 0, rbuf};
    int flags = 0;
    if (getmsg(fd, NULL, &d, &flags) != 0)
        return -1;
    if (d.len == 0)
        return 0; /* end of file */
    if (d.len < 8)
        return -1;
    memcpy(w, rbuf, 4);
    memcpy(i, rbuf + 4, 4);
    if (*i >= N || d.len != (int)msg_len(*i))
        return -1;
    msg_fill(buf, *w, *i, (size_t)d.len);
    return memcmp(buf, rbuf, (size_t)d.len) == 0 ? 1 : -1;
}

static int child_done(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(ust_pipe_bell_rescued(), 0);
    return FK_CHILD_FAILED();
}

static void slow(unsigned i)
{
    if (i % 16 == 0)
        fk_sleep_ms(1);
}

/* ---- R.1 ----------------------------------------------------------------- */
/* A reader of e1: what it gets of the parent's messages, in order. */
static int r1_reader(void *arg)
{
    (void)arg;
    long long until = now_ms() + STEP_MS;
    strm_close(e[0]);
    int last = -1, r;
    unsigned w, i;
    while ((r = get_one(e[1], &w, &i, until)) == 1) {
        CHECK(w == 0 && (int)i > last);
        last = (int)i;
        sh->seen[i]++;
        sh->got[0]++;
    }
    CHECK_EQ(r, 0);
    strm_close(e[1]);
    return child_done();
}

/* A writer of e1 (N messages, writer 1) that also takes its share of the
 * parent's messages: non-blocking, waiting in strm_poll for either. */
static int r1_writer(void *arg)
{
    (void)arg;
    long long until = now_ms() + STEP_MS;
    strm_close(e[0]);
    strm_fcntl(e[1], F_SETFL, strm_fcntl(e[1], F_GETFL) | O_NONBLOCK);
    unsigned sent = 0, w, i;
    int last = -1, eof = 0;
    while (!eof || sent < N) {
        struct pollfd p = {e[1], (short)((eof ? 0 : POLLIN) | (sent < N ? POLLOUT : 0)), 0};
        long left = (long)(until - now_ms());
        if (!CHECK(left > 0 && strm_poll(&p, 1, (int)left) == 1))
            break;
        if (p.revents & (POLLIN | POLLHUP)) {
            int r = get_one(e[1], &w, &i, until);
            if (r == 0 || (p.revents & POLLHUP && !(p.revents & POLLIN))) {
                eof = 1;
            } else if (CHECK_EQ(r, 1)) {
                CHECK(w == 0 && (int)i > last);
                last = (int)i;
                sh->seen[i]++;
                sh->got[1]++;
            } else {
                break;
            }
        }
        if ((p.revents & POLLOUT) && sent < N) {
            while (sent < N && put_one(e[1], 1, sent) == 0)
                sent++;
            if (sent < N && !CHECK_EQ(errno, EAGAIN))
                break;
        }
    }
    strm_close(e[1]);
    return child_done();
}

static void r1_round(void)
{
    long long until = now_ms() + STEP_MS;
    memset(sh, 0, sizeof(*sh));
    CHECK_EQ(strm_pipe(e), 0);
    pid_t a = fk_start(r1_reader, NULL);
    pid_t b = fk_start(r1_writer, NULL);
    strm_close(e[1]);
    /* Write ours and read B's, alternating, non-blocking; slow reading. */
    strm_fcntl(e[0], F_SETFL, strm_fcntl(e[0], F_GETFL) | O_NONBLOCK);
    unsigned sent = 0, got = 0, w, i;
    while (sent < N || got < N) {
        struct pollfd p = {e[0], (short)((got < N ? POLLIN : 0) | (sent < N ? POLLOUT : 0)), 0};
        long left = (long)(until - now_ms());
        if (!CHECK(left > 0 && strm_poll(&p, 1, (int)left) == 1)) {
            fprintf(stderr, "R.1: sent %u got %u\n", sent, got);
            break;
        }
        if (p.revents & POLLIN) {
            slow(got);
            if (!CHECK_EQ(get_one(e[0], &w, &i, until), 1) || !CHECK(w == 1 && i == got))
                break;
            got++;
        }
        if ((p.revents & POLLOUT) && sent < N) {
            while (sent < N && put_one(e[0], 0, sent) == 0)
                sent++;
            if (sent < N && !CHECK_EQ(errno, EAGAIN))
                break;
        }
    }
    strm_close(e[0]); /* A and B see end of file */
    CHECK_EQ(fk_wait(a, STEP_MS), 0);
    CHECK_EQ(fk_wait(b, STEP_MS), 0);
    CHECK_EQ(sh->got[0] + sh->got[1], N);
    for (unsigned k = 0; k < N; k++)
        if (!CHECK_EQ(sh->seen[k], 1))
            break;
}

/* ---- R.2, R.3 ------------------------------------------------------------ */
static int grand; /* R.3: B forks the second writer */

static int writes_of(unsigned w)
{
    for (unsigned k = 0; k < N; k++)
        if (!CHECK_EQ(put_one(e[0], w, k), 0))
            return 1;
    return 0;
}

static int r2_second(void *arg)
{
    (void)arg;
    int r = writes_of(2);
    strm_close(e[0]);
    return r != 0 ? 1 : child_done();
}

static int r2_first(void *arg)
{
    (void)arg;
    strm_close(e[1]);
    pid_t g = grand ? fk_start(r2_second, NULL) : -1;
    int r = writes_of(1);
    strm_close(e[0]);
    if (grand)
        CHECK_EQ(fk_wait(g, STEP_MS), 0);
    return r != 0 ? 1 : child_done();
}

static int r2_other(void *arg)
{
    (void)arg;
    strm_close(e[1]);
    return r2_second(NULL);
}

static void r2_round(int with_grandchild)
{
    long long until = now_ms() + STEP_MS;
    grand = with_grandchild;
    CHECK_EQ(strm_pipe(e), 0);
    pid_t b = fk_start(r2_first, NULL);
    pid_t c = grand ? -1 : fk_start(r2_other, NULL);
    strm_close(e[0]);
    unsigned next[3] = {0, 0, 0}, w, i, total = 0;
    int r;
    while ((r = get_one(e[1], &w, &i, until)) == 1) {
        slow(total++);
        if (!CHECK(w >= 1 && w <= 2 && i == next[w]))
            break;
        next[w]++;
    }
    CHECK_EQ(r, 0);
    CHECK_EQ(next[1], N);
    CHECK_EQ(next[2], N);
    strm_close(e[1]);
    CHECK_EQ(fk_wait(b, STEP_MS), 0);
    if (c > 0)
        CHECK_EQ(fk_wait(c, STEP_MS), 0);
}

/* ---- R.4: readiness follows the ring ------------------------------------- */
static int r4_child(void *arg)
{
    (void)arg;
    strm_close(e[0]);
    /* Told when to drain (a byte on sh->got[0], the parent having seen its
     * ring full), then read everything.  A reader that drained from the
     * start kept pace with the writer under TSan: the ring filled only
     * when the writer happened to outrun it (seconds per round with a
     * 256 KiB high-water mark). */
    struct pollfd g = {sh->got[0], POLLIN, 0};
    char go;
    CHECK(poll(&g, 1, STEP_MS) == 1 && read(sh->got[0], &go, 1) == 1);
    close(sh->got[0]);
    unsigned w, i, n = 0;
    int r;
    long long until = now_ms() + STEP_MS;
    while ((r = get_one(e[1], &w, &i, until)) == 1)
        n++;
    CHECK_EQ(r, 0);
    CHECK(n > 0);
    strm_close(e[1]);
    return child_done();
}

static void r4_round(void)
{
    int sp[2];
    CHECK_EQ(pipe(sp), 0);
    sh->got[0] = sp[0];
    CHECK_EQ(strm_pipe(e), 0);
    pid_t c = fk_start(r4_child, NULL);
    CHECK(c > 0);
    close(sp[0]);
    strm_close(e[1]);
    /* A full ring: non-blocking writes until EAGAIN, then no POLLOUT (the
     * reader waits for our word: nothing drains meanwhile). */
    strm_fcntl(e[0], F_SETFL, strm_fcntl(e[0], F_GETFL) | O_NONBLOCK);
    unsigned k = 0;
    while (put_one(e[0], 0, k % N) == 0 && k < 1000000)
        k++;
    CHECK_EQ(errno, EAGAIN);
    CHECK(k > 0);
    struct pollfd q = {e[0], POLLOUT, 0};
    CHECK_EQ(strm_poll(&q, 1, 0), 0);
    CHECK_EQ(q.revents, 0);
    /* Still full a moment later: room comes only from the reader. */
    CHECK_EQ(strm_poll(&q, 1, 20), 0);
    CHECK_EQ(write(sp[1], "g", 1), 1);
    close(sp[1]);
    q.revents = 0;
    CHECK_EQ(strm_poll(&q, 1, STEP_MS), 1); /* room restores it */
    CHECK(q.revents & POLLOUT);
    strm_close(e[0]);
    CHECK_EQ(fk_wait(c, STEP_MS), 0);
}

/* After the last message read, poll 0 shows no POLLIN (item 7), for a
 * reader in the child of messages written by the parent. */
static int r4b_child(void *arg)
{
    (void)arg;
    strm_close(e[0]);
    long long until = now_ms() + STEP_MS;
    unsigned w, i;
    for (unsigned k = 0; k < 3; k++) {
        if (!CHECK_EQ(get_one(e[1], &w, &i, until), 1) || !CHECK_EQ(i, k))
            break;
        struct pollfd p = {e[1], POLLIN, 0};
        int n = strm_poll(&p, 1, 0);
        /* Message k+1 is sent only once we said we read k (below). */
        CHECK_EQ(n, 0);
        CHECK_EQ(p.revents, 0);
        CHECK_EQ(write(sh->got[0], "r", 1), 1);
    }
    strm_close(e[1]);
    return child_done();
}

static void r4b_round(void)
{
    int sp[2];
    CHECK_EQ(pipe(sp), 0);
    sh->got[0] = sp[1];
    CHECK_EQ(strm_pipe(e), 0);
    pid_t c = fk_start(r4b_child, NULL);
    close(sp[1]);
    strm_close(e[1]);
    for (unsigned k = 0; k < 3; k++) {
        CHECK_EQ(put_one(e[0], 0, k), 0);
        struct pollfd p = {sp[0], POLLIN, 0};
        char ch;
        if (!CHECK(poll(&p, 1, STEP_MS) == 1 && read(sp[0], &ch, 1) == 1))
            break;
    }
    close(sp[0]);
    strm_close(e[0]);
    CHECK_EQ(fk_wait(c, STEP_MS), 0);
}

/* ---- R.5: a module pushed, blocking writes, _exit ------------------------ */
/* Message i of writer w by the call i % 4 picks: putmsg, strm_write,
 * strm_writev (two pieces), putpmsg (band 0).  0, or -1. */
static int put_any(int fd, unsigned w, unsigned i)
{
    size_t len = msg_len(i);
    msg_fill(buf, w, i, len);
    struct strbuf d = {0, (int)len, buf};
    switch (i % 4) {
    case 0: return putmsg(fd, NULL, &d, 0);
    case 1: return strm_write(fd, buf, len) == (ssize_t)len ? 0 : -1;
    case 2: {
        struct iovec v[2] = {{buf, 5}, {buf + 5, len - 5}};
        return strm_writev(fd, v, 2) == (ssize_t)len ? 0 : -1;
    }
    default: return putpmsg(fd, NULL, &d, 0, MSG_BAND);
    }
}

static const char *r5_module;

static int r5_writer(void *arg)
{
    (void)arg;
    strm_close(e[1]);
    if (!CHECK_EQ(strm_ioctl(e[0], I_PUSH, r5_module), 0))
        _exit(1);
    unsigned k = 0;
    while (k < N) {
        if (!CHECK_EQ(put_any(e[0], 0, k), 0))
            _exit(1);
        sh->got[0] = (int)++k;
        /* No POLLOUT right after a blocking write: something of this end
         * waits below the head (the message that met the full ring, which
         * the write used to leave in process memory): _exit now. */
        struct pollfd p = {e[0], POLLOUT, 0};
        if (strm_poll(&p, 1, 0) == 0)
            break;
    }
    CHECK_EQ(ust_pipe_bell_rescued(), 0);
    _exit(FK_CHILD_FAILED() ? 1 : 0); /* nothing closed: what is written is in the ring */
}

static void r5_round(const char *module)
{
    long long until = now_ms() + STEP_MS;
    memset(sh, 0, sizeof(*sh));
    r5_module = module;
    CHECK_EQ(strm_pipe(e), 0);
    pid_t c = fk_start(r5_writer, NULL);
    strm_close(e[0]);
    unsigned w, i, n = 0;
    int r;
    fk_sleep_ms(30); /* the ring fills */
    while ((r = get_one(e[1], &w, &i, until)) == 1) {
        slow(n);
        if (!CHECK_EQ(i, n))
            break;
        n++;
    }
    CHECK_EQ(r, 0);
    CHECK_EQ(n, (unsigned)sh->got[0]); /* every message written */
    CHECK_EQ(sh->got[0], N);             /* no write left anything below the head */
    strm_close(e[1]);
    CHECK_EQ(fk_wait(c, STEP_MS), 0);
}

/* ---- R.5s: a signal ends the wait for the backlog ---------------------- */
static volatile sig_atomic_t r5s_rang;
#define R5S_MAX (16 * N) /* messages the writer may need to fill the ring */

static void r5s_alarm(int sig)
{
    (void)sig;
    r5s_rang = 1;
}

/* Arm (ms > 0) or disarm (0) a one-shot SIGALRM. */
static void r5s_timer(long ms)
{
    struct itimerval t = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &t, NULL);
}

static int r5s_writer(void *arg)
{
    int tell = *(int *)arg;
    strm_close(e[1]);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = r5s_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    if (!CHECK_EQ(strm_ioctl(e[0], I_PUSH, "pipemod"), 0))
        _exit(1);
    /* Message k is number k % N of "writer" k / N: as many as it takes to
     * fill the ring (R5S_MAX, whatever the ring's size: 512 KiB at 2026-11-27). */
    unsigned k = 0;
    for (; k < R5S_MAX; k++) {
        r5s_rang = 0;
        r5s_timer(300);
        long long t0 = now_ms();
        int r = put_one(e[0], k / N, k % N);
        r5s_timer(0);
        if (!CHECK_EQ(r, 0)) /* a signal once the message went: 0, not EINTR */
            _exit(1);
        if (r5s_rang && now_ms() - t0 >= 250)
            break; /* it waited for the ring, and the signal ended the wait */
    }
    CHECK(k < R5S_MAX);
    unsigned n = k + 2; /* the interrupted one and one more (blocking) */
    if (!CHECK_EQ(write(tell, &n, sizeof(n)), (ssize_t)sizeof(n)))
        _exit(1);
    CHECK_EQ(put_one(e[0], (k + 1) / N, (k + 1) % N), 0);
    CHECK_EQ(ust_pipe_bell_rescued(), 0);
    _exit(FK_CHILD_FAILED() ? 1 : 0);
}

static void r5s_round(void)
{
    long long until = now_ms() + STEP_MS;
    int sp[2];
    CHECK_EQ(pipe(sp), 0);
    CHECK_EQ(strm_pipe(e), 0);
    pid_t c = fk_start(r5s_writer, &sp[1]);
    close(sp[1]);
    strm_close(e[0]);
    unsigned want = 0, w, i, n = 0;
    struct pollfd p = {sp[0], POLLIN, 0};
    CHECK(poll(&p, 1, STEP_MS) == 1 && read(sp[0], &want, sizeof(want)) == sizeof(want));
    close(sp[0]);
    int r;
    while ((r = get_one(e[1], &w, &i, until)) == 1) {
        if (!CHECK_EQ(w * N + i, n))
            break;
        n++;
    }
    CHECK_EQ(r, 0);
    CHECK(want > 1);
    CHECK_EQ(n, want);
    strm_close(e[1]);
    CHECK_EQ(fk_wait(c, STEP_MS), 0);
}

/* ---- main ---------------------------------------------------------------- */
int main(void)
{
    /* Full rings are part of what is tested here: the high-water mark of
     * before 2026-11-27 (128 KiB), which these messages fill (the default,
     * 512 KiB, is the other tests'; docs/STREAMHEAD.md "The ring's size"). */
    setenv("USTREAMS_XPIPE_HIWAT", "131072", 0);
    static const char *const names[] = {"R.1", "R.2", "R.3", "R.4", "R.4b", "R.5", "R.5n",
                                        "R.5s"};
    buf = malloc(BIG + 16);
    rbuf = malloc(BIG + 16);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    const char *only = getenv("XPR_ONLY");
    int rounds = getenv("XPR_ROUNDS") != NULL ? atoi(getenv("XPR_ROUNDS")) : ROUNDS;
    for (int v = 0; v < 8; v++) {
        long failed = check_nfailed;
        long long t0 = now_ms();
        if (only != NULL && !fk_name_in(names[v], only))
            continue;
        for (int r = 0; r < rounds && check_nfailed == failed; r++) {
            switch (v) {
            case 0: r1_round(); break;
            case 1: r2_round(0); break;
            case 2: r2_round(1); break;
            case 3: r4_round(); break;
            case 4: r4b_round(); break;
            case 5: r5_round("pipemod"); break;
            case 6: r5_round("nullmod"); break;
            default:
                if (r < 3) /* each round waits for a timer */
                    r5s_round();
                break;
            }
        }
        fprintf(stderr, "%s: %s, %lld ms, rescued %lu\n", names[v],
                check_nfailed == failed ? "ok" : "FAILED", now_ms() - t0,
                (unsigned long)ust_pipe_bell_rescued());
    }
    CHECK_EQ(ust_pipe_bell_rescued(), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    munmap(sh, sizeof(*sh));
    free(buf);
    free(rbuf);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
