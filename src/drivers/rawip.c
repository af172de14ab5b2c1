/* SPDX-License-Identifier: MIT */
/*
 * rawip.c -- the "rawip" TPI provider (T_CLTS) over kernel raw IP sockets:
 * "/dev/rawip", "/dev/streams/rawip".  It is the udp provider (udp.c,
 * udp_data.c, udp_opt.c) with SOCK_RAW sockets: everything but the open and
 * the registration is shared, the differences are carried by its
 * struct udp_kind.  docs/TPI.md "rawip" is the user's description.
 *
 * MT level, flow control, batching, locking: as udp.c.
 * Privilege: raw sockets need CAP_NET_RAW.  The open tries to make one and
 * fails with EPERM (the socket's errno) when the process may not, so a
 * program learns it at t_open rather than at t_bind.
 * Addresses: a struct sockaddr_in / sockaddr_in6 whose port field, in
 * T_BIND_REQ, names the IP protocol (0: ICMP for IPv4, ICMPv6 for IPv6);
 * in T_UNITDATA_REQ the port of DEST is 0 or that protocol.  Received
 * datagrams are the IP payload (the IPv4 header the kernel adds is taken
 * off).
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/ddi.h>
#include <sys/socket.h>
#include <sys/strconf.h>
#include <sys/stream.h>
#include <unistd.h>

#include "udp.h"

#define RAWIP_ID 5411
#define RAWIP_HIWAT (256 * 1024)
#define RAWIP_LOWAT (64 * 1024)

/* TSDU_size: the largest payload of one IP datagram (IPv4 less its header). */
static const struct udp_kind rawip_kind = {.type = SOCK_RAW, .tsdu4 = 65535 - 20, .tsdu6 = 65535};

static int rawip_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);

static struct module_info rawip_minfo = {
    .mi_idnum = RAWIP_ID,
    .mi_idname = "rawip",
    .mi_minpsz = 0,
    .mi_maxpsz = INFPSZ,
    .mi_hiwat = RAWIP_HIWAT,
    .mi_lowat = RAWIP_LOWAT,
};
static struct qinit rawip_rinit = {
    .qi_putp = udp_rput,
    .qi_srvp = udp_rsrv,
    .qi_qopen = rawip_open,
    .qi_qclose = udp_close,
    .qi_minfo = &rawip_minfo,
};
static struct qinit rawip_winit = {
    .qi_putp = udp_wput,
    .qi_srvp = udp_wsrv,
    .qi_minfo = &rawip_minfo,
};
static struct streamtab rawip_info = {.st_rdinit = &rawip_rinit, .st_wrinit = &rawip_winit};
static struct cdevsw rawip_cdev = {
    .d_name = "rawip", .d_str = &rawip_info, .d_flag = D_MP | D_CLONE};

void ust_rawip_register(void);

/*
 * ust_rawip_register -- register "rawip".
 *   Context: ust_builtin_register, once (after ust_udp_register, which
 *   set up the epoll thread's fork hooks).
 */
void ust_rawip_register(void)
{
    int rc = register_strdev(&rawip_cdev, 0);

    if (rc < 0)
        cmn_err(CE_WARN, "rawip: register_strdev failed (%d)", rc);
}

/* Open: EPERM (or the socket's other errno) when the process may not make
 * raw sockets; otherwise an endpoint as udp's. */
static int rawip_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    int fd;

    (void)oflag;
    (void)crp;
    if (q->q_ptr == NULL) {
        fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        if (fd < 0)
            return errno == EACCES ? EPERM : errno;
        close(fd);
    }
    return udp_open_kind(q, devp, sflag, &rawip_kind);
}
