/* SPDX-License-Identifier: MIT */
/* hw_nccl_xml.h — the node model as an NCCL topology file (NCCL_TOPO_FILE), written in the
 * subset NCCL's hand-written parser accepts: no XML declaration, spaces only, cpumap affinities,
 * PCIe link_speed strings NCCL knows, and few enough elements for its 256-element limit. */
#ifndef TT_HW_NCCL_XML_H
#define TT_HW_NCCL_XML_H

#include "hw_model.h"

#include <stddef.h>

/* NCCL's parser limit on elements in one topology, its own additions included. */
#define TT_NCCL_XML_MAX_ELEMENTS 256

/* 1 when the model holds nothing the file describes (no NVIDIA GPU, no RDMA NIC: NCCL would get
 * one <cpu> and no device), with what the machine has instead into found ("8 GPUs 1002:7408,
 * NICs hsn0 hsn1 without RDMA"); 0 otherwise. train-topo then writes no file. */
int tt_nccl_xml_nothing_to_describe(const struct tt_hw_model *m, char *found, size_t len);
/* Renders the file into a malloc'ed string (*out, caller frees; *len without the NUL). */
int tt_nccl_xml_render(const struct tt_hw_model *m, char **out, size_t *len, tt_err *err);
/* Renders and writes atomically: path holds either its old content or the whole new file. */
int tt_nccl_xml_write_file(const struct tt_hw_model *m, const char *path, tt_err *err);

#endif
