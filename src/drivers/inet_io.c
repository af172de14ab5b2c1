/* SPDX-License-Identifier: MIT */
/*
 * inet_io.c -- the epoll thread of the providers over kernel sockets
 * (inet_io.h has the contract and the lock legend).
 *
 * Principles of operation
 *   One thread, started on the first registration, waits in epoll_wait and
 *   for each ready socket qenables the endpoint's read queue (readable,
 *   urgent data, error) or write queue (writable; EPOLLOUT is armed only while a send is
 *   blocked, and disarmed when it fires).  Each batch of events is one
 *   library call of the thread (ust_call_begin/ust_call_end): the queues it
 *   enabled run on this thread, with the executive's claims, once io_lock
 *   is released -- the datagrams go up the stream with no hand-over to a
 *   scheduler thread (one context switch less per wake-up); what is beyond
 *   the call's budget goes to the scheduler threads.
 *   Deletion: events returned by one epoll_wait are handled under io_lock,
 *   and each handled batch ends a "round".  inet_io_del marks the
 *   registration gone and removes it from epoll under io_lock, then kicks
 *   the thread (eventfd) and waits for the round to advance: an event for
 *   it fetched before the removal is either handled already or will be seen
 *   gone.  So after inet_io_del nothing of the epoll thread refers to it.
 *   On the epoll thread itself (a service procedure it runs unbinds) no
 *   round is in progress: the events were handled before the procedures
 *   ran, so there is nothing to wait for.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "forksafe.h"
#include "inet_io.h"
#include "strcore.h"

#define IO_EVENTS 64

static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t io_cv = PTHREAD_COND_INITIALIZER; /* with io_lock: a round ended */
static int io_epfd = -1;         /* io_lock: the epoll instance, -1 before the first add */
static int io_wakefd = -1;       /* io_lock: eventfd that interrupts epoll_wait */
static int io_started;           /* io_lock: the thread runs */
static pthread_t io_tid;         /* io_lock: the thread, while io_started */
static unsigned long io_round;   /* io_lock: rounds completed by the thread */
static struct inet_io io_head = {.next = &io_head, .prev = &io_head}; /* io_lock */
static pthread_once_t io_once = PTHREAD_ONCE_INIT;

static void *io_thread(void *arg)
{
    struct epoll_event ev[IO_EVENTS];
    int epfd = (int)(intptr_t)arg;

    for (;;) {
        int n = epoll_wait(epfd, ev, IO_EVENTS, -1);
        if (n < 0 && errno != EINTR)
            break;
        ust_call_begin(); /* the enables below run here, at ust_call_end */
        pthread_mutex_lock(&io_lock);
        for (int i = 0; i < n; i++) {
            struct inet_io *io = ev[i].data.ptr;
            if (io == NULL) { /* the wake-up eventfd */
                uint64_t v;
                if (read(io_wakefd, &v, sizeof(v)) < 0)
                    v = 0;
                continue;
            }
            if (io->gone)
                continue;
            if (ev[i].events & EPOLLERR)
                atomic_store(&io->err, 1);
            if (ev[i].events & EPOLLPRI)
                atomic_store(&io->pri, 1);
            if (ev[i].events & (EPOLLIN | EPOLLPRI | EPOLLERR | EPOLLHUP))
                qenable(io->rq);
            if ((ev[i].events & EPOLLOUT) && io->out) {
                struct epoll_event e = {.events = EPOLLIN | EPOLLPRI | EPOLLET, .data.ptr = io};
                io->out = 0;
                epoll_ctl(epfd, EPOLL_CTL_MOD, io->fd, &e);
                qenable(WR(io->rq));
            }
        }
        io_round++;
        pthread_cond_broadcast(&io_cv);
        pthread_mutex_unlock(&io_lock);
        ust_call_end(); /* no lock held: the service procedures of the batch */
    }
    return NULL;
}

/* fork(): io_lock is a leaf held briefly.  The child shares the parent's
 * epoll instance and sockets: it closes its descriptors of them (its
 * endpoints are detached and never do I/O) and forgets the thread. */
static void io_fork_prepare(void)
{
    pthread_mutex_lock(&io_lock);
}

static void io_fork_parent(void)
{
    pthread_mutex_unlock(&io_lock);
}

static void io_fork_child(void)
{
    for (struct inet_io *io = io_head.next; io != &io_head; io = io->next)
        close(io->fd);
    io_head.next = io_head.prev = &io_head;
    if (io_epfd >= 0)
        close(io_epfd);
    if (io_wakefd >= 0)
        close(io_wakefd);
    io_epfd = io_wakefd = -1;
    io_started = 0;
    pthread_cond_init(&io_cv, NULL);
    pthread_mutex_unlock(&io_lock);
}

static void io_fork_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, io_fork_prepare, io_fork_parent, io_fork_child);
}

void inet_io_init(void)
{
    pthread_once(&io_once, io_fork_register);
}

/* Under io_lock: the epoll instance and its thread exist; 0 or an errno. */
static int io_start(void)
{
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
    pthread_t t;
    int rc;

    if (io_started)
        return 0;
    io_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (io_epfd < 0)
        return errno;
    io_wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (io_wakefd < 0 || epoll_ctl(io_epfd, EPOLL_CTL_ADD, io_wakefd, &e) < 0) {
        rc = errno;
        goto fail;
    }
    rc = ust_thread_create(&t, NULL, io_thread, (void *)(intptr_t)io_epfd);
    if (rc != 0)
        goto fail;
    io_tid = t; /* joinable, like the executive's threads: never joined (it runs until exit) */
    io_started = 1;
    return 0;
fail:
    if (io_wakefd >= 0)
        close(io_wakefd);
    close(io_epfd);
    io_epfd = io_wakefd = -1;
    return rc;
}

int inet_io_add(struct inet_io *io, int fd, queue_t *rq)
{
    struct epoll_event e = {.events = EPOLLIN | EPOLLPRI | EPOLLET, .data.ptr = io};
    int rc;

    pthread_mutex_lock(&io_lock);
    rc = io_start();
    if (rc == 0) {
        io->rq = rq;
        io->fd = fd;
        io->out = 0;
        io->gone = 0;
        atomic_store(&io->err, 0);
        atomic_store(&io->pri, 0);
        if (epoll_ctl(io_epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
            rc = errno;
        } else {
            io->next = io_head.next;
            io->prev = &io_head;
            io_head.next->prev = io;
            io_head.next = io;
        }
    }
    pthread_mutex_unlock(&io_lock);
    return rc;
}

void inet_io_want_out(struct inet_io *io)
{
    struct epoll_event e = {.events = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLET, .data.ptr = io};

    pthread_mutex_lock(&io_lock);
    if (!io->out && !io->gone) {
        io->out = 1;
        epoll_ctl(io_epfd, EPOLL_CTL_MOD, io->fd, &e);
    }
    pthread_mutex_unlock(&io_lock);
}

void inet_io_del(struct inet_io *io)
{
    uint64_t one = 1;
    unsigned long r;

    pthread_mutex_lock(&io_lock);
    io->gone = 1;
    epoll_ctl(io_epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->prev->next = io->next;
    io->next->prev = io->prev;
    r = io_round;
    if (io_started && pthread_equal(pthread_self(), io_tid)) {
        pthread_mutex_unlock(&io_lock); /* between rounds (above) */
        return;
    }
    if (write(io_wakefd, &one, sizeof(one)) < 0)
        one = 0;
    while (io_round == r)
        pthread_cond_wait(&io_cv, &io_lock);
    pthread_mutex_unlock(&io_lock);
}
