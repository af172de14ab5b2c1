/* SPDX-License-Identifier: MIT */
/*
 * test_xti_stress.c -- threads over ticotsord through libxnet: NCLI client
 * threads connect to one listener, which accepts each onto a new endpoint
 * served by its own thread.  Each client sends NMSG TSDUs of varying size,
 * each cut into T_MORE fragments; the server reads them through a buffer
 * smaller than most TSDUs, checks every byte and every boundary, and echoes
 * the TSDU back whole; the client checks the echo.  Then orderly release
 * both ways.  Every byte and boundary is counted on both sides.
 */
#include <pthread.h>
#include <unistd.h>

#include "xti_util.h"

#define PROV "/dev/ticotsord"
#define NCLI 4
#define NMSG 5000
#define MAXTSDU 3000

static struct xti_addr srv_addr;
static atomic_long srv_bytes, srv_tsdus, cli_bytes, cli_tsdus;

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static void fill(char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(seed + i * 7);
}

/* Read one whole TSDU into b (room cap) through reads of at most chunk bytes; its length or -1. */
static long rcv_tsdu(int fd, char *b, size_t cap, size_t chunk)
{
    size_t got = 0;
    int flags;

    do {
        size_t want = cap - got < chunk ? cap - got : chunk;
        int n = t_rcv(fd, b + got, (unsigned)want, &flags);
        if (n < 0)
            return -1;
        got += (size_t)n;
        if (got == cap && (flags & T_MORE))
            return -1;
    } while (flags & T_MORE);
    return (long)got;
}

static void *server_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char *b = malloc(MAXTSDU + 16);
    long n;

    for (;;) {
        n = rcv_tsdu(fd, b, MAXTSDU + 16, 512);
        if (n < 0)
            break;
        /* the first 4 bytes carry the seed the rest was filled with */
        unsigned seed;
        memcpy(&seed, b, 4);
        char *want = malloc((size_t)n);
        fill(want, (size_t)n, seed);
        CHECK(n >= 4 && memcmp(b + 4, want + 4, (size_t)n - 4) == 0);
        free(want);
        atomic_fetch_add(&srv_bytes, n);
        atomic_fetch_add(&srv_tsdus, 1);
        if (!CHECK_EQ(t_snd(fd, b, (unsigned)n, 0), n))
            break;
    }
    CHECK_EQ(t_errno, TLOOK);
    CHECK_EQ(t_look(fd), T_ORDREL);
    XCHECK_OK(t_rcvrel(fd));
    XCHECK_OK(t_sndrel(fd));
    CHECK_EQ(t_getstate(fd), T_IDLE);
    t_close(fd);
    free(b);
    return NULL;
}

static void *client(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
    char *b = malloc(MAXTSDU), *r = malloc(MAXTSDU);
    int fd = xti_bound(PROV, 0, NULL, 0, NULL);

    if (fd < 0 || !CHECK_EQ(xti_connect_to(fd, &srv_addr), 0))
        goto out;
    for (int m = 0; m < NMSG; m++) {
        size_t len = 4 + next_rand(&seed) % (MAXTSDU - 4), off = 0;
        unsigned s = next_rand(&seed);
        fill(b, len, s);
        memcpy(b, &s, 4);
        while (off < len) { /* cut into fragments, T_MORE on all but the last */
            size_t frag = 1 + next_rand(&seed) % 1200;
            if (frag > len - off)
                frag = len - off;
            int more = off + frag < len ? T_MORE : 0;
            if (!CHECK_EQ(t_snd(fd, b + off, (unsigned)frag, more), frag))
                goto out;
            off += frag;
        }
        long n = rcv_tsdu(fd, r, MAXTSDU, MAXTSDU);
        if (!CHECK_EQ(n, len) || !CHECK(memcmp(r, b, len) == 0))
            goto out;
        atomic_fetch_add(&cli_bytes, (long)len);
        atomic_fetch_add(&cli_tsdus, 1);
    }
    XCHECK_OK(t_sndrel(fd));
    int flags;
    XCHECK_ERR(t_rcv(fd, r, 1, &flags), TLOOK);
    XCHECK_OK(t_rcvrel(fd));
    CHECK_EQ(t_getstate(fd), T_IDLE);
out:
    if (fd >= 0)
        t_close(fd);
    free(b);
    free(r);
    return NULL;
}

/* ---- several threads on ONE descriptor: whole TSDUs from each, none torn or lost ---- */
#define NSHARE 4
#define NSHMSG 2000
static int shared_fd;
static atomic_int share_done;

static void *share_sender(void *arg)
{
    int id = (int)(intptr_t)arg;
    char b[100];

    for (int m = 0; m < NSHMSG; m++) {
        memset(b, 'a' + id, sizeof(b));
        memcpy(b, &id, sizeof(id));
        memcpy(b + sizeof(id), &m, sizeof(m));
        if (!CHECK_EQ(t_snd(shared_fd, b, sizeof(b), 0), sizeof(b)))
            break;
    }
    return NULL;
}

static void *share_looker(void *arg)
{
    (void)arg;
    while (!atomic_load(&share_done)) {
        CHECK_EQ(t_getstate(shared_fd), T_DATAXFER);
        CHECK(t_look(shared_fd) >= 0);
    }
    return NULL;
}

static void test_shared_descriptor(void)
{
    pthread_t th[NSHARE + 1];
    int cli, lis, acc, next[NSHARE] = {0}, flags;
    char b[200];

    if (!CHECK_EQ(xti_pair("/dev/ticots", &cli, &lis, &acc), 0))
        return;
    shared_fd = cli;
    for (int i = 0; i < NSHARE; i++)
        pthread_create(&th[i], NULL, share_sender, (void *)(intptr_t)i);
    pthread_create(&th[NSHARE], NULL, share_looker, NULL);
    for (int n = 0; n < NSHARE * NSHMSG; n++) {
        int id, m;
        if (!CHECK_EQ(t_rcv(acc, b, sizeof(b), &flags), 100) || !CHECK_EQ(flags, 0))
            break;
        memcpy(&id, b, sizeof(id));
        memcpy(&m, b + sizeof(id), sizeof(m));
        if (!CHECK(id >= 0 && id < NSHARE) || !CHECK_EQ(m, next[id]))
            break;
        next[id]++;
        CHECK(b[99] == 'a' + id);
    }
    for (int i = 0; i < NSHARE; i++)
        pthread_join(th[i], NULL);
    atomic_store(&share_done, 1);
    pthread_join(th[NSHARE], NULL);
    for (int i = 0; i < NSHARE; i++)
        CHECK_EQ(next[i], NSHMSG);
    t_close(cli);
    t_close(lis);
    t_close(acc);
}

/* ---- a reader thread blocked in t_rcv never stops a writer on the same descriptor ---- */
#define NDUPLEX 3000
static void *duplex_reader(void *arg)
{
    int fd = (int)(intptr_t)arg, flags;
    long n = 0;
    char b[64];

    for (int i = 0; i < NDUPLEX; i++) {
        int r = t_rcv(fd, b, sizeof(b), &flags);
        if (!CHECK_EQ(r, 8))
            break;
        n++;
    }
    return (void *)(intptr_t)n;
}

static void test_duplex(void)
{
    pthread_t th;
    int cli, lis, acc, flags;
    void *got;
    char b[64];

    if (!CHECK_EQ(xti_pair("/dev/ticots", &cli, &lis, &acc), 0))
        return;
    /* cli: one thread only receives (blocked most of the time), this one only sends */
    pthread_create(&th, NULL, duplex_reader, (void *)(intptr_t)cli);
    for (int i = 0; i < NDUPLEX; i++) {
        if (!CHECK_EQ(t_snd(cli, "request!", 8, 0), 8))
            break;
        if (!CHECK_EQ(t_rcv(acc, b, sizeof(b), &flags), 8) ||
            !CHECK_EQ(t_snd(acc, "answer!!", 8, 0), 8))
            break;
    }
    pthread_join(th, &got);
    CHECK_EQ((intptr_t)got, NDUPLEX);
    t_close(cli);
    t_close(lis);
    t_close(acc);
}

/* ---- t_close from another thread wakes a t_rcv blocked on the descriptor: TBADF ---- */
static void *blocked_reader(void *arg)
{
    int fd = (int)(intptr_t)arg, flags;
    char b[8];

    XCHECK_ERR(t_rcv(fd, b, sizeof(b), &flags), TBADF);
    return NULL;
}

static void test_close_wakes(void)
{
    pthread_t th;
    int cli, lis, acc;

    if (!CHECK_EQ(xti_pair("/dev/ticots", &cli, &lis, &acc), 0))
        return;
    pthread_create(&th, NULL, blocked_reader, (void *)(intptr_t)cli);
    usleep(50000); /* let it block (if it has not, it still must fail with TBADF) */
    CHECK_EQ(t_close(cli), 0);
    pthread_join(th, NULL);
    t_close(lis);
    t_close(acc);
}

int main(void)
{
    pthread_t cli[NCLI], srv[NCLI];
    struct t_call call;
    int lis, nsrv = 0;

    xti_require(PROV);
    lis = xti_bound(PROV, NCLI, NULL, 0, &srv_addr);
    if (lis < 0)
        return CHECK_RESULT();
    for (int i = 0; i < NCLI; i++)
        pthread_create(&cli[i], NULL, client, (void *)(intptr_t)i);
    for (int i = 0; i < NCLI; i++) {
        int acc = t_open(PROV, O_RDWR, NULL);
        memset(&call, 0, sizeof(call));
        if (!CHECK(acc >= 0) || t_listen(lis, &call) < 0 || t_accept(lis, acc, &call) < 0) {
            fprintf(stderr, "listen/accept: t_errno %d\n", t_errno);
            if (acc >= 0)
                t_close(acc);
            break;
        }
        pthread_create(&srv[nsrv++], NULL, server_conn, (void *)(intptr_t)acc);
    }
    for (int i = 0; i < NCLI; i++)
        pthread_join(cli[i], NULL);
    for (int i = 0; i < nsrv; i++)
        pthread_join(srv[i], NULL);
    CHECK_EQ(t_getstate(lis), T_IDLE);
    t_close(lis);
    CHECK_EQ(atomic_load(&cli_tsdus), NCLI * NMSG);
    CHECK_EQ(atomic_load(&srv_tsdus), NCLI * NMSG);
    CHECK_EQ(atomic_load(&srv_bytes), atomic_load(&cli_bytes));
    printf("stress: %ld TSDUs, %ld bytes each way\n", atomic_load(&cli_tsdus),
           atomic_load(&cli_bytes));
    test_shared_descriptor();
    test_duplex();
    test_close_wakes();
    return xti_finish();
}
