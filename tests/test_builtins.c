/* SPDX-License-Identifier: MIT */
/*
 * test_builtins.c -- the built-in drivers (echo, nuls) and modules (nullmod,
 * srvmod) on harness streams (no stream head).
 *
 * Cases cite the STREAMS Programming Guide (SVR4.2 / Solaris) rules they check:
 *   STR-FLUSH   M_FLUSH in a driver: flush FLUSHW, clear it, turn FLUSHR back
 *               up; in a module: flush the named sides and pass it on.
 *   STR-IOCTL   an ioctl a driver does not know is answered M_IOCNAK (EINVAL).
 *   STR-FLOW    a service procedure forwards only while bcanputnext allows;
 *               a full queue pushes back on its writers (hysteresis).
 *   STR-BAND    priority bands are kept, FIFO within a band.
 *   STR-PUSH    I_PUSH of a name that is no module fails (EINVAL).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ddi.h>

#include "check.h"
#include "harness.h"

#define WAIT_MS 5000 /* generous: the machines are shared */
#define NONE_MS 200  /* how long "nothing comes back" is watched */

/* A data message carrying "<seq>" as text. */
static mblk_t *seqmsg(unsigned char type, unsigned char band, int seq)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "msg-%d", seq);
    return th_msg(type, band, buf, (size_t)n);
}

/* The sequence number of a seqmsg, or -1. */
static int seqof(const mblk_t *mp)
{
    char buf[32];
    size_t n = (size_t)(mp->b_wptr - mp->b_rptr);
    int seq = -1;

    if (n >= sizeof(buf) || mp->b_cont != NULL)
        return -1;
    memcpy(buf, mp->b_rptr, n);
    buf[n] = '\0';
    if (sscanf(buf, "msg-%d", &seq) != 1)
        return -1;
    return seq;
}

/* Read one message and check its type, band and sequence number. */
static void expect(struct th_stream *s, unsigned char type, unsigned char band, int seq)
{
    mblk_t *mp = th_read(s, WAIT_MS);

    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), type);
    CHECK_EQ(mp->b_band, band);
    CHECK_EQ(seqof(mp), seq);
    freemsg(mp);
}

static void expect_nothing(struct th_stream *s)
{
    mblk_t *mp = th_read(s, NONE_MS);

    CHECK(mp == NULL);
    if (mp != NULL)
        freemsg(mp);
}

/* Send an M_FLUSH with the given flags (and band, for FLUSHBAND). */
static void send_flush(struct th_stream *s, unsigned char flags, unsigned char band)
{
    unsigned char b[2] = {flags, band};
    CHECK_EQ(th_write(s, th_msg(M_FLUSH, 0, b, (flags & FLUSHBAND) ? 2 : 1)), 0);
}

/* ------------------------------------------------------------------------ */
/* echo                                                                     */
/* ------------------------------------------------------------------------ */
/* STR-BAND: M_DATA and M_PROTO come back with their type and band, in order. */
static void test_echo_basic(void)
{
    struct th_stream *s = th_open("echo", O_RDWR);

    CHECK(s != NULL);
    if (s == NULL)
        return;
    CHECK(getmajor(s->dev) >= 1);
    CHECK_EQ(getminor(s->dev), 0);

    for (int i = 0; i < 20; i++) {
        CHECK_EQ(th_write(s, seqmsg(M_DATA, 0, i)), 0);
        expect(s, M_DATA, 0, i);
    }
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(th_write(s, seqmsg(M_PROTO, 0, i)), 0);
        expect(s, M_PROTO, 0, i);
    }
    /* one at a time in several bands: each comes back with its band */
    for (int b = 1; b < 256; b += 37) {
        CHECK_EQ(th_write(s, seqmsg(M_DATA, (unsigned char)b, b)), 0);
        expect(s, M_DATA, (unsigned char)b, b);
        CHECK_EQ(th_write(s, seqmsg(M_PROTO, (unsigned char)b, b)), 0);
        expect(s, M_PROTO, (unsigned char)b, b);
    }
    /* M_PCPROTO is high priority and comes straight back */
    CHECK_EQ(th_write(s, seqmsg(M_PCPROTO, 0, 77)), 0);
    expect(s, M_PCPROTO, 0, 77);

    /* a burst: FIFO within a band, every message back exactly once */
    enum { N = 200 };
    int next[3] = {0, 1, 2}; /* message i goes in band i % 3 */
    for (int i = 0; i < N; i++) {
        unsigned char band = (unsigned char)(i % 3);
        CHECK_EQ(th_write(s, seqmsg(band == 1 ? M_PROTO : M_DATA, band, i)), 0);
    }
    for (int got = 0; got < N; got++) {
        mblk_t *mp = th_read(s, WAIT_MS);
        CHECK(mp != NULL);
        if (mp == NULL)
            break;
        int seq = seqof(mp);
        unsigned char band = mp->b_band;
        CHECK(band <= 2);
        CHECK_EQ(th_msgtype(mp), band == 1 ? M_PROTO : M_DATA);
        CHECK_EQ(seq % 3, band);
        if (band <= 2) {
            CHECK_EQ(seq, next[band]);
            next[band] = seq + 3;
        }
        freemsg(mp);
    }
    CHECK_EQ(th_count(s), 0);
    th_close(s);
}

/* STR-FLUSH: FLUSHRW comes back as FLUSHR; FLUSHW alone is absorbed; FLUSHBAND
 * keeps its band byte. */
static void check_flush(struct th_stream *s)
{
    mblk_t *mp;

    send_flush(s, FLUSHRW, 0);
    mp = th_read(s, WAIT_MS);
    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_FLUSH);
        CHECK_EQ(mp->b_wptr - mp->b_rptr, 1);
        CHECK_EQ(mp->b_rptr[0], FLUSHR);
        freemsg(mp);
    }
    send_flush(s, FLUSHR, 0);
    mp = th_read(s, WAIT_MS);
    CHECK(mp != NULL && th_msgtype(mp) == M_FLUSH && mp->b_rptr[0] == FLUSHR);
    if (mp != NULL)
        freemsg(mp);
    send_flush(s, FLUSHW, 0);
    expect_nothing(s);

    send_flush(s, FLUSHRW | FLUSHBAND, 3);
    mp = th_read(s, WAIT_MS);
    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_FLUSH);
        CHECK_EQ(mp->b_wptr - mp->b_rptr, 2);
        CHECK_EQ(mp->b_rptr[0], FLUSHR | FLUSHBAND);
        CHECK_EQ(mp->b_rptr[1], 3);
        freemsg(mp);
    }
}

/* STR-IOCTL */
static void check_ioctl_nak(struct th_stream *s)
{
    mblk_t *mp = th_ioctl_msg(0x1234, 0, NULL, 0);
    uint_t id = ((struct iocblk *)(void *)mp->b_rptr)->ioc_id;

    CHECK_EQ(th_write(s, mp), 0);
    mp = th_read(s, WAIT_MS);
    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), M_IOCNAK);
    CHECK_EQ(((struct iocblk *)(void *)mp->b_rptr)->ioc_error, EINVAL);
    CHECK_EQ(((struct iocblk *)(void *)mp->b_rptr)->ioc_id, id);
    CHECK_EQ(((struct iocblk *)(void *)mp->b_rptr)->ioc_cmd, 0x1234);
    freemsg(mp);
}

static void test_echo_flush_ioctl(void)
{
    struct th_stream *s = th_open("echo", O_RDWR);

    CHECK(s != NULL);
    if (s == NULL)
        return;
    check_flush(s);
    check_ioctl_nak(s);
    /* other message types are dropped by echo */
    CHECK_EQ(th_write(s, th_msg(M_CTL, 0, "x", 1)), 0);
    expect_nothing(s);
    th_close(s);
}

/* Clone opens get distinct minors >= 1; a closed minor is reused. */
static void test_echo_clone(void)
{
    struct th_stream *a = th_open("echo", O_RDWR | TH_CLONE);
    struct th_stream *b = th_open("echo", O_RDWR | TH_CLONE);
    minor_t ma, mb;

    CHECK(a != NULL && b != NULL);
    if (a == NULL || b == NULL)
        goto out;
    ma = getminor(a->dev);
    mb = getminor(b->dev);
    CHECK(ma >= 1);
    CHECK(mb >= 1);
    CHECK(ma != mb);
    CHECK_EQ(getmajor(a->dev), getmajor(b->dev));
    /* each stream echoes to itself only */
    CHECK_EQ(th_write(a, seqmsg(M_DATA, 0, 1)), 0);
    CHECK_EQ(th_write(b, seqmsg(M_DATA, 0, 2)), 0);
    expect(a, M_DATA, 0, 1);
    expect(b, M_DATA, 0, 2);
    th_close(a);
    a = th_open("echo", O_RDWR | TH_CLONE);
    CHECK(a != NULL);
    if (a != NULL)
        CHECK_EQ(getminor(a->dev), ma);
out:
    th_close(a);
    th_close(b);
}

/* ------------------------------------------------------------------------ */
/* echo below modules                                                        */
/* ------------------------------------------------------------------------ */
static void run_stack(const char *const *mods, int depth)
{
    struct th_stream *s = th_open("echo", O_RDWR);

    CHECK(s != NULL);
    if (s == NULL)
        return;
    for (int i = 0; i < depth; i++)
        CHECK_EQ(th_push(s, mods[i % 2]), 0);
    CHECK_EQ(s->nmods, depth);

    enum { N = 100 };
    for (int i = 0; i < N; i++)
        CHECK_EQ(th_write(s, seqmsg(i % 2 ? M_PROTO : M_DATA, 0, i)), 0);
    for (int i = 0; i < N; i++)
        expect(s, i % 2 ? M_PROTO : M_DATA, 0, i);
    CHECK_EQ(th_write(s, seqmsg(M_DATA, 9, 1000)), 0);
    expect(s, M_DATA, 9, 1000);
    CHECK_EQ(th_write(s, seqmsg(M_PCPROTO, 0, 1001)), 0);
    expect(s, M_PCPROTO, 0, 1001);

    check_flush(s);
    check_ioctl_nak(s);

    /* pop one module, the stream still works */
    CHECK_EQ(th_pop(s), 0);
    CHECK_EQ(th_write(s, seqmsg(M_DATA, 0, 5)), 0);
    expect(s, M_DATA, 0, 5);
    th_close(s);
}

static void test_modules(void)
{
    static const char *const nulls[] = {"nullmod", "nullmod"};
    static const char *const srvs[] = {"srvmod", "srvmod"};
    static const char *const mixed[] = {"nullmod", "srvmod"};
    static const int depths[] = {1, 3, 8};

    for (int i = 0; i < 3; i++) {
        run_stack(nulls, depths[i]);
        run_stack(srvs, depths[i]);
        run_stack(mixed, depths[i]);
    }
}

/* STR-PUSH: a driver name, an unknown name, a bad name. */
static void test_push_errors(void)
{
    struct th_stream *s = th_open("echo", O_RDWR);

    CHECK(s != NULL);
    if (s == NULL)
        return;
    CHECK_EQ(th_push(s, "echo"), EINVAL);
    CHECK_EQ(th_push(s, "nuls"), EINVAL);
    CHECK_EQ(th_push(s, "nosuch"), EINVAL);
    CHECK_EQ(th_push(s, "far-too-long-name"), EINVAL);
    CHECK_EQ(s->nmods, 0);
    CHECK_EQ(th_pop(s), EINVAL);
    /* the stream is unharmed */
    CHECK_EQ(th_write(s, seqmsg(M_DATA, 0, 3)), 0);
    expect(s, M_DATA, 0, 3);
    th_close(s);

    /* opening a module name as a driver */
    errno = 0;
    CHECK(th_open("nullmod", O_RDWR) == NULL);
    CHECK_EQ(errno, ENXIO);
}

/* ------------------------------------------------------------------------ */
/* Flow control                                                             */
/* ------------------------------------------------------------------------ */
/* STR-FLOW: with a small head read queue, echo holds back what the reader has
 * not taken; the head never holds much more than its high-water mark, the
 * writer sees the stream full, and reading drains everything in order. */
static void run_flow(const char *module)
{
    enum { N = 200, SZ = 100, HI = 1000, LO = 200 };
    char data[SZ];
    struct th_stream *s = th_open("echo", O_RDWR);

    CHECK(s != NULL);
    if (s == NULL)
        return;
    if (module != NULL)
        CHECK_EQ(th_push(s, module), 0);
    CHECK_EQ(th_set_hiwat(s, HI, LO), 0);
    CHECK(th_canwrite(s, 0));
    for (int i = 0; i < N; i++) {
        int n = snprintf(data, sizeof(data), "msg-%d", i);
        memset(data + n, '.', sizeof(data) - (size_t)n);
        mblk_t *mp = th_msg(M_DATA, 0, data, SZ);
        CHECK_EQ(th_write(s, mp), 0);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    /* the head stopped taking at its high-water mark... */
    ust_lock(&s->lock);
    size_t max = s->max_bytes;
    ust_unlock(&s->lock);
    CHECK(max >= HI);
    CHECK(max <= HI + SZ);
    CHECK(th_count(s) <= HI / SZ + 1);
    /* ...and the 19000 bytes left over exceed what the queues below may hold
     * before they push back */
    CHECK(!th_canwrite(s, 0));

    for (int i = 0; i < N; i++) {
        mblk_t *mp = th_read(s, WAIT_MS);
        CHECK(mp != NULL);
        if (mp == NULL)
            break;
        CHECK_EQ(mp->b_wptr - mp->b_rptr, SZ);
        CHECK_EQ(strncmp((char *)mp->b_rptr, "msg-", 4), 0);
        CHECK_EQ(atoi((char *)mp->b_rptr + 4), i);
        freemsg(mp);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK(th_canwrite(s, 0)); /* everything drained: the writer may go again */
    CHECK_EQ(th_count(s), 0);
    th_close(s);
}

static void test_flow(void)
{
    run_flow(NULL);
    run_flow("nullmod");
    run_flow("srvmod");
}

/* ------------------------------------------------------------------------ */
/* nuls                                                                     */
/* ------------------------------------------------------------------------ */
static void test_nuls(void)
{
    struct th_stream *s = th_open("nuls", O_RDWR);

    CHECK(s != NULL);
    if (s == NULL)
        return;
    for (int i = 0; i < 50; i++) {
        CHECK_EQ(th_write(s, seqmsg(M_DATA, 0, i)), 0);
        CHECK_EQ(th_write(s, seqmsg(M_PROTO, (unsigned char)(i % 4), i)), 0);
    }
    CHECK_EQ(th_write(s, seqmsg(M_PCPROTO, 0, 1)), 0);
    CHECK(th_canwrite(s, 0)); /* a sink never fills */
    expect_nothing(s);
    check_flush(s);
    check_ioctl_nak(s);

    /* the same through modules */
    CHECK_EQ(th_push(s, "srvmod"), 0);
    CHECK_EQ(th_push(s, "nullmod"), 0);
    for (int i = 0; i < 50; i++)
        CHECK_EQ(th_write(s, seqmsg(M_DATA, 0, i)), 0);
    expect_nothing(s);
    check_flush(s);
    th_close(s);

    /* clone opens work too */
    s = th_open("nuls", O_RDWR | TH_CLONE);
    CHECK(s != NULL);
    if (s != NULL) {
        CHECK(getminor(s->dev) >= 1);
        th_close(s);
    }
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */
/* Several streams at once, each written and read by its own pair of threads
 * through srvmod and nullmod, with a small head so flow control cycles. */
enum { NSTREAMS = 4, NMSG = 2000 };

struct pump {
    struct th_stream *s;
    int received;
    int in_order;
};

static void *writer(void *arg)
{
    struct pump *p = arg;

    for (int i = 0; i < NMSG; i++)
        th_write(p->s, seqmsg(M_DATA, 0, i));
    return NULL;
}

static void *reader(void *arg)
{
    struct pump *p = arg;

    p->in_order = 1;
    for (int i = 0; i < NMSG; i++) {
        mblk_t *mp = th_read(p->s, 20000);
        if (mp == NULL)
            break;
        if (seqof(mp) != i)
            p->in_order = 0;
        p->received++;
        freemsg(mp);
    }
    return NULL;
}

static void test_threads(void)
{
    struct pump pumps[NSTREAMS];
    pthread_t w[NSTREAMS], r[NSTREAMS];

    for (int i = 0; i < NSTREAMS; i++) {
        pumps[i].s = th_open("echo", O_RDWR | TH_CLONE);
        pumps[i].received = 0;
        CHECK(pumps[i].s != NULL);
        if (pumps[i].s == NULL)
            return;
        CHECK_EQ(th_push(pumps[i].s, "srvmod"), 0);
        CHECK_EQ(th_push(pumps[i].s, "nullmod"), 0);
        CHECK_EQ(th_push(pumps[i].s, "srvmod"), 0);
        CHECK_EQ(th_set_hiwat(pumps[i].s, 512, 128), 0);
    }
    for (int i = 0; i < NSTREAMS; i++) {
        pthread_create(&r[i], NULL, reader, &pumps[i]);
        pthread_create(&w[i], NULL, writer, &pumps[i]);
    }
    for (int i = 0; i < NSTREAMS; i++) {
        pthread_join(w[i], NULL);
        pthread_join(r[i], NULL);
        CHECK_EQ(pumps[i].received, NMSG);
        CHECK(pumps[i].in_order);
        th_close(pumps[i].s);
    }
}

int main(void)
{
    test_echo_basic();
    test_echo_flush_ioctl();
    test_echo_clone();
    test_modules();
    test_push_errors();
    test_flow();
    test_nuls();
    test_threads();
    th_assert_no_blocks();
    return CHECK_RESULT();
}
