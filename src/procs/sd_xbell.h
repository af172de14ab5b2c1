/* SPDX-License-Identifier: MIT */
/*
 * sd_xbell.h -- private to the files of pipes split across processes
 * (sd_xpipe*.c, sd_xbell.c) and the bell's fuzzer: the bell's state and
 * calls.  The picture is at the top of sd_xpipe.c, the protocol at the top
 * of sd_xbell.c.
 */
#ifndef UST_SD_XBELL_H
#define UST_SD_XBELL_H

#include <stdint.h>
#include <sys/types.h>

enum { XBELL_FDS = 64 }; /* descriptors received and not yet matched, at most */
struct ust_xbell_fd {
    uint32_t token;
    int fd; /* -1: the sender could not pass it (the record is dropped) */
    uid_t uid;
    gid_t gid;
};
struct ust_xbell {
    int fd;                               /* this process's descriptor of its bell end */
    unsigned char part[4];                /* the token of an 'F' being read */
    int npart;                            /* bytes of that 'F' read so far (0: none) */
    int cur_fd;                           /* its descriptor, or -1 */
    uid_t cur_uid;
    gid_t cur_gid;
    struct ust_xbell_fd q[XBELL_FDS];     /* received, waiting for their records */
    int nq;
};
void ust_xbell_init(struct ust_xbell *b, int fd);
/* A doorbell byte to the other side: 0, or -1 if the other side is gone. */
int ust_xbell_ring(struct ust_xbell *b);
/* ust_xbell_knock -- a doorbell on a wake pair (sd_xbell.c "Doorbells"):
 *   one byte sent on tx (never blocks: MSG_DONTWAIT), so that every process
 *   watching rx is told.  When tx is full, rx (the receiving end, which
 *   the caller also holds) is drained first, bounded, and the byte sent
 *   again: rx is never left empty by a knock.  Context: any thread. */
void ust_xbell_knock(int tx, int rx);
/* Pass fd (SCM_RIGHTS, with the kernel's credentials) under token, or
 * with fd -1 cancel token (its record is dropped): 0 or an errno (EAGAIN:
 * the bell stayed full for a second). */
int ust_xbell_sendfd(struct ust_xbell *b, int fd, uint32_t token);
/* Before an M_PASSFP record goes into the ring: wait (up to a second, as
 * ust_xbell_sendfd) until the bell has room for its token, so that a
 * descriptor is refused (EAGAIN, nothing sent) rather than its record left
 * in the ring with neither descriptor nor cancel behind it.  0 or EAGAIN. */
int ust_xbell_room(struct ust_xbell *b);
/* The bell message of a signal (sd_xcross.c): 'F' and token with no
 * descriptor (to the parser a "cancel", kept with its credentials) and this
 * process's credentials; waits for room at most ~100 ms.  0 or an errno. */
int ust_xbell_sendcred(int bellfd, uint32_t token);
/* Read what rang, no more tokens than the queue has room for (the rest
 * stay in the socket): 1 if the other side is gone (end of file). */
int ust_xbell_drain(struct ust_xbell *b);
/* The descriptor received for token (ownership passes): 1, or 0 if not
 * (yet) received. */
int ust_xbell_take(struct ust_xbell *b, uint32_t token, int *fd, uid_t *uid, gid_t *gid);
/* Put back what ust_xbell_take gave (the caller could not use it yet). */
void ust_xbell_unget(struct ust_xbell *b, uint32_t token, int fd, uid_t uid, gid_t gid);
/* Close the descriptors waiting (a fork child's copies), keep the bell. */
void ust_xbell_forget_fds(struct ust_xbell *b);
/* Close everything, the bell included. */
void ust_xbell_close(struct ust_xbell *b);

#endif /* UST_SD_XBELL_H */
