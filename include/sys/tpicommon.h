/* SPDX-License-Identifier: MIT */
/*
 * sys/tpicommon.h -- the names that the Transport Provider Interface
 * (<sys/tihdr.h>) and the transport user's libraries (<xti.h>, <tiuser.h>)
 * share: the scalar types of TPI messages, the error codes, the service
 * types, the data and option-management flags.
 *
 * Defined once here so that every combination of those headers, in any
 * order, sees one definition of each name.  Programs include one of the three
 * headers above, not this one.
 */
#ifndef _SYS_TPICOMMON_H
#define _SYS_TPICOMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * The fields of TPI primitives and of option headers are 32 bits wide on
 * every data model (as in Solaris' 64-bit TPI), so a primitive's layout does
 * not depend on whether long is 32 or 64 bits.
 */
typedef int32_t t_scalar_t;
typedef uint32_t t_uscalar_t;

/*
 * Error codes: t_errno of XTI and TLI, and TLI_error of a T_ERROR_ACK.
 * XNS Issue 5 numbering.  A provider reports TSYSERR with the errno value in
 * UNIX_error.
 */
#define TBADADDR 1       /* address in the wrong format or not valid */
#define TBADOPT 2        /* options in the wrong format or not valid */
#define TACCES 3         /* no permission for the address or options */
#define TBADF 4          /* not a transport endpoint */
#define TNOADDR 5        /* the provider could not allocate an address */
#define TOUTSTATE 6      /* the call is not allowed in the current state */
#define TBADSEQ 7        /* no connection indication with that sequence number */
#define TSYSERR 8        /* a system error; see errno (UNIX_error in TPI) */
#define TLOOK 9          /* an event needs attention: see t_look */
#define TBADDATA 10      /* too much or too little data */
#define TBUFOVFLW 11     /* a user buffer is too small */
#define TFLOW 12         /* flow controlled, and the endpoint is non-blocking */
#define TNODATA 13       /* nothing to receive, and the endpoint is non-blocking */
#define TNODIS 14        /* no disconnect indication is waiting */
#define TNOUDERR 15      /* no unit-data error indication is waiting */
#define TBADFLAG 16      /* flags not valid */
#define TNOREL 17        /* no orderly release indication is waiting */
#define TNOTSUPPORT 18   /* not supported by this provider */
#define TSTATECHNG 19    /* the endpoint is changing state */
#define TNOSTRUCTYPE 20  /* t_alloc/t_free: structure type not supported */
#define TBADNAME 21      /* no such transport provider */
#define TBADQLEN 22      /* listening with a queue length of zero */
#define TADDRBUSY 23     /* the address is in use */
#define TINDOUT 24       /* connection indications are outstanding */
#define TPROVMISMATCH 25 /* the accepting endpoint is of another provider */
#define TRESQLEN 26      /* the accepting endpoint is listening (qlen > 0) */
#define TRESADDR 27      /* the accepting endpoint is bound to another address */
#define TQFULL 28        /* the queue of connection indications is full */
#define TPROTO 29        /* a protocol error between XTI and the provider */

/* Service types: t_info.servtype, T_info_ack SERV_type. */
#define T_COTS 1     /* connection mode */
#define T_COTS_ORD 2 /* connection mode with orderly release */
#define T_CLTS 3     /* connectionless */

/* Sizes in t_info and T_info_ack that are not a byte count. */
#define T_INFINITE (-1) /* no limit */
#define T_INVALID (-2)  /* the service is not offered */

/* Data flags: t_snd/t_rcv and friends. */
#define T_MORE 0x001      /* the TSDU or ETSDU continues in the next call */
#define T_EXPEDITED 0x002 /* expedited data */
#define T_PUSH 0x004      /* send what is buffered now */

/*
 * Option management: the request in t_optmgmt.flags and T_OPTMGMT_REQ
 * MGMT_flags, and the result in the returned flags, in the status field of
 * each option header, and in T_OPTMGMT_ACK MGMT_flags.
 */
#define T_NEGOTIATE 0x004   /* set the options */
#define T_CHECK 0x008       /* check whether the options could be set */
#define T_DEFAULT 0x010     /* return the defaults */
#define T_SUCCESS 0x020     /* done as asked */
#define T_FAILURE 0x040     /* not done */
#define T_CURRENT 0x080     /* return the current values */
#define T_PARTSUCCESS 0x100 /* done, some values changed by the provider */
#define T_READONLY 0x200    /* the option may be read but not set */
#define T_NOTSUPPORT 0x400  /* the option is not supported */

/*
 * _tpi_optnext -- the step of T_OPT_NEXTHDR (XTI) and _TPI_TOPT_NEXTHDR
 * (TPI), whose option headers share one layout: a 32-bit len counting the
 * header (hdrsize bytes) and the value, padded to a multiple of
 * sizeof(t_scalar_t) before the next header.  Returns the header after the
 * one at opt in the buffer of buflen bytes at buf, or NULL when opt is the
 * last: no whole header fits after its padded value, or its len is shorter
 * than a header (a walk that would never advance).  opt must lie in the
 * buffer and be aligned; the next header then is too.
 */
static inline void *_tpi_optnext(const void *buf, size_t buflen, const void *opt, size_t hdrsize)
{
    size_t at = (size_t)((const char *)opt - (const char *)buf);
    size_t len = *(const t_uscalar_t *)opt;
    size_t step = (len + sizeof(t_scalar_t) - 1) & ~(sizeof(t_scalar_t) - 1);

    if (len < hdrsize || at > buflen || step > buflen - at || buflen - at - step < hdrsize)
        return NULL;
    return (char *)(uintptr_t)opt + step;
}

#endif /* _SYS_TPICOMMON_H */
