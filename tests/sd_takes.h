/* SPDX-License-Identifier: MIT */
/*
 * sd_takes.h -- for the tests of the read and write snapshots: how many
 * times a descriptor's stream head has had its sd_lock taken (a snapshot
 * holds while this count stands).
 */
#ifndef UST_TEST_SD_TAKES_H
#define UST_TEST_SD_TAKES_H

#include "check.h"
#include "sthead.h"

static inline unsigned long takes_of(int fd)
{
    int err = 0;
    struct stdata *sd = ust_sd_get(fd, &err);
    if (!CHECK(sd != NULL))
        return 0;
    unsigned long t = ust_lock_takes(&sd->sd_lock);
    ust_sd_put(sd);
    return t;
}

#endif /* UST_TEST_SD_TAKES_H */
