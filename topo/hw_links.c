/* SPDX-License-Identifier: MIT */
/* hw_links.c — the PCIe link NCCL reads for each PCI node. On the machine NCCL takes, for a
 * device and its sysfs parent (the port above it), the lower of the two max_link_speed and of the
 * two max_link_width values (NCCL 2.28 src/graph/xml.cc, ncclTopoGetXmlFromSys): what the link
 * can do, whatever state it is in now. Discovery has two kinds of value:
 *   - sysfs max_link_* (link_max set: live discovery, --sysfs-root, or an export read on the node
 *     it describes): capabilities, so the lower of device and port is NCCL's own value;
 *   - hwloc's pci_link_speed: the link's state when hwloc looked (it reads current_link_*), which
 *     drops while a device idles (ASPM). Both ends report the same link, so a difference means the
 *     link changed state between the two reads; a link that ran at a rate had both ends capable
 *     of it, so the higher of the two is the closest lower bound of NCCL's value. It is taken, and
 *     the upstream port being the slower is warned about once (the file may still be low where
 *     both reads found the link idle).
 * Where only one end has a sysfs value, that one is taken (it is what NCCL reads for that end,
 * and the other's current state says nothing of its maximum).
 * The pass runs once, before virtual switches re-parent devices, so the value never depends on
 * them. */
#include "hw_model.h"
#include "hw_sources.h"

#include <stdio.h>
#include <stdlib.h>

struct link {
	double gts;
	int width;
};

static void pick(double *gts, int *width, double g, int w, int lower)
{
	if (g > 0 && (*gts <= 0 || (lower ? g < *gts : g > *gts)))
		*gts = g;
	if (w > 0 && (*width <= 0 || (lower ? w < *width : w > *width)))
		*width = w;
}

void tt_hw_nccl_links(struct tt_hw_model *m)
{
	struct link *out = calloc((size_t)m->npci + 1, sizeof(*out));
	int downtrained = 0, first = -1;

	if (!out) /* the values stay as read: still a valid, if conservative, file */
		return;
	for (int i = 0; i < m->npci; i++) {
		const struct tt_pci *p = &m->pci[i];
		const struct tt_pci *port = p->parent >= 0 && m->pci[p->parent].kind == TT_PCI_BRIDGE &&
						    !m->pci[p->parent].is_virtual ? &m->pci[p->parent] : NULL;

		out[i].gts = p->link_gts;
		out[i].width = p->link_width;
		if (!port || p->kind == TT_PCI_HOSTBRIDGE || p->is_virtual)
			continue;
		if (p->link_max && port->link_max) {
			pick(&out[i].gts, &out[i].width, port->link_gts, port->link_width, 1);
		} else if (port->link_max) {
			out[i].gts = port->link_gts;
			out[i].width = port->link_width;
		} else if (!p->link_max) {
			if ((port->link_gts > 0 && port->link_gts < p->link_gts) ||
			    (port->link_width > 0 && port->link_width < p->link_width)) {
				if (first < 0)
					first = i;
				downtrained++;
			}
			pick(&out[i].gts, &out[i].width, port->link_gts, port->link_width, 0);
		}
	}
	if (downtrained) {
		const struct tt_pci *p = &m->pci[first], *port = &m->pci[p->parent];

		tt_hw_warn(m, "%s: PCIe port %s at %.1f GT/s x%d above %s at %.1f GT/s x%d (links like "
			   "it: %d): hwloc saw the link idle; written as %.1f GT/s x%d, the faster, as "
			   "NCCL reads max_link_*", m->source, port->busid, port->link_gts, port->link_width,
			   p->busid, p->link_gts, p->link_width, downtrained, out[first].gts,
			   out[first].width);
	}
	for (int i = 0; i < m->npci; i++) {
		m->pci[i].link_gts = out[i].gts;
		m->pci[i].link_width = out[i].width;
	}
	free(out);
}
