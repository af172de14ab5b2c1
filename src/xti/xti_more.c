/* SPDX-License-Identifier: MIT */
/*
 * xti_more.c -- T_MORE coalescing in libxnet (seed 003, Roca & Diot, §4.2:
 * "TCP coalescing ... moved to XTI"), and t_coalesce, its switch.
 *
 * Principles of operation.  On a connection-mode endpoint, normal data that
 * t_snd / t_sndv send with T_MORE ("more of this TSDU follows") is copied
 * into a buffer of the endpoint, the hold (e_mbuf, XTI_MORE_CAP bytes),
 * instead of crossing into the stream at once; it crosses, as one
 * T_DATA_REQ, when
 *   - a send without T_MORE (or with T_PUSH) comes: the held bytes and the
 *     head of that send go together, ending the TSDU (MORE_flag as that
 *     send says) -- the paper's PUSH reading of a missing T_MORE;
 *   - the hold would overflow: it is filled up and goes (MORE_flag set);
 *   - XTI_MORE_IDLE_NS after its first byte was held: the timer thread;
 *   - a reader of the endpoint looks for the peer (t_rcv, t_rcvv, t_look):
 *     if it can go without waiting (xti_more_try), so that a request held
 *     by T_MORE is never what its own answer waits for;
 *   - expedited data is sent (it never overtakes held normal data; it is
 *     never held itself), t_sndrel (orderly release delivers everything
 *     sent before it), t_close (as a t_snd would have sent it), t_coalesce
 *     turning it off.
 * What the hold sends is always the continuation of one TSDU: only a send
 * with T_MORE leaves bytes held, and a send without T_MORE empties the hold.
 * So a provider with TSDU boundaries (ticots, ticotsord: T_INFINITE) still
 * delivers every TSDU whole, its end marked where the sender ended it; only
 * the pieces inside it are cut differently, which XTI allows.  On a byte
 * stream (tcp, TSDU 0) MORE_flag means nothing and the hold simply turns
 * many small sends into one.  t_open's default (XTI_MORE_USED): on for a
 * byte stream, off where the provider keeps TSDU boundaries (programs
 * there count on the receiver's pieces being the sender's); t_coalesce
 * switches it per endpoint.
 *
 * Held bytes belong to one connection of one process: e_mepoch records the
 * connection (e_cepoch, bumped by xti_discon_state: t_snddis, t_rcvdis)
 * and e_mfork the fork generation when they were held; bytes found with
 * another are stale and dropped unsent (a disconnect discards them, as it
 * discards a socket's send buffer; a fork child never sends its parent's).
 * A background flush (timer, reader) that fails keeps its errno in e_merr
 * and the next t_snd reports it, as a socket's next send reports SO_ERROR.
 *
 * The timer.  One thread for the whole library, started when a first
 * endpoint holds bytes; no thread per endpoint.  Armed endpoints form a
 * list in deadline order (every deadline is now + XTI_MORE_IDLE_NS, so
 * appending keeps it sorted); the list holds a reference on each.  The
 * thread sleeps until the first deadline, then visits the endpoint with
 * trylock only (a sender at work, flow control, a busy e_lock: it looks
 * again XTI_MORE_IDLE_NS later), so it never waits for an application.
 *
 * Locking (xti_impl.h): the hold's fields (W) are used with e_wlock and
 * e_lock both held.  tm_lock, a leaf after e_lock, guards the list, the
 * thread's existence and each entry's T fields; the timer holds it for a
 * whole visit, so fork's prepare handler, which takes it, finds the timer
 * holding no endpoint lock (the child would otherwise inherit them held).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xti_impl.h"

/* n bytes of the caller's src into library memory dst: the library's
 * fault-safe copy (ustreams_copyin, no system call); 0 or -1 (TSYSERR,
 * EFAULT). */
static int more_copyin(void *dst, const void *src, size_t n)
{
    int e = ustreams_copyin(src, dst, n);
    return e ? xti_syserr(e) : 0;
}

static pthread_mutex_t tm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tm_cv;               /* CLOCK_MONOTONIC (more_init) */
static struct xti_ep *tm_head, *tm_tail;   /* T: armed endpoints, earliest first */
static int tm_running;                     /* T: the timer thread exists in this process */
static atomic_uint more_forkgen;           /* bumped in every fork child */
static pthread_once_t more_once = PTHREAD_ONCE_INIT;

static unsigned long long more_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void more_cv_init(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tm_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* fork: the timer is between visits (it holds tm_lock for each). */
static void more_fork_prepare(void)
{
    pthread_mutex_lock(&tm_lock);
}

static void more_fork_parent(void)
{
    pthread_mutex_unlock(&tm_lock);
}

/* The child has no timer thread: forget the list (its references too). */
static void more_fork_child(void)
{
    struct xti_ep *ep, *next;

    atomic_fetch_add(&more_forkgen, 1); /* every hold inherited is stale */
    for (ep = tm_head; ep; ep = next) {
        next = ep->e_mnext;
        ep->e_mnext = NULL;
        ep->e_marmed = 0;
        xti_ep_unref(ep);
    }
    tm_head = tm_tail = NULL;
    tm_running = 0;
    more_cv_init();
    pthread_mutex_unlock(&tm_lock);
}

static void more_init(void)
{
    more_cv_init();
    pthread_atfork(more_fork_prepare, more_fork_parent, more_fork_child);
}

/* Empty the hold (what it held went, or is dropped). W held. */
static void more_drop(struct xti_ep *ep)
{
    ep->e_mlen = 0;
    atomic_store_explicit(&ep->e_mheld, 0, memory_order_release);
}

/* Drop held bytes and a kept error of an ended connection or a parent process. W held. */
static void more_stale(struct xti_ep *ep)
{
    unsigned gen = atomic_load_explicit(&more_forkgen, memory_order_relaxed);

    if (ep->e_mepoch == ep->e_cepoch && ep->e_mfork == gen)
        return;
    more_drop(ep);
    ep->e_merr = 0;
    ep->e_mepoch = ep->e_cepoch;
    ep->e_mfork = gen;
}

/* Append ep to the timer's list, due at due.  tm_lock held. */
static void more_append(struct xti_ep *ep, unsigned long long due)
{
    ep->e_mdue = due;
    ep->e_mnext = NULL;
    ep->e_marmed = 1;
    if (tm_tail)
        tm_tail->e_mnext = ep;
    else
        tm_head = ep;
    tm_tail = ep;
}

/*
 * Send the hold if that needs no wait.  W held; never blocks on flow
 * control.  Returns 1 if bytes are still held (look again later), else 0.
 */
static int more_try_locked(struct xti_ep *ep)
{
    struct T_data_req dr = {.PRIM_type = T_DATA_REQ, .MORE_flag = 1};
    struct strbuf c = {.len = (int)sizeof(dr), .buf = (char *)&dr};
    struct strbuf d;
    int r;

    more_stale(ep);
    if (!ep->e_mlen)
        return 0;
    if (ep->e_state != T_DATAXFER && ep->e_state != T_INREL) {
        more_drop(ep); /* no connection to send on any more */
        return 0;
    }
    r = strm_ioctl(ep->e_fd, I_CANPUT, 0);
    if (r == 0)
        return 1;
    d.len = (int)ep->e_mlen;
    d.buf = ep->e_mbuf;
    if (r > 0)
        r = xti_sys_putpmsg(ep->e_fd, &c, &d, 0, MSG_BAND);
    if (r < 0 && errno == EAGAIN)
        return 1;
    if (r < 0)
        ep->e_merr = errno; /* the next t_snd reports it */
    more_drop(ep);
    return 0;
}

/* A visit of the timer: 1 if ep must be looked at again.  tm_lock held. */
static int more_visit(struct xti_ep *ep)
{
    int again = 1;

    if (!atomic_load_explicit(&ep->e_mheld, memory_order_acquire))
        return 0;
    if (pthread_mutex_trylock(&ep->e_wlock) != 0)
        return 1; /* a sender is at work (or waits on flow control) */
    if (pthread_mutex_trylock(&ep->e_lock) == 0) {
        again = ep->e_closed ? 0 : more_try_locked(ep);
        pthread_mutex_unlock(&ep->e_lock);
    }
    pthread_mutex_unlock(&ep->e_wlock);
    return again;
}

static void *more_timer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tm_lock);
    for (;;) {
        struct xti_ep *ep = tm_head;
        unsigned long long now;

        if (!ep) {
            pthread_cond_wait(&tm_cv, &tm_lock);
            continue;
        }
        now = more_now();
        if (ep->e_mdue > now) {
            struct timespec ts = {.tv_sec = (time_t)(ep->e_mdue / 1000000000ULL),
                                  .tv_nsec = (long)(ep->e_mdue % 1000000000ULL)};
            pthread_cond_timedwait(&tm_cv, &tm_lock, &ts);
            continue;
        }
        tm_head = ep->e_mnext;
        if (!tm_head)
            tm_tail = NULL;
        ep->e_mnext = NULL;
        ep->e_marmed = 0;
        if (more_visit(ep))
            more_append(ep, now + XTI_MORE_IDLE_NS); /* keeps its reference */
        else
            xti_ep_unref(ep);
    }
    return NULL;
}

/* Start the timer thread, signals blocked (they are the application's). tm_lock held. */
static void more_start(void)
{
    sigset_t all, old;
    pthread_attr_t a;
    pthread_t t;

    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    /* On failure the list waits for the next arming; pushes still send. */
    if (pthread_create(&t, &a, more_timer, NULL) == 0)
        tm_running = 1;
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The hold has just become non-empty: the timer will look at it. W held. */
static void more_arm(struct xti_ep *ep)
{
    atomic_store_explicit(&ep->e_mheld, 1, memory_order_release);
    pthread_once(&more_once, more_init);
    pthread_mutex_lock(&tm_lock);
    if (!ep->e_marmed) {
        int wake = tm_head == NULL;
        xti_ep_ref_add(ep);
        more_append(ep, more_now() + XTI_MORE_IDLE_NS);
        if (!tm_running)
            more_start();
        else if (wake)
            pthread_cond_signal(&tm_cv);
    }
    pthread_mutex_unlock(&tm_lock);
}

/* Append n bytes of the caller's src to the hold (they fit).  0 or -1 (t_errno). W held. */
static int more_hold(struct xti_ep *ep, const char *src, size_t n)
{
    int first = ep->e_mlen == 0;

    if (!n)
        return 0;
    if (!ep->e_mbuf && !(ep->e_mbuf = malloc(XTI_MORE_CAP)))
        return xti_syserr(ENOMEM);
    if (more_copyin(ep->e_mbuf + ep->e_mlen, src, n) < 0)
        return -1; /* EFAULT: nothing taken */
    ep->e_mlen += n;
    if (first)
        more_arm(ep);
    return 0;
}

int xti_more_snd(struct xti_ep *ep, const char *buf, size_t nbytes, int flags)
{
    int push = !(flags & T_MORE) || (flags & T_PUSH);
    size_t held = ep->e_mlen, k = 0, rest, s = 0;

    if (!push && held + nbytes <= XTI_MORE_CAP)
        return more_hold(ep, buf, nbytes) < 0 ? -1 : (int)nbytes;
    if (held) {
        /* Top the hold up with the head of this send; they cross as one. */
        k = XTI_MORE_CAP - held < nbytes ? XTI_MORE_CAP - held : nbytes;
        if (k && more_copyin(ep->e_mbuf + held, buf, k) < 0)
            return -1;
        /* It ends the TSDU only if it carries the whole of a send without T_MORE. */
        int more = k < nbytes || (flags & T_MORE);
        if (xti_snd_pieces(ep, ep->e_mbuf, held + k, more, 0, &s) < 0)
            return -1; /* one piece: nothing went, the hold is as it was */
        more_drop(ep);
        if (k == nbytes)
            return (int)nbytes;
    }
    rest = nbytes - k;
    if (!push && rest < XTI_MORE_CAP)
        return more_hold(ep, buf + k, rest) < 0 ? (k ? (int)k : -1) : (int)nbytes;
    if (xti_snd_pieces(ep, buf + k, rest, flags & T_MORE, 0, &s) < 0 && !(k + s))
        return -1;
    return (int)(k + s);
}

int xti_more_check(struct xti_ep *ep)
{
    int e;

    more_stale(ep);
    if (!ep->e_merr)
        return 0;
    e = ep->e_merr;
    ep->e_merr = 0;
    if (xti_look_event(ep) == T_DISCONNECT)
        return xti_err(TLOOK);
    return xti_syserr(e);
}

int xti_more_flush(struct xti_ep *ep)
{
    size_t s;

    more_stale(ep);
    if (!ep->e_mlen)
        return 0;
    if (xti_snd_pieces(ep, ep->e_mbuf, ep->e_mlen, 1, 0, &s) < 0)
        return -1;
    more_drop(ep);
    return 0;
}

void xti_more_try(struct xti_ep *ep)
{
    int e;

    if (!atomic_load_explicit(&ep->e_mheld, memory_order_acquire))
        return;
    if (pthread_mutex_trylock(&ep->e_wlock) != 0)
        return; /* a sender is at work: it or the timer sends the hold */
    e = errno;
    (void)more_try_locked(ep); /* what stays held stays armed */
    errno = e;
    pthread_mutex_unlock(&ep->e_wlock);
}

void xti_more_close(int fd)
{
    int te = t_errno, e = errno;
    struct xti_ep *ep = xti_ep_get(fd);

    if (!ep) {
        t_errno = te;
        errno = e;
        return;
    }
    /*
     * A sender blocked in t_snd holds e_wlock: t_close must still wake it,
     * so it is not waited for (trylock under e_lock, xti_impl.h); its data
     * and the hold then go the way of a stream closed under a writer.
     */
    if (atomic_load_explicit(&ep->e_mheld, memory_order_acquire) &&
        pthread_mutex_trylock(&ep->e_wlock) == 0) {
        if (xti_more_flush(ep) < 0)
            more_drop(ep); /* non-blocking and flow-controlled, or gone */
        pthread_mutex_unlock(&ep->e_wlock);
    }
    xti_ep_put(ep);
    t_errno = te;
    errno = e;
}

int t_coalesce(int fd, int on)
{
    struct xti_ep *ep = xti_ep_get_io(fd, XTI_WR);
    int rc = -1;

    if (!ep)
        return -1;
    if (ep->e_info.servtype == T_CLTS) {
        xti_err(TNOTSUPPORT);
    } else if (on < -1 || on > 1) {
        xti_err(TBADFLAG);
    } else {
        rc = XTI_MORE_USED(ep);
        if (on == 0 && xti_more_flush(ep) < 0)
            rc = -1; /* TFLOW (non-blocking), TLOOK, TSYSERR: still on */
        else if (on >= 0)
            ep->e_mmode = on ? XTI_MORE_ON : XTI_MORE_OFF;
    }
    xti_ep_put_io(ep, XTI_WR);
    return rc;
}
