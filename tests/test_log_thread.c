/* SPDX-License-Identifier: MIT */
/*
 * test_log_thread.c -- the log driver and strlog under concurrency
 * (src/drivers/log.c, src/core/strlog.c); run under ThreadSanitizer by
 * `make tsan`.
 *
 * References: strlog(9F) ("may be called from any context"), log(7).
 *   LT.1 strlog from many threads at once to a trace logger read by another
 *        thread: each thread's messages arrive in the order it logged them;
 *        every sequence number is used once; delivered + dropped copies add
 *        up to what was logged
 *   LT.2 strlog from put and service procedures of a module (the "logmod"
 *        module registered here, pushed on an echo stream): the messages
 *        reach the logger and nothing deadlocks
 *   LT.3 loggers opened, made trace and error loggers, and closed again
 *        while other threads log: no crash, no lost claim, no leak
 *   and, at the end, no message block is outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/strconf.h>
#include <sys/strlog.h>
#include <ustreams.h>

#include "check.h"
#include "log_util.h"

#define LOGDEV   "/dev/streams/log"
#define NTHREADS 8
#define NMSGS    3000
#define MID_BASE 300

static int log_open(void)
{
    return strm_open(LOGDEV, O_RDWR | O_NONBLOCK);
}

static int trclog(int fd, const struct trace_ids *t, int n)
{
    struct strioctl sio = {I_TRCLOG, 0, n * (int)sizeof(*t), (char *)t};
    return strm_ioctl(fd, I_STR, &sio);
}

static int errlog(int fd)
{
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    return strm_ioctl(fd, I_STR, &sio);
}

/* Read one message waiting up to ms; returns 1 or 0. */
static int readlog(int fd, struct log_ctl *lc, char *text, int ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    struct strbuf ctl = {sizeof(*lc), 0, (char *)lc};
    struct strbuf data = {LOGMSGSZ, 0, text};
    int flags = 0;

    if (strm_poll(&pfd, 1, ms) <= 0)
        return 0;
    return getmsg(fd, &ctl, &data, &flags) >= 0 && ctl.len == (int)sizeof(*lc);
}

/* ---- LT.1 ---- */

struct writer {
    pthread_t th;
    int id;
    long delivered; /* strlog returned 1 */
};

static atomic_int go;

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    while (!atomic_load(&go))
        ;
    for (int n = 0; n < NMSGS; n++)
        w->delivered += strlog((short)(MID_BASE + w->id), 0, 1, SL_TRACE, "w%d n%d", w->id, n);
    return NULL;
}

static void test_many_writers(void)
{
    struct writer w[NTHREADS];
    struct ust_log_stats st0, st1;
    struct trace_ids f = {-1, 0, 1};
    int last[NTHREADS], got[NTHREADS];
    char *seen = calloc(NTHREADS * NMSGS * 2, 1);
    int fd = log_open(), base_seq = -1, maxseq = -1;
    struct log_ctl lc;
    char text[LOGMSGSZ];

    CHECK(fd >= 0);
    CHECK_EQ(trclog(fd, &f, 1), 0);
    ust_log_getstats(&st0);
    for (int i = 0; i < NTHREADS; i++) {
        last[i] = -1;
        got[i] = 0;
        w[i].id = i;
        w[i].delivered = 0;
        pthread_create(&w[i].th, NULL, writer_main, &w[i]);
    }
    atomic_store(&go, 1);
    /* read until the writers are done and the stream is empty */
    int idle = 0;
    while (idle < 20) {
        if (!readlog(fd, &lc, text, 10)) {
            idle++;
            continue;
        }
        idle = 0;
        int id, n;
        if (sscanf(text, "w%d n%d", &id, &n) != 2 || id < 0 || id >= NTHREADS) {
            CHECK(!"unexpected text");
            continue;
        }
        CHECK_EQ(lc.mid, MID_BASE + id);
        CHECK(n > last[id]); /* per-thread order */
        last[id] = n;
        got[id]++;
        if (base_seq < 0)
            base_seq = lc.seq_no;
        int rel = lc.seq_no - base_seq + NTHREADS * NMSGS / 2;
        if (rel >= 0 && rel < NTHREADS * NMSGS * 2) {
            CHECK(!seen[rel]); /* no number twice */
            seen[rel] = 1;
        }
        if (lc.seq_no > maxseq)
            maxseq = lc.seq_no;
    }
    long total = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(w[i].th, NULL);
        CHECK_EQ(got[i], w[i].delivered);
        total += w[i].delivered;
    }
    ust_log_getstats(&st1);
    CHECK_EQ((long)(st1.ls_delivered - st0.ls_delivered), total);
    CHECK_EQ((long)(st1.ls_delivered - st0.ls_delivered + st1.ls_dropped - st0.ls_dropped +
                    st1.ls_nomem - st0.ls_nomem),
             NTHREADS * NMSGS);
    CHECK(total > 0);
    free(seen);
    strm_close(fd);
}

/* ---- LT.2: a module that logs from its put and service procedures ---- */

static int logmod_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp, (void)oflag, (void)sflag, (void)crp;
    qprocson(q);
    return 0;
}

static int logmod_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag, (void)crp;
    qprocsoff(q);
    return 0;
}

/* Write side: log from the put procedure, queue for the service procedure. */
static int logmod_wput(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_DATA)
        strlog(77, 1, 0, SL_TRACE, "put %d", (int)(mp->b_wptr - mp->b_rptr));
    if (!putq(q, mp))
        freemsg(mp);
    return 0;
}

static int logmod_wsrv(queue_t *q)
{
    mblk_t *mp;
    while ((mp = getq(q)) != NULL) {
        if (mp->b_datap->db_type == M_DATA)
            strlog(77, 2, 0, SL_TRACE, "srv %d", (int)(mp->b_wptr - mp->b_rptr));
        putnext(q, mp);
    }
    return 0;
}

static int logmod_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info logmod_minfo = {.mi_idnum = 7701,
                                          .mi_idname = "logmod",
                                          .mi_maxpsz = INFPSZ,
                                          .mi_hiwat = 65536,
                                          .mi_lowat = 1024};
static struct qinit logmod_rinit = {.qi_putp = logmod_rput,
                                    .qi_qopen = logmod_open,
                                    .qi_qclose = logmod_close,
                                    .qi_minfo = &logmod_minfo};
static struct qinit logmod_winit = {
    .qi_putp = logmod_wput, .qi_srvp = logmod_wsrv, .qi_minfo = &logmod_minfo};
static struct streamtab logmod_info = {.st_rdinit = &logmod_rinit, .st_wrinit = &logmod_winit};
static struct fmodsw logmod_fmod = {
    .f_name = "logmod", .f_str = &logmod_info, .f_flag = D_MP | D_MTQPAIR};

static void test_from_procedures(void)
{
    int t = log_open(), s;
    struct trace_ids f = {77, -1, 0};
    struct log_ctl lc;
    char text[LOGMSGSZ], buf[64];
    int puts = 0, srvs = 0;

    CHECK_EQ(register_strmod(&logmod_fmod), 0);
    CHECK_EQ(trclog(t, &f, 1), 0);
    s = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(s >= 0);
    CHECK_EQ(strm_ioctl(s, I_PUSH, "logmod"), 0);
    for (int i = 1; i <= 20; i++) {
        memset(buf, 'x', sizeof(buf));
        CHECK_EQ(strm_write(s, buf, (size_t)i), i);
        CHECK_EQ(strm_read(s, buf, sizeof(buf)), i);
    }
    while (readlog(t, &lc, text, 200)) {
        int n;
        if (sscanf(text, "put %d", &n) == 1 && lc.sid == 1)
            CHECK_EQ(n, ++puts);
        else if (sscanf(text, "srv %d", &n) == 1 && lc.sid == 2)
            CHECK_EQ(n, ++srvs);
        else
            CHECK(!"unexpected message");
    }
    CHECK_EQ(puts, 20);
    CHECK_EQ(srvs, 20);
    strm_close(s);
    strm_close(t);
    CHECK_EQ(unregister_strmod(&logmod_fmod), 0);
}

/* ---- LT.3: loggers come and go while others log ---- */

static atomic_int churn_stop;

static void *logger_churn(void *arg)
{
    struct trace_ids f = {-1, -1, (char)-1};
    struct log_ctl lc;
    char text[LOGMSGSZ];
    long *rounds = arg;

    while (!atomic_load(&churn_stop)) {
        int fd = log_open();
        if (fd < 0)
            continue;
        if (trclog(fd, &f, 1) == 0)
            (void)readlog(fd, &lc, text, 1);
        (void)errlog(fd); /* EBUSY when another churner has it */
        strm_close(fd);
        (*rounds)++;
    }
    return NULL;
}

static void *logger_spam(void *arg)
{
    long *count = arg;
    while (!atomic_load(&churn_stop)) {
        strlog(5, 5, 0, SL_TRACE | SL_ERROR, "spam %ld", *count);
        (*count)++;
    }
    return NULL;
}

static void test_churn(void)
{
    pthread_t c[3], s[3];
    long rounds[3] = {0}, spam[3] = {0};
    struct timespec ts = {0, 300 * 1000000L};

    atomic_store(&churn_stop, 0);
    for (int i = 0; i < 3; i++) {
        pthread_create(&c[i], NULL, logger_churn, &rounds[i]);
        pthread_create(&s[i], NULL, logger_spam, &spam[i]);
    }
    nanosleep(&ts, NULL);
    atomic_store(&churn_stop, 1);
    for (int i = 0; i < 3; i++) {
        pthread_join(c[i], NULL);
        pthread_join(s[i], NULL);
        CHECK(rounds[i] > 0);
        CHECK(spam[i] > 0);
    }
    /* every logger is gone: nothing is routed */
    CHECK_EQ(strlog(5, 5, 0, SL_TRACE | SL_ERROR, "after"), 0);
}

int main(void)
{
    log_private_rundir(); /* this test's loggers meet no other test's */
    test_many_writers();
    test_from_procedures();
    test_churn();
    ustreams_quiesce(5000);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
