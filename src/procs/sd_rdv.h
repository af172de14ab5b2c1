/* SPDX-License-Identifier: MIT */
/*
 * sd_rdv.h -- private to the rendezvous (sd_rdv.c, the owner's side;
 * sd_rdv_client.c, the client's side): the wire format and the names.
 * The design and its security argument are in sd_rdv.c's opening comment.
 */
#ifndef UST_SD_RDV_H
#define UST_SD_RDV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

enum {
    RDV_MAGIC = 0x55535452, /* "USTR" */
    RDV_VERSION = 1,
    RDV_OPEN = 1,
    RDV_DETACH = 2,
    RDV_PROBE = 3, /* "are you the owner?": answered with the proof only */
    RDV_MAXGROUPS = 256,
    RDV_PROBE_WAIT_S = 2, /* a probed listener answers within this */
};

/* The request: one message, with exactly one descriptor (SCM_RIGHTS) of the
 * node the client opened itself by the path (its access proof). */
struct rdv_req {
    uint32_t magic;
    uint16_t version;
    uint16_t op;   /* RDV_OPEN, RDV_DETACH, RDV_PROBE */
    int32_t oflag; /* RDV_OPEN: the open's flags (O_ACCMODE, O_NONBLOCK) */
    int32_t pad;
};

/* The reply: one message whose descriptors are the owner's proof (an O_PATH
 * descriptor of the node, always first) and, for an open that succeeded,
 * the new pipe's far end (memfd, bell). */
struct rdv_rep {
    uint32_t magic;
    int32_t err;  /* 0 or an errno */
    int32_t side; /* RDV_OPEN: the pipe side the client adopts */
    int32_t pad;
};

/* A connection, from accept to its reply.  Accepted: on `pending` (rdv_lock)
 * until its request comes; then a job on the queue (pool_lock) or a thread
 * of its own; freed by whoever serves it. */
struct rdv_conn {
    struct rdv_conn *next;
    int fd, kind;
    int node;   /* a duplicate of the listener's (it may go meanwhile) */
    int cfd;    /* the client's proof, or -1 */
    int budget; /* B_PEND, B_FIFO, B_NONE: the budget it holds */
    dev_t dev;
    ino_t ino;
    long long deadline; /* ns: the request must have come by then */
    struct rdv_req req;
    struct ucred uc; /* from the kernel */
    gid_t groups[RDV_MAXGROUPS + 1];
    int ngroups;
};

/* The base name of (kind, dev, ino) into a (with the suffix "/<hex>" when
 * alt is not 0: an alternative name, taken when the base one is occupied);
 * its length for bind/connect. */
static inline socklen_t ust_rdv_addr(struct sockaddr_un *a, int kind, dev_t dev, ino_t ino,
                                     uint64_t alt)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    int n = alt == 0 ? snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "ustreams/%c/%llx:%llx",
                                kind, (unsigned long long)dev, (unsigned long long)ino)
                     : snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
                                "ustreams/%c/%llx:%llx/%016llx", kind, (unsigned long long)dev,
                                (unsigned long long)ino, (unsigned long long)alt);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* May the process with uid/groups be the owner of the name (kind, st)?
 * fattach: the file's owner or the superuser (only they can cover it);
 * FIFO: a user the mode lets read and write it (or the superuser). */
int ust_rdv_entitled(int kind, const struct stat *st, uid_t uid, const gid_t *g, int ng);

/* Is there, other than the name own (NULL: none), a listener of (kind, st)
 * that proves it owns it (an RDV_PROBE answered with the node)?  node: an
 * O_PATH descriptor of the node, sent as the prober's own proof.  1 or 0. */
int ust_rdv_other_owner(int kind, const struct stat *st, int node, const struct sockaddr_un *own);

/* sd_rdv_serve.c: the access a request's oflag asks (R_OK | W_OK); reply
 * err on fd with the proof node first, then nfd (<= 2) more descriptors (0
 * or EPIPE); the client's proof for `want` (0: reach the node by its path),
 * 1 or 0; serve an fattach open or a detach (an errno, or -1 when replied). */
int ust_rdv_want_of(int oflag);
int ust_rdv_reply(int fd, int err, int node, const int *fds, int nfd);
int ust_rdv_check_access(const struct rdv_conn *c, int want);
int ust_rdv_serve_name_open(struct rdv_conn *p, int oflag);
int ust_rdv_serve_detach(struct rdv_conn *p);

#endif /* UST_SD_RDV_H */
