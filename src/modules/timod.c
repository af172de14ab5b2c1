/* SPDX-License-Identifier: MIT */
/*
 * timod.c -- the TPI ioctl module: turns the TI_* ioctls of <sys/timod.h>
 * into TPI requests for the transport provider below, and the provider's
 * acknowledgements back into ioctl replies, so that a library (libxnet) can
 * run "send a request, wait for its ack" as one ioctl.
 *
 * MT level: D_MP | D_MTQPAIR.  The per-stream state (struct timod, in q_ptr
 * of both queues) is touched by the write put procedure (requests), the read
 * put procedure (acks) and open/close; the queue-pair perimeter makes all of
 * them exclusive for one stream, so the state needs no lock of its own.  A
 * put procedure that loops back into the pair (a provider answering at once
 * with qreply) is deferred by the perimeter, not deadlocked.
 * Flow control: none of its own.  No service procedures: everything not
 * handled is passed on with putnext, so canputnext from above looks through
 * this module; ioctl replies are high priority and never flow controlled.
 *
 * The ioctl contract (see the top of <sys/timod.h> and docs/TIMOD.md):
 *   I_STR  TI_GETINFO, TI_OPTMGMT, TI_BIND, TI_UNBIND, TI_GETADDRS,
 *          TI_CAPABILITY: the ioctl data is the TPI request.  It is checked
 *          (at least the request's fixed part, the PRIM_type the command
 *          names; else M_IOCNAK EINVAL) and sent down as M_PROTO (T_BIND_REQ,
 *          T_UNBIND_REQ, T_OPTMGMT_REQ) or M_PCPROTO (T_INFO_REQ, T_ADDR_REQ,
 *          T_CAPABILITY_REQ).  The matching ack becomes an M_IOCACK whose
 *          data is the ack (ioc_count its length, rval 0); a T_ERROR_ACK
 *          whose ERROR_prim is the request's becomes an M_IOCACK without data
 *          and rval (UNIX_error << 8) | TLI_error (TPROTO if that would not
 *          be positive: TLI_error 0 or out of 1..255, UNIX_error negative).  A matching ack shorter
 *          than its fixed part: M_IOCNAK EPROTO.
 *   I_STR  TI_SYNC: struct ti_sync_req in; with TSRF_INFO_REQ a T_INFO_REQ
 *          goes down and the ti_sync_ack is built from the T_INFO_ACK;
 *          without it the ack is answered at once (info fields 0).
 *          tsa_qlen (TSRF_QLEN_REQ): CONIND_number of the last T_BIND_ACK
 *          seen going up, 0 after an unbind or before any bind.  TSAF_EXP_QUEUED
 *          is never set: a module cannot look into the stream head's queue.
 *   TRANSPARENT  TI_GETMYNAME, TI_GETPEERNAME (struct netbuf *): M_COPYIN of
 *          the netbuf, T_ADDR_REQ down, M_COPYOUT of the address to
 *          netbuf.buf, M_COPYOUT of the netbuf with len set, M_IOCACK.  An
 *          address longer than maxlen: M_IOCNAK ENAMETOOLONG (as Solaris);
 *          a T_ERROR_ACK: M_IOCACK with rval as above.  The I_STR form of
 *          these two: EINVAL.
 *   TI_SETMYNAME, TI_SETPEERNAME: M_IOCNAK EINVAL (unsupported).
 *   Any other M_IOCTL and M_IOCDATA not ours pass down unchanged; acks that
 *   answer no outstanding ioctl pass up unchanged.
 *
 * No provider below (docs/TIMOD.md, "A stream that is not a transport").
 * timod cannot tell from the stream whether the driver speaks TPI, so it
 * lets the driver show it:
 *   - a pipe end or a FIFO (the write side ends in a twist, tm_twisted): no
 *     request is sent at all, so none reaches the peer's reader; the ioctl
 *     fails ENOTTY at once;
 *   - the request comes back up (echo, any loop): the driver is no
 *     provider; the looped request is freed and the ioctl fails ENOTTY at
 *     once;
 *   - a sink (nuls, sad, an unconnected loop) frees the request and never
 *     answers: until the stream has answered one TI_* request ("proven"),
 *     TI_CAPABILITY -- TPI's "who are you", which every provider answers
 *     from its put procedure, T_CAPABILITY_ACK or T_ERROR_ACK, without any
 *     remote exchange -- gets TIMOD_PROBE_MS; past it the ioctl fails
 *     ENOTTY.  Later requests, and every request of a proven stream, wait
 *     as the caller's ic_timout says.
 *   ENOTTY ("inappropriate ioctl for device") is the errno only these two
 *   give; libxnet maps it to TBADNAME (t_open) or TBADF (t_sync).
 *
 * One ioctl is outstanding at a time (the stream head serializes them).  A
 * new TI_* ioctl arriving while one is outstanding means the head gave the
 * old one up (timeout, signal): the old one is dropped and the new one takes
 * its place, so an unanswering provider cannot wedge the endpoint.  A late
 * ack that still matches becomes an M_IOCACK with a stale ioc_id, which the
 * head frees; one that no longer matches passes up as a TPI message.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>
#include <sys/tihdr.h>
#include <sys/timod.h>
#include <xti.h>

#include "modutil.h"

#define TIMOD_ID 5006
#define TIMOD_PROBE_MS 300 /* an unproven stream's TI_CAPABILITY: answer within this */

/* Where an outstanding ioctl stands. */
enum tm_stage {
    TM_IDLE = 0,     /* nothing outstanding */
    TM_WAIT_ACK,     /* request sent down, waiting for its ack */
    TM_COPYIN_NB,    /* TI_GET*NAME: waiting for the netbuf (M_IOCDATA) */
    TM_COPYOUT_ADDR, /* TI_GET*NAME: waiting for the address copy-out */
    TM_COPYOUT_NB,   /* TI_GET*NAME: waiting for the netbuf copy-out */
};

/* Per-stream state, q_ptr of both queues.  Guarded by the pair perimeter. */
struct timod {
    enum tm_stage stage;
    mblk_t *ioc;          /* TM_WAIT_ACK: the M_IOCTL/M_IOCDATA to answer with */
    int cmd;              /* the outstanding TI_* command */
    uint_t id;            /* its ioc_id */
    t_scalar_t req;       /* TM_WAIT_ACK: the request sent (T_*_REQ) */
    uint32_t sync_flags;  /* TI_SYNC: tsr_flags */
    struct netbuf nb;     /* TI_GET*NAME: the user's netbuf */
    caddr_t nbaddr;       /* TI_GET*NAME: its address */
    t_uscalar_t qlen;     /* CONIND_number of the last T_BIND_ACK, 0 if unbound */
    queue_t *rq;          /* our read queue (the probe's callback replies there) */
    timeout_id_t probe;   /* TM_WAIT_ACK of an unproven TI_CAPABILITY: its limit, or 0 */
    int proven;           /* an ack from below has answered one of our requests */
};

static int timod_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int timod_close(queue_t *q, int oflag, cred_t *crp);
static int timod_wput(queue_t *q, mblk_t *mp);
static int timod_rput(queue_t *q, mblk_t *mp);

static struct module_info timod_minfo = {
    .mi_idnum = TIMOD_ID,
    .mi_idname = "timod",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit timod_rinit = {
    .qi_putp = timod_rput,
    .qi_qopen = timod_open,
    .qi_qclose = timod_close,
    .qi_minfo = &timod_minfo,
};

static struct qinit timod_winit = {
    .qi_putp = timod_wput,
    .qi_minfo = &timod_minfo,
};

static struct streamtab timod_info = {
    .st_rdinit = &timod_rinit,
    .st_wrinit = &timod_winit,
};

static struct fmodsw timod_fmod = {
    .f_name = "timod",
    .f_str = &timod_info,
    .f_flag = D_MP | D_MTQPAIR,
};

void ust_timod_register(void);

void ust_timod_register(void)
{
    int rc = register_strmod(&timod_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "timod: register_strmod failed (%d)", rc);
}

static int timod_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    if (q->q_ptr != NULL)
        return 0;
    struct timod *tm = kmem_zalloc(sizeof(*tm), KM_SLEEP);
    if (tm == NULL)
        return ENOMEM;
    tm->rq = q;
    q->q_ptr = WR(q)->q_ptr = tm;
    qprocson(q);
    return 0;
}

/* Cancel the probe limit, if one runs.  Inside the pair's perimeter (or
 * close): quntimeout waits for a callback already running elsewhere and
 * takes out one deferred at our perimeter. */
static void tm_probe_cancel(struct timod *tm)
{
    if (tm->probe != 0) {
        quntimeout(tm->rq, tm->probe);
        tm->probe = 0;
    }
}

/* Forget the outstanding ioctl (the head has given it up or it is over). */
static void tm_forget(struct timod *tm)
{
    tm_probe_cancel(tm);
    freemsg(tm->ioc);
    tm->ioc = NULL;
    tm->stage = TM_IDLE;
}

static int timod_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    struct timod *tm = q->q_ptr;
    qprocsoff(q);
    tm_forget(tm);
    q->q_ptr = WR(q)->q_ptr = NULL;
    kmem_free(tm, sizeof(*tm));
    return 0;
}

static size_t tm_len(const mblk_t *mp)
{
    size_t n = 0;
    for (; mp != NULL; mp = mp->b_cont)
        if (mp->b_wptr > mp->b_rptr)
            n += (size_t)(mp->b_wptr - mp->b_rptr);
    return n;
}

static t_scalar_t tm_prim(const mblk_t *mp)
{
    t_scalar_t p;
    memcpy(&p, mp->b_rptr, sizeof(p));
    return p;
}

/* Send an ioctl reply up the read side: M_IOCACK (error 0) or M_IOCNAK. */
static void tm_reply_up(queue_t *rq, mblk_t *mp, unsigned char type, size_t count, int rval,
                        int error)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    mp->b_datap->db_type = type;
    mp->b_wptr = mp->b_rptr + sizeof(struct iocblk);
    iocp->ioc_count = count;
    iocp->ioc_rval = rval;
    iocp->ioc_error = error;
    if (count == 0 && mp->b_cont != NULL) {
        freemsg(mp->b_cont);
        mp->b_cont = NULL;
    }
    putnext(rq, mp);
}

/* The stream below has shown it is no TPI provider: fail the outstanding
 * ioctl ENOTTY.  Inside the pair's perimeter, stage TM_WAIT_ACK. */
static void tm_notpi(struct timod *tm)
{
    mblk_t *ioc = tm->ioc;

    tm->ioc = NULL;
    tm_forget(tm);
    tm_reply_up(tm->rq, ioc, M_IOCNAK, 0, 0, ENOTTY);
}

/* qtimeout callback, inside the pair's perimeter: an unproven stream left
 * TI_CAPABILITY unanswered for TIMOD_PROBE_MS. */
static void tm_probe_expired(void *arg)
{
    struct timod *tm = arg;

    tm->probe = 0;
    if (tm->stage == TM_WAIT_ACK && tm->cmd == TI_CAPABILITY && !tm->proven)
        tm_notpi(tm);
}

/* The request each I_STR command carries, its minimum length and whether it
 * goes down high priority.  Returns 0 if cmd is not an I_STR TI_* command. */
static int tm_cmd_req(int cmd, t_scalar_t *req, size_t *minlen, unsigned char *type)
{
    *type = M_PROTO;
    switch (cmd) {
    case TI_GETINFO:
    case TI_SYNC:
        *req = T_INFO_REQ;
        *minlen = cmd == TI_SYNC ? sizeof(struct ti_sync_req) : sizeof(struct T_info_req);
        *type = M_PCPROTO;
        return 1;
    case TI_OPTMGMT:
        *req = T_OPTMGMT_REQ;
        *minlen = sizeof(struct T_optmgmt_req);
        return 1;
    case TI_BIND:
        *req = T_BIND_REQ;
        *minlen = sizeof(struct T_bind_req);
        return 1;
    case TI_UNBIND:
        *req = T_UNBIND_REQ;
        *minlen = sizeof(struct T_unbind_req);
        return 1;
    case TI_GETADDRS:
        *req = T_ADDR_REQ;
        *minlen = sizeof(struct T_addr_req);
        *type = M_PCPROTO;
        return 1;
    case TI_CAPABILITY:
        *req = T_CAPABILITY_REQ;
        *minlen = sizeof(struct T_capability_req);
        *type = M_PCPROTO;
        return 1;
    default:
        return 0;
    }
}

/* A one-block M_PROTO/M_PCPROTO holding len bytes of src, or NULL. */
static mblk_t *tm_protomsg(unsigned char type, const void *src, size_t len)
{
    mblk_t *mp = allocb(len, BPRI_HI);
    if (mp == NULL)
        return NULL;
    mp->b_datap->db_type = type;
    memcpy(mp->b_wptr, src, len);
    mp->b_wptr += len;
    return mp;
}

/*
 * Does the write side below wq end in a pipe's twist -- a pipe end (the
 * other end's read side comes next) or a FIFO (its own read side)?  Walks
 * down with SAMESTR(9F), as a module may; the bottom write queue of a driver
 * has no q_next, the one of a pipe or FIFO has the twist.  Inside the pair's
 * perimeter: the queues below timod stay while it is pushed (push and pop
 * work above it); only the twist link changes (cut when the pipe breaks),
 * and it is written and read atomically.
 */
static int tm_twisted(queue_t *wq)
{
    queue_t *q = wq;

    while (SAMESTR(q))
        q = __atomic_load_n(&q->q_next, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&q->q_next, __ATOMIC_ACQUIRE) != NULL;
}

/* Take mp (an M_IOCTL or M_IOCDATA) as the outstanding ioctl waiting for the
 * ack of req, and send the request pp down.  An unproven stream that ends
 * in a twist is no transport: its "provider" is a reader (the peer of a
 * pipe) or timod itself (a FIFO), so nothing is sent and the ioctl fails
 * ENOTTY at once (docs/TIMOD.md, "A stream that is not a transport"). */
static void tm_send_req(queue_t *wq, struct timod *tm, mblk_t *mp, mblk_t *pp, t_scalar_t req)
{
    if (mp->b_cont != NULL) {
        freemsg(mp->b_cont);
        mp->b_cont = NULL;
    }
    tm->ioc = mp;
    tm->req = req;
    tm->stage = TM_WAIT_ACK;
    if (!tm->proven && tm_twisted(wq)) {
        freemsg(pp);
        tm_notpi(tm);
        return;
    }
    if (!tm->proven && tm->cmd == TI_CAPABILITY)
        tm->probe = qtimeout(tm->rq, tm_probe_expired, tm, drv_usectohz(TIMOD_PROBE_MS * 1000L));
    putnext(wq, pp);
}

/* TI_SYNC answered without asking the provider, or from a T_INFO_ACK. */
static void tm_sync_reply(queue_t *rq, struct timod *tm, mblk_t *mp, const struct T_info_ack *ia)
{
    struct ti_sync_ack sa;
    memset(&sa, 0, sizeof(sa));
    sa.PRIM_type = T_INFO_ACK;
    if (ia != NULL) {
        sa.TSDU_size = ia->TSDU_size;
        sa.ETSDU_size = ia->ETSDU_size;
        sa.CDATA_size = ia->CDATA_size;
        sa.DDATA_size = ia->DDATA_size;
        sa.ADDR_size = ia->ADDR_size;
        sa.OPT_size = ia->OPT_size;
        sa.TIDU_size = ia->TIDU_size;
        sa.SERV_type = ia->SERV_type;
        sa.CURRENT_state = ia->CURRENT_state;
        sa.PROVIDER_flag = ia->PROVIDER_flag;
    }
    if (tm->sync_flags & TSRF_QLEN_REQ)
        sa.tsa_qlen = tm->qlen;
    mblk_t *dp = allocb(sizeof(sa), BPRI_HI);
    if (dp == NULL) {
        tm_reply_up(rq, mp, M_IOCNAK, 0, 0, ENOSR);
        return;
    }
    memcpy(dp->b_wptr, &sa, sizeof(sa));
    dp->b_wptr += sizeof(sa);
    if (mp->b_cont != NULL)
        freemsg(mp->b_cont);
    mp->b_cont = dp;
    tm_reply_up(rq, mp, M_IOCACK, sizeof(sa), 0, 0);
}

/* An I_STR TI_* command (not GET*NAME). */
static void tm_istr(queue_t *wq, struct timod *tm, mblk_t *mp, int cmd)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    t_scalar_t req;
    size_t minlen;
    unsigned char type;

    (void)tm_cmd_req(cmd, &req, &minlen, &type);
    if (iocp->ioc_count == TRANSPARENT || tm_len(mp->b_cont) < minlen) {
        miocnak(wq, mp, 0, EINVAL);
        return;
    }
    if (cmd == TI_SYNC) {
        struct ti_sync_req sr;
        mblk_t *flat = msgpullup(mp->b_cont, sizeof(sr));
        if (flat == NULL) {
            miocnak(wq, mp, 0, ENOSR);
            return;
        }
        memcpy(&sr, flat->b_rptr, sizeof(sr));
        freemsg(flat);
        tm->sync_flags = sr.tsr_flags;
        tm->cmd = cmd;
        tm->id = iocp->ioc_id;
        if (!(sr.tsr_flags & TSRF_INFO_REQ)) {
            tm_sync_reply(RD(wq), tm, mp, NULL);
            tm->stage = TM_IDLE;
            return;
        }
        struct T_info_req ir = {.PRIM_type = T_INFO_REQ};
        mblk_t *pp = tm_protomsg(M_PCPROTO, &ir, sizeof(ir));
        if (pp == NULL) {
            miocnak(wq, mp, 0, ENOSR);
            return;
        }
        tm_send_req(wq, tm, mp, pp, T_INFO_REQ);
        return;
    }
    /* The request, flattened into one block of its own. */
    mblk_t *pp = msgpullup(mp->b_cont, -1);
    if (pp == NULL) {
        miocnak(wq, mp, 0, ENOSR);
        return;
    }
    if (tm_prim(pp) != req) {
        freemsg(pp);
        miocnak(wq, mp, 0, EINVAL);
        return;
    }
    pp->b_datap->db_type = type;
    tm->cmd = cmd;
    tm->id = iocp->ioc_id;
    tm_send_req(wq, tm, mp, pp, req);
}

/* TI_GETMYNAME / TI_GETPEERNAME: ask for the netbuf. */
static void tm_getname(queue_t *wq, struct timod *tm, mblk_t *mp, int cmd)
{
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;
    caddr_t uaddr = NULL;

    if (iocp->ioc_count != TRANSPARENT || mp->b_cont == NULL ||
        mp->b_cont->b_wptr - mp->b_cont->b_rptr < (ptrdiff_t)sizeof(uaddr)) {
        miocnak(wq, mp, 0, EINVAL);
        return;
    }
    memcpy(&uaddr, mp->b_cont->b_rptr, sizeof(uaddr));
    tm->cmd = cmd;
    tm->id = iocp->ioc_id;
    tm->nbaddr = uaddr;
    tm->stage = TM_COPYIN_NB;
    mcopyin(mp, NULL, sizeof(struct netbuf), uaddr);
    qreply(wq, mp);
}

/* An M_IOCDATA answering one of our copy requests. */
static void tm_iocdata(queue_t *wq, struct timod *tm, mblk_t *mp)
{
    struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;

    if (cp->cp_rval != 0) { /* the copy failed: the head fails the ioctl EFAULT */
        freemsg(mp);
        tm->stage = TM_IDLE;
        return;
    }
    switch (tm->stage) {
    case TM_COPYIN_NB: {
        mblk_t *flat = mp->b_cont ? msgpullup(mp->b_cont, -1) : NULL;
        if (flat == NULL || tm_len(flat) < sizeof(struct netbuf)) {
            freemsg(flat);
            tm->stage = TM_IDLE;
            miocnak(wq, mp, 0, flat == NULL && mp->b_cont != NULL ? ENOSR : EINVAL);
            return;
        }
        memcpy(&tm->nb, flat->b_rptr, sizeof(tm->nb));
        freemsg(flat);
        struct T_addr_req ar = {.PRIM_type = T_ADDR_REQ};
        mblk_t *pp = tm_protomsg(M_PCPROTO, &ar, sizeof(ar));
        if (pp == NULL) {
            tm->stage = TM_IDLE;
            miocnak(wq, mp, 0, ENOSR);
            return;
        }
        tm_send_req(wq, tm, mp, pp, T_ADDR_REQ);
        return;
    }
    case TM_COPYOUT_ADDR: {
        mblk_t *dp = allocb(sizeof(tm->nb), BPRI_HI);
        if (dp == NULL) {
            tm->stage = TM_IDLE;
            miocnak(wq, mp, 0, ENOSR);
            return;
        }
        memcpy(dp->b_wptr, &tm->nb, sizeof(tm->nb));
        dp->b_wptr += sizeof(tm->nb);
        tm->stage = TM_COPYOUT_NB;
        mcopyout(mp, NULL, sizeof(tm->nb), tm->nbaddr, dp);
        qreply(wq, mp);
        return;
    }
    case TM_COPYOUT_NB:
        tm->stage = TM_IDLE;
        miocack(wq, mp, 0, 0);
        return;
    default:
        tm->stage = TM_IDLE;
        miocnak(wq, mp, 0, EPROTO);
        return;
    }
}

/* Write side: TI_* ioctls and their copy responses; all else passes down. */
static int timod_wput(queue_t *q, mblk_t *mp)
{
    struct timod *tm = q->q_ptr;
    t_scalar_t req;
    size_t minlen;
    unsigned char type;

    switch (mp->b_datap->db_type) {
    case M_IOCTL: {
        int cmd = ((struct iocblk *)(void *)mp->b_rptr)->ioc_cmd;
        if (tm_cmd_req(cmd, &req, &minlen, &type)) {
            tm_forget(tm); /* a leftover was given up by the head */
            tm_istr(q, tm, mp, cmd);
        } else if (cmd == TI_GETMYNAME || cmd == TI_GETPEERNAME) {
            tm_forget(tm);
            tm_getname(q, tm, mp, cmd);
        } else if (cmd == TI_SETMYNAME || cmd == TI_SETPEERNAME) {
            miocnak(q, mp, 0, EINVAL);
        } else {
            putnext(q, mp);
        }
        return 0;
    }
    case M_IOCDATA: {
        struct copyresp *cp = (struct copyresp *)(void *)mp->b_rptr;
        if ((tm->stage == TM_COPYIN_NB || tm->stage == TM_COPYOUT_ADDR ||
             tm->stage == TM_COPYOUT_NB) &&
            cp->cp_id == tm->id && cp->cp_cmd == tm->cmd)
            tm_iocdata(q, tm, mp);
        else
            putnext(q, mp);
        return 0;
    }
    case M_FLUSH:
        ust_mod_flush(q, mp);
        putnext(q, mp);
        return 0;
    default:
        putnext(q, mp);
        return 0;
    }
}

/* The minimum length of the ack that answers req, and its PRIM_type. */
static t_scalar_t tm_ack_for(t_scalar_t req, size_t *minlen)
{
    switch (req) {
    case T_INFO_REQ:
        *minlen = sizeof(struct T_info_ack);
        return T_INFO_ACK;
    case T_OPTMGMT_REQ:
        *minlen = sizeof(struct T_optmgmt_ack);
        return T_OPTMGMT_ACK;
    case T_BIND_REQ:
        *minlen = sizeof(struct T_bind_ack);
        return T_BIND_ACK;
    case T_UNBIND_REQ:
        *minlen = sizeof(struct T_ok_ack);
        return T_OK_ACK;
    case T_ADDR_REQ:
        *minlen = sizeof(struct T_addr_ack);
        return T_ADDR_ACK;
    default:
        *minlen = sizeof(struct T_capability_ack);
        return T_CAPABILITY_ACK;
    }
}

/* TI_GET*NAME: the T_ADDR_ACK (flat, long enough) arrived; copy the address
 * out.  Returns 0, or the errno to fail the ioctl with. */
static int tm_name_ack(queue_t *rq, struct timod *tm, mblk_t *ack)
{
    struct T_addr_ack aa;
    size_t len = tm_len(ack);
    memcpy(&aa, ack->b_rptr, sizeof(aa));
    t_scalar_t alen = tm->cmd == TI_GETMYNAME ? aa.LOCADDR_length : aa.REMADDR_length;
    t_scalar_t aoff = tm->cmd == TI_GETMYNAME ? aa.LOCADDR_offset : aa.REMADDR_offset;
    if (alen < 0 || (alen > 0 && (aoff < 0 || (size_t)aoff > len || (size_t)alen > len - (size_t)aoff)))
        return EPROTO;
    if ((unsigned int)alen > tm->nb.maxlen)
        return ENAMETOOLONG;
    tm->nb.len = (unsigned int)alen;
    mblk_t *mp = tm->ioc;
    tm->ioc = NULL;
    mblk_t *dp = allocb(alen > 0 ? (size_t)alen : sizeof(tm->nb), BPRI_HI);
    if (dp == NULL) {
        tm->ioc = mp;
        return ENOSR;
    }
    if (alen > 0) {
        memcpy(dp->b_wptr, ack->b_rptr + aoff, (size_t)alen);
        dp->b_wptr += alen;
        tm->stage = TM_COPYOUT_ADDR;
        mcopyout(mp, NULL, (size_t)alen, tm->nb.buf, dp);
    } else {
        memcpy(dp->b_wptr, &tm->nb, sizeof(tm->nb));
        dp->b_wptr += sizeof(tm->nb);
        tm->stage = TM_COPYOUT_NB;
        mcopyout(mp, NULL, sizeof(tm->nb), tm->nbaddr, dp);
    }
    putnext(rq, mp);
    return 0;
}

/*
 * An M_PROTO/M_PCPROTO coming up while an ioctl waits for its ack: answer
 * the ioctl with it if it is that ack or the matching T_ERROR_ACK.  Returns
 * 1 if it did (mp consumed), 0 if mp is not the answer.
 */
static int tm_ack(queue_t *rq, struct timod *tm, mblk_t *mp)
{
    size_t minlen, len = tm_len(mp);
    t_scalar_t prim = tm_prim(mp);
    t_scalar_t want = tm_ack_for(tm->req, &minlen);
    mblk_t *ioc;
    int err;

    if (prim == T_ERROR_ACK) {
        struct T_error_ack ea;
        if (len < sizeof(ea))
            return 0;
        mblk_t *flat = msgpullup(mp, sizeof(ea));
        if (flat == NULL)
            return 0;
        memcpy(&ea, flat->b_rptr, sizeof(ea));
        freemsg(flat);
        if (ea.ERROR_prim != tm->req)
            return 0;
        freemsg(mp);
        tm->proven = 1;
        tm_probe_cancel(tm);
        ioc = tm->ioc;
        tm->ioc = NULL;
        tm->stage = TM_IDLE;
        /* (UNIX_error << 8) | TLI_error; an ack that would not give a
         * positive value (TLI_error 0, a negative errno) reads as TPROTO. */
        int rval = TPROTO;
        if (ea.TLI_error > 0 && ea.TLI_error < 256 && ea.UNIX_error >= 0 &&
            ea.UNIX_error < (1 << 22))
            rval = (int)((ea.UNIX_error << 8) | ea.TLI_error);
        tm_reply_up(rq, ioc, M_IOCACK, 0, rval, 0);
        return 1;
    }
    if (prim != want)
        return 0;
    if (prim == T_OK_ACK) {
        struct T_ok_ack ok;
        if (len < sizeof(ok) || mp->b_wptr - mp->b_rptr < (ptrdiff_t)sizeof(ok))
            return 0;
        memcpy(&ok, mp->b_rptr, sizeof(ok));
        if (ok.CORRECT_prim != tm->req)
            return 0;
    }
    tm->proven = 1;
    tm_probe_cancel(tm);
    ioc = tm->ioc;
    tm->ioc = NULL;
    tm->stage = TM_IDLE;
    mblk_t *flat = len >= minlen ? msgpullup(mp, -1) : NULL;
    if (flat == NULL) {
        freemsg(mp);
        tm_reply_up(rq, ioc, M_IOCNAK, 0, 0, len >= minlen ? ENOSR : EPROTO);
        return 1;
    }
    freemsg(mp);
    if (tm->cmd == TI_SYNC) {
        struct T_info_ack ia;
        memcpy(&ia, flat->b_rptr, sizeof(ia));
        freemsg(flat);
        tm_sync_reply(rq, tm, ioc, &ia);
        return 1;
    }
    if (tm->cmd == TI_GETMYNAME || tm->cmd == TI_GETPEERNAME) {
        tm->ioc = ioc;
        err = tm_name_ack(rq, tm, flat);
        freemsg(flat);
        if (err != 0) {
            ioc = tm->ioc;
            tm->ioc = NULL;
            tm->stage = TM_IDLE;
            tm_reply_up(rq, ioc, M_IOCNAK, 0, 0, err);
        }
        return 1;
    }
    flat->b_datap->db_type = M_DATA;
    if (ioc->b_cont != NULL)
        freemsg(ioc->b_cont);
    ioc->b_cont = flat;
    tm_reply_up(rq, ioc, M_IOCACK, len, 0, 0);
    return 1;
}

/* Keep tsa_qlen: the last bind's CONIND_number, 0 after an unbind. */
static void tm_track(struct timod *tm, const mblk_t *mp)
{
    size_t blen = (size_t)(mp->b_wptr - mp->b_rptr);
    t_scalar_t prim = tm_prim(mp);
    if (prim == T_BIND_ACK && blen >= sizeof(struct T_bind_ack)) {
        struct T_bind_ack ba;
        memcpy(&ba, mp->b_rptr, sizeof(ba));
        tm->qlen = ba.CONIND_number;
    } else if (prim == T_OK_ACK && blen >= sizeof(struct T_ok_ack)) {
        struct T_ok_ack ok;
        memcpy(&ok, mp->b_rptr, sizeof(ok));
        if (ok.CORRECT_prim == T_UNBIND_REQ)
            tm->qlen = 0;
    }
}

/* Read side: acks answering the outstanding ioctl; all else passes up. */
static int timod_rput(queue_t *q, mblk_t *mp)
{
    struct timod *tm = q->q_ptr;

    switch (mp->b_datap->db_type) {
    case M_PROTO:
    case M_PCPROTO:
        if (mp->b_wptr - mp->b_rptr < (ptrdiff_t)sizeof(t_scalar_t))
            break;
        tm_track(tm, mp);
        if (tm->stage == TM_WAIT_ACK && tm_prim(mp) == tm->req) {
            /* our own request came back up: a loop, not a provider */
            freemsg(mp);
            tm_notpi(tm);
            return 0;
        }
        if (tm->stage == TM_WAIT_ACK && tm_ack(q, tm, mp))
            return 0;
        break;
    case M_FLUSH:
        ust_mod_flush(q, mp);
        break;
    default:
        break;
    }
    putnext(q, mp);
    return 0;
}
