/* SPDX-License-Identifier: MIT */
/*
 * sys/strconf.h -- registering STREAMS drivers and modules.
 *
 * A module registers an fmodsw, a driver a cdevsw, each naming its streamtab
 * and its MT level (the D_* flags).  Module names are at most FMNAMESZ
 * characters, driver names at most 31.
 * Built-in drivers and modules register themselves when the library starts.
 */
#ifndef _SYS_STRCONF_H
#define _SYS_STRCONF_H

#include <sys/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FMNAMESZ
#define FMNAMESZ 8 /* longest module or driver name, without the NUL */
#endif

/* MT levels and driver flags (d_flag, f_flag). Without D_MP a module is a
 * legacy MT-unsafe module: every legacy module runs inside one process-wide
 * perimeter, as on a uniprocessor. */
#define D_NEW 0x0000        /* SVR4 style (always true here) */
#define D_LEGACY 0x0000     /* not MT safe: serialized with every other legacy module */
#define D_MP 0x0020         /* MT safe: no perimeter, the module locks for itself */
#define D_MTSAFE D_MP
#define D_MTPERMOD 0x0040   /* inner perimeter shared by all instances of the module */
#define D_MTQPAIR 0x0100    /* inner perimeter per queue pair */
#define D_MTPERQ 0x0200     /* inner perimeter per queue */
#define D_MTOCEXCL 0x0800   /* open and close exclusive in the outer perimeter */
#define D_MTPUTSHARED 0x1000 /* put procedures enter the inner perimeter shared */
#define D_MTOUTPERIM 0x2000 /* an outer perimeter spans all instances of the module */
#define D_MTSVCSHARED 0x4000 /* service procedures enter the inner perimeter shared */
#define D_CLONE 0x10000     /* driver is always clone-opened */
#define D_MTMASK (D_MP | D_MTPERMOD | D_MTQPAIR | D_MTPERQ | D_MTOCEXCL | D_MTPUTSHARED | D_MTOUTPERIM | D_MTSVCSHARED)

struct fmodsw {
    const char *f_name;        /* module name, at most FMNAMESZ characters */
    struct streamtab *f_str;   /* its streamtab */
    uint_t f_flag;             /* D_* */
    void *f_kmod;              /* loader handle (reserved) */
};

struct cdevsw {
    const char *d_name;        /* driver name, at most FMNAMESZ characters */
    struct streamtab *d_str;   /* its streamtab */
    uint_t d_flag;             /* D_* */
    void *d_kmod;              /* loader handle (reserved) */
};

/*
 * register_strmod / register_strdev
 *   Context: any thread; takes the registry lock.
 *   Returns: register_strmod 0; register_strdev the major number (the one asked
 *   for, or a free one when major is 0); a negative errno on failure:
 *   -EINVAL (NULL, no streamtab or read/write qinit, bad name, name too long),
 *   -EEXIST (name or major in use), -ENOMEM.
 * unregister_strmod / unregister_strdev
 *   Returns 0, -ENOENT if not registered, -EBUSY while a stream uses it.
 */
int register_strmod(struct fmodsw *fmod);
int unregister_strmod(struct fmodsw *fmod);
int register_strdev(struct cdevsw *cdev, major_t major);
int unregister_strdev(struct cdevsw *cdev, major_t major);

/* Look up a registered module or driver by name; NULL if none. */
struct fmodsw *fmod_lookup(const char *name);
struct cdevsw *cdev_lookup(const char *name);
struct cdevsw *cdev_lookup_major(major_t major);

#ifdef __cplusplus
}
#endif

#endif /* _SYS_STRCONF_H */
