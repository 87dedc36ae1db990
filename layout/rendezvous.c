/* SPDX-License-Identifier: MIT */
/* rendezvous.c — MASTER_ADDR and MASTER_PORT from every source, in the one precedence of
 * rendezvous.h, and the port formula. */
#include "rendezvous.h"

#include <stdio.h>
#include <string.h>

#include "tt_envnames.h"
#include "tt_parse.h"
#include "tt_port.h"

/* A port in s[0..len), or -1. */
static int port_span(const char *s, size_t len, long long lo, uint32_t *v)
{
	long long x;

	if (tt_parse_int_span(s, len, lo, 65535, &x) != 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

int tt_port_range_parse(const char *text, struct tt_port_range *r, tt_err *err)
{
	const char *dash = strchr(text, '-');
	uint32_t lo, hi;

	if (!dash || port_span(text, (size_t)(dash - text), 1024, &lo) != 0 ||
	    port_span(dash + 1, strlen(dash + 1), 1024, &hi) != 0 || hi < lo)
		return tt_err_set(err, "port range '%s' is not LO-HI with 1024 <= LO <= HI <= 65535 "
				  "(e.g. %d-%d)", text, TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT);
	r->lo = (uint16_t)lo;
	r->hi = (uint16_t)hi;
	return 0;
}

uint16_t tt_master_port(uint32_t job_id, uint32_t step_id, struct tt_port_range r)
{
	uint32_t span = r.hi >= r.lo ? (uint32_t)(r.hi - r.lo) + 1 : 1;
	uint64_t slot = ((uint64_t)(uint32_t)(job_id * 2654435769u) * span) >> 32;
	int64_t off = ((int64_t)slot + (int32_t)step_id) % (int64_t)span;

	if (off < 0)
		off += span;
	return (uint16_t)(r.lo + off);
}

int tt_resv_ports_first(const char *value, uint16_t *port, tt_err *err)
{
	uint32_t first = 0;

	for (const char *p = value;;) {
		size_t len = strcspn(p, ",");
		const char *dash = memchr(p, '-', len);
		uint32_t lo, hi;

		if (port_span(p, dash ? (size_t)(dash - p) : len, 1, &lo) != 0 ||
		    (dash && (port_span(dash + 1, len - (size_t)(dash - p) - 1, 0, &hi) != 0 ||
			      hi < lo)))
			return tt_err_set(err, "SLURM_STEP_RESV_PORTS='%s' is not a list of ports and "
					  "port ranges like 12000-12003,12005", value);
		if (p == value)
			first = lo;
		if (!p[len])
			break;
		p += len + 1;
	}
	*port = (uint16_t)first;
	return 0;
}

/* Sources 4-6 of the port: the step's (reserved, else the formula), else outside Slurm. */
static int fallback_port(const struct tt_rdzv_sources *s, uint16_t *port, tt_err *err)
{
	if (s->slurm && s->resv_ports && s->resv_ports[0])
		return tt_resv_ports_first(s->resv_ports, port, err);
	if (s->slurm) {
		if (s->ports.lo < 1024 || s->ports.hi < s->ports.lo)
			return tt_err_set(err, "port range %u-%u is not LO-HI with 1024 <= LO <= HI",
					  s->ports.lo, s->ports.hi);
		*port = tt_master_port(s->job_id, s->step_id, s->ports);
		return 0;
	}
	if (s->nnodes > 1) {
		*port = TT_PORT_STANDALONE;
		return 0;
	}
	if (tt_free_loopback_port(port, err) != 0)
		return tt_err_wrap(err, "choosing " TT_ENV_MASTER_PORT "; pass --master-port");
	return 0;
}

int tt_rendezvous_resolve(const struct tt_rdzv_sources *s, struct tt_rendezvous *out, tt_err *err)
{
	const char *addr = s->master_addr ? s->master_addr :
			   s->endpoint_host ? s->endpoint_host :
			   s->env_addr && *s->env_addr ? s->env_addr : s->local_addr;
	int port = s->master_port ? s->master_port : s->endpoint_port;
	long long env_port;

	memset(out, 0, sizeof(*out));
	if (!addr)
		addr = s->slurm ? s->step_host : "127.0.0.1";
	if ((size_t)snprintf(out->addr, sizeof(out->addr), "%s", addr) >= sizeof(out->addr))
		return tt_err_set(err, TT_ENV_MASTER_ADDR " '%s' is longer than %zu characters", addr,
				  sizeof(out->addr) - 1);
	/* The step's first host is no longer than any host the nodelist holds. */
	snprintf(out->node0, sizeof(out->node0), "%s", s->slurm ? s->step_host : out->addr);
	if (!port && s->env_port && *s->env_port) {
		if (tt_parse_int(s->env_port, 1, 65535, TT_ENV_MASTER_PORT, &env_port, NULL) != 0)
			return tt_err_set(err, TT_ENV_MASTER_PORT "='%s' in the environment is not a "
					  "port number (1-65535); unset it or pass --master-port",
					  s->env_port);
		port = (int)env_port;
	}
	if (port) {
		out->port = (uint16_t)port;
		return 0;
	}
	return fallback_port(s, &out->port, err);
}
