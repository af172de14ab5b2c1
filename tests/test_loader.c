/* SPDX-License-Identifier: MIT */
/*
 * test_loader.c -- loadable modules (src/core/loader.c).  The modules are
 * written and compiled as shared objects by the test itself, with the C
 * compiler of the build (exit 77, reported as skipped, if there is none).
 *
 * Cases:
 *   L.1  ustreams_load of libust_<name>.so from ustreams_set_module_path:
 *        registered, usable with I_PUSH (the module upper-cases what is
 *        written); a second load is fine; ustreams_unload is EBUSY while
 *        pushed, then unregisters, calls ust_module_fini, and the name is
 *        gone; a pinned module stays after its last stream closes
 *   L.2  on demand via $USTREAMS_MODULE_PATH: I_PUSH of an unregistered
 *        name loads it; closing the last stream that uses it unloads it
 *        (fini runs); the same for a driver (<name>.so) opened by name
 *   L.3  errors: EINVAL (bad name; no ust_module_init; init registered
 *        nothing), ENOENT (not on the path; unload of what is not loaded),
 *        EEXIST (a built-in's name), ENOEXEC (not a shared object), the
 *        error init returns; an on-demand object that registers the wrong
 *        kind is unloaded again and I_PUSH fails EINVAL as before;
 *        SAD_VML sees loadable modules
 *   L.4  threads push the on-demand module on their own streams and close
 *        them, so loads and automatic unloads race with lookups
 *   Which files are loaded (issue 20, row L; docs/ADMIN.md):
 *   L.5  ./modules of the current directory is not searched by default (a
 *        module planted there is not found: ENOENT, I_PUSH EINVAL); a
 *        relative directory is refused: EINVAL from
 *        ustreams_set_module_path, EACCES (and the reason) from
 *        $USTREAMS_MODULE_PATH
 *   L.6  a module directory writable by others is refused (EACCES, reason
 *        in ustreams_load_error; I_PUSH EINVAL with the reason on the error
 *        logger; nothing loaded), and loads
 *        once it is 0755; an ancestor writable by others is refused unless
 *        it is sticky; a directory writable by a group other than root's is
 *        refused (root only)
 *   L.7  a file, or a directory on the way, owned by another uid (65534) is
 *        refused (root only: chown; skipped visibly otherwise)
 *   L.8  symbolic links: one to a trusted file is followed; one into a
 *        directory writable by others is refused; a link swapped between a
 *        trusted file and a planted one (in a world-writable directory, with
 *        a constructor that reports itself) while the module is loaded 300
 *        times never runs the planted code: what is checked is what is
 *        loaded
 *   L.9  a set-uid copy of this test (AT_SECURE), started by uid 65534 with
 *        $USTREAMS_MODULE_PATH naming the module directory, does not load
 *        from it (root only; skipped visibly where set-uid cannot run)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/sad.h>
#include <sys/stat.h>
#include <sys/strconf.h>
#include <sys/strlog.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"
#include "log_util.h"
#include "hostile_util.h"

#ifndef USTREAMS_SOURCE_DIR
#error "USTREAMS_SOURCE_DIR must name the source tree (CMakeLists.txt)"
#endif
#ifndef USTREAMS_TEST_CC
#define USTREAMS_TEST_CC "cc"
#endif

static char dir[] = "/tmp/ust_loaderXXXXXX";
static char cc[1024];

/* Called by the test modules' ust_module_fini (resolved in this program). */
atomic_int fini_calls;
void test_loader_fini(const char *name);
void test_loader_fini(const char *name)
{
    (void)name;
    atomic_fetch_add(&fini_calls, 1);
}

/* Called by the constructor of a planted module (L.8): must never run. */
atomic_int planted_calls;
void test_loader_planted(void);
void test_loader_planted(void)
{
    atomic_fetch_add(&planted_calls, 1);
}

static const char module_src[] =
    "#include <errno.h>\n"
    "#ifdef PLANTED\n"
    "void test_loader_planted(void);\n"
    "__attribute__((constructor)) static void planted(void) { test_loader_planted(); }\n"
    "#endif\n"
    "#include <sys/stream.h>\n"
    "#include <sys/strconf.h>\n"
    "void test_loader_fini(const char *name);\n"
    "static int m_open(queue_t *q, dev_t *d, int o, int s, cred_t *c)\n"
    "{ (void)d; (void)o; (void)s; (void)c; q->q_ptr = q; WR(q)->q_ptr = q; qprocson(q); return 0; "
    "}\n"
    "static int m_close(queue_t *q, int o, cred_t *c)\n"
    "{ (void)o; (void)c; qprocsoff(q); q->q_ptr = WR(q)->q_ptr = 0; return 0; }\n"
    "static int m_rput(queue_t *q, mblk_t *mp) { putnext(q, mp); return 0; }\n"
    "static int m_wput(queue_t *q, mblk_t *mp)\n"
    "{\n"
    "#ifdef DRIVER\n"
    "    if (mp->b_datap->db_type == M_DATA) { qreply(q, mp); return 0; }\n"
    "    if (mp->b_datap->db_type == M_IOCTL) { miocnak(q, mp, 0, EINVAL); return 0; }\n"
    "    freemsg(mp); return 0;\n"
    "#else\n"
    "    if (mp->b_datap->db_type == M_DATA)\n"
    "        for (unsigned char *p = mp->b_rptr; p < mp->b_wptr; p++)\n"
    "            if (*p >= 'a' && *p <= 'z') *p -= 32;\n"
    "    putnext(q, mp); return 0;\n"
    "#endif\n"
    "}\n"
    "static struct module_info m_info = {.mi_idnum = 9990, .mi_idname = MODNAME,\n"
    "    .mi_maxpsz = INFPSZ, .mi_hiwat = 4096, .mi_lowat = 1024};\n"
    "static struct qinit m_rinit = {.qi_putp = m_rput, .qi_qopen = m_open, .qi_qclose = m_close,\n"
    "    .qi_minfo = &m_info};\n"
    "static struct qinit m_winit = {.qi_putp = m_wput, .qi_minfo = &m_info};\n"
    "static struct streamtab m_tab = {.st_rdinit = &m_rinit, .st_wrinit = &m_winit};\n"
    "#ifdef DRIVER\n"
    "static struct cdevsw m_sw = {.d_name = MODNAME, .d_str = &m_tab, .d_flag = D_MP};\n"
    "#else\n"
    "static struct fmodsw m_sw = {.f_name = MODNAME, .f_str = &m_tab, .f_flag = D_MP};\n"
    "#endif\n"
    "#ifndef NOINIT\n"
    "int ust_module_init(void)\n"
    "{\n"
    "#if defined(INITERR)\n"
    "    return -INITERR;\n"
    "#elif defined(NOTHING)\n"
    "    return 0;\n"
    "#elif defined(DRIVER)\n"
    "    int rc = register_strdev(&m_sw, 0); return rc < 0 ? rc : 0;\n"
    "#else\n"
    "    return register_strmod(&m_sw);\n"
    "#endif\n"
    "}\n"
    "#endif\n"
    "void ust_module_fini(void) { test_loader_fini(MODNAME); }\n";

/* Compile the module source into dir/file with the given -D flags. */
static int build(const char *file, const char *defs)
{
    char cmd[4096];

    snprintf(cmd, sizeof(cmd),
             "'%s' -shared -fPIC -std=c11 -I'%s/include' %s -o '%s/%s' '%s/mod.c'", cc,
             USTREAMS_SOURCE_DIR, defs, dir, file, dir);
    return system(cmd);
}

static int have_cc(void)
{
    if (access(USTREAMS_TEST_CC, X_OK) == 0) {
        snprintf(cc, sizeof(cc), "%s", USTREAMS_TEST_CC);
        return 1;
    }
    if (system("command -v cc >/dev/null 2>&1") == 0) {
        snprintf(cc, sizeof(cc), "cc");
        return 1;
    }
    return 0;
}

/* Write s, read it back through the stream fd. */
static void roundtrip(int fd, const char *s, const char *want)
{
    char buf[64];
    ssize_t n;

    CHECK_EQ(strm_write(fd, s, strlen(s)), (long)strlen(s));
    n = strm_read(fd, buf, sizeof(buf) - 1);
    CHECK_EQ(n, (long)strlen(want));
    if (n >= 0) {
        buf[n] = '\0';
        CHECK(strcmp(buf, want) == 0);
    }
}

static void test_api(void)
{
    int fd;

    CHECK_EQ(ustreams_set_module_path(dir), 0);
    CHECK(fmod_lookup("upper") == NULL);
    CHECK_EQ(ustreams_load("upper"), 0);
    CHECK(fmod_lookup("upper") != NULL);
    CHECK_EQ(ustreams_load("upper"), 0); /* already loaded */

    fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "upper"), 0);
    roundtrip(fd, "hello", "HELLO");
    CHECK_EQ(ustreams_unload("upper"), EBUSY);
    CHECK(fmod_lookup("upper") != NULL);
    roundtrip(fd, "still", "STILL");
    CHECK_EQ(strm_ioctl(fd, I_POP, 0), 0);
    roundtrip(fd, "plain", "plain");
    CHECK_EQ(atomic_load(&fini_calls), 0);
    CHECK_EQ(ustreams_unload("upper"), 0);
    CHECK_EQ(atomic_load(&fini_calls), 1);
    CHECK(fmod_lookup("upper") == NULL);
    CHECK_EQ(ustreams_unload("upper"), ENOENT);

    /* pinned: stays after its last stream closes */
    CHECK_EQ(ustreams_load("upper"), 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "upper"), 0);
    CHECK_EQ(strm_close(fd), 0);
    CHECK(fmod_lookup("upper") != NULL);
    CHECK_EQ(ustreams_unload("upper"), 0);
    CHECK_EQ(atomic_load(&fini_calls), 2);
}

static void test_on_demand(void)
{
    char env[1100];
    int fd, fd2;

    CHECK_EQ(ustreams_set_module_path(NULL), 0);
    snprintf(env, sizeof(env), "/nonexistent/dir::%s", dir);
    CHECK_EQ(setenv("USTREAMS_MODULE_PATH", env, 1), 0);
    atomic_store(&fini_calls, 0);

    fd = strm_open("/dev/streams/echo", O_RDWR);
    fd2 = strm_open("/dev/streams/clone/echo", O_RDWR);
    CHECK(fd >= 0 && fd2 >= 0);
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "upper"), 0);
    CHECK_EQ(strm_ioctl(fd2, I_PUSH, "upper"), 0);
    CHECK_EQ(strm_ioctl(fd, I_FIND, "upper"), 1);
    roundtrip(fd, "demand", "DEMAND");
    CHECK_EQ(strm_close(fd), 0);
    CHECK(fmod_lookup("upper") != NULL); /* fd2 still uses it */
    CHECK_EQ(atomic_load(&fini_calls), 0);
    roundtrip(fd2, "two", "TWO");
    CHECK_EQ(strm_close(fd2), 0);
    CHECK(fmod_lookup("upper") == NULL); /* the last user went: unloaded */
    CHECK_EQ(atomic_load(&fini_calls), 1);

    /* a driver, ldrv.so, loaded by an open of its name */
    CHECK(cdev_lookup("ldrv") == NULL);
    fd = strm_open("/dev/streams/ldrv", O_RDWR);
    CHECK(fd >= 0);
    CHECK(cdev_lookup("ldrv") != NULL);
    roundtrip(fd, "drv", "drv");
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "upper"), 0); /* a second object on demand */
    roundtrip(fd, "both", "BOTH");
    CHECK_EQ(strm_close(fd), 0);
    CHECK(cdev_lookup("ldrv") == NULL);
    CHECK(fmod_lookup("upper") == NULL);
    CHECK_EQ(atomic_load(&fini_calls), 3);

    /* SAD_VML finds loadable modules (loads and unloads them) */
    struct str_mlist ml[2];
    struct str_list sl = {.sl_nmods = 2, .sl_modlist = ml};
    memset(ml, 0, sizeof(ml));
    strcpy(ml[0].l_name, "nullmod");
    strcpy(ml[1].l_name, "upper");
    int sad = strm_open("/dev/streams/sad", O_RDONLY);
    CHECK(sad >= 0);
    CHECK_EQ(strm_ioctl(sad, SAD_VML, &sl), 0);
    strcpy(ml[1].l_name, "ldrv"); /* a driver: not a module */
    CHECK_EQ(strm_ioctl(sad, SAD_VML, &sl), 1);
    CHECK_EQ(strm_close(sad), 0);
    CHECK(fmod_lookup("upper") == NULL);
    CHECK(cdev_lookup("ldrv") == NULL);

    /* an object that registers the other kind: I_PUSH fails as before */
    fd = strm_open("/dev/streams/echo", O_RDWR);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "ldrv"), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK(cdev_lookup("ldrv") == NULL);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, "nosuch"), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
    errno = 0;
    CHECK_EQ(strm_open("/dev/streams/nosuch", O_RDWR), -1);
    CHECK_EQ(errno, ENOENT);
    CHECK_EQ(unsetenv("USTREAMS_MODULE_PATH"), 0);
}

/* L.4: threads push and pop the on-demand module on their own streams
 * while its last user keeps going away: loads and unloads race with
 * lookups; every push works and in the end the module is unloaded. */
#define RACE_THREADS 4
#define RACE_ROUNDS  40
static atomic_int race_fail;

static void *race_thread(void *arg)
{
    char buf[16];

    (void)arg;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        int fd = strm_open("/dev/streams/clone/echo", O_RDWR);
        if (fd < 0 || strm_ioctl(fd, I_PUSH, "upper") != 0 || strm_write(fd, "ab", 2) != 2 ||
            strm_read(fd, buf, sizeof(buf)) != 2 || memcmp(buf, "AB", 2) != 0)
            atomic_fetch_add(&race_fail, 1);
        if (fd >= 0)
            strm_close(fd);
    }
    return NULL;
}

static void test_race(void)
{
    pthread_t t[RACE_THREADS];

    CHECK_EQ(ustreams_set_module_path(dir), 0);
    for (int i = 0; i < RACE_THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, race_thread, NULL), 0);
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&race_fail), 0);
    CHECK(fmod_lookup("upper") == NULL);
    CHECK_EQ(ustreams_set_module_path(NULL), 0);
}

static void test_errors(void)
{
    CHECK_EQ(ustreams_set_module_path(dir), 0);
    CHECK_EQ(ustreams_load(NULL), EINVAL);
    CHECK_EQ(ustreams_load(""), EINVAL);
    CHECK_EQ(ustreams_load("../etc"), EINVAL);
    CHECK_EQ(ustreams_load("toolongname"), EINVAL);
    CHECK_EQ(ustreams_unload("a/b"), EINVAL);
    CHECK_EQ(ustreams_load("nosuch"), ENOENT);
    CHECK(strstr(ustreams_load_error(), "not found") != NULL);
    CHECK_EQ(ustreams_load("echo"), EEXIST);
    CHECK_EQ(ustreams_load("nullmod"), EEXIST);
    CHECK_EQ(ustreams_unload("nullmod"), ENOENT); /* built in, not loaded */
    CHECK_EQ(ustreams_load("noinit"), EINVAL);
    CHECK(strstr(ustreams_load_error(), "ust_module_init") != NULL);
    CHECK_EQ(ustreams_load("initfail"), EIO);
    CHECK(fmod_lookup("initfail") == NULL);
    CHECK_EQ(ustreams_load("nothing"), EINVAL);
    CHECK_EQ(ustreams_load("garbage"), ENOEXEC);
    CHECK(ustreams_load_error()[0] != '\0');
    /* a module of another name registered by the object: loaded by its file
     * name, found under both */
    CHECK_EQ(ustreams_load("alias"), 0);
    CHECK(fmod_lookup("aliased") != NULL);
    CHECK_EQ(ustreams_unload("aliased"), 0);
    CHECK(fmod_lookup("aliased") == NULL);
    CHECK_EQ(ustreams_set_module_path(NULL), 0);
}

/* dir/rel as a path in buf (static storage: one at a time per call site). */
static const char *at(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", dir, rel);
    return buf;
}

/* mkdir dir/rel with mode (chmod after, past the umask). */
static void mkdir_mode(const char *rel, mode_t mode)
{
    char p[1200];
    CHECK(mkdir(at(p, sizeof(p), rel), 0700) == 0);
    CHECK(chmod(p, mode) == 0);
}

/* ustreams_load(name) with the module path set to dir/rel: the result. */
static int load_from(const char *rel, const char *name)
{
    char p[1200];
    CHECK_EQ(ustreams_set_module_path(at(p, sizeof(p), rel)), 0);
    return ustreams_load(name);
}

/* I_PUSH of name on an echo stream fails EINVAL and leaves nothing loaded. */
static void push_fails(const char *name)
{
    int fd = strm_open("/dev/streams/echo", O_RDWR);
    CHECK(fd >= 0);
    errno = 0;
    CHECK_EQ(strm_ioctl(fd, I_PUSH, name), -1);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(strm_close(fd), 0);
    CHECK(fmod_lookup(name) == NULL);
}

/* A message on the error logger lfd (within 2 s) that contains what. */
static int logged(int lfd, const char *what)
{
    char data[LOGMSGSZ + 4];
    struct log_ctl lc;
    struct strbuf ctl = {sizeof(lc), 0, (char *)&lc};
    struct strbuf dat = {sizeof(data) - 1, 0, data};
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int flags = 0;

    while (strm_poll(&p, 1, 2000) == 1 && getmsg(lfd, &ctl, &dat, &flags) >= 0) {
        data[dat.len > 0 ? dat.len : 0] = '\0';
        if (strstr(data, what) != NULL)
            return 1;
    }
    return 0;
}

static void test_cwd(void)
{
    char here[1024], p[1200];

    mkdir_mode("cwd", 0755);
    mkdir_mode("cwd/modules", 0755);
    CHECK_EQ(build("cwd/modules/libust_cwdmod.so", "-DMODNAME='\"cwdmod\"'"), 0);
    CHECK(getcwd(here, sizeof(here)) != NULL);
    CHECK(chdir(at(p, sizeof(p), "cwd")) == 0);
    CHECK_EQ(ustreams_set_module_path(NULL), 0);
    CHECK_EQ(unsetenv("USTREAMS_MODULE_PATH"), 0);
    CHECK_EQ(ustreams_load("cwdmod"), ENOENT); /* the default path has no ./modules */
    CHECK(fmod_lookup("cwdmod") == NULL);
    push_fails("cwdmod");
    /* relative directories: refused */
    CHECK_EQ(ustreams_set_module_path("modules"), EINVAL);
    CHECK_EQ(ustreams_set_module_path("/nonexistent:./modules"), EINVAL);
    CHECK_EQ(setenv("USTREAMS_MODULE_PATH", "modules", 1), 0);
    CHECK_EQ(ustreams_load("cwdmod"), EACCES);
    CHECK(strstr(ustreams_load_error(), "relative") != NULL);
    push_fails("cwdmod");
    CHECK_EQ(unsetenv("USTREAMS_MODULE_PATH"), 0);
    CHECK(chdir(here) == 0);
}

static void test_writable(void)
{
    char p[1200];

    mkdir_mode("ww", 0755);
    CHECK_EQ(build("ww/libust_wwmod.so", "-DMODNAME='\"wwmod\"'"), 0);
    CHECK(chmod(at(p, sizeof(p), "ww"), 0777) == 0);
    CHECK_EQ(load_from("ww", "wwmod"), EACCES);
    CHECK(strstr(ustreams_load_error(), "writable by others") != NULL);
    CHECK(fmod_lookup("wwmod") == NULL);
    /* I_PUSH keeps its EINVAL; the reason goes to the error logger */
    int lfd = strm_open("/dev/streams/log", O_RDWR | O_NONBLOCK);
    struct strioctl sio = {I_ERRLOG, 0, 0, NULL};
    CHECK(lfd >= 0);
    CHECK_EQ(strm_ioctl(lfd, I_STR, &sio), 0);
    push_fails("wwmod");
    CHECK(logged(lfd, "/ww: writable by others"));
    CHECK_EQ(strm_close(lfd), 0);
    CHECK(chmod(p, 01777) == 0); /* sticky is not enough for the holding directory */
    CHECK_EQ(load_from("ww", "wwmod"), EACCES);
    CHECK(chmod(p, 0755) == 0);
    CHECK_EQ(load_from("ww", "wwmod"), 0); /* the mode was the only reason */
    CHECK_EQ(ustreams_unload("wwmod"), 0);
    /* the file itself writable by others */
    CHECK(chmod(at(p, sizeof(p), "ww/libust_wwmod.so"), 0666) == 0);
    CHECK_EQ(load_from("ww", "wwmod"), EACCES);
    CHECK(chmod(p, 0755) == 0);

    /* an ancestor writable by others: refused, unless sticky (as /tmp) */
    mkdir_mode("anc", 0755);
    mkdir_mode("anc/sub", 0755);
    CHECK_EQ(build("anc/sub/libust_ancmod.so", "-DMODNAME='\"ancmod\"'"), 0);
    CHECK(chmod(at(p, sizeof(p), "anc"), 0777) == 0);
    CHECK_EQ(load_from("anc/sub", "ancmod"), EACCES);
    CHECK(strstr(ustreams_load_error(), "/anc: writable by others") != NULL);
    CHECK(chmod(p, 01777) == 0);
    CHECK_EQ(load_from("anc/sub", "ancmod"), 0);
    CHECK_EQ(ustreams_unload("ancmod"), 0);
    CHECK(chmod(p, 0755) == 0);

    /* writable by a group that is not root's (root: chown to 65534's group) */
    if (!hostile_can_switch()) {
        hostile_skip("L.6 group-writable module directory");
    } else {
        CHECK(chown(at(p, sizeof(p), "ww"), 0, HOSTILE_GID) == 0);
        CHECK(chmod(p, 0775) == 0);
        CHECK_EQ(load_from("ww", "wwmod"), EACCES);
        CHECK(strstr(ustreams_load_error(), "group") != NULL);
        CHECK(chown(p, 0, 0) == 0); /* root's group may write */
        CHECK_EQ(load_from("ww", "wwmod"), 0);
        CHECK_EQ(ustreams_unload("wwmod"), 0);
    }
    CHECK_EQ(ustreams_set_module_path(NULL), 0);
}

static void test_owner(void)
{
    char p[1200];

    if (!hostile_can_switch()) {
        hostile_skip("L.7 module file owned by another uid");
        return;
    }
    mkdir_mode("own", 0755);
    CHECK_EQ(build("own/libust_ownmod.so", "-DMODNAME='\"ownmod\"'"), 0);
    CHECK_EQ(load_from("own", "ownmod"), 0);
    CHECK_EQ(ustreams_unload("ownmod"), 0);
    CHECK(chown(at(p, sizeof(p), "own/libust_ownmod.so"), HOSTILE_UID, HOSTILE_GID) == 0);
    CHECK(chmod(p, 0755) == 0); /* chown dropped nothing that matters; mode is fine */
    CHECK_EQ(load_from("own", "ownmod"), EACCES);
    CHECK(strstr(ustreams_load_error(), "owned by uid 65534") != NULL);
    push_fails("ownmod");
    CHECK(chown(p, 0, 0) == 0);
    /* a directory on the way owned by another uid */
    CHECK(chown(at(p, sizeof(p), "own"), HOSTILE_UID, HOSTILE_GID) == 0);
    CHECK_EQ(load_from("own", "ownmod"), EACCES);
    CHECK(strstr(ustreams_load_error(), "/own: owned by uid 65534") != NULL);
    CHECK(chown(p, 0, 0) == 0);
    CHECK_EQ(ustreams_set_module_path(NULL), 0);
}

/* L.8: the swapper flips dir/swap/libust_swapm.so between good.so and the
 * planted ../evil/bad.so (rename of a fresh link: the name always exists). */
static atomic_int swap_stop;

static void *swapper(void *arg)
{
    char lnk[1200], tmp[1200];

    (void)arg;
    at(lnk, sizeof(lnk), "swap/libust_swapm.so");
    at(tmp, sizeof(tmp), "swap/.tmp");
    for (unsigned i = 0; !atomic_load(&swap_stop); i++) {
        unlink(tmp);
        if (symlink(i & 1 ? "../evil/bad.so" : "good.so", tmp) != 0 || rename(tmp, lnk) != 0)
            break;
    }
    return NULL;
}

static void test_symlink(void)
{
    char p[1200], q[1200];
    pthread_t t;
    int ok = 0, refused = 0, other = 0;

    mkdir_mode("swap", 0755);
    mkdir_mode("evil", 0777);
    CHECK_EQ(build("swap/good.so", "-DMODNAME='\"swapm\"'"), 0);
    CHECK_EQ(build("evil/bad.so", "-DMODNAME='\"swapm\"' -DPLANTED"), 0);
    /* a link to a trusted file is followed; one into evil/ is refused */
    CHECK(symlink("good.so", at(p, sizeof(p), "swap/libust_swapm.so")) == 0);
    CHECK_EQ(load_from("swap", "swapm"), 0);
    CHECK_EQ(ustreams_unload("swapm"), 0);
    CHECK(unlink(p) == 0);
    CHECK(symlink(at(q, sizeof(q), "evil/bad.so"), p) == 0);
    CHECK_EQ(load_from("swap", "swapm"), EACCES);
    CHECK(strstr(ustreams_load_error(), "/evil: writable by others") != NULL);
    CHECK_EQ(atomic_load(&planted_calls), 0);
    CHECK(unlink(p) == 0);
    CHECK(symlink("good.so", p) == 0);

    CHECK_EQ(pthread_create(&t, NULL, swapper, NULL), 0);
    for (int i = 0; i < 300; i++) {
        int rc = ustreams_load("swapm");
        if (rc == 0) {
            ok++;
            CHECK_EQ(ustreams_unload("swapm"), 0);
        } else if (rc == EACCES) {
            refused++;
        } else {
            other++;
        }
    }
    atomic_store(&swap_stop, 1);
    pthread_join(t, NULL);
    printf("L.8 swap: %d loaded (the trusted file), %d refused, %d other\n", ok, refused, other);
    CHECK_EQ(atomic_load(&planted_calls), 0); /* the planted code never ran */
    CHECK_EQ(other, 0);
    CHECK(ok + refused == 300);
    CHECK(fmod_lookup("swapm") == NULL);
    CHECK_EQ(ustreams_set_module_path(NULL), 0);
}

/* L.9, in the set-uid copy: AT_SECURE, and $USTREAMS_MODULE_PATH (naming a
 * directory that holds libust_upper.so) is not used.  Exit 0 good, 3 not
 * secure after all, 2 the module was found. */
static int secure_child(void)
{
    if (getauxval(AT_SECURE) == 0)
        return 3;
    if (getenv("USTREAMS_MODULE_PATH") == NULL) /* glibc keeps it: not an ld.so variable */
        return 4;
    return ustreams_load("upper") == ENOENT ? 0 : 2;
}

static void test_secure(const char *self)
{
    char p[1200];
    int status = 0;

    if (!hostile_can_switch()) {
        hostile_skip("L.9 set-uid program (AT_SECURE) ignores USTREAMS_MODULE_PATH");
        return;
    }
    mkdir_mode("suid", 0755);
    CHECK(chmod(dir, 0755) == 0); /* uid 65534 must reach the copy */
    snprintf(p, sizeof(p), "cp '%s' '%s/suid/t'", self, dir);
    CHECK_EQ(system(p), 0);
    at(p, sizeof(p), "suid/t");
    CHECK(chown(p, 0, 0) == 0 && chmod(p, 04755) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60); /* survives the exec: a hung child dies */
        if (hostile_become() != 0 || setenv("USTREAMS_MODULE_PATH", dir, 1) != 0)
            _exit(5);
        execl(p, p, "--secure-child", (char *)NULL);
        _exit(6);
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 6)) {
        printf("SKIP: L.9: the set-uid copy did not run set-uid (exit %d: nosuid mount?)\n",
               WEXITSTATUS(status));
    } else {
        CHECK(WIFEXITED(status));
        CHECK_EQ(WEXITSTATUS(status), 0);
    }
    CHECK(chmod(dir, 0700) == 0);
}

int main(int argc, char **argv)
{
    char path[1200], cmd[1300];
    FILE *f;

    if (argc > 1 && strcmp(argv[1], "--secure-child") == 0)
        _exit(secure_child());

    if (!have_cc()) {
        printf("SKIP: no C compiler found to build the test modules\n");
        return 77;
    }
    log_private_rundir(); /* its error logger meets no other test's */
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/mod.c", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f == NULL)
        return CHECK_RESULT();
    fputs(module_src, f);
    fclose(f);
    CHECK_EQ(build("libust_upper.so", "-DMODNAME='\"upper\"'"), 0);
    CHECK_EQ(build("ldrv.so", "-DMODNAME='\"ldrv\"' -DDRIVER"), 0);
    CHECK_EQ(build("noinit.so", "-DMODNAME='\"noinit\"' -DNOINIT"), 0);
    CHECK_EQ(build("libust_initfail.so", "-DMODNAME='\"initfail\"' -DINITERR=EIO"), 0);
    CHECK_EQ(build("nothing.so", "-DMODNAME='\"nothing\"' -DNOTHING"), 0);
    CHECK_EQ(build("libust_alias.so", "-DMODNAME='\"aliased\"'"), 0);
    snprintf(path, sizeof(path), "%s/garbage.so", dir);
    f = fopen(path, "w");
    if (f != NULL) {
        fputs("not an ELF object\n", f);
        fclose(f);
    }

    test_api();
    test_on_demand();
    test_race();
    test_errors();
    test_cwd();
    test_writable();
    test_owner();
    test_symlink();
    test_secure(argv[0]);

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
