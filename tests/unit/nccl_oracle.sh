#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nccl_oracle.sh — the NCCL topology files train-topo writes, judged by NCCL 2.28.9's own code
# (../shared/tools/nccl-topo-check): for every NVIDIA machine among the shared hwloc exports, plain
# and with --virtual-switches, NCCL must accept the file, derive for every GPU-GPU and GPU-NIC pair
# the path type `train-topo show` prints (its NODE is NCCL's PHB, its NV# NCCL's NVL), and turn
# GPUDirect RDMA on exactly where its default level (PXB) allows, and with NCCL_NET_GDR_LEVEL=PIX
# exactly for the PIX pairs. NCCL_PXN_DISABLE=1 keeps NCCL from routing a GPU to a far NIC through
# an NVLink peer (PXN), which would hide the PCIe path the file describes; the run with the
# default settings (and merged NICs) checks acceptance. Skips (77) without ../shared, root (or user namespaces) or a C++
# compiler, since the checker hides this host's PCI tree in a mount namespace.
# The same for the project's own fixtures (tests/fixtures/topo), so the key claims do not depend
# on ../shared's exports: a real PCIe switch, NVSwitches, a cloud VM with virtual switches, and
# EFA NICs without PCIe link data, also under a net plugin whose names differ from the file's.
# Issue 30: --virtual-switches is refused on every bare-metal machine (all shared exports, the
# switch and NVSwitch fixtures, a g4dn.metal-like one) and applies on VMs (also a q35 guest that
# only DMI names); the g4dn.metal-like export with an idle root port (2.5 GT/s x8 recorded above a
# Gen3 x16 T4) gives NCCL the paths its true max_link_* give (sysfs-metal): PHB, 12 GB/s, no P2P.
# Scenarios are the checker's own examples, used as the physical devices (without `opt vnic`; a
# run with it checks acceptance of merged NICs), the DGX-2 one with the 6 NVLinks per GPU a real
# DGX-2 reports; for the fixtures they are written from the fixture (GPU bus ids, HCA names, bus
# ids and GUIDs as `train-topo json` reads them: what NVML and the net plugin would report).
# usage: nccl_oracle.sh [-v]   (-v: print every compared pair)
set -u
src=${TT_TEST_SRCDIR:-.}
shared=${TT_SHARED_DIR:-$src/../shared}
bin=${TRAIN_TOPO:-./train-topo}
verbose=${1:-}
tool=$shared/tools/nccl-topo-check
exports=$shared/topologies/hwloc

skip() { echo "SKIP: $*"; exit 77; }
[ -x "$tool/check.sh" ] || skip "no NCCL topology checker at $tool (../shared absent)"
[ -d "$exports" ] || skip "no hwloc exports at $exports"
fixtures=$src/tests/fixtures/topo
command -v python3 >/dev/null || skip "python3 not installed"
command -v "${CXX:-g++}" >/dev/null || skip "no C++ compiler to build the checker"
if [ "$(id -u)" = 0 ]; then
	unshare -m true 2>/dev/null || skip "unshare -m fails here (a container without CAP_SYS_ADMIN?)"
else
	unshare -r -m true 2>/dev/null || skip "not root and no unprivileged user namespaces: the checker cannot hide this host's PCI tree"
fi

tmp=$(mktemp -d /tmp/tt-oracle.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The checker's build is kept in the build tree between runs (it rebuilds only when needed).
export NCCL_TOPO_CHECK_BUILD=${NCCL_TOPO_CHECK_BUILD:-$PWD/tests/unit/nccl-topo-check.build}
# NCCL's code reads NCCL_* from the environment: only the settings this test gives.
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
build_out=$("$tool/build.sh" 2>&1) || {
	rc=$?
	[ $rc -eq 2 ] && skip "the checker cannot be built here: $(echo "$build_out" | tail -n 1)"
	echo "$build_out"; echo "FAIL - building the checker"; exit 1
}

# export:scenario (in the checker's examples/, or written below):change to it:GPU-NIC pairs that
# share a PCIe switch (GDR on under NCCL_NET_GDR_LEVEL=PIX), plain:the same with virtual switches
# ('-': bare metal, where train-topo must refuse them).
# The pair counts are what the machines are known to have (cts1: both P100s and the ConnectX-5
# behind one PLX switch; the fixtures: by design), not what train-topo says.
machines="cts1-pascal:cts1-pascal::2:- nvidiaDGX2:nvidiaDGX2:nvlinks6:0:- coral-lassen:coral-lassen::0:-
32em64t-2n8c2t-pci-wholeio:32em64t-2n8c2t-pci-wholeio::0:- 32em64t-2n8c2t-pci-normalio:32em64t-2n8c2t-pci-wholeio::0:-
24em64t-2n6c2t-pci:24em64t-2n6c2t-pci::0:- power8gpudistances:power8gpudistances::0:-
64intel64-3g2n+2n-irregulargroups+pci:64intel64-quadro::0:-"
# fixture:change:pairs plain:pairs with virtual switches (scenario written from the fixture)
fixture_machines="dual-pcie-8gpu::12:- hgx-nvswitch-8gpu:nvlinks18:8:- cloud-vm-8gpu::0:16
cloud-efa-vm::0:4 cloud-efa-vm:rdm:0:4 metal-t4-downtrained::0:- kvm-q35-2gpu::0:2"
# The checker has no example for this one: two Quadro K4000 (10de:11ba, sm 30) of unknown NUMA node.
mkdir -p "$tmp/examples"
printf 'gpu 0002:01:00.0 30 0\ngpu 0004:01:00.0 30 0\n' >"$tmp/examples/64intel64-quadro.scn"
failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }

# Every export with an NVIDIA GPU (README's rule: PCI class 0x03xx, vendor 0x10de) is covered.
for f in "$exports"/*.xml; do
	name=$(basename "$f" .xml)
	grep -q 'pci_type="03[0-9a-f][0-9a-f] \[10de:' "$f" || continue
	case " $(echo $machines) " in *" $name:"*) ;; *) fail "$name has NVIDIA GPUs but no scenario here" ;; esac
done

# scenario.py MODEL_JSON [rdm]: a scenario for a fixture: its GPUs (sm 90) and its usable HCAs as
# NCCL's IB plugin reports them (GDR capable); rdm: named as a plugin that appends "-rdm" would.
cat >"$tmp/scenario.py" <<'EOF'
import json, sys
model = json.load(open(sys.argv[1]))
suffix = "-rdm" if sys.argv[2:] == ["rdm"] else ""
for g in model["gpus"]:
    print("gpu %s 90 0" % g["busid"])
for h in model["hcas"]:
    ports = h["ports"]
    if h["busid"] is None or (ports and not any(p["active"] for p in ports)):
        continue
    rate = max([p["rate_mbps"] for p in ports] + [0]) or 100000
    dom, bus = h["busid"].split(":")[:2]
    print("net %s%s /devices/pci%s:%s/%s %d 1 %s 3" % (h["name"], suffix, dom, bus, h["busid"], rate,
                                                   h["sys_image_guid"]))
EOF

# compare.py SHOW_JSON SHOW_TEXT SCENARIO CHECK_OUTPUT GDR_LEVEL: checks the pairs, prints a summary.
cat >"$tmp/compare.py" <<'EOF'
import json, re, sys
model = json.load(open(sys.argv[1]))
show = open(sys.argv[2]).read().splitlines()
scn = [l.split() for l in open(sys.argv[3]) if l.strip() and not l.startswith("#")]
out = open(sys.argv[4]).read().splitlines()
gdr_level, verbose = sys.argv[5], sys.argv[6] == "-v"
gpus = [l for l in scn if l[0] == "gpu"]
nets = [l for l in scn if l[0] == "net"]
cuda = {g["busid"]: "GPU%d" % g["cuda_index"] for g in model["gpus"]}
# a net the file does not name is the HCA at the bus id of its PCI path (NCCL places it there)
names = [h["name"] for h in model["hcas"]]
hca_at = {h["busid"]: h["name"] for h in model["hcas"] if h["busid"]}
net_label = lambda n: n[1] if n[1] in names else hca_at[n[2].split("/")[-1]]
# the show matrix: header row of column labels, then one row per label
rows, cols = {}, None
for line in show:
    f = line.split()
    if cols is None and "CPU Affinity" in line and "NUMA Affinity" in line:
        cols = f[:f.index("CPU")]
    elif cols and f and f[0] in cols and len(f) > len(cols):
        rows[f[0]] = dict(zip(cols, f[1:1 + len(cols)]))
nccl_type = lambda t: "PHB" if t == "NODE" else ("NVL" if t.startswith("NV") else t)
order = ["LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"]
bad = checked = gdr_on = notes = 0
for line in out:
    m = re.match(r"path GPU(\d+) (NET|GPU)(\d+) (\S+) bw=\S+ (gdr|p2p)=(\S+)", line)
    if not m:
        continue
    a = cuda[gpus[int(m.group(1))][1]]
    if m.group(2) == "GPU":
        b = cuda[gpus[int(m.group(3))][1]]
    elif int(m.group(3)) < len(nets):
        b = net_label(nets[int(m.group(3))])
    else:
        continue  # a merged (virtual) NIC: acceptance only
    want = rows[a][b]
    if want.startswith("NV") and m.group(2) == "GPU" and \
            (int(gpus[int(m.group(1))][3]) == 0 or int(gpus[int(m.group(3))][3]) == 0):
        notes += 1  # NVLinks come from NVML; the checker's fake NVML cannot describe direct links
        if verbose: print("  note %s-%s: show %s, not checkable (direct NVLink)" % (a, b, want))
        continue
    checked += 1
    expect = nccl_type(want)
    if m.group(5) == "gdr":
        expect_on = order.index(expect) <= order.index(gdr_level)
        # Without GPUDirect RDMA NCCL routes a PIX/PXB pair through the CPU: its path says PHB.
        if not expect_on and order.index(expect) < order.index("PHB"):
            expect = "PHB"
        on = m.group(6) != "none"
        gdr_on += on
        ok = expect == m.group(4) and on == expect_on
    else:
        ok = expect == m.group(4)
    if verbose or not ok:
        print("  %s %s-%s: show %s, NCCL %s %s=%s" % ("ok" if ok else "MISMATCH", a, b, want,
              m.group(4), m.group(5), m.group(6)))
    bad += not ok
print("pairs=%d mismatches=%d gdr_on=%d unchecked_nvlink=%d" % (checked, bad, gdr_on, notes))
sys.exit(1 if bad or checked == 0 else 0)
EOF

# check NAME INPUT SCENARIO PIX_PAIRS PIX_PAIRS_VS: one machine, plain and with virtual switches.
check() {
	local name=$1 input=$2 scn=$3 what vs level rc summary ngpu nnet pix
	ngpu=$(grep -c '^gpu ' "$scn"); nnet=$(grep -c '^net ' "$scn")
	for vs in "" --virtual-switches; do
		what="$name${vs:+ $vs}"
		pix=$4; [ -z "$vs" ] || pix=$5
		if [ -n "$vs" ] && [ "$pix" = - ]; then
			# Bare metal: NCCL reads the real tree; one line, exit 1, no file.
			rm -f "$tmp/topo.xml"
			if "$bin" nccl-xml --input "$input" $vs -o "$tmp/topo.xml" 2>"$tmp/err" ||
			   [ "$(wc -l <"$tmp/err")" -ne 1 ] || [ -e "$tmp/topo.xml" ] ||
			   ! grep -q '^train-topo: --virtual-switches: .* is not a virtual machine (' "$tmp/err"; then
				fail "$what: bare metal, yet not refused with one line: $(cat "$tmp/err")"
			else
				echo "ok - $what: refused on bare metal ($(sed 's/.*not a virtual machine (\([^)]*\)).*/\1/' "$tmp/err"))"
			fi
			continue
		fi
		if ! "$bin" nccl-xml --input "$input" $vs -o "$tmp/topo.xml" 2>"$tmp/err" ||
		   ! "$bin" json --input "$input" $vs >"$tmp/model.json" 2>>"$tmp/err" ||
		   ! "$bin" show --input "$input" $vs >"$tmp/show.txt" 2>>"$tmp/err"; then
			fail "$what: train-topo failed: $(cat "$tmp/err")"; continue
		fi
		for level in PXB PIX; do
			NCCL_NET_GDR_LEVEL=$level NCCL_PXN_DISABLE=1 "$tool/check.sh" "$scn" "$tmp/topo.xml" \
				>"$tmp/out" 2>"$tmp/log"
			rc=$?
			if [ $rc -ne 0 ] || ! grep -qx "result accepted gpus=$ngpu nets=$nnet" "$tmp/out"; then
				fail "$what: NCCL did not accept the file as $ngpu GPUs and $nnet NICs (exit $rc): $(grep -E '^(warn|result)' "$tmp/out" | tr '\n' ' ')"
				continue 2
			fi
			if summary=$(python3 "$tmp/compare.py" "$tmp/model.json" "$tmp/show.txt" "$scn" "$tmp/out" $level "$verbose"); then
				echo "ok - $what (GDR level $level): accepted, $(echo "$summary" | tail -n 1)"
			else
				echo "$summary"; fail "$what (GDR level $level): NCCL's paths differ from train-topo show"
			fi
			[ $level = PXB ] || [ "$(echo "$summary" | sed -n 's/.* gdr_on=\([0-9]*\) .*/\1/p')" = "$pix" ] ||
				fail "$what: GDR on for $(echo "$summary" | sed -n 's/.* gdr_on=\([0-9]*\) .*/\1/p') GPU-NIC pairs at level PIX, the machine has $pix behind a shared switch"
		done
		# Default settings, and NCCL's IB plugin merging the ports of a NIC: still accepted.
		cp "$scn" "$tmp/vnic.scn"; echo "opt vnic" >>"$tmp/vnic.scn"
		"$tool/check.sh" "$tmp/vnic.scn" "$tmp/topo.xml" >"$tmp/out" 2>"$tmp/log" &&
			grep -q '^result accepted' "$tmp/out" || fail "$what: rejected with merged NICs (opt vnic)"
	done
}

for entry in $machines; do
	IFS=: read -r name scn change pix pix_vs <<<"$entry"
	scn_file=$tool/examples/$scn.scn
	[ -f "$scn_file" ] || scn_file=$tmp/examples/$scn.scn
	sed -e '/^opt vnic/d' "$scn_file" >"$tmp/$name.scn"
	[ "$change" = nvlinks6 ] && sed -i -e 's/^\(gpu [^ ]* [0-9]*\) 0$/\1 6/' "$tmp/$name.scn"
	check "$name" "$exports/$name.xml" "$tmp/$name.scn" "$pix" "$pix_vs"
done
for entry in $fixture_machines; do
	IFS=: read -r name change pix pix_vs <<<"$entry"
	"$bin" json --input "$fixtures/$name.xml" >"$tmp/fixture.json" 2>/dev/null &&
		python3 "$tmp/scenario.py" "$tmp/fixture.json" $change >"$tmp/$name.scn" ||
		{ fail "$name: cannot write its scenario"; continue; }
	[ "$change" = nvlinks18 ] && sed -i -e 's/^\(gpu [^ ]* [0-9]*\) 0$/\1 18/' "$tmp/$name.scn"
	check "fixture $name${change:+ ($change)}" "$fixtures/$name.xml" "$tmp/$name.scn" "$pix" "$pix_vs"
done

# The idle-downtrained export against the machine's true max_link_* (sysfs-metal): the same paths,
# bandwidths, GDR and P2P decisions, and those of Gen3 x16 (12 GB/s) on a PHB tree without P2P.
metal=$fixtures/metal-t4-downtrained.xml
for how in export sysfs; do
	if [ $how = export ]; then
		"$bin" nccl-xml --input "$metal" -o "$tmp/metal-$how.xml" 2>/dev/null
	else
		"$bin" nccl-xml --input "$metal" --sysfs-root "$fixtures/sysfs-metal" -o "$tmp/metal-$how.xml"
	fi || { fail "metal-t4-downtrained ($how): train-topo failed"; continue; }
	"$tool/check.sh" "$tmp/metal-t4-downtrained.scn" "$tmp/metal-$how.xml" 2>/dev/null |
		grep -E '^(path|result) ' >"$tmp/metal-$how.out"
done
if ! cmp -s "$tmp/metal-export.out" "$tmp/metal-sysfs.out"; then
	fail "metal-t4-downtrained: NCCL's paths from the export differ from those of the true values: $(diff "$tmp/metal-sysfs.out" "$tmp/metal-export.out" | tr '\n' ' ')"
elif [ "$(grep -c ' PHB bw=12.0 ' "$tmp/metal-export.out")" -ne 4 ] ||
     [ "$(grep -c '^path GPU[01] GPU[01] PHB bw=12.0 p2p=no$' "$tmp/metal-export.out")" -ne 2 ]; then
	fail "metal-t4-downtrained: not 4 PHB paths at 12 GB/s with P2P off: $(tr '\n' ' ' <"$tmp/metal-export.out")"
else
	echo "ok - metal-t4-downtrained: the export gives NCCL the true values' paths ($(grep -c '^path' "$tmp/metal-export.out") pairs, PHB, 12 GB/s, no P2P)"
fi
exit $((failures > 0))
