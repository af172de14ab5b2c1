/* SPDX-License-Identifier: MIT */
/*
 * builtins.h -- the drivers and modules compiled into the library (private;
 * src/admin/builtins.c).
 */
#ifndef UST_BUILTINS_H
#define UST_BUILTINS_H

/*
 * ust_builtin_register -- register every built-in driver and module, once
 *   per process; the executive's init hook (installed by start.c, run by
 *   ust_init).
 *   Context: any thread; idempotent and thread-safe (pthread_once: a second
 *   caller waits until the first has finished).  The registrations call
 *   ust_init, which skips the hook on this thread meanwhile.  A failed
 *   registration is reported with cmn_err(CE_WARN) by the file concerned
 *   and does not stop the others.
 */
void ust_builtin_register(void);

/* The registration function of each built-in file.  Drivers and modules do
 * not include this layer's headers: each file declares its own prototype. */
void ust_echo_register(void);    /* src/drivers/echo.c */
void ust_nuls_register(void);    /* src/drivers/nuls.c */
void ust_loop_register(void);    /* src/drivers/loop.c */
void ust_mux_register(void);     /* src/drivers/mux.c */
void ust_log_register(void);     /* src/drivers/log.c (issue 4: log driver) */
void ust_tl_register(void);      /* src/drivers/tl.c (issue 11: TPI loopback) */
void ust_udp_register(void);     /* src/drivers/udp.c (issue 12: udp over kernel sockets) */
void ust_tcp_register(void);     /* src/drivers/tcp.c (issue 12: tcp over kernel sockets) */
void ust_rawip_register(void);   /* src/drivers/rawip.c (issue 12: raw IP over kernel sockets) */
void ust_nullmod_register(void); /* src/modules/nullmod.c */
void ust_connld_register(void); /* src/modules/connld.c */
void ust_srvmod_register(void);  /* src/modules/srvmod.c */
void ust_pipemod_register(void); /* src/modules/pipemod.c */
void ust_timod_register(void);   /* src/modules/timod.c */
void ust_tirdwr_register(void);  /* src/modules/tirdwr.c */
void ust_sad_register(void);     /* src/admin/sad.c (issue 4) */
void ust_fifodev_register(void); /* src/drivers/fifo.c (issue 21: fifo, sfx, pipe) */
void ust_sc_register(void);      /* src/admin/sc.c (issue 21: the sc module) */

#endif /* UST_BUILTINS_H */
