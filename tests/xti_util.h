/* SPDX-License-Identifier: MIT */
/*
 * xti_util.h -- helpers shared by the libxnet tests (tests/test_xti_*.c).
 *
 *   XCHECK_OK(call)          CHECK that an XTI call returned >= 0, printing t_errno if not.
 *   XCHECK_ERR(call, terr)   CHECK that it returned -1 with t_errno terr.
 *   xti_require(name)        exit 77 (skipped) when provider name cannot be opened
 *                            (the loopback transports not built in).
 *   xti_bound(name, qlen, addr, alen)  t_open + t_bind to addr (NULL: any);
 *                            the bound address in *bound (struct xti_addr).
 *   xti_pair(name, &cli, &lis, &acc)   a connection: cli connected to acc,
 *                            accepted from listener lis onto a new endpoint.
 *   xti_finish()             quiesce, CHECK_NO_BLOCKS, CHECK_RESULT.
 */
#ifndef UST_TEST_XTI_UTIL_H
#define UST_TEST_XTI_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ustreams.h>
#include <xti.h>

#include "check.h"

#define XCHECK_OK(call)                                                                            \
    do {                                                                                           \
        int xr_ = (call);                                                                          \
        if (!CHECK(xr_ >= 0))                                                                      \
            fprintf(stderr, "  %s: t_errno %d (%s) errno %d\n", #call, t_errno,                    \
                    t_strerror(t_errno), errno);                                                   \
    } while (0)

#define XCHECK_ERR(call, terr)                                                                     \
    do {                                                                                           \
        int xr_ = (call);                                                                          \
        if (!CHECK(xr_ == -1 && t_errno == (terr)))                                                \
            fprintf(stderr, "  %s: got %d t_errno %d (%s), want t_errno %d (%s)\n", #call, xr_,     \
                    xr_ < 0 ? t_errno : 0, xr_ < 0 ? t_strerror(t_errno) : "-", (terr),            \
                    t_strerror(terr));                                                             \
    } while (0)

struct xti_addr {
    char buf[256];
    unsigned len;
};

static inline void xti_require(const char *name)
{
    int fd = t_open(name, O_RDWR, NULL);
    if (fd < 0) {
        printf("SKIP: t_open(%s): t_errno %d (%s), errno %d\n", name, t_errno,
               t_strerror(t_errno), errno);
        exit(77);
    }
    t_close(fd);
}

/* t_open name and bind it (to addr if alen > 0) with qlen; the bound address in *bound. */
static inline int xti_bound(const char *name, unsigned qlen, const void *addr, unsigned alen,
                            struct xti_addr *bound)
{
    struct t_bind req, ret;
    int fd = t_open(name, O_RDWR, NULL);

    if (!CHECK(fd >= 0))
        return -1;
    memset(&req, 0, sizeof(req));
    req.addr.buf = (char *)(uintptr_t)addr;
    req.addr.len = alen;
    req.qlen = qlen;
    memset(&ret, 0, sizeof(ret));
    if (bound) {
        ret.addr.buf = bound->buf;
        ret.addr.maxlen = sizeof(bound->buf);
    }
    if (!CHECK(t_bind(fd, &req, bound ? &ret : NULL) == 0)) {
        fprintf(stderr, "  t_bind: t_errno %d (%s)\n", t_errno, t_strerror(t_errno));
        t_close(fd);
        return -1;
    }
    if (bound)
        bound->len = ret.addr.len;
    return fd;
}

/* O_NONBLOCK on or off. */
static inline void xti_set_nb(int fd, int on)
{
    int fl = strm_fcntl(fd, F_GETFL);
    strm_fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

/* t_connect cli to the address at a (blocking). */
static inline int xti_connect_to(int cli, const struct xti_addr *a)
{
    struct t_call call;

    memset(&call, 0, sizeof(call));
    call.addr.buf = (char *)(uintptr_t)a->buf;
    call.addr.len = a->len;
    return t_connect(cli, &call, NULL);
}

/*
 * A connection on provider name: *lis a listener (qlen 4), *cli a client
 * connected, *acc the endpoint it was accepted on.  The connect of a
 * blocking client waits for the accept, so it runs non-blocking and
 * completes with t_rcvconnect after the accept.  0 on success.
 */
static inline int xti_pair(const char *name, int *cli, int *lis, int *acc)
{
    struct xti_addr la;
    struct t_call call;
    int rc = -1;

    *lis = xti_bound(name, 4, NULL, 0, &la);
    *cli = xti_bound(name, 0, NULL, 0, NULL);
    *acc = t_open(name, O_RDWR, NULL);
    if (*lis < 0 || *cli < 0 || *acc < 0)
        return -1;
    xti_set_nb(*cli, 1);
    if (xti_connect_to(*cli, &la) != -1 || t_errno != TNODATA) {
        fprintf(stderr, "xti_pair: t_connect: t_errno %d\n", t_errno);
        goto out;
    }
    memset(&call, 0, sizeof(call));
    if (t_listen(*lis, &call) < 0) {
        fprintf(stderr, "xti_pair: t_listen: t_errno %d\n", t_errno);
        goto out;
    }
    if (t_accept(*lis, *acc, &call) < 0) {
        fprintf(stderr, "xti_pair: t_accept: t_errno %d\n", t_errno);
        goto out;
    }
    xti_set_nb(*cli, 0);
    if (t_rcvconnect(*cli, NULL) < 0) {
        fprintf(stderr, "xti_pair: t_rcvconnect: t_errno %d\n", t_errno);
        goto out;
    }
    rc = 0;
out:
    xti_set_nb(*cli, 0);
    return rc;
}

static inline int xti_finish(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}

#endif /* UST_TEST_XTI_UTIL_H */
