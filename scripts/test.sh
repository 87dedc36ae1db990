#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test.sh — the README's test command: installs dependencies, builds, runs the CUnit unit tests
# (make check), a short pass of every libFuzzer harness (make fuzz-smoke), brings up the embedded Slurm test cluster with the freshly built plugin, runs the
# cluster integration tests on 2 nodes, then the 4-node ones on 4, and brings the cluster down
# again. Exit 0 only if everything passed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh

echo "== unit tests (make check)"
unit_rc=0
make -j"$(nproc)" check >make-check.out 2>&1 || unit_rc=$?
# automake's harness keeps each program's output in its .log: show CUnit's own summaries.
for log in tests/unit/test_*.log; do
	echo "--- ${log%.log}"
	sed -n '/^Run Summary/,/^Elapsed/p' "$log"
done
grep -E '^(# (TOTAL|PASS|SKIP|FAIL|ERROR)|(PASS|SKIP|FAIL|ERROR):)' make-check.out || true
# A skipped program says why on its last SKIP line.
for log in $(grep -l '^SKIP ' tests/*/*.log 2>/dev/null); do
	echo "skipped ${log%.log}: $(grep '^SKIP:' "$log" | tail -n 1)"
done
if [ $unit_rc -ne 0 ]; then
	echo "unit tests failed; details in the .log files above" >&2
	tail -n 40 make-check.out >&2
	exit 1
fi

echo "== fuzz smoke (make fuzz-smoke: every libFuzzer harness for a few seconds)"
fuzz_rc=0
make -j"$(nproc)" fuzz-smoke >make-fuzz.out 2>&1 || fuzz_rc=$?
grep -E '^(fuzz |    )' make-fuzz.out || true
if [ $fuzz_rc -ne 0 ]; then
	echo "fuzz smoke failed: crash inputs in fuzz-crashes/, logs in fuzz-build/src/fuzz-work/logs/" >&2
	tail -n 20 make-fuzz.out >&2
fi

echo "== cluster tests"
export PATH="$top:$top/sbatch-templates:$PATH"
trap 'tests/cluster/cluster.sh down >/dev/null 2>&1 || true' EXIT
tests/cluster/cluster.sh up --nodes 2 --plugin "$top/.libs/train_topo.so" --share "$top"
cluster_rc=0
tests/cluster/run-tests.sh || cluster_rc=1
# The few tests that need 4 nodes (test_n4_*) run on the cluster brought up again with 4, and
# without MpiParams=ports, so steps get MASTER_PORT from the plugin's formula as on most sites.
echo "== cluster tests on 4 nodes, no reserved ports"
tests/cluster/cluster.sh down
tests/cluster/cluster.sh up --nodes 4 --no-resv-ports --plugin "$top/.libs/train_topo.so" --share "$top"
tests/cluster/run-tests.sh n4_ || cluster_rc=1
exit $((cluster_rc || fuzz_rc))
