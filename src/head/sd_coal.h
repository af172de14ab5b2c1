/* SPDX-License-Identifier: MIT */
/*
 * sd_coal.h -- the layout of a coalescing block (UST_TAG_COAL), shared by
 * the arrivals that fill one (sd_arrive.c) and the readers of its writes
 * (sd_coal.c).  Private to src/head.
 *
 * The block is one M_DATA block whose data runs contiguously from db_base;
 * the length of each write is a 16-bit number stored from the end of the
 * buffer down, below a 32-bit cursor in its last AR_CURSOR bytes; db_pad
 * counts the writes.  A writer appends while readers read earlier writes
 * through views (dupb) of the same buffer: it stores each write's data and
 * length before it raises db_pad (a relaxed atomic) and its own end (kept
 * apart, sd_arrive.c pwptr) and publishes them with a release store
 * (sd_arrive.c, pcommit); a reader looks
 * only at writes that start below its view's b_wptr, which were all
 * published before it was given the view.
 */
#ifndef UST_SD_COAL_H
#define UST_SD_COAL_H

#include <string.h>

#include "sthead.h"

/* The buffer's trailer, AR_CURSOR bytes: the cursor in the last 4, below
 * it the block's final end (offset from db_base), stored by the producer
 * when it links the next message (sd_arrive.c: the producer never moves
 * the block's own b_wptr, which views copy). */
#define AR_CURSOR 8

/* The length of write i of block db. */
static inline unsigned ust_coal_rec(const dblk_t *db, unsigned i)
{
    uint16_t v;
    memcpy(&v, db->db_lim - AR_CURSOR - 2 * ((size_t)i + 1), sizeof(v));
    return v;
}

/* Record len as the length of write i of block db. */
static inline void ust_coal_rec_put(dblk_t *db, unsigned i, size_t len)
{
    uint16_t v = (uint16_t)len;
    memcpy(db->db_lim - AR_CURSOR - 2 * ((size_t)i + 1), &v, sizeof(v));
}

/* Writes recorded in db (the writer may be adding one: relaxed). */
static inline unsigned ust_coal_count(const dblk_t *db)
{
    return __atomic_load_n(&db->db_pad, __ATOMIC_RELAXED);
}

/* The cursor: index << 16 | start offset of one write.  Relaxed atomics:
 * readers of views that share the buffer may look at once; any value one
 * of them stored is a true (index, start) pair. */
static inline uint32_t *ust_coal_cursor(const dblk_t *db)
{
    return (uint32_t *)(void *)(db->db_lim - 4);
}

/* The final end of a closed block (relaxed atomic, 32-bit offset). */
static inline uint32_t *ust_coal_endp(const dblk_t *db)
{
    return (uint32_t *)(void *)(db->db_lim - 8);
}

#endif /* UST_SD_COAL_H */
