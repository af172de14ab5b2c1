/* SPDX-License-Identifier: MIT */
/*
 * dlopen_prog.c -- ctest test_dlopen: the shared libraries load with
 * dlopen() in a program that was not linked with them, as Python ctypes or
 * a plugin host loads them.
 *
 *   dlopen_prog LIBUSTREAMS LIBXNET
 *
 * A library built with initial-exec thread-local storage fails here with
 * "cannot allocate memory in static TLS block" once the static TLS surplus
 * is used up (the library's TLS is 5 KB, the surplus about 1.6 KB).  Loads
 * both (libxnet pulls libustreams as its NEEDED), makes a pipe through
 * dlsym'ed calls, sends a message both ways, opens /dev/ticlts with t_open
 * and closes everything -- from the main thread and from a thread started
 * after the load (its TLS blocks are made lazily).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

typedef int (*pipe_fn)(int[2]);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef int (*close_fn)(int);
typedef int (*topen_fn)(const char *, int, void *);
typedef int (*tclose_fn)(int);

static pipe_fn s_pipe;
static write_fn s_write;
static read_fn s_read;
static close_fn s_close;
static topen_fn t_open_p;
static tclose_fn t_close_p;

/* One round trip on a fresh pipe and a t_open/t_close: 0 or a step number. */
static int round_trip(void)
{
    int p[2];
    char buf[16] = {0};
    if (s_pipe(p) != 0)
        return 1;
    if (s_write(p[0], "hello", 5) != 5 || s_read(p[1], buf, sizeof(buf)) != 5 ||
        memcmp(buf, "hello", 5) != 0)
        return 2;
    if (s_write(p[1], "back", 4) != 4 || s_read(p[0], buf, sizeof(buf)) != 4 ||
        memcmp(buf, "back", 4) != 0)
        return 3;
    if (s_close(p[0]) != 0 || s_close(p[1]) != 0)
        return 4;
    int t = t_open_p("/dev/ticlts", O_RDWR, NULL);
    if (t < 0 || t_close_p(t) != 0)
        return 5;
    return 0;
}

static void *thread_main(void *arg)
{
    *(int *)arg = round_trip();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dlopen_prog LIBUSTREAMS LIBXNET\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    void *xnet = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (xnet == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
        return 1;
    }
    s_pipe = (pipe_fn)dlsym(lib, "strm_pipe");
    s_write = (write_fn)dlsym(lib, "strm_write");
    s_read = (read_fn)dlsym(lib, "strm_read");
    s_close = (close_fn)dlsym(lib, "strm_close");
    t_open_p = (topen_fn)dlsym(xnet, "t_open");
    t_close_p = (tclose_fn)dlsym(xnet, "t_close");
    if (!s_pipe || !s_write || !s_read || !s_close || !t_open_p || !t_close_p) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    int r = round_trip();
    if (r != 0) {
        fprintf(stderr, "main thread: step %d failed\n", r);
        return 1;
    }
    pthread_t t;
    int tr = -1;
    if (pthread_create(&t, NULL, thread_main, &tr) != 0 || pthread_join(t, NULL) != 0 ||
        tr != 0) {
        fprintf(stderr, "thread: step %d failed\n", tr);
        return 1;
    }
    /* dlclose leaves both loaded (-z nodelete): the library's threads run on. */
    dlclose(xnet);
    dlclose(lib);
    if (dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) == NULL ||
        dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD) == NULL) {
        fprintf(stderr, "dlclose unloaded a library\n");
        return 1;
    }
    printf("dlopen: ok\n");
    return 0;
}
