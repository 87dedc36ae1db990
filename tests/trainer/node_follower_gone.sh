#!/bin/sh
# SPDX-License-Identifier: MIT
# node_follower_gone.sh — 2 simulated nodes x 4 ranks (trainrt-bench processes on this machine,
# TRAINRT_TIMEOUT 60, through node leaders by default) where rank 5, a follower on node 1, dies
# during the backend's set-up (LD_PRELOAD die_on_listen.so: it exits 42 at its first listen(),
# its point-to-point endpoint, after the rendezvous). Every one of the 7 other ranks exits non-zero,
# long before its timeout, with exactly one line that names rank 5 once (issue #32: the other node
# too, not its leader's broken TCP ring). First the same world without the shim runs through, so
# the agreement after the set-up passes a world that is whole; last, ranks 2 (node 0) and 5 both
# die, and each of the 6 others names both, one by one, in its one line.
# tt-test-limit: 150
set -eu
build=$(pwd)
bench=$build/trainrt-bench
shim=$build/tests/trainer/.libs/die_on_listen.so
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
[ -x "$bench" ] || fail "no $bench: run it from the build folder after make"
[ -f "$shim" ] || fail "no $shim: build it with make check (it is a check library)"
export TRAINRT_TOKEN=node-follower-gone-test-secret TRAINRT_TIMEOUT=60 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1
unset TRAINRT_RENDEZVOUS TRAINRT_BACKEND SLURM_JOB_ID SLURM_STEP_ID

# world DEAD...: starts ranks 0-7 (the ranks DEAD with the shim; none when DEAD is -1), waits for
# all; rank r's status in $tmp/rc.r, its stderr in $tmp/err.r.
world() {
	port=$("$here/launch_local.sh" --free-port)
	pids=
	for r in 0 1 2 3 4 5 6 7; do
		pre=
		case " $* " in *" $r "*) pre=$shim ;; esac
		RANK=$r LOCAL_RANK=$((r % 4)) MASTER_PORT=$port LD_PRELOAD=$pre timeout 100 "$bench" -b 4 -e 4 -n 1 -w 0 \
			>"$tmp/out.$r" 2>"$tmp/err.$r" &
		pids="$pids $!"
	done
	r=0
	for pid in $pids; do
		rc=0
		wait "$pid" || rc=$?
		echo "$rc" >"$tmp/rc.$r"
		r=$((r + 1))
	done
}

# (1) the whole world: every rank runs through.
world -1
for r in 0 1 2 3 4 5 6 7; do
	[ "$(cat "$tmp/rc.$r")" = 0 ] || fail "without a dead rank, rank $r exited $(cat "$tmp/rc.$r"): $(cat "$tmp/err.$r")"
done

# (2) rank 5 dies during the set-up.
start=$(date +%s)
world 5
took=$(($(date +%s) - start))
[ "$(cat "$tmp/rc.5")" = 42 ] || fail "rank 5 did not die at its listen() (exit $(cat "$tmp/rc.5")): $(cat "$tmp/err.5")"
want="rank 5 (LOCAL_RANK 1) on node 1 "
named=0
for r in 0 1 2 3 4 6 7; do
	rc=$(cat "$tmp/rc.$r")
	case $rc in 0 | 124) fail "rank $r exited $rc: $(cat "$tmp/err.$r")" ;; esac
	[ "$(grep -c . "$tmp/err.$r")" = 1 ] || fail "rank $r did not say exactly one line: $(cat "$tmp/err.$r")"
	grep -qF "trainrt: rank $r: the backend's set-up failed: " "$tmp/err.$r" || fail "rank $r: $(cat "$tmp/err.$r")"
	n=$(grep -oF -- "$want" "$tmp/err.$r" | wc -l)
	[ "$n" = 1 ] || fail "rank $r named '$want' $n times: $(cat "$tmp/err.$r")"
	named=$((named + 1))
done
[ "$named" = 7 ] || fail "$named of the 7 other ranks named rank 5"
# Each rank's TRAINRT_TIMEOUT is 60 s: one that waited it out did not learn of rank 5 at once.
[ "$took" -lt 30 ] || fail "the world took $took s to end (a rank waited for its timeout)"

# (3) ranks 2 and 5, on different nodes, die during the set-up.
world 2 5
for r in 0 1 3 4 6 7; do
	case $(cat "$tmp/rc.$r") in 0 | 124) fail "rank $r exited $(cat "$tmp/rc.$r"): $(cat "$tmp/err.$r")" ;; esac
	[ "$(grep -c . "$tmp/err.$r")" = 1 ] || fail "rank $r did not say exactly one line: $(cat "$tmp/err.$r")"
	grep -qF "the backend's set-up failed: 2 ranks ended during it" "$tmp/err.$r" || fail "rank $r: $(cat "$tmp/err.$r")"
	for dead in "rank 2 (LOCAL_RANK 2) on node 0 " "rank 5 (LOCAL_RANK 1) on node 1 "; do
		n=$(grep -oF -- "$dead" "$tmp/err.$r" | wc -l)
		[ "$n" = 1 ] || fail "rank $r named '$dead' $n times: $(cat "$tmp/err.$r")"
	done
done
echo "node follower gone: all 7 other ranks named rank 5 in their one line, within $took s; both of 2 dead ranks named by the 6 others"
