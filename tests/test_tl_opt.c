/* SPDX-License-Identifier: MIT */
/*
 * test_tl_opt.c -- T_OPTMGMT_REQ on the tl transports (tl_opt.c; XNS 5
 * option management of the XTI_GENERIC options, docs/TPI.md).
 *   1.  T_DEFAULT / T_CURRENT: an empty list and T_ALLOPT return every
 *       option; single options.
 *   2.  T_NEGOTIATE: each status (T_SUCCESS, T_PARTSUCCESS, T_FAILURE,
 *       T_NOTSUPPORT), the overall flags the worst of them, values stored;
 *       T_ALLOPT resets to the defaults.
 *   3.  T_CHECK: statuses without storing; T_ALLOPT refused (TBADOPT).
 *   4.  Malformed: TBADOPT, TBADFLAG, TSYSERR.
 *   5.  Effect: XTI_SNDBUF and XTI_RCVBUF set the water marks (a
 *       non-blocking writer meets EAGAIN much sooner).
 */
#include <stdio.h>
#include <unistd.h>

#include "tl_util.h"

struct opt {
    t_uscalar_t level, name, status;
    int vlen;
    unsigned char v[16];
};

/* Build and send T_OPTMGMT_REQ with n options (vlen -1: header only). */
static int opt_send(int fd, t_scalar_t flags, const struct opt *o, int n)
{
    unsigned char buf[1200];
    struct T_optmgmt_req *r = (struct T_optmgmt_req *)(void *)buf;
    size_t at = sizeof(*r);

    memset(buf, 0, sizeof(buf));
    for (int i = 0; i < n; i++) {
        struct T_opthdr oh = {.len = (t_uscalar_t)(sizeof(oh) + (size_t)(o[i].vlen > 0 ? o[i].vlen : 0)),
                              .level = o[i].level,
                              .name = o[i].name};
        memcpy(buf + at, &oh, sizeof(oh));
        if (o[i].vlen > 0)
            memcpy(buf + at + sizeof(oh), o[i].v, (size_t)o[i].vlen);
        at += _TPI_ALIGN_TOPT(oh.len);
    }
    r->PRIM_type = T_OPTMGMT_REQ;
    r->MGMT_flags = flags;
    r->OPT_length = (t_scalar_t)(at - sizeof(*r));
    r->OPT_offset = n > 0 ? (t_scalar_t)sizeof(*r) : 0;
    return tlu_put(fd, buf, (int)at, NULL, -1, 0);
}

/* Receive T_OPTMGMT_ACK into out[] (at most max); the count, -1 on failure;
 * *flags the overall result. */
static int opt_recv(int fd, struct opt *out, int max, t_scalar_t *flags)
{
    struct tlu_msg m;
    int n = 0;

    if (!CHECK_EQ(tlu_get(fd, &m), T_OPTMGMT_ACK))
        return -1;
    *flags = m.c.p.optmgmt_ack.MGMT_flags;
    size_t at = (size_t)m.c.p.optmgmt_ack.OPT_offset, end = at + (size_t)m.c.p.optmgmt_ack.OPT_length;
    CHECK(end <= (size_t)m.clen);
    while (at + sizeof(struct T_opthdr) <= end && n < max) {
        struct T_opthdr oh;
        memcpy(&oh, m.c.b + at, sizeof(oh));
        CHECK(oh.len >= sizeof(oh) && at + oh.len <= end);
        out[n].level = oh.level;
        out[n].name = oh.name;
        out[n].status = oh.status;
        out[n].vlen = (int)(oh.len - sizeof(oh));
        if (out[n].vlen > 0 && out[n].vlen <= 16)
            memcpy(out[n].v, m.c.b + at + sizeof(oh), (size_t)out[n].vlen);
        n++;
        at += _TPI_ALIGN_TOPT(oh.len);
    }
    return n;
}

static struct opt u32opt(t_uscalar_t name, t_uscalar_t v)
{
    struct opt o = {.level = XTI_GENERIC, .name = name, .vlen = 4};
    memcpy(o.v, &v, 4);
    return o;
}

static t_uscalar_t u32of(const struct opt *o)
{
    t_uscalar_t v;
    memcpy(&v, o->v, 4);
    return v;
}

/* The current value of a t_uscalar_t option. */
static t_uscalar_t current(int fd, t_uscalar_t name)
{
    struct opt o = {.level = XTI_GENERIC, .name = name, .vlen = -1}, out[2];
    t_scalar_t fl;
    CHECK_EQ(opt_send(fd, T_CURRENT, &o, 1), 0);
    if (!CHECK_EQ(opt_recv(fd, out, 2, &fl), 1))
        return 0;
    return u32of(&out[0]);
}

static void t_default_current(void)
{
    int fd = tlu_open(TLU_COTS);
    struct opt out[16], all = {.level = XTI_GENERIC, .name = T_ALLOPT, .vlen = -1};
    t_scalar_t fl;

    CHECK_EQ(opt_send(fd, T_DEFAULT, NULL, 0), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 6);
    CHECK_EQ(fl, T_SUCCESS);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(out[i].level, XTI_GENERIC);
        CHECK_EQ(out[i].status, T_SUCCESS);
        if (out[i].name == XTI_SNDBUF || out[i].name == XTI_RCVBUF)
            CHECK_EQ(u32of(&out[i]), 65536);
        if (out[i].name == XTI_LINGER) {
            struct t_linger l;
            CHECK_EQ(out[i].vlen, (int)sizeof(l));
            memcpy(&l, out[i].v, sizeof(l));
            CHECK_EQ(l.l_onoff, T_NO);
        }
    }
    CHECK_EQ(opt_send(fd, T_CURRENT, &all, 1), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 6);
    CHECK_EQ(opt_send(fd, T_DEFAULT, &all, 1), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 6);
    struct opt one = {.level = XTI_GENERIC, .name = XTI_RCVLOWAT, .vlen = -1};
    CHECK_EQ(opt_send(fd, T_DEFAULT, &one, 1), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 1);
    CHECK_EQ(out[0].name, XTI_RCVLOWAT);
    CHECK_EQ(u32of(&out[0]), 1);
    strm_close(fd);
}

static void t_negotiate_check(void)
{
    int fd = tlu_open(TLU_ORD);
    struct opt in[4], out[16];
    t_scalar_t fl;

    /* T_SUCCESS, stored */
    in[0] = u32opt(XTI_SNDBUF, 4096);
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, in, 1), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 1);
    CHECK_EQ(fl, T_SUCCESS);
    CHECK_EQ(out[0].status, T_SUCCESS);
    CHECK_EQ(u32of(&out[0]), 4096);
    CHECK_EQ(current(fd, XTI_SNDBUF), 4096);
    /* T_PARTSUCCESS: clamped */
    in[0] = u32opt(XTI_RCVBUF, 10);
    in[1] = u32opt(XTI_DEBUG, 3);
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, in, 2), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 2);
    CHECK_EQ(fl, T_PARTSUCCESS);
    CHECK_EQ(out[0].status, T_PARTSUCCESS);
    CHECK_EQ(u32of(&out[0]), 128);
    CHECK_EQ(out[1].status, T_SUCCESS);
    CHECK_EQ(current(fd, XTI_DEBUG), 3);
    /* T_FAILURE: the value stays, the ack returns the value as requested
     * (XNS 5 t_optmgmt); worst of success and failure */
    in[0] = u32opt(XTI_RCVBUF, 0);
    in[1] = u32opt(XTI_SNDLOWAT, 100);
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, in, 2), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 2);
    CHECK_EQ(fl, T_FAILURE);
    CHECK_EQ(out[0].status, T_FAILURE);
    CHECK_EQ(u32of(&out[0]), 0);
    CHECK_EQ(current(fd, XTI_RCVBUF), 128);
    CHECK_EQ(current(fd, XTI_SNDLOWAT), 100);
    /* linger: valid, invalid l_onoff */
    struct t_linger l = {T_YES, 5};
    in[0] = (struct opt){.level = XTI_GENERIC, .name = XTI_LINGER, .vlen = sizeof(l)};
    memcpy(in[0].v, &l, sizeof(l));
    l.l_onoff = 7;
    in[1] = in[0];
    memcpy(in[1].v, &l, sizeof(l));
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, in, 2), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 2);
    CHECK_EQ(out[0].status, T_SUCCESS);
    CHECK_EQ(out[1].status, T_FAILURE);
    CHECK_EQ(fl, T_FAILURE);
    /* T_NOTSUPPORT: unknown name, unknown level; the worst of all */
    in[0] = u32opt(XTI_DEBUG, 1);
    in[1] = u32opt(0x7777, 1);
    in[2] = u32opt(XTI_RCVBUF, 0);
    in[3] = u32opt(XTI_DEBUG, 1);
    in[3].level = 1234;
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, in, 4), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 4);
    CHECK_EQ(fl, T_NOTSUPPORT);
    CHECK_EQ(out[1].status, T_NOTSUPPORT);
    CHECK_EQ(out[1].vlen, 4); /* the value as requested (XNS 5) */
    CHECK_EQ(u32of(&out[1]), 1);
    CHECK_EQ(out[2].status, T_FAILURE);
    CHECK_EQ(out[3].status, T_NOTSUPPORT);
    CHECK_EQ(out[3].level, 1234);
    /* T_CHECK: statuses, nothing stored */
    in[0] = u32opt(XTI_SNDBUF, 2048);
    in[1] = u32opt(XTI_SNDBUF, 5000000);
    CHECK_EQ(opt_send(fd, T_CHECK, in, 2), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 2);
    CHECK_EQ(out[0].status, T_SUCCESS);
    CHECK_EQ(out[1].status, T_PARTSUCCESS);
    CHECK_EQ(fl, T_PARTSUCCESS);
    CHECK_EQ(current(fd, XTI_SNDBUF), 4096);
    struct opt all = {.level = XTI_GENERIC, .name = T_ALLOPT, .vlen = -1};
    CHECK_EQ(opt_send(fd, T_CHECK, &all, 1), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    /* T_NEGOTIATE T_ALLOPT: back to the defaults */
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, &all, 1), 0);
    CHECK_EQ(opt_recv(fd, out, 16, &fl), 6);
    CHECK_EQ(fl, T_SUCCESS);
    CHECK_EQ(current(fd, XTI_SNDBUF), 65536);
    CHECK_EQ(current(fd, XTI_RCVBUF), 65536);
    CHECK_EQ(current(fd, XTI_DEBUG), 0);
    /* any state: also when bound */
    CHECK_EQ(tlu_bind(fd, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(current(fd, XTI_SNDBUF), 65536);
    strm_close(fd);
}

static void t_malformed(void)
{
    int fd = tlu_open(TLU_CLTS);
    struct opt in[2];
    t_scalar_t w[64];

    /* a value of the wrong length */
    in[0] = u32opt(XTI_SNDBUF, 1);
    in[0].vlen = 2;
    CHECK_EQ(opt_send(fd, T_NEGOTIATE, in, 1), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    /* bad MGMT_flags */
    in[0] = u32opt(XTI_SNDBUF, 1024);
    CHECK_EQ(opt_send(fd, T_NEGOTIATE | T_CHECK, in, 1), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADFLAG, 0));
    CHECK_EQ(opt_send(fd, 0, in, 1), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADFLAG, 0));
    /* an option len shorter than its header, longer than the list */
    memset(w, 0, sizeof(w));
    w[0] = T_OPTMGMT_REQ;
    w[1] = 16;
    w[2] = 16;
    w[3] = T_CURRENT;
    w[4] = 8; /* len < header */
    w[5] = XTI_GENERIC;
    w[6] = XTI_DEBUG;
    CHECK_EQ(tlu_put(fd, w, 32, NULL, -1, 0), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    w[4] = 40; /* len past the list */
    CHECK_EQ(tlu_put(fd, w, 32, NULL, -1, 0), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    w[1] = 16;
    w[2] = 200; /* list outside the message */
    w[4] = 16;
    CHECK_EQ(tlu_put(fd, w, 32, NULL, -1, 0), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    w[1] = 20; /* a trailing partial header */
    w[2] = 16;
    CHECK_EQ(tlu_put(fd, w, 36, NULL, -1, 0), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    /* longer than OPT_size */
    {
        static unsigned char big[1200];
        t_scalar_t *b = (t_scalar_t *)(void *)big;
        memset(big, 0, sizeof(big));
        b[0] = T_OPTMGMT_REQ;
        b[1] = 1040;
        b[2] = 16;
        b[3] = T_CURRENT;
        for (int i = 0; i < 65; i++) {
            struct T_opthdr oh = {16, XTI_GENERIC, XTI_DEBUG, 0};
            memcpy(big + 16 + 16 * i, &oh, sizeof(oh));
        }
        CHECK_EQ(tlu_put(fd, big, 16 + 1040, NULL, -1, 0), 0);
        CHECK(tlu_err(fd, T_OPTMGMT_REQ, TBADOPT, 0));
    }
    /* short */
    CHECK_EQ(tlu_put(fd, w, 12, NULL, -1, 0), 0);
    CHECK(tlu_err(fd, T_OPTMGMT_REQ, TSYSERR, EINVAL));
    strm_close(fd);
}

/* Messages of 100 bytes a non-blocking writer on c gets out before EAGAIN,
 * with the reader a never reading. */
static int fill(int c)
{
    char buf[100] = {0};
    int n = 0;
    while (n < 100000 && tlu_data(c, buf, sizeof(buf), 0, 0) == 0)
        n++;
    CHECK_EQ(errno, EAGAIN);
    return n;
}

static void t_effect(void)
{
    int l, c, a, n1, n2;
    struct opt in;
    struct opt out[4];
    t_scalar_t fl;

    CHECK(tlu_pair(TLU_COTS, &l, &c, &a, 0));
    CHECK_EQ(strm_fcntl(c, F_SETFL, O_NONBLOCK), 0);
    n1 = fill(c);
    strm_close(c);
    strm_close(a);
    strm_close(l);

    CHECK(tlu_pair(TLU_COTS, &l, &c, &a, 0));
    in = u32opt(XTI_SNDBUF, 1024);
    CHECK_EQ(opt_send(c, T_NEGOTIATE, &in, 1), 0);
    CHECK_EQ(opt_recv(c, out, 4, &fl), 1);
    in = u32opt(XTI_RCVBUF, 1024);
    CHECK_EQ(opt_send(a, T_NEGOTIATE, &in, 1), 0);
    CHECK_EQ(opt_recv(a, out, 4, &fl), 1);
    CHECK_EQ(fl, T_SUCCESS);
    CHECK_EQ(strm_fcntl(c, F_SETFL, O_NONBLOCK), 0);
    n2 = fill(c);
    CHECK(n1 > 1000);
    CHECK(n2 < 100);
    CHECK(n2 > 0);
    strm_close(c);
    strm_close(a);
    strm_close(l);
}

int main(void)
{
    t_default_current();
    t_negotiate_check();
    t_malformed();
    t_effect();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
