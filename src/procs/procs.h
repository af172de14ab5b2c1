/* SPDX-License-Identifier: MIT */
/*
 * procs.h -- the door into src/procs/, the layer where streams cross
 * processes: pipes split over shared-memory rings (sd_xpipe*.c, xring*.c),
 * the bell (sd_xbell.c), names other processes open and the rendezvous that
 * serves them (sd_names.c, sd_rdv.c, sd_fifo_name.c), relays (sd_relay.c).
 *
 * This folder is the trust boundary (docs/SECURITY.md): every word another
 * process wrote -- a ring's control words and records, a bell's bytes, a
 * rendezvous request, a passed descriptor -- is read and checked here, and
 * what leaves this folder for the head is the same as locally made data.
 * The in-process head reaches the folder only through the table of hooks
 * installed by ust_procs_init (src/head/sd_procs.h, "the layer above").
 */
#ifndef UST_PROCS_H
#define UST_PROCS_H

/*
 * ust_procs_init -- install the cross-process layer: its hooks in the head
 *   (ust_sd_set_procs) and its fork hooks in the core (ranks UST_FORK_XPIPE,
 *   _FIFO_NAME, _RDV, _RELAY).  Context: library start (src/admin/start.c's
 *   constructor), before any stream is opened; idempotent.
 */
void ust_procs_init(void);

/*
 * ust_xcross_counts -- what the far sides of this process's split pipes sent
 *   and were refused (sd_xcross.c, "what may cross a split pipe"): out[0]
 *   signals dropped (the kill(2) rule), out[1] messages dropped (types that
 *   do not cross, oversized records), out[2] M_SETOPTS filtered.
 *   Context: any thread; relaxed loads.
 */
void ust_xcross_counts(long out[3]);

/*
 * ust_xlog_init -- install the loggers across processes (xlog.c): the log
 *   driver's claim, release and send hooks (ust_xlog_set_ops, strcore.h).
 *   Context: ust_procs_init.
 */
void ust_xlog_init(void);

/*
 * ust_exec_prepare -- just before an execve with environment envp: make the
 *   pipe ends named by descriptors that survive the exec able to live on in
 *   the new image (sd_xexec.c).  Returns 0 with *envp_out the environment
 *   to pass instead of envp (USTREAMS_EXEC_STATE added), or NULL when there
 *   is nothing to carry (pass envp); -1 with errno (ENOMEM, EMFILE, E2BIG)
 *   when the streams cannot be carried (nothing changed: exec anyway or
 *   not, the caller's choice).  On 0 the caller execs and, if that fails,
 *   calls ust_exec_done(*envp_out) at once: one exec at a time (a lock is
 *   held from here to there).  Context: no library lock held; may block
 *   briefly (pipes split, the scheduler settled).
 *   spawn 1: for posix_spawn (a new process execs, this one goes on): no
 *   message is taken (the ends keep their queues here, as at fork), and
 *   ust_exec_done is called after the spawn whatever its result.
 */
int ust_exec_prepare(char *const envp[], char ***envp_out, int spawn);
/* ust_exec_done -- after an exec that failed: everything ust_exec_prepare
 *   took is put back, the descriptors it made closed, envp_out freed. */
void ust_exec_done(char **envp_out);
/*
 * ust_exec_adopt -- in the new image, before main (a constructor): the pipe
 *   ends the old image described (sd_xexec_adopt.c) rebuilt on their
 *   descriptor numbers, their queued messages back in place; the variable
 *   removed from the environment.  Context: start-up, one thread.
 */
void ust_exec_adopt(void);

/*
 * ust_exec_share_serve -- the owner's side of "share" (sd_xexec_share.c):
 *   rfd, received from a process of the same user, must be the readiness
 *   socket of a stream of this process; a new pipe is made whose near end
 *   a relay joins to that stream, and its far side returned (*mfd the
 *   channel's memfd, *bfd the bell end, *acc the access mode).  0 or an
 *   errno (EPERM, ENOENT: not a stream of ours; EMFILE, ENOMEM).
 *   Context: the publish thread (src/admin/publish.c); no lock held.
 */
int ust_exec_share_serve(int rfd, int *mfd, int *bfd, int *acc);
/*
 * ust_exec_share_ask -- ask process `owner` for the stream whose readiness
 *   socket this process holds as ufd: 0 and the far side (*mfd, *bfd,
 *   *acc; close-on-exec), or an errno (ENOENT, ECONNREFUSED: the owner is
 *   gone or does not publish; ETIMEDOUT after 2 s; what the owner said).
 *   Context: ust_exec_prepare; no lock held.
 */
int ust_exec_share_ask(pid_t owner, int ufd, int *mfd, int *bfd, int *acc);

#endif /* UST_PROCS_H */
