/* SPDX-License-Identifier: MIT */
/*
 * test_head_open.c -- conformance of strm_open (device names, clone opens,
 * reopen, fattach-ed names), strm_fcntl and isastream (src/head/sd_open.c).
 * strm_close, the close-time drain and I_PUSH/I_POP are in test_head_close.c;
 * the test driver, module and shared helpers in head_open_util.h.
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
#include "head_open_util.h"

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
    char name[] = "/tmp/ustreams-test-attachXXXXXX";
    int tf = mkstemp(name); /* fattach covers an existing file */
    CHECK(tf >= 0);
    close(tf);
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
    b = strm_open(name, O_RDWR); /* the file again */
    CHECK(b >= 0);
    CHECK_EQ(isastream(b), 0);
    CHECK_EQ(close(b), 0);

    /* a STREAMS device name is not a file: nothing to cover */
    fd = strm_open("/dev/streams/clone/nuls", O_RDWR);
    errno = 0;
    CHECK_EQ(fattach(fd, "/dev/streams/echo"), -1);
    CHECK_EQ(errno, ENOENT);
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
    unlink(name);
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
