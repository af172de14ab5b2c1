/* SPDX-License-Identifier: MIT */
/*
 * test_strinfo.c -- the stream dump: ustreams_dump_stream and
 * ustreams_dump_all (src/admin/strstat.c) and the strinfo tool
 * (tools/strinfo.c), run as a separate program.
 *
 * Cases:
 *   D.1  errors: EINVAL (no output), EBADF (not open), ENOSTR (not a stream)
 *   D.2  a stream whose srvmod write queue is not enabled (noenable): the
 *        queued messages, q_count, the band, QNOENB; filled past its high
 *        water mark: QFULL and QWANTW; enabled again: drained, the echoes
 *        at the head, the put and service counters
 *   D.3  a pipe: this end down to its pipe pair, the twist, the other end
 *        up to its head, with the messages waiting there
 *   D.4  ustreams_dump_all: every open stream, with its descriptor
 *   D.5  dumping while other threads open, push, pop and close streams
 *        (nothing freed under the walk; run under ASan by make test)
 *   T.1  strinfo DEVICE -p MODULE: head, module, driver with their counts
 *   T.2  strinfo --pipe -p MODULE -b BAND: the twist, the band at the far head
 *   T.3  strinfo errors: no such device, no such module (exit 1), usage (2)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <unistd.h>
#include <stropts.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "check.h"
#include "sthead.h"
#include "tool_run.h"

/* Dump fd (-2: every stream) into a string (NULL on failure); *ret and
 * errno are the call's. */
static char *dump_str(int fd, int *ret)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    *ret = fd == -2 ? ustreams_dump_all(f) : ustreams_dump_stream(fd, f);
    int e = errno; /* fclose may change it */
    fclose(f);
    errno = e;
    return s;
}

/* D.1 */
static void test_errors(void)
{
    int r, p[2];
    errno = 0;
    CHECK_EQ(ustreams_dump_stream(0, NULL), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(ustreams_dump_all(NULL), -1);
    CHECK_EQ(errno, EINVAL);
    char *s = dump_str(-1, &r);
    CHECK_EQ(r, -1);
    CHECK_EQ(errno, EBADF);
    CHECK(s && s[0] == '\0'); /* nothing printed */
    free(s);
    CHECK_EQ(pipe(p), 0);
    s = dump_str(p[0], &r);
    CHECK_EQ(r, -1);
    CHECK_EQ(errno, ENOSTR);
    free(s);
    close(p[0]);
    close(p[1]);
}

/* The write queue just below the head of fd's stream. */
static queue_t *below_head(int fd)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd)
        return NULL;
    queue_t *q = ust_qnext(sd->sd_wq);
    ust_sd_put(sd);
    return q;
}

/* D.2 */
static void test_noenable(void)
{
    int r;
    char line[512], big[1000];
    int fd = strm_open("/dev/streams/echo", O_RDWR | O_NONBLOCK);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "srvmod"), 0);
    queue_t *q = below_head(fd);
    CHECK(q != NULL);
    if (!q) {
        strm_close(fd);
        return;
    }
    noenable(q);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(strm_write(fd, "0123456789", 10), 10);
    struct strbuf data = {.len = 7, .buf = "bandmsg"};
    CHECK_EQ(putpmsg(fd, NULL, &data, 2, MSG_BAND), 0);
    CHECK_EQ(ustreams_quiesce(2000), 0);

    char *s = dump_str(fd, &r);
    CHECK_EQ(r, 0);
    if (s) {
        char want[64];
        snprintf(want, sizeof(want), "stream fd=%d name=/dev/streams/echo ", fd);
        CHECK(find_line(s, want, line, sizeof(line)));
        CHECK(strstr(line, "modules=1") != NULL);
        CHECK(find_line(s, "  [1] module srvmod id=5002 opens=", line, sizeof(line)));
        CHECK(line_after(s, "[1] module srvmod", line, sizeof(line)));
        CHECK(strncmp(line, "      wr count=30 hiwat=5120 lowat=1024 ", 40) == 0);
        CHECK(strstr(line, " msgs=4 put=4 srv=0 ") != NULL);
        CHECK(strstr(line, "QNOENB") != NULL);
        CHECK(strstr(line, "QENAB") == NULL);
        CHECK(strstr(line, "QFULL") == NULL);
        CHECK(line_after(s, "      wr count=30", line, sizeof(line)));
        CHECK(strncmp(line, "        band 1 count=0 ", 23) == 0);
        const char *b2 = strstr(s, "        band 2 count=7 hiwat=5120 lowat=1024 msgs=1 ");
        const char *m2 = strstr(s, "        msg M_DATA band=2 bytes=7\n");
        const char *m0 = strstr(s, "        msg M_DATA band=0 bytes=10\n");
        CHECK(b2 && m2 && m0 && b2 < m2 && m2 < m0); /* the band ahead of band 0 */
        CHECK(find_line(s, "  [2] driver echo id=5003 major=", line, sizeof(line)));
        CHECK(line_after(s, "[2] driver echo", line, sizeof(line)));
        CHECK(strstr(line, "wr count=0 ") && strstr(line, " put=0 "));
    }
    free(s);

    /* Past the high-water mark: the writer is turned away. */
    memset(big, 'x', sizeof(big));
    int n = 0;
    for (; n < 20; n++)
        if (strm_write(fd, big, sizeof(big)) < 0)
            break;
    CHECK_EQ(errno, EAGAIN);
    CHECK(n >= 5 && n < 20);
    s = dump_str(fd, &r);
    CHECK_EQ(r, 0);
    if (s) {
        CHECK(line_after(s, "[1] module srvmod", line, sizeof(line)));
        CHECK(strstr(line, "QFULL") && strstr(line, "QWANTW") && strstr(line, "QNOENB"));
        long count = -1;
        CHECK_EQ(sscanf(line, " wr count=%ld", &count), 1);
        CHECK_EQ(count, 30 + 1000L * n);
    }
    free(s);

    /* Enabled again: everything drains down and is echoed to the head. */
    enableok(q);
    qenable(q);
    CHECK_EQ(ustreams_quiesce(2000), 0);
    s = dump_str(fd, &r);
    CHECK_EQ(r, 0);
    if (s) {
        CHECK(line_after(s, "[1] module srvmod", line, sizeof(line)));
        CHECK(strncmp(line, "      wr count=0 ", 17) == 0);
        CHECK(strstr(line, " msgs=0 ") && strstr(line, "QNOENB") == NULL);
        CHECK(strstr(line, "QFULL") == NULL);
        long srv = 0;
        const char *sv = strstr(line, " srv=");
        CHECK(sv && sscanf(sv, " srv=%ld", &srv) == 1 && srv >= 1);
        CHECK(line_after(s, "      wr count=0 hiwat=65536", line, sizeof(line)));
        char want[64];
        snprintf(want, sizeof(want), "      rd count=%ld ", 30 + 1000L * n);
        CHECK(strncmp(line, want, strlen(want)) == 0); /* head read queue: every echo */
        snprintf(want, sizeof(want), " msgs=%d put=%d ", 4 + n, 4 + n);
        CHECK(strstr(line, want) != NULL);
        CHECK(line_after(s, line, line, sizeof(line))); /* band 1, then band 2 */
        CHECK(line_after(s, line, line, sizeof(line)));
        CHECK(strncmp(line, "        band 2 count=7 hiwat=65536 lowat=16384 msgs=1 ", 54) == 0);
    }
    free(s);
    CHECK_EQ(strm_close(fd), 0);
}

/* D.3 */
static void test_pipe(void)
{
    int fds[2], r;
    char line[512];
    CHECK_EQ(strm_pipe(fds), 0);
    CHECK_EQ(strm_ioctl(fds[0], I_PUSH, "pipemod"), 0);
    CHECK_EQ(strm_write(fds[0], "abc", 3), 3);
    CHECK_EQ(strm_write(fds[0], "defg", 4), 4);
    char *s = dump_str(fds[0], &r);
    CHECK_EQ(r, 0);
    if (s) {
        CHECK(find_line(s, "stream ", line, sizeof(line)) && strstr(line, "STRPIPE"));
        CHECK(find_line(s, "  [0] head strhead id=0", line, sizeof(line)));
        CHECK(find_line(s, "  [1] module pipemod id=5303 opens=", line, sizeof(line)));
        CHECK(find_line(s, "  [2] pipe pipe ", line, sizeof(line)));
        CHECK(find_line(s, "  -- twist --", line, sizeof(line)));
        CHECK(find_line(s, "  [3] far pipe pipe ", line, sizeof(line)));
        CHECK(find_line(s, "  [4] far head strhead", line, sizeof(line)));
        CHECK(line_after(s, "      wr count=0 hiwat=65536 lowat=16384 minpsz=0 maxpsz=INF msgs=0 "
                            "put=0 srv=0 flags=0x84022",
                         line, sizeof(line)));
        CHECK(strstr(s, "      rd count=7 hiwat=262144 lowat=65536 minpsz=0 maxpsz=INF msgs=2 put=2 ") !=
              NULL);
        CHECK(strstr(s, "[5]") == NULL);
    }
    free(s);
    s = dump_str(fds[1], &r);
    CHECK_EQ(r, 0);
    if (s) {
        CHECK(find_line(s, "  [1] pipe pipe ", line, sizeof(line)));
        CHECK(find_line(s, "  [3] far module pipemod ", line, sizeof(line)));
        CHECK(find_line(s, "  [4] far head strhead", line, sizeof(line)));
        CHECK(strstr(s, "stream") && strstr(s, "modules=0"));
    }
    free(s);
    char buf[16];
    CHECK_EQ(strm_read(fds[1], buf, sizeof(buf)), 7);
    CHECK_EQ(strm_close(fds[0]), 0);
    /* The other end, hung up, has nothing across any more. */
    s = dump_str(fds[1], &r);
    CHECK_EQ(r, 0);
    CHECK(s && strstr(s, "twist") == NULL && strstr(s, "STRHUP") != NULL);
    free(s);
    CHECK_EQ(strm_close(fds[1]), 0);
}

/* D.4 */
static void test_all(void)
{
    int r;
    char want[96], line[512];
    int a = strm_open("/dev/streams/nuls", O_RDWR);
    int b = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(a >= 0 && b >= 0);
    char *s = dump_str(-2, &r);
    CHECK(r >= 2);
    if (s) {
        snprintf(want, sizeof(want), "stream fd=%d name=/dev/streams/nuls ", a);
        CHECK(find_line(s, want, line, sizeof(line)));
        snprintf(want, sizeof(want), "stream fd=%d name=/dev/streams/clone/echo ", b);
        CHECK(find_line(s, want, line, sizeof(line)));
        CHECK(find_line(s, "  [1] driver nuls id=5004 ", line, sizeof(line)));
    }
    free(s);
    strm_close(a);
    strm_close(b);
    s = dump_str(-2, &r);
    CHECK_EQ(r, 0);
    CHECK(s && s[0] == '\0');
    free(s);
}

/* D.5 */
static atomic_int churn_stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!atomic_load(&churn_stop)) {
        int fd = strm_open("/dev/streams/clone/echo", O_RDWR | O_NONBLOCK);
        if (fd < 0)
            continue;
        strm_ioctl(fd, I_PUSH, "nullmod");
        strm_ioctl(fd, I_PUSH, "srvmod");
        strm_write(fd, "x", 1);
        strm_ioctl(fd, I_POP, 0);
        strm_close(fd);
    }
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t t[2];
    int ok = 1;
    FILE *devnull = fopen("/dev/null", "w");
    CHECK(devnull != NULL);
    if (!devnull)
        return;
    atomic_store(&churn_stop, 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 300; i++) {
        struct ustreams_modinfo v[64];
        if (ustreams_dump_all(devnull) < 0 || ustreams_modinfo(v, 64) < 0)
            ok = 0;
    }
    atomic_store(&churn_stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(ok);
    fclose(devnull);
}

/* T.1 */
static void test_tool_device(void)
{
    int st;
    char line[512];
    char *out = tool_run("strinfo", "/dev/streams/echo -p nullmod", &st);
    CHECK_EQ(st, 0);
    if (out) {
        CHECK(find_line(out, "stream fd=", line, sizeof(line)));
        CHECK(strstr(line, "name=/dev/streams/echo") && strstr(line, "modules=1"));
        CHECK(find_line(out, "  [0] head strhead id=0", line, sizeof(line)));
        CHECK(find_line(out, "  [1] module nullmod id=5001 opens=1 closes=0", line, sizeof(line)));
        CHECK(find_line(out, "  [2] driver echo id=5003 major=", line, sizeof(line)));
        CHECK(strstr(line, "opens=1 closes=0") != NULL);
        /* Three writes of "strinfo N\n": through nullmod, echoed to the head. */
        CHECK(line_after(out, "[1] module nullmod", line, sizeof(line)));
        CHECK(strstr(line, "wr count=0 hiwat=5120 lowat=1024") && strstr(line, " put=3 srv=0 "));
        CHECK(line_after(out, "[2] driver echo", line, sizeof(line)));
        long srv = 0;
        const char *sv = strstr(line, " put=3 srv=");
        CHECK(sv && sscanf(sv, " put=3 srv=%ld", &srv) == 1 && srv >= 1);
        CHECK(line_after(out, "[0] head strhead", line, sizeof(line)));
        CHECK(line_after(out, line, line, sizeof(line)));
        const char *want = "      rd count=30 hiwat=65536 lowat=16384 minpsz=0 maxpsz=INF msgs=3 put=3 ";
        CHECK(strncmp(line, want, strlen(want)) == 0);
        CHECK(strstr(out, "        msg M_DATA band=0 bytes=10") != NULL);
    }
    free(out);
}

/* T.2 */
static void test_tool_pipe(void)
{
    int st;
    char line[512];
    char *out = tool_run("strinfo", "--pipe -p pipemod -w 2 -b 3", &st);
    CHECK_EQ(st, 0);
    if (out) {
        CHECK(find_line(out, "  -- twist --", line, sizeof(line)));
        CHECK(find_line(out, "  [3] far module pipemod", line, sizeof(line)));
        CHECK(strstr(out, "        band 3 count=20 hiwat=262144 lowat=65536 msgs=2 ") != NULL);
        CHECK(strstr(out, "        msg M_DATA band=3 bytes=10") != NULL);
        /* both ends are shown */
        const char *first = strstr(out, "stream fd=");
        CHECK(first && strstr(first + 1, "stream fd=") != NULL);
    }
    free(out);
}

/* T.3 */
static void test_tool_errors(void)
{
    CHECK(tool_expect("strinfo", "/dev/streams/bogus", 1, "strinfo: /dev/streams/bogus: "));
    CHECK(tool_expect("strinfo", "-p nosuchmod /dev/streams/echo", 1, "I_PUSH nosuchmod"));
    /* Without DEVICE or --pipe strinfo shows the published processes' streams
     * (test_tools_msgs T.6); the sample stream's options alone are refused. */
    CHECK(tool_expect("strinfo", "-w 2", 2, "name a DEVICE or --pipe"));
    CHECK(tool_expect("strinfo", "--pipe /dev/streams/echo", 2, NULL));
    CHECK(tool_expect("strinfo", "-b 256 /dev/streams/echo", 2, NULL));
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);
    test_errors();
    test_noenable();
    test_pipe();
    test_all();
    test_concurrent();
    test_tool_device();
    test_tool_pipe();
    test_tool_errors();
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
