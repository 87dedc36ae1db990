/* SPDX-License-Identifier: MIT */
/* nccl_xml_check.h — an independent check of a topology file against the rules of NCCL's
 * hand-written XML parser (no declaration, spaces only, one-line tags, attribute limits, known
 * link_speed strings, cpumap affinities, lower-case bus ids, 256 elements), for the hw tests. */
#ifndef TT_NCCL_XML_CHECK_H
#define TT_NCCL_XML_CHECK_H

/* What the checker learned about one file. */
struct xml_stats {
	int elements, cpus, pcis, nets, virtual_switches;
	char problem[256];
};

/* 0 when xml is a file NCCL's parser takes; -1 with st->problem saying where it is not. */
int nccl_xml_check(const char *xml, struct xml_stats *st);
/* nccl_xml_check as a CUnit assertion that prints the problem under the label what. */
void nccl_xml_check_ok(const char *what, const char *xml, struct xml_stats *st);

#endif
