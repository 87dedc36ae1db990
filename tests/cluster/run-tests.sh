#!/usr/bin/env bash
# run-tests.sh — runs the cluster integration tests (tests/cluster/t_*.sh) against a running test
# cluster (tests/cluster/cluster.sh up) and prints one closing line "N passed, N failed".
# usage: run-tests.sh [PATTERN]   (only tests whose name contains PATTERN)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
TT_SRCDIR=$(cd "$here/../.." && pwd)
TT_BUILDDIR=${TT_BUILDDIR:-$TT_SRCDIR}
TT_CLUSTER_DIR=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}
TT_TEST_TIMEOUT=${TT_TEST_TIMEOUT:-180}
export TT_SRCDIR TT_BUILDDIR TT_CLUSTER_DIR
export SLURM_CONF=$TT_CLUSTER_DIR/etc/slurm.conf
pattern=${1:-}

"$here/cluster.sh" status >/dev/null 2>&1 || {
	echo "run-tests: the test cluster is not up: run tests/cluster/cluster.sh up first" >&2
	echo "0 passed, 1 failed"
	exit 1
}

TT_JOBDIR=$TT_CLUSTER_DIR/jobs/run-$$
mkdir -p "$TT_JOBDIR"
chmod 1777 "$TT_CLUSTER_DIR/jobs" "$TT_JOBDIR"
export TT_JOBDIR

# shellcheck source=tests/cluster/lib.sh
. "$here/lib.sh"
for f in "$here"/t_*.sh; do
	# shellcheck disable=SC1090
	. "$f"
done

passed=0 failed=0 failures=()
for t in $(declare -F | awk '{print $3}' | grep '^test_'); do
	[ -z "$pattern" ] || [[ $t == *"$pattern"* ]] || continue
	start=$SECONDS
	log=$TT_JOBDIR/$t.log
	( set -e; mkdir -p "$TT_JOBDIR/$t"; cd "$TT_JOBDIR/$t"; "$t" ) >"$log" 2>&1 &
	pid=$!
	( sleep "$TT_TEST_TIMEOUT"; kill -TERM "$pid" 2>/dev/null ) &
	watchdog=$!
	wait "$pid"
	rc=$?
	kill "$watchdog" 2>/dev/null
	wait "$watchdog" 2>/dev/null
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "PASS $t ($((SECONDS - start))s)"
	else
		failed=$((failed + 1))
		failures+=("$t")
		echo "FAIL $t ($((SECONDS - start))s, exit $rc)"
		sed 's/^/    /' "$log" | tail -n 30
	fi
	# A test must not leave jobs behind for the next one.
	scancel --user="$(id -un)" 2>/dev/null
	for _ in $(seq 1 40); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.25; done
done
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "cluster: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
