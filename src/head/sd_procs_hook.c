/* SPDX-License-Identifier: MIT */
/*
 * sd_procs_hook.c -- the one door from the in-process stream head up to the
 * cross-process layer (src/procs/): the table of hooks that layer installs
 * at library start (sd_procs.h, "the layer above").
 *
 * Locking: none.  The table pointer is written once (compare-exchange from
 * NULL) and read with acquire loads; the table itself is constant.
 */
#include <stddef.h>

#include "sthead.h"

static const struct ust_procs_ops *procs_ops; /* atomic: set once */

void ust_sd_set_procs(const struct ust_procs_ops *ops)
{
    const struct ust_procs_ops *none = NULL;
    __atomic_compare_exchange_n(&procs_ops, &none, ops, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

const struct ust_procs_ops *ust_sd_procs(void)
{
    return __atomic_load_n(&procs_ops, __ATOMIC_ACQUIRE);
}
