#!/usr/bin/env python3
"""The frame cap used as a user would: FRAMESCOPE_CAP on the demo under the layer, and the
library API in a program of its own. Asserts behaviour and accounting loosely (the machine is
noisy), never a speed.

usage: test_cap.py TEST BUILD_DIR DEMO TEST_COMPOSITOR CAP_API"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import (TestCompositor, Weston, check, check_capture_consistent, iters_for, main,
                       ns, run_app)


def capped_run(build, demo, rate, args, frames, server=None):
    with server or Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames)] + args, w, build,
                    extra_env={"FRAMESCOPE_CAP": str(rate)}, timeout=300)
    check(r.rc == 0, f"app exited {r.rc}: {r.stderr[-2000:]}")
    check(len(r.summaries()) == 1, "expected one summary")
    summary, rows, _, _ = check_capture_consistent(r, expected_frames=frames)
    caps = summary["caps"]
    check(len(caps) == 1, f"expected one cap, got {caps}")
    return r, summary, rows, caps[0]


def test_rates(build, demo, compositor, api):
    for rate in (30, 60):
        r, s, rows, cap = capped_run(build, demo, rate, ["--present-mode", "mailbox"], 300)
        check(s["verdict"]["run"] == "cap", f"{rate} Hz: verdict {s['verdict']}")
        check(abs(cap["target_hz"] - rate) < 1e-6, f"target {cap['target_hz']}")
        target_ms = 1000.0 / rate
        # The median frame (frames.csv) and the cap's typical release are on the target, and
        # the mean interval is never shorter. The mean is not held to the target: a stall of
        # the machine inside a cap wait is one interval of seconds (a busy suite run read
        # 52.18 ms at 60 Hz, the verdict still cap-bound; the demo stopped for 5 s in a wait
        # reads 33.43 ms, its median 16.667 ms; beside two busy loops alone 16.666-16.667 ms).
        frame_ms = [ns(row["frame_ms"]) / 1e6 for row in rows[1:]]
        median = sorted(frame_ms)[len(frame_ms) // 2]
        slowest = sorted(((ms, i + 1, row["cap"]) for i, (ms, row) in
                          enumerate(zip(frame_ms, rows[1:]))), reverse=True)[:5]
        said = (f"{rate} Hz: median frame {median:.3f} ms, cap mean interval "
                f"{cap['mean_interval_ms']:.3f} ms, |error| p50 {cap['error_us']['p50']:.1f} "
                f"us; target {target_ms:.3f} ms; slowest frames (ms, frame, cap) "
                f"{[(round(ms, 1), i, c) for ms, i, c in slowest]}")
        check(abs(median - target_ms) < 0.05 * target_ms, said)
        check(cap["error_us"]["p50"] < 0.05 * target_ms * 1000, said)
        check(cap["mean_interval_ms"] > 0.95 * target_ms, said)
        check(s["budget_ms"]["cap"] > 0.5 * target_ms, "cap wait not in the budget")
        check(all(row["cap"] in ("capped", "missed", "resync") for row in rows[1:]),
              "frames not marked capped")
        check("cap-bound" in r.stderr and f"target {rate}.000 Hz" in r.stderr, "summary lacks cap")
        print(f"{rate} Hz: mean interval {cap['mean_interval_ms']:.3f} ms, |error| p50 "
              f"{cap['error_us']['p50']:.1f} us p99 {cap['error_us']['p99']:.1f} us")


def test_gpu_longer_than_slice(build, demo, compositor, api):
    # Two slices of GPU work per frame, measured on this machine: a fixed count was faster than
    # a slice on one machine and missed no deadline at all.
    iters = iters_for(build, demo, 2 * 1000.0 / 60)
    r, s, rows, cap = capped_run(build, demo, 60, ["--present-mode", "mailbox",
                                                   "--gpu-iters", str(iters)], 60)
    check(s["verdict"]["run"] == "gpu", f"GPU work longer than the slice: verdict {s['verdict']}")
    check(cap["missed"] > 0 and cap["missed_bound_by"]["gpu"] > 0,
          f"missed deadlines not attributed to the GPU: {cap}")
    check("missed their deadline" in r.stderr, "summary does not say why deadlines were missed")
    print(f"gpu-bound under a 60 Hz cap: {cap['missed']} missed deadlines, bound by gpu "
          f"{cap['missed_bound_by']['gpu']}")


def test_resync(build, demo, compositor, api):
    rate = 60
    slice_ms = 1000.0 / rate
    r, s, rows, cap = capped_run(build, demo, rate, ["--present-mode", "mailbox",
                                                     "--stall-at", "100", "--stall-ms", "200"], 200)
    check(cap["resyncs"] >= 1, f"a 200 ms stall (12 slices) did not resync: {cap}")
    stall = next(i for i, row in enumerate(rows) if ns(row["frame_ms"]) > 150e6)
    after = rows[stall + 1:stall + 13]
    short = [row for row in after if ns(row["frame_ms"]) < slice_ms / 2 * 1e6]
    check(len(short) <= 1, f"{len(short)} frames shorter than half a slice after the stall: "
          "a burst, not a resync")
    check(rows[stall]["cap"] == "resync" or rows[stall + 1]["cap"] == "resync",
          "the resync is not marked on the frame after the stall")
    print(f"stall at frame {stall}: {cap['resyncs']} resync, {len(short)} short frames after it")


def test_bad_values(build, demo, compositor, api):
    for value in ("0", "-5", "abc", "1e9", ""):
        with Weston() as w:
            r = run_app([demo, "--quiet", "--frames", "20", "--present-mode", "mailbox"], w,
                        build, extra_env={"FRAMESCOPE_CAP": value})
        check(r.rc == 0, f"FRAMESCOPE_CAP={value!r}: app failed")
        warnings = [l for l in r.stderr.splitlines() if "FRAMESCOPE_CAP" in l and "warning" in l]
        check(len(warnings) == 1, f"FRAMESCOPE_CAP={value!r}: {len(warnings)} warnings")
        s = r.json()
        check(s["caps"] == [] and s["budget_ms"]["cap"] == 0, f"{value!r}: cap not off")
        check(s["frames"] == 20, "app affected")
    print("0, -5, abc, 1e9, empty: one warning each, cap off, app unaffected")


def test_api(build, demo, compositor, api):
    r = run_app([api, "200"], None, build, layers=None)
    check(r.rc == 0, f"cap-api failed: {r.stderr}")
    check(len(r.summaries()) == 1, "no summary from a library-only program")
    s = r.json()
    cap = s["caps"][0]
    check(s["frames"] == 199, f"marks made {s['frames']} frames")
    check(s["verdict"]["run"] == "cap", f"verdict {s['verdict']}")
    check(abs(cap["target_hz"] - 50) < 1e-6, "the rate changed at run time is not in force")
    rows = r.frames()
    for row in rows:
        blocks = sum(ns(row[c]) for c in ("acquire_ms", "present_ms", "fence_ms", "semaphore_ms",
                                          "idle_ms", "cap_ms"))
        check(ns(row["cpu_ms"]) + blocks == ns(row["frame_ms"]), "partition broken")
    # Frames the cap paced: not those where the work alone ran late (missed) or the deadline
    # was reset (resync), nor the one after, which starts from such a late release. Which and
    # how many depends on how loaded the machine is, not on the cap.
    def paced(window):
        return [ns(x["frame_ms"]) / 1e6 for i, x in window
                if x["cap"] == "capped" and rows[i - 1]["cap"] == "capped"]
    first = paced([(i, rows[i]) for i in range(5, 95)])
    second = paced([(i, rows[i]) for i in range(105, len(rows))])
    check(len(first) >= 45 and len(second) >= 45,
          f"too few paced frames to judge: {len(first)}, {len(second)}")
    # Their median is on the target and their mean never shorter: a release the machine woke
    # late is still a paced frame, and one of 45 woken 33 ms late adds 0.7 ms to the mean (a
    # busy suite run read a mean of 10.735 ms at 100 Hz), as in test_rates.
    m1, m2 = sorted(first)[len(first) // 2], sorted(second)[len(second) // 2]
    mean1, mean2 = sum(first) / len(first), sum(second) / len(second)
    check(abs(m1 - 10) < 0.5 and abs(m2 - 20) < 1.0 and mean1 > 9.5 and mean2 > 19.0,
          f"100 Hz then 50 Hz gave medians {m1:.3f}, {m2:.3f} ms, means {mean1:.3f}, "
          f"{mean2:.3f} ms; slowest paced frames {sorted(first)[-3:]}, {sorted(second)[-3:]}")
    print(f"API: 100 Hz -> {m1:.3f} ms, then 50 Hz -> {m2:.3f} ms (medians); verdict cap")


def test_auto_mixed_refresh(build, demo, compositor, api):
    """auto paces to the output the surface is on (144 Hz), not the fastest display (240 Hz):
    the 40% of frames thrown away without it are no longer rendered."""
    def server():
        return TestCompositor(compositor, ["--output", "DP-1:1920x1080@240",
                                           "--output", "DP-2:1920x1080@144",
                                           "--frame-clock", "fastest",
                                           "--surface-output", "DP-2"])

    def discarded_share(p):
        return p["discarded"] / max(1, p["presented"] + p["discarded"])

    # The waste without the cap, measured here: what the cap is judged against (a busy
    # machine makes a capped frame miss its slot now and then; it never brings the waste back).
    with server() as w:
        bare = run_app([demo, "--quiet", "--frames", "400", "--present-mode", "fifo"], w, build,
                       timeout=300)
    check(bare.rc == 0, bare.stderr[-2000:])
    wasted = discarded_share(bare.json()["presentation"])
    check(wasted >= 0.2, f"without the cap only {wasted:.1%} discarded: no trap to escape")
    r, s, rows, cap = capped_run(build, demo, "auto", ["--present-mode", "fifo"], 400, server())
    p = s["presentation"]
    check(abs(cap["target_hz"] - 144) < 0.01, f"auto chose {cap['target_hz']} Hz, not 144")
    decided = p["presented"] + p["discarded"]
    check(discarded_share(p) <= wasted / 4,
          f"auto cap still discards {p['discarded']} of {decided} frames ({wasted:.1%} without "
          "it)")
    print(f"auto: target {cap['target_hz']:.1f} Hz, {p['discarded']} of {decided} discarded; "
          f"{wasted:.1%} without the cap")


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    main(TESTS)
