/* SPDX-License-Identifier: MIT */
/*
 * fuzz_calls.h -- stream-head calls decoded from fuzz input, shared by the
 * fuzz targets (fuzz_head_calls.c makes whole inputs of them,
 * fuzz_head_from_below.c interleaves them with messages from a driver).
 *
 *   struct fz_fds        the descriptors an input holds (FZ_NFD slots, -1
 *                        free), and the devices it may open
 *   fz_fds_init(f, devs, ndevs)
 *   fz_call(z, f)        decode and make one call: open/pipe/close, push/pop,
 *                        putmsg/getmsg/putpmsg/getpmsg, read/write/readv/
 *                        writev, every I_* ioctl (I_STR with a fuzzed
 *                        strioctl), transparent ioctls, I_SENDFD/I_RECVFD,
 *                        I_LINK/I_UNLINK (and the persistent forms), I_SETSIG,
 *                        fcntl, poll
 *   fz_close_all(f)      undo persistent links, close every descriptor
 *
 * No call may block: every stream is opened O_NONBLOCK and keeps it (F_SETFL
 * cannot clear it), its close time is 0 ms (I_SETCLTIME, fuzzed up to 3 ms),
 * I_STR waits at most 1 s, poll does not wait.  Pointers handed to the
 * library are always valid (bad pointers are a separate concern); lengths,
 * flags, bands, options and commands are fuzzed.
 */
#ifndef UST_FUZZ_CALLS_H
#define UST_FUZZ_CALLS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stropts.h>
#include <sys/loop.h>
#include <sys/sc.h>
#include <sys/uio.h>
#include <unistd.h>
#include <ustreams.h>

#include "fuzz_decode.h"

#define FZ_NFD 8
#define FZ_BUF 1024

struct fz_fds {
    int fd[FZ_NFD];
    const char *const *devs; /* paths strm_open may be given */
    int ndevs;
};

static const char *const fz_modules[] = {"nullmod",  "srvmod", "pipemod",
                                         "nosuchmd", "",       "nullmodX", "sc"};
#define FZ_NMODULES ((unsigned)(sizeof(fz_modules) / sizeof(fz_modules[0])))

static char fz_buf[FZ_BUF];  /* data handed to the library */
static char fz_cbuf[FZ_BUF]; /* control parts */
static char fz_dbuf[FZ_BUF]; /* data parts */

static inline void fz_fds_init(struct fz_fds *f, const char *const *devs, int ndevs)
{
    for (int i = 0; i < FZ_NFD; i++)
        f->fd[i] = -1;
    f->devs = devs;
    f->ndevs = ndevs;
}

/* A free slot, or -1. */
static inline int fz_free_slot(struct fz_fds *f)
{
    for (int i = 0; i < FZ_NFD; i++)
        if (f->fd[i] < 0)
            return i;
    return -1;
}

/*
 * Close a descriptor the way the targets do: first receive every descriptor
 * waiting at its head (closing those the same way, a few levels deep); a
 * message in the way is read and dropped (getmsg), or if that fails the read
 * side is flushed once.  Two streams each waiting in the other's read queue
 * are never released by their last closes (a reference cycle: see
 * tests/fuzz/README.md, known findings); without this every input that makes
 * one would stop the fuzzer on that one case.  USTREAMS_FUZZ_STRICT=1 in the
 * environment skips the draining (ctest's replays of the seed corpus).
 */
static inline void fz_close_fd(int fd, int depth)
{
    static char cb[FZ_BUF], db[FZ_BUF];
    struct strrecvfd rf;
    int flushed = 0;
    static int strict = -1;

    if (strict < 0)
        strict = getenv("USTREAMS_FUZZ_STRICT") != NULL;
    for (int i = 0; !strict && i < 64; i++) {
        memset(&rf, 0, sizeof(rf));
        if (strm_ioctl(fd, I_RECVFD, &rf) == 0) {
            if (!isastream(rf.fd))
                close(rf.fd);
            else if (depth < 4)
                fz_close_fd(rf.fd, depth + 1);
            else
                strm_close(rf.fd);
            continue;
        }
        if (errno == EAGAIN || errno == EBADF)
            break;
        struct strbuf c = {FZ_BUF, 0, cb}, d = {FZ_BUF, 0, db};
        int flags = 0;
        if (errno == EBADMSG && getmsg(fd, &c, &d, &flags) >= 0)
            continue;
        if (flushed)
            break;
        strm_ioctl(fd, I_FLUSH, FLUSHR);
        flushed = 1;
    }
    strm_close(fd);
}

/* Take a new descriptor into a slot: non-blocking, close time 0.  Closed at
 * once when no slot is free. */
static inline void fz_adopt(struct fz_fds *f, int fd)
{
    int zero = 0, s = fz_free_slot(f);
    if (fd < 0)
        return;
    if (!isastream(fd)) {
        close(fd);
        return;
    }
    strm_fcntl(fd, F_SETFL, O_NONBLOCK | strm_fcntl(fd, F_GETFL));
    strm_ioctl(fd, I_SETCLTIME, &zero);
    if (s < 0)
        fz_close_fd(fd, 0);
    else
        f->fd[s] = fd;
}

/* A descriptor from a slot (possibly -1, i.e. a bad one), or now and then a
 * number that is not a stream. */
static inline int fz_fd(struct fz *z, struct fz_fds *f)
{
    unsigned k = fz_u8(z);
    if (k == 255)
        return 0; /* standard input: not a stream */
    return f->fd[k % FZ_NFD];
}

/* A length in [-1, max], small ones likelier. */
static inline int fz_len(struct fz *z, int max)
{
    unsigned v = fz_u16(z);
    if (v == 0xffff)
        return -1;
    if (v & 0x8000)
        return (int)(v % (unsigned)(max + 1));
    return (int)(v % 65u <= (unsigned)max ? v % 65u : (unsigned)max);
}

/* Fill *sb for putmsg: NULL sometimes, len in [-1, FZ_BUF], bytes from z. */
static inline struct strbuf *fz_outbuf(struct fz *z, struct strbuf *sb, char *buf)
{
    unsigned mode = fz_u8(z);
    if (mode % 5 == 0)
        return NULL;
    sb->maxlen = (int)fz_u16(z) - 1;
    sb->len = fz_len(z, FZ_BUF);
    sb->buf = buf;
    if (sb->len > 0)
        fz_bytes(z, buf, (size_t)sb->len);
    return sb;
}

/* Fill *sb for getmsg: NULL sometimes, maxlen in [-1, FZ_BUF]. */
static inline struct strbuf *fz_inbuf(struct fz *z, struct strbuf *sb, char *buf)
{
    unsigned mode = fz_u8(z);
    if (mode % 5 == 0)
        return NULL;
    sb->maxlen = fz_len(z, FZ_BUF);
    sb->len = (int)fz_u16(z);
    sb->buf = buf;
    return sb;
}

/* A module name: a built-in one, a bad one, or fuzzed bytes. */
static inline const char *fz_modname(struct fz *z, char *name, size_t n)
{
    unsigned k = fz_u8(z);
    if (k < 240)
        return fz_modules[k % FZ_NMODULES];
    size_t len = fz_bytes(z, name, (k - 240) % (n - 1) + 1);
    name[len < n ? len : n - 1] = '\0';
    return name;
}

/* Receive a descriptor with I_RECVFD and keep it. */
static inline void fz_recvfd(struct fz_fds *f, int fd)
{
    struct strrecvfd rf;
    memset(&rf, 0, sizeof(rf));
    if (strm_ioctl(fd, I_RECVFD, &rf) == 0)
        fz_adopt(f, rf.fd);
}

static inline void fz_ioctl_str(struct fz *z, int fd)
{
    static const int cmds[] = {I_NREAD,  I_PUSH,  I_POP,   I_LINK,  I_UNLINK,    I_STR,
                               LOOP_SET, SAD_SAP, SAD_GAP, SAD_VML, I_FLUSH,     0,
                               SC_IOC_LIST};
    struct strioctl sio;
    unsigned k = fz_u8(z);
    sio.ic_cmd = k < 128 ? cmds[k % (sizeof(cmds) / sizeof(cmds[0]))] : (int)fz_u32(z);
    sio.ic_timout = 1;
    sio.ic_len = fz_len(z, FZ_BUF);
    sio.ic_dp = fz_u8(z) == 7 ? NULL : fz_buf;
    if (sio.ic_len > 0)
        fz_bytes(z, fz_buf, (size_t)sio.ic_len);
    strm_ioctl(fd, I_STR, &sio);
}

static inline void fz_ioctl(struct fz *z, struct fz_fds *f, int fd)
{
    char name[FMNAMESZ + 4];
    int v = 0;
    unsigned op = fz_u8(z);

    switch (op % 36) {
    case 0:
        strm_ioctl(fd, I_NREAD, &v);
        break;
    case 1:
        strm_ioctl(fd, I_PUSH, fz_modname(z, name, sizeof(name)));
        break;
    case 2:
        strm_ioctl(fd, I_POP, 0);
        break;
    case 3:
        strm_ioctl(fd, I_LOOK, name);
        break;
    case 4:
        strm_ioctl(fd, I_FLUSH, (int)fz_u8(z) - 8);
        break;
    case 5: {
        struct bandinfo bi = {.bi_pri = fz_u8(z), .bi_flag = (int)fz_u8(z) - 8};
        strm_ioctl(fd, I_FLUSHBAND, &bi);
        break;
    }
    case 6:
        strm_ioctl(fd, I_SRDOPT, (int)fz_u16(z) - 256);
        break;
    case 7:
        strm_ioctl(fd, I_GRDOPT, &v);
        break;
    case 8:
        strm_ioctl(fd, I_SWROPT, (int)fz_u16(z) - 256);
        break;
    case 9:
        strm_ioctl(fd, I_GWROPT, &v);
        break;
    case 10:
        fz_ioctl_str(z, fd);
        break;
    case 11:
        strm_ioctl(fd, I_SETSIG, (int)fz_u16(z) - 256);
        break;
    case 12:
        strm_ioctl(fd, I_GETSIG, &v);
        break;
    case 13:
        strm_ioctl(fd, I_FIND, fz_modname(z, name, sizeof(name)));
        break;
    case 14:
    case 15: {
        int lower = fz_fd(z, f);
        strm_ioctl(fd, op % 36 == 14 ? I_LINK : I_PLINK, lower);
        break;
    }
    case 16:
    case 17: {
        int muxid = (int)fz_u8(z) - 2; /* MUXID_ALL (-1) included */
        strm_ioctl(fd, op % 36 == 16 ? I_UNLINK : I_PUNLINK, muxid);
        break;
    }
    case 18:
        fz_recvfd(f, fd);
        break;
    case 19: {
        struct strpeek pk;
        pk.ctlbuf.maxlen = fz_len(z, FZ_BUF);
        pk.ctlbuf.buf = fz_cbuf;
        pk.databuf.maxlen = fz_len(z, FZ_BUF);
        pk.databuf.buf = fz_dbuf;
        pk.flags = fz_u8(z) % 3;
        strm_ioctl(fd, I_PEEK, &pk);
        break;
    }
    case 20: {
        struct strfdinsert fi;
        fi.ctlbuf.maxlen = 0;
        fi.ctlbuf.len = fz_len(z, FZ_BUF);
        fi.ctlbuf.buf = fz_cbuf;
        fi.databuf.maxlen = 0;
        fi.databuf.len = fz_len(z, FZ_BUF);
        fi.databuf.buf = fz_dbuf;
        fi.flags = fz_u8(z) % 3;
        fi.fildes = fz_fd(z, f);
        fi.offset = (int)fz_u16(z) % 1100 - 4;
        strm_ioctl(fd, I_FDINSERT, &fi);
        break;
    }
    case 21:
        strm_ioctl(fd, I_SENDFD, fz_fd(z, f));
        break;
    case 22: {
        struct str_mlist ml[4];
        struct str_list sl = {.sl_nmods = (int)fz_pick(z, 6) - 1, .sl_modlist = ml};
        if (sl.sl_nmods > 4)
            strm_ioctl(fd, I_LIST, NULL);
        else
            strm_ioctl(fd, I_LIST, &sl);
        break;
    }
    case 23:
        strm_ioctl(fd, I_CKBAND, (int)fz_u16(z) - 8);
        break;
    case 24:
        strm_ioctl(fd, I_GETBAND, &v);
        break;
    case 25:
        strm_ioctl(fd, I_ATMARK, (int)fz_u8(z) - 1);
        break;
    case 26:
        v = (int)fz_pick(z, 5) - 1; /* -1 .. 3 ms: close never waits long */
        strm_ioctl(fd, I_SETCLTIME, &v);
        break;
    case 27:
        strm_ioctl(fd, I_GETCLTIME, &v);
        break;
    case 28:
        strm_ioctl(fd, I_CANPUT, (int)fz_u16(z) - 8);
        break;
    case 29:
        strm_ioctl(fd, I_SERROPT, (int)fz_u8(z) - 1);
        break;
    case 30:
        strm_ioctl(fd, I_GERROPT, &v);
        break;
    case 31:
        strm_ioctl(fd, I_ANCHOR, 0);
        break;
    case 32:
        strm_ioctl(fd, I_ISASTREAM, 0);
        break;
    case 33: {
        static const unsigned long other[] = {I_PIPE,    I_FIFO,     I_GETTP, I_STATS,
                                              I_BIGPIPE, I_AUTOPUSH, I_HEAP,  I_E_RECVFD};
        unsigned k = fz_pick(z, 8);
        if (other[k] == I_E_RECVFD)
            fz_recvfd(f, fd);
        else
            strm_ioctl(fd, other[k], fz_buf);
        break;
    }
    case 34: {
        struct strpmsg pm;
        unsigned k = fz_pick(z, 4);
        unsigned long cmd = k == 0 ? I_PUTMSG : k == 1 ? I_PUTPMSG : k == 2 ? I_GETMSG : I_GETPMSG;
        memset(&pm, 0, sizeof(pm));
        if (k < 2) {
            pm.ctlbuf.maxlen = 0;
            pm.ctlbuf.len = fz_len(z, FZ_BUF);
            pm.databuf.len = fz_len(z, FZ_BUF);
        } else {
            pm.ctlbuf.maxlen = fz_len(z, FZ_BUF);
            pm.databuf.maxlen = fz_len(z, FZ_BUF);
        }
        pm.ctlbuf.buf = fz_cbuf;
        pm.databuf.buf = fz_dbuf;
        pm.band = (int)fz_u16(z) - 8;
        pm.flags = (long)fz_u8(z) - 1;
        strm_ioctl(fd, cmd, &pm);
        break;
    }
    default: /* transparent: the driver (or the pipe's far head) answers */
        strm_ioctl(fd, (unsigned long)fz_u32(z), fz_buf);
        break;
    }
}

static inline void fz_call(struct fz *z, struct fz_fds *f)
{
    struct strbuf c, d, *cp, *dp;
    struct iovec iov[3];
    unsigned op = fz_u8(z);
    int fd = fz_fd(z, f);
    int flags, band;

    switch (op % 16) {
    case 0: {
        static const int modes[] = {O_RDWR, O_RDONLY, O_WRONLY, O_RDWR | O_NDELAY};
        const char *path = f->devs[fz_pick(z, (unsigned)f->ndevs)];
        fz_adopt(f, strm_open(path, modes[fz_pick(z, 4)] | O_NONBLOCK));
        break;
    }
    case 1: {
        int p[2];
        if (strm_pipe(p) == 0) {
            fz_adopt(f, p[0]);
            fz_adopt(f, p[1]);
        }
        break;
    }
    case 2:
        for (int i = 0; i < FZ_NFD; i++)
            if (f->fd[i] == fd && fd >= 0) {
                fz_close_fd(fd, 0);
                f->fd[i] = -1;
                break;
            }
        break;
    case 3:
    case 4:
        cp = fz_outbuf(z, &c, fz_cbuf);
        dp = fz_outbuf(z, &d, fz_dbuf);
        flags = (int)fz_u8(z) - 1;
        if (op % 16 == 3)
            putmsg(fd, cp, dp, flags);
        else
            putpmsg(fd, cp, dp, (int)fz_u16(z) - 8, flags);
        break;
    case 5:
    case 6:
        cp = fz_inbuf(z, &c, fz_cbuf);
        dp = fz_inbuf(z, &d, fz_dbuf);
        flags = (int)fz_u8(z) - 1;
        band = (int)fz_u16(z) - 8;
        if (op % 16 == 5)
            getmsg(fd, cp, dp, &flags);
        else
            getpmsg(fd, cp, dp, &band, &flags);
        break;
    case 7:
    case 8: {
        int len = fz_len(z, FZ_BUF);
        if (op % 16 == 7)
            strm_read(fd, fz_buf, len < 0 ? 0 : (size_t)len);
        else
            strm_write(fd, fz_buf, len < 0 ? 0 : (size_t)len);
        break;
    }
    case 9:
    case 10: {
        int n = (int)fz_pick(z, 4);
        for (int i = 0; i < n; i++) {
            iov[i].iov_base = fz_buf + i * (FZ_BUF / 4);
            iov[i].iov_len = (size_t)fz_len(z, FZ_BUF / 4) & 0xff;
        }
        if (op % 16 == 9)
            strm_readv(fd, iov, n);
        else
            strm_writev(fd, iov, n);
        break;
    }
    case 11: {
        int fl = strm_fcntl(fd, F_GETFL);
        if (fl != -1)
            strm_fcntl(fd, F_SETFL, (fl ^ (int)fz_u16(z)) | O_NONBLOCK);
        break;
    }
    case 12: {
        struct pollfd pfd[2] = {{.fd = fd, .events = (short)fz_u16(z)},
                                {.fd = fz_fd(z, f), .events = (short)fz_u16(z)}};
        strm_poll(pfd, 1 + fz_pick(z, 2), 0);
        break;
    }
    default:
        fz_ioctl(z, f, fd);
        break;
    }
}

/* Undo persistent links (they outlive the descriptors) and close every
 * descriptor the input holds. */
static inline void fz_close_all(struct fz_fds *f)
{
    for (int i = 0; i < FZ_NFD; i++)
        if (f->fd[i] >= 0)
            strm_ioctl(f->fd[i], I_PUNLINK, MUXID_ALL);
    int mux = strm_open("/dev/streams/mux", O_RDWR | O_NONBLOCK);
    if (mux >= 0) { /* persistent links whose controlling stream is gone */
        strm_ioctl(mux, I_PUNLINK, MUXID_ALL);
        strm_close(mux);
    }
    for (int i = 0; i < FZ_NFD; i++)
        if (f->fd[i] >= 0) {
            int fd = f->fd[i];
            f->fd[i] = -1;
            fz_close_fd(fd, 0);
        }
}

#endif /* UST_FUZZ_CALLS_H */
