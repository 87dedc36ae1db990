#!/bin/sh
# SPDX-License-Identifier: MIT
# hang.sh — train-run's fault tolerance on one node, no Slurm: workers that write progress
# heartbeats (TRAIN_HEARTBEAT_FD), one of them stopped (SIGSTOP) after its warm-up: one line names
# it, it is killed (not waited on), --max-restarts restarts the group, the run ends 0 and nothing
# is left behind; the step-time summary names a straggler. Workers that write no heartbeat are
# never declared hung; --hang-timeout's fixed, per-section and off forms; train-mlp's heartbeats
# come from libtrainrt. No tight timing asserts: detection is bounded generously (30 s; the
# timeout is 5 s), so a loaded machine passes.
# Run by `make check` from the build directory; TRAIN_RUN overrides the binary under test.
# Exit 0 when all passed, 1 on a failure, 77 when a part could not run (its SKIP line says why).
# tt-test-limit: 240
set -u
TRAIN_RUN=${TRAIN_RUN:-$(pwd)/train-run}
TRAIN_MLP=$(dirname "$TRAIN_RUN")/train-mlp
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hang-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset SLURM_JOB_ID SLURM_STEP_ID SLURM_NODEID SLURM_STEP_NODELIST SLURM_JOB_NODELIST SLURM_NODELIST \
	SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_GPUS_ON_NODE CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL \
	SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE MASTER_ADDR MASTER_PORT TRAIN_TOPO_SET \
	TRAIN_TOPO_RELAY_PID TRAIN_TOPO_RELAY_SIGNAL TRAIN_HEARTBEAT_FD
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=${TT_TEST_SRCDIR:-.}/tests/wrapper/lsan.supp:fast_unwind_on_malloc=0"
failures=0
skips=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# "ok" only when the case added no failure (f0: the count when it began).
pass() { [ "$failures" -eq "$f0" ] && echo "ok: $*"; }
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }

# train-run under a hard bound, so a regression that never detects fails instead of stalling.
run() { timeout -k 5 120 "$TRAIN_RUN" "$@"; }

# Processes whose command line names directory $1 (the workers' scripts live there).
left_behind() { pgrep -f "$1/" | wc -l; }

# The heartbeat worker: STEPS0 steps in round 0 (until killed), 30 in round 1, one line each,
# SLEEP s apart (SLEEP1_R1: rank 1's in round 1). Rank 1 stops itself after step STOP of round 0.
# Each worker records its pid per round, "step20" past the warm-up (20 lines: the timeout is
# calculated from the 15th), and "done" when it finished a round.
write_worker() {
	cat >"$1/worker.sh" <<'EOF'
#!/bin/sh
d=$(dirname "$0")
r=$TRAIN_RESTART_COUNT
echo $$ >"$d/pid.$RANK.$r"
n=30; [ "$r" = 0 ] && n=${STEPS0:-600}
pause=${SLEEP:-0.1}; [ "$RANK" = 1 ] && [ "$r" = 1 ] && pause=${SLEEP1_R1:-0.1}
i=0
while [ $i -lt $n ]; do
	i=$((i + 1))
	printf 'step %d\n' "$i" >>"/proc/self/fd/$TRAIN_HEARTBEAT_FD"
	[ $i != 20 ] || touch "$d/step20.$RANK.$r"
	if [ "$RANK" = 1 ] && [ "$r" = 0 ] && [ $i = "${STOP:-0}" ]; then
		date +%s >"$d/stopped"
		kill -STOP $$
	fi
	sleep "$pause"
done
touch "$d/done.$RANK.$r"
EOF
	chmod +x "$1/worker.sh"
}

t_hang_restart() {
	d="$WORK/hang"; mkdir "$d"; write_worker "$d"
	start=$(date +%s)
	STOP=25 SLEEP1_R1=0.4 run --nproc-per-node 2 --max-restarts 1 -- "$d/worker.sh" 2>"$d/err"
	rc=$?
	end=$(date +%s)
	[ $rc -eq 0 ] || fail "hang: exit $rc, expected 0 after the restart: $(cat "$d/err")"
	[ -e "$d/stopped" ] || fail "hang: rank 1 never stopped itself"
	n=$(grep -c 'hung in section' "$d/err")
	[ "$n" -eq 1 ] || fail "hang: $n hang lines, expected 1: $(cat "$d/err")"
	grep -Eq "^train-run: host $(hostname): rank 1 hung in section step: no progress for [0-9.]+ s \(timeout [0-9.]+ s\)$" \
		"$d/err" || fail "hang: the line does not name host, rank 1, section step: $(cat "$d/err")"
	# What train-run measured: at least its timeout (no early verdict), at most 30 s.
	silence=$(sed -n 's/.*no progress for \([0-9.]*\) s (timeout \([0-9.]*\) s).*/\1 \2/p' "$d/err")
	echo "$silence" | awk '{ exit !($1 >= $2 && $1 < 30 && $2 >= 5) }' ||
		fail "hang: silence/timeout '$silence' not within [timeout, 30 s) with a timeout >= 5 s"
	# And from outside: the stop to the end of the run (detection + restart + 30 steps) is bounded.
	[ -e "$d/stopped" ] && [ $((end - $(cat "$d/stopped"))) -lt 60 ] ||
		fail "hang: $((end - start)) s for the whole run; detection did not happen in time"
	grep -q 'rank 1 (local rank 1, pid [0-9]*) was killed by SIGKILL' "$d/err" ||
		fail "hang: the hung worker was not killed: $(cat "$d/err")"
	[ "$(grep -c 'restarting the 2 workers (restart 1 of 1)' "$d/err")" -eq 1 ] ||
		fail "hang: no single restart: $(cat "$d/err")"
	[ -e "$d/done.0.1" ] && [ -e "$d/done.1.1" ] || fail "hang: the restarted round did not finish"
	[ ! -e "$d/done.1.0" ] || fail "hang: the stopped worker finished round 0"
	for f in "$d"/pid.*; do
		! kill -0 "$(cat "$f")" 2>/dev/null || fail "hang: worker ${f##*/} (pid $(cat "$f")) is still there"
	done
	[ "$(left_behind "$d")" -eq 0 ] || fail "hang: processes left behind: $(pgrep -af "$d/")"
	grep -Eq "step times \(last 1024 per rank\): rank 0 p50 [0-9.]+ ms p99 [0-9.]+ ms, rank 1 p50" "$d/err" ||
		fail "hang: no step-time summary: $(cat "$d/err")"
	grep -Eq "straggler: rank 1 p50 [0-9.]+ ms is [0-9.]+x the node's median" "$d/err" &&
		! grep -q "straggler: rank 0" "$d/err" ||
		fail "hang: rank 1 (4x slower after the restart) is not the one straggler: $(cat "$d/err")"
	pass "a SIGSTOPped rank after warm-up: one line naming it (silence and timeout: $silence s), killed, restarted, exit 0, nothing left; straggler named"
}

# A suspend (Slurm stops every process of the step, train-run too, for longer than the timeout,
# then continues them): no hang, the run goes on and ends 0. train-run is continued first (it
# passes SIGCONT on to the workers), the worst order: its hang timer is already due.
t_suspend() {
	d="$WORK/suspend"; mkdir "$d"; write_worker "$d"
	STEPS0=60 run --nproc-per-node 2 -- "$d/worker.sh" 2>"$d/err" &
	pid=$!
	i=0
	while { [ ! -e "$d/step20.0.0" ] || [ ! -e "$d/step20.1.0" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	# train-run: the workers' parent.
	tr=$(ps -o ppid= -p "$(cat "$d/pid.0.0" 2>/dev/null)" 2>/dev/null | tr -d ' ')
	if [ -z "$tr" ] || [ ! -e "$d/step20.1.0" ]; then
		fail "suspend: train-run or its workers did not get past the warm-up: $(cat "$d/err")"
		wait $pid
		return
	fi
	kill -STOP "$tr" "$(cat "$d/pid.0.0")" "$(cat "$d/pid.1.0")"
	sleep 7
	kill -CONT "$tr"
	sleep 0.5
	kill -CONT "$(cat "$d/pid.0.0")" "$(cat "$d/pid.1.0")" 2>/dev/null
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "suspend: exit $rc: $(cat "$d/err")"
	! grep -q 'hung in section' "$d/err" || fail "suspend: a suspended worker was declared hung: $(cat "$d/err")"
	[ -e "$d/done.0.0" ] && [ -e "$d/done.1.0" ] || fail "suspend: the workers did not finish after the resume"
	[ "$(left_behind "$d")" -eq 0 ] || fail "suspend: processes left behind"
	pass "train-run and its workers stopped 7 s (past the 5 s timeout) and continued: no hang, exit 0"
}

# Workers that never write a heartbeat are never hung# Workers that never write a heartbeat are never hung, however long they are silent (past the
# 5 s floor), and get no step-time summary; a worker that stops itself is then waited for, as
# before (here it is continued from outside).
t_no_heartbeat() {
	d="$WORK/quiet"; mkdir "$d"
	run --nproc-per-node 2 -- sh -c "echo \$\$ >$d/pid.\$RANK; [ \"\$RANK\" = 1 ] && { kill -STOP \$\$; exit 0; }; sleep 7" \
		2>"$d/err" &
	pid=$!
	i=0
	while [ ! -e "$d/pid.1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 8
	[ -e "$d/pid.1" ] && kill -CONT "$(cat "$d/pid.1")"
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "no heartbeat: exit $rc: $(cat "$d/err")"
	! grep -q 'hung\|step times' "$d/err" || fail "no heartbeat: a silent worker was judged: $(cat "$d/err")"
	[ "$(left_behind "$d")" -eq 0 ] || fail "no heartbeat: processes left behind"
	pass "workers without heartbeats, one stopped for 8 s: never declared hung, no summary, exit 0"
}

t_flags() {
	d="$WORK/flags"; mkdir "$d"
	# A section with its own timeout: detected in it, before any step; without restarts the
	# hung worker's SIGKILL is the run's status.
	run --nproc-per-node 1 --hang-timeout setup=1 -- sh -c \
		'printf "section setup\n" >>"/proc/self/fd/$TRAIN_HEARTBEAT_FD"; exec sleep 60' 2>"$d/err"
	rc=$?
	[ $rc -eq 137 ] || fail "flags: setup=1 gave exit $rc, expected 137: $(cat "$d/err")"
	grep -Eq "rank 0 hung in section setup: no progress for [0-9.]+ s \(timeout 1.0 s\)$" "$d/err" ||
		fail "flags: setup=1 not reported: $(cat "$d/err")"
	# off: nothing is judged, whatever the sections say.
	run --nproc-per-node 1 --hang-timeout setup=1 --hang-timeout off -- sh -c \
		'printf "section setup\n" >>"/proc/self/fd/$TRAIN_HEARTBEAT_FD"; sleep 2.5' 2>"$d/err"
	rc=$?
	[ $rc -eq 0 ] && ! grep -q hung "$d/err" || fail "flags: off still judged: exit $rc, $(cat "$d/err")"
	run --hang-timeout 0 -- true 2>"$d/err"
	rc=$?
	[ $rc -eq 2 ] && grep -q "^train-run: --hang-timeout '0': expected off, SECONDS or SECTION=SECONDS" "$d/err" ||
		fail "flags: --hang-timeout 0 gave exit $rc: $(cat "$d/err")"
	# Every worker's TRAIN_HEARTBEAT_FD is train-run's pipe, whatever train-run inherited.
	out=$(TRAIN_HEARTBEAT_FD=1 run --nproc-per-node 2 -- sh -c '[ -p "/proc/self/fd/$TRAIN_HEARTBEAT_FD" ] && echo pipe' 2>"$d/err")
	[ "$out" = "pipe
pipe" ] || fail "flags: TRAIN_HEARTBEAT_FD is not a pipe in every worker: $out $(cat "$d/err")"
	pass "--hang-timeout SECTION=S detects in that section, off disables, 0 refused; TRAIN_HEARTBEAT_FD a pipe"
}

# train-mlp writes its heartbeats through libtrainrt: the summary has both ranks' step times
# and busy times.
# 8192 steps, a few seconds: enough lines past the warm-up at one line per 10 ms.
t_train_mlp() {
	[ -x "$TRAIN_MLP" ] || { skip "train-mlp: $TRAIN_MLP not built"; return; }
	d="$WORK/mlp"; mkdir "$d"
	run --nproc-per-node 2 -- "$TRAIN_MLP" --layers 64,64,10 --data synthetic --synthetic-samples 65536,128 \
		--batch 16 --epochs 2 --log-every 10000 >"$d/out" 2>"$d/err"
	rc=$?
	[ $rc -eq 0 ] || fail "train-mlp: exit $rc: $(cat "$d/err")"
	grep -Eq "step times \(last 1024 per rank\): rank 0 p50 [0-9.]+ ms p99 [0-9.]+ ms busy p50 [0-9.]+ ms, rank 1 p50 [0-9.]+ ms p99 [0-9.]+ ms busy p50 [0-9.]+ ms$" "$d/err" ||
		fail "train-mlp: no step times from its heartbeats: $(cat "$d/err")"
	pass "train-mlp under train-run: heartbeats from libtrainrt, both ranks' step times"
}

[ -x "$TRAIN_RUN" ] || { echo "FAIL: $TRAIN_RUN not built"; exit 1; }
command -v pgrep >/dev/null 2>&1 || { echo "SKIP: pgrep not found (procps)"; exit 77; }
for t in t_hang_restart t_suspend t_no_heartbeat t_flags t_train_mlp; do
	f0=$failures
	$t
done
[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
[ $skips -eq 0 ] || { echo "$skips part(s) skipped: see SKIP lines"; exit 77; }
