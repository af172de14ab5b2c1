/* SPDX-License-Identifier: MIT */
/*
 * strstat.c -- the live view of the executive for administrators: the
 * registry with its counters (ustreams_modinfo; strstat_table.c prints them
 * as scls does) and every queue of a stream (ustreams_dump_stream,
 * ustreams_dump_all, what strinfo prints).
 *
 * Layer: administration (src/admin/).  It walks stream heads (sthead.h) and
 * the executive's queues and registry; nothing below calls it.
 *
 * Principles of operation
 *   Nothing is frozen.  A stream is walked the way putnext walks it: the
 *   walker holds a claim on the queue it stands on, claims the queue that
 *   q_next names (checking that the link did not change meanwhile), then
 *   lets the first claim go.  A claimed queue cannot be unlinked and freed
 *   (ust_qunlink and qprocsoff wait for claims), so what the walk reads is a
 *   queue of this stream, and its registry entry (ust_qpair.ent, held by the
 *   pair) is live.  Unlike putnext the walk stops at queues whose procedures
 *   are off (the pipe pair), and it follows a pipe's twist: past it the
 *   queues are the other end's read queues, up to its head.  Each queue is
 *   copied (struct qsnap) under its own lock, with its bands and the first
 *   UST_DUMP_MSGS messages, and printed after every claim is released, so
 *   the printing (which may block on `out`) never holds anything up.
 *
 *   Counters.  nput/nsrv are the per-queue procedure counts the perimeter
 *   code keeps (ust_qpriv), nopen/nclose the registry entry's open and close
 *   counts (ust_qopen/ust_qclose).  ustreams_modinfo sums nput/nsrv of every
 *   queue of a module found in the streams open now (each stream walked to
 *   its own bottom, not across a twist, so nothing is counted twice); the
 *   counts of queues already closed are gone with them, as module_stat's
 *   are in SVR4 when a module is not loaded.
 *
 *   Streams.  ustreams_dump_all takes a call reference (sd_calls) on each
 *   registered stream that is not closing, under the table lock (via
 *   ust_sd_foreach) and that stream's sd_lock, which is where teardown
 *   marks STRCLOSE: teardown then waits for the reference, so the stream
 *   stays whole while it is printed.  ustreams_dump_stream takes the same
 *   reference through the descriptor (ust_sd_get).
 *
 * Output of ustreams_dump_stream (one stream; indentation is two spaces per
 * level, every value is "key=value" without spaces inside):
 *   stream fd=3 name=/dev/streams/echo flags=0x0<> modules=1 rtoken=down watched=0
 *     [0] head strhead id=0
 *       wr count=0 hiwat=65536 lowat=16384 minpsz=0 maxpsz=INF msgs=0 put=3 srv=0 flags=0x...<QUSE|...>
 *       rd count=15 ... msgs=3 ...
 *         msg M_DATA band=0 bytes=5
 *     [1] module nullmod id=5001 opens=1 closes=0
 *       wr ...
 *         band 1 count=10 hiwat=5120 lowat=1024 msgs=1 flags=0x0<>
 *     [2] driver echo id=5003 major=3 opens=1 closes=0
 *   A pipe end lists its own queues down to its "pipe" pair, then a line
 *   "  -- twist --", then the other end's pairs from its pipe pair up to
 *   its head, those lines marked "far".  Messages beyond the first
 *   UST_DUMP_MSGS of a queue are summed up as "msg ... N more".
 *
 * Locking
 *   No lock of its own.  Claims as described; each queue's lock is taken
 *   alone while it is copied (no other lock held); sd_lock briefly to read a
 *   head's flags; the table lock (ust_sd_foreach) only to take references;
 *   the registry lock (ust_reg_foreach) only to copy entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <ustreams_exec.h>

#include "strcore.h"
#include "sthead.h"
#include "strstat.h"

#define UST_DUMP_MSGS 8              /* messages listed per queue */
#define UST_DUMP_MAXPAIRS (2 * UST_NSTRPUSH + 8) /* a walk longer than this is cut */

/* ------------------------------------------------------------------------ */
/* Decoding                                                                 */
/* ------------------------------------------------------------------------ */

struct flagname {
    unsigned long bit;
    const char *name;
};

static const struct flagname q_flags[] = {
    {QENAB, "QENAB"},     {QWANTR, "QWANTR"},       {QWANTW, "QWANTW"},
    {QFULL, "QFULL"},     {QREADR, "QREADR"},       {QUSE, "QUSE"},
    {QNOENB, "QNOENB"},   {QBACK, "QBACK"},         {QHLIST, "QHLIST"},
    {QPAIR, "QPAIR"},     {QPERQ, "QPERQ"},         {QPERMOD, "QPERMOD"},
    {QMTSAFE, "QMTSAFE"}, {QMTOUTPERIM, "QMTOUTPERIM"}, {QINSERVICE, "QINSERVICE"},
    {QPROCSOFF, "QPROCSOFF"}, {QMUX, "QMUX"},       {QHEAD, "QHEAD"},
    {0, NULL}};

static const struct flagname qb_flags[] = {
    {QB_FULL, "QB_FULL"}, {QB_WANTW, "QB_WANTW"}, {QB_BACK, "QB_BACK"}, {0, NULL}};

static const struct flagname d_flags[] = {
    {D_MP, "D_MP"},           {D_MTPERMOD, "D_MTPERMOD"},       {D_MTQPAIR, "D_MTQPAIR"},
    {D_MTPERQ, "D_MTPERQ"},   {D_MTOCEXCL, "D_MTOCEXCL"},       {D_MTPUTSHARED, "D_MTPUTSHARED"},
    {D_MTOUTPERIM, "D_MTOUTPERIM"}, {D_MTSVCSHARED, "D_MTSVCSHARED"}, {D_CLONE, "D_CLONE"},
    {0, NULL}};

static const struct flagname sd_flags[] = {
    {STRHUP, "STRHUP"},     {STRDERR, "STRDERR"},   {STWRERR, "STWRERR"},
    {STRCLOSE, "STRCLOSE"}, {STPLEX, "STPLEX"},     {STRMREAD, "STRMREAD"},
    {STRNDELON, "STRNDELON"}, {STRISTTY, "STRISTTY"}, {STRDELIM, "STRDELIM"},
    {STRTOSTOP, "STRTOSTOP"}, {STRHOLD, "STRHOLD"}, {STRPIPE, "STRPIPE"},
    {STRFIFO, "STRFIFO"},   {STWOPEN, "STWOPEN"},   {STRATTACH, "STRATTACH"},
    {STRMPRI, "STRMPRI"},   {0, NULL}};

/* Write the names of the bits of v in tab, joined by '|', into buf (size n);
 * bits without a name as one hex remainder.  Always NUL-terminated. */
static void flags_str(char *buf, size_t n, unsigned long v, const struct flagname *tab)
{
    size_t len = 0;
    unsigned long rest = v;
    buf[0] = '\0';
    for (const struct flagname *f = tab; f->name; f++) {
        if (!(v & f->bit))
            continue;
        rest &= ~f->bit;
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? "|" : "", f->name);
    }
    if (rest)
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s0x%lx", len ? "|" : "", rest);
    if (len >= n && n > 0)
        buf[n - 1] = '\0';
}

void ust_dflags_str(char *buf, size_t n, unsigned int flag)
{
    if ((flag & (D_MTMASK | D_CLONE)) == 0)
        snprintf(buf, n, "D_LEGACY");
    else
        flags_str(buf, n, flag, d_flags);
}

static const char *mtype_name(unsigned char t)
{
    static const struct {
        unsigned char t;
        const char *name;
    } tab[] = {
        {M_DATA, "M_DATA"},       {M_PROTO, "M_PROTO"},     {M_BREAK, "M_BREAK"},
        {M_PASSFP, "M_PASSFP"},   {M_EVENT, "M_EVENT"},     {M_SIG, "M_SIG"},
        {M_DELAY, "M_DELAY"},     {M_CTL, "M_CTL"},         {M_IOCTL, "M_IOCTL"},
        {M_SETOPTS, "M_SETOPTS"}, {M_IOCACK, "M_IOCACK"},   {M_IOCNAK, "M_IOCNAK"},
        {M_PCPROTO, "M_PCPROTO"}, {M_PCSIG, "M_PCSIG"},     {M_READ, "M_READ"},
        {M_FLUSH, "M_FLUSH"},     {M_STOP, "M_STOP"},       {M_START, "M_START"},
        {M_HANGUP, "M_HANGUP"},   {M_ERROR, "M_ERROR"},     {M_COPYIN, "M_COPYIN"},
        {M_COPYOUT, "M_COPYOUT"}, {M_IOCDATA, "M_IOCDATA"}, {M_STOPI, "M_STOPI"},
        {M_STARTI, "M_STARTI"},   {M_PCEVENT, "M_PCEVENT"}, {M_UNHANGUP, "M_UNHANGUP"},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (tab[i].t == t)
            return tab[i].name;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Snapshots                                                                */
/* ------------------------------------------------------------------------ */

struct msnap {
    unsigned char type, band;
    size_t bytes;
};

struct bsnap {
    size_t count, hiwat, lowat;
    unsigned int flag;
    long nmsg;
};

/* One queue, copied under its lock. */
struct qsnap {
    size_t count, hiwat, lowat;
    ssize_t minpsz, maxpsz;
    unsigned int flag;
    long nput, nsrv;
    long nmsg;                   /* messages on the queue */
    int nshown;                  /* of which msgs[] holds the first */
    struct msnap msgs[UST_DUMP_MSGS];
    int nband;                   /* q_nband */
    struct bsnap *bands;         /* bands 1..nband (malloc), NULL if none or no memory */
};

enum { PAIR_HEAD = 1, PAIR_MODULE, PAIR_DRIVER, PAIR_PIPE, PAIR_OTHER };

/* One queue pair met on the walk. */
struct psnap {
    int kind;                    /* PAIR_* */
    int far;                     /* past a pipe's twist: the other end's */
    char name[FMNAMESZ + 8];     /* module_info name */
    unsigned short idnum;
    long nopen, nclose;          /* the registry entry's, -1 without one */
    long major;                  /* drivers, else -1 */
    struct qsnap q[2];           /* [0] write queue, [1] read queue */
};

/* ust_sd_msg_each_write callback: one write of a coalescing block, an
 * M_DATA message of band 0 to the head's readers.  Queue lock held. */
static int snap_write(const unsigned char *p, size_t n, void *arg)
{
    struct qsnap *s = arg;
    (void)p;
    if (s->nshown < UST_DUMP_MSGS)
        s->msgs[s->nshown++] = (struct msnap){.type = M_DATA, .band = 0, .bytes = n};
    s->nmsg++;
    return 0;
}

static void qsnap_take(queue_t *q, struct qsnap *s)
{
    struct ust_qpriv *pv = ust_qpv(q);
    struct stdata *hsd = ust_isrd(q) ? ust_sd_of(q) : NULL;
    if (hsd) /* a head's arrivals are messages waiting there (sd_arrive.c) */
        ust_sd_absorb_to(hsd, q);
    memset(s, 0, sizeof(*s));
    s->nput = atomic_load_explicit(&pv->nput, memory_order_relaxed);
    s->nsrv = atomic_load_explicit(&pv->nsrv, memory_order_relaxed);
    ust_lock(&pv->lock); /* queue lock: messages, counts, bands */
    s->count = q->q_count;
    s->hiwat = q->q_hiwat;
    s->lowat = q->q_lowat;
    s->minpsz = q->q_minpsz;
    /* a pipe's split sets q_maxpsz atomically, outside the queue lock */
    s->maxpsz = __atomic_load_n(&q->q_maxpsz, __ATOMIC_RELAXED);
    s->flag = ust_qflags(q);
    for (mblk_t *mp = q->q_first; mp; mp = mp->b_next) {
        /* A head's coalescing block holds several writes, each a message
         * to its readers (sd_arrive.c): shown one by one. */
        if (hsd && ust_sd_msg_each_write(mp, snap_write, s) == 0)
            continue;
        if (s->nshown < UST_DUMP_MSGS) {
            struct msnap *m = &s->msgs[s->nshown++];
            m->type = mp->b_datap->db_type;
            m->band = mp->b_band;
            for (mblk_t *bp = mp; bp; bp = bp->b_cont)
                if (bp->b_wptr > bp->b_rptr)
                    m->bytes += (size_t)(bp->b_wptr - bp->b_rptr);
        }
        s->nmsg++;
    }
    s->nband = q->q_nband;
    if (s->nband > 0)
        s->bands = calloc((size_t)s->nband, sizeof(*s->bands));
    if (s->bands) {
        int i = 0;
        for (qband_t *qb = q->q_bandp; qb && i < s->nband; qb = qb->qb_next, i++) {
            struct bsnap *b = &s->bands[i];
            b->count = qb->qb_count;
            b->hiwat = qb->qb_hiwat;
            b->lowat = qb->qb_lowat;
            b->flag = qb->qb_flag;
            if (qb->qb_first)
                for (mblk_t *mp = qb->qb_first;; mp = mp->b_next) {
                    b->nmsg++;
                    if (mp == qb->qb_last || !mp->b_next)
                        break;
                }
        }
    }
    ust_unlock(&pv->lock);
}

/* Copy the pair of q (claimed by the caller). */
static void psnap_take(queue_t *q, int far, int pipe_stream, struct psnap *p)
{
    queue_t *wq = ust_isrd(q) ? WR(q) : q;
    struct ust_qpair *qp = ust_qp(q);
    struct ust_modent *e = qp->ent; /* held by the pair, which our claim keeps */
    struct module_info *mi = wq->q_qinfo ? wq->q_qinfo->qi_minfo : NULL;

    memset(p, 0, sizeof(*p));
    p->far = far;
    p->nopen = p->nclose = p->major = -1;
    snprintf(p->name, sizeof(p->name), "%s", mi && mi->mi_idname ? mi->mi_idname : "?");
    p->idnum = mi ? mi->mi_idnum : 0;
    if (ust_qflags(q) & QHEAD) {
        p->kind = PAIR_HEAD;
    } else if (e) {
        p->kind = e->kind == UST_DRIVER ? PAIR_DRIVER : PAIR_MODULE;
        p->nopen = atomic_load(&e->nopen);
        p->nclose = atomic_load(&e->nclose);
        if (e->kind == UST_DRIVER)
            p->major = (long)e->major;
    } else {
        p->kind = pipe_stream ? PAIR_PIPE : PAIR_OTHER;
    }
    qsnap_take(wq, &p->q[0]);
    qsnap_take(RD(wq), &p->q[1]);
}

static void psnap_free(struct psnap *p, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2; j++)
            free(p[i].q[j].bands);
}

/* What the walk of one stream found. */
struct walk {
    char name[sizeof(((struct stdata *)0)->sd_name)];
    unsigned int sdflag;
    const char *rtoken; /* the readable token: shown, down, lazy, owed */
    int watched;        /* sticky exact (sd_tokexact) */
    int npair;
    struct psnap pairs[UST_DUMP_MAXPAIRS];
    int cut; /* the walk was longer than UST_DUMP_MAXPAIRS */
};

/*
 * stream_walk -- copy every pair of sd from the head down, across a pipe's
 *   twist when cross is set.  The caller holds a call reference on sd.
 *   With w NULL, calls fn(q, arg) on each queue instead (q claimed).
 */
static void stream_walk(struct stdata *sd, int cross, struct walk *w,
                        void (*fn)(queue_t *q, void *arg), void *arg)
{
    int pipe_stream, far = 0, n = 0;

    ust_lock(&sd->sd_lock);
    pipe_stream = (sd->sd_flag & STRPIPE) != 0;
    if (w) {
        w->sdflag = sd->sd_flag;
        snprintf(w->name, sizeof(w->name), "%s", sd->sd_name);
        w->rtoken = ust_sd_rtoken_state(sd);
        w->watched = sd->sd_tokexact;
        w->npair = 0;
        w->cut = 0;
    }
    queue_t *q = sd->sd_wq;
    if (q)
        atomic_fetch_add(&ust_qpv(q)->active, 1); /* the head: held alive by our reference */
    ust_unlock(&sd->sd_lock);

    while (q) {
        if (ust_isrd(q)) { /* q_next of a write queue is a read queue: the twist */
            if (!cross) {
                ust_qrelease(q);
                break;
            }
            far = 1;
        }
        if (n >= UST_DUMP_MAXPAIRS) {
            if (w)
                w->cut = 1;
            ust_qrelease(q);
            break;
        }
        if (w)
            psnap_take(q, far, pipe_stream, &w->pairs[w->npair++]);
        else
            fn(q, arg);
        n++;
        queue_t *nq = ust_qclaim_link(q); /* whatever its procedures: QPROCSOFF too */
        ust_qrelease(q);
        q = nq;
    }
}

/* ------------------------------------------------------------------------ */
/* Printing a stream                                                        */
/* ------------------------------------------------------------------------ */

static void print_psz(FILE *out, const char *key, ssize_t v)
{
    if (v == INFPSZ)
        fprintf(out, " %s=INF", key);
    else
        fprintf(out, " %s=%zd", key, v);
}

static void print_queue(FILE *out, const char *side, const struct qsnap *s)
{
    char fl[512];
    flags_str(fl, sizeof(fl), s->flag, q_flags);
    fprintf(out, "      %s count=%zu hiwat=%zu lowat=%zu", side, s->count, s->hiwat, s->lowat);
    print_psz(out, "minpsz", s->minpsz);
    print_psz(out, "maxpsz", s->maxpsz);
    fprintf(out, " msgs=%ld put=%ld srv=%ld flags=0x%x<%s>\n", s->nmsg, s->nput, s->nsrv, s->flag,
            fl);
    for (int i = 0; s->bands && i < s->nband; i++) {
        const struct bsnap *b = &s->bands[i];
        flags_str(fl, sizeof(fl), b->flag, qb_flags);
        fprintf(out, "        band %d count=%zu hiwat=%zu lowat=%zu msgs=%ld flags=0x%x<%s>\n",
                i + 1, b->count, b->hiwat, b->lowat, b->nmsg, b->flag, fl);
    }
    for (int i = 0; i < s->nshown; i++) {
        const struct msnap *m = &s->msgs[i];
        const char *tn = mtype_name(m->type);
        if (tn)
            fprintf(out, "        msg %s band=%u bytes=%zu\n", tn, m->band, m->bytes);
        else
            fprintf(out, "        msg 0x%02x band=%u bytes=%zu\n", m->type, m->band, m->bytes);
    }
    if (s->nmsg > s->nshown)
        fprintf(out, "        msg ... %ld more\n", s->nmsg - s->nshown);
}

static void print_walk(FILE *out, int fd, const struct walk *w)
{
    static const char *const kinds[] = {"?", "head", "module", "driver", "pipe", "queue"};
    char fl[512];
    int nmod = 0, twisted = 0;

    for (int i = 0; i < w->npair; i++)
        nmod += !w->pairs[i].far && w->pairs[i].kind == PAIR_MODULE;
    flags_str(fl, sizeof(fl), w->sdflag, sd_flags);
    fprintf(out, "stream");
    if (fd >= 0)
        fprintf(out, " fd=%d", fd);
    fprintf(out, " name=%s flags=0x%x<%s> modules=%d rtoken=%s watched=%d\n",
            w->name[0] ? w->name : "-", w->sdflag, fl, nmod, w->rtoken, w->watched);
    for (int i = 0; i < w->npair; i++) {
        const struct psnap *p = &w->pairs[i];
        if (p->far && !twisted) {
            fprintf(out, "  -- twist --\n");
            twisted = 1;
        }
        fprintf(out, "  [%d]%s %s %s id=%u", i, p->far ? " far" : "", kinds[p->kind], p->name,
                p->idnum);
        if (p->major >= 0)
            fprintf(out, " major=%ld", p->major);
        if (p->nopen >= 0)
            fprintf(out, " opens=%ld closes=%ld", p->nopen, p->nclose);
        fputc('\n', out);
        print_queue(out, "wr", &p->q[0]);
        print_queue(out, "rd", &p->q[1]);
    }
    if (w->cut)
        fprintf(out, "  ... (more than %d queue pairs)\n", UST_DUMP_MAXPAIRS);
}

/* Walk sd (a call reference held) and print it.  0 or -1 with errno. */
static int dump_sd(struct stdata *sd, int fd, FILE *out)
{
    struct walk *w = malloc(sizeof(*w));
    if (!w) {
        errno = ENOMEM;
        return -1;
    }
    stream_walk(sd, 1, w, NULL, NULL);
    print_walk(out, fd, w);
    psnap_free(w->pairs, w->npair);
    free(w);
    return 0;
}

int ust_out_result(FILE *out, int r)
{
    if (fflush(out) != 0 || ferror(out)) {
        if (errno == 0)
            errno = EIO;
        return -1;
    }
    return r;
}

/*
 * ustreams_dump_stream -- print every queue of the stream open on fd.
 *   Context: any thread but a module procedure; may block writing to out.
 *   Locking: see the file comment (claims, one queue lock at a time).
 *   Returns 0, or -1 with errno: EINVAL (out NULL), EBADF (fd not open),
 *   ENOSTR (fd is not a stream), ENOMEM, or the error of writing to out.
 */
int ustreams_dump_stream(int fd, FILE *out)
{
    int err;
    if (!out) {
        errno = EINVAL;
        return -1;
    }
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd) {
        errno = err;
        return -1;
    }
    errno = 0;
    int r = dump_sd(sd, fd, out);
    ust_sd_put(sd);
    return r < 0 ? -1 : ust_out_result(out, 0);
}

/* A list of streams with a call reference each. */
struct sdlist {
    struct stdata **v;
    int n, cap;
    int nomem;
};

/* ust_sd_foreach callback (table lock held): take a call reference unless
 * the stream is being closed.  STRCLOSE is set under the table lock and
 * sd_lock, before teardown waits for the calls, so a stream that does not
 * show it here waits for our reference. */
static void collect_sd(struct stdata *sd, void *arg)
{
    struct sdlist *l = arg;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        struct stdata **v = realloc(l->v, (size_t)cap * sizeof(*v));
        if (!v) {
            l->nomem = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    ust_lock(&sd->sd_lock);
    int closing = (sd->sd_flag & STRCLOSE) != 0;
    if (!closing)
        atomic_fetch_add(&sd->sd_calls, 1);
    ust_unlock(&sd->sd_lock);
    if (!closing)
        l->v[l->n++] = sd;
}

static void sdlist_release(struct sdlist *l)
{
    for (int i = 0; i < l->n; i++)
        ust_sd_put(l->v[i]);
    free(l->v);
}

/* The lowest descriptor of sd among the first few thousand, or -1. */
static int sd_fd_of(struct stdata *sd)
{
    struct rlimit rl;
    long lim = 4096;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (long)rl.rlim_cur < lim)
        lim = (long)rl.rlim_cur;
    for (int fd = 0; fd < lim; fd++)
        if (ust_sd_peek(fd) == sd)
            return fd;
    return -1;
}

/*
 * ustreams_dump_all -- ustreams_dump_stream for every stream open in the
 *   process, in the order they were opened.
 *   Context and locking: as ustreams_dump_stream; the table lock is held
 *   only while references are taken.
 *   Returns the number of streams printed, or -1 with errno (EINVAL out
 *   NULL, ENOMEM, a write error).
 */
int ustreams_dump_all(FILE *out)
{
    struct sdlist l = {0};
    int r = 0;

    if (!out) {
        errno = EINVAL;
        return -1;
    }
    ust_sd_foreach(collect_sd, &l);
    errno = 0;
    if (l.nomem) {
        sdlist_release(&l);
        errno = ENOMEM;
        return -1;
    }
    for (int i = 0; i < l.n && r >= 0; i++)
        r = dump_sd(l.v[i], sd_fd_of(l.v[i]), out) < 0 ? -1 : r + 1;
    sdlist_release(&l);
    return r < 0 ? -1 : ust_out_result(out, r);
}

/* ------------------------------------------------------------------------ */
/* The registry                                                             */
/* ------------------------------------------------------------------------ */

/* Procedure counts per registry entry, over the queues of the open streams. */
struct qcount {
    struct ust_modent *e;
    long nqueues, nput, nsrv;
};

struct qcounts {
    struct qcount *v;
    int n, cap;
    int nomem;
};

static void count_queue(queue_t *q, void *arg)
{
    struct qcounts *c = arg;
    struct ust_modent *e = ust_qp(q)->ent; /* held by the claimed pair */
    if (!e)
        return;
    int i;
    for (i = 0; i < c->n; i++)
        if (c->v[i].e == e)
            break;
    if (i == c->n) {
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 16;
            struct qcount *v = realloc(c->v, (size_t)cap * sizeof(*v));
            if (!v) {
                c->nomem = 1;
                return;
            }
            c->v = v;
            c->cap = cap;
        }
        c->v[c->n++] = (struct qcount){.e = e};
    }
    queue_t *pair[2] = {q, OTHERQ(q)};
    for (int j = 0; j < 2; j++) {
        struct ust_qpriv *pv = ust_qpv(pair[j]);
        c->v[i].nqueues++;
        c->v[i].nput += atomic_load_explicit(&pv->nput, memory_order_relaxed);
        c->v[i].nsrv += atomic_load_explicit(&pv->nsrv, memory_order_relaxed);
    }
}

/* Count the queues of every open stream: walk each (references taken as
 * for ustreams_dump_all), down to its own bottom. */
static int count_queues(struct qcounts *c)
{
    struct sdlist l = {0};
    ust_sd_foreach(collect_sd, &l);
    for (int i = 0; i < l.n; i++)
        stream_walk(l.v[i], 0, NULL, count_queue, c);
    int nomem = l.nomem || c->nomem;
    sdlist_release(&l);
    return nomem ? ENOMEM : 0;
}

struct modcopy {
    struct ustreams_modinfo *buf;
    struct ust_modent **ents; /* for matching the counts; compared, never followed */
    int max, n;
};

/* ust_reg_foreach callback (registry lock held). */
static void copy_ent(struct ust_modent *e, void *arg)
{
    struct modcopy *m = arg;
    if (m->n < m->max) {
        struct ustreams_modinfo *mi = &m->buf[m->n];
        struct module_info *inf = e->str && e->str->st_rdinit ? e->str->st_rdinit->qi_minfo : NULL;
        memset(mi, 0, sizeof(*mi));
        snprintf(mi->name, sizeof(mi->name), "%.*s", (int)sizeof(mi->name) - 1, e->name);
        mi->kind = e->kind == UST_DRIVER ? USTREAMS_DRIVER : USTREAMS_MODULE;
        if (inf) {
            mi->idnum = inf->mi_idnum;
            mi->minpsz = (long)inf->mi_minpsz;
            mi->maxpsz = (long)inf->mi_maxpsz;
            mi->hiwat = inf->mi_hiwat;
            mi->lowat = inf->mi_lowat;
        }
        mi->flag = e->flag;
        mi->major = e->kind == UST_DRIVER ? (int)e->major : -1;
        mi->dynamic = e->dynamic != 0;
        mi->refs = atomic_load(&e->refs);
        mi->nopen = atomic_load(&e->nopen);
        mi->nclose = atomic_load(&e->nclose);
        m->ents[m->n] = e;
    }
    m->n++;
}

/*
 * ustreams_modinfo -- copy the registry with its counters.
 *   Context: any thread but a module procedure.  Locking: the stream table
 *   and the registry lock, in turn, never together.
 *   Returns the number of registered entries (buf holds the first max), or
 *   -1 with errno EINVAL (max < 0, or buf NULL with max > 0) or ENOMEM.
 */
int ustreams_modinfo(struct ustreams_modinfo *buf, int max)
{
    struct qcounts c = {0};
    struct modcopy m = {.buf = buf, .max = max};

    if (max < 0 || (!buf && max > 0)) {
        errno = EINVAL;
        return -1;
    }
    ust_init();
    if (max > 0) {
        m.ents = calloc((size_t)max, sizeof(*m.ents));
        if (!m.ents) {
            errno = ENOMEM;
            return -1;
        }
        if (count_queues(&c) != 0) {
            free(c.v);
            free(m.ents);
            errno = ENOMEM;
            return -1;
        }
    }
    ust_reg_foreach(copy_ent, &m);
    for (int i = 0; i < m.n && i < max; i++)
        for (int j = 0; j < c.n; j++)
            if (c.v[j].e == m.ents[i]) {
                buf[i].nqueues = c.v[j].nqueues;
                buf[i].nput = c.v[j].nput;
                buf[i].nsrv = c.v[j].nsrv;
            }
    free(c.v);
    free(m.ents);
    return m.n;
}
