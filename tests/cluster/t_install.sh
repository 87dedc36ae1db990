# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_install.sh — which traintopo the cluster runs: the plugin slurmstepd loaded is the one
# plugstack.conf names, and with TT_INSTALLED=1 (scripts/test.sh, after installing the .debs) the
# plugin, its snippet, the commands and the templates are the installed packages' files.

# pkg_file PACKAGE REGEX: the one file of an installed package whose path matches REGEX.
pkg_file() {
	local files
	files=$(dpkg-query -L "$1" 2>/dev/null | grep -E "$2" || true)
	[ "$(echo "$files" | grep -c .)" = 1 ] || { fail "package $1: not one file matching $2 (got: ${files:-none})"; return 1; }
	echo "$files"
}

# The train_topo.so plugstack.conf loads: its required line, or the one of the snippet it includes.
plugstack_plugin() {
	local conf=$TT_CLUSTER_DIR/etc/plugstack.conf
	if [ "$(awk '{print $1; exit}' "$conf")" = include ]; then conf=$(awk '{print $2; exit}' "$conf"); fi
	awk '$1 !~ /^#/ && $2 ~ /train_topo\.so$/ { print $2; exit }' "$conf"
}

test_installed_plugin_and_commands_are_what_runs() {
	local plugin
	plugin=$(plugstack_plugin)
	[ -n "$plugin" ] || fail "plugstack.conf loads no train_topo.so: $(cat "$TT_CLUSTER_DIR/etc/plugstack.conf")"
	# A task's parent is its slurmstepd: the plugin it mapped is the one that ran.
	srun -N2 --ntasks-per-node=1 --train-topo=env bash -c 'echo "$(hostname)" \
		"$(grep -o "/[^ ]*train_topo\.so" /proc/$PPID/maps | sort -u | xargs)" \
		"$(command -v train-run)" "$(command -v train-topo)" "$(command -v train-mlp)"' >out.txt
	cat out.txt
	echo "plugstack.conf: $(cat "$TT_CLUSTER_DIR/etc/plugstack.conf")"
	expect_eq "nodes" "node1 node2" "$(awk '{print $1}' out.txt | sort | xargs)"
	expect_eq "plugin slurmstepd loaded, on each node" "$plugin $plugin" "$(awk '{print $2}' out.txt | xargs)"
	[ "${TT_INSTALLED:-0}" = 1 ] || return 0

	local snippet run topo mlp
	snippet=$(pkg_file traintopo-slurm-plugin '/plugstack\.conf\.d/[^/]*\.conf$')
	expect_eq "plugstack.conf" "include $snippet" "$(cat "$TT_CLUSTER_DIR/etc/plugstack.conf")"
	expect_eq "plugin, the package's" "$(pkg_file traintopo-slurm-plugin '/train_topo\.so$')" "$plugin"
	run=$(pkg_file traintopo '/bin/train-run$')
	topo=$(pkg_file traintopo '/bin/train-topo$')
	mlp=$(pkg_file traintopo-trainer '/bin/train-mlp$')
	expect_eq "train-run, train-topo, train-mlp on the nodes" "$run $topo $mlp $run $topo $mlp" \
		"$(awk '{print $3, $4, $5}' out.txt | xargs)"
	expect_eq "train-run, train-topo, train-mlp here" "$run $topo $mlp" \
		"$(command -v train-run) $(command -v train-topo) $(command -v train-mlp)"
	expect_eq "templates the tests submit" "$(dirname "$(pkg_file traintopo '/sbatch-templates/job\.sh$')")" \
		"${TT_TEMPLATES:-}"
	# The installed files are the packages' own (dpkg's md5sums): the plugin, the snippet (no probe=
	# argument in it, so the plugin runs the train-topo it was built for: the package's), the commands.
	local changed
	changed=$(dpkg --verify traintopo-slurm-plugin traintopo traintopo-trainer libtrainrt0 2>&1 || true)
	expect_eq "files changed since installed (dpkg --verify)" "" "$changed"
	if grep -v '^#' "$snippet" | grep -q 'probe='; then fail "$snippet names a probe: $(cat "$snippet")"; fi
}
