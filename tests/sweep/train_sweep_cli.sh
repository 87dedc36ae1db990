#!/bin/sh
# SPDX-License-Identifier: MIT
# train_sweep_cli.sh — train-sweep and sbatch-templates/sweep.sh end to end on this machine,
# without Slurm: a stand-in srun runs the step's command after "--" (train-mlp itself, one rank),
# tiny synthetic points train in well under a second each.
set -eu
src=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
mkdir "$tmp/bin"
cat >"$tmp/bin/srun" <<'SRUN'
#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
SRUN
chmod +x "$tmp/bin/srun"
PATH=$tmp/bin:$build:$PATH
export PATH
cd "$tmp"

# The grid: size, points, range errors, file errors, usage.
[ "$(train-sweep size "$src/sbatch-templates/example.sweep")" = 0-5 ] || fail "size of example.sweep"
[ "$(train-sweep point "$src/sbatch-templates/example.sweep" 3)" = "--lr 3e-3 --batch 128" ] || fail "point 3"
[ "$(train-sweep point --params "$src/sbatch-templates/example.sweep" 4 | xargs)" = "lr=1e-2 batch=64" ] ||
	fail "point 4's params"
rc=0
train-sweep point "$src/sbatch-templates/example.sweep" 6 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q 'train-sweep: point index 6 is outside the grid of 6 points (0-5)' err.txt ||
	fail "point 6 (rc $rc): $(cat err.txt)"
printf 'lr = 1e-3\nbatch 64\n' >bad.sweep
rc=0
train-sweep size bad.sweep 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q "^train-sweep: bad.sweep: line 2: expected 'option = value" err.txt ||
	fail "bad grid (rc $rc): $(cat err.txt)"
# A grid train-mlp would refuse fails at once, naming the key and what is valid; another
# program's grid is checked for syntax only, and train-sweep says so.
printf 'lr = 1e-3\nbogusopt = 1, 2\n' >unknown.sweep
printf 'lr = 1e-3, abc\n' >badvalue.sweep
rc=0
train-sweep size unknown.sweep >out.txt 2>err.txt || rc=$?
[ $rc = 2 ] && [ ! -s out.txt ] && [ "$(wc -l <err.txt)" = 1 ] &&
	grep -q "^train-sweep: unknown.sweep: 'bogusopt' is not a train-mlp option; valid keys: layers, data, .*lr" err.txt ||
	fail "unknown option (rc $rc): $(cat out.txt err.txt)"
rc=0
train-sweep size badvalue.sweep >out.txt 2>err.txt || rc=$?
[ $rc = 2 ] && [ ! -s out.txt ] && [ "$(cat err.txt)" = "train-sweep: badvalue.sweep: lr = abc: --lr 'abc': want a number >= 0" ] ||
	fail "bad value (rc $rc): $(cat out.txt err.txt)"
rc=0
train-sweep point badvalue.sweep 0 >out.txt 2>err.txt || rc=$?
[ $rc = 2 ] && [ ! -s out.txt ] || fail "point of a bad grid (rc $rc): $(cat out.txt err.txt)"
[ "$(train-sweep size --program python3 unknown.sweep 2>err.txt)" = 0-1 ] &&
	grep -q '^train-sweep: python3 is not train-mlp: checked the syntax of unknown.sweep only' err.txt ||
	fail "another program's grid: $(cat err.txt)"
[ "$(train-sweep point --program ./train.py unknown.sweep 1 2>/dev/null)" = "--lr 1e-3 --bogusopt 2" ] ||
	fail "another program's point"
rc=0
train-sweep frobnicate 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "usage error exit $rc"
rc=0
train-sweep report no-such-dir 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q "sweep directory 'no-such-dir' does not exist" err.txt || fail "report of a missing dir"

mkdir not-a-sweep
rc=0
train-sweep report not-a-sweep 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q "not-a-sweep has no grid.sweep" err.txt || fail "report of a directory without a grid"

# sweep.sh outside an array says how to submit.
rc=0
bash "$src/sbatch-templates/sweep.sh" "$src/sbatch-templates/example.sweep" 2>err.txt || rc=$?
[ $rc = 2 ] && grep -q 'submit with sbatch --array=0-5 sweep.sh' err.txt || fail "not an array task: $(cat err.txt)"

# Points 0, 1 and 3 of a 2 x 2 grid train; 2 is never started.
printf 'lr = 1e-3, 1e-2 # rates\nbatch = 32, 64\n' >tiny.sweep
for i in 0 1 3; do
	SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_JOB_ID=7 SLURM_SUBMIT_DIR=$tmp SLURM_JOB_NODELIST=here \
		TRAIN_DATA=synthetic TRAIN_LAYERS=784,16,10 TRAIN_MAX_STEPS=12 \
		TRAIN_EXTRA="--synthetic-samples 512,128 --eval-every 4" \
		bash "$src/sbatch-templates/sweep.sh" tiny.sweep >task-$i.out 2>&1 || fail "task $i: $(cat task-$i.out)"
done
[ "$(cat sweep-7/point-3.exit)" = 0 ] || fail "point 3's exit file"
cmp -s tiny.sweep sweep-7/grid.sweep || fail "grid.sweep is not the sweep file"
rc=0
train-sweep report sweep-7 >report.txt 2>err.txt || rc=$?
[ $rc = 3 ] || fail "report exit $rc (want 3: point 2 is missing): $(cat report.txt err.txt)"
grep -q '^3 of 4 points finished' report.txt || fail "summary line: $(cat report.txt)"
grep -q '^  p2 lr=1e-2 batch=32: missing: never started' report.txt || fail "missing point 2: $(cat report.txt)"
[ "$(awk -F, 'NR > 1 {print $5}' sweep-7/report.csv | xargs)" = "ok ok ok missing" ] ||
	fail "report.csv: $(cat sweep-7/report.csv)"
if command -v gnuplot >/dev/null 2>&1; then
	if [ -f sweep-7/report.png ]; then
		[ "$(head -c 4 sweep-7/report.png | od -An -c | tr -d ' ')" = '211PNG' ] || fail "report.png is no PNG"
	else
		grep -q '<svg' sweep-7/report.svg || fail "no report.png or report.svg"
	fi
else
	plot_skipped="gnuplot not installed (apt-get install gnuplot-nox): the report's plot was not checked"
fi

# Any program: the point's values as --key value flags and TRAIN_SWEEP_KEY; its result from a
# TRAIN_RESULT line (points 0, 1) or the file TRAIN_TOPO_RESULT_FILE names (points 2, 3); the
# report ranks by the result's goal (min: the lowest loss first).
cat >"$tmp/bin/toy-train" <<'TOY'
#!/bin/sh
# toy-train --lr X --hidden_size N: a made-up loss of |lr - 0.01| * 100 + 1 / N.
while [ $# -gt 0 ]; do
	case $1 in
	--lr) lr=$2; shift 2 ;;
	--hidden_size) n=$2; shift 2 ;;
	*) echo "toy-train: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ "$TRAIN_SWEEP_HIDDEN_SIZE" = "$n" ] || { echo "toy-train: TRAIN_SWEEP_HIDDEN_SIZE=$TRAIN_SWEEP_HIDDEN_SIZE, --hidden_size $n" >&2; exit 3; }
loss=$(awk -v lr="$lr" -v n="$n" 'BEGIN { d = lr - 0.01; if (d < 0) d = -d; printf "%.4f", d * 100 + 1 / n }')
if [ "$n" -ge 64 ]; then
	printf '{"metric": "val_loss", "value": %s, "goal": "min"}\n' "$loss" >"$TRAIN_TOPO_RESULT_FILE"
else
	echo "training with lr $lr"
	echo "TRAIN_RESULT {\"metric\": \"val_loss\", \"value\": $loss, \"goal\": \"min\"}"
fi
TOY
chmod +x "$tmp/bin/toy-train"
printf 'hidden_size = 16, 64\nlr = 1e-2, 1e-1\n' >toy.sweep
[ "$(train-sweep size --program toy-train toy.sweep 2>/dev/null)" = 0-3 ] || fail "size of the toy grid"
for i in 0 1 2 3; do
	SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_JOB_ID=8 SLURM_SUBMIT_DIR=$tmp SLURM_JOB_NODELIST=here \
		bash "$src/sbatch-templates/sweep.sh" toy.sweep toy-train >toy-$i.out 2>&1 || fail "toy task $i: $(cat toy-$i.out sweep-8/point-$i.log)"
done
[ "$(cat sweep-8/point-1.result)" = '{"metric": "val_loss", "value": 9.0625, "goal": "min"}' ] ||
	fail "point 1's result from its TRAIN_RESULT line: $(cat sweep-8/point-1.result)"
rc=0
train-sweep report sweep-8 >report.txt 2>err.txt || rc=$?
[ $rc = 0 ] || fail "toy report exit $rc: $(cat report.txt err.txt)"
[ "$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ {print $2}' report.txt | xargs)" = "2 0 3 1" ] ||
	fail "toy points not ranked by val_loss, lowest first: $(cat report.txt)"
grep -q '^1    2     64          1e-2 val_loss  *0.0156  min$' report.txt || fail "toy report's best row: $(cat report.txt)"
[ "$(awk -F, 'NR > 1 {print $5 ":" $13 ":" $14}' sweep-8/report.csv | xargs)" = "ok:val_loss:0.0156 ok:val_loss:0.0625 ok:val_loss:9.0156 ok:val_loss:9.0625" ] ||
	fail "toy report.csv: $(cat sweep-8/report.csv)"
# A program that ends with exit 0 but reports no result is a failed point saying what is missing.
printf 'hidden_size = 16\n' >quiet.sweep
SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_JOB_ID=9 SLURM_SUBMIT_DIR=$tmp SLURM_JOB_NODELIST=here \
	bash "$src/sbatch-templates/sweep.sh" quiet.sweep true >quiet.out 2>&1 || fail "quiet task: $(cat quiet.out)"
rc=0
train-sweep report sweep-9 >report.txt 2>&1 || rc=$?
[ $rc = 3 ] && grep -q 'p0 hidden_size=16: failed: exit 0 but no result: no TRAIN_RESULT line' report.txt ||
	fail "a program without a result (rc $rc): $(cat report.txt)"

# A directory made from another sweep file is refused.
printf 'lr = 5e-3\n' >other.sweep
rc=0
SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_JOB_ID=7 SLURM_SUBMIT_DIR=$tmp \
	bash "$src/sbatch-templates/sweep.sh" other.sweep >other.out 2>&1 || rc=$?
[ $rc = 2 ] && grep -q 'belongs to another sweep' other.out || fail "other sweep into sweep-7 (rc $rc): $(cat other.out)"
if [ -n "${plot_skipped:-}" ]; then
	echo "SKIP: $plot_skipped"
	exit 77
fi
echo "train_sweep_cli: all passed"
