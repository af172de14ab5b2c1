/* SPDX-License-Identifier: MIT */
/*
 * netperf_opts.c -- the options of `ustreams netperf` (tools/netperf.c): the
 * synopsis and the parsing, with netperf's letters where netperf has them
 * (-t, -l, -i MAX,MIN, -I LEVEL,WIDTH, -m, -s).
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
            "usage: ustreams netperf [-t TEST] [--api xti|sock] [-m SIZE] [-l SECONDS]\n"
            "                        [-i MAX[,MIN]] [-I LEVEL[,WIDTH]] [-s BUFFER] [-4|-6]\n"
            "                        [--warmup SECONDS] [--csv] [-v] [--xti-dev DEV]\n"
            "  TEST: UDP_STREAM (default), UDP_RR, TCP_STREAM, TCP_RR, on 127.0.0.1 (-6: ::1)\n"
            "  --api xti (default): libxnet on /dev/udp, /dev/tcp; sock: kernel sockets\n"
            "  -m SIZE message (RR: request and response) size, default 1024 (RR: 1)\n"
            "  -l SECONDS one iteration (default 0.3); -i MAX[,MIN] iterations (default 10,3)\n"
            "  -I LEVEL[,WIDTH] stop when the LEVEL %% (95 or 99) confidence interval is\n"
            "     within +-WIDTH/2 %% of the mean (default 99,5)\n"
            "  -s BUFFER send and receive buffer bytes, both APIs (default 131072; 0: system's)\n"
            "  --xti-dev DEV XTI over DEV (e.g. /dev/ticotsord), bound where it chooses\n"
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

enum { OPT_API = 256, OPT_CSV, OPT_WARMUP, OPT_XTI_DEV };

/* 0, or -1 (the message printed). */
int np_parse_args(int argc, char **argv, struct np_opts *o)
{
    static const struct option longopts[] = {
        {"api", required_argument, NULL, OPT_API},   {"csv", no_argument, NULL, OPT_CSV},
        {"warmup", required_argument, NULL, OPT_WARMUP}, {"help", no_argument, NULL, 'h'},
        {"xti-dev", required_argument, NULL, OPT_XTI_DEV},
        {NULL, 0, NULL, 0},
    };
    long long v;
    double a, b;
    int c, size_set = 0;

    *o = (struct np_opts){.test = UDP_STREAM, .api = &np_api_xti, .size = 1024, .len = 0.3,
                       .max_iter = 10, .min_iter = 3, .level = 99, .width = 5,
                       .buf = 131072, .family = AF_INET, .warmup = 0.1};
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:m:l:i:I:s:46vh", longopts, NULL)) != -1) {
        switch (c) {
        case 't': {
            size_t i;
            for (i = 0; i < 4 && strcmp(optarg, np_test_names[i]) != 0; i++)
                ;
            if (i == 4)
                return bad("test (UDP_STREAM, UDP_RR, TCP_STREAM, TCP_RR)", optarg);
            o->test = (enum np_test)i;
            break;
        }
        case OPT_API:
            if (strcmp(optarg, "xti") == 0)
                o->api = &np_api_xti;
            else if (strcmp(optarg, "sock") == 0)
                o->api = &np_api_sock;
            else
                return bad("--api (xti, sock)", optarg);
            break;
        case 'm':
            if ((v = parse_count(optarg)) < 1 || v > TCP_MAX)
                return bad("size", optarg);
            o->size = (size_t)v, size_set = 1;
            break;
        case 'l':
            if (parse_pair(optarg, &a, &a) < 0 || !(a >= 0.001 && a <= 3600))
                return bad("iteration length", optarg);
            o->len = a;
            break;
        case 'i':
            a = o->max_iter, b = -1;
            if (parse_pair(optarg, &a, &b) < 0 || a < 1 || a > NP_MAX_ITER || a != (int)a ||
                (b != -1 && (b < 1 || b > a || b != (int)b)))
                return bad("iterations (MAX[,MIN], MAX <= 30)", optarg);
            o->max_iter = (int)a;
            o->min_iter = b == -1 ? (o->max_iter < 3 ? o->max_iter : 3) : (int)b;
            break;
        case 'I':
            a = o->level, b = o->width;
            if (parse_pair(optarg, &a, &b) < 0 || !np_level_ok((int)a) || a != (int)a ||
                !(b > 0 && b <= 100))
                return bad("confidence (LEVEL 95 or 99, WIDTH 0..100 %)", optarg);
            o->level = (int)a, o->width = b;
            break;
        case 's':
            if ((v = parse_count(optarg)) < 0 || v > (1 << 30))
                return bad("buffer size", optarg);
            o->buf = (int)v;
            break;
        case '4':
            o->family = AF_INET;
            break;
        case '6':
            o->family = AF_INET6;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case OPT_CSV:
            o->csv = 1;
            break;
        case OPT_WARMUP:
            if (parse_pair(optarg, &a, &a) < 0 || !(a >= 0 && a <= 60))
                return bad("warm-up", optarg);
            o->warmup = a;
            break;
        case OPT_XTI_DEV:
            o->xti_dev = optarg;
            break;
        case 'h':
            ust_usage_netperf(stdout);
            exit(0);
        default:
            ust_usage_netperf(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "netperf: unexpected argument '%s'\n", argv[optind]);
        ust_usage_netperf(stderr);
        return -1;
    }
    if (!size_set && np_is_rr(o))
        o->size = 1;
    /* 65507 on IPv6 too, though its datagrams hold 65527: libxnet checks a
     * send against the TSDU size t_open reported for the unbound endpoint
     * (65507), and both APIs must be asked the same. */
    if (np_is_udp(o) && o->size > UDP_MAX) {
        fprintf(stderr, "netperf: -m %zu: a UDP datagram holds at most %d bytes here\n",
                o->size, UDP_MAX);
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
