/* SPDX-License-Identifier: MIT */
/*
 * xti_gro.c -- does UDP_GRO pay on udp's receive path? (docs/TPI.md "GSO
 * and GRO", bench/README.md "UDP GSO/GRO and the stream tests")
 *
 *   bench_xti_gro [-l SECONDS] [-m SIZE] [--gso|--plain] [--gro|--nogro]
 *
 * A child process sends SIZE-byte datagrams from a kernel socket to an XTI
 * /dev/udp endpoint of this process as fast as it can: --gso, runs of 64
 * as one UDP_SEGMENT sendmsg (what a GSO sender -- udp's drain, QUIC
 * stacks -- puts on the wire); --plain, 64 datagrams per sendmmsg.  This
 * process reads them with t_rcvudata for SECONDS, the provider's socket
 * with UDP_GRO on (--gro, as udp sets it) or off (--nogro, white box: the
 * option cleared on the provider's socket).  Prints one CSV line:
 *   mode,gro,size,received_per_s,receiver_cpu_ns_per_datagram
 * The receiver's CPU time counts every thread of this process (getrusage).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xti.h>

#include "drivers/udp.h"
#include "sd_chan.h"
#include "sthead.h"
#include "../tests/udp_gso_send.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The sender (child): runs of 64 datagrams of size bytes to to, forever. */
static void sender(const struct sockaddr_in *to, size_t size, int gso)
{
    static unsigned char buf[64 * 1024];
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0)
        _exit(1);
    memset(buf, 'x', sizeof(buf));
    for (;;) {
        if (gso) {
            size_t n = 64;
            while (n * size > 65507)
                n--;
            (void)udp_gso_send(s, to, buf, n * size, (uint16_t)size);
        } else {
            struct mmsghdr mh[64];
            struct iovec iov[64];
            for (int i = 0; i < 64; i++) {
                iov[i] = (struct iovec){.iov_base = buf + (size_t)i * 64, .iov_len = size};
                memset(&mh[i], 0, sizeof(mh[i]));
                mh[i].msg_hdr.msg_name = (void *)to;
                mh[i].msg_hdr.msg_namelen = sizeof(*to);
                mh[i].msg_hdr.msg_iov = &iov[i];
                mh[i].msg_hdr.msg_iovlen = 1;
            }
            (void)sendmmsg(s, mh, 64, 0);
        }
    }
}

int main(int argc, char **argv)
{
    double secs = 1;
    size_t size = 1024;
    int gso = 1, gro = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-l") == 0 && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
            size = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--gso") == 0)
            gso = 1;
        else if (strcmp(argv[i], "--plain") == 0)
            gso = 0;
        else if (strcmp(argv[i], "--gro") == 0)
            gro = 1;
        else if (strcmp(argv[i], "--nogro") == 0)
            gro = 0;
        else {
            fprintf(stderr, "usage: %s [-l SECONDS] [-m SIZE] [--gso|--plain] [--gro|--nogro]\n",
                    argv[0]);
            return 2;
        }
    }
    if (size == 0 || size > 8192)
        size = 1024;
    int fd = t_open("/dev/udp", O_RDWR, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct t_bind req = {.addr = {.buf = (char *)&a, .len = sizeof(a)}};
    struct t_bind ret = {.addr = {.buf = (char *)&a, .maxlen = sizeof(a)}};
    if (fd < 0 || t_bind(fd, &req, &ret) < 0) {
        fprintf(stderr, "bench_xti_gro: t_open/t_bind: t_errno %d\n", t_errno);
        return 1;
    }
    /* white box: the provider's socket (its option, its receive buffer) */
    struct stdata *sd = ust_sd_peek(fd);
    queue_t *rq = NULL;
    ust_lock(&sd->sd_lock);
    ust_sd_chan_of(sd, &rq);
    ust_unlock(&sd->sd_lock);
    struct udp_ep *ep = rq->q_ptr;
    pthread_mutex_lock(&ep->lk);
    int s = ep->fd, big = 4 << 20;
    pthread_mutex_unlock(&ep->lk);
    setsockopt(s, SOL_UDP, UDP_GRO, &gro, sizeof(gro));
    if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
        setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));

    pid_t pid = fork();
    if (pid == 0)
        sender(&a, size, gso);
    alarm((unsigned)secs + 10);
    static char buf[65536];
    struct t_unitdata ud;
    memset(&ud, 0, sizeof(ud));
    ud.udata.buf = buf;
    ud.udata.maxlen = sizeof(buf);
    long n = 0;
    int flags;
    /* warm up 0.1 s, then count */
    for (double t0 = now_s(); now_s() - t0 < 0.1;)
        t_rcvudata(fd, &ud, &flags);
    double t0 = now_s(), c0 = cpu_s(), t1 = t0;
    do {
        if (t_rcvudata(fd, &ud, &flags) == 0)
            n++;
    } while ((n & 63) != 0 || (t1 = now_s()) - t0 < secs);
    double c1 = cpu_s();
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    printf("%s,%s,%zu,%.0f,%.0f\n", gso ? "gso" : "plain", gro ? "gro" : "nogro", size,
           (double)n / (t1 - t0), (c1 - c0) * 1e9 / (double)n);
    t_close(fd);
    return 0;
}
