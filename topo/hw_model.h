/* SPDX-License-Identifier: MIT */
/* hw_model.h — the hardware of one node as traintopo sees it: NUMA nodes, the PCI tree, GPUs,
 * RDMA HCAs and network interfaces, filled from hwloc (live or XML), libibverbs and sysfs.
 * Writers (NCCL XML, JSON, the matrix view) and the per-rank policy read only this model. */
#ifndef TT_HW_MODEL_H
#define TT_HW_MODEL_H

#include "tt_cpuset.h"
#include "tt_err.h"

#include <sched.h>
#include <stdint.h>

#define TT_BUSID_LEN 16 /* "dddd:bb:dd.f" + NUL, lower case */
#define TT_HCA_MAX_PORTS 4

/* What to discover from. With input_xml NULL the live machine is read (hwloc + libibverbs + sysfs);
 * with a file, hwloc's XML loader reads it and sysfs_root adds to it; without sysfs_root this
 * machine's /sys gives PCIe max_link_* for the file's bus ids it has the same device at. */
/* hwloc plugins discovery never uses. A process that owns its environment (a command, the
 * plugin's probe child) sets HWLOC_PLUGINS_BLACKLIST to this unless the user set it, so hwloc does
 * not even load them; the library itself only disables their components. */
#define TT_HWLOC_UNUSED_PLUGINS "hwloc_opencl,hwloc_gl,hwloc_pci"

struct tt_hw_options {
	const char *input_xml;  /* hwloc 2.x XML export, or NULL for this machine */
	const char *sysfs_root; /* NULL or "/sys": the real one; else a fixture tree laid out like /sys */
	int virtual_switches;   /* infer fake PCIe switches on VMs that hide them (see hw_vswitch.c) */
};

struct tt_numa {
	int os_index;
	cpu_set_t cpus;
	char cpu_vendor[32]; /* GenuineIntel, AuthenticAMD, ... ("" when unknown) */
	int cpu_family;      /* as hwloc reports it (base + extended family) */
	int cpu_model;
};

enum tt_pci_kind {
	TT_PCI_HOSTBRIDGE, /* no bus id of its own; the root of one PCI hierarchy */
	TT_PCI_BRIDGE,     /* root port, switch port or made-up virtual switch */
	TT_PCI_DEVICE,
};

struct tt_pci {
	enum tt_pci_kind kind;
	char busid[TT_BUSID_LEN]; /* "" for host bridges */
	int parent;               /* index in model->pci, -1 under a NUMA node directly */
	int numa;                 /* index in model->numa, -1 when locality is unknown */
	unsigned class_id;        /* 24-bit class code: 0x060400 bridge, 0x030200 3D controller, ... */
	unsigned vendor, device, subvendor, subdevice;
	/* The link: from hwloc (its current state) or sysfs (max_link_*) at first; after
	 * discovery, the value NCCL reads for this node (see hw_links.c). */
	double link_gts;          /* per-lane transfer rate in GT/s, 0 when unknown */
	int link_width;           /* lanes, 0 when unknown */
	int link_max;             /* link_* are sysfs max_link_* (capability), not a current state */
	int is_virtual;           /* made up by hw_vswitch.c */
	int nvswitch_subtype;     /* hwloc's subtype="NVSwitch" (DGX-2 exports have one with class 0000) */
	char name[64];            /* product name when hwloc knows it */
};

struct tt_gpu {
	int pci;        /* index in model->pci */
	int cuda_index; /* position in PCI bus id order (CUDA_DEVICE_ORDER=PCI_BUS_ID) */
};

/* Links between two PCI devices (GPU-GPU or GPU-NVSwitch), from hwloc's NVLinkBandwidth matrix. */
struct tt_nvlink {
	int a, b; /* indices in model->pci */
	int count;
};

enum tt_link_layer { TT_LL_UNKNOWN, TT_LL_INFINIBAND, TT_LL_ETHERNET };

struct tt_hca_port {
	int num;
	int active;
	enum tt_link_layer link_layer;
	int rate_mbps; /* active_speed x width in Mb/s (NCCL's unit), 0 when unknown */
};

struct tt_hca {
	char name[32];   /* mlx5_0; "" when only a PCI class 0x0207 device is known */
	int pci;         /* index in model->pci, -1 when not on PCI (soft RoCE) */
	uint64_t node_guid;
	uint64_t sys_image_guid;
	int nports;
	struct tt_hca_port ports[TT_HCA_MAX_PORTS];
};

struct tt_netif {
	char name[32];
	int pci;          /* index in model->pci, -1 for virtual interfaces */
	int up;
	int excluded;     /* lo, docker*, virbr*, bridges, veth: never a NCCL socket interface */
	int carries_node_address; /* holds the address the node's hostname resolves to */
};

/* Things discovery found but could not use, for the commands to print (one line each). */
#define TT_HW_MAX_WARNINGS 8
#define TT_HW_WARNING_LEN 256

struct tt_hw_model {
	char source[256]; /* the XML file or "this machine", for messages */
	char arch[16];    /* x86_64, arm64, ppc64 (NCCL's names) */
	char rdma_note[128]; /* why no HCA was found, when none was ("" otherwise) */
	/* What tells a VM from bare metal (hw_vswitch.c): DMI as hwloc read it (live: this
	 * machine's /sys/class/dmi/id; an export: its DMISysVendor/DMIProductName infos), and the CPU's
	 * hypervisor flag in /proc/cpuinfo (live x86 only; -1 unknown). */
	char dmi_vendor[64];
	char dmi_product[64];
	int cpu_hypervisor;
	cpu_set_t all_cpus;
	int nnuma, npci, ngpu, nnvlink, nhca, nnetif;
	struct tt_numa *numa;
	struct tt_pci *pci;
	struct tt_gpu *gpu;     /* sorted by cuda_index */
	struct tt_nvlink *nvlink;
	struct tt_hca *hca;     /* sorted by name */
	struct tt_netif *netif;
	int nwarnings;
	char warnings[TT_HW_MAX_WARNINGS][TT_HW_WARNING_LEN];
};

/* Reads the node. On failure returns -1, *m is NULL, err names the input that failed. */
int tt_hw_discover(const struct tt_hw_options *o, struct tt_hw_model **m, tt_err *err);
void tt_hw_free(struct tt_hw_model *m);

/* The PCI node NCCL makes the parent of PCI device pci, -1 for the CPU (NUMA node) above it.
 * NCCL keeps one node per PCIe switch: from a device it goes up two levels of the PCI tree at a
 * time (device -> downstream port -> upstream port), so the upstream port stands for the switch
 * and downstream and root ports disappear; a host bridge (or running out of bridges) ends at
 * the CPU. Virtual switches (hw_vswitch.c) are single nodes already. The NCCL file is written on
 * this tree and the relations below are computed on it, so both always agree. */
int tt_hw_nccl_parent(const struct tt_hw_model *m, int pci);

/* The nvidia-smi topo -m relation between two PCI devices, nearest first. */
enum tt_hw_rel { TT_REL_X, TT_REL_NV, TT_REL_PIX, TT_REL_PXB, TT_REL_PHB, TT_REL_NODE, TT_REL_SYS };

/* Relation of PCI devices a and b; *nvlinks gets the NVLink count for TT_REL_NV (may be NULL).
 * PIX: both below the same PCIe switch; PXB: a common switch further up; PHB: the same host
 * bridge; NODE: the same NUMA node (or both unknown); SYS: across NUMA nodes. NCCL's path types
 * are the same except that it has no NODE (it says PHB there). */
enum tt_hw_rel tt_hw_relation(const struct tt_hw_model *m, int a, int b, int *nvlinks);
/* "X", "NV4", "PIX", ... into buf. */
const char *tt_hw_rel_name(enum tt_hw_rel rel, int nvlinks, char *buf, size_t len);

/* NVIDIA GPU (class 0x03xx, vendor 0x10de) and NVSwitch (class 0x0680 and vendor 0x10de, or
 * hwloc's subtype NVSwitch). */
int tt_pci_is_nvidia_gpu(const struct tt_pci *p);
int tt_pci_is_nvswitch(const struct tt_pci *p);

/* NUMA node of a PCI device, -1 when unknown. */
int tt_hw_pci_numa(const struct tt_hw_model *m, int pci);
/* Index of the PCI node with this bus id, -1 when absent. */
int tt_hw_find_pci(const struct tt_hw_model *m, const char *busid);

/* CPU sets as Linux cpumap text ("0000ffff,00ff00ff": 32-bit words, most significant first, as
 * NCCL reads it; the list form "0-7,16-23" is tt_cpuset.h's). nwords32 is the cpumap width (at
 * least the words needed). Returns -1 if buf is too small. */
int tt_cpuset_to_cpumap(const cpu_set_t *set, int nwords32, char *buf, size_t len);

/* Model building blocks shared by the discovery sources (return the new index, -1 on ENOMEM). */
int tt_hw_add_pci(struct tt_hw_model *m, const struct tt_pci *p);
int tt_hw_add_hca(struct tt_hw_model *m, const struct tt_hca *h);
int tt_hw_add_netif(struct tt_hw_model *m, const struct tt_netif *n);
int tt_hw_add_nvlink(struct tt_hw_model *m, int a, int b, int count);
/* Index of the HCA with this name, -1 when absent. */
int tt_hw_find_hca(const struct tt_hw_model *m, const char *name);
/* Whether PCI node pci is (a function of) an RDMA HCA. */
int tt_hw_pci_is_hca(const struct tt_hw_model *m, int pci);
/* An HCA NCCL can use: it has a name and an active port, or its port states are unknown (an
 * export without them). NCCL_IB_HCA lists these and the NCCL file describes them. */
int tt_hca_usable(const struct tt_hca *h);
/* Records a warning for the commands to print (beyond TT_HW_MAX_WARNINGS the last one says so). */
void tt_hw_warn(struct tt_hw_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Rebuilds model->gpu from the PCI nodes (NVIDIA class 0x03) in bus id order and sorts HCAs. */
int tt_hw_finish(struct tt_hw_model *m);

#endif
