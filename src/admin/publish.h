/* SPDX-License-Identifier: MIT */
/*
 * publish.h -- every process that uses ustreams publishes its registry and
 * streams for the tools of its user (src/admin/publish.c; docs/ADMIN.md,
 * "Every process of the user").
 */
#ifndef UST_PUBLISH_H
#define UST_PUBLISH_H

/* Requests a publishing process answers, one line (at most
 * UST_PUBLISH_LINE_MAX bytes with its newline), commands separated by ';':
 *   modules FLAGS [NAME...]   ustreams_print_modules(FLAGS, NAMEs)
 *   streams                   ustreams_dump_all
 *   blocks                    "blocks mblks=N dblks=N bytes=N allocs=N failures=N",
 *                             then "rendezvous refused=N dropped=N denied=N
 *                             pending=N fifo_waiting=N workers=N" (sd_rdv.c)
 * The answer is their text in order, then end of file; a command that fails
 * or is not known is answered "error: ..." on a line of its own. */
#define UST_PUBLISH_LINE_MAX 1024
/* The socket of process PID is "<ust_rundir()>/" UST_PUBLISH_PREFIX "PID". */
#define UST_PUBLISH_PREFIX "proc."

/*
 * ust_publish_init -- install the stream head's publish hook
 *   (ust_sd_set_publish) and register the fork hooks (rank UST_FORK_PUBLISH).
 *   Context: library start (src/admin/start.c), once.
 */
void ust_publish_init(void);

#endif /* UST_PUBLISH_H */
