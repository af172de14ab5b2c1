/* SPDX-License-Identifier: MIT */
/*
 * xring_layout.h -- the layout of a channel's shared mapping (xring.c), the
 * format both processes agree on.  Private to xring.c and its tests: a
 * caller of xring.h never sees these structures.
 *
 *   offset 0                      struct xring_hdr: magic, version, geometry,
 *                                 then the control block of ring 0 and of
 *                                 ring 1 (struct xring_ctl, three cache
 *                                 lines each); padded to XRING_HDR_BYTES
 *   XRING_HDR_BYTES               ring 0's data area (ring_bytes)
 *   XRING_HDR_BYTES + ring_bytes  ring 1's data area (ring_bytes)
 *
 * Indices (x_head, x_tail) run freely modulo 2^32; a byte's place in the data
 * area is index & (ring_bytes - 1).  Both are multiples of 8, and
 * tail - head (the bytes queued) is at most ring_bytes.  A record is a
 * struct xring_rec, its control bytes, its data bytes, padded to 8 bytes;
 * it may wrap around the end of the data area, header included.
 *
 * Every field may be written by the other process at any time, with any
 * value: xring.c reads each one once into a local and checks it.
 */
#ifndef UST_XRING_LAYOUT_H
#define UST_XRING_LAYOUT_H

#include <stdint.h>

#define XRING_MAGIC     0x474e5258u /* "XRNG" little-endian */
#define XRING_VERSION   2u
#define XRING_HDR_BYTES 4096u      /* the header page */
#define XRING_RING_MIN  4096u      /* smallest data area of a ring */
#define XRING_RING_MAX  (64u << 20) /* largest data area of a ring */
#define XRING_CACHELINE 64

/* A lock word (x_plock, x_clock): 0 when free, else the holder's pid, with
 * XRING_LOCK_WAITERS set while someone may sleep on the word. */
#define XRING_LOCK_WAITERS 0x80000000u
#define XRING_LOCK_PID     0x7fffffffu

/* A record's header; r_len counts it, the control and data bytes and the
 * padding (a multiple of 8). */
struct xring_rec {
    uint32_t r_len;      /* xring_reclen(r_ctl_len + r_data_len) */
    uint8_t r_type;      /* struct xring_msg .type */
    uint8_t r_band;      /* .band */
    uint16_t r_flags;    /* .flags */
    uint32_t r_ctl_len;  /* .ctl_len */
    uint32_t r_data_len; /* .data_len */
    uint32_t r_aux;      /* .aux */
    uint32_t r_zero;     /* 0 */
};

/*
 * One ring's control block, one cache line per concern so that a put or a
 * take touches no line it need not:
 *   tail line      x_tail, written by whoever holds x_plock; read by
 *                  consumers once per take; x_rd_armed (a reader arming,
 *                  rare) read by the producer once per put
 *   producer lock  x_plock alone: only producers touch it, so it stays in
 *                  the producing core's cache while the consumer reads tail
 *   head line      x_head, written by whoever holds x_clock; read by
 *                  producers only when their cached copy (xring.c
 *                  head_seen) shows too little room; x_wr_armed likewise
 *   consumer lock  x_clock alone
 *   rare line      the doorbell, shut and broken flags: written by anyone,
 *                  seldom
 */
struct xring_ctl {
    _Alignas(XRING_CACHELINE) uint32_t x_tail; /* x_plock: end of the last record */
    uint32_t x_rd_armed; /* readers armed: generation << 16 | count (xring.c) */

    _Alignas(XRING_CACHELINE) uint32_t x_plock; /* producer lock word */

    _Alignas(XRING_CACHELINE) uint32_t x_head; /* x_clock: start of the next record */
    uint32_t x_wr_armed; /* writers armed: generation << 16 | count (xring.c) */

    _Alignas(XRING_CACHELINE) uint32_t x_clock; /* consumer lock word */

    _Alignas(XRING_CACHELINE) uint32_t x_bell; /* doorbell: bumped by xring_ring */
    uint32_t x_shut;                           /* 1: xring_shut was called */
    uint32_t x_broken;                         /* 1: found inconsistent by someone */
};

struct xring_hdr {
    uint32_t h_magic;      /* XRING_MAGIC */
    uint32_t h_version;    /* XRING_VERSION */
    uint32_t h_hdr_bytes;  /* XRING_HDR_BYTES */
    uint32_t h_ring_bytes; /* each ring's data area: a power of two */
    uint32_t h_hiwat;      /* bytes */
    uint32_t h_lowat;      /* bytes, < h_hiwat */
    uint64_t h_total;      /* the file's size: h_hdr_bytes + 2 * h_ring_bytes */
    _Alignas(XRING_CACHELINE) struct xring_ctl h_ring[2];
};

_Static_assert(sizeof(struct xring_rec) == 24, "record header layout");
_Static_assert(sizeof(struct xring_hdr) <= XRING_HDR_BYTES, "header page");

/* The bytes a record of `body` control + data bytes takes in the ring. */
static inline uint64_t xring_reclen(uint64_t body)
{
    return (sizeof(struct xring_rec) + body + 7) & ~(uint64_t)7;
}

#endif /* UST_XRING_LAYOUT_H */
