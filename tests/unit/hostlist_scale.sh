#!/bin/sh
# SPDX-License-Identifier: MIT
# hostlist_scale.sh — the small, fast version of bench-scale's layout part (issue #20): nodelists
# of 10k nodes in the forms Slurm writes (one range, a range per host, two bracket groups, several
# prefixes with holes) expand to exactly what `scontrol show hostnames` prints, and every one of
# 10k tasks gets a distinct rank from the env contract. No timings are asserted.
set -u
bin=./bench/scale-layout
tmp=$(mktemp -d /tmp/tt-hostlist-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

if ! command -v scontrol >/dev/null 2>&1; then
	echo "SKIP: scontrol is not installed: apt-get install slurm-client (scripts/install-deps.sh)"
	exit 77
fi
# scontrol needs a slurm.conf even to expand a hostlist; a minimal one will do.
printf 'ClusterName=tt\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n' >"$tmp/slurm.conf"
SLURM_CONF=$tmp/slurm.conf
export SLURM_CONF

for form in contiguous strided racks mixed; do
	"$bin" gen "$form" 10000 >"$tmp/list" || { echo "FAIL - generate $form"; exit 1; }
	"$bin" expand <"$tmp/list" >"$tmp/ours"
	timeout 60 scontrol show hostnames "$(cat "$tmp/list")" >"$tmp/theirs"
	if [ "$(wc -l <"$tmp/theirs")" -eq 10000 ] && cmp -s "$tmp/ours" "$tmp/theirs"; then
		echo "ok - $form 10000 nodes ($(wc -c <"$tmp/list") characters) = scontrol show hostnames"
	else
		echo "FAIL - $form 10000 nodes differs from scontrol show hostnames:"
		diff "$tmp/ours" "$tmp/theirs" | head -5
		failures=$((failures + 1))
	fi
done
# Every task's contract: ranks 0..N-1 once each, world size, node count (checked by the program).
for form in racks mixed; do
	if "$bin" env "$form" 1000 10 >"$tmp/env" 2>&1; then
		echo "ok - $form 1000 nodes x 10 tasks: every rank once"
	else
		echo "FAIL - $form env contract: $(cat "$tmp/env")"
		failures=$((failures + 1))
	fi
done
exit $((failures > 0))
