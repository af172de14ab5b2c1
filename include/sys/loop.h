/* SPDX-License-Identifier: MIT */
/*
 * sys/loop.h -- the loop driver's ioctls (I_STR commands).
 *
 * The loop driver ("loop", opened as "/dev/streams/clone/loop") cross-connects
 * two of its minors: what is written on one comes up the read side of the
 * other, with flow control and M_FLUSH handling, like the two ends of a pipe.
 *
 *   LOOP_SET      ic_dp points to an int, ic_len = sizeof(int): the minor to
 *                 connect this one to.  Errors: ENXIO (that minor is not
 *                 open), EBUSY (either is already connected), EINVAL (its own
 *                 minor, or a bad argument).
 *   LOOP_GET_DEV  ic_dp points to an int, ic_len = sizeof(int): returns this
 *                 stream's minor number there (and as the ioctl's value).
 *
 * The names and values are those of the Linux Fast-STREAMS / LiS loop driver.
 */
#ifndef _SYS_LOOP_H
#define _SYS_LOOP_H

#define LOOP_SET     (('l' << 8) | 1) /* connect to the minor given */
#define LOOP_GET_DEV (('l' << 8) | 6) /* this stream's minor number */

#endif /* _SYS_LOOP_H */
