/* SPDX-License-Identifier: MIT */
/*
 * test_tl_stress.c -- threads over ticots/ticotsord (docs/TPI.md, flow
 * control).  NCONN connector threads connect to one listener, whose thread
 * accepts each onto a new endpoint with a small read side (XTI_RCVBUF 1024)
 * and starts a receiver thread for it.  Each connector sends NMSG TSDUs of
 * varying size carrying its number and a sequence number (every fifth split
 * in two T_DATA_REQ with MORE_flag, every seventh as bare M_DATA), then
 * releases (ticotsord: T_ORDREL_REQ; ticots: T_DISCON_REQ after the
 * receiver confirmed the count).  Receivers are slower than senders.  Every
 * byte and every boundary is counted, in order; nothing may be lost.
 * ticlts: NSEND sender threads to one receiver whose read side is small
 * (XTI_RCVBUF 1024) and which reads slowly: every unit arrives, in order per
 * sender; then a destination that closes while a sender waits on it turns
 * the units still queued into T_UDERROR_IND(ECONNREFUSED).
 * Churn: connectors that withdraw, close while waiting or after sending,
 * against a listener that accepts onto endpoints it closes at once or
 * refuses: no crash, no leak, every answer one TPI allows.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tl_util.h"

#define NCONN 4
#define NMSG 2000

static const char *dev;
static atomic_long total_bytes, total_msgs;

static int msg_len(int conn, int i)
{
    return 8 + (i * 131 + conn * 17) % 1500;
}

static void *connector(void *arg)
{
    int id = (int)(intptr_t)arg;
    int fd = tlu_open(dev);
    struct tlu_msg *m = malloc(sizeof(*m));
    unsigned char buf[1600];

    CHECK_EQ(tlu_bind(fd, NULL, 0, 0, NULL, NULL, NULL), 0);
    CHECK_EQ(tlu_conn_req(fd, "stress", 6), 0);
    CHECK(tlu_ok(fd, T_CONN_REQ));
    if (!CHECK_EQ(tlu_get(fd, m), T_CONN_CON))
        goto out;
    for (int i = 0; i < NMSG; i++) {
        int len = msg_len(id, i);
        memcpy(buf, &id, 4);
        memcpy(buf + 4, &i, 4);
        for (int k = 8; k < len; k++)
            buf[k] = (unsigned char)(i ^ k);
        if (i % 7 == 3) {
            if (!CHECK_EQ(strm_write(fd, buf, (size_t)len), len))
                break;
        } else if (i % 5 == 0) {
            if (!CHECK_EQ(tlu_data(fd, buf, len / 2, 1, 0), 0) ||
                !CHECK_EQ(tlu_data(fd, buf + len / 2, len - len / 2, 0, 0), 0))
                break;
        } else if (!CHECK_EQ(tlu_data(fd, buf, len, 0, 0), 0)) {
            break;
        }
    }
    if (strcmp(dev, TLU_ORD) == 0) {
        CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
        /* the receiver answers once it has read everything */
        int r;
        while ((r = tlu_get(fd, m)) == -1 && errno == ETIME)
            ;
        CHECK_EQ(r, T_ORDREL_IND);
        CHECK_EQ(tlu_state(fd), TS_IDLE);
    } else {
        int r;
        while ((r = tlu_get(fd, m)) == -1 && errno == ETIME)
            ;
        CHECK_EQ(r, T_DATA_IND); /* "done" from the receiver */
        CHECK_EQ(tlu_discon_req(fd, -1), 0);
        CHECK(tlu_ok(fd, T_DISCON_REQ));
    }
out:
    strm_close(fd);
    free(m);
    return NULL;
}

static void *receiver(void *arg)
{
    int fd = (int)(intptr_t)arg;
    struct tlu_msg *m = malloc(sizeof(*m));
    unsigned char tsdu[3200];
    int have = 0, next = 0, conn = -1, ok = 1;

    while (next < NMSG && ok) {
        int r = tlu_get(fd, m);
        if (r == -1 && errno == ETIME)
            continue;
        if (!CHECK(r == T_DATA_IND || r == -2)) {
            fprintf(stderr, "receiver: got %d errno %d after %d\n", r, errno, next);
            break;
        }
        if (!CHECK(have + m->dlen <= (int)sizeof(tsdu)))
            break;
        memcpy(tsdu + have, m->d, (size_t)(m->dlen > 0 ? m->dlen : 0));
        have += m->dlen > 0 ? m->dlen : 0;
        if (r == T_DATA_IND && m->c.p.data_ind.MORE_flag)
            continue;
        int id, seq;
        memcpy(&id, tsdu, 4);
        memcpy(&seq, tsdu + 4, 4);
        if (conn < 0)
            conn = id;
        ok &= CHECK_EQ(id, conn);
        ok &= CHECK_EQ(seq, next);
        ok &= CHECK_EQ(have, msg_len(conn, next));
        for (int k = 8; k < have && ok; k++)
            ok &= tsdu[k] == (unsigned char)(seq ^ k);
        CHECK(ok);
        atomic_fetch_add(&total_bytes, have);
        atomic_fetch_add(&total_msgs, 1);
        have = 0;
        next++;
        if (next % 32 == 0) {
            struct timespec ts = {0, 300000}; /* slower than the sender */
            nanosleep(&ts, NULL);
        }
    }
    CHECK_EQ(next, NMSG);
    if (strcmp(dev, TLU_ORD) == 0) {
        int r;
        while ((r = tlu_get(fd, m)) == -1 && errno == ETIME)
            ;
        CHECK_EQ(r, T_ORDREL_IND);
        CHECK_EQ(tlu_req(fd, T_ORDREL_REQ), 0);
        CHECK_EQ(tlu_state(fd), TS_IDLE);
    } else {
        CHECK_EQ(tlu_data(fd, "done", 4, 0, 0), 0);
        CHECK_EQ(tlu_discon_ind(fd, NULL), ECONNRESET);
    }
    strm_close(fd);
    free(m);
    return NULL;
}

static void run(const char *d)
{
    pthread_t ct[NCONN], rt[NCONN];
    int l = tlu_open(d);
    long want = 0;

    dev = d;
    atomic_store(&total_bytes, 0);
    atomic_store(&total_msgs, 0);
    CHECK_EQ(tlu_bind(l, "stress", 6, 16, NULL, NULL, NULL), 0);
    for (int i = 0; i < NCONN; i++)
        CHECK_EQ(pthread_create(&ct[i], NULL, connector, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NCONN; i++) {
        struct {
            struct T_optmgmt_req r;
            struct T_opthdr oh;
            t_uscalar_t v;
        } om = {{T_OPTMGMT_REQ, 20, 16, T_NEGOTIATE}, {20, XTI_GENERIC, XTI_RCVBUF, 0}, 1024};
        struct tlu_msg m;
        t_scalar_t seq = tlu_conn_ind(l);
        int a = tlu_open(d);
        CHECK_EQ(tlu_put(a, &om, sizeof(om), NULL, -1, 0), 0);
        CHECK_EQ(tlu_get(a, &m), T_OPTMGMT_ACK);
        CHECK_EQ(tlu_conn_res(l, tlu_acceptor_id(a), seq), 0);
        CHECK(tlu_ok(l, T_CONN_RES));
        CHECK_EQ(pthread_create(&rt[i], NULL, receiver, (void *)(intptr_t)a), 0);
    }
    for (int i = 0; i < NCONN; i++) {
        pthread_join(ct[i], NULL);
        pthread_join(rt[i], NULL);
        for (int k = 0; k < NMSG; k++)
            want += msg_len(i, k);
    }
    CHECK_EQ(atomic_load(&total_msgs), NCONN * NMSG);
    CHECK_EQ(atomic_load(&total_bytes), want);
    strm_close(l);
}

/* ---- ticlts: many senders, one slow receiver with a small read side ---- */

#define NSEND 4
#define NUNIT 1500

struct clts_sender {
    int fd, id;
};

static void *clts_send_main(void *arg)
{
    struct clts_sender *s = arg;
    unsigned char buf[1100];
    for (int i = 0; i < NUNIT; i++) {
        int len = 8 + (i * 37 + s->id * 11) % 1000;
        memcpy(buf, &s->id, 4);
        memcpy(buf + 4, &i, 4);
        for (int k = 8; k < len; k++)
            buf[k] = (unsigned char)(i + k);
        if (!CHECK_EQ(tlu_unitdata(s->fd, "sink", 4, buf, len), 0))
            break;
    }
    return NULL;
}

static void t_clts_flow(void)
{
    int r = tlu_open(TLU_CLTS);
    struct clts_sender s[NSEND];
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
        CHECK_EQ(pthread_create(&th[i], NULL, clts_send_main, &s[i]), 0);
    }
    for (int i = 0; i < NSEND; i++)
        for (int k = 0; k < NUNIT; k++)
            want += 8 + (k * 37 + i * 11) % 1000;
    for (int got = 0; got < NSEND * NUNIT; got++) {
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
        CHECK_EQ(next[i], NUNIT);
    }
    CHECK_EQ(bytes, want);
    CHECK(tlu_quiet(r, 10));

    /* senders blocked behind a full destination that then closes */
    for (int i = 0; i < NSEND; i++)
        CHECK_EQ(strm_fcntl(s[i].fd, F_SETFL, O_NONBLOCK), 0);
    static char buf[1000];
    int sent = 0;
    while (sent < 10000 && tlu_unitdata(s[0].fd, "sink", 4, buf, sizeof(buf)) == 0)
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

/* ---- churn: connections made and broken while both sides close ---- */

#define NCHURN 3
#define NITER 150

static atomic_int churn_done;

static void *churn_connector(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct tlu_msg *m = malloc(sizeof(*m));

    for (int i = 0; i < NITER; i++) {
        int fd = tlu_open(TLU_COTS);
        CHECK_EQ(tlu_bind(fd, NULL, 0, 0, NULL, NULL, NULL), 0);
        CHECK_EQ(tlu_conn_req(fd, "churn", 5), 0);
        CHECK(tlu_ok(fd, T_CONN_REQ));
        switch ((i + id) % 3) {
        case 0: /* close while waiting: withdraws */
            break;
        case 1: /* withdraw explicitly, or lose the race to the answer */
            CHECK_EQ(tlu_discon_req(fd, -1), 0);
            break;
        default: { /* wait for the answer, send, close */
            int r = tlu_get(fd, m);
            if (!CHECK(r == T_CONN_CON || r == T_DISCON_IND))
                fprintf(stderr, "churn: got %d errno %d\n", r, errno);
            if (r == T_CONN_CON)
                for (int k = 0; k < 20; k++)
                    tlu_data(fd, "churn data", 10, 0, k % 5 == 0);
            break;
        }
        }
        strm_close(fd);
    }
    atomic_fetch_add(&churn_done, 1);
    free(m);
    return NULL;
}

static void t_churn(void)
{
    pthread_t th[NCHURN];
    int l = tlu_open(TLU_COTS), n = 0;
    struct tlu_msg *m = malloc(sizeof(*m));

    CHECK_EQ(tlu_bind(l, "churn", 5, 8, NULL, NULL, NULL), 0);
    atomic_store(&churn_done, 0);
    for (int i = 0; i < NCHURN; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, churn_connector, (void *)(intptr_t)i), 0);
    while (atomic_load(&churn_done) < NCHURN || tlu_ready(l, 50)) {
        if (!tlu_ready(l, 50))
            continue;
        int r = tlu_get(l, m);
        if (r == T_CONN_IND) {
            t_scalar_t seq = m->c.p.conn_ind.SEQ_number;
            if (n++ % 4 == 3) {
                tlu_discon_req(l, seq); /* refuse (may cross a withdrawal) */
            } else {
                int a = tlu_open(TLU_COTS);
                tlu_conn_res(l, tlu_acceptor_id(a), seq);
                if (n % 2)
                    tlu_data(a, "hi", 2, 0, 0);
                strm_close(a);
            }
        } else {
            /* acks (T_OK_ACK, T_ERROR_ACK TBADSEQ after a withdrawal) and
             * T_DISCON_IND of withdrawn indications */
            CHECK(r == T_OK_ACK || r == T_ERROR_ACK || r == T_DISCON_IND);
        }
    }
    for (int i = 0; i < NCHURN; i++)
        pthread_join(th[i], NULL);
    CHECK(n > 0);
    strm_close(l);
    free(m);
}

int main(void)
{
    run(TLU_ORD);
    run(TLU_COTS);
    t_clts_flow();
    t_churn();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
