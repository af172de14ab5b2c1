/* SPDX-License-Identifier: MIT */
/*
 * log_util.h -- a private runtime directory for the log tests.
 *
 * The loggers of every process of a user meet in the user's runtime
 * directory (docs/ADMIN.md, "Logging": one logger per class, records sent
 * to it from other processes).  Tests running in parallel would take each
 * other's slots and receive each other's messages, so every log test calls
 * log_private_rundir() first thing in main, before the library makes any
 * stream: XDG_RUNTIME_DIR becomes a fresh mkdtemp directory (removed at
 * exit), so this test's processes (its fork children too) meet only each
 * other.
 */
#ifndef UST_TEST_LOG_UTIL_H
#define UST_TEST_LOG_UTIL_H

#include <dirent.h>
#include <poll.h>
#include <stropts.h>
#include <sys/strlog.h>
#include <ustreams.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char log_rundir_base[64];
static pid_t log_rundir_owner;

/* Remove every entry of dir (files and sockets only), then dir. */
static inline void log_rmdir_flat(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static inline void log_rundir_cleanup(void)
{
    char sub[128];
    if (getpid() != log_rundir_owner || log_rundir_base[0] == '\0')
        return;
    snprintf(sub, sizeof(sub), "%s/ustreams", log_rundir_base);
    log_rmdir_flat(sub);
    log_rmdir_flat(log_rundir_base);
}

static inline void log_private_rundir(void)
{
    snprintf(log_rundir_base, sizeof(log_rundir_base), "/tmp/ustlogtest-XXXXXX");
    if (mkdtemp(log_rundir_base) == NULL) {
        perror("log_util: mkdtemp");
        exit(1);
    }
    setenv("XDG_RUNTIME_DIR", log_rundir_base, 1);
    log_rundir_owner = getpid();
    atexit(log_rundir_cleanup);
}

/* ---- the logger's side, shared by the log tests ---- */

/* Make fd (a stream of the log driver) the error logger: 0, or -1/errno. */
static inline int log_errlog(int fd)
{
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    return strm_ioctl(fd, I_STR, &sio);
}

/* Make fd the trace logger for the n ids of t: 0, or -1/errno. */
static inline int log_trclog(int fd, const struct trace_ids *t, int n)
{
    struct strioctl sio = {I_TRCLOG, 0, n * (int)sizeof(*t), (char *)t};
    return strm_ioctl(fd, I_STR, &sio);
}

/* Read one log message (its log_ctl and text) from fd, waiting up to ms:
 * 1 if one whole message came, 0 if none (or a short control part). */
static inline int log_read(int fd, struct log_ctl *lc, char *text, int ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    struct strbuf ctl = {sizeof(*lc), 0, (char *)lc};
    struct strbuf data = {LOGMSGSZ, 0, text};
    int flags = 0;

    if (strm_poll(&pfd, 1, ms) <= 0)
        return 0;
    return getmsg(fd, &ctl, &data, &flags) >= 0 && ctl.len == (int)sizeof(*lc);
}

#endif /* UST_TEST_LOG_UTIL_H */
