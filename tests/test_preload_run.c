/* SPDX-License-Identifier: MIT */
/*
 * test_preload_run.c -- unmodified programs under `ustreams run` (issue 22
 * item 1; docs/PROGRAMS.md "Unmodified programs: ustreams run").
 *
 * Each case execs the build tree's `ustreams run ...` in a child with a
 * deadline, its output captured, and checks the exit status and output:
 *   1 python3 tests/preload/echo.py: os.open of /dev/streams/clone/echo,
 *     os.write/os.read, fcntl.ioctl I_PUSH/I_LOOK/I_FIND/I_LIST/I_NREAD,
 *     select.select, os.close, ctypes isastream (python3 missing: a failure
 *     that says so);
 *   2 /bin/sh: exec 3<>/dev/streams/clone/echo, printf >&3, and the read
 *     back by the shell's own read builtin; the brief's `head -c 3 <&3` execs
 *     head, which needs the stream across exec (item 2, src/preload/
 *     pl_exec.c): strict once that file exists, reported otherwise;
 *   3 tests/preload/plprog.c (built without libustreams): echo, pipe
 *     (--pipes: STREAMS pipes, putmsg/getmsg with bands, counted), plain (not
 *     a stream: unchanged, errno kept), many (close(2) of many streams);
 *     stdio: fdopen+fputs/fgets on a stream (a FILE whose I/O is the
 *     stream's, src/preload/pl_stdio.c);
 *   3b pipelines under --pipes with sh (vfork) and bash (fork): seq | cat |
 *     wc, seq | sort | head (stdio on both sides), the exec'd program sees a
 *     STREAMS pipe (isastream);
 *   4 the command itself: --help, a bad option (2), a missing program (127).
 * Under a sanitizer the children get its runtime in LD_PRELOAD too.
 */
#include <errno.h>
#include <ustreams.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define DEADLINE_MS 60000

static char sanrt[1024]; /* sanitizer runtimes of this process, ':'-joined */

/* The sanitizer runtime libraries mapped here (libasan, libubsan, libtsan). */
static void find_sanitizer_runtime(void)
{
    FILE *m = fopen("/proc/self/maps", "r");
    char line[1024];
    while (m != NULL && fgets(line, sizeof(line), m) != NULL) {
        char *p = strchr(line, '/');
        if (p == NULL || !(strstr(p, "/libasan.so") || strstr(p, "/libubsan.so") ||
                           strstr(p, "/libtsan.so")))
            continue;
        p[strcspn(p, "\n")] = '\0';
        if (strstr(sanrt, p) == NULL && strlen(sanrt) + strlen(p) + 2 < sizeof(sanrt)) {
            if (sanrt[0] != '\0')
                strcat(sanrt, ":");
            strcat(sanrt, p);
        }
    }
    if (m != NULL)
        fclose(m);
}

/* Run argv (argv[0] a path) with the deadline; its stdout+stderr in out.
 * The exit status, -1 if killed by a signal, -2 if it passed the deadline. */
static int run(char *const argv[], char *out, size_t n)
{
    int p[2];
    if (pipe(p) != 0)
        return -3;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        signal(SIGPIPE, SIG_DFL); /* as a shell starts its commands */
        close(p[0]);
        close(p[1]);
        if (sanrt[0] != '\0') {
            setenv("LD_PRELOAD", sanrt, 1);
            setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
        }
        execv(argv[0], argv);
        _exit(126);
    }
    close(p[1]);
    size_t len = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int hung = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = DEADLINE_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, (int)left) == 0) {
            hung = 1;
            break;
        }
        ssize_t k = read(p[0], out + len, n - 1 - len);
        if (k <= 0)
            break;
        len += (size_t)k;
        if (len == n - 1)
            break;
    }
    out[len] = '\0';
    close(p[0]);
    int st;
    if (hung)
        kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    if (hung)
        return -2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *ustreams = USTREAMS_BUILD_DIR "/ustreams";

/* `ustreams run [opt] args...`: exit status and output; a non-zero status
 * prints the output to help the reader. */
static int run_under(const char *opt, char *const args[], char *out, size_t n)
{
    char *argv[16];
    int a = 0;
    argv[a++] = (char *)ustreams;
    argv[a++] = "run";
    if (opt != NULL)
        argv[a++] = (char *)opt;
    argv[a++] = "--";
    for (int i = 0; args[i] != NULL && a < 15; i++)
        argv[a++] = args[i];
    argv[a] = NULL;
    int st = run(argv, out, n);
    if (st != 0)
        fprintf(stderr, "[%s %s ...] status %d, output:\n%s\n", opt ? opt : "", args[0], st, out);
    return st;
}

static int have_python(char *path, size_t n)
{
    const char *dirs[] = {"/usr/bin", "/usr/local/bin", "/bin"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, n, "%s/python3", dirs[i]);
        if (access(path, X_OK) == 0)
            return 1;
    }
    return 0;
}

static void case_python(void)
{
    char py[256], out[8192], v[5][16];
    if (!have_python(py, sizeof(py))) {
        fprintf(stderr, "test_preload_run: python3 not found (in /usr/bin, /usr/local/bin, /bin): "
                        "the Python case cannot run\n");
        CHECK(!"python3 present");
        return;
    }
    snprintf(v[0], 16, "%d", I_PUSH);
    snprintf(v[1], 16, "%d", I_LOOK);
    snprintf(v[2], 16, "%d", I_FIND);
    snprintf(v[3], 16, "%d", I_LIST);
    snprintf(v[4], 16, "%d", I_NREAD);
    char *args[] = {py, USTREAMS_SOURCE_DIR "/tests/preload/echo.py", v[0], v[1], v[2], v[3], v[4], NULL};
    CHECK_EQ(run_under(NULL, args, out, sizeof(out)), 0);
    CHECK(strstr(out, "echo.py: ok") != NULL);
}

static void case_shell(void)
{
    char out[4096];
    char *builtin[] = {"/bin/sh", "-c",
                       "exec 3<>/dev/streams/clone/echo; printf 'abc\\n' >&3; read x <&3; "
                       "printf '%s' \"$x\"",
                       NULL};
    CHECK_EQ(run_under(NULL, builtin, out, sizeof(out)), 0);
    CHECK(strcmp(out, "abc") == 0);
    char *head[] = {"/bin/sh", "-c", "exec 3<>/dev/streams/clone/echo; printf abc >&3; head -c 3 <&3",
                    NULL};
#ifdef USTREAMS_PRELOAD_EXEC
    CHECK_EQ(run_under(NULL, head, out, sizeof(out)), 0);
    CHECK(strcmp(out, "abc") == 0);
#else
    int st = run_under(NULL, head, out, sizeof(out));
    fprintf(stderr, "test_preload_run: `head -c 3 <&3` (a stream across exec, issue 22 item 2, "
                    "not in this tree yet): status %d, output \"%s\"\n", st, out);
    CHECK(st != -2); /* whatever it does, it does not hang */
#endif
}

static void case_cprog(void)
{
    static char out[32768];
    static const char *modes[] = {"echo", "plain", "many"};
    char prog[] = USTREAMS_BUILD_DIR "/preload_plprog";
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char *args[] = {prog, (char *)modes[i], NULL};
        CHECK_EQ(run_under(NULL, args, out, sizeof(out)), 0);
        char want[64];
        snprintf(want, sizeof(want), "plprog %s: ok", modes[i]);
        CHECK(strstr(out, want) != NULL);
    }
    char *pipeargs[] = {prog, "pipe", NULL};
    CHECK_EQ(run_under("--pipes", pipeargs, out, sizeof(out)), 0);
    CHECK(strstr(out, "plprog pipe: ok") != NULL);
    /* posix_spawnp of cat on a STREAMS pipe end moved by a file action */
    char *spawnargs[] = {prog, "spawn", NULL};
    CHECK_EQ(run_under("--pipes", spawnargs, out, sizeof(out)), 0);
    CHECK(strstr(out, "spawned 0\nspawned 1\n") != NULL);
    CHECK(strstr(out, "spawned 999\nplprog spawn: ok") != NULL);
    /* without --pipes, pipe(2) is the kernel's: the pipe mode fails at once */
    char *noargs[] = {prog, "pipe", NULL};
    CHECK_EQ(run(((char *[]){(char *)ustreams, "run", prog, "pipe", NULL}), out, sizeof(out)), 1);
    (void)noargs;
    CHECK(strstr(out, "isastream(p[0]) == 1") != NULL);
    /* stdio on a stream: fdopen gives a FILE whose I/O is the stream's */
    char *stdio[] = {prog, "stdio", NULL};
    CHECK_EQ(run_under(NULL, stdio, out, sizeof(out)), 0);
    CHECK(strstr(out, "stdio: fgets read \"through stdio\"") != NULL);
    CHECK(strstr(out, "plprog stdio: ok") != NULL);
}

/* Streams across exec (docs/PROGRAMS.md "Streams across exec"): pipelines of
 * plain programs on STREAMS pipes, with bash (fork) and dash (vfork), stdio
 * readers and writers among them. */
static void case_exec_pipes(void)
{
    char out[4096];
    static const char *shells[] = {"/bin/sh", "/bin/bash"};
    for (size_t i = 0; i < 2; i++) {
        if (access(shells[i], X_OK) != 0)
            continue;
        char *cat[] = {(char *)shells[i], "-c", "seq 1 20000 | cat | wc -l", NULL};
        CHECK_EQ(run_under("--pipes", cat, out, sizeof(out)), 0);
        CHECK_EQ(atol(out), 20000);
        char *sort[] = {(char *)shells[i], "-c", "seq 1 5000 | sort -rn | head -n 2", NULL};
        CHECK_EQ(run_under("--pipes", sort, out, sizeof(out)), 0);
        if (!CHECK(strcmp(out, "5000\n4999\n") == 0))
            fprintf(stderr, "%s: sort's output: \"%s\"\n", shells[i], out);
        /* the pipe really is a STREAMS one in the exec'd program */
        char *isa[] = {(char *)shells[i], "-c",
                       "echo x | " USTREAMS_BUILD_DIR "/preload_plprog isastream0", NULL};
        CHECK_EQ(run_under("--pipes", isa, out, sizeof(out)), 0);
        CHECK(strstr(out, "isastream(0) = 1") != NULL);
    }
}

/* open(2) under the preload of a file this (linked) process fattach'ed a
 * pipe end on: the shell's redirection reaches the stream, found through the
 * name's mark (src/procs/sd_name_mark.c); a plain file next to it stays a
 * plain file. */
static void case_fattach(void)
{
    char out[4096], path[] = "/tmp/ustreams-preload-fattach-XXXXXX";
    int tmp = mkstemp(path);
    if (!CHECK(tmp >= 0))
        return;
    close(tmp);
    int p[2];
    CHECK_EQ(strm_pipe(p), 0);
    CHECK_EQ(fattach(p[1], path), 0);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "printf 'via the name' > %s && cat /etc/hostname >/dev/null", path);
    char *args[] = {"/bin/sh", "-c", cmd, NULL};
    CHECK_EQ(run_under(NULL, args, out, sizeof(out)), 0);
    char buf[64] = "";
    struct pollfd pf = {p[0], POLLIN, 0};
    CHECK_EQ(strm_poll(&pf, 1, 5000), 1);
    CHECK_EQ(strm_read(p[0], buf, sizeof(buf)), 12);
    CHECK(memcmp(buf, "via the name", 12) == 0);
    CHECK_EQ(fdetach(path), 0);
    strm_close(p[0]);
    strm_close(p[1]);
    unlink(path);
}

static void case_command(void)
{
    char out[4096];
    CHECK_EQ(run(((char *[]){(char *)ustreams, "run", "--help", NULL}), out, sizeof(out)), 0);
    CHECK(strstr(out, "usage: ustreams run") != NULL);
    CHECK_EQ(run(((char *[]){(char *)ustreams, "run", "--bogus", "true", NULL}), out, sizeof(out)), 2);
    CHECK(strstr(out, "unknown option '--bogus'") != NULL && strstr(out, "usage:") != NULL);
    CHECK_EQ(run(((char *[]){(char *)ustreams, "run", NULL}), out, sizeof(out)), 2);
    CHECK_EQ(run(((char *[]){(char *)ustreams, "run", "--", "no-such-program-xyz", NULL}), out,
                 sizeof(out)), 127);
    CHECK(strstr(out, "no-such-program-xyz: command not found") != NULL);
    /* the library found beside the command: LD_PRELOAD names it first */
    CHECK_EQ(run(((char *[]){(char *)ustreams, "run", "/bin/sh", "-c", "printf %s \"$LD_PRELOAD\"",
                             NULL}), out, sizeof(out)), 0);
    CHECK(strncmp(out, USTREAMS_BUILD_DIR "/libustreams-preload.so", strlen(USTREAMS_BUILD_DIR) + 23) == 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    find_sanitizer_runtime();
    case_command();
    case_cprog();
    case_shell();
    case_exec_pipes();
    case_fattach();
    case_python();
    return CHECK_RESULT();
}
