/* SPDX-License-Identifier: MIT */
/*
 * netperf_stats.c -- the confidence interval of `ustreams netperf`'s
 * repetitions (netperf's -i and -I, the method of seed 002): the mean of n
 * samples, and the half-width t(level, n-1) * s / sqrt(n) of its interval,
 * with Student's t from a table (two-sided, 1 to 29 degrees of freedom).
 */
#include <math.h>

#include "netperf.h"

/* Two-sided quantiles t(1 - (1 - level)/2, df), df = 1 .. NP_MAX_ITER - 1:
 * tq[0] for 99 %, tq[1] for 95 %. */
static const double tq[2][NP_MAX_ITER - 1] = {{
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
    3.106,  3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845,
    2.831,  2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756,
}, {
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045,
}};

int np_level_ok(int level)
{
    return level == 95 || level == 99;
}

void np_stats(const double *x, int n, int level, double width, struct np_stats *st)
{
    double sum = 0, ss = 0;

    st->n = n;
    st->mean = 0;
    st->sd = 0;
    st->half = -1;
    st->met = 0;
    if (n < 1)
        return;
    for (int i = 0; i < n; i++)
        sum += x[i];
    st->mean = sum / n;
    if (n < 2 || n > NP_MAX_ITER)
        return;
    for (int i = 0; i < n; i++)
        ss += (x[i] - st->mean) * (x[i] - st->mean);
    st->sd = sqrt(ss / (n - 1));
    st->half = tq[level == 95][n - 2] * st->sd / sqrt((double)n);
    st->met = st->mean > 0 && st->half <= width / 200.0 * st->mean;
}
