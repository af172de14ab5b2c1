/* SPDX-License-Identifier: MIT */
/*
 * test_registry.c -- register_strmod(9F)/register_strdev(9F), their
 * unregister twins, and the lookups (src/core/registry.c).
 *
 * Cases follow sys/strconf.h: names of 1..FMNAMESZ characters of
 * [A-Za-z0-9_-], separate namespaces for modules and drivers, majors
 * 1..L_MAXMAJ with 0 asking for the lowest free one, -EINVAL/-EEXIST/-ENOENT/
 * -EBUSY as documented there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/strconf.h>

#include "check.h"
#include "strcore.h"

/* ---- a minimal module/driver to register ---- */
static int t_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)q;
    (void)devp;
    (void)oflag;
    (void)sflag;
    (void)crp;
    return 0;
}

static int t_put(queue_t *q, mblk_t *mp)
{
    putnext(q, mp);
    return 0;
}

static struct module_info t_minfo = {.mi_idname = "t", .mi_maxpsz = INFPSZ, .mi_hiwat = 1024};
static struct qinit t_rinit = {.qi_putp = t_put, .qi_qopen = t_open, .qi_minfo = &t_minfo};
static struct qinit t_winit = {.qi_putp = t_put, .qi_minfo = &t_minfo};
static struct streamtab t_info = {.st_rdinit = &t_rinit, .st_wrinit = &t_winit};

/* Incomplete streamtabs. */
static struct qinit t_rinit_noopen = {.qi_putp = t_put, .qi_minfo = &t_minfo};
static struct qinit t_rinit_nominfo = {.qi_putp = t_put, .qi_qopen = t_open};
static struct qinit t_winit_nominfo = {.qi_putp = t_put};
static struct streamtab t_info_nord = {.st_wrinit = &t_winit};
static struct streamtab t_info_nowr = {.st_rdinit = &t_rinit};
static struct streamtab t_info_noopen = {.st_rdinit = &t_rinit_noopen, .st_wrinit = &t_winit};
static struct streamtab t_info_nordminfo = {.st_rdinit = &t_rinit_nominfo,
                                            .st_wrinit = &t_winit};
static struct streamtab t_info_nowrminfo = {.st_rdinit = &t_rinit,
                                            .st_wrinit = &t_winit_nominfo};

static struct fmodsw mkmod(const char *name)
{
    struct fmodsw f = {.f_name = name, .f_str = &t_info, .f_flag = D_MP};
    return f;
}

static struct cdevsw mkdev(const char *name)
{
    struct cdevsw c = {.d_name = name, .d_str = &t_info, .d_flag = D_MP};
    return c;
}

static void count_fn(struct ust_modent *e, void *arg)
{
    (void)e;
    (*(int *)arg)++;
}

static int registry_size(void)
{
    int n = 0;
    ust_reg_foreach(count_fn, &n);
    return n;
}

/* 1. Argument validation: NULL, names, streamtabs. */
static void test_invalid(void)
{
    struct fmodsw f;
    struct cdevsw c;

    CHECK_EQ(register_strmod(NULL), -EINVAL);
    CHECK_EQ(register_strdev(NULL, 0), -EINVAL);

    const char *bad_names[] = {NULL, "", "abcdefghi", "bad name", "a/b", "a.b", "tab\t",
                               "\xc3\xa9t\xc3\xa9", "x:y"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        f = mkmod(bad_names[i]);
        c = mkdev(bad_names[i]);
        CHECK_EQ(register_strmod(&f), -EINVAL);
        if (i != 2) /* a driver's name may be longer than FMNAMESZ */
            CHECK_EQ(register_strdev(&c, 0), -EINVAL);
    }
    /* Driver names: up to 31 characters (device names such as "ticotsord"). */
    c = mkdev("abcdefghijklmnopqrstuvwxyz01234x"); /* 32 */
    CHECK_EQ(register_strdev(&c, 0), -EINVAL);
    c = mkdev("abcdefghijklmnopqrstuvwxyz01234"); /* 31 */
    CHECK(register_strdev(&c, 0) > 0);
    CHECK(cdev_lookup("abcdefghijklmnopqrstuvwxyz01234") == &c);
    CHECK_EQ(unregister_strdev(&c, 0), 0);

    struct streamtab *bad_st[] = {NULL,           &t_info_nord,      &t_info_nowr,
                                  &t_info_noopen, &t_info_nordminfo, &t_info_nowrminfo};
    for (size_t i = 0; i < sizeof(bad_st) / sizeof(bad_st[0]); i++) {
        f = mkmod("tbad");
        f.f_str = bad_st[i];
        c = mkdev("tbad");
        c.d_str = bad_st[i];
        CHECK_EQ(register_strmod(&f), -EINVAL);
        CHECK_EQ(register_strdev(&c, 0), -EINVAL);
    }
    CHECK(fmod_lookup("tbad") == NULL);
    CHECK(cdev_lookup("tbad") == NULL);

    /* major out of range */
    c = mkdev("tbig");
    CHECK_EQ(register_strdev(&c, L_MAXMAJ + 1), -EINVAL);
    CHECK(cdev_lookup("tbig") == NULL);

    /* unregister with nothing to name */
    CHECK_EQ(unregister_strmod(NULL), -EINVAL);
    CHECK_EQ(unregister_strdev(NULL, 0), -EINVAL);
    CHECK_EQ(unregister_strdev(NULL, L_MAXMAJ + 1), -EINVAL);

    /* lookups of nonsense */
    CHECK(fmod_lookup(NULL) == NULL);
    CHECK(fmod_lookup("") == NULL);
    CHECK(cdev_lookup("way-too-long-name") == NULL);
    CHECK(cdev_lookup_major(0) == NULL);
    CHECK(cdev_lookup_major(L_MAXMAJ + 1) == NULL);
    CHECK(ust_reg_find(NULL, UST_MODULE) == NULL);
    CHECK(ust_reg_find("nullmod", 0) == NULL);
    CHECK(ust_reg_find_major(0) == NULL);
}

/* 2. Names: exactly FMNAMESZ characters, every allowed character class. */
static void test_names(void)
{
    struct fmodsw f8 = mkmod("Ab0_-xyz"); /* 8 == FMNAMESZ */
    struct fmodsw f1 = mkmod("q");

    CHECK_EQ(FMNAMESZ, 8);
    CHECK_EQ(register_strmod(&f8), 0);
    CHECK_EQ(register_strmod(&f1), 0);
    CHECK(fmod_lookup("Ab0_-xyz") == &f8);
    CHECK(fmod_lookup("q") == &f1);
    CHECK(fmod_lookup("ab0_-xyz") == NULL); /* case-sensitive */
    CHECK_EQ(unregister_strmod(&f8), 0);
    CHECK_EQ(unregister_strmod(&f1), 0);
    CHECK(fmod_lookup("q") == NULL);
}

/* 3. Modules: register, duplicate, lookup, unregister, not found. */
static void test_modules(void)
{
    struct fmodsw m = mkmod("tmod");
    struct fmodsw dup = mkmod("tmod");
    int before = registry_size();

    CHECK_EQ(register_strmod(&m), 0);
    CHECK_EQ(registry_size(), before + 1);
    CHECK_EQ(register_strmod(&dup), -EEXIST);
    CHECK_EQ(register_strmod(&m), -EEXIST);
    CHECK(fmod_lookup("tmod") == &m);
    CHECK(cdev_lookup("tmod") == NULL); /* namespaces are separate */

    struct ust_modent *e = ust_reg_find("tmod", UST_MODULE);
    CHECK(e != NULL);
    if (e != NULL) {
        CHECK_EQ(e->kind, UST_MODULE);
        CHECK(e->str == &t_info);
        CHECK_EQ(e->flag, (uint_t)D_MP);
        CHECK(e->fmod == &m);
        CHECK_EQ(strcmp(e->name, "tmod"), 0);
        ust_reg_rele(e);
    }
    CHECK(ust_reg_find("tmod", UST_DRIVER) == NULL);

    CHECK_EQ(unregister_strmod(&m), 0);
    CHECK_EQ(registry_size(), before);
    CHECK(fmod_lookup("tmod") == NULL);
    CHECK_EQ(unregister_strmod(&m), -ENOENT);

    /* re-registration after removal works */
    CHECK_EQ(register_strmod(&dup), 0);
    CHECK(fmod_lookup("tmod") == &dup);
    CHECK_EQ(unregister_strmod(&dup), 0);
}

/* 4. Drivers: major allocation (lowest free >= 1), explicit majors,
 * collisions, lookups by name and major, unregister by name and by major. */
static void test_drivers(void)
{
    struct cdevsw a = mkdev("tdrva"), b = mkdev("tdrvb"), c = mkdev("tdrvc");
    struct cdevsw x = mkdev("tdrvx"), same = mkdev("tdrva");
    int ma, mb, mc, mx;

    ma = register_strdev(&a, 0);
    CHECK(ma >= 1 && ma <= L_MAXMAJ);
    mb = register_strdev(&b, 0);
    CHECK(mb >= 1 && mb != ma);
    CHECK_EQ(register_strdev(&same, 0), -EEXIST);    /* name taken */
    CHECK_EQ(register_strdev(&x, (major_t)ma), -EEXIST); /* major taken */
    CHECK(cdev_lookup("tdrvx") == NULL);

    /* the lowest free major: free ma again, then allocate */
    CHECK_EQ(unregister_strdev(&a, 0), 0);
    mc = register_strdev(&c, 0);
    CHECK_EQ(mc, ma); /* every major below ma was taken when ma was allocated */
    for (int m = 1; m < mc; m++)
        CHECK(cdev_lookup_major((major_t)m) != NULL);

    /* an explicit, high major */
    mx = register_strdev(&x, L_MAXMAJ);
    CHECK_EQ(mx, L_MAXMAJ);
    CHECK(cdev_lookup_major(L_MAXMAJ) == &x);
    CHECK(cdev_lookup("tdrvx") == &x);
    CHECK(cdev_lookup_major((major_t)mb) == &b);
    CHECK(fmod_lookup("tdrvx") == NULL);

    struct ust_modent *e = ust_reg_find_major((major_t)mb);
    CHECK(e != NULL);
    if (e != NULL) {
        CHECK_EQ(e->kind, UST_DRIVER);
        CHECK_EQ((int)e->major, mb);
        CHECK(e->cdev == &b);
        ust_reg_rele(e);
    }

    /* unregister: name and major must agree; by major alone */
    CHECK_EQ(unregister_strdev(&x, (major_t)mb), -ENOENT);
    CHECK_EQ(unregister_strdev(&x, L_MAXMAJ), 0);
    CHECK_EQ(unregister_strdev(NULL, (major_t)mb), 0);
    CHECK(cdev_lookup("tdrvb") == NULL);
    CHECK_EQ(unregister_strdev(NULL, (major_t)mb), -ENOENT);
    CHECK_EQ(unregister_strdev(&b, 0), -ENOENT);
    CHECK_EQ(unregister_strdev(&c, 0), 0);
}

/* 5. A module and a driver may share a name. */
static void test_namespaces(void)
{
    struct fmodsw m = mkmod("tboth");
    struct cdevsw d = mkdev("tboth");

    CHECK_EQ(register_strmod(&m), 0);
    CHECK(register_strdev(&d, 0) > 0);
    CHECK(fmod_lookup("tboth") == &m);
    CHECK(cdev_lookup("tboth") == &d);
    CHECK_EQ(unregister_strmod(&m), 0);
    CHECK(cdev_lookup("tboth") == &d);
    CHECK_EQ(unregister_strdev(&d, 0), 0);
    CHECK(cdev_lookup("tboth") == NULL);
}

/* 6. Unregistering while referenced: -EBUSY until the last reference goes. */
static void test_busy(void)
{
    struct fmodsw m = mkmod("tbusy");
    struct cdevsw d = mkdev("tbusy");
    struct ust_modent *em, *ed;
    int major;

    CHECK_EQ(register_strmod(&m), 0);
    major = register_strdev(&d, 0);
    CHECK(major > 0);

    em = ust_reg_find("tbusy", UST_MODULE);
    CHECK(em != NULL);
    ust_reg_hold(em); /* two references */
    CHECK_EQ(atomic_load(&em->refs), 2);
    CHECK_EQ(unregister_strmod(&m), -EBUSY);
    ust_reg_rele(em);
    CHECK_EQ(unregister_strmod(&m), -EBUSY);
    ust_reg_rele(em);
    CHECK_EQ(unregister_strmod(&m), 0);

    ed = ust_reg_find_major((major_t)major);
    CHECK(ed != NULL);
    CHECK_EQ(unregister_strdev(&d, 0), -EBUSY);
    CHECK_EQ(unregister_strdev(NULL, (major_t)major), -EBUSY);
    CHECK(cdev_lookup("tbusy") == &d); /* still there */
    ust_reg_rele(ed);
    CHECK_EQ(unregister_strdev(&d, (major_t)major), 0);
}

/* 7. The built-ins are registered at library start, once. */
static void test_builtins(void)
{
    int n = registry_size();

    CHECK(fmod_lookup("nullmod") != NULL);
    CHECK(fmod_lookup("srvmod") != NULL);
    CHECK(cdev_lookup("echo") != NULL);
    CHECK(cdev_lookup("nuls") != NULL);
    CHECK(cdev_lookup("nullmod") == NULL);
    CHECK(fmod_lookup("echo") == NULL);

    const char *drivers[] = {"echo", "nuls"};
    for (int i = 0; i < 2; i++) {
        struct ust_modent *e = ust_reg_find(drivers[i], UST_DRIVER);
        CHECK(e != NULL);
        if (e == NULL)
            continue;
        CHECK(e->major >= 1 && e->major <= L_MAXMAJ);
        CHECK(cdev_lookup_major(e->major) == e->cdev);
        CHECK(e->flag & D_MP);
        ust_reg_rele(e);
    }

    ust_init(); /* idempotent: nothing registers twice */
    CHECK_EQ(registry_size(), n);
}

/* 8. Concurrent registration: every driver gets its own major. */
#define NTHR 8
#define PER 16
static char names[NTHR][PER][FMNAMESZ + 1];
static struct cdevsw devs[NTHR][PER];
static int majors[NTHR][PER];

static void *reg_thread(void *arg)
{
    int t = (int)(intptr_t)arg;

    for (int i = 0; i < PER; i++) {
        char *n = names[t][i]; /* "c<t>_<i>" with one character each */
        n[0] = 'c';
        n[1] = (char)('0' + t);
        n[2] = '_';
        n[3] = (char)('a' + i);
        n[4] = '\0';
        devs[t][i] = mkdev(names[t][i]);
        majors[t][i] = register_strdev(&devs[t][i], 0);
        /* lookups race with the registrations of the other threads */
        (void)cdev_lookup("echo");
        (void)fmod_lookup("nullmod");
    }
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t th[NTHR];
    static unsigned char seen[L_MAXMAJ + 1];

    for (int t = 0; t < NTHR; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, reg_thread, (void *)(intptr_t)t), 0);
    for (int t = 0; t < NTHR; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < NTHR; t++) {
        for (int i = 0; i < PER; i++) {
            int m = majors[t][i];
            CHECK(m >= 1 && m <= L_MAXMAJ);
            if (m < 1 || m > L_MAXMAJ)
                continue;
            CHECK_EQ(seen[m], 0);
            seen[m] = 1;
            CHECK(cdev_lookup_major((major_t)m) == &devs[t][i]);
        }
    }
    for (int t = 0; t < NTHR; t++)
        for (int i = 0; i < PER; i++)
            CHECK_EQ(unregister_strdev(&devs[t][i], 0), 0);
}

int main(void)
{
    test_invalid();
    test_names();
    test_modules();
    test_drivers();
    test_namespaces();
    test_busy();
    test_builtins();
    test_concurrent();
    return CHECK_RESULT();
}
