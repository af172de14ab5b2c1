/* SPDX-License-Identifier: MIT */
/*
 * xti_many.c -- bench_xti_many: many endpoints in one process moving data at
 * once (issue 23 item 6), XTI over /dev/udp and /dev/tcp against kernel
 * sockets in the same run, driven by the same event loop on a fixed number
 * of threads (never one per endpoint).  DESIGN.md "Measuring": timings are a
 * report, never a test (tests/test_xti_many.c is the test).
 *
 * Four kinds of run, interleaved, REPS rounds, medians printed:
 *   xti udp   N endpoints t_open("/dev/udp", O_NONBLOCK), each bound to
 *             127.0.0.1 port 0; endpoint 2k and 2k+1 are partners;
 *   sock udp  the same with N socket(AF_INET, SOCK_DGRAM|SOCK_NONBLOCK);
 *   xti tcp   C connections over /dev/tcp, both ends in this process: a
 *             client endpoint t_connect'ed to one listener, t_listen +
 *             t_accept onto an endpoint of its own (2 C endpoints), both
 *             non-blocking for the run, TCP_NODELAY (t_optmgmt);
 *   sock tcp  the same with C kernel connections (connect + accept4).
 * Every endpoint starts by sending W messages of SIZE bytes (default 64) to
 * its partner (UDP: sendto its address; TCP: the other end of its
 * connection) and sends one back for each one it receives: an echo with W
 * messages in flight each way on every endpoint at every moment.  Each
 * message carries the sender's index and a sequence number, checked at the
 * receiver (counted as "bad": lost, duplicated, out of order, misaddressed).
 *
 * The loop (one per thread, T threads, default 2; the endpoints are split
 * by partner pair or connection so a pair stays on one thread): poll(2) on
 * every descriptor of the thread -- an XTI descriptor is pollable, POLLIN
 * exactly when a read would find something (docs/STREAMHEAD.md
 * "Descriptors and readiness") --, then for each one readable read until it
 * would block (t_rcvudata / t_rcv: TNODATA; recv: EAGAIN), and send what is
 * owed until it would block (TFLOW / EAGAIN: POLLOUT asked).
 *
 * Every run is a child process of its own (forked before it touches the
 * library: the parent never does), so its memory, descriptors and threads
 * are its own.  Reported per kind (medians): messages received per second and MB/s of
 * payload, over SECONDS after a 0.1 s warm-up; the process's resident
 * memory (RSS, /proc/self/statm) grown by opening the endpoints and by the
 * run, per endpoint; the kernel's slab grown by opening them, per endpoint
 * (/proc/meminfo Slab, system-wide: approximate on a shared machine); the
 * descriptors per endpoint (/proc/self/fd); the time to set one endpoint up
 * (open, bind; for TCP connect, listen, accept, TCP_NODELAY) and to close it;
 * the process's threads during the run (/proc/self/status Threads:, which
 * must not grow with N).  RLIMIT_NOFILE is raised to its hard limit first.
 *
 *   bench_xti_many [-n UDP_ENDPOINTS] [-c TCP_CONNECTIONS] [-s SECONDS]
 *                  [-r REPS] [-t THREADS] [-w WINDOW] [-m SIZE] [-k KINDS]
 *                  [--csv FILE]
 *   (defaults 1000, 1000, 1, 3, 2, 4, 64; -k a subset of "XSxs": X xti udp,
 *    S sock udp, x xti tcp, s sock tcp -- e.g. -k X for perf record)
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>
#include <xti.h>
#include <xti_inet.h>

enum { K_XUDP, K_SUDP, K_XTCP, K_STCP, K_N };
static const char *kind_name[K_N] = {"xti udp", "sock udp", "xti tcp", "sock tcp"};
static const char kind_letter[K_N] = {'X', 'S', 'x', 's'};

#define MAXMSG 1024
#define MAXREPS 32

/* One endpoint.  Owned by one worker thread for the run (no lock). */
struct ep {
    int fd;
    int peer;                /* UDP: index of the partner endpoint */
    struct sockaddr_in addr; /* UDP: the bound address */
    unsigned owed;           /* messages to send */
    unsigned soff;           /* TCP: bytes of the message being sent already sent */
    unsigned roff;           /* TCP: bytes of a message received so far */
    uint32_t nsent, nrcvd;   /* sequence numbers out / expected in */
    unsigned char rpart[MAXMSG];
};

struct worker {
    pthread_t th;
    int kind;
    struct ep *eps; /* this worker's endpoints: eps[0..n) */
    int n;
    struct pollfd *pfd;
    _Atomic long long msgs; /* received (written by the worker, read by main) */
    _Atomic long long bad;
    _Atomic int err;
};

static int msg_size = 64, window = 4;
static atomic_int stop;
static struct ep *all; /* every endpoint of the run (UDP partner addresses) */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_bytes(void)
{
    long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * sysconf(_SC_PAGESIZE);
}

/* A "Key: value" line of a /proc file, as a long (kB for meminfo). */
static long proc_field(const char *file, const char *key)
{
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = atol(line + kl + 1);
            break;
        }
    fclose(f);
    return v;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static int is_xti(int kind)
{
    return kind == K_XUDP || kind == K_XTCP;
}

static void set_nb(int kind, int fd)
{
    if (is_xti(kind))
        strm_fcntl(fd, F_SETFL, strm_fcntl(fd, F_GETFL) | O_NONBLOCK);
    else
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---------------------------------------------------------------- sending */

/* Send what e owes.  0: all sent or would block; -1: error. */
static int flush(int kind, struct ep *e)
{
    unsigned char m[MAXMSG];

    memset(m, 0x5a, (size_t)msg_size);
    while (e->owed) {
        uint32_t hdr[2] = {(uint32_t)(e - all), e->nsent};
        memcpy(m, hdr, sizeof(hdr));
        if (kind == K_XUDP) {
            struct t_unitdata ud = {.addr = {.len = sizeof(struct sockaddr_in),
                                             .buf = (char *)&all[e->peer].addr},
                                    .udata = {.len = (unsigned)msg_size, .buf = (char *)m}};
            if (t_sndudata(e->fd, &ud) < 0)
                return t_errno == TFLOW ? 0 : -1;
        } else if (kind == K_SUDP) {
            if (sendto(e->fd, m, (size_t)msg_size, 0, (struct sockaddr *)&all[e->peer].addr,
                       sizeof(struct sockaddr_in)) < 0)
                return errno == EAGAIN || errno == ENOBUFS ? 0 : -1;
        } else {
            ssize_t n;
            if (kind == K_XTCP) {
                n = t_snd(e->fd, (char *)m + e->soff, (unsigned)msg_size - e->soff, 0);
                if (n < 0)
                    return t_errno == TFLOW ? 0 : -1;
            } else {
                n = send(e->fd, m + e->soff, (size_t)msg_size - e->soff, MSG_NOSIGNAL);
                if (n < 0)
                    return errno == EAGAIN ? 0 : -1;
            }
            e->soff += (unsigned)n;
            if (e->soff < (unsigned)msg_size)
                continue;
            e->soff = 0;
        }
        e->nsent++;
        e->owed--;
    }
    return 0;
}

/* ---------------------------------------------------------------- receiving */

/* One whole message m arrived at e: check it, owe the echo. */
static void got(struct worker *w, struct ep *e, const unsigned char *m)
{
    uint32_t hdr[2];
    memcpy(hdr, m, sizeof(hdr));
    if (hdr[1] != e->nrcvd || (e->peer >= 0 && hdr[0] != (uint32_t)e->peer))
        atomic_fetch_add_explicit(&w->bad, 1, memory_order_relaxed);
    e->nrcvd = hdr[1] + 1;
    e->owed++;
    atomic_fetch_add_explicit(&w->msgs, 1, memory_order_relaxed);
}

/* Read e until it would block.  0, or -1 on an error. */
static int drain(struct worker *w, struct ep *e)
{
    unsigned char buf[16384];
    int kind = w->kind;

    for (;;) {
        ssize_t n;
        int flags = 0;
        if (kind == K_XUDP) {
            struct sockaddr_in from;
            struct t_unitdata ud = {.addr = {.maxlen = sizeof(from), .buf = (char *)&from},
                                    .udata = {.maxlen = sizeof(buf), .buf = (char *)buf}};
            if (t_rcvudata(e->fd, &ud, &flags) < 0) {
                if (t_errno == TNODATA)
                    return 0;
                if (t_errno == TLOOK && t_look(e->fd) == T_UDERR) {
                    t_rcvuderr(e->fd, NULL);
                    atomic_fetch_add_explicit(&w->bad, 1, memory_order_relaxed);
                    continue;
                }
                return -1;
            }
            if (ud.udata.len != (unsigned)msg_size)
                atomic_fetch_add_explicit(&w->bad, 1, memory_order_relaxed);
            else
                got(w, e, buf);
            continue;
        }
        if (kind == K_SUDP) {
            n = recv(e->fd, buf, sizeof(buf), 0);
            if (n < 0)
                return errno == EAGAIN ? 0 : -1;
            if (n != msg_size)
                atomic_fetch_add_explicit(&w->bad, 1, memory_order_relaxed);
            else
                got(w, e, buf);
            continue;
        }
        /* TCP: a byte stream cut into messages of msg_size */
        if (kind == K_XTCP) {
            n = t_rcv(e->fd, (char *)buf, sizeof(buf), &flags);
            if (n < 0)
                return t_errno == TNODATA ? 0 : -1;
        } else {
            n = recv(e->fd, buf, sizeof(buf), 0);
            if (n < 0)
                return errno == EAGAIN ? 0 : -1;
        }
        if (n == 0)
            return -1; /* EOF: the peer went */
        for (ssize_t at = 0; at < n;) {
            size_t take = (size_t)msg_size - e->roff;
            if (take > (size_t)(n - at))
                take = (size_t)(n - at);
            memcpy(e->rpart + e->roff, buf + at, take);
            e->roff += (unsigned)take;
            at += (ssize_t)take;
            if (e->roff == (unsigned)msg_size) {
                e->roff = 0;
                got(w, e, e->rpart);
            }
        }
    }
}

/* ---------------------------------------------------------------- the loop */

static void *worker_main(void *p)
{
    struct worker *w = p;

    for (int i = 0; i < w->n; i++) {
        w->eps[i].owed = (unsigned)window;
        if (flush(w->kind, &w->eps[i]) < 0)
            goto fail;
        w->pfd[i].fd = w->eps[i].fd;
    }
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < w->n; i++)
            w->pfd[i].events = (short)(POLLIN | (w->eps[i].owed ? POLLOUT : 0));
        int r = poll(w->pfd, (nfds_t)w->n, 50);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        for (int i = 0; i < w->n && r > 0; i++) {
            struct ep *e = &w->eps[i];
            if (!w->pfd[i].revents)
                continue;
            r--;
            if ((w->pfd[i].revents & (POLLIN | POLLERR | POLLHUP)) && drain(w, e) < 0)
                goto fail;
            if (e->owed && flush(w->kind, e) < 0)
                goto fail;
        }
    }
    return NULL;
fail:
    if (is_xti(w->kind))
        fprintf(stderr, "%s: t_errno %d (%s) errno %d\n", kind_name[w->kind], t_errno,
                t_strerror(t_errno), errno);
    else
        perror(kind_name[w->kind]);
    atomic_store(&w->err, 1);
    return NULL;
}

/* ---------------------------------------------------------------- setting up */

/* t_optmgmt T_NEGOTIATE of TCP_NODELAY on (as the sockets get setsockopt). */
static int xti_nodelay(int fd)
{
    struct {
        struct t_opthdr h;
        t_uscalar_t v;
    } o = {.h = {.len = sizeof(o), .level = INET_TCP, .name = TCP_NODELAY}, .v = T_YES}, oret;
    struct t_optmgmt req = {.opt = {.len = sizeof(o), .buf = (char *)&o}, .flags = T_NEGOTIATE};
    struct t_optmgmt ret = {.opt = {.maxlen = sizeof(oret), .buf = (char *)&oret}};
    return t_optmgmt(fd, &req, &ret);
}

static struct sockaddr_in loopback(void)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* n UDP endpoints into all[0..n), bound to 127.0.0.1, partners 2k <-> 2k+1. */
static int open_udp(int kind, int n)
{
    for (int i = 0; i < n; i++) {
        struct ep *e = &all[i];
        struct sockaddr_in a = loopback();
        e->peer = i ^ 1;
        if (kind == K_XUDP) {
            struct t_bind req = {.addr = {.len = sizeof(a), .buf = (char *)&a}};
            struct t_bind ret = {.addr = {.maxlen = sizeof(e->addr), .buf = (char *)&e->addr}};
            e->fd = t_open("/dev/udp", O_RDWR | O_NONBLOCK, NULL);
            if (e->fd < 0 || t_bind(e->fd, &req, &ret) < 0) {
                t_error("t_open/t_bind /dev/udp");
                return -1;
            }
        } else {
            socklen_t al = sizeof(e->addr);
            e->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
            if (e->fd < 0 || bind(e->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
                getsockname(e->fd, (struct sockaddr *)&e->addr, &al) < 0) {
                perror("socket/bind udp");
                return -1;
            }
        }
    }
    return 0;
}

/* c connections: all[2j] the client, all[2j+1] the accepted end. */
static int open_tcp(int kind, int c)
{
    struct sockaddr_in la = loopback();
    socklen_t al = sizeof(la);
    int ls, one = 1, rc = -1;

    if (kind == K_XTCP) {
        struct t_bind req = {.addr = {.len = sizeof(la), .buf = (char *)&la}, .qlen = 16};
        struct t_bind ret = {.addr = {.maxlen = sizeof(la), .buf = (char *)&la}};
        ls = t_open("/dev/tcp", O_RDWR, NULL);
        if (ls < 0 || t_bind(ls, &req, &ret) < 0) {
            t_error("listener /dev/tcp");
            return -1;
        }
    } else {
        ls = socket(AF_INET, SOCK_STREAM, 0);
        if (ls < 0 || bind(ls, (struct sockaddr *)&la, sizeof(la)) < 0 || listen(ls, 16) < 0 ||
            getsockname(ls, (struct sockaddr *)&la, &al) < 0) {
            perror("listener tcp");
            return -1;
        }
    }
    for (int j = 0; j < c; j++) {
        struct ep *cl = &all[2 * j], *ac = &all[2 * j + 1];
        cl->peer = ac->peer = -1; /* the other end of the connection */
        if (kind == K_XTCP) {
            struct t_call call;
            memset(&call, 0, sizeof(call));
            call.addr.buf = (char *)&la;
            call.addr.len = sizeof(la);
            cl->fd = t_open("/dev/tcp", O_RDWR, NULL);
            ac->fd = t_open("/dev/tcp", O_RDWR, NULL);
            /* /dev/tcp's t_connect completes with the kernel's connection */
            if (cl->fd < 0 || ac->fd < 0 || t_bind(cl->fd, NULL, NULL) < 0 ||
                t_connect(cl->fd, &call, NULL) < 0) {
                t_error("client /dev/tcp");
                goto out;
            }
            memset(&call, 0, sizeof(call));
            if (t_listen(ls, &call) < 0 || t_accept(ls, ac->fd, &call) < 0) {
                t_error("t_listen/t_accept /dev/tcp");
                goto out;
            }
            if (xti_nodelay(cl->fd) < 0 || xti_nodelay(ac->fd) < 0) {
                t_error("TCP_NODELAY");
                goto out;
            }
        } else {
            cl->fd = socket(AF_INET, SOCK_STREAM, 0);
            if (cl->fd < 0 || connect(cl->fd, (struct sockaddr *)&la, sizeof(la)) < 0 ||
                (ac->fd = accept(ls, NULL, NULL)) < 0) {
                perror("connect/accept tcp");
                goto out;
            }
            setsockopt(cl->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            setsockopt(ac->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        set_nb(kind, cl->fd);
        set_nb(kind, ac->fd);
    }
    rc = 0;
out:
    if (kind == K_XTCP)
        t_close(ls);
    else
        close(ls);
    return rc;
}

static void close_all(int kind, int n)
{
    for (int i = 0; i < n; i++)
        if (all[i].fd >= 0) {
            if (is_xti(kind))
                t_close(all[i].fd);
            else
                close(all[i].fd);
        }
}

/* ---------------------------------------------------------------- one run */

struct result {
    double mps;       /* messages received per second */
    double rss_open;  /* bytes of RSS per endpoint, grown by opening */
    double rss_run;   /* bytes of RSS per endpoint, grown by the run */
    double slab_open; /* bytes of kernel slab per endpoint, grown by opening */
    double fds;       /* descriptors per endpoint */
    double setup_us;  /* µs to set one endpoint up */
    double close_us;  /* µs to close one endpoint */
    int threads;      /* the process's threads during the run */
    long long bad;
};

static int run(int kind, int n, int nthreads, double secs, struct result *res)
{
    struct worker w[16];
    long rss0, rss1, rss2, slab0, slab1;
    int fds0, fds1, rc = 0;
    double t0, t1;
    long long m0 = 0, m1 = 0;

    all = calloc((size_t)n, sizeof(*all));
    if (!all)
        return -1;
    for (int i = 0; i < n; i++)
        all[i].fd = -1;
    fds0 = count_fds();
    rss0 = rss_bytes();
    slab0 = proc_field("/proc/meminfo", "Slab");
    t0 = now();
    if ((kind == K_XUDP || kind == K_SUDP ? open_udp(kind, n) : open_tcp(kind, n / 2)) < 0) {
        close_all(kind, n);
        free(all);
        return -1;
    }
    t1 = now();
    res->setup_us = (t1 - t0) * 1e6 / n;
    fds1 = count_fds();
    rss1 = rss_bytes();
    slab1 = proc_field("/proc/meminfo", "Slab");

    /* pairs (UDP partners, TCP connections) split among the workers */
    int npairs = n / 2, at = 0;
    atomic_store(&stop, 0);
    for (int t = 0; t < nthreads; t++) {
        int np = npairs / nthreads + (t < npairs % nthreads);
        memset(&w[t], 0, sizeof(w[t]));
        w[t].kind = kind;
        w[t].eps = &all[at];
        w[t].n = 2 * np;
        w[t].pfd = calloc((size_t)(2 * np + 1), sizeof(struct pollfd));
        at += 2 * np;
    }
    for (int t = 0; t < nthreads; t++)
        pthread_create(&w[t].th, NULL, worker_main, &w[t]);
    struct timespec warm = {0, 100000000};
    nanosleep(&warm, NULL);
    t0 = now();
    for (int t = 0; t < nthreads; t++)
        m0 += atomic_load(&w[t].msgs);
    struct timespec half = {(time_t)(secs / 2), (long)((secs / 2 - (double)(time_t)(secs / 2)) * 1e9)};
    nanosleep(&half, NULL);
    res->threads = (int)proc_field("/proc/self/status", "Threads");
    nanosleep(&half, NULL);
    for (int t = 0; t < nthreads; t++)
        m1 += atomic_load(&w[t].msgs);
    t1 = now();
    atomic_store(&stop, 1);
    res->bad = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(w[t].th, NULL);
        res->bad += atomic_load(&w[t].bad);
        if (atomic_load(&w[t].err))
            rc = -1;
        free(w[t].pfd);
    }
    rss2 = rss_bytes();
    res->mps = (double)(m1 - m0) / (t1 - t0);
    res->rss_open = (double)(rss1 - rss0) / n;
    res->rss_run = (double)(rss2 - rss1) / n;
    res->slab_open = (double)(slab1 - slab0) * 1024.0 / n;
    res->fds = (double)(fds1 - fds0) / n;
    t0 = now();
    close_all(kind, n);
    res->close_us = (now() - t0) * 1e6 / n;
    free(all);
    all = NULL;
    return rc;
}

/* run() in a child process of its own, so that each run starts from a
 * process that has never used the library nor freed memory (RSS grows by
 * what the endpoints take, not less because of what an earlier run left in
 * malloc's free lists); *res from the child through a pipe.  0 or -1. */
static int run_child(int kind, int n, int nthreads, double secs, struct result *res)
{
    int p[2], st;
    pid_t pid;

    if (pipe(p) < 0)
        return -1;
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(p[0]);
        int rc = run(kind, n, nthreads, secs, res);
        if (rc == 0 && write(p[1], res, sizeof(*res)) != (ssize_t)sizeof(*res))
            rc = -1;
        _exit(rc ? 1 : 0);
    }
    close(p[1]);
    ssize_t got = read(p[0], res, sizeof(*res));
    close(p[0]);
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return got == (ssize_t)sizeof(*res) ? 0 : -1;
}

/* ---------------------------------------------------------------- main */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    double s[MAXREPS];
    memcpy(s, v, (size_t)n * sizeof(*v));
    qsort(s, (size_t)n, sizeof(*s), cmp_d);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int nudp = 1000, ntcp = 1000, reps = 3, nthreads = 2;
    double secs = 1;
    const char *csv = NULL, *kinds = "XSxs";
    struct rlimit rl;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            nudp = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            ntcp = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            window = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc)
            msg_size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc)
            kinds = argv[++i];
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [-n UDP_ENDPOINTS] [-c TCP_CONNECTIONS] [-s SECONDS] [-r REPS]\n"
                    "          [-t THREADS] [-w WINDOW] [-m SIZE] [-k XSxs] [--csv FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    nudp &= ~1;
    if (nudp < 2 || ntcp < 1 || reps < 1 || reps > MAXREPS || nthreads < 1 || nthreads > 16 ||
        window < 1 || msg_size < 8 || msg_size > MAXMSG || secs <= 0) {
        fprintf(stderr, "%s: bad argument\n", argv[0]);
        return 2;
    }
    /* Each XTI endpoint is two descriptors (the stream's, the provider's
     * socket): raise the limit before the first stream (the library sizes
     * its io_uring file table from it, docs/STREAMHEAD.md). */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);

    static double mps[K_N][MAXREPS], ro[K_N][MAXREPS], rr[K_N][MAXREPS], so[K_N][MAXREPS],
        fd[K_N][MAXREPS], su[K_N][MAXREPS], cu[K_N][MAXREPS], th[K_N][MAXREPS];
    long long bad[K_N] = {0};
    int on[K_N];
    for (int k = 0; k < K_N; k++)
        on[k] = strchr(kinds, kind_letter[k]) != NULL;
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < K_N; k++) {
            struct result res;
            if (!on[k])
                continue;
            if (run_child(k, k == K_XUDP || k == K_SUDP ? nudp : 2 * ntcp, nthreads, secs, &res) <
                0) {
                fprintf(stderr, "%s: run failed\n", kind_name[k]);
                return 1;
            }
            mps[k][r] = res.mps;
            ro[k][r] = res.rss_open;
            rr[k][r] = res.rss_run;
            so[k][r] = res.slab_open;
            fd[k][r] = res.fds;
            su[k][r] = res.setup_us;
            cu[k][r] = res.close_us;
            th[k][r] = res.threads;
            bad[k] += res.bad;
        }

    FILE *cf = csv ? fopen(csv, "w") : NULL;
    if (cf)
        fprintf(cf, "kind,endpoints,msgs_per_s,MBps,rss_open_per_ep,rss_run_per_ep,"
                    "slab_open_per_ep,fds_per_ep,setup_us,close_us,threads,bad\n");
    printf("%d UDP endpoints, %d TCP connections (%d endpoints), %d-byte messages, window %d,\n"
           "%d threads polling, %.2f s a run, median of %d interleaved runs, RLIMIT_NOFILE %lu\n",
           nudp, ntcp, 2 * ntcp, msg_size, window, nthreads, secs, reps,
           (unsigned long)rl.rlim_cur);
    printf("%-9s %6s %9s %6s %6s %11s %10s %12s %6s %8s %8s %7s %4s\n", "kind", "endp",
           "msgs/s", "MB/s", "x sock", "RSS/ep open", "RSS/ep run", "slab/ep open", "fds/ep",
           "setup us", "close us", "threads", "bad");
    for (int k = 0; k < K_N; k++) {
        if (!on[k])
            continue;
        int n = k == K_XUDP || k == K_SUDP ? nudp : 2 * ntcp;
        int sk = k == K_XUDP ? K_SUDP : k == K_XTCP ? K_STCP : k;
        double m = median(mps[k], reps), s = on[sk] ? median(mps[sk], reps) : 0;
        printf("%-9s %6d %9.0f %6.2f %6.2f %11.0f %10.0f %12.0f %6.2f %8.1f %8.1f %7.0f %4lld\n",
               kind_name[k], n, m, m * msg_size / 1e6, s > 0 ? m / s : 0, median(ro[k], reps),
               median(rr[k], reps), median(so[k], reps), median(fd[k], reps),
               median(su[k], reps), median(cu[k], reps), median(th[k], reps), bad[k]);
        if (cf)
            fprintf(cf, "%s,%d,%.0f,%.3f,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.0f,%lld\n", kind_name[k],
                    n, m, m * msg_size / 1e6, median(ro[k], reps), median(rr[k], reps),
                    median(so[k], reps), median(fd[k], reps), median(su[k], reps),
                    median(cu[k], reps), median(th[k], reps), bad[k]);
    }
    if (cf)
        fclose(cf);
    return 0;
}
