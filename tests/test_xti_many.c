/* SPDX-License-Identifier: MIT */
/*
 * test_xti_many.c -- many XTI endpoints in one process moving data at once
 * (issue 23 item 6; bench/xti_many.c measures the same at 1000 + 1000):
 * NUDP endpoints on /dev/udp, bound to 127.0.0.1 and paired 2k <-> 2k+1,
 * and NTCP connections over /dev/tcp with both ends here (2 NTCP
 * endpoints), all non-blocking, driven by two threads only, each an event
 * loop over its share of the descriptors: one with poll(2) on the raw
 * descriptors (they are pollable: docs/STREAMHEAD.md "Descriptors and
 * readiness"), the other with strm_poll.  Every endpoint sends NMSG
 * numbered messages to its partner, at most WINDOW ahead of what it has
 * received; each message carries its sender's index, its sequence number
 * and a pattern derived from both, and the receiver checks all three: every
 * message arrives exactly once, in order, intact, from the right sender.
 * Nothing more arrives after the last.
 *
 * The same round first with 10 UDP endpoints and 5 connections: the
 * process's threads (/proc/self/status) during the big round are no more
 * than during the small one (no thread per endpoint).  The descriptors
 * grown by opening are printed (2 per endpoint: the stream's and the
 * provider's kernel socket) and bounded; after everything is closed every
 * descriptor is given back (but the library's few process-wide ones made
 * on first use: main() says which) and no message block is outstanding.
 * Deadlines: each round must end within 20 s (a stalled endpoint fails the
 * test instead of hanging it).
 */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "udp_util.h"
#include "xti_util.h"

#include <xti_inet.h>

#define NUDP 200   /* UDP endpoints of the big round */
#define NTCP 100   /* TCP connections of the big round */
#define NMSG 150   /* messages each endpoint sends */
#define WINDOW 4   /* at most this many ahead of what it received */
#define MSZ 64     /* bytes a message */
#define ROUND_MS 20000
#define TCPU_DEV_NAME "/dev/tcp"

enum { UDP, TCP };

/* One endpoint; owned by one worker during a round (no lock). */
struct ep {
    int fd, kind;
    int peer;                /* the partner's index (UDP: where to send; TCP: the other end) */
    struct sockaddr_in addr; /* UDP: the bound address */
    unsigned owed;           /* messages to send now */
    unsigned soff, roff;     /* TCP: bytes of the message being sent / received */
    unsigned nsent, nrcvd;
    unsigned char rpart[MSZ];
};

static struct ep *eps;
static int neps;

struct worker {
    pthread_t th;
    int use_strm_poll;
    int *idx; /* this worker's endpoints, indices into eps */
    int n;
    long bad;
    int stalled;
    int threads; /* /proc/self/status Threads: seen while moving data */
};

static void fill(unsigned char *m, unsigned from, unsigned seq)
{
    memcpy(m, &from, 4);
    memcpy(m + 4, &seq, 4);
    for (int i = 8; i < MSZ; i++)
        m[i] = (unsigned char)(from * 7 + seq * 13 + (unsigned)i);
}

/* Send what e owes until it would block.  0, or -1 on an error. */
static int flush(struct ep *e)
{
    unsigned char m[MSZ];

    while (e->owed) {
        fill(m, (unsigned)(e - eps), e->nsent);
        if (e->kind == UDP) {
            struct t_unitdata ud = {.addr = {.len = sizeof(struct sockaddr_in),
                                             .buf = (char *)&eps[e->peer].addr},
                                    .udata = {.len = MSZ, .buf = (char *)m}};
            if (t_sndudata(e->fd, &ud) < 0)
                return t_errno == TFLOW ? 0 : -1;
        } else {
            int n = t_snd(e->fd, (char *)m + e->soff, MSZ - e->soff, 0);
            if (n < 0)
                return t_errno == TFLOW ? 0 : -1;
            e->soff += (unsigned)n;
            if (e->soff < MSZ)
                continue;
            e->soff = 0;
        }
        e->nsent++;
        e->owed--;
    }
    return 0;
}

/* A whole message m came to e: check sender, number and pattern; owe the next one. */
static void got(struct worker *w, struct ep *e, const unsigned char *m)
{
    unsigned char want[MSZ];

    fill(want, (unsigned)e->peer, e->nrcvd);
    if (memcmp(m, want, MSZ) != 0) {
        unsigned from, seq;
        memcpy(&from, m, 4);
        memcpy(&seq, m + 4, 4);
        if (w->bad++ < 5)
            fprintf(stderr, "endpoint %d: message %u from %u, want %u from %d\n",
                    (int)(e - eps), seq, from, e->nrcvd, e->peer);
    }
    e->nrcvd++;
    if (e->nsent + e->owed < NMSG)
        e->owed++;
}

/* Read e until it would block.  0, or -1 on an error. */
static int drain(struct worker *w, struct ep *e)
{
    unsigned char buf[4096];
    int flags;

    for (;;) {
        flags = 0;
        if (e->kind == UDP) {
            struct t_unitdata ud = {.udata = {.maxlen = sizeof(buf), .buf = (char *)buf}};
            if (t_rcvudata(e->fd, &ud, &flags) < 0)
                return t_errno == TNODATA ? 0 : -1;
            if (ud.udata.len != MSZ) {
                w->bad++;
                continue;
            }
            got(w, e, buf);
            continue;
        }
        int n = t_rcv(e->fd, (char *)buf, sizeof(buf), &flags);
        if (n < 0)
            return t_errno == TNODATA ? 0 : -1;
        for (int at = 0; at < n;) {
            int take = MSZ - (int)e->roff < n - at ? MSZ - (int)e->roff : n - at;
            memcpy(e->rpart + e->roff, buf + at, (size_t)take);
            e->roff += (unsigned)take;
            at += take;
            if (e->roff == MSZ) {
                e->roff = 0;
                got(w, e, e->rpart);
            }
        }
    }
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int nthreads(void)
{
    char line[128];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "Threads:", 8))
            n = atoi(line + 8);
    fclose(f);
    return n;
}

/* The event loop of one worker: until each of its endpoints has received NMSG. */
static void *worker_main(void *p)
{
    struct worker *w = p;
    struct pollfd *pfd = calloc((size_t)w->n, sizeof(*pfd));
    long end = now_ms() + ROUND_MS;
    int looked = 0;

    if (!pfd)
        return NULL;
    for (int i = 0; i < w->n; i++) {
        struct ep *e = &eps[w->idx[i]];
        e->owed = WINDOW;
        if (flush(e) < 0)
            goto fail;
        pfd[i].fd = e->fd;
    }
    for (;;) {
        int left = 0;
        for (int i = 0; i < w->n; i++) {
            struct ep *e = &eps[w->idx[i]];
            left += e->nrcvd < NMSG;
            pfd[i].events = (short)(POLLIN | (e->owed ? POLLOUT : 0));
            pfd[i].revents = 0;
        }
        if (!left)
            break;
        if (now_ms() > end) {
            fprintf(stderr, "worker %d: %d endpoints short after %d ms\n", w->use_strm_poll,
                    left, ROUND_MS);
            w->stalled = 1;
            break;
        }
        if (!looked++)
            w->threads = nthreads();
        int r = w->use_strm_poll ? strm_poll(pfd, (nfds_t)w->n, 100)
                                 : poll(pfd, (nfds_t)w->n, 100);
        if (r < 0 && errno != EINTR)
            goto fail;
        for (int i = 0; i < w->n && r > 0; i++) {
            struct ep *e = &eps[w->idx[i]];
            if (!pfd[i].revents)
                continue;
            r--;
            if (pfd[i].revents & POLLNVAL)
                goto fail;
            if (drain(w, e) < 0 || flush(e) < 0)
                goto fail;
        }
    }
    free(pfd);
    return NULL;
fail:
    fprintf(stderr, "worker %d: t_errno %d (%s) errno %d\n", w->use_strm_poll, t_errno,
            t_strerror(t_errno), errno);
    w->stalled = 1;
    free(pfd);
    return NULL;
}

static void set_nb(int fd)
{
    strm_fcntl(fd, F_SETFL, strm_fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Open nudp UDP endpoints and ntcp connections into eps[0..). 0 or -1. */
static int open_all(int nudp, int ntcp)
{
    struct sockaddr_in lo = udpu_v4(0);
    struct xti_addr la;
    long failed0 = atomic_load(&check_nfailed);
    int lis;

    neps = 0;
    eps = calloc((size_t)(nudp + 2 * ntcp), sizeof(*eps));
    if (!CHECK(eps != NULL))
        return -1;
    for (int i = 0; i < nudp; i++) {
        struct ep *e = &eps[neps];
        struct xti_addr ba;
        e->kind = UDP;
        e->peer = neps ^ 1;
        e->fd = xti_bound(UDPU_DEV, 0, &lo, sizeof(lo), &ba);
        if (e->fd < 0)
            return -1;
        memcpy(&e->addr, ba.buf, sizeof(e->addr));
        set_nb(e->fd);
        neps++;
    }
    lis = xti_bound(TCPU_DEV_NAME, 8, &lo, sizeof(lo), &la);
    if (lis < 0)
        return -1;
    for (int j = 0; j < ntcp; j++) {
        struct ep *c = &eps[neps], *a = &eps[neps + 1];
        struct t_call call;
        c->kind = a->kind = TCP;
        c->peer = neps + 1;
        a->peer = neps;
        c->fd = xti_bound(TCPU_DEV_NAME, 0, NULL, 0, NULL);
        a->fd = t_open(TCPU_DEV_NAME, O_RDWR, NULL);
        neps += 2;
        if (c->fd < 0 || !CHECK(a->fd >= 0))
            break;
        /* /dev/tcp's t_connect completes with the kernel's connection */
        XCHECK_OK(xti_connect_to(c->fd, &la));
        memset(&call, 0, sizeof(call));
        XCHECK_OK(t_listen(lis, &call));
        XCHECK_OK(t_accept(lis, a->fd, &call));
        set_nb(c->fd);
        set_nb(a->fd);
    }
    XCHECK_OK(t_close(lis));
    return atomic_load(&check_nfailed) != failed0 ? -1 : 0;
}

static void close_all(void)
{
    for (int i = 0; i < neps; i++)
        if (eps[i].fd >= 0)
            XCHECK_OK(t_close(eps[i].fd));
    free(eps);
    eps = NULL;
    neps = 0;
}

/* The process's descriptors that are not eventfds; the eventfds in *nefd. */
static int nfds_split(int *nefd)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    char path[300], to[256];
    int n = 0;

    *nefd = 0;
    while (d && (de = readdir(d))) {
        ssize_t l;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
        if (de->d_name[0] == '.' || (l = readlink(path, to, sizeof(to) - 1)) < 0)
            continue;
        to[l] = 0;
        if (!strcmp(to, "anon_inode:[eventfd]"))
            ++*nefd;
        else
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* Print what the process's descriptors are (a failure's evidence). */
static void list_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    char path[300], to[256];

    while (d && (de = readdir(d))) {
        ssize_t n;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
        if (de->d_name[0] == '.' || (n = readlink(path, to, sizeof(to) - 1)) < 0)
            continue;
        to[n] = 0;
        fprintf(stderr, "  fd %s -> %s\n", de->d_name, to);
    }
    if (d)
        closedir(d);
}

/* One round: open, move NMSG each way on every endpoint with two threads,
 * check, close.  The threads seen while moving data are returned. */
static int round_of(int nudp, int ntcp, int slack)
{
    struct worker w[2];
    int efd, fds0 = udpu_nfds(), other0 = nfds_split(&efd), threads = -1;

    if (open_all(nudp, ntcp) < 0) {
        close_all();
        return -1;
    }
    int grown = udpu_nfds() - fds0;
    printf("%d UDP endpoints, %d TCP connections: %d endpoints, %d descriptors (%.2f each)\n",
           nudp, ntcp, neps, grown, (double)grown / neps);
    CHECK(grown >= neps && grown <= 3 * neps + 2); /* 2 each; 3 without io_uring */

    memset(w, 0, sizeof(w));
    for (int t = 0; t < 2; t++) {
        w[t].use_strm_poll = t;
        w[t].idx = calloc((size_t)neps, sizeof(int));
    }
    /* a pair (UDP partners, a connection's two ends) stays on one worker */
    for (int i = 0; i < neps; i += 2) {
        struct worker *x = &w[(i / 2) % 2];
        x->idx[x->n++] = i;
        x->idx[x->n++] = i + 1;
    }
    for (int t = 0; t < 2; t++)
        CHECK_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
    for (int t = 0; t < 2; t++) {
        pthread_join(w[t].th, NULL);
        CHECK_EQ(w[t].stalled, 0);
        CHECK_EQ(w[t].bad, 0);
        if (w[t].threads > threads)
            threads = w[t].threads;
    }
    /* exactly once: nothing more comes after the last */
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < w[t].n; i++)
            CHECK_EQ(drain(&w[t], &eps[w[t].idx[i]]), 0);
    long short_ = 0, extra = 0;
    for (int i = 0; i < neps; i++) {
        short_ += eps[i].nrcvd < NMSG || eps[i].nsent < NMSG;
        extra += eps[i].nrcvd > NMSG || eps[i].nsent > NMSG;
    }
    CHECK_EQ(short_, 0);
    CHECK_EQ(extra, 0);
    CHECK_EQ(w[0].bad + w[1].bad, 0);
    for (int t = 0; t < 2; t++)
        free(w[t].idx);
    close_all();

    /* every descriptor given back (a closing stream may release its socket a moment later) */
    long end = now_ms() + 5000;
    while (nfds_split(&efd) > other0 + slack && now_ms() < end) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    if (!CHECK(nfds_split(&efd) <= other0 + slack) || !CHECK(efd <= 3))
        list_fds();
    return threads;
}

int main(void)
{
    struct rlimit rl;

    /* 2 descriptors an endpoint: raise the limit before the first stream
     * (the library sizes its io_uring file table from it) */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max && rl.rlim_cur < 4096) {
        rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    xti_require(UDPU_DEV);
    xti_require(TCPU_DEV_NAME);
    /* The library keeps a few descriptors of its own for the process, made on
     * first use: libxnet's copy pipe (xti_ucopy.c), udp's GRO keeper socket
     * (udp_opt.c, docs/TPI.md "GSO and GRO"), and a pool of eventfds,
     * one per thread blocked at once in a channel read or a wait (sd_chan.c:
     * a thread's goes back to the pool when it exits).  So: the first round
     * may leave two more descriptors (the pipe, the keeper), the big round
     * none, and the
     * eventfds are never more than this test's threads (main, 2 workers). */
    int small = round_of(10, 5, 2);
    int big = round_of(NUDP, NTCP, 0);
    printf("threads while moving data: %d with %d endpoints, %d with %d\n", small, 10 + 2 * 5,
           big, NUDP + 2 * NTCP);
    CHECK(small > 2);
    CHECK(big > 2);
    CHECK(big <= small); /* no thread per endpoint */
    return xti_finish();
}
