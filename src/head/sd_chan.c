/* SPDX-License-Identifier: MIT */
/*
 * sd_chan.c -- the channel's reader: a thread blocked in a read (getmsg,
 * getpmsg, read, and so t_rcv, t_rcvudata) of a stream whose driver works
 * over a kernel socket (udp, tcp, rawip) waits on that socket itself.
 *
 * Principles of operation
 *   Without this, a datagram for a blocked reader took two wake-ups and
 *   six system calls: the epoll thread woke (epoll_wait), read it
 *   (recvmmsg), put it up the stream, set the readable token on the
 *   descriptor (a record sent), woke the reader (futex), which took the
 *   token back (fstat, recv) after its read.  A socket's reader has one
 *   wake-up and one call.  Seed 003's communication channels: every packet
 *   of an endpoint handled by the thread that wants it.
 *
 *   So a reader that finds the stream empty, inside its call:
 *     1. becomes the socket's poller (ust_iow_poll_enter): the epoll thread
 *        then leaves plain readability to it (it still serves errors,
 *        urgent data, hang-ups), and registers its thread's eventfd on
 *        sd_rwait, so that every wake of the stream (a message from
 *        elsewhere, M_HANGUP, a flush) also wakes its poll;
 *     2. polls the socket and the eventfd (at most UST_WAIT_RECHECK_NS, the
 *        safety net's interval: then it looks again);
 *     3. leaves both, and if the socket was readable, or the epoll thread
 *        left a readability to it meanwhile, qenables the driver's read
 *        queue and runs it on its own thread (ust_call_run_now): the
 *        service procedure reads the socket until EAGAIN and puts the
 *        messages up through the modules to the head.
 *   Those deposits set no readiness token (ust_sd_chan_pulling): the read
 *   takes them at once.
 *
 *   The lazy token.  What a pull brings and the read leaves (several
 *   datagrams came together) is usually taken by the same thread's next
 *   read; showing the readable token at the read's end and withdrawing it
 *   when the queue runs dry cost three system calls per pull (the token
 *   record sent; fstat and recv to take it back).  So the end of a read of
 *   this thread's channel (tls_chan: it pulled for the stream) owes the
 *   token instead (ust_sd_chan_defer, ust_iow_tok_owe), and a read that
 *   drains the queue settles the debt with nothing to withdraw.  What is
 *   still owed after IO_TOK_NS (1 ms) the epoll thread pays (chan_pay, when
 *   no read holds sd_lock), so a poll(2) from outside the library sees the
 *   leftovers at most about 2 ms late -- as event loops already see
 *   readability up to 1 ms late after a blocking read.  The token is paid
 *   at once -- never owed -- whenever somebody else could be waiting: a
 *   stream ever watched by the library's poll, select or epoll_ctl
 *   (ust_sd_chan_watched, sticky for the endpoint's binding), an I_SETSIG
 *   registration, another thread registered to sleep on the read side, a
 *   non-blocking stream or read, a pending error or hang-up.
 *
 *   No poll while the flow outruns the reads.  When the driver's last read
 *   run took more than one pull's worth (udp: two datagrams or more; tcp: a
 *   read that filled its buffer), it sets io->more and the next wait reads
 *   at once instead of polling first: one system call per pull instead of
 *   two while the sender is faster, one wasted (an EAGAIN, then the poll)
 *   when it was not.  A request/response flow (one datagram per run) always
 *   polls.
 *
 *   The urgent mark (tcp).  The poll asks for POLLPRI too, which a TCP
 *   socket shows while an urgent byte is unread.  Data without it means the
 *   next read starts with that data and stops at any mark that arrives
 *   later, so the run it starts skips its SIOCATMARK (ust_iow_run_calm:
 *   only the first run after the poll, none begun in between); with it the
 *   run looks for the mark (io->pri), as after the epoll thread's EPOLLPRI.
 *
 *   Signals.  poll(2) is never restarted after a handler, where the futex
 *   sleep it replaces is with SA_RESTART.  On EINTR the handlers are read
 *   (sigaction, on this path only): the read is restarted when every
 *   installed handler of an asynchronous signal has SA_RESTART, and fails
 *   EINTR otherwise.  Limit: with handlers of both kinds installed, a
 *   SA_RESTART one interrupts the read too (EINTR is always a legal result
 *   of a blocking read interrupted by a handler without SA_RESTART, and
 *   programs with such handlers handle it).
 *
 *   Eventfds.  One per thread that has polled, taken from a pool and given
 *   back when the thread exits, never closed: a waker that read a poller's
 *   number just before it left writes to an eventfd of the pool, never to
 *   a descriptor the program has since opened on that number.  The fork
 *   child closes them all (its pollers are gone; the parent's objects must
 *   not be drained by the child).
 *
 * Locking
 *   efd_lock (a leaf) guards the pool.  The poller's registration is an
 *   atomic (w->poller, eventfd + 1, 0 for none: one poller per stream).
 *   The token's debt (io->tok_since) is set and cleared under sd_lock;
 *   chan_pay runs on the epoll thread under io_lock and only tries sd_lock
 *   (order sd_lock > io_lock elsewhere: ust_iow_want_out, ust_iow_tok_owe).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "io_watch.h"
#include "sd_chan.h"
#include "sthead.h"

#define CHAN_WALK_MAX 64 /* modules between the head and the driver, at most */

static ust_lock_t efd_lock = UST_LOCK_INIT; /* guards efd_all, efd_n, efd_free, efd_nfree */
static int *efd_all;                         /* every eventfd made, efd_n of them */
static int efd_n, efd_cap;
static int *efd_free; /* given back by exited threads, efd_nfree of them (room: efd_cap) */
static int efd_nfree;
static pthread_key_t efd_key;
static pthread_once_t efd_once = PTHREAD_ONCE_INIT;
static _Thread_local int tls_efd = -1;
static _Thread_local struct stdata *tls_pulling;
/* The stream this thread last pulled for as its channel reader: its reads
 * may owe the readable token.  A stale value only names a head (type-stable,
 * pooled); it is compared, never followed. */
static _Thread_local struct stdata *tls_chan;
static pthread_once_t pay_once = PTHREAD_ONCE_INIT;

/* Thread exit: the eventfd back to the pool (v is efd + 1). */
static void efd_release(void *v)
{
    int fd = (int)(intptr_t)v - 1;
    ust_lock(&efd_lock);
    if (fd >= 0 && efd_nfree < efd_cap)
        efd_free[efd_nfree++] = fd;
    ust_unlock(&efd_lock);
}

static void efd_key_make(void)
{
    pthread_key_create(&efd_key, efd_release);
}

/* This thread's eventfd (non-blocking), or -1. */
static int chan_efd(void)
{
    if (tls_efd >= 0)
        return tls_efd;
    pthread_once(&efd_once, efd_key_make);
    int fd = -1;
    ust_lock(&efd_lock);
    if (efd_nfree > 0) {
        fd = efd_free[--efd_nfree];
    } else {
        if (efd_n == efd_cap) {
            int cap = efd_cap ? 2 * efd_cap : 16;
            int *a = realloc(efd_all, (size_t)cap * sizeof(int));
            if (a != NULL)
                efd_all = a;
            int *f = a != NULL ? realloc(efd_free, (size_t)cap * sizeof(int)) : NULL;
            if (f != NULL) {
                efd_free = f;
                efd_cap = cap;
            }
        }
        if (efd_n < efd_cap) {
            fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
            if (fd >= 0)
                efd_all[efd_n++] = fd = ust_fd_park(fd);
        }
    }
    ust_unlock(&efd_lock);
    if (fd >= 0 && pthread_setspecific(efd_key, (void *)(intptr_t)(fd + 1)) != 0) {
        efd_release((void *)(intptr_t)(fd + 1));
        return -1;
    }
    return tls_efd = fd;
}

void ust_sd_chan_fork_prepare(void)
{
    ust_lock(&efd_lock);
}

void ust_sd_chan_fork_parent(void)
{
    ust_unlock(&efd_lock);
}

void ust_sd_chan_fork_child(void)
{
    for (int i = 0; i < efd_n; i++)
        close(efd_all[i]);
    efd_n = efd_nfree = 0;
    if (tls_efd >= 0)
        pthread_setspecific(efd_key, NULL); /* the key exists: this thread took one */
    tls_efd = -1;
    ust_lock_init(&efd_lock);
}

struct stdata *ust_sd_chan_pulling(void)
{
    return tls_pulling;
}

struct ust_iow *ust_sd_chan_of(struct stdata *sd, queue_t **rqp)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (sd->sd_flag & (STRPIPE | STRFIFO))
        return NULL; /* the twist leads to a head, never to a socket */
    /* q_next is loaded atomically: plumbing relinks it without sd_lock
     * (type-stable pairs: a stale link still names a queue pair). */
    queue_t *q = sd->sd_wq, *next;
    for (int i = 0; q != NULL && (next = __atomic_load_n(&q->q_next, __ATOMIC_ACQUIRE)) != NULL;
         i++) {
        if (i == CHAN_WALK_MAX)
            return NULL;
        q = next;
    }
    if (q == NULL || (__atomic_load_n(&q->q_flag, __ATOMIC_RELAXED) & QREADR))
        return NULL; /* a pipe or FIFO: the twist leads to a head */
    queue_t *rq = RD(q);
    *rqp = rq;
    return ust_iow_of(rq);
}

void ust_sd_chan_kick(struct ust_waitq *w)
{
    int v = atomic_load(&w->poller);
    if (v > 0)
        (void)!eventfd_write(v - 1, 1);
}

/* After poll(2) failed EINTR: is the read restarted (every handler of an
 * asynchronous signal has SA_RESTART)? */
static int chan_restart(void)
{
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGSEGV || s == SIGBUS || s == SIGILL || s == SIGFPE || s == SIGTRAP ||
            s == SIGKILL || s == SIGSTOP)
            continue; /* synchronous, or never handled */
        struct sigaction sa;
        if (sigaction(s, NULL, &sa) != 0)
            continue; /* reserved by the C library */
        if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
            continue;
        if (!(sa.sa_flags & SA_RESTART))
            return 0;
    }
    return 1;
}

int ust_sd_chan_wait(struct stdata *sd, struct ust_iow *io, queue_t *rq, struct ust_waitq *w,
                     unsigned seq, int *seen)
{
    if (!ust_sched_in_call())
        return -1; /* the pull runs the service procedure inside the call */
    int efd = chan_efd();
    if (efd < 0)
        return -1;
    int none = 0;
    if (!atomic_compare_exchange_strong(&w->poller, &none, efd + 1))
        return -1; /* another reader polls: this one sleeps, the poller's deposit wakes it */
    int fd = ust_iow_poll_enter(io);
    if (fd < 0) {
        atomic_store(&w->poller, 0);
        return -1;
    }
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN | POLLPRI | POLLRDHUP},
                          {.fd = efd, .events = POLLIN}};
    int r = 0, e = 0, pull = 0;
    unsigned long long calm = ust_iow_calm_before_poll(io); /* before the poll: ust_iow_run_calm */
    if (atomic_load(&w->seq) != seq) { /* after registering: a wake from now on kicks efd */
        *seen = 1;
    } else if (atomic_exchange_explicit(&io->more, 0, memory_order_relaxed)) {
        pull = 1; /* the last run read a full batch: read again before polling */
    } else {
        r = poll(p, 2, (int)(UST_WAIT_RECHECK_NS / 1000000));
        e = r < 0 ? errno : 0;
    }
    atomic_store(&w->poller, 0);
    int skipped = ust_iow_poll_leave(io);
    if (r > 0 && (p[1].revents & POLLIN)) {
        eventfd_t v;
        (void)!eventfd_read(efd, &v);
        *seen = 1;
    }
    if (r > 0 && (p[0].revents & POLLRDHUP))
        atomic_store(&io->rdhup, 1); /* the driver reads on to the end of file */
    if (r > 0 && (p[0].revents & POLLPRI))
        atomic_store(&io->pri, 1); /* urgent data (tcp): the run looks for the mark */
    else if (r > 0 && (p[0].revents & POLLIN) && calm != 0)
        atomic_store(&io->calm, calm); /* data first, no urgent byte: no SIOCATMARK */
    if (pull || skipped ||
        (r > 0 && (p[0].revents & (POLLIN | POLLPRI | POLLERR | POLLHUP | POLLRDHUP)))) {
        tls_pulling = sd;
        tls_chan = sd;
        qenable(rq);
        ust_call_run_now();
        tls_pulling = NULL;
        *seen = 1;
    }
    if (e == EINTR && !chan_restart())
        return EINTR;
    if (r > 0 && (p[0].revents & POLLNVAL) && !*seen)
        return -1; /* the socket closed under it (an unbind): sleep as usual */
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The lazy readable token                                                  */
/* ------------------------------------------------------------------------ */

/*
 * chan_pay -- the epoll thread's payer (ust_iow_tok_hook): the token owner
 *   (a stream head) has owed for IO_TOK_NS.  Context: the epoll thread,
 *   io_lock held, so io is registered and its endpoint's stream alive; sd
 *   is a pooled head, only tried.  Returns 0 when a read (or anything) holds
 *   sd_lock: asked again next round; else 1, the debt cleared and the
 *   tokens made exact.
 */
static int chan_pay(void *owner, struct ust_iow *io)
{
    struct stdata *sd = owner;
    if (!ust_trylock(&sd->sd_lock))
        return 0;
    queue_t *rq = NULL;
    int mine = !(sd->sd_flag & STRCLOSE) && ust_sd_chan_of(sd, &rq) == io;
    long long since = atomic_exchange(&io->tok_since, 0);
    if (mine && since != 0)
        ust_sd_rready(sd);
    ust_unlock(&sd->sd_lock);
    return 1;
}

static void pay_register(void)
{
    ust_iow_tok_hook(chan_pay);
}

int ust_sd_chan_defer(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (tls_chan != sd || (sd->sd_oflag & (O_NONBLOCK | O_NDELAY)) || sd->sd_sigflags ||
        sd->sd_rerror || (sd->sd_flag & (STRHUP | STRCLOSE)) ||
        atomic_load(&sd->sd_rwait.waiters) > 0)
        return 0;
    queue_t *rq;
    struct ust_iow *io = ust_sd_chan_of(sd, &rq);
    if (io == NULL || atomic_load_explicit(&io->tok_exact, memory_order_relaxed))
        return 0;
    pthread_once(&pay_once, pay_register);
    return ust_iow_tok_owe(io, sd) == 0;
}

void ust_sd_chan_settle(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    if (tls_chan != sd)
        return;
    queue_t *rq;
    struct ust_iow *io = ust_sd_chan_of(sd, &rq);
    if (io != NULL && atomic_load_explicit(&io->tok_since, memory_order_relaxed) != 0)
        atomic_store(&io->tok_since, 0);
}

void ust_sd_chan_watched(struct stdata *sd)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    queue_t *rq;
    struct ust_iow *io = ust_sd_chan_of(sd, &rq);
    if (io == NULL)
        return;
    if (!atomic_load_explicit(&io->tok_exact, memory_order_relaxed))
        atomic_store(&io->tok_exact, 1);
    if (atomic_load(&io->tok_since) != 0) {
        atomic_store(&io->tok_since, 0);
        ust_sd_rready(sd);
    }
}
