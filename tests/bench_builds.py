#!/usr/bin/env python3
"""Builds' layers against each other and against no layer, interleaved in one run, on an app
that prints its own frame rate as the demo does ("N frames, T s, F fps"): for a change that
should cost nothing (a restructuring), or to find which part of one costs (a build per variant
of it). Each round runs no layer, then every build's layer, in turn; it prints each build's
median frame time and what it adds a frame (and a submission, with --submits) over no layer.
Not a test: it prints what it measured.

usage: bench_builds.py [--rounds N] [--frames N] [--submits N] BUILD... -- APP ARGS...
  {frames} in ARGS is replaced by --frames (default 800); rounds default 7. BUILD is a build
  directory (its layers/dev manifest is used), or any directory laid out the same way, with
  the layer's settings for that entry after '@' (BUILD@FRAMESCOPE_GPU_SAMPLE=all,
  FRAMESCOPE_GPU_ZONES=off): one build may appear several times with different settings.
  e.g. bench_builds.py OLD_BUILD build -- build/tools/demo/framescope-demo --output offscreen
       --submits 64 --frames {frames}"""
import os
import re
import statistics
import subprocess
import sys


def run(argv, build):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS", "VK_ADD_LAYER_PATH")}
    env["FRAMESCOPE_SUMMARY"] = "off"
    if build:
        build, _, settings = build.partition("@")
        env.update(s.split("=", 1) for s in settings.split(",") if s)
        env.update(VK_ADD_LAYER_PATH=os.path.join(build, "layers", "dev"),
                   VK_INSTANCE_LAYERS="VK_LAYER_FRAMESCOPE")
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    m = re.search(r"(\d+) frames, ([\d.]+) s, ([\d.]+) fps", r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"{argv[0]} failed ({r.returncode}) with {build or 'no layer'}: "
                 f"{r.stderr[-1000:]}")
    return 1e3 / float(m.group(3))


def main():
    args = sys.argv[1:]
    opts = {"--rounds": 7, "--frames": 800, "--submits": 0}
    builds = []
    while args and args[0] != "--":
        if args[0] in opts and len(args) > 1:
            opts[args[0]] = int(args[1])
            args = args[2:]
        else:
            builds.append(args.pop(0))
    if not builds or not args or len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    argv = [a.replace("{frames}", str(opts["--frames"])) for a in args[1:]]
    names = [None] + builds
    ms = {name: [] for name in names}
    for _ in range(opts["--rounds"]):
        for name in names:
            ms[name].append(run(argv, name))
    base = statistics.median(ms[None])
    for name in names:
        values = ms[name]
        median = statistics.median(values)
        extra = ""
        if name:
            extra = f"; +{(median - base) * 1e3:.2f} us a frame"
            if opts["--submits"]:
                extra += f", {(median - base) * 1e3 / opts['--submits']:.2f} us a submission"
            extra += f" ({100 * (median - base) / base:+.2f}%) over no layer"
        print(f"{name or 'no layer'}: median {median:.4f} ms a frame over {len(values)} rounds "
              f"(min {min(values):.4f}, max {max(values):.4f}){extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
