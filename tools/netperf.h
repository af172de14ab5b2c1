/* SPDX-License-Identifier: MIT */
/*
 * netperf.h -- what `ustreams netperf` (tools/netperf.c) needs of a transport
 * API: XTI through libxnet over "/dev/udp" and "/dev/tcp"
 * (tools/netperf_xti.c) and the kernel's sockets (tools/netperf_sock.c), and
 * the confidence interval of its repetitions (tools/netperf_stats.c).
 *
 * The loops of netperf see an API only through these calls, on integers the
 * API hands out as endpoints: ustreams descriptors for XTI, kernel
 * descriptors for sockets.  Every call is made by one thread at a time per
 * endpoint, and an endpoint is used by one thread at a time.
 */
#ifndef UST_TOOLS_NETPERF_H
#define UST_TOOLS_NETPERF_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Exit statuses of `ustreams netperf`. */
#define NP_EXIT_OK 0
#define NP_EXIT_FAIL 1        /* the test failed: an API call, a stall, a short transfer */
#define NP_EXIT_USAGE 2       /* bad options */
#define NP_EXIT_UNAVAILABLE 3 /* the transport cannot be opened (e.g. no "/dev/tcp") */

/* An Internet address: struct sockaddr_in or sockaddr_in6 (XTI's netbuf
 * carries the same structure, per the XTI Internet appendix). */
struct np_addr {
    struct sockaddr_storage ss;
    socklen_t len;
};

/* The length of an error message of an API. */
#define NP_ERRLEN 200

/*
 * One transport API.  All calls block (the endpoints are in blocking mode).
 * Calls returning int give 0 (or a count) on success and -1 on failure, with
 * the reason in err (NP_ERRLEN bytes) where the call takes one; the data
 * calls, which are on the hot path, take none: after a failure the same
 * thread calls last_error at once (t_errno and errno are per thread).
 *
 * Set-up calls return NP_EXIT_UNAVAILABLE instead of -1 when the transport
 * itself cannot be opened (t_open fails: the provider is not in this build);
 * err then holds the reason.
 */
struct np_api {
    const char *name; /* the --api name: "xti", "sock" */
    /* Datagrams (UDP). */
    /* A datagram endpoint bound to the loopback address of family, port
     * chosen by the system; its address in *bound.  buf > 0: the send and
     * receive buffer sizes (XTI_SNDBUF/XTI_RCVBUF, SO_SNDBUF/SO_RCVBUF). */
    int (*dg_open)(int family, int buf, int *ep, struct np_addr *bound, char *err);
    /* Send len bytes (0 allowed) to `to`; 0 or -1. */
    int (*dg_send)(int ep, const void *data, size_t len, const struct np_addr *to);
    /* Receive one datagram into data (at most len bytes); its length, or -1.
     * Errors reported for earlier sends (ICMP) are consumed and skipped. */
    ssize_t (*dg_recv)(int ep, void *data, size_t len);
    /* Connections (TCP). */
    /* A listening endpoint on the loopback address of family, port chosen by
     * the system; its address in *bound. */
    int (*st_listen)(int family, int buf, int *ep, struct np_addr *bound, char *err);
    /* Accept one connection on the listening endpoint lep: the new
     * endpoint in *ep.  Called by a thread of its own while another thread
     * calls st_connect. */
    int (*st_accept)(int lep, int family, int buf, int *ep, char *err);
    /* A connection to `to`. */
    int (*st_connect)(int family, int buf, const struct np_addr *to, int *ep, char *err);
    /* Send all len bytes; 0 or -1. */
    int (*st_send)(int ep, const void *data, size_t len);
    /* Receive up to len bytes: the count, 0 when the peer released its
     * direction in order (the release is consumed), -1 on error (a
     * disconnect included). */
    ssize_t (*st_recv)(int ep, void *data, size_t len);
    /* Orderly release of the sending direction (t_sndrel, shutdown SHUT_WR). */
    int (*st_release)(int ep);
    /* Send without waiting to coalesce (netperf's -D): TCP_NODELAY with
     * setsockopt, or INET_TCP TCP_NODELAY T_YES with t_optmgmt, on a
     * connected endpoint.  0, or -1 with err. */
    int (*st_nodelay)(int ep, char *err);
    /* Close any endpoint. */
    void (*close)(int ep);
    /* The reason for the calling thread's last failed data call. */
    void (*last_error)(char *err);
};

extern const struct np_api np_api_xti;
extern const struct np_api np_api_sock;

/* -X DEV (--xti-dev): the XTI API of this process opens DEV instead of
 * "/dev/udp" or "/dev/tcp" and binds with no address, taking the one the
 * provider gives (for the loopback transports, /dev/ticlts and
 * /dev/ticotsord, whose addresses are not sockaddrs): the XTI code can then
 * be run where the Internet providers are not built.  Called before any
 * endpoint is made; each process of a run calls it with its own device of
 * the pair (-X LOCAL,REMOTE). */
void np_xti_use(const char *dev);

/* The statistics of the repetitions of one point (tools/netperf_stats.c). */
struct np_stats {
    int n;         /* samples */
    double mean;   /* their mean */
    double sd;     /* sample standard deviation (n - 1), 0 for n < 2 */
    double half;   /* half-width of the confidence interval of the mean, -1 for n < 2 */
    int met;       /* half <= width/2 * mean, with n >= 2 */
};

/* The mean and the confidence interval at level (95 or 99 percent, Student
 * t with n - 1 degrees of freedom) of x[0..n-1]; met says whether the
 * interval is within +-width/2 percent of the mean (netperf's -I LEVEL,WIDTH).
 * n <= NP_MAX_ITER. */
#define NP_MAX_ITER 30
void np_stats(const double *x, int n, int level, double width, struct np_stats *st);

/* Whether level is one np_stats knows (95 or 99). */
int np_level_ok(int level);

/* The tests, and the options of a run (tools/netperf_opts.c). */
enum np_test { UDP_STREAM, UDP_RR, TCP_STREAM, TCP_RR };
/* Their names, as -t takes them (tools/netperf_opts.c). */
extern const char *const np_test_names[4];

struct np_opts {
    enum np_test test;
    const struct np_api *api;
    size_t size;     /* -m: bytes per send (RR: the request, -r REQ) */
    size_t rsp_size; /* RR: the response (-r ,RESP; -m sets both) */
    size_t rsize;    /* -M: bytes per receive of the STREAM tests (default 65536) */
    double len;      /* -l: the test's length; with -i, of each iteration */
    int max_iter;    /* -i MAX (default 1: no interval, as netperf) */
    int min_iter;    /* -i ,MIN */
    int level;       /* -I LEVEL */
    double width;    /* -I ,WIDTH: percent, the whole interval */
    int buf;         /* -s: the client's send and receive buffers */
    int rbuf;        /* -S: the server's (default: as -s) */
    int nodelay;     /* -D: TCP_NODELAY on both ends of a TCP test */
    int family;      /* -4/-6 */
    double warmup;
    int csv, verbose;
    int one_process; /* --one-process: client and server threads of one process */
    const char *xti_dev;    /* -X LOCAL: the client's XTI device, or NULL */
    const char *xti_rdev;   /* -X ,REMOTE: the server's (default: LOCAL) */
};

static inline int np_is_rr(const struct np_opts *o)
{
    return o->test == UDP_RR || o->test == TCP_RR;
}

static inline int np_is_udp(const struct np_opts *o)
{
    return o->test == UDP_STREAM || o->test == UDP_RR;
}

/* Parse the options of `ustreams netperf` into o (--help prints the usage
 * and exits 0).  0, or -1 with the message printed. */
int np_parse_args(int argc, char **argv, struct np_opts *o);
/* The loopback address of family (127.0.0.1 or ::1), port 0, in *a. */
void np_loopback(int family, struct np_addr *a);

#endif /* UST_TOOLS_NETPERF_H */
