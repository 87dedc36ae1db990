/* SPDX-License-Identifier: MIT */
/* tt_io.h — the two small system helpers every process of traintopo needs: a monotonic clock in
 * milliseconds and microseconds (deadlines that a changed wall clock cannot move) and a write that writes all. */
#ifndef TT_IO_H
#define TT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
long tt_now_ms(void);

/* CLOCK_MONOTONIC in microseconds (heartbeat times and rate limits). */
int64_t tt_now_us(void);

/* Writes all len bytes of buf to fd, retrying after EINTR and short writes, and waiting (poll)
 * when fd is non-blocking and full (a stdout shared with a parent that made it so). A socket
 * is written with send(MSG_NOSIGNAL), so a vanished peer is an EPIPE here, not a SIGPIPE that
 * kills the process. Async-signal-safe (a forked child may call it). Returns 0, or -1 with errno
 * set (EIO when fd took nothing). */
int tt_write_all(int fd, const void *buf, size_t len, bool socket);

#endif
