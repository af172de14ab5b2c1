/* SPDX-License-Identifier: MIT */
/*
 * run.c -- `ustreams run [--pipes] [--] PROGRAM [ARG...]`: run an unmodified
 * program with libustreams-preload.so (src/preload/, docs/PROGRAMS.md
 * "Unmodified programs: ustreams run").
 *
 * The library is looked for, first found wins:
 *   1. $USTREAMS_PRELOAD_LIB (a path to the file);
 *   2. beside this command's executable (the build tree: ustreams and the
 *      libraries are built in one directory);
 *   3. ../lib/ from the executable's directory (an installed prefix moved
 *      elsewhere);
 *   4. USTREAMS_LIBDIR, the libdir given at configure time (the install).
 * Its path is put first in LD_PRELOAD (what was there stays after it), and
 * --pipes sets USTREAMS_PRELOAD_PIPES=1 (pipe(2) makes STREAMS pipes); the
 * program is then exec'd with execvp, so PATH is searched as a shell does.
 * Exit status: the program's; 127 when it cannot be found or run, with a
 * message; 2 for a bad option or no program (the usage on stderr).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

#ifndef USTREAMS_LIBDIR
#define USTREAMS_LIBDIR "/usr/local/lib"
#endif

#define PRELOAD_NAME "libustreams-preload.so"

void ust_usage_run(FILE *f)
{
    fprintf(f, "usage: ustreams run [--pipes] [--] PROGRAM [ARG...]\n"
               "  Run PROGRAM, unmodified, with the STREAMS calls of libustreams behind\n"
               "  the plain system calls (" PRELOAD_NAME " in LD_PRELOAD): open(2)\n"
               "  of /dev/streams/..., /dev/ticots..., FIFOs and fattach'd names makes a\n"
               "  stream; read, write, ioctl, poll, select, close... act on it.\n"
               "  --pipes   pipe(2) makes STREAMS pipes (USTREAMS_PRELOAD_PIPES=1)\n"
               "  The library is $USTREAMS_PRELOAD_LIB, else the one beside this\n"
               "  command, else ../lib/ from it, else " USTREAMS_LIBDIR ".\n"
               "  Exit status: PROGRAM's; 127 if it cannot be run; 2 for bad usage.\n");
}

/* 1 if path names a readable file. */
static int usable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* The preload library's path into buf, or -1 with a message. */
static int find_library(char *buf, size_t n)
{
    const char *env = getenv("USTREAMS_PRELOAD_LIB");
    if (env != NULL && env[0] != '\0') {
        if (!usable(env)) {
            fprintf(stderr, "ustreams run: USTREAMS_PRELOAD_LIB=%s: %s\n", env, strerror(errno));
            return -1;
        }
        snprintf(buf, n, "%s", env);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (k > 0) {
        self[k] = '\0';
        char *dir = dirname(self);
        if ((size_t)snprintf(buf, n, "%s/%s", dir, PRELOAD_NAME) < n && usable(buf))
            return 0;
        if ((size_t)snprintf(buf, n, "%s/../lib/%s", dir, PRELOAD_NAME) < n && usable(buf))
            return 0;
    }
    if ((size_t)snprintf(buf, n, "%s/%s", USTREAMS_LIBDIR, PRELOAD_NAME) < n && usable(buf))
        return 0;
    fprintf(stderr, "ustreams run: %s not found (beside the ustreams command, nor in %s); "
                    "set USTREAMS_PRELOAD_LIB\n", PRELOAD_NAME, USTREAMS_LIBDIR);
    return -1;
}

int ust_cmd_run(int argc, char **argv)
{
    int pipes = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--pipes") == 0) {
            pipes = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            ust_usage_run(stdout);
            return 0;
        } else {
            fprintf(stderr, "ustreams run: unknown option '%s'\n", argv[i]);
            ust_usage_run(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "ustreams run: no program given\n");
        ust_usage_run(stderr);
        return 2;
    }
    char lib[PATH_MAX];
    if (find_library(lib, sizeof(lib)) != 0)
        return 127;
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(lib) + (old != NULL ? strlen(old) + 1 : 0) + 1;
    char *preload = malloc(len);
    if (preload == NULL) {
        fprintf(stderr, "ustreams run: %s\n", strerror(ENOMEM));
        return 127;
    }
    snprintf(preload, len, "%s%s%s", lib, old != NULL && old[0] != '\0' ? ":" : "",
             old != NULL ? old : "");
    if (setenv("LD_PRELOAD", preload, 1) != 0 ||
        (pipes && setenv("USTREAMS_PRELOAD_PIPES", "1", 1) != 0)) {
        fprintf(stderr, "ustreams run: %s\n", strerror(errno));
        free(preload);
        return 127;
    }
    free(preload);
    fflush(NULL);
    execvp(argv[i], argv + i);
    int e = errno;
    fprintf(stderr, "ustreams run: %s: %s\n", argv[i],
            e == ENOENT ? "command not found" : strerror(e));
    return e == ENOENT ? 127 : 126;
}
