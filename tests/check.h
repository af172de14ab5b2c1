/* SPDX-License-Identifier: MIT */
/*
 * check.h -- the assertions of the ustreams tests.
 *
 *   CHECK(cond)        count a pass, or print file:line and the expression and
 *                      count a failure; the test goes on either way.
 *   CHECK_EQ(a, b)     the same for a == b compared as long, printing both values.
 *   CHECK_NE(a, b)     a != b as long.
 *   CHECK_NO_BLOCKS()  ustreams_blockstats shows no mblk, dblk or byte outstanding.
 *   CHECK_RESULT()     print "N passed, M failed"; the exit status for main:
 *                      0 if nothing failed, 1 otherwise (return CHECK_RESULT();).
 *
 * Usable from any thread.  The counters are weak definitions, so every
 * translation unit of a test executable (the test, tests/harness.c) shares
 * one pair.
 */
#ifndef UST_TEST_CHECK_H
#define UST_TEST_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <ustreams_exec.h>

__attribute__((weak)) atomic_long check_npassed;
__attribute__((weak)) atomic_long check_nfailed;

static inline int check_report(int ok, const char *file, int line, const char *expr)
{
    if (ok) {
        atomic_fetch_add(&check_npassed, 1);
    } else {
        atomic_fetch_add(&check_nfailed, 1);
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
    }
    return ok;
}

static inline int check_report_eq(long a, long b, int want_eq, const char *file, int line,
                                  const char *ea, const char *eb)
{
    int ok = want_eq ? a == b : a != b;
    if (ok) {
        atomic_fetch_add(&check_npassed, 1);
    } else {
        atomic_fetch_add(&check_nfailed, 1);
        fprintf(stderr, "%s:%d: CHECK failed: %s %s %s (%ld vs %ld)\n", file, line, ea,
                want_eq ? "==" : "!=", eb, a, b);
    }
    return ok;
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ(a, b) check_report_eq((long)(a), (long)(b), 1, __FILE__, __LINE__, #a, #b)
#define CHECK_NE(a, b) check_report_eq((long)(a), (long)(b), 0, __FILE__, __LINE__, #a, #b)

#define CHECK_NO_BLOCKS()                                                                          \
    do {                                                                                           \
        struct ustreams_blockstats check_st_;                                                      \
        ustreams_blockstats(&check_st_);                                                           \
        CHECK_EQ(check_st_.mblks, 0);                                                              \
        CHECK_EQ(check_st_.dblks, 0);                                                              \
        CHECK_EQ(check_st_.bytes, 0);                                                              \
    } while (0)

static inline int check_result(void)
{
    long f = atomic_load(&check_nfailed);
    printf("%ld passed, %ld failed\n", atomic_load(&check_npassed), f);
    fflush(stdout);
    return f != 0;
}

#define CHECK_RESULT() check_result()

#endif /* UST_TEST_CHECK_H */
