/* SPDX-License-Identifier: MIT */
/*
 * sd_ucopy.c -- fault-safe copyin/copyout for the stream head.
 *
 * Principles of operation
 *   A system call given a bad pointer fails with EFAULT; the library, which
 *   runs in the caller's address space, would instead take SIGSEGV (or
 *   SIGBUS) in the middle of a copy.  So every copy from or to a caller's
 *   address runs as a "protected copy", the user-space version of the
 *   kernel's exception table:
 *
 *     1. A cheap range check rejects what can never be a user address (the
 *        NULL page, the kernel half, a wrap-around): no fault is taken for
 *        NULL, the commonest bad pointer.
 *     2. The copy records a frame in a thread-local variable: the user range
 *        [lo, lo+len) and a jump buffer filled by __builtin_setjmp (in
 *        sanitizer builds sigsetjmp(env, 0)), which saves registers only (no
 *        system call: the signal mask is not saved).  It then copies
 *        (memcpy) and unlinks the frame.
 *     3. The library's SIGSEGV/SIGBUS handler, installed once with
 *        SA_SIGINFO|SA_NODEFER|SA_ONSTACK, looks at the faulting thread's
 *        frame: a kernel-generated fault (si_code > 0) whose address lies in
 *        the frame's user range is the library's.  The handler restores the
 *        signal mask of the interrupted context (uc_sigmask; the one system
 *        call, on the fault path only), unlinks the frame and jumps back
 *        into the copy (__builtin_longjmp, or siglongjmp), which returns
 *        EFAULT.  Everything else,
 *        including a fault on the library's own side of a copy (a library
 *        bug must still crash), goes to the handler that was installed
 *        before: an sa_sigaction or sa_handler is called with the same
 *        arguments under its own sa_mask; SIG_IGN ignores a signal sent by
 *        kill(); SIG_DFL (and SIG_IGN for a real fault, which the kernel
 *        would not ignore either) resets the default action and returns, so
 *        the faulting instruction runs again and the process dies exactly as
 *        it would have without the library (signal sent by kill(): raised
 *        again).
 *
 *   Cost on the data path: one load (installed?), the inline setjmp (three
 *   stores, plus the callee-saved registers the function then saves), two
 *   thread-local stores and the memcpy: one or two nanoseconds per copy, no
 *   system call.  Callers keep their state changes after the copy, so a
 *   copy that fails has changed nothing: a write that faults sends nothing,
 *   a read or getmsg that faults leaves the message at the front.
 *
 *   Frames nest (a prev link): a signal handler that interrupts a copy and
 *   itself copies (no STREAMS call is async-signal-safe, but the copy is)
 *   pushes its own frame.  Only locals set before the setjmp are used after
 *   the longjmp, so none needs to be volatile; signal fences keep the
 *   compiler from moving the frame's stores across the copy.
 *
 *   Libraries layered on ustreams reach the same copies through the public
 *   pair ustreams_copyin / ustreams_copyout (ustreams.h): libxnet copies
 *   every t_* struct argument with them.
 *
 *   Sanitizers.  ASan and TSan intercept memcpy and would report (or
 *   instrument) the wild access before the fault; in sanitizer builds the
 *   copy is a byte loop compiled without their instrumentation, through
 *   volatile pointers so that it is not turned back into memcpy.  ASan's
 *   own SEGV handler (handle_segv) is installed at start-up, before the
 *   library's, and is chained to like any other.
 *
 *   The application's handlers.  A handler installed before the library
 *   keeps working: it is called for every fault that is not a library
 *   copy's.  A handler installed after the library replaces the library's
 *   until a stream open (strm_open, strm_pipe) calls ust_ucopy_check and
 *   finds another handler: it installs the library's in front of it,
 *   chaining to it.  Looking costs two sigaction(2) calls, so an open looks
 *   only when 1 ms (UCOPY_RECHECK_NS, CLOCK_MONOTONIC read through the vDSO)
 *   has passed since the last look: every open that starts 1 ms or more
 *   after the application installed its handler chains it (the rule;
 *   before 2026-11-27 every open looked, two system calls per open).  Meanwhile a bad pointer given to the
 *   library reaches the application's handler (which may chain back to the
 *   library's, as well-behaved chaining handlers do, and then gets EFAULT).
 *   Two handlers that chain to each other are cut: when the handler the
 *   library called calls the library's again for the same signal (same
 *   siginfo, deeper on the stack), the library takes the default action.
 *   Limits: a handler installed by another thread at the very moment the
 *   library installs its own may be lost (as with any chaining library);
 *   SA_RESETHAND of a chained handler is not emulated; a program that blocks
 *   SIGSEGV in a thread dies on a bad pointer there (the kernel cannot
 *   deliver a blocked synchronous fault).
 *
 * Locking
 *   ucopy_lock (a leaf) serializes installing and the slots of previous
 *   handlers.  The handler reads the slots without it: a slot is published
 *   by an atomic index and only rewritten UCOPY_SLOTS installs later.
 */
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <ustreams.h>

#include "lock.h"
#include "sd_ucopy.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UCOPY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UCOPY_SANITIZED 1
#endif
#endif

/* Copies the sanitizers must not instrument or intercept. */
#define UCOPY_NOSAN __attribute__((noinline, no_sanitize("address", "thread")))

/* The way back into a copy.  Normal builds use the compiler's own setjmp
 * (__builtin_setjmp: three words stored inline; the function that calls it
 * saves every callee-saved register in its frame, so a jump back from the
 * signal handler restores them all), which costs a quarter of sigsetjmp.
 * Sanitizer builds use sigsetjmp/siglongjmp, which ASan and TSan intercept
 * to fix up their shadow stacks. */
#ifdef UCOPY_SANITIZED
typedef sigjmp_buf ucopy_jmp_buf;
#define UCOPY_SETJMP(b)  sigsetjmp((b), 0)
#define UCOPY_LONGJMP(b) siglongjmp((b), 1)
#else
typedef void *ucopy_jmp_buf[5];
#define UCOPY_SETJMP(b)  __builtin_setjmp(b)
#define UCOPY_LONGJMP(b) __builtin_longjmp((b), 1)
#endif

/* The default TLS model, not initial-exec: a library with initial-exec TLS
 * cannot be dlopen()ed once the static TLS block is used up ("cannot
 * allocate memory in static TLS block": Python ctypes, plugins).  Linked
 * into a program the accesses are relaxed to local-exec; in the shared
 * library they go through TLS descriptors (-mtls-dialect=gnu2, CMakeLists)
 * at the price of a call.  The handler reads these only after the copy
 * that may fault has set them on this thread, so a dlopen()ed library's
 * lazily allocated block exists by then. */
#define UCOPY_TLS
#define UCOPY_SLOTS 8
/* Opens look at the SIGSEGV/SIGBUS dispositions at most this often. */
#define UCOPY_RECHECK_NS 1000000LL /* 1 ms */
#define USER_TOP    0x800000000000ULL /* end of the x86-64/AArch64 user half */

/* A protected copy in progress on this thread. */
struct ucopy_frame {
    struct ucopy_frame *prev; /* the copy this one interrupted, or NULL */
    uintptr_t lo;             /* the user range: faults in [lo, lo+len) are ours */
    size_t len;
    ucopy_jmp_buf env; /* back into the copy, which returns EFAULT */
};

static _Thread_local struct ucopy_frame *volatile ucopy_cur UCOPY_TLS;
/* The chained call in progress on this thread (loop detection). */
static _Thread_local const siginfo_t *ucopy_chain_si UCOPY_TLS;
static _Thread_local uintptr_t ucopy_chain_sp UCOPY_TLS;

static const int ucopy_sigs[2] = {SIGSEGV, SIGBUS};
static ust_lock_t ucopy_lock = UST_LOCK_INIT;       /* installing, ucopy_prev; leaf */
static struct sigaction ucopy_prev[UCOPY_SLOTS][2]; /* ucopy_lock; read by the handler */
static int ucopy_slot = -1;                         /* the published slot (atomic) */
static int ucopy_installed;                         /* atomic: the handler is set up */
static long long ucopy_next_check;                  /* atomic: no look before (ust_now_ns) */
static unsigned long ucopy_nchecks;                 /* atomic: looks so far (tests) */

static void ucopy_handler(int sig, siginfo_t *si, void *uc);

/* ------------------------------------------------------------------------ */
/* Chaining to the handler installed before                                 */
/* ------------------------------------------------------------------------ */

/* Take the default action of sig for the fault (or kill) described by si. */
static void ucopy_default(int sig, const siginfo_t *si)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0) { /* sent by kill(): nothing runs again, so raise it */
        sigset_t u;
        sigemptyset(&u);
        sigaddset(&u, sig);
        pthread_sigmask(SIG_UNBLOCK, &u, NULL);
        raise(sig);
    }
    /* A real fault: returning runs the faulting instruction again. */
}

/* Pass a fault that is not a library copy's to the handler installed before
 * the library's.  Async-signal-safe. */
static void ucopy_chain(int sig, siginfo_t *si, void *uc)
{
    int slot = __atomic_load_n(&ucopy_slot, __ATOMIC_ACQUIRE);
    char here;
    uintptr_t sp = (uintptr_t)&here;
    struct sigaction o;

    if (slot < 0 || (ucopy_chain_si == si && sp < ucopy_chain_sp)) {
        ucopy_default(sig, si); /* nothing before us, or a loop of chaining handlers */
        return;
    }
    o = ucopy_prev[slot][sig == SIGBUS];
    int info = (o.sa_flags & SA_SIGINFO) != 0;
    if ((info && o.sa_sigaction == NULL) || (!info && o.sa_handler == SIG_DFL) ||
        (!info && o.sa_handler == SIG_IGN && si->si_code > 0)) {
        ucopy_default(sig, si);
        return;
    }
    if (!info && o.sa_handler == SIG_IGN)
        return;
    sigset_t m = o.sa_mask, old;
    if (!(o.sa_flags & SA_NODEFER))
        sigaddset(&m, sig);
    pthread_sigmask(SIG_BLOCK, &m, &old);
    const siginfo_t *psi = ucopy_chain_si;
    uintptr_t psp = ucopy_chain_sp;
    ucopy_chain_si = si;
    ucopy_chain_sp = sp;
    if (info)
        o.sa_sigaction(sig, si, uc);
    else
        o.sa_handler(sig);
    ucopy_chain_si = psi;
    ucopy_chain_sp = psp;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The SIGSEGV/SIGBUS handler: back into the copy if the fault is one of its
 * user addresses, else chain. */
static void ucopy_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    struct ucopy_frame *f = ucopy_cur;
    if (f && si->si_code > 0 && (uintptr_t)si->si_addr - f->lo < f->len) {
        ucopy_cur = f->prev;
        pthread_sigmask(SIG_SETMASK, &((ucontext_t *)uc)->uc_sigmask, NULL);
        errno = saved;
        UCOPY_LONGJMP(f->env);
    }
    ucopy_chain(sig, si, uc);
    errno = saved;
}

static int ucopy_is_ours(const struct sigaction *a)
{
    return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == ucopy_handler;
}

/* fork(): ucopy_lock is a leaf held for two sigaction calls at most, so it
 * is quiesced (taken before fork, released in both processes). */
void ust_ucopy_fork_prepare(void)
{
    ust_lock(&ucopy_lock);
}

void ust_ucopy_fork_release(void)
{
    ust_unlock(&ucopy_lock);
}

unsigned long ust_ucopy_nchecks(void)
{
    return __atomic_load_n(&ucopy_nchecks, __ATOMIC_RELAXED);
}

void ust_ucopy_check(void)
{
    struct sigaction cur[2], sa;
    int mine[2];
    long long now = ust_now_ns();

    /* At most one look per UCOPY_RECHECK_NS once installed: the time is
     * read before the look and the next one allowed only after it, so an
     * open that starts UCOPY_RECHECK_NS after a handler was installed
     * always looks (or another look began after the install). */
    if (__atomic_load_n(&ucopy_installed, __ATOMIC_ACQUIRE) &&
        now < __atomic_load_n(&ucopy_next_check, __ATOMIC_RELAXED))
        return;
    __atomic_fetch_add(&ucopy_nchecks, 1, __ATOMIC_RELAXED);
    ust_lock(&ucopy_lock); /* ucopy_lock: the slots, one installer at a time */
    for (int i = 0; i < 2; i++) {
        sigaction(ucopy_sigs[i], NULL, &cur[i]);
        mine[i] = ucopy_is_ours(&cur[i]);
    }
    if (!mine[0] || !mine[1]) {
        int old = ucopy_slot, slot = (old + 1) % UCOPY_SLOTS;
        for (int i = 0; i < 2; i++)
            ucopy_prev[slot][i] = mine[i] ? ucopy_prev[old][i] : cur[i];
        __atomic_store_n(&ucopy_slot, slot, __ATOMIC_RELEASE);
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = ucopy_handler;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < 2; i++)
            if (!mine[i])
                sigaction(ucopy_sigs[i], &sa, NULL);
    }
    __atomic_store_n(&ucopy_installed, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&ucopy_next_check, now + UCOPY_RECHECK_NS, __ATOMIC_RELAXED);
    ust_unlock(&ucopy_lock);
}

/* ------------------------------------------------------------------------ */
/* The copies                                                               */
/* ------------------------------------------------------------------------ */

/* Addresses a user pointer can never have: NULL page, kernel half, wrap. */
static int bad_uaddr(const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p;
    if (a < 4096 || a >= USER_TOP)
        return 1;
    return a + len < a || a + len > USER_TOP;
}

#ifdef UCOPY_SANITIZED
UCOPY_NOSAN static void ucopy_bytes(void *dst, const void *src, size_t n)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
}
#else
static inline void ucopy_bytes(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif

/* Copy n bytes from src to dst, one of which is the user address user; with
 * back set, write them back to src (the user address) too.  0 or EFAULT. */
static int ucopy_run(void *dst, const void *src, size_t n, const void *user, int back)
{
    struct ucopy_frame fr;

    if (__builtin_expect(!__atomic_load_n(&ucopy_installed, __ATOMIC_ACQUIRE), 0))
        ust_ucopy_check();
    fr.prev = ucopy_cur;
    fr.lo = (uintptr_t)user;
    fr.len = n;
    if (UCOPY_SETJMP(fr.env) != 0)
        return EFAULT; /* the handler unlinked the frame */
    ucopy_cur = &fr;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ucopy_bytes(dst, src, n);
    if (back)
        ucopy_bytes((void *)(uintptr_t)src, dst, n);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ucopy_cur = fr.prev;
    return 0;
}

int ust_copyin(const void *uaddr, void *kaddr, size_t len)
{
    if (len == 0)
        return 0;
    if (bad_uaddr(uaddr, len))
        return EFAULT;
    return ucopy_run(kaddr, uaddr, len, uaddr, 0);
}

int ust_copyin_rw(void *uaddr, void *kaddr, size_t len)
{
    if (len == 0)
        return 0;
    if (bad_uaddr(uaddr, len))
        return EFAULT;
    return ucopy_run(kaddr, uaddr, len, uaddr, 1);
}

int ust_copyout(const void *kaddr, void *uaddr, size_t len)
{
    if (len == 0)
        return 0;
    if (bad_uaddr(uaddr, len))
        return EFAULT;
    return ucopy_run(uaddr, kaddr, len, uaddr, 0);
}

/* The public pair (ustreams.h): the same copies, for libraries layered on
 * the library (libxnet), which may use only the public API. */
int ustreams_copyin(const void *usrc, void *dst, size_t len)
{
    return ust_copyin(usrc, dst, len);
}

int ustreams_copyout(const void *src, void *udst, size_t len)
{
    return ust_copyout(src, udst, len);
}

/* The string loop: byte by byte, never past the NUL.  Returns the length, or
 * n if no NUL is in the first n bytes. */
UCOPY_NOSAN static size_t ucopy_str(char *dst, const char *src, size_t n)
{
    const volatile char *s = src;
    size_t i;
    for (i = 0; i < n; i++)
        if ((dst[i] = s[i]) == '\0')
            break;
    return i;
}

int ust_strncpy_in(const char *usrc, char *dst, size_t size, size_t *lenp)
{
    struct ucopy_frame fr;
    uintptr_t a = (uintptr_t)usrc;

    if (size == 0)
        return ENAMETOOLONG;
    if (a < 4096 || a >= USER_TOP)
        return EFAULT;
    size_t n = size < USER_TOP - a ? size : (size_t)(USER_TOP - a);
    if (__builtin_expect(!__atomic_load_n(&ucopy_installed, __ATOMIC_ACQUIRE), 0))
        ust_ucopy_check();
    fr.prev = ucopy_cur;
    fr.lo = a;
    fr.len = n;
    if (UCOPY_SETJMP(fr.env) != 0)
        return EFAULT;
    ucopy_cur = &fr;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    size_t len = ucopy_str(dst, usrc, n);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ucopy_cur = fr.prev;
    if (len == n)
        return n < size ? EFAULT : ENAMETOOLONG; /* ran to the end of user space */
    if (lenp)
        *lenp = len;
    return 0;
}
