/* SPDX-License-Identifier: MIT */
/*
 * sd_xexec.c -- pipes across exec, the old image's half: what a pipe end
 *   needs to live on in the image that replaces this one.
 *
 * Principles of operation
 *   A stream lives in the memory of its process, which execve() throws
 *   away; the kernel keeps only descriptors.  A split pipe end (sd_xpipe.c)
 *   is nearly all descriptors already: its channel's memfd, its bell, the
 *   wake pair.  So, just before the exec (ust_exec_prepare, called by the
 *   exec wrappers of the preload library):
 *     - every connected pipe of the process is split, as at fork;
 *     - each pipe end named by a descriptor that survives the exec (no
 *       FD_CLOEXEC) is described: its channel, bell and wake pair are
 *       duplicated onto numbers that survive too, and the messages still
 *       queued in this process -- read side, head down to the pipe pair,
 *       not read yet; write side, pipe pair up to the head, not in the ring
 *       yet -- are taken off their queues and written out with their types,
 *       bands and boundaries (a coalesced block as its writes; an ordinary
 *       file passed with I_SENDFD as a surviving descriptor);
 *     - the description goes into a memfd that survives the exec, named by
 *       USTREAMS_EXEC_STATE=<fd> in the new environment (sd_xexec.h).
 *   The new image's library (sd_xexec_adopt.c) rebuilds each end on its
 *   descriptor numbers before main.  If the exec fails, ust_exec_done puts
 *   every message back where it was and closes the duplicates: the process
 *   goes on as before (its pipes stay split, as after a fork).
 *
 *   What does not cross: streams other than pipe ends (a driver's stream,
 *   its modules and queues are this image's memory; in the new image the
 *   descriptor reads as hung up); modules pushed on a pipe end (the new
 *   image's end has none; the messages inside them are carried as they
 *   are); a stream passed with I_SENDFD and not yet received (dropped with
 *   its message, as at its last close, and counted in a cmn_err note).  Descriptors with
 *   FD_CLOEXEC are closed by the exec as for any file: their pipe ends close.
 *   Other threads must not use the streams while one thread execs: a
 *   message read by them after the snapshot is read twice.
 *
 * Locking: xx_lock guards `cur`; held from ust_exec_prepare to
 *   ust_exec_done (or to the exec: the image goes with it).  Taken with no
 *   other library lock held; the queues are taken with getq/putbq.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/cmn_err.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ustreams_exec.h>

#include "procs.h"
#include "sd_xexec.h"
#include "sd_xpipe.h"

struct held {      /* a message taken off a queue for the description */
    queue_t *q;    /* where it goes back if the exec fails */
    mblk_t *mp;
};

struct xend_out {
    struct stdata *sd; /* one call counted (ust_sd_get), unless shared */
    int shared;        /* the far side of an owner's relay (sd_xexec_share.c) */
    struct xexec_end e;
    struct held *rd, *wr;
    int nrd, nwr;
};

struct buf {
    unsigned char *p;
    size_t len, cap;
    int err;
};

static pthread_mutex_t xx_lock = PTHREAD_MUTEX_INITIALIZER; /* guards `cur` */
static struct {
    struct xend_out *ends;
    int nend, capend;
    struct xexec_fd *fds;
    int nfd, capfd;
    int *dups; /* every descriptor made to survive the exec */
    int ndup, capdup;
    struct buf out;
    long lost; /* messages that could not cross (logged with cmn_err) */
    int spawn; /* for posix_spawn: describe only, take no message */
    int vforked; /* a vfork child: the memory is the parent's, which serves */
} cur;

/* This process's pid as the library knows it (start-up, fork child): a
 * caller whose getpid() differs is a vfork child running in its parent's
 * memory, with its parent's streams. */
static pid_t xx_pid;

static void xx_fork_child(void)
{
    xx_pid = getpid();
}

__attribute__((constructor)) static void xx_start(void)
{
    xx_pid = getpid();
    pthread_atfork(NULL, NULL, xx_fork_child);
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
    if (b->err != 0 || n == 0)
        return;
    if (b->len + n > XEXEC_MAX_BYTES) {
        b->err = E2BIG;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *np = realloc(b->p, cap);
        if (np == NULL) {
            b->err = ENOMEM;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static int grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return 0;
    int nc = *cap ? 2 * *cap : 16;
    void *na = realloc(*arr, (size_t)nc * elem);
    if (na == NULL)
        return ENOMEM;
    *arr = na;
    *cap = nc;
    return 0;
}

/* A duplicate of fd that survives the exec, remembered (closed again by
 * ust_exec_done); -1 with cur.out.err set on failure, -1 for fd < 0. */
static int dup_keep(int fd)
{
    if (fd < 0)
        return -1;
    if (grow((void **)&cur.dups, &cur.capdup, cur.ndup, sizeof(int)) != 0) {
        cur.out.err = ENOMEM;
        return -1;
    }
    int d = fcntl(fd, F_DUPFD, 3);
    if (d < 0) {
        cur.out.err = errno;
        return -1;
    }
    cur.dups[cur.ndup++] = d;
    return d;
}

/* ---- the messages ---- */

struct rec_arg {
    struct buf *b;
    uint8_t band;
    int n; /* records written */
};

static void rec_write(struct buf *b, const struct xexec_rec *r, const mblk_t *ctl,
                      const mblk_t *data)
{
    buf_add(b, r, sizeof(*r));
    if (ctl != NULL)
        buf_add(b, ctl->b_rptr, (size_t)(ctl->b_wptr - ctl->b_rptr));
    for (const mblk_t *bp = data; bp != NULL; bp = bp->b_cont)
        buf_add(b, bp->b_rptr, (size_t)(bp->b_wptr - bp->b_rptr));
}

static int one_write(const unsigned char *p, size_t n, void *arg)
{
    struct rec_arg *ra = arg;
    struct xexec_rec r = {.type = M_DATA, .band = ra->band, .data_len = (uint32_t)n, .passfd = -1};
    buf_add(ra->b, &r, sizeof(r));
    buf_add(ra->b, p, n);
    ra->n++;
    return 0;
}

/* Describe mp as records (a coalesced block as its writes): how many were
 * written, 0 when it cannot cross. */
static int msg_out(struct buf *b, mblk_t *mp)
{
    struct xexec_rec r = {.type = (uint8_t)mp->b_datap->db_type, .band = mp->b_band, .passfd = -1};
    switch (mp->b_datap->db_type) {
    case M_DATA: {
        struct rec_arg ra = {b, mp->b_band, 0};
        if (ust_sd_msg_each_write(mp, one_write, &ra) >= 0)
            return ra.n;
        r.data_len = (uint32_t)msgdsize(mp);
        rec_write(b, &r, NULL, mp);
        return 1;
    }
    case M_PROTO:
    case M_PCPROTO:
        r.flags = XREC_CTL | (mp->b_cont != NULL ? XREC_DATA : 0);
        r.ctl_len = (uint32_t)(mp->b_wptr - mp->b_rptr);
        r.data_len = (uint32_t)msgdsize(mp->b_cont);
        rec_write(b, &r, mp, mp->b_cont);
        return 1;
    case M_PASSFP: {
        uid_t uid;
        gid_t gid;
        int fd = ust_passfp_file(mp, &uid, &gid);
        if (fd < 0)
            return 0; /* a stream of this image */
        r.passfd = dup_keep(fd);
        r.uid = uid;
        r.gid = gid;
        if (r.passfd < 0)
            return 0;
        rec_write(b, &r, NULL, NULL);
        return 1;
    }
    default:
        return 0;
    }
}

/* Take every message off q, appending to *h (n, cap). */
static int take_all(queue_t *q, struct held **h, int *n)
{
    int cap = *n;
    mblk_t *mp;
    while ((mp = getq(q)) != NULL) {
        if (*n >= cap) {
            int nc = cap ? 2 * cap : 16;
            struct held *nh = realloc(*h, (size_t)nc * sizeof(**h));
            if (nh == NULL) {
                putbq(q, mp);
                return ENOMEM;
            }
            *h = nh;
            cap = nc;
        }
        (*h)[(*n)++] = (struct held){q, mp};
    }
    return 0;
}

/* The queues of end x, in the order their messages were sent: read side
 * head first (its messages are the oldest), write side pipe pair first. */
static int take_queues(struct xend_out *x)
{
    struct stdata *sd = x->sd;
    queue_t *rq[64], *wq[64];
    int nr = 0, nw = 0, e = 0;

    ust_sd_absorb(sd);
    for (queue_t *q = sd->sd_pipeq; q != NULL && nr < 64; q = q->q_next) {
        rq[nr++] = q;
        if (q == sd->sd_rq)
            break;
    }
    for (queue_t *q = sd->sd_wq; q != NULL && nw < 64; q = q->q_next)
        wq[nw++] = q;
    for (int i = nr - 1; i >= 0 && e == 0; i--)
        e = take_all(rq[i], &x->rd, &x->nrd);
    for (int i = nw - 1; i >= 0 && e == 0; i--)
        e = take_all(wq[i], &x->wr, &x->nwr);
    return e;
}

static void put_back(struct held *h, int n)
{
    for (int i = n - 1; i >= 0; i--)
        putbq(h[i].q, h[i].mp);
}

/* ---- the ends ---- */

static struct xend_out *end_of(struct stdata *sd)
{
    for (int i = 0; i < cur.nend; i++)
        if (cur.ends[i].sd == sd)
            return &cur.ends[i];
    return NULL;
}

/* A new entry for sd, or NULL (cur.out.err set). */
static struct xend_out *end_new(struct stdata *sd)
{
    if (cur.nend >= XEXEC_MAX_ENDS ||
        grow((void **)&cur.ends, &cur.capend, cur.nend, sizeof(*cur.ends)) != 0) {
        cur.out.err = ENOMEM;
        return NULL;
    }
    struct xend_out *x = &cur.ends[cur.nend++];
    memset(x, 0, sizeof(*x));
    x->sd = sd;
    x->e.uino = sd->sd_uino;
    x->e.udev = sd->sd_udev;
    ust_lock(&sd->sd_lock);
    x->e.rdopt = sd->sd_rdopt;
    x->e.wropt = sd->sd_wropt;
    x->e.oflag = sd->sd_oflag;
    ust_unlock(&sd->sd_lock);
    return x;
}

/* A stream that is not a pipe end crosses as the far side of a relay its
 * owner makes (sd_xexec_share.c): the owner is another process (this is a
 * fork child's detached copy), or this one when it spawns (it stays). */
static struct xend_out *shared_out(int fd, struct stdata *sd)
{
    int mfd, bfd, acc, err;
    if (cur.vforked) /* the parent's memory: the parent serves every stream */
        err = ust_exec_share_ask(getppid(), fd, &mfd, &bfd, &acc);
    else if (ust_sd_forked(sd))
        err = ust_exec_share_ask(sd->sd_cred.cr_pid, fd, &mfd, &bfd, &acc);
    else
        err = ust_exec_share_serve(fd, &mfd, &bfd, &acc);
    if (err != 0)
        return NULL; /* it stays behind: the new image sees it hung up */
    struct xend_out *x = end_new(sd);
    if (x != NULL) {
        x->shared = 1;
        x->e.side = 1;
        x->e.acc = acc;
        x->e.memfd = dup_keep(mfd);
        x->e.bell = dup_keep(bfd);
        x->e.wake[0] = x->e.wake[1] = -1;
    }
    close(mfd);
    close(bfd);
    return x;
}

static void fd_out(int fd, struct stdata *sd, void *arg)
{
    (void)arg;
    int fl = fcntl(fd, F_GETFD);
    struct ust_xend *xe = __atomic_load_n(&sd->sd_xend, __ATOMIC_ACQUIRE);
    if (cur.out.err != 0 || fl < 0 || ((fl & FD_CLOEXEC) && !cur.spawn) || !ust_sd_fd_is(fd, sd))
        return;
    int forked = ust_sd_forked(sd);
    struct xend_out *x = end_of(sd);
    if (x == NULL && xe != NULL && !forked && !cur.vforked) { /* a pipe end of this process */
        int err;
        if ((x = end_new(sd)) == NULL)
            return;
        if (ust_sd_get(fd, &err) != sd) {
            cur.nend--;
            cur.out.err = EBADF;
            return;
        }
        x->e.side = xe->side;
        x->e.acc = ust_sd_acc_get(fd);
        x->e.memfd = dup_keep(xring_fd(xe->xc->ch));
        x->e.bell = dup_keep(xe->bell.fd);
        x->e.wake[0] = dup_keep(xe->xc->wake[0]);
        x->e.wake[1] = dup_keep(xe->xc->wake[1]);
        if (cur.out.err == 0 && !cur.spawn)
            cur.out.err = take_queues(x);
    } else if (x == NULL && (cur.vforked || (xe == NULL && (forked || cur.spawn)))) {
        x = shared_out(fd, sd);
    }
    if (x == NULL)
        return;
    if (cur.nfd >= XEXEC_MAX_FDS || grow((void **)&cur.fds, &cur.capfd, cur.nfd, sizeof(*cur.fds)) != 0) {
        cur.out.err = ENOMEM;
        return;
    }
    cur.fds[cur.nfd++] = (struct xexec_fd){fd, (int32_t)(x - cur.ends), x->e.acc, 0};
}

/* The description: header, ends, descriptors, records. */
static int describe(void)
{
    struct buf *b = &cur.out;
    struct buf recs = {0};
    for (int i = 0; i < cur.nend; i++) {
        struct xend_out *x = &cur.ends[i];
        for (int k = 0; k < x->nrd; k++) {
            int n = msg_out(&recs, x->rd[k].mp);
            x->e.pre_rd += (uint32_t)n;
            cur.lost += n == 0;
        }
        for (int k = 0; k < x->nwr; k++) {
            int n = msg_out(&recs, x->wr[k].mp);
            x->e.pre_wr += (uint32_t)n;
            cur.lost += n == 0;
        }
    }
    if (cur.lost > 0) /* a stream passed with I_SENDFD, not received: it stays */
        cmn_err(CE_NOTE, "exec: %ld queued message(s) of a pipe end cannot cross the exec",
                cur.lost);
    struct xexec_hdr h = {XEXEC_MAGIC, XEXEC_VERSION, (uint32_t)cur.nend, (uint32_t)cur.nfd,
                          (int32_t)getpid(), (uint32_t)cur.spawn, 0};
    h.h_bytes = sizeof(h) + (uint64_t)cur.nend * sizeof(struct xexec_end) +
                (uint64_t)cur.nfd * sizeof(struct xexec_fd) + recs.len;
    buf_add(b, &h, sizeof(h));
    for (int i = 0; i < cur.nend; i++)
        buf_add(b, &cur.ends[i].e, sizeof(cur.ends[i].e));
    buf_add(b, cur.fds, (size_t)cur.nfd * sizeof(*cur.fds));
    buf_add(b, recs.p, recs.len);
    if (recs.err != 0 && b->err == 0)
        b->err = recs.err;
    free(recs.p);
    if (b->err != 0)
        return b->err;
    int mfd = memfd_create("ustreams-exec", 0);
    if (mfd < 0)
        return errno;
    cur.dups[cur.ndup++] = mfd; /* room: grow() before describe */
    for (size_t off = 0; off < b->len;) {
        ssize_t w = pwrite(mfd, b->p + off, b->len - off, (off_t)off);
        if (w <= 0)
            return w < 0 ? errno : EIO;
        off += (size_t)w;
    }
    return 0;
}

static void count_fd(int fd, struct stdata *sd, void *arg)
{
    (void)fd;
    (void)sd;
    ++*(int *)arg;
}

static void cur_release(int put)
{
    for (int i = 0; i < cur.nend; i++) {
        struct xend_out *x = &cur.ends[i];
        if (put && !x->shared) {
            put_back(x->wr, x->nwr);
            put_back(x->rd, x->nrd);
            if (x->sd->sd_pipeq != NULL)
                qenable(WR(x->sd->sd_pipeq));
        }
        free(x->rd);
        free(x->wr);
        if (!x->shared)
            ust_sd_put(x->sd);
    }
    for (int i = 0; i < cur.ndup; i++)
        close(cur.dups[i]);
    free(cur.ends);
    free(cur.fds);
    free(cur.dups);
    free(cur.out.p);
    memset(&cur, 0, sizeof(cur));
}

/* envp with USTREAMS_EXEC_STATE=<fd> instead of any it had. */
static char **env_with(char *const envp[], int fd)
{
    size_t n = 0, k = 0, pl = strlen(XEXEC_ENV);
    while (envp != NULL && envp[n] != NULL)
        n++;
    char **ne = malloc((n + 2) * sizeof(*ne) + 64);
    if (ne == NULL)
        return NULL;
    char *var = (char *)(ne + n + 2);
    snprintf(var, 64, "%s=%d", XEXEC_ENV, fd);
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], XEXEC_ENV, pl) != 0 || envp[i][pl] != '=')
            ne[k++] = envp[i];
    ne[k++] = var;
    ne[k] = NULL;
    return ne;
}

int ust_exec_prepare(char *const envp[], char ***envp_out, int spawn)
{
    *envp_out = NULL;
    pthread_mutex_lock(&xx_lock);
    cur.spawn = spawn;
    cur.vforked = getpid() != xx_pid;
    int any = 0;
    ust_sd_fd_each(count_fd, &any);
    if (any == 0) /* no stream: nothing to describe */
        return 0;
    if (!cur.vforked) { /* a vfork child changes nothing of its parent's */
        ust_xpipe_split_now();
        ustreams_quiesce(100); /* what the splits started settles */
    }
    ust_sd_fd_each(fd_out, NULL);
    if (cur.nend == 0 && cur.out.err == 0) {
        cur_release(0);
        return 0;
    }
    int e = cur.out.err;
    if (e == 0 && grow((void **)&cur.dups, &cur.capdup, cur.ndup, sizeof(int)) != 0)
        e = ENOMEM;
    if (e == 0)
        e = describe();
    if (e == 0 && (*envp_out = env_with(envp, cur.dups[cur.ndup - 1])) == NULL)
        e = ENOMEM;
    if (e != 0) {
        cur_release(1);
        pthread_mutex_unlock(&xx_lock);
        errno = e;
        return -1;
    }
    return 0;
}

void ust_exec_done(char **envp_out)
{
    cur_release(1);
    free(envp_out);
    pthread_mutex_unlock(&xx_lock);
}
