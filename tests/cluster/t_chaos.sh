# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_chaos.sh — failures injected into running jobs on the test cluster: kill -9 of a rank while it
# writes a checkpoint (three times), a node's link going down during an all-reduce, a full disk
# during a checkpoint, and a second unprivileged user squatting the job's MASTER_PORT. Each test
# asserts what the runtime must do then (and did not always do): only whole checkpoints remain and
# the newest is resumed, every rank fails within the timeout naming the unreachable peer, the torn
# step directory is gone and the previous checkpoint intact, the squatter learns nothing keyed and
# the job fails at once naming the problem.

# ckpt_check DIR: an independent check of every step directory under DIR (Python's zlib, not the
# runtime's code): prints "STEP ok" or "STEP torn: why" per directory, and "tmp FILE" for every
# temporary file left anywhere.
ckpt_check() {
	python3 - "$1" <<'PY'
import os, re, sys, zlib
root = sys.argv[1]
for name in sorted(os.listdir(root)):
    path = os.path.join(root, name)
    if not re.fullmatch(r"step-\d{8}", name):
        continue
    for f in os.listdir(path):
        if ".tmp." in f:
            print("tmp", os.path.join(path, f))
    why = None
    try:
        text = open(os.path.join(path, "meta.txt"), "rb").read()
        body, _, tail = text.rstrip(b"\n").rpartition(b"\n")
        if not tail.startswith(b"meta_crc ") or zlib.crc32(body + b"\n") != int(tail.split()[1], 16):
            why = "meta.txt fails its CRC"
        else:
            crcs = dict(re.findall(rb"rank_crc (\d+) ([0-9a-f]{8})", body))
            for r, want in sorted(crcs.items()):
                data = open(os.path.join(path, "rank-%05d.bin" % int(r)), "rb").read()
                if zlib.crc32(data[:-4]) != int.from_bytes(data[-4:], "little") or data[-4:] != int(want, 16).to_bytes(4, "little"):
                    why = "rank %s fails its CRC" % int(r)
    except OSError as e:
        why = str(e)
    print(int(name[5:]), "ok" if why is None else "torn: " + why)
PY
}

# newest_ok CHECK_OUTPUT: the newest step ckpt_check calls ok (empty when none).
newest_ok() { awk '$2 == "ok" { s = $1 } END { if (s != "") print s }' "$1"; }

# kill -9 of rank 1 while it writes its checkpoint file (stopped first, so the kill lands with its
# temporary file on disk), three times. Then: no directory that fails the independent check is
# resumed, the resumed run starts from the newest whole checkpoint, and once it has written its own,
# every step directory is whole and no temporary file is left (the killed run's used to stay).
test_chaos_kill9_during_checkpoint_write() {
	# shellcheck disable=SC2054 # the commas are inside values (--layers A,B,C), not between elements
	local args=(--layers 784,1024,1024,10 --data synthetic --synthetic-samples 4096,256 --batch 64 --epochs 100
		--seed 3 --log-every 1000 --ckpt-every 2 --keep 2)
	local round spid pid deadline newest resumed
	for round in 1 2 3; do
		rm -f pid.*
		srun -J ttest-chaos-kill -N2 --ntasks-per-node=1 --train-topo=env bash -c \
			'train-mlp "$@" & echo $! >pid.$RANK; wait $!' _ "${args[@]}" --ckpt-dir ckpt >run$round.out 2>&1 &
		spid=$!
		deadline=$((SECONDS + 90))
		pid=""
		while [ $SECONDS -lt $deadline ]; do
			[ -z "$pid" ] && [ -s pid.1 ] && pid=$(cat pid.1)
			# armed once a whole checkpoint exists, so the kill always leaves one to resume
			if [ -n "$pid" ] && compgen -G "ckpt/step-*/meta.txt" >/dev/null &&
				compgen -G "ckpt/step-*/rank-00001.bin.tmp.*" >/dev/null; then
				kill -STOP "$pid" 2>/dev/null || true
				compgen -G "ckpt/step-*/rank-00001.bin.tmp.*" >/dev/null && break
				kill -CONT "$pid" 2>/dev/null || true
			fi
			sleep 0.01
		done
		[ $SECONDS -lt $deadline ] || { kill "$spid"; fail "round $round: rank 1 never seen writing a checkpoint"; }
		echo "round $round: killing rank 1 (pid $pid) while it writes $(compgen -G 'ckpt/step-*/rank-00001.bin.tmp.*')"
		kill -9 "$pid"
		wait "$spid" && fail "round $round: the job survived the kill"
		ckpt_check ckpt | tee check$round.txt
		newest=$(newest_ok check$round.txt)
		[ -n "$newest" ] || fail "round $round: no whole checkpoint to resume"
		srun -J ttest-chaos-kill -N2 --ntasks-per-node=1 --train-topo=env train-mlp "${args[@]}" \
			--ckpt-dir ckpt --max-steps $((newest + 2)) >resume$round.out 2>&1 ||
			{ cat resume$round.out; fail "round $round: the resumed run failed"; }
		resumed=$(sed -n 's/.*resumed from ckpt\/step-0*\([0-9][0-9]*\) .*/\1/p' resume$round.out)
		expect_eq "round $round: resumed from the newest whole checkpoint" "$newest" "$resumed"
		ckpt_check ckpt >after$round.txt
		cat after$round.txt
		expect_eq "round $round: directories that are not whole, and temporary files, after the resumed run" 0 \
			"$(grep -c -v ' ok$' after$round.txt || true)"
	done
}

# eth0 of node 2 goes down while 4 ranks (2 per node) all-reduce: every rank ends within the timeout
# (plus the node barrier's grace), none hangs, and each names the other node's rank and address.
test_chaos_link_down_during_allreduce() {
	local timeout=10 spid t_down deadline r f
	local ip1 ip2
	ip1=$(getent hosts node1 | awk '{print $1}')
	ip2=$(getent hosts node2 | awk '{print $1}')
	TRAINRT_TIMEOUT=$timeout srun -J ttest-chaos-link -N2 --ntasks-per-node=2 --train-topo=env bash -c \
		'trainrt-bench -o allreduce -b 1M -e 1M -n 1000000 -w 0 >/dev/null 2>err.$RANK; echo "$? $(date +%s.%N)" >exit.$RANK' \
		>srun.out 2>&1 &
	spid=$!
	deadline=$((SECONDS + 60))
	until [ "$(ls err.* 2>/dev/null | wc -l)" -eq 4 ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
	sleep 3 # all-reducing by now
	[ "$(ls exit.* 2>/dev/null | wc -l)" -eq 0 ] || { cat err.*; fail "a rank ended before the link went down"; }
	t_down=$(date +%s.%N)
	ip netns exec tt-node2 ip link set eth0 down
	deadline=$((SECONDS + timeout + 30))
	until [ "$(ls exit.* 2>/dev/null | wc -l)" -eq 4 ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
	ip netns exec tt-node2 ip link set eth0 up
	timeout 90 tail --pid="$spid" -f /dev/null || kill "$spid"
	wait "$spid" || true
	for r in 0 1 2 3; do
		echo "== rank $r: $(cat exit.$r 2>/dev/null)"
		cat err.$r
		[ -f exit.$r ] || fail "rank $r still runs $((timeout + 30)) s after the link went down"
		[ "$(cut -d' ' -f1 exit.$r)" -ne 0 ] || fail "rank $r exited 0"
		f=$(echo "$t_down $(cut -d' ' -f2 exit.$r)" | awk '{ printf "%.1f", $2 - $1 }')
		awk -v f="$f" -v t="$timeout" 'BEGIN { exit !(f <= t + 5) }' || fail "rank $r took $f s (timeout $timeout s)"
	done
	for r in 0 1; do
		expect_match "rank $r names rank 2 on node 2" "rank 2 at $ip2" "$(cat err.$r)"
	done
	for r in 2 3; do
		expect_match "rank $r names rank 0 on node 1" "rank 0 at $ip1" "$(cat err.$r)"
	done
}

# Checkpoints into an 8 MiB tmpfs: the first (5 MB) fits, the second does not. The run fails with a
# message naming the checkpoint, the file and ENOSPC; the torn step directory is removed (its whole
# rank file used to stay, holding space on the full disk); the previous checkpoint is whole and
# resumes.
test_chaos_disk_full_during_checkpoint() {
	srun -J ttest-chaos-full -N1 --ntasks-per-node=1 --gres=gpu:2 bash -c '
		d=$(mktemp -d /tmp/tt-full.XXXXXX)
		mount -t tmpfs -o size=8m,mode=700 tmpfs "$d" || { echo "$(id -un) cannot mount a tmpfs" >full.skip; exit 0; }
		args="--layers 784,512,10 --data synthetic --synthetic-samples 2048,256 --batch 64 --seed 5 --log-every 1000"
		train-run --nproc-per-node 2 -- train-mlp $args --epochs 5 --ckpt-every 5 --keep 1 --ckpt-dir "$d" 2>full.err
		echo $? >full.rc
		ls -R "$d" >full.ls
		cp -r "$d" ck-after
		train-mlp $args --epochs 5 --max-steps 5 --ckpt-dir "$d" >resume.out 2>&1
		echo $? >resume.rc
		umount "$d"
		rmdir "$d"' >srun.out 2>&1 || true
	cat srun.out full.err full.ls 2>/dev/null | tail -n 40
	[ -f full.skip ] && skip "$(cat full.skip)"
	[ -f full.rc ] || fail "the job did not run"
	[ "$(cat full.rc)" -ne 0 ] || fail "train-mlp succeeded although its checkpoint could not be written"
	expect_match "the error names the checkpoint" "checkpoint of step 10 under /tmp/tt-full\\.[^ ]* failed" "$(cat full.err)"
	expect_match "the error names the file and ENOSPC" "rank-0000[01]\\.bin\\.tmp\\.[0-9a-f]*' \\(disk full\\?\\): No space left on device" "$(cat full.err)"
	ckpt_check ck-after | tee check.txt
	expect_eq "step directories left on the full disk" "5 ok" "$(cat check.txt)"
	expect_eq "resuming the previous checkpoint" 0 "$(cat resume.rc)"
	expect_match "resumed from step 5" "resumed from /tmp/tt-full\\.[^ ]*/step-00000005 " "$(cat resume.out)"
}

# A second user listens on the job's MASTER_PORT on node 1 before the ranks start (every port it may
# be: the one derived from the job id, and Slurm's reserved range MpiParams=ports, which steps of a
# batch job get), answers every hello with a nonce of its own (as the store does), never with a
# proof (it cannot make one), and records what it receives. The job must fail within seconds
# (TRAINRT_TIMEOUT is 60) with a message naming the port and squatting, and the squatter must have
# received nothing but hellos and, after its nonce, the rank's proof (bound to both nonces; why that
# is acceptable with a secret of 16+ bytes: trainrt(3) SECURITY): never the secret or the key.
test_chaos_squatter_on_master_port() {
	local user=ttsquat created=0 id port ports span slot start state secret key
	if ! id -u "$user" >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$user" || skip "cannot create user $user"
		created=1
	fi
	# (values baked in now: the trap runs after this function's locals are gone)
	# shellcheck disable=SC2064 # expanded now on purpose, as the line above says
	trap "if [ -s '$PWD/capture.ready' ]; then kill \$(cat '$PWD/capture.ready') 2>/dev/null || true; fi
		if [ $created = 1 ]; then sleep 0.5; userdel $user || true; fi" EXIT
	cat >squat.py <<'PY'
import os, selectors, socket, struct, sys, threading
ports, cap = [], sys.argv[2]
for part in sys.argv[1].split(","):
    lo, _, hi = part.partition("-")
    ports += range(int(lo), int(hi or lo) + 1)
sel = selectors.DefaultSelector()
for port in ports:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    sel.register(s, selectors.EVENT_READ)
open(cap + ".ready", "w").write(str(os.getpid()))
lock = threading.Lock()
def serve(c, n):
    got = b""
    c.settimeout(1.0)
    answered = False
    try:
        while True:
            try:
                d = c.recv(65536)
            except socket.timeout:
                if got and not answered:  # a quiet peer waits for an answer: a nonce
                    c.sendall(struct.pack("<II", 0, 32) + os.urandom(32))
                    answered = True
                continue
            if not d:
                break
            got += d
    finally:
        with lock, open(cap, "a") as f:
            f.write("%d %s\n" % (n, got.hex()))
n = 0
while True:
    for key, _ in sel.select():
        c, _ = key.fileobj.accept()
        n += 1
        threading.Thread(target=serve, args=(c, n), daemon=True).start()
PY
	: >capture
	: >capture.ready
	chown "$user" capture capture.ready
	id=$(sbatch --parsable --hold -J ttest-chaos-squat -N2 --ntasks-per-node=2 --output=job.out \
		--wrap 'TRAINRT_TIMEOUT=60 srun --train-topo=env bash -c "echo rank \$RANK MASTER_PORT=\$MASTER_PORT; exec trainrt-bench -o allreduce -b 4 -e 4 -n 1 -w 0"')
	span=$((32499 - 29500 + 1))
	slot=$(((((id * 2654435769) & 0xffffffff) * span) >> 32))
	ports="$((29500 + (slot % span))),$(sed -n 's/^MpiParams=ports=//p' "$SLURM_CONF")"
	echo "job $id, step 0: MASTER_PORT is one of $ports"
	ip netns exec tt-node1 runuser -u "$user" -- python3 squat.py "$ports" "$PWD/capture" &
	for _ in $(seq 1 50); do [ -s capture.ready ] && break; sleep 0.1; done
	[ -s capture.ready ] || fail "the squatter did not start"
	start=$SECONDS
	scontrol release "$id"
	state=$(job_wait "$id" 150)
	echo "job ended $state after $((SECONDS - start)) s"
	cat job.out
	port=$(sed -n 's/.*MASTER_PORT=\([0-9]*\).*/\1/p' job.out | head -n 1)
	python3 -c 'import sys; p = int(sys.argv[1]); r = [list(map(int, (x + "-" + x).split("-")[:2])) for x in sys.argv[2].split(",")]; sys.exit(not any(lo <= p <= hi for lo, hi in r))' \
		"${port:-0}" "$ports" || fail "MASTER_PORT ${port:-?} is not among the squatted ports $ports"
	[ "$state" != COMPLETED ] || fail "the job completed although a stranger held its MASTER_PORT"
	[ $((SECONDS - start)) -lt 45 ] || fail "the job took $((SECONDS - start)) s to fail (TRAINRT_TIMEOUT=60)"
	expect_match "a rank names the squatted port" "listening at node1:$port \\(MASTER_ADDR:MASTER_PORT\\).*squatting the port" "$(cat job.out)"
	expect_match "rank 0 names the busy port" "cannot listen on node1.*:$port" "$(cat job.out)"
	kill "$(cat capture.ready)" 2>/dev/null || true
	sleep 0.5
	cat capture
	secret=$(tr -d '\n' <"$HOME/.config/trainrt/token")
	key=$(python3 -c 'import hmac,hashlib,sys
prk = hmac.new(b"trainrt job key v2", sys.argv[1].encode(), hashlib.sha256).digest()
print(hmac.new(prk, ("job=%s step=0" % sys.argv[2]).encode() + b"\x01", hashlib.sha256).hexdigest())' "$secret" "$id")
	python3 - capture "$secret" "$key" "$id" <<'PY'
import struct, sys
cap, secret, key, job = sys.argv[1], sys.argv[2].encode(), sys.argv[3], sys.argv[4].encode()
conns = [bytes.fromhex(l.split()[1]) if len(l.split()) > 1 else b"" for l in open(cap)]
assert conns, "the squatter saw no connection"
for got in conns:
    assert len(got) in (56, 104), "the squatter received more than a hello and a proof: %d bytes %s" % (len(got), got.hex())
    if len(got) == 104:
        assert struct.unpack("<4I", got[56:72]) == (0x54525354, 5, 0, 32), "not a proof: %s" % got[56:].hex()
    for needle, what in ((secret, "the secret"), (secret.hex().encode(), "the secret in hex"),
                         (key.encode(), "the job key"), (bytes.fromhex(key), "the job key's bytes"),
                         (job + b":", "the old 'jobid:' token")):
        assert needle not in got, "the squatter received %s" % what
    assert struct.unpack("<4I", got[:16]) == (0x54525354, 1, 0, 40), "not a hello: %s" % got.hex()
print("squatter: %d connections, each a 56-byte hello and at most a 48-byte proof" % len(conns))
PY
}
