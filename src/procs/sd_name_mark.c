/* SPDX-License-Identifier: MIT */
/*
 * sd_name_mark.c -- marks of the names served to other processes, so that
 *   the preload's open(2) of an ordinary file costs one lookup, not a
 *   connect (sd_name_probe.c).
 *
 * Principles of operation
 *   A file attached (fattach) in one process is reached from another by a
 *   connect to its rendezvous name (sd_rdv.c), an abstract socket whose
 *   existence only a connect can tell: three system calls for every plain
 *   file a program opens under the preload.  So the process that listens
 *   for a file also leaves a mark, an empty file "<dev>:<ino>" in
 *   "<rundir>/names/" (the user's runtime directory, 0700), and removes it
 *   when it stops listening.  The probe then looks the mark up (one
 *   fstatat) and connects only where there is one.
 *   A mark is a hint: a stale one (its owner died) costs the connect it
 *   saves, which then finds nobody; a missing one (the directory could not
 *   be written) makes the probe miss that name, and the preload opens the
 *   file itself, as the C library would.  Where this process has no
 *   runtime directory the probe connects as before (ust_name_marked -1).
 *
 * Locking: mark_once guards the directory's descriptor (set once, then
 *   read only).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundir.h"
#include "sd_names.h"
#include "strcore.h"

static pthread_once_t mark_once = PTHREAD_ONCE_INIT;
static int mark_dir = -1; /* "<rundir>/names", O_PATH; -1: none */

static void mark_open(void)
{
    char dir[256], path[300];
    if (ust_rundir(dir, sizeof(dir)) != 0 ||
        snprintf(path, sizeof(path), "%s/names", dir) >= (int)sizeof(path))
        return;
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return;
    int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
        close(fd); /* not ours alone: no marks */
        fd = -1;
    }
    mark_dir = ust_fd_park(fd);
}

static int mark_name(dev_t dev, ino_t ino, char *buf, size_t n)
{
    return snprintf(buf, n, "%llx:%llx", (unsigned long long)dev, (unsigned long long)ino) < (int)n;
}

void ust_name_mark(dev_t dev, ino_t ino, int on)
{
    char name[64];
    pthread_once(&mark_once, mark_open);
    if (mark_dir < 0 || !mark_name(dev, ino, name, sizeof(name)))
        return;
    if (!on) {
        unlinkat(mark_dir, name, 0);
        return;
    }
    /* O_PATH directories take no openat for creation: go through /proc. */
    char path[128];
    snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", mark_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

int ust_name_marked(dev_t dev, ino_t ino)
{
    char name[64];
    struct stat st;
    pthread_once(&mark_once, mark_open);
    if (mark_dir < 0 || !mark_name(dev, ino, name, sizeof(name)))
        return -1;
    return fstatat(mark_dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}
