/* SPDX-License-Identifier: MIT */
/*
 * test_bufcall.c -- bufcall(9F), esbbcall(9F), unbufcall(9F)
 * (src/core/bufcall.c): a callback fires once, after a free of a data block
 * or by the retry period, on the bufcall thread; unbufcall cancels it, or
 * waits for it while it runs.  (qbufcall needs queues: tested with them.)
 *
 * The retry period is lengthened with ust_bufcall_set_retry where a case must
 * tell a free from a retry, so that no case depends on how fast the machine is.
 */
#include <pthread.h>
#include <time.h>

#include "check.h"
#include "strcore.h"

struct cb_state {
    atomic_int calls;
    atomic_llong at_ns;   /* when it was called */
    pthread_t thread;     /* where it ran */
    long sleep_ms;        /* sleep inside the callback */
    atomic_int started;
    atomic_int finished;
    bufcall_id_t self_id; /* unbufcall this from inside the callback */
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void cb(void *arg)
{
    struct cb_state *s = arg;
    s->thread = pthread_self();
    atomic_store(&s->at_ns, ust_now_ns());
    atomic_store(&s->started, 1);
    if (s->self_id != 0)
        unbufcall(s->self_id); /* must not wait for itself */
    if (s->sleep_ms > 0)
        sleep_ms(s->sleep_ms);
    atomic_store(&s->finished, 1);
    atomic_fetch_add(&s->calls, 1);
}

/* Wait up to ms for s->calls to reach n. */
static int wait_calls(struct cb_state *s, int n, long ms)
{
    for (long t = 0; t < ms && atomic_load(&s->calls) < n; t++)
        sleep_ms(1);
    return atomic_load(&s->calls) >= n;
}

/* bufcall(9F): fires after the next free of a data block, on another thread. */
static void test_fires_after_free(void)
{
    long old = ust_bufcall_set_retry(60000);
    mblk_t *mp = allocb(100, BPRI_MED);
    struct cb_state s = {0};
    bufcall_id_t id = bufcall(100, BPRI_MED, cb, &s);
    CHECK(id != 0);
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 1);
    sleep_ms(30);
    CHECK_EQ(atomic_load(&s.calls), 0); /* nothing freed, retry far away */
    freeb(mp);
    CHECK(wait_calls(&s, 1, 5000));
    CHECK(!pthread_equal(s.thread, pthread_self()));
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 0);
    /* once only */
    freeb(allocb(10, BPRI_LO));
    sleep_ms(30);
    CHECK_EQ(atomic_load(&s.calls), 1);
    unbufcall(id); /* finished: ignored */
    ust_bufcall_set_retry(old);
    CHECK_NO_BLOCKS();
}

/* bufcall(9F): with nothing freed, fires by the retry period (10 ms), not before. */
static void test_fires_by_retry(void)
{
    CHECK_EQ(ust_bufcall_set_retry(10), 10);
    for (int i = 0; i < 3; i++) {
        struct cb_state s = {0};
        long long t0 = ust_now_ns();
        bufcall_id_t id = i == 2 ? esbbcall(BPRI_LO, cb, &s) : bufcall(4096, BPRI_LO, cb, &s);
        CHECK(id != 0);
        CHECK(wait_calls(&s, 1, 5000));
        CHECK(atomic_load(&s.at_ns) - t0 >= 10 * 1000000LL);
        CHECK_EQ(atomic_load(&s.calls), 1);
    }
    CHECK_NO_BLOCKS();
}

/* unbufcall(9F) before the callback ran: it never runs. */
static void test_unbufcall_cancels(void)
{
    long old = ust_bufcall_set_retry(60000);
    struct cb_state s[3] = {0};
    bufcall_id_t id[3];
    for (int i = 0; i < 3; i++)
        id[i] = bufcall(64, BPRI_MED, cb, &s[i]);
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 3);
    unbufcall(id[1]);
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 2);
    unbufcall(id[1]); /* twice: ignored */
    unbufcall(0);
    freeb(allocb(64, BPRI_MED));
    CHECK(wait_calls(&s[0], 1, 5000));
    CHECK(wait_calls(&s[2], 1, 5000));
    id[1] = bufcall(64, BPRI_MED, cb, &s[1]); /* a fresh one, cancelled at once */
    unbufcall(id[1]);
    freeb(allocb(64, BPRI_MED));
    sleep_ms(50);
    CHECK_EQ(atomic_load(&s[1].calls), 0);
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 0);
    ust_bufcall_set_retry(old);
    CHECK_NO_BLOCKS();
}

/* unbufcall(9F) while the callback runs on the bufcall thread waits for it;
 * unbufcall from inside the callback does not. */
static void test_unbufcall_waits(void)
{
    struct cb_state s = {.sleep_ms = 100};
    bufcall_id_t id = bufcall(1, BPRI_HI, cb, &s);
    freeb(allocb(1, BPRI_HI));
    for (int t = 0; t < 5000 && !atomic_load(&s.started); t++)
        sleep_ms(1);
    CHECK(atomic_load(&s.started));
    unbufcall(id);
    CHECK_EQ(atomic_load(&s.finished), 1);

    struct cb_state self = {0};
    self.self_id = bufcall(1, BPRI_HI, cb, &self);
    freeb(allocb(1, BPRI_HI));
    CHECK(wait_calls(&self, 1, 5000));
    CHECK_NO_BLOCKS();
}

/* Ids are never 0 and all distinct. */
static void test_ids(void)
{
    enum { N = 200 };
    long old = ust_bufcall_set_retry(60000);
    static bufcall_id_t id[N];
    static struct cb_state s[N];
    for (int i = 0; i < N; i++) {
        id[i] = bufcall((size_t)i, BPRI_LO, cb, &s[i]);
        CHECK(id[i] != 0);
    }
    int dup = 0;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            dup += id[i] == id[j];
    CHECK_EQ(dup, 0);
    for (int i = 0; i < N; i++)
        unbufcall(id[i]);
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 0);
    CHECK(bufcall(1, BPRI_LO, NULL, NULL) == 0);
    CHECK(esbbcall(BPRI_LO, NULL, NULL) == 0);
    ust_bufcall_set_retry(old);
    int calls = 0;
    for (int i = 0; i < N; i++)
        calls += atomic_load(&s[i].calls);
    CHECK_EQ(calls, 0);
}

/* The usual use: allocb fails, bufcall, the callback allocates again. */
static mblk_t *retry_result;
static atomic_int retry_done;
static void retry_cb(void *arg)
{
    retry_result = allocb((size_t)(uintptr_t)arg, BPRI_MED);
    atomic_store(&retry_done, 1);
}

static void test_recovery(void)
{
    ustreams_fail_allocs(1);
    mblk_t *mp = allocb(300, BPRI_MED);
    CHECK(mp == NULL);
    CHECK(bufcall(300, BPRI_MED, retry_cb, (void *)(uintptr_t)300) != 0);
    for (int t = 0; t < 5000 && !atomic_load(&retry_done); t++)
        sleep_ms(1);
    CHECK(retry_result != NULL);
    CHECK_EQ(retry_result->b_datap->db_size, 300);
    freeb(retry_result);
    CHECK_NO_BLOCKS();
}

/* Frees on many threads while bufcalls come and go. */
static atomic_int stop_frees;
static void *freer(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_frees))
        freeb(allocb(64, BPRI_LO));
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, freer, NULL);
    enum { N = 300 };
    static struct cb_state s[N];
    for (int i = 0; i < N; i++) {
        bufcall_id_t id = bufcall(64, BPRI_LO, cb, &s[i]);
        CHECK(id != 0);
        if (i % 3 == 0)
            unbufcall(id); /* cancelled, or waited for: either way finished after */
        if (i % 3 == 0 && atomic_load(&s[i].started))
            CHECK_EQ(atomic_load(&s[i].finished), 1);
    }
    atomic_store(&stop_frees, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (i % 3 != 0 && !wait_calls(&s[i], 1, 5000))
            bad++;
        if (atomic_load(&s[i].calls) > 1)
            bad++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(atomic_load(&ust_bufcall_pending), 0);
    CHECK_NO_BLOCKS();
}

/* ust_bufcall_shutdown joins the thread; bufcalls work again afterwards. */
static void test_shutdown(void)
{
    ust_bufcall_shutdown();
    ust_bufcall_shutdown(); /* idempotent */
    struct cb_state s = {0};
    CHECK(bufcall(8, BPRI_LO, cb, &s) != 0);
    freeb(allocb(8, BPRI_LO));
    CHECK(wait_calls(&s, 1, 5000));
    ust_bufcall_shutdown();
    CHECK_NO_BLOCKS();
}

int main(void)
{
    test_fires_after_free();
    test_fires_by_retry();
    test_unbufcall_cancels();
    test_unbufcall_waits();
    test_ids();
    test_recovery();
    test_concurrent();
    test_shutdown();
    return CHECK_RESULT();
}
