/* SPDX-License-Identifier: MIT */
/*
 * fifo.c -- the registry entries of the FIFO drivers: fifo, sfx and pipe.
 *
 * The streams these names open are made by the stream head itself
 * (src/head/sd_fifo.c: a FIFO is a head whose write side loops back into its
 * own read side; there is no driver pair below it), as in Linux
 * Fast-STREAMS, whose fifo, sfx and pipe drivers only direct the open to the
 * head's FIFO code.  They are registered so that the configuration shows
 * them as every other device: scls(8), the sc module's SC_IOC_LIST, a major
 * number each.  Their open routine is never called through their names (the
 * head resolves "/dev/streams/{fifo,sfx,pipe}[/<N>]" before the registry);
 * an open that reaches it anyway (a major-numbered open, autopush
 * experiments) fails ENXIO.
 *
 * MT level: D_MP; no state.  Minor rules (docs/ADMIN.md, "Device names"):
 * fifo and sfx are two names of one device whose minor N is one FIFO (N
 * below 256); pipe is D_CLONE, every open a new loop-back stream.
 */
#include <errno.h>
#include <sys/ddi.h>
#include <sys/stream.h>
#include <sys/strconf.h>

#define FIFO_ID 5020
#define SFX_ID  5021
#define PIPE_ID 5022

static int fifodev_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp);
static int fifodev_close(queue_t *q, int oflag, cred_t *crp);
static int fifodev_put(queue_t *q, mblk_t *mp);

/* PIPE_BUF-sized packets and the head's water marks, as sfx(4) lists them. */
#define FIFODEV_MINFO(id, name)                                                                    \
    {.mi_idnum = (id), .mi_idname = (name), .mi_minpsz = 0, .mi_maxpsz = 4096,                     \
     .mi_hiwat = 5120, .mi_lowat = 1024}

static struct module_info fifodev_minfo[3] = {
    FIFODEV_MINFO(FIFO_ID, "fifo"),
    FIFODEV_MINFO(SFX_ID, "sfx"),
    FIFODEV_MINFO(PIPE_ID, "pipe"),
};

static struct qinit fifodev_rinit[3];
static struct qinit fifodev_winit[3];
static struct streamtab fifodev_info[3];

static struct cdevsw fifodev_cdev[3] = {
    {.d_name = "fifo", .d_str = &fifodev_info[0], .d_flag = D_MP},
    {.d_name = "sfx", .d_str = &fifodev_info[1], .d_flag = D_MP},
    {.d_name = "pipe", .d_str = &fifodev_info[2], .d_flag = D_MP | D_CLONE},
};

/* Registration from ust_builtin_register (src/admin/builtins.c). */
void ust_fifodev_register(void);

void ust_fifodev_register(void)
{
    for (int i = 0; i < 3; i++) {
        fifodev_rinit[i] = (struct qinit){.qi_putp = fifodev_put,
                                          .qi_qopen = fifodev_open,
                                          .qi_qclose = fifodev_close,
                                          .qi_minfo = &fifodev_minfo[i]};
        fifodev_winit[i] = (struct qinit){.qi_putp = fifodev_put, .qi_minfo = &fifodev_minfo[i]};
        fifodev_info[i] = (struct streamtab){.st_rdinit = &fifodev_rinit[i],
                                             .st_wrinit = &fifodev_winit[i]};
        int rc = register_strdev(&fifodev_cdev[i], 0);
        if (rc < 0)
            cmn_err(CE_WARN, "%s: register_strdev failed (%d)", fifodev_cdev[i].d_name, rc);
    }
}

/* Never reached through the names (see above): ENXIO. */
static int fifodev_open(queue_t *q, dev_t *devp, int oflag, int sflag, cred_t *crp)
{
    (void)q;
    (void)devp;
    (void)oflag;
    (void)sflag;
    (void)crp;
    return ENXIO;
}

static int fifodev_close(queue_t *q, int oflag, cred_t *crp)
{
    (void)q;
    (void)oflag;
    (void)crp;
    return 0;
}

static int fifodev_put(queue_t *q, mblk_t *mp)
{
    (void)q;
    freemsg(mp);
    return 0;
}
