/* SPDX-License-Identifier: MIT */
/*
 * sd_procs.h -- the stream head across processes: what fork() does to the
 * streams of a process, pipes split across processes (sd_pipe.c, sd_xpipe.c)
 * and descriptors passed between processes (sd_passfd.c).  Included by
 * sthead.h at this point (its types come first); names other processes open
 * are in sd_names.h.
 */
#ifndef UST_SD_PROCS_H
#define UST_SD_PROCS_H

/* ---- sd_fork.c: fork() (docs/STREAMHEAD.md, "fork") ---- */
/* In the child of a fork(), every stream the parent had is detached: it is
 * the parent's (its queues, modules and readiness sockets live on there), so
 * the child's strm_* calls on it fail with EIO, strm_poll reports POLLERR,
 * and strm_close releases the child's descriptor and table slot only. */
static inline int ust_sd_forked(const struct stdata *sd)
{
    return __atomic_load_n(&sd->sd_forked, __ATOMIC_RELAXED);
}
/* Register the head's fork hooks with the core (forksafe.h); idempotent.
 * Called at library start (constructor) and by ust_sd_alloc. */
void ust_sd_fork_init(void);
/* Child hook: detach every inherited stream (ust_sd_detach_inherited) and
 * reset the head's tables that describe the parent's streams.  Runs after
 * every other hook of the head and the core (lowest rank). */
void ust_sd_fork_child(void);
/* Mark sd detached in the child: its locks re-initialised (their holders are
 * the parent's threads), the library's readiness descriptors closed so the
 * child can never take or give the parent's tokens.  Idempotent. */
void ust_sd_detach_inherited(struct stdata *sd);
/* strm_close of a detached stream: drop fd from the table and close it; no
 * close procedure runs (they are the parent's).  0, or -1 with errno EBADF. */
int ust_sd_fork_close(int fd, struct stdata *sd);
/* Hooks of the files that own the head's locks, called by sd_fork.c. */
void ust_sd_open_fork_prepare(void);
void ust_sd_open_fork_parent(void);
void ust_sd_open_fork_child(void (*detach)(struct stdata *sd));
void ust_sd_hold_fork_prepare(void);
void ust_sd_hold_fork_parent(void);
void ust_sd_hold_fork_child(void);
void ust_fattach_fork_prepare(void);
void ust_fattach_fork_parent(void);
void ust_fattach_fork_child(void);
void ust_pipe_fork_child(void);

/* ---- sd_pipe.c: pipes split across processes (sd_xpipe.c does the rest) */

/*
 * ust_pipe_split_all -- before fork(): give every connected pipe of the
 *   process its channel between processes (ust_xpipe_split), so that both
 *   processes can use either end afterwards.  Context: the fork prepare hook
 *   (rank UST_FORK_XPIPE, before any lock of the library is quiesced); may
 *   block (claims drained).  A pipe whose split fails stays in-process (its
 *   ends are detached in the child, as every stream was before).
 */
void ust_pipe_split_all(void);
/* ust_pipe_end_new -- a fresh pipe end with no peer: head, pipe pair linked
 * below it (procedures off), pipe flags and cred set; NULL when out of
 * memory.  *drv receives the pair's read queue. */
struct stdata *ust_pipe_end_new(const cred_t *cr, queue_t **drv);
/* ust_pipe_qlink -- set q's q_next (a pipe pair's link: the twist, sd_xpipe.c's
 * cut of it), bumping the plumbing generation. */
void ust_pipe_qlink(queue_t *q, queue_t *next);

/* ---- sd_passfd.c: an M_PASSFP for a descriptor received from another
 * process (fd owned by the message from now on); NULL when out of memory
 * (fd untouched). */
mblk_t *ust_passfp_received(int fd, uid_t uid, gid_t gid);
/* An M_PASSFP of the stream fd of this process (a reference taken; the
 * access mode of fd), with the ids given; NULL when out of memory. */
mblk_t *ust_passfp_stream(int fd, uid_t uid, gid_t gid);
/* Undo ust_passfp_received: the descriptor back, the message freed. */
int ust_passfp_release_fd(mblk_t *mp);

/* ---- sd_xpipe.c: the bottom of a pipe end whose peer may be in another
 * process: a ring pair in shared memory (src/core/xring.h) and a bell. */
struct ust_xend;
/* I_SENDFD on split end sd: fd passed to the other side's process. */
int ust_xpipe_sendfd(struct stdata *sd, int fd);
/* The pipe pair's procedures (used only once the end is split). */
int ust_xpipe_wput(queue_t *q, mblk_t *mp);
int ust_xpipe_wsrv(queue_t *q);
int ust_xpipe_rput(queue_t *q, mblk_t *mp);
int ust_xpipe_rsrv(queue_t *q);
/* Split the connected pipe (sd[0], sd[1]) (already unlinked from each other
 * by the caller: sd_peer cleared, breaks filed): 0 or a positive errno. */
int ust_xpipe_split(struct stdata *sd[2]);
/* A data, ioctl or poll call on split end sd (ust_sd_get_acc, strm_poll; a
 * call counted): from now on this process takes what arrives for it (see
 * "Who takes" in sd_xpipe.c).  strm_close, isastream, fcntl do not count. */
void ust_xpipe_touch(struct stdata *sd);
/* A reader about to sleep on split end sd's empty head (wait_common, no
 * lock held, inside a call): run the read service procedure on this thread
 * now.  1 if it ran (the caller looks at its wait sequence again). */
int ust_xpipe_pull(struct stdata *sd);
/* A reader spinning on split end sd's empty head (wait_common): ENTER
 * before the spin (the read service procedure then leaves the ring unarmed:
 * no doorbell per message while a reader watches); READY tells whether the
 * ring has something (then pull); LEAVE when done, or SLEEP before
 * sleeping: the ring is armed, 1 if something came meanwhile (do not
 * sleep: pull). */
enum { UST_XREADER_ENTER, UST_XREADER_READY, UST_XREADER_LEAVE, UST_XREADER_SLEEP };
int ust_xpipe_reader(struct stdata *sd, int how);
/*
 * ust_xpipe_write -- a small write(2) of n bytes (at most 1024: one plain
 *   M_DATA message) on
 *   split end sd, copied from u straight into the ring as one record: no
 *   message is built, no put procedure runs.  Taken only when the pipe pair
 *   is right below the head (no module pushed; the plumbing generation is
 *   checked again under the ring's lock, as a deposit does, sd_arrive.c),
 *   nothing of this end waits for room (its write queue is empty) and the
 *   ring has room below its high water mark.
 *   Context: the writer's thread, inside a call, no lock held.
 *   Returns 1 written; 0 not taken, nothing of u consumed (the caller takes
 *   the normal path, which queues, flow-controls and reports errors);
 *   -EFAULT (a bad buffer: nothing written); for a write of any size:
 *   -EIO (the ring is broken), -EPIPE (the peer side is gone, or shut our
 *   ring), -EAGAIN (non-blocking, and the ring's lock is held: xring.h).
 */
int ust_xpipe_write(struct stdata *sd, struct ust_sd_uio *u, size_t n);
/* A split end's last close (ust_pipe_teardown, sd_plumb held). */
void ust_xpipe_end_close(struct stdata *sd);
/* ust_xpipe_new_end -- a pipe end of this process whose peer end is for
 *   another process: a new channel and bell.  *fd is the end's descriptor
 *   (read and write); *memfd (the channel) and *bell (bell end 1) are what the
 *   other process needs for ust_xpipe_adopt(.., side 1, ..): the caller sends
 *   and closes them.  Returns 0 or an errno (ENOMEM, ENOSR, EMFILE...). */
int ust_xpipe_new_end(const cred_t *cr, int *fd, int *memfd, int *bell);
/* ust_xpipe_adopt -- side `side` of a channel another process made, from its
 *   memfd and bell end as received (every field the mapping holds is checked;
 *   memfd is dup'ed by the channel, bell consumed in all cases): a new pipe
 *   end of this process, opened with cr (NULL: this process's credentials).  Returns its descriptor (read and write), or -errno
 *   (EINVAL: not a channel or not a bell). */
int ust_xpipe_adopt(int memfd, int bell, int side, const cred_t *cr);
/* fork hooks (rank UST_FORK_XPIPE, registered by sd_fork.c) */
void ust_xpipe_fork_prepare(void);
void ust_xpipe_fork_parent(void);
void ust_xpipe_fork_child(void);
/* sd_fd.c: in a fork child, point descriptor fd (a detached stream's) at sd
 * through a new readiness pair dup'ed onto fd: 0 or -errno. */
int ust_sd_fork_rebind(int fd, struct stdata *sd, int *ufd_made);
/* sd_fd.c: in a fork child, call fn(fd, sd) for each descriptor of the table. */
void ust_sd_fd_each(void (*fn)(int fd, struct stdata *sd, void *arg), void *arg);
void ust_sd_link_fork_child(void);
void ust_sd_fd_fork_prepare(void);
void ust_sd_fd_fork_parent(void);
void ust_sd_fd_fork_child(void);
/* Child: call detach for every stream in the descriptor table. */
void ust_sd_fd_detach_all(void (*detach)(struct stdata *sd));

#endif /* UST_SD_PROCS_H */
