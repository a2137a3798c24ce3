#!/usr/bin/env python3
"""End-to-end tests of the Vulkan layer: real apps on lavapipe, presenting to a real headless
Weston, with what framescope printed and wrote parsed and cross-checked.

usage: test_layer.py TEST BUILD_DIR DEMO"""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import (LAVAPIPE_MAX_ITERS, SKIP, TestFailure, Weston, check,
                       check_capture_consistent, iters_for, light_frame_gpu_ms, main, run_app)

VALIDATION = "VK_LAYER_FRAMESCOPE:VK_LAYER_KHRONOS_validation"  # ours above validation


def need(program):
    if not shutil.which(program):
        print(f"{program} not installed")
        sys.exit(SKIP)


def expect_one_summary(r):
    check(r.rc == 0, f"app exited {r.rc}: {r.stderr[-2000:]}")
    check(len(r.summaries()) == 1, f"expected one summary, got {len(r.summaries())}:\n{r.stderr}")


def vkcube(build, demo, mode):
    need("vkcube-wayland")
    frames = 120
    argv = ["vkcube-wayland", "--c", str(frames)]
    if mode == "mailbox":
        argv += ["--present_mode", "1"]
    with Weston() as w:
        r = run_app(argv, w, build)
    expect_one_summary(r)
    summary, rows, trace, presents = check_capture_consistent(r, expected_frames=frames)
    check(len(presents) == frames, f"{len(presents)} present markers for {frames} presents")
    check(summary["per_frame"]["draws"] >= 1.0, "vkcube draws once per frame; counted none")
    check(summary["per_frame"]["submits"] >= 1.0, "no submits counted")
    p = summary["presentation"]
    check(p["presented"] + p["discarded"] + p["pending"] + p["untracked"] == frames,
          f"shown tally {p} does not hold vkcube's {frames} frames")
    if mode == "fifo":
        check(summary["verdict"]["run"] == "display", f"FIFO vkcube verdict {summary['verdict']}")
        # FIFO on Wayland: every frame shown, none thrown away.
        check(p["discarded"] == 0 and p["presented"] >= frames - 3,
              f"FIFO vkcube: {p['presented']} shown, {p['discarded']} discarded of {frames}")
    else:
        # MAILBOX outruns the display: lavapipe's rasterizer is its limit (or, under a
        # sanitizer, the layer's own CPU time), never the display.
        check(summary["verdict"]["run"] in ("gpu", "cpu") and
              not summary["verdict"]["shares"]["display"],
              f"MAILBOX vkcube verdict {summary['verdict']}")
    # vkcube records one command buffer per swapchain image once, with SIMULTANEOUS_USE, and
    # submits it again whenever that image comes back: a run does not overlap the last one,
    # so its pass is timed; a run counted as possibly overlapping is counted, never timed.
    g = summary["gpu_zones"]
    passes = [z for z in g["zones"] if z["kind"] == "pass"]
    timed = sum(z["count"] for z in passes)
    counted = g["untimed"]["simultaneous_use"] + g["untimed"]["resubmitted"]
    check(timed + counted <= frames + 2, f"zones {g}")
    check(timed >= frames // 2, f"vkcube's pass timed in {timed} of {frames} frames: {g}")
    print(f"{mode}: {len(rows)} frames, verdict {summary['verdict']['run']}, "
          f"fps {summary['fps']:.1f}; pass timed {timed} times, counted untimed "
          f"{g['untimed']['simultaneous_use']}")


def test_vkcube_fifo(build, demo):
    vkcube(build, demo, "fifo")


def test_vkcube_mailbox(build, demo):
    vkcube(build, demo, "mailbox")


def verdict_run(build, demo, args, want):
    frames = 60
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames)] + args, w, build)
    expect_one_summary(r)
    summary, rows, _, _ = check_capture_consistent(r, expected_frames=frames)
    verdict = summary["verdict"]
    check(verdict["run"] == want, f"{args}: verdict {verdict} (wanted {want})")
    check(verdict["shares"][want] >= 0.7, f"{args}: only {verdict['shares'][want]:.0%} {want}")
    check(r.verdict() == want, "stderr verdict disagrees with summary.json")
    print(f"{' '.join(args)}: {want}-bound, {verdict['reason']}")
    return summary


def test_verdict_cpu(build, demo):
    cpu_ms = max(30.0, 4 * light_frame_gpu_ms(build, demo))
    s = verdict_run(build, demo, ["--cpu-ms", f"{cpu_ms:.3f}", "--present-mode", "mailbox"], "cpu")
    check(s["budget_ms"]["cpu"] >= 0.8 * cpu_ms,
          f"{cpu_ms:.1f} ms of CPU work per frame read as {s['budget_ms']['cpu']}")


def test_verdict_gpu(build, demo):
    s = verdict_run(build, demo, ["--gpu-iters", str(iters_for(build, demo, 8.0)),
                                  "--present-mode", "mailbox"], "gpu")
    check(s["budget_ms"]["gpu_busy"] >= 0.8 * s["frame_ms"]["mean"], "GPU not saturated")


def test_verdict_display(build, demo):
    s = verdict_run(build, demo, ["--present-mode", "fifo"], "display")
    check(s["budget_ms"]["gpu_busy"] < 0.5 * s["frame_ms"]["mean"], "GPU busy in display run")


def test_verdict_asleep(build, demo):
    """Issue 36, item 1: a thread asleep outside Vulkan is not doing CPU work; what woke it
    says what it waited for. Paced by wl_surface.frame callbacks (as mpv): display-bound,
    woken by the compositor; its own timer at a steady cadence (a game's own limiter):
    cap-bound, the app's own; a worker's lock: CPU-bound with that thread named. Without the
    wake-up chain (FRAMESCOPE_WAKEUPS=off), the cadence decides and the reason says so."""
    chain = [("--frame-callback", {}, "display", "waiting for the display (until weston"),
             ("--sleep-limit 30", {}, "cap", "the app's own limiter"),
             ("--lock-wait-ms 20", {}, "cpu", "until its thread demo-lock"),
             ("--frame-callback", {"FRAMESCOPE_WAKEUPS": "off"}, "display",
              "no wake-up chain: the app presents at the cadence it is shown")]
    for args, env, want, because in chain:
        with Weston() as w:
            r = run_app([demo, "--quiet", "--frames", "60", "--present-mode", "mailbox"] +
                        args.split(), w, build, extra_env=env)
        expect_one_summary(r)
        summary, rows, _, _ = check_capture_consistent(r, expected_frames=60)
        verdict = summary["verdict"]
        recorded = summary["hitches"]["wakeups"]["state"] == "on"
        if not env and not recorded:
            print(f"{args}: the wake-up chain was not recorded here "
                  f"({summary['hitches']['wakeups']['why']})")
            sys.exit(SKIP)
        check(verdict["run"] == want and because in verdict["reason"],
              f"{args} {env}: {verdict['run']}-bound, {verdict['reason']} (wanted {want}, "
              f"{because!r})")
        check(verdict["shares"][want] >= 0.7, f"{args}: only {verdict['shares'][want]:.0%} {want}")
        # The frames say the same as the run, frame by frame.
        by_rows = sum(r_["verdict"] == want for r_ in rows) / len(rows)
        check(abs(by_rows - verdict["shares"][want]) < 0.02,
              f"{args}: frames.csv has {by_rows:.0%} {want}, summary.json "
              f"{verdict['shares'][want]:.0%}")
        print(f"{args} {env or ''}: {want}-bound, {verdict['reason'][:160]}")


GPU_ZONE_LABELS = ("empty", "light", "mid", "heavy")
# How closely the passes' ratio must be known before it is judged against 2 +- 0.5: twice its
# standard error, half the tolerance, leaving the rest for what is not noise (2.00-2.23 under
# ASan on an idle machine).
GPU_ZONES_RATIO_PRECISION = 0.25
# A run's frames: fewer than the layer's 1024 zone blocks a device (layers/gpu_zones.c), so
# that its one command buffer a frame never needs more blocks than the pool holds, however
# far behind the reader falls (beside two busy loops, runs of 2300 frames had 47-88 of their
# last 200 frames' zones untimed as "full"; none idle). More frames are more runs.
GPU_ZONES_RUN_MAX_FRAMES = 1000
# The time the runs may take in all (the test has 240 s).
GPU_ZONES_RUNS_MAX_S = 150


def labelled_passes(build, demo, light, frames):
    """The demo's passes empty:0, light:N, mid:2N and heavy:3N in offscreen frames. Returns
    the run and each label's durations, frame by frame (from the trace)."""
    r = run_app([demo, "--quiet", "--output", "offscreen", "--frames", str(frames), "--passes",
                 f"empty:0,light:{light},mid:{2 * light},heavy:{3 * light}"], None, build)
    check(r.rc == 0, r.stderr[-2000:])
    durations = {label: [] for label in GPU_ZONE_LABELS}
    for e in sorted((e for e in r.trace()["traceEvents"] if e.get("ph") == "X" and
                     e.get("tid", 0) >= 2000000 and e["name"] in GPU_ZONE_LABELS),
                    key=lambda e: e["ts"]):
        durations[e["name"]].append(e["dur"] / 1000)
    n = len(durations["light"])
    check(n >= 2 and all(len(v) == n for v in durations.values()),
          f"passes per label: { {k: len(v) for k, v in durations.items()} }")
    return r, durations


def pass_ratio(durations):
    """(heavy - light) / (mid - light) of the frames' totals, and its standard error (a ratio
    estimator's, from each frame's three passes)."""
    n = len(durations["light"])
    one = [m - l for m, l in zip(durations["mid"], durations["light"])]
    two = [h - l for h, l in zip(durations["heavy"], durations["light"])]
    check(sum(one) > 0, f"mid no longer than light in {n} frames")
    ratio = sum(two) / sum(one)
    variance = sum((t - ratio * o) ** 2 for o, t in zip(one, two)) / (n * (n - 1))
    return ratio, variance ** 0.5 / (sum(one) / n)


def test_gpu_zones(build, demo):
    """Labelled passes (the demo's --passes, each a debug-utils label around a render pass):
    passes given N, 2N and 3N iterations of work in the same frames measure in proportion
    once their common fixed cost is cancelled: (3N - N) / (2N - N) = 2 whatever a pass costs
    beside its work (an empty pass in the same frames shows that cost, which on lavapipe
    under ASan is half the light pass's time, so subtracting it alone left the ratio at the
    mercy of its noise); each is timed once per submission, nested under its label; top-level
    zones add up to no more than the GPU busy time; zones.csv, summary.json, the summary and
    the trace agree.

    On lavapipe a pass's GPU time is its rasterizer threads' wall time, and other work on the
    CPUs slows them at random: beside two busy loops a 3 ms light pass read 1.4-22 ms, and
    the ratio of 40 frames 1.0-4.0 (4.00 in a busy suite run), at N of 11 ms 1.5-3.2, so a
    larger N does not help. The frames give the ratio's standard error, which falls as
    1/sqrt(frames): while it is too large to judge the ratio by, runs of the frames it needs
    are added."""
    # Sized from this machine's cost of an iteration: the light pass about 3 ms of GPU work.
    light = min(iters_for(build, demo, 3.0), LAVAPIPE_MAX_ITERS // 3)
    pooled = {label: [] for label in GPU_ZONE_LABELS}
    frames, tries, start = 40, [], time.monotonic()
    while True:
        run_start = time.monotonic()
        r, durations = labelled_passes(build, demo, light, frames)
        per_frame_s = (time.monotonic() - run_start) / frames
        for label in GPU_ZONE_LABELS:
            pooled[label] += durations[label]
        ratio, se = pass_ratio(pooled)
        n = len(pooled["light"])
        tries.append(f"{n} frames: {ratio:.2f} +- {2 * se:.2f}")
        if 2 * se <= GPU_ZONES_RATIO_PRECISION:
            break
        # Half as many again, as the standard error is itself estimated from the frames.
        needed = int(1.5 * n * (2 * se / GPU_ZONES_RATIO_PRECISION) ** 2) + 1 - n
        left_s = GPU_ZONES_RUNS_MAX_S - (time.monotonic() - start)
        frames = min(needed, GPU_ZONES_RUN_MAX_FRAMES, int(left_s / per_frame_s))
        if frames < 2:
            break
    print(f"N = {light}: (heavy - light) / (mid - light), twice its standard error: " +
          "; ".join(tries))
    totals = {label: round(sum(pooled[label]), 3) for label in GPU_ZONE_LABELS}
    check(totals["empty"] < totals["light"] < totals["mid"] < totals["heavy"],
          f"zone totals of {n} frames {totals}")
    check(1.5 <= ratio <= 2.5, f"(heavy - light) / (mid - light) = {ratio:.2f} for 2N / N of "
          f"work (zone totals of {n} frames {totals}; {'; '.join(tries)})")
    # The rest of the checks on the last run.
    summary = r.json()
    zones = {z["path"]: z for z in summary["gpu_zones"]["zones"]}
    spans = sum(d["spans"] for d in summary["device_gpu"])
    labels = GPU_ZONE_LABELS
    pass_name = "pass 256x256 (1 color)"
    for path in labels + tuple(f"{label}/{pass_name}" for label in labels[1:]):
        check(path in zones and zones[path]["count"] == spans,
              f"{path}: {zones.get(path)}; {spans} submissions timed")
    for label in labels[1:]:
        child = zones[f"{label}/{pass_name}"]
        check(child["depth"] == 1 and child["kind"] == "pass" and
              child["total_ms"] <= zones[label]["total_ms"] + 1e-6, (zones[label], child))
    ms = {label: zones[label]["total_ms"] for label in labels}
    busy = sum(d["busy_ms"] for d in summary["device_gpu"])
    top = sum(ms.values())
    check(top <= busy * 1.001 + 0.01, f"labels {top:.3f} ms > GPU busy {busy:.3f} ms")
    check(not any(summary["gpu_zones"]["untimed"].values()), summary["gpu_zones"]["untimed"])
    csv = {row["path"]: row for row in r.zones() if row["thread"] == "gpu zones"}
    for path, z in zones.items():
        check(path in csv and int(csv[path]["calls"]) == z["count"] and
              abs(float(csv[path]["inclusive_ms"]) - z["total_ms"]) < 1e-5, (path, csv.get(path)))
    line = r.summary_line("gpu zones") or ""
    check(line.startswith("heavy ") and "mid " in line, line)
    trace = r.trace()["traceEvents"]
    events = [e for e in trace if e.get("ph") == "X" and e.get("tid", 0) >= 2000000]
    check(len(events) == 8 * spans, f"{len(events)} GPU zone events in the trace")
    by_ts = [e for e in events if e["name"] in labels]
    for e in events:
        if e["name"].startswith("pass"):
            parent = [p for p in by_ts if p["ts"] <= e["ts"] + 1e-3 and
                      e["ts"] + e["dur"] <= p["ts"] + p["dur"] + 1e-3]
            check(len(parent) == 1 and e["args"]["path"].startswith(parent[0]["name"] + "/"),
                  f"pass not nested in its label: {e}")
    # FRAMESCOPE_GPU_ZONES=off: nothing timed, nothing counted as untimed, GPU timing goes on.
    off = run_app([demo, "--quiet", "--output", "offscreen", "--frames", "10", "--passes",
                   "light:10,heavy:30"], None, build, extra_env={"FRAMESCOPE_GPU_ZONES": "off"})
    check(off.rc == 0 and off.json()["gpu_zones"]["zones"] == [] and
          not any(off.json()["gpu_zones"]["untimed"].values()) and
          off.json()["device_gpu"][0]["spans"] > 0, off.json()["gpu_zones"])
    print(f"(heavy - light) / (mid - light) {ratio:.2f} for 2N / N of work; labels "
          f"{top:.1f} of {busy:.1f} ms GPU busy; {spans} submissions, each zone timed in every "
          f"one")


def test_gpu_zones_multiview(build, demo):
    """A classic render pass with multiview (two views; tests/layer-probe multiview): a
    timestamp inside it would take one query per view, so labels inside it are counted as
    untimed, never timed; the pass and the label around it are timed (outside the pass), and
    so is a label inside a plain pass in the same command buffer. Classic passes are named by
    their size and first subpass's attachments. The Khronos validation layer below ours finds
    nothing."""
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    rounds = 20
    r = run_app([probe, "multiview", str(rounds)], None, build)
    check(r.rc == 0, r.stderr[-2000:])
    g = r.json()["gpu_zones"]
    zones = {z["path"]: z for z in g["zones"]}
    pass_name = "pass 64x64 (1 color)"
    for path in ("outer", f"outer/{pass_name}", "plain outer", f"plain outer/{pass_name}",
                 f"plain outer/{pass_name}/plain"):
        check(path in zones and zones[path]["count"] == rounds, f"{path}: {zones.get(path)}")
    check(not any("inside" in p for p in zones), f"a label inside a multiview pass timed: {g}")
    check(g["untimed"]["multiview"] == rounds and
          sum(g["untimed"].values()) == rounds, g["untimed"])
    check(f"gpu zones   not timed: {rounds} labels inside multiview passes" in r.stderr and
          "ms in all (no frames)" in (r.summary_line("gpu zones") or ""), r.stderr[-1500:])
    if os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
        v = run_app([probe, "multiview", "4"], None, build, layers=VALIDATION)
        check(v.rc == 0 and not v.validation_errors(),
              "\n".join(v.validation_errors()[:5]) or v.stderr[-1500:])
    print(f"multiview: {rounds} labels inside counted untimed; pass and labels around it timed")


def plain_and_validated(build, argv):
    """argv run under our layer alone, and with the Khronos validation layer below it where
    that is installed: [(name, result)]."""
    runs = [("plain", run_app(argv, None, build))]
    if os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
        runs.append(("validation", run_app(argv, None, build, layers=VALIDATION)))
    return runs


def test_gpu_zones_resubmit(build, demo):
    """A command buffer recorded once and submitted again and again, each time after a fence
    wait (tests/layer-probe resubmit): every run resets its own queries, so the Khronos
    validation layer below ours finds nothing; each run is counted exactly once, timed (every
    zone of it) or, when the next run was submitted before the layer read it, untimed; the last
    run is always timed."""
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    rounds = 20
    runs = plain_and_validated(build, [probe, "resubmit", str(rounds)])
    for name, r in runs:
        check(r.rc == 0, f"{name}: {r.stderr[-2000:]}")
        check(not r.validation_errors(), "\n".join(r.validation_errors()[:5]))
        g = r.json()["gpu_zones"]
        zones = {z["path"]: z for z in g["zones"]}
        timed = zones.get("outer", {}).get("count", 0)
        paths = ("outer", "outer/pass 64x64 (1 color)", "plain outer",
                 "plain outer/pass 64x64 (1 color)", "plain outer/pass 64x64 (1 color)/plain")
        check(timed >= 1 and all(zones.get(p, {}).get("count") == timed for p in paths),
              f"{name}: {g['zones']}")
        check(g["untimed"]["resubmitted"] == len(paths) * (rounds - timed) and
              g["untimed"]["multiview"] == 1 and sum(g["untimed"].values()) ==
              len(paths) * (rounds - timed) + 1, f"{name}: {g['untimed']}, {timed} runs timed")
        print(f"{name}: {timed} of {rounds} runs timed, the rest counted "
              f"({g['untimed']['resubmitted']} zones); no validation error")


def test_gpu_zones_behind(build, demo):
    """vkcube's shape: a command buffer recorded once with its passes and nothing else
    (tests/layer-probe behind: two passes back to back), submitted again after each fence
    wait, behind another command buffer in odd rounds but the last (which the layer reads
    with nothing after it), alone in the others. On a CPU device
    (lavapipe) a pass in such a command buffer is not stamped at its begin (a stamp there costs
    the rasterizer a scene of its own in every frame): the first begins at its submission's
    span, the second where the first ended. Each run is counted exactly once: behind another
    command buffer its start is not its span's, so it is counted untimed as "unstamped", every
    time; alone it is timed or, when the next run came before the layer read it, counted as
    resubmitted. The two passes are timed together, adjacent (the second's time is its own,
    not the first's again), and the Khronos validation layer below ours finds nothing."""
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    rounds = 20
    pass_path = "pass 64x64 (1 color)"
    for name, r in plain_and_validated(build, [probe, "behind", str(rounds)]):
        check(r.rc == 0, f"{name}: {r.stderr[-2000:]}")
        check(not r.validation_errors(), "\n".join(r.validation_errors()[:5]))
        cpu = "device type: cpu" in r.stdout
        g = r.json()["gpu_zones"]
        untimed = g["untimed"]
        zones = [z for z in g["zones"] if z["path"] == pass_path]
        timed = zones[0]["count"] if zones else 0
        # Both passes share one path: two zones a timed run.
        check(timed % 2 == 0 and timed >= 2, f"{name}: {g['zones']}")
        behind = 2 * ((rounds - 1) // 2) if cpu else 0
        check(untimed["unstamped"] == behind and
              timed + untimed["unstamped"] + untimed["resubmitted"] == 2 * rounds and
              sum(untimed.values()) == untimed["unstamped"] + untimed["resubmitted"],
              f"{name}: {untimed}, {timed} zones timed, cpu device {cpu}")
        trace = r.trace()
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        spans = [e for e in events if e.get("ph") == "X" and e.get("name") == pass_path]
        check(len(spans) == timed and all(e["dur"] > 0 for e in spans), f"{name}: {spans[:4]}")
        spans.sort(key=lambda e: e["ts"])
        pairs = list(zip(spans[0::2], spans[1::2]))
        # The second begins where the first ended (to the trace's microsecond rounding) on a
        # CPU device; on a GPU each is stamped, the second no earlier than the first's end.
        gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in pairs]
        check(all((abs(x) < 0.02) if cpu else (x > -0.02) for x in gaps), f"{name}: gaps {gaps}")
        # The first begins where its submission's span does (on a GPU: inside it).
        starts = sorted(e["ts"] for e in events
                        if e.get("ph") == "B" and e.get("name") == "submission")
        lead = [min((abs(a["ts"] - t), a["ts"] - t) for t in starts)[1] if starts else None
                for a, _ in pairs]
        check(all(x is not None and ((abs(x) < 0.02) if cpu else (x > -0.02)) for x in lead),
              f"{name}: first pass from its span's begin {lead}")
        print(f"{name}: {timed // 2} of {rounds} runs timed (two passes each), "
              f"{untimed['unstamped']} zones counted unstamped, {untimed['resubmitted']} "
              f"resubmitted; passes adjacent; cpu device {cpu}")


def test_gpu_zones_simultaneous(build, demo):
    """A command buffer recorded once with SIMULTANEOUS_USE (as vkcube records its own) and
    submitted again after each fence wait (tests/layer-probe simultaneous): its runs never
    overlap, so each is timed unless the next was submitted before the layer read it, or
    before the layer's own completion signal showed it done (counted, never timed); each run
    is counted exactly once, the last is always timed (the probe submits it to an idle queue:
    beside two busy loops, 1 run in 15 had every run untimed, the last counted as maybe
    overlapping, its fence seen before the layer's signal), and the Khronos validation layer
    below ours finds nothing."""
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    rounds = 20
    runs = plain_and_validated(build, [probe, "simultaneous", str(rounds)])
    paths = ("outer", "outer/pass 64x64 (1 color)", "plain outer",
             "plain outer/pass 64x64 (1 color)", "plain outer/pass 64x64 (1 color)/plain")
    for name, r in runs:
        check(r.rc == 0, f"{name}: {r.stderr[-2000:]}")
        check(not r.validation_errors(), "\n".join(r.validation_errors()[:5]))
        g = r.json()["gpu_zones"]
        zones = {z["path"]: z for z in g["zones"]}
        timed = zones.get("outer", {}).get("count", 0)
        check(timed >= 1 and all(zones.get(p, {}).get("count") == timed for p in paths),
              f"{name}: {g['zones']}")
        untimed = g["untimed"]
        # After a fence wait no run overlaps the last: one not read before the next is
        # submitted is counted as resubmitted; one whose completion the layer's own signal
        # had not shown yet (it can trail the app's fence) as possibly overlapping.
        check(untimed["simultaneous_use"] + untimed["resubmitted"] ==
              len(paths) * (rounds - timed) and
              untimed["multiview"] == 1 and
              sum(untimed.values()) == len(paths) * (rounds - timed) + 1,
              f"{name}: {untimed}, {timed} runs timed")
        print(f"{name}: {timed} of {rounds} runs timed, the rest counted "
              f"({untimed['resubmitted']} resubmitted, {untimed['simultaneous_use']} maybe overlapping "
              f"zones); no validation error")


def test_gpu_zones_record_once(build, demo):
    """Issue 34: command buffers recorded once and submitted again every time their frame slot
    comes round (framescope-demo --output offscreen --record-once slot|simultaneous, as vkcube
    and small renderers do), at the frame rate such apps run at: each run's zone is timed,
    though the slot comes round faster than the layer's reader looks (the run is kept by the
    thread that submits the next one). Every run is counted once, timed or not. Where their
    queries are read from the host (FRAMESCOPE_GPU_ZONES=host, what a GPU gets; reset from it
    for command buffers that are not SIMULTANEOUS_USE), at least 90% of the runs are timed
    with every submission timed, and at least 90% of the frames the sampler times with the
    default sampling; on the CPU device's copy path, how many depends on the machine's speed
    (some are). The Khronos validation layer below ours finds nothing, on a Vulkan 1.0
    and a 1.3 instance, either way."""
    frames = 1500
    # host: the blocks of command buffers recorded once without SIMULTANEOUS_USE read and
    # reset from the host (what a GPU gets; forced here, on a CPU device).
    for mode, zones in (("slot", "on"), ("slot", "host"), ("simultaneous", "on"),
                        ("simultaneous", "host")):
        argv = [demo, "--quiet", "--output", "offscreen", "--record-once", mode, "--frames",
                str(frames)]
        mode = f"{mode}, FRAMESCOPE_GPU_ZONES={zones}"
        for sample in ("all", ""):
            r = run_app(argv, None, build, extra_env={"FRAMESCOPE_GPU_SAMPLE": sample,
                                                      "FRAMESCOPE_GPU_ZONES": zones})
            check(r.rc == 0, f"{mode}: {r.stderr[-2000:]}")
            summary = r.json()
            g = summary["gpu_zones"]
            paths = {z["path"]: z for z in g["zones"]}
            timed = paths.get("pass 256x256 (1 color)", {}).get("count", 0)
            untimed = g["untimed"]
            if sample == "all":
                check(timed + sum(untimed.values()) == frames and timed == g["regions"],
                      f"{mode}: {timed} timed and {untimed} untimed of {frames} runs")
                # From the host (a GPU's path) the submitting thread reads the last run
                # itself once its fence shows it ended, as the demo waits on it: no race. On
                # a CPU device's copy path the reader thread must read a run before the slot
                # comes round again, which a loaded machine may not let it do: counted, never
                # lost, but how many depends on the machine's speed.
                least = 0.9 * frames if zones == "host" else 1
                check(timed >= least, f"{mode}: only {timed} of {frames} runs timed: "
                      f"{untimed}")
                print(f"{mode}, every submission timed: {timed} of {frames} runs' zones timed, "
                      f"{untimed['resubmitted']} read too late, {untimed['simultaneous_use']} "
                      "maybe overlapping")
            else:
                sampled = summary["gpu_sampled"]
                basis = (sampled["bias"]["timed_frames"] if sampled["bias"]
                         else sampled["basis_frames"])
                check(basis > 0 and timed >= (0.9 * basis if zones == "host" else 1),
                      f"{mode}: zones timed {timed} times in {basis} frames the sampler timed")
                print(f"{mode}, sampled: zones timed {timed} times over {basis} sampled frames")
    for api, mode, zones in (("1.0", "simultaneous", "on"), ("1.3", "simultaneous", "on"),
                             ("1.0", "slot", "host"), ("1.3", "slot", "host"),
                             ("1.3", "simultaneous", "host")):
        r = validation_run(build, [demo, "--quiet", "--output", "offscreen", "--record-once",
                                   mode, "--frames", "120", "--api-version", api],
                           extra_env={"FRAMESCOPE_GPU_ZONES": zones,
                                      "FRAMESCOPE_GPU_SAMPLE": "all"})
        check(r.rc == 0 and not r.validation_errors(),
              f"Vulkan {api}: {r.rc}\n" + "\n".join(r.validation_errors()[:5]) + r.stderr[-1500:])
        print(f"Vulkan {api} instance, {mode}, FRAMESCOPE_GPU_ZONES={zones}: no validation error")


def test_gpu_storm(build, demo):
    """Thousands of submissions in flight at once (tests/layer-probe storm: each waits on a
    timeline semaphore the host signals after the last is submitted): the layer's query slots
    grow with what is in flight, so every submission is timed and none goes untimed for want
    of a slot; under validation too."""
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    runs = [("plain", 3000, None)]
    if os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
        runs.append(("validation", 300, VALIDATION))
    for name, count, layers in runs:
        r = run_app([probe, "storm", str(count)], None, build,
                    **({"layers": layers} if layers else {}))
        check(r.rc == 0, f"{name}: {r.stderr[-2000:]}")
        check(not r.validation_errors(), "\n".join(r.validation_errors()[:5]))
        m = re.search(r"GPU timing: (\d+) submissions timed; untimed: (\d+) \(no free query "
                      r"slot\), (\d+) \(device-group or protected\), (\d+) \(unreadable\), "
                      r"(\d+) \(in flight at teardown\)", r.stderr)
        check(m, f"{name}: no GPU timing note: {r.stderr[-1500:]}")
        timed, no_slot, _, unreadable, in_flight = (int(x) for x in m.groups())
        check(timed == count and no_slot == 0 and unreadable == 0 and in_flight == 0,
              f"{name}: {m.group(0)}")
        spans = sum(d["spans"] for d in r.json()["device_gpu"])
        check(spans == count, f"{name}: {spans} GPU spans for {count} submissions")
        check("GPU timing added query slots" in r.stderr, f"{name}: slots never grew")
        print(f"{name}: {count} in flight, {timed} timed, 0 untimed for want of a slot")


def sampled_runs(rows):
    """Lengths of the runs of consecutive frames.csv rows that were GPU-timed."""
    runs, n = [], 0
    for r in rows:
        if r["verdict"]:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs + ([n] if n else [])


def test_gpu_sampled(build, demo):
    """The default, sampled GPU timing (FRAMESCOPE_GPU_SAMPLE) on the demo under MAILBOX, as
    fast as lavapipe runs it: whole frames are timed in windows within the budget of timed
    submissions a second, every submission is either timed or counted as sampled out, the
    frames outside the windows have no GPU busy and no verdict (never an idle GPU), and the
    summary's GPU busy and verdict are the timed frames'. The budget is set from the run's own
    frame rate, a tenth of its submissions, so sampling happens on any machine."""
    with Weston() as w:
        probe = run_app([demo, "--frames", "200", "--present-mode", "mailbox"], w, build)
        check(probe.rc == 0, probe.stderr[-2000:])
        fps = probe.json()["fps"]
        rate = max(10, int(fps / 10))
        frames = 1500
        r = run_app([demo, "--frames", str(frames), "--present-mode", "mailbox"], w, build,
                    extra_env={"FRAMESCOPE_GPU_SAMPLE": str(rate)})
    expect_one_summary(r)
    summary, rows, trace, presents = check_capture_consistent(r, expected_frames=frames)
    m = re.search(r"GPU timing: (\d+) submissions timed; untimed: (\d+) \(no free query "
                  r"slot\), (\d+) \(device-group or protected\), (\d+) \(unreadable\), "
                  r"(\d+) \(in flight at teardown\)", r.stderr)
    check(m, f"no GPU timing note: {r.stderr[-1500:]}")
    timed, no_slot, unsupported, unreadable, in_flight = (int(x) for x in m.groups())
    s = re.search(rf"GPU timing sampled \(FRAMESCOPE_GPU_SAMPLE={rate} timed submissions a "
                  r"second\): (\d+) windows of timed frames; (\d+) submissions left untimed",
                  r.stderr)
    check(s, f"no sampling note: {r.stderr[-1500:]}")
    windows, unsampled = int(s.group(1)), int(s.group(2))
    submits = sum(int(x["submits"]) for x in rows)
    # Exact accounting: each of the demo's submissions timed or sampled out, none lost.
    check(timed + no_slot + unsupported + unreadable + in_flight + unsampled == submits,
          f"{timed} timed + {unsampled} sampled out + others != {submits} submissions")
    check(windows > 0 and unsampled > 0, f"{windows} windows, {unsampled} sampled out")
    # The budget holds: what the rate allows over the run, plus the first quarter second's
    # and one window's worth (6 frames of the demo's one submission).
    allowed = rate * summary["duration_s"] + rate / 4 + 6 + 1
    check(timed <= allowed, f"{timed} submissions timed, the budget allows {allowed:.0f}")
    sampled = summary["gpu_sampled"]
    # The frames GPU-timed (the basis, unless they were set aside for the others: issue 34).
    timed_frames = sampled["bias"]["timed_frames"] if sampled["bias"] else sampled["basis_frames"]
    check(sampled["sampled"] and 0 < timed_frames < frames, f"gpu_sampled {sampled}")
    # Whole frames: timed frames come in runs, several frames long.
    runs = sampled_runs(rows)
    check(runs and max(runs) >= 2, f"timed frames not in runs: {runs[:20]}")
    check(timed_frames <= timed, f"{timed_frames} frames GPU-timed by {timed} timed submissions")
    # The timed frames saw the GPU work: a frame's GPU busy is not 0 there.
    busy = [r for r in rows if r["gpu_busy_ms"] and float(r["gpu_busy_ms"]) > 0]
    check(len(busy) >= len([r for r in rows if r["verdict"]]) // 2,
          f"only {len(busy)} timed frames with GPU busy")
    check(f"GPU timed in {timed_frames} of {frames} frames" in r.stderr,
          "the summary does not say which frames carry the GPU numbers")
    # GPU zones only in what a window may time: the demo records its frame's command buffer
    # again each frame (ONE_TIME_SUBMIT), so outside the windows it carries no timestamps,
    # and inside them its pass is still timed. Recorded right after the present that opens or
    # closes a window, at most the first frame of a window can carry a recording without them.
    z = re.search(r"GPU zones left out of (\d+) command buffers recorded again between windows "
                  r"of timed frames .*?; (\d+) timed submissions carried one", r.stderr)
    check(z, f"no note of zones sampled out: {r.stderr[-1500:]}")
    left_out, dark = int(z.group(1)), int(z.group(2))
    check(left_out > 0 and dark <= windows + 1, f"zones left out of {left_out} recordings, "
          f"{dark} timed submissions without them, {windows} windows")
    passes = [x for x in summary["gpu_zones"]["zones"] if x["kind"] == "pass"]
    timed_passes = max((x["count"] for x in passes), default=0)
    check(timed_passes >= timed_frames // 2, f"the pass timed {timed_passes} times "
          f"in {timed_frames} GPU-timed frames")
    check(timed_passes <= timed, f"the pass timed {timed_passes} times, {timed} submissions timed")
    # Within the budget (FIFO, one submission a frame, the default 240 a second) one window
    # follows another with no frame between them: every submission timed.
    with Weston() as w:
        fifo = run_app([demo, "--frames", "60"], w, build, extra_env={"FRAMESCOPE_GPU_SAMPLE": ""})
    expect_one_summary(fifo)
    f_summary, f_rows, _, _ = check_capture_consistent(fifo, expected_frames=60)
    check(f_summary["fps"] < 200, f"FIFO demo at {f_summary['fps']:.0f} fps: not within the budget")
    check(re.search(r"FRAMESCOPE_GPU_SAMPLE=auto: from 240 timed submissions a second\): \d+ "
                    r"windows of timed frames; 0 submissions left untimed", fifo.stderr),
          f"FIFO within the budget was not timed whole: {fifo.stderr[-1500:]}")
    check(not f_summary["gpu_sampled"]["sampled"] and all(r["verdict"] for r in f_rows),
          f"FIFO within the budget: {f_summary['gpu_sampled']}")
    # The default adapts the budget to what a timed frame costs here: the rate it ends at is
    # at most what its own measurements call for (timed frames' extra time at 0.4% of the
    # app's: the difference of the two means, times 9 / 6 for the 3 frames after a window of
    # 6 that carry its cost; it rises a quarter a second at most, falls at once), one window
    # of the demo's one submission a frame a second at least, 240 at most; and the
    # submissions timed stay within the ceiling.
    with Weston() as w:
        auto = run_app([demo, "--frames", str(frames), "--present-mode", "mailbox"], w, build,
                       extra_env={"FRAMESCOPE_GPU_SAMPLE": "auto"})
    expect_one_summary(auto)
    a_summary, a_rows, _, _ = check_capture_consistent(auto, expected_frames=frames)
    a = re.search(r"GPU timing's cost measured as it ran: ([\d.]+) ms a frame \(present to "
                  r"present, or frame mark to mark\) in timed frames and the 3 after them, "
                  r"([\d.]+) ms in the others; (\d+) timed submissions a second allowed",
                  auto.stderr)
    if a_summary["gpu_sampled"]["sampled"]:
        check(a, f"auto sampled with no cost measured: {auto.stderr[-1500:]}")
    if a:
        t_in, t_out, a_rate = float(a.group(1)), float(a.group(2)), int(a.group(3))
        # The rate counts submissions: the demo's per frame (1 here) scale it.
        per_frame = max(1.0, sum(int(x["submits"]) for x in a_rows) / len(a_rows))
        d = abs(t_in - t_out) * 9 / 6
        # No fixed ceiling once the cost is measured: what the cost allows.
        most = float("inf") if d <= 0.0015 else per_frame * max(6, 4 / d)
        # The note rounds each mean to a microsecond and the rate down to a whole one.
        slack = 1 + (most * (0.0015 / d + 0.02) if d > 0.0015 else 0)
        check(per_frame * 6 - 1 <= a_rate <= most + slack,
              f"auto rate {a_rate}/s; its own means {t_in} / {t_out} ms allow {most:.1f} at most")
        # Where the cost allows under half the frames, frames go untimed.
        if most + slack < 0.5 * a_summary["fps"] * per_frame:
            check(a_summary["gpu_sampled"]["sampled"],
                  f"auto rate {a_rate}/s at {a_summary['fps']:.0f} fps, yet every frame timed")
    a_timed = int(re.search(r"GPU timing: (\d+) submissions timed", auto.stderr).group(1))
    print(f"auto: {a.group(0) if a else 'no cost measured'}; {a_timed} timed")
    print(f"{fps:.0f} fps, budget {rate}/s: {timed} timed in {windows} windows, {unsampled} "
          f"sampled out; {timed_frames} of {frames} frames GPU-timed, runs up to "
          f"{max(runs)}; pass timed {timed_passes} times, zones left out of {left_out} "
          f"recordings ({dark} timed without); verdict {summary['verdict']['run']}")


def test_gpu_sampled_verdicts(build, demo):
    """Issue 34, item 4: with GPU timing sampled (FRAMESCOPE_GPU_SAMPLE=10 timed submissions a
    second, so that a run has both kinds of frames), the timed and the untimed frames are
    compared in every run (summary.json's gpu_sampled.bias), and on the demo's four verdicts
    they agree: CPU-, GPU-, display- and cap-bound, each the run's verdict too."""
    cpu_ms = max(30.0, 4 * light_frame_gpu_ms(build, demo))
    runs = [
        ("cpu", ["--frames", "120", "--cpu-ms", f"{cpu_ms:.3f}", "--present-mode", "mailbox"], {}),
        ("gpu", ["--frames", "300", "--gpu-iters", str(iters_for(build, demo, 8.0)),
                 "--present-mode", "mailbox"], {}),
        ("display", ["--frames", "160", "--present-mode", "fifo"], {}),
        ("cap", ["--frames", "160", "--present-mode", "mailbox"], {"FRAMESCOPE_CAP": "50"}),
    ]
    with Weston() as w:
        for want, args, env in runs:
            # Ten timed submissions a second time about one frame in twelve of a run as long
            # as it was sized: a run the machine made much shorter (the load that slowed the
            # sizing gone; CI once timed 4 frames of 300 that took 2.8 ms, not 8) runs again,
            # four times as many frames.
            for tries in range(2):
                r = run_app([demo, "--quiet"] + args, w, build,
                            extra_env=dict(env, FRAMESCOPE_GPU_SAMPLE="10"))
                check(r.rc == 0, f"{want}: {r.stderr[-1500:]}")
                summary = r.json()
                bias = summary["gpu_sampled"]["bias"]
                if bias or tries:
                    break
                at = args.index("--frames") + 1
                args = args[:at] + [str(4 * int(args[at]))] + args[at + 1:]
            check(bias and bias["timed_frames"] >= 8 and bias["untimed_frames"] >= 8,
                  f"{want}: timed and untimed frames not compared: {summary['gpu_sampled']}")
            check(bias["timed_verdict"] == want and bias["untimed_verdict"] == want and
                  summary["verdict"]["run"] == want,
                  f"{want}: run {summary['verdict']['run']}, timed frames "
                  f"{bias['timed_verdict']}, untimed {bias['untimed_verdict']}: {bias}")
            print(f"{want}: {bias['timed_frames']} timed frames at {bias['timed_median_ms']:.3f} "
                  f"ms and {bias['untimed_frames']} others at {bias['untimed_median_ms']:.3f} ms "
                  f"(z {bias['z']:.1f}) agree: {want}-bound")


def test_gpu_sampled_marks(build, demo):
    """An app that presents nothing but marks its frames (the demo offscreen: fscope_frame_mark
    after each frame's submission): with the default budget (auto), each mark ends a frame for
    sampling, so windows are whole marked frames and the budget adapts to what a timed frame
    costs, as with presents (before, such an app was timed in 25 ms runs of submissions at the
    fixed ceiling, and nothing measured its cost). Exact accounting as in gpu_sampled."""
    frames = 3000
    with Weston() as w:
        r = run_app([demo, "--output", "offscreen", "--frames", str(frames)], w, build,
                    extra_env={"FRAMESCOPE_GPU_SAMPLE": "auto"})
    expect_one_summary(r)
    summary, rows, _, _ = check_capture_consistent(r, expected_frames=frames - 1)
    a = re.search(r"GPU timing's cost measured as it ran: ([\d.]+) ms a frame \(present to "
                  r"present, or frame mark to mark\) in timed frames and the 3 after them, "
                  r"([\d.]+) ms in the others; (\d+) timed submissions a second allowed",
                  r.stderr)
    check(a, f"marked frames: no cost measured, the budget never adapted: {r.stderr[-1500:]}")
    t_in, t_out, a_rate = float(a.group(1)), float(a.group(2)), int(a.group(3))
    # Frame to frame: the means are of marked frames, so near the run's own mean frame time
    # (a timed frame and the 3 after it may cost several times an untimed one on lavapipe).
    mean_ms = 1000 * summary["duration_s"] / max(1, len(rows))
    check(0.2 * mean_ms <= t_out <= 5 * mean_ms,
          f"untimed frames' mean {t_out} ms against the run's {mean_ms:.3f} ms a frame")
    d = abs(t_in - t_out) * 9 / 6
    most = float("inf") if d <= 0.0015 else max(6, 4 / d) * (1 + 0.0015 / d + 0.02) + 1
    check(6 - 1 <= a_rate <= most, f"rate {a_rate}/s outside one window a second .. what its "
          f"own means {t_in} / {t_out} ms allow ({most:.1f})")
    m = re.search(r"GPU timing: (\d+) submissions timed; untimed: (\d+) \(no free query "
                  r"slot\), (\d+) \(device-group or protected\), (\d+) \(unreadable\), "
                  r"(\d+) \(in flight at teardown\)", r.stderr)
    s = re.search(r"GPU timing sampled \(FRAMESCOPE_GPU_SAMPLE=auto: from 240 timed "
                  r"submissions a second\): (\d+) windows of timed frames; (\d+) submissions "
                  r"left untimed", r.stderr)
    check(m and s, f"no GPU timing or sampling note: {r.stderr[-1500:]}")
    timed, unsampled = int(m.group(1)), int(s.group(2))
    others = sum(int(x) for x in m.groups()[1:])
    # The demo submits once a frame, and once before its first mark opens the first frame.
    check(timed + unsampled + others == frames,
          f"{timed} timed + {unsampled} sampled out + {others} others != {frames} submissions")
    runs = sampled_runs(rows)
    check(runs and max(runs) >= 2, f"timed frames not in runs: {runs[:20]}")
    print(f"{len(rows)} marked frames, {timed} submissions timed in runs {runs[:12]}; "
          f"{a.group(0)}")


def test_zink_draws(build, demo):
    """OpenGL through Mesa's zink (glmark2-wayland on lavapipe), which draws through
    vkCmdDrawMultiEXT: draws per frame are counted, and match what glmark2's build scene issues
    (one draw of its model a frame)."""
    need("glmark2-wayland")
    env = {"MESA_LOADER_DRIVER_OVERRIDE": "zink", "LIBGL_ALWAYS_SOFTWARE": "1"}
    with Weston() as w:
        r = run_app(["glmark2-wayland", "-s", "160x120", "-b", "build:duration=1.5"], w, build,
                     extra_env=env)
    check(r.rc == 0, r.stderr[-2000:])
    s = r.json()
    frames = s["frames"]
    check(frames >= 10, f"only {frames} frames")
    draws = s["per_frame"]["draws"]
    check(abs(draws - 1.0) <= 2.0 / frames, f"{draws} draws per frame; glmark2's build scene "
          "draws its model once a frame")
    check(s["device_gpu"][0]["spans"] > 0, "zink's submissions not GPU-timed")
    # Issue 36, item 5: against glmark2's own count. It prints the scene's frames a second;
    # its scene is the frames after its set-up, ours every present, both near its rate.
    own = re.search(r"\[build\] duration=1.5: FPS: (\d+) FrameTime: ([\d.]+) ms",
                    r.stdout + r.stderr)
    check(own, f"no FPS line from glmark2: {(r.stdout + r.stderr)[-1500:]}")
    own_fps = int(own.group(1))
    check(abs(s["fps"] - own_fps) <= 0.1 * own_fps + 2,
          f"framescope says {s['fps']:.1f} fps, glmark2 {own_fps}")
    check(abs(frames - own_fps * 1.5) <= 0.1 * own_fps * 1.5 + 3,
          f"{frames} frames, glmark2's {own_fps} a second for 1.5 s")
    p = s["presentation"]
    check(p["presented"] + p["discarded"] + p["pending"] + p["untracked"] == frames,
          f"shown tally {p} does not hold the {frames} frames")
    # glmark2 outruns the display: never display- or cap-bound.
    check(s["verdict"]["run"] in ("gpu", "cpu", "sync") and not s["verdict"]["shares"]["display"],
          f"glmark2 unpaced: {s['verdict']['run']}-bound, {s['verdict']['reason']}")
    # Issue 19: the shown cadence is the compositor's, said as such: never "presenting every"
    # the compositor's cadence beside "the app presents every" its own.
    diagnoses = s["presentation"]["diagnosis"]
    check(not any(d.startswith("presenting every") for d in diagnoses) and
          all("the app presents every" in d for d in diagnoses
              if d.startswith("the compositor shows")), f"diagnoses: {diagnoses}")
    print(f"zink glmark2 build: {frames} frames ({s['fps']:.0f} fps; glmark2: {own_fps}), "
          f"{s['verdict']['run']}-bound, {draws:.3f} draws per frame; " +
          "; ".join(diagnoses))


def test_closed_stderr(build, demo):
    """An app that closes fds 1 and 2 at exit and opens a file of its own under those numbers
    (tests/layer-probe closed-stderr): the summary still reaches the terminal's stderr, through
    the copy the library kept at start-up, and the app's file holds only what the app wrote."""
    path = os.path.join(tempfile.mkdtemp(prefix="fscope-stderr-"), "app.log")
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    r = run_app([probe, "closed-stderr", path], None, build, capture=False)
    check(r.rc == 0, r.stderr[-2000:])
    check(len(r.summaries()) == 1, f"summary lost with stderr closed:\n{r.stderr[-2000:]}")
    data = open(path).read()
    check(data == "app data\n" * 2, f"the app's file was written into: {data[:300]!r}")
    print("stderr closed: summary on the terminal's stderr, the app's file untouched")


def validation_run(build, argv, extra_env=None):
    with Weston() as w:
        r = run_app(argv, w, build, layers=VALIDATION, extra_env=extra_env)
    return r


def test_validation(build, demo):
    """Khronos validation below our layer sees our injected commands and finds nothing."""
    if not os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
        print("validation layer not installed")
        sys.exit(SKIP)
    runs = {
        "fifo": [demo, "--quiet", "--frames", "60"],
        "mailbox": [demo, "--quiet", "--frames", "60", "--present-mode", "mailbox"],
        "recreate": [demo, "--quiet", "--frames", "60", "--recreate-every", "15"],
        "submit2": [demo, "--quiet", "--frames", "60", "--submit2"],
        "threads": [demo, "--quiet", "--frames", "60", "--threads", "3"],
        # GPU zones: timestamps written into the app's command buffers around labels and passes
        "passes": [demo, "--quiet", "--frames", "60", "--passes", "light:10,heavy:30"],
    }
    for name, argv in runs.items():
        r = validation_run(build, argv)
        expect_one_summary(r)
        errors = r.validation_errors()
        check(not errors, f"{name}: validation errors:\n" + "\n".join(errors[:10]))
        timed = r.summary_line("note") or ""
        check("submissions timed" in r.stderr, f"{name}: GPU timing missing")
        print(f"{name}: 0 validation errors")
    # The same check must be able to fail: make our injected commands invalid on purpose.
    r = validation_run(build, runs["fifo"], {"FRAMESCOPE_TEST_FAULT": "skip-query-reset"})
    check(r.validation_errors(), "validation did not catch a timestamp written to an unreset "
          "query: it cannot be seeing our commands")
    print(f"fault injected: validation reported {len(r.validation_errors())} error lines")


def test_lifecycles(build, demo):
    """Two instances, devices created and destroyed repeatedly, an instance never destroyed:
    no crash, exactly one summary each."""
    cases = {
        "two-instances": ["--instances", "2"],
        "device-cycles": ["--device-cycles", "3"],
        "no-destroy": ["--no-destroy"],
    }
    for name, args in cases.items():
        with Weston() as w:
            r = run_app([demo, "--quiet", "--frames", "30"] + args, w, build)
        expect_one_summary(r)
        summary, rows, _, _ = check_capture_consistent(r, expected_frames=30)
        print(f"{name}: one summary, {len(rows)} frames")


def test_bad_input(build, demo):
    """Malformed FRAMESCOPE_* values: a one-line warning each that echoes the value escaped,
    defaults, the app unaffected; keywords in any case; what FRAMESCOPE_LOG=info says."""
    def warnings_of(r):
        return [l for l in r.stderr.splitlines() if l.startswith("framescope: warning:")]

    # 14,000 bad detail entries around a good one (a generated value) make one line.
    detail = ",".join(["frame=x"] * 7000 + ["frame/render=2"] + ["x=9"] * 7000)
    bad = {
        "FRAMESCOPE_SUMMARY": ".hidden",
        "FRAMESCOPE_GPU": "maybe",
        "FRAMESCOPE_GPU_ZONES": "hosted",
        "FRAMESCOPE_GPU_SAMPLE": "0",
        # A newline in a value must not start a line of its own: here, a second summary.
        "FRAMESCOPE_LOG": "loud\nframescope: summary for forged",
        "FRAMESCOPE_RING_EVENTS": "-4",
        "FRAMESCOPE_DETAIL": detail,
        "FRAMESCOPE_CAP": " 60",
        "FRAMESCOPE_TRACE_WINDOW": "10m",
        "FRAMESCOPE_KEEP_MINUTES": "0",
        "FRAMESCOPE_TEST_FAULT": "everything",
        "FRAMESCOPE_TYPO": "1",
        # Not a descriptor: the app records on its own (the capture below is whole).
        "FRAMESCOPE_RECORDING_FD": "0x5",
    }
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", "20"], w, build, extra_env=bad)
    expect_one_summary(r)
    warnings = warnings_of(r)
    for name, value in bad.items():
        mine = [l for l in warnings if re.search(rf"\b{name}\b", l)]
        check(len(mine) == 1, f"{name}={value[:80]!r}: expected one warning line, got {mine}")
    check(any("FRAMESCOPE_LOG='loud\\nframescope: summary for forged'" in l for l in warnings),
          "the newline in FRAMESCOPE_LOG is not shown as \\n")
    check(any("FRAMESCOPE_DETAIL: ignored 14000 of 14001 entries; the first: 'frame=x'" in l
              for l in warnings), "FRAMESCOPE_DETAIL's warning does not count and name them")
    check(any("FRAMESCOPE_SUMMARY='.hidden' is not off, stderr, full or a path" in l for l in warnings),
          "FRAMESCOPE_SUMMARY=.hidden not refused")
    check(not os.path.exists(".hidden"), "FRAMESCOPE_SUMMARY=.hidden was written")
    check(any("FRAMESCOPE_TRACE_WINDOW='10m' is not a number of seconds from 1 to 604800 or all; "
              "trace.json keeps the last 600 s" in l for l in warnings),
          "FRAMESCOPE_TRACE_WINDOW=10m not refused")
    check(any("FRAMESCOPE_KEEP_MINUTES='0' is not a number of minutes from 0.001 to 10080 or "
              "all; ignored (the default: every frame's row of the last 5 minutes)" in l
              for l in warnings), "FRAMESCOPE_KEEP_MINUTES=0 not refused")
    check(any("FRAMESCOPE_GPU_ZONES='hosted' is not on, off or host; using on" in l
              for l in warnings), "FRAMESCOPE_GPU_ZONES=hosted not refused")
    # The summary fell back to stderr's one screen: GPU timing's note is in summary.json.
    check(any("submissions timed" in n for n in r.json()["notes"]),
          "FRAMESCOPE_GPU=maybe did not fall back to on")
    check("FRAMESCOPE_GPU_SAMPLE='0' is not auto, all or a number of timed submissions a second "
          "in 1..1000000; using auto" in r.stderr and
          any("FRAMESCOPE_GPU_SAMPLE=auto: from 240 timed" in n for n in r.json()["notes"]),
          "FRAMESCOPE_GPU_SAMPLE=0 not refused for the default")
    summary, _, _, _ = check_capture_consistent(r, expected_frames=20)
    check(summary["caps"] == [], "FRAMESCOPE_CAP=' 60' capped the app")

    # Every near-miss of a rate and a path is refused the same way; keywords take any case.
    cases = [
        ({"FRAMESCOPE_CAP": "0x3c", "FRAMESCOPE_SUMMARY": "..", "FRAMESCOPE_GPU": "OFF",
          "FRAMESCOPE_LOG": "Info"}, ["FRAMESCOPE_CAP", "FRAMESCOPE_SUMMARY"]),
        ({"FRAMESCOPE_CAP": "60 ", "FRAMESCOPE_SUMMARY": "STDERR", "FRAMESCOPE_LOG": "Debug"},
         ["FRAMESCOPE_CAP"]),
        ({"FRAMESCOPE_CAP": "Auto", "FRAMESCOPE_PRESENT": "On", "FRAMESCOPE_LOG": "INFO",
          "FRAMESCOPE_RING_EVENTS": "4096", "FRAMESCOPE_DETAIL": "frame/render=2"}, []),
    ]
    runs = []
    for env, refused_names in cases:
        with Weston() as w:
            r = run_app([demo, "--quiet", "--frames", "20"], w, build, extra_env=env)
        expect_one_summary(r)
        warnings = warnings_of(r)
        check(len(warnings) == len(refused_names), f"{env}: warnings {warnings}, expected one "
              f"each for {refused_names}")
        for name in refused_names:
            check(any(f"{name}='{env[name]}'" in l for l in warnings),
                  f"{name}={env[name]!r}: no warning naming it: {warnings}")
        runs.append(r)
    gpu_off, debug, info = runs

    # Every variable the code reads is documented in framescope(1)'s ENVIRONMENT section, the
    # one place the variables are listed, and known to the layer: each one set (empty: what the
    # parts take as unset; run_app sets FRAMESCOPE_OUTPUT) draws no "unknown variable" warning
    # (FRAMESCOPE_WAKEUPS once did, though it was obeyed). In the page each is a term of its
    # own: a line "*FRAMESCOPE_X*=VALUES" (or bare) followed by its indented description.
    here = os.path.dirname(os.path.abspath(__file__))
    sources = ""
    for part in ("src", "layers"):
        for root, _, files in os.walk(os.path.join(here, "..", part)):
            sources += "".join(open(os.path.join(root, f)).read() for f in files
                               if f.endswith((".c", ".h")))
    read = set(re.findall(r'getenv\("(FRAMESCOPE_[A-Z0-9_]+)"', sources))
    with open(os.path.join(here, "..", "tools", "man", "framescope.1.scd")) as f:
        page = f.read()
    environment = page.split("\n# ENVIRONMENT\n", 1)[-1].split("\n# ", 1)[0]
    in_man = set(re.findall(r"^\*(FRAMESCOPE_[A-Z0-9_]+)\*(?:=[^\n]*)?\n\t", environment, re.M))
    check(len(read) >= 15 and "\n# ENVIRONMENT\n" in page and read == in_man,
          f"variables read but not in framescope(1): {sorted(read - in_man)}; in framescope(1) "
          f"but never read: {sorted(in_man - read)}")
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", "5"], w, build,
                    extra_env={name: "" for name in read if name != "FRAMESCOPE_OUTPUT"})
    unknown = [l for l in r.stderr.splitlines() if "unknown variable" in l]
    check(unknown == [], f"documented variables called unknown: {unknown}")
    check(gpu_off.json()["caps"] == [] and debug.json()["caps"] == [],
          "a malformed FRAMESCOPE_CAP capped the app")
    check(not gpu_off.json()["gpu_timed"], "FRAMESCOPE_GPU=OFF did not turn GPU timing off")
    check(len(info.json()["caps"]) == 1, "FRAMESCOPE_CAP=Auto did not cap")

    # info: once, what the layer enabled; per device, what GPU timing added and how it times;
    # per surface, whether presentation is tracked. debug adds each queue's timing set-up.
    lines = info.stderr.splitlines()
    shown = []
    for want in ("framescope: layer enabled: GPU timing on, presentation tracking on, frame cap "
                 "auto", "framescope: GPU timing adds to the device: extensions: ",
                 "framescope: device 1: GPU timing resets queries ",
                 "framescope: presentation tracking is on for a surface"):
        mine = [l for l in lines if l.startswith(want)]
        check(len(mine) == 1, f"FRAMESCOPE_LOG=INFO: {len(mine)} lines starting {want!r}")
        shown += mine
    check("debug:" not in info.stderr, "FRAMESCOPE_LOG=INFO printed debug lines")
    check("framescope: layer enabled: GPU timing off, presentation tracking on, frame cap off"
          in gpu_off.stderr and "GPU timing is off (FRAMESCOPE_GPU): nothing added to the device"
          in gpu_off.stderr, "FRAMESCOPE_LOG=Info with FRAMESCOPE_GPU=OFF: not said")
    check("framescope: debug: device 1: queue family 0 " in debug.stderr,
          "FRAMESCOPE_LOG=Debug did not describe the queue's timing set-up")
    print("\n".join(shown))

    # An unwritable capture directory is reported, and the summary still reaches stderr.
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", "20"], w, build, capture=False,
                    extra_env={"FRAMESCOPE_OUTPUT": "/proc/framescope-cannot-write"})
    expect_one_summary(r)
    check("could not write the capture" in r.stderr, "unwritable FRAMESCOPE_OUTPUT not reported")
    check("frames      20 in" in r.stderr, "summary missing after a failed capture")
    print(f"{len(bad)} bad values warned once each, escaped; {len(cases)} runs of near-misses "
          "refused and keywords in any case taken; info says what is enabled; unwritable output "
          "reported")


def capture_kib(path):
    """What a capture takes on disk (its recording is sparse), in KiB."""
    return sum(os.stat(os.path.join(path, f)).st_blocks for f in os.listdir(path)) // 2


def test_capture_safety(build, demo):
    """Captures are all of one run or nothing, never written through a directory another user
    controls, and a full disk leaves the previous capture whole with the error named."""
    import glob
    import subprocess
    import tempfile
    base = tempfile.mkdtemp(prefix="fscope-safety-")

    def run(frames, out, extra=None):
        # MAILBOX: the frame count matters here, not the display's pace.
        with Weston() as w:
            return run_app([demo, "--quiet", "--frames", str(frames), "--present-mode",
                            "mailbox"], w, build, capture=False,
                           extra_env=dict({"FRAMESCOPE_OUTPUT": out}, **(extra or {})))

    # A second run into the same directory replaces the whole capture, nothing mixed.
    out = os.path.join(base, "capture")
    first = run(10, out)
    check(first.rc == 0 and os.path.exists(os.path.join(out, "summary.json")), first.stderr[-1500:])
    second = run(20, out)
    expect_one_summary(second)
    s = json.load(open(os.path.join(out, "summary.json")))
    rows = open(os.path.join(out, "frames.csv")).read().splitlines()
    check(s["frames"] == 20 and len(rows) == 21, f"mixed capture: {s['frames']} frames, "
          f"{len(rows) - 1} rows")
    check(not glob.glob(os.path.join(base, ".*tmp-*")), "temporary directories left behind")

    if os.geteuid() == 0:
        # Owned by another user and writable by all, with a link planted where a temporary
        # file might go: refused, and the file the link points at is untouched.
        victim = os.path.join(base, "victim")
        open(victim, "w").write("root's file\n")
        hostile = os.path.join(base, "hostile")
        os.mkdir(hostile)
        os.symlink(victim, os.path.join(hostile, "summary.json.tmp"))
        os.chown(hostile, 65534, 65534)
        os.chmod(hostile, 0o777)
        r = run(10, hostile)
        expect_one_summary(r)
        check("owned by another user" in r.stderr, f"hostile directory not refused:\n{r.stderr}")
        check(open(victim).read() == "root's file\n", "the planted link was written through")
        check(sorted(os.listdir(hostile)) == ["summary.json.tmp"], os.listdir(hostile))
    # Ours but writable by others, and a link in place of the directory: refused too.
    open_dir = os.path.join(base, "open")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o777)
    r = run(10, open_dir)
    check("other users can write to it" in r.stderr and not os.listdir(open_dir), r.stderr[-800:])
    link = os.path.join(base, "link")
    os.symlink(out, link)
    r = run(10, link)
    check("symbolic link" in r.stderr, f"a link as the capture directory not refused: {r.stderr}")

    # A full disk: the error named, the previous capture left whole, nothing half-written.
    # The disk holds twice a 3-frame capture (measured here), never a 600-frame one.
    small = {"FRAMESCOPE_RING_EVENTS": "64"}
    probe = os.path.join(base, "probe")
    check(run(3, probe, small).rc == 0, "the 3-frame probe capture failed")
    disk_kib = max(2 * capture_kib(probe), 64)
    disk = os.path.join(base, "tiny")
    os.mkdir(disk)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={disk_kib}k", "tmpfs", disk],
                             capture_output=True).returncode == 0
    if mounted:
        try:
            out = os.path.join(disk, "capture")
            r = run(3, out, small)
            check(r.rc == 0 and os.path.exists(os.path.join(out, "frames.csv")),
                  f"a small capture did not fit in {disk_kib} KiB: {r.stderr[-800:]}")
            before = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
            r = run(600, out, small)
            check("No space left on device" in r.stderr, f"ENOSPC not named:\n{r.stderr[-1500:]}")
            after = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
            check(after == before, "the previous capture changed after a failed write")
            check(os.listdir(disk) == ["capture"], f"left behind: {os.listdir(disk)}")
        finally:
            subprocess.run(["umount", disk])
    else:
        print("cannot mount a tmpfs here: the full-disk case is not run")
    # An unwritable summary path is reported and the summary printed instead.
    r = run(5, os.path.join(base, "c3"), {"FRAMESCOPE_SUMMARY": "/proc/no-such-dir/summary.txt"})
    check("cannot write the summary" in r.stderr and "frames      5 in" in r.stderr,
          r.stderr[-1000:])
    # The summary off: a capture asked for is still written whole; with none asked for the
    # run is not read back at exit at all (judging it would only slow the app's exit, the more
    # the longer it ran), and nothing is printed.
    quiet = os.path.join(base, "quiet")
    r = run(10, quiet, {"FRAMESCOPE_SUMMARY": "off"})
    rows = open(os.path.join(quiet, "frames.csv")).read().splitlines()
    check(r.rc == 0 and not r.summaries() and len(rows) == 11,
          f"summary off with a capture: {len(rows) - 1} rows\n{r.stderr[-1000:]}")
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", "10", "--present-mode", "mailbox"], w, build,
                    capture=False, extra_env={"FRAMESCOPE_SUMMARY": "off",
                                              "FRAMESCOPE_LOG": "debug"})
    check(r.rc == 0 and not r.summaries() and "the recording is not read back" in r.stderr and
          not re.search(r"read back \d+ KiB", r.stderr),
          f"summary off, no capture: the run was read back or judged\n{r.stderr[-1500:]}")
    shutil.rmtree(base, ignore_errors=True)
    print("capture replaced whole; hostile, open and linked directories refused; "
          + ("ENOSPC left the previous capture whole" if mounted else "ENOSPC not run"))


def test_implicit(build, demo):
    """As an implicit layer: off by default, on with FRAMESCOPE=1, off again with
    DISABLE_FRAMESCOPE=1, and on when named in VK_INSTANCE_LAYERS."""
    import tempfile
    data_home = tempfile.mkdtemp(prefix="fscope-implicit-")
    implicit = os.path.join(data_home, "vulkan", "implicit_layer.d")
    os.makedirs(implicit)
    shutil.copy(os.path.join(build, "layers", "dev", "VkLayer_framescope.json"), implicit)
    base = {"XDG_DATA_HOME": data_home}
    cases = [
        ("default off", {}, None, 0),
        ("FRAMESCOPE=1", {"FRAMESCOPE": "1"}, None, 1),
        ("disabled", {"FRAMESCOPE": "1", "DISABLE_FRAMESCOPE": "1"}, None, 0),
        ("named", {}, "VK_LAYER_FRAMESCOPE", 1),
    ]
    with Weston() as w:
        for name, env, layers, summaries in cases:
            r = run_app([demo, "--quiet", "--frames", "10"], w, build, capture=False,
                        layers=layers, extra_env=dict(base, **env))
            check(r.rc == 0, f"{name}: app failed: {r.stderr[-1500:]}")
            check(len(r.summaries()) == summaries,
                  f"{name}: {len(r.summaries())} summaries, expected {summaries}")
            print(f"{name}: {summaries} summary")
    shutil.rmtree(data_home)



def walk_rows(stdout):
    rows = {}
    for line in stdout.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("vk"):
            rows[name] = dict(field.split("=", 1) for field in rest.split())
    return rows


LOADER_TRAMPOLINES = {"vkGetDeviceProcAddr", "vkDestroyDevice", "vkGetDeviceQueue",
                      "vkGetDeviceQueue2", "vkAllocateCommandBuffers"}


def test_hook_walk(build, demo):
    """Issue 32, item 1: for every entry point the layer hooks (layers/hook_list.h, the lists its
    lookups are built from), over a device with no extension enabled, on a 1.0 and a 1.3
    instance: vkGet*ProcAddr gives a function with the layer exactly where it does without,
    and calling it never jumps to NULL where the driver's own did not; a call that returned
    without the layer does not hang with it. Then debug utils as mpv calls them."""
    probe = os.path.join(build, "tests", "layer-probe")
    # What a call the driver ignored may do in the layer, which reads its arguments: return, or
    # fault on a NULL that the arguments may not be (zeros are bad arguments for most). A
    # sanitizer build reports such a read before it faults: UBSan halts (exit 1), ASan aborts.
    faults = ("ok", "crash") + (("exit-1", "signal-6") if os.environ.get("FSCOPE_TEST_PRELOAD")
                                else ())
    for api in ("1.0", "1.3"):
        runs = {}
        for label, layers in (("plain", None), ("layer", "VK_LAYER_FRAMESCOPE")):
            r = run_app([probe, "walk", api], None, build, layers=layers, capture=False,
                        extra_env={"FRAMESCOPE_SUMMARY": "off"})
            check(r.rc == 0, f"{api} {label}: layer-probe walk exited {r.rc}: {r.stderr[-2000:]}")
            runs[label] = r
        plain, layer = walk_rows(runs["plain"].stdout), walk_rows(runs["layer"].stdout)
        check(plain.keys() == layer.keys() and len(plain) > 100, f"{api}: walked {len(plain)} names")
        ours = 0
        for name, want in plain.items():
            got = layer[name]
            for key in ("gipa", "gdpa"):
                check(got[key] == want[key], f"{api}: {name}: {key}={got[key]} with the layer, "
                      f"{want[key]} without")
            for key in ("call_gipa", "call_gdpa"):
                check(got[key] != "null" or want[key] == "null",
                      f"{api}: {name} ({key}) jumps to NULL with the layer, {want[key]} without")
                check(want[key] != "ok" or got[key] in faults,
                      f"{api}: {name} ({key}) returned without the layer, {got[key]} with it")
            # Every device function the app can get must be ours (the walk went through the
            # hooks), but for those the loader answers with its own trampoline, which calls down
            # the chain to ours.
            if got["gdpa"] == "1" and name not in LOADER_TRAMPOLINES:
                check(got["ours"] == "1", f"{api}: {name} handed out by the device, not hooked")
                ours += 1
        check(ours >= 60, f"{api}: only {ours} hooked functions handed out")
        utils = [l for l in runs["layer"].stdout.splitlines() if l.startswith("debug-utils")]
        check(utils == [l for l in runs["plain"].stdout.splitlines() if l.startswith("debug-utils")]
              and "debug-utils label=returned" in utils, f"{api}: debug utils {utils}")
        print(f"{api}: {len(plain)} names walked, {ours} hooks handed out, as without the layer; "
              + ", ".join(utils))


def llvmpipe_device_name():
    """The name libplacebo needs in --vulkan-device to accept a CPU device."""
    out = subprocess.run(["vulkaninfo", "--summary"], capture_output=True, text=True).stdout
    m = re.search(r"deviceName\s*=\s*(llvmpipe[^\n]*)", out)
    return m.group(1).strip() if m else None


def test_mpv(build, demo):
    """Issue 32, item 1: mpv (libplacebo fetches debug utils it never enabled) plays a generated
    clip on headless Weston under the layer, with --vo=gpu-next and --vo=gpu: it exits 0 and
    framescope counts the presents libplacebo logs, one frame each. Issue 36, item 1: a 60 fps
    clip, faster than headless Weston shows frames, so that mpv waits for the compositor's frame
    callbacks in poll, outside Vulkan: display-bound, woken by the compositor (on the code
    before, cpu-bound: "CPU work" that was its thread asleep)."""
    need("mpv")
    need("ffmpeg")
    need("vulkaninfo")
    device = llvmpipe_device_name()
    check(device, "vulkaninfo names no llvmpipe device")
    work = tempfile.mkdtemp(prefix="fscope-mpv-")
    clip = os.path.join(work, "clip.mkv")
    clip_frames = 90
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size=160x120:rate=60:duration={clip_frames / 60}", clip],
                   check=True)
    for vo in ("gpu-next", "gpu"):
        argv = ["mpv", "--no-config", f"--vo={vo}", "--gpu-api=vulkan",
                "--gpu-context=waylandvk", f"--vulkan-device={device}", "--no-audio",
                # libplacebo logs each vkQueuePresentKHR it makes: mpv's own count
                "--msg-level=all=warn,vo=trace",
                clip]
        with Weston() as w:
            r = run_app(argv, w, build)
        check(r.rc == 0, f"mpv --vo={vo} exited {r.rc} under the layer: {r.stderr[-2000:]}")
        mpv_presents = len(re.findall(r"vkQueuePresentKHR waits on", r.stdout + r.stderr))
        check(mpv_presents >= clip_frames * 2 // 3,
              f"--vo={vo}: mpv presented {mpv_presents} times for {clip_frames} frames")
        summary, rows, _, _ = check_capture_consistent(r, expected_frames=mpv_presents)
        verdict = summary["verdict"]
        if summary["hitches"]["wakeups"]["state"] == "on":
            check(verdict["run"] == "display" and "asleep outside Vulkan waiting for the "
                  "display" in verdict["reason"],
                  f"--vo={vo}: {verdict['run']}-bound: {verdict['reason']}")
        print(f"mpv --vo={vo}: exit 0, {mpv_presents} presents by mpv's log, "
              f"{summary['frames']} frames by framescope, verdict {summary['verdict']['run']}")
    shutil.rmtree(work, ignore_errors=True)



def find_key(tree, key):
    """The first value under key anywhere in a parsed JSON tree (None: nowhere)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for value in tree:
            found = find_key(value, key)
            if found is not None:
                return found
    return None


def fd_links(pid):
    links = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            links[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass  # closed while listed
    return links


def run_fork_helper(build, demo, fd_limit=None, extra_env=None):
    """The demo under the layer forks a helper at frame 30 that lives on past it (tools/demo
    --fork-helper-at). Returns (stderr, capture summary, helper's descriptors as they were
    once the demo had exited)."""
    from vkharness import layer_env
    work = tempfile.mkdtemp(prefix="fscope-fork-")
    capture = os.path.join(work, "capture")
    out_path, err_path = os.path.join(work, "out"), os.path.join(work, "err")

    def limit():
        if fd_limit:
            import resource
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, hard))

    with Weston() as w:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRAMESCOPE")}
        env.update(w.env())
        env.update(layer_env(build))
        env.update({"FRAMESCOPE_OUTPUT": capture, "FRAMESCOPE_WAKEUPS": "on"})
        env.update(extra_env or {})
        with open(out_path, "w") as out, open(err_path, "w") as err:
            # Files, not pipes: the helper inherits stdout and stderr and outlives the demo.
            app = subprocess.Popen([demo, "--quiet", "--frames", "60", "--fork-helper-at", "30"],
                                   env=env, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                   preexec_fn=limit)
            try:
                rc = app.wait(timeout=120)
                m = re.search(r"^helper (\d+)$", open(out_path).read(), re.M)
                check(m, f"the demo started no helper: {open(err_path).read()[-2000:]}")
                helper = int(m.group(1))
                links = fd_links(helper)
            finally:
                app.stdin.close()  # the helper's stdin: it exits
    stderr = open(err_path).read()
    check(rc == 0, f"demo exited {rc}: {stderr[-2000:]}")
    check(stderr.count("framescope: frames") <= 1 and "verdict" in stderr,
          f"the app's summary missing, or the helper wrote one:\n{stderr[-3000:]}")
    summary = json.load(open(os.path.join(capture, "summary.json")))
    check(summary["frames"] == 60, f"{summary['frames']} frames in the capture")
    shutil.rmtree(work, ignore_errors=True)
    return stderr, summary, links


def test_fork_helper(build, demo):
    """Issue 32, item 2: a child forked without exec that outlives the app (a crash handler's
    helper) keeps none of what framescope held: no scheduler perf events (which cost every
    context switch of the machine while they live), no recording memfd or stream file, no
    /proc handles; the numbers it inherited above the app's range point at /dev/null. The app's
    own summary and capture are whole, and the child writes none."""
    stderr, summary, links = run_fork_helper(build, demo)
    wakeups = find_key(summary, "wakeups") or {}
    ours = {fd: target for fd, target in links.items()
            if "framescope-recording" in target or "perf_event" in target
            or "io_uring" in target or target.startswith("/proc/")}
    check(not ours, f"the helper kept framescope's descriptors: {ours}")
    high = {fd: target for fd, target in links.items() if fd >= 1024 and target != "/dev/null"}
    check(not high, f"the helper kept descriptors above the app's range: {high}")
    placeholders = sum(1 for fd, target in links.items() if fd >= 1024)
    check(placeholders >= 3, f"only {placeholders} of framescope's numbers were inherited: "
          f"{links}")
    print(f"helper kept {len(links)} descriptors, none of framescope's ({placeholders} of its "
          f"numbers point at /dev/null); wake-up chain in the app: {wakeups.get('state')}"
          + (f" ({wakeups.get('events')} events)" if wakeups.get("state") == "on" else
             f" ({wakeups.get('why')})"))


def test_fd_limit(build, demo):
    """Issue 32, item 5: under the desktop's default ulimit -n 1024, which leaves no room above
    the app's range, framescope's descriptors sit in the top quarter of what the limit allows
    (768 and up), said once (at FRAMESCOPE_LOG=info: it is every desktop's default); none
    among the app's low numbers. Read from the fork helper's
    table, a copy of the app's at frame 30 with ours pointed at /dev/null."""
    stderr, summary, links = run_fork_helper(build, demo, fd_limit=1024,
                                             extra_env={"FRAMESCOPE_LOG": "info"})
    said = [l for l in stderr.splitlines() if "descriptor limit" in l]
    check(len(said) == 1 and "ulimit -n 1024" in said[0] and "768" in said[0],
          f"the limit said {len(said)} times: {said}")
    ours = sorted(fd for fd, target in links.items() if target == "/dev/null" and fd > 2)
    check(len(ours) >= 3, f"only {len(ours)} of framescope's descriptors seen: {links}")
    check(all(768 <= fd < 1024 for fd in ours), f"framescope's descriptors at {ours}: {links}")
    print(f"ulimit -n 1024: framescope's {len(ours)} descriptors at {ours[0]}..{ours[-1]}; "
          f"said once: {said[0]}")


def test_special_paths(build, demo):
    """Issue 32, items 3 and 6, inside the app: FRAMESCOPE_SUMMARY naming a FIFO nobody reads
    and FRAMESCOPE_TEST_DRM_FDINFO naming a FIFO never hold the app's exit (a hang fails the
    run's timeout); the summary then reaches stderr, and each is said. A FRAMESCOPE_OUTPUT with
    a newline and an escape sequence in it forges no line: the capture error shows it
    escaped."""
    work = tempfile.mkdtemp(prefix="fscope-paths-")
    summary_fifo, fdinfo_fifo = os.path.join(work, "summary"), os.path.join(work, "fdinfo")
    os.mkfifo(summary_fifo)
    os.mkfifo(fdinfo_fifo)
    blocker = os.path.join(work, "file")
    open(blocker, "w").close()
    forged = blocker + "/capture\n\x1b[2Jframescope: forged"
    argv = [demo, "--quiet", "--frames", "10"]
    with Weston() as w:
        r1 = run_app(argv, w, build, capture=False, timeout=60,
                     extra_env={"FRAMESCOPE_SUMMARY": summary_fifo})
        r2 = run_app(argv, w, build, capture=False, timeout=60,
                     extra_env={"FRAMESCOPE_TEST_DRM_FDINFO": fdinfo_fifo})
        r3 = run_app(argv, w, build, capture=False, timeout=60,
                     extra_env={"FRAMESCOPE_OUTPUT": forged})
    check(r1.rc == 0 and len(r1.summaries()) == 1, f"summary FIFO: {r1.stderr[-2000:]}")
    check(re.search(r"cannot write the summary to .*summary \(nothing has it open for reading",
                    r1.stderr), f"summary FIFO not said: {r1.stderr[-2000:]}")
    check(r2.rc == 0 and len(r2.summaries()) == 1, f"fdinfo FIFO: {r2.stderr[-2000:]}")
    check("FRAMESCOPE_TEST_DRM_FDINFO=" in r2.stderr and "is not a regular file" in r2.stderr,
          f"fdinfo FIFO not said: {r2.stderr[-2000:]}")
    check(r3.rc == 0 and len(r3.summaries()) == 1, f"forged output: {r3.stderr[-2000:]}")
    check(not any(l.startswith("framescope: forged") or "\x1b" in l
                  for l in r3.stderr.splitlines()), f"a line forged: {r3.stderr[-2000:]!r}")
    check("capture\\x0a\\x1b[2Jframescope: forged" in r3.stderr,
          f"the capture error does not show the path escaped: {r3.stderr[-2000:]!r}")
    shutil.rmtree(work, ignore_errors=True)
    print("summary and fdinfo FIFOs: exit unheld, said; a forged FRAMESCOPE_OUTPUT shown escaped")


def test_wakeup_permission(build, demo):
    """Issue 32, item 6: why the wake-up chain is off says the real cause. A user with
    CAP_PERFMON (uid 65534, the capability ambient) is refused by tracefs (mode 0700), not by
    perf: said so, not "no tracefs". Out of descriptors (a limit found by raising it from 8
    until the app runs), the chain says the limit, never "root or CAP_PERFMON"."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("needs root and setpriv")
        sys.exit(SKIP)
    if not os.path.exists("/sys/kernel/tracing/events/sched/sched_switch/format"):
        print("no tracefs with the scheduler events mounted")
        sys.exit(SKIP)
    work = tempfile.mkdtemp(prefix="fscope-perm-")
    os.chmod(work, 0o777)
    argv = [demo, "--output", "offscreen", "--frames", "30"]
    r = run_app(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 "--inh-caps=+perfmon", "--ambient-caps=+perfmon"] + argv, None, build,
                capture=False, extra_env={"FRAMESCOPE_WAKEUPS": "on",
                                          "FRAMESCOPE_OUTPUT": os.path.join(work, "cap")})
    check(r.rc == 0, f"as a user with CAP_PERFMON: {r.stderr[-2000:]}")
    why = (find_key(json.load(open(os.path.join(work, "cap", "summary.json"))), "wakeups")
           or {}).get("why", "")
    check("readable by root only" in why and "CAP_PERFMON alone is not enough" in why,
          f"as a user with CAP_PERFMON: {why!r}")
    said = {}
    for limit in range(8, 64):
        def lower(limit=limit):
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRAMESCOPE")}
        from vkharness import layer_env
        env.update(layer_env(build))
        env["FRAMESCOPE_WAKEUPS"] = "on"
        env["FRAMESCOPE_SUMMARY"] = "full"  # the wake-ups line is the full summary's
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120,
                           preexec_fn=lower)
        line = re.search(r"^  wake-ups    (.*)$", p.stderr, re.M)
        if p.returncode != 0 or not line:
            continue  # too few descriptors for the app itself
        said[limit] = line.group(1)
        if line.group(1).startswith("recorded"):
            break
    check(said and said[max(said)].startswith("recorded"), f"never recorded: {said}")
    refused = {k: v for k, v in said.items() if not v.startswith("recorded")}
    check(refused and all("no descriptor left" in v and "ulimit -n" in v
                          for v in refused.values()),
          f"out of descriptors: {refused}")
    check(not any("CAP_PERFMON" in v for v in said.values()), f"EMFILE said as permission: {said}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"CAP_PERFMON user: {why}; out of descriptors at ulimit -n {min(refused)}.."
          f"{max(refused)}: {refused[min(refused)]}")


def printed_summary(stderr):
    """The summary block of an app's stderr: from its header to its capture line(s)."""
    lines = stderr.splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith("framescope: summary for ")]
    check(len(starts) == 1, f"{len(starts)} summaries:\n{stderr[-3000:]}")
    block = []
    for line in lines[starts[0]:]:
        if block and not line.startswith("  "):
            break
        block.append(line)
    return block


def test_summary_one_screen(build, demo):
    """Issue 33, item 1: the summary printed at exit fits one screen (at most 20 lines of at
    most 100 columns) on runs whose full summary is long: a CPU-bound run with a lock, page
    faults and a kernel split (the longest verdict reason), hitches, a capture under a long
    path, GPU timing sampled, several surfaces' worth of lines, and vkcube. It says the verdict,
    the frames, what was shown and the worst hitches as summary.json has them, and is what
    `framescope report` recomputes from the capture byte for byte; FRAMESCOPE_SUMMARY=full
    prints every line, as `framescope report --full` does."""
    framescope = os.path.join(build, "tools", "framescope")
    deep = os.path.join(tempfile.mkdtemp(prefix="fscope-summary-"), *(["a-rather-long-folder"] * 9),
                        "capture")
    runs = {
        "cpu": [demo, "--quiet", "--frames", "120", "--present-mode", "mailbox", "--cpu-ms", "6",
                "--lock-wait-ms", "2", "--stall-at", "60", "--stall-ms", "90",
                "--cpu-spike", "90:60"],
        "gpu-sampled": [demo, "--quiet", "--frames", "150", "--present-mode", "mailbox",
                        "--passes", "sky:20,main:200", "--pass-spike", "100:4000"],
        "display": [demo, "--quiet", "--frames", "90", "--recreate-every", "30"],
    }
    if shutil.which("vkcube-wayland"):
        runs["vkcube"] = ["vkcube-wayland", "--c", "120"]
    with Weston() as w:
        for name, argv in runs.items():
            out = deep + "-" + name
            env = {"FRAMESCOPE_SUMMARY": ""}  # the default: one screen
            if name == "gpu-sampled":
                env["FRAMESCOPE_GPU_SAMPLE"] = ""
            r = run_app(argv, w, build, extra_env=dict(env, FRAMESCOPE_OUTPUT=out),
                        capture=False)
            check(r.rc == 0, f"{name}: exit {r.rc}: {r.stderr[-2000:]}")
            block = printed_summary(r.stderr)
            wide = [l for l in block if len(l) > 100]
            check(len(block) <= 20 and not wide,
                  f"{name}: {len(block)} lines, {len(wide)} over 100 columns:\n" + "\n".join(block))
            summary = json.load(open(os.path.join(out, "summary.json")))
            text = "\n".join(block)
            m = re.search(r"^  verdict     (\w+)-bound: ", text, re.M)
            check(m and m.group(1) == summary["verdict"]["run"],
                  f"{name}: verdict {m and m.group(1)} != summary.json {summary['verdict']['run']}")
            m = re.search(r"^  frames      (\d+) in ", text, re.M)
            check(m and int(m.group(1)) == summary["frames"], f"{name}: frames line: {text}")
            p = summary["presentation"]
            if p["tracked"]:
                m = re.search(r"^  shown       (\d+) of (\d+) frames presented, (\d+) discarded", text,
                              re.M)
                check(m and int(m.group(1)) == p["presented"] and
                      int(m.group(3)) == p["discarded"], f"{name}: shown line vs {p}: {text}")
            worst = summary["hitches"]["worst"][:3]
            shown = re.findall(r"^  hitch       frame (\d+) at ", text, re.M)
            check([int(f) for f in shown] == [h["frame"] for h in worst],
                  f"{name}: hitch lines {shown} != worst {[h['frame'] for h in worst]}")
            check(re.search(r"^  capture     ", text, re.M), f"{name}: no capture line: {text}")
            # What framescope report recomputes from the capture, given the same path.
            again = subprocess.run([framescope, "report", out], capture_output=True, text=True,
                                   timeout=120)
            check(again.returncode == 0 and again.stdout == text + "\n",
                  f"{name}: report differs from the summary at exit:\n{again.stdout}\n---\n{text}")
            full = subprocess.run([framescope, "report", "--full", out], capture_output=True,
                                  text=True, timeout=120).stdout
            check(len(full.splitlines()) > len(block) and
                  re.search(r"^  verdict     \w+-bound: .*\n  frames by verdict:", full, re.M),
                  f"{name}: --full is not the full summary:\n{full[:3000]}")
            print(f"{name}: {len(block)} lines, widest {max(len(l) for l in block)} columns; "
                  f"--full {len(full.splitlines())} lines; verdict {summary['verdict']['run']}")
            if name == "cpu":
                # FRAMESCOPE_SUMMARY=full prints every line, as report --full recomputes them.
                r = run_app(argv, w, build, extra_env={"FRAMESCOPE_SUMMARY": "full",
                                                       "FRAMESCOPE_OUTPUT": out + "-full"},
                            capture=False)
                block = printed_summary(r.stderr)
                full = subprocess.run([framescope, "report", "--full", out + "-full"],
                                      capture_output=True, text=True, timeout=120).stdout
                check(r.rc == 0 and "\n".join(block) + "\n" == full,
                      f"FRAMESCOPE_SUMMARY=full is not report --full:\n{full}\n---\n" +
                      "\n".join(block))
                print(f"FRAMESCOPE_SUMMARY=full: {len(block)} lines, as report --full")


def test_long_note(build, demo):
    """Issue 36, item 4d: a note longer than the recording's 256-byte note slot (GPU timing's
    cost, about 310 bytes) survives whole, in summary.json, the summary at exit and what
    framescope report --full recomputes from the capture; before, it was cut at 255 bytes in
    mid-word."""
    framescope = os.path.join(build, "tools", "framescope")
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-note-"), "capture")
    with Weston() as w:
        # MAILBOX runs faster than the default's 240 timed submissions a second: sampled, and
        # the sampling's cost measured (the long note).
        r = run_app([demo, "--quiet", "--frames", "300", "--present-mode", "mailbox"], w, build,
                    extra_env={"FRAMESCOPE_GPU_SAMPLE": "auto", "FRAMESCOPE_OUTPUT": out},
                    capture=False)
    check(r.rc == 0, f"exit {r.rc}: {r.stderr[-2000:]}")
    notes = json.load(open(os.path.join(out, "summary.json")))["notes"]
    whole = re.compile(r"GPU timing's cost measured as it ran: [\d.]+ ms a frame \(present to "
                       r"present, or frame mark to mark\) in timed frames and the 3 after them, "
                       r"[\d.]+ ms in the others; \d+ timed submissions a second allowed at the "
                       r"end \(timed frames' change of time, either way, at most [\d.]+% of the "
                       r"app's, one window a second at least\)(; timed frames ran faster: the "
                       r"driver works differently around our timestamps \(lavapipe starts its "
                       r"rasterizer at each\))?$")
    cost = [n for n in notes if n.startswith("GPU timing's cost")]
    check(len(cost) == 1, f"{len(cost)} notes of GPU timing's cost: {notes}")
    check(whole.match(cost[0]), f"the note is not whole: {cost[0]!r}")
    check(len(cost[0].encode()) > 255, f"the note is {len(cost[0].encode())} bytes: it no "
          f"longer tests a note longer than a slot: {cost[0]}")
    check(not any(n.startswith(("\x01", "\\x01")) for n in notes),
          f"a note's continuation shown as a note: {notes}")
    full = subprocess.run([framescope, "report", "--full", out], capture_output=True,
                          text=True, timeout=120).stdout
    for where, text in (("the summary at exit", r.stderr), ("report --full", full)):
        printed = re.findall(r"^  note        (.*)$", text, re.M)
        check(printed == notes, f"{where}'s notes differ from summary.json's:\n{printed}\n"
              f"---\n{notes}")
    print(f"{len(notes)} notes whole; the longest {max(len(n.encode()) for n in notes)} bytes: "
          f"{cost[0]}")


CADENCE_APP = re.compile(r"\bapp presents every ([\d.]+) ms")
CADENCE_SHOWN = re.compile(r"\b(?:presented every|shown every|shows a new frame every) "
                           r"([\d.]+) ms")


def cadences_agree(where, texts, app_ms, shown_ms):
    """Every cadence stated in texts agrees with summary.json's, to the decimals it is
    printed with. Returns how many were read."""
    read = 0
    for text in texts:
        for pattern, want, name in ((CADENCE_APP, app_ms, "the app's"),
                                    (CADENCE_SHOWN, shown_ms, "the shown")):
            for value in pattern.findall(text):
                decimals = len(value.partition(".")[2])
                check(abs(float(value) - want) <= 0.5 * 10 ** -decimals + 1e-9,
                      f"{where}: {name} cadence stated as {value} ms, summary.json's is "
                      f"{want:.6f} ms, in: {text}")
                read += 1
    return read


def test_cadence_agrees(build, demo):
    """Issue 36, item 4e: every cadence a summary states (the verdict's evidence, the
    diagnoses, the cadence line; one screen, full, summary.json) is one value from one
    computation, of one surface: one summary said the app presents every 51.75 ms and every
    48.94 ms. Runs: FIFO (display-bound), MAILBOX outrunning the display, CPU-bound with
    present overhead, and a swapchain recreated every 30 frames."""
    framescope = os.path.join(build, "tools", "framescope")
    base = tempfile.mkdtemp(prefix="fscope-cadence-")
    runs = {
        "fifo": [demo, "--quiet", "--frames", "90"],
        "mailbox": [demo, "--quiet", "--frames", "300", "--present-mode", "mailbox"],
        "cpu": [demo, "--quiet", "--frames", "90", "--cpu-ms", "30"],
        "recreate": [demo, "--quiet", "--frames", "90", "--recreate-every", "30"],
    }
    with Weston() as w:
        for name, argv in runs.items():
            out = os.path.join(base, name)
            r = run_app(argv, w, build, extra_env={"FRAMESCOPE_SUMMARY": "",
                                                   "FRAMESCOPE_OUTPUT": out}, capture=False)
            check(r.rc == 0, f"{name}: exit {r.rc}: {r.stderr[-2000:]}")
            summary = json.load(open(os.path.join(out, "summary.json")))
            p = summary["presentation"]
            full = subprocess.run([framescope, "report", "--full", out], capture_output=True,
                                  text=True, timeout=120).stdout
            texts = ["\n".join(printed_summary(r.stderr)), full, summary["verdict"]["reason"]]
            texts += p.get("diagnosis", [])
            texts += [s.get("display_evidence", "") for s in summary["surfaces"]]
            read = cadences_agree(name, texts, p["app_interval_ms"], p["presented_interval_ms"])
            check(read >= 3, f"{name}: only {read} cadences stated: nothing to compare")
            print(f"{name}: {read} cadences stated, all of app {p['app_interval_ms']:.3f} ms, "
                  f"shown {p['presented_interval_ms']:.3f} ms")


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    main(TESTS)
