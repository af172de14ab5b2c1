/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe_read.c -- the read side of a pipe end split across processes
 * (sd_xpipe.c has the picture): records of the ring become messages again
 * and go up as long as the stream above takes them; small data records join
 * the head's arrivals (sd_arrive.c); M_PASSFP records meet their
 * descriptors from the bell (sd_xbell.c); once the peer side is gone and the
 * ring empty, M_HANGUP goes up.
 *
 * Locking: the read service procedure runs one at a time per end (the
 * scheduler's rule); it alone uses the end's bell receive state, hup_sent
 * and bufc (besides the close, after qprocsoff).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ustreams.h>

#include "sd_xcross.h"
#include "sd_xpipe.h"

/* ------------------------------------------------------------------------ */
/* Read side                                                                */
/* ------------------------------------------------------------------------ */

/* Messages that entered the pair from the twist before the split pass up. */
int ust_xpipe_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Memory may be there again: run the read service procedure (which forgets
 * the bufcall's id: only it and the close use the id). */
static void rsrv_again(void *arg)
{
    qenable(arg);
}

/* The read service procedure's look again after a run that hit its bound
 * or met the consumer lock held (ust_xpipe_rsrv).  The timer thread runs
 * it, inside no call: it may wait for the lock, within the ring's bounds
 * (xring.h), with a peek that takes nothing.  So a lock a peer keeps is
 * waited out or breaks the ring even while the process makes only
 * non-blocking calls, whose own runs only try it (the queue's next run, on
 * whichever thread, then sees the ring broken: a hang-up).  At most one
 * bounded wait per look, a look per tick at most; close cancels the waits
 * of its side (xring_cancel) before it cancels this timeout. */
static void rsrv_later(void *arg)
{
    queue_t *q = arg;
    struct ust_xend *xe = xp_xend_of(q);
    struct xring_msg m;
    if (xe == NULL)
        return; /* closed meanwhile */
    atomic_store(&xe->rtid, 0);
    (void)xring_peek(xe->xc->ch, !xe->side, &m);
    qenable(q);
}

/* ---- the ring's consumer lock, from a caller's thread: tried only ------ */

/* A run of the read service procedure inside a call (xe->rtry: a
 * non-blocking read or write may be what runs it, ust_sched_in_call) never
 * sleeps on the ring's consumer lock, which a peer may hold: the try forms
 * give -EBUSY at once, having taken nothing, and the run stops with
 * xe->rbusy set; ust_xpipe_rsrv then looks again in a tick from the timer
 * thread, which may wait the ring's bounded time (rsrv_later; xring.h).
 * So a failed try loses and reorders nothing. */
static int rd_peek(struct ust_xend *xe, struct xring_msg *m)
{
    return xe->rtry ? xring_peek_try(xe->xc->ch, !xe->side, m)
                    : xring_peek(xe->xc->ch, !xe->side, m);
}

/* An M_PASSFP record as this library writes it: no bytes, its token in aux
 * (one with bytes is malformed, judged and dropped by sd_xcross.c). */
static int passfp_record(const struct xring_msg *m)
{
    return m->type == M_PASSFP && m->ctl_len == 0 && m->data_len == 0;
}

/* What a take may take when the record peeked (arg) may be gone to
 * another process reading this end (xring_take_batch's filter, under the
 * ring's consumer lock): after an M_PASSFP peeked, only that one (its
 * token), whose descriptor came to this process; after anything else,
 * anything but an M_PASSFP, which is made a message as it is.  An
 * M_PASSFP is taken only by a process that peeked it with its descriptor
 * in hand: taken by another it would be lost (its descriptor is not
 * there), and a record taken by the M_PASSFP's taker would be dropped. */
static int take_same_kind(const struct xring_msg *r, void *arg)
{
    const struct xring_msg *m = arg;
    if (passfp_record(m))
        return passfp_record(r) && r->aux == m->aux;
    return !passfp_record(r);
}

/*
 * rd_take -- take the front record of our ring if take_same_kind allows it
 *   against `want` (the one peeked), its control then data bytes back to
 *   back at buf (cap bytes: a larger record is not taken).
 *   Returns 1 (*got; a doorbell for the writer rung when due), 0 nothing
 *   taken (empty, or the front is another process's to take, or too large:
 *   look again), or what rd_fail takes (-EBUSY, -EIO).
 */
static int rd_take(struct ust_xend *xe, const struct xring_msg *want, struct xring_msg *got,
                   void *buf, size_t cap)
{
    int wake = 0;
    void *w = (void *)(uintptr_t)want;
    int n = xe->rtry ? xring_take_batch_try(xe->xc->ch, !xe->side, got, 1, buf, cap,
                                            take_same_kind, w, &wake)
                     : xring_take_batch(xe->xc->ch, !xe->side, got, 1, buf, cap,
                                        take_same_kind, w, &wake);
    if (n > 0 && wake)
        xp_bell_ring(xe);
    return n;
}

/* A take or peek failed with r (< 0, not "empty" nor "raced"): -EBUSY
 * stops this run (rbusy), anything else is the end of the ring (gone). */
static void rd_fail(struct ust_xend *xe, int r)
{
    if (r == -EBUSY)
        xe->rbusy = 1;
    else
        atomic_store(&xe->gone, 1);
}

/* ---- what this process holds of the far side's records ----------------- */

/* The queue whose counts govern what q sends up: the nearest above with a
 * service procedure that runs (as bcanputnext looks, flow.c), else the
 * last; NULL if none. */
static queue_t *hold_target(queue_t *q)
{
    queue_t *t = ust_qnext(q);
    while (t != NULL) {
        struct qinit *qi = __atomic_load_n(&t->q_qinfo, __ATOMIC_RELAXED);
        if (qi != NULL && qi->qi_srvp != NULL && !(ust_qflags(t) & QPROCSOFF))
            return t;
        queue_t *n = ust_qnext(t);
        if (n == NULL)
            return t;
        t = n;
    }
    return NULL;
}

/*
 * hold_full -- the cap on what the far side makes this process hold
 *   (docs/SECURITY.md): called when xe->up_bytes or up_msgs reached
 *   XP_HOLD_MAX / XP_HOLD_MSGS.  Counts what the queue above holds now
 *   (under its lock: q_count, which is band 0 and high priority, plus every
 *   band's qb_count; its messages up to XP_HOLD_MSGS_LOW).  Below both low
 *   marks: the counters restart from what is held, returns 0 (take on).
 *   Else returns 1 (take nothing more of flow-controlled types): every band
 *   that holds a message, and band 0, is marked wanted, so the reader's
 *   next removal that brings a band to its low-water mark back-enables this
 *   queue (flow.c), and this look is made again then.
 *   Context: the read service procedure, no lock held.  Cost: a walk over
 *   the bands in use and at most XP_HOLD_MSGS_LOW messages, once per
 *   XP_HOLD_MAX - XP_HOLD_LOW bytes or XP_HOLD_MSGS - XP_HOLD_MSGS_LOW
 *   messages sent up (or once per back-enable while full).
 */
static int hold_full(queue_t *q, struct ust_xend *xe)
{
    queue_t *t = hold_target(q);
    if (t == NULL)
        return 0;
    struct ust_qpriv *pv = ust_qpv(t);
    unsigned n = 0;
    ust_lock(&pv->lock);
    size_t bytes = t->q_count;
    for (qband_t *qb = t->q_bandp; qb != NULL; qb = qb->qb_next)
        bytes += qb->qb_count;
    for (mblk_t *mp = t->q_first; mp != NULL && n < XP_HOLD_MSGS_LOW; mp = mp->b_next)
        n++;
    int full = bytes >= XP_HOLD_LOW || n >= XP_HOLD_MSGS_LOW;
    if (full) {
        ust_qflag_set(t, QWANTW);
        for (qband_t *qb = t->q_bandp; qb != NULL; qb = qb->qb_next)
            if (qb->qb_first != NULL)
                qb->qb_flag |= QB_WANTW;
    }
    ust_unlock(&pv->lock);
    if (!full) {
        xe->up_bytes = bytes;
        xe->up_msgs = n;
    }
    return full;
}

/* A message of m's size sent up (flow-controlled types): counted. */
static void hold_add(struct ust_xend *xe, const struct xring_msg *m)
{
    xe->up_bytes += (size_t)m->ctl_len + m->data_len;
    xe->up_msgs++;
}

/* The message the record m describes, with room for its bytes (not yet
 * copied), or NULL when out of memory.  Its type is the far side's word:
 * once the bytes are in, ust_xcross_in (sd_xcross.c) judges every type but
 * M_DATA of ordinary size before it goes up. */
static mblk_t *record_msg(const struct xring_msg *m)
{
    mblk_t *c = NULL, *d = NULL;

    if (m->ctl_len > 0 || m->type != M_DATA) {
        c = allocb(m->ctl_len, BPRI_MED);
        if (c == NULL)
            return NULL;
        c->b_datap->db_type = m->type;
    }
    if ((m->flags & XF_DATA) || c == NULL) {
        d = allocb(m->data_len, BPRI_MED);
        if (d == NULL) {
            freeb(c);
            return NULL;
        }
    }
    if (c == NULL)
        c = d;
    else
        c->b_cont = d;
    c->b_band = m->band;
    return c;
}

/* mp = record_msg(got): its bytes copied from raw, where a take put them
 * back to back (control, then data), its write pointers past them. */
static void record_fill(mblk_t *mp, const struct xring_msg *got, const unsigned char *raw)
{
    int has_c = got->ctl_len > 0 || got->type != M_DATA; /* as record_msg */
    mblk_t *c = has_c ? mp : NULL;
    mblk_t *d = has_c ? mp->b_cont : mp;
    if (c != NULL && got->ctl_len > 0) {
        memcpy(c->b_wptr, raw, got->ctl_len);
        c->b_wptr += got->ctl_len;
    }
    if (d != NULL && got->data_len > 0) {
        memcpy(d->b_wptr, raw + got->ctl_len, got->data_len);
        d->b_wptr += got->data_len;
    }
}

/* The message of a record taken (got, its bytes at raw), made now: it is
 * this process's, and waits for memory rather than be lost. */
static mblk_t *record_made(const struct xring_msg *got, const unsigned char *raw)
{
    mblk_t *mp;
    while ((mp = record_msg(got)) == NULL) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    record_fill(mp, got, raw);
    return mp;
}

/* The next record, an M_PASSFP described by m: its descriptor comes on the
 * bell (sd_xbell.c) under the token m->aux.  1 taken (*out), 2 dropped (the
 * sender could not pass it, or it will never come), -1 not yet (the bell
 * will ring when it comes) or out of memory. */
/* Take the bell's descriptor for token (draining the bell once if it has
 * not come yet): 1 and *fd (-1: cancelled, or its sender died), or 0 when
 * it is still to come. */
static int bell_fd(struct ust_xend *xe, uint32_t token, int *fd, uid_t *uid, gid_t *gid)
{
    if (ust_xbell_take(&xe->bell, token, fd, uid, gid))
        return 1;
    xp_bell_drain(xe);
    if (ust_xbell_take(&xe->bell, token, fd, uid, gid))
        return 1;
    if (!atomic_load(&xe->gone))
        return 0;
    *fd = -1; /* its sender died between the record and the bell */
    return 1;
}

/* A stream passed from another process (sd_xpipe.c sendfd_stream): its pipe
 * end adopted from the two descriptors, as an M_PASSFP of a stream of ours
 * with the access mode it was sent with.  NULL (both closed) when it cannot
 * be made: the sender's relay then sees its pipe end hang up. */
static mblk_t *stream_received(const struct xring_msg *m, int mfd, int bfd, uid_t uid, gid_t gid)
{
    if (mfd < 0 || bfd < 0) {
        if (mfd >= 0)
            close(mfd);
        if (bfd >= 0)
            close(bfd);
        return NULL;
    }
    int fd = ust_xpipe_adopt(mfd, bfd, 1, NULL);
    close(mfd); /* the channel keeps its own */
    if (fd < 0)
        return NULL;
    ust_sd_acc_set(fd, (m->flags >> 8) & 3);
    mblk_t *mp = ust_passfp_stream(fd, uid, gid);
    struct stdata *sd = ust_sd_peek(fd);
    if (sd != NULL) /* the descriptor goes, the message holds the stream */
        ust_sd_fork_close(fd, sd);
    return mp;
}

static int passfp_take(queue_t *q, struct ust_xend *xe, const struct xring_msg *m, mblk_t **out)
{
    int fd, bfd = -1;
    uid_t uid, buid;
    gid_t gid, bgid;
    struct xring_msg got;
    int stream = (m->flags & XP_PASS_STREAM) != 0;

    if (!bell_fd(xe, m->aux, &fd, &uid, &gid))
        return -1;
    if (stream && fd >= 0 && !bell_fd(xe, m->aux ^ XP_PASS_BELL, &bfd, &buid, &bgid)) {
        ust_xbell_unget(&xe->bell, m->aux, fd, uid, gid);
        return -1;
    }
    mblk_t *mp = fd >= 0 && !stream ? ust_passfp_received(fd, uid, gid) : NULL;
    if (fd >= 0 && !stream && mp == NULL) {
        ust_xbell_unget(&xe->bell, m->aux, fd, uid, gid);
        if (xe->bufc == 0)
            xe->bufc = qbufcall(q, 64, BPRI_MED, rsrv_again, q);
        return -1;
    }
    int r = rd_take(xe, m, &got, NULL, 0);
    if (r <= 0) {
        /* Another process took it, or the ring changed: nothing taken (a
         * zero-length record behind it stays for its reader); the
         * descriptors wait for the record that names them (or the close). */
        if (mp != NULL)
            fd = ust_passfp_release_fd(mp);
        if (fd >= 0)
            ust_xbell_unget(&xe->bell, m->aux, fd, uid, gid);
        if (bfd >= 0)
            ust_xbell_unget(&xe->bell, m->aux ^ XP_PASS_BELL, bfd, buid, bgid);
        if (r == -EBUSY) {
            xe->rbusy = 1; /* nothing taken: the descriptors wait, as above */
            return -1;
        }
        if (r < 0)
            atomic_store(&xe->gone, 1);
        return r == 0 ? 2 : 0;
    }
    if (stream && fd >= 0)
        mp = stream_received(m, fd, bfd, uid, gid); /* out of memory: lost, said above */
    if (mp == NULL)
        return 2;
    *out = mp;
    return 1;
}

/* A small record taken (got, its data bytes at buf) goes up: when the head
 * is right above, deposited among its arrivals (sd_arrive.c), where small
 * writes share a block and keep their boundaries -- as the writes of an
 * in-process pipe do; else (or when the head takes no deposit now) as a
 * message of its own.  *dp is the path to the head (valid 0: none); a plain
 * record needs one.  1 made a message (*out), 2 deposited or dropped. */
static int small_up(struct ust_xend *xe, const struct ust_sd_dpath *dp,
                    const struct xring_msg *got, unsigned char *buf, mblk_t **out)
{
    mblk_t *mp;
    int plain = got->type == M_DATA && got->band == 0 && got->flags == XF_DATA &&
                got->data_len > 0;

    if (plain && dp->valid) {
        struct iovec iov = {buf, got->data_len};
        struct ust_sd_uio u = {.iov = &iov, .iovcnt = 1, .idx = 1, .cur = iov};
        mblk_t *built = NULL;
        int d = ust_sd_deposit(dp, &u, got->data_len, &built);
        if (d == 1)
            return 2;
        if (d == 2) {
            *out = built;
            return 1;
        }
    }
    /* Taken already (its control bytes, if any, before its data in buf):
     * it waits for memory rather than be lost. */
    mp = record_made(got, buf);
    if (got->type != M_DATA && (mp = ust_xcross_in(xe, got, mp)) == NULL)
        return 2; /* refused (sd_xcross.c) */
    *out = mp;
    return 1;
}

/* The deposit path to the head right above q, if q leads to one. */
static void head_path(queue_t *q, struct ust_sd_dpath *dp)
{
    /* The generation first: a change while the link is read moves it, and
     * the deposit's check under the arrival lock then refuses the path. */
    unsigned long gen = ust_plumb_gen_now();
    queue_t *hq = ust_qnext(q);

    memset(dp, 0, sizeof(*dp));
    if (hq != NULL && (ust_qflags(hq) & (QHEAD | QREADR)) == (QHEAD | QREADR) &&
        hq->q_ptr != NULL) {
        dp->q = hq;
        dp->rsd = hq->q_ptr;
        dp->gen = gen;
        dp->valid = 1;
    }
}

/* The next record, peeked as a small M_DATA: taken through a buffer on the
 * stack, then up (small_up).  1 taken as a message (*out), 2 deposited (or
 * nothing taken: look again), 0 trouble (gone set).  The record taken may
 * not be the one peeked when another process takes from the ring too: it
 * is then made a message as it is. */
static int small_take(queue_t *q, struct ust_xend *xe, const struct xring_msg *m, mblk_t **out)
{
    unsigned char buf[XP_SMALL];
    struct xring_msg got;
    struct ust_sd_dpath dp;

    int r = rd_take(xe, m, &got, buf, sizeof(buf));
    if (r == 0)
        return 2; /* another process took the one peeked: look again */
    if (r < 0) {
        rd_fail(xe, r);
        return 0;
    }
    head_path(q, &dp);
    return small_up(xe, &dp, &got, buf, out);
}

/* xring_take_batch's filter: plain small data records only (under the
 * ring's consumer lock: looks at the description alone). */
static int small_plain(const struct xring_msg *m, void *arg)
{
    (void)arg;
    return m->type == M_DATA && m->ctl_len == 0 && m->band == 0 && m->flags == XF_DATA &&
           m->data_len > 0 && m->data_len <= XP_SMALL;
}

/*
 * small_batch -- take the small plain data records at the front of the
 *   ring in batches (one hold of the ring's consumer lock and one store of
 *   its head for up to XP_BATCH of them) and send them up in order, as
 *   small_take does one.  Flow control is looked at once per batch: the
 *   stream above may get up to a batch (XP_BATCH_BYTES) beyond its high
 *   water mark, as two racing writers overshoot canput by a message each.
 *   Returns the records taken (0: none such at the front, or blocked
 *   upstream: the caller looks at the next record itself), -1 trouble (gone
 *   set).
 */
static int small_batch(queue_t *q, struct ust_xend *xe)
{
    unsigned char buf[XP_BATCH_BYTES];
    struct xring_msg ms[XP_BATCH];
    struct ust_sd_dpath dp;
    mblk_t *mp;
    int wake;

    if (!bcanputnext(q, 0))
        return 0;
    int n = xe->rtry ? xring_take_batch_try(xe->xc->ch, !xe->side, ms, XP_BATCH, buf,
                                            sizeof(buf), small_plain, NULL, &wake)
                     : xring_take_batch(xe->xc->ch, !xe->side, ms, XP_BATCH, buf, sizeof(buf),
                                        small_plain, NULL, &wake);
    if (n <= 0) {
        if (n < 0)
            rd_fail(xe, n);
        return n < 0 ? -1 : 0;
    }
    if (wake)
        xp_bell_ring(xe);
    head_path(q, &dp);
    struct iovec w[XP_BATCH];
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        w[i].iov_base = buf + off;
        w[i].iov_len = ms[i].data_len;
        off += ms[i].data_len;
    }
    /* As many as fit in the head's last block at one hold of its arrival
     * lock; the one that does not starts a block (small_up), and so on. */
    for (int i = 0; i < n; i++) {
        if (dp.valid) {
            i += ust_sd_deposit_many(&dp, &w[i], n - i);
            if (i == n)
                break;
        }
        if (small_up(xe, &dp, &ms[i], w[i].iov_base, &mp) == 1)
            putnext(q, mp);
    }
    return n;
}

/* Look again in a tick (rsrv_later), unless that is pending already. */
static void rsrv_tick(queue_t *q, struct ust_xend *xe)
{
    if (atomic_load(&xe->rtid) == 0)
        atomic_store(&xe->rtid, qtimeout(q, rsrv_later, q, 1));
}

/*
 * record_msg_raw -- record_msg for a take of m: the bytes land back to
 *   back at *raw (control, then data: rd_take), in place when the message
 *   has one block; with both a control and a data block, the data block
 *   has room for the control bytes in front of its read pointer, whence
 *   raw_done copies them: the data, the large part, is copied once.
 *   NULL when out of memory.
 */
static mblk_t *record_msg_raw(const struct xring_msg *m, unsigned char **raw)
{
    int has_c = m->ctl_len > 0 || m->type != M_DATA; /* as record_msg */
    int has_d = (m->flags & XF_DATA) || !has_c;
    mblk_t *c = NULL, *d = NULL;
    if (has_d) {
        d = allocb((size_t)m->ctl_len + m->data_len, BPRI_MED);
        if (d == NULL)
            return NULL;
        *raw = d->b_wptr;
        d->b_rptr += m->ctl_len;
        d->b_wptr = d->b_rptr;
    }
    if (has_c) {
        c = allocb(m->ctl_len, BPRI_MED);
        if (c == NULL) {
            freeb(d);
            return NULL;
        }
        c->b_datap->db_type = m->type;
        c->b_cont = d;
        if (d == NULL)
            *raw = c->b_wptr;
    }
    mblk_t *mp = c != NULL ? c : d;
    mp->b_band = m->band;
    return mp;
}

/* The take of m into record_msg_raw's mp is done: pointers past the bytes
 * (the control bytes copied from the data block's front, if both). */
static void raw_done(mblk_t *mp, const struct xring_msg *m, const unsigned char *raw)
{
    int has_c = m->ctl_len > 0 || m->type != M_DATA;
    mblk_t *c = has_c ? mp : NULL;
    mblk_t *d = has_c ? mp->b_cont : mp;
    if (c != NULL && d != NULL && m->ctl_len > 0)
        memcpy(c->b_wptr, raw, m->ctl_len);
    if (c != NULL)
        c->b_wptr += m->ctl_len;
    if (d != NULL)
        d->b_wptr += m->data_len;
}

/* Take the next record into a message: 1 taken (*out), 0 none now, -1
 * blocked upstream or out of memory (the caller stops). */
static int record_take(queue_t *q, struct ust_xend *xe, mblk_t **out)
{
    struct xring_msg m, got;

    /* Bounded: a peer rewriting the record between peek and take makes
     * every round a race; after XP_TAKE_TRIES of them, "none now" (the
     * read service procedure's own bound then applies). */
    for (int tries = 0; tries < XP_TAKE_TRIES; tries++) {
        int r = rd_peek(xe, &m);
        if (r <= 0) {
            if (r < 0)
                rd_fail(xe, r);
            return 0;
        }
        if (m.type < QPCTL && !bcanputnext(q, m.band))
            return -1;
        /* The cap on all bands together (hold_full): a counter compare per
         * record until it is reached.  High-priority messages are not held
         * by it: the head keeps one M_PCPROTO, the rest act and are freed
         * (an M_FLUSH must get through to empty what is held). */
        if (m.type < QPCTL && (xe->up_bytes >= XP_HOLD_MAX || xe->up_msgs >= XP_HOLD_MSGS) &&
            hold_full(q, xe))
            return -1;
        /* An M_PASSFP record has no bytes; one with bytes is malformed (taken
         * without buffers it would never be taken, and looked at for ever):
         * it goes the general way, to be dropped (sd_xcross.c). */
        if (m.type == M_PASSFP && m.ctl_len == 0 && m.data_len == 0) {
            r = passfp_take(q, xe, &m, out);
            if (r == 1)
                hold_add(xe, &m);
            if (r != 2)
                return r;
            continue; /* a cancelled one: dropped */
        }
        if (m.type == M_DATA && m.ctl_len == 0 && m.band == 0 && m.flags == XF_DATA &&
            m.data_len > 0 && m.data_len <= XP_SMALL) {
            r = small_take(q, xe, &m, out);
            if (r == 1)
                hold_add(xe, &m);
            if (r != 2)
                return r;
            continue;
        }
        unsigned char *raw = NULL;
        mblk_t *mp = record_msg_raw(&m, &raw);
        if (mp == NULL) {
            if (xe->bufc == 0)
                xe->bufc = qbufcall(q, m.ctl_len + m.data_len, BPRI_MED, rsrv_again, q);
            return -1;
        }
        r = rd_take(xe, &m, &got, raw, (size_t)m.ctl_len + m.data_len);
        if (r <= 0) {
            freemsg(mp); /* nothing taken */
            if (r == 0)
                continue; /* another process took or changed it: look again */
            rd_fail(xe, r);
            return 0;
        }
        if (got.ctl_len != m.ctl_len || got.data_len != m.data_len || got.type != m.type ||
            got.flags != m.flags || got.band != m.band) {
            /* Another process took the one peeked, and we took the next
             * (never an M_PASSFP: rd_take), which fitted our buffer: it is
             * ours now, made a message as it is (dropping it would lose it
             * for every reader). */
            mblk_t *g = record_made(&got, raw);
            freemsg(mp);
            mp = g;
            m = got;
        } else {
            raw_done(mp, &m, raw);
        }
        /* The one look at what the far side may cause here: data passes
         * at the cost of this test (sd_xcross.c has the table). */
        if ((m.type != M_DATA || m.ctl_len + m.data_len > XC_MSG_MAX) &&
            (mp = ust_xcross_in(xe, &got, mp)) == NULL)
            continue; /* refused and counted */
        if (m.type < QPCTL)
            hold_add(xe, &m);
        *out = mp;
        return 1;
    }
    return 0;
}

/* Send M_HANGUP up, once (a bufcall retries when out of memory). */
static void hangup_up(queue_t *q, struct ust_xend *xe)
{
    if (xe->hup_sent)
        return;
    if (putnextctl(q, M_HANGUP))
        xe->hup_sent = 1;
    else if (xe->bufc == 0)
        xe->bufc = qbufcall(q, 0, BPRI_HI, rsrv_again, q);
}

/* 1 if the bell shows every process of the other side gone (hang-up),
 * without reading it: the bytes stay for the processes they are for. */
static int bell_hung_up(const struct ust_xend *xe)
{
    struct pollfd p = {xe->bell.fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

/*
 * rsrv_idle -- the read service procedure of an end this process does not
 *   read (not live: "Who takes" in sd_xpipe.c).  It takes nothing; when
 *   this process's writers wait for room (xp_writers_wait) the write queue
 *   is enabled (the bell protocol, sd_xpipe_write.c, step 4).  A channel
 *   with a wake pair has its doorbells there, where nobody consumes them
 *   (sd_xbell.c "Doorbells"): the bell is left alone.  One without (made
 *   for another process) has them on the bell: they are consumed only when
 *   this process's writers wait (then the byte may be theirs); otherwise
 *   left to the processes that read this end.  The other
 *   side gone (the bell hung up, the ring broken): writes fail from now
 *   on, and M_HANGUP goes up once nothing is left in the ring for us (what
 *   is there is for whoever reads it; this end, if it is read later, takes
 *   it first and then hangs up).
 */
static int rsrv_idle(queue_t *q, struct ust_xend *xe)
{
    xe->bufc = 0;
    if (xp_writers_wait(xe) && !xp_has_wake(xe)) {
        xp_bell_drain(xe);
        qenable(WR(q));
    } else if (xp_writers_wait(xe)) {
        /* A wake pair: doorbells are not on the bell, nobody consumes them;
         * the bell is left to this end's readers (its 'F' messages). */
        qenable(WR(q));
        if (!atomic_load(&xe->gone) && bell_hung_up(xe))
            atomic_store(&xe->gone, 1);
    } else if (!atomic_load(&xe->gone) && bell_hung_up(xe)) {
        atomic_store(&xe->gone, 1);
    }
    if (atomic_load(&xe->gone) && xring_queued(xe->xc->ch, !xe->side) == 0)
        hangup_up(q, xe);
    return 0;
}

/*
 * ust_xpipe_rsrv -- the pipe pair's read service procedure (split ends):
 *   enabled by the bell (epoll thread), by back-enabling, and after the
 *   split.  Takes what rang, wakes our own write side if it waits for room,
 *   then moves records up while the stream above takes them; an empty ring
 *   is armed before leaving.  Once the peer side is gone and its ring
 *   empty, M_HANGUP goes up (once).
 */
static int rsrv_live(queue_t *q, struct ust_xend *xe);

int ust_xpipe_rsrv(queue_t *q)
{
    struct ust_xend *xe = xp_xend_of(q);

    if (xe == NULL)
        return 0;
    if (!atomic_load(&xe->live))
        return rsrv_idle(q, xe);
    /* A direct reader copying from the ring (sd_xpipe_direct.c) enables
     * this queue again when it is done: nothing moves up meanwhile. */
    if (!xp_rsrv_claim(xe))
        return 0;
    int r = rsrv_live(q, xe);
    xp_rsrv_unclaim(q, xe);
    return r;
}

/* The run of a live end's read service procedure, under the claim. */
static int rsrv_live(queue_t *q, struct ust_xend *xe)
{
    mblk_t *mp;

    xe->bufc = 0; /* a bufcall that was pending has fired, or this run does its work */
    xe->rtry = ust_sched_in_call();
    xe->rbusy = 0;
    xp_bell_drain(xe);
    if (xp_writers_wait(xe)) /* our writes wait for room: maybe there is some */
        qenable(WR(q));
    for (int idle = 0;;) {
        /* A direct reader wants the ring (sd_xpipe_direct.c): it takes the
         * rest itself; a look again in a tick in case it went away. */
        if (atomic_load_explicit(&xe->dwant, memory_order_relaxed) &&
            atomic_exchange(&xe->dwant, 0)) {
            xp_direct_wake(q, xe, 1);
            rsrv_tick(q, xe);
            return 0;
        }
        /* A direct reader asleep: woken, it takes what came itself. */
        if (xp_direct_wake(q, xe, 0)) {
            rsrv_tick(q, xe);
            return 0;
        }
        int b = small_batch(q, xe);
        if (b < 0)
            break;
        if (b > 0)
            continue;
        int r = record_take(q, xe, &mp);
        if (r < 0 && !xe->rbusy)
            return 0;
        if (r == 1) {
            putnext(q, mp);
            continue;
        }
        if (xe->rbusy || atomic_load(&xe->gone))
            break;
        if (atomic_load(&xe->readers) > 0)
            return 0; /* a reader watches the ring: no doorbell while it does */
        int a = xring_arm_reader(xe->xc->ch, !xe->side);
        if (a == 0)
            return 0;
        if (a < 0) {
            atomic_store(&xe->gone, 1);
            break;
        }
        /* "Need not sleep", yet nothing was taken.  A shut ring (only a
         * peer writes x_shut: this library never shuts one) that is empty
         * is a hang-up, once.  Otherwise a racing consumer took it, or a
         * peer is playing with the ring's words: after XP_RSRV_ROUNDS such
         * rounds, look again in a tick rather than spin. */
        if (xring_is_shut(xe->xc->ch, !xe->side) && xring_queued(xe->xc->ch, !xe->side) == 0) {
            atomic_store(&xe->gone, 1);
            break;
        }
        if (++idle >= XP_RSRV_ROUNDS) {
            rsrv_tick(q, xe);
            return 0;
        }
    }
    if (xe->rbusy && !atomic_load(&xe->gone)) {
        /* The consumer lock was held (a try, inside a call): nothing was
         * taken; the timer thread's run may wait for it (bounded). */
        rsrv_tick(q, xe);
        return 0;
    }
    hangup_up(q, xe);
    return 0;
}
