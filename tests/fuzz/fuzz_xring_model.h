/* SPDX-License-Identifier: MIT */
/*
 * fuzz_xring_model.h -- fuzz_xring's own reading of a channel's mapping
 * (xring_layout.h), independent of xring.c: the handle's state as the target
 * knows it, the bounds it asserts, and what a put, peek, take or take_batch
 * must do given the mapping as it was before the call (results, head/tail
 * moves, bytes, and "nothing changed" for a -EBUSY).  Included by
 * fuzz_xring.c only; the operations and the hostile peer's writes are there.
 */
#ifndef UST_FUZZ_XRING_MODEL_H
#define UST_FUZZ_XRING_MODEL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xring.h"
#include "xring_layout.h"
#include "xring_priv.h"

#define FZ_DEAD_PID 0x7ffffff0u /* above PID_MAX_LIMIT (2^22): never a process */
#define FZ_PID_MAX  4194304u   /* xring.c's XR_PID_MAX */
#define FZ_MAXLEN   5000u
#define FZ_STEPS    2000 /* loop rounds of one call, at most */
#define FZ_CALL_MS  2000 /* wall time of one call, at most (a loaded machine) */

/* What the target knows of a handle: its geometry as create/attach took it,
 * and which rings it has seen broken (so the state must stay). */
struct fx_hd {
    uint32_t hiwat, lowat;
    int broken[2];
    /* xring.c's put_seen: the tail after this handle's last put and the
     * head that put went by (0, 0 when new) */
    uint32_t seen_tail[2], seen_head[2];
    int cancelled[2]; /* xring_cancel(side) called on this handle */
};

struct fx {
    struct xring_chan *ch, *ch2;
    struct fx_hd hd[2]; /* of ch, ch2 */
    unsigned char *map; /* the peer's mapping */
    uint32_t pre_lock[2][2]; /* ring d's lock words before the current call */
    size_t len;
    uint32_t size;
};

static void fx_fail(const char *what, long v)
{
    fprintf(stderr, "fuzz_xring: %s (%ld)\n", what, v);
    abort();
}


/* ------------------------------------------------- the target's own reading */

static struct xring_ctl *fx_ctl(struct fx *x, int d)
{
    return &((struct xring_hdr *)x->map)->h_ring[d];
}

static unsigned char *fx_area(struct fx *x, int d)
{
    return x->map + XRING_HDR_BYTES + (size_t)d * x->size;
}

static uint32_t fx_ld(uint32_t *w)
{
    return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* n bytes of ring d from index pos, wrapping. */
static void fx_ring_get(struct fx *x, int d, uint32_t pos, void *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)dst)[i] = fx_area(x, d)[(pos + i) & (x->size - 1)];
}

/* Ring d's state is sticky broken on handle hi: check it and remember it.
 * Returns xring_broken. */
static int fx_broken_now(struct fx *x, struct xring_chan *ch, int hi, int d)
{
    int b = xring_broken(ch, d);
    if (b != 0 && b != 1)
        fx_fail("broken: value", b);
    if (x->hd[hi].broken[d] && !b)
        fx_fail("broken: not sticky", d);
    if (b)
        x->hd[hi].broken[d] = 1;
    return b;
}

/* After a call returned: -EIO must have left the ring broken on that handle,
 * and no lock word of ring d may be held by this process. */
static void fx_after(struct fx *x, struct xring_chan *ch, int hi, int d, int rc)
{
    uint32_t me = (uint32_t)getpid() & XRING_LOCK_PID;
    /* Held by us now and not before the call (the peer may write our pid). */
    if (((fx_ld(&fx_ctl(x, d)->x_plock) & XRING_LOCK_PID) == me &&
         (x->pre_lock[d][0] & XRING_LOCK_PID) != me) ||
        ((fx_ld(&fx_ctl(x, d)->x_clock) & XRING_LOCK_PID) == me &&
         (x->pre_lock[d][1] & XRING_LOCK_PID) != me))
        fx_fail("lock word left held", rc);
    if (rc == -EIO && !fx_broken_now(x, ch, hi, d))
        fx_fail("-EIO but not broken", d);
    (void)fx_broken_now(x, ch, hi, d);
}

/* What taking lock word w does for side `side` of handle hi: 0 (free),
 * -EIO (an impossible pid at once; any other holder breaks the ring within
 * the bounds: nothing of ours holds it while we wait), -EBUSY (nowait, held),
 * -ECANCELED (the side was cancelled, held). */
static int fx_lock_result(struct fx *x, int hi, uint32_t *w, int side, int nowait)
{
    uint32_t pid = fx_ld(w) & XRING_LOCK_PID;
    if (pid == 0)
        return 0;
    if (pid > FZ_PID_MAX)
        return -EIO;
    if (nowait)
        return -EBUSY;
    return x->hd[hi].cancelled[side] ? -ECANCELED : -EIO;
}

/* Is the record at h valid with q bytes queued from there (xring_layout.h)?
 * 1 and *r, or 0: a consumer must break the ring. */
static int fx_rec_ok(struct fx *x, int d, uint32_t h, uint32_t q, struct xring_rec *r)
{
    if (q < sizeof(*r))
        return 0;
    fx_ring_get(x, d, h, r, sizeof(*r));
    uint64_t body = (uint64_t)r->r_ctl_len + r->r_data_len;
    return r->r_ctl_len <= XRING_MSG_MAX && r->r_data_len <= XRING_MSG_MAX &&
           body <= XRING_MSG_MAX && r->r_zero == 0 && r->r_len == xring_reclen(body) &&
           r->r_len <= q;
}

/* What a consumer call (peek, take, take_batch, or their _try forms if
 * nowait) finds first on ring d of handle hi, from the mapping as it is now:
 * -EIO (broken, consumer lock word holding an impossible pid, or held by
 * anyone, us included, while a blocking call waits out the bounds; head/tail
 * inconsistent), -ECANCELED (blocking, held, side !d cancelled), -EBUSY
 * (nowait, held by any possible pid: nothing taken, nothing changed), or 0
 * with *h and *q (bytes queued).  xr_lock's order: broken first, then the
 * word (an impossible pid breaks even a _try call at once), then nowait. */
static int fx_consumer_pre(struct fx *x, struct xring_chan *ch, int hi, int d, uint32_t *h,
                           uint32_t *q, int nowait)
{
    struct xring_ctl *c = fx_ctl(x, d);
    *h = fx_ld(&c->x_head);
    uint32_t t = fx_ld(&c->x_tail);
    *q = t - *h;
    if (fx_broken_now(x, ch, hi, d))
        return -EIO;
    int l = fx_lock_result(x, hi, &c->x_clock, !d, nowait);
    if (l != 0)
        return l;
    if (((*h | t) & 7) != 0 || *q > x->size)
        return -EIO;
    return 0;
}

/* The record as xring.h describes it. */
static int fx_desc_eq(const struct xring_rec *r, const struct xring_msg *m)
{
    return m->type == r->r_type && m->band == r->r_band && m->flags == r->r_flags &&
           m->ctl_len == r->r_ctl_len && m->data_len == r->r_data_len && m->aux == r->r_aux;
}

/* n bytes at p equal ring d's from pos on. */
static int fx_bytes_eq(struct fx *x, int d, uint32_t pos, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != fx_area(x, d)[(pos + i) & (x->size - 1)])
            return 0;
    return 1;
}

/* Room for a record of `body` bytes with head h and tail t: 1 room, 0 full,
 * -1 inconsistent. */
static int fx_room(struct fx *x, int hi, uint32_t h, uint32_t t, uint64_t body)
{
    uint32_t q = t - h;
    if (((h | t) & 7) != 0 || q > x->size)
        return -1;
    return !(q >= x->hd[hi].hiwat || xring_reclen(body) > x->size - q);
}

/* What xring_put / xring_put_begin must return for m on ring d of handle hi,
 * from the mapping as it is now (success: 0, and *used the head it goes
 * by).  The producer goes by the head of its own last put while nobody has
 * put since and that head shows room; else by the consumer's. */
static int fx_expect_put(struct fx *x, struct xring_chan *ch, int hi, int d,
                         const struct xring_msg *m, uint32_t *used, int nowait)
{
    struct xring_ctl *c = fx_ctl(x, d);
    uint64_t body = (uint64_t)m->ctl_len + m->data_len;
    if (fx_broken_now(x, ch, hi, d))
        return -EIO;
    if (body > XRING_MSG_MAX || xring_reclen(body) > x->size)
        return -EMSGSIZE;
    if (fx_ld(&c->x_shut) != 0)
        return -EPIPE;
    int l = fx_lock_result(x, hi, &c->x_plock, d, nowait);
    if (l != 0)
        return l;
    uint32_t t = fx_ld(&c->x_tail);
    if (x->hd[hi].seen_tail[d] == t && fx_room(x, hi, x->hd[hi].seen_head[d], t, body) == 1) {
        *used = x->hd[hi].seen_head[d];
        return 0;
    }
    uint32_t h = fx_ld(&c->x_head);
    int room = fx_room(x, hi, h, t, body);
    *used = h;
    return room < 0 ? -EIO : room == 0 ? -EAGAIN : 0;
}

/* A put of handle hi committed: tail t now, gone by head h. */
static void fx_seen(struct fx *x, int hi, int d, uint32_t t, uint32_t h)
{
    x->hd[hi].seen_tail[d] = t;
    x->hd[hi].seen_head[d] = h;
}

/* The header a put of m writes at its tail. */
static struct xring_rec fx_rec_of(const struct xring_msg *m)
{
    struct xring_rec r = {
        .r_len = (uint32_t)xring_reclen((uint64_t)m->ctl_len + m->data_len),
        .r_type = m->type,
        .r_band = m->band,
        .r_flags = m->flags,
        .r_ctl_len = m->ctl_len,
        .r_data_len = m->data_len,
        .r_aux = m->aux,
        .r_zero = 0,
    };
    return r;
}

/* Write n bytes into the snapshot s of the mapping as if at index pos of
 * ring d (what the mapping should now hold). */
static void fx_snap_put(struct fx *x, unsigned char *s, int d, uint32_t pos, const void *src,
                        size_t n)
{
    unsigned char *a = s + XRING_HDR_BYTES + (size_t)d * x->size;
    for (size_t i = 0; i < n; i++)
        a[(pos + i) & (x->size - 1)] = ((const unsigned char *)src)[i];
}

/* The mapping equals the snapshot s, but for ring d's lock words, arming
 * words and doorbell (which the calls may change). */
static void fx_snap_check(struct fx *x, unsigned char *s, int d, const char *what)
{
    struct xring_ctl *c = fx_ctl(x, d);
    struct xring_ctl *sc = &((struct xring_hdr *)s)->h_ring[d];
    sc->x_plock = fx_ld(&c->x_plock);
    sc->x_clock = fx_ld(&c->x_clock);
    sc->x_bell = fx_ld(&c->x_bell);
    sc->x_rd_armed = fx_ld(&c->x_rd_armed);
    sc->x_wr_armed = fx_ld(&c->x_wr_armed);
    for (size_t i = 0; i < x->len; i++)
        if (s[i] != x->map[i]) {
            fprintf(stderr, "fuzz_xring: %s: mapping byte %zu is %u, expected %u\n", what, i,
                    x->map[i], s[i]);
            fx_fail(what, (long)i);
        }
}

static long long fx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static _Alignas(XRING_CACHELINE) unsigned char fx_snap[XRING_HDR_BYTES + 2 * 8192];

/* A _try call returned -EBUSY: it took, put and changed nothing, not
 * even the lock word (no waiters bit) or the bell -- the whole mapping is
 * as fx_snap caught it just before the call. */
static void fx_busy_unchanged(struct fx *x, const char *what)
{
    for (size_t i = 0; i < x->len; i++)
        if (fx_snap[i] != x->map[i]) {
            fprintf(stderr, "fuzz_xring: %s: -EBUSY, but mapping byte %zu is %u, was %u\n",
                    what, i, x->map[i], fx_snap[i]);
            fx_fail(what, (long)i);
        }
}

#endif /* UST_FUZZ_XRING_MODEL_H */
