/* SPDX-License-Identifier: MIT */
/* preflight.h — the node health check train-run makes before its census message (census.h):
 * whether every GPU of the node opens, how fast the node copies memory, and how fast and how far
 * it reaches node 0 (probe.h). A node whose device
 * does not open, or whose number is below a fraction of the nodes' median, is named by node 0
 * and the launch stops through the census's refusal path, before any worker starts: a bad node
 * named in one line instead of a job that hangs or crawls at its pace.
 *
 * The results travel in the census body as key=value words after the host name (census.h):
 *   "mem=MBPS"            memcpy bandwidth in MB/s (10^6 bytes per second); absent: not measured
 *   "net=MBPS"            TCP bandwidth to node 0 (probe.h), MB/s; absent on node 0
 *   "rtt=US"              the median TCP round trip to node 0, microseconds; absent on node 0
 *   "boot=ID"             the kernel's boot id: nodes that share one share a machine
 *   "gpu-fail=DEV WHY"    the first device that did not open and why; last, to the end of line
 * Words a reader does not know are ignored, so later checks can add their own.
 *
 * Before each restart round every check runs again (the network probe to node 0's control
 * port, ctl.h) and travels in the control plane's health message, judged by node 0 with the
 * same function.
 *
 * The judgement (tt_preflight_judge) is pure; the measurements are the thin system edges below. */
#ifndef TT_PREFLIGHT_H
#define TT_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "gres.h"
#include "tt_err.h"

#define TT_PF_FAIL 200			/* longest device failure, with its NUL */
#define TT_PF_BOOT_ID 40		/* longest boot id, with its NUL (a UUID is 36) */
/* Round trips up to this are not told apart: within a data centre rack distance and a busy
 * node's scheduling make them differ by more than 2x, and no link is broken there. */
#define TT_PF_RTT_FLOOR_US 1000
#define TT_PF_MIN_FRACTION 0.5		/* --preflight-min-fraction's default */
#define TT_PF_MEM_BYTES (32u << 20)	/* each of the bandwidth probe's two buffers */
#define TT_PF_MEM_CHUNK (4u << 20)	/* one timed memcpy */
#define TT_PF_MEM_PASSES 4		/* the bandwidth probe's passes over its buffers, at most */
#define TT_PF_MEM_BUDGET_US 80000	/* passes start within this of the probe's start (faults included) */
/* Only for tests: the directory of the NVIDIA device files instead of /dev. */
#define TT_ENV_PREFLIGHT_TEST_DEV_DIR "TRAINRT_PREFLIGHT_TEST_DEV_DIR"

/* What one node found. */
struct tt_preflight {
	uint32_t mem_mbps;		/* memcpy bandwidth, MB/s; 0: not measured */
	uint32_t net_mbps;		/* TCP bandwidth to node 0, MB/s; 0: not measured */
	uint32_t rtt_us;		/* TCP round trip to node 0, us; 0: not measured */
	char gpu_fail[TT_PF_FAIL];	/* "/dev/nvidia1: No such device"; "" when every one opened */
	char boot_id[TT_PF_BOOT_ID];	/* /proc/sys/kernel/random/boot_id; "" when unknown */
};

/* The words of pf for a census body, each after a space, into buf. -1 when they do not fit. */
int tt_preflight_format(const struct tt_preflight *pf, char *buf, size_t len);

/* Reads the words of a census body after the host name ("" or " mem=..."). -1 with err naming
 * the bad word. */
int tt_preflight_parse(const char *words, struct tt_preflight *pf, tt_err *err);

/* Judges n nodes' results: 0 when every node passes; else 1 with *bad the first node that fails
 * and why in why[len]: a device that did not open (before any number), else a bandwidth below
 * fraction x the median of the nodes that measured it, or a round trip above both median /
 * fraction and TT_PF_RTT_FLOOR_US, with both numbers. A number exactly at the line passes;
 * fewer than two measured numbers are not compared. When two nodes share a machine (one boot
 * id: namespaced nodes of a test cluster, containers) only the network bandwidth is compared:
 * they compete for the same memory and CPUs, so the memory bandwidth and the round trip (a
 * one-byte ping's wake-ups on a shared, busy kernel) measure each other, not the nodes, while
 * each node's own link (its veth, a shaped interface) is still what its bandwidth to node 0
 * goes through. k nodes on one machine time-share its CPUs, so a probe may get 1/k of them: the
 * bandwidth is judged against fraction / k there (a shaped link is orders of magnitude
 * slower, the CPU share at most k times). */
int tt_preflight_judge(const struct tt_preflight *pf, uint32_t n, double fraction, uint32_t *bad,
		       char *why, size_t len);

/* The median of the n values (the mean of the middle two for an even n); 0 for n == 0. */
double tt_preflight_median(const uint32_t *v, size_t n);

/* ---- the measurements (system edges) -------------------------------------------------------- */

/* Opens (O_RDWR) and closes the device file of each GPU of gpus: DIR/nvidiaN, N the node-wide
 * index (tt_gres_node_index), DIR /dev (TT_ENV_PREFLIGHT_TEST_DEV_DIR in tests). A GPU named by
 * UUID has no such name and is not checked; nor is any without DIR/nvidiactl (no NVIDIA driver
 * on this node: nothing to open). The first failure goes to pf->gpu_fail. */
void tt_preflight_devices(const struct tt_gpu_list *gpus, int slurm, struct tt_preflight *pf);

/* The kernel's boot id into pf->boot_id ("" when it cannot be read). */
void tt_preflight_boot_id(struct tt_preflight *pf);

/* The node's memcpy bandwidth into pf->mem_mbps: passes copying one TT_PF_MEM_BYTES buffer into
 * another, TT_PF_MEM_PASSES or as many as start within TT_PF_MEM_BUDGET_US (at least one), each
 * TT_PF_MEM_CHUNK timed alone; the best chunk's rate. -1 with err when the buffers cannot be
 * had. */
int tt_preflight_memory(struct tt_preflight *pf, tt_err *err);

#endif
