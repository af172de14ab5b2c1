/* SPDX-License-Identifier: MIT */
/*
 * sd_spin.h -- who is running: the calls in progress on a stream head,
 * published so that a waiter on the pipe's other end spins only while the
 * thread that will bring its event is on another CPU (sd_spin.c;
 * docs/STREAMHEAD.md, "Spinning that helps").
 */
#ifndef UST_SD_SPIN_H
#define UST_SD_SPIN_H

#include <stdatomic.h>
#include <stdint.h>

struct stdata;
struct ust_waitq;

/* A head's run words, each on a line of its own (the struct is two whole
 * lines): w for write-side calls on the head (write, writev, putmsg,
 * putpmsg), r for read-side calls (read, readv, getmsg, getpmsg). */
struct ust_runwords {
    _Alignas(64) _Atomic uint64_t w;
    _Alignas(64) _Atomic uint64_t r;
};

/*
 * A run word (struct stdata sd_run.w, sd_run.r): bits 0-15 the CPU + 1 of the
 * last thread that entered a call of that kind on the head and is still in
 * it, 0 when it left, UST_RUN_ASLEEP while it sleeps in the call; bits
 * 16-63 count the calls entered.  Written by the callers with plain atomic
 * stores (no read-modify-write: two writers at once may lose a count or a
 * state, which only makes a waiter's guess wrong, never a wait), read only
 * by waiters deciding whether to spin.  A hint, never a condition.
 */
#define UST_RUN_CPU_MASK 0xffffu
#define UST_RUN_ASLEEP 0xffffu

/* ust_sd_run_enter -- the calling thread enters a call that will deposit
 *   (word: &sd->sd_run.w) or take (&sd->sd_run.r); the outermost such call
 *   of the thread puts its CPU and the count into word.  Every enter is
 *   paired with a ust_sd_run_leave.  Any thread, no lock; two plain
 *   accesses and a CPU number (rseq). */
void ust_sd_run_enter(_Atomic uint64_t *word);
/* ust_sd_run_leave -- the call entered last leaves (the outermost: the
 *   word says "between calls"). */
void ust_sd_run_leave(void);
/* ust_sd_run_sleep / ust_sd_run_woke -- the calling thread is about to
 *   sleep in (has woken from) a wait of its published call, if any: a
 *   waiter on the other end must not spin for a sleeper.  No lock. */
void ust_sd_run_sleep(void);
void ust_sd_run_woke(void);

/* A waiter's look at the thread that will end its wait (its feeder). */
struct ust_spinwatch {
    _Atomic uint64_t *word; /* the feeder's run word, or NULL: no rule (fixed spin) */
    uint64_t last;          /* word as last seen */
    long long moved_ns;     /* when a new call was last seen (the spin's start at first) */
    unsigned mycpu;         /* the waiter's CPU + 1 */
};

/* ust_sd_spin_start -- a waiter on w of sd is about to spin: find its
 *   feeder (a reader of sd_rwait: the pipe peer's writers; a writer of
 *   sd_wwait: the peer's readers) and say whether a spin may pay: 0 when
 *   the feeder sleeps in its call or is in a call on the waiter's own CPU
 *   (it waits for that CPU), 1 otherwise.  Other waits and streams without
 *   an in-process peer: 1 with no rule (sw->word NULL).  No lock held. */
int ust_sd_spin_start(struct stdata *sd, struct ust_waitq *w, struct ust_spinwatch *sw);
/* ust_sd_spin_go -- during the spin (every half microsecond or so, now_ns
 *   from ust_now_ns): 1 while the feeder is in a call on another CPU, or
 *   has entered a call within UST_SPIN_QUIET_NS; 0 once it sleeps, is in a
 *   call on the waiter's CPU, or has made no call for that long (idle, or
 *   descheduled between calls). */
#define UST_SPIN_QUIET_NS 3000
int ust_sd_spin_go(struct ust_spinwatch *sw, long long now_ns);

/* The calling thread's spins, for tests and tools (thread-local, no lock):
 * waits that spun, waits whose feeder rule said sleep at once, waits whose
 * spin the rule cut short, and the nanoseconds spent spinning. */
struct ust_spin_stats {
    unsigned long long spun, skipped, cut, spin_ns;
};
void ust_sd_spin_stats(struct ust_spin_stats *st);
/* sd_wait.c adds a spin that ran from start_ns to end_ns; how it began (1
 * spun, 0 skipped) and whether the rule cut it. */
void ust_sd_spin_note(int spun, int cut, long long ns);

#endif
