/* SPDX-License-Identifier: MIT */
/*
 * sd_xcross.h -- what may cross a split pipe (the table is at the top of
 * sd_xcross.c): private to the split pipe's files (sd_xpipe*.c), which call
 * it where a message becomes a ring record (ust_xcross_put) and where a
 * record becomes a message again (ust_xcross_in).  Everything in a record
 * is the far side's word: it may come from another user's process that
 * wrote the shared ring itself.
 */
#ifndef UST_SD_XCROSS_H
#define UST_SD_XCROSS_H

#include <stdint.h>

#include "sd_xpipe.h"

enum {
    /* The receiver's own limits, whatever the far side asks: */
    XC_HIWAT_MAX = 256 * 1024, /* M_SETOPTS SO_HIWAT/SO_LOWAT/SO_MAXPSZ clamped to it */
    XC_MSG_MAX = 256 * 1024, /* a record's control + data bytes; larger: dropped (ours are
                              * at most XP_MAXPSZ) */
    XF_NOLOOP = 4,              /* record flag: the M_FLUSH had MSGNOLOOP (sd_rput.c) */
};

/* A signal record's token (xring_msg.aux), also sent on the bell with the
 * sender's kernel credentials just before the record: bit 30 and bit 31
 * set (I_SENDFD's tokens have bit 30 clear), the signal number in the low
 * byte, and no byte equal to the bell's 'F' (sd_xbell.c). */
#define XP_SIG_TOKEN 0x40000000u

/* Counters of what the read side refused (ust_xcross_counts). */
enum { XC_SIG_DROPPED, XC_MSG_DROPPED, XC_OPTS_FILTERED, XC_NCOUNTS };

/*
 * ust_xcross_put -- xring_put (nowait: xring_put_try) of record *m
 *   (iov[0..n)) made from mp, a
 *   message other than M_DATA, on split end xe, with what the far side
 *   needs to judge it: a signal sends its credential on the bell first
 *   (once per message, however often a full ring makes the caller retry)
 *   and carries its token in m->aux; an M_FLUSH keeps MSGNOLOOP as
 *   XF_NOLOOP.
 *   Context: the writer's thread (ust_xpipe_wput/wsrv); no lock held; may
 *   wait up to ~100 ms for room on the bell.
 *   Returns what xring_put (or xring_put_try) returns, or 0 for a signal whose credential
 *   could not be sent (dropped and counted: the caller frees mp, as for a
 *   record written).
 */
int ust_xcross_put(struct ust_xend *xe, const mblk_t *mp, struct xring_msg *m,
                   const struct iovec *iov, int n, int nowait);

/*
 * ust_xcross_in -- the read side's judgement of mp, just rebuilt (bytes
 *   copied) from record *m of the far side, for a type other than M_DATA
 *   (M_DATA crosses as is: the caller tests that one type and calls this
 *   only for the others).
 *   Context: the read service procedure of xe (one at a time per end: it
 *   alone uses the bell's receive state).
 *   Returns mp (possibly changed: options filtered) to send up, or NULL:
 *   refused, mp freed, counted.
 */
mblk_t *ust_xcross_in(struct ust_xend *xe, const struct xring_msg *m, mblk_t *mp);

/* ust_xcross_counts -- this process's counters, XC_NCOUNTS of them (for
 *   `ustreams strinfo -P` and the tests).  Context: any. */
void ust_xcross_counts(long out[XC_NCOUNTS]); /* declared in procs.h too (out[3]) */

#endif /* UST_SD_XCROSS_H */
