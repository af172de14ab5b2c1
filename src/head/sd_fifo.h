/* SPDX-License-Identifier: MIT */
/*
 * sd_fifo.h -- STREAMS FIFOs inside one process (sd_fifo.c): the entry
 * points for named FIFOs (mkfifo nodes) and the hooks the rest of the head
 * calls.  Private to the library; docs/STREAMHEAD.md, "FIFOs", has what a
 * program sees.
 */
#ifndef UST_SD_FIFO_H
#define UST_SD_FIFO_H

#include <stdint.h>
#include <sys/stream.h> /* cred_t */

struct stdata;

/*
 * ust_fifo_open_key -- open THE FIFO of this process keyed by (dev, ino),
 *   the identity (st_dev, st_ino) of a mkfifo(3) node: created empty by the
 *   first open, shared by every later open while any descriptor of it is
 *   open; the last close frees it and its key, so a later open makes a new,
 *   empty FIFO (as a kernel FIFO loses its data when nobody has it open).
 *   oflag: O_RDONLY, O_WRONLY or O_RDWR (O_ACCMODE itself: EINVAL), with
 *   O_NONBLOCK, O_CLOEXEC; other bits are ignored.  The open rules of
 *   fifo(7): O_RDONLY waits until a writer has opened, O_WRONLY until a
 *   reader has; with O_NONBLOCK, O_RDONLY returns at once and O_WRONLY with
 *   no reader fails ENXIO; O_RDWR never waits.  The new descriptor has the
 *   access mode of oflag; the stream's O_NONBLOCK is the one of the open
 *   that created it (shared by every descriptor, as for any shared stream).
 *   Context: any thread, inside or outside a library call; may block (a wait
 *   for the other side: on the head's wait point, no library lock held,
 *   ended by a signal handler without SA_RESTART with EINTR, the
 *   descriptor then closed again).  cr: the opener's credentials (NULL: the
 *   calling process's).
 *   Returns the descriptor, or -1 with errno: EINVAL (access mode),
 *   ENXIO (O_WRONLY|O_NONBLOCK, no reader), EINTR, ENOSR (no memory),
 *   EMFILE/ENFILE, EIO (the FIFO is hung up or in error: a module sent
 *   M_HANGUP/M_ERROR), or a pushed module's open error.
 */
int ust_fifo_open_key(uint64_t dev, uint64_t ino, int oflag, const cred_t *cr);
/* The same, on behalf of another process (sd_rdv.c): watch is the
 *   connected socket of its request; a blocking open whose asker hangs up
 *   ends within 200 ms with ECONNABORTED (the descriptor closed again). */
int ust_fifo_open_key_for(uint64_t dev, uint64_t ino, int oflag, const cred_t *cr, int watch);

/*
 * ust_fifo_counts -- the descriptors open for reading and for writing of the
 *   FIFO that fd is a descriptor of (an O_RDWR descriptor counts in both).
 *   Context: any thread, no lock held; a snapshot.  Returns 0, or -1 with
 *   errno EBADF (fd not open), ENOSTR (not a stream), EINVAL (a stream that
 *   is not a FIFO).  readers/writers may be NULL.
 */
int ust_fifo_counts(int fd, int *readers, int *writers);

/*
 * ust_fifo_key_watch -- from now on, every change of the reader and writer
 *   counts of the FIFO keyed (dev, ino) (whichever FIFO the key names then)
 *   adds 1 to the eventfd efd (the bridge of a node this process owns to
 *   its kernel FIFO, src/procs/sd_fifo_bridge.c).  The watch lasts until
 *   fork (a child forgets it).  Any thread, no lock held.  0 or ENOMEM.
 */
int ust_fifo_key_watch(uint64_t dev, uint64_t ino, int efd);
/* ust_fifo_key_counts -- the counts of the FIFO keyed (dev, ino): 1 and
 *   *rd, *wr set, or 0 (no such FIFO now: both 0).  A snapshot; any thread,
 *   no lock held. */
int ust_fifo_key_counts(uint64_t dev, uint64_t ino, int *rd, int *wr);

/* ---- hooks for the rest of the head ---- */

/* Is sd a FIFO?  Any context (an atomic load). */
int ust_sd_isfifo(const struct stdata *sd);
/* The FIFO drivers' device names, which sd_open.c hands to sd_fifo.c: 1 if
 * drv (the driver part of "/dev/streams/<drv>[/<N>]", "/dev/streams/clone/
 * <drv>" or "/dev/<drv>") is "fifo", "sfx" or "pipe". */
int ust_fifo_is_driver(const char *drv);
/* strm_open of such a name: minor N of fifo/sfx (the FIFO of key
 * (FIFO_DEVKEY, N), ENXIO when N >= FIFO_NMINOR), a new FIFO for a clone
 * open or any open of pipe (never waits: see sd_fifo.c).  The descriptor,
 * or -1 with errno (as ust_fifo_open_key; ENOTDIR for O_DIRECTORY, EEXIST
 * for O_CREAT|O_EXCL). */
int ust_fifo_open_dev(const char *drv, minor_t minor, int clone, const char *path, int oflag,
                      cred_t *cr);
/* A FIFO's counts changed: wake its readers, writers and waiting opens and
 * set its readiness, under sd_lock.  The caller holds a reference on sd (or
 * a call on it) and no stream head lock. */
void ust_fifo_announce(struct stdata *sd);
/* (sd_access.c) Slot fd of sd is leaving the descriptor table: uncount it
 * if it was counted.  sd_fd.c's table lock held; 1 if the caller owes
 * ust_fifo_announce(sd) once that lock is dropped (keeping its reference
 * until then). */
int ust_fifo_slot_gone(int fd, struct stdata *sd);
/* Read returns end of file now: a FIFO with no writer.  sd_lock held. */
int ust_fifo_eof(struct stdata *sd);
/* A writer has been and gone (POLLHUP, readable readiness). sd_lock held. */
int ust_fifo_hup(struct stdata *sd);
/* Writes fail EPIPE now: a FIFO with no reader.  sd_lock held. */
int ust_fifo_noreader(struct stdata *sd);
/* The last close of FIFO sd (ust_sd_teardown): its key goes, a later open
 * of the key makes a new FIFO.  sd_plumb may be held. */
void ust_fifo_teardown(struct stdata *sd);
/* fork child: the keyed table named the parent's FIFOs; emptied. */
void ust_fifo_fork_child(void);

#endif /* UST_SD_FIFO_H */
