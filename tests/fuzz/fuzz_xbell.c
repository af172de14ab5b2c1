/* SPDX-License-Identifier: MIT */
/*
 * fuzz_xbell.c -- fuzz target: the bell of a pipe split across processes
 * (src/procs/sd_xbell.c) against a peer that sends anything on it.
 *
 * Each input makes a fresh bell (a socket pair, SO_PASSCRED on our end) and
 * runs a sequence of operations taken from the input:
 *   the peer sends: a chunk of fuzzed bytes (doorbells 'b', 'F' + tokens,
 *     junk, cut anywhere), with 0..3 descriptors attached (duplicates of
 *     /dev/null) or none;
 *   this process: drains the bell (ust_xbell_drain), takes the descriptor of
 *     a fuzzed token (ust_xbell_take: it must be a descriptor we did not
 *     have before, or -1, and is closed), puts one back (ust_xbell_unget),
 *     forgets what waits (ust_xbell_forget_fds).
 * At the end the peer closes its end: the drain must see the end of file;
 * then ust_xbell_close.  Every descriptor received must have been closed or
 * handed out exactly once: the process has as many descriptors open after
 * the input as before it (otherwise abort()).  No stream is involved.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sd_xbell.h"
#include "sthead.h"

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        abort();
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* Send n bytes with k duplicates of /dev/null attached. */
static void peer_send(int fd, const uint8_t *p, size_t n, int k)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(3 * sizeof(int))];
    } c;
    int fds[3];
    struct iovec iov = {(void *)p, n};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

    if (n == 0)
        return;
    for (int i = 0; i < k; i++)
        fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (k > 0) {
        memset(&c, 0, sizeof(c));
        c.h.cmsg_level = SOL_SOCKET;
        c.h.cmsg_type = SCM_RIGHTS;
        c.h.cmsg_len = CMSG_LEN((size_t)k * sizeof(int));
        memcpy(CMSG_DATA(&c.h), fds, (size_t)k * sizeof(int));
        mh.msg_control = c.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)k * sizeof(int));
    }
    (void)sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    for (int i = 0; i < k; i++)
        close(fds[i]); /* the copies in flight are the bell's now */
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int before = open_fds();
    int sv[2], on = 1;
    struct ust_xbell b;
    size_t i = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
    ust_xbell_init(&b, sv[1]);
    while (i < size) {
        uint8_t op = data[i++];
        switch (op % 5) {
        case 0: { /* the peer sends a chunk */
            size_t n = i < size ? data[i++] % 64 : 0;
            int k = (op >> 3) % 4;
            if (n > size - i)
                n = size - i;
            peer_send(sv[0], data + i, n, k);
            i += n;
            break;
        }
        case 1:
            if (ust_xbell_drain(&b) != 0)
                abort(); /* the peer is still there */
            break;
        case 2: { /* take a token's descriptor */
            uint32_t tok = 0;
            int fd = -2;
            uid_t uid;
            gid_t gid;
            for (int k = 0; k < 4 && i < size; k++)
                tok |= (uint32_t)data[i++] << (8 * k);
            if (ust_xbell_take(&b, tok, &fd, &uid, &gid)) {
                if (fd < -1 || fd == sv[0] || fd == sv[1])
                    abort();
                if (fd >= 0)
                    close(fd);
            }
            break;
        }
        case 3: { /* take one and give it back */
            uint32_t tok = i < size ? data[i++] : 0;
            int fd;
            uid_t uid;
            gid_t gid;
            if (ust_xbell_take(&b, tok, &fd, &uid, &gid))
                ust_xbell_unget(&b, tok, fd, uid, gid);
            break;
        }
        default:
            if (op & 0x80)
                ust_xbell_forget_fds(&b);
            break;
        }
    }
    close(sv[0]);
    if (ust_xbell_drain(&b) != 1)
        abort(); /* the peer's close is an end of file */
    ust_xbell_close(&b);
    if (open_fds() != before)
        abort(); /* a descriptor received was leaked (or closed twice) */
    return 0;
}
