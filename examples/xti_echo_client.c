/* SPDX-License-Identifier: MIT */
/*
 * xti_echo_client.c -- an XTI echo client, written as for any XTI system:
 * only <xti.h> (and <netinet/in.h> for the Internet address).  It connects
 * to the server's address, sends a few messages and one of 64 KiB, checks
 * each echo byte for byte, and releases the connection: t_sndrel and the
 * server's T_ORDREL where the provider has orderly release (T_COTS_ORD),
 * t_snddis otherwise, then t_close -- on every path, errors included, so
 * the server is never left waiting.
 *
 * TSDU or byte stream (t_info's tsdu; docs/XTI.md, "TSDU vs byte stream"):
 *   tsdu > 0 or T_INFINITE  each message is one TSDU, sent in pieces with
 *                 T_MORE on all but the last; its echo is read until a
 *                 t_rcv without T_MORE ends the TSDU;
 *   tsdu == 0     a byte stream (TCP): T_MORE means nothing and t_rcv
 *                 returns whatever has arrived, so the echo is read until
 *                 as many bytes have come back as were sent.
 *
 * echo_client() is called by xti_echo_server.c's main(); built alone, this
 * file's main() runs the client against a server in the same program,
 * which it starts the same way (ustreams streams live inside one process).
 *     cc -std=c11 xti_echo_client.c $(pkg-config --cflags --libs xnet)
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xti.h>

#define BIG 65536 /* the large message */
#define PIECE 4096

int echo_client(const char *provider, const struct netbuf *server_addr);

/* Send msg (len bytes) as one TSDU in pieces (tsdus) or as bytes.  0 / -1. */
static int send_msg(int fd, const char *msg, size_t len, int tsdus)
{
    size_t off = 0;

    while (off < len) {
        size_t n = len - off;
        if (n > PIECE)
            n = PIECE;
        else if (off == 0 && n > 1)
            n /= 2; /* a short message goes in two pieces too */
        int more = tsdus && off + n < len ? T_MORE : 0;
        int k = t_snd(fd, (void *)(msg + off), (unsigned)n, more);
        if (k < 0)
            return -1;
        off += (size_t)k;
    }
    return 0;
}

/* Read the echo of a len-byte message into buf (room for len).  0 / -1. */
static int recv_echo(int fd, char *buf, size_t len, int tsdus)
{
    size_t got = 0;
    int flags;

    for (;;) {
        if (got == len && !tsdus)
            return 0;
        /* one byte of room beyond len: a TSDU longer than sent shows */
        char extra;
        char *to = got < len ? buf + got : &extra;
        unsigned room = got < len ? (unsigned)(len - got) : 1;
        int n = t_rcv(fd, to, room, &flags);
        if (n < 0)
            return -1;
        got += (size_t)n;
        if (got > len) {
            fprintf(stderr, "client: the echo is longer than the message\n");
            return -1;
        }
        if (tsdus && !(flags & T_MORE))
            return got == len ? 0 : -1;
    }
}

/* An Internet address bound to any interface (XNS 5: a struct sockaddr_in)
 * is reached at the loopback address. */
static void to_loopback(struct netbuf *a)
{
    struct sockaddr_in sin;

    if (a->len != sizeof(sin))
        return;
    memcpy(&sin, a->buf, sizeof(sin));
    if (sin.sin_family != AF_INET || sin.sin_addr.s_addr != htonl(INADDR_ANY))
        return;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memcpy(a->buf, &sin, sizeof(sin));
}

int echo_client(const char *provider, const struct netbuf *server_addr)
{
    static const char *msgs[] = {"hello", "over XTI", "on ustreams"};
    struct t_info info;
    struct t_call sndcall;
    char abuf[256], rbuf[256];
    char *big = NULL, *bigecho = NULL;
    int fd, rc = 1, connected = 0;

    fd = t_open(provider, O_RDWR, &info);
    if (fd < 0 || t_bind(fd, NULL, NULL) < 0) {
        t_error("client: t_open/t_bind");
        goto out;
    }
    int tsdus = info.tsdu != 0; /* > 0 or T_INFINITE: boundaries kept */
    if (server_addr->len > sizeof(abuf))
        goto out;
    memcpy(abuf, server_addr->buf, server_addr->len);
    memset(&sndcall, 0, sizeof(sndcall));
    sndcall.addr.buf = abuf;
    sndcall.addr.len = server_addr->len;
    to_loopback(&sndcall.addr);
    if (t_connect(fd, &sndcall, NULL) < 0) {
        t_error("client: t_connect");
        goto out;
    }
    connected = 1;
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        size_t len = strlen(msgs[i]);
        if (send_msg(fd, msgs[i], len, tsdus) < 0 || recv_echo(fd, rbuf, len, tsdus) < 0) {
            t_error("client: t_snd/t_rcv");
            goto out;
        }
        printf("echo: %.*s\n", (int)len, rbuf);
        if (memcmp(rbuf, msgs[i], len) != 0)
            goto out;
    }
    /* one message larger than any single piece (and than a TSDU limit
     * smaller than it: skipped there) */
    if (info.tsdu == T_INFINITE || info.tsdu == 0 || info.tsdu >= BIG) {
        big = malloc(BIG);
        bigecho = malloc(BIG);
        if (!big || !bigecho)
            goto out;
        for (size_t i = 0; i < BIG; i++)
            big[i] = (char)('a' + (i * 7 + i / 251) % 26);
        if (send_msg(fd, big, BIG, tsdus) < 0 || recv_echo(fd, bigecho, BIG, tsdus) < 0) {
            t_error("client: large message");
            goto out;
        }
        if (memcmp(big, bigecho, BIG) != 0)
            goto out;
        printf("echo: %d bytes\n", BIG);
    }
    if (info.servtype == T_COTS_ORD) {
        int flags;
        if (t_sndrel(fd) < 0) {
            t_error("client: t_sndrel");
            goto out;
        }
        while (t_rcv(fd, rbuf, sizeof(rbuf), &flags) >= 0)
            ; /* nothing more is due; the server's release ends it */
        if (t_errno != TLOOK || t_look(fd) != T_ORDREL || t_rcvrel(fd) < 0) {
            t_error("client: t_rcvrel");
            goto out;
        }
        connected = 0;
    } else {
        if (t_snddis(fd, NULL) < 0) {
            t_error("client: t_snddis");
            goto out;
        }
        connected = 0;
    }
    rc = 0;
out:
    if (connected)
        t_snddis(fd, NULL); /* the server sees T_DISCONNECT and ends */
    if (fd >= 0)
        t_close(fd);
    free(big);
    free(bigecho);
    return rc;
}

#ifndef XTI_ECHO_NO_MAIN
#include <pthread.h>

struct srv {
    int lis;
    const char *prov;
};

/* Send all n bytes of buf, flags on the last piece (t_snd may take part). */
static int send_msg_piece(int fd, const char *buf, int n, int flags)
{
    while (n > 0) {
        int k = t_snd(fd, (void *)buf, (unsigned)n, flags);
        if (k < 0)
            return -1;
        buf += k;
        n -= k;
    }
    return 0;
}

/* A minimal server for the stand-alone client: accept once, echo what comes
 * (a TSDU's pieces keep their T_MORE; a byte stream has none), release. */
static void *one_server(void *arg)
{
    struct srv *s = arg;
    struct t_info info;
    struct t_call call;
    char buf[4096];
    int fd = t_open(s->prov, O_RDWR, &info), n, flags;

    memset(&call, 0, sizeof(call));
    if (fd < 0 || t_listen(s->lis, &call) < 0 || t_accept(s->lis, fd, &call) < 0) {
        t_error("server");
        if (fd >= 0)
            t_close(fd);
        return NULL;
    }
    while ((n = t_rcv(fd, buf, sizeof(buf), &flags)) >= 0)
        if (send_msg_piece(fd, buf, n, info.tsdu != 0 ? (flags & T_MORE) : 0) < 0)
            break;
    if (t_look(fd) == T_ORDREL) {
        t_rcvrel(fd);
        t_sndrel(fd);
    } else if (t_rcvdis(fd, NULL) < 0) {
        t_snddis(fd, NULL);
    }
    t_close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    struct srv s = {.prov = argc > 1 ? argv[1] : "/dev/ticotsord"};
    struct t_bind req, ret;
    char abuf[256];
    pthread_t th;
    int rc;

    s.lis = t_open(s.prov, O_RDWR, NULL);
    memset(&req, 0, sizeof(req));
    memset(&ret, 0, sizeof(ret));
    req.qlen = 1;
    ret.addr.buf = abuf;
    ret.addr.maxlen = sizeof(abuf);
    if (s.lis < 0 || t_bind(s.lis, &req, &ret) < 0) {
        t_error("t_open/t_bind");
        return 1;
    }
    if (pthread_create(&th, NULL, one_server, &s) != 0)
        return 1;
    rc = echo_client(s.prov, &ret.addr);
    if (rc != 0) /* the server may still wait in t_listen: exit ends it */
        return rc;
    pthread_join(th, NULL);
    t_close(s.lis);
    return 0;
}
#endif
