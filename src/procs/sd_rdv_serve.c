/* SPDX-License-Identifier: MIT */
/*
 * sd_rdv_serve.c -- the rendezvous, the owner's side: serving one request
 * (an open of an fattach name, a detach; FIFO opens: sd_fifo_name.c
 * ust_fifo_serve) and the client's access proof (row C).  The accepting
 * thread, the pool and the budgets are in sd_rdv.c, whose opening comment
 * has the design; the wire format is sd_rdv.h's.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stropts.h>
#include <unistd.h>
#include <ustreams.h>

#include "sd_names.h"
#include "sd_rdv.h"
#include "sd_xpipe.h"
#include "sthead.h"

int ust_rdv_want_of(int oflag)
{
    switch (oflag & O_ACCMODE) {
    case O_RDONLY:
        return R_OK;
    case O_WRONLY:
        return W_OK;
    default:
        return R_OK | W_OK;
    }
}

/* Reply err on fd with the proof node first, then nfd more descriptors. */
int ust_rdv_reply(int fd, int err, int node, const int *fds, int nfd)
{
    struct rdv_rep rep = {.magic = RDV_MAGIC, .err = err, .side = 1};
    int all[3] = {node, -1, -1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(3 * sizeof(int))];
    } u;
    struct iovec iov = {&rep, sizeof(rep)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    for (int i = 0; i < nfd && i < 2; i++)
        all[1 + i] = fds[i];
    int n = 1 + (nfd < 2 ? nfd : 2);
    memset(&u, 0, sizeof(u));
    mh.msg_control = u.b;
    mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(c), all, n * sizeof(int));
    return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(rep) ? 0 : EPIPE;
}

/* The client's proof (row C): may the peer of c have `want` (R_OK | W_OK;
 * 0: reach the node by its path) on the node?  1 or 0. */
int ust_rdv_check_access(const struct rdv_conn *c, int want)
{
    struct stat cs, ns;
    if (c->cfd < 0 || fstat(c->cfd, &cs) != 0 || cs.st_dev != c->dev || cs.st_ino != c->ino)
        return 0;
    int fl = fcntl(c->cfd, F_GETFL);
    if (fl < 0)
        return 0;
    if (want == 0)
        return 1;
    if (!(fl & O_PATH)) /* the kernel checked the access it was opened with */
        return (ust_rdv_want_of(fl) & want) == want;
    return fstat(c->node, &ns) == 0 && ust_rdv_admits(&ns, c->uc.uid, c->groups, c->ngroups, want);
}

/* A new pipe for the peer: its near end joined to the stream sfd by a relay
 * (sfd is consumed), its far end's descriptors sent.  The relay carries what
 * the peer may do: up when it reads, down when it writes. */
int ust_rdv_serve_relay(int conn, int node, int sfd, int oflag)
{
    int lfd, mfd, bfd;
    cred_t cr;
    ust_sd_cred(&cr);
    int err = ust_xpipe_new_end(&cr, &lfd, &mfd, &bfd);
    if (err != 0) {
        strm_close(sfd);
        return err;
    }
    int want = ust_rdv_want_of(oflag);
    err = ust_relay_start(sfd, lfd, (want & R_OK) != 0, (want & W_OK) != 0);
    if (err == 0) {
        int fds[2] = {mfd, bfd};
        ust_rdv_reply(conn, 0, node, fds, 2);
    }
    close(mfd);
    close(bfd);
    return err == 0 ? -1 : err; /* -1: replied */
}

/* connld: a new pipe whose near end goes to the server up the attached
 * stream sd, with the client's ids; the far end to the client. */
static int serve_connld(struct rdv_conn *p, struct stdata *sd)
{
    int lfd, mfd, bfd;
    cred_t cr;
    ust_sd_cred(&cr);
    int err = ust_xpipe_new_end(&cr, &lfd, &mfd, &bfd);
    if (err != 0)
        return err;
    err = ust_sd_sendfd_cred(sd, lfd, p->uc.uid, p->uc.gid, 0);
    strm_close(lfd); /* the message in flight holds it (or it is closed: the peer sees a hang-up) */
    if (err == 0) {
        int fds[2] = {mfd, bfd};
        ust_rdv_reply(p->fd, 0, p->node, fds, 2);
    }
    close(mfd);
    close(bfd);
    return err == 0 ? -1 : err;
}

/* An open of an fattach name (access checked): an errno, or -1 when a reply
 * went. */
int ust_rdv_serve_name_open(struct rdv_conn *p, int oflag)
{
    struct stdata *sd = ust_fattach_lookup(p->dev, p->ino, NULL, 0);
    int err;

    if (sd == NULL)
        return ENOENT; /* detached meanwhile */
    if (ust_sd_top_is(sd, "connld")) {
        err = serve_connld(p, sd);
        ust_sd_rele(sd);
        return err;
    }
    cred_t cr;
    ust_sd_cred(&cr);
    int sfd = ust_sd_open_attached(sd, O_RDWR, &cr); /* the relay's own descriptor; takes sd */
    return sfd < 0 ? -sfd : ust_rdv_serve_relay(p->fd, p->node, sfd, oflag);
}

/* An fdetach from another process: its owner or the superuser. */
int ust_rdv_serve_detach(struct rdv_conn *p)
{
    struct stat st;
    struct stdata *sd = ust_fattach_lookup(p->dev, p->ino, NULL, 0);
    if (sd == NULL)
        return EINVAL;
    ust_sd_rele(sd);
    if (p->uc.uid != 0 && (fstat(p->node, &st) != 0 || st.st_uid != p->uc.uid))
        return EPERM;
    return ust_fattach_detach_key(p->dev, p->ino);
}

