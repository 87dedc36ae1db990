#!/bin/sh
# SPDX-License-Identifier: MIT
# train_topo_live.sh — train-topo's live discovery of this machine against hwloc's own tools
# (Debian hwloc-nox): the CPUs (PUs) it reports equal hwloc-calc's, its NUMA nodes and each one's
# CPUs equal hwloc-calc's, and its PCI devices (bus id, vendor:device, class) are lstopo's PCI
# devices (both keep the "important" I/O objects: GPUs, NICs, storage, ...). train-topo reports
# no cores, so cores are not compared. SKIP (77) without hwloc's tools or python3.
set -u
bin=./train-topo
PYTHON=${PYTHON:-/usr/bin/python3}
for t in hwloc-calc lstopo-no-graphics; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: $t missing: apt-get install hwloc-nox (scripts/install-deps.sh)"; exit 77; }
done
command -v "$PYTHON" >/dev/null 2>&1 || { echo "SKIP: $PYTHON missing (it reads train-topo's JSON)"; exit 77; }
tmp=$(mktemp -d /tmp/tt-topo-live.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
same() { # same WHAT TRAIN-TOPO HWLOC
	if [ "$2" = "$3" ]; then echo "ok - $1: $2"; else echo "FAIL - $1: train-topo '$2', hwloc '$3'"; failures=$((failures + 1)); fi
}
# cpus LIST: "0-2,5" or "0,1,2,5" -> one CPU per line
cpus() { echo "$1" | tr ',' '\n' | awk -F- 'NF { for (i = $1; i <= (NF > 1 ? $2 : $1); i++) print i }'; }

"$bin" json >"$tmp/topo.json" || { echo "FAIL - train-topo json"; exit 1; }
"$bin" show >"$tmp/show.txt" || { echo "FAIL - train-topo show"; exit 1; }
field() { "$PYTHON" -c "import json, sys; t = json.load(open('$tmp/topo.json')); $1"; }

same "CPUs (PUs)" "$(cpus "$(field 'print(t["cpus"])')" | xargs)" "$(cpus "$(hwloc-calc --physical-output --intersect pu all)" | xargs)"
same "number of CPUs" "$(cpus "$(field 'print(t["cpus"])')" | wc -l)" "$(hwloc-calc --number-of pu all)"
same "NUMA nodes" "$(field 'print(len(t["numa"]))')" "$(hwloc-calc --number-of numanode all)"
same "NUMA nodes in train-topo show" "$(grep -c '^  node [0-9]*: CPUs ' "$tmp/show.txt")" "$(hwloc-calc --number-of numanode all)"
for os in $(field 'print(" ".join(str(n["os_index"]) for n in t["numa"]))'); do
	same "CPUs of NUMA node $os" "$(cpus "$(field "print([n['cpus'] for n in t['numa'] if n['os_index'] == $os][0])")" | xargs)" \
		"$(cpus "$(hwloc-calc -p --intersect pu "numa:$os")" | xargs)"
done
# PCI devices as "busid vendor:device class(4 hex digits)", sorted.
field 'print("\n".join(sorted("%s %s:%s %s" % (d["busid"], d["vendor"][2:], d["device"][2:], d["class"][2:6])
	for d in t["pci"] if d["kind"] == "device")))' >"$tmp/ours.txt"
lstopo-no-graphics -v --only pcidev |
	sed -n 's/.*busid=\([^ ]*\) id=\([0-9a-f:]*\) class=\([0-9a-f]*\).*/\1 \2 \3/p' | sort >"$tmp/hwloc.txt"
same "PCI devices" "$(xargs <"$tmp/ours.txt")" "$(xargs <"$tmp/hwloc.txt")"
same "number of PCI devices" "$(wc -l <"$tmp/ours.txt")" "$(wc -l <"$tmp/hwloc.txt")"
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "train_topo_live: CPUs, NUMA nodes and PCI devices agree with hwloc's tools"
