/* SPDX-License-Identifier: MIT */
/*
 * xring.h -- a channel between processes: two message rings in one shared
 * mapping (a memfd), for streams whose two ends live in different processes.
 *
 * A channel has two sides, 0 and 1.  Ring d carries messages written by
 * side d to side !d.  Each ring is a byte ring of records; a record is a
 * header (struct xring_rec, fixed layout) followed by the message's control
 * bytes and then its data bytes, the whole padded to 8 bytes.  Records may
 * wrap around the end of the ring's data area (copied in two pieces).
 *
 * Trust: the mapping is shared with another process that may be buggy or
 * hostile.  Nothing read from it is trusted: every index, length, type and
 * flag is checked before use; the local handle keeps its own copy of the
 * geometry (ring size, water marks) taken at create/attach and never re-reads
 * it.  A ring found inconsistent is "broken": every later call on it returns
 * -EIO; nothing is read out of bounds, nothing loops without end, the other
 * ring and other channels are unaffected.
 *
 * Concurrency: several threads and processes may produce into one ring, and
 * several may consume from it (after fork() both processes hold both ends
 * until each closes the one it does not use).  Producers serialise on a
 * producer lock word in the ring, consumers on a consumer lock word; the
 * producer writes only `tail` (and the records), the consumer only `head`.
 * The lock words are futex-based, process-shared, and a hint only: a lock
 * word records the holder's pid; a waiter marks the ring broken (-EIO)
 * instead of waiting for ever when the word holds no possible pid, when one
 * hold lasts 500 ms or the wait 1 s (whoever the holder: a live pid written
 * by the peer, a zombie, a stopped process), or, after 50 ms, when the
 * holder's pid is gone (kill(pid, 0) -> ESRCH) or the peer's descriptor
 * (xring_set_peer) shows hang-up.  Every loop over shared words is bounded.
 *
 * Flow control (bytes of records queued = tail - head):
 *   a put is refused with -EAGAIN when the queued bytes are >= hiwat (a
 *   record that fits in the free space is accepted even if it crosses
 *   hiwat); a record larger than the whole ring is refused with -EMSGSIZE.
 *   A refused producer arms the ring (xring_arm_writer) and, if that says
 *   there is still no room, sleeps (its own business: futex on the bell
 *   word, or an fd the caller rings).  The consumer reports when it took the
 *   queued bytes to <= lowat while a writer was armed (XRING_WAKE_WRITER,
 *   once per arming: the hysteresis edge); the producer reports when it put
 *   a record into a ring whose reader had armed (XRING_WAKE_READER, once per
 *   arming).  Doorbells are rung only on those edges.
 *
 * Context, for every call below: any thread of any process that holds the
 * channel; no lock of the caller's is needed.  put, peek and take sleep only
 * while another thread or process holds the ring's lock word (a few copies
 * long), never for flow control; xring_wait is the only call meant to
 * sleep.  Uncontended, put and take make no system call.
 */
#ifndef UST_XRING_H
#define UST_XRING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct xring_chan; /* the process-local handle of a channel */

/* A message's description as carried in a record header. */
struct xring_msg {
    uint8_t type;      /* STREAMS message type (M_DATA, M_PROTO, M_PCPROTO, ...) */
    uint8_t band;      /* priority band */
    uint16_t flags;    /* caller-defined (e.g. "has control part") */
    uint32_t ctl_len;  /* control bytes */
    uint32_t data_len; /* data bytes */
    uint32_t aux;      /* caller-defined word (e.g. an fd-passing sequence) */
};

enum {
    XRING_WAKE_READER = 1, /* xring_put: ring the reader's doorbell */
    XRING_WAKE_WRITER = 2, /* xring_take: ring the writer's doorbell */
    XRING_MSG_MAX = 1u << 24, /* largest ctl_len + data_len accepted */
};

/*
 * xring_create -- make a channel: a memfd of the right size, mapped shared,
 *   its header initialised (magic, version, geometry).
 *   ring_bytes: each ring's data area, rounded up to a power of two, at least
 *   4096, at most 64 MiB; hiwat/lowat in bytes (lowat < hiwat <= ring_bytes,
 *   otherwise -EINVAL).  The memfd is close-on-exec, and sealed against
 *   shrinking and growing (xring_attach requires that).  A put below hiwat
 *   is refused only for lack of room; with ring_bytes - hiwat at least the
 *   largest record (24 + 8-padded message bytes) a refused writer always
 *   finds the ring at or above hiwat, so arming then sleeping is exact.
 *   Returns 0 and *out, or -errno (EINVAL, ENOMEM, EMFILE, ...).
 */
int xring_create(size_t ring_bytes, uint32_t hiwat, uint32_t lowat, struct xring_chan **out);

/*
 * xring_attach -- map a channel made by another process from its memfd
 *   (received with SCM_RIGHTS).  Checks the file's size, its seals, the
 *   magic, version and geometry (and that they agree with the size) before using anything;
 *   takes its own copy of the geometry.  Keeps fd (dup'ed, close-on-exec).
 *   Returns 0 and *out, or -EINVAL (not a channel / inconsistent), -errno.
 */
int xring_attach(int fd, struct xring_chan **out);

/* xring_marks -- the channel's high- and low-water marks in bytes, as this
 * handle holds them (from create, or checked at attach).  Either pointer may
 * be NULL. */
void xring_marks(const struct xring_chan *ch, uint32_t *hiwat, uint32_t *lowat);

/* xring_fd -- the channel's memfd (owned by the handle), for passing. */
int xring_fd(const struct xring_chan *ch);

/* xring_destroy -- unmap and close this process's handle (the other
 * process's mapping is untouched).  NULL is ignored. */
void xring_destroy(struct xring_chan *ch);

/*
 * xring_put -- append one message to ring dir (0 or 1).
 *   iov[0..iovcnt) holds the control bytes followed by the data bytes
 *   (their total must equal m->ctl_len + m->data_len, else -EINVAL).
 *   Returns >= 0 on success: 0 or XRING_WAKE_READER; or -EAGAIN (at or above
 *   hiwat, or not enough free space now), -EMSGSIZE (larger than the ring or
 *   XRING_MSG_MAX), -EPIPE (the ring was shut with xring_shut), -EIO
 *   (broken, or became so: a lock word the peer holds beyond the bounds
 *   above), -EINVAL.
 */
int xring_put(struct xring_chan *ch, int dir, const struct xring_msg *m, const struct iovec *iov,
              int iovcnt);

/* xring_put_try -- xring_put that never sleeps on the ring's lock: -EBUSY
 * when another holds it beyond a short spin (a non-blocking caller). */
int xring_put_try(struct xring_chan *ch, int dir, const struct xring_msg *m,
                  const struct iovec *iov, int iovcnt);

/*
 * xring_put_begin / xring_put_end -- xring_put in two halves, so that the
 *   caller copies the body straight from where it is (a user buffer, which
 *   may fault) into the ring.  begin takes the producer lock, checks the
 *   room exactly as xring_put does (same errors, nothing held on error)
 *   and writes the record's header; on 0 the body (m->ctl_len + m->data_len
 *   bytes: control then data) goes to w->seg[0] then w->seg[1] (the second
 *   piece is empty unless the record wraps).  Then, always, xring_put_end:
 *   commit 1 publishes the record and returns 0 or XRING_WAKE_READER;
 *   commit 0 abandons it (the ring is as before) and returns 0.  Between
 *   the two the producer lock is held: copy, nothing else (no sleeping, no
 *   other lock, no xring call).
 */
struct xring_wr {
    struct iovec seg[2]; /* where the body goes */
    int dir;             /* the rest: xring.c's */
    uint32_t tail, head;
};
int xring_put_begin(struct xring_chan *ch, int dir, const struct xring_msg *m, struct xring_wr *w);
int xring_put_end(struct xring_chan *ch, struct xring_wr *w, int commit);
/* xring_put_begin_try -- xring_put_begin that never sleeps on the lock
 * (-EBUSY when it is held, as xring_put_try). */
int xring_put_begin_try(struct xring_chan *ch, int dir, const struct xring_msg *m,
                        struct xring_wr *w);

/*
 * xring_peek -- describe the next record of ring dir without taking it.
 *   Returns 1 and *m (validated: lengths within XRING_MSG_MAX and within what
 *   is queued), 0 if the ring is empty, -EIO if broken.
 */
int xring_peek(struct xring_chan *ch, int dir, struct xring_msg *m);

/*
 * xring_take -- take the next record of ring dir, copying its control bytes
 *   into ctl (ctl_cap bytes) and its data into data (data_cap bytes).
 *   The caller sizes the buffers from xring_peek; if a buffer is too small
 *   (the record changed under a racing consumer) it returns -EAGAIN and
 *   takes nothing (*m then describes that record).  *m (may be NULL)
 *   receives the record's description.
 *   Returns >= 0 on success: 0 or XRING_WAKE_WRITER; 0-record: -ENODATA
 *   (empty); -EIO broken.
 */
int xring_take(struct xring_chan *ch, int dir, struct xring_msg *m, void *ctl, size_t ctl_cap,
               void *data, size_t data_cap);

/*
 * xring_take_batch -- take consecutive records of ring dir under one hold of
 *   the consumer lock and with one store of head: as long as fewer than max
 *   are taken, their bytes fit in what is left of buf (cap bytes), and
 *   accept(m, arg) says yes.  Record i's description goes to ms[i], its
 *   control then data bytes to buf after those of records 0..i-1 (back to
 *   back, no padding).  accept is called with the consumer lock held, on a
 *   validated description, before the record is taken: it must not block,
 *   take locks or call into xring; 0 stops the batch and leaves that record
 *   (and all after it) in the ring.
 *   *wake (may be NULL) receives XRING_WAKE_WRITER or 0, as xring_take's
 *   return value would be for the last record taken.
 *   Returns the records taken (0: empty, or the first one stays), -EIO
 *   (broken), -EINVAL.
 */
int xring_take_batch(struct xring_chan *ch, int dir, struct xring_msg *ms, int max, void *buf,
                     size_t cap, int (*accept)(const struct xring_msg *, void *), void *arg,
                     int *wake);

/*
 * xring_peek_try / xring_take_try / xring_take_batch_try -- the same calls
 *   that never sleep on the ring's consumer lock: -EBUSY when another
 *   thread or process holds it beyond a short spin (as xring_put_try).  A
 *   -EBUSY has taken nothing and changed nothing: the ring is as before,
 *   and the caller tries again later (a thread that may wait: the bounds
 *   at the top then apply).  For a caller running inside another's call
 *   (a non-blocking read or write must not wait on a lock a peer holds).
 */
int xring_peek_try(struct xring_chan *ch, int dir, struct xring_msg *m);
int xring_take_try(struct xring_chan *ch, int dir, struct xring_msg *m, void *ctl,
                   size_t ctl_cap, void *data, size_t data_cap);
int xring_take_batch_try(struct xring_chan *ch, int dir, struct xring_msg *ms, int max, void *buf,
                         size_t cap, int (*accept)(const struct xring_msg *, void *), void *arg,
                         int *wake);

/*
 * xring_take_copy -- take consecutive records of ring dir under one hold of
 *   the consumer lock and one store of head, each one's body (control then
 *   data bytes) handed to copy(arg, src, n) straight from the mapping, in
 *   one piece or two (a record that wraps): one copy, into wherever the
 *   caller wants it (a reader's own buffer).  For each record, at most max:
 *   accept(m, arg) on its validated description, before anything of it is
 *   copied (0 stops: that record and those after it stay); then copy, which
 *   returns 0 or a positive errno (e.g. EFAULT: that record stays, and the
 *   take stops).  accept and copy run with the consumer lock held: no
 *   sleeping, no lock, no xring call; copy must not fault the process (a
 *   fault-safe copy for user memory).  The bytes copied are the peer's to
 *   change while they are copied; lengths and indices are not (read once).
 *   *wake (may be NULL): XRING_WAKE_WRITER or 0, as xring_take_batch.
 *   Returns the records taken (0: empty, or the first one stays), -errno of
 *   copy when it failed on the first record, -EIO (broken), -EINVAL.
 *   xring_take_copy_try never sleeps on the lock (-EBUSY, nothing taken).
 */
int xring_take_copy(struct xring_chan *ch, int dir, int max,
                    int (*accept)(const struct xring_msg *, void *),
                    int (*copy)(void *, const void *, size_t), void *arg, int *wake);
int xring_take_copy_try(struct xring_chan *ch, int dir, int max,
                        int (*accept)(const struct xring_msg *, void *),
                        int (*copy)(void *, const void *, size_t), void *arg, int *wake);

/*
 * xring_arm_reader / xring_arm_writer -- declare that this side is about to
 *   sleep waiting for data in (space in) ring dir.  Returns 1 if it need not
 *   sleep (data is there / there is room below hiwat now), 0 if it may
 *   sleep: the next xring_put (xring_take crossing lowat) will report
 *   XRING_WAKE_READER (XRING_WAKE_WRITER).  A shut ring also returns 1 (a
 *   reader then finds EOF, a writer -EPIPE).  An arm that returns 1 takes
 *   itself back.  -EIO if broken.
 */
int xring_arm_reader(struct xring_chan *ch, int dir);
int xring_arm_writer(struct xring_chan *ch, int dir);

/*
 * xring_bell_value -- ring dir's doorbell word (a 32-bit futex word in the
 *   shared mapping, one per ring: its reader and its writer both sleep on
 *   it).  It is bumped by xring_ring, which the caller calls when a put
 *   reports XRING_WAKE_READER or a take XRING_WAKE_WRITER (put and take
 *   themselves make no system call); xring_shut and a ring found broken ring
 *   it too.  To sleep: seen = xring_bell_value(); arm; if the arm returned 0,
 *   xring_wait(seen).
 *   xring_wait waits on it (FUTEX_WAIT, shared, not private): returns 0 when
 *   the word differs from `seen`, when woken, or after timeout_ms (-1: no
 *   timeout); -EINTR on a signal; -EINVAL for a bad dir.  Wake-ups may be
 *   spurious: the caller tries again and re-arms.
 */
uint32_t xring_bell_value(struct xring_chan *ch, int dir);
int xring_wait(struct xring_chan *ch, int dir, uint32_t seen, int timeout_ms);
void xring_ring(struct xring_chan *ch, int dir); /* bump the bell word, FUTEX_WAKE all */

/* xring_queued -- bytes queued in ring dir (validated; 0 if broken, or if the
 * consumers moved head at every one of its 64 reads: a snapshot, for
 * statistics and tests, not for deciding to sleep). */
uint32_t xring_queued(struct xring_chan *ch, int dir);

/* xring_shut -- mark ring dir shut: later puts fail with -EPIPE; what is
 * queued can still be taken. xring_is_shut tells (1/0). */
void xring_shut(struct xring_chan *ch, int dir);
int xring_is_shut(struct xring_chan *ch, int dir);

/*
 * xring_set_peer -- fd (-1: none) is this process's descriptor whose
 *   hang-up (poll: POLLHUP/POLLRDHUP/POLLERR) says that every process of the
 *   side other than `side` is gone (the bell of a split pipe: the kernel
 *   closes it at exit, before the zombie is reaped).  The lock waits of side
 *   `side` (the producer lock of ring side, the consumer lock of ring !side)
 *   look at it after 50 ms, and then break the ring.  Not owned: the caller
 *   sets -1 before closing it.
 */
void xring_set_peer(struct xring_chan *ch, int side, int fd);

/* xring_cancel -- from now on the lock waits of side `side` in this process
 * (see xring_set_peer) return -ECANCELED within a sleep slice (10 ms)
 * instead of waiting on: that side is closing.  Never undone. */
void xring_cancel(struct xring_chan *ch, int side);

/* xring_broken -- 1 if ring dir was found inconsistent (or its lock holder
 * died), 0 otherwise. */
int xring_broken(struct xring_chan *ch, int dir);

#endif
