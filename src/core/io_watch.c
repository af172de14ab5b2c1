/* SPDX-License-Identifier: MIT */
/*
 * io_watch.c -- the executive's epoll thread, for the providers over kernel
 * sockets and the bells of pipes between processes (io_watch.h has the
 * contract and the lock legend).
 *
 * Principles of operation
 *   One thread, started on the first registration, waits in epoll_wait and
 *   for each ready socket qenables the endpoint's read queue (readable,
 *   urgent data, error) or write queue (writable; EPOLLOUT is armed only while a send is
 *   blocked, and disarmed when it fires).  Each batch of events is one
 *   library call of the thread (ust_call_begin/ust_call_end): the queues it
 *   enabled run on this thread, with the executive's claims, once io_lock
 *   is released -- the datagrams go up the stream with no hand-over to a
 *   scheduler thread (one context switch less per wake-up); what is beyond
 *   the call's budget goes to the scheduler threads.
 *   Channel readers (ust_iow_poll_enter, src/head/sd_chan.c): while a
 *   thread blocked in a read polls the socket itself, plain readability is
 *   its own; the thread marks it skipped.  An endpoint read that way wakes
 *   this thread for every datagram for nothing, so the first skip also
 *   takes EPOLLIN off the registration (in_off; errors, urgent data and
 *   hang-ups still come).  It is put back once no reader has polled for
 *   IO_REARM_NS -- the thread then waits with a timeout and looks -- and
 *   EPOLL_CTL_MOD reports at once what arrived meanwhile, so event loops
 *   and strm_poll see it at most IO_REARM_NS late, and only right after a
 *   thread's blocking read of that endpoint.
 *   The lazy readable token (ust_iow_tok_owe): a registration whose stream
 *   head owes its readable token goes on io_tok; while that list is not
 *   empty the thread waits at most about IO_TOK_NS at a time, and pays each
 *   token owed for IO_TOK_NS through the head's hook (a trylock of the
 *   head's lock: a stream in a read is asked again on the next round).  An
 *   entry stays listed IO_TOK_LINGER_NS after its last debt, so that a
 *   streaming reader, which owes and settles a token at every pull, never
 *   has to wake the thread: only an owe that finds the thread asleep for
 *   longer writes to its eventfd.  Listing is a Dekker pair: the owner
 *   stores tok_since then reads tok_listed; the thread clears tok_listed
 *   then reads tok_since again -- one of them sees the other.
 *   Deletion: an event carries no pointer but the registration's id, a
 *   slot of io_tab and that slot's generation, and the thread looks it up
 *   under io_lock.  ust_iow_del empties the slot and removes the socket
 *   from epoll under io_lock: an event fetched before the removal then
 *   finds the slot empty, or taken by a later registration with another
 *   generation, and is dropped.  So ust_iow_del returns at once, and
 *   nothing of the epoll thread refers to the registration afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "forksafe.h"
#include "io_watch.h"
#include "strcore.h"

#define IO_EVENTS 64
#define IO_TAB_MIN 64
#define IO_REARM_NS 1000000LL /* EPOLLIN back this long after the last poller left */
#define IO_TOK_NS 1000000LL   /* a readable token owed this long is paid */
#define IO_TOK_LINGER_NS 20000000LL /* listed this long after the last debt */
#define IO_WAKE_ID UINT64_MAX /* the event id of the thread's eventfd */

static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static int io_epfd = -1;         /* io_lock: the epoll instance, -1 before the first add */
static int io_started;           /* io_lock: the thread runs */
static struct ust_iow io_head = {.next = &io_head, .prev = &io_head}; /* io_lock */
static struct ust_iow **io_tab;  /* io_lock: registrations by slot, NULL when free */
static uint32_t *io_gen;         /* io_lock: each slot's generation */
static uint32_t io_tab_n;        /* io_lock: slots allocated */
static uint32_t io_tab_low;      /* io_lock: every slot below it is in use (O(1) io_slot) */
static struct ust_iow *io_off;   /* io_lock: registrations with in_off */
static struct ust_iow *io_tok;   /* io_lock: registrations whose head may owe a token */
static int io_wakefd = -1;       /* io_lock (set at start): wakes the thread (eventfd) */
/* io_lock writes: when the thread's current wait ends (ns), LLONG_MAX: never */
static atomic_llong io_wait_until;
static _Atomic(int (*)(void *, struct ust_iow *)) io_tok_pay; /* the head's payer */

/* Under io_lock: the registration an event's id names, or NULL. */
static struct ust_iow *io_lookup(uint64_t id)
{
    uint32_t slot = (uint32_t)id;
    if (slot >= io_tab_n || io_gen[slot] != (uint32_t)(id >> 32))
        return NULL;
    return io_tab[slot];
}
static pthread_once_t io_once = PTHREAD_ONCE_INIT;

/* The events io is registered for (io_lock). */
static uint32_t io_events(const struct ust_iow *io)
{
    return (io->in_off ? 0 : EPOLLIN) | EPOLLPRI | EPOLLRDHUP | EPOLLET | (io->out ? EPOLLOUT : 0);
}

static void io_mod(int epfd, struct ust_iow *io)
{
    struct epoll_event e = {.events = io_events(io), .data.u64 = io->id};
    epoll_ctl(epfd, EPOLL_CTL_MOD, io->fd, &e);
}

/* Readability while a reader polls the socket itself is the reader's: mark
 * it skipped (1), unless the poller has left (0: the thread takes it).  One
 * word, so that the poller's leave and this mark are ordered.  The first
 * skip takes EPOLLIN off (io_lock held). */
static int io_left_to_poller(int epfd, struct ust_iow *io)
{
    unsigned v = atomic_load(&io->poll);
    while (v & IOW_POLLING) {
        if (atomic_compare_exchange_weak(&io->poll, &v, v | IOW_SKIPPED)) {
            if (!io->in_off) {
                io->in_off = 1;
                io_mod(epfd, io);
                io->off_next = io_off;
                io_off = io;
            }
            return 1;
        }
    }
    return 0;
}

/* Put EPOLLIN back on the registrations no reader has polled for
 * IO_REARM_NS (io_lock held); the timeout of the next wait: -1 when none
 * is left off. */
static int io_rearm(int epfd)
{
    long long now = ust_now_ns(), soonest = -1;
    for (struct ust_iow **pp = &io_off; *pp != NULL;) {
        struct ust_iow *io = *pp;
        long long left = atomic_load(&io->left_ns);
        if ((atomic_load(&io->poll) & IOW_POLLING) || now - left < IO_REARM_NS) {
            long long due = (atomic_load(&io->poll) & IOW_POLLING) ? IO_REARM_NS
                                                                   : IO_REARM_NS - (now - left);
            if (soonest < 0 || due < soonest)
                soonest = due;
            pp = &io->off_next;
            continue;
        }
        io->in_off = 0;
        io_mod(epfd, io); /* reports at once what came meanwhile */
        *pp = io->off_next;
    }
    return soonest < 0 ? -1 : (int)(soonest / 1000000LL) + 1;
}

/* Take io off the list of registrations with in_off (io_lock held). */
static void io_off_remove(struct ust_iow *io)
{
    for (struct ust_iow **pp = &io_off; *pp != NULL; pp = &(*pp)->off_next)
        if (*pp == io) {
            *pp = io->off_next;
            break;
        }
    io->in_off = 0;
}

/* Take io off io_tok (io_lock held). */
static void io_tok_remove(struct ust_iow *io)
{
    for (struct ust_iow **pp = &io_tok; *pp != NULL; pp = &(*pp)->tok_next)
        if (*pp == io) {
            *pp = io->tok_next;
            break;
        }
    atomic_store(&io->tok_listed, 0);
}

/* Pay the tokens owed IO_TOK_NS, drop the entries idle IO_TOK_LINGER_NS
 * (io_lock held); the timeout of the next wait in ms, -1 when io_tok is
 * empty. */
static int io_tok_run(void)
{
    int (*pay)(void *, struct ust_iow *) = atomic_load(&io_tok_pay);
    long long now = ust_now_ns(), soonest = -1;
    for (struct ust_iow **pp = &io_tok; *pp != NULL;) {
        struct ust_iow *io = *pp;
        long long since = atomic_load(&io->tok_since), due = IO_TOK_NS;
        if (since == 0 && now - io->tok_seen >= IO_TOK_LINGER_NS) {
            atomic_store(&io->tok_listed, 0); /* Dekker with ust_iow_tok_owe */
            since = atomic_load(&io->tok_since);
            if (since == 0) {
                *pp = io->tok_next;
                continue;
            }
            atomic_store(&io->tok_listed, 1); /* owed meanwhile: kept */
        }
        if (since != 0) {
            io->tok_seen = now;
            if (now - since < IO_TOK_NS)
                due = IO_TOK_NS - (now - since);
            else if (pay == NULL || !pay(io->tok_owner, io))
                due = 0; /* the stream is busy: the next round */
        }
        if (soonest < 0 || due < soonest)
            soonest = due;
        pp = &io->tok_next;
    }
    return soonest < 0 ? -1 : (int)(soonest / 1000000LL) + 1;
}

static void *io_thread(void *arg)
{
    struct epoll_event ev[IO_EVENTS];
    int epfd = (int)(intptr_t)arg;

    int timeout = -1;
    for (;;) {
        int n = epoll_wait(epfd, ev, IO_EVENTS, timeout);
        if (n < 0 && errno != EINTR)
            break;
        ust_call_begin(); /* the enables below run here, at ust_call_end */
        pthread_mutex_lock(&io_lock);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u64 == IO_WAKE_ID) {
                eventfd_t v;
                (void)!eventfd_read(io_wakefd, &v);
                continue;
            }
            struct ust_iow *io = io_lookup(ev[i].data.u64);
            if (io == NULL)
                continue; /* deleted since it was fetched */
            if (ev[i].events & EPOLLERR)
                atomic_store(&io->err, 1);
            if (ev[i].events & EPOLLPRI)
                atomic_store(&io->pri, 1);
            if (ev[i].events & EPOLLRDHUP)
                atomic_store(&io->rdhup, 1);
            if ((ev[i].events & (EPOLLPRI | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) ||
                ((ev[i].events & EPOLLIN) && !io_left_to_poller(epfd, io)))
                qenable(io->rq);
            if ((ev[i].events & EPOLLOUT) && io->out) {
                io->out = 0;
                io_mod(epfd, io);
                qenable(WR(io->rq));
            }
        }
        timeout = io_off != NULL ? io_rearm(epfd) : -1;
        if (io_tok != NULL) {
            int t = io_tok_run();
            if (t >= 0 && (timeout < 0 || t < timeout))
                timeout = t;
        }
        atomic_store(&io_wait_until,
                     timeout < 0 ? LLONG_MAX : ust_now_ns() + (long long)timeout * 1000000LL);
        pthread_mutex_unlock(&io_lock);
        ust_call_end(); /* no lock held: the service procedures of the batch */
    }
    return NULL;
}

/* fork(): io_lock is a leaf held briefly.  The child shares the parent's
 * epoll instance and sockets: it closes its descriptors of them (its
 * endpoints are detached and never do I/O) and forgets the thread. */
static void io_fork_prepare(void)
{
    pthread_mutex_lock(&io_lock);
}

static void io_fork_parent(void)
{
    pthread_mutex_unlock(&io_lock);
}

static void io_fork_child(void)
{
    for (struct ust_iow *io = io_head.next; io != &io_head; io = io->next) {
        if (!io->inherit)
            close(io->fd);
        __atomic_store_n(&io->gone, 1, __ATOMIC_RELEASE); /* no poller polls it here */
        if (io->chan)
            __atomic_store_n(&ust_qpv(io->rq)->chan, NULL, __ATOMIC_RELEASE);
    }
    io_head.next = io_head.prev = &io_head;
    io_off = NULL;
    io_tok = NULL;
    if (io_epfd >= 0)
        close(io_epfd);
    io_epfd = -1;
    if (io_wakefd >= 0)
        close(io_wakefd);
    io_wakefd = -1;
    io_started = 0;
    for (uint32_t i = 0; i < io_tab_n; i++)
        io_tab[i] = NULL;
    io_tab_low = 0;
    pthread_mutex_unlock(&io_lock);
}

static void io_fork_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, io_fork_prepare, io_fork_parent, io_fork_child);
}

void ust_iow_init(void)
{
    pthread_once(&io_once, io_fork_register);
}

/* Under io_lock: the epoll instance and its thread exist; 0 or an errno. */
static int io_start(void)
{
    pthread_t t;
    int rc;

    if (io_started)
        return 0;
    io_epfd = ust_fd_park(epoll_create1(EPOLL_CLOEXEC));
    if (io_epfd < 0)
        return errno;
    io_wakefd = ust_fd_park(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    struct epoll_event we = {.events = EPOLLIN, .data.u64 = IO_WAKE_ID};
    if (io_wakefd < 0 || epoll_ctl(io_epfd, EPOLL_CTL_ADD, io_wakefd, &we) < 0) {
        rc = errno;
        if (io_wakefd >= 0)
            close(io_wakefd);
        close(io_epfd);
        io_wakefd = io_epfd = -1;
        return rc;
    }
    atomic_store(&io_wait_until, LLONG_MAX); /* its first wait has no end */
    /* joinable, like the executive's threads: never joined (it runs until exit) */
    rc = ust_thread_create(&t, NULL, io_thread, (void *)(intptr_t)io_epfd);
    if (rc != 0) {
        close(io_wakefd);
        close(io_epfd);
        io_wakefd = io_epfd = -1;
        return rc;
    }
    io_started = 1;
    return 0;
}

/* Under io_lock: a free slot of io_tab (grown as needed), or -1. */
static int io_slot(void)
{
    for (uint32_t i = io_tab_low; i < io_tab_n; i++)
        if (io_tab[i] == NULL) {
            io_tab_low = i; /* the ones skipped are in use */
            return (int)i;
        }
    io_tab_low = io_tab_n;
    uint32_t n = io_tab_n ? 2 * io_tab_n : IO_TAB_MIN;
    struct ust_iow **t = realloc(io_tab, n * sizeof(*t));
    if (t == NULL)
        return -1;
    io_tab = t;
    uint32_t *g = realloc(io_gen, n * sizeof(*g));
    if (g == NULL)
        return -1; /* io_tab stays larger: harmless */
    io_gen = g;
    for (uint32_t i = io_tab_n; i < n; i++) {
        io_tab[i] = NULL;
        io_gen[i] = 0;
    }
    uint32_t first = io_tab_n;
    io_tab_n = n;
    return (int)first;
}

int ust_iow_add(struct ust_iow *io, int fd, queue_t *rq)
{
    struct epoll_event e = {.events = EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLET};
    int rc, slot = -1;

    pthread_mutex_lock(&io_lock);
    rc = io_start();
    if (rc == 0 && (slot = io_slot()) < 0)
        rc = ENOMEM;
    if (rc == 0) {
        io->slot = (uint32_t)slot;
        io->id = ((uint64_t)++io_gen[slot] << 32) | (uint32_t)slot;
        e.data.u64 = io->id;
        io->rq = rq;
        __atomic_store_n(&io->fd, fd, __ATOMIC_RELAXED);
        io->out = 0;
        __atomic_store_n(&io->gone, 0, __ATOMIC_RELEASE);
        atomic_store(&io->err, 0);
        atomic_store(&io->pri, 0);
        atomic_store(&io->poll, 0);
        atomic_store(&io->left_ns, 0);
        atomic_store(&io->rdhup, 0);
        io->in_off = 0;
        io->off_next = NULL;
        atomic_store(&io->tok_since, 0);
        atomic_store(&io->tok_exact, 0);
        atomic_store(&io->tok_listed, 0);
        atomic_store(&io->more, 0);
        atomic_store(&io->calm, 0);
        io->tok_owner = NULL;
        io->tok_next = NULL;
        if (epoll_ctl(io_epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
            rc = errno;
        } else {
            io_tab[slot] = io;
            io->next = io_head.next;
            io->prev = &io_head;
            io_head.next->prev = io;
            io_head.next = io;
            if (io->chan)
                __atomic_store_n(&ust_qpv(rq)->chan, io, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&io_lock);
    return rc;
}

void ust_iow_want_out(struct ust_iow *io)
{
    pthread_mutex_lock(&io_lock);
    if (!io->out && !io->gone) {
        io->out = 1;
        io_mod(io_epfd, io);
    }
    pthread_mutex_unlock(&io_lock);
}

void ust_iow_del(struct ust_iow *io)
{
    pthread_mutex_lock(&io_lock);
    __atomic_store_n(&io->gone, 1, __ATOMIC_RELEASE);
    if (io->in_off)
        io_off_remove(io);
    if (atomic_load(&io->tok_listed))
        io_tok_remove(io);
    atomic_store(&io->tok_since, 0);
    io_tab[io->slot] = NULL; /* events still in flight find nothing */
    if (io->slot < io_tab_low)
        io_tab_low = io->slot;
    epoll_ctl(io_epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->prev->next = io->next;
    io->next->prev = io->prev;
    if (io->chan)
        __atomic_store_n(&ust_qpv(io->rq)->chan, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&io_lock);
}

struct ust_iow *ust_iow_of(queue_t *rq)
{
    return __atomic_load_n(&ust_qpv(rq)->chan, __ATOMIC_ACQUIRE);
}

int ust_iow_poll_enter(struct ust_iow *io)
{
    unsigned idle = 0;
    if (!atomic_compare_exchange_strong(&io->poll, &idle, IOW_POLLING))
        return -1;
    int fd = __atomic_load_n(&io->fd, __ATOMIC_RELAXED);
    if (__atomic_load_n(&io->gone, __ATOMIC_ACQUIRE)) {
        atomic_store(&io->poll, 0);
        return -1;
    }
    return fd;
}

int ust_iow_poll_leave(struct ust_iow *io)
{
    atomic_store(&io->left_ns, ust_now_ns()); /* before: the thread's rearm reads it after poll */
    return (atomic_exchange(&io->poll, 0) & IOW_SKIPPED) != 0;
}

void ust_iow_tok_hook(int (*pay)(void *owner, struct ust_iow *io))
{
    atomic_store(&io_tok_pay, pay);
}

int ust_iow_tok_owe(struct ust_iow *io, void *owner)
{
    long long none = 0, now = ust_now_ns();
    atomic_compare_exchange_strong(&io->tok_since, &none, now); /* an older debt stands */
    if (atomic_load(&io->tok_listed))
        return 0; /* listed: the thread looks at least every IO_TOK_NS + 1 ms */
    int wake = 0, rc = 0;
    pthread_mutex_lock(&io_lock);
    if (io->gone) {
        atomic_store(&io->tok_since, 0);
        rc = -1;
    } else if (!atomic_load(&io->tok_listed)) {
        io->tok_owner = owner;
        io->tok_seen = now;
        io->tok_next = io_tok;
        io_tok = io;
        atomic_store(&io->tok_listed, 1);
        wake = atomic_load(&io_wait_until) > now + 2 * IO_TOK_NS;
    }
    int wfd = io_wakefd;
    pthread_mutex_unlock(&io_lock);
    if (wake && wfd >= 0)
        (void)!eventfd_write(wfd, 1);
    return rc;
}
