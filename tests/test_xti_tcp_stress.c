/* SPDX-License-Identifier: MIT */
/*
 * test_xti_tcp_stress.c -- many tcp connections at once (docs/TPI.md "tcp"):
 * NCONN connections to one XTI listener, each carried by two threads per
 * side: the client sends CBYTES then t_sndrel while reading what the server
 * sends; the server side (an XTI endpoint accepted by the main thread, or,
 * for every third connection, a plain kernel socket connecting to it)
 * sends SBYTES then releases while reading.  Every byte is counted and
 * checksummed in order, on every connection; sizes of the sends vary; the
 * receivers are slowed now and then so that flow control is met both
 * ways.  Time-outs are hang guards only.
 *
 * Then disconnect churn: an XTI client connects to a plain socket server
 * that floods it, reads a little, and disconnects (t_snddis) or unbinds
 * while the data keeps coming, CHURN times.  The read service procedure is
 * then often inside its putnext through timod when the T_DISCON_REQ comes,
 * and timod's perimeter may run that put procedure inside the putnext, on
 * the service procedure's thread: taking the socket must not wait for the
 * claim below it on that stack (it hung there).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "tcp_util.h"
#include "xti_util.h"

#define NCONN 6
#define CBYTES (3u << 20)
#define SBYTES (2u << 20)

struct side {
    int fd;    /* XTI endpoint, or -1 */
    int sock;  /* plain socket, or -1 */
    unsigned sseed, rseed;
    uint64_t slen, rlen;
    struct tcpu_sum got;
    int ok_send, ok_recv;
};

static void nap(void)
{
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
}

static void *sender(void *p)
{
    struct side *s = p;
    static __thread char buf[40000];
    uint64_t at = 0;
    int k = 0;

    s->ok_send = 1;
    while (at < s->slen) {
        size_t n = 1 + (size_t)((k++ * 2654435761u) % sizeof(buf));
        if (n > s->slen - at)
            n = (size_t)(s->slen - at);
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)tcpu_pat(at + i, s->sseed);
        size_t off = 0;
        while (off < n) {
            int r = s->fd >= 0 ? t_snd(s->fd, buf + off, (unsigned)(n - off), 0)
                               : (int)send(s->sock, buf + off, n - off, MSG_NOSIGNAL);
            if (r <= 0) {
                fprintf(stderr, "send failed: t_errno %d errno %d\n", t_errno, errno);
                s->ok_send = 0;
                return NULL;
            }
            off += (size_t)r;
        }
        at += n;
    }
    if (s->fd >= 0) {
        if (t_sndrel(s->fd) < 0)
            s->ok_send = 0;
    } else {
        shutdown(s->sock, SHUT_WR);
    }
    return NULL;
}

static void *receiver(void *p)
{
    struct side *s = p;
    static __thread unsigned char buf[50000];
    int k = 0;

    s->ok_recv = 0;
    for (;;) {
        int flags = 0, r;
        if (s->fd >= 0) {
            r = t_rcv(s->fd, (char *)buf, sizeof(buf), &flags);
            if (r < 0 && t_errno == TLOOK && t_look(s->fd) == T_ORDREL) {
                s->ok_recv = t_rcvrel(s->fd) == 0;
                break;
            }
        } else {
            r = (int)recv(s->sock, buf, sizeof(buf), 0);
            if (r == 0) {
                s->ok_recv = 1;
                break;
            }
        }
        if (r <= 0) {
            fprintf(stderr, "receive failed: r %d t_errno %d errno %d\n", r, t_errno, errno);
            break;
        }
        tcpu_sum_add(&s->got, buf, (size_t)r);
        if (++k % 64 == 0)
            nap(); /* a slow reader now and then: flow control */
    }
    return NULL;
}

#define CHURN 150

static atomic_int flood_stop;

/* Accept connections on the listener ls and write to each until it goes. */
static void *flooder(void *p)
{
    int ls = (int)(intptr_t)p;
    static char chunk[16384];

    memset(chunk, 'f', sizeof(chunk));
    while (!atomic_load(&flood_stop)) {
        struct pollfd pf = {.fd = ls, .events = POLLIN};
        if (poll(&pf, 1, 50) != 1)
            continue;
        int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0)
            continue;
        while (!atomic_load(&flood_stop) && send(s, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0)
            ;
        close(s);
    }
    return NULL;
}

static void t_disconnect_churn(void)
{
    unsigned short port = 0;
    int len, ls = tcpu_listener(AF_INET, &port);
    struct sockaddr_in6 a = tcpu_addr(AF_INET, port, &len);
    struct xti_addr to;
    pthread_t th;
    char buf[4096];
    int flags, done = 0;

    if (!CHECK(ls >= 0))
        return;
    memcpy(to.buf, &a, (size_t)len);
    to.len = (unsigned)len;
    atomic_store(&flood_stop, 0);
    CHECK_EQ(pthread_create(&th, NULL, flooder, (void *)(intptr_t)ls), 0);
    for (int i = 0; i < CHURN; i++) {
        int fd = xti_bound(TCPU_DEV, 0, NULL, 0, NULL);
        if (fd < 0)
            break;
        if (xti_connect_to(fd, &to) < 0) {
            CHECK(!"t_connect");
            fprintf(stderr, "  t_connect: t_errno %d errno %d\n", t_errno, errno);
            t_close(fd);
            break;
        }
        for (int k = 0; k < 1 + i % 4; k++)
            XCHECK_OK(t_rcv(fd, buf, sizeof(buf), &flags));
        if (t_snddis(fd, NULL) < 0) { /* a disconnect came first: take it */
            CHECK_EQ(t_errno, TLOOK);
            CHECK_EQ(t_look(fd), T_DISCONNECT);
            XCHECK_OK(t_rcvdis(fd, NULL));
        }
        if (i % 2) /* and an unbind right after, while data may still arrive */
            XCHECK_OK(t_unbind(fd));
        XCHECK_OK(t_close(fd));
        done++;
    }
    atomic_store(&flood_stop, 1);
    pthread_join(th, NULL);
    close(ls);
    CHECK_EQ(done, CHURN);
}

int main(void)
{
    struct xti_addr la;
    int len, lis;
    struct sockaddr_in6 want = tcpu_addr(AF_INET, 0, &len);
    struct side cli[NCONN], srv[NCONN];
    pthread_t th[NCONN][4];

    xti_require(TCPU_DEV);
    lis = xti_bound(TCPU_DEV, NCONN, &want, (unsigned)len, &la);
    if (lis < 0)
        return xti_finish();
    memset(cli, 0, sizeof(cli));
    memset(srv, 0, sizeof(srv));
    for (int i = 0; i < NCONN; i++) {
        struct t_call call;
        cli[i].sseed = srv[i].rseed = 100u + (unsigned)i;
        srv[i].sseed = cli[i].rseed = 200u + (unsigned)i;
        cli[i].slen = srv[i].rlen = CBYTES;
        srv[i].slen = cli[i].rlen = SBYTES;
        cli[i].fd = cli[i].sock = -1;
        if (i % 3 == 2) {
            cli[i].sock = tcpu_connect(la.buf, (int)la.len);
            CHECK(cli[i].sock >= 0);
        } else {
            cli[i].fd = xti_bound(TCPU_DEV, 0, NULL, 0, NULL);
            XCHECK_OK(xti_connect_to(cli[i].fd, &la));
        }
        srv[i].sock = -1;
        srv[i].fd = t_open(TCPU_DEV, O_RDWR, NULL);
        memset(&call, 0, sizeof(call));
        XCHECK_OK(t_listen(lis, &call));
        XCHECK_OK(t_accept(lis, srv[i].fd, &call));
    }
    /* (connections are accepted in arrival order, which is connect order) */
    for (int i = 0; i < NCONN; i++) {
        CHECK_EQ(pthread_create(&th[i][0], NULL, sender, &cli[i]), 0);
        CHECK_EQ(pthread_create(&th[i][1], NULL, receiver, &cli[i]), 0);
        CHECK_EQ(pthread_create(&th[i][2], NULL, sender, &srv[i]), 0);
        CHECK_EQ(pthread_create(&th[i][3], NULL, receiver, &srv[i]), 0);
    }
    for (int i = 0; i < NCONN; i++)
        for (int j = 0; j < 4; j++)
            pthread_join(th[i][j], NULL);
    for (int i = 0; i < NCONN; i++) {
        struct tcpu_sum ws = tcpu_pat_sum(CBYTES, cli[i].sseed);
        struct tcpu_sum wc = tcpu_pat_sum(SBYTES, srv[i].sseed);
        CHECK(cli[i].ok_send && cli[i].ok_recv && srv[i].ok_send && srv[i].ok_recv);
        CHECK_EQ(srv[i].got.n, CBYTES);
        CHECK(srv[i].got.a == ws.a && srv[i].got.b == ws.b);
        CHECK_EQ(cli[i].got.n, SBYTES);
        CHECK(cli[i].got.a == wc.a && cli[i].got.b == wc.b);
        CHECK_EQ(t_getstate(srv[i].fd), T_IDLE);
        if (cli[i].fd >= 0) {
            CHECK_EQ(t_getstate(cli[i].fd), T_IDLE);
            XCHECK_OK(t_close(cli[i].fd));
        } else {
            close(cli[i].sock);
        }
        XCHECK_OK(t_close(srv[i].fd));
    }
    XCHECK_OK(t_close(lis));
    t_disconnect_churn();
    return xti_finish();
}
