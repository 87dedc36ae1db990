/* SPDX-License-Identifier: MIT */
/* fuzz_layout.c — the env contract's fact gathering and formulas (layout/layout): the input is an
 * environment, one NAME=VALUE per line (TT_FUZZ_PORT_RANGE=LO-HI stands for the plugin's
 * port_range setting). Facts that are accepted must give ranks inside their world, a MASTER_PORT
 * inside its range and every variable of the contract; tasks-per-node and port lists must parse
 * to numbers that agree with each other. */
#include "layout.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_var(void *ctx, const char *name, const char *value)
{
	FUZZ_CHECK(name[0] && value[0] && !strchr(value, '\n'));
	++*(int *)ctx;
	return 0;
}

/* What every computed contract must satisfy. */
static void check_env(const struct tt_step_facts *f, const struct tt_task_env *e)
{
	int nvars = 0;

	FUZZ_CHECK(e->rank < e->world_size && e->local_rank < e->local_world_size);
	FUZZ_CHECK(e->node_rank < e->nnodes && e->master_addr[0]);
	if (!f->resv_ports[0])
		FUZZ_CHECK(e->master_port >= f->ports.lo && e->master_port <= f->ports.hi);
	FUZZ_CHECK(e->nwarnings <= TT_WARN_MAX);
	FUZZ_CHECK(tt_task_env_foreach(e, count_var, &nvars) == 0 && nvars >= 9);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tt_step_facts f;
	static struct tt_task_env e;
	char *text = fuzz_cstr(data, size);
	int n;
	char **env = fuzz_split(text, "\n", NULL, &n);
	const char *v;
	tt_err err = { "" };
	uint32_t on_node, nnodes, ntasks;
	uint16_t port;

	/* The parsers on their own, with the node index taken from the input. */
	if ((v = tt_env_array(env, "SLURM_TASKS_PER_NODE")) &&
	    tt_tasks_per_node(v, size % 7, &on_node, &nnodes, &ntasks, &err) == 0)
		FUZZ_CHECK(on_node >= 1 && size % 7 < nnodes && nnodes <= ntasks);
	if ((v = tt_env_array(env, "SLURM_STEP_RESV_PORTS")) && tt_resv_ports_first(v, &port, &err) == 0)
		FUZZ_CHECK(port > 0);

	if (tt_step_facts_from_env(&f, tt_env_array, env, &err) != 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
		goto out;
	}
	if ((v = tt_env_array(env, "TT_FUZZ_PORT_RANGE")) && tt_port_range_parse(v, &f.ports, &err) == 0)
		FUZZ_CHECK(f.ports.lo >= 1024 && f.ports.lo <= f.ports.hi);
	FUZZ_CHECK(f.ports.lo <= f.ports.hi);
	port = tt_master_port(f.job_id, f.step_id, f.ports);
	FUZZ_CHECK(port >= f.ports.lo && port <= f.ports.hi);
	f.cpus = size > 0 ? data[0] : 0;
	if (tt_layout_compute(&f, &e, &err) == 0)
		check_env(&f, &e);
	/* train-run's workers: 1..8 per node, every one of them. */
	for (uint32_t nproc = 1 + (size > 1 ? data[1] % 8 : 0), local = 0; local < nproc; local++)
		if (tt_layout_compute_worker(&f, nproc, NULL, local, &e, &err) == 0) {
			check_env(&f, &e);
			FUZZ_CHECK(e.local_world_size == nproc && e.local_rank == local);
		}
out:
	free(env);
	free(text);
	return 0;
}
