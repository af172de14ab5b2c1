/* SPDX-License-Identifier: MIT */
/*
 * test_devnames.c -- the device name space (docs/ADMIN.md, "Device names"):
 * Linux Fast-STREAMS' minor-numbered names /dev/streams/<driver>/<N> and
 * the FIFO drivers fifo, sfx and pipe (sfx(4), spx(4) of Fast-STREAMS).
 * Cases:
 *   N.1  each form opens: <drv>, <drv>/<N>, clone/<drv>, /dev/<drv>
 *   N.2  minor sharing: two opens of echo/3 are one stream (what one writes
 *        the other reads back, as echo echoes it on the one stream); echo/3
 *        and echo/4 are two; loop/N reaches the stream a clone open of loop
 *        made with minor N (SVR4: an open of an existing minor)
 *   N.3  out of range: echo/256, loop/1024, fifo/256, any/262144 (above
 *        L_MAXMIN) fail ENXIO; unknown drivers and malformed minors ENOENT
 *   N.4  fifo/0 is /dev/streams/fifo; a reader and a writer open connect;
 *        sfx/N is fifo/N; fifo/1 is another FIFO
 *   N.5  pipemod pushes on sfx/0; pipe opens are new loop-back streams
 *   N.6  scls lists fifo, sfx and pipe, in aligned columns (ticotsord)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stropts.h>
#include <sys/loop.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "check.h"
#include "tool_run.h"

static int opens(const char *path, int oflag)
{
    int fd = strm_open(path, oflag);
    if (CHECK(fd >= 0) == 0)
        fprintf(stderr, "  open %s: %s\n", path, strerror(errno));
    return fd;
}

static void fails(const char *path, int oflag, int err)
{
    errno = 0;
    int fd = strm_open(path, oflag);
    if (!CHECK_EQ(fd, -1))
        strm_close(fd);
    if (!CHECK_EQ(errno, err))
        fprintf(stderr, "  open %s: errno %d, want %d\n", path, errno, err);
}

/* N.1 */
static void test_forms(void)
{
    const char *names[] = {"/dev/streams/echo", "/dev/streams/echo/0", "/dev/streams/echo/255",
                           "/dev/streams/clone/echo", "/dev/echo", "/dev/streams/nuls/7",
                           "/dev/streams/loop/5", "/dev/streams/ticots/3", "/dev/streams/sad/0",
                           "/dev/streams/fifo/0", "/dev/streams/sfx/0", "/dev/streams/pipe",
                           "/dev/streams/pipe/0", "/dev/streams/clone/sfx", "/dev/sfx"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int fd = opens(names[i], O_RDWR);
        if (fd >= 0) {
            CHECK_EQ(strm_ioctl(fd, I_ISASTREAM, 0) >= 0, 1);
            CHECK_EQ(strm_close(fd), 0);
        }
    }
}

/* N.2 */
static void test_sharing(void)
{
    char buf[16];
    int a = opens("/dev/streams/echo/3", O_RDWR | O_NONBLOCK);
    int b = opens("/dev/streams/echo/3", O_RDWR | O_NONBLOCK);
    int c = opens("/dev/streams/echo/4", O_RDWR | O_NONBLOCK);
    CHECK_EQ(strm_write(a, "abc", 3), 3);
    CHECK_EQ(strm_read(b, buf, sizeof(buf)), 3); /* one stream: b reads a's echo */
    CHECK_EQ(memcmp(buf, "abc", 3), 0);
    CHECK_EQ(strm_read(a, buf, sizeof(buf)), -1); /* read once, by b */
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(strm_read(c, buf, sizeof(buf)), -1); /* echo/4: another stream */
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(strm_close(a), 0);
    CHECK_EQ(strm_write(b, "d", 1), 1); /* the stream lives on with b */
    CHECK_EQ(strm_read(b, buf, sizeof(buf)), 1);
    CHECK_EQ(strm_close(b), 0);
    CHECK_EQ(strm_close(c), 0);

    /* loop: a clone open makes minor N; loop/N then reaches that stream */
    int l = opens("/dev/streams/clone/loop", O_RDWR | O_NONBLOCK);
    int minor = 0;
    struct strioctl ic = {.ic_cmd = LOOP_GET_DEV, .ic_len = sizeof(minor), .ic_dp = (char *)&minor};
    int rv = strm_ioctl(l, I_STR, &ic);
    CHECK(rv >= 1);
    char path[64];
    snprintf(path, sizeof(path), "/dev/streams/loop/%d", rv);
    int x = opens(path, O_RDWR | O_NONBLOCK); /* before: EBUSY, a second stream on minor N */
    CHECK_EQ(strm_ioctl(l, I_PUSH, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(x, I_FIND, "nullmod"), 1); /* the same stream */
    CHECK_EQ(strm_close(x), 0);
    CHECK_EQ(strm_close(l), 0);
    /* the clone's stream is gone: loop/N is a new, empty stream now */
    x = opens(path, O_RDWR | O_NONBLOCK);
    CHECK_EQ(strm_ioctl(x, I_FIND, "nullmod"), 0);
    CHECK_EQ(strm_close(x), 0);
}

/* N.3 */
static void test_ranges(void)
{
    fails("/dev/streams/echo/256", O_RDWR, ENXIO);
    fails("/dev/streams/nuls/100000", O_RDWR, ENXIO);
    fails("/dev/streams/loop/1024", O_RDWR, ENXIO);
    fails("/dev/streams/fifo/256", O_RDWR, ENXIO);
    fails("/dev/streams/sfx/4096", O_RDWR, ENXIO);
    fails("/dev/streams/echo/262144", O_RDWR, ENXIO);     /* above L_MAXMIN */
    fails("/dev/streams/echo/99999999999999999999", O_RDWR, ENXIO);
    fails("/dev/streams/nosuch/0", O_RDWR, ENOENT);
    fails("/dev/streams/nosuch", O_RDWR, ENOENT);
    fails("/dev/streams/echo/", O_RDWR, ENOENT);
    fails("/dev/streams/echo/x1", O_RDWR, ENOENT);
    fails("/dev/streams/echo/-1", O_RDWR, ENOENT);
    fails("/dev/streams/echo/1/2", O_RDWR, ENOENT);
    fails("/dev/streams/clone/echo/1", O_RDWR, ENOENT);
}

/* N.4 */
static void test_fifo_minors(void)
{
    char buf[16];
    /* a reader (non-blocking: it does not wait for a writer) and a writer */
    int r = opens("/dev/streams/fifo/0", O_RDONLY | O_NONBLOCK);
    int w = opens("/dev/streams/fifo/0", O_WRONLY);
    CHECK_EQ(strm_write(w, "hello", 5), 5);
    CHECK_EQ(strm_read(r, buf, sizeof(buf)), 5);
    CHECK_EQ(memcmp(buf, "hello", 5), 0);
    /* /dev/streams/fifo and sfx/0 are the same FIFO */
    int f = opens("/dev/streams/fifo", O_WRONLY);
    int s = opens("/dev/streams/sfx/0", O_WRONLY);
    CHECK_EQ(strm_write(f, "1", 1), 1);
    CHECK_EQ(strm_write(s, "2", 1), 1);
    CHECK_EQ(strm_read(r, buf, sizeof(buf)), 2); /* byte-stream mode: both, in order */
    CHECK_EQ(memcmp(buf, "12", 2), 0);
    /* fifo/1 is another FIFO: nothing of fifo/0 there */
    int o = opens("/dev/streams/fifo/1", O_RDWR | O_NONBLOCK);
    CHECK_EQ(strm_read(o, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EAGAIN);
    /* O_WRONLY|O_NONBLOCK with no reader: ENXIO (fifo(7)) */
    fails("/dev/streams/sfx/9", O_WRONLY | O_NONBLOCK, ENXIO);
    CHECK_EQ(strm_close(o), 0);
    CHECK_EQ(strm_close(f), 0);
    CHECK_EQ(strm_close(s), 0);
    CHECK_EQ(strm_close(w), 0);
    CHECK_EQ(strm_close(r), 0);
}

/* N.5 */
static void test_sfx_pipe(void)
{
    char buf[16];
    int fd = opens("/dev/streams/sfx/0", O_RDWR | O_NONBLOCK);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "pipemod"), 0);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "pipemod"), 1);
    CHECK_EQ(strm_write(fd, "pm", 2), 2); /* through pipemod, round the loop */
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 2);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    CHECK_EQ(strm_close(fd), 0);

    int p1 = opens("/dev/streams/pipe", O_RDWR | O_NONBLOCK);
    int p2 = opens("/dev/streams/pipe/0", O_RDWR | O_NONBLOCK);
    CHECK_EQ(strm_write(p1, "x", 1), 1);
    CHECK_EQ(strm_read(p2, buf, sizeof(buf)), -1); /* a clone: another stream */
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(strm_read(p1, buf, sizeof(buf)), 1); /* loops back to itself */
    CHECK_EQ(strm_close(p1), 0);
    CHECK_EQ(strm_close(p2), 0);
}

/* N.6 */
static void test_scls(void)
{
    int st = -1;
    char line[256];
    char *out = tool_run("scls", "", &st);
    CHECK(out != NULL);
    if (out == NULL)
        return;
    CHECK_EQ(st, 0);
    CHECK(strstr(out, "\nfifo\n") != NULL);
    CHECK(strstr(out, "\nsfx\n") != NULL);
    CHECK(strstr(out, "\npipe\n") != NULL);
    free(out);
    out = tool_run("scls", "-l echo ticotsord fifo", &st);
    CHECK(out != NULL);
    if (out == NULL)
        return;
    CHECK_EQ(st, 0);
    /* every line has KIND at the same column, past the longest name */
    CHECK(find_line(out, "NAME ", line, sizeof(line)));
    const char *k = strstr(line, "KIND");
    CHECK(k != NULL);
    long col = k ? k - line : -1;
    CHECK_EQ(col, 10);
    const char *want[] = {"echo ", "ticotsord ", "fifo "};
    for (int i = 0; i < 3; i++) {
        CHECK(find_line(out, want[i], line, sizeof(line)));
        CHECK_EQ(strncmp(line + col, "driver", 6), 0);
    }
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    alarm(120);
    signal(SIGPIPE, SIG_IGN);
    tool_run_init(argv[0]);
    test_forms();
    test_sharing();
    test_ranges();
    test_fifo_minors();
    test_sfx_pipe();
    test_scls();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
