/* SPDX-License-Identifier: MIT */
/*
 * nullmod.c -- the null module: passes every message through unchanged.
 *
 * MT level: D_MP.  The module keeps no state, so its put procedures run
 * concurrently on any number of threads without a perimeter.
 * Flow control: none of its own.  It has no service procedures, so it never
 * queues; canputnext from the module above looks straight through it at the
 * next queue that has a service procedure.
 * M_FLUSH is honoured as a module must: the flagged sides of this pair are
 * flushed (they are always empty here, but a module copied from this one will
 * not be) and the message is passed on.
 */
#include <errno.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "modutil.h"

#define NULLMOD_ID 5001

static int nullmod_put(queue_t *q, mblk_t *mp);

static struct module_info nullmod_minfo = {
    .mi_idnum = NULLMOD_ID,
    .mi_idname = "nullmod",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit nullmod_rinit = {
    .qi_putp = nullmod_put,
    .qi_qopen = ust_mod_open,
    .qi_qclose = ust_mod_close,
    .qi_minfo = &nullmod_minfo,
};

static struct qinit nullmod_winit = {
    .qi_putp = nullmod_put,
    .qi_minfo = &nullmod_minfo,
};

static struct streamtab nullmod_info = {
    .st_rdinit = &nullmod_rinit,
    .st_wrinit = &nullmod_winit,
};

static struct fmodsw nullmod_fmod = {
    .f_name = "nullmod",
    .f_str = &nullmod_info,
    .f_flag = D_MP,
};

/* Registration from ust_builtin_register (declared in the executive's private
 * header, which modules do not include). */
void ust_nullmod_register(void);

void ust_nullmod_register(void)
{
    int rc = register_strmod(&nullmod_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "nullmod: register_strmod failed (%d)", rc);
}

/* Both sides: pass everything on; M_FLUSH flushes this pair first. */
static int nullmod_put(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_FLUSH)
        ust_mod_flush(q, mp);
    putnext(q, mp);
    return 0;
}
