# SPDX-License-Identifier: MIT
# torchrun_py311.py — runs Debian's torchrun (torch 1.13) on Python 3.11 for the launch benchmark.
# torch 1.13's Std.from_str finds a value by iterating the IntFlag Std; since Python 3.11 that
# iteration yields only single-bit members, so "0" (Std.NONE, the default of --redirects and
# --tee) maps to None and torchrun dies in to_map(). Converting with Std(int(v)) is what later
# torch releases do; everything else is torchrun unchanged.
import re
import sys

from torch.distributed.elastic.multiprocessing import api


def _from_str(cls, vm):
    if re.fullmatch(r"[0-3]", vm):
        return cls(int(vm))
    if re.fullmatch(r"(\d:[0-3],)*\d:[0-3]", vm):
        return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match <[0-3]> or <(\\d:[0-3],)*\\d:[0-3]>")


api.Std.from_str = classmethod(_from_str)

from torch.distributed.run import main  # noqa: E402  (after the fix, on purpose)

sys.exit(main())
