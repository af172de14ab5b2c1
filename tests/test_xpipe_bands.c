/* SPDX-License-Identifier: MIT */
/*
 * test_xpipe_bands.c -- what a far side can make the receiver of a split
 * pipe hold, all priority bands together (issue 20; docs/SECURITY.md, "What
 * crosses a split pipe"; the cap: sd_xpipe_read.c hold_full).
 *
 *   B.1 the peer (another uid when this runs as root) writes 4 KiB messages
 *       non-blocking, round robin over all 256 bands, until every band
 *       meets EAGAIN (or FLOOD_MS), while the victim reads nothing.  The
 *       victim's head holds at most HOLD_BOUND bytes all bands together and
 *       its RSS grows by less than RSS_BOUND_KB (before the cap: each band
 *       its own high-water mark and a record, up to 128 MiB); the peer met
 *       EAGAIN.  Then the victim reads everything with getpmsg (any band):
 *       each message arrives once, in order within its band, intact; no
 *       message block is left at the end.
 *
 * The case runs in the test's process (the victim) under an alarm; the
 * peer is a fork child, reporting on a kernel pipe how many messages of
 * each band it wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/prctl.h>
#include <sys/stream.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "hostile_util.h"
#include "sthead.h"

#define NBANDS       256
#define MSG_BYTES    4096
#define FLOOD_MS     4000
#define HOLD_BOUND   (2L << 20) /* XP_HOLD_MAX + band 0's most + two records */
#define RSS_BOUND_KB (8 * 1024)
#define VICTIM_S     60

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Message seq of band b: its first 8 bytes say (b, seq), the rest a
 * pattern of both. */
static void fill(unsigned char *p, int b, unsigned seq)
{
    p[0] = (unsigned char)b;
    memcpy(p + 4, &seq, sizeof(seq));
    for (int i = 8; i < MSG_BYTES; i++)
        p[i] = (unsigned char)(i * 31 + b * 7 + seq);
}

static int good(const unsigned char *p, int b, unsigned seq)
{
    unsigned s;
    memcpy(&s, p + 4, sizeof(s));
    if (p[0] != (unsigned char)b || s != seq)
        return 0;
    for (int i = 8; i < MSG_BYTES; i++)
        if (p[i] != (unsigned char)(i * 31 + b * 7 + seq))
            return 0;
    return 1;
}

/* The peer: floods, reports {sent[NBANDS], eagain} on rep, then stays until
 * the victim writes a byte (it must live: what its write queue holds goes
 * into the ring as the victim reads). */
static void peer(int fd, int rep)
{
    static unsigned char msg[MSG_BYTES];
    static long r[NBANDS + 1];
    int full[NBANDS] = {0}, nfull = 0;

    if (hostile_can_switch() && hostile_become() != 0)
        _exit(2);
    if (strm_fcntl(fd, F_SETFL, O_NONBLOCK) != 0)
        _exit(3);
    long long end = now_ms() + FLOOD_MS;
    while (nfull < NBANDS && now_ms() < end) {
        for (int b = 0; b < NBANDS; b++) {
            if (full[b])
                continue;
            fill(msg, b, (unsigned)r[b]);
            struct strbuf d = {.len = MSG_BYTES, .buf = (char *)msg};
            if (putpmsg(fd, NULL, &d, b, MSG_BAND) == 0) {
                r[b]++;
            } else if (errno == EAGAIN) {
                r[NBANDS]++;
                full[b] = 1; /* full once: this band is done */
                nfull++;
            } else {
                _exit(4);
            }
        }
    }
    if (write(rep, r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(5);
    strm_fcntl(fd, F_SETFL, 0);
    char c;
    strm_read(fd, &c, 1);
    _exit(0);
}

/* Bytes the head's read queue holds, all bands and high priority. */
static long head_holds(int fd)
{
    struct stdata *sd = ust_sd_peek(fd);
    if (sd == NULL)
        return -1;
    long total = 0;
    size_t n = 0;
    CHECK_EQ(strqget(sd->sd_rq, QCOUNT, 0, &n), 0);
    total += (long)n;
    for (int b = 1; b <= sd->sd_rq->q_nband; b++) {
        n = 0;
        if (strqget(sd->sd_rq, QCOUNT, (unsigned char)b, &n) == 0)
            total += (long)n;
    }
    return total;
}

static void test_b1(void)
{
    int fds[2], rep[2];
    static long r[NBANDS + 1];
    static unsigned char buf[MSG_BYTES + 16];
    static unsigned next[NBANDS];

    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(pipe(rep), 0);
    long rss0 = hostile_rss_kb();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        strm_close(fds[0]);
        close(rep[0]);
        peer(fds[1], rep[1]);
    }
    CHECK(pid > 0);
    strm_close(fds[1]);
    close(rep[1]);
    struct pollfd p = {rep[0], POLLIN, 0};
    CHECK(poll(&p, 1, FLOOD_MS + 10000) == 1);
    CHECK_EQ(read(rep[0], r, sizeof(r)), (ssize_t)sizeof(r));
    close(rep[0]);
    fk_sleep_ms(200); /* what the victim would take, it has taken */
    long rss1 = hostile_rss_kb(), held = head_holds(fds[0]), total = 0;
    for (int b = 0; b < NBANDS; b++)
        total += r[b];
    printf("B.1: peer wrote %ld messages of %d bytes (%ld EAGAIN); victim holds %ld bytes, "
           "RSS %ld -> %ld KiB\n",
           total, MSG_BYTES, r[NBANDS], held, rss0, rss1);
    CHECK(r[NBANDS] > 0);
    CHECK(held >= 0 && held <= HOLD_BOUND);
    CHECK(rss1 - rss0 < RSS_BOUND_KB * HOSTILE_RSS_SCALE);

    /* Everything, any band: once each, in order within its band. */
    long got = 0, bad = 0;
    long long end = now_ms() + 30000;
    while (got < total && now_ms() < end) {
        struct strbuf d = {.maxlen = sizeof(buf), .buf = (char *)buf};
        int band = 0, flags = MSG_ANY;
        struct pollfd q = {fds[0], POLLIN | POLLRDNORM | POLLRDBAND, 0};
        if (strm_poll(&q, 1, 1000) <= 0)
            continue;
        int rc = getpmsg(fds[0], NULL, &d, &band, &flags);
        if (rc != 0 || band < 0 || band >= NBANDS) {
            bad++;
            break;
        }
        if (d.len != MSG_BYTES || !good(buf, band, next[band]))
            bad++;
        next[band]++;
        got++;
    }
    printf("B.1: read %ld of %ld messages, %ld bad\n", got, total, bad);
    CHECK_EQ(got, total);
    CHECK_EQ(bad, 0);
    for (int b = 0; b < NBANDS; b++)
        if (next[b] != (unsigned)r[b]) {
            CHECK_EQ(next[b], r[b]);
            break;
        }
    CHECK_EQ(strm_write(fds[0], "x", 1), 1); /* the peer may go */
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(strm_close(fds[0]), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    long long t = now_ms();
    alarm(VICTIM_S);
    test_b1();
    alarm(0);
    printf("B.1 in %lld ms\n", now_ms() - t);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
