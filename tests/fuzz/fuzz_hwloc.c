/* SPDX-License-Identifier: MIT */
/* fuzz_hwloc.c — the node model from an hwloc XML export and everything written from it
 * (topo/hw_discover -> hw_nccl_xml, hw_report JSON and matrix view, hw_policy). Structure-aware:
 * the input does not go to hwloc as text (libhwloc 2.9's own parser crashes on some malformed
 * XML, which is hwloc's bug, not ours); it chooses the attribute values, names and element
 * counts of a well-formed hwloc 2 export — packages, NUMA nodes, PUs, PCI trees of host bridges,
 * bridges and devices, InfiniBand and network OS devices, an NVLink bandwidth matrix. Every model
 * that loads must give valid JSON, an NCCL topology file NCCL's parser can read (attribute values
 * without quotes or markup, balanced elements) and a rank policy for each GPU. */
#include "hw_model.h"
#include "hw_nccl_xml.h"
#include "hw_policy.h"
#include "hw_report.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the generator: bytes -> a well-formed hwloc XML export -------------------------------- */

#define MAX_PCI 48
#define MAX_PCIDEV 32

struct gen {
	const uint8_t *p, *end;
	FILE *out;
	int gp;                       /* next gp_index */
	int npci;
	int pcidev_gp[MAX_PCIDEV];    /* gp_index of each PCIDev, for the NVLink matrix */
	int npcidev;
};

/* A number below n from the next input byte (two bytes when n > 256); 0 once input runs out. */
static unsigned pick(struct gen *g, unsigned n)
{
	unsigned v;

	if (n <= 1 || g->p >= g->end)
		return 0;
	v = *g->p++;
	if (n > 256 && g->p < g->end)
		v = v << 8 | *g->p++;
	return v % n;
}

/* Up to maxlen characters of attribute text, escaped for XML: letters and digits, punctuation
 * hwloc and our writers treat specially (quotes, markup, backslash, comma, colon), UTF-8. */
static void text(struct gen *g, size_t maxlen)
{
	static const char *const chars[] = {
		"a", "Z", "0", "9", " ", "_", "-", ".", ":", "/", ",", ";", "=", "%", "\\", "&quot;",
		"&lt;", "&gt;", "&amp;", "&apos;", "\xc3\xa9", "\xe2\x80\x94", "x", "mlx5_", "eth", "GPU",
	};
	size_t len = pick(g, (unsigned)maxlen + 1);

	for (size_t i = 0; i < len; i++)
		fputs(chars[pick(g, sizeof(chars) / sizeof(chars[0]))], g->out);
}

/* One of the strings of a NULL-terminated list, or (the last choice) fuzzer-made text. */
static void choice(struct gen *g, const char *const *list)
{
	unsigned n = 0, i;

	while (list[n])
		n++;
	i = pick(g, n + 1);
	if (i < n)
		fputs(list[i], g->out);
	else
		text(g, 40);
}

static void info(struct gen *g, const char *name, const char *const *values)
{
	fprintf(g->out, "<info name=\"%s\" value=\"", name);
	choice(g, values);
	fputs("\"/>\n", g->out);
}

/* Each pick() is its own statement below: C leaves the order of function arguments open, and
 * gcc (the replay) and clang (libFuzzer) must turn an input into the same XML. */
static void busid(struct gen *g, const char *attr)
{
	unsigned domain = pick(g, 3) == 0 ? pick(g, 0x10000) : 0, bus = pick(g, 256), dev = pick(g, 32);
	unsigned func = pick(g, 8);

	fprintf(g->out, " %s=\"%04x:%02x:%02x.%x\"", attr, domain, bus, dev, func);
}

static void pci_attrs(struct gen *g, unsigned class_id)
{
	static const unsigned vendors[] = { 0x10de, 0x15b3, 0x8086, 0x1022, 0x14e4, 0 };
	static const char *const speeds[] = { "0.000000", "3.938462", "7.876923", "15.753846", "31.507692",
					      "63.015385", "126.030769", "252.061538", "1.000000", "2.500000",
					      "-4.000000", "1e30", "nan", NULL };
	unsigned vendor = vendors[pick(g, 6)], device, subvendor, subdevice, revision;

	if (!vendor)
		vendor = pick(g, 0x10000);
	device = pick(g, 0x10000);
	subvendor = pick(g, 2) ? vendor : pick(g, 0x10000);
	subdevice = pick(g, 0x10000);
	revision = pick(g, 256);
	fprintf(g->out, " pci_type=\"%04x [%04x:%04x] [%04x:%04x] %02x\" pci_link_speed=\"", class_id, vendor,
		device, subvendor, subdevice, revision);
	choice(g, speeds);
	fputs("\"", g->out);
}

static void osdev(struct gen *g)
{
	static const char *const hca_names[] = { "mlx5_0", "mlx5_1", "mlx5_10", "rxe0", "", NULL };
	static const char *const net_names[] = { "eth0", "ib0", "ens1f0", "docker0", "lo", "veth1", "br-x", NULL };
	static const char *const guids[] = { "a088:c203:0000:1234", "0000:0000:0000:0000", "ffff:ffff:ffff:ffff",
					     "zz", "1:2:3:4:5:6:7:8:9", NULL };
	static const char *const states[] = { "4", "1", "0", "-1", "99999999999", NULL };
	unsigned type = pick(g, 4);

	if (type == 0) { /* InfiniBand / RoCE HCA */
		fprintf(g->out, "<object type=\"OSDev\" gp_index=\"%d\" name=\"", g->gp++);
		choice(g, hca_names);
		fputs("\" osdev_type=\"3\">\n", g->out);
		info(g, "NodeGUID", guids);
		info(g, "SysImageGUID", guids);
		for (unsigned n = pick(g, 7), i = 0; i < n; i++) {
			fprintf(g->out, "<info name=\"Port%uState\" value=\"", pick(g, 6));
			choice(g, states);
			fputs("\"/>\n", g->out);
		}
		if (pick(g, 2))
			fputs("<info name=\"Port1LID\" value=\"0x1\"/>\n", g->out);
	} else if (type == 1) { /* network interface */
		fprintf(g->out, "<object type=\"OSDev\" gp_index=\"%d\" name=\"", g->gp++);
		choice(g, net_names);
		fputs("\" osdev_type=\"2\">\n", g->out);
		if (pick(g, 2))
			fputs("<info name=\"Address\" value=\"00:11:22:33:44:55\"/>\n", g->out);
	} else { /* GPU and co-processor devices: the model ignores them, hwloc must not mind */
		fprintf(g->out, "<object type=\"OSDev\" gp_index=\"%d\" name=\"%s%u\" osdev_type=\"%u\">\n",
			g->gp++, type == 2 ? "cuda" : "nvidia", pick(g, 16), type == 2 ? 5 : 1);
	}
	fputs("</object>\n", g->out);
}

/* A PCI object under a host bridge (depth 1 and below): a bridge with children or a device. */
static void pci_object(struct gen *g, int depth)
{
	static const unsigned classes[] = { 0x0302, 0x0300, 0x0207, 0x0200, 0x0680, 0x0604, 0x0108, 0x0c03 };
	int bridge = depth < 5 && pick(g, 3) == 0;

	if (g->npci >= MAX_PCI)
		return;
	g->npci++;
	if (bridge) {
		unsigned sec = pick(g, 256), sub = sec + pick(g, 256 - sec);

		fprintf(g->out, "<object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"1-1\" depth=\"%d\" "
			"bridge_pci=\"0000:[%02x-%02x]\"", g->gp++, depth, sec, sub);
		busid(g, "pci_busid");
		pci_attrs(g, 0x0604);
		fputs(">\n", g->out);
		for (unsigned n = pick(g, 5), i = 0; i < n; i++)
			pci_object(g, depth + 1);
	} else {
		unsigned class_id = classes[pick(g, 8)];

		if (pick(g, 8) == 0)
			class_id = pick(g, 0x10000);
		if (g->npcidev < MAX_PCIDEV)
			g->pcidev_gp[g->npcidev++] = g->gp;
		fprintf(g->out, "<object type=\"PCIDev\" gp_index=\"%d\"", g->gp++);
		busid(g, "pci_busid");
		pci_attrs(g, class_id);
		fputs(">\n", g->out);
		if (pick(g, 2)) {
			static const char *const names[] = { "GH100 [H100 SXM5 80GB]", "NVSwitch",
							     "MT2910 Family [ConnectX-7]", NULL };

			info(g, "PCIDevice", names);
		}
		for (unsigned n = pick(g, 4), i = 0; i < n; i++)
			osdev(g);
	}
	fputs("</object>\n", g->out);
}

static void host_bridge(struct gen *g)
{
	unsigned sec = pick(g, 256), sub = sec + pick(g, 256 - sec);
	unsigned domain = pick(g, 4) == 0 ? pick(g, 0x10000) : 0;

	fprintf(g->out, "<object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"0-1\" depth=\"0\" "
		"bridge_pci=\"%04x:[%02x-%02x]\">\n", g->gp++, domain, sec, sub);
	for (unsigned n = 1 + pick(g, 6), i = 0; i < n; i++)
		pci_object(g, 1);
	fputs("</object>\n", g->out);
}

static void cpuset_attrs(FILE *out, unsigned cpus, unsigned nodes)
{
	fprintf(out, " cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\"",
		cpus, cpus, nodes, nodes);
}

static void package(struct gen *g, unsigned index, unsigned first_cpu, unsigned ncpus)
{
	static const char *const vendors[] = { "GenuineIntel", "AuthenticAMD", "ARM", NULL };
	static const char *const numbers[] = { "6", "25", "143", "15", "23", "0", "-1", "2147483648", NULL };
	unsigned cpus = ((1u << ncpus) - 1) << first_cpu;

	fprintf(g->out, "<object type=\"Package\" os_index=\"%u\"", index);
	cpuset_attrs(g->out, cpus, 1u << index);
	fprintf(g->out, " gp_index=\"%d\">\n", g->gp++);
	if (pick(g, 4))
		info(g, "CPUVendor", vendors);
	if (pick(g, 4))
		info(g, "CPUFamilyNumber", numbers);
	if (pick(g, 4))
		info(g, "CPUModelNumber", numbers);
	fprintf(g->out, "<object type=\"NUMANode\" os_index=\"%u\"", index);
	cpuset_attrs(g->out, cpus, 1u << index);
	fprintf(g->out, " gp_index=\"%d\" local_memory=\"%u\"/>\n", g->gp++, 1u << 30);
	for (unsigned c = first_cpu; c < first_cpu + ncpus; c++) {
		fprintf(g->out, "<object type=\"PU\" os_index=\"%u\"", c);
		cpuset_attrs(g->out, 1u << c, 1u << index);
		fprintf(g->out, " gp_index=\"%d\"/>\n", g->gp++);
	}
	for (unsigned n = pick(g, 3), i = 0; i < n; i++)
		host_bridge(g);
	/* An HCA or interface without a PCI parent (soft RoCE, virtual NICs). */
	if (pick(g, 4) == 0)
		osdev(g);
	fputs("</object>\n", g->out);
}

/* hwloc's NVLinkBandwidth matrix over some of the PCI devices (MB/s). */
static void nvlinks(struct gen *g)
{
	static const unsigned values[] = { 0, 0, 25000, 50000, 100000, 125000, 150000, 20000, 40000, 450000 };
	char *indexes = NULL, *matrix = NULL;
	size_t ilen = 0, mlen = 0;
	unsigned n = 2 + pick(g, (unsigned)g->npcidev - 1), start = pick(g, (unsigned)g->npcidev);
	FILE *i = open_memstream(&indexes, &ilen), *m = open_memstream(&matrix, &mlen);

	if (!i || !m)
		abort();
	for (unsigned k = 0; k < n; k++)
		fprintf(i, "PCIDev:%d ", g->pcidev_gp[(start + k) % (unsigned)g->npcidev]);
	for (unsigned k = 0; k < n * n; k++) {
		unsigned v = values[pick(g, 10)];

		fprintf(m, "%u ", pick(g, 16) == 0 ? pick(g, 1u << 16) * 1000 : v);
	}
	fclose(i);
	fclose(m);
	fprintf(g->out, "<distances2hetero nbobjs=\"%u\" kind=\"25\" name=\"NVLinkBandwidth\">\n"
		"<indexes length=\"%zu\">%s</indexes>\n<u64values length=\"%zu\">%s</u64values>\n"
		"</distances2hetero>\n", n, ilen, indexes, mlen, matrix);
	free(indexes);
	free(matrix);
}

/* The whole export: 1-4 packages of 1-4 PUs, each with its NUMA node and I/O. */
static char *generate(const uint8_t *data, size_t size, size_t *len)
{
	static const char *const archs[] = { "x86_64", "aarch64", "ppc64le", "ppc64", NULL };
	struct gen g = { .p = data, .end = data + size, .gp = 2 };
	char *xml = NULL;
	unsigned npkg = 1 + pick(&g, 4), per = 1 + pick(&g, 4), all = (1u << (npkg * per)) - 1;

	g.out = open_memstream(&xml, len);
	if (!g.out)
		abort();
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
	      "<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\"", g.out);
	cpuset_attrs(g.out, all, (1u << npkg) - 1);
	fputs(" gp_index=\"1\">\n", g.out);
	if (pick(&g, 8))
		info(&g, "Architecture", archs);
	for (unsigned p = 0; p < npkg; p++)
		package(&g, p, p * per, per);
	fputs("</object>\n", g.out);
	if (g.npcidev >= 2 && pick(&g, 3))
		nvlinks(&g);
	fputs("</topology>\n", g.out);
	fclose(g.out);
	return xml;
}

/* ---- oracles for what the writers produce -------------------------------------------------- */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	for (p++; *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
	}
	return p + 1;
}

static const char *json_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		if (!(*++p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p += p[1] == '+' || p[1] == '-' ? 2 : 1;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

/* A JSON container: members "key": value (object) or values (array), comma-separated. */
static const char *json_container(const char *p, int depth, char close)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			if (*p != '"' || !(p = json_string(p)))
				return NULL;
			p = json_ws(p);
			if (*p != ':')
				return NULL;
			p++;
		}
		if (!(p = json_value(p, depth + 1)))
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = json_ws(p + 1);
	}
}

static const char *json_value(const char *p, int depth)
{
	p = json_ws(p);
	if (depth > 32)
		return NULL;
	switch (*p) {
	case '{': return json_container(p, depth, '}');
	case '[': return json_container(p, depth, ']');
	case '"': return json_string(p);
	case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
	default: return json_number(p);
	}
}

static int json_valid(const char *s)
{
	const char *end = json_value(s, 0);

	return end && *json_ws(end) == '\0';
}

/* NCCL's topology parser: elements <name attr="value" ...>, </name> or <name .../>, properly
 * nested, nothing but white space between them, values without quotes, markup or line breaks. */
static int nccl_xml_valid(const char *p)
{
	char stack[16][16];
	int depth = 0;

	for (;;) {
		size_t n;
		int closing;

		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			return depth == 0;
		if (*p++ != '<')
			return 0;
		closing = *p == '/';
		p += closing;
		n = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
		if (n == 0 || n >= sizeof(stack[0]))
			return 0;
		if (closing) {
			if (depth == 0 || strncmp(stack[depth - 1], p, n) || stack[depth - 1][n] || p[n] != '>')
				return 0;
			depth--;
			p += n + 1;
			continue;
		}
		if (depth == 16)
			return 0;
		memcpy(stack[depth], p, n);
		stack[depth++][n] = '\0';
		p += n;
		for (;;) {
			while (*p == ' ')
				p++;
			if (p[0] == '/' && p[1] == '>') {
				depth--;
				p += 2;
				break;
			}
			if (*p == '>') {
				p++;
				break;
			}
			n = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
			if (n == 0 || p[n] != '=' || p[n + 1] != '"')
				return 0;
			p += n + 2;
			n = strcspn(p, "\"<>&\n\r\t");
			if (p[n] != '"')
				return 0;
			p += n + 1;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t xml_len, out_len;
	char *xml = generate(data, size, &xml_len), path[64], *out;
	int fd = fuzz_memfile((const uint8_t *)xml, xml_len, path, sizeof(path));
	struct tt_hw_options o = { .input_xml = path, .virtual_switches = size > 0 && data[size - 1] & 1 };
	struct tt_hw_model *m;
	struct tt_rank_policy policy;
	tt_err err = { "" };

	/* Like the commands: never load the hwloc plugins discovery does not use. */
	setenv("HWLOC_PLUGINS_BLACKLIST", TT_HWLOC_UNUSED_PLUGINS, 0);
	if (tt_hw_discover(&o, &m, &err) != 0) {
		FUZZ_CHECK(err.msg[0] != '\0' && m == NULL);
		goto out;
	}
	FUZZ_CHECK(m->ngpu >= 0 && m->ngpu <= m->npci);
	if (tt_hw_render_json(m, &out, &out_len, &err) == 0) {
		FUZZ_CHECK(strlen(out) == out_len && json_valid(out));
		free(out);
	}
	if (tt_nccl_xml_render(m, &out, &out_len, &err) == 0) {
		FUZZ_CHECK(strlen(out) == out_len && nccl_xml_valid(out));
		free(out);
	} else {
		FUZZ_CHECK(err.msg[0] != '\0');
	}
	if (tt_hw_render_show(m, &out, &out_len, &err) == 0) {
		FUZZ_CHECK(strlen(out) == out_len);
		free(out);
	}
	for (int gpu = -1; gpu < m->ngpu; gpu++)
		if (tt_hw_rank_policy(m, gpu, &policy, &err) == 0)
			FUZZ_CHECK(policy.cuda_index == gpu && strlen(policy.cpu_list) < sizeof(policy.cpu_list));
	tt_hw_free(m);
out:
	close(fd);
	free(xml);
	return 0;
}
