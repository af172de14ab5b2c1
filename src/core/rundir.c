/* SPDX-License-Identifier: MIT */
/*
 * rundir.c -- the per-user runtime directory (rundir.h has the contract and
 * the security rules).
 *
 * Principles of operation
 *   The path is derived on every call (getenv, geteuid): a program that
 *   changes XDG_RUNTIME_DIR or its effective uid gets the directory of the
 *   new setting.  Creation races are benign: two processes that both find
 *   the directory missing both call mkdir, one gets EEXIST, and both then
 *   check what is there with lstat, so neither trusts a directory it did
 *   not check.  A directory this call created is set to 0700 explicitly
 *   (mkdir's mode is masked by the umask, which may take bits away but
 *   never add them).  In /tmp, whose sticky bit stops other users from
 *   renaming or removing our entries, a checked directory stays ours.
 *
 * Locking: none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundir.h"

/* 1 if XDG_RUNTIME_DIR names an absolute directory owned by uid. */
static int xdg_usable(const char *dir, uid_t uid)
{
    struct stat st;
    return dir != NULL && dir[0] == '/' && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == uid;
}

int ust_rundir(char *buf, size_t n)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    uid_t uid = geteuid();
    struct stat st;
    int len, err = 0;

    if (buf == NULL || n == 0)
        return EINVAL;
    if (xdg_usable(xdg, uid))
        len = snprintf(buf, n, "%s/ustreams", xdg);
    else
        len = snprintf(buf, n, "/tmp/ustreams-%lu", (unsigned long)uid);
    if (len < 0 || (size_t)len >= n) {
        err = ENAMETOOLONG;
        goto out;
    }
    if (mkdir(buf, 0700) == 0) {
        if (chmod(buf, 0700) != 0) /* the umask may have taken bits off */
            err = errno;
    } else if (errno != EEXIST) {
        err = errno;
    }
    if (err == 0 && lstat(buf, &st) != 0)
        err = errno;
    if (err == 0 && !S_ISDIR(st.st_mode))
        err = ENOTDIR; /* a symbolic link, a file, a socket... */
    if (err == 0 && (st.st_uid != uid || (st.st_mode & 07777) != 0700))
        err = EPERM;
out:
    if (err != 0)
        buf[0] = '\0';
    return err;
}
