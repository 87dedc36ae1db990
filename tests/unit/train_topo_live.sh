#!/bin/sh
# SPDX-License-Identifier: MIT
# train_topo_live.sh — train-topo's live discovery of this machine against hwloc's own tools
# (Debian hwloc-nox): the CPUs (PUs) it reports equal hwloc-calc's, its NUMA nodes and each one's
# CPUs equal hwloc-calc's, and its PCI devices (bus id, vendor:device, class) are lstopo's PCI
# devices (both keep the "important" I/O objects: GPUs, NICs, storage, ...). train-topo reports
# no cores, so cores are not compared. An export of this machine read with --input has the PCIe
# links live discovery has (max_link_* from this /sys for the bus ids it shares, not hwloc's
# current state), and --virtual-switches is applied or refused as the CPU's hypervisor flag says.
# SKIP (77) without hwloc's tools or python3.
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
# The same machine as an export: links from this /sys, as NCCL here reads them.
lstopo-no-graphics --of xml "$tmp/here.xml"
links='print("\n".join(sorted("%s %.1f x%d" % (d["busid"], d["link_gts"], d["link_width"]) for d in t["pci"] if d["busid"])))'
field "$links" >"$tmp/links-live.txt"
"$bin" json --input "$tmp/here.xml" >"$tmp/topo.json" 2>/dev/null || { echo "FAIL - train-topo json --input (this machine's export)"; exit 1; }
field "$links" >"$tmp/links-export.txt"
same "PCIe links of this machine's export (max_link_* from $(grep -c ' [1-9][0-9.]* x' "$tmp/links-live.txt") known links)" \
	"$(xargs <"$tmp/links-export.txt")" "$(xargs <"$tmp/links-live.txt")"
# x86 only: elsewhere /proc/cpuinfo has no flags line and DMI or the PCI tree decide.
if grep -q '^flags' /proc/cpuinfo; then
	if grep '^flags' /proc/cpuinfo | grep -qw hypervisor; then vm=0; else vm=1; fi
	"$bin" show --virtual-switches >/dev/null 2>"$tmp/vs.err"
	same "--virtual-switches as the hypervisor flag says (0 VM, 1 refused)" "$?" "$vm"
	[ "$vm" = 0 ] || same "refusal names the flag" "$(grep -c 'hypervisor flag in /proc/cpuinfo is clear' "$tmp/vs.err")" 1
fi
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "train_topo_live: CPUs, NUMA nodes and PCI devices agree with hwloc's tools"
