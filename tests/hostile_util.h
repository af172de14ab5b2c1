/* SPDX-License-Identifier: MIT */
/*
 * hostile_util.h -- the attacker of the hostile-peer tests (docs/SECURITY.md).
 *
 *   HOSTILE_UID / HOSTILE_GID   the unprivileged identity an attacker takes
 *                               (nobody/nogroup: 65534)
 *   hostile_can_switch()        1 when this process may take another uid
 *                               (it runs as root); else 0
 *   hostile_skip(what)          prints a visible "SKIP" line for a case that
 *                               needs another uid and counts it
 *   hostile_become()            in a fork child: drop every supplementary
 *                               group, then gid and uid (real, effective and
 *                               saved) to HOSTILE_*; 0, or -1 (the child
 *                               must then exit non-zero, never go on as root)
 *   hostile_rss_kb()            this process's resident set in KiB (VmRSS)
 *   HOSTILE_RSS_SCALE           what a sanitizer multiplies memory by (its
 *                               shadow and quarantine): bounds on RSS growth
 *                               are multiplied by it (1 without one)
 *   hostile_nthreads()          this process's thread count (Threads:)
 *   hostile_nfds()              descriptors open in this process
 *
 * The attacks themselves live in the tests; this header only gives them an
 * identity and the measures a defence is asserted with (the victim alive,
 * its threads, descriptors and memory bounded).
 */
#ifndef UST_TEST_HOSTILE_UTIL_H
#define UST_TEST_HOSTILE_UTIL_H

#include <dirent.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOSTILE_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(HOSTILE_TSAN)
#define HOSTILE_RSS_SCALE 8
#elif defined(__SANITIZE_ADDRESS__) || defined(HOSTILE_ASAN)
#define HOSTILE_RSS_SCALE 4
#else
#define HOSTILE_RSS_SCALE 1
#endif

#define HOSTILE_UID ((uid_t)65534)
#define HOSTILE_GID ((gid_t)65534)

static int hostile_nskipped;

static inline int hostile_can_switch(void)
{
    return geteuid() == 0;
}

static inline void hostile_skip(const char *what)
{
    hostile_nskipped++;
    printf("SKIP: %s: needs another uid (run the test as root)\n", what);
    fflush(stdout);
}

static inline int hostile_become(void)
{
    if (setgroups(0, NULL) != 0)
        return -1;
    if (setresgid(HOSTILE_GID, HOSTILE_GID, HOSTILE_GID) != 0)
        return -1;
    if (setresuid(HOSTILE_UID, HOSTILE_UID, HOSTILE_UID) != 0)
        return -1;
    /* Paranoia: a child that is still privileged must not run the attack. */
    if (geteuid() == 0 || getuid() == 0)
        return -1;
    return 0;
}

/* The value of a "Key:   N kB"-style line of /proc/self/status, or -1. */
static inline long hostile_status_field(const char *key)
{
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

static inline long hostile_rss_kb(void)
{
    return hostile_status_field("VmRSS");
}

static inline long hostile_nthreads(void)
{
    return hostile_status_field("Threads");
}

static inline long hostile_nfds(void)
{
    long n = 0;
    struct dirent *e;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

#endif /* UST_TEST_HOSTILE_UTIL_H */
