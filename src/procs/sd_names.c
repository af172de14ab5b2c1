/* SPDX-License-Identifier: MIT */
/*
 * sd_names.c -- strm_open of a path in the file system (every name that is
 * not a STREAMS device: sd_open.c tries those first).
 *
 * Principles of operation
 *   The path is looked up as open(2) would (stat follows symbolic links);
 *   its identity (st_dev, st_ino) decides what it opens:
 *     - a file covered by fattach in this process: that stream
 *       (ust_sd_open_attached; connld on top makes a new pipe);
 *     - a FIFO made with mkfifo(3): a STREAMS FIFO (sd_fifo_name.c);
 *     - a file covered by fattach in another process: that stream, through
 *       the owner's rendezvous (sd_rdv.c);
 *     - anything else: the file itself, opened with open(2) (so a name
 *       opens as the plain file again after fdetach).  strm_open creates
 *       nothing: a path that does not exist is ENOENT even with O_CREAT.
 *   Access is the file's: the caller's effective ids must have the
 *   permissions the open asks for on it (faccessat, AT_EACCESS), else EACCES
 *   -- for an attached stream and a FIFO as for the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sd_names.h"
#include "sthead.h"

int ust_sd_open_path(const char *path, int oflag, cred_t *cr, int *handled)
{
    struct stat st;
    struct stdata *sd;
    int want, fd;

    *handled = 0;
    if (stat(path, &st) != 0) {
        *handled = errno != ENOENT; /* ENOENT: the caller's answer too */
        return -errno;
    }
    *handled = 1;
    if ((oflag & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
        return -EEXIST;
    want = (oflag & O_ACCMODE) == O_RDONLY ? R_OK
           : (oflag & O_ACCMODE) == O_WRONLY ? W_OK
                                              : R_OK | W_OK;
    sd = ust_fattach_lookup(st.st_dev, st.st_ino, NULL, 0);
    if (sd != NULL || S_ISFIFO(st.st_mode)) {
        if (faccessat(AT_FDCWD, path, want, AT_EACCESS) != 0) {
            int e = errno;
            if (sd != NULL)
                ust_sd_rele(sd);
            return -e;
        }
        if (oflag & O_DIRECTORY) {
            if (sd != NULL)
                ust_sd_rele(sd);
            return -ENOTDIR;
        }
    }
    if (sd != NULL)
        return ust_sd_open_attached(sd, oflag, cr);
    if (S_ISFIFO(st.st_mode))
        return ust_fifo_open_node(path, &st, oflag, cr);
    fd = ust_rdv_open(UST_RDV_NAME, path, &st, oflag, cr);
    if (fd != -ENOENT && fd != -EACCES)
        return fd;
    fd = open(path, oflag & ~O_CREAT, 0);
    return fd >= 0 ? fd : -errno;
}
