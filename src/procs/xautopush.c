/* SPDX-License-Identifier: MIT */
/*
 * xautopush.c -- the user's autopush table in <rundir>/autopush
 * (xautopush.h; docs/ADMIN.md "The sad driver and autopush").
 *
 * Principles of operation
 *   - One file per user, in the runtime directory (0700, src/core/rundir.c),
 *     written whole by a process that changes the table (SAD_SAP): a
 *     temporary file "autopush.tmp.<pid>" (O_EXCL, 0600, never through a
 *     link) renamed over "autopush", under the flock of "autopush.lock", so
 *     that two writers never lose each other's change and a reader sees the
 *     old file or the new one, never a part.
 *   - Readers do not lock: each open of a driver lstat()s the file and reads
 *     it again only when its identity, size, mtime or ctime changed (a chown
 *     or chmod changes ctime).  No file: an empty table.
 *   - Trust boundary: another process of the user wrote the file, so it is
 *     hostile input.  Refused whole, with the reason reported once
 *     (cmn_err CE_WARN) and an empty table used until the file changes: a
 *     symbolic link or anything not a regular file (opened O_NOFOLLOW, then
 *     fstat), another owner than the effective uid, group or other
 *     permission bits, more than UST_XAP_MAXSIZE bytes, and any line
 *     ust_xap_parse does not accept.  Module names are checked again when
 *     pushed (an unknown one fails the open EINVAL, as a module unregistered
 *     since SAD_SAP does).
 * Locking: none here; src/admin/autopush.c serialises its calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rundir.h"
#include "strcore.h"
#include "xautopush.h"

static char xap_dir[PATH_MAX]; /* set once; "" without a runtime directory */
static pthread_once_t xap_once = PTHREAD_ONCE_INIT;

static void xap_dir_init(void)
{
    if (ust_rundir(xap_dir, sizeof(xap_dir) - 32) != 0)
        xap_dir[0] = '\0';
}

int ust_xap_available(void)
{
    pthread_once(&xap_once, xap_dir_init);
    return xap_dir[0] != '\0';
}

static void xap_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", xap_dir, name);
}

/* ------------------------------------------------------------------------ */
/* Parsing and formatting                                                    */
/* ------------------------------------------------------------------------ */

static int xap_namechar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* A name of w[0..len), at most max characters, into out (max + 1 bytes);
 * 0 or -1. */
static int xap_name(const char *w, size_t len, size_t max, char *out)
{
    if (len < 1 || len > max || w[0] == '.' || w[0] == '-')
        return -1;
    for (size_t i = 0; i < len; i++)
        if (!xap_namechar(w[i]))
            return -1;
    memcpy(out, w, len);
    out[len] = '\0';
    return 0;
}

/* A number of w[0..len): plain decimal, at most L_MAXMIN, or "-1" when
 * allow_all.  0 or -1. */
static int xap_num(const char *w, size_t len, int allow_all, long *out)
{
    long v = 0;

    if (allow_all && len == 2 && w[0] == '-' && w[1] == '1') {
        *out = -1;
        return 0;
    }
    if (len < 1 || len > 7 || (len > 1 && w[0] == '0'))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (w[i] < '0' || w[i] > '9')
            return -1;
        v = v * 10 + (w[i] - '0');
    }
    if (v > L_MAXMIN)
        return -1;
    *out = v;
    return 0;
}

static minor_t xap_first(const struct ust_xap_ent *e)
{
    return e->cmd == SAP_ALL ? 0 : e->minor;
}

static minor_t xap_last(const struct ust_xap_ent *e)
{
    return e->cmd == SAP_ALL ? L_MAXMIN : e->cmd == SAP_RANGE ? e->lastminor : e->minor;
}

/* One entry line (without its '\n') into *e; NULL or what is wrong. */
static const char *xap_line(const char *p, size_t len, struct ust_xap_ent *e)
{
    const char *w[3 + MAXAPUSH];
    size_t wl[3 + MAXAPUSH];
    int nw = 0;
    long minor, last;

    for (size_t i = 0; i <= len;) {
        size_t j = i;
        while (j < len && p[j] != ' ')
            j++;
        if (j == i)
            return "empty word (two spaces, or one at an end)";
        if (nw == 3 + MAXAPUSH)
            return "too many words";
        w[nw] = p + i;
        wl[nw++] = j - i;
        i = j + 1;
    }
    if (nw < 4)
        return "fewer than 4 words (DRIVER MINOR LASTMINOR MODULE...)";
    memset(e, 0, sizeof(*e));
    if (xap_name(w[0], wl[0], UST_XAP_DRVSZ, e->drv) != 0)
        return "bad driver name";
    if (xap_num(w[1], wl[1], 1, &minor) != 0 || xap_num(w[2], wl[2], 0, &last) != 0)
        return "bad minor or lastminor";
    if (minor == -1) {
        if (last != 0)
            return "lastminor with minor -1";
        e->cmd = SAP_ALL;
    } else if (last == 0) {
        e->cmd = SAP_ONE;
        e->minor = (minor_t)minor;
    } else {
        if (last <= minor)
            return "lastminor not above minor";
        e->cmd = SAP_RANGE;
        e->minor = (minor_t)minor;
        e->lastminor = (minor_t)last;
    }
    e->npush = (unsigned)(nw - 3);
    for (int k = 3; k < nw; k++)
        if (xap_name(w[k], wl[k], FMNAMESZ, e->list[k - 3]) != 0)
            return "bad module name";
    return NULL;
}

int ust_xap_parse(const char *buf, size_t n, struct ust_xap_ent *ents, int max, int *count,
                  char *why, size_t whylen)
{
    size_t hl = strlen(UST_XAP_HEADER), pos;
    int line = 1;

    *count = 0;
    if (n > UST_XAP_MAXSIZE) {
        snprintf(why, whylen, "larger than %d bytes", UST_XAP_MAXSIZE);
        return -1;
    }
    if (n < hl || memcmp(buf, UST_XAP_HEADER, hl) != 0) {
        snprintf(why, whylen, "line 1: not the header \"%.*s\"", (int)hl - 1, UST_XAP_HEADER);
        return -1;
    }
    for (pos = hl; pos < n;) {
        const char *nl = memchr(buf + pos, '\n', n - pos);
        const char *bad;
        line++;
        if (nl == NULL) {
            snprintf(why, whylen, "line %d: no newline at the end", line);
            return -1;
        }
        if (*count == max) {
            snprintf(why, whylen, "line %d: more than %d entries", line, max);
            return -1;
        }
        bad = xap_line(buf + pos, (size_t)(nl - (buf + pos)), &ents[*count]);
        for (int k = 0; bad == NULL && k < *count; k++) {
            const struct ust_xap_ent *a = &ents[k], *b = &ents[*count];
            if (strcmp(a->drv, b->drv) == 0 && xap_first(a) <= xap_last(b) &&
                xap_first(b) <= xap_last(a))
                bad = "overlaps an earlier entry of the driver";
        }
        if (bad != NULL) {
            snprintf(why, whylen, "line %d: %s", line, bad);
            return -1;
        }
        (*count)++;
        pos = (size_t)(nl - buf) + 1;
    }
    return 0;
}

int ust_xap_format(const struct ust_xap_ent *ents, int n, char *buf, size_t cap)
{
    size_t len = 0;
    int k;

    k = snprintf(buf, cap, "%s", UST_XAP_HEADER);
    if (k < 0 || (size_t)k >= cap)
        return -1;
    len = (size_t)k;
    for (int i = 0; i < n; i++) {
        const struct ust_xap_ent *e = &ents[i];
        long minor = e->cmd == SAP_ALL ? -1 : (long)e->minor;
        long last = e->cmd == SAP_RANGE ? (long)e->lastminor : 0;
        k = snprintf(buf + len, cap - len, "%s %ld %ld", e->drv, minor, last);
        if (k < 0 || (size_t)k >= cap - len)
            return -1;
        len += (size_t)k;
        for (unsigned m = 0; m < e->npush; m++) {
            k = snprintf(buf + len, cap - len, " %s", e->list[m]);
            if (k < 0 || (size_t)k >= cap - len)
                return -1;
            len += (size_t)k;
        }
        if (len + 1 >= cap)
            return -1;
        buf[len++] = '\n';
        buf[len] = '\0';
    }
    return (int)len;
}

/* ------------------------------------------------------------------------ */
/* The file                                                                  */
/* ------------------------------------------------------------------------ */

static void xap_sig_of(const struct stat *st, struct ust_xap_sig *sig)
{
    sig->present = 1;
    sig->dev = st->st_dev;
    sig->ino = st->st_ino;
    sig->size = st->st_size;
    sig->mtime = st->st_mtim;
    sig->ctime = st->st_ctim;
}

static int xap_sig_eq(const struct ust_xap_sig *a, const struct ust_xap_sig *b)
{
    if (a->present != b->present)
        return 0;
    return !a->present ||
           (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
            a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
            a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec);
}

/* Read the file at path (checked as the top says) into a new table.
 * Returns 0 (*ents, *n), -1 refused (why), -2 no memory. */
static int xap_read(const char *path, struct ust_xap_ent **ents, int *n, char *why,
                    size_t whylen)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    int rc = -1;

    *ents = NULL;
    *n = 0;
    if (fd < 0) {
        if (errno == ENOENT)
            return 0; /* gone since the lstat */
        snprintf(why, whylen, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
    } else if (st.st_uid != geteuid()) {
        snprintf(why, whylen, "owned by uid %u, not %u", (unsigned)st.st_uid,
                 (unsigned)geteuid());
    } else if ((st.st_mode & 077) != 0) {
        snprintf(why, whylen, "mode %03o: group or others have access", st.st_mode & 0777);
    } else if (st.st_size > UST_XAP_MAXSIZE) {
        snprintf(why, whylen, "larger than %d bytes", UST_XAP_MAXSIZE);
    } else if ((buf = malloc(UST_XAP_MAXSIZE + 1)) == NULL) {
        rc = -2;
    } else {
        ssize_t k;
        while (got <= UST_XAP_MAXSIZE &&
               (k = read(fd, buf + got, UST_XAP_MAXSIZE + 1 - got)) != 0) {
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                break;
            got += (size_t)k;
        }
        struct ust_xap_ent *v = malloc(UST_XAP_MAXENT * sizeof(*v));
        if (v == NULL) {
            rc = -2;
        } else if (ust_xap_parse(buf, got, v, UST_XAP_MAXENT, n, why, whylen) == 0) {
            *ents = v;
            rc = 0;
        } else {
            free(v);
            *n = 0;
        }
    }
    free(buf);
    close(fd);
    return rc;
}

int ust_xap_load(struct ust_xap_sig *sig, int force, struct ust_xap_ent **ents, int *n)
{
    char path[PATH_MAX + 32], why[160];
    struct ust_xap_sig now = {0};
    struct stat st;
    int rc;

    if (!ust_xap_available())
        return -1;
    xap_path(path, sizeof(path), "autopush");
    if (lstat(path, &st) == 0)
        xap_sig_of(&st, &now);
    if (!force && xap_sig_eq(&now, sig))
        return 1;
    *ents = NULL;
    *n = 0;
    if (now.present) {
        rc = xap_read(path, ents, n, why, sizeof(why));
        if (rc == -2)
            return -1;
        if (rc == -1 && !xap_sig_eq(&now, sig))
            cmn_err(CE_WARN, "autopush: %s refused (%s): the user's autopush table is "
                             "ignored until the file is rewritten",
                    path, why);
    }
    *sig = now;
    return 0;
}

int ust_xap_lock(void)
{
    char path[PATH_MAX + 32];
    int fd;

    if (!ust_xap_available()) {
        errno = ENOENT;
        return -1;
    }
    xap_path(path, sizeof(path), "autopush.lock");
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    for (int i = 0; i < 200; i++) { /* 2 s: a holder writes a few KB */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    int e = errno == EWOULDBLOCK ? ETIMEDOUT : errno;
    close(fd);
    errno = e;
    return -1;
}

void ust_xap_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* the flock goes with the open file */
}

int ust_xap_store(const struct ust_xap_ent *ents, int n, struct ust_xap_sig *sig)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48], *buf;
    struct stat st;
    int fd, len, err = 0;

    if (!ust_xap_available())
        return ENOENT;
    xap_path(path, sizeof(path), "autopush");
    if (n == 0) {
        if (unlink(path) != 0 && errno != ENOENT)
            return errno;
        memset(sig, 0, sizeof(*sig));
        return 0;
    }
    buf = malloc(UST_XAP_MAXSIZE + 1);
    if (buf == NULL)
        return ENOMEM;
    len = ust_xap_format(ents, n, buf, UST_XAP_MAXSIZE + 1);
    if (len < 0) {
        free(buf);
        return ENOSPC; /* more than a file may hold */
    }
    snprintf(tmp, sizeof(tmp), "%s/autopush.tmp.%ld", xap_dir, (long)getpid());
    (void)unlink(tmp); /* ours: a crashed earlier run of this pid */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        err = errno;
    } else {
        for (int off = 0; off < len && err == 0;) {
            ssize_t k = write(fd, buf + off, (size_t)(len - off));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                err = k < 0 ? errno : EIO;
            else
                off += (int)k;
        }
        if (close(fd) != 0 && err == 0)
            err = errno;
        if (err == 0 && rename(tmp, path) != 0)
            err = errno;
        if (err != 0)
            (void)unlink(tmp);
    }
    free(buf);
    if (err == 0 && lstat(path, &st) == 0)
        xap_sig_of(&st, sig);
    return err;
}
