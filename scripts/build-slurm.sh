#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-slurm.sh — builds a Slurm release from the source tarballs in ../shared/vendor/slurm into a
# private prefix (cached on this machine, keyed by the tarball's sha256 and the build options), then
# builds traintopo's SPANK plugin against it in a copy of this checkout, with the copy's train-topo
# (the plugin's probe, which cluster.sh finds beside a build tree's plugin), so the test cluster can
# run that release. Exit 77 (and a SKIP line) when the tarball is not there, as in a plain clone.
#
# usage: build-slurm.sh RELEASE          (RELEASE: 26.05.3, 24.11.7)
# prints: prefix=DIR (Slurm), plugin=PATH (train_topo.so built against it), builddir=DIR
# env:    TT_SHARED (default ../shared), TT_SLURM_CACHE (default /var/cache/traintopo)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
release=${1:?usage: build-slurm.sh RELEASE (e.g. 26.05.3)}
case $release in
*[!0-9.]* | *..* | .* | *.) echo "build-slurm: '$release' is not a release number like 26.05.3" >&2; exit 2 ;;
esac
shared=${TT_SHARED:-$top/../shared}
cache=${TT_SLURM_CACHE:-/var/cache/traintopo}
tarball=$shared/vendor/slurm/slurm-${release//./-}-1.tar.xz
if [ ! -f "$tarball" ]; then
	echo "SKIP: Slurm $release: no source tarball $tarball (../shared is absent from this checkout)"
	exit 77
fi

# What goes into the cache key: change either and a new prefix is built beside the old one.
pmix_dir=/usr/lib/x86_64-linux-gnu/pmix2
# --with-json: slurmstepd parses and writes an OCI bundle's config.json with serializer/json, so
# without json-c `srun --container` fails (cluster.sh up --oci, t_containers.sh).
slurm_configure=(--with-munge --with-pmix="$pmix_dir" --with-json=/usr --without-nvml
	--disable-slurmrestd --disable-x11)
[ -d "$pmix_dir" ] || { echo "build-slurm: $pmix_dir missing: apt-get install libpmix-dev" >&2; exit 1; }
[ -f /usr/include/munge.h ] || { echo "build-slurm: munge.h missing: apt-get install libmunge-dev" >&2; exit 1; }
[ -f /usr/include/json-c/json.h ] || { echo "build-slurm: json-c/json.h missing: apt-get install libjson-c-dev" >&2; exit 1; }
key=$( { sha256sum <"$tarball" | cut -d' ' -f1; echo "${slurm_configure[*]}"; } | sha256sum | cut -c1-12)
prefix=$cache/slurm-$release-$key

mkdir -p "$cache"
exec 9>"$cache/.slurm-$release.lock"
flock 9
if [ -f "$prefix/.complete" ]; then
	echo "build-slurm: Slurm $release cached in $prefix" >&2
else
	echo "build-slurm: building Slurm $release into $prefix (a few minutes, once per machine)" >&2
	rm -rf "$prefix"
	work=$(mktemp -d "$cache/build-$release.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	tar -xJf "$tarball" -C "$work" --strip-components=1
	start=$SECONDS
	(
		cd "$work"
		./configure --prefix="$prefix" --sysconfdir="$prefix/etc" "${slurm_configure[@]}" >configure.out 2>&1 ||
			{ tail -n 30 configure.out; exit 1; }
		make -j"$(nproc)" >make.out 2>&1 || { tail -n 40 make.out; exit 1; }
		make install >install.out 2>&1 || { tail -n 40 install.out; exit 1; }
	) >&2 || { echo "build-slurm: building Slurm $release failed (output above)" >&2; rm -rf "$prefix"; exit 1; }
	for plugin in auth_munge cred_munge mpi_pmix cgroup_v1 proctrack_cgroup task_cgroup serializer_json; do
		[ -f "$prefix/lib/slurm/$plugin.so" ] ||
			{ echo "build-slurm: $prefix lacks $plugin.so" >&2; rm -rf "$prefix"; exit 1; }
	done
	touch "$prefix/.complete"
	echo "build-slurm: Slurm $release built in $((SECONDS - start)) s" >&2
fi
flock -u 9

# The plugin, in a copy of the tracked files (configure refuses a second, out-of-tree build beside
# a configured source tree), rebuilt from scratch only when the copy's configure inputs change.
builddir=$top/build/slurm-$release
mkdir -p "$builddir"
(cd "$top" && git ls-files -z | xargs -0 tar -cf -) | tar -xf - -C "$builddir"
(
	cd "$builddir"
	if [ ! -f Makefile ] || ! grep -q -- "--with-slurm=$prefix" config.status 2>/dev/null ||
		[ configure.ac -nt configure ]; then
		autoreconf -fi >autoreconf.out 2>&1 || { cat autoreconf.out; exit 1; }
		./configure --with-slurm="$prefix" --without-cuda >configure.out 2>&1 ||
			{ tail -n 30 configure.out; exit 1; }
	fi
	make -j"$(nproc)" train_topo.la train-topo >make.out 2>&1 || { tail -n 40 make.out; exit 1; }
) >&2 || { echo "build-slurm: building the plugin against Slurm $release failed (output above)" >&2; exit 1; }
grep -q "^#define TT_SLURM_VERSION $(printf '%d' "$(sed -n 's/^#define SLURM_VERSION_NUMBER *//p' "$prefix/include/slurm/slurm_version.h")")$" "$builddir/config.h" ||
	{ echo "build-slurm: $builddir was not configured against $prefix" >&2; exit 1; }
echo "prefix=$prefix"
echo "plugin=$builddir/.libs/train_topo.so"
echo "builddir=$builddir"
