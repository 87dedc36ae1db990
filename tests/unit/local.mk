# SPDX-License-Identifier: MIT
# tests/unit/: CUnit programs, one per module, all sharing cunit_main.c. `make check` runs them;
# each block only when configure builds the part it tests (and CUnit is there).
AM_TESTS_ENVIRONMENT = TT_TEST_SRCDIR='$(abs_top_srcdir)'; export TT_TEST_SRCDIR; \
	TT_BIN_PROGRAMS='$(bin_PROGRAMS)'; export TT_BIN_PROGRAMS;
UNIT_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
UNIT_LDADD = libttlayout.la libttbase.la $(CUNIT_LIBS)
HW_UNIT_LDADD = libtthw.la $(UNIT_LDADD)
# Every command answers -h/-V and refuses a bad option the same way.
TESTS += tests/wrapper/commands.sh

if !HAVE_CUNIT
# make check without CUnit: one failing test that says what to install.
TESTS += tests/unit/need_cunit.sh
else
check_PROGRAMS += tests/unit/test_err
tests_unit_test_err_SOURCES = tests/unit/test_err.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_err_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_err_LDADD = $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_parse
tests_unit_test_parse_SOURCES = tests/unit/test_parse.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_parse_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_parse_LDADD = $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_file
tests_unit_test_file_SOURCES = tests/unit/test_file.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_file_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_file_LDADD = $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_port
tests_unit_test_port_SOURCES = tests/unit/test_port.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_port_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_port_LDADD = $(UNIT_LDADD)
# base: CPU list text; layout: the topology probe's report (writer and strict parser).
check_PROGRAMS += tests/unit/test_node_policy
tests_unit_test_node_policy_SOURCES = tests/unit/test_node_policy.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_node_policy_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_node_policy_LDADD = $(UNIT_LDADD)

# layout: nodelists, GRES GPU lists, the env contract, the plugin's config parser.
check_PROGRAMS += tests/unit/test_hostlist
tests_unit_test_hostlist_SOURCES = tests/unit/test_hostlist.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_hostlist_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hostlist_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_gres
tests_unit_test_gres_SOURCES = tests/unit/test_gres.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_gres_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_gres_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_rendezvous
tests_unit_test_rendezvous_SOURCES = tests/unit/test_rendezvous.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rendezvous_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rendezvous_LDADD = $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_layout
tests_unit_test_layout_SOURCES = tests/unit/test_layout.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_layout_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_layout_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_het_step
tests_unit_test_het_step_SOURCES = tests/unit/test_het_step.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_het_step_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_het_step_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_plugin_config
tests_unit_test_plugin_config_SOURCES = tests/unit/test_plugin_config.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_plugin_config_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank
tests_unit_test_plugin_config_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_plugin_config_LDADD = libttspank.la $(UNIT_LDADD)

# spank: the step's topology file and the job's directory (no Slurm needed), with this build's
# train-topo as the probe.
if BUILD_TOPO
check_PROGRAMS += tests/unit/test_topo_file
tests_unit_test_topo_file_SOURCES = tests/unit/test_topo_file.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_topo_file_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank \
	-DTT_TEST_PROBE='"$(abs_top_builddir)/train-topo$(EXEEXT)"'
tests_unit_test_topo_file_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_topo_file_LDADD = libttspank.la $(UNIT_LDADD)
endif

# relay: the signal relay's choice of targets.
check_PROGRAMS += tests/unit/test_proctree
tests_unit_test_proctree_SOURCES = tests/unit/test_proctree.c tests/unit/cunit_main.c
tests_unit_test_proctree_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_proctree_LDADD = libttrelay.la $(UNIT_LDADD)

# spank: a step's OCI spool directory, where a container sees its topology file.
check_PROGRAMS += tests/unit/test_oci_spool
tests_unit_test_oci_spool_SOURCES = tests/unit/test_oci_spool.c tests/unit/cunit_main.c
tests_unit_test_oci_spool_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank
tests_unit_test_oci_spool_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_oci_spool_LDADD = libttspank.la $(UNIT_LDADD)

TESTS += $(check_PROGRAMS)

check_PROGRAMS += tests/unit/test_bind
tests_unit_test_bind_SOURCES = tests/unit/test_bind.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_bind_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_bind_LDADD = $(UNIT_LDADD)

# train-run's pure modules (wrapper/).
if BUILD_LAUNCHER
check_PROGRAMS += tests/unit/test_proctable tests/unit/test_output tests/unit/test_options
tests_unit_test_proctable_SOURCES = tests/unit/test_proctable.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_proctable_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_proctable_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_proctable_LDADD = libwrapper.la $(UNIT_LDADD)
tests_unit_test_output_SOURCES = tests/unit/test_output.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_output_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_output_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_output_LDADD = libwrapper.la $(UNIT_LDADD)
tests_unit_test_options_SOURCES = tests/unit/test_options.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_options_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_options_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_options_LDADD = libwrapper.la $(UNIT_LDADD)
# Heartbeats, hang and straggler rules (wrapper/heartbeat.c).
check_PROGRAMS += tests/unit/test_heartbeat
tests_unit_test_heartbeat_SOURCES = tests/unit/test_heartbeat.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_heartbeat_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_heartbeat_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_heartbeat_LDADD = libwrapper.la $(UNIT_LDADD)
# The job-wide straggler report and its JSON (wrapper/steps.c).
check_PROGRAMS += tests/unit/test_steps
tests_unit_test_steps_SOURCES = tests/unit/test_steps.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_steps_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_steps_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_steps_LDADD = libwrapper.la $(UNIT_LDADD)
# The node health check before the census (wrapper/preflight.c).
check_PROGRAMS += tests/unit/test_preflight
tests_unit_test_preflight_SOURCES = tests/unit/test_preflight.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_preflight_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_preflight_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_preflight_LDADD = libwrapper.la $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_census
tests_unit_test_census_SOURCES = tests/unit/test_census.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_census_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_census_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_census_LDADD = libwrapper.la $(UNIT_LDADD) -lpthread
# The control plane's messages, proofs and decisions (wrapper/ctl.c).
check_PROGRAMS += tests/unit/test_ctl
tests_unit_test_ctl_SOURCES = tests/unit/test_ctl.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_ctl_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_ctl_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ctl_LDADD = libwrapper.la $(UNIT_LDADD) -lpthread
# train-run's process edge (wrapper/spawn.c): PATH lookup and starting one worker.
check_PROGRAMS += tests/unit/test_spawn
tests_unit_test_spawn_SOURCES = tests/unit/test_spawn.c wrapper/spawn.c wrapper/signals.c \
	tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_spawn_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_spawn_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_spawn_LDADD = $(UNIT_LDADD)
endif

# Node hardware model (topo/hw_*): pure model, discovery from fixtures, NCCL XML, rank policy.
if BUILD_TOPO

check_PROGRAMS += tests/unit/test_hw_model
tests_unit_test_hw_model_SOURCES = tests/unit/test_hw_model.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_hw_model_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hw_model_LDADD = $(HW_UNIT_LDADD)
HW_FIXTURE = tests/unit/hw_fixture.h tests/unit/hw_fixture.c tests/unit/cunit_main.c tests/unit/cunit_main.h
check_PROGRAMS += tests/unit/test_hw_discover
tests_unit_test_hw_discover_SOURCES = tests/unit/test_hw_discover.c $(HW_FIXTURE)
tests_unit_test_hw_discover_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hw_discover_LDADD = $(HW_UNIT_LDADD)
check_PROGRAMS += tests/unit/test_hw_policy
tests_unit_test_hw_policy_SOURCES = tests/unit/test_hw_policy.c $(HW_FIXTURE)
tests_unit_test_hw_policy_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hw_policy_LDADD = $(HW_UNIT_LDADD)
check_PROGRAMS += tests/unit/test_hw_nccl_xml
tests_unit_test_hw_nccl_xml_SOURCES = tests/unit/test_hw_nccl_xml.c tests/unit/nccl_xml_check.c \
	tests/unit/nccl_xml_check.h $(HW_FIXTURE)
tests_unit_test_hw_nccl_xml_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hw_nccl_xml_LDADD = $(HW_UNIT_LDADD)
# The same on the real machines in ../shared/topologies (skipped without them).
check_PROGRAMS += tests/unit/test_hw_shared
tests_unit_test_hw_shared_SOURCES = tests/unit/test_hw_shared.c tests/unit/nccl_xml_check.c \
	tests/unit/nccl_xml_check.h tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_hw_shared_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hw_shared_LDADD = $(HW_UNIT_LDADD)
# The train-topo command end to end (exit codes, messages, atomic -o); its files judged by NCCL's
# own topology code (../shared/tools/nccl-topo-check; skipped without it or without root).
TESTS += tests/unit/train_topo_cli.sh tests/unit/nccl_oracle.sh
dist_noinst_SCRIPTS += tests/unit/train_topo_cli.sh tests/unit/nccl_oracle.sh
# train-topo's live discovery of this machine against hwloc's own tools (hwloc-calc, lstopo).
TESTS += tests/unit/train_topo_live.sh
dist_noinst_SCRIPTS += tests/unit/train_topo_live.sh
EXTRA_DIST += tests/fixtures/topo
endif

# libtrainrt communication: pure kernels/store, and forked multi-rank worlds (comm_harness); the
# internals through libtrainrt_core, groups and messages through libtrainrt.so's exported API.
if BUILD_TRAINRT
check_PROGRAMS += tests/unit/test_comm
tests_unit_test_comm_SOURCES = tests/unit/test_comm.c tests/unit/comm_harness.c \
	tests/unit/comm_harness.h tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_comm_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_comm_LDADD = libtrainrt_core.la $(UNIT_LDADD) -lm
check_PROGRAMS += tests/unit/test_comm_group
tests_unit_test_comm_group_SOURCES = tests/unit/test_comm_group.c tests/unit/comm_harness.c \
	tests/unit/comm_harness.h tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_comm_group_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_comm_group_LDADD = libtrainrt.la $(UNIT_LDADD) -lm
# trainrt_heartbeat_step/_section (runtime/comm/heartbeat.c).
check_PROGRAMS += tests/unit/test_rt_heartbeat
tests_unit_test_rt_heartbeat_SOURCES = tests/unit/test_rt_heartbeat.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rt_heartbeat_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rt_heartbeat_LDADD = libtrainrt_core.la $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_rt_reduce tests/unit/test_rt_store
tests_unit_test_rt_reduce_SOURCES = tests/unit/test_rt_reduce.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rt_reduce_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rt_reduce_LDADD = libtrainrt_core.la $(UNIT_LDADD) -lm
tests_unit_test_rt_store_SOURCES = tests/unit/test_rt_store.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rt_store_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rt_store_LDADD = libtrainrt_core.la $(UNIT_LDADD)
# The rendezvous through node leaders (runtime/comm/rt_node.c).
check_PROGRAMS += tests/unit/test_rt_node
tests_unit_test_rt_node_SOURCES = tests/unit/test_rt_node.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rt_node_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rt_node_LDADD = libtrainrt_core.la $(UNIT_LDADD)
endif

# trainer: model math, optimizer, data, bucket/shard plans, checkpoints
if BUILD_TRAINER
TRAIN_UNIT_LDADD = libtrainmodel.la $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_mlp tests/unit/test_adamw tests/unit/test_idx tests/unit/test_dpplan \
	tests/unit/test_ckpt tests/unit/test_train_opts
tests_unit_test_mlp_SOURCES = tests/unit/test_mlp.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_mlp_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mlp_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_adamw_SOURCES = tests/unit/test_adamw.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_adamw_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_adamw_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_idx_SOURCES = tests/unit/test_idx.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_idx_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_idx_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_dpplan_SOURCES = tests/unit/test_dpplan.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_dpplan_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_dpplan_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_ckpt_SOURCES = tests/unit/test_ckpt.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_ckpt_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ckpt_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_train_opts_SOURCES = tests/unit/test_train_opts.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_train_opts_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_train_opts_LDADD = $(TRAIN_UNIT_LDADD)
check_PROGRAMS += tests/unit/test_parallel
tests_unit_test_parallel_SOURCES = tests/unit/test_parallel.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_parallel_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_parallel_LDADD = $(TRAIN_UNIT_LDADD) -lm
check_PROGRAMS += tests/unit/test_throughput
tests_unit_test_throughput_SOURCES = tests/unit/test_throughput.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_throughput_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_throughput_LDADD = $(TRAIN_UNIT_LDADD)
check_PROGRAMS += tests/unit/test_dp
tests_unit_test_dp_SOURCES = tests/unit/test_dp.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_dp_CFLAGS = $(UNIT_CFLAGS) $(OPENBLAS_CFLAGS)
tests_unit_test_dp_LDADD = libtrainer.la libtrainrt.la $(UNIT_LDADD) $(TRAINER_LIBS)

# train-mlp's GPU step (runtime/trainer/dp_gpu.c) and tests/gpu/mlp_check, run on the host test double of
# gpu_mlp.h, so every build checks what lies above the CUDA kernels (they run in tests/gpu/run.sh).
# TESTS already holds every check program (TESTS += $(check_PROGRAMS) above).
check_PROGRAMS += tests/unit/test_gpu_step_host
tests_unit_test_gpu_step_host_SOURCES = tests/gpu/mlp_check.c tests/unit/gpu_host_double.c runtime/trainer/dp.c \
	runtime/trainer/dp_device.c runtime/trainer/dp_cpu.c runtime/trainer/dp_gpu.c
tests_unit_test_gpu_step_host_CPPFLAGS = $(AM_CPPFLAGS) -DTT_HAVE_CUDA=1
tests_unit_test_gpu_step_host_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_unit_test_gpu_step_host_LDADD = libtrainrt_core.la libtrainmodel.la libttbase.la $(OPENBLAS_LIBS) -lz -lm
# The same step with 2 ranks over shared memory (the double's memory is host memory).
check_PROGRAMS += tests/unit/test_gpu_step_ranks
tests_unit_test_gpu_step_ranks_SOURCES = tests/unit/test_gpu_step_ranks.c tests/unit/gpu_host_double.c \
	tests/unit/comm_harness.c tests/unit/comm_harness.h tests/unit/cunit_main.c tests/unit/cunit_main.h \
	runtime/trainer/dp.c runtime/trainer/dp_device.c runtime/trainer/dp_cpu.c runtime/trainer/dp_gpu.c
tests_unit_test_gpu_step_ranks_CPPFLAGS = $(AM_CPPFLAGS) -DTT_HAVE_CUDA=1
tests_unit_test_gpu_step_ranks_CFLAGS = $(UNIT_CFLAGS) $(OPENBLAS_CFLAGS)
tests_unit_test_gpu_step_ranks_LDADD = libtrainrt_core.la libtrainmodel.la $(UNIT_LDADD) $(OPENBLAS_LIBS) -lz -lm
endif

# train-sweep: grid parsing and point indexing, summary reading, point status, ranking and report rendering.
if BUILD_SWEEP
check_PROGRAMS += tests/unit/test_sweep
tests_unit_test_sweep_SOURCES = tests/unit/test_sweep.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_sweep_CPPFLAGS = $(SWEEP_CPPFLAGS)
tests_unit_test_sweep_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sweep_LDADD = libsweep.la $(UNIT_LDADD) -lm
endif
endif

# No loop of calls between source files (nm on the built objects).
TESTS += tests/unit/file_cycles.sh
dist_noinst_SCRIPTS += tests/unit/file_cycles.sh tests/unit/need_cunit.sh
# Nodelists of 10k nodes against scontrol, and the contract of 10k tasks (bench/scale_layout.c).
TESTS += tests/unit/hostlist_scale.sh
dist_noinst_SCRIPTS += tests/unit/hostlist_scale.sh
# Every source file names its licence (SPDX line; LICENSE).
TESTS += tests/unit/spdx.sh
dist_noinst_SCRIPTS += tests/unit/spdx.sh
# Every shell file passes shellcheck -S warning; each disable gives its reason (skipped without it).
TESTS += tests/unit/shellcheck.sh
dist_noinst_SCRIPTS += tests/unit/shellcheck.sh
