/* SPDX-License-Identifier: MIT */
/*
 * fuzz_decode.h -- what every fuzz target in tests/fuzz/ shares: a decoder
 * that turns the fuzzer's bytes into numbers, and the end-of-input checks.
 *
 *   struct fz            the input being decoded (p, n: what is left)
 *   fz_u8/u16/u32(z)     the next 1, 2, 4 bytes (little-endian); 0 once the
 *                        input is exhausted, so decoding never fails
 *   fz_pick(z, n)        a number in [0, n)
 *   fz_bytes(z, buf, n)  up to n bytes copied into buf; how many
 *   fz_more(z)           1 while bytes are left
 *   fz_process_setup()   once per process: SIGPOLL/SIGURG/SIGPIPE caught (a
 *                        stream may raise them: I_SETSIG, SNDPIPE) so they
 *                        are delivered but harmless; a private runtime
 *                        directory (the autopush table is per user)
 *   fz_end_of_input()    after each input, once every stream is closed: wait
 *                        for the executive to go idle, remove any autopush
 *                        configuration the input made (so inputs do not
 *                        influence each other), and abort() unless zero
 *                        message blocks are outstanding -- a leak is a finding
 *
 * A target is one file tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput
 * (and, if it needs one-time setup, LLVMFuzzerInitialize).  With clang
 * (`make fuzz`) it links with libFuzzer; in the normal build it links with
 * replay_main.c, which runs it over the files of tests/fuzz/corpus/NAME/.
 */
#ifndef UST_FUZZ_DECODE_H
#define UST_FUZZ_DECODE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sad.h>
#include <ustreams.h>

#include "autopush.h"
#include "log_util.h"

struct fz {
    const uint8_t *p;
    size_t n;
};

static inline int fz_more(const struct fz *z)
{
    return z->n > 0;
}

static inline uint8_t fz_u8(struct fz *z)
{
    if (z->n == 0)
        return 0;
    z->n--;
    return *z->p++;
}

static inline uint16_t fz_u16(struct fz *z)
{
    uint16_t lo = fz_u8(z);
    return (uint16_t)(lo | (uint16_t)fz_u8(z) << 8);
}

static inline uint32_t fz_u32(struct fz *z)
{
    uint32_t lo = fz_u16(z);
    return lo | (uint32_t)fz_u16(z) << 16;
}

static inline unsigned fz_pick(struct fz *z, unsigned n)
{
    return n ? fz_u8(z) % n : 0;
}

static inline size_t fz_bytes(struct fz *z, void *buf, size_t n)
{
    if (n > z->n)
        n = z->n;
    memcpy(buf, z->p, n);
    z->p += n;
    z->n -= n;
    return n;
}

static volatile sig_atomic_t fz_signals; /* signals caught, for the curious */

static void fz_on_signal(int sig)
{
    (void)sig;
    fz_signals++;
}

static inline void fz_process_setup(void)
{
    struct sigaction sa;

    /* A private runtime directory: the autopush table an input configures
     * is the user's (<rundir>/autopush), and must not reach other tests. */
    log_private_rundir();
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fz_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPOLL, &sa, NULL);
    sigaction(SIGURG, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
}

static void fz_collect_apush(const struct strapush *sap, const char *drv, void *arg)
{
    struct strapush *list = arg;
    (void)drv;
    for (int i = 0; i < 64; i++)
        if (list[i].sap_major == 0) {
            list[i] = *sap;
            return;
        }
}

static inline void fz_end_of_input(void)
{
    struct strapush list[64];
    struct ustreams_blockstats st;

    memset(list, 0, sizeof(list));
    ust_autopush_foreach(fz_collect_apush, list);
    for (int i = 0; i < 64 && list[i].sap_major != 0; i++) {
        list[i].sap_cmd = SAP_CLEAR;
        ust_autopush_set(&list[i]);
    }
    if (ustreams_quiesce(5000) != 0) {
        fprintf(stderr, "fuzz: the executive did not go idle within 5 s\n");
        abort();
    }
    ustreams_blockstats(&st);
    if (st.mblks != 0 || st.dblks != 0 || st.bytes != 0) {
        fprintf(stderr, "fuzz: %ld mblks, %ld dblks (%ld bytes) outstanding after the input\n",
                st.mblks, st.dblks, st.bytes);
        abort();
    }
}

#endif /* UST_FUZZ_DECODE_H */
