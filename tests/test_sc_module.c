/* SPDX-License-Identifier: MIT */
/*
 * test_sc_module.c -- the sc module (sc(4) of Linux Fast-STREAMS;
 * src/admin/sc.c, <sys/sc.h>, docs/ADMIN.md "The sc module").
 * Cases:
 *   C.1  sc pushes on the sad driver; SC_IOC_LIST with room for every entry
 *        returns each registered driver and module once, with its major
 *        (0 for a module), name and the module_info of its read and write
 *        qinits (checked against ustreams_modinfo and known values)
 *   C.2  sc_nmods 0 (sc_mlist NULL): the count alone; a list too small: the
 *        first entries written, the rest of the buffer untouched, sc_nmods
 *        the count needed; sc_nmods < 0: EINVAL
 *   C.3  a bad sc_mlist: EFAULT; a bad I_STR data pointer: EFAULT
 *   C.4  the transparent form ioctl(fd, SC_IOC_LIST, &l) answers the same
 *   C.5  sc on another stream (nuls): allowed, as Fast-STREAMS' sc(4) says
 *        ("can be pushed over any stream"); data passes through it
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stropts.h>
#include <sys/sc.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "check.h"

static int sc_ioc(int fd, struct sc_list *l)
{
    struct strioctl ic = {.ic_cmd = SC_IOC_LIST, .ic_len = sizeof(*l), .ic_dp = (char *)l};
    return strm_ioctl(fd, I_STR, &ic);
}

static int open_sc(const char *dev)
{
    int fd = strm_open(dev, O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "sc"), 0);
    return fd;
}

static const struct sc_mlist *find(const struct sc_mlist *v, int n, const char *name, int drv)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0 && (v[i].major > 0) == drv)
            return &v[i];
    return NULL;
}

/* C.1 */
static void test_full_list(void)
{
    int fd = open_sc("/dev/streams/sad");
    struct ustreams_modinfo info[128];
    int ninfo = ustreams_modinfo(info, 128);
    CHECK(ninfo > 10 && ninfo <= 128);
    struct sc_mlist v[128];
    struct sc_list l = {.sc_nmods = 128, .sc_mlist = v};
    CHECK_EQ(sc_ioc(fd, &l), 0);
    CHECK_EQ(l.sc_nmods, ninfo);
    CHECK(l.sc_mlist == v);
    for (int i = 0; i < ninfo && i < l.sc_nmods; i++) { /* every entry, with its fields */
        const struct ustreams_modinfo *mi = &info[i];
        const struct sc_mlist *m = find(v, l.sc_nmods, mi->name, mi->kind == USTREAMS_DRIVER);
        if (!CHECK(m != NULL)) {
            fprintf(stderr, "  %s missing\n", mi->name);
            continue;
        }
        CHECK_EQ(m->major, mi->kind == USTREAMS_DRIVER ? mi->major : 0);
        CHECK_EQ(m->mi[0].index, 0);
        CHECK_EQ(m->mi[0].mi_idnum, mi->idnum);
        CHECK_EQ(m->mi[0].mi_minpsz, mi->minpsz);
        CHECK_EQ(m->mi[0].mi_maxpsz, mi->maxpsz);
        CHECK_EQ(m->mi[0].mi_hiwat, mi->hiwat);
        CHECK_EQ(m->mi[0].mi_lowat, mi->lowat);
        CHECK_EQ(m->mi[1].index, 1);
        CHECK_EQ(m->ms[0].ms_ocnt, mi->nopen);
        CHECK_EQ(m->ms[0].ms_ccnt, mi->nclose);
    }
    const char *drivers[] = {"echo", "nuls", "loop", "mux", "sad", "log", "ticlts", "ticots",
                             "ticotsord", "udp", "tcp", "rawip", "fifo", "sfx", "pipe"};
    const char *modules[] = {"nullmod", "srvmod", "pipemod", "timod", "tirdwr", "connld", "sc"};
    for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
        CHECK(find(v, l.sc_nmods, drivers[i], 1) != NULL);
    for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++)
        CHECK(find(v, l.sc_nmods, modules[i], 0) != NULL);
    const struct sc_mlist *e = find(v, l.sc_nmods, "echo", 1);
    if (CHECK(e != NULL)) {
        CHECK_EQ(e->mi[0].mi_idnum, 5003);
        CHECK_EQ(strcmp(e->mi[0].mi_idname, "echo"), 0);
        CHECK_EQ(e->mi[0].mi_hiwat, 5120);
        CHECK_EQ(e->mi[2].index, -1); /* no multiplexer qinits */
        CHECK_EQ(e->mi[3].index, -1);
    }
    const struct sc_mlist *s = find(v, l.sc_nmods, "sc", 0);
    if (CHECK(s != NULL))
        CHECK(s->ms[0].ms_ocnt >= 1); /* this push */
    CHECK_EQ(strm_close(fd), 0);
}

/* C.2 */
static void test_short_lists(void)
{
    int fd = open_sc("/dev/streams/sad");
    int total = ustreams_modinfo(NULL, 0);
    struct sc_list l = {.sc_nmods = 0, .sc_mlist = NULL};
    CHECK_EQ(sc_ioc(fd, &l), 0);
    CHECK_EQ(l.sc_nmods, total);
    struct sc_mlist v[4];
    memset(v, 0xa5, sizeof(v));
    l = (struct sc_list){.sc_nmods = 3, .sc_mlist = v};
    CHECK_EQ(sc_ioc(fd, &l), 0);
    CHECK_EQ(l.sc_nmods, total); /* the count needed */
    CHECK_EQ(strcmp(v[0].name, "echo"), 0); /* registration order */
    CHECK(v[2].name[0] != (char)0xa5);
    unsigned char *p = (unsigned char *)&v[3];
    int untouched = 1;
    for (size_t i = 0; i < sizeof(v[3]); i++)
        untouched &= p[i] == 0xa5;
    CHECK(untouched);
    l = (struct sc_list){.sc_nmods = -1, .sc_mlist = v};
    errno = 0;
    CHECK_EQ(sc_ioc(fd, &l), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
}

/* C.3 */
static void test_efault(void)
{
    int fd = open_sc("/dev/streams/sad");
    struct sc_list l = {.sc_nmods = 5, .sc_mlist = (struct sc_mlist *)(uintptr_t)8};
    errno = 0;
    CHECK_EQ(sc_ioc(fd, &l), -1);
    CHECK_EQ(errno, EFAULT);
    struct strioctl ic = {.ic_cmd = SC_IOC_LIST, .ic_len = sizeof(l), .ic_dp = (char *)16};
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_STR, &ic), -1);
    CHECK_EQ(errno, EFAULT);
    /* the stream still answers */
    l = (struct sc_list){0, NULL};
    CHECK_EQ(sc_ioc(fd, &l), 0);
    CHECK(l.sc_nmods > 0);
    CHECK_EQ(strm_close(fd), 0);
}

/* C.4 */
static void test_transparent(void)
{
    int fd = open_sc("/dev/streams/sad");
    struct sc_mlist v[2];
    struct sc_list l = {.sc_nmods = 2, .sc_mlist = v};
    CHECK_EQ(strm_ioctl(fd, SC_IOC_LIST, &l), 0);
    CHECK_EQ(l.sc_nmods, ustreams_modinfo(NULL, 0));
    CHECK_EQ(strcmp(v[0].name, "echo"), 0);
    CHECK_EQ(strcmp(v[1].name, "nuls"), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, SC_IOC_LIST, (void *)8), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(strm_close(fd), 0);
}

/* C.5 */
static void test_other_stream(void)
{
    int fd = open_sc("/dev/streams/clone/echo");
    struct sc_list l = {0, NULL};
    CHECK_EQ(sc_ioc(fd, &l), 0);
    CHECK_EQ(l.sc_nmods, ustreams_modinfo(NULL, 0));
    char buf[8];
    CHECK_EQ(strm_write(fd, "ab", 2), 2); /* data passes through sc both ways */
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 2);
    /* other ioctls pass on to the driver (echo refuses them: EINVAL) */
    struct strioctl ic = {.ic_cmd = 12345, .ic_len = 0};
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_STR, &ic), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
    fd = open_sc("/dev/streams/nuls");
    l = (struct sc_list){0, NULL};
    CHECK_EQ(sc_ioc(fd, &l), 0);
    CHECK_EQ(strm_close(fd), 0);
}

int main(void)
{
    alarm(120);
    signal(SIGPIPE, SIG_IGN);
    test_full_list();
    test_short_lists();
    test_efault();
    test_transparent();
    test_other_stream();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
