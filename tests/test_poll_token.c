/* SPDX-License-Identifier: MIT */
/*
 * test_poll_token.c -- the readiness of a stream descriptor, as poll(2) and
 * epoll(7) see it with no library call (docs/STREAMHEAD.md, "Readiness";
 * src/head/sd_ready.c ust_sd_rready, src/head/sd_poll.c
 * ust_sd_wready_after_write).  For each of /dev/udp, /dev/ticlts,
 * /dev/rawip, /dev/ticots, /dev/ticotsord, /dev/tcp (through libxnet:
 * t_sndudata/t_rcvudata, t_snd/t_rcv), a strm_pipe, the FIFO
 * /dev/streams/fifo/0 and a named FIFO (a mkfifo(3) node), with blocking
 * descriptors (a FIFO's two descriptors are one stream):
 *   T.1  poll(2) with timeout 0 reports POLLIN exactly while something is
 *        queued: after each of N messages is read, not after the last
 *        (udp, tcp, rawip: POLLIN after a read within 20 ms -- the lazy
 *        token's bound, docs/STREAMHEAD.md "Channel readers" -- and never
 *        after the last);
 *   T.2  the same after I_FLUSH FLUSHR of N queued messages;
 *   T.3  a level-triggered epoll set on the descriptor agrees with T.1;
 *   T.4  an edge-triggered epoll loop that reads what it is woken for is
 *        woken once per burst and then sleeps (counted), and a
 *        level-triggered one does not spin after the last read;
 *   T.5  POLLOUT follows flow control (pipe, ticots): blocking writes until
 *        I_CANPUT says band 0 is full -> no POLLOUT; the reader drains it ->
 *        POLLOUT again.  (Every provider, non-blocking and edge-triggered
 *        writers: test_poll_token2.c.)
 * Every wait has a deadline.
 */
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "poll_token_util.h"

#define N 4

/* T.1, T.3 */
static void t_read_follows(struct pair *p)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN}, out;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p->rcv, &ev), 0);
    CHECK_EQ(kpoll(p->rcv), POLLOUT);
    CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
    for (int i = 0; i < N; i++)
        send_one(p, i);
    if (arrive(p, N)) {
        for (int i = 0; i < N; i++) {
            /* over udp, tcp and rawip a blocking read that leaves data may
             * owe its token for up to ~2 ms (docs/STREAMHEAD.md, "Channel
             * readers": the lazy token); everywhere else it is exact */
            int late = pt_inet(p) && i > 0 ? 20 : 0;
            struct pollfd in = {p->rcv, POLLIN, 0};
            (void)poll(&in, 1, late);
            CHECK_EQ(kpoll(p->rcv), POLLIN | POLLOUT);
            CHECK_EQ(epoll_wait(ep, &out, 1, late), 1);
            recv_one(p, i);
        }
        if (!CHECK_EQ(kpoll(p->rcv), POLLOUT))
            fprintf(stderr, "  %s: POLLIN after the last message was read\n", p->name);
        CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
    }
    close(ep);
}

/* T.2 */
static void t_flush(struct pair *p)
{
    for (int i = 0; i < N; i++)
        send_one(p, i);
    if (arrive(p, N)) {
        CHECK_EQ(kpoll(p->rcv), POLLIN | POLLOUT);
        CHECK_EQ(strm_ioctl(p->rcv, I_FLUSH, FLUSHR), 0);
        CHECK_EQ(queued(p), 0);
        CHECK_EQ(kpoll(p->rcv), POLLOUT);
    }
}

/* T.4: wake-ups of an event loop over 3 bursts, 150 ms of quiet after each. */
static void t_loop(struct pair *p, int et)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN | (et ? EPOLLET : 0)}, out;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p->rcv, &ev), 0);
    int wakes = 0, got = 0;
    for (int burst = 0; burst < 3; burst++) {
        for (int i = 0; i < N; i++)
            send_one(p, got + i);
        long long end = now_ms() + 150;
        for (long long left; (left = end - now_ms()) > 0;) {
            if (epoll_wait(ep, &out, 1, (int)left) != 1)
                continue;
            wakes++;
            /* Level-triggered: take what is queued now; the next wait reports
             * the rest.  Edge-triggered: take until nothing is left, as
             * epoll(7) requires of any edge-triggered descriptor; a message
             * that arrives after the queue ran dry is a new edge. */
            do {
                int q = queued(p);
                int n = strcmp(p->name, "/dev/tcp") == 0 ? q / 8 : q;
                if (n <= 0)
                    break;
                while (n-- > 0)
                    recv_one(p, got++);
            } while (et);
        }
    }
    CHECK_EQ(got, 3 * N);
    /* once per burst, a few more if a burst arrived in parts; a spinning
     * loop wakes thousands of times in 450 ms */
    if (!CHECK(wakes >= 3 && wakes <= 3 * N))
        fprintf(stderr, "  %s %s: %d wake-ups\n", p->name, et ? "ET" : "LT", wakes);
    close(ep);
}

/* T.5 */
static void t_pollout(struct pair *p)
{
    int sent = 0;
    CHECK_EQ(kpoll(p->snd), POLLOUT);
    while (strm_ioctl(p->snd, I_CANPUT, 0) == 1 && sent < 100000)
        send_one(p, sent++);
    CHECK(sent < 100000);
    if (!CHECK_EQ(kpoll(p->snd), 0))
        fprintf(stderr, "  %s: POLLOUT with band 0 full after %d writes\n", p->name, sent);
    long long end = now_ms() + 2000;
    for (int i = 0; i < sent && now_ms() < end; i++)
        recv_one(p, i);
    end = now_ms() + 2000;
    while (!(kpoll(p->snd) & POLLOUT) && now_ms() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ(kpoll(p->snd), POLLOUT);
}

int main(void)
{
    char dir[] = "/tmp/ust_ptokXXXXXX", fifo[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof(fifo), "%s/f", dir);
    CHECK_EQ(mkfifo(fifo, 0600), 0);
    struct pair pairs[] = {
        PAIR("/dev/udp", K_DGRAM),     PAIR("/dev/ticlts", K_DGRAM),
        PAIR("/dev/rawip", K_DGRAM),   PAIR("/dev/ticots", K_CONN),
        PAIR("/dev/ticotsord", K_CONN), PAIR("/dev/tcp", K_CONN),
        PAIR("pipe", K_PIPE),          PAIR("/dev/streams/fifo/0", K_FIFO),
        PAIR(fifo, K_FIFO),
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        struct pair *p = &pairs[i];
        if (pair_open(p) != 0)
            continue;
        t_read_follows(p);
        t_flush(p);
        t_loop(p, 0);
        t_loop(p, 1);
        if (strcmp(p->name, "/dev/ticots") == 0 || p->kind == K_PIPE)
            t_pollout(p);
        pair_close(p);
    }
    unlink(fifo);
    rmdir(dir);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
