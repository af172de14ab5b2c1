/* SPDX-License-Identifier: MIT */
/*
 * autopush -- configure the list of modules pushed automatically on a
 * device (autopush(1M)), through the sad driver (sad(7)).
 *
 *   ustreams autopush -f file                  configure from a file
 *   ustreams autopush -g -M major -m minor     print the configuration of a device
 *   ustreams autopush -r -M major -m minor     remove it
 *   ustreams autopush -a                       (ustreams) print every configured entry
 *
 * The autopush table is the user's: what -f configures (through SAD_SAP)
 * applies to the streams every ustreams process of the user opens
 * afterwards, until -r removes it (the table lives in the runtime directory,
 * docs/ADMIN.md "The sad driver and autopush").  One run may carry several
 * operations, done in order:
 *   ustreams autopush -f /etc/iu.ap -g -M echo -m 0 -a
 * -a lists the whole table (the driver by name; major 0 for a driver this
 * process does not have).
 *
 * File format (autopush(1M)): one device per line,
 *     major minor lastminor module...
 * major is a driver name or number; minor -1 means every minor (SAP_ALL);
 * lastminor 0 means the one minor (SAP_ONE), otherwise the range
 * minor..lastminor (SAP_RANGE); then 1..MAXAPUSH modules, pushed in that
 * order.  '#' starts a comment; blank lines are ignored.  A bad line is
 * reported (file:line: reason) and the others are still applied; a module
 * that does not exist is named ("module 'X': no such STREAMS module").
 *
 * Exit status: 0 all operations succeeded, 1 one failed, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ddi.h>
#include <sys/sad.h>
#include <sys/strconf.h>
#include <ustreams.h>

#include "autopush.h"
#include "strcore.h"
#include "commands.h"

static const char *prog = "ustreams autopush";

void ust_usage_autopush(FILE *f)
{
    fprintf(f,
            "usage: %s -f file | -g -M major -m minor | -r -M major -m minor | -a  [...]\n"
            "  major: driver name or number; minor: number (-1: all minors)\n",
            prog);
}

/* A major given as a driver name or a number: the number, or 0 (unknown). */
static major_t parse_major(const char *s)
{
    struct ust_modent *e;
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (*s != '\0' && *end == '\0' && errno == 0 && s[0] != '-')
        return v <= L_MAXMAJ ? (major_t)v : L_MAXMAJ + 1;
    e = ust_reg_find(s, UST_DRIVER);
    if (e == NULL)
        return 0;
    v = e->major;
    ust_reg_rele(e);
    return (major_t)v;
}

/* A minor: 0..L_MAXMIN, or -1; returns 0 on success. */
static int parse_minor(const char *s, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || v < -1 || v > L_MAXMIN)
        return -1;
    *out = v;
    return 0;
}

static const char *driver_name(major_t major)
{
    struct cdevsw *c = cdev_lookup_major(major);
    return c != NULL ? c->d_name : "?";
}

static void print_header(void)
{
    printf("%10s %10s %10s %-8s  %s\n", "Major", "Minor", "Lastminor", "Driver", "Modules");
}

static void print_entry(const struct strapush *s, const char *drv, void *arg)
{
    char minor[16], last[16];

    (void)arg;
    if (s->sap_cmd == SAP_ALL)
        strcpy(minor, "ALL");
    else
        snprintf(minor, sizeof(minor), "%u", s->sap_minor);
    if (s->sap_cmd == SAP_RANGE)
        snprintf(last, sizeof(last), "%u", s->sap_lastminor);
    else
        strcpy(last, "-");
    printf("%10u %10s %10s %-8s ", s->sap_major, minor, last,
           drv != NULL ? drv : driver_name(s->sap_major));
    for (uint_t i = 0; i < s->sap_npush; i++)
        printf(" %s", s->sap_list[i]);
    printf("\n");
}

/* Split line into at most max words (in place); returns the count. */
static int split(char *line, char **w, int max)
{
    int n = 0;
    char *hash = strchr(line, '#');

    if (hash != NULL)
        *hash = '\0';
    for (char *t = strtok(line, " \t\r\n"); t != NULL; t = strtok(NULL, " \t\r\n")) {
        if (n == max)
            return max + 1;
        w[n++] = t;
    }
    return n;
}

/* One line of a configuration file into *sap; NULL or the reason. */
static const char *parse_line(char **w, int n, struct strapush *sap)
{
    long minor, last;

    memset(sap, 0, sizeof(*sap));
    if (n < 4)
        return "expected: major minor lastminor module...";
    if (n > 3 + MAXAPUSH)
        return "too many modules";
    sap->sap_major = parse_major(w[0]);
    if (sap->sap_major == 0)
        return "unknown driver";
    if (parse_minor(w[1], &minor) != 0 || parse_minor(w[2], &last) != 0 || last < 0)
        return "bad minor or lastminor";
    if (minor == -1) {
        sap->sap_cmd = SAP_ALL;
    } else if (last == 0) {
        sap->sap_cmd = SAP_ONE;
        sap->sap_minor = (minor_t)minor;
    } else {
        sap->sap_cmd = SAP_RANGE;
        sap->sap_minor = (minor_t)minor;
        sap->sap_lastminor = (minor_t)last;
    }
    sap->sap_npush = (uint_t)(n - 3);
    for (int i = 3; i < n; i++) {
        if (strlen(w[i]) > FMNAMESZ)
            return "module name too long";
        strcpy(sap->sap_list[i - 3], w[i]);
    }
    return NULL;
}

/* Why SAD_SAP refused sap with EINVAL, when the cause is a module name:
 * each name is checked alone with SAD_VML (sad(7)), and the first that is
 * not a module, registered or loadable, is named in msg ("module 'X': no
 * such STREAMS module").  Otherwise strerror(EINVAL): the major, minors or
 * count were refused.  Returns msg or a static string. */
static const char *sap_einval(int sad, const struct strapush *sap, char *msg, size_t len)
{
    for (uint_t i = 0; i < sap->sap_npush && i < MAXAPUSH; i++) {
        struct str_mlist one;
        struct str_list l = {1, &one};
        memset(&one, 0, sizeof(one));
        memcpy(one.l_name, sap->sap_list[i], sizeof(one.l_name));
        if (strm_ioctl(sad, SAD_VML, &l) == 1) {
            snprintf(msg, len, "module '%s': no such STREAMS module (ustreams scls lists them)",
                     one.l_name);
            return msg;
        }
    }
    return strerror(EINVAL);
}

/* -f file: every line through SAD_SAP.  Returns 0 or 1. */
static int do_file(int sad, const char *file)
{
    char line[1024], *w[4 + MAXAPUSH];
    struct strapush sap;
    const char *why;
    char msg[FMNAMESZ + 80];
    int lineno = 0, status = 0, n;
    FILE *f = fopen(file, "r");

    if (f == NULL) {
        fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(errno));
        return 1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        n = split(line, w, 3 + MAXAPUSH);
        if (n == 0)
            continue;
        why = n > 3 + MAXAPUSH ? "too many modules" : parse_line(w, n, &sap);
        if (why == NULL && strm_ioctl(sad, SAD_SAP, &sap) < 0)
            why = errno == EINVAL ? sap_einval(sad, &sap, msg, sizeof(msg)) : strerror(errno);
        if (why != NULL) {
            fprintf(stderr, "%s: %s:%d: %s\n", prog, file, lineno, why);
            status = 1;
        }
    }
    fclose(f);
    return status;
}

/* -g / -r on (major, minor).  Returns 0 or 1. */
static int do_device(int sad, int get, const char *smajor, const char *sminor)
{
    struct strapush sap;
    long minor;

    memset(&sap, 0, sizeof(sap));
    sap.sap_major = parse_major(smajor);
    if (sap.sap_major == 0 || parse_minor(sminor, &minor) != 0) {
        fprintf(stderr, "%s: bad major or minor: %s %s\n", prog, smajor, sminor);
        return 1;
    }
    sap.sap_minor = minor < 0 ? 0 : (minor_t)minor;
    sap.sap_cmd = SAP_CLEAR;
    if (strm_ioctl(sad, get ? SAD_GAP : SAD_SAP, &sap) < 0) {
        fprintf(stderr, "%s: major %s minor %s: %s\n", prog, smajor, sminor,
                errno == ENODEV ? "no autopush configuration" : strerror(errno));
        return 1;
    }
    if (get) {
        print_header();
        print_entry(&sap, NULL, NULL);
    }
    return 0;
}

int ust_cmd_autopush(int argc, char **argv)
{
    int sad, status = 0, i;

    if (argc < 2) {
        ust_usage_autopush(stderr);
        return 2;
    }
    /* check the whole command line before doing anything */
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0 && i + 1 < argc) {
            i++;
        } else if ((strcmp(argv[i], "-g") == 0 || strcmp(argv[i], "-r") == 0) && i + 4 < argc &&
                   strcmp(argv[i + 1], "-M") == 0 && strcmp(argv[i + 3], "-m") == 0) {
            i += 4;
        } else if (strcmp(argv[i], "-a") != 0) {
            ust_usage_autopush(stderr);
            return 2;
        }
    }
    sad = strm_open("/dev/streams/sad", O_RDWR);
    if (sad < 0) {
        fprintf(stderr, "%s: /dev/streams/sad: %s\n", prog, strerror(errno));
        return 1;
    }
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0) {
            status |= do_file(sad, argv[++i]);
        } else if (strcmp(argv[i], "-a") == 0) {
            print_header();
            if (ust_autopush_foreach(print_entry, NULL) < 0)
                status = 1;
        } else {
            status |= do_device(sad, argv[i][1] == 'g', argv[i + 2], argv[i + 4]);
            i += 4;
        }
    }
    fflush(stdout);
    strm_close(sad);
    return status;
}
