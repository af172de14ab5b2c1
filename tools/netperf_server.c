/* SPDX-License-Identifier: MIT */
/*
 * netperf_server.c -- the server process of `ustreams netperf` (netserver's
 * role; tools/netperf_run.h) and the control messages between it and the
 * client process.
 *
 * Principles of operation
 *   - The parent forks before it opens any stream, so the child starts with
 *     no endpoint of the parent's and makes its own (its library state is
 *     what fork gives: nothing open).  The two talk over a SOCK_SEQPACKET
 *     socketpair, one struct np_ctl per message:
 *         parent -> child   start (the parent's counters are attached)
 *         child  -> parent  the server's address, or why it has none
 *         parent -> child   UDP: the client's address
 *         child  -> parent  ready (connection accepted, -D applied), or why not
 *     then the test runs, its counts in the shared mapping, and the child
 *     exits when its loop sees the end.
 *   - The child never outlives the parent (PR_SET_PDEATHSIG SIGKILL, checked
 *     against a parent that died before the call), and every wait on the
 *     control socket has a deadline: a dead or stuck peer ends the run.
 *   - Control messages come from our own process tree, but are checked as
 *     any input is: the exact length, an address length within its
 *     storage, the text terminated.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netperf_run.h"

#define CTL_WAIT 10.0 /* seconds a control message may take */

int np_ctl_send(int fd, const struct np_ctl *m)
{
    ssize_t n;
    do
        n = send(fd, m, sizeof(*m), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(*m) ? 0 : -1;
}

int np_ctl_recv(int fd, struct np_ctl *m, double wait_s)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    double until = np_now() + wait_s;
    for (;;) {
        int left = (int)((until - np_now()) * 1000);
        if (left < 0)
            left = 0;
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = recv(fd, m, sizeof(*m), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(*m) || m->addr.len > sizeof(m->addr.ss))
            return -1;
        m->err[NP_ERRLEN - 1] = '\0';
        return 0;
    }
}

/* Tell the parent the set-up failed (rc, err) and leave. */
static void __attribute__((noreturn)) setup_failed(int ctl, int rc, const char *err)
{
    struct np_ctl m = {.rc = rc};
    snprintf(m.err, sizeof(m.err), "server: %s", err);
    (void)np_ctl_send(ctl, &m);
    fflush(NULL);
    _exit(rc); /* the library may hold an accept in progress: no clean-up */
}

void np_server_main(const struct np_opts *o, struct np_shared *sh, int ctl)
{
    const struct np_api *api = o->api;
    struct np_ctl m;
    struct np_loop l = {.o = o, .sh = sh, .who = np_is_rr(o) ? "server" : "receiver"};
    char err[NP_ERRLEN];
    int rc;

    /* Never outlive the parent: it may die before this call, hence the check. */
    pid_t parent = getppid();
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(NP_EXIT_FAIL);
    if (np_ctl_recv(ctl, &m, CTL_WAIT) < 0)
        _exit(NP_EXIT_FAIL); /* the parent went: nobody to tell */
    if (o->xti_rdev && api == &np_api_xti)
        np_xti_use(o->xti_rdev);

    memset(&m, 0, sizeof(m));
    if (np_is_udp(o)) {
        if ((rc = api->dg_open(o->family, o->rbuf, &l.ep, &m.addr, err)) != 0)
            setup_failed(ctl, rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL, err);
        if (np_ctl_send(ctl, &m) < 0)
            _exit(NP_EXIT_FAIL);
        if (np_ctl_recv(ctl, &m, CTL_WAIT) < 0 || m.rc != 0)
            _exit(NP_EXIT_FAIL); /* the client failed and says why itself */
        l.peer = m.addr;
    } else {
        int lep;
        if ((rc = api->st_listen(o->family, o->rbuf, &lep, &m.addr, err)) != 0)
            setup_failed(ctl, rc == NP_EXIT_UNAVAILABLE ? rc : NP_EXIT_FAIL, err);
        if (np_ctl_send(ctl, &m) < 0)
            _exit(NP_EXIT_FAIL);
        if (api->st_accept(lep, o->family, o->rbuf, &l.ep, err) != 0)
            setup_failed(ctl, NP_EXIT_FAIL, err);
        api->close(lep);
        if (o->nodelay && api->st_nodelay(l.ep, err) != 0)
            setup_failed(ctl, NP_EXIT_FAIL, err);
    }
    memset(&m, 0, sizeof(m));
    if (np_ctl_send(ctl, &m) < 0)
        _exit(NP_EXIT_FAIL);

    np_server_loop[o->test](&l);
    api->close(l.ep);
    close(ctl);
    fflush(NULL);
    exit(atomic_load(&sh->failed) ? NP_EXIT_FAIL : NP_EXIT_OK);
}
