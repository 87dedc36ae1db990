#!/bin/sh
# SPDX-License-Identifier: MIT
# bounded.sh — make check's runner for every test (automake's LOG_COMPILER and SH_LOG_COMPILER):
# runs TEST [ARGS] under a time limit, so no test can stall make check, distcheck or CI. The limit
# is TT_TEST_LIMIT seconds (default 600), or the test script's own line `# tt-test-limit: S` among
# its first 40 lines. Past it the test's process group gets SIGTERM, 10 s later SIGKILL, and the
# test FAILs (exit 1) with one line naming it and its limit. The test's own exit status passes
# through otherwise (77: skipped, 99: hard error).
# usage: bounded.sh TEST [ARGS...]
test=${1:?usage: bounded.sh TEST [ARGS...]}
limit=${TT_TEST_LIMIT:-600}
if [ -f "$test" ] && own=$(head -n 40 "$test" 2>/dev/null | grep -a -m1 '^# tt-test-limit: [0-9][0-9]*$'); then
	limit=${own##* }
fi
start=$(date +%s)
timeout -k 10 "$limit" "$@"
rc=$?
elapsed=$(($(date +%s) - start))
# 124: timeout's TERM ended it; 137 at the limit: its KILL did (137 before it: killed by others).
if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ "$elapsed" -ge "$limit" ]; }; then
	echo "FAIL: $test ran past its limit of $limit s (TT_TEST_LIMIT, or '# tt-test-limit: S' in the script) and was stopped"
	exit 1
fi
echo "bounded.sh: $test took $elapsed s of its $limit s limit (exit $rc)"
exit $rc
