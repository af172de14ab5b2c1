/* SPDX-License-Identifier: MIT */
/*
 * pl_std.c -- the standard STREAMS names under the preload: putmsg, getmsg,
 * putpmsg, getpmsg, isastream, fattach, fdetach.
 *
 * The C library still carries stubs of these names (glibc: compatibility
 * symbols that fail or answer "not a stream").  In the global scope of a
 * preloaded program the C library comes before libustreams.so (a
 * dependency of this object, loaded after the program's own), and an
 * unversioned reference -- this object's, libxnet's, a program's -- may
 * bind to the stub.  So this object defines the names itself, first in the
 * scope, and forwards each to libustreams' definition, looked up once in
 * libustreams.so itself (dlsym on its handle).  dlsym(RTLD_DEFAULT) (Python
 * ctypes.CDLL(None)) finds these too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stropts.h>

#include "pl.h"

static struct {
    int (*putmsg)(int, const struct strbuf *, const struct strbuf *, int);
    int (*putpmsg)(int, const struct strbuf *, const struct strbuf *, int, int);
    int (*getmsg)(int, struct strbuf *, struct strbuf *, int *);
    int (*getpmsg)(int, struct strbuf *, struct strbuf *, int *, int *);
    int (*isastream)(int);
    int (*fattach)(int, const char *);
    int (*fdetach)(const char *);
} lib;

/* libustreams.so's own definitions (the object that defines
 * ust_fd_is_stream). */
static void resolve(void)
{
    Dl_info info;
    void *h = NULL;
    if (dladdr((void *)ust_fd_is_stream, &info) != 0 && info.dli_fname != NULL)
        h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return;
#define L(name) __atomic_store_n((void **)&lib.name, dlsym(h, #name), __ATOMIC_RELAXED)
    L(putmsg);
    L(putpmsg);
    L(getmsg);
    L(getpmsg);
    L(isastream);
    L(fattach);
    L(fdetach);
#undef L
    dlclose(h); /* a reference of NOLOAD: the library stays */
}

__attribute__((constructor)) static void pl_std_start(void)
{
    resolve();
}

#define LIB(name) (__builtin_expect(lib.name != NULL, 1) ? lib.name : (resolve(), lib.name))
#define CHECK(name)                                                                              \
    if (LIB(name) == NULL) {                                                                     \
        errno = ENOSYS;                                                                          \
        return -1;                                                                               \
    }

int putmsg(int fd, const struct strbuf *ctl, const struct strbuf *data, int flags)
{
    CHECK(putmsg);
    return lib.putmsg(fd, ctl, data, flags);
}

int putpmsg(int fd, const struct strbuf *ctl, const struct strbuf *data, int band, int flags)
{
    CHECK(putpmsg);
    return lib.putpmsg(fd, ctl, data, band, flags);
}

int getmsg(int fd, struct strbuf *ctl, struct strbuf *data, int *flagsp)
{
    CHECK(getmsg);
    return lib.getmsg(fd, ctl, data, flagsp);
}

int getpmsg(int fd, struct strbuf *ctl, struct strbuf *data, int *bandp, int *flagsp)
{
    CHECK(getpmsg);
    return lib.getpmsg(fd, ctl, data, bandp, flagsp);
}

int isastream(int fd)
{
    CHECK(isastream);
    return lib.isastream(fd);
}

int fattach(int fd, const char *path)
{
    CHECK(fattach);
    return lib.fattach(fd, path);
}

int fdetach(const char *path)
{
    CHECK(fdetach);
    return lib.fdetach(path);
}
