/* SPDX-License-Identifier: MIT */
/*
 * perftest.c -- pipe throughput benchmark (build/perftest), after the perftest
 * of the OpenSS7 paper "STREAMS-based vs. Legacy Pipe Performance Comparison".
 *
 * A writer and a reader move SIZE-byte writes through one pipe for ITERATIONS
 * intervals of SECONDS each; every interval prints writes/s (counted by the
 * writer), reads/s (counted by the reader) and bytes/s = writes/s * SIZE.  The
 * same loop runs over a ustreams pipe (strm_pipe) or, with --peer, over
 * pipe(2), an AF_UNIX SOCK_STREAM or an AF_UNIX SOCK_SEQPACKET socketpair
 * (tools/perftest_peers.c) or a ZeroMQ inproc PAIR (tools/perftest_zmq.c), so
 * every figure can be taken side by side with the kernel's and a user-space
 * message library's.
 *
 *   ustreams perftest [-s SIZE] [-t SECONDS] [-i ITERATIONS] [-H] [-M] [-w] [-F]
 *            [-p COUNT] [-m MODULE] [-r] [-b|-n] [-q] [--csv]
 *            [--hiwat N] [--lowat N] [--peer IMPL] [--scale] [--warmup SECONDS]
 *            [--no-cache] [--procs]
 *
 * Principles of operation
 *   - The writer loop and the reader loop are functions of (options, fd,
 *     counters) and share nothing but one struct ust_perftest_pair
 *     (tools/perftest_run.h), which lives in a MAP_SHARED anonymous mapping:
 *     the loops run in forked processes (--procs, tools/perftest_procs.c) as
 *     well as in threads, without change.
 *   - Each loop publishes its running totals with relaxed atomic stores (one
 *     writer per counter); the main thread samples them at the interval
 *     boundaries, so counting costs the loops no locked instruction.
 *   - Stop: after the last interval the main thread raises the pair's stop
 *     flag.  The writer sees it before its next write, closes its end and
 *     returns; the reader reads until end of file (hang-up), then closes its
 *     end.  Every byte written is therefore read, and the totals must agree.
 *   - For ustreams, when both ends are closed the program waits for the
 *     executive to go idle (ustreams_quiesce) and prints the outstanding block
 *     counters (ustreams_blockstats), which must be zero: a benchmark run is
 *     also a leak check (with --procs, the sum of both processes' counts).
 *     Exit status 2 if they are not, or if the byte totals disagree, or a
 *     loop failed.
 *
 * Options (the paper's letters):
 *   -s SIZE     bytes per write (default 64; K/M suffixes accepted)
 *   -t SECONDS  length of one interval (default 2; fractions accepted)
 *   -i N        intervals (default 1)
 *   -H          hold: I_SWROPT SNDHOLD on the writer end (coalesce small writes)
 *   -M          M_READ: I_SRDOPT | RMREAD on the reader end (the reader's head
 *               sends M_READ downstream before a read blocks)
 *   -w          read-fill: I_SRDOPT | RFILL on the reader end
 *   -F          full-size reads: the reader's buffer is the full hiwat size
 *               (--hiwat, default 64 KiB) instead of SIZE
 *   -p COUNT    push COUNT modules on the writer end (default 0)
 *   -m MODULE   the module to push (default nullmod)
 *   -r          read(2)/write(2) instead of putmsg/getmsg (peers always use
 *               read/write)
 *   -b          blocking I/O (the default; kept for compatibility)
 *   -n          non-blocking I/O, waiting in poll on EAGAIN
 *   -q          quiet: only the interval lines (and problems)
 *   --csv       one line per interval on stdout:
 *               impl,size,writes_per_s,reads_per_s,bytes_per_s,options,mode
 *               (mode: threads, or procs with --procs)
 *               (the block counters go to stderr as "blockstats: ...", the
 *               whole run's counts, warm-up and drain included, as "totals:
 *               writes=N reads=N bytes=N": what bench/sweep.py divides a
 *               system call count by)
 *   --hiwat N, --lowat N
 *               water marks of the reader end's head read queue (ustreams,
 *               through the private strqset on sd_rq); peers: the pipe size
 *               (F_SETPIPE_SZ) or the socket buffers (SO_RCVBUF/SO_SNDBUF)
 *   --peer IMPL ustreams (default), pipe, unix-stream, unix-seqpacket, and
 *               zmq-inproc where the build found libzmq (tools/perftest_zmq.c)
 *   --scale     run two pipes (two writer/reader pairs) at once; report the sum
 *   --no-cache  bypass the per-thread message block caches (their share)
 *   --warmup S  run S seconds before the first interval (default 0.05)
 *   --procs     writer and reader processes instead of threads
 *               (tools/perftest_procs.c): the pair is made in the parent,
 *               then fork(); the child is the reader, the parent the writer
 *               (a writer thread beside the main thread that samples the
 *               counters, as in the threaded mode).  Each process closes the
 *               end it does not use and sets up its own (-p, -H on the writer
 *               end in the parent; -M, -w, --hiwat/--lowat on the reader end
 *               in the child; -n in both); the counters are the same shared
 *               mapping.  The CSV's last column says "procs" or "threads".
 *               Refused for zmq-inproc (exit 2).  Exit status 3 when ustreams
 *               pipes do not cross fork() in this build: the child's first
 *               call on its inherited end fails with EIO.
 *
 * A bad argument is refused before anything runs, with a line naming it
 * ("perftest: -s 0: the size must be 1 to N bytes", "perftest: unexpected
 * argument 'X'", "perftest: bad iterations 'X' ...") and then the synopsis;
 * a module -m names that cannot be pushed is reported by its name
 * ("I_PUSH: 'X': no such STREAMS module").
 *
 * Exit status: 0 measured; 2 bad options or a failure (a loop or a process
 * failed, the byte totals disagree, blocks outstanding, a hung reader
 * process); 3 not available (above).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include <stropts.h>
#include <sys/stream.h>
#include <ustreams.h>
#include <ustreams_exec.h>

#include "sthead.h"
#include "commands.h"
#include "perftest.h"
#include "perftest_run.h"

#define FULL_DEFAULT 65536 /* -F buffer without --hiwat: 64 KiB, the size pipe(2) holds */

/* ------------------------------------------------------------------------ */
/* Implementations                                                          */
/* ------------------------------------------------------------------------ */

static int mk_ustreams(int *wfd, int *rfd)
{
    int fds[2];
    if (strm_pipe(fds) < 0)
        return -1;
    *wfd = fds[0];
    *rfd = fds[1];
    return 0;
}

/* The ustreams pipe; its --hiwat is the head's read queue (set_watermarks). */
static const struct ust_perftest_impl ustreams_impl = {
    "ustreams", 1, mk_ustreams, NULL, strm_read, strm_write, strm_close, strm_poll, strm_fcntl,
    0,
};

/* --peer IMPL: the first is the default. */
static const struct ust_perftest_impl *const impls[] = {
    &ustreams_impl,
    &ust_perftest_pipe,
    &ust_perftest_unix_stream,
    &ust_perftest_unix_seqpacket,
#ifdef USTREAMS_HAVE_ZMQ
    &ust_perftest_zmq_inproc,
#endif
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))

/* ------------------------------------------------------------------------ */
/* Options and counters                                                     */
/* ------------------------------------------------------------------------ */

/* The full-read buffer size (-F). */
static size_t full_size(const struct ust_perftest_opts *o)
{
    return o->hiwat > 0 ? (size_t)o->hiwat : FULL_DEFAULT;
}

/* ------------------------------------------------------------------------ */
/* The loops                                                                */
/* ------------------------------------------------------------------------ */

/* Wait until fd is ready for `events` (non-blocking mode), or 100 ms pass so
 * that the caller can look at the stop flag. */
static void wait_ready(const struct ust_perftest_impl *im, int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    (void)im->poll(&p, 1, 100);
}

/* The writer: SIZE-byte writes until the stop flag, then close its end.
 * Context: its own thread (or process); touches only fd, o and ps->w/ps->stop. */
void ust_perftest_writer_loop(const struct ust_perftest_opts *o, int fd,
                              struct ust_perftest_pair *ps)
{
    const struct ust_perftest_impl *im = o->impl;
    char *buf = malloc(o->size);
    if (!buf) {
        atomic_store(&ps->w.err, ENOMEM);
        im->close(fd);
        return;
    }
    memset(buf, 'w', o->size);
    int use_msg = im->streams && !o->rw;
    long long n = 0, bytes = 0;
    while (!atomic_load_explicit(&ps->stop, memory_order_relaxed)) {
        ssize_t r;
        if (use_msg) {
            struct strbuf d = {.maxlen = 0, .len = (int)o->size, .buf = buf};
            r = putmsg(fd, NULL, &d, 0) < 0 ? -1 : (ssize_t)o->size;
        } else {
            r = im->write(fd, buf, o->size);
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                wait_ready(im, fd, POLLOUT);
                continue;
            }
            atomic_store(&ps->w.err, errno);
            break;
        }
        n++;
        bytes += r;
        atomic_store_explicit(&ps->w.ops, n, memory_order_relaxed);
        atomic_store_explicit(&ps->w.bytes, bytes, memory_order_relaxed);
    }
    im->close(fd);
    free(buf);
}

/* The reader: reads (SIZE bytes, or the full size with -F) until end of file,
 * then close its end.  Context: its own thread (or process); touches only fd,
 * o and ps->r. */
void ust_perftest_reader_loop(const struct ust_perftest_opts *o, int fd,
                              struct ust_perftest_pair *ps)
{
    const struct ust_perftest_impl *im = o->impl;
    size_t bufsz = o->full ? full_size(o) : o->size;
    char *buf = malloc(bufsz);
    if (!buf) {
        atomic_store(&ps->r.err, ENOMEM);
        im->close(fd);
        return;
    }
    int use_msg = im->streams && !o->rw;
    long long n = 0, bytes = 0;
    for (;;) {
        ssize_t r;
        if (use_msg) {
            struct strbuf d = {.maxlen = (int)bufsz, .len = 0, .buf = buf};
            int flags = 0;
            r = getmsg(fd, NULL, &d, &flags) < 0 ? -1 : (d.len > 0 ? d.len : 0);
        } else {
            r = im->read(fd, buf, bufsz);
        }
        if (r == 0)
            break; /* end of file: the writer closed */
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                wait_ready(im, fd, POLLIN);
                continue;
            }
            atomic_store(&ps->r.err, errno);
            break;
        }
        n++;
        bytes += r;
        atomic_store_explicit(&ps->r.ops, n, memory_order_relaxed);
        atomic_store_explicit(&ps->r.bytes, bytes, memory_order_relaxed);
    }
    im->close(fd);
    free(buf);
}

/* Thread wrappers. */
struct loop_arg {
    const struct ust_perftest_opts *o;
    struct ust_perftest_pair *ps;
    int fd;
};

static void *writer_thread(void *p)
{
    struct loop_arg *a = p;
    ust_perftest_writer_loop(a->o, a->fd, a->ps);
    return NULL;
}

static void *reader_thread(void *p)
{
    struct loop_arg *a = p;
    ust_perftest_reader_loop(a->o, a->fd, a->ps);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Setting up a pair                                                        */
/* ------------------------------------------------------------------------ */

static int set_nonblock(const struct ust_perftest_impl *im, int fd)
{
    int fl = im->fcntl(fd, F_GETFL);
    if (fl < 0 || im->fcntl(fd, F_SETFL, (long)(fl | O_NONBLOCK)) < 0)
        return -1;
    return 0;
}

/* The head read queue water marks of the reader end (--hiwat/--lowat): there
 * is no standard ioctl for them, so reach the stream head's read queue. */
static int set_watermarks(int fd, long hiwat, long lowat)
{
    int err = 0;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd)
        return err;
    /* Order the two so that lowat <= hiwat holds at every step. */
    size_t cur_hi = 0;
    (void)strqget(sd->sd_rq, QHIWAT, 0, &cur_hi);
    if (hiwat >= 0 && (size_t)hiwat >= cur_hi) {
        err = strqset(sd->sd_rq, QHIWAT, 0, (intptr_t)hiwat);
        if (!err && lowat >= 0)
            err = strqset(sd->sd_rq, QLOWAT, 0, (intptr_t)lowat);
    } else {
        if (lowat >= 0)
            err = strqset(sd->sd_rq, QLOWAT, 0, (intptr_t)lowat);
        if (!err && hiwat >= 0)
            err = strqset(sd->sd_rq, QHIWAT, 0, (intptr_t)hiwat);
    }
    ust_sd_put(sd);
    return err;
}

static int peer_buffers(const struct ust_perftest_opts *o, int wfd, int rfd)
{
    if (o->hiwat <= 0)
        return 0;
    return o->impl->buffers(wfd, rfd, (int)o->hiwat);
}

const char *ust_perftest_strerror(const struct ust_perftest_opts *o, const char *what, int err)
{
    static _Thread_local char msg[96];
    if (err == EINVAL && strcmp(what, "I_PUSH") == 0) {
        snprintf(msg, sizeof(msg), "'%s': no such STREAMS module (ustreams scls lists them)",
                 o->module);
        return msg;
    }
    return strerror(err);
}

int ust_perftest_setup_end(const struct ust_perftest_opts *o, int fd, int writer,
                           const char **what)
{
    const struct ust_perftest_impl *im = o->impl;
    if (im->streams && writer) {
        for (int i = 0; i < o->npush; i++) {
            *what = "I_PUSH";
            if (strm_ioctl(fd, I_PUSH, o->module) < 0)
                return errno;
        }
        if (o->hold) {
            int wr = 0;
            *what = "I_SWROPT SNDHOLD";
            if (strm_ioctl(fd, I_GWROPT, &wr) < 0 ||
                strm_ioctl(fd, I_SWROPT, (intptr_t)(wr | SNDHOLD)) < 0)
                return errno;
        }
    }
    if (im->streams && !writer) {
        if (o->mread || o->rfill) {
            int rd = 0;
            *what = "I_SRDOPT";
            if (strm_ioctl(fd, I_GRDOPT, &rd) < 0)
                return errno;
            rd |= (o->mread ? RMREAD : 0) | (o->rfill ? RFILL : 0);
            if (strm_ioctl(fd, I_SRDOPT, (intptr_t)rd) < 0)
                return errno;
        }
        if (o->hiwat >= 0 || o->lowat >= 0) {
            *what = "--hiwat/--lowat";
            int err = set_watermarks(fd, o->hiwat, o->lowat);
            if (err)
                return err;
        }
    }
    if (o->nonblock) {
        *what = "O_NONBLOCK";
        if (set_nonblock(im, fd) < 0)
            return errno;
    }
    return 0;
}

/* Make one pair; for the kernel's peers also size its buffers (--hiwat), which
 * belong to the pipe or socket pair, not to an end.  With `configure`, also
 * set up both ends here (the threaded mode; --procs sets up each end in the
 * process that uses it).  0, or prints why not and returns -1. */
static int setup_pair(const struct ust_perftest_opts *o, int *wfd, int *rfd, int configure)
{
    const struct ust_perftest_impl *im = o->impl;
    const char *what = "create";
    int err = 0;
    if (im->mkpair(wfd, rfd) < 0) {
        err = errno;
        goto fail;
    }
    if (!im->streams) {
        what = "--hiwat";
        err = peer_buffers(o, *wfd, *rfd);
        if (err)
            goto fail;
    }
    if (configure) {
        err = ust_perftest_setup_end(o, *wfd, 1, &what);
        if (!err)
            err = ust_perftest_setup_end(o, *rfd, 0, &what);
        if (err)
            goto fail;
    }
    return 0;

fail:
    fprintf(stderr, "perftest: %s: %s: %s\n", im->name, what,
            ust_perftest_strerror(o, what, err));
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* The options as a string for the CSV "options" column and the banner. */
static void describe(const struct ust_perftest_opts *o, char *buf, size_t len)
{
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__)
    buf[0] = '\0';
    if (o->rw && o->impl->streams)
        ADD(" -r");
    if (o->hold)
        ADD(" -H");
    if (o->mread)
        ADD(" -M");
    if (o->rfill)
        ADD(" -w");
    if (o->full)
        ADD(" -F");
    if (o->npush)
        ADD(" -p %d -m %s", o->npush, o->module);
    if (o->nonblock)
        ADD(" -n");
    if (o->hiwat >= 0)
        ADD(" --hiwat %ld", o->hiwat);
    if (o->lowat >= 0)
        ADD(" --lowat %ld", o->lowat);
    if (o->scale)
        ADD(" --scale");
#undef ADD
    if (buf[0] == ' ')
        memmove(buf, buf + 1, strlen(buf));
    if (!buf[0])
        snprintf(buf, len, "default");
}

void ust_usage_perftest(FILE *f)
{
    fprintf(f,
            "usage: ustreams perftest [-s SIZE] [-t SECONDS] [-i ITERATIONS] [-H] [-M] [-w] [-F]\n"
            "                         [-p COUNT] [-m MODULE] [-r] [-b|-n] [-q] [--csv]\n"
            "                         [--hiwat N] [--lowat N] [--peer IMPL] [--scale] [--warmup S]\n"
            "                         [--no-cache] [--procs]\n"
            "  --procs: the reader of each pair is a child process, the writer a thread of the\n"
            "           parent (default: both threads); exit status 3 if ustreams pipes do not\n"
            "           cross fork() in this build; refused for zmq-inproc (exit 2)\n"
            "  IMPL:");
    for (size_t i = 0; i < NIMPLS; i++)
        fprintf(f, "%s %s%s", i ? "," : "", impls[i]->name, i ? "" : " (default)");
    fprintf(f, "\n");
}

int ust_cmd_perftest(int argc, char **argv)
{
    struct ust_perftest_opts o;
    ust_perftest_parse_args(argc, argv, &o, impls, NIMPLS);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    const struct ust_perftest_impl *im = o.impl;
    int npairs = o.scale ? 2 : 1;
    char desc[160];
    describe(&o, desc, sizeof(desc));

    /* The pairs' shared state: shared memory, so that the loops can be
     * processes (--procs). */
    struct ust_perftest_pair *ps = mmap(NULL, sizeof(*ps) * UST_PERFTEST_MAX_PAIRS,
                                        PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ps == MAP_FAILED) {
        perror("perftest: mmap");
        return 2;
    }
    for (int p = 0; p < npairs; p++) {
        atomic_init(&ps[p].w.ops, 0);
        atomic_init(&ps[p].w.bytes, 0);
        atomic_init(&ps[p].w.err, 0);
        atomic_init(&ps[p].r.ops, 0);
        atomic_init(&ps[p].r.bytes, 0);
        atomic_init(&ps[p].r.err, 0);
        atomic_init(&ps[p].stop, 0);
    }

    int wfd[UST_PERFTEST_MAX_PAIRS], rfd[UST_PERFTEST_MAX_PAIRS];
    for (int p = 0; p < npairs; p++)
        if (setup_pair(&o, &wfd[p], &rfd[p], !o.procs) < 0)
            return 2;

    /* --procs: the readers become child processes, which set up their ends;
     * then the parent sets up the writer ends. */
    struct ust_perftest_procs *pp = NULL;
    if (o.procs) {
        int st = ust_perftest_procs_start(&o, ps, npairs, wfd, rfd, &pp);
        if (st)
            return st;
        for (int p = 0; p < npairs; p++) {
            const char *what = "";
            int err = ust_perftest_setup_end(&o, wfd[p], 1, &what);
            if (err) {
                fprintf(stderr, "perftest: %s: %s: %s\n", im->name, what,
                        ust_perftest_strerror(&o, what, err));
                for (int q = 0; q < npairs; q++)
                    im->close(wfd[q]);
                (void)ust_perftest_procs_finish(pp, NULL, 0);
                return 2;
            }
        }
    }

    if (!o.quiet && !o.csv)
        printf("perftest: %s, %zu-byte %s, %s of %zu bytes, writer and reader %s, %d x %g s, "
               "options: %s\n",
               im->name, o.size, im->streams && !o.rw ? "putmsg" : "writes",
               im->streams && !o.rw ? "getmsg" : "reads", o.full ? full_size(&o) : o.size,
               o.procs ? "processes" : "threads", o.iters, o.ttime, desc);

    pthread_t wt[UST_PERFTEST_MAX_PAIRS], rt[UST_PERFTEST_MAX_PAIRS];
    struct loop_arg wa[UST_PERFTEST_MAX_PAIRS], ra[UST_PERFTEST_MAX_PAIRS];
    for (int p = 0; p < npairs; p++) {
        ra[p] = (struct loop_arg){.o = &o, .ps = &ps[p], .fd = rfd[p]};
        wa[p] = (struct loop_arg){.o = &o, .ps = &ps[p], .fd = wfd[p]};
        if ((!o.procs && pthread_create(&rt[p], NULL, reader_thread, &ra[p]) != 0) ||
            pthread_create(&wt[p], NULL, writer_thread, &wa[p]) != 0) {
            fprintf(stderr, "perftest: cannot start threads\n");
            if (o.procs) { /* the readers see end of file on the rest */
                for (int q = p; q < npairs; q++)
                    im->close(wfd[q]);
                for (int q = 0; q < p; q++)
                    atomic_store(&ps[q].stop, 1);
                (void)ust_perftest_procs_finish(pp, wt, p);
            }
            return 2;
        }
    }

    double t = now_s() + o.warmup;
    sleep_until(t);
    double sum_w = 0, sum_r = 0, sum_t = 0;
    for (int it = 1; it <= o.iters; it++) {
        if (pp && ust_perftest_procs_notavail(pp))
            break; /* a reader process found its inherited end unusable */
        long long w0 = 0, r0 = 0, w1 = 0, r1 = 0;
        double t0 = now_s();
        for (int p = 0; p < npairs; p++) {
            w0 += atomic_load_explicit(&ps[p].w.ops, memory_order_relaxed);
            r0 += atomic_load_explicit(&ps[p].r.ops, memory_order_relaxed);
        }
        sleep_until(t0 + o.ttime);
        double t1 = now_s();
        for (int p = 0; p < npairs; p++) {
            w1 += atomic_load_explicit(&ps[p].w.ops, memory_order_relaxed);
            r1 += atomic_load_explicit(&ps[p].r.ops, memory_order_relaxed);
        }
        double dt = t1 - t0;
        double wps = (double)(w1 - w0) / dt, rps = (double)(r1 - r0) / dt;
        double bps = wps * (double)o.size;
        sum_w += (double)(w1 - w0);
        sum_r += (double)(r1 - r0);
        sum_t += dt;
        if (o.csv)
            printf("%s,%zu,%.1f,%.1f,%.1f,%s,%s\n", im->name, o.size, wps, rps, bps, desc,
                   o.procs ? "procs" : "threads");
        else
            printf("  interval %d: %.3f s  %12.0f writes/s  %12.0f reads/s  %10.2f MB/s  "
                   "%.3g us/write\n",
                   it, dt, wps, rps, bps / 1e6, wps > 0 ? 1e6 / wps : 0.0);
    }

    /* Stop: writers close their ends, readers drain to end of file. */
    for (int p = 0; p < npairs; p++)
        atomic_store(&ps[p].stop, 1);
    int procs_status = 0;
    if (pp) {
        procs_status = ust_perftest_procs_finish(pp, wt, npairs);
        if (procs_status == UST_PERFTEST_EXIT_NOTAVAIL)
            return procs_status;
    } else {
        for (int p = 0; p < npairs; p++) {
            pthread_join(wt[p], NULL);
            pthread_join(rt[p], NULL);
        }
    }

    int status = procs_status;
    long long tot_w = 0, tot_r = 0, tot_b = 0;
    for (int p = 0; p < npairs; p++) {
        int we = atomic_load(&ps[p].w.err), re = atomic_load(&ps[p].r.err);
        long long wb = atomic_load(&ps[p].w.bytes), rb = atomic_load(&ps[p].r.bytes);
        tot_w += atomic_load(&ps[p].w.ops);
        tot_r += atomic_load(&ps[p].r.ops);
        tot_b += wb;
        if (we)
            fprintf(stderr, "perftest: pair %d: writer: %s\n", p, strerror(we));
        if (re)
            fprintf(stderr, "perftest: pair %d: reader: %s\n", p, strerror(re));
        if (wb != rb)
            fprintf(stderr, "perftest: pair %d: wrote %lld bytes but read %lld\n", p, wb, rb);
        if (we || re || wb != rb)
            status = 2;
    }
    if (!o.quiet && !o.csv && o.iters > 1)
        printf("  average: %12.0f writes/s  %12.0f reads/s  %10.2f MB/s\n", sum_w / sum_t,
               sum_r / sum_t, sum_w / sum_t * (double)o.size / 1e6);
    if (!o.quiet || o.csv)
        fprintf(o.csv ? stderr : stdout, "totals: writes=%lld reads=%lld bytes=%lld\n", tot_w,
                tot_r, tot_b);

    if (im->streams) {
        int q = ustreams_quiesce(5000);
        struct ustreams_blockstats st;
        ustreams_blockstats(&st);
        long lost = ust_sd_lost_wakeups(); /* rescued by the recheck interval */
        for (int p = 0; o.procs && p < npairs; p++) { /* the reader processes' share */
            const struct ust_perftest_child_stats *c = &ps[p].child;
            if (!c->valid)
                continue;
            st.mblks += c->mblks;
            st.dblks += c->dblks;
            st.bytes += c->bytes;
            st.allocs += c->allocs;
            st.failures += c->failures;
            q |= c->quiesce_timeout;
            lost += c->lost_wakeups;
        }
        int leak = st.mblks != 0 || st.dblks != 0 || st.bytes != 0;
        if (leak || q || !o.quiet || o.csv)
            fprintf(o.csv ? stderr : stdout,
                    "blockstats: mblks=%ld dblks=%ld bytes=%ld allocs=%ld failures=%ld%s%s\n",
                    st.mblks, st.dblks, st.bytes, st.allocs, st.failures,
                    q ? " (quiesce timed out)" : "", leak ? " NOT ZERO" : "");
        if (leak)
            status = 2;
        if (lost) {
            fprintf(stderr, "perftest: %ld lost wake-up(s) (each cost up to %lld ms)\n", lost,
                    UST_WAIT_RECHECK_NS / 1000000);
            status = 2;
        }
    }
    munmap(ps, sizeof(*ps) * UST_PERFTEST_MAX_PAIRS);
    return status;
}
