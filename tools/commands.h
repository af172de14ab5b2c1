/* SPDX-License-Identifier: MIT */
/*
 * commands.h -- the subcommands of the `ustreams` command (tools/ustreams.c).
 *
 * Each tools/NAME.c is one subcommand: ust_cmd_NAME(argc, argv) is its main
 * (argv[0] is "NAME", the options follow; it returns the exit status) and
 * ust_usage_NAME(f) prints its synopsis to f.
 */
#ifndef UST_TOOLS_COMMANDS_H
#define UST_TOOLS_COMMANDS_H

#include <stdio.h>

int ust_cmd_autopush(int argc, char **argv);
int ust_cmd_netperf(int argc, char **argv);
int ust_cmd_perftest(int argc, char **argv);
int ust_cmd_run(int argc, char **argv);
int ust_cmd_scls(int argc, char **argv);
int ust_cmd_strace(int argc, char **argv);
int ust_cmd_strerr(int argc, char **argv);
int ust_cmd_strinfo(int argc, char **argv);

void ust_usage_autopush(FILE *f);
void ust_usage_netperf(FILE *f);
void ust_usage_perftest(FILE *f);
void ust_usage_run(FILE *f);
void ust_usage_scls(FILE *f);
void ust_usage_strace(FILE *f);
void ust_usage_strerr(FILE *f);
void ust_usage_strinfo(FILE *f);

#endif /* UST_TOOLS_COMMANDS_H */
