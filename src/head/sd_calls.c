/* SPDX-License-Identifier: MIT */
/*
 * sd_calls.c -- counting the calls in progress on a stream, so that a
 * teardown waits for them (sd_close.c wait_calls).
 *
 * Principles of operation
 *   A call is counted in one of two ways.
 *   - A slot of the calling thread (a hazard pointer): the thread stores the
 *     stream in its own slot, with no atomic read-modify-write and no
 *     fence, and the lookup then checks the descriptor table again
 *     (ust_sd_get).  A teardown, which runs once the table no longer names
 *     the stream, issues membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) before
 *     it looks at the slots: a full barrier on every CPU running a thread of
 *     this process, which pairs with the caller's compiler barrier as a
 *     fence on both sides would (asymmetric Dekker).  So either the caller's
 *     second look at the table sees the stream gone and it backs off, or the
 *     teardown sees its slot and waits.
 *   - The stream's counter sd_calls (an atomic add), when the thread's slot
 *     is busy (a call made inside another: a signal handler, a stale
 *     descriptor's drop), when membarrier is not available (then every
 *     call counts this way), and for the library's own threads that hold a
 *     stream (sd_urec.c).
 *   Ending a call clears the slot if it names the stream, else takes one off
 *   the counter.  A nested call on the same stream may thus clear the outer
 *   call's slot and leave the counter one up until the outer call ends: at
 *   every moment slots plus counter cover the calls in progress.
 *   Measured 2026-11-28 (bench/README.md "Calls without atomics"): the two
 *   atomics of a call were 10-25 % of a 1-64 B write or read.
 *
 *   Slots are made on a thread's first call, kept on a list that only grows
 *   (lock-free to walk), and reused once their thread has exited (a key
 *   destructor frees them).  fork(): the child's other threads are gone, so
 *   their slots are cleared and freed (ust_sd_calls_fork_child, from
 *   sd_fd.c's child hook).
 *
 * Locking
 *   cs_lock guards the set-up (the key, membarrier's registration), taking a
 *   free slot and the list's growth; a leaf.  A fork child re-initializes it
 *   (ust_sd_calls_fork_child).
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sthead.h"

struct ust_callslot {
    struct stdata *sd;         /* atomic: the stream of this thread's call, or NULL */
    int used;                  /* atomic: a live thread owns it */
    struct ust_callslot *next; /* the list (set before publication, never changed) */
};

static ust_lock_t cs_lock = UST_LOCK_INIT; /* leaf: set-up, taking a slot, the list's growth */
static struct ust_callslot *cs_list;       /* atomic (acquire/release): every slot */
static int cs_on;                          /* atomic: membarrier registered: slots in use */
static int cs_ready;                       /* atomic: cs_init ran (under cs_lock, not
                                            * pthread_once: a fork during it would leave
                                            * the child's once for ever in progress) */
static pthread_key_t cs_key;
static _Thread_local struct ust_callslot *tls_slot; /* this thread's, or NULL */
static _Thread_local int tls_tried;                 /* a slot was asked for (no retry) */

static int membarrier(int cmd)
{
    return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

/* The thread exits (its key destructor): the slot goes back.  A call the
 * thread still makes from a later destructor counts on the stream. */
static void slot_exit(void *p)
{
    struct ust_callslot *cs = p;
    tls_slot = NULL;
    tls_tried = 1;
    __atomic_store_n(&cs->sd, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&cs->used, 0, __ATOMIC_RELEASE);
}

static void cs_init(void)
{
    if (pthread_key_create(&cs_key, slot_exit) != 0)
        return;
    if (getenv("USTREAMS_NO_CALL_SLOTS") == NULL &&
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        __atomic_store_n(&cs_on, 1, __ATOMIC_RELEASE);
}

/* This thread's slot, made on first use; NULL if slots are off or there is
 * no memory (the caller counts on the stream). */
static struct ust_callslot *slot_self(void)
{
    if (tls_tried)
        return NULL;
    tls_tried = 1;
    struct ust_callslot *cs;
    ust_lock(&cs_lock);
    if (!__atomic_load_n(&cs_ready, __ATOMIC_ACQUIRE)) {
        cs_init();
        __atomic_store_n(&cs_ready, 1, __ATOMIC_RELEASE);
    }
    if (!__atomic_load_n(&cs_on, __ATOMIC_ACQUIRE)) {
        ust_unlock(&cs_lock);
        return NULL;
    }
    for (cs = __atomic_load_n(&cs_list, __ATOMIC_ACQUIRE); cs != NULL; cs = cs->next)
        if (!__atomic_load_n(&cs->used, __ATOMIC_ACQUIRE))
            break;
    if (cs == NULL && (cs = calloc(1, sizeof(*cs))) != NULL) {
        cs->next = cs_list;
        __atomic_store_n(&cs_list, cs, __ATOMIC_RELEASE);
    }
    if (cs != NULL)
        __atomic_store_n(&cs->used, 1, __ATOMIC_RELAXED);
    ust_unlock(&cs_lock);
    if (cs != NULL && pthread_setspecific(cs_key, cs) != 0) {
        __atomic_store_n(&cs->used, 0, __ATOMIC_RELEASE);
        cs = NULL;
    }
    tls_slot = cs;
    return cs;
}

void ust_sd_call_begin(struct stdata *sd)
{
    struct ust_callslot *cs = tls_slot;
    if (__builtin_expect(cs == NULL, 0))
        cs = slot_self();
    if (cs != NULL && __atomic_load_n(&cs->sd, __ATOMIC_RELAXED) == NULL) {
        __atomic_store_n(&cs->sd, sd, __ATOMIC_RELAXED);
        /* The caller's next look at the descriptor table comes after this
         * store: a compiler barrier here, membarrier on the teardown's side. */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        return;
    }
    atomic_fetch_add(&sd->sd_calls, 1);
}

void ust_sd_call_end(struct stdata *sd)
{
    struct ust_callslot *cs = tls_slot;
    if (cs != NULL && __atomic_load_n(&cs->sd, __ATOMIC_RELAXED) == sd) {
        /* release: what this call did happens before a teardown that sees
         * the slot empty */
        __atomic_store_n(&cs->sd, NULL, __ATOMIC_RELEASE);
        return;
    }
    atomic_fetch_sub(&sd->sd_calls, 1);
}

/* Slots naming sd now (acquire loads). */
static int slots_naming(const struct stdata *sd)
{
    int n = 0;
    for (struct ust_callslot *cs = __atomic_load_n(&cs_list, __ATOMIC_ACQUIRE); cs != NULL;
         cs = cs->next)
        n += __atomic_load_n(&cs->sd, __ATOMIC_ACQUIRE) == sd;
    return n;
}

void ust_sd_calls_fence(void)
{
    if (__atomic_load_n(&cs_on, __ATOMIC_ACQUIRE))
        (void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

int ust_sd_calls_in(const struct stdata *sd)
{
    return atomic_load(&sd->sd_calls) + slots_naming(sd);
}

void ust_sd_calls_fork_child(void)
{
    struct ust_callslot *mine = tls_slot;
    for (struct ust_callslot *cs = cs_list; cs != NULL; cs = cs->next) {
        if (cs == mine)
            continue;
        __atomic_store_n(&cs->sd, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&cs->used, 0, __ATOMIC_RELAXED);
    }
    ust_lock_init(&cs_lock);
    /* The registration is the process's: a child registers anew, and
     * counts on the streams if it cannot. */
    if (__atomic_load_n(&cs_on, __ATOMIC_RELAXED) &&
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
        __atomic_store_n(&cs_on, 0, __ATOMIC_RELAXED);
        if (mine != NULL)
            __atomic_store_n(&mine->sd, NULL, __ATOMIC_RELAXED);
        tls_slot = NULL; /* counters from now on */
    }
}
