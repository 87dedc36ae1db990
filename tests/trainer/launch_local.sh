#!/bin/sh
# SPDX-License-Identifier: MIT
# launch_local.sh — runs N copies of a command on this machine as one libtrainrt job, the way
# torchrun does: the env contract (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
# MASTER_PORT) per copy, rank 0's output as is and the others' on stderr with their rank. Exits with
# rank 0's status, or the first non-zero status of any rank.
# usage: launch_local.sh N COMMAND [ARGS...]      (TT_LAUNCH_PORT overrides the port)
#        launch_local.sh --free-port                prints a free loopback port and exits
set -u

# A random port that no socket on this machine uses, in any state (TIME_WAIT too), below the
# kernel's ephemeral range (ip_local_port_range): a port from that range can be given to any
# outgoing connection of a concurrent test between this check and rank 0's listen, and that run
# then fails with "Address already in use" (the likely cause of one failed make distcheck in CI).
# A site whose range starts below 12000 gets 10000..59999, as before.
free_port() {
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	[ "$lo" -gt 12000 ] || lo=60000
	while :; do
		p=$(( 10000 + $(od -An -N2 -tu2 /dev/urandom) % (lo - 10000) ))
		hex=$(printf '%04X' "$p")
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -qi ":$hex\$" || break
	done
	echo "$p"
}

if [ "$1" = --free-port ]; then
	free_port
	exit 0
fi
n=$1
shift
port=${TT_LAUNCH_PORT:-$(free_port)}
TRAINRT_TOKEN=${TRAINRT_TOKEN:-launch-local-secret-$$}
TRAINRT_TIMEOUT=${TRAINRT_TIMEOUT:-60}
export TRAINRT_TOKEN TRAINRT_TIMEOUT
pids=""
r=0
while [ "$r" -lt "$n" ]; do
	RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n NODE_RANK=0 NNODES=1 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" &
	pids="$pids $!"
	r=$((r + 1))
done
status=0
for p in $pids; do
	wait "$p"
	s=$?
	[ "$status" -eq 0 ] && status=$s
done
exit "$status"
