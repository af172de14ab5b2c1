/* SPDX-License-Identifier: MIT */
/*
 * test_mux.c -- multiplexing: I_LINK, I_UNLINK, I_PLINK, I_PUNLINK
 * (streamio(7)) and the reference multiplexer "mux" (<sys/mux.h>).
 *
 * Cases are numbered by the streamio(7) request they test:
 *   1.x  I_LINK: the link, its multiplexer id, the lower stream's descriptor
 *        failing I/O and ioctls with EINVAL, data both ways through mux
 *        (echo, loop and a STREAMS pipe as lower streams), every error
 *        (EBADF, EINVAL: not a multiplexer / not a stream / same stream /
 *        already linked / a cycle / controlling stream linked itself, ENXIO:
 *        either stream hung up, the M_ERROR error, the driver's M_IOCNAK,
 *        ETIME: no answer -- each undone, the lower stream usable again).
 *   2.x  I_UNLINK: by id, MUXID_ALL, unknown id, the wrong kind, another
 *        stream's link; ordinary links unlinked when the controlling stream
 *        closes; the lower driver is closed only when the last reference
 *        goes.
 *   3.x  I_PLINK / I_PUNLINK: the link outlives the controlling stream and
 *        is unlinked from a new one; MUXID_ALL; wrong kind.
 *   4.x  mux: routing, data before the route, fan-out to several upper
 *        streams, flow control (a non-blocking upper writer gets EAGAIN when
 *        the lower stream is full, and can write again once it drains),
 *        M_FLUSH, M_HANGUP from below and on unlink.
 * "tmux", a multiplexing driver defined here, answers the link ioctls as the
 * test tells it (ack, nak, no answer) and can put its stream in error or
 * hang it up.  At the end no message block may be outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/loop.h>
#include <sys/mux.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

/* ---- tmux: a multiplexing driver under the test's control ---------------- */

#define TMUX_ERROR  (('T' << 8) | 1) /* I_STR: M_ERROR(EIO) up this stream */
#define TMUX_HANGUP (('T' << 8) | 2) /* I_STR: M_HANGUP up this stream */

enum { TMUX_ACK, TMUX_NAK, TMUX_HOLD };
static atomic_int tmux_mode;        /* how link ioctls are answered */
static _Atomic(mblk_t *) tmux_held; /* an ioctl not answered (TMUX_HOLD) */

static int tmux_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    static atomic_uint minors;
    (void)oflag;
    (void)crp;
    if (sflag == CLONEOPEN)
        *devp = makedevice(getmajor(*devp), atomic_fetch_add(&minors, 1) + 1);
    qprocson(q);
    return 0;
}

static int tmux_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    return 0;
}

static int tmux_wput(queue_t *q, mblk_t *mp)
{
    struct iocblk *ioc = (struct iocblk *)(void *)mp->b_rptr;

    if (mp->b_datap->db_type != M_IOCTL) {
        freemsg(mp);
        return 0;
    }
    switch (ioc->ioc_cmd) {
    case I_LINK:
    case I_PLINK:
    case I_UNLINK:
    case I_PUNLINK:
        if (atomic_load(&tmux_mode) == TMUX_NAK) {
            miocnak(q, mp, 0, EPERM);
        } else if (atomic_load(&tmux_mode) == TMUX_HOLD) {
            freemsg(atomic_exchange(&tmux_held, mp));
        } else {
            miocack(q, mp, 0, 0);
        }
        break;
    case TMUX_ERROR:
    case TMUX_HANGUP: {
        int hup = ioc->ioc_cmd == TMUX_HANGUP;
        miocack(q, mp, 0, 0);
        if (hup)
            putnextctl(RD(q), M_HANGUP);
        else
            putnextctl1(RD(q), M_ERROR, EIO);
        break;
    }
    default:
        miocnak(q, mp, 0, EINVAL);
        break;
    }
    return 0;
}

static int tmux_free(queue_t *q, mblk_t *mp)
{
    (void)q;
    freemsg(mp);
    return 0;
}

static struct module_info tmux_minfo = {9001, "tmux", 0, INFPSZ, 4096, 1024};
static struct qinit tmux_rinit = {tmux_free, NULL, tmux_open, tmux_close, NULL, &tmux_minfo, NULL};
static struct qinit tmux_winit = {tmux_wput, NULL, NULL, NULL, NULL, &tmux_minfo, NULL};
static struct qinit tmux_lrinit = {tmux_free, NULL, NULL, NULL, NULL, &tmux_minfo, NULL};
static struct qinit tmux_lwinit = {tmux_free, NULL, NULL, NULL, NULL, &tmux_minfo, NULL};
static struct streamtab tmux_info = {&tmux_rinit, &tmux_winit, &tmux_lrinit, &tmux_lwinit};
static struct cdevsw tmux_cdev = {"tmux", &tmux_info, D_MP | D_CLONE, NULL};

/* "muxb": a second multiplexing driver with mux's procedures (for cycles
 * through two drivers). */
static struct cdevsw muxb_cdev = {"muxb", NULL, D_MP | D_CLONE, NULL};

/* ---- helpers ------------------------------------------------------------- */

static int op(const char *dev)
{
    char path[64];
    snprintf(path, sizeof(path), "/dev/streams/clone/%s", dev);
    return strm_open(path, O_RDWR);
}

/* The errno of a failed call, 0 if it succeeded. */
static int err_of(int r)
{
    return r < 0 ? errno : 0;
}

static int route(int fd, int muxid)
{
    struct strioctl si = {MUX_ROUTE, 0, sizeof(int), (char *)&muxid};
    return strm_ioctl(fd, I_STR, &si);
}

static int tmux_cmd(int fd, int cmd)
{
    struct strioctl si = {cmd, 0, 0, NULL};
    return strm_ioctl(fd, I_STR, &si);
}

static ssize_t wr(int fd, const char *s)
{
    return strm_write(fd, s, strlen(s));
}

/* Read within ms milliseconds: the byte count (0 at hang-up), -1 with errno,
 * or -2 if nothing came. */
static ssize_t rd(int fd, char *buf, size_t n, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (strm_poll(&p, 1, ms) <= 0)
        return -2;
    ssize_t r = strm_read(fd, buf, n);
    if (r >= 0 && (size_t)r < n)
        buf[r] = '\0';
    return r;
}

/* Does fd read back what it writes (an echo stream, usable)? */
static int echoes(int fd, const char *s)
{
    char buf[64];
    if (wr(fd, s) != (ssize_t)strlen(s))
        return 0;
    return rd(fd, buf, sizeof(buf), 2000) == (ssize_t)strlen(s) && strcmp(buf, s) == 0;
}

/* Does a message written on `from` arrive at `to`? */
static int passes(int from, int to, const char *s)
{
    char buf[64];
    if (wr(from, s) != (ssize_t)strlen(s))
        return 0;
    return rd(to, buf, sizeof(buf), 2000) == (ssize_t)strlen(s) && strcmp(buf, s) == 0;
}

static long echo_closes(void)
{
    struct ust_modent *e = ust_reg_find("echo", UST_DRIVER);
    long n = e ? atomic_load(&e->nclose) : -1;
    if (e)
        ust_reg_rele(e);
    return n;
}

/* Two connected loop minors. */
static void loop_pair(int *a, int *b)
{
    int mb;
    struct strioctl g = {LOOP_GET_DEV, 0, sizeof(int), (char *)&mb};
    *a = op("loop");
    *b = op("loop");
    CHECK(strm_ioctl(*b, I_STR, &g) >= 0);
    struct strioctl s = {LOOP_SET, 0, sizeof(int), (char *)&mb};
    CHECK_EQ(strm_ioctl(*a, I_STR, &s), 0);
}

/* ---- 1. I_LINK ------------------------------------------------------------ */

/* 1.1 streamio(7) I_LINK: returns a multiplexer id; the lower stream's
 * descriptor fails read, write, getmsg, putmsg and ioctls with EINVAL. */
static void t_link_basic(void)
{
    int u = op("mux"), e = op("echo"), e2 = op("echo");
    int id = strm_ioctl(u, I_LINK, e);
    CHECK(id > 0);
    int id2 = strm_ioctl(u, I_LINK, e2);
    CHECK(id2 > 0 && id2 != id);
    char buf[8];
    CHECK_EQ(err_of((int)strm_write(e, "x", 1)), EINVAL);
    CHECK_EQ(err_of((int)strm_read(e, buf, sizeof(buf))), EINVAL);
    struct strbuf d = {sizeof(buf), 1, buf};
    int flags = 0;
    CHECK_EQ(err_of(putmsg(e, NULL, &d, 0)), EINVAL);
    CHECK_EQ(err_of(getmsg(e, NULL, &d, &flags)), EINVAL);
    int n;
    CHECK_EQ(err_of(strm_ioctl(e, I_NREAD, &n)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(e, I_PUSH, "nullmod")), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(e, I_FLUSH, FLUSHRW)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(e, I_SRDOPT, RNORM)), EINVAL);
    CHECK_EQ(strm_ioctl(u, I_UNLINK, id), 0);
    CHECK_EQ(strm_ioctl(u, I_UNLINK, id2), 0);
    CHECK(echoes(e, "again"));
    CHECK(echoes(e2, "again2"));
    strm_close(u);
    strm_close(e);
    strm_close(e2);
}

/* 1.2 I_LINK EBADF / EINVAL: arg not open, not a stream; fildes not a
 * multiplexer (echo, a pipe); the same stream; already linked (through the
 * same or another controlling stream). */
static void t_link_errors(void)
{
    int u = op("mux"), u2 = op("mux"), e = op("echo"), e2 = op("echo"), p[2], sp[2];
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, 1000000)), EBADF);
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, -1)), EBADF);
    CHECK_EQ(pipe(sp), 0);
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, sp[0])), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(e, I_LINK, e2)), EINVAL);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(err_of(strm_ioctl(p[0], I_LINK, e2)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(p[0], I_PLINK, e2)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, u)), EINVAL);
    int id = strm_ioctl(u, I_LINK, e);
    CHECK(id > 0);
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, e)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u2, I_LINK, e)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u2, I_PLINK, e)), EINVAL);
    /* nothing was disturbed: e2 still echoes, e is still linked */
    CHECK(echoes(e2, "ok"));
    CHECK_EQ(err_of((int)strm_write(e, "x", 1)), EINVAL);
    CHECK_EQ(strm_ioctl(u, I_UNLINK, id), 0);
    close(sp[0]);
    close(sp[1]);
    strm_close(p[0]);
    strm_close(p[1]);
    strm_close(u);
    strm_close(u2);
    strm_close(e);
    strm_close(e2);
}

/* 1.3 I_LINK EINVAL "would cause a cycle": a stream of a multiplexer under
 * another stream of the same driver; mux -> muxb then muxb -> mux; and a
 * linked stream used as a controlling stream. */
static void t_link_cycle(void)
{
    int u1 = op("mux"), u2 = op("mux"), a = op("mux"), b = op("muxb"), a2 = op("mux"),
        b2 = op("muxb"), e = op("echo");
    CHECK_EQ(err_of(strm_ioctl(u1, I_LINK, u2)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u1, I_PLINK, u2)), EINVAL);
    int id = strm_ioctl(a, I_LINK, b); /* mux -> muxb */
    CHECK(id > 0);
    CHECK_EQ(err_of(strm_ioctl(b2, I_LINK, a2)), EINVAL); /* muxb -> mux: a cycle */
    CHECK_EQ(err_of(strm_ioctl(b, I_LINK, e)), EINVAL);   /* b is linked itself */
    CHECK_EQ(err_of(strm_ioctl(b, I_UNLINK, MUXID_ALL)), EINVAL);
    int ide = strm_ioctl(b2, I_LINK, e); /* muxb -> echo: no cycle */
    CHECK(ide > 0);
    CHECK_EQ(strm_ioctl(b2, I_UNLINK, ide), 0);
    CHECK_EQ(strm_ioctl(a, I_UNLINK, id), 0);
    id = strm_ioctl(b2, I_LINK, a2); /* now muxb -> mux is fine */
    CHECK(id > 0);
    CHECK_EQ(strm_ioctl(b2, I_UNLINK, id), 0);
    int fds[] = {u1, u2, a, b, a2, b2, e};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        CHECK_EQ(strm_close(fds[i]), 0);
}

/* 1.4 I_LINK ENXIO (hang-up on fildes or on arg), the M_ERROR error of
 * either stream, the driver's M_IOCNAK error and ETIME when it does not
 * answer: each fails and leaves the lower stream as it was. */
static void t_link_stream_errors(void)
{
    int u = op("mux"), t = op("tmux"), e = op("echo");
    CHECK_EQ(tmux_cmd(t, TMUX_HANGUP), 0);
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, t)), ENXIO);
    CHECK_EQ(err_of(strm_ioctl(t, I_LINK, e)), ENXIO);
    strm_close(t);
    t = op("tmux");
    CHECK_EQ(tmux_cmd(t, TMUX_ERROR), 0);
    CHECK_EQ(err_of(strm_ioctl(u, I_LINK, t)), EIO);
    CHECK_EQ(err_of(strm_ioctl(t, I_LINK, e)), EIO);
    strm_close(t);

    t = op("tmux");
    atomic_store(&tmux_mode, TMUX_NAK);
    CHECK_EQ(err_of(strm_ioctl(t, I_LINK, e)), EPERM);
    CHECK_EQ(err_of(strm_ioctl(t, I_PLINK, e)), EPERM);
    CHECK(echoes(e, "after nak"));
    atomic_store(&tmux_mode, TMUX_ACK);
    int id = strm_ioctl(t, I_LINK, e);
    CHECK(id > 0);
    atomic_store(&tmux_mode, TMUX_NAK);
    CHECK_EQ(err_of(strm_ioctl(t, I_UNLINK, id)), EPERM); /* refused: still linked */
    CHECK_EQ(err_of((int)strm_write(e, "x", 1)), EINVAL);
    atomic_store(&tmux_mode, TMUX_ACK);
    CHECK_EQ(strm_ioctl(t, I_UNLINK, id), 0);
    CHECK(echoes(e, "after unlink"));

    atomic_store(&tmux_mode, TMUX_HOLD); /* no answer: ETIME after UST_IOCTIME_S */
    CHECK_EQ(err_of(strm_ioctl(t, I_LINK, e)), ETIME);
    atomic_store(&tmux_mode, TMUX_ACK);
    freemsg(atomic_exchange(&tmux_held, NULL));
    CHECK(echoes(e, "after timeout"));

    /* A refused unlink at close is done all the same. */
    id = strm_ioctl(t, I_LINK, e);
    CHECK(id > 0);
    atomic_store(&tmux_mode, TMUX_NAK);
    CHECK_EQ(strm_close(t), 0);
    atomic_store(&tmux_mode, TMUX_ACK);
    CHECK(echoes(e, "after close"));
    strm_close(u);
    strm_close(e);
}

/* ---- 2. I_UNLINK ---------------------------------------------------------- */

/* 2.1 I_UNLINK EINVAL: an unknown id, 0, a negative id other than
 * MUXID_ALL, a link made through another stream, a persistent link; a
 * stream whose driver does not multiplex.  MUXID_ALL unlinks exactly the
 * ordinary links of this stream (none is not an error). */
static void t_unlink(void)
{
    int u = op("mux"), u2 = op("mux"), e1 = op("echo"), e2 = op("echo"), e3 = op("echo"),
        e4 = op("echo");
    CHECK_EQ(strm_ioctl(u, I_UNLINK, MUXID_ALL), 0);
    int a = strm_ioctl(u, I_LINK, e1), b = strm_ioctl(u, I_LINK, e2),
        c = strm_ioctl(u2, I_LINK, e3), p = strm_ioctl(u, I_PLINK, e4);
    CHECK(a > 0 && b > 0 && c > 0 && p > 0);
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, 0x7ffffff0)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, 0)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, -5)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, c)), EINVAL);  /* u2's link */
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, p)), EINVAL);  /* persistent */
    CHECK_EQ(err_of(strm_ioctl(e1, I_UNLINK, a)), EINVAL); /* e1 is the lower one */
    int x = op("echo");
    CHECK_EQ(err_of(strm_ioctl(x, I_UNLINK, a)), EINVAL); /* not a multiplexer */
    CHECK_EQ(err_of(strm_ioctl(x, I_PUNLINK, p)), EINVAL);
    strm_close(x);
    CHECK_EQ(strm_ioctl(u, I_UNLINK, MUXID_ALL), 0);
    CHECK(echoes(e1, "one"));
    CHECK(echoes(e2, "two"));
    CHECK_EQ(err_of((int)strm_write(e3, "x", 1)), EINVAL); /* u2's stays */
    CHECK_EQ(err_of((int)strm_write(e4, "x", 1)), EINVAL); /* persistent stays */
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, a)), EINVAL);  /* gone */
    CHECK_EQ(strm_ioctl(u2, I_UNLINK, c), 0);
    CHECK_EQ(strm_ioctl(u, I_PUNLINK, p), 0);
    CHECK(echoes(e3, "three"));
    CHECK(echoes(e4, "four"));
    int fds[] = {u, u2, e1, e2, e3, e4};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        CHECK_EQ(strm_close(fds[i]), 0);
}

/* 2.2 Ordinary links are unlinked when the controlling stream closes; a
 * linked stream whose descriptor was closed stays open (its driver's close
 * does not run) until the unlink drops the last reference. */
static void t_unlink_on_close(void)
{
    int u = op("mux"), e = op("echo");
    CHECK(strm_ioctl(u, I_LINK, e) > 0);
    CHECK_EQ(strm_close(u), 0);
    CHECK(echoes(e, "back"));

    u = op("mux");
    int e2 = op("echo");
    CHECK(strm_ioctl(u, I_LINK, e2) > 0);
    long before = echo_closes();
    CHECK_EQ(strm_close(e2), 0);
    CHECK_EQ(echo_closes(), before); /* the link holds it */
    CHECK_EQ(strm_close(u), 0);
    CHECK_EQ(echo_closes(), before + 1);
    strm_close(e);
}

/* ---- 3. I_PLINK / I_PUNLINK ---------------------------------------------- */

/* 3.1 A persistent link outlives its controlling stream; data flows through
 * it from a new upper stream; I_PUNLINK from yet another one unlinks it and,
 * the lower descriptor being closed, closes the lower driver. */
static void t_plink(void)
{
    int u = op("mux"), e = op("echo");
    int id = strm_ioctl(u, I_PLINK, e);
    CHECK(id > 0);
    CHECK_EQ(err_of(strm_ioctl(u, I_UNLINK, id)), EINVAL); /* wrong kind */
    CHECK_EQ(strm_close(u), 0);
    CHECK_EQ(err_of((int)strm_write(e, "x", 1)), EINVAL); /* still linked */
    int d = op("mux");
    CHECK_EQ(route(d, id), 0);
    CHECK(passes(d, d, "through echo"));
    long before = echo_closes();
    CHECK_EQ(strm_close(e), 0);
    CHECK_EQ(echo_closes(), before);
    CHECK(passes(d, d, "still there"));
    int c = op("mux");
    CHECK_EQ(err_of(strm_ioctl(c, I_PUNLINK, id + 1000)), EINVAL);
    CHECK_EQ(strm_ioctl(c, I_PUNLINK, id), 0);
    CHECK_EQ(echo_closes(), before + 1);
    char buf[8];
    CHECK_EQ(rd(d, buf, sizeof(buf), 2000), 0); /* d was routed to it: hung up */
    CHECK_EQ(err_of((int)wr(d, "x")), ENXIO);
    CHECK_EQ(err_of(strm_ioctl(c, I_PUNLINK, id)), EINVAL);

    /* MUXID_ALL: every persistent link of the driver, not ordinary ones;
     * I_PUNLINK of an ordinary link is the wrong kind. */
    int e1 = op("echo"), e2 = op("echo"), e3 = op("echo"), f = op("mux");
    CHECK(strm_ioctl(c, I_PLINK, e1) > 0);
    CHECK(strm_ioctl(f, I_PLINK, e2) > 0);
    int o = strm_ioctl(c, I_LINK, e3);
    CHECK(o > 0);
    CHECK_EQ(err_of(strm_ioctl(c, I_PUNLINK, o)), EINVAL);
    int t = op("tmux"), e4 = op("echo");
    int pt = strm_ioctl(t, I_PLINK, e4); /* another driver's */
    CHECK(pt > 0);
    CHECK_EQ(err_of(strm_ioctl(c, I_PUNLINK, pt)), EINVAL);
    CHECK_EQ(strm_ioctl(c, I_PUNLINK, MUXID_ALL), 0);
    CHECK(echoes(e1, "p1"));
    CHECK(echoes(e2, "p2"));
    CHECK_EQ(err_of((int)strm_write(e3, "x", 1)), EINVAL);
    CHECK_EQ(err_of((int)strm_write(e4, "x", 1)), EINVAL);
    CHECK_EQ(strm_ioctl(t, I_PUNLINK, MUXID_ALL), 0);
    CHECK(echoes(e4, "p4"));
    int fds[] = {c, d, f, e1, e2, e3, t, e4};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        CHECK_EQ(strm_close(fds[i]), 0);
    CHECK(echo_closes() >= before + 5);
}

/* ---- 4. the mux driver ---------------------------------------------------- */

/* 4.1 Both ways through loop and through a STREAMS pipe; M_PROTO too;
 * MUX_ROUTE errors. */
static void t_mux_data(void)
{
    int u = op("mux"), d = op("mux"), a, b, p[2];
    loop_pair(&a, &b);
    int ida = strm_ioctl(u, I_LINK, a);
    CHECK(ida > 0);
    CHECK_EQ(err_of(route(d, 0x7ffffff0)), EINVAL);
    struct strioctl bad = {MUX_ROUTE, 0, 0, NULL};
    CHECK_EQ(err_of(strm_ioctl(d, I_STR, &bad)), EINVAL);
    CHECK_EQ(err_of(strm_ioctl(d, 0x4d7f, 0)), EINVAL); /* transparent: unknown */
    CHECK_EQ(route(d, ida), 0);
    CHECK(passes(d, b, "down"));
    CHECK(passes(b, d, "up"));
    char cb[16], db[16];
    struct strbuf ctl = {0, 4, "ctl!"}, dat = {0, 4, "data"};
    CHECK_EQ(putmsg(d, &ctl, &dat, 0), 0);
    struct strbuf rc = {sizeof(cb), 0, cb}, rdat = {sizeof(db), 0, db};
    int flags = 0;
    struct pollfd pf = {b, POLLIN, 0};
    CHECK_EQ(strm_poll(&pf, 1, 2000), 1);
    CHECK_EQ(getmsg(b, &rc, &rdat, &flags), 0);
    CHECK(rc.len == 4 && memcmp(cb, "ctl!", 4) == 0 && rdat.len == 4);

    CHECK_EQ(strm_pipe(p), 0);
    int idp = strm_ioctl(u, I_LINK, p[0]);
    CHECK(idp > 0);
    CHECK_EQ(route(d, idp), 0); /* re-routed */
    CHECK(passes(d, p[1], "to pipe"));
    CHECK(passes(p[1], d, "from pipe"));
    CHECK_EQ(route(d, 0), 0); /* no route: writes wait */
    CHECK_EQ(wr(d, "held"), 4);
    char buf[16];
    CHECK_EQ(rd(p[1], buf, sizeof(buf), 100), -2);
    CHECK_EQ(route(d, idp), 0);
    CHECK_EQ(rd(p[1], buf, sizeof(buf), 2000), 4);
    CHECK_EQ(strm_ioctl(u, I_UNLINK, MUXID_ALL), 0);
    CHECK(passes(p[0], p[1], "pipe again"));
    CHECK(passes(a, b, "loop again"));
    int fds[] = {u, d, a, b, p[0], p[1]};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        CHECK_EQ(strm_close(fds[i]), 0);
}

/* 4.2 Fan-out: what comes up a lower stream reaches every upper stream
 * routed to it; closing one of them drops its route only. */
static void t_mux_fanout(void)
{
    int u = op("mux"), d1 = op("mux"), d2 = op("mux"), e = op("echo");
    int id = strm_ioctl(u, I_LINK, e);
    CHECK(id > 0);
    CHECK_EQ(route(d1, id), 0);
    CHECK_EQ(route(d2, id), 0);
    char buf[16];
    CHECK_EQ(wr(d1, "both"), 4);
    CHECK_EQ(rd(d1, buf, sizeof(buf), 2000), 4);
    CHECK_EQ(rd(d2, buf, sizeof(buf), 2000), 4);
    CHECK_EQ(strm_close(d2), 0);
    CHECK(passes(d1, d1, "one left"));
    CHECK_EQ(strm_close(u), 0); /* unlinks: d1 hangs up */
    CHECK_EQ(rd(d1, buf, sizeof(buf), 2000), 0);
    CHECK(echoes(e, "free"));
    strm_close(d1);
    strm_close(e);
}

/* 4.3 Flow control across the multiplexer: a non-blocking upper writer whose
 * lower stream nobody drains gets EAGAIN; when the far end reads, it can
 * write again; nothing is lost. */
static void t_mux_flow(void)
{
    int u = op("mux"), d = op("mux"), a, b;
    loop_pair(&a, &b);
    int id = strm_ioctl(u, I_LINK, a);
    CHECK(id > 0);
    CHECK_EQ(route(d, id), 0);
    CHECK_EQ(strm_fcntl(d, F_SETFL, O_NONBLOCK), 0);
    char msg[512];
    memset(msg, 'f', sizeof(msg));
    long sent = 0;
    int eagain = 0;
    for (int i = 0; i < 100000 && !eagain; i++) {
        ssize_t r = strm_write(d, msg, sizeof(msg));
        if (r == (ssize_t)sizeof(msg))
            sent++;
        else
            eagain = r < 0 && errno == EAGAIN;
    }
    CHECK(eagain);
    CHECK(sent > 0);
    long got = 0;
    char buf[1024];
    ssize_t r;
    while ((r = rd(b, buf, sizeof(buf), 500)) > 0)
        got += r;
    CHECK_EQ(got, sent * (long)sizeof(msg));
    CHECK_EQ(strm_write(d, msg, sizeof(msg)), (ssize_t)sizeof(msg));
    CHECK_EQ(rd(b, buf, sizeof(buf), 2000), (ssize_t)sizeof(msg));
    int fds[] = {u, d, a, b};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        CHECK_EQ(strm_close(fds[i]), 0);
}

/* 4.4 M_FLUSH: I_FLUSH on an upper stream discards what waits for a route;
 * M_HANGUP coming up a lower stream hangs up its routed upper streams, and
 * a route to it is then refused (ENXIO); the unlink still works. */
static void t_mux_flush_hangup(void)
{
    int u = op("mux"), d = op("mux"), a, b;
    loop_pair(&a, &b);
    int id = strm_ioctl(u, I_LINK, a);
    CHECK(id > 0);
    CHECK_EQ(wr(d, "flushed"), 7);
    CHECK_EQ(strm_ioctl(d, I_FLUSH, FLUSHRW), 0);
    CHECK_EQ(route(d, id), 0);
    char buf[16];
    CHECK_EQ(rd(b, buf, sizeof(buf), 200), -2);
    CHECK(passes(d, b, "kept"));
    CHECK_EQ(strm_close(b), 0); /* loop: M_HANGUP up a */
    CHECK_EQ(rd(d, buf, sizeof(buf), 2000), 0);
    CHECK_EQ(err_of((int)wr(d, "x")), ENXIO);
    int d2 = op("mux");
    CHECK_EQ(err_of(route(d2, id)), ENXIO);
    CHECK_EQ(strm_ioctl(u, I_UNLINK, id), 0);
    int fds[] = {u, d, d2, a};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        CHECK_EQ(strm_close(fds[i]), 0);
}

int main(void)
{
    CHECK(register_strdev(&tmux_cdev, 0) > 0);
    struct cdevsw *mux = cdev_lookup("mux");
    CHECK(mux != NULL);
    if (mux == NULL)
        return CHECK_RESULT();
    muxb_cdev.d_str = mux->d_str;
    CHECK(register_strdev(&muxb_cdev, 0) > 0);

    t_link_basic();
    t_link_errors();
    t_link_cycle();
    t_link_stream_errors();
    t_unlink();
    t_unlink_on_close();
    t_plink();
    t_mux_data();
    t_mux_fanout();
    t_mux_flow();
    t_mux_flush_hangup();

    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
