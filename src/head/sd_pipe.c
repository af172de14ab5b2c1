/* SPDX-License-Identifier: MIT */
/*
 * sd_pipe.c -- STREAMS-based pipes: strm_pipe, the close of a pipe end,
 * and the delivery of I_SENDFD's message (sd_passfd.c); fattach is sd_fattach.c.
 *
 * Principles of operation
 *   A pipe is two stream heads whose write sides are cross-connected (the
 *   "twist").  At the bottom of each end sits a "pipe" queue pair standing in
 *   for a driver (as the pipe driver of Linux Fast-STREAMS does); the twist
 *   joins the two: each one's write queue has as q_next the other one's read
 *   queue.  With no module pushed:
 *       sd0 head wq -> pipe0 wq -> pipe1 rq -> sd1 head rq
 *       sd1 head wq -> pipe1 wq -> pipe0 rq -> sd0 head rq
 *   The pipe pairs have their procedures off, so putnext passes straight
 *   through them and flow control looks through them to the far end's head
 *   (or its nearest module with a service procedure); back-enabling crosses
 *   them the same way (backq follows the twist).  Modules pushed on an end go
 *   between its head and its pipe pair.  Plumbing of one end (ust_qinsert,
 *   ust_qunlink) rewrites only that end's own queues -- at most the read
 *   queue of its pipe pair -- so the two ends may push, pop and close at the
 *   same time under their own sd_plumb locks: the two links of the twist
 *   (pipe0 wq -> pipe1 rq, pipe1 wq -> pipe0 rq) are written only here, when
 *   the pipe is made and when it is broken.  The pipe pairs are not modules:
 *   I_LOOK/I_LIST do not show them, and sd_pushcnt does not count them.
 *
 *   Each end lives as long as its own references (descriptors, fattach
 *   names, descriptors in flight in an M_PASSFP) -- the peer holds none, so
 *   the close of one end always hangs up the other.  Each end has sd_peer
 *   pointing at the other while both are connected.  When an end's last
 *   reference goes, ust_sd_teardown pops its modules and calls
 *   ust_pipe_teardown, which "breaks" the pair: under pipe_lock it clears
 *   both sd_peer pointers and files a break record naming the peer, then
 *   sends M_HANGUP across (the peer then reads 0 after draining and fails
 *   writes with EPIPE), cuts both links of the twist, and withdraws the
 *   record.  If both ends are torn down at once, the one that takes pipe_lock
 *   first breaks the pair for both; the other finds its sd_peer already
 *   cleared and waits until no break record names it, i.e. until the breaker
 *   no longer sends through or writes into its queues.  Each end then waits
 *   out the claims of threads still passing through its pipe pair, and frees
 *   it; so an end is freed only when nothing points into it.
 *
 *   I_SENDFD (sd_passfd.c) hands its M_PASSFP to ust_pipe_put_peer, which
 *   puts it straight on the peer head's read queue.
 *
 * Locking
 *   pipe_lock guards sd_peer of every pipe end and the `breaking` list;
 *   pipe_cv (with pipe_lock) is signalled when a break finishes.  pipe_lock is
 *   a leaf: nothing else is taken while it is held, except a claim (an atomic
 *   increment) on a peer's read queue.  sd_plumb of the end being torn down is held by the
 *   caller of ust_pipe_teardown (and kept: the peer's sd_plumb is never
 *   needed, so two sd_plumb locks are never held together).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/strlog.h>
#include <time.h>
#include <unistd.h>

#include "sthead.h"

/* A pair being broken: `victim` is the peer end the breaker still works on. */
struct pipe_break {
    struct pipe_break *next;
    struct stdata *victim;
};

static ust_lock_t pipe_lock = UST_LOCK_INIT;            /* see Locking */
static ust_cond_t pipe_cv = UST_COND_INIT; /* pipe_lock: a break ended */
static struct pipe_break *breaking;                     /* pipe_lock */

/* ------------------------------------------------------------------------ */
/* The pipe pair at the bottom of each end                                  */
/* ------------------------------------------------------------------------ */
/* Procedures stay off (QPROCSOFF) while both ends are in this process:
 * messages pass through without a call.  When the pipe is split across
 * processes (ust_pipe_split_all, before fork) they are switched on, and are
 * the bottom of each end over the shared-memory channel (sd_xpipe.c). */

static struct module_info pipe_minfo = {
    .mi_idnum = 5305,
    .mi_idname = "pipe",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = UST_STRHIGH,
    .mi_lowat = UST_STRLOW,
};

/* The pair's procedures run only once the end is split (their qprocson is
 * src/procs' split), so the table of hooks is set when they are called. */
static int pipe_rput(queue_t *q, mblk_t *mp)
{
    return ust_sd_procs()->xpipe_rput(q, mp);
}
static int pipe_rsrv(queue_t *q)
{
    return ust_sd_procs()->xpipe_rsrv(q);
}
static int pipe_wput(queue_t *q, mblk_t *mp)
{
    return ust_sd_procs()->xpipe_wput(q, mp);
}
static int pipe_wsrv(queue_t *q)
{
    return ust_sd_procs()->xpipe_wsrv(q);
}
static struct qinit pipe_rinit = {
    .qi_putp = pipe_rput, .qi_srvp = pipe_rsrv, .qi_minfo = &pipe_minfo};
static struct qinit pipe_winit = {
    .qi_putp = pipe_wput, .qi_srvp = pipe_wsrv, .qi_minfo = &pipe_minfo};
static struct streamtab pipe_tab = {.st_rdinit = &pipe_rinit, .st_wrinit = &pipe_winit};

static void qlink(queue_t *q, queue_t *next)
{
    __atomic_store_n(&q->q_next, next, __ATOMIC_SEQ_CST);
    ust_plumb_changed(); /* paths cached for deposits (sd_arrive.c) */
}

void ust_pipe_qlink(queue_t *q, queue_t *next)
{
    qlink(q, next);
}

/* ------------------------------------------------------------------------ */
/* Stream references that are not descriptors                               */
/* ------------------------------------------------------------------------ */
/* Take a reference on sd unless it has none left (it is being torn down).
 * Returns 1 if taken. */
int ust_sd_hold_live(struct stdata *sd)
{
    int n = atomic_load(&sd->sd_refs);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&sd->sd_refs, &n, n + 1))
            return 1;
    }
    return 0;
}

static void *rele_thread(void *arg)
{
    ust_sd_teardown(arg);
    ust_work_end(); /* ustreams_quiesce waited for this teardown */
    return NULL;
}

/*
 * ust_sd_rele_deferred -- drop a reference taken by ust_sd_hold_live from a context
 *   that may hold locks (an esballoc free routine runs wherever the message
 *   is freed).  The last reference tears the stream down on a thread of its
 *   own, so that teardown never nests inside the caller; inline only if no
 *   thread can be made.
 */
void ust_sd_rele_deferred(struct stdata *sd)
{
    pthread_attr_t attr;
    pthread_t t;
    int rc;

    if (atomic_fetch_sub(&sd->sd_refs, 1) != 1)
        return;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    ust_work_begin();
    rc = ust_thread_create(&t, &attr, rele_thread, sd);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        ust_work_end();
        ust_sd_teardown(sd);
    }
}

/* ------------------------------------------------------------------------ */
/* strm_pipe                                                                */
/* ------------------------------------------------------------------------ */
/* Set up one end: pipe flags, SNDPIPE, credentials, its peer, the water
 * marks of its head read queue (high first: low stays below it at each
 * step). */
static void pipe_end_init(struct stdata *sd, struct stdata *peer, const cred_t *cr)
{
    (void)strqset(sd->sd_rq, QHIWAT, 0, UST_PIPE_HIWAT);
    (void)strqset(sd->sd_rq, QLOWAT, 0, UST_PIPE_LOWAT);
    ust_lock(&sd->sd_lock);
    sd->sd_flag |= STRPIPE;
    sd->sd_wropt |= SNDPIPE;
    sd->sd_oflag = O_RDWR;
    sd->sd_cred = *cr;
    strcpy(sd->sd_name, "pipe");
    ust_unlock(&sd->sd_lock);
    ust_lock(&pipe_lock);
    sd->sd_peer = peer;
    ust_unlock(&pipe_lock);
}

/* The list of connected pipe ends, for ust_pipe_split_all (pipe_lock). */
static struct stdata *connected;

static void list_add(struct stdata *sd)
{
    UST_ASSERT_HELD(&pipe_lock);
    sd->sd_xlnext = connected;
    if (connected != NULL)
        connected->sd_xlprev = &sd->sd_xlnext;
    connected = sd;
    sd->sd_xlprev = &connected;
}

static void list_del(struct stdata *sd)
{
    UST_ASSERT_HELD(&pipe_lock);
    if (sd->sd_xlprev == NULL)
        return;
    *sd->sd_xlprev = sd->sd_xlnext;
    if (sd->sd_xlnext != NULL)
        sd->sd_xlnext->sd_xlprev = sd->sd_xlprev;
    sd->sd_xlnext = NULL;
    sd->sd_xlprev = NULL;
}

/* Undo a pipe that never got (or lost) its descriptors: nobody else can
 * reach it, so unlink and free without ceremony. */
static void pipe_unmake(struct stdata *sd[2], queue_t *drv[2])
{
    ust_lock(&pipe_lock);
    sd[0]->sd_peer = sd[1]->sd_peer = NULL;
    list_del(sd[0]);
    ust_unlock(&pipe_lock);
    for (int i = 0; i < 2; i++) {
        qlink(sd[i]->sd_wq, NULL);
        if (drv[i] != NULL) {
            qlink(drv[i], NULL);
            qlink(WR(drv[i]), NULL);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (drv[i] != NULL)
            ust_qfree(drv[i]);
        if (sd[i] != NULL)
            ust_sd_free(sd[i]);
    }
}

/*
 * strm_pipe -- pipe(2) for STREAMS: two cross-connected stream heads.
 *   Context: any thread; allocates.
 *   Both descriptors are open for reading and writing (full duplex); SNDPIPE
 *   is on (a write after the other end closed fails with EPIPE and raises
 *   SIGPIPE); modules may be pushed on either end; putmsg/getmsg keep record
 *   boundaries and bands.  The descriptors are not close-on-exec.
 *   Returns 0, or -1 with errno: EFAULT (fds NULL, unmapped or not
 *   writable; nothing is created), EMFILE / ENFILE (no descriptor; nothing
 *   is left open), ENOMEM.
 */
static int strm_pipe_call(int fds[2])
{
    struct stdata *sd[2] = {NULL, NULL};
    queue_t *drv[2] = {NULL, NULL};
    int tmp[2], err;
    cred_t cr;

    ust_sd_reap_orphans();
    ust_sd_publish(); /* the process's first stream: publish it for the tools */
    /* fds must be writable: probe it (nothing is created for a bad one). */
    if (ust_copyin_rw(fds, tmp, sizeof(tmp)) != 0) {
        errno = EFAULT;
        return -1;
    }
    ust_ucopy_check(); /* a SIGSEGV handler installed since goes behind ours */
    for (int i = 0; i < 2; i++) {
        sd[i] = ust_sd_alloc();
        drv[i] = ust_qalloc(&pipe_tab, D_MP, NULL); /* procedures stay off */
        if (sd[i] == NULL || drv[i] == NULL) {
            for (int j = 0; j <= i; j++) {
                if (drv[j] != NULL)
                    ust_qfree(drv[j]);
                if (sd[j] != NULL)
                    ust_sd_free(sd[j]);
            }
            errno = ENOMEM;
            return -1;
        }
    }
    ust_sd_cred(&cr);
    pipe_end_init(sd[0], sd[1], &cr);
    pipe_end_init(sd[1], sd[0], &cr);
    for (int i = 0; i < 2; i++) {
        sd[i]->sd_pipeq = drv[i];
        qlink(drv[i], sd[i]->sd_rq);     /* pipe rq -> own head */
        qlink(WR(drv[i]), drv[!i]);      /* the twist */
        qlink(sd[i]->sd_wq, WR(drv[i])); /* own head -> pipe wq */
    }
    ust_lock(&pipe_lock);
    list_add(sd[0]); /* one end of each pair is listed */
    ust_unlock(&pipe_lock);

    tmp[0] = ust_sd_attach_fd(sd[0]);
    if (tmp[0] < 0) {
        err = -tmp[0];
        pipe_unmake(sd, drv);
        errno = err;
        return -1;
    }
    tmp[1] = ust_sd_attach_fd(sd[1]);
    if (tmp[1] < 0) {
        err = -tmp[1];
        if (ust_sd_detach_fd(tmp[0], sd[0]) == 0)
            pipe_unmake(sd, drv);
        else /* fd0 was taken over meanwhile (fattach, dup): end 1 goes alone */
            ust_sd_teardown(sd[1]);
        errno = err;
        return -1;
    }
    fcntl(tmp[0], F_SETFD, 0);
    fcntl(tmp[1], F_SETFD, 0);
    ust_sd_acc_set(tmp[0], 0); /* both ends read and write (sd_access.c) */
    ust_sd_acc_set(tmp[1], 0);
    ust_sd_register(sd[0]);
    ust_sd_register(sd[1]);
    if (ust_copyout(tmp, fds, sizeof(tmp)) != 0) { /* unmapped since the probe */
        strm_close(tmp[0]);
        strm_close(tmp[1]);
        errno = EFAULT;
        return -1;
    }
    return 0;
}

int strm_pipe(int fds[2])
{
    ust_call_begin();
    int r = strm_pipe_call(fds);
    ust_call_end();
    return r;
}

/* ------------------------------------------------------------------------ */
/* Close of one end                                                         */
/* ------------------------------------------------------------------------ */
/* Send M_HANGUP down sd's write side, across the twist to the peer's head.
 * Retries while out of memory: the peer must learn of the close. */
static void pipe_hangup(struct stdata *sd)
{
    queue_t *wq = sd->sd_wq;

    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    while (!putnextctl(wq, M_HANGUP)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ust_qrelease(wq);
}

static int being_broken(struct stdata *sd)
{
    UST_ASSERT_HELD(&pipe_lock);
    for (struct pipe_break *b = breaking; b != NULL; b = b->next)
        if (b->victim == sd)
            return 1;
    return 0;
}

/*
 * ust_pipe_teardown -- unlink a closing pipe end from its peer and free its
 *   pipe pair.
 *   Context: ust_sd_teardown, blocking; sd_plumb of sd held; every module of
 *   sd popped; no other lock held.
 *   If the peer is still connected: the pair is broken (both sd_peer
 *   cleared), M_HANGUP goes to the peer's head, and both links of the twist
 *   are cut.  If the peer broke the pair first, this waits until it is done
 *   with our queues.  Then no thread is left inside our pipe pair, which is
 *   freed; sd_wq->q_next is NULL.  Threads still inside our head queues are
 *   waited out by ust_sd_free (qprocsoff); messages queued at our head are
 *   freed with it (an unreceived M_PASSFP releases its descriptor).
 */
void ust_pipe_teardown(struct stdata *sd)
{
    queue_t *dw = ust_qnext(sd->sd_wq); /* our pipe pair's write queue */
    struct pipe_break me;
    struct stdata *p;

    ust_lock(&pipe_lock);
    list_del(sd);
    p = sd->sd_peer;
    if (p != NULL) {
        list_del(p);
        sd->sd_peer = NULL;
        p->sd_peer = NULL;
        me.victim = p;
        me.next = breaking;
        breaking = &me;
    }
    ust_unlock(&pipe_lock);

    if (p != NULL) {
        pipe_hangup(sd);
        if (dw != NULL) {
            queue_t *pr = ust_qnext(dw); /* the peer's pipe read queue */
            if (pr != NULL && ust_qnext(OTHERQ(pr)) == OTHERQ(dw))
                qlink(OTHERQ(pr), NULL); /* nothing enters us any more */
            qlink(dw, NULL);             /* nor leaves us for the peer */
        }
        ust_lock(&pipe_lock);
        for (struct pipe_break **bp = &breaking; *bp != NULL; bp = &(*bp)->next) {
            if (*bp == &me) {
                *bp = me.next;
                break;
            }
        }
        ust_cond_broadcast(&pipe_cv);
        ust_unlock(&pipe_lock);
    } else {
        /* The peer broke the pair (or it was never made): once no record
         * names us, the peer has cut both links and sends no more. */
        ust_lock(&pipe_lock);
        while (being_broken(sd))
            ust_cond_wait(&pipe_cv, &pipe_lock);
        ust_unlock(&pipe_lock);
    }
    if (sd->sd_xend != NULL)
        ust_sd_procs()->xpipe_end_close(sd); /* split: the channel's end goes first */
    qlink(sd->sd_wq, NULL);
    if (dw != NULL) {
        queue_t *dr = OTHERQ(dw);
        /* Writers of the peer (and its hang-up) that entered before the cut
         * are waited out, then the pair goes. */
        ust_qdrain_claims(dr);
        ust_qdrain_claims(dw);
        qlink(dw, NULL);
        qlink(dr, NULL);
        ust_qfree(dr);
    }
}

/* ------------------------------------------------------------------------ */
/* Pipes split across processes (sd_xpipe.c)                                */
/* ------------------------------------------------------------------------ */
/* Pipes a fork could not split (out of descriptors, memory), since the
 * process started: ust_pipe_split_failures, shown by strinfo -P. */
static atomic_long split_failures;

long ust_pipe_split_failures(void)
{
    return atomic_load_explicit(&split_failures, memory_order_relaxed);
}

/* Doorbells lost and made good by the look again (ust_pipe_bell_rescued). */
static atomic_long bell_rescued;

long ust_pipe_bell_rescued(void)
{
    return atomic_load_explicit(&bell_rescued, memory_order_relaxed);
}

void ust_pipe_bell_rescue_count(void)
{
    atomic_fetch_add_explicit(&bell_rescued, 1, memory_order_relaxed);
}

void ust_pipe_split_all(void)
{
    struct stdata *failed = NULL; /* split refused: relisted at the end */
    int nfailed = 0, lasterr = 0;    /* splits that failed (not the attached) */

    for (;;) {
        struct pipe_break rec[2];
        struct stdata *sd[2];

        ust_lock(&pipe_lock);
        sd[0] = connected;
        if (sd[0] == NULL) {
            ust_unlock(&pipe_lock);
            break;
        }
        list_del(sd[0]);
        sd[1] = sd[0]->sd_peer;
        if (sd[1] == NULL) { /* being broken: its close goes on alone */
            ust_unlock(&pipe_lock);
            continue;
        }
        /* Unlinked as a break does it: a close of either end now waits for
         * the records, and I_SENDFD finds no peer. */
        sd[0]->sd_peer = sd[1]->sd_peer = NULL;
        for (int i = 0; i < 2; i++) {
            rec[i].victim = sd[i];
            rec[i].next = breaking;
            breaking = &rec[i];
        }
        ust_unlock(&pipe_lock);

        /* A pipe with an end attached to a name is a server's: it stays in
         * this process whole (connld and the relays use it as an in-process
         * pipe); a fork child finds both its ends detached. */
        int attached = 0;
        for (int i = 0; i < 2; i++) {
            ust_lock(&sd[i]->sd_lock);
            attached |= (sd[i]->sd_flag & STRATTACH) != 0;
            ust_unlock(&sd[i]->sd_lock);
        }
        const struct ust_procs_ops *procs = ust_sd_procs();
        int err = attached ? EBUSY : procs ? procs->xpipe_split(sd) : ENOSYS;
        if (err != 0 && !attached) {
            nfailed++;
            lasterr = err;
        }

        ust_lock(&pipe_lock);
        for (int i = 0; i < 2; i++)
            for (struct pipe_break **bp = &breaking; *bp != NULL; bp = &(*bp)->next)
                if (*bp == &rec[i]) {
                    *bp = rec[i].next;
                    break;
                }
        if (err != 0) { /* stays an in-process pipe */
            sd[0]->sd_peer = sd[1];
            sd[1]->sd_peer = sd[0];
            sd[0]->sd_xlnext = failed;
            failed = sd[0];
        }
        ust_cond_broadcast(&pipe_cv);
        ust_unlock(&pipe_lock);
    }
    ust_lock(&pipe_lock);
    while (failed != NULL) {
        struct stdata *n = failed->sd_xlnext;
        list_add(failed);
        failed = n;
    }
    ust_unlock(&pipe_lock);
    /* Never silent (docs/STREAMHEAD.md "A pipe that cannot be split"): the
     * counter (inherited by the child) and one log line per fork; the
     * prepare hook runs before any lock is quiesced, so strlog may run. */
    if (nfailed > 0) {
        atomic_fetch_add_explicit(&split_failures, nfailed, memory_order_relaxed);
        strlog(0, 0, 0, SL_ERROR | SL_CONSOLE,
               "fork: %d pipe(s) could not be split (%s): their ends are EIO in the child, "
               "in-process pipes in the parent",
               nfailed, strerror(lasterr));
    }
}

struct stdata *ust_pipe_end_new(const cred_t *cr, queue_t **drv)
{
    struct stdata *sd = ust_sd_alloc();
    queue_t *q = ust_qalloc(&pipe_tab, D_MP, NULL);
    if (sd == NULL || q == NULL) {
        if (q != NULL)
            ust_qfree(q);
        ust_sd_free(sd);
        return NULL;
    }
    pipe_end_init(sd, NULL, cr);
    sd->sd_pipeq = q;
    qlink(q, sd->sd_rq);
    qlink(sd->sd_wq, WR(q));
    *drv = q;
    return sd;
}

/* ------------------------------------------------------------------------ */
/* I_SENDFD's delivery (sd_passfd.c)                                        */
/* ------------------------------------------------------------------------ */
/*
 * ust_pipe_put_peer -- put mp on the read queue of sd's peer head, past any
 *   modules (I_SENDFD).  Context: no lock held.
 *   Returns 0, or ENXIO (no peer) / EAGAIN (its read queue is full), mp freed.
 */
int ust_pipe_put_peer(struct stdata *sd, mblk_t *mp)
{
    int err = 0;
    ust_lock(&pipe_lock);
    struct stdata *p = sd->sd_peer;
    queue_t *prq = p != NULL ? p->sd_rq : NULL;
    if (prq == NULL)
        err = ENXIO;
    else if (ust_qflags(prq) & QFULL)
        err = EAGAIN;
    else /* claimed under pipe_lock: the peer's teardown waits for it */
        atomic_fetch_add(&ust_qpv(prq)->active, 1);
    ust_unlock(&pipe_lock);
    if (err != 0) {
        freemsg(mp);
        return err;
    }
    ust_call_put(prq, mp);
    return 0;
}

int ust_pipe_peer_gone(struct stdata *sd)
{
    ust_lock(&pipe_lock);
    int gone = sd->sd_peer == NULL;
    ust_unlock(&pipe_lock);
    return gone;
}

/* ------------------------------------------------------------------------ */
/* fork() (sd_fork.c)                                                       */
/* ------------------------------------------------------------------------ */
/* pipe_lock is not quiesced: it guards only the peer links of existing pipe
 * ends and the records of breaks in progress (on the breakers' stacks), all
 * of them the parent's in the child; the child re-initialises the lock and
 * its condition variable and forgets the records. */
void ust_pipe_fork_child(void)
{
    ust_lock_init(&pipe_lock);
    ust_cond_init(&pipe_cv);
    breaking = NULL;
    connected = NULL;
}
