/* SPDX-License-Identifier: MIT */
/*
 * connld.c -- connld(7): unique connections to a server through a named
 * pipe end.
 *
 * A server pushes connld on a pipe end and fattach-es that end to a path.
 * Every open of the path then makes a new pipe: one end goes to the
 * server, as if sent with I_SENDFD on the attached end (the server takes it
 * with I_RECVFD on the other end, with the client's user and group ids), the
 * other end is what the open returns to the client.
 *
 * Where: in SVR4 connld's open routine makes the pipe and tells the stream
 * head which stream to hand out.  Here the head does that part itself: an
 * open of a name whose attached stream has connld as its top module is
 * recognised by the name's owner (ust_connld_open in sd_rdv_client.c, for opens
 * in this process and from other processes alike), so this module only marks
 * the stream.  Pushed anywhere else it passes every message on unchanged.
 */
#include <errno.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#include "modutil.h"

#define CONNLD_ID 5012

static int connld_put(queue_t *q, mblk_t *mp);

static struct module_info connld_minfo = {
    .mi_idnum = CONNLD_ID,
    .mi_idname = "connld",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 5120,
    .mi_lowat = 1024,
};

static struct qinit connld_rinit = {
    .qi_putp = connld_put,
    .qi_qopen = ust_mod_open,
    .qi_qclose = ust_mod_close,
    .qi_minfo = &connld_minfo,
};

static struct qinit connld_winit = {
    .qi_putp = connld_put,
    .qi_minfo = &connld_minfo,
};

static struct streamtab connld_info = {
    .st_rdinit = &connld_rinit,
    .st_wrinit = &connld_winit,
};

static struct fmodsw connld_fmod = {
    .f_name = "connld",
    .f_str = &connld_info,
    .f_flag = D_MP,
};

void ust_connld_register(void);

void ust_connld_register(void)
{
    int rc = register_strmod(&connld_fmod);
    if (rc < 0)
        cmn_err(CE_WARN, "connld: register_strmod failed (%d)", rc);
}

static int connld_put(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_FLUSH)
        ust_mod_flush(q, mp);
    putnext(q, mp);
    return 0;
}
