/* SPDX-License-Identifier: MIT */
/*
 * sys/xti_tli.h -- what the X/Open Transport Interface (<xti.h>) and the
 * older Transport Layer Interface (<tiuser.h>) share: t_errno, the events of
 * t_look, the endpoint states, the t_alloc structure types, the structures
 * and the functions both offer.
 *
 * libxnet implements both interfaces with one set of functions, so the TLI
 * names are declared with their XNS Issue 5 signatures (void * where TLI
 * had char *, const where XTI added it, t_error returning int); TLI programs
 * compile against these unchanged.  Programs include <xti.h> or <tiuser.h>,
 * not this header.
 */
#ifndef _SYS_XTI_TLI_H
#define _SYS_XTI_TLI_H

#include <stddef.h>
#include <sys/tpicommon.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The error of the calling thread's last failed t_* call (TBADADDR ...
 * TPROTO).  An lvalue: t_errno = 0 works.
 */
extern int *_t_errno(void);
#define t_errno (*_t_errno())

/*
 * Messages of the error codes, indexed by t_errno; t_nerr entries.  Not
 * const: TLI programs declare them themselves as SVR4 documented them.
 */
extern char *t_errlist[];
extern int t_nerr;

/* ---- events (t_look) ---- */
#define T_LISTEN 0x0001     /* connection indication */
#define T_CONNECT 0x0002    /* connection confirmation */
#define T_DATA 0x0004       /* normal data */
#define T_EXDATA 0x0008     /* expedited data */
#define T_DISCONNECT 0x0010 /* disconnect */
#define T_UDERR 0x0040      /* unit-data error */
#define T_ORDREL 0x0080     /* orderly release */

/* ---- endpoint states (t_getstate) ---- */
#define T_UNINIT 0   /* not initialised */
#define T_UNBND 1    /* unbound */
#define T_IDLE 2     /* bound, idle */
#define T_OUTCON 3   /* outgoing connection pending */
#define T_INCON 4    /* incoming connection pending */
#define T_DATAXFER 5 /* data transfer */
#define T_OUTREL 6   /* orderly release sent */
#define T_INREL 7    /* orderly release received */

/* ---- t_alloc / t_free structure types ---- */
#define T_BIND 1     /* struct t_bind */
#define T_OPTMGMT 2  /* struct t_optmgmt */
#define T_CALL 3     /* struct t_call */
#define T_DIS 4      /* struct t_discon */
#define T_UNITDATA 5 /* struct t_unitdata */
#define T_UDERROR 6  /* struct t_uderr */
#define T_INFO 7     /* struct t_info */

/* ---- t_alloc fields to allocate buffers for ---- */
#define T_ADDR 0x01  /* addr */
#define T_OPT 0x02   /* opt */
#define T_UDATA 0x04 /* udata */
#define T_ALL 0xffff /* every netbuf of the structure */

/* ---- structures ---- */

/* A buffer: maxlen bytes at buf, of which len are in use. */
struct netbuf {
    unsigned int maxlen;
    unsigned int len;
    void *buf;
};

/* Characteristics of a transport provider (t_open, t_getinfo). */
struct t_info {
    t_scalar_t addr;     /* largest address; T_INFINITE, T_INVALID */
    t_scalar_t options;  /* most option bytes; T_INFINITE, T_INVALID */
    t_scalar_t tsdu;     /* largest TSDU; 0: no boundaries; T_INFINITE, T_INVALID */
    t_scalar_t etsdu;    /* largest ETSDU; T_INFINITE, T_INVALID */
    t_scalar_t connect;  /* most data with a connect; T_INFINITE, T_INVALID */
    t_scalar_t discon;   /* most data with a disconnect; T_INFINITE, T_INVALID */
    t_scalar_t servtype; /* T_COTS, T_COTS_ORD, T_CLTS */
    t_scalar_t flags;    /* XTI: T_SENDZERO, T_ORDRELDATA */
};

struct t_bind {
    struct netbuf addr;
    unsigned int qlen; /* most connection indications outstanding */
};

struct t_optmgmt {
    struct netbuf opt;
    t_scalar_t flags; /* T_NEGOTIATE, T_CHECK, ... in; T_SUCCESS, ... out */
};

struct t_discon {
    struct netbuf udata; /* data with the disconnect */
    int reason;          /* provider-specific */
    int sequence;        /* of the connection indication withdrawn */
};

struct t_call {
    struct netbuf addr;  /* peer address */
    struct netbuf opt;   /* options */
    struct netbuf udata; /* data with the connect */
    int sequence;        /* names a connection indication (t_listen) */
};

struct t_unitdata {
    struct netbuf addr;  /* peer address */
    struct netbuf opt;   /* options */
    struct netbuf udata; /* the data */
};

struct t_uderr {
    struct netbuf addr; /* destination of the failed unit */
    struct netbuf opt;  /* its options */
    t_scalar_t error;   /* provider-specific */
};

/* ---- functions ---- */
int t_accept(int fd, int resfd, const struct t_call *call);
void *t_alloc(int fd, int struct_type, int fields);
int t_bind(int fd, const struct t_bind *req, struct t_bind *ret);
int t_close(int fd);
int t_connect(int fd, const struct t_call *sndcall, struct t_call *rcvcall);
int t_error(const char *errmsg);
int t_free(void *ptr, int struct_type);
int t_getinfo(int fd, struct t_info *info);
int t_getstate(int fd);
int t_listen(int fd, struct t_call *call);
int t_look(int fd);
int t_open(const char *name, int oflag, struct t_info *info);
int t_optmgmt(int fd, const struct t_optmgmt *req, struct t_optmgmt *ret);
int t_rcv(int fd, void *buf, unsigned int nbytes, int *flags);
int t_rcvconnect(int fd, struct t_call *call);
int t_rcvdis(int fd, struct t_discon *discon);
int t_rcvrel(int fd);
int t_rcvudata(int fd, struct t_unitdata *unitdata, int *flags);
int t_rcvuderr(int fd, struct t_uderr *uderr);
int t_snd(int fd, void *buf, unsigned int nbytes, int flags);
int t_snddis(int fd, const struct t_call *call);
int t_sndrel(int fd);
int t_sndudata(int fd, const struct t_unitdata *unitdata);
int t_sync(int fd);
int t_unbind(int fd);

#ifdef __cplusplus
}
#endif

#endif /* _SYS_XTI_TLI_H */
