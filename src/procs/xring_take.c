/* SPDX-License-Identifier: MIT */
/*
 * xring_take.c -- the consumer side of a channel's rings (xring.h):
 * xring_peek, xring_take, xring_take_batch and their _try forms, which
 * never sleep on a held consumer lock word (-EBUSY, nothing changed).
 *
 * How a take publishes (head stored seq_cst, the Dekker pair with
 * xring_arm_writer), how the lock words are waited on, and what is
 * trusted of the mapping: xring.c, "Principles of operation".  The locks
 * and the shared helpers: xring_priv.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "xring.h"
#include "xring_layout.h"
#include "xring_priv.h"

/*
 * xr_rec_at -- copy out and check the record at index h of ring d, q bytes
 *   being queued from h on (q > 0).
 *   Locking: the caller holds the consumer lock.
 *   Returns 1 with *r, or -EIO (the ring is now broken).
 */
static int xr_rec_at(struct xring_chan *ch, int d, uint32_t h, int64_t q, struct xring_rec *r)
{
    if (q < (int64_t)sizeof(*r))
        return xr_break(ch, d);
    xr_copy_out(ch, d, h, r, sizeof(*r));
    if (r->r_ctl_len > XRING_MSG_MAX || r->r_data_len > XRING_MSG_MAX ||
        (uint64_t)r->r_ctl_len + r->r_data_len > XRING_MSG_MAX || r->r_zero != 0 ||
        r->r_len != xring_reclen((uint64_t)r->r_ctl_len + r->r_data_len) || r->r_len > q)
        return xr_break(ch, d);
    return 1;
}

/*
 * xr_next -- read and check the next record of ring d.
 *   Locking: the caller holds the consumer lock.
 *   Returns 1 with *r and *head (the record's index), 0 if the ring is
 *   empty, -EIO if the ring is (now) broken.
 */
static int xr_next(struct xring_chan *ch, int d, struct xring_rec *r, uint32_t *head)
{
    struct xring_ctl *c = ch->ctl[d];
    uint32_t h = __atomic_load_n(&c->x_head, __ATOMIC_RELAXED);
    uint32_t t = __atomic_load_n(&c->x_tail, __ATOMIC_ACQUIRE);
    int64_t q = xr_queued(ch, h, t);

    if (q < 0)
        return xr_break(ch, d);
    if (q == 0)
        return 0;
    int rc = xr_rec_at(ch, d, h, q, r);
    if (rc == 1)
        *head = h;
    return rc;
}

static void xr_desc(const struct xring_rec *r, struct xring_msg *m)
{
    m->type = r->r_type;
    m->band = r->r_band;
    m->flags = r->r_flags;
    m->ctl_len = r->r_ctl_len;
    m->data_len = r->r_data_len;
    m->aux = r->r_aux;
}

/*
 * xr_take_report -- after a take stored head (seq_cst): the Dekker load of
 *   the writers' arming (xring_arm_writer), and the report if the take
 *   brought the ring to lowat or below.  Returns XRING_WAKE_WRITER or 0.
 */
static int xr_take_report(struct xring_chan *ch, struct xring_ctl *c, uint32_t head)
{
    if (__atomic_load_n(&c->x_wr_armed, __ATOMIC_SEQ_CST) & XR_ARM_COUNT) {
        uint32_t tail = __atomic_load_n(&c->x_tail, __ATOMIC_ACQUIRE);
        uint32_t q = tail - head; /* a wild value only delays the report */
        if (q <= ch->lowat && xr_arm_fire(&c->x_wr_armed))
            return XRING_WAKE_WRITER;
    }
    return 0;
}

/* Ring dir's consumer lock for a peek or a take: 0 held, -EIO (broken),
 * or what xr_lock returns (-EBUSY with nowait, -EIO past the bounds,
 * -ECANCELED). */
static inline int xr_consumer_lock(struct xring_chan *ch, int dir, int nowait)
{
    if (xr_is_broken(ch, dir))
        return -EIO;
    return xr_lock(ch, dir, &ch->ctl[dir]->x_clock, !dir, nowait);
}

/* A batch take's start: ring dir's consumer lock taken and the head and
 * the bytes queued read once (*h, *q): 0.  Or the lock's error (not held),
 * or a ring whose indices are impossible broken (xr_break's result, the
 * lock let go). */
static int xr_batch_open(struct xring_chan *ch, int dir, int nowait, uint32_t *h, int64_t *q)
{
    struct xring_ctl *c = ch->ctl[dir];
    int rc = xr_consumer_lock(ch, dir, nowait);
    if (rc != 0)
        return rc;
    *h = __atomic_load_n(&c->x_head, __ATOMIC_RELAXED);
    uint32_t t = __atomic_load_n(&c->x_tail, __ATOMIC_ACQUIRE);
    *q = xr_queued(ch, *h, t);
    if (*q < 0) {
        rc = xr_break(ch, dir);
        xr_unlock(&c->x_clock);
    }
    return rc;
}

/* A batch take's end: the consumer lock let go; rc if the take failed,
 * else the n records taken (head already stored at h), with the writer's
 * wake-up owed in *wake when the room it waits for came back. */
static int xr_batch_close(struct xring_chan *ch, struct xring_ctl *c, int rc, int n, uint32_t h,
                          int *wake)
{
    xr_unlock(&c->x_clock);
    if (rc != 0)
        return rc;
    if (n > 0 && xr_take_report(ch, c, h) && wake)
        *wake = XRING_WAKE_WRITER;
    return n;
}

/* xring_peek, or xring_peek_try (nowait: never sleeps on the lock). */
static int xr_peek(struct xring_chan *ch, int dir, struct xring_msg *m, int nowait)
{
    struct xring_rec r;
    uint32_t head;

    if (!xr_dir_ok(ch, dir) || !m)
        return -EINVAL;
    struct xring_ctl *c = ch->ctl[dir];
    int rc = xr_consumer_lock(ch, dir, nowait);
    if (rc != 0)
        return rc;
    rc = xr_next(ch, dir, &r, &head);
    xr_unlock(&c->x_clock);
    if (rc == 1)
        xr_desc(&r, m);
    return rc;
}

int xring_peek(struct xring_chan *ch, int dir, struct xring_msg *m)
{
    return xr_peek(ch, dir, m, 0);
}

int xring_peek_try(struct xring_chan *ch, int dir, struct xring_msg *m)
{
    return xr_peek(ch, dir, m, 1);
}

/* xring_take, or xring_take_try (nowait). */
static int xr_take(struct xring_chan *ch, int dir, struct xring_msg *m, void *ctl, size_t ctl_cap,
                   void *data, size_t data_cap, int nowait)
{
    struct xring_rec r;
    uint32_t head;

    if (!xr_dir_ok(ch, dir) || (!ctl && ctl_cap > 0) || (!data && data_cap > 0))
        return -EINVAL;
    struct xring_ctl *c = ch->ctl[dir];
    int rc = xr_consumer_lock(ch, dir, nowait);
    if (rc != 0)
        return rc;
    rc = xr_next(ch, dir, &r, &head);
    if (rc == 0)
        rc = -ENODATA;
    if (rc < 0)
        goto out;
    if (r.r_ctl_len > ctl_cap || r.r_data_len > data_cap) {
        if (m)
            xr_desc(&r, m); /* so that the caller can size its buffers */
        rc = -EAGAIN;
        goto out;
    }
    xr_copy_out(ch, dir, head + sizeof(r), ctl, r.r_ctl_len);
    xr_copy_out(ch, dir, head + sizeof(r) + r.r_ctl_len, data, r.r_data_len);
    head += r.r_len;
    __atomic_store_n(&c->x_head, head, __ATOMIC_SEQ_CST); /* the Dekker store */
    rc = 0;
out:
    xr_unlock(&c->x_clock);
    if (rc != 0)
        return rc;
    if (m)
        xr_desc(&r, m);
    return xr_take_report(ch, c, head);
}

int xring_take(struct xring_chan *ch, int dir, struct xring_msg *m, void *ctl, size_t ctl_cap,
               void *data, size_t data_cap)
{
    return xr_take(ch, dir, m, ctl, ctl_cap, data, data_cap, 0);
}

int xring_take_try(struct xring_chan *ch, int dir, struct xring_msg *m, void *ctl,
                   size_t ctl_cap, void *data, size_t data_cap)
{
    return xr_take(ch, dir, m, ctl, ctl_cap, data, data_cap, 1);
}

/* xring_take_batch, or xring_take_batch_try (nowait). */
static int xr_take_batch(struct xring_chan *ch, int dir, struct xring_msg *ms, int max, void *buf,
                         size_t cap, int (*accept)(const struct xring_msg *, void *), void *arg,
                         int *wake, int nowait)
{
    struct xring_rec r;
    size_t used = 0;
    int n = 0;

    if (wake)
        *wake = 0;
    if (!xr_dir_ok(ch, dir) || !ms || max < 0 || (!buf && cap > 0) || !accept)
        return -EINVAL;
    struct xring_ctl *c = ch->ctl[dir];
    uint32_t h;
    int64_t q;
    int rc = xr_batch_open(ch, dir, nowait, &h, &q);
    if (rc != 0)
        return rc;
    while (n < max && q > 0) {
        rc = xr_rec_at(ch, dir, h, q, &r);
        if (rc < 0)
            goto out;
        size_t body = (size_t)r.r_ctl_len + r.r_data_len;
        if (body > cap - used)
            break;
        xr_desc(&r, &ms[n]);
        if (!accept(&ms[n], arg))
            break;
        /* Control then data, back to back, as in the ring.  An empty
         * record copies nothing: buf may be NULL (cap 0), and NULL + 0 is
         * undefined in C. */
        if (body > 0)
            xr_copy_out(ch, dir, h + sizeof(r), (unsigned char *)buf + used, body);
        used += body;
        n++;
        h += r.r_len;
        q -= r.r_len;
    }
    rc = 0;
    if (n > 0)
        __atomic_store_n(&c->x_head, h, __ATOMIC_SEQ_CST); /* the Dekker store */
out:
    return xr_batch_close(ch, c, rc, n, h, wake);
}

int xring_take_batch(struct xring_chan *ch, int dir, struct xring_msg *ms, int max, void *buf,
                     size_t cap, int (*accept)(const struct xring_msg *, void *), void *arg,
                     int *wake)
{
    return xr_take_batch(ch, dir, ms, max, buf, cap, accept, arg, wake, 0);
}

int xring_take_batch_try(struct xring_chan *ch, int dir, struct xring_msg *ms, int max, void *buf,
                         size_t cap, int (*accept)(const struct xring_msg *, void *), void *arg,
                         int *wake)
{
    return xr_take_batch(ch, dir, ms, max, buf, cap, accept, arg, wake, 1);
}

/*
 * xr_take_copy -- xring_take_copy (xring.h).  The header of each record is
 *   copied out of the mapping once and checked (xr_rec_at) before accept
 *   sees it; its body is then handed to `copy` in at most two pieces
 *   straight from the mapping (the peer may rewrite those bytes meanwhile:
 *   they are data, never lengths or indices, which come from our copy).
 *   head is stored once, after the last record copied whole.
 */
static int xr_take_copy(struct xring_chan *ch, int dir, int max,
                        int (*accept)(const struct xring_msg *, void *),
                        int (*copy)(void *, const void *, size_t), void *arg, int *wake,
                        int nowait)
{
    struct xring_rec r;
    struct xring_msg m;
    int n = 0;

    if (wake)
        *wake = 0;
    if (!xr_dir_ok(ch, dir) || max < 0 || !accept || !copy)
        return -EINVAL;
    struct xring_ctl *c = ch->ctl[dir];
    uint32_t h;
    int64_t q;
    int rc = xr_batch_open(ch, dir, nowait, &h, &q);
    if (rc != 0)
        return rc;
    while (n < max && q > 0) {
        rc = xr_rec_at(ch, dir, h, q, &r);
        if (rc < 0)
            goto out;
        xr_desc(&r, &m);
        if (!accept(&m, arg))
            break;
        size_t body = (size_t)r.r_ctl_len + r.r_data_len; /* <= r_len - 24 <= q */
        uint32_t off = (h + (uint32_t)sizeof(r)) & ch->mask;
        size_t first = body < (size_t)(ch->size - off) ? body : (size_t)(ch->size - off);
        int e = body == 0 ? 0 : copy(arg, ch->data[dir] + off, first);
        if (e == 0 && body > first)
            e = copy(arg, ch->data[dir], body - first);
        if (e != 0) { /* this record stays; those before it are taken */
            if (n == 0)
                rc = -e;
            break;
        }
        n++;
        h += r.r_len;
        q -= r.r_len;
    }
    if (n > 0) {
        __atomic_store_n(&c->x_head, h, __ATOMIC_SEQ_CST); /* the Dekker store */
        rc = 0;
    } else if (rc > 0) {
        rc = 0;
    }
out:
    return xr_batch_close(ch, c, rc, n, h, wake);
}

int xring_take_copy(struct xring_chan *ch, int dir, int max,
                    int (*accept)(const struct xring_msg *, void *),
                    int (*copy)(void *, const void *, size_t), void *arg, int *wake)
{
    return xr_take_copy(ch, dir, max, accept, copy, arg, wake, 0);
}

int xring_take_copy_try(struct xring_chan *ch, int dir, int max,
                        int (*accept)(const struct xring_msg *, void *),
                        int (*copy)(void *, const void *, size_t), void *arg, int *wake)
{
    return xr_take_copy(ch, dir, max, accept, copy, arg, wake, 1);
}
