#!/usr/bin/env python3
"""The verdict and the layer on the patterns real engines use: the demo driven into each
pattern under the layer on a headless Weston, with what framescope wrote parsed and the
verdict, the partition and the accounting checked. Work is sized from measurements made in
the same test, never from this machine's speed.

usage: test_engine.py TEST BUILD_DIR DEMO"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import (SKIP, Weston, check, check_capture_consistent, iters_for,
                       light_frame_gpu_ms, main, ns, run_app)

VALIDATION = "VK_LAYER_FRAMESCOPE:VK_LAYER_KHRONOS_validation"  # ours above validation


def demo_run(build, demo, args, frames, extra_env=None, layers="VK_LAYER_FRAMESCOPE",
             expect_frames=True, timeout=300):
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames)] + args, w, build,
                    extra_env=extra_env, layers=layers, timeout=timeout)
    check(r.rc == 0, f"{args}: app exited {r.rc}: {r.stderr[-3000:]}")
    check(len(r.summaries()) == 1, f"{args}: {len(r.summaries())} summaries:\n{r.stderr}")
    # Offscreen frames are marked: the first mark opens the first frame.
    expected = frames - 1 if "offscreen" in args else frames
    gpu = (extra_env or {}).get("FRAMESCOPE_GPU") != "off"
    s, rows, trace, _ = check_capture_consistent(r, expected_frames=expected if expect_frames
                                                 else None, gpu_track=gpu)
    return r, s, rows, trace


def mean_ms(rows, col, skip=2):
    rows = rows[skip:]
    return sum(ns(r[col]) for r in rows) / max(1, len(rows)) / 1e6


def no_display_frames(s, rows, what):
    check(s["verdict"]["shares"]["display"] == 0, f"{what}: display share "
          f"{s['verdict']['shares']['display']} ({s['verdict']})")
    check(all(ns(r["display_wait_ms"]) == 0 for r in rows), f"{what}: a display wait counted")


def test_mailbox_gpu(build, demo):
    """MAILBOX outrunning the display with GPU work dominating: GPU, and the present block
    (lavapipe waits for rendering inside present) is counted as GPU work, never display."""
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "mailbox", "--gpu-iters",
                                           str(iters_for(build, demo, 8.0))], 90)
    check(s["verdict"]["run"] == "gpu", f"verdict {s['verdict']}")
    check(s["presentation"]["discarded"] > 0, "MAILBOX did not outrun the display")
    no_display_frames(s, rows, "MAILBOX gpu")
    present = mean_ms(rows, "present_ms") + mean_ms(rows, "acquire_ms")
    in_gpu = mean_ms(rows, "display_gpu_ms")
    check(in_gpu >= 0.5 * present, f"present {present:.3f} ms, of it GPU working only {in_gpu:.3f}")
    check("GPU busy" in s["verdict"]["reason"], s["verdict"]["reason"])
    print(f"mailbox gpu: {s['verdict']['reason']}")


def test_mailbox_cpu(build, demo):
    """MAILBOX outrunning the display with CPU work dominating: CPU; the rest of the present
    block is present overhead, not a display wait."""
    cpu_ms = max(12.0, 4 * light_frame_gpu_ms(build, demo))
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "mailbox", "--cpu-ms",
                                           f"{cpu_ms:.3f}"], 60)
    check(s["verdict"]["run"] == "cpu", f"verdict {s['verdict']}")
    no_display_frames(s, rows, "MAILBOX cpu")
    check(s["budget_ms"]["cpu"] >= 0.8 * cpu_ms,
          f"{cpu_ms:.1f} ms of CPU work read as {s['budget_ms']['cpu']}")
    check(s["blocks_ms"]["display_wait"] == 0, "display wait in an app that outruns the display")
    print(f"mailbox cpu: {s['verdict']['reason']}")


def test_fifo_light(build, demo):
    """FIFO with light work: display-bound, confirmed by presentation, with the numbers."""
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "fifo"], 60)
    check(s["verdict"]["run"] == "display", f"verdict {s['verdict']}")
    check("confirmed" in s["verdict"]["reason"] and "not confirmed" not in s["verdict"]["reason"],
          s["verdict"]["reason"])
    surface = max(s["surfaces"], key=lambda x: x["frames"])
    check(surface["display_paces"] and surface["display_confirmed"], f"evidence {surface}")
    check(s["blocks_ms"]["display_wait"] > 0.5 * s["frame_ms"]["mean"],
          f"display wait {s['blocks_ms']['display_wait']} of {s['frame_ms']['mean']}")
    print(f"fifo light: {s['verdict']['reason']}")


def test_fifo_gpu(build, demo):
    """FIFO with GPU work longer than a refresh (sized from the shown cadence measured here):
    GPU, not display."""
    _, light, _, _ = demo_run(build, demo, ["--present-mode", "fifo"], 30)
    refresh = light["presentation"]["presented_interval_ms"]
    check(refresh > 0, "no shown cadence measured")
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "fifo", "--gpu-iters",
                                           str(iters_for(build, demo, 2.0 * refresh))], 40)
    check(s["verdict"]["run"] == "gpu", f"refresh {refresh:.2f} ms: verdict {s['verdict']}")
    check(s["verdict"]["shares"]["display"] <= 0.1, f"display share {s['verdict']['shares']}")
    print(f"fifo gpu (> {2 * refresh:.1f} ms a frame): {s['verdict']['reason']}")


def test_serialised(build, demo):
    """Submit, wait, repeat with the GPU idle through most of each wait (the GPU waits on the
    host): not GPU but CPU-GPU serialisation, with the GPU's idle share of the wait."""
    _, light, lrows, _ = demo_run(build, demo, ["--output", "offscreen", "--serial"], 20)
    gpu = mean_ms(lrows, "gpu_busy_ms")
    delay = max(5.0, 4.0 * gpu)
    r, s, rows, _ = demo_run(build, demo, ["--output", "offscreen", "--serial",
                                           "--host-delay-ms", f"{delay:.3f}"], 40)
    check(s["verdict"]["run"] == "sync", f"GPU {gpu:.3f} ms, delay {delay:.1f}: {s['verdict']}")
    m = re.search(r"the GPU idle for ([\d.]+)% of that wait", s["verdict"]["reason"])
    check(m, f"reason does not give the GPU's idle share: {s['verdict']['reason']}")
    waits = sum(ns(x["waits_gpu_ms"]) + ns(x["waits_gpu_idle_ms"]) for x in rows)
    idle = sum(ns(x["waits_gpu_idle_ms"]) for x in rows)
    check(abs(float(m.group(1)) - 100 * idle / waits) < 0.1,
          f"idle share {m.group(1)}% disagrees with frames.csv {100 * idle / waits:.2f}%")
    check(s["verdict"]["shares"]["gpu"] < 0.2, f"called GPU-bound: {s['verdict']['shares']}")
    no_display_frames(s, rows, "offscreen")
    print(f"serialised: {s['verdict']['reason']}")


def test_offscreen_never_display(build, demo):
    """Frames with no display behind them are never display-bound, whatever blocks."""
    for args in (["--output", "offscreen"], ["--output", "offscreen", "--frames-in-flight", "1"]):
        r, s, rows, _ = demo_run(build, demo, args, 40)
        no_display_frames(s, rows, " ".join(args))
        print(f"{' '.join(args)}: {s['verdict']['run']}, display 0")


def test_gpu_off(build, demo):
    """Without GPU timing the verdict never cites a GPU busy it did not measure."""
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "mailbox", "--gpu-iters",
                                           str(iters_for(build, demo, 8.0))], 40,
                             extra_env={"FRAMESCOPE_GPU": "off"})
    check("GPU busy 0.0%" not in r.stderr, f"cites an unmeasured GPU busy:\n{r.stderr}")
    check(not s["gpu_timed"], "summary.json claims GPU timing")
    check(s["verdict"]["run"] != "display", f"verdict {s['verdict']}")
    print(f"gpu off: {s['verdict']['run']}-bound: {s['verdict']['reason']}")


def test_device_cycles(build, demo):
    """70 devices created and destroyed before rendering: GPU timing still works afterwards
    (it used to die after 64), and the summary names the devices once."""
    iters = iters_for(build, demo, 8.0)
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "mailbox", "--gpu-iters", str(iters),
                                           "--device-cycles", "70"], 40)
    check(s["verdict"]["run"] == "gpu", f"after 70 device cycles: {s['verdict']}")
    check(s["budget_ms"]["gpu_busy"] > 0.5 * s["frame_ms"]["mean"], "GPU busy lost")
    m = re.search(r"GPU timing: (\d+) submissions timed", r.stderr)
    check(m and int(m.group(1)) >= 70 * 3 + 40, f"timed submissions: {m and m.group(1)}")
    check(len(s["devices"]) == 1 and s["devices"][0]["created"] == 71, f"devices {s['devices']}")
    print(f"device cycles: {m.group(1)} submissions timed, {s['devices'][0]['created']} devices")


def test_two_devices(build, demo):
    """A second device busy on another thread: its GPU time is kept apart, and a frame's GPU
    busy comes only from the device that presents it."""
    iters = iters_for(build, demo, 10.0)
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "fifo", "--devices", "2",
                                           "--second-device-gpu-iters", str(iters)], 40)
    ids = {row["device"] for row in rows}
    check(len(ids) == 1, f"frames from devices {ids}")
    presenting = int(ids.pop())
    per_device = {d["id"]: d for d in s["device_gpu"]}
    check(len(per_device) == 2, f"GPU time of two devices expected: {s['device_gpu']}")
    other = [d for i, d in per_device.items() if i != presenting][0]
    frames_busy = sum(ns(x["gpu_busy_ms"]) for x in rows) / 1e6
    check(frames_busy <= per_device[presenting]["busy_ms"] + 1e-3,
          f"frames' GPU busy {frames_busy:.3f} ms exceeds the presenting device's "
          f"{per_device[presenting]['busy_ms']:.3f} ms: another device's time was merged in")
    check(other["busy_ms"] > per_device[presenting]["busy_ms"],
          f"the busy second device measured less than the light one: {per_device}")
    check(sum(d["created"] for d in s["devices"]) == 2, f"devices {s['devices']}")
    print(f"two devices: presenting #{presenting} busy {per_device[presenting]['busy_ms']:.1f} ms, "
          f"other #{other['id']} busy {other['busy_ms']:.1f} ms; frames' busy {frames_busy:.1f} ms")


def test_thread_split(build, demo):
    """DXVK-like: acquire on one thread, submit and fence waits on another, present on a third.
    The acquire is charged to its swapchain's frame; the other thread's waits are shown."""
    r, s, rows, trace = demo_run(build, demo, ["--present-mode", "fifo", "--thread-split"], 60)
    acquire = mean_ms(rows, "acquire_ms")
    other = s["blocks_ms"]["other_threads"]["fence"]
    check(any(ns(x["acquire_ms"]) > 0 for x in rows), "acquires on another thread were lost")
    check(other > 0, f"fence waits on the submit thread not shown: {s['blocks_ms']}")
    check(any(ns(x["other_fence_ms"]) > 0 for x in rows), "frames.csv lacks other-thread waits")
    check("waits on other threads" in r.stderr, "summary does not show other threads' waits")
    tids = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "B" and e["name"] in ("vkAcquireNextImageKHR", "vkWaitForFences",
                                            "vkQueuePresentKHR"):
            tids.setdefault(e["name"], set()).add(e["tid"])
    check(len(tids) == 3 and all(len(t) == 1 for t in tids.values()) and
          len(set.union(*tids.values())) == 3, f"acquire, fence wait, present threads: {tids}")
    print(f"thread split: acquire {acquire:.3f} ms charged per frame, other-thread fence "
          f"{other:.3f} ms; verdict {s['verdict']['run']}")


def test_late_signal(build, demo):
    """A submission waits on a timeline value the same thread signals after a second submit:
    the layer must never wait for the GPU inside an app call (this deadlocked on lavapipe)."""
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "mailbox", "--late-signal"], 60,
                             timeout=120)
    m = re.search(r"GPU timing: (\d+) submissions timed", r.stderr)
    check(m and int(m.group(1)) >= 60, f"GPU timing missing: {m and m.group(0)}")
    print(f"late signal: no deadlock, {m.group(1)} submissions timed")


def test_fork(build, demo):
    """A child that forks and exits prints no second summary and leaves the capture alone."""
    r, s, rows, _ = demo_run(build, demo, ["--present-mode", "fifo", "--fork-child"], 40)
    m = re.search(r"^framescope: summary for .* \(pid (\d+)\)$", r.stderr, re.M)
    check(m and int(m.group(1)) == s["pid"],
          f"summary.json written by pid {s['pid']}, the summary printed by {m and m.group(1)}")
    check(len(rows) == 40, f"capture holds {len(rows)} frames: overwritten by the child")
    print("fork: one summary, the parent's capture")


def test_gpu_busy_matches(build, demo):
    """GPU busy agrees with the demo's own timestamps around its render pass within 5%."""
    iters = iters_for(build, demo, 5.0)
    r, s, rows, _ = demo_run(build, demo, ["--output", "offscreen", "--self-timestamps",
                                           "--gpu-iters", str(iters)], 60)
    m = re.search(r"own GPU timestamps: mean ([\d.]+) ms per frame over (\d+) frames", r.stdout)
    check(m and int(m.group(2)) >= 50, f"no own timestamps: {r.stdout}")
    own = float(m.group(1))
    # Per submission, not per frame: a frame's share depends on where the marks fall.
    gpu = s["device_gpu"]
    check(len(gpu) == 1 and gpu[0]["spans"] >= 59, f"device_gpu {gpu}")
    busy = gpu[0]["busy_ms"] / gpu[0]["spans"]
    check(abs(busy - own) <= 0.05 * own, f"GPU busy {busy:.4f} ms a submission, the demo's "
          f"own {own:.4f} ms")
    print(f"GPU busy {busy:.4f} ms per submission, the demo's own timestamps {own:.4f} ms "
          f"({100 * (busy - own) / own:+.2f}%)")


def test_stale_check(build, demo):
    """The check that every test relies on (no GPU span read back from an earlier lap of its
    query slot) can fail: made to read a slot's previous lap on purpose, it says so."""
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", "200", "--present-mode", "mailbox"], w, build,
                    extra_env={"FRAMESCOPE_TEST_FAULT": "stale-read"})
    check(r.rc == 0, f"app failed: {r.stderr[-2000:]}")
    m = re.search(r"(\d+) GPU spans began older than the one before", r.stderr)
    check(m and int(m.group(1)) > 0, f"stale reads went unnoticed:\n{r.stderr}")
    print(f"stale reads injected: {m.group(1)} caught")


def need_validation():
    if not os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
        print("validation layer not installed")
        sys.exit(SKIP)


def test_validation_patterns(build, demo):
    """The validation layer below ours stays silent on Vulkan 1.0 through 1.3, on an app that
    turns hostQueryReset off in its Vulkan12Features, on one that never waits on its
    submissions' fences, and on the fallback paths (no timeline semaphores, no calibration)."""
    need_validation()
    cases = {
        "api 1.0": ["--api-version", "1.0"],
        "api 1.1": ["--api-version", "1.1"],
        "api 1.2": ["--api-version", "1.2"],
        "api 1.3": ["--api-version", "1.3", "--submit2"],
        "vk12 features off": ["--api-version", "1.2", "--vk12-features"],
        "no fence wait": ["--present-mode", "mailbox", "--no-fence-wait"],
        "thread split": ["--thread-split"],
        "serial": ["--output", "offscreen", "--serial"],
        "late signal": ["--late-signal"],
        "host delay": ["--output", "offscreen", "--serial", "--host-delay-ms", "2"],
        "two devices": ["--devices", "2", "--second-device-gpu-iters", "50"],
        "device cycles": ["--device-cycles", "3"],
        "threads": ["--threads", "3", "--present-mode", "mailbox"],
        # 30 submissions a frame: the layer's signal rides on few of them (the fenced one,
        # one a millisecond); every one is still timed and read.
        "30 submits": ["--submits", "30"],
        "30 submits, no fence wait": ["--submits", "30", "--present-mode", "mailbox",
                                      "--no-fence-wait"],
    }
    faults = {"no timeline": "no-timeline", "no calibration": "no-calibration"}
    runs = [(n, a, None) for n, a in cases.items()] + \
           [(n, ["--present-mode", "mailbox", "--no-fence-wait"], {"FRAMESCOPE_TEST_FAULT": f})
            for n, f in faults.items()]
    for name, args, env in runs:
        env = dict(env or {}, FRAMESCOPE_LOG="info")
        r, s, rows, _ = demo_run(build, demo, args, 60, extra_env=env, layers=VALIDATION)
        errors = r.validation_errors()
        check(not errors, f"{name}: validation errors:\n" + "\n".join(errors[:10]))
        if name in ("api 1.0", "api 1.1"):
            # The fast path on every instance version: what GPU timing needs is added (and
            # on 1.0, properties2 for it), and the timeline semaphore completes its spans.
            check("GPU timing adds to the device: extensions: VK_EXT_host_query_reset, "
                  "VK_KHR_timeline_semaphore" in r.stderr and
                  "VK_EXT_pipeline_creation_feedback" in r.stderr and
                  "completes by a timeline semaphore" in r.stderr,
                  f"{name}: GPU timing took the slow path:\n{r.stderr[-2000:]}")
        m = re.search(r"GPU timing: (\d+) submissions timed", r.stderr)
        check(m and int(m.group(1)) > 0, f"{name}: nothing GPU-timed")
        check(s["budget_ms"]["gpu_busy"] > 0, f"{name}: no GPU busy")
        if "30 submits" in name:
            check(int(m.group(1)) == 60 * 30 and
                  "untimed: 0 (no free query slot), 0 (device-group or protected), "
                  "0 (unreadable), 0 (in flight at teardown)" in r.stderr,
                  f"{name}: {r.summary_line('note')}")
        print(f"{name}: 0 validation errors, {m.group(1)} submissions timed")


def test_loader_contract(build, demo):
    """Functions of extensions only the layer enabled are NULL to the app; the loader
    interface is refused below version 2 and capped at 2 above it."""
    import subprocess
    probe = os.path.join(build, "tests", "layer-probe")
    env = dict(os.environ, VK_ADD_LAYER_PATH=os.path.join(build, "layers", "dev"),
               VK_INSTANCE_LAYERS="VK_LAYER_FRAMESCOPE", FRAMESCOPE_SUMMARY="off")
    out = subprocess.run([probe, "functions"], env=env, capture_output=True, text=True,
                         timeout=60)
    check(out.returncode == 0, f"probe failed: {out.stderr}")
    for name in ("vkResetQueryPoolEXT", "vkGetCalibratedTimestampsEXT",
                 "vkGetSemaphoreCounterValueKHR", "vkWaitSemaphoresKHR", "vkSignalSemaphoreKHR"):
        check(f"{name}=NULL" in out.stdout, f"{name} visible to an app that never enabled it:\n"
              + out.stdout)
    check("vkQueueSubmit=set" in out.stdout, "the probe cannot see core functions either")
    out = subprocess.run([probe, "negotiate", os.path.join(build, "layers",
                                                           "libVkLayer_framescope.so")],
                         capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    check(out.returncode == 0 and len(lines) == 3, f"negotiate probe: {out.stdout}{out.stderr}")
    check("result -3" in lines[0] and "gipa NULL" in lines[0], f"version 1 accepted: {lines[0]}")
    check("result 0, version 2, gipa set" in lines[1], f"version 2: {lines[1]}")
    check("result 0, version 2, gipa set" in lines[2], f"version 5: {lines[2]}")
    print("hidden: " + ", ".join(l for l in out.stdout.splitlines()))


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    main(TESTS)
