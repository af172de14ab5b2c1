/* SPDX-License-Identifier: MIT */
/*
 * test_xti_basic.c -- the parts of libxnet that need no transport provider
 * (XNS Issue 5): t_errno per thread, t_strerror/t_errlist/t_nerr, t_error,
 * t_sysconf, TBADF from every function on descriptors t_open did not
 * return, t_open's TBADFLAG and TBADNAME, t_free's TNOSTRUCTYPE.
 */
#include <pthread.h>
#include <unistd.h>

#include "xti_util.h"

static void *other_thread(void *arg)
{
    (void)arg;
    t_errno = TNODATA;
    return (void *)(intptr_t)t_errno;
}

/* XNS 5 t_error, t_strerror: one message per error code; t_errno per thread. */
static void test_errors(void)
{
    pthread_t th;
    void *r;

    CHECK_EQ(t_nerr, TPROTO + 1);
    for (int i = 1; i < t_nerr; i++)
        CHECK(t_errlist[i] != NULL && t_strerror(i) == t_errlist[i]);
    CHECK(strstr(t_strerror(999), "999") != NULL);
    t_errno = TBADF;
    CHECK_EQ(pthread_create(&th, NULL, other_thread, NULL), 0);
    pthread_join(th, &r);
    CHECK_EQ((intptr_t)r, TNODATA);
    CHECK_EQ(t_errno, TBADF); /* this thread's t_errno untouched */
    t_errno = TSYSERR;
    errno = EINTR;
    CHECK_EQ(t_error("test_xti_basic (expected output)"), 0);
    CHECK_EQ(errno, EINTR);
}

/* XNS 5 t_sysconf: _SC_T_IOV_MAX; anything else TBADFLAG. */
static void test_sysconf(void)
{
    CHECK_EQ(t_sysconf(_SC_T_IOV_MAX), T_IOV_MAX);
    CHECK_EQ(t_sysconf(-12345), -1);
    CHECK_EQ(t_errno, TBADFLAG);
}

/* Every function: TBADF on a descriptor that t_open did not return. */
static void test_badf_one(int fd)
{
    struct t_info info;
    struct t_bind b;
    struct t_call call;
    struct t_discon dis;
    struct t_unitdata ud;
    struct t_uderr ue;
    struct t_optmgmt om, omr;
    struct t_iovec iov = {.iov_base = &info, .iov_len = 1};
    char buf[8] = "x";
    int flags = 0;

    memset(&b, 0, sizeof(b));
    memset(&call, 0, sizeof(call));
    memset(&dis, 0, sizeof(dis));
    memset(&ud, 0, sizeof(ud));
    memset(&ue, 0, sizeof(ue));
    memset(&om, 0, sizeof(om));
    memset(&omr, 0, sizeof(omr));
    om.flags = T_CURRENT;
    XCHECK_ERR(t_accept(fd, fd, &call), TBADF);
    CHECK(t_alloc(fd, T_BIND, T_ALL) == NULL && t_errno == TBADF);
    XCHECK_ERR(t_bind(fd, NULL, NULL), TBADF);
    XCHECK_ERR(t_close(fd), TBADF);
    XCHECK_ERR(t_connect(fd, &call, NULL), TBADF);
    XCHECK_ERR(t_getinfo(fd, &info), TBADF);
    XCHECK_ERR(t_getprotaddr(fd, &b, &b), TBADF);
    XCHECK_ERR(t_getstate(fd), TBADF);
    XCHECK_ERR(t_listen(fd, &call), TBADF);
    XCHECK_ERR(t_look(fd), TBADF);
    XCHECK_ERR(t_optmgmt(fd, &om, &omr), TBADF);
    XCHECK_ERR(t_rcv(fd, buf, sizeof(buf), &flags), TBADF);
    XCHECK_ERR(t_rcvconnect(fd, &call), TBADF);
    XCHECK_ERR(t_rcvdis(fd, &dis), TBADF);
    XCHECK_ERR(t_rcvrel(fd), TBADF);
    XCHECK_ERR(t_rcvreldata(fd, &dis), TBADF);
    XCHECK_ERR(t_rcvudata(fd, &ud, &flags), TBADF);
    XCHECK_ERR(t_rcvuderr(fd, &ue), TBADF);
    XCHECK_ERR(t_rcvv(fd, &iov, 1, &flags), TBADF);
    XCHECK_ERR(t_rcvvudata(fd, &ud, &iov, 1, &flags), TBADF);
    XCHECK_ERR(t_snd(fd, buf, 1, 0), TBADF);
    XCHECK_ERR(t_snddis(fd, &call), TBADF);
    XCHECK_ERR(t_sndrel(fd), TBADF);
    XCHECK_ERR(t_sndreldata(fd, &dis), TBADF);
    XCHECK_ERR(t_sndudata(fd, &ud), TBADF);
    XCHECK_ERR(t_sndv(fd, &iov, 1, 0), TBADF);
    XCHECK_ERR(t_sndvudata(fd, &ud, &iov, 1), TBADF);
    XCHECK_ERR(t_unbind(fd), TBADF);
}

static void test_badf(void)
{
    int p[2];

    test_badf_one(-1);
    test_badf_one(100000);
    test_badf_one(0);
    /* a stream, but not a transport endpoint: t_sync says TBADF too */
    CHECK_EQ(strm_pipe(p), 0);
    test_badf_one(p[0]);
    XCHECK_ERR(t_sync(p[0]), TBADF);
    XCHECK_ERR(t_sync(-1), TBADF);
    strm_close(p[0]);
    strm_close(p[1]);
}

/* XNS 5 t_open: TBADFLAG for oflag other than O_RDWR [| O_NONBLOCK]; TBADNAME. */
static void test_open(void)
{
    XCHECK_ERR(t_open("/dev/ticots", O_RDONLY, NULL), TBADFLAG);
    XCHECK_ERR(t_open("/dev/ticots", O_RDWR | O_APPEND, NULL), TBADFLAG);
    XCHECK_ERR(t_open("/dev/streams/no-such-transport", O_RDWR, NULL), TBADNAME);
    XCHECK_ERR(t_open(NULL, O_RDWR, NULL), TBADNAME);
}

/* XNS 5 t_free: TNOSTRUCTYPE for an unknown type; NULL is harmless. */
static void test_free(void)
{
    void *p = malloc(16);

    XCHECK_ERR(t_free(p, 99), TNOSTRUCTYPE);
    free(p);
    CHECK_EQ(t_free(NULL, T_BIND), 0);
}

int main(void)
{
    test_errors();
    test_sysconf();
    test_badf();
    test_open();
    test_free();
    return xti_finish();
}
