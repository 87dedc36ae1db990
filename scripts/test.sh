#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test.sh — the README's test command: installs dependencies, builds, runs the unit tests (make
# check, with the plugin compiled against every Slurm release's headers), a short pass of every
# libFuzzer harness (make fuzz-smoke), make distcheck, builds the Debian packages (make deb, without
# their own make check), then the cluster integration tests on each Slurm release: Debian's 22.05
# against the installed .debs (the plugin through the plugstack.conf.d snippet its package put in
# place, the commands from /usr/bin, the templates from /usr/share/traintopo; installed with
# apt-get while this script holds the cluster, purged before it lets go: the machine is left
# without them, also when they were installed before), and the releases in TT_SLURM_RELEASES
# (default 26.05.3) built from ../shared by scripts/build-slurm.sh (cached per machine; SKIP when
# ../shared is absent) against the build tree's plugin built with that release's headers. Per release: the
# suite on 2 nodes, the 4-node tests on 4 without reserved ports, and the configuration tests
# (test_cfg_*) on a cluster with device constraints, on one with a private /tmp per job
# (job_container/tmpfs), and on one with that and SlurmdParameters=contain_spank (24.05 and later;
# a SKIP on 22.05).
# Before all of it, the README's first command (scripts/main-job.sh, its job kept small), so the two
# commands are proven in the order the README gives them; after it, the job-container tests again
# from a copy of the checkout under /tmp (where a job's private /tmp hides it: the cluster runs
# them from its view outside /tmp).
# Tests marked known_failure_<test> (behaviour not built yet, named with its issue) run and are
# counted as known failures, never as passed. Prints one summary line per release and closes with
# the combined "cluster: N passed, N failed, N skipped, N known failures". Exit 0 only if nothing
# failed. TT_CLUSTER_LOCK=FILE: hold that flock for each
# cluster only (on a machine where others bring the test cluster up too).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh
tree=$top

# The README's first command, as a newcomer runs it before this one (its job kept short: 60
# steps): what it leaves behind must not change what the tests below run.
echo "== the README's first command (scripts/main-job.sh, TRAIN_MAX_STEPS=60)"
mainjob_rc=0 start=$SECONDS
(
	[ -z "${TT_CLUSTER_LOCK:-}" ] || { exec 8>"$TT_CLUSTER_LOCK" && flock 8; }
	TRAIN_MAX_STEPS=60 TT_JOB_DIR=$top/main-job.dir scripts/main-job.sh
) >main-job.out 2>&1 || mainjob_rc=$?
echo "scripts/main-job.sh: exit $mainjob_rc after $((SECONDS - start)) s"
grep -E '^main-job: (job|built)' main-job.out || true
[ $mainjob_rc -eq 0 ] || tail -n 40 main-job.out >&2

# show_failed_logs MAKE_OUTPUT BUILD_DIR: the end of the .log of each test MAKE_OUTPUT names as
# failed, so that CI's output says why.
show_failed_logs() {
	for t in $(sed -n 's/^\(FAIL\|ERROR\): //p' "$1" | sort -u); do
		for log in "$2/${t%.*}.log" "$2/$t.log"; do
			[ -f "$log" ] || continue
			echo "== $log (last 60 lines)" >&2
			tail -n 60 "$log" >&2
			break
		done
	done
}

echo "== unit tests (make check)"
unit_rc=0
make -j"$(nproc)" check >make-check.out 2>&1 || unit_rc=$?
# automake's harness keeps each program's output in its .log: show CUnit's own summaries.
for log in tests/unit/test_*.log; do
	[ -f "$log" ] || continue # none when the tests did not build
	echo "--- ${log%.log}"
	sed -n '/^Run Summary/,/^Elapsed/p' "$log"
done
echo "--- the plugin against each Slurm release's headers (tests/slurm-headers.sh)"
grep -E '^(PASS:|FAIL:|SKIP:|Slurm header sets)' tests/slurm-headers.log || true
grep -E '^(# (TOTAL|PASS|SKIP|FAIL|ERROR)|(PASS|SKIP|FAIL|ERROR):)' make-check.out || true
# A skipped program says why on its last SKIP line.
for log in $(grep -l '^SKIP ' tests/*/*.log 2>/dev/null); do
	echo "skipped ${log%.log}: $(grep '^SKIP:' "$log" | tail -n 1)"
done
if [ $unit_rc -ne 0 ]; then
	echo "unit tests failed; details in the .log files above" >&2
	tail -n 40 make-check.out >&2
	show_failed_logs make-check.out .
	exit 1
fi

echo "== fuzz smoke (make fuzz-smoke: every libFuzzer harness for a few seconds)"
fuzz_rc=0
make -j"$(nproc)" fuzz-smoke >make-fuzz.out 2>&1 || fuzz_rc=$?
grep -E '^(fuzz |    )' make-fuzz.out || true
if [ $fuzz_rc -ne 0 ]; then
	echo "fuzz smoke failed: crash inputs in fuzz-crashes/, logs in fuzz-build/src/fuzz-work/logs/" >&2
	tail -n 20 make-fuzz.out >&2
fi

echo "== make distcheck (the tarball builds, passes make check and installs out of tree)"
distcheck_rc=0 start=$SECONDS
make -j"$(nproc)" distcheck >make-distcheck.out 2>&1 || distcheck_rc=$?
echo "make distcheck: exit $distcheck_rc after $((SECONDS - start)) s"
grep -E '^(# (TOTAL|PASS|SKIP|FAIL|ERROR)|(FAIL|ERROR):)|archives ready for distribution' make-distcheck.out || true
if [ $distcheck_rc -ne 0 ]; then
	tail -n 30 make-distcheck.out >&2
	# A failed distcheck leaves its build tree.
	show_failed_logs make-distcheck.out traintopo-*/_build/sub
fi

total_p=0 total_f=0 total_s=0 total_k=0 summaries=() releases=()

# The packages for Debian's Slurm, from the tarball as `make deb` builds them; without their make
# check (nocheck): the same sources passed it above.
echo "== Debian packages (make deb, DEB_BUILD_OPTIONS=nocheck noddebs)"
deb_rc=0 start=$SECONDS debs=()
DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" make deb >make-deb.out 2>&1 || deb_rc=$?
echo "make deb: exit $deb_rc after $((SECONDS - start)) s"
if [ $deb_rc -eq 0 ]; then
	debs=("$top"/deb-build/*.deb)
	printf '  %s\n' "${debs[@]##*/}"
else
	tail -n 30 make-deb.out >&2
fi

# The releases from ../shared are built before any cluster (and any wait for the lock).
built_releases=()
for release in ${TT_SLURM_RELEASES-26.05.3}; do
	echo "== Slurm $release from ../shared (scripts/build-slurm.sh)"
	built=$top/build-slurm-$release.out rc=0 start=$SECONDS
	scripts/build-slurm.sh "$release" >"$built" || rc=$?
	echo "scripts/build-slurm.sh $release: exit $rc after $((SECONDS - start)) s"
	if [ $rc -eq 77 ]; then
		summaries+=("cluster $release: 0 passed, 0 failed, 1 skipped ($(sed -n 's/^SKIP: //p' "$built"))")
		echo "SKIP: ${summaries[-1]}"
		total_s=$((total_s + 1))
	elif [ $rc -ne 0 ]; then
		summaries+=("cluster $release: 0 passed, 1 failed, 0 skipped (scripts/build-slurm.sh $release failed)")
		echo "FAIL: ${summaries[-1]}"
		total_f=$((total_f + 1))
	else
		built_releases+=("$release")
	fi
done

# The packages live on the machine only while this script holds the cluster (other checkouts' runs
# share the machine): installed after taking the lock, purged before letting it go.
deb_packages=()
for deb in ${debs[@]+"${debs[@]}"}; do deb_packages+=("$(dpkg-deb -f "$deb" Package)"); done
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600 "$@"; }
installed=no
install_debs() {
	apt_get install --reinstall --no-install-recommends "${debs[@]}" >"$top/apt-install.out" 2>&1 ||
		{ cat "$top/apt-install.out" >&2; return 1; }
	installed=yes
	echo "installed: $(dpkg-query -W -f='${Package} ${Version}, ' "${deb_packages[@]}")"
}
purge_debs() {
	[ $installed = yes ] || return 0
	apt_get purge "${deb_packages[@]}" >"$top/apt-purge.out" 2>&1 || { cat "$top/apt-purge.out" >&2; return 1; }
	installed=no
}

# Whether this script brought the cluster up: only then may it bring it down (under a lock it is
# someone else's between our runs).
ours=no
trap '[ $ours = no ] || tests/cluster/cluster.sh down >/dev/null 2>&1 || true; purge_debs || true' EXIT
lock_cluster() {
	[ -z "${TT_CLUSTER_LOCK:-}" ] || { exec 8>"$TT_CLUSTER_LOCK" && flock 8; }
	ours=yes
}
unlock_cluster() {
	ours=no
	purge_debs || { echo "FAIL: apt-get purge ${deb_packages[*]} failed: remove them by hand"; total_f=$((total_f + 1)); }
	[ -z "${TT_CLUSTER_LOCK:-}" ] || flock -u 8
}

# cluster_run WHAT PATTERN UP-ARGS...: brings the cluster up with UP-ARGS, runs the tests of the
# checkout $tree (default: this one) matching PATTERN ("" = all; TT_TESTS_EXCLUDE applies), brings it down; adds the counts to rel_*.
cluster_run() {
	local what=$1 pattern=$2 out=$top/cluster-run.out line rc=0 start
	shift 2
	echo "== cluster $release: $what"
	lock_cluster
	start=$SECONDS
	if [ "$mode" = installed ] && ! install_debs; then
		unlock_cluster
		echo "FAIL: cluster $release ($what): apt-get could not install ${debs[*]##*/}"
		rel_f=$((rel_f + 1))
		return
	fi
	[ "$mode" = tree ] || echo "commands: $(env "${test_env[@]}" bash -c 'command -v train-run train-topo train-mlp' | xargs)"
	"$tree"/tests/cluster/cluster.sh up "$@" --share "$tree" 2>"$out" || rc=$?
	cat "$out" >&2
	if [ $rc -eq 77 ]; then
		unlock_cluster
		echo "SKIP: cluster $release ($what): $(sed 's/^cluster: //' "$out")"
		rel_s=$((rel_s + 1))
		return
	elif [ $rc -ne 0 ]; then
		"$tree"/tests/cluster/cluster.sh down >/dev/null 2>&1 || true
		unlock_cluster
		echo "FAIL: cluster $release ($what) did not come up"
		rel_f=$((rel_f + 1))
		return
	fi
	echo "plugstack.conf: $(cat "${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/plugstack.conf")"
	env "${test_env[@]}" "$tree"/tests/cluster/run-tests.sh "$pattern" | tee "$out" || true
	"$tree"/tests/cluster/cluster.sh down
	unlock_cluster
	echo "cluster $release ($what): $((SECONDS - start)) s with the lock"
	line=$(grep -E '^cluster: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped, [0-9]+ known' "$out" | tail -n1)
	if [ -z "$line" ]; then
		echo "FAIL: cluster $release ($what): no summary from run-tests.sh"
		rel_f=$((rel_f + 1))
		return
	fi
	read -r p f s k < <(sed -E 's/^cluster: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped, ([0-9]+) known.*/\1 \2 \3 \4/' <<<"$line")
	rel_p=$((rel_p + p)) rel_f=$((rel_f + f)) rel_s=$((rel_s + s)) rel_k=$((rel_k + k))
}

# cluster_release SLURM-UP-ARGS...: every cluster run of one release (its daemons and plugin), with
# mode (tree: the build tree's commands; installed: the .debs, installed for each cluster) and
# test_env (run-tests.sh's environment) set.
cluster_release() {
	local start=$SECONDS
	rel_p=0 rel_f=0 rel_s=0 rel_k=0
	TT_TESTS_EXCLUDE=cfg_ cluster_run "2 nodes" "" --nodes 2 "$@"
	# Without MpiParams=ports, so steps get MASTER_PORT from the plugin's formula as on most sites.
	cluster_run "4 nodes, no reserved ports" n4_ --nodes 4 --no-resv-ports "$@"
	# The plugin's steps on 8 nodes x 8 tasks (t_scale.sh; bench-plugin-scale times 64 and more).
	cluster_run "8 nodes" n8_ --nodes 8 "$@"
	# One cluster per configuration: 22.05 fails to create job containers once ConstrainDevices=yes,
	# and has no contain_spank (cluster.sh up exits 77: a SKIP).
	TT_TESTS_EXCLUDE=cfg_oci_ cluster_run "ConstrainDevices=yes" cfg_ --nodes 2 --constrain-devices "$@"
	TT_TESTS_EXCLUDE=cfg_oci_ cluster_run "job_container/tmpfs" cfg_ --nodes 2 --job-container "$@"
	TT_TESTS_EXCLUDE=cfg_oci_ cluster_run "job_container/tmpfs, contain_spank" cfg_ --nodes 2 --job-container --contain-spank "$@"
	# Slurm's OCI containers with crun (t_containers.sh; up exits 77 before 25.05 or without crun).
	cluster_run "OCI containers (crun)" cfg_oci_ --nodes 2 --oci "$@"
	summaries+=("cluster $release: $rel_p passed, $rel_f failed, $rel_s skipped, $rel_k known failures ($(((SECONDS - start + 30) / 60)) min)")
	releases+=("$release")
	total_p=$((total_p + rel_p)) total_f=$((total_f + rel_f)) total_s=$((total_s + rel_s)) total_k=$((total_k + rel_k))
}

# shadowing_copies: traintopo's files that a `make install` into /usr/local left, which would be
# found before the packages' (the plugin, the commands, libtrainrt).
shadowing_copies() {
	local f found=()
	for f in /usr/local/bin/{train-run,train-topo,train-mlp,train-sweep,trainrt-bench} \
		/usr/local/lib/libtrainrt.so* /usr/local/lib/slurm/train_topo.so; do
		[ ! -e "$f" ] || found+=("$f")
	done
	echo "${found[*]}"
}

release="$(slurmd -V | awk '{print $2}') (Debian, installed .debs)"
shadows=$(shadowing_copies)
if [ -n "$shadows" ]; then
	summaries+=("cluster $release: 0 passed, 1 failed, 0 skipped (traintopo's files outside the packages would be found first: $shadows; remove them (rm -f FILE...; ldconfig) and run again)")
	echo "FAIL: ${summaries[-1]}"
	total_f=$((total_f + 1))
elif [ $deb_rc -eq 0 ]; then
	# Nothing of the build tree on PATH: the tests find the packages' commands, and
	# t_install.sh checks that they, the plugin and the templates are the packages' files, with
	# the packages' directories first on PATH.
	mode=installed test_env=(TT_INSTALLED=1 TT_TEMPLATES=/usr/share/traintopo/sbatch-templates
		PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH")
	snippet=$(dpkg-deb -c "$(printf '%s\n' "${debs[@]}" | grep '/traintopo-slurm-plugin_')" |
		awk '{print $NF}' | grep '/plugstack\.conf\.d/.*\.conf$' | sed 's/^\.//')
	cluster_release --plugstack-snippet "$snippet"
else
	summaries+=("cluster $release: 0 passed, 1 failed, 0 skipped (make deb failed: make-deb.out)")
	total_f=$((total_f + 1))
fi
mode=tree test_env=(PATH="$top:$top/sbatch-templates:$PATH")
for release in ${built_releases[@]+"${built_releases[@]}"}; do
	built=$top/build-slurm-$release.out
	cluster_release --slurm "$(sed -n 's/^prefix=//p' "$built")" --plugin "$(sed -n 's/^plugin=//p' "$built")"
done

# The job-container tests from a copy of this checkout under /tmp, built there, on Debian's Slurm:
# a job's private /tmp hides the copy, so the cluster must run them from its view (cluster.sh path).
echo "== the job-container tests from a checkout under /tmp"
tmp_tree=$(mktemp -d /tmp/traintopo-checkout.XXXXXX)
trap '[ $ours = no ] || tests/cluster/cluster.sh down >/dev/null 2>&1 || true; purge_debs || true; rm -rf "$tmp_tree"' EXIT
if ! command -v git >/dev/null 2>&1 || ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	summaries+=("cluster under /tmp: 0 passed, 0 failed, 1 skipped (not a git checkout: nothing to copy)")
	total_s=$((total_s + 1))
elif ! (git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$tmp_tree" &&
	cd "$tmp_tree" && scripts/build.sh) >"$top/tmp-tree-build.out" 2>&1; then
	tail -n 30 "$top/tmp-tree-build.out" >&2
	summaries+=("cluster under /tmp: 0 passed, 1 failed, 0 skipped (the copy in $tmp_tree did not build: tmp-tree-build.out)")
	total_f=$((total_f + 1))
else
	release="$(slurmd -V | awk '{print $2}') (Debian, from $tmp_tree)" rel_p=0 rel_f=0 rel_s=0 rel_k=0
	mode=tree tree=$tmp_tree test_env=(PATH="$tmp_tree:$tmp_tree/sbatch-templates:$PATH")
	TT_TESTS_EXCLUDE=cfg_oci_ cluster_run "job_container/tmpfs, checkout under /tmp" cfg_ --nodes 2 --job-container --plugin "$tmp_tree/.libs/train_topo.so"
	tree=$top
	summaries+=("cluster under /tmp: $rel_p passed, $rel_f failed, $rel_s skipped, $rel_k known failures")
	total_p=$((total_p + rel_p)) total_f=$((total_f + rel_f)) total_s=$((total_s + rel_s)) total_k=$((total_k + rel_k))
fi
rm -rf "$tmp_tree"

echo "== summary"
[ "$mainjob_rc" -eq 0 ] || echo "FAIL: scripts/main-job.sh (exit $mainjob_rc; main-job.out)"
[ "$distcheck_rc" -eq 0 ] || echo "FAIL: make distcheck (exit $distcheck_rc; make-distcheck.out)"
printf '%s\n' "${summaries[@]}"
echo "cluster: $total_p passed, $total_f failed, $total_s skipped, $total_k known failures (releases: ${releases[*]})"
[ "$total_f" -eq 0 ] && [ "$fuzz_rc" -eq 0 ] && [ "$distcheck_rc" -eq 0 ] && [ "$mainjob_rc" -eq 0 ]
