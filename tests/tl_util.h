/* SPDX-License-Identifier: MIT */
/*
 * tl_util.h -- helpers of the tl transport tests (test_tl_*.c): raw TPI over
 * strm_open/putmsg/getmsg.  Every receive polls first (2 s), so a missing
 * answer fails a check instead of hanging the test.
 */
#ifndef UST_TEST_TL_UTIL_H
#define UST_TEST_TL_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/tihdr.h>
#include <ustreams.h>
#include <xti.h>

#include "check.h"

#define TLU_CLTS "/dev/streams/clone/ticlts"
#define TLU_COTS "/dev/streams/clone/ticots"
#define TLU_ORD "/dev/streams/clone/ticotsord"

/* A received message: control part (as a primitive) and data part. */
struct tlu_msg {
    union {
        t_scalar_t prim;
        union T_primitives p;
        unsigned char b[4096];
    } c;
    unsigned char d[70000];
    int clen, dlen, band, flags;
};

static inline int tlu_open(const char *dev)
{
    int fd = strm_open(dev, O_RDWR);
    CHECK(fd >= 0);
    return fd;
}

/* putmsg of a control part (clen bytes; -1: none) and data (dlen; -1: none). */
static inline int tlu_put(int fd, const void *ctl, int clen, const void *data, int dlen, int pri)
{
    struct strbuf c = {.maxlen = 0, .len = clen, .buf = (char *)(uintptr_t)ctl};
    struct strbuf d = {.maxlen = 0, .len = dlen, .buf = (char *)(uintptr_t)data};
    return putmsg(fd, clen >= 0 ? &c : NULL, dlen >= 0 ? &d : NULL, pri ? RS_HIPRI : 0);
}

/* Wait up to ms for something to read; 1 if there is. */
static inline int tlu_ready(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI | POLLRDBAND | POLLRDNORM};
    return strm_poll(&p, 1, ms) == 1;
}

/* Receive one message (any band); its PRIM_type, -2 for data only, -1 on error
 * or nothing within 2 s (errno: the getmsg error, ETIME). */
static inline int tlu_get(int fd, struct tlu_msg *m)
{
    struct strbuf c = {.maxlen = sizeof(m->c.b), .len = 0, .buf = (char *)m->c.b};
    struct strbuf d = {.maxlen = sizeof(m->d), .len = 0, .buf = (char *)m->d};
    int r;

    if (!tlu_ready(fd, 2000)) {
        errno = ETIME;
        return -1;
    }
    m->band = 0;
    m->flags = MSG_ANY;
    r = getpmsg(fd, &c, &d, &m->band, &m->flags);
    if (r < 0)
        return -1;
    m->clen = c.len;
    m->dlen = d.len;
    if (c.len < (int)sizeof(t_scalar_t))
        return -2;
    return m->c.prim;
}

/* Whether nothing is waiting to be read (within ms). */
static inline int tlu_quiet(int fd, int ms)
{
    return !tlu_ready(fd, ms);
}

/* Send a one-word request (T_INFO_REQ, T_UNBIND_REQ, T_ADDR_REQ, T_ORDREL_REQ). */
static inline int tlu_req(int fd, t_scalar_t prim)
{
    return tlu_put(fd, &prim, sizeof(prim), NULL, -1, 0);
}

/* Expect T_OK_ACK for prim; 1 if so. */
static inline int tlu_ok(int fd, t_scalar_t prim)
{
    struct tlu_msg m;
    int r = tlu_get(fd, &m);
    CHECK_EQ(r, T_OK_ACK);
    if (r == T_ERROR_ACK)
        fprintf(stderr, "  T_ERROR_ACK prim %d TLI %d UNIX %d\n", m.c.p.error_ack.ERROR_prim,
                m.c.p.error_ack.TLI_error, m.c.p.error_ack.UNIX_error);
    return r == T_OK_ACK && CHECK_EQ(m.c.p.ok_ack.CORRECT_prim, prim);
}

/* Expect T_ERROR_ACK(prim, tli[, unix_err]); 1 if so. */
static inline int tlu_err(int fd, t_scalar_t prim, t_scalar_t tli, t_scalar_t unix_err)
{
    struct tlu_msg m;
    int r = tlu_get(fd, &m);
    if (!CHECK_EQ(r, T_ERROR_ACK))
        return 0;
    CHECK_EQ(m.c.p.error_ack.ERROR_prim, prim);
    CHECK_EQ(m.c.p.error_ack.TLI_error, tli);
    if (tli == TSYSERR)
        CHECK_EQ(m.c.p.error_ack.UNIX_error, unix_err);
    return m.c.p.error_ack.TLI_error == tli;
}

/* Expect the stream in error: the next getmsg fails with EPROTO. */
static inline int tlu_merror(int fd)
{
    struct tlu_msg m;
    int r;
    tlu_ready(fd, 2000);
    r = tlu_get(fd, &m);
    return CHECK_EQ(r, -1) && CHECK_EQ(errno, EPROTO);
}

/* The CURRENT_state from T_INFO_REQ; -1 on failure. */
static inline int tlu_state(int fd)
{
    struct tlu_msg m;
    if (tlu_req(fd, T_INFO_REQ) != 0 || tlu_get(fd, &m) != T_INFO_ACK)
        return -1;
    return m.c.p.info_ack.CURRENT_state;
}

/* T_INFO_ACK into *ia; 1 on success. */
static inline int tlu_info(int fd, struct T_info_ack *ia)
{
    struct tlu_msg m;
    memset(ia, 0, sizeof(*ia));
    if (tlu_req(fd, T_INFO_REQ) != 0 || tlu_get(fd, &m) != T_INFO_ACK)
        return 0;
    memcpy(ia, &m.c.p.info_ack, sizeof(*ia));
    return 1;
}

/* Bind (alen 0: any address) with qlen; the bound address into out (if not
 * NULL, *outlen its length).  Returns 0, or the TLI_error of T_ERROR_ACK. */
static inline int tlu_bind(int fd, const void *addr, int alen, unsigned qlen, void *out,
                           int *outlen, unsigned *qlen_out)
{
    struct {
        struct T_bind_req r;
        unsigned char a[256];
    } b;
    struct tlu_msg m;
    int r;

    memset(&b, 0, sizeof(b));
    b.r.PRIM_type = T_BIND_REQ;
    b.r.ADDR_length = alen;
    b.r.ADDR_offset = alen > 0 ? (t_scalar_t)sizeof(b.r) : 0;
    b.r.CONIND_number = qlen;
    if (alen > 0)
        memcpy(b.a, addr, (size_t)alen);
    if (tlu_put(fd, &b, (int)sizeof(b.r) + alen, NULL, -1, 0) != 0)
        return -1;
    r = tlu_get(fd, &m);
    if (r == T_ERROR_ACK)
        return m.c.p.error_ack.TLI_error;
    if (!CHECK_EQ(r, T_BIND_ACK))
        return -1;
    if (out != NULL)
        memcpy(out, m.c.b + m.c.p.bind_ack.ADDR_offset, (size_t)m.c.p.bind_ack.ADDR_length);
    if (outlen != NULL)
        *outlen = m.c.p.bind_ack.ADDR_length;
    if (qlen_out != NULL)
        *qlen_out = m.c.p.bind_ack.CONIND_number;
    return 0;
}

/* Send T_CONN_REQ to addr (no ack read). */
static inline int tlu_conn_req(int fd, const void *addr, int alen)
{
    struct {
        struct T_conn_req r;
        unsigned char a[256];
    } b;
    memset(&b, 0, sizeof(b));
    b.r.PRIM_type = T_CONN_REQ;
    b.r.DEST_length = alen;
    b.r.DEST_offset = sizeof(b.r);
    memcpy(b.a, addr, (size_t)alen);
    return tlu_put(fd, &b, (int)sizeof(b.r) + alen, NULL, -1, 0);
}

/* Expect T_CONN_IND at a listener; its SEQ_number, -1 on failure. */
static inline t_scalar_t tlu_conn_ind(int fd)
{
    struct tlu_msg m;
    if (!CHECK_EQ(tlu_get(fd, &m), T_CONN_IND))
        return -1;
    return m.c.p.conn_ind.SEQ_number;
}

/* Send T_CONN_RES (no ack read). */
static inline int tlu_conn_res(int fd, t_uscalar_t acceptor, t_scalar_t seq)
{
    struct T_conn_res r = {.PRIM_type = T_CONN_RES, .ACCEPTOR_id = acceptor, .SEQ_number = seq};
    return tlu_put(fd, &r, sizeof(r), NULL, -1, 0);
}

/* Send T_DISCON_REQ (no ack read). */
static inline int tlu_discon_req(int fd, t_scalar_t seq)
{
    struct T_discon_req r = {.PRIM_type = T_DISCON_REQ, .SEQ_number = seq};
    return tlu_put(fd, &r, sizeof(r), NULL, -1, 0);
}

/* Expect T_DISCON_IND; its reason (seq into *seq if not NULL), -1 on failure. */
static inline int tlu_discon_ind(int fd, t_scalar_t *seq)
{
    struct tlu_msg m;
    int r;
    do /* an M_FLUSH before it is not seen by getmsg; data before it is skipped */
        r = tlu_get(fd, &m);
    while (r == T_DATA_IND || r == -2);
    if (!CHECK_EQ(r, T_DISCON_IND))
        return -1;
    if (seq != NULL)
        *seq = m.c.p.discon_ind.SEQ_number;
    return m.c.p.discon_ind.DISCON_reason;
}

/* ACCEPTOR_id from T_CAPABILITY_REQ; 0 on failure. */
static inline t_uscalar_t tlu_acceptor_id(int fd)
{
    struct T_capability_req r = {.PRIM_type = T_CAPABILITY_REQ, .CAP_bits1 = TC1_ACCEPTOR_ID};
    struct tlu_msg m;
    if (tlu_put(fd, &r, sizeof(r), NULL, -1, 0) != 0 || tlu_get(fd, &m) != T_CAPABILITY_ACK)
        return 0;
    return m.c.p.capability_ack.ACCEPTOR_id;
}

/* Send T_DATA_REQ (or T_EXDATA_REQ when ex) with data. */
static inline int tlu_data(int fd, const void *data, int len, int more, int ex)
{
    struct T_data_req r = {.PRIM_type = ex ? T_EXDATA_REQ : T_DATA_REQ, .MORE_flag = more};
    return tlu_put(fd, &r, sizeof(r), data, len, 0);
}

/* Send T_UNITDATA_REQ to dest with data. */
static inline int tlu_unitdata(int fd, const void *dest, int dlen, const void *data, int len)
{
    struct {
        struct T_unitdata_req r;
        unsigned char a[256];
    } u;
    memset(&u, 0, sizeof(u));
    u.r.PRIM_type = T_UNITDATA_REQ;
    u.r.DEST_length = dlen;
    u.r.DEST_offset = sizeof(u.r);
    memcpy(u.a, dest, (size_t)dlen);
    return tlu_put(fd, &u, (int)sizeof(u.r) + dlen, data, len, 0);
}

/*
 * A listener on dev (bound to "L<n>", qlen) and a connected pair: *c the
 * connector, *a the acceptor (a new endpoint, or the listener itself when
 * self).  Returns 1 on success; *l is the listener (closed by the caller).
 */
static inline int tlu_pair(const char *dev, int *l, int *c, int *a, int self)
{
    static int n;
    char addr[32];
    t_scalar_t seq;
    int alen = snprintf(addr, sizeof(addr), "pair-%d", n++);

    *l = tlu_open(dev);
    *c = tlu_open(dev);
    *a = self ? *l : tlu_open(dev);
    if (tlu_bind(*l, addr, alen, self ? 1 : 5, NULL, NULL, NULL) != 0 ||
        tlu_bind(*c, NULL, 0, 0, NULL, NULL, NULL) != 0)
        return 0;
    if (tlu_conn_req(*c, addr, alen) != 0 || !tlu_ok(*c, T_CONN_REQ))
        return 0;
    seq = tlu_conn_ind(*l);
    if (tlu_conn_res(*l, self ? 0 : tlu_acceptor_id(*a), seq) != 0 || !tlu_ok(*l, T_CONN_RES))
        return 0;
    struct tlu_msg m;
    return CHECK_EQ(tlu_get(*c, &m), T_CONN_CON);
}

#endif /* UST_TEST_TL_UTIL_H */
