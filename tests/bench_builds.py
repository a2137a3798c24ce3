#!/usr/bin/env python3
"""Two builds' layers against each other and against no layer, interleaved in one run: the
demo offscreen with N submissions a frame (as DXVK, vkd3d and zink submit), the layer of each
build in turn, round after round. For a change that should cost nothing on the submit path
(a restructuring): it prints each build's added time a frame and a submission over no layer.
Not a test: it prints what it measured.

usage: bench_builds.py DEMO BUILD_A BUILD_B [SUBMITS [FRAMES [ROUNDS]]]
(defaults 64 submissions, 800 frames, 7 rounds; the demo of either build)"""
import os
import re
import statistics
import subprocess
import sys


def run(demo, build, submits, frames):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS", "VK_ADD_LAYER_PATH")}
    env["FRAMESCOPE_SUMMARY"] = "off"
    if build:
        env.update(VK_ADD_LAYER_PATH=os.path.join(build, "layers", "dev"),
                   VK_INSTANCE_LAYERS="VK_LAYER_FRAMESCOPE")
    r = subprocess.run([demo, "--output", "offscreen", "--submits", str(submits), "--frames",
                        str(frames)], env=env, capture_output=True, text=True, timeout=600)
    m = re.search(r"(\d+) frames, ([\d.]+) s, ([\d.]+) fps", r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"the demo failed ({r.returncode}): {r.stderr[-1000:]}")
    return 1e3 / float(m.group(3))


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    demo, a, b = sys.argv[1:4]
    submits, frames, rounds = (list(map(int, sys.argv[4:7])) + [64, 800, 7][len(sys.argv[4:7]):])
    names = {"no layer": None, a: a, b: b}
    ms = {name: [] for name in names}
    for _ in range(rounds):
        for name, build in names.items():
            ms[name].append(run(demo, build, submits, frames))
    base = statistics.median(ms["no layer"])
    for name, values in ms.items():
        median = statistics.median(values)
        extra = "" if name == "no layer" else (
            f"; +{(median - base) * 1e3:.1f} us a frame, {(median - base) * 1e3 / submits:.2f} us "
            "a submission over no layer")
        print(f"{name}: median {median:.4f} ms a frame over {rounds} rounds (min {min(values):.4f},"
              f" max {max(values):.4f}){extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
