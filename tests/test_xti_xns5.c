/* SPDX-License-Identifier: MIT */
/*
 * test_xti_xns5.c -- XTI calls as XNS Issue 5 words them (issue 21 item 10).
 *
 *   1. t_alloc(3): "In the case where a T_INFO structure is to be allocated,
 *      fd may be set to any value": -1 and a descriptor that is not open
 *      work; any other type on such an fd is TBADF.
 *   2. t_sysconf(3): an unknown name is TBADFLAG.
 *   3. t_optmgmt(3) and the "Use of Options" appendix, XTI_GENERIC options
 *      on the loopback transports ticlts, ticots, ticotsord (all six) and
 *      on udp, tcp (the ones they map to a socket option): T_CHECK of a
 *      header alone is T_SUCCESS without a value, T_CHECK / T_NEGOTIATE of
 *      a value give T_SUCCESS / T_PARTSUCCESS (raised or lowered) /
 *      T_FAILURE with the value returned as XNS 5 says, T_CURRENT /
 *      T_DEFAULT return the values; an unknown level and an unknown name
 *      at a known level are T_NOTSUPPORT for that option (the call
 *      succeeds), T_ALLOPT returns every option of the level with
 *      T_CURRENT / T_DEFAULT and is TBADOPT with T_CHECK.
 * docs/XTI.md "Options" holds the table of option x transport.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xti_util.h"

#define OPTBUF 2048

struct req {
    unsigned char buf[OPTBUF];
    unsigned len;
};

/* Append one option: header, vlen bytes of val, padding. */
static void add(struct req *r, t_uscalar_t level, t_uscalar_t name, const void *val, size_t vlen)
{
    struct t_opthdr h = {.len = (t_uscalar_t)(sizeof(h) + vlen), .level = level, .name = name};
    memcpy(r->buf + r->len, &h, sizeof(h));
    if (vlen)
        memcpy(r->buf + r->len + sizeof(h), val, vlen);
    r->len += (unsigned)_T_ALIGN(h.len);
}

static void add_u32(struct req *r, t_uscalar_t level, t_uscalar_t name, t_uscalar_t v)
{
    add(r, level, name, &v, sizeof(v));
}

/* t_optmgmt of r with flags; ret's buffer in out.  -1 and t_errno on failure. */
static int mgmt(int fd, struct req *r, t_scalar_t flags, struct t_optmgmt *ret,
                unsigned char *out)
{
    struct t_optmgmt req = {.opt = {.len = r->len, .buf = r->buf}, .flags = flags};
    memset(ret, 0, sizeof(*ret));
    ret->opt.buf = out;
    ret->opt.maxlen = OPTBUF;
    return t_optmgmt(fd, &req, ret);
}

/* The n-th option of ret (0 first), or NULL. */
static struct t_opthdr *nth(struct t_optmgmt *ret, int n)
{
    struct t_opthdr *h = T_OPT_FIRSTHDR(&ret->opt);
    while (h && n-- > 0)
        h = T_OPT_NEXTHDR(&ret->opt, h);
    return h;
}

static t_uscalar_t u32at(const struct t_opthdr *h)
{
    t_uscalar_t v;
    memcpy(&v, T_OPT_DATA(h), sizeof(v));
    return v;
}

/* ---- 1, 2 ---- */
static void test_alloc_sysconf(void)
{
    int closed = open("/dev/null", O_RDONLY);
    close(closed);

    struct t_info *i = t_alloc(-1, T_INFO, T_ALL);
    CHECK(i != NULL);
    CHECK_EQ(t_free(i, T_INFO), 0);
    i = t_alloc(closed, T_INFO, 0);
    CHECK(i != NULL);
    CHECK_EQ(t_free(i, T_INFO), 0);
    i = t_alloc(123456, T_INFO, T_ADDR);
    CHECK(i != NULL);
    CHECK_EQ(t_free(i, T_INFO), 0);
    CHECK(t_alloc(-1, T_BIND, T_ALL) == NULL && t_errno == TBADF);
    CHECK(t_alloc(closed, T_CALL, 0) == NULL && t_errno == TBADF);

    CHECK_EQ(t_sysconf(_SC_T_IOV_MAX), T_IOV_MAX);
    XCHECK_ERR(t_sysconf(-1), TBADFLAG);
    XCHECK_ERR(t_sysconf(12345), TBADFLAG);
}

/* ---- 3, the rules every transport shares ---- */
static void test_common(const char *dev, int fd, const t_uscalar_t *names, int nnames)
{
    struct t_optmgmt ret;
    unsigned char out[OPTBUF];
    struct req r;
    struct t_opthdr *h;

    /* T_CHECK of each supported option as a header alone: T_SUCCESS, no value */
    for (int k = 0; k < nnames; k++) {
        r.len = 0;
        add(&r, XTI_GENERIC, names[k], NULL, 0);
        if (!CHECK_EQ(mgmt(fd, &r, T_CHECK, &ret, out), 0))
            fprintf(stderr, "  %s: T_CHECK of 0x%x: t_errno %d\n", dev, names[k], t_errno);
        CHECK_EQ(ret.flags, T_SUCCESS);
        h = nth(&ret, 0);
        CHECK(h && h->status == T_SUCCESS && h->len == sizeof(*h) && h->name == names[k]);
    }
    /* T_CURRENT and T_DEFAULT of each: T_SUCCESS with a value */
    for (int k = 0; k < nnames; k++) {
        for (int f = 0; f < 2; f++) {
            r.len = 0;
            add(&r, XTI_GENERIC, names[k], NULL, 0);
            CHECK_EQ(mgmt(fd, &r, f ? T_DEFAULT : T_CURRENT, &ret, out), 0);
            CHECK_EQ(ret.flags, T_SUCCESS);
            h = nth(&ret, 0);
            CHECK(h && h->status == T_SUCCESS && h->len > sizeof(*h));
        }
    }
    /* an unknown level, an unknown name at a known level: T_NOTSUPPORT for
     * that option (value echoed for T_NEGOTIATE), the call succeeds and the
     * other options are processed */
    static const t_scalar_t fl[] = {T_NEGOTIATE, T_CHECK, T_CURRENT, T_DEFAULT};
    for (int f = 0; f < 4; f++) {
        r.len = 0;
        add_u32(&r, 0x7654, 1, 77);
        add_u32(&r, XTI_GENERIC, 0x7777, 78);
        add(&r, XTI_GENERIC, names[0], NULL, 0);
        if (!CHECK_EQ(mgmt(fd, &r, fl[f], &ret, out), 0))
            fprintf(stderr, "  %s: flags 0x%x: t_errno %d\n", dev, (unsigned)fl[f], t_errno);
        CHECK_EQ(ret.flags, T_NOTSUPPORT);
        h = nth(&ret, 0);
        CHECK(h && h->level == 0x7654 && h->status == T_NOTSUPPORT);
        if (h && (fl[f] == T_NEGOTIATE || fl[f] == T_CHECK))
            CHECK(h->len == sizeof(*h) + 4 && u32at(h) == 77);
        h = nth(&ret, 1);
        CHECK(h && h->level == XTI_GENERIC && h->name == 0x7777 && h->status == T_NOTSUPPORT);
        h = nth(&ret, 2);
        CHECK(h && h->name == names[0] && h->status == T_SUCCESS);
    }
    /* T_ALLOPT: every supported option of the level with T_CURRENT/T_DEFAULT */
    for (int f = 0; f < 2; f++) {
        r.len = 0;
        add(&r, XTI_GENERIC, T_ALLOPT, NULL, 0);
        CHECK_EQ(mgmt(fd, &r, f ? T_DEFAULT : T_CURRENT, &ret, out), 0);
        CHECK_EQ(ret.flags, T_SUCCESS);
        int n = 0;
        for (h = nth(&ret, 0); h; h = T_OPT_NEXTHDR(&ret.opt, h), n++)
            CHECK(h->level == XTI_GENERIC && h->status == T_SUCCESS);
        if (!CHECK_EQ(n, nnames))
            fprintf(stderr, "  %s: T_ALLOPT gave %d options\n", dev, n);
    }
    /* T_ALLOPT with T_CHECK, at a known or an unknown level: TBADOPT */
    r.len = 0;
    add(&r, XTI_GENERIC, T_ALLOPT, NULL, 0);
    XCHECK_ERR(mgmt(fd, &r, T_CHECK, &ret, out), TBADOPT);
    r.len = 0;
    add(&r, 0x7654, T_ALLOPT, NULL, 0);
    XCHECK_ERR(mgmt(fd, &r, T_CHECK, &ret, out), TBADOPT);
    /* T_ALLOPT of an unknown level with T_CURRENT: T_NOTSUPPORT */
    CHECK_EQ(mgmt(fd, &r, T_CURRENT, &ret, out), 0);
    CHECK_EQ(ret.flags, T_NOTSUPPORT);
}

/* ---- 3, the loopback transports: all six, exact values ---- */
static void test_tl(const char *dev)
{
    static const t_uscalar_t six[] = {XTI_DEBUG,    XTI_LINGER, XTI_RCVBUF,
                                      XTI_RCVLOWAT, XTI_SNDBUF, XTI_SNDLOWAT};
    struct t_optmgmt ret;
    unsigned char out[OPTBUF];
    struct req r;
    struct t_opthdr *h;
    int fd = t_open(dev, O_RDWR, NULL);

    if (!CHECK(fd >= 0))
        return;
    test_common(dev, fd, six, 6);

    /* T_DEFAULT values: 0, {T_NO, 0}, 65536, 1, 65536, 16384 */
    r.len = 0;
    add(&r, XTI_GENERIC, XTI_DEBUG, NULL, 0);
    add(&r, XTI_GENERIC, XTI_RCVBUF, NULL, 0);
    add(&r, XTI_GENERIC, XTI_RCVLOWAT, NULL, 0);
    add(&r, XTI_GENERIC, XTI_SNDBUF, NULL, 0);
    add(&r, XTI_GENERIC, XTI_SNDLOWAT, NULL, 0);
    add(&r, XTI_GENERIC, XTI_LINGER, NULL, 0);
    CHECK_EQ(mgmt(fd, &r, T_DEFAULT, &ret, out), 0);
    static const t_uscalar_t defs[] = {0, 65536, 1, 65536, 16384};
    for (int k = 0; k < 5; k++) {
        h = nth(&ret, k);
        CHECK(h && h->status == T_SUCCESS && u32at(h) == defs[k]);
    }
    h = nth(&ret, 5);
    struct t_linger l;
    if (CHECK(h && h->len == sizeof(*h) + sizeof(l))) {
        memcpy(&l, T_OPT_DATA(h), sizeof(l));
        CHECK(l.l_onoff == T_NO && l.l_linger == 0);
    }

    /* T_CHECK of values: 4096 T_SUCCESS, 64 T_PARTSUCCESS (raised to 128),
     * 0 T_FAILURE (returned as given); nothing changes */
    r.len = 0;
    add_u32(&r, XTI_GENERIC, XTI_SNDBUF, 4096);
    add_u32(&r, XTI_GENERIC, XTI_RCVBUF, 64);
    add_u32(&r, XTI_GENERIC, XTI_SNDBUF, 0);
    CHECK_EQ(mgmt(fd, &r, T_CHECK, &ret, out), 0);
    CHECK_EQ(ret.flags, T_FAILURE);
    h = nth(&ret, 0);
    CHECK(h && h->status == T_SUCCESS && u32at(h) == 4096);
    h = nth(&ret, 1);
    CHECK(h && h->status == T_PARTSUCCESS && u32at(h) == 128);
    h = nth(&ret, 2);
    CHECK(h && h->status == T_FAILURE && u32at(h) == 0);

    /* T_NEGOTIATE: lowered above the maximum (T_PARTSUCCESS), then T_CURRENT */
    r.len = 0;
    add_u32(&r, XTI_GENERIC, XTI_SNDBUF, 0x7fffffff);
    add_u32(&r, XTI_GENERIC, XTI_SNDLOWAT, 2048);
    add_u32(&r, XTI_GENERIC, XTI_DEBUG, 1);
    CHECK_EQ(mgmt(fd, &r, T_NEGOTIATE, &ret, out), 0);
    CHECK_EQ(ret.flags, T_PARTSUCCESS);
    h = nth(&ret, 0);
    CHECK(h && h->status == T_PARTSUCCESS && u32at(h) == 1024 * 1024);
    h = nth(&ret, 1);
    CHECK(h && h->status == T_SUCCESS && u32at(h) == 2048);
    r.len = 0;
    add(&r, XTI_GENERIC, XTI_SNDBUF, NULL, 0);
    add(&r, XTI_GENERIC, XTI_DEBUG, NULL, 0);
    CHECK_EQ(mgmt(fd, &r, T_CURRENT, &ret, out), 0);
    h = nth(&ret, 0);
    CHECK(h && u32at(h) == 1024 * 1024);
    h = nth(&ret, 1);
    CHECK(h && u32at(h) == 1);
    /* T_NEGOTIATE of a header alone: the default */
    r.len = 0;
    add(&r, XTI_GENERIC, XTI_SNDBUF, NULL, 0);
    CHECK_EQ(mgmt(fd, &r, T_NEGOTIATE, &ret, out), 0);
    h = nth(&ret, 0);
    CHECK(h && h->status == T_SUCCESS && u32at(h) == 65536);
    /* linger: T_YES 5 T_SUCCESS; l_onoff 7 T_FAILURE */
    struct t_linger lv = {T_YES, 5};
    r.len = 0;
    add(&r, XTI_GENERIC, XTI_LINGER, &lv, sizeof(lv));
    lv.l_onoff = 7;
    add(&r, XTI_GENERIC, XTI_LINGER, &lv, sizeof(lv));
    CHECK_EQ(mgmt(fd, &r, T_NEGOTIATE, &ret, out), 0);
    CHECK_EQ(ret.flags, T_FAILURE);
    h = nth(&ret, 1);
    if (CHECK(h && h->status == T_FAILURE)) {
        memcpy(&l, T_OPT_DATA(h), sizeof(l));
        CHECK_EQ(l.l_onoff, 7);
    }
    t_close(fd);
}

/* ---- 3, udp and tcp: the generic options they map onto the socket ---- */
static void test_inet(const char *dev, const t_uscalar_t *names, int n)
{
    struct t_optmgmt ret;
    unsigned char out[OPTBUF];
    struct req r;
    struct t_opthdr *h;
    int fd = t_open(dev, O_RDWR, NULL);

    if (!CHECK(fd >= 0))
        return;
    test_common(dev, fd, names, n);
    /* T_CHECK of a value: T_SUCCESS, the value as given */
    r.len = 0;
    add_u32(&r, XTI_GENERIC, XTI_SNDBUF, 32768);
    CHECK_EQ(mgmt(fd, &r, T_CHECK, &ret, out), 0);
    CHECK_EQ(ret.flags, T_SUCCESS);
    h = nth(&ret, 0);
    CHECK(h && h->status == T_SUCCESS && u32at(h) == 32768);
    t_close(fd);
}

int main(void)
{
    static const t_uscalar_t udp[] = {XTI_SNDBUF, XTI_RCVBUF};
    static const t_uscalar_t tcp[] = {XTI_SNDBUF, XTI_RCVBUF, XTI_LINGER};

    alarm(60);
    test_alloc_sysconf();
    test_tl("/dev/ticlts");
    test_tl("/dev/ticots");
    test_tl("/dev/ticotsord");
    test_inet("/dev/udp", udp, 2);
    test_inet("/dev/tcp", tcp, 3);
    return xti_finish();
}
