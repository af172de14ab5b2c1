/* SPDX-License-Identifier: MIT */
/*
 * pl_poll.c -- poll, ppoll (and fortify's __poll_chk, __ppoll_chk), select,
 * pselect and epoll_ctl with streams in the set.
 *
 * poll: a set with a stream goes to strm_poll whole (it waits on the
 * ordinary descriptors too); a set without one costs a look at each entry.
 *
 * ppoll and pselect: the timeout (a timespec) becomes strm_poll's
 * milliseconds, rounded up (a wait never ends early); the signal mask
 * must be in force exactly while the call sleeps, atomically with the
 * sleep (POSIX).  strm_poll sleeps in poll(2) on this thread, and that call
 * comes back here as the library's: the wrapper leaves the mask in
 * pl_sigmask for it, and poll becomes ppoll(2) with the mask.  A signal
 * blocked by the caller's mask and unblocked by the given one, pending
 * before the call or arriving while strm_poll looks at the streams, is thus
 * delivered inside that ppoll, which fails EINTR, as the C library's
 * would.  A call that finds a stream ready without sleeping does not
 * change the mask (the kernel's ppoll does not deliver then either).
 *
 * select and pselect: a set with a stream becomes a pollfd array (entries
 * for the descriptors below nfds that are in a set) for strm_poll.  Readable
 * is POLLIN, POLLRDNORM, POLLRDBAND, POLLHUP or POLLERR; writable is
 * POLLOUT, POLLWRNORM or POLLERR; exceptional is POLLPRI (Linux's select
 * mapping; a high-priority message at a stream head is POLLPRI only).  A
 * descriptor not open fails the call EBADF.  select's timeval is updated
 * with the time left, as Linux's select does; pselect's is not touched.
 *
 * epoll_ctl: a stream added (or modified) is "used" first -- a strm_poll
 * with timeout 0 -- so that a split pipe end takes what arrives in this
 * process (sd_xpipe.c, "Who takes"); the kernel readiness of the descriptor
 * (sd_fd.c) does the rest.  epoll_wait is not wrapped: it reports the
 * readiness tokens, which may be stale (a readable token outlives the data
 * another reader took), as the kernel's own reports for a shared socket.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/time.h>

#include <ustreams.h>

#include "pl.h"

extern void __chk_fail(void) __attribute__((noreturn));

static int any_stream(const struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++)
        if (__builtin_expect(ust_fd_is_stream(fds[i].fd), 0))
            return 1;
    return 0;
}

static int ts_to_ms(const struct timespec *ts)
{
    if (ts == NULL)
        return -1;
    long long ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static int ts_bad(const struct timespec *ts)
{
    return ts != NULL && (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L);
}

/* strm_poll with the signal mask mask in force while it sleeps (NULL: the
 * thread's own). */
static int stream_poll(struct pollfd *fds, nfds_t n, int ms, const sigset_t *mask)
{
    PL_ENTER();
    pl_sigmask = mask;
    int r = strm_poll(fds, n, ms);
    pl_sigmask = NULL;
    PL_LEAVE();
    return r;
}

/* The library's own poll(2) while a wrapper with a signal mask is inside
 * strm_poll on this thread: ppoll(2) with that mask. */
static int lib_poll(struct pollfd *fds, nfds_t n, int ms)
{
    const sigset_t *mask = pl_sigmask;
    if (mask == NULL)
        return PL_REAL(poll)(fds, n, ms);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    return PL_REAL(ppoll)(fds, n, ms < 0 ? NULL : &ts, mask);
}

int poll(struct pollfd *fds, nfds_t n, int ms)
{
    if (pl_from_lib(PL_CALLER()))
        return lib_poll(fds, n, ms);
    if (!any_stream(fds, n))
        return PL_REAL(poll)(fds, n, ms);
    return stream_poll(fds, n, ms, NULL);
}

int __poll_chk(struct pollfd *fds, nfds_t n, int ms, size_t fdslen)
{
    if (pl_from_lib(PL_CALLER()) || !any_stream(fds, n))
        return PL_REAL(poll_chk)(fds, n, ms, fdslen);
    if (fdslen / sizeof(*fds) < n)
        __chk_fail();
    return stream_poll(fds, n, ms, NULL);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    if (pl_from_lib(PL_CALLER()) || !any_stream(fds, n))
        return PL_REAL(ppoll)(fds, n, ts, mask);
    if (ts_bad(ts)) {
        errno = EINVAL;
        return -1;
    }
    return stream_poll(fds, n, ts_to_ms(ts), mask);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                size_t fdslen)
{
    if (pl_from_lib(PL_CALLER()) || !any_stream(fds, n))
        return PL_REAL(ppoll_chk)(fds, n, ts, mask, fdslen);
    if (fdslen / sizeof(*fds) < n)
        __chk_fail();
    if (ts_bad(ts)) {
        errno = EINVAL;
        return -1;
    }
    return stream_poll(fds, n, ts_to_ms(ts), mask);
}

/* ---- select ---- */

#define SEL_READ  (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR)
#define SEL_WRITE (POLLOUT | POLLWRNORM | POLLERR)
#define SEL_EXCEPT POLLPRI

static int in_set(const fd_set *s, int fd)
{
    return s != NULL && FD_ISSET(fd, s);
}

static int sets_have_stream(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
    for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
        if ((in_set(r, fd) || in_set(w, fd) || in_set(e, fd)) && ust_fd_is_stream(fd))
            return 1;
    return 0;
}

/* select over strm_poll (see above): the count of bits left set, or -1. */
static int stream_select(int nfds, fd_set *r, fd_set *w, fd_set *e, int ms, const sigset_t *mask)
{
    struct pollfd pf[FD_SETSIZE];
    nfds_t n = 0;

    if (nfds > FD_SETSIZE)
        nfds = FD_SETSIZE;
    for (int fd = 0; fd < nfds; fd++) {
        short ev = (in_set(r, fd) ? POLLIN | POLLRDNORM | POLLRDBAND : 0) |
                   (in_set(w, fd) ? POLLOUT | POLLWRNORM : 0) | (in_set(e, fd) ? POLLPRI : 0);
        if (ev != 0)
            pf[n++] = (struct pollfd){.fd = fd, .events = ev};
    }
    int rc = stream_poll(pf, n, ms, mask);
    if (rc < 0)
        return -1;
    for (nfds_t i = 0; i < n; i++)
        if (pf[i].revents & POLLNVAL) {
            errno = EBADF;
            return -1;
        }
    int count = 0;
    for (nfds_t i = 0; i < n; i++) {
        int fd = pf[i].fd;
        short re = pf[i].revents;
        if (in_set(r, fd) && !(re & SEL_READ))
            FD_CLR(fd, r);
        if (in_set(w, fd) && !(re & SEL_WRITE))
            FD_CLR(fd, w);
        if (in_set(e, fd) && !(re & SEL_EXCEPT))
            FD_CLR(fd, e);
        count += in_set(r, fd) + in_set(w, fd) + in_set(e, fd);
    }
    return count;
}

static long long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
    if (nfds <= 0 || pl_from_lib(PL_CALLER()) || !sets_have_stream(nfds, r, w, e))
        return PL_REAL(select)(nfds, r, w, e, tv);
    if (tv != NULL && (tv->tv_sec < 0 || tv->tv_usec < 0)) {
        errno = EINVAL;
        return -1;
    }
    int ms = -1;
    long long end = 0;
    if (tv != NULL) {
        long long us = (long long)tv->tv_sec * 1000000 + tv->tv_usec;
        ms = us / 1000 + (us % 1000 != 0) > INT_MAX ? INT_MAX : (int)(us / 1000 + (us % 1000 != 0));
        end = now_us() + us;
    }
    int rc = stream_select(nfds, r, w, e, ms, NULL);
    if (tv != NULL) { /* the time left, as Linux's select reports it */
        long long left = end - now_us();
        if (left < 0)
            left = 0;
        tv->tv_sec = left / 1000000;
        tv->tv_usec = left % 1000000;
    }
    return rc;
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
            const sigset_t *mask)
{
    if (nfds <= 0 || pl_from_lib(PL_CALLER()) || !sets_have_stream(nfds, r, w, e))
        return PL_REAL(pselect)(nfds, r, w, e, ts, mask);
    if (ts_bad(ts)) {
        errno = EINVAL;
        return -1;
    }
    return stream_select(nfds, r, w, e, ts_to_ms(ts), mask);
}

/* ---- epoll ---- */

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && pl_take(fd, PL_CALLER())) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        stream_poll(&p, 1, 0, NULL); /* the end is used here from now on */
    }
    return PL_REAL(epoll_ctl)(epfd, op, fd, ev);
}
