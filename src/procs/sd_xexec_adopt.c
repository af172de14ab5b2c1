/* SPDX-License-Identifier: MIT */
/*
 * sd_xexec_adopt.c -- pipes across exec, the new image's half: the pipe
 *   ends the old image described (sd_xexec.c) rebuilt before main.
 *
 * Principles of operation
 *   USTREAMS_EXEC_STATE names a memfd holding the description (sd_xexec.h).
 *   It is read once, by a constructor, and the variable is removed from the
 *   environment at once.  The description is this process's own (the same
 *   pid wrote it before the exec: a variable inherited through a program
 *   that does not run the library names another pid and is ignored), but it
 *   is read as any input is: sizes, counts, descriptor numbers and kinds are
 *   checked before use; the channel's memfd goes through xring_attach, which
 *   trusts nothing in it.  For each end: a new head and pipe pair over the
 *   same channel, bell and wake pair (as a fork child's, sd_xpipe.c), a new
 *   readiness pair dup'ed onto each of its descriptor numbers (keeping
 *   their close-on-exec flag and file status flags), the messages the old
 *   image's reader had not read put at the new head, those its writer had
 *   not written sent down to the ring, in their order.  An end that fails
 *   its checks is left alone (its numbers read as the hung-up sockets they
 *   are), and so are its descriptors.
 *
 * Locking: none (start-up, one thread).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procs.h"
#include "sd_xexec.h"
#include "sd_xpipe.h"

/* fd is an open AF_UNIX stream socket (a bell or wake pair end). */
static int is_stream_socket(int fd)
{
    int type = 0;
    socklen_t tl = sizeof(type);
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
           getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM;
}

/* One record of the description at *pos (advanced) as a message; NULL at a
 * malformed record (*bad set) or out of memory. */
static mblk_t *rec_msg(const unsigned char *p, size_t len, size_t *pos, int *bad)
{
    struct xexec_rec r;
    if (len - *pos < sizeof(r)) {
        *bad = 1;
        return NULL;
    }
    memcpy(&r, p + *pos, sizeof(r));
    *pos += sizeof(r);
    size_t body = (size_t)r.ctl_len + r.data_len;
    if (r.ctl_len > XEXEC_MAX_BYTES || r.data_len > XEXEC_MAX_BYTES || len - *pos < body) {
        *bad = 1;
        return NULL;
    }
    const unsigned char *b = p + *pos;
    *pos += body;
    mblk_t *mp = NULL, *dp = NULL;
    switch (r.type) {
    case M_DATA:
        if (r.ctl_len != 0)
            break;
        if ((mp = allocb(r.data_len, BPRI_MED)) != NULL) {
            memcpy(mp->b_wptr, b, r.data_len);
            mp->b_wptr += r.data_len;
            mp->b_band = r.band;
        }
        return mp;
    case M_PROTO:
    case M_PCPROTO:
        if ((mp = allocb(r.ctl_len, BPRI_MED)) == NULL)
            return NULL;
        mp->b_datap->db_type = r.type;
        mp->b_band = r.type == M_PROTO ? r.band : 0;
        memcpy(mp->b_wptr, b, r.ctl_len);
        mp->b_wptr += r.ctl_len;
        if (r.flags & XREC_DATA) {
            if ((dp = allocb(r.data_len, BPRI_MED)) == NULL) {
                freemsg(mp);
                return NULL;
            }
            memcpy(dp->b_wptr, b + r.ctl_len, r.data_len);
            dp->b_wptr += r.data_len;
            mp->b_cont = dp;
        }
        return mp;
    case M_PASSFP:
        if (body != 0 || r.passfd < 0 || fcntl(r.passfd, F_SETFD, FD_CLOEXEC) != 0)
            break;
        mp = ust_passfp_received(r.passfd, r.uid, r.gid);
        if (mp == NULL)
            close(r.passfd);
        return mp;
    default:
        break;
    }
    *bad = 1;
    return NULL;
}

/* Step over n records at *pos: 0, or -1 when they are malformed. */
static int skip_records(const unsigned char *p, size_t len, size_t *pos, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        struct xexec_rec r;
        if (len - *pos < sizeof(r))
            return -1;
        memcpy(&r, p + *pos, sizeof(r));
        *pos += sizeof(r);
        size_t body = (size_t)r.ctl_len + r.data_len;
        if (r.ctl_len > XEXEC_MAX_BYTES || r.data_len > XEXEC_MAX_BYTES || len - *pos < body)
            return -1;
        *pos += body;
        if (r.type == M_PASSFP && r.passfd >= 3)
            close(r.passfd);
    }
    return 0;
}

/* The descriptor numbers naming end e: every number whose file is e's
 * readiness socket (found in /proc/self/fd: a posix_spawn file action or a
 * dup2 may have moved it), else the numbers the old image recorded. */
static int numbers_of(const struct xexec_end *e, int idx, const struct xexec_fd *fds, int nfd,
                      int *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        int dfd = dirfd(d);
        struct dirent *de;
        while ((de = readdir(d)) != NULL && n < max) {
            char *end;
            long fd = strtol(de->d_name, &end, 10);
            struct stat st;
            if (*end != '\0' || fd < 0 || fd == dfd || fstat((int)fd, &st) != 0)
                continue;
            if (S_ISSOCK(st.st_mode) && (uint64_t)st.st_ino == e->uino &&
                (uint64_t)st.st_dev == e->udev)
                out[n++] = (int)fd;
        }
        closedir(d);
        return n;
    }
    for (int i = 0; i < nfd && n < max; i++)
        if (fds[i].end == idx)
            out[n++] = fds[i].fd;
    return n;
}

/* Rebuild end e on the numbers naming it; its records start at *pos.
 * 0, or -1 when the end was left alone. */
static int end_adopt(const struct xexec_end *e, int idx, const struct xexec_fd *fds, int nfd,
                     const unsigned char *p, size_t len, size_t *pos)
{
    int nums[64];
    int nn = numbers_of(e, idx, fds, nfd, nums, 64);
    if (nn == 0) {
        /* Not held here (closed by the exec, or by a spawn's file action):
         * the end's descriptors go, as its close would make them go. */
        int own[4] = {e->memfd, e->bell, e->wake[0], e->wake[1]};
        for (int i = 0; i < 4; i++)
            if (own[i] >= 3)
                close(own[i]);
        return skip_records(p, len, pos, e->pre_rd + e->pre_wr);
    }
    if ((e->side != 0 && e->side != 1) || !is_stream_socket(e->bell) ||
        (e->wake[0] >= 0) != (e->wake[1] >= 0) ||
        (e->wake[0] >= 0 && (!is_stream_socket(e->wake[0]) || !is_stream_socket(e->wake[1]))))
        return -1;
    struct xchan *xc = calloc(1, sizeof(*xc));
    if (xc == NULL)
        return -1;
    if (xring_attach(e->memfd, &xc->ch) != 0) { /* checks everything it maps */
        free(xc);
        return -1;
    }
    close(e->memfd); /* the handle keeps its own */
    xc->wake[0] = e->wake[0];
    xc->wake[1] = e->wake[1];
    for (int i = 0; i < 2; i++)
        if (xc->wake[i] >= 0)
            fcntl(xc->wake[i], F_SETFD, FD_CLOEXEC);
    fcntl(e->bell, F_SETFD, FD_CLOEXEC);
    atomic_store(&xc->refs, 1);

    cred_t cr;
    ust_sd_cred(&cr);
    queue_t *drv;
    struct stdata *sd = ust_pipe_end_new(&cr, &drv);
    struct ust_xend *xe = sd != NULL ? xp_end_new(xc, e->side, e->bell) : NULL;
    if (xe == NULL) {
        ust_sd_free(sd);
        xp_xchan_rele(xc);
        return -1;
    }
    xp_end_attach(sd, xe);
    xp_xchan_rele(xc); /* the end holds it */
    ust_lock(&sd->sd_lock);
    sd->sd_rdopt = e->rdopt;
    sd->sd_wropt = e->wropt;
    sd->sd_oflag = e->oflag;
    ust_unlock(&sd->sd_lock);
    int ufd = -1, bound = 0;
    for (int i = 0; i < nn; i++) {
        if (ust_sd_fork_rebind(nums[i], sd, &ufd) == 0) {
            ust_sd_acc_set(nums[i], e->acc);
            bound++;
        }
    }
    if (ufd >= 0)
        close(ufd);
    if (bound == 0) {
        /* No number could be given the end: it closes as if the old image
         * had closed it (its queued messages with it), as sd_xpipe_far.c's
         * end_open does when it gets no descriptor. */
        ust_sd_teardown(sd);
        return skip_records(p, len, pos, e->pre_rd + e->pre_wr);
    }
    ust_sd_register(sd);
    int bad = 0;
    for (uint32_t k = 0; k < e->pre_rd && !bad; k++) {
        mblk_t *mp = rec_msg(p, len, pos, &bad);
        if (mp != NULL)
            put(sd->sd_rq, mp);
    }
    if (xp_end_watch(xe, 1) != 0)
        atomic_store(&xe->gone, 1);
    for (uint32_t k = 0; k < e->pre_wr && !bad; k++) {
        mblk_t *mp = rec_msg(p, len, pos, &bad);
        if (mp != NULL)
            put(WR(sd->sd_pipeq), mp);
    }
    return bad ? -1 : 0;
}

static void adopt_fd(int dfd)
{
    struct stat st;
    if (fstat(dfd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct xexec_hdr) ||
        st.st_size > XEXEC_MAX_BYTES)
        return;
    size_t len = (size_t)st.st_size;
    unsigned char *p = malloc(len);
    if (p == NULL)
        return;
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(dfd, p + got, len - got, (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    struct xexec_hdr h;
    memcpy(&h, p, sizeof(h));
    size_t pos = sizeof(h) + (size_t)h.h_nend * sizeof(struct xexec_end) +
                 (size_t)h.h_nfd * sizeof(struct xexec_fd);
    if (got != len || h.h_magic != XEXEC_MAGIC || h.h_version != XEXEC_VERSION ||
        h.h_pid != (int32_t)(h.h_spawn ? getppid() : getpid()) || h.h_bytes != len || h.h_nend > XEXEC_MAX_ENDS ||
        h.h_nfd > XEXEC_MAX_FDS || pos > len) {
        free(p);
        return;
    }
    close(dfd); /* ours: the pid says so */
    const struct xexec_end *ends = (const struct xexec_end *)(const void *)(p + sizeof(h));
    struct xexec_fd *fds = malloc(((size_t)h.h_nfd + 1) * sizeof(*fds));
    if (fds != NULL) {
        memcpy(fds, p + sizeof(h) + (size_t)h.h_nend * sizeof(struct xexec_end),
               (size_t)h.h_nfd * sizeof(*fds));
        for (uint32_t i = 0; i < h.h_nend; i++) {
            struct xexec_end e;
            memcpy(&e, &ends[i], sizeof(e));
            if (end_adopt(&e, (int)i, fds, (int)h.h_nfd, p, len, &pos) != 0)
                break; /* the records after a bad one cannot be found again */
        }
    }
    free(fds);
    free(p);
}

void ust_exec_adopt(void)
{
    const char *v = getenv(XEXEC_ENV);
    if (v == NULL)
        return;
    char *end;
    long fd = strtol(v, &end, 10);
    int ok = *v != '\0' && *end == '\0' && fd >= 3 && fd < (1L << 20);
    unsetenv(XEXEC_ENV);
    if (ok)
        adopt_fd((int)fd);
}

__attribute__((constructor)) static void xexec_constructor(void)
{
    ust_exec_adopt();
}
