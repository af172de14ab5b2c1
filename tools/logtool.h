/* SPDX-License-Identifier: MIT */
/*
 * logtool.h -- what the strace and strerr tools share: their common options,
 * the demonstration source of log messages, the line format of strace(1M)
 * and strerr(1M), and the loop that reads a logger stream and hands each
 * message to a sink.
 *
 * The logger stream receives the messages of every ustreams process of the
 * user (src/procs/xlog.c, docs/ADMIN.md "Logging").  --demo starts a thread
 * that logs a message every 10 ms ("demo message N", mid 42, sid N % 2,
 * level N % 4) so that the tools can be seen working on their own.
 *
 * Line formats, as Solaris' tools print them (docs/ADMIN.md "strace and
 * strerr"):
 *   strace:  SEQ HH:MM:SS TICKS LEVEL FNE MID SID TEXT
 *   strerr:  SEQ HH:MM:SS TICKS FNT MID SID TEXT
 * SEQ six decimal digits, the local time of the message, TICKS eight
 * hexadecimal digits (log_ctl.ltime), LEVEL two columns; the flag field is
 * three letters, '.' for one not set: F SL_FATAL, N SL_NOTIFY, then E
 * (strace: also sent to the error logger) or T (strerr: also sent to the
 * trace logger).  Text bytes that are not printable become '?': the text
 * comes from other processes and must not drive the terminal.
 */
#ifndef UST_LOGTOOL_H
#define UST_LOGTOOL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/strlog.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#define LOGTOOL_DEMO_MID 42

/* Common options. */
struct logtool_opts {
    long count;     /* -n: exit after this many messages (0: no limit) */
    double seconds; /* -t: exit after this long (0: no limit) */
    int demo;       /* --demo: log demonstration messages from a thread */
};

/*
 * logtool_option -- parse one of the common options at argv[*i] (-n COUNT,
 *   -t SECONDS, --demo), advancing *i past its argument.
 *   Returns 1 if it was one, 0 if it was not an option of ours, -1 for a bad
 *   value or a missing argument (a message saying which is printed).
 */
static int logtool_option(const char *prog, int argc, char **argv, int *i, struct logtool_opts *o)
{
    const char *a = argv[*i];
    char *end;

    if (strcmp(a, "--demo") == 0) {
        o->demo = 1;
        return 1;
    }
    if (strcmp(a, "-n") != 0 && strcmp(a, "-t") != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs an argument\n", prog, a);
        return -1;
    }
    (*i)++;
    errno = 0;
    if (a[1] == 'n') {
        o->count = strtol(argv[*i], &end, 10);
        if (errno || *end || end == argv[*i] || o->count <= 0) {
            fprintf(stderr, "%s: bad count '%s' for -n: a number above 0\n", prog, argv[*i]);
            return -1;
        }
    } else {
        o->seconds = strtod(argv[*i], &end);
        if (errno || *end || end == argv[*i] || !(o->seconds > 0)) {
            fprintf(stderr, "%s: bad time '%s' for -t: seconds above 0\n", prog, argv[*i]);
            return -1;
        }
    }
    return 1;
}

/* The demonstration source. */
struct logtool_demo {
    pthread_t thread;
    atomic_int stop;
    unsigned short flags; /* SL_TRACE or SL_ERROR */
    int running;
};

static void *logtool_demo_main(void *arg)
{
    struct logtool_demo *d = arg;
    struct timespec ts = {0, 10 * 1000000L};

    for (int n = 0; !atomic_load(&d->stop); n++) {
        strlog(LOGTOOL_DEMO_MID, (short)(n % 2), (char)(n % 4), d->flags, "demo message %d", n);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int logtool_demo_start(struct logtool_demo *d, unsigned short flags)
{
    atomic_store(&d->stop, 0);
    d->flags = flags;
    d->running = pthread_create(&d->thread, NULL, logtool_demo_main, d) == 0;
    return d->running ? 0 : -1;
}

static void logtool_demo_stop(struct logtool_demo *d)
{
    if (!d->running)
        return;
    atomic_store(&d->stop, 1);
    pthread_join(d->thread, NULL);
    d->running = 0;
}

static long long logtool_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The three-letter flag field: F, N, then last (E or T) when bit is set. */
static void logtool_flags(short flags, short lastbit, char last, char out[4])
{
    out[0] = (flags & SL_FATAL) ? 'F' : '.';
    out[1] = (flags & SL_NOTIFY) ? 'N' : '.';
    out[2] = (flags & lastbit) ? last : '.';
    out[3] = '\0';
}

/*
 * logtool_format -- one message as strace (trace != 0) or strerr prints it
 *   (the formats above), without a newline, into buf (size n, cut to fit).
 *   text: NUL-terminated.  Returns the length snprintf reports.
 */
static int logtool_format(const struct log_ctl *lc, const char *text, int trace, char *buf,
                          size_t n)
{
    char when[16], fl[4], clean[LOGMSGSZ];
    time_t t = (time_t)lc->ttime;
    struct tm tm;
    size_t i;

    if (localtime_r(&t, &tm) == NULL || strftime(when, sizeof(when), "%H:%M:%S", &tm) == 0)
        snprintf(when, sizeof(when), "??:??:??");
    for (i = 0; i < sizeof(clean) - 1 && text[i] != '\0'; i++) {
        unsigned char c = (unsigned char)text[i];
        clean[i] = (c >= 0x20 && c < 0x7f) || c == '\t' ? (char)c : '?';
    }
    clean[i] = '\0';
    if (trace) {
        logtool_flags(lc->flags, SL_ERROR, 'E', fl);
        return snprintf(buf, n, "%06d %s %08lx %2d %s %d %d %s", lc->seq_no, when,
                        (unsigned long)lc->ltime, (unsigned char)lc->level, fl, lc->mid, lc->sid,
                        clean);
    }
    logtool_flags(lc->flags, SL_TRACE, 'T', fl);
    return snprintf(buf, n, "%06d %s %08lx %s %d %d %s", lc->seq_no, when,
                    (unsigned long)lc->ltime, fl, lc->mid, lc->sid, clean);
}

/* Where the lines go: sink(arg, lc, line) returns 0, or -1 to stop (it has
 * printed why). */
typedef int (*logtool_sink)(void *arg, const struct log_ctl *lc, const char *line);

/*
 * logtool_run -- read log messages from fd, format each (logtool_format,
 *   trace or not) and hand the line to sink, until o->count messages or
 *   o->seconds passed.
 *   Returns 0, or 1 after a read error or a sink's failure (printed).
 */
static int logtool_run(const char *prog, int fd, const struct logtool_opts *o, int trace,
                       logtool_sink sink, void *arg)
{
    long long deadline = o->seconds > 0 ? logtool_now_ms() + (long long)(o->seconds * 1000) : 0;
    long seen = 0;

    while (o->count == 0 || seen < o->count) {
        struct log_ctl lc;
        char text[LOGMSGSZ + 1], line[LOGMSGSZ + 128];
        struct strbuf ctl = {sizeof(lc), 0, (char *)&lc};
        struct strbuf data = {LOGMSGSZ, 0, text};
        struct pollfd pfd = {fd, POLLIN, 0};
        int flags = 0, timeout = -1, rc;

        if (deadline) {
            long long left = deadline - logtool_now_ms();
            if (left <= 0)
                break;
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        rc = strm_poll(&pfd, 1, timeout);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
            return 1;
        }
        if (rc == 0)
            continue;
        rc = getmsg(fd, &ctl, &data, &flags);
        if (rc < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (rc < 0) {
            fprintf(stderr, "%s: getmsg: %s\n", prog, strerror(errno));
            return 1;
        }
        if (ctl.len != (int)sizeof(lc))
            continue; /* not a log message */
        text[data.len > 0 ? data.len : 0] = '\0';
        logtool_format(&lc, text, trace, line, sizeof(line));
        if (sink(arg, &lc, line) != 0)
            return 1;
        seen++;
    }
    return 0;
}

#endif /* UST_LOGTOOL_H */
