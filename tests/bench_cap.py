#!/usr/bin/env python3
"""Cap precision, measured in one run: p50/p99 |interval - target| at 60 and 144 Hz on the demo
workload (MAILBOX, so nothing else paces it), for framescope's cap (FRAMESCOPE_CAP) and for
MangoHud's fps_limit on the same app. Intervals come from the same place for both: framescope's
frames.csv (our layer, uncapped in the MangoHud runs, only measuring). Not a test.

usage: bench_cap.py BUILD_DIR DEMO FRAMES SPIN_FLOOR"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import Weston, ns, run_app


def errors_us(rows, target_ms, skip=10):
    errs = sorted(abs(ns(r["frame_ms"]) / 1e6 - target_ms) * 1000 for r in rows[skip:])
    pick = lambda p: errs[min(len(errs) - 1, max(0, int(p * len(errs) + 0.999) - 1))]
    return pick(0.50), pick(0.99), errs[-1], sum(ns(r["frame_ms"]) for r in rows[skip:]) / 1e6 / len(rows[skip:])


def machine_floor(probe, seconds=5):
    """tests/spin-floor: how often a thread that never sleeps loses the CPU."""
    import subprocess
    out = subprocess.run([probe, str(seconds)], capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main():
    build, demo = sys.argv[1], sys.argv[2]
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    floor50, floor200, worst = machine_floor(sys.argv[4] if len(sys.argv) > 4 else "tests/spin-floor")
    print(f"machine floor: a thread spinning for 5 s lost the CPU for > 50 us {floor50:.1f} "
          f"times/s, > 200 us {floor200:.1f} times/s, longest {worst:.0f} us")
    have_mangohud = os.path.exists("/usr/share/vulkan/implicit_layer.d/MangoHud.json")
    print(f"cap precision, framescope-demo MAILBOX, {frames} frames per run, first 10 skipped")
    print(f"  {'limiter':28} {'target Hz':>9} {'mean ms':>9} {'p50 us':>9} {'p99 us':>9} {'max us':>9}")
    with Weston() as w:
        for hz in (60, 144):
            target = 1000.0 / hz
            runs = [("framescope FRAMESCOPE_CAP", {"FRAMESCOPE_CAP": str(hz)})]
            if have_mangohud:
                runs.append(("MangoHud fps_limit", {"MANGOHUD": "1",
                                                    "MANGOHUD_CONFIG": f"fps_limit={hz},no_display"}))
            results = {}
            for label, env in runs:
                r = run_app([demo, "--quiet", "--present-mode", "mailbox", "--frames", str(frames)],
                            w, build, extra_env=dict(env, FRAMESCOPE_SUMMARY="off"))
                if r.rc != 0:
                    print(f"  {label:28} failed: {r.stderr[-300:]}")
                    continue
                p50, p99, worst, mean = errors_us(r.frames(), target)
                results[label] = (p50, p99)
                print(f"  {label:28} {hz:9d} {mean:9.4f} {p50:9.1f} {p99:9.1f} {worst:9.1f}")
            if len(results) == 2:
                ours, theirs = results["framescope FRAMESCOPE_CAP"], results["MangoHud fps_limit"]
                print(f"  at {hz} Hz: MangoHud's p50 / ours = {theirs[0] / max(ours[0], 0.1):.1f}x, "
                      f"p99 = {theirs[1] / max(ours[1], 0.1):.1f}x (goal: ours p99 < 50 us, >= 5x tighter)")
    if not have_mangohud:
        print("  MangoHud not installed (apt-get install mangohud): no comparison")


main()
