/* SPDX-License-Identifier: MIT */
/* tt_io.c — monotonic milliseconds and microseconds, and write-all (see tt_io.h). */
#include "tt_io.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

long tt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int64_t tt_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int tt_write_all(int fd, const void *buf, size_t len, bool socket)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = socket ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
		struct pollfd w = { .fd = fd, .events = POLLOUT };

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && poll(&w, 1, -1) >= 0)
			continue;
		if (n == 0)
			errno = EIO;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
