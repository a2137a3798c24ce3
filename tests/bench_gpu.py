#!/usr/bin/env python3
"""On a real GPU (no compositor needed): the demo offscreen driven GPU-bound, CPU-bound and
serialised, with the verdict, GPU busy against the demo's own timestamps, and a run long
enough to cross a 32-bit timestamp wrap (about 4.3 s at 1 ns a tick) checked for stale or
backwards spans. Sizes its GPU work from a measurement in the same run. Not a test: it prints
what it measured, one line per pattern.

usage: bench_gpu.py BUILD_DIR DEMO [WIDTHxHEIGHT [--transfer-queue]]"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import layer_env


def run(build, demo, args, frames, size, settings=None):
    out = tempfile.mkdtemp(prefix="fscope-gpu-")
    w, h = size.split("x")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRAMESCOPE")}
    env.update(layer_env(build), FRAMESCOPE_OUTPUT=out, **(settings or {}))
    argv = [demo, "--quiet", "--output", "offscreen", "--width", w, "--height", h,
            "--frames", str(frames)] + args
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    summary["tracks"] = gpu_tracks(json.load(open(os.path.join(out, "trace.json"))))
    own = re.search(r"own GPU timestamps: mean ([\d.]+) ms", r.stdout)
    return summary, (float(own.group(1)) if own else None), r.stderr


def gpu_tracks(trace):
    """Per GPU track: spans, shortest and longest (us), and whether time ever went backwards.
    A timestamp wrap mishandled shows as a span of seconds or a step back."""
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    tracks = {}
    for tid, name in names.items():
        if not name.startswith("gpu"):
            continue
        begins, spans = [], []
        for e in events:
            if e.get("tid") != tid:
                continue
            if e["ph"] == "B":
                begins.append(e["ts"])
            elif e["ph"] == "E" and begins:
                spans.append((begins[-1], e["ts"] - begins[-1]))
        back = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[0])
        if spans:
            tracks[name] = (len(spans), min(d for _, d in spans), max(d for _, d in spans),
                            back, spans[-1][0] - spans[0][0])
    return tracks


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
    for name, (n, shortest, longest, back, covered) in sorted(s["tracks"].items()):
        text += (f"\n    track {name!r}: {n} spans over {covered / 1e6:.2f} s, shortest "
                 f"{shortest:.3f} us, longest {longest:.3f} us, {back} steps back")
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
    # Command buffers recorded once and submitted again (with and without SIMULTANEOUS_USE):
    # every submission timed, so every run of the pass should be.
    for mode in ("slot", "simultaneous"):
        s, own, err = run(build, demo, ["--record-once", mode, "--gpu-iters", str(gpu_iters)],
                          1000, size, {"FRAMESCOPE_GPU_SAMPLE": "all"})
        line(f"recorded once ({mode})", s, own, err)
        passes = [z for z in s["gpu_zones"]["zones"] if z["kind"] == "pass"]
        print(f"    pass timed in {max((z['count'] for z in passes), default=0)} of the "
              f"1000 submissions", flush=True)
    s, own, err = run(build, demo, ["--self-timestamps", "--gpu-iters", "20", "--cpu-ms", "2"],
                      1000, size)
    line("cpu-bound", s, own, err)
    s, own, err = run(build, demo, ["--self-timestamps", "--serial"], 5000, size)
    line("serialised (submit, wait, repeat)", s, own, err)
    s, own, err = run(build, demo, ["--self-timestamps", "--serial"], 20000, "64x64")
    line("serialised, tiny frames (64x64)", s, own, err)
    # Past a 32-bit wrap of a 1 ns counter: over 4.3 s of frames.
    # --transfer-queue: a family without graphics, where a GPU may keep fewer timestamp bits.
    frames = int(7000 / 2.0)
    args = ["--self-timestamps", "--gpu-iters", str(gpu_iters)]
    if len(sys.argv) > 4 and sys.argv[4] == "--transfer-queue":
        args.append("--transfer-queue")
    s, own, err = run(build, demo, args, frames, size)
    line(f"long run ({s['duration_s']:.1f} s{', with a transfer queue' if len(args) > 3 else ''})",
         s, own, err)


if __name__ == "__main__":
    main()
