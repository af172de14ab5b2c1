/* SPDX-License-Identifier: MIT */
/*
 * sd_chan.h -- the channel's reader (sd_chan.c): a reader blocked on an empty
 * stream over a kernel socket waits on the socket itself.  Private to the
 * stream head.
 */
#ifndef UST_SD_CHAN_H
#define UST_SD_CHAN_H

#include <sys/stream.h>

struct stdata;
struct ust_waitq;
struct ust_iow;

/*
 * ust_sd_chan_of -- the socket registration of sd's driver (the bottom of
 *   the write side), or NULL (no socket, a pipe, channel waits off).
 *   *rqp: the driver's read queue.  sd_lock held (the stream's plumbing
 *   does not change under it).
 */
struct ust_iow *ust_sd_chan_of(struct stdata *sd, queue_t **rqp);

/*
 * ust_sd_chan_wait -- wait, as a reader of sd's read queue that found it
 *   empty, on the socket of io and on sd_rwait's wake-ups (w, sequence seq
 *   read before the test) together; when the socket is readable, run the
 *   driver's read service procedure (rq) on this thread, whose deposits set
 *   no readiness token (the read that follows takes them; the read's end
 *   sets the token for what it leaves).
 *   Context: inside a library call, sd_lock NOT held, no lock held.
 *   Returns 0 (look again; *seen set when something came or woke it),
 *   EINTR (a signal handler ran and the read is not restarted), or -1: no
 *   channel wait possible now (another thread polls, no eventfd): the
 *   caller sleeps as usual.
 */
int ust_sd_chan_wait(struct stdata *sd, struct ust_iow *io, queue_t *rq, struct ust_waitq *w,
                     unsigned seq, int *seen);

/* The stream whose deposits this thread makes while it pulls for its own
 * read (no readiness token for them), or NULL (sd_ready.c reads it). */
struct stdata *ust_sd_chan_pulling(void);

/*
 * The lazy readable token (sd_chan.c, "The lazy token").  All: sd_lock held.
 * ust_sd_chan_defer -- at the end of a read that leaves normal messages and
 *   shows no token: if this thread is sd's channel reader and nobody else
 *   could be waiting, owe the token (the epoll thread pays it within about
 *   2 ms unless a read drains the queue first) and return 1; else 0 (the
 *   caller sets it now).
 * ust_sd_chan_settle -- a read's end that makes the tokens exact: the debt
 *   is void.
 * ust_sd_chan_watched -- the library's poll (strm_poll: poll, select,
 *   epoll_ctl under the preload) looks at sd: from now on its tokens are
 *   never owed (until the endpoint is bound again), and one owed is set now.
 */
int ust_sd_chan_defer(struct stdata *sd);
void ust_sd_chan_settle(struct stdata *sd);
void ust_sd_chan_watched(struct stdata *sd);

/* A wake of w reaches its channel poller, if any (sd_wait.c ust_sd_wake). */
void ust_sd_chan_kick(struct ust_waitq *w);

/* fork(): the child forgets the pollers' eventfds (the parent's objects). */
void ust_sd_chan_fork_prepare(void);
void ust_sd_chan_fork_parent(void);
void ust_sd_chan_fork_child(void);

#endif /* UST_SD_CHAN_H */
