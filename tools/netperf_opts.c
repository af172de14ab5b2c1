/* SPDX-License-Identifier: MIT */
/*
 * netperf_opts.c -- the options of `ustreams netperf` (tools/netperf.c): the
 * synopsis and the parsing, with netperf's letters where netperf has them
 * (-t, -l, -i MAX,MIN, -I LEVEL,WIDTH, and after "--" -m, -M, -r, -s, -S,
 * -D, -X).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "commands.h"
#include "netperf.h"

#define UDP_MAX 65507 /* largest UDP payload over IPv4 (and the cap on IPv6, see below) */
#define TCP_MAX (1 << 20)

const char *const np_test_names[4] = {"UDP_STREAM", "UDP_RR", "TCP_STREAM", "TCP_RR"};

/* ---------------------------------------------------------------- options */

void ust_usage_netperf(FILE *f)
{
    fprintf(f,
            "usage: ustreams netperf [-t TEST] [--api xti|sock] [-l SECONDS] [-i MAX[,MIN]]\n"
            "                        [-I LEVEL[,WIDTH]] [-4|-6] [--one-process|--procs] [--csv]\n"
            "                        [-v] [--warmup SECONDS] [--] [-m SIZE] [-M SIZE] [-r REQ[,RESP]]\n"
            "                        [-s BUFFER] [-S BUFFER] [-D] [-X LOCAL[,REMOTE]]\n"
            "  TEST: UDP_STREAM (default), UDP_RR, TCP_STREAM, TCP_RR, on 127.0.0.1 (-6: ::1)\n"
            "  client (netperf) and server (netserver) are two processes (--procs; the\n"
            "     default but with -X); --one-process: two threads of this process\n"
            "  --api xti (default): libxnet on /dev/udp, /dev/tcp; sock: kernel sockets\n"
            "  -l SECONDS the length of the test (default 10), as netperf's -l; with -i MAX\n"
            "     of each iteration: the run then takes up to MAX x SECONDS\n"
            "  -i MAX[,MIN] confidence iterations (default 1: no interval; -I alone: 10,3)\n"
            "  -I LEVEL[,WIDTH] stop when the LEVEL %% (95 or 99) confidence interval is\n"
            "     within +-WIDTH/2 %% of the mean (default 99,5)\n"
            "  test options (netperf puts them after --; here before or after it):\n"
            "  -m SIZE bytes per send (default 1024; RR: request and response, default 1)\n"
            "  -M SIZE bytes per receive in the STREAM tests (default 65536)\n"
            "  -r REQ[,RESP] RR request and response sizes\n"
            "  -s BUFFER send and receive buffer bytes of the client, both APIs (default\n"
            "     131072; 0: the system's); -S BUFFER the server's (default: as -s)\n"
            "  -D no delay: TCP_NODELAY (sockets), INET_TCP TCP_NODELAY (XTI), both ends\n"
            "  -X LOCAL[,REMOTE] XTI devices of client and server (e.g. /dev/ticotsord),\n"
            "     bound where the provider chooses; --xti-dev DEV is -X DEV; one process\n"
            "     unless --procs (the loopback transports are in-process)\n"
            "  CSV and report: system calls per transaction (STREAM: per message) of\n"
            "     each side, counted with perf_event_open (raw_syscalls:sys_enter)\n"
            "  exit: 0 measured, 1 failed, 2 bad options, 3 transport not available\n");
}

static int bad(const char *what, const char *s)
{
    fprintf(stderr, "netperf: bad %s '%s'\n", what, s);
    return -1;
}

/* Parse a count with an optional K suffix; -1 if bad. */
static long long parse_count(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    return errno || *end || v < 0 || end == s ? -1 : v;
}

/* "A[,B]" into two numbers (b unchanged without ",B"); 0 or -1. */
static int parse_pair(const char *s, double *a, double *b)
{
    char *end;
    *a = strtod(s, &end);
    if (end == s)
        return -1;
    if (*end == ',') {
        const char *q = end + 1;
        *b = strtod(q, &end);
        if (end == q)
            return -1;
    }
    return *end ? -1 : 0;
}

/* "REQ[,RESP]" sizes; 0 or -1. */
static int parse_sizes(char *s, struct np_opts *o)
{
    char *comma = strchr(s, ',');
    long long a, b;
    if (comma)
        *comma = '\0';
    a = parse_count(s);
    b = comma ? parse_count(comma + 1) : a;
    if (comma)
        *comma = ',';
    if (a < 1 || a > TCP_MAX || b < 1 || b > TCP_MAX)
        return -1;
    o->size = (size_t)a, o->rsp_size = (size_t)b;
    return 0;
}

enum { OPT_API = 256, OPT_CSV, OPT_WARMUP, OPT_XTI_DEV, OPT_ONE, OPT_PROCS };

/* What the options set explicitly, for the defaults that depend on them. */
struct given {
    int size, iter, conf, rbuf, mode;
};

/* One option c with its argument; 0, or -1 (the message printed). */
static int one_option(int c, char *arg, const char *opt, struct np_opts *o, struct given *g)
{
    long long v;
    double a, b;

    switch (c) {
    case 't': {
        size_t i;
        for (i = 0; i < 4 && strcmp(arg, np_test_names[i]) != 0; i++)
            ;
        if (i == 4)
            return bad("test (UDP_STREAM, UDP_RR, TCP_STREAM, TCP_RR)", arg);
        o->test = (enum np_test)i;
        return 0;
    }
    case OPT_API:
        if (strcmp(arg, "xti") == 0)
            o->api = &np_api_xti;
        else if (strcmp(arg, "sock") == 0)
            o->api = &np_api_sock;
        else
            return bad("--api (xti, sock)", arg);
        return 0;
    case 'm':
        if ((v = parse_count(arg)) < 1 || v > TCP_MAX)
            return bad("size", arg);
        o->size = o->rsp_size = (size_t)v, g->size = 1;
        return 0;
    case 'r':
        if (parse_sizes(arg, o) < 0)
            return bad("request,response sizes", arg);
        g->size = 1;
        return 0;
    case 'M':
        if ((v = parse_count(arg)) < 1 || v > TCP_MAX)
            return bad("receive size", arg);
        o->rsize = (size_t)v;
        return 0;
    case 'l':
        if (parse_pair(arg, &a, &a) < 0 || !(a >= 0.001 && a <= 3600))
            return bad("test length (seconds, 0.001 to 3600; netperf's transaction counts "
                       "are not supported)", arg);
        o->len = a;
        return 0;
    case 'i':
        a = o->max_iter, b = -1;
        if (parse_pair(arg, &a, &b) < 0 || a < 1 || a > NP_MAX_ITER || a != (int)a ||
            (b != -1 && (b < 1 || b > a || b != (int)b)))
            return bad("iterations (MAX[,MIN], MAX <= 30)", arg);
        o->max_iter = (int)a;
        o->min_iter = b == -1 ? (o->max_iter < 3 ? o->max_iter : 3) : (int)b;
        g->iter = 1;
        return 0;
    case 'I':
        a = o->level, b = o->width;
        if (parse_pair(arg, &a, &b) < 0 || !np_level_ok((int)a) || a != (int)a ||
            !(b > 0 && b <= 100))
            return bad("confidence (LEVEL 95 or 99, WIDTH 0..100 %)", arg);
        o->level = (int)a, o->width = b, g->conf = 1;
        return 0;
    case 's':
    case 'S':
        if ((v = parse_count(arg)) < 0 || v > (1 << 30))
            return bad("buffer size", arg);
        if (c == 's')
            o->buf = (int)v;
        else
            o->rbuf = (int)v, g->rbuf = 1;
        return 0;
    case 'D':
        o->nodelay = 1;
        return 0;
    case 'X':
    case OPT_XTI_DEV: {
        char *comma = strchr(arg, ',');
        if (comma)
            *comma = '\0';
        o->xti_dev = arg;
        o->xti_rdev = comma ? comma + 1 : arg;
        if (!*o->xti_dev || !*o->xti_rdev || (c == OPT_XTI_DEV && comma))
            return bad("XTI devices (LOCAL[,REMOTE])", arg);
        return 0;
    }
    case '4':
        o->family = AF_INET;
        return 0;
    case '6':
        o->family = AF_INET6;
        return 0;
    case 'v':
        o->verbose = 1;
        return 0;
    case OPT_CSV:
        o->csv = 1;
        return 0;
    case OPT_ONE:
    case OPT_PROCS:
        o->one_process = c == OPT_ONE, g->mode = 1;
        return 0;
    case OPT_WARMUP:
        if (parse_pair(arg, &a, &a) < 0 || !(a >= 0 && a <= 60))
            return bad("warm-up", arg);
        o->warmup = a;
        return 0;
    case ':':
        fprintf(stderr, "netperf: option '%s' needs an argument (ustreams netperf --help)\n",
                opt);
        return -1;
    default:
        fprintf(stderr, "netperf: unknown option '%s' (ustreams netperf --help lists them)\n",
                opt);
        return -1;
    }
}

/* 0, or -1 (the message printed). */
int np_parse_args(int argc, char **argv, struct np_opts *o)
{
    static const struct option longopts[] = {
        {"api", required_argument, NULL, OPT_API},   {"csv", no_argument, NULL, OPT_CSV},
        {"warmup", required_argument, NULL, OPT_WARMUP}, {"help", no_argument, NULL, 'h'},
        {"xti-dev", required_argument, NULL, OPT_XTI_DEV},
        {"one-process", no_argument, NULL, OPT_ONE},
        {"procs", no_argument, NULL, OPT_PROCS},
        {NULL, 0, NULL, 0},
    };
    struct given g = {0};
    char optname[3] = "-?";
    int c;

    *o = (struct np_opts){.test = UDP_STREAM, .api = &np_api_xti, .size = 1024,
                          .rsp_size = 1024, .rsize = 65536, .len = 10, .max_iter = 1,
                          .min_iter = 1, .level = 99, .width = 5, .buf = 131072,
                          .family = AF_INET, .warmup = 0.1};
    /* netperf's global options, then after "--" its test options: both sets
     * are one set here, so "--" only starts a second round of parsing. */
    for (;;) {
        optind = 0; /* glibc: start afresh on argv */
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:t:m:M:r:l:i:I:s:S:DX:46vh", longopts, NULL)) !=
               -1) {
            const char *opt = argv[optind - 1];
            if (c == '?' || c == ':') {
                if (optopt) {
                    optname[1] = (char)optopt;
                    opt = optname;
                }
            }
            if (c == 'h') {
                ust_usage_netperf(stdout);
                exit(0);
            }
            if (one_option(c, optarg, opt, o, &g) < 0)
                return -1;
        }
        if (optind < argc && optind > 1 && strcmp(argv[optind - 1], "--") == 0) {
            argc -= optind - 1;
            argv += optind - 1;
            continue;
        }
        break;
    }
    if (optind < argc) {
        fprintf(stderr, "netperf: unexpected argument '%s' (ustreams netperf --help)\n",
                argv[optind]);
        return -1;
    }
    if (!g.size && np_is_rr(o))
        o->size = o->rsp_size = 1;
    if (g.conf && !g.iter)
        o->max_iter = 10, o->min_iter = 3; /* -I alone asks for an interval (netperf) */
    if (!g.rbuf)
        o->rbuf = o->buf;
    if (o->xti_dev && o->api != &np_api_xti) {
        fprintf(stderr, "netperf: -X names XTI devices: it needs --api xti\n");
        return -1;
    }
    /* The loopback transports, what -X is mostly for, are in-process
     * (docs/TPI.md): another process cannot reach their endpoints.  So -X
     * runs in one process unless --procs says otherwise. */
    if (o->xti_dev && !g.mode)
        o->one_process = 1;
    if (o->xti_dev && o->one_process && strcmp(o->xti_dev, o->xti_rdev) != 0) {
        fprintf(stderr, "netperf: -X %s,%s: two devices need two processes "
                "(--procs)\n", o->xti_dev, o->xti_rdev);
        return -1;
    }
    /* 65507 on IPv6 too, though its datagrams hold 65527: libxnet checks a
     * send against the TSDU size t_open reported for the unbound endpoint
     * (65507), and both APIs must be asked the same. */
    if (np_is_udp(o) && (o->size > UDP_MAX || o->rsp_size > UDP_MAX)) {
        fprintf(stderr, "netperf: -m/-r %zu: a UDP datagram holds at most %d bytes here\n",
                o->size > UDP_MAX ? o->size : o->rsp_size, UDP_MAX);
        return -1;
    }
    return 0;
}


void np_loopback(int family, struct np_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_loopback;
        a->len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->len = sizeof(*s4);
    }
}
