/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_arrive.c -- writes deposited straight at a pipe's reading head
 * (src/head/sd_arrive.c): coalesced small writes keep their boundaries for
 * everything that sees messages, order with the normal path (putmsg, bands,
 * I_SENDFD, flush) is kept, readiness and flow control stay right, and
 * switching between the deposit path and the full path under traffic (push
 * and pop on either end) loses, duplicates and reorders nothing.
 *
 * Part 1 fills a pipe with no reader running and then inspects it: I_NREAD,
 * I_PEEK, read in RNORM/RMSGN/RMSGD, getmsg/getpmsg, zero-length messages,
 * putmsg and bands of the normal path, I_SENDFD, I_FLUSH, poll, non-blocking reads and
 * writes.  Part 2 runs threads: several writers and readers on one pipe
 * (messages read whole, each exactly once, each writer's in order for each
 * reader), a byte-stream reader with random read sizes checking every byte,
 * and a writer and reader under push/pop of nullmod and srvmod on both ends.
 * Every part ends with no block outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h> /* FIONREAD */
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define NMSG 4000
#define PLUMB_MS 300
#else
#define NMSG 40000
#define PLUMB_MS 600
#endif
#define NWRITERS 3
#define NREADERS 2

static int mkpipe(int fds[2])
{
    int r = strm_pipe(fds);
    CHECK_EQ(r, 0);
    return r;
}

static void closepipe(int fds[2])
{
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

static void wr(int fd, const char *s)
{
    CHECK_EQ(strm_write(fd, s, strlen(s)), (long)strlen(s));
}

/* Read with count n; the result as a string in buf (size > n). */
static long rd(int fd, char *buf, size_t n)
{
    long r = strm_read(fd, buf, n);
    buf[r > 0 ? r : 0] = '\0';
    return r;
}

/* ------------------------------------------------------------------------ */
/* Part 1: a filled pipe, inspected                                         */
/* ------------------------------------------------------------------------ */

static void test_boundaries(void)
{
    int p[2];
    char buf[256];
    if (mkpipe(p))
        return;
    wr(p[0], "a");
    wr(p[0], "bb");
    wr(p[0], "ccc");
    int bytes = -1;
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &bytes), 3);
    CHECK_EQ(bytes, 1);
    char pd[16];
    struct strpeek pk = {.ctlbuf = {.maxlen = 0}, .databuf = {.maxlen = sizeof(pd), .buf = pd}};
    CHECK_EQ(strm_ioctl(p[1], I_PEEK, &pk), 1);
    CHECK_EQ(pk.databuf.len, 1);
    CHECK(pd[0] == 'a');
    /* byte stream: the writes in one read */
    CHECK_EQ(rd(p[1], buf, 100), 6);
    CHECK(strcmp(buf, "abbccc") == 0);

    /* RMSGN: one write per read, in order; what does not fit stays */
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    wr(p[0], "1");
    wr(p[0], "22");
    wr(p[0], "333");
    wr(p[0], "4444");
    CHECK_EQ(rd(p[1], buf, 100), 1);
    CHECK(strcmp(buf, "1") == 0);
    CHECK_EQ(rd(p[1], buf, 1), 1);
    CHECK(strcmp(buf, "2") == 0);
    CHECK_EQ(rd(p[1], buf, 100), 1);
    CHECK(strcmp(buf, "2") == 0);
    CHECK_EQ(rd(p[1], buf, 100), 3);
    CHECK(strcmp(buf, "333") == 0);
    /* RMSGD: the rest of a message that does not fit is discarded */
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGD), 0);
    wr(p[0], "55555");
    CHECK_EQ(rd(p[1], buf, 2), 2);
    CHECK(strcmp(buf, "44") == 0);
    CHECK_EQ(rd(p[1], buf, 100), 5);
    CHECK(strcmp(buf, "55555") == 0);

    /* a byte-stream read part-way, then message mode */
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RNORM), 0);
    wr(p[0], "abcd");
    wr(p[0], "ef");
    CHECK_EQ(rd(p[1], buf, 2), 2);
    CHECK(strcmp(buf, "ab") == 0);
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &bytes), 2);
    CHECK_EQ(bytes, 2);
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    CHECK_EQ(rd(p[1], buf, 100), 2);
    CHECK(strcmp(buf, "cd") == 0);
    CHECK_EQ(rd(p[1], buf, 100), 2);
    CHECK(strcmp(buf, "ef") == 0);
    closepipe(p);
}

/* A block full of small writes read back one by one, with partial reads,
 * peeks and a byte-stream read part-way in between: the coalescing block's
 * cursor (sd_arrive.c) must keep every boundary where it was, wherever the
 * last lookup left it. */
static void test_cursor(void)
{
    int p[2];
    char w[8], buf[80];
    enum { N = 700 };
    if (mkpipe(p))
        return;
    for (int i = 0; i < N; i++) { /* lengths 1..7: content names the write */
        int len = 1 + i % 7;
        memset(w, 'a' + i % 26, (size_t)len);
        w[len] = '\0';
        wr(p[0], w);
    }
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    /* Non-blocking: a boundary lost shows as a short or failed read, not a
     * read that waits for ever. */
    CHECK_EQ(strm_fcntl(p[1], F_SETFL, strm_fcntl(p[1], F_GETFL) | O_NONBLOCK), 0);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int len = 1 + i % 7, got = 0, nread = -1;
        if (i % 5 == 0) { /* I_NREAD and I_PEEK see this write alone */
            char pd[16];
            struct strpeek pk = {.databuf = {.maxlen = sizeof(pd), .buf = pd}};
            bad += strm_ioctl(p[1], I_NREAD, &nread) < 1 || nread != len;
            bad += strm_ioctl(p[1], I_PEEK, &pk) != 1 || pk.databuf.len != len;
        }
        if (i % 3 == 0 && len > 1) { /* part, then the rest of the same write */
            got = rd(p[1], buf, 1);
            got += rd(p[1], buf + 1, 64);
        } else {
            got = rd(p[1], buf, 64);
        }
        bad += got != len;
        for (int k = 0; k < got && k < len; k++)
            bad += buf[k] != 'a' + i % 26;
        if (i == N / 2) { /* byte stream part-way: 2 bytes into the next write */
            CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RNORM), 0);
            int nl = 1 + (i + 1) % 7;
            CHECK_EQ(rd(p[1], buf, nl < 2 ? nl : 2), nl < 2 ? nl : 2);
            CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
            if (nl > 2)
                CHECK_EQ(rd(p[1], buf, 64), nl - 2);
            i++; /* that write is read */
        }
    }
    CHECK_EQ(bad, 0);
    int nread = -1;
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &nread), 0);
    closepipe(p);
}

static void test_getmsg(void)
{
    int p[2];
    char cbuf[32], dbuf[32];
    if (mkpipe(p))
        return;
    wr(p[0], "x");
    struct strbuf c = {.len = 1, .buf = "C"}, d = {.len = 1, .buf = "d"};
    CHECK_EQ(putmsg(p[0], &c, &d, 0), 0);
    wr(p[0], "yyyy");
    wr(p[0], "zz");
    struct strbuf dc = {.len = 1, .buf = "B"};
    CHECK_EQ(putpmsg(p[0], NULL, &dc, 1, MSG_BAND), 0); /* band 1 overtakes band 0 */

    struct strbuf gc = {.maxlen = sizeof(cbuf), .buf = cbuf}, gd = {.maxlen = sizeof(dbuf), .buf = dbuf};
    int band = 0, flags = MSG_ANY;
    CHECK_EQ(getpmsg(p[1], &gc, &gd, &band, &flags), 0);
    CHECK_EQ(band, 1);
    CHECK(gd.len == 1 && dbuf[0] == 'B');
    flags = 0;
    CHECK_EQ(getmsg(p[1], &gc, &gd, &flags), 0);
    CHECK_EQ(gc.len, -1);
    CHECK(gd.len == 1 && dbuf[0] == 'x');
    CHECK_EQ(getmsg(p[1], &gc, &gd, &flags), 0);
    CHECK(gc.len == 1 && cbuf[0] == 'C');
    CHECK(gd.len == 1 && dbuf[0] == 'd');
    /* MOREDATA: the rest is the same message, not the next write */
    struct strbuf small = {.maxlen = 2, .buf = dbuf};
    CHECK_EQ(getmsg(p[1], NULL, &small, &flags), MOREDATA);
    CHECK(small.len == 2 && memcmp(dbuf, "yy", 2) == 0);
    CHECK_EQ(getmsg(p[1], NULL, &gd, &flags), 0);
    CHECK(gd.len == 2 && memcmp(dbuf, "yy", 2) == 0);
    CHECK_EQ(getmsg(p[1], NULL, &gd, &flags), 0);
    CHECK(gd.len == 2 && memcmp(dbuf, "zz", 2) == 0);
    closepipe(p);
}

static void test_zero_flush_sendfd(void)
{
    int p[2];
    char buf[64];
    if (mkpipe(p))
        return;
    /* a zero-length message (SNDZERO) is never merged: it ends a read */
    CHECK_EQ(strm_ioctl(p[0], I_SWROPT, SNDZERO), 0);
    wr(p[0], "a");
    CHECK_EQ(strm_write(p[0], "", 0), 0);
    wr(p[0], "b");
    CHECK_EQ(rd(p[1], buf, 100), 1);
    CHECK(strcmp(buf, "a") == 0);
    CHECK_EQ(rd(p[1], buf, 100), 0);
    CHECK_EQ(rd(p[1], buf, 100), 1);
    CHECK(strcmp(buf, "b") == 0);

    /* I_FLUSH takes what was deposited */
    wr(p[0], "gone");
    wr(p[0], "too");
    CHECK_EQ(strm_ioctl(p[1], I_FLUSH, FLUSHR), 0);
    int bytes = -1;
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &bytes), 0);

    /* I_SENDFD after writes arrives after them */
    wr(p[0], "abc");
    int efd = dup(0);
    CHECK(efd >= 0);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, efd), 0);
    wr(p[0], "after");
    CHECK_EQ(rd(p[1], buf, 100), 3);
    CHECK(strcmp(buf, "abc") == 0);
    errno = 0;
    CHECK_EQ(strm_read(p[1], buf, 100), -1);
    CHECK_EQ(errno, EBADMSG);
    struct strrecvfd rf;
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    close(rf.fd);
    close(efd);
    CHECK_EQ(rd(p[1], buf, 100), 5);
    CHECK(strcmp(buf, "after") == 0);
    closepipe(p);
}

static void test_readiness_and_flow(void)
{
    int p[2];
    char buf[128];
    if (mkpipe(p))
        return;
    CHECK_EQ(strm_fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(strm_fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    errno = 0;
    CHECK_EQ(strm_read(p[1], buf, 10), -1);
    CHECK_EQ(errno, EAGAIN);
    for (int round = 0; round < 50; round++) {
        wr(p[0], "ping");
        wr(p[0], "pong");
        struct pollfd pf = {.fd = p[1], .events = POLLIN};
        CHECK_EQ(strm_poll(&pf, 1, 0), 1);
        CHECK(pf.revents & POLLIN);
        struct pollfd rawpf = {.fd = p[1], .events = POLLIN}; /* the descriptor itself */
        CHECK_EQ(poll(&rawpf, 1, 0), 1);
        CHECK_EQ(rd(p[1], buf, 100), 8);
        CHECK(strcmp(buf, "pingpong") == 0);
        errno = 0;
        CHECK_EQ(strm_read(p[1], buf, 10), -1);
        CHECK_EQ(errno, EAGAIN);
        rawpf.revents = 0;
        CHECK_EQ(poll(&rawpf, 1, 0), 0); /* token withdrawn: nothing waits */
    }
    /* flow control: a non-blocking writer fills the pipe, then EAGAIN */
    long sent = 0;
    char blk[64];
    memset(blk, 'w', sizeof(blk));
    for (;;) {
        ssize_t r = strm_write(p[0], blk, sizeof(blk));
        if (r < 0) {
            CHECK_EQ(errno, EAGAIN);
            break;
        }
        sent += r;
        if (sent > 4L << 20)
            break;
    }
    CHECK(sent >= 16384 && sent <= 256 * 1024);
    struct pollfd wpf = {.fd = p[0], .events = POLLOUT};
    CHECK_EQ(strm_poll(&wpf, 1, 0), 0);
    long got = 0;
    for (;;) {
        ssize_t r = strm_read(p[1], buf, sizeof(buf));
        if (r <= 0)
            break;
        got += r;
    }
    CHECK_EQ(got, sent);
    wpf.revents = 0;
    CHECK_EQ(strm_poll(&wpf, 1, 0), 1);
    CHECK_EQ(strm_write(p[0], blk, sizeof(blk)), (long)sizeof(blk));
    /* a large write is deposited whole, as one message */
    char *big = malloc(65536);
    memset(big, 'B', 65536);
    CHECK_EQ(strm_read(p[1], buf, sizeof(blk)), (long)sizeof(blk));
    CHECK_EQ(strm_write(p[0], big, 65536), 65536);
    int bytes = -1;
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &bytes), 1);
    CHECK_EQ(bytes, 65536);
    CHECK_EQ(strm_read(p[1], big, 65536), 65536);
    free(big);
    closepipe(p);
}

/* ------------------------------------------------------------------------ */
/* Part 2: threads                                                          */
/* ------------------------------------------------------------------------ */

struct hdr {
    uint16_t wid;
    uint16_t len;
    uint32_t seq;
};

static int tp[2];
static atomic_long bad, nread_total;
static unsigned char *seen; /* [NWRITERS][NMSG] */

static size_t msg_len(unsigned wid, unsigned seq)
{
    return sizeof(struct hdr) + (seq * 7 + wid * 13) % 200;
}

static void *mw_writer(void *arg)
{
    unsigned wid = (unsigned)(uintptr_t)arg;
    unsigned char buf[512];
    for (unsigned i = 0; i < NMSG; i++) {
        struct hdr h = {.wid = (uint16_t)wid, .seq = i, .len = (uint16_t)msg_len(wid, i)};
        memcpy(buf, &h, sizeof(h));
        memset(buf + sizeof(h), (int)(i & 0xff), h.len - sizeof(h));
        if (strm_write(tp[0], buf, h.len) != h.len) {
            atomic_fetch_add(&bad, 1);
            return NULL;
        }
    }
    return NULL;
}

static void *mw_reader(void *arg)
{
    (void)arg;
    unsigned char buf[512];
    long last[NWRITERS];
    for (int i = 0; i < NWRITERS; i++)
        last[i] = -1;
    for (;;) {
        ssize_t r = strm_read(tp[1], buf, sizeof(buf));
        if (r < (ssize_t)sizeof(struct hdr)) {
            atomic_fetch_add(&bad, 1);
            return NULL;
        }
        struct hdr h;
        memcpy(&h, buf, sizeof(h));
        if (h.wid == 0xffff)
            return NULL; /* stop */
        if (h.wid >= NWRITERS || h.seq >= NMSG || (size_t)r != msg_len(h.wid, h.seq) ||
            h.len != r || (long)h.seq <= last[h.wid] ||
            (r > (ssize_t)sizeof(h) && buf[r - 1] != (h.seq & 0xff))) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        last[h.wid] = h.seq;
        if (seen[h.wid * NMSG + h.seq]++)
            atomic_fetch_add(&bad, 1); /* duplicated */
        atomic_fetch_add(&nread_total, 1);
    }
}

static void test_many_writers_readers(void)
{
    if (mkpipe(tp))
        return;
    CHECK_EQ(strm_ioctl(tp[1], I_SRDOPT, RMSGN), 0);
    seen = calloc((size_t)NWRITERS * NMSG, 1);
    atomic_store(&bad, 0);
    atomic_store(&nread_total, 0);
    pthread_t w[NWRITERS], r[NREADERS];
    for (int i = 0; i < NREADERS; i++)
        pthread_create(&r[i], NULL, mw_reader, NULL);
    for (int i = 0; i < NWRITERS; i++)
        pthread_create(&w[i], NULL, mw_writer, (void *)(uintptr_t)i);
    for (int i = 0; i < NWRITERS; i++)
        pthread_join(w[i], NULL);
    struct hdr stop = {.wid = 0xffff, .len = sizeof(stop)};
    for (int i = 0; i < NREADERS; i++)
        CHECK_EQ(strm_write(tp[0], &stop, sizeof(stop)), (long)sizeof(stop));
    for (int i = 0; i < NREADERS; i++)
        pthread_join(r[i], NULL);
    CHECK_EQ(atomic_load(&bad), 0);
    CHECK_EQ(atomic_load(&nread_total), (long)NWRITERS * NMSG);
    long missing = 0;
    for (long i = 0; i < (long)NWRITERS * NMSG; i++)
        missing += seen[i] != 1;
    CHECK_EQ(missing, 0);
    free(seen);
    closepipe(tp);
}

/* One writer, a byte-stream reader with random read sizes: every byte in
 * order (byte k of the stream is k * 31 mod 251). */
static void *bs_writer(void *arg)
{
    (void)arg;
    unsigned char buf[300];
    unsigned long k = 0;
    for (unsigned i = 0; i < NMSG; i++) {
        size_t n = 1 + (i * 37) % 299;
        for (size_t j = 0; j < n; j++, k++)
            buf[j] = (unsigned char)(k * 31 % 251);
        if (strm_write(tp[0], buf, n) != (ssize_t)n) {
            atomic_fetch_add(&bad, 1);
            break;
        }
    }
    strm_close(tp[0]); /* the reader sees end of file after the data */
    return NULL;
}

static void test_byte_stream(void)
{
    if (mkpipe(tp))
        return;
    unsigned long expect = 0;
    for (unsigned i = 0; i < NMSG; i++)
        expect += 1 + (i * 37) % 299;
    atomic_store(&bad, 0);
    pthread_t w;
    pthread_create(&w, NULL, bs_writer, NULL);
    unsigned char buf[4096];
    unsigned long k = 0, wrong = 0;
    unsigned seed = 7;
    for (;;) {
        size_t n = 1 + (size_t)(rand_r(&seed) % (int)sizeof(buf));
        ssize_t r = strm_read(tp[1], buf, n);
        if (r <= 0)
            break;
        for (ssize_t j = 0; j < r; j++, k++)
            wrong += buf[j] != (unsigned char)(k * 31 % 251);
    }
    pthread_join(w, NULL);
    CHECK_EQ(k, expect);
    CHECK_EQ(wrong, 0);
    CHECK_EQ(atomic_load(&bad), 0);
    CHECK_EQ(strm_close(tp[1]), 0);
}

/* write(2) traffic (fixed-size sequenced messages, read whole) while a
 * plumber pushes and pops modules on both ends: the deposit path and the
 * full path take turns under the writer. */
static atomic_int plumb_stop;

static void *pp_writer(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; !atomic_load(&plumb_stop); i++) {
        struct hdr h = {.wid = 0, .seq = i, .len = sizeof(h)};
        if (strm_write(tp[0], &h, sizeof(h)) != (ssize_t)sizeof(h)) {
            atomic_fetch_add(&bad, 1);
            return NULL;
        }
        atomic_store(&nread_total, (long)i + 1); /* sent so far */
    }
    struct hdr stop = {.wid = 0xffff, .len = sizeof(stop)};
    if (strm_write(tp[0], &stop, sizeof(stop)) != (ssize_t)sizeof(stop))
        atomic_fetch_add(&bad, 1);
    return NULL;
}

static void *pp_plumber(void *arg)
{
    (void)arg;
    static const char *mods[] = {"nullmod", "srvmod"};
    for (unsigned i = 0; !atomic_load(&plumb_stop); i++) {
        int fd = tp[i & 1];
        if (strm_ioctl(fd, I_PUSH, mods[(i >> 1) & 1]) != 0 || strm_ioctl(fd, I_POP, 0) != 0)
            atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

static void test_pushpop_switch(void)
{
    if (mkpipe(tp))
        return;
    CHECK_EQ(strm_ioctl(tp[1], I_SRDOPT, RMSGN), 0);
    atomic_store(&bad, 0);
    atomic_store(&plumb_stop, 0);
    pthread_t w, pl;
    pthread_create(&w, NULL, pp_writer, NULL);
    pthread_create(&pl, NULL, pp_plumber, NULL);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t next = 0;
    long wrong = 0;
    for (;;) {
        struct hdr h;
        ssize_t r = strm_read(tp[1], &h, sizeof(h));
        if (r != (ssize_t)sizeof(h)) {
            wrong++;
            break;
        }
        if (h.wid == 0xffff)
            break;
        wrong += h.seq != next;
        next = h.seq + 1;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms > PLUMB_MS)
            atomic_store(&plumb_stop, 1);
    }
    pthread_join(w, NULL);
    pthread_join(pl, NULL);
    CHECK_EQ(wrong, 0);
    CHECK_EQ((long)next, atomic_load(&nread_total));
    CHECK(next > 0);
    CHECK_EQ(atomic_load(&bad), 0);
    closepipe(tp);
}

/* FIONREAD counts the data bytes of every message at the head: coalesced
 * writes, a part-read one, putmsg's data (not its control part), a
 * zero-length message (0); a bad pointer is EFAULT and changes nothing. */
static void test_fionread(void)
{
    int p[2], n = -1;
    char buf[64];
    if (mkpipe(p))
        return;
    CHECK_EQ(strm_ioctl(p[1], FIONREAD, &n), 0);
    CHECK_EQ(n, 0);
    wr(p[0], "a");
    wr(p[0], "bb");
    wr(p[0], "ccc");
    struct strbuf c = {.len = 3, .buf = "hdr"}, d = {.len = 5, .buf = "12345"};
    CHECK_EQ(putmsg(p[0], &c, &d, 0), 0);
    CHECK_EQ(strm_write(p[0], "", 0), 0); /* no SNDZERO: nothing sent */
    CHECK_EQ(strm_ioctl(p[0], I_SWROPT, SNDZERO), 0);
    CHECK_EQ(strm_write(p[0], "", 0), 0); /* a zero-length message: 0 bytes */
    CHECK_EQ(strm_ioctl(p[1], FIONREAD, &n), 0);
    CHECK_EQ(n, 11);
    errno = 0;
    CHECK_EQ(strm_ioctl(p[1], FIONREAD, (int *)8), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &n), 5); /* nothing consumed */
    CHECK_EQ(rd(p[1], buf, 4), 4);               /* "abbc" */
    CHECK_EQ(strm_ioctl(p[1], FIONREAD, &n), 0);
    CHECK_EQ(n, 7);
    CHECK_EQ(rd(p[1], buf, 63), 2); /* "cc", up to the protocol message */
    CHECK_EQ(strm_ioctl(p[1], FIONREAD, &n), 0);
    CHECK_EQ(n, 5);
    char cb[8], db[8];
    struct strbuf rc = {.maxlen = sizeof(cb), .buf = cb}, rdb = {.maxlen = sizeof(db), .buf = db};
    int flags = 0;
    CHECK_EQ(getmsg(p[1], &rc, &rdb, &flags), 0);
    CHECK_EQ(strm_ioctl(p[1], FIONREAD, &n), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &n), 1); /* the zero-length message is still there */
    CHECK_EQ(rd(p[1], buf, 63), 0);
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &n), 0);
    closepipe(p);
}

int main(void)
{
    test_boundaries();
    test_cursor();
    test_fionread();
    test_getmsg();
    test_zero_flush_sendfd();
    test_readiness_and_flow();
    CHECK_NO_BLOCKS();
    test_many_writers_readers();
    test_byte_stream();
    test_pushpop_switch();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
