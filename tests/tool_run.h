/* SPDX-License-Identifier: MIT */
/*
 * tool_run.h -- running the tools (the subcommands of the `ustreams`
 * command, tools/NAME.c, built next to the test executables) from a test,
 * and picking lines out of their output.
 *
 *   tool_run_init(argv0)       find the build directory (of /proc/self/exe)
 *   tool_run(tool, args, &st)  run "ustreams tool args 2>&1" (tool "" runs
 *                              "ustreams args"); its output (malloc'ed,
 *                              NUL-terminated) and exit status (-1 if it
 *                              did not exit); NULL if it could not be run
 *   tool_run_split(tool, args, out, n, err, en)
 *                              run "ustreams tool args" with its standard
 *                              output in out and its standard error in err
 *                              (each NUL-terminated, cut to fit); the exit
 *                              status, -1 if it did not exit
 *   find_line(out, prefix, line, n)
 *                              copy the first line of out starting with
 *                              prefix (without its newline); 1, or 0 if none
 *   line_after(out, marker, line, n)
 *                              the line following the first line that
 *                              contains marker; 1, or 0 if none
 */
#ifndef UST_TEST_TOOL_RUN_H
#define UST_TEST_TOOL_RUN_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tool_dir[PATH_MAX];

static inline void tool_run_init(const char *argv0)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (k <= 0)
        snprintf(self, sizeof(self), "%s", argv0);
    else
        self[k] = '\0';
    snprintf(tool_dir, sizeof(tool_dir), "%s", dirname(self));
}

static inline char *tool_run(const char *tool, const char *args, int *status)
{
    char cmd[PATH_MAX + 512];
    snprintf(cmd, sizeof(cmd), "'%s/ustreams' %s %s 2>&1", tool_dir, tool, args);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 4096, len = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += k;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* Run a tool: 1 if it exits want_status and, when want is not NULL, its
 * output contains want. */
static inline int tool_expect(const char *tool, const char *args, int want_status,
                              const char *want)
{
    int st;
    char *out = tool_run(tool, args, &st);
    int ok = st == want_status && (want == NULL || (out && strstr(out, want) != NULL));
    free(out);
    return ok;
}

static inline int tool_run_split(const char *tool, const char *args, char *out, size_t n,
                                 char *err, size_t en)
{
    char errfile[] = "/tmp/ust_toolXXXXXX", cmd[PATH_MAX + 512];
    int fd = mkstemp(errfile);
    if (fd < 0)
        return -1;
    close(fd);
    snprintf(cmd, sizeof(cmd), "'%s/ustreams' %s %s 2>%s", tool_dir, tool, args, errfile);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, n - 1, p) : 0;
    out[k] = '\0';
    int st = p ? pclose(p) : -1;
    FILE *e = fopen(errfile, "r");
    k = e ? fread(err, 1, en - 1, e) : 0;
    err[k] = '\0';
    if (e)
        fclose(e);
    unlink(errfile);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int find_line(const char *out, const char *prefix, char *line, size_t n)
{
    size_t pl = strlen(prefix);
    for (const char *p = out; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= pl && strncmp(p, prefix, pl) == 0) {
            snprintf(line, n, "%.*s", (int)len, p);
            return 1;
        }
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static inline int line_after(const char *out, const char *marker, char *line, size_t n)
{
    const char *p = out ? strstr(out, marker) : NULL;
    if (!p || !(p = strchr(p, '\n')))
        return 0;
    p++;
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    snprintf(line, n, "%.*s", (int)len, p);
    return 1;
}

#endif /* UST_TEST_TOOL_RUN_H */
