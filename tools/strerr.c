/* SPDX-License-Identifier: MIT */
/*
 * strerr.c -- the STREAMS error logger (strerr(1M)).
 *
 *   ustreams strerr [-d DIR] [-n COUNT] [-t SECONDS] [--demo]
 *
 * Opens /dev/streams/log, makes the stream the error logger (I_ERRLOG; one
 * per user: it receives the error messages of every ustreams process of the
 * user, docs/ADMIN.md "Logging") and appends each message, one line in
 * Solaris' format (logtool.h)
 *   SEQ HH:MM:SS TICKS FNT MID SID TEXT
 * to the daily file DIR/error.MM-DD, MM-DD the month and day of the message.
 * DIR: -d DIR; else /var/adm/streams, as the man page says, when it is a
 * directory this user may write; else the user's runtime directory
 * ($XDG_RUNTIME_DIR/ustreams or /tmp/ustreams-UID, src/core/rundir.c).  The
 * file is made 0600; an existing one is used only if it is a regular file of
 * this user (never through a symbolic link).  Solaris' strerr mails root a
 * message flagged SL_NOTIFY; this one mails nothing (the N flag is in the
 * line).  Prints where it logs on stderr once, then nothing.
 * Runs until interrupted, or until COUNT messages (-n) or SECONDS (-t) --
 * ustreams extensions, as are -d and --demo (logtool.h).
 * Exit status: 0; 1 for a bad argument (the message says which), or when
 * the open, the ioctl (EBUSY: another error logger of the user), a read or
 * the log file failed.
 */
#include <limits.h>
#include <sys/stat.h>

#include "logtool.h"
#include "commands.h"
#include "rundir.h"

#define STRERR_SYSDIR "/var/adm/streams"

void ust_usage_strerr(FILE *f)
{
    fprintf(f,
            "usage: ustreams strerr [-d DIR] [-n COUNT] [-t SECONDS] [--demo]\n"
            "The STREAMS error logger: append the error messages (strlog with SL_ERROR)\n"
            "of every ustreams process of this user -- the log driver's error logger\n"
            "reaches them through the user's runtime directory -- to the daily file\n"
            "DIR/error.MM-DD (month and day of the message).  One error logger per user.\n"
            "  -d DIR          the directory; by default " STRERR_SYSDIR " when this user\n"
            "                  may write there, else the runtime directory\n"
            "                  ($XDG_RUNTIME_DIR/ustreams or /tmp/ustreams-UID)\n"
            "  -n COUNT        exit after COUNT messages\n"
            "  -t SECONDS      exit after SECONDS\n"
            "  --demo          also log demonstration messages (mid 42) from this process\n"
            "Each message, one line, as Solaris' strerr writes it:\n"
            "  SEQ HH:MM:SS TICKS FNT MID SID TEXT\n"
            "  SEQ error sequence number; TICKS log time in ticks, hexadecimal; the\n"
            "  flags F fatal, N notify, T also sent to the trace logger, '.' unset.\n"
            "No mail is sent for N (Solaris mails root).  Runs until interrupted.\n"
            "Exit status 0, or 1 (bad argument, or failure).\n");
}

/* The open log file and the day it is for. */
struct strerr_file {
    char dir[PATH_MAX];
    int fd;        /* -1: none open */
    int mon, mday; /* the day of the open file */
};

/* Open (creating) dir/error.MM-DD for the day of t.  Returns 0, or -1
 * (printed): not a regular file of ours, or the open failed. */
static int strerr_open(struct strerr_file *sf, time_t t)
{
    char path[PATH_MAX + 32];
    struct tm tm;
    struct stat st;
    int fd;

    if (localtime_r(&t, &tm) == NULL)
        memset(&tm, 0, sizeof(tm));
    if (sf->fd >= 0 && tm.tm_mon == sf->mon && tm.tm_mday == sf->mday)
        return 0;
    snprintf(path, sizeof(path), "%s/error.%02d-%02d", sf->dir, tm.tm_mon + 1, tm.tm_mday);
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) {
        fprintf(stderr, "strerr: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        fprintf(stderr, "strerr: %s: not a regular file of this user: not used\n", path);
        close(fd);
        return -1;
    }
    if (sf->fd >= 0)
        close(sf->fd);
    sf->fd = fd;
    sf->mon = tm.tm_mon;
    sf->mday = tm.tm_mday;
    return 0;
}

/* The strerr sink: one write (O_APPEND) per line to the day's file. */
static int strerr_append(void *arg, const struct log_ctl *lc, const char *line)
{
    struct strerr_file *sf = arg;
    char buf[LOGMSGSZ + 160];
    int n = snprintf(buf, sizeof(buf), "%s\n", line);

    if (n < 0 || (size_t)n >= sizeof(buf)) /* cannot be: a line is < LOGMSGSZ + 128 */
        return -1;
    if (strerr_open(sf, (time_t)lc->ttime) != 0)
        return -1;
    if (write(sf->fd, buf, (size_t)n) != n) {
        fprintf(stderr, "strerr: write: %s\n", errno ? strerror(errno) : "short write");
        return -1;
    }
    return 0;
}

/* The default directory (see the top of the file).  Returns 0, or -1
 * (printed). */
static int strerr_default_dir(char *dir, size_t n)
{
    struct stat st;
    int err;

    if (lstat(STRERR_SYSDIR, &st) == 0 && S_ISDIR(st.st_mode) &&
        access(STRERR_SYSDIR, W_OK | X_OK) == 0) {
        snprintf(dir, n, "%s", STRERR_SYSDIR);
        return 0;
    }
    if ((err = ust_rundir(dir, n)) != 0) {
        fprintf(stderr, "strerr: no runtime directory (%s): give one with -d DIR\n",
                strerror(err));
        return -1;
    }
    return 0;
}

int ust_cmd_strerr(int argc, char **argv)
{
    struct logtool_opts o = {0, 0, 0};
    struct logtool_demo demo = {0};
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    struct strerr_file sf = {.fd = -1};
    const char *dir = NULL;
    int fd, rc;

    for (int i = 1; i < argc; i++) {
        int r = logtool_option("strerr", argc, argv, &i, &o);
        if (r < 0)
            return 1;
        if (r == 1)
            continue;
        if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
            dir = argv[++i];
            continue;
        }
        fprintf(stderr, "strerr: %s '%s' (see ustreams strerr --help)\n",
                strcmp(argv[i], "-d") == 0 ? "missing directory after"
                : argv[i][0] == '-'        ? "unknown option"
                                           : "takes no operand, got",
                argv[i]);
        return 1;
    }
    if (dir != NULL) {
        if (strlen(dir) >= sizeof(sf.dir)) {
            fprintf(stderr, "strerr: directory name too long\n");
            return 1;
        }
        snprintf(sf.dir, sizeof(sf.dir), "%s", dir);
    } else if (strerr_default_dir(sf.dir, sizeof(sf.dir)) != 0) {
        return 1;
    }
    fd = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "strerr: /dev/streams/log: %s\n", strerror(errno));
        return 1;
    }
    if (strm_ioctl(fd, I_STR, &sio) < 0) {
        fprintf(stderr, "strerr: I_ERRLOG: %s%s\n", strerror(errno),
                errno == EBUSY ? " (another error logger of this user runs)" : "");
        rc = 1;
    } else if (strerr_open(&sf, time(NULL)) != 0) {
        rc = 1;
    } else if (o.demo && logtool_demo_start(&demo, SL_ERROR) != 0) {
        fprintf(stderr, "strerr: cannot start the demonstration thread\n");
        rc = 1;
    } else {
        fprintf(stderr, "strerr: logging to %s/error.MM-DD\n", sf.dir);
        rc = logtool_run("strerr", fd, &o, 0, strerr_append, &sf);
    }
    logtool_demo_stop(&demo);
    strm_close(fd);
    if (sf.fd >= 0)
        close(sf.fd);
    return rc;
}
