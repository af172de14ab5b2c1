/* SPDX-License-Identifier: MIT */
/*
 * upcase.c -- a STREAMS module written the usual way, used on a pipe.
 *
 * The module "upcase" upper-cases the data written through it once it has
 * been switched on with an I_STR ioctl (UPCASE_ON; UPCASE_OFF switches it
 * off).  The program registers it, makes a STREAMS pipe, pushes the module on
 * one end, and prints what comes out of the other end.  Only the public
 * interface is used: <ustreams.h>, <stropts.h>, <sys/stream.h>,
 * <sys/strconf.h>, <sys/ddi.h>.
 *
 * Build against an installed ustreams:
 *     cc -std=c11 upcase.c $(pkg-config --cflags --libs ustreams)
 *
 * The module:
 *   MT level D_MP | D_MTQPAIR: one inner perimeter per queue pair, so its put
 *   and service procedures never run at the same time on the same pair and
 *   the per-stream state (the on/off switch) needs no lock of its own.
 *   Flow control: the write put procedure queues data (putq); the write
 *   service procedure converts and passes it on only while canputnext()
 *   allows, otherwise it puts the message back (putbq) and returns -- it is
 *   back-enabled when the stream below drains.  High-priority messages are
 *   passed on at once.  The read side passes everything through.
 *   M_FLUSH: the named sides of this pair are flushed, the message passed on.
 *   M_IOCTL: UPCASE_ON/UPCASE_OFF are answered with miocack; any other ioctl
 *   is not ours and goes on downstream.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>
#include <ustreams.h>

#define UPCASE_ON  (('U' << 8) | 1)
#define UPCASE_OFF (('U' << 8) | 2)

struct upcase_state {
    int on;               /* convert data (inner perimeter: no lock) */
    bufcall_id_t bufcall; /* pending qbufcall after a failed copy, or 0 */
};

static int upcase_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int upcase_close(queue_t *q, int oflag, cred_t *crp);
static int upcase_rput(queue_t *q, mblk_t *mp);
static int upcase_wput(queue_t *q, mblk_t *mp);
static int upcase_wsrv(queue_t *q);

static struct module_info upcase_minfo = {
    .mi_idnum = 0x5543,
    .mi_idname = "upcase",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = 4096,
    .mi_lowat = 1024,
};

static struct qinit upcase_rinit = {
    .qi_putp = upcase_rput,
    .qi_qopen = upcase_open,
    .qi_qclose = upcase_close,
    .qi_minfo = &upcase_minfo,
};

static struct qinit upcase_winit = {
    .qi_putp = upcase_wput,
    .qi_srvp = upcase_wsrv,
    .qi_minfo = &upcase_minfo,
};

static struct streamtab upcase_info = {
    .st_rdinit = &upcase_rinit,
    .st_wrinit = &upcase_winit,
};

static struct fmodsw upcase_fmod = {
    .f_name = "upcase",
    .f_str = &upcase_info,
    .f_flag = D_MP | D_MTQPAIR,
};

static int upcase_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    struct upcase_state *st;

    (void)devp;
    (void)oflag;
    (void)crp;
    if (sflag != MODOPEN)
        return ENXIO;
    if (q->q_ptr != NULL)
        return 0; /* already open on this stream */
    st = kmem_zalloc(sizeof(*st), KM_SLEEP);
    q->q_ptr = st;
    WR(q)->q_ptr = st;
    qprocson(q);
    return 0;
}

static int upcase_close(queue_t *q, int oflag, cred_t *crp)
{
    struct upcase_state *st = q->q_ptr;

    (void)oflag;
    (void)crp;
    qprocsoff(q);
    if (st->bufcall != 0)
        qunbufcall(q, st->bufcall);
    kmem_free(q->q_ptr, sizeof(struct upcase_state));
    q->q_ptr = NULL;
    WR(q)->q_ptr = NULL;
    return 0;
}

/* Flush the sides of this pair that the M_FLUSH names. */
static void upcase_flush(queue_t *q, mblk_t *mp)
{
    if (mp->b_wptr <= mp->b_rptr)
        return;
    if (*mp->b_rptr & FLUSHW)
        flushq(WR(q), FLUSHDATA);
    if (*mp->b_rptr & FLUSHR)
        flushq(RD(q), FLUSHDATA);
}

static int upcase_rput(queue_t *q, mblk_t *mp)
{
    if (mp->b_datap->db_type == M_FLUSH)
        upcase_flush(q, mp);
    putnext(q, mp);
    return 0;
}

static void upcase_ioctl(queue_t *q, mblk_t *mp)
{
    struct upcase_state *st = q->q_ptr;
    struct iocblk *iocp = (struct iocblk *)(void *)mp->b_rptr;

    switch (iocp->ioc_cmd) {
    case UPCASE_ON:
    case UPCASE_OFF:
        if (iocp->ioc_count == TRANSPARENT) {
            miocnak(q, mp, 0, EINVAL); /* I_STR only */
            return;
        }
        st->on = iocp->ioc_cmd == UPCASE_ON;
        miocack(q, mp, 0, 0);
        return;
    default:
        putnext(q, mp); /* not ours: for the modules and driver below */
        return;
    }
}

static int upcase_wput(queue_t *q, mblk_t *mp)
{
    switch (mp->b_datap->db_type) {
    case M_DATA:
        if (!putq(q, mp))
            freemsg(mp);
        break;
    case M_IOCTL:
        upcase_ioctl(q, mp);
        break;
    case M_FLUSH:
        upcase_flush(q, mp);
        putnext(q, mp);
        break;
    default:
        putnext(q, mp);
        break;
    }
    return 0;
}

/* Upper-case every data block of mp in place (copying a shared message
 * first).  Returns the message to send, or NULL if the copy failed. */
static mblk_t *upcase_convert(mblk_t *mp)
{
    if (mp->b_datap->db_ref > 1) {
        mblk_t *cp = copymsg(mp);
        if (cp == NULL)
            return NULL;
        freemsg(mp);
        mp = cp;
    }
    for (mblk_t *bp = mp; bp != NULL; bp = bp->b_cont)
        for (unsigned char *p = bp->b_rptr; p < bp->b_wptr; p++)
            *p = (unsigned char)toupper(*p);
    return mp;
}

/* qbufcall callback: memory may be available again. */
static void upcase_retry(void *arg)
{
    queue_t *q = arg;
    struct upcase_state *st = q->q_ptr;

    st->bufcall = 0;
    qenable(q);
}

static int upcase_wsrv(queue_t *q)
{
    struct upcase_state *st = q->q_ptr;
    mblk_t *mp;

    while ((mp = getq(q)) != NULL) {
        if (!canputnext(q)) {
            putbq(q, mp); /* back-enabled when the stream below drains */
            break;
        }
        if (st->on) {
            mblk_t *up = upcase_convert(mp);
            if (up == NULL) { /* no memory: try again when there is */
                putbq(q, mp);
                if (st->bufcall == 0)
                    st->bufcall = qbufcall(q, msgdsize(mp), BPRI_MED, upcase_retry, q);
                break;
            }
            mp = up;
        }
        putnext(q, mp);
    }
    return 0;
}

/* ---------------------------------------------------------------- program */

static int say(int fd, const char *text)
{
    return strm_write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
}

/* Read one message from fd and print it; 0 if it equals want. */
static int hear(int fd, const char *want)
{
    char buf[128];
    ssize_t n = strm_read(fd, buf, sizeof(buf) - 1);

    if (n < 0) {
        perror("read");
        return -1;
    }
    buf[n] = '\0';
    printf("  read: \"%s\"\n", buf);
    return strcmp(buf, want) == 0 ? 0 : -1;
}

static int upcase_ctl(int fd, int cmd)
{
    struct strioctl ic = {.ic_cmd = cmd, .ic_timout = 5, .ic_len = 0, .ic_dp = NULL};
    return strm_ioctl(fd, I_STR, &ic);
}

int main(void)
{
    int fds[2], fails = 0;
    char name[FMNAMESZ + 1];

    if (register_strmod(&upcase_fmod) < 0) {
        fprintf(stderr, "register_strmod failed\n");
        return 1;
    }
    if (strm_pipe(fds) < 0) {
        perror("strm_pipe");
        return 1;
    }
    if (strm_ioctl(fds[0], I_PUSH, "upcase") < 0) {
        perror("I_PUSH upcase");
        return 1;
    }
    strm_ioctl(fds[0], I_LOOK, name);
    printf("pushed \"%s\" on end 0 of a STREAMS pipe\n", name);

    printf("upcase off, write \"hello, streams\" on end 0:\n");
    fails += say(fds[0], "hello, streams") || hear(fds[1], "hello, streams");

    if (upcase_ctl(fds[0], UPCASE_ON) < 0) {
        perror("I_STR UPCASE_ON");
        fails++;
    }
    printf("upcase on, write \"hello, streams\" on end 0:\n");
    fails += say(fds[0], "hello, streams") || hear(fds[1], "HELLO, STREAMS");

    printf("end 1 writes back \"and hello to you\" (read side: unchanged):\n");
    fails += say(fds[1], "and hello to you") || hear(fds[0], "and hello to you");

    if (upcase_ctl(fds[0], UPCASE_OFF) < 0) {
        perror("I_STR UPCASE_OFF");
        fails++;
    }
    printf("upcase off again:\n");
    fails += say(fds[0], "quiet now") || hear(fds[1], "quiet now");

    /* An ioctl the module does not know travels on; nobody answers it with
     * an acknowledgement, so it fails. */
    if (upcase_ctl(fds[0], ('U' << 8) | 99) == 0) {
        fprintf(stderr, "unknown ioctl unexpectedly succeeded\n");
        fails++;
    } else {
        printf("unknown ioctl refused: %s\n", strerror(errno));
    }

    strm_ioctl(fds[0], I_POP, 0);
    strm_close(fds[0]);
    strm_close(fds[1]);
    printf("%s\n", fails == 0 ? "ok" : "FAILED");
    return fails == 0 ? 0 : 1;
}
