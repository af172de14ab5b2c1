/* SPDX-License-Identifier: MIT */
/*
 * xring_priv.h -- the process-local handle of a channel between processes,
 * and the helpers shared by xring.c (locks, puts, arming), xring_take.c
 * (peek, take, take_batch) and xring_map.c (create, attach, destroy).  Not
 * part of the interface (xring.h).
 */
#ifndef UST_XRING_PRIV_H
#define UST_XRING_PRIV_H

#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "forksafe.h"
#include "xring_layout.h"

/* The process-local handle.  Every field is set at create/attach and only
 * read afterwards, by any thread, except broken[] and put_seen[]. */
struct xring_chan {
    int fd;                   /* the memfd, owned */
    unsigned char *map;       /* the mapping, map_len bytes */
    size_t map_len;
    uint32_t size;            /* each ring's data area (power of two), our copy */
    uint32_t mask;            /* size - 1 */
    uint32_t hiwat, lowat;    /* our copy */
    struct xring_ctl *ctl[2]; /* ring d's control block in the mapping */
    unsigned char *data[2];   /* ring d's data area in the mapping */
    int broken[2];            /* any thread (atomic): ring d found inconsistent; never cleared */
    int peer_fd[2];           /* any thread (atomic): side s's peer descriptor, or -1
                               * (xring_set_peer): lock waiters of side s look at it */
    int cancel[2];            /* any thread (atomic): side s's lock waits are cancelled */
    uint64_t put_seen[2];     /* ring d's producer lock: x_tail after this process's last
                               * put << 32 | the x_head it saw.  While x_tail is still
                               * that (nobody else has put since), the room that head
                               * shows is never more than there is: x_head (the
                               * consumer's line) is read only when it shows too little */
};

static inline long xr_futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, w, op, (unsigned long)val, ts, NULL, 0);
}

static inline int xr_dir_ok(const struct xring_chan *ch, int dir)
{
    return ch != NULL && (dir == 0 || dir == 1);
}

/* ---- helpers of xring.c and xring_take.c (see xring.c's top) ---- */

/* 1 if ring d is broken, as this handle or the mapping says (the mapping's
 * flag, once seen, is copied into the handle: sticky).  Any thread. */
static inline int xr_is_broken(struct xring_chan *ch, int d)
{
    if (__atomic_load_n(&ch->broken[d], __ATOMIC_RELAXED))
        return 1;
    if (__atomic_load_n(&ch->ctl[d]->x_broken, __ATOMIC_RELAXED) == 0)
        return 0;
    __atomic_store_n(&ch->broken[d], 1, __ATOMIC_RELAXED);
    return 1;
}

/* Copy n <= size bytes into / out of ring d at index pos, wrapping.  The
 * caller holds the producer (in) or consumer (out) lock. */
static inline void xr_copy_in(struct xring_chan *ch, int d, uint32_t pos, const void *src,
                              size_t n)
{
    uint32_t off = pos & ch->mask;
    size_t first = n < (size_t)(ch->size - off) ? n : (size_t)(ch->size - off);
    if (n == 0)
        return;
    memcpy(ch->data[d] + off, src, first);
    if (n > first)
        memcpy(ch->data[d], (const unsigned char *)src + first, n - first);
}

static inline void xr_copy_out(struct xring_chan *ch, int d, uint32_t pos, void *dst, size_t n)
{
    uint32_t off = pos & ch->mask;
    size_t first = n < (size_t)(ch->size - off) ? n : (size_t)(ch->size - off);
    if (n == 0)
        return;
    memcpy(dst, ch->data[d] + off, first);
    if (n > first)
        memcpy((unsigned char *)dst + first, ch->data[d], n - first);
}

/* Bytes queued in ring d from head and tail as read, or -1 if they are not
 * consistent (misaligned, or more than the ring holds). */
static inline int64_t xr_queued(const struct xring_chan *ch, uint32_t head, uint32_t tail)
{
    uint32_t q = tail - head;
    if (((head | tail) & 7) != 0 || q > ch->size)
        return -1;
    return q;
}

/* Release lock word w (taken with xr_lock); wake one sleeper if the waiters
 * bit was set. */
static inline void xr_unlock(uint32_t *w)
{
    uint32_t old = __atomic_exchange_n(w, 0, __ATOMIC_RELEASE);
    if (old & XRING_LOCK_WAITERS)
        xr_futex(w, FUTEX_WAKE, 1, NULL);
}

/* An arming word's count of sleepers (low 16 bits; xring.c "Arming words"). */
#define XR_ARM_COUNT 0xffffu

/* Functions shared by xring.c and xring_take.c only: hidden, so that calls
 * among them are direct (not through the PLT) and may be inlined, as they
 * were when all of them were static in one file. */
#define XR_INTERNAL __attribute__((visibility("hidden")))

/* xring.c: mark ring d broken (handle and mapping) and ring its bell;
 * returns -EIO. */
XR_INTERNAL int xr_break(struct xring_chan *ch, int d);
/* xring.c: xr_lock when the word was not free at the first look. */
XR_INTERNAL int xr_lock_wait(struct xring_chan *ch, int d, uint32_t *w, int side, int nowait,
                             uint32_t me);
/* Take lock word w of ring d for side `side` (the producer lock of ring d:
 * side d; the consumer lock: side !d), within the bounds of waiting; nowait:
 * never sleep.  0 (held), -EBUSY (nowait, held by someone: nothing
 * changed), -ECANCELED (xring_cancel), -EIO (broken, or now so).  The free
 * word is taken here, inline: the data path pays one compare-and-swap. */
static inline int xr_lock(struct xring_chan *ch, int d, uint32_t *w, int side, int nowait)
{
    uint32_t me = (uint32_t)ust_getpid() & XRING_LOCK_PID;
    uint32_t v = 0;
    if (__atomic_compare_exchange_n(w, &v, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    return xr_lock_wait(ch, d, w, side, nowait, me);
}
/* xring.c: the report on arming word w: 1 if sleepers were armed (now
 * cleared, the generation bumped), 0 if none.  Bounded. */
XR_INTERNAL int xr_arm_fire(uint32_t *w);

/* ---- for tests and fuzzers only ---- */
/* The time bounds of a lock wait (xring.c, top), in ms; NULL: the defaults
 * (slice 10, dead 50, hold 500, wait 1000).  Not thread-safe: call before
 * any channel is used. */
struct xring_bounds {
    int slice_ms, dead_ms, hold_ms, wait_ms;
};
void xring_test_bounds(const struct xring_bounds *b);
/* Rounds this thread has made in xring.c's loops over shared words (lock
 * waits, snapshots, arming compare-and-swaps): a call's steps are bounded. */
unsigned long xring_test_steps(void);

#endif /* UST_XRING_PRIV_H */
