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
 *
 *   FIFOs count their readers and writers by these modes (sd_fifo.c): the
 *   mode set for a descriptor of a FIFO counts it (ACC_COUNTED marks the
 *   byte), and the slot leaving the descriptor table (strm_close, a stale
 *   slot dropped, a number taken over: sd_fd.c) uncounts it.  Both happen
 *   under cnt_lock, the set only while the table still names the FIFO at
 *   fd, so a descriptor is counted at most once and uncounted exactly when
 *   it was counted, whatever the order of a set and a close racing.
 *
 * Locking
 *   cnt_lock guards the ACC_COUNTED bits and every FIFO's ff_readers and
 *   ff_writers (written under it, read anywhere with atomics).  A leaf:
 *   taken under sd_fd.c's table lock (ust_fifo_slot_gone) or with no lock
 *   held (ust_sd_acc_set); nothing is taken under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "sthead.h"

#define ACC_CHUNK_BITS 10
#define ACC_CHUNK (1 << ACC_CHUNK_BITS)
#define ACC_NCHUNKS 1024

static unsigned char *acc_chunks[ACC_NCHUNKS]; /* atomic pointers, set once */

/* The byte's descriptor is counted in its FIFO's ff_readers/ff_writers. */
#define ACC_COUNTED 4
#define ACC_MODE (UST_ACC_NOREAD | UST_ACC_NOWRITE)

static ust_lock_t cnt_lock = UST_LOCK_INIT; /* see Locking; a leaf */

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

/* Add (dir 1) or remove (dir -1) a descriptor of mode acc to sd's counts;
 * cnt_lock held. */
static void count(struct stdata *sd, int acc, int dir)
{
    UST_ASSERT_HELD(&cnt_lock);
    struct ust_fifo_state *ff = &sd->sd_ff;
    if (!(acc & UST_ACC_NOREAD)) {
        __atomic_add_fetch(&ff->ff_readers, dir, __ATOMIC_SEQ_CST);
        if (dir > 0)
            __atomic_add_fetch(&ff->ff_ropens, 1, __ATOMIC_SEQ_CST);
    }
    if (!(acc & UST_ACC_NOWRITE)) {
        __atomic_add_fetch(&ff->ff_writers, dir, __ATOMIC_SEQ_CST);
        if (dir > 0)
            __atomic_add_fetch(&ff->ff_wopens, 1, __ATOMIC_SEQ_CST);
    }
}

/* ust_sd_acc_set for a descriptor of FIFO sd: count it (once). */
static int acc_set_fifo(int fd, struct stdata *sd, int acc)
{
    unsigned char *s = acc_slot(fd, 1);
    if (!s)
        return ENOMEM;
    ust_lock(&cnt_lock);
    unsigned char old = __atomic_load_n(s, __ATOMIC_ACQUIRE);
    int counted = ust_sd_peek(fd) == sd; /* not closed meanwhile */
    int same = counted && (old & ACC_COUNTED) && (old & ACC_MODE) == acc;
    /* Set again (strm_open sets the mode the FIFO's open already set): the
     * same mode changes nothing (ff_ropens/ff_wopens would tell a waiting
     * open of a new party); a new one is added before the old one goes, so
     * that the counts, read without cnt_lock, never pass through zero (a
     * writer would fail EPIPE in between). */
    if (counted && !same)
        count(sd, acc, 1);
    if (counted && !same && (old & ACC_COUNTED))
        count(sd, old & ACC_MODE, -1);
    __atomic_store_n(s, (unsigned char)(acc | (counted ? ACC_COUNTED : 0)), __ATOMIC_RELEASE);
    ust_unlock(&cnt_lock);
    if (counted && !same)
        ust_fifo_announce(sd);
    return 0;
}

int ust_sd_acc_set(int fd, int acc)
{
    struct stdata *sd = ust_sd_peek(fd);
    if (sd != NULL && ust_sd_isfifo(sd))
        return acc_set_fifo(fd, sd, acc);
    unsigned char *s = acc_slot(fd, acc != 0);
    if (!s)
        return acc != 0 ? ENOMEM : 0;
    __atomic_store_n(s, (unsigned char)acc, __ATOMIC_RELEASE);
    return 0;
}

int ust_fifo_slot_gone(int fd, struct stdata *sd)
{
    if (!ust_sd_isfifo(sd))
        return 0;
    unsigned char *s = acc_slot(fd, 0);
    if (!s)
        return 0;
    ust_lock(&cnt_lock);
    unsigned char old = __atomic_load_n(s, __ATOMIC_ACQUIRE);
    if (old & ACC_COUNTED) {
        count(sd, old & ACC_MODE, -1);
        __atomic_store_n(s, (unsigned char)(old & ACC_MODE), __ATOMIC_RELEASE);
    }
    ust_unlock(&cnt_lock);
    return (old & ACC_COUNTED) != 0;
}

/* fork child: a holder of cnt_lock may have been frozen by the fork. */
void ust_sd_acc_fork_child(void)
{
    ust_lock_init(&cnt_lock);
}

int ust_sd_acc_get(int fd)
{
    unsigned char *s = acc_slot(fd, 0);
    return s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) & ACC_MODE : 0;
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
    ust_sd_notice_closes(); /* a close(2) the kernel reported (sd_fd.c) */
    struct stdata *sd = ust_sd_get(fd, err);
    if (sd && (ust_sd_acc_get(fd) & need)) {
        ust_sd_put(sd);
        *err = EBADF;
        return NULL;
    }
    /* A pipe end used here (a data or ioctl call): once split, this
     * process takes what arrives for it (src/procs, "Who takes"). */
    if (sd && sd->sd_pipeq != NULL &&
        !__atomic_load_n(&sd->sd_xused, __ATOMIC_RELAXED)) {
        __atomic_store_n(&sd->sd_xused, 1, __ATOMIC_SEQ_CST); /* Dekker: the split */
        if (__atomic_load_n(&sd->sd_xend, __ATOMIC_SEQ_CST) != NULL)
            ust_sd_procs()->xpipe_touch(sd);
    }
    return sd;
}
