/* SPDX-License-Identifier: MIT */
/*
 * sd_rdv_client.c -- the rendezvous, the client's side: find the real owner
 * of a name (fattach name or named FIFO) among the listeners that claim it,
 * show it an access proof, get the far end of a new pipe.  sd_rdv.c's
 * opening comment has the design and why a squatter gets nothing.
 *
 * Principles of operation
 *   A name's owner listens at its base name ("\0ustreams/k/dev:ino") or,
 *   when a squatter holds that, at an alternative one ("<base>/<64 random
 *   bits>") until the base name is free again: it takes it back within
 *   RDV_RECLAIM_MS (sd_rdv.c, reclaim).  A client connects to the base
 *   name first:
 *     - nobody holds it (connect refused, and a bind of the name on the same
 *       socket succeeds): no owner, at once (ENOENT) -- the common case of
 *       a plain path costs one failed connect and one bind, nothing opened;
 *     - the owner listens there: asked, done;
 *     - another socket holds it (a listener not entitled or without the
 *       proof, a full backlog, a socket bound but not listening): a
 *       squatter; then every listening alternative /proc/net/unix shows is
 *       tried too.
 *   It takes the first listener that
 *     1. is entitled (kernel credentials of the listener, SO_PEERCRED and
 *        SO_PEERGROUPS: fattach: the file's owner or root; FIFO: a user the
 *        mode lets read and write it, or root) -- checked before anything
 *        is sent to it; and
 *     2. proves it: its reply carries a descriptor of the node
 *        (st_dev, st_ino) the client opened by the path.
 *   Any other listener is skipped: a squatter costs the client one connect
 *   per socket it holds, and never sees a request (1 fails first).  A
 *   listener whose backlog is full is skipped after ~20 ms (ours accept at
 *   once, with a backlog of SOMAXCONN).  Between a squatter leaving the
 *   base name and the owner taking it back, a client finds no owner (the
 *   window of docs/SECURITY.md, "Names").  A new owner's probe for another
 *   owner (ust_rdv_other_owner) always reads the alternatives.
 *
 *   The request carries the client's own descriptor of the node, opened by
 *   the path with the client's credentials once a listener is there (after
 *   the connect: nothing is sent before the listener is verified): a
 *   regular file with the access asked (O_NONBLOCK | O_NOCTTY: the kernel
 *   checked directories, ACLs and mode), anything else (a FIFO node: opening it would count as its
 *   reader or writer) with O_PATH (the kernel checked the directories; the
 *   owner checks the mode against the client's kernel credentials).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sd_names.h"
#include "sd_rdv.h"
#include "sd_xpipe.h"
#include "sthead.h"

/* Does st admit uid (with groups) for `want` (R_OK|W_OK bits)? */
int ust_rdv_admits(const struct stat *st, uid_t uid, const gid_t *gid, int ngid, int want)
{
    int bits;
    if (uid == 0)
        return 1;
    if (uid == st->st_uid) {
        bits = (st->st_mode >> 6) & 7;
    } else {
        bits = st->st_mode & 7;
        for (int i = 0; i < ngid; i++)
            if (gid[i] == st->st_gid) {
                bits = (st->st_mode >> 3) & 7;
                break;
            }
    }
    return (bits & want) == want;
}

int ust_rdv_entitled(int kind, const struct stat *st, uid_t uid, const gid_t *g, int ng)
{
    if (uid == 0)
        return 1;
    if (kind == UST_RDV_NAME)
        return uid == st->st_uid;
    return ust_rdv_admits(st, uid, g, ng, R_OK | W_OK);
}

/* The client's access proof: a descriptor of the node at path, opened with
 * this process's credentials (see above).  The descriptor, or -errno
 * (EACCES: the path does not let us; ENOENT: it names another node now). */
static int client_node(const char *path, const struct stat *st, int oflag)
{
    int fd = -1;
    struct stat fs;
    if (S_ISREG(st->st_mode)) {
        fd = open(path, (oflag & O_ACCMODE) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS))
            return -EACCES;
    }
    if (fd < 0)
        fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &fs) != 0 || fs.st_dev != st->st_dev || fs.st_ino != st->st_ino) {
        close(fd);
        return -ENOENT;
    }
    return fd;
}

static int send_req(int s, const struct rdv_req *req, int cfd)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    struct iovec iov = {(void *)req, sizeof(*req)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                        .msg_controllen = sizeof(u.b)};
    memset(&u, 0, sizeof(u));
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &cfd, sizeof(int));
    return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*req) ? 0 : -1;
}

/* A new socket connected to (a, al): the socket; -2 when the listener's
 * backlog is full; -3 when nobody holds the name (base: a name is the base
 * one, where only that is told: an alternative's absence needs no proof);
 * -1 otherwise: absent alternative, or held by a socket that does not
 * listen (connect says ECONNREFUSED both for that and for nobody: a bind
 * of the name on the same socket tells them apart, and releases it at
 * once with the socket). */
static int connect_name(const struct sockaddr_un *a, socklen_t al, int base)
{
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r;
    if (s < 0)
        return -1;
    if (connect(s, (const struct sockaddr *)a, al) == 0)
        return s;
    r = errno == EAGAIN ? -2 : -1;
    if (base && (errno == ECONNREFUSED || errno == ENOENT) &&
        bind(s, (const struct sockaddr *)a, al) == 0)
        r = -3;
    close(s);
    return r;
}

/* Ask the listener s is connected to (s is consumed): 0 and fds[0..nwant-1];
 * an errno its verified owner answered; or -1 when it is not the owner (not
 * entitled, no proof). */
static int ask(int s, int kind, const struct stat *st, const struct rdv_req *req, int cfd,
               int fds[2], int nwant)
{
    struct ucred uc;
    gid_t g[RDV_MAXGROUPS + 1];
    socklen_t l = sizeof(uc);
    int ng = 0, r = -1;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &l) != 0)
        goto out;
    l = sizeof(gid_t) * RDV_MAXGROUPS;
    if (getsockopt(s, SOL_SOCKET, SO_PEERGROUPS, g, &l) == 0)
        ng = (int)(l / sizeof(gid_t));
    g[ng++] = uc.gid;
    if (!ust_rdv_entitled(kind, st, uc.uid, g, ng))
        goto out; /* a squatter: it sees nothing of ours */
    int fl = fcntl(s, F_GETFL);
    if (fl < 0 || fcntl(s, F_SETFL, fl & ~O_NONBLOCK) != 0 || send_req(s, req, cfd) != 0)
        goto out;
    if (req->op == RDV_PROBE) {
        /* A new owner probing, under its name table's lock: a listener
         * that does not answer within the bound is taken as no owner. */
        struct timeval tv = {RDV_PROBE_WAIT_S, 0};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }

    struct rdv_rep rep;
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(4 * sizeof(int))];
    } u;
    struct iovec iov = {&rep, sizeof(rep)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                        .msg_controllen = sizeof(u.b)};
    int got[4], ngot = 0;
    ssize_t n;
    do
        n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && ngot < 4; i++)
                memcpy(&got[ngot++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    struct stat ps;
    if (n == (ssize_t)sizeof(rep) && rep.magic == RDV_MAGIC && ngot >= 1 && fstat(got[0], &ps) == 0 &&
        ps.st_dev == st->st_dev && ps.st_ino == st->st_ino) {
        /* The owner, proven. */
        r = rep.err != 0 ? (rep.err > 0 && rep.err < 4096 ? rep.err : EPROTO)
            : ngot != 1 + nwant || rep.side != 1 || (mh.msg_flags & MSG_CTRUNC) ? EPROTO
            : 0;
        if (r == 0) {
            for (int i = 0; i < nwant; i++)
                fds[i] = got[1 + i];
            ngot = 1;
        }
    }
    for (int i = 0; i < ngot; i++)
        close(got[i]);
out:
    close(s);
    return r;
}

/* One look at the listeners of (kind, st) but own: 0 with fds, an errno
 * from the verified owner, -1 when none proves it owns the name, -2 when
 * none does but one had its backlog full, -3 when nobody holds the base
 * name (no owner: see the opening comment; a probe looks further still).
 * s0: a socket already connected to the base name (consumed), or -1.
 * The alternatives in /proc/net/unix are read only when the base name is
 * held by a socket that is not the owner's (or a probe, or own is it). */
static int rdv_pass(int kind, const struct stat *st, const struct rdv_req *req, int cfd, int fds[2],
                    int nwant, const struct sockaddr_un *own, int s0)
{
    struct sockaddr_un a;
    socklen_t al = ust_rdv_addr(&a, kind, st->st_dev, st->st_ino, 0);
    char prefix[80], line[512], name[128];
    int r = -1, busy = 0, s = s0;

    if (s < 0 && (own == NULL || memcmp(own->sun_path, a.sun_path, sizeof(a.sun_path)) != 0))
        s = connect_name(&a, al, 1);
    if (s >= 0)
        r = ask(s, kind, st, req, cfd, fds, nwant);
    else
        r = s;
    if (r >= 0 || (r == -3 && req->op != RDV_PROBE))
        return r;
    busy = r == -2;
    /* A squatter at the base name: the listening alternatives. */
    FILE *f = fopen("/proc/net/unix", "re");
    if (f == NULL)
        return busy ? -2 : -1;
    int pl = snprintf(prefix, sizeof(prefix), "@%s/", a.sun_path + 1);
    r = -1;
    while (r < 0 && fgets(line, sizeof(line), f) != NULL) {
        unsigned flags;
        if (sscanf(line, "%*s %*x %*x %x %*x %*x %*u %127s", &flags, name) != 2 ||
            !(flags & 0x10000) || strncmp(name, prefix, pl) != 0 || strlen(name + pl) != 16)
            continue;
        char *end;
        uint64_t alt = strtoull(name + pl, &end, 16);
        if (*end != '\0' || alt == 0)
            continue;
        al = ust_rdv_addr(&a, kind, st->st_dev, st->st_ino, alt);
        if (own != NULL && memcmp(own->sun_path, a.sun_path, sizeof(a.sun_path)) == 0)
            continue;
        s = connect_name(&a, al, 0);
        r = s >= 0 ? ask(s, kind, st, req, cfd, fds, nwant) : s;
        busy |= r == -2;
    }
    fclose(f);
    return r >= 0 ? r : busy ? -2 : -1;
}

/* Ask the owner of (kind, st), skipping the name own (NULL: none): 0 with
 * fds, an errno from the verified owner, or ENOENT when no listener proves
 * it owns the name.  s0: a socket connected to the base name (consumed),
 * or -1.  Listeners whose backlog is full are looked at again, every 2 ms
 * for up to 20 ms (an owner accepts at once; a squatter's full backlog
 * costs a connect a look, not a wait each). */
static int rdv_call(int kind, const struct stat *st, const struct rdv_req *req, int cfd, int fds[2],
                    int nwant, const struct sockaddr_un *own, int s0)
{
    int r = rdv_pass(kind, st, req, cfd, fds, nwant, own, s0);
    for (int i = 0; r == -2 && i < 10; i++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        r = rdv_pass(kind, st, req, cfd, fds, nwant, own, -1);
    }
    return r >= 0 ? r : ENOENT;
}

int ust_rdv_other_owner(int kind, const struct stat *st, int node, const struct sockaddr_un *own)
{
    struct rdv_req req = {.magic = RDV_MAGIC, .version = RDV_VERSION, .op = RDV_PROBE};
    return rdv_call(kind, st, &req, node, NULL, 0, own, -1) != ENOENT;
}

int ust_rdv_open(int kind, const char *path, const struct stat *st, int oflag, const cred_t *cr)
{
    struct rdv_req req = {.magic = RDV_MAGIC, .version = RDV_VERSION, .op = RDV_OPEN,
                          .oflag = oflag & (O_ACCMODE | O_NONBLOCK | O_NDELAY)};
    int fds[2];
    struct sockaddr_un a;
    socklen_t al = ust_rdv_addr(&a, kind, st->st_dev, st->st_ino, 0);
    /* The common case, a path nobody owns: one failed connect (and a bind
     * of the name to be sure that nobody holds it), nothing opened.  The
     * proof is opened only once a listener is there: nothing is sent
     * before it is verified (ask). */
    int s = connect_name(&a, al, 1);
    if (s == -3)
        return -ENOENT;
    int cfd = client_node(path, st, oflag);
    if (cfd < 0) {
        if (s >= 0)
            close(s);
        return cfd;
    }
    int err = rdv_call(kind, st, &req, cfd, fds, 2, NULL, s >= 0 ? s : -1);
    close(cfd);
    if (err != 0)
        return -err;
    int fd = ust_xpipe_adopt(fds[0], fds[1], 1, cr);
    close(fds[0]); /* the channel keeps its own */
    return fd;
}

int ust_rdv_detach(const char *path, const struct stat *st)
{
    struct rdv_req req = {.magic = RDV_MAGIC, .version = RDV_VERSION, .op = RDV_DETACH};
    int cfd = open(path, O_PATH | O_CLOEXEC);
    if (cfd < 0)
        return errno;
    int err = rdv_call(UST_RDV_NAME, st, &req, cfd, NULL, 0, NULL, -1);
    close(cfd);
    return err == ENOENT ? EINVAL : err; /* nothing attached */
}

/* ------------------------------------------------------------------------ */
/* connld in this process                                                   */
/* ------------------------------------------------------------------------ */
int ust_connld_open(struct stdata *sd, const cred_t *cr)
{
    int p[2];
    if (strm_pipe(p) != 0)
        return -errno;
    int err = ust_sd_sendfd_cred(sd, p[0], cr->cr_uid, cr->cr_gid, 0);
    strm_close(p[0]);
    if (err != 0) {
        strm_close(p[1]);
        return -err;
    }
    return p[1];
}
