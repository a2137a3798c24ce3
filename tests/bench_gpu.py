#!/usr/bin/env python3
"""On a real GPU (no compositor needed): the demo offscreen driven GPU-bound, CPU-bound and
serialised, with the verdict, GPU busy against the demo's own timestamps, and a run long
enough to cross a 32-bit timestamp wrap (about 4.3 s at 1 ns a tick) checked for stale or
backwards spans. Sizes its GPU work from a measurement in the same run. Not a test: it prints
what it measured, one line per pattern.

usage: bench_gpu.py BUILD_DIR DEMO [WIDTHxHEIGHT]"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import layer_env


def run(build, demo, args, frames, size):
    out = tempfile.mkdtemp(prefix="fscope-gpu-")
    w, h = size.split("x")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRAMESCOPE")}
    env.update(layer_env(build), FRAMESCOPE_OUTPUT=out)
    argv = [demo, "--quiet", "--output", "offscreen", "--width", w, "--height", h,
            "--frames", str(frames)] + args
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    own = re.search(r"own GPU timestamps: mean ([\d.]+) ms", r.stdout)
    return summary, (float(own.group(1)) if own else None), r.stderr


def line(name, s, own, stderr):
    v = s["verdict"]
    busy = s["budget_ms"]["gpu_busy"]
    text = (f"{name}: {v['run']}-bound ({100 * v['shares'][v['run']]:.0f}% of frames); "
            f"frame {s['frame_ms']['mean']:.4f} ms, GPU busy {busy:.4f} ms")
    if own:
        text += f", demo's own timestamps {own:.4f} ms ({100 * (busy - own) / own:+.2f}%)"
    for pattern in (r"\d+ GPU spans began older[^\n]*", r"\d+ GPU spans overlapped[^\n]*",
                    r"GPU timing: \d+ submissions timed[^\n]*", r"GPU clock [^\n]*"):
        m = re.search(pattern, stderr)
        if m:
            text += "\n    " + m.group(0)
    print(text + "\n    reason: " + v["reason"], flush=True)


def main():
    build, demo = sys.argv[1], sys.argv[2]
    size = sys.argv[3] if len(sys.argv) > 3 else "1920x1080"
    s, own, _ = run(build, demo, ["--self-timestamps", "--gpu-iters", "200"], 200, size)
    per_iter = own / 200
    gpu_iters = max(1, int(2.0 / per_iter))  # about 2 ms of GPU work a frame
    print(f"{size}: {per_iter * 1000:.3f} us of GPU work per --gpu-iters iteration; "
          f"GPU-bound runs use {gpu_iters}", flush=True)
    s, own, err = run(build, demo, ["--self-timestamps", "--gpu-iters", str(gpu_iters)], 1000,
                      size)
    line("gpu-bound", s, own, err)
    s, own, err = run(build, demo, ["--self-timestamps", "--gpu-iters", "20", "--cpu-ms", "2"],
                      1000, size)
    line("cpu-bound", s, own, err)
    s, own, err = run(build, demo, ["--self-timestamps", "--serial"], 5000, size)
    line("serialised (submit, wait, repeat)", s, own, err)
    # Past a 32-bit wrap of a 1 ns counter: over 4.3 s of frames.
    frames = int(7000 / 2.0)
    s, own, err = run(build, demo, ["--self-timestamps", "--gpu-iters", str(gpu_iters)], frames,
                      size)
    line(f"long run ({s['duration_s']:.1f} s)", s, own, err)


if __name__ == "__main__":
    main()
