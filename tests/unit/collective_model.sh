#!/bin/sh
# SPDX-License-Identifier: MIT
# collective_model.sh — the alpha-beta model's code (bench/collective_model.py, issue #20), no
# timing asserted: on a synthetic fixture (known alpha 40 us, beta 0.8 ns/B, 2 cores) the shared-CPU
# fit gives them back within 2%, medians drop an outlier, points below 4p bytes are left out; the
# closed-form crossover matches a scan of the two cost formulas; bad input is refused with a
# message; and a 2-rank TCP run of `bench/collective_model.sh --quick` produces a fit.
set -eu
src=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(pwd)
model=$src/bench/collective_model.py
fx=$src/tests/unit/collective_model_fixture.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

# fitted NAME: "ALPHA_US BETA_NS" of the fit line NAME of --fit on the fixture
python3 "$model" --fit "$fx" >"$tmp/fit" || fail "--fit on the fixture failed"
awk '$1 == "shared-cpu" { split($2, a, "="); split($3, b, "="); split($4, c, "=");
	ok = a[2] > 40 * 0.98 && a[2] < 40 * 1.02 && b[2] > 0.8 * 0.98 && b[2] < 0.8 * 1.02 && c[2] == 35
	exit ok ? 0 : 1 }' "$tmp/fit" || fail "shared-cpu fit is not alpha 40 us, beta 0.8 ns/B (35 points): $(cat "$tmp/fit")"
# The plain ring fit cannot know the CPUs are shared: its beta lies between p=2's and p=8's.
awk '$1 == "ring" { split($3, b, "="); exit b[2] > 0.8 * 1.05 && b[2] < 0.8 * 4 ? 0 : 1 }' "$tmp/fit" ||
	fail "plain ring fit's beta outside (0.84, 3.2) ns/B: $(cat "$tmp/fit")"

# Crossover: the closed form against a scan of ring() and rdoubling() over sizes.
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$src/bench python3 - <<'PY' || fail "crossover differs from a scan of the cost formulas"
import math, collective_model as m
for a, b in ((40e-6, 0.8e-9), (3e-6, 8 / 200e9)):
    assert m.crossover(2, a, b) == math.inf
    for p in (4, 8, 64, 512, 4096):
        x = m.crossover(p, a, b)
        lo, hi = x * 0.999, x * 1.001
        assert m.rdoubling(p, lo, a, b) < m.ring(p, lo, a, b), (p, x)
        assert m.rdoubling(p, hi, a, b) > m.ring(p, hi, a, b), (p, x)
PY

# Bad input: a wrong result, no cores line, a malformed row, a missing file; each names it.
refused() {
	want=$1 file=$2
	rc=0
	python3 "$model" "$file" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] && grep -qF -- "$want" "$tmp/err" || fail "$file: rc $rc, stderr '$(cat "$tmp/err")' (want: $want)"
}
sed 's/^\(tcp 4 4 1024 [0-9.]*\) 0$/\1 3/' "$fx" >"$tmp/wrong"
refused "tcp 4 ranks 1024 bytes had 3 wrong elements" "$tmp/wrong"
grep -v '^# cores' "$fx" >"$tmp/nocores"
refused "has no '# cores: C' line" "$tmp/nocores"
{ cat "$fx"; echo "tcp 2 2 lots 5 0"; } >"$tmp/bad"
refused "not 'ALGO P L BYTES TIME_US WRONG': tcp 2 2 lots 5 0" "$tmp/bad"
refused "cannot read $tmp/none" "$tmp/none"

# End to end over loopback: 2 ranks, 4 B..64 KiB; only that a fit comes out.
[ -x "$build/trainrt-bench" ] || fail "no $build/trainrt-bench (build it first)"
TRAINRT_BENCH=$build/trainrt-bench MODEL=$model sh "$src/bench/collective_model.sh" --quick "$tmp/quick" >"$tmp/report" 2>&1 ||
	fail "collective_model.sh --quick failed: $(tail -5 "$tmp/report")"
grep -q '^## Fit 1: TCP ring' "$tmp/report" && [ "$(grep -c '^tcp 2 2 ' "$tmp/quick")" = 8 ] ||
	fail "--quick gave no fit of 8 sizes: $(head -20 "$tmp/report")"
echo "PASS: fixture fit, crossover, bad input, 2-rank run"
