#!/bin/sh
# accuracy.sh — `make bench-accuracy`: train-mlp 784-256-10 on Fashion-MNIST (Debian package
# dataset-fashion-mnist) must reach >= 88% test accuracy on 1 rank and on 4 ranks (same global
# batch and seed), and 784-256-256-256-10 on 4 ranks with tensor and pipeline parallelism (TP=2,
# PP=2, 4 micro-batches, 6 epochs) too; prints accuracy and wall time of each. About 15-30 s per
# run on 2 cores, the TP=2 PP=2 one about a minute.
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
DATA=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/tt-accuracy-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
unset RANK WORLD_SIZE PMIX_RANK
[ -d "$DATA" ] || { echo "accuracy: $DATA missing: apt-get install dataset-fashion-mnist"; exit 1; }
status=0
# accuracy WORLD DESCRIPTION TRAIN-MLP-ARGS...: one run, its accuracy and wall time, ok when >= 0.88.
accuracy() {
	world=$1 what=$2
	shift 2
	"$here/../tests/trainer/launch_local.sh" "$world" $TRAIN_MLP --data "$DATA" --batch 128 --lr 0.002 --warmup 100 \
		--weight-decay 0.01 --seed 1 --log-every 100000 --summary "$tmp/a.json" "$@" 2>"$tmp/a.log" ||
		{ cat "$tmp/a.log"; exit 1; }
	acc=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$tmp/a.json")
	wall=$(sed -n 's/.*"wall_seconds": \([0-9.]*\).*/\1/p' "$tmp/a.json")
	verdict=$(awk -v a="$acc" 'BEGIN { print (a >= 0.88 ? "ok" : "BELOW 0.88") }')
	[ "$verdict" = ok ] || status=1
	echo "fashion-mnist $what: test accuracy $acc, wall $wall s ($verdict)"
}
for world in 1 4; do
	accuracy "$world" "784-256-10, 10 epochs, batch 128, world $world" --layers 784,256,10 --epochs 10
done
accuracy 4 "784-256-256-256-10, 6 epochs, batch 128 in 4 micro-batches, layout 1x2x2 (TP=2 PP=2)" \
	--layers 784,256,256,256,10 --epochs 6 --accum 4 --tp 2 --pp 2
exit $status
