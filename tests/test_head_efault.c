/* SPDX-License-Identifier: MIT */
/*
 * test_head_efault.c -- bad pointers given to the stream head fail with
 * EFAULT, as the system calls do, instead of killing the process; a call
 * that faults sends nothing and consumes nothing (src/head/sd_ucopy.c and
 * its callers).  And the library's fault handler lives with the
 * application's own SIGSEGV handlers.
 *
 * References: read(2), readv(2), write(2), writev(2), getmsg(2), getpmsg(2),
 * putmsg(2), putpmsg(2), poll(2), pipe(2), open(2), fattach(3C), streamio(7)
 * (every request: "EFAULT  arg points outside the allocated address space"),
 * sigaction(2).  Cases:
 *   F.1 bad addresses: NULL, an unmapped page, a PROT_NONE page, a read-only
 *       page (for outputs), a buffer running from a mapped page into a
 *       PROT_NONE one
 *   F.2 write/writev/putmsg/putpmsg: EFAULT for the buffers, the iovec array,
 *       the strbufs; nothing reaches the other end
 *   F.3 read/readv/getmsg/getpmsg: EFAULT for the buffers, the iovec array,
 *       the strbufs, flags and band (also read-only ones); the message is
 *       still at the front, whole
 *   F.4 ioctl: I_STR (strioctl, ic_dp), transparent M_COPYIN/M_COPYOUT,
 *       I_PUSH/I_FIND/I_LOOK names, I_PEEK, I_FDINSERT, I_LIST, I_GETSIG,
 *       I_GRDOPT, I_NREAD, I_GETBAND, I_RECVFD (the file is not lost),
 *       I_GETMSG/I_PUTMSG, I_SETCLTIME, I_FLUSHBAND
 *   F.5 strm_poll, strm_pipe, strm_open, fattach, fdetach
 *   F.6 signal handlers (in forked children): one installed before the
 *       library, one installed after it (chained by an open 1 ms or more
 *       later), opens look at most once per ms (counted), none (the
 *       process still dies of its own bad pointer)
 *   F.7 nothing leaks
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <ustreams.h>

#include "sd_ucopy.h" /* ust_ucopy_nchecks */

#include "check.h"
#include "harness.h"
#include "head_cdrv.h"

#define DEV "/dev/streams/cdrv"

static size_t pg;
static char *p_none;  /* a PROT_NONE page */
static char *p_ro;    /* a read-only page, filled with 'r' */
static char *p_edge;  /* 8 writable bytes, then a PROT_NONE page */
static char *p_unmap; /* an address just unmapped */

#define CHECK_ERR(call, e)          \
    do {                            \
        errno = 0;                  \
        CHECK_EQ((long)(call), -1); \
        CHECK_EQ(errno, (e));       \
    } while (0)

static void pages_init(void)
{
    pg = (size_t)sysconf(_SC_PAGESIZE);
    p_none = mmap(NULL, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p_ro = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *two = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p_none != MAP_FAILED && p_ro != MAP_FAILED && two != MAP_FAILED);
    memset(p_ro, 'r', pg);
    CHECK_EQ(mprotect(p_ro, pg, PROT_READ), 0);
    CHECK_EQ(mprotect(two + pg, pg, PROT_NONE), 0);
    p_edge = two + pg - 8;
}

/* An address that was mapped a moment ago, far from where the kernel puts
 * new mappings (which work down from below the stack), so that no later
 * mmap of the library, the allocator or a sanitizer reuses it.  Candidates
 * are taken only if nothing is mapped there (MAP_FIXED_NOREPLACE): the
 * sanitizers reserve ranges of their own.  The first is TSan's low
 * application range (ASan's shadow gap: taken, so skipped); the second was
 * TSan's meta shadow, readable there. */
static char *unmapped(void)
{
    static const uintptr_t cand[] = {0x006f00000000ULL, 0x3f0000000000ULL};
    for (size_t i = 0; p_unmap == NULL && i < sizeof(cand) / sizeof(cand[0]); i++) {
        void *m = mmap((void *)cand[i], pg, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (m == MAP_FAILED)
            continue;
        munmap(m, pg);
        if (m == (void *)cand[i])
            p_unmap = m;
    }
    CHECK(p_unmap != NULL);
    return p_unmap;
}

/* The bad input addresses of F.1 (NULL, unmapped, PROT_NONE, crossing). */
static char *bad_in(int i)
{
    switch (i) {
    case 0:
        return NULL;
    case 1:
        return unmapped();
    case 2:
        return p_none;
    default:
        memset(p_edge + 6, 'x', 2); /* 2 good bytes, no NUL */
        return p_edge + 6;
    }
}
#define NBAD_IN 4

/* Messages waiting at fd (I_NREAD), and their first's data bytes. */
static int nread(int fd, int *bytes)
{
    int b = 0;
    int n = strm_ioctl(fd, I_NREAD, &b);
    if (bytes)
        *bytes = b;
    return n;
}

/* Read the message at fd whole with good buffers and check it is ctl/data. */
static void expect_msg(int fd, const char *ctl, const char *data)
{
    char cb[64], db[64];
    struct strbuf c = {.maxlen = sizeof(cb), .buf = cb}, d = {.maxlen = sizeof(db), .buf = db};
    int flags = 0;
    CHECK_EQ(getmsg(fd, &c, &d, &flags), 0);
    CHECK_EQ(c.len, ctl ? (int)strlen(ctl) : -1);
    CHECK_EQ(d.len, (int)strlen(data));
    CHECK(ctl == NULL || memcmp(cb, ctl, strlen(ctl)) == 0);
    CHECK(memcmp(db, data, strlen(data)) == 0);
}

static void send_msg(int fd, const char *ctl, const char *data)
{
    struct strbuf c = {.len = ctl ? (int)strlen(ctl) : -1, .buf = (char *)ctl};
    struct strbuf d = {.len = (int)strlen(data), .buf = (char *)data};
    CHECK_EQ(putmsg(fd, ctl ? &c : NULL, &d, 0), 0);
}

/* ------------------------------------------------------------------------ */
/* F.2 the write side                                                       */
/* ------------------------------------------------------------------------ */
static void test_write(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    for (int i = 0; i < NBAD_IN; i++) {
        char *b = bad_in(i);
        CHECK_ERR(strm_write(p[0], b, 64), EFAULT);
        struct iovec iv[2] = {{"ok", 2}, {b, 64}};
        CHECK_ERR(strm_writev(p[0], iv, 2), EFAULT);
        struct strbuf c = {.len = 64, .buf = b}, d = {.len = 2, .buf = "ok"};
        CHECK_ERR(putmsg(p[0], &c, &d, 0), EFAULT);
        CHECK_ERR(putmsg(p[0], &d, &c, 0), EFAULT);
        CHECK_ERR(putpmsg(p[0], &c, &d, 1, MSG_BAND), EFAULT);
        CHECK_ERR(putpmsg(p[0], &d, &c, 0, MSG_HIPRI), EFAULT);
        if (i > 0) { /* the strbuf or the iovec array itself */
            CHECK_ERR(putmsg(p[0], (struct strbuf *)b, &d, 0), EFAULT);
            CHECK_ERR(putmsg(p[0], &d, (struct strbuf *)b, 0), EFAULT);
            CHECK_ERR(strm_writev(p[0], (struct iovec *)b, 2), EFAULT);
        }
        CHECK_EQ(nread(p[1], NULL), 0); /* nothing went */
    }
    /* with SNDHOLD the small write is held: nothing is held from a bad one */
    CHECK_EQ(strm_ioctl(p[0], I_SWROPT, SNDHOLD), 0);
    CHECK_ERR(strm_write(p[0], p_edge, 16), EFAULT);
    CHECK_EQ(strm_write(p[0], "ab", 2), 2);
    CHECK_ERR(strm_write(p[0], p_edge, 16), EFAULT);
    CHECK_EQ(strm_ioctl(p[0], I_SWROPT, 0), 0); /* sends the hold */
    char buf[64];
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 2);
    CHECK(memcmp(buf, "ab", 2) == 0);
    CHECK_EQ(nread(p[1], NULL), 0);
    /* good buffers still work; the edge's 8 good bytes are fine */
    memcpy(p_edge, "12345678", 8);
    CHECK_EQ(strm_write(p[0], p_edge, 8), 8);
    CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 8);
    CHECK(memcmp(buf, "12345678", 8) == 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* ------------------------------------------------------------------------ */
/* F.3 the read side                                                        */
/* ------------------------------------------------------------------------ */
static void test_read(void)
{
    int p[2], flags, band, b;
    char first_rest_buf[8];
    CHECK_EQ(strm_pipe(p), 0);
    send_msg(p[0], "ctl", "a message longer than eight bytes");
    /* the outputs: every bad input address, and a read-only page */
    for (int i = 0; i <= NBAD_IN; i++) {
        char *o = i < NBAD_IN ? bad_in(i) : p_ro;
        if (i != 3) { /* (read takes the control part's 2 first bytes: see below) */
            CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RNORM | RPROTDAT), 0);
            CHECK_ERR(strm_read(p[1], o, 64), EFAULT);
            struct iovec iv[1] = {{o, 64}};
            CHECK_ERR(strm_readv(p[1], iv, 1), EFAULT);
            CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RNORM), 0);
        }
        char good[64];
        struct strbuf c = {.maxlen = 64, .buf = o}, d = {.maxlen = 64, .buf = good};
        flags = 0;
        CHECK_ERR(getmsg(p[1], &c, &d, &flags), EFAULT);
        CHECK_ERR(getmsg(p[1], &d, &c, &flags), EFAULT);
        flags = MSG_ANY;
        band = 0;
        CHECK_ERR(getpmsg(p[1], &c, &d, &band, &flags), EFAULT);
        if (i > 0) { /* the strbufs, flags, band, the iovec array */
            d.maxlen = 64;
            struct strbuf c2 = {.maxlen = 64, .buf = good + 32};
            flags = 0;
            CHECK_ERR(getmsg(p[1], (struct strbuf *)o, &d, &flags), EFAULT);
            CHECK_ERR(getmsg(p[1], &c2, (struct strbuf *)o, &flags), EFAULT);
            CHECK_ERR(getmsg(p[1], &c2, &d, (int *)o), EFAULT);
            flags = MSG_ANY;
            CHECK_ERR(getpmsg(p[1], &c2, &d, (int *)o, &flags), EFAULT);
            CHECK_ERR(getpmsg(p[1], &c2, &d, &band, (int *)o), EFAULT);
            CHECK_ERR(strm_readv(p[1], (struct iovec *)o, 1), EFAULT);
        }
        CHECK_EQ(nread(p[1], &b), 1); /* nothing consumed, nothing cut */
        CHECK_EQ(b, 33);
    }
    expect_msg(p[1], "ctl", "a message longer than eight bytes");
    CHECK_EQ(nread(p[1], NULL), 0);
    /* read into a buffer that runs into a PROT_NONE page: the block does not
     * fit the good part, nothing is taken */
    CHECK_EQ(strm_write(p[0], "0123456789", 10), 10);
    CHECK_ERR(strm_read(p[1], p_edge, 10), EFAULT);
    struct iovec ev[1] = {{p_edge, 10}};
    CHECK_ERR(strm_readv(p[1], ev, 1), EFAULT);
    CHECK_EQ(nread(p[1], &b), 1);
    CHECK_EQ(b, 10);
    /* a read that copied something returns it (read(2)); the rest stays */
    CHECK_EQ(strm_read(p[1], p_edge, 8), 8);
    CHECK(memcmp(p_edge, "01234567", 8) == 0);
    CHECK_EQ(strm_read(p[1], first_rest_buf, 8), 2);
    CHECK(memcmp(first_rest_buf, "89", 2) == 0);
    /* a readv whose second buffer is bad after the first took some: the
     * bytes read are returned, the rest stays */
    CHECK_EQ(strm_write(p[0], "0123456789", 10), 10);
    char first[4];
    struct iovec iv[2] = {{first, 4}, {p_none, 6}};
    CHECK_EQ(strm_readv(p[1], iv, 2), 4);
    CHECK(memcmp(first, "0123", 4) == 0);
    char rest[16];
    CHECK_EQ(strm_read(p[1], rest, sizeof(rest)), 6);
    CHECK(memcmp(rest, "456789", 6) == 0);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* ------------------------------------------------------------------------ */
/* F.4 ioctl                                                                */
/* ------------------------------------------------------------------------ */
static void test_ioctl_pipe(void)
{
    int p[2], q[2];
    CHECK_EQ(strm_pipe(p), 0);
    for (int i = 0; i < NBAD_IN; i++) {
        char *b = bad_in(i);
        CHECK_ERR(strm_ioctl(p[0], I_PUSH, b), EFAULT);
        CHECK_ERR(strm_ioctl(p[0], I_FIND, b), EFAULT);
        CHECK_ERR(strm_ioctl(p[0], I_STR, b), EFAULT);
        CHECK_ERR(strm_ioctl(p[0], I_FDINSERT, b), EFAULT);
        CHECK_ERR(strm_ioctl(p[0], I_PUTMSG, b), EFAULT);
        CHECK_ERR(strm_ioctl(p[0], I_SETCLTIME, b), EFAULT);
        CHECK_ERR(strm_ioctl(p[0], I_FLUSHBAND, b), EFAULT);
        struct strioctl si = {.ic_cmd = 1, .ic_len = 16, .ic_dp = b};
        CHECK_ERR(strm_ioctl(p[0], I_STR, &si), EFAULT);
        struct strfdinsert fi = {.ctlbuf = {.len = sizeof(void *), .buf = b}, .fildes = p[1]};
        CHECK_ERR(strm_ioctl(p[0], I_FDINSERT, &fi), EFAULT);
        struct strpmsg sp = {.ctlbuf = {.len = 16, .buf = b}, .databuf = {.len = -1}};
        CHECK_ERR(strm_ioctl(p[0], I_PUTMSG, &sp), EFAULT);
        CHECK_EQ(nread(p[1], NULL), 0);
    }
    /* a name running into a PROT_NONE page, without its NUL */
    memcpy(p_edge, "nullmodx", 8);
    CHECK_ERR(strm_ioctl(p[0], I_PUSH, p_edge), EFAULT);
    memcpy(p_edge, "nullmod", 8); /* with its NUL, the last good byte: fine */
    CHECK_EQ(strm_ioctl(p[0], I_PUSH, p_edge), 0);
    CHECK_EQ(strm_ioctl(p[0], I_FIND, p_edge), 1);

    /* outputs: unmapped, PROT_NONE, read-only, crossing */
    char *outs[] = {NULL, NULL, p_none, p_ro, p_edge + 6};
    CHECK_EQ(strm_ioctl(p[1], I_SETSIG, S_INPUT), 0);
    send_msg(p[0], "c", "data");
    for (int i = 0; i < 5; i++) {
        char *o = i == 1 ? unmapped() : outs[i];
        CHECK_ERR(strm_ioctl(p[0], I_LOOK, o), EFAULT);
        CHECK_ERR(strm_ioctl(p[1], I_GETSIG, o), EFAULT);
        CHECK_ERR(strm_ioctl(p[1], I_GRDOPT, o), EFAULT);
        CHECK_ERR(strm_ioctl(p[1], I_GETCLTIME, o), EFAULT);
        CHECK_ERR(strm_ioctl(p[1], I_GETBAND, o), EFAULT);
        CHECK_ERR(strm_ioctl(p[1], I_NREAD, o), EFAULT);
        if (o != p_ro) { /* (read-only: below, with valid contents) */
            CHECK_ERR(strm_ioctl(p[1], I_PEEK, o), EFAULT);
            CHECK_ERR(strm_ioctl(p[1], I_GETMSG, o), EFAULT);
            CHECK_ERR(strm_ioctl(p[1], I_GETPMSG, o), EFAULT);
        }
        if (o != NULL) /* (I_LIST NULL: the count) */
            CHECK_ERR(strm_ioctl(p[1], I_LIST, o), EFAULT);
        if (i > 1) {
            char good[8];
            struct strpeek pk = {.ctlbuf = {.maxlen = 8, .buf = good},
                                 .databuf = {.maxlen = 8, .buf = o}};
            CHECK_ERR(strm_ioctl(p[1], I_PEEK, &pk), EFAULT);
            struct strpmsg sp = {.ctlbuf = {.maxlen = 8, .buf = good},
                                 .databuf = {.maxlen = 8, .buf = o}};
            CHECK_ERR(strm_ioctl(p[1], I_GETMSG, &sp), EFAULT);
            struct str_mlist ml[2];
            struct str_list sl = {.sl_nmods = 2, .sl_modlist = (struct str_mlist *)o};
            CHECK_ERR(strm_ioctl(p[0], I_LIST, &sl), EFAULT);
            sl.sl_modlist = ml;
            CHECK_EQ(strm_ioctl(p[0], I_LIST, &sl), 0);
            CHECK_EQ(sl.sl_nmods, 1);
        }
        CHECK_EQ(nread(p[1], NULL), 1);
    }
    /* I_GETMSG/I_GETPMSG with a valid strpmsg on a read-only page: the
     * answer could not be written back, so nothing is taken */
    static char gc[8], gd[8];
    struct strpmsg *ro = (struct strpmsg *)(p_ro + 64);
    CHECK_EQ(mprotect(p_ro, pg, PROT_READ | PROT_WRITE), 0);
    *ro = (struct strpmsg){.ctlbuf = {.maxlen = 8, .buf = gc},
                           .databuf = {.maxlen = 8, .buf = gd}};
    struct strpeek *rpk = (struct strpeek *)(p_ro + 256);
    *rpk = (struct strpeek){.ctlbuf = {.maxlen = 8, .buf = gc},
                            .databuf = {.maxlen = 8, .buf = gd}};
    CHECK_EQ(mprotect(p_ro, pg, PROT_READ), 0);
    CHECK_ERR(strm_ioctl(p[1], I_GETMSG, ro), EFAULT);
    CHECK_ERR(strm_ioctl(p[1], I_GETPMSG, ro), EFAULT);
    CHECK_ERR(strm_ioctl(p[1], I_PEEK, rpk), EFAULT);
    CHECK_EQ(nread(p[1], NULL), 1);
    expect_msg(p[1], "c", "data");

    /* I_RECVFD: the file stays for a good buffer */
    CHECK_EQ(strm_pipe(q), 0);
    CHECK_EQ(strm_ioctl(p[0], I_SENDFD, q[0]), 0);
    CHECK_ERR(strm_ioctl(p[1], I_RECVFD, p_ro), EFAULT);
    CHECK_ERR(strm_ioctl(p[1], I_RECVFD, p_edge), EFAULT);
    CHECK_ERR(strm_ioctl(p[1], I_RECVFD, unmapped()), EFAULT);
    struct strrecvfd rf;
    CHECK_EQ(strm_ioctl(p[1], I_RECVFD, &rf), 0);
    CHECK_EQ(strm_write(rf.fd, "x", 1), 1); /* the same pipe as q[0] */
    char c;
    CHECK_EQ(strm_read(q[1], &c, 1), 1);
    strm_close(rf.fd);
    strm_close(q[0]);
    strm_close(q[1]);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* I_STR and transparent ioctls against cdrv (head_cdrv.h). */
static void test_ioctl_drv(void)
{
    int fd = strm_open(DEV, O_RDWR);
    CHECK(fd >= 0);
    /* I_STR reply to a read-only or crossing buffer */
    char req[8] = "abcd";
    struct strioctl si = {.ic_cmd = CDRV_ACK, .ic_len = 4, .ic_dp = req};
    CHECK_EQ(strm_ioctl(fd, I_STR, &si), 7);
    CHECK_EQ(si.ic_len, 6);
    CHECK(memcmp(req, "dcbaXY", 6) == 0);
    memcpy(p_edge + 4, "abcd", 4);
    si.ic_dp = p_edge + 4; /* 4 bytes in, the 6-byte reply crosses */
    si.ic_len = 4;
    CHECK_ERR(strm_ioctl(fd, I_STR, &si), EFAULT);
    CHECK_ERR(strm_ioctl(fd, I_STR, (struct strioctl *)p_none), EFAULT);
    /* transparent: M_COPYIN from bad addresses, M_COPYOUT to a read-only one */
    CHECK_ERR(strm_ioctl(fd, CDRV_TRANS, p_none), EFAULT);
    CHECK_ERR(strm_ioctl(fd, CDRV_TRANS, unmapped()), EFAULT);
    int *ro_x = (int *)(p_ro + 512); /* x readable, 2x not writable */
    CHECK_EQ(mprotect(p_ro, pg, PROT_READ | PROT_WRITE), 0);
    *ro_x = 1;
    CHECK_EQ(mprotect(p_ro, pg, PROT_READ), 0);
    CHECK_ERR(strm_ioctl(fd, CDRV_TRANS, ro_x), EFAULT);
    memcpy(p_edge + 4, &(int){1}, sizeof(int)); /* x in the good bytes, 2x beyond */
    CHECK_ERR(strm_ioctl(fd, CDRV_TRANS, p_edge + 4), EFAULT);
    int pair[2] = {21, 0};
    CHECK_EQ(strm_ioctl(fd, CDRV_TRANS, pair), 5);
    CHECK_EQ(pair[1], 42);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* F.5 poll, pipe, open, fattach                                            */
/* ------------------------------------------------------------------------ */
static int nfds_open(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

static void test_misc(void)
{
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    for (int i = 0; i < NBAD_IN; i++)
        CHECK_ERR(strm_poll((struct pollfd *)bad_in(i), 2, 0), EFAULT);
    CHECK_ERR(strm_poll((struct pollfd *)p_ro, 1, 0), EFAULT); /* revents not writable */
    struct pollfd pf = {.fd = p[1], .events = POLLIN};
    CHECK_EQ(strm_poll(&pf, 1, 0), 0);
    CHECK_EQ(strm_poll(NULL, 0, 0), 0);

    int before = nfds_open();
    for (int i = 0; i < NBAD_IN; i++)
        CHECK_ERR(strm_pipe((int *)bad_in(i)), EFAULT);
    CHECK_ERR(strm_pipe((int *)p_ro), EFAULT);
    CHECK_EQ(nfds_open(), before); /* nothing was created */

    for (int i = 0; i < NBAD_IN; i++) {
        char *b = bad_in(i);
        CHECK_ERR(strm_open(b, O_RDWR), EFAULT);
        CHECK_ERR(fattach(p[0], b), EFAULT);
        CHECK_ERR(fdetach(b), EFAULT);
    }
    /* a name ending right before the PROT_NONE page is fine (fattach covers
     * an existing file: a relative name in a directory of our own) */
    char here[PATH_MAX], tmpd[] = "/tmp/ust_efXXXXXX";
    CHECK(getcwd(here, sizeof(here)) != NULL && mkdtemp(tmpd) != NULL && chdir(tmpd) == 0);
    int ef = open("efault", O_CREAT | O_WRONLY, 0600);
    CHECK(ef >= 0);
    close(ef);
    memcpy(p_edge, "efault", 7);
    CHECK_EQ(fattach(p[0], p_edge + 0), 0);
    int fd = strm_open(p_edge, O_RDWR);
    CHECK(fd >= 0);
    strm_close(fd);
    CHECK_EQ(fdetach(p_edge), 0);
    unlink("efault");
    CHECK(chdir(here) == 0 && rmdir(tmpd) == 0);
    CHECK_EQ(nfds_open(), before + 1); /* the rendezvous' epoll set stays (sd_rdv.c) */
    strm_close(p[0]);
    strm_close(p[1]);
}

/* ------------------------------------------------------------------------ */
/* F.6 the application's SIGSEGV handlers                                   */
/* ------------------------------------------------------------------------ */
/* Set by the child once the library calls with bad pointers have all
 * failed EFAULT; the application's handler exits 42 if it was set (its own
 * fault) and 43 if not (a library fault reached it). */
static volatile sig_atomic_t lib_done;

static void app_handler(int sig)
{
    (void)sig;
    _exit(lib_done ? 42 : 43);
}

static void app_action(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    _exit(sig == SIGSEGV && si->si_addr == (void *)p_none && lib_done ? 42 : 43);
}

/* In the child: library calls with bad pointers must fail EFAULT (exit 3
 * if not), then the child's own bad access. */
static void child_faults(void)
{
    int p[2];
    if (strm_pipe(p) != 0)
        _exit(2);
    errno = 0;
    if (strm_write(p[0], p_none, 8) != -1 || errno != EFAULT)
        _exit(3);
    if (strm_write(p[0], "x", 1) != 1 || strm_read(p[1], p_none, 8) != -1 || errno != EFAULT)
        _exit(3);
    if (strm_ioctl(p[1], I_PUSH, bad_in(3)) != -1 || errno != EFAULT)
        _exit(3);
    lib_done = 1;
    *(volatile char *)p_none = 1; /* the application's own fault */
}

/* Run the child case `name` in a new process image (fork + exec of this
 * test), so that nothing of the library is set up before the case begins:
 * main dispatches on argv[1].  Returns the wait status. */
static int run_child(const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_head_efault", name, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    return st;
}

static void set_handler(int siginfo, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    if (siginfo)
        sa.sa_sigaction = app_action;
    else
        sa.sa_handler = app_handler;
    sa.sa_flags = flags | (siginfo ? SA_SIGINFO : 0);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
}

/* The library's handler is installed by the first copy or stream open. */
static void child_before(void)
{
    set_handler(1, 0);
    child_faults();
}

static void child_before_altstack(void)
{
    static char stack[65536];
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof(stack)};
    sigaltstack(&ss, NULL);
    set_handler(0, SA_ONSTACK);
    child_faults();
}

static void child_after(void)
{
    int p[2];
    if (strm_pipe(p) != 0) /* the library's handler is in place */
        _exit(2);
    set_handler(0, 0); /* replaces it, until an open looks again */
    strm_close(p[0]);
    strm_close(p[1]);
    /* The rule (sd_ucopy.c): an open that starts 1 ms or more after the
     * application's sigaction puts the library's handler in front again. */
    struct timespec ms2 = {0, 2000000};
    nanosleep(&ms2, NULL);
    child_faults(); /* strm_pipe puts the library's in front again */
}

/* Opens look at the dispositions (two sigaction calls) at most once per
 * millisecond: over a loop of opens, looks <= 2 + elapsed ms (exit 4 if
 * not), and a handler installed meanwhile is still chained (exit 42). */
static void child_often(void)
{
    struct timespec t0, t1;
    int p[2];
    if (strm_pipe(p) != 0)
        _exit(2);
    strm_close(p[0]);
    strm_close(p[1]);
    unsigned long c0 = ust_ucopy_nchecks();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 300; i++) {
        if (strm_pipe(p) != 0)
            _exit(2);
        strm_close(p[0]);
        strm_close(p[1]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    unsigned long looks = ust_ucopy_nchecks() - c0;
    long long ms = ((long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)) /
                   1000000LL;
    if ((long long)looks > 2 + ms)
        _exit(4);
    set_handler(0, 0);
    struct timespec ms2 = {0, 2000000};
    nanosleep(&ms2, NULL);
    child_faults();
}

static void child_none(void)
{
    child_faults();
}

static void test_handlers(void)
{
    int st = run_child("before");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    st = run_child("before-altstack");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    st = run_child("after");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    st = run_child("often");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    st = run_child("none");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* the sanitizer's SEGV handler, the one before the library's, reports
     * the fault and ends the process: a signal or its own exit status */
    int ours = WIFEXITED(st) && (WEXITSTATUS(st) <= 3 || WEXITSTATUS(st) == 42 ||
                                 WEXITSTATUS(st) == 43);
    CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && !ours));
#else
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
#endif
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"before", child_before},
                 {"before-altstack", child_before_altstack},
                 {"after", child_after},
                 {"often", child_often},
                 {"none", child_none}};
    pages_init();
    for (size_t i = 0; argc > 1 && i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].fn();
            _exit(0);
        }
    CHECK(cdrv_register() > 0);
    signal(SIGPOLL, SIG_IGN); /* I_GETSIG needs a registration */
    test_write();
    test_read();
    test_ioctl_pipe();
    test_ioctl_drv();
    test_misc();
    test_handlers();
    th_assert_no_blocks();
    return CHECK_RESULT();
}
