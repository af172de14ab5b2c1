/* SPDX-License-Identifier: MIT */
/*
 * ddi.c -- the small DDI/DKI helpers: device numbers, clock ticks, kernel
 * memory, console messages, and the ioctl reply helpers miocack(9F),
 * miocnak(9F), mcopyin(9F) and mcopyout(9F).
 *
 * The ioctl helpers follow Solaris: they rewrite the leading block of an
 * M_IOCTL (or M_IOCDATA) in place.  iocblk, copyreq and copyresp share their
 * first three fields (command, credentials, identifier), so those carry over
 * unchanged; everything after them is rewritten.  The stream head allocates
 * that block large enough for any of them (union ioctypes).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <time.h>
#include <unistd.h>

#include "strcore.h"

#define US_PER_TICK (1000000L / HZ)
_Static_assert(1000000L % HZ == 0, "HZ must divide one second in microseconds");

/* ------------------------------------------------------------------------ */
/* Device numbers: major in bits 18..31, minor in bits 0..17.                */
/* ------------------------------------------------------------------------ */
/* getmajor(9F): the major of dev. */
major_t getmajor(dev_t dev)
{
    return (major_t)((dev >> L_BITSMINOR) & L_MAXMAJ);
}

/* getminor(9F): the minor of dev. */
minor_t getminor(dev_t dev)
{
    return (minor_t)(dev & L_MAXMIN);
}

/* makedevice(9F): the device number of (major, minor); (dev_t)-1 (NODEV) when
 * either does not fit its field. */
dev_t makedevice(major_t major, minor_t minor)
{
    if (major > L_MAXMAJ || minor > L_MAXMIN)
        return (dev_t)-1;
    return ((dev_t)major << L_BITSMINOR) | (dev_t)minor;
}

/* ------------------------------------------------------------------------ */
/* Clock ticks                                                               */
/* ------------------------------------------------------------------------ */
/* drv_usectohz(9F): ticks for usec microseconds, rounded up (so any positive
 * interval is at least one tick); 0 for usec <= 0. */
long drv_usectohz(long usec)
{
    if (usec <= 0)
        return 0;
    return usec / US_PER_TICK + (usec % US_PER_TICK != 0);
}

/* drv_hztousec(9F): microseconds in ticks clock ticks; 0 for ticks <= 0,
 * LONG_MAX when the product does not fit. */
long drv_hztousec(long ticks)
{
    if (ticks <= 0)
        return 0;
    if (ticks > __LONG_MAX__ / US_PER_TICK)
        return __LONG_MAX__;
    return ticks * US_PER_TICK;
}

/* The library's start on the monotonic clock, the origin of LBOLT.  Set by
 * the constructor; the compare-exchange covers a call before it. */
static _Atomic long long ddi_start_ns;

static long long ddi_start(void)
{
    long long s = atomic_load(&ddi_start_ns);

    if (s == 0) {
        long long now = ust_now_ns();
        long long expect = 0;
        if (now == 0)
            now = 1;
        if (!atomic_compare_exchange_strong(&ddi_start_ns, &expect, now))
            now = expect;
        s = now;
    }
    return s;
}

__attribute__((constructor)) static void ddi_constructor(void)
{
    (void)ddi_start();
}

/*
 * drv_getparm(9F) -- read a kernel parameter.
 *   LBOLT (long): clock ticks since the library started.  TIME (time_t):
 *   seconds since the epoch.  PPID, PPGRP, PSID (pid_t): the process id,
 *   process group and session of the caller.
 *   Returns 0, or -1 for an unknown parameter or NULL valuep.
 */
int drv_getparm(unsigned int parm, void *valuep)
{
    if (valuep == NULL)
        return -1;
    switch (parm) {
    case LBOLT:
        *(long *)valuep = (long)((ust_now_ns() - ddi_start()) / (1000000000LL / HZ));
        return 0;
    case TIME:
        *(time_t *)valuep = time(NULL);
        return 0;
    case PPID:
        *(pid_t *)valuep = getpid();
        return 0;
    case PPGRP:
        *(pid_t *)valuep = getpgrp();
        return 0;
    case PSID:
        *(pid_t *)valuep = getsid(0);
        return 0;
    default:
        return -1;
    }
}

/* ------------------------------------------------------------------------ */
/* Kernel memory                                                             */
/* ------------------------------------------------------------------------ */
/* Pause between KM_SLEEP retries: long enough to let others free memory. */
static void kmem_backoff(void)
{
    struct timespec ts = {0, 1000000}; /* 1 ms */
    nanosleep(&ts, NULL);
}

/*
 * kmem_alloc(9F) / kmem_zalloc(9F) -- allocate size bytes (zeroed).
 *   Context: KM_SLEEP may block (it retries until the allocation succeeds);
 *   KM_NOSLEEP never blocks and may return NULL.
 *   Returns NULL for size 0.
 */
void *kmem_alloc(size_t size, int flag)
{
    void *p;

    if (size == 0)
        return NULL;
    while ((p = malloc(size)) == NULL && !(flag & KM_NOSLEEP))
        kmem_backoff();
    return p;
}

void *kmem_zalloc(size_t size, int flag)
{
    void *p;

    if (size == 0)
        return NULL;
    while ((p = calloc(1, size)) == NULL && !(flag & KM_NOSLEEP))
        kmem_backoff();
    return p;
}

/* kmem_free(9F): free memory from kmem_alloc/kmem_zalloc (NULL is ignored). */
void kmem_free(void *buf, size_t size)
{
    (void)size;
    free(buf);
}

/* ------------------------------------------------------------------------ */
/* Console messages                                                          */
/* ------------------------------------------------------------------------ */
static bool cmn_verbose(void)
{
    const char *v = getenv("USTREAMS_VERBOSE");
    return v != NULL && *v != '\0';
}

/*
 * cmn_err(9F) -- print a message on standard error.
 *   CE_CONT: the text as is (no prefix, no newline added); CE_NOTE: "NOTICE: "
 *   and a newline; both only when USTREAMS_VERBOSE is set.  CE_WARN:
 *   "WARNING: ", always.  CE_PANIC: "PANIC: ", then abort().  As on Solaris, a
 *   leading '!' sends the message to the log only (here: printed only when
 *   verbose) and a leading '^' to the console only (the '^' is dropped).
 *   Context: any thread; one write per message, so lines do not interleave.
 */
void cmn_err(int level, const char *fmt, ...)
{
    char small[512];
    char *msg = small;
    const char *prefix;
    bool show;
    va_list ap;
    int n;

    if (fmt == NULL)
        fmt = "";
    show = level == CE_WARN || level == CE_PANIC || cmn_verbose();
    if (*fmt == '!') {
        fmt++;
        show = show && (level == CE_PANIC || cmn_verbose());
    } else if (*fmt == '^') {
        fmt++;
    }
    switch (level) {
    case CE_CONT:
        prefix = "";
        break;
    case CE_NOTE:
        prefix = "NOTICE: ";
        break;
    case CE_WARN:
        prefix = "WARNING: ";
        break;
    case CE_PANIC:
        prefix = "PANIC: ";
        break;
    default:
        prefix = "";
        show = true;
        break;
    }
    if (show) {
        va_start(ap, fmt);
        n = vsnprintf(small, sizeof(small), fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof(small) && (msg = malloc((size_t)n + 1)) != NULL) {
            va_start(ap, fmt);
            vsnprintf(msg, (size_t)n + 1, fmt, ap);
            va_end(ap);
        } else if (msg == NULL) {
            msg = small; /* truncated */
        }
        fprintf(stderr, "%s%s%s", prefix, msg, level == CE_CONT ? "" : "\n");
        fflush(stderr);
        if (msg != small)
            free(msg);
    }
    if (level == CE_PANIC)
        abort();
}

/* ------------------------------------------------------------------------ */
/* ioctl helpers                                                             */
/* ------------------------------------------------------------------------ */
/* Is mp an ioctl-family message whose leading block can hold `need` bytes? */
static bool ioc_block_ok(const mblk_t *mp, size_t need)
{
    if (mp == NULL || mp->b_datap == NULL || mp->b_rptr == NULL)
        return false;
    return (size_t)(mp->b_datap->db_lim - mp->b_rptr) >= need;
}

/*
 * miocack(9F) -- acknowledge an M_IOCTL (or M_IOCDATA) positively.
 *   Turns mp into an M_IOCACK with ioc_count = count, ioc_rval = rval,
 *   ioc_error = 0, and sends it back with qreply(q, mp); q is the queue the
 *   ioctl arrived on.  Any data for the caller stays in b_cont.
 *   Context: a put or service procedure of q (or code holding q's perimeter).
 */
void miocack(queue_t *q, mblk_t *mp, int count, int rval)
{
    struct iocblk *iocp;

    if (!ioc_block_ok(mp, sizeof(struct iocblk))) {
        cmn_err(CE_WARN, "miocack: message without room for an iocblk dropped");
        freemsg(mp);
        return;
    }
    iocp = (struct iocblk *)(void *)mp->b_rptr;
    mp->b_datap->db_type = M_IOCACK;
    if (mp->b_wptr < mp->b_rptr + sizeof(struct iocblk))
        mp->b_wptr = mp->b_rptr + sizeof(struct iocblk);
    iocp->ioc_count = (size_t)(count < 0 ? 0 : count);
    iocp->ioc_error = 0;
    iocp->ioc_rval = rval;
    qreply(q, mp);
}

/*
 * miocnak(9F) -- refuse an M_IOCTL (or M_IOCDATA).
 *   Turns mp into an M_IOCNAK with ioc_count = count and ioc_error = error
 *   (EINVAL if error is 0), and sends it back with qreply(q, mp).
 *   Context: as miocack.
 */
void miocnak(queue_t *q, mblk_t *mp, int count, int error)
{
    struct iocblk *iocp;

    if (!ioc_block_ok(mp, sizeof(struct iocblk))) {
        cmn_err(CE_WARN, "miocnak: message without room for an iocblk dropped");
        freemsg(mp);
        return;
    }
    iocp = (struct iocblk *)(void *)mp->b_rptr;
    mp->b_datap->db_type = M_IOCNAK;
    if (mp->b_wptr < mp->b_rptr + sizeof(struct iocblk))
        mp->b_wptr = mp->b_rptr + sizeof(struct iocblk);
    iocp->ioc_count = (size_t)(count < 0 ? 0 : count);
    iocp->ioc_error = error != 0 ? error : EINVAL;
    qreply(q, mp);
}

/*
 * The user address for a copy request: uaddr if given, else, for a
 * transparent M_IOCTL, the address the stream head put in b_cont.  Read
 * before the leading block is rewritten (cq_addr overlays ioc_count).
 */
static caddr_t copy_addr(const mblk_t *mp, void *uaddr)
{
    const struct iocblk *iocp = (const struct iocblk *)(const void *)mp->b_rptr;
    const mblk_t *dp = mp->b_cont;
    caddr_t addr = NULL;

    if (uaddr != NULL)
        return (caddr_t)uaddr;
    if (mp->b_datap->db_type == M_IOCTL && iocp->ioc_count == TRANSPARENT && dp != NULL &&
        dp->b_wptr - dp->b_rptr >= (ptrdiff_t)sizeof(caddr_t))
        memcpy(&addr, dp->b_rptr, sizeof(addr));
    return addr;
}

/* Rewrite the leading block of mp into a copy request of the given type.
 * Returns false (mp untouched) if it cannot hold one. */
static bool make_copyreq(mblk_t *mp, unsigned char type, void *priv, size_t size, caddr_t addr)
{
    struct copyreq *cq;

    if (!ioc_block_ok(mp, sizeof(struct copyreq)))
        return false;
    cq = (struct copyreq *)(void *)mp->b_rptr;
    /* cq_cmd, cq_cr and cq_id overlay the iocblk/copyresp fields: kept. */
    cq->cq_addr = addr;
    cq->cq_size = size;
    cq->cq_flag = 0;
    cq->cq_private = (mblk_t *)priv;
    memset(cq->cq_filler, 0, sizeof(cq->cq_filler));
    mp->b_datap->db_type = type;
    mp->b_wptr = mp->b_rptr + sizeof(struct copyreq);
    return true;
}

/* When the leading block is too small for a copy request (never the case for
 * a message from the stream head), the ioctl fails instead: the caller's
 * qreply then delivers an M_IOCNAK with EINVAL. */
static void copy_fail(mblk_t *mp)
{
    struct iocblk *iocp;

    cmn_err(CE_WARN, "mcopyin/mcopyout: ioctl block too small, ioctl refused");
    if (!ioc_block_ok(mp, sizeof(struct iocblk)))
        return;
    iocp = (struct iocblk *)(void *)mp->b_rptr;
    mp->b_datap->db_type = M_IOCNAK;
    iocp->ioc_count = 0;
    iocp->ioc_error = EINVAL;
    iocp->ioc_rval = -1;
}

/*
 * mcopyin(9F) -- turn an M_IOCTL or M_IOCDATA into an M_COPYIN request for
 * size bytes at uaddr (or, when uaddr is NULL, at the address carried by a
 * transparent M_IOCTL), remembering priv in cq_private.  Frees b_cont.  The
 * caller sends the message with qreply.
 *   Context: as miocack.
 */
void mcopyin(mblk_t *mp, void *priv, size_t size, void *uaddr)
{
    if (mp == NULL || mp->b_datap == NULL)
        return;
    if (!make_copyreq(mp, M_COPYIN, priv, size, copy_addr(mp, uaddr))) {
        copy_fail(mp);
        return;
    }
    if (mp->b_cont != NULL) {
        freemsg(mp->b_cont);
        mp->b_cont = NULL;
    }
}

/*
 * mcopyout(9F) -- turn an M_IOCTL or M_IOCDATA into an M_COPYOUT request of
 * size bytes to uaddr (or the transparent M_IOCTL's address when NULL),
 * remembering priv.  dp, if not NULL, becomes b_cont (the old continuation is
 * freed); if NULL the existing b_cont is the data.  As on Solaris, a
 * single-block dp holding fewer than size bytes is extended to size bytes when
 * its buffer allows.  The caller sends the message with qreply.
 *   Context: as miocack.
 */
void mcopyout(mblk_t *mp, void *priv, size_t size, void *uaddr, mblk_t *dp)
{
    if (mp == NULL || mp->b_datap == NULL || !make_copyreq(mp, M_COPYOUT, priv, size,
                                                             copy_addr(mp, uaddr))) {
        if (dp != NULL)
            freemsg(dp);
        if (mp != NULL && mp->b_datap != NULL)
            copy_fail(mp);
        return;
    }
    if (dp != NULL) {
        if (mp->b_cont != NULL)
            freemsg(mp->b_cont);
        mp->b_cont = dp;
        if (dp->b_cont == NULL && (size_t)(dp->b_wptr - dp->b_rptr) < size &&
            (size_t)(dp->b_datap->db_lim - dp->b_rptr) >= size)
            dp->b_wptr = dp->b_rptr + size;
    }
}
