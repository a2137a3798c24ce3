#!/usr/bin/env python3
"""What the layer adds to command recording, per recorded command, measured in one run: the
demo records 10,000 draws a frame (each with a vertex-buffer, index-buffer and descriptor-set
bind: four commands a draw) on 1 and 4 threads, as primaries and as secondaries, with every
bind redundant or none; it times its own recordings (vkBeginCommandBuffer to
vkEndCommandBuffer, CLOCK_MONOTONIC) and prints ns per command. Each case runs without the
layer, with it (everything on: recording, redundant-state tracking, geometry, GPU timing
and zones) and without it again (A/X/A); the added cost is X minus the mean of the two A.
Not a test: it prints what it measured. Offscreen, so it runs on a headless GPU too.

usage: [FRAMESCOPE_...=...] bench_commands.py BUILD_DIR DEMO [FRAMES] [ROUNDS]
(FRAMESCOPE_* variables given are set for the X runs only: the cost of one part)"""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import layer_env

LINE = re.compile(r"recording ([\d.]+) ns per command")
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


def once(demo, args, env, frames):
    r = subprocess.run([demo, "--output", "offscreen", "--quiet", "--frames", str(frames),
                        "--draws", "10000"] + args, env=env, capture_output=True, text=True,
                       timeout=900)
    m = LINE.search(r.stdout)
    if r.returncode != 0 or not m:
        raise SystemExit(f"demo failed ({r.returncode}): {r.stdout[-300:]} {r.stderr[-600:]}")
    return float(m.group(1))


def main():
    build, demo = sys.argv[1], sys.argv[2]
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    base = clean_env()
    layer = dict(base, **layer_env(build), FRAMESCOPE_SUMMARY="off")
    # FRAMESCOPE_* set for this script reach X only (FRAMESCOPE_GPU=off: what GPU timing adds).
    layer.update({k: v for k, v in os.environ.items() if k.startswith("FRAMESCOPE_")})
    print(f"{frames} frames of 10,000 draws a frame, {rounds} A/X/A rounds; ns per recorded "
          "command (the demo's own timing of its recordings)")
    print(f"  {'case':34} {'A':>8} {'X':>8} {'A again':>8} {'added':>8} {'drift':>8}")
    for name, args in CASES:
        a1, x, a2 = [], [], []
        for _ in range(rounds):
            a1.append(once(demo, args, base, frames))
            x.append(once(demo, args, layer, frames))
            a2.append(once(demo, args, base, frames))
        ma1, mx, ma2 = (statistics.median(v) for v in (a1, x, a2))
        added = mx - (ma1 + ma2) / 2
        print(f"  {name:34} {ma1:8.1f} {mx:8.1f} {ma2:8.1f} {added:8.1f} {abs(ma1 - ma2):8.1f}")


if __name__ == "__main__":
    main()
