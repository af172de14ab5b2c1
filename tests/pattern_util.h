/* SPDX-License-Identifier: MIT */
/*
 * pattern_util.h -- a byte pattern written through a stream and checked
 * when read back (tests that count bytes, not messages).
 *
 *   pat(i)                        byte i of the pattern
 *   pat_write(fd, off, n, each)   write bytes off..off+n of it in writes of
 *                                 `each` bytes (at most 2048), each checked
 *   pat_read(fd, off, n)          read exactly n bytes (blocking), checking
 *                                 them against the pattern from off
 *   pat_read_each(fd, off, n, each)  the same in reads of at most `each`
 *                                 bytes (at most 4096)
 */
#ifndef UST_TEST_PATTERN_UTIL_H
#define UST_TEST_PATTERN_UTIL_H

#include <stddef.h>
#include <sys/types.h>
#include <ustreams.h>

#include "check.h"

static inline unsigned char pat(size_t i)
{
    return (unsigned char)(i * 131 + i / 251 + 7);
}

static inline void pat_write(int fd, size_t off, size_t n, size_t each)
{
    unsigned char buf[2048];
    if (each > sizeof(buf))
        each = sizeof(buf);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < each ? n - done : each;
        for (size_t i = 0; i < k; i++)
            buf[i] = pat(off + done + i);
        if (!CHECK_EQ(strm_write(fd, buf, k), (long)k))
            return;
        done += k;
    }
}

static inline void pat_read_each(int fd, size_t off, size_t n, size_t each)
{
    unsigned char buf[4096];
    if (each > sizeof(buf))
        each = sizeof(buf);
    size_t got = 0;
    while (got < n) {
        size_t want = n - got < each ? n - got : each;
        ssize_t r = strm_read(fd, buf, want);
        if (!CHECK(r > 0))
            return;
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] != pat(off + got + (size_t)i)) {
                CHECK(!"byte differs");
                return;
            }
        got += (size_t)r;
    }
    CHECK_EQ(got, n);
}

static inline void pat_read(int fd, size_t off, size_t n)
{
    pat_read_each(fd, off, n, 4096);
}

#endif /* UST_TEST_PATTERN_UTIL_H */
