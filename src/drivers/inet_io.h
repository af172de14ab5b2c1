/* SPDX-License-Identifier: MIT */
/*
 * inet_io.h -- private to the providers over kernel sockets (udp.c, later
 * tcp.c): one epoll thread watches every endpoint's non-blocking socket and
 * turns readiness into qenable, so the I/O itself is done by the endpoint's
 * service procedures: those it enabled run on the epoll thread right after
 * each batch of events (as at the end of a library call), others on a
 * scheduler thread or at a caller's exit.
 *
 *   readable or error (EPOLLIN, EPOLLERR, EPOLLHUP)  -> qenable(rq)
 *                                  (EPOLLERR also sets io->err first)
 *   urgent data (EPOLLPRI, tcp)    -> io->pri set, qenable(rq)
 *   writable (EPOLLOUT, armed by inet_io_want_out)   -> disarm, qenable(WR(rq))
 *
 * Sockets are registered edge-triggered: a service procedure reads until
 * EAGAIN, or stops when its stream is flow controlled and resumes when it is
 * back-enabled (the kernel meanwhile queues, then drops, as for sockets).
 *
 * Locking: io_lock (inet_io.c) guards the list and the table of
 * registrations; it is a leaf under which only epoll_ctl and qenable are
 * called (the epoll thread runs the service procedures after releasing
 * it).  qenable may be called from
 * any thread on a queue pair that still exists; inet_io_del guarantees the
 * epoll thread no longer touches the registration (nor its queues) when it
 * returns.  fork: rank UST_FORK_DRIVER; the child closes the inherited epoll
 * and socket descriptors (its endpoints are detached, sd_fork.c) and starts
 * a new thread on its first registration.
 */
#ifndef UST_INET_IO_H
#define UST_INET_IO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stream.h>

struct inet_io {
    struct inet_io *next, *prev; /* io_lock: on the list of registrations */
    uint64_t id;                 /* fixed while registered: slot | generation << 32 */
    uint32_t slot;               /* fixed while registered: its slot of io_tab */
    queue_t *rq;                 /* fixed while registered */
    int fd;                      /* fixed while registered */
    int out;                     /* io_lock: EPOLLOUT armed */
    int gone;                    /* io_lock: being deleted: the thread skips it */
    atomic_int err;              /* set by the thread on EPOLLERR, taken by the reader */
    atomic_int pri;              /* set by the thread on EPOLLPRI (urgent data), taken by the reader */
};

/* inet_io_init -- register the fork hooks.  Context: the provider's
 * registration at start-up (ust_udp_register), before any inet_io_add. */
void inet_io_init(void);

/*
 * inet_io_add -- watch fd (EPOLLIN|EPOLLET) for the endpoint whose read
 *   queue is rq.  Starts the epoll thread on first use.
 *   Context: any thread, no lock of the caller's held that the epoll thread
 *   could want (it takes only io_lock and queue locks).
 *   Returns 0 or a positive errno (epoll_ctl's, ust_thread_create's).
 */
int inet_io_add(struct inet_io *io, int fd, queue_t *rq);

/* inet_io_want_out -- arm EPOLLOUT: the next writability qenables WR(rq)
 *   once.  A socket already writable reports at once.  Any thread. */
void inet_io_want_out(struct inet_io *io);

/*
 * inet_io_del -- stop watching; on return the epoll thread holds no
 *   reference to io or its queues (its events carry ids, looked up under
 *   io_lock, not pointers), so the caller may close the socket and free
 *   io at once.  Context: any thread, the epoll thread included; never
 *   waits for the thread.
 */
void inet_io_del(struct inet_io *io);

/* --- inet_addr.c: addresses, shared by the providers over kernel sockets --- */

/* The family of an address of len bytes at p (AF_INET, AF_INET6), or 0 if it
 * is not a struct sockaddr_in / sockaddr_in6 of exactly that length (the XTI
 * Internet appendix's netbuf). */
int inet_addr_family(const unsigned char *p, size_t len);

/* The TPI error of a failed bind(2) with errno err: EADDRINUSE TADDRBUSY,
 * EACCES/EPERM TACCES, EADDRNOTAVAIL/EAFNOSUPPORT/EINVAL TBADADDR, else
 * TSYSERR (the caller passes err as UNIX_error). */
long inet_bind_error(int err);

/* --- inet_opt.c: scalar option values of udp_opt.c and tcp_opt.c --- */

/* The value of vlen bytes at vp -- 1 (unsigned char), 4 (t_uscalar_t) or
 * sizeof(long) -- into *v; 0, or -1 for any other length (TBADOPT). */
int inet_optval_get(const unsigned char *vp, size_t vlen, long *v);
/* v written in vlen bytes (1, 4 or sizeof(long)) at out. */
void inet_optval_put(unsigned char *out, long v, size_t vlen);

#endif /* UST_INET_IO_H */
