/* SPDX-License-Identifier: MIT */
/*
 * test_signals.c -- asynchronous signals reach the application's threads,
 * never the library's own (src/core/thread.c).
 *   1. every thread the library started (scheduler, timer, bufcall, watch)
 *      has SIGALRM, SIGINT, SIGTERM, SIGUSR1 and SIGPOLL blocked
 *      (/proc/self/task/N/status, SigBlk), while the main thread's mask is
 *      what the program set
 *   2. a read blocked on an empty pipe ends with EINTR when the program's
 *      alarm fires (handler installed without SA_RESTART), as programs that
 *      end timed tests with alarm() expect; the pipe still works afterwards
 *   3. the same for getmsg, 20 times in a row (no signal lost to a library
 *      thread), nothing outstanding at the end
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stream.h>
#include <sys/time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* SigBlk of thread tid as a mask of signal numbers 1..64. */
static unsigned long long sigblk(const char *tid)
{
    char path[320], line[256];
    unsigned long long m = 0;
    snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "SigBlk:", 7) == 0)
            m = strtoull(line + 7, NULL, 16);
    fclose(f);
    return m;
}

static unsigned long long bit(int sig)
{
    return 1ULL << (sig - 1);
}

static void noop_timeout(void *arg)
{
    (void)arg;
}

static void test_library_threads_block_signals(void)
{
    /* Start the library's threads: a pipe (scheduler, watch), a timeout. */
    int fds[2];
    CHECK_EQ(strm_pipe(fds), 0);
    timeout_id_t id = timeout(noop_timeout, NULL, 1000);
    CHECK(id != 0);
    char me[32];
    snprintf(me, sizeof(me), "%ld", (long)getpid());
    unsigned long long want = bit(SIGALRM) | bit(SIGINT) | bit(SIGTERM) | bit(SIGUSR1) | bit(SIGPOLL);
    int others = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        unsigned long long m = sigblk(e->d_name);
        if (strcmp(e->d_name, me) == 0) {
            CHECK_EQ(m & want, 0); /* the program blocked none of them */
        } else {
            others++;
            if ((m & want) != want)
                fprintf(stderr, "thread %s: SigBlk %llx\n", e->d_name, m);
            CHECK((m & want) == want);
        }
    }
    if (d)
        closedir(d);
    CHECK(others >= 1);
    untimeout(id);
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* SIGALRM after ms, then every 50 ms until disarm(): one landing between
 * waits (user space) interrupts nothing, as with read(2); the next does. */
static void arm(long ms)
{
    struct itimerval it = {{0, 50000}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm(void)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void test_alarm_interrupts_read(void)
{
    int fds[2];
    char buf[16];
    CHECK_EQ(strm_pipe(fds), 0);
    int before = alarms;
    arm(100);
    errno = 0;
    CHECK_EQ(strm_read(fds[0], buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EINTR);
    disarm();
    CHECK(alarms >= before + 1);
    /* The pipe still works. */
    CHECK_EQ(strm_write(fds[1], "abc", 3), 3);
    CHECK_EQ(strm_read(fds[0], buf, sizeof(buf)), 3);
    CHECK_EQ(memcmp(buf, "abc", 3), 0);

    for (int i = 0; i < 20; i++) {
        struct strbuf ctl = {.maxlen = sizeof(buf), .buf = buf};
        struct strbuf dat = {.maxlen = sizeof(buf), .buf = buf};
        int flags = 0;
        before = alarms;
        arm(10);
        errno = 0;
        CHECK_EQ(getmsg(fds[0], &ctl, &dat, &flags), -1);
        CHECK_EQ(errno, EINTR);
        disarm();
        CHECK(alarms >= before + 1);
    }
    CHECK_EQ(strm_close(fds[0]), 0);
    CHECK_EQ(strm_close(fds[1]), 0);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocked call ends with EINTR */
    sigaction(SIGALRM, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);

    test_library_threads_block_signals();
    test_alarm_interrupts_read();
    ustreams_quiesce(5000);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
