/* SPDX-License-Identifier: MIT */
/*
 * fuzz_head_calls.c -- fuzz target: the input is a sequence of stream-head
 * calls (fuzz_calls.h) on streams of the built-in devices and on pipes, with
 * the built-in modules pushed and popped, streams linked under the mux
 * driver and descriptors passed over pipes.  After each input every stream
 * is closed and no message block may be outstanding.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_calls.h"

static const char *const devs[] = {
    "/dev/streams/echo",       "/dev/streams/nuls",       "/dev/streams/log",
    "/dev/streams/mux",        "/dev/streams/clone/loop", "/dev/streams/sad",
    "/dev/streams/clone/echo", "/dev/streams/clone/nuls", "/dev/streams/nosuch",
    "/dev/streams/echo/3",     "/dev/streams/loop/2",     "/dev/streams/fifo/0",
    "/dev/streams/sfx/1",      "/dev/streams/pipe",       "/dev/streams/echo/999",
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_process_setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz z = {data, size};
    struct fz_fds f;
    int calls = 0;

    fz_fds_init(&f, devs, (int)(sizeof(devs) / sizeof(devs[0])));
    while (fz_more(&z) && calls++ < 256)
        fz_call(&z, &f);
    fz_close_all(&f);
    fz_end_of_input();
    return 0;
}
