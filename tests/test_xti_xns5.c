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
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

/* ---- 3, the table ---- */

/* A transport: name, whether XTI_SNDLOWAT is read-only there. */
struct tp {
    const char *dev;
    int ro_sndlowat;
};

/* Statuses that depend on whether XTI_SNDLOWAT is read-only (T_READONLY
 * there); the values are none of XNS's. */
#define SL 0x10001     /* else T_SUCCESS */
#define SLRO 0x10002   /* else T_SUCCESS; the value as given either way */
#define SLFAIL 0x10003 /* else T_FAILURE (an illegal value) */

enum { V_NONE, V_U32, V_LINGER, V_SAVED }; /* the value sent */
enum { E_NOVAL, E_ANY, E_EQ, E_LESS, E_MORE, E_SAVE, E_SAVED, E_CUR }; /* the value back */

struct gcase {
    const char *what;
    t_scalar_t flags;
    t_uscalar_t name;
    int vk;
    long v, v2; /* V_U32: v; V_LINGER: {v, v2}; V_SAVED: saved + v */
    int st;     /* expected status (or SL, SLRO, SLFAIL), or -TBADOPT for the call */
    int ek;
    long e, e2; /* E_EQ: v (and l_linger e2); E_CUR: saved if read-only, else saved + e */
};

static const struct gcase gcases[] = {
    /* T_CHECK of a header alone: supported, no value */
    {"check debug", T_CHECK, XTI_DEBUG, V_NONE, 0, 0, T_SUCCESS, E_NOVAL, 0, 0},
    {"check linger", T_CHECK, XTI_LINGER, V_NONE, 0, 0, T_SUCCESS, E_NOVAL, 0, 0},
    {"check rcvbuf", T_CHECK, XTI_RCVBUF, V_NONE, 0, 0, T_SUCCESS, E_NOVAL, 0, 0},
    {"check rcvlowat", T_CHECK, XTI_RCVLOWAT, V_NONE, 0, 0, T_SUCCESS, E_NOVAL, 0, 0},
    {"check sndbuf", T_CHECK, XTI_SNDBUF, V_NONE, 0, 0, T_SUCCESS, E_NOVAL, 0, 0},
    {"check sndlowat", T_CHECK, XTI_SNDLOWAT, V_NONE, 0, 0, SL, E_NOVAL, 0, 0},
    /* T_DEFAULT */
    {"default debug", T_DEFAULT, XTI_DEBUG, V_NONE, 0, 0, T_SUCCESS, E_EQ, 0, 0},
    {"default linger", T_DEFAULT, XTI_LINGER, V_NONE, 0, 0, T_SUCCESS, E_EQ, T_NO, 0},
    {"default rcvbuf", T_DEFAULT, XTI_RCVBUF, V_NONE, 0, 0, T_SUCCESS, E_ANY, 0, 0},
    {"default sndlowat", T_DEFAULT, XTI_SNDLOWAT, V_NONE, 0, 0, SL, E_ANY, 0, 0},
    /* XTI_DEBUG: kept; a header alone turns debugging off (XNS 5) */
    {"debug 5", T_NEGOTIATE, XTI_DEBUG, V_U32, 5, 0, T_SUCCESS, E_EQ, 5, 0},
    {"current debug", T_CURRENT, XTI_DEBUG, V_NONE, 0, 0, T_SUCCESS, E_EQ, 5, 0},
    {"debug all bits", T_NEGOTIATE, XTI_DEBUG, V_U32, 0xffffffffL, 0, T_SUCCESS, E_EQ, 0xffffffffL, 0},
    {"debug off", T_NEGOTIATE, XTI_DEBUG, V_NONE, 0, 0, T_SUCCESS, E_EQ, 0, 0},
    {"current debug off", T_CURRENT, XTI_DEBUG, V_NONE, 0, 0, T_SUCCESS, E_EQ, 0, 0},
    /* XTI_LINGER: legal values T_YES/T_NO and T_UNSPEC, T_INFINITE, >= 0 */
    {"linger yes 5", T_NEGOTIATE, XTI_LINGER, V_LINGER, T_YES, 5, T_SUCCESS, E_EQ, T_YES, 5},
    {"current linger", T_CURRENT, XTI_LINGER, V_NONE, 0, 0, T_SUCCESS, E_EQ, T_YES, 5},
    {"linger onoff 7", T_NEGOTIATE, XTI_LINGER, V_LINGER, 7, 5, T_FAILURE, E_EQ, 7, 5},
    {"linger -5", T_NEGOTIATE, XTI_LINGER, V_LINGER, T_YES, -5, T_FAILURE, E_EQ, T_YES, -5},
    {"current linger kept", T_CURRENT, XTI_LINGER, V_NONE, 0, 0, T_SUCCESS, E_EQ, T_YES, 5},
    {"check linger infinite", T_CHECK, XTI_LINGER, V_LINGER, T_YES, T_INFINITE, T_SUCCESS, E_EQ,
     T_YES, T_INFINITE},
    {"linger no unspec", T_NEGOTIATE, XTI_LINGER, V_LINGER, T_NO, T_UNSPEC, T_SUCCESS, E_EQ, T_NO,
     T_UNSPEC},
    {"linger short", T_NEGOTIATE, XTI_LINGER, V_U32, T_YES, 0, -TBADOPT, E_NOVAL, 0, 0},
    /* XTI_SNDBUF / XTI_RCVBUF: granted as asked, raised, lowered, 0 illegal */
    {"sndbuf 32768", T_NEGOTIATE, XTI_SNDBUF, V_U32, 32768, 0, T_SUCCESS, E_EQ, 32768, 0},
    {"current sndbuf", T_CURRENT, XTI_SNDBUF, V_NONE, 0, 0, T_SUCCESS, E_EQ, 32768, 0},
    {"check sndbuf 4096", T_CHECK, XTI_SNDBUF, V_U32, 4096, 0, T_SUCCESS, E_EQ, 4096, 0},
    {"sndbuf 0", T_NEGOTIATE, XTI_SNDBUF, V_U32, 0, 0, T_FAILURE, E_EQ, 0, 0},
    {"current sndbuf kept", T_CURRENT, XTI_SNDBUF, V_NONE, 0, 0, T_SUCCESS, E_EQ, 32768, 0},
    {"rcvbuf huge", T_NEGOTIATE, XTI_RCVBUF, V_U32, INT_MAX, 0, T_PARTSUCCESS, E_LESS, INT_MAX, 0},
    {"current rcvbuf granted", T_CURRENT, XTI_RCVBUF, V_NONE, 0, 0, T_SUCCESS, E_SAVED, 0, 0},
    {"rcvbuf 1", T_NEGOTIATE, XTI_RCVBUF, V_U32, 1, 0, T_PARTSUCCESS, E_MORE, 1, 0},
    {"rcvbuf 65536", T_NEGOTIATE, XTI_RCVBUF, V_U32, 65536, 0, T_SUCCESS, E_EQ, 65536, 0},
    /* XTI_RCVLOWAT */
    {"rcvlowat 100", T_NEGOTIATE, XTI_RCVLOWAT, V_U32, 100, 0, T_SUCCESS, E_EQ, 100, 0},
    {"current rcvlowat", T_CURRENT, XTI_RCVLOWAT, V_NONE, 0, 0, T_SUCCESS, E_EQ, 100, 0},
    {"rcvlowat 0", T_NEGOTIATE, XTI_RCVLOWAT, V_U32, 0, 0, T_FAILURE, E_EQ, 0, 0},
    {"current rcvlowat kept", T_CURRENT, XTI_RCVLOWAT, V_NONE, 0, 0, T_SUCCESS, E_EQ, 100, 0},
    /* XTI_SNDLOWAT: its own value is T_SUCCESS; another T_READONLY where
     * read-only (value as given, nothing changes), else T_SUCCESS */
    {"current sndlowat", T_CURRENT, XTI_SNDLOWAT, V_NONE, 0, 0, SL, E_SAVE, 0, 0},
    {"sndlowat same", T_NEGOTIATE, XTI_SNDLOWAT, V_SAVED, 0, 0, T_SUCCESS, E_SAVED, 0, 0},
    {"check sndlowat other", T_CHECK, XTI_SNDLOWAT, V_SAVED, 1000, 0, SLRO, E_CUR, 0, 1000},
    {"current sndlowat unchanged", T_CURRENT, XTI_SNDLOWAT, V_NONE, 0, 0, SL, E_SAVED, 0, 0},
    {"sndlowat other", T_NEGOTIATE, XTI_SNDLOWAT, V_SAVED, 1000, 0, SLRO, E_CUR, 0, 1000},
    {"current sndlowat after", T_CURRENT, XTI_SNDLOWAT, V_NONE, 0, 0, SL, E_CUR, 0, 1000},
    {"sndlowat 0", T_NEGOTIATE, XTI_SNDLOWAT, V_U32, 0, 0, SLFAIL, E_EQ, 0, 0},
};

/* The status case c expects on transport t. */
static int want_status(const struct tp *t, const struct gcase *c)
{
    if (c->st == SL || c->st == SLRO)
        return t->ro_sndlowat ? T_READONLY : T_SUCCESS;
    if (c->st == SLFAIL) /* 0: illegal, unless read-only comes first */
        return t->ro_sndlowat ? T_READONLY : T_FAILURE;
    return c->st;
}

static void run_case(const struct tp *t, int fd, const struct gcase *c, long *saved)
{
    struct t_optmgmt ret;
    unsigned char out[OPTBUF];
    struct req r = {.len = 0};
    struct t_linger l;
    int st = want_status(t, c);

    if (c->vk == V_U32 || c->vk == V_SAVED)
        add_u32(&r, XTI_GENERIC, c->name,
                (t_uscalar_t)(c->vk == V_SAVED ? *saved + c->v : c->v));
    else if (c->vk == V_LINGER)
        add(&r, XTI_GENERIC, c->name, &(struct t_linger){(t_scalar_t)c->v, (t_scalar_t)c->v2},
            sizeof(l));
    else
        add(&r, XTI_GENERIC, c->name, NULL, 0);
    if (st < 0) {
        XCHECK_ERR(mgmt(fd, &r, c->flags, &ret, out), -st);
        return;
    }
    int ok = CHECK_EQ(mgmt(fd, &r, c->flags, &ret, out), 0);
    struct t_opthdr *h = ok ? nth(&ret, 0) : NULL;
    ok = ok && CHECK_EQ(ret.flags, st) && CHECK(h != NULL) && CHECK_EQ(h->status, st) &&
         CHECK_EQ(h->name, c->name);
    if (ok && c->ek == E_NOVAL) {
        ok = CHECK_EQ(h->len, sizeof(*h));
    } else if (ok && c->name == XTI_LINGER) {
        ok = CHECK_EQ(h->len, sizeof(*h) + sizeof(l));
        if (ok) {
            memcpy(&l, T_OPT_DATA(h), sizeof(l));
            ok = CHECK_EQ(l.l_onoff, c->e) &&
                 (c->flags == T_DEFAULT || CHECK_EQ(l.l_linger, c->e2));
        }
    } else if (ok) {
        long v = (long)u32at(h);
        ok = CHECK_EQ(h->len, sizeof(*h) + 4);
        switch (c->ek) {
        case E_EQ:
            ok = ok && CHECK_EQ(v, c->e);
            break;
        case E_LESS:
            ok = ok && CHECK(v < c->e && v > 0);
            *saved = v;
            break;
        case E_MORE:
            ok = ok && CHECK(v > c->e);
            break;
        case E_SAVE:
            *saved = v;
            break;
        case E_SAVED:
            ok = ok && CHECK_EQ(v, *saved);
            break;
        case E_CUR: /* as given (read-only or not), or what it now is */
            ok = ok && CHECK_EQ(v, *saved + (c->flags == T_CURRENT && t->ro_sndlowat ? 0 : c->e2));
            break;
        }
    }
    if (!ok)
        fprintf(stderr, "  %s: case \"%s\" (status %u)\n", t->dev, c->what,
                h ? (unsigned)h->status : 0u);
}

/* The rules every transport shares (not per option): unknown level and
 * name, T_ALLOPT with each flag. */
static void test_common(const struct tp *t, int fd)
{
    static const t_uscalar_t six[] = {XTI_DEBUG,    XTI_LINGER, XTI_RCVBUF,
                                      XTI_RCVLOWAT, XTI_SNDBUF, XTI_SNDLOWAT};
    const int ro = t->ro_sndlowat;
    struct t_optmgmt ret;
    unsigned char out[OPTBUF];
    struct req r;
    struct t_opthdr *h;

    /* an unknown level, an unknown name at a known level: T_NOTSUPPORT for
     * that option (value echoed for T_NEGOTIATE), the call succeeds and the
     * other options are processed */
    static const t_scalar_t fl[] = {T_NEGOTIATE, T_CHECK, T_CURRENT, T_DEFAULT};
    for (int f = 0; f < 4; f++) {
        r.len = 0;
        add_u32(&r, 0x7654, 1, 77);
        add_u32(&r, XTI_GENERIC, 0x7777, 78);
        add(&r, XTI_GENERIC, XTI_SNDBUF, NULL, 0);
        if (!CHECK_EQ(mgmt(fd, &r, fl[f], &ret, out), 0))
            fprintf(stderr, "  %s: flags 0x%x: t_errno %d\n", t->dev, (unsigned)fl[f], t_errno);
        CHECK_EQ(ret.flags, T_NOTSUPPORT);
        h = nth(&ret, 0);
        CHECK(h && h->level == 0x7654 && h->status == T_NOTSUPPORT);
        if (h && (fl[f] == T_NEGOTIATE || fl[f] == T_CHECK))
            CHECK(h->len == sizeof(*h) + 4 && u32at(h) == 77);
        h = nth(&ret, 1);
        CHECK(h && h->level == XTI_GENERIC && h->name == 0x7777 && h->status == T_NOTSUPPORT);
        h = nth(&ret, 2);
        CHECK(h && h->name == XTI_SNDBUF && h->status == T_SUCCESS);
    }
    /* T_ALLOPT: the six, with T_CURRENT / T_DEFAULT / T_NEGOTIATE */
    static const t_scalar_t af[] = {T_CURRENT, T_DEFAULT, T_NEGOTIATE};
    for (int f = 0; f < 3; f++) {
        r.len = 0;
        add(&r, XTI_GENERIC, T_ALLOPT, NULL, 0);
        CHECK_EQ(mgmt(fd, &r, af[f], &ret, out), 0);
        CHECK_EQ(ret.flags, ro && af[f] != T_NEGOTIATE ? T_READONLY : T_SUCCESS);
        int n = 0;
        for (h = nth(&ret, 0); h; h = T_OPT_NEXTHDR(&ret.opt, h), n++) {
            int want = ro && h->name == XTI_SNDLOWAT && af[f] != T_NEGOTIATE ? T_READONLY
                                                                             : T_SUCCESS;
            CHECK(n < 6 && h->level == XTI_GENERIC && h->name == six[n]);
            if (!CHECK_EQ(h->status, want))
                fprintf(stderr, "  %s: T_ALLOPT 0x%x: option 0x%x\n", t->dev,
                        (unsigned)af[f], h->name);
        }
        if (!CHECK_EQ(n, 6))
            fprintf(stderr, "  %s: T_ALLOPT gave %d options\n", t->dev, n);
    }
    /* after the reset: debugging off, no linger */
    r.len = 0;
    add(&r, XTI_GENERIC, XTI_DEBUG, NULL, 0);
    add(&r, XTI_GENERIC, XTI_LINGER, NULL, 0);
    CHECK_EQ(mgmt(fd, &r, T_CURRENT, &ret, out), 0);
    h = nth(&ret, 0);
    CHECK(h && u32at(h) == 0);
    h = nth(&ret, 1);
    CHECK(h && h->len == sizeof(*h) + sizeof(struct t_linger) &&
          ((struct t_linger *)(void *)T_OPT_DATA(h))->l_onoff == T_NO);
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

/* Every case on a new endpoint of t, unbound (bound 0) or bound. */
static void test_transport(const struct tp *t, int bound)
{
    long saved = 0;
    int fd = t_open(t->dev, O_RDWR, NULL);

    if (!CHECK(fd >= 0))
        return;
    if (bound)
        XCHECK_OK(t_bind(fd, NULL, NULL));
    for (size_t k = 0; k < sizeof(gcases) / sizeof(gcases[0]); k++)
        run_case(t, fd, &gcases[k], &saved);
    test_common(t, fd);
    t_close(fd);
}

/* Whether the kernel refuses to set SO_SNDLOWAT (Linux: ENOPROTOOPT). */
static int kernel_sndlowat_ro(void)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0), v = 1, ro;

    if (s < 0)
        return 1;
    ro = setsockopt(s, SOL_SOCKET, SO_SNDLOWAT, &v, sizeof(v)) < 0 && errno == ENOPROTOOPT;
    close(s);
    return ro;
}

/* ---- 3, the loopback transports: their exact values ---- */
static void test_tl_values(const char *dev)
{
    struct t_optmgmt ret;
    unsigned char out[OPTBUF];
    struct req r;
    struct t_opthdr *h;
    int fd = t_open(dev, O_RDWR, NULL);

    if (!CHECK(fd >= 0))
        return;
    /* T_DEFAULT values: 0, 65536, 1, 65536, 16384 */
    r.len = 0;
    add(&r, XTI_GENERIC, XTI_DEBUG, NULL, 0);
    add(&r, XTI_GENERIC, XTI_RCVBUF, NULL, 0);
    add(&r, XTI_GENERIC, XTI_RCVLOWAT, NULL, 0);
    add(&r, XTI_GENERIC, XTI_SNDBUF, NULL, 0);
    add(&r, XTI_GENERIC, XTI_SNDLOWAT, NULL, 0);
    CHECK_EQ(mgmt(fd, &r, T_DEFAULT, &ret, out), 0);
    static const t_uscalar_t defs[] = {0, 65536, 1, 65536, 16384};
    for (int k = 0; k < 5; k++) {
        h = nth(&ret, k);
        CHECK(h && h->status == T_SUCCESS && u32at(h) == defs[k]);
    }
    /* the limits: [128, 1 MiB] */
    r.len = 0;
    add_u32(&r, XTI_GENERIC, XTI_RCVBUF, 64);
    add_u32(&r, XTI_GENERIC, XTI_SNDBUF, 0x7fffffff);
    CHECK_EQ(mgmt(fd, &r, T_NEGOTIATE, &ret, out), 0);
    CHECK_EQ(ret.flags, T_PARTSUCCESS);
    h = nth(&ret, 0);
    CHECK(h && h->status == T_PARTSUCCESS && u32at(h) == 128);
    h = nth(&ret, 1);
    CHECK(h && h->status == T_PARTSUCCESS && u32at(h) == 1024 * 1024);
    t_close(fd);
}

int main(void)
{
    int ro = kernel_sndlowat_ro();
    const struct tp tps[] = {
        {"/dev/ticlts", 0}, {"/dev/ticots", 0}, {"/dev/ticotsord", 0},
        {"/dev/udp", ro},   {"/dev/tcp", ro},
    };

    alarm(60);
    test_alloc_sysconf();
    for (size_t k = 0; k < sizeof(tps) / sizeof(tps[0]); k++) {
        test_transport(&tps[k], 0);
        test_transport(&tps[k], 1);
    }
    test_tl_values("/dev/ticlts");
    return xti_finish();
}
