/* SPDX-License-Identifier: MIT */
/*
 * test_hangup_enxio.c -- a hung-up pipe end against a pipe end whose peer
 * closed: every call of the table "Hang-up and M_ERROR" of docs/STREAMHEAD.md
 * (src/head/sd_state.c), one case per call, for both events.
 *
 * References: streamio(7I) (each request's "ENXIO: hangup received on
 * fildes"), write(2) ("ENXIO: a hangup occurred on the stream being written
 * to"; "EPIPE: ... a pipe ... that has only one end open"), putmsg(2)
 * ("ENXIO: a hangup condition was generated downstream"; "EPIPE: fd refers
 * to a STREAMS-based pipe and the other end of the pipe is closed", with
 * SIGPIPE), read(2) and getmsg(2) (a hung-up stream gives what is queued,
 * then 0).
 * Cases:
 *   H.1 M_HANGUP sent up a pipe end by the pipe below it (the peer still
 *       open): every call that writes or acts below the head fails ENXIO,
 *       no SIGPIPE; the queries still work; reads give what is queued, then 0
 *   H.2 the peer closed: the same ioctls ENXIO but I_SWROPT, which works (a
 *       program may turn SNDPIPE off); write, writev, putmsg, putpmsg,
 *       I_PUTMSG, I_PUTPMSG fail EPIPE and raise SIGPIPE (SNDPIPE); the
 *       queries and reads as in H.1
 *   H.3 nothing leaks
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stream.h>
#include <sys/uio.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

static int g_fd;    /* the end under test */
static int g_other; /* a stream of another pipe (I_FDINSERT, I_SENDFD, I_LINK) */
static atomic_int g_sigpipe;

static void on_sigpipe(int sig)
{
    (void)sig;
    atomic_fetch_add(&g_sigpipe, 1);
}

/* ---- the calls: each returns the call's value (-1 with errno) ---- */

static int c_write(void)
{
    return (int)strm_write(g_fd, "xy", 2);
}
static int c_writev(void)
{
    struct iovec v[2] = {{.iov_base = "x", .iov_len = 1}, {.iov_base = "y", .iov_len = 1}};
    return (int)strm_writev(g_fd, v, 2);
}
static int c_putmsg(void)
{
    struct strbuf d = {.len = 2, .buf = "xy"};
    return putmsg(g_fd, NULL, &d, 0);
}
static int c_putmsg_hipri(void)
{
    struct strbuf c = {.len = 2, .buf = "pc"};
    return putmsg(g_fd, &c, NULL, RS_HIPRI);
}
static int c_putpmsg(void)
{
    struct strbuf d = {.len = 2, .buf = "xy"};
    return putpmsg(g_fd, NULL, &d, 1, MSG_BAND);
}
static int c_i_putmsg(void)
{
    struct strpmsg pm = {.ctlbuf = {.len = -1}, .databuf = {.len = 2, .buf = "xy"}};
    return strm_ioctl(g_fd, I_PUTMSG, &pm);
}
static int c_i_putpmsg(void)
{
    struct strpmsg pm = {.ctlbuf = {.len = -1}, .databuf = {.len = 2, .buf = "xy"}, .band = 2,
                         .flags = MSG_BAND};
    return strm_ioctl(g_fd, I_PUTPMSG, &pm);
}
static int c_str(void)
{
    struct strioctl ic = {.ic_cmd = 4242, .ic_timout = 1, .ic_len = 0, .ic_dp = NULL};
    return strm_ioctl(g_fd, I_STR, &ic);
}
static int c_transparent(void)
{
    return strm_ioctl(g_fd, ('Z' << 8) | 77, 0);
}
static int c_push(void)
{
    return strm_ioctl(g_fd, I_PUSH, "nullmod");
}
static int c_pop(void)
{
    return strm_ioctl(g_fd, I_POP, 0);
}
static int c_flush(void)
{
    return strm_ioctl(g_fd, I_FLUSH, FLUSHW);
}
static int c_flushband(void)
{
    struct bandinfo bi = {.bi_pri = 1, .bi_flag = FLUSHW};
    return strm_ioctl(g_fd, I_FLUSHBAND, &bi);
}
static int c_fdinsert(void)
{
    char ctl[sizeof(void *)] = {0};
    struct strfdinsert fi = {.ctlbuf = {.len = (int)sizeof(ctl), .buf = ctl},
                             .databuf = {.len = -1},
                             .flags = 0,
                             .fildes = g_other,
                             .offset = 0};
    return strm_ioctl(g_fd, I_FDINSERT, &fi);
}
static int c_sendfd(void)
{
    return strm_ioctl(g_fd, I_SENDFD, g_other);
}
static int c_swropt(void)
{
    return strm_ioctl(g_fd, I_SWROPT, SNDZERO | SNDPIPE);
}
static int c_canput(void)
{
    return strm_ioctl(g_fd, I_CANPUT, 0);
}
static int c_link(void)
{
    return strm_ioctl(g_fd, I_LINK, g_other);
}
static int c_plink(void)
{
    return strm_ioctl(g_fd, I_PLINK, g_other);
}
static int c_unlink(void)
{
    return strm_ioctl(g_fd, I_UNLINK, MUXID_ALL);
}
static int c_punlink(void)
{
    return strm_ioctl(g_fd, I_PUNLINK, MUXID_ALL);
}
/* queries and the head's own options: not stopped by a hang-up */
static int c_nread(void)
{
    int v = -1;
    int r = strm_ioctl(g_fd, I_NREAD, &v);
    return r >= 0 && v == 2 ? r : -2; /* the first queued message: "ab" */
}
static int c_find(void)
{
    return strm_ioctl(g_fd, I_FIND, "nullmod") == 1 ? 0 : -2;
}
static int c_look(void)
{
    char n[FMNAMESZ + 1] = "";
    int r = strm_ioctl(g_fd, I_LOOK, n);
    return r == 0 && strcmp(n, "nullmod") == 0 ? 0 : -2;
}
static int c_list(void)
{
    return strm_ioctl(g_fd, I_LIST, NULL) == 1 ? 0 : -2;
}
static int c_getsig(void)
{
    int v = 0;
    int r = strm_ioctl(g_fd, I_GETSIG, &v);
    return r == 0 && v == (S_INPUT | S_HANGUP) ? 0 : -2;
}
static int c_gwropt(void)
{
    int v;
    return strm_ioctl(g_fd, I_GWROPT, &v);
}
static int c_grdopt(void)
{
    int v;
    return strm_ioctl(g_fd, I_GRDOPT, &v);
}
static int c_srdopt(void)
{
    return strm_ioctl(g_fd, I_SRDOPT, RNORM | RPROTNORM);
}
static int c_peek(void)
{
    char b[8];
    struct strpeek pk = {.ctlbuf = {.maxlen = -1}, .databuf = {.maxlen = sizeof(b), .buf = b}};
    return strm_ioctl(g_fd, I_PEEK, &pk) == 1 ? 0 : -2;
}
static int c_ckband(void)
{
    return strm_ioctl(g_fd, I_CKBAND, 0) == 1 ? 0 : -2;
}
static int c_getband(void)
{
    int v = -1;
    return strm_ioctl(g_fd, I_GETBAND, &v) == 0 && v == 0 ? 0 : -2;
}
static int c_atmark(void)
{
    return strm_ioctl(g_fd, I_ATMARK, ANYMARK);
}
static int c_setcltime(void)
{
    int v = 50;
    return strm_ioctl(g_fd, I_SETCLTIME, &v);
}
static int c_isastream(void)
{
    return strm_ioctl(g_fd, I_ISASTREAM, 0) == I_PIPE ? 0 : -2;
}

/* What a call gives: WANT_OK (succeeds), an errno, WANT_PIPE (ENXIO after
 * M_HANGUP, EPIPE and SIGPIPE when the peer closed) or WANT_HUPONLY (ENXIO
 * after M_HANGUP, succeeds when the peer closed). */
enum { WANT_OK = 0, WANT_PIPE = -1, WANT_HUPONLY = -2 };

static const struct hcase {
    const char *name;
    int (*call)(void);
    int want;
} cases[] = {
    {"write", c_write, WANT_PIPE},
    {"writev", c_writev, WANT_PIPE},
    {"putmsg", c_putmsg, WANT_PIPE},
    {"putmsg RS_HIPRI", c_putmsg_hipri, WANT_PIPE},
    {"putpmsg band 1", c_putpmsg, WANT_PIPE},
    {"I_PUTMSG", c_i_putmsg, WANT_PIPE},
    {"I_PUTPMSG", c_i_putpmsg, WANT_PIPE},
    {"I_STR", c_str, ENXIO},
    {"transparent ioctl", c_transparent, ENXIO},
    {"I_PUSH", c_push, ENXIO},
    {"I_POP", c_pop, ENXIO},
    {"I_FLUSH", c_flush, ENXIO},
    {"I_FLUSHBAND", c_flushband, ENXIO},
    {"I_FDINSERT", c_fdinsert, ENXIO},
    {"I_SENDFD", c_sendfd, ENXIO},
    {"I_SWROPT", c_swropt, WANT_HUPONLY}, /* SNDPIPE can be turned off after EPIPE */
    {"I_CANPUT", c_canput, ENXIO},
    {"I_LINK", c_link, ENXIO},
    {"I_PLINK", c_plink, ENXIO},
    {"I_UNLINK", c_unlink, ENXIO},
    {"I_PUNLINK", c_punlink, ENXIO},
    {"I_NREAD", c_nread, WANT_OK},
    {"I_FIND", c_find, WANT_OK},
    {"I_LOOK", c_look, WANT_OK},
    {"I_LIST", c_list, WANT_OK},
    {"I_GETSIG", c_getsig, WANT_OK},
    {"I_GWROPT", c_gwropt, WANT_OK},
    {"I_GRDOPT", c_grdopt, WANT_OK},
    {"I_SRDOPT", c_srdopt, WANT_OK},
    {"I_PEEK", c_peek, WANT_OK},
    {"I_CKBAND", c_ckband, WANT_OK},
    {"I_GETBAND", c_getband, WANT_OK},
    {"I_ATMARK", c_atmark, WANT_OK},
    {"I_SETCLTIME", c_setcltime, WANT_OK},
    {"I_ISASTREAM", c_isastream, WANT_OK},
};

enum { EV_HANGUP, EV_PEER };

/* A pipe end with nullmod pushed, "ab" and "cd" queued for it, then the
 * event; returns the other end (-1 once closed). */
static int setup(int ev, int fds[2])
{
    CHECK_EQ(strm_pipe(fds), 0);
    struct stdata *sd = ust_sd_peek(fds[0]);
    queue_t *pipe_rq = RD(ust_qnext(sd->sd_wq)); /* the pipe below fds[0], read side */
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_SETSIG, S_INPUT | S_HANGUP), 0);
    CHECK_EQ(strm_write(fds[1], "ab", 2), 2);
    CHECK_EQ(strm_write(fds[1], "cd", 2), 2);
    if (ev == EV_HANGUP) {
        CHECK(putnextctl(pipe_rq, M_HANGUP)); /* up through nullmod to the head */
    } else {
        CHECK_EQ(strm_close(fds[1]), 0);
        fds[1] = -1;
    }
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    CHECK_EQ(strm_poll(&p, 1, 5000), 1);
    CHECK(p.revents & POLLHUP);
    return fds[1];
}

static void run_event(int ev)
{
    const char *evname = ev == EV_HANGUP ? "M_HANGUP" : "peer closed";
    int fds[2], other[2];
    CHECK_EQ(strm_pipe(other), 0);
    g_other = other[0];
    setup(ev, fds);
    g_fd = fds[0];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct hcase *c = &cases[i];
        int want = c->want, sig = 0;
        if (want == WANT_PIPE) {
            want = ev == EV_HANGUP ? ENXIO : EPIPE;
            sig = ev == EV_PEER;
        } else if (want == WANT_HUPONLY) {
            want = ev == EV_HANGUP ? ENXIO : WANT_OK;
        }
        atomic_store(&g_sigpipe, 0);
        errno = 0;
        int r = c->call();
        int e = errno;
        int ok = want == WANT_OK ? r >= 0 : (r == -1 && e == want);
        if (!CHECK(ok))
            fprintf(stderr, "  %s, %s: returned %d errno %d (%s), want %s\n", evname, c->name, r,
                    e, strerror(e), want == WANT_OK ? "success" : strerror(want));
        if (!CHECK_EQ(atomic_load(&g_sigpipe), sig))
            fprintf(stderr, "  %s, %s: SIGPIPE count\n", evname, c->name);
    }
    /* reads: what is queued, then end of file */
    char b[8];
    CHECK_EQ(strm_read(g_fd, b, 2), 2);
    CHECK(memcmp(b, "ab", 2) == 0);
    struct strbuf cb = {.maxlen = sizeof(b), .buf = b}, db = {.maxlen = sizeof(b), .buf = b};
    int fl = 0;
    CHECK_EQ(getmsg(g_fd, &cb, &db, &fl), 0);
    CHECK_EQ(cb.len, -1);
    CHECK_EQ(db.len, 2);
    CHECK(memcmp(b, "cd", 2) == 0);
    CHECK_EQ(strm_read(g_fd, b, sizeof(b)), 0);
    fl = 0;
    CHECK_EQ(getmsg(g_fd, &cb, &db, &fl), 0);
    CHECK_EQ(cb.len, 0);
    CHECK_EQ(db.len, 0);
    CHECK_EQ(strm_close(fds[0]), 0);
    if (fds[1] >= 0)
        CHECK_EQ(strm_close(fds[1]), 0);
    CHECK_EQ(strm_close(other[0]), 0);
    CHECK_EQ(strm_close(other[1]), 0);
}

int main(void)
{
    alarm(120); /* the deadline: a call that blocks fails the test */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigpipe;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGPIPE, &sa, NULL), 0);
    signal(SIGPOLL, SIG_IGN); /* I_SETSIG's S_INPUT | S_HANGUP */
    run_event(EV_HANGUP); /* H.1 */
    run_event(EV_PEER);   /* H.2 */
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS(); /* H.3 */
    return CHECK_RESULT();
}
