/* SPDX-License-Identifier: MIT */
/*
 * strerr.c -- print STREAMS error messages (strerr(1M)).
 *
 *   ustreams strerr [-n COUNT] [-t SECONDS] [--demo]
 *
 * Opens /dev/streams/log, makes the stream the error logger (I_ERRLOG; only
 * one stream of this user may be: it receives the error messages of every
 * process of the user, docs/ADMIN.md "Logging") and prints each, one line
 * (ust_log_format):
 *   SEQ HH:MM:SS TICKS LEVEL FLAGS MID SID TEXT
 * FLAGS shows T for a message also sent to the trace loggers, F for
 * SL_FATAL and N for SL_NOTIFY.  Unlike SVR4's strerr, which appends to
 * /var/adm/streams/error.MM-DD and mails the administrator on SL_NOTIFY,
 * this one writes to standard output (redirect it to keep a log).
 * Runs until interrupted, or until COUNT messages (-n) or SECONDS (-t).
 * --demo logs demonstration error messages from a thread (see logtool.h).
 * Exit status: 0, 1 (open, ioctl or read failed; EBUSY when another error
 * logger exists), 2 (usage).
 */
#include "logtool.h"
#include "commands.h"

void ust_usage_strerr(FILE *f)
{
    fprintf(f, "usage: ustreams strerr [-n COUNT] [-t SECONDS] [--demo]\n");
    fprintf(f, "Prints the error messages of every process of this user that uses ustreams\n"
               "(one error logger per user at a time).\n");
}

int ust_cmd_strerr(int argc, char **argv)
{
    struct logtool_opts o = {0, 0, 0};
    struct logtool_demo demo = {0};
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    int fd, rc;

    for (int i = 1; i < argc; i++) {
        if (logtool_option("strerr", argc, argv, &i, &o) != 1) {
            ust_usage_strerr(stderr);
            return 2;
        }
    }
    fd = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "strerr: /dev/streams/log: %s\n", strerror(errno));
        return 1;
    }
    if (strm_ioctl(fd, I_STR, &sio) < 0) {
        fprintf(stderr, "strerr: I_ERRLOG: %s\n", strerror(errno));
        rc = 1;
    } else if (o.demo && logtool_demo_start(&demo, SL_ERROR) != 0) {
        fprintf(stderr, "strerr: cannot start the demonstration thread\n");
        rc = 1;
    } else {
        rc = logtool_run("strerr", fd, &o);
    }
    logtool_demo_stop(&demo);
    strm_close(fd);
    return rc;
}
