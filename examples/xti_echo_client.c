/* SPDX-License-Identifier: MIT */
/*
 * xti_echo_client.c -- an XTI echo client, written as for any XTI system:
 * only <xti.h>.  It connects to the server's address, sends a few TSDUs
 * (one of them in two T_MORE fragments), checks each echo, and releases
 * the connection (orderly release where the provider has it).
 *
 * echo_client() is called by xti_echo_server.c's main(); built alone, this
 * file's main() runs the client against a server in the same program,
 * which it starts the same way (ustreams streams live inside one process).
 *     cc -std=c11 xti_echo_client.c $(pkg-config --cflags --libs xnet)
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <xti.h>

int echo_client(const char *provider, const struct netbuf *server_addr);

int echo_client(const char *provider, const struct netbuf *server_addr)
{
    static const char *msgs[] = {"hello", "over XTI", "on ustreams"};
    struct t_info info;
    struct t_call sndcall;
    char buf[256];
    int fd, flags;

    fd = t_open(provider, O_RDWR, &info);
    if (fd < 0 || t_bind(fd, NULL, NULL) < 0) {
        t_error("client: t_open/t_bind");
        return 1;
    }
    memset(&sndcall, 0, sizeof(sndcall));
    sndcall.addr = *server_addr;
    if (t_connect(fd, &sndcall, NULL) < 0) {
        t_error("client: t_connect");
        return 1;
    }
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        size_t len = strlen(msgs[i]), got = 0, half = len / 2;
        /* send each TSDU as two fragments: T_MORE on the first */
        if (t_snd(fd, (void *)msgs[i], (unsigned)half, T_MORE) < 0 ||
            t_snd(fd, (void *)(msgs[i] + half), (unsigned)(len - half), 0) < 0) {
            t_error("client: t_snd");
            return 1;
        }
        do {
            int n = t_rcv(fd, buf + got, (unsigned)(sizeof(buf) - got), &flags);
            if (n < 0) {
                t_error("client: t_rcv");
                return 1;
            }
            got += (size_t)n;
        } while (flags & T_MORE);
        printf("echo: %.*s\n", (int)got, buf);
        if (got != len || memcmp(buf, msgs[i], len) != 0)
            return 1;
    }
    if (info.servtype == T_COTS_ORD) {
        if (t_sndrel(fd) < 0) {
            t_error("client: t_sndrel");
            return 1;
        }
        while (t_rcv(fd, buf, sizeof(buf), &flags) >= 0)
            ;
        if (t_errno != TLOOK || t_look(fd) != T_ORDREL || t_rcvrel(fd) < 0) {
            t_error("client: t_rcvrel");
            return 1;
        }
    } else if (t_snddis(fd, NULL) < 0) {
        t_error("client: t_snddis");
        return 1;
    }
    t_close(fd);
    return 0;
}

#ifndef XTI_ECHO_NO_MAIN
#include <pthread.h>
#include <stdlib.h>

struct srv {
    int lis;
    const char *prov;
};

/* A minimal server for the stand-alone client: accept once, echo, release. */
static void *one_server(void *arg)
{
    struct srv *s = arg;
    struct t_call call;
    char buf[256];
    int fd = t_open(s->prov, O_RDWR, NULL), n, flags;

    memset(&call, 0, sizeof(call));
    if (fd < 0 || t_listen(s->lis, &call) < 0 || t_accept(s->lis, fd, &call) < 0) {
        t_error("server");
        return NULL;
    }
    while ((n = t_rcv(fd, buf, sizeof(buf), &flags)) >= 0)
        t_snd(fd, buf, (unsigned)n, flags & T_MORE);
    if (t_look(fd) == T_ORDREL) {
        t_rcvrel(fd);
        t_sndrel(fd);
    } else {
        t_rcvdis(fd, NULL);
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
    pthread_create(&th, NULL, one_server, &s);
    rc = echo_client(s.prov, &ret.addr);
    pthread_join(th, NULL);
    t_close(s.lis);
    return rc;
}
#endif
