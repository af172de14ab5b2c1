/* SPDX-License-Identifier: MIT */
/*
 * sd_spin.c -- who is running: a waiter spins only while the thread that
 * will end its wait runs on another CPU (docs/STREAMHEAD.md, "Spinning that
 * helps"; issue 24 item 3).
 *
 * Principles of operation
 *   A dry reader of a pipe end (or a writer waiting for room) spins a little
 *   before it sleeps, because the event is often a microsecond away on
 *   another CPU and a sleep and wake-up costs tens.  The spin pays only
 *   while the thread that brings the event runs: a writer descheduled (two
 *   pairs on two CPUs, a loaded machine), idle, or asleep in its own call
 *   makes the spin pure loss, and when it waits for the spinner's own CPU,
 *   the spin delays the very event.  So the calls that bring events publish
 *   on the head they run on (a word on a line of its own, sd_run.w for
 *   write-side calls, sd_run.r for read-side calls): the CPU they run on
 *   (the rseq CPU number: one load) while inside the call, a sleep mark
 *   while they sleep in it (sd_wait.c), and a count of calls entered.  The
 *   waiter on the other end of the pipe reads its feeder's word at the
 *   start of the spin and every microsecond or so: it spins while the
 *   feeder is inside a call on another CPU, or has entered a call in the
 *   last UST_SPIN_QUIET_NS (3 us: a loop of calls, with a little work of
 *   its own between them); it sleeps at once when the feeder sleeps or is
 *   inside a call on the waiter's own CPU (preempted there: waiting for
 *   this CPU), and as soon as it has made no call for UST_SPIN_QUIET_NS.  The spin
 *   stays bounded by USTREAMS_SPIN_US as before (a long copy on another CPU
 *   keeps the reader spinning at most that long), so a writer's 64 KiB copy
 *   on another CPU is waited for exactly as before (the adaptive budget of
 *   2026-11-27, which learned from past spins, collapsed there).
 *
 *   The words are hints: written with plain atomic stores (two writers on
 *   one head may lose a count or a state), read without a lock, never a
 *   condition of a wait; the wait itself stays the futex protocol of
 *   sd_wait.c.  The peer head is read from sd_peer with an atomic load
 *   outside pipe_lock: heads are never freed (ust_sd_free pools them), so a
 *   stale peer is still a head, whose word is merely a wrong guess.
 *
 * Locking: none (atomics, and thread-local state of the calling thread).
 */
#include <sched.h>

#include "sd_spin.h"
#include "sthead.h"

/* The word this thread's outermost published call entered, or NULL. */
static _Thread_local _Atomic uint64_t *tls_run;
static _Thread_local int tls_depth; /* published calls entered and not left */
static _Thread_local struct ust_spin_stats tls_stats;

/* This thread's CPU + 1 (glibc reads it from the rseq area), 0xfffe when
 * unknown (never equal to another thread's known CPU). */
static unsigned cpu_tag(void)
{
    int c = sched_getcpu();
    return c < 0 || c >= (int)UST_RUN_ASLEEP - 1 ? UST_RUN_ASLEEP - 1 : (unsigned)c + 1;
}

void ust_sd_run_enter(_Atomic uint64_t *word)
{
    if (tls_depth++ > 0)
        return; /* a call inside a call (a procedure's): the outer one shows */
    uint64_t v = atomic_load_explicit(word, memory_order_relaxed);
    atomic_store_explicit(word, (((v >> 16) + 1) << 16) | cpu_tag(), memory_order_relaxed);
    tls_run = word;
}

void ust_sd_run_leave(void)
{
    if (tls_depth == 0 || --tls_depth > 0)
        return;
    _Atomic uint64_t *word = tls_run;
    uint64_t v = atomic_load_explicit(word, memory_order_relaxed);
    atomic_store_explicit(word, v & ~(uint64_t)UST_RUN_CPU_MASK, memory_order_relaxed);
    tls_run = NULL;
}

void ust_sd_run_sleep(void)
{
    _Atomic uint64_t *word = tls_run;
    if (word == NULL)
        return;
    uint64_t v = atomic_load_explicit(word, memory_order_relaxed);
    atomic_store_explicit(word, (v & ~(uint64_t)UST_RUN_CPU_MASK) | UST_RUN_ASLEEP,
                          memory_order_relaxed);
}

void ust_sd_run_woke(void)
{
    _Atomic uint64_t *word = tls_run;
    if (word == NULL)
        return;
    uint64_t v = atomic_load_explicit(word, memory_order_relaxed);
    atomic_store_explicit(word, (v & ~(uint64_t)UST_RUN_CPU_MASK) | cpu_tag(),
                          memory_order_relaxed);
}

/* The verdict on a word's state v for a waiter on CPU tag mycpu; quiet: no
 * call entered since the last look (nor, at the first look, in the grace
 * UST_SPIN_QUIET_NS before it: ust_sd_spin_go). */
static int verdict(uint64_t v, unsigned mycpu, int quiet)
{
    unsigned cpu = (unsigned)(v & UST_RUN_CPU_MASK);
    if (cpu == UST_RUN_ASLEEP)
        return 0;            /* asleep in its call */
    if (cpu != 0)
        return cpu != mycpu; /* in a call: running elsewhere, or waiting for my CPU */
    return !quiet;           /* between calls: a loop of calls goes on, an idle feeder made none */
}

int ust_sd_spin_start(struct stdata *sd, struct ust_waitq *w, struct ust_spinwatch *sw)
{
    sw->word = NULL;
    struct stdata *peer = __atomic_load_n(&sd->sd_peer, __ATOMIC_RELAXED);
    if (peer == NULL)
        return 1; /* a driver's stream, or a pipe end split across processes */
    if (w == &sd->sd_rwait)
        sw->word = &peer->sd_run.w;
    else if (w == &sd->sd_wwait)
        sw->word = &peer->sd_run.r;
    else
        return 1;
    sw->mycpu = cpu_tag();
    sw->last = atomic_load_explicit(sw->word, memory_order_relaxed);
    sw->moved_ns = ust_now_ns();
    return verdict(sw->last, sw->mycpu, 0);
}

int ust_sd_spin_go(struct ust_spinwatch *sw, long long now_ns)
{
    if (sw->word == NULL)
        return 1;
    uint64_t v = atomic_load_explicit(sw->word, memory_order_relaxed);
    if ((v >> 16) != (sw->last >> 16))
        sw->moved_ns = now_ns; /* it entered a call since the last look */
    sw->last = v;
    sw->mycpu = cpu_tag(); /* the waiter may have moved */
    return verdict(v, sw->mycpu, now_ns - sw->moved_ns > UST_SPIN_QUIET_NS);
}

void ust_sd_spin_note(int spun, int cut, long long ns)
{
    if (spun)
        tls_stats.spun++;
    else
        tls_stats.skipped++;
    if (cut)
        tls_stats.cut++;
    if (ns > 0)
        tls_stats.spin_ns += (unsigned long long)ns;
}

void ust_sd_spin_stats(struct ust_spin_stats *st)
{
    *st = tls_stats;
}
