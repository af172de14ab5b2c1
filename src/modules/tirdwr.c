/* SPDX-License-Identifier: MIT */
/*
 * tirdwr.c -- the read/write module of TPI: pushed on a connected transport
 * endpoint, it lets read and write (and readv, writev) move the data of the
 * connection, hiding the TPI primitives.
 *
 * MT level: D_MP | D_MTQPAIR.  The per-stream flags (struct tirdwr in q_ptr
 * of both queues) are set by the read put procedure and read by close; the
 * queue-pair perimeter makes put, open and close exclusive for one stream,
 * so they need no lock of their own.
 * Flow control: none of its own.  No service procedures: canputnext from
 * above and from below looks straight through this module.
 *
 * Conversions (as Solaris' tirdwr):
 *   read side   T_DATA_IND     its data goes up as M_DATA (the M_PROTO block
 *                              is freed; MORE_flag is ignored: the data is a
 *                              byte stream); one without data is dropped.
 *               T_ORDREL_IND   a zero-length M_DATA goes up (read returns 0,
 *                              end of file); remembered for close.
 *               T_DISCON_IND   data with it goes up first, then M_HANGUP
 *                              (read returns what is queued, then 0; write
 *                              fails ENXIO); remembered for close.
 *               any other M_PROTO/M_PCPROTO (T_EXDATA_IND included), or
 *                              one too short to hold a PRIM_type:
 *                              M_ERROR EPROTO up (read and write side).
 *               M_DATA and every other type pass.
 *   write side  M_DATA passes, except a zero-length one, which is dropped.
 *               M_PROTO/M_PCPROTO (putmsg with a control part): freed, and
 *                              M_ERROR EPROTO goes up.
 *               every other type passes.
 *   close/pop   after a T_ORDREL_IND: T_ORDREL_REQ down; after a
 *               T_DISCON_IND: nothing; otherwise (the connection is assumed
 *               up): T_DISCON_REQ with SEQ_number -1 down.  If the message
 *               cannot be allocated it is not sent.
 *   push        Solaris refuses the push (EPROTO) if a TPI message is already
 *               waiting at the stream head.  A module cannot look into the
 *               head's queue through the DDI, so the push is not checked:
 *               the caller must push on an endpoint in data transfer with
 *               nothing unread but data.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>
#include <sys/tihdr.h>

#include "modutil.h"

#define TIRDWR_ID 5007

#define TRW_ORDREL 0x1 /* T_ORDREL_IND seen */
#define TRW_DISCON 0x2 /* T_DISCON_IND seen */

/* Per-stream state, q_ptr of both queues.  Guarded by the pair perimeter. */
struct tirdwr {
    int flags; /* TRW_* */
};

static int tirdwr_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int tirdwr_close(queue_t *q, int oflag, cred_t *crp);
static int tirdwr_wput(queue_t *q, mblk_t *mp);
static int tirdwr_rput(queue_t *q, mblk_t *mp);

static struct module_info tirdwr_minfo = {
    .mi_idnum = TIRDWR_ID,
    .mi_idname = "tirdwr",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit tirdwr_rinit = {
    .qi_putp = tirdwr_rput,
    .qi_qopen = tirdwr_open,
    .qi_qclose = tirdwr_close,
    .qi_minfo = &tirdwr_minfo,
};

static struct qinit tirdwr_winit = {
    .qi_putp = tirdwr_wput,
    .qi_minfo = &tirdwr_minfo,
};

static struct streamtab tirdwr_info = {
    .st_rdinit = &tirdwr_rinit,
    .st_wrinit = &tirdwr_winit,
};

static struct fmodsw tirdwr_fmod = {
    .f_name = "tirdwr",
    .f_str = &tirdwr_info,
    .f_flag = D_MP | D_MTQPAIR,
};

void ust_tirdwr_register(void);

void ust_tirdwr_register(void)
{
    int rc = register_strmod(&tirdwr_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "tirdwr: register_strmod failed (%d)", rc);
}

static int tirdwr_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    if (q->q_ptr != NULL)
        return 0;
    struct tirdwr *trw = kmem_zalloc(sizeof(*trw), KM_SLEEP);
    if (trw == NULL)
        return ENOMEM;
    q->q_ptr = WR(q)->q_ptr = trw;
    qprocson(q);
    return 0;
}

/* The release primitive close sends down, or NULL (none due, or no memory). */
static mblk_t *trw_release_msg(const struct tirdwr *trw)
{
    mblk_t *mp;

    if (trw->flags & TRW_DISCON)
        return NULL;
    if (trw->flags & TRW_ORDREL) {
        struct T_ordrel_req orr = {.PRIM_type = T_ORDREL_REQ};
        if ((mp = allocb(sizeof(orr), BPRI_HI)) == NULL)
            return NULL;
        memcpy(mp->b_wptr, &orr, sizeof(orr));
        mp->b_wptr += sizeof(orr);
    } else {
        struct T_discon_req dr = {.PRIM_type = T_DISCON_REQ, .SEQ_number = -1};
        if ((mp = allocb(sizeof(dr), BPRI_HI)) == NULL)
            return NULL;
        memcpy(mp->b_wptr, &dr, sizeof(dr));
        mp->b_wptr += sizeof(dr);
    }
    mp->b_datap->db_type = M_PROTO;
    return mp;
}

static int tirdwr_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    struct tirdwr *trw = q->q_ptr;
    mblk_t *mp = trw_release_msg(trw);
    if (mp != NULL)
        putnext(WR(q), mp);
    qprocsoff(q);
    q->q_ptr = WR(q)->q_ptr = NULL;
    kmem_free(trw, sizeof(*trw));
    return 0;
}

/* Free mp and raise a protocol error (M_ERROR EPROTO, both sides) at the
 * head; rq is the read queue. */
static void trw_proto_error(queue_t *rq, mblk_t *mp)
{
    freemsg(mp);
    (void)putnextctl1(rq, M_ERROR, EPROTO);
}

static int tirdwr_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_DATA:
        if (msgdsize(mp) == 0)
            freemsg(mp);
        else
            putnext(q, mp);
        return 0;
    case M_PROTO:
    case M_PCPROTO:
        trw_proto_error(RD(q), mp);
        return 0;
    case M_FLUSH:
        ust_mod_flush(q, mp);
        putnext(q, mp);
        return 0;
    default:
        putnext(q, mp);
        return 0;
    }
}

/* mp (its data freed) retyped as an empty message of the given type, or a
 * fresh one if mp's data block is shared; NULL when out of memory. */
static mblk_t *trw_retype(mblk_t *mp, unsigned char type)
{
    if (mp->b_cont != NULL) {
        freemsg(mp->b_cont);
        mp->b_cont = NULL;
    }
    if (mp->b_datap->db_ref != 1) {
        freemsg(mp);
        if ((mp = allocb(0, BPRI_HI)) == NULL)
            return NULL;
    }
    mp->b_datap->db_type = type;
    mp->b_wptr = mp->b_rptr;
    return mp;
}

/* A TPI primitive coming up. */
static void trw_proto(queue_t *q, struct tirdwr *trw, mblk_t *mp)
{
    t_scalar_t prim;
    mblk_t *dp;

    if (mp->b_wptr - mp->b_rptr < (ptrdiff_t)sizeof(prim)) {
        trw_proto_error(q, mp);
        return;
    }
    memcpy(&prim, mp->b_rptr, sizeof(prim));
    switch (prim) {
    case T_DATA_IND:
        dp = unlinkb(mp);
        freeb(mp);
        if (dp == NULL || msgdsize(dp) == 0)
            freemsg(dp);
        else
            putnext(q, dp);
        return;
    case T_ORDREL_IND:
        trw->flags |= TRW_ORDREL;
        if ((mp = trw_retype(mp, M_DATA)) != NULL)
            putnext(q, mp);
        return;
    case T_DISCON_IND:
        trw->flags |= TRW_DISCON;
        dp = unlinkb(mp);
        if (dp != NULL && msgdsize(dp) > 0)
            putnext(q, dp);
        else
            freemsg(dp);
        if ((mp = trw_retype(mp, M_HANGUP)) != NULL)
            putnext(q, mp);
        return;
    default:
        trw_proto_error(q, mp);
        return;
    }
}

static int tirdwr_rput(queue_t *q, mblk_t *mp)
{
    struct tirdwr *trw = q->q_ptr;

    switch (mp->b_datap->db_type) {
    case M_PROTO:
    case M_PCPROTO:
        trw_proto(q, trw, mp);
        return 0;
    case M_FLUSH:
        ust_mod_flush(q, mp);
        putnext(q, mp);
        return 0;
    default:
        putnext(q, mp);
        return 0;
    }
}
