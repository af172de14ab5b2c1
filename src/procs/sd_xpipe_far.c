/* SPDX-License-Identifier: MIT */
/*
 * sd_xpipe_far.c -- split pipe ends made for another process (the picture is
 * at the top of sd_xpipe.c): a new channel whose far end another process
 * adopts (the rendezvous of names and FIFOs, sd_rdv.c), the adoption itself,
 * and a stream of this process passed with I_SENDFD over a split pipe (it
 * crosses as such a new pipe, joined to the stream by a relay, sd_relay.c).
 *
 * Locking: none of its own; see sd_xpipe.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <ustreams.h>

#include "sd_names.h"
#include "sd_xpipe.h"

/* A new split end of this process on side `side` of xc with bell end
 * `bell`, with a descriptor (read and write): the descriptor, or -errno.
 * On failure the bell is closed and nothing is left. */
static int end_open(struct xchan *xc, int side, int bell, const cred_t *cr)
{
    cred_t own;
    if (cr == NULL) { /* this process's */
        ust_sd_cred(&own);
        cr = &own;
    }
    queue_t *drv;
    struct stdata *sd = ust_pipe_end_new(cr, &drv);
    struct ust_xend *xe = sd != NULL ? xp_end_new(xc, side, bell) : NULL;
    if (xe == NULL) {
        ust_sd_free(sd); /* never entered anywhere */
        close(bell);
        return -ENOSR;
    }
    atomic_store(&xe->live, 1); /* this process takes at once */
    xp_end_attach(sd, xe);
    int fd = ust_sd_attach_fd(sd);
    if (fd < 0) {
        ust_sd_teardown(sd); /* closes the end, its bell with it */
        return fd;
    }
    fcntl(fd, F_SETFD, 0);
    ust_sd_acc_set(fd, 0);
    ust_sd_register(sd);
    if (xp_end_watch(xe, 1) != 0)
        atomic_store(&xe->gone, 1); /* no epoll: the end hangs up */
    return fd;
}

int ust_xpipe_new_end(const cred_t *cr, int *fd, int *memfd, int *bell)
{
    int b[2];
    struct xchan *xc = xp_xchan_new(0);
    if (xc == NULL)
        return ENOMEM;
    int e = xp_bell_pair(b);
    if (e != 0) {
        xp_xchan_rele(xc);
        return e;
    }
    *memfd = fcntl(xring_fd(xc->ch), F_DUPFD_CLOEXEC, 0);
    if (*memfd < 0) {
        e = errno;
        close(b[0]);
        close(b[1]);
        xp_xchan_rele(xc);
        return e;
    }
    *fd = end_open(xc, 0, b[0], cr);
    xp_xchan_rele(xc); /* the end holds the channel now, if it was made */
    if (*fd < 0) {
        close(*memfd);
        close(b[1]);
        return -*fd;
    }
    *bell = b[1];
    return 0;
}

int ust_xpipe_adopt(int memfd, int bell, int side, const cred_t *cr)
{
    struct xchan *xc = calloc(1, sizeof(*xc));
    int r;

    if (xc == NULL || (side != 0 && side != 1)) {
        free(xc);
        close(bell);
        return xc == NULL ? -ENOMEM : -EINVAL;
    }
    xc->wake[0] = xc->wake[1] = -1; /* doorbells on the bell (sd_xbell.c) */
    r = xring_attach(memfd, &xc->ch); /* checks everything it maps */
    if (r != 0) {
        free(xc);
        close(bell);
        return r;
    }
    atomic_store(&xc->refs, 1);
    /* Received sockets keep their options; the bell must be the stream
     * socket of a pair (a datagram or listening socket is refused). */
    int type = 0;
    socklen_t tl = sizeof(type);
    if (getsockopt(bell, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM) {
        close(bell);
        xp_xchan_rele(xc);
        return -EINVAL;
    }
    /* The kernel's credentials come with what the far side sends on it
     * (signals and descriptors are judged by them, sd_xcross.c), even if
     * the peer that made the pair did not ask for them. */
    int on = 1;
    int fl = fcntl(bell, F_GETFL);
    if (fl < 0 || setsockopt(bell, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0 || fcntl(bell, F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(bell, F_SETFD, FD_CLOEXEC) != 0) {
        close(bell);
        xp_xchan_rele(xc);
        return -EINVAL;
    }
    r = end_open(xc, side, bell, cr);
    xp_xchan_rele(xc);
    return r;
}


/* A stream of this process crosses as the far end of a new pipe between
 * the processes whose near end is joined to it by a relay (sd_relay.c):
 * the record names two tokens, the channel's memfd (token) and the bell end
 * (token ^ XP_PASS_BELL), and carries the access mode of fd in its flags. */
int xp_sendfd_stream(struct ust_xend *xe, int fd, uint32_t token)
{
    int acc = ust_sd_acc_get(fd);
    int sfd = strm_fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the relay's own, same mode */
    int lfd, mfd, bfd, err;
    cred_t cr;

    if (sfd < 0)
        return errno == EMFILE ? EMFILE : EBADF;
    ust_sd_cred(&cr);
    err = ust_xpipe_new_end(&cr, &lfd, &mfd, &bfd);
    if (err != 0) {
        strm_close(sfd);
        return err;
    }
    err = ust_relay_start(sfd, lfd, !(acc & UST_ACC_NOREAD), !(acc & UST_ACC_NOWRITE));
    if (err == 0) {
        struct xring_msg m = {.type = M_PASSFP, .aux = token,
                              .flags = (uint16_t)(XP_PASS_STREAM | (acc & 3) << 8)};
        int r = xring_put(xe->xc->ch, xe->side, &m, NULL, 0);
        err = r == -EAGAIN ? EAGAIN : r < 0 ? ENXIO : 0;
    }
    if (err == 0) {
        err = ust_xbell_sendfd(&xe->bell, mfd, token);
        if (err == 0)
            err = ust_xbell_sendfd(&xe->bell, bfd, token ^ XP_PASS_BELL);
        if (err != 0) /* the record is there: tell the receiver to drop it */
            ust_xbell_sendfd(&xe->bell, -1, token);
    }
    close(mfd);
    close(bfd); /* the relay's pipe end hangs up if the far end never comes */
    return err;
}
