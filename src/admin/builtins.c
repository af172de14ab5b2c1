/* SPDX-License-Identifier: MIT */
/*
 * builtins.c -- the drivers and modules compiled into the library.
 *
 * Each lives in its own file under src/drivers, src/modules or (sad) here,
 * and exports one registration function; this is the list of them.  The
 * executive cannot call up to it: start.c installs ust_builtin_register as
 * the executive's init hook (ust_set_init_hook), which ust_init runs.
 */
#include <pthread.h>

#include "builtins.h"

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_register_all(void)
{
    ust_echo_register();
    ust_nuls_register();
    ust_nullmod_register();
    ust_srvmod_register();
    ust_loop_register();
    ust_pipemod_register();
    ust_timod_register();
    ust_tirdwr_register();
    ust_mux_register();
    ust_sad_register();
    ust_log_register(); /* issue 4: log driver */
    ust_tl_register();  /* issue 11: ticlts, ticots, ticotsord */
    ust_udp_register(); /* issue 12: udp */
    ust_tcp_register(); /* issue 12: tcp */
    ust_rawip_register(); /* issue 12: rawip (after udp) */
    ust_connld_register(); /* issue 13: connld */
    ust_fifodev_register(); /* issue 21: fifo, sfx, pipe in the registry */
    ust_sc_register();      /* issue 21: the sc module */
}

void ust_builtin_register(void)
{
    pthread_once(&builtin_once, builtin_register_all);
}
