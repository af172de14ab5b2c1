/* SPDX-License-Identifier: MIT */
/* sys/cmn_err.h -- console messages for drivers and modules (cmn_err(9F)). */
#ifndef _SYS_CMN_ERR_H
#define _SYS_CMN_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

#define CE_CONT 0   /* continue the previous message */
#define CE_NOTE 1   /* notice */
#define CE_WARN 2   /* warning */
#define CE_PANIC 3  /* fatal: the process aborts */

/* Prints to standard error with a level prefix (silenced for CE_CONT/CE_NOTE
 * unless USTREAMS_VERBOSE is set); CE_PANIC aborts the process. */
void cmn_err(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* _SYS_CMN_ERR_H */
