/* SPDX-License-Identifier: MIT */
/*
 * test_xti_chan.c -- the channel's reader (src/head/sd_chan.c, issue 23): a
 * reader blocked in t_rcvudata / t_rcv / getmsg on /dev/udp or /dev/tcp
 * waits on the socket itself and takes what comes on its own thread.
 *
 *   CH.1 udp ping-pong with a kernel socket, 2000 rounds: the blocked reader
 *        is the socket's poller (white box: io->poll), every datagram comes
 *        in order, and after each read the descriptor shows POLLIN to a
 *        kernel poll exactly when a non-blocking read would succeed.
 *   CH.2 bursts while the reader is blocked: what its pull leaves shows as
 *        POLLIN on the descriptor within the lazy token's bound (a poll(2)
 *        of TOK_WAIT_MS), never POLLIN without data; every datagram is read,
 *        none twice.
 *   CH.3 signals: without SA_RESTART the blocked read fails TSYSERR/EINTR;
 *        with SA_RESTART it goes on and returns the datagram sent later.
 *   CH.4 two threads blocked on one endpoint (one polls, one sleeps): 400
 *        datagrams, each read once.
 *   CH.5 an ICMP error while the reader polls: T_UDERROR_IND reaches it
 *        (TLOOK, ECONNREFUSED), and the endpoint then reads data again.
 *   CH.6 tcp: 1000 request/response rounds between two XTI endpoints, byte
 *        counts exact; an orderly release while the reader is blocked is
 *        TLOOK / T_ORDREL.
 *   CH.7 fork: a child of a process whose threads have polled reads on a
 *        new endpoint of its own.
 *   CH.8 after blocking reads, with no reader in a call, a datagram shows as
 *        POLLIN to poll(2) within 500 ms (readability handed back to the
 *        epoll thread), 20 rounds alternating with blocking reads.
 *   CH.9-CH.12 (the lazy token, the pull, urgent data): test_xti_chan_token.c.
 *   End: no lost wake-up, no message block outstanding.
 */
#include "xti_chan_util.h"

struct later {
    int k;
    struct sockaddr_in to;
    int ms;
};

static void *send_later(void *arg);

struct echo {
    int fd, rounds, ok;
    struct sockaddr_in peer;
};

/* CH.1 reader: echo every datagram back, checking the invariant. */
static void *echo_main(void *arg)
{
    struct echo *e = arg;
    char buf[64];
    for (int i = 0; i < e->rounds; i++) {
        int n = rcvu(e->fd, buf, sizeof(buf));
        if (n != 4)
            return NULL;
        if (kernel_pollin(e->fd)) /* the pull left nothing: the peer waits for us */
            return NULL;
        if (sndu(e->fd, &e->peer, buf, 4) != 0)
            return NULL;
    }
    e->ok = 1;
    return NULL;
}

static void ch1_pingpong(void)
{
    struct sockaddr_in xa, ka;
    int x = xudp(&xa), k = ksock(&ka);
    struct echo e = {.fd = x, .rounds = 2000, .peer = ka};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, echo_main, &e), 0);
    CHECK(wait_polled(x)); /* CH.1: the blocked reader polls the socket itself */
    int bad = 0;
    for (unsigned i = 0; i < (unsigned)e.rounds; i++) {
        unsigned v = i, r = ~0u;
        if (sendto(k, &v, 4, 0, (struct sockaddr *)&xa, sizeof(xa)) != 4 ||
            recv(k, &r, 4, 0) != 4 || r != i) {
            bad++;
            break;
        }
    }
    CHECK_EQ(bad, 0);
    pthread_join(t, NULL);
    CHECK(e.ok);
    CHECK(!kernel_pollin(x));
    /* CH.8: no reader in a call now: a datagram shows as POLLIN to an event
     * loop's poll(2) soon (the epoll thread's readability is back within
     * 1 ms of the last poller), and a non-blocking read takes it. */
    for (unsigned round = 0; round < 20; round++) {
        unsigned v = 1000 + round;
        CHECK_EQ(sendto(k, &v, 4, 0, (struct sockaddr *)&xa, sizeof(xa)), 4);
        struct pollfd p = {.fd = x, .events = POLLIN};
        long long t0 = ust_now_ns();
        CHECK_EQ(poll(&p, 1, 2000), 1);
        CHECK(ust_now_ns() - t0 < 500000000LL);
        unsigned next = v;
        CHECK_EQ(no_false_pollin(x, &next), 1);
        if (round % 2 == 0) { /* a blocking read in between: the readability taken off again */
            struct later l = {.k = k, .to = xa, .ms = 5};
            pthread_t tl;
            CHECK_EQ(pthread_create(&tl, NULL, send_later, &l), 0);
            char buf[64];
            CHECK_EQ(rcvu(x, buf, sizeof(buf)), 4);
            pthread_join(tl, NULL);
        }
    }
    close(k);
    t_close(x);
}

struct drain {
    int fd, want, dup, shown;
    atomic_int got;
    unsigned next;
};

/* CH.2 reader: blocking reads of numbered datagrams, the invariant after each. */
static void *drain_main(void *arg)
{
    struct drain *d = arg;
    char buf[64];
    while (atomic_load(&d->got) < d->want) {
        int n = rcvu(d->fd, buf, sizeof(buf));
        if (n != 4)
            return NULL;
        unsigned v;
        memcpy(&v, buf, 4);
        if (v != d->next)
            d->dup++;
        d->next = v + 1;
        atomic_fetch_add(&d->got, 1);
        int more = no_false_pollin_ms(d->fd, &d->next, TOK_WAIT_MS);
        atomic_fetch_add(&d->got, more);
        d->shown += more;
    }
    return NULL;
}

static void ch2_bursts(void)
{
    struct sockaddr_in xa, ka;
    int x = xudp(&xa), k = ksock(&ka);
    enum { BURSTS = 200, PER = 3 };
    struct drain d = {.fd = x, .want = BURSTS * PER};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, drain_main, &d), 0);
    unsigned seq = 0;
    for (int b = 0; b < BURSTS; b++) {
        CHECK(wait_polled(x) || atomic_load(&d.got) == d.want);
        unsigned v[PER];
        struct iovec iov[PER];
        struct mmsghdr mh[PER];
        memset(mh, 0, sizeof(mh));
        for (int i = 0; i < PER; i++) {
            v[i] = seq++;
            iov[i] = (struct iovec){&v[i], 4};
            mh[i].msg_hdr.msg_name = &xa;
            mh[i].msg_hdr.msg_namelen = sizeof(xa);
            mh[i].msg_hdr.msg_iov = &iov[i];
            mh[i].msg_hdr.msg_iovlen = 1;
        }
        CHECK_EQ(sendmmsg(k, mh, PER, 0), PER);
        for (int i = 0; i < 2000 && atomic_load(&d.got) < (int)seq; i++)
            sleep_ms(1);
    }
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&d.got), d.want);
    CHECK_EQ(d.dup, 0);
    CHECK(d.shown > 0); /* a pull of a burst left some: POLLIN showed them */
    CHECK(!kernel_pollin(x));
    close(k);
    t_close(x);
}

static volatile sig_atomic_t nalarm;
static void on_alarm(int s)
{
    (void)s;
    nalarm++;
}

static void alarm_in(long ms, long every_ms)
{
    struct itimerval it = {{every_ms / 1000, (every_ms % 1000) * 1000},
                           {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void *send_later(void *arg)
{
    struct later *l = arg;
    sleep_ms(l->ms);
    unsigned v = 77;
    sendto(l->k, &v, 4, 0, (struct sockaddr *)&l->to, sizeof(l->to));
    return NULL;
}

static void ch3_signals(void)
{
    struct sockaddr_in xa, ka;
    int x = xudp(&xa), k = ksock(&ka);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    char buf[64];

    sa.sa_flags = 0; /* no SA_RESTART: EINTR */
    sigaction(SIGALRM, &sa, NULL);
    nalarm = 0;
    alarm_in(200, 100);
    errno = 0;
    XCHECK_ERR(rcvu(x, buf, sizeof(buf)), TSYSERR);
    CHECK_EQ(errno, EINTR);
    alarm_in(0, 0);
    CHECK(nalarm >= 1);

    sa.sa_flags = SA_RESTART; /* restarted: the datagram sent after the alarm comes */
    sigaction(SIGALRM, &sa, NULL);
    nalarm = 0;
    struct later l = {.k = k, .to = xa, .ms = 600};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, send_later, &l), 0);
    alarm_in(200, 0);
    CHECK_EQ(rcvu(x, buf, sizeof(buf)), 4);
    CHECK(nalarm == 1);
    pthread_join(t, NULL);
    signal(SIGALRM, SIG_DFL);
    close(k);
    t_close(x);
}

struct counter {
    int fd, n;
    atomic_int *seen;
    atomic_int *total;
    int want;
};

static void *count_main(void *arg)
{
    struct counter *c = arg;
    char buf[64];
    while (atomic_load(c->total) < c->want) {
        int n = rcvu(c->fd, buf, sizeof(buf));
        if (n != 4)
            break;
        unsigned v;
        memcpy(&v, buf, 4);
        if (v == 0xffffffffu)
            break; /* the end marker */
        if (v < (unsigned)c->want)
            atomic_fetch_add(&c->seen[v], 1);
        atomic_fetch_add(c->total, 1);
        c->n++;
    }
    return NULL;
}

static void ch4_two_readers(void)
{
    enum { N = 400 };
    struct sockaddr_in xa, ka;
    int x = xudp(&xa), k = ksock(&ka);
    static atomic_int seen[N];
    atomic_int total = 0;
    struct counter c[2] = {{.fd = x, .seen = seen, .total = &total, .want = N},
                           {.fd = x, .seen = seen, .total = &total, .want = N}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, count_main, &c[i]), 0);
    CHECK(wait_polled(x));
    for (unsigned v = 0; v < N; v++) {
        CHECK_EQ(sendto(k, &v, 4, 0, (struct sockaddr *)&xa, sizeof(xa)), 4);
        if (v % 16 == 15)
            for (int i = 0; i < 1000 && atomic_load(&total) <= (int)v - 8; i++)
                sleep_ms(1); /* paced: the receive buffer never overflows */
    }
    for (int i = 0; i < 5000 && atomic_load(&total) < N; i++)
        sleep_ms(1);
    unsigned end = 0xffffffffu;
    for (int i = 0; i < 2; i++)
        sendto(k, &end, 4, 0, (struct sockaddr *)&xa, sizeof(xa));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&total), N);
    int once = 0;
    for (int i = 0; i < N; i++)
        once += atomic_load(&seen[i]) == 1;
    CHECK_EQ(once, N);
    close(k);
    t_close(x);
}

struct blocked {
    int fd, r, terr;
};

static void *blocked_rcvu(void *arg)
{
    struct blocked *b = arg;
    char buf[64];
    b->r = rcvu(b->fd, buf, sizeof(buf));
    b->terr = t_errno;
    return NULL;
}

static void ch5_icmp(void)
{
    struct sockaddr_in xa, ka;
    int x = xudp(&xa), k = ksock(&ka);
    struct sockaddr_in closed;
    int k2 = ksock(&closed);
    close(k2); /* a port nobody listens on */
    struct blocked b = {.fd = x};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, blocked_rcvu, &b), 0);
    CHECK(wait_polled(x));
    CHECK_EQ(sndu(x, &closed, "x", 1), 0);
    pthread_join(t, NULL);
    CHECK_EQ(b.r, -1);
    CHECK_EQ(b.terr, TLOOK);
    CHECK_EQ(t_look(x), T_UDERR);
    struct t_uderr ue;
    memset(&ue, 0, sizeof(ue));
    XCHECK_OK(t_rcvuderr(x, &ue));
    CHECK_EQ(ue.error, ECONNREFUSED);
    unsigned v = 5;
    CHECK_EQ(sendto(k, &v, 4, 0, (struct sockaddr *)&xa, sizeof(xa)), 4);
    char buf[64];
    CHECK_EQ(rcvu(x, buf, sizeof(buf)), 4);
    close(k);
    t_close(x);
}

struct tcp_echo {
    int fd, rounds, ok, relterr;
};

static void *tcp_echo_main(void *arg)
{
    struct tcp_echo *e = arg;
    char buf[256];
    for (int i = 0; i < e->rounds; i++) {
        int got = 0, flags;
        while (got < 100) {
            int n = t_rcv(e->fd, buf + got, (unsigned)(100 - got), &flags);
            if (n <= 0)
                return NULL;
            got += n;
        }
        if (t_snd(e->fd, buf, 100, 0) != 100)
            return NULL;
    }
    int flags;
    e->relterr = t_rcv(e->fd, buf, sizeof(buf), &flags) < 0 ? t_errno : 0;
    e->ok = 1;
    return NULL;
}

static void ch6_tcp(void)
{
    int cli, lis, acc;
    if (!CHECK_EQ(xti_pair("/dev/tcp", &cli, &lis, &acc), 0))
        return;
    struct tcp_echo e = {.fd = acc, .rounds = 1000};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, tcp_echo_main, &e), 0);
    CHECK(wait_polled(acc));
    char out[100], in[100];
    int bad = 0;
    for (int i = 0; i < e.rounds && !bad; i++) {
        memset(out, i & 0xff, sizeof(out));
        if (t_snd(cli, out, sizeof(out), 0) != 100) {
            bad = 1;
            break;
        }
        int got = 0, flags;
        while (got < 100) {
            int n = t_rcv(cli, in + got, (unsigned)(100 - got), &flags);
            if (n <= 0) {
                bad = 1;
                break;
            }
            got += n;
        }
        bad |= memcmp(in, out, sizeof(in)) != 0;
    }
    CHECK_EQ(bad, 0);
    CHECK(wait_polled(acc));
    XCHECK_OK(t_sndrel(cli));
    pthread_join(t, NULL);
    CHECK(e.ok);
    CHECK_EQ(e.relterr, TLOOK);
    CHECK_EQ(t_look(acc), T_ORDREL);
    XCHECK_OK(t_rcvrel(acc));
    t_close(cli);
    t_close(acc);
    t_close(lis);
}

static __attribute__((unused)) void ch7_fork(void)
{
    int pp[2];
    CHECK_EQ(pipe(pp), 0);
    pid_t pid = fork();
    if (pid == 0) { /* no thread of its own: the parent sends */
        struct sockaddr_in xa;
        int x = xudp(&xa);
        if (x < 0 || write(pp[1], &xa, sizeof(xa)) != (ssize_t)sizeof(xa))
            _exit(2);
        char buf[64];
        int n = rcvu(x, buf, sizeof(buf));
        _exit(n == 4 ? 0 : 1);
    }
    struct sockaddr_in xa, ka;
    int k = ksock(&ka);
    if (CHECK_EQ(read(pp[0], &xa, sizeof(xa)), (ssize_t)sizeof(xa))) {
        sleep_ms(100); /* the child blocks in its read */
        unsigned v = 9;
        CHECK_EQ(sendto(k, &v, 4, 0, (struct sockaddr *)&xa, sizeof(xa)), 4);
    }
    int st = -1;
    for (int i = 0; i < 1000 && waitpid(pid, &st, WNOHANG) == 0; i++)
        sleep_ms(10);
    if (!CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        kill(pid, SIGKILL);
    close(k);
    close(pp[0]);
    close(pp[1]);
}


int main(void)
{
    xti_require("/dev/udp");
    alarm(150); /* a lost wake-up hangs: fail loudly */
    ch1_pingpong();
    ch2_bursts();
    ch3_signals();
    alarm(150);
    ch4_two_readers();
    ch5_icmp();
    ch6_tcp();
    alarm(150);
#if !defined(__SANITIZE_THREAD__) /* TSan: a multi-threaded fork's child may start no thread */
    ch7_fork();
#endif
    CHECK_EQ(ust_sd_lost_wakeups(), 0);
    return xti_finish();
}
