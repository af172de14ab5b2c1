/* SPDX-License-Identifier: MIT */
/*
 * sd_watch.c -- the safety net under the stream head's untimed waits.
 *
 * Principles of operation
 *   A reader or writer that sleeps (ust_sd_wait_from, no deadline) is woken
 *   by whoever changes what it waits for, exactly on an edge.  A bug that
 *   lost such a wake-up would hang it for good; the net turns that into a
 *   delay of at most two intervals, and makes it visible.  A sleeper
 *   registers its wait queue and the sequence number it sleeps on in a slot
 *   here; a watch thread looks at the slots every UST_WAIT_RECHECK_NS and
 *   wakes (ust_sd_wake_sleepers, the sequence left alone) every sleeper that was
 *   registered on the same sequence at its previous look.  The woken caller
 *   looks again, as after any wake-up: if what it waits for has come although
 *   the sequence did not move, nobody woke it, and it reports a lost wake-up
 *   (ust_sd_note_lost_wakeup, which first gives a waker preempted between
 *   its change and its wake UST_WAKE_GRACE_NS to show up: late is not
 *   lost); if not, it sleeps again.  A legitimately long
 *   sleep costs one spurious wake-up per interval.
 *
 *   The net is not a timeout: the futex wait itself stays untimed, so a
 *   signal handler installed with SA_RESTART still restarts it (a timed
 *   futex wait would return EINTR whatever SA_RESTART says).
 *
 *   The watch thread starts with the first sleeper that registers, or the
 *   first stream made (sd_fd.c), takes no signals, and is started again in
 *   a fork() child when needed.  At each interval it also delivers what a
 *   program wrote on a stream's descriptor with plain write(2) and has not
 *   been noticed by a library call yet (sd_urec.c): such a program need
 *   not call the library again for its data to reach the stream.  When every
 *   slot is taken a sleeper goes without the net.
 *
 * Locking
 *   watch_lock guards the slots, the generation marks and `started`; a leaf,
 *   taken with no other lock of the library held (sd_lock is dropped before
 *   a wait registers).  The lost wake-up count is atomic.
 */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "sthead.h"

enum { WATCH_SLOTS = 1024 };

struct watch_slot {
    struct ust_waitq *w; /* NULL: free */
    unsigned seq;        /* the sequence the sleeper sleeps on */
    unsigned long gen;   /* registration number: a slot reused is a new sleeper */
    unsigned long seen;  /* gen at the watch thread's last look, 0 none */
};

static ust_lock_t watch_lock = UST_LOCK_INIT; /* everything below but lost */
static struct watch_slot slots[WATCH_SLOTS];
static unsigned long next_gen = 1;
static int started;   /* the watch thread runs (this process) */
static int hint;      /* where to look for a free slot first */
static atomic_long lost;

long ust_sd_lost_wakeups(void)
{
    return atomic_load(&lost);
}

void ust_sd_note_lost_wakeup(struct ust_waitq *w, unsigned slept)
{
    /* Late is not lost: a waker changes the state, then bumps the sequence
     * (ust_sd_wake); one preempted between the two looks like a loss to a
     * sleeper the net (or a timed wait) ended in that window.  Counted only
     * if the sequence stays put for UST_WAKE_GRACE_NS more. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&w->seq) == slept) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) >=
            UST_WAKE_GRACE_NS)
            break;
        sched_yield();
    }
    if (atomic_load(&w->seq) != slept)
        return;
    atomic_fetch_add(&lost, 1);
#ifdef USTREAMS_DEBUG
    fprintf(stderr, "ustreams: lost wake-up rescued by the wait safety net\n");
#endif
}

static void *watch_main(void *arg)
{
    (void)arg;
    long long next = ust_now_ns() + UST_WAIT_RECHECK_NS;
    for (;;) {
        /* The pause: an event of the epoll set of plain L ends cuts it
         * short.  Records the program wrote on a stream's descriptor with
         * write(2) (sd_urec.c) are then delivered, for a program that does
         * not call the library (with the ring: at each interval, the ring's
         * memory looked at).  No lock held. */
        long long left = next - ust_now_ns();
        ust_lend_wait_records(left > 0 ? (int)((left + 999999) / 1000000) : 0);
        if (ust_sd_urec_pending()) {
            ust_call_begin(); /* what the writes enable runs here, at the end */
            ust_sd_urec_run();
            ust_call_end();
        }
        if (ust_now_ns() < next)
            continue; /* the sleepers' looks keep their interval */
        next = ust_now_ns() + UST_WAIT_RECHECK_NS;
        ust_lock(&watch_lock);
        for (int i = 0; i < WATCH_SLOTS; i++) {
            struct watch_slot *s = &slots[i];
            if (!s->w)
                continue;
            if (s->seen == s->gen && atomic_load(&s->w->seq) == s->seq)
                ust_sd_wake_sleepers(s->w); /* the sequence left alone */
            s->seen = s->gen;
        }
        ust_unlock(&watch_lock);
    }
    return NULL;
}

/* Start the watch thread; watch_lock held.  Failing leaves it for the next
 * sleeper (the net is then absent meanwhile, never the wait). */
static void watch_start(void)
{
    pthread_attr_t a;
    pthread_t t;

    if (pthread_attr_init(&a) != 0)
        return;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    if (ust_thread_create(&t, &a, watch_main, NULL) == 0)
        __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    pthread_attr_destroy(&a);
}

void ust_sd_watch_start(void)
{
    if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
        return;
    ust_lock(&watch_lock);
    if (!started)
        watch_start();
    ust_unlock(&watch_lock);
}

int ust_sd_watch_enter(struct ust_waitq *w, unsigned seq)
{
    int got = -1;
    ust_lock(&watch_lock);
    if (!started)
        watch_start();
    for (int n = 0; n < WATCH_SLOTS; n++) {
        int i = (hint + n) % WATCH_SLOTS;
        if (slots[i].w == NULL) {
            slots[i].w = w;
            slots[i].seq = seq;
            slots[i].gen = next_gen++;
            slots[i].seen = 0;
            hint = i + 1;
            got = i;
            break;
        }
    }
    ust_unlock(&watch_lock);
    return got;
}

void ust_sd_watch_leave(int slot)
{
    if (slot < 0)
        return;
    ust_lock(&watch_lock);
    slots[slot].w = NULL;
    ust_unlock(&watch_lock);
}

/* fork(): quiesced (a leaf, held briefly).  In the child the sleepers were
 * the parent's threads and the watch thread is gone. */
void ust_sd_watch_fork_prepare(void)
{
    ust_lock(&watch_lock);
}

void ust_sd_watch_fork_parent(void)
{
    ust_unlock(&watch_lock);
}

void ust_sd_watch_fork_child(void)
{
    for (int i = 0; i < WATCH_SLOTS; i++)
        slots[i].w = NULL;
    __atomic_store_n(&started, 0, __ATOMIC_RELAXED);
    ust_unlock(&watch_lock); /* the forking thread's, from the prepare hook */
}
