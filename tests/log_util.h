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

#endif /* UST_TEST_LOG_UTIL_H */
