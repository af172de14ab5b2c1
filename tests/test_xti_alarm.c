/* SPDX-License-Identifier: MIT */
/*
 * test_xti_alarm.c -- a blocking XTI call interrupted by a signal whose
 * handler was installed without SA_RESTART fails with TSYSERR and errno
 * EINTR (XNS 5 t_rcv, t_listen, t_rcvudata [TSYSERR]), and the endpoint is
 * usable afterwards.
 */
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "xti_util.h"

static volatile sig_atomic_t nalarm;

/* SIGALRM after ms, then every 100 ms until disarm(): a signal that lands
 * while the thread is between waits (in user space, e.g. the stream head's
 * 200 ms safety-net wake-up) runs its handler without interrupting anything,
 * exactly as with read(2); the next one does interrupt.  A single alarm()
 * made this test hang under heavy load. */
static void arm(long ms)
{
    struct itimerval it = {{0, 100000}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm(void)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void on_alarm(int sig)
{
    (void)sig;
    nalarm++;
}

int main(void)
{
    struct sigaction sa;
    char buf[16];
    int cli, lis, acc, flags;

    xti_require("/dev/ticots");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);

    if (CHECK_EQ(xti_pair("/dev/ticots", &cli, &lis, &acc), 0)) {
        arm(1000);
        errno = 0;
        XCHECK_ERR(t_rcv(acc, buf, sizeof(buf), &flags), TSYSERR);
        CHECK_EQ(errno, EINTR);
        disarm();
        CHECK(nalarm >= 1);
        CHECK_EQ(t_getstate(acc), T_DATAXFER);
        CHECK_EQ(t_snd(cli, "ok", 2, 0), 2);
        CHECK_EQ(t_rcv(acc, buf, sizeof(buf), &flags), 2);
        /* t_listen blocked on a listener */
        arm(1000);
        errno = 0;
        XCHECK_ERR(t_listen(lis, NULL), TSYSERR);
        CHECK_EQ(errno, EINTR);
        disarm();
        CHECK_EQ(t_getstate(lis), T_IDLE);
        t_close(cli);
        t_close(lis);
        t_close(acc);
    }
    int u = xti_bound("/dev/ticlts", 0, NULL, 0, NULL);
    if (u >= 0) {
        struct t_unitdata in;
        memset(&in, 0, sizeof(in));
        in.udata.buf = buf;
        in.udata.maxlen = sizeof(buf);
        arm(1000);
        errno = 0;
        XCHECK_ERR(t_rcvudata(u, &in, &flags), TSYSERR);
        CHECK_EQ(errno, EINTR);
        disarm();
        t_close(u);
    }
    return xti_finish();
}
