#!/bin/sh
# SPDX-License-Identifier: MIT
# ft_straggle.sh — the slow node and slow link rows of bench/ft_cluster.sh (issue #29), on the
# embedded test cluster that is up (ft_cluster.sh brings one up):
#   slow node: train-mlp, 2 nodes x 2 ranks under train-run, node2's workers under a cgroup CPU
#              quota (tests/cluster/bin/cpu-quota.sh, 15% of one CPU for both); measured: the
#              launch -> the line naming node 2 (the final summary judges busy times; the lines
#              every 60 s only come in longer runs) and that line;
#   slow link: node4's eth0 shaped with tc tbf (64 Mbit/s; netem is not available here),
#              `srun -N4 train-run -- true`: launch -> preflight's line naming node 4, and that
#              line. Needs 4 nodes up; with fewer the row says so.
# torchrun has neither (no step-time report, no preflight): its rows say "not named".
# Prints one Markdown table. Usage: bench/ft_straggle.sh PATH/TO/train-run PATH/TO/train-mlp
set -eu
TRAIN_RUN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TRAIN_MLP=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
QUOTA=$HERE/../tests/cluster/bin/cpu-quota.sh
export SLURM_CONF="${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/slurm.conf"
WORK=$(mktemp -d "$(dirname "$TRAIN_RUN")/bench-ft-straggle.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# stamped LOG CMD...: runs CMD with its stdout and stderr into LOG, each line after the seconds
# since the start ("12.34 line").
stamped() {
	log=$1
	shift
	"$@" 2>&1 | python3 -u -c 'import sys, time
t0 = time.monotonic()
for line in sys.stdin:
    print("%.2f %s" % (time.monotonic() - t0, line), end="", flush=True)' >"$log" || true
}

# named LOG RE: "SECONDS s | the line" of LOG's first line matching RE, or "- | not named".
named() {
	awk -v re="$2" '$0 ~ re { s = $1; sub(/^[^ ]* /, ""); printf "%s s | `%s`", s, $0; found = 1; exit }
		END { if (!found) printf "- | not named" }' "$1"
}

echo "| launcher | fault | launch -> named | what is reported |"
echo "|---|---|---|---|"
stamped "$WORK/node.log" timeout 300 srun -J ftc-slow-node -N2 --ntasks-per-node=1 --export=ALL "$TRAIN_RUN" \
	--nproc-per-node 2 -- "$QUOTA" node2 15000 "$TRAIN_MLP" --layers 784,1024,1024,10 --data synthetic \
	--synthetic-samples 10240,256 --batch 256 --epochs 1 --seed 5 --log-every 1000
srun -N1 -w node2 rmdir /sys/fs/cgroup/cpu/tt-slow 2>/dev/null || true
echo "| train-run | slow node (cgroup quota on node 2) | $(named "$WORK/node.log" 'straggler node 1 \(host node2\)') |"
echo "| torchrun | slow node (cgroup quota on node 2) | - | not named (no step-time report) |"
if [ "$(sinfo -h -N -o %N | sort -u | wc -l)" -ge 4 ]; then
	ip netns exec tt-node4 tc qdisc add dev eth0 root tbf rate 64mbit burst 32kb latency 50ms
	stamped "$WORK/link.log" timeout 60 srun -J ftc-slow-link -N4 --ntasks-per-node=1 "$TRAIN_RUN" -- true
	ip netns exec tt-node4 tc qdisc del dev eth0 root
	echo "| train-run | slow link (tbf 64 Mbit/s on node 4) | $(named "$WORK/link.log" 'node 3 \(node4\) failed preflight') |"
else
	echo "| train-run | slow link (tbf 64 Mbit/s on node 4) | - | not measured: needs 4 nodes up (2 nodes measure one link, nothing to compare it with) |"
fi
echo "| torchrun | slow link (tbf 64 Mbit/s on node 4) | - | not named (no preflight) |"
