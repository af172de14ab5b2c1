/* SPDX-License-Identifier: MIT */
/*
 * test_publish.c -- every process publishes itself for the tools
 * (src/admin/publish.c) and `ustreams scls -P` / `ustreams strinfo -P`
 * (tools/procs.c) list every process of the user.
 *
 * Reference: docs/ADMIN.md, "Every process of the user"; publish.h (the
 * protocol).  The test runs in a runtime directory of its own
 * (XDG_RUNTIME_DIR a mkdtemp directory), so it sees no other process.
 * Cases:
 *   P.1  the test (a stream of nuls open) and a forked child (its own
 *        stream of echo, nullmod pushed, messages written) are listed by
 *        strinfo -P, each after "process PID COMMAND", each with its own
 *        streams only (the child's inherited nuls stream is the parent's);
 *        scls -P -c counts the child's nullmod; strinfo -P -s adds the
 *        block counts and the module table
 *   P.2  fork: a child that makes no stream publishes nothing; and a child
 *        does not keep its parent's socket: when the parent dies (_exit)
 *        its name is stale at once, removed and not listed
 *   P.3  stale names: a process that died without exit(3), a socket bound
 *        and closed for a pid that is gone: removed, not listed, nothing
 *        said; names that are not "proc.<digits>" are left alone
 *   P.4  USTREAMS_PUBLISH=0: nothing published
 *   P.5  exit(3) removes the name (a tool run that opened a stream)
 *   P.6  the protocol: an unknown request is answered "error: ..."; a
 *        client that connects and sends nothing holds no one up (the
 *        tool's listing comes within the publisher's read timeout)
 *   P.7  a runtime directory with the wrong mode or owner is refused: the
 *        tools exit 1, and no new process publishes there
 *   P.8  SO_PEERCRED: a process of another uid is not answered (root only:
 *        a child publishes as uid 65534, the test connects as root)
 *   P.9  a program that closes every descriptor it does not know of takes
 *        the listening socket away: the next connection finds it gone, the
 *        name is removed, and the next strm_open publishes again
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stropts.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "fork_util.h"
#include "tool_run.h"

static char base[32];   /* XDG_RUNTIME_DIR (short: the names must fit in sun_path) */
static char rundir[48]; /* base/ustreams */

static void name_of(long pid, char *buf, size_t n)
{
    snprintf(buf, n, "%s/proc.%ld", rundir, pid);
}

static int published(long pid)
{
    char path[PATH_MAX + 64];
    struct stat st;
    name_of(pid, path, sizeof(path));
    return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* The part of out from the line "process PID ..." to the next "process "
 * line (malloc'ed), or NULL if pid is not listed. */
static char *section(const char *out, long pid)
{
    char key[64];
    int kl = snprintf(key, sizeof(key), "process %ld ", pid);
    const char *p = out, *e;
    while (p && *p && strncmp(p, key, (size_t)kl) != 0)
        if ((p = strchr(p, '\n')) != NULL)
            p++;
    if (!p || !*p)
        return NULL;
    for (e = strchr(p, '\n'); e && e[1] && strncmp(e + 1, "process ", 8) != 0;)
        e = strchr(e + 1, '\n');
    return strndup(p, e ? (size_t)(e - p + 1) : strlen(p));
}

/* ---- children that hold streams until released ---- */

struct holder {
    pid_t pid;
    int release; /* write end: one byte releases the child */
};

/* Fork a child that runs setup (0 good), reports, and waits for a byte on
 * the release pipe (a byte, not end of file: later children inherit the
 * write end), then leaves with _exit.  0, or -1 if setup failed. */
static int holder_start(struct holder *h, int (*setup)(void))
{
    int rdy[2], rel[2];
    char c = 'n';
    if (pipe2(rdy, O_CLOEXEC) != 0 || pipe2(rel, O_CLOEXEC) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that died */
        c = setup() == 0 ? 'y' : 'n';
        if (write(rdy[1], &c, 1) != 1 || read(rel[0], &c, 1) != 1)
            _exit(2);
        _exit(0);
    }
    close(rdy[1]);
    close(rel[0]);
    if (pid < 0 || read(rdy[0], &c, 1) != 1)
        c = 'n';
    close(rdy[0]);
    h->pid = pid;
    h->release = rel[1];
    return c == 'y' ? 0 : -1;
}

static void holder_stop(struct holder *h)
{
    char c = 'x';
    int st;
    if (write(h->release, &c, 1) != 1)
        kill(h->pid, SIGKILL);
    close(h->release);
    waitpid(h->pid, &st, 0);
}

/* A child with echo open, nullmod pushed, three messages written. */
static int setup_echo(void)
{
    int fd = strm_open("/dev/streams/echo", O_RDWR | O_NONBLOCK);
    if (fd < 0 || strm_ioctl(fd, I_PUSH, "nullmod") < 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (strm_write(fd, "publish", 7) != 7)
            return -1;
    return ustreams_quiesce(1000) == 0 ? 0 : -1;
}

static int setup_nothing(void)
{
    return 0;
}

static int setup_unpublished(void)
{
    setenv("USTREAMS_PUBLISH", "0", 1);
    return strm_open("/dev/streams/nuls", O_RDWR) >= 0 ? 0 : -1;
}

/* ---- P.1 ---- */
static void test_listing(struct holder *a)
{
    int st;
    char *out = tool_run("strinfo", "-P", &st);
    CHECK_EQ(st, 0);
    char *me = out ? section(out, getpid()) : NULL;
    char *child = out ? section(out, a->pid) : NULL;
    CHECK(me != NULL);
    CHECK(child != NULL);
    if (me) {
        CHECK(strstr(me, " test_publish\n") != NULL); /* COMMAND from /proc/PID/comm */
        CHECK(strstr(me, "name=/dev/streams/nuls") != NULL);
        CHECK(strstr(me, "name=/dev/streams/echo") == NULL);
    }
    if (child) {
        CHECK(strstr(child, "name=/dev/streams/echo") != NULL);
        CHECK(strstr(child, "module nullmod") != NULL);
        CHECK(strstr(child, "msg M_DATA band=0 bytes=7") != NULL);
        CHECK(strstr(child, "name=/dev/streams/nuls") == NULL); /* the parent's */
    }
    if (!me || !child)
        fprintf(stderr, "strinfo -P said:\n%s", out ? out : "(nothing)\n");
    free(me);
    free(child);
    free(out);

    char line[512];
    out = tool_run("scls", "-P -c nullmod", &st);
    CHECK_EQ(st, 0);
    child = out ? section(out, a->pid) : NULL;
    CHECK(child != NULL);
    if (child) {
        char name[16], kind[16];
        long opens, closes, queues, puts, srvs;
        CHECK(line_after(child, "process ", line, sizeof(line)) && strncmp(line, "NAME", 4) == 0);
        CHECK(find_line(child, "nullmod ", line, sizeof(line)));
        CHECK_EQ(sscanf(line, "%15s %15s %ld %ld %ld %ld %ld", name, kind, &opens, &closes,
                        &queues, &puts, &srvs),
                 7);
        CHECK_EQ(opens, 1);
        CHECK_EQ(queues, 2);
        CHECK(puts >= 6);
        CHECK(!find_line(child, "echo ", line, sizeof(line))); /* not asked for */
    }
    free(child);
    free(out);

    out = tool_run("strinfo", "-P -s", &st);
    CHECK_EQ(st, 0);
    child = out ? section(out, a->pid) : NULL;
    CHECK(child && find_line(child, "blocks mblks=", line, sizeof(line)));
    CHECK(child && find_line(child, "NAME ", line, sizeof(line)) && strstr(line, "OPENS"));
    free(child);
    free(out);

    /* -P with streams of its own to make is a usage error */
    CHECK(tool_expect("strinfo", "-P /dev/streams/echo", 2, "usage:"));
    CHECK(tool_expect("strinfo", "-P --pipe", 2, "usage:"));
}

/* ---- P.2 ---- */
static void test_fork(void)
{
    struct holder b;
    int st;
    CHECK_EQ(holder_start(&b, setup_nothing), 0);
    CHECK(!published(b.pid));
    char *out = tool_run("strinfo", "-P", &st);
    CHECK_EQ(st, 0);
    CHECK(out && strstr(out, "process ") != NULL);
    char *s = out ? section(out, b.pid) : NULL;
    CHECK(s == NULL);
    free(s);
    free(out);
    holder_stop(&b);

    /* E publishes, forks F (no stream), dies with _exit: F must not keep
     * E's socket listening, so E's name is found stale at once. */
    int p[2], w[2]; /* p: F's pid to the test; w: F waits for its end of file */
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(pipe(w), 0);
    fflush(NULL);
    pid_t e = fork();
    if (e == 0) {
        if (strm_open("/dev/streams/nuls", O_RDWR) < 0)
            _exit(1);
        pid_t f = fork();
        if (f == 0) {
            char c;
            close(w[1]);
            (void)!read(w[0], &c, 1); /* until the test closes its end */
            _exit(0);
        }
        (void)!write(p[1], &f, sizeof(f));
        _exit(0);
    }
    close(p[1]);
    close(w[0]);
    pid_t f = -1;
    CHECK_EQ(read(p[0], &f, sizeof(f)), (long)sizeof(f));
    close(p[0]);
    waitpid(e, &st, 0);
    CHECK(published(e)); /* _exit: left behind */
    CHECK(!published(f));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    out = tool_run("strinfo", "-P", &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ(st, 0);
    CHECK(t1.tv_sec - t0.tv_sec < 3); /* refused, not waited for */
    CHECK(out && !strstr(out, "no answer"));
    s = out ? section(out, e) : NULL;
    CHECK(s == NULL);
    free(s);
    free(out);
    CHECK(!published(e));
    close(w[1]); /* F leaves (not our child: reaped elsewhere) */
}

/* ---- P.3 ---- */
static void test_stale(void)
{
    char path[PATH_MAX + 64], other[PATH_MAX + 64];
    int st;

    /* a process that died without exit(3) */
    pid_t c = fork();
    if (c == 0)
        _exit(strm_open("/dev/streams/nuls", O_RDWR) < 0);
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(published(c));

    /* a socket bound and closed for a pid that is gone */
    pid_t d = fork();
    if (d == 0)
        _exit(0);
    waitpid(d, &st, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    name_of(d, sa.sun_path, sizeof(sa.sun_path));
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(s, 1) == 0);
    close(s);
    CHECK(published(d));

    /* names that are not ours to judge */
    snprintf(other, sizeof(other), "%s/proc.x1", rundir);
    FILE *f = fopen(other, "w");
    if (f)
        fclose(f);
    snprintf(path, sizeof(path), "%s/xring.1", rundir);
    f = fopen(path, "w");
    if (f)
        fclose(f);

    char out[16384], err[4096];
    st = tool_run_split("scls", "-P", out, sizeof(out), err, sizeof(err));
    CHECK_EQ(st, 0);
    CHECK(!published(c));
    CHECK(!published(d));
    char *sc = section(out, c), *sd = section(out, d);
    CHECK(sc == NULL);
    CHECK(sd == NULL);
    free(sc);
    free(sd);
    CHECK_EQ(err[0], '\0'); /* nothing said about them */
    if (err[0])
        fprintf(stderr, "scls -P said on stderr: %s", err);
    CHECK_EQ(access(other, F_OK), 0);
    CHECK_EQ(access(path, F_OK), 0);
    unlink(other);
    unlink(path);
}

/* ---- P.4 ---- */
static void test_off(void)
{
    struct holder g;
    int st;
    CHECK_EQ(holder_start(&g, setup_unpublished), 0);
    CHECK(!published(g.pid));
    char *out = tool_run("scls", "-P", &st);
    CHECK_EQ(st, 0);
    char *s = out ? section(out, g.pid) : NULL;
    CHECK(s == NULL);
    free(s);
    free(out);
    holder_stop(&g);
}

/* The names in the runtime directory, but those of pids a and b. */
static int count_others(long a, long b)
{
    DIR *d = opendir(rundir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        long pid;
        char extra;
        if (sscanf(e->d_name, "proc.%ld%c", &pid, &extra) == 1 && pid != a && pid != b)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* ---- P.5 ---- */
static void test_exit(struct holder *a)
{
    int st;
    char *out = tool_run("strinfo", "-p nullmod /dev/streams/echo", &st);
    CHECK_EQ(st, 0);
    free(out);
    CHECK_EQ(count_others(getpid(), a->pid), 0); /* it published, and took its name away */
}

/* Connect to pid's socket: the descriptor or -1. */
static int connect_to(long pid)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    name_of(pid, sa.sun_path, sizeof(sa.sun_path));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(s);
        s = -1;
    }
    return s;
}

/* Read s to its end (at most n - 1 bytes, 5 s): the byte count, or -errno
 * (-ETIMEDOUT; -ECONNRESET: closed by the peer with our request unread). */
static long read_answer(int s, char *buf, size_t n)
{
    size_t len = 0;
    struct pollfd p = {.fd = s, .events = POLLIN};
    while (len < n - 1 && poll(&p, 1, 5000) == 1) {
        ssize_t k = read(s, buf + len, n - 1 - len);
        if (k <= 0) {
            buf[len] = '\0';
            return k == 0 ? (long)len : -errno;
        }
        len += (size_t)k;
    }
    buf[len] = '\0';
    return -ETIMEDOUT;
}

/* ---- P.6 ---- */
static void test_protocol(struct holder *a)
{
    char buf[4096];
    int s = connect_to(a->pid);
    CHECK(s >= 0);
    if (s >= 0) {
        CHECK_EQ(write(s, "bogus;blocks\n", 13), 13);
        CHECK(read_answer(s, buf, sizeof(buf)) > 0);
        CHECK(strncmp(buf, "error: unknown request: bogus\nblocks mblks=", 43) == 0);
        close(s);
    }

    int idle = connect_to(a->pid); /* connects, says nothing */
    CHECK(idle >= 0);
    struct timespec t0, t1;
    int st;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *out = tool_run("strinfo", "-P", &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ(st, 0);
    char *sec = out ? section(out, a->pid) : NULL;
    CHECK(sec && strstr(sec, "name=/dev/streams/echo"));
    CHECK(t1.tv_sec - t0.tv_sec < 4); /* the idle one was dropped after a second */
    free(sec);
    free(out);
    if (idle >= 0) {
        CHECK_EQ(read_answer(idle, buf, sizeof(buf)), 0); /* closed unanswered */
        close(idle);
    }
}

/* ---- P.7 ---- */
static void test_refused(void)
{
    struct holder h;
    int st;
    CHECK_EQ(chmod(rundir, 0755), 0);
    CHECK(tool_expect("scls", "-P", 1, "runtime directory refused"));
    CHECK(tool_expect("strinfo", "-P", 1, "runtime directory refused"));
    CHECK_EQ(holder_start(&h, setup_echo), 0); /* opens fine, publishes nothing */
    CHECK(!published(h.pid));
    holder_stop(&h);
    CHECK_EQ(chmod(rundir, 0700), 0);
    if (geteuid() == 0) {
        CHECK_EQ(chown(rundir, 65534, (gid_t)-1), 0);
        CHECK(tool_expect("scls", "-P", 1, "runtime directory refused"));
        CHECK_EQ(chown(rundir, 0, (gid_t)-1), 0);
    }
    char *out = tool_run("scls", "-P", &st);
    CHECK_EQ(st, 0);
    free(out);
}

/* ---- P.8 ---- */
static char other_base[32];

static int setup_other_uid(void)
{
    setenv("XDG_RUNTIME_DIR", other_base, 1);
    if (setegid(65534) != 0 || seteuid(65534) != 0)
        return -1;
    return strm_open("/dev/streams/nuls", O_RDWR) >= 0 ? 0 : -1;
}

static void test_peercred(void)
{
    struct holder h;
    char buf[256], path[PATH_MAX + 64];
    if (geteuid() != 0) {
        printf("P.8 skipped: not root\n");
        return;
    }
    snprintf(other_base, sizeof(other_base), "/tmp/ust_pubuXXXXXX");
    CHECK(mkdtemp(other_base) != NULL); /* not under base: 65534 may not enter that */
    CHECK_EQ(chown(other_base, 65534, 65534), 0);
    CHECK_EQ(holder_start(&h, setup_other_uid), 0);
    snprintf(path, sizeof(path), "%s/ustreams/proc.%ld", other_base, (long)h.pid);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    if (s >= 0) {
        ssize_t k = write(s, "streams\n", 8); /* EPIPE if it closed already */
        CHECK(k == 8 || (k < 0 && errno == EPIPE));
        long r = read_answer(s, buf, sizeof(buf)); /* root is not its user: */
        CHECK(r == 0 || r == -ECONNRESET);         /* closed, request unread */
        CHECK_EQ(buf[0], '\0');
        close(s);
    }
    holder_stop(&h);
    unlink(path);
    snprintf(path, sizeof(path), "%s/ustreams", other_base);
    rmdir(path);
    rmdir(other_base);
}

/* ---- P.9 ---- */
/* The child: a stream; on 'c' close every descriptor above 2 but its two
 * pipe ends (as closefrom would); on 'o' open a stream; on 'x' leave.
 * Each step answers one byte. */
static void closer_child(int cmd, int ans)
{
    char c;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    c = strm_open("/dev/streams/nuls", O_RDWR) >= 0 ? 'y' : 'n';
    while (write(ans, &c, 1) == 1 && read(cmd, &c, 1) == 1 && c != 'x') {
        if (c == 'c') {
            for (int fd = 3; fd < 1024; fd++)
                if (fd != cmd && fd != ans)
                    close(fd);
            c = 'y';
        } else {
            c = strm_open("/dev/streams/echo", O_RDWR) >= 0 ? 'y' : 'n';
        }
    }
    _exit(0);
}

static char closer_step(int cmd, int ans, char what)
{
    char c = 'n';
    if (write(cmd, &what, 1) != 1 || read(ans, &c, 1) != 1)
        return 'n';
    return c;
}

static void test_closefrom(void)
{
    int cmd[2], ans[2], st;
    char c = 'n';
    CHECK_EQ(pipe2(cmd, O_CLOEXEC), 0);
    CHECK_EQ(pipe2(ans, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        closer_child(cmd[0], ans[1]);
    close(cmd[0]);
    close(ans[1]);
    CHECK(read(ans[0], &c, 1) == 1 && c == 'y');
    CHECK(published(pid));
    CHECK_EQ(closer_step(cmd[1], ans[0], 'c'), 'y');

    char out[16384], err[4096];
    st = tool_run_split("strinfo", "-P", out, sizeof(out), err, sizeof(err));
    CHECK_EQ(st, 0);
    char *sec = section(out, pid);
    CHECK(sec == NULL || strstr(sec, "stream ") == NULL); /* nothing answered */
    free(sec);
    for (int i = 0; i < 100 && published(pid); i++)
        fk_sleep_ms(10); /* the thread removes the name as it stops */
    CHECK(!published(pid));
    /* strinfo may have removed the refused name before the thread saw its
     * socket closed: it looks every PUB_CHECK_MS (500 ms) while idle, and
     * the next open publishes again once it has. */
    fk_sleep_ms(1500);

    CHECK_EQ(closer_step(cmd[1], ans[0], 'o'), 'y'); /* a stream: published again */
    CHECK(published(pid));
    char *o = tool_run("strinfo", "-P", &st);
    CHECK_EQ(st, 0);
    sec = o ? section(o, pid) : NULL;
    CHECK(sec && strstr(sec, "name=/dev/streams/echo"));
    free(sec);
    free(o);
    c = 'x';
    CHECK_EQ(write(cmd[1], &c, 1), 1);
    close(cmd[1]);
    close(ans[0]);
    waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    tool_run_init(argv[0]);
    signal(SIGPIPE, SIG_IGN); /* a publisher may close before our request is sent */
    snprintf(base, sizeof(base), "/tmp/ust_pubXXXXXX");
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    setenv("XDG_RUNTIME_DIR", base, 1);
    unsetenv("USTREAMS_PUBLISH");
    snprintf(rundir, sizeof(rundir), "%s/ustreams", base);

    int nuls = strm_open("/dev/streams/nuls", O_RDWR); /* publishes this process */
    CHECK(nuls >= 0);
    CHECK(published(getpid()));
    struct holder a;
    CHECK_EQ(holder_start(&a, setup_echo), 0);
    CHECK(published(a.pid));

    test_listing(&a);
    test_fork();
    test_stale();
    test_off();
    test_exit(&a);
    test_protocol(&a);
    test_refused();
    test_peercred();
    test_closefrom();

    holder_stop(&a);
    CHECK(published(a.pid)); /* _exit: stale, left for the tools */
    strm_close(nuls);
    char *out = tool_run("scls", "-P", &(int){0}); /* removes a's */
    free(out);
    CHECK(!published(a.pid));
    CHECK(published(getpid())); /* until exit */
    CHECK_NO_BLOCKS();
    int r = CHECK_RESULT();
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    fflush(NULL);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    return r;
}
