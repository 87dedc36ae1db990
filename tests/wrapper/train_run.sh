#!/bin/sh
# train_run.sh — train-run end to end on this machine, no Slurm: ranks and env, exit policy,
# signal forwarding, grace period, output integrity, restarts, a simulated Slurm step.
# Run by `make check` from the build directory; TRAIN_RUN overrides the binary under test.
set -u
TRAIN_RUN=${TRAIN_RUN:-$(pwd)/train-run}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/train-run-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Standalone unless a test sets Slurm variables itself.
unset SLURM_JOB_ID SLURM_STEP_ID SLURM_NODEID SLURM_STEP_NODELIST SLURM_JOB_NODELIST SLURM_NODELIST \
	SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_GPUS_ON_NODE CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL \
	SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE OMP_NUM_THREADS MASTER_ADDR MASTER_PORT \
	NCCL_IB_HCA NCCL_SOCKET_IFNAME
# Under the sanitizer build: ignore the leak inside hwloc's PCI plugin (see lsan.supp).
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=${TT_TEST_SRCDIR:-.}/tests/wrapper/lsan.supp:fast_unwind_on_malloc=0"
# Real topology files live beside the checkout when present (never copied into the project).
SHARED=${TT_SHARED_DIR:-${TT_TEST_SRCDIR:-.}/../shared}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

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

t_usr1() {
	d="$WORK/usr1"; mkdir "$d"
	"$TRAIN_RUN" --nproc-per-node 3 -- sh -c \
		"trap 'echo \$RANK > $d/got.\$RANK' USR1; touch $d/ready.\$RANK; while [ ! -e $d/stop ]; do sleep 0.05; done" \
		>/dev/null 2>&1 &
	pid=$!
	wait_files 3 "$d/ready.*" || fail "usr1: workers did not start"
	kill -USR1 $pid
	wait_files 3 "$d/got.*" || fail "usr1: not every worker got SIGUSR1: $(ls "$d")"
	kill -0 $pid 2>/dev/null || fail "usr1: train-run died of SIGUSR1"
	touch "$d/stop"
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "usr1: exit $rc after a clean stop"
	pass "SIGUSR1 reaches every worker, train-run survives"
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
	out=$(env SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_STEP_NODELIST='n[1-2]' SLURM_NODEID=1 \
		SLURM_STEP_TASKS_PER_NODE='1(x2)' SLURM_STEP_GPUS=0,1,2,3 \
		"$TRAIN_RUN" -- sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $NODE_RANK $CUDA_VISIBLE_DEVICES $MASTER_ADDR"')
	rc=$?
	[ $rc -eq 0 ] || fail "slurm: exit $rc"
	[ "$(echo "$out" | sort -n | tr '\n' ';')" = "4 0 8 1 0 n1;5 1 8 1 1 n1;6 2 8 1 2 n1;7 3 8 1 3 n1;" ] ||
		fail "slurm: node 1 of n[1-2] with 4 GPUs: $out"
	# Under the plugin, MASTER_ADDR/PORT it set for the task are kept; a bad one is named.
	out=$(env SLURM_JOB_ID=4242 SLURM_STEP_NODELIST='n[1-2]' SLURM_NODEID=0 MASTER_ADDR=n2 MASTER_PORT=31000 \
		"$TRAIN_RUN" --nproc-per-node 1 -- sh -c 'echo "$MASTER_ADDR:$MASTER_PORT"')
	[ "$out" = "n2:31000" ] || fail "slurm: plugin's MASTER_ADDR/PORT not kept: $out"
	env SLURM_JOB_ID=4242 SLURM_STEP_NODELIST='n[1-2]' SLURM_NODEID=0 MASTER_PORT=http \
		"$TRAIN_RUN" --nproc-per-node 1 -- true 2>"$WORK/err" && fail "slurm: MASTER_PORT=http accepted"
	grep -q "MASTER_PORT='http'" "$WORK/err" || fail "slurm: bad MASTER_PORT not named: $(cat "$WORK/err")"
	pass "simulated Slurm step, node 1 of 2, 4 GPUs: RANK 4..7, one GPU each; plugin's MASTER_* kept"
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
	command -v python3 >/dev/null || { echo "skip: python3 not found"; return; }
	out=$("$TRAIN_RUN" --nproc-per-node 2 -- python3 -c 'import os; print("py", os.environ["RANK"])')
	[ "$(echo "$out" | sort | tr '\n' ';')" = "py 0;py 1;" ] || fail "python: $out"
	printf 'import os, sys\nprint("script", os.environ["LOCAL_RANK"], *sys.argv[1:])\n' >"$WORK/train.py"
	out=$("$TRAIN_RUN" --nproc-per-node 2 "$WORK/train.py" --lr 3)
	[ "$(echo "$out" | sort | tr '\n' ';')" = "script 0 --lr 3;script 1 --lr 3;" ] || fail "python script: $out"
	"$TRAIN_RUN" "$WORK/missing.py" 2>"$WORK/err"
	rc=$?
	[ $rc -eq 127 ] && grep -q missing.py "$WORK/err" || fail "python script: missing one gives $rc: $(cat "$WORK/err")"
	pass "python3 programs; PROGRAM.py runs through python3 like torchrun"
}

t_topology() {
	xml="$SHARED/topologies/hwloc/coral-lassen.xml"
	[ -r "$xml" ] || { echo "skip: $xml absent"; return; }
	# Lassen: 4 GPUs, mlx5_0..3. NCCL_IB_HCA is a filter, not a preference: one list per node.
	out=$(env SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 SLURM_STEP_GPUS=0-3 \
		"$TRAIN_RUN" --topology "$xml" -- sh -c 'echo "$RANK $NCCL_IB_HCA $OMP_NUM_THREADS"')
	rc=$?
	[ $rc -eq 0 ] || fail "topology: exit $rc"
	[ "$(echo "$out" | sort -n | cut -d' ' -f1-2 | tr '\n' ';')" = \
	  "0 =mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1;1 =mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1;2 =mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1;3 =mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1;" ] ||
		fail "topology: NCCL_IB_HCA not the node's HCAs for every rank: $out"
	echo "$out" | awk '$3 < 1 { bad = 1 } END { exit bad }' || fail "topology: OMP_NUM_THREADS: $out"
	# Outside Slurm without CUDA_VISIBLE_DEVICES the node's own GPUs count, as torchrun's do.
	out=$("$TRAIN_RUN" --topology "$xml" --nproc-per-node gpu -- sh -c 'echo "$RANK $CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER"')
	[ "$(echo "$out" | sort -n | tr '\n' ';')" = "0 0 PCI_BUS_ID;1 1 PCI_BUS_ID;2 2 PCI_BUS_ID;3 3 PCI_BUS_ID;" ] ||
		fail "topology: standalone GPUs of the node: $out"
	NCCL_IB_HCA=mine "$TRAIN_RUN" --topology "$xml" --nproc-per-node 1 -- sh -c 'echo $NCCL_IB_HCA' >"$WORK/out"
	[ "$(cat "$WORK/out")" = mine ] || fail "topology: overrode the user's NCCL_IB_HCA"
	"$TRAIN_RUN" --topology "$WORK/none.xml" --nproc-per-node 1 -- true 2>"$WORK/err"
	[ $? -ne 0 ] && grep -q none.xml "$WORK/err" || fail "topology: a missing XML is not an error naming it"
	pass "topology policy: the node's HCAs for every rank, node GPUs counted standalone, user's NCCL_IB_HCA kept, bad XML named"
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

[ -x "$TRAIN_RUN" ] || { echo "FAIL: $TRAIN_RUN not built"; exit 1; }
for t in t_ranks t_failure t_sigkill t_usr1 t_signal_scope t_sigterm t_missing t_slurm t_output t_flood t_restart t_python t_topology t_topology_crash; do
	$t
done
[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
