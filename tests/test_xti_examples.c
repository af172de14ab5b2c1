/* SPDX-License-Identifier: MIT */
/*
 * test_xti_examples.c -- the XTI echo examples (examples/xti_echo_server.c,
 * examples/xti_echo_client.c, built by cmake/xnet.cmake) run as a user runs
 * them, each over every transport it accepts (issue 21 item 4):
 *   E.1  xti_echo_server over /dev/tcp (a byte stream, tsdu 0; the client
 *        reaches it at 127.0.0.1), /dev/ticots (no orderly release: the
 *        client disconnects) and /dev/ticotsord (TSDUs, orderly release)
 *   E.2  xti_echo_client (its own small server) over the same three
 * Each run must end by itself within the deadline (a conversation that does
 * not end -- the old client quit without closing and the server waited -- is
 * killed and fails), exit 0, and print every echo: the three short messages
 * byte for byte and the 64 KiB one (whose bytes the client compares).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define DEADLINE_MS 30000L

extern char **environ;

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Run prog provider; its stdout in out (NUL-terminated).  The exit status,
 * or -1 if it had to be killed at the deadline or could not start. */
static int run(const char *prog, const char *provider, char *out, size_t outsz)
{
    int p[2];
    pid_t pid;
    posix_spawn_file_actions_t fa;
    char *argv[] = {(char *)prog, (char *)provider, NULL};
    size_t len = 0;
    int status, killed = 0;

    out[0] = '\0';
    if (pipe(p) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    int e = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (e != 0) {
        close(p[0]);
        fprintf(stderr, "  cannot run %s: %s\n", prog, strerror(e));
        return -1;
    }
    long end = now_ms() + DEADLINE_MS;
    for (;;) {
        long left = end - now_ms();
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int n = poll(&pf, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            continue;
        ssize_t k = read(p[0], out + len, outsz - 1 - len);
        if (k <= 0)
            break; /* end of file: the program has ended (or closed stdout) */
        len += (size_t)k;
        out[len] = '\0';
        if (len == outsz - 1)
            break;
    }
    close(p[0]);
    while (!killed && waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ms() >= end) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (killed) {
        waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void check_run(const char *prog, const char *provider)
{
    static const char *const want[] = {"echo: hello\n", "echo: over XTI\n", "echo: on ustreams\n",
                                       "echo: 65536 bytes\n"};
    char out[4096];
    long t0 = now_ms();
    int rc = run(prog, provider, out, sizeof(out));
    int ok = CHECK_EQ(rc, 0);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ok &= CHECK(strstr(out, want[i]) != NULL);
    if (!ok)
        fprintf(stderr, "  %s %s: status %d after %ld ms, output:\n%s\n", prog, provider, rc,
                now_ms() - t0, out);
}

int main(void)
{
    static const char *const provs[] = {"/dev/tcp", "/dev/ticots", "/dev/ticotsord"};
    for (size_t i = 0; i < sizeof(provs) / sizeof(provs[0]); i++) {
        check_run(XTI_ECHO_SERVER, provs[i]); /* E.1 */
        check_run(XTI_ECHO_CLIENT, provs[i]); /* E.2 */
    }
    return CHECK_RESULT();
}
