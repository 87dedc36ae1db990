#!/bin/sh
# SPDX-License-Identifier: MIT
# node_leader_gone.sh — ranks 1-3 of a node of 4 (trainrt-bench processes, TRAINRT_TIMEOUT 60,
# through node leaders by default) whose leader, rank 0, fails: each follower exits non-zero
# long before its timeout with one line, exactly once, naming its leader and what to do, when
# (1) rank 0 never runs (it crashed before its start: its process is gone), (2) rank 0's process
# runs but does not reach its start for a while (a stand-in process with its environment): no
# follower gives up while it runs, and each names it once it is gone, (3) rank 0 cannot listen
# on MASTER_PORT (another socket holds it): each follower has rank 0's own reason.
# tt-test-limit: 150
set -eu
build=$(pwd)
bench=$build/trainrt-bench
tmp=$(mktemp -d)
holder=
trap 'if [ -n "$holder" ]; then kill "$holder" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
export TRAINRT_TOKEN=node-leader-gone-test-secret TRAINRT_TIMEOUT=60 WORLD_SIZE=4 LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1
unset TRAINRT_RENDEZVOUS SLURM_JOB_ID SLURM_STEP_ID

# followers PORT: starts ranks 1-3 in the background; their pids in $pids.
followers() {
	pids=
	for r in 1 2 3; do
		RANK=$r LOCAL_RANK=$r MASTER_PORT=$1 timeout 100 "$bench" -b 4 -e 4 -n 1 -w 0 >"$tmp/out.$r" 2>"$tmp/err.$r" &
		pids="$pids $!"
	done
}

# ended WANT: every follower exited non-zero (not killed by timeout) with WANT in its stderr once.
ended() {
	r=1
	for pid in $pids; do
		rc=0
		wait "$pid" || rc=$?
		case $rc in 0 | 124) fail "rank $r exited $rc: $(cat "$tmp/err.$r")" ;; esac
		# shellcheck disable=SC2059 # WANT is a format with the rank's %d, on purpose
		n=$(grep -oF -- "$(printf "$1" "$r")" "$tmp/err.$r" | wc -l)
		# shellcheck disable=SC2059 # as above
		[ "$n" = 1 ] || fail "rank $r said '$(printf "$1" "$r")' $n times: $(cat "$tmp/err.$r")"
		[ "$(grep -c . "$tmp/err.$r")" = 1 ] || fail "rank $r said more than one line: $(cat "$tmp/err.$r")"
		r=$((r + 1))
	done
}

gone="rank %d's node leader, rank 0 (LOCAL_RANK 0), no longer runs on this node and never listened: it exited or crashed before its start (its own output says why); fix that and relaunch"
port=$((20000 + $$ % 9000))

# (1) no rank 0 at all.
followers "$port"
ended "$gone"

# (2) rank 0's process runs (a sleep with its environment at exec) and then exits.
RANK=0 LOCAL_RANK=0 MASTER_PORT=$port sleep 8 &
leader=$!
followers "$port"
sleep 5
for pid in $pids; do
	kill -0 "$pid" 2>/dev/null || fail "a follower (pid $pid) ended while its leader's process still ran: $(cat "$tmp"/err.*)"
done
wait "$leader"
ended "$gone"

# (3) MASTER_PORT held by another socket: rank 0 fails at once and hands its reason to its node.
command -v python3 >/dev/null || {
	echo "SKIP: no python3 to hold a port (cases 1 and 2 passed)"
	exit 77
}
python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(120)' >"$tmp/port" &
holder=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
held=$(cat "$tmp/port")
[ -n "$held" ] || fail "python3 did not hold a port"
RANK=0 LOCAL_RANK=0 MASTER_PORT=$held timeout 100 "$bench" -b 4 -e 4 -n 1 -w 0 >"$tmp/out.0" 2>"$tmp/err.0" &
leader=$!
followers "$held"
rc=0
wait "$leader" || rc=$?
case $rc in 0 | 124) fail "rank 0 exited $rc: $(cat "$tmp/err.0")" ;; esac
grep -qF "rank 0: starting the rendezvous store: cannot listen on 127.0.0.1 (127.0.0.1):$held" "$tmp/err.0" ||
	fail "rank 0: $(cat "$tmp/err.0")"
ended "rank %d: this node's leader, rank 0 (LOCAL_RANK 0), failed at its start: starting the rendezvous store: cannot listen on 127.0.0.1 (127.0.0.1):$held"
echo "node leader gone: every follower named its leader once, in each of 3 cases"
