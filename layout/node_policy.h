/* SPDX-License-Identifier: MIT */
/* node_policy.h — what a node's topology probe tells the SPANK plugin: the node's NCCL_IB_HCA and
 * NCCL_SOCKET_IFNAME, each GPU's NUMA-local CPUs (the tasks' CPU binding, cpu_bind.h) and the
 * warnings to show, as the text report `train-topo probe` writes on its standard output and the
 * plugin reads from a pipe (spank/topo_file.c). Writer and strict parser live here together, so
 * the plugin needs neither hwloc nor the hardware model to read it. The report:
 *
 *   train-topo-probe 1                  first line, the format's version
 *   nccl_socket_ifname =eth0            at most once; absent when no interface qualifies
 *   nccl_ib_hca =mlx5_0:1,mlx5_1:1      at most once; absent when the node has no usable HCA
 *   gpu 0 0-15,32-47                    one per GPU, numbered 0, 1, ... in order; a CPU list
 *   warning TEXT                        at most TT_NODE_PROBE_NOTES
 *   end                                 last line of a report that succeeded
 *   error TEXT                          instead of end: why the probe failed
 *
 * Every line ends with a newline; values hold no control characters (names none either). */
#ifndef TT_NODE_POLICY_H
#define TT_NODE_POLICY_H

#include <sched.h>
#include <stddef.h>

#include "gres.h"
#include "tt_err.h"
#include "tt_strbuf.h"

#define TT_NODE_NOTE_LEN 256
#define TT_NODE_PROBE_NOTES 8	/* warnings one report may carry */
#define TT_NODE_MAX_NOTES (TT_NODE_PROBE_NOTES + 1)	/* and one of the plugin's own */
/* The longest report the plugin reads: 64 GPUs with the longest CPU lists fit. */
#define TT_NODE_REPORT_MAX (1 << 20)

struct tt_node_policy {
	char socket_ifname[34];	/* "=eth0", "" when no interface qualifies */
	char ib_hca[512];	/* "=mlx5_0:1,mlx5_1:1", "" when the node has no usable HCA */
	int ngpus;
	cpu_set_t cpus[TT_GPU_MAX];	/* per node-wide GPU index (tt_gres_node_index) */
	int nnotes;
	char notes[TT_NODE_MAX_NOTES][TT_NODE_NOTE_LEN];
};

/* Appends note to p's warnings (cut to TT_NODE_NOTE_LEN - 1 bytes; dropped beyond
 * TT_NODE_MAX_NOTES). */
void tt_node_policy_add_note(struct tt_node_policy *p, const char *note);

/* The report of a probe that succeeded, from p (notes beyond TT_NODE_PROBE_NOTES are left out,
 * control characters in them become spaces). -1 with err when p holds a value the format cannot
 * carry or memory runs out. */
int tt_node_policy_format(const struct tt_node_policy *p, struct tt_strbuf *sb, tt_err *err);

/* The report of a probe that failed with msg, into buf (cut to fit, always complete);
 * returns its length. Allocates nothing: the plugin's probe child calls it after fork. */
size_t tt_node_policy_format_error(const char *msg, char *buf, size_t len);

/* Reads a report of len bytes into p. 0 for a report ending in end; -1 with err holding the
 * probe's own message for one ending in error, and "topology probe report line N: ..." naming
 * what is wrong for anything else (unknown or repeated names, bad values, GPUs out of order,
 * too many warnings, lines after the last, no last line, a NUL byte). */
int tt_node_policy_parse(const char *text, size_t len, struct tt_node_policy *p, tt_err *err);

#endif
