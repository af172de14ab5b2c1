/* SPDX-License-Identifier: MIT */
/*
 * sys/stream.h -- the STREAMS DDI/DKI data structures and entry points.
 *
 * Names, types, field order and constants follow SVR4.2 MP and Solaris so that
 * a module written for them compiles with at most trivial changes.  Only the
 * fields documented in msgb(9S), datab(9S), queue(9S), qband(9S), qinit(9S),
 * module_info(9S), module_stat(9S) and streamtab(9S) are public; the executive
 * keeps its own state in private structures that embed these.
 */
#ifndef _SYS_STREAM_H
#define _SYS_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef _USTREAMS_BASIC_TYPES
#define _USTREAMS_BASIC_TYPES
typedef unsigned char uchar_t;
typedef unsigned short ushort_t;
typedef unsigned int uint_t;
typedef unsigned long ulong_t;
typedef char *caddr_t;
typedef unsigned int major_t;
typedef unsigned int minor_t;
typedef long toid_t;    /* timeout(9F) identifier; 0 is never valid */
typedef long bufcall_id_t; /* bufcall(9F) identifier; 0 is never valid */
typedef long timeout_id_t;
typedef long clock_t_ddi;
#endif

/* Credentials handed to open, close and ioctl (cred(9S)). */
typedef struct cred {
    uid_t cr_uid;  /* effective user id */
    gid_t cr_gid;  /* effective group id */
    uid_t cr_ruid; /* real user id */
    gid_t cr_rgid; /* real group id */
    pid_t cr_pid;  /* process that made the call */
} cred_t;

/* ---- message types (datab db_type) ---- */
#define QNORM 0x00 /* normal messages: subject to flow control */
#define QPCTL 0x80 /* high-priority messages: >= QPCTL */

#define M_DATA 0x00     /* ordinary data */
#define M_PROTO 0x01    /* protocol control */
#define M_MULTIDATA 0x02 /* reserved */
#define M_BREAK 0x08    /* line break */
#define M_PASSFP 0x09   /* pass a file pointer (I_SENDFD) */
#define M_EVENT 0x0a    /* post an event */
#define M_SIG 0x0b      /* generate a signal (queued) */
#define M_DELAY 0x0c    /* real-time transmission delay */
#define M_CTL 0x0d      /* device-specific control */
#define M_IOCTL 0x0e    /* ioctl request */
#define M_SETOPTS 0x10  /* set stream head options */
#define M_RSE 0x11      /* reserved */
#define M_TRAIL 0x12    /* reserved */
#define M_BACKWASH 0x13 /* reserved */

#define M_IOCACK 0x81   /* positive ioctl acknowledgement */
#define M_IOCNAK 0x82   /* negative ioctl acknowledgement */
#define M_PCPROTO 0x83  /* priority protocol control */
#define M_PCSIG 0x84    /* generate a signal (expedited) */
#define M_READ 0x85     /* a reader is about to block */
#define M_FLUSH 0x86    /* flush queues */
#define M_STOP 0x87     /* stop output */
#define M_START 0x88    /* restart output */
#define M_HANGUP 0x89   /* line disconnect */
#define M_ERROR 0x8a    /* fatal error */
#define M_COPYIN 0x8b   /* copy in for a transparent ioctl */
#define M_COPYOUT 0x8c  /* copy out for a transparent ioctl */
#define M_IOCDATA 0x8d  /* reply to M_COPYIN/M_COPYOUT */
#define M_PCRSE 0x8e    /* reserved */
#define M_STOPI 0x8f    /* stop input */
#define M_STARTI 0x90   /* restart input */
#define M_PCEVENT 0x91  /* post an event (expedited) */
#define M_UNHANGUP 0x92 /* line reconnect */

/* ---- message block flags (msgb b_flag) ---- */
#define MSGMARK 0x01        /* last byte of message is marked */
#define MSGNOLOOP 0x02      /* do not loop the message back */
#define MSGDELIM 0x04       /* message is delimited */
#define MSGNOGET 0x08       /* getq does not return this message */
#define MSGMARKNEXT 0x10    /* the next message will be marked */
#define MSGNOTMARKNEXT 0x20 /* the next message will not be marked */

/* ---- allocation priorities (allocb(9F) pri; advisory) ---- */
#define BPRI_LO 1
#define BPRI_MED 2
#define BPRI_HI 3

/* infinite packet size */
#define INFPSZ (-1)

/* ---- flush flags (M_FLUSH first byte, I_FLUSH) ---- */
#define FLUSHR 0x01
#define FLUSHW 0x02
#define FLUSHRW 0x03
#define FLUSHBAND 0x04

/* flushq(9F) / flushband(9F) flag argument */
#define FLUSHDATA 0 /* flush only data messages (M_DATA, M_PROTO, M_PCPROTO, M_DELAY) */
#define FLUSHALL 1  /* flush every message */

/* open sflag argument */
#define DRVOPEN 0   /* normal driver open */
#define MODOPEN 1   /* module push */
#define CLONEOPEN 2 /* clone open: the driver picks the minor */

/* ---- message structures ---- */
struct free_rtn {
    void (*free_func)(caddr_t); /* called once, when the last reference goes */
    caddr_t free_arg;
};
typedef struct free_rtn frtn_t;

struct queue;

typedef struct datab {
    struct free_rtn *db_frtnp; /* esballoc free routine, or NULL */
    unsigned char *db_base;    /* first byte of the buffer */
    unsigned char *db_lim;     /* one past the last byte of the buffer */
    unsigned int db_ref;       /* number of msgb referencing this datab */
    unsigned char db_type;     /* message type, M_* */
    unsigned char db_flag;     /* reserved for the executive */
    unsigned short db_pad;
    size_t db_size;            /* db_lim - db_base */
} dblk_t;

typedef struct msgb {
    struct msgb *b_next;      /* next message on a queue */
    struct msgb *b_prev;      /* previous message on a queue */
    struct msgb *b_cont;      /* next block of this message */
    unsigned char *b_rptr;    /* first unread byte */
    unsigned char *b_wptr;    /* first unwritten byte */
    struct datab *b_datap;    /* data block */
    unsigned char b_band;     /* priority band, 0-255 */
    unsigned char b_tag;      /* reserved */
    unsigned short b_flag;    /* MSG* flags */
    struct queue *b_queue;    /* reserved */
} mblk_t;

/* ---- queue structures ---- */
typedef struct qband {
    struct qband *qb_next; /* next (higher-numbered) band */
    size_t qb_count;       /* bytes queued in this band */
    struct msgb *qb_first; /* first message of the band */
    struct msgb *qb_last;  /* last message of the band */
    size_t qb_hiwat;       /* band high-water mark */
    size_t qb_lowat;       /* band low-water mark */
    uint_t qb_flag;        /* QB_* */
    long qb_pad1;
} qband_t;

#define QB_FULL 0x01  /* band is full (reached qb_hiwat, not yet drained to qb_lowat) */
#define QB_WANTW 0x02 /* a writer waits for the band to drain */
#define QB_BACK 0x04  /* band was back-enabled */

struct module_info {
    ushort_t mi_idnum; /* module id number */
    char *mi_idname;   /* module name */
    ssize_t mi_minpsz; /* minimum packet size */
    ssize_t mi_maxpsz; /* maximum packet size, INFPSZ for none */
    size_t mi_hiwat;   /* high-water mark */
    size_t mi_lowat;   /* low-water mark */
};

struct module_stat {
    long ms_pcnt;   /* put procedure calls */
    long ms_scnt;   /* service procedure calls */
    long ms_ocnt;   /* open calls */
    long ms_ccnt;   /* close calls */
    long ms_acnt;   /* admin calls */
    char *ms_xptr;  /* module private statistics */
    short ms_xsize; /* size of ms_xptr */
    uint_t ms_flags;
};

typedef struct queue queue_t;

struct qinit {
    int (*qi_putp)(queue_t *, mblk_t *);                       /* put procedure */
    int (*qi_srvp)(queue_t *);                                  /* service procedure */
    int (*qi_qopen)(queue_t *, dev_t *, int, int, cred_t *);   /* open (read side only) */
    int (*qi_qclose)(queue_t *, int, cred_t *);                /* close (read side only) */
    int (*qi_qadmin)(void);                                     /* reserved */
    struct module_info *qi_minfo;
    struct module_stat *qi_mstat;
};

struct streamtab {
    struct qinit *st_rdinit;
    struct qinit *st_wrinit;
    struct qinit *st_muxrinit; /* lower read side of a multiplexer */
    struct qinit *st_muxwinit; /* lower write side of a multiplexer */
};

struct queue {
    struct qinit *q_qinfo; /* procedures and module info */
    struct msgb *q_first;  /* first queued message */
    struct msgb *q_last;   /* last queued message */
    struct queue *q_next;  /* next queue in the stream */
    struct queue *q_link;  /* reserved for the scheduler */
    void *q_ptr;           /* module private data */
    size_t q_count;        /* bytes queued in band 0 */
    uint_t q_flag;         /* Q* flags */
    ssize_t q_minpsz;      /* minimum packet size accepted */
    ssize_t q_maxpsz;      /* maximum packet size accepted */
    size_t q_hiwat;        /* band 0 high-water mark */
    size_t q_lowat;        /* band 0 low-water mark */
    struct qband *q_bandp; /* bands 1..q_nband, ascending */
    unsigned char q_nband; /* highest band allocated */
    unsigned char q_pad1[3];
    long q_pad2[2];
};

/* queue flags (q_flag) */
#define QENAB 0x0001   /* queue is scheduled to run its service procedure */
#define QWANTR 0x0002  /* a reader wants to read (getq found it empty) */
#define QWANTW 0x0004  /* a writer waits for band 0 to drain */
#define QFULL 0x0008   /* band 0 is full */
#define QREADR 0x0010  /* this is the read queue of the pair */
#define QUSE 0x0020    /* queue is allocated */
#define QNOENB 0x0040  /* putq does not enable the queue */
#define QBACK 0x0100   /* queue was back-enabled */
#define QHLIST 0x0200  /* reserved */
#define QPAIR 0x0800   /* per queue-pair perimeter */
#define QPERQ 0x1000   /* per queue perimeter */
#define QPERMOD 0x2000 /* per module perimeter */
#define QMTSAFE 0x4000 /* module is MT safe (D_MP) */
#define QMTOUTPERIM 0x8000 /* module has an outer perimeter */
#define QINSERVICE 0x10000 /* service procedure is running */
#define QPROCSOFF 0x20000  /* put and service procedures are disabled */
#define QMUX 0x40000       /* lower queue of a multiplexer */
#define QHEAD 0x80000      /* queue of a stream head */

/* strqget/strqset fields */
typedef enum qfields {
    QHIWAT = 0,
    QLOWAT = 1,
    QMAXPSZ = 2,
    QMINPSZ = 3,
    QCOUNT = 4,
    QFIRST = 5,
    QLAST = 6,
    QFLAG = 7,
    QSTRUIOT = 8,
    QBAD = 9
} qfields_t;

/* ---- ioctl messages ---- */
#define TRANSPARENT ((unsigned int)-1) /* ioc_count of a transparent ioctl */

struct iocblk {
    int ioc_cmd;      /* ioctl command */
    cred_t *ioc_cr;   /* caller's credentials */
    uint_t ioc_id;    /* ioctl identifier */
    size_t ioc_count; /* bytes of data in b_cont, or TRANSPARENT */
    int ioc_error;    /* error code for M_IOCACK/M_IOCNAK */
    int ioc_rval;     /* return value for M_IOCACK */
    int ioc_fill1;
    uint_t ioc_flag;  /* IOC_* */
    int ioc_filler[2];
};

#define IOC_MODELS 0x00f00000
#define IOC_NATIVE 0x00100000
#define IOC_ILP32 0x00200000

struct copyreq {
    int cq_cmd;          /* ioctl command */
    cred_t *cq_cr;       /* caller's credentials */
    uint_t cq_id;        /* ioctl identifier */
    caddr_t cq_addr;     /* user address to copy from or to */
    size_t cq_size;      /* bytes to copy */
    uint_t cq_flag;      /* STRCANON etc. (reserved) */
    mblk_t *cq_private;  /* module private state, returned in copyresp */
    long cq_filler[4];
};

struct copyresp {
    int cp_cmd;         /* ioctl command */
    cred_t *cp_cr;      /* caller's credentials */
    uint_t cp_id;       /* ioctl identifier */
    caddr_t cp_rval;    /* 0 on success, non-zero if the copy failed */
    size_t cp_pad1;
    uint_t cp_pad2;
    mblk_t *cp_private; /* cq_private of the request */
    uint_t cp_flag;
    long cp_filler[3];
};

/* the M_IOCTL/M_IOCACK/M_COPY* leading block is large enough for any of these */
union ioctypes {
    struct iocblk iocblk;
    struct copyreq copyreq;
    struct copyresp copyresp;
};

struct linkblk {
    queue_t *l_qtop; /* upper write queue of the multiplexer (the driver's) */
    queue_t *l_qbot; /* lower write queue (of the linked stream) */
    int l_index;     /* multiplexer id */
    long l_pad[5];
};

/* M_SETOPTS */
struct stroptions {
    uint_t so_flags;    /* SO_* of the options that are set */
    short so_readopt;   /* read option */
    ushort_t so_wroff;  /* write offset */
    ssize_t so_minpsz;  /* minimum read packet size */
    ssize_t so_maxpsz;  /* maximum read packet size */
    size_t so_hiwat;    /* read queue high-water mark */
    size_t so_lowat;    /* read queue low-water mark */
    unsigned char so_band; /* band for so_hiwat/so_lowat */
    ushort_t so_erropt; /* error option */
    ssize_t so_maxblk;  /* maximum message block size */
    ushort_t so_copyopt;
    ushort_t so_tail;
};

#define SO_ALL 0x003f
#define SO_READOPT 0x0001
#define SO_WROFF 0x0002
#define SO_MINPSZ 0x0004
#define SO_MAXPSZ 0x0008
#define SO_HIWAT 0x0010
#define SO_LOWAT 0x0020
#define SO_MREADON 0x0040
#define SO_MREADOFF 0x0080
#define SO_NDELON 0x0100
#define SO_NDELOFF 0x0200
#define SO_ISTTY 0x0400
#define SO_ISNTTY 0x0800
#define SO_TOSTOP 0x1000
#define SO_TONSTOP 0x2000
#define SO_BAND 0x4000
#define SO_DELIM 0x8000
#define SO_NODELIM 0x10000
#define SO_STRHOLD 0x20000
#define SO_ERROPT 0x40000
#define SO_COPYOPT 0x80000
#define SO_MAXBLK 0x100000
#define SO_TAIL 0x200000

/* ---- perimeters and qwriter ---- */
#define PERIM_INNER 1
#define PERIM_OUTER 2

/* ---- message functions (allocb(9F) and friends) ---- */
mblk_t *allocb(size_t size, uint_t pri);
mblk_t *esballoc(unsigned char *base, size_t size, uint_t pri, frtn_t *fr_rtnp);
mblk_t *desballoc(unsigned char *base, size_t size, uint_t pri, frtn_t *fr_rtnp);
int testb(size_t size, uint_t pri);
void freeb(mblk_t *bp);
void freemsg(mblk_t *mp);
mblk_t *dupb(mblk_t *bp);
mblk_t *dupmsg(mblk_t *mp);
mblk_t *copyb(mblk_t *bp);
mblk_t *copymsg(mblk_t *mp);
void linkb(mblk_t *mp, mblk_t *bp);
mblk_t *unlinkb(mblk_t *mp);
mblk_t *rmvb(mblk_t *mp, mblk_t *bp);
int pullupmsg(mblk_t *mp, ssize_t len);
mblk_t *msgpullup(mblk_t *mp, ssize_t len);
int adjmsg(mblk_t *mp, ssize_t len);
size_t msgdsize(const mblk_t *mp);
size_t msgsize(const mblk_t *mp);
int datamsg(unsigned char type);
int pcmsg(unsigned char type);
unsigned char bmsgtype(const mblk_t *mp);
bufcall_id_t bufcall(size_t size, uint_t pri, void (*func)(void *), void *arg);
bufcall_id_t esbbcall(uint_t pri, void (*func)(void *), void *arg);
void unbufcall(bufcall_id_t id);

/* ---- queue functions ---- */
int putq(queue_t *q, mblk_t *mp);
mblk_t *getq(queue_t *q);
int putbq(queue_t *q, mblk_t *mp);
int insq(queue_t *q, mblk_t *emp, mblk_t *mp);
void rmvq(queue_t *q, mblk_t *mp);
void flushq(queue_t *q, int flag);
void flushband(queue_t *q, unsigned char pri, int flag);
int qsize(queue_t *q);
void qenable(queue_t *q);
void noenable(queue_t *q);
void enableok(queue_t *q);
int canput(queue_t *q);
int bcanput(queue_t *q, unsigned char pri);
int canputnext(queue_t *q);
int bcanputnext(queue_t *q, unsigned char pri);
int putnext(queue_t *q, mblk_t *mp);
void put(queue_t *q, mblk_t *mp);
void qreply(queue_t *q, mblk_t *mp);
int putctl(queue_t *q, int type);
int putctl1(queue_t *q, int type, int param);
int putctl2(queue_t *q, int type, int p1, int p2);
int putnextctl(queue_t *q, int type);
int putnextctl1(queue_t *q, int type, int param);
int putnextctl2(queue_t *q, int type, int p1, int p2);
int strqget(queue_t *q, qfields_t what, unsigned char pri, void *valp);
int strqset(queue_t *q, qfields_t what, unsigned char pri, intptr_t val);
queue_t *backq(queue_t *q);
queue_t *RD(queue_t *q);
queue_t *WR(queue_t *q);
queue_t *OTHERQ(queue_t *q);
int SAMESTR(queue_t *q);
void qprocson(queue_t *q);
void qprocsoff(queue_t *q);
void qwriter(queue_t *q, mblk_t *mp, void (*func)(queue_t *, mblk_t *), int perimeter);

/* ---- timers ---- */
toid_t timeout(void (*func)(void *), void *arg, long ticks);
long untimeout(toid_t id);
timeout_id_t qtimeout(queue_t *q, void (*func)(void *), void *arg, long ticks);
long quntimeout(queue_t *q, timeout_id_t id);
bufcall_id_t qbufcall(queue_t *q, size_t size, uint_t pri, void (*func)(void *), void *arg);
void qunbufcall(queue_t *q, bufcall_id_t id);

/* ioctl helpers (miocack(9F) and friends) */
void miocack(queue_t *q, mblk_t *mp, int count, int rval);
void miocnak(queue_t *q, mblk_t *mp, int count, int error);
void mcopyin(mblk_t *mp, void *priv, size_t size, void *uaddr);
void mcopyout(mblk_t *mp, void *priv, size_t size, void *uaddr, mblk_t *dp);

/* Clock ticks per second for timeout(9F). */
#ifndef HZ
#define HZ 100
#endif

#ifdef __cplusplus
}
#endif

#endif /* _SYS_STREAM_H */
