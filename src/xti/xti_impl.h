/* SPDX-License-Identifier: MIT */
/*
 * xti_impl.h -- libxnet's private header: the per-descriptor user state of
 * an XTI endpoint and the helpers the t_* functions share.
 *
 * Principles of operation.  libxnet is a library of the transport user, as
 * Solaris' libnsl: it keeps, for every descriptor t_open returned, the XTI
 * state (T_UNBND ... T_INREL) the XNS state tables drive, the provider's
 * characteristics (struct t_info, ACCEPTOR_id), the count of connection
 * indications outstanding, and a look buffer: primitives that a call read
 * from the stream head while looking for something else (a T_DISCON_IND met
 * by t_rcv, a T_ORDREL_IND met by t_rcvudata ...) wait there, in arrival
 * order, for t_look and the call that consumes them, so no event is lost.
 * Requests that wait for an acknowledgement go through timod's I_STR
 * contract (<sys/timod.h>); T_CONN_REQ, T_CONN_RES and T_DISCON_REQ are
 * putmsg'ed and their T_OK_ACK / T_ERROR_ACK read back as high-priority
 * messages; data and indications travel with putmsg/getmsg.
 *
 * Locking.  Three levels, always taken in this order:
 *   1. xti_tab_lock (xti_state.c), a mutex over the table from descriptor
 *      to entry; held only to look an entry up, insert or remove it, and
 *      to take a reference (e_refs), never while blocking.
 *   2. e_rlock or e_wlock (never both), one pair per entry: the data path.
 *      t_rcv, t_rcvv, t_rcvudata, t_rcvvudata hold e_rlock for the whole
 *      call, t_snd, t_sndv, t_sndudata, t_sndvudata e_wlock, so receivers
 *      are serialised among themselves and so are senders (a TSDU cut into
 *      TIDU pieces stays whole), but a thread blocked receiving never stops
 *      another from sending on the same descriptor, nor the reverse (a
 *      reader thread and a writer thread per endpoint work).  e_rctl and
 *      e_wctl are their scratch buffers.
 *   3. e_lock, one mutex per entry: the XTI state, look buffer and e_ctl.
 *      Every other t_* call holds it for its whole duration, a blocking
 *      getmsg/putmsg included (t_listen, t_connect, ...), as libnsl's
 *      ti_lock; the data path holds it only around its checks and its
 *      updates, and drops it across the getmsg/putmsg that may block.
 *      t_accept, which works on two descriptors, locks the one with the
 *      lower number first.
 *   4. xti_more.c's tm_lock, the T_MORE timer's list: a leaf after
 *      e_lock.  The timer thread holds it while it flushes an endpoint and
 *      takes e_wlock and e_lock then only with trylock; t_rcv and t_look
 *      likewise take e_wlock with trylock under e_lock (xti_more_try): a
 *      trylock never waits, so the order above still cannot deadlock.
 * An entry lives while it has references; t_close removes it from the table
 * and the last reference frees it, so a thread blocked on e_lock of a
 * descriptor being closed wakes up to find e_closed and fails with TBADF.
 */
#ifndef XTI_IMPL_H
#define XTI_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stropts.h>
#include <sys/uio.h>
#include <sys/tihdr.h>
#include <sys/timod.h>
#include <ustreams.h>
#include <xti.h>

/* Caps for t_info sizes given as T_INFINITE (t_alloc buffers, scratch). */
#define XTI_ADDR_CAP 1024
#define XTI_OPT_CAP 4096
#define XTI_DATA_CAP 65536

/* A primitive kept in the look buffer: control part, then data part. */
struct xti_look {
    struct xti_look *l_next;
    int l_event;          /* T_LISTEN, T_DISCONNECT, ... */
    t_scalar_t l_prim;    /* its PRIM_type */
    size_t l_clen;        /* bytes of control at l_buf */
    size_t l_dlen;        /* bytes of data after it */
    _Alignas(8) char l_buf[]; /* control, then data */
};

/*
 * One endpoint.  Fields marked E are guarded by e_lock; R by atomic ops
 * and xti_tab_lock; C constant after t_open.
 */
struct xti_ep {
    pthread_mutex_t e_lock;
    atomic_int e_refs;         /* R: table's + callers' references */
    int e_fd;                  /* C */
    int e_closed;              /* E: t_close has run */
    int e_state;               /* E: T_UNBND ... T_INREL */
    struct t_info e_info;      /* C: as t_open returned it */
    t_scalar_t e_provflag;     /* C: T_info_ack PROVIDER_flag */
    t_uscalar_t e_acceptor;    /* C: ACCEPTOR_id of this stream */
    int e_have_acceptor;       /* C: the provider gave one */
    char e_provider[64];       /* C: provider name (basename of the device) */
    unsigned e_qlen;           /* E: qlen bound with */
    int e_ocnt;                /* E: connection indications outstanding */
    int e_flow;                /* E: T_snd met flow control: T_GODATA later */
    int e_eflow;               /* E: the same for expedited */
    int e_more_norm;           /* E: a normal TSDU's rest waits at the head: its MORE_flag */
    int e_more_exp;            /* E: the same for an ETSDU */
    int e_part_norm;           /* E: part of a normal TSDU has been read */
    struct xti_look *e_look;   /* E: look buffer, oldest first */
    char *e_ctl;               /* E: scratch for primitives */
    size_t e_ctlsize;          /* E */
    pthread_mutex_t e_rlock;   /* the receive side (see Locking) */
    pthread_mutex_t e_wlock;   /* the send side */
    char *e_rctl;              /* e_rlock: scratch of receivers, e_iosize bytes */
    char *e_wctl;              /* e_wlock: scratch of senders, e_wctlsize bytes */
    size_t e_iosize;           /* C */
    size_t e_wctlsize;         /* e_wlock */
    /*
     * T_MORE coalescing (xti_more.c).  W: e_wlock and e_lock both held;
     * T: xti_more.c's timer lock.  Invariant: e_mlen > 0 only for data
     * held in connection e_mepoch of this process (e_mfork); anything
     * else is stale and is discarded at the next look.
     */
    char *e_mbuf;              /* W: held normal data, XTI_MORE_CAP bytes, NULL until needed */
    size_t e_mlen;             /* W: bytes held */
    unsigned e_mepoch;         /* W: e_cepoch when the first of them was held */
    unsigned e_mfork;          /* W: the fork generation then */
    int e_mmode;               /* W: XTI_MORE_DEFAULT, _ON or _OFF (t_coalesce) */
    int e_merr;                /* W: errno of a background flush that failed: the next t_snd's */
    atomic_int e_mheld;        /* e_mlen != 0, read without the locks (t_rcv, t_look, timer) */
    unsigned e_cepoch;         /* E: bumped whenever a connection ends (xti_discon_state) */
    struct xti_ep *e_mnext;    /* T: the timer's list */
    int e_marmed;              /* T: on the timer's list (it then holds a reference) */
    unsigned long long e_mdue; /* T: when the timer looks at it (CLOCK_MONOTONIC, ns) */
};

#define XTI_RD 1 /* xti_ep_get_io: the receive side */
#define XTI_WR 2 /* the send side */

/* ---- xti_state.c ---- */

/*
 * xti_ep_get -- the entry of descriptor fd, locked and referenced.
 * Returns NULL with t_errno TBADF if fd was not opened by t_open (or is
 * being closed).  Context: may block on e_lock.
 */
struct xti_ep *xti_ep_get(int fd);

/* xti_ep_put -- unlock the entry and drop the reference xti_ep_get took. */
void xti_ep_put(struct xti_ep *ep);

/*
 * xti_ep_get_io -- as xti_ep_get for the data path: takes e_rlock (XTI_RD)
 * or e_wlock (XTI_WR), then e_lock.  The caller may drop e_lock around a
 * blocking call; it must retake it and test e_closed (xti_io_relock).
 */
struct xti_ep *xti_ep_get_io(int fd, int side);

/* xti_ep_put_io -- e_lock held: release it, the side lock, the reference. */
void xti_ep_put_io(struct xti_ep *ep, int side);

/* Retake e_lock after a blocking call; -1 (TBADF) if t_close ran meanwhile. */
int xti_io_relock(struct xti_ep *ep);

/* xti_ep_insert -- register a new entry (one reference, the table's). 0 or -1 (TSYSERR). */
int xti_ep_insert(struct xti_ep *ep);

/* xti_ep_remove -- t_close: take the entry out of the table (ep locked). */
void xti_ep_remove(struct xti_ep *ep);

/* xti_ep_free -- free an entry never inserted. */
void xti_ep_free(struct xti_ep *ep);

/* xti_ep_ref_add / xti_ep_unref -- take / drop a reference (the last one frees). */
void xti_ep_ref_add(struct xti_ep *ep);
void xti_ep_unref(struct xti_ep *ep);

/* ---- xti_error.c ---- */

/* Set t_errno and return -1. */
int xti_err(int terr);

/* t_errno TSYSERR with errno e; returns -1. */
int xti_syserr(int e);

/* Decode a timod I_STR result (>0): (UNIX_error << 8) | TLI_error. Returns -1. */
int xti_ackerr(int rval);

/* ---- xti_look.c ---- */

/* The t_look event of a primitive type (0 if none). */
int xti_prim_event(t_scalar_t prim);

/*
 * xti_look_event -- the first pending event: the oldest look buffer entry,
 * else the message at the head of the stream (I_PEEK), else T_GODATA /
 * T_GOEXDATA if flow control lifted since a TFLOW.  0 if none, -1 on error
 * (t_errno set).  ep locked.
 */
int xti_look_event(struct xti_ep *ep);

/* Store a primitive read while looking for something else. -1: TSYSERR. */
int xti_look_push(struct xti_ep *ep, const void *ctl, size_t clen, const void *data, size_t dlen);

/* The oldest look entry of type prim, unlinked (caller frees), or NULL. */
struct xti_look *xti_look_take(struct xti_ep *ep, t_scalar_t prim);

/* Drop every look entry. */
void xti_look_flush(struct xti_ep *ep);

/* ---- xti_ucopy.c: fault-safe copies from and to the caller's memory ---- */

/*
 * A batch of copies between library memory (loc) and user addresses (rem),
 * each done by the library's protected copy (ustreams_copyin/copyout).  XTI_UV_MAX covers T_IOV_MAX iovec elements plus
 * the struct of a call.
 */
#define XTI_UV_MAX (T_IOV_MAX + 4)
struct xti_uvec {
    int n;
    int bad;      /* a range was never a user address, or too many: EFAULT */
    size_t total; /* bytes in the batch */
    struct iovec loc[XTI_UV_MAX];
    struct iovec rem[XTI_UV_MAX];
};

/* xti_uv_init -- an empty batch. */
void xti_uv_init(struct xti_uvec *v);

/*
 * xti_uv_add -- add the copy of len bytes between library memory lib and
 * the user address user (direction chosen by xti_uv_read / xti_uv_write).
 * len 0 adds nothing.  A range that can never be a user address marks the
 * batch bad (it then fails with EFAULT, copying nothing).
 */
void xti_uv_add(struct xti_uvec *v, void *lib, const void *user, size_t len);

/*
 * xti_uv_read / xti_uv_write -- run the batch: user -> library, or library
 * -> user.  Context: any thread, any lock; no system call (the library's
 * protected copy, element by element, stopping at the first fault).
 * Returns 0, or -1 with t_errno TSYSERR and errno EFAULT when a user range
 * is not readable (writable); after a failed write any prefix of the
 * batch may have been written, after a failed read the library side holds
 * garbage.
 */
int xti_uv_read(const struct xti_uvec *v);
int xti_uv_write(const struct xti_uvec *v);

/* One copy in / out: as a batch of one. */
int xti_uread(void *dst, const void *usrc, size_t len);
int xti_uwrite(void *udst, const void *src, size_t len);

/*
 * xti_ustr -- the NUL-terminated string at usrc into dst (size bytes),
 * page by page so that a string ending before a bad page is read whole;
 * cut (terminated) at size - 1.  0 or -1 (TSYSERR, EFAULT).
 */
int xti_ustr(char *dst, const char *usrc, size_t size);

/* ---- xti_msg.c ---- */

/*
 * getpmsg / putpmsg of ustreams (never the C library's ENOSYS stubs of the
 * same names, whatever the link order of the program): see xti_msg.c.
 */
int xti_sys_getpmsg(int fd, struct strbuf *ctl, struct strbuf *data, int *bandp, int *flagsp);
int xti_sys_putpmsg(int fd, const struct strbuf *ctl, const struct strbuf *data, int band,
                    int flags);

/* ---- xti_open.c helpers ---- */

/* Whether fd is non-blocking now (O_NONBLOCK by t_open or strm_fcntl). */
int xti_nonblock(struct xti_ep *ep);

/*
 * xti_ti_ioctl -- one timod I_STR: the request of len bytes in buf (of size
 * bytes) replaced by the acknowledgement, whose length is returned (>= 0).
 * On failure -1 with t_errno/errno set from the result.
 */
int xti_ti_ioctl(struct xti_ep *ep, int cmd, void *buf, int len, int size);

/*
 * xti_get_ack -- read the T_OK_ACK or T_ERROR_ACK of a putmsg'ed request
 * (prim) from the stream head (high priority; waits even when
 * non-blocking).  0 on T_OK_ACK, -1 with t_errno set otherwise.
 */
int xti_get_ack(struct xti_ep *ep, t_scalar_t prim);

/*
 * xti_getprim -- read the next message into ctl->buf (ep->e_ctl when
 * NULL; ctl->maxlen then set from e_ctlsize) and the data buffer; *flagsp in/out as for getmsg.  Returns the getmsg result (>= 0)
 * or -1 (t_errno set: TNODATA when non-blocking and empty, TSYSERR).
 * ctl->len is -1 for a message without control part.
 */
int xti_getprim(struct xti_ep *ep, struct strbuf *ctl, struct strbuf *data, int *bandp,
                int *flagsp);

/*
 * xti_copyout -- len bytes at src for a user netbuf.  nb is the library's
 * copy of the user's netbuf: its len is set and the copy of src to nb->buf
 * is added to the batch v (written later by xti_uv_write; src must live
 * until then).  0, or -1 if maxlen (> 0) is too small (t_errno not set).
 */
int xti_copyout(struct netbuf *nb, const void *src, size_t len, struct xti_uvec *v);

/* A primitive's variable part [off, off+len) lies inside clen bytes. */
int xti_inside(t_scalar_t off, t_scalar_t len, size_t clen);

/* Size of the data scratch needed for a primitive's data (caps infinite). */
size_t xti_datacap(t_scalar_t v);

/* A primitive read for a t_* call: control and data, owned by m_own. */
struct xti_msg {
    const char *m_ctl;
    size_t m_clen;
    const char *m_data;
    size_t m_dlen;
    void *m_own; /* free() when done */
};

/*
 * xti_peek_prim -- the PRIM_type of the oldest pending message (the look
 * buffer, then the stream head), XTI_PEEK_DATA for a message without
 * control part, XTI_PEEK_NONE if nothing waits, -1 on error.
 */
#define XTI_PEEK_NONE (-100)
#define XTI_PEEK_DATA (-101)
int xti_peek_prim(struct xti_ep *ep);

/*
 * xti_next_msg -- the next primitive of type want (want2 too, if >= 0):
 * from the look buffer if its oldest entry is one, else read from the
 * stream (waiting if block and the descriptor is blocking; TNODATA if
 * not).  Another event met first goes to the look buffer: TLOOK.  dcap
 * is the room for the primitive's data.  0 or -1 (t_errno set).
 */
int xti_next_msg(struct xti_ep *ep, t_scalar_t want, t_scalar_t want2, int block, size_t dcap,
                 struct xti_msg *m);

/* ---- xti_data.c helper shared with xti_more.c ---- */

/*
 * xti_snd_pieces -- nbytes at buf (the caller's memory or the library's)
 * down as T_DATA_REQ (T_EXDATA_REQ if exp) pieces of at most XTI_TIDU
 * bytes, MORE_flag on every piece but the last, and on the last if more.
 * e_wlock and e_lock held; e_lock is dropped across each putpmsg (which
 * may block on flow control when the endpoint is blocking) and retaken.
 * *sentp: the bytes that went.  0 when all went, else -1 with t_errno set
 * (TFLOW, TLOOK, TSYSERR, TBADF when t_close ran meanwhile: e_lock then
 * still held, e_closed set).
 */
#define XTI_TIDU 65536 /* most bytes of one T_DATA_REQ */
int xti_snd_pieces(struct xti_ep *ep, const char *buf, size_t nbytes, int more, int exp,
                   size_t *sentp);

/* ---- xti_more.c: T_MORE coalescing (docs/XTI.md "T_MORE coalescing") ---- */

#define XTI_MORE_DEFAULT 0 /* t_open's: on for a byte stream (TSDU 0), off where TSDUs are kept */
#define XTI_MORE_ON 1
#define XTI_MORE_OFF 2
#define XTI_MORE_USED(ep)                                                                          \
    ((ep)->e_mmode == XTI_MORE_ON || ((ep)->e_mmode == XTI_MORE_DEFAULT && (ep)->e_info.tsdu == 0))
#define XTI_MORE_CAP 16384             /* bytes held at most (<= XTI_TIDU) */
#define XTI_MORE_IDLE_NS 2000000ULL    /* held bytes go at the latest this long after the first */

/*
 * xti_more_snd -- t_snd of normal data with coalescing on: bytes sent with
 * T_MORE are copied into the endpoint's hold and cross later; a send
 * without T_MORE (or with T_PUSH) sends what is held and itself at once,
 * as one T_DATA_REQ when they fit.  e_wlock and e_lock held, the XTI
 * checks of t_snd done.  Returns the bytes taken, or -1 with t_errno set
 * (then nothing of this call was taken, the hold is as it was).
 */
int xti_more_snd(struct xti_ep *ep, const char *buf, size_t nbytes, int flags);

/*
 * xti_more_check -- before any send: drops stale held bytes (the
 * connection ended, or inherited across fork) and reports a background
 * flush's failure (-1: TLOOK when a disconnect waits, else TSYSERR with
 * its errno).  e_wlock and e_lock held.  0 otherwise.
 */
int xti_more_check(struct xti_ep *ep);

/*
 * xti_more_flush -- send what is held now, MORE_flag set (the TSDU is not
 * finished), waiting for flow control if the endpoint is blocking.
 * e_wlock and e_lock held (e_lock dropped across the putpmsg).  0 (the
 * hold is empty), or -1 with t_errno set (the hold is kept).
 */
int xti_more_flush(struct xti_ep *ep);

/*
 * xti_more_try -- a reader (t_rcv, t_look) is about to wait or look for
 * the peer: send what is held if that needs no wait: e_wlock taken with
 * trylock (never waited for, so it may be taken under e_lock and
 * e_rlock), I_CANPUT asked first.  e_lock held.  Never fails: what cannot
 * go stays for the timer, a send error is kept for the next t_snd.
 */
void xti_more_try(struct xti_ep *ep);

/*
 * xti_more_close -- t_close's part: send what is held as a t_snd would
 * (waiting for flow control if blocking; non-blocking and flow-controlled:
 * discarded).  Takes and releases the endpoint's locks itself.
 */
void xti_more_close(int fd);

/* ---- xti_conn.c helper shared with xti_data.c ---- */

/* Apply a T_DISCON_IND just consumed to the state: ocnt, state. */
void xti_discon_state(struct xti_ep *ep, t_scalar_t seq);

#endif /* XTI_IMPL_H */
