/* SPDX-License-Identifier: MIT */
/*
 * test_fifo.c -- STREAMS FIFOs inside one process (src/head/sd_fifo.c;
 * docs/STREAMHEAD.md, "FIFOs"), against fifo(7), open(2), read(2),
 * write(2), poll(2) and streamio(7I):
 *   F.1  boundaries: putmsg/getmsg, read in RMSGD and RNORM; bands
 *   F.2  I_ISASTREAM says I_FIFO; modules pushed see messages go round
 *        (nullmod, srvmod), I_FIND/I_LIST/I_LOOK
 *   F.3  end of file when the last writer closes; reads block again once a
 *        writer opens (not sticky)
 *   F.4  EPIPE (+ SIGPIPE, SNDPIPE) with no reader
 *   F.5  open rules: O_RDONLY|O_NONBLOCK at once, O_WRONLY|O_NONBLOCK ENXIO,
 *        blocking O_WRONLY released by a reader's open in another thread,
 *        blocking O_RDONLY released by a writer's, O_RDWR never blocks,
 *        O_ACCMODE EINVAL, a clone open
 *   F.6  counts across open, F_DUPFD, I_RECVFD, strm_close, close(2)
 *   F.7  poll: POLLIN, POLLOUT, POLLHUP after a writer has gone, POLLERR
 *        with no reader
 *   F.8  I_FLUSH FLUSHR, FLUSHW, FLUSHRW (with a module)
 *   F.9  the keyed API: same key same stream, other keys other streams,
 *        freed (data lost) after the last close
 *   F.10 several writers and readers in threads: every message once, in
 *        order per writer; no block outstanding
 *   F.11 the open that releases the other side's blocked open returns even
 *        when that side is done and gone before it looks (open(2): a reader
 *        that finds a writer open does not wait, and the reverse): a writer
 *        blocked in its open, released by a reader's, writes and closes at
 *        once -- the reader's open returns and reads what came; a reader
 *        released by a writer's open closes at once -- the writer's returns
 *        (NMEET rounds each way, a watchdog for a hang)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

#if defined(__SANITIZE_THREAD__)
#define NSTRESS 3000
#define NMEET 500
#else
#define NSTRESS 20000
#define NMEET 4000
#endif

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int counts_are(int fd, int r, int w)
{
    int rr = -1, ww = -1;
    if (ust_fifo_counts(fd, &rr, &ww) != 0)
        return 0;
    if (rr != r || ww != w)
        fprintf(stderr, "counts %d/%d, want %d/%d\n", rr, ww, r, w);
    return rr == r && ww == w;
}

/* F.1 */
static void test_boundaries(void)
{
    int fd = strm_open("/dev/streams/clone/fifo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_ISASTREAM), I_FIFO);
    char ctl[8] = "ctl", buf[64];
    struct strbuf c = {.len = 3, .buf = ctl}, d = {.len = 5, .buf = "hello"};
    CHECK_EQ(putmsg(fd, &c, &d, 0), 0);
    d.buf = "world!";
    d.len = 6;
    CHECK_EQ(putmsg(fd, NULL, &d, 0), 0);
    struct strbuf rc = {.maxlen = sizeof(ctl), .buf = ctl}, rd = {.maxlen = 64, .buf = buf};
    int flags = 0;
    CHECK_EQ(getmsg(fd, &rc, &rd, &flags), 0);
    CHECK_EQ(rc.len, 3);
    CHECK_EQ(rd.len, 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    flags = 0;
    CHECK_EQ(getmsg(fd, &rc, &rd, &flags), 0);
    CHECK_EQ(rc.len, -1);
    CHECK_EQ(rd.len, 6);
    /* RMSGD: one message per read, the rest discarded */
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RMSGD), 0);
    CHECK_EQ(strm_write(fd, "abcdef", 6), 6);
    CHECK_EQ(strm_write(fd, "xyz", 3), 3);
    CHECK_EQ(strm_read(fd, buf, 2), 2);
    CHECK_EQ(strm_read(fd, buf, 64), 3);
    CHECK(memcmp(buf, "xyz", 3) == 0);
    /* RNORM: a byte stream across writes */
    CHECK_EQ(strm_ioctl(fd, I_SRDOPT, RNORM), 0);
    CHECK_EQ(strm_write(fd, "abc", 3), 3);
    CHECK_EQ(strm_write(fd, "def", 3), 3);
    CHECK_EQ(strm_read(fd, buf, 64), 6);
    CHECK(memcmp(buf, "abcdef", 6) == 0);
    /* bands: band 2 overtakes band 0 */
    d.buf = "b0";
    d.len = 2;
    CHECK_EQ(putpmsg(fd, NULL, &d, 0, MSG_BAND), 0);
    d.buf = "b2";
    CHECK_EQ(putpmsg(fd, NULL, &d, 2, MSG_BAND), 0);
    int band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fd, NULL, &rd, &band, &flags), 0);
    CHECK_EQ(band, 2);
    CHECK(memcmp(buf, "b2", 2) == 0);
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fd, NULL, &rd, &band, &flags), 0);
    CHECK_EQ(band, 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* F.2 */
static void test_modules(void)
{
    int fd = strm_open("/dev/streams/clone/fifo", O_RDWR);
    char buf[64];
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "nullmod"), 1);
    CHECK_EQ(strm_ioctl(fd, I_LIST, NULL), 2); /* no driver */
    CHECK_EQ(strm_ioctl(fd, I_LOOK, buf), 0);
    CHECK(strcmp(buf, "srvmod") == 0);
    for (int i = 0; i < 100; i++) {
        char m[16];
        int n = snprintf(m, sizeof(m), "m%d", i);
        struct strbuf d = {.len = n, .buf = m};
        CHECK_EQ(putmsg(fd, NULL, &d, 0), 0);
    }
    for (int i = 0; i < 100; i++) {
        char m[16];
        int n = snprintf(m, sizeof(m), "m%d", i), flags = 0;
        struct strbuf rd = {.maxlen = 64, .buf = buf};
        CHECK_EQ(getmsg(fd, NULL, &rd, &flags), 0);
        CHECK(rd.len == n && memcmp(buf, m, (size_t)n) == 0);
    }
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    CHECK_EQ(strm_write(fd, "x", 1), 1);
    CHECK_EQ(strm_read(fd, buf, 64), 1);
    CHECK_EQ(strm_close(fd), 0);
}

/* F.3 */
static atomic_int reader_got;
static void *blocking_reader(void *arg)
{
    char buf[16];
    atomic_store(&reader_got, (int)strm_read(*(int *)arg, buf, sizeof(buf)));
    return NULL;
}

static void test_eof(void)
{
    int r = ust_fifo_open_key(7, 3, O_RDONLY | O_NONBLOCK, NULL);
    CHECK(r >= 0);
    char buf[16];
    CHECK_EQ(strm_read(r, buf, 16), 0); /* no writer: end of file */
    CHECK_EQ(strm_fcntl(r, F_SETFL, 0), 0); /* reads block from now */
    int w = ust_fifo_open_key(7, 3, O_WRONLY, NULL);
    CHECK(w >= 0);
    CHECK(counts_are(r, 1, 1));
    CHECK_EQ(strm_write(w, "abc", 3), 3);
    CHECK_EQ(strm_close(w), 0);
    CHECK_EQ(strm_read(r, buf, 16), 3); /* what was written, then */
    CHECK_EQ(strm_read(r, buf, 16), 0); /* end of file */
    int flags = 0;
    struct strbuf rd = {.maxlen = 16, .buf = buf};
    CHECK_EQ(getmsg(r, NULL, &rd, &flags), 0);
    CHECK_EQ(rd.len, 0);
    /* a writer again: a read blocks until it writes */
    w = ust_fifo_open_key(7, 3, O_WRONLY, NULL);
    CHECK(w >= 0);
    pthread_t t;
    atomic_store(&reader_got, -2);
    pthread_create(&t, NULL, blocking_reader, &r);
    sleep_ms(100);
    CHECK_EQ(atomic_load(&reader_got), -2);
    CHECK_EQ(strm_write(w, "z", 1), 1);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&reader_got), 1);
    /* a blocked reader is released by the last writer's close */
    atomic_store(&reader_got, -2);
    pthread_create(&t, NULL, blocking_reader, &r);
    sleep_ms(100);
    CHECK_EQ(atomic_load(&reader_got), -2);
    CHECK_EQ(strm_close(w), 0);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&reader_got), 0);
    CHECK_EQ(strm_close(r), 0);
}

/* F.4 */
static volatile sig_atomic_t sigpipes;
static void on_sigpipe(int s)
{
    (void)s;
    sigpipes++;
}

static void test_epipe(void)
{
    int rw = ust_fifo_open_key(7, 4, O_RDWR, NULL);
    int w = ust_fifo_open_key(7, 4, O_WRONLY, NULL); /* a reader is there: no wait */
    CHECK(rw >= 0 && w >= 0);
    CHECK(counts_are(w, 1, 2));
    CHECK_EQ(strm_close(rw), 0);
    CHECK(counts_are(w, 0, 1));
    signal(SIGPIPE, on_sigpipe);
    sigpipes = 0;
    errno = 0;
    CHECK_EQ(strm_write(w, "a", 1), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(sigpipes, 1);
    struct strbuf d = {.len = 1, .buf = "a"};
    CHECK_EQ(putmsg(w, NULL, &d, 0), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(sigpipes, 2);
    signal(SIGPIPE, SIG_IGN);
    CHECK_EQ(strm_close(w), 0);
}

/* F.5 */
struct opener {
    uint64_t ino;
    int oflag;
    atomic_int fd; /* -2 while blocked */
    int err;
};

static void *open_thread(void *arg)
{
    struct opener *o = arg;
    int fd = ust_fifo_open_key(7, o->ino, o->oflag, NULL);
    o->err = errno;
    atomic_store(&o->fd, fd);
    return NULL;
}

static void test_open_rules(void)
{
    CHECK_EQ(ust_fifo_open_key(7, 5, O_WRONLY | O_NONBLOCK, NULL), -1);
    CHECK_EQ(errno, ENXIO);
    CHECK_EQ(ust_fifo_open_key(7, 5, O_ACCMODE, NULL), -1);
    CHECK_EQ(errno, EINVAL);
    int r = ust_fifo_open_key(7, 5, O_RDONLY | O_NONBLOCK, NULL);
    CHECK(r >= 0);
    int w = ust_fifo_open_key(7, 5, O_WRONLY | O_NONBLOCK, NULL); /* a reader now */
    CHECK(w >= 0);
    CHECK(counts_are(r, 1, 1));
    CHECK_EQ(strm_fcntl(w, F_GETFL) & O_ACCMODE, O_WRONLY);
    CHECK_EQ(strm_close(w), 0);
    CHECK_EQ(strm_close(r), 0);

    /* a blocking O_WRONLY waits for a reader's open in another thread */
    struct opener o = {.ino = 6, .oflag = O_WRONLY};
    atomic_store(&o.fd, -2);
    pthread_t t;
    pthread_create(&t, NULL, open_thread, &o);
    sleep_ms(150);
    CHECK_EQ(atomic_load(&o.fd), -2);
    r = ust_fifo_open_key(7, 6, O_RDONLY, NULL); /* a writer is counted: no wait */
    CHECK(r >= 0);
    pthread_join(t, NULL);
    CHECK(atomic_load(&o.fd) >= 0);
    CHECK(counts_are(r, 1, 1));
    CHECK_EQ(strm_write(atomic_load(&o.fd), "hi", 2), 2);
    char buf[8];
    CHECK_EQ(strm_read(r, buf, 8), 2);
    CHECK_EQ(strm_close(atomic_load(&o.fd)), 0);
    CHECK_EQ(strm_close(r), 0);

    /* a blocking O_RDONLY waits for a writer; O_RDWR never waits */
    struct opener o2 = {.ino = 8, .oflag = O_RDONLY};
    atomic_store(&o2.fd, -2);
    pthread_create(&t, NULL, open_thread, &o2);
    sleep_ms(150);
    CHECK_EQ(atomic_load(&o2.fd), -2);
    int rw = ust_fifo_open_key(7, 8, O_RDWR, NULL);
    CHECK(rw >= 0);
    pthread_join(t, NULL);
    CHECK(atomic_load(&o2.fd) >= 0);
    CHECK(counts_are(rw, 2, 1));
    CHECK_EQ(strm_close(atomic_load(&o2.fd)), 0);
    CHECK_EQ(strm_close(rw), 0);

    /* clone opens never wait: O_RDONLY at once, O_WRONLY ENXIO */
    r = strm_open("/dev/streams/clone/fifo", O_RDONLY);
    CHECK(r >= 0);
    CHECK(counts_are(r, 1, 0));
    CHECK_EQ(strm_open("/dev/streams/clone/fifo", O_WRONLY), -1);
    CHECK_EQ(errno, ENXIO);
    CHECK_EQ(strm_close(r), 0);
    /* /dev/streams/fifo and /dev/fifo: one FIFO for the process */
    int a = strm_open("/dev/streams/fifo", O_RDWR), b = strm_open("/dev/fifo", O_RDONLY);
    CHECK(a >= 0 && b >= 0);
    CHECK_EQ(strm_write(a, "s", 1), 1);
    CHECK_EQ(strm_read(b, buf, 8), 1);
    CHECK(counts_are(a, 2, 1));
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(strm_open("/dev/streams/fifo", O_RDWR | O_CREAT | O_EXCL), -1);
    CHECK_EQ(errno, EEXIST);
}

/* F.6 */
static void test_counts(void)
{
    int fds[2];
    int rw = ust_fifo_open_key(7, 9, O_RDWR, NULL);
    int r = ust_fifo_open_key(7, 9, O_RDONLY, NULL);
    CHECK(counts_are(rw, 2, 1));
    int r2 = strm_fcntl(r, F_DUPFD, 0);
    CHECK(r2 >= 0);
    CHECK(counts_are(rw, 3, 1));
    /* I_RECVFD: the received descriptor keeps the mode of the one sent */
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_SENDFD, r2), 0);
    CHECK(counts_are(rw, 3, 1)); /* in flight: not a descriptor */
    struct strrecvfd rf;
    CHECK_EQ(strm_ioctl(fds[1], I_RECVFD, &rf), 0);
    CHECK(counts_are(rw, 4, 1));
    CHECK_EQ(strm_fcntl(rf.fd, F_GETFL) & O_ACCMODE, O_RDONLY);
    CHECK_EQ(strm_close(rf.fd), 0);
    CHECK_EQ(strm_close(r2), 0);
    CHECK(counts_are(rw, 2, 1));
    /* close(2) behind the library's back: uncounted once noticed */
    close(r);
    CHECK_EQ(isastream(r), -1); /* the library looks: the slot is stale */
    CHECK(counts_are(rw, 1, 1));
    CHECK_EQ(ust_fifo_counts(fds[0], NULL, NULL), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
    CHECK_EQ(strm_close(rw), 0);
    CHECK_EQ(ust_fifo_counts(rw, NULL, NULL), -1);
}

/* F.6b: a descriptor's mode set again (strm_open sets the mode the FIFO's
 * open already set) never lets the counts pass through zero: a writer
 * racing it would fail EPIPE beside a reader that is open. */
struct reset_arg {
    int fd;
    atomic_int stop;
};

static void *reset_mode(void *arg)
{
    struct reset_arg *a = arg;
    for (int i = 0; !atomic_load(&a->stop); i++)
        ust_sd_acc_set(a->fd, i % 3 == 2 ? 0 : UST_ACC_NOWRITE); /* same, same, O_RDWR */
    return NULL;
}

static void test_counts_reset(void)
{
    int r = ust_fifo_open_key(7, 10, O_RDONLY | O_NONBLOCK, NULL);
    int w = ust_fifo_open_key(7, 10, O_WRONLY | O_NONBLOCK, NULL);
    CHECK(r >= 0 && w >= 0);
    struct reset_arg a = {.fd = r};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, reset_mode, &a), 0);
    int zero = 0, epipe = 0;
    for (int i = 0; i < 20000; i++) {
        int rd = -1, wr = -1;
        CHECK_EQ(ust_fifo_counts(w, &rd, &wr), 0);
        zero += rd < 1;
        if (strm_write(w, "x", 1) < 0)
            epipe += errno == EPIPE;
        char c;
        (void)strm_read(r, &c, 1);
    }
    atomic_store(&a.stop, 1);
    pthread_join(t, NULL);
    CHECK_EQ(zero, 0);
    CHECK_EQ(epipe, 0);
    /* The same mode again changes nothing; a new one replaces the old. */
    CHECK_EQ(ust_sd_acc_set(r, UST_ACC_NOWRITE), 0);
    CHECK(counts_are(w, 1, 1));
    CHECK_EQ(ust_sd_acc_set(r, 0), 0);
    CHECK(counts_are(w, 1, 2));
    CHECK_EQ(ust_sd_acc_set(r, UST_ACC_NOWRITE), 0);
    CHECK(counts_are(w, 1, 1));
    CHECK_EQ(strm_close(w), 0);
    CHECK_EQ(strm_close(r), 0);
}

/* F.7 */
static short poll1(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    int n = strm_poll(&p, 1, 0);
    CHECK_EQ(n, p.revents != 0);
    return p.revents;
}

static void test_poll(void)
{
    int r = ust_fifo_open_key(7, 10, O_RDONLY | O_NONBLOCK, NULL);
    CHECK_EQ(poll1(r, POLLIN), 0); /* no writer yet: nothing (Linux) */
    int w = ust_fifo_open_key(7, 10, O_WRONLY, NULL);
    CHECK_EQ(poll1(w, POLLOUT), POLLOUT);
    CHECK_EQ(poll1(r, POLLIN), 0);
    CHECK_EQ(strm_write(w, "p", 1), 1);
    CHECK_EQ(poll1(r, POLLIN), POLLIN);
    struct pollfd kp = {.fd = r, .events = POLLIN};
    CHECK_EQ(poll(&kp, 1, 0), 1); /* the kernel's poll sees it too */
    char buf[4];
    CHECK_EQ(strm_read(r, buf, 4), 1);
    CHECK_EQ(strm_close(w), 0);
    CHECK_EQ(poll1(r, POLLIN) & POLLHUP, POLLHUP); /* a writer has been and gone */
    CHECK_EQ(poll(&kp, 1, 0), 1); /* readable for poll(2): a read returns 0 */
    w = ust_fifo_open_key(7, 10, O_WRONLY, NULL);
    CHECK_EQ(poll1(r, POLLIN), 0); /* a writer again: no hang-up */
    CHECK_EQ(strm_close(r), 0);
    CHECK_EQ(poll1(w, POLLOUT) & POLLERR, POLLERR); /* no reader */
    CHECK_EQ(strm_close(w), 0);
}

/* F.8 */
static int nread(int fd)
{
    int n = 0;
    return strm_ioctl(fd, I_NREAD, &n);
}

static void test_flush(void)
{
    int fd = strm_open("/dev/streams/clone/fifo", O_RDWR);
    for (int round = 0; round < 2; round++) {
        static const int how[] = {FLUSHR, FLUSHW, FLUSHRW};
        for (int i = 0; i < 3; i++) {
            CHECK_EQ(strm_write(fd, "a", 1), 1);
            CHECK_EQ(strm_write(fd, "b", 1), 1);
            CHECK_EQ(nread(fd), 2);
            CHECK_EQ(strm_ioctl(fd, I_FLUSH, how[i]), 0);
            CHECK_EQ(nread(fd), 0);
            CHECK_EQ(strm_write(fd, "c", 1), 1); /* works on after a flush */
            CHECK_EQ(nread(fd), 1);
            CHECK_EQ(strm_ioctl(fd, I_FLUSH, FLUSHR), 0);
        }
        CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0); /* round 2: a module */
    }
    CHECK_EQ(strm_close(fd), 0);
}

/* F.9 */
static void test_keys(void)
{
    int a = ust_fifo_open_key(11, 1, O_RDWR, NULL), b = ust_fifo_open_key(11, 1, O_RDWR, NULL);
    int c = ust_fifo_open_key(11, 2, O_RDWR, NULL), d = ust_fifo_open_key(12, 1, O_RDWR, NULL);
    CHECK(a >= 0 && b >= 0 && c >= 0 && d >= 0);
    CHECK_EQ(strm_write(a, "k", 1), 1);
    CHECK_EQ(nread(b), 1); /* same key, same stream */
    CHECK_EQ(nread(c), 0);
    CHECK_EQ(nread(d), 0);
    CHECK(counts_are(a, 2, 2));
    CHECK(counts_are(c, 1, 1));
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0); /* the last close: the FIFO and its data go */
    a = ust_fifo_open_key(11, 1, O_RDWR, NULL);
    CHECK_EQ(nread(a), 0);
    CHECK(counts_are(a, 1, 1));
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(c), 0);
    CHECK_EQ(strm_close(d), 0);
}

/* F.10 */
#define NW 3
#define NR 2
struct stress {
    int wfd[NW], rfd[NR];
    atomic_long got[NW];
    uint32_t next[NR][NW];
    atomic_int bad;
};

struct wargs {
    struct stress *s;
    int id;
};

static void *stress_writer(void *arg)
{
    struct wargs *a = arg;
    for (uint32_t i = 0; i < NSTRESS; i++) {
        uint32_t m[2] = {(uint32_t)a->id, i};
        struct strbuf d = {.len = sizeof(m), .buf = (char *)m};
        if (putmsg(a->s->wfd[a->id], NULL, &d, 0) != 0)
            atomic_fetch_add(&a->s->bad, 1);
    }
    return NULL;
}

static void *stress_reader(void *arg)
{
    struct wargs *a = arg;
    struct stress *s = a->s;
    for (;;) {
        uint32_t m[4];
        int flags = 0;
        struct strbuf d = {.maxlen = sizeof(m), .buf = (char *)m};
        int r = getmsg(s->rfd[a->id], NULL, &d, &flags);
        if (r != 0 || d.len == 0)
            break; /* end of file: every writer closed */
        if (d.len != 8 || m[0] >= NW || m[1] < s->next[a->id][m[0]]) {
            atomic_fetch_add(&s->bad, 1);
            continue;
        }
        s->next[a->id][m[0]] = m[1] + 1; /* in order per writer, as each reader sees it */
        atomic_fetch_add(&s->got[m[0]], 1);
    }
    return NULL;
}

static void test_stress(void)
{
    static struct stress s;
    struct wargs wa[NW], ra[NR];
    pthread_t wt[NW], rt[NR];
    for (int i = 0; i < NR; i++)
        s.rfd[i] = ust_fifo_open_key(13, 1, O_RDONLY | O_NONBLOCK, NULL);
    for (int i = 0; i < NW; i++)
        s.wfd[i] = ust_fifo_open_key(13, 1, O_WRONLY, NULL);
    CHECK_EQ(strm_fcntl(s.rfd[0], F_SETFL, 0), 0); /* blocking I/O from here */
    CHECK(counts_are(s.rfd[0], NR, NW));
    for (int i = 0; i < NR; i++) {
        ra[i] = (struct wargs){&s, i};
        pthread_create(&rt[i], NULL, stress_reader, &ra[i]);
    }
    for (int i = 0; i < NW; i++) {
        wa[i] = (struct wargs){&s, i};
        pthread_create(&wt[i], NULL, stress_writer, &wa[i]);
    }
    for (int i = 0; i < NW; i++) {
        pthread_join(wt[i], NULL);
        CHECK_EQ(strm_close(s.wfd[i]), 0); /* the last one ends the readers */
    }
    for (int i = 0; i < NR; i++)
        pthread_join(rt[i], NULL);
    CHECK_EQ(atomic_load(&s.bad), 0);
    for (int i = 0; i < NW; i++)
        CHECK_EQ(atomic_load(&s.got[i]), NSTRESS);
    for (int i = 0; i < NR; i++)
        CHECK_EQ(strm_close(s.rfd[i]), 0);
}

/* F.11 */
struct meet {
    int oflag;         /* the partner's blocking open */
    atomic_int go;     /* round the partner may start (key (15, round)) */
    atomic_int done;   /* round the partner has finished */
    atomic_int bad;    /* the partner's open or write failed */
    atomic_int stamp;  /* progress, for the watchdog (-1: over) */
};

/* The partner: open (blocks until main's open counts), then at once write
 * one byte and close (a writer) or close (a reader). */
static void *meet_partner(void *arg)
{
    struct meet *m = arg;
    for (int i = 1; i <= NMEET; i++) {
        while (atomic_load(&m->go) < i)
            sched_yield();
        int fd = ust_fifo_open_key(15, (uint64_t)i, m->oflag, NULL);
        if (fd < 0 || (m->oflag == O_WRONLY && strm_write(fd, "m", 1) != 1))
            atomic_fetch_add(&m->bad, 1);
        if (fd >= 0)
            strm_close(fd);
        atomic_store(&m->done, i);
    }
    return NULL;
}

static void *meet_watchdog(void *arg)
{
    struct meet *m = arg;
    for (int last = -1;;) {
        sleep_ms(5000);
        int now = atomic_load(&m->stamp);
        if (now < 0)
            return NULL;
        if (now == last) {
            fprintf(stderr, "F.11: an open hung in round %d of %d (the partner a %s): the other "
                            "side came and went before it looked\n",
                    now % NMEET + 1, NMEET, now < NMEET ? "writer" : "reader");
            _exit(1);
        }
        last = now;
    }
    return NULL;
}

static void test_open_meet(void)
{
    static struct meet ms[2];
    pthread_t wd, t[2];
    ms[0].oflag = O_WRONLY;
    ms[1].oflag = O_RDONLY;
    pthread_create(&wd, NULL, meet_watchdog, &ms[0]);
    pthread_detach(wd);
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, meet_partner, &ms[k]);
    /* The window is between main's open counting itself (which wakes the
     * partner) and its look at the other side: on one CPU, with main at a
     * lower priority than the partners (made before), the woken partner
     * runs at once. */
    cpu_set_t one, all;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    int pinned = sched_getaffinity(0, sizeof(all), &all) == 0 &&
                 sched_setaffinity(0, sizeof(one), &one) == 0;
    int prio = getpriority(PRIO_PROCESS, 0);
    setpriority(PRIO_PROCESS, 0, 19); /* this thread only (Linux: per thread) */
    for (int k = 0; k < 2; k++) {
        struct meet *m = &ms[k];
        if (pinned)
            pthread_setaffinity_np(t[k], sizeof(one), &one);
        for (int i = 1; i <= NMEET; i++) {
            int r, w;
            atomic_store(&m->go, i);
            /* the partner blocked in its open (counted), then ours */
            while (ust_fifo_key_counts(15, (uint64_t)i, &r, &w) == 0 || r + w == 0)
                sched_yield();
            int fd = ust_fifo_open_key(15, (uint64_t)i, k == 0 ? O_RDONLY : O_WRONLY, NULL);
            CHECK(fd >= 0);
            if (k == 0 && fd >= 0) {
                char c = 0;
                CHECK_EQ(strm_read(fd, &c, 1), 1);
                CHECK_EQ(c, 'm');
            }
            while (atomic_load(&m->done) < i)
                sched_yield();
            if (fd >= 0)
                CHECK_EQ(strm_close(fd), 0);
            atomic_store(&ms[0].stamp, k * NMEET + i);
        }
        pthread_join(t[k], NULL);
        CHECK_EQ(atomic_load(&m->bad), 0);
    }
    atomic_store(&ms[0].stamp, -1);
    setpriority(PRIO_PROCESS, 0, prio); /* (fails unprivileged: the test ends anyway) */
    if (pinned)
        sched_setaffinity(0, sizeof(all), &all);
}

int main(void)
{
    alarm(170); /* a lost wake-up hangs: die loudly rather than at the ctest timeout */
    signal(SIGPIPE, SIG_IGN);
    test_boundaries();
    test_modules();
    test_eof();
    test_epipe();
    test_open_rules();
    test_counts();
    test_counts_reset();
    test_poll();
    test_flush();
    test_keys();
    test_stress();
    test_open_meet();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(ust_sd_lost_wakeups(), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
