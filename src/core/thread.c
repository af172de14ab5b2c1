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
 */
#include <pthread.h>
#include <signal.h>

#include "strcore.h"

int ust_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(t, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return err;
}
