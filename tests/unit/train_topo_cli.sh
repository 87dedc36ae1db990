#!/bin/sh
# train_topo_cli.sh — the train-topo command's contract: exit codes, errors naming the input on
# stderr with the command's prefix, atomic -o (no partial or clobbered file), and each output form.
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
check "no temporary file left" test "$(ls "$tmp" | grep -c tmp)" -eq 0
cp "$tmp/topo.xml" "$tmp/before.xml"
check "bad input keeps the old output intact" run 1 nccl-xml --input "$tmp/none.xml" -o "$tmp/topo.xml"
check "old output unchanged" cmp -s "$tmp/topo.xml" "$tmp/before.xml"
check "unwritable output exits 1" run 1 json --input "$fx/dual-pcie-8gpu.xml" -o "$tmp/no/such/dir.json"
check "unwritable output is named" grep -q "$tmp/no/such/dir.json" "$tmp/err"
check "missing sysfs entry exits 1" run 1 show --input "$fx/dual-pcie-8gpu.xml" --sysfs-root "$fx/sysfs-missing-rate"
check "missing sysfs entry is named" grep -q 'ports/1/rate' "$tmp/err"

check "env for local rank 2" run 0 env --local-rank 2 --input "$fx/dual-pcie-8gpu.xml" --sysfs-root "$fx/sysfs-dual"
check "env NCCL_IB_HCA nearest first" grep -qx 'NCCL_IB_HCA==mlx5_2:1,mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1' "$tmp/out"
check "env CPU list" grep -qx 'TRAIN_CPU_LIST=0-15' "$tmp/out"
check "env takes the rank from SLURM_LOCALID" sh -c "SLURM_LOCALID=6 $bin env --input '$fx/dual-pcie-8gpu.xml' | grep -qx 'TRAIN_GPU_BUSID=0000:a3:00.0'"
check "bad SLURM_LOCALID is named" sh -c "SLURM_LOCALID=x $bin env --input '$fx/dual-pcie-8gpu.xml' 2>&1 | grep -q 'SLURM_LOCALID'"
check "rank past the last GPU is an error" run 1 env --local-rank 8 --input "$fx/dual-pcie-8gpu.xml"
check "show has the matrix" run 0 show --input "$fx/hgx-nvswitch-8gpu.xml"
check "show NV18 between GPUs" grep -q '^GPU0  *X  *NV18' "$tmp/out"
check "json parses" sh -c "$bin json --input '$fx/cloud-vm-8gpu.xml' --virtual-switches | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"gpus\"]) == 8'"
check "this machine: every command works" sh -c "$bin show >/dev/null && $bin nccl-xml >/dev/null && $bin json >/dev/null && $bin env >/dev/null"

v3=$src/../shared/topologies/hwloc-v3-unsupported/nvidiaDGX2-v3.xml
if [ -f "$v3" ]; then
	check "hwloc 3 export refused" run 1 nccl-xml --input "$v3"
	check "hwloc 3 named in the error" grep -q 'hwloc 3.x' "$tmp/err"
fi
exit $((failures > 0))
