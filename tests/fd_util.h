/* SPDX-License-Identifier: MIT */
/*
 * fd_util.h -- the tests' count of this process's open descriptors.
 */
#ifndef UST_TEST_FD_UTIL_H
#define UST_TEST_FD_UTIL_H

#include <dirent.h>

/* Descriptors open in this process (/proc/self/fd), or -1. */
static inline int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

#endif /* UST_TEST_FD_UTIL_H */
