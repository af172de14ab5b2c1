/* SPDX-License-Identifier: MIT */
/*
 * xti.h -- the X/Open Transport Interface (XNS Issue 5), implemented by
 * libxnet (pkg-config module xnet) over TPI streams.
 *
 * Names, structure layouts and values follow XNS Issue 5; where it leaves a
 * value to the implementation, Solaris' is used.  The names this header
 * shares with <sys/tihdr.h> (error codes, T_MORE, T_NEGOTIATE, ...) come from
 * <sys/tpicommon.h>, and those it shares with <tiuser.h> from
 * <sys/xti_tli.h>, so these headers may be included together in any order.
 * As XNS Issue 5 allows, the Internet protocol options of <xti_inet.h> are
 * visible too.
 */
#ifndef _XTI_H
#define _XTI_H

#include <stddef.h>
#include <unistd.h> /* _SC_T_IOV_MAX */
#include <sys/tpicommon.h>
#include <sys/xti_tli.h>

/* t_sysconf's name; the C library's <unistd.h> normally defines it (66 in glibc). */
#ifndef _SC_T_IOV_MAX
#define _SC_T_IOV_MAX 66
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- events (t_look) beyond those of TLI ---- */
#define T_GODATA 0x0100   /* normal data may be sent again */
#define T_GOEXDATA 0x0200 /* expedited data may be sent again */

/* ---- t_info.flags ---- */
#define T_SENDZERO 0x001   /* zero-length TSDUs may be sent */
#define T_ORDRELDATA 0x002 /* orderly release may carry data */

/* ---- option values ---- */
#define T_YES 1           /* boolean option on */
#define T_NO 0            /* boolean option off */
#define T_UNUSED (-1)     /* field not used */
#define T_NULL 0          /* empty value */
#define T_ABSREQ 0x8000   /* or'ed into a level: the option is an absolute requirement */
#define T_UNSPEC (~0 - 2) /* value not specified */
#define T_ALLOPT 0        /* as a name: every option of the level */

/* ---- options ---- */

/*
 * One option in a t_optmgmt, t_call, t_unitdata, ... opt buffer: this
 * header, then the value, then padding to the next multiple of
 * sizeof(t_scalar_t).  len counts the header and the value, not the padding.
 */
struct t_opthdr {
    t_uscalar_t len;    /* sizeof(struct t_opthdr) + length of the value */
    t_uscalar_t level;  /* XTI_GENERIC, INET_IP, INET_TCP, INET_UDP, ... */
    t_uscalar_t name;   /* option name within the level */
    t_uscalar_t status; /* result: T_SUCCESS, T_FAILURE, T_PARTSUCCESS, ... */
};

/* n rounded up to a multiple of sizeof(t_scalar_t). */
#define _T_ALIGN(n) (((size_t)(n) + sizeof(t_scalar_t) - 1) & ~(sizeof(t_scalar_t) - 1))

/* The value of the option whose header is at tohp. */
#define T_OPT_DATA(tohp) ((unsigned char *)(tohp) + sizeof(struct t_opthdr))

/* The first option in the struct netbuf *nbp, or NULL if none fits. */
#define T_OPT_FIRSTHDR(nbp)                                                                        \
    ((nbp)->len >= sizeof(struct t_opthdr) ? (struct t_opthdr *)(nbp)->buf : (struct t_opthdr *)0)

/*
 * The option after tohp in the struct netbuf *nbp, or NULL if tohp is the
 * last: no whole header fits after its padded value, or its len is shorter
 * than a header.
 */
#define T_OPT_NEXTHDR(nbp, tohp)                                                                   \
    ((struct t_opthdr *)_tpi_optnext((nbp)->buf, (nbp)->len, (tohp), sizeof(struct t_opthdr)))

/* The generic level, whose options any provider understands. */
#define XTI_GENERIC 0xffff

#define XTI_DEBUG 0x0001    /* debugging: t_uscalar_t flags */
#define XTI_LINGER 0x0080   /* linger on close: struct t_linger */
#define XTI_RCVBUF 0x1002   /* receive buffer size: t_uscalar_t */
#define XTI_RCVLOWAT 0x1004 /* receive low-water mark: t_uscalar_t */
#define XTI_SNDBUF 0x1001   /* send buffer size: t_uscalar_t */
#define XTI_SNDLOWAT 0x1003 /* send low-water mark: t_uscalar_t */

/* The value of XTI_LINGER. */
struct t_linger {
    t_scalar_t l_onoff;  /* T_YES or T_NO */
    t_scalar_t l_linger; /* seconds, or T_INFINITE, T_UNSPEC */
};

/* ---- scatter/gather (t_sndv, t_rcvv, t_sndvudata, t_rcvvudata) ---- */
struct t_iovec {
    void *iov_base;
    size_t iov_len;
};

#define T_IOV_MAX 16 /* most t_iovec elements in one call */

/* ---- functions of XTI not in TLI ---- */
int t_getprotaddr(int fd, struct t_bind *boundaddr, struct t_bind *peeraddr);
int t_rcvreldata(int fd, struct t_discon *discon);
int t_rcvv(int fd, struct t_iovec *iov, unsigned int iovcount, int *flags);
int t_rcvvudata(int fd, struct t_unitdata *unitdata, struct t_iovec *iov, unsigned int iovcount,
                int *flags);
int t_sndreldata(int fd, struct t_discon *discon);
int t_sndv(int fd, const struct t_iovec *iov, unsigned int iovcount, int flags);
int t_sndvudata(int fd, struct t_unitdata *unitdata, struct t_iovec *iov, unsigned int iovcount);
const char *t_strerror(int errnum);
int t_sysconf(int name); /* name: _SC_T_IOV_MAX */

/*
 * ---- ustreams extension (not XNS 5) ----
 * t_coalesce: whether t_snd / t_sndv data sent with T_MORE on connection-
 * mode endpoint fd is held in the library and crosses into the stream in
 * batches (on: 1) or goes at once (off: 0; what is held is sent first).
 * t_open's default: on for a byte stream (t_info tsdu 0: /dev/tcp), off
 * where the provider keeps TSDU boundaries.  on == -1 only asks.  Returns the previous setting (0 or
 * 1), or -1 with t_errno TBADF, TNOTSUPPORT (connectionless), TBADFLAG, or
 * TFLOW / TLOOK / TSYSERR when held data could not be sent.  docs/XTI.md
 * "T_MORE coalescing".
 */
int t_coalesce(int fd, int on);

#ifdef __cplusplus
}
#endif

#include <xti_inet.h>

#endif /* _XTI_H */
