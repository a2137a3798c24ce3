#!/usr/bin/env python3
"""What the layer adds to command recording, per recorded command, measured in one run: the
demo records 10,000 draws a frame (each with a vertex-buffer, index-buffer and descriptor-set
bind: four commands a draw) on 1 and 4 threads, as primaries and as secondaries, with every
bind redundant or none; it times its own recordings (vkBeginCommandBuffer to
vkEndCommandBuffer, CLOCK_MONOTONIC) and prints the median over its recordings of their ns
per command. Each round runs a case without the layer, with it (everything on: recording,
redundant-state tracking, geometry, GPU timing and zones) and without it again (A/X/A); a
round's added cost is its X minus the mean of its two A, and the case's is the median over
rounds, with the lowest and highest round beside it: a machine's drift between runs moves
whole rounds, so rounds close in time are compared with each other, never across the run.
Not a test: it prints what it measured. Offscreen, so it runs on a headless GPU too.

usage: [FRAMESCOPE_...=...] bench_commands.py [--cpus LIST] [--fixed-layout] BUILD_DIR DEMO
                                              [FRAMES] [ROUNDS]
(FRAMESCOPE_* variables given are set for the X runs only: the cost of one part; --cpus
pins every run to those CPUs, as 2-7 or 2,4,6, so each runs where the others did;
--fixed-layout runs each without address-space randomisation: on the H200 the driver's own
recording time without the layer was 17 ns a command in a quarter of the runs and 29 in the
rest, by where things landed, and at one fixed layout it stays within a few percent)"""
import ctypes
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import layer_env

LINE = re.compile(r"recording ([\d.]+) ns per command \(median of recordings ([\d.]+)\)")
CASES = [
    ("1 thread, primary, redundant", ["--record-threads", "1", "--redundant-binds"]),
    ("1 thread, primary, unique", ["--record-threads", "1"]),
    ("4 threads, primary, redundant", ["--record-threads", "4", "--redundant-binds"]),
    ("1 thread, secondary, redundant", ["--record-threads", "1", "--secondary",
                                        "--redundant-binds"]),
    ("4 threads, secondary, unique", ["--record-threads", "4", "--secondary"]),
]


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS",)}


def cpu_list(text):
    cpus = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise SystemExit(f"--cpus: '{text}' is not a CPU list (as 2-7 or 2,4,6)")
        cpus.update(range(int(low), int(high or low) + 1))
    if not cpus or not cpus <= os.sched_getaffinity(0):
        raise SystemExit(f"--cpus: '{text}' names CPUs this process may not run on "
                         f"(it may run on {sorted(os.sched_getaffinity(0))})")
    return cpus


ADDR_NO_RANDOMIZE = 0x0040000


def placed(cpus, fixed_layout):
    """What a run's child does before it starts the demo: the CPUs and the layout asked for."""
    def before():
        if cpus:
            os.sched_setaffinity(0, cpus)
        if fixed_layout and ctypes.CDLL(None, use_errno=True).personality(ADDR_NO_RANDOMIZE) < 0:
            os._exit(126)
    return before


def once(demo, args, env, frames, cpus, fixed_layout=False):
    r = subprocess.run([demo, "--output", "offscreen", "--quiet", "--frames", str(frames),
                        "--draws", "10000"] + args, env=env, capture_output=True, text=True,
                       timeout=900, preexec_fn=placed(cpus, fixed_layout))
    m = LINE.search(r.stdout)
    if r.returncode != 0 or not m:
        raise SystemExit(f"demo failed ({r.returncode}): {r.stdout[-300:]} {r.stderr[-600:]}")
    return float(m.group(2))


def main():
    argv = sys.argv[1:]
    cpus, fixed_layout = None, False
    while argv[:1] in (["--cpus"], ["--fixed-layout"]):
        if argv[0] == "--fixed-layout":
            fixed_layout, argv = True, argv[1:]
        elif len(argv) > 1:
            cpus, argv = cpu_list(argv[1]), argv[2:]
        else:
            raise SystemExit(__doc__)
    if len(argv) < 2 or not all(a.isdigit() for a in argv[2:4]):
        raise SystemExit(__doc__)
    build, demo = argv[0], argv[1]
    frames = int(argv[2]) if len(argv) > 2 else 60
    rounds = int(argv[3]) if len(argv) > 3 else 3
    base = clean_env()
    layer = dict(base, **layer_env(build), FRAMESCOPE_SUMMARY="off")
    # FRAMESCOPE_* set for this script reach X only (FRAMESCOPE_GPU=off: what GPU timing adds).
    layer.update({k: v for k, v in os.environ.items() if k.startswith("FRAMESCOPE_")})
    print(f"{frames} frames of 10,000 draws a frame, {rounds} A/X/A rounds"
          f"{' on CPUs ' + ','.join(map(str, sorted(cpus))) if cpus else ''}"
          f"{', one fixed layout' if fixed_layout else ''}; ns per recorded "
          "command (the demo's own timing, the median of its recordings)")
    print(f"  {'case':34} {'A':>7} {'X':>7} {'A again':>7} {'added':>7} "
          f"{'rounds: lowest':>14} {'highest':>7} {'drift':>6}")
    for name, args in CASES:
        a1, x, a2 = [], [], []
        for _ in range(rounds):
            a1.append(once(demo, args, base, frames, cpus, fixed_layout))
            x.append(once(demo, args, layer, frames, cpus, fixed_layout))
            a2.append(once(demo, args, base, frames, cpus, fixed_layout))
        added = sorted(xi - (p + q) / 2 for p, xi, q in zip(a1, x, a2))
        drift = statistics.median(abs(p - q) for p, q in zip(a1, a2))
        ma1, mx, ma2 = (statistics.median(v) for v in (a1, x, a2))
        print(f"  {name:34} {ma1:7.1f} {mx:7.1f} {ma2:7.1f} {statistics.median(added):7.1f} "
              f"{added[0]:14.1f} {added[-1]:7.1f} {drift:6.1f}")


if __name__ == "__main__":
    main()
