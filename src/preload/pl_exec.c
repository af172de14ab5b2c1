/* SPDX-License-Identifier: MIT */
/*
 * pl_exec.c -- the exec family and posix_spawn under the preload library:
 *   pipe ends that survive the exec live on in the new image
 *   (src/procs/sd_xexec.c describes them, sd_xexec_adopt.c rebuilds them).
 *
 * Every wrapper: ust_exec_prepare with the environment the new image gets
 * (USTREAMS_EXEC_STATE added), the C library's call, and on its failure
 * ust_exec_done (everything put back; errno kept).  When the streams
 * cannot be described (no memory, no descriptor) the exec fails with that
 * errno rather than lose them silently.  glibc's execvp, execl... call
 * execve inside the C library, out of reach of a preload: each is wrapped
 * itself.  Not reached: system(3), popen(3) and vfork(2)+exec (the C
 * library spawns there by itself): the new image gets the descriptors
 * without their pipes (docs/PROGRAMS.md, "Streams across exec").
 *
 * Locking: none of its own (ust_exec_prepare's lock is held across the
 * call).
 */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "procs.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* The exec through `call` with the environment prepared; returns only on
 * failure, errno set. */
#define EXEC_WITH(envp, call)                                                                    \
    do {                                                                                         \
        char **ne_;                                                                              \
        if (ust_exec_prepare((envp), &ne_, 0) != 0)                                              \
            return -1;                                                                           \
        char *const *env_ = ne_ != NULL ? ne_ : (envp);                                          \
        (void)env_;                                                                              \
        call;                                                                                    \
        int e_ = errno;                                                                          \
        ust_exec_done(ne_);                                                                      \
        errno = e_;                                                                              \
        return -1;                                                                               \
    } while (0)

int execve(const char *path, char *const argv[], char *const envp[])
{
    static execve_fn real;
    if (real == NULL && (real = (execve_fn)next("execve")) == NULL)
        return errno = ENOSYS, -1;
    EXEC_WITH(envp, real(path, argv, env_));
}

int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static execve_fn real;
    if (real == NULL && (real = (execve_fn)next("execvpe")) == NULL)
        return errno = ENOSYS, -1;
    EXEC_WITH(envp, real(file, argv, env_));
}

int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
    static fexecve_fn real;
    if (real == NULL && (real = (fexecve_fn)next("fexecve")) == NULL)
        return errno = ENOSYS, -1;
    EXEC_WITH(envp, real(fd, argv, env_));
}

/* The argument list of execl/execlp/execle as a vector (NULL-terminated;
 * *envp receives execle's environment when want_env).  NULL: no memory. */
static char **arg_vector(const char *arg0, va_list ap, int want_env, char ***envp)
{
    va_list cp;
    va_copy(cp, ap);
    size_t n = 1;
    while (va_arg(cp, char *) != NULL)
        n++;
    va_end(cp);
    char **v = malloc((n + 1) * sizeof(*v));
    if (v == NULL)
        return NULL;
    v[0] = (char *)arg0;
    for (size_t i = 1; i <= n; i++)
        v[i] = va_arg(ap, char *); /* the last one read is the NULL */
    if (want_env)
        *envp = va_arg(ap, char **);
    return v;
}

static int execl_common(int how, const char *path, const char *arg, va_list ap)
{
    char **envp = environ;
    char **argv = arg_vector(arg, ap, how == 2, &envp);
    if (argv == NULL)
        return errno = ENOMEM, -1;
    int r = how == 1 ? execvpe(path, argv, environ) : execve(path, argv, envp);
    int e = errno;
    free(argv);
    errno = e;
    return r;
}

int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int r = execl_common(0, path, arg, ap);
    va_end(ap);
    return r;
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int r = execl_common(1, file, arg, ap);
    va_end(ap);
    return r;
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int r = execl_common(2, path, arg, ap);
    va_end(ap);
    return r;
}

static int spawn_common(spawn_fn real, pid_t *pid, const char *path,
                        const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                        char *const argv[], char *const envp[])
{
    char **ne;
    if (real == NULL)
        return ENOSYS;
    if (ust_exec_prepare(envp, &ne, 1) != 0)
        return errno;
    int r = real(pid, path, fa, attr, argv, ne != NULL ? ne : envp);
    ust_exec_done(ne); /* the child has its copies; the parent's go */
    return r;
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    static spawn_fn real;
    if (real == NULL)
        real = (spawn_fn)next("posix_spawn");
    return spawn_common(real, pid, path, fa, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    static spawn_fn real;
    if (real == NULL)
        real = (spawn_fn)next("posix_spawnp");
    return spawn_common(real, pid, file, fa, attr, argv, envp);
}
