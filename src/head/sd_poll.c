/* SPDX-License-Identifier: MIT */
/*
 * sd_poll.c -- poll(2) for streams, and the I_SETSIG signals.
 *
 * Principles of operation
 *   The events of a stream are computed from the stream itself, never from
 *   its descriptor: ust_sd_pollmask looks at the head's read queue (what a
 *   read or getmsg would find), at flow control below the head (what a write
 *   would find), and at the error and hang-up state.  Looking at flow control
 *   here is a peek: it does not record a waiting writer (QWANTW), because a
 *   poller that finds the stream ready will not wait.
 *
 *   A stream descriptor is a real descriptor whose kernel readiness the
 *   library drives on edges (sd_fd.c): a readable token, a priority token
 *   (both POLLIN on the descriptor: a seqpacket socket has no out-of-band
 *   data, so a wait for POLLPRI sleeps on POLLIN), writability withdrawn,
 *   hang-up.  strm_poll sleeps in poll(2) on those
 *   descriptors together with the caller's ordinary ones.  Tokens are set on
 *   edges and withdrawn lazily, so before sleeping a poller settles the
 *   tokens of each stream it waits on (poll_arm):
 *     - read: if nothing at all is readable, the read and priority tokens
 *       are withdrawn; the head's put procedure sets them again, under
 *       sd_lock, when a message arrives;
 *     - write: writability is withdrawn first, then flow control is armed with
 *       bcanputnext (which sets QWANTW / QB_WANTW on a full queue, so that
 *       the drain back-enables the head and its hook restores writability);
 *       if band 0 turned out writable after all, writability is restored.
 *       Both steps run under sd_lock, which the back-enable hook also takes,
 *       so a relief cannot slip in between.
 *   After poll(2) returns, the masks are computed again; a stream woken by a
 *   token that meant something the caller did not ask for (it waits for
 *   POLLRDBAND while band 0 data is queued, say) makes the loop sleep in
 *   short steps instead of spinning.
 *
 *   I_SETSIG registrations are kept per process on sd_siglist, and
 *   sd_sigflags holds their union so that the head's put procedure can tell
 *   cheaply whether any signal is wanted.
 *
 * Locking
 *   Everything here that touches a stream does so under its sd_lock; queue
 *   locks are taken inside it (order sd_lock > queue lock).  strm_poll holds
 *   no lock and no call (sd_calls) while it sleeps, so a close is never held
 *   up by a poller.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sd_chan.h"
#include "sthead.h"

#define POLL_DATA   (POLLIN | POLLRDNORM | POLLRDBAND | POLLMSG) /* the read token */
#define POLL_READ   (POLL_DATA | POLLPRI)
#define POLL_WRITE  (POLLOUT | POLLWRNORM | POLLWRBAND)
#define POLL_ALWAYS (POLLERR | POLLHUP | POLLNVAL)

#define POLL_STACK   64 /* pollfd entries strm_poll keeps on the stack */
#define POLL_STEP_MS 10 /* sleep step when a descriptor's token means nothing to us */

/* ------------------------------------------------------------------------ */
/* Events of a stream                                                       */
/* ------------------------------------------------------------------------ */
/* The read events the head's read queue offers: POLLPRI for a high-priority
 * message at the front, POLLMSG for an M_SIG/M_PCSIG of SIGPOLL at the front,
 * POLLIN for any other message, POLLRDNORM if one of band 0 is queued,
 * POLLRDBAND if one of a band > 0 is.  Queue order (high priority first, then
 * bands downwards, band 0 last) means only the front and the tail matter. */
static short read_events(struct stdata *sd)
{
    queue_t *rq = sd->sd_rq;
    struct ust_qpriv *pv = ust_qpv(rq);
    short ev = 0;
    mblk_t *mp;

    ust_sd_absorb(sd); /* a pipe's arrivals (sd_arrive.c) */
    ust_lock(&pv->lock);
    mp = rq->q_first;
    if (mp != NULL) {
        unsigned char t = mp->b_datap->db_type;
        if (t >= QPCTL)
            ev |= POLLPRI;
        if ((t == M_SIG || t == M_PCSIG) && mp->b_wptr > mp->b_rptr && *mp->b_rptr == SIGPOLL)
            ev |= POLLMSG;
    }
    while (mp != NULL && mp->b_datap->db_type >= QPCTL)
        mp = mp->b_next;
    if (mp != NULL) {
        ev |= POLLIN;
        if (mp->b_band > 0)
            ev |= POLLRDBAND;
        mp = rq->q_last;
        if (mp->b_datap->db_type < QPCTL && mp->b_band == 0)
            ev |= POLLRDNORM;
    }
    ust_unlock(&pv->lock);
    return ev;
}

/* Flow control below the head, peeked: the nearest queue below the head with
 * a service procedure (or the last one) decides.  Sets *band0 if a band 0
 * message could be written, *anyband if some band > 0 that exists there is
 * not full (SVR4: only bands written at least once count), and *nband to the
 * highest band allocated there.  Claims each queue it looks at, so a pop
 * running meanwhile cannot free what is being read. */
static void write_peek(struct stdata *sd, int *band0, int *anyband, int *nband)
{
    queue_t *q = ust_qclaim_next(sd->sd_wq);
    struct ust_qpriv *pv;

    *band0 = 1;
    *anyband = 0;
    *nband = 0;
    while (q != NULL && !(q->q_qinfo && q->q_qinfo->qi_srvp)) {
        queue_t *n = ust_qclaim_next(q);
        if (n == NULL)
            break; /* end of the stream: the last queue decides */
        ust_qrelease(q);
        q = n;
    }
    if (q == NULL)
        return;
    pv = ust_qpv(q);
    ust_lock(&pv->lock);
    *band0 = !(ust_qflags(q) & QFULL);
    *nband = q->q_nband;
    for (qband_t *qb = q->q_bandp; qb != NULL; qb = qb->qb_next) {
        if (!(qb->qb_flag & QB_FULL)) {
            *anyband = 1;
            break;
        }
    }
    ust_unlock(&pv->lock);
    ust_qrelease(q);
    /* A split pipe end: band 0 is writable when its ring has room too. */
    if (*band0 && __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) != NULL && ust_sd_procs() != NULL)
        *band0 = ust_sd_procs()->xpipe_room(sd);
}

/*
 * ust_sd_pollmask -- the poll(2) events of the stream now.
 *   Context: any thread; sd_lock held (queue locks are taken inside).
 *   Returns the events among `want` that hold, plus POLLERR, POLLHUP and
 *   POLLNVAL whenever they hold (poll(2) reports them unasked):
 *     POLLNVAL  the stream is closing, or linked under a multiplexer;
 *     POLLERR   an M_ERROR set a read or write error;
 *     POLLHUP   hung up (M_HANGUP, or the other end of a pipe closed); never
 *               together with POLLOUT;
 *     POLLIN    a non-high-priority message is queued, or a read would
 *               return at once (hang-up: 0; read error: the error);
 *     POLLRDNORM / POLLRDBAND / POLLPRI / POLLMSG  as read_events;
 *     POLLOUT, POLLWRNORM  a band 0 write would not block on flow control,
 *               or would fail at once (write error);
 *     POLLWRBAND  a band > 0 that was written before is not full.
 */
short ust_sd_pollmask(struct stdata *sd, short want)
{
    uint_t fl;
    short ev = 0;

    UST_ASSERT_HELD(&sd->sd_lock);
    fl = sd->sd_flag;
    if (fl & (STRCLOSE | STPLEX))
        return POLLNVAL;
    if (fl & (STRDERR | STWRERR))
        ev |= POLLERR;
    /* A FIFO: hung up once a writer has been and none is left (Linux: after
     * a writer has come and gone), in error while no reader has it open. */
    int fhup = (fl & STRFIFO) && ust_fifo_hup(sd);
    int fnord = (fl & STRFIFO) && ust_fifo_noreader(sd);
    if (fnord)
        ev |= POLLERR;
    if ((fl & STRHUP) || fhup)
        ev |= POLLHUP;
    if (want & POLL_READ) {
        ev |= read_events(sd);
        if ((fl & (STRHUP | STRDERR)) || fhup)
            ev |= POLLIN | POLLRDNORM;
    }
    if ((want & POLL_WRITE) && !(fl & STRHUP) && !fhup) {
        if ((fl & STWRERR) || fnord) {
            ev |= POLLOUT | POLLWRNORM;
        } else {
            int band0, anyband, nband;
            write_peek(sd, &band0, &anyband, &nband);
            if (band0)
                ev |= POLLOUT | POLLWRNORM;
            if (anyband)
                ev |= POLLWRBAND;
        }
    }
    return ev & (want | POLL_ALWAYS);
}

/* bcanputnext(sd_wq, band) with a claim on the head's write queue, as a write
 * would ask: records a waiting writer (QWANTW/QB_WANTW) when full. */
static int arm_band(struct stdata *sd, unsigned char band)
{
    queue_t *wq = sd->sd_wq;
    int ok;

    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    ok = bcanputnext(wq, band);
    ust_qrelease(wq);
    /* A pipe end split across processes: a write waits for room in the ring
     * (sd_write.c sd_send_data), which enables the head's write queue when
     * it comes (the relief, as a back-enable). */
    if (ok && __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE) != NULL && ust_sd_procs() != NULL)
        ok = ust_sd_procs()->xpipe_room(sd);
    if (!ok)
        ust_sd_wfull_note(sd, band); /* its relief raises S_OUTPUT/S_WRBAND */
    return ok;
}

/*
 * ust_sd_wready_after_write -- after a write, putmsg or putpmsg has sent:
 *   if band 0 below the head is now full, withdraw writable readiness, so
 *   that POLLOUT on the descriptor follows flow control for blocking writers
 *   too (a non-blocking one withdraws it at EAGAIN as well).  The full queue
 *   is marked wanted (bcanputnext), so its drain back-enables the head and
 *   the relief shows POLLOUT again (sd_wrelief_locked).  Withdrawn first,
 *   then looked at again under sd_lock, which the relief takes too: a relief
 *   cannot slip in between (as poll_arm).
 *   Context: the caller's call holds sd (sd_calls); no lock held.  Costs the
 *   lock-free flow peek of bcanputnext unless band 0 is full.
 */
void ust_sd_wready_after_write(struct stdata *sd)
{
    if (arm_band(sd, 0))
        return;
    ust_lock(&sd->sd_lock);
    if (!(sd->sd_flag & (STRCLOSE | STPLEX | STRHUP | STWRERR))) {
        ust_sd_ready_write(sd, 0);
        if (arm_band(sd, 0))
            ust_sd_ready_write(sd, 1);
    }
    ust_unlock(&sd->sd_lock);
}

/* The kernel events to wait for on a stream descriptor for `want`. */
static short kernel_events(short want)
{
    short k = 0;

    if (want & POLL_DATA)
        k |= POLLIN;
    if (want & POLLPRI)
        k |= POLLIN; /* the priority token is a record too (sd_fd.c) */
    if (want & POLL_WRITE)
        k |= POLLOUT;
    return k;
}

/*
 * poll_arm -- about to sleep in poll(2) for `want` on sd's descriptor:
 * settle its readiness tokens and arm flow control (see the principles of
 * operation), then return ust_sd_pollmask(sd, want) as it is now.
 *   Context: sd_lock held.  *kev gets the kernel events to sleep on.  A token
 *   kept for what others may wait for but `want` does not ask about (band 0
 *   data while we want POLLRDBAND; the priority token, which the kernel
 *   shows as POLLIN too; writability of band 0 while we want POLLWRBAND)
 *   would wake us at once: its kernel event is left out of *kev and *vague
 *   is set, so that the caller sleeps in short steps instead.
 */
static short poll_arm(struct stdata *sd, short want, short *kev, int *vague)
{
    short all, m;

    UST_ASSERT_HELD(&sd->sd_lock);
    *kev = kernel_events(want);
    all = ust_sd_pollmask(sd, POLL_READ | POLL_WRITE);
    if (all & (POLLNVAL | POLLHUP))
        return ust_sd_pollmask(sd, want);
    if (want & POLL_READ) {
        int lost = 0;
        if (!(all & POLL_DATA))
            ust_sd_ready_read(sd, 0);
        else if ((want & POLL_DATA) && !(all & want & POLL_DATA))
            lost = 1;
        if (!(all & POLLPRI))
            ust_sd_ready_pri(sd, 0);
        else if ((want & POLL_DATA) && !(want & POLLPRI))
            lost = 1;
        if ((want & POLLPRI) && !(want & POLL_DATA) && (all & POLL_DATA))
            lost = 1; /* the readable token shows as POLLIN, as the priority one */
        if (lost) {
            *kev &= ~POLLIN;
            *vague = 1;
        }
    }
    if ((want & POLL_WRITE) && !(all & POLLERR)) {
        int band0, anyband, nband;
        write_peek(sd, &band0, &anyband, &nband);
        ust_sd_ready_write(sd, 0);
        band0 = arm_band(sd, 0);
        if (want & POLLWRBAND)
            for (int b = 1; b <= nband; b++)
                arm_band(sd, (unsigned char)b);
        if (band0) {
            ust_sd_ready_write(sd, 1);
            if (!(want & (POLLOUT | POLLWRNORM))) {
                *kev &= ~POLLOUT;
                *vague = 1;
            }
        }
    }
    m = ust_sd_pollmask(sd, want);
    if (m & POLL_DATA)
        ust_sd_ready_read(sd, 1); /* arrived while we settled: show it again */
    if (m & POLLPRI)
        ust_sd_ready_pri(sd, 1);
    return m;
}

/* ------------------------------------------------------------------------ */
/* strm_poll                                                                */
/* ------------------------------------------------------------------------ */
/* One pass over fds: the events of every stream descriptor (arming them
 * first if arm is set) into revents, POLLNVAL for descriptors not open,
 * and kfds filled for poll(2); ord[i] tells whether fds[i] is an ordinary
 * descriptor (its revents are left alone).  Returns the number of stream or
 * invalid entries with events; *nord the number of ordinary descriptors;
 * *vague as poll_arm. */
static int scan(struct pollfd *fds, nfds_t nfds, struct pollfd *kfds, char *ord, int arm, int *nord,
                int *vague)
{
    int n = 0;

    *nord = 0;
    for (nfds_t i = 0; i < nfds; i++) {
        struct pollfd *p = &fds[i];
        struct stdata *sd;
        int err;

        kfds[i].fd = -1;
        kfds[i].events = 0;
        kfds[i].revents = 0;
        ord[i] = 0;
        if (p->fd < 0) {
            p->revents = 0;
            continue;
        }
        sd = ust_sd_get_checked(p->fd, &err);
        /* A pipe end polled here: once split, this process takes what
         * arrives for it (src/procs, "Who takes"). */
        if (sd != NULL && sd->sd_pipeq != NULL && !__atomic_load_n(&sd->sd_xused, __ATOMIC_RELAXED)) {
            __atomic_store_n(&sd->sd_xused, 1, __ATOMIC_SEQ_CST); /* Dekker: the split */
            if (__atomic_load_n(&sd->sd_xend, __ATOMIC_SEQ_CST) != NULL)
                ust_sd_procs()->xpipe_touch(sd);
        }
        if (sd == NULL) {
            if (err == ENOSTR) {
                kfds[i].fd = p->fd;
                kfds[i].events = p->events;
                ord[i] = 1;
                (*nord)++;
            } else {
                /* EIO: a stream inherited through fork(), the parent's */
                p->revents = err == EIO ? POLLERR : POLLNVAL;
                n++;
            }
            continue;
        }
        short kev = kernel_events(p->events);
        ust_lock(&sd->sd_lock);
        ust_sd_chan_watched(sd); /* an event loop: its tokens are never owed */
        ust_sd_tok_exact_now(sd, 1); /* nor a lazy pipe's (sd_tokpay.c) */
        p->revents = ust_sd_pollmask(sd, p->events);
        if (arm && p->revents == 0)
            p->revents = poll_arm(sd, p->events, &kev, vague);
        ust_unlock(&sd->sd_lock);
        ust_sd_put(sd);
        kfds[i].fd = p->fd;
        kfds[i].events = kev;
        if (p->revents != 0)
            n++;
    }
    return n;
}

/* Milliseconds left until deadline (CLOCK_MONOTONIC ns), rounded up; -1 when
 * timeout is negative (no deadline). */
static int ms_left(long long deadline, int timeout)
{
    long long left;

    if (timeout < 0)
        return -1;
    left = deadline - ust_now_ns();
    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/*
 * strm_poll -- poll(2) over stream and ordinary descriptors together.
 *   Context: blocking up to timeout ms (negative: no limit, 0: none).
 *   Returns the number of entries with revents set, 0 on timeout, or -1 with
 *   errno: EFAULT (fds not readable, or revents not writable), EINVAL (nfds above
 *   RLIMIT_NOFILE), ENOMEM, EINTR (a signal arrived while waiting).
 *   Negative descriptors are ignored (revents 0); descriptors not open get
 *   POLLNVAL.
 */
static int strm_poll_call(struct pollfd *ufds, nfds_t nfds, int timeout)
{
    struct pollfd stackfds[POLL_STACK], *kfds = stackfds;
    struct pollfd stackcopy[POLL_STACK], *fds = stackcopy; /* the caller's array, copied in */
    char stackord[POLL_STACK], *ord = stackord;
    long long deadline = 0;
    struct rlimit rl;
    int n, ret;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && nfds > rl.rlim_cur) {
        errno = EINVAL;
        return -1;
    }
    if (nfds > POLL_STACK) {
        kfds = calloc(nfds, 2 * sizeof(*kfds) + 1);
        if (kfds == NULL) {
            errno = ENOMEM;
            return -1;
        }
        fds = kfds + nfds;
        ord = (char *)(fds + nfds);
    }
    if (ust_copyin(ufds, fds, nfds * sizeof(*fds)) != 0) {
        if (kfds != stackfds)
            free(kfds);
        errno = EFAULT;
        return -1;
    }
    if (timeout > 0)
        deadline = ust_now_ns() + timeout * 1000000LL;
    for (nfds_t i = 0; i < nfds; i++)
        fds[i].revents = 0;
    for (;;) {
        int nord, vague = 0, wait, nready, r;

        nready = scan(fds, nfds, kfds, ord, 0, &nord, &vague);
        wait = (nready > 0 || timeout == 0) ? 0 : ms_left(deadline, timeout);
        if (wait != 0) {
            nready = scan(fds, nfds, kfds, ord, 1, &nord, &vague);
            if (nready > 0)
                wait = 0;
            else if (vague && (wait < 0 || wait > POLL_STEP_MS))
                wait = POLL_STEP_MS;
        }
        if (wait == 0 && nord == 0) {
            ret = nready;
            break;
        }
        if (wait != 0)
            ust_sched_handoff(); /* what this call enabled must not wait for it */
        r = poll(kfds, nfds, wait);
        if (r < 0) {
            ret = -1;
            break;
        }
        n = 0;
        for (nfds_t i = 0; i < nfds; i++) {
            if (ord[i]) {
                fds[i].revents = kfds[i].revents;
                if (fds[i].revents != 0)
                    n++;
            }
        }
        if (wait == 0) {
            ret = nready + n;
            break;
        }
        nready = scan(fds, nfds, kfds, ord, 0, &nord, &vague);
        if (nready + n > 0 || ms_left(deadline, timeout) == 0) {
            ret = nready + n;
            break;
        }
    }
    for (nfds_t i = 0; i < nfds && ret >= 0; i++) /* poll(2) writes back revents only */
        if (ust_copyout(&fds[i].revents, &ufds[i].revents, sizeof(fds[i].revents)) != 0) {
            errno = EFAULT;
            ret = -1;
        }
    if (kfds != stackfds)
        free(kfds);
    return ret;
}

int strm_poll(struct pollfd *ufds, nfds_t nfds, int timeout)
{
    ust_call_begin();
    int r = strm_poll_call(ufds, nfds, timeout);
    ust_call_end();
    return r;
}

/* ------------------------------------------------------------------------ */
/* I_SETSIG / I_GETSIG and signal delivery                                  */
/* ------------------------------------------------------------------------ */
/* The union of the registered events; sd_lock held. */
static void sigflags_update(struct stdata *sd)
{
    int all = 0;

    UST_ASSERT_HELD(&sd->sd_lock);
    for (struct ust_sigreg *r = sd->sd_siglist; r != NULL; r = r->next)
        all |= r->events;
    __atomic_store_n(&sd->sd_sigflags, all, __ATOMIC_RELAXED);
}

/*
 * ust_sd_setsig -- I_SETSIG: register the calling process for events (S_*),
 * change its registration, or (events 0) remove it.
 *   Context: any thread; takes sd_lock; may allocate.
 *   Returns 0, or EINVAL (bits outside S_ALL, S_BANDURG without S_RDBAND,
 *   events 0 and the process is not registered), EAGAIN (no memory for the
 *   registration, as streamio(7) specifies).
 */
int ust_sd_setsig(struct stdata *sd, int events)
{
    struct ust_sigreg *nr = NULL, **pp;
    pid_t pid = getpid();
    int err = 0;

    if ((events & ~S_ALL) != 0 || ((events & S_BANDURG) && !(events & S_RDBAND)))
        return EINVAL;
    if (events != 0 && (nr = malloc(sizeof(*nr))) == NULL)
        return EAGAIN;
    ust_lock(&sd->sd_lock);
    for (pp = &sd->sd_siglist; *pp != NULL && (*pp)->pid != pid; pp = &(*pp)->next)
        ;
    if (events == 0) {
        if (*pp == NULL) {
            err = EINVAL;
        } else {
            struct ust_sigreg *r = *pp;
            *pp = r->next;
            free(r);
        }
    } else if (*pp != NULL) {
        (*pp)->events = events;
    } else {
        nr->next = NULL;
        nr->pid = pid;
        nr->events = events;
        *pp = nr;
        nr = NULL;
    }
    sigflags_update(sd);
    if (sd->sd_siglist != NULL)
        ust_sd_tok_exact_now(sd, 1); /* signals follow the queue: no token owed */
    ust_unlock(&sd->sd_lock);
    free(nr);
    return err;
}

/*
 * ust_sd_getsig -- I_GETSIG: the events the calling process registered.
 *   Context: any thread; takes sd_lock.
 *   Returns 0 with *events set, or EINVAL (not registered).
 */
int ust_sd_getsig(struct stdata *sd, int *events)
{
    pid_t pid = getpid();
    int err = EINVAL;

    ust_lock(&sd->sd_lock);
    for (struct ust_sigreg *r = sd->sd_siglist; r != NULL; r = r->next) {
        if (r->pid == pid) {
            *events = r->events;
            err = 0;
            break;
        }
    }
    ust_unlock(&sd->sd_lock);
    return err;
}

/*
 * ust_sd_sendsig -- deliver the signals for events (S_*) that just happened.
 *   Context: sd_lock held (the head's put procedure, the back-enable hook).
 *   Sending is kill(2), which never blocks; to our own process the signal may
 *   be handled on this very thread before kill returns, so a handler must not
 *   call into the stream (strm_* functions are not async-signal-safe anyway).
 *   For each registration whose events meet `events`: SIGURG for S_RDBAND
 *   when it asked for S_BANDURG and band > 0; for S_MSG the signal of the
 *   M_SIG/M_PCSIG (signo, SIGPOLL if 0); SIGPOLL for the rest.  A process
 *   that no longer exists loses its registration.
 */
void ust_sd_sendsig(struct stdata *sd, int events, unsigned char band, int signo)
{
    struct ust_sigreg **pp = &sd->sd_siglist;
    int saved_errno = errno;

    UST_ASSERT_HELD(&sd->sd_lock);
    if ((sd->sd_sigflags & events) == 0)
        return;
    while (*pp != NULL) {
        struct ust_sigreg *r = *pp;
        int ev = r->events & events & ~S_BANDURG;
        int sigs[3], nsig = 0, gone = 0;

        if (ev & S_MSG) {
            sigs[nsig++] = signo > 0 ? signo : SIGPOLL;
            ev &= ~S_MSG;
        }
        if ((ev & S_RDBAND) && (r->events & S_BANDURG) && band > 0) {
            sigs[nsig++] = SIGURG;
            ev &= ~S_RDBAND;
        }
        if (ev != 0 && !(nsig > 0 && sigs[0] == SIGPOLL))
            sigs[nsig++] = SIGPOLL;
        for (int i = 0; i < nsig; i++)
            if (kill(r->pid, sigs[i]) != 0 && errno == ESRCH)
                gone = 1;
        if (gone) {
            *pp = r->next;
            free(r);
        } else {
            pp = &r->next;
        }
    }
    sigflags_update(sd);
    errno = saved_errno;
}
