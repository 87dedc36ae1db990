#!/bin/sh
# SPDX-License-Identifier: MIT
# train_topo_cli.sh — the train-topo command's contract: exit codes, errors naming the input on
# stderr with the command's prefix, atomic -o (no partial or clobbered file, nothing but a regular
# file replaced, '-' for standard output), warnings for what it cannot use, each output form, and
# broken exports (one that crashes libhwloc, bad CPU sets, hwloc 3.x) refused with one line.
# Issue 30: an idle-downtrained link in an export written as NCCL reads it on the machine (the
# same file as from its max_link_*), --virtual-switches refused on bare metal with one line, and a
# node with no NVIDIA GPU and no RDMA NIC: exit 3, one warning, no file.
set -u
src=${TT_TEST_SRCDIR:-.}
fx=$src/tests/fixtures/topo
bin=./train-topo
tmp=$(mktemp -d /tmp/tt-topo-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

check() { # check DESCRIPTION COMMAND...: COMMAND must succeed
	desc=$1; shift
	if "$@"; then echo "ok - $desc"; else echo "FAIL - $desc"; failures=$((failures + 1)); fi
}
run() { # run EXPECTED_RC ARGS...: output in $tmp/out, $tmp/err
	want=$1; shift
	"$bin" "$@" >"$tmp/out" 2>"$tmp/err"
	test $? -eq "$want"
}

check "--help exits 0 and lists the commands" sh -c "$bin --help | grep -q 'show|nccl-xml|json|env'"
check "--version names the program" sh -c "$bin --version | grep -q '^train-topo '"
check "unknown command exits 2" run 2 frobnicate
check "--local-rank needs a number" run 2 env --local-rank x
check "missing input exits 1" run 1 nccl-xml --input "$tmp/none.xml"
check "error names the file, with the prefix" grep -q "^train-topo: .*$tmp/none.xml" "$tmp/err"
check "nothing on stdout after an error" test ! -s "$tmp/out"

check "-o writes the file" run 0 nccl-xml --input "$fx/dual-pcie-8gpu.xml" -o "$tmp/topo.xml"
check "file is NCCL XML" grep -q '^<system version="1">$' "$tmp/topo.xml"
check "no temporary file left" test -z "$(find "$tmp" -mindepth 1 -maxdepth 1 -name '*tmp*')"
cp "$tmp/topo.xml" "$tmp/before.xml"
check "bad input keeps the old output intact" run 1 nccl-xml --input "$tmp/none.xml" -o "$tmp/topo.xml"
check "old output unchanged" cmp -s "$tmp/topo.xml" "$tmp/before.xml"
check "unwritable output exits 1" run 1 json --input "$fx/dual-pcie-8gpu.xml" -o "$tmp/no/such/dir.json"
check "unwritable output is named" grep -q "$tmp/no/such/dir.json" "$tmp/err"
check "missing sysfs entry exits 1" run 1 show --input "$fx/dual-pcie-8gpu.xml" --sysfs-root "$fx/sysfs-missing-rate"
check "missing sysfs entry is named" grep -q 'ports/1/rate' "$tmp/err"

check "-o - writes standard output" run 0 nccl-xml --input "$fx/dual-pcie-8gpu.xml" -o -
check "-o - output is the file" cmp -s "$tmp/out" "$tmp/topo.xml"
check "-o - makes no file named -" test ! -e ./- -a ! -e "$tmp/-"
mkfifo "$tmp/fifo"; mkdir "$tmp/dir"; ln -s "$tmp/topo.xml" "$tmp/link"
check "-o refuses a FIFO" run 1 nccl-xml --input "$fx/dual-pcie-8gpu.xml" -o "$tmp/fifo"
check "FIFO named in the error" grep -q "^train-topo: '$tmp/fifo' is a FIFO, not a regular file" "$tmp/err"
check "FIFO still there" test -p "$tmp/fifo"
check "-o refuses a directory" run 1 json --input "$fx/dual-pcie-8gpu.xml" -o "$tmp/dir"
check "-o refuses a symbolic link" run 1 json --input "$fx/dual-pcie-8gpu.xml" -o "$tmp/link"
check "link still a link to the old file" sh -c "test -L '$tmp/link' && cmp -s '$tmp/topo.xml' '$tmp/before.xml'"

check "env for local rank 2" run 0 env --local-rank 2 --input "$fx/dual-pcie-8gpu.xml" --sysfs-root "$fx/sysfs-dual"
check "env NCCL_IB_HCA: the node's usable HCAs" grep -qx 'NCCL_IB_HCA==mlx5_0:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1' "$tmp/out"
check "env NCCL_IB_HCA the same for rank 7" sh -c "$bin env --local-rank 7 --input '$fx/dual-pcie-8gpu.xml' --sysfs-root '$fx/sysfs-dual' | grep -qx 'NCCL_IB_HCA==mlx5_0:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1'"
check "env CPU list" grep -qx 'TRAIN_CPU_LIST=0-15' "$tmp/out"
check "env takes the rank from SLURM_LOCALID" sh -c "SLURM_LOCALID=6 $bin env --input '$fx/dual-pcie-8gpu.xml' | grep -qx 'TRAIN_GPU_BUSID=0000:a3:00.0'"
check "bad SLURM_LOCALID is named" sh -c "SLURM_LOCALID=x $bin env --input '$fx/dual-pcie-8gpu.xml' 2>&1 | grep -q 'SLURM_LOCALID'"
check "rank past the last GPU is an error" run 1 env --local-rank 8 --input "$fx/dual-pcie-8gpu.xml"
check "the error names the rank and the range" grep -q '^train-topo: --local-rank 8 is out of range: .* has 8 GPUs, so local ranks are 0..7' "$tmp/err"
check "GPU-less node: a rank per CPU" run 0 env --local-rank 7 --input "$fx/cpu-only-8cpu.xml"
check "GPU-less node: rank 1000 is an error" run 1 env --local-rank 1000 --input "$fx/cpu-only-8cpu.xml"
check "GPU-less error names value and range" grep -q 'local-rank 1000 is out of range: .* has no GPU and 8 CPUs, so local ranks are 0..7' "$tmp/err"
check "this machine: rank 1000 is an error" run 1 env --local-rank 1000
check "SLURM_LOCALID out of range is named" sh -c "SLURM_LOCALID=9 $bin env --input '$fx/dual-pcie-8gpu.xml' 2>&1 | grep -q 'SLURM_LOCALID 9 is out of range'"
check "show has the matrix" run 0 show --input "$fx/hgx-nvswitch-8gpu.xml"
check "show NV18 between GPUs (one NVSwitch known by subtype only)" grep -q '^GPU0  *X  *NV18' "$tmp/out"
check "VM export: file written" run 0 nccl-xml --input "$fx/cloud-efa-vm.xml"
check "IB controller without RDMA device warned about" grep -q '^train-topo: warning: .*InfiniBand controller 0000:00:1f.0 has no RDMA device' "$tmp/err"
check "NIC without link data: NCCL's own unknown form" grep -q 'busid="0000:00:1d.0" .* link_speed="" link_width="0"' "$tmp/out"
check "json parses" sh -c "$bin json --input '$fx/cloud-vm-8gpu.xml' --virtual-switches | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"gpus\"]) == 8'"
# nccl-xml here: a file, or (no NVIDIA GPU and no RDMA NIC, as on most build machines) exit 3.
check "this machine: every command works" sh -c "$bin show >/dev/null && $bin json >/dev/null && $bin env >/dev/null && { $bin nccl-xml >/dev/null 2>&1; test \$? -eq 0 -o \$? -eq 3; }"

# g4dn.metal-like export: GPU 18:00.0's root port recorded idle at 2.5 GT/s x8.
check "downtrained export: exit 0" run 0 nccl-xml --input "$fx/metal-t4-downtrained.xml" -o "$tmp/metal.xml"
check "downtrained export: one warning line" test "$(wc -l <"$tmp/err")" -eq 1
check "the warning names port, device and value chosen" grep -q "^train-topo: warning: .*metal-t4-downtrained.xml: PCIe port 0000:00:01.0 at 2.5 GT/s x8 above 0000:18:00.0 at 8.0 GT/s x16 .*written as 8.0 GT/s x16" "$tmp/err"
check "the GPU is written at its Gen3 x16" grep -q 'busid="0000:18:00.0" .* link_speed="8.0 GT/s PCIe" link_width="16"' "$tmp/metal.xml"
check "with the machine's max_link_*: no warning" run 0 nccl-xml --input "$fx/metal-t4-downtrained.xml" --sysfs-root "$fx/sysfs-metal" -o "$tmp/metal-sysfs.xml"
check "with the machine's max_link_*: stderr empty" test ! -s "$tmp/err"
check "the export's file is the one NCCL's values give" cmp -s "$tmp/metal.xml" "$tmp/metal-sysfs.xml"
check "bare metal: --virtual-switches exits 1" run 1 nccl-xml --input "$fx/metal-t4-downtrained.xml" --virtual-switches -o "$tmp/vs.xml"
check "bare metal: one line saying why" sh -c "test \$(wc -l <'$tmp/err') -eq 1 && grep -q '^train-topo: --virtual-switches: .*metal-t4-downtrained.xml is not a virtual machine (DMI says Amazon EC2 g4dn.metal, a bare-metal instance)' '$tmp/err'"
check "bare metal: no file" test ! -e "$tmp/vs.xml"
check "bare metal by its tree: refused" run 1 show --input "$fx/dual-pcie-8gpu.xml" --virtual-switches
check "bare metal by its tree: named" grep -q 'is not a virtual machine (every GPU and RDMA NIC sits below a PCIe port' "$tmp/err"
check "q35 VM: virtual switches made" run 0 nccl-xml --input "$fx/kvm-q35-2gpu.xml" --virtual-switches
check "q35 VM: the switch is there" grep -q 'busid="ffff:ff:01.0"' "$tmp/out"
grep -o 'busid="0000:0[12]:00.0" .*link_width="[0-9]*"' "$tmp/out" >"$tmp/gpu-vs"
"$bin" nccl-xml --input "$fx/kvm-q35-2gpu.xml" 2>/dev/null | grep -o 'busid="0000:0[12]:00.0" .*link_width="[0-9]*"' >"$tmp/gpu-plain"
check "q35 VM: GPU links the same with and without --virtual-switches" sh -c "test \$(grep -c 'link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"' '$tmp/gpu-vs') -eq 2 && cmp -s '$tmp/gpu-vs' '$tmp/gpu-plain'"

# AMD MI250X node with Slingshot NICs: nothing NCCL can use.
echo old >"$tmp/amd-old.xml"
check "no NVIDIA GPU, no RDMA NIC: exit 3" run 3 nccl-xml --input "$fx/amd-mi250x-node.xml" -o "$tmp/amd.xml"
check "no NVIDIA GPU, no RDMA NIC: no file" test ! -e "$tmp/amd.xml"
check "no NVIDIA GPU, no RDMA NIC: one warning saying what was found" sh -c "test \$(wc -l <'$tmp/err') -eq 1 && grep -q '^train-topo: warning: .*amd-mi250x-node.xml has no NVIDIA GPU and no RDMA NIC (found 8 GPUs 1002:7408, NICs hsn0 hsn1 hsn2 hsn3 without RDMA): no NCCL topology file written, NCCL_TOPO_FILE is not set$' '$tmp/err'"
check "no NVIDIA GPU, no RDMA NIC: an existing -o file is left as it was" sh -c "$bin nccl-xml --input '$fx/amd-mi250x-node.xml' -o '$tmp/amd-old.xml' 2>/dev/null; test \$? -eq 3 && test \"\$(cat '$tmp/amd-old.xml')\" = old"
check "no NVIDIA GPU, no RDMA NIC: nothing on stdout" run 3 nccl-xml --input "$fx/amd-mi250x-node.xml"
check "no NVIDIA GPU, no RDMA NIC: stdout empty" test ! -s "$tmp/out"
check "probe: exit 3" run 3 probe --input "$fx/amd-mi250x-node.xml" -o "$tmp/amd.xml"
check "probe: no file" test ! -e "$tmp/amd.xml"
check "probe: the report says why" grep -q '^error .*has no NVIDIA GPU and no RDMA NIC .*NCCL_TOPO_FILE is not set$' "$tmp/out"
check "show still works there" run 0 show --input "$fx/amd-mi250x-node.xml"

for f in hwloc-crash.xml bad-cpuset.xml numa-overlap.xml hwloc-v3.xml; do
	check "$f: exit 1, not a crash" run 1 show --input "$fx/$f"
	check "$f: one error line naming the file" sh -c "test \$(wc -l <'$tmp/err') -eq 1 && grep -q '^train-topo: .*$f' '$tmp/err'"
done
check "crash reported as such" run 1 nccl-xml --input "$fx/hwloc-crash.xml"
check "crash named" grep -q "crashes libhwloc (Segmentation fault)" "$tmp/err"
check "bad CPU set word named" run 1 json --input "$fx/bad-cpuset.xml"
check "bad word, object and line named" grep -q "line 25: object Package os_index=1 has cpuset word '0x00000ff', not 8 hex digits" "$tmp/err"
check "hwloc 3 export refused" run 1 nccl-xml --input "$fx/hwloc-v3.xml"
check "hwloc 3 named in the error" grep -q 'hwloc 3.x' "$tmp/err"
exit $((failures > 0))
