/* SPDX-License-Identifier: MIT */
/*
 * sd_tokpay.c -- the lazy readable token of a stream head: a reader that
 * runs dry leaves the token off without making every later arrival show it,
 * and a payer shows what is still owed a tick later.
 *
 * Principles of operation
 *   The exact rule (sd_ready.c, docs/STREAMHEAD.md "Readiness") shows the
 *   readable token whenever a message waits and withdraws it when the queue
 *   runs dry, and deposits (sd_arrive.c) need it shown.  A reader that keeps
 *   up with its writer runs dry at nearly every message; each dry read then
 *   withdrew the token (fstat and recv) and the writer's next message,
 *   refused by the arrivals, took the locked path and showed it again (a
 *   record sent, a futex wake): measured, 0.74 system calls per message
 *   through one nullmod, and four times the throughput without them.
 *   Nobody needs that token while every reader of the stream blocks inside
 *   the library: a blocked reader is woken through the arrivals' sleepy
 *   mark or sd_rwait, not by the descriptor.
 *
 *   So a reader that runs dry on a stream nobody else can be watching
 *   (ust_sd_rready_dry) marks the arrivals lazy instead of withdrawing
 *   (withdrawing once if the token was shown): deposits then join the
 *   arrivals without the token, and wake the reader as before.  Data that
 *   sits readable without the token is a debt (sd_ar.owed): set by the
 *   deposit that starts the arrival list and by a read that returns leaving
 *   data; cleared by the reader's next dry look, or when the token is shown.
 *   The payer (a 1 ms timeout while any head is listed) pays a debt it saw
 *   at two ticks in a row with no dry look in between (sd_ar.dry_gen): it
 *   absorbs the arrivals and shows the token (ust_sd_rready).  So a
 *   poll(2) or epoll from outside the library sees such data 1-2 ms late,
 *   never early: the token is never shown for an empty queue by this path.
 *
 *   Exact instead, for ever (sd_tokexact, sticky until the head is reused):
 *   a stream ever polled through the library (strm_poll, select and epoll
 *   under the preload), made non-blocking (F_SETFL), registered with
 *   I_SETSIG.  Exact while it lasts: a pending error or hang-up, a channel
 *   stream (sd_chan.c has its own lazy token), an M_READ outstanding.
 *   Turning exact pays any debt at once.
 *
 *   The list.  A head joins the payer's list at its first lazy dry look and
 *   leaves it after TP_LINGER idle ticks (no debt seen), turning its lazy
 *   mark off (deposits need the shown token again until the next dry look),
 *   when it is freed (ust_sd_tok_forget), or in a fork child (below).
 *
 *   fork.  The child must never move the tokens of the parent's streams
 *   (they are the parent's kernel sockets): its list is emptied and each
 *   listed head's lazy mark dropped.  A debt owed at the fork is paid by the
 *   parent's payer.
 *
 * Locking
 *   pay_lock guards pay_list, pay_armed and the heads' sd_tp_* fields; order
 *   pay_lock > sd_ar.lock.  The tick only tries sd_lock under it (a head busy
 *   in a read is looked at again at the next tick), and nothing takes
 *   pay_lock while holding sd_ar.lock.  sd_ar.lazy changes under sd_ar.lock
 *   only; sd_tokexact under sd_lock.
 */
#include <fcntl.h>
#include <pthread.h>

#include "forksafe.h"
#include "sd_chan.h"
#include "sthead.h"

#define TP_TICK_NS 1000000LL /* the payer's period while any head is listed */
#define TP_LINGER 20         /* idle ticks before a head leaves the list */

static ust_lock_t pay_lock = UST_LOCK_INIT;
static struct stdata *pay_list; /* pay_lock: heads that may owe */
static int pay_armed;           /* pay_lock (written with atomics): the tick's timeout is
                                 * pending; read without it by ust_sd_tok_leave */
static pthread_once_t pay_once = PTHREAD_ONCE_INIT;

static void tp_tick(void *unused);

/* Arm the next tick if any head is listed.  pay_lock held. */
static void tp_arm_locked(void)
{
    if (pay_armed || pay_list == NULL)
        return;
    /* timeout's lock is below pay_lock: nothing holding it takes pay_lock.
     * Out of memory the tick is not armed: the next debt recorded by a
     * read (ust_sd_tok_leave) tries again. */
    __atomic_store_n(&pay_armed, ust_timeout_ns(tp_tick, NULL, TP_TICK_NS) != 0,
                     __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------ */
/* The reader's side                                                        */
/* ------------------------------------------------------------------------ */

/* May sd's readable token be owed now?  The conditions that change while
 * the lazy mark stands (sd_tokexact, O_NONBLOCK, I_SETSIG: each turns the
 * stream exact and pays; an error or hang-up: shown as sticky) -- cheap
 * enough for the end of every read.  sd_lock held. */
static int lazy_still_ok(const struct stdata *sd)
{
    return !sd->sd_tokexact && !(sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) &&
           !__atomic_load_n(&sd->sd_sigflags, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&sd->sd_mread_sent, __ATOMIC_RELAXED) && !sd->sd_rerror &&
           !(sd->sd_flag & (STRHUP | STRCLOSE)) && !sd->sd_hupset;
}

/* ... and, at a dry look, the rest: not a FIFO without writers (its end of
 * file is shown), not a channel's stream (sd_chan.c owes its own way). */
static int lazy_ok(struct stdata *sd)
{
    queue_t *chrq;
    return lazy_still_ok(sd) && !ust_fifo_hup(sd) && ust_sd_chan_of(sd, &chrq) == NULL;
}

static void tp_list(struct stdata *sd)
{
    pthread_once(&pay_once, ust_sd_tok_fork_register);
    ust_lock(&pay_lock);
    if (!sd->sd_tp_listed) {
        sd->sd_tp_next = pay_list;
        pay_list = sd;
        sd->sd_tp_seen_owed = 0;
        sd->sd_tp_idle = 0;
        __atomic_store_n(&sd->sd_tp_listed, 1, __ATOMIC_RELAXED);
    }
    tp_arm_locked();
    ust_unlock(&pay_lock);
}

void ust_sd_rready_dry(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!lazy_ok(sd) || sd->sd_ptoken || ust_q_nonempty_hint(sd->sd_rq)) {
        if (sd->sd_tlazy)
            ust_sd_tok_exact_now(sd, 0);
        ust_sd_rready(sd);
        return;
    }
    if (sd->sd_tlazy &&
        !__atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED)) {
        /* The steady state: nothing shown, nothing to withdraw.  The debt
         * is cleared without the arrival lock (whose line the writers
         * hold): a deposit that sets it meanwhile is seen by this reader,
         * which looks at the arrivals again before it sleeps or returns,
         * and a read that returns leaving data owes again
         * (ust_sd_tok_leave). */
        if (__atomic_load_n(&ar->owed, __ATOMIC_RELAXED)) {
            __atomic_store_n(&ar->owed, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&ar->dry_gen, ar->dry_gen + 1, __ATOMIC_RELAXED);
        }
        return;
    }
    ust_lock(&ar->lock);
    int quiet = ar->first == NULL;
    if (quiet) {
        __atomic_store_n(&ar->lazy, 1, __ATOMIC_RELAXED);
        sd->sd_tlazy = 1;
        __atomic_store_n(&ar->owed, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&ar->dry_gen, ar->dry_gen + 1, __ATOMIC_RELAXED);
    }
    ust_unlock(&ar->lock);
    if (!quiet)
        return; /* arrivals came: the reader takes them */
    /* Shown from before: withdrawn once (unless arrivals came meanwhile). */
    ust_sd_ready_read(sd, 0);
    if (!__atomic_load_n(&sd->sd_tp_listed, __ATOMIC_RELAXED))
        tp_list(sd);
}

const char *ust_sd_rtoken_state(const struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (__atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED))
        return "shown";
    if (!sd->sd_tlazy)
        return "down";
    /* A debt is only recorded when data is left, and cleared at the next dry
     * look: what the reader took since is not owed. */
    int data = ust_q_nonempty_hint(sd->sd_rq) ||
               __atomic_load_n(&sd->sd_ar.first, __ATOMIC_RELAXED) != NULL;
    return data && __atomic_load_n(&sd->sd_ar.owed, __ATOMIC_RELAXED) ? "owed" : "lazy";
}

int ust_sd_tok_leave(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!sd->sd_tlazy ||
        __atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED) || sd->sd_ptoken || !lazy_still_ok(sd))
        return 0;
    if (ust_q_nonempty_hint(sd->sd_rq) || __atomic_load_n(&ar->first, __ATOMIC_RELAXED) != NULL) {
        if (!__atomic_load_n(&ar->owed, __ATOMIC_RELAXED))
            __atomic_store_n(&ar->owed, 1, __ATOMIC_RELAXED);
        /* The payer may have let it go meanwhile, or found no memory to
         * arm its tick (tp_arm_locked). */
        if (!__atomic_load_n(&sd->sd_tp_listed, __ATOMIC_RELAXED) ||
            !__atomic_load_n(&pay_armed, __ATOMIC_RELAXED))
            tp_list(sd);
    }
    return 1;
}

void ust_sd_tok_exact_now(struct stdata *sd, int sticky)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (sticky)
        sd->sd_tokexact = 1;
    struct ust_arrivals *ar = &sd->sd_ar;
    if (!sd->sd_tlazy)
        return;
    ust_lock(&ar->lock);
    __atomic_store_n(&ar->lazy, 0, __ATOMIC_RELAXED);
    sd->sd_tlazy = 0;
    ust_unlock(&ar->lock);
    /* What was deposited under the lazy mark (a deposit that looked before
     * the mark went may still add to it: absorbed here too) is shown now. */
    ust_sd_absorb(sd);
    __atomic_store_n(&ar->owed, 0, __ATOMIC_RELAXED);
    ust_sd_rready(sd);
}

/* ------------------------------------------------------------------------ */
/* The payer                                                                */
/* ------------------------------------------------------------------------ */

/* Show sd's owed token, or let an idle head go.  pay_lock held.  Returns 1
 * if sd leaves the list. */
static int tp_visit(struct stdata *sd)
{
    struct ust_arrivals *ar = &sd->sd_ar;
    int owed = __atomic_load_n(&ar->owed, __ATOMIC_RELAXED);
    unsigned gen = __atomic_load_n(&ar->dry_gen, __ATOMIC_RELAXED);
    if (!owed) {
        sd->sd_tp_seen_owed = 0;
        if (++sd->sd_tp_idle < TP_LINGER)
            return 0;
    } else {
        sd->sd_tp_idle = 0;
        int due = sd->sd_tp_seen_owed && sd->sd_tp_seen_gen == gen;
        sd->sd_tp_seen_owed = 1;
        sd->sd_tp_seen_gen = gen;
        if (!due)
            return 0;
    }
    if (!ust_trylock(&sd->sd_lock))
        return 0; /* in a read (or a call): the next tick */
    int leave = 0;
    if (sd->sd_rq == NULL || (sd->sd_flag & STRCLOSE)) {
        leave = 1;
    } else if (owed) {
        /* Paid: absorbed and shown (rready is exact); the lazy mark stays,
         * the reader's next dry look withdraws the token. */
        ust_sd_absorb(sd);
        __atomic_store_n(&ar->owed, 0, __ATOMIC_RELAXED);
        ust_sd_rready(sd);
        sd->sd_tp_seen_owed = 0;
    } else {
        /* Idle: deposits need the token again; the next dry look lists
         * the head anew.  Not while anything waits unshown. */
        ust_lock(&ar->lock);
        if (ar->first == NULL && !__atomic_load_n(&ar->owed, __ATOMIC_RELAXED)) {
            __atomic_store_n(&ar->lazy, 0, __ATOMIC_RELAXED);
            sd->sd_tlazy = 0;
            leave = 1;
        }
        ust_unlock(&ar->lock);
        if (!leave)
            sd->sd_tp_idle = 0;
    }
    ust_unlock(&sd->sd_lock);
    return leave;
}

static void tp_tick(void *unused)
{
    (void)unused;
    ust_lock(&pay_lock);
    __atomic_store_n(&pay_armed, 0, __ATOMIC_RELAXED);
    for (struct stdata **pp = &pay_list; *pp != NULL;) {
        struct stdata *sd = *pp;
        if (tp_visit(sd)) {
            *pp = sd->sd_tp_next;
            sd->sd_tp_next = NULL;
            __atomic_store_n(&sd->sd_tp_listed, 0, __ATOMIC_RELAXED);
            continue;
        }
        pp = &sd->sd_tp_next;
    }
    tp_arm_locked();
    ust_unlock(&pay_lock);
}

void ust_sd_tok_forget(struct stdata *sd)
{
    if (!__atomic_load_n(&sd->sd_tp_listed, __ATOMIC_RELAXED))
        return; /* listed only by this head's own reader, which is gone */
    ust_lock(&pay_lock);
    for (struct stdata **pp = &pay_list; *pp != NULL; pp = &(*pp)->sd_tp_next)
        if (*pp == sd) {
            *pp = sd->sd_tp_next;
            break;
        }
    sd->sd_tp_next = NULL;
    __atomic_store_n(&sd->sd_tp_listed, 0, __ATOMIC_RELAXED);
    ust_unlock(&pay_lock);
}

/* ------------------------------------------------------------------------ */
/* fork                                                                     */
/* ------------------------------------------------------------------------ */

static void tp_fork_prepare(void)
{
    ust_lock(&pay_lock);
}

static void tp_fork_parent(void)
{
    ust_unlock(&pay_lock);
}

/* The child: no head of the parent's is paid here (see the principles). */
static void tp_fork_child(void)
{
    for (struct stdata *sd = pay_list, *n; sd != NULL; sd = n) {
        n = sd->sd_tp_next;
        sd->sd_tp_next = NULL;
        __atomic_store_n(&sd->sd_ar.lazy, 0, __ATOMIC_RELAXED);
        sd->sd_tlazy = 0;
        __atomic_store_n(&sd->sd_tp_listed, 0, __ATOMIC_RELAXED);
    }
    pay_list = NULL;
    __atomic_store_n(&pay_armed, 0, __ATOMIC_RELAXED); /* the timer's child hook dropped the
                                                        * pending tick */
    ust_unlock(&pay_lock);
}

void ust_sd_tok_fork_register(void)
{
    ust_fork_register(UST_FORK_HEAD_TOKPAY, tp_fork_prepare, tp_fork_parent, tp_fork_child);
}
