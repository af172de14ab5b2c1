/* SPDX-License-Identifier: MIT */
/*
 * test_head_closefrom.c -- a program that closes every descriptor it does
 * not know of (a closefrom(3) loop, as daemons do) takes the library's own
 * descriptor (the io_uring ring, or the epoll set where io_uring is
 * refused) away.  docs/STREAMHEAD.md, "Descriptors and readiness", Limit.
 *   C.1  streams made before keep moving data both ways, in order
 *   C.2  streams made after work fully, readiness included (poll)
 *   C.3  everything closes; no descriptor, no message block left
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

/* Close every descriptor above 2 but those in keep[0..n). */
static void close_others(const int *keep, int n)
{
    int fds[1024], nf = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && nf < 1024) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d))
            fds[nf++] = fd;
    }
    closedir(d);
    for (int i = 0; i < nf; i++) {
        int kept = 0;
        for (int k = 0; k < n; k++)
            kept |= fds[i] == keep[k];
        if (!kept)
            close(fds[i]);
    }
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", "..", the directory's own */
}

static void pass(int w, int r, int n)
{
    for (int i = 0; i < n; i++) {
        char out[16], in[16];
        int len = snprintf(out, sizeof(out), "m%d", i);
        CHECK_EQ(strm_write(w, out, (size_t)len), len);
        CHECK_EQ(strm_read(r, in, sizeof(in)), len);
        CHECK(memcmp(in, out, (size_t)len) == 0);
    }
}

int main(void)
{
    int p[2], q[2];

    /* C.1 */
    CHECK_EQ(strm_pipe(p), 0);
    pass(p[0], p[1], 10);
    close_others(p, 2);
    pass(p[0], p[1], 100);
    pass(p[1], p[0], 100);

    /* C.2 */
    CHECK_EQ(strm_pipe(q), 0);
    struct pollfd pf = {q[1], POLLIN, 0};
    CHECK_EQ(strm_poll(&pf, 1, 0), 0);
    CHECK_EQ(strm_write(q[0], "x", 1), 1);
    CHECK_EQ(strm_poll(&pf, 1, 1000), 1);
    CHECK(pf.revents & POLLIN);
    char c;
    CHECK_EQ(strm_read(q[1], &c, 1), 1);
    pass(q[0], q[1], 100);

    /* C.3 */
    int before = count_fds();
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(strm_close(q[0]), 0);
    CHECK_EQ(strm_close(q[1]), 0);
    CHECK(count_fds() <= before - 4);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
