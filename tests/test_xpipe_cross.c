/* SPDX-License-Identifier: MIT */
/*
 * test_xpipe_cross.c -- what may cross a split pipe (issue 20, rows A and
 * H; src/procs/sd_xcross.c has the table).  A pipe is made, the process
 * forks, the child (the attacker, as another uid where the case needs one:
 * tests/hostile_util.h) pushes a test module `xsig` on its end whose write
 * side turns a command written as data into a message of any type, sent
 * down the pipe to the parent (the victim, root).
 *
 *   C.1  (A) another uid's M_PCSIG SIGKILL, M_PCSIG SIGSTOP, M_SIG SIGUSR1
 *        and M_PCSIG SIGUSR1: the victim is alive, got no SIGUSR1, the
 *        signals-dropped counter rose by 4; the data after them arrives.
 *   C.2  the same uid's M_SIG SIGUSR1 and M_PCSIG SIGUSR2 are delivered (kill(2)
 *        would allow them); data, a control part, band 3, a zero-length
 *        message still cross; the child's close is a hang-up (read 0).
 *   C.3  a signal record written straight into the ring by a same-uid peer,
 *        with no credential on the bell: dropped and counted; an M_PASSFP
 *        record with bytes (its descriptor sent on the bell): dropped and
 *        counted, the data after it arrives (it was looked at for ever).
 *   C.4  (H) another uid's M_SETOPTS with SO_HIWAT 1 GiB, then the peer
 *        writes up to 300 MB non-blocking while the victim does not read:
 *        the victim's head keeps a high-water mark <= XC_HIWAT_MAX, its RSS
 *        grows by < 32 MB, the writer meets EAGAIN and gets < 8 MB in; then
 *        the victim reads what was written, intact.
 *   C.5  ioctl traffic from the far side (M_IOCACK, M_COPYOUT) is dropped
 *        and counted; an I_FLUSH on one end does not bounce between the
 *        processes for ever (the CPU stays idle).
 *   C.6  (A) the same through a name: a root server with connld on an
 *        fattach'd pipe; a client of another uid opens the name and sends
 *        M_PCSIG SIGKILL and SIGUSR1 on its new pipe: the server takes it
 *        (I_RECVFD, the client's uid), is alive and got no SIGUSR1.
 *   Every case has a deadline (a child that hangs is killed and fails it).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "hostile_util.h"
#include "sd_xcross.h"

#define CHILD_MS 20000

/* ---- the module: commands written as data become messages ---- */
/*   'K' n  M_PCSIG n      'S' n  M_SIG n       'O'  M_SETOPTS, hiwat 1 GiB
 *   'A'    M_IOCACK       'C'    M_COPYOUT     anything else passes */
static mblk_t *one(unsigned char type, const void *p, size_t n)
{
    mblk_t *mp = allocb(n, BPRI_HI);
    if (mp == NULL)
        return NULL;
    mp->b_datap->db_type = type;
    memcpy(mp->b_wptr, p, n);
    mp->b_wptr += n;
    return mp;
}

static int xsig_wput(queue_t *q, mblk_t *mp)
{
    mblk_t *m = NULL;
    if (mp->b_datap->db_type != M_DATA || mp->b_wptr - mp->b_rptr < 1) {
        putnext(q, mp);
        return 0;
    }
    unsigned char c = mp->b_rptr[0], arg = mp->b_wptr - mp->b_rptr > 1 ? mp->b_rptr[1] : 0;
    switch (c) {
    case 'K':
    case 'S':
        m = one(c == 'K' ? M_PCSIG : M_SIG, &arg, 1);
        break;
    case 'O': {
        struct stroptions so = {.so_flags = SO_HIWAT | SO_LOWAT | SO_ISTTY | SO_WROFF,
                                .so_hiwat = (size_t)1 << 30,
                                .so_lowat = (size_t)1 << 29,
                                .so_wroff = 60000};
        m = one(M_SETOPTS, &so, sizeof(so));
        break;
    }
    case 'A': {
        struct iocblk ioc = {.ioc_cmd = 1, .ioc_id = 1};
        m = one(M_IOCACK, &ioc, sizeof(ioc));
        break;
    }
    case 'C': {
        struct copyreq cq = {.cq_cmd = 1, .cq_id = 1, .cq_size = 64};
        m = one(M_COPYOUT, &cq, sizeof(cq));
        break;
    }
    default:
        putnext(q, mp);
        return 0;
    }
    freemsg(mp);
    if (m != NULL)
        putnext(q, m);
    return 0;
}

static int xsig_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static int xsig_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    qprocson(q);
    return 0;
}

static int xsig_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    qprocsoff(q);
    return 0;
}

static struct module_info xsig_minfo = {
    .mi_idname = "xsig", .mi_maxpsz = INFPSZ, .mi_hiwat = 65536, .mi_lowat = 1024};
static struct qinit xsig_rinit = {
    .qi_putp = xsig_rput, .qi_qopen = xsig_open, .qi_qclose = xsig_close, .qi_minfo = &xsig_minfo};
static struct qinit xsig_winit = {.qi_putp = xsig_wput, .qi_minfo = &xsig_minfo};
static struct streamtab xsig_info = {.st_rdinit = &xsig_rinit, .st_wrinit = &xsig_winit};
static struct fmodsw xsig_fmod = {.f_name = "xsig", .f_str = &xsig_info, .f_flag = D_MP};

/* ---- helpers ---- */
static int fds[2];
static atomic_int nusr1; /* SIGUSR1 and SIGUSR2 received (two of one kind may merge) */

static void on_usr1(int sig)
{
    atomic_fetch_add(&nusr1, sig == SIGUSR2 ? 16 : 1);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void counts(long c[XC_NCOUNTS])
{
    ust_xcross_counts(c);
}

/* Read exactly len bytes within ms: 1, or 0. */
static int read_all(int fd, char *buf, size_t len, long ms)
{
    size_t got = 0;
    long long end = now_ms() + ms;
    while (got < len && now_ms() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (strm_poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = strm_read(fd, buf + got, len - got);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return got == len;
}

static void cmd(int fd, char c, int arg)
{
    char b[2] = {c, (char)arg};
    CHECK_EQ(strm_write(fd, b, 2), 2);
}

static void pipe_fresh(void)
{
    CHECK_EQ(strm_pipe(fds), 0);
    /* The parent's end used before the fork: it takes what arrives at once
     * (signals, M_SETOPTS act before the parent reads), docs/STREAMHEAD.md
     * "Who takes a message". */
    struct pollfd p = {fds[0], POLLIN, 0};
    CHECK_EQ(strm_poll(&p, 1, 0), 0);
}

/* ---- C.1: another uid's signals ---- */
static int c1_child(void *arg)
{
    (void)arg;
    strm_close(fds[0]);
    if (hostile_become() != 0)
        return 1;
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "xsig"), 0);
    cmd(fds[1], 'K', SIGKILL);
    cmd(fds[1], 'K', SIGSTOP);
    cmd(fds[1], 'S', SIGUSR1);
    cmd(fds[1], 'K', SIGUSR1);
    CHECK_EQ(strm_write(fds[1], "done", 4), 4);
    char b;
    strm_read(fds[1], &b, 1); /* until the parent has seen it all */
    return 0;
}

static void test_c1(void)
{
    if (!hostile_can_switch()) {
        hostile_skip("C.1 signals from another uid");
        return;
    }
    long c0[XC_NCOUNTS], c1[XC_NCOUNTS];
    char buf[4];
    pipe_fresh();
    counts(c0);
    atomic_store(&nusr1, 0);
    pid_t pid = fk_start(c1_child, NULL);
    strm_close(fds[1]);
    CHECK(read_all(fds[0], buf, 4, 5000) && memcmp(buf, "done", 4) == 0);
    fk_sleep_ms(50); /* a signal sent would have come by now */
    CHECK_EQ(atomic_load(&nusr1), 0);
    counts(c1);
    CHECK_EQ(c1[XC_SIG_DROPPED] - c0[XC_SIG_DROPPED], 4);
    CHECK_EQ(strm_write(fds[0], "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);
}

/* ---- C.2: the same uid's signals; data, bands, hang-up ---- */
static int c2_child(void *arg)
{
    (void)arg;
    strm_close(fds[0]);
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "xsig"), 0);
    cmd(fds[1], 'S', SIGUSR1);
    cmd(fds[1], 'K', SIGUSR2);
    struct strbuf ctl = {0, 4, "ctl0"}, dat = {0, 3, "abc"}, zero = {0, 0, ""};
    CHECK_EQ(putpmsg(fds[1], &ctl, &dat, 0, MSG_BAND), 0);
    CHECK_EQ(putpmsg(fds[1], NULL, &dat, 3, MSG_BAND), 0);
    CHECK_EQ(putmsg(fds[1], NULL, &zero, 0), 0);
    CHECK_EQ(strm_write(fds[1], "done", 4), 4);
    char b;
    strm_read(fds[1], &b, 1);
    return 0; /* the close at exit: a hang-up for the parent */
}

static void test_c2(void)
{
    long c0[XC_NCOUNTS], c1[XC_NCOUNTS];
    char cbuf[16], dbuf[16];
    struct strbuf ctl = {sizeof(cbuf), 0, cbuf}, dat = {sizeof(dbuf), 0, dbuf};
    int band, flags;

    pipe_fresh();
    counts(c0);
    atomic_store(&nusr1, 0);
    pid_t pid = fk_start(c2_child, NULL);
    strm_close(fds[1]);
    struct pollfd p = {fds[0], POLLIN, 0};
    long long end = now_ms() + 5000;
    while (atomic_load(&nusr1) < 17 && now_ms() < end)
        fk_sleep_ms(1);
    CHECK_EQ(atomic_load(&nusr1), 17);
    CHECK(strm_poll(&p, 1, 5000) == 1);
    fk_sleep_ms(100); /* everything is at the head */
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fds[0], &ctl, &dat, &band, &flags), 0); /* band 3 first */
    CHECK_EQ(band, 3);
    CHECK_EQ(dat.len, 3);
    band = 0;
    flags = MSG_ANY;
    CHECK_EQ(getpmsg(fds[0], &ctl, &dat, &band, &flags), 0);
    CHECK(ctl.len == 4 && memcmp(cbuf, "ctl0", 4) == 0 && dat.len == 3);
    flags = 0;
    CHECK_EQ(getmsg(fds[0], &ctl, &dat, &flags), 0); /* the zero-length one */
    CHECK(ctl.len == -1 && dat.len == 0);
    CHECK(read_all(fds[0], dbuf, 4, 5000) && memcmp(dbuf, "done", 4) == 0);
    counts(c1);
    CHECK_EQ(c1[XC_SIG_DROPPED] - c0[XC_SIG_DROPPED], 0);
    CHECK_EQ(strm_write(fds[0], "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    char b;
    CHECK_EQ(strm_read(fds[0], &b, 1), 0); /* hang-up */
    strm_close(fds[0]);
}

/* ---- C.3: a signal record with no credential ---- */
static int c3_child(void *arg)
{
    (void)arg;
    strm_close(fds[0]);
    struct stdata *sd = ust_sd_peek(fds[1]);
    struct ust_xend *xe = sd != NULL ? sd->sd_xend : NULL;
    if (!CHECK(xe != NULL))
        return 1;
    unsigned char sig = SIGUSR1;
    struct iovec iov = {&sig, 1};
    /* a token of the signals' form, never announced on the bell */
    struct xring_msg m = {.type = M_PCSIG, .ctl_len = 1, .aux = 0xc0808000u | SIGUSR1};
    CHECK(xring_put(xe->xc->ch, xe->side, &m, &iov, 1) >= 0);
    ust_xbell_ring(&xe->bell);
    CHECK_EQ(strm_write(fds[1], "done", 4), 4);
    char b;
    strm_read(fds[1], &b, 1);
    return 0;
}

/* C.3b: an M_PASSFP record with bytes, its descriptor on the bell */
static int c3b_child(void *arg)
{
    (void)arg;
    strm_close(fds[0]);
    struct stdata *sd = ust_sd_peek(fds[1]);
    struct ust_xend *xe = sd != NULL ? sd->sd_xend : NULL;
    if (!CHECK(xe != NULL))
        return 1;
    struct iovec iov = {"junk", 4};
    struct xring_msg m = {.type = M_PASSFP, .data_len = 4, .flags = XF_DATA, .aux = 0x1234};
    CHECK_EQ(ust_xbell_sendfd(&xe->bell, 0, 0x1234), 0);
    CHECK(xring_put(xe->xc->ch, xe->side, &m, &iov, 1) >= 0);
    ust_xbell_ring(&xe->bell);
    CHECK_EQ(strm_write(fds[1], "done", 4), 4);
    char b;
    strm_read(fds[1], &b, 1);
    return 0;
}

static void test_c3(void)
{
    long c0[XC_NCOUNTS], c1[XC_NCOUNTS];
    char buf[4];
    pipe_fresh();
    counts(c0);
    atomic_store(&nusr1, 0);
    pid_t pid = fk_start(c3_child, NULL);
    strm_close(fds[1]);
    CHECK(read_all(fds[0], buf, 4, 5000) && memcmp(buf, "done", 4) == 0);
    fk_sleep_ms(50);
    CHECK_EQ(atomic_load(&nusr1), 0);
    counts(c1);
    CHECK_EQ(c1[XC_SIG_DROPPED] - c0[XC_SIG_DROPPED], 1);
    CHECK_EQ(strm_write(fds[0], "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);

    /* a malformed M_PASSFP (with bytes) is dropped, not looked at for ever */
    pipe_fresh();
    counts(c0);
    pid = fk_start(c3b_child, NULL);
    strm_close(fds[1]);
    CHECK(read_all(fds[0], buf, 4, 5000) && memcmp(buf, "done", 4) == 0);
    counts(c1);
    CHECK_EQ(c1[XC_MSG_DROPPED] - c0[XC_MSG_DROPPED], 1);
    CHECK_EQ(strm_write(fds[0], "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);
}

/* ---- C.4: a peer's M_SETOPTS, then a flood ---- */
#define FLOOD_TOTAL (300L << 20)
#define FLOOD_MS 1500

static int c4_report[2]; /* a pipe(2): the child's count of bytes written */

static int c4_child(void *arg)
{
    (void)arg;
    static char chunk[1024]; /* a small write: one record, never split */
    strm_close(fds[0]);
    close(c4_report[0]);
    if (hostile_become() != 0)
        return 1;
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "xsig"), 0);
    cmd(fds[1], 'O', 0);
    fk_sleep_ms(50); /* the options are at the victim's head */
    CHECK_EQ(strm_ioctl(fds[1], I_POP, 0), 0); /* plain writes from here */
    CHECK_EQ(strm_fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
    long total = 0, eagain = 0;
    long long end = now_ms() + FLOOD_MS;
    for (size_t i = 0; i < sizeof(chunk); i++)
        chunk[i] = (char)(i * 7);
    while (total < FLOOD_TOTAL && now_ms() < end) {
        ssize_t n = strm_write(fds[1], chunk, sizeof(chunk));
        if (n > 0)
            total += n;
        else if (n < 0 && errno == EAGAIN)
            eagain++, fk_sleep_ms(1);
        else
            break;
    }
    long r[2] = {total, eagain};
    if (write(c4_report[1], r, sizeof(r)) != (ssize_t)sizeof(r))
        return 1;
    char b;
    strm_fcntl(fds[1], F_SETFL, 0);
    strm_read(fds[1], &b, 1); /* until the parent has read it all */
    return 0;
}

static void test_c4(void)
{
    if (!hostile_can_switch()) {
        hostile_skip("C.4 M_SETOPTS and a flood from another uid");
        return;
    }
    long c0[XC_NCOUNTS], c1[XC_NCOUNTS], r[2] = {0, 0};
    pipe_fresh();
    CHECK_EQ(pipe(c4_report), 0);
    counts(c0);
    long rss0 = hostile_rss_kb();
    pid_t pid = fk_start(c4_child, NULL);
    strm_close(fds[1]);
    close(c4_report[1]);
    struct pollfd p = {c4_report[0], POLLIN, 0};
    CHECK(poll(&p, 1, FLOOD_MS + 5000) == 1);
    CHECK_EQ(read(c4_report[0], r, sizeof(r)), (ssize_t)sizeof(r));
    close(c4_report[0]);
    fk_sleep_ms(100); /* what the victim would take, it has taken */
    long rss1 = hostile_rss_kb();
    printf("C.4: peer wrote %ld bytes (%ld EAGAIN), victim RSS %ld -> %ld KiB\n", r[0], r[1],
           rss0, rss1);
    CHECK(r[0] < (8L << 20));
    CHECK(r[1] > 0);
    CHECK(rss1 - rss0 < 32 * 1024 * HOSTILE_RSS_SCALE);
    struct stdata *sd = ust_sd_peek(fds[0]);
    size_t hiwat = 0;
    CHECK(sd != NULL && strqget(sd->sd_rq, QHIWAT, 0, &hiwat) == 0); /* under its lock */
    CHECK(hiwat > 0 && hiwat <= XC_HIWAT_MAX);
    counts(c1);
    CHECK(c1[XC_OPTS_FILTERED] - c0[XC_OPTS_FILTERED] >= 1);
    /* everything written arrives, intact */
    static char buf[8192];
    long got = 0;
    int ok = 1;
    while (got < r[0] && ok) {
        size_t want = (size_t)(r[0] - got) < sizeof(buf) ? (size_t)(r[0] - got) : sizeof(buf);
        if (!read_all(fds[0], buf, want, 5000)) {
            ok = 0;
            break;
        }
        for (size_t i = 0; i < want && ok; i++)
            ok = buf[i] == (char)(((size_t)(got + (long)i) % 1024) * 7);
        got += (long)want;
    }
    CHECK(ok);
    CHECK_EQ(strm_write(fds[0], "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);
}

/* ---- C.5: ioctl traffic, and a flush that must not bounce ---- */
static int c5_child(void *arg)
{
    (void)arg;
    strm_close(fds[0]);
    CHECK_EQ(strm_ioctl(fds[1], I_PUSH, "xsig"), 0);
    cmd(fds[1], 'A', 0);
    cmd(fds[1], 'C', 0);
    CHECK_EQ(strm_ioctl(fds[1], I_FLUSH, FLUSHRW), 0);
    CHECK_EQ(strm_write(fds[1], "done", 4), 4);
    char b;
    strm_read(fds[1], &b, 1);
    return 0;
}

static double cpu_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void test_c5(void)
{
    long c0[XC_NCOUNTS], c1[XC_NCOUNTS];
    char buf[4];
    pipe_fresh();
    counts(c0);
    pid_t pid = fk_start(c5_child, NULL);
    strm_close(fds[1]);
    CHECK(read_all(fds[0], buf, 4, 5000) && memcmp(buf, "done", 4) == 0);
    counts(c1);
    CHECK_EQ(c1[XC_MSG_DROPPED] - c0[XC_MSG_DROPPED], 2);
    /* idle now: a flush bouncing between the heads would burn CPU */
    double t0 = cpu_s(RUSAGE_SELF);
    fk_sleep_ms(300);
    double used = cpu_s(RUSAGE_SELF) - t0;
    printf("C.5: %.3f s CPU in 300 ms idle\n", used);
    CHECK(used < 0.1);
    CHECK_EQ(strm_write(fds[0], "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    strm_close(fds[0]);
}

/* ---- C.6: through fattach + connld ---- */
static char c6_path[64];

static int c6_child(void *arg)
{
    (void)arg;
    char b[4];
    if (hostile_become() != 0)
        return 1;
    int fd = strm_open(c6_path, O_RDWR);
    if (!CHECK(fd >= 0))
        return 1;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "xsig"), 0);
    cmd(fd, 'K', SIGKILL);
    cmd(fd, 'K', SIGUSR1);
    CHECK_EQ(strm_write(fd, "done", 4), 4);
    CHECK(read_all(fd, b, 1, 5000));
    strm_close(fd);
    return 0;
}

static void test_c6(void)
{
    if (!hostile_can_switch()) {
        hostile_skip("C.6 signals from another uid's connld client");
        return;
    }
    long c0[XC_NCOUNTS], c1[XC_NCOUNTS];
    char dir[] = "/tmp/xcrossXXXXXX", buf[4];
    int p[2];
    if (!CHECK(mkdtemp(dir) != NULL))
        return;
    CHECK_EQ(chmod(dir, 0755), 0);
    snprintf(c6_path, sizeof(c6_path), "%s/srv", dir);
    int f = open(c6_path, O_CREAT | O_RDWR, 0666);
    CHECK(f >= 0);
    close(f);
    CHECK_EQ(chmod(c6_path, 0666), 0);
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(strm_ioctl(p[1], I_PUSH, "connld"), 0);
    CHECK_EQ(fattach(p[1], c6_path), 0);
    counts(c0);
    atomic_store(&nusr1, 0);
    pid_t pid = fk_start(c6_child, NULL);
    struct strrecvfd r = {.fd = -1};
    struct pollfd pf = {p[0], POLLIN, 0};
    CHECK(strm_poll(&pf, 1, 5000) == 1);
    CHECK_EQ(strm_ioctl(p[0], I_RECVFD, &r), 0);
    CHECK_EQ(r.uid, HOSTILE_UID);
    CHECK(r.fd >= 0 && read_all(r.fd, buf, 4, 5000) && memcmp(buf, "done", 4) == 0);
    fk_sleep_ms(50);
    CHECK_EQ(atomic_load(&nusr1), 0);
    counts(c1);
    CHECK_EQ(c1[XC_SIG_DROPPED] - c0[XC_SIG_DROPPED], 2);
    if (r.fd >= 0)
        CHECK_EQ(strm_write(r.fd, "x", 1), 1);
    CHECK_EQ(fk_wait(pid, CHILD_MS), 0);
    if (r.fd >= 0)
        strm_close(r.fd);
    CHECK_EQ(fdetach(c6_path), 0);
    strm_close(p[0]);
    strm_close(p[1]);
    unlink(c6_path);
    rmdir(dir);
}

/* With arguments, only the cases named ("c1" .. "c6"). */
int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"c1", test_c1}, {"c2", test_c2}, {"c3", test_c3}, {"c4", test_c4},
                 {"c5", test_c5}, {"c6", test_c6}};
    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    CHECK_EQ(register_strmod(&xsig_fmod), 0);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int run = argc < 2;
        for (int a = 1; a < argc; a++)
            run |= strcmp(argv[a], cases[i].name) == 0;
        if (run)
            cases[i].fn();
    }

    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
