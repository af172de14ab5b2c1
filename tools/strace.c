/* SPDX-License-Identifier: MIT */
/*
 * strace.c -- print STREAMS trace messages (strace(1M)).
 *
 *   ustreams strace [-n COUNT] [-t SECONDS] [--demo] [mid sid level] ...
 *
 * Opens /dev/streams/log, makes the stream a trace logger (I_TRCLOG) with one
 * filter per "mid sid level" triple -- a number, or "all" for any module,
 * any sub-id, or every level (255) -- and prints every trace message it
 * selects: messages with that mid and sid whose level is at most the given
 * level.  Without triples every trace message is printed.  Output, one line
 * per message (ust_log_format):
 *   SEQ HH:MM:SS TICKS LEVEL FLAGS MID SID TEXT
 * Runs until interrupted, or until COUNT messages (-n) or SECONDS (-t).
 * The logger receives the trace messages of every process of this user
 * (root's too) that uses ustreams, not only its own (docs/ADMIN.md,
 * "Logging"); one trace logger at a time per user (EBUSY otherwise).
 * --demo also logs demonstration messages from a thread of this process
 * (see logtool.h).
 * Exit status: 0, 1 (open, ioctl or read failed), 2 (usage).
 */
#include <limits.h>

#include "logtool.h"
#include "commands.h"

void ust_usage_strace(FILE *f)
{
    fprintf(f, "usage: ustreams strace [-n COUNT] [-t SECONDS] [--demo] [mid sid level] ...\n");
    fprintf(f, "Prints the trace messages of every process of this user that uses ustreams\n"
               "(one trace logger per user at a time).\n");
}

/* A filter field: "all" gives all_value, else a number in [lo, hi]. */
static int parse_field(const char *s, long lo, long hi, long all_value, long *out)
{
    char *end;

    if (strcmp(s, "all") == 0) {
        *out = all_value;
        return 0;
    }
    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno || *end || end == s || *out < lo || *out > hi) {
        fprintf(stderr, "strace: bad value '%s'\n", s);
        return -1;
    }
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
        if (r < 0 || (r == 0 && argv[i][0] == '-' && argv[i][1] != '\0' &&
                      (argv[i][1] < '0' || argv[i][1] > '9'))) {
            ust_usage_strace(stderr);
            free(args);
            return 2;
        }
        if (r == 0)
            args[nargs++] = argv[i];
    }
    if (nargs % 3 != 0) {
        ust_usage_strace(stderr);
        free(args);
        return 2;
    }
    tids = calloc((size_t)(nargs ? nargs / 3 : 1), sizeof(*tids));
    if (tids == NULL) {
        free(args);
        return 1;
    }
    if (nargs == 0) {
        tids[ntids++] = (struct trace_ids){-1, -1, (char)-1};
    }
    for (int i = 0; i < nargs; i += 3) {
        long mid, sid, level;
        if (parse_field(args[i], -1, SHRT_MAX, -1, &mid) ||
            parse_field(args[i + 1], -1, SHRT_MAX, -1, &sid) ||
            parse_field(args[i + 2], 0, 255, 255, &level)) {
            ust_usage_strace(stderr);
            free(tids);
            free(args);
            return 2;
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
        fprintf(stderr, "strace: I_TRCLOG: %s\n", strerror(errno));
        rc = 1;
    } else if (o.demo && logtool_demo_start(&demo, SL_TRACE) != 0) {
        fprintf(stderr, "strace: cannot start the demonstration thread\n");
        rc = 1;
    } else {
        rc = logtool_run("strace", fd, &o);
    }
    logtool_demo_stop(&demo);
    strm_close(fd);
    free(tids);
    return rc;
}
