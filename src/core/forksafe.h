/* SPDX-License-Identifier: MIT */
/*
 * forksafe.h -- fork() safety: one ordered table of pthread_atfork hooks.
 *
 * Every file that owns a process-wide lock registers its hooks here, with the
 * rank of its locks; src/core/forksafe.c installs the only pthread_atfork
 * handlers of the library and runs the prepare hooks in increasing rank and
 * the parent and child hooks in decreasing rank.  Upper layers (src/head,
 * src/drivers, src/admin) register at start-up; the core never calls up.
 *
 * A prepare hook quiesces: it takes its locks, so that the child finds the
 * data they guard consistent (no other thread of the parent is copied into
 * the child, and a lock held by one of them would stay held for ever).  The
 * parent hook releases them.  The child hook releases or re-initialises them
 * and resets whatever belonged to the parent's threads (see "fork" in
 * docs/ARCHITECTURE.md for what each layer does and why).
 *
 * Ranks: a prepare hook may only take locks that no holder of a
 * lower-ranked hook's lock waits for.  Locks that are held while sleeping on
 * another thread (sd_plumb, link_serial) are never taken: the child
 * re-initialises them.  Leaves (held briefly, nothing taken under them) come
 * last.
 */
#ifndef UST_FORKSAFE_H
#define UST_FORKSAFE_H

#include <sys/types.h> /* pid_t */

enum ust_fork_rank {
    UST_FORK_XPIPE = 5,         /* src/procs/sd_xpipe.c: pipes split (prepare), list of split ends */
    UST_FORK_HEAD_OPEN = 10,    /* src/head/sd_open.c: open streams, share table */
    UST_FORK_HEAD_HOLD = 20,    /* src/head/sd_hold.c: SNDHOLD timer table */
    UST_FORK_HEAD_FATTACH = 24, /* src/head/sd_fattach.c: fattach table (above rdv_lock) */
    UST_FORK_FIFO_NAME = 25,    /* src/procs/sd_fifo_name.c: FIFOs owned (above rdv_lock) */
    UST_FORK_RDV = 26,          /* src/procs/sd_rdv.c: rendezvous listeners (leaf) */
    UST_FORK_RELAY = 27,        /* src/procs/sd_relay.c: relays (leaf; child: before XPIPE's) */
    UST_FORK_LOADER = 30,       /* src/core/loader.c: loaded objects (above registry) */
    UST_FORK_DRIVER = 40,       /* src/drivers: each driver's own table lock */
    UST_FORK_AUTOPUSH = 50,     /* src/admin/autopush.c (leaf) */
    UST_FORK_REGISTRY = 60,     /* src/core/registry.c (nothing taken under it) */
    UST_FORK_HEAD_TOKPAY = 65,  /* src/head/sd_tokpay.c: the token payer's list (its tick,
                                 * holding it, waits for the timer lock and below) */
    UST_FORK_TIMER = 70,        /* src/core/timeout.c */
    UST_FORK_BUFCALL = 75,      /* src/core/bufcall.c */
    UST_FORK_SCHED = 80,        /* src/core/sched.c (child hook only) */
    UST_FORK_QPOOL = 90,        /* src/core/queue.c: free queue pairs (leaf) */
    UST_FORK_HEAD_FD = 95,      /* src/head/sd_fd.c: descriptor table, free heads (leaves) */
    UST_FORK_HEAD_WATCH = 96,   /* src/head/sd_watch.c: sleepers' slots (leaf) */
    UST_FORK_HEAD_LEND = 97,    /* src/head/sd_lend.c: the ring of L ends (leaf) */
    UST_FORK_HEAD_CHAN = 98,    /* src/head/sd_chan.c: channel pollers' eventfds (leaf) */
    UST_FORK_BLOCKS = 100,      /* src/core/mblk_cache.c: block depots, thread cache list (leaves) */
    UST_FORK_HEAD_UCOPY = 105,  /* src/head/sd_ucopy.c: signal handler slots (leaf) */
    UST_FORK_PUBLISH = 110,     /* src/admin/publish.c: the publishing socket (leaf) */
};

/*
 * ust_fork_register -- add a hook set to the fork table.
 *   rank: enum ust_fork_rank.  Any of the three hooks may be NULL.  Hooks run
 *   in the thread that calls fork(), with the table's own lock held; they must
 *   not call fork() or register hooks, and the child hook may only do what is
 *   safe after fork() in a multithreaded process (plus malloc/free, which glibc
 *   makes fork-safe).
 *   Context: any thread; idempotent for an identical set.
 *   Returns 0, or ENOMEM when the table (32 sets) is full.
 */
int ust_fork_register(int rank, void (*prepare)(void), void (*parent)(void), void (*child)(void));

/*
 * ust_fork_generation -- how many fork() children this process is, down the
 *   line (0 in the original process, 1 in its child, 2 in a grandchild...).
 *   Context: any thread; a relaxed load.
 */
unsigned ust_fork_generation(void);

/*
 * ust_getpid -- getpid(), read once per fork generation (no system call on
 *   the open/close/ioctl paths that record the caller's credentials).  A
 *   child made without the fork handlers (_Fork, a raw clone) sees its
 *   parent's pid here: it cannot use the library anyway.
 *   Context: any thread.
 */
pid_t ust_getpid(void);

/* Core files' hooks, registered by ust_fork_init (forksafe.c). */
void ust_fork_init(void);
void ust_loader_fork_prepare(void);
void ust_loader_fork_parent(void);
void ust_loader_fork_child(void);
void ust_reg_fork_prepare(void);
void ust_reg_fork_parent(void);
void ust_reg_fork_child(void);
void ust_timer_fork_prepare(void);
void ust_timer_fork_parent(void);
void ust_timer_fork_child(void);
void ust_bufcall_fork_prepare(void);
void ust_bufcall_fork_parent(void);
void ust_bufcall_fork_child(void);
void ust_sched_fork_child(void);
void ust_qpool_fork_prepare(void);
void ust_qpool_fork_parent(void);
void ust_qpool_fork_child(void);
void ust_blocks_fork_prepare(void);
void ust_blocks_fork_parent(void);
void ust_blocks_fork_child(void);

#endif /* UST_FORKSAFE_H */
