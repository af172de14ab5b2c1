/* SPDX-License-Identifier: MIT */
/*
 * sd_xexec_share.c -- a stream of another process of the user, reached by
 *   a descriptor inherited through fork(), carried across an exec.
 *
 * Principles of operation
 *   After fork() the child's copy of a stream that is not a pipe (a
 *   driver's stream: echo, a transport endpoint...) is detached: the stream
 *   lives on in the process that opened it, its *owner* (sd_cred.cr_pid).
 *   When the child execs with such a descriptor (a shell running
 *   `head <&3`), the new image asks the owner to serve it: just before the
 *   exec (sd_xexec.c) it connects to the owner's published socket
 *   (src/admin/publish.c, "<rundir>/proc.<pid>"), sends "share" with the
 *   descriptor itself (SCM_RIGHTS) as the proof that it holds the stream,
 *   and receives the far side of a new pipe whose near end the owner joins
 *   to the stream with a relay (sd_relay.c), exactly as a stream passed
 *   with I_SENDFD over a split pipe crosses (sd_xpipe_far.c).  The far side
 *   then travels in the exec description as a split pipe end named by the
 *   descriptor's numbers.  Whoever reads first gets a message, the owner
 *   or the relay (as two processes sharing one stream on Solaris).
 *
 *   The owner serves (ust_exec_share_serve, on its publish thread): the
 *   asker has the owner's effective uid (checked by the publish thread),
 *   and the descriptor it passed is the readiness socket of a stream of
 *   the owner's table (device and inode), with a live descriptor here.
 *   Anything else is refused (EPERM, ENOENT): a process can get a relay
 *   only to a stream whose descriptor it already holds.
 *
 * Locking: none of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <ustreams.h>

#include "procs.h"
#include "rundir.h"
#include "sd_names.h"
#include "sd_preload.h"
#include "sd_xpipe.h"

enum { SHARE_MS = 2000 }; /* the whole exchange with the owner, at most */

/* ---- the owner ---- */

int ust_exec_share_serve(int rfd, int *mfd, int *bfd, int *acc)
{
    struct stat st;
    struct rlimit rl;
    int fd = -1;

    if (fstat(rfd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return EPERM;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (long)rl.rlim_cur
                                                                               : 1L << 20;
    for (long n = 0; n < max && fd < 0; n++) {
        if (!ust_fd_is_stream((int)n))
            continue;
        int err;
        struct stdata *sd = ust_sd_get((int)n, &err);
        if (sd == NULL)
            continue;
        if (!ust_sd_forked(sd) && sd->sd_uino == (unsigned long long)st.st_ino &&
            sd->sd_udev == (unsigned long long)st.st_dev && ust_sd_fd_is((int)n, sd))
            fd = (int)n;
        ust_sd_put(sd);
    }
    if (fd < 0)
        return ENOENT;
    *acc = ust_sd_acc_get(fd);
    int sfd = strm_fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the relay's own, same mode */
    if (sfd < 0)
        return errno == EMFILE ? EMFILE : EBADF;
    cred_t cr;
    ust_sd_cred(&cr);
    int lfd, err = ust_xpipe_new_end(&cr, &lfd, mfd, bfd);
    if (err != 0) {
        strm_close(sfd);
        return err;
    }
    err = ust_relay_start(sfd, lfd, !(*acc & UST_ACC_NOREAD), !(*acc & UST_ACC_NOWRITE));
    if (err != 0) {
        close(*mfd);
        close(*bfd);
    }
    return err;
}

/* ---- the asker ---- */

static int wait_for(int fd, short ev, int ms)
{
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, ms);
    return r > 0 ? 0 : r == 0 ? ETIMEDOUT : errno;
}

int ust_exec_share_ask(pid_t owner, int ufd, int *mfd, int *bfd, int *acc)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char dir[sizeof(sa.sun_path)];
    if (ust_rundir(dir, sizeof(dir)) != 0 ||
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/proc.%d", dir, (int)owner) >=
            (int)sizeof(sa.sun_path))
        return ENOENT;
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return errno;
    int err = 0;
    if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        err = errno;
        goto out;
    }
    /* The request, with the descriptor as the proof. */
    char req[] = "share\n";
    struct iovec iov = {req, sizeof(req) - 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(2 * sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                        .msg_controllen = CMSG_SPACE(sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &ufd, sizeof(int));
    if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)iov.iov_len) {
        err = errno != 0 ? errno : EIO;
        goto out;
    }
    /* The answer: "ok <acc>\n" with the memfd and the bell, or "error <n>\n". */
    char ans[64];
    if ((err = wait_for(s, POLLIN, SHARE_MS)) != 0)
        goto out;
    iov = (struct iovec){ans, sizeof(ans) - 1};
    memset(&cm, 0, sizeof(cm));
    mh = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                         .msg_controllen = sizeof(cm.b)};
    ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    int fds[2] = {-1, -1}, nfd = 0;
    for (c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (nfd < 2)
                    fds[nfd++] = f;
                else
                    close(f);
            }
        }
    int a = 0;
    if (n <= 0 || (mh.msg_flags & MSG_CTRUNC)) {
        err = EIO;
    } else {
        ans[n] = '\0';
        if (sscanf(ans, "ok %d", &a) != 1 || nfd != 2 || a < 0 || a > 3) {
            int e = 0;
            err = sscanf(ans, "error %d", &e) == 1 && e > 0 && e < 4096 ? e : EIO;
        }
    }
    if (err != 0) {
        for (int i = 0; i < nfd; i++)
            close(fds[i]);
        goto out;
    }
    *mfd = fds[0];
    *bfd = fds[1];
    *acc = a;
out:
    close(s);
    return err;
}
