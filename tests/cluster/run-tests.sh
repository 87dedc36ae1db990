#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-tests.sh — runs the cluster integration tests (tests/cluster/t_*.sh) against a running test
# cluster (tests/cluster/cluster.sh up) and prints one closing line "N passed, N failed, N skipped, N known failures".
# A test that exits 77 (lib.sh's skip) is skipped, with its reason printed; never counted as passed.
# usage: run-tests.sh [PATTERN]   (only tests whose name contains PATTERN)
#        TT_TESTS_EXCLUDE=TEXT: not the tests whose name contains TEXT
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# A job with a private /tmp (job_container/tmpfs) cannot see a checkout under /tmp: the tests then
# run from the checkout's view outside /tmp (cluster.sh path), and so do the paths they are given.
if [ -z "${TT_RUNTESTS_IN_VIEW:-}" ]; then
	view_of() { # PATH: where every job sees PATH (itself unless it lies under a shared /tmp dir)
		case $1 in /tmp/?*) [ -d "$1" ] && "$here/cluster.sh" path "$1" && return ;; esac
		echo "$1"
	}
	src=$(cd "$here/../.." && pwd -P)
	view=$(view_of "$src")
	if [ "$view" != "$src" ]; then
		new_path=""
		IFS=: read -r -a entries <<<"$PATH"
		for entry in "${entries[@]}"; do new_path=${new_path:+$new_path:}$(view_of "$entry"); done
		PATH=$new_path
		[ -z "${TT_BUILDDIR:-}" ] || TT_BUILDDIR=$(view_of "$TT_BUILDDIR")
		[ -z "${TT_TEMPLATES:-}" ] || TT_TEMPLATES=$(view_of "$TT_TEMPLATES")
		# libtool's wrappers of the build tree's programs name its .libs by the path under /tmp.
		[ ! -d "$view/.libs" ] || LD_LIBRARY_PATH=$view/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		echo "run-tests: $src lies under /tmp: running from its view $view (jobs with a private /tmp see it there)"
		export PATH TT_RUNTESTS_IN_VIEW=1 LD_LIBRARY_PATH
		[ -z "${TT_BUILDDIR:-}" ] || export TT_BUILDDIR
		[ -z "${TT_TEMPLATES:-}" ] || export TT_TEMPLATES
		exec "$view/tests/cluster/run-tests.sh" "$@"
	fi
fi
TT_SRCDIR=$(cd "$here/../.." && pwd)
TT_BUILDDIR=${TT_BUILDDIR:-$TT_SRCDIR}
TT_CLUSTER_DIR=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}
TT_TEST_TIMEOUT=${TT_TEST_TIMEOUT:-180}
export TT_SRCDIR TT_BUILDDIR TT_CLUSTER_DIR
# SLURM_CONF, and PATH when the cluster runs a Slurm built under a prefix (cluster.sh up --slurm).
eval "$("$here/cluster.sh" env)"
pattern=${1:-}

"$here/cluster.sh" status >/dev/null 2>&1 || {
	echo "run-tests: the test cluster is not up: run tests/cluster/cluster.sh up first" >&2
	echo "0 passed, 1 failed"
	exit 1
}

# Every job a test submits is named ttest* (input variables of sbatch/srun; tests that pass -J use
# the prefix too), so the runner cleans up after a test without touching anyone else's jobs.
export SBATCH_JOB_NAME=ttest SLURM_JOB_NAME=ttest SALLOC_JOB_NAME=ttest
our_jobs() { squeue -h -o '%i %j' 2>/dev/null | awk '$2 ~ /^ttest/ {print $1}'; }

TT_JOBDIR=$TT_CLUSTER_DIR/jobs/run-$$
mkdir -p "$TT_JOBDIR"
chmod 1777 "$TT_CLUSTER_DIR/jobs" "$TT_JOBDIR"
export TT_JOBDIR

# What a test may change on the running cluster, restored before every test rather than only by
# the test's own EXIT trap (which timeout's SIGKILL skips): the plugstack.conf line (plugin
# arguments) and the CPUs each node's slurmd, hence every new step, may run on.
plugstack=$TT_CLUSTER_DIR/etc/plugstack.conf
cp "$plugstack" "$TT_JOBDIR/plugstack.conf.orig"
slurmd_cpus() { # PIDFILE: the CPU list slurmd runs on now
	taskset -pc "$(cat "$1")" 2>/dev/null | sed 's/.*: //'
}
for f in "$TT_CLUSTER_DIR"/run/slurmd-*.pid; do
	echo "$(basename "$f") $(slurmd_cpus "$f")"
done >"$TT_JOBDIR/slurmd-cpus.orig"
restore_cluster_state() {
	if ! cmp -s "$plugstack" "$TT_JOBDIR/plugstack.conf.orig"; then
		echo "run-tests: restoring plugstack.conf (a test left: $(cat "$plugstack"))"
		cp "$TT_JOBDIR/plugstack.conf.orig" "$plugstack.restore" && mv "$plugstack.restore" "$plugstack"
	fi
	local pidfile cpus
	while read -r pidfile cpus; do
		pidfile=$TT_CLUSTER_DIR/run/$pidfile
		[ "$(slurmd_cpus "$pidfile")" = "$cpus" ] && continue
		echo "run-tests: restoring the CPUs of $(basename "$pidfile" .pid) to $cpus"
		taskset -a -pc "$cpus" "$(cat "$pidfile")" >/dev/null
	done <"$TT_JOBDIR/slurmd-cpus.orig"
}

# shellcheck source=tests/cluster/lib.sh
. "$here/lib.sh"
for f in "$here"/t_*.sh; do
	# shellcheck disable=SC1090 # the t_*.sh files are found at run time; each names shell=bash
	. "$f"
done

# Tests named test_nN_* (test_n4_*, test_n8_*) need N nodes; on a smaller cluster they are left
# out (and counted).
nodes=$(sinfo -h -N -o %N 2>/dev/null | sort -u | wc -l)
passed=0 failed=0 skipped=0 known=0 left_out=0 failures=() skips=() knowns=()
for t in $(declare -F | awk '{print $3}' | grep '^test_'); do
	[ -z "$pattern" ] || [[ $t == *"$pattern"* ]] || continue
	[ -z "${TT_TESTS_EXCLUDE:-}" ] || [[ $t != *"$TT_TESTS_EXCLUDE"* ]] || continue
	if [[ $t =~ ^test_n([0-9]+)_ ]] && [ "$nodes" -lt "${BASH_REMATCH[1]}" ]; then
		left_out=$((left_out + 1))
		continue
	fi
	restore_cluster_state
	start=$SECONDS
	log=$TT_JOBDIR/$t.log
	mkdir -p "$TT_JOBDIR/$t"
	# Each test runs in its own bash under timeout, so a hung test is killed, not waited for.
	# A test whose work scales with the machine's speed may name its own limit: timeout_<test>=S.
	limit_var=timeout_$t
	limit=${!limit_var:-$TT_TEST_TIMEOUT}
	# A test of a behaviour not built yet names the issue: known_failure_<test>="WHY (#N)". It
	# runs; failing, it is counted as a known failure (never as passed); passing, it fails, so the
	# mark is removed once the behaviour exists.
	known_var=known_failure_$t
	known_why=${!known_var:-}
	timeout -k 5 "$limit" bash -c '
		set -e
		. "$1/lib.sh"
		for f in "$1"/t_*.sh; do . "$f"; done
		cd "$2"
		"$3"' run-test "$here" "$TT_JOBDIR/$t" "$t" >"$log" 2>&1
	rc=$?
	[ $rc -ne 124 ] || echo "timed out after ${limit}s" >>"$log"
	if [ $rc -eq 0 ] && [ -n "$known_why" ]; then
		failed=$((failed + 1))
		failures+=("$t")
		echo "FAIL $t ($((SECONDS - start))s): passes, but is marked as a known failure ($known_why): remove $known_var"
	elif [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "PASS $t ($((SECONDS - start))s)"
	elif [ $rc -ne 77 ] && [ -n "$known_why" ]; then
		known=$((known + 1))
		knowns+=("$t")
		echo "KNOWN FAILURE $t ($((SECONDS - start))s, exit $rc): $known_why"
		sed 's/^/    /' "$log" | tail -n 8
	elif [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
		skips+=("$t")
		echo "SKIP $t: $(sed -n 's/^SKIP: //p' "$log" | tail -n 1)"
	else
		failed=$((failed + 1))
		failures+=("$t")
		echo "FAIL $t ($((SECONDS - start))s, exit $rc)"
		sed 's/^/    /' "$log" | tail -n 30
	fi
	# A test must not leave jobs behind for the next one.
	jobs_left=$(our_jobs)
	[ -z "$jobs_left" ] || scancel $jobs_left 2>/dev/null
	for _ in $(seq 1 40); do [ -z "$(our_jobs)" ] && break; sleep 0.25; done
done
restore_cluster_state
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
[ ${#skips[@]} -eq 0 ] || echo "skipped: ${skips[*]}"
[ ${#knowns[@]} -eq 0 ] || echo "known failures: ${knowns[*]}"
note="$nodes nodes"
[ "$left_out" -eq 0 ] || note="$note; $left_out more need more nodes and run on the 4- or 8-node cluster"
echo "cluster: $passed passed, $failed failed, $skipped skipped, $known known failures ($note)"
[ "$failed" -eq 0 ]
