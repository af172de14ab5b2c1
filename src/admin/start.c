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
 *     hook (owner)                     installed here          default
 *     ust_set_init_hook                ust_builtin_register    no built-in driver
 *       (core, registry.c)               (builtins.c)            or module
 *     ust_strlog_set_route             ust_log_route           strlog's messages
 *       (core, strlog.c)                 (the log driver)        reach no logger
 *     ust_sd_set_autopush              ust_autopush_apply      an open pushes
 *       (head, sd_open.c)                (autopush.c)            no module
 *     ust_sd_set_publish               the first stream        nothing is
 *       (head, sd_open.c)                publishes the process   published
 *                                        (publish.c)
 *
 *   It also registers the fork hooks of the autopush table's lock
 *   (UST_FORK_AUTOPUSH, src/core/forksafe.h) and of the publishing socket
 *   (UST_FORK_PUBLISH, by ust_publish_init), then calls ust_init, which
 *   runs the init hook: the built-ins are registered at load time, before
 *   any call into the library.
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
#include "builtins.h"
#include "drivers/logpriv.h"
#include "procs.h"
#include "publish.h"
#include "sthead.h"
#include "strcore.h"

__attribute__((constructor(101))) static void admin_start(void)
{
    ust_fork_register(UST_FORK_AUTOPUSH, ust_autopush_fork_prepare, ust_autopush_fork_release,
                      ust_autopush_fork_release);
    ust_procs_init(); /* streams across processes: the head's hooks (src/procs) */
    ust_strlog_set_route(ust_log_route);
    ust_sd_set_autopush(ust_autopush_apply);
    ust_publish_init(); /* ust_sd_set_publish, and its fork hooks */
    ust_set_init_hook(ust_builtin_register);
    ust_init();
}
