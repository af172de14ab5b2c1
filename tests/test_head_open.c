/* SPDX-License-Identifier: MIT */
/*
 * test_head_open.c -- conformance of strm_open/strm_close, I_PUSH/I_POP
 * (ust_sd_push/ust_sd_pop), the close-time drain, strm_fcntl and isastream
 * (src/head/sd_open.c).
 *
 * References: open(2) and close(2) (POSIX.1-2008, STREAMS sections),
 * streamio(7) (I_PUSH, I_POP, I_SETCLTIME, I_ANCHOR), fcntl(2), isastream(3C).
 * Cases are numbered by the reference page they check:
 *   O.1  open(2): "/dev/streams/<driver>" and "/dev/streams/clone/<driver>"
 *        open echo and nuls; a normal open gets minor 0, clone opens get
 *        distinct new minors
 *   O.2  open(2) (SVR4): a second non-clone open of an open device shares the
 *        stream and calls the driver's open again; closing one descriptor
 *        leaves the stream to the other
 *   O.3  open(2) errors: EFAULT, ENOENT, ENAMETOOLONG, EEXIST, ENOTDIR, the
 *        driver open's own error; nothing leaks (registry references,
 *        blocks, streams)
 *   O.4  open(2): concurrent opens and closes of one device from many threads
 *        share one stream at a time; every stream is closed at the end
 *   O.5  open(2): O_CLOEXEC gives FD_CLOEXEC, its absence none
 *   O.6  open(2) of a fattach(3C)-ed name: the attached stream, found before
 *        the device names, reopened (driver open called again); a pipe end
 *        likewise; the name keeps the stream until fdetach
 *   P.1  streamio I_PUSH / I_POP: order of modules, ust_sd_top; messages a
 *        popped module still holds are passed on, in order, not lost
 *   P.2  I_PUSH errors: EINVAL (NULL, empty, too long, unknown, a driver's
 *        name, past NSTRPUSH), the module open's error; I_POP: EINVAL with
 *        nothing pushed, EPERM at the anchor
 *   P.3  I_PUSH/I_POP after M_HANGUP: ENXIO; after M_ERROR: the error
 *   P.4  the same through strm_ioctl: I_PUSH, I_LOOK, I_POP and their errors
 *   C.1  close(2): closing the last descriptor closes every module and the
 *        driver, and frees every block
 *   C.2  streamio I_SETCLTIME: close waits up to the close time for a write
 *        queue to drain, then discards; close time 0 and O_NONBLOCK do not
 *        wait; a queue that drains ends the wait early (nothing is lost);
 *        I_SETCLTIME/I_GETCLTIME through strm_ioctl
 *   C.3  close(2): closing the last descriptor while another thread waits in
 *        the stream (in the head's wait, in read(2), in getmsg(2)) makes that
 *        thread return
 *   C.5  close(2) with a write held by SNDHOLD (streamio I_SWROPT): the held
 *        message is sent before the driver is closed
 *   C.4  close(2) errors: EBADF (not open, closed twice); a descriptor that is
 *        not a stream is closed by close(2)
 *   F.1  fcntl(2) F_GETFL/F_SETFL O_NONBLOCK
 *   F.2  fcntl(2) F_DUPFD/F_DUPFD_CLOEXEC: a new descriptor >= arg on the same
 *        stream; F_GETFD/F_SETFD; errors EBADF, EINVAL; non-stream
 *        descriptors pass through
 *   I.1  isastream(3C): 1, 0, -1/EBADF
 *   T.1  ust_sd_foreach sees exactly the open streams
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------ */
/* Test drivers and modules                                                 */
/* ------------------------------------------------------------------------ */
/* "tdrv": a sink driver that counts first opens, reopens, closes and the
 * M_DATA messages it receives; its open fails with tdrv_fail if set. */
static atomic_int tdrv_first, tdrv_reopen, tdrv_close, tdrv_data;
static atomic_int tdrv_fail;
static int tdrv_state; /* what q_ptr points at */

static int tdrv_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    (void)sflag;
    if (atomic_load(&tdrv_fail))
        return atomic_load(&tdrv_fail);
    if (q->q_ptr != NULL) {
        atomic_fetch_add(&tdrv_reopen, 1);
        return 0;
    }
    atomic_fetch_add(&tdrv_first, 1);
    q->q_ptr = WR(q)->q_ptr = &tdrv_state;
    qprocson(q);
    return 0;
}

static int tdrv_closef(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    q->q_ptr = WR(q)->q_ptr = NULL;
    atomic_fetch_add(&tdrv_close, 1);
    return 0;
}

static int tdrv_wput(queue_t *q, mblk_t *mp)
{
    (void)q;
    if (mp->b_datap->db_type == M_DATA)
        atomic_fetch_add(&tdrv_data, 1);
    freemsg(mp);
    return 0;
}

static int tdrv_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info tdrv_minfo = {
    .mi_idname = "tdrv", .mi_maxpsz = INFPSZ, .mi_hiwat = 4096, .mi_lowat = 1024};
static struct qinit tdrv_rinit = {
    .qi_putp = tdrv_rput, .qi_qopen = tdrv_open, .qi_qclose = tdrv_closef, .qi_minfo = &tdrv_minfo};
static struct qinit tdrv_winit = {.qi_putp = tdrv_wput, .qi_minfo = &tdrv_minfo};
static struct streamtab tdrv_info = {.st_rdinit = &tdrv_rinit, .st_wrinit = &tdrv_winit};
static struct cdevsw tdrv_cdev = {.d_name = "tdrv", .d_str = &tdrv_info, .d_flag = D_MP};

/* "tslow": a module whose write side queues M_DATA and passes it on from its
 * service procedure -- which does not run while the queue is noenable'd.
 * tslow_release_ms > 0: a timeout enables it that long after the open. */
static atomic_int tslow_release_ms;
static atomic_int tslow_opens, tslow_closes, tslow_fail;

static void tslow_release(void *arg)
{
    queue_t *wq = arg;
    enableok(wq);
    qenable(wq);
}

static int tslow_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    if (atomic_load(&tslow_fail))
        return atomic_load(&tslow_fail);
    if (q->q_ptr != NULL)
        return 0;
    noenable(WR(q));
    q->q_ptr = (void *)1;
    int ms = atomic_load(&tslow_release_ms);
    if (ms > 0)
        q->q_ptr =
            (void *)(intptr_t)qtimeout(WR(q), tslow_release, WR(q), drv_usectohz(ms * 1000L));
    atomic_fetch_add(&tslow_opens, 1);
    qprocson(q);
    return 0;
}

static int tslow_closef(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    if ((intptr_t)q->q_ptr > 1)
        quntimeout(WR(q), (timeout_id_t)(intptr_t)q->q_ptr);
    qprocsoff(q);
    q->q_ptr = NULL;
    atomic_fetch_add(&tslow_closes, 1);
    return 0;
}

static int tslow_put(queue_t *q, mblk_t *mp)
{
    if (!(q->q_flag & QREADR) && mp->b_datap->db_type == M_DATA) {
        putq(q, mp);
        return 0;
    }
    putnext(q, mp);
    return 0;
}

static int tslow_srv(queue_t *q)
{
    mblk_t *mp;
    while ((mp = getq(q)) != NULL)
        putnext(q, mp);
    return 0;
}

static struct module_info tslow_minfo = {
    .mi_idname = "tslow", .mi_maxpsz = INFPSZ, .mi_hiwat = 65536, .mi_lowat = 1024};
static struct qinit tslow_rinit = {.qi_putp = tslow_put,
                                   .qi_qopen = tslow_open,
                                   .qi_qclose = tslow_closef,
                                   .qi_minfo = &tslow_minfo};
static struct qinit tslow_winit = {
    .qi_putp = tslow_put, .qi_srvp = tslow_srv, .qi_minfo = &tslow_minfo};
static struct streamtab tslow_info = {.st_rdinit = &tslow_rinit, .st_wrinit = &tslow_winit};
static struct fmodsw tslow_fmod = {.f_name = "tslow", .f_str = &tslow_info, .f_flag = D_MP};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */
/* Send mp down from the head, as the head's write side does. */
static void head_send(struct stdata *sd, mblk_t *mp)
{
    queue_t *wq = sd->sd_wq;
    atomic_fetch_add(&ust_qpv(wq)->active, 1);
    putnext(wq, mp);
    ust_qrelease(wq);
}

/* The driver's read queue (bottom of the stream). */
static queue_t *driver_rq(struct stdata *sd)
{
    queue_t *q = sd->sd_wq;
    while (ust_qnext(q) != NULL)
        q = ust_qnext(q);
    return RD(q);
}

static mblk_t *data_msg(size_t len)
{
    mblk_t *mp = allocb(len, BPRI_MED);
    if (mp != NULL) {
        memset(mp->b_wptr, 'x', len);
        mp->b_wptr += len;
    }
    return mp;
}

static void count_one(struct stdata *sd, void *arg)
{
    (void)sd;
    (*(int *)arg)++;
}

static int nstreams(void)
{
    int n = 0;
    ust_sd_foreach(count_one, &n);
    return n;
}

static const char *top_name(struct stdata *sd)
{
    queue_t *q = ust_sd_top(sd);
    return q ? q->q_qinfo->qi_minfo->mi_idname : "";
}

static long modent_count(const char *name, int kind, int closes)
{
    struct ust_modent *e = ust_reg_find(name, kind);
    long n;
    if (e == NULL)
        return -1;
    n = closes ? atomic_load(&e->nclose) : atomic_load(&e->nopen);
    ust_reg_rele(e);
    return n;
}

static void settle(void)
{
    CHECK_EQ(ustreams_quiesce(5000), 0);
}

/* ------------------------------------------------------------------------ */
/* O: open                                                                  */
/* ------------------------------------------------------------------------ */
static void test_open_names(void)
{
    const char *drivers[] = {"echo", "nuls"};
    for (int d = 0; d < 2; d++) {
        char name[64], cname[64];
        snprintf(name, sizeof(name), "/dev/streams/%s", drivers[d]);
        snprintf(cname, sizeof(cname), "/dev/streams/clone/%s", drivers[d]);
        int fd = strm_open(name, O_RDWR);
        CHECK(fd >= 0);
        CHECK_EQ(isastream(fd), 1);
        struct stdata *sd = ust_sd_peek(fd);
        CHECK(sd != NULL);
        if (sd != NULL) {
            CHECK_EQ(getminor(sd->sd_dev), 0);
            CHECK(sd->sd_driver != NULL && strcmp(sd->sd_driver->name, drivers[d]) == 0);
            CHECK_EQ(sd->sd_closetime, UST_CLTIME_MS); /* streamio: default 15 s */
            CHECK_EQ(sd->sd_pushcnt, 0);
            CHECK(strcmp(top_name(sd), drivers[d]) == 0);
        }
        int c1 = strm_open(cname, O_RDWR), c2 = strm_open(cname, O_RDWR);
        CHECK(c1 >= 0 && c2 >= 0);
        struct stdata *s1 = ust_sd_peek(c1), *s2 = ust_sd_peek(c2);
        CHECK(s1 != NULL && s2 != NULL && s1 != s2 && s1 != sd);
        if (s1 && s2) {
            CHECK_NE(getminor(s1->sd_dev), 0);
            CHECK_NE(getminor(s2->sd_dev), 0);
            CHECK_NE(getminor(s1->sd_dev), getminor(s2->sd_dev));
            CHECK_EQ(getmajor(s1->sd_dev), getmajor(sd->sd_dev));
        }
        CHECK_EQ(strm_close(c1), 0);
        CHECK_EQ(strm_close(c2), 0);
        CHECK_EQ(strm_close(fd), 0);
        CHECK_EQ(isastream(fd), -1);
    }
}

static void test_open_shared(void)
{
    int base_first = atomic_load(&tdrv_first), base_re = atomic_load(&tdrv_reopen);
    int base_close = atomic_load(&tdrv_close);
    int before = nstreams();

    int a = strm_open("/dev/streams/tdrv", O_RDWR);
    int b = strm_open("/dev/streams/tdrv", O_RDWR);
    CHECK(a >= 0 && b >= 0 && a != b);
    struct stdata *sa = ust_sd_peek(a), *sb = ust_sd_peek(b);
    CHECK(sa != NULL && sa == sb);
    CHECK_EQ(atomic_load(&tdrv_first) - base_first, 1);
    CHECK_EQ(atomic_load(&tdrv_reopen) - base_re, 1); /* SVR4: the driver's open runs again */
    CHECK_EQ(nstreams() - before, 1);
    /* a reopen also reopens every pushed module */
    cred_t cr;
    ust_sd_cred(&cr);
    CHECK_EQ(ust_sd_push(sa, "tslow", &cr), 0);
    int c = strm_open("/dev/streams/tdrv", O_RDWR);
    CHECK(c >= 0 && ust_sd_peek(c) == sa);
    CHECK_EQ(atomic_load(&tdrv_reopen) - base_re, 2);
    CHECK_EQ(strm_close(c), 0);
    /* a clone open never shares */
    int d = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK(d >= 0 && ust_sd_peek(d) != sa);
    CHECK_EQ(strm_close(d), 0);

    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(atomic_load(&tdrv_close) - base_close, 1); /* the clone's */
    CHECK(ust_sd_peek(b) == sa);
    mblk_t *mp = data_msg(10);
    int data0 = atomic_load(&tdrv_data);
    atomic_store(&tslow_release_ms, 0);
    CHECK_EQ(ust_sd_pop(sa, &cr), 0);
    head_send(sa, mp); /* the stream still works through b */
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 1);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(atomic_load(&tdrv_close) - base_close, 2);
    CHECK_EQ(nstreams(), before);
    /* after the last close, a new open builds a new stream */
    a = strm_open("/dev/streams/tdrv", O_RDWR);
    CHECK(a >= 0);
    CHECK_EQ(atomic_load(&tdrv_first) - base_first, 3);
    CHECK_EQ(strm_close(a), 0);
}

static void test_open_errors(void)
{
    char longpath[PATH_MAX + 8];
    int before = nstreams();

    errno = 0;
    CHECK_EQ(strm_open(NULL, O_RDWR), -1);
    CHECK_EQ(errno, EFAULT);
    const char *noent[] = {"",
                           "/dev/streams/nosuch",
                           "/dev/streams/",
                           "/dev/streams/clone/",
                           "/dev/streams/clone/nosuch",
                           "/dev/streams/echo/",
                           "/dev/streams/echo/x",
                           "/dev/streams/averylongdrivername",
                           "/dev/stream/echo",
                           "/tmp/echo",
                           "echo",
                           "/dev/streams/nullmod" /* a module, not a driver */};
    for (size_t i = 0; i < sizeof(noent) / sizeof(noent[0]); i++) {
        errno = 0;
        CHECK_EQ(strm_open(noent[i], O_RDWR), -1);
        CHECK_EQ(errno, ENOENT);
    }
    memset(longpath, 'a', sizeof(longpath));
    memcpy(longpath, "/dev/streams/", 13);
    longpath[sizeof(longpath) - 1] = '\0';
    errno = 0;
    CHECK_EQ(strm_open(longpath, O_RDWR), -1);
    CHECK_EQ(errno, ENAMETOOLONG);
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/echo", O_RDWR | O_CREAT | O_EXCL), -1);
    CHECK_EQ(errno, EEXIST);
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/echo", O_RDONLY | O_DIRECTORY), -1);
    CHECK_EQ(errno, ENOTDIR);

    /* the driver's open fails: its errno, by both names, nothing left */
    int errs[] = {ENXIO, EBUSY};
    for (int i = 0; i < 2; i++) {
        atomic_store(&tdrv_fail, errs[i]);
        errno = 0;
        CHECK_EQ(strm_open("/dev/streams/tdrv", O_RDWR), -1);
        CHECK_EQ(errno, errs[i]);
        errno = 0;
        CHECK_EQ(strm_open("/dev/streams/clone/tdrv", O_RDWR), -1);
        CHECK_EQ(errno, errs[i]);
    }
    atomic_store(&tdrv_fail, 0);
    /* a reopen that fails drops the new descriptor, keeps the stream */
    int a = strm_open("/dev/streams/tdrv", O_RDWR);
    CHECK(a >= 0);
    atomic_store(&tdrv_fail, EIO);
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/tdrv", O_RDWR), -1);
    CHECK_EQ(errno, EIO);
    atomic_store(&tdrv_fail, 0);
    CHECK_EQ(isastream(a), 1);
    CHECK_EQ(atomic_load(&ust_sd_peek(a)->sd_refs), 1);
    CHECK_EQ(strm_close(a), 0);

    CHECK_EQ(nstreams(), before);
    settle();
    CHECK_NO_BLOCKS();
}

#define OPEN_THREADS 8
#define OPEN_ROUNDS  200

static void *open_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < OPEN_ROUNDS; i++) {
        int fd = strm_open("/dev/streams/tdrv", O_RDWR);
        if (!CHECK(fd >= 0))
            continue;
        /* while we hold it open, the device has exactly one instance */
        int live = atomic_load(&tdrv_first) - atomic_load(&tdrv_close);
        CHECK_EQ(live, 1);
        if (i % 3 == 0)
            sched_yield();
        CHECK_EQ(strm_close(fd), 0);
    }
    return NULL;
}

static void test_open_concurrent(void)
{
    pthread_t t[OPEN_THREADS];
    int before = nstreams();

    for (int i = 0; i < OPEN_THREADS; i++)
        pthread_create(&t[i], NULL, open_thread, NULL);
    for (int i = 0; i < OPEN_THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&tdrv_first), atomic_load(&tdrv_close));
    CHECK_EQ(nstreams(), before);
}

static void test_open_fattach(void)
{
    const char *name = "/tmp/ustreams-test-attach";
    int before = nstreams();
    int re = atomic_load(&tdrv_reopen);
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    CHECK_EQ(fattach(fd, name), 0);
    int b = strm_open(name, O_RDWR);
    CHECK(b >= 0 && b != fd);
    CHECK(ust_sd_peek(b) == sd);
    CHECK_EQ(atomic_load(&tdrv_reopen) - re, 1);
    /* a failing reopen through the name: error, nothing changes */
    atomic_store(&tdrv_fail, ENXIO);
    errno = 0;
    CHECK_EQ(strm_open(name, O_RDWR), -1);
    CHECK_EQ(errno, ENXIO);
    atomic_store(&tdrv_fail, 0);
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(strm_close(b), 0);
    errno = 0;
    CHECK_EQ(strm_open(name, O_RDWR | O_CREAT | O_EXCL), -1); /* open(2): it exists */
    CHECK_EQ(errno, EEXIST);
    CHECK_EQ(nstreams() - before, 1); /* the name holds it */
    CHECK_EQ(fdetach(name), 0);
    CHECK_EQ(nstreams(), before);
    errno = 0;
    CHECK_EQ(strm_open(name, O_RDWR), -1);
    CHECK_EQ(errno, ENOENT);

    /* a name under /dev/streams/ is looked up among fattach names first */
    fd = strm_open("/dev/streams/clone/nuls", O_RDWR);
    CHECK_EQ(fattach(fd, "/dev/streams/echo"), 0);
    b = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(b >= 0 && ust_sd_peek(b) == ust_sd_peek(fd));
    CHECK_EQ(fdetach("/dev/streams/echo"), 0);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(strm_close(fd), 0);

    /* a pipe end */
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(fattach(p[0], name), 0);
    b = strm_open(name, O_RDWR);
    CHECK(b >= 0 && ust_sd_peek(b) == ust_sd_peek(p[0]));
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(fdetach(name), 0);
    CHECK_EQ(isastream(b), 1);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(nstreams(), before);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_open_cloexec(void)
{
    int a = strm_open("/dev/streams/clone/echo", O_RDWR);
    int b = strm_open("/dev/streams/clone/echo", O_RDWR | O_CLOEXEC);
    CHECK(a >= 0 && b >= 0);
    CHECK_EQ(fcntl(a, F_GETFD) & FD_CLOEXEC, 0);
    CHECK_EQ(fcntl(b, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    CHECK_EQ(strm_fcntl(b, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_close(b), 0);
}

/* ------------------------------------------------------------------------ */
/* P: push and pop                                                          */
/* ------------------------------------------------------------------------ */
static void test_push_pop(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
    CHECK_EQ(ust_sd_push(sd, "srvmod", &cr), 0);
    CHECK_EQ(sd->sd_pushcnt, 2);
    CHECK(strcmp(top_name(sd), "srvmod") == 0);
    CHECK(strcmp(ust_qnext(ust_sd_top(sd))->q_qinfo->qi_minfo->mi_idname, "nullmod") == 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK(strcmp(top_name(sd), "nullmod") == 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK(strcmp(top_name(sd), "echo") == 0);
    CHECK_EQ(sd->sd_pushcnt, 0);
    CHECK_EQ(strm_close(fd), 0);

    /* tslow holds 3 messages (its service procedure never runs); the pop
     * sends them on to the driver */
    atomic_store(&tslow_release_ms, 0);
    fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    sd = ust_sd_peek(fd);
    CHECK_EQ(ust_sd_push(sd, "tslow", &cr), 0);
    int data0 = atomic_load(&tdrv_data);
    for (int i = 0; i < 3; i++)
        head_send(sd, data_msg(16));
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 3);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_push_errors(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(ust_sd_push(sd, NULL, &cr), EINVAL);
    CHECK_EQ(ust_sd_push(sd, "", &cr), EINVAL);
    CHECK_EQ(ust_sd_push(sd, "nullmodxx", &cr), EINVAL); /* FMNAMESZ + 1 */
    CHECK_EQ(ust_sd_push(sd, "nosuch", &cr), EINVAL);
    CHECK_EQ(ust_sd_push(sd, "echo", &cr), EINVAL); /* a driver, not a module */
    CHECK_EQ(sd->sd_pushcnt, 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), EINVAL); /* nothing to pop */

    /* the module's open fails: its error, nothing pushed */
    atomic_store(&tslow_fail, EPROTO);
    CHECK_EQ(ust_sd_push(sd, "tslow", &cr), EPROTO);
    atomic_store(&tslow_fail, 0);
    CHECK_EQ(sd->sd_pushcnt, 0);
    CHECK(strcmp(top_name(sd), "echo") == 0);

    /* NSTRPUSH */
    int n = 0;
    while (n < UST_NSTRPUSH && ust_sd_push(sd, "nullmod", &cr) == 0)
        n++;
    CHECK_EQ(n, UST_NSTRPUSH);
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), EINVAL);
    CHECK_EQ(sd->sd_pushcnt, UST_NSTRPUSH);

    /* anchor (I_ANCHOR) at 2 modules: pops stop there with EPERM */
    ust_lock(&sd->sd_plumb);
    sd->sd_anchor = 2;
    ust_unlock(&sd->sd_plumb);
    while (sd->sd_pushcnt > 2)
        CHECK_EQ(ust_sd_pop(sd, &cr), 0);
    CHECK_EQ(ust_sd_pop(sd, &cr), EPERM);
    CHECK_EQ(sd->sd_pushcnt, 2);
    /* close still pops everything (C.1 checks the count) */
    long closes = modent_count("nullmod", UST_MODULE, 1);
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(modent_count("nullmod", UST_MODULE, 1) - closes, 2);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_push_hangup_error(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    for (int kind = 0; kind < 2; kind++) {
        int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
        struct stdata *sd = ust_sd_peek(fd);
        if (!CHECK(sd != NULL))
            return;
        CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
        if (kind == 0)
            CHECK(putnextctl(driver_rq(sd), M_HANGUP));
        else
            CHECK(putnextctl1(driver_rq(sd), M_ERROR, EPROTO));
        int want = kind == 0 ? ENXIO : EPROTO;
        CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), want);
        CHECK_EQ(ust_sd_pop(sd, &cr), want);
        CHECK_EQ(sd->sd_pushcnt, 1);
        /* a reopen of a hung-up or failed stream is EIO (POSIX open(2)) */
        CHECK_EQ(strm_close(fd), 0);
    }
    int a = strm_open("/dev/streams/tdrv", O_RDWR);
    CHECK(a >= 0);
    CHECK(putnextctl(driver_rq(ust_sd_peek(a)), M_HANGUP));
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/tdrv", O_RDWR), -1);
    CHECK_EQ(errno, EIO);
    CHECK_EQ(strm_close(a), 0);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_push_ioctl(void)
{
    char name[FMNAMESZ + 1];
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), -1); /* streamio: EINVAL, no module */
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), 0);
    CHECK(strcmp(name, "srvmod") == 0);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    CHECK_EQ(strm_ioctl(fd, I_LOOK, name), 0);
    CHECK(strcmp(name, "nullmod") == 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "echo"), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nosuchmod"), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, NULL), -1);
    CHECK(errno == EFAULT || errno == EINVAL);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* C: close                                                                 */
/* ------------------------------------------------------------------------ */
static void test_close_pops(void)
{
    cred_t cr;
    ust_sd_cred(&cr);
    long nm = modent_count("nullmod", UST_MODULE, 1);
    long sm = modent_count("srvmod", UST_MODULE, 1);
    long ec = modent_count("echo", UST_DRIVER, 1);
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return;
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
    CHECK_EQ(ust_sd_push(sd, "srvmod", &cr), 0);
    CHECK_EQ(ust_sd_push(sd, "nullmod", &cr), 0);
    for (int i = 0; i < 5; i++)
        head_send(sd, data_msg(100)); /* echoed back up to the head */
    settle();
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(modent_count("nullmod", UST_MODULE, 1) - nm, 2);
    CHECK_EQ(modent_count("srvmod", UST_MODULE, 1) - sm, 1);
    CHECK_EQ(modent_count("echo", UST_DRIVER, 1) - ec, 1);
    settle();
    CHECK_NO_BLOCKS();
}

/* Open tdrv with tslow pushed, queue n messages in tslow, then close with
 * close time ms (and oflag); returns how long the close took. */
static long close_with_stuck(int n, long ms, int oflag)
{
    cred_t cr;
    ust_sd_cred(&cr);
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR | oflag);
    struct stdata *sd = ust_sd_peek(fd);
    if (!CHECK(sd != NULL))
        return -1;
    CHECK_EQ(ust_sd_push(sd, "tslow", &cr), 0);
    for (int i = 0; i < n; i++)
        head_send(sd, data_msg(64));
    ust_lock(&sd->sd_lock);
    sd->sd_closetime = ms;
    ust_unlock(&sd->sd_lock);
    long long t0 = now_ms();
    CHECK_EQ(strm_close(fd), 0);
    return (long)(now_ms() - t0);
}

static void test_close_drain(void)
{
    int data0;
    long took;

    /* stuck: close waits the close time, then discards */
    atomic_store(&tslow_release_ms, 0);
    data0 = atomic_load(&tdrv_data);
    took = close_with_stuck(3, 300, 0);
    CHECK(took >= 290);
    CHECK(took < 5000);
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 0);
    settle();
    CHECK_NO_BLOCKS();

    /* close time 0: no wait */
    took = close_with_stuck(3, 0, 0);
    CHECK(took < 250);
    /* O_NONBLOCK: no wait */
    took = close_with_stuck(3, 10000, O_NONBLOCK);
    CHECK(took < 250);
    /* nothing queued: no wait */
    took = close_with_stuck(0, 10000, 0);
    CHECK(took < 250);
    settle();
    CHECK_NO_BLOCKS();

    /* the queue drains after ~150 ms: close returns then, nothing lost */
    atomic_store(&tslow_release_ms, 150);
    data0 = atomic_load(&tdrv_data);
    took = close_with_stuck(4, 10000, 0);
    atomic_store(&tslow_release_ms, 0);
    CHECK(took >= 100);
    CHECK(took < 5000);
    CHECK_EQ(atomic_load(&tdrv_data) - data0, 4);
    settle();
    CHECK_NO_BLOCKS();
}

/* I_SETCLTIME through strm_ioctl. */
static void test_close_cltime_ioctl(void)
{
    int ms = -1;
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK_EQ(strm_ioctl(fd, I_GETCLTIME, &ms), 0);
    CHECK_EQ(ms, UST_CLTIME_MS);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "tslow"), 0);
    struct stdata *sd = ust_sd_peek(fd);
    for (int i = 0; i < 2; i++)
        head_send(sd, data_msg(32));
    ms = 200;
    CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
    ms = -1;
    CHECK_EQ(strm_ioctl(fd, I_GETCLTIME, &ms), 0);
    CHECK_EQ(ms, 200);
    long long t0 = now_ms();
    CHECK_EQ(strm_close(fd), 0);
    CHECK(now_ms() - t0 >= 190);
    CHECK(now_ms() - t0 < 5000);

    fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "tslow"), 0);
    sd = ust_sd_peek(fd);
    head_send(sd, data_msg(32));
    ms = 0;
    CHECK_EQ(strm_ioctl(fd, I_SETCLTIME, &ms), 0);
    t0 = now_ms();
    CHECK_EQ(strm_close(fd), 0);
    CHECK(now_ms() - t0 < 250);
    settle();
    CHECK_NO_BLOCKS();
}

/* A thread inside a call on the stream, waiting as a blocked read does. */
struct waiter {
    int fd;
    atomic_int state; /* 0 starting, 1 waiting, 2 returned */
    int err;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    int err;
    struct stdata *sd = ust_sd_get(w->fd, &err);
    if (sd == NULL) {
        w->err = err;
        atomic_store(&w->state, 2);
        return NULL;
    }
    ust_lock(&sd->sd_lock);
    atomic_store(&w->state, 1);
    err = 0;
    while (!(sd->sd_flag & STRCLOSE) && err == 0)
        err = ust_sd_wait(sd, &sd->sd_rwait, 0);
    w->err = (sd->sd_flag & STRCLOSE) ? EBADF : err;
    ust_unlock(&sd->sd_lock);
    ust_sd_put(sd);
    atomic_store(&w->state, 2);
    return NULL;
}

static void test_close_wakes(void)
{
    struct waiter w = {.fd = strm_open("/dev/streams/clone/echo", O_RDWR)};
    pthread_t t;
    CHECK(w.fd >= 0);
    pthread_create(&t, NULL, wait_thread, &w);
    while (atomic_load(&w.state) == 0)
        sleep_ms(1);
    sleep_ms(20);
    long long t0 = now_ms();
    CHECK_EQ(strm_close(w.fd), 0);
    CHECK(now_ms() - t0 < 5000);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&w.state), 2);
    CHECK_EQ(w.err, EBADF);
}

struct blocked_call {
    int fd;
    int getmsg; /* 1: getmsg(2), 0: read(2) */
    atomic_int started;
    long ret;
    int err;
};

static void *blocked_thread(void *arg)
{
    struct blocked_call *b = arg;
    char buf[16];
    atomic_store(&b->started, 1);
    errno = 0;
    if (b->getmsg) {
        struct strbuf data = {.maxlen = sizeof(buf), .buf = buf};
        int flags = 0;
        b->ret = getmsg(b->fd, NULL, &data, &flags);
    } else {
        b->ret = strm_read(b->fd, buf, sizeof(buf));
    }
    b->err = errno;
    return NULL;
}

static void test_close_wakes_read(void)
{
    for (int g = 0; g < 2; g++) {
        struct blocked_call b = {.fd = strm_open("/dev/streams/clone/echo", O_RDWR), .getmsg = g};
        pthread_t t;
        CHECK(b.fd >= 0);
        pthread_create(&t, NULL, blocked_thread, &b);
        while (!atomic_load(&b.started))
            sleep_ms(1);
        sleep_ms(50);
        long long t0 = now_ms();
        CHECK_EQ(strm_close(b.fd), 0);
        pthread_join(t, NULL);
        CHECK(now_ms() - t0 < 5000);
        /* the call returns: EBADF, or end of file */
        CHECK(b.ret == 0 || (b.ret == -1 && b.err == EBADF));
    }
    settle();
    CHECK_NO_BLOCKS();
}

static void test_close_hold(void)
{
    int fd = strm_open("/dev/streams/clone/tdrv", O_RDWR);
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDHOLD), 0);
    int data0 = atomic_load(&tdrv_data);
    CHECK_EQ(strm_write(fd, "ab", 2), 2);
    CHECK_EQ(strm_write(fd, "cd", 2), 2);
    int held = atomic_load(&tdrv_data) - data0; /* the first may go at once */
    CHECK(held <= 1);
    CHECK_EQ(strm_close(fd), 0);
    CHECK(atomic_load(&tdrv_data) - data0 > held);
    settle();
    CHECK_NO_BLOCKS();
}

static void test_close_errors(void)
{
    int p[2];
    errno = 0;
    CHECK_EQ(strm_close(-1), -1);
    CHECK_EQ(errno, EBADF);
    int fd = strm_open("/dev/streams/clone/nuls", O_RDWR);
    CHECK_EQ(strm_close(fd), 0);
    errno = 0;
    CHECK_EQ(strm_close(fd), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(strm_close(p[0]), 0); /* not a stream: close(2) */
    CHECK_EQ(fcntl(p[0], F_GETFD), -1);
    close(p[1]);
}

/* ------------------------------------------------------------------------ */
/* F: fcntl, I: isastream, T: table                                         */
/* ------------------------------------------------------------------------ */
static void test_fcntl_fl(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    CHECK_EQ(strm_fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
    CHECK_EQ(strm_fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    CHECK_EQ(strm_fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(strm_fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
    CHECK_EQ(strm_fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR); /* access mode unchanged */
    CHECK(sd != NULL && (sd->sd_oflag & O_NONBLOCK));
    CHECK_EQ(strm_fcntl(fd, F_SETFL, 0), 0);
    CHECK_EQ(strm_fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    CHECK_EQ(strm_close(fd), 0);
    int ro = strm_open("/dev/streams/clone/echo", O_RDONLY | O_NONBLOCK);
    CHECK_EQ(strm_fcntl(ro, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY | O_NONBLOCK);
    CHECK_EQ(strm_close(ro), 0);
}

static void test_fcntl_dup(void)
{
    int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    struct stdata *sd = ust_sd_peek(fd);
    int d = strm_fcntl(fd, F_DUPFD, 0);
    CHECK(d >= 0 && d != fd);
    CHECK(ust_sd_peek(d) == sd);
    CHECK_EQ(strm_fcntl(d, F_GETFD) & FD_CLOEXEC, 0);
    int hi = strm_fcntl(fd, F_DUPFD_CLOEXEC, 200);
    CHECK(hi >= 200);
    CHECK(ust_sd_peek(hi) == sd);
    CHECK_EQ(strm_fcntl(hi, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    CHECK_EQ(strm_fcntl(hi, F_SETFD, 0), 0);
    CHECK_EQ(strm_fcntl(hi, F_GETFD) & FD_CLOEXEC, 0);
    CHECK_EQ(atomic_load(&sd->sd_refs), 3);
    /* the original may go; the duplicates keep the stream */
    CHECK_EQ(strm_close(fd), 0);
    CHECK_EQ(isastream(d), 1);
    CHECK_EQ(strm_close(d), 0);
    CHECK_EQ(isastream(hi), 1);
    CHECK_EQ(strm_close(hi), 0);
    CHECK_EQ(isastream(hi), -1);

    fd = strm_open("/dev/streams/clone/echo", O_RDWR);
    errno = 0;
    CHECK_EQ(strm_fcntl(fd, F_DUPFD, -1), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_fcntl(fd, F_DUPFD, INT_MAX), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(strm_fcntl(fd, 0x7fff), -1); /* no such command: fcntl(2)'s EINVAL */
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
    errno = 0;
    CHECK_EQ(strm_fcntl(fd, F_GETFL), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(strm_fcntl(-5, F_GETFD), -1);
    CHECK_EQ(errno, EBADF);

    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(strm_fcntl(p[0], F_SETFL, O_NONBLOCK), 0); /* passes through */
    CHECK_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, O_NONBLOCK);
    int pd = strm_fcntl(p[0], F_DUPFD, 0);
    CHECK(pd >= 0);
    CHECK_EQ(isastream(pd), 0);
    close(pd);
    close(p[0]);
    close(p[1]);
}

static void test_isastream(void)
{
    int p[2];
    int fd = strm_open("/dev/streams/clone/nuls", O_RDWR);
    CHECK_EQ(isastream(fd), 1);
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(isastream(p[0]), 0);
    close(p[0]);
    close(p[1]);
    errno = 0;
    CHECK_EQ(isastream(p[0]), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(isastream(-1), -1);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(strm_close(fd), 0);
}

static void test_table(void)
{
    int before = nstreams();
    int a = strm_open("/dev/streams/clone/echo", O_RDWR);
    int b = strm_open("/dev/streams/clone/nuls", O_RDWR);
    int c = strm_fcntl(a, F_DUPFD, 0);
    CHECK_EQ(nstreams() - before, 2);
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(nstreams() - before, 2);
    CHECK_EQ(strm_close(c), 0);
    CHECK_EQ(nstreams() - before, 1);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(nstreams(), before);
}

int main(void)
{
    CHECK(register_strdev(&tdrv_cdev, 0) > 0);
    CHECK_EQ(register_strmod(&tslow_fmod), 0);

    test_open_names();
    test_open_shared();
    test_open_errors();
    test_open_concurrent();
    test_open_cloexec();
    test_open_fattach();
    test_push_pop();
    test_push_errors();
    test_push_hangup_error();
    test_push_ioctl();
    test_close_pops();
    test_close_drain();
    test_close_cltime_ioctl();
    test_close_wakes();
    test_close_wakes_read();
    test_close_hold();
    test_close_errors();
    test_fcntl_fl();
    test_fcntl_dup();
    test_isastream();
    test_table();

    /* every reference to the test driver and module was given back */
    CHECK_EQ(unregister_strmod(&tslow_fmod), 0);
    CHECK_EQ(unregister_strdev(&tdrv_cdev, 0), 0);
    settle();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
