/* SPDX-License-Identifier: MIT */
/*
 * sd_fork.c -- the stream head and fork(): what the child sees of the
 * streams it inherits, and the head's fork hooks.
 *
 * Principles of operation
 *   Streams do not cross processes (yet): a stream's queues, modules and
 *   driver live in the memory of the process that opened it, and its
 *   descriptor is one end of a socket pair whose readiness tokens the library
 *   of that process moves (sd_fd.c).  After fork() the child holds a copy of
 *   that memory and shares the sockets with the parent, so anything the child
 *   did with an inherited stream would either act on a frozen copy or steal
 *   the parent's tokens.  The child therefore treats every inherited stream
 *   as detached (ust_sd_detach_inherited, from the child hook):
 *     - every strm_* call on it fails with EIO (the device cannot do I/O for
 *       this process, as a tty does for a process that lost it);
 *     - strm_poll reports POLLERR for it and never polls its descriptor;
 *     - isastream still returns 1 (it is a STREAMS file);
 *     - strm_close releases the child's descriptor and table slot and runs
 *       no close procedure (they belong to the parent, which keeps the
 *       stream whole);
 *     - the library's own descriptors of it are closed in the child at once,
 *       so no path of the child can reach the parent's tokens.
 *   Its memory (head, queues, messages) stays as the copy it is, never
 *   freed or read again: it may have been mid-update when the parent's other
 *   threads were frozen.  New streams opened in the child work fully.
 *   Raw read(2)/write(2)/recv on an inherited descriptor bypass the library
 *   and would disturb the parent's readiness: don't (docs/STREAMHEAD.md).
 *
 * Hooks (ranks in src/core/forksafe.h; prepare in increasing rank):
 *   UST_FORK_HEAD_OPEN     tab_lock of sd_open.c; child: ust_sd_fork_child
 *   UST_FORK_HEAD_HOLD     ht_lock of sd_hold.c
 *   UST_FORK_HEAD_FATTACH  fattach_lock of sd_fattach.c
 *   (UST_FORK_XPIPE, _FIFO_NAME, _RDV, _RELAY: src/procs/, registered by
 *   ust_procs_init)
 *   UST_FORK_HEAD_FD       the descriptor table and stream head pool locks;
 *                          child: the locks of free heads re-initialised
 *   UST_FORK_HEAD_CHAN     efd_lock of sd_chan.c; child: the pollers'
 *                          eventfds closed
 *   sd_plumb, link_serial and pipe_lock are not taken (the first two are
 *   held while sleeping on other threads): the child re-initialises them.
 *   sd_lock and the queue locks of streams in use are not taken either: they
 *   belong to streams the child detaches, whose locks it re-initialises.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "sd_chan.h"
#include "sthead.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_register(void)
{
    ust_fork_register(UST_FORK_HEAD_OPEN, ust_sd_open_fork_prepare, ust_sd_open_fork_parent,
                      ust_sd_fork_child);
    ust_fork_register(UST_FORK_HEAD_HOLD, ust_sd_hold_fork_prepare, ust_sd_hold_fork_parent,
                      ust_sd_hold_fork_child);
    ust_fork_register(UST_FORK_HEAD_FATTACH, ust_fattach_fork_prepare, ust_fattach_fork_parent,
                      ust_fattach_fork_child);
    ust_fork_register(UST_FORK_HEAD_FD, ust_sd_fd_fork_prepare, ust_sd_fd_fork_parent,
                      ust_sd_fd_fork_child);
    ust_fork_register(UST_FORK_HEAD_LEND, ust_lend_fork_prepare, ust_lend_fork_parent,
                      ust_lend_fork_child);
    ust_fork_register(UST_FORK_HEAD_WATCH, ust_sd_watch_fork_prepare, ust_sd_watch_fork_parent,
                      ust_sd_watch_fork_child);
    ust_fork_register(UST_FORK_HEAD_CHAN, ust_sd_chan_fork_prepare, ust_sd_chan_fork_parent,
                      ust_sd_chan_fork_child);
    ust_fork_register(UST_FORK_HEAD_UCOPY, ust_ucopy_fork_prepare, ust_ucopy_fork_release,
                      ust_ucopy_fork_release);
}

void ust_sd_fork_init(void)
{
    pthread_once(&fork_once, fork_register);
}

__attribute__((constructor)) static void sd_fork_constructor(void)
{
    ust_sd_fork_init();
}

void ust_sd_detach_inherited(struct stdata *sd)
{
    if (ust_sd_forked(sd))
        return;
    ust_lock_init(&sd->sd_lock);
    ust_lock_count_take(&sd->sd_lock); /* no write snapshot survives (sd_write.c) */
    ust_lock_init(&sd->sd_plumb);
    ust_lend_forget(sd);
    sd->sd_ufd = -1; /* a user descriptor: strm_close's */
    __atomic_store_n(&sd->sd_forked, 1, __ATOMIC_RELAXED);
}

/*
 * ust_sd_fork_child -- the head's child hook (rank UST_FORK_HEAD_OPEN, the
 *   last child hook to run: the core and the head's other tables are already
 *   reset).  Detaches the streams of the descriptor table (including any
 *   whose open had entered a descriptor but not yet registered the stream)
 *   and every registered stream (also those without a descriptor: pipe peers,
 *   streams linked under a multiplexer or fattached), then releases tab_lock.
 */
void ust_sd_fork_child(void)
{
    ust_sd_fd_detach_all(ust_sd_detach_inherited);
    ust_pipe_fork_child();
    ust_sd_link_fork_child();
    ust_fifo_fork_child();
    ust_sd_open_fork_child(ust_sd_detach_inherited);
}

int ust_sd_fork_close(int fd, struct stdata *sd)
{
    ust_sd_tab_lock();
    if (ust_sd_peek(fd) != sd || ust_sd_detach_fd(fd, sd) < 0) {
        ust_sd_tab_unlock();
        errno = EBADF;
        return -1;
    }
    ust_sd_tab_unlock();
    return 0;
}
