# SPDX-License-Identifier: BSD-3-Clause
"""Run commands round-robin and time each run (bench/ssh.sh).

usage: interleave.py RUNS WARMUP OUT.json NAME=CMD [NAME=CMD ...]

hyperfine runs every run of one command before the next command: on a
machine that other work shares, a change in that load between two commands
shows up as a difference between them. Here each round runs every command
once, in turn (each round starting one command later than the one before),
so the load of a moment is shared by all of them, and the median of the
per-round differences to the first command is reported next
to each command's own statistics. CMD is split on blanks and run without a
shell (like hyperfine -N), its output discarded; a run that fails stops the
whole measurement. OUT.json has hyperfine's "results" layout (seconds) plus
"median_diff" (seconds, against the first command).
"""
import json
import statistics
import subprocess
import sys
import time


def run_once(argv):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    t1 = time.perf_counter()
    if r.returncode != 0:
        sys.exit("interleave: %s: exit %d: %s" % (" ".join(argv), r.returncode,
                                                   r.stderr.decode("utf-8", "replace")[:400]))
    return t1 - t0


def main():
    runs, warmup, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    cmds = []
    for spec in sys.argv[4:]:
        name, _, cmd = spec.partition("=")
        cmds.append((name, cmd.split()))
    times = [[] for _ in cmds]
    n = len(cmds)
    for rnd in range(warmup + runs):
        # Each round starts one row later: what a run leaves behind (a
        # session's teardown, a network namespace the kernel frees later)
        # falls on every other row equally often, not always on the next.
        for k in range(n):
            i = (rnd + k) % n
            t = run_once(cmds[i][1])
            if rnd >= warmup:
                times[i].append(t)
    results = []
    for i, (name, argv) in enumerate(cmds):
        ts = times[i]
        diffs = [a - b for a, b in zip(ts, times[0])]
        results.append({
            "command": name,
            "mean": statistics.mean(ts),
            "stddev": statistics.stdev(ts) if len(ts) > 1 else 0.0,
            "median": statistics.median(ts),
            "min": min(ts),
            "max": max(ts),
            "median_diff": statistics.median(diffs),
            "times": ts,
        })
    with open(out, "w") as f:
        json.dump({"results": results, "rounds": runs, "warmup": warmup}, f)


if __name__ == "__main__":
    main()
