/* SPDX-License-Identifier: MIT */
/*
 * strstat.h -- what strstat.c shares with strstat_table.c.
 */
#ifndef UST_STRSTAT_H
#define UST_STRSTAT_H

#include <stddef.h>
#include <stdio.h>

/* The MT level and driver flags of a registration into buf (size n, always
 * NUL-terminated): the D_* names joined by '|', "D_LEGACY" for none. */
void ust_dflags_str(char *buf, size_t n, unsigned int flag);

/* The result of printing r to out: r, or -1 with errno (EIO if the stream
 * set none) if out has an error after a flush. */
int ust_out_result(FILE *out, int r);

#endif /* UST_STRSTAT_H */
