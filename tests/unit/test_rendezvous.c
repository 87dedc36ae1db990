/* SPDX-License-Identifier: MIT */
/* test_rendezvous.c — the rendezvous point's precedence (layout/rendezvous.h): every source is
 * given, then taken away from the top, one at a time, and the next one must win. */
#include "cunit_main.h"
#include "layout.h"
#include "rendezvous.h"

#include <string.h>

/* Every source of a Slurm launch set, each to a value of its own. */
static struct tt_rdzv_sources all_sources(void)
{
	return (struct tt_rdzv_sources){
		.master_addr = "opt-host", .master_port = 1111,
		.endpoint_host = "endpoint-host", .endpoint_port = 2222,
		.env_addr = "env-host", .env_port = "3333",
		.local_addr = "local-host",
		.slurm = true, .step_host = "node07", .resv_ports = "4444-4447",
		.job_id = 1000, .step_id = 0, .ports = { TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT },
	};
}

static void expect(const struct tt_rdzv_sources *s, const char *addr, uint16_t port)
{
	struct tt_rendezvous r;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_rendezvous_resolve(s, &r, &err), 0);
	CU_ASSERT_STRING_EQUAL(r.addr, addr);
	CU_ASSERT_EQUAL(r.port, port);
}

static void test_address_precedence(void)
{
	struct tt_rdzv_sources s = all_sources();

	expect(&s, "opt-host", 1111);
	s.master_addr = NULL;
	expect(&s, "endpoint-host", 1111);
	s.endpoint_host = NULL;
	expect(&s, "env-host", 1111);
	s.env_addr = "";	/* set but empty: not an address */
	expect(&s, "local-host", 1111);
	s.local_addr = NULL;
	expect(&s, "node07", 1111);
	s.slurm = false;
	expect(&s, "127.0.0.1", 1111);
}

static void test_port_precedence(void)
{
	struct tt_rdzv_sources s = all_sources();

	s.master_port = 0;
	expect(&s, "opt-host", 2222);
	s.endpoint_port = 0;
	expect(&s, "opt-host", 3333);
	s.env_port = "";
	expect(&s, "opt-host", 4444);
	s.resv_ports = NULL;
	/* The documented formula: job 1000, step 0 over 29500-32499 (test_layout checks it). */
	expect(&s, "opt-host", 29601);
	s.step_id = 0xfffffffbu;	/* the batch step, just below step 0 */
	expect(&s, "opt-host", 29596);
}

static void test_outside_slurm(void)
{
	struct tt_rdzv_sources s = { .master_addr = "h0", .nnodes = 4, .step_host = "node0",
				     .resv_ports = "4444", .env_port = NULL };
	struct tt_rendezvous r;
	tt_err err;

	/* Several nodes that cannot talk first: torchrun's port; the step's sources do not count. */
	expect(&s, "h0", TT_PORT_STANDALONE);
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), 0);
	CU_ASSERT_STRING_EQUAL(r.node0, "h0");
	/* One node: a free loopback port below the ephemeral range, not the formula's. */
	s.nnodes = 1;
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), 0);
	CU_ASSERT(r.port >= 10000);
	CU_ASSERT_NOT_EQUAL(r.port, TT_PORT_STANDALONE);
}

static void test_node0_is_the_steps_first_host(void)
{
	struct tt_rdzv_sources s = all_sources();
	struct tt_rendezvous r;
	tt_err err;

	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), 0);
	CU_ASSERT_STRING_EQUAL(r.node0, "node07");
}

/* The batch script's job-level values: the job's first host, the batch step's formula port (not
 * step 0's, which the job's first srun step gets), the job's node count. */
static void test_job_rendezvous_of_the_batch_script(void)
{
	char *const env[] = {"SLURM_JOB_ID=1234", "SLURM_JOB_NODELIST=gpu[07-09]", "SLURMD_NODENAME=gpu08",
			     "SLURM_STEP_NODELIST=gpu09", NULL};
	char *const no_job[] = {"SLURM_JOB_NODELIST=gpu[07-09]", NULL};
	char *const no_list[] = {"SLURM_JOB_ID=1234", NULL};
	struct tt_port_range ports = { TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT };
	struct tt_rendezvous r;
	uint32_t nnodes = 0;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_job_rendezvous_from_env(tt_env_array, (void *)env, ports, &r, &nnodes, &err), 0);
	CU_ASSERT_STRING_EQUAL(r.addr, "gpu07");
	CU_ASSERT_EQUAL(r.port, tt_master_port(1234, TT_STEP_BATCH, ports));
	CU_ASSERT_NOT_EQUAL(r.port, tt_master_port(1234, 0, ports));
	CU_ASSERT_EQUAL(nnodes, 3);
	CU_ASSERT_EQUAL(tt_job_rendezvous_from_env(tt_env_array, (void *)no_job, ports, &r, &nnodes, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_JOB_ID"));
	CU_ASSERT_EQUAL(tt_job_rendezvous_from_env(tt_env_array, (void *)no_list, ports, &r, &nnodes, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_JOB_NODELIST"));
}

static void test_bad_sources_are_named(void)
{
	struct tt_rdzv_sources s = all_sources();
	struct tt_rendezvous r;
	char long_host[TT_RDZV_HOST_LEN + 8];
	tt_err err;

	s.master_port = s.endpoint_port = 0;
	s.env_port = "29500x";
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "MASTER_PORT='29500x' in the environment is not a port "
			       "number (1-65535); unset it or pass --master-port");
	s.env_port = "65536";
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), -1);
	/* An option's port wins before the environment is read at all. */
	s.master_port = 1111;
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), 0);
	s.master_port = 0;
	s.env_port = NULL;
	s.resv_ports = "0-3";
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_STEP_RESV_PORTS='0-3'"));
	s.resv_ports = "";
	s.ports = (struct tt_port_range){ 80, 90 };
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "port range 80-90"));
	memset(long_host, 'h', sizeof(long_host) - 1);
	long_host[sizeof(long_host) - 1] = '\0';
	s.master_addr = long_host;
	CU_ASSERT_EQUAL(tt_rendezvous_resolve(&s, &r, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "MASTER_ADDR 'hhh"));
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("rendezvous", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "address precedence", test_address_precedence);
	CU_add_test(s, "port precedence", test_port_precedence);
	CU_add_test(s, "outside Slurm", test_outside_slurm);
	CU_add_test(s, "node 0 is the step's first host", test_node0_is_the_steps_first_host);
	CU_add_test(s, "bad sources are named", test_bad_sources_are_named);
	CU_add_test(s, "the batch script's job-level rendezvous", test_job_rendezvous_of_the_batch_script);
	return 0;
}
