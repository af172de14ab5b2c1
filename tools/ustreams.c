/* SPDX-License-Identifier: MIT */
/*
 * ustreams.c -- the `ustreams` command: the tools as subcommands.
 *
 *   ustreams SUBCOMMAND [ARG...]       run a subcommand
 *   ustreams SUBCOMMAND --help | -h    its synopsis, on stdout, exit 0
 *   ustreams help | --help | -h        the list of subcommands, exit 0
 *   ustreams help SUBCOMMAND           the same as SUBCOMMAND --help
 *   ustreams --version | -V            "ustreams VERSION" on stdout, exit 0
 *
 * Subcommands: autopush, fattach, fdetach, netperf, perftest, run, scls, strace,
 * strerr, strinfo (tools/NAME.c, see commands.h).  Installed under that name only, so
 * that no tool hides a system command (strace(1) above all); a few names no
 * system package uses are also installed as links to this program (scls,
 * strerr, strinfo: see CMakeLists.txt), and invoked so it runs that
 * subcommand.  No subcommand, or an unknown one: the usage on stderr, exit 2.
 *
 * fattach exists to say why it does nothing: in ustreams a stream belongs
 * to the process that made it, and so does a name fattach(3) gives it (the
 * name goes when that process exits), so a command that attached a name
 * would lose it at once.  It prints that and exits 1.  fdetach PATH...
 * removes names, whichever process attached them (fdetach(3)): exit 0, or 1
 * when one could not be removed (reported on stderr).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <stropts.h>
#include <ustreams_version.h>

#include "commands.h"

static const char fattach_note[] =
    "  In ustreams a stream and the names fattach(3) gives it belong to the\n"
    "  process that made them: a name goes when that process exits.  A command\n"
    "  run on its own could only attach a name that disappears at once, so\n"
    "  this one does nothing.  Call fattach(fd, path) from <stropts.h> in the\n"
    "  program that owns the stream; any process then opens it by the path.\n";

static void usage_fattach(FILE *f)
{
    fprintf(f, "usage: ustreams fattach (not available as a command)\n%s", fattach_note);
}

static void usage_fdetach(FILE *f)
{
    fprintf(f, "usage: ustreams fdetach PATH...\n"
               "  Remove the STREAMS name attached to each PATH (fdetach(3)), in\n"
               "  whichever process attached it; allowed to the owner of PATH and the\n"
               "  superuser.  The path then opens as the file it covered.\n");
}

static int cmd_fattach(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "ustreams %s: a name lives as long as its process; nothing done\n%s",
            argv[0], fattach_note);
    return 1;
}

static int cmd_fdetach(int argc, char **argv)
{
    int rc = 0;
    if (argc < 2) {
        usage_fdetach(stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (fdetach(argv[i]) != 0) {
            fprintf(stderr, "ustreams fdetach: %s: %s\n", argv[i],
                    errno == EINVAL ? "no STREAMS name attached" : strerror(errno));
            rc = 1;
        }
    return rc;
}

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*usage)(FILE *f);
    const char *what;
};

static const struct subcommand subcommands[] = {
    {"autopush", ust_cmd_autopush, ust_usage_autopush, "check and show autopush configuration"},
    {"fattach", cmd_fattach, usage_fattach, "(per process: see ustreams fattach --help)"},
    {"fdetach", cmd_fdetach, usage_fdetach, "remove STREAMS names from files (fdetach(3))"},
    {"netperf", ust_cmd_netperf, ust_usage_netperf, "UDP/TCP benchmark, XTI against sockets"},
    {"perftest", ust_cmd_perftest, ust_usage_perftest, "pipe throughput benchmark"},
    {"run", ust_cmd_run, ust_usage_run, "run an unmodified program with streams behind open/read/..."},
    {"scls", ust_cmd_scls, ust_usage_scls, "list the drivers and modules"},
    {"strace", ust_cmd_strace, ust_usage_strace, "print STREAMS trace messages"},
    {"strerr", ust_cmd_strerr, ust_usage_strerr, "print STREAMS error messages"},
    {"strinfo", ust_cmd_strinfo, ust_usage_strinfo, "show the queues of a stream"},
};
#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ustreams SUBCOMMAND [ARG...]\n"
               "       ustreams SUBCOMMAND --help\n"
               "       ustreams help [SUBCOMMAND]\n"
               "       ustreams --version\n"
               "subcommands:\n");
    for (size_t i = 0; i < NSUB; i++)
        fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].what);
}

static const struct subcommand *find(const char *name)
{
    for (size_t i = 0; i < NSUB; i++)
        if (strcmp(subcommands[i].name, name) == 0)
            return &subcommands[i];
    return NULL;
}

static int is_help(const char *s)
{
    return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0 || strcmp(s, "help") == 0;
}

int main(int argc, char **argv)
{
    const struct subcommand *sc;
    char *self = basename(argv[0]);

    /* Invoked through a link named after a subcommand (scls, ...). */
    if ((sc = find(self)) != NULL) {
        if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            sc->usage(stdout);
            return 0;
        }
        return sc->run(argc, argv);
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("ustreams %s\n", USTREAMS_VERSION);
        return 0;
    }
    if (is_help(argv[1])) {
        if (argc == 2) {
            usage(stdout);
            return 0;
        }
        if ((sc = find(argv[2])) == NULL) {
            fprintf(stderr, "ustreams: unknown subcommand '%s'\n", argv[2]);
            usage(stderr);
            return 2;
        }
        sc->usage(stdout);
        return 0;
    }
    if ((sc = find(argv[1])) == NULL) {
        fprintf(stderr, "ustreams: unknown subcommand '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        sc->usage(stdout);
        return 0;
    }
    return sc->run(argc - 1, argv + 1);
}
