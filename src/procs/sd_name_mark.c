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
 * Locking: mark_once guards the directory's path (set once, then read
 *   only).  No descriptor is kept: a program that counts its descriptors
 *   sees none of this.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundir.h"
#include "sd_names.h"

static pthread_once_t mark_once = PTHREAD_ONCE_INIT;
static char mark_dir[256]; /* "<rundir>/names/", set once; "": none */

static void mark_open(void)
{
    char dir[200], path[240];
    struct stat st;
    if (ust_rundir(dir, sizeof(dir)) != 0 ||
        snprintf(path, sizeof(path), "%s/names", dir) >= (int)sizeof(path) - 1)
        return;
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0)
        return; /* not ours alone: no marks */
    snprintf(mark_dir, sizeof(mark_dir), "%s/", path);
}

/* The mark's path for (dev, ino) into buf; 0 when there is no directory. */
static int mark_path(dev_t dev, ino_t ino, char *buf, size_t n)
{
    pthread_once(&mark_once, mark_open);
    return mark_dir[0] != '\0' &&
           snprintf(buf, n, "%s%llx:%llx", mark_dir, (unsigned long long)dev,
                    (unsigned long long)ino) < (int)n;
}

void ust_name_mark(dev_t dev, ino_t ino, int on)
{
    char path[320];
    if (!mark_path(dev, ino, path, sizeof(path)))
        return;
    if (!on) {
        unlink(path);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

int ust_name_marked(dev_t dev, ino_t ino)
{
    char path[320];
    struct stat st;
    if (!mark_path(dev, ino, path, sizeof(path)))
        return -1;
    return fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}
