/* SPDX-License-Identifier: MIT */
/*
 * sd_procs.h -- the stream head across processes: what fork() does to the
 * streams of a process, pipes split across processes (sd_pipe.c, sd_xpipe.c)
 * and descriptors passed between processes (sd_passfd.c).  Included by
 * sthead.h at this point (its types come first).  The cross-process layer
 * itself (split pipes, the bell, names, rendezvous, relays) is src/procs/,
 * reached only through the table of hooks at the end of this file.
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
/* ust_pipe_split_failures -- how many pipes forks of this process (or of
 * its ancestors, the count being inherited) could not split: their ends
 * were detached (EIO) in the child.  Context: any thread, no lock. */
long ust_pipe_split_failures(void);
/* ust_pipe_bell_rescued -- how many times, since the process started (the
 * count inherited by a child), a split pipe's writer waiting for room was
 * found by the write side's safety net (its look again, sd_xpipe.c
 * wsrv_again) instead of by its doorbell: the reader had reported room
 * (the ring at its low-water mark, the writer's arming fired) and no
 * doorbell reached this process within 40 ms.  0 while the bell protocol
 * holds (docs/STREAMHEAD.md "The bell"); shown by strinfo -P.
 * ust_pipe_bell_rescue_count adds one.  Context: any thread, no lock. */
long ust_pipe_bell_rescued(void);
void ust_pipe_bell_rescue_count(void);
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
/* The ordinary file an M_PASSFP carries (its descriptor, still the
 * message's) and its sender's ids; -1 when it carries a stream of this
 * process instead. */
int ust_passfp_file(const mblk_t *mp, uid_t *uid, gid_t *gid);

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

/* ---- names other processes open: what the head itself defines
 * (sd_fattach.c, sd_open.c); the rendezvous and relays are src/procs/ ---- */
/* The stream attached to the file (dev, ino), with one sd_refs reference
 * the caller gives back (the last one tears down), and the path it was
 * attached by into path (pathsz bytes) when path is not NULL; NULL if none. */
struct stdata *ust_fattach_lookup(dev_t dev, ino_t ino, char *path, size_t pathsz);
/* fdetach of the file (dev, ino) by its key: 0 or EINVAL (nothing attached). */
int ust_fattach_detach_key(dev_t dev, ino_t ino);
/* Open of an attached stream sd (consumes the lookup's reference): a new
 * descriptor on it (its modules reopened), or a new pipe when connld is its
 * top module.  Returns the descriptor or -errno. */
int ust_sd_open_attached(struct stdata *sd, int oflag, const cred_t *cr);

/* ---- the layer above: streams across processes (src/procs/) ----
 *
 * The in-process head never calls src/procs/ by name: the cross-process
 * layer registers this table once at library start (ust_sd_set_procs, from
 * src/admin/start.c through ust_procs_init) and the head calls through it.
 * Every entry is set by the one registration; before it (no table), the
 * head behaves as a process that never shares a stream: no pipe is split,
 * no name is served to or opened from another process (ENOSYS where an
 * answer is due).  The table is read with an acquire load; it never changes
 * once set.
 */
struct stat;
struct ust_sd_uio;
struct iovec;
struct ust_procs_ops {
    /* sd_pipe.c: split the connected pipe (sd[0], sd[1]) (unlinked by the
     * caller): 0 or a positive errno; a split end's last close. */
    int (*xpipe_split)(struct stdata *sd[2]);
    void (*xpipe_end_close)(struct stdata *sd);
    /* sd_pipe.c: the pipe pair's procedures, used once the end is split. */
    int (*xpipe_wput)(queue_t *q, mblk_t *mp);
    int (*xpipe_wsrv)(queue_t *q);
    int (*xpipe_rput)(queue_t *q, mblk_t *mp);
    int (*xpipe_rsrv)(queue_t *q);
    /* sd_access.c, sd_poll.c: a data, ioctl or poll call on split end sd. */
    void (*xpipe_touch)(struct stdata *sd);
    /* sd_wait.c: a reader about to sleep or spinning on split end sd's
     * empty head (UST_XREADER_*): run the read side on this thread. */
    int (*xpipe_pull)(struct stdata *sd);
    int (*xpipe_reader)(struct stdata *sd, int how);
    /* sd_write.c: a small write straight into the ring: 1 written, 0 not
     * taken (nothing consumed), -EFAULT. */
    int (*xpipe_write)(struct stdata *sd, struct ust_sd_uio *u, size_t n);
    /* sd_read.c: a byte-stream read that has nothing yet, straight out of
     * the ring (one copy): bytes read, 0 not this way, -EFAULT. */
    int (*xpipe_read)(struct stdata *sd, const struct iovec *iov, int iovcnt, size_t total);
    /* sd_write.c: a data message of write or putmsg on split end sd, into
     * the ring now or not at all: 1 sent, 0 not this way (a module is
     * pushed: putnext), -EAGAIN no room (kept; the head's write queue is
     * enabled when there is), -EPIPE / -EIO (kept). */
    int (*xpipe_send)(struct stdata *sd, mblk_t *mp, int nonblock);
    /* sd_write.c: after a message went through a module (xpipe_send said
     * 0): 1 nothing of split end sd waits below the head in this process,
     * 0 something does (the head's write queue is enabled once it went),
     * -EPIPE / -EIO. */
    int (*xpipe_sent)(struct stdata *sd);
    /* sd_poll.c: 0 when the ring of split end sd has no room for a write
     * (the head's write queue is then enabled when it has), else 1. */
    int (*xpipe_room)(struct stdata *sd);
    /* sd_passfd.c: I_SENDFD on split end sd. */
    int (*xpipe_sendfd)(struct stdata *sd, int fd);
    /* sd_fattach.c: make / drop the rendezvous of the name whose node is
     * open as `node` (O_PATH; the rendezvous keeps its own copy, the proof
     * that this process owns the name): 0 and *lfd, EBUSY (another process
     * owns it), or an errno. */
    int (*name_listen)(int node, int *lfd);
    void (*name_unlisten)(int lfd);
    /* sd_fattach.c: fdetach of the name at path (st: its node) another
     * process owns: 0, EINVAL (none), EPERM. */
    int (*name_detach)(const char *path, const struct stat *st);
    /* sd_open.c: connld for an open in this process (a new pipe, one end
     * sent up sd): the other end's descriptor or -errno. */
    int (*connld_open)(struct stdata *sd, const cred_t *cr);
    /* sd_open.c: strm_open of a path that is not a device: *handled 0
     * when the path does not exist; else a descriptor or -errno. */
    int (*open_path)(const char *path, int oflag, cred_t *cr, int *handled);
};
/* ENTER returns 1 when the reader's read copies from the ring itself
 * (sd_xpipe_direct.c): its wait ends when the ring has data, no pull; 2 when
 * its read met the ring claimed by the read service procedure: the wait
 * sleeps on the head alone (LEAVE at once), which that procedure wakes. */
/* WOKE: a direct reader's sleep (after SLEEP said 0) is over. */
enum { UST_XREADER_ENTER, UST_XREADER_READY, UST_XREADER_LEAVE, UST_XREADER_SLEEP, UST_XREADER_WOKE };
/* Install the cross-process layer's table (once; a second call is ignored). */
void ust_sd_set_procs(const struct ust_procs_ops *ops);
/* The table, or NULL before it is installed (sd_procs_hook.c). */
const struct ust_procs_ops *ust_sd_procs(void);

#endif /* UST_SD_PROCS_H */
