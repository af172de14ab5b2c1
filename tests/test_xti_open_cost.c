/* SPDX-License-Identifier: MIT */
/*
 * test_xti_open_cost.c -- the rules of cheap endpoints (issue 23 item 4;
 * bench/README.md "Cheap endpoints, second pass"):
 *   1. ustreams_open_module (ustreams.h), the open + I_FIND + I_PUSH that
 *      t_open makes in one call: pushes the module once (a second open of a
 *      shared stream finds it: *pushed 0, still one timod in I_LIST), and
 *      fails leaving nothing open: no such name (ENOENT, *pushed -1), no such
 *      module (EINVAL, *pushed 0, the stream closed), a plain file (ENOSTR),
 *      a bad path, module or pushed pointer (EFAULT).
 *   2. The tables an open and a close use are O(1) and stay exact through
 *      many endpoints: 1000 bound endpoints of /dev/udp and of /dev/tcp (fewer
 *      if RLIMIT_NOFILE is lower) opened, closed in a shuffled order, half
 *      of them opened again, closed again; every descriptor comes back (no
 *      leak: tests/fd_util.h) and the table of streams counts exactly the
 *      streams open at each step (ust_sd_foreach).
 *   3. The share table (hashed): 200 minors of echo (50 .. 249) opened twice each share
 *      one stream per minor (same U inode), distinct across minors; the
 *      first descriptors closed in a shuffled order keep every stream; the
 *      last close of each removes its entry, so an open of the same minor
 *      makes a new stream and does not wait.
 * Deadline: alarm(120) (a table walk gone wrong hangs, it must fail).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_util.h"
#include "sthead.h"
#include "xti_util.h"

static void count_one(struct stdata *sd, void *arg)
{
    (void)sd;
    (*(int *)arg)++;
}

/* Streams in the table of streams. */
static int registered(void)
{
    int n = 0;
    ust_sd_foreach(count_one, &n);
    return n;
}

/* A small deterministic shuffle (xorshift), so a failure reproduces. */
static void shuffle(int *v, int n)
{
    uint32_t x = 2463534242u;
    for (int i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int j = (int)(x % (uint32_t)(i + 1)), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void t_open_module(void)
{
    char path[] = "/tmp/ust_open_cost_XXXXXX";
    int fds0 = count_fds(), regs0 = registered(), pushed = 7;

    int a = ustreams_open_module("/dev/streams/echo/5", O_RDWR, "timod", &pushed);
    CHECK(a >= 0);
    CHECK_EQ(pushed, 1);
    CHECK_EQ(strm_ioctl(a, I_FIND, "timod"), 1);
    CHECK_EQ(strm_ioctl(a, I_LIST, NULL), 2); /* timod and echo */
    int b = ustreams_open_module("/dev/streams/echo/5", O_RDWR, "timod", &pushed);
    CHECK(b >= 0);
    CHECK_EQ(pushed, 0); /* the shared stream has it */
    CHECK_EQ(strm_ioctl(b, I_LIST, NULL), 2);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(strm_close(a), 0);

    errno = 0;
    CHECK_EQ(ustreams_open_module("/dev/streams/nosuchdrv", O_RDWR, "timod", &pushed), -1);
    CHECK_EQ(errno, ENOENT);
    CHECK_EQ(pushed, -1);
    errno = 0;
    CHECK_EQ(ustreams_open_module("/dev/streams/clone/echo", O_RDWR, "nosuchmod", &pushed), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(pushed, 0);
    int tmp = mkstemp(path);
    CHECK(tmp >= 0);
    close(tmp);
    errno = 0;
    CHECK_EQ(ustreams_open_module(path, O_RDWR, "timod", &pushed), -1);
    CHECK_EQ(errno, ENOSTR); /* a plain file is no stream: closed again */
    CHECK_EQ(pushed, 0);
    unlink(path);
    /* bad pointers: EFAULT, never SIGSEGV, nothing left open */
    errno = 0;
    CHECK_EQ(ustreams_open_module("/dev/streams/clone/echo", O_RDWR, "timod", NULL), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(ustreams_open_module("/dev/streams/clone/echo", O_RDWR, "timod", (int *)8), -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(ustreams_open_module("/dev/streams/clone/echo", O_RDWR, (const char *)8, &pushed),
             -1);
    CHECK_EQ(errno, EFAULT);
    errno = 0;
    CHECK_EQ(ustreams_open_module((const char *)8, O_RDWR, "timod", &pushed), -1);
    CHECK_EQ(errno, EFAULT);
    CHECK_EQ(pushed, -1);
    /* t_open over it: the same errors as before (XNS 5 t_open) */
    XCHECK_ERR(t_open("/dev/streams/nosuchdrv", O_RDWR, NULL), TBADNAME);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(count_fds(), fds0);
    CHECK_EQ(registered(), regs0);
}

/* Open and bind one endpoint of prov on 127.0.0.1 port 0; -1 if it fails. */
static int endpoint(const char *prov)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct t_bind req = {.addr = {.len = sizeof(a), .buf = (char *)&a}};
    int fd = t_open(prov, O_RDWR, NULL);
    if (fd >= 0 && t_bind(fd, &req, NULL) < 0) {
        t_close(fd);
        fd = -1;
    }
    return fd;
}

static void t_many(int n)
{
    static const char *provs[2] = {"/dev/udp", "/dev/tcp"};
    int *fd = calloc((size_t)(2 * n), sizeof(int)), *ord = calloc((size_t)(2 * n), sizeof(int));
    int fds0 = count_fds(), regs0 = registered(), ok = 1;

    for (int i = 0; i < 2 * n && ok; i++) {
        fd[i] = endpoint(provs[i % 2]);
        ok = CHECK(fd[i] >= 0);
        ord[i] = i;
    }
    if (!ok) {
        fprintf(stderr, "  t_many: t_errno %d errno %d\n", t_errno, errno);
        n = 0; /* what was opened is closed below (fd >= 0) */
    }
    CHECK_EQ(registered(), regs0 + 2 * n);
    shuffle(ord, 2 * n);
    for (int k = 0; k < 2 * n; k++) { /* all closed, in a shuffled order */
        XCHECK_OK(t_close(fd[ord[k]]));
        fd[ord[k]] = -1;
        if (k == n)
            CHECK_EQ(registered(), regs0 + n - 1);
    }
    CHECK_EQ(registered(), regs0);
    for (int i = 0; i < n; i++) { /* half again: the unlinked entries are reusable */
        fd[i] = endpoint(provs[i % 2]);
        CHECK(fd[i] >= 0);
    }
    CHECK_EQ(registered(), regs0 + n);
    for (int i = n - 1; i >= 0; i--) /* the other order: from the list's head */
        if (fd[i] >= 0)
            XCHECK_OK(t_close(fd[i]));
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(registered(), regs0);
    if (!CHECK_EQ(count_fds(), fds0)) {
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "ls -l /proc/%d/fd >&2", (int)getpid());
        (void)system(cmd);
    }
    free(fd);
    free(ord);
}

#define MINORS 200

static void t_share(void)
{
    int a[MINORS], b[MINORS], ord[MINORS];
    ino_t ino[MINORS];
    char name[64];
    int fds0 = count_fds(), regs0 = registered();

    for (int k = 0; k < MINORS; k++) {
        struct stat sa, sb;
        snprintf(name, sizeof(name), "/dev/streams/echo/%d", 50 + k);
        a[k] = strm_open(name, O_RDWR);
        b[k] = strm_open(name, O_RDWR);
        CHECK(a[k] >= 0 && b[k] >= 0);
        CHECK(fstat(a[k], &sa) == 0 && fstat(b[k], &sb) == 0);
        CHECK(sa.st_ino == sb.st_ino); /* one stream per minor */
        ino[k] = sa.st_ino;
        ord[k] = k;
    }
    CHECK_EQ(registered(), regs0 + MINORS);
    for (int k = 1; k < MINORS; k++)
        CHECK(ino[k] != ino[k - 1]);
    shuffle(ord, MINORS);
    for (int k = 0; k < MINORS; k++)
        CHECK_EQ(strm_close(a[ord[k]]), 0);
    CHECK_EQ(registered(), regs0 + MINORS); /* b keeps each one */
    for (int k = 0; k < MINORS; k++)
        CHECK_EQ(strm_close(b[ord[MINORS - 1 - k]]), 0);
    CHECK_EQ(registered(), regs0);
    for (int k = 0; k < MINORS; k += 7) { /* entries gone: new streams, no wait */
        struct stat st;
        snprintf(name, sizeof(name), "/dev/streams/echo/%d", 50 + k);
        int fd = strm_open(name, O_RDWR);
        CHECK(fd >= 0);
        CHECK(fstat(fd, &st) == 0 && st.st_ino != ino[k]);
        CHECK_EQ(strm_close(fd), 0);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_EQ(count_fds(), fds0);
    CHECK_EQ(registered(), regs0);
}

int main(void)
{
    struct rlimit rl;
    int n = 1000;

    alarm(120);
    xti_require("/dev/udp");
    xti_require("/dev/tcp");
    /* Each endpoint holds two descriptors (its stream's and its socket). */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)(4 * n + 200))
            n = ((int)rl.rlim_cur - 200) / 4;
    }
    printf("endpoints per provider: %d\n", n);
    /* The first bind starts the providers' epoll set, which stays. */
    t_close(endpoint("/dev/udp"));
    t_close(endpoint("/dev/tcp"));
    t_open_module();
    t_many(n);
    t_share();
    return xti_finish();
}
