#!/bin/sh
# SPDX-License-Identifier: MIT
# cpu-quota.sh HOST QUOTA_US CMD [ARG...] — a slow node for the straggler tests and benchmarks
# (tests/cluster/t_straggle.sh, bench/ft_cluster.sh): on host HOST, moves itself into the cgroup
# tt-slow of the node's own cpu hierarchy (cgroup v1, tests/cluster/cluster.sh mounts one per
# node), whose quota is QUOTA_US per 100 ms for every process in it together, then runs CMD. On
# any other host it runs CMD as it is. Needs root inside the node (the cluster's jobs have it).
host=$1 quota=$2
shift 2
if [ "$(hostname)" = "$host" ]; then
	d=/sys/fs/cgroup/cpu/tt-slow
	mkdir -p "$d" && echo 100000 >"$d/cpu.cfs_period_us" && echo "$quota" >"$d/cpu.cfs_quota_us" &&
		echo $$ >"$d/tasks" || { echo "cpu-quota.sh: cannot put rank ${RANK:-?} into $d" >&2; exit 1; }
fi
exec "$@"
