/* SPDX-License-Identifier: MIT */
/*
 * sd_coal.c -- the writes inside a coalesced message (UST_TAG_COAL, layout
 * in sd_coal.h): how many, how long the first is, cutting it off, each in
 * turn.  Everything that sees messages (read in RMSGN/RMSGD, getmsg, I_PEEK,
 * I_NREAD) asks these, so boundaries are never lost.
 *
 * The cursor is a hint: the index and start offset of a write at or before
 * the place the last lookup found, so that cutting the writes off one by one
 * costs O(1) each, not a scan from the first write (which made a reader
 * that fell behind slower still: a full block of 1-byte writes is ~800 of
 * them).
 *
 * Context: any thread holding the message (or the queue it is on still);
 * the writer of the block may be appending behind the message's b_wptr.
 */
#include "sd_coal.h"

/* The write holding byte rptr of a coalesced mp: its index, and its end. */
static unsigned coal_find(const mblk_t *mp, unsigned char **endp)
{
    const dblk_t *db = mp->b_datap;
    unsigned count = ust_coal_count(db);
    unsigned char *p = db->db_base;
    unsigned i = 0;
    uint32_t c = __atomic_load_n(ust_coal_cursor(db), __ATOMIC_RELAXED);
    if ((c >> 16) < count && db->db_base + (c & 0xffff) <= mp->b_rptr) {
        i = c >> 16; /* start at the write the last lookup found */
        p += c & 0xffff;
    }
    for (; i < count; i++) {
        unsigned char *start = p;
        p += ust_coal_rec(db, i);
        if (p > mp->b_rptr) {
            __atomic_store_n(ust_coal_cursor(db),
                             (uint32_t)i << 16 | (uint32_t)(start - db->db_base),
                             __ATOMIC_RELAXED);
            break;
        }
    }
    *endp = p < mp->b_wptr ? p : mp->b_wptr;
    return i;
}

int ust_sd_msg_writes(const mblk_t *mp)
{
    if (mp->b_tag != UST_TAG_COAL)
        return 1;
    const dblk_t *db = mp->b_datap;
    unsigned count = ust_coal_count(db);
    unsigned char *end, *p;
    unsigned i = coal_find(mp, &end);
    int n = 1;
    for (p = end, i++; i < count && p < mp->b_wptr; i++, n++)
        p += ust_coal_rec(db, i);
    return n;
}

size_t ust_sd_msg_first_len(const mblk_t *mp)
{
    if (mp->b_tag != UST_TAG_COAL)
        return msgdsize(mp);
    unsigned char *end;
    coal_find(mp, &end);
    return (size_t)(end - mp->b_rptr);
}

mblk_t *ust_sd_msg_cut(mblk_t *mp)
{
    unsigned char *end;
    if (mp->b_tag != UST_TAG_COAL)
        return NULL;
    coal_find(mp, &end);
    if (end >= mp->b_wptr) { /* one write left */
        mp->b_tag = 0;
        return NULL;
    }
    mblk_t *rest = dupb(mp);
    if (!rest)
        return NULL;
    rest->b_tag = UST_TAG_COAL;
    rest->b_rptr = end;
    mp->b_wptr = end;
    mp->b_tag = 0;
    return rest;
}

int ust_sd_msg_each_write(const mblk_t *mp, int (*fn)(const unsigned char *p, size_t n, void *arg),
                          void *arg)
{
    if (mp->b_tag != UST_TAG_COAL || mp->b_cont != NULL)
        return -1;
    const dblk_t *db = mp->b_datap;
    unsigned count = ust_coal_count(db);
    unsigned char *end, *p = mp->b_rptr;
    unsigned i = coal_find(mp, &end);
    for (;;) {
        int r = fn(p, (size_t)(end - p), arg);
        if (r != 0)
            return r;
        if (end >= mp->b_wptr || ++i >= count)
            return 0;
        p = end;
        end = p + ust_coal_rec(db, i);
        if (end > mp->b_wptr)
            end = mp->b_wptr;
    }
}
