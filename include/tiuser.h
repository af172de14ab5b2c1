/* SPDX-License-Identifier: MIT */
/*
 * tiuser.h -- the Transport Layer Interface (TLI) of SVR4, the predecessor of
 * XTI, implemented by the same functions of libxnet.
 *
 * The structures, states, t_alloc types and functions are those of
 * <sys/xti_tli.h>, shared with <xti.h>: TLI's t_info gains XTI's trailing
 * flags field, and the functions have their XNS Issue 5 signatures, which
 * TLI programs compile against unchanged.  TLI adds the T_ERROR event.
 * Solaris forbids including both <tiuser.h> and <xti.h>; here both may be
 * included, but a program should pick one interface.
 */
#ifndef _TIUSER_H
#define _TIUSER_H

#include <sys/tpicommon.h>
#include <sys/xti_tli.h>

/* ---- events (t_look) beyond those shared with XTI ---- */
#define T_ERROR 0x0020  /* a fatal error on the endpoint */
#define T_EVENTS 0x00ff /* every TLI event */

#endif /* _TIUSER_H */
