/* SPDX-License-Identifier: MIT */
/* preflight.c — the node health check before the census (see preflight.h). */
#include "preflight.h"
#include "tt_io.h"
#include "tt_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GPU_FAIL "gpu-fail="
#define BOOT "boot="

/* Whether every byte of s is printable ASCII, as one line of the node channel must be. */
static int printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return 0;
	return 1;
}

/* ---- the words ------------------------------------------------------------------------------ */

/* The numbers of a result: its word, what it is in a verdict, whether less is better (a time),
 * how a verdict shows it, and whether it is judged on nodes that share a machine (the node's own
 * link is what differs there; see tt_preflight_judge). */
static const struct metric {
	const char *word;
	size_t offset;
	const char *what;
	int less_is_better;
	double divisor;
	const char *unit;
	const char *format;
	int shared;
} metrics[] = {
	{ "mem=", offsetof(struct tt_preflight, mem_mbps), "memory bandwidth", 0, 1000, "GB/s", "%.1f", 0 },
	{ "net=", offsetof(struct tt_preflight, net_mbps), "network bandwidth to node 0", 0, 1000, "GB/s",
	  "%.2f", 1 },
	{ "rtt=", offsetof(struct tt_preflight, rtt_us), "round trip to node 0", 1, 1, "us", "%.0f", 0 },
};
#define NMETRICS (sizeof(metrics) / sizeof(metrics[0]))

static uint32_t *field(struct tt_preflight *pf, const struct metric *m)
{
	return (uint32_t *)(void *)((char *)pf + m->offset);
}

static uint32_t value(const struct tt_preflight *pf, const struct metric *m)
{
	return *field((struct tt_preflight *)pf, m);
}

int tt_preflight_format(const struct tt_preflight *pf, char *buf, size_t len)
{
	size_t used = 0;
	int n;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	for (size_t i = 0; i < NMETRICS; i++) {
		if (!value(pf, &metrics[i]))
			continue;
		n = snprintf(buf + used, len - used, " %s%" PRIu32, metrics[i].word, value(pf, &metrics[i]));
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	if (pf->boot_id[0]) {
		n = snprintf(buf + used, len - used, " " BOOT "%s", pf->boot_id);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	if (pf->gpu_fail[0]) {
		n = snprintf(buf + used, len - used, " " GPU_FAIL "%s", pf->gpu_fail);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		/* One printable line: the reason is the body's last word, to its end. */
		for (char *p = buf + used; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				*p = '?';
	}
	return 0;
}

int tt_preflight_parse(const char *words, struct tt_preflight *pf, tt_err *err)
{
	const char *p = words;

	memset(pf, 0, sizeof(*pf));
	while (*p) {
		size_t len;

		if (*p != ' ' || p[1] == ' ' || !p[1])
			return tt_err_set(err, "preflight results '%.60s': expected words after one "
					  "space each", words);
		p++;
		if (!strncmp(p, GPU_FAIL, sizeof(GPU_FAIL) - 1)) {
			p += sizeof(GPU_FAIL) - 1;
			if (!*p || strlen(p) >= sizeof(pf->gpu_fail) || !printable(p))
				return tt_err_set(err, "preflight result '" GPU_FAIL "%.60s': expected "
						  "a device and why, 1..%d printable characters", p,
						  TT_PF_FAIL - 1);
			memcpy(pf->gpu_fail, p, strlen(p) + 1);
			return 0;
		}
		len = strcspn(p, " ");
		if (!memchr(p, '=', len))
			return tt_err_set(err, "preflight result '%.*s': expected KEY=VALUE",
					  (int)(len < 60 ? len : 60), p);
		if (!strncmp(p, BOOT, sizeof(BOOT) - 1)) {
			size_t w = len - (sizeof(BOOT) - 1);

			if (w == 0 || w >= sizeof(pf->boot_id))
				return tt_err_set(err, "preflight result '%.*s': expected " BOOT "ID of "
						  "1..%d characters", (int)(len < 60 ? len : 60), p,
						  TT_PF_BOOT_ID - 1);
			memcpy(pf->boot_id, p + sizeof(BOOT) - 1, w);
			pf->boot_id[w] = '\0';
		}
		for (size_t i = 0; i < NMETRICS; i++) {
			size_t w = strlen(metrics[i].word);
			long long v;

			if (strncmp(p, metrics[i].word, w))
				continue;
			if (tt_parse_int_span(p + w, len - w, 1, UINT32_MAX, &v) != 0)
				return tt_err_set(err, "preflight result '%.*s': expected %s%s, a whole "
						  "number from 1", (int)(len < 60 ? len : 60), p,
						  metrics[i].word, metrics[i].less_is_better ? "US" : "MB/s");
			*field(pf, &metrics[i]) = (uint32_t)v;
		}
		p += len;	/* a word of a later check: not this reader's */
	}
	return 0;
}

/* ---- the judgement -------------------------------------------------------------------------- */

static int by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

double tt_preflight_median(const uint32_t *v, size_t n)
{
	uint32_t *s;
	double m;

	if (n == 0)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		return 0;	/* no comparison: a judge without memory passes every node */
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), by_value);
	m = n % 2 ? s[n / 2] : ((double)s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/* The first of the n nodes whose number m is across the line, or -1; the verdict in why. */
static int64_t across(const struct tt_preflight *pf, uint32_t n, const struct metric *m,
		      double fraction, char *why, size_t len)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
	size_t measured = 0;
	double median;
	int64_t bad = -1;
	char a[32], b[32];

	if (!v)
		return -1;	/* no comparison: a judge without memory passes every node */
	for (uint32_t k = 0; k < n; k++)
		if (value(&pf[k], m))
			v[measured++] = value(&pf[k], m);
	median = measured >= 2 ? tt_preflight_median(v, measured) : 0;
	free(v);
	for (uint32_t k = 0; median > 0 && k < n; k++) {
		uint32_t x = value(&pf[k], m);

		if (!x || (m->less_is_better ? x <= median / fraction || x <= TT_PF_RTT_FLOOR_US :
			   x >= fraction * median))
			continue;
		snprintf(a, sizeof(a), m->format, x / m->divisor);
		snprintf(b, sizeof(b), m->format, median / m->divisor);
		if (m->less_is_better)
			snprintf(why, len, "%s %s %s > median %s %s / %g", m->what, a, m->unit, b,
				 m->unit, fraction);
		else
			snprintf(why, len, "%s %s %s < %g x median %s %s", m->what, a, m->unit,
				 fraction, b, m->unit);
		bad = k;
		break;
	}
	return bad;
}

int tt_preflight_judge(const struct tt_preflight *pf, uint32_t n, double fraction, uint32_t *bad,
		       char *why, size_t len)
{
	uint32_t shared = 1;	/* the most nodes on one machine */

	for (uint32_t k = 0; k < n; k++) {
		if (pf[k].gpu_fail[0]) {
			*bad = k;
			snprintf(why, len, "GPU device %s", pf[k].gpu_fail);
			return 1;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		uint32_t same = 1;

		for (uint32_t j = k + 1; pf[k].boot_id[0] && j < n; j++)
			same += !strcmp(pf[k].boot_id, pf[j].boot_id);
		if (same > shared)
			shared = same;
	}
	for (size_t i = 0; i < NMETRICS; i++) {
		int64_t k;

		if (shared > 1 && !metrics[i].shared)
			continue;	/* one machine: these numbers measure each other */
		/* k nodes on one machine time-share its CPUs: a probe may get 1/k of them. */
		k = across(pf, n, &metrics[i], fraction / shared, why, len);
		if (k >= 0) {
			*bad = (uint32_t)k;
			return 1;
		}
	}
	return 0;
}

/* ---- the measurements ----------------------------------------------------------------------- */

void tt_preflight_boot_id(struct tt_preflight *pf)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	pf->boot_id[0] = '\0';
	if (!f)
		return;
	if (!fgets(pf->boot_id, sizeof(pf->boot_id), f))
		pf->boot_id[0] = '\0';
	pf->boot_id[strcspn(pf->boot_id, " \n")] = '\0';
	if (!printable(pf->boot_id))
		pf->boot_id[0] = '\0';
	fclose(f);
}

void tt_preflight_devices(const struct tt_gpu_list *gpus, int slurm, struct tt_preflight *pf)
{
	const char *dir = getenv(TT_ENV_PREFLIGHT_TEST_DEV_DIR);
	char path[256];

	if (!dir || !*dir)
		dir = "/dev";
	snprintf(path, sizeof(path), "%s/nvidiactl", dir);
	if (access(path, F_OK) != 0)
		return;
	for (size_t g = 0; g < gpus->n; g++) {
		int index = tt_gres_node_index(slurm ? tt_env_process : tt_env_none, NULL, gpus,
					       gpus->id[g]);
		int fd;

		if (index < 0)
			continue;
		snprintf(path, sizeof(path), "%s/nvidia%d", dir, index);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			snprintf(pf->gpu_fail, sizeof(pf->gpu_fail), "%.120s does not open (%.60s)", path,
				 strerror(errno));
			return;
		}
		close(fd);
	}
}

/* A buffer of TT_PF_MEM_BYTES in small pages: huge ones would fault faster, but on a node whose
 * memory is fragmented the kernel compacts it first, for up to half a second. */
static char *buffer(void)
{
	void *p = mmap(NULL, TT_PF_MEM_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int tt_preflight_memory(struct tt_preflight *pf, tt_err *err)
{
	int64_t start = tt_now_us(), best = INT64_MAX;
	char *src = buffer(), *dst = buffer();
	volatile char sink;

	if (!src || !dst) {
		if (src)
			munmap(src, TT_PF_MEM_BYTES);
		if (dst)
			munmap(dst, TT_PF_MEM_BYTES);
		return tt_err_errno(err, "preflight: no memory for two buffers of %u MiB: this node's "
				    "memory bandwidth is not measured", TT_PF_MEM_BYTES >> 20);
	}
	/* The pages faulted in first: the copies measure the memory, not the kernel. */
	memset(src, 1, TT_PF_MEM_BYTES);
	memset(dst, 0, TT_PF_MEM_BYTES);
	/* Passes over the whole buffer (far beyond the caches), timed chunk by chunk: the best
	 * chunk is the memory's speed, a chunk cut by a preemption on a busy node is not. */
	for (int pass = 0; pass == 0 || (pass < TT_PF_MEM_PASSES &&
					 tt_now_us() - start < TT_PF_MEM_BUDGET_US); pass++) {
		for (size_t off = 0; off < TT_PF_MEM_BYTES; off += TT_PF_MEM_CHUNK) {
			int64_t t0 = tt_now_us(), t;

			memcpy(dst + off, src + off, TT_PF_MEM_CHUNK);
			sink = dst[off + TT_PF_MEM_CHUNK - 1];	/* used: not optimised away */
			(void)sink;
			t = tt_now_us() - t0;
			if (t < best)
				best = t;
		}
		src[0]++;
	}
	munmap(src, TT_PF_MEM_BYTES);
	munmap(dst, TT_PF_MEM_BYTES);
	if (best < 1)
		best = 1;
	pf->mem_mbps = (uint32_t)((double)TT_PF_MEM_CHUNK / (double)best);	/* bytes/us = MB/s */
	if (pf->mem_mbps == 0)
		pf->mem_mbps = 1;
	return 0;
}
