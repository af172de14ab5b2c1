/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_modstack.c -- messages through pushed modules land at the head
 * as arrivals (issue 24 item 2; docs/STREAMHEAD.md "Through modules without
 * queues"; src/head/sd_arrive.c ust_sd_arrive, sd_rput.c sd_data).
 *
 * References: the SVR4 STREAMS Programmer's Guide, "Message ordering" and
 * "Flow control" (FIFO within a band, higher bands first; a queue full at
 * its high-water mark stops the writer until it drains to low water),
 * streamio(7) I_PUSH, I_POP, I_FLUSH, I_NREAD, putmsg(2)/getmsg(2).
 *
 * Stacks, pushed on both ends of a pipe (the writer end's write side and the
 * reader end's read side both carry them): none, 1, 4 and 8 nullmods, and a
 * mix (nullmod srvmod nullmod on the writer end, srvmod pipemod nullmod on
 * the reader end: modules that queue and a service stage on each side).
 * A writer thread sends MSGS messages of 8..MAXMSG bytes, one in eight on
 * band 1..3 with putpmsg, the rest on band 0 alternately with write(2) and
 * putpmsg; each carries (band, per-band sequence, length) and a pattern.  A
 * reader thread takes them with getpmsg(MSG_ANY).
 *   P.1 every message arrives once, intact, in order within its band
 *   P.2 flow control: with the reader stopped the writer blocks (no progress
 *       for PAUSE_MS) having sent at most the reading head's high-water mark
 *       and a message (put-only stacks; the mix adds its queues), then all
 *       arrive once the reader resumes
 *   P.3 I_FLUSH FLUSHR on the reader end while data flows: no message is
 *       duplicated or reordered (sequences rise strictly per band); after a
 *       flush with the writer stopped I_NREAD counts nothing and the next
 *       message read is the next one written
 *   P.4 I_PUSH/I_POP of a nullmod on both ends, over and over, while data
 *       flows: P.1 still holds
 *   P.5 every run ends within RUN_MS (alarm() fails a hang); no message
 *       block is outstanding at the end
 *   P.6 flow control follows the plumbing (the writer's flow target is
 *       remembered per thread for a plumbing generation, flow.c): one
 *       thread fills the pipe with non-blocking writes until EAGAIN (1
 *       nullmod on each end), with a srvmod pushed on the writer end, then
 *       with it popped again, draining in between; each fill stops within its
 *       stack's bound (the reading head's high-water mark, plus srvmod's
 *       5120 when pushed) and after a drain the same thread writes again
 *       (a stale target would let it write without bound or never again)
 *   P.7 a srvmod holding messages is popped from the reader end while a
 *       writer keeps writing (not flow controlled: the reading head's
 *       high-water mark above all it sends) through the pipe's
 *       passed-through queues (nothing may pass what the popped queue
 *       holds): every message arrives once, in order within its band
 *   P.8 qprocsoff waits for threads inside a queue by a covered entry
 *       (putnext.c "Covered entries": no claim of their own): a test module
 *       whose put procedure dawdles sits above a nullmod on the reader end,
 *       so messages enter it covered by the nullmod's claim; popping it
 *       while data flows, no put procedure of it runs after its close's
 *       qprocsoff returned, and every message arrives in order
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/strconf.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

#define MSGS     20000
#define MAXMSG   300
#define NBAND    4
#define RUN_MS   40000
#define PAUSE_MS 150
#define HIWAT    8192
#define LOWAT    2048

struct hdr {
    uint32_t seq;
    uint8_t band, end;
    uint16_t len;
};

struct stack {
    const char *name;
    const char *wmods[9]; /* writer end, bottom first (pushed in this order) */
    const char *rmods[9]; /* reader end */
    int queues;           /* some module queues (srvmod): P.2's bound is wider */
};

static const struct stack stacks[] = {
    {"none", {NULL}, {NULL}, 0},
    {"1 nullmod", {"nullmod", NULL}, {"nullmod", NULL}, 0},
    {"4 nullmods", {"nullmod", "nullmod", "nullmod", "nullmod", NULL},
     {"nullmod", "nullmod", "nullmod", "nullmod", NULL}, 0},
    {"8 nullmods",
     {"nullmod", "nullmod", "nullmod", "nullmod", "nullmod", "nullmod", "nullmod", "nullmod", NULL},
     {"nullmod", "nullmod", "nullmod", "nullmod", "nullmod", "nullmod", "nullmod", "nullmod", NULL},
     0},
    {"mix", {"nullmod", "srvmod", "nullmod", NULL}, {"srvmod", "pipemod", "nullmod", NULL}, 1},
};

enum { RUN_PLAIN, RUN_FLOW, RUN_FLUSH, RUN_PUSHPOP };
static const char *run_name[] = {"plain", "flow", "flush", "push/pop"};

struct run {
    int wfd, rfd, kind;
    atomic_long sent;       /* messages written */
    atomic_long sent_bytes[NBAND]; /* their data bytes, per band */
    atomic_int stop;        /* end the push/pop thread */
    atomic_int flushes_done;
    atomic_int failed;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void fill(unsigned char *b, const struct hdr *h)
{
    memcpy(b, h, sizeof(*h));
    for (size_t i = sizeof(*h); i < h->len; i++)
        b[i] = (unsigned char)(h->seq * 7 + h->band + i);
}

/* One message of band `band` (write(2) on band 0 when `viawrite`); 0 or -1. */
static int send_one(int fd, const struct hdr *h, int viawrite)
{
    unsigned char buf[MAXMSG];
    fill(buf, h);
    if (viawrite)
        return strm_write(fd, buf, h->len) == (ssize_t)h->len ? 0 : -1;
    struct strbuf d = {.len = h->len, .buf = (char *)buf};
    return putpmsg(fd, NULL, &d, h->band, MSG_BAND);
}

static void *writer_main(void *arg)
{
    struct run *r = arg;
    uint32_t seq[NBAND] = {0};
    unsigned x = 4242u;
    for (long s = 0; s < MSGS; s++) {
        x = x * 1103515245u + 12345u;
        int band = s % 8 == 7 ? 1 + (int)((x >> 16) % 3) : 0;
        struct hdr h = {.seq = seq[band]++, .band = (uint8_t)band,
                        .len = (uint16_t)(sizeof(h) + (x >> 8) % (MAXMSG - sizeof(h) + 1))};
        if (send_one(r->wfd, &h, band == 0 && (s & 1)) != 0) {
            fprintf(stderr, "modstack writer: %s\n", strerror(errno));
            atomic_store(&r->failed, 1);
            return NULL;
        }
        atomic_fetch_add(&r->sent, 1);
        atomic_fetch_add(&r->sent_bytes[band], h.len);
    }
    if (r->kind == RUN_FLUSH) { /* the end marker only after the last flush */
        long long until = now_ms() + RUN_MS;
        while (!atomic_load(&r->flushes_done) && now_ms() < until)
            sleep_ms(1);
    }
    struct hdr e = {.seq = 0, .band = 0, .end = 1, .len = sizeof(e)};
    if (send_one(r->wfd, &e, 0) != 0)
        atomic_store(&r->failed, 1);
    return NULL;
}

/* P.4: push and pop a nullmod on both ends until told to stop. */
static void *pushpop_main(void *arg)
{
    struct run *r = arg;
    while (!atomic_load(&r->stop)) {
        for (int e = 0; e < 2; e++) {
            int fd = e ? r->rfd : r->wfd;
            if (strm_ioctl(fd, I_PUSH, "nullmod") != 0 || strm_ioctl(fd, I_POP, 0) != 0) {
                fprintf(stderr, "modstack push/pop: %s\n", strerror(errno));
                atomic_store(&r->failed, 1);
                return NULL;
            }
        }
        sleep_ms(1);
    }
    return NULL;
}

/* Check message b (len bytes, band) against the per-band sequences: exact
 * (next expected) or, with flushes, strictly rising.  1 good. */
static int check_msg(const unsigned char *b, int len, int band, uint32_t next[NBAND], int flushing)
{
    struct hdr h;
    if (len < (int)sizeof(h))
        return 0;
    memcpy(&h, b, sizeof(h));
    if (h.len != len || h.band != band || band >= NBAND)
        return 0;
    if (flushing ? h.seq < next[band] : h.seq != next[band])
        return 0;
    for (int i = (int)sizeof(h); i < len; i++)
        if (b[i] != (unsigned char)(h.seq * 7 + h.band + (unsigned)i))
            return 0;
    next[band] = h.seq + 1;
    return 1;
}

/* P.3's deterministic part: writer stopped, flush, then the next message. */
static void flush_quiet(int wfd, int rfd)
{
    for (uint32_t s = 0; s < 50; s++) {
        struct hdr h = {.seq = s, .band = (uint8_t)(s % 4 == 3 ? 2 : 0), .len = 64};
        CHECK_EQ(send_one(wfd, &h, h.band == 0), 0);
    }
    sleep_ms(20); /* a service stage (mix) delivers what it queued */
    CHECK_EQ(strm_ioctl(rfd, I_FLUSH, FLUSHR), 0);
    int nbytes = -1;
    CHECK_EQ(strm_ioctl(rfd, I_NREAD, &nbytes), 0); /* no message */
    CHECK_EQ(nbytes, 0);
    struct hdr m = {.seq = 999, .band = 0, .len = 100};
    CHECK_EQ(send_one(wfd, &m, 1), 0);
    unsigned char buf[MAXMSG];
    struct strbuf d = {.maxlen = sizeof(buf), .buf = (char *)buf};
    int fl = MSG_ANY, band = -1;
    CHECK_EQ(getpmsg(rfd, NULL, &d, &band, &fl), 0);
    uint32_t next[NBAND] = {999, 0, 0, 0};
    CHECK_EQ(band, 0);
    CHECK(check_msg(buf, d.len, band, next, 0));
}

static void run(const struct stack *st, int kind)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    for (int i = 0; st->wmods[i]; i++)
        CHECK_EQ(strm_ioctl(fds[0], I_PUSH, st->wmods[i]), 0);
    for (int i = 0; st->rmods[i]; i++)
        CHECK_EQ(strm_ioctl(fds[1], I_PUSH, st->rmods[i]), 0);
    queue_t *rq = ust_sd_peek(fds[1])->sd_rq;
    for (int b = 0; b < NBAND; b++) {
        CHECK_EQ(strqset(rq, QHIWAT, (unsigned char)b, HIWAT), 0);
        CHECK_EQ(strqset(rq, QLOWAT, (unsigned char)b, LOWAT), 0);
    }
    if (kind == RUN_FLUSH)
        flush_quiet(fds[0], fds[1]);

    struct run r = {.wfd = fds[0], .rfd = fds[1], .kind = kind};
    pthread_t wt, pt;
    CHECK_EQ(pthread_create(&wt, NULL, writer_main, &r), 0);
    if (kind == RUN_PUSHPOP)
        CHECK_EQ(pthread_create(&pt, NULL, pushpop_main, &r), 0);
    if (kind == RUN_FLOW) { /* P.2: the writer must stop, then resume */
        long a = -1, b = -2;
        long long until = now_ms() + RUN_MS / 2;
        while (a != b && now_ms() < until) { /* stopped: no progress for PAUSE_MS */
            a = atomic_load(&r.sent);
            sleep_ms(PAUSE_MS);
            b = atomic_load(&r.sent);
        }
        CHECK_EQ(a, b);
        CHECK(a < MSGS);
        /* Each band is flow controlled on its own marks: at most its
         * high-water mark and one message at the reading head, plus what
         * the module queues of the mix hold (two srvmod queues of 5120). */
        long bound = HIWAT + MAXMSG + (st->queues ? 2 * (5120 + MAXMSG) : 0);
        for (int band = 0; band < NBAND; band++) {
            long ab = atomic_load(&r.sent_bytes[band]);
            if (!CHECK(ab <= bound))
                fprintf(stderr, "modstack %s: band %d: %ld bytes sent with the reader stopped\n",
                        st->name, band, ab);
        }
    }

    uint32_t next[NBAND] = {0};
    long got = 0, bad = 0;
    int flushes = 0, ended = 0;
    long long end = now_ms() + RUN_MS;
    unsigned char buf[MAXMSG + 16];
    while (!ended && now_ms() < end) {
        struct strbuf d = {.maxlen = (int)sizeof(buf), .buf = (char *)buf};
        int fl = MSG_ANY, band = 0;
        if (getpmsg(fds[1], NULL, &d, &band, &fl) != 0) {
            CHECK(0);
            break;
        }
        struct hdr h;
        if (d.len == (int)sizeof(h) && memcpy(&h, buf, sizeof(h)) && h.end) {
            ended = 1;
            break;
        }
        if (!check_msg(buf, d.len, band, next, kind == RUN_FLUSH))
            bad++;
        got++;
        if (kind == RUN_FLUSH && flushes < 5 && got % 300 == 0) {
            CHECK_EQ(strm_ioctl(fds[1], I_FLUSH, FLUSHR), 0);
            if (++flushes == 5)
                atomic_store(&r.flushes_done, 1);
        }
    }
    if (!ended) {
        fprintf(stderr, "modstack %s %s: %ld messages, no end in %d ms\n", st->name,
                run_name[kind], got, RUN_MS);
        CHECK(ended);
        CHECK_EQ(strm_close(fds[1]), 0); /* release the writer */
        fds[1] = -1;
        atomic_store(&r.flushes_done, 1);
    }
    atomic_store(&r.stop, 1);
    pthread_join(wt, NULL);
    if (kind == RUN_PUSHPOP)
        pthread_join(pt, NULL);
    if (fds[1] >= 0)
        CHECK_EQ(atomic_load(&r.failed), 0);
    if (bad)
        fprintf(stderr, "modstack %s %s: %ld bad of %ld\n", st->name, run_name[kind], bad, got);
    CHECK_EQ(bad, 0);
    if (kind == RUN_FLUSH) {
        CHECK(got <= MSGS);
        CHECK_EQ(flushes, 5);
    } else {
        CHECK_EQ(got, MSGS);
    }
    CHECK_EQ(strm_close(fds[0]), 0);
    if (fds[1] >= 0)
        CHECK_EQ(strm_close(fds[1]), 0);
}

/* P.6: write 200-byte messages without blocking until EAGAIN; returns the
 * bytes written. */
static long fill_nb(int wfd, uint32_t *seq)
{
    long bytes = 0;
    for (int i = 0; i < 100000; i++) {
        struct hdr h = {.seq = (*seq)++, .band = 0, .len = 200};
        if (send_one(wfd, &h, 1) != 0) {
            CHECK_EQ(errno, EAGAIN);
            (*seq)--;
            return bytes;
        }
        bytes += h.len;
    }
    CHECK(0); /* never flow controlled */
    return bytes;
}

/* P.6: read every message written so far, in order. */
static void drain(int rfd, uint32_t *next, uint32_t upto)
{
    unsigned char buf[MAXMSG];
    uint32_t nx[NBAND] = {*next, 0, 0, 0};
    while (nx[0] < upto) {
        struct strbuf d = {.maxlen = sizeof(buf), .buf = (char *)buf};
        int fl = MSG_ANY, band = -1;
        if (!CHECK_EQ(getpmsg(rfd, NULL, &d, &band, &fl), 0) ||
            !CHECK(check_msg(buf, d.len, band, nx, 0)))
            break;
    }
    *next = nx[0];
}

static void flow_follows_plumbing(void)
{
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "nullmod"), 0);
    queue_t *rq = ust_sd_peek(fds[1])->sd_rq;
    CHECK_EQ(strqset(rq, QHIWAT, 0, HIWAT), 0);
    CHECK_EQ(strqset(rq, QLOWAT, 0, LOWAT), 0);
    CHECK_EQ(strm_fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    uint32_t seq = 0, next = 0;
    /* srvmod pushed (a queue of 5120 on the way: the writer's flow target),
     * then popped (the target is the reading head again: a target left
     * from the srvmod, freed, would not stop the writer) */
    static const long extra[] = {5120 + 200, 0};
    for (int round = 0; round < 6; round++) {
        int step = round % 2;
        CHECK_EQ(strm_ioctl(fds[0], step == 0 ? I_PUSH : I_POP, step == 0 ? "srvmod" : 0), 0);
        long b = fill_nb(fds[0], &seq);
        sleep_ms(20); /* srvmod's service procedure moves what it may */
        b += fill_nb(fds[0], &seq);
        if (!CHECK(b > 0 && b <= HIWAT + 200 + extra[step]))
            fprintf(stderr, "modstack P.6 round %d: %ld bytes before EAGAIN\n", round, b);
        drain(fds[1], &next, seq);
        CHECK_EQ(next, seq);
    }
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* P.7: the writer: MSGS band-0 messages, counted. */
static void *p7_writer(void *arg)
{
    struct run *r = arg;
    for (uint32_t seq = 0; seq < MSGS; seq++) {
        struct hdr h = {.seq = seq, .band = 0, .len = 100};
        if (send_one(r->wfd, &h, 1) != 0) {
            atomic_store(&r->failed, 1);
            break;
        }
        atomic_fetch_add(&r->sent, 1);
    }
    return NULL;
}

static void pop_holding(void)
{
    for (int round = 0; round < 20; round++) {
        int fds[2];
        CHECK_EQ(strm_pipe(fds), 0);
        CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "srvmod"), 0);
        /* The head takes all: srvmod's service procedure is never flow
         * controlled, so the writer runs on through the pop, and srvmod's
         * queue holds what its service procedure has not moved yet. */
        queue_t *rq = ust_sd_peek(fds[1])->sd_rq;
        CHECK_EQ(strqset(rq, QHIWAT, 0, MSGS * 200), 0);
        struct run r = {.wfd = fds[0], .rfd = fds[1], .kind = RUN_PLAIN};
        pthread_t wt;
        CHECK_EQ(pthread_create(&wt, NULL, p7_writer, &r), 0);
        long long until = now_ms() + RUN_MS / 4;
        while (atomic_load(&r.sent) < 200 * (round + 1) && now_ms() < until)
            sched_yield();
        CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), 0);
        long at_pop = atomic_load(&r.sent);
        uint32_t next[NBAND] = {0};
        unsigned char buf[MAXMSG];
        long got = 0, bad = 0;
        long long end = now_ms() + RUN_MS / 4;
        while (got < MSGS && now_ms() < end) {
            struct strbuf d = {.maxlen = sizeof(buf), .buf = (char *)buf};
            int fl = MSG_ANY, band = -1;
            if (getpmsg(fds[1], NULL, &d, &band, &fl) != 0)
                break;
            if (!check_msg(buf, d.len, band, next, 0)) {
                bad++;
                memcpy(&next[0], buf, sizeof(next[0])); /* resynchronize on it */
                next[0]++;
            }
            got++;
        }
        if (!CHECK_EQ(got, MSGS))
            CHECK_EQ(strm_close(fds[1]), 0); /* releases a writer blocked on flow control */
        pthread_join(wt, NULL);
        if (bad)
            fprintf(stderr, "modstack P.7 round %d: %ld out of order of %ld (popped after %ld)\n",
                    round, bad, got, at_pop);
        CHECK_EQ(bad, 0);
        CHECK_EQ(atomic_load(&r.failed), 0);
        CHECK_EQ(strm_close(fds[0]), 0);
        if (got == MSGS)
            CHECK_EQ(strm_close(fds[1]), 0);
    }
}

/* P.8: "slowmodt", a put-only D_MP module whose put procedure sleeps
 * 200 us; its close records when qprocsoff returned, and a put procedure
 * running after that is counted. */
static atomic_int slow_closed, slow_late;

static int slow_put(queue_t *q, mblk_t *mp)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    if (atomic_load(&slow_closed))
        atomic_fetch_add(&slow_late, 1);
    putnext(q, mp);
    return 0;
}

static int slow_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp, (void)oflag, (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    atomic_store(&slow_closed, 0);
    qprocson(q);
    return 0;
}

static int slow_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag, (void)crp;
    qprocsoff(q);
    atomic_store(&slow_closed, 1);
    return 0;
}

static struct module_info slow_minfo = {.mi_idname = "slowmodt", .mi_maxpsz = INFPSZ,
                                        .mi_hiwat = 5120, .mi_lowat = 1024};
static struct qinit slow_rinit = {.qi_putp = slow_put, .qi_qopen = slow_open,
                                  .qi_qclose = slow_close, .qi_minfo = &slow_minfo};
static struct qinit slow_winit = {.qi_putp = slow_put, .qi_minfo = &slow_minfo};
static struct streamtab slow_info = {.st_rdinit = &slow_rinit, .st_wrinit = &slow_winit};
static struct fmodsw slow_fmod = {.f_name = "slowmodt", .f_str = &slow_info, .f_flag = D_MP};

static void pop_covered(void)
{
    CHECK_EQ(register_strmod(&slow_fmod), 0);
    for (int round = 0; round < 10; round++) {
        int fds[2];
        CHECK_EQ(strm_pipe(fds), 0);
        CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "nullmod"), 0);
        CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "slowmodt"), 0);
        struct run r = {.wfd = fds[0], .rfd = fds[1], .kind = RUN_PLAIN};
        pthread_t wt;
        CHECK_EQ(pthread_create(&wt, NULL, p7_writer, &r), 0);
        uint32_t next[NBAND] = {0};
        unsigned char buf[MAXMSG];
        long got = 0, bad = 0;
        long long end = now_ms() + RUN_MS / 4;
        while (got < MSGS && now_ms() < end) {
            if (got == 20 + 5 * round)
                CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), 0); /* slowmodt, while inside */
            struct strbuf d = {.maxlen = sizeof(buf), .buf = (char *)buf};
            int fl = MSG_ANY, band = -1;
            if (getpmsg(fds[1], NULL, &d, &band, &fl) != 0)
                break;
            if (!check_msg(buf, d.len, band, next, 0)) {
                bad++;
                memcpy(&next[0], buf, sizeof(next[0]));
                next[0]++;
            }
            got++;
        }
        if (!CHECK_EQ(got, MSGS))
            CHECK_EQ(strm_close(fds[1]), 0);
        pthread_join(wt, NULL);
        CHECK_EQ(bad, 0);
        CHECK_EQ(atomic_load(&r.failed), 0);
        CHECK_EQ(strm_close(fds[0]), 0);
        if (got == MSGS)
            CHECK_EQ(strm_close(fds[1]), 0);
    }
    if (!CHECK_EQ(atomic_load(&slow_late), 0))
        fprintf(stderr, "modstack P.8: %d put procedures ran after qprocsoff\n",
                atomic_load(&slow_late));
    CHECK_EQ(unregister_strmod(&slow_fmod), 0);
}

int main(void)
{
    alarm(170); /* a hang fails (ctest's timeout is 180 s) */
    for (size_t s = 0; s < sizeof(stacks) / sizeof(stacks[0]); s++)
        for (int kind = RUN_PLAIN; kind <= RUN_PUSHPOP; kind++) {
            long long t0 = now_ms();
            run(&stacks[s], kind);
            CHECK(now_ms() - t0 < RUN_MS);
        }
    flow_follows_plumbing(); /* P.6 */
    pop_holding();           /* P.7 */
    pop_covered();           /* P.8 */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS(); /* P.5 */
    return CHECK_RESULT();
}
