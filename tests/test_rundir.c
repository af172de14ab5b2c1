/* SPDX-License-Identifier: MIT */
/*
 * test_rundir.c -- the per-user runtime directory (src/core/rundir.c).
 *
 * Reference: rundir.h; the XDG Base Directory Specification,
 * "$XDG_RUNTIME_DIR" (owned by the user, mode 0700).
 * Cases:
 *   R.1  XDG_RUNTIME_DIR set to a directory of ours: <it>/ustreams, created
 *        with mode 0700 whatever the umask; a second call finds it
 *   R.2  a directory there with another mode (0755, 0750) is refused: EPERM,
 *        the buffer emptied
 *   R.3  a symbolic link there (to a good 0700 directory) and a regular
 *        file are refused: ENOTDIR
 *   R.4  a directory of another owner is refused: EPERM (as root only)
 *   R.5  XDG_RUNTIME_DIR unset, relative, or not a directory: the fallback
 *        /tmp/ustreams-<euid>
 *   R.6  errors of the call: EINVAL (no buffer), ENAMETOOLONG
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "rundir.h"

static char base[PATH_MAX], want[PATH_MAX + 16];

static mode_t mode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* R.1 */
static void test_create(void)
{
    char buf[PATH_MAX];
    mode_t old = umask(0777); /* mkdir alone would make it 0000 */
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), 0);
    umask(old);
    CHECK(strcmp(buf, want) == 0);
    CHECK_EQ(mode_of(want), 0700);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), 0); /* exists: checked, accepted */
    CHECK(strcmp(buf, want) == 0);
}

/* R.2 */
static void test_bad_mode(void)
{
    static const mode_t modes[] = {0755, 0750, 0701, 01700};
    char buf[PATH_MAX];
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        CHECK_EQ(chmod(want, modes[i]), 0);
        strcpy(buf, "x");
        CHECK_EQ(ust_rundir(buf, sizeof(buf)), EPERM);
        CHECK_EQ(buf[0], '\0');
        CHECK_EQ(mode_of(want), modes[i]); /* refused, not repaired */
    }
    CHECK_EQ(chmod(want, 0700), 0);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), 0);
}

/* R.3 */
static void test_not_dir(void)
{
    char buf[PATH_MAX], target[PATH_MAX + 16];
    snprintf(target, sizeof(target), "%s/elsewhere", base);
    CHECK_EQ(mkdir(target, 0700), 0);
    CHECK_EQ(rmdir(want), 0);
    CHECK_EQ(symlink(target, want), 0);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), ENOTDIR);
    CHECK_EQ(buf[0], '\0');
    CHECK_EQ(unlink(want), 0);
    CHECK_EQ(rmdir(target), 0);

    FILE *f = fopen(want, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), ENOTDIR);
    CHECK_EQ(unlink(want), 0);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), 0); /* made anew */
}

/* R.4 */
static void test_owner(void)
{
    char buf[PATH_MAX];
    if (geteuid() != 0) {
        printf("R.4 skipped: not root\n");
        return;
    }
    CHECK_EQ(chown(want, 65534, (gid_t)-1), 0);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), EPERM);
    CHECK_EQ(chown(want, 0, (gid_t)-1), 0);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), 0);
}

/* R.5: only the path is compared (the fallback is the user's real one). */
static void test_fallback(void)
{
    char buf[PATH_MAX], fallback[64], file[PATH_MAX + 16];
    snprintf(fallback, sizeof(fallback), "/tmp/ustreams-%lu", (unsigned long)geteuid());
    snprintf(file, sizeof(file), "%s/file", base);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    const char *values[] = {NULL, "relative/dir", "", file, "/nonexistent/ust"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        if (values[i])
            setenv("XDG_RUNTIME_DIR", values[i], 1);
        else
            unsetenv("XDG_RUNTIME_DIR");
        int err = ust_rundir(buf, sizeof(buf));
        if (err == 0)
            CHECK(strcmp(buf, fallback) == 0);
        else /* the machine's /tmp/ustreams-<uid> is not ours to judge */
            CHECK_EQ(buf[0], '\0');
    }
    unlink(file);
    setenv("XDG_RUNTIME_DIR", base, 1);
}

/* R.6 */
static void test_errors(void)
{
    char buf[8];
    CHECK_EQ(ust_rundir(NULL, 10), EINVAL);
    CHECK_EQ(ust_rundir(buf, 0), EINVAL);
    CHECK_EQ(ust_rundir(buf, sizeof(buf)), ENAMETOOLONG);
    CHECK_EQ(buf[0], '\0');
}

int main(void)
{
    snprintf(base, sizeof(base), "/tmp/ust_rundirXXXXXX");
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(want, sizeof(want), "%s/ustreams", base);
    setenv("XDG_RUNTIME_DIR", base, 1);

    test_create();
    test_bad_mode();
    test_not_dir();
    test_owner();
    test_fallback();
    test_errors();

    rmdir(want);
    rmdir(base);
    return CHECK_RESULT();
}
