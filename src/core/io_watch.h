/* SPDX-License-Identifier: MIT */
/*
 * io_watch.h -- one epoll thread for the executive's users of kernel
 * descriptors (the providers over kernel sockets, udp/tcp/rawip; the bells of
 * pipes between processes, sd_xpipe.c): readiness turns into qenable, so the
 * I/O itself is done by the owners' service procedures; those it enabled run
 * on the epoll thread right after each batch of events (as at the end of a
 * library call), others on a scheduler thread or at a caller's exit.
 *
 *   readable or error (EPOLLIN, EPOLLERR, EPOLLHUP)  -> qenable(rq)
 *                                  (EPOLLERR also sets io->err first)
 *   urgent data (EPOLLPRI, tcp)    -> io->pri set, qenable(rq)
 *   the peer's FIN (EPOLLRDHUP)    -> io->rdhup set, qenable(rq)
 *   writable (EPOLLOUT, armed by ust_iow_want_out)   -> disarm, qenable(WR(rq))
 *
 * Descriptors are registered edge-triggered: a service procedure reads until
 * EAGAIN, or stops when its stream is flow controlled and resumes when it is
 * back-enabled.
 *
 * Locking: io_lock (io_watch.c) guards the list and the table of
 * registrations; it is a leaf under which only epoll_ctl and qenable are
 * called (the epoll thread runs the service procedures after releasing
 * it).  qenable may be called from any thread on a queue pair that still
 * exists; ust_iow_del guarantees the epoll thread no longer touches the
 * registration (nor its queues) when it returns.  fork: rank
 * UST_FORK_DRIVER; the child closes the inherited descriptors of
 * registrations not marked `inherit` (their endpoints are detached,
 * sd_fork.c), forgets every registration, and starts a new thread on its
 * first registration.
 */
#ifndef UST_IO_WATCH_H
#define UST_IO_WATCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stream.h>

struct ust_iow {
    struct ust_iow *next, *prev; /* io_lock: on the list of registrations */
    uint64_t id;                 /* fixed while registered: slot | generation << 32 */
    uint32_t slot;               /* fixed while registered: its slot of io_tab */
    queue_t *rq;                 /* fixed while registered */
    int fd;                      /* fixed while registered */
    int out;                     /* io_lock: EPOLLOUT armed */
    int gone;                    /* io_lock (written atomically: pollers read it): being deleted */
    atomic_int err;              /* set by the thread on EPOLLERR, taken by the reader */
    atomic_int pri;              /* set by the thread on EPOLLPRI (urgent data), taken by the reader */
    int inherit;                 /* set before ust_iow_add: a fork child keeps fd open */
    int chan;                    /* set before ust_iow_add: fd is a provider's socket, which
                                  * a reader of the stream may poll itself (ust_iow_of) */
    atomic_uint poll;            /* IOW_POLLING | IOW_SKIPPED: a reader polls fd itself */
    atomic_llong left_ns;        /* when the last poller left (ust_now_ns) */
    atomic_int rdhup;            /* the peer's FIN seen (EPOLLRDHUP): a reader reads to EOF */
    int in_off;                  /* io_lock: EPOLLIN taken off while readers poll (io_watch.c) */
    struct ust_iow *off_next;    /* io_lock: on the list of registrations with in_off */
    /* The lazy readable token (ust_iow_tok_owe): written by the stream head
     * under its sd_lock, read by the epoll thread. */
    atomic_llong tok_since;      /* the head owes its readable token since (ns); 0: none */
    atomic_int tok_exact;        /* sticky: a library poll watched the stream: no lazy token */
    atomic_int tok_listed;       /* on the epoll thread's token list (written under io_lock) */
    void *tok_owner;             /* io_lock: the stream head that owes it (the hook's argument) */
    long long tok_seen;          /* io_lock: when the thread last saw it owed (or listed it) */
    struct ust_iow *tok_next;    /* io_lock: on the token list */
    atomic_int more;             /* the driver's last read run ended on a full batch */
    atomic_ullong runs;          /* tcp: read runs begun (ust_iow_run_calm) */
    atomic_ullong runs_done;     /* tcp: read runs ended (ust_iow_run_end); never above runs */
    atomic_ullong calm;          /* a poller saw data and no urgent data: runs + 1 then */
};

#define IOW_POLLING 1u /* a thread polls fd and will take what comes */
#define IOW_SKIPPED 2u /* the epoll thread left a readability to it */

/* ust_iow_init -- register the fork hooks.  Context: the provider's
 * registration at start-up (ust_udp_register, ...), before any ust_iow_add. */
void ust_iow_init(void);

/*
 * ust_iow_add -- watch fd (EPOLLIN|EPOLLET) for the endpoint whose read
 *   queue is rq.  Starts the epoll thread on first use.
 *   Context: any thread, no lock of the caller's held that the epoll thread
 *   could want (it takes only io_lock and queue locks).
 *   Returns 0 or a positive errno (epoll_ctl's, ust_thread_create's).
 */
int ust_iow_add(struct ust_iow *io, int fd, queue_t *rq);

/* ust_iow_want_out -- arm EPOLLOUT: the next writability qenables WR(rq)
 *   once.  A socket already writable reports at once.  Any thread. */
void ust_iow_want_out(struct ust_iow *io);

/*
 * ust_iow_del -- stop watching; on return the epoll thread holds no
 *   reference to io or its queues (its events carry ids, looked up under
 *   io_lock, not pointers), so the caller may close the socket and free
 *   io at once.  Context: any thread, the epoll thread included; never
 *   waits for the thread.
 */
void ust_iow_del(struct ust_iow *io);

/*
 * The channel's reader (src/head/sd_chan.c, issue 23): a thread blocked in a
 *   read of the stream above polls the socket itself and, when it is
 *   readable, runs the read service procedure on its own thread -- one
 *   wake-up, as a socket's reader has.  Meanwhile the epoll thread leaves
 *   plain readability (EPOLLIN alone) to it and serves only errors, urgent
 *   data and hang-ups.
 *
 * ust_iow_of -- the registration of the driver whose read queue is rq, or
 *   NULL.  Its memory is the endpoint's, alive while the stream is; it may
 *   be deleted (its fd closed) at any time, so fd is only ever polled.
 * ust_iow_poll_enter -- become io's poller: its fd, or -1 (deleted, or
 *   another thread polls it).
 * ust_iow_poll_leave -- stop; 1 if the epoll thread left a readability to
 *   the poller meanwhile, which the caller must then take (qenable rq).
 * Context: any thread, no lock; no system call.
 */
struct ust_iow *ust_iow_of(queue_t *rq);
int ust_iow_poll_enter(struct ust_iow *io);
int ust_iow_poll_leave(struct ust_iow *io);

/*
 * The lazy readable token (src/head/sd_chan.c, docs/STREAMHEAD.md "Channel
 *   readers").  A channel reader's read that leaves messages behind does not
 *   show the stream's readable token at once (its next read usually takes
 *   them, and the token would be withdrawn again: three system calls per
 *   pull); it owes it.  The epoll thread pays what is still owed
 *   IO_TOK_NS after it began, through the head's hook, so a poll(2) from
 *   outside the library sees the leftovers at most about 2 ms late.
 *
 * ust_iow_tok_hook -- the head's payer: called by the epoll thread under
 *   io_lock with the owner given to ust_iow_tok_owe; must not block on a
 *   lock another thread may hold while it takes io_lock (it trylocks), and
 *   returns 1 when the debt is settled (tok_since cleared), 0 when the
 *   stream is busy (asked again within about 1 ms).  Set once, at start-up
 *   of the head's channel code.
 * ust_iow_tok_owe -- owner (the stream head, under its lock) owes io's
 *   readable token from now on, unless it did already: the epoll thread is
 *   made to look within IO_TOK_NS (a wake-up, one system call, only when it
 *   sleeps longer).  Returns 0, or -1 when io is being deleted (the caller
 *   then pays at once).  Context: any thread; takes io_lock the first time
 *   in a while only.
 */
/*
 * ust_iow_run_calm -- a tcp read run begins: 1 if a channel reader's poll
 *   just before it saw readable data and no urgent data (POLLIN without
 *   POLLPRI: it stored runs + 1 in calm as it read runs before polling,
 *   no run being under way then: ust_iow_calm_before_poll) and no other run
 *   began in between.  The run's first read then starts
 *   with the data the poll saw, so it cannot start at an urgent mark (a
 *   read stops at the mark), and SIOCATMARK can be skipped.  Any thread,
 *   no lock: the read service procedure of io's queue.
 */
static inline int ust_iow_run_calm(struct ust_iow *io)
{
    unsigned long long n = atomic_fetch_add(&io->runs, 1);
    return atomic_exchange(&io->calm, 0) == n + 1;
}

/* A run counted by ust_iow_run_calm ends (its reads are done). */
static inline void ust_iow_run_end(struct ust_iow *io)
{
    atomic_fetch_add(&io->runs_done, 1);
}

/*
 * ust_iow_calm_before_poll -- a channel reader about to poll io's socket:
 *   the value to store in calm if the poll then sees data and no urgent
 *   data, or 0 when no such promise can be made: a run is under way, and
 *   it may read the data the poll sees and then, in a later read, start at
 *   an urgent mark that came meanwhile (CH.12 of test_xti_chan_token lost
 *   urgent bytes that way, about 1 run in 30 under load).
 */
static inline unsigned long long ust_iow_calm_before_poll(struct ust_iow *io)
{
    unsigned long long runs = atomic_load(&io->runs);
    return atomic_load(&io->runs_done) == runs ? runs + 1 : 0;
}

void ust_iow_tok_hook(int (*pay)(void *owner, struct ust_iow *io));
int ust_iow_tok_owe(struct ust_iow *io, void *owner);

#endif /* UST_IO_WATCH_H */
