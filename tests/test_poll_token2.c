/* SPDX-License-Identifier: MIT */
/*
 * test_poll_token2.c -- readiness of a stream descriptor as poll(2) and
 * epoll(7) see it with no library call, continued from test_poll_token.c
 * (docs/STREAMHEAD.md, "Readiness"; src/head/sd_ready.c, src/head/sd_poll.c).
 * Every case asserts the exact revents of poll(2) on the raw descriptor
 * (kpoll), and where the stream says more than the kernel can show
 * (POLLRDBAND, POLLERR) the exact revents of strm_poll too.
 *
 * POLLOUT follows flow control, for /dev/udp, /dev/ticlts, /dev/rawip,
 * /dev/ticots, /dev/ticotsord, /dev/tcp and a pipe (non-blocking writers,
 * as an event loop writes):
 *   W.1  an idle sender shows POLLOUT (and nothing else);
 *   W.2  writes until EAGAIN (t_snd/t_sndudata: TFLOW): no POLLOUT, and it
 *        stays away while nobody reads (a relief that finds the queue full
 *        again is followed by the next EAGAIN: the loop is bounded); udp
 *        and rawip: POLLOUT comes back with nobody reading (below);
 *   W.3  the receiver takes everything: POLLOUT again;
 *   W.4  an edge-triggered epoll writer loop (write until EAGAIN, then
 *        epoll_wait) with a reader thread: every message goes (no stall:
 *        each wait ends within 2 s) and the loop does not spin (at most
 *        one wake-up per message, no long run of wake-ups that find the
 *        stream still full).
 *   For udp and rawip the kernel socket under the provider never refuses
 *   a datagram to the loopback address (it is delivered or dropped at
 *   once), so the provider's queue fills only while the writer outpaces
 *   its service procedure: POLLOUT is the stream's flow control, the
 *   socket counts only through the provider's queue (docs/STREAMHEAD.md).
 *
 * POLLPRI, POLLRDBAND, M_ERROR (a pipe; the test driver hdrv):
 *   P.1  a high-priority message (putmsg RS_HIPRI) alone: strm_poll
 *        POLLPRI, the descriptor POLLIN (its token is a record: a seqpacket
 *        socket has no out-of-band data); taken: gone;
 *   P.2  behind it normal data: taking the high-priority message leaves
 *        POLLIN only; I_FLUSH FLUSHR withdraws both tokens;
 *   P.3  band 1 data (putpmsg; T_EXDATA over ticots): POLLIN, strm_poll
 *        POLLIN|POLLRDBAND; taken: gone;
 *   P.4  M_ERROR read error: POLLIN (strm_poll POLLERR|POLLIN); cleared by
 *        an M_ERROR of 0: withdrawn when nothing else is readable, kept
 *        when a message is queued; a write error alone: POLLOUT, no POLLIN;
 *   P.5  a non-persistent read error (RERRNONPERSIST) reported by getmsg,
 *        by read and by an ioctl: withdrawn with it.
 * Every wait has a deadline.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stropts.h>
#include <sys/epoll.h>

#include "head_tdrv.h"
#include "poll_token_util.h"

#define BIG 16384 /* bytes per message of the W cases */
#define MAXW 20000

static char wbuf[BIG], rbuf[BIG];

/* strm_poll of everything the stream can say, timeout 0. */
static short spoll(int fd)
{
    struct pollfd p = {fd, POLLIN | POLLRDNORM | POLLRDBAND | POLLPRI | POLLOUT | POLLWRNORM, 0};
    return strm_poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static void set_nonblock(int fd, int on)
{
    int fl = strm_fcntl(fd, F_GETFL);
    strm_fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* One non-blocking write of message i: 1 sent, 0 flow controlled, -1 error. */
static int try_send(struct pair *p, int i)
{
    if (send_len(p, i, wbuf, BIG) == 0)
        return 1;
    if ((p->kind == K_PIPE && errno == EAGAIN) || (p->kind != K_PIPE && t_errno == TFLOW))
        return 0;
    fprintf(stderr, "  %s: send t_errno %d errno %d\n", p->name, t_errno, errno);
    return -1;
}

/* Take whatever is queued at rcv (non-blocking): bytes taken. */
static long drain_some(struct pair *p)
{
    long got = 0;
    for (;;) {
        int flags = 0, n;
        if (p->kind == K_PIPE) {
            n = (int)strm_read(p->rcv, rbuf, BIG);
        } else if (p->kind == K_DGRAM) {
            struct t_unitdata ud;
            char ab[128];
            memset(&ud, 0, sizeof(ud));
            ud.addr.buf = ab;
            ud.addr.maxlen = sizeof(ab);
            ud.udata.buf = rbuf;
            ud.udata.maxlen = BIG;
            n = t_rcvudata(p->rcv, &ud, &flags) == 0 ? (int)ud.udata.len : -1;
        } else {
            n = t_rcv(p->rcv, rbuf, BIG, &flags);
        }
        if (n <= 0)
            return got;
        got += n;
    }
}

static int reliable(const struct pair *p)
{
    return p->kind != K_DGRAM || strcmp(p->name, "/dev/ticlts") == 0;
}

/* W.1-W.3 */
static void t_w_fill(struct pair *p)
{
    set_nonblock(p->snd, 1);
    set_nonblock(p->rcv, 1);
    CHECK_EQ(kpoll(p->snd), POLLOUT); /* W.1 */
    long sent = 0;
    int r = 1, rounds = 0, quiet = 0;
    long long end = now_ms() + 10000;
    /* W.2: until EAGAIN; a relief that finds it full again (tcp: the kernel
     * buffers between the two sockets still grow): write again */
    while (now_ms() < end) {
        while (sent < MAXW && (r = try_send(p, (int)sent)) == 1)
            sent++;
        if (r != 0)
            break;
        struct pollfd pf = {p->snd, POLLOUT, 0};
        if (poll(&pf, 1, 100) == 0) {
            quiet = 1; /* stayed unwritable for 100 ms */
            break;
        }
        rounds++;
    }
    if (r == 0 && reliable(p)) {
        CHECK(quiet);
        if (!CHECK_EQ(kpoll(p->snd), 0))
            fprintf(stderr, "  %s: POLLOUT after EAGAIN (%ld sent, %d rounds)\n", p->name, sent,
                    rounds);
    } else if (r == 0) {
        /* udp, rawip: the provider's queue drains into the socket, which
         * takes every datagram to the loopback address: POLLOUT comes back
         * with nobody reading (a sender's T_UDERROR_IND, e.g. ENOBUFS when
         * the loopback backlog overflows, is flushed first) */
        struct pollfd pf = {p->snd, POLLOUT, 0};
        CHECK_EQ(poll(&pf, 1, 2000), 1);
        sleep_ms(100);
        CHECK_EQ(strm_ioctl(p->snd, I_FLUSH, FLUSHR), 0);
        CHECK_EQ(kpoll(p->snd), POLLOUT);
    } else {
        /* udp: the service procedure kept up with the writer */
        CHECK(!reliable(p));
        printf("note %s: %ld datagrams of %d bytes never filled the queue\n", p->name, sent,
               BIG);
    }
    /* W.3 */
    long got = 0;
    end = now_ms() + 5000;
    while (now_ms() < end) {
        got += drain_some(p);
        if (p->kind == K_DGRAM) /* the sender's T_UDERROR_INDs, if any */
            strm_ioctl(p->snd, I_FLUSH, FLUSHR);
        if (kpoll(p->snd) == POLLOUT && (!reliable(p) || got == sent * BIG))
            break;
        sleep_ms(1);
    }
    if (reliable(p))
        CHECK_EQ(got, sent * BIG);
    if (!CHECK_EQ(kpoll(p->snd), POLLOUT))
        fprintf(stderr, "  %s: no POLLOUT after the drain (%ld of %ld)\n", p->name, got,
                sent * BIG);
    set_nonblock(p->snd, 0);
    set_nonblock(p->rcv, 0);
}

struct reader {
    struct pair *p;
    atomic_long got;
    atomic_int stop;
};

static void *reader_main(void *arg)
{
    struct reader *rd = arg;
    while (!atomic_load(&rd->stop)) {
        long n = drain_some(rd->p);
        atomic_fetch_add(&rd->got, n);
        if (n == 0)
            sleep_ms(1);
    }
    return NULL;
}

/* W.4 */
static void t_w_loop(struct pair *p, int total)
{
    set_nonblock(p->snd, 1);
    set_nonblock(p->rcv, 1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLET}, out;
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p->snd, &ev), 0);
    struct reader rd = {p, 0, 0};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, reader_main, &rd), 0);
    int sent = 0, wakes = 0, empty = 0, maxempty = 0, stalls = 0, r = 1;
    long long end = now_ms() + 20000;
    while (sent < total && now_ms() < end) {
        int before = sent;
        while (sent < total && (r = try_send(p, sent)) == 1)
            sent++;
        if (r < 0)
            break;
        if (wakes > 0) { /* a wake-up that found the stream still full */
            empty = sent == before ? empty + 1 : 0;
            if (empty > maxempty)
                maxempty = empty;
        }
        if (sent == total)
            break;
        if (epoll_wait(ep, &out, 1, 2000) != 1) {
            stalls++;
            break;
        }
        wakes++;
    }
    if (!CHECK_EQ(sent, total) || !CHECK_EQ(stalls, 0))
        fprintf(stderr, "  %s: ET writer: %d of %d sent, stalled\n", p->name, sent, total);
    /* A spinning loop wakes thousands of times without progress.  A few
     * wake-ups that find it full again are the provider's: tcp's and udp's
     * write service take the queue off (getq, which back-enables the head
     * at low water) before the socket refuses the rest and it is put back
     * (putbq): a POLLOUT edge per socket EPOLLOUT, which needs the reader's
     * progress (docs/STREAMHEAD.md, "Readiness"). */
    if (!CHECK(maxempty <= 20 && wakes <= total))
        fprintf(stderr, "  %s: ET writer: %d wake-ups in a row found it full (%d wakes)\n",
                p->name, maxempty, wakes);
    if (reliable(p)) {
        long long e2 = now_ms() + 5000;
        while (atomic_load(&rd.got) < (long)total * BIG && now_ms() < e2)
            sleep_ms(1);
        CHECK_EQ(atomic_load(&rd.got), (long)total * BIG);
    } else {
        sleep_ms(50);
    }
    atomic_store(&rd.stop, 1);
    pthread_join(th, NULL);
    drain_some(p);
    close(ep);
    set_nonblock(p->snd, 0);
    set_nonblock(p->rcv, 0);
}

/* ---- P: priority, bands, errors ---------------------------------------- */

static int put_hipri(int fd, const char *s)
{
    struct strbuf c = {0, (int)strlen(s), (char *)s};
    return putmsg(fd, &c, NULL, RS_HIPRI);
}

/* getmsg of what flags asks for; returns its flags, -1 on error. */
static int get_any(int fd, int flags)
{
    char cb[64], db[64];
    struct strbuf c = {sizeof(cb), 0, cb}, d = {sizeof(db), 0, db};
    int band = 0;
    if (getpmsg(fd, &c, &d, &band, &flags) < 0)
        return -1;
    return flags;
}

/* P.1, P.2 */
static void t_p_hipri(void)
{
    int fd[2];
    CHECK_EQ(strm_pipe(fd), 0);
    CHECK_EQ(put_hipri(fd[0], "pc"), 0);
    CHECK_EQ(kpoll(fd[1]), POLLIN | POLLOUT); /* POLLPRI: strm_poll only */
    CHECK_EQ(spoll(fd[1]), POLLPRI | POLLOUT | POLLWRNORM);
    CHECK_EQ(get_any(fd[1], MSG_HIPRI), MSG_HIPRI);
    CHECK_EQ(kpoll(fd[1]), POLLOUT);
    CHECK_EQ(spoll(fd[1]), POLLOUT | POLLWRNORM);
    /* P.2 */
    CHECK_EQ(strm_write(fd[0], "d", 1), 1);
    CHECK_EQ(put_hipri(fd[0], "pc"), 0);
    CHECK_EQ(kpoll(fd[1]), POLLIN | POLLOUT); /* POLLPRI: strm_poll only */
    CHECK_EQ(spoll(fd[1]), POLLIN | POLLRDNORM | POLLPRI | POLLOUT | POLLWRNORM);
    CHECK_EQ(get_any(fd[1], MSG_ANY), MSG_HIPRI);
    CHECK_EQ(kpoll(fd[1]), POLLIN | POLLOUT);
    CHECK_EQ(spoll(fd[1]), POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
    CHECK_EQ(put_hipri(fd[0], "pc"), 0);
    CHECK_EQ(kpoll(fd[1]), POLLIN | POLLOUT); /* POLLPRI: strm_poll only */
    CHECK_EQ(strm_ioctl(fd[1], I_FLUSH, FLUSHR), 0);
    CHECK_EQ(kpoll(fd[1]), POLLOUT);
    CHECK_EQ(spoll(fd[1]), POLLOUT | POLLWRNORM);
    strm_close(fd[0]);
    strm_close(fd[1]);
}

/* P.3 */
static void t_p_band(void)
{
    int fd[2];
    CHECK_EQ(strm_pipe(fd), 0);
    struct strbuf d = {0, 1, "b"};
    CHECK_EQ(putpmsg(fd[0], NULL, &d, 1, MSG_BAND), 0);
    CHECK_EQ(kpoll(fd[1]), POLLIN | POLLOUT);
    CHECK_EQ(spoll(fd[1]), POLLIN | POLLRDBAND | POLLOUT | POLLWRNORM);
    CHECK_EQ(strm_write(fd[0], "n", 1), 1);
    CHECK_EQ(spoll(fd[1]), POLLIN | POLLRDNORM | POLLRDBAND | POLLOUT | POLLWRNORM);
    CHECK_EQ(get_any(fd[1], MSG_ANY), MSG_BAND); /* band 1 first */
    CHECK_EQ(kpoll(fd[1]), POLLIN | POLLOUT);
    CHECK_EQ(spoll(fd[1]), POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
    CHECK_EQ(get_any(fd[1], MSG_ANY), MSG_BAND);
    CHECK_EQ(kpoll(fd[1]), POLLOUT);
    CHECK_EQ(spoll(fd[1]), POLLOUT | POLLWRNORM);
    strm_close(fd[0]);
    strm_close(fd[1]);

    /* expedited data over ticots: T_EXDATA_IND in band 1 */
    struct pair p = PAIR("/dev/ticots", K_CONN);
    if (pair_open(&p) != 0)
        return;
    CHECK_EQ(t_snd(p.snd, "x", 1, T_EXPEDITED), 1);
    CHECK(wait_queued(&p, 1));
    CHECK_EQ(kpoll(p.rcv), POLLIN | POLLOUT);
    CHECK_EQ(spoll(p.rcv), POLLIN | POLLRDBAND | POLLOUT | POLLWRNORM);
    char b[4];
    int flags = 0;
    CHECK_EQ(t_rcv(p.rcv, b, sizeof(b), &flags), 1);
    CHECK_EQ(flags, T_EXPEDITED);
    CHECK_EQ(kpoll(p.rcv), POLLOUT);
    CHECK_EQ(spoll(p.rcv), POLLOUT | POLLWRNORM);
    pair_close(&p);
}

static void up_err(unsigned char r, unsigned char w)
{
    unsigned char e[2] = {r, w};
    hdrv_up_bytes(M_ERROR, e, 2);
}

/* P.4 */
static void t_p_error(void)
{
    int fd = strm_open("/dev/streams/hdrv", O_RDWR);
    if (!CHECK(fd >= 0))
        return;
    CHECK_EQ(kpoll(fd), POLLOUT);
    up_err(EIO, 0xff); /* read error */
    CHECK_EQ(kpoll(fd), POLLIN | POLLOUT);
    CHECK_EQ(spoll(fd), POLLERR | POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
    up_err(0, 0xff); /* cleared, nothing queued */
    CHECK_EQ(kpoll(fd), POLLOUT);
    CHECK_EQ(spoll(fd), POLLOUT | POLLWRNORM);
    up_err(EIO, 0xff);
    hdrv_up_str(0, "after"); /* queued behind the error */
    CHECK_EQ(kpoll(fd), POLLIN | POLLOUT);
    up_err(0, 0xff); /* cleared, a message queued: readable */
    CHECK_EQ(kpoll(fd), POLLIN | POLLOUT);
    CHECK_EQ(spoll(fd), POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
    char b[16];
    CHECK_EQ(strm_read(fd, b, sizeof(b)), 5);
    CHECK_EQ(kpoll(fd), POLLOUT);
    up_err(0xff, EPROTO); /* a write error alone: a write fails at once */
    CHECK_EQ(kpoll(fd), POLLOUT);
    CHECK_EQ(spoll(fd), POLLERR | POLLOUT | POLLWRNORM);
    up_err(0xff, 0);
    CHECK_EQ(kpoll(fd), POLLOUT);
    CHECK_EQ(spoll(fd), POLLOUT | POLLWRNORM);

    /* P.5: non-persistent read errors go with the call that reports them */
    CHECK_EQ(strm_ioctl(fd, I_SERROPT, RERRNONPERSIST), 0);
    for (int how = 0; how < 3; how++) {
        up_err(EIO, 0xff);
        CHECK_EQ(kpoll(fd), POLLIN | POLLOUT);
        int n = 0;
        if (how == 0)
            CHECK_EQ(get_any(fd, MSG_ANY), -1);
        else if (how == 1)
            CHECK_EQ(strm_read(fd, b, sizeof(b)), -1);
        else
            CHECK_EQ(strm_ioctl(fd, I_NREAD, &n), -1);
        CHECK_EQ(errno, EIO);
        if (!CHECK_EQ(kpoll(fd), POLLOUT))
            fprintf(stderr, "  P.5 (%s): POLLIN after the error was reported\n",
                    how == 0 ? "getmsg" : how == 1 ? "read" : "I_NREAD");
        CHECK_EQ(spoll(fd), POLLOUT | POLLWRNORM);
    }
    strm_close(fd);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    memset(wbuf, 'w', sizeof(wbuf));
    struct pair pairs[] = {
        PAIR("/dev/udp", K_DGRAM),     PAIR("/dev/ticlts", K_DGRAM),
        PAIR("/dev/rawip", K_DGRAM),   PAIR("/dev/ticots", K_CONN),
        PAIR("/dev/ticotsord", K_CONN), PAIR("/dev/tcp", K_CONN),
        PAIR("pipe", K_PIPE),
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        struct pair *p = &pairs[i];
        if (pair_open(p) != 0)
            continue;
        t_w_fill(p);
        t_w_loop(p, 600);
        pair_close(p);
    }
    t_p_hipri();
    t_p_band();
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    t_p_error();
    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
