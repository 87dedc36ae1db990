/* SPDX-License-Identifier: MIT */
/* hang.h — the process side of hang detection for train-run's event loop: the state the kernel
 * shows for a worker (to pick the culprit among ranks that all look hung, heartbeat.h) and its
 * kernel stack for the report. The clock is base's tt_now_us (tt_io.h). */
#ifndef TT_HANG_H
#define TT_HANG_H

#include <stddef.h>
#include <sys/types.h>

/* The state letter of /proc/PID/stat (R, S, D, T, t, Z, ...), '?' when it cannot be read. */
char tt_hang_proc_state(pid_t pid);

/* /proc/PID/stack as one line of its frames' function names joined by " < " (innermost first),
 * "" when it cannot be read (it needs CAP_SYS_ADMIN on most kernels). */
void tt_hang_kernel_stack(pid_t pid, char *out, size_t len);

#endif
