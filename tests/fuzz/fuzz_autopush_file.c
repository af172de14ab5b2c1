/* SPDX-License-Identifier: MIT */
/*
 * fuzz_autopush_file.c -- fuzz target: the user's autopush table file
 * (<rundir>/autopush, src/procs/xautopush.c), written by another process of
 * the user -- hostile input.
 *
 * The input is the file's bytes.  ust_xap_parse must refuse it (with a
 * reason) or accept entries that keep every promise of the format: driver
 * and module names of allowed characters and lengths, SAP_ONE / SAP_RANGE /
 * SAP_ALL with minors in range (a range's last above its first), 1 ..
 * MAXAPUSH modules, no two entries of a driver sharing a minor, at most the
 * limit of entries.  An accepted table is formatted again and parsed again:
 * the same entries (the writer's and the reader's views agree).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xautopush.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static int name_ok(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n < 1 || n > max || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

static minor_t first_of(const struct ust_xap_ent *e)
{
    return e->cmd == SAP_ALL ? 0 : e->minor;
}

static minor_t last_of(const struct ust_xap_ent *e)
{
    return e->cmd == SAP_ALL ? L_MAXMIN : e->cmd == SAP_RANGE ? e->lastminor : e->minor;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ust_xap_ent a[UST_XAP_MAXENT], b[UST_XAP_MAXENT];
    static char text[UST_XAP_MAXSIZE + 1];
    char why[160];
    int n = -1, m = -1;

    why[0] = '\0';
    if (ust_xap_parse((const char *)data, size, a, UST_XAP_MAXENT, &n, why, sizeof(why)) != 0) {
        if (why[0] == '\0')
            abort(); /* a refusal always says why */
        return 0;
    }
    if (n < 0 || n > UST_XAP_MAXENT)
        abort();
    for (int i = 0; i < n; i++) {
        const struct ust_xap_ent *e = &a[i];
        if (!name_ok(e->drv, UST_XAP_DRVSZ) || e->npush < 1 || e->npush > MAXAPUSH)
            abort();
        for (unsigned k = 0; k < e->npush; k++)
            if (!name_ok(e->list[k], FMNAMESZ))
                abort();
        if (e->cmd == SAP_ALL && (e->minor != 0 || e->lastminor != 0))
            abort();
        if (e->cmd == SAP_ONE && (e->minor > L_MAXMIN || e->lastminor != 0))
            abort();
        if (e->cmd == SAP_RANGE && (e->lastminor <= e->minor || e->lastminor > L_MAXMIN))
            abort();
        if (e->cmd != SAP_ALL && e->cmd != SAP_ONE && e->cmd != SAP_RANGE)
            abort();
        for (int j = 0; j < i; j++)
            if (strcmp(a[j].drv, e->drv) == 0 && first_of(&a[j]) <= last_of(e) &&
                first_of(e) <= last_of(&a[j]))
                abort();
    }
    /* the writer's text of the table reads back as the same table */
    int len = ust_xap_format(a, n, text, sizeof(text));
    if (len < 0)
        return 0; /* longer once normalised: the writer refuses it (ENOSPC) */
    if (ust_xap_parse(text, (size_t)len, b, UST_XAP_MAXENT, &m, why, sizeof(why)) != 0 || m != n)
        abort();
    for (int i = 0; i < n; i++)
        if (strcmp(a[i].drv, b[i].drv) != 0 || a[i].cmd != b[i].cmd || a[i].minor != b[i].minor ||
            a[i].lastminor != b[i].lastminor || a[i].npush != b[i].npush ||
            memcmp(a[i].list, b[i].list, sizeof(a[i].list)) != 0)
            abort();
    return 0;
}
