/* SPDX-License-Identifier: MIT */
/*
 * stropts.h -- the STREAMS user interface: streamio(7) ioctls, putmsg(2),
 * getmsg(2) and their structures and constants.
 *
 * Values: the SVR4 names have the SVR4 / Solaris numbers ('S' << 8 | n),
 * which Linux Fast-STREAMS shares; the Solaris additions (I_ANCHOR,
 * I_SERROPT, I_GERROPT) and the Linux Fast-STREAMS ones (I_GETMSG ...
 * I_AUTOPUSH, I_HEAP) have the numbers Linux Fast-STREAMS gives them, and
 * the UnixWare ones whose numbers collide with Solaris' (I_STATS, I_BIGPIPE,
 * I_GETTP) a private range.  docs/STREAMHEAD.md ("Standard values") lists
 * the choices; tests/test_std_values.c pins every value.
 */
#ifndef _STROPTS_H
#define _STROPTS_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FMNAMESZ
#define FMNAMESZ 8
#endif


/* ---- ioctl commands ---- */
#define __SID ('S' << 8)
#define I_NREAD (__SID | 1)
#define I_PUSH (__SID | 2)
#define I_POP (__SID | 3)
#define I_LOOK (__SID | 4)
#define I_FLUSH (__SID | 5)
#define I_SRDOPT (__SID | 6)
#define I_GRDOPT (__SID | 7)
#define I_STR (__SID | 8)
#define I_SETSIG (__SID | 9)
#define I_GETSIG (__SID | 10)
#define I_FIND (__SID | 11)
#define I_LINK (__SID | 12)
#define I_UNLINK (__SID | 13)
#define I_RECVFD (__SID | 14)
#define I_PEEK (__SID | 15)
#define I_FDINSERT (__SID | 16)
#define I_SENDFD (__SID | 17)
#define I_E_RECVFD (__SID | 18)
#define I_SWROPT (__SID | 19)
#define I_GWROPT (__SID | 20)
#define I_LIST (__SID | 21)
#define I_PLINK (__SID | 22)
#define I_PUNLINK (__SID | 23)
#define I_ANCHOR (__SID | 24) /* Solaris, Linux Fast-STREAMS */
#define I_FLUSHBAND (__SID | 28)
#define I_CKBAND (__SID | 29)
#define I_GETBAND (__SID | 30)
#define I_ATMARK (__SID | 31)
#define I_SETCLTIME (__SID | 32)
#define I_GETCLTIME (__SID | 33)
#define I_CANPUT (__SID | 34)
#define I_SERROPT (__SID | 35) /* Solaris, Linux Fast-STREAMS */
#define I_GERROPT (__SID | 36) /* Solaris, Linux Fast-STREAMS */
/* Linux Fast-STREAMS (HP-UX, OSF, Mac OT) system call emulations */
#define I_GETMSG (__SID | 40)
#define I_PUTMSG (__SID | 41)
#define I_GETPMSG (__SID | 42)
#define I_PUTPMSG (__SID | 43)
#define I_PIPE (__SID | 44)
#define I_FIFO (__SID | 45)
#define I_ISASTREAM (__SID | 46)
#define I_AUTOPUSH (__SID | 48)
#define I_HEAP (__SID | 50) /* Linux Fast-STREAMS I_HEAP_REPORT */
/* UnixWare names; its numbers (36..38) are Solaris' I_GERROPT ..., so private ones */
#define I_GETTP (__SID | 0xf0)
#define I_STATS (__SID | 0xf1)
#define I_BIGPIPE (__SID | 0xf2)

/* I_SETSIG / I_GETSIG events */
#define S_INPUT 0x0001   /* a non-priority message arrived */
#define S_HIPRI 0x0002   /* a high-priority message arrived */
#define S_OUTPUT 0x0004  /* the write queue is no longer full */
#define S_MSG 0x0008     /* an M_SIG/M_PCSIG of SIGPOLL reached the head */
#define S_ERROR 0x0010   /* an M_ERROR reached the head */
#define S_HANGUP 0x0020  /* an M_HANGUP reached the head */
#define S_RDNORM 0x0040  /* a band 0 message arrived */
#define S_WRNORM S_OUTPUT
#define S_RDBAND 0x0080  /* a band > 0 message arrived */
#define S_WRBAND 0x0100  /* a band > 0 can be written */
#define S_BANDURG 0x0200 /* with S_RDBAND: send SIGURG instead of SIGPOLL */
#define S_ALL (S_INPUT | S_HIPRI | S_OUTPUT | S_MSG | S_ERROR | S_HANGUP | S_RDNORM | S_RDBAND | S_WRBAND | S_BANDURG)

/* I_PEEK / getmsg flags */
#define RS_HIPRI 0x01 /* putmsg/I_PEEK/I_FDINSERT: a high-priority message */
#define MSG_HIPRI 0x01
#define MSG_ANY 0x02
#define MSG_BAND 0x04

/* getmsg return bits */
#define MORECTL 1
#define MOREDATA 2

/* I_FLUSH / I_FLUSHBAND */
#ifndef FLUSHR
#define FLUSHR 0x01
#define FLUSHW 0x02
#define FLUSHRW 0x03
#define FLUSHBAND 0x04
#endif

/* read options (I_SRDOPT) */
#define RNORM 0x0000     /* byte stream */
#define RMSGD 0x0001     /* message discard */
#define RMSGN 0x0002     /* message non-discard */
#define RMODEMASK 0x0003
#define RFILL 0x0020     /* read-fill: wait until the full count can be returned */
#define RMREAD 0x0080    /* ustreams: send M_READ downstream before a read blocks (SO_MREADON) */
#define RPROTDAT 0x0004  /* control part read as data */
#define RPROTDIS 0x0008  /* control part discarded */
#define RPROTNORM 0x0010 /* fail read with EBADMSG on a control part */
#define RPROTMASK 0x001c

/* write options (I_SWROPT) */
#define SNDZERO 0x001 /* a zero-length write sends a zero-length message */
#define SNDPIPE 0x002 /* a write error sends SIGPIPE */
#define SNDHOLD 0x004 /* coalesce small writes (hold) */

/* I_ATMARK */
#define ANYMARK 0x01
#define LASTMARK 0x02

/* I_UNLINK / I_PUNLINK */
#define MUXID_ALL (-1)

/* an infinite timeout (poll, I_STR ic_timout) */
#ifndef INFTIM
#define INFTIM (-1)
#endif

/* I_SERROPT / I_GERROPT */
#define RERRNORM 0x001       /* read errors are persistent */
#define RERRNONPERSIST 0x002 /* read errors are reported once */
#define WERRNORM 0x004       /* write errors are persistent */
#define WERRNONPERSIST 0x008 /* write errors are reported once */
#define RERRMASK (RERRNORM | RERRNONPERSIST)
#define WERRMASK (WERRNORM | WERRNONPERSIST)

/* ---- structures ---- */
struct strbuf {
    int maxlen; /* buffer size */
    int len;    /* bytes in the buffer, -1 for none */
    char *buf;
};

struct strpeek {
    struct strbuf ctlbuf;
    struct strbuf databuf;
    long flags; /* RS_HIPRI or 0 */
};

struct strfdinsert {
    struct strbuf ctlbuf;
    struct strbuf databuf;
    long flags;  /* RS_HIPRI or 0 */
    int fildes;  /* stream whose read queue pointer is inserted */
    int offset;  /* where in the control part */
};

struct strioctl {
    int ic_cmd;    /* downstream command */
    int ic_timout; /* seconds; -1 forever, 0 the default */
    int ic_len;    /* data length */
    char *ic_dp;   /* data */
};

struct strrecvfd {
    int fd;
    uid_t uid;
    gid_t gid;
    union { /* SVR4 and Linux Fast-STREAMS name it fill, XPG4.2 __fill */
        char fill[8];
        char __fill[8];
    };
};

struct str_mlist {
    char l_name[FMNAMESZ + 1];
};

struct str_list {
    int sl_nmods;
    struct str_mlist *sl_modlist;
};

struct bandinfo {
    unsigned char bi_pri;
    int bi_flag; /* FLUSHR/FLUSHW/FLUSHRW */
};

/* I_PUTPMSG / I_GETPMSG (Linux Fast-STREAMS) */
struct strpmsg {
    struct strbuf ctlbuf;
    struct strbuf databuf;
    int band;
    int flags; /* int, as in Linux Fast-STREAMS */
};

/* ---- functions ---- */
int putmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int flags);
int putpmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int band, int flags);
int getmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *flagsp);
int getpmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *bandp, int *flagsp);
int isastream(int fd);
int fattach(int fd, const char *path);
int fdetach(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* _STROPTS_H */
