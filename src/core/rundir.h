/* SPDX-License-Identifier: MIT */
/*
 * rundir.h -- the per-user runtime directory of ustreams.
 *
 * One directory per user (effective uid) where the processes of that user
 * that run ustreams leave their rendezvous points: today the sockets on
 * which each process publishes its registry and streams for the tools
 * (src/admin/publish.c, "proc.<pid>"); later FIFOs and fattach-ed names
 * handing out pipes between processes (/work/shared/DESIGN.md, "Processes").
 * Users of the directory name their entries with a prefix of their own
 * ("proc." is taken) and clean up after themselves.
 *
 *   $XDG_RUNTIME_DIR/ustreams   when XDG_RUNTIME_DIR is an absolute path to
 *                               a directory owned by the effective uid
 *   /tmp/ustreams-<euid>        otherwise
 *
 * Security: the directory is the only access control of what lives in it.
 * It is created with mode 0700; an existing one is used only if lstat(2)
 * shows a directory (not a symbolic link) owned by the effective uid with
 * mode exactly 0700 -- anything else (another user's directory planted in
 * /tmp, a symlink, a file, a directory opened up with chmod) is refused,
 * and with it whatever would have used it.  Nothing here follows a link or
 * loosens a mode: fixing a refused directory is the user's decision.
 */
#ifndef UST_RUNDIR_H
#define UST_RUNDIR_H

#include <stddef.h>

/*
 * ust_rundir -- the path of the runtime directory, created if missing.
 *   buf (size n) receives the path, NUL-terminated, no trailing slash.
 *   Context: any thread; no lock; a few system calls (getenv, mkdir, lstat,
 *   chmod of a directory it just created), so not for a data path.
 *   Returns 0, or a positive errno (buf then holds ""):
 *     EPERM         it exists but is owned by another uid, or its mode is not
 *                   0700
 *     ENOTDIR       it exists but is not a directory (a symlink included)
 *     ENAMETOOLONG  the path does not fit in n
 *     EINVAL        buf NULL or n 0
 *     or mkdir's or lstat's error (EACCES, ENOENT, ...).
 */
int ust_rundir(char *buf, size_t n);

#endif /* UST_RUNDIR_H */
