#!/usr/bin/env python3
"""Layer overhead, measured in one run: frame rate without the layer, with it, and without
again (A/X/A), for the demo workload at its highest rate and for vkcube-wayland in MAILBOX,
beside MangoHud and the Mesa overlay layer on the same app in the same run.

If X differs from the mean of the two A runs by less than their drift, the answer is "no
measurable difference". Not a test: it prints what it measured.

usage: bench_layer.py BUILD_DIR DEMO [FRAMES]
       bench_layer.py --offscreen BUILD_DIR DEMO [FRAMES]   (no compositor: a headless GPU)"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import Weston, layer_env


def clean_env(w):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS", "MANGOHUD")}
    env.update(w.env())
    return env


def measure(argv, env, frames, parse_fps):
    start = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - start
    if r.returncode != 0:
        return None, r.stderr[-500:]
    fps = parse_fps(r.stdout + r.stderr) if parse_fps else None
    return (fps if fps else frames / wall), None


def variants(build):
    v = [("A (no layer)", {}), ("X (framescope)", dict(layer_env(build), FRAMESCOPE_SUMMARY="off")),
         ("A (no layer, again)", {})]
    if os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_MESA_overlay.json"):
        v.append(("Mesa overlay", {"VK_INSTANCE_LAYERS": "VK_LAYER_MESA_overlay"}))
    if shutil.which("mangohud") or os.path.exists("/usr/share/vulkan/implicit_layer.d/MangoHud.json"):
        v.append(("MangoHud", {"MANGOHUD": "1"}))
    return v


def report(name, rows, a_label="A (no layer)", x_label="X (framescope)",
           a2_label="A (no layer, again)", what="framescope"):
    print(f"\n{name}")
    print(f"  {'variant':22} {'fps':>10} {'frame ms':>10}")
    results = {}
    for label, fps, err in rows:
        if fps is None:
            print(f"  {label:22} failed: {err}")
            continue
        results[label] = fps
        print(f"  {label:22} {fps:10.1f} {1000 / fps:10.4f}")
    a1, x, a2 = (results.get(k) for k in (a_label, x_label, a2_label))
    if a1 and x and a2:
        a_ms = (1000 / a1 + 1000 / a2) / 2
        drift = abs(1000 / a1 - 1000 / a2)
        delta = 1000 / x - a_ms
        added = 100 * delta / a_ms
        if abs(delta) < drift:
            verdict = "no measurable difference"
        else:
            verdict = f"{what} adds {added:+.2f}% frame time (goal < 1%)"
        print(f"  A drift {drift:.4f} ms; X - mean(A) = {delta:+.4f} ms ({added:+.2f}%): {verdict}")
        for other in ("Mesa overlay", "MangoHud"):
            if other in results:
                print(f"  {other} adds {100 * (1000 / results[other] - a_ms) / a_ms:+.2f}% frame time")


def offscreen(build, demo, frames):
    """Headless machines (a real GPU with no display): the demo renders offscreen and marks its
    frames; the layer still times every submission on the GPU. A/X/A twice, then the layer
    with GPU timing off."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("FRAMESCOPE") and k != "VK_INSTANCE_LAYERS"}
    layer = dict(layer_env(build), FRAMESCOPE_SUMMARY="off")
    runs = [("A (no layer)", {}), ("X (framescope)", layer), ("A (no layer, again)", {}),
            ("framescope, FRAMESCOPE_GPU=off", dict(layer, FRAMESCOPE_GPU="off"))]
    extra_args = os.environ.get("DEMO_ARGS", "").split()
    for _ in range(2):
        rows = []
        for label, extra in runs:
            fps, err = measure([demo, "--output", "offscreen", "--frames", str(frames)] + extra_args,
                               dict(base, **extra), frames, demo_fps)
            rows.append((label, fps, err))
        report(f"framescope-demo, offscreen {' '.join(extra_args)}, {frames} frames", rows)
    part_views(demo, ["--output", "offscreen"] + extra_args, frames, base, layer)


def ab_view(demo, args, frames, base, a_env, x_env, what, a_label, x_label, rounds=2):
    """framescope with one part off (A), on (X), off again (A): what that part costs."""
    for _ in range(rounds):
        rows = []
        for label, extra in [(a_label, a_env), (x_label, x_env), (a_label + ", again", a_env)]:
            fps, err = measure([demo, "--frames", str(frames)] + args, dict(base, **extra), frames,
                               demo_fps)
            rows.append((label, fps, err))
        report(f"{what}: framescope-demo {' '.join(args)}, {frames} frames", rows, a_label,
               x_label, a_label + ", again", what)


def demo_fps(text):
    m = re.search(r"([\d.]+) fps", text)
    return float(m.group(1)) if m else None


# Four software events: the same group read per frame close as hardware counters, on machines
# without a PMU (neither the VM nor the H200 host has one).
COUNTER_EVENTS = ("perf::PAGE-FAULTS,perf::CONTEXT-SWITCHES:k=1,perf::MINOR-FAULTS,"
                  "perf::CPU-MIGRATIONS:k=1")


def part_views(demo, args, frames, base, layer):
    """The kernel view (a schedstat read per frame close), perf counters (one group read per
    frame close) and GPU zones (timestamps around every label and pass), each A/X/A."""
    ab_view(demo, args, frames, base, dict(layer, FRAMESCOPE_KERNEL="off"), layer,
            "the kernel view", "A (kernel off)", "X (kernel on)")
    ab_view(demo, args, frames, base, dict(layer, FRAMESCOPE_COUNTERS="off"),
            dict(layer, FRAMESCOPE_COUNTERS=COUNTER_EVENTS), "the counters", "A (counters off)",
            "X (4 counters)")
    ab_view(demo, args, frames, base, dict(layer, FRAMESCOPE_GPU_ZONES="off"), layer,
            "GPU zones", "A (zones off)", "X (zones on)")


def main():
    if sys.argv[1] == "--offscreen":
        offscreen(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 20000)
        return
    build, demo = sys.argv[1], sys.argv[2]
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    with Weston() as w:
        base = clean_env(w)
        rows = []
        for label, extra in variants(build):
            fps, err = measure([demo, "--present-mode", "mailbox", "--frames", str(frames)],
                               dict(base, **extra), frames, demo_fps)
            rows.append((label, fps, err))
        report(f"framescope-demo, mailbox, {frames} frames (fps from the demo's own count)", rows)
        # The presentation tracker alone: framescope without it, with it, without again.
        layer = dict(layer_env(build), FRAMESCOPE_SUMMARY="off")
        tracker = [("A (tracker off)", dict(layer, FRAMESCOPE_PRESENT="off")),
                   ("X (tracker on)", layer),
                   ("A (tracker off, again)", dict(layer, FRAMESCOPE_PRESENT="off"))]
        rows = []
        for label, extra in tracker:
            fps, err = measure([demo, "--present-mode", "mailbox", "--frames", str(frames)],
                               dict(base, **extra), frames, demo_fps)
            rows.append((label, fps, err))
        report(f"presentation tracker per present: framescope-demo, mailbox, {frames} frames",
               rows, "A (tracker off)", "X (tracker on)", "A (tracker off, again)",
               "the tracker")
        part_views(demo, ["--present-mode", "mailbox"], frames, base, layer)
        if shutil.which("vkcube-wayland"):
            rows = []
            for label, extra in variants(build):
                fps, err = measure(["vkcube-wayland", "--present_mode", "1", "--c", str(frames)],
                                   dict(base, **extra), frames, None)
                rows.append((label, fps, err))
            report(f"vkcube-wayland, mailbox, {frames} frames (fps = frames / wall time, "
                   "start-up included)", rows)


if __name__ == "__main__":
    main()
