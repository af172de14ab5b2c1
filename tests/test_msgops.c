/* SPDX-License-Identifier: MIT */
/*
 * test_msgops.c -- operations on whole messages (src/core/msgops.c):
 * dupmsg(9F), copyb(9F), copymsg(9F), linkb(9F), unlinkb(9F), rmvb(9F),
 * pullupmsg(9F), msgpullup(9F), adjmsg(9F), msgdsize(9F), msgsize, datamsg(9F),
 * pcmsg(9F), bmsgtype.
 *
 * Every case ends with no block outstanding (CHECK_NO_BLOCKS).
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "strcore.h"

/* A block of the given type holding the string s (no terminator). */
static mblk_t *mk(unsigned char type, const char *s)
{
    size_t n = strlen(s);
    mblk_t *mp = allocb(n, BPRI_MED);
    if (mp == NULL)
        return NULL;
    mp->b_datap->db_type = type;
    memcpy(mp->b_wptr, s, n);
    mp->b_wptr += n;
    return mp;
}

/* A message of up to 4 blocks, each "T:text" with T one of D (M_DATA),
 * P (M_PROTO), C (M_PCPROTO); NULL ends the list. */
static mblk_t *mkmsg(const char *b1, const char *b2, const char *b3, const char *b4)
{
    const char *spec[] = {b1, b2, b3, b4};
    mblk_t *head = NULL;
    for (int i = 0; i < 4 && spec[i] != NULL; i++) {
        unsigned char type = spec[i][0] == 'P' ? M_PROTO : spec[i][0] == 'C' ? M_PCPROTO : M_DATA;
        mblk_t *bp = mk(type, spec[i] + 2);
        if (head == NULL)
            head = bp;
        else
            linkb(head, bp);
    }
    return head;
}

/* Does block bp hold exactly the string s? */
static int holds(const mblk_t *bp, const char *s)
{
    size_t n = strlen(s);
    return bp != NULL && (size_t)(bp->b_wptr - bp->b_rptr) == n && memcmp(bp->b_rptr, s, n) == 0;
}

static int nblocks(const mblk_t *mp)
{
    int n = 0;
    for (; mp != NULL; mp = mp->b_cont)
        n++;
    return n;
}

static struct ustreams_blockstats stats(void)
{
    struct ustreams_blockstats st;
    ustreams_blockstats(&st);
    return st;
}

static atomic_int fr_calls;
static void fr_count(caddr_t arg)
{
    (void)arg;
    atomic_fetch_add(&fr_calls, 1);
}

/* NULL arguments: no crash, the documented result. */
static void test_null_args(void)
{
    CHECK(dupmsg(NULL) == NULL);
    CHECK(copyb(NULL) == NULL);
    CHECK(copymsg(NULL) == NULL);
    CHECK(unlinkb(NULL) == NULL);
    CHECK(rmvb(NULL, NULL) == (mblk_t *)-1);
    mblk_t *mp = mk(M_DATA, "x");
    CHECK(rmvb(NULL, mp) == (mblk_t *)-1);
    CHECK(rmvb(mp, NULL) == (mblk_t *)-1);
    linkb(NULL, mp);
    linkb(mp, NULL);
    CHECK(mp->b_cont == NULL);
    CHECK_EQ(pullupmsg(NULL, -1), 0);
    CHECK_EQ(pullupmsg(mp, -2), 0);
    CHECK(msgpullup(NULL, -1) == NULL);
    CHECK(msgpullup(mp, -2) == NULL);
    CHECK_EQ(adjmsg(NULL, 1), 0);
    CHECK_EQ(msgdsize(NULL), 0);
    CHECK_EQ(msgsize(NULL), 0);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* dupmsg(9F): every block dup'ed, the data shared. */
static void test_dupmsg(void)
{
    mblk_t *mp = mkmsg("P:ctl", "D:abc", "D:de", NULL);
    mblk_t *d = dupmsg(mp);
    if (!CHECK(d != NULL))
        return;
    CHECK_EQ(nblocks(d), 3);
    for (mblk_t *a = mp, *b = d; a != NULL; a = a->b_cont, b = b->b_cont) {
        CHECK(a != b);
        CHECK(a->b_datap == b->b_datap);
        CHECK_EQ(a->b_datap->db_ref, 2);
        CHECK(a->b_rptr == b->b_rptr && a->b_wptr == b->b_wptr);
    }
    freemsg(mp);
    CHECK(holds(d, "ctl") && holds(d->b_cont, "abc") && holds(d->b_cont->b_cont, "de"));
    CHECK_EQ(d->b_datap->db_ref, 1);
    freemsg(d);

    /* a failure part-way frees what was dup'ed */
    mp = mkmsg("D:a", "D:b", "D:c", NULL);
    struct ustreams_blockstats before = stats();
    ust_fail_allocs_after(2, 1);
    CHECK(dupmsg(mp) == NULL);
    ustreams_fail_allocs(0);
    CHECK_EQ(stats().mblks, before.mblks);
    CHECK_EQ(mp->b_datap->db_ref, 1);
    CHECK_EQ(mp->b_cont->b_datap->db_ref, 1);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* copyb(9F) and copymsg(9F): private copies of the same size, offset, type,
 * band and flags. */
static void test_copy(void)
{
    mblk_t *mp = allocb(64, BPRI_MED);
    memcpy(mp->b_wptr, "0123456789", 10);
    mp->b_wptr += 10;
    mp->b_rptr += 3;
    mp->b_datap->db_type = M_PCPROTO;
    mp->b_band = 5;
    mp->b_flag = MSGDELIM;
    mblk_t *c = copyb(mp);
    if (!CHECK(c != NULL))
        return;
    CHECK(c->b_datap != mp->b_datap);
    CHECK_EQ(c->b_datap->db_ref, 1);
    CHECK_EQ(c->b_datap->db_lim - c->b_datap->db_base, 64);
    CHECK_EQ(c->b_rptr - c->b_datap->db_base, 3);
    CHECK(holds(c, "3456789"));
    CHECK_EQ(c->b_datap->db_type, M_PCPROTO);
    CHECK_EQ(c->b_band, 5);
    CHECK_EQ(c->b_flag, MSGDELIM);
    c->b_rptr[0] = 'X';
    CHECK(holds(mp, "3456789")); /* the original is untouched */
    freeb(c);

    /* copyb of an esballoc block: a plain copy, the free routine stays with
     * the original */
    static unsigned char ext[8] = "extbuf!";
    frtn_t fr = {fr_count, NULL};
    atomic_store(&fr_calls, 0);
    mblk_t *e = esballoc(ext, sizeof(ext), BPRI_MED, &fr);
    e->b_wptr += 7;
    c = copyb(e);
    CHECK(c != NULL && c->b_datap->db_frtnp == NULL && holds(c, "extbuf!"));
    freeb(e);
    CHECK_EQ(atomic_load(&fr_calls), 1);
    freeb(c);
    CHECK_EQ(atomic_load(&fr_calls), 1);

    /* copymsg keeps each block's type */
    mp->b_cont = mkmsg("P:pp", "D:dd", NULL, NULL);
    mblk_t *cm = copymsg(mp);
    if (CHECK(cm != NULL)) {
        CHECK_EQ(nblocks(cm), 3);
        CHECK(holds(cm, "3456789") && holds(cm->b_cont, "pp") && holds(cm->b_cont->b_cont, "dd"));
        CHECK_EQ(cm->b_cont->b_datap->db_type, M_PROTO);
        CHECK_EQ(cm->b_cont->b_cont->b_datap->db_type, M_DATA);
        for (mblk_t *a = mp, *b = cm; a != NULL; a = a->b_cont, b = b->b_cont)
            CHECK(a->b_datap != b->b_datap);
        freemsg(cm);
    }

    /* injected failures: at the first, second and third block */
    struct ustreams_blockstats before = stats();
    ustreams_fail_allocs(1);
    CHECK(copyb(mp) == NULL);
    for (long skip = 0; skip < 3; skip++) {
        ust_fail_allocs_after(skip, 1);
        CHECK(copymsg(mp) == NULL);
    }
    ustreams_fail_allocs(0);
    CHECK_EQ(stats().mblks, before.mblks);
    CHECK_EQ(stats().dblks, before.dblks);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* linkb(9F), unlinkb(9F), rmvb(9F). */
static void test_link(void)
{
    mblk_t *a = mk(M_DATA, "a"), *b = mk(M_DATA, "b"), *c = mk(M_DATA, "c");
    linkb(a, b);
    linkb(a, c);
    CHECK(a->b_cont == b && b->b_cont == c && c->b_cont == NULL);

    mblk_t *x = mk(M_DATA, "x");
    CHECK(rmvb(a, x) == (mblk_t *)-1); /* not in the message */
    CHECK(rmvb(a, b) == a);            /* middle */
    CHECK(a->b_cont == c && b->b_cont == NULL);
    CHECK(rmvb(a, c) == a); /* tail */
    CHECK(a->b_cont == NULL);
    linkb(a, b);
    CHECK(rmvb(a, a) == b); /* head: the rest is the message */
    CHECK(a->b_cont == NULL);
    CHECK(rmvb(b, b) == NULL); /* the only block */

    linkb(a, b);
    linkb(a, c);
    mblk_t *rest = unlinkb(a);
    CHECK(rest == b && a->b_cont == NULL && b->b_cont == c);
    CHECK(unlinkb(a) == NULL);
    freeb(a);
    freemsg(rest);
    freeb(x);
    CHECK_NO_BLOCKS();
}

/* pullupmsg(9F) with len -1 across three M_DATA blocks. */
static void test_pullup_all(void)
{
    mblk_t *mp = mkmsg("D:abc", "D:defg", "D:hi", NULL);
    mp->b_band = 3;
    mp->b_flag = MSGMARK;
    dblk_t *old = mp->b_datap;
    mblk_t *self = mp;
    CHECK_EQ(pullupmsg(mp, -1), 1);
    CHECK(mp == self);
    CHECK(mp->b_datap != old);
    CHECK(holds(mp, "abcdefghi"));
    CHECK(mp->b_cont == NULL);
    CHECK_EQ(mp->b_band, 3);
    CHECK_EQ(mp->b_flag, MSGMARK);
    CHECK_EQ(mp->b_datap->db_ref, 1);
    CHECK_EQ(mp->b_datap->db_type, M_DATA);
    CHECK(mp->b_rptr == mp->b_datap->db_base);
    CHECK_EQ((uintptr_t)mp->b_rptr % sizeof(long), 0);
    CHECK_EQ(stats().mblks, 1); /* the emptied blocks were freed */
    CHECK_EQ(stats().dblks, 1);
    CHECK_EQ(stats().bytes, 9);
    /* now contiguous and aligned: nothing changes */
    old = mp->b_datap;
    CHECK_EQ(pullupmsg(mp, -1), 1);
    CHECK(mp->b_datap == old);
    CHECK_EQ(pullupmsg(mp, 9), 1);
    CHECK(mp->b_datap == old);
    CHECK_EQ(pullupmsg(mp, 10), 0);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* pullupmsg(9F) pulls up only the leading run of blocks of the first type. */
static void test_pullup_mixed(void)
{
    mblk_t *mp = mkmsg("P:ab", "P:cd", "D:ef", "D:gh");
    mblk_t *data = mp->b_cont->b_cont;
    CHECK_EQ(pullupmsg(mp, 5), 0); /* only 4 bytes of M_PROTO */
    CHECK(holds(mp, "ab") && holds(mp->b_cont, "cd") && mp->b_cont->b_cont == data);
    CHECK_EQ(pullupmsg(mp, -1), 1);
    CHECK(holds(mp, "abcd"));
    CHECK_EQ(mp->b_datap->db_type, M_PROTO);
    CHECK(mp->b_cont == data && holds(data, "ef") && holds(data->b_cont, "gh"));
    CHECK_EQ(msgsize(mp), 8);
    freemsg(mp);

    /* a part of a block: its remainder stays in place */
    mp = mkmsg("D:abc", "D:defg", "D:hi", NULL);
    mblk_t *second = mp->b_cont, *third = second->b_cont;
    CHECK_EQ(pullupmsg(mp, 5), 1);
    CHECK(holds(mp, "abcde"));
    CHECK(mp->b_cont == second && holds(second, "fg") && second->b_cont == third);
    /* exactly up to a block boundary: that block is freed */
    CHECK_EQ(pullupmsg(mp, 7), 1);
    CHECK(holds(mp, "abcdefg") && mp->b_cont == third);
    freemsg(mp);

    /* len not above the first block, but the block is misaligned: the whole
     * first block is pulled up to an aligned buffer */
    mp = mkmsg("D:xabcdef", "D:gh", NULL, NULL);
    mp->b_rptr++;
    CHECK_EQ(pullupmsg(mp, 2), 1);
    CHECK(holds(mp, "abcdef") && holds(mp->b_cont, "gh"));
    CHECK_EQ((uintptr_t)mp->b_rptr % sizeof(long), 0);
    freemsg(mp);

    /* zero-length blocks inside the run */
    mp = mkmsg("D:ab", "D:", "D:cd", NULL);
    CHECK_EQ(pullupmsg(mp, -1), 1);
    CHECK(holds(mp, "abcd") && mp->b_cont == NULL);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* pullupmsg(9F) of blocks whose data is shared, or external, or when memory
 * runs out. */
static void test_pullup_shared(void)
{
    /* the first block has a dup: the dup keeps the old data */
    for (int order = 0; order < 2; order++) {
        mblk_t *mp = mkmsg("D:abc", "D:def", NULL, NULL);
        mblk_t *dup = dupb(mp);
        CHECK_EQ(pullupmsg(mp, -1), 1);
        CHECK(holds(mp, "abcdef") && holds(dup, "abc"));
        CHECK_EQ(dup->b_datap->db_ref, 1);
        mblk_t *dup2 = dupb(mp); /* a dup of the re-pointed msgb */
        CHECK(dup2 != NULL && dup2->b_datap == mp->b_datap);
        if (order == 0) {
            freemsg(mp);
            freeb(dup);
        } else {
            freeb(dup);
            freemsg(mp);
        }
        CHECK(holds(dup2, "abcdef"));
        freeb(dup2);
        CHECK_NO_BLOCKS();
    }

    /* an esballoc first block: its free routine runs when pullupmsg lets go */
    static unsigned char ext[4] = "ext";
    frtn_t fr = {fr_count, NULL};
    atomic_store(&fr_calls, 0);
    mblk_t *mp = esballoc(ext, 3, BPRI_MED, &fr);
    mp->b_wptr += 3;
    linkb(mp, mk(M_DATA, "ra"));
    CHECK_EQ(pullupmsg(mp, -1), 1);
    CHECK_EQ(atomic_load(&fr_calls), 1);
    CHECK(holds(mp, "extra") && mp->b_datap->db_frtnp == NULL);
    freemsg(mp);
    CHECK_EQ(atomic_load(&fr_calls), 1);

    /* out of memory: the message is unchanged */
    mp = mkmsg("D:abc", "D:def", NULL, NULL);
    dblk_t *old = mp->b_datap;
    mblk_t *second = mp->b_cont;
    ustreams_fail_allocs(1);
    CHECK_EQ(pullupmsg(mp, -1), 0);
    CHECK(mp->b_datap == old && mp->b_cont == second);
    CHECK(holds(mp, "abc") && holds(second, "def"));
    CHECK_EQ(pullupmsg(mp, -1), 1);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* msgpullup(9F): a new message, the original untouched. */
static void test_msgpullup(void)
{
    mblk_t *mp = mkmsg("P:ab", "P:cde", "D:fg", "D:hi");
    mp->b_band = 2;
    mblk_t *blk[4];
    dblk_t *db[4];
    int i = 0;
    for (mblk_t *bp = mp; bp != NULL; bp = bp->b_cont, i++) {
        blk[i] = bp;
        db[i] = bp->b_datap;
    }
    struct ustreams_blockstats before = stats();

    mblk_t *n = msgpullup(mp, -1);
    if (CHECK(n != NULL)) {
        CHECK(holds(n, "abcde"));
        CHECK_EQ(n->b_datap->db_type, M_PROTO);
        CHECK_EQ(n->b_band, 2);
        CHECK_EQ(nblocks(n), 3);
        CHECK(holds(n->b_cont, "fg") && holds(n->b_cont->b_cont, "hi"));
        CHECK(n->b_cont != blk[2] && n->b_cont->b_datap != db[2]); /* copied */
        CHECK_EQ(n->b_cont->b_datap->db_type, M_DATA);
        freemsg(n);
    }
    n = msgpullup(mp, 3); /* a part of the second block */
    if (CHECK(n != NULL)) {
        CHECK(holds(n, "abc"));
        CHECK(holds(n->b_cont, "de"));
        CHECK_EQ(n->b_cont->b_datap->db_type, M_PROTO);
        CHECK(holds(n->b_cont->b_cont, "fg"));
        CHECK_EQ(nblocks(n), 4);
        CHECK_EQ(msgsize(n), msgsize(mp));
        freemsg(n);
    }
    CHECK(msgpullup(mp, 6) == NULL); /* more than the M_PROTO run */
    n = msgpullup(mp, 5);
    CHECK(n != NULL && holds(n, "abcde") && nblocks(n) == 3);
    freemsg(n);

    /* injected failures at every allocation: NULL, nothing leaks */
    for (long skip = 0; skip < 4; skip++) {
        ust_fail_allocs_after(skip, 1);
        n = msgpullup(mp, 3);
        ustreams_fail_allocs(0);
        CHECK(n == NULL);
    }
    CHECK_EQ(stats().mblks, before.mblks);
    CHECK_EQ(stats().dblks, before.dblks);

    /* the original is untouched */
    i = 0;
    for (mblk_t *bp = mp; bp != NULL; bp = bp->b_cont, i++)
        CHECK(bp == blk[i] && bp->b_datap == db[i]);
    CHECK(holds(mp, "ab") && holds(mp->b_cont, "cde"));
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* adjmsg(9F) from the head (len > 0). */
static void test_adjmsg_head(void)
{
    mblk_t *mp = mkmsg("D:abc", "D:defg", "D:hi", NULL);
    CHECK_EQ(adjmsg(mp, 10), 0); /* 9 bytes only: unchanged */
    CHECK(holds(mp, "abc") && nblocks(mp) == 3);
    CHECK_EQ(adjmsg(mp, 0), 1);
    CHECK_EQ(msgsize(mp), 9);
    CHECK_EQ(adjmsg(mp, 2), 1);
    CHECK(holds(mp, "c") && nblocks(mp) == 3);
    CHECK_EQ(adjmsg(mp, 1), 1); /* exactly the first block: it stays, empty */
    CHECK(holds(mp, "") && holds(mp->b_cont, "defg") && nblocks(mp) == 3);
    CHECK_EQ(adjmsg(mp, 4), 1); /* exactly the second block: freed */
    CHECK(holds(mp, "") && holds(mp->b_cont, "hi") && nblocks(mp) == 2);
    CHECK_EQ(adjmsg(mp, 1), 1);
    CHECK(holds(mp->b_cont, "i"));
    CHECK_EQ(adjmsg(mp, 2), 0);
    CHECK_EQ(adjmsg(mp, 1), 1); /* everything */
    CHECK(holds(mp, "") && mp->b_cont == NULL);
    freemsg(mp);

    mp = mkmsg("D:abc", "D:defg", "D:hi", NULL);
    CHECK_EQ(adjmsg(mp, 9), 1);
    CHECK(holds(mp, "") && mp->b_cont == NULL);
    CHECK_EQ(stats().mblks, 1);
    freemsg(mp);

    /* only the leading run */
    mp = mkmsg("P:ab", "D:cdef", NULL, NULL);
    CHECK_EQ(adjmsg(mp, 3), 0);
    CHECK(holds(mp, "ab") && holds(mp->b_cont, "cdef"));
    CHECK_EQ(adjmsg(mp, 2), 1);
    CHECK(holds(mp, "") && holds(mp->b_cont, "cdef"));
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* adjmsg(9F) from the tail (len < 0). */
static void test_adjmsg_tail(void)
{
    mblk_t *mp = mkmsg("D:abc", "D:defg", "D:hi", NULL);
    CHECK_EQ(adjmsg(mp, -10), 0);
    CHECK(nblocks(mp) == 3 && msgsize(mp) == 9);
    CHECK_EQ(adjmsg(mp, -1), 1);
    CHECK(holds(mp->b_cont->b_cont, "h"));
    CHECK_EQ(adjmsg(mp, -1), 1); /* exactly the last block: freed */
    CHECK(nblocks(mp) == 2 && holds(mp->b_cont, "defg"));
    CHECK_EQ(adjmsg(mp, -5), 1); /* across a boundary */
    CHECK(holds(mp, "ab") && mp->b_cont == NULL);
    CHECK_EQ(adjmsg(mp, -2), 1); /* the first block stays, empty */
    CHECK(holds(mp, "") && mp->b_cont == NULL);
    CHECK_EQ(adjmsg(mp, -1), 0);
    freemsg(mp);

    mp = mkmsg("D:abc", "D:defg", "D:hi", NULL);
    CHECK_EQ(adjmsg(mp, -6), 1); /* exactly to the end of the first block */
    CHECK(holds(mp, "abc") && mp->b_cont == NULL);
    CHECK_EQ(stats().mblks, 1);
    freemsg(mp);

    /* only the leading run: the M_DATA after the M_PROTO run is kept */
    mp = mkmsg("P:ab", "P:cd", "D:efg", NULL);
    mblk_t *data = mp->b_cont->b_cont;
    CHECK_EQ(adjmsg(mp, -5), 0);
    CHECK_EQ(adjmsg(mp, -3), 1);
    CHECK(holds(mp, "a") && mp->b_cont == data && holds(data, "efg"));
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* msgdsize(9F) counts M_DATA only; msgsize counts every block. */
static void test_sizes(void)
{
    mblk_t *mp = mkmsg("P:0123456789", "D:abcde", "C:xy", "D:1234567");
    CHECK_EQ(msgdsize(mp), 12);
    CHECK_EQ(msgsize(mp), 24);
    mp->b_cont->b_rptr += 2;
    CHECK_EQ(msgdsize(mp), 10);
    CHECK_EQ(msgsize(mp), 22);
    CHECK_EQ(bmsgtype(mp), M_PROTO);
    CHECK_EQ(bmsgtype(mp->b_cont), M_DATA);
    CHECK_EQ(bmsgtype(NULL), M_DATA);
    freemsg(mp);
    CHECK_NO_BLOCKS();
}

/* datamsg(9F) and pcmsg(9F) over every type value. */
static void test_types(void)
{
    for (int t = 0; t < 256; t++) {
        int data = t == M_DATA || t == M_PROTO || t == M_PCPROTO || t == M_DELAY;
        CHECK_EQ(datamsg((unsigned char)t), data);
        CHECK_EQ(pcmsg((unsigned char)t), t >= QPCTL);
    }
    CHECK_EQ(pcmsg(M_IOCACK), 1);
    CHECK_EQ(pcmsg(M_IOCTL), 0);
}

int main(void)
{
    test_null_args();
    test_dupmsg();
    test_copy();
    test_link();
    test_pullup_all();
    test_pullup_mixed();
    test_pullup_shared();
    test_msgpullup();
    test_adjmsg_head();
    test_adjmsg_tail();
    test_sizes();
    test_types();
    return CHECK_RESULT();
}
