/* SPDX-License-Identifier: MIT */
/*
 * sd_names.h -- private to the stream head: names that other processes
 * open (fattach by path, sd_fattach.c; paths, sd_names.c; named FIFOs,
 * sd_fifo_name.c), the rendezvous that serves them (sd_rdv.c) and the
 * relays that join a stream to another process's pipe end (sd_relay.c).
 * docs/STREAMHEAD.md, "fattach and fdetach", "connld", "Named FIFOs".
 */
#ifndef UST_SD_NAMES_H
#define UST_SD_NAMES_H

#include "sthead.h"

struct stat;
/* strm_open of a path that is not a device (sd_names.c): *handled 0 when
 * the path does not exist (the caller answers ENOENT); else the descriptor
 * (a stream's, or a plain file's) or -errno. */
int ust_sd_open_path(const char *path, int oflag, cred_t *cr, int *handled);
/* connld for an open in this process: a new pipe, one end sent up sd (as
 * I_SENDFD, with cr's ids), the other returned; or -errno. */
int ust_connld_open(struct stdata *sd, const cred_t *cr);

enum { UST_RDV_NAME = 'n', UST_RDV_FIFO = 'f' };
/* Make the rendezvous of (kind, the node of the O_PATH descriptor node, which
 * is kept duplicated as the owner's proof): 0 and *lfd, EBUSY (another
 * process proves it owns it), or an errno. */
int ust_rdv_listen(int kind, int node, int *lfd);
void ust_rdv_unlisten(int lfd);
/* Open (kind, st) at path owned by another process: the descriptor of this
 * process's end, -ENOENT when no process proves it owns it, -EACCES when
 * the path does not let this process (or its owner says so), -EAGAIN when
 * the owner is over its budgets (sd_rdv.c), or -errno. */
int ust_rdv_open(int kind, const char *path, const struct stat *st, int oflag, const cred_t *cr);
/* The owner's side of an open from another process: a new pipe whose near
 * end is joined to the stream sfd (consumed) by a relay in the directions
 * oflag allows, its far end sent on conn with the proof node.  An errno,
 * or -1 when it replied. */
int ust_rdv_serve_relay(int conn, int node, int sfd, int oflag);
/* Does st admit uid with groups for `want` (R_OK | W_OK)? */
int ust_rdv_admits(const struct stat *st, uid_t uid, const gid_t *gid, int ngid, int want);
/* fdetach of a name another process owns: 0, EINVAL (none), EPERM. */
int ust_rdv_detach(const char *path, const struct stat *st);
/* The rendezvous' counters (since start) and gauges (now). */
struct ust_rdv_stats {
    long refused; /* connections refused over a budget (EAGAIN) */
    long dropped; /* connections gone or overdue before their request */
    long denied;  /* requests refused for want of access (EACCES) */
    int pending;  /* connections pending or being served */
    int fifo_waiting; /* FIFO opens waiting for the other side */
    int workers;  /* serving threads started */
};
void ust_rdv_stats(struct ust_rdv_stats *s);
void ust_rdv_fork_prepare(void);
void ust_rdv_fork_parent(void);
void ust_rdv_fork_child(void);
/* Join stream descriptor sfd and pipe end pfd (both consumed, also on
 * failure): up copies sfd -> pfd, down pfd -> sfd.  0 or an errno. */
int ust_relay_start(int sfd, int pfd, int up, int down);
/* exit handler (once): opens being served settle, relays pass on what they
 * hold, both bounded (sd_relay.c relay_exit). */
void ust_relay_exit_register(void);
/* Wait up to ms for the connections the rendezvous is serving. */
void ust_rdv_settle(long ms);
void ust_relay_fork_prepare(void);
void ust_relay_fork_parent(void);
void ust_relay_fork_child(void);
/* Named FIFOs (sd_fifo_name.c): strm_open of a FIFO at path; and the
 * owner's side of another process's open whose access sd_rdv.c checked
 * (conn: the rendezvous connection, to reply on, with the proof node): an
 * errno, or -1 when it replied. */
int ust_fifo_open_node(const char *path, const struct stat *st, int oflag, cred_t *cr);
int ust_fifo_serve(int conn, int node, dev_t dev, ino_t ino, int oflag);
void ust_fifo_name_fork_prepare(void);
void ust_fifo_name_fork_parent(void);
void ust_fifo_name_fork_child(void);

/* The bridge of a named FIFO this process owns to the node's kernel FIFO
 * (sd_fifo_bridge.c): programs without the library meet ustreams ones.
 * ust_fifo_bridge_start: node, the owner's O_PATH descriptor of the node
 * (kept open by the caller for the process's life); a thread per bridge;
 * NULL when it could not start (the FIFO then works between ustreams
 * processes only).  ust_fifo_bridge_probe: an O_WRONLY|O_NONBLOCK open with
 * no ustreams reader is about to fail ENXIO: look for a kernel reader now
 * (b may be NULL).  Any thread, no library lock held.  The fork hooks run
 * in fifo_lock's (sd_fifo_name.c). */
struct ust_fifo_bridge;
struct ust_fifo_bridge *ust_fifo_bridge_start(int node, dev_t dev, ino_t ino);
void ust_fifo_bridge_probe(struct ust_fifo_bridge *b);
void ust_fifo_bridge_fork_prepare(void);
void ust_fifo_bridge_fork_parent(void);
void ust_fifo_bridge_fork_child(void);
/* sd_name_mark.c: the mark of a name this process serves to others
 * (on 1: made, 0: removed); and whether (dev, ino) has one: 1, 0, or -1
 * when this process has no runtime directory (the caller connects). */
void ust_name_mark(dev_t dev, ino_t ino, int on);
int ust_name_marked(dev_t dev, ino_t ino);

#endif /* UST_SD_NAMES_H */
