# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# lib.sh — helpers for the cluster integration tests (sourced by run-tests.sh).
# A test is a shell function named test_* in a t_*.sh file; it fails by returning non-zero or
# calling fail. Jobs write into $TT_JOBDIR, which every node sees (node /tmp is private).

fail() { echo "FAIL: $*" >&2; return 1; }

# skip WHY: ends the test as skipped (exit 77, as automake counts it); run-tests.sh prints WHY.
# Under the runner's `set -e` the non-zero return ends the test at once.
skip() { echo "SKIP: $*"; return 77; }

# Device directories for the preflight's GPU check (TRAINRT_PREFLIGHT_TEST_DEV_DIR), in the job
# directory: dev-ok holds plain files that open, dev-gres links to the cluster's GRES device
# files (gres.conf File=), device nodes of major 195 that fail to open without an NVIDIA driver
# (ENXIO). Both have the nvidiactl that tells the check a driver is there.
preflight_dev_dirs() {
	local i
	rm -rf dev-ok dev-gres
	mkdir -p dev-ok dev-gres
	: >dev-ok/nvidiactl
	: >dev-gres/nvidiactl
	for i in 0 1 2 3 4 5 6 7; do
		: >"dev-ok/nvidia$i"
		ln -sf "$TT_CLUSTER_DIR/dev/nvidia$i" "dev-gres/nvidia$i"
	done
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	[ "$2" = "$3" ] || { echo "FAIL: $1: expected '$2', got '$3'" >&2; return 1; }
}

# expect_match WHAT REGEX TEXT
expect_match() {
	[[ $3 =~ $2 ]] || { echo "FAIL: $1: '$3' does not match /$2/" >&2; return 1; }
}

# job_wait JOBID [TIMEOUT]: waits until the job left the queue; prints its final state.
job_wait() {
	local id=$1 timeout=${2:-120} deadline st
	deadline=$((SECONDS + timeout))
	while [ $SECONDS -lt $deadline ]; do
		st=$(squeue -h -j "$id" -o %t 2>/dev/null || true)
		[ -n "$st" ] || break
		sleep 0.5
	done
	if [ -n "${st:-}" ]; then
		scancel "$id" 2>/dev/null || true
		echo "TIMEOUT"
		return 1
	fi
	scontrol show job "$id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

# job_wait_running JOBID [TIMEOUT]: waits until every step of the job started a task.
job_wait_state() {
	local id=$1 want=$2 timeout=${3:-60} deadline
	deadline=$((SECONDS + timeout))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(squeue -h -j "$id" -o %t 2>/dev/null)" = "$want" ] && return 0
		sleep 0.3
	done
	return 1
}

# requeue_wait ID TIMEOUT: waits until job ID was requeued once (Restarts >= 1), it ended, or
# TIMEOUT seconds passed; echoes its restart count. Whether the requeued job is pending or already
# running again does not matter: the requeue is the event (a wait for PD can miss its window).
requeue_wait() {
	local id=$1 deadline=$((SECONDS + $2)) restarts=0
	while [ $SECONDS -lt $deadline ]; do
		restarts=$(scontrol show job "$id" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
		[ "${restarts:-0}" -ge 1 ] && break
		[ -n "$(squeue -h -j "$id")" ] || break
		sleep 0.5
	done
	echo "${restarts:-0}"
}

# sbatch_wait OUTFILE SBATCH-ARGS... : submits, waits, echoes the output file; non-zero on failure.
sbatch_wait() {
	local out=$1 id state
	shift
	id=$(sbatch --parsable --output="$out" "$@") || return 1
	state=$(job_wait "$id") || { echo "job $id timed out" >&2; cat "$out" >&2 2>/dev/null; return 1; }
	if [ "$state" != COMPLETED ]; then
		echo "job $id ended $state; output:" >&2
		cat "$out" >&2 2>/dev/null
		return 1
	fi
}

# deliveries GLOB: "N" when every file matching GLOB holds N lines, else the counts seen ("1 2");
# "none" when no file matches. The signal tests' trainers append one line per delivery.
deliveries() {
	local f counts=""
	for f in $(compgen -G "$1"); do
		counts="$counts $(wc -l <"$f")"
	done
	counts=$(tr ' ' '\n' <<<"$counts" | sed '/^$/d' | sort -u | paste -sd' ')
	echo "${counts:-none}"
}
