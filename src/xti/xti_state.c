/* SPDX-License-Identifier: MIT */
/*
 * xti_state.c -- the table from descriptor to XTI endpoint entry.
 *
 * The table is an array indexed by descriptor, grown on demand, guarded by
 * xti_tab_lock (lock order and reference rules: xti_impl.h).  Descriptors
 * are real file descriptors reserved by ustreams, so they are small and
 * dense, and an array is the fastest map.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xti_impl.h"

static pthread_mutex_t xti_tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xti_ep **xti_tab; /* xti_tab_lock */
static int xti_tabsize;         /* xti_tab_lock */

void xti_ep_ref_add(struct xti_ep *ep)
{
    atomic_fetch_add(&ep->e_refs, 1);
}

void xti_ep_unref(struct xti_ep *ep)
{
    if (atomic_fetch_sub(&ep->e_refs, 1) == 1)
        xti_ep_free(ep);
}

void xti_ep_free(struct xti_ep *ep)
{
    xti_look_flush(ep);
    pthread_mutex_destroy(&ep->e_lock);
    pthread_mutex_destroy(&ep->e_rlock);
    pthread_mutex_destroy(&ep->e_wlock);
    free(ep->e_ctl);
    free(ep->e_rctl);
    free(ep->e_wctl);
    free(ep->e_mbuf);
    free(ep);
}

/* Look fd up and take a reference; NULL (TBADF) if none. */
static struct xti_ep *xti_ep_ref(int fd)
{
    struct xti_ep *ep = NULL;

    pthread_mutex_lock(&xti_tab_lock);
    if (fd >= 0 && fd < xti_tabsize)
        ep = xti_tab[fd];
    if (ep)
        atomic_fetch_add(&ep->e_refs, 1);
    pthread_mutex_unlock(&xti_tab_lock);
    if (!ep)
        xti_err(TBADF);
    return ep;
}

struct xti_ep *xti_ep_get_io(int fd, int side)
{
    struct xti_ep *ep = xti_ep_ref(fd);
    pthread_mutex_t *sl;

    if (!ep)
        return NULL;
    sl = side == XTI_RD ? &ep->e_rlock : &ep->e_wlock;
    pthread_mutex_lock(sl);
    pthread_mutex_lock(&ep->e_lock);
    if (ep->e_closed) {
        pthread_mutex_unlock(&ep->e_lock);
        pthread_mutex_unlock(sl);
        xti_ep_unref(ep);
        xti_err(TBADF);
        return NULL;
    }
    return ep;
}

void xti_ep_put_io(struct xti_ep *ep, int side)
{
    pthread_mutex_unlock(&ep->e_lock);
    pthread_mutex_unlock(side == XTI_RD ? &ep->e_rlock : &ep->e_wlock);
    xti_ep_unref(ep);
}

int xti_io_relock(struct xti_ep *ep)
{
    pthread_mutex_lock(&ep->e_lock);
    return ep->e_closed ? xti_err(TBADF) : 0;
}

struct xti_ep *xti_ep_get(int fd)
{
    struct xti_ep *ep = NULL;

    pthread_mutex_lock(&xti_tab_lock);
    if (fd >= 0 && fd < xti_tabsize)
        ep = xti_tab[fd];
    if (ep)
        atomic_fetch_add(&ep->e_refs, 1);
    pthread_mutex_unlock(&xti_tab_lock);
    if (!ep) {
        xti_err(TBADF);
        return NULL;
    }
    pthread_mutex_lock(&ep->e_lock);
    if (ep->e_closed) {
        pthread_mutex_unlock(&ep->e_lock);
        xti_ep_unref(ep);
        xti_err(TBADF);
        return NULL;
    }
    return ep;
}

void xti_ep_put(struct xti_ep *ep)
{
    pthread_mutex_unlock(&ep->e_lock);
    xti_ep_unref(ep);
}

int xti_ep_insert(struct xti_ep *ep)
{
    int fd = ep->e_fd, rc = 0;

    pthread_mutex_lock(&xti_tab_lock);
    if (fd >= xti_tabsize) {
        int n = xti_tabsize ? xti_tabsize : 64;
        while (n <= fd)
            n *= 2;
        struct xti_ep **t = realloc(xti_tab, (size_t)n * sizeof(*t));
        if (!t) {
            rc = -1;
        } else {
            memset(t + xti_tabsize, 0, (size_t)(n - xti_tabsize) * sizeof(*t));
            xti_tab = t;
            xti_tabsize = n;
        }
    }
    if (rc == 0) {
        atomic_store(&ep->e_refs, 1);
        xti_tab[fd] = ep;
    }
    pthread_mutex_unlock(&xti_tab_lock);
    return rc ? xti_syserr(ENOMEM) : 0;
}

void xti_ep_remove(struct xti_ep *ep)
{
    pthread_mutex_lock(&xti_tab_lock);
    if (ep->e_fd < xti_tabsize && xti_tab[ep->e_fd] == ep)
        xti_tab[ep->e_fd] = NULL;
    pthread_mutex_unlock(&xti_tab_lock);
    ep->e_closed = 1;
    /* the table's reference; the caller still holds its own */
    atomic_fetch_sub(&ep->e_refs, 1);
}
