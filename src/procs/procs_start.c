/* SPDX-License-Identifier: MIT */
/*
 * procs_start.c -- ust_procs_init: the cross-process layer's hooks in the
 * head and its fork hooks in the core (procs.h).
 */
#include <pthread.h>

#include "forksafe.h"
#include "procs.h"
#include "sd_names.h"
#include "sd_xpipe.h"

static int name_listen(int node, int *lfd)
{
    return ust_rdv_listen(UST_RDV_NAME, node, lfd);
}

static const struct ust_procs_ops procs_ops = {
    .xpipe_split = ust_xpipe_split,
    .xpipe_end_close = ust_xpipe_end_close,
    .xpipe_wput = ust_xpipe_wput,
    .xpipe_wsrv = ust_xpipe_wsrv,
    .xpipe_rput = ust_xpipe_rput,
    .xpipe_rsrv = ust_xpipe_rsrv,
    .xpipe_touch = ust_xpipe_touch,
    .xpipe_pull = ust_xpipe_pull,
    .xpipe_reader = ust_xpipe_reader,
    .xpipe_write = ust_xpipe_write,
    .xpipe_read = ust_xpipe_read,
    .xpipe_send = ust_xpipe_send,
    .xpipe_sent = ust_xpipe_sent,
    .xpipe_room = ust_xpipe_room,
    .xpipe_sendfd = ust_xpipe_sendfd,
    .name_listen = name_listen,
    .name_unlisten = ust_rdv_unlisten,
    .name_detach = ust_rdv_detach,
    .connld_open = ust_connld_open,
    .open_path = ust_sd_open_path,
};

static pthread_once_t procs_once = PTHREAD_ONCE_INIT;

static void procs_register(void)
{
    ust_sd_set_procs(&procs_ops);
    ust_xlog_init(); /* loggers across processes: the log driver's hooks */
    ust_fork_register(UST_FORK_XPIPE, ust_xpipe_fork_prepare, ust_xpipe_fork_parent,
                      ust_xpipe_fork_child);
    ust_fork_register(UST_FORK_FIFO_NAME, ust_fifo_name_fork_prepare, ust_fifo_name_fork_parent,
                      ust_fifo_name_fork_child);
    ust_fork_register(UST_FORK_RDV, ust_rdv_fork_prepare, ust_rdv_fork_parent, ust_rdv_fork_child);
    ust_fork_register(UST_FORK_RELAY, ust_relay_fork_prepare, ust_relay_fork_parent,
                      ust_relay_fork_child);
}

void ust_procs_init(void)
{
    pthread_once(&procs_once, procs_register);
}
