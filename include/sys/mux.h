/* SPDX-License-Identifier: MIT */
/*
 * sys/mux.h -- the reference multiplexing driver "mux" and its ioctl.
 *
 * "/dev/streams/clone/mux" (every open of "/dev/streams/mux" clones too)
 * opens an upper stream of the multiplexer.  Lower streams are linked under
 * it with I_LINK or I_PLINK (streamio(7)), which return a multiplexer id.
 * An upper stream is then routed to one lower stream:
 *
 *   MUX_ROUTE   I_STR; ic_dp points to an int, ic_len = sizeof(int): the
 *               multiplexer id of the lower stream this upper stream is to
 *               use (0 removes the route).  What the upper stream writes goes
 *               down that lower stream; what comes up that lower stream goes
 *               to every upper stream routed to it.  Data written before a
 *               route exists waits on the upper stream (and flow-controls its
 *               writer) until one is set.
 *               Errors: EINVAL (no lower stream with that id, bad argument,
 *               a transparent ioctl), ENXIO (that lower stream hung up).
 *
 * When a routed lower stream is unlinked or hangs up, every upper stream
 * routed to it receives M_HANGUP (its reads return 0, its writes fail ENXIO).
 */
#ifndef _SYS_MUX_H
#define _SYS_MUX_H

#define MUX_ROUTE (('M' << 8) | 1) /* route this upper stream to a lower one */

#endif /* _SYS_MUX_H */
