/* SPDX-License-Identifier: MIT */
/*
 * test_head_errtable.c -- the hang-up and M_ERROR table of docs/STREAMHEAD.md
 * ("Hang-up and M_ERROR", src/head/sd_state.c): one case per cell, and the
 * error precedence.
 *
 * References: streamio(7I) (each request's ENXIO "hangup received on
 * fildes" and the M_ERROR paragraphs), read(2)/write(2)/getmsg(2)/putmsg(2)
 * and poll(2) (the STREAMS paragraphs), the SVR4 STREAMS Programmer's Guide
 * (M_ERROR, M_HANGUP, ch. "Stream head"), Solaris strioctl/strgeterr.
 * Cases:
 *   E.1 every call x {hung up, read error, write error}: stopped with the
 *       state's error (ENXIO, EIO, EPROTO here), or not stopped by it
 *   E.2 RERRNONPERSIST / WERRNONPERSIST: the call that reports the error
 *       clears it, the next one is not stopped
 *   E.3 precedence: bad descriptor > bad arguments > state > would block;
 *       within the state, the error before the hang-up
 *   E.4 poll: POLLHUP at hang-up, POLLERR for either error
 *   E.5 nothing leaks
 */
#include "head_read_util.h"

#include <stropts.h>

enum { ST_HUP, ST_RERR, ST_WERR, NSTATES };
static const char *st_name[] = {"hung up", "read error", "write error"};
static const int st_errno[] = {ENXIO, EIO, EPROTO};

/* Expected outcome of a cell: X stopped with the state's error, O not. */
#define X 1
#define O 0

static int g_fd, g_fd2;

static int c_push(void)
{
    return strm_ioctl(g_fd, I_PUSH, "nullmod");
}
static int c_pop(void)
{
    return strm_ioctl(g_fd, I_POP, 0);
}
static int c_look(void)
{
    char n[FMNAMESZ + 1];
    return strm_ioctl(g_fd, I_LOOK, n);
}
static int c_find(void)
{
    return strm_ioctl(g_fd, I_FIND, "nullmod");
}
static int c_list(void)
{
    return strm_ioctl(g_fd, I_LIST, NULL);
}
static int c_anchor(void)
{
    return strm_ioctl(g_fd, I_ANCHOR, 0);
}
static int c_flush(void)
{
    return strm_ioctl(g_fd, I_FLUSH, FLUSHRW);
}
static int c_flushband(void)
{
    struct bandinfo bi = {.bi_pri = 1, .bi_flag = FLUSHRW};
    return strm_ioctl(g_fd, I_FLUSHBAND, &bi);
}
static int c_setsig(void)
{
    return strm_ioctl(g_fd, I_SETSIG, S_INPUT | S_ERROR | S_HANGUP);
}
static int c_getsig(void)
{
    int v;
    return strm_ioctl(g_fd, I_GETSIG, &v);
}
static int c_peek(void)
{
    char b[8];
    struct strpeek pk = {.databuf = {.maxlen = sizeof(b), .buf = b}, .ctlbuf = {.maxlen = -1}};
    return strm_ioctl(g_fd, I_PEEK, &pk);
}
static int c_nread(void)
{
    int v;
    return strm_ioctl(g_fd, I_NREAD, &v);
}
static int c_srdopt(void)
{
    return strm_ioctl(g_fd, I_SRDOPT, RNORM);
}
static int c_grdopt(void)
{
    int v;
    return strm_ioctl(g_fd, I_GRDOPT, &v);
}
static int c_swropt(void)
{
    return strm_ioctl(g_fd, I_SWROPT, 0);
}
static int c_gwropt(void)
{
    int v;
    return strm_ioctl(g_fd, I_GWROPT, &v);
}
static int c_serropt(void)
{
    return strm_ioctl(g_fd, I_SERROPT, RERRNORM | WERRNORM);
}
static int c_gerropt(void)
{
    int v;
    return strm_ioctl(g_fd, I_GERROPT, &v);
}
static int c_setcltime(void)
{
    int v = 100;
    return strm_ioctl(g_fd, I_SETCLTIME, &v);
}
static int c_getcltime(void)
{
    int v;
    return strm_ioctl(g_fd, I_GETCLTIME, &v);
}
static int c_atmark(void)
{
    return strm_ioctl(g_fd, I_ATMARK, ANYMARK);
}
static int c_ckband(void)
{
    return strm_ioctl(g_fd, I_CKBAND, 0);
}
static int c_getband(void)
{
    int v;
    return strm_ioctl(g_fd, I_GETBAND, &v);
}
static int c_canput(void)
{
    return strm_ioctl(g_fd, I_CANPUT, 0);
}
static int c_str(void)
{
    struct strioctl ic = {.ic_cmd = 1, .ic_timout = 2};
    return strm_ioctl(g_fd, I_STR, &ic);
}
static int c_transparent(void)
{
    int v = 0;
    return strm_ioctl(g_fd, ('T' << 8) | 99, &v);
}
static int c_fdinsert(void)
{
    char ctl[sizeof(queue_t *)];
    struct strfdinsert fi = {.ctlbuf = {.len = sizeof(ctl), .buf = ctl},
                             .databuf = {.len = -1},
                             .fildes = g_fd2};
    return strm_ioctl(g_fd, I_FDINSERT, &fi);
}
static int c_sendfd(void)
{
    return strm_ioctl(g_fd, I_SENDFD, g_fd2);
}
static int c_recvfd(void)
{
    struct strrecvfd rf;
    return strm_ioctl(g_fd, I_RECVFD, &rf);
}
static int c_link(void)
{
    return strm_ioctl(g_fd, I_LINK, g_fd2);
}
static int c_plink(void)
{
    return strm_ioctl(g_fd, I_PLINK, g_fd2);
}
static int c_unlink(void)
{
    return strm_ioctl(g_fd, I_UNLINK, MUXID_ALL);
}
static int c_punlink(void)
{
    return strm_ioctl(g_fd, I_PUNLINK, MUXID_ALL);
}
static int c_isastream(void)
{
    return strm_ioctl(g_fd, I_ISASTREAM, 0);
}
static int c_read(void)
{
    char b[8];
    return (int)strm_read(g_fd, b, sizeof(b));
}
static int c_write(void)
{
    return (int)strm_write(g_fd, "w", 1);
}
static int c_getmsg(void)
{
    char b[8];
    struct strbuf d = {.maxlen = sizeof(b), .buf = b};
    int fl = 0;
    return getmsg(g_fd, NULL, &d, &fl);
}
static int c_putmsg(void)
{
    struct strbuf d = {.len = 1, .buf = "p"};
    return putmsg(g_fd, NULL, &d, 0);
}
static int c_igetmsg(void)
{
    char b[8];
    struct strpmsg sp = {.databuf = {.maxlen = sizeof(b), .buf = b}, .ctlbuf = {.maxlen = -1}};
    return strm_ioctl(g_fd, I_GETMSG, &sp);
}
static int c_iputmsg(void)
{
    struct strpmsg sp = {.databuf = {.len = 1, .buf = "p"}, .ctlbuf = {.len = -1}};
    return strm_ioctl(g_fd, I_PUTMSG, &sp);
}

/* E.1: the table.  Columns: hung up, read error, write error. */
static const struct cell {
    const char *name;
    int (*call)(void);
    signed char stop[NSTATES];
} table[] = {
    /* streamio(7I): act below the head -- ENXIO "hangup received", M_ERROR */
    {"I_PUSH", c_push, {X, X, X}},
    {"I_POP", c_pop, {X, X, X}},
    {"I_FLUSH", c_flush, {X, X, X}},
    {"I_FLUSHBAND", c_flushband, {X, X, X}},
    {"I_STR", c_str, {X, X, X}},
    {"transparent", c_transparent, {X, X, X}},
    {"I_FDINSERT", c_fdinsert, {X, X, X}},
    {"I_SENDFD", c_sendfd, {X, X, X}},
    {"I_LINK", c_link, {X, X, X}},
    {"I_PLINK", c_plink, {X, X, X}},
    {"I_UNLINK", c_unlink, {X, X, X}},
    {"I_PUNLINK", c_punlink, {X, X, X}},
    /* read side (Solaris strioctl): the read error only */
    {"I_PEEK", c_peek, {O, X, O}},
    {"I_NREAD", c_nread, {O, X, O}},
    {"I_ATMARK", c_atmark, {O, X, O}},
    {"I_RECVFD", c_recvfd, {O, X, O}},
    /* queries of modules and queues: M_ERROR, not the hang-up */
    {"I_LOOK", c_look, {O, X, X}},
    {"I_FIND", c_find, {O, X, X}},
    {"I_LIST", c_list, {O, X, X}},
    {"I_ANCHOR", c_anchor, {O, X, X}},
    {"I_CKBAND", c_ckband, {O, X, X}},
    {"I_GETBAND", c_getband, {O, X, X}},
    {"I_CANPUT", c_canput, {X, X, X}}, /* asks about writing below: ENXIO once hung up */
    /* the head's options: every state */
    {"I_SETSIG", c_setsig, {O, O, O}},
    {"I_GETSIG", c_getsig, {O, O, O}},
    {"I_SRDOPT", c_srdopt, {O, O, O}},
    {"I_GRDOPT", c_grdopt, {O, O, O}},
    {"I_SWROPT", c_swropt, {X, O, O}}, /* write options: ENXIO once hung up (issue 21) */
    {"I_GWROPT", c_gwropt, {O, O, O}},
    {"I_SERROPT", c_serropt, {O, O, O}},
    {"I_GERROPT", c_gerropt, {O, O, O}},
    {"I_SETCLTIME", c_setcltime, {O, O, O}},
    {"I_GETCLTIME", c_getcltime, {O, O, O}},
    {"I_ISASTREAM", c_isastream, {O, O, O}},
    /* read(2), getmsg(2): the read error; at hang-up data then end of file */
    {"read", c_read, {O, X, O}},
    {"getmsg", c_getmsg, {O, X, O}},
    {"I_GETMSG", c_igetmsg, {O, X, O}},
    /* write(2), putmsg(2): the write error; ENXIO at hang-up */
    {"write", c_write, {X, O, X}},
    {"putmsg", c_putmsg, {X, O, X}},
    {"I_PUTMSG", c_iputmsg, {X, O, X}},
};

/* A fresh stream with a module, a signal registration and a message queued,
 * then put in state st (-1: none). */
static void setup(int st)
{
    g_fd = strm_open("/dev/streams/hdrv", O_RDWR | O_NONBLOCK);
    CHECK(g_fd >= 0);
    CHECK_EQ(strm_ioctl(g_fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(g_fd, I_SETSIG, S_INPUT), 0);
    hdrv_up_str(0, "x");
    static const unsigned char rerr[2] = {EIO, 0}, werr[2] = {0, EPROTO};
    if (st == ST_HUP)
        hdrv_up(hmsg(M_HANGUP, 0, ""));
    else if (st == ST_RERR)
        hdrv_up_bytes(M_ERROR, rerr, 2);
    else if (st == ST_WERR)
        hdrv_up_bytes(M_ERROR, werr, 2);
}

static void teardown(void)
{
    CHECK_EQ(strm_close(g_fd), 0);
    hdrv_down_clear();
}

static void test_table(void)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        for (int st = 0; st < NSTATES; st++) {
            setup(st);
            errno = 0;
            int r = table[i].call();
            int e = r < 0 ? errno : 0;
            int stopped = r < 0 && e == st_errno[st];
            if (!CHECK_EQ(stopped, table[i].stop[st]))
                fprintf(stderr, "  E.1 %s, %s: returned %d errno %d\n", table[i].name,
                        st_name[st], r, e);
            teardown();
        }
}

/* E.2 non-persistent errors: every cell a read or write error stops, with
 * RERRNONPERSIST|WERRNONPERSIST: the call reports the error once, and the
 * same call right after is not stopped by it. */
static void test_nonpersist(void)
{
    static const unsigned char rerr[2] = {EIO, 0}, werr[2] = {0, EPROTO};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        for (int st = ST_RERR; st <= ST_WERR; st++) {
            if (!table[i].stop[st])
                continue;
            setup(-1);
            CHECK_EQ(strm_ioctl(g_fd, I_SERROPT, RERRNONPERSIST | WERRNONPERSIST), 0);
            hdrv_up_bytes(M_ERROR, st == ST_RERR ? rerr : werr, 2);
            errno = 0;
            CHECK_EQ(table[i].call(), -1);
            CHECK_EQ(errno, st_errno[st]);
            errno = 0;
            int r = table[i].call();
            if (!CHECK(r >= 0 || errno != st_errno[st]))
                fprintf(stderr, "  E.2 %s, %s: error reported twice\n", table[i].name,
                        st_name[st]);
            teardown();
        }
}

/* E.3 precedence */
static void test_precedence(void)
{
    char b[8];
    int fl = 0;
    struct strbuf d = {.maxlen = sizeof(b), .buf = b};

    /* bad descriptor first: an O_WRONLY descriptor of an errored stream */
    setup(-1);
    /* opened before the error: a reopen of an errored stream is EIO */
    int wo = strm_open("/dev/streams/hdrv", O_WRONLY);
    CHECK(wo >= 0);
    static const unsigned char rerr[2] = {EIO, 0};
    hdrv_up_bytes(M_ERROR, rerr, 2);
    errno = 0;
    CHECK_EQ(strm_read(wo, b, sizeof(b)), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_close(wo), 0);
    /* bad arguments before the state */
    errno = 0;
    CHECK_EQ(strm_ioctl(g_fd, I_FLUSH, 0x40), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(g_fd, I_PUSH, (char *)8), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(strm_ioctl(g_fd, I_CKBAND, 300), -1);
    CHECK_EQ(errno, EINVAL);
    fl = 5;
    errno = 0;
    CHECK_EQ(getmsg(g_fd, NULL, &d, &fl), -1);
    CHECK_EQ(errno, EINVAL);
    /* the state before would-block: nothing queued (M_ERROR flushed), O_NONBLOCK */
    errno = 0;
    CHECK_EQ(strm_read(g_fd, b, sizeof(b)), -1);
    CHECK_EQ(errno, EIO);
    teardown();

    /* the error before the hang-up */
    setup(ST_WERR);
    hdrv_up(hmsg(M_HANGUP, 0, ""));
    errno = 0;
    CHECK_EQ(c_str(), -1);
    CHECK_EQ(errno, EPROTO);
    errno = 0;
    CHECK_EQ(c_write(), -1);
    CHECK_EQ(errno, EPROTO);
    teardown();

    /* hang-up: queued data first, then end of file, never EAGAIN */
    setup(ST_HUP);
    CHECK_EQ(strm_read(g_fd, b, sizeof(b)), 1);
    CHECK_EQ(strm_read(g_fd, b, sizeof(b)), 0);
    teardown();
}

/* E.4 poll */
static void test_poll(void)
{
    static const short want[] = {POLLHUP, POLLERR, POLLERR};
    for (int st = 0; st < NSTATES; st++) {
        setup(st);
        struct pollfd p = {.fd = g_fd, .events = POLLIN | POLLOUT};
        CHECK_EQ(strm_poll(&p, 1, 0), 1);
        CHECK(p.revents & want[st]);
        if (st == ST_HUP)
            CHECK(!(p.revents & POLLOUT));
        teardown();
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGPOLL, SIG_IGN);
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    g_fd2 = strm_open("/dev/streams/clone/echo", O_RDWR); /* the other stream of some calls */
    CHECK(g_fd2 >= 0);
    test_table();
    test_nonpersist();
    CHECK_EQ(strm_close(g_fd2), 0);
    test_precedence();
    test_poll();
    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0); /* E.5 */
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
