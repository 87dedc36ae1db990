#!/bin/sh
# SPDX-License-Identifier: MIT
# train_run.sh — train-run end to end on this machine, no Slurm: ranks and env, exit policy,
# signal forwarding and ownership (one delivery per signal), grace period, output integrity and
# torchrun's output options, restarts, torchrun's flags and variables (PyTorch as the consumer
# when python3-torch is installed), simulated Slurm steps: the per-worker environment under the
# plugin's defaults and two nodes with different GPU counts.
# Run by `make check` from the build directory; TRAIN_RUN overrides the binary under test.
# Exit 0 when everything ran and passed, 1 on any failure, 77 (SKIP) when something could not
# run (each such part prints "SKIP: why"): a skipped check is never reported as passed.
# tt-test-limit: 300
set -u
TRAIN_RUN=${TRAIN_RUN:-$(pwd)/train-run}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/train-run-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Standalone unless a test sets Slurm variables itself.
unset SLURM_JOB_ID SLURM_STEP_ID SLURM_NODEID SLURM_STEP_NODELIST SLURM_JOB_NODELIST SLURM_NODELIST \
	SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_GPUS_ON_NODE CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL \
	SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE OMP_NUM_THREADS MASTER_ADDR MASTER_PORT \
	NCCL_IB_HCA NCCL_SOCKET_IFNAME NCCL_TOPO_FILE TRAIN_TOPO_SET TRAIN_TOPO_RELAY_PID \
	TRAIN_TOPO_RELAY_SIGNAL TRAIN_TOPO_HWLOC_XML SLURM_STEP_RESV_PORTS SLURM_CPU_BIND_TYPE
# The nodes' exchange proves the job key: a secret of the test's own, none written to HOME.
export TRAINRT_TOKEN=train-run-test-secret-0123456789
# Under the sanitizer build: ignore the leak inside hwloc's PCI plugin (see lsan.supp).
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=${TT_TEST_SRCDIR:-.}/tests/wrapper/lsan.supp:fast_unwind_on_malloc=0"
# A made-up dual-socket box with six HCAs (tests/fixtures/topo/gen_fixtures.py), committed.
FIXTURE=${TT_TEST_SRCDIR:-.}/tests/fixtures/topo/dual-pcie-8gpu.xml
TRAIN_TOPO=$(dirname "$TRAIN_RUN")/train-topo
failures=0
skips=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }

# A free port outside the kernel's ephemeral range (for simulated steps that must agree on one).
free_port() { sh "${TT_TEST_SRCDIR:-.}/tests/trainer/launch_local.sh" --free-port; }

# Lines of file $1 (0 when it does not exist).
lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# Waits (at most 5 s) until $1 files match the glob $2.
wait_files() {
	i=0
	while [ "$(ls $2 2>/dev/null | wc -l)" -lt "$1" ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && return 1
		sleep 0.05
	done
}

t_ranks() {
	out=$("$TRAIN_RUN" --nproc-per-node 4 -- sh -c \
		'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK $NNODES $MASTER_ADDR $MASTER_PORT $TRAIN_RESTART_COUNT"')
	rc=$?
	[ $rc -eq 0 ] || fail "ranks: exit $rc"
	[ "$(echo "$out" | awk '{print $1}' | sort -n | tr '\n' ' ')" = "0 1 2 3 " ] || fail "ranks: RANKs are not 0..3: $out"
	echo "$out" | awk '$1 != $2 || $3 != 4 || $4 != 4 || $5 != 0 || $6 != 1 || $7 != "127.0.0.1" || $8 !~ /^[0-9]+$/ || $9 != 0 { bad = 1 } END { exit bad }' ||
		fail "ranks: wrong contract: $out"
	[ "$(echo "$out" | awk '{print $8}' | sort -u | wc -l)" -eq 1 ] || fail "ranks: MASTER_PORT differs between workers"
	pass "standalone --nproc-per-node 4: RANK 0..3, LOCAL_RANK, WORLD_SIZE=4, MASTER_ADDR/PORT"
}

t_failure() {
	start=$(date +%s)
	"$TRAIN_RUN" --nproc-per-node 4 -- sh -c '[ "$RANK" = 2 ] && exit 3; exec sleep 20' 2>"$WORK/err"
	rc=$?
	[ $rc -eq 3 ] || fail "failure: exit $rc, expected 3"
	[ $(($(date +%s) - start)) -lt 5 ] || fail "failure: the other workers were not stopped promptly"
	[ "$(grep -c 'rank 2 (local rank 2, pid [0-9]*) exited with code 3' "$WORK/err")" -eq 1 ] ||
		fail "failure: no single report line: $(cat "$WORK/err")"
	grep -q "host $(hostname)" "$WORK/err" || fail "failure: report does not name the host"
	pass "a worker exiting 3 stops the others, exit 3, one line"
}

t_sigkill() {
	"$TRAIN_RUN" --nproc-per-node 2 -- sh -c '[ "$RANK" = 1 ] && kill -9 $$; exec sleep 20' 2>"$WORK/err"
	rc=$?
	[ $rc -eq 137 ] || fail "sigkill: exit $rc, expected 137"
	grep -q 'rank 1 .* killed by SIGKILL' "$WORK/err" || fail "sigkill: report: $(cat "$WORK/err")"
	pass "a worker killed by SIGKILL: exit 137"
}

# Workers that append one line per delivery of each of USR1, USR2 and URG, under train-run
# started by the shell command in $2 (it gets train-run's command line as "$@" and writes
# train-run's pid to $TRPID): signal $3 sent to train-run once must arrive $4 times at every
# worker.
count_case() {
	d="$WORK/count-$1"; mkdir "$d"
	# shellcheck disable=SC2016 # the escaped \$ expand in the workers' shell, not here
	TRPID=$d/trpid sh -c "$2" count-case "$TRAIN_RUN" --nproc-per-node 3 -- sh -c \
		"for s in USR1 USR2 URG; do trap \"echo \$s >>$d/got.\$RANK.\$s\" \$s; done; touch $d/ready.\$RANK;
		 while [ ! -e $d/stop ]; do sleep 0.05; done" >/dev/null 2>&1 &
	pid=$!
	wait_files 3 "$d/ready.*" && wait_files 1 "$d/trpid" || fail "$1: workers did not start"
	trpid=$(cat "$d/trpid")
	kill -"$3" "$trpid"
	# train-run forwards at once; the workers reply by appending a line. Stop them once every
	# expected line is there (or, when none is expected, once a marker signal came through).
	if [ "$4" -gt 0 ]; then
		# shellcheck disable=SC2010 # the got.RANK.SIG names are the workers' own (no blanks)
		wait_files 3 "$d/got.*.$3" || fail "$1: SIG$3 reached $(ls "$d" | grep -c "got.*$3") of 3 workers"
	else
		kill -USR2 "$trpid"
		wait_files 3 "$d/got.*.USR2" || fail "$1: the marker SIGUSR2 did not come through"
	fi
	kill -0 "$trpid" 2>/dev/null || fail "$1: train-run died of SIG$3"
	touch "$d/stop"
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "$1: exit $rc after a clean stop"
	for r in 0 1 2; do
		[ "$(lines "$d/got.$r.$3")" -eq "$4" ] || fail "$1: rank $r got SIG$3 $(lines "$d/got.$r.$3") times, expected $4"
	done
}

t_usr1() {
	# shellcheck disable=SC2016 # $$ and $@ are the case's own shell's, not this one's
	count_case usr1 'echo $$ >"$TRPID"; exec "$@"' USR1 1
	# shellcheck disable=SC2016 # $$ and $@ are the case's own shell's, not this one's
	count_case urg 'echo $$ >"$TRPID"; exec "$@"' URG 1
	pass "SIGUSR1 and SIGURG (every name of the signal table) reach every worker exactly once, train-run survives"
}

# The plugin's relay above train-run delivers its checkpoint signal to the workers itself:
# train-run must not forward that one again (it forwards the others), and a relay pid that is not
# an ancestor (inherited from another step) changes nothing. The shell stands in for the relay.
t_relay_owner() {
	relay='export TRAIN_TOPO_RELAY_PID=$$ TRAIN_TOPO_RELAY_SIGNAL=%s; "$@" & echo $! >"$TRPID"; wait $!'
	# shellcheck disable=SC2059 # $relay is the format on purpose: %s takes the signal
	count_case relay-owned "$(printf "$relay" USR1)" USR1 0
	# shellcheck disable=SC2059 # $relay is the format on purpose: %s takes the signal
	count_case relay-other-signal "$(printf "$relay" USR2)" USR1 1
	sleep 60 &
	stranger=$!
	# shellcheck disable=SC2016 # the escaped \$ expand in the case's own shell, not here
	count_case relay-not-ancestor "export TRAIN_TOPO_RELAY_PID=$stranger TRAIN_TOPO_RELAY_SIGNAL=USR1; echo \$\$ >\"\$TRPID\"; exec \"\$@\"" USR1 1
	kill $stranger
	pass "a relay above train-run owns its checkpoint signal (0 forwarded), not the others; a relay pid that is not an ancestor is ignored"
}

# Runs one worker with a helper (a background sleep that does not catch SIGUSR1) under scope $1
# and tells whether the helper survived the SIGUSR1 the worker got.
helper_survives() {
	d="$WORK/scope-$1"; mkdir "$d"
	"$TRAIN_RUN" --signal-scope "$1" --nproc-per-node 1 -- sh -c \
		"sleep 30 & h=\$!; trap 'touch $d/got' USR1; touch $d/ready; while [ ! -e $d/stop ]; do sleep 0.05; done;
		 if kill -0 \$h 2>/dev/null; then touch $d/alive; kill \$h; fi" >/dev/null 2>&1 &
	pid=$!
	wait_files 1 "$d/ready" || fail "scope $1: worker did not start"
	kill -USR1 $pid
	wait_files 1 "$d/got" || fail "scope $1: the worker did not get SIGUSR1"
	touch "$d/stop"
	wait $pid
	[ -e "$d/alive" ]
}

t_signal_scope() {
	helper_survives group && fail "scope group: the helper in the worker's group was not signalled"
	helper_survives worker || fail "scope worker: the helper got SIGUSR1"
	pass "--signal-scope: SIGUSR1 to the whole group by default, to the worker alone with 'worker'"
}

t_sigterm() {
	d="$WORK/term"; mkdir "$d"
	# The workers ignore SIGTERM, so only the SIGKILL after the 1 s grace period ends them.
	"$TRAIN_RUN" --grace 1 --nproc-per-node 2 -- sh -c \
		"trap '' TERM; touch $d/ready.\$RANK; exec sleep 20" 2>"$WORK/err" &
	pid=$!
	wait_files 2 "$d/ready.*" || fail "sigterm: workers did not start"
	start=$(date +%s)
	kill -TERM $pid
	wait $pid
	rc=$?
	took=$(($(date +%s) - start))
	[ $rc -eq 137 ] || fail "sigterm: exit $rc, expected 137 (killed after grace)"
	[ $took -le 3 ] || fail "sigterm: took $took s with --grace 1"
	grep -q 'grace period of 1 s is over' "$WORK/err" || fail "sigterm: no grace message: $(cat "$WORK/err")"
	"$TRAIN_RUN" --nproc-per-node 2 -- sh -c "touch $d/r2.\$RANK; exec sleep 20" 2>/dev/null &
	pid=$!
	wait_files 2 "$d/r2.*"
	kill -TERM $pid
	wait $pid
	rc=$?
	[ $rc -eq 143 ] || fail "sigterm: workers dying of SIGTERM give $rc, expected 143"
	pass "SIGTERM: forwarded, SIGKILL after the grace period"
}

t_missing() {
	"$TRAIN_RUN" --nproc-per-node 2 -- no-such-program-xyz 2>"$WORK/err"
	rc=$?
	[ $rc -eq 127 ] || fail "missing: exit $rc, expected 127"
	grep -q "no-such-program-xyz" "$WORK/err" || fail "missing: error does not name it"
	"$TRAIN_RUN" --frobnicate -- true 2>"$WORK/err"
	rc=$?
	[ $rc -eq 2 ] || fail "usage: exit $rc, expected 2"
	grep -q "unknown option '--frobnicate'" "$WORK/err" || fail "usage: $(cat "$WORK/err")"
	"$TRAIN_RUN" --nproc-per-node gpu -- true 2>"$WORK/err"
	rc=$?
	[ $rc -ne 0 ] || fail "no gpus: exit 0"
	grep -q "CUDA_VISIBLE_DEVICES.*SLURM_STEP_GPUS" "$WORK/err" || fail "no gpus: variables not listed: $(cat "$WORK/err")"
	pass "missing PROGRAM: 127; unknown option: 2; no GPUs: variables listed"
}

t_slurm() {
	# Node 1 of a simulated step of two nodes (node 0 here too: every node of a step meets in
	# the census), 4 GPUs each.
	port=$(free_port)
	for node in 0 1; do
		env SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_STEP_NODELIST='localhost,127.0.0.1' SLURM_NODEID=$node \
			SLURM_STEP_TASKS_PER_NODE='1(x2)' SLURM_STEP_GPUS=0,1,2,3 SLURM_STEP_RESV_PORTS="$port" \
			"$TRAIN_RUN" --nproc-per-node 4 -- sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $NODE_RANK $CUDA_VISIBLE_DEVICES $MASTER_ADDR"' \
			>"$WORK/slurm.$node" 2>"$WORK/slurm-err.$node" &
	done
	wait
	out=$(cat "$WORK/slurm.1")
	[ "$(echo "$out" | sort -n | tr '\n' ';')" = "4 0 8 1 0 localhost;5 1 8 1 1 localhost;6 2 8 1 2 localhost;7 3 8 1 3 localhost;" ] ||
		fail "slurm: node 1 of 2 with 4 GPUs: $out $(cat "$WORK"/slurm-err.*)"
	# Under the plugin, MASTER_ADDR/PORT it set for the task are kept; a bad one is named.
	out=$(env SLURM_JOB_ID=4242 SLURM_STEP_NODELIST='n1' SLURM_NODEID=0 MASTER_ADDR=n2 MASTER_PORT=31000 \
		"$TRAIN_RUN" --nproc-per-node 1 -- sh -c 'echo "$MASTER_ADDR:$MASTER_PORT"')
	[ "$out" = "n2:31000" ] || fail "slurm: plugin's MASTER_ADDR/PORT not kept: $out"
	env SLURM_JOB_ID=4242 SLURM_STEP_NODELIST='n[1-2]' SLURM_NODEID=0 MASTER_PORT=http \
		"$TRAIN_RUN" --nproc-per-node 1 -- true 2>"$WORK/err" && fail "slurm: MASTER_PORT=http accepted"
	grep -q "MASTER_PORT='http'" "$WORK/err" || fail "slurm: bad MASTER_PORT not named: $(cat "$WORK/err")"
	# torchrun's --nnodes range is checked against the step's nodes.
	env SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_STEP_NODELIST='n1' SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE='1' \
		"$TRAIN_RUN" --nnodes 3:4 --nproc-per-node 1 -- true 2>"$WORK/err" && fail "slurm: --nnodes 3:4 on 1 node accepted"
	grep -q -- "--nnodes 3:4, but the step has 1 nodes" "$WORK/err" || fail "slurm: --nnodes range: $(cat "$WORK/err")"
	pass "simulated Slurm step, node 1 of 2, 4 GPUs: RANK 4..7, one GPU each; plugin's MASTER_* kept; --nnodes range checked"
}

# Node $1 of a simulated two-node step on port $2, run as `srun -N2 train-run --node-rank=0`.
refuse_node() {
	env SLURM_JOB_ID=4243 SLURM_STEP_ID=0 SLURM_STEP_NODELIST='localhost,127.0.0.1' SLURM_NODEID="$1" \
		SLURM_STEP_TASKS_PER_NODE='1(x2)' SLURM_STEP_RESV_PORTS="$2" \
		"$TRAIN_RUN" --node-rank=0 --nproc-per-node 1 -- sh -c 'echo started; sleep 300' \
		>"$WORK/refuse.$1" 2>"$WORK/refuse-err.$1"
}

# srun -N2 train-run --node-rank=0: node 1 refuses (the option contradicts SLURM_NODEID=1) and
# tells node 0 through the census, so node 0 does not start its workers and both end at once,
# each naming node 1 and its reason; the same outside Slurm for a program node 1 cannot find,
# on the port the first pair has just used.
t_refusing_node() {
	port=$(free_port)
	start=$(date +%s)
	refuse_node 0 "$port" &
	pid0=$!
	refuse_node 1 "$port" &
	pid1=$!
	wait "$pid0"
	rc0=$?
	wait "$pid1"
	rc1=$?
	took=$(($(date +%s) - start))
	[ $took -le 10 ] || fail "refusing node: the nodes ended after $took s, not within 10 s"
	[ $rc0 -ne 0 ] && [ $rc1 -ne 0 ] || fail "refusing node: exit $rc0 (node 0), $rc1 (node 1)"
	[ "$(lines "$WORK/refuse.0")" -eq 0 ] || fail "refusing node: node 0 started its workers: $(cat "$WORK/refuse.0")"
	grep -q "node 1 (.*) refused: --node-rank 0 contradicts SLURM_NODEID=1" "$WORK/refuse-err.0" ||
		fail "refusing node: node 0 does not name node 1 and its reason: $(cat "$WORK/refuse-err.0")"
	grep -q "^train-run: --node-rank 0 contradicts SLURM_NODEID=1" "$WORK/refuse-err.1" ||
		fail "refusing node: node 1's own line: $(cat "$WORK/refuse-err.1")"
	# The same port again, just used by the pair above (its TIME_WAITs are still there): a
	# port's last launch must not keep the next one's nodes apart.
	"$TRAIN_RUN" --nnodes 2 --node-rank 0 --rdzv-endpoint "127.0.0.1:$port" -- sleep 300 2>"$WORK/refuse-err.0" &
	pid0=$!
	"$TRAIN_RUN" --nnodes 2 --node-rank 1 --rdzv-endpoint "127.0.0.1:$port" -- no-such-program-xyz 2>"$WORK/refuse-err.1"
	rc1=$?
	wait "$pid0"
	rc0=$?
	[ $rc1 -eq 127 ] && [ $rc0 -ne 0 ] || fail "missing program on node 1: exit $rc0 (node 0), $rc1 (node 1)"
	grep -q "node 1 (.*) refused: PROGRAM 'no-such-program-xyz' not found" "$WORK/refuse-err.0" ||
		fail "missing program on node 1: node 0 does not say so: $(cat "$WORK/refuse-err.0")"
	pass "a node that refuses stops the other node within $took s (of 10), both naming it and why"
}

# Node $1 of a simulated two-node step on port $2 with 2 GPUs, whose NVIDIA device files are in
# the fixture directory $3 (TRAINRT_PREFLIGHT_TEST_DEV_DIR); further arguments go to train-run.
preflight_node() {
	node=$1 port=$2 dev=$3
	shift 3
	env SLURM_JOB_ID=4244 SLURM_STEP_ID=0 SLURM_STEP_NODELIST='localhost,127.0.0.1' SLURM_NODEID="$node" \
		SLURM_STEP_TASKS_PER_NODE='1(x2)' SLURM_STEP_RESV_PORTS="$port" SLURM_STEP_GPUS=0,1 \
		CUDA_VISIBLE_DEVICES=0,1 TRAINRT_PREFLIGHT_TEST_DEV_DIR="$dev" \
		"$TRAIN_RUN" "$@" -- sh -c 'echo started' >"$WORK/preflight.$node" 2>"$WORK/preflight-err.$node"
}

# --preflight (the default): node 1's GPU 1 has no device file (a fixture /dev without nvidia1),
# so node 0 refuses the launch and neither node starts a worker, both saying so in one line that
# names node 1, its device and the sbatch --exclude; with --preflight=off both start.
t_preflight() {
	mkdir -p "$WORK/dev0" "$WORK/dev1"
	: >"$WORK/dev0/nvidiactl"
	: >"$WORK/dev0/nvidia0"
	: >"$WORK/dev0/nvidia1"
	: >"$WORK/dev1/nvidiactl"
	: >"$WORK/dev1/nvidia0"
	port=$(free_port)
	preflight_node 0 "$port" "$WORK/dev0" &
	pid0=$!
	preflight_node 1 "$port" "$WORK/dev1" &
	pid1=$!
	wait "$pid0"
	rc0=$?
	wait "$pid1"
	rc1=$?
	[ $rc0 -ne 0 ] && [ $rc1 -ne 0 ] || fail "preflight: exit $rc0 (node 0), $rc1 (node 1) with a device missing"
	want="^train-run: node 1 (.*) failed preflight: GPU device $WORK/dev1/nvidia1 does not open (No such file or directory); resubmit with sbatch --exclude="
	for node in 0 1; do
		[ "$(lines "$WORK/preflight.$node")" -eq 0 ] || fail "preflight: node $node started its workers"
		[ "$(grep -c "$want" "$WORK/preflight-err.$node")" -eq 1 ] && [ "$(lines "$WORK/preflight-err.$node")" -eq 1 ] ||
			fail "preflight: node $node does not say it in one line: $(cat "$WORK/preflight-err.$node")"
	done
	port=$(free_port)
	preflight_node 0 "$port" "$WORK/dev0" --preflight=off &
	pid0=$!
	preflight_node 1 "$port" "$WORK/dev1" --preflight=off &
	pid1=$!
	wait "$pid0"
	rc0=$?
	wait "$pid1"
	rc1=$?
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$(cat "$WORK"/preflight.0 "$WORK"/preflight.1 | grep -c started)" -eq 4 ] ||
		fail "preflight=off: exit $rc0, $rc1: $(cat "$WORK"/preflight-err.*)"
	pass "a node whose GPU device does not open fails preflight: both nodes stop, one line naming it; --preflight=off starts"
}

# Outside Slurm a node waiting for its peers says so every 10 s (who, where, how long until the
# timeout), and SIGTERM ends the wait (SIGCONT does not).
t_waiting_said() {
	port=$(free_port)
	"$TRAIN_RUN" --nnodes 2 --node-rank 0 --rdzv-endpoint "127.0.0.1:$port" -- true 2>"$WORK/wait-err" &
	pid=$!
	# SIGCONT (srun may send one) does not end the wait: the waiting line still comes at 10 s.
	sleep 2
	kill -CONT $pid
	sleep 9
	kill -TERM $pid
	wait $pid
	rc=$?
	grep -q "train-run: node 0 (.*) waiting on port $port for 1 of 2 nodes: node 1; giving up in 1[01][0-9] s" "$WORK/wait-err" ||
		fail "waiting: no line saying whom node 0 waits for: $(cat "$WORK/wait-err")"
	[ "$(grep -c "waiting on port" "$WORK/wait-err")" -eq 1 ] || fail "waiting: not one line in 11 s: $(cat "$WORK/wait-err")"
	[ $rc -ne 0 ] || fail "waiting: exit 0 after SIGTERM"
	grep -q "stopped by a signal" "$WORK/wait-err" || fail "waiting: SIGTERM did not end the wait: $(cat "$WORK/wait-err")"
	pass "a waiting node 0 says whom it waits for, where and for how long; SIGTERM ends the wait"
}

# Two nodes of one simulated step on this machine (node0 = localhost, node1 = 127.0.0.1) with
# different GPU counts, as srun --gpus=6 -N2 can give 4 + 2: the nodes exchange their worker
# counts, so ranks are unique and WORLD_SIZE is one number; the workers' SLURM_* agree.
t_uneven_nodes() {
	port=$(free_port)
	for node in 0 1; do
		gpus=$([ $node = 0 ] && echo 0,1,2,3 || echo 0,1)
		env SLURM_JOB_ID=77 SLURM_STEP_ID=3 SLURM_STEP_NODELIST='localhost,127.0.0.1' SLURM_NODEID=$node \
			SLURM_STEP_TASKS_PER_NODE='1(x2)' SLURM_STEP_GPUS=$gpus CUDA_VISIBLE_DEVICES=$gpus \
			SLURM_STEP_RESV_PORTS=$port SLURM_PROCID=$node SLURM_NTASKS=2 \
			"$TRAIN_RUN" -- sh -c 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $SLURM_PROCID $SLURM_LOCALID $SLURM_NTASKS $SLURM_NTASKS_PER_NODE $SLURM_TASKS_PER_NODE $SLURM_GTIDS"' \
			>"$WORK/uneven.$node" 2>"$WORK/uneven-err.$node" &
	done
	wait
	out=$(sort -n "$WORK/uneven.0" "$WORK/uneven.1" | cut -d' ' -f1-10 | tr '\n' ';')
	[ "$out" = "0 6 0 4 0 0 0 6 4 4,2;1 6 1 4 0 1 1 6 4 4,2;2 6 2 4 0 2 2 6 4 4,2;3 6 3 4 0 3 3 6 4 4,2;4 6 0 2 1 4 0 6 2 4,2;5 6 1 2 1 5 1 6 2 4,2;" ] ||
		fail "uneven: 4 + 2 GPUs: $out $(cat "$WORK"/uneven-err.*)"
	[ "$(cut -d' ' -f11 "$WORK/uneven.1" | sort -u)" = "4,5" ] || fail "uneven: SLURM_GTIDS of node 1: $(cat "$WORK/uneven.1")"
	# A node that never comes: node 0 waits, then fails naming what happened (timeout shortened
	# only by killing it: the census waits TT_CENSUS_TIMEOUT_S).
	pass "two simulated nodes with 4 and 2 GPUs: ranks 0..5, WORLD_SIZE 6 everywhere, SLURM_* as for 6 tasks"
}

# The plugin set OMP_NUM_THREADS, NCCL_IB_HCA and NCCL_SOCKET_IFNAME for the launcher task
# (TRAIN_TOPO_SET names them) and read the fixture (TRAIN_TOPO_HWLOC_XML): each worker gets its
# own values, the ones `train-topo env` gives its GPU, and the plugin's NCCL_TOPO_FILE; the
# values a user exported win.
t_plugin_defaults() {
	out=$(env SLURM_JOB_ID=9 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 SLURM_STEP_GPUS=0-7 \
		CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 TRAIN_TOPO_HWLOC_XML="$FIXTURE" OMP_NUM_THREADS=96 \
		NCCL_IB_HCA='=mlx5_0:1' NCCL_SOCKET_IFNAME='=ib9' NCCL_TOPO_FILE=/tmp/traintopo.9/nccl-topo.0.xml \
		TRAIN_TOPO_SET=OMP_NUM_THREADS,CUDA_VISIBLE_DEVICES,NCCL_TOPO_FILE,NCCL_SOCKET_IFNAME,NCCL_IB_HCA \
		"$TRAIN_RUN" -- sh -c 'echo "$LOCAL_RANK $NCCL_IB_HCA $NCCL_SOCKET_IFNAME $NCCL_TOPO_FILE $OMP_NUM_THREADS $TRAIN_CPU_LIST $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status) $TRAIN_TOPO_SET"' 2>"$WORK/err")
	rc=$?
	[ $rc -eq 0 ] || fail "plugin defaults: exit $rc: $(cat "$WORK/err")"
	[ "$(echo "$out" | wc -l)" -eq 8 ] || fail "plugin defaults: 8 workers expected: $out"
	for r in 0 1 2 3 4 5 6 7; do
		line=$(echo "$out" | awk -v r=$r '$1 == r')
		want_hca=$("$TRAIN_TOPO" env --input "$FIXTURE" --local-rank $r | sed -n 's/^NCCL_IB_HCA=//p')
		want_if=$("$TRAIN_TOPO" env --input "$FIXTURE" --local-rank $r | sed -n 's/^NCCL_SOCKET_IFNAME=//p')
		set -- $line
		[ "$2" = "$want_hca" ] || fail "plugin defaults: rank $r NCCL_IB_HCA $2, train-topo env says $want_hca"
		[ "$3" = "$want_if" ] || fail "plugin defaults: rank $r NCCL_SOCKET_IFNAME $3, train-topo env says $want_if"
		[ "$4" = /tmp/traintopo.9/nccl-topo.0.xml ] || fail "plugin defaults: rank $r NCCL_TOPO_FILE $4"
		[ "$6" = "$7" ] || fail "plugin defaults: rank $r TRAIN_CPU_LIST $6 but bound to $7"
		n=$(echo "$7" | tr ',' '\n' | awk -F- '{ n += ($2 == "" ? 1 : $2 - $1 + 1) } END { print n }')
		[ "$5" = "$n" ] || fail "plugin defaults: rank $r OMP_NUM_THREADS $5 for $n CPUs ($7)"
		[ "$8" = NCCL_TOPO_FILE,OMP_NUM_THREADS,CUDA_VISIBLE_DEVICES,NCCL_IB_HCA,NCCL_SOCKET_IFNAME ] ||
			fail "plugin defaults: rank $r TRAIN_TOPO_SET $8"
	done
	# Without TRAIN_TOPO_SET the same values are the user's and are kept.
	out=$(env SLURM_JOB_ID=9 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 SLURM_STEP_GPUS=0-1 \
		TRAIN_TOPO_HWLOC_XML="$FIXTURE" OMP_NUM_THREADS=96 NCCL_IB_HCA=mine NCCL_SOCKET_IFNAME=myif \
		"$TRAIN_RUN" -- sh -c 'echo "$OMP_NUM_THREADS $NCCL_IB_HCA $NCCL_SOCKET_IFNAME"' 2>&1 | sort -u)
	[ "$out" = "96 mine myif" ] || fail "plugin defaults: the user's values were not kept: $out"
	env SLURM_JOB_ID=9 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 TRAIN_TOPO_HWLOC_XML="$WORK/gone.xml" \
		"$TRAIN_RUN" --nproc-per-node 1 -- true 2>"$WORK/err" && fail "plugin defaults: a missing TRAIN_TOPO_HWLOC_XML was accepted"
	grep -q "TRAIN_TOPO_HWLOC_XML $WORK/gone.xml" "$WORK/err" || fail "plugin defaults: error does not name the variable: $(cat "$WORK/err")"
	pass "defaults the plugin set for the launcher task are computed again per worker (NCCL_IB_HCA as train-topo env, OMP = bound CPUs = TRAIN_CPU_LIST); the user's win"
}

t_output() {
	# 4 workers race 500 long lines each to stdout and stderr; none may be torn or lost.
	"$TRAIN_RUN" --tag-output --nproc-per-node 4 -- sh -c \
		'i=0; while [ $i -lt 500 ]; do echo "$RANK:$i:abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"; i=$((i+1)); done; printf "tail-$RANK"' \
		>"$WORK/out" 2>&1
	[ "$(grep -c '^\[rank [0-3]\] [0-3]:[0-9]*:abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz$' "$WORK/out")" -eq 2000 ] ||
		fail "output: lines torn or lost"
	[ "$(grep -c '^\[rank \([0-3]\)\] \1:' "$WORK/out")" -eq 2000 ] || fail "output: prefix does not match the writer"
	[ "$(grep -c '^\[rank [0-3]\] tail-[0-3]$' "$WORK/out")" -eq 4 ] || fail "output: partial last lines not flushed"
	"$TRAIN_RUN" --rank0-only --nproc-per-node 3 -- sh -c 'echo "out $RANK"; echo "err $RANK" >&2' >"$WORK/out" 2>&1
	[ "$(sort "$WORK/out" | tr '\n' ';')" = "err 0;out 0;" ] || fail "rank0-only: $(cat "$WORK/out")"
	pass "output: whole lines, tags, partial lines flushed, --rank0-only"
}

t_restart() {
	"$TRAIN_RUN" --max-restarts 2 --nproc-per-node 2 -- sh -c \
		'[ "$RANK" = 0 ] || exit 0; echo "try $TRAIN_RESTART_COUNT"; [ "$TRAIN_RESTART_COUNT" -lt 2 ] && exit 1; exit 0' \
		>"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "restart: exit $rc after a successful third round"
	[ "$(tr '\n' ';' <"$WORK/out")" = "try 0;try 1;try 2;" ] || fail "restart: rounds: $(cat "$WORK/out")"
	"$TRAIN_RUN" --max-restarts 1 --nproc-per-node 1 -- sh -c 'exit 4' 2>"$WORK/err"
	rc=$?
	[ $rc -eq 4 ] || fail "restart: exit $rc once restarts are used up, expected 4"
	[ "$(grep -c 'exited with code 4' "$WORK/err")" -eq 2 ] || fail "restart: $(cat "$WORK/err")"
	pass "--max-restarts: TRAIN_RESTART_COUNT 0,1,2; gives up with the worker's status"
}

t_flood() {
	# A worker that never stops writing must not delay the reaction to another one failing.
	start=$(date +%s)
	"$TRAIN_RUN" --nproc-per-node 2 -- sh -c '[ "$RANK" = 1 ] && { sleep 0.3; exit 3; }; exec yes' >/dev/null 2>"$WORK/err"
	rc=$?
	[ $rc -eq 3 ] || fail "flood: exit $rc, expected 3"
	[ $(($(date +%s) - start)) -lt 5 ] || fail "flood: the failure was handled late"
	pass "a worker flooding stdout does not starve the exit policy"
}

t_python() {
	command -v python3 >/dev/null || { skip "python: python3 not found"; return; }
	out=$("$TRAIN_RUN" --nproc-per-node 2 -- python3 -c 'import os; print("py", os.environ["RANK"])')
	[ "$(echo "$out" | sort | tr '\n' ';')" = "py 0;py 1;" ] || fail "python: $out"
	printf 'import os, sys\nprint("script", os.environ["LOCAL_RANK"], *sys.argv[1:])\n' >"$WORK/train.py"
	out=$("$TRAIN_RUN" --nproc-per-node 2 "$WORK/train.py" --lr 3)
	[ "$(echo "$out" | sort | tr '\n' ';')" = "script 0 --lr 3;script 1 --lr 3;" ] || fail "python script: $out"
	"$TRAIN_RUN" "$WORK/missing.py" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 127 ] && grep -q missing.py "$WORK/err" || fail "python script: missing one gives $rc: $(cat "$WORK/err")"
	# torchrun's -m (a module) and --run-path (a script whatever its name).
	mkdir -p "$WORK/pkg/tt_mod"
	printf 'import os, sys\nprint("module", os.environ["RANK"], *sys.argv[1:])\n' >"$WORK/pkg/tt_mod/__main__.py"
	: >"$WORK/pkg/tt_mod/__init__.py"
	out=$(PYTHONPATH="$WORK/pkg" "$TRAIN_RUN" --nproc-per-node 2 -m tt_mod --x 1)
	[ "$(echo "$out" | sort | tr '\n' ';')" = "module 0 --x 1;module 1 --x 1;" ] || fail "python -m: $out"
	cp "$WORK/train.py" "$WORK/train-script"
	out=$("$TRAIN_RUN" --nproc-per-node 1 --run-path "$WORK/train-script" a)
	[ "$out" = "script 0 a" ] || fail "python --run-path: $out"
	pass "python3 programs; PROGRAM.py runs through python3 like torchrun; -m MODULE; --run-path"
}

t_topology() {
	[ -r "$FIXTURE" ] || { fail "topology: the committed fixture $FIXTURE is missing"; return; }
	# Each worker gets what the topology policy gives its GPU (train-topo env, the same policy
	# code the plugin uses for its tasks), whatever that policy is.
	out=$(env SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 SLURM_STEP_GPUS=0-7 \
		"$TRAIN_RUN" --topology "$FIXTURE" -- sh -c 'echo "$RANK $NCCL_IB_HCA $OMP_NUM_THREADS"')
	rc=$?
	[ $rc -eq 0 ] || fail "topology: exit $rc"
	for r in 0 1 2 3 4 5 6 7; do
		want=$("$TRAIN_TOPO" env --input "$FIXTURE" --local-rank $r | sed -n 's/^NCCL_IB_HCA=//p')
		[ "$(echo "$out" | awk -v r=$r '$1 == r {print $2}')" = "$want" ] ||
			fail "topology: rank $r NCCL_IB_HCA is not $want: $out"
	done
	echo "$out" | awk '$2 !~ /^=mlx5_[0-5]:1(,mlx5_[0-5]:1)*$/ { bad = 1 } END { exit bad }' ||
		fail "topology: NCCL_IB_HCA is not a list of the fixture's HCAs: $out"
	echo "$out" | awk '$3 < 1 { bad = 1 } END { exit bad }' || fail "topology: OMP_NUM_THREADS: $out"
	# Outside Slurm without CUDA_VISIBLE_DEVICES the node's own GPUs count, as torchrun's do.
	out=$("$TRAIN_RUN" --topology "$FIXTURE" --nproc-per-node gpu -- sh -c 'echo "$RANK $CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER"')
	[ "$(echo "$out" | sort -n | head -n 2 | tr '\n' ';')" = "0 0 PCI_BUS_ID;1 1 PCI_BUS_ID;" ] &&
		[ "$(echo "$out" | wc -l)" -eq 8 ] || fail "topology: standalone GPUs of the node: $out"
	NCCL_IB_HCA=mine "$TRAIN_RUN" --topology "$FIXTURE" --nproc-per-node 1 -- sh -c 'echo $NCCL_IB_HCA' >"$WORK/out"
	[ "$(cat "$WORK/out")" = mine ] || fail "topology: overrode the user's NCCL_IB_HCA"
	"$TRAIN_RUN" --topology "$WORK/none.xml" --nproc-per-node 1 -- true 2>"$WORK/err"
	[ $? -ne 0 ] && grep -q none.xml "$WORK/err" || fail "topology: a missing XML is not an error naming it"
	pass "topology policy (committed fixture): each GPU's NCCL_IB_HCA as train-topo env gives it, node GPUs counted standalone, user's NCCL_IB_HCA kept, bad XML named"
}

# Workers whose CPU sets differ in size: on the committed two-socket fixture (CPU 0 on socket 0,
# CPUs 2-3 on socket 1) under taskset -c 0,1 worker 0 gets its GPU's CPU 0, worker 1 (no allowed
# CPU near its GPU) all of 0-1; each OMP_NUM_THREADS counts its own set.
t_omp_own_cpus() {
	uneven=${TT_TEST_SRCDIR:-.}/tests/fixtures/topo/uneven-numa-2gpu.xml
	command -v taskset >/dev/null 2>&1 || { skip "OMP per worker: no taskset (util-linux)"; return; }
	taskset -c 0,1 true 2>/dev/null || { skip "OMP per worker: CPUs 0 and 1 are not both allowed here"; return; }
	out=$(taskset -c 0,1 "$TRAIN_RUN" --topology "$uneven" --nproc-per-node gpu -- \
		sh -c 'echo "$LOCAL_RANK $OMP_NUM_THREADS $TRAIN_CPU_LIST"' 2>"$WORK/err" | sort -n | tr '\n' ';')
	[ "$out" = "0 1 0;1 2 0-1;" ] || { fail "OMP per worker: want '0 1 0;1 2 0-1;', got '$out' $(cat "$WORK/err")"; return; }
	pass "OMP_NUM_THREADS of each worker counts its own CPU set (1 and 2 CPUs)"
}

# torchrun's variables, as its agent sets them, and its flags' meaning.
t_torchrun_env() {
	out=$("$TRAIN_RUN" --nproc-per-node 2 --role trainer --max-restarts 1 -- sh -c \
		'echo "$RANK $TORCHELASTIC_RUN_ID $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_USE_AGENT_STORE $ROLE_NAME $ROLE_RANK $ROLE_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE"')
	[ "$(echo "$out" | sort -n | tr '\n' ';')" = "0 none 0 1 False trainer 0 2 0 1;1 none 0 1 False trainer 1 2 0 1;" ] ||
		fail "torchrun env: $out"
	port=$(free_port)
	out=$("$TRAIN_RUN" --nproc-per-node 1 --rdzv-backend=c10d --rdzv-endpoint "127.0.0.1:$port" --rdzv-id job7 \
		--rdzv-conf join_timeout=60 --monitor-interval 1 --start-method spawn -- sh -c 'echo "$MASTER_ADDR $MASTER_PORT $TORCHELASTIC_RUN_ID"')
	[ "$out" = "127.0.0.1 $port job7" ] || fail "torchrun flags: --rdzv-endpoint/--rdzv-id: $out"
	out=$(env SLURM_JOB_ID=123 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 \
		"$TRAIN_RUN" --nproc-per-node 1 -- sh -c 'echo "$TORCHELASTIC_RUN_ID"')
	[ "$out" = 123 ] || fail "torchrun env: the run id under Slurm is the job id, got $out"
	out=$("$TRAIN_RUN" --nproc-per-node 1 --local-addr 127.0.0.2 -- sh -c 'echo "$MASTER_ADDR"')
	[ "$out" = 127.0.0.2 ] || fail "torchrun flags: --local-addr on one node: $out"
	"$TRAIN_RUN" --nnodes 2 --node-rank 1 --master-addr h --local-addr a -- true 2>"$WORK/err" && fail "--local-addr on 2 nodes accepted"
	grep -q -- "--local-addr a on 2 nodes" "$WORK/err" || fail "torchrun flags: --local-addr refusal: $(cat "$WORK/err")"
	"$TRAIN_RUN" --nnodes 1:2 -- true 2>"$WORK/err" && fail "--nnodes 1:2 without Slurm accepted"
	grep -q "cannot wait for nodes to join" "$WORK/err" || fail "torchrun flags: --nnodes MIN:MAX refusal: $(cat "$WORK/err")"
	"$TRAIN_RUN" --rdzv-backend etcd -- true 2>"$WORK/err"
	[ $? -eq 2 ] && grep -q "etcd" "$WORK/err" || fail "torchrun flags: --rdzv-backend etcd: $(cat "$WORK/err")"
	pass "TORCHELASTIC_*, ROLE_*, GROUP_* as torchrun sets them; --rdzv-endpoint/-id/-backend/-conf, --local-addr, --nnodes MIN:MAX"
}

# A PyTorch program that asks whether it was launched by torchrun and rendezvouses with env://
# runs unchanged (Debian's python3-torch as the consumer).
t_torch_consumer() {
	# Debian's python3-torch lives with /usr/bin/python3, which a python3 earlier in PATH may hide.
	py=
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import torch.distributed' 2>/dev/null; then py=$p; break; fi
	done
	[ -n "$py" ] || { skip "torch consumer: no python3 with torch (install python3-torch)"; return; }
	cat >"$WORK/elastic.py" <<'PY'
import os, torch, torch.distributed as dist
assert dist.is_torchelastic_launched(), "is_torchelastic_launched() is False"
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "sum", int(t.item()),
      "run", os.environ["TORCHELASTIC_RUN_ID"], "restart", os.environ["TORCHELASTIC_RESTART_COUNT"],
      "group", os.environ["GROUP_RANK"], os.environ["GROUP_WORLD_SIZE"], flush=True)
dist.destroy_process_group()
PY
	out=$("$TRAIN_RUN" --nproc-per-node 3 --rdzv-id r1 -- "$py" "$WORK/elastic.py" 2>"$WORK/err")
	[ "$(echo "$out" | sort | tr '\n' ';')" = "rank 0 of 3 sum 6 run r1 restart 0 group 0 1;rank 1 of 3 sum 6 run r1 restart 0 group 0 1;rank 2 of 3 sum 6 run r1 restart 0 group 0 1;" ] ||
		fail "torch consumer: $out $(tail -n 5 "$WORK/err")"
	pass "PyTorch: is_torchelastic_launched() is True, env:// rendezvous and all_reduce over 3 workers"
}

# torchrun's output options: -r to log files only, -t to files and console, --local-ranks-filter
# for the console; files under LOG_DIR/RUNID_*/attempt_N/LOCAL_RANK/.
t_logs() {
	d="$WORK/logs"
	"$TRAIN_RUN" --nproc-per-node 3 --rdzv-id lg --log-dir "$d" -r 1 -t 0:2 --local-ranks-filter 0,2 -- \
		sh -c 'echo "out $LOCAL_RANK"; echo "err $LOCAL_RANK" >&2' >"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "logs: exit $rc"
	run=$(ls -d "$d"/lg_* 2>/dev/null)
	[ -n "$run" ] && grep -q "train-run: worker logs in $run" "$WORK/err" || fail "logs: no run directory announced: $(cat "$WORK/err")"
	for r in 0 1 2; do
		[ "$(cat "$run/attempt_0/$r/stdout.log" 2>/dev/null)" = "out $r" ] || fail "logs: rank $r stdout.log"
	done
	[ "$(cat "$run/attempt_0/0/stderr.log" 2>/dev/null)" = "err 0" ] || fail "logs: rank 0 stderr.log (tee)"
	[ ! -e "$run/attempt_0/1/stderr.log" ] || fail "logs: rank 1 stderr was logged without -r/-t asking"
	[ "$(cat "$WORK/out")" = "" ] || fail "logs: -r 1 still printed stdout: $(cat "$WORK/out")"
	[ "$(grep -v '^train-run:' "$WORK/err" | sort | tr '\n' ';')" = "err 0;err 2;" ] ||
		fail "logs: console stderr should be ranks 0 (tee) and 2 (filter drops 1): $(cat "$WORK/err")"
	pass "-r/--redirects, -t/--tee, --log-dir and --local-ranks-filter as torchrun lays them out"
}

# An hwloc export that crashes libhwloc 2.9 is an error line, not a SIGSEGV (project fixture).
t_topology_crash() {
	"$TRAIN_RUN" --topology "${TT_TEST_SRCDIR:-.}/tests/fixtures/topo/hwloc-crash.xml" --nproc-per-node 1 -- true \
		>"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 1 ] && grep -q "^train-run: .*hwloc-crash.xml' crashes libhwloc" "$WORK/err" ||
		fail "topology: a file that crashes libhwloc gives exit $rc: $(cat "$WORK/err")"
	pass "topology: an export that crashes libhwloc is one error line"
}

# The last node of a 10k-node step whose nodelist Slurm cannot compress (every other node of a
# 20k cluster: 54,447 characters) finds the first host, n0, as node 0 of the census (which this
# machine cannot resolve; the step's ranks are test_layout's).
t_long_nodelist() {
	list="n[$(seq -s, 0 2 19998)]"
	env SLURM_JOB_ID=9 SLURM_STEP_ID=0 SLURM_STEP_NODELIST="$list" SLURM_NODEID=9999 \
		SLURM_STEP_TASKS_PER_NODE='1(x10000)' SLURM_PROCID=9999 SLURM_NTASKS=10000 \
		"$TRAIN_RUN" --nproc-per-node 1 -- true 2>"$WORK/err" && fail "long nodelist: a lone node 9999 started"
	grep -q "cannot resolve node 0's host 'n0'" "$WORK/err" ||
		fail "long nodelist: node 9999 of a ${#list}-character nodelist: $(cat "$WORK/err")"
	pass "a ${#list}-character nodelist of 10000 nodes: the last node asks n0 for the census"
}

# The checkpoint protocol (tt_ckpt_exit.h): every worker sees TRAIN_TOPO_CKPT_EXIT; all exiting
# with it is a clean stop (exit 0, one line, nothing about stopping or signals); a worker exiting
# 98 while the others checkpoint is a failure; a bad value of the variable is refused.
t_checkpoint_exit() {
	"$TRAIN_RUN" --nproc-per-node 3 -- sh -c 'echo "ckpt $TRAIN_TOPO_CKPT_EXIT"; sleep 0.$RANK; exit 99' \
		>"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] || fail "checkpoint: 3 workers exiting 99 gave exit $rc, want 0: $(cat "$WORK/err")"
	[ "$(grep -c '^ckpt 99$' "$WORK/out")" -eq 3 ] || fail "checkpoint: TRAIN_TOPO_CKPT_EXIT=99 not in every worker: $(cat "$WORK/out")"
	[ "$(grep -c "^train-run: host $(hostname): checkpointed; requeue or resubmit to resume" "$WORK/err")" -eq 1 ] ||
		fail "checkpoint: not one 'checkpointed' line: $(cat "$WORK/err")"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "checkpoint: stderr is not just the one line: $(cat "$WORK/err")"
	TRAIN_TOPO_CKPT_EXIT=42 "$TRAIN_RUN" --nproc-per-node 2 -- sh -c '[ "$TRAIN_TOPO_CKPT_EXIT" = 42 ] && exit 42' \
		2>"$WORK/err"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'checkpointed;.*TRAIN_TOPO_CKPT_EXIT=42' "$WORK/err" ||
		fail "checkpoint: the user's TRAIN_TOPO_CKPT_EXIT=42 was not the status: exit $rc, $(cat "$WORK/err")"
	"$TRAIN_RUN" --nproc-per-node 3 -- sh -c '[ "$RANK" = 1 ] && { sleep 0.2; exit 98; }; exec sleep 20' \
		>"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 98 ] || fail "checkpoint: a worker exiting 98 gave exit $rc, want 98"
	grep -q 'rank 1 .* exited with code 98; stopping 2 other workers' "$WORK/err" && ! grep -q checkpointed "$WORK/err" ||
		fail "checkpoint: exit 98 is not reported as the failure: $(cat "$WORK/err")"
	"$TRAIN_RUN" --nproc-per-node 2 -- sh -c '[ "$RANK" = 1 ] && exit 98; sleep 0.3; exit 99' 2>"$WORK/err"
	rc=$?
	[ $rc -eq 98 ] && ! grep -q checkpointed "$WORK/err" ||
		fail "checkpoint: a crash (98) beside a checkpoint (99) gave exit $rc: $(cat "$WORK/err")"
	TRAIN_TOPO_CKPT_EXIT=abc "$TRAIN_RUN" --nproc-per-node 1 -- true 2>"$WORK/err"
	rc=$?
	[ $rc -eq 1 ] && [ "$(grep -c "^train-run: TRAIN_TOPO_CKPT_EXIT='abc': want an exit status from 1 to 125" "$WORK/err")" -eq 1 ] ||
		fail "checkpoint: TRAIN_TOPO_CKPT_EXIT=abc gave exit $rc: $(cat "$WORK/err")"
	pass "checkpoint exit: 3 x 99 -> exit 0 and one line; 98 -> failure 98; the variable in every worker; abc refused"
}

[ -x "$TRAIN_RUN" ] || { echo "FAIL: $TRAIN_RUN not built"; exit 1; }
for t in t_ranks t_failure t_sigkill t_usr1 t_relay_owner t_signal_scope t_sigterm t_missing t_slurm \
	t_refusing_node t_preflight t_waiting_said t_uneven_nodes t_plugin_defaults t_omp_own_cpus t_output t_flood t_restart t_python \
	t_topology t_topology_crash t_torchrun_env t_torch_consumer t_logs t_long_nodelist t_checkpoint_exit; do
	$t
done
[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
[ $skips -eq 0 ] || { echo "$skips part(s) skipped: see SKIP lines"; exit 77; }
