/* SPDX-License-Identifier: MIT */
/* test_port.c — tt_free_loopback_port: ports below the kernel's ephemeral range (read here from
 * /proc independently), free when returned (a listener binds them), never one a listener holds. */
#include "cunit_main.h"
#include "tt_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* A socket listening on 127.0.0.1:port, or -1. */
static int listen_on(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 1) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void test_ports_below_the_ephemeral_range_and_free(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	unsigned lo = 0, hi = 0;
	int fds[32];
	tt_err err = {""};

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(fscanf(f, "%u %u", &lo, &hi) == 2);
	fclose(f);
	/* Each port returned is bindable, and held while the next ones are chosen: none repeats. */
	for (int i = 0; i < 32; i++) {
		uint16_t port = 0;

		CU_ASSERT_EQUAL(tt_free_loopback_port(&port, &err), 0);
		if (lo > 12000)
			CU_ASSERT(port >= 10000 && port < lo);
		fds[i] = listen_on(port);
		CU_ASSERT(fds[i] >= 0);
	}
	for (int i = 0; i < 32; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("tt_port", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "ports below the ephemeral range, free when returned", test_ports_below_the_ephemeral_range_and_free);
	return 0;
}
