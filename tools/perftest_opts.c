/* SPDX-License-Identifier: MIT */
/*
 * perftest_opts.c -- `ustreams perftest`'s command line: the usage text and
 * the options, each refusal naming the argument it refuses (exit 2).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustreams_exec.h>

#include "sthead.h"
#include "commands.h"
#include "perftest.h"
#include "perftest_run.h"

static long long parse_size(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024, end++;
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "perftest: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

/* A whole number 0..max for option what (iterations, push count): no
 * k/M suffix, no wrap on the int it is stored in.  Exits 2 naming the
 * argument. */
static long long parse_count(const char *s, const char *what, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max) {
        fprintf(stderr, "perftest: bad %s '%s' (a whole number, 0 to %lld)\n", what, s, max);
        exit(2);
    }
    return v;
}

static double parse_secs(const char *s, const char *what)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v >= 0) || v > 1e6) {
        fprintf(stderr, "perftest: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

enum {
    OPT_HIWAT = 256,
    OPT_LOWAT,
    OPT_CSV,
    OPT_PEER,
    OPT_SCALE,
    OPT_WARMUP,
    OPT_NOCACHE,
    OPT_PROCS
};

void ust_perftest_parse_args(int argc, char **argv, struct ust_perftest_opts *o,
                             const struct ust_perftest_impl *const *impls, size_t nimpls)
{
    static const struct option longopts[] = {
        {"hiwat", required_argument, NULL, OPT_HIWAT},
        {"lowat", required_argument, NULL, OPT_LOWAT},
        {"csv", no_argument, NULL, OPT_CSV},
        {"peer", required_argument, NULL, OPT_PEER},
        {"scale", no_argument, NULL, OPT_SCALE},
        {"procs", no_argument, NULL, OPT_PROCS},
        {"no-cache", no_argument, NULL, OPT_NOCACHE},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct ust_perftest_opts){.impl = impls[0], .size = 64, .ttime = 2, .iters = 1,
                                    .warmup = 0.05, .module = "nullmod", .hiwat = -1,
                                    .lowat = -1};
    int c;
    while ((c = getopt_long(argc, argv, "s:t:i:HMwFp:m:rbnqh", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->size = (size_t)parse_size(optarg, "size");
            break;
        case 't':
            o->ttime = parse_secs(optarg, "test time");
            break;
        case 'i':
            o->iters = (int)parse_count(optarg, "iterations", INT_MAX);
            break;
        case 'H':
            o->hold = 1;
            break;
        case 'M':
            o->mread = 1;
            break;
        case 'w':
            o->rfill = 1;
            break;
        case 'F':
            o->full = 1;
            break;
        case 'p':
            o->npush = (int)parse_count(optarg, "push count", UST_NSTRPUSH);
            break;
        case 'm':
            o->module = optarg;
            break;
        case 'r':
            o->rw = 1;
            break;
        case 'b':
            o->nonblock = 0;
            break;
        case 'n':
            o->nonblock = 1;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case OPT_HIWAT:
            o->hiwat = (long)parse_size(optarg, "hiwat");
            break;
        case OPT_LOWAT:
            o->lowat = (long)parse_size(optarg, "lowat");
            break;
        case OPT_CSV:
            o->csv = 1;
            break;
        case OPT_PEER: {
            o->impl = NULL;
            for (size_t i = 0; i < nimpls; i++)
                if (strcmp(optarg, impls[i]->name) == 0)
                    o->impl = impls[i];
            if (!o->impl) {
                fprintf(stderr, "perftest: unknown --peer '%s'\n", optarg);
                ust_usage_perftest(stderr);
                exit(2);
            }
            break;
        }
        case OPT_SCALE:
            o->scale = 1;
            break;
        case OPT_PROCS:
            o->procs = 1;
            break;
        case OPT_NOCACHE: /* measure the share of the per-thread block caches */
            ustreams_set_block_cache(0);
            break;
        case OPT_WARMUP:
            o->warmup = parse_secs(optarg, "warmup");
            break;
        case 'h':
            ust_usage_perftest(stdout);
            exit(0);
        default:
            ust_usage_perftest(stderr);
            exit(2);
        }
    }
    /* Each refusal names the argument, then the synopsis follows. */
    const char *bad = NULL;
    char why[160];
    if (optind != argc) {
        snprintf(why, sizeof(why), "unexpected argument '%s'", argv[optind]);
        bad = why;
    } else if (o->size < 1 || o->size > UST_STRMSGSZ) {
        snprintf(why, sizeof(why), "-s %zu: the size must be 1 to %d bytes", o->size,
                 (int)UST_STRMSGSZ);
        bad = why;
    } else if (o->iters < 1) {
        snprintf(why, sizeof(why), "-i %d: at least one iteration", o->iters);
        bad = why;
    } else if (o->ttime <= 0) {
        snprintf(why, sizeof(why), "-t %g: the test time must be more than 0 seconds", o->ttime);
        bad = why;
    }
    if (bad) {
        fprintf(stderr, "perftest: %s\n", bad);
        ust_usage_perftest(stderr);
        exit(2);
    }
    if (!o->impl->streams && (o->hold || o->mread || o->rfill || o->npush || o->lowat >= 0)) {
        fprintf(stderr, "perftest: -H, -M, -w, -p and --lowat need a ustreams pipe\n");
        exit(2);
    }
    if (o->procs && o->impl->one_process) {
        fprintf(stderr,
                "perftest: --procs: --peer %s cannot cross processes (its pipe exists only "
                "within one process)\n",
                o->impl->name);
        exit(2);
    }
    if (!o->impl->streams && o->hiwat > 0 && !o->impl->buffers) {
        fprintf(stderr, "perftest: --hiwat: %s has no buffer size to set\n", o->impl->name);
        exit(2);
    }
}
