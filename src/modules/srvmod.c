/* SPDX-License-Identifier: MIT */
/*
 * srvmod.c -- the service module: passes every message through, by way of
 * its service procedures.
 *
 * MT level: D_MP.  No module state; putq/getq/putbq do their own locking and
 * the executive never runs a queue's service procedure on two threads at once.
 * Flow control: ordinary messages are queued by the put procedure and moved on
 * by the service procedure only while bcanputnext() allows their band; when
 * the next queue is full the message is put back and the service procedure
 * returns, to be back-enabled when the next queue drains.  Its own queues
 * (hiwat 5120, lowat 1024) fill up in turn and push back on the module above.
 * High-priority messages are never queued: the put procedure passes them on at
 * once.  M_FLUSH flushes this pair's queues (per FLUSHR/FLUSHW, by band with
 * FLUSHBAND) and is passed on.
 */
#include <errno.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "modutil.h"

#define SRVMOD_ID 5002

static int srvmod_put(queue_t *q, mblk_t *mp);
static int srvmod_srv(queue_t *q);

static struct module_info srvmod_minfo = {
    .mi_idnum = SRVMOD_ID,
    .mi_idname = "srvmod",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit srvmod_rinit = {
    .qi_putp = srvmod_put,
    .qi_srvp = srvmod_srv,
    .qi_qopen = ust_mod_open,
    .qi_qclose = ust_mod_close,
    .qi_minfo = &srvmod_minfo,
};

static struct qinit srvmod_winit = {
    .qi_putp = srvmod_put,
    .qi_srvp = srvmod_srv,
    .qi_minfo = &srvmod_minfo,
};

static struct streamtab srvmod_info = {
    .st_rdinit = &srvmod_rinit,
    .st_wrinit = &srvmod_winit,
};

static struct fmodsw srvmod_fmod = {
    .f_name = "srvmod",
    .f_str = &srvmod_info,
    .f_flag = D_MP,
};

/* Registration from ust_builtin_register (declared in the executive's private
 * header, which modules do not include). */
void ust_srvmod_register(void);

void ust_srvmod_register(void)
{
    int rc = register_strmod(&srvmod_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "srvmod: register_strmod failed (%d)", rc);
}

/* Both sides: high priority passes at once, everything else is queued. */
static int srvmod_put(queue_t *q, mblk_t *mp)
{
    unsigned char type = mp->b_datap->db_type;

    if (pcmsg(type)) {
        if (type == M_FLUSH)
            ust_mod_flush(q, mp);
        putnext(q, mp);
        return 0;
    }
    if (!putq(q, mp))
        freemsg(mp); /* only when a band could not be allocated */
    return 0;
}

/* Both sides: move queued messages on while the next queue accepts them. */
static int srvmod_srv(queue_t *q)
{
    mblk_t *mp;

    while ((mp = getq(q)) != NULL) {
        if (pcmsg(mp->b_datap->db_type) || bcanputnext(q, mp->b_band)) {
            putnext(q, mp);
        } else {
            putbq(q, mp);
            return 0;
        }
    }
    return 0;
}
