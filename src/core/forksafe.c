/* SPDX-License-Identifier: MIT */
/*
 * forksafe.c -- the library's pthread_atfork handlers.
 *
 * Principles of operation
 *   fork() in a threaded process copies one thread: the caller.  Any lock
 *   another thread held at that instant stays held in the child for ever, and
 *   any thread the library started (scheduler, timer, bufcall) is gone.  The
 *   library therefore installs one set of atfork handlers (here, once) that
 *   run an ordered table of hook sets registered by the files that own the
 *   locks (forksafe.h): prepare hooks in increasing rank, so locks are taken
 *   in an order no other thread can contradict; parent and child hooks in
 *   decreasing rank.  One table instead of one pthread_atfork call per file
 *   makes the order explicit (pthread_atfork runs prepare handlers in reverse
 *   registration order, which depends on start-up order).
 *
 *   Two ways to make a lock safe, chosen per lock (docs/ARCHITECTURE.md,
 *   "fork"):
 *   - quiesce: prepare takes it, parent and child release it.  Used where the
 *     child must read the guarded data (registry, pools, depots, tables).
 *     Only locks held briefly, never across a wait for another thread, qualify:
 *     otherwise fork() could wait for the thread that calls it.
 *   - reset: the child re-initialises it and discards the state it guards.
 *     Used for per-object locks of what belongs to the parent's threads and
 *     streams (scheduler run lists, perimeters, the stream heads the child
 *     inherits, sd_plumb and link_serial, which are held while sleeping).
 *
 * Locking
 *   fk_lock guards the table.  prepare takes it first and the parent and child
 *   hooks release it last, so a registration never races with a fork.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/cmn_err.h>

#include "strcore.h"

#define FK_MAX 32

struct fk_set {
    int rank;
    void (*prepare)(void);
    void (*parent)(void);
    void (*child)(void);
};

static ust_lock_t fk_lock = UST_LOCK_INIT; /* guards fk_tab, fk_n; taken first by prepare */
static struct fk_set fk_tab[FK_MAX];       /* fk_lock: sorted by rank, stable */
static int fk_n;                           /* fk_lock */
static atomic_uint fk_gen;                 /* forks down the line to this process */
static pthread_once_t fk_once = PTHREAD_ONCE_INIT;

static void fk_prepare(void)
{
    ust_lock(&fk_lock);
    for (int i = 0; i < fk_n; i++)
        if (fk_tab[i].prepare != NULL)
            fk_tab[i].prepare();
}

static void fk_parent(void)
{
    for (int i = fk_n - 1; i >= 0; i--)
        if (fk_tab[i].parent != NULL)
            fk_tab[i].parent();
    ust_unlock(&fk_lock);
}

static void fk_child(void)
{
    atomic_fetch_add_explicit(&fk_gen, 1, memory_order_relaxed);
    for (int i = fk_n - 1; i >= 0; i--)
        if (fk_tab[i].child != NULL)
            fk_tab[i].child();
    ust_unlock(&fk_lock);
}

/* Insert a set, keeping rank order (equal ranks in registration order). */
static int fk_add(int rank, void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    UST_ASSERT_HELD(&fk_lock);
    for (int i = 0; i < fk_n; i++)
        if (fk_tab[i].rank == rank && fk_tab[i].prepare == prepare &&
            fk_tab[i].parent == parent && fk_tab[i].child == child)
            return 0;
    if (fk_n == FK_MAX)
        return ENOMEM;
    int at = fk_n;
    while (at > 0 && fk_tab[at - 1].rank > rank) {
        fk_tab[at] = fk_tab[at - 1];
        at--;
    }
    fk_tab[at] = (struct fk_set){rank, prepare, parent, child};
    fk_n++;
    return 0;
}

/* The core's own sets, then the handlers. */
static void fk_init_once(void)
{
    ust_lock(&fk_lock);
    fk_add(UST_FORK_LOADER, ust_loader_fork_prepare, ust_loader_fork_parent,
           ust_loader_fork_child);
    fk_add(UST_FORK_REGISTRY, ust_reg_fork_prepare, ust_reg_fork_parent, ust_reg_fork_child);
    fk_add(UST_FORK_TIMER, ust_timer_fork_prepare, ust_timer_fork_parent, ust_timer_fork_child);
    fk_add(UST_FORK_BUFCALL, ust_bufcall_fork_prepare, ust_bufcall_fork_parent,
           ust_bufcall_fork_child);
    fk_add(UST_FORK_SCHED, NULL, NULL, ust_sched_fork_child);
    fk_add(UST_FORK_QPOOL, ust_qpool_fork_prepare, ust_qpool_fork_parent, ust_qpool_fork_child);
    fk_add(UST_FORK_BLOCKS, ust_blocks_fork_prepare, ust_blocks_fork_parent,
           ust_blocks_fork_child);
    ust_unlock(&fk_lock);
    if (pthread_atfork(fk_prepare, fk_parent, fk_child) != 0)
        cmn_err(CE_WARN, "ustreams: cannot install the fork handlers");
}

/*
 * ust_fork_init -- install the handlers and the core's hook sets.
 *   Context: any thread; idempotent (pthread_once).  Called by ust_init (a
 *   constructor) and by every registration.
 */
void ust_fork_init(void)
{
    pthread_once(&fk_once, fk_init_once);
}

int ust_fork_register(int rank, void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    ust_fork_init();
    ust_lock(&fk_lock);
    int err = fk_add(rank, prepare, parent, child);
    ust_unlock(&fk_lock);
    return err;
}

unsigned ust_fork_generation(void)
{
    return atomic_load_explicit(&fk_gen, memory_order_relaxed);
}

/* The process id with the fork generation it was read in (generation in the
 * high half): one word, so a reader never pairs one's pid with another's
 * generation. */
static _Atomic unsigned long long fk_pid;

pid_t ust_getpid(void)
{
    unsigned long long v = atomic_load_explicit(&fk_pid, memory_order_relaxed);
    unsigned gen = ust_fork_generation();
    if (v != 0 && (unsigned)(v >> 32) == gen)
        return (pid_t)(unsigned)v;
    pid_t pid = getpid();
    atomic_store_explicit(&fk_pid, ((unsigned long long)gen << 32) | (unsigned)pid,
                          memory_order_relaxed);
    return pid;
}
