/* SPDX-License-Identifier: MIT */
/*
 * pipemod.c -- the pipe flushing module: swaps the read and write flush bits
 * of every M_FLUSH that passes through it.
 *
 * Why: a STREAMS-based pipe has no driver to turn an M_FLUSH around.  A flush
 * of one end's write side (FLUSHW) must flush, beyond the twist, the other
 * end's read side; but the message arrives there travelling upstream, where
 * queues honour FLUSHR, not FLUSHW.  Pushed on either end of a pipe (its
 * "midpoint"), pipemod swaps FLUSHR and FLUSHW so that every queue on the far
 * side of the twist flushes the queues the sender meant.  A message crossing
 * the twist passes pipemod once whichever way it travels, so both of its put
 * procedures swap (as the SVR4 pipemod does).  FLUSHRW is left alone, and
 * FLUSHBAND with its band byte is kept.
 *
 * MT level: D_MP.  No state: the put procedures run concurrently on any number
 * of threads; the only write is to the M_FLUSH the caller handed over.
 * Flow control: none of its own; there are no service procedures, so
 * canputnext from above looks straight through to the next queue that has one.
 * Everything but M_FLUSH passes unchanged.
 */
#include <errno.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "modutil.h"

#define PIPEMOD_ID 5303

static int pipemod_put(queue_t *q, mblk_t *mp);

static struct module_info pipemod_minfo = {
    .mi_idnum = PIPEMOD_ID,
    .mi_idname = "pipemod",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit pipemod_rinit = {
    .qi_putp = pipemod_put,
    .qi_qopen = ust_mod_open,
    .qi_qclose = ust_mod_close,
    .qi_minfo = &pipemod_minfo,
};

static struct qinit pipemod_winit = {
    .qi_putp = pipemod_put,
    .qi_minfo = &pipemod_minfo,
};

static struct streamtab pipemod_info = {
    .st_rdinit = &pipemod_rinit,
    .st_wrinit = &pipemod_winit,
};

static struct fmodsw pipemod_fmod = {
    .f_name = "pipemod",
    .f_str = &pipemod_info,
    .f_flag = D_MP,
};

/* Registration from ust_builtin_register (declared in the executive's private
 * header, which modules do not include). */
void ust_pipemod_register(void);

/*
 * ust_pipemod_register -- register "pipemod".
 *   Context: ust_builtin_register, once.  Failure is reported with cmn_err.
 */
void ust_pipemod_register(void)
{
    int rc = register_strmod(&pipemod_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "pipemod: register_strmod failed (%d)", rc);
}

/*
 * pipemod_put -- both sides.  An M_FLUSH naming exactly one of FLUSHR and
 *   FLUSHW has the two swapped (other bits, FLUSHBAND and the band byte, are
 *   kept); every message is then passed on.  An M_FLUSH without its flag byte
 *   is passed on untouched (the stream head and drivers ignore it).
 *   Context: put procedure, any thread; no lock.
 */
static int pipemod_put(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_FLUSH && mp->b_wptr > mp->b_rptr) {
        unsigned char flag = *mp->b_rptr;
        unsigned char rw = flag & FLUSHRW;
        if (rw == FLUSHR || rw == FLUSHW)
            *mp->b_rptr = (unsigned char)((flag & ~FLUSHRW) | (rw ^ FLUSHRW));
    }
    putnext(q, mp);
    return 0;
}
