/* SPDX-License-Identifier: MIT */
/* hw_parse.c — the small conversions the discovery sources share (hw_sources.h): hwloc's PCIe
 * bandwidth to rate and width, and GUID text to a number. Their own file so that hw_discover.c
 * (hwloc) and hw_sysfs.c (sysfs) both use them without depending on each other. */
#include "hw_sources.h"

#include <stddef.h>
#include <stdint.h>

/* hwloc stores PCIe bandwidth in GB/s (lanes x rate x encoding); NCCL wants rate and width.
 * Width 16 is tried first because GPUs and HCAs almost always have it, which also settles
 * the one real ambiguity (Gen4 x8 = Gen3 x16): sysfs, when read, gives the exact pair. */
void tt_pcie_from_gbps(double gbps, double *gts, int *width)
{
	static const double rates[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	static const int widths[] = { 16, 8, 4, 2, 1, 32 };

	*gts = 0;
	*width = 0;
	if (gbps <= 0)
		return;
	for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			double enc = rates[r] < 8.0 ? 0.8 : 128.0 / 130.0;
			double lanes_gbps = widths[w] * rates[r] * enc / 8.0;

			if (lanes_gbps > gbps * 0.99 && lanes_gbps < gbps * 1.01) {
				*gts = rates[r];
				*width = widths[w];
				return;
			}
		}
	}
}

uint64_t tt_parse_guid(const char *s)
{
	/* hwloc and sysfs print GUIDs as "506b:4b03:003c:eee8". */
	uint64_t v = 0;

	for (; s && *s; s++) {
		if (*s == ':')
			continue;
		if (*s >= '0' && *s <= '9')
			v = v << 4 | (uint64_t)(*s - '0');
		else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			v = v << 4 | (uint64_t)((*s | 0x20) - 'a' + 10);
		else
			break;
	}
	return v;
}
