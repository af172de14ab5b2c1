/* SPDX-License-Identifier: MIT */
/*
 * sd_access.c -- the access mode of each stream descriptor (O_RDONLY,
 * O_WRONLY, O_RDWR), as the open file description keeps it in a kernel.
 *
 * Principles of operation
 *   The mode belongs to the descriptor, not to the stream: two opens of one
 *   shared device, one O_RDONLY and one O_WRONLY, reach the same stream and
 *   are each checked on their own.  Every descriptor of a stream is a
 *   duplicate of one kernel socket (sd_fd.c), so the kernel cannot keep the
 *   mode for us; this table does, indexed by descriptor number, one byte per
 *   descriptor: UST_ACC_NOREAD and UST_ACC_NOWRITE bits, 0 (the value of a
 *   slot never written) meaning read and write.
 *
 *   Whoever hands out a stream descriptor sets its mode before returning the
 *   number to the program: strm_open (the open's O_ACCMODE, also for a
 *   fattach-ed name), strm_pipe (read and write), F_DUPFD (the mode of the
 *   descriptor duplicated) and I_RECVFD (the mode of the descriptor sent).
 *   A number reused after a close gets its mode set again by the call that
 *   reuses it, so a stale byte is never consulted.
 *
 *   Like the descriptor table, the bytes live in 1024 chunks of 1024,
 *   allocated on demand and never freed; reads and writes are atomic and
 *   take no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "sthead.h"

#define ACC_CHUNK_BITS 10
#define ACC_CHUNK (1 << ACC_CHUNK_BITS)
#define ACC_NCHUNKS 1024

static unsigned char *acc_chunks[ACC_NCHUNKS]; /* atomic pointers, set once */

static unsigned char *acc_slot(int fd, int create)
{
    if (fd < 0 || fd >= ACC_CHUNK * ACC_NCHUNKS)
        return NULL;
    unsigned char **cp = &acc_chunks[fd >> ACC_CHUNK_BITS];
    unsigned char *c = __atomic_load_n(cp, __ATOMIC_ACQUIRE);
    if (!c && create) {
        unsigned char *expected = NULL;
        c = calloc(ACC_CHUNK, 1);
        if (!c)
            return NULL;
        if (!__atomic_compare_exchange_n(cp, &expected, c, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            free(c);
            c = expected;
        }
    }
    return c ? &c[fd & (ACC_CHUNK - 1)] : NULL;
}

int ust_sd_acc_of_oflag(int oflag)
{
    switch (oflag & O_ACCMODE) {
    case O_RDONLY:
        return UST_ACC_NOWRITE;
    case O_WRONLY:
        return UST_ACC_NOREAD;
    case O_RDWR:
        return 0;
    default: /* O_ACCMODE itself: neither (Linux: ioctl only) */
        return UST_ACC_NOREAD | UST_ACC_NOWRITE;
    }
}

int ust_sd_acc_set(int fd, int acc)
{
    unsigned char *s = acc_slot(fd, acc != 0);
    if (!s)
        return acc != 0 ? ENOMEM : 0;
    __atomic_store_n(s, (unsigned char)acc, __ATOMIC_RELEASE);
    return 0;
}

int ust_sd_acc_get(int fd)
{
    unsigned char *s = acc_slot(fd, 0);
    return s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : 0;
}

int ust_sd_acc_oflag(int fd)
{
    int acc = ust_sd_acc_get(fd);
    if (acc == 0)
        return O_RDWR;
    if (acc == UST_ACC_NOWRITE)
        return O_RDONLY;
    if (acc == UST_ACC_NOREAD)
        return O_WRONLY;
    return O_ACCMODE;
}

struct stdata *ust_sd_get_acc(int fd, int need, int *err)
{
    struct stdata *sd = ust_sd_get(fd, err);
    if (sd && (ust_sd_acc_get(fd) & need)) {
        ust_sd_put(sd);
        *err = EBADF;
        return NULL;
    }
    if (sd && __builtin_expect(__atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) != NULL, 0))
        ust_xpipe_touch(sd); /* a split pipe end used here (sd_xpipe.c) */
    return sd;
}
