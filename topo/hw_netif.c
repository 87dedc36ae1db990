/* SPDX-License-Identifier: MIT */
/* hw_netif.c — which network interface carries the node: the one holding the address the host
 * name resolves to, never loopback or container/VM bridges. NCCL_SOCKET_IFNAME comes from here. */
#include "hw_model.h"
#include "hw_sources.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int tt_netif_name_excluded(const char *name)
{
	static const char *const prefixes[] = { "lo", "docker", "virbr", "veth", "br-", "cni", "flannel" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

static void mark(struct tt_hw_model *m, const char *ifname)
{
	for (int i = 0; i < m->nnetif; i++)
		if (strcmp(m->netif[i].name, ifname) == 0 && !m->netif[i].excluded)
			m->netif[i].carries_node_address = 1;
}

void tt_netif_mark_node_address(struct tt_hw_model *m)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	struct ifaddrs *ifs = NULL;
	char host[256];

	/* An unresolvable host name only means no interface is marked. */
	if (gethostname(host, sizeof(host)) != 0 || getaddrinfo(host, NULL, &hints, &res) != 0)
		return;
	if (getifaddrs(&ifs) == 0) {
		for (struct addrinfo *a = res; a; a = a->ai_next)
			for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
				if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
				    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
					    ((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr)
					mark(m, i->ifa_name);
		freeifaddrs(ifs);
	}
	freeaddrinfo(res);
}
