/* SPDX-License-Identifier: MIT */
/*
 * procs.c -- the client side of publishing (procs.h; the server is
 * src/admin/publish.c): list "proc.<pid>" in the runtime directory,
 * connect to each, send the request, read the answer to its end.
 *
 * Each answer is read whole into memory before it is printed, so a slow
 * terminal never holds a process's publishing thread.  A process that
 * sends nothing for PROCS_IDLE_MS (stopped, or stuck) is reported and
 * skipped.  A stale name (connect refused: no socket listens there any
 * more) is removed: processes that die without exit(3) leave theirs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "procs.h"
#include "publish.h"
#include "rundir.h"

#define PROCS_IDLE_MS 5000 /* an answer that stalls this long is given up */

static int cmp_pid(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* The pids named in dir, sorted, in *v (malloc'ed); their count or -1. */
static int list_pids(const char *dir, long **v)
{
    size_t pl = strlen(UST_PUBLISH_PREFIX);
    DIR *d = opendir(dir);
    int n = 0, cap = 0;
    *v = NULL;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char *end;
        if (strncmp(e->d_name, UST_PUBLISH_PREFIX, pl) != 0 || e->d_name[pl] < '0' ||
            e->d_name[pl] > '9')
            continue;
        errno = 0;
        long pid = strtol(e->d_name + pl, &end, 10);
        if (errno || *end || pid <= 0)
            continue;
        if (n == cap) {
            long *nv = realloc(*v, (size_t)(cap = cap ? 2 * cap : 32) * sizeof(**v));
            if (nv == NULL)
                break;
            *v = nv;
        }
        (*v)[n++] = pid;
    }
    closedir(d);
    if (n > 1)
        qsort(*v, (size_t)n, sizeof(**v), cmp_pid);
    return n;
}

/* /proc/PID/comm without its newline, or "?". */
static void comm_of(long pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(buf, (int)n, f) == NULL)
        snprintf(buf, n, "?");
    if (f != NULL)
        fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Read fd to its end into *text (malloc'ed, NUL-terminated): 0 or an errno
 * (ETIMEDOUT: nothing for PROCS_IDLE_MS). */
static int read_all(int fd, char **text, size_t *len)
{
    size_t cap = 4096;
    char *buf = malloc(cap);
    *len = 0;
    if (buf == NULL)
        return ENOMEM;
    for (;;) {
        if (cap - *len < 2) {
            char *nb = realloc(buf, cap *= 2);
            if (nb == NULL) {
                free(buf);
                return ENOMEM;
            }
            buf = nb;
        }
        ssize_t k = recv(fd, buf + *len, cap - *len - 1, 0);
        if (k > 0) {
            *len += (size_t)k;
            continue;
        }
        if (k == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            int err = errno;
            free(buf);
            return err;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, PROCS_IDLE_MS);
        if (r == 0 || (r < 0 && errno != EINTR)) {
            int err = r == 0 ? ETIMEDOUT : errno;
            free(buf);
            return err;
        }
    }
    buf[*len] = '\0';
    *text = buf;
    return 0;
}

/* Ask one process.  1 printed, 0 stale or gone (nothing said), -1 reported. */
static int ask(const char *tool, const char *dir, long pid, const char *request, FILE *out)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct ucred uc;
    socklen_t ulen = sizeof(uc);
    char comm[64], *text = NULL;
    size_t len;
    int fd, err, r = -1;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" UST_PUBLISH_PREFIX "%ld", dir, pid);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        fprintf(stderr, "%s: process %ld: socket: %s\n", tool, pid, strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        err = errno;
        if (err == ECONNREFUSED) { /* nobody listens: the process is gone */
            unlink(sa.sun_path);
            r = 0;
        } else if (err == ENOENT) { /* it exited meanwhile */
            r = 0;
        } else {
            fprintf(stderr, "%s: process %ld: %s\n", tool, pid,
                    err == EAGAIN ? "busy (too many requests waiting)" : strerror(err));
        }
        goto out;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ulen) != 0 || uc.uid != geteuid()) {
        fprintf(stderr, "%s: process %ld: socket not of this user, skipped\n", tool, pid);
        goto out;
    }
    /* The request is far below a socket's buffer: one send. */
    char line[UST_PUBLISH_LINE_MAX];
    int n = snprintf(line, sizeof(line), "%s\n", request);
    if (n < 0 || (size_t)n >= sizeof(line) || send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
        fprintf(stderr, "%s: process %ld: request not sent\n", tool, pid);
        goto out;
    }
    err = read_all(fd, &text, &len);
    if (err != 0) {
        fprintf(stderr, "%s: process %ld: %s\n", tool, pid,
                err == ETIMEDOUT ? "no answer" : strerror(err));
        goto out;
    }
    comm_of(pid, comm, sizeof(comm));
    fprintf(out, "process %ld %s\n", pid, comm);
    fwrite(text, 1, len, out);
    if (len > 0 && text[len - 1] != '\n')
        fputc('\n', out);
    free(text);
    r = 1;
out:
    close(fd);
    return r;
}

int ust_procs_query(const char *tool, const char *request, FILE *out)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    long *pids;
    int err = ust_rundir(dir, sizeof(dir)), n, printed = 0;

    if (err != 0) {
        fprintf(stderr, "%s: runtime directory refused: %s\n", tool, strerror(err));
        return -1;
    }
    n = list_pids(dir, &pids);
    if (n < 0) {
        fprintf(stderr, "%s: %s: %s\n", tool, dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (pids[i] != (long)getpid() && ask(tool, dir, pids[i], request, out) > 0)
            printed++;
    free(pids);
    return printed;
}
