/* SPDX-License-Identifier: MIT */
/*
 * xti_echo_server.c -- an XTI echo server, written as for any XTI system:
 * only <xti.h>.  It binds a transport endpoint, accepts each connection on
 * a new endpoint, echoes every TSDU back until the client releases the
 * connection (orderly release on ticotsord, or a disconnect), and serves
 * the next.  Built against an installed ustreams, with the client's
 * echo_client() (its own main() left out):
 *     cc -std=c11 xti_echo_server.c xti_echo_client.c -DXTI_ECHO_NO_MAIN \
 *        $(pkg-config --cflags --libs xnet)
 *
 * ustreams streams live inside one process, so this server and
 * xti_echo_client.c are meant to be linked into one program; alone,
 * `xti_echo_server` runs the server in a thread and one client of its own:
 * see main() below.  Usage: xti_echo_server [provider] (default
 * /dev/ticotsord).
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

/* Echo TSDUs on fd until the peer releases or disconnects. */
static void echo(int fd)
{
    char buf[4096];
    int flags;

    for (;;) {
        int n = t_rcv(fd, buf, sizeof(buf), &flags);
        if (n < 0) {
            if (t_errno == TLOOK) {
                int ev = t_look(fd);
                if (ev == T_ORDREL && t_rcvrel(fd) == 0 && t_sndrel(fd) == 0)
                    return;
                if (ev == T_DISCONNECT && t_rcvdis(fd, NULL) == 0)
                    return;
            }
            t_error("echo: t_rcv");
            return;
        }
        if (t_snd(fd, buf, (unsigned)n, flags & T_MORE) != n) {
            t_error("echo: t_snd");
            return;
        }
    }
}

static void *serve(void *arg)
{
    struct server *s = arg;
    struct t_call *call = t_alloc(s->listener, T_CALL, T_ADDR);

    for (int i = 0; call && i < s->nconn; i++) {
        int fd = t_open(s->provider, O_RDWR, NULL);
        if (fd < 0 || t_listen(s->listener, call) < 0 || t_accept(s->listener, fd, call) < 0) {
            t_error("server: t_listen/t_accept");
            break;
        }
        echo(fd);
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
    pthread_create(&th, NULL, serve, &s);
    rc = echo_client(s.provider, &s.addr);
    pthread_join(th, NULL);
    t_free(req, T_BIND);
    t_free(ret, T_BIND);
    t_close(s.listener);
    return rc;
}
