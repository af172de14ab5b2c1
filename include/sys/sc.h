/* SPDX-License-Identifier: MIT */
/*
 * sys/sc.h -- the sc module, STREAMS configuration (sc(4) of Linux
 * Fast-STREAMS, as documented there): push "sc" on a stream (the sad
 * driver, /dev/streams/sad, or any other) and ask with SC_IOC_LIST for the
 * registered drivers and modules.  docs/ADMIN.md, "The sc module".
 *
 *   struct sc_list l = {.sc_nmods = n, .sc_mlist = buf};
 *   struct strioctl ic = {.ic_cmd = SC_IOC_LIST, .ic_len = sizeof(l), .ic_dp = (char *)&l};
 *   ioctl(fd, I_STR, &ic);   (or ioctl(fd, SC_IOC_LIST, &l), transparent)
 *
 * On return l.sc_nmods is the number of entries registered, whatever the
 * space given; the first min(n, that number) are written to buf.  n == 0
 * (buf may be NULL) asks for the count alone.
 *
 * Differences from Fast-STREAMS' header: names are SC_NAMESZ long (driver
 * names such as "ticotsord" exceed FMNAMESZ here, as in Solaris);
 * SC_IOC_TUNE, SC_IOC_STATS and SC_IOC_RESET are not provided.
 */
#ifndef _SYS_SC_H
#define _SYS_SC_H

#include <sys/types.h>

#define SC_IOC_MAGIC 'C'
#define SC_IOC_LIST  ((SC_IOC_MAGIC << 8) | 0x01) /* arg: struct sc_list * */

#define SC_NAMESZ 31 /* longest driver or module name, without the NUL */

/* One qinit's module_info (module_info(9)), or index -1 and zeros when the
 * streamtab has no such qinit. */
struct sc_module_info {
    int index;                     /* 0 st_rdinit, 1 st_wrinit, 2 st_muxrinit, 3 st_muxwinit */
    unsigned short mi_idnum;       /* module id number */
    char mi_idname[SC_NAMESZ + 1]; /* module name */
    ssize_t mi_minpsz;             /* minimum packet size accepted */
    ssize_t mi_maxpsz;             /* maximum packet size accepted (INFPSZ: -1) */
    size_t mi_hiwat;               /* high-water mark */
    size_t mi_lowat;               /* low-water mark */
};

/* One qinit's statistics (module_stat(9)): the module's own qi_mstat counts
 * when it keeps one; in entry 0 (the read side, whose qinit has the open and
 * close routines) ms_ocnt and ms_ccnt are the open and close routine calls
 * the executive counted since registration. */
struct sc_module_stat {
    int index;      /* as in sc_module_info */
    long ms_pcnt;   /* calls to qi_putp */
    long ms_scnt;   /* calls to qi_srvp */
    long ms_ocnt;   /* calls to qi_qopen */
    long ms_ccnt;   /* calls to qi_qclose */
    long ms_acnt;   /* calls to qi_qadmin */
    void *ms_xptr;  /* always NULL: private statistics are not copied */
    short ms_xsize; /* always 0 */
    unsigned int ms_flags;
};

/* One registered driver (major > 0) or module (major 0). */
struct sc_mlist {
    long major;
    char name[SC_NAMESZ + 1]; /* d_name or f_name */
    struct sc_module_info mi[4];
    struct sc_module_stat ms[4];
};

struct sc_list {
    int sc_nmods;               /* in: entries sc_mlist has room for; out: entries registered */
    struct sc_mlist *sc_mlist;  /* the caller's array */
};

#endif /* _SYS_SC_H */
