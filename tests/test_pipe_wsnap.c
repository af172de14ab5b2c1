/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_wsnap.c -- the write snapshot (src/head/sd_write.c, "The write
 * snapshot"): once a write of a module-free pipe end passed its checks under
 * sd_lock and deposited, the writes that follow deposit without taking
 * sd_lock, until anybody takes it.  Everything that changes what a write
 * must honour takes sd_lock, so each such change ends the snapshot.
 *
 *   W.1 taken and used: after a few writes, 500 more leave the writer head's
 *       sd_lock untaken (its taking count unchanged), and read back intact
 *   W.2 I_SWROPT SNDHOLD after fast writes: the next small writes are held
 *       (not at the reader at once, in one of several tries), then arrive
 *       intact
 *   W.3 the reader closes: the next write fails EPIPE, nothing written
 *       before is lost
 *   W.4 I_PUSH after fast writes: the next write passes the module's put
 *       procedure
 *   W.5 F_SETFL O_NONBLOCK after fast writes: a full pipe fails EAGAIN
 *       instead of blocking; everything written reads back in order
 *   W.6 threaded: 3 writers x N framed writes while a fourth thread turns
 *       SNDHOLD and O_NONBLOCK on and off and asks I_NREAD: none lost,
 *       duplicated or reordered per writer; no block outstanding
 *   W.7 fork after fast writes: the child's writes reach the parent's
 *       reader through the split pipe, and the parent's own writes too
 *
 * The snapshot of the normal path (modules pushed: snap_send):
 *   W.8 taken and used: with a nullmod pushed, 500 writes after the first
 *       few leave sd_lock untaken, each passes the module's put procedure,
 *       and all read back intact
 *   W.9 I_POP after fast writes through the module: the next writes do not
 *       pass it, nothing is lost
 *   W.10 O_NONBLOCK and a full pipe: fast writes until EAGAIN, POLLOUT
 *       withdrawn then, everything reads back in order
 *   W.11 the module lowers its maximum packet size (strqset, no sd_lock):
 *       the next 64-byte write arrives as four 16-byte messages
 *   W.12 W.6's threads with a nullmod pushed
 *   W.13 the reader closes after fast writes through the module: the next
 *       write fails EPIPE, nothing written before is lost
 *   W.14 claims on the way (putnext.c "Covered entries", "Passed through
 *       without claims"): a module pushed on each end sees, at every write,
 *       no claim on the writing end's module (entered covered by the head's
 *       claim) and none on the pipe's twist (passed through), one on the
 *       reading end's module
 *   W.15 the write that fills the pipe through a module withdraws POLLOUT
 *       itself: with no reader, POLLOUT shown by poll(2) before a non-blocking write
 *       means the write succeeds, POLLOUT withdrawn means it fails EAGAIN
 *       (the write's own look at flow control after the send, which the
 *       snapshot makes only when its put filled a queue)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "pattern_util.h"
#include "fork_util.h"
#include "sd_takes.h"
#include "sthead.h"




/* W.1 */
static void test_taken_and_used(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    /* Under the lock: the first use of the stream, then the snapshot. */
    pat_write(p[1], 0, 4 * 64, 64);
    unsigned long t0 = takes_of(p[1]);
    pat_write(p[1], 4 * 64, 500 * 64, 64);
    CHECK_EQ(takes_of(p[1]), t0);
    pat_read(p[0], 0, 504 * 64);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* W.2 */
static void test_hold_ends_it(void)
{
    int held = 0;
    for (int round = 0; round < 5 && !held; round++) {
        int p[2];
        CHECK_EQ(strm_pipe(p), 0);
        pat_write(p[1], 0, 640, 64); /* fast: ten messages at the reader */
        CHECK_EQ(strm_ioctl(p[1], I_SWROPT, SNDHOLD | SNDPIPE), 0);
        pat_write(p[1], 640, 10, 10);
        int nb = -1;
        /* Held: still ten (unless the hold timer was quicker: try again) */
        held |= strm_ioctl(p[0], I_NREAD, &nb) == 10;
        pat_read(p[0], 0, 650); /* the hold timer sends the rest */
        CHECK_EQ(strm_close(p[0]), 0);
        CHECK_EQ(strm_close(p[1]), 0);
    }
    CHECK(held);
}

/* The reader end p[0] closes: the next write on p[1] fails EPIPE; p[1]
 * closed after. */
static void close_reader_then_epipe(int p[2])
{
    CHECK_EQ(strm_close(p[0]), 0);
    unsigned char b[64] = {0};
    errno = 0;
    CHECK_EQ(strm_write(p[1], b, sizeof(b)), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* A pipe with a nullmod pushed on its writing end p[1], non-blocking there
 * if asked. */
static void nullmod_pipe(int p[2], int nonblock)
{
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "nullmod"), 0);
    if (nonblock) {
        int fl = strm_fcntl(p[1], F_GETFL);
        CHECK_EQ(strm_fcntl(p[1], F_SETFL, fl | O_NONBLOCK), 0);
    }
}

/* W.3 */
static void test_reader_gone(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    pat_write(p[1], 0, 64 * 10, 64);
    pat_read(p[0], 0, 64 * 10);
    close_reader_then_epipe(p);
}

/* W.4 */
static void test_push_ends_it(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    pat_write(p[1], 0, 64 * 10, 64);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "nullmod"), 0);
    int err = 0;
    struct stdata *sd = ust_sd_get(p[1], &err);
    CHECK(sd != NULL);
    queue_t *mq = sd ? sd->sd_wq->q_next : NULL; /* the module's write queue */
    long before = mq ? atomic_load(&ust_qpv(mq)->nput) : 0;
    pat_write(p[1], 64 * 10, 64, 64);
    long after = mq ? atomic_load(&ust_qpv(mq)->nput) : 0;
    if (sd)
        ust_sd_put(sd);
    CHECK_EQ(after - before, 1);
    pat_read(p[0], 0, 64 * 11);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* Write 64-byte pieces of the pattern from off to non-blocking fd until
 * EAGAIN (20 s at most); returns the offset reached. */
static size_t fill_until_eagain(int fd, size_t off)
{
    alarm(20); /* a write that blocks fails the test */
    unsigned char buf[64];
    for (;;) {
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = pat(off + i);
        ssize_t r = strm_write(fd, buf, sizeof(buf));
        if (r < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        if (!CHECK_EQ(r, 64))
            break;
        off += 64;
    }
    alarm(0);
    return off;
}

/* W.5 */
static void test_nonblock_ends_it(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    pat_write(p[1], 0, 64 * 10, 64);
    pat_read(p[0], 0, 64 * 10);
    pat_write(p[1], 64 * 10, 64, 64); /* the snapshot again */
    int fl = strm_fcntl(p[1], F_GETFL);
    CHECK_EQ(strm_fcntl(p[1], F_SETFL, fl | O_NONBLOCK), 0);
    size_t off = fill_until_eagain(p[1], 64 * 11);
    CHECK(off > 64 * 11);
    pat_read(p[0], 64 * 10, off - 64 * 10);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* ---- W.6 ---- */

#define NWRITERS 3
#define NMSG 20000
#define FRAME_MIN 8

struct wr {
    int fd, id;
};

static atomic_int toggler_stop;

/* Frame: [length][writer id][seq, 4 bytes][filler to length]. */
static void *writer_main(void *arg)
{
    struct wr *w = arg;
    unsigned char buf[64];
    for (int i = 0; i < NMSG; i++) {
        size_t len = FRAME_MIN + (size_t)(i % 50);
        buf[0] = (unsigned char)len;
        buf[1] = (unsigned char)w->id;
        memcpy(buf + 2, &i, sizeof(i));
        memset(buf + 6, (unsigned char)i, len - 6);
        for (;;) {
            ssize_t r = strm_write(w->fd, buf, len);
            if (r == (ssize_t)len)
                break;
            if (r < 0 && errno == EAGAIN) { /* the toggler made it non-blocking */
                sched_yield();
                continue;
            }
            CHECK(!"write failed");
            return NULL;
        }
    }
    return NULL;
}

static void *toggler_main(void *arg)
{
    int fd = *(int *)arg, fl = strm_fcntl(fd, F_GETFL);
    for (unsigned i = 0; !atomic_load(&toggler_stop); i++) {
        switch (i % 6) {
        case 0:
            CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD | SNDPIPE), 0);
            break;
        case 1:
            CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDPIPE), 0);
            break;
        case 2:
            CHECK_EQ(strm_fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
            break;
        case 3:
            CHECK_EQ(strm_fcntl(fd, F_SETFL, fl), 0);
            break;
        default: {
            int nb = 0;
            CHECK(strm_ioctl(fd, I_NREAD, &nb) >= 0);
            break;
        }
        }
        usleep(200);
    }
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDPIPE), 0);
    CHECK_EQ(strm_fcntl(fd, F_SETFL, fl), 0);
    return NULL;
}

static void test_threaded(int push)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    if (push)
        CHECK_EQ(strm_ioctl(p[1], I_PUSH, "nullmod"), 0);
    pthread_t wt[NWRITERS], tt;
    struct wr w[NWRITERS];
    atomic_store(&toggler_stop, 0);
    CHECK_EQ(pthread_create(&tt, NULL, toggler_main, &p[1]), 0);
    for (int i = 0; i < NWRITERS; i++) {
        w[i].fd = p[1];
        w[i].id = i + 1;
        CHECK_EQ(pthread_create(&wt[i], NULL, writer_main, &w[i]), 0);
    }
    int next[NWRITERS] = {0};
    long frames = 0, bad = 0;
    unsigned char buf[8192], frame[64];
    size_t have = 0; /* bytes of the current frame */
    while (frames < (long)NWRITERS * NMSG && bad == 0) {
        ssize_t r = strm_read(p[0], buf, sizeof(buf));
        if (!CHECK(r > 0))
            break;
        for (ssize_t i = 0; i < r; i++) {
            frame[have++] = buf[i];
            if (frame[0] < FRAME_MIN || frame[0] >= FRAME_MIN + 50) {
                bad++;
                break;
            }
            if (have < frame[0])
                continue;
            int id = frame[1] - 1, seq;
            memcpy(&seq, frame + 2, sizeof(seq));
            int ok = id >= 0 && id < NWRITERS && seq == next[id] &&
                     frame[0] == FRAME_MIN + seq % 50;
            for (size_t k = 6; ok && k < have; k++)
                ok = frame[k] == (unsigned char)seq;
            if (!ok) {
                bad++;
                break;
            }
            next[id]++;
            frames++;
            have = 0;
        }
    }
    for (int i = 0; i < NWRITERS; i++)
        pthread_join(wt[i], NULL);
    atomic_store(&toggler_stop, 1);
    pthread_join(tt, NULL);
    CHECK_EQ(bad, 0);
    CHECK_EQ(frames, (long)NWRITERS * NMSG);
    for (int i = 0; i < NWRITERS; i++)
        CHECK_EQ(next[i], NMSG);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* The number of put procedure calls of the module below fd's head. */
static long module_puts(int fd)
{
    int err = 0;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!CHECK(sd != NULL))
        return -1;
    queue_t *mq = sd->sd_wq->q_next;
    long n = mq ? atomic_load(&ust_qpv(mq)->nput) : -1;
    ust_sd_put(sd);
    return n;
}

/* W.8 */
static void test_send_taken_and_used(void)
{
    int p[2];
    nullmod_pipe(p, 0);
    pat_write(p[1], 0, 4 * 64, 64);
    unsigned long t0 = takes_of(p[1]);
    long n0 = module_puts(p[1]);
    pat_write(p[1], 4 * 64, 500 * 64, 64);
    CHECK_EQ(takes_of(p[1]), t0);
    CHECK_EQ(module_puts(p[1]) - n0, 500);
    pat_read(p[0], 0, 504 * 64);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* W.9 */
static void test_send_pop_ends_it(void)
{
    int p[2];
    nullmod_pipe(p, 0);
    pat_write(p[1], 0, 64 * 20, 64);
    int err = 0;
    struct stdata *sd = ust_sd_get(p[1], &err);
    queue_t *mq = sd ? sd->sd_wq->q_next : NULL;
    long before = mq ? atomic_load(&ust_qpv(mq)->nput) : 0;
    CHECK_EQ(strm_ioctl(p[1], I_POP, 0), 0);
    pat_write(p[1], 64 * 20, 64 * 20, 64);
    long after = mq ? atomic_load(&ust_qpv(mq)->nput) : 0; /* the pooled pair */
    if (sd)
        ust_sd_put(sd);
    CHECK_EQ(after, before);
    pat_read(p[0], 0, 64 * 40);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* W.10 */
static void test_send_nonblock_full(void)
{
    int p[2];
    nullmod_pipe(p, 1);
    size_t off = fill_until_eagain(p[1], 0);
    CHECK(off > 64 * 10);
    struct pollfd pf = {.fd = p[1], .events = POLLOUT};
    CHECK_EQ(strm_poll(&pf, 1, 0), 0);
    pat_read(p[0], 0, off);
    CHECK_EQ(strm_poll(&pf, 1, 1000), 1);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* W.11 */
static void test_send_psz_change(void)
{
    int p[2];
    nullmod_pipe(p, 0);
    pat_write(p[1], 0, 64 * 10, 64);
    pat_read(p[0], 0, 64 * 10);
    int err = 0;
    struct stdata *sd = ust_sd_get(p[1], &err);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(strqset(sd->sd_wq->q_next, QMAXPSZ, 0, 16), 0);
    ust_sd_put(sd);
    pat_write(p[1], 64 * 10, 64, 64);
    CHECK_EQ(strm_ioctl(p[0], I_SRDOPT, RMSGN), 0);
    unsigned char b[64];
    for (int i = 0; i < 4; i++) {
        if (!CHECK_EQ(strm_read(p[0], b, sizeof(b)), 16))
            break; /* one message: nothing more to read */
        CHECK_EQ(b[0], pat(64 * 10 + 16 * (size_t)i));
    }
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* W.13 */
static void test_send_reader_gone(void)
{
    int p[2];
    nullmod_pipe(p, 0);
    pat_write(p[1], 0, 64 * 20, 64);
    pat_read(p[0], 0, 64 * 20);
    pat_write(p[1], 64 * 20, 64 * 5, 64); /* the snapshot */
    pat_read(p[0], 64 * 20, 64 * 5);
    close_reader_then_epipe(p);
}

/* W.15 */
static void test_send_fill_pollout(void)
{
    int p[2];
    nullmod_pipe(p, 1);
    size_t off = 0;
    unsigned char buf[64];
    for (int n = 0; n < 100000; n++) {
        struct pollfd pf = {.fd = p[1], .events = POLLOUT};
        /* the kernel's poll(2): what an event loop sees, no library call */
        int shown = poll(&pf, 1, 0) == 1 && (pf.revents & POLLOUT);
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = pat(off + i);
        ssize_t r = strm_write(p[1], buf, sizeof(buf));
        if (!shown) {
            CHECK_EQ(r, -1);
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        if (!CHECK_EQ(r, 64)) /* EAGAIN after POLLOUT: the filling write left it shown */
            break;
        off += 64;
    }
    CHECK(off > 64 * 10);
    pat_read(p[0], 0, off);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* ---- W.14 ---- */

static queue_t *w14_twist[2]; /* the writing end's pipe wq, the reading end's pipe rq */
static atomic_int w14_puts[2], w14_bad[2];

/* Records, for data, the claims it runs under: on the write side its own
 * (covered: none), on the read side the twist's (none) and its own (one). */
static int rec_put(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_DATA) {
        int rd = ust_isrd(q);
        int bad = rd ? atomic_load(&ust_qpv(w14_twist[0])->active) +
                           atomic_load(&ust_qpv(w14_twist[1])->active) +
                           (atomic_load(&ust_qpv(q)->active) != 1)
                     : atomic_load(&ust_qpv(q)->active) != 0;
        atomic_fetch_add(&w14_puts[rd], 1);
        if (bad)
            atomic_fetch_add(&w14_bad[rd], 1);
    }
    putnext(q, mp);
    return 0;
}
static struct module_info rec_minfo = {
    .mi_idnum = 7114, .mi_idname = "claimrec", .mi_maxpsz = INFPSZ, .mi_hiwat = 5120, .mi_lowat = 1024};
static int rec_open(queue_t *q, dev_t *devp, int flag, int sflag, cred_t *crp)
{
    (void)devp, (void)flag, (void)sflag, (void)crp;
    qprocson(q);
    return 0;
}
static int rec_close(queue_t *q, int flag, cred_t *crp)
{
    (void)flag, (void)crp;
    qprocsoff(q);
    return 0;
}
static struct qinit rec_rinit = {
    .qi_putp = rec_put, .qi_qopen = rec_open, .qi_qclose = rec_close, .qi_minfo = &rec_minfo};
static struct qinit rec_winit = {.qi_putp = rec_put, .qi_minfo = &rec_minfo};
static struct streamtab rec_info = {.st_rdinit = &rec_rinit, .st_wrinit = &rec_winit};
static struct fmodsw rec_fmod = {.f_name = "claimrec", .f_str = &rec_info, .f_flag = D_MP};

static void test_send_claims(void)
{
    int p[2], err = 0;
    CHECK_EQ(register_strmod(&rec_fmod), 0);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "claimrec"), 0);
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, "claimrec"), 0);
    struct stdata *sd = ust_sd_get(p[1], &err);
    if (!CHECK(sd != NULL))
        return;
    w14_twist[0] = sd->sd_wq->q_next->q_next;
    w14_twist[1] = w14_twist[0]->q_next;
    CHECK(ust_qoff(w14_twist[0]) && ust_qoff(w14_twist[1]));
    ust_sd_put(sd);
    pat_write(p[1], 0, 64 * 300, 64); /* the locked way first, then the snapshot */
    pat_read(p[0], 0, 64 * 300);
    CHECK_EQ(atomic_load(&w14_puts[0]), 300);
    CHECK_EQ(atomic_load(&w14_puts[1]), 300);
    CHECK_EQ(atomic_load(&w14_bad[0]), 0);
    CHECK_EQ(atomic_load(&w14_bad[1]), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(unregister_strmod(&rec_fmod), 0);
}

/* ---- W.7 ---- */

static int w7_fds[2];

static int w7_child(void *arg)
{
    (void)arg;
    pat_write(w7_fds[1], 64 * 20, 64 * 100, 64);
    return FK_CHILD_FAILED();
}

static void test_fork(void)
{
    CHECK_EQ(strm_pipe(w7_fds), 0);
    pat_write(w7_fds[1], 0, 64 * 10, 64); /* the snapshot, in one process */
    pat_read(w7_fds[0], 0, 64 * 10);
    pat_write(w7_fds[1], 64 * 10, 64 * 10, 64);
    pat_read(w7_fds[0], 64 * 10, 64 * 10);
    CHECK_EQ(fk_run(w7_child, NULL, 20000), 0); /* split at the fork */
    pat_read(w7_fds[0], 64 * 20, 64 * 100);
    pat_write(w7_fds[1], 64 * 120, 64 * 100, 64);
    pat_read(w7_fds[0], 64 * 120, 64 * 100);
    CHECK_EQ(strm_close(w7_fds[0]), 0);
    CHECK_EQ(strm_close(w7_fds[1]), 0);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    test_taken_and_used();
    test_hold_ends_it();
    test_reader_gone();
    test_push_ends_it();
    test_nonblock_ends_it();
    test_threaded(0);
    test_fork();
    test_send_taken_and_used();
    test_send_pop_ends_it();
    test_send_nonblock_full();
    test_send_psz_change();
    test_threaded(1);
    test_send_reader_gone();
    test_send_claims();
    test_send_fill_pollout();
    return CHECK_RESULT();
}
