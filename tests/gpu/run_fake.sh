#!/bin/sh
# SPDX-License-Identifier: MIT
# run_fake.sh — tests/gpu/run.sh on a fake device (tests/gpu/fake-device.sh as nvidia-smi,
# compute-sanitizer, ldd, python3 and the bundle's programs): a healthy machine passes every step
# (NCCL found through the PyTorch fallback); failing, skipped and hanging steps are each reported
# in the table and results.json while the other steps still run; the exit status is 1 exactly
# when a step failed; a hung step is killed at its timeout with its ranks.
set -eu
src=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$tmp/out/table.txt" ] && cat "$tmp/out/table.txt" >&2
	exit 1
}
mkdir -p "$tmp/path" "$tmp/bundle/bin" "$tmp/bundle/lib" "$tmp/state/site-packages/nvidia/nccl/lib"
: >"$tmp/state/site-packages/nvidia/nccl/lib/libnccl.so.2"
for p in nvidia-smi compute-sanitizer ldd python3; do ln -s "$src/tests/gpu/fake-device.sh" "$tmp/path/$p"; done
for p in mlp_check nccl_check train-mlp trainrt-bench train-topo; do ln -s "$src/tests/gpu/fake-device.sh" "$tmp/bundle/bin/$p"; done
mkdir -p "$tmp/cuda/lib64" # CUDA's folders without NCCL, as on the lent machines
export FAKE_DIR="$tmp/state" PATH="$tmp/path:$PATH" CUDA_HOME="$tmp/cuda"
unset OUT FAKE_FAIL FAKE_HANG FAKE_ACC FAKE_BUSBW FAKE_SANITIZER FAKE_NO_NCCL FAKE_RESUME_DIFFERS FAKE_GAP FAKE_BYTES TT_GPU_TIMEOUT || true

# gpu_check [NAME=VALUE...]: run.sh in that environment (steps $ONLY when set); exit status in rc.
ONLY=""
gpu_check() {
	rm -rf "$tmp/out"
	rc=0
	env "$@" sh "$src/tests/gpu/run.sh" --bundle "$tmp/bundle" --out "$tmp/out" ${ONLY:+--only "$ONLY"} \
		>"$tmp/stdout" 2>&1 || rc=$?
}
row() { grep -q "^$1 *$2 " "$tmp/out/table.txt" || fail "table has no '$1 $2' row"; }

# 1. A healthy machine: every step passes; the preflight found NCCL in the PyTorch environment.
gpu_check
[ $rc = 0 ] || fail "healthy run exited $rc: $(tail -n 5 "$tmp/stdout")"
steps=$(sh "$src/tests/gpu/run.sh" --list | wc -l)
[ "$(grep -c '^PASS' "$tmp/out/table.txt")" = "$steps" ] || fail "not all $steps steps passed"
grep -q "^gpu-check: $steps passed, 0 failed, 0 skipped$" "$tmp/stdout" || fail "closing line"
grep -q "NCCL from $tmp/state/site-packages/nvidia/nccl/lib/libnccl.so.2" "$tmp/out/logs/preflight.detail" ||
	fail "preflight did not report NCCL from the PyTorch environment: $(cat "$tmp/out/logs/preflight.detail")"
grep -q '"step": "mfu", "status": "PASS", .*MFU 50.6% of 989' "$tmp/out/results.json" ||
	fail "MFU (20000 samples/s x 2.5e10 FLOP on an H200): $(grep mfu "$tmp/out/results.json")"
grep -q 'rank 0 failed [0-9]* s after rank 1.s kill -9' "$tmp/out/logs/dead_peer.detail" || fail "dead peer detail"
[ "$(grep -c '"status": "PASS"' "$tmp/out/results.json")" = "$steps" ] || fail "results.json"
tar -tzf "$tmp/out/gpu-logs.tar.gz" | grep -q 'logs/nccl_4.log' || fail "logs not packed"

# 2. Failures and skips are reported, and the steps after them still run.
gpu_check FAKE_FAIL=mlp_check FAKE_ACC=0.5 FAKE_BUSBW=0 FAKE_SANITIZER=unsupported FAKE_RESUME_DIFFERS=1 FAKE_GAP=1
[ $rc = 1 ] || fail "a run with failures exited $rc"
row FAIL mlp_check
row SKIP memcheck
row SKIP memcheck_large
row FAIL accuracy
row FAIL two_ranks
row FAIL resume
row FAIL bench
row PASS nccl_4
row PASS mfu
grep -q 'test accuracy 0.5 < 0.88' "$tmp/out/logs/accuracy.detail" || fail "accuracy detail"
grep -q 'GPU math differs from the CPU reference (exit 1): mlp_check: fake failure' "$tmp/out/logs/mlp_check.detail" ||
	fail "mlp_check detail: $(cat "$tmp/out/logs/mlp_check.detail")"
grep -q 'resumed weights differ: crc32 deadbeef vs uninterrupted 1234abcd' "$tmp/out/logs/resume.detail" || fail "resume detail"
grep -q 'max loss gap 2.00e-01' "$tmp/out/logs/two_ranks.detail" || fail "two_ranks detail: $(cat "$tmp/out/logs/two_ranks.detail")"
grep -q '4 with busbw <= 0' "$tmp/out/logs/bench.detail" || fail "bench detail"
grep -q "^gpu-check: $((steps - 7)) passed, 5 failed, 2 skipped$" "$tmp/stdout" || fail "closing line: $(tail -n1 "$tmp/stdout")"

# 3. A hung program is killed at the step's timeout, with its ranks; the next step runs.
start=$(date +%s)
ONLY=nccl_4,mfu gpu_check FAKE_HANG=nccl_check TT_GPU_TIMEOUT=3
[ $rc = 1 ] || fail "a run with a hung step exited $rc"
row FAIL nccl_4
row PASS mfu
grep -q '"step": "nccl_4", "status": "FAIL", .*"detail": "timed out after 3 s' "$tmp/out/results.json" || fail "timeout detail"
[ $(($(date +%s) - start)) -lt 30 ] || fail "the hung step was not stopped at its timeout"
! pgrep -f "sleep 100000" >/dev/null || fail "the hung ranks were left running"

# 4. No NCCL anywhere: the preflight fails and names the library.
ONLY=mlp_check gpu_check FAKE_NO_NCCL=1
[ $rc = 1 ] || fail "a run without NCCL exited $rc"
row FAIL preflight
grep -q 'libraries not found .*: libnccl.so.2' "$tmp/out/logs/preflight.detail" || fail "preflight detail: $(cat "$tmp/out/logs/preflight.detail")"
# 5. A summary that counts no traffic for 2 ranks fails the two-rank step.
ONLY=two_ranks gpu_check FAKE_BYTES=0
[ $rc = 1 ] || fail "a run whose 2 ranks sent nothing exited $rc"
row FAIL two_ranks
grep -q '2 ranks sent 0 bytes per step, want 3194960' "$tmp/out/logs/two_ranks.detail" ||
	fail "two_ranks bytes detail: $(cat "$tmp/out/logs/two_ranks.detail")"
echo "run.sh on a fake device: all checks passed"
