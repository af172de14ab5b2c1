/* SPDX-License-Identifier: MIT */
/*
 * pl_stdio.c -- stdio on streams under the preload library.
 *
 * glibc's stdio reads and writes a FILE's descriptor with its own internal
 * calls, which no preload reaches: a FILE on a stream would read the
 * readiness socket instead of the stream.  So a FILE on a stream is a
 * fopencookie(3) FILE whose read, write and close are strm_read,
 * strm_write and strm_close (seek: ESPIPE, as on a pipe), with its fileno
 * set to the descriptor so that fileno(), isatty() and the like keep
 * working:
 *   - fdopen of a stream descriptor, fopen/fopen64 of a STREAMS name;
 *   - stdin, stdout and stderr, when 0, 1 or 2 is a stream at start-up
 *     (after the streams carried across an exec are rebuilt: a `seq` or a
 *     `sort` exec'd on a STREAMS pipe by a shell under `ustreams run
 *     --pipes`).  Buffering follows the C standard's rules for a
 *     non-terminal: stdin and stdout fully buffered, stderr unbuffered.
 * freopen, and a stream dup2'ed onto 0-2 after start-up, are not covered
 * (docs/PROGRAMS.md).
 *
 * Locking: none (stdio locks the FILE around each cookie call).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ustreams.h>

#include "pl.h"

static ssize_t ck_read(void *c, char *buf, size_t n)
{
    PL_ENTER();
    ssize_t r = strm_read((int)(intptr_t)c, buf, n);
    PL_LEAVE();
    return r;
}

static ssize_t ck_write(void *c, const char *buf, size_t n)
{
    size_t done = 0;
    PL_ENTER();
    while (done < n) { /* stdio counts a short write as an error */
        ssize_t r = strm_write((int)(intptr_t)c, buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    PL_LEAVE();
    return done > 0 || n == 0 ? (ssize_t)done : -1;
}

static int ck_seek(void *c, off64_t *off, int whence)
{
    (void)c;
    (void)off;
    (void)whence;
    errno = ESPIPE;
    return -1;
}

static int ck_close(void *c)
{
    PL_ENTER();
    int r = strm_close((int)(intptr_t)c);
    PL_LEAVE();
    return r;
}

static const cookie_io_functions_t ck_fns = {ck_read, ck_write, ck_seek, ck_close};

/* A FILE for stream descriptor fd with stdio mode `mode`; NULL, errno set. */
static FILE *stream_file(int fd, const char *mode)
{
    FILE *f = fopencookie((void *)(intptr_t)fd, mode, ck_fns);
    if (f != NULL)
        f->_fileno = fd; /* fileno(); the I/O itself goes through the cookie */
    return f;
}

FILE *fdopen(int fd, const char *mode)
{
    static FILE *(*real)(int, const char *);
    if (!pl_take(fd, PL_CALLER())) {
        if (real == NULL)
            real = (FILE * (*)(int, const char *)) dlsym(RTLD_NEXT, "fdopen");
        return real != NULL ? real(fd, mode) : (errno = ENOSYS, NULL);
    }
    return stream_file(fd, mode);
}

/* fopen's mode as open flags (C11 7.21.5.3). */
static int mode_flags(const char *mode)
{
    int fl = strchr(mode, '+') != NULL ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
    if (mode[0] == 'w')
        fl |= O_CREAT | O_TRUNC;
    else if (mode[0] == 'a')
        fl |= O_CREAT | O_APPEND;
    if (strchr(mode, 'e') != NULL)
        fl |= O_CLOEXEC;
    if (strchr(mode, 'x') != NULL)
        fl |= O_EXCL;
    return fl;
}

static FILE *fopen_common(const char *path, const char *mode, const char *realname,
                          const void *ret)
{
    FILE *(*real)(const char *, const char *) =
        (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, realname);
    if (path == NULL || mode == NULL || strchr("rwa", mode[0]) == NULL || pl_from_lib(ret))
        return real != NULL ? real(path, mode) : (errno = ENOSYS, NULL);
    int fd = pl_open_stream(AT_FDCWD, path, mode_flags(mode));
    if (fd == -2)
        return real != NULL ? real(path, mode) : (errno = ENOSYS, NULL);
    if (fd < 0)
        return NULL;
    FILE *f = stream_file(fd, mode);
    if (f == NULL) {
        int e = errno;
        PL_ENTER();
        strm_close(fd);
        PL_LEAVE();
        errno = e;
    }
    return f;
}

FILE *fopen(const char *path, const char *mode)
{
    return fopen_common(path, mode, "fopen", PL_CALLER());
}

FILE *fopen64(const char *path, const char *mode)
{
    return fopen_common(path, mode, "fopen64", PL_CALLER());
}

/* stdin, stdout, stderr on streams: after every constructor of default
 * priority (the streams an exec carried are rebuilt by then). */
__attribute__((constructor(65535))) static void pl_stdio_start(void)
{
    static const struct {
        FILE **fp;
        const char *mode;
        int buf;
    } std[3] = {{&stdin, "r", _IOFBF}, {&stdout, "w", _IOFBF}, {&stderr, "w", _IONBF}};
    for (int fd = 0; fd < 3; fd++) {
        if (!ust_fd_is_stream(fd))
            continue;
        FILE *f = stream_file(fd, std[fd].mode);
        if (f == NULL)
            continue;
        setvbuf(f, NULL, std[fd].buf, 0);
        *std[fd].fp = f; /* the old FILE is left as it is: closing it would close fd */
    }
}
