/* SPDX-License-Identifier: MIT */
/*
 * test_ddi.c -- the DDI helpers of src/core/ddi.c: getmajor(9F), getminor(9F),
 * makedevice(9F), drv_usectohz(9F), drv_hztousec(9F), drv_getparm(9F),
 * kmem_alloc(9F), kmem_zalloc(9F), kmem_free(9F), cmn_err(9F), and the ioctl
 * helpers miocack(9F), miocnak(9F), mcopyin(9F), mcopyout(9F) (Solaris
 * semantics), the latter driven through a harness stream whose test driver
 * answers ioctls with them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"

/* ------------------------------------------------------------------------ */
/* Device numbers                                                            */
/* ------------------------------------------------------------------------ */
static void test_devnums(void)
{
    major_t majs[] = {0, 1, 2, 77, 0x1000, L_MAXMAJ};
    minor_t mins[] = {0, 1, 255, 0x10000, L_MAXMIN};

    CHECK_EQ(L_BITSMINOR, 18);
    CHECK_EQ(makedevice(0, 0), (dev_t)0);
    for (size_t i = 0; i < sizeof(majs) / sizeof(majs[0]); i++) {
        for (size_t j = 0; j < sizeof(mins) / sizeof(mins[0]); j++) {
            dev_t d = makedevice(majs[i], mins[j]);
            CHECK(d != (dev_t)-1);
            CHECK_EQ(getmajor(d), majs[i]);
            CHECK_EQ(getminor(d), mins[j]);
        }
    }
    CHECK_EQ(makedevice(1, 0), (dev_t)1 << 18);
    CHECK_EQ(makedevice(L_MAXMAJ, L_MAXMIN), (dev_t)0xffffffffu);
    /* out of range */
    CHECK_EQ(makedevice(L_MAXMAJ + 1, 0), (dev_t)-1);
    CHECK_EQ(makedevice(0, L_MAXMIN + 1), (dev_t)-1);
    /* the fields are masked on the way out */
    CHECK_EQ(getminor((dev_t)-1), (minor_t)L_MAXMIN);
    CHECK_EQ(getmajor((dev_t)-1), (major_t)L_MAXMAJ);
}

/* ------------------------------------------------------------------------ */
/* Ticks                                                                     */
/* ------------------------------------------------------------------------ */
static void test_ticks(void)
{
    long tick = 1000000L / HZ;

    CHECK_EQ(drv_usectohz(0), 0);
    CHECK_EQ(drv_usectohz(-1), 0);
    CHECK_EQ(drv_usectohz(1), 1); /* any positive interval is at least a tick */
    CHECK_EQ(drv_usectohz(tick - 1), 1);
    CHECK_EQ(drv_usectohz(tick), 1);
    CHECK_EQ(drv_usectohz(tick + 1), 2);
    CHECK_EQ(drv_usectohz(1000000), HZ);
    CHECK_EQ(drv_usectohz(LONG_MAX), LONG_MAX / tick + 1);

    CHECK_EQ(drv_hztousec(0), 0);
    CHECK_EQ(drv_hztousec(-3), 0);
    CHECK_EQ(drv_hztousec(1), tick);
    CHECK_EQ(drv_hztousec(HZ), 1000000);
    CHECK_EQ(drv_hztousec(LONG_MAX), LONG_MAX); /* saturates */
    for (long t = 0; t < 1000; t += 7)
        CHECK_EQ(drv_usectohz(drv_hztousec(t)), t);
}

/* ------------------------------------------------------------------------ */
/* drv_getparm                                                               */
/* ------------------------------------------------------------------------ */
static void test_getparm(void)
{
    long lbolt1 = -1, lbolt2 = -1;
    time_t t = 0;
    pid_t p = 0;
    struct timespec ts = {0, 30 * 1000000}; /* 30 ms = 3 ticks */

    CHECK_EQ(drv_getparm(LBOLT, &lbolt1), 0);
    CHECK(lbolt1 >= 0);
    nanosleep(&ts, NULL);
    CHECK_EQ(drv_getparm(LBOLT, &lbolt2), 0);
    CHECK(lbolt2 >= lbolt1 + 2);

    CHECK_EQ(drv_getparm(TIME, &t), 0);
    CHECK(labs((long)(t - time(NULL))) <= 2);
    CHECK_EQ(drv_getparm(PPID, &p), 0);
    CHECK_EQ(p, getpid());
    CHECK_EQ(drv_getparm(PPGRP, &p), 0);
    CHECK_EQ(p, getpgrp());
    CHECK_EQ(drv_getparm(PSID, &p), 0);
    CHECK_EQ(p, getsid(0));

    CHECK_EQ(drv_getparm(0, &p), -1);
    CHECK_EQ(drv_getparm(UPROCP, &p), -1);
    CHECK_EQ(drv_getparm(UCRED, &p), -1);
    CHECK_EQ(drv_getparm(999, &p), -1);
    CHECK_EQ(drv_getparm(LBOLT, NULL), -1);
}

/* ------------------------------------------------------------------------ */
/* kmem                                                                      */
/* ------------------------------------------------------------------------ */
static void test_kmem(void)
{
    unsigned char *p;

    CHECK(kmem_alloc(0, KM_SLEEP) == NULL);
    CHECK(kmem_alloc(0, KM_NOSLEEP) == NULL);
    CHECK(kmem_zalloc(0, KM_SLEEP) == NULL);

    p = kmem_alloc(100, KM_SLEEP);
    CHECK(p != NULL);
    if (p != NULL) {
        memset(p, 0xa5, 100);
        kmem_free(p, 100);
    }
    p = kmem_alloc(64, KM_NOSLEEP);
    CHECK(p != NULL);
    kmem_free(p, 64);

    p = kmem_zalloc(4096, KM_SLEEP);
    CHECK(p != NULL);
    if (p != NULL) {
        int nonzero = 0;
        for (int i = 0; i < 4096; i++)
            nonzero |= p[i];
        CHECK_EQ(nonzero, 0);
        kmem_free(p, 4096);
    }
    p = kmem_zalloc(16, KM_NOSLEEP);
    CHECK(p != NULL);
    kmem_free(p, 16);
    kmem_free(NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* cmn_err                                                                   */
/* ------------------------------------------------------------------------ */
/* Run fn with stderr captured; returns what it printed (static buffer). */
static const char *capture(void (*fn)(void))
{
    static char buf[1024];
    FILE *tmp = tmpfile();
    int saved;
    ssize_t n;

    buf[0] = '\0';
    if (tmp == NULL)
        return buf;
    fflush(stderr);
    saved = dup(2);
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    n = pread(fileno(tmp), buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    fclose(tmp);
    return buf;
}

static void say_note(void)
{
    cmn_err(CE_NOTE, "note %d", 1);
}
static void say_cont(void)
{
    cmn_err(CE_CONT, "cont %s", "x");
}
static void say_warn(void)
{
    cmn_err(CE_WARN, "warn %d", 2);
}
static void say_warn_caret(void)
{
    cmn_err(CE_WARN, "^console %d", 3);
}
static void say_long(void)
{
    char big[2000];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cmn_err(CE_WARN, "%s", big);
}

static void test_cmn_err(void)
{
    const char *out;
    pid_t pid;
    int status = 0;

    unsetenv("USTREAMS_VERBOSE");
    CHECK_EQ(strcmp(capture(say_note), ""), 0);
    CHECK_EQ(strcmp(capture(say_cont), ""), 0);
    CHECK_EQ(strcmp(capture(say_warn), "WARNING: warn 2\n"), 0);
    CHECK_EQ(strcmp(capture(say_warn_caret), "WARNING: console 3\n"), 0);
    out = capture(say_long); /* longer than the internal buffer; capture keeps 1023 */
    CHECK_EQ(strncmp(out, "WARNING: zzzz", 13), 0);
    CHECK_EQ(strlen(out), 1023u);

    setenv("USTREAMS_VERBOSE", "1", 1);
    CHECK_EQ(strcmp(capture(say_note), "NOTICE: note 1\n"), 0);
    CHECK_EQ(strcmp(capture(say_cont), "cont x"), 0);
    unsetenv("USTREAMS_VERBOSE");

    /* CE_PANIC aborts (in a child, with its stderr discarded) */
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 2);
        cmn_err(CE_PANIC, "the end");
        _exit(0);
    }
    CHECK(pid > 0);
    if (pid > 0) {
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    }
}

/* ------------------------------------------------------------------------ */
/* ioctl helpers through a stream                                            */
/* ------------------------------------------------------------------------ */
/* ioctl commands the test driver understands */
#define T_ACK 0x5401        /* miocack(count 3, rval 42), data kept */
#define T_NAK 0x5402        /* miocnak(EPERM) */
#define T_NAK0 0x5403       /* miocnak(error 0) -> EINVAL */
#define T_CIN 0x5404        /* mcopyin(priv, 16, NULL): transparent address */
#define T_CIN_ADDR 0x5405   /* mcopyin(NULL, 32, 0x5000) */
#define T_COUT 0x5406       /* mcopyout(priv, 8, NULL, "abcdefgh") */
#define T_COUT_KEEP 0x5407  /* mcopyout(NULL, 4, 0x6000, NULL): b_cont kept */

#define PRIV_CIN ((void *)0xfeed)
#define PRIV_COUT ((void *)0xbeef)
#define UADDR ((caddr_t)0x12345678)

static atomic_int ddit_ioctls;  /* M_IOCTL arrivals */
static atomic_int ddit_iocdata; /* M_IOCDATA arrivals */
static atomic_int ddit_other;   /* anything else */

static int ddit_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)sflag;
    (void)crp;
    qprocson(q);
    return 0;
}

static int ddit_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    return 0;
}

static void ddit_ioctl(queue_t *q, mblk_t *mp)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    mblk_t *dp;

    switch (iocp->ioc_cmd) {
    case T_ACK:
        miocack(q, mp, 3, 42);
        break;
    case T_NAK:
        miocnak(q, mp, 0, EPERM);
        break;
    case T_NAK0:
        miocnak(q, mp, 5, 0);
        break;
    case T_CIN:
        mcopyin(mp, PRIV_CIN, 16, NULL);
        qreply(q, mp);
        break;
    case T_CIN_ADDR:
        mcopyin(mp, NULL, 32, (void *)0x5000);
        qreply(q, mp);
        break;
    case T_COUT:
        dp = th_msg(M_DATA, 0, "abcdefgh", 8);
        mcopyout(mp, PRIV_COUT, 8, NULL, dp);
        qreply(q, mp);
        break;
    case T_COUT_KEEP:
        mcopyout(mp, NULL, 4, (void *)0x6000, NULL);
        qreply(q, mp);
        break;
    default:
        miocnak(q, mp, 0, EINVAL);
        break;
    }
}

/* M_IOCDATA: the answer to our M_COPYIN/M_COPYOUT.  After T_CIN, ack with
 * rval 7; after T_COUT, ask for a copy-in (an M_IOCDATA becomes M_COPYIN). */
static void ddit_iocdata_msg(queue_t *q, mblk_t *mp)
{
    struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;

    if (cp->cp_rval != NULL) {
        miocnak(q, mp, 0, EFAULT);
        return;
    }
    if (cp->cp_cmd == T_COUT) {
        mcopyin(mp, (void *)1, 4, (void *)0x7000);
        qreply(q, mp);
        return;
    }
    miocack(q, mp, 0, 7);
}

static int ddit_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_IOCTL:
        atomic_fetch_add(&ddit_ioctls, 1);
        ddit_ioctl(q, mp);
        break;
    case M_IOCDATA:
        atomic_fetch_add(&ddit_iocdata, 1);
        ddit_iocdata_msg(q, mp);
        break;
    default:
        atomic_fetch_add(&ddit_other, 1);
        freemsg(mp);
        break;
    }
    return 0;
}

static struct module_info ddit_minfo = {.mi_idname = "ddit", .mi_maxpsz = INFPSZ,
                                        .mi_hiwat = 5120, .mi_lowat = 1024};
static struct qinit ddit_rinit = {.qi_putp = NULL,
                                  .qi_qopen = ddit_open,
                                  .qi_qclose = ddit_close,
                                  .qi_minfo = &ddit_minfo};
static struct qinit ddit_winit = {.qi_putp = ddit_wput, .qi_minfo = &ddit_minfo};
static struct streamtab ddit_info = {.st_rdinit = &ddit_rinit, .st_wrinit = &ddit_winit};
static struct cdevsw ddit_cdev = {.d_name = "ddit", .d_str = &ddit_info, .d_flag = D_MP};

static struct iocblk *iocblk_of(mblk_t *mp)
{
    return (struct iocblk *)(void *)mp->b_rptr;
}

static struct copyreq *copyreq_of(mblk_t *mp)
{
    return (struct copyreq *)(void *)mp->b_rptr;
}

/* Send an ioctl, return the reply (NULL on timeout). */
static mblk_t *roundtrip(struct th_stream *s, mblk_t *mp)
{
    CHECK(mp != NULL);
    if (mp == NULL)
        return NULL;
    CHECK_EQ(th_write(s, mp), 0);
    return th_read(s, 5000);
}

/* miocack(9F): M_IOCACK, ioc_count/ioc_rval set, ioc_error 0, cmd/id/cr kept,
 * data kept in b_cont. */
static void test_miocack(struct th_stream *s)
{
    mblk_t *req = th_ioctl_msg(T_ACK, 4, "data", 4);
    uint_t id = iocblk_of(req)->ioc_id;
    cred_t *cr = iocblk_of(req)->ioc_cr;
    mblk_t *mp;

    iocblk_of(req)->ioc_error = 99; /* must be cleared */
    mp = roundtrip(s, req);
    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), M_IOCACK);
    CHECK_EQ(iocblk_of(mp)->ioc_cmd, T_ACK);
    CHECK_EQ(iocblk_of(mp)->ioc_id, id);
    CHECK(iocblk_of(mp)->ioc_cr == cr);
    CHECK_EQ(iocblk_of(mp)->ioc_count, 3u);
    CHECK_EQ(iocblk_of(mp)->ioc_rval, 42);
    CHECK_EQ(iocblk_of(mp)->ioc_error, 0);
    CHECK(mp->b_cont != NULL);
    if (mp->b_cont != NULL)
        CHECK_EQ(memcmp(mp->b_cont->b_rptr, "data", 4), 0);
    freemsg(mp);
}

/* miocnak(9F): M_IOCNAK with ioc_error (EINVAL when 0) and ioc_count. */
static void test_miocnak(struct th_stream *s)
{
    mblk_t *mp = roundtrip(s, th_ioctl_msg(T_NAK, 0, NULL, 0));

    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_IOCNAK);
        CHECK_EQ(iocblk_of(mp)->ioc_cmd, T_NAK);
        CHECK_EQ(iocblk_of(mp)->ioc_error, EPERM);
        CHECK_EQ(iocblk_of(mp)->ioc_count, 0u);
        freemsg(mp);
    }
    mp = roundtrip(s, th_ioctl_msg(T_NAK0, 0, NULL, 0));
    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_IOCNAK);
        CHECK_EQ(iocblk_of(mp)->ioc_error, EINVAL);
        CHECK_EQ(iocblk_of(mp)->ioc_count, 5u);
        freemsg(mp);
    }
    mp = roundtrip(s, th_ioctl_msg(0x7777, 0, NULL, 0)); /* unknown command */
    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_IOCNAK);
        CHECK_EQ(iocblk_of(mp)->ioc_error, EINVAL);
        freemsg(mp);
    }
}

/* mcopyin(9F) on a transparent M_IOCTL: the address comes from b_cont,
 * b_cont is freed; then the M_IOCDATA answer is acknowledged. */
static void test_mcopyin(struct th_stream *s)
{
    caddr_t uaddr = UADDR;
    mblk_t *req = th_ioctl_msg(T_CIN, TRANSPARENT, &uaddr, sizeof(uaddr));
    uint_t id = iocblk_of(req)->ioc_id;
    mblk_t *mp = roundtrip(s, req);
    struct copyresp *cp;

    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), M_COPYIN);
    CHECK_EQ(copyreq_of(mp)->cq_cmd, T_CIN);
    CHECK_EQ(copyreq_of(mp)->cq_id, id);
    CHECK(copyreq_of(mp)->cq_addr == UADDR);
    CHECK_EQ(copyreq_of(mp)->cq_size, 16u);
    CHECK(copyreq_of(mp)->cq_private == (mblk_t *)PRIV_CIN);
    CHECK_EQ(copyreq_of(mp)->cq_flag, 0u);
    CHECK(mp->b_cont == NULL);
    CHECK_EQ(mp->b_wptr - mp->b_rptr, (ptrdiff_t)sizeof(struct copyreq));

    /* answer as the stream head would: M_IOCDATA, copyresp, the data */
    cp = (struct copyresp *)(void *)mp->b_rptr;
    mp->b_datap->db_type = M_IOCDATA;
    cp->cp_rval = NULL;
    CHECK(cp->cp_private == (mblk_t *)PRIV_CIN);
    mp->b_wptr = mp->b_rptr + sizeof(struct copyresp);
    mp->b_cont = th_msg(M_DATA, 0, "0123456789abcdef", 16);
    mp = roundtrip(s, mp);
    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), M_IOCACK);
    CHECK_EQ(iocblk_of(mp)->ioc_cmd, T_CIN);
    CHECK_EQ(iocblk_of(mp)->ioc_id, id);
    CHECK_EQ(iocblk_of(mp)->ioc_rval, 7);
    CHECK_EQ(iocblk_of(mp)->ioc_error, 0);
    CHECK_EQ(iocblk_of(mp)->ioc_count, 0u);
    freemsg(mp);

    /* a failed copy (cp_rval set) is refused with EFAULT */
    req = th_ioctl_msg(T_CIN, TRANSPARENT, &uaddr, sizeof(uaddr));
    mp = roundtrip(s, req);
    CHECK(mp != NULL && th_msgtype(mp) == M_COPYIN);
    if (mp == NULL)
        return;
    mp->b_datap->db_type = M_IOCDATA;
    ((struct copyresp *)(void *)mp->b_rptr)->cp_rval = (caddr_t)1;
    mp = roundtrip(s, mp);
    CHECK(mp != NULL && th_msgtype(mp) == M_IOCNAK);
    if (mp != NULL) {
        CHECK_EQ(iocblk_of(mp)->ioc_error, EFAULT);
        freemsg(mp);
    }

    /* an explicit address wins; an I_STR-style (non transparent) M_IOCTL */
    mp = roundtrip(s, th_ioctl_msg(T_CIN_ADDR, 3, "xyz", 3));
    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_COPYIN);
        CHECK(copyreq_of(mp)->cq_addr == (caddr_t)0x5000);
        CHECK_EQ(copyreq_of(mp)->cq_size, 32u);
        CHECK(copyreq_of(mp)->cq_private == NULL);
        CHECK(mp->b_cont == NULL);
        freemsg(mp);
    }
}

/* mcopyout(9F): M_COPYOUT, dp becomes b_cont (old one freed); with dp NULL the
 * existing b_cont is the data; an M_IOCDATA can become an M_COPYIN. */
static void test_mcopyout(struct th_stream *s)
{
    caddr_t uaddr = UADDR;
    mblk_t *mp = roundtrip(s, th_ioctl_msg(T_COUT, TRANSPARENT, &uaddr, sizeof(uaddr)));

    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), M_COPYOUT);
    CHECK_EQ(copyreq_of(mp)->cq_cmd, T_COUT);
    CHECK(copyreq_of(mp)->cq_addr == UADDR);
    CHECK_EQ(copyreq_of(mp)->cq_size, 8u);
    CHECK(copyreq_of(mp)->cq_private == (mblk_t *)PRIV_COUT);
    CHECK(mp->b_cont != NULL);
    if (mp->b_cont != NULL) {
        CHECK_EQ(mp->b_cont->b_wptr - mp->b_cont->b_rptr, 8);
        CHECK_EQ(memcmp(mp->b_cont->b_rptr, "abcdefgh", 8), 0);
        CHECK(mp->b_cont->b_cont == NULL);
    }

    /* the head's M_IOCDATA for the copy-out; the driver turns it into a
     * copy-in request */
    mp->b_datap->db_type = M_IOCDATA;
    ((struct copyresp *)(void *)mp->b_rptr)->cp_rval = NULL;
    freemsg(mp->b_cont);
    mp->b_cont = NULL;
    mp = roundtrip(s, mp);
    CHECK(mp != NULL);
    if (mp == NULL)
        return;
    CHECK_EQ(th_msgtype(mp), M_COPYIN);
    CHECK_EQ(copyreq_of(mp)->cq_cmd, T_COUT);
    CHECK(copyreq_of(mp)->cq_addr == (caddr_t)0x7000);
    CHECK_EQ(copyreq_of(mp)->cq_size, 4u);
    CHECK(copyreq_of(mp)->cq_private == (mblk_t *)1);
    freemsg(mp);

    /* dp NULL: b_cont kept as the data */
    mp = roundtrip(s, th_ioctl_msg(T_COUT_KEEP, 4, "wxyz", 4));
    CHECK(mp != NULL);
    if (mp != NULL) {
        CHECK_EQ(th_msgtype(mp), M_COPYOUT);
        CHECK(copyreq_of(mp)->cq_addr == (caddr_t)0x6000);
        CHECK_EQ(copyreq_of(mp)->cq_size, 4u);
        CHECK(mp->b_cont != NULL);
        if (mp->b_cont != NULL)
            CHECK_EQ(memcmp(mp->b_cont->b_rptr, "wxyz", 4), 0);
        freemsg(mp);
    }
}

static void nop_free(caddr_t arg)
{
    (void)arg;
}

/* Direct transformations without a stream: address fallbacks, the dp length
 * rule of Solaris, and a leading block too small for a copyreq. */
static void test_copy_direct(void)
{
    mblk_t *mp, *dp;

    /* uaddr NULL on a non-transparent M_IOCTL: no address to find */
    mp = th_ioctl_msg(1, 8, "12345678", 8);
    mcopyin(mp, NULL, 8, NULL);
    CHECK_EQ(th_msgtype(mp), M_COPYIN);
    CHECK(copyreq_of(mp)->cq_addr == NULL);
    CHECK(mp->b_cont == NULL);
    freemsg(mp);

    /* transparent, but b_cont too short to hold an address */
    mp = th_ioctl_msg(1, TRANSPARENT, "ab", 2);
    mcopyout(mp, NULL, 2, NULL, NULL);
    CHECK_EQ(th_msgtype(mp), M_COPYOUT);
    CHECK(copyreq_of(mp)->cq_addr == NULL);
    freemsg(mp);

    /* dp shorter than size is extended when its buffer allows (Solaris) */
    mp = th_ioctl_msg(1, 0, NULL, 0);
    dp = allocb(64, BPRI_MED);
    CHECK(dp != NULL);
    mcopyout(mp, NULL, 64, (void *)0x10, dp);
    CHECK(mp->b_cont == dp);
    CHECK_EQ(dp->b_wptr - dp->b_rptr, 64);
    freemsg(mp);

    /* a leading block that holds an iocblk but not a copyreq: refused */
    static union {
        struct iocblk ioc;
        unsigned char raw[sizeof(struct iocblk) + 8];
    } small;
    static frtn_t fr = {nop_free, NULL};
    CHECK(sizeof(small) < sizeof(struct copyreq));
    memset(&small, 0, sizeof(small));
    mp = esballoc(small.raw, sizeof(small), BPRI_MED, &fr);
    CHECK(mp != NULL);
    if (mp != NULL) {
        mp->b_datap->db_type = M_IOCTL;
        small.ioc.ioc_cmd = 1;
        mp->b_wptr += sizeof(struct iocblk);
        fflush(stderr);
        mcopyin(mp, NULL, 4, (void *)0x10); /* prints a warning */
        CHECK_EQ(th_msgtype(mp), M_IOCNAK);
        CHECK_EQ(small.ioc.ioc_error, EINVAL);
        freemsg(mp);
    }
}

static void test_ioctl_helpers(void)
{
    struct th_stream *s;

    CHECK(register_strdev(&ddit_cdev, 0) > 0);
    s = th_open("ddit", O_RDWR);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    test_miocack(s);
    test_miocnak(s);
    test_mcopyin(s);
    test_mcopyout(s);
    CHECK_EQ(th_count(s), 0);
    th_close(s);
    CHECK_EQ(atomic_load(&ddit_other), 0);
    CHECK_EQ(atomic_load(&ddit_ioctls), 9);
    CHECK_EQ(atomic_load(&ddit_iocdata), 3);
    CHECK_EQ(unregister_strdev(&ddit_cdev, 0), 0);
}

int main(void)
{
    test_cmn_err(); /* first: it forks, best done before executive threads exist */
    test_devnums();
    test_ticks();
    test_getparm();
    test_kmem();
    test_copy_direct();
    test_ioctl_helpers();
    th_assert_no_blocks();
    return CHECK_RESULT();
}
