/* SPDX-License-Identifier: MIT */
/*
 * builtins.c -- the drivers and modules compiled into the library.
 *
 * Each lives in its own file under src/drivers or src/modules and exports one
 * registration function; this is the list of them.  ust_init runs it once.
 */
#include "strcore.h"

/* Registration functions of built-ins not declared in strcore.h. */
void ust_loop_register(void);    /* src/drivers/loop.c */
void ust_pipemod_register(void); /* src/modules/pipemod.c */
void ust_mux_register(void);     /* src/drivers/mux.c */
void ust_sad_register(void);     /* src/drivers/sad.c (issue 4) */
void ust_log_register(void);     /* src/drivers/log.c (issue 4: log driver) */

/*
 * ust_builtin_register -- register every built-in driver and module.
 *   Context: ust_init (once per process).  A failed registration is reported
 *   with cmn_err(CE_WARN) by the file concerned and does not stop the others.
 */
void ust_builtin_register(void)
{
    ust_echo_register();
    ust_nuls_register();
    ust_nullmod_register();
    ust_srvmod_register();
    ust_loop_register();
    ust_pipemod_register();
    ust_mux_register();
    ust_sad_register();
    ust_log_register(); /* issue 4: log driver */
}
