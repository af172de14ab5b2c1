/* SPDX-License-Identifier: MIT */
/*
 * rtoken_dump.h -- a test's diagnostic: the readable-token state of a
 * stream (src/head/sd_tokpay.c, the lazy token; sd_arrive.c, the arrivals),
 * printed when a poll(2) on its descriptor waited in vain.
 */
#ifndef UST_TEST_RTOKEN_DUMP_H
#define UST_TEST_RTOKEN_DUMP_H

#include <stdio.h>

#include "sthead.h"

/* What the readable token of fd's stream looks like (the lazy token,
 * src/head/sd_tokpay.c): printed when a poll(2) waited in vain. */
static void dump_rtoken(int fd)
{
    int err = 0;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!sd) {
        fprintf(stderr, "dump_rtoken: fd %d: errno %d\n", fd, err);
        return;
    }
    fprintf(stderr,
            "dump_rtoken: rtoken %d tlazy %d listed %d; arrivals first %p bytes %zu lazy %d "
            "owed %d dry_gen %u; queue count %zu\n",
            __atomic_load_n(&sd->sd_rtoken, __ATOMIC_RELAXED),
            __atomic_load_n(&sd->sd_tlazy, __ATOMIC_RELAXED),
            __atomic_load_n(&sd->sd_tp_listed, __ATOMIC_RELAXED),
            (void *)__atomic_load_n(&sd->sd_ar.first, __ATOMIC_RELAXED),
            __atomic_load_n(&sd->sd_ar.bytes, __ATOMIC_RELAXED),
            __atomic_load_n(&sd->sd_ar.lazy, __ATOMIC_RELAXED),
            __atomic_load_n(&sd->sd_ar.owed, __ATOMIC_RELAXED),
            __atomic_load_n(&sd->sd_ar.dry_gen, __ATOMIC_RELAXED),
            sd->sd_rq ? __atomic_load_n(&sd->sd_rq->q_count, __ATOMIC_RELAXED) : 0);
    ust_sd_put(sd);
}

#endif /* UST_TEST_RTOKEN_DUMP_H */
