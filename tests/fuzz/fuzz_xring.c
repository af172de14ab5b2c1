/* SPDX-License-Identifier: MIT */
/*
 * fuzz_xring.c -- fuzz target: the shared-memory message rings
 * (src/core/xring.c) against a peer that writes anything into the mapping.
 *
 * Each input makes a fresh channel (ring size and water marks from its first
 * byte), maps the memfd a second time as the "peer", and runs a sequence of
 * operations:
 *   the peer writes: a word anywhere in the mapping (header page or data
 *     areas); a chosen control field of a ring (tail, head, lock words,
 *     arming words, bell, shut, broken) set to a value or to the other index
 *     plus a delta; a record header at head or anywhere; raw bytes;
 *   this process calls: xring_put (lengths 0..5000 in up to three iovecs,
 *     any type, band, flags, aux), xring_peek, xring_take (buffers of fuzzed
 *     capacity, each its own malloc so that ASan sees an overflow),
 *     xring_arm_reader/_writer, xring_queued, xring_is_shut, xring_broken,
 *     xring_bell_value, xring_ring, xring_wait (no timeout: 0 ms),
 *     xring_shut; attaching a second handle to the (scribbled) memfd and
 *     using it, or destroying it.
 * Every result must be one the contract allows, and what is returned must be
 * consistent (lengths within the caps and XRING_MSG_MAX, queued within the
 * ring); otherwise abort().
 *
 * Lock words: a word holding a live pid (ours, say) would make a put wait
 * for that process, as it should; the peer writes into a lock word only 0,
 * the waiters bit, or a pid that cannot exist (above the kernel's pid
 * limit), which costs one 50 ms dead-holder wait and breaks the ring (so
 * rarely chosen: it would cut the executions per second tenfold).  With
 * FUZZ_XRING_NO_DEAD=1 in the environment the dead pid is never written
 * (a faster run over everything else).
 * No stream is involved, so fz_end_of_input (blocks, quiescence) is not
 * called; the channel's mappings and descriptors are released after each
 * input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_decode.h"
#include "xring.h"
#include "xring_layout.h"

#define FZ_DEAD_PID 0x7ffffff0u /* above PID_MAX_LIMIT (2^22): never a process */
#define FZ_MAXLEN   5000u

struct fx {
    struct xring_chan *ch, *ch2;
    unsigned char *map; /* the peer's mapping */
    size_t len;
    uint32_t size;
};

static void fx_fail(const char *what, long v)
{
    fprintf(stderr, "fuzz_xring: %s (%ld)\n", what, v);
    abort();
}

static int fx_no_dead; /* FUZZ_XRING_NO_DEAD: no dead lock holder */

/* Keep the lock words to 0, the waiters bit, or a dead pid. */
static void fx_sanitize_locks(struct fx *x)
{
    struct xring_hdr *h = (struct xring_hdr *)x->map;
    for (int d = 0; d < 2; d++) {
        uint32_t *w[2] = {&h->h_ring[d].x_plock, &h->h_ring[d].x_clock};
        for (int i = 0; i < 2; i++) {
            uint32_t v = __atomic_load_n(w[i], __ATOMIC_RELAXED);
            uint32_t pid = v & XRING_LOCK_PID;
            if (pid != 0 && (pid != FZ_DEAD_PID || fx_no_dead))
                __atomic_store_n(w[i], v & XRING_LOCK_WAITERS, __ATOMIC_RELAXED);
        }
    }
}

static uint32_t *fx_field(struct fx *x, int d, unsigned which)
{
    struct xring_ctl *c = &((struct xring_hdr *)x->map)->h_ring[d];
    uint32_t *f[] = {&c->x_tail,     &c->x_head, &c->x_plock, &c->x_clock, &c->x_rd_armed,
                     &c->x_wr_armed, &c->x_bell, &c->x_shut,  &c->x_broken};
    return f[which % (sizeof(f) / sizeof(f[0]))];
}

static void fx_poke(struct fx *x, struct fz *z)
{
    struct xring_hdr *h = (struct xring_hdr *)x->map;
    int d = (int)fz_pick(z, 2);
    switch (fz_pick(z, 6)) {
    case 0: { /* a word anywhere */
        size_t off = (size_t)fz_u16(z) * 4 % x->len;
        uint32_t v = fz_u32(z);
        memcpy(x->map + off, &v, 4);
        break;
    }
    case 1: { /* a control field := value */
        uint32_t *f = fx_field(x, d, fz_u8(z));
        uint32_t v = fz_pick(z, 64) == 0 ? FZ_DEAD_PID : fz_u32(z);
        __atomic_store_n(f, v, __ATOMIC_RELAXED);
        break;
    }
    case 2: { /* tail := head + delta, or head := tail - delta */
        int32_t delta = (int32_t)(int16_t)fz_u16(z);
        if (fz_pick(z, 2) == 0)
            delta &= ~7;
        struct xring_ctl *c = &h->h_ring[d];
        if (fz_pick(z, 2))
            c->x_tail = c->x_head + (uint32_t)delta;
        else
            c->x_head = c->x_tail - (uint32_t)delta;
        break;
    }
    case 3: { /* a record header at head (or at an offset from it) */
        struct xring_rec r;
        uint32_t at = h->h_ring[d].x_head + (fz_pick(z, 2) ? fz_u16(z) : 0);
        r.r_ctl_len = fz_pick(z, 2) ? fz_u16(z) : fz_u32(z);
        r.r_data_len = fz_pick(z, 2) ? fz_u16(z) : fz_u32(z);
        r.r_len = fz_pick(z, 2) ? (uint32_t)xring_reclen((uint64_t)r.r_ctl_len + r.r_data_len)
                                : fz_u32(z);
        r.r_type = fz_u8(z);
        r.r_band = fz_u8(z);
        r.r_flags = fz_u16(z);
        r.r_aux = fz_u32(z);
        r.r_zero = fz_pick(z, 8) ? 0 : fz_u32(z);
        unsigned char *base = x->map + XRING_HDR_BYTES + (size_t)d * x->size;
        for (size_t i = 0; i < sizeof(r); i++) /* wrapping, as the ring does */
            base[(at + i) & (x->size - 1)] = ((unsigned char *)&r)[i];
        break;
    }
    case 4: { /* raw bytes into a data area */
        unsigned char b[64];
        size_t n = fz_bytes(z, b, fz_pick(z, sizeof(b) + 1));
        uint32_t at = fz_u16(z);
        unsigned char *base = x->map + XRING_HDR_BYTES + (size_t)d * x->size;
        for (size_t i = 0; i < n; i++)
            base[(at + i) & (x->size - 1)] = b[i];
        break;
    }
    default: { /* the lock words: free, waiters only, dead holder */
        uint32_t *w = fx_field(x, d, 2 + fz_pick(z, 2));
        *w = fz_pick(z, 32) == 0 ? FZ_DEAD_PID : fz_pick(z, 2) ? XRING_LOCK_WAITERS : 0;
        break;
    }
    }
    fx_sanitize_locks(x);
}

static void fx_put(struct xring_chan *ch, int d, struct fz *z)
{
    static unsigned char buf[3 * FZ_MAXLEN];
    struct xring_msg m;
    struct iovec iov[3];
    int n = (int)fz_pick(z, 4);
    size_t total = 0;

    for (int i = 0; i < n; i++) {
        iov[i].iov_base = buf + total;
        iov[i].iov_len = fz_u16(z) % (FZ_MAXLEN + 1);
        memset(iov[i].iov_base, fz_u8(z), iov[i].iov_len);
        total += iov[i].iov_len;
    }
    m.type = fz_u8(z);
    m.band = fz_u8(z);
    m.flags = fz_u16(z);
    m.aux = fz_u32(z);
    m.ctl_len = (uint32_t)(total ? fz_u16(z) % (total + 1) : 0);
    m.data_len = (uint32_t)total - m.ctl_len;
    if (fz_pick(z, 16) == 0)
        m.data_len += 1; /* a lie: -EINVAL */
    int rc = xring_put(ch, d, &m, iov, n);
    if (rc != 0 && rc != XRING_WAKE_READER && rc != -EAGAIN && rc != -EMSGSIZE && rc != -EPIPE &&
        rc != -EIO && rc != -EINVAL)
        fx_fail("put", rc);
}

static void fx_take(struct fx *x, struct xring_chan *ch, int d, struct fz *z)
{
    struct xring_msg pm, m;
    int prc = xring_peek(ch, d, &pm);
    if (prc < -EIO || prc > 1 || (prc < 0 && prc != -EIO))
        fx_fail("peek", prc);
    if (prc == 1 && ((uint64_t)pm.ctl_len + pm.data_len > XRING_MSG_MAX ||
                     xring_reclen((uint64_t)pm.ctl_len + pm.data_len) > x->size))
        fx_fail("peek: lengths", (long)pm.ctl_len + pm.data_len);
    if (prc == 1 && xring_reclen((uint64_t)pm.ctl_len + pm.data_len) > xring_queued(ch, d))
        fx_fail("peek: more than queued", (long)pm.ctl_len + pm.data_len);
    if (fz_pick(z, 2) == 0)
        return; /* peek only */
    size_t ccap = fz_pick(z, 2) && prc == 1 ? pm.ctl_len : fz_u16(z) % (FZ_MAXLEN + 1);
    size_t dcap = fz_pick(z, 2) && prc == 1 ? pm.data_len : fz_u16(z) % (FZ_MAXLEN + 1);
    unsigned char *c = ccap ? malloc(ccap) : NULL, *b = dcap ? malloc(dcap) : NULL;
    int rc = xring_take(ch, d, &m, c, c ? ccap : 0, b, b ? dcap : 0);
    if (rc >= 0 && ((rc & ~XRING_WAKE_WRITER) != 0 || m.ctl_len > ccap || m.data_len > dcap))
        fx_fail("take", rc);
    if (rc < 0 && rc != -ENODATA && rc != -EAGAIN && rc != -EIO)
        fx_fail("take", rc);
    free(c);
    free(b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_process_setup();
    fx_no_dead = getenv("FUZZ_XRING_NO_DEAD") != NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz z = {data, size};
    struct fx x = {0};
    struct stat st;
    uint8_t g = fz_u8(&z);

    uint32_t ring = 4096u << (g & 1);
    uint32_t hiwat = g & 2 ? ring : ring / 2, lowat = g & 4 ? 0 : hiwat / 4;
    if (xring_create(ring, hiwat, lowat, &x.ch) != 0)
        fx_fail("create", 0);
    x.size = ring;
    if (fstat(xring_fd(x.ch), &st) != 0)
        fx_fail("fstat", errno);
    x.len = (size_t)st.st_size;
    x.map = mmap(NULL, x.len, PROT_READ | PROT_WRITE, MAP_SHARED, xring_fd(x.ch), 0);
    if (x.map == MAP_FAILED)
        fx_fail("mmap", errno);

    for (int steps = 0; fz_more(&z) && steps < 2000; steps++) {
        struct xring_chan *ch = x.ch2 && fz_pick(&z, 2) ? x.ch2 : x.ch;
        int d = (int)fz_pick(&z, 2), rc;
        uint32_t q;
        switch (fz_pick(&z, 12)) {
        case 0:
        case 1:
            fx_poke(&x, &z);
            break;
        case 2:
        case 3:
            fx_put(ch, d, &z);
            break;
        case 4:
        case 5:
            fx_take(&x, ch, d, &z);
            break;
        case 6:
            rc = fz_pick(&z, 2) ? xring_arm_reader(ch, d) : xring_arm_writer(ch, d);
            if (rc != 0 && rc != 1 && rc != -EIO)
                fx_fail("arm", rc);
            break;
        case 7:
            q = xring_queued(ch, d);
            if (q > x.size || (xring_broken(ch, d) && q != 0))
                fx_fail("queued", q);
            (void)xring_is_shut(ch, d);
            break;
        case 8: {
            uint32_t seen = xring_bell_value(ch, d);
            if (fz_pick(&z, 2))
                xring_ring(ch, d);
            rc = xring_wait(ch, d, seen, 0);
            if (rc != 0 && rc != -EINTR) /* libFuzzer's own SIGALRM may interrupt */
                fx_fail("wait", rc);
            break;
        }
        case 9:
            if (fz_pick(&z, 4) == 0)
                xring_shut(ch, d);
            break;
        case 10:
            if (x.ch2) {
                xring_destroy(x.ch2);
                x.ch2 = NULL;
            } else {
                rc = xring_attach(xring_fd(x.ch), &x.ch2);
                if (rc != 0 && rc != -EINVAL)
                    fx_fail("attach", rc);
                if (rc != 0)
                    x.ch2 = NULL;
            }
            break;
        default:
            (void)xring_broken(ch, d);
            if (xring_fd(ch) < 0)
                fx_fail("fd", xring_fd(ch));
            break;
        }
    }
    xring_destroy(x.ch2);
    xring_destroy(x.ch);
    munmap(x.map, x.len);
    return 0;
}
