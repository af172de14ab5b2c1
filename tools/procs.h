/* SPDX-License-Identifier: MIT */
/*
 * procs.h -- asking every ustreams process of the user what it publishes
 * (src/admin/publish.c): the -P option of scls and strinfo (tools/procs.c).
 */
#ifndef UST_TOOLS_PROCS_H
#define UST_TOOLS_PROCS_H

#include <stdio.h>

/*
 * ust_procs_query -- send request (one line of publish.h's protocol, no
 *   newline) to every process published in the runtime directory
 *   (ust_rundir), in the order of their pids, this process excepted; for
 *   each that answers, print "process PID COMMAND" (COMMAND from
 *   /proc/PID/comm, "?" if unreadable) and its answer to out.  A name whose
 *   connect is refused (nobody listens: the process is gone) is removed
 *   and not mentioned; a process that does not answer in time, or whose
 *   socket belongs to another uid, is reported on stderr as
 *   "tool: process PID: reason" and skipped.
 *   Returns the number of processes printed, or -1 when the runtime
 *   directory is refused or unreadable (reported on stderr).
 */
int ust_procs_query(const char *tool, const char *request, FILE *out);

#endif /* UST_TOOLS_PROCS_H */
