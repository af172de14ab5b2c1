/* SPDX-License-Identifier: MIT */
/*
 * sd_urec.h -- private to the head: records a program wrote on a stream's
 * descriptor with write(2) (sd_urec.c), and the watch thread that delivers
 * them for programs that never call the library (sd_watch.c).  Included by
 * sthead.h, whose types come first.
 */
#ifndef UST_SD_UREC_H
#define UST_SD_UREC_H

#define UST_UREC_STALLED 1 /* delivery waits for flow control relief */
#define UST_UREC_BUSY 2    /* a thread is delivering (one at a time: order) */
#define UST_UREC_AGAIN 4   /* noted while busy: the deliverer looks again */
/* 1 if buf (n bytes) is one of this process's own POLLOUT fill records. */
int ust_sd_urec_is_fill(const void *buf, size_t n);
/* The fill record (UST_FILL_LEN bytes) this process sends U -> L. */
#define UST_FILL_LEN 512
const void *ust_sd_urec_fill(void);
/* Take every record out of L: fills dropped, the program's records kept on
 * sd_urec for delivery (sd_lock held; bounded by U's send buffer). */
void ust_sd_urec_pull(struct stdata *sd);
/* sd may have records to deliver: put it on the pending list.  Any lock
 * (urec_lock is a leaf); no system call. */
void ust_sd_urec_note(struct stdata *sd);
/* 1 if some stream is on the pending list (one load). */
int ust_sd_urec_pending(void);
/* Deliver the pending streams' records into their streams, flow control
 * respected.  No lock held; inside a library call or on a library thread. */
void ust_sd_urec_run(void);
/* sd's L is closed (the head freed, or given a new pair): the records
 * taken from it and not delivered go.  sd_lock held (a deliverer that
 * noted the head earlier may still look at it; its place on the pending
 * list stays, harmless). */
void ust_sd_urec_forget(struct stdata *sd);
/* sd is about to be freed (no lock held): off the pending list, and no
 * thread delivers its records any more once this returns. */
void ust_sd_urec_detach(struct stdata *sd);
/* A head out of the pool, its new life set up (ust_sd_alloc, after
 * ust_sd_headinit): notes list it again.  Detach marked it pooled, and a
 * note of a pooled head -- a stale report from the watch's ring about its
 * last life -- is dropped. */
void ust_sd_urec_attach(struct stdata *sd);
void ust_sd_urec_fork_prepare(void);
void ust_sd_urec_fork_parent(void);
void ust_sd_urec_fork_child(void);
/* Start the watch thread (sd_watch.c) if it does not run: it also delivers
 * records for programs that never call the library again. */
void ust_sd_watch_start(void);

#endif /* UST_SD_UREC_H */
