/* SPDX-License-Identifier: MIT */
/*
 * xautopush.h -- the user's autopush table, shared by every ustreams process
 * of the user through a file of the runtime directory (xautopush.c;
 * docs/ADMIN.md "The sad driver and autopush", docs/SECURITY.md).
 *
 * The file <rundir>/autopush is text: a first line "# ustreams autopush 1",
 * then one entry a line, the autopush(1M) format with the driver by name:
 *     DRIVER MINOR LASTMINOR MODULE...
 * MINOR -1 every minor (SAP_ALL), LASTMINOR 0 one minor (SAP_ONE), else
 * the range MINOR..LASTMINOR (SAP_RANGE); 1..MAXAPUSH modules.  Names, not
 * majors: a major is the number a process's registry gave the driver, and
 * another process may number differently.
 * The file is written whole (a temporary file renamed over it) under the
 * flock of <rundir>/autopush.lock, by src/admin/autopush.c; read by every
 * process when it opens a driver, again only when lstat shows it changed.
 */
#ifndef UST_XAUTOPUSH_H
#define UST_XAUTOPUSH_H

#include <stddef.h>
#include <sys/ddi.h>
#include <sys/sad.h>
#include <sys/stat.h>
#include <sys/stream.h>
#include <sys/types.h>

#define UST_XAP_MAXENT  1024    /* entries a file may hold */
#define UST_XAP_MAXSIZE 65536   /* bytes a file may hold */
#define UST_XAP_HEADER  "# ustreams autopush 1\n"
#define UST_XAP_DRVSZ   31      /* longest driver name (UST_DRVNAMESZ) */

/* One entry: the driver by name, the rest as struct strapush. */
struct ust_xap_ent {
    char drv[UST_XAP_DRVSZ + 1];
    unsigned cmd;                 /* SAP_ONE, SAP_RANGE or SAP_ALL */
    minor_t minor, lastminor;     /* 0 and 0 for SAP_ALL; lastminor 0 for SAP_ONE */
    unsigned npush;               /* 1 .. MAXAPUSH */
    char list[MAXAPUSH][FMNAMESZ + 1];
};

/* What lstat said of the file when it was last read (a change of any field
 * means read it again).  present 0: no file. */
struct ust_xap_sig {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
};

/*
 * ust_xap_parse -- parse n bytes of a file, hostile input: the header line,
 *   then entries; every line ends with '\n'; words separated by one space;
 *   names of [A-Za-z0-9_.-] not starting with '.' or '-', 1..UST_XAP_DRVSZ
 *   characters for the driver, 1..FMNAMESZ for a module; numbers plain decimal (no sign but MINOR -1), minors <= L_MAXMIN, a
 *   range's last above its first; 1..MAXAPUSH modules; at most max entries;
 *   two entries of a driver never share a minor.
 *   Fills ents[0..*count).  Returns 0, or -1 with why (size whylen) saying
 *   which line and what (the whole file is then refused).
 *   Any thread; no state.  Fuzzed by tests/fuzz/fuzz_autopush_file.c.
 */
int ust_xap_parse(const char *buf, size_t n, struct ust_xap_ent *ents, int max, int *count,
                  char *why, size_t whylen);

/*
 * ust_xap_format -- the file's text for ents[0..n) (valid entries) into buf
 *   (cap bytes).  Returns the length, or -1 if it does not fit.
 */
int ust_xap_format(const struct ust_xap_ent *ents, int n, char *buf, size_t cap);

/*
 * ust_xap_available -- is there a runtime directory (the table is then the
 *   user's; without one, each process keeps its own)?  Resolved once.
 */
int ust_xap_available(void);

/*
 * ust_xap_load -- the table in the file, if it changed since *sig.
 *   force: read it even if lstat shows no change.
 *   Returns 1 (unchanged: nothing filled), or 0 with *ents (malloc'ed, the
 *   caller frees; NULL when *n is 0) and *n filled and *sig updated: no
 *   file, or a refused one, give 0 entries.  A refused file (a symbolic
 *   link, not a regular file, another owner, group or other permissions,
 *   above UST_XAP_MAXSIZE, a parse error) is reported once with cmn_err
 *   (CE_WARN, the reason), and ignored until it changes.
 *   Returns -1 without a runtime directory, or with no memory (*sig kept).
 *   Context: blocking (file system calls); the caller serialises calls.
 */
int ust_xap_load(struct ust_xap_sig *sig, int force, struct ust_xap_ent **ents, int *n);

/*
 * ust_xap_lock / ust_xap_unlock -- the writers' lock: flock of
 *   <rundir>/autopush.lock (never followed through a link), tried for at
 *   most 2 s.  Returns the descriptor, or -1 (errno: ETIMEDOUT when another
 *   process held it that long, or the open's error).
 */
int ust_xap_lock(void);
void ust_xap_unlock(int fd);

/*
 * ust_xap_store -- write ents[0..n) as the file (n 0: remove it), atomically
 *   (a temporary file, 0600, renamed over it); *sig becomes the new file's.
 *   Call with ust_xap_lock held.  Returns 0 or an errno.
 */
int ust_xap_store(const struct ust_xap_ent *ents, int n, struct ust_xap_sig *sig);

#endif /* UST_XAUTOPUSH_H */
