/* SPDX-License-Identifier: MIT */
/*
 * sd_readq.h -- the helpers the two readers of the head read queue share:
 * read(2)/readv(2) (sd_read.c) and getmsg/getpmsg, I_PEEK, I_NREAD
 * (sd_getmsg.c).  Private to those two files.
 *
 * All but one are small and static inline: the read fast path (ust_sd_read)
 * calls several of them per message (blen, dead_add, put_back, dead_free)
 * and must not pay an out-of-line call for the file split.  The one cold
 * helper, ust_sd_wait_mem, is a function of sd_read.c (it was out of line
 * before the split too).  Unless a contract says otherwise they run with
 * sd_lock held (ust_sd_lockq) and touch only messages the caller has taken
 * off the queue or is about to put back.
 */
#ifndef UST_SD_READQ_H
#define UST_SD_READQ_H

#include <errno.h>

#include "sthead.h"

/* Bytes in one block (0 if b_rptr has passed b_wptr). */
static inline size_t blen(const mblk_t *mp)
{
    return mp->b_wptr > mp->b_rptr ? (size_t)(mp->b_wptr - mp->b_rptr) : 0;
}

/* Bytes in the blocks from mp up to (not including) end. */
static inline size_t chain_bytes(const mblk_t *mp, const mblk_t *end)
{
    size_t n = 0;
    for (; mp && mp != end; mp = mp->b_cont)
        n += blen(mp);
    return n;
}

/* The first M_DATA block of mp: the start of the data part (mp itself for an
 * M_DATA message; NULL when a control part has no data behind it). */
static inline mblk_t *data_part(mblk_t *mp)
{
    while (mp && mp->b_datap->db_type != M_DATA)
        mp = mp->b_cont;
    return mp;
}

/* Put mp on the list of messages to free after sd_lock is dropped. */
static inline void dead_add(mblk_t **dead, mblk_t *mp)
{
    mp->b_next = *dead;
    *dead = mp;
}

/* Free the messages on dead; on a pipe end in this process, a one-block
 * message's unit may go to the hand-back slots of sd, the head they were
 * read from, for the blocks its writers deposit next (sd_arrive.c "Blocks
 * handed back").  Other streams' writers, and a split end's (another
 * process), never take from the slots: units would idle there. */
static inline void dead_free(struct stdata *sd, mblk_t *dead)
{
    int pipe = sd->sd_pipeq != NULL && __atomic_load_n(&sd->sd_xend, __ATOMIC_RELAXED) == NULL;
    while (dead) {
        mblk_t *n = dead->b_next;
        dead->b_next = NULL;
        if (pipe && dead->b_cont == NULL)
            ust_freeb_spare(dead, &sd->sd_spare);
        else
            freemsg(dead);
        dead = n;
    }
}

/* Put the rest of a message back at the front of its class.  The band exists
 * (the message came from it), so putbq cannot fail for want of memory. */
static inline void put_back(queue_t *q, mblk_t *mp)
{
    if (!putbq(q, mp))
        freemsg(mp);
}

/* mp, just taken off q, may hold several writes coalesced (sd_arrive.c): put
 * all but the first back at the front.  Returns 0, or ENOMEM (mp unchanged,
 * still the caller's). */
static inline int first_write(queue_t *q, mblk_t *mp)
{
    if (mp->b_tag != UST_TAG_COAL)
        return 0;
    mblk_t *rest = ust_sd_msg_cut(mp);
    if (rest) {
        put_back(q, rest);
        return 0;
    }
    return mp->b_tag == UST_TAG_COAL ? ENOMEM : 0;
}

/*
 * ust_sd_wait_mem -- no memory to take one write off a coalesced message:
 *   wait for some, a tick at most (a bufcall wakes sd_rwait sooner), as
 *   writers do.  Cold, so out of line (sd_read.c).
 *   Context: a reading system call; sd_lock held (ust_sd_lockq), dropped
 *   while waiting.  Returns 0 (try again) or EINTR.
 */
int ust_sd_wait_mem(struct stdata *sd);

/* The error a read or getmsg reports now: EBADF when the stream is being
 * closed under the caller (the last descriptor went), EINVAL when linked
 * under a multiplexer, else the M_ERROR read error (once, with
 * RERRNONPERSIST, if consume is set).  sd_lock held. */
static inline int sd_read_error(struct stdata *sd, int consume)
{
    return ust_sd_state_error(sd, UST_RULE_READ, consume); /* sd_state.c */
}

#endif /* UST_SD_READQ_H */
