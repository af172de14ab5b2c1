/* SPDX-License-Identifier: MIT */
/*
 * sys/timod.h -- the ioctls of the timod module, through which libxnet runs
 * the TPI requests that wait for an acknowledgement, and the TI_SYNC
 * structures.  Values are Solaris'.
 *
 * The contract, which timod and libxnet both follow.  Every command below
 * except TI_GETMYNAME, TI_GETPEERNAME, TI_SETMYNAME and TI_SETPEERNAME is
 * sent with I_STR (struct strioctl):
 *
 *   ic_cmd  the TI_* command;
 *   ic_dp   a buffer holding the TPI request, fixed part first and its
 *           variable parts (address, options) at the offsets it names; the
 *           buffer must be large enough for the acknowledgement, which
 *           replaces the request in it;
 *   ic_len  the length of the request in; the length of the
 *           acknowledgement out.
 *
 *   command         request                    acknowledgement
 *   TI_GETINFO      T_INFO_REQ                 T_INFO_ACK
 *   TI_OPTMGMT      T_OPTMGMT_REQ + options    T_OPTMGMT_ACK + options
 *   TI_BIND         T_BIND_REQ + address       T_BIND_ACK + address
 *   TI_UNBIND       T_UNBIND_REQ               T_OK_ACK
 *   TI_GETADDRS     T_ADDR_REQ                 T_ADDR_ACK + addresses
 *   TI_CAPABILITY   T_CAPABILITY_REQ           T_CAPABILITY_ACK
 *   TI_SYNC         struct ti_sync_req         struct ti_sync_ack
 *
 * Results:
 *   0    the provider acknowledged; ic_dp holds the acknowledgement.
 *   > 0  the provider answered T_ERROR_ACK: the value is
 *        (UNIX_error << 8) | TLI_error.  TLI_error is a t_errno value; when
 *        it is TSYSERR, UNIX_error is the errno.  libxnet decodes it into
 *        t_errno and errno.
 *   -1   the ioctl itself failed (errno: EINVAL for a malformed request,
 *        ENOTTY when the stream below is no TPI provider -- docs/TIMOD.md,
 *        "A stream that is not a transport" -- ETIME, EINTR, ... as for any
 *        I_STR).
 *
 * TI_GETMYNAME and TI_GETPEERNAME are transparent ioctls taking a
 * struct netbuf *: the local or peer address is copied to its buf and its
 * len set.  TI_SETMYNAME and TI_SETPEERNAME are reserved (they served
 * sockets emulated over TPI).
 */
#ifndef _SYS_TIMOD_H
#define _SYS_TIMOD_H

#include <stdint.h>
#include <sys/tpicommon.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIMOD ('T' << 8)
#define TI_GETINFO (TIMOD | 140)     /* T_INFO_REQ -> T_INFO_ACK */
#define TI_OPTMGMT (TIMOD | 141)     /* T_OPTMGMT_REQ -> T_OPTMGMT_ACK */
#define TI_BIND (TIMOD | 142)        /* T_BIND_REQ -> T_BIND_ACK */
#define TI_UNBIND (TIMOD | 143)      /* T_UNBIND_REQ -> T_OK_ACK */
#define TI_GETMYNAME (TIMOD | 144)   /* local address into a struct netbuf */
#define TI_GETPEERNAME (TIMOD | 145) /* peer address into a struct netbuf */
#define TI_SETMYNAME (TIMOD | 146)   /* reserved */
#define TI_SETPEERNAME (TIMOD | 147) /* reserved */
#define TI_SYNC (TIMOD | 148)        /* ti_sync_req -> ti_sync_ack */
#define TI_GETADDRS (TIMOD | 149)    /* T_ADDR_REQ -> T_ADDR_ACK */
#define TI_CAPABILITY (TIMOD | 150)  /* T_CAPABILITY_REQ -> T_CAPABILITY_ACK */

/*
 * TI_SYNC: bring a library's view of an endpoint up to date (after exec, or
 * when a descriptor is shared), asking for what tsr_flags names.
 */
struct ti_sync_req {
    uint32_t tsr_flags; /* TSRF_* */
};

#define TSRF_INFO_REQ 0x0001         /* fill the T_info_ack fields of the ack */
#define TSRF_IS_EXP_IN_RCVBUF 0x0002 /* report expedited data waiting (TSAF_EXP_QUEUED) */
#define TSRF_QLEN_REQ 0x0004         /* fill tsa_qlen */

/* The answer to TI_SYNC: a T_info_ack (PRIM_type T_INFO_ACK) extended. */
struct ti_sync_ack {
    t_scalar_t PRIM_type; /* T_INFO_ACK */
    t_scalar_t TSDU_size;
    t_scalar_t ETSDU_size;
    t_scalar_t CDATA_size;
    t_scalar_t DDATA_size;
    t_scalar_t ADDR_size;
    t_scalar_t OPT_size;
    t_scalar_t TIDU_size;
    t_scalar_t SERV_type;
    t_scalar_t CURRENT_state;
    t_scalar_t PROVIDER_flag;
    t_uscalar_t tsa_qlen; /* with TSRF_QLEN_REQ: the bind's connection-indication limit */
    uint32_t tsa_flags;   /* TSAF_* */
};

#define TSAF_EXP_QUEUED 0x0001 /* expedited data is waiting at the stream head */

#ifdef __cplusplus
}
#endif

#endif /* _SYS_TIMOD_H */
