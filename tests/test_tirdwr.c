/* SPDX-License-Identifier: MIT */
/*
 * test_tirdwr.c -- the tirdwr module over a scripted TPI provider
 * (tests/tpi_prov_util.h), through the real stream head:
 *   R.1  read/write of data both ways: T_DATA_IND (with and without MORE,
 *        without data), M_DATA; a zero-length write is not sent down
 *   R.2  T_ORDREL_IND: read returns 0; pop sends T_ORDREL_REQ
 *   R.3  pop of a connection still up: T_DISCON_REQ (SEQ_number -1)
 *   R.4  T_DISCON_IND: queued data is read, then 0; write ENXIO; POLLHUP;
 *        close sends nothing down
 *   R.5  T_EXDATA_IND, other primitives, and putmsg with a control part:
 *        EPROTO on read and write
 *   R.6  ioctls pass
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <ustreams.h>

#include "check.h"
#include "tpi_prov_util.h"

static int ropen(void)
{
    tpf_reset();
    hdrv_down_clear();
    int fd = strm_open("/dev/streams/hdrv", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "tirdwr"), 0);
    return fd;
}

static void rdone(void)
{
    hdrv_down_clear();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* The next message hdrv saw that is not an M_FLUSH, or NULL. */
static mblk_t *next_down(long ms)
{
    mblk_t *mp;
    while ((mp = hdrv_down(ms)) != NULL && mp->b_datap->db_type == M_FLUSH)
        freemsg(mp);
    return mp;
}

static void up_data(t_scalar_t more, const char *s)
{
    struct T_data_ind di = {T_DATA_IND, more};
    tpf_up(M_PROTO, &di, sizeof(di), s, s ? strlen(s) : 0);
}

static void test_data(void)
{
    int fd = ropen();
    char buf[64];

    /* R.1 */
    up_data(0, "hello");
    memset(buf, 0, sizeof(buf));
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    up_data(T_MORE, "ab");
    up_data(0, NULL); /* no data: dropped */
    up_data(0, "cd");
    hdrv_up_str(0, "ef"); /* plain M_DATA passes */
    size_t got = 0;
    memset(buf, 0, sizeof(buf));
    while (got < 6) {
        ssize_t n = strm_read(fd, buf + got, sizeof(buf) - got);
        CHECK(n > 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    CHECK(memcmp(buf, "abcdef", 6) == 0);
    int n = -1;
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &n), 0);
    CHECK_EQ(n, 0);

    CHECK_EQ(strm_write(fd, "xyz", 3), 3);
    mblk_t *mp = next_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_DATA && msgdsize(mp) == 3);
    CHECK(mp && memcmp(mp->b_rptr, "xyz", 3) == 0);
    freemsg(mp);
    /* a zero-length write (SNDZERO makes the head send it) is dropped */
    CHECK_EQ(strm_ioctl(fd, I_SWROPT, SNDZERO), 0);
    CHECK_EQ(strm_write(fd, "", 0), 0);
    CHECK(next_down(200) == NULL);

    CHECK_EQ(strm_close(fd), 0);
    mp = next_down(1000); /* close: T_DISCON_REQ */
    CHECK_EQ(tpf_prim_of(mp), T_DISCON_REQ);
    freemsg(mp);
    rdone();
}

static void test_ordrel(void)
{
    int fd = ropen();
    char buf[16];

    /* R.2 */
    up_data(0, "last");
    struct T_ordrel_ind oi = {T_ORDREL_IND};
    tpf_up(M_PROTO, &oi, sizeof(oi), NULL, 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 4);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    /* still writable (the peer released, this side may send) */
    CHECK_EQ(strm_write(fd, "w", 1), 1);
    mblk_t *mp = next_down(1000);
    CHECK(mp && mp->b_datap->db_type == M_DATA);
    freemsg(mp);
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    mp = next_down(1000);
    CHECK_EQ(tpf_prim_of(mp), T_ORDREL_REQ);
    CHECK(mp && mp->b_datap->db_type == M_PROTO);
    freemsg(mp);
    CHECK_EQ(strm_close(fd), 0);
    CHECK(next_down(100) == NULL);
    rdone();

    /* R.3 pop while connected: T_DISCON_REQ with SEQ_number -1 */
    fd = ropen();
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    mp = next_down(1000);
    CHECK_EQ(tpf_prim_of(mp), T_DISCON_REQ);
    if (mp && mp->b_wptr - mp->b_rptr >= (ptrdiff_t)sizeof(struct T_discon_req)) {
        struct T_discon_req dr;
        memcpy(&dr, mp->b_rptr, sizeof(dr));
        CHECK_EQ(dr.SEQ_number, -1);
    }
    freemsg(mp);
    /* popped: TPI primitives reach the head again */
    struct T_ordrel_ind oi2 = {T_ORDREL_IND};
    tpf_up(M_PROTO, &oi2, sizeof(oi2), NULL, 0);
    unsigned char cbuf[16];
    struct strbuf ctl = {sizeof(cbuf), 0, (char *)cbuf};
    int flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, NULL, &flags), 0);
    CHECK_EQ(ctl.len, sizeof(oi2));
    CHECK_EQ(strm_close(fd), 0);
    rdone();
}

static void test_discon(void)
{
    int fd = ropen();
    char buf[16];

    /* R.4 */
    up_data(0, "tail");
    struct T_discon_ind dis = {T_DISCON_IND, 42, -1};
    tpf_up(M_PROTO, &dis, sizeof(dis), NULL, 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 4);
    CHECK(memcmp(buf, "tail", 4) == 0);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, "x", 1), -1);
    CHECK_EQ(errno, ENXIO);
    struct pollfd pfd = {fd, POLLIN | POLLOUT, 0};
    CHECK_EQ(strm_poll(&pfd, 1, 0), 1);
    CHECK(pfd.revents & POLLHUP);
    CHECK_EQ(strm_close(fd), 0);
    CHECK(next_down(200) == NULL); /* no T_DISCON_REQ after a disconnect */
    rdone();

    /* disconnect data goes up before the hang-up */
    fd = ropen();
    tpf_up(M_PROTO, &dis, sizeof(dis), "bye", 3);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 3);
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), 0);
    CHECK_EQ(strm_close(fd), 0);
    rdone();
}

static void test_eproto(void)
{
    char buf[16];

    /* R.5 expedited data */
    int fd = ropen();
    struct T_exdata_ind ei = {T_EXDATA_IND, 0};
    tpf_up(M_PROTO, &ei, sizeof(ei), "!", 1);
    errno = 0;
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EPROTO);
    errno = 0;
    CHECK_EQ(strm_write(fd, "x", 1), -1);
    CHECK_EQ(errno, EPROTO);
    CHECK_EQ(strm_close(fd), 0);
    rdone();

    /* any other primitive, and a truncated one */
    fd = ropen();
    struct T_info_ack ia = tpf_info();
    tpf_up(M_PCPROTO, &ia, sizeof(ia), NULL, 0);
    errno = 0;
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EPROTO);
    CHECK_EQ(strm_close(fd), 0);
    rdone();
    fd = ropen();
    tpf_up(M_PROTO, "\1", 1, NULL, 0);
    errno = 0;
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EPROTO);
    CHECK_EQ(strm_close(fd), 0);
    rdone();

    /* putmsg with a control part: not sent, EPROTO afterwards */
    fd = ropen();
    struct T_data_req dr = {T_DATA_REQ, 0};
    struct strbuf ctl = {0, sizeof(dr), (char *)&dr}, dat = {0, 2, "hi"};
    CHECK_EQ(putmsg(fd, &ctl, &dat, 0), 0);
    errno = 0;
    CHECK_EQ(strm_write(fd, "x", 1), -1);
    CHECK_EQ(errno, EPROTO);
    errno = 0;
    CHECK_EQ(strm_read(fd, buf, sizeof(buf)), -1);
    CHECK_EQ(errno, EPROTO);
    mblk_t *mp = next_down(200);
    CHECK(mp == NULL || tpf_prim_of(mp) != T_DATA_REQ);
    freemsg(mp);
    CHECK_EQ(strm_close(fd), 0);
    rdone();
}

static void test_ioctl(void)
{
    int fd = ropen();
    char b[4] = {0};
    struct strioctl si = {.ic_cmd = ('X' << 8) | 2, .ic_len = 4, .ic_dp = b};

    /* R.6 */
    atomic_store(&hdrv_ioc_rval, 3);
    CHECK_EQ(strm_ioctl(fd, I_STR, &si), 3);
    atomic_store(&hdrv_ioc_rval, 0);
    CHECK_EQ(strm_close(fd), 0);
    rdone();
}

int main(void)
{
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_data();
    test_ordrel();
    test_discon();
    test_eproto();
    test_ioctl();
    hdrv_wput_hook = NULL;
    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
