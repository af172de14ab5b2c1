/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tpi.c -- fuzz target: TPI primitives sent to the loopback transports
 * (ticlts, ticots, ticotsord), with timod and tirdwr pushed now and then.
 *
 * The input is a sequence of operations on up to FZ_NFD endpoints:
 *   open an endpoint (a transport, sometimes with timod, tirdwr on top);
 *   send a primitive (putmsg/putpmsg): its type from the TPI requests (or any
 *     number), its fields either coherent -- every length/offset pair naming
 *     an address or option list appended after the structure -- or raw
 *     words; addresses are short strings over a 4-letter alphabet so that
 *     binds collide and connects find listeners; option lists are
 *     T_opthdr lists of XTI_GENERIC options with fuzzed lengths; a data part
 *     of fuzzed length;
 *   a TI_* ioctl (I_STR) carrying such a request, answered through timod;
 *   getmsg (draining indications and acks), read/write, close;
 *   any other stream-head call (fuzz_calls.h) on these endpoints.
 * After each input every endpoint is closed and no message block may be
 * outstanding.  Every call is non-blocking; I_STR waits at most 1 s.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/tihdr.h>
#include <sys/timod.h>
#include <xti.h>

#include "fuzz_calls.h"

static const char *const devs[] = {
    "/dev/ticlts", "/dev/ticots", "/dev/ticotsord", "/dev/streams/ticotsord",
    "/dev/streams/clone/ticots", "/dev/streams/ticlts",
};
#define NDEVS ((unsigned)(sizeof(devs) / sizeof(devs[0])))

/* The requests a user may send, and the (length, offset) word pairs of each:
 * words[i] is the index of a length word, its offset word follows it. */
struct prim_shape {
    t_scalar_t prim;
    int words;     /* size of the structure in t_scalar_t words */
    int pairs;     /* number of (length, offset) pairs */
    int pair[2];   /* word index of each pair's length */
    int opt_pair;  /* index into pair[] of the options pair, -1 none */
};

static const struct prim_shape shapes[] = {
    {T_CONN_REQ, 5, 2, {1, 3}, 1},     {T_CONN_RES, 5, 1, {2, 0}, 0},
    {T_DISCON_REQ, 2, 0, {0, 0}, -1},  {T_DATA_REQ, 2, 0, {0, 0}, -1},
    {T_EXDATA_REQ, 2, 0, {0, 0}, -1},  {T_INFO_REQ, 1, 0, {0, 0}, -1},
    {T_BIND_REQ, 4, 1, {1, 0}, -1},    {T_UNBIND_REQ, 1, 0, {0, 0}, -1},
    {T_UNITDATA_REQ, 5, 2, {1, 3}, 1}, {T_OPTMGMT_REQ, 4, 1, {1, 0}, 0},
    {T_ORDREL_REQ, 1, 0, {0, 0}, -1},  {T_ADDR_REQ, 1, 0, {0, 0}, -1},
    {T_OPTDATA_REQ, 4, 1, {2, 0}, 0},  {T_CAPABILITY_REQ, 2, 0, {0, 0}, -1},
};
#define NSHAPES ((unsigned)(sizeof(shapes) / sizeof(shapes[0])))

static const t_uscalar_t opt_names[] = {
    XTI_DEBUG, XTI_LINGER, XTI_RCVBUF, XTI_RCVLOWAT, XTI_SNDBUF, XTI_SNDLOWAT, T_ALLOPT, 0x7777,
};

/* A small signed value, or now and then any 32-bit one. */
static t_scalar_t fz_value(struct fz *z)
{
    uint8_t v = fz_u8(z);
    if (v >= 0xf0)
        return (t_scalar_t)fz_u32(z);
    return (t_scalar_t)v - 8;
}

/* An address over a 4-letter alphabet at p (at most 8 bytes); its length. */
static int fz_addr(struct fz *z, unsigned char *p)
{
    int n = (int)fz_pick(z, 9);
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)('a' + fz_pick(z, 4));
    return n;
}

/* A T_opthdr list at p (room bytes at most); its length. */
static int fz_opts(struct fz *z, unsigned char *p, int room)
{
    int n = (int)fz_pick(z, 4), len = 0;
    for (int i = 0; i < n; i++) {
        struct T_opthdr h;
        int vlen = (int)fz_pick(z, 3) * 4; /* 0, 4 or 8 bytes of value */
        if (len + (int)sizeof(h) + vlen > room)
            break;
        h.level = fz_pick(z, 4) ? XTI_GENERIC : fz_u32(z);
        h.name = opt_names[fz_pick(z, sizeof(opt_names) / sizeof(opt_names[0]))];
        h.status = 0;
        h.len = (t_uscalar_t)(sizeof(h) + (size_t)vlen);
        if (fz_pick(z, 16) == 0)
            h.len = fz_u16(z); /* a lie */
        memcpy(p + len, &h, sizeof(h));
        for (int k = 0; k < vlen; k += 4) {
            t_scalar_t v = fz_value(z);
            memcpy(p + len + (int)sizeof(h) + k, &v, sizeof(v));
        }
        len += (int)sizeof(h) + vlen;
    }
    return len;
}

/* Build a request into buf (FZ_BUF bytes); its length. */
static int fz_request(struct fz *z, unsigned char *buf)
{
    t_scalar_t w[16];
    unsigned sel = fz_u8(z);
    memset(w, 0, sizeof(w));
    if (sel >= 240 || fz_pick(z, 8) == 0) { /* raw words */
        int n = (int)fz_pick(z, 12);
        w[0] = sel >= 240 ? (t_scalar_t)fz_u32(z) : shapes[sel % NSHAPES].prim;
        for (int i = 1; i < n; i++)
            w[i] = fz_value(z);
        memcpy(buf, w, (size_t)n * sizeof(w[0]));
        return n * (int)sizeof(w[0]) + (int)fz_pick(z, 3); /* sometimes unaligned */
    }
    const struct prim_shape *s = &shapes[sel % NSHAPES];
    w[0] = s->prim;
    for (int i = 1; i < s->words; i++)
        w[i] = fz_value(z);
    int len = s->words * (int)sizeof(w[0]);
    for (int k = 0; k < s->pairs; k++) {
        int n = k == s->opt_pair ? fz_opts(z, buf + len, FZ_BUF - len - 64)
                                 : fz_addr(z, buf + len);
        w[s->pair[k]] = n;
        w[s->pair[k] + 1] = n ? len : 0;
        len += (n + 3) & ~3;
    }
    if (s->prim == T_OPTMGMT_REQ) {
        static const t_scalar_t mg[] = {T_NEGOTIATE, T_CHECK, T_DEFAULT, T_CURRENT, 0, 0x3ff};
        w[3] = mg[fz_pick(z, 6)];
    }
    if (s->prim == T_CAPABILITY_REQ)
        w[1] = (t_scalar_t)fz_pick(z, 4);
    memcpy(buf, w, (size_t)s->words * sizeof(w[0]));
    return len;
}

static void fz_open_endpoint(struct fz *z, struct fz_fds *f)
{
    int fd = strm_open(devs[fz_pick(z, NDEVS)], O_RDWR | O_NONBLOCK);
    if (fd < 0)
        return;
    unsigned m = fz_u8(z);
    if (m & 1)
        strm_ioctl(fd, I_PUSH, "timod");
    if ((m & 6) == 6)
        strm_ioctl(fd, I_PUSH, "tirdwr");
    fz_adopt(f, fd);
}

static void fz_send(struct fz *z, struct fz_fds *f)
{
    int fd = fz_fd(z, f);
    int clen = fz_request(z, (unsigned char *)fz_cbuf);
    int dlen = (int)fz_pick(z, 80) - 8; /* -8..-1: no data part */
    struct strbuf c = {0, clen, fz_cbuf};
    struct strbuf d = {0, dlen < 0 ? -1 : dlen, fz_dbuf};
    unsigned how = fz_pick(z, 8);
    if (how < 5)
        putmsg(fd, &c, dlen < 0 ? NULL : &d, 0);
    else if (how == 5)
        putmsg(fd, &c, NULL, RS_HIPRI);
    else
        putpmsg(fd, &c, dlen < 0 ? NULL : &d, (int)fz_pick(z, 3), MSG_BAND);
}

static void fz_tioctl(struct fz *z, struct fz_fds *f)
{
    static const int cmds[] = {TI_GETINFO, TI_OPTMGMT, TI_BIND,     TI_UNBIND,
                               TI_GETADDRS, TI_CAPABILITY, TI_SYNC, TI_SETMYNAME};
    int fd = fz_fd(z, f);
    struct strioctl io;
    io.ic_cmd = cmds[fz_pick(z, sizeof(cmds) / sizeof(cmds[0]))];
    io.ic_timout = 1;
    io.ic_len = fz_request(z, (unsigned char *)fz_buf);
    io.ic_dp = fz_buf;
    strm_ioctl(fd, I_STR, &io);
}

static void fz_receive(struct fz *z, struct fz_fds *f)
{
    int fd = fz_fd(z, f);
    struct strbuf c = {fz_len(z, FZ_BUF), 0, fz_cbuf};
    struct strbuf d = {fz_len(z, FZ_BUF), 0, fz_dbuf};
    int flags = 0;
    for (int i = 0, n = 1 + (int)fz_pick(z, 4); i < n; i++)
        if (getmsg(fd, &c, &d, &flags) < 0)
            break;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_process_setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz z = {data, size};
    struct fz_fds f;
    int calls = 0;

    fz_fds_init(&f, devs, (int)NDEVS);
    while (fz_more(&z) && calls++ < 256) {
        switch (fz_u8(&z) % 10) {
        case 0:
            fz_open_endpoint(&z, &f);
            break;
        case 1:
        case 2:
        case 3:
            fz_send(&z, &f);
            break;
        case 4:
            fz_tioctl(&z, &f);
            break;
        case 5:
        case 6:
            fz_receive(&z, &f);
            break;
        default:
            fz_call(&z, &f);
            break;
        }
    }
    fz_close_all(&f);
    fz_end_of_input();
    return 0;
}
