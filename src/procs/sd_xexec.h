/* SPDX-License-Identifier: MIT */
/*
 * sd_xexec.h -- private to sd_xexec.c (the old image: what crosses exec) and
 * sd_xexec_adopt.c (the new image: taking it back): the description that
 * travels in one memfd named by USTREAMS_EXEC_STATE.
 *
 * Layout (native byte order; both images are this machine and this
 * library's format, version checked):
 *   struct xexec_hdr
 *   struct xexec_end  [h_nend]   one per pipe end (head) that crosses
 *   struct xexec_fd   [h_nfd]    one per descriptor number naming one of them
 *   records                      the ends' queued messages: per end, first
 *                                those its reader had not read yet (pre_rd
 *                                records, oldest first), then those its
 *                                writer had not written into the ring yet
 *                                (pre_wr records, oldest first); each a
 *                                struct xexec_rec then ctl then data bytes
 */
#ifndef UST_SD_XEXEC_H
#define UST_SD_XEXEC_H

#include <stdint.h>
#include <sys/types.h>

#define XEXEC_ENV "USTREAMS_EXEC_STATE"
#define XEXEC_MAGIC 0x58455453u /* "STEX" */
#define XEXEC_VERSION 1u

enum {
    XEXEC_MAX_ENDS = 4096,
    XEXEC_MAX_FDS = 65536,
    XEXEC_MAX_BYTES = 64 << 20, /* the whole description, queued messages included */
};

struct xexec_hdr {
    uint32_t h_magic, h_version;
    uint32_t h_nend, h_nfd;
    int32_t h_pid;    /* the process that execs: only it adopts (exec keeps the
                       * pid; a later program that inherited the variable
                       * through a program without the library does not) */
    uint32_t h_spawn; /* 1: made for posix_spawn: the child adopts (its parent
                       * is h_pid) and no message was taken (the parent keeps
                       * its ends and their queues, as at fork) */
    uint64_t h_bytes; /* the whole description */
};

struct xexec_end {
    int32_t memfd;        /* the channel's rings (xring_attach checks them) */
    int32_t bell;         /* this side's bell end */
    int32_t wake[2];      /* the channel's wake pair, or -1, -1 */
    int32_t side;         /* 0 or 1 */
    uint32_t pre_rd;      /* records for the reader */
    uint32_t pre_wr;      /* records for the writer */
    int32_t acc;          /* access mode of its descriptors (the first one's) */
    int32_t rdopt, wropt; /* the head's read and write options (I_SRDOPT, I_SWROPT) */
    int32_t oflag;        /* the head's O_NONBLOCK / O_NDELAY */
    int32_t pad;
    uint64_t uino, udev;  /* its readiness socket (U): the new image finds every
                           * number naming it, wherever file actions moved it */
};

struct xexec_fd {
    int32_t fd;  /* the number */
    int32_t end; /* index into the ends */
    int32_t acc; /* its access mode (ust_sd_acc_get) */
    int32_t pad;
};

struct xexec_rec {
    uint8_t type, band;
    uint16_t flags;     /* XREC_* */
    uint32_t ctl_len, data_len;
    int32_t passfd;     /* M_PASSFP: the descriptor passed (crosses too) */
    uint32_t uid, gid;  /* M_PASSFP: its sender's ids */
};

#define XREC_CTL 1  /* a control part (M_PROTO, M_PCPROTO) */
#define XREC_DATA 2 /* M_PROTO, M_PCPROTO: a data part (even an empty one) */

#endif /* UST_SD_XEXEC_H */
