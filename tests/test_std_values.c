/* SPDX-License-Identifier: MIT */
/*
 * test_std_values.c -- every constant of the public STREAMS, TPI and XTI
 * headers has its standard value (issue 21 item 9).
 *
 * One table line per constant: the name, the value the header gives it, the
 * value of the reference cited above its group.  Where references differ the
 * choice is written in docs/TPI.md, docs/XTI.md or docs/STREAMHEAD.md
 * ("Standard values"), and the group's comment names the reference followed.
 * A runtime table (not _Static_assert) so that one run lists every wrong
 * value, not only the first.
 *
 * References: SVR4.2 / Solaris = illumos usr/src/uts/common/sys/{tihdr.h,
 * tpicommon.h, stropts.h, stream.h, timod.h} and usr/src/head/{xti.h,
 * tiuser.h}; XNS 5 = X/Open CAE Networking Services Issue 5, <xti.h> and
 * <xti_inet.h>; LfS = Linux Fast-STREAMS <sys/tihdr.h>, <sys/stropts.h>;
 * TPI 2.0 = Transport Provider Interface Revision 2.0.0 (UNIX International).
 */
#include <stddef.h>
#include <string.h>

#include <stropts.h>
#include <sys/stream.h>
#include <sys/tihdr.h>
#include <sys/timod.h>
#include <tiuser.h>
#include <xti.h>

#include "check.h"

struct stdval {
    const char *name;
    long long have; /* the header's value */
    long long want; /* the reference's value */
};

#define V(name, want) {#name, (long long)(name), (long long)(want)}

static const struct stdval values[] = {
    /* ---- <sys/tihdr.h> primitives 0..23: SVR4.2, Solaris, LfS, TPI 2.0 agree ---- */
    V(T_CONN_REQ, 0),
    V(T_CONN_RES, 1),
    V(T_DISCON_REQ, 2),
    V(T_DATA_REQ, 3),
    V(T_EXDATA_REQ, 4),
    V(T_INFO_REQ, 5),
    V(T_BIND_REQ, 6),
    V(T_UNBIND_REQ, 7),
    V(T_UNITDATA_REQ, 8),
    V(T_OPTMGMT_REQ, 9),
    V(T_ORDREL_REQ, 10),
    V(T_CONN_IND, 11),
    V(T_CONN_CON, 12),
    V(T_DISCON_IND, 13),
    V(T_DATA_IND, 14),
    V(T_EXDATA_IND, 15),
    V(T_INFO_ACK, 16),
    V(T_BIND_ACK, 17),
    V(T_ERROR_ACK, 18),
    V(T_OK_ACK, 19),
    V(T_UNITDATA_IND, 20),
    V(T_UDERROR_IND, 21),
    V(T_OPTMGMT_ACK, 22),
    V(T_ORDREL_IND, 23),
    /* ---- primitives 24..29: TPI 2.0 as LfS and LiS number them (Solaris differs:
     *      T_ADDR_REQ/ACK 24/25, T_CAPABILITY_REQ/ACK 30/31; docs/TPI.md) ---- */
    V(T_OPTDATA_REQ, 24),
    V(T_ADDR_REQ, 25),
    V(T_OPTDATA_IND, 26),
    V(T_ADDR_ACK, 27),
    V(T_CAPABILITY_REQ, 28),
    V(T_CAPABILITY_ACK, 29),
    /* ---- TPI states: SVR4.2, Solaris, LfS ---- */
    V(TS_UNBND, 0),
    V(TS_WACK_BREQ, 1),
    V(TS_WACK_UREQ, 2),
    V(TS_IDLE, 3),
    V(TS_WACK_OPTREQ, 4),
    V(TS_WACK_CREQ, 5),
    V(TS_WCON_CREQ, 6),
    V(TS_WRES_CIND, 7),
    V(TS_WACK_CRES, 8),
    V(TS_DATA_XFER, 9),
    V(TS_WIND_ORDREL, 10),
    V(TS_WREQ_ORDREL, 11),
    V(TS_WACK_DREQ6, 12),
    V(TS_WACK_DREQ7, 13),
    V(TS_WACK_DREQ9, 14),
    V(TS_WACK_DREQ10, 15),
    V(TS_WACK_DREQ11, 16),
    V(TS_NOSTATES, 17),
    /* ---- PROVIDER_flag, DATA_flag, CAP_bits1: Solaris (_SUN_TPI_VERSION 2), LfS ---- */
    V(SENDZERO, 0x001),
    V(EXPINLINE, 0x002),
    V(XPG4_1, 0x004),
    V(T_ODF_MORE, 0x001),
    V(T_ODF_EX, 0x002),
    V(TC1_INFO, 1u << 0),
    V(TC1_ACCEPTOR_ID, 1u << 1),
    V(TC1_CAP_BITS2, 1u << 31),

    /* ---- t_errno / TLI_error: XNS 5 <xti.h> ---- */
    V(TBADADDR, 1),
    V(TBADOPT, 2),
    V(TACCES, 3),
    V(TBADF, 4),
    V(TNOADDR, 5),
    V(TOUTSTATE, 6),
    V(TBADSEQ, 7),
    V(TSYSERR, 8),
    V(TLOOK, 9),
    V(TBADDATA, 10),
    V(TBUFOVFLW, 11),
    V(TFLOW, 12),
    V(TNODATA, 13),
    V(TNODIS, 14),
    V(TNOUDERR, 15),
    V(TBADFLAG, 16),
    V(TNOREL, 17),
    V(TNOTSUPPORT, 18),
    V(TSTATECHNG, 19),
    V(TNOSTRUCTYPE, 20),
    V(TBADNAME, 21),
    V(TBADQLEN, 22),
    V(TADDRBUSY, 23),
    V(TINDOUT, 24),
    V(TPROVMISMATCH, 25),
    V(TRESQLEN, 26),
    V(TRESADDR, 27),
    V(TQFULL, 28),
    V(TPROTO, 29),
    /* ---- t_look events: XNS 5; T_ERROR, T_EVENTS: SVR4 / Solaris <tiuser.h> ---- */
    V(T_LISTEN, 0x0001),
    V(T_CONNECT, 0x0002),
    V(T_DATA, 0x0004),
    V(T_EXDATA, 0x0008),
    V(T_DISCONNECT, 0x0010),
    V(T_ERROR, 0x0020),
    V(T_UDERR, 0x0040),
    V(T_ORDREL, 0x0080),
    V(T_GODATA, 0x0100),
    V(T_GOEXDATA, 0x0200),
    V(T_EVENTS, 0x00ff),
    /* ---- data and option-management flags: XNS 5 ---- */
    V(T_MORE, 0x001),
    V(T_EXPEDITED, 0x002),
    V(T_PUSH, 0x004),
    V(T_NEGOTIATE, 0x004),
    V(T_CHECK, 0x008),
    V(T_DEFAULT, 0x010),
    V(T_SUCCESS, 0x020),
    V(T_FAILURE, 0x040),
    V(T_CURRENT, 0x080),
    V(T_PARTSUCCESS, 0x100),
    V(T_READONLY, 0x200),
    V(T_NOTSUPPORT, 0x400),
    /* ---- service types, t_info flags, sizes: XNS 5 ---- */
    V(T_COTS, 1),
    V(T_COTS_ORD, 2),
    V(T_CLTS, 3),
    V(T_SENDZERO, 0x001),
    V(T_ORDRELDATA, 0x002),
    V(T_INFINITE, -1),
    V(T_INVALID, -2),
    /* ---- t_alloc structure types and fields: XNS 5 ---- */
    V(T_BIND, 1),
    V(T_OPTMGMT, 2),
    V(T_CALL, 3),
    V(T_DIS, 4),
    V(T_UNITDATA, 5),
    V(T_UDERROR, 6),
    V(T_INFO, 7),
    V(T_ADDR, 0x01),
    V(T_OPT, 0x02),
    V(T_UDATA, 0x04),
    V(T_ALL, 0xffff),
    /* ---- t_getstate states: XNS 5 (T_UNINIT: Solaris <tiuser.h>) ---- */
    V(T_UNINIT, 0),
    V(T_UNBND, 1),
    V(T_IDLE, 2),
    V(T_OUTCON, 3),
    V(T_INCON, 4),
    V(T_DATAXFER, 5),
    V(T_OUTREL, 6),
    V(T_INREL, 7),
    /* ---- option values and names: XNS 5 (T_UNUSED: Solaris) ---- */
    V(T_YES, 1),
    V(T_NO, 0),
    V(T_NULL, 0),
    V(T_UNUSED, -1),
    V(T_ABSREQ, 0x8000),
    V(T_UNSPEC, ~0 - 2),
    V(T_ALLOPT, 0),
    V(T_IOV_MAX, 16),
    V(XTI_GENERIC, 0xffff),
    V(XTI_DEBUG, 0x0001),
    V(XTI_LINGER, 0x0080),
    V(XTI_RCVBUF, 0x1002),
    V(XTI_RCVLOWAT, 0x1004),
    V(XTI_SNDBUF, 0x1001),
    V(XTI_SNDLOWAT, 0x1003),
    /* ---- <xti_inet.h> levels and names: XNS 5 ---- */
    V(INET_IP, 0x0),
    V(INET_TCP, 0x6),
    V(INET_UDP, 0x11),
    V(TCP_NODELAY, 0x1),
    V(TCP_MAXSEG, 0x2),
    V(TCP_KEEPALIVE, 0x8),
    V(T_GARBAGE, 0x02),
    V(UDP_CHECKSUM, 0x0600),
    /* ---- INET_IP names: the C library's (Linux) values for the three names it
     *      also defines, Solaris' for the XTI-only ones (docs/XTI.md) ---- */
    V(IP_TOS, 1),
    V(IP_TTL, 2),
    V(IP_OPTIONS, 4),
    V(IP_REUSEADDR, 0x104),
    V(IP_DONTROUTE, 0x105),
    V(IP_BROADCAST, 0x106),
    /* ---- IP_TOS precedence and type of service: XNS 5 ---- */
    V(T_ROUTINE, 0),
    V(T_PRIORITY, 1),
    V(T_IMMEDIATE, 2),
    V(T_FLASH, 3),
    V(T_OVERRIDEFLASH, 4),
    V(T_CRITIC_ECP, 5),
    V(T_INETCONTROL, 6),
    V(T_NETCONTROL, 7),
    V(T_NOTOS, 0x00),
    V(T_LDELAY, 0x10),
    V(T_HITHRPT, 0x08),
    V(T_HIREL, 0x04),
    V(T_LOCOST, 0x02),
    /* ---- <sys/timod.h>: Solaris ---- */
    V(TIMOD, 'T' << 8),
    V(TI_GETINFO, ('T' << 8) | 140),
    V(TI_OPTMGMT, ('T' << 8) | 141),
    V(TI_BIND, ('T' << 8) | 142),
    V(TI_UNBIND, ('T' << 8) | 143),
    V(TI_GETMYNAME, ('T' << 8) | 144),
    V(TI_GETPEERNAME, ('T' << 8) | 145),
    V(TI_SETMYNAME, ('T' << 8) | 146),
    V(TI_SETPEERNAME, ('T' << 8) | 147),
    V(TI_SYNC, ('T' << 8) | 148),
    V(TI_GETADDRS, ('T' << 8) | 149),
    V(TI_CAPABILITY, ('T' << 8) | 150),

    /* ---- <stropts.h> ioctls of SVR4.2 / Solaris (STR = 'S' << 8), LfS the same ---- */
    V(I_NREAD, ('S' << 8) | 01),
    V(I_PUSH, ('S' << 8) | 02),
    V(I_POP, ('S' << 8) | 03),
    V(I_LOOK, ('S' << 8) | 04),
    V(I_FLUSH, ('S' << 8) | 05),
    V(I_SRDOPT, ('S' << 8) | 06),
    V(I_GRDOPT, ('S' << 8) | 07),
    V(I_STR, ('S' << 8) | 010),
    V(I_SETSIG, ('S' << 8) | 011),
    V(I_GETSIG, ('S' << 8) | 012),
    V(I_FIND, ('S' << 8) | 013),
    V(I_LINK, ('S' << 8) | 014),
    V(I_UNLINK, ('S' << 8) | 015),
    V(I_RECVFD, ('S' << 8) | 016),
    V(I_PEEK, ('S' << 8) | 017),
    V(I_FDINSERT, ('S' << 8) | 020),
    V(I_SENDFD, ('S' << 8) | 021),
    V(I_SWROPT, ('S' << 8) | 023),
    V(I_GWROPT, ('S' << 8) | 024),
    V(I_LIST, ('S' << 8) | 025),
    V(I_PLINK, ('S' << 8) | 026),
    V(I_PUNLINK, ('S' << 8) | 027),
    V(I_ANCHOR, ('S' << 8) | 030),
    V(I_FLUSHBAND, ('S' << 8) | 034),
    V(I_CKBAND, ('S' << 8) | 035),
    V(I_GETBAND, ('S' << 8) | 036),
    V(I_ATMARK, ('S' << 8) | 037),
    V(I_SETCLTIME, ('S' << 8) | 040),
    V(I_GETCLTIME, ('S' << 8) | 041),
    V(I_CANPUT, ('S' << 8) | 042),
    V(I_SERROPT, ('S' << 8) | 043),
    V(I_GERROPT, ('S' << 8) | 044),
    /* ---- ioctls only LfS defines (I_E_RECVFD: Solaris' is kernel-private) ---- */
    V(I_E_RECVFD, ('S' << 8) | 18),
    V(I_GETMSG, ('S' << 8) | 40),
    V(I_PUTMSG, ('S' << 8) | 41),
    V(I_GETPMSG, ('S' << 8) | 42),
    V(I_PUTPMSG, ('S' << 8) | 43),
    V(I_PIPE, ('S' << 8) | 44),
    V(I_FIFO, ('S' << 8) | 45),
    V(I_ISASTREAM, ('S' << 8) | 46),
    V(I_AUTOPUSH, ('S' << 8) | 48),
    V(I_HEAP, ('S' << 8) | 50),
    /* ---- UnixWare names at private numbers (theirs collide with Solaris') ---- */
    V(I_GETTP, ('S' << 8) | 0xf0),
    V(I_STATS, ('S' << 8) | 0xf1),
    V(I_BIGPIPE, ('S' << 8) | 0xf2),
    /* ---- I_SETSIG events: SVR4.2 / Solaris, LfS ---- */
    V(S_INPUT, 0x0001),
    V(S_HIPRI, 0x0002),
    V(S_OUTPUT, 0x0004),
    V(S_MSG, 0x0008),
    V(S_ERROR, 0x0010),
    V(S_HANGUP, 0x0020),
    V(S_RDNORM, 0x0040),
    V(S_WRNORM, 0x0004),
    V(S_RDBAND, 0x0080),
    V(S_WRBAND, 0x0100),
    V(S_BANDURG, 0x0200),
    V(S_ALL, 0x03ff), /* LfS */
    /* ---- getmsg/putmsg flags and returns: SVR4.2 / Solaris ---- */
    V(RS_HIPRI, 0x01),
    V(MSG_HIPRI, 0x01),
    V(MSG_ANY, 0x02),
    V(MSG_BAND, 0x04),
    V(MORECTL, 1),
    V(MOREDATA, 2),
    /* ---- flush: SVR4.2 / Solaris ---- */
    V(FLUSHR, 0x01),
    V(FLUSHW, 0x02),
    V(FLUSHRW, 0x03),
    V(FLUSHBAND, 0x04),
    /* ---- read options: SVR4.2 / Solaris; RFILL LfS; RMREAD ustreams (free in both) ---- */
    V(RNORM, 0x000),
    V(RMSGD, 0x001),
    V(RMSGN, 0x002),
    V(RMODEMASK, 0x003),
    V(RPROTDAT, 0x004),
    V(RPROTDIS, 0x008),
    V(RPROTNORM, 0x010),
    V(RPROTMASK, 0x01c),
    V(RFILL, 0x020),
    V(RMREAD, 0x080),
    /* ---- write options: SVR4.2 / Solaris; SNDHOLD LfS ---- */
    V(SNDZERO, 0x001),
    V(SNDPIPE, 0x002),
    V(SNDHOLD, 0x004),
    /* ---- error options: Solaris ---- */
    V(RERRNORM, 0x001),
    V(RERRNONPERSIST, 0x002),
    V(WERRNORM, 0x004),
    V(WERRNONPERSIST, 0x008),
    /* ---- I_ATMARK, I_PUNLINK, timeouts: SVR4.2 / Solaris ---- */
    V(ANYMARK, 0x01),
    V(LASTMARK, 0x02),
    V(MUXID_ALL, -1),
    V(INFTIM, -1),
    V(FMNAMESZ, 8),

    /* ---- <sys/stream.h> message classes and types: SVR4.2 / Solaris ---- */
    V(QNORM, 0x00),
    V(QPCTL, 0x80),
    V(M_DATA, 0x00),
    V(M_PROTO, 0x01),
    V(M_MULTIDATA, 0x02),
    V(M_BREAK, 0x08),
    V(M_PASSFP, 0x09),
    V(M_EVENT, 0x0a),
    V(M_SIG, 0x0b),
    V(M_DELAY, 0x0c),
    V(M_CTL, 0x0d),
    V(M_IOCTL, 0x0e),
    V(M_SETOPTS, 0x10),
    V(M_RSE, 0x11),
    V(M_TRAIL, 0x12), /* UnixWare */
    V(M_IOCACK, 0x81),
    V(M_IOCNAK, 0x82),
    V(M_PCPROTO, 0x83),
    V(M_PCSIG, 0x84),
    V(M_READ, 0x85),
    V(M_FLUSH, 0x86),
    V(M_STOP, 0x87),
    V(M_START, 0x88),
    V(M_HANGUP, 0x89),
    V(M_ERROR, 0x8a),
    V(M_COPYIN, 0x8b),
    V(M_COPYOUT, 0x8c),
    V(M_IOCDATA, 0x8d),
    V(M_PCRSE, 0x8e),
    V(M_STOPI, 0x8f),
    V(M_STARTI, 0x90),
    V(M_PCEVENT, 0x91),
    V(M_UNHANGUP, 0x92),
    /* ---- b_flag, allocation priorities, sizes: Solaris msgb(9S), allocb(9F) ---- */
    V(MSGMARK, 0x01),
    V(MSGNOLOOP, 0x02),
    V(MSGDELIM, 0x04),
    V(MSGNOGET, 0x08),
    V(MSGMARKNEXT, 0x10),
    V(MSGNOTMARKNEXT, 0x20),
    V(BPRI_LO, 1),
    V(BPRI_MED, 2),
    V(BPRI_HI, 3),
    V(INFPSZ, -1),
    V(FLUSHALL, 1),
    V(FLUSHDATA, 0),
    V(DRVOPEN, 0),
    V(MODOPEN, 1),
    V(CLONEOPEN, 2),
    /* ---- q_flag and qb_flag bits queue(9S) / qband(9S) document: Solaris ---- */
    V(QENAB, 0x0001),
    V(QWANTR, 0x0002),
    V(QWANTW, 0x0004),
    V(QFULL, 0x0008),
    V(QREADR, 0x0010),
    V(QUSE, 0x0020),
    V(QNOENB, 0x0040),
    V(QBACK, 0x0100),
    V(QHLIST, 0x0200),
    V(QPAIR, 0x0800),
    V(QPERQ, 0x1000),
    V(QPERMOD, 0x2000),
    V(QMTSAFE, 0x4000),
    V(QMTOUTPERIM, 0x8000),
    V(QINSERVICE, 0x10000),
    V(QB_FULL, 0x01),
    V(QB_WANTW, 0x02),
    V(QB_BACK, 0x04),
    /* ---- strqget/strqset fields: Solaris ---- */
    V(QHIWAT, 0),
    V(QLOWAT, 1),
    V(QMAXPSZ, 2),
    V(QMINPSZ, 3),
    V(QCOUNT, 4),
    V(QFIRST, 5),
    V(QLAST, 6),
    V(QFLAG, 7),
    V(QSTRUIOT, 8),
    V(QBAD, 9),
    /* ---- M_SETOPTS so_flags: SVR4.2 / Solaris ---- */
    V(SO_ALL, 0x003f),
    V(SO_READOPT, 0x0001),
    V(SO_WROFF, 0x0002),
    V(SO_MINPSZ, 0x0004),
    V(SO_MAXPSZ, 0x0008),
    V(SO_HIWAT, 0x0010),
    V(SO_LOWAT, 0x0020),
    V(SO_MREADON, 0x0040),
    V(SO_MREADOFF, 0x0080),
    V(SO_NDELON, 0x0100),
    V(SO_NDELOFF, 0x0200),
    V(SO_ISTTY, 0x0400),
    V(SO_ISNTTY, 0x0800),
    V(SO_TOSTOP, 0x1000),
    V(SO_TONSTOP, 0x2000),
    V(SO_BAND, 0x4000),
    V(SO_DELIM, 0x8000),
    V(SO_NODELIM, 0x10000),
    V(SO_STRHOLD, 0x20000),
    V(SO_ERROPT, 0x40000),
    V(SO_COPYOPT, 0x80000),
    V(SO_MAXBLK, 0x100000),
    V(SO_TAIL, 0x200000),
    V(TRANSPARENT, (unsigned int)-1),
};

/* Two names of one group must not share a value unless the standard says so. */
static int distinct(const long long *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (v[i] == v[j])
                return 0;
    return 1;
}

int main(void)
{
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        if (!CHECK(values[i].have == values[i].want))
            fprintf(stderr, "  %s is %lld, the standard says %lld\n", values[i].name,
                    values[i].have, values[i].want);

    /* Primitives and ioctls are dispatched by switch: no two may collide. */
    const long long prims[] = {T_CONN_REQ,     T_CONN_RES,       T_DISCON_REQ,     T_DATA_REQ,
                               T_EXDATA_REQ,   T_INFO_REQ,       T_BIND_REQ,       T_UNBIND_REQ,
                               T_UNITDATA_REQ, T_OPTMGMT_REQ,    T_ORDREL_REQ,     T_CONN_IND,
                               T_CONN_CON,     T_DISCON_IND,     T_DATA_IND,       T_EXDATA_IND,
                               T_INFO_ACK,     T_BIND_ACK,       T_ERROR_ACK,      T_OK_ACK,
                               T_UNITDATA_IND, T_UDERROR_IND,    T_OPTMGMT_ACK,    T_ORDREL_IND,
                               T_OPTDATA_REQ,  T_ADDR_REQ,       T_OPTDATA_IND,    T_ADDR_ACK,
                               T_CAPABILITY_REQ, T_CAPABILITY_ACK};
    CHECK(distinct(prims, sizeof(prims) / sizeof(prims[0])));
    const long long iocs[] = {
        I_NREAD,    I_PUSH,      I_POP,      I_LOOK,      I_FLUSH,     I_SRDOPT,   I_GRDOPT,
        I_STR,      I_SETSIG,    I_GETSIG,   I_FIND,      I_LINK,      I_UNLINK,   I_RECVFD,
        I_PEEK,     I_FDINSERT,  I_SENDFD,   I_E_RECVFD,  I_SWROPT,    I_GWROPT,   I_LIST,
        I_PLINK,    I_PUNLINK,   I_ANCHOR,   I_FLUSHBAND, I_CKBAND,    I_GETBAND,  I_ATMARK,
        I_SETCLTIME, I_GETCLTIME, I_CANPUT,  I_SERROPT,   I_GERROPT,   I_GETMSG,   I_PUTMSG,
        I_GETPMSG,  I_PUTPMSG,   I_PIPE,     I_FIFO,      I_ISASTREAM, I_AUTOPUSH, I_HEAP,
        I_GETTP,    I_STATS,     I_BIGPIPE};
    CHECK(distinct(iocs, sizeof(iocs) / sizeof(iocs[0])));
    /* Every high-priority type is >= QPCTL, every ordinary one below. */
    CHECK(M_PROTO < QPCTL && M_SETOPTS < QPCTL && M_TRAIL < QPCTL && M_BACKWASH < QPCTL);
    CHECK(M_IOCACK >= QPCTL && M_PCPROTO >= QPCTL && M_UNHANGUP >= QPCTL);

    /* Field types that cross the ioctl boundary: struct strpmsg as LfS. */
    struct strpmsg sp;
    CHECK_EQ(sizeof(sp.flags), sizeof(int));
    CHECK_EQ(sizeof(sp.band), sizeof(int));
    struct strrecvfd rf;
    CHECK_EQ(sizeof(rf.fill), 8);
    CHECK(rf.fill == rf.__fill);
    return CHECK_RESULT();
}
