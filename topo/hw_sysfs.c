/* SPDX-License-Identifier: MIT */
/* hw_sysfs.c — what the node model takes from a /sys tree: PCIe link rate and width, HCA
 * ports (state, link layer, rate), GUIDs and PCI addresses, and network interfaces. The root is a
 * parameter so tests run on fixture trees laid out like /sys. */
#include "hw_model.h"
#include "hw_sources.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Reads the first line of root/rel into buf (newline stripped). */
static int read_line(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int read_required(const char *root, const char *rel, char *buf, size_t len, tt_err *err)
{
	if (read_line(root, rel, buf, len) == 0)
		return 0;
	return tt_err_errno(err, "cannot read '%s/%s' (a required sysfs entry)", root, rel);
}

static int looks_like_busid(const char *s)
{
	unsigned d, b, dev, f;
	int n = 0;

	return sscanf(s, "%4x:%2x:%2x.%1x%n", &d, &b, &dev, &f, &n) == 4 && s[n] == '\0';
}

/* PCI address of root/rel/device: the last bus id in the link's resolved path, because virtio
 * and auxiliary devices sit one level below their PCI function. */
static int device_pci(const struct tt_hw_model *m, const char *root, const char *rel)
{
	char path[PATH_MAX], real[PATH_MAX];
	char *slash;

	snprintf(path, sizeof(path), "%s/%s/device", root, rel);
	if (!realpath(path, real))
		return -1;
	while ((slash = strrchr(real, '/'))) {
		if (looks_like_busid(slash + 1))
			return tt_hw_find_pci(m, slash + 1);
		*slash = '\0';
	}
	return -1;
}

/* Whether root's entry for p's bus id is the same device: an export read on another machine
 * may name bus ids this one has for something else. Fixture trees without the id files pass. */
static int same_device(const char *root, const struct tt_pci *p)
{
	char rel[128], vendor[16], device[16];

	snprintf(rel, sizeof(rel), "bus/pci/devices/%s/vendor", p->busid);
	if (read_line(root, rel, vendor, sizeof(vendor)) != 0)
		return 1;
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s/device", p->busid);
	if (read_line(root, rel, device, sizeof(device)) != 0)
		return 1;
	return strtoul(vendor, NULL, 16) == p->vendor && strtoul(device, NULL, 16) == p->device;
}

/* What each device and port can do (max_link_*), as NCCL reads it: current_link_* drops with
 * ASPM while a GPU idles, which would write a Gen1 link for a Gen5 GPU. */
void tt_sysfs_pci_links(struct tt_hw_model *m, const char *root)
{
	for (int i = 0; i < m->npci; i++) {
		struct tt_pci *p = &m->pci[i];
		char rel[128], speed[64], width[16];

		if (p->kind == TT_PCI_HOSTBRIDGE || p->is_virtual)
			continue;
		snprintf(rel, sizeof(rel), "bus/pci/devices/%s/max_link_speed", p->busid);
		if (read_line(root, rel, speed, sizeof(speed)) != 0 || !isdigit((unsigned char)speed[0]))
			continue;
		snprintf(rel, sizeof(rel), "bus/pci/devices/%s/max_link_width", p->busid);
		if (read_line(root, rel, width, sizeof(width)) != 0 || atoi(width) <= 0 ||
		    !same_device(root, p))
			continue;
		p->link_gts = strtod(speed, NULL);
		p->link_width = atoi(width);
		p->link_max = 1;
	}
}

static enum tt_link_layer parse_link_layer(const char *s)
{
	if (strcmp(s, "InfiniBand") == 0)
		return TT_LL_INFINIBAND;
	if (strcmp(s, "Ethernet") == 0)
		return TT_LL_ETHERNET;
	return TT_LL_UNKNOWN;
}

static int read_port(const char *root, const char *dev, const char *port, struct tt_hca_port *p,
		     tt_err *err)
{
	char rel[768], buf[128];

	p->num = atoi(port);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%s/state", dev, port);
	if (read_required(root, rel, buf, sizeof(buf), err) < 0)
		return -1;
	p->active = atoi(buf) == 4; /* "4: ACTIVE" */
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%s/link_layer", dev, port);
	if (read_required(root, rel, buf, sizeof(buf), err) < 0)
		return -1;
	p->link_layer = parse_link_layer(buf);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%s/rate", dev, port);
	if (read_required(root, rel, buf, sizeof(buf), err) < 0)
		return -1;
	p->rate_mbps = (int)(strtod(buf, NULL) * 1000); /* "100 Gb/sec (4X EDR)" */
	return 0;
}

static int cmp_port(const void *a, const void *b)
{
	return ((const struct tt_hca_port *)a)->num - ((const struct tt_hca_port *)b)->num;
}

static int read_hca(struct tt_hw_model *m, const char *root, const char *name, tt_err *err)
{
	struct tt_hca fresh = { .pci = -1 };
	struct tt_hca *h;
	char rel[768], buf[64];
	struct dirent *e;
	DIR *d;
	int idx = tt_hw_find_hca(m, name);

	if (idx < 0) {
		snprintf(fresh.name, sizeof(fresh.name), "%s", name);
		idx = tt_hw_add_hca(m, &fresh);
		if (idx < 0)
			return tt_err_set(err, "out of memory adding HCA %s", name);
	}
	h = &m->hca[idx];
	snprintf(rel, sizeof(rel), "class/infiniband/%s", name);
	if (h->pci < 0)
		h->pci = device_pci(m, root, rel);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/node_guid", name);
	if (read_required(root, rel, buf, sizeof(buf), err) < 0)
		return -1;
	h->node_guid = tt_parse_guid(buf);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/sys_image_guid", name);
	if (read_required(root, rel, buf, sizeof(buf), err) < 0)
		return -1;
	h->sys_image_guid = tt_parse_guid(buf);

	snprintf(rel, sizeof(rel), "%s/class/infiniband/%s/ports", root, name);
	d = opendir(rel);
	if (!d)
		return tt_err_errno(err, "cannot list '%s' (a required sysfs entry)", rel);
	h->nports = 0;
	while ((e = readdir(d)) && h->nports < TT_HCA_MAX_PORTS) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (read_port(root, name, e->d_name, &h->ports[h->nports], err) < 0) {
			closedir(d);
			return -1;
		}
		h->nports++;
	}
	closedir(d);
	qsort(h->ports, (size_t)h->nports, sizeof(h->ports[0]), cmp_port);
	return 0;
}

static int read_netif(struct tt_hw_model *m, const char *root, const char *name, tt_err *err)
{
	struct tt_netif fresh = { .pci = -1 };
	struct tt_netif *n;
	char rel[768], state[32], path[PATH_MAX];
	struct stat st;
	int idx = -1;

	for (int i = 0; i < m->nnetif && idx < 0; i++)
		if (strcmp(m->netif[i].name, name) == 0)
			idx = i;
	if (idx < 0) {
		snprintf(fresh.name, sizeof(fresh.name), "%s", name);
		idx = tt_hw_add_netif(m, &fresh);
		if (idx < 0)
			return tt_err_set(err, "out of memory adding interface %s", name);
	}
	n = &m->netif[idx];
	snprintf(rel, sizeof(rel), "class/net/%s/operstate", name);
	if (read_required(root, rel, state, sizeof(state), err) < 0)
		return -1;
	/* "unknown" is what lo and many virtual links report while carrying traffic. */
	n->up = strcmp(state, "up") == 0 || strcmp(state, "unknown") == 0;
	snprintf(rel, sizeof(rel), "class/net/%s", name);
	if (n->pci < 0)
		n->pci = device_pci(m, root, rel);
	snprintf(path, sizeof(path), "%s/class/net/%s/bridge", root, name);
	n->excluded = tt_netif_name_excluded(name) || stat(path, &st) == 0;
	return 0;
}

/* Calls fn for every directory in root/rel (plain files such as class/net/bonding_masters are
 * not devices); a missing directory means none. */
static int each_entry(struct tt_hw_model *m, const char *root, const char *rel,
		      int (*fn)(struct tt_hw_model *, const char *, const char *, tt_err *), tt_err *err)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : tt_err_errno(err, "cannot list '%s'", path);
	while (rc == 0 && (e = readdir(d))) {
		char entry[PATH_MAX + 256];
		struct stat st;

		snprintf(entry, sizeof(entry), "%s/%s", path, e->d_name);
		if (e->d_name[0] != '.' && stat(entry, &st) == 0 && S_ISDIR(st.st_mode))
			rc = fn(m, root, e->d_name, err);
	}
	closedir(d);
	return rc;
}

int tt_sysfs_enrich(struct tt_hw_model *m, const char *root, tt_err *err)
{
	struct stat st;

	if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
		return tt_err_errno(err, "sysfs root '%s' is not a readable directory", root);
	tt_sysfs_pci_links(m, root);
	if (each_entry(m, root, "class/infiniband", read_hca, err) < 0)
		return -1;
	return each_entry(m, root, "class/net", read_netif, err);
}
