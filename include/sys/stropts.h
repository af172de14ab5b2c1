/* SPDX-License-Identifier: MIT */
/* sys/stropts.h -- same as <stropts.h>. */
#include <stropts.h>
