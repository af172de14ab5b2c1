/* SPDX-License-Identifier: MIT */
/*
 * test_tl_clts.c -- ticlts unit data (tl_clts.c, docs/TPI.md).
 *   1.  T_UNITDATA_REQ -> T_UNITDATA_IND with SRC the sender's address,
 *       data and boundaries intact (0 bytes, TSDU_size bytes).
 *   2.  T_UDERROR_IND back to the sender: no endpoint at DEST
 *       (ECONNREFUSED), more than TSDU_size (EMSGSIZE), DEST_length 0 or
 *       malformed options (EINVAL); DEST echoed.  Addresses are per device.
 *   3.  Flow control: N sender threads to one receiver whose read side is
 *       small (XTI_RCVBUF 1024) and which reads slowly: every unit arrives,
 *       in order per sender, nothing lost; a destination that closes while
 *       senders wait on it turns their queued units into T_UDERROR_IND.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tl_util.h"

static int unitdata(int fd, const void *dest, int dlen, const void *data, int len)
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

static void t_basic(void)
{
    int a = tlu_open(TLU_CLTS), b = tlu_open(TLU_CLTS), x = tlu_open(TLU_COTS);
    unsigned char aa[8];
    int al;
    struct tlu_msg m;
    static char big[65537];
    struct T_info_ack ia;

    CHECK(tlu_info(a, &ia));
    CHECK_EQ(ia.SERV_type, T_CLTS);
    CHECK_EQ(ia.TSDU_size, 65536);
    CHECK_EQ(ia.ETSDU_size, T_INVALID);
    CHECK_EQ(ia.CDATA_size, T_INVALID);
    CHECK_EQ(ia.DDATA_size, T_INVALID);
    CHECK_EQ(tlu_bind(a, NULL, 0, 5, aa, &al, NULL), 0);
    unsigned qlen = 9;
    CHECK_EQ(tlu_bind(b, "bee", 3, 5, NULL, NULL, &qlen), 0);
    CHECK_EQ(qlen, 0); /* no connections on ticlts */
    CHECK_EQ(tlu_bind(x, "cots", 4, 0, NULL, NULL, NULL), 0);

    CHECK_EQ(unitdata(a, "bee", 3, "hello", 5), 0);
    CHECK_EQ(unitdata(a, "bee", 3, "", 0), 0);
    CHECK_EQ(unitdata(a, "bee", 3, big, 65536), 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.c.p.unitdata_ind.SRC_length, al);
    CHECK(memcmp(m.c.b + m.c.p.unitdata_ind.SRC_offset, aa, (size_t)al) == 0);
    CHECK_EQ(m.dlen, 5);
    CHECK(memcmp(m.d, "hello", 5) == 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK(m.dlen <= 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 65536);
    /* to itself */
    CHECK_EQ(unitdata(b, "bee", 3, "me", 2), 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 2);

    /* errors come back as T_UDERROR_IND with DEST */
    CHECK_EQ(unitdata(a, "nobody", 6, "x", 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, ECONNREFUSED);
    CHECK_EQ(m.c.p.uderror_ind.DEST_length, 6);
    CHECK(memcmp(m.c.b + m.c.p.uderror_ind.DEST_offset, "nobody", 6) == 0);
    CHECK_EQ(unitdata(a, "cots", 4, "x", 1), 0); /* bound on ticots only */
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, ECONNREFUSED);
    CHECK_EQ(unitdata(a, "bee", 3, big, 65537), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EMSGSIZE);
    CHECK_EQ(unitdata(a, "bee", 0, "x", 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EINVAL);
    struct {
        struct T_unitdata_req r;
        char a[4];
        t_scalar_t o[2];
    } bad = {{T_UNITDATA_REQ, 3, 20, 8, 24}, "bee", {8, 0}}; /* option len < header */
    CHECK_EQ(tlu_put(a, &bad, sizeof(bad), "x", 1, 0), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EINVAL);
    /* options well formed: passed over, the unit delivered */
    struct {
        struct T_unitdata_req r;
        char a[4];
        struct T_opthdr oh;
        t_uscalar_t v;
    } good = {{T_UNITDATA_REQ, 3, 20, 20, 24}, "bee", {20, XTI_GENERIC, XTI_DEBUG, 0}, 1};
    CHECK_EQ(tlu_put(a, &good, sizeof(good), "y", 1, 0), 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 1);
    CHECK(tlu_quiet(a, 10));
    CHECK(tlu_quiet(b, 10));

    /* after unbind the address is gone */
    CHECK_EQ(tlu_req(b, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(b, T_UNBIND_REQ));
    CHECK_EQ(unitdata(a, "bee", 3, "x", 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, ECONNREFUSED);
    strm_close(a);
    strm_close(b);
    strm_close(x);
}

#define NSEND 4
#define NMSG 1500

struct sender {
    int fd, id;
};

static void *send_main(void *arg)
{
    struct sender *s = arg;
    unsigned char buf[1100];
    for (int i = 0; i < NMSG; i++) {
        int len = 8 + (i * 37 + s->id * 11) % 1000;
        memcpy(buf, &s->id, 4);
        memcpy(buf + 4, &i, 4);
        for (int k = 8; k < len; k++)
            buf[k] = (unsigned char)(i + k);
        if (!CHECK_EQ(unitdata(s->fd, "sink", 4, buf, len), 0))
            break;
    }
    return NULL;
}

static void t_flow(void)
{
    int r = tlu_open(TLU_CLTS);
    struct sender s[NSEND];
    pthread_t th[NSEND];
    int next[NSEND] = {0};
    long bytes = 0, want = 0;
    struct tlu_msg *m = malloc(sizeof(*m));

    CHECK_EQ(tlu_bind(r, "sink", 4, 0, NULL, NULL, NULL), 0);
    /* a small read side */
    struct {
        struct T_optmgmt_req r;
        struct T_opthdr oh;
        t_uscalar_t v;
    } om = {{T_OPTMGMT_REQ, 20, 16, T_NEGOTIATE}, {20, XTI_GENERIC, XTI_RCVBUF, 0}, 1024};
    CHECK_EQ(tlu_put(r, &om, sizeof(om), NULL, -1, 0), 0);
    CHECK_EQ(tlu_get(r, m), T_OPTMGMT_ACK);
    for (int i = 0; i < NSEND; i++) {
        s[i].fd = tlu_open(TLU_CLTS);
        s[i].id = i;
        CHECK_EQ(tlu_bind(s[i].fd, NULL, 0, 0, NULL, NULL, NULL), 0);
        CHECK_EQ(pthread_create(&th[i], NULL, send_main, &s[i]), 0);
    }
    for (int i = 0; i < NSEND; i++)
        for (int k = 0; k < NMSG; k++)
            want += 8 + (k * 37 + i * 11) % 1000;
    for (int got = 0; got < NSEND * NMSG; got++) {
        int id, seq;
        if (got % 64 == 0) {
            struct timespec ts = {0, 200000}; /* a slow reader */
            nanosleep(&ts, NULL);
        }
        if (!CHECK_EQ(tlu_get(r, m), T_UNITDATA_IND))
            break;
        memcpy(&id, m->d, 4);
        memcpy(&seq, m->d + 4, 4);
        if (!CHECK(id >= 0 && id < NSEND) || !CHECK_EQ(seq, next[id]))
            break;
        CHECK_EQ(m->dlen, 8 + (seq * 37 + id * 11) % 1000);
        if (m->dlen > 8)
            CHECK_EQ(m->d[m->dlen - 1], (unsigned char)(seq + m->dlen - 1));
        next[id]++;
        bytes += m->dlen;
    }
    for (int i = 0; i < NSEND; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(next[i], NMSG);
    }
    CHECK_EQ(bytes, want);
    CHECK(tlu_quiet(r, 10));

    /* senders blocked behind a full destination that then closes */
    for (int i = 0; i < NSEND; i++)
        CHECK_EQ(strm_fcntl(s[i].fd, F_SETFL, O_NONBLOCK), 0);
    static char buf[1000];
    int sent = 0;
    while (sent < 10000 && unitdata(s[0].fd, "sink", 4, buf, sizeof(buf)) == 0)
        sent++;
    CHECK_EQ(errno, EAGAIN);
    strm_close(r);
    int nerr = 0, nind = 0;
    while (tlu_ready(s[0].fd, 100)) {
        int p = tlu_get(s[0].fd, m);
        nerr += p == T_UDERROR_IND && m->c.p.uderror_ind.ERROR_type == ECONNREFUSED;
        nind++;
    }
    CHECK(nerr > 0);
    CHECK_EQ(nerr, nind);
    for (int i = 0; i < NSEND; i++)
        strm_close(s[i].fd);
    free(m);
}

int main(void)
{
    t_basic();
    t_flow();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
