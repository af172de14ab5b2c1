/* SPDX-License-Identifier: MIT */
/*
 * sd_state.c -- the stream-state rules: what a hang-up (M_HANGUP) and the
 * M_ERROR read and write errors do to each call, in one table.
 *
 * Principles of operation
 *   Every system call on a stream fails in this order (docs/STREAMHEAD.md,
 *   "Hang-up and M_ERROR"):
 *     1. a bad descriptor: EBADF (not open, or not open for the direction
 *        the call needs, sd_access.c), ENOSTR (not a stream);
 *     2. bad arguments, judged from the arguments alone: EINVAL, EFAULT
 *        (ERANGE for sizes); state-dependent refusals (nothing to pop, no
 *        module on the stream) belong to step 4;
 *     3. the stream's state, by ust_sd_state_error below: EBADF (being
 *        closed under the call), EINVAL (linked under a multiplexer), the
 *        M_ERROR read error, the M_ERROR write error, then the hang-up;
 *     4. the request's own outcome, EAGAIN (would block) last.
 *   Step 3 is the table: each call belongs to one rule (UST_RULE_*), which
 *   says which of the three conditions stop it.  The ioctl dispatcher
 *   (sd_ioctl.c) consults ust_sd_ioc_rule for every request; read and
 *   getmsg (sd_read.c, sd_getmsg.c), write and putmsg (sd_write.c) and the functions
 *   behind the downstream ioctls (push, pop, I_STR, links, I_SENDFD,
 *   I_RECVFD) call ust_sd_state_error with their rule, so that nothing else
 *   decides it.
 *
 *   The rules follow Solaris' strioctl: an M_ERROR error stops the ioctls,
 *   except that the read-side ones (I_PEEK, I_NREAD, FIONREAD, I_ATMARK,
 *   I_RECVFD) are
 *   stopped only by the read error; a hang-up stops only what must act
 *   below the head or write (ENXIO; I_CANPUT and I_SWROPT too, issue 21).
 *   A pipe end's hang-up caused by the close of its other end gives EPIPE
 *   to the writes (and leaves I_SWROPT working); any other M_HANGUP, on a
 *   pipe end too, is ENXIO.  Unlike Solaris, the head's own options
 *   (I_S/GRDOPT, I_S/GWROPT, I_S/GERROPT, I_S/GETSIG, I_S/GETCLTIME) work in
 *   every state: they touch nothing below the head, and a program must be
 *   able to change how it sees an error (WERRNONPERSIST, S_ERROR) after the
 *   error arrived.  A non-persistent error (RERRNONPERSIST,
 *   WERRNONPERSIST) is cleared by the call that reports it (Solaris'
 *   strgeterr when not peeking); the re-checks made later inside a call
 *   (after a wait) do not clear it.
 */
#include <errno.h>

#include "sthead.h"

/* Which conditions stop each rule. */
#define STOP_RERR 1  /* the M_ERROR read error */
#define STOP_WERR 2  /* the M_ERROR write error */
#define STOP_HUP 4   /* the hang-up (ENXIO; EPIPE for a write on a pipe whose peer closed) */
#define STOP_BASIC 8 /* closing (EBADF), linked (EINVAL) */

static const int rule_stops[] = {
    [UST_RULE_FREE] = 0,
    [UST_RULE_OPT] = STOP_BASIC,
    [UST_RULE_RDERR] = STOP_BASIC | STOP_RERR,
    [UST_RULE_ERR] = STOP_BASIC | STOP_RERR | STOP_WERR,
    [UST_RULE_DOWN] = STOP_BASIC | STOP_RERR | STOP_WERR | STOP_HUP,
    [UST_RULE_READ] = STOP_BASIC | STOP_RERR,
    [UST_RULE_WRITE] = STOP_BASIC | STOP_WERR | STOP_HUP,
    [UST_RULE_WOPT] = STOP_BASIC | STOP_HUP,
};

int ust_sd_state_error(struct stdata *sd, int rule, int consume)
{
    UST_ASSERT_HELD(&sd->sd_lock);
    int stops = rule_stops[rule];
    uint_t fl = sd->sd_flag;

    if ((stops & STOP_BASIC) && (fl & STRCLOSE))
        return EBADF;
    if ((stops & STOP_BASIC) && (fl & STPLEX))
        return EINVAL;
    if ((stops & STOP_RERR) && (fl & STRDERR) && sd->sd_rerror) {
        int e = sd->sd_rerror;
        if (consume && (sd->sd_erropt & RERRNONPERSIST)) {
            sd->sd_rerror = 0;
            sd->sd_flag &= ~STRDERR;
            ust_sd_rready(sd); /* readable no more unless a message waits */
        }
        return e;
    }
    if ((stops & STOP_WERR) && (fl & STWRERR) && sd->sd_werror) {
        int e = sd->sd_werror;
        if (consume && (sd->sd_erropt & WERRNONPERSIST)) {
            sd->sd_werror = 0;
            sd->sd_flag &= ~STWRERR;
        }
        return e;
    }
    if ((stops & STOP_HUP) && (fl & STRHUP)) {
        /* A pipe end whose other end closed: EPIPE for the writes (write(2),
         * putmsg(2): "the other end of the pipe is closed").  An M_HANGUP
         * a module or driver sent up a pipe end, or a FIFO, is the hang-up
         * of any stream: ENXIO, for writes as for everything else. */
        int peer = (rule == UST_RULE_WRITE || rule == UST_RULE_WOPT) && (fl & STRPIPE) &&
                   ust_pipe_peer_gone(sd);
        if (peer) /* I_SWROPT still works there: SNDPIPE may be turned off */
            return rule == UST_RULE_WRITE ? EPIPE : 0;
        return ENXIO;
    }
    if (rule == UST_RULE_WRITE && (fl & STRFIFO) && ust_fifo_noreader(sd))
        return EPIPE; /* a FIFO nobody has open for reading (sd_fifo.c) */
    return 0;
}

/* The rule of each ioctl request handled at the head.  Requests not listed
 * are transparent ioctls for the modules and driver (UST_RULE_DOWN). */
static const struct {
    unsigned long cmd;
    signed char rule;
    signed char acc; /* UST_ACC_NOREAD / UST_ACC_NOWRITE: the descriptor must allow it */
} ioc_rules[] = {
    /* act below the head: errors and hang-up */
    {I_PUSH, UST_RULE_DOWN, 0},
    {I_POP, UST_RULE_DOWN, 0},
    {I_FLUSH, UST_RULE_DOWN, 0},
    {I_FLUSHBAND, UST_RULE_DOWN, 0},
    {I_STR, UST_RULE_DOWN, 0},
    {I_FDINSERT, UST_RULE_DOWN, UST_ACC_NOWRITE},
    {I_SENDFD, UST_RULE_DOWN, 0},
    {I_LINK, UST_RULE_DOWN, 0},
    {I_PLINK, UST_RULE_DOWN, 0},
    {I_UNLINK, UST_RULE_DOWN, 0},
    {I_PUNLINK, UST_RULE_DOWN, 0},
    /* read side (Solaris: stopped by the read error only) */
    {I_PEEK, UST_RULE_RDERR, 0},
    {I_NREAD, UST_RULE_RDERR, 0},
    {FIONREAD, UST_RULE_RDERR, 0},
    {I_ATMARK, UST_RULE_RDERR, 0},
    {I_RECVFD, UST_RULE_RDERR, 0},
    {I_E_RECVFD, UST_RULE_RDERR, 0},
    /* queries of the stream's modules and queues: errors only */
    {I_LOOK, UST_RULE_ERR, 0},
    {I_FIND, UST_RULE_ERR, 0},
    {I_LIST, UST_RULE_ERR, 0},
    {I_ANCHOR, UST_RULE_ERR, 0},
    {I_CKBAND, UST_RULE_ERR, 0},
    {I_GETBAND, UST_RULE_ERR, 0},
    /* asks whether the stream below can be written: a hung-up stream
     * cannot (ENXIO, not a misleading 1) */
    {I_CANPUT, UST_RULE_DOWN, 0},
    /* the write options of a stream that can no longer be written: ENXIO
     * after an M_HANGUP (issue 21, as the write calls); neither M_ERROR nor
     * the close of a pipe's other end stops it, so that a program may still
     * choose how it sees the error (SNDPIPE off: EPIPE without SIGPIPE) */
    {I_SWROPT, UST_RULE_WOPT, 0},
    /* the head's own options: in every state (a program may arrange how it
     * sees an error after the error arrived) */
    {I_SETSIG, UST_RULE_OPT, 0},
    {I_GETSIG, UST_RULE_OPT, 0},
    {I_SRDOPT, UST_RULE_OPT, 0},
    {I_GRDOPT, UST_RULE_OPT, 0},
    {I_GWROPT, UST_RULE_OPT, 0},
    {I_SERROPT, UST_RULE_OPT, 0},
    {I_GERROPT, UST_RULE_OPT, 0},
    {I_SETCLTIME, UST_RULE_OPT, 0},
    {I_GETCLTIME, UST_RULE_OPT, 0},
    /* the message calls in ioctl form: exactly as getmsg(2)/putmsg(2),
     * which apply their rule themselves (after their argument checks) */
    {I_GETMSG, UST_RULE_FREE, UST_ACC_NOREAD},
    {I_GETPMSG, UST_RULE_FREE, UST_ACC_NOREAD},
    {I_PUTMSG, UST_RULE_FREE, UST_ACC_NOWRITE},
    {I_PUTPMSG, UST_RULE_FREE, UST_ACC_NOWRITE},
    /* identification, and requests not supported (EINVAL whatever the state) */
    {I_ISASTREAM, UST_RULE_FREE, 0},
    {I_PIPE, UST_RULE_FREE, 0},
    {I_FIFO, UST_RULE_FREE, 0},
    {I_GETTP, UST_RULE_FREE, 0},
    {I_STATS, UST_RULE_FREE, 0},
    {I_BIGPIPE, UST_RULE_FREE, 0},
    {I_AUTOPUSH, UST_RULE_FREE, 0},
    {I_HEAP, UST_RULE_FREE, 0},
};

int ust_sd_ioc_rule(unsigned long cmd, int *acc)
{
    for (size_t i = 0; i < sizeof(ioc_rules) / sizeof(ioc_rules[0]); i++)
        if (ioc_rules[i].cmd == cmd) {
            if (acc)
                *acc = ioc_rules[i].acc;
            return ioc_rules[i].rule;
        }
    if (acc)
        *acc = 0;
    return UST_RULE_DOWN;
}

int ust_sd_ioc_error(struct stdata *sd)
{
    return ust_sd_state_error(sd, UST_RULE_DOWN, 0);
}
