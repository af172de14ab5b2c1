/* SPDX-License-Identifier: MIT */
/*
 * strace.c -- print STREAMS trace messages (strace(1M)).
 *
 *   ustreams strace [-n COUNT] [-t SECONDS] [--demo] [mid sid level] ...
 *
 * Opens /dev/streams/log, makes the stream the trace logger (I_TRCLOG) with
 * one filter per "mid sid level" triple -- a number, or "all" for no
 * restriction of that field -- and prints every trace message a filter
 * selects: that mid and sid, a level at most the given one.  Without
 * arguments it prints every trace message, as "all all all" would
 * (strace(1M): "strace without arguments writes all STREAMS event trace
 * messages").  The logger receives the trace messages of every process of
 * this user that uses ustreams (through the runtime directory, docs/ADMIN.md
 * "Logging"); one trace logger per user at a time (EBUSY otherwise).
 * One line per message, Solaris' format (logtool.h):
 *   SEQ HH:MM:SS TICKS LEVEL FNE MID SID TEXT
 * Runs until interrupted, or until COUNT messages (-n) or SECONDS (-t) --
 * ustreams extensions, as is --demo (logtool.h).
 * Installed as `ustreams strace` only: a link named strace, made by the user
 * (docs/PROGRAMS.md), runs it too, and would hide strace(1) -- never made by
 * default.
 * Exit status: 0; 1 for a bad argument (the message says which), or when
 * the open, the ioctl or a read failed.
 */
#include <limits.h>

#include "logtool.h"
#include "commands.h"

void ust_usage_strace(FILE *f)
{
    fprintf(f,
            "usage: ustreams strace [-n COUNT] [-t SECONDS] [--demo] [mid sid level] ...\n"
            "Print the STREAMS trace messages (strlog with SL_TRACE) of every ustreams\n"
            "process of this user: the log driver's trace logger reaches them through\n"
            "the user's runtime directory ($XDG_RUNTIME_DIR/ustreams or /tmp/ustreams-UID).\n"
            "One trace logger per user at a time.\n"
            "  mid sid level   a filter triple: messages of module id mid, sub-id sid,\n"
            "                  with a level at most level (0-255); 'all' for any value.\n"
            "                  Several triples: a message selected by one is printed.\n"
            "                  No triple: every trace message ('all all all').\n"
            "  -n COUNT        exit after COUNT messages\n"
            "  -t SECONDS      exit after SECONDS\n"
            "  --demo          also log demonstration messages (mid 42) from this process\n"
            "Each message, one line, as Solaris' strace prints it:\n"
            "  SEQ HH:MM:SS TICKS LEVEL FNE MID SID TEXT\n"
            "  SEQ trace sequence number; TICKS log time in ticks, hexadecimal; the\n"
            "  flags F fatal, N notify, E also sent to the error logger, '.' unset.\n"
            "Runs until interrupted.  Exit status 0, or 1 (bad argument, or failure).\n");
}

/* A filter field: "all" gives all_value, else a number in [0, hi]; what
 * names the field in the message.  Returns 0, or -1 (printed). */
static int parse_field(const char *what, const char *s, long hi, long all_value, long *out)
{
    char *end;

    if (strcmp(s, "all") == 0) {
        *out = all_value;
        return 0;
    }
    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno || *end || end == s || *out < 0 || *out > hi) {
        fprintf(stderr, "strace: bad %s '%s': a number from 0 to %ld, or all\n", what, s, hi);
        return -1;
    }
    return 0;
}

/* The strace sink: stdout, flushed per line. */
static int strace_print(void *arg, const struct log_ctl *lc, const char *line)
{
    (void)arg;
    (void)lc;
    printf("%s\n", line);
    fflush(stdout);
    return 0;
}

int ust_cmd_strace(int argc, char **argv)
{
    struct logtool_opts o = {0, 0, 0};
    struct logtool_demo demo = {0};
    struct trace_ids *tids;
    struct strioctl sio;
    int ntids = 0, nargs = 0, fd, rc = 0;
    char **args = calloc((size_t)argc + 1, sizeof(*args));

    if (args == NULL)
        return 1;
    for (int i = 1; i < argc; i++) {
        int r = logtool_option("strace", argc, argv, &i, &o);
        if (r < 0) {
            free(args);
            return 1;
        }
        if (r == 0 && argv[i][0] == '-') {
            fprintf(stderr, "strace: unknown option '%s' (see ustreams strace --help)\n",
                    argv[i]);
            free(args);
            return 1;
        }
        if (r == 0)
            args[nargs++] = argv[i];
    }
    if (nargs % 3 != 0) {
        fprintf(stderr,
                "strace: the arguments come in triplets 'mid sid level': %d word%s given\n",
                nargs, nargs == 1 ? "" : "s");
        free(args);
        return 1;
    }
    tids = calloc((size_t)(nargs ? nargs / 3 : 1), sizeof(*tids));
    if (tids == NULL) {
        free(args);
        return 1;
    }
    if (nargs == 0)
        tids[ntids++] = (struct trace_ids){-1, -1, (char)-1}; /* all all all */
    for (int i = 0; i < nargs; i += 3) {
        long mid, sid, level;
        if (parse_field("mid", args[i], SHRT_MAX, -1, &mid) ||
            parse_field("sid", args[i + 1], SHRT_MAX, -1, &sid) ||
            parse_field("level", args[i + 2], 255, 255, &level)) {
            free(tids);
            free(args);
            return 1;
        }
        tids[ntids++] = (struct trace_ids){(short)mid, (short)sid, (char)level};
    }
    free(args);

    fd = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "strace: /dev/streams/log: %s\n", strerror(errno));
        free(tids);
        return 1;
    }
    sio = (struct strioctl){I_TRCLOG, 0, ntids * (int)sizeof(*tids), (char *)tids};
    if (strm_ioctl(fd, I_STR, &sio) < 0) {
        fprintf(stderr, "strace: I_TRCLOG: %s%s\n", strerror(errno),
                errno == EBUSY ? " (another trace logger of this user runs)" : "");
        rc = 1;
    } else if (o.demo && logtool_demo_start(&demo, SL_TRACE) != 0) {
        fprintf(stderr, "strace: cannot start the demonstration thread\n");
        rc = 1;
    } else {
        rc = logtool_run("strace", fd, &o, 1, strace_print, NULL);
    }
    logtool_demo_stop(&demo);
    strm_close(fd);
    free(tids);
    return rc;
}
