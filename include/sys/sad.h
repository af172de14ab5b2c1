/* SPDX-License-Identifier: MIT */
/*
 * sys/sad.h -- the STREAMS administrative driver, sad(7).
 *
 * The sad driver (/dev/streams/sad) keeps the autopush table: for a device
 * (major, minor or range of minors) the list of modules pushed on every
 * open that builds a new stream.  Its ioctls, as ioctl(fd, cmd, arg) (a
 * transparent ioctl) or through I_STR with ic_cmd = cmd:
 *   SAD_SAP  arg -> struct strapush: configure (SAP_ONE, SAP_RANGE, SAP_ALL)
 *            or remove (SAP_CLEAR) an entry.  Needs a stream opened for
 *            writing (the "admin" device); read-only: EPERM.
 *   SAD_GAP  arg -> struct strapush with sap_major and sap_minor set: the
 *            entry covering that device is copied back.
 *   SAD_VML  arg -> struct str_list: returns 0 if every name is a module
 *            (loadable ones included), 1 if not.
 */
#ifndef _SYS_SAD_H
#define _SYS_SAD_H

#include <stropts.h>
#include <sys/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FMNAMESZ
#define FMNAMESZ 8
#endif

#define MAXAPUSH 8 /* most modules autopushed on one device */

/* sap_cmd */
#define SAP_ONE   1 /* one minor: sap_minor */
#define SAP_RANGE 2 /* the minors sap_minor..sap_lastminor */
#define SAP_ALL   3 /* every minor of sap_major */
#define SAP_CLEAR 4 /* remove the entry whose first minor is sap_minor */

/* ioctl commands */
#define SADIOC  ('D' << 8)
#define SAD_SAP (SADIOC | 1) /* set autopush information */
#define SAD_GAP (SADIOC | 2) /* get autopush information */
#define SAD_VML (SADIOC | 3) /* validate a list of module names */

struct strapush {
    uint_t sap_cmd;                        /* SAP_* */
    major_t sap_major;                     /* major device number */
    minor_t sap_minor;                     /* minor (first of a range) */
    minor_t sap_lastminor;                 /* last minor of a range */
    uint_t sap_npush;                      /* modules in sap_list, 1..MAXAPUSH */
    char sap_list[MAXAPUSH][FMNAMESZ + 1]; /* modules, the first pushed first */
};

#ifdef __cplusplus
}
#endif

#endif /* _SYS_SAD_H */
