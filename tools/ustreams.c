/* SPDX-License-Identifier: MIT */
/*
 * ustreams.c -- the `ustreams` command: the tools as subcommands.
 *
 *   ustreams SUBCOMMAND [ARG...]       run a subcommand
 *   ustreams SUBCOMMAND --help | -h    its synopsis, on stdout, exit 0
 *   ustreams help | --help | -h        the list of subcommands, exit 0
 *   ustreams help SUBCOMMAND           the same as SUBCOMMAND --help
 *
 * Subcommands: autopush, fattach, fdetach, netperf, perftest, scls, strace,
 * strerr, strinfo (tools/NAME.c, see commands.h).  Installed under that name only, so
 * that no tool hides a system command (strace(1) above all); a few names no
 * system package uses are also installed as links to this program (scls,
 * strerr, strinfo: see CMakeLists.txt), and invoked so it runs that
 * subcommand.  No subcommand, or an unknown one: the usage on stderr, exit 2.
 *
 * fattach and fdetach exist to say why they do nothing: in ustreams a
 * stream, and a name fattach-ed to it, belong to the process that made them
 * (the names live in that process's table, not in the file system), so a
 * command that attached a name would lose it when it exited.  A program
 * calls fattach(3)/fdetach(3) itself.  They print that and exit 1.
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const char fattach_note[] =
    "  In ustreams a stream and the names fattach(3) gives it belong to the\n"
    "  process that made them: names live in that process's table, not in the\n"
    "  file system, and vanish when it exits.  A command run on its own could\n"
    "  only attach a name that disappears at once, so this one does nothing.\n"
    "  Call fattach(fd, path) and fdetach(path) from <stropts.h> in the program\n"
    "  that owns the stream; its strm_open(path) then opens that stream.\n";

static void usage_fattach(FILE *f)
{
    fprintf(f, "usage: ustreams fattach (not available as a command)\n%s", fattach_note);
}

static void usage_fdetach(FILE *f)
{
    fprintf(f, "usage: ustreams fdetach (not available as a command)\n%s", fattach_note);
}

static int cmd_fattach(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "ustreams %s: names are per process; nothing done\n%s", argv[0], fattach_note);
    return 1;
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
    {"fdetach", cmd_fattach, usage_fdetach, "(per process: see ustreams fdetach --help)"},
    {"netperf", ust_cmd_netperf, ust_usage_netperf, "UDP/TCP benchmark, XTI against sockets"},
    {"perftest", ust_cmd_perftest, ust_usage_perftest, "pipe throughput benchmark"},
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
