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
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sad.h>
#include <sys/strconf.h>
#include <unistd.h>
#include <ustreams.h>

#include "check.h"

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

static const char module_src[] =
    "#include <errno.h>\n"
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

int main(void)
{
    char path[1200], cmd[1300];
    FILE *f;

    if (!have_cc()) {
        printf("SKIP: no C compiler found to build the test modules\n");
        return 77;
    }
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

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    CHECK_EQ(ustreams_quiesce(5000), 0);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
