/* SPDX-License-Identifier: MIT */
/*
 * sd_name_probe.c -- which names open(2) hands to strm_open under the
 * preload library (sd_preload.h, ust_name_is_stream).
 *
 * Principles of operation
 *   strm_open accepts every name, and opens a plain file as open(2) does
 *   (sd_names.c), but it publishes the process, creates nothing and takes no
 *   mode: the preload gives it only the names that are streams, and leaves
 *   every other open to the C library.  The rule follows sd_open.c's order:
 *     1. "/dev/streams/..." : always a stream name (strm_open's answer,
 *        ENOENT or ENXIO included, is the right one for such a name);
 *     2. "/dev/<name>" (one component): a stream when <name> is a driver
 *        registered now (never loaded on demand: /dev/null must not make
 *        the loader look for a module "null") or a FIFO driver;
 *     3. any other name, looked up with fstatat (following links, as
 *        open(2) and sd_names.c do): a FIFO node is a STREAMS FIFO; a file
 *        attached in this process (fattach) is its stream; a file with a
 *        listener at its rendezvous name may be attached in another process:
 *        strm_open then asks and verifies that owner (sd_rdv_client.c) and
 *        opens the file itself if it is no owner.  The listener's mark is
 *        looked up first (sd_name_mark.c: one fstatat); only a marked name
 *        costs a connect.  Nothing is sent here: one connect, closed at
 *        once, so a hostile listener learns only that the name was probed.  Directories and names that do not exist are
 *        the C library's (an O_CREAT open creates the file).
 *   Limit: a file attached in another process whose owner listens only at an
 *   alternative name (its base name squatted, sd_rdv.c) is not seen for the
 *   moments until the owner takes the base name back (RDV_RECLAIM_MS).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sd_names.h"
#include "sd_preload.h"
#include "sd_rdv.h"
#include "sthead.h"
#include "sd_fifo.h"

#define STREAMS_DIR "/dev/streams/"

/* Rule 2: "/dev/<name>", name a driver registered now or a FIFO driver. */
static int dev_driver(const char *path)
{
    const char *name = path + strlen("/dev/");
    size_t len = strlen(name);
    char drv[UST_DRVNAMESZ + 1];

    if (len == 0 || len > UST_DRVNAMESZ || strchr(name, '/') != NULL)
        return 0;
    memcpy(drv, name, len + 1);
    if (ust_fifo_is_driver(drv))
        return 1;
    struct ust_modent *ent = ust_reg_find_noload(drv, UST_DRIVER);
    if (ent == NULL)
        return 0;
    ust_reg_rele(ent);
    return 1;
}

/* Rule 3's last case: 1 if something listens at (dev, ino)'s rendezvous
 * base name. */
static int rdv_listened(const struct stat *st)
{
    if (ust_name_marked(st->st_dev, st->st_ino) == 0)
        return 0; /* no process serves it (sd_name_mark.c): no connect */
    struct sockaddr_un a;
    socklen_t al = ust_rdv_addr(&a, UST_RDV_NAME, st->st_dev, st->st_ino, 0);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return 0;
    int r = connect(s, (const struct sockaddr *)&a, al) == 0 || errno == EAGAIN;
    close(s);
    return r;
}

int ust_name_is_stream(int dirfd, const char *path, char *path_out, unsigned long pathsz)
{
    struct stat st;

    if (path == NULL || path[0] == '\0')
        return 0;
    if (path[0] == '/' || dirfd == AT_FDCWD) {
        if (snprintf(path_out, pathsz, "%s", path) >= (int)pathsz)
            return 0; /* the C library says ENAMETOOLONG */
    } else if (snprintf(path_out, pathsz, "/proc/self/fd/%d/%s", dirfd, path) >= (int)pathsz) {
        return 0;
    }
    if (strncmp(path_out, STREAMS_DIR, strlen(STREAMS_DIR)) == 0)
        return 1;
    if (strncmp(path_out, "/dev/", 5) == 0 && dev_driver(path_out))
        return 1;
    if (fstatat(dirfd, path, &st, 0) != 0 || S_ISDIR(st.st_mode))
        return 0;
    if (S_ISFIFO(st.st_mode))
        return 1;
    struct stdata *sd = ust_fattach_lookup(st.st_dev, st.st_ino, NULL, 0);
    if (sd != NULL) {
        ust_sd_rele(sd);
        return 1;
    }
    return rdv_listened(&st);
}
