#!/bin/sh
# SPDX-License-Identifier: MIT
# ft.sh — the control plane between the train-runs of a launch (wrapper/ctl.c), end to end on
# this machine: two nodes of a simulated Slurm step (node 0 = localhost "ft-a", node 1 =
# 127.0.0.1 "ft-b", told apart by SLURMD_NODENAME) running workers that never talk to each other.
#  - a worker of node 1 killed (-9): both nodes restart in the same round, each worker started
#    twice, rounds 0 and 1; the culprit is named on both nodes by the same line;
#  - a worker of node 1 hung (SIGSTOP, --hang-timeout 2): the same, the hang named;
#  - a rank of node 0 silent but alive (a victim) just before a rank of node 1 stops: both nodes
#    name the stopped one;
#  - restarts used up: both nodes stop with the same line, the culprit's exit status there;
#  - node 1's train-run killed (-9): node 0 stops with the line naming ft-b and the sbatch
#    --exclude to resubmit with, appends ft-b to TRAIN_TOPO_EXCLUDE_FILE, leaves nothing behind;
#  - node 0's train-run killed: node 1 stops naming ft-a;
#  - node 1's train-run stopped (SIGSTOP): node 0 stops after its silence, naming ft-b;
#  - both train-runs stopped and continued (a suspend): no loss;
#  - rank 3 4x slower than the others: node 0 names it, on ft-b, node 1, once in the job's
#    report, and --report's JSON holds every rank and it as the one straggler, no fault; a report that
#    cannot be written: one line naming the file, nothing half-written.
#  - three nodes with --spares 1 (ft-c at 127.0.0.2 the spare): node 1's train-run killed: the
#    spare runs node rank 1 in round 1, each rank once on the right host, one line per node;
#    the spare lost while standing by: named, the job goes on; then node 1 lost: the verdict.
#  - three nodes with --nnodes 2:3, no spare: node 1's train-run killed: nodes 0 and 2 restart
#    as node ranks 0 and 1 of a world of 4, one line per node; with --nnodes 3:4: the verdict.
#  - preflight before each restart: node 1's GPU device file gone after round 0 (a fake device
#    directory): with a spare, node 1 is replaced before round 1 starts, one line on every node
#    naming it, the device and the spare; without one, both nodes stop with the verdict;
#    --preflight=off: the round starts anyway.
#  - the network before each restart: node 1's probe to node 0 slowed after round 0 (a test
#    hook, TRAINRT_PREFLIGHT_TEST_NET_DELAY): of three nodes, every node stops with the verdict
#    naming node 1's bandwidth once; a probe slowed past its bound is not measured (said once
#    on node 1) and the round starts; --preflight=off: the round starts, nothing probed.
#  - preflight at the start: node 1's GPU device file gone before the launch, with a spare: the
#    spare runs node rank 1 from round 0, node 1 stands aside and ends 0, one line on every node;
#    a spare with another worker count, or node 0 failing: the verdict on every node.
#  - the launch's outcome (TRAIN_TOPO_OUTCOME_FILE): node 0 alone writes its exit status; a
#    worker of node 1 failing after node 0's workers ended makes node 0's status 1, one line,
#    and is node 0's one fault (a stop) in --report; a launch that succeeds has none.
#  - node 0's --report holds exactly the faults it decided on, in order, each field checked
#    (report_faults): the kill, the hang, the restarts used up, the lost nodes, the spare's
#    replacement, the spare lost, the shrink, the preflight's replacement and its stop; after a
#    replacement or a shrink its ranks are the new round's (report_ranks).
#  - preflight at the start with several failing: five nodes, --spares 2, nodes 1 and 2 failing:
#    each replaced by its own spare from round 0, one line per swap on every node; four nodes,
#    --spares 2, node 1 and the first spare failing: the spare is set aside (one line on every
#    node, no verdict), the other spare runs node rank 1; every node ends 0.
# No timing asserts: every wait is bounded generously (60 s; the loss bound is 5 s).
# Run by `make check` from the build directory; TRAIN_RUN overrides the binary under test.
# Exit 0 when all passed, 1 on a failure, 77 when a part could not run (its SKIP line says why).
# tt-test-limit: 240
set -u
TRAIN_RUN=${TRAIN_RUN:-$(pwd)/train-run}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ft-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset SLURM_JOB_ID SLURM_STEP_ID SLURM_NODEID SLURM_STEP_NODELIST SLURM_JOB_NODELIST SLURM_NODELIST \
	SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_GPUS_ON_NODE CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL \
	SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE MASTER_ADDR MASTER_PORT TRAIN_TOPO_SET \
	TRAIN_TOPO_RELAY_PID TRAIN_TOPO_RELAY_SIGNAL TRAIN_HEARTBEAT_FD TRAIN_TOPO_EXCLUDE_FILE TRAIN_TOPO_OUTCOME_FILE \
	SLURMD_NODENAME SLURM_STEP_RESV_PORTS
export TRAINRT_TOKEN=ft-test-secret-0123456789abcdef
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=${TT_TEST_SRCDIR:-.}/tests/wrapper/lsan.supp:fast_unwind_on_malloc=0"
failures=0
skips=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { [ "$failures" -eq "$f0" ] && echo "ok: $*"; }
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }

free_port() { sh "${TT_TEST_SRCDIR:-.}/tests/trainer/launch_local.sh" --free-port; }

# The worker: logs "RANK ROUND" per start into DIR/starts; then ACTION in round 0 on rank 3
# (node 1's second worker): "kill" kills itself, "hang" stops itself after heartbeats; "fail"
# exits 3 in every round; "unplug": as kill, after removing GPU 1's device file of its node's
# fake device directory (TRAINRT_PREFLIGHT_TEST_DEV_DIR); "slowlink": as kill, after writing
# NETDELAY ms into its node's TRAINRT_PREFLIGHT_TEST_NET_DELAY file (every bandwidth round of its
# probes slower by that from then on); "victim": rank 1 (node 0) goes silent at step 5 but runs on, rank 3
# stops itself at step 10; "slow": rank 3 sleeps 4x as long between its steps; "late": rank 3
# exits 3 at step 20 (2 s). Everyone else
# writes heartbeats for SECS s and ends 0.
write_worker() {
	cat >"$1/worker.sh" <<'EOF'
#!/bin/sh
d=$(dirname "$0")
echo "$RANK $TRAIN_RESTART_COUNT" >>"$d/starts"
echo "$RANK $TRAIN_RESTART_COUNT $SLURMD_NODENAME $NODE_RANK $WORLD_SIZE $SLURM_NODEID" >>"$d/where"
env | sort >"$d/env.$RANK.$TRAIN_RESTART_COUNT"
hb() { printf 'step %d\n' "$1" >>"/proc/self/fd/$TRAIN_HEARTBEAT_FD"; }
i=0
while [ $i -lt $((${SECS:-3} * 10)) ]; do
	i=$((i + 1))
	case ${ACTION:-}:$TRAIN_RESTART_COUNT:$RANK in
	victim:0:1) [ $i -ge 5 ] || hb $i ;; # from step 5 alive but silent, as if blocked behind rank 3
	*) hb $i ;;
	esac
	if [ "$RANK" = 3 ] && [ $i = 5 ]; then
		case ${ACTION:-}:$TRAIN_RESTART_COUNT in
		kill:0) kill -9 $$ ;;
		unplug:0) rm -f "$TRAINRT_PREFLIGHT_TEST_DEV_DIR/nvidia1" && kill -9 $$ ;;
		slowlink:0) echo "$NETDELAY" >"$TRAINRT_PREFLIGHT_TEST_NET_DELAY" && kill -9 $$ ;;
		hang:0) kill -STOP $$ ;;
		fail:*) exit 3 ;;
		esac
	fi
	[ "${ACTION:-}:$TRAIN_RESTART_COUNT:$RANK:$i" != victim:0:3:10 ] || kill -STOP $$
	[ "${ACTION:-}:$RANK:$i" != late:3:20 ] || exit 3
	if [ "$RANK" = 3 ] && [ "${ACTION:-}" = slow ]; then sleep 0.4; else sleep 0.1; fi
done
EOF
	chmod +x "$1/worker.sh"
}

# Starts node $2 (0 .. NODES-1, NODES 2 to 5) of a launch in directory $1 with
# train-run options $3..., in the background, bounded; its stderr in $1/err.$2, its pid in
# $1/pid.$2. Node 0 is ft-a at localhost, node 1 ft-b at 127.0.0.1, node 2 ft-c at 127.0.0.2,
# node 3 ft-d at 127.0.0.3, node 4 ft-e at 127.0.0.4.
# Its GPUs' device files (preflight.h) are in $1/dev.$2 when that exists (fake_gpus); its network
# probes are slowed by the ms in $1/netdelay.$2 while that exists (probe.h).
node() {
	d=$1 n=$2
	shift 2
	host=$(echo "ft-a ft-b ft-c ft-d ft-e" | cut -d' ' -f$((n + 1)))
	nodelist=$(echo localhost,127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4 | cut -d, -f1-"${NODES:-2}")
	env SLURM_JOB_ID=4711 SLURM_STEP_ID=0 SLURM_STEP_NODELIST="$nodelist" SLURM_NODEID="$n" \
		SLURM_STEP_TASKS_PER_NODE="1(x${NODES:-2})" SLURM_STEP_RESV_PORTS="$(cat "$d/port")" SLURMD_NODENAME="$host" \
		TRAIN_TOPO_EXCLUDE_FILE="$d/exclude.$n" TRAIN_TOPO_OUTCOME_FILE="$d/outcome.$n" TRAINRT_PREFLIGHT_TEST_DEV_DIR="$d/dev.$n" \
		TRAINRT_PREFLIGHT_TEST_NET_DELAY="$d/netdelay.$n" timeout -k 5 60 "$TRAIN_RUN" --nproc-per-node 2 "$@" -- "$d/worker.sh" 2>"$d/err.$n" &
	echo $! >"$d/pid.$n"
}

# A new launch directory $WORK/$1 with its worker and port.
launch_dir() {
	mkdir "$WORK/$1"
	write_worker "$WORK/$1"
	free_port >"$WORK/$1/port"
}

# Both nodes of launch $1 with train-run options $2..., run to their end: exits in rc0, rc1.
both_nodes() {
	bd=$1
	shift
	node "$bd" 0 "$@"
	node "$bd" 1 "$@"
	wait "$(cat "$bd/pid.0")"
	rc0=$?
	wait "$(cat "$bd/pid.1")"
	rc1=$?
}

# Sorted starts of launch $1, one "RANK ROUND" per line joined by ';'.
starts() { sort "$1/starts" | tr '\n' ';'; }

# The train-run of node $2 in launch $1 (the child of its timeout wrapper).
train_run_of() { pgrep -P "$(cat "$1/pid.$2")" -x train-run; }

# The faults of node 0's --report file $1 (test $2) are exactly those of $3, a Python list of
# dicts in order: each entry's fields as given ("what": how the WHAT starts; "detect_s": [LO, HI]
# it lies in, or absent when the entry must have none), and no other field. Checked with
# /usr/bin/python3's json module, an oracle independent of train-run's formatting.
report_faults() {
	[ -x /usr/bin/python3 ] || { skip "$2: /usr/bin/python3 not found to check $1"; return; }
	/usr/bin/python3 - "$1" "$3" <<'EOF' || fail "$2: faults of $1: $(cat "$1" 2>&1)"
import ast, json, sys
got = json.load(open(sys.argv[1]))["faults"]
want = ast.literal_eval(sys.argv[2])
assert len(got) == len(want), ("%d faults, not %d" % (len(got), len(want)), got)
for g, w in zip(got, want):
    span, what = w.pop("detect_s", None), w.pop("what")
    keys = set(w) | {"what"} | ({"detect_s"} if span else set())
    assert set(g) == keys, ("fields", sorted(g), sorted(keys))
    for k, v in w.items():
        assert g[k] == v and type(g[k]) == type(v), (k, g[k], v)
    assert g["what"].startswith(what), (g["what"], what)
    assert not span or span[0] <= g["detect_s"] < span[1], ("detect_s", g["detect_s"], span)
EOF
}

# The step table of node 0's --report file $1 (test $2) after node 1 (ft-b) left and node 2
# (ft-c) runs ranks 2 and 3: exactly ranks 0 to 3, once each, none on node 1 (whose rows node 0
# had, with TRAINRT_STEPS_TEST_MS), none under node 2's old ranks.
report_ranks() {
	[ -x /usr/bin/python3 ] || { skip "$2: /usr/bin/python3 not found to check $1"; return; }
	/usr/bin/python3 - "$1" <<'EOF' || fail "$2: ranks of $1: $(cat "$1" 2>&1)"
import json, sys
ranks = [(x["rank"], x["node"], x["host"]) for x in json.load(open(sys.argv[1]))["ranks"]]
assert sorted(ranks) == [(0, 0, "ft-a"), (1, 0, "ft-a"), (2, 2, "ft-c"), (3, 2, "ft-c")], ranks
EOF
}

t_fault_restarts_every_node() {
	for action in kill hang; do
		d="$WORK/$action"
		launch_dir "$action"
		export ACTION=$action SECS=3
		both_nodes "$d" --max-restarts 2 --hang-timeout 2 --report "$d/report.json"
		[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "$action: exits $rc0 $rc1: $(cat "$d"/err.*)"
		# Every worker started twice, in rounds 0 and 1: the ranks of node 0 too, though they
		# never heard of rank 3's fate through any collective.
		[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" ] ||
			fail "$action: starts $(starts "$d"): $(cat "$d"/err.*)"
		what=$([ $action = kill ] && echo "was killed by SIGKILL" || echo "hung in section step")
		for n in 0 1; do
			[ "$(grep -c "rank 3 on host ft-b $what.*: every node restarts its workers (restart 1 of 2" "$d/err.$n")" -eq 1 ] ||
				fail "$action: node $n did not name the culprit once: $(cat "$d/err.$n")"
		done
		kind=$([ $action = kill ] && echo crash || echo hang)
		report_faults "$d/report.json" "$action" "[{'round': 0, 'kind': '$kind', 'rank': 3, 'node': 1,
			'host': 'ft-b', 'action': 'restart', 'what': '$what'}]"
	done
	unset ACTION SECS
	pass "a worker of node 1 killed or hung: both nodes restart once, in round 1, the culprit named on both"
}

# A rank stopped on node 1 while a rank of node 0 went silent half a second earlier (alive: a
# victim waiting in a collective, as every rank behind a stopped one is): node 0's timer runs out
# first, yet its pick shows no stopped rank, so it waits for a node that knows better; both nodes
# name the stopped rank 3 on ft-b, never the victim.
t_victim_waits_for_the_culprit() {
	d="$WORK/victim"
	launch_dir victim
	export ACTION=victim SECS=4
	both_nodes "$d" --max-restarts 2 --hang-timeout 2
	unset ACTION SECS
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "victim: exits $rc0 $rc1: $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" ] || fail "victim: starts $(starts "$d")"
	for n in 0 1; do
		[ "$(grep -c "rank 3 on host ft-b hung in section step.*: every node restarts its workers (restart 1 of 2" "$d/err.$n")" -eq 1 ] ||
			fail "victim: node $n did not name the stopped rank 3 once: $(cat "$d/err.$n")"
		! grep -q "rank 1 .*hung" "$d/err.$n" || fail "victim: node $n named the victim: $(cat "$d/err.$n")"
	done
	pass "a silent victim on node 0 and a stopped rank on node 1: both nodes name the stopped one"
}

t_restarts_used_up() {
	d="$WORK/fail"
	launch_dir fail
	ACTION=fail SECS=30 node "$d" 0 --max-restarts 1 --report "$d/report.json"
	ACTION=fail SECS=30 node "$d" 1 --max-restarts 1
	wait "$(cat "$d/pid.0")"
	rc0=$?
	wait "$(cat "$d/pid.1")"
	rc1=$?
	[ $rc1 -eq 3 ] || fail "used up: node 1 exit $rc1, not the culprit's 3: $(cat "$d/err.1")"
	[ $rc0 -ne 0 ] && [ $rc0 -ne 124 ] || fail "used up: node 0 exit $rc0: $(cat "$d/err.0")"
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" ] || fail "used up: starts $(starts "$d")"
	for n in 0 1; do
		[ "$(grep -c "rank 3 on host ft-b exited with code 3: no restart left (1 used): every node stops" "$d/err.$n")" -eq 1 ] ||
			fail "used up: node $n: $(cat "$d/err.$n")"
	done
	report_faults "$d/report.json" "used up" "[
		{'round': 0, 'kind': 'crash', 'rank': 3, 'node': 1, 'host': 'ft-b', 'action': 'restart', 'what': 'exited with code 3'},
		{'round': 1, 'kind': 'crash', 'rank': 3, 'node': 1, 'host': 'ft-b', 'action': 'stop', 'what': 'exited with code 3'}]"
	pass "restarts used up: both nodes stop with the same line, node 1 with the culprit's status"
}

# Node $1's train-run of a fresh launch killed -9 (or, with $3 = STOP, stopped: silent) once
# every worker runs: the other node stops with the verdict naming host $2, appends it to its
# exclude file, and nothing is left running.
lose_node() {
	d="$WORK/lose$1${3:-}"
	launch_dir "lose$1${3:-}"
	SECS=50 node "$d" 0 --max-restarts 3 --report "$d/report.json"
	SECS=50 node "$d" 1 --max-restarts 3
	other=$((1 - $1))
	i=0
	while [ "$(cat "$d/starts" 2>/dev/null | wc -l)" -lt 4 ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	victim=$(train_run_of "$d" "$1")
	[ -n "$victim" ] || { fail "lose $1: no train-run to kill: $(cat "$d"/err.*)"; return; }
	kill -"${3:-KILL}" "$victim"
	wait "$(cat "$d/pid.$other")"
	rc=$?
	[ -z "${3:-}" ] || kill -9 "$victim"
	wait "$(cat "$d/pid.$1")"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "lose $1: node $other exit $rc: $(cat "$d/err.$other")"
	[ -z "${3:-}" ] || grep -q "node $2 lost (silent for [0-9.]* s)" "$d/err.$other" ||
		fail "lose $1 $3: not lost by its silence: $(cat "$d/err.$other")"
	[ "$(grep -c "train-run: node $2 lost (.*); resubmit with: sbatch --exclude=$2 \.\.\.; stopping 2 workers here" "$d/err.$other")" -eq 1 ] ||
		fail "lose $1: no verdict on node $other: $(cat "$d/err.$other")"
	[ "$(cat "$d/exclude.$other" 2>/dev/null)" = "$2" ] || fail "lose $1: exclude file: $(cat "$d/exclude.$other" 2>&1)"
	# No worker restarted, none left behind (the victim's die with it: PDEATHSIG).
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;" ] || fail "lose $1: starts $(starts "$d")"
	sleep 0.5
	left=$(pgrep -f "$d/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "lose $1: $left workers left behind"
	# Node 0's record (a killed node 0 writes none): a kill is seen at once, a silence after 5 s.
	[ "$1" = 1 ] || return
	if [ -z "${3:-}" ]; then
		span="[0, 5]" what="its train-run ended without a word"
	else
		span="[5, 60]" what="silent for"
	fi
	report_faults "$d/report.json" "lose $1 ${3:-}" "[{'round': 0, 'kind': 'lost', 'rank': None, 'node': 1,
		'host': 'ft-b', 'action': 'stop', 'detect_s': $span, 'what': '$what'}]"
}

t_node_lost() {
	lose_node 1 ft-b
	lose_node 0 ft-a
	lose_node 1 ft-b STOP
	pass "a node's train-run killed or silent: the other stops, names it with sbatch --exclude, notes it; nothing left"
}

# Both train-runs stopped for longer than the loss bound and continued, as a suspended job is
# (its workers run on here): no node is lost, both end 0 without a restart.
t_suspend_is_no_loss() {
	d="$WORK/suspend"
	launch_dir suspend
	SECS=12 node "$d" 0
	SECS=12 node "$d" 1
	i=0
	while [ "$(cat "$d/starts" 2>/dev/null | wc -l)" -lt 4 ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	# The timeout wrappers lead the process groups of the train-runs (the workers have their own).
	kill -STOP -"$(cat "$d/pid.0")" -"$(cat "$d/pid.1")"
	sleep 7
	kill -CONT -"$(cat "$d/pid.0")" -"$(cat "$d/pid.1")"
	wait "$(cat "$d/pid.0")"
	rc0=$?
	wait "$(cat "$d/pid.1")"
	rc1=$?
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "suspend: exits $rc0 $rc1: $(cat "$d"/err.*)"
	! grep -q "lost" "$d/err.0" "$d/err.1" || fail "suspend: a node taken for lost: $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;" ] || fail "suspend: starts $(starts "$d")"
	pass "both train-runs stopped for 7 s and continued: no node lost, no restart"
}

# Rank 3 (node 1, ft-b) takes 400 ms a step, the others 100 ms: node 0's job report names it
# once, nothing else; the JSON file holds the four ranks and it as the straggler. Then a
# one-node run whose --report cannot be written says so in one line and leaves no file.
t_job_stragglers() {
	d="$WORK/slow"
	launch_dir slow
	ACTION=slow SECS=2 node "$d" 0 --report "$d/report.json"
	ACTION=slow SECS=2 node "$d" 1 --report "$d/report1.json"
	wait "$(cat "$d/pid.0")"
	rc0=$?
	wait "$(cat "$d/pid.1")"
	rc1=$?
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "stragglers: exits $rc0 $rc1: $(cat "$d"/err.*)"
	[ "$(grep -c "^train-run: job: step times of 4 ranks on 2 nodes: median p50 " "$d/err.0")" -eq 1 ] ||
		fail "stragglers: no job summary on node 0: $(cat "$d/err.0")"
	[ "$(grep -c "^train-run: job: straggler" "$d/err.0")" -eq 1 ] &&
		[ "$(grep -c "^train-run: job: straggler: rank 3 on host ft-b (node 1) p50 [0-9.]* ms p99 [0-9.]* ms is [0-9.]*x the job's median [0-9.]* ms$" "$d/err.0")" -eq 1 ] ||
		fail "stragglers: rank 3 not named once, alone: $(cat "$d/err.0")"
	! grep -q "train-run: job:" "$d/err.1" || fail "stragglers: node 1 reported the job: $(cat "$d/err.1")"
	[ ! -e "$d/report1.json" ] || fail "stragglers: node 1 wrote a report"
	python3 - "$d/report.json" <<'EOF' || fail "stragglers: report.json: $(cat "$d/report.json" 2>&1)"
import json, sys
r = json.load(open(sys.argv[1]))
ranks = {x["rank"]: x for x in r["ranks"]}
assert sorted(ranks) == [0, 1, 2, 3], ranks
assert [ranks[i]["host"] for i in range(4)] == ["ft-a", "ft-a", "ft-b", "ft-b"], ranks
assert [ranks[i]["node"] for i in range(4)] == [0, 0, 1, 1], ranks
assert all(x["samples"] > 0 and 0 < x["p50_ms"] <= x["p99_ms"] for x in ranks.values()), ranks
assert r["stragglers"] == {"ranks": [3], "nodes": []}, r["stragglers"]
assert r["restarts"] == 0 and r["factor"] == 1.5, r
assert r["faults"] == [], r["faults"]
EOF
	SECS=1 timeout -k 5 60 "$TRAIN_RUN" --standalone --nproc-per-node 1 --report "$d/none/r.json" -- \
		"$d/worker.sh" 2>"$d/err.bad"
	rc=$?
	[ $rc -eq 0 ] || fail "bad report: exit $rc: $(cat "$d/err.bad")"
	[ "$(grep -c "^train-run: cannot write the step-time report (--report): cannot create a temporary file next to '$d/none/r.json' (is the directory writable?): No such file or directory$" "$d/err.bad")" -eq 1 ] ||
		fail "bad report: no line naming the file: $(cat "$d/err.bad")"
	pass "a 4x slower rank: node 0 names it and its node once; the JSON report holds it; an unwritable one named"
}

# Waits (bounded) until file $1 has $2 lines.
await_lines() {
	i=0
	while [ "$(cat "$1" 2>/dev/null | wc -l)" -lt "$2" ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# Kills (-9) the train-run of node $2 of launch $1; 1 with a failure of test $3 when none runs.
kill_node() {
	victim=$(train_run_of "$1" "$2")
	[ -n "$victim" ] || { fail "$3: no train-run of node $2 to kill: $(cat "$1"/err.*)"; return 1; }
	kill -9 "$victim"
}

# Launch $1 of three nodes, node 1's train-run killed: waits for every node; nodes 0 and 2 must
# end 0 (test $2).
await_survivors() {
	wait "$(cat "$1/pid.0")"
	rc0=$?
	wait "$(cat "$1/pid.2")"
	rc2=$?
	wait "$(cat "$1/pid.1")"
	[ $rc0 -eq 0 ] && [ $rc2 -eq 0 ] || fail "$2: exits $rc0 $rc2: $(cat "$1"/err.*)"
}

# Nodes 0 and 2 of launch $1 went on without node 1 (test $2): each said line $3 (a basic
# regular expression) once and noted ft-b for exclusion; no worker is left running.
survivors_said() {
	for n in 0 2; do
		[ "$(grep -c "$3" "$1/err.$n")" -eq 1 ] || fail "$2: node $n did not say it once: $(cat "$1/err.$n")"
		[ "$(cat "$1/exclude.$n" 2>/dev/null)" = ft-b ] || fail "$2: exclude file of node $n: $(cat "$1/exclude.$n" 2>&1)"
	done
	sleep 0.5
	left=$(pgrep -f "$1/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "$2: $left workers left behind"
}

# Three nodes, the last a spare (--spares 1): node 1's train-run killed -9 (its workers die with
# it) once every worker of round 0 runs. Node 0 gives the spare node rank 1: each rank of round
# 1 starts exactly once, ranks 2 and 3 on ft-c with NODE_RANK 1 and the world of 4; nodes 0 and
# 2 say so in one line each, note ft-b for exclusion, end 0; nothing is left running.
t_spare_replaces_lost_node() {
	d="$WORK/spare"
	launch_dir spare
	# Step times every 0.5 s: node 0 has node 1's rows before it dies (report_ranks).
	for n in 0 1 2; do NODES=3 SECS=6 TRAINRT_STEPS_TEST_MS=500 node "$d" $n --spares 1 --report "$d/report.json"; done
	await_lines "$d/starts" 4
	sleep 2
	kill_node "$d" 1 spare || return
	await_survivors "$d" spare
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" ] || fail "spare: starts $(starts "$d")"
	[ "$(awk '$2 == 1' "$d/where" | sort | tr '\n' ';')" = "0 1 ft-a 0 4 0;1 1 ft-a 0 4 0;2 1 ft-c 1 4 1;3 1 ft-c 1 4 1;" ] ||
		fail "spare: round 1 ran $(sort "$d/where" | tr '\n' ';')"
	# The spare's workers get what node 1's got, but for the host's own and the round's values
	# (the exclude file and the fake device directory differ per node here only).
	for r in 2 3; do
		diff_env=$(diff "$d/env.$r.0" "$d/env.$r.1" | grep '^[<>]' |
			grep -v -E '^. (SLURMD_NODENAME|TRAIN_TOPO_EXCLUDE_FILE|TRAIN_TOPO_OUTCOME_FILE|TRAINRT_PREFLIGHT_TEST_DEV_DIR|TRAINRT_PREFLIGHT_TEST_NET_DELAY|TRAIN_RESTART_COUNT|TORCHELASTIC_RESTART_COUNT)=')
		[ -z "$diff_env" ] || fail "spare: rank $r's environment differs from node 1's: $diff_env"
	done
	! grep -q '^[0-9]* 0 ft-c ' "$d/where" || fail "spare: the spare ran a worker in round 0: $(cat "$d/where")"
	survivors_said "$d" spare \
		"^train-run: host .*: node ft-b lost (.*); spare node 2 (ft-c) takes its node rank 1: every node restarts its workers (round 1;"
	report_faults "$d/report.json" spare "[{'round': 0, 'kind': 'lost', 'rank': None, 'node': 1, 'host': 'ft-b',
		'action': 'replace', 'node_rank': 1, 'spare_node': 2, 'spare_host': 'ft-c', 'detect_s': [0, 5],
		'what': 'its train-run ended without a word'}]"
	report_ranks "$d/report.json" spare
	pass "node 1 lost with a spare standing by: the spare runs node rank 1 in round 1, each rank once, named on every node"
}

# Three nodes, the last a spare: the spare's train-run killed while it stands by: nodes 0 and 1
# name it once and go on; then node 1's train-run killed: no spare left, node 0 stops with the
# loss verdict as without spares, no worker restarted, nothing left running.
t_spare_lost_then_no_spare() {
	d="$WORK/nospare"
	launch_dir nospare
	for n in 0 1 2; do NODES=3 SECS=50 node "$d" $n --spares 1 --max-restarts 3 --report "$d/report.json"; done
	await_lines "$d/starts" 4
	kill_node "$d" 2 "no spare" || return
	wait "$(cat "$d/pid.2")"
	i=0
	while ! grep -q "spare node 2" "$d/err.1" && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	for n in 0 1; do
		[ "$(grep -c "^train-run: host .*: spare node 2 (ft-c) lost while standing by (.*); the job goes on with one spare fewer$" "$d/err.$n")" -eq 1 ] ||
			fail "no spare: node $n did not name the lost spare once: $(cat "$d/err.$n")"
	done
	kill_node "$d" 1 "no spare" || return
	wait "$(cat "$d/pid.0")"
	rc=$?
	wait "$(cat "$d/pid.1")"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "no spare: node 0 exit $rc: $(cat "$d/err.0")"
	[ "$(grep -c "train-run: node ft-b lost (.*); resubmit with: sbatch --exclude=ft-b \.\.\.; stopping 2 workers here" "$d/err.0")" -eq 1 ] ||
		fail "no spare: no verdict on node 0: $(cat "$d/err.0")"
	[ "$(tr '\n' ' ' <"$d/exclude.0" 2>/dev/null)" = "ft-c ft-b " ] || fail "no spare: exclude file: $(cat "$d/exclude.0" 2>&1)"
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;" ] || fail "no spare: starts $(starts "$d")"
	sleep 0.5
	left=$(pgrep -f "$d/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "no spare: $left workers left behind"
	report_faults "$d/report.json" "no spare" "[
		{'round': 0, 'kind': 'lost', 'rank': None, 'node': 2, 'host': 'ft-c', 'action': 'continue', 'detect_s': [0, 5],
		 'what': 'its train-run ended without a word'},
		{'round': 0, 'kind': 'lost', 'rank': None, 'node': 1, 'host': 'ft-b', 'action': 'stop', 'detect_s': [0, 5],
		 'what': 'its train-run ended without a word'}]"
	pass "a spare lost standing by: named, the job goes on; node 1 lost then: the verdict as without spares"
}

# Three nodes with --nnodes 2:3, no spare: node 1's train-run killed -9 once every worker of
# round 0 runs. Node 0 and node 2 go on without it: each rank of round 1 starts exactly once,
# ranks 0 1 on ft-a with NODE_RANK 0, ranks 2 3 on ft-c with NODE_RANK (and SLURM_NODEID) 1,
# WORLD_SIZE 4, NNODES 2; nodes 0 and 2 say so in one line each, note ft-b for exclusion, end 0.
t_shrink_on_lost_node() {
	d="$WORK/shrink"
	launch_dir shrink
	# Step times every 0.5 s: node 0 has node 1's rows and node 2's as ranks 4 5 before the loss.
	for n in 0 1 2; do NODES=3 SECS=6 TRAINRT_STEPS_TEST_MS=500 node "$d" $n --nnodes 2:3 --report "$d/report.json"; done
	await_lines "$d/starts" 6
	sleep 2
	kill_node "$d" 1 shrink || return
	await_survivors "$d" shrink
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;4 0;5 0;" ] || fail "shrink: starts $(starts "$d")"
	[ "$(awk '$2 == 1' "$d/where" | sort | tr '\n' ';')" = "0 1 ft-a 0 4 0;1 1 ft-a 0 4 0;2 1 ft-c 1 4 1;3 1 ft-c 1 4 1;" ] ||
		fail "shrink: round 1 ran $(sort "$d/where" | tr '\n' ';')"
	for r in 0 1 2 3; do
		[ "$(grep -c -x -E 'NNODES=2|SLURM_TASKS_PER_NODE=2\(x2\)|TRAIN_RESTART_COUNT=1' "$d/env.$r.1")" -eq 3 ] ||
			fail "shrink: rank $r of round 1: $(grep -E '^(NNODES|SLURM_TASKS_PER_NODE|TRAIN_RESTART_COUNT)=' "$d/env.$r.1")"
	done
	survivors_said "$d" shrink \
		"^train-run: host .*: node ft-b lost (.*); no spare: every node restarts its workers on 2 nodes (round 1; world 4; stopping 2 here)$"
	report_faults "$d/report.json" shrink "[{'round': 0, 'kind': 'lost', 'rank': None, 'node': 1, 'host': 'ft-b',
		'action': 'shrink', 'node_rank': 1, 'nnodes': 2, 'detect_s': [0, 5], 'what': 'its train-run ended without a word'}]"
	report_ranks "$d/report.json" shrink
	pass "node 1 lost under --nnodes 2:3 without a spare: nodes 0 and 2 go on as node ranks 0 and 1 in round 1, each rank once"
}

# Three nodes with --nnodes 3:4: node 1's train-run killed: two nodes would be left, below MIN:
# node 0 stops with the loss verdict, nothing restarted.
t_shrink_below_min() {
	d="$WORK/belowmin"
	launch_dir belowmin
	for n in 0 1 2; do NODES=3 SECS=50 node "$d" $n --nnodes 3:4; done
	await_lines "$d/starts" 6
	kill_node "$d" 1 "below min" || return
	wait "$(cat "$d/pid.0")"
	rc=$?
	wait "$(cat "$d/pid.2")"
	wait "$(cat "$d/pid.1")"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "below min: node 0 exit $rc: $(cat "$d/err.0")"
	for n in 0 2; do
		[ "$(grep -c "train-run: node ft-b lost (.*); resubmit with: sbatch --exclude=ft-b \.\.\.; stopping 2 workers here" "$d/err.$n")" -eq 1 ] ||
			fail "below min: no verdict on node $n: $(cat "$d/err.$n")"
		! grep -q "no spare: every node restarts" "$d/err.$n" || fail "below min: node $n shrank: $(cat "$d/err.$n")"
	done
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;4 0;5 0;" ] || fail "below min: starts $(starts "$d")"
	sleep 0.5
	left=$(pgrep -f "$d/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "below min: $left workers left behind"
	pass "node 1 lost under --nnodes 3:4: two nodes would be left, below MIN: the verdict, nothing restarted"
}

# Two fake GPUs for nodes 0..$2-1 of launch $1: device files that open (regular files), with the
# nvidiactl that tells preflight an NVIDIA driver is there; SLURM_GPUS_ON_NODE=2 names them.
fake_gpus() {
	for n in $(seq 0 $(($2 - 1))); do
		mkdir "$1/dev.$n"
		: >"$1/dev.$n/nvidiactl"
		: >"$1/dev.$n/nvidia0"
		: >"$1/dev.$n/nvidia1"
	done
	export SLURM_GPUS_ON_NODE=2
}

# Rank 3 (node 1) removes its node's GPU 1 and dies in round 0: before round 1 every node checks
# itself again and node 0 judges. With a spare (3 nodes, --spares 1): node 1 is replaced, every
# node says so once, naming the device and the spare; ranks 2 and 3 run on ft-c in round 2, node 1
# ends non-zero; nodes 0 and 2 end 0. Without one: both nodes stop with the verdict, no round 1.
# --preflight=off: round 1 starts on node 1 anyway.
t_preflight_before_restart() {
	d="$WORK/pfspare"
	launch_dir pfspare
	fake_gpus "$d" 3
	for n in 0 1 2; do ACTION=unplug NODES=3 SECS=3 node "$d" $n --spares 1 --max-restarts 1 --report "$d/report.json"; done
	wait "$(cat "$d/pid.0")"
	rc0=$?
	wait "$(cat "$d/pid.1")"
	rc1=$?
	wait "$(cat "$d/pid.2")"
	rc2=$?
	[ $rc0 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc1 -ne 0 ] && [ $rc1 -ne 124 ] ||
		fail "preflight spare: exits $rc0 $rc1 $rc2: $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;0 2;1 0;1 2;2 0;2 2;3 0;3 2;" ] || fail "preflight spare: starts $(starts "$d"): $(cat "$d"/err.*)"
	[ "$(awk '$2 == 2 { print $1, $3 }' "$d/where" | sort | tr '\n' ';')" = "0 ft-a;1 ft-a;2 ft-c;3 ft-c;" ] ||
		fail "preflight spare: round 2 ran $(sort "$d/where" | tr '\n' ';')"
	for n in 0 1 2; do
		[ "$(grep -c "^train-run: host .*: node ft-b lost (failed preflight before round 1: GPU device $d/dev.1/nvidia1 does not open (No such file or directory)); spare node 2 (ft-c) takes its node rank 1: every node restarts its workers (round 2;" "$d/err.$n")" -eq 1 ] ||
			fail "preflight spare: node $n did not name the replacement once: $(cat "$d/err.$n")"
	done
	[ "$(cat "$d/exclude.0" 2>/dev/null)" = ft-b ] || fail "preflight spare: exclude file: $(cat "$d/exclude.0" 2>&1)"
	report_faults "$d/report.json" "preflight spare" "[
		{'round': 0, 'kind': 'crash', 'rank': 3, 'node': 1, 'host': 'ft-b', 'action': 'restart', 'what': 'was killed by SIGKILL'},
		{'round': 1, 'kind': 'preflight', 'rank': None, 'node': 1, 'host': 'ft-b', 'action': 'replace', 'node_rank': 1,
		 'spare_node': 2, 'spare_host': 'ft-c', 'detect_s': [0, 60], 'what': 'failed preflight before round 1: GPU device $d/dev.1/nvidia1'}]"
	report_ranks "$d/report.json" "preflight spare"

	d="$WORK/pfstop"
	launch_dir pfstop
	fake_gpus "$d" 2
	ACTION=unplug SECS=3 both_nodes "$d" --max-restarts 2 --report "$d/report.json"
	[ $rc0 -ne 0 ] && [ $rc0 -ne 124 ] && [ $rc1 -ne 0 ] && [ $rc1 -ne 124 ] ||
		fail "preflight stop: exits $rc0 $rc1: $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;" ] || fail "preflight stop: starts $(starts "$d")"
	for n in 0 1; do
		[ "$(grep -c "^train-run: node ft-b lost (failed preflight before round 1: GPU device $d/dev.1/nvidia1 does not open (No such file or directory)); resubmit with: sbatch --exclude=ft-b \.\.\.; stopping 0 workers here$" "$d/err.$n")" -eq 1 ] ||
			fail "preflight stop: node $n did not give the verdict once: $(cat "$d/err.$n")"
	done
	report_faults "$d/report.json" "preflight stop" "[
		{'round': 0, 'kind': 'crash', 'rank': 3, 'node': 1, 'host': 'ft-b', 'action': 'restart', 'what': 'was killed by SIGKILL'},
		{'round': 1, 'kind': 'preflight', 'rank': None, 'node': 1, 'host': 'ft-b', 'action': 'stop', 'detect_s': [0, 60],
		 'what': 'failed preflight before round 1: GPU device $d/dev.1/nvidia1'}]"

	d="$WORK/pfoff"
	launch_dir pfoff
	fake_gpus "$d" 2
	ACTION=unplug SECS=3 both_nodes "$d" --max-restarts 2 --preflight=off
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "preflight off: exits $rc0 $rc1: $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" ] || fail "preflight off: starts $(starts "$d")"
	unset SLURM_GPUS_ON_NODE
	sleep 0.5
	left=$(pgrep -f "$WORK/pf.*/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "preflight: $left workers left behind"
	pass "a node failing preflight before a restart: replaced by the spare, else the verdict; off: no check"
}

# Rank 3 (node 1) slows its node's network probe and dies in round 0: before round 1 every node
# but node 0 probes node 0 again (its control port) and node 0 judges the bandwidths. Three
# nodes (two measured bandwidths to compare), no spare: node 1 at 150 ms a 1 MiB round (some
# MB/s against loopback's GB/s) fails, every node stops with the verdict once, no worker of
# round 1 starts, node 2's probe passes. At 2000 ms a round node 1's probe fails its bound: said
# once on node 1, not judged, the round starts on every node. --preflight=off: the round starts,
# node 1 probes nothing.
# The three nodes of launch $1 with train-run options $2..., run to their end: node n's exit in
# $1/rc.n.
three_nodes() {
	td=$1
	shift
	for n in 0 1 2; do NODES=3 node "$td" $n "$@"; done
	for n in 0 1 2; do
		wait "$(cat "$td/pid.$n")"
		echo $? >"$td/rc.$n"
	done
}

t_preflight_net_before_restart() {
	d="$WORK/pfnet"
	launch_dir pfnet
	ACTION=slowlink NETDELAY=150 SECS=3 three_nodes "$d" --max-restarts 1
	for n in 0 1 2; do
		rc=$(cat "$d/rc.$n")
		[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "preflight net: node $n exit $rc: $(cat "$d"/err.*)"
		[ "$(grep -c "^train-run: node ft-b lost (failed preflight before round 1: network bandwidth to node 0 [0-9.]* GB/s < [0-9.e-]* x median [0-9.]* GB/s); resubmit with: sbatch --exclude=ft-b \.\.\.; stopping 0 workers here$" "$d/err.$n")" -eq 1 ] ||
			fail "preflight net: node $n did not give the verdict once: $(cat "$d/err.$n")"
	done
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;4 0;5 0;" ] || fail "preflight net: starts $(starts "$d")"
	! grep -q "network probe" "$d"/err.* || fail "preflight net: a probe failed: $(cat "$d"/err.*)"

	d="$WORK/pfnetfail"
	launch_dir pfnetfail
	ACTION=slowlink NETDELAY=2000 SECS=3 three_nodes "$d" --max-restarts 1
	[ "$(cat "$d"/rc.* | tr '\n' ' ')" = "0 0 0 " ] || fail "preflight net fail: exits $(cat "$d"/rc.*): $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;4 0;4 1;5 0;5 1;" ] ||
		fail "preflight net fail: starts $(starts "$d"): $(cat "$d"/err.*)"
	[ "$(grep -c "^train-run: network probe: node 0 (localhost port [0-9]*) hung up or was slower than 1000 ms; the network of this node is not judged before the restart$" "$d/err.1")" -eq 1 ] ||
		fail "preflight net fail: node 1 did not say once that it is not judged: $(cat "$d/err.1")"
	! grep -q "network probe" "$d/err.0" "$d/err.2" || fail "preflight net fail: another node's probe failed: $(cat "$d"/err.*)"

	d="$WORK/pfnetoff"
	launch_dir pfnetoff
	ACTION=slowlink NETDELAY=2000 SECS=3 both_nodes "$d" --max-restarts 1 --preflight=off
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "preflight net off: exits $rc0 $rc1: $(cat "$d"/err.*)"
	[ "$(starts "$d")" = "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" ] || fail "preflight net off: starts $(starts "$d")"
	! grep -q "network probe" "$d"/err.* || fail "preflight net off: probed: $(cat "$d"/err.*)"
	sleep 0.5
	left=$(pgrep -f "$WORK/pfnet.*/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "preflight net: $left workers left behind"
	pass "the network before a restart: a slow link's node stops the job with the verdict; a probe past its bound is not judged; off: none"
}

# Three nodes, the last a spare, node 1's GPU 1 gone before the start (a fake device directory):
# the census gives the spare node rank 1 at once: ranks 2 and 3 start exactly once, in round 0,
# on ft-c with NODE_RANK 1; node 1 starts none, says once that it is excluded and ends 0 with the
# job; every node names node 1, the device and the spare in one line and notes ft-b for
# exclusion. No spare with node 1's worker count, or node 0 failing: every node stops with the
# verdict as without spares, no worker started.
t_spare_replaces_node_failing_preflight() {
	d="$WORK/prestart"
	launch_dir prestart
	fake_gpus "$d" 3
	rm "$d/dev.1/nvidia1"
	for n in 0 1 2; do NODES=3 SECS=3 node "$d" $n --spares 1; done
	for n in 0 1 2; do
		wait "$(cat "$d/pid.$n")"
		rc=$?
		[ $rc -eq 0 ] || fail "prestart: node $n exit $rc: $(cat "$d"/err.*)"
	done
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;" ] || fail "prestart: starts $(starts "$d"): $(cat "$d"/err.*)"
	[ "$(sort "$d/where" | tr '\n' ';')" = "0 0 ft-a 0 4 0;1 0 ft-a 0 4 0;2 0 ft-c 1 4 1;3 0 ft-c 1 4 1;" ] ||
		fail "prestart: ran $(sort "$d/where" | tr '\n' ';')"
	for n in 0 1 2; do
		[ "$(grep -c "^train-run: host .*: node 1 (ft-b) failed preflight: GPU device $d/dev.1/nvidia1 does not open (No such file or directory); spare node 2 (ft-c) takes its node rank 1$" "$d/err.$n")" -eq 1 ] ||
			fail "prestart: node $n did not name the replacement once: $(cat "$d/err.$n")"
		[ "$(cat "$d/exclude.$n" 2>/dev/null)" = ft-b ] || fail "prestart: exclude file of node $n: $(cat "$d/exclude.$n" 2>&1)"
	done
	[ "$(grep -c "^train-run: host .*: node 1 is excluded (it failed preflight): it starts no workers and stands aside until the job ends, then exits 0$" "$d/err.1")" -eq 1 ] ||
		fail "prestart: node 1 did not say once that it is excluded: $(cat "$d/err.1")"
	! grep -q "excluded" "$d/err.0" "$d/err.2" || fail "prestart: another node says it is excluded: $(cat "$d"/err.*)"

	for case in count node0; do
		d="$WORK/prestart-$case"
		launch_dir "prestart-$case"
		fake_gpus "$d" 3
		bad=1 badhost=ft-b
		[ $case = node0 ] && bad=0 badhost=ft-a
		rm "$d/dev.$bad/nvidia1"
		NODES=3 SECS=3 node "$d" 0 --spares 1
		NODES=3 SECS=3 node "$d" 1 --spares 1
		if [ $case = count ]; then
			NODES=3 SECS=3 node "$d" 2 --spares 1 --nproc-per-node 1	# the spare runs 1 worker, node 1 2
		else
			NODES=3 SECS=3 node "$d" 2 --spares 1
		fi
		for n in 0 1 2; do
			wait "$(cat "$d/pid.$n")"
			rc=$?
			[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "prestart $case: node $n exit $rc: $(cat "$d"/err.*)"
			[ "$(grep -c "^train-run: node $bad ($badhost) failed preflight: GPU device $d/dev.$bad/nvidia1 does not open (No such file or directory); resubmit with sbatch --exclude=$badhost$" "$d/err.$n")" -eq 1 ] ||
				fail "prestart $case: node $n did not give the verdict once: $(cat "$d/err.$n")"
		done
		[ ! -e "$d/starts" ] || fail "prestart $case: workers started: $(starts "$d")"
	done
	unset SLURM_GPUS_ON_NODE
	sleep 0.5
	left=$(pgrep -f "$WORK/prestart.*/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "prestart: $left workers left behind"
	pass "a node failing the start preflight: the spare runs its node rank from round 0; no fitting spare, or node 0: the verdict"
}

# Launch $1 of NODES nodes with options $2..., nodes $BAD missing GPU 1 from the start, run to
# its end: every node must end 0. Its lines, starts and where are left for the caller.
start_with_failing() {
	d="$WORK/$1"
	shift
	launch_dir "$(basename "$d")"
	fake_gpus "$d" "$NODES"
	for b in $BAD; do rm "$d/dev.$b/nvidia1"; done
	for n in $(seq 0 $((NODES - 1))); do SECS=3 node "$d" "$n" "$@"; done
	for n in $(seq 0 $((NODES - 1))); do
		wait "$(cat "$d/pid.$n")"
		rc=$?
		[ $rc -eq 0 ] || fail "$(basename "$d"): node $n exit $rc: $(cat "$d"/err.*)"
	done
	unset SLURM_GPUS_ON_NODE
}

# The line on every node of launch $1 exactly once: "train-run: host HOST: $2" (a fixed string).
once_on_every_node() {
	for n in $(seq 0 $((NODES - 1))); do
		[ "$(sed -n 's/^train-run: host [^ ]*: //p' "$1/err.$n" | grep -c -F -x "$2")" -eq 1 ] ||
			fail "$(basename "$1"): node $n did not say once '$2': $(cat "$1/err.$n")"
	done
}

# The nodes that say they stand aside (excluded) in launch $1, and each node's exclude file.
aside_and_excluded() {
	for n in $(seq 0 $((NODES - 1))); do
		grep -c "^train-run: host .*: node $n is excluded (it failed preflight): it starts no workers and stands aside until the job ends, then exits 0$" "$1/err.$n"
	done | tr '\n' ' '
	for n in $(seq 0 $((NODES - 1))); do cat "$1/exclude.$n" 2>/dev/null | tr '\n' ','; echo; done | sort | uniq -c | sed 's/^ *//' | tr '\n' ';'
}

# Five nodes, --spares 2, nodes 1 and 2 failing the start preflight: spare 3 takes node rank 1,
# spare 4 node rank 2, from round 0; one line per swap on every node; both stand aside.
t_spares_replace_failing_nodes() {
	NODES=5 BAD="1 2" start_with_failing prestart2 --spares 2
	d="$WORK/prestart2"
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;4 0;5 0;" ] || fail "prestart2: starts $(starts "$d"): $(cat "$d"/err.*)"
	[ "$(sort "$d/where" | tr '\n' ';')" = "0 0 ft-a 0 6 0;1 0 ft-a 0 6 0;2 0 ft-d 1 6 1;3 0 ft-d 1 6 1;4 0 ft-e 2 6 2;5 0 ft-e 2 6 2;" ] ||
		fail "prestart2: ran $(sort "$d/where" | tr '\n' ';')"
	for b in 1 2; do
		h=$(echo "ft-b ft-c" | cut -d' ' -f$b) s=$(echo "ft-d ft-e" | cut -d' ' -f$b)
		NODES=5 once_on_every_node "$d" "node $b ($h) failed preflight: GPU device $d/dev.$b/nvidia1 does not open (No such file or directory); spare node $((b + 2)) ($s) takes its node rank $b"
	done
	[ "$(grep -c "failed preflight: " "$d"/err.* | cut -d: -f2 | tr '\n' ' ')" = "2 2 2 2 2 " ] ||
		fail "prestart2: not two failure lines on each node: $(cat "$d"/err.*)"
	got=$(NODES=5 aside_and_excluded "$d")
	[ "$got" = "0 1 1 0 0 5 ft-b,ft-c,;" ] || fail "prestart2: aside and exclude files: $got"
	pass "two nodes failing the start preflight, two spares: each replaced from round 0, one line per swap on every node"
}

# Four nodes, --spares 2, node 1 and spare node 2 failing the start preflight: the failing spare
# is set aside (no verdict), spare 3 takes node rank 1; every node ends 0.
t_failing_spare_set_aside() {
	NODES=4 BAD="1 2" start_with_failing prestart-spare --spares 2
	d="$WORK/prestart-spare"
	[ "$(starts "$d")" = "0 0;1 0;2 0;3 0;" ] || fail "prestart-spare: starts $(starts "$d"): $(cat "$d"/err.*)"
	[ "$(sort "$d/where" | tr '\n' ';')" = "0 0 ft-a 0 4 0;1 0 ft-a 0 4 0;2 0 ft-d 1 4 1;3 0 ft-d 1 4 1;" ] ||
		fail "prestart-spare: ran $(sort "$d/where" | tr '\n' ';')"
	NODES=4 once_on_every_node "$d" "spare node 2 (ft-c) failed preflight: GPU device $d/dev.2/nvidia1 does not open (No such file or directory); the job goes on with 1 spare fewer"
	NODES=4 once_on_every_node "$d" "node 1 (ft-b) failed preflight: GPU device $d/dev.1/nvidia1 does not open (No such file or directory); spare node 3 (ft-d) takes its node rank 1"
	! grep -q "resubmit\|stands by" "$d"/err.* || fail "prestart-spare: a verdict or a spare standing by: $(cat "$d"/err.*)"
	got=$(NODES=4 aside_and_excluded "$d")
	[ "$got" = "0 1 1 0 4 ft-b,ft-c,;" ] || fail "prestart-spare: aside and exclude files: $got"
	sleep 0.5
	left=$(pgrep -f "$WORK/prestart-spare/worker.sh" | wc -l)
	[ "$left" -eq 0 ] || fail "prestart-spare: $left workers left behind"
	pass "a spare failing the start preflight is set aside, the other spare replaces the failing node"
}

[ -x "$TRAIN_RUN" ] || { echo "FAIL: $TRAIN_RUN not built"; exit 1; }
command -v pgrep >/dev/null 2>&1 || { echo "SKIP: pgrep not found (procps)"; exit 77; }
# Node 0's workers end after 1 s, node 1's rank 3 fails 2 s in (ACTION=late): node 0, waiting for
# node 1's bye, hears the fault, names it once and ends 1, its outcome file says 1; node 1 writes
# none. Then a launch that succeeds: node 0's outcome file says 0.
t_outcome() {
	d="$WORK/outcome"
	launch_dir outcome
	ACTION=late SECS=1 node "$d" 0 --report "$d/report.json"
	ACTION=late SECS=30 node "$d" 1
	wait "$(cat "$d/pid.0")"
	rc0=$?
	wait "$(cat "$d/pid.1")"
	rc1=$?
	[ $rc0 -eq 1 ] && [ $rc1 -eq 3 ] || fail "outcome: exits $rc0 $rc1, not 1 3: $(cat "$d"/err.*)"
	[ "$(grep -c "train-run: host [^ ]*: rank 3 on host ft-b exited with code 3 after this node's workers ended: the launch failed$" "$d/err.0")" -eq 1 ] ||
		fail "outcome: node 0 did not name the late failure once: $(cat "$d/err.0")"
	[ "$(cat "$d/outcome.0" 2>&1)" = 1 ] || fail "outcome: node 0's outcome file: $(cat "$d/outcome.0" 2>&1)"
	[ ! -e "$d/outcome.1" ] || fail "outcome: node 1 wrote an outcome file: $(cat "$d/outcome.1")"
	report_faults "$d/report.json" outcome "[{'round': 0, 'kind': 'crash', 'rank': 3, 'node': 1, 'host': 'ft-b',
		'action': 'stop', 'what': 'exited with code 3'}]"
	d="$WORK/outcome-ok"
	launch_dir outcome-ok
	SECS=1 both_nodes "$d" --report "$d/report.json"
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "outcome ok: exits $rc0 $rc1: $(cat "$d"/err.*)"
	report_faults "$d/report.json" "outcome ok" "[]"
	[ "$(cat "$d/outcome.0" 2>&1)" = 0 ] || fail "outcome ok: node 0's outcome file: $(cat "$d/outcome.0" 2>&1)"
	[ ! -e "$d/outcome.1" ] || fail "outcome ok: node 1 wrote an outcome file"
	pass "the launch's outcome: node 0's status, 1 for a node failing after node 0's workers ended"
}

for t in ${FT_TESTS:-t_fault_restarts_every_node t_victim_waits_for_the_culprit t_restarts_used_up t_node_lost t_suspend_is_no_loss t_job_stragglers t_spare_replaces_lost_node t_spare_lost_then_no_spare t_shrink_on_lost_node t_shrink_below_min t_preflight_before_restart t_preflight_net_before_restart t_spare_replaces_node_failing_preflight t_outcome t_spares_replace_failing_nodes t_failing_spare_set_aside}; do
	f0=$failures
	$t
done
[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
[ $skips -eq 0 ] || { echo "$skips part(s) skipped: see SKIP lines"; exit 77; }
