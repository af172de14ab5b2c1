/* SPDX-License-Identifier: MIT */
/* sys/tiuser.h -- same as <tiuser.h>. */
#include <tiuser.h>
