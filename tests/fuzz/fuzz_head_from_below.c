/* SPDX-License-Identifier: MIT */
/*
 * fuzz_head_from_below.c -- fuzz target: messages arriving at a stream head
 * from below, sent by the test driver "hdrv" (tests/head_tdrv.h), interleaved
 * with user calls (fuzz_calls.h) on that stream, on other devices and pipes.
 *
 * Input: a sequence of steps; a step's first byte below 0x80 is a user call,
 * otherwise a message goes up hdrv's stream: M_DATA, M_PROTO, M_PCPROTO
 * (bands), M_SETOPTS (fuzzed struct stroptions, also short), M_ERROR,
 * M_HANGUP, M_UNHANGUP, M_FLUSH (fuzzed flags and band), unsolicited
 * M_IOCACK/M_IOCNAK/M_COPYIN/M_COPYOUT (fuzzed ids), M_SIG/M_PCSIG, M_READ,
 * any other type, with fuzzed (also empty or oversized) blocks -- except
 * M_PASSFP, whose body is a reference to a stream that only a stream head
 * makes (I_SENDFD, which the user calls exercise on pipes).
 * An ioctl that reaches hdrv (I_STR or transparent) is answered from the
 * input too, inside hdrv's put procedure: first any number of messages from
 * below (a wrong-id answer among them), then the answer -- M_IOCACK,
 * M_IOCNAK, M_COPYIN or M_COPYOUT (addresses always inside the caller's
 * buffer) -- and again for each M_IOCDATA, so no call waits.
 * After each input every stream is closed and no block may be outstanding.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_calls.h"
#include "head_tdrv.h"

static const char *const devs[] = {
    "/dev/streams/hdrv", "/dev/streams/hdrv", "/dev/streams/hdrv", "/dev/streams/hdrv",
    "/dev/streams/echo", "/dev/streams/mux",  "/dev/streams/nuls",
};

static struct fz *below; /* the input, while one is running */

/* The types a message from below may have; the last is "any byte". */
static const unsigned char up_types[] = {
    M_DATA,  M_PROTO,  M_PCPROTO, M_SETOPTS, M_ERROR,   M_HANGUP, M_UNHANGUP,
    M_FLUSH, M_IOCACK, M_IOCNAK,  M_COPYIN,  M_COPYOUT, M_SIG,    M_PCSIG,
    M_READ,  M_CTL,    M_IOCDATA, M_IOCTL,   M_DELAY,   0xff,
};
#define NUP ((unsigned)(sizeof(up_types) / sizeof(up_types[0])))

/* The body of a message of type t: what a driver would put there, with
 * fuzzed fields, or raw fuzzed bytes (any length, also 0). */
static mblk_t *up_msg(struct fz *z, unsigned char t)
{
    unsigned shape = fz_u8(z);
    size_t len;
    mblk_t *mp;

    if (shape >= 200) { /* malformed: raw bytes */
        len = fz_u8(z) % 80;
        mp = allocb(len, BPRI_MED);
        if (mp)
            mp->b_wptr += fz_bytes(z, mp->b_wptr, len);
    } else {
        switch (t) {
        case M_SETOPTS: {
            struct stroptions so;
            memset(&so, 0, sizeof(so));
            so.so_flags = fz_u32(z);
            so.so_readopt = (short)fz_u16(z);
            so.so_wroff = fz_u16(z);
            so.so_minpsz = (ssize_t)(int16_t)fz_u16(z);
            so.so_maxpsz = (ssize_t)(int16_t)fz_u16(z);
            so.so_hiwat = fz_u16(z);
            so.so_lowat = fz_u16(z);
            so.so_band = fz_u8(z);
            so.so_erropt = fz_u8(z);
            so.so_maxblk = (ssize_t)(int16_t)fz_u16(z);
            len = sizeof(so);
            mp = allocb(len, BPRI_MED);
            if (mp) {
                memcpy(mp->b_wptr, &so, len);
                mp->b_wptr += len;
            }
            break;
        }
        case M_IOCACK:
        case M_IOCNAK:
        case M_COPYIN:
        case M_COPYOUT: {
            union ioctypes u;
            memset(&u, 0, sizeof(u));
            if (t == M_COPYIN || t == M_COPYOUT) {
                size_t off = fz_u16(z) % FZ_BUF;
                u.copyreq.cq_cmd = (int)fz_u32(z);
                u.copyreq.cq_id = fz_u32(z);
                u.copyreq.cq_addr = fz_buf + off;
                u.copyreq.cq_size = fz_u16(z) % (FZ_BUF - off + 1);
            } else {
                u.iocblk.ioc_cmd = (int)fz_u32(z);
                u.iocblk.ioc_id = fz_u32(z);
                u.iocblk.ioc_count = fz_u16(z);
                u.iocblk.ioc_error = (int)fz_u8(z) - 1;
                u.iocblk.ioc_rval = (int)fz_u8(z) - 1;
            }
            len = sizeof(u);
            mp = allocb(len, BPRI_MED);
            if (mp) {
                memcpy(mp->b_wptr, &u, len);
                mp->b_wptr += len;
            }
            break;
        }
        case M_SIG:
        case M_PCSIG: {
            static const unsigned char sigs[] = {SIGPOLL, SIGURG, SIGUSR1, SIGUSR2, 0, 200};
            mp = allocb(1, BPRI_MED);
            if (mp)
                *mp->b_wptr++ = sigs[fz_pick(z, 6)];
            break;
        }
        default:
            len = fz_len(z, 300) & 0x1ff;
            mp = allocb(len, BPRI_MED);
            if (mp)
                mp->b_wptr += fz_bytes(z, mp->b_wptr, len);
            break;
        }
    }
    if (!mp)
        return NULL;
    mp->b_datap->db_type = t;
    mp->b_band = (t & QPCTL) ? 0 : fz_u8(z) % 4 == 0 ? fz_u8(z) : 0;
    if (fz_u8(z) % 4 == 1) { /* a data part (any type) */
        len = fz_u8(z) % 200;
        mblk_t *dp = allocb(len, BPRI_MED);
        if (dp) {
            dp->b_wptr += fz_bytes(z, dp->b_wptr, len);
            mp->b_cont = dp;
        }
    }
    return mp;
}

/* A message from below asks the head to raise the signal in its first byte
 * (M_SIG, M_PCSIG), and the head does, as SVR4 does: keep that to signals
 * the target catches, so that a fuzzed SIGBUS does not end the run. */
static mblk_t *tame(mblk_t *mp)
{
    unsigned char t = mp->b_datap->db_type;
    if ((t == M_SIG || t == M_PCSIG) && mp->b_wptr > mp->b_rptr) {
        int sig = mp->b_rptr[0];
        if (sig > 0 && sig < NSIG && sig != SIGPOLL && sig != SIGURG && sig != SIGUSR2)
            mp->b_rptr[0] = SIGUSR1;
    }
    return mp;
}

/* One message from below, of a fuzzed type. */
static void up_one(struct fz *z)
{
    unsigned k = fz_pick(z, NUP);
    unsigned char t = up_types[k] == 0xff ? fz_u8(z) : up_types[k];
    if (t == M_PASSFP) /* its body is a reference only the head makes */
        t = M_DATA;
    mblk_t *mp = up_msg(z, t);
    if (mp)
        hdrv_up(tame(mp));
}

/* hdrv's answer to an M_IOCTL or M_IOCDATA: first up to three messages
 * from below, then the answer; M_IOCDATA reporting a failed copy gets none
 * (the ioctl is over).  Everything else coming down goes to hdrv's log. */
static int ioc_hook(queue_t *q, mblk_t *mp)
{
    struct fz *z = below;
    unsigned char t = mp->b_datap->db_type;
    struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;

    if (t != M_IOCTL && t != M_IOCDATA)
        return 0;
    if (!z) {
        miocnak(q, mp, 0, EINVAL);
        return 1;
    }
    if (t == M_IOCDATA && cp->cp_rval != 0) {
        freemsg(mp);
        return 1;
    }
    for (unsigned n = fz_pick(z, 8); n > 3 && n < 7; n--)
        up_one(z);
    unsigned how = fz_pick(z, 6);
    size_t off = fz_u16(z) % FZ_BUF;
    size_t size = fz_u16(z) % (FZ_BUF - off + 1);
    switch (how) {
    case 0:
        miocack(q, mp, 0, (int)fz_u8(z) - 1);
        break;
    case 1:
        miocnak(q, mp, 0, (int)fz_u8(z) - 1);
        break;
    case 2: { /* ack with data (a count that may disagree with it) */
        mblk_t *dp = allocb(size, BPRI_MED);
        if (dp) {
            dp->b_wptr += fz_bytes(z, dp->b_wptr, size);
            freemsg(unlinkb(mp));
            linkb(mp, dp);
        }
        miocack(q, mp, (int)fz_u16(z) % (FZ_BUF + 16), 0);
        break;
    }
    case 3:
        mcopyin(mp, NULL, size, fz_buf + off);
        qreply(q, mp);
        break;
    case 4: {
        mblk_t *dp = allocb(size, BPRI_MED);
        if (dp)
            dp->b_wptr += fz_bytes(z, dp->b_wptr, size);
        mcopyout(mp, NULL, size, fz_buf + off, dp);
        qreply(q, mp);
        break;
    }
    default: { /* a message of a fuzzed type with this ioctl's id, then a nak */
        mblk_t *cp2 = copymsg(mp);
        if (cp2) {
            cp2->b_datap->db_type = (unsigned char)(fz_u8(z) | 0x80);
            qreply(q, tame(cp2));
        }
        miocnak(q, mp, 0, EPROTO);
        break;
    }
    }
    return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_process_setup();
    hdrv_wput_hook = ioc_hook;
    if (register_strdev(&hdrv_cdev, 0) <= 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz z = {data, size};
    struct fz_fds f;
    int steps = 0;

    fz_fds_init(&f, devs, (int)(sizeof(devs) / sizeof(devs[0])));
    below = &z;
    fz_adopt(&f, strm_open(devs[0], O_RDWR | O_NONBLOCK));
    while (fz_more(&z) && steps++ < 256) {
        if (z.p[0] < 0x80) {
            fz_u8(&z);
            fz_call(&z, &f);
        } else {
            fz_u8(&z);
            up_one(&z);
        }
    }
    fz_close_all(&f);
    below = NULL;
    hdrv_down_clear();
    fz_end_of_input();
    return 0;
}
