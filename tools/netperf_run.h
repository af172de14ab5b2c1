/* SPDX-License-Identifier: MIT */
/*
 * netperf_run.h -- the parts of one `ustreams netperf` run (tools/netperf.c):
 * the loops of the tests (tools/netperf_loops.c), the server process
 * (tools/netperf_server.c) and the system call counters
 * (tools/netperf_calls.c).
 *
 * The client (netperf's role: the sender of a STREAM test, the client of an
 * RR test) and the server (netserver's: the receiver, the server) share one
 * struct np_shared.  By default the server is a child process and the
 * structure lives in a MAP_SHARED anonymous mapping made before the fork;
 * with --one-process both are threads and it is ordinary memory.  Either way
 * every field is an atomic written by one side (the error text excepted,
 * see np_fail_msg), so nothing in it needs a lock that a dead process could
 * leave held.
 */
#ifndef UST_TOOLS_NETPERF_RUN_H
#define UST_TOOLS_NETPERF_RUN_H

#include <stdatomic.h>
#include <sys/types.h>

#include "netperf.h"

#define NP_END_WAIT 5.0 /* seconds the end of a test may take */

/* What the two loops share.  Each counter is written by one side. */
struct np_shared {
    _Alignas(64) atomic_llong rx_msgs; /* server: messages received (RR: client: transactions) */
    atomic_llong rx_bytes;             /* bytes received (RR: request bytes) */
    _Alignas(64) atomic_llong tx_msgs; /* client: messages sent */
    _Alignas(64) atomic_llong srv_msgs; /* RR server: requests answered */
    _Alignas(64) atomic_int stop;      /* the measuring thread: the client stops */
    atomic_int rx_done;                /* server: it saw the end */
    atomic_int claimed;                /* a failure took err (first one only) */
    atomic_int failed;                 /* err is written: the run failed */
    char err[NP_ERRLEN];               /* written once, by the claimer, before failed */
};

/* One loop's arguments: its endpoint, the peer's address (UDP). */
struct np_loop {
    const struct np_opts *o;
    struct np_shared *sh;
    int ep;
    struct np_addr peer;
    const char *who; /* "client", "server", "sender", "receiver" */
};

typedef void *(*np_loop_fn)(void *);

/* The server's and the client's loop of each test (enum np_test order). */
extern const np_loop_fn np_server_loop[4];
extern const np_loop_fn np_client_loop[4];

/* Record the first failure of a run (later ones are its consequences): the
 * first caller claims sh->err, writes it, then sets sh->failed. */
void np_fail_msg(struct np_shared *sh, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

double np_now(void);
void np_sleep(double s);

/* ---------------------------------------------------------------- calls */

/* A count of the system calls a process enters (every thread, present and
 * future): one perf_event_open counter of the tracepoint
 * raw_syscalls:sys_enter per task of the process, each inherited by the
 * threads that task creates.  n == 0: not counting, why says why. */
#define NP_CALLS_TASKS 64
struct np_calls {
    int n;
    int fd[NP_CALLS_TASKS];
    char why[NP_ERRLEN];
};

/* Count the calls of process pid from now on.  0, or -1 with c->why (no
 * tracefs, no permission, ...).  For the count to cover a process, call it
 * before the process makes the threads it should count or while it has
 * them all (a thread made by an uncounted task is not counted). */
int np_calls_open(struct np_calls *c, pid_t pid);
/* The calls counted so far, or -1 when not counting. */
long long np_calls_read(const struct np_calls *c);
void np_calls_close(struct np_calls *c);

/* ---------------------------------------------------------------- server */

/* One message on the control socket (SOCK_SEQPACKET): an address and a
 * status.  rc 0, or NP_EXIT_* with err. */
struct np_ctl {
    int rc;
    struct np_addr addr;
    char err[NP_ERRLEN];
};

/* Send / receive one control message; receive waits at most wait_s.  0, or
 * -1 (receive: also on the peer's close or a short message). */
int np_ctl_send(int fd, const struct np_ctl *m);
int np_ctl_recv(int fd, struct np_ctl *m, double wait_s);

/* The server process (netserver's role), in the child after fork: wait for
 * the parent's start message (its counters are then attached), make the
 * server endpoint, send its address, take the client's (UDP) or accept its
 * connection (TCP), say ready, run the server loop, close.  Never returns:
 * the exit status is 0, NP_EXIT_FAIL, or the set-up's status. */
void np_server_main(const struct np_opts *o, struct np_shared *sh, int ctl)
    __attribute__((noreturn));

#endif /* UST_TOOLS_NETPERF_RUN_H */
