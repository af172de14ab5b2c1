/* SPDX-License-Identifier: MIT */
/*
 * xti_plain_prog.c -- an unmodified XTI program (XNS Issue 5): it includes
 * only <xti.h> and the C library, is built -std=c11 -Wpedantic without
 * _GNU_SOURCE against include/, and links with libxnet (cmake/xnet.cmake,
 * ctest test_xti_compile).  At run time it sends itself a datagram over
 * ticlts; exit 77 (skipped) when the provider is not there.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <xti.h>

int main(void)
{
    struct t_info info;
    struct t_bind *ret;
    struct t_unitdata ud, in;
    char buf[64], abuf[64];
    int fd, flags = 0;

    fd = t_open("/dev/ticlts", O_RDWR, &info);
    if (fd < 0) {
        t_error("t_open /dev/ticlts");
        return 77;
    }
    ret = (struct t_bind *)t_alloc(fd, T_BIND, T_ADDR);
    if (!ret || t_bind(fd, NULL, ret) < 0) {
        t_error("t_bind");
        return 1;
    }
    memset(&ud, 0, sizeof(ud));
    ud.addr = ret->addr;
    ud.udata.buf = (char *)"hello";
    ud.udata.len = 5;
    if (t_sndudata(fd, &ud) < 0) {
        t_error("t_sndudata");
        return 1;
    }
    memset(&in, 0, sizeof(in));
    in.addr.buf = abuf;
    in.addr.maxlen = sizeof(abuf);
    in.udata.buf = buf;
    in.udata.maxlen = sizeof(buf);
    if (t_rcvudata(fd, &in, &flags) < 0) {
        t_error("t_rcvudata");
        return 1;
    }
    if (in.udata.len != 5 || memcmp(buf, "hello", 5) != 0) {
        fprintf(stderr, "wrong data\n");
        return 1;
    }
    t_free(ret, T_BIND);
    if (t_close(fd) < 0) {
        t_error("t_close");
        return 1;
    }
    printf("xti_plain_prog: ok (%s)\n", t_strerror(TBADF));
    return 0;
}
