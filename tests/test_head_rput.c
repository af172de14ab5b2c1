/* SPDX-License-Identifier: MIT */
/*
 * test_head_rput.c -- conformance of the stream head's queue pair and of its
 * read put procedure for data messages, ioctl replies, write-side back-enable
 * and flow control (src/head/sd_rput.c).  The control messages (M_SETOPTS,
 * M_ERROR, M_HANGUP, M_FLUSH, M_SIG) and I_SETSIG events are in
 * test_head_rput_ctl.c; shared helpers in head_rput_util.h.
 *
 * The stream is "/dev/streams/hdrv" (tests/head_tdrv.h): the test sends
 * messages up with hdrv_up() and sees what comes down with hdrv_down().
 * References: streamio(7) (SVR4.2 / Solaris), the STREAMS Programming Guide
 * ("Stream Head", "Message Types", appendix "Message Types": M_SETOPTS,
 * M_ERROR, M_HANGUP, M_FLUSH, M_SIG, M_PCSIG, M_IOCACK, M_COPYIN, ...),
 * stroptions(9S), poll(2).  Cases:
 *   H.1  stream head queue pair: QHEAD on both queues, q_ptr the stdata,
 *        ust_sd_of, module name "strhead", water marks STRHIGH/STRLOW,
 *        INFPSZ, procedures on
 *   H.2  data messages (M_DATA, M_PROTO, M_PCPROTO, M_PASSFP) are queued in
 *        STREAMS order; POLLIN/POLLRDNORM for normal (poll(2) on the
 *        descriptor), POLLPRI for high priority (strm_poll: the descriptor
 *        shows it as POLLIN, docs/STREAMHEAD.md); a second high-priority message
 *        at the head is discarded
 *   H.9  M_IOCACK/M_IOCNAK/M_COPYIN/M_COPYOUT go to the ioctl in progress
 *        only with its id and only once; stale, short or unexpected replies
 *        are freed; the waiter is woken; I_STR completes through it; an
 *        M_IOCTL reaching the head is
 *        refused with M_IOCNAK EINVAL; M_READ, M_IOCDATA, M_CTL are freed
 *   H.10 back-enable of the write queue: writers woken, POLLOUT back,
 *        S_OUTPUT; inside another head's ust_sd_lockq the locked part is owed
 *        and done at ust_sd_unlockq (two heads' locks never nest)
 *   H.11 flow control at the head read queue: full at SO_HIWAT, canputnext
 *        from below fails; reading drains it and back-enables the driver
 *   H.12 nothing leaks: ustreams_blockstats shows no block outstanding
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "head_tdrv.h"
#include "sthead.h"
#include "head_rput_util.h"

/* ------------------------------------------------------------------------ */
/* H.1 the queue pair                                                       */
/* ------------------------------------------------------------------------ */
static void test_headinit(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    CHECK(sd != NULL);
    queue_t *rq = sd->sd_rq, *wq = sd->sd_wq;
    CHECK(rq != NULL && wq == WR(rq));
    CHECK(ust_qflags(rq) & QHEAD);
    CHECK(ust_qflags(wq) & QHEAD);
    CHECK(!(ust_qflags(rq) & QPROCSOFF));
    CHECK(rq->q_ptr == sd && wq->q_ptr == sd);
    CHECK(ust_sd_of(rq) == sd && ust_sd_of(wq) == sd);
    CHECK(ust_sd_of(atomic_load(&hdrv_rq)) == NULL);
    CHECK(ust_sd_of(NULL) == NULL);
    CHECK(strcmp(rq->q_qinfo->qi_minfo->mi_idname, "strhead") == 0);
    CHECK(rq->q_qinfo->qi_srvp != NULL && wq->q_qinfo->qi_srvp != NULL);
    CHECK_EQ(rq->q_hiwat, UST_STRHIGH);
    CHECK_EQ(rq->q_lowat, UST_STRLOW);
    CHECK_EQ(rq->q_maxpsz, INFPSZ);
    CHECK_EQ(rq->q_minpsz, 0);
    CHECK(ust_qpv(rq)->head_enable != NULL && ust_qpv(wq)->head_enable != NULL);
    CHECK_EQ(strm_close(fd), 0);

    /* a head on its own, without a stream below */
    struct stdata *h = ust_sd_alloc();
    CHECK(h != NULL);
    CHECK(ust_sd_of(h->sd_rq) == h);
    ust_sd_free(h);
}

/* ------------------------------------------------------------------------ */
/* H.2 data messages                                                        */
/* ------------------------------------------------------------------------ */
/* strm_poll's events (the stream's own, POLLPRI included). */
static short spollev(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI | POLLOUT | POLLRDNORM};
    return strm_poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static void test_data(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    int bytes = -1;

    CHECK(!(pollev(fd) & (POLLIN | POLLPRI)));
    hdrv_up_str(0, "n0");
    CHECK((pollev(fd) & (POLLIN | POLLRDNORM)) == (POLLIN | POLLRDNORM));
    CHECK(!(spollev(fd) & POLLPRI));
    hdrv_up(hmsg2(M_PROTO, 2, "c", 1, "d", 1));
    hdrv_up(hmsg(M_PCPROTO, 0, "p1"));
    CHECK(spollev(fd) & POLLPRI);
    CHECK_EQ(pollev(fd) & (POLLIN | POLLPRI), POLLIN); /* no out-of-band on the socket */
    hdrv_up(hmsg(M_PCPROTO, 0, "p2")); /* a second one is discarded */
    hdrv_up(hmsg(M_PASSFP, 0, "f"));
    CHECK_EQ(ust_sd_nread(sd, &bytes), 4);
    CHECK_EQ(bytes, 0); /* the M_PCPROTO first: no M_DATA block */

    /* order: high priority, band 2, band 0 FIFO */
    queue_t *q = sd->sd_rq;
    mblk_t *m = q->q_first;
    CHECK(m && m->b_datap->db_type == M_PCPROTO && m->b_rptr[1] == '1');
    m = m ? m->b_next : NULL;
    CHECK(m && m->b_datap->db_type == M_PROTO && m->b_band == 2);
    m = m ? m->b_next : NULL;
    CHECK(m && m->b_datap->db_type == M_DATA);
    m = m ? m->b_next : NULL;
    CHECK(m && m->b_datap->db_type == M_PASSFP);

    /* a zero-length M_DATA is a message too */
    hdrv_up(hmsg2(M_DATA, 0, NULL, 0, NULL, 0));
    CHECK_EQ(ust_sd_nread(sd, NULL), 5);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.9 ioctl replies and other types                                        */
/* ------------------------------------------------------------------------ */
static mblk_t *ioc_msg(unsigned char type, uint_t id)
{
    union ioctypes u;
    memset(&u, 0, sizeof(u));
    if (type == M_COPYIN || type == M_COPYOUT)
        u.copyreq.cq_id = id;
    else
        u.iocblk.ioc_id = id;
    return hmsg2(type, 0, &u, sizeof(u), NULL, 0);
}

static atomic_int ioc_woken;

/* An I_STR on another thread. */
struct istr_call {
    int fd, ret;
    atomic_int done;
};

static void *istr_thread(void *arg)
{
    struct istr_call *c = arg;
    struct strioctl ic = {.ic_cmd = 4321, .ic_timout = 5};
    c->ret = strm_ioctl(c->fd, I_STR, &ic);
    atomic_store(&c->done, 1);
    return NULL;
}

static void *ioc_waiter(void *arg)
{
    struct stdata *sd = arg;
    ust_lock(&sd->sd_lock);
    while (!sd->sd_iocblk)
        ust_sd_wait(sd, &sd->sd_iwait, 0);
    ust_unlock(&sd->sd_lock);
    atomic_store(&ioc_woken, 1);
    return NULL;
}

static void test_ioc_replies(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    pthread_t t;
    hdrv_down_clear();

    /* no ioctl in progress: freed */
    hdrv_up(ioc_msg(M_IOCACK, 5));
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_iocblk == NULL);
    sd->sd_iocbusy = 1;
    sd->sd_iocid = 77;
    ust_unlock(&sd->sd_lock);

    atomic_store(&ioc_woken, 0);
    CHECK_EQ(pthread_create(&t, NULL, ioc_waiter, sd), 0);
    hdrv_up(ioc_msg(M_IOCNAK, 76));                   /* wrong id */
    hdrv_up(hmsg2(M_IOCACK, 0, "short", 5, NULL, 0)); /* too short */
    sleep_ms(30);
    CHECK_EQ(atomic_load(&ioc_woken), 0);
    mblk_t *ack = ioc_msg(M_IOCACK, 77);
    hdrv_up(ack);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&ioc_woken), 1);
    hdrv_up(ioc_msg(M_IOCNAK, 77)); /* a second reply: freed */
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_iocblk == ack);
    mblk_t *got = sd->sd_iocblk;
    sd->sd_iocblk = NULL;
    ust_unlock(&sd->sd_lock);
    freemsg(got);

    /* M_COPYIN / M_COPYOUT carry the id in cq_id */
    hdrv_up(ioc_msg(M_COPYOUT, 77));
    ust_lock(&sd->sd_lock);
    got = sd->sd_iocblk;
    sd->sd_iocblk = NULL;
    ust_unlock(&sd->sd_lock);
    CHECK(got && got->b_datap->db_type == M_COPYOUT);
    freemsg(got);
    hdrv_up(ioc_msg(M_COPYIN, 78));
    ust_lock(&sd->sd_lock);
    CHECK(sd->sd_iocblk == NULL);
    sd->sd_iocbusy = 0;
    ust_unlock(&sd->sd_lock);

    /* through I_STR: the driver's M_IOCACK completes strm_ioctl */
    atomic_store(&hdrv_ioc_rval, 7);
    struct strioctl ic = {.ic_cmd = 1234, .ic_timout = 5};
    CHECK_EQ(strm_ioctl(fd, I_STR, &ic), 7);
    /* the driver holds it: a reply with another id is stale, the right one
     * completes the call */
    atomic_store(&hdrv_ioc_hold, 1);
    struct istr_call c = {.fd = fd};
    CHECK_EQ(pthread_create(&t, NULL, istr_thread, &c), 0);
    mblk_t *req = hdrv_down(2000);
    CHECK(req && req->b_datap->db_type == M_IOCTL);
    if (req) {
        struct iocblk ib;
        memcpy(&ib, req->b_rptr, sizeof(ib));
        hdrv_up(ioc_msg(M_IOCACK, ib.ioc_id + 1));
        sleep_ms(30);
        CHECK_EQ(atomic_load(&c.done), 0);
        ib.ioc_rval = 3;
        ib.ioc_count = 0;
        memcpy(req->b_rptr, &ib, sizeof(ib));
        req->b_datap->db_type = M_IOCACK;
        hdrv_up(req);
    }
    pthread_join(t, NULL);
    CHECK_EQ(c.ret, 3);
    atomic_store(&hdrv_ioc_hold, 0);

    /* an M_IOCTL that reaches the head is refused back down */
    mblk_t *ioc = ioc_msg(M_IOCTL, 99);
    ioc->b_cont = hmsg(M_DATA, 0, "payload");
    hdrv_up(ioc);
    mblk_t *nak = hdrv_down(1000);
    CHECK(nak != NULL);
    if (nak) {
        struct iocblk ib;
        memcpy(&ib, nak->b_rptr, sizeof(ib));
        CHECK_EQ(nak->b_datap->db_type, M_IOCNAK);
        CHECK_EQ(ib.ioc_id, 99);
        CHECK_EQ(ib.ioc_error, EINVAL);
        CHECK_EQ(ib.ioc_count, 0);
        CHECK(nak->b_cont == NULL);
        freemsg(nak);
    }
    hdrv_up(hmsg2(M_IOCTL, 0, "x", 1, NULL, 0)); /* too short even to refuse */

    /* types with no business at the head are freed */
    hdrv_up_bytes(M_READ, (unsigned char[8]){0}, 8);
    hdrv_up(ioc_msg(M_IOCDATA, 1));
    hdrv_up_bytes(M_CTL, "ctl", 3);
    hdrv_up_bytes(M_DELAY, "d", 1);
    hdrv_up_bytes(M_START, NULL, 0);
    CHECK_EQ(ust_sd_nread(sd, NULL), 0);
    CHECK(hdrv_down(50) == NULL);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.10 back-enable of the write queue                                      */
/* ------------------------------------------------------------------------ */
struct wwaiter {
    struct stdata *sd;
    struct ust_waitq *wq; /* NULL: sd_wwait */
    atomic_int ready, woken;
};

/* Wait on w->wq until something wakes it. */
static void *write_waiter(void *arg)
{
    struct wwaiter *w = arg;
    struct ust_waitq *wq = w->wq ? w->wq : &w->sd->sd_wwait;
    ust_lock(&w->sd->sd_lock);
    unsigned seq = ust_sd_wait_seq(wq);
    atomic_store(&w->ready, 1);
    while (ust_sd_wait_seq(wq) == seq)
        ust_sd_wait_from(w->sd, wq, seq, 0);
    ust_unlock(&w->sd->sd_lock);
    atomic_store(&w->woken, 1);
    return NULL;
}

static void test_write_enable(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    atomic_store(&n_poll, 0);

    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    CHECK(!(pollev(fd) & POLLOUT));
    CHECK_EQ(ust_sd_setsig(sd, S_OUTPUT), 0);
    struct wwaiter w = {.sd = sd};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, write_waiter, &w), 0);
    while (!atomic_load(&w.ready))
        sleep_ms(1);
    qenable(sd->sd_wq); /* what back-enabling from below does */
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&w.woken), 1);
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(wait_count(&n_poll, 1), 1);
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);

    /* Inside another head's locked section the locked part is owed: the
     * writers are woken at once, readiness and S_OUTPUT come at unlock. */
    struct stdata *other = ust_sd_alloc();
    CHECK(other != NULL);
    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    CHECK_EQ(ust_sd_setsig(sd, S_WRNORM), 0);
    struct wwaiter w2 = {.sd = sd};
    CHECK_EQ(pthread_create(&t, NULL, write_waiter, &w2), 0);
    while (!atomic_load(&w2.ready))
        sleep_ms(1);
    ust_sd_lockq(other);
    qenable(sd->sd_wq);
    pthread_join(t, NULL); /* woken while `other` is still held */
    CHECK_EQ(atomic_load(&w2.woken), 1);
    CHECK(!(pollev(fd) & POLLOUT));
    sleep_ms(30);
    CHECK_EQ(atomic_load(&n_poll), 1);
    CHECK_EQ(ust_sd_settle(other), 1); /* settle does the owed work now */
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(wait_count(&n_poll, 2), 2);
    CHECK_EQ(ust_sd_settle(other), 0); /* nothing owed any more */
    ust_sd_unlockq(other);
    /* the same through unlock */
    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    ust_sd_lockq(other);
    qenable(sd->sd_wq);
    qenable(sd->sd_wq); /* owed once */
    CHECK(!(pollev(fd) & POLLOUT));
    ust_sd_unlockq(other);
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(wait_count(&n_poll, 3), 3);
    sleep_ms(30);
    CHECK_EQ(atomic_load(&n_poll), 3);
    /* a head's own write queue inside its own locked section: done at once */
    ust_lock(&sd->sd_lock);
    ust_sd_ready_write(sd, 0);
    ust_unlock(&sd->sd_lock);
    ust_sd_lockq(sd);
    qenable(sd->sd_wq);
    ust_sd_unlockq(sd);
    CHECK(pollev(fd) & POLLOUT);
    CHECK_EQ(ust_sd_setsig(sd, 0), 0);
    ust_sd_free(other);

    /* the read queue's hook wakes readers */
    struct wwaiter w3 = {.sd = sd, .wq = &sd->sd_rwait};
    CHECK_EQ(pthread_create(&t, NULL, write_waiter, &w3), 0);
    while (!atomic_load(&w3.ready))
        sleep_ms(1);
    qenable(sd->sd_rq);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&w3.woken), 1);
    CHECK_EQ(strm_close(fd), 0);
}

/* ------------------------------------------------------------------------ */
/* H.11 flow control at the head read queue                                 */
/* ------------------------------------------------------------------------ */
static void test_flow(void)
{
    int fd = open_hdrv();
    struct stdata *sd = sdof(fd);
    char buf[256];
    struct stroptions so = {.so_flags = SO_HIWAT | SO_LOWAT, .so_hiwat = 100, .so_lowat = 20};
    setopts(&so);
    queue_t *drq = atomic_load(&hdrv_rq);
    atomic_store(&hdrv_backenabled, 0);

    char chunk[40];
    memset(chunk, 'z', sizeof(chunk));
    CHECK(canputnext(drq));
    for (int i = 0; i < 3; i++)
        hdrv_up(hmsg2(M_DATA, 0, chunk, sizeof(chunk), NULL, 0));
    CHECK(!canputnext(drq)); /* 120 >= 100: full, and now wanted */
    CHECK(ust_qflags(sd->sd_rq) & QWANTW);
    CHECK_EQ(strm_read(fd, buf, 40), 40); /* 80 left: still full */
    sleep_ms(30);
    CHECK_EQ(atomic_load(&hdrv_backenabled), 0);
    CHECK_EQ(strm_read(fd, buf, 70), 70); /* 10 left <= 20: back-enable */
    for (int i = 0; i < 2000 && atomic_load(&hdrv_backenabled) == 0; i++)
        sleep_ms(1);
    CHECK_EQ(atomic_load(&hdrv_backenabled), 1);
    CHECK(canputnext(drq));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 10);
    CHECK_EQ(strm_close(fd), 0);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPOLL, &sa, NULL);
    sigaction(SIGURG, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);

    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_headinit();
    test_data();
    test_ioc_replies();
    test_write_enable();
    test_flow();

    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
