/* SPDX-License-Identifier: MIT */
/*
 * pl_core.c -- the preload library's core: the C library's functions, and
 * telling the program's calls from the library's own.
 *
 * Principles of operation (recursion)
 *   Under LD_PRELOAD this object comes before the C library in the global
 *   symbol scope, so every call of read, close, poll, fcntl, dup3 ... that
 *   libustreams and libxnet make through their PLT reaches the wrappers too:
 *   the library reads and writes the readiness descriptors of its streams
 *   (sd_fd.c), which are in its own descriptor table.  Such a call must go
 *   to the C library, or strm_* would call itself (and deadlock on a lock it
 *   holds).  Two marks, either of which sends a call to the C library:
 *     1. pl_depth, a thread-local count raised by a wrapper around its
 *        strm_* call: everything the library does on that thread meanwhile
 *        is the library's, whatever the call's return address (a tail call
 *        of close() in the library returns straight into its caller);
 *     2. the return address of the wrapper (__builtin_return_address(0)) in
 *        the executable text of libustreams.so or libxnet.so, found once
 *        with dl_iterate_phdr (again when a wrapper that makes something,
 *        pipe(2), sees no libxnet yet: dlopen()ed later): the calls of the
 *        library's own threads (scheduler, watchers, rendezvous) and of
 *        the strm_, putmsg and t_ calls the program makes itself.
 *   A tail call inside the library from a function the program calls
 *   directly (not through a wrapper) would carry the program's return
 *   address; the library's tail calls of wrapped functions are closes of
 *   its own sockets (never in the stream table), which the wrappers hand to
 *   the C library anyway.
 *   Both checks read memory only: the range table grows by appending entries
 *   and then publishing their count (release), and is read without a lock.
 *
 *   A program that carries its own copy of the library (linked with the
 *   static libustreams.a) keeps its streams in that copy's table: the
 *   wrappers of descriptors then find nothing and pass through, and open and
 *   pipe are not wrapped when the program exports its strm_open (pl_own_copy).
 *   A static copy the program does not export cannot be seen from here: such
 *   a program must not run under the preload (docs/PROGRAMS.md).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pl.h"

struct pl_real pl_real;
__thread int pl_depth __attribute__((tls_model("initial-exec")));
__thread const sigset_t *pl_sigmask __attribute__((tls_model("initial-exec")));
int pl_pipes;
int pl_own_copy;

#define MAXRANGES 32
static struct {
    uintptr_t lo, hi;
} ranges[MAXRANGES];
static int nranges;      /* published count (release / acquire) */
static int have_xnet;    /* libxnet's text is in ranges */

static void *next_sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void pl_init(void)
{
#define R(field, sym) __atomic_store_n((void **)&pl_real.field, next_sym(sym), __ATOMIC_RELAXED)
    R(read, "read");
    R(readv, "readv");
    R(write, "write");
    R(writev, "writev");
    R(read_chk, "__read_chk");
    R(close, "close");
    R(dup, "dup");
    R(dup2, "dup2");
    R(dup3, "dup3");
    R(fcntl, "fcntl");
    R(fcntl64, "fcntl64");
    R(ioctl, "ioctl");
    R(open, "open");
    R(open64, "open64");
    R(openat, "openat");
    R(openat64, "openat64");
    R(open_2, "__open_2");
    R(open64_2, "__open64_2");
    R(openat_2, "__openat_2");
    R(openat64_2, "__openat64_2");
    R(creat, "creat");
    R(creat64, "creat64");
    R(poll, "poll");
    R(ppoll, "ppoll");
    R(poll_chk, "__poll_chk");
    R(ppoll_chk, "__ppoll_chk");
    R(select, "select");
    R(pselect, "pselect");
    R(epoll_ctl, "epoll_ctl");
    R(pipe, "pipe");
    R(pipe2, "pipe2");
#undef R
    if (pl_real.fcntl64 == NULL) /* a C library older than fcntl64 */
        pl_real.fcntl64 = pl_real.fcntl;
}

/* The basename of an object's path begins with lib (e.g. "libxnet.so"). */
static int named(const char *path, const char *lib)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    return strncmp(base, lib, strlen(lib)) == 0;
}

static int range_known(uintptr_t lo)
{
    int n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (ranges[i].lo == lo)
            return 1;
    return 0;
}

static int add_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const char *name = info->dlpi_name != NULL ? info->dlpi_name : "";
    int xnet = named(name, "libxnet.so");
    if (!xnet && !named(name, "libustreams.so"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        int n = __atomic_load_n(&nranges, __ATOMIC_RELAXED);
        if (range_known(lo) || n == MAXRANGES)
            continue;
        ranges[n].lo = lo;
        ranges[n].hi = hi;
        __atomic_store_n(&nranges, n + 1, __ATOMIC_RELEASE);
    }
    if (xnet)
        __atomic_store_n(&have_xnet, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Writers of the range table are serialised by this lock (readers take
 * none): the constructor and pipe's refresh. */
static int ranges_lock;

void pl_ranges_refresh(void)
{
    if (__atomic_load_n(&have_xnet, __ATOMIC_RELAXED))
        return;
    while (__atomic_exchange_n(&ranges_lock, 1, __ATOMIC_ACQUIRE))
        ;
    dl_iterate_phdr(add_ranges, NULL);
    __atomic_store_n(&ranges_lock, 0, __ATOMIC_RELEASE);
}

int pl_from_lib(const void *ret)
{
    if (pl_depth > 0)
        return 1;
    uintptr_t a = (uintptr_t)ret;
    int n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (a >= ranges[i].lo && a < ranges[i].hi)
            return 1;
    return 0;
}

__attribute__((constructor)) static void pl_start(void)
{
    pl_init();
    pl_ranges_refresh();
    const char *p = getenv("USTREAMS_PRELOAD_PIPES");
    pl_pipes = p != NULL && strcmp(p, "1") == 0;
    /* strm_open as the program sees it: not libustreams.so's when the
     * program exports a copy of its own (see above; a static copy it does
     * not export is not seen: docs/PROGRAMS.md). */
    void *own = dlsym(RTLD_DEFAULT, "strm_open");
    pl_own_copy = own != NULL && !pl_from_lib(own);
}
