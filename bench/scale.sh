#!/bin/sh
# SPDX-License-Identifier: MIT
# scale.sh — `make bench-scale` (issue #20), everything on this one machine:
#   1. nodelists of 1k-100k hosts in Slurm's forms expanded by libttlayout (best of 5, peak RSS)
#      against `scontrol show hostnames` on the same list (time, peak RSS, and the output equal),
#      and the env contract of every task of 1k/10k nodes x 10 tasks;
#   2. a rendezvous of 1k/4k/16k ranks (threads in client processes, bench/rdv_scale.c) through
#      libtrainrt's store, flat (every rank to the store) and through node leaders of 8 ranks
#      (issue #32; also at 128k ranks, once: a thread per rank does not fit pid_max there), against
#      PyTorch's TCPStore (bench/rdv_tcpstore.py) where it finishes within its timeout
#      (SCALE_TCPSTORE_MAX ranks, default 4096: 16k takes minutes);
#   3. a 16k-rank rendezvous with one rank that never comes and one that dies, flat, and one that
#      never comes through node leaders: every other rank's one line, and when it came;
#   4. a plot of time vs size (gnuplot's dumb terminal) into the output;
#   5. a per-message model of the node leaders' rendezvous and start-up, from the costs the runs of
#      2. measured (the store's CPU per node, the ranks' CPU per rank), set against those runs on
#      this machine and extrapolated to a real cluster of 1k/4k/16k nodes.
# Usage: scale.sh BUILD_DIR   (the build tree with bench/scale-layout and bench/rdv-scale). ~3 min.
set -u
B=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
TCPSTORE_MAX=${SCALE_TCPSTORE_MAX:-4096}
RUNS=${SCALE_RUNS:-3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-scale.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
status=0

say() { printf '%s\n' "$*"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.1f", a / b; else printf "n/a" }'; }
ms_since() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN { printf "%.0f", (e - s) / 1e6 }'; }

say "# bench-scale, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 1. nodelists and the env contract ---------------------------------------------------------
printf 'ClusterName=tt\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n' >"$WORK/slurm.conf"
export SLURM_CONF="$WORK/slurm.conf"
have_scontrol=1
command -v scontrol >/dev/null 2>&1 || have_scontrol=0
say ""
say "## nodelist expansion (libttlayout best of 5; scontrol one run, process start included)"
say "| form | hosts | list chars | expand ms | count ms | peak RSS KiB | scontrol ms | scontrol RSS KiB | same hosts | scontrol/ours |"
say "|---|---|---|---|---|---|---|---|---|---|"
for form in contiguous strided racks mixed; do
	for n in 1000 10000 100000; do
		"$B/bench/scale-layout" gen "$form" "$n" >"$WORK/list" || { status=1; continue; }
		# shellcheck disable=SC2046 # split on purpose: the output's fields become $1, $2, ...
		set -- $("$B/bench/scale-layout" time "$form" "$n") || { status=1; continue; }
		chars=$1 hosts=$2 ms=$(awk -v t="$3" 'BEGIN { printf "%.2f", t * 1000 }')
		cms=$(awk -v t="$4" 'BEGIN { printf "%.3f", t * 1000 }') rss=$5
		sc_ms=n/a sc_rss=n/a same=n/a
		# One argument of at most 128 KiB (MAX_ARG_STRLEN): the 100k strided list does not fit.
		if [ "$have_scontrol" = 1 ] && [ "$chars" -lt 131000 ]; then
			"$B/bench/scale-layout" expand <"$WORK/list" >"$WORK/ours"
			t0=$(date +%s%N)
			# scontrol may print "Invalid hostlist" and still exit 0.
			if /usr/bin/time -f '%M' -o "$WORK/sct" scontrol show hostnames "$(cat "$WORK/list")" \
				>"$WORK/theirs" 2>"$WORK/scerr" && [ -s "$WORK/theirs" ]; then
				sc_ms=$(ms_since "$t0")
				sc_rss=$(tail -n 1 "$WORK/sct")
				if cmp -s "$WORK/ours" "$WORK/theirs"; then same=yes; else same=NO; status=1; fi
			else
				same="scontrol refuses: $(grep -v '^Invalid' "$WORK/scerr" | head -n 1 | sed 's/^scontrol: error: //')"
			fi
		fi
		say "| $form | $hosts | $chars | $ms | $cms | $rss | $sc_ms | $sc_rss | $same | $(ratio "$sc_ms" "$ms") |"
		echo "$form $hosts $ms" >>"$WORK/expand.dat"
	done
done
say ""
say "## env contract of every task (tt_layout_compute per task, as each task computes its own)"
say "| form | nodes | tasks | total s | per task us | peak RSS KiB |"
say "|---|---|---|---|---|---|"
for form in contiguous racks mixed strided; do
	for n in 1000 10000; do
		if out=$("$B/bench/scale-layout" env "$form" "$n" 10 2>&1); then
			set -- $out
			say "| $form | $n | $1 | $2 | $3 | $4 |"
		else
			say "| $form | $n | $((n * 10)) | refused: ${out#scale-layout: } | | |"
		fi
	done
done

# ---- 2. rendezvous -----------------------------------------------------------------------------
rdv() { # rdv ARGS...: the median of RUNS runs' "seconds done rss store_cpu ranks_cpu" (by seconds;
	# a failed run counts as infinitely slow); a failure's line goes to the notes
	: >"$WORK/rdv.runs"
	for run in $(seq "$RUNS"); do
		timeout 300 "$B/bench/rdv-scale" "$@" >"$WORK/rdv.out" 2>&1
		[ "$(wc -l <"$WORK/rdv.out")" -le 1 ] ||
			echo "- \`rdv-scale $*\` (run $run): $(sed -n 2p "$WORK/rdv.out")" >>"$WORK/notes"
		head -n 1 "$WORK/rdv.out" | awk -v n="$1" '{ if ($2 != n) $1 = 1e9; print }' >>"$WORK/rdv.runs"
		cut -d' ' -f1 "$WORK/rdv.runs" | tail -n 1 | tr '\n' ' ' >>"$WORK/rdv.all"
	done
	sort -g "$WORK/rdv.runs" | sed -n "$(((RUNS + 1) / 2))p"
}
say ""
say "## rendezvous: connect with the key handshake, then meet (all ranks released together; trainrt: median of $RUNS runs, 131072 and TCPStore: one run; node leaders: nodes of 8 ranks)"
say "| ranks | trainrt add/get s | trainrt JOIN s | JOIN, store on a core of its own s | store peak RSS KiB (JOIN) | store CPU s (JOIN) | ranks' CPU s (JOIN) | accept-queue drops (JOIN) | node leaders s | store peak RSS KiB (leaders) | store CPU s (leaders) | ranks' CPU s (leaders) | accept-queue drops (leaders) | TCPStore s | TCPStore/trainrt add/get | JOIN/leaders |"
say "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in 1024 4096 16384 131072; do
	# 128k ranks: one run (a minute of both cores).
	[ "$n" -le 16384 ] || RUNS=1
	# shellcheck disable=SC2046 # split on purpose: the output's fields become $1, $2, ...
	set -- $(rdv "$n" --hier --timeout 120); hier_s=${1:-fail} hrss=${3:-} hscpu=${4:-} hccpu=${5:-} hovf=${6:-}
	[ "${2:-0}" = "$n" ] || { hier_s="fail"; status=1; }
	if [ "$n" -gt 16384 ]; then
		say "| $n | not run | not run | not run | | | | | $hier_s | $hrss | $hscpu | $hccpu | $hovf | not run | | |"
		echo "$n - - - $hier_s" >>"$WORK/rdv.dat"
		echo "$n $hier_s $hscpu $hccpu $hovf" >>"$WORK/hier.dat"
		continue
	fi
	# shellcheck disable=SC2046 # split on purpose: the output's fields become $1, $2, ...
	set -- $(rdv "$n" --barrier add); add_s=${1:-fail}; [ "${2:-0}" = "$n" ] || { add_s="fail"; status=1; }
	# shellcheck disable=SC2046 # split on purpose: the output's fields become $1, $2, ...
	set -- $(rdv "$n" --barrier join); join_s=${1:-fail} rss=${3:-} scpu=${4:-} ccpu=${5:-} ovf=${6:-}
	[ "${2:-0}" = "$n" ] || { join_s="fail"; status=1; }
	# shellcheck disable=SC2046 # split on purpose: the output's fields become $1, $2, ...
	set -- $(rdv "$n" --barrier join --store-core); core_s=${1:-fail}; [ "${2:-0}" = "$n" ] || { core_s="fail"; status=1; }
	ts=skipped
	if [ "$n" -le "$TCPSTORE_MAX" ] && $PY -c 'import torch.distributed' 2>/dev/null; then
		ts=$(timeout 300 $PY "$HERE/rdv_tcpstore.py" "$n" 120 | awk -v n="$n" 'NR == 1 { print ($2 == n) ? $1 : "fail" }')
		ts=${ts:-fail}
	fi
	say "| $n | $add_s | $join_s | $core_s | $rss | $scpu | $ccpu | $ovf | $hier_s | $hrss | $hscpu | $hccpu | $hovf | $ts | $(ratio "$ts" "$add_s") | $(ratio "$join_s" "$hier_s") |"
	echo "$n $add_s $join_s $ts $hier_s" >>"$WORK/rdv.dat"
	echo "$n $hier_s $hscpu $hccpu $hovf" >>"$WORK/hier.dat"
done
say ""
say "every trainrt run's seconds, in table order: $(cat "$WORK/rdv.all")"
[ ! -s "$WORK/notes" ] || { say ""; cat "$WORK/notes"; }

# ---- 3. failure at scale -----------------------------------------------------------------------
say ""
say "## 16384 ranks, one missing or dying (JOIN, timeout 30 s)"
for how in "--missing 9999" "--die 4321"; do
	start=$(date +%s.%N)
	timeout 300 "$B/bench/rdv-scale" 16384 --barrier join --timeout 30 $how >"$WORK/fail.out" 2>&1
	end=$(date +%s.%N)
	say "- \`rdv-scale 16384 $how\`: $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }') s in all;" \
		"$(sed -n 2p "$WORK/fail.out")"
	sed -n 2p "$WORK/fail.out" | grep -Eq "^16383 ranks failed, 16383 of them with this line;" || status=1
done
start=$(date +%s.%N)
timeout 300 "$B/bench/rdv-scale" 16384 --hier --timeout 30 --missing 9999 >"$WORK/fail.out" 2>&1
end=$(date +%s.%N)
say "- \`rdv-scale 16384 --hier --missing 9999\`: $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }') s in all;" \
	"$(sed -n 2p "$WORK/fail.out")"
sed -n 2p "$WORK/fail.out" | grep -Eq "^16383 ranks failed, 16383 of them with this line;" || status=1

# ---- 4. plot -----------------------------------------------------------------------------------
if command -v gnuplot >/dev/null 2>&1; then
	say ""
	say '```'
	gnuplot <<EOF 2>"$WORK/gnuplot.err" || sed 's/^/gnuplot: /' "$WORK/gnuplot.err"
set terminal dumb 100 28
set logscale xy
set datafile missing "-"
set title "rendezvous seconds vs ranks (log-log): A trainrt add/get, J trainrt JOIN, N node leaders, T TCPStore"
set xlabel "ranks"
plot "$WORK/rdv.dat" using 1:2 with linespoints pt "A" title "trainrt", \
     "$WORK/rdv.dat" using 1:3 with linespoints pt "J" title "JOIN", \
     "$WORK/rdv.dat" using 1:5 with linespoints pt "N" title "node leaders", \
     "$WORK/rdv.dat" using 1:(\$4 > 0 ? \$4 : 1/0) with linespoints pt "T" title "TCPStore"
set title "nodelist expansion ms vs hosts (log-log), per form"
set xlabel "hosts"
plot "< grep contiguous $WORK/expand.dat" using 2:3 with linespoints pt "c" title "contiguous", \
     "< grep strided $WORK/expand.dat" using 2:3 with linespoints pt "s" title "strided", \
     "< grep racks $WORK/expand.dat" using 2:3 with linespoints pt "r" title "racks", \
     "< grep mixed $WORK/expand.dat" using 2:3 with linespoints pt "m" title "mixed"
EOF
	say '```'
fi
# ---- 5. the node leaders' model ----------------------------------------------------------------
# Per message, from the runs above: the store serves nodes one after another on its one thread,
# c = its CPU per node (accept, key handshake, JOIN_NODE, verdict); each rank costs g of CPU (its
# Unix connection, hello and verdict; the leader's handshake spread over its 8). On this machine
# the simulated ranks share its cores with the store: T >= max(nodes c, (nodes c + ranks g) /
# cores). On a real cluster each node gathers on its own cores while the store serves the nodes:
# T ~ nodes c + 8 g + 3 round trips (assumed 50 us each, not measured here), provided the
# accept queue (somaxconn) holds the nodes; each SYN it drops costs TCP's 1-3 s retry instead.
# trainrt_init's start through the leaders adds the settings agreement: two more small requests
# per node, each at most c (c includes the handshake), so start <= rendezvous + 2 nodes c.
if [ -s "$WORK/hier.dat" ]; then
	somax=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo 4096)
	say ""
	say "## node leaders: the per-message model against the runs (c = store CPU per node, g = ranks' CPU per rank, from each run's own row; the cluster rows use c and g of the largest run without accept-queue drops)"
	say "| ranks | nodes | c us | g us | model on this machine s | measured s | measured / model | accept-queue drops |"
	say "|---|---|---|---|---|---|---|---|"
	awk -v cores="$(nproc)" '$2 != "fail" && $3 != "" {
		nodes = $1 / 8; c = $3 / nodes; g = $4 / $1
		m = (nodes * c + $1 * g) / cores; if (nodes * c > m) m = nodes * c
		printf "| %d | %d | %.0f | %.0f | %.3f | %s | %.2f | %s |\n", $1, nodes, c * 1e6, g * 1e6, m, $2, $2 / m, $5
	}' "$WORK/hier.dat" | while IFS= read -r line; do say "$line"; done
	# c and g of the largest run without accept-queue drops (retried handshakes inflate c), else the largest
	# shellcheck disable=SC2046 # split on purpose: c and g become $1 and $2
	set -- $(awk '$2 != "fail" && $3 != "" { c = $3 / ($1 / 8); g = $4 / $1; if ($5 + 0 == 0 || !any0) { bc = c; bg = g }
		if ($5 + 0 == 0) any0 = 1 } END { if (bc != "") print bc, bg }' "$WORK/hier.dat")
	if [ $# -eq 2 ]; then
		say ""
		say "| real cluster, nodes of 8 | ranks | rendezvous s (model) | start-up s (model, upper bound) | nodes > somaxconn $somax |"
		say "|---|---|---|---|---|"
		for nodes in 1024 4096 16384; do
			say "$(awk -v n="$nodes" -v c="$1" -v g="$2" -v q="$somax" 'BEGIN {
				r = n * c + 8 * g + 3 * 50e-6
				printf "| %d | %d | %.2f | %.2f | %s |", n, n * 8, r, r + 2 * n * c, (n > q) ? "yes: add TCP SYN retries (1-3 s)" : "no" }')"
		done
	fi
fi
exit $status
