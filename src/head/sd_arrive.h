/* SPDX-License-Identifier: MIT */
/*
 * sd_arrive.h -- the stream head's arrivals (sd_arrive.c): what sthead.h
 * declares for them, kept apart for the size of sthead.h.  Included by
 * sthead.h only.
 */
#ifndef UST_SD_ARRIVE_H
#define UST_SD_ARRIVE_H

struct ust_sd_uio;
/* b_tag of a message that holds several writes coalesced: their lengths are
 * recorded at the end of its buffer (sd_arrive.c).  Only ever on a head. */
#define UST_TAG_COAL 1
/* The deposit path of sd's writes into *dp (from the cache while the
 * plumbing generation stands); 1 if there is one, else 0.  sd_lock held. */
int ust_sd_deposit_path(struct stdata *sd, struct ust_sd_dpath *dp);
/* What a write snapshot allows: depositing (a module-free pipe), or one
 * message sent down the stream. */
enum { UST_WSNAP_DEPOSIT, UST_WSNAP_SEND };
/* The write snapshot (sd_write.c): a write of sd found every check passed
 * and took path `how`; writes of up to max bytes may take it without
 * sd_lock until anyone takes sd_lock again.  sd_lock held. */
void ust_sd_wsnap_take(struct stdata *sd, size_t max, int how);
/* 1 and the path in *dp if a write of n bytes may deposit without sd_lock
 * (the snapshot holds: nobody took sd_lock since), else 0.  No lock held. */
int ust_sd_wsnap_path(struct stdata *sd, size_t n, struct ust_sd_dpath *dp);
/* 1 if a write of n bytes may be sent down without sd_lock (the snapshot
 * holds), else 0.  No lock held. */
int ust_sd_wsnap_send(struct stdata *sd, size_t n);
/*
 * ust_sd_deposit -- put n bytes of u straight at the reading head at the end
 *   of path dp (ust_sd_deposit_path), when nothing stands between (the path
 *   still stands, readable token shown, no M_READ outstanding, no signals
 *   wanted) and its room allows.  No lock held.
 *   Returns 1 (deposited), 0 (take the normal path; nothing consumed of u),
 *   2 (take the normal path with *built, the message made of u's n bytes), or
 *   -EFAULT.
 */
int ust_sd_deposit(const struct ust_sd_dpath *dp, struct ust_sd_uio *u, size_t n, mblk_t **built);
/* ust_sd_deposit_many -- writes w[0..n) (one write each, in order, from
 * memory that cannot fault) appended at dp's head under one hold of its
 * arrival lock, as far as they fit in the last coalescing block and the
 * room: no block is made.  Returns how many of the first went (0..n); the
 * caller deposits the next one with ust_sd_deposit (which starts a block)
 * or sends it the normal way.  Context: as ust_sd_deposit. */
int ust_sd_deposit_many(const struct ust_sd_dpath *dp, const struct iovec *w, int n);
/*
 * ust_sd_arrive -- the head's read put procedure (sd_rput.c) adds mp, come up
 *   through modules, to the arrivals of sd (whose read queue is rq: passed,
 *   as sd_rq is cleared before a freed head's last puts) as a deposit would:
 *   a plain band-0 M_DATA message with data, while sd takes deposits and the
 *   room allows; linked as it is (never coalesced).  Context: a put procedure
 *   holding a claim on rq; no lock held.  Returns 1 (mp consumed), or 0 (mp
 *   untouched: queue it the normal way).
 */
int ust_sd_arrive(struct stdata *sd, queue_t *rq, mblk_t *mp);
/* 1 if this thread's last deposit used its room up, so the reading head's
 * queue may now be full (then cleared): the writer looks at flow control for
 * POLLOUT only then (sd_write.c, sd_ret). */
int ust_sd_deposit_filled(void);
/* sd_write.c: 1 if this thread's current write, putmsg or putpmsg sent a
 * message the normal way (below the head), then cleared; sd_writecalls.c's
 * sd_ret looks at flow control for POLLOUT only after such a call or a
 * deposit that filled the pipe. */
int ust_sd_wsent_take(void);
/* Move sd's arrivals onto its read queue, in order, and recompute the room.
 * Any lock but the arrival and queue locks may be held. */
void ust_sd_absorb(struct stdata *sd);
/* The same onto rq, sd's read queue, by its put procedure (which holds a
 * claim on rq while ust_sd_free may already have cleared sd_rq). */
void ust_sd_absorb_to(struct stdata *sd, queue_t *rq);
/* A reader found the read queue empty: absorb the arrivals; 1 if there were
 * any.  Takes the arrival lock only when the list looks non-empty. */
int ust_sd_absorb_some(struct stdata *sd);
/* A reader is about to sleep on sd_rwait: mark the arrivals sleepy (the next
 * deposit wakes sd_rwait) and return 1, unless some arrived: 0. No lock
 * held. */
int ust_sd_arrivals_sleep(struct stdata *sd);
/* Bytes in sd's arrivals and the room deposits had at the last absorb, read
 * without the arrival lock: hints for a dry reader deciding how long to let a
 * batch gather (sd_wait.c), stale as soon as read. */
size_t ust_sd_arrivals_gathered(const struct stdata *sd, size_t *room);
/* Free sd's arrivals (the head is being freed; no deposit can come). */
void ust_sd_arrivals_discard(struct stdata *sd);
/* Clear sd_rtoken under the arrival lock (so no deposit slips in after it)
 * and return 1, unless arrivals wait: 0, the token stays.  sd_lock held. */
int ust_sd_arrivals_withdraw(struct stdata *sd);
/* Writes in message mp (1 for an ordinary one) and the data bytes of the
 * first of them. */
int ust_sd_msg_writes(const mblk_t *mp);
size_t ust_sd_msg_first_len(const mblk_t *mp);
/* mp holds several writes: cut it after the first, returning the rest as a
 * new message (a dupb sharing the buffer), or NULL (no memory; mp unchanged).
 * mp must not be on a queue. */
mblk_t *ust_sd_msg_cut(mblk_t *mp);
/* Call fn(p, n, arg) for each write of coalesced message mp in order, read
 * only (mp may stay on its queue if the caller keeps it still).  Returns -1
 * if mp is not a coalesced one-block message, else the first non-zero fn
 * result or 0. */
int ust_sd_msg_each_write(const mblk_t *mp, int (*fn)(const unsigned char *p, size_t n, void *arg),
                          void *arg);

#endif /* UST_SD_ARRIVE_H */
