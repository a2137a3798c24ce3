#!/usr/bin/env python3
"""The multi-threaded patterns under ThreadSanitizer (a build with -Db_sanitize=thread): the
layer's reader threads, lock-free tables, per-thread collectors and frame logs, driven by the
demo's worker threads, two devices, device cycles and late host signals. Any TSan report
fails the test. Frames are offscreen: libwayland is not instrumented and its locking misleads
TSan (tests/tsan.supp says what else is exempt and why).

usage: test_tsan.py BUILD_DIR DEMO STRESS_EXE SANITIZE"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import SKIP, check, layer_env, main

# TSan's internal assertion in its lock-order detector (not a report about our code).
DETECTOR_CHECK = "CHECK failed: sanitizer_deadlock_detector"

CASES = [
    ["--threads", "3"],
    ["--devices", "2", "--second-device-gpu-iters", "300"],
    ["--device-cycles", "5", "--submit2"],
    ["--instances", "3"],
    ["--serial", "--late-signal"],
    ["--serial", "--host-delay-ms", "2"],
    # GPU zones: blocks taken on the recording thread, read and released on the reader's
    ["--passes", "light:10,heavy:30", "--frames-in-flight", "3"],
]


def test_threads(build, demo, stress, sanitize):
    if sanitize != "thread":
        print("not a ThreadSanitizer build")
        sys.exit(SKIP)
    supp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tsan.supp")
    options = f"halt_on_error=1 exitcode=66 ignore_noninstrumented_modules=1 suppressions={supp}"
    env = dict(os.environ, TSAN_OPTIONS=options + " detect_deadlocks=1",
               FRAMESCOPE_RING_EVENTS="4096", FRAMESCOPE_SUMMARY="off")
    out = subprocess.run([stress, "/dev/null", "/dev/null"], env=env, capture_output=True,
                         text=True, timeout=600)
    check(out.returncode == 0 and "ThreadSanitizer" not in out.stderr,
          f"test-stress under TSan: rc {out.returncode}\n{out.stderr[-4000:]}")
    env.update(layer_env(build))
    # Enough frames to fill several chunks: the recording's stream thread moves them to disk
    # while worker threads record, in the app's own recording and in one framescope run made.
    framescope = os.path.join(build, "tools", "framescope")
    streaming = ["--frames", "2500", "--threads", "2"]
    runs = [[demo, "--quiet", "--frames", "60", "--output", "offscreen"] + args for args in CASES]
    # A command buffer recorded once and submitted again at once: the zones' generation
    # moves on the submitting thread while the reader reads the copy.
    runs += [[os.path.join(build, "tests", "layer-probe"), "resubmit", "200"]]
    # framescope run writes its capture: the files are written side by side, on threads of
    # their own, from one report.
    capture = os.path.join(tempfile.mkdtemp(prefix="fscope-tsan-"), "capture")
    runs += [[demo, "--quiet", "--output", "offscreen"] + streaming,
             [framescope, "run", "--compositor", "never", "--output", capture, "--summary",
              "off", "--", demo, "--quiet", "--output", "offscreen"] + streaming]
    for argv in runs:
        what = " ".join(os.path.basename(a) for a in argv)
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        if DETECTOR_CHECK in out.stderr and "libvulkan_lvp.so" in out.stderr:
            # Not a report: lavapipe's worker threads lock mutexes TSan cannot follow
            # (uninstrumented, partly futex-based) and the lock-order detector's bookkeeping
            # failed an internal CHECK (seen once in CI, in a run that then passed six times
            # in a row). Run the case again with that detector off; races are still reported.
            print(f"{what}: TSan's deadlock detector failed inside lavapipe; again without it")
            quiet = dict(env, TSAN_OPTIONS=options + " detect_deadlocks=0")
            out = subprocess.run(argv, env=quiet, capture_output=True, text=True, timeout=600)
        check(out.returncode == 0 and "ThreadSanitizer" not in out.stderr,
              f"{what}: rc {out.returncode}\n{out.stderr[-4000:]}")
        print(f"{what}: no ThreadSanitizer report")
    written = sorted(os.listdir(capture))
    check("frames.csv" in written and "recording.fsr" in written,
          f"framescope run's capture holds {written}")


if __name__ == "__main__":
    try:
        test_threads(*sys.argv[1:])
    except Exception as e:
        print("FAIL:", e)
        sys.exit(1)
    print("ok")
