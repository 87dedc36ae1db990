#!/bin/bash
# SPDX-License-Identifier: MIT
# fake-trainer.sh DIR [SECONDS] — stands in for a training process in the signal tests: it handles
# the checkpoint signal ($TT_TEST_SIGNAL, default USR1) by appending one line to
# DIR/ckpt.<host>.<pid>.<rank> per delivery (so a test counts deliveries, not files), announces
# DIR/ready.<host>.<pid>.<rank> once its handler is installed, and exits 0 after SECONDS (default 60) or
# when DIR/stop exists.
dir=$1
limit=${2:-60}
sig=${TT_TEST_SIGNAL:-USR1}
me="$(hostname).$$"
trap 'echo "${RANK:-norank}" >>"$dir/ckpt.$me.${RANK:-norank}"' "$sig"
# The rank too: trainers in containers of their own may all be PID 1 of their PID namespace.
: >"$dir/ready.$me.${RANK:-norank}"
end=$((SECONDS + limit))
while [ $SECONDS -lt $end ] && [ ! -e "$dir/stop" ]; do
	sleep 0.2 &
	wait $!
done
exit 0
