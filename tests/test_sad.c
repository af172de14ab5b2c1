/* SPDX-License-Identifier: MIT */
/*
 * test_sad.c -- the sad driver and autopush (src/admin/sad.c,
 * src/admin/autopush.c, the open hook in src/head/sd_open.c).
 *
 * Reference: sad(7) (SVR4/Solaris sad(7D)), autopush(1M).  Cases:
 *   S.1  SAD_SAP SAP_ONE, as a transparent ioctl and through I_STR; SAD_GAP
 *        returns the entry; an open of the device pushes the modules, first
 *        in the list first (I_LIST shows the last one on top); data flows
 *        through; a reopen of the shared stream pushes nothing more
 *   S.2  SAP_RANGE over clone minors: minors inside get the modules, the
 *        next one none; SAD_GAP inside the range reports the whole range
 *   S.3  SAP_ALL: every minor, normal and clone opens
 *   S.4  SAP_CLEAR: ERANGE inside a range, ENODEV when not configured, a
 *        cleared device opens bare; SAP_ALL cleared by any minor
 *   S.5  SAD_SAP errors: EINVAL (sap_cmd, major 0 or too big, npush 0 or
 *        above MAXAPUSH, unknown or unterminated module name, a driver's
 *        name, minor too big), ENOSTR (no driver owns the major), EEXIST
 *        (same device, overlapping range, under SAP_ALL), ERANGE
 *        (lastminor <= minor), EPERM (read-only "user" stream), EFAULT;
 *        I_STR with a short buffer: EINVAL; an unknown ioctl: EINVAL
 *   S.6  SAD_GAP errors: EINVAL, ENOSTR, ENODEV, EFAULT; allowed read-only
 *   S.7  SAD_VML: 0 all valid, 1 one invalid, EINVAL sl_nmods < 1 or huge,
 *        EFAULT; transparent and I_STR
 *   S.8  a failed autopush fails the open with the module open's error (and
 *        with EINVAL when a configured module was unregistered); the pushed
 *        modules and the driver are closed again, nothing leaks (registry
 *        references, blocks, streams)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/sad.h>
#include <sys/strconf.h>
#include <ustreams.h>

#include "check.h"
#include "log_util.h"
#include "sthead.h"
#include "strcore.h"

/* ---- a module whose open fails with fail_err ---- */
static atomic_int fail_err;

static int apf_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)sflag;
    (void)crp;
    if (atomic_load(&fail_err) != 0)
        return atomic_load(&fail_err);
    qprocson(q);
    return 0;
}

static int apf_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    return 0;
}

static int apf_put(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info apf_minfo = {.mi_idnum = 9901,
                                       .mi_idname = "apfail",
                                       .mi_maxpsz = INFPSZ,
                                       .mi_hiwat = 4096,
                                       .mi_lowat = 1024};
static struct qinit apf_rinit = {
    .qi_putp = apf_put, .qi_qopen = apf_open, .qi_qclose = apf_close, .qi_minfo = &apf_minfo};
static struct qinit apf_winit = {.qi_putp = apf_put, .qi_minfo = &apf_minfo};
static struct streamtab apf_info = {.st_rdinit = &apf_rinit, .st_wrinit = &apf_winit};
static struct fmodsw apf_fmod = {.f_name = "apfail", .f_str = &apf_info, .f_flag = D_MP};

/* ---- helpers ---- */
static major_t major_of(const char *driver)
{
    struct ust_modent *e = ust_reg_find_noload(driver, UST_DRIVER);
    major_t m = e != NULL ? e->major : 0;

    if (e != NULL)
        ust_reg_rele(e);
    return m;
}

static long refs_of(const char *name, int kind)
{
    struct ust_modent *e = ust_reg_find_noload(name, kind);
    long r;

    if (e == NULL)
        return -1;
    r = atomic_load(&e->refs) - 1;
    ust_reg_rele(e);
    return r;
}

static struct strapush sap_make(uint_t cmd, major_t major, minor_t minor, minor_t last, int n,
                                const char *m0, const char *m1)
{
    struct strapush s;

    memset(&s, 0, sizeof(s));
    s.sap_cmd = cmd;
    s.sap_major = major;
    s.sap_minor = minor;
    s.sap_lastminor = last;
    s.sap_npush = (uint_t)n;
    if (m0 != NULL)
        strcpy(s.sap_list[0], m0);
    if (m1 != NULL)
        strcpy(s.sap_list[1], m1);
    return s;
}

/* ioctl returning 0 or errno. */
static int sad_ioctl(int fd, int cmd, void *arg)
{
    return strm_ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

/* The same through I_STR; *rlen gets ic_len back. */
static int sad_istr(int fd, int cmd, void *arg, int len, int *rlen)
{
    struct strioctl si = {.ic_cmd = cmd, .ic_timout = 5, .ic_len = len, .ic_dp = arg};
    int r = strm_ioctl(fd, I_STR, &si);

    if (rlen != NULL)
        *rlen = si.ic_len;
    return r < 0 ? errno : 0;
}

/* Modules on the stream fd, top first, names joined by ','; returns count. */
static int list_of(int fd, char *out, size_t size)
{
    struct str_mlist names[16];
    struct str_list sl = {.sl_nmods = 16, .sl_modlist = names};
    int n = strm_ioctl(fd, I_LIST, NULL);

    out[0] = '\0';
    if (n < 0 || strm_ioctl(fd, I_LIST, &sl) < 0)
        return -1;
    for (int i = 0; i < sl.sl_nmods; i++) {
        if (i > 0)
            strncat(out, ",", size - strlen(out) - 1);
        strncat(out, names[i].l_name, size - strlen(out) - 1);
    }
    return n;
}

static void settle(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
}

/* ------------------------------------------------------------------------ */
static void test_one(int adm)
{
    major_t echo = major_of("echo");
    struct strapush s = sap_make(SAP_ONE, echo, 0, 0, 2, "nullmod", "srvmod"), g;
    char names[128], buf[16];
    int fd, fd2, rlen;

    CHECK(echo > 0);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), 0);

    memset(&g, 0, sizeof(g));
    g.sap_major = echo;
    g.sap_minor = 0;
    CHECK_EQ(sad_ioctl(adm, SAD_GAP, &g), 0);
    CHECK_EQ(g.sap_cmd, SAP_ONE);
    CHECK_EQ(g.sap_npush, 2);
    CHECK(strcmp(g.sap_list[0], "nullmod") == 0 && strcmp(g.sap_list[1], "srvmod") == 0);
    CHECK_EQ(g.sap_lastminor, 0);

    /* the same through I_STR: the answer comes back as the reply data */
    memset(&g, 0, sizeof(g));
    g.sap_major = echo;
    CHECK_EQ(sad_istr(adm, SAD_GAP, &g, sizeof(g), &rlen), 0);
    CHECK_EQ(rlen, sizeof(g));
    CHECK_EQ(g.sap_npush, 2);

    fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(list_of(fd, names, sizeof(names)), 3);
    CHECK(strcmp(names, "srvmod,nullmod,echo") == 0);
    CHECK_EQ(strm_write(fd, "ping", 4), 4);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 4);
    CHECK(memcmp(buf, "ping", 4) == 0);

    /* a reopen shares the stream: nothing more is pushed */
    fd2 = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd2 >= 0);
    CHECK_EQ(list_of(fd2, names, sizeof(names)), 3);
    CHECK_EQ(strm_close(fd2), 0);
    CHECK_EQ(strm_close(fd), 0);

    /* I_STR SAD_SAP: the same device again is EEXIST, cleared it is gone */
    CHECK_EQ(sad_istr(adm, SAD_SAP, &s, sizeof(s), NULL), EEXIST);
    s.sap_cmd = SAP_CLEAR;
    CHECK_EQ(sad_istr(adm, SAD_SAP, &s, sizeof(s), NULL), 0);
    fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK_EQ(list_of(fd, names, sizeof(names)), 1);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_range(int adm)
{
    major_t echo = major_of("echo");
    struct strapush s = sap_make(SAP_RANGE, echo, 1, 3, 1, "nullmod", NULL), g;
    char names[128];
    int fds[4];

    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), 0);
    for (int i = 0; i < 4; i++) { /* clone minors 1, 2, 3, 4 */
        fds[i] = strm_open("/dev/streams/clone/echo", O_RDWR);
        CHECK(fds[i] >= 0);
        CHECK_EQ(list_of(fds[i], names, sizeof(names)), i < 3 ? 2 : 1);
    }
    for (int i = 0; i < 4; i++)
        CHECK_EQ(strm_close(fds[i]), 0);

    memset(&g, 0, sizeof(g));
    g.sap_major = echo;
    g.sap_minor = 2;
    CHECK_EQ(sad_ioctl(adm, SAD_GAP, &g), 0);
    CHECK_EQ(g.sap_cmd, SAP_RANGE);
    CHECK_EQ(g.sap_minor, 1);
    CHECK_EQ(g.sap_lastminor, 3);

    /* overlaps */
    struct strapush o = sap_make(SAP_ONE, echo, 3, 0, 1, "srvmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &o), EEXIST);
    o = sap_make(SAP_RANGE, echo, 0, 1, 1, "srvmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &o), EEXIST);
    o = sap_make(SAP_ALL, echo, 0, 0, 1, "srvmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &o), EEXIST);
    o = sap_make(SAP_RANGE, echo, 4, 6, 1, "srvmod", NULL); /* adjacent: fine */
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &o), 0);

    /* S.4 clearing */
    struct strapush c = sap_make(SAP_CLEAR, echo, 2, 0, 0, NULL, NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), ERANGE);
    c.sap_minor = 1;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), 0);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), ENODEV);
    c.sap_minor = 4;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), 0);
    c.sap_minor = 0;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), ENODEV);
}

static void test_all(int adm)
{
    major_t nuls = major_of("nuls");
    struct strapush s = sap_make(SAP_ALL, nuls, 12345, 0, 1, "nullmod", NULL), g;
    char names[128];
    int a, b;

    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), 0);
    a = strm_open("/dev/streams/nuls", O_RDWR);
    b = strm_open("/dev/streams/clone/nuls", O_RDWR);
    CHECK_EQ(list_of(a, names, sizeof(names)), 2);
    CHECK(strcmp(names, "nullmod,nuls") == 0);
    CHECK_EQ(list_of(b, names, sizeof(names)), 2);
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);

    memset(&g, 0, sizeof(g));
    g.sap_major = nuls;
    g.sap_minor = 777;
    CHECK_EQ(sad_ioctl(adm, SAD_GAP, &g), 0);
    CHECK_EQ(g.sap_cmd, SAP_ALL);
    CHECK_EQ(g.sap_minor, 0);

    struct strapush o = sap_make(SAP_ONE, nuls, 7, 0, 1, "srvmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &o), EEXIST);
    struct strapush c = sap_make(SAP_CLEAR, nuls, 99, 0, 0, NULL, NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), 0);
    CHECK_EQ(sad_ioctl(adm, SAD_GAP, &g), ENODEV);
}

static void test_sap_errors(int adm, int usr)
{
    major_t echo = major_of("echo");
    struct strapush s;
    char names[128];

    s = sap_make(0, echo, 0, 0, 1, "nullmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s.sap_cmd = SAP_CLEAR + 1;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s = sap_make(SAP_ONE, 0, 0, 0, 1, "nullmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s.sap_major = L_MAXMAJ + 1;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s.sap_major = L_MAXMAJ; /* valid number, no driver */
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), ENOSTR);
    s = sap_make(SAP_ONE, echo, 0, 0, 0, "nullmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s.sap_npush = MAXAPUSH + 1;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s = sap_make(SAP_ONE, echo, 0, 0, 2, "nullmod", "nosuchmd");
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s = sap_make(SAP_ONE, echo, 0, 0, 1, "echo", NULL); /* a driver, not a module */
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s = sap_make(SAP_ONE, echo, 0, 0, 1, NULL, NULL);
    memset(s.sap_list[0], 'n', sizeof(s.sap_list[0])); /* no NUL */
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s = sap_make(SAP_ONE, echo, L_MAXMIN + 1, 0, 1, "nullmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), EINVAL);
    s = sap_make(SAP_RANGE, echo, 5, 5, 1, "nullmod", NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), ERANGE);
    s.sap_lastminor = 4;
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), ERANGE);
    s = sap_make(SAP_CLEAR, echo, 0, 0, 0, NULL, NULL);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), ENODEV);
    /* the user (read-only) stream may not configure */
    s = sap_make(SAP_ONE, echo, 0, 0, 1, "nullmod", NULL);
    CHECK_EQ(sad_ioctl(usr, SAD_SAP, &s), EPERM);
    CHECK_EQ(sad_istr(usr, SAD_SAP, &s, sizeof(s), NULL), EPERM);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, NULL), EFAULT);
    CHECK_EQ(sad_istr(adm, SAD_SAP, &s, sizeof(s) - 1, NULL), EINVAL);
    CHECK_EQ(sad_ioctl(adm, SADIOC | 77, &s), EINVAL);
    /* nothing of it was configured */
    int fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK_EQ(list_of(fd, names, sizeof(names)), 1);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_gap_errors(int usr)
{
    struct strapush g;

    memset(&g, 0, sizeof(g));
    CHECK_EQ(sad_ioctl(usr, SAD_GAP, &g), EINVAL); /* major 0 */
    g.sap_major = L_MAXMAJ;
    CHECK_EQ(sad_ioctl(usr, SAD_GAP, &g), ENOSTR);
    g.sap_major = major_of("echo");
    g.sap_minor = 42;
    CHECK_EQ(sad_ioctl(usr, SAD_GAP, &g), ENODEV);
    CHECK_EQ(sad_ioctl(usr, SAD_GAP, NULL), EFAULT);
}

static void test_vml(int usr)
{
    struct str_mlist ml[3];
    struct str_list sl = {.sl_nmods = 2, .sl_modlist = ml};

    memset(ml, 0, sizeof(ml));
    strcpy(ml[0].l_name, "nullmod");
    strcpy(ml[1].l_name, "srvmod");
    CHECK_EQ(strm_ioctl(usr, SAD_VML, &sl), 0);
    struct strioctl si = {
        .ic_cmd = SAD_VML, .ic_timout = 5, .ic_len = sizeof(sl), .ic_dp = (char *)&sl};
    CHECK_EQ(strm_ioctl(usr, I_STR, &si), 0);
    strcpy(ml[1].l_name, "nosuchmd");
    CHECK_EQ(strm_ioctl(usr, SAD_VML, &sl), 1);
    si.ic_len = sizeof(sl); /* the previous call set it to the reply's length, 0 */
    CHECK_EQ(strm_ioctl(usr, I_STR, &si), 1);
    strcpy(ml[1].l_name, "echo"); /* a driver */
    CHECK_EQ(strm_ioctl(usr, SAD_VML, &sl), 1);
    sl.sl_nmods = 0;
    CHECK_EQ(sad_ioctl(usr, SAD_VML, &sl), EINVAL);
    sl.sl_nmods = -1;
    CHECK_EQ(sad_ioctl(usr, SAD_VML, &sl), EINVAL);
    sl.sl_nmods = 1 << 20;
    CHECK_EQ(sad_ioctl(usr, SAD_VML, &sl), EINVAL);
    sl.sl_nmods = 1;
    sl.sl_modlist = NULL;
    CHECK_EQ(sad_ioctl(usr, SAD_VML, &sl), EFAULT);
    CHECK_EQ(sad_ioctl(usr, SAD_VML, NULL), EFAULT);
}

static void test_failed_autopush(int adm)
{
    major_t echo = major_of("echo");
    struct strapush s = sap_make(SAP_ONE, echo, 0, 0, 2, "nullmod", "apfail");
    struct strapush c = sap_make(SAP_CLEAR, echo, 0, 0, 0, NULL, NULL);
    long echo_refs = refs_of("echo", UST_DRIVER), null_refs = refs_of("nullmod", UST_MODULE);
    char names[128];
    int fd;

    CHECK_EQ(register_strmod(&apf_fmod), 0);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &s), 0);
    atomic_store(&fail_err, EACCES);
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/echo", O_RDWR), -1);
    CHECK_EQ(errno, EACCES);
    CHECK_EQ(refs_of("echo", UST_DRIVER), echo_refs);
    CHECK_EQ(refs_of("nullmod", UST_MODULE), null_refs);
    CHECK_EQ(refs_of("apfail", UST_MODULE), 0);

    /* the module succeeds: both are there */
    atomic_store(&fail_err, 0);
    fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(list_of(fd, names, sizeof(names)), 3);
    CHECK(strcmp(names, "apfail,nullmod,echo") == 0);
    CHECK_EQ(strm_close(fd), 0);

    /* a configured module that went away: EINVAL, as I_PUSH */
    CHECK_EQ(unregister_strmod(&apf_fmod), 0);
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/echo", O_RDWR), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(refs_of("echo", UST_DRIVER), echo_refs);
    CHECK_EQ(refs_of("nullmod", UST_MODULE), null_refs);
    CHECK_EQ(sad_ioctl(adm, SAD_SAP, &c), 0);

    fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(list_of(fd, names, sizeof(names)), 1);
    CHECK_EQ(strm_close(fd), 0);
}

int main(void)
{
    log_private_rundir(); /* the autopush table is the user's: this test's own */
    int adm = strm_open("/dev/streams/sad", O_RDWR);
    int usr = strm_open("/dev/streams/sad", O_RDONLY);

    CHECK(adm >= 0);
    CHECK(usr >= 0);
    test_one(adm);
    test_range(adm);
    test_all(adm);
    test_sap_errors(adm, usr);
    test_gap_errors(usr);
    test_vml(usr);
    test_failed_autopush(adm);
    CHECK_EQ(strm_close(usr), 0);
    CHECK_EQ(strm_close(adm), 0);
    settle();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
