/* SPDX-License-Identifier: MIT */
/*
 * sys/ddi.h -- DDI/DKI helpers: device numbers, clock ticks, memory.
 */
#ifndef _SYS_DDI_H
#define _SYS_DDI_H

#include <sys/stream.h>
#include <sys/cmn_err.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device numbers: 14 bits of major and 18 bits of minor, as SVR4 (L_MAXMAJ/L_MAXMIN). */
#define L_BITSMINOR 18
#define L_MAXMAJ 0x3fff
#define L_MAXMIN 0x3ffff

major_t getmajor(dev_t dev);
minor_t getminor(dev_t dev);
dev_t makedevice(major_t major, minor_t minor);

/* Clock ticks (HZ per second). */
long drv_usectohz(long usec);
long drv_hztousec(long ticks);

/* drv_getparm parameters */
#define LBOLT 1   /* ticks since the library started */
#define UPROCP 2  /* reserved */
#define UCRED 3   /* reserved */
#define TIME 4    /* seconds since the epoch */
#define PPID 5    /* process id */
#define PPGRP 6   /* process group */
#define PSID 7    /* session */
int drv_getparm(unsigned int parm, void *valuep);

/* Memory (kmem_alloc(9F)). KM_SLEEP allocations retry until they succeed. */
#define KM_SLEEP 0
#define KM_NOSLEEP 1
void *kmem_alloc(size_t size, int flag);
void *kmem_zalloc(size_t size, int flag);
void kmem_free(void *buf, size_t size);

#ifndef min
#define min(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif

#ifdef __cplusplus
}
#endif

#endif /* _SYS_DDI_H */
