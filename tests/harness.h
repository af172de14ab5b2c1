/* SPDX-License-Identifier: MIT */
/*
 * harness.h -- streams without the stream head, for testing the executive,
 * the drivers and the modules on their own.
 *
 * th_open builds  [test head] -> [modules pushed with th_push] -> [driver]
 * out of real queue pairs (ust_qalloc, ust_qinsert, ust_qopen), with a
 * "test head" pair on top standing in for the stream head:
 *   - its write queue has no procedures; th_write puts below it with
 *     putnext(head wq, mp), holding a claim on the head's write queue exactly
 *     as the real stream head does;
 *   - its read put procedure queues what arrives (putq) on the head read queue
 *     and wakes th_read, which takes messages off with getq.  So the messages
 *     are read back in STREAMS order (high priority first, then by band, FIFO
 *     within a band), and the head's read queue counts them against its water
 *     marks: it has a (no-op) service procedure, so canputnext from below
 *     stops at it, and its high-water mark (th_set_hiwat) throttles the
 *     stream; th_read's getq back-enables the queues below when it drains.
 *   - like the real head it is never scheduled: qenable of its queues calls
 *     the head_enable hook, which wakes th_read.
 * Plumbing of one th_stream is not thread-safe (as the real head serializes
 * it); th_write and th_read may be called from any threads concurrently.
 */
#ifndef TH_HARNESS_H
#define TH_HARNESS_H

#include <stddef.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "strcore.h"

#define TH_MAXMODS 16

/* th_open flags, or'ed with the open flags (O_RDWR, ...) handed to open. */
#define TH_CLONE 0x40000000 /* clone-open the driver even without D_CLONE */

struct th_stream {
    queue_t *hq;                  /* head read queue (WR(hq) is the head write queue) */
    queue_t *drv;                 /* driver read queue */
    queue_t *mods[TH_MAXMODS];    /* pushed modules' read queues, mods[nmods-1] on top */
    int nmods;
    dev_t dev;                    /* device number after the driver's open */
    int oflag;                    /* open flags handed to open and close */
    cred_t cred;                  /* the caller's credentials */
    ust_lock_t lock;              /* guards gen */
    ust_cond_t cv;                /* signalled when gen changes */
    unsigned long gen;            /* LOCK: bumped by every arrival at the head */
    size_t max_bytes;             /* LOCK: most band-0 bytes queued at the head at once */
};

/*
 * th_open -- open the registered driver `driver` below a test head.
 *   flags: open flags for the driver's open routine, plus TH_CLONE.  The
 *   driver is opened with DRVOPEN on minor 0, or CLONEOPEN when it is D_CLONE
 *   or TH_CLONE is given.
 *   Returns the stream, or NULL with errno set (ENXIO: no such driver,
 *   ENOMEM, or the error of the driver's open).
 */
struct th_stream *th_open(const char *driver, int flags);

/*
 * th_push / th_pop -- push the registered module `module` below the head (it
 * becomes the topmost module), or pop the topmost.
 *   Returns 0, or EINVAL (no such module, nothing to pop), ERANGE (too many
 *   modules), ENOMEM, or the error of the module's open (the module is then
 *   unlinked and freed again).
 */
int th_push(struct th_stream *s, const char *module);
int th_pop(struct th_stream *s);

/* th_write -- send mp down the stream (putnext from the head write queue).
 * Returns 0, or EINVAL for NULL. */
int th_write(struct th_stream *s, mblk_t *mp);

/* th_canwrite -- bcanputnext(head wq, band), as the head's write would ask. */
int th_canwrite(struct th_stream *s, unsigned char band);

/* th_read -- the next message that reached the head, waiting up to timeout_ms
 * (forever if negative, not at all if 0).  NULL on timeout. */
mblk_t *th_read(struct th_stream *s, long timeout_ms);

/* th_count -- messages waiting at the head. */
int th_count(struct th_stream *s);

/* th_set_hiwat -- the water marks of the head's read queue (band 0). */
int th_set_hiwat(struct th_stream *s, size_t hiwat, size_t lowat);

/* th_close -- pop every module (close, unlink, free), close and free the
 * driver, free the head and every message still waiting there. */
void th_close(struct th_stream *s);

/* th_msg -- a one-block message of the given type and band holding len bytes
 * of data (zeros if data is NULL).  NULL when out of memory. */
mblk_t *th_msg(unsigned char type, unsigned char band, const void *data, size_t len);

/*
 * th_ioctl_msg -- an M_IOCTL as the stream head builds it: a leading block
 * big enough for any of union ioctypes holding an iocblk (ioc_cmd = cmd,
 * ioc_count = count, a fresh ioc_id, the calling process's credentials), and
 * len bytes of data in b_cont if len > 0.  For a transparent ioctl pass
 * count = TRANSPARENT and the user address as data (len sizeof(caddr_t)).
 */
mblk_t *th_ioctl_msg(int cmd, size_t count, const void *data, size_t len);

/* th_msgtype -- db_type of mp. */
static inline unsigned char th_msgtype(const mblk_t *mp)
{
    return mp->b_datap->db_type;
}

/* th_assert_no_blocks -- wait for the executive to go idle (ustreams_quiesce,
 * 5 s), then fail the test unless no message block is outstanding. */
void th_assert_no_blocks(void);

#endif /* TH_HARNESS_H */
