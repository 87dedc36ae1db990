/* SPDX-License-Identifier: MIT */
/* hw_report.h — the node model for people and scripts: JSON of the whole model, and a view in the
 * style of `nvidia-smi topo -m` (GPUs, NICs, NUMA nodes, GPU/NIC relation matrix with legend). */
#ifndef TT_HW_REPORT_H
#define TT_HW_REPORT_H

#include "hw_model.h"

#include <stddef.h>

/* Both render into a malloc'ed NUL-terminated string (*out, caller frees). */
int tt_hw_render_json(const struct tt_hw_model *m, char **out, size_t *len, tt_err *err);
int tt_hw_render_show(const struct tt_hw_model *m, char **out, size_t *len, tt_err *err);

#endif
