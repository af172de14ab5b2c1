/* SPDX-License-Identifier: MIT */
/*
 * thread.c -- the library's own threads (scheduler, timer, bufcall, watch,
 * release) take no asynchronous signals.
 *
 * A program that ends a blocking call with alarm() expects SIGALRM to reach
 * the thread blocked in read, getmsg or t_rcv (which then fails with EINTR),
 * not a STREAMS service thread where it would interrupt nothing.  A thread
 * inherits its creator's signal mask, so every library thread is created
 * with all signals blocked; synchronous faults (SIGSEGV and the like) are
 * still delivered to the thread that causes them.
 *
 * Threads starting: a thread created but not yet running its function is
 * counted (`starting`), so that the fork handlers can let it get there
 * first (ust_threads_settle): a sanitizer's runtime takes locks while a
 * thread starts, and a child forked then would inherit them held.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "strcore.h"

static atomic_int starting; /* threads created, not yet in their function */

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_main(void *p)
{
    struct start st = *(struct start *)p;
    free(p);
    atomic_fetch_sub(&starting, 1);
    return st.fn(st.arg);
}

int ust_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    struct start *st = malloc(sizeof(*st));
    if (st == NULL)
        return EAGAIN;
    st->fn = fn;
    st->arg = arg;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_fetch_add(&starting, 1);
    int err = pthread_create(t, attr, thread_main, st);
    if (err != 0) {
        atomic_fetch_sub(&starting, 1);
        free(st);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return err;
}

void ust_threads_settle(int max_ms)
{
    for (int i = 0; i < max_ms * 10 && atomic_load(&starting) > 0; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}
