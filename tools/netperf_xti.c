/* SPDX-License-Identifier: MIT */
/*
 * netperf_xti.c -- XTI through libxnet as an API of `ustreams netperf`
 * (tools/netperf.h): "/dev/udp" (T_CLTS) with t_sndudata/t_rcvudata, and
 * "/dev/tcp" (T_COTS_ORD) with t_listen/t_accept/t_connect, t_snd/t_rcv and
 * t_sndrel/t_rcvrel for the end.  Written to XNS Issue 5 alone, addresses
 * are struct sockaddr_in / sockaddr_in6 in the netbuf (the XTI Internet
 * appendix), so the TCP side works on any T_COTS_ORD Internet provider.
 *
 * The buffer size, when given, is negotiated with t_optmgmt (T_NEGOTIATE,
 * XTI_GENERIC XTI_SNDBUF and XTI_RCVBUF, t_uscalar_t values) before t_bind;
 * the udp and tcp providers set it on their kernel socket as SO_SNDBUF and
 * SO_RCVBUF, so both APIs run with the same kernel buffers.  T_PARTSUCCESS
 * (the kernel granted less) is accepted, as the socket side accepts Linux's
 * silent cap.
 *
 * Errors: the set-up calls write theirs into err; the data calls keep the
 * text of the last one in a per-thread buffer that last_error copies (t_errno
 * and errno, which it is made of, are per thread too).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <xti.h>
#include <xti_inet.h>

#include "netperf.h"

#define UDP_DEV "/dev/udp"
#define TCP_DEV "/dev/tcp"

/* --xti-dev: another provider, addressed as it chooses (NULL: the Internet
 * providers above).  Set before any endpoint is made. */
static const char *other_dev;

void np_xti_use(const char *dev)
{
    other_dev = dev;
}

static _Thread_local char last[NP_ERRLEN];

/* "what: <t_errno text>[: <errno text>]" into buf. */
static void xti_reason(char *buf, const char *what)
{
    int te = t_errno, e = errno;
    if (te == TSYSERR)
        snprintf(buf, NP_ERRLEN, "%s: %s: %s", what, t_strerror(te), strerror(e));
    else
        snprintf(buf, NP_ERRLEN, "%s: %s", what, t_strerror(te));
}

/* t_open dev, expecting the service type st.  The descriptor,
 * NP_EXIT_UNAVAILABLE with err when the provider cannot be opened at all,
 * or -1 with err. */
static int open_dev(const char *dev, int st, char *err)
{
    struct t_info info;
    int fd = t_open(dev, O_RDWR, &info);
    if (fd < 0) {
        char why[NP_ERRLEN];
        xti_reason(why, "t_open");
        snprintf(err, NP_ERRLEN, "%s: %.160s", dev, why);
        return -NP_EXIT_UNAVAILABLE;
    }
    if (info.servtype != st) {
        snprintf(err, NP_ERRLEN, "%s: service type %d, not the %s these tests need", dev,
                 (int)info.servtype, st == T_CLTS ? "T_CLTS" : "T_COTS_ORD (orderly release)");
        t_close(fd);
        return -1;
    }
    return fd;
}

/* Negotiate XTI_SNDBUF and XTI_RCVBUF = buf (if buf > 0).  0, or -1 with err. */
static int set_buffers(int fd, int buf, char *err)
{
    struct opt {
        struct t_opthdr h;
        t_uscalar_t v;
    };
    struct opt req[2], ret[2];
    struct t_optmgmt oreq, ores;

    if (buf <= 0)
        return 0;
    memset(req, 0, sizeof(req));
    req[0].h = (struct t_opthdr){.len = sizeof(struct t_opthdr) + sizeof(t_uscalar_t),
                                 .level = XTI_GENERIC, .name = XTI_SNDBUF};
    req[0].v = (t_uscalar_t)buf;
    req[1] = req[0];
    req[1].h.name = XTI_RCVBUF;
    oreq = (struct t_optmgmt){.opt = {.len = sizeof(req), .buf = (char *)req},
                              .flags = T_NEGOTIATE};
    ores = (struct t_optmgmt){.opt = {.maxlen = sizeof(ret), .buf = (char *)ret}};
    if (t_optmgmt(fd, &oreq, &ores) < 0) {
        xti_reason(err, "t_optmgmt XTI_SNDBUF/XTI_RCVBUF");
        return -1;
    }
    if (ores.flags != T_SUCCESS && ores.flags != T_PARTSUCCESS) {
        snprintf(err, NP_ERRLEN, "t_optmgmt XTI_SNDBUF/XTI_RCVBUF %d: refused (flags %#lx)", buf,
                 (unsigned long)ores.flags);
        return -1;
    }
    return 0;
}

/* Bind fd to addr (NULL: the loopback address of family, port 0) with
 * qlen; the bound address in *bound if not NULL.  0, or -1 with err. */
static int bind_to(int fd, int family, unsigned qlen, struct np_addr *bound, char *err)
{
    struct np_addr me, got;
    np_loopback(family, &me);
    if (other_dev)
        me.len = 0; /* the provider chooses (its addresses are not sockaddrs) */
    struct t_bind req = {.addr = {.len = me.len, .buf = (char *)&me.ss}, .qlen = qlen};
    struct t_bind ret = {.addr = {.maxlen = sizeof(got.ss), .buf = (char *)&got.ss}};
    if (t_bind(fd, &req, &ret) < 0) {
        xti_reason(err, "t_bind");
        return -1;
    }
    if (qlen > 0 && ret.qlen == 0) {
        snprintf(err, NP_ERRLEN, "t_bind: the provider granted no connect indications");
        return -1;
    }
    if (bound) {
        *bound = got;
        bound->len = ret.addr.len;
    }
    return 0;
}

/* ---------------------------------------------------------------- UDP */

static int x_dg_open(int family, int buf, int *ep, struct np_addr *bound, char *err)
{
    int fd = open_dev(other_dev ? other_dev : UDP_DEV, T_CLTS, err);
    if (fd < 0)
        return fd == -NP_EXIT_UNAVAILABLE ? NP_EXIT_UNAVAILABLE : -1;
    if (set_buffers(fd, buf, err) < 0 || bind_to(fd, family, 0, bound, err) < 0) {
        t_close(fd);
        return -1;
    }
    *ep = fd;
    return 0;
}

/* An error indication (T_UDERR) is pending: take it.  0, or -1. */
static int take_uderr(int ep)
{
    if (t_look(ep) != T_UDERR) {
        snprintf(last, sizeof(last), "unexpected event %d", t_look(ep));
        return -1;
    }
    if (t_rcvuderr(ep, NULL) < 0) {
        xti_reason(last, "t_rcvuderr");
        return -1;
    }
    return 0;
}

static int x_dg_send(int ep, const void *data, size_t len, const struct np_addr *to)
{
    struct t_unitdata ud = {.addr = {.len = to->len, .buf = (char *)&to->ss},
                            .udata = {.len = (unsigned)len, .buf = (char *)data}};
    for (;;) {
        if (t_sndudata(ep, &ud) == 0)
            return 0;
        if (t_errno != TLOOK) {
            xti_reason(last, "t_sndudata");
            return -1;
        }
        if (take_uderr(ep) < 0)
            return -1;
    }
}

static ssize_t x_dg_recv(int ep, void *data, size_t len)
{
    struct sockaddr_storage from;
    struct t_unitdata ud = {.addr = {.maxlen = sizeof(from), .buf = (char *)&from},
                            .udata = {.maxlen = (unsigned)len, .buf = data}};
    size_t got = 0;
    int flags = 0;
    for (;;) {
        if (t_rcvudata(ep, &ud, &flags) < 0) {
            if (t_errno == TLOOK && take_uderr(ep) == 0)
                continue;
            if (t_errno != TLOOK)
                xti_reason(last, "t_rcvudata");
            return -1;
        }
        got += ud.udata.len;
        if (!(flags & T_MORE))
            return (ssize_t)got;
        /* The rest of a datagram larger than the buffer: read and drop it. */
        ud.udata.buf = (char *)data + (got < len ? got : 0);
        ud.udata.maxlen = (unsigned)(got < len ? len - got : len);
    }
}

/* ---------------------------------------------------------------- TCP */

static int x_st_open(int family, int buf, unsigned qlen, struct np_addr *bound, char *err)
{
    int fd = open_dev(other_dev ? other_dev : TCP_DEV, T_COTS_ORD, err);
    if (fd < 0)
        return fd;
    if (set_buffers(fd, buf, err) < 0 || bind_to(fd, family, qlen, bound, err) < 0) {
        t_close(fd);
        return -1;
    }
    return fd;
}

static int x_st_listen(int family, int buf, int *ep, struct np_addr *bound, char *err)
{
    int fd = x_st_open(family, buf, 8, bound, err);
    if (fd < 0)
        return fd == -NP_EXIT_UNAVAILABLE ? NP_EXIT_UNAVAILABLE : -1;
    *ep = fd;
    return 0;
}

static int x_st_accept(int lep, int family, int buf, int *ep, char *err)
{
    (void)family;
    struct sockaddr_storage peer;
    char opt[512], udata[64];
    struct t_call call = {.addr = {.maxlen = sizeof(peer), .buf = (char *)&peer},
                          .opt = {.maxlen = sizeof(opt), .buf = opt},
                          .udata = {.maxlen = sizeof(udata), .buf = udata}};
    if (t_listen(lep, &call) < 0) {
        xti_reason(err, "t_listen");
        return -1;
    }
    /* Accept onto a new, unbound endpoint (XNS 5 allows T_UNBND: it takes
     * the connection's address; a provider over kernel sockets attaches the
     * accepted socket to it), then size its buffers as the others'. */
    int fd = open_dev(other_dev ? other_dev : TCP_DEV, T_COTS_ORD, err);
    if (fd < 0)
        return -1;
    call.opt.len = 0;
    call.udata.len = 0;
    if (t_accept(lep, fd, &call) < 0) {
        xti_reason(err, "t_accept");
        t_close(fd);
        return -1;
    }
    if (set_buffers(fd, buf, err) < 0) {
        t_close(fd);
        return -1;
    }
    *ep = fd;
    return 0;
}

static int x_st_connect(int family, int buf, const struct np_addr *to, int *ep, char *err)
{
    int fd = x_st_open(family, buf, 0, NULL, err);
    if (fd < 0)
        return fd == -NP_EXIT_UNAVAILABLE ? NP_EXIT_UNAVAILABLE : -1;
    struct t_call snd = {.addr = {.len = to->len, .buf = (char *)&to->ss}};
    if (t_connect(fd, &snd, NULL) < 0) {
        if (t_errno == TLOOK && t_look(fd) == T_DISCONNECT) {
            struct t_discon dis = {0};
            (void)t_rcvdis(fd, &dis);
            snprintf(err, NP_ERRLEN, "t_connect: refused: %s", strerror(dis.reason));
        } else {
            xti_reason(err, "t_connect");
        }
        t_close(fd);
        return -1;
    }
    *ep = fd;
    return 0;
}

static int x_st_send(int ep, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        int n = t_snd(ep, (char *)p, (unsigned)len, 0);
        if (n < 0) {
            if (t_errno == TLOOK)
                snprintf(last, sizeof(last), "t_snd: event %d (the peer released or "
                         "disconnected)", t_look(ep));
            else
                xti_reason(last, "t_snd");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static ssize_t x_st_recv(int ep, void *data, size_t len)
{
    int flags;
    for (;;) {
        int n = t_rcv(ep, data, (unsigned)len, &flags);
        if (n > 0)
            return n;
        if (n == 0)
            continue; /* a zero-length TSDU: none on TCP */
        if (t_errno != TLOOK) {
            xti_reason(last, "t_rcv");
            return -1;
        }
        int ev = t_look(ep);
        if (ev == T_ORDREL) {
            if (t_rcvrel(ep) < 0) {
                xti_reason(last, "t_rcvrel");
                return -1;
            }
            return 0;
        }
        if (ev == T_DISCONNECT) {
            struct t_discon dis = {0};
            (void)t_rcvdis(ep, &dis);
            snprintf(last, sizeof(last), "disconnected: %s", strerror(dis.reason));
            return -1;
        }
        /* Other events (T_GODATA, ...) do not concern a blocking reader. */
    }
}

static int x_st_release(int ep)
{
    if (t_sndrel(ep) < 0) {
        xti_reason(last, "t_sndrel");
        return -1;
    }
    return 0;
}

/* INET_TCP TCP_NODELAY = T_YES through t_optmgmt (T_NEGOTIATE) on a
 * connected endpoint; the tcp provider sets TCP_NODELAY on its kernel
 * socket.  Over another provider (-X) the option is not asked: it is an
 * Internet option, which the loopback transports do not know. */
static int x_st_nodelay(int ep, char *err)
{
    struct {
        struct t_opthdr h;
        t_uscalar_t v;
    } req, ret;
    struct t_optmgmt oreq, ores;

    if (other_dev)
        return 0;
    memset(&req, 0, sizeof(req));
    req.h = (struct t_opthdr){.len = sizeof(req), .level = INET_TCP, .name = TCP_NODELAY};
    req.v = T_YES;
    oreq = (struct t_optmgmt){.opt = {.len = sizeof(req), .buf = (char *)&req},
                              .flags = T_NEGOTIATE};
    ores = (struct t_optmgmt){.opt = {.maxlen = sizeof(ret), .buf = (char *)&ret}};
    if (t_optmgmt(ep, &oreq, &ores) < 0) {
        xti_reason(err, "t_optmgmt TCP_NODELAY");
        return -1;
    }
    if (ores.flags != T_SUCCESS) {
        snprintf(err, NP_ERRLEN, "t_optmgmt TCP_NODELAY: refused (flags %#lx)",
                 (unsigned long)ores.flags);
        return -1;
    }
    return 0;
}

static void x_close(int ep)
{
    t_close(ep);
}

static void x_last_error(char *err)
{
    snprintf(err, NP_ERRLEN, "%s", last);
}

const struct np_api np_api_xti = {
    .name = "xti",
    .dg_open = x_dg_open,
    .dg_send = x_dg_send,
    .dg_recv = x_dg_recv,
    .st_listen = x_st_listen,
    .st_accept = x_st_accept,
    .st_connect = x_st_connect,
    .st_send = x_st_send,
    .st_recv = x_st_recv,
    .st_release = x_st_release,
    .st_nodelay = x_st_nodelay,
    .close = x_close,
    .last_error = x_last_error,
};
