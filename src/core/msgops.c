/* SPDX-License-Identifier: MIT */
/*
 * msgops.c -- operations on whole messages: dupmsg, copyb, copymsg, linkb,
 * unlinkb, rmvb, pullupmsg, msgpullup, adjmsg, msgdsize, msgsize, datamsg,
 * pcmsg, bmsgtype.
 *
 * A message is a chain of msgbs through b_cont; its type is the db_type of
 * its first block.  None of these functions takes a lock: a message belongs
 * to one thread at a time (the one that took it off a queue or allocated it),
 * while the data blocks it refers to may be shared through dupb, in which
 * case their bytes must be treated as read-only.  Every function that
 * allocates either succeeds completely or leaves its arguments as they were
 * and frees whatever it had allocated.
 *
 * "The leading run" below is the longest prefix of blocks whose db_type is
 * that of the first block; pullupmsg, msgpullup and adjmsg work only within
 * it, as in SVR4.
 */
#include <string.h>

#include "strcore.h"

static inline size_t blen(const mblk_t *bp)
{
    return bp->b_wptr > bp->b_rptr ? (size_t)(bp->b_wptr - bp->b_rptr) : 0;
}

/* Bytes in the leading run of mp. */
static size_t run_size(const mblk_t *mp)
{
    unsigned char type = mp->b_datap->db_type;
    size_t n = 0;
    for (const mblk_t *bp = mp; bp != NULL && bp->b_datap->db_type == type; bp = bp->b_cont)
        n += blen(bp);
    return n;
}

static inline int is_aligned(const void *p)
{
    return ((uintptr_t)p & (sizeof(long) - 1)) == 0;
}

/*
 * dupmsg -- dupb every block of a message (dupmsg(9F)).
 *   Context: any thread; never blocks.  The data blocks become shared.
 *   Returns the new message, or NULL (mp NULL, or out of memory: nothing is
 *   left allocated).
 */
mblk_t *dupmsg(mblk_t *mp)
{
    mblk_t *head = NULL, **tailp = &head;
    for (; mp != NULL; mp = mp->b_cont) {
        if ((*tailp = dupb(mp)) == NULL) {
            freemsg(head);
            return NULL;
        }
        tailp = &(*tailp)->b_cont;
    }
    return head;
}

/*
 * copyb -- copy one block into a new one (copyb(9F)).
 *   Context: any thread; never blocks.  The new block has the buffer size of
 *   bp (db_lim - db_base), its bytes b_rptr..b_wptr at the same offset, and
 *   bp's type, band and flags; b_cont is NULL.
 *   Returns the copy, or NULL (bp NULL, or out of memory).
 */
mblk_t *copyb(mblk_t *bp)
{
    if (bp == NULL)
        return NULL;
    dblk_t *db = bp->b_datap;
    mblk_t *nbp = ust_allocb_type((size_t)(db->db_lim - db->db_base), db->db_type);
    if (nbp == NULL)
        return NULL;
    size_t off = (size_t)(bp->b_rptr - db->db_base), n = blen(bp);
    nbp->b_rptr += off;
    if (n > 0)
        memcpy(nbp->b_rptr, bp->b_rptr, n);
    nbp->b_wptr = nbp->b_rptr + n;
    nbp->b_band = bp->b_band;
    nbp->b_flag = bp->b_flag;
    return nbp;
}

/*
 * copymsg -- copyb every block of a message (copymsg(9F)).
 *   Context: any thread; never blocks.
 *   Returns the copy, or NULL (mp NULL, or out of memory: nothing is left
 *   allocated).
 */
mblk_t *copymsg(mblk_t *mp)
{
    mblk_t *head = NULL, **tailp = &head;
    for (; mp != NULL; mp = mp->b_cont) {
        if ((*tailp = copyb(mp)) == NULL) {
            freemsg(head);
            return NULL;
        }
        tailp = &(*tailp)->b_cont;
    }
    return head;
}

/*
 * linkb -- append message bp to the end of message mp (linkb(9F)).
 *   Context: any thread.  Does nothing if either is NULL.
 */
void linkb(mblk_t *mp, mblk_t *bp)
{
    if (mp == NULL || bp == NULL)
        return;
    while (mp->b_cont != NULL)
        mp = mp->b_cont;
    mp->b_cont = bp;
}

/*
 * unlinkb -- detach the first block of a message (unlinkb(9F)).
 *   Context: any thread.  The first block's b_cont becomes NULL; it is not
 *   freed.  Returns the rest of the message, or NULL (no rest, or mp NULL).
 */
mblk_t *unlinkb(mblk_t *mp)
{
    if (mp == NULL)
        return NULL;
    mblk_t *rest = mp->b_cont;
    mp->b_cont = NULL;
    return rest;
}

/*
 * rmvb -- remove block bp from message mp (rmvb(9F)).
 *   Context: any thread.  bp is not freed; its b_cont becomes NULL.
 *   Returns the message without bp (NULL if bp was its only block), or
 *   (mblk_t *)-1 if bp is not in mp (or either is NULL).
 */
mblk_t *rmvb(mblk_t *mp, mblk_t *bp)
{
    if (mp == NULL || bp == NULL)
        return (mblk_t *)-1;
    for (mblk_t **pp = &mp; *pp != NULL; pp = &(*pp)->b_cont) {
        if (*pp == bp) {
            *pp = bp->b_cont;
            bp->b_cont = NULL;
            return mp;
        }
    }
    return (mblk_t *)-1;
}

/*
 * pullupmsg -- make the first len bytes of a message contiguous and aligned
 *   in its first block (pullupmsg(9F)).
 *   Context: any thread; never blocks.  Only the leading run is pulled up;
 *   len -1 means all of it.  If the first block already holds len bytes at an
 *   aligned address nothing changes; otherwise the first msgb keeps its
 *   identity (and band and flags) but gets a new data block of the same type
 *   holding the pulled-up bytes, and the blocks emptied by it are freed (a
 *   block partly used keeps its remaining bytes).  A len smaller than the
 *   first block pulls up that whole block.
 *   Returns 1, or 0 (mp NULL, len < -1, fewer than len bytes in the leading
 *   run, or out of memory: the message is then unchanged).
 */
int pullupmsg(mblk_t *mp, ssize_t len)
{
    if (mp == NULL || len < -1)
        return 0;
    size_t want, first = blen(mp);
    if (len == -1) {
        if (mp->b_cont == NULL && is_aligned(mp->b_rptr))
            return 1;
        want = run_size(mp);
    } else if ((size_t)len <= first) {
        if (is_aligned(mp->b_rptr))
            return 1;
        want = first;
    } else {
        want = (size_t)len;
        if (run_size(mp) < want)
            return 0;
    }
    dblk_t *ndb = ust_datab_alloc(want);
    if (ndb == NULL)
        return 0;
    dblk_t *odb = mp->b_datap;
    ndb->db_type = odb->db_type;
    unsigned char *dst = ndb->db_base;
    memcpy(dst, mp->b_rptr, first); /* first <= want always */
    dst += first;
    size_t left = want - first;
    mblk_t *bp = mp->b_cont;
    while (left > 0 && bp != NULL) {
        size_t n = blen(bp);
        if (n > left)
            n = left;
        memcpy(dst, bp->b_rptr, n);
        dst += n;
        bp->b_rptr += n;
        left -= n;
        if (bp->b_rptr < bp->b_wptr)
            break;
        mblk_t *next = bp->b_cont;
        freeb(bp);
        bp = next;
    }
    mp->b_cont = bp;
    mp->b_datap = ndb;
    mp->b_rptr = ndb->db_base;
    mp->b_wptr = dst;
    ust_datab_rele(odb);
    return 1;
}

/*
 * msgpullup -- a new message whose first block holds the first len bytes of
 *   mp contiguously and aligned, followed by copies of the rest (msgpullup(9F)).
 *   Context: any thread; never blocks.  mp is not changed.  Only the leading
 *   run is pulled up; len -1 means all of it.  The first block has mp's type,
 *   band and flags; later blocks keep their own types.
 *   Returns the new message, or NULL (mp NULL, len < -1, fewer than len bytes
 *   in the leading run, or out of memory: nothing is left allocated).
 */
mblk_t *msgpullup(mblk_t *mp, ssize_t len)
{
    if (mp == NULL || len < -1)
        return NULL;
    size_t run = run_size(mp);
    size_t want = len == -1 ? run : (size_t)len;
    if (want > run)
        return NULL;
    mblk_t *nmp = ust_allocb_type(want, mp->b_datap->db_type);
    if (nmp == NULL)
        return NULL;
    nmp->b_band = mp->b_band;
    nmp->b_flag = mp->b_flag;
    size_t left = want, n = 0;
    const mblk_t *bp = mp;
    for (; bp != NULL; bp = bp->b_cont) {
        n = blen(bp);
        if (n > left)
            n = left;
        memcpy(nmp->b_wptr, bp->b_rptr, n);
        nmp->b_wptr += n;
        left -= n;
        if (left == 0)
            break;
    }
    /* bp is the block where the pull-up ended (n of its bytes used), or NULL. */
    mblk_t *rest = NULL;
    if (bp != NULL && bp->b_rptr + n < bp->b_wptr) {
        if ((rest = copyb((mblk_t *)bp)) == NULL)
            goto fail;
        rest->b_rptr += n;
    }
    if (bp != NULL && bp->b_cont != NULL) {
        mblk_t *tail = copymsg(bp->b_cont);
        if (tail == NULL)
            goto fail;
        if (rest != NULL)
            rest->b_cont = tail;
        else
            rest = tail;
    }
    nmp->b_cont = rest;
    return nmp;
fail:
    freeb(rest);
    freeb(nmp);
    return NULL;
}

/*
 * adjmsg -- trim len bytes from the head (len > 0) or -len bytes from the tail
 *   (len < 0) of a message (adjmsg(9F)).
 *   Context: any thread; never blocks.  Only the leading run is trimmed.
 *   Blocks emptied by the trim are freed, except the first block, which
 *   stays (possibly empty) so that mp remains the message.
 *   Returns 1, or 0 (mp NULL, or the leading run holds fewer than |len|
 *   bytes: the message is then unchanged).
 */
int adjmsg(mblk_t *mp, ssize_t len)
{
    if (mp == NULL)
        return 0;
    size_t want = len < 0 ? (size_t)0 - (size_t)len : (size_t)len;
    size_t run = run_size(mp);
    if (run < want)
        return 0;
    if (len >= 0) {
        mblk_t *prev = NULL, *bp = mp;
        while (want > 0) {
            size_t n = blen(bp);
            if (n > want)
                n = want;
            bp->b_rptr += n;
            want -= n;
            if (prev != NULL && bp->b_rptr >= bp->b_wptr) {
                prev->b_cont = bp->b_cont;
                freeb(bp);
                bp = prev->b_cont;
            } else {
                prev = bp;
                bp = bp->b_cont;
            }
        }
        return 1;
    }
    /* From the tail: keep the first run - want bytes of the run, drop the
     * rest of it; blocks after the cut inside the run are freed. */
    unsigned char type = mp->b_datap->db_type;
    size_t keep = run - want;
    mblk_t *bp = mp;
    for (;;) {
        size_t n = blen(bp);
        if (n >= keep) {
            bp->b_wptr = bp->b_rptr + keep;
            break;
        }
        keep -= n;
        bp = bp->b_cont;
    }
    /* bp is the last block kept; free the run's blocks behind it. */
    mblk_t *next = bp->b_cont;
    while (next != NULL && next->b_datap->db_type == type) {
        mblk_t *after = next->b_cont;
        freeb(next);
        next = after;
    }
    bp->b_cont = next;
    return 1;
}

/*
 * msgdsize -- bytes in the M_DATA blocks of a message (msgdsize(9F)).
 *   Context: any thread.  Returns 0 for NULL.
 */
size_t msgdsize(const mblk_t *mp)
{
    size_t n = 0;
    for (; mp != NULL; mp = mp->b_cont)
        if (mp->b_datap->db_type == M_DATA)
            n += blen(mp);
    return n;
}

/*
 * msgsize -- bytes in every block of a message, whatever its type.
 *   Context: any thread.  Returns 0 for NULL.
 */
size_t msgsize(const mblk_t *mp)
{
    size_t n = 0;
    for (; mp != NULL; mp = mp->b_cont)
        n += blen(mp);
    return n;
}

/*
 * datamsg -- is type a data message type (M_DATA, M_PROTO, M_PCPROTO,
 *   M_DELAY)? (datamsg(9F)).  Returns 1 or 0.
 */
int datamsg(unsigned char type)
{
    return type == M_DATA || type == M_PROTO || type == M_PCPROTO || type == M_DELAY;
}

/*
 * pcmsg -- is type a high-priority message type (>= QPCTL)? (pcmsg(9F)).
 *   Returns 1 or 0.
 */
int pcmsg(unsigned char type)
{
    return type >= QPCTL;
}

/*
 * bmsgtype -- the type of a message: db_type of its first block.
 *   Returns M_DATA for NULL.
 */
unsigned char bmsgtype(const mblk_t *mp)
{
    return mp == NULL ? M_DATA : mp->b_datap->db_type;
}
