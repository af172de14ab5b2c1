/* SPDX-License-Identifier: MIT */
/*
 * test_mux_stress.c -- traffic through the "mux" multiplexer from many
 * threads at once, with flow control engaged.
 *
 * Six upper streams of mux are routed to six lower streams linked under one
 * controlling stream:
 *   - two echo streams: a writer thread writes on the upper stream, the
 *     messages go down through mux into echo and come back up to the same
 *     upper stream, where a reader thread reads them;
 *   - two STREAMS pipes (one end linked): a writer on the upper stream, a
 *     reader on the pipe's other end (down through mux);
 *   - two more STREAMS pipes: a writer on the pipe's other end, a reader on
 *     the upper stream (up through mux).
 * Every message carries (writer, sequence number, length, checksum); each
 * reader checks that its writer's messages arrive exactly once, intact and
 * in order (streamio(7): messages are FIFO within a band), reading one
 * message per read (RMSGN).  The mux queues get small water marks (strqset)
 * and the readers pause now and then, so writers block in flow control: a
 * monitor thread checks that the upper write queues were seen full.  Then
 * the controlling stream is closed first (its ordinary links are unlinked,
 * the routed upper streams hang up), everything else after, and no message
 * block may be outstanding.  Scaled down under the sanitizers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mux.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "sthead.h"

#if defined(__SANITIZE_THREAD__)
#define NMSG 2000
#elif defined(__SANITIZE_ADDRESS__)
#define NMSG 6000
#else
#define NMSG 20000
#endif
#define MAXPAY 600
#define NPATH  6
#define HIWAT  1024
#define LOWAT  256

struct hdr {
    uint32_t writer;
    uint32_t seq;
    uint32_t len; /* payload bytes after the header */
    uint32_t sum;
};

struct path {
    int wfd;              /* where the writer writes */
    int rfd;              /* where the reader reads */
    int id;               /* the writer's id */
    atomic_long received; /* messages the reader accepted */
    atomic_long bad;      /* messages out of order, damaged or foreign */
};

static struct path paths[NPATH];
static atomic_int writers_done;
static atomic_long full_seen; /* monitor: samples with an upper write queue full */

static uint32_t checksum(const unsigned char *p, size_t n)
{
    uint32_t s = 2166136261u;
    for (size_t i = 0; i < n; i++)
        s = (s ^ p[i]) * 16777619u;
    return s;
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void *writer(void *arg)
{
    struct path *p = arg;
    unsigned char buf[sizeof(struct hdr) + MAXPAY];
    uint32_t rnd = (uint32_t)p->id * 7919u + 1;

    for (uint32_t seq = 0; seq < NMSG; seq++) {
        rnd = rnd * 1103515245u + 12345u;
        struct hdr h = {(uint32_t)p->id, seq, (rnd >> 8) % MAXPAY + 1, 0};
        for (uint32_t i = 0; i < h.len; i++)
            buf[sizeof(h) + i] = (unsigned char)(seq + i * 31);
        h.sum = checksum(buf + sizeof(h), h.len);
        memcpy(buf, &h, sizeof(h));
        ssize_t r = strm_write(p->wfd, buf, sizeof(h) + h.len);
        if (r != (ssize_t)(sizeof(h) + h.len)) {
            fprintf(stderr, "writer %d: write %zd errno %d\n", p->id, r, errno);
            atomic_fetch_add(&p->bad, 1);
            break;
        }
    }
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

static void *reader(void *arg)
{
    struct path *p = arg;
    unsigned char buf[sizeof(struct hdr) + MAXPAY + 16];
    uint32_t next = 0;

    while (next < NMSG) {
        ssize_t r = strm_read(p->rfd, buf, sizeof(buf));
        if (r <= 0) {
            fprintf(stderr, "reader %d: read %zd errno %d at %u\n", p->id, r, errno, next);
            atomic_fetch_add(&p->bad, 1);
            break;
        }
        struct hdr h;
        memcpy(&h, buf, sizeof(h));
        if ((size_t)r != sizeof(h) + h.len || h.writer != (uint32_t)p->id || h.seq != next ||
            checksum(buf + sizeof(h), h.len) != h.sum) {
            fprintf(stderr, "reader %d: bad message (len %zd, writer %u, seq %u, want %u)\n", p->id,
                    r, h.writer, h.seq, next);
            atomic_fetch_add(&p->bad, 1);
            break;
        }
        next++;
        atomic_fetch_add(&p->received, 1);
        if (next % 997 == 0) {
            /* Let the writer run into flow control: its messages fill this
             * head and the queues below until the upper write queue is full
             * (the monitor sees it), which takes longer under a sanitizer.
             * Paths 4 and 5 do not write through an upper write queue. */
            nap_us(2000);
            for (int w = 0; p->id < 4 && atomic_load(&full_seen) == 0 && w < 500; w++)
                nap_us(1000);
        }
    }
    return NULL;
}

/* The queue just below the stream head of fd (the driver's write queue for
 * an upper stream); for a linked stream its own head write queue (the
 * multiplexer's lower write queue). */
static queue_t *wq_of(int fd, int below)
{
    int err;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (sd == NULL)
        return NULL;
    queue_t *q = below ? ust_qnext(sd->sd_wq) : sd->sd_wq;
    ust_sd_put(sd);
    return q;
}

static void small_marks(queue_t *q)
{
    CHECK(q != NULL);
    if (q == NULL)
        return;
    CHECK_EQ(strqset(q, QHIWAT, 0, HIWAT), 0);
    CHECK_EQ(strqset(q, QLOWAT, 0, LOWAT), 0);
}

static queue_t *upper_wq[NPATH];

static void *monitor(void *arg)
{
    (void)arg;
    while (atomic_load(&writers_done) < NPATH) {
        for (int i = 0; i < NPATH; i++)
            if (upper_wq[i] && (ust_qflags(upper_wq[i]) & QFULL))
                atomic_fetch_add(&full_seen, 1);
        nap_us(200);
    }
    return NULL;
}

static int route(int fd, int muxid)
{
    struct strioctl si = {MUX_ROUTE, 0, sizeof(int), (char *)&muxid};
    return strm_ioctl(fd, I_STR, &si);
}

int main(void)
{
    int ctl = strm_open("/dev/streams/clone/mux", O_RDWR);
    int upper[NPATH], lower[NPATH], other[NPATH];
    CHECK(ctl >= 0);
    for (int i = 0; i < NPATH; i++) {
        upper[i] = strm_open("/dev/streams/clone/mux", O_RDWR);
        CHECK(upper[i] >= 0);
        other[i] = -1;
        if (i < 2) {
            lower[i] = strm_open("/dev/streams/clone/echo", O_RDWR);
        } else {
            int p[2];
            CHECK_EQ(strm_pipe(p), 0);
            lower[i] = p[0];
            other[i] = p[1];
            CHECK_EQ(strm_ioctl(other[i], I_SRDOPT, RMSGN), 0);
        }
        CHECK(lower[i] >= 0);
        int id = strm_ioctl(ctl, I_LINK, lower[i]);
        CHECK(id > 0);
        CHECK_EQ(route(upper[i], id), 0);
        CHECK_EQ(strm_ioctl(upper[i], I_SRDOPT, RMSGN), 0);
        upper_wq[i] = wq_of(upper[i], 1);
        small_marks(upper_wq[i]);
        small_marks(wq_of(lower[i], 0));
        paths[i].id = i;
        paths[i].wfd = i < 4 ? upper[i] : other[i];
        paths[i].rfd = i < 2 ? upper[i] : i < 4 ? other[i] : upper[i];
    }

    pthread_t w[NPATH], r[NPATH], mon;
    for (int i = 0; i < NPATH; i++) {
        CHECK_EQ(pthread_create(&r[i], NULL, reader, &paths[i]), 0);
        CHECK_EQ(pthread_create(&w[i], NULL, writer, &paths[i]), 0);
    }
    CHECK_EQ(pthread_create(&mon, NULL, monitor, NULL), 0);
    for (int i = 0; i < NPATH; i++) {
        pthread_join(w[i], NULL);
        pthread_join(r[i], NULL);
    }
    pthread_join(mon, NULL);
    for (int i = 0; i < NPATH; i++) {
        CHECK_EQ(atomic_load(&paths[i].received), NMSG);
        CHECK_EQ(atomic_load(&paths[i].bad), 0);
    }
    CHECK(atomic_load(&full_seen) > 0);

    /* Close the controlling stream first: the links go, the upper streams
     * routed to them hang up, the lower streams work again. */
    CHECK_EQ(strm_close(ctl), 0);
    char c;
    for (int i = 0; i < NPATH; i++) {
        CHECK_EQ(strm_read(upper[i], &c, 1), 0);
        CHECK_EQ(strm_write(lower[i], "z", 1), 1);
    }
    for (int i = 0; i < NPATH; i++) {
        CHECK_EQ(strm_close(upper[i]), 0);
        CHECK_EQ(strm_close(lower[i]), 0);
        if (other[i] >= 0)
            CHECK_EQ(strm_close(other[i]), 0);
    }
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
