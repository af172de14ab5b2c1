/* SPDX-License-Identifier: MIT */
/*
 * xring_map.c -- making, attaching and destroying the channels of xring.h:
 * a sealed memfd with the header page and two rings (xring_layout.h),
 * mapped shared.  Attach trusts nothing it maps: the header's geometry is
 * checked against the file's size and kept in the handle, which is all the
 * rest (xring.c) goes by; an unsealed file is refused (it could shrink
 * under the mapping: SIGBUS).  Also the small calls on a channel's state
 * that touch no record: the doorbell, shut, the peer's descriptor, cancel.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forksafe.h"
#include "xring.h"
#include "xring_layout.h"
#include "xring_priv.h"

/* Map fd (total bytes) and fill in the handle from the geometry given. */
static int xr_map(int fd, size_t total, uint32_t size, uint32_t hiwat, uint32_t lowat,
                  struct xring_chan **out)
{
    struct xring_chan *ch = calloc(1, sizeof(*ch));
    if (!ch)
        return -ENOMEM;
    void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int err = errno;
        free(ch);
        return -err;
    }
    struct xring_hdr *h = map;
    ch->fd = fd;
    ch->peer_fd[0] = ch->peer_fd[1] = -1; /* none until xring_set_peer */
    ch->map = map;
    ch->map_len = total;
    ch->size = size;
    ch->mask = size - 1;
    ch->hiwat = hiwat;
    ch->lowat = lowat;
    for (int d = 0; d < 2; d++) {
        ch->ctl[d] = &h->h_ring[d];
        ch->data[d] = ch->map + XRING_HDR_BYTES + (size_t)d * size;
    }
    *out = ch;
    return 0;
}

int xring_create(size_t ring_bytes, uint32_t hiwat, uint32_t lowat, struct xring_chan **out)
{
    uint32_t size = XRING_RING_MIN;
    int fd, err;

    if (!out || ring_bytes > XRING_RING_MAX)
        return -EINVAL;
    while (size < ring_bytes)
        size <<= 1;
    if (hiwat > size || lowat >= hiwat)
        return -EINVAL;
    ust_fork_init(); /* ust_getpid follows fork() */
    size_t total = XRING_HDR_BYTES + 2 * (size_t)size;
    fd = memfd_create("ustreams-xring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)total) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        err = -errno;
        goto fail;
    }
    err = xr_map(fd, total, size, hiwat, lowat, out);
    if (err != 0)
        goto fail;
    struct xring_hdr *h = (struct xring_hdr *)(*out)->map;
    h->h_version = XRING_VERSION;
    h->h_hdr_bytes = XRING_HDR_BYTES;
    h->h_ring_bytes = size;
    h->h_hiwat = hiwat;
    h->h_lowat = lowat;
    h->h_total = total;
    __atomic_store_n(&h->h_magic, XRING_MAGIC, __ATOMIC_RELEASE);
    return 0;
fail:
    close(fd);
    return err;
}

int xring_attach(int fd, struct xring_chan **out)
{
    struct stat st;
    struct xring_chan *ch;
    int err = -EINVAL, seals;

    if (!out || fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -EINVAL;
    if (st.st_size < (off_t)XRING_HDR_BYTES + 2 * (off_t)XRING_RING_MIN ||
        st.st_size > (off_t)XRING_HDR_BYTES + 2 * (off_t)XRING_RING_MAX)
        return -EINVAL;
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
        return -EINVAL; /* could be cut under our feet: SIGBUS */
    ust_fork_init();
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (nfd < 0)
        return -errno;
    /* Map it all (the size is bounded above), then check what it says. */
    err = xr_map(nfd, (size_t)st.st_size, XRING_RING_MIN, 1, 0, &ch);
    if (err != 0) {
        close(nfd);
        return err;
    }
    const struct xring_hdr *h = (const struct xring_hdr *)ch->map;
    uint32_t magic = __atomic_load_n(&h->h_magic, __ATOMIC_ACQUIRE);
    uint32_t version = __atomic_load_n(&h->h_version, __ATOMIC_RELAXED);
    uint32_t hdr_bytes = __atomic_load_n(&h->h_hdr_bytes, __ATOMIC_RELAXED);
    uint32_t size = __atomic_load_n(&h->h_ring_bytes, __ATOMIC_RELAXED);
    uint32_t hiwat = __atomic_load_n(&h->h_hiwat, __ATOMIC_RELAXED);
    uint32_t lowat = __atomic_load_n(&h->h_lowat, __ATOMIC_RELAXED);
    uint64_t total = __atomic_load_n(&h->h_total, __ATOMIC_RELAXED);
    if (magic != XRING_MAGIC || version != XRING_VERSION || hdr_bytes != XRING_HDR_BYTES ||
        size < XRING_RING_MIN || size > XRING_RING_MAX || (size & (size - 1)) != 0 ||
        total != XRING_HDR_BYTES + 2 * (uint64_t)size || total != (uint64_t)st.st_size ||
        hiwat > size || lowat >= hiwat) {
        xring_destroy(ch);
        return -EINVAL;
    }
    ch->size = size;
    ch->mask = size - 1;
    ch->hiwat = hiwat;
    ch->lowat = lowat;
    ch->data[1] = ch->map + XRING_HDR_BYTES + size;
    *out = ch;
    return 0;
}

void xring_marks(const struct xring_chan *ch, uint32_t *hiwat, uint32_t *lowat)
{
    if (hiwat)
        *hiwat = ch->hiwat;
    if (lowat)
        *lowat = ch->lowat;
}

int xring_fd(const struct xring_chan *ch)
{
    return ch ? ch->fd : -1;
}

void xring_destroy(struct xring_chan *ch)
{
    if (!ch)
        return;
    munmap(ch->map, ch->map_len);
    close(ch->fd);
    free(ch);
}

/* ------------------------------------------------ doorbells, shut, peer */

uint32_t xring_bell_value(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return 0;
    return __atomic_load_n(&ch->ctl[dir]->x_bell, __ATOMIC_ACQUIRE);
}

int xring_wait(struct xring_chan *ch, int dir, uint32_t seen, int timeout_ms)
{
    struct timespec ts, *tp = NULL;

    if (!xr_dir_ok(ch, dir))
        return -EINVAL;
    if (timeout_ms >= 0) {
        ts.tv_sec = timeout_ms / 1000;
        ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
        tp = &ts;
    }
    if (xr_futex(&ch->ctl[dir]->x_bell, FUTEX_WAIT, seen, tp) != 0 && errno == EINTR)
        return -EINTR;
    return 0;
}

void xring_ring(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return;
    uint32_t *bell = &ch->ctl[dir]->x_bell;
    __atomic_fetch_add(bell, 1, __ATOMIC_RELEASE);
    xr_futex(bell, FUTEX_WAKE, INT_MAX, NULL);
}

void xring_shut(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return;
    __atomic_store_n(&ch->ctl[dir]->x_shut, 1, __ATOMIC_RELEASE);
    xring_ring(ch, dir);
}

int xring_is_shut(struct xring_chan *ch, int dir)
{
    if (!xr_dir_ok(ch, dir))
        return 0;
    return __atomic_load_n(&ch->ctl[dir]->x_shut, __ATOMIC_ACQUIRE) != 0;
}

void xring_set_peer(struct xring_chan *ch, int side, int fd)
{
    if (xr_dir_ok(ch, side))
        __atomic_store_n(&ch->peer_fd[side], fd, __ATOMIC_RELAXED);
}

void xring_cancel(struct xring_chan *ch, int side)
{
    if (xr_dir_ok(ch, side))
        __atomic_store_n(&ch->cancel[side], 1, __ATOMIC_RELAXED);
}
