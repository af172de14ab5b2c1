/* SPDX-License-Identifier: MIT */
/*
 * tl.c -- the loopback TPI transports ticlts (T_CLTS), ticots (T_COTS) and
 * ticotsord (T_COTS_ORD), like Solaris' tl: devices, open and close, the
 * write-side dispatch, T_INFO_REQ, T_ADDR_REQ, T_CAPABILITY_REQ, T_BIND_REQ,
 * T_UNBIND_REQ, M_FLUSH, and the helpers the other tl_*.c files share.
 * Connections and data are in tl_cots.c, unit data in tl_clts.c, option
 * management in tl_opt.c; docs/TPI.md is the user's description.
 *
 * MT level: D_MP | D_CLONE.  Every open is a new endpoint.  The driver locks
 * for itself with the one tl_lock (tl.h has the legend).  Primitives that are
 * acknowledged are handled in the put procedure and answered at once (so a
 * TS_WACK_* state is never seen); data primitives (T_DATA_REQ, T_EXDATA_REQ,
 * T_OPTDATA_REQ, T_ORDREL_REQ, M_DATA, T_UNITDATA_REQ) are queued (putq) and
 * the write service procedure moves them to the peer's read queue.
 * Flow control: the service procedure forwards only while bcanputnext on the
 * peer's read queue allows (band 1 for expedited data); otherwise it puts
 * the message back and returns.  When the peer's stream head drains,
 * back-enabling reaches the peer's read queue (the driver's, the first with a
 * service procedure), whose service procedure qenables the write queue of the
 * endpoint(s) sending to it.  So a slow reader fills the sender's write queue
 * and then blocks the sender's stream head: nothing is lost.
 * Errors: a primitive that is acknowledged gets T_ERROR_ACK (TOUTSTATE in the
 * wrong state, TSYSERR/EINVAL when shorter than its structure, the TPI error
 * where TPI has one); one that is not (data, an unknown PRIM_type, a message
 * shorter than a PRIM_type) gets M_ERROR(EPROTO), as TPI specifies.
 */
#include <errno.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>
#include <sys/stream.h>

#include "forksafe.h"
#include "tl.h"

#define TL_ID 5400

pthread_mutex_t tl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tl_cv = PTHREAD_COND_INITIALIZER; /* with tl_lock: a busy count fell to 0 */
struct tl_ep *tl_eps;                                   /* TL: every open endpoint */
static t_uscalar_t tl_lastid;                           /* TL: last ACCEPTOR_id */

static struct tl_dev tl_devs[3] = {
    {.name = "ticlts", .servtype = T_CLTS},
    {.name = "ticots", .servtype = T_COTS},
    {.name = "ticotsord", .servtype = T_COTS_ORD},
};

static int tl_open_clts(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int tl_open_cots(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int tl_open_cotsord(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int tl_close(queue_t *q, int oflag, cred_t *crp);
static int tl_rput(queue_t *q, mblk_t *mp);
static int tl_rsrv(queue_t *q);
static int tl_wput(queue_t *q, mblk_t *mp);
static int tl_wsrv(queue_t *q);

static struct module_info tl_minfo = {
    .mi_idnum = TL_ID,
    .mi_idname = "tl",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = TL_HIWAT,
    .mi_lowat = TL_LOWAT,
};

#define TL_RINIT(open)                                                                             \
    {                                                                                              \
        .qi_putp = tl_rput, .qi_srvp = tl_rsrv, .qi_qopen = open, .qi_qclose = tl_close,           \
        .qi_minfo = &tl_minfo,                                                                     \
    }
static struct qinit tl_rinit[3] = {TL_RINIT(tl_open_clts), TL_RINIT(tl_open_cots),
                                   TL_RINIT(tl_open_cotsord)};
static struct qinit tl_winit = {
    .qi_putp = tl_wput,
    .qi_srvp = tl_wsrv,
    .qi_minfo = &tl_minfo,
};
static struct streamtab tl_info[3] = {
    {.st_rdinit = &tl_rinit[0], .st_wrinit = &tl_winit},
    {.st_rdinit = &tl_rinit[1], .st_wrinit = &tl_winit},
    {.st_rdinit = &tl_rinit[2], .st_wrinit = &tl_winit},
};
static struct cdevsw tl_cdev[3] = {
    {.d_name = "ticlts", .d_str = &tl_info[0], .d_flag = D_MP | D_CLONE},
    {.d_name = "ticots", .d_str = &tl_info[1], .d_flag = D_MP | D_CLONE},
    {.d_name = "ticotsord", .d_str = &tl_info[2], .d_flag = D_MP | D_CLONE},
};

/* Registration from ust_builtin_register. */
void ust_tl_register(void);

/* fork() (src/core/forksafe.h): tl_lock is held briefly and nothing ranked
 * before UST_FORK_DRIVER is taken under it.  In the child the endpoints are
 * the parent's streams': the list starts empty. */
static void tl_fork_prepare(void)
{
    pthread_mutex_lock(&tl_lock);
}

static void tl_fork_parent(void)
{
    pthread_mutex_unlock(&tl_lock);
}

static void tl_fork_child(void)
{
    tl_eps = NULL;
    pthread_cond_init(&tl_cv, NULL);
    pthread_mutex_unlock(&tl_lock);
}

/*
 * ust_tl_register -- register "ticlts", "ticots" and "ticotsord".
 *   Context: ust_builtin_register, once.  Failure is reported with cmn_err.
 */
void ust_tl_register(void)
{
    ust_fork_register(UST_FORK_DRIVER, tl_fork_prepare, tl_fork_parent, tl_fork_child);
    for (int i = 0; i < 3; i++) {
        int rc = register_strdev(&tl_cdev[i], 0);
        if (rc < 0)
            cmn_err(CE_WARN, "tl: register_strdev %s failed (%d)", tl_cdev[i].d_name, rc);
    }
}

/* ------------------------------------------------------------------------ */
/* Claims and notifications                                                  */
/* ------------------------------------------------------------------------ */

struct tl_ep *tl_hold_locked(struct tl_ep *ep)
{
    if (ep == NULL || ep->closing)
        return NULL;
    ep->busy++;
    return ep;
}

void tl_rele(struct tl_ep *ep)
{
    pthread_mutex_lock(&tl_lock);
    if (--ep->busy == 0 && ep->closing)
        pthread_cond_broadcast(&tl_cv);
    pthread_mutex_unlock(&tl_lock);
}

void tl_notes_init(struct tl_notes *nt)
{
    nt->n = 0;
    nt->cap = (int)(sizeof(nt->small) / sizeof(nt->small[0]));
    nt->v = nt->small;
}

void tl_note(struct tl_notes *nt, struct tl_ep *ep, mblk_t *mp)
{
    if (mp == NULL)
        return; /* out of memory: the indication is lost (docs/TPI.md) */
    if (tl_hold_locked(ep) == NULL) {
        freemsg(mp);
        return;
    }
    if (nt->n == nt->cap) {
        struct tl_note *v = kmem_alloc(sizeof(*v) * (size_t)nt->cap * 2, KM_SLEEP);
        memcpy(v, nt->v, sizeof(*v) * (size_t)nt->n);
        if (nt->v != nt->small)
            kmem_free(nt->v, sizeof(*v) * (size_t)nt->cap);
        nt->v = v;
        nt->cap *= 2;
    }
    nt->v[nt->n].ep = ep;
    nt->v[nt->n].mp = mp;
    nt->n++;
}

void tl_notes_deliver(struct tl_notes *nt)
{
    for (int i = 0; i < nt->n; i++) {
        putnext(nt->v[i].ep->rq, nt->v[i].mp);
        tl_rele(nt->v[i].ep);
    }
    if (nt->v != nt->small)
        kmem_free(nt->v, sizeof(*nt->v) * (size_t)nt->cap);
    tl_notes_init(nt);
}

/* ------------------------------------------------------------------------ */
/* Building primitives                                                       */
/* ------------------------------------------------------------------------ */

mblk_t *tl_prim(mblk_t *mp, int type, size_t size, size_t extra)
{
    mblk_t *bp;

    if (mp != NULL && mp->b_datap->db_ref == 1 &&
        (size_t)(mp->b_datap->db_lim - mp->b_datap->db_base) >= size + extra) {
        bp = mp;
        if (bp->b_cont != NULL) {
            freemsg(bp->b_cont);
            bp->b_cont = NULL;
        }
        bp->b_rptr = bp->b_datap->db_base;
    } else {
        if (mp != NULL)
            freemsg(mp);
        bp = allocb(size + extra, BPRI_MED);
        if (bp == NULL)
            return NULL;
    }
    bp->b_datap->db_type = (unsigned char)type;
    bp->b_band = 0;
    memset(bp->b_rptr, 0, size);
    bp->b_wptr = bp->b_rptr + size;
    return bp;
}

t_scalar_t tl_append(mblk_t *bp, const void *p, size_t len)
{
    t_scalar_t off = (t_scalar_t)(bp->b_wptr - bp->b_rptr);

    if (len > 0)
        memcpy(bp->b_wptr, p, len);
    bp->b_wptr += len;
    return off;
}

void tl_info_reply(queue_t *q, mblk_t *mp, const struct T_info_ack *ia)
{
    mblk_t *bp = tl_prim(mp, M_PCPROTO, sizeof(*ia), 0);

    if (bp == NULL)
        return;
    memcpy(bp->b_rptr, ia, sizeof(*ia));
    qreply(q, bp);
}

void tl_capability_reply(queue_t *q, mblk_t *mp, const struct T_info_ack *ia, t_uscalar_t id)
{
    struct T_capability_req cr;
    struct T_capability_ack *ca;
    mblk_t *bp;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(cr)) {
        tl_error_ack(q, mp, T_CAPABILITY_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&cr, mp->b_rptr, sizeof(cr));
    bp = tl_prim(mp, M_PCPROTO, sizeof(*ca), 0);
    if (bp == NULL)
        return;
    ca = (struct T_capability_ack *)(void *)bp->b_rptr;
    ca->PRIM_type = T_CAPABILITY_ACK;
    ca->CAP_bits1 = cr.CAP_bits1 & (TC1_INFO | TC1_ACCEPTOR_ID);
    if (ca->CAP_bits1 & TC1_INFO)
        ca->INFO_ack = *ia;
    if (ca->CAP_bits1 & TC1_ACCEPTOR_ID)
        ca->ACCEPTOR_id = id;
    qreply(q, bp);
}

void tl_ok_ack(queue_t *q, mblk_t *mp, t_scalar_t prim)
{
    mblk_t *bp = tl_prim(mp, M_PCPROTO, sizeof(struct T_ok_ack), 0);
    struct T_ok_ack *ok;

    if (bp == NULL)
        return;
    ok = (struct T_ok_ack *)(void *)bp->b_rptr;
    ok->PRIM_type = T_OK_ACK;
    ok->CORRECT_prim = prim;
    qreply(q, bp);
}

void tl_error_ack(queue_t *q, mblk_t *mp, t_scalar_t prim, t_scalar_t tli, t_scalar_t unix_err)
{
    mblk_t *bp = tl_prim(mp, M_PCPROTO, sizeof(struct T_error_ack), 0);
    struct T_error_ack *ea;

    if (bp == NULL)
        return;
    ea = (struct T_error_ack *)(void *)bp->b_rptr;
    ea->PRIM_type = T_ERROR_ACK;
    ea->ERROR_prim = prim;
    ea->TLI_error = tli;
    ea->UNIX_error = tli == TSYSERR ? unix_err : 0;
    qreply(q, bp);
}

void tl_merror(queue_t *q, mblk_t *mp)
{
    mblk_t *bp = tl_prim(mp, M_ERROR, 1, 0);

    if (bp == NULL)
        return;
    *bp->b_rptr = EPROTO;
    qreply(q, bp);
}

mblk_t *tl_discon_ind(t_scalar_t reason, t_scalar_t seq)
{
    mblk_t *bp = tl_prim(NULL, M_PROTO, sizeof(struct T_discon_ind), 0);
    struct T_discon_ind *di;

    if (bp == NULL)
        return NULL;
    di = (struct T_discon_ind *)(void *)bp->b_rptr;
    di->PRIM_type = T_DISCON_IND;
    di->DISCON_reason = reason;
    di->SEQ_number = seq;
    return bp;
}

int tl_range_ok(const mblk_t *mp, t_scalar_t off, t_scalar_t len)
{
    size_t size = (size_t)(mp->b_wptr - mp->b_rptr);

    if (len == 0)
        return 1;
    if (len < 0 || off < 0)
        return 0;
    return (size_t)off <= size && (size_t)len <= size - (size_t)off;
}

int tl_opts_ok(const unsigned char *p, size_t len)
{
    size_t at = 0;

    if (((uintptr_t)p & (_TPI_ALIGN_SIZE - 1)) != 0 && len > 0)
        return 0;
    while (at < len) {
        struct T_opthdr oh;
        if (len - at < sizeof(oh))
            return 0;
        memcpy(&oh, p + at, sizeof(oh));
        if (oh.len < sizeof(oh) || oh.len > len - at)
            return 0;
        at += _TPI_ALIGN_TOPT(oh.len);
    }
    return 1;
}

struct tl_ep *tl_find_addr(struct tl_dev *dev, const unsigned char *a, size_t alen)
{
    for (struct tl_ep *ep = tl_eps; ep != NULL; ep = ep->next)
        if (ep->dev == dev && ep->ns && !ep->closing && ep->alen == alen &&
            memcmp(ep->addr, a, alen) == 0)
            return ep;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */
/* ------------------------------------------------------------------------ */

static int tl_open(queue_t *q, dev_t *devp, int sflag, struct tl_dev *dev)
{
    struct tl_ep *ep;

    if (q->q_ptr != NULL)
        return 0;
    if (sflag != CLONEOPEN && sflag != DRVOPEN)
        return ENXIO;
    ep = kmem_zalloc(sizeof(*ep), KM_SLEEP);
    ep->dev = dev;
    ep->rq = q;
    ep->state = TS_UNBND;
    tl_opts_default(&ep->opt);
    pthread_mutex_lock(&tl_lock);
    if (++tl_lastid == 0)
        tl_lastid = 1;
    ep->id = tl_lastid;
    ep->next = tl_eps;
    tl_eps = ep;
    pthread_mutex_unlock(&tl_lock);
    *devp = makedevice(getmajor(*devp), (minor_t)(ep->id & 0x3ffff));
    q->q_ptr = ep;
    WR(q)->q_ptr = ep;
    qprocson(q);
    return 0;
}

static int tl_open_clts(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    return tl_open(q, devp, sflag, &tl_devs[0]);
}

static int tl_open_cots(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    return tl_open(q, devp, sflag, &tl_devs[1]);
}

static int tl_open_cotsord(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)oflag;
    (void)crp;
    return tl_open(q, devp, sflag, &tl_devs[2]);
}

/*
 * tl_close -- the endpoint goes: its connection (if any) is disconnected,
 *   indications it had queued at a listener are withdrawn, connectors waiting
 *   on it (a listener) are refused, unit-data senders waiting on it are
 *   re-enabled (they then get T_UDERROR_IND).  Then wait until no other
 *   thread is inside our read queue, turn procedures off and free.
 */
static int tl_close(queue_t *q, int oflag, cred_t *crp)
{
    struct tl_ep *ep = q->q_ptr;
    struct tl_notes nt;

    (void)oflag;
    (void)crp;
    tl_notes_init(&nt);
    pthread_mutex_lock(&tl_lock);
    ep->closing = 1;
    if (ep->dev->servtype == T_CLTS)
        tl_clts_wake(ep, 1);
    else
        tl_cots_close(ep, &nt);
    pthread_mutex_unlock(&tl_lock);
    tl_notes_deliver(&nt);

    pthread_mutex_lock(&tl_lock);
    while (ep->busy > 0)
        pthread_cond_wait(&tl_cv, &tl_lock);
    for (struct tl_ep **pp = &tl_eps; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == ep) {
            *pp = ep->next;
            break;
        }
    }
    pthread_mutex_unlock(&tl_lock);
    qprocsoff(q);
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    kmem_free(ep, sizeof(*ep));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Read side                                                                 */
/* ------------------------------------------------------------------------ */

/* Everything put here comes from a peer's write side: pass it up. */
static int tl_rput(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

/* Back-enabled when our stream head drained: let the senders go on. */
static int tl_rsrv(queue_t *q)
{
    struct tl_ep *ep = q->q_ptr;

    pthread_mutex_lock(&tl_lock);
    if (ep->dev->servtype == T_CLTS)
        tl_clts_wake(ep, 0);
    else if (ep->peer != NULL && !ep->peer->closing)
        qenable(WR(ep->peer->rq));
    pthread_mutex_unlock(&tl_lock);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Information, addresses, binding                                           */
/* ------------------------------------------------------------------------ */

/* The T_info_ack of ep (tl_lock held). */
static void tl_info_fill(const struct tl_ep *ep, struct T_info_ack *ia)
{
    int clts = ep->dev->servtype == T_CLTS;

    ia->PRIM_type = T_INFO_ACK;
    ia->TSDU_size = clts ? TL_TIDU : T_INFINITE;
    ia->ETSDU_size = clts ? T_INVALID : T_INFINITE;
    ia->CDATA_size = T_INVALID;
    ia->DDATA_size = T_INVALID;
    ia->ADDR_size = TL_ADDR_MAX;
    ia->OPT_size = TL_OPT_MAX;
    ia->TIDU_size = TL_TIDU;
    ia->SERV_type = ep->dev->servtype;
    ia->CURRENT_state = ep->state;
    ia->PROVIDER_flag = SENDZERO | XPG4_1;
}

/* T_INFO_REQ and T_CAPABILITY_REQ: the ack from a snapshot (tl.c). */
static void tl_info_snapshot(queue_t *q, struct T_info_ack *ia)
{
    struct tl_ep *ep = q->q_ptr;

    pthread_mutex_lock(&tl_lock);
    tl_info_fill(ep, ia);
    pthread_mutex_unlock(&tl_lock);
}

static void tl_info_req(queue_t *q, mblk_t *mp)
{
    struct T_info_ack ia;

    tl_info_snapshot(q, &ia);
    tl_info_reply(q, mp, &ia);
}

static void tl_capability_req(queue_t *q, mblk_t *mp)
{
    const struct tl_ep *ep = q->q_ptr;
    struct T_info_ack ia;

    tl_info_snapshot(q, &ia);
    tl_capability_reply(q, mp, &ia, ep->id);
}

static void tl_addr_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    struct T_addr_ack *aa;
    mblk_t *bp = tl_prim(mp, M_PCPROTO, sizeof(*aa), 2 * TL_ADDR_MAX);
    int conn;

    if (bp == NULL)
        return;
    aa = (struct T_addr_ack *)(void *)bp->b_rptr;
    aa->PRIM_type = T_ADDR_ACK;
    pthread_mutex_lock(&tl_lock);
    conn = ep->state == TS_DATA_XFER || ep->state == TS_WIND_ORDREL ||
           ep->state == TS_WREQ_ORDREL;
    if (ep->state != TS_UNBND && ep->alen > 0) {
        aa->LOCADDR_length = (t_scalar_t)ep->alen;
        aa->LOCADDR_offset = tl_append(bp, ep->addr, ep->alen);
    }
    if (conn && ep->ralen > 0) {
        aa->REMADDR_length = (t_scalar_t)ep->ralen;
        aa->REMADDR_offset = tl_append(bp, ep->raddr, ep->ralen);
    }
    pthread_mutex_unlock(&tl_lock);
    qreply(q, bp);
}

/* Under tl_lock: choose a fresh 4-byte address for ep; 0 or TNOADDR. */
static int tl_autoaddr(struct tl_ep *ep)
{
    unsigned char a[4];

    for (uint64_t tries = 0; tries <= UINT32_MAX; tries++) {
        uint32_t v = ++ep->dev->autoaddr;
        a[0] = (unsigned char)(v >> 24);
        a[1] = (unsigned char)(v >> 16);
        a[2] = (unsigned char)(v >> 8);
        a[3] = (unsigned char)v;
        if (tl_find_addr(ep->dev, a, sizeof(a)) == NULL) {
            memcpy(ep->addr, a, sizeof(a));
            ep->alen = sizeof(a);
            return 0;
        }
    }
    return TNOADDR;
}

/*
 * T_BIND_REQ: in TS_UNBND only.  ADDR_length 0 asks for a unique address;
 * an address bound already in the device gives TADDRBUSY; a length beyond
 * ADDR_size or outside the message TBADADDR.  CONIND_number is reduced to
 * TL_QLEN_MAX (0 on ticlts).
 */
static void tl_bind_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    struct T_bind_req br;
    struct T_bind_ack *ba;
    int err = 0;
    mblk_t *bp;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(br)) {
        tl_error_ack(q, mp, T_BIND_REQ, TSYSERR, EINVAL);
        return;
    }
    memcpy(&br, mp->b_rptr, sizeof(br));
    pthread_mutex_lock(&tl_lock);
    if (ep->state != TS_UNBND)
        err = TOUTSTATE;
    else if (br.ADDR_length < 0 || br.ADDR_length > TL_ADDR_MAX ||
             !tl_range_ok(mp, br.ADDR_offset, br.ADDR_length))
        err = TBADADDR;
    else if (br.ADDR_length > 0 &&
             tl_find_addr(ep->dev, mp->b_rptr + br.ADDR_offset, (size_t)br.ADDR_length))
        err = TADDRBUSY;
    else if (br.ADDR_length > 0) {
        memcpy(ep->addr, mp->b_rptr + br.ADDR_offset, (size_t)br.ADDR_length);
        ep->alen = (size_t)br.ADDR_length;
    } else
        err = tl_autoaddr(ep);
    if (err == 0) {
        ep->ns = 1;
        ep->qlen = ep->dev->servtype == T_CLTS ? 0
                   : br.CONIND_number > TL_QLEN_MAX ? TL_QLEN_MAX
                                                     : br.CONIND_number;
        ep->state = TS_IDLE;
    }
    pthread_mutex_unlock(&tl_lock);
    if (err != 0) {
        tl_error_ack(q, mp, T_BIND_REQ, err, 0);
        return;
    }
    bp = tl_prim(mp, M_PCPROTO, sizeof(*ba), TL_ADDR_MAX);
    if (bp == NULL)
        return;
    ba = (struct T_bind_ack *)(void *)bp->b_rptr;
    ba->PRIM_type = T_BIND_ACK;
    pthread_mutex_lock(&tl_lock);
    ba->CONIND_number = ep->qlen;
    ba->ADDR_length = (t_scalar_t)ep->alen;
    ba->ADDR_offset = tl_append(bp, ep->addr, ep->alen);
    pthread_mutex_unlock(&tl_lock);
    qreply(q, bp);
}

/* T_UNBIND_REQ: in TS_IDLE only.  As TPI asks, M_FLUSH(FLUSHRW) goes up first. */
static void tl_unbind_req(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    int err = 0;

    pthread_mutex_lock(&tl_lock);
    if (ep->state != TS_IDLE) {
        err = TOUTSTATE;
    } else {
        ep->state = TS_UNBND;
        ep->ns = 0;
        ep->alen = 0;
        ep->qlen = 0;
        if (ep->dev->servtype == T_CLTS)
            tl_clts_wake(ep, 1);
    }
    pthread_mutex_unlock(&tl_lock);
    if (err != 0) {
        tl_error_ack(q, mp, T_UNBIND_REQ, err, 0);
        return;
    }
    flushq(q, FLUSHDATA);
    putnextctl1(RD(q), M_FLUSH, FLUSHRW);
    tl_ok_ack(q, mp, T_UNBIND_REQ);
}

/* ------------------------------------------------------------------------ */
/* Write side                                                                */
/* ------------------------------------------------------------------------ */

static void tl_flushq(queue_t *q, const mblk_t *mp)
{
    if ((*mp->b_rptr & FLUSHBAND) && mp->b_wptr - mp->b_rptr >= 2)
        flushband(q, mp->b_rptr[1], FLUSHDATA);
    else
        flushq(q, FLUSHDATA);
}

/* M_FLUSH: flush our own queues; FLUSHR turns around (the peer is not told). */
static void tl_wflush(queue_t *q, mblk_t *mp)
{
    if (mp->b_wptr <= mp->b_rptr) {
        freemsg(mp);
        return;
    }
    if (*mp->b_rptr & FLUSHW)
        tl_flushq(q, mp);
    if (*mp->b_rptr & FLUSHR) {
        tl_flushq(RD(q), mp);
        *mp->b_rptr &= ~FLUSHW;
        qreply(q, mp);
        return;
    }
    freemsg(mp);
}

/* A TPI primitive on the write side. */
static void tl_wproto(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;
    int clts = ep->dev->servtype == T_CLTS;
    t_scalar_t prim;

    if ((size_t)(mp->b_wptr - mp->b_rptr) < sizeof(prim)) {
        tl_merror(q, mp);
        return;
    }
    memcpy(&prim, mp->b_rptr, sizeof(prim));
    switch (prim) {
    case T_INFO_REQ:
        tl_info_req(q, mp);
        break;
    case T_ADDR_REQ:
        tl_addr_req(q, mp);
        break;
    case T_CAPABILITY_REQ:
        tl_capability_req(q, mp);
        break;
    case T_BIND_REQ:
        tl_bind_req(q, mp);
        break;
    case T_UNBIND_REQ:
        tl_unbind_req(q, mp);
        break;
    case T_OPTMGMT_REQ:
        tl_optmgmt_req(q, mp);
        break;
    case T_CONN_REQ:
    case T_CONN_RES:
    case T_DISCON_REQ:
        if (clts)
            tl_error_ack(q, mp, prim, TNOTSUPPORT, 0);
        else if (prim == T_CONN_REQ)
            tl_conn_req(q, mp);
        else if (prim == T_CONN_RES)
            tl_conn_res(q, mp);
        else
            tl_discon_req(q, mp);
        break;
    case T_DATA_REQ:
    case T_EXDATA_REQ:
    case T_OPTDATA_REQ:
    case T_ORDREL_REQ:
        if (clts || (prim == T_ORDREL_REQ && ep->dev->servtype != T_COTS_ORD))
            tl_merror(q, mp);
        else
            tl_data_req(q, mp, prim);
        break;
    case T_UNITDATA_REQ:
        if (clts)
            tl_unitdata_req(q, mp);
        else
            tl_merror(q, mp);
        break;
    default:
        tl_merror(q, mp);
        break;
    }
}

static int tl_wput(queue_t *q, mblk_t *mp)
{
    struct tl_ep *ep = q->q_ptr;

    switch (mp->b_datap->db_type) {
    case M_DATA:
        if (ep->dev->servtype == T_CLTS)
            tl_merror(q, mp);
        else
            tl_data_req(q, mp, -1);
        break;
    case M_PROTO:
    case M_PCPROTO:
        tl_wproto(q, mp);
        break;
    case M_FLUSH:
        tl_wflush(q, mp);
        break;
    case M_IOCTL:
        miocnak(q, mp, 0, EINVAL);
        break;
    default:
        freemsg(mp);
        break;
    }
    return 0;
}

static int tl_wsrv(queue_t *q)
{
    struct tl_ep *ep = q->q_ptr;

    if (ep->dev->servtype == T_CLTS)
        return tl_clts_wsrv(q);
    return tl_cots_wsrv(q);
}
