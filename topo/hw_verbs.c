/* SPDX-License-Identifier: MIT */
/* hw_verbs.c — live RDMA devices and ports from libibverbs, the authority on what the RDMA stack
 * really offers (sysfs may list devices the stack cannot open). No device is a normal answer:
 * the model then records why, and every writer still produces valid output. */
#include "hw_model.h"
#include "hw_sources.h"

#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

int tt_ib_rate_mbps(unsigned active_speed, unsigned active_width)
{
	/* Per-lane Mb/s by the lowest set bit of active_speed (SDR .. NDR); lanes by active_width. */
	static const int lane_mbps[] = { 2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000, 200000 };
	static const int lanes[] = { 1, 4, 8, 12, 2 };
	int speed = -1, width = -1;

	for (int b = 0; b < 9 && speed < 0; b++)
		if (active_speed & (1u << b))
			speed = b;
	for (int b = 0; b < 5 && width < 0; b++)
		if (active_width & (1u << b))
			width = b;
	return speed < 0 || width < 0 ? 0 : lane_mbps[speed] * lanes[width];
}

static int read_device(struct tt_hw_model *m, struct ibv_device *dev, tt_err *err)
{
	struct tt_hca fresh = { .pci = -1 };
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	struct tt_hca *h;
	int idx = tt_hw_find_hca(m, ibv_get_device_name(dev));

	if (idx < 0) {
		snprintf(fresh.name, sizeof(fresh.name), "%s", ibv_get_device_name(dev));
		idx = tt_hw_add_hca(m, &fresh);
		if (idx < 0)
			return tt_err_set(err, "out of memory adding HCA %s", fresh.name);
	}
	h = &m->hca[idx];
	ctx = ibv_open_device(dev);
	if (!ctx) /* no permission on /dev/infiniband: sysfs has already said what it knows */
		return 0;
	if (ibv_query_device(ctx, &attr) == 0) {
		h->node_guid = be64toh(attr.node_guid);
		h->sys_image_guid = be64toh(attr.sys_image_guid);
		h->nports = 0;
		for (int p = 1; p <= attr.phys_port_cnt && h->nports < TT_HCA_MAX_PORTS; p++) {
			struct ibv_port_attr pa;
			struct tt_hca_port *port = &h->ports[h->nports];

			if (ibv_query_port(ctx, (uint8_t)p, &pa) != 0)
				continue;
			port->num = p;
			port->active = pa.state == IBV_PORT_ACTIVE;
			port->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? TT_LL_ETHERNET
										    : TT_LL_INFINIBAND;
			port->rate_mbps = tt_ib_rate_mbps(pa.active_speed, pa.active_width);
			h->nports++;
		}
	}
	ibv_close_device(ctx);
	return 0;
}

int tt_verbs_enrich(struct tt_hw_model *m, tt_err *err)
{
	struct ibv_device **list;
	int n = 0, rc = 0;

	list = ibv_get_device_list(&n);
	if (!list) {
		snprintf(m->rdma_note, sizeof(m->rdma_note), "no RDMA devices (libibverbs: %s)",
			 errno == ENOSYS ? "no kernel RDMA support" : strerror(errno));
		return 0;
	}
	for (int i = 0; i < n && rc == 0; i++)
		rc = read_device(m, list[i], err);
	ibv_free_device_list(list);
	if (n == 0 && m->nhca == 0)
		snprintf(m->rdma_note, sizeof(m->rdma_note), "no RDMA devices (libibverbs found none)");
	return rc;
}
