/* SPDX-License-Identifier: MIT */
/*
 * test_tl_clts.c -- ticlts unit data (tl_clts.c, docs/TPI.md).
 *   1.  T_UNITDATA_REQ -> T_UNITDATA_IND with SRC the sender's address,
 *       data and boundaries intact (0 bytes, TSDU_size bytes).
 *   2.  T_UDERROR_IND back to the sender: no endpoint at DEST
 *       (ECONNREFUSED), more than TSDU_size (EMSGSIZE), DEST_length 0 or
 *       malformed options (EINVAL); DEST echoed.  Addresses are per device.
 *   Flow control with many senders is in test_tl_stress.c.
 */
#include <stdio.h>
#include <unistd.h>

#include "tl_util.h"

static void t_basic(void)
{
    int a = tlu_open(TLU_CLTS), b = tlu_open(TLU_CLTS), x = tlu_open(TLU_COTS);
    unsigned char aa[8];
    int al;
    struct tlu_msg m;
    static char big[65537];
    struct T_info_ack ia;

    CHECK(tlu_info(a, &ia));
    CHECK_EQ(ia.SERV_type, T_CLTS);
    CHECK_EQ(ia.TSDU_size, 65536);
    CHECK_EQ(ia.ETSDU_size, T_INVALID);
    CHECK_EQ(ia.CDATA_size, T_INVALID);
    CHECK_EQ(ia.DDATA_size, T_INVALID);
    CHECK_EQ(tlu_bind(a, NULL, 0, 5, aa, &al, NULL), 0);
    unsigned qlen = 9;
    CHECK_EQ(tlu_bind(b, "bee", 3, 5, NULL, NULL, &qlen), 0);
    CHECK_EQ(qlen, 0); /* no connections on ticlts */
    CHECK_EQ(tlu_bind(x, "cots", 4, 0, NULL, NULL, NULL), 0);

    CHECK_EQ(tlu_unitdata(a, "bee", 3, "hello", 5), 0);
    CHECK_EQ(tlu_unitdata(a, "bee", 3, "", 0), 0);
    CHECK_EQ(tlu_unitdata(a, "bee", 3, big, 65536), 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.c.p.unitdata_ind.SRC_length, al);
    CHECK(memcmp(m.c.b + m.c.p.unitdata_ind.SRC_offset, aa, (size_t)al) == 0);
    CHECK_EQ(m.dlen, 5);
    CHECK(memcmp(m.d, "hello", 5) == 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK(m.dlen <= 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 65536);
    /* to itself */
    CHECK_EQ(tlu_unitdata(b, "bee", 3, "me", 2), 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 2);

    /* errors come back as T_UDERROR_IND with DEST */
    CHECK_EQ(tlu_unitdata(a, "nobody", 6, "x", 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, ECONNREFUSED);
    CHECK_EQ(m.c.p.uderror_ind.DEST_length, 6);
    CHECK(memcmp(m.c.b + m.c.p.uderror_ind.DEST_offset, "nobody", 6) == 0);
    CHECK_EQ(tlu_unitdata(a, "cots", 4, "x", 1), 0); /* bound on ticots only */
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, ECONNREFUSED);
    CHECK_EQ(tlu_unitdata(a, "bee", 3, big, 65537), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EMSGSIZE);
    CHECK_EQ(tlu_unitdata(a, "bee", 0, "x", 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EINVAL);
    struct {
        struct T_unitdata_req r;
        char a[4];
        t_scalar_t o[2];
    } bad = {{T_UNITDATA_REQ, 3, 20, 8, 24}, "bee", {8, 0}}; /* option len < header */
    CHECK_EQ(tlu_put(a, &bad, sizeof(bad), "x", 1, 0), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, EINVAL);
    /* options well formed: passed over, the unit delivered */
    struct {
        struct T_unitdata_req r;
        char a[4];
        struct T_opthdr oh;
        t_uscalar_t v;
    } good = {{T_UNITDATA_REQ, 3, 20, 20, 24}, "bee", {20, XTI_GENERIC, XTI_DEBUG, 0}, 1};
    CHECK_EQ(tlu_put(a, &good, sizeof(good), "y", 1, 0), 0);
    CHECK_EQ(tlu_get(b, &m), T_UNITDATA_IND);
    CHECK_EQ(m.dlen, 1);
    CHECK(tlu_quiet(a, 10));
    CHECK(tlu_quiet(b, 10));

    /* after unbind the address is gone */
    CHECK_EQ(tlu_req(b, T_UNBIND_REQ), 0);
    CHECK(tlu_ok(b, T_UNBIND_REQ));
    CHECK_EQ(tlu_unitdata(a, "bee", 3, "x", 1), 0);
    CHECK_EQ(tlu_get(a, &m), T_UDERROR_IND);
    CHECK_EQ(m.c.p.uderror_ind.ERROR_type, ECONNREFUSED);
    strm_close(a);
    strm_close(b);
    strm_close(x);
}

int main(void)
{
    t_basic();
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
