/* SPDX-License-Identifier: MIT */
/*
 * udp_util.h -- helpers of the udp provider tests (test_udp.c,
 * test_xti_udp.c): loopback addresses, plain kernel sockets as peers,
 * counting the process's descriptors, a socket's drop count.
 */
#ifndef UST_TEST_UDP_UTIL_H
#define UST_TEST_UDP_UTIL_H

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define UDPU_DEV "/dev/udp"

static inline struct sockaddr_in udpu_v4(unsigned short port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static inline struct sockaddr_in6 udpu_v6(unsigned short port)
{
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof(a));
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    return a;
}

/* A plain UDP socket bound to the loopback address of family, port 0; its
 * port in *port.  -1 if the family is not available. */
static inline int udpu_sock(int family, unsigned short *port)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a;
    socklen_t len = sizeof(a);

    if (fd < 0)
        return -1;
    if (family == AF_INET) {
        struct sockaddr_in a4 = udpu_v4(0);
        if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) < 0)
            goto fail;
    } else {
        a = udpu_v6(0);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
            goto fail;
    }
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        goto fail;
    *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&a)->sin_port : a.sin6_port);
    return fd;
fail:
    close(fd);
    return -1;
}

/* Whether ::1 can be used here. */
static inline int udpu_have_v6(void)
{
    unsigned short p;
    int fd = udpu_sock(AF_INET6, &p);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* recvfrom with a 2 s timeout; the length, -1 on timeout. */
static inline ssize_t udpu_recv(int fd, void *buf, size_t len, void *from, socklen_t *flen)
{
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return recvfrom(fd, buf, len, 0, from, flen);
}

/* The number of open descriptors of this process, the channel readers' eventfds
 * left out. */
static inline int udpu_nfds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char link[64];
        ssize_t l = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
        if (l > 0) {
            link[l] = '\0';
            /* a channel reader's eventfd: one per thread that ever waited
             * on a provider's socket, kept for reuse (sd_chan.c), made by
             * whichever blocking read happened to wait: not the stream's */
            if (strcmp(link, "anon_inode:[eventfd]") == 0)
                continue;
        }
        n++;
    }
    closedir(d);
    return n;
}

/* The kernel's drop count of the UDP socket bound to local port (v4 or v6),
 * from /proc/net/udp[6]; -1 if not found. */
static inline long udpu_drops(int family, unsigned short port)
{
    FILE *f = fopen(family == AF_INET ? "/proc/net/udp" : "/proc/net/udp6", "r");
    char line[512];
    long drops = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *colon = strchr(line, ':');
        char *p;
        if (colon == NULL)
            continue;
        p = strchr(colon + 1, ':'); /* the local address's port */
        if (p == NULL || strtoul(p + 1, NULL, 16) != port)
            continue;
        p = line + strlen(line);
        while (p > line && (p[-1] == '\n' || p[-1] == ' '))
            p--;
        while (p > line && p[-1] != ' ')
            p--;
        drops = strtol(p, NULL, 10);
        break;
    }
    fclose(f);
    return drops;
}

#endif /* UST_TEST_UDP_UTIL_H */
