/* SPDX-License-Identifier: MIT */
/*
 * xti_error.c -- t_errno (one per thread), t_error, t_strerror, t_errlist.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "xti_impl.h"

static _Thread_local int xti_errno_tls;

int *_t_errno(void)
{
    return &xti_errno_tls;
}

char *t_errlist[] = {
    "Error 0",
    "Incorrect address format",                          /* TBADADDR */
    "Incorrect options format",                          /* TBADOPT */
    "Illegal permissions",                               /* TACCES */
    "Illegal file descriptor",                           /* TBADF */
    "Couldn't allocate address",                         /* TNOADDR */
    "Routine will place interface out of state",         /* TOUTSTATE */
    "Illegal called/calling sequence number",            /* TBADSEQ */
    "System error",                                      /* TSYSERR */
    "An event requires attention",                       /* TLOOK */
    "Illegal amount of data",                            /* TBADDATA */
    "Buffer not large enough",                           /* TBUFOVFLW */
    "Can't send message - (blocked)",                    /* TFLOW */
    "No message currently available",                    /* TNODATA */
    "Disconnect message not found",                      /* TNODIS */
    "Unitdata error message not found",                  /* TNOUDERR */
    "Incorrect flags specified",                         /* TBADFLAG */
    "Orderly release message not found",                 /* TNOREL */
    "Primitive not supported by provider",               /* TNOTSUPPORT */
    "State is in process of changing",                   /* TSTATECHNG */
    "Unsupported structure type requested",              /* TNOSTRUCTYPE */
    "Invalid transport provider name",                   /* TBADNAME */
    "Listener queue length limit is zero",               /* TBADQLEN */
    "Transport address is in use",                       /* TADDRBUSY */
    "Outstanding connection indications",                /* TINDOUT */
    "Transport provider mismatch",                       /* TPROVMISMATCH */
    "Resfd specified to accept w/qlen >0",               /* TRESQLEN */
    "Resfd not bound to same addr as fd",                /* TRESADDR */
    "Incoming connection queue is full",                 /* TQFULL */
    "Protocol error",                                    /* TPROTO */
};

int t_nerr = (int)(sizeof(t_errlist) / sizeof(t_errlist[0]));

int xti_err(int terr)
{
    t_errno = terr;
    return -1;
}

int xti_syserr(int e)
{
    errno = e;
    t_errno = TSYSERR;
    return -1;
}

int xti_ackerr(int rval)
{
    int terr = rval & 0xff, uerr = (rval >> 8) & 0xffffff;

    if (terr <= 0 || terr >= t_nerr)
        return xti_err(TPROTO);
    if (terr == TSYSERR)
        errno = uerr ? uerr : EPROTO;
    return xti_err(terr);
}

const char *t_strerror(int errnum)
{
    static _Thread_local char buf[48];

    if (errnum > 0 && errnum < t_nerr)
        return t_errlist[errnum];
    snprintf(buf, sizeof(buf), "Unknown XTI error %d", errnum);
    return buf;
}

int t_error(const char *errmsg)
{
    int e = errno, te = t_errno;
    char msg[1024]; /* a longer message is cut */

    /* The caller's string through a protected copy: a bad one is EFAULT. */
    if (errmsg && xti_ustr(msg, errmsg, sizeof(msg)) < 0)
        return -1;
    if (errmsg && *msg)
        fprintf(stderr, "%s: ", msg);
    if (te == TSYSERR)
        fprintf(stderr, "%s: %s\n", t_strerror(te), strerror(e));
    else
        fprintf(stderr, "%s\n", t_strerror(te));
    errno = e;
    return 0;
}
