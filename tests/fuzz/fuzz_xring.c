/* SPDX-License-Identifier: MIT */
/*
 * fuzz_xring.c -- fuzz target: the shared-memory message rings
 * (src/procs/xring.c) against a peer that writes anything into the mapping.
 *
 * Each input makes a fresh channel (ring size and water marks from its first
 * byte), maps the memfd a second time as the "peer", and runs a sequence of
 * operations:
 *   the peer writes: a word anywhere in the mapping (header page or data
 *     areas); a chosen control field of a ring (tail, head, lock words,
 *     arming words, bell, shut, broken) set to a value or to the other index
 *     plus a delta; a record header at head or anywhere; raw bytes;
 *   this process calls: xring_put (lengths 0..5000 in up to three iovecs,
 *     any type, band, flags, aux), xring_put_begin + the caller's copy into
 *     the pieces it returns (whole or cut short, perhaps with a peer write in
 *     between) + xring_put_end (commit or abandon), xring_peek, xring_take
 *     (buffers of fuzzed capacity, each its own malloc so that ASan sees an
 *     overflow), xring_take_batch (0..69 records or -1, a buffer of fuzzed
 *     capacity, an accept that takes all, takes sd_xpipe_read.c's small plain
 *     records, stops after k, or answers from the input; one in three is
 *     xring_take_copy instead, copying each body into the same buffer, with
 *     the same expectations); one put, peek,
 *     take or take_batch in four is the _try form, which never sleeps on a
 *     held lock word;
 *     xring_arm_reader/_writer, xring_queued, xring_is_shut, xring_broken,
 *     xring_bell_value, xring_ring, xring_wait (no timeout: 0 ms),
 *     xring_shut; attaching a second handle to the (scribbled) memfd and
 *     using it, or destroying it.
 * Every result must be one the contract allows, and what is returned must be
 * consistent (lengths within the caps and XRING_MSG_MAX, queued within the
 * ring); otherwise abort().  The calls are single-threaded, so for put, peek,
 * take, take_batch and put_begin the target works out from the mapping as it
 * was before the call what the call must do (an independent reading of
 * xring_layout.h: which record is at head, valid or not, whether it fits,
 * and which head a producer goes by: its own last put's while nobody else
 * has put since and that shows room, else the consumer's)
 * and checks the result exactly: the return value, the descriptions, the
 * bytes copied out against the ring's, head and tail moved by exactly the
 * records taken or put (not at all on failure), no lock word left held, a
 * -EIO (ring broken) sticky on that handle.  put_begin's pieces must add up
 * to the body asked for, and the caller's copy into them must land exactly
 * after the record's header in the ring and nowhere else in the mapping.
 *
 * A hostile peer: any value in any control word at any moment between
 * operations (and between put_begin and put_end) -- lock words included,
 * with live pids (ours, 1, our parent's), an impossible pid, the waiters
 * bit; x_shut, the arming words, head, tail.  The library's time bounds are
 * shortened for the run (xring_test_bounds: slice 1 ms, dead 2, hold 3,
 * wait 6), so a lock held by a live pid costs a few ms and breaks the ring
 * (-EIO), a _try call (put, put_begin, peek, take, take_batch) meets it
 * with -EBUSY -- having changed nothing in the mapping, not even the lock
 * word -- and a cancelled side (xring_cancel) with -ECANCELED; an
 * impossible pid is -EIO at once for both forms.  Every call must return within
 * FZ_STEPS rounds of xring.c's loops over shared words (xring_test_steps)
 * and FZ_CALL_MS of wall time.  Sometimes the peer's descriptor
 * (xring_set_peer) is a socket whose other end is closed: the peer gone.
 * No stream is involved, so fz_end_of_input (blocks, quiescence) is not
 * called; the channel's mappings and descriptors are released after each
 * input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_decode.h"
#include "fuzz_xring_model.h"

/* A value for a control word: anything, or one that means something to a
 * lock word (live pids: ours, 1, our parent's; an impossible pid; the
 * waiters bit) or an arming word. */
static uint32_t fx_value(struct fz *z)
{
    switch (fz_pick(z, 10)) {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
        return (uint32_t)getpid();
    case 3:
        return (uint32_t)getppid() | (fz_pick(z, 2) ? XRING_LOCK_WAITERS : 0);
    case 4:
        return FZ_DEAD_PID;
    case 5:
        return XRING_LOCK_WAITERS;
    case 6:
        return 0xffffu;
    default:
        return fz_u32(z);
    }
}

static uint32_t *fx_field(struct fx *x, int d, unsigned which)
{
    struct xring_ctl *c = &((struct xring_hdr *)x->map)->h_ring[d];
    uint32_t *f[] = {&c->x_tail,     &c->x_head, &c->x_plock, &c->x_clock, &c->x_rd_armed,
                     &c->x_wr_armed, &c->x_bell, &c->x_shut,  &c->x_broken};
    return f[which % (sizeof(f) / sizeof(f[0]))];
}

static void fx_poke(struct fx *x, struct fz *z)
{
    struct xring_hdr *h = (struct xring_hdr *)x->map;
    int d = (int)fz_pick(z, 2);
    switch (fz_pick(z, 6)) {
    case 0: { /* a word anywhere */
        size_t off = (size_t)fz_u16(z) * 4 % x->len;
        uint32_t v = fz_u32(z);
        memcpy(x->map + off, &v, 4);
        break;
    }
    case 1: { /* a control field := value */
        uint32_t *f = fx_field(x, d, fz_u8(z));
        __atomic_store_n(f, fx_value(z), __ATOMIC_RELAXED);
        break;
    }
    case 2: { /* tail := head + delta, or head := tail - delta */
        int32_t delta = (int32_t)(int16_t)fz_u16(z);
        if (fz_pick(z, 2) == 0)
            delta &= ~7;
        struct xring_ctl *c = &h->h_ring[d];
        if (fz_pick(z, 2))
            c->x_tail = c->x_head + (uint32_t)delta;
        else
            c->x_head = c->x_tail - (uint32_t)delta;
        break;
    }
    case 3: { /* a record header at head (or at an offset from it) */
        struct xring_rec r;
        uint32_t at = h->h_ring[d].x_head + (fz_pick(z, 2) ? fz_u16(z) : 0);
        r.r_ctl_len = fz_pick(z, 2) ? fz_u16(z) : fz_u32(z);
        r.r_data_len = fz_pick(z, 2) ? fz_u16(z) : fz_u32(z);
        r.r_len = fz_pick(z, 2) ? (uint32_t)xring_reclen((uint64_t)r.r_ctl_len + r.r_data_len)
                                : fz_u32(z);
        r.r_type = fz_u8(z);
        r.r_band = fz_u8(z);
        r.r_flags = fz_u16(z);
        r.r_aux = fz_u32(z);
        r.r_zero = fz_pick(z, 8) ? 0 : fz_u32(z);
        unsigned char *base = x->map + XRING_HDR_BYTES + (size_t)d * x->size;
        for (size_t i = 0; i < sizeof(r); i++) /* wrapping, as the ring does */
            base[(at + i) & (x->size - 1)] = ((unsigned char *)&r)[i];
        break;
    }
    case 4: { /* raw bytes into a data area */
        unsigned char b[64];
        size_t n = fz_bytes(z, b, fz_pick(z, sizeof(b) + 1));
        uint32_t at = fz_u16(z);
        unsigned char *base = x->map + XRING_HDR_BYTES + (size_t)d * x->size;
        for (size_t i = 0; i < n; i++)
            base[(at + i) & (x->size - 1)] = b[i];
        break;
    }
    default: { /* the lock words: mostly free or waiters only, else any value */
        uint32_t *w = fx_field(x, d, 2 + fz_pick(z, 2));
        *w = fz_pick(z, 4) == 0 ? fx_value(z) : fz_pick(z, 2) ? XRING_LOCK_WAITERS : 0;
        break;
    }
    }
}

static void fx_put(struct fx *x, struct xring_chan *ch, int hi, int d, struct fz *z)
{
    static unsigned char buf[3 * FZ_MAXLEN];
    struct xring_msg m;
    struct iovec iov[3];
    int n = (int)fz_pick(z, 4);
    size_t total = 0;

    for (int i = 0; i < n; i++) {
        iov[i].iov_base = buf + total;
        iov[i].iov_len = fz_u16(z) % (FZ_MAXLEN + 1);
        memset(iov[i].iov_base, fz_u8(z), iov[i].iov_len);
        total += iov[i].iov_len;
    }
    m.type = fz_u8(z);
    m.band = fz_u8(z);
    m.flags = fz_u16(z);
    m.aux = fz_u32(z);
    m.ctl_len = (uint32_t)(total ? fz_u16(z) % (total + 1) : 0);
    m.data_len = (uint32_t)total - m.ctl_len;
    int lie = fz_pick(z, 16) == 0;
    if (lie)
        m.data_len += 1; /* a lie: -EINVAL */
    uint32_t used = 0;
    int nowait = fz_pick(z, 4) == 0;
    int want = lie ? -EINVAL : fx_expect_put(x, ch, hi, d, &m, &used, nowait);
    uint32_t tail = fx_ld(&fx_ctl(x, d)->x_tail);
    memcpy(fx_snap, x->map, x->len);
    int rc = nowait ? xring_put_try(ch, d, &m, iov, n) : xring_put(ch, d, &m, iov, n);
    if (rc == -EBUSY)
        fx_busy_unchanged(x, "put_try");
    if (rc != 0 && rc != XRING_WAKE_READER && rc != -EAGAIN && rc != -EMSGSIZE && rc != -EPIPE &&
        rc != -EIO && rc != -EINVAL && rc != -EBUSY && rc != -ECANCELED)
        fx_fail("put", rc);
    if ((rc >= 0 ? 0 : rc) != want)
        fx_fail("put: not the expected result", rc);
    uint32_t now = fx_ld(&fx_ctl(x, d)->x_tail);
    if (rc >= 0) {
        struct xring_rec r = fx_rec_of(&m), got;
        fx_ring_get(x, d, tail, &got, sizeof(got));
        if (now != tail + r.r_len || memcmp(&got, &r, sizeof(r)) != 0 ||
            !fx_bytes_eq(x, d, tail + sizeof(r), buf, total))
            fx_fail("put: record not as given", rc);
        fx_seen(x, hi, d, now, used);
    } else if (now != tail) {
        fx_fail("put: failed, but tail moved", rc);
    }
    fx_after(x, ch, hi, d, rc);
}

/*
 * xring_put_begin, the caller's copy, xring_put_end.  The target reads the
 * tail before begin; the header must be there, the pieces must add up to
 * the body and the copy into them must land right after the header, with
 * nothing else in the mapping changed.  Sometimes the copy stops short (a
 * fault in the caller's buffer), sometimes the peer writes in between.
 */
static void fx_put_inplace(struct fx *x, struct xring_chan *ch, int hi, int d, struct fz *z)
{
    struct xring_msg m;
    struct xring_wr w;

    m.ctl_len = fz_pick(z, 32) == 0 ? fz_u32(z) : fz_u16(z) % (FZ_MAXLEN + 1);
    m.data_len = fz_pick(z, 32) == 0 ? fz_u32(z) : fz_u16(z) % (FZ_MAXLEN + 1);
    m.type = fz_u8(z);
    m.band = fz_u8(z);
    m.flags = fz_u16(z);
    m.aux = fz_u32(z);
    uint32_t used = 0;
    int nowait = fz_pick(z, 4) == 0;
    int want = fx_expect_put(x, ch, hi, d, &m, &used, nowait);
    struct xring_ctl *c = fx_ctl(x, d);
    uint32_t tail = fx_ld(&c->x_tail);
    memcpy(fx_snap, x->map, x->len);
    int rc = nowait ? xring_put_begin_try(ch, d, &m, &w) : xring_put_begin(ch, d, &m, &w);
    if (rc != want)
        fx_fail("put_begin: not the expected result", rc);
    if (rc == -EBUSY)
        fx_busy_unchanged(x, "put_begin_try");
    if (rc != 0) {
        if (fx_ld(&c->x_tail) != tail)
            fx_fail("put_begin: failed, but tail moved", rc);
        fx_after(x, ch, hi, d, rc);
        return;
    }
    /* Held now: the producer lock is ours. */
    if ((fx_ld(&c->x_plock) & XRING_LOCK_PID) != ((uint32_t)getpid() & XRING_LOCK_PID))
        fx_fail("put_begin: producer lock not held", (long)fx_ld(&c->x_plock));
    size_t body = (size_t)m.ctl_len + m.data_len;
    if (w.seg[0].iov_len > x->size || w.seg[1].iov_len > x->size ||
        w.seg[0].iov_len + w.seg[1].iov_len != body || (body > 0 && w.seg[0].iov_len == 0) ||
        (w.seg[0].iov_len > 0 && !w.seg[0].iov_base) || (w.seg[1].iov_len > 0 && !w.seg[1].iov_base))
        fx_fail("put_begin: pieces", (long)(w.seg[0].iov_len + w.seg[1].iov_len));
    struct xring_rec r = fx_rec_of(&m);
    fx_snap_put(x, fx_snap, d, tail, &r, sizeof(r));
    ((struct xring_hdr *)fx_snap)->h_ring[d].x_plock = fx_ld(&c->x_plock);
    fx_snap_check(x, fx_snap, d, "put_begin: mapping changed beyond the header");

    /* The caller's copy: whole, or stopped short. */
    size_t n = fz_pick(z, 4) == 0 ? (body ? fz_u16(z) % (body + 1) : 0) : body;
    unsigned char fill = fz_u8(z);
    for (size_t i = 0, s = 0, at = 0; i < n; i++, at++) {
        if (at == w.seg[s].iov_len) {
            s++;
            at = 0;
        }
        ((unsigned char *)w.seg[s].iov_base)[at] = (unsigned char)(fill + i);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)(fill + i);
        fx_snap_put(x, fx_snap, d, tail + (uint32_t)sizeof(r) + (uint32_t)i, &b, 1);
    }
    fx_snap_check(x, fx_snap, d, "put_begin: the copy landed elsewhere");

    int poked = fz_pick(z, 8) == 0;
    if (poked) {
        fx_poke(x, z); /* the peer, while the record is being written */
        /* What the peer wrote into the lock words is the peer's (our pid
         * included), but for the producer lock we hold: put_end frees it. */
        for (int r = 0; r < 2; r++) {
            if (r != d)
                x->pre_lock[r][0] = fx_ld(&fx_ctl(x, r)->x_plock);
            x->pre_lock[r][1] = fx_ld(&fx_ctl(x, r)->x_clock);
        }
    }
    int commit = fz_pick(z, 4) != 0;
    rc = xring_put_end(ch, &w, commit);
    if (commit ? (rc != 0 && rc != XRING_WAKE_READER) : rc != 0)
        fx_fail("put_end", rc);
    if (commit)
        fx_seen(x, hi, d, tail + r.r_len, used);
    if (!poked) {
        uint32_t now = fx_ld(&c->x_tail);
        if (now != (commit ? tail + r.r_len : tail))
            fx_fail(commit ? "put_end: tail not past the record" : "put_end: abandon moved tail",
                    (long)(now - tail));
    }
    fx_after(x, ch, hi, d, rc);
}

static void fx_take(struct fx *x, struct xring_chan *ch, int hi, int d, struct fz *z)
{
    struct xring_msg pm, m;
    struct xring_rec r;
    uint32_t h, q;

    /* peek: -EIO, 0 (empty) or 1 and the record at head; peek_try: -EBUSY
     * as well, with nothing changed */
    int nowait = fz_pick(z, 4) == 0;
    int want = fx_consumer_pre(x, ch, hi, d, &h, &q, nowait);
    if (want == 0 && q > 0)
        want = fx_rec_ok(x, d, h, q, &r) ? 1 : -EIO;
    memcpy(fx_snap, x->map, x->len);
    int prc = nowait ? xring_peek_try(ch, d, &pm) : xring_peek(ch, d, &pm);
    if (prc != want || (prc == 1 && !fx_desc_eq(&r, &pm)))
        fx_fail(nowait ? "peek_try: not the expected result" : "peek: not the expected result",
                prc);
    if (prc == -EBUSY)
        fx_busy_unchanged(x, "peek_try");
    if (prc == 1 && ((uint64_t)pm.ctl_len + pm.data_len > XRING_MSG_MAX ||
                     xring_reclen((uint64_t)pm.ctl_len + pm.data_len) > x->size))
        fx_fail("peek: lengths", (long)pm.ctl_len + pm.data_len);
    if (prc == 1 && xring_reclen((uint64_t)pm.ctl_len + pm.data_len) > xring_queued(ch, d))
        fx_fail("peek: more than queued", (long)pm.ctl_len + pm.data_len);
    fx_after(x, ch, hi, d, prc);
    if (fz_pick(z, 2) == 0)
        return; /* peek only */
    size_t ccap = fz_pick(z, 2) && prc == 1 ? pm.ctl_len : fz_u16(z) % (FZ_MAXLEN + 1);
    size_t dcap = fz_pick(z, 2) && prc == 1 ? pm.data_len : fz_u16(z) % (FZ_MAXLEN + 1);
    unsigned char *cb = ccap ? malloc(ccap) : NULL, *db = dcap ? malloc(dcap) : NULL;
    if (!cb)
        ccap = 0;
    if (!db)
        dcap = 0;

    /* take: -EIO, -ENODATA, -EAGAIN (*m: the record), or the record;
     * take_try: -EBUSY as well, with nothing taken or changed */
    nowait = fz_pick(z, 4) == 0;
    want = fx_consumer_pre(x, ch, hi, d, &h, &q, nowait);
    if (want == 0)
        want = q == 0 ? -ENODATA : !fx_rec_ok(x, d, h, q, &r) ? -EIO
                                   : r.r_ctl_len > ccap || r.r_data_len > dcap ? -EAGAIN : 0;
    memcpy(fx_snap, x->map, x->len);
    int rc = nowait ? xring_take_try(ch, d, &m, cb, ccap, db, dcap)
                    : xring_take(ch, d, &m, cb, ccap, db, dcap);
    if (rc >= 0 && ((rc & ~XRING_WAKE_WRITER) != 0 || m.ctl_len > ccap || m.data_len > dcap))
        fx_fail("take", rc);
    if (rc < 0 && rc != -ENODATA && rc != -EAGAIN && rc != -EIO && rc != -ECANCELED &&
        !(nowait && rc == -EBUSY))
        fx_fail("take", rc);
    if ((rc >= 0 ? 0 : rc) != want)
        fx_fail(nowait ? "take_try: not the expected result" : "take: not the expected result",
                rc);
    if (rc == -EBUSY)
        fx_busy_unchanged(x, "take_try");
    uint32_t now = fx_ld(&fx_ctl(x, d)->x_head);
    if (rc == -EAGAIN && !fx_desc_eq(&r, &m))
        fx_fail("take: -EAGAIN without the record's description", rc);
    if (rc >= 0 && (!fx_desc_eq(&r, &m) || now != h + r.r_len ||
                    !fx_bytes_eq(x, d, h + sizeof(r), cb, r.r_ctl_len) ||
                    !fx_bytes_eq(x, d, h + sizeof(r) + r.r_ctl_len, db, r.r_data_len)))
        fx_fail("take: not the record at head", rc);
    if (rc < 0 && want != -EIO && now != h)
        fx_fail("take: failed, but head moved", rc);
    fx_after(x, ch, hi, d, rc);
    free(cb);
    free(db);
}

/* ------------------------------------------------------------- take_batch */

#define FZ_BATCH_MAX 70
#define FZ_XF_DATA   1    /* sd_xpipe.h's XF_DATA */
#define FZ_XP_SMALL  1024 /* sd_xpipe.h's XP_SMALL */

/* The accept callback's state: how it answers, and what it was asked. */
struct fx_acc {
    int mode;      /* 0 all, 1 sd_xpipe_read.c's small_plain, 2 the first k, 3 the input */
    int k;
    struct fz *z;
    struct fx *x;
    int max, calls;
    struct xring_msg seen[FZ_BATCH_MAX];
    int ans[FZ_BATCH_MAX];
};

static int fx_small_plain(const struct xring_msg *m)
{
    return m->type == 0 /* M_DATA */ && m->ctl_len == 0 && m->band == 0 &&
           m->flags == FZ_XF_DATA && m->data_len > 0 && m->data_len <= FZ_XP_SMALL;
}

static int fx_accept(const struct xring_msg *m, void *arg)
{
    struct fx_acc *a = arg;
    int yes;

    /* At most once per record it may take, and only on a validated one. */
    if (a->calls >= a->max)
        fx_fail("take_batch: accept called more than max times", a->calls);
    if ((uint64_t)m->ctl_len + m->data_len > XRING_MSG_MAX ||
        xring_reclen((uint64_t)m->ctl_len + m->data_len) > a->x->size)
        fx_fail("take_batch: accept shown an invalid record", (long)m->ctl_len + m->data_len);
    switch (a->mode) {
    case 0:
        yes = 1;
        break;
    case 1:
        yes = fx_small_plain(m);
        break;
    case 2:
        yes = a->calls < a->k;
        break;
    default:
        yes = fz_pick(a->z, 4) != 0;
        break;
    }
    a->seen[a->calls] = *m;
    a->ans[a->calls++] = yes;
    return yes;
}

/* xring_take_copy driven as a take_batch (one take in three): its accept
 * refuses what does not fit the buffer, as take_batch stops there, then asks
 * fx_accept; its copy appends to the buffer.  So the checks below hold for
 * both (sd_xpipe_direct.c reads this way). */
struct fx_cp {
    struct fx_acc *a;
    struct xring_msg *ms;
    unsigned char *buf;
    size_t cap, used, body;
    int n;
};

static int fx_cp_accept(const struct xring_msg *m, void *arg)
{
    struct fx_cp *c = arg;
    size_t body = (size_t)m->ctl_len + m->data_len;
    if (c->body != 0)
        fx_fail("take_copy: the record before was not copied whole", (long)c->body);
    if (body > c->cap - c->used)
        return 0;
    if (!fx_accept(m, c->a))
        return 0;
    c->ms[c->n++] = *m;
    c->body = body;
    return 1;
}

static int fx_cp_copy(void *arg, const void *src, size_t n)
{
    struct fx_cp *c = arg;
    if (n == 0 || n > c->body)
        fx_fail("take_copy: a piece beyond its record", (long)n);
    memcpy(c->buf + c->used, src, n);
    c->used += n;
    c->body -= n;
    return 0;
}

static int fx_take_copy(struct xring_chan *ch, int d, struct xring_msg *ms, int max,
                        unsigned char *buf, size_t cap, struct fx_acc *a, int *wake, int nowait)
{
    struct fx_cp c = {.a = a, .ms = ms, .buf = buf, .cap = cap};
    int rc = nowait ? xring_take_copy_try(ch, d, max, fx_cp_accept, fx_cp_copy, &c, wake)
                    : xring_take_copy(ch, d, max, fx_cp_accept, fx_cp_copy, &c, wake);
    if (rc >= 0 && (rc != c.n || c.body != 0))
        fx_fail("take_copy: records taken and copied disagree", rc);
    return rc;
}

static void fx_take_batch(struct fx *x, struct xring_chan *ch, int hi, int d, struct fz *z)
{
    static struct fx_acc a;
    struct xring_rec r;
    uint32_t h, q;
    int wake = -1;

    memset(&a, 0, sizeof(a));
    a.x = x;
    a.z = z;
    a.mode = (int)fz_pick(z, 4);
    a.k = (int)fz_pick(z, 8);
    int max = fz_pick(z, 32) == 0 ? -1 : (int)fz_pick(z, FZ_BATCH_MAX);
    size_t cap;
    switch (fz_pick(z, 4)) {
    case 0:
        cap = 4096; /* sd_xpipe_read.c's XP_BATCH_BYTES */
        break;
    case 1:
        cap = fz_pick(z, 64);
        break;
    default:
        cap = fz_u16(z) % (2 * x->size + 1);
        break;
    }
    if (a.mode == 1 && fz_pick(z, 2)) { /* exactly sd_xpipe_read.c's small_batch */
        max = 64;
        cap = 4096;
    }
    a.max = max < 0 ? 0 : max;
    /* Each its own malloc, of exactly what is passed, so ASan sees an overflow. */
    struct xring_msg *ms = malloc((size_t)a.max * sizeof(*ms) + (a.max ? 0 : 1));
    unsigned char *buf = cap ? malloc(cap) : NULL;
    if (!ms || (cap && !buf))
        fx_fail("malloc", 0);
    if (a.max == 0) {
        free(ms);
        ms = malloc(0); /* nothing may be written through it */
    }
    memcpy(fx_snap, x->map, x->len);

    /* take_batch_try (nowait): -EBUSY as well, accept never asked */
    int nowait = fz_pick(z, 4) == 0;
    int want = fx_consumer_pre(x, ch, hi, d, &h, &q, nowait);
    if (max < 0)
        want = -EINVAL;
    int rc = fz_pick(z, 3) == 0 ? fx_take_copy(ch, d, ms, max, buf, cap, &a, &wake, nowait)
             : nowait ? xring_take_batch_try(ch, d, ms, max, buf, cap, fx_accept, &a, &wake)
                      : xring_take_batch(ch, d, ms, max, buf, cap, fx_accept, &a, &wake);
    uint32_t now = fx_ld(&fx_ctl(x, d)->x_head);

    if (rc > a.max || (rc < 0 && rc != -EIO && rc != -EINVAL && rc != -ECANCELED &&
                       !(nowait && rc == -EBUSY)))
        fx_fail("take_batch: return value", rc);
    if (rc == -EBUSY)
        fx_busy_unchanged(x, "take_batch_try");
    if (wake != 0 && wake != XRING_WAKE_WRITER)
        fx_fail("take_batch: *wake", wake);
    if (rc <= 0 && wake != 0)
        fx_fail("take_batch: *wake without a record taken", wake);
    if (want != 0) {
        if (rc != want || a.calls != 0 || now != h)
            fx_fail("take_batch: expected a failure before any record", rc);
        goto out;
    }
    /* Walk the ring as it was, with the answers accept gave. */
    int n = 0, calls = 0;
    size_t used = 0;
    uint32_t pos = h;
    while (n < max && q > 0) {
        if (!fx_rec_ok(x, d, pos, q, &r)) {
            want = -EIO;
            break;
        }
        size_t body = (size_t)r.r_ctl_len + r.r_data_len;
        if (body > cap - used)
            break;
        if (calls >= a.calls || !fx_desc_eq(&r, &a.seen[calls]))
            fx_fail("take_batch: accept not asked about the next record", calls);
        if (!a.ans[calls++])
            break;
        if (rc > n) { /* record n was taken: as it is in the ring */
            if (!fx_desc_eq(&r, &ms[n]) || (body > 0 && !fx_bytes_eq(x, d, pos + sizeof(r), buf + used, body)))
                fx_fail("take_batch: record not as in the ring", n);
        }
        used += body;
        n++;
        pos += r.r_len;
        q -= r.r_len;
    }
    if (want == -EIO) {
        if (rc != -EIO || now != h)
            fx_fail("take_batch: an invalid record taken or head moved", rc);
    } else if (rc != n || now != pos) {
        fx_fail("take_batch: not the records expected", rc);
    }
    if (a.calls != calls)
        fx_fail("take_batch: accept asked more than needed", a.calls);
    if (rc > 0) {
        /* What sd_xpipe_read.c's small_batch relies on: at most max records,
         * their bodies back to back within cap, each one accept said yes
         * to (small plain data with its filter), complete in the ring. */
        size_t sum = 0;
        for (int i = 0; i < rc; i++) {
            sum += (size_t)ms[i].ctl_len + ms[i].data_len;
            if (a.mode == 1 && !fx_small_plain(&ms[i]))
                fx_fail("take_batch: a record the filter refused", i);
        }
        if (sum > cap)
            fx_fail("take_batch: more bytes than the buffer", (long)sum);
    }
    /* A consumer never writes into the ring's data, nor into the other ring. */
    ((struct xring_hdr *)fx_snap)->h_ring[d].x_head = now;
    if (rc != -EIO)
        fx_snap_check(x, fx_snap, d, "take_batch: mapping changed");
out:
    fx_after(x, ch, hi, d, rc);
    free(ms);
    free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_process_setup();
    /* Short bounds: a lock held by a live pid costs a few ms, not a second. */
    static const struct xring_bounds b = {.slice_ms = 1, .dead_ms = 2, .hold_ms = 3, .wait_ms = 6};
    xring_test_bounds(&b);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz z = {data, size};
    struct fx x = {0};
    struct stat st;
    uint8_t g = fz_u8(&z);

    uint32_t ring = 4096u << (g & 1);
    uint32_t hiwat = g & 2 ? ring : ring / 2, lowat = g & 4 ? 0 : hiwat / 4;
    if (xring_create(ring, hiwat, lowat, &x.ch) != 0)
        fx_fail("create", 0);
    x.size = ring;
    x.hd[0] = (struct fx_hd){.hiwat = hiwat, .lowat = lowat};
    if (fstat(xring_fd(x.ch), &st) != 0)
        fx_fail("fstat", errno);
    x.len = (size_t)st.st_size;
    x.map = mmap(NULL, x.len, PROT_READ | PROT_WRITE, MAP_SHARED, xring_fd(x.ch), 0);
    if (x.map == MAP_FAILED)
        fx_fail("mmap", errno);

    /* The peer's descriptor (xring_set_peer): a socket whose other end the
     * input may close (the peer gone). */
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
        fx_fail("socketpair", errno);

    for (int steps = 0; fz_more(&z) && steps < 2000; steps++) {
        int hi = x.ch2 && fz_pick(&z, 2);
        struct xring_chan *ch = hi ? x.ch2 : x.ch;
        int d = (int)fz_pick(&z, 2), rc, b;
        uint32_t q;
        for (int r = 0; r < 2; r++) {
            x.pre_lock[r][0] = fx_ld(&fx_ctl(&x, r)->x_plock);
            x.pre_lock[r][1] = fx_ld(&fx_ctl(&x, r)->x_clock);
        }
        unsigned long s0 = xring_test_steps();
        long long t0 = fx_now_ms();
        unsigned op = fz_pick(&z, 18);
        switch (op) {
        case 16: /* the peer's descriptor; sometimes the peer gone */
            if (fz_pick(&z, 4) == 0 && sp[1] >= 0) {
                close(sp[1]);
                sp[1] = -1;
            }
            xring_set_peer(ch, d, fz_pick(&z, 8) ? sp[0] : -1);
            break;
        case 17: /* side d of this handle closing */
            if (fz_pick(&z, 4) == 0) {
                xring_cancel(ch, d);
                x.hd[hi].cancelled[d] = 1;
            }
            break;
        case 0:
        case 1:
            fx_poke(&x, &z);
            break;
        case 2:
        case 3:
            fx_put(&x, ch, hi, d, &z);
            break;
        case 4:
        case 5:
            fx_take(&x, ch, hi, d, &z);
            break;
        case 6:
            b = fx_broken_now(&x, ch, hi, d);
            rc = fz_pick(&z, 2) ? xring_arm_reader(ch, d) : xring_arm_writer(ch, d);
            if ((rc != 0 && rc != 1 && rc != -EIO) || (b && rc != -EIO))
                fx_fail("arm", rc);
            fx_after(&x, ch, hi, d, rc);
            break;
        case 7:
            q = xring_queued(ch, d);
            if (q > x.size || (fx_broken_now(&x, ch, hi, d) && q != 0))
                fx_fail("queued", q);
            (void)xring_is_shut(ch, d);
            fx_after(&x, ch, hi, d, 0);
            break;
        case 12:
        case 13:
            fx_take_batch(&x, ch, hi, d, &z);
            break;
        case 14:
        case 15:
            fx_put_inplace(&x, ch, hi, d, &z);
            break;
        case 8: {
            uint32_t seen = xring_bell_value(ch, d);
            if (fz_pick(&z, 2))
                xring_ring(ch, d);
            rc = xring_wait(ch, d, seen, 0);
            if (rc != 0 && rc != -EINTR) /* libFuzzer's own SIGALRM may interrupt */
                fx_fail("wait", rc);
            break;
        }
        case 9:
            if (fz_pick(&z, 4) == 0)
                xring_shut(ch, d);
            break;
        case 10:
            if (x.ch2) {
                xring_destroy(x.ch2);
                x.ch2 = NULL;
            } else {
                /* attach takes its geometry from the header as it is now */
                struct xring_hdr *hp = (struct xring_hdr *)x.map;
                x.hd[1] = (struct fx_hd){.hiwat = hp->h_hiwat, .lowat = hp->h_lowat}; /* new: not cancelled */
                rc = xring_attach(xring_fd(x.ch), &x.ch2);
                if (rc != 0 && rc != -EINVAL)
                    fx_fail("attach", rc);
                if (rc != 0)
                    x.ch2 = NULL;
            }
            break;
        default:
            (void)fx_broken_now(&x, ch, hi, d);
            if (xring_fd(ch) < 0)
                fx_fail("fd", xring_fd(ch));
            break;
        }
        /* Every call returns within a bounded number of steps and time,
         * whatever the peer wrote. */
        unsigned long used = xring_test_steps() - s0;
        long long ms = fx_now_ms() - t0;
        if (used > FZ_STEPS)
            fx_fail("a call took too many steps", (long)used);
        if (ms > FZ_CALL_MS)
            fx_fail("a call took too long (ms)", (long)ms);
    }
    close(sp[0]);
    if (sp[1] >= 0)
        close(sp[1]);
    xring_destroy(x.ch2);
    xring_destroy(x.ch);
    munmap(x.map, x.len);
    return 0;
}
