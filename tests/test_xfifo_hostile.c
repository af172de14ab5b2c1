/* SPDX-License-Identifier: MIT */
/*
 * test_xfifo_hostile.c -- a reader and a writer of a named FIFO in two
 * other processes always meet, whichever of them owns the node, while a
 * squatter holds the FIFO's rendezvous name (docs/SECURITY.md, row B;
 * docs/STREAMHEAD.md, "Named FIFOs"; src/head/sd_fifo.c open_finish,
 * src/procs/sd_fifo_name.c ust_fifo_serve).  The squatter is a fork child
 * that became nobody (squat_util.h); the parties are root "peers" (this
 * program re-executed, unrelated to it).  test_xnames_hostile B has the
 * same squatter with this process as one of the parties.
 *
 *   M  a 0644 root FIFO, its base rendezvous name squatted; NMEET rounds
 *      of each kind:
 *      - a writer peer owns the node and blocks in its open; a reader
 *        peer's open, served in the owner, releases it; the writer writes
 *        and exits at once: the reader's open returns and reads the text;
 *      - a reader peer owns the node and blocks in its open; a writer
 *        peer's open releases it; the reader closes and exits at once: the
 *        writer's open returns;
 *      - a reader and a writer peer started together (either may own):
 *        the reader reads the writer's text.
 *      The owners of the first two kinds run on one CPU with their
 *      library threads at nice 19: the served open's thread is preempted
 *      by the party its count wakes, which is done and gone before the
 *      served open looks at the other side (before the fix, that open then
 *      waited for ever; the owner exited with the data after its 5 s at
 *      exit, and the client, answered nothing, became a new owner waiting
 *      for a party that had come and gone: every such round hung).  Each
 *      client has 10 s.  The squatter receives no byte and no descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "hostile_util.h"
#include "peer_spawn.h"
#include "squat_util.h"

#define NMEET 12         /* rounds of each kind */
#define CLIENT_WAIT_S 10 /* a client's open and read: far more than they take */

static char dir[] = "/tmp/ust_xfhostXXXXXX";

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------ */
/* Peers (root, unrelated)                                                  */
/* ------------------------------------------------------------------------ */
/* An owner peer: become the owner of the FIFO at path with every library
 * thread it starts at nice 19 and on this one CPU, this thread back at
 * nice 0 (the party woken by a served open runs before the served open
 * goes on); then PATH.go tells the test it may start the client.  0 or -1. */
static int own(const char *path)
{
    cpu_set_t one;
    int cpu = sched_getcpu();
    CPU_ZERO(&one);
    CPU_SET(cpu >= 0 ? cpu : 0, &one);
    sched_setaffinity(0, sizeof(one), &one); /* and the threads made from here on */
    setpriority(PRIO_PROCESS, 0, 19);        /* this thread, and the threads it makes */
    int fd = strm_open(path, O_RDWR | O_NONBLOCK); /* the owner: rendezvous, bridge */
    if (fd < 0)
        return -1;
    strm_close(fd);
    setpriority(PRIO_PROCESS, 0, 0); /* this thread only (root may) */
    char go[PATH_MAX];
    snprintf(go, sizeof(go), "%s.go", path);
    int g = open(go, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (g < 0)
        return -1;
    close(g);
    return 0;
}

/* "own-write PATH TEXT": own the node, open O_WRONLY (waits for the
 * client reader), write TEXT, exit at once. */
static int peer_own_write(const char *path, const char *text)
{
    if (own(path) != 0)
        return 10;
    int fd = strm_open(path, O_WRONLY);
    if (fd < 0)
        return 11;
    if (strm_write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        return 12;
    return strm_close(fd) == 0 ? 0 : 13;
}

/* "own-read PATH X": own the node, open O_RDONLY (waits for the client
 * writer), close and exit at once. */
static int peer_own_read(const char *path)
{
    if (own(path) != 0)
        return 20;
    int fd = strm_open(path, O_RDONLY);
    if (fd < 0)
        return 21;
    return strm_close(fd) == 0 ? 0 : 22;
}

static int peer_main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc < 5)
        return 99;
    if (strcmp(argv[2], "own-write") == 0)
        return peer_own_write(argv[3], argv[4]);
    if (strcmp(argv[2], "own-read") == 0)
        return peer_own_read(argv[3]);
    alarm(CLIENT_WAIT_S); /* a client that hangs is killed: 255 */
    if (strcmp(argv[2], "read") == 0)
        return peer_read_text(argv[3], argv[4]);
    if (strcmp(argv[2], "write") == 0)
        return peer_write_text(argv[3], argv[4]);
    return 98;
}

/* ------------------------------------------------------------------------ */
/* M: a reader and a writer meet, whoever owns, the name squatted           */
/* ------------------------------------------------------------------------ */
/* Start the owner peer (op) and, once it owns the node, the client peer
 * (cop, ctext): 1 when both exit 0. */
static int round_owned(const char *f, const char *op, const char *text, const char *cop,
                       const char *ctext)
{
    char go[PATH_MAX];
    snprintf(go, sizeof(go), "%s.go", f);
    pid_t o = peer_spawn(op, f, text);
    for (int i = 0; i < 1000 && access(go, F_OK) != 0; i++)
        sleep_ms(10);
    unlink(go);
    pid_t c = peer_spawn(cop, f, ctext);
    int rc = peer_wait(c), ro = peer_wait(o);
    if (rc != 0 || ro != 0)
        printf("M: %s (exit %d) and %s (exit %d) did not meet\n", op, ro, cop, rc);
    return rc == 0 && ro == 0;
}

static void test_m_meet(void)
{
    char f[PATH_MAX], text[32];
    struct squatter q;
    long bytes, fds;
    int ok = 1;

    path_of(f, dir, "m-fifo-0644");
    CHECK_EQ(mkfifo(f, 0600), 0);
    CHECK_EQ(chmod(f, 0644), 0);
    CHECK_EQ(squat(&q, 'f', f, 0), 0);
    for (int i = 0; ok && i < NMEET; i++) {
        snprintf(text, sizeof(text), "meet-%d", i);
        ok = round_owned(f, "own-write", text, "read", text);
        ok = ok && round_owned(f, "own-read", "-", "write", "-");
        if (ok) { /* together: either may own (test_xnames_hostile B's second round) */
            pid_t rd = peer_spawn("read", f, text), wr = peer_spawn("write", f, text);
            int rw = peer_wait(wr), rr = peer_wait(rd);
            if (rw != 0 || rr != 0)
                printf("M: a reader (exit %d) and a writer (exit %d) started together did "
                       "not meet\n", rr, rw);
            ok = rw == 0 && rr == 0;
        }
        if (!ok)
            printf("M: round %d of %d failed\n", i + 1, NMEET);
    }
    CHECK(ok);
    squat_end(&q, &bytes, &fds);
    CHECK_EQ(bytes, 0);
    CHECK_EQ(fds, 0);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "peer") == 0)
        return peer_main(argc, argv);
    int st = squat_test_start(dir, "test_xfifo_hostile (row B: owners and clients meet)");
    if (st != 0)
        return st;
    test_m_meet();
    return squat_test_end(dir);
}
