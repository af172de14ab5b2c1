/* SPDX-License-Identifier: MIT */
/*
 * test_timod.c -- the timod module over a scripted TPI provider
 * (tests/tpi_prov_util.h), through the real stream head, following the
 * contract at the top of <sys/timod.h>:
 *   T.1  TI_GETINFO, TI_BIND, TI_UNBIND, TI_OPTMGMT, TI_GETADDRS,
 *        TI_CAPABILITY: the ack in ic_dp, ic_len its length, the request's
 *        message type (M_PROTO / M_PCPROTO)
 *   T.2  T_ERROR_ACK: the result is (UNIX_error << 8) | TLI_error, ic_len 0,
 *        errno untouched; a short ack: EPROTO
 *   T.3  malformed requests: -1 EINVAL, nothing sent to the provider;
 *        TI_SETMYNAME/TI_SETPEERNAME: EINVAL; a user buffer that cannot take
 *        the ack: EFAULT (the buffer must be large enough, as the contract says)
 *   T.4  TI_SYNC: from a T_INFO_ACK, tsa_qlen from the last bind
 *   T.5  TI_GETMYNAME / TI_GETPEERNAME (transparent, struct netbuf *)
 *   T.6  non-TI ioctls and unrelated primitives pass both ways, also while an
 *        ioctl waits for its ack
 *   T.7  an abandoned ioctl (ETIME): the late ack is harmless, the next
 *        ioctl works; close with an ioctl outstanding leaks nothing
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/timod.h>
#include <unistd.h>
#include <ustreams.h>
#include <xti.h>

#include "check.h"
#include "tpi_prov_util.h"

static int topen(void)
{
    tpf_reset();
    hdrv_down_clear();
    int fd = strm_open("/dev/streams/hdrv", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "timod"), 0);
    return fd;
}

static void tclose(int fd)
{
    CHECK_EQ(strm_close(fd), 0);
    hdrv_down_clear();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
}

/* I_STR cmd with len bytes of buf in; *olen receives ic_len. */
static int tistr(int fd, int cmd, void *buf, int len, int *olen, int timout)
{
    struct strioctl si = {.ic_cmd = cmd, .ic_timout = timout, .ic_len = len, .ic_dp = buf};
    int r = strm_ioctl(fd, I_STR, &si);
    if (olen)
        *olen = si.ic_len;
    return r;
}

static void test_requests(void)
{
    int fd = topen(), len;
    union {
        unsigned char b[512];
        t_scalar_t align;
    } u;

    /* T.1 TI_GETINFO: the request is 4 bytes, the ack replaces it. */
    struct T_info_req ir = {T_INFO_REQ};
    memset(u.b, 0xee, sizeof(u.b));
    memcpy(u.b, &ir, sizeof(ir));
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(ir), &len, 0), 0);
    CHECK_EQ(len, sizeof(struct T_info_ack));
    struct T_info_ack ia;
    memcpy(&ia, u.b, sizeof(ia));
    CHECK_EQ(ia.PRIM_type, T_INFO_ACK);
    CHECK_EQ(ia.TSDU_size, 4096);
    CHECK_EQ(ia.SERV_type, T_COTS_ORD);
    CHECK_EQ(ia.CURRENT_state, TS_IDLE);
    CHECK_EQ(u.b[sizeof(ia)], 0xee); /* nothing written beyond the ack */
    CHECK_EQ(atomic_load(&tpf_last_type), M_PCPROTO);
    CHECK_EQ(atomic_load(&tpf_last_prim), T_INFO_REQ);

    /* TI_BIND with an address and a connection-indication limit. */
    struct T_bind_req br = {T_BIND_REQ, 6, sizeof(br), 5};
    memcpy(u.b, &br, sizeof(br));
    memcpy(u.b + sizeof(br), "myaddr", 6);
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br) + 6, &len, 0), 0);
    CHECK_EQ(len, sizeof(struct T_bind_ack) + 6);
    struct T_bind_ack ba;
    memcpy(&ba, u.b, sizeof(ba));
    CHECK_EQ(ba.PRIM_type, T_BIND_ACK);
    CHECK_EQ(ba.ADDR_length, 6);
    CHECK_EQ(ba.CONIND_number, 5);
    CHECK(memcmp(u.b + ba.ADDR_offset, "myaddr", 6) == 0);
    CHECK_EQ(atomic_load(&tpf_last_type), M_PROTO);

    /* TI_OPTMGMT with one option: echoed back. */
    struct T_optmgmt_req orq = {T_OPTMGMT_REQ, sizeof(struct T_opthdr) + 4, sizeof(orq),
                                T_NEGOTIATE};
    struct T_opthdr oh = {sizeof(struct T_opthdr) + 4, 0xffff, 1, 0};
    memcpy(u.b, &orq, sizeof(orq));
    memcpy(u.b + sizeof(orq), &oh, sizeof(oh));
    memcpy(u.b + sizeof(orq) + sizeof(oh), "\1\2\3\4", 4);
    CHECK_EQ(tistr(fd, TI_OPTMGMT, u.b, (int)(sizeof(orq) + oh.len), &len, 0), 0);
    CHECK_EQ(len, sizeof(struct T_optmgmt_ack) + oh.len);
    struct T_optmgmt_ack oa;
    memcpy(&oa, u.b, sizeof(oa));
    CHECK_EQ(oa.PRIM_type, T_OPTMGMT_ACK);
    CHECK_EQ(oa.MGMT_flags, T_SUCCESS);
    CHECK_EQ(oa.OPT_length, oh.len);
    CHECK(memcmp(u.b + oa.OPT_offset + sizeof(oh), "\1\2\3\4", 4) == 0);
    CHECK_EQ(atomic_load(&tpf_last_type), M_PROTO);

    /* TI_GETADDRS */
    struct T_addr_req ar = {T_ADDR_REQ};
    memcpy(u.b, &ar, sizeof(ar));
    CHECK_EQ(tistr(fd, TI_GETADDRS, u.b, sizeof(ar), &len, 0), 0);
    struct T_addr_ack aa;
    memcpy(&aa, u.b, sizeof(aa));
    CHECK_EQ(aa.PRIM_type, T_ADDR_ACK);
    CHECK_EQ(len, sizeof(aa) + 6 + strlen("remote-peer"));
    CHECK_EQ(aa.LOCADDR_length, 6);
    CHECK(memcmp(u.b + aa.LOCADDR_offset, "myaddr", 6) == 0);
    CHECK_EQ(aa.REMADDR_length, strlen("remote-peer"));
    CHECK(memcmp(u.b + aa.REMADDR_offset, "remote-peer", aa.REMADDR_length) == 0);
    CHECK_EQ(atomic_load(&tpf_last_type), M_PCPROTO);

    /* TI_CAPABILITY */
    struct T_capability_req cr = {T_CAPABILITY_REQ, TC1_INFO | TC1_ACCEPTOR_ID};
    memcpy(u.b, &cr, sizeof(cr));
    CHECK_EQ(tistr(fd, TI_CAPABILITY, u.b, sizeof(cr), &len, 0), 0);
    CHECK_EQ(len, sizeof(struct T_capability_ack));
    struct T_capability_ack ca;
    memcpy(&ca, u.b, sizeof(ca));
    CHECK_EQ(ca.PRIM_type, T_CAPABILITY_ACK);
    CHECK_EQ(ca.ACCEPTOR_id, 0x1234);
    CHECK_EQ(ca.INFO_ack.PRIM_type, T_INFO_ACK);
    CHECK_EQ(atomic_load(&tpf_last_type), M_PCPROTO);

    /* TI_UNBIND */
    struct T_unbind_req ur = {T_UNBIND_REQ};
    memcpy(u.b, &ur, sizeof(ur));
    CHECK_EQ(tistr(fd, TI_UNBIND, u.b, sizeof(ur), &len, 0), 0);
    CHECK_EQ(len, sizeof(struct T_ok_ack));
    struct T_ok_ack ok;
    memcpy(&ok, u.b, sizeof(ok));
    CHECK_EQ(ok.PRIM_type, T_OK_ACK);
    CHECK_EQ(ok.CORRECT_prim, T_UNBIND_REQ);
    CHECK_EQ(atomic_load(&tpf_last_type), M_PROTO);
    CHECK_EQ(atomic_load(&tpf_nreq), 6);
    tclose(fd);
}

static void test_error_acks(void)
{
    int fd = topen(), len;
    union {
        unsigned char b[256];
        t_scalar_t align;
    } u;

    /* T.2 TBADADDR -> 1; errno is left alone. */
    struct T_bind_req br = {T_BIND_REQ, 0, 0, 0};
    atomic_store(&tpf_fail_prim, T_BIND_REQ);
    atomic_store(&tpf_fail_tli, TBADADDR);
    memcpy(u.b, &br, sizeof(br));
    errno = 4242;
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br), &len, 0), TBADADDR);
    CHECK_EQ(errno, 4242);
    CHECK_EQ(len, 0);

    /* TSYSERR with EACCES. */
    atomic_store(&tpf_fail_tli, TSYSERR);
    atomic_store(&tpf_fail_unix, EACCES);
    memcpy(u.b, &br, sizeof(br));
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br), &len, 0), (EACCES << 8) | TSYSERR);
    CHECK_EQ(len, 0);

    /* Every command decodes the same way. */
    struct T_info_req ir = {T_INFO_REQ};
    atomic_store(&tpf_fail_prim, T_INFO_REQ);
    atomic_store(&tpf_fail_tli, TOUTSTATE);
    atomic_store(&tpf_fail_unix, 0);
    memcpy(u.b, &ir, sizeof(ir));
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(ir), &len, 0), TOUTSTATE);
    struct T_unbind_req ur = {T_UNBIND_REQ};
    atomic_store(&tpf_fail_prim, T_UNBIND_REQ);
    memcpy(u.b, &ur, sizeof(ur));
    CHECK_EQ(tistr(fd, TI_UNBIND, u.b, sizeof(ur), &len, 0), TOUTSTATE);

    /* A T_ERROR_ACK that carries no error: TPROTO. */
    atomic_store(&tpf_fail_tli, 0);
    memcpy(u.b, &ur, sizeof(ur));
    CHECK_EQ(tistr(fd, TI_UNBIND, u.b, sizeof(ur), &len, 0), TPROTO);

    /* An ack shorter than its fixed part: EPROTO. */
    atomic_store(&tpf_fail_prim, -1);
    atomic_store(&tpf_short, 1);
    memcpy(u.b, &ir, sizeof(ir));
    errno = 0;
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(ir), &len, 0), -1);
    CHECK_EQ(errno, EPROTO);
    atomic_store(&tpf_short, 0);
    tclose(fd);
}

static void test_malformed(void)
{
    int fd = topen(), len;
    union {
        unsigned char b[256];
        t_scalar_t align;
    } u;

    /* T.3 too short for the request struct */
    struct T_bind_req br = {T_BIND_REQ, 0, 0, 0};
    memcpy(u.b, &br, sizeof(br));
    errno = 0;
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br) - 1, &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, 0, &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, 2, &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    /* the wrong PRIM_type for the command */
    struct T_info_req ir = {T_INFO_REQ};
    memcpy(u.b, &ir, sizeof(ir));
    memset(u.b + sizeof(ir), 0, 16);
    errno = 0;
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br), &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    memcpy(u.b, &br, sizeof(br));
    errno = 0;
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(br), &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(tistr(fd, TI_CAPABILITY, u.b, sizeof(br), &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    /* the transparent-only and the reserved commands */
    errno = 0;
    CHECK_EQ(tistr(fd, TI_GETMYNAME, u.b, 16, &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    struct netbuf nb = {sizeof(u.b), 0, u.b};
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, TI_SETMYNAME, &nb), -1);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK_EQ(tistr(fd, TI_SETPEERNAME, u.b, 16, &len, 0), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(atomic_load(&tpf_nreq), 0);

    /* A user buffer that cannot take the ack: the head copies the whole ack
     * (the caller must size ic_dp for it), so a buffer at the end of the
     * mapped memory fails EFAULT rather than overrunning. */
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *map = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    if (map != MAP_FAILED) {
        CHECK_EQ(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
        unsigned char *edge = map + pg - sizeof(ir);
        memcpy(edge, &ir, sizeof(ir));
        errno = 0;
        CHECK_EQ(tistr(fd, TI_GETINFO, edge, sizeof(ir), &len, 0), -1);
        CHECK_EQ(errno, EFAULT);
        munmap(map, 2 * (size_t)pg);
    }
    /* and the stream still works */
    memcpy(u.b, &ir, sizeof(ir));
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(ir), &len, 0), 0);
    CHECK_EQ(len, sizeof(struct T_info_ack));
    tclose(fd);
}

static void test_sync(void)
{
    int fd = topen(), len;
    union {
        unsigned char b[256];
        t_scalar_t align;
    } u;
    struct ti_sync_req sr = {TSRF_INFO_REQ | TSRF_QLEN_REQ};
    struct ti_sync_ack sa;

    /* T.4 before any bind: qlen 0 */
    atomic_store(&tpf_state, TS_UNBND);
    memcpy(u.b, &sr, sizeof(sr));
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, sizeof(sr), &len, 0), 0);
    CHECK_EQ(len, sizeof(sa));
    memcpy(&sa, u.b, sizeof(sa));
    CHECK_EQ(sa.PRIM_type, T_INFO_ACK);
    CHECK_EQ(sa.CURRENT_state, TS_UNBND);
    CHECK_EQ(sa.TSDU_size, 4096);
    CHECK_EQ(sa.ADDR_size, 32);
    CHECK_EQ(sa.PROVIDER_flag, XPG4_1);
    CHECK_EQ(sa.tsa_qlen, 0);
    CHECK_EQ(sa.tsa_flags, 0);
    CHECK_EQ(atomic_load(&tpf_last_type), M_PCPROTO);
    CHECK_EQ(atomic_load(&tpf_last_prim), T_INFO_REQ);

    /* after a bind with CONIND_number 7 */
    struct T_bind_req br = {T_BIND_REQ, 0, 0, 7};
    memcpy(u.b, &br, sizeof(br));
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br), &len, 0), 0);
    atomic_store(&tpf_state, TS_IDLE);
    memcpy(u.b, &sr, sizeof(sr));
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, sizeof(sr), &len, 0), 0);
    memcpy(&sa, u.b, sizeof(sa));
    CHECK_EQ(sa.CURRENT_state, TS_IDLE);
    CHECK_EQ(sa.tsa_qlen, 7);

    /* without TSRF_QLEN_REQ: no qlen; without TSRF_INFO_REQ: no request */
    int n = atomic_load(&tpf_nreq);
    sr.tsr_flags = 0;
    memcpy(u.b, &sr, sizeof(sr));
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, sizeof(sr), &len, 0), 0);
    CHECK_EQ(len, sizeof(sa));
    memcpy(&sa, u.b, sizeof(sa));
    CHECK_EQ(sa.PRIM_type, T_INFO_ACK);
    CHECK_EQ(sa.tsa_qlen, 0);
    CHECK_EQ(sa.TSDU_size, 0);
    CHECK_EQ(atomic_load(&tpf_nreq), n);
    sr.tsr_flags = TSRF_QLEN_REQ;
    memcpy(u.b, &sr, sizeof(sr));
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, sizeof(sr), &len, 0), 0);
    memcpy(&sa, u.b, sizeof(sa));
    CHECK_EQ(sa.tsa_qlen, 7);

    /* after an unbind: qlen 0 again */
    struct T_unbind_req ur = {T_UNBIND_REQ};
    memcpy(u.b, &ur, sizeof(ur));
    CHECK_EQ(tistr(fd, TI_UNBIND, u.b, sizeof(ur), &len, 0), 0);
    sr.tsr_flags = TSRF_INFO_REQ | TSRF_QLEN_REQ;
    memcpy(u.b, &sr, sizeof(sr));
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, sizeof(sr), &len, 0), 0);
    memcpy(&sa, u.b, sizeof(sa));
    CHECK_EQ(sa.tsa_qlen, 0);

    /* a T_ERROR_ACK to its T_INFO_REQ */
    atomic_store(&tpf_fail_prim, T_INFO_REQ);
    atomic_store(&tpf_fail_tli, TSYSERR);
    atomic_store(&tpf_fail_unix, ENOMEM);
    memcpy(u.b, &sr, sizeof(sr));
    CHECK_EQ(tistr(fd, TI_SYNC, u.b, sizeof(sr), &len, 0), (ENOMEM << 8) | TSYSERR);
    CHECK_EQ(len, 0);
    tclose(fd);
}

static void test_names(void)
{
    int fd = topen();
    char buf[64];
    struct netbuf nb = {sizeof(buf), 99, buf};

    /* T.5 */
    memset(buf, 0, sizeof(buf));
    CHECK_EQ(strm_ioctl(fd, TI_GETMYNAME, &nb), 0);
    CHECK_EQ(nb.len, strlen("local-addr"));
    CHECK(memcmp(buf, "local-addr", nb.len) == 0);
    CHECK_EQ(nb.maxlen, sizeof(buf));
    CHECK(nb.buf == buf);
    CHECK_EQ(atomic_load(&tpf_last_prim), T_ADDR_REQ);
    memset(buf, 0, sizeof(buf));
    CHECK_EQ(strm_ioctl(fd, TI_GETPEERNAME, &nb), 0);
    CHECK_EQ(nb.len, strlen("remote-peer"));
    CHECK(memcmp(buf, "remote-peer", nb.len) == 0);

    /* no peer: len 0 */
    tpf_rem[0] = '\0';
    nb.len = 99;
    CHECK_EQ(strm_ioctl(fd, TI_GETPEERNAME, &nb), 0);
    CHECK_EQ(nb.len, 0);

    /* maxlen too small: ENAMETOOLONG, the netbuf untouched */
    nb.maxlen = 3;
    nb.len = 99;
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, TI_GETMYNAME, &nb), -1);
    CHECK_EQ(errno, ENAMETOOLONG);
    CHECK_EQ(nb.len, 99);

    /* bad pointers: EFAULT */
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, TI_GETMYNAME, (void *)8), -1);
    CHECK_EQ(errno, EFAULT);
    struct netbuf bad = {64, 0, (void *)8};
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, TI_GETMYNAME, &bad), -1);
    CHECK_EQ(errno, EFAULT);

    /* the provider refuses T_ADDR_REQ */
    atomic_store(&tpf_fail_prim, T_ADDR_REQ);
    atomic_store(&tpf_fail_tli, TOUTSTATE);
    nb.maxlen = sizeof(buf);
    CHECK_EQ(strm_ioctl(fd, TI_GETMYNAME, &nb), TOUTSTATE);

    /* afterwards the stream works */
    atomic_store(&tpf_fail_prim, -1);
    CHECK_EQ(strm_ioctl(fd, TI_GETMYNAME, &nb), 0);
    CHECK_EQ(nb.len, strlen("local-addr"));
    tclose(fd);
}

/* An I_STR run on its own thread. */
struct istr_job {
    int fd, cmd, len, olen, timout, rval, err;
    union {
        unsigned char b[256];
        t_scalar_t align;
    } u;
    pthread_t th;
};

static void *istr_thread(void *arg)
{
    struct istr_job *j = arg;
    errno = 0;
    j->rval = tistr(j->fd, j->cmd, j->u.b, j->len, &j->olen, j->timout);
    j->err = errno;
    return NULL;
}

/* Wait until hdrv logged a held request; returns it (the caller frees). */
static mblk_t *await_request(int prim)
{
    for (int i = 0; i < 50; i++) {
        mblk_t *mp = hdrv_down(100);
        if (mp && tpf_prim_of(mp) == prim)
            return mp;
        freemsg(mp);
    }
    return NULL;
}

static void test_passthrough(void)
{
    int fd = topen(), len;
    unsigned char cbuf[64], dbuf[64];
    struct strbuf ctl = {sizeof(cbuf), 0, (char *)cbuf}, dat = {sizeof(dbuf), 0, (char *)dbuf};
    int flags = 0;

    /* T.6 a non-TI ioctl goes to the driver */
    atomic_store(&hdrv_ioc_rval, 7);
    CHECK_EQ(tistr(fd, ('X' << 8) | 1, cbuf, 4, &len, 0), 7);
    atomic_store(&hdrv_ioc_rval, 0);

    /* a primitive written down passes unchanged */
    struct T_conn_req cr = {T_CONN_REQ, 0, 0, 0, 0};
    struct strbuf wctl = {0, sizeof(cr), (char *)&cr}, wdat = {0, 3, "abc"};
    CHECK_EQ(putmsg(fd, &wctl, &wdat, 0), 0);
    mblk_t *mp = hdrv_down(1000);
    CHECK_EQ(tpf_prim_of(mp), T_CONN_REQ);
    CHECK(mp && mp->b_cont && msgdsize(mp->b_cont) == 3);
    freemsg(mp);

    /* unsolicited acks and indications pass up unchanged */
    struct T_ok_ack ok = {T_OK_ACK, T_CONN_REQ};
    tpf_up(M_PCPROTO, &ok, sizeof(ok), NULL, 0);
    struct T_conn_con cc = {T_CONN_CON, 0, 0, 0, 0};
    tpf_up(M_PROTO, &cc, sizeof(cc), NULL, 0);
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, sizeof(ok));
    CHECK_EQ(flags, RS_HIPRI);
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(ctl.len, sizeof(cc));
    CHECK_EQ(*(t_scalar_t *)(void *)cbuf, T_CONN_CON);

    /* while TI_BIND waits: data, an unrelated T_ERROR_ACK and a T_OK_ACK for
     * another primitive pass up; then the real ack ends the ioctl */
    atomic_store(&tpf_hold, 1);
    struct istr_job j = {.fd = fd, .cmd = TI_BIND, .timout = 10};
    struct T_bind_req br = {T_BIND_REQ, 0, 0, 0};
    memcpy(j.u.b, &br, sizeof(br));
    j.len = sizeof(br);
    CHECK_EQ(pthread_create(&j.th, NULL, istr_thread, &j), 0);
    mp = await_request(T_BIND_REQ);
    CHECK(mp != NULL);
    CHECK(mp && mp->b_datap->db_type == M_PROTO);
    freemsg(mp);
    struct T_data_ind di = {T_DATA_IND, 0};
    tpf_up(M_PROTO, &di, sizeof(di), "xy", 2);
    struct T_error_ack ea = {T_ERROR_ACK, T_CONN_REQ, TBADADDR, 0};
    tpf_up(M_PCPROTO, &ea, sizeof(ea), NULL, 0);
    struct T_ok_ack ok2 = {T_OK_ACK, T_CONN_RES}; /* M_PROTO: the head keeps one M_PCPROTO */
    tpf_up(M_PROTO, &ok2, sizeof(ok2), NULL, 0);
    unsigned char ack[sizeof(struct T_bind_ack) + 2];
    struct T_bind_ack ba = {T_BIND_ACK, 2, sizeof(ba), 0};
    memcpy(ack, &ba, sizeof(ba));
    memcpy(ack + sizeof(ba), "zz", 2);
    tpf_up(M_PCPROTO, ack, sizeof(ack), NULL, 0);
    pthread_join(j.th, NULL);
    CHECK_EQ(j.rval, 0);
    CHECK_EQ(j.olen, sizeof(ack));
    CHECK(memcmp(j.u.b, ack, sizeof(ack)) == 0);
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0); /* high priority first */
    CHECK_EQ(*(t_scalar_t *)(void *)cbuf, T_ERROR_ACK);
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(*(t_scalar_t *)(void *)cbuf, T_DATA_IND);
    CHECK_EQ(dat.len, 2);
    flags = 0;
    CHECK_EQ(getmsg(fd, &ctl, &dat, &flags), 0);
    CHECK_EQ(*(t_scalar_t *)(void *)cbuf, T_OK_ACK);
    tclose(fd);
}

static void test_abandoned(void)
{
    int fd = topen(), len;
    union {
        unsigned char b[256];
        t_scalar_t align;
    } u;
    struct T_info_req ir = {T_INFO_REQ};

    /* T.7 the provider does not answer: ETIME after ic_timout */
    atomic_store(&tpf_hold, 1);
    memcpy(u.b, &ir, sizeof(ir));
    errno = 0;
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(ir), &len, 1), -1);
    CHECK_EQ(errno, ETIME);
    /* its late ack is freed by the head (stale ioc_id): nothing to read */
    struct T_info_ack ia = tpf_info();
    tpf_up(M_PCPROTO, &ia, sizeof(ia), NULL, 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    int n = -1;
    CHECK_EQ(strm_ioctl(fd, I_NREAD, &n), 0);
    CHECK_EQ(n, 0);
    /* the next ioctl is not refused (the abandoned one was superseded) */
    atomic_store(&tpf_hold, 0);
    memcpy(u.b, &ir, sizeof(ir));
    CHECK_EQ(tistr(fd, TI_GETINFO, u.b, sizeof(ir), &len, 0), 0);
    CHECK_EQ(len, sizeof(ia));
    tclose(fd);

    /* close with an ioctl outstanding in timod: nothing leaks */
    fd = topen();
    atomic_store(&tpf_hold, 1);
    struct T_bind_req br = {T_BIND_REQ, 0, 0, 0};
    memcpy(u.b, &br, sizeof(br));
    CHECK_EQ(tistr(fd, TI_BIND, u.b, sizeof(br), &len, 1), -1);
    CHECK_EQ(errno, ETIME);
    tclose(fd);
}

int main(void)
{
    CHECK(register_strdev(&hdrv_cdev, 0) > 0);
    test_requests();
    test_error_acks();
    test_malformed();
    test_sync();
    test_names();
    test_passthrough();
    test_abandoned();
    hdrv_wput_hook = NULL;
    hdrv_down_clear();
    CHECK_EQ(unregister_strdev(&hdrv_cdev, 0), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
