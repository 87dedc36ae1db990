/* SPDX-License-Identifier: MIT */
/* nccl_xml_check.c — see nccl_xml_check.h. */
#include "nccl_xml_check.h"
#include "cunit_main.h"
#include "hw_nccl_xml.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int fail(struct xml_stats *st, const char *what, const char *at)
{
	snprintf(st->problem, sizeof(st->problem), "%s near: %.60s", what, at);
	return -1;
}

/* The strings NCCL's table knows, and "" (how NCCL itself writes a speed sysfs does not give). */
static int link_speed_ok(const char *v)
{
	static const char *const ok[] = { "", "2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s",
					  "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe",
					  "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(v, ok[i]) == 0)
			return 1;
	return 0;
}

static int cpumap_ok(const char *v)
{
	size_t n = strlen(v);

	if (n < 8 || (n + 1) % 9 != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((i % 9 == 8) ? v[i] != ',' : !isxdigit((unsigned char)v[i]) || isupper((unsigned char)v[i]))
			return 0;
	return 1;
}

static int busid_ok(const char *v)
{
	unsigned a, b, c, d;
	int n = 0;

	for (const char *p = v; *p; p++)
		if (isupper((unsigned char)*p))
			return 0;
	return sscanf(v, "%4x:%2x:%2x.%1x%n", &a, &b, &c, &d, &n) == 4 && v[n] == '\0' && n == 12;
}

static int check_attr(struct xml_stats *st, const char *elem, const char *name, const char *value)
{
	if (strcmp(name, "link_speed") == 0 && !link_speed_ok(value))
		return fail(st, "link_speed NCCL does not know", value);
	if (strcmp(name, "busid") == 0 && !busid_ok(value))
		return fail(st, "busid not dddd:bb:dd.f lower case", value);
	if (strcmp(name, "affinity") == 0 && !cpumap_ok(value))
		return fail(st, "affinity not in cpumap form", value);
	if (strcmp(elem, "pci") == 0 && strcmp(name, "busid") == 0 && strncmp(value, "ffff:ff:", 8) == 0)
		st->virtual_switches++;
	return 0;
}

/* Parses the way NCCL's hand-written parser does and checks its limits. */
int nccl_xml_check(const char *xml, struct xml_stats *st)
{
	int depth = 0, children[64] = { 0 };
	const char *p = xml;

	memset(st, 0, sizeof(*st));
	if (strstr(xml, "<?xml"))
		return fail(st, "XML declaration", strstr(xml, "<?xml"));
	if (strchr(xml, '\t'))
		return fail(st, "tab", strchr(xml, '\t'));
	while (*p) {
		char elem[64], name[300], value[300];
		int n, nattrs = 0;

		if (*p == ' ' || *p == '\n' || *p == '\r') {
			p++;
			continue;
		}
		if (*p != '<')
			return fail(st, "text between tags", p);
		if (p[1] == '/') {
			p = strchr(p, '>');
			if (!p || depth == 0)
				return fail(st, "unbalanced close", xml);
			depth--;
			p++;
			continue;
		}
		if (sscanf(p + 1, "%63[a-z0-9]%n", elem, &n) != 1)
			return fail(st, "bad element name", p);
		p += 1 + n;
		st->elements++;
		st->cpus += strcmp(elem, "cpu") == 0;
		st->pcis += strcmp(elem, "pci") == 0;
		st->nets += strcmp(elem, "net") == 0;
		if (depth > 0 && ++children[depth - 1] > 640)
			return fail(st, "more than 640 children", p);
		while (*p == ' ') {
			value[0] = '\0';
			if (sscanf(p + 1, "%299[a-z_]=\"%n", name, &n) != 1 || n == 0)
				return fail(st, "attribute not name=\"value\" after one space", p);
			if (p[1 + n] != '"' && (sscanf(p + 1 + n, "%299[^\"]", value) != 1 || strchr(value, '\n')))
				return fail(st, "attribute value not closed on its line", p);
			n += (int)strlen(value);
			if (p[1 + n] != '"')
				return fail(st, "attribute value not closed by a quote", p);
			n++;
			if (strlen(name) > 255 || strlen(value) > 255)
				return fail(st, "attribute longer than 255", p);
			if (++nattrs > 16)
				return fail(st, "more than 16 attributes", p);
			if (check_attr(st, elem, name, value) < 0)
				return -1;
			p += 1 + n;
		}
		if (p[0] == '/' && p[1] == '>') {
			p += 2;
		} else if (p[0] == '>') {
			if (depth >= 63)
				return fail(st, "too deep", p);
			children[depth] = 0;
			depth++;
			p++;
		} else {
			return fail(st, "tag not closed on its line", p);
		}
	}
	if (depth != 0)
		return fail(st, "unclosed element", xml);
	if (st->elements > TT_NCCL_XML_MAX_ELEMENTS)
		return fail(st, "more than 256 elements", xml);
	return 0;
}

void nccl_xml_check_ok(const char *what, const char *xml, struct xml_stats *st)
{
	int rc = nccl_xml_check(xml, st);

	if (rc != 0)
		fprintf(stderr, "%s: %s\n", what, st->problem);
	CU_ASSERT_EQUAL(rc, 0);
}
