/* SPDX-License-Identifier: MIT */
/*
 * xring_priv.h -- the process-local handle of a channel between processes,
 * shared by xring.c (puts, takes, arming) and xring_map.c (create, attach,
 * destroy).  Not part of the interface (xring.h).
 */
#ifndef UST_XRING_PRIV_H
#define UST_XRING_PRIV_H

#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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
