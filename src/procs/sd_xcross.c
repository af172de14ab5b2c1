/* SPDX-License-Identifier: MIT */
/*
 * sd_xcross.c -- what may cross a split pipe: the one table of the message
 * types a far side's record may become in this process, applied where a
 * record of the ring is rebuilt into a message (sd_xpipe_read.c:
 * record_take, small_up; M_PASSFP records in passfp_take).
 *
 * Principles of operation
 *   The far side of a split pipe is another process, perhaps another
 *   user's, and it may write the shared ring itself: a record is hostile
 *   input.  Through the pipe it may cause here what a pipe between two
 *   processes lets one side cause on the other, and nothing it could not
 *   do with its own system calls.  So:
 *     - effects on the STREAM (data, its bands and boundaries, hang-up,
 *       errors, flushes) cross as they do in a pipe within one process: the
 *       peer could cause as much by writing or closing;
 *     - effects on the PROCESS (signals) cross only where the sender could
 *       have sent the signal with kill(2);
 *     - the receiver's own limits bound what the peer can make it hold
 *       (water marks, message size), whatever the peer asks;
 *     - what has no meaning coming up a pipe (ioctl traffic, line control,
 *       module-private messages) is dropped and counted.
 *
 *   type                     decision            why
 *   M_DATA M_PROTO M_PCPROTO crosses (bands kept) a pipe's data; the head
 *                                                 keeps one M_PCPROTO at a time
 *   zero-length message      crosses             a pipe carries it
 *   M_PASSFP                 crosses, validated  passfp_take: the descriptor
 *                                                 and the sender's ids come
 *                                                 from the kernel (the bell)
 *   M_SIG M_PCSIG            kill(2) rule        below; SIGPOLL always (it
 *                                                 only reaches processes that
 *                                                 asked, I_SETSIG S_MSG)
 *   M_SETOPTS                filtered            SO_HIWAT/SO_LOWAT/SO_MAXPSZ
 *                                                 clamped to XC_HIWAT_MAX;
 *                                                 SO_WROFF, SO_MAXBLK (write
 *                                                 shaping, meaningless over a
 *                                                 ring) and SO_ISTTY/ISNTTY/
 *                                                 TOSTOP/TONSTOP (job control:
 *                                                 the process) removed; the
 *                                                 rest acts on the stream
 *   M_ERROR M_HANGUP         crosses             the stream only; the peer
 *   M_UNHANGUP M_FLUSH                            could close or write anyway
 *   M_READ                   crosses             releases what the head holds
 *                                                 (SNDHOLD), as in a pipe
 *   M_IOCTL M_IOCACK M_IOCNAK dropped, counted   an ioctl is answered where
 *   M_COPYIN M_COPYOUT                            it is made (the split end
 *   M_IOCDATA                                     refuses it, sd_xpipe.c);
 *                                                 a forged reply or copy
 *                                                 request would act on this
 *                                                 process's ioctl and memory
 *   M_BREAK M_DELAY M_CTL    dropped, counted    line/module control of the
 *   M_STOP M_START M_STOPI                        far side's own stream; the
 *   M_STARTI M_EVENT ... and                      head would free them
 *   any other type
 *   anything above XC_MSG_MAX dropped, counted   larger than a ring of ours
 *                                                 holds: no writer of ours
 *                                                 makes it
 *
 *   Signals: the kill(2) rule.  kill(2) lets a process signal another when
 *   its real or effective uid equals the target's real or saved uid, or it
 *   is privileged.  The sender's identity is the one the kernel gives with
 *   the bell message sent just before the record (SCM_CREDENTIALS: the
 *   sender names its effective uid when that is 0, else its real uid, and
 *   the kernel accepts only ids the sender holds); it is looked at for each
 *   signal, so a peer that changed its uid after the fork or the
 *   rendezvous is judged as it is when it sends.  The receiver's ids are
 *   read when the record is delivered.  Allowed: sender uid 0, or equal to
 *   the receiver's real or saved uid -- SIGKILL and SIGSTOP included, as
 *   kill(2) allows them.  A signal record without its bell message (a peer
 *   that wrote the ring itself), with a token whose signal differs from the
 *   record's byte, or from a sender kill(2) would refuse, is dropped and
 *   counted (XC_SIG_DROPPED).  The signal number is taken from the token,
 *   which travelled on the bell, so another holder of the same side cannot
 *   change a signal in the ring into another.  Judged by one uid: a sender
 *   whose effective uid is neither 0 nor its real uid is judged by its real
 *   uid; privilege is uid 0 (CAP_KILL without uid 0 is not seen).
 *
 * Locking: none; the counters and the retry slots are atomic.
 * ust_xcross_in runs in the read service procedure of its end (one at a
 * time), which alone drains and takes from the end's bell.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ustreams.h>

#include "sd_xcross.h"

static atomic_long counts[XC_NCOUNTS];
_Static_assert(XC_NCOUNTS == 3, "sd_procs.h declares ust_xcross_counts(long out[3])");

void ust_xcross_counts(long out[XC_NCOUNTS])
{
    for (int i = 0; i < XC_NCOUNTS; i++)
        out[i] = atomic_load_explicit(&counts[i], memory_order_relaxed);
}

static void count(int which)
{
    atomic_fetch_add_explicit(&counts[which], 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* Write side                                                               */
/* ------------------------------------------------------------------------ */

/* A new signal token for sig (1..NSIG-1): bytes 1-3 have bit 7 set (so none
 * is 'F'), byte 3 also bit 6 (XP_SIG_TOKEN), byte 0 is sig (< 'F'). */
static uint32_t sig_token(int sig)
{
    static atomic_uint seq;
    uint32_t s = atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed) ^
                 ((uint32_t)getpid() * 2654435761u);
    uint32_t b1 = 0x80u | (s & 0x7f), b2 = 0x80u | ((s >> 7) & 0x7f);
    uint32_t b3 = 0xc0u | ((s >> 14) & 0x3f);
    return (uint32_t)sig | b1 << 8 | b2 << 16 | b3 << 24;
}

/* Signal messages whose record found the ring full: the writer retries the
 * same message (ust_xpipe_wsrv), which must not send a second credential --
 * the first one waits at the receiver for the record (an unclaimed one
 * would hold a slot of its bell, sd_xbell.h XBELL_FDS).  A few slots,
 * without a lock (nothing to hold across fork): signals are rare and a
 * full ring rarer.  A race can only pair a message with another token of
 * this process -- the same credential: at worst the receiver finds no
 * credential (the signal is dropped, counted) or one credential stays
 * unclaimed; a token is reused only for its own signal number. */
enum { XC_RETRY_SLOTS = 8 };
static struct {
    _Atomic(const void *) xe, mp;
    atomic_uint token;
} retry[XC_RETRY_SLOTS];
static atomic_uint retry_next;

/* The token kept for (xe, mp) with signal sig, taken out; 0 if none. */
static uint32_t retry_take(const void *xe, const void *mp, int sig)
{
    for (int i = 0; i < XC_RETRY_SLOTS; i++) {
        const void *want = mp;
        if (atomic_load(&retry[i].xe) != xe || atomic_load(&retry[i].mp) != mp)
            continue;
        uint32_t tok = atomic_load(&retry[i].token);
        if (atomic_compare_exchange_strong(&retry[i].mp, &want, NULL) &&
            (int)(tok & 0xff) == sig)
            return tok;
    }
    return 0;
}

static void retry_keep(const void *xe, const void *mp, uint32_t tok)
{
    unsigned i = atomic_fetch_add(&retry_next, 1) % XC_RETRY_SLOTS;
    atomic_store(&retry[i].mp, NULL);
    atomic_store(&retry[i].token, tok);
    atomic_store(&retry[i].xe, xe);
    atomic_store(&retry[i].mp, mp);
}

int ust_xcross_put(struct ust_xend *xe, const mblk_t *mp, struct xring_msg *m,
                   const struct iovec *iov, int n, int nowait)
{
    int sig = 0;

    switch (m->type) {
    case M_SIG:
    case M_PCSIG:
        sig = mp->b_wptr > mp->b_rptr ? mp->b_rptr[0] : 0;
        if (sig <= 0 || sig >= NSIG) {
            sig = 0; /* the head ignores it: no credential needed */
            break;
        }
        m->aux = retry_take(xe, mp, sig);
        if (m->aux == 0) {
            m->aux = sig_token(sig);
            if (ust_xbell_sendcred(xe->bell.fd, m->aux) != 0) {
                count(XC_SIG_DROPPED);
                return 0;
            }
        }
        break;
    case M_FLUSH:
        if (mp->b_flag & MSGNOLOOP)
            m->flags |= XF_NOLOOP;
        break;
    default:
        break;
    }
    int r = nowait ? xring_put_try(xe->xc->ch, xe->side, m, iov, n)
                   : xring_put(xe->xc->ch, xe->side, m, iov, n);
    if ((r == -EAGAIN || r == -EBUSY) && sig != 0)
        retry_keep(xe, mp, m->aux); /* the credential is sent: the record follows */
    return r;
}

/* ------------------------------------------------------------------------ */
/* Read side                                                                */
/* ------------------------------------------------------------------------ */

/* May a process of uid `uid` (as the kernel gave it; -1 unknown) signal
 * this one with kill(2)?  Looked at now: this process may have changed its
 * ids since the pipe was made. */
static int kill_ok(uid_t uid)
{
    uid_t r, e, s;
    if (uid == (uid_t)-1 || getresuid(&r, &e, &s) != 0)
        return 0;
    return uid == 0 || uid == r || uid == s;
}

/* A signal record: its credential from the bell (drained once if it has
 * not been read yet: the sender sends it before the record). */
static mblk_t *sig_in(struct ust_xend *xe, const struct xring_msg *m, mblk_t *mp)
{
    int sig = m->ctl_len >= 1 ? mp->b_rptr[0] : 0;
    int fd = -1;
    uid_t uid = (uid_t)-1;
    gid_t gid;
    int have = 0;

    if ((m->aux & 0xc0000000u) == 0xc0000000u) {
        have = ust_xbell_take(&xe->bell, m->aux, &fd, &uid, &gid);
        if (!have) {
            xp_bell_drain(xe);
            have = ust_xbell_take(&xe->bell, m->aux, &fd, &uid, &gid);
        }
        if (have && fd >= 0) { /* a descriptor under a signal's token: not ours to take */
            close(fd);
            have = 0;
        }
    }
    if (sig <= 0 || sig >= NSIG)
        return mp; /* the head ignores it */
    if (sig == SIGPOLL && !(have && (int)(m->aux & 0xff) != sig))
        return mp; /* to those registered for S_MSG only, who asked for it */
    if (!have || (int)(m->aux & 0xff) != sig || !kill_ok(uid)) {
        freemsg(mp);
        count(XC_SIG_DROPPED);
        return NULL;
    }
    return mp;
}

static size_t clamp(size_t v)
{
    return v > XC_HIWAT_MAX ? XC_HIWAT_MAX : v;
}

/* M_SETOPTS: what may act on the process or make it hold more than its
 * limits is removed or clamped (the table above). */
static mblk_t *setopts_in(mblk_t *mp)
{
    struct stroptions so;
    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(so))
        return mp; /* the head ignores it */
    memcpy(&so, mp->b_rptr, sizeof(so));
    struct stroptions was = so;
    so.so_flags &= ~(uint_t)(SO_WROFF | SO_MAXBLK | SO_ISTTY | SO_ISNTTY | SO_TOSTOP | SO_TONSTOP);
    if (so.so_flags & SO_HIWAT)
        so.so_hiwat = clamp(so.so_hiwat);
    if (so.so_flags & SO_LOWAT)
        so.so_lowat = clamp(so.so_lowat);
    if ((so.so_flags & SO_MAXPSZ) && (so.so_maxpsz < 0 || so.so_maxpsz > XC_HIWAT_MAX))
        so.so_maxpsz = XC_HIWAT_MAX; /* INFPSZ included */
    if ((so.so_flags & SO_MINPSZ) && (so.so_minpsz < 0 || so.so_minpsz > XC_HIWAT_MAX))
        so.so_minpsz = 0;
    if (memcmp(&so, &was, sizeof(so)) != 0) {
        memcpy(mp->b_rptr, &so, sizeof(so));
        count(XC_OPTS_FILTERED);
    }
    return mp;
}

mblk_t *ust_xcross_in(struct ust_xend *xe, const struct xring_msg *m, mblk_t *mp)
{
    if ((uint64_t)m->ctl_len + m->data_len > XC_MSG_MAX)
        goto drop;
    switch (m->type) {
    case M_DATA:
    case M_PROTO:
    case M_PCPROTO:
    case M_ERROR:
    case M_HANGUP:
    case M_UNHANGUP:
    case M_READ:
        return mp;
    case M_FLUSH:
        if (m->flags & XF_NOLOOP)
            mp->b_flag |= MSGNOLOOP;
        return mp;
    case M_SIG:
    case M_PCSIG:
        return sig_in(xe, m, mp);
    case M_SETOPTS:
        return setopts_in(mp);
    default: /* M_PASSFP reaches here only out of turn (small_up); ioctl
              * traffic, line and module control: see the table */
        break;
    }
drop:
    freemsg(mp);
    count(XC_MSG_DROPPED);
    return NULL;
}
