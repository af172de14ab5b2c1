/* SPDX-License-Identifier: MIT */
/*
 * strinfo.c -- show every queue of a stream, with its live counters.
 *
 *   ustreams strinfo [-P] [-s]
 *   ustreams strinfo [-p MODULE]... [-w COUNT] [-b BAND] [-a] [-s] DEVICE...
 *   ustreams strinfo --pipe [-p MODULE]... [-w COUNT] [-b BAND] [-a] [-s]
 *
 * Without DEVICE or --pipe (with or without -P): the streams that exist,
 * those of every ustreams process of the user (below, "-P"); nothing is
 * made for the purpose.  A ustreams stream lives in the process that made
 * it, so the tool's own process has none worth showing: the streams an
 * operator asks about are in the others.  When no process published any,
 * a line on stderr says so (exit 0).
 *
 * With DEVICE... or --pipe: a sample stream, made here on request, to see
 * how a stack of modules lays out.  Opens each DEVICE (a name as strm_open takes it, /dev/streams/echo), or
 * with --pipe makes a STREAMS pipe (strm_pipe); pushes the MODULEs in the
 * order given (the first ends up lowest); writes COUNT messages (default 3,
 * "strinfo N\n") to each stream -- on a pipe to its first end -- without
 * reading anything back, so that counts, queued messages and put calls
 * show; with -b BAND the messages go by putpmsg in that band instead of
 * write.  Then prints, for each stream (both ends of a pipe), what
 * ustreams_dump_stream() prints (-a: ustreams_dump_all(), every stream of
 * this process) -- after waiting (ustreams_quiesce, up to a second) for the
 * service procedures already scheduled to run -- and with -s the module table with counts, as scls -a
 * prints it, so that the counters of what strinfo did can be seen.
 *
 * Output (described in full in src/admin/strstat.c): per stream a line
 *   stream fd=N name=NAME flags=0xF<STR...> modules=N
 * then per queue pair, from the head down (a pipe: across the twist to the
 * other end's head, those pairs marked "far"), a line
 *   [i] head|module|driver|pipe NAME id=N [major=N] [opens=N closes=N]
 * and one line for its write queue ("wr") and one for its read queue ("rd"):
 *   wr count=N hiwat=N lowat=N minpsz=N maxpsz=N|INF msgs=N put=N srv=N flags=0xF<Q...>
 * followed by its bands ("band B count=...") and first messages ("msg TYPE
 * band=B bytes=N").
 *
 * -P (--procs), and the default without DEVICE: every stream of every
 * ustreams process of the user that published itself (every process that
 * made a stream; src/admin/publish.c): for each, in the order of their
 * pids, a line "process PID COMMAND", then what ustreams_dump_all prints
 * there (and "pipes split_failed=N" where forks could not split N pipes);
 * with -s also its outstanding message blocks (a line "blocks
 * mblks=N dblks=N bytes=N allocs=N failures=N", ustreams_blockstats) and
 * its module table with counts.  Nothing is opened, pushed or written.
 *
 * Writes are non-blocking: a stream that is flow controlled takes fewer
 * messages, which the dump then shows as QFULL/QWANTW.
 * Exit status: 0; 1 when an open, push, write or the dump failed, or (-P)
 * the runtime directory was refused; 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <ustreams.h>
#include <ustreams_exec.h>
#include "commands.h"
#include "procs.h"

#define MAXSTREAMS 64
#define MAXPUSH 16

void ust_usage_strinfo(FILE *f)
{
    fprintf(f, "usage: ustreams strinfo [-P] [-s]\n"
               "       ustreams strinfo [-p MODULE]... [-w COUNT] [-b BAND] [-a] [-s] DEVICE...\n"
               "       ustreams strinfo --pipe [-p MODULE]... [-w COUNT] [-b BAND] [-a] [-s]\n"
               "  Without DEVICE or --pipe: every stream of every ustreams process of the\n"
               "  user (-P; -s adds their block counts and module tables); nothing is made.\n"
               "  With DEVICE... or --pipe: a sample stream made here, with the MODULEs\n"
               "  pushed and COUNT messages written (band BAND), shown, then closed.\n");
}

/* Parse a non-negative number no greater than max; -1 if it is not one. */
static long number(const char *s, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max)
        return -1;
    return v;
}

/* Push the modules and write the messages on fd (named name).  0 or 1. */
static int prepare(int fd, const char *name, char **mods, int nmods, long count, long band)
{
    for (int i = 0; i < nmods; i++)
        if (strm_ioctl(fd, I_PUSH, mods[i]) < 0) {
            fprintf(stderr, "strinfo: %s: I_PUSH %s: %s\n", name, mods[i],
                    errno == EINVAL ? "no such STREAMS module (ustreams scls lists them)"
                                    : strerror(errno));
            return 1;
        }
    for (long i = 0; i < count; i++) {
        char buf[32];
        int len = snprintf(buf, sizeof(buf), "strinfo %ld\n", i);
        int r;
        if (band >= 0) {
            struct strbuf data = {.len = len, .buf = buf};
            r = putpmsg(fd, NULL, &data, (int)band, MSG_BAND);
        } else {
            r = strm_write(fd, buf, (size_t)len) < 0 ? -1 : 0;
        }
        if (r < 0 && errno == EAGAIN)
            break; /* flow controlled: the dump shows it */
        if (r < 0) {
            fprintf(stderr, "strinfo: %s: write: %s\n", name, strerror(errno));
            return 1;
        }
    }
    return 0;
}

int ust_cmd_strinfo(int argc, char **argv)
{
    enum { OPT_PIPE = 256 };
    static const struct option longopts[] = {{"pipe", no_argument, NULL, OPT_PIPE},
                                             {"procs", no_argument, NULL, 'P'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    char *mods[MAXPUSH];
    int nmods = 0, pipe_mode = 0, all = 0, table = 0, procs = 0, setup = 0, c, rc = 0;
    long count = 3, band = -1;
    int fds[MAXSTREAMS], nfds = 0;

    while ((c = getopt_long(argc, argv, "p:w:b:ashP", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (nmods == MAXPUSH) {
                fprintf(stderr, "strinfo: at most %d modules\n", MAXPUSH);
                return 2;
            }
            mods[nmods++] = optarg;
            setup = 1;
            break;
        case 'w':
            if ((count = number(optarg, 1000000)) < 0) {
                fprintf(stderr, "strinfo: -w: not a count: %s\n", optarg);
                return 2;
            }
            setup = 1;
            break;
        case 'b':
            if ((band = number(optarg, 255)) < 0) {
                fprintf(stderr, "strinfo: -b: not a band (0..255): %s\n", optarg);
                return 2;
            }
            setup = 1;
            break;
        case 'a':
            all = 1;
            break;
        case 's':
            table = 1;
            break;
        case OPT_PIPE:
            pipe_mode = 1;
            break;
        case 'P':
            procs = 1;
            break;
        case 'h':
            ust_usage_strinfo(stdout);
            return 0;
        default:
            ust_usage_strinfo(stderr);
            return 2;
        }
    }
    if (!procs && !pipe_mode && optind == argc && !setup)
        procs = 1; /* no sample asked for: the streams that exist */
    if (procs) { /* every stream of every published process: nothing of our own */
        if (pipe_mode || setup || optind != argc) {
            fprintf(stderr, "strinfo: -P shows the streams that exist: it takes no DEVICE, "
                            "--pipe, -p, -w or -b\n");
            ust_usage_strinfo(stderr);
            return 2;
        }
        char req[64];
        snprintf(req, sizeof(req), "streams;blocks;modules %d",
                 USTREAMS_LS_LONG | USTREAMS_LS_COUNTS | USTREAMS_LS_REG);
        int n = ust_procs_query("strinfo", table ? req : "streams", stdout);
        if (n < 0)
            return 1;
        if (n == 0)
            fprintf(stderr, "strinfo: no ustreams process of this user has published its "
                            "streams (each does once it makes one, unless USTREAMS_PUBLISH=0)\n");
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (!pipe_mode && optind == argc) {
        fprintf(stderr, "strinfo: -p, -w and -b set up a sample stream: name a DEVICE or "
                        "--pipe\n");
        ust_usage_strinfo(stderr);
        return 2;
    }
    if ((pipe_mode && optind != argc) || (!pipe_mode && optind == argc) ||
        argc - optind > MAXSTREAMS) {
        ust_usage_strinfo(stderr);
        return 2;
    }

    if (pipe_mode) {
        if (strm_pipe(fds) < 0) {
            fprintf(stderr, "strinfo: pipe: %s\n", strerror(errno));
            return 1;
        }
        nfds = 2;
        for (int i = 0; i < 2; i++)
            strm_fcntl(fds[i], F_SETFL, O_RDWR | O_NONBLOCK);
        rc = prepare(fds[0], "pipe", mods, nmods, count, band);
    } else {
        for (int i = optind; i < argc && rc == 0; i++) {
            int fd = strm_open(argv[i], O_RDWR | O_NONBLOCK);
            if (fd < 0) {
                fprintf(stderr, "strinfo: %s: %s\n", argv[i], strerror(errno));
                rc = 1;
                break;
            }
            fds[nfds++] = fd;
            rc = prepare(fd, argv[i], mods, nmods, count, band);
        }
    }

    if (rc == 0) {
        ustreams_quiesce(1000); /* let scheduled service procedures run first */
        if (all) {
            if (ustreams_dump_all(stdout) < 0) {
                fprintf(stderr, "strinfo: dump: %s\n", strerror(errno));
                rc = 1;
            }
        } else {
            for (int i = 0; i < nfds && rc == 0; i++)
                if (ustreams_dump_stream(fds[i], stdout) < 0) {
                    fprintf(stderr, "strinfo: dump: %s\n", strerror(errno));
                    rc = 1;
                }
        }
    }
    if (rc == 0 && table && ustreams_print_modules(stdout, USTREAMS_LS_LONG | USTREAMS_LS_COUNTS |
                                                               USTREAMS_LS_REG,
                                                   NULL, 0) < 0) {
        fprintf(stderr, "strinfo: %s\n", strerror(errno));
        rc = 1;
    }
    for (int i = 0; i < nfds; i++)
        strm_close(fds[i]);
    return rc;
}
