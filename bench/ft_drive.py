# SPDX-License-Identifier: MIT
# ft_drive.py — one row of bench/ft.sh: start a launcher, inject one fault into local rank 1 after
# warm-up, and time what follows from the launcher's own lines. Every line of the launcher's
# stdout and stderr (merged, read as it comes) is stamped with time.monotonic() when read, so the
# numbers are the log's, not a polling interval's; the fault is stamped on the same clock just
# before the signal goes out.
#   fault -> detection:        the first line matching --detect after the fault
#   detection -> training:     the first step line after the first --restart line
#   steps lost:                the last step line stamped before the fault minus the step resumed from
#                              (--resume's group 1; 0 when no resume line comes)
# Prints one tab-separated line: detect_s, again_s, last_step, resumed_step, verdict, exit.
# FAULT link:NETNS is no signal: eth0 inside network namespace NETNS (a test cluster's node) goes
# down at the fault and up again once training goes on (or the row is given up), so that the
# node's slurmstepd can report its task's end to srun.
# The target is local rank 1 below the launcher; with FT_TARGET="KEY=VALUE,...[,comm=NAME]" in the
# environment it is instead the topmost process anywhere in /proc whose environment holds every
# KEY=VALUE (and whose name is NAME): a worker or train-run that Slurm started on another node of
# the test cluster (bench/ft_cluster.sh), which shares this machine's pid namespace.
# Usage: ft_drive.py LOG FAULT(kill|stop|link:NETNS) WARM_STEP BOUND_S STEP_RE DETECT_RE RESTART_RE RESUME_RE -- CMD...
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time


def descendants(root):
    """Every pid below root, from /proc (children files are not always there)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out, parent


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return set(f.read().decode(errors="replace").split("\0"))
    except OSError:
        return set()


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def matches(pid, want, name):
    return want <= environ(pid) and (name is None or comm(pid) == name)


def worker(root, rank):
    """The topmost process below root with LOCAL_RANK=rank (the worker the launcher started), or
    the topmost in /proc that FT_TARGET describes."""
    spec = os.environ.get("FT_TARGET")
    want, name = {f"LOCAL_RANK={rank}"}, None
    if spec:
        want = {kv for kv in spec.split(",") if kv and not kv.startswith("comm=")}
        name = next((kv[5:] for kv in spec.split(",") if kv.startswith("comm=")), None)
        _, parent = descendants(0)
        pids = list(parent)
    else:
        pids, parent = descendants(root)
    for p in sorted(pids):
        if matches(p, want, name) and not matches(parent.get(p, 0), want, name):
            return p
    return None


def kill_all(root):
    """SIGKILL the launcher's group and every descendant's group (workers may have their own)."""
    pids, _ = descendants(root)
    groups = set()
    for p in [root] + pids:
        try:
            groups.add(os.getpgid(p))
        except OSError:
            pass
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass


def link(netns, state):
    """eth0 of network namespace netns down or up."""
    subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "set", "eth0", state], check=True)


def main():
    a = sys.argv[1:]
    sep = a.index("--")
    log, fault, warm, bound, step_re, detect_re, restart_re, resume_re = a[:sep]
    cmd = a[sep + 1:]
    warm, bound = int(warm), float(bound)
    netns = fault[5:] if fault.startswith("link:") else None
    link_down = False
    step_re, detect_re = re.compile(step_re), re.compile(detect_re)
    restart_re, resume_re = re.compile(restart_re), re.compile(resume_re)

    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    lines = queue.Queue()

    def reader():
        for raw in p.stdout:
            lines.put((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))
        lines.put((time.monotonic(), None))

    threading.Thread(target=reader, daemon=True).start()
    t_fault = t_detect = t_restart = t_again = None
    last_step, resumed, verdict, w = None, 0, "", None
    # Until the fault: the warm-up, at most bound; afterwards bound for recovery, then as long
    # again for the rest of the run to end.
    deadline = t0 + bound
    with open(log, "w") as lf:
        while True:
            try:
                t, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                verdict = ("no warm-up" if t_fault is None else
                           f"not recovered in {bound:.0f} s" if t_again is None else "did not end")
                break
            if line is None:
                break
            lf.write(f"{t - t0:10.6f} {line}\n")
            m = step_re.search(line)
            if t_fault is None:
                if m:
                    last_step = int(m.group(1))
                    # Found at the first step line: scanning /proc at the fault itself took
                    # 0.2 s under load, hundreds of train-mlp steps.
                    w = w or (None if os.environ.get("FT_TARGET") or netns else worker(p.pid, "1"))
                    if last_step >= warm and netns:
                        t_fault = time.monotonic()
                        link(netns, "down")
                        link_down = True
                        lf.write(f"{t_fault - t0:10.6f} ft_drive: eth0 down in {netns}\n")
                        deadline = t_fault + bound
                    elif last_step >= warm:
                        w = w or worker(p.pid, "1")
                        if w is None:
                            verdict = "no rank 1 found"
                            break
                        t_fault = time.monotonic()
                        os.kill(w, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
                        lf.write(f"{t_fault - t0:10.6f} ft_drive: SIG{fault.upper()} to {os.environ.get('FT_TARGET') or 'rank 1'}, pid {w}\n")
                        deadline = t_fault + bound
                continue
            if m and t < t_fault and t_restart is None:
                last_step = int(m.group(1))  # read after the signal went out, written before
            if t_detect is None and detect_re.search(line):
                t_detect = t
            if t_detect is not None and t_restart is None and restart_re.search(line):
                t_restart = t
            r = resume_re.search(line)
            if t_restart is not None and r:
                resumed = int(r.group(1))
            if t_restart is not None and t_again is None and m:
                t_again = t
                deadline = t_again + bound
                if link_down:
                    link(netns, "up")
                    link_down = False
        if link_down:
            link(netns, "up")
        if verdict:
            kill_all(p.pid)
            lf.write(f"{time.monotonic() - t0:10.6f} ft_drive: {verdict}: killed the launcher's process groups\n")
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_all(p.pid)
            rc = p.wait()
    if not verdict:
        verdict = "recovered" if t_again is not None else "ended without recovering"
    exit_s = f"signal {-rc}" if rc < 0 else str(rc)
    fmt = (lambda x: f"{x:.2f}")
    print("\t".join([fmt(t_detect - t_fault) if t_detect and t_fault else "-",
                     fmt(t_again - t_detect) if t_again and t_detect else "-",
                     str(last_step) if t_fault else "-", str(resumed) if t_again else "-",
                     verdict, exit_s]))


if __name__ == "__main__":
    main()
