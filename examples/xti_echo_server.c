/* SPDX-License-Identifier: MIT */
/*
 * xti_echo_server.c -- an XTI echo server, written as for any XTI system:
 * only <xti.h>.  It binds a transport endpoint, accepts each connection on
 * a new endpoint, echoes what arrives until the client releases the
 * connection (orderly release where the provider has it, or a disconnect),
 * and serves the next.  Built against an installed ustreams, with the
 * client's echo_client() (its own main() left out):
 *     cc -std=c11 xti_echo_server.c xti_echo_client.c -DXTI_ECHO_NO_MAIN \
 *        $(pkg-config --cflags --libs xnet)
 *
 * Any connection-mode transport will do, whether it keeps message
 * boundaries or not (t_info's tsdu):
 *   tsdu > 0 or T_INFINITE  a TSDU may arrive in pieces, each but the last
 *                 with T_MORE; each piece is echoed with the same T_MORE, so
 *                 the client gets every TSDU back whole (the loopback
 *                 transports /dev/ticots, /dev/ticotsord);
 *   tsdu == 0     a byte stream (/dev/tcp): t_rcv returns whatever has
 *                 arrived, boundaries are not kept and T_MORE means
 *                 nothing; the bytes are echoed as they come.
 * The conversation ends on the client's T_ORDREL (answered with t_sndrel)
 * or T_DISCONNECT, and on any error (the server then disconnects): the
 * server never waits on a client that has gone.
 *
 * ustreams streams live inside one process, so this server and
 * xti_echo_client.c are meant to be linked into one program; alone,
 * `xti_echo_server` runs the server in a thread and one client of its own:
 * see main() below.  Usage: xti_echo_server [provider] (default
 * /dev/ticotsord; /dev/ticots and /dev/tcp work the same).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xti.h>

struct server {
    const char *provider;
    int listener;
    struct netbuf addr; /* where it is bound */
    int nconn;          /* connections to serve, then stop */
};

/* Send all n bytes of buf (t_snd may take part of it); flags apply to the
 * last piece.  0, or -1 with t_errno set. */
static int send_all(int fd, const char *buf, int n, int flags)
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

/* Echo on fd until the peer releases or disconnects.  0 when the
 * conversation ended as it should, -1 on an error (the caller disconnects). */
static int echo(int fd, int tsdus)
{
    char buf[4096];
    int flags;

    for (;;) {
        int n = t_rcv(fd, buf, sizeof(buf), &flags);
        if (n < 0) {
            if (t_errno != TLOOK)
                break;
            switch (t_look(fd)) {
            case T_ORDREL: /* the client is done: release our side too */
                return t_rcvrel(fd) == 0 && t_sndrel(fd) == 0 ? 0 : -1;
            case T_DISCONNECT:
                return t_rcvdis(fd, NULL) == 0 ? 0 : -1;
            default:
                continue;
            }
        }
        /* A piece of a TSDU keeps its T_MORE; a byte stream has none. */
        if (send_all(fd, buf, n, tsdus ? (flags & T_MORE) : 0) < 0)
            break;
    }
    t_error("echo");
    return -1;
}

static void *serve(void *arg)
{
    struct server *s = arg;
    struct t_call *call = t_alloc(s->listener, T_CALL, T_ADDR);

    for (int i = 0; call && i < s->nconn; i++) {
        struct t_info info;
        int fd = t_open(s->provider, O_RDWR, &info);
        if (fd < 0 || t_listen(s->listener, call) < 0 || t_accept(s->listener, fd, call) < 0) {
            t_error("server: t_open/t_listen/t_accept");
            if (fd >= 0)
                t_close(fd);
            break;
        }
        if (echo(fd, info.tsdu != 0) < 0)
            t_snddis(fd, NULL);
        t_close(fd);
    }
    t_free(call, T_CALL);
    return NULL;
}

int echo_client(const char *provider, const struct netbuf *server_addr);

int main(int argc, char **argv)
{
    struct server s = {.provider = argc > 1 ? argv[1] : "/dev/ticotsord", .nconn = 1};
    struct t_bind *req, *ret;
    pthread_t th;
    int rc;

    s.listener = t_open(s.provider, O_RDWR, NULL);
    if (s.listener < 0) {
        t_error("t_open");
        return 1;
    }
    req = t_alloc(s.listener, T_BIND, 0);
    ret = t_alloc(s.listener, T_BIND, T_ADDR);
    if (!req || !ret) {
        t_error("t_alloc");
        return 1;
    }
    req->qlen = 5;
    if (t_bind(s.listener, req, ret) < 0) {
        t_error("t_bind");
        return 1;
    }
    s.addr = ret->addr;
    if (pthread_create(&th, NULL, serve, &s) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    rc = echo_client(s.provider, &s.addr);
    if (rc != 0) {
        /* The client failed; if it never connected the server still waits in
         * t_listen: leave it (exit ends the process and its streams). */
        fprintf(stderr, "xti_echo_server: the client failed\n");
        return rc;
    }
    pthread_join(th, NULL);
    t_free(req, T_BIND);
    t_free(ret, T_BIND);
    t_close(s.listener);
    return 0;
}
