/* SPDX-License-Identifier: MIT */
/*
 * start.c -- library start: the administration layer hooks itself into the
 * layers below.
 *
 * Principles of operation
 *   Arrows point down (docs/ARCHITECTURE.md, "Layers"): the executive
 *   (src/core) and the stream head (src/head) neither include nor call what
 *   sits above them.  Where one of them must reach up, it calls through a
 *   hook, a function pointer that this file installs before the library is
 *   used; each hook has a documented default for when none is installed:
 *
 *     hook (owner)                          installed here      default
 *     ust_strlog_set_route (core, strlog.c) ust_log_route       no logger gets
 *                                           (the log driver)    strlog's messages
 *     ust_sd_set_autopush (head, sd_open.c) ust_autopush_apply  an open pushes
 *                                           (autopush.c)        no module
 *
 *   It also registers the fork hooks of the autopush table's lock
 *   (UST_FORK_AUTOPUSH, src/core/forksafe.h).
 *
 *   admin_start runs from a constructor of priority 101, the first one
 *   programs may use: in a static program it runs before every constructor
 *   of default priority, the program's own and the library's included; a
 *   shared library's constructors run before the program's anyway.  So no
 *   call into the library can come before the hooks are in place, unless a
 *   program's constructor of priority 101 runs first (link order decides).
 *
 *   Nothing below references this file, so the static archive is one
 *   partially linked object (CMakeLists.txt): a program that links anything
 *   of the library links this too.
 *
 * Locking: none; the hooks are atomic stores in their owners' files.
 */
#include "autopush.h"
#include "drivers/logpriv.h"
#include "sthead.h"
#include "strcore.h"

__attribute__((constructor(101))) static void admin_start(void)
{
    ust_fork_register(UST_FORK_AUTOPUSH, ust_autopush_fork_prepare, ust_autopush_fork_release,
                      ust_autopush_fork_release);
    ust_strlog_set_route(ust_log_route);
    ust_sd_set_autopush(ust_autopush_apply);
}
