#!/bin/sh
# SPDX-License-Identifier: MIT
# timeouts.sh — `make bench-timeouts`: how long libtrainrt takes to give up, against the
# TRAINRT_TIMEOUT it was given (the peer of each measurement). The unit tests check only that it
# gives up and why (a death reported as a death, a hang while the peer still hangs); the times are
# measured here: a rank whose rank 0 never starts, a rank 0 whose peer never comes, a peer killed
# in the middle of all-reduces (TRAINRT_TIMEOUT 30: the death must be noticed long before), and a
# peer stopped (SIGSTOP) in the middle of them, for the shm (one node) and tcp backends.
# Goals: give-ups within TRAINRT_TIMEOUT + 1 s; a killed peer noticed within 1 s. A node barrier
# (shm) waits 2 s more than TRAINRT_TIMEOUT (SHM_REASON_GRACE_S in runtime/comm/backend_shm.c: a late node
# leader stuck on the TCP ring publishes its own reason first), so its goal is 2 s later.
set -u
BENCH=${TRAINRT_BENCH:-./trainrt-bench}
here=$(dirname "$0")
T=2
tmp=$(mktemp -d /tmp/tt-timeouts-XXXXXX)
pids=""
# shellcheck disable=SC2154 # p is the loop's own variable inside the trap's string (shellcheck does not see it assigned)
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
export TRAINRT_TOKEN=timeouts-secret-$$ OPENBLAS_NUM_THREADS=1
unset PMIX_RANK
status=0

now() { date +%s.%N; }
# report WHAT START END LIMIT: one line with the elapsed time and whether it met LIMIT
report() {
	awk -v what="$1" -v s="$2" -v e="$3" -v lim="$4" 'BEGIN {
		d = e - s; ok = d <= lim
		printf "%-58s %6.2f s  (goal <= %.1f s: %s)\n", what, d, lim, ok ? "met" : "MISSED"
		exit !ok }' || status=1
}
# rank R N: becomes rank R of an N-rank all-reduce loop (line-buffered output, stderr kept); run
# it in a subshell or in the background, so that $! is the rank's own pid
rank() {
	RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		exec stdbuf -oL "$BENCH" -o allreduce -b 64K -e 64K -n 1000000 -w 0 >"$tmp/r$1.out" 2>"$tmp/r$1.err"
}
# why R: the reason rank R gave
why() { echo "    $(tail -n 1 "$tmp/r$1.err")"; }
# running: waits until rank 0 printed its header (every rank joined the world)
running() {
	i=0
	until grep -q '^# trainrt-bench' "$tmp/r0.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 600 ] || { echo "timeouts: the ranks did not start: $(cat "$tmp"/r*.err)"; exit 1; }
		sleep 0.05
	done
}

echo "TRAINRT_TIMEOUT=$T unless said otherwise; $(nproc) cores"
port=$("$here/../tests/trainer/launch_local.sh" --free-port)
s=$(now)
(TRAINRT_TIMEOUT=$T rank 1 2)
report "rank 1, no rank 0 listening: gives up after" "$s" "$(now)" $((T + 1))
why 1

port=$("$here/../tests/trainer/launch_local.sh" --free-port)
s=$(now)
(TRAINRT_TIMEOUT=$T rank 0 2)
report "rank 0, its peer never comes: gives up after" "$s" "$(now)" $((T + 1))
why 0

for backend in shm tcp; do
	export TRAINRT_BACKEND=$backend
	port=$("$here/../tests/trainer/launch_local.sh" --free-port)
	TRAINRT_TIMEOUT=30 rank 0 2 &
	p0=$!
	TRAINRT_TIMEOUT=30 rank 1 2 &
	p1=$!
	pids="$p0 $p1"
	running
	kill -9 "$p1"
	s=$(now)
	wait "$p0"
	report "$backend: peer killed (TRAINRT_TIMEOUT=30): noticed after" "$s" "$(now)" 1
	why 0

	port=$("$here/../tests/trainer/launch_local.sh" --free-port)
	TRAINRT_TIMEOUT=$T rank 0 2 &
	p0=$!
	TRAINRT_TIMEOUT=$T rank 1 2 &
	p1=$!
	pids="$p0 $p1"
	running
	kill -STOP "$p1"
	s=$(now)
	wait "$p0"
	grace=0
	[ "$backend" = tcp ] || grace=2
	report "$backend: peer stopped (SIGSTOP): gives up after" "$s" "$(now)" $((T + grace + 1))
	why 0
	kill -9 "$p1"
	wait "$p1" 2>/dev/null
	pids=""
done
exit $status
