/* SPDX-License-Identifier: MIT */
/*
 * test_pipe_modcopy.c -- small messages that come up through modules are
 * copied into the head's coalescing blocks on the thread that brings them,
 * with their boundaries kept; a dry reader gathers a batch while a stream
 * keeps coming (issue 24; src/head/sd_arrive.c "Copied at the head",
 * src/head/sd_wait.c "Gathering a batch"; docs/STREAMHEAD.md "Through
 * modules without queues").
 *
 * References: streamio(7) I_NREAD, I_PEEK, I_SRDOPT (RMSGN: a read returns at
 * most one message); getmsg(2); the SVR4 STREAMS Programmer's Guide,
 * "Message ordering".
 *
 *   M.1 sizes around the copy limit (1 to 300 bytes) through a nullmod, no
 *       reader running: the small ones take far fewer blocks than messages
 *       (copied), I_NREAD counts every message and gives the first one's
 *       length, I_PEEK shows the first alone, RMSGN reads return each message
 *       whole and intact, in order
 *   M.2 the same read with getmsg: one message each, flags 0, intact
 *   M.3 a module that splits each message into a chain of 3-byte blocks
 *       (and an empty one): read back whole, one message per RMSGN read
 *   M.4 no memory for a coalescing block: the message is linked as it is,
 *       nothing lost (an injected allocation failure at the copy)
 *   M.5 a writer thread streams 20000 messages of 1-400 bytes through two
 *       nullmods and closes; the reader (RMSGN) gets each once, intact, in
 *       order, then end of file; no block outstanding
 *   M.6 M.5 again in a child with USTREAMS_BATCH_US=0 (no gathering)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/strconf.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "strcore.h"

#define NSMALL 60
#define STREAM_MSGS 20000
#define MAXLEN 400

static const size_t sizes[] = {1, 7, 64, 200, 255, 256, 257, 300};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Message i: its length and byte j. */
static size_t len_of(unsigned i)
{
    return sizes[i % NSIZES];
}

static unsigned char byte_of(unsigned i, size_t j)
{
    return (unsigned char)(i * 31u + j * 7u + 1u);
}

static void fill(unsigned char *b, unsigned i, size_t n)
{
    for (size_t j = 0; j < n; j++)
        b[j] = byte_of(i, j);
}

static int intact(const unsigned char *b, unsigned i, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (b[j] != byte_of(i, j))
            return 0;
    return 1;
}

static long blocks_now(void)
{
    struct ustreams_blockstats st;
    ustreams_blockstats(&st);
    return st.mblks;
}

/* A pipe with `mods` nullmods on the writer end (fds[0]). */
static int modpipe(int fds[2], int mods, const char *name)
{
    if (strm_pipe(fds) != 0)
        return -1;
    for (int i = 0; i < mods; i++)
        if (strm_ioctl(fds[0], I_PUSH, name) != 0)
            return -1;
    return 0;
}

static void write_all_small(int fd, unsigned n)
{
    unsigned char buf[MAXLEN];
    for (unsigned i = 0; i < n; i++) {
        fill(buf, i, len_of(i));
        CHECK_EQ(strm_write(fd, buf, len_of(i)), (long)len_of(i));
    }
}

/* M.1 and M.2: read = 0 reads with read(2) in RMSGN, 1 with getmsg. */
static void boundaries(int with_getmsg)
{
    int p[2];
    CHECK_EQ(modpipe(p, 1, "nullmod"), 0);
    long before = blocks_now();
    write_all_small(p[0], NSMALL);
    /* 60 messages, of which 45 of at most 256 bytes: copied into a few
     * 4 KiB blocks; the 15 larger ones stay blocks of their own. */
    long used = blocks_now() - before;
    if (!CHECK(used < NSMALL / 2))
        fprintf(stderr, "modcopy: %ld blocks for %d messages\n", used, NSMALL);
    int first = 0;
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &first), NSMALL);
    CHECK_EQ(first, (long)len_of(0));
    unsigned char buf[MAXLEN + 8];
    struct strpeek pk = {.ctlbuf = {.maxlen = -1}, .databuf = {.maxlen = sizeof(buf), .buf = (char *)buf}};
    CHECK_EQ(strm_ioctl(p[1], I_PEEK, &pk), 1);
    CHECK_EQ(pk.databuf.len, (long)len_of(0));
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    long bad = 0;
    for (unsigned i = 0; i < NSMALL; i++) {
        size_t n = len_of(i);
        long got;
        if (with_getmsg) {
            struct strbuf d = {.maxlen = sizeof(buf), .buf = (char *)buf};
            int fl = 0;
            got = getmsg(p[1], NULL, &d, &fl) == 0 ? d.len : -1;
        } else {
            got = strm_read(p[1], buf, sizeof(buf));
        }
        if (got != (long)n || !intact(buf, i, n))
            bad++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(strm_ioctl(p[1], I_NREAD, &first), 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
}

/* M.3: "splitmt", a put-only module that passes each M_DATA message on as
 * a chain of 3-byte blocks behind an empty one. */
static int split_put(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type != M_DATA || mp->b_cont) {
        putnext(q, mp);
        return 0;
    }
    mblk_t *head = allocb(0, BPRI_MED), *tail = head;
    for (unsigned char *p = mp->b_rptr; head && p < mp->b_wptr; p += 3) {
        size_t k = (size_t)(mp->b_wptr - p) < 3 ? (size_t)(mp->b_wptr - p) : 3;
        mblk_t *b = allocb(k, BPRI_MED);
        if (!b) {
            freemsg(head);
            head = NULL;
            break;
        }
        memcpy(b->b_wptr, p, k);
        b->b_wptr += k;
        tail->b_cont = b;
        tail = b;
    }
    if (!head) { /* no memory: pass it on whole */
        putnext(q, mp);
        return 0;
    }
    freemsg(mp);
    putnext(q, head);
    return 0;
}

static int split_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)devp, (void)oflag, (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    qprocson(q);
    return 0;
}

static int split_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)oflag, (void)crp;
    qprocsoff(q);
    return 0;
}

static struct module_info split_minfo = {.mi_idname = "splitmt", .mi_maxpsz = INFPSZ,
                                         .mi_hiwat = 65536, .mi_lowat = 1024};
static struct qinit split_rinit = {.qi_putp = split_put, .qi_qopen = split_open,
                                   .qi_qclose = split_close, .qi_minfo = &split_minfo};
static struct qinit split_winit = {.qi_putp = split_put, .qi_minfo = &split_minfo};
static struct streamtab split_info = {.st_rdinit = &split_rinit, .st_wrinit = &split_winit};
static struct fmodsw split_fmod = {.f_name = "splitmt", .f_str = &split_info, .f_flag = D_MP};

static void chains(void)
{
    CHECK_EQ(register_strmod(&split_fmod), 0);
    int p[2];
    CHECK_EQ(modpipe(p, 1, "splitmt"), 0);
    write_all_small(p[0], NSMALL);
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    unsigned char buf[MAXLEN + 8];
    long bad = 0;
    for (unsigned i = 0; i < NSMALL; i++) {
        ssize_t got = strm_read(p[1], buf, sizeof(buf));
        if (got != (ssize_t)len_of(i) || !intact(buf, i, len_of(i)))
            bad++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(strm_close(p[0]), 0);
    CHECK_EQ(strm_close(p[1]), 0);
    CHECK_EQ(unregister_strmod(&split_fmod), 0);
}

/* M.4: the allocation after the write's own block fails (the coalescing
 * block a first message needs): the message arrives anyway. */
static void no_memory(void)
{
    for (long skip = 0; skip < 4; skip++) {
        int p[2];
        CHECK_EQ(modpipe(p, 1, "nullmod"), 0);
        unsigned char buf[MAXLEN];
        fill(buf, 3, 100);
        ust_fail_allocs_after(skip, 1);
        ssize_t w = strm_write(p[0], buf, 100);
        int e = errno;
        ustreams_fail_allocs(0);
        if (w < 0) { /* the write's own block failed: a clean error, nothing sent */
            CHECK(e == ENOSR || e == ENOMEM || e == EAGAIN);
            CHECK_EQ(strm_write(p[0], buf, 100), 100);
        }
        memset(buf, 0, sizeof(buf));
        CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
        CHECK_EQ(strm_read(p[1], buf, sizeof(buf)), 100);
        CHECK(intact(buf, 3, 100));
        int n = -1;
        CHECK_EQ(strm_ioctl(p[1], I_NREAD, &n), 0);
        CHECK_EQ(strm_close(p[0]), 0);
        CHECK_EQ(strm_close(p[1]), 0);
    }
}

/* M.5: message i of the stream: 1-400 bytes, its index in the first 4. */
static size_t stream_len(unsigned i)
{
    return 4 + (i * 2654435761u >> 7) % (MAXLEN - 3);
}

static void *stream_writer(void *arg)
{
    int fd = *(int *)arg;
    unsigned char buf[MAXLEN + 4];
    for (unsigned i = 0; i < STREAM_MSGS; i++) {
        size_t n = stream_len(i);
        memcpy(buf, &i, 4);
        fill(buf + 4, i, n - 4);
        if (strm_write(fd, buf, n) != (ssize_t)n) {
            perror("modcopy writer");
            break;
        }
    }
    strm_close(fd);
    return NULL;
}

static void stream(void)
{
    int p[2];
    CHECK_EQ(modpipe(p, 2, "nullmod"), 0);
    CHECK_EQ(strm_ioctl(p[1], I_SRDOPT, RMSGN), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, stream_writer, &p[0]), 0);
    unsigned char buf[MAXLEN + 8];
    unsigned next = 0;
    long bad = 0;
    for (;;) {
        ssize_t got = strm_read(p[1], buf, sizeof(buf));
        if (got <= 0)
            break;
        unsigned idx;
        memcpy(&idx, buf, 4);
        if (got < 4 || idx != next || (size_t)got != stream_len(idx) ||
            !intact(buf + 4, idx, (size_t)got - 4))
            bad++;
        next = idx + 1;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(next, STREAM_MSGS);
    pthread_join(t, NULL);
    CHECK_EQ(strm_close(p[1]), 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    alarm(120); /* a hang fails */
    if (getenv("MODCOPY_CHILD")) { /* M.6 */
        stream();
        CHECK_EQ(ustreams_quiesce(5000), 0);
        CHECK_NO_BLOCKS();
        return CHECK_RESULT();
    }
    boundaries(0); /* M.1 */
    boundaries(1); /* M.2 */
    chains();      /* M.3 */
    no_memory();   /* M.4 */
    stream();      /* M.5 */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("MODCOPY_CHILD", "1", 1);
        setenv("USTREAMS_BATCH_US", "0", 1);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
