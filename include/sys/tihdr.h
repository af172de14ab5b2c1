/* SPDX-License-Identifier: MIT */
/*
 * sys/tihdr.h -- the Transport Provider Interface (TPI): the primitives a
 * transport user (timod, libxnet, a module above) and a transport provider
 * exchange as M_PROTO/M_PCPROTO messages, their layouts, the provider's
 * states and the PROVIDER_flag bits.
 *
 * Every primitive starts with a t_scalar_t PRIM_type.  Variable parts
 * (addresses, options, data with a connection) follow the fixed part in the
 * same control block; a primitive names each by a length and an offset from
 * the start of the block.  Fields are 32 bits on every data model.
 *
 * Primitive numbers follow TPI Revision 2.0.0 as Linux Fast-STREAMS and LiS
 * define them: 0..23 as in SVR4 and Solaris, then T_OPTDATA_REQ 24,
 * T_ADDR_REQ 25, T_OPTDATA_IND 26, T_ADDR_ACK 27, T_CAPABILITY_REQ 28,
 * T_CAPABILITY_ACK 29.  Solaris numbers T_ADDR_REQ/ACK 24/25 and
 * T_CAPABILITY_REQ/ACK 30/31 (with its renumbered T_BIND_REQ 26,
 * T_OPTMGMT_REQ 27, T_CONN_RES 28, and T_OPTDATA_* kernel-private); its 24
 * and 26..28 collide with TPI 2.0's, so one numbering must be chosen, and
 * the Linux one is (docs/TPI.md, "Primitive numbers").  T_BIND_REQ,
 * T_OPTMGMT_REQ and T_CONN_RES keep their original numbers 6, 9 and 1 with
 * XTI semantics.  tests/test_std_values.c pins every value.
 */
#ifndef _SYS_TIHDR_H
#define _SYS_TIHDR_H

#include <stddef.h>
#include <sys/tpicommon.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- primitives sent by the transport user ---- */
#define T_CONN_REQ 0     /* connect */
#define T_CONN_RES 1     /* accept a connection indication */
#define T_DISCON_REQ 2   /* disconnect, or refuse a connection indication */
#define T_DATA_REQ 3     /* normal data (M_DATA may follow) */
#define T_EXDATA_REQ 4   /* expedited data */
#define T_INFO_REQ 5     /* ask for a T_INFO_ACK */
#define T_BIND_REQ 6     /* bind an address */
#define T_UNBIND_REQ 7   /* unbind */
#define T_UNITDATA_REQ 8 /* connectionless data */
#define T_OPTMGMT_REQ 9  /* options management */
#define T_ORDREL_REQ 10  /* orderly release */

/* ---- primitives sent by the transport provider ---- */
#define T_CONN_IND 11     /* connection indication */
#define T_CONN_CON 12     /* connection confirmation */
#define T_DISCON_IND 13   /* disconnect indication */
#define T_DATA_IND 14     /* normal data */
#define T_EXDATA_IND 15   /* expedited data */
#define T_INFO_ACK 16     /* provider information */
#define T_BIND_ACK 17     /* bound */
#define T_ERROR_ACK 18    /* a request failed */
#define T_OK_ACK 19       /* a request without its own ack succeeded */
#define T_UNITDATA_IND 20 /* connectionless data */
#define T_UDERROR_IND 21  /* a T_UNITDATA_REQ failed */
#define T_OPTMGMT_ACK 22  /* options management result */
#define T_ORDREL_IND 23   /* orderly release indication */

/* ---- later additions, either direction ---- */
#define T_OPTDATA_REQ 24    /* data with options (user) */
#define T_ADDR_REQ 25       /* ask for the local and remote addresses (user) */
#define T_OPTDATA_IND 26    /* data with options (provider) */
#define T_ADDR_ACK 27       /* the addresses (provider) */
#define T_CAPABILITY_REQ 28 /* ask for the provider's capabilities (user) */
#define T_CAPABILITY_ACK 29 /* the capabilities (provider) */

/* ---- provider states (T_info_ack CURRENT_state) ---- */
#define TS_UNBND 0        /* unbound */
#define TS_WACK_BREQ 1    /* awaiting the ack of T_BIND_REQ */
#define TS_WACK_UREQ 2    /* awaiting the ack of T_UNBIND_REQ */
#define TS_IDLE 3         /* bound, idle */
#define TS_WACK_OPTREQ 4  /* awaiting the ack of T_OPTMGMT_REQ */
#define TS_WACK_CREQ 5    /* awaiting the ack of T_CONN_REQ */
#define TS_WCON_CREQ 6    /* awaiting the confirmation of T_CONN_REQ */
#define TS_WRES_CIND 7    /* awaiting the response to T_CONN_IND */
#define TS_WACK_CRES 8    /* awaiting the ack of T_CONN_RES */
#define TS_DATA_XFER 9    /* connected: data transfer */
#define TS_WIND_ORDREL 10 /* released by this side, may still read */
#define TS_WREQ_ORDREL 11 /* released by the peer, may still write */
#define TS_WACK_DREQ6 12  /* awaiting the ack of T_DISCON_REQ from TS_WCON_CREQ */
#define TS_WACK_DREQ7 13  /* ... from TS_WRES_CIND */
#define TS_WACK_DREQ9 14  /* ... from TS_DATA_XFER */
#define TS_WACK_DREQ10 15 /* ... from TS_WIND_ORDREL */
#define TS_WACK_DREQ11 16 /* ... from TS_WREQ_ORDREL */
#define TS_NOSTATES 17    /* number of states */

/* ---- T_info_ack PROVIDER_flag ---- */
#define SENDZERO 0x001  /* zero-length TSDUs may be sent */
#define EXPINLINE 0x002 /* the provider wants expedited data in band 0 */
#define XPG4_1 0x004    /* T_ADDR_REQ and XTI option semantics are supported */

/* ---- T_OPTDATA_REQ / T_OPTDATA_IND DATA_flag ---- */
#define T_ODF_MORE 0x001 /* the TSDU continues in the next primitive */
#define T_ODF_EX 0x002   /* expedited data */

/* ---- T_CAPABILITY_REQ / T_CAPABILITY_ACK CAP_bits1 ---- */
#define TC1_INFO (1u << 0)        /* INFO_ack is wanted / valid */
#define TC1_ACCEPTOR_ID (1u << 1) /* ACCEPTOR_id is wanted / valid */
#define TC1_CAP_BITS2 (1u << 31)  /* reserved: a second word of bits follows */

/* ---- the primitives ---- */
struct T_conn_req {
    t_scalar_t PRIM_type;   /* T_CONN_REQ */
    t_scalar_t DEST_length; /* peer address */
    t_scalar_t DEST_offset;
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
};

struct T_conn_res {
    t_scalar_t PRIM_type;    /* T_CONN_RES */
    t_uscalar_t ACCEPTOR_id; /* the accepting stream (T_capability_ack ACCEPTOR_id) */
    t_scalar_t OPT_length;   /* options */
    t_scalar_t OPT_offset;
    t_scalar_t SEQ_number; /* of the T_CONN_IND accepted */
};

struct T_discon_req {
    t_scalar_t PRIM_type;  /* T_DISCON_REQ */
    t_scalar_t SEQ_number; /* of the T_CONN_IND refused, else -1 */
};

struct T_data_req {
    t_scalar_t PRIM_type; /* T_DATA_REQ */
    t_scalar_t MORE_flag; /* non-zero: the TSDU continues */
};

struct T_exdata_req {
    t_scalar_t PRIM_type; /* T_EXDATA_REQ */
    t_scalar_t MORE_flag; /* non-zero: the ETSDU continues */
};

struct T_info_req {
    t_scalar_t PRIM_type; /* T_INFO_REQ */
};

struct T_bind_req {
    t_scalar_t PRIM_type;      /* T_BIND_REQ */
    t_scalar_t ADDR_length;    /* address wanted; 0: the provider chooses */
    t_scalar_t ADDR_offset;
    t_uscalar_t CONIND_number; /* most connection indications outstanding */
};

struct T_unbind_req {
    t_scalar_t PRIM_type; /* T_UNBIND_REQ */
};

struct T_unitdata_req {
    t_scalar_t PRIM_type;   /* T_UNITDATA_REQ */
    t_scalar_t DEST_length; /* destination address */
    t_scalar_t DEST_offset;
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
};

struct T_optmgmt_req {
    t_scalar_t PRIM_type;  /* T_OPTMGMT_REQ */
    t_scalar_t OPT_length; /* options (struct T_opthdr list) */
    t_scalar_t OPT_offset;
    t_scalar_t MGMT_flags; /* T_NEGOTIATE, T_CHECK, T_DEFAULT or T_CURRENT */
};

struct T_ordrel_req {
    t_scalar_t PRIM_type; /* T_ORDREL_REQ */
};

struct T_conn_ind {
    t_scalar_t PRIM_type;  /* T_CONN_IND */
    t_scalar_t SRC_length; /* caller's address */
    t_scalar_t SRC_offset;
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
    t_scalar_t SEQ_number; /* names this indication in T_CONN_RES/T_DISCON_REQ */
};

struct T_conn_con {
    t_scalar_t PRIM_type;  /* T_CONN_CON */
    t_scalar_t RES_length; /* responding address */
    t_scalar_t RES_offset;
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
};

struct T_discon_ind {
    t_scalar_t PRIM_type;     /* T_DISCON_IND */
    t_scalar_t DISCON_reason; /* provider-specific */
    t_scalar_t SEQ_number;    /* of a withdrawn T_CONN_IND, else -1 */
};

struct T_data_ind {
    t_scalar_t PRIM_type; /* T_DATA_IND */
    t_scalar_t MORE_flag; /* non-zero: the TSDU continues */
};

struct T_exdata_ind {
    t_scalar_t PRIM_type; /* T_EXDATA_IND */
    t_scalar_t MORE_flag; /* non-zero: the ETSDU continues */
};

struct T_info_ack {
    t_scalar_t PRIM_type;     /* T_INFO_ACK */
    t_scalar_t TSDU_size;     /* largest TSDU; T_INFINITE, T_INVALID, 0: no boundaries */
    t_scalar_t ETSDU_size;    /* largest ETSDU; T_INFINITE, T_INVALID */
    t_scalar_t CDATA_size;    /* most data with a connect; T_INFINITE, T_INVALID */
    t_scalar_t DDATA_size;    /* most data with a disconnect; T_INFINITE, T_INVALID */
    t_scalar_t ADDR_size;     /* largest address; T_INFINITE, T_INVALID */
    t_scalar_t OPT_size;      /* most option bytes; T_INFINITE, T_INVALID */
    t_scalar_t TIDU_size;     /* largest data in one primitive */
    t_scalar_t SERV_type;     /* T_COTS, T_COTS_ORD or T_CLTS */
    t_scalar_t CURRENT_state; /* TS_* */
    t_scalar_t PROVIDER_flag; /* SENDZERO, EXPINLINE, XPG4_1 */
};

struct T_bind_ack {
    t_scalar_t PRIM_type;      /* T_BIND_ACK */
    t_scalar_t ADDR_length;    /* address bound */
    t_scalar_t ADDR_offset;
    t_uscalar_t CONIND_number; /* connection indications allowed */
};

struct T_error_ack {
    t_scalar_t PRIM_type;  /* T_ERROR_ACK */
    t_scalar_t ERROR_prim; /* the primitive that failed */
    t_scalar_t TLI_error;  /* TBADADDR ... TPROTO */
    t_scalar_t UNIX_error; /* errno value when TLI_error is TSYSERR */
};

struct T_ok_ack {
    t_scalar_t PRIM_type;    /* T_OK_ACK */
    t_scalar_t CORRECT_prim; /* the primitive that succeeded */
};

struct T_unitdata_ind {
    t_scalar_t PRIM_type;  /* T_UNITDATA_IND */
    t_scalar_t SRC_length; /* source address */
    t_scalar_t SRC_offset;
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
};

struct T_uderror_ind {
    t_scalar_t PRIM_type;   /* T_UDERROR_IND */
    t_scalar_t DEST_length; /* destination address of the failed unit */
    t_scalar_t DEST_offset;
    t_scalar_t OPT_length; /* its options */
    t_scalar_t OPT_offset;
    t_scalar_t ERROR_type; /* provider-specific */
};

struct T_optmgmt_ack {
    t_scalar_t PRIM_type;  /* T_OPTMGMT_ACK */
    t_scalar_t OPT_length; /* options with their results */
    t_scalar_t OPT_offset;
    t_scalar_t MGMT_flags; /* T_SUCCESS, T_FAILURE, T_PARTSUCCESS, T_READONLY, T_NOTSUPPORT */
};

struct T_ordrel_ind {
    t_scalar_t PRIM_type; /* T_ORDREL_IND */
};

struct T_addr_req {
    t_scalar_t PRIM_type; /* T_ADDR_REQ */
};

struct T_addr_ack {
    t_scalar_t PRIM_type;      /* T_ADDR_ACK */
    t_scalar_t LOCADDR_length; /* local address, 0 if unbound */
    t_scalar_t LOCADDR_offset;
    t_scalar_t REMADDR_length; /* peer address, 0 if not connected */
    t_scalar_t REMADDR_offset;
};

struct T_optdata_req {
    t_scalar_t PRIM_type;  /* T_OPTDATA_REQ */
    t_scalar_t DATA_flag;  /* T_ODF_MORE, T_ODF_EX */
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
};

struct T_optdata_ind {
    t_scalar_t PRIM_type;  /* T_OPTDATA_IND */
    t_scalar_t DATA_flag;  /* T_ODF_MORE, T_ODF_EX */
    t_scalar_t OPT_length; /* options */
    t_scalar_t OPT_offset;
};

struct T_capability_req {
    t_scalar_t PRIM_type;  /* T_CAPABILITY_REQ */
    t_uscalar_t CAP_bits1; /* TC1_* wanted */
};

struct T_capability_ack {
    t_scalar_t PRIM_type;       /* T_CAPABILITY_ACK */
    t_uscalar_t CAP_bits1;      /* TC1_* valid in this ack */
    struct T_info_ack INFO_ack; /* with TC1_INFO */
    t_uscalar_t ACCEPTOR_id;    /* with TC1_ACCEPTOR_ID: names this stream in T_CONN_RES */
};

/* Any primitive, viewed by its first field. */
union T_primitives {
    t_scalar_t type;
    struct T_addr_ack addr_ack;
    struct T_addr_req addr_req;
    struct T_bind_ack bind_ack;
    struct T_bind_req bind_req;
    struct T_capability_ack capability_ack;
    struct T_capability_req capability_req;
    struct T_conn_con conn_con;
    struct T_conn_ind conn_ind;
    struct T_conn_req conn_req;
    struct T_conn_res conn_res;
    struct T_data_ind data_ind;
    struct T_data_req data_req;
    struct T_discon_ind discon_ind;
    struct T_discon_req discon_req;
    struct T_error_ack error_ack;
    struct T_exdata_ind exdata_ind;
    struct T_exdata_req exdata_req;
    struct T_info_ack info_ack;
    struct T_info_req info_req;
    struct T_ok_ack ok_ack;
    struct T_optdata_ind optdata_ind;
    struct T_optdata_req optdata_req;
    struct T_optmgmt_ack optmgmt_ack;
    struct T_optmgmt_req optmgmt_req;
    struct T_ordrel_ind ordrel_ind;
    struct T_ordrel_req ordrel_req;
    struct T_uderror_ind uderror_ind;
    struct T_unbind_req unbind_req;
    struct T_unitdata_ind unitdata_ind;
    struct T_unitdata_req unitdata_req;
};

/* ---- options in TPI primitives ---- */

/*
 * One option in an OPT_length/OPT_offset area: this header, then the value,
 * then padding to the next multiple of _TPI_ALIGN_SIZE.  len counts the
 * header and the value, not the padding.  Same layout as XTI's t_opthdr.
 */
struct T_opthdr {
    t_uscalar_t len;    /* sizeof(struct T_opthdr) + length of the value */
    t_uscalar_t level;  /* protocol level (XTI_GENERIC, INET_TCP, ...) */
    t_uscalar_t name;   /* option name within the level */
    t_uscalar_t status; /* result: T_SUCCESS, T_FAILURE, ... (in acks) */
};

#define _TPI_ALIGN_SIZE (sizeof(t_scalar_t))

/* n rounded up to a multiple of _TPI_ALIGN_SIZE. */
#define _TPI_ALIGN_TOPT(n) (((size_t)(n) + _TPI_ALIGN_SIZE - 1) & ~(size_t)(_TPI_ALIGN_SIZE - 1))

/* The value of the option whose header is at tohp. */
#define _TPI_TOPT_DATA(tohp) ((unsigned char *)(tohp) + sizeof(struct T_opthdr))

/*
 * The option after popt in the buffer of buflen bytes at pbuf, or NULL if
 * popt is the last (see _tpi_optnext in <sys/tpicommon.h>).
 */
#define _TPI_TOPT_NEXTHDR(pbuf, buflen, popt)                                                      \
    ((struct T_opthdr *)_tpi_optnext((pbuf), (size_t)(buflen), (popt), sizeof(struct T_opthdr)))

/*
 * _TPI_TOPT_VALID -- whether the option at tohp lies whole between start and
 * end (one past the last byte), its len covering at least its header.
 */
static inline int _tpi_topt_valid(const struct T_opthdr *tohp, const void *start, const void *end)
{
    const char *p = (const char *)tohp, *s = (const char *)start, *e = (const char *)end;

    return p >= s && p <= e && (size_t)(e - p) >= sizeof(struct T_opthdr) &&
           tohp->len >= sizeof(struct T_opthdr) && tohp->len <= (size_t)(e - p);
}

#define _TPI_TOPT_VALID(tohp, start, end) _tpi_topt_valid((tohp), (start), (end))

#ifdef __cplusplus
}
#endif

#endif /* _SYS_TIHDR_H */
