/* SPDX-License-Identifier: MIT */
/*
 * sd_openmod.c -- ustreams_open_module (ustreams.h): strm_open, then push a
 * module unless the stream has it, as one library call (XTI's t_open with
 * timod; issue 23 item 4, docs/STREAMHEAD.md "Cheap endpoints").  The open
 * itself is sd_open.c's, the push sd_plumb.c's.
 */
#include <errno.h>
#include <stropts.h>

#include "sthead.h"

/*
 * ustreams_open_module -- strm_open, then push module unless the stream has
 *   it already (I_FIND, I_PUSH), as one call (ustreams.h): an XTI t_open.
 *   Context: blocking, as strm_open and I_PUSH.
 *   The rule (issue 23 item 4): the descriptor is the call's own until it
 *   returns, so the pushes reach the stream the open made without the
 *   close-behind check of strm_ioctl (ust_sd_recheck: a check made inside
 *   the call would only narrow a window that stays open until the caller
 *   uses the number, and its next call checks it), and the module's open
 *   gets the credentials read at the open: the push is part of the same
 *   call, as an autopush is.  Each half runs as its own library call
 *   (ust_call_begin/end), so what the open enabled has run before the push,
 *   as with strm_open then strm_ioctl.
 *   Returns the descriptor, *pushed 1 if this call pushed the module, 0 if
 *   the stream had it.  Or -1 with errno and *pushed -1: the open failed
 *   (strm_open's errors); *pushed 0: I_FIND or I_PUSH failed (their errors:
 *   ENOSTR for a name that is no stream), and the descriptor is closed.
 *   A pushed that cannot be written (NULL, unmapped): -1, EFAULT, nothing
 *   left open.
 */
static int push_module_call(int fd, const char *module, const cred_t *cr, int *pushed)
{
    struct stdata *sd;
    cred_t c = *cr;
    int err, r;

    sd = ust_sd_get(fd, &err); /* the call's own descriptor: no recheck (above) */
    if (sd == NULL)
        return -err;
    r = ust_sd_ioctl(sd, I_FIND, (void *)module);
    if (r == 0) { /* as ust_sd_ioctl's I_PUSH, with the open's credentials */
        r = ust_sd_plex_ioctl(sd, I_PUSH);
        if (r == 0) {
            ust_lock(&sd->sd_lock);
            r = -ust_sd_state_error(sd, ust_sd_ioc_rule(I_PUSH, NULL), 1);
            ust_unlock(&sd->sd_lock);
        }
        if (r == 0)
            r = -ust_sd_push(sd, module, &c);
        *pushed = r == 0;
    }
    ust_sd_put(sd);
    return r < 0 ? r : 0;
}

int ustreams_open_module(const char *path, int oflag, const char *module, int *pushed)
{
    cred_t cr;
    int fd, r, p = -1;

    ust_call_begin();
    ust_sd_reap_orphans();
    ust_sd_publish();
    ust_sd_cred(&cr);
    fd = ust_sd_open(path, oflag, &cr);
    ust_call_end();
    if (fd >= 0) {
        p = 0;
        ust_call_begin();
        r = push_module_call(fd, module, &cr, &p);
        ust_call_end();
        if (r < 0) {
            strm_close(fd);
            errno = -r;
            fd = -1;
        }
    }
    /* pushed is the caller's pointer: a bad one is EFAULT, and then no
     * descriptor is left open (its number could not be trusted to reach
     * the caller's bookkeeping either). */
    if (pushed == NULL || ustreams_copyout(&p, pushed, sizeof(p)) != 0) {
        if (fd >= 0)
            strm_close(fd);
        errno = EFAULT;
        return -1;
    }
    return fd;
}
