/* SPDX-License-Identifier: MIT */
/* tt_envnames.h — the names of the env contract, and nothing else: the plugin and train-run write
 * these variables (layout/layout.h and layout/rendezvous.h say what each holds and how it is
 * computed), libtrainrt and train-mlp read them. A names-only header in base/ so that the reader
 * (runtime/) needs nothing from layout/, and a grep for a name finds its one definition. */
#ifndef TT_ENVNAMES_H
#define TT_ENVNAMES_H

/* torchrun's names, so a PyTorch program runs unchanged. */
#define TT_ENV_RANK "RANK"
#define TT_ENV_WORLD_SIZE "WORLD_SIZE"
#define TT_ENV_LOCAL_RANK "LOCAL_RANK"
#define TT_ENV_LOCAL_WORLD_SIZE "LOCAL_WORLD_SIZE"
#define TT_ENV_NODE_RANK "NODE_RANK"
#define TT_ENV_GROUP_RANK "GROUP_RANK"
#define TT_ENV_NNODES "NNODES"
#define TT_ENV_ROLE_NAME "ROLE_NAME"
#define TT_ENV_ROLE_RANK "ROLE_RANK"
/* The rendezvous point: rank 0's host and the port its store listens on (layout/rendezvous.h). */
#define TT_ENV_MASTER_ADDR "MASTER_ADDR"
#define TT_ENV_MASTER_PORT "MASTER_PORT"
/* The GPUs a process may use, in CUDA's numbering. */
#define TT_ENV_CUDA_VISIBLE_DEVICES "CUDA_VISIBLE_DEVICES"

/* traintopo's own: the names it set itself (so a second pass, train-run under the plugin, knows
 * which values are the user's), the CPUs a process is bound to, and the topology file. */
#define TT_ENV_SET "TRAIN_TOPO_SET"
#define TT_ENV_CPU_LIST "TRAIN_CPU_LIST"
#define TT_ENV_HWLOC_XML "TRAIN_TOPO_HWLOC_XML"
/* The fd of a worker's progress heartbeat channel under train-run (wrapper/heartbeat.h has the
 * protocol; libtrainrt's trainrt_heartbeat writes it). */
#define TT_ENV_HEARTBEAT_FD "TRAIN_HEARTBEAT_FD"

#endif
