/* SPDX-License-Identifier: MIT */
/*
 * xring_view.h -- a second mapping of a ring's memfd, as a peer process sees
 * it, to look at and scribble on (tests/test_xring.c,
 * tests/test_xring_copy_hostile.c).  Needs xring.h and xring_layout.h.
 */
#ifndef USTREAMS_TESTS_XRING_VIEW_H
#define USTREAMS_TESTS_XRING_VIEW_H

#include <sys/mman.h>
#include <sys/stat.h>

struct view {
    struct xring_hdr *h;
    unsigned char *base;
    size_t len;
};

/* The whole mapping of ch's memfd; base and h NULL when it cannot be made. */
static inline struct view xr_view(struct xring_chan *ch)
{
    struct view v = {0};
    struct stat st;
    if (fstat(xring_fd(ch), &st) != 0)
        return v;
    v.len = (size_t)st.st_size;
    v.base = mmap(NULL, v.len, PROT_READ | PROT_WRITE, MAP_SHARED, xring_fd(ch), 0);
    if (v.base == MAP_FAILED) {
        v.base = NULL;
        return v;
    }
    v.h = (struct xring_hdr *)v.base;
    return v;
}

#endif
